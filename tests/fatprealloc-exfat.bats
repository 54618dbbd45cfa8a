#!/usr/bin/env bats
# fatprealloc-exfat.bats: fatprealloc on exFAT volumes. Images come from
# mkfs.exfat and are filled by tests/helpers/exfatref.py (written from
# Microsoft's exFAT specification, sharing no code with fatkit), which also
# judges the result: `verify -W` finds leaked or missing bitmap bits, a
# wrong PercentInUse and a set VolumeDirty, which fsck.exfat -n does not
# report; `ls` and `cat` give sizes, ValidDataLength, NoFatChain and data.

load helpers/common

# mkex FILE SIZE CLUSTER: a fresh exFAT image file.
mkex()
{
	rm -f "$1"
	truncate -s "$2" "$1" && mkfs.exfat -c "$3" "$1" >/dev/null
}

# populate IMG CS: a NoFatChain file with a one-cluster file right after it
# (growing it must convert it to a FAT chain), a fragmented file, a file
# with ValidDataLength < DataLength, a directory with a file, then junk in
# every free cluster (zeroing must be real).
populate()
{
	local img=$1 cs=$2
	{
		echo "put /grow.bin --size $((2 * cs + 100))"
		echo "put /gap.bin --size $cs"
		echo "put /frag.bin --size $((2 * cs + 7)) --fragmented"
		echo "put /lazy.bin --size $((3 * cs)) --vdl 300"
		echo "put /keep.bin --size $((cs + 3))"
		echo "put /sub/inner.bin --size 1000"
	} | ref batch "$img" && ref junk "$img"
}

# sums IMG PATH...: sha256 of each file's data as the reference reads it
# (exfatref.py cat; of what it read before an error), one process for all.
sums()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$@" <<'PY'
import hashlib, io, sys
sys.path.insert(0, sys.argv[1])
import exfatref
class Out:
    buffer = None
real, v = sys.stdout, exfatref.Volume(sys.argv[2])
for path in sys.argv[3:]:
    Out.buffer = io.BytesIO()
    sys.stdout = Out
    try:
        exfatref.cmd_cat(v, path)
    except exfatref.Fatal:
        pass
    sys.stdout = real
    print(path, hashlib.sha256(Out.buffer.getvalue()).hexdigest())
PY
}

# field IMG PATH KEY: one key of `exfatref.py ls` for PATH (its line in
# the listing of its parent, so PATH may be a directory).
field()
{
	ref ls "$1" "$(dirname "$2")" | awk -F'\t' -v p="path=$2" '$NF == p' |
		tr '\t' '\n' | sed -n "s/^$3=//p"
}

# data_ok IMG PATH SIZE OLD_VDL: the file reads SIZE bytes: exfatref's
# pattern (byte i is i % 251) below OLD_VDL, zeros from there on.
data_ok()
{
	ref cat "$1" "$2" | "$FK_PYTHON" -c '
import sys
data = sys.stdin.buffer.read()
size, vdl = int(sys.argv[1]), int(sys.argv[2])
assert len(data) == size, (len(data), size)
want = bytes(i % 251 for i in range(min(vdl, size))) + bytes(size - min(vdl, size))
if data != want:
    bad = next(i for i in range(size) if data[i] != want[i])
    sys.exit("byte %d is %02x, want %02x" % (bad, data[bad], want[bad]))
' "$3" "$4"
}

# clean IMG: fsck.exfat -n clean, and the reference reader finds neither
# an error nor a warning (leaks, PercentInUse, VolumeDirty).
clean()
{
	local out
	if ! out=$(fsck.exfat -n "$1" 2>&1); then
		echo "fsck.exfat -n $1:" >&2
		echo "$out" >&2
		return 1
	fi
	ref verify -W "$1"
}

# faults_compiled: is the fatprealloc under test built with
# -DFK_FAULT_INJECTION?
faults_compiled()
{
	local rc=0
	mkex probe.img 8M 4096 || return 2
	FK_CRASH_AFTER_WRITE=1 fatprealloc probe.img /probe.bin 1 \
		>/dev/null 2>&1 || rc=$?
	rm -f probe.img
	((rc == 99))
}

json_stat()
{
	"$FK_PYTHON" -c 'import json, sys; print(json.loads(sys.argv[1])["stats"][sys.argv[2]])' "$1" "$2"
}

OTHERS=(/gap.bin /frag.bin /keep.bin /sub/inner.bin)

