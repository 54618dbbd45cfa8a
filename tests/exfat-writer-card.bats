#!/usr/bin/env bats
# exfat-writer-card.bats: what fatprealloc's exFAT writer relies on when it
# reads only what it needs and flushes only where its order needs it (on a
# card every request, byte and flush costs): a directory read up to its
# end marker and the slots it takes, the root's link written without a
# barrier of its own.  Judged by fsck.exfat -n and the reference reader
# (tests/helpers/exfatref.py), which share no code with fatkit.

load helpers/common

setup()
{
	common_setup
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
}

# mkex FILE SIZE CLUSTER: a fresh exFAT image file.
mkex()
{
	rm -f "$1"
	truncate -s "$2" "$1" && mkfs.exfat -c "$3" "$1" >/dev/null
}

# info IMG KEY: one key of `exfatref.py info`.
info()
{
	ref info "$1" | sed -n "s/^$2=//p"
}

# root_ent IMG IDX: the byte offset of entry IDX of the root's first
# cluster.
root_ent()
{
	echo $(($(info "$1" cluster_heap_offset) * $(info "$1" sector_size) +
		($(info "$1" root_cluster) - 2) * $(info "$1" cluster_size) +
		32 * $2))
}

# junk_at IMG IDX: entry IDX of the root becomes a File entry with no
# secondaries: something nobody wrote there.
junk_at()
{
	printf '\x85\x00\x00\x00\x20\x00' |
		dd of="$1" bs=1 seek="$(root_ent "$1" "$2")" conv=notrunc \
			2>/dev/null
}

# refused IMG LINE ARGS...: fatprealloc IMG ARGS exits 1 with LINE and
# leaves IMG byte-identical.
refused()
{
	local img=$1 line=$2 sha
	shift 2
	sha=$(img_sha "$img")
	run -1 --separate-stderr fatprealloc "$img" "$@"
	[ "$stderr" = "$line" ]
	[ "$(img_sha "$img")" = "$sha" ]
}

# ent_sum IMG IDX: sha256 of root entry IDX.
ent_sum()
{
	dd if="$1" bs=32 skip=$(($(root_ent "$1" "$2") / 32)) count=1 \
		2>/dev/null | sha256sum
}

@test "exFAT writer: an entry past the end marker is refused only where a new set would overwrite or uncover it; further on it is left as it is" {
	local sum idx
	# The root: label, bitmap, up-case table, end marker at entry 3;
	# a file of a short name takes entries 3 to 5.
	for idx in 4 6; do
		mkex img 8M 4096
		junk_at img "$idx"
		refused img "fatprealloc: img:/: directory has entries after its end marker; run 'fatcheck -r img'" \
			/new.bin 4K
	done
	# Far past the slots the run takes: not read, not changed (it was
	# refused because it was there at all).
	mkex img 8M 4096
	junk_at img 100
	sum=$(ent_sum img 100)
	run -0 fatprealloc img /new.bin 4K /two.bin 1K
	[ "$(ent_sum img 100)" = "$sum" ]
	run -0 fsck.exfat -n img
	run -0 ref ls img /
	assert_output --partial "path=/new.bin"
	assert_output --partial "path=/two.bin"
}

@test "exFAT writer: --sync on a root that grows flushes four times; a crash that left its sets on disk but not its link leaves lost clusters only" {
	local root tail n
	# 512-byte clusters: the root's one cluster holds 16 entries, 3 in
	# use; 16 new files of 3 entries each make it grow by 3 clusters.
	mkex base.img 8M 512
	root=$(info base.img root_cluster)
	cp base.img img
	run -0 strace -f -qq -o s.log -e trace=fsync,fdatasync \
		fatprealloc --sync img $(for n in $(seq 10 25); do printf '/f%d 1K ' "$n"; done)
	n=$(grep -c -E '^[0-9]+ +f(data)?sync\(' s.log)
	echo "# $n flushes"
	# VolumeDirty set; the bitmap and zeroed clusters; the entry sets
	# and the root's link; VolumeDirty cleared.  (A fifth, after the
	# link, was the root's: it needs none.)
	[ "$n" -eq 4 ]
	run -0 fsck.exfat -n img
	run -0 ref verify -W img
	# The root's chain grew from its one cluster.
	tail=$("$FK_PYTHON" -c '
import struct, sys
f = open(sys.argv[1], "rb")
f.seek(int(sys.argv[2]) * 512 + int(sys.argv[3]) * 4)
print(struct.unpack("<I", f.read(4))[0])' img "$(info img fat_offset)" "$root")
	[ "$tail" -ne 4294967295 ]
	# The sets reached the disk, the link did not, VolumeDirty is still
	# set: the root ends at its old cluster, with no set cut short at
	# its end (no set starts in it and ends in a new one).
	"$FK_PYTHON" -c '
import struct, sys
f = open(sys.argv[1], "r+b")
f.seek(int(sys.argv[2]) * 512 + int(sys.argv[3]) * 4)
f.write(struct.pack("<I", 0xFFFFFFFF))
f.seek(106)
flags = struct.unpack("<H", f.read(2))[0]
f.seek(106)
f.write(struct.pack("<H", flags | 2))' img "$(info img fat_offset)" "$root"
	run -0 fsck.exfat -n img
	run timeout 60 "$FK_PYTHON" "$FATKIT_HELPERS/exfatref.py" verify img
	echo "$output"
	((status != 124))
	# ("! cmd" would never fail the test: bash's errexit skips it)
	[[ -z $(grep -v -e 'owned by nothing (lost clusters)$' -e '^warning' \
		<<<"$output" | grep '^error') ]]
	run -0 ref ls img /
	# the files whose sets lie in the old cluster are there, whole
	assert_output --partial "path=/f10"
	assert_output --partial "path=/f13"
	refute_output --partial "path=/f14"
}