# default_run CS: grow, create, judge, on clusters of CS bytes.
default_run()
{
	local cs=$1 name
	echo "# cluster size $cs"
	mkex img 48M "$cs"
	populate img "$cs"
	sums img "${OTHERS[@]}" >before
	name=$("$FK_PYTHON" -c 'print(("Ωμέγα-ünï-名前-" * 20)[:200])')
	run -0 fatprealloc img /grow.bin $((5 * cs + 1)) /lazy.bin $((4 * cs)) \
		/new.bin $((3 * cs + 5)) "/$name" 77 /sub/deep.bin $((2 * cs)) \
		/empty 0
	clean img
	sums img "${OTHERS[@]}" >after
	diff before after
	# sizes exact, ValidDataLength = DataLength, zeros from the old VDL
	data_ok img /grow.bin $((5 * cs + 1)) $((2 * cs + 100))
	data_ok img /lazy.bin $((4 * cs)) 300
	data_ok img /new.bin $((3 * cs + 5)) 0
	data_ok img "/$name" 77 0
	data_ok img /sub/deep.bin $((2 * cs)) 0
	[ "$(field img /grow.bin vdl)" = $((5 * cs + 1)) ]
	[ "$(field img /new.bin vdl)" = $((3 * cs + 5)) ]
	# grown past the file after it: a FAT chain now
	[ "$(field img /grow.bin nofatchain)" = 0 ]
	# new contiguous files: NoFatChain, no FAT chain needed
	[ "$(field img /new.bin nofatchain)" = 1 ]
	[ "$(field img /sub/deep.bin nofatchain)" = 1 ]
	[ "$(field img /empty size)" = 0 ]
	[ "$(field img /empty first)" = 0 ]
}

@test "fatprealloc on exFAT, clusters of 512 B to 1 MiB: exact sizes, zeros from the old ValidDataLength, NoFatChain when contiguous, no leaks, others untouched" {
	local cs
	for cs in 512 4096 32768 1048576; do
		default_run "$cs"
	done
}

@test "fatprealloc on exFAT: a contiguous new file writes no FAT sector and one bitmap sector" {
	mkex img 64M 32768
	# 1,024 clusters: 128 bytes of bitmap
	run -0 fatprealloc --json img /big.bin 32M
	[ "$(json_stat "$output" fat_sectors_written)" = 0 ]
	[ "$(json_stat "$output" bitmap_sectors_written)" = 1 ]
	[ "$(field img /big.bin nofatchain)" = 1 ]
	[ "$(field img /big.bin size)" = 33554432 ]
	clean img
}

@test "fatprealloc on exFAT: growing a file whose next clusters are free extends it in place and keeps NoFatChain" {
	mkex img 16M 4096
	ref put img /a.bin --size 5000
	run -0 fatprealloc --json img /a.bin 100000
	[ "$(json_stat "$output" fat_sectors_written)" = 0 ]
	[ "$(field img /a.bin nofatchain)" = 1 ]
	[[ "$(field img /a.bin runs)" != *,* ]]
	data_ok img /a.bin 100000 5000
	clean img
}

@test "fatprealloc on exFAT: a fragmented result writes the FAT chain and clears NoFatChain" {
	local nfree
	mkex img 16M 4096
	ref junk img
	# every other free cluster taken: only gaps of one cluster are left
	nfree=$(ref info img | sed -n 's/^free_clusters=//p')
	ref put img /filler --size $((nfree / 2 * 4096)) --fragmented
	run -0 fatprealloc --json img /x.bin 12000
	[ "$(json_stat "$output" fragments)" = 3 ]
	(($(json_stat "$output" fat_sectors_written) >= 1))
	[ "$(field img /x.bin nofatchain)" = 0 ]
	[[ "$(field img /x.bin runs)" == *,*,* ]]
	data_ok img /x.bin 12000 0
	clean img
}

@test "fatprealloc on exFAT: a file with a FAT chain grows by linking its last cluster to the new ones" {
	mkex img 16M 4096
	ref put img /frag.bin --size 9000 --fragmented
	ref put img /after.bin --size 100
	ref junk img
	run -0 fatprealloc img /frag.bin 40000
	[ "$(field img /frag.bin nofatchain)" = 0 ]
	[ "$(field img /frag.bin size)" = 40000 ]
	data_ok img /frag.bin 40000 9000
	clean img
}

@test "fatprealloc on exFAT: --lazy raises DataLength only (ValidDataLength kept, nothing zeroed)" {
	mkex img 16M 4096
	populate img 4096
	run -0 fatprealloc --lazy --json img /grow.bin 40000 /new.bin 9000
	[ "$(json_stat "$output" bytes_zeroed)" = 0 ]
	[ "$(field img /grow.bin size)" = 40000 ]
	[ "$(field img /grow.bin vdl)" = $((2 * 4096 + 100)) ]
	[ "$(field img /new.bin size)" = 9000 ]
	[ "$(field img /new.bin vdl)" = 0 ]
	# past ValidDataLength a reader following the spec sees zeros
	data_ok img /grow.bin 40000 $((2 * 4096 + 100))
	data_ok img /new.bin 9000 0
	clean img
}

@test "fatprealloc on exFAT: --no-zero sets ValidDataLength = DataLength and leaves old bytes" {
	mkex img 16M 4096
	populate img 4096
	run -0 fatprealloc --no-zero --json img /new.bin 9000
	[ "$(json_stat "$output" bytes_zeroed)" = 0 ]
	[ "$(field img /new.bin vdl)" = 9000 ]
	# junk (0xA5) from exfatref.py junk is what it reads
	[ "$(ref cat img /new.bin | od -An -tx1 -N4 | tr -d ' ')" = a5a5a5a5 ]
	clean img
}

@test "fatprealloc on exFAT: refusals leave the image byte-identical (no space, -c, missing parent, -n, a directory)" {
	local sha
	mkex img 16M 4096
	populate img 4096
	sha=$(img_sha img)
	run -1 fatprealloc img /a.bin 1M /huge.bin 14M
	[[ $output == "fatprealloc: img: No space left on device: the run needs "*" is free (/huge.bin does not fit)" ]]
	run -1 fatprealloc -c img /grow.bin 1M
	[[ $output == "fatprealloc: img:/grow.bin: No space left on device"* ]]
	run -1 fatprealloc img /nodir/a.bin 1K
	[[ $output == *"parent directory 'nodir' is missing"* ]]
	run -1 fatprealloc -n img /grow.bin 1M
	[[ $output == *"-n/--keep-size cannot be expressed on exFAT"* ]]
	run -1 fatprealloc img /sub 1K
	[[ $output == *"Is a directory"* ]]
	run -0 fatprealloc --dry-run img /dry.bin 1M
	[ "$(img_sha img)" = "$sha" ]
	# and --lazy on FAT is refused
	mkimg fat16 16M fat.img
	run -1 fatprealloc --lazy fat.img /a 1K
	[[ $output == *"--lazy is for exFAT volumes only"* ]]
}

@test "fatprealloc on exFAT: a file already large enough is left as it is and nothing is written (not even VolumeDirty)" {
	local sha
	mkex img 16M 4096
	ref put img /a.bin --size 50000
	sha=$(img_sha img)
	run -0 fatprealloc -v img /a.bin 1000 /A.BIN 50000
	# -v names the file as the volume stores it, whatever case was typed
	assert_output "unchanged /a.bin: size 50000 -> 50000, 0 new clusters, 1 fragment
unchanged /a.bin: size 50000 -> 50000, 0 new clusters, 1 fragment"
	[ "$(img_sha img)" = "$sha" ]
}

@test "fatprealloc on exFAT: names are matched through the up-case table (the same file in any case, once)" {
	mkex img 16M 4096
	ref put img /Straße.TXT --size 10
	run -0 fatprealloc img /STRASSE.txt 5 /straße.txt 9000 /STRAßE.TXT 100
	run -0 ref ls img /
	[ "$(grep -c . <<<"$output")" = 2 ] # the original and STRASSE.txt
	[ "$(field img /Straße.TXT size)" = 9000 ]
	clean img
}

@test "fatprealloc on exFAT: a full directory grows by zeroed clusters (1,000 files, 512-byte clusters)" {
	local args=() i
	mkex img 32M 512
	ref junk img
	for ((i = 0; i < 1000; i++)); do args+=("/d/file-$i.dat" 1); done
	ref mkdir img /d
	run -0 fatprealloc img "${args[@]}"
	run -0 ref ls img /d
	[ "$(grep -c . <<<"$output")" = 1000 ]
	clean img
	for ((i = 0; i < 300; i++)); do args=("/r$i" 1); done
	run -0 fatprealloc img /root-a 1 /root-b 2 /root-c 3 /root-d 4 /root-e 5 /root-f 6
	clean img
}

@test "fatprealloc on exFAT: -p creates directories (one zeroed cluster, NoFatChain, DataLength = ValidDataLength = allocation)" {
	mkex img 32M 4096
	ref junk img
	run -0 fatprealloc -p -v img /a/b/c.bin 1000 /a/x 5 "/Ωμέγα dir/f" 3
	assert_line "created directory /a"
	assert_line "created directory /a/b"
	assert_line "created directory /Ωμέγα dir"
	[ "$(field img /a/b size)" = 4096 ]
	[ "$(field img /a/b vdl)" = 4096 ]
	[ "$(field img /a/b nofatchain)" = 1 ]
	[ "$(field img /a/b attr)" = ---D- ]
	data_ok img /a/b/c.bin 1000 0
	run -0 ref ls img /a
	[ "$(grep -c . <<<"$output")" = 2 ]
	clean img
	run -1 fatprealloc img /new/f 1
	assert_output "fatprealloc: img:/new/f: No such file or directory (parent directory 'new' is missing; -p creates it)"
}

@test "fatprealloc on exFAT: --per-cluster writes one bitmap sector per cluster and ends where the batched run ends" {
	local m p
	for m in "" --per-cluster; do
		mkex img$m 16M 512
		ref put img$m /a --size 1000
		ref put img$m /b --size 10
		ref put img$m /c --size 700 --fragmented
		run -0 fatprealloc --json $m img$m /a 20000 /c 5000 /n 30000
		clean img$m
		data_ok img$m /a 20000 1000
	done
	# the same files, one bitmap sector write per new cluster
	[ "$(json_stat "$output" bitmap_sectors_written)" = "$(json_stat "$output" clusters)" ]
	(($(json_stat "$output" fat_sectors_written) > 40))
	[ "$(field img--per-cluster /n nofatchain)" = 1 ]
	[ "$(field img--per-cluster /a nofatchain)" = 0 ]
	for p in /a /c /n; do
		[ "$(field img $p size)" = "$(field img--per-cluster $p size)" ]
	done
}

@test "fatprealloc on exFAT: a boot region with a bad checksum is refused (one line), the image untouched" {
	local sha
	mkex img 16M 4096
	printf '\x01' | dd of=img bs=1 seek=200 conv=notrunc status=none
	sha=$(img_sha img)
	run -1 fatprealloc img /a 1K
	[[ $output == "fatprealloc: img: "*"checksum"*"run 'fatcheck -r img'" ]]
	[ "$(img_sha img)" = "$sha" ]
}

@test "fatprealloc on exFAT: an up-case table that does not map a-z to A-Z is refused (a new name's hash would be damage), the image untouched" {
	local sha
	mkex img 16M 4096
	# 'a' maps to itself, the table's checksum updated
	ref corrupt img upcase-mapping >/dev/null
	sha=$(img_sha img)
	run -1 fatprealloc img /a.bin 1K
	[ "$output" = "fatprealloc: img: the up-case table breaks the mandatory ASCII mapping (a-z to A-Z, the rest to itself); run 'fatcheck -r img'" ]
	[ "$(img_sha img)" = "$sha" ]
	# fatcheck -r mends the table; then the name is written, its hash
	# through the mended table
	run fatcheck -r img
	[ "$status" -eq 1 ]
	run -0 fatprealloc img /a.bin 1K
	run -0 fatcheck img
	ref verify img
}

@test "fatprealloc on exFAT: a bitmap DataLength other than the heap needs is refused (Linux will not mount it), the image untouched" {
	local sha c
	# Found by fuzz_prealloc: a far larger DataLength was cached as a
	# bitmap of as many sectors, and the run failed after its first
	# write.  fsck.exfat 1.2.0 calls that volume clean; the reference
	# reader does not.
	for c in bitmap-too-large bitmap-too-small; do
		mkex img 16M 4096
		ref corrupt img "$c" >/dev/null
		sha=$(img_sha img)
		run -1 fatprealloc -p img /d/a.bin 1K
		[[ $output == "fatprealloc: img: allocation bitmap DataLength "*", the heap needs 448; run 'fatcheck -r img'" ]]
		[ "$(img_sha img)" = "$sha" ]
		run -1 fatcheck -r img
		run -0 fatprealloc -p img /d/a.bin 1K
		run -0 fatcheck img
		ref verify img
	done
}

# unmark IMG WHAT: clear the bitmap bit of the first cluster of WHAT (a
# path, / for the root, "bitmap" or "upcase"), which stays in use.
unmark()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$1" "$2" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
what = sys.argv[3]
if what == "bitmap":
    v.load_bitmap()
    first = v.bitmap_clusters[0]
elif what == "upcase":
    first = next(r.le(e, 20, 4) for _, e in v.special(r.T_UPCASE))
elif what == "/":
    first = v.root_cluster
else:
    first = v.resolve(what)[1].first
v.set_bit(first, 0)
v.flush()
v.f.close()
PY
}

@test "fatprealloc on exFAT: a cluster in use that the bitmap marks free (a directory on the path, a file to grow, the bitmap's own, the up-case table's) is refused, the image untouched" {
	local sha what
	for what in / /d /d/sub /d/sub/f.bin bitmap upcase; do
		mkex img 8M 512
		printf 'put /d/sub/f.bin --size 1000\nput /d/sub/g.bin --size 10\n' |
			ref batch img
		unmark img "$what"
		sha=$(img_sha img)
		run -1 fatprealloc -p img /d/sub/f.bin 4K /d/sub/new.bin 1K /new.bin 1K
		[[ $output == "fatprealloc: "*"cluster "*" is in use but marked free in the allocation bitmap; run 'fatcheck -r img'" ]]
		[ "$(img_sha img)" = "$sha" ]
	done
}

@test "fatprealloc on exFAT on TexFAT: the first FAT and bitmap are written (ActiveFat 0), the other pair left as it was; ActiveFat 1 is refused" {
	local sum
	mkex img 16M 4096
	populate img 4096
	texfat img convert
	cp img tex.img
	sum="$(texfat img bitmap1) $(texfat img fat1)"
	# A new contiguous file (bitmap bits only), and a NoFatChain file
	# grown past its neighbour (its run linked in the FAT, then the new
	# chain).
	run -0 fatprealloc -p img /new/a.bin 300K /grow.bin 40K
	[ "$(field img /grow.bin nofatchain)" = 0 ]
	[ "$(field img /new/a.bin nofatchain)" = 1 ]
	data_ok img /grow.bin 40960 $((2 * 4096 + 100))
	run -0 ref verify -W img # the active pair, as fatprealloc wrote it
	run -0 fatcheck img
	[ "$(texfat img bitmap1) $(texfat img fat1)" = "$sum" ]
	# Linux reads the first pair whatever ActiveFat says.
	cp tex.img img
	texfat img active1
	sum=$(img_sha img)
	run -1 fatprealloc img /new.bin 1K
	[ "$output" = "fatprealloc: img: TexFAT volume with its second FAT active (Linux reads the first one); the image is left untouched" ]
	[ "$(img_sha img)" = "$sum" ]
}

@test "fatprealloc on exFAT: fsync counts (default: one before VolumeDirty is cleared, one after; --no-sync: none)" {
	command -v strace >/dev/null || skip "strace is not installed"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
	mkex img 16M 4096
	run -0 strace -f -qq -c -o s.log -e trace=fsync,fdatasync fatprealloc img /a.bin 1M
	grep -E '^ *[0-9.]+ +[0-9.]+ +[0-9]+ +2 +fsync$' s.log
	run -0 strace -f -qq -c -o s.log -e trace=fsync,fdatasync fatprealloc --no-sync img /b.bin 1M
	if grep -q fsync s.log; then return 1; fi
	# --sync: one at each ordering point: VolumeDirty set; the bitmap
	# and the zeros (one batch: nothing reaches them yet); the entry
	# set; PercentInUse with VolumeDirty cleared (one boot sector write)
	run -0 strace -f -qq -c -o s.log -e trace=fsync,fdatasync fatprealloc --sync img /c.bin 1M
	grep -E '^ *[0-9.]+ +[0-9.]+ +[0-9]+ +4 +fsync$' s.log
	clean img
}

# crash_fixture: an image with files, the arguments of a run that grows
# past a gap (FAT chain written), creates, and grows a directory.
crash_fixture()
{
	local i
	export SOURCE_DATE_EPOCH=1700000000 # the same stamps in every run
	mkex base.img 16M 512
	populate base.img 512
	ARGS=(-p /grow.bin 9000 /new.bin 3000 /lazy.bin 5000 /p/q/r.bin 700)
	for ((i = 0; i < 12; i++)); do ARGS+=("/sub/n$i" 600); done
	sums base.img /grow.bin /lazy.bin "${OTHERS[@]}" >base.sums
}

# intact IMG: files that existed are readable and unchanged up to their old
# sizes; at worst, bits nobody owns with VolumeDirty set.  (fsck.exfat
# judges too, except on TexFAT, which it refuses.)
intact()
{
	local out
	sums "$1" /gap.bin /frag.bin /keep.bin /sub/inner.bin >now.sums
	grep -v -e '^/grow.bin' -e '^/lazy.bin' base.sums | diff - now.sums
	[ "$(ref info "$1" | sed -n 's/^number_of_fats=//p')" = 2 ] ||
		fsck.exfat -n "$1" >/dev/null
	out=$(ref verify "$1" 2>&1) && return 0
	# only lost clusters, and then VolumeDirty must be set
	if grep -v -e 'owned by nothing (lost clusters)$' <<<"$out" | grep -q '^error'; then
		echo "$out" >&2
		return 1
	fi
	[ "$(ref info "$1" | sed -n 's/^volume_dirty=//p')" = 1 ]
}

# crash_each_write [CHECK...]: run ARGS on a copy of base.img crashing
# after write call FROM (1 unless set), FROM + 1, ... until a run
# completes; after each crash c.img must be intact (and CHECK, when given,
# must pass); the completed run must match ref.img, one uninterrupted run.
crash_each_write()
{
	local n rc
	cp base.img ref.img
	run -0 fatprealloc ref.img "${ARGS[@]}"
	run -0 ref verify -W ref.img
	for ((n = ${FROM:-1}; ; n++)); do
		echo "# crash after call $n"
		((n < 200))
		cp base.img c.img
		rc=0
		FK_CRASH_AFTER_WRITE=$n fatprealloc c.img "${ARGS[@]}" 2>err || rc=$?
		((rc == 0)) && break
		[ "$rc" -eq 99 ]
		intact c.img
		(($# == 0)) || "$@"
	done
	[ "$(img_sha c.img)" = "$(img_sha ref.img)" ]
}

@test "fatprealloc on exFAT: a crash after any write call leaves existing files intact and at worst unowned bitmap bits with VolumeDirty set" {
	faults_compiled || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	crash_fixture
	crash_each_write
	clean ref.img
}

# second_pair_kept: TexFAT's second bitmap and FAT of c.img as in SUM.
second_pair_kept()
{
	[ "$(texfat c.img bitmap1) $(texfat c.img fat1)" = "$SUM" ]
}

@test "fatprealloc on exFAT on TexFAT: a crash after any write call leaves existing files intact and the second FAT and bitmap untouched" {
	faults_compiled || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	crash_fixture
	texfat base.img convert
	SUM="$(texfat base.img bitmap1) $(texfat base.img fat1)"
	crash_each_write second_pair_kept
}

# fail_each_write: run ARGS on a copy of base.img with write call FROM (1
# unless set), FROM + 1, ... failing: one error line, existing files
# intact.
fail_each_write()
{
	local n total
	cp base.img ref.img
	run -0 --separate-stderr fatprealloc --json ref.img "${ARGS[@]}"
	total=$(($(json_stat "$output" write_calls) + $(json_stat "$output" zero_calls)))
	((total > 5))
	for ((n = ${FROM:-1}; n <= total; n++)); do
		echo "# write call $n fails"
		cp base.img c.img
		run -1 --separate-stderr env FK_FAIL_WRITE=$n fatprealloc c.img "${ARGS[@]}"
		[ "$stderr" = "fatprealloc: c.img: Input/output error" ]
		intact c.img
	done
}

@test "fatprealloc on exFAT: a failed write call fails the run with one line, existing files intact" {
	faults_compiled || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	crash_fixture
	fail_each_write
}

# signal_each_write: pc_signal_each (helpers/common.bash) with SIGINT
# before each write call in turn; a run rolled back leaves the bitmap,
# the entries and the boot sector as before (rolled_back).
signal_each_write()
{
	ref ls -R base.img / >base.ls
	ref info base.img | grep -v -e checksum >base.info
	PC_ROLLED=rolled_back
	pc_signal_each 2
}

rolled_back()
{
	ref verify -W "$1"
	ref ls -R "$1" / | diff base.ls -
	ref info "$1" | grep -v -e checksum | diff base.info -
}

@test "fatprealloc on exFAT: a signal before the commit point changes nothing; after it the run completes" {
	faults_compiled || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	crash_fixture
	signal_each_write
	((ROLLED > 0 && CUT == 0 && COMPLETED > 0))
}

# ---- --per-cluster: a stop between two clusters ---------------------------

# pc_fixture: crash_fixture's image with a --per-cluster run of few
# clusters a file: grow.bin grows past the file after it by two (a FAT
# chain, a cluster at a time), a new file and one in new directories get
# two each, and two long names in /sub (which grows) one each.  Sets ARGS,
# and PC_PATHS with each file's PC_WANT, PC_OLD (its size) and PC_VDL (its
# ValidDataLength).
pc_fixture()
{
	local long
	crash_fixture
	long=$(printf 'a name of seventy characters, five name entries %s' {1..2} | head -c 70)
	PC_PATHS=(/grow.bin /new.bin /p/q/r.bin "/sub/1 $long" "/sub/2 $long")
	PC_WANT=(2560 1024 700 1 1)
	PC_OLD=(1124 0 0 0 0)
	PC_VDL=(1124 0 0 0 0)
	pc_args
}

# pc_sizes_ok IMG [CUT GOT]: each file of the run has its size asked for,
# ValidDataLength as large, old data below the old one and zeros above;
# or, when a stop cut the run at file CUT (an index) after GOT of its new
# clusters, that file ends where its chain does and the files after it
# are as they were (a new one empty).  One reference reader for all.
pc_sizes_ok()
{
	local img=$1 cut=${2:-99} got=${3:-0} i want vdl
	local -a rows=()
	for ((i = 0; i < ${#PC_PATHS[@]}; i++)); do
		want=${PC_WANT[i]}
		vdl=$want
		if ((i > cut || (i == cut && got == 0))); then
			want=${PC_OLD[i]}
			vdl=${PC_VDL[i]}
		elif ((i == cut && ((PC_OLD[i] + 511) / 512 + got) * 512 < want)); then
			want=$((((PC_OLD[i] + 511) / 512 + got) * 512))
			vdl=$want
		fi
		rows+=("${PC_PATHS[i]}" "$want" "$vdl" "${PC_VDL[i]}")
	done
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$img" "${rows[@]}" <<'PY' || return 1
import sys
sys.path.insert(0, sys.argv[1])
import exfatref
v, a = exfatref.Volume(sys.argv[2]), sys.argv[3:]
for k in range(0, len(a), 4):
    path, size, vdl, old = a[k], int(a[k + 1]), int(a[k + 2]), int(a[k + 3])
    _, e, _ = v.resolve(path)
    if e is None:
        sys.exit("%s: missing" % path)
    if (e.dl, e.vdl) != (size, vdl):
        sys.exit("%s: DataLength %d, ValidDataLength %d; want %d, %d"
                 % (path, e.dl, e.vdl, size, vdl))
    cl, prob = v.clusters_of(e.first, e.dl, e.nofatchain)
    if prob:
        sys.exit("%s: chain: %s" % (path, prob))
    data = b"".join(v.read(v.cluster_off(c), v.csize) for c in cl)[:size]
    old = min(old, size)
    if data != bytes(i % 251 for i in range(old)) + bytes(size - old):
        sys.exit("%s: data is neither the old bytes nor zeros" % path)
PY
	sums "$img" "${OTHERS[@]}" | diff <(grep -v -e '^/grow.bin' -e '^/lazy.bin' base.sums) -
}

# pc_cut_ok (helpers/common.bash) judges a cut run: no bit nobody owns,
# PercentInUse right, VolumeDirty clear, before and after the rerun.
PC_JUDGE=clean PC_FINAL=clean

@test "fatprealloc on exFAT --per-cluster: a SIGTERM (strace-injected) between two clusters keeps what they took, the volume clean; the same command finishes" {
	command -v strace >/dev/null || skip "strace is not installed"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
	local writes
	pc_fixture
	ARGS=(--sync "${ARGS[@]}")
	cp base.img ref.img
	run -0 strace -f -qq -o w.log -e trace=pwrite64,pwritev \
		fatprealloc ref.img "${ARGS[@]}"
	clean ref.img
	pc_sizes_ok ref.img
	writes=$(grep -cE 'pwrite(64|v)\(' w.log)
	echo "# $writes write calls"
	cp base.img c.img
	# A quarter in: inside grow.bin's new clusters.
	run --separate-stderr strace -f -qq -o /dev/null -e trace=pwrite64,pwritev \
		-e inject=pwrite64,pwritev:signal=SIGTERM:when=$((writes / 4)) \
		fatprealloc c.img "${ARGS[@]}"
	[ "$status" -eq 143 ]
	[ -z "$output" ]
	[[ $stderr =~ ^fatprealloc:\ c\.img:\ interrupted\;\ /grow\.bin\ got\ 1\ of\ its\ 2\ new\ clusters,\ 4\ more\ files\ none\;\ run\ again\ to\ finish$ ]]
	pc_cut_ok c.img "$stderr"
}

@test "fatprealloc on exFAT --per-cluster --sync: a real SIGTERM is heard between two clusters, within a second, and leaves a clean volume" {
	local start ms
	mkex img 64M 512
	# 61,440 clusters, a synchronous bitmap write each: minutes of work.
	start=$(date +%s%N)
	run --separate-stderr timeout --preserve-status -k 10 -s TERM 0.5 \
		fatprealloc --per-cluster --sync --no-zero img /f.bin 30M
	ms=$((($(date +%s%N) - start) / 1000000 - 500))
	echo "# heard $ms ms after the signal"
	[ "$status" -eq 143 ]
	[[ $stderr =~ ^fatprealloc:\ img:\ interrupted\;\ /f\.bin\ got\ ([0-9]+)\ of\ its\ 61440\ new\ clusters\;\ run\ again\ to\ finish$ ]]
	((ms < 1000))
	clean img
	[ "$(field img /f.bin size)" -eq $((BASH_REMATCH[1] * 512)) ]
	[ "$(field img /f.bin vdl)" -eq $((BASH_REMATCH[1] * 512)) ]
}

@test "fatprealloc on exFAT --per-cluster: a signal at any write call rolls back, keeps the clusters taken, or completes; a crash or a failed write leaves existing files intact" {
	faults_compiled || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	pc_fixture
	signal_each_write
	((ROLLED > 0 && CUT >= 10 && COMPLETED > 0))
	# The calls before the clusters are those of a batched run (the
	# loops above cover them): from the last of them on.
	FROM=$((FIRST_CUT - 1))
	crash_each_write
	fail_each_write
}

@test "fatprealloc on exFAT with 4096-byte sectors (losetup -b 4096)" {
	[ "$(id -u)" = 0 ] || skip "needs root for losetup"
	local dev
	truncate -s 64M s.img
	dev=$(losetup -f --show -b 4096 s.img 2>/dev/null) || skip "losetup -b 4096 failed"
	if ! mkfs.exfat -c 32768 "$dev" >/dev/null 2>&1; then
		losetup -d "$dev"
		skip "mkfs.exfat on $dev failed"
	fi
	losetup -d "$dev"
	ref put s.img /old.bin --size 40000
	ref junk s.img
	run -0 fatprealloc s.img /old.bin 200000 /new.bin 100000
	data_ok s.img /old.bin 200000 40000
	data_ok s.img /new.bin 100000 0
	ref verify -W s.img
}

@test "fatprealloc on exFAT and FAT: a time past 2107 stamps the last instant a date holds (one rule for both families)" {
	local t
	# past what a struct tm holds, and past 2107 but within it
	for t in 9223372036854775807 5700000000; do
		mkex v.img 32M 4096
		SOURCE_DATE_EPOCH=$t run -0 fatprealloc v.img /x.bin 4K
		run -0 ref ls v.img /x.bin
		assert_output --partial "mtime=2107-12-31T23:59:59.00+00:00"
		assert_output --partial "ctime=2107-12-31T23:59:59.00+00:00"
		run -0 fsck.exfat -n v.img
		mkimg fat16 16M f.img
		SOURCE_DATE_EPOCH=$t run -0 fatprealloc f.img /x.bin 4K
		run -0 fatls -l f.img /x.bin
		assert_output --partial " 2107-12-31T23:59:58 "
	done
	# before 1980: the first instant, on both
	SOURCE_DATE_EPOCH=0 run -0 fatprealloc v.img /old.bin 4K
	run -0 ref ls v.img /old.bin
	assert_output --partial "mtime=1980-01-01T00:00:00.00+00:00"
}
