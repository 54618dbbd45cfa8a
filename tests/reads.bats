#!/usr/bin/env bats
# reads.bats: what the programs read, counted through strace (bytes and
# system calls on the image's descriptor), for a card where every request
# and every byte costs: fatprealloc reads the FAT only as far as its
# search goes; the results stay what fsck.fat, mtools and fatimg.py say
# they must be.  (bench/coldcard.sh measures the same on a slow device.)

load helpers/common

setup()
{
	common_setup
	command -v strace >/dev/null || skip "strace is not installed"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
}

# image_reads TRACE PATH: "CALLS BYTES" read from the descriptor PATH was
# opened as (pread64, preadv and read-only mappings), from strace -f
# -e trace=openat,pread64,preadv,mmap output.
image_reads()
{
	awk -v path="\"$2\"" '
		index($0, "openat(") && index($0, path ", ") {
			fd = $NF
			next
		}
		fd == "" { next }
		$0 ~ ("pread(64|v)\\(" fd ", ") && $NF ~ /^[0-9]+$/ {
			n++
			bytes += $NF
		}
		$0 ~ ("mmap\\(NULL, [0-9]+, PROT_READ, MAP_PRIVATE, " fd ", ") {
			split($0, f, ", ")
			n++
			bytes += f[2]
		}
		END { print n + 0, bytes + 0 }
	' "$1"
}

# card_reads TRACE PATH: "REQUESTS BYTES" a cold buffered block device
# (4 KiB pages, no read-ahead, as the programs ask with POSIX_FADV_RANDOM)
# reads for the image PATH in strace -f -e trace=openat,pread64,preadv,
# pwritev output: each read asks for the pages it touches that no earlier
# read or write brought in, one request per run of them; a write brings in
# the partial pages at its ends (bench/coldcard.sh's card counts the same).
card_reads()
{
	"$FK_PYTHON" - "$1" "$2" <<'PY'
import re, sys
fd, seen, reqs, pages = None, set(), 0, 0
for line in open(sys.argv[1]):
    if "openat(" in line and '"%s", ' % sys.argv[2] in line:
        fd = line.split("=")[-1].strip()
        continue
    m = fd and re.search(r"(pread64|preadv|pwritev)\(%s, .*, (\d+)\) = (\d+)$"
                         % fd, line)
    if not m:
        continue
    off, n = int(m.group(2)), int(m.group(3))
    lo, hi = off // 4096, (off + n - 1) // 4096
    want = range(lo, hi + 1)
    if m.group(1) == "pwritev":
        want = [p for p in (lo, hi) if p * 4096 < off or
                (p + 1) * 4096 > off + n]
    last = None
    for p in want:
        if p not in seen:
            reqs += last != p - 1
            pages += 1
            last = p
    seen.update(range(lo, hi + 1))
print(reqs, pages * 4096)
PY
}

# span_reads TRACE PATH LO HI: "CALLS BYTES" of the reads (pread64,
# preadv) from the image PATH that start in bytes LO .. HI - 1 of it.
span_reads()
{
	"$FK_PYTHON" - "$@" <<'PY'
import re, sys
trace, path, lo, hi = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
fd, calls, nbytes = None, 0, 0
for line in open(trace):
    if "openat(" in line and '"%s", ' % path in line:
        fd = line.split("=")[-1].strip()
        continue
    m = fd and re.search(r"(pread64|preadv)\(%s, .*, (\d+)\) = (\d+)$" % fd,
                         line)
    if m and lo <= int(m.group(2)) < hi:
        calls += 1
        nbytes += int(m.group(3))
print(calls, nbytes)
PY
}

# exfat_span IMG FAT|BITMAP: "LO HI", the byte range of IMG's first FAT or
# of its allocation bitmap, from the reference reader.
exfat_span()
{
	"$FK_PYTHON" "$FATKIT_HELPERS/exfatref.py" info "$1" | awk -F= -v w="$2" '
		{ v[$1] = $2 }
		END {
			s = v["sector_size"]
			if (w == "FAT") {
				print v["fat_offset"] * s,
				      (v["fat_offset"] + v["fat_length"]) * s
			} else {
				lo = v["cluster_heap_offset"] * s + \
				     (v["bitmap_cluster"] - 2) * v["cluster_size"]
				print lo, lo + v["bitmap_length"]
			}
		}'
}

# solid_fat IMG: rewrite IMG's FAT copies in place, so they are data, not
# holes a sparse-aware scan skips (as a card has no holes).
solid_fat()
{
	eval "$(fat_geometry "$1")"
	"$FK_PYTHON" - "$1" $((rsvd_secs * bytes_per_sec)) \
		$((nfats * fat_secs * bytes_per_sec)) <<'PY'
import sys
path, off, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "r+b") as f:
    f.seek(off)
    data = f.read(n)
    f.seek(off)
    f.write(data)
PY
}

# set_fsinfo IMG FREE NEXT: FSInfo's free count and next-free hint.
set_fsinfo()
{
	eval "$(fat_geometry "$1")"
	"$FK_PYTHON" - "$1" $((fsinfo_sec * bytes_per_sec)) "$2" "$3" <<'PY'
import struct, sys
path, off, free, nxt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with open(path, "r+b") as f:
    f.seek(off + 488)
    f.write(struct.pack("<II", free, nxt))
PY
}

# fsinfo_exact IMG: FSInfo's free count is what the FAT holds, and its
# hint names a free cluster.
fsinfo_exact()
{
	local next
	[ "$(fsinfo_free "$1")" = "$(count_free_clusters "$1")" ]
	next=$(fsinfo_next "$1")
	[ "$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" get "$1" "$next")" = 0 ]
}

# big_fat32 IMG: FAT32 of 256 MiB in 512-byte clusters: a 2 MiB FAT per
# copy (16 of the allocator's first 128 KiB loads), written out.
big_fat32()
{
	mkimg fat32 256M "$1" -s 1
	solid_fat "$1"
}

@test "reads: fatprealloc on an empty FAT32 reads the FAT from the FSInfo hint only as far as the file takes, not all of it" {
	local calls bytes
	big_fat32 img
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv,mmap \
		fatprealloc img /a.bin 32M
	read -r calls bytes < <(image_reads r.log img)
	echo "# $calls reads, $bytes bytes"
	# 32 MiB is 65536 clusters, 256 KiB of FAT: the pages from the hint
	# on that hold them, 260 KiB in one read (it was 384 KiB in three
	# chunks of 128), of the 2 MiB the FAT holds; then
	# copy 2's 256 KiB of the sectors the run writes, compared with
	# copy 1's before the first write.  Under 1 MiB, less than half
	# of the FAT's 2 MiB per copy.
	((bytes < 1024 * 1024))
	((calls < 40))
	fsck_clean img
	fat_copies_equal img
	fsinfo_exact img
	[[ $(mdir -i img ::a.bin) == *" 33554432 "* ]]
}

@test "reads: a search that runs off the end and wraps takes the first long enough free run from the hint on, and FSInfo stays exact" {
	local hint calls bytes first
	big_fat32 img
	# The first 96 MiB in use by a file, then the hint near the end:
	# the search starts there, runs off the end and wraps.
	run -0 fatprealloc img /full.bin 96M
	eval "$(fat_geometry img)"
	hint=$((nclus - 1000))
	set_fsinfo img "$(count_free_clusters img)" "$hint"
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv,mmap \
		fatprealloc img /b.bin 8M
	read -r calls bytes < <(image_reads r.log img)
	echo "# $calls reads, $bytes bytes"
	fsck_clean img
	fat_copies_equal img
	fsinfo_exact img
	# 1000 clusters at the end are too few for one run: the run found
	# after the wrap starts right after the 96 MiB file (clusters 3 to
	# 196610).
	first=$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" chain img \
		"$(fatls --json img /b.bin | "$FK_PYTHON" -c \
			'import json,sys; print(json.load(sys.stdin)["entries"][0]["first_cluster"])')")
	echo "# $first"
	[ "$first" = "runs=196611-212994 end=eoc" ]
}

@test "reads: fatprealloc reads the whole FAT and writes the exact free count when FSInfo's is unset or cannot be right" {
	local calls bytes free
	big_fat32 img
	free=$(count_free_clusters img)
	for bad in 4294967295 5; do
		cp img t.img
		solid_fat t.img # cp makes runs of zeros holes again
		set_fsinfo t.img "$bad" 3
		run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv,mmap \
			fatprealloc t.img /a.bin 1M
		read -r calls bytes < <(image_reads r.log t.img)
		echo "# FSInfo free $bad: $calls reads, $bytes bytes"
		((bytes >= 2 * 1024 * 1024))
		fsinfo_exact t.img
		fsck_clean t.img
	done
	# A plausible count is kept, less what the run took, as the Linux
	# kernel keeps it: no full read for it.
	cp img t.img
	set_fsinfo t.img $((free - 100)) 3
	run -0 fatprealloc t.img /a.bin 1M
	[ "$(fsinfo_free t.img)" = $((free - 100 - 2048)) ]
}

@test "reads: out of space on a large FAT32 the whole FAT is counted: the need and free numbers are exact and the image unchanged" {
	local before free
	big_fat32 img
	run -0 fatprealloc img /full.bin 200M
	free=$(count_free_clusters img)
	before=$(img_sha img)
	run -1 --separate-stderr fatprealloc img /big.bin 100M
	echo "# $stderr"
	[[ $stderr == *"No space left on device"* ]]
	[ "$(img_sha img)" = "$before" ]
	# And one that fits exactly is taken, from wherever the space is.
	run -0 fatprealloc img /fits.bin $((free * 512))
	fsck_clean img
	fsinfo_exact img
}

@test "reads: -c finds the one long enough run in a later chunk, and refuses (unchanged) when there is none" {
	local before
	big_fat32 img
	# Fragment the start: 40 files of 1 MiB, every other one removed.
	for i in $(seq 10 49); do
		fatprealloc img "/f$i.bin" 1M
	done
	for i in $(seq 10 2 49); do
		mdel -i img "::f$i.bin"
	done
	set_fsinfo img "$(count_free_clusters img)" 3
	run -0 fatprealloc -c img /long.bin 64M
	fsck_clean img
	fsinfo_exact img
	run -0 fatls --chain img /long.bin
	[[ $output == *" fragments=1 "* ]]
	before=$(img_sha img)
	run -1 --separate-stderr fatprealloc -c img /huge.bin 200M
	[[ $stderr == *"No space left on device"* ]]
	[ "$(img_sha img)" = "$before" ]
}

# dev_sectors_read DEV: sectors the block device DEV has read so far.
dev_sectors_read()
{
	awk '{ print $3 }' "/sys/block/${1#/dev/}/stat"
}

@test "reads: on a block device the kernel reads no more than fatls -R and fatcheck ask for (no read-ahead on their small reads)" {
	((EUID == 0)) || skip "needs root for losetup"
	local dev before asked got d f
	mkimg fat32 512M img -s 8
	mkdir tree
	for d in $(seq 10 29); do
		mkdir "tree/Dir $d"
		for f in $(seq 1 12); do
			printf 'file %s %s\n' "$d" "$f" >"tree/Dir $d/A long file name $f.txt"
		done
	done
	mcopy -s -Q -m -i img tree/* ::/
	dev=$(losetup -f --show img) || skip "losetup -f --show does not work here"
	LOOPDEV=$dev
	for prog in "fatls -R" fatcheck; do
		blockdev --flushbufs "$dev"
		before=$(dev_sectors_read "$dev")
		run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv,mmap \
			$prog "$dev"
		got=$((($(dev_sectors_read "$dev") - before) * 512))
		read -r _ asked < <(image_reads r.log "$dev")
		echo "# $prog: asked $asked bytes, the device read $got"
		# Pages are 4 KiB: a 512-byte read costs one page at most.
		((got <= asked + 64 * 1024))
	done
	losetup -d "$dev"
	LOOPDEV=
}

teardown()
{
	[[ -z ${LOOPDEV:-} ]] || losetup -d "$LOOPDEV" 2>/dev/null || true
}

@test "reads: a directory's adjacent clusters are read in one request, and fatls lists the same names as mdir" {
	local calls bytes n
	mkimg fat32 64M img -s 1
	mkdir -p "tree/A dir"
	for n in $(seq 100 199); do
		: >"tree/A dir/An empty file with a long name $n.txt"
	done
	# Empty files take no clusters: the directory's 19 clusters of 512
	# bytes follow each other.
	mcopy -s -Q -m -i img tree/* ::/
	run -0 "$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" chain img \
		"$(fatls --json img "/A dir" | "$FK_PYTHON" -c \
			'import json,sys; print(json.load(sys.stdin)["entries"][0]["first_cluster"])')"
	[[ $output == runs=*-*" end=eoc" && $output != *,* ]]
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv,mmap \
		fatls "img" "/A dir"
	read -r calls bytes < <(image_reads r.log img)
	echo "# $calls reads, $bytes bytes"
	# The boot sector, a FAT span or two, the root and the directory,
	# each in one read (it was one per cluster: 20 for these two).
	((calls <= 8))
	diff <(printf '%s\n' "$output" | sort) \
		<(mdir -b -i img "::/A dir" | sed 's|^::/A dir/||' | sort)
}

# anon_maps TRACE PATH: anonymous mappings a program made after it opened
# PATH, from strace -f -e trace=openat,mmap output.
anon_maps()
{
	awk -v path="\"$2\"" '
		index($0, "openat(") && index($0, path ", ") { on = 1 }
		on && index($0, "MAP_ANONYMOUS") { n++ }
		END { print n + 0 }
	' "$1"
}

@test "reads: start-up on an empty card maps no buffer it leaves unused, and a dry run reads no time zone" {
	local n
	# AddressSanitizer's allocator maps memory its own way.
	! ldd "$FATKIT_BUILD/fatls" | grep -q libasan || skip "sanitizer build"
	truncate -s 64G ex.img
	mkfs.exfat ex.img >/dev/null
	truncate -s 4G fat.img
	mkfs.fat -F 32 fat.img >/dev/null
	# Each mapping costs two system calls and at least one page fault,
	# the main cost of a start-up.  Left on the exFAT card: the up-case
	# map (128 KiB), the checker's cluster map and the writer's free map
	# (sparse), the writer's copy of the root and of the new directory.
	# Before: 4, 5 and 7 (the FAT cache's slots and spans, a whole
	# cluster for the root's first page), and on FAT32 2 and 4 (a scan
	# buffer of 1 MiB, never touched in an image file).
	strace -f -qq -o t.log -e trace=openat,mmap fatls ex.img >/dev/null
	n=$(anon_maps t.log ex.img)
	echo "# exFAT fatls: $n"
	((n <= 1))
	strace -f -qq -o t.log -e trace=openat,mmap fatcheck -n ex.img >/dev/null
	n=$(anon_maps t.log ex.img)
	echo "# exFAT fatcheck -n: $n"
	((n <= 2))
	strace -f -qq -o t.log -e trace=openat,mmap \
		fatprealloc --dry-run -p ex.img /VIDEO/clip.mp4 256M >/dev/null
	n=$(anon_maps t.log ex.img)
	echo "# exFAT fatprealloc --dry-run: $n"
	((n <= 4))
	# The time goes into the entry sets a commit writes, not a plan.
	run -1 grep -c localtime t.log
	strace -f -qq -o t.log -e trace=openat,mmap fatls fat.img >/dev/null
	n=$(anon_maps t.log fat.img)
	echo "# FAT32 fatls: $n"
	((n == 0))
	strace -f -qq -o t.log -e trace=openat,mmap \
		fatprealloc --dry-run -p fat.img /VIDEO/clip.mp4 256M >/dev/null
	n=$(anon_maps t.log fat.img)
	echo "# FAT32 fatprealloc --dry-run: $n"
	((n <= 2))
	# The dry run's plan is what a run then does.
	run -0 fatprealloc -p ex.img /VIDEO/clip.mp4 256M
	run -0 fsck.exfat -n ex.img
	run -0 fatprealloc -p fat.img /VIDEO/clip.mp4 256M
	run -0 fsck.fat -n fat.img
}

@test "reads: fatls and fatcheck read an exFAT directory of 128 KiB clusters only in pieces up to its end marker" {
	local calls bytes n long_dir
	truncate -s 1G img
	mkfs.exfat -c 128K img >/dev/null
	{
		echo "mkdir '/A dir'"
		for n in $(seq 100 159); do
			echo "put '/A dir/A file with a long name $n.txt' --size 100"
		done
		# 400 sets of 3 entries: 37.5 KiB, past the first pieces.
		echo "mkdir '/Long'"
		for n in $(seq 1000 1399); do
			echo "put '/Long/f$n' --size 0"
		done
	} | "$FK_PYTHON" "$FATKIT_HELPERS/exfatref.py" batch img
	for d in "/A dir" /Long; do
		run -0 strace -f -qq -o r.log \
			-e trace=openat,pread64,preadv,mmap fatls img "$d"
		read -r calls bytes < <(image_reads r.log img)
		echo "# fatls $d: $calls reads, $bytes bytes"
		# The boot region, a 64 KiB FAT span, the up-case table, the
		# root and the directory, 8 KiB of each first, then doubling:
		# each of the 128 KiB clusters read whole was 478 KB.
		((bytes < 256 * 1024))
		diff <(printf '%s\n' "$output" | sort) \
			<("$FK_PYTHON" "$FATKIT_HELPERS/exfatref.py" ls img "$d" |
				sed -n 's|.*path=[^	]*/||p' | sort)
	done
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv,mmap \
		fatcheck img
	read -r calls bytes < <(image_reads r.log img)
	echo "# fatcheck: $calls reads, $bytes bytes"
	# No cluster is lost, so nothing is read past an end marker: the
	# boot regions, the FAT span, the bitmap and the up-case table
	# besides what fatls reads (the three clusters whole were 393 KB).
	((bytes < 320 * 1024))
}

# hide IMG DIR: in IMG (128 KiB clusters), put DIR/x-a (no clusters),
# DIR/x-h (two clusters of "h") and DIR/x-e (none) in a row, then an end
# marker where x-a's set was: the sets of x-h and x-e lie past it, and
# x-h's clusters are marked in the bitmap and owned by nothing.  Prints
# x-h's clusters.
hide()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
d = sys.argv[3].rstrip("/")
a, _ = v.put(d + "/x-a", 0, b"")
h, cl = v.put(d + "/x-h", 2 * v.csize, b"h" * 2 * v.csize)
v.put(d + "/x-e", 0, b"")
a.dir.write_entries(a.index, bytes(len(a.raw)))
v.flush()
print(" ".join(map(str, cl)))
PY
}

@test "reads: exFAT fatcheck reads past the end markers when clusters are lost: a set hidden there that owns clusters is found, and -r removes it with them" {
	local calls bytes d cl c
	for d in / "/A dir"; do
		rm -f img
		truncate -s 1G img
		mkfs.exfat -c 128K img >/dev/null
		{
			echo "mkdir '/A dir'"
			echo "put '/A dir/kept.txt' --size 100"
			echo "put /top.txt --size 100"
		} | ref batch img
		cl=$(hide img "$d")
		run -4 strace -f -qq -o r.log \
			-e trace=openat,pread64,preadv,mmap fatcheck img
		read -r calls bytes < <(image_reads r.log img)
		echo "# $d: $calls reads, $bytes bytes"
		# The rest of the directory's cluster past its marker.
		((bytes >= 128 * 1024))
		assert_line --regexp "^warning: ${d%/}/?: file 'x-h' \(entry [0-9]+\) lies past the directory's end marker, where readers stop; its clusters count as lost$"
		assert_line --regexp "^warning: ${d%/}/?: file 'x-e' \(entry [0-9]+\) lies past the directory's end marker, where readers stop$"
		assert_line --regexp "^error: img: 2 clusters marked in the allocation bitmap are owned by nothing, the first ${cl%% *}$"
		run -1 fatcheck -r img
		assert_output --partial "(repair: file freed)"
		run -0 fatcheck img
		run -0 ref verify -W img
		run -0 timeout 20 fsck.exfat -n img
		# x-h's set and its clusters went together.
		for c in $cl; do
			run -0 "$FK_PYTHON" -c "
import sys; sys.path.insert(0, '$FATKIT_HELPERS')
import exfatref as r
print(r.Volume('img').bit($c))"
			assert_output 0
		done
		run -0 ref cat img "/A dir/kept.txt"
	done
}

@test "reads: exFAT fatcheck leaves a set hidden past an end marker unread when no cluster is lost; fatcheck -r finds and removes it, so fatprealloc may write there" {
	local calls bytes sum
	truncate -s 1G img
	mkfs.exfat -c 128K img >/dev/null
	echo "put '/A dir/kept.txt' --size 100" | ref batch img
	"$FK_PYTHON" - "$FATKIT_HELPERS" img <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
a, _ = v.put("/A dir/x-a", 0, b"")
v.put("/A dir/x-e", 0, b"")
a.dir.write_entries(a.index, bytes(len(a.raw)))
v.flush()
PY
	run -1 ref verify img
	assert_output --partial "after the end-of-directory marker"
	sum=$(img_sha img)
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv,mmap \
		fatcheck img
	read -r calls bytes < <(image_reads r.log img)
	echo "# $calls reads, $bytes bytes"
	refute_output --partial "hidden"
	((bytes < 256 * 1024))
	[ "$(img_sha img)" = "$sum" ]
	# fatprealloc will not add to that directory, and sends the user to
	# fatcheck -r, which reads past the markers and removes the set.
	run -1 fatprealloc img "/A dir/new.bin" 1K
	assert_output --partial "fatcheck -r"
	[ "$(img_sha img)" = "$sum" ]
	run -1 fatcheck -r img
	assert_line --regexp "^warning: /A dir: file 'x-e' \(entry [0-9]+\) lies past the directory's end marker, where readers stop \(repair: file freed\)$"
	run -0 fatcheck -r img
	run -0 ref verify -W img
	run -0 fatprealloc img "/A dir/new.bin" 1K
	run -0 timeout 20 fsck.exfat -n img
	run -0 ref cat img "/A dir/kept.txt"
}

@test "reads: fatprealloc on exFAT reads the allocation bitmap only as far as the file takes, the root up to its end marker, the FAT a page at a time; PercentInUse is exact when it read the whole bitmap, else 0xFF" {
	local calls bytes
	truncate -s 1G img
	mkfs.exfat -c 4096 img >/dev/null
	# Data, not holes, where the reads go (a card has no holes): the
	# FAT, the 32 KiB bitmap, the up-case table and the root.
	dd if=img of=img bs=1M count=8 conv=notrunc 2>/dev/null
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv,mmap \
		fatprealloc img /a.bin 4M
	read -r calls bytes < <(image_reads r.log img)
	echo "# $calls reads, $bytes bytes"
	# The main boot region (6 KiB), a page of FAT (the special
	# chains), the up-case table, the root's first 4 KiB cluster (read
	# again from the page cache as it is walked), 4 KiB of bitmap.  It
	# was 138 KB: all of the bitmap, a 64 KiB FAT span.
	((bytes < 64 * 1024))
	((calls <= 12))
	fsck.exfat -n img >/dev/null
	run -0 "$FK_PYTHON" "$FATKIT_HELPERS/exfatref.py" verify -W img
	# 4 MiB were taken and 7/8 of the bitmap was not read: the
	# percentage is not known, and the field says so (spec 3.1.16).
	run -0 "$FK_PYTHON" "$FATKIT_HELPERS/exfatref.py" info img
	assert_line percent_in_use=255
	# A volume whose bitmap the search reads whole: exact.
	rm img
	truncate -s 64M img
	mkfs.exfat -c 4096 img >/dev/null
	run -0 fatprealloc img /b.bin 10M
	run -0 "$FK_PYTHON" "$FATKIT_HELPERS/exfatref.py" info img
	assert_line percent_in_use=16
	assert_line percent_in_use_computed=16
}

@test "reads: the exFAT writer asks a cold card for the pages it needs: the main boot region, a page of root, of FAT and of bitmap, the up-case table" {
	local reqs bytes seed=()
	truncate -s 64G img
	mkfs.exfat img >/dev/null
	# Data, not holes, up to the heap's first clusters (a card has none).
	dd if=img of=img bs=1M count=4 conv=notrunc 2>/dev/null
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv,pwritev \
		fatprealloc --no-zero --sync -p img /VIDEO/clip.mp4 256M
	read -r reqs bytes < <(card_reads r.log img)
	echo "# 64 GiB, 128 KiB clusters: $reqs requests, $bytes bytes"
	# Boot region 8 KiB (one request: the probes are asked of it too; it
	# was two, sector 0 read alone first), root 4 KiB, FAT 4 KiB, up-case
	# table 8 KiB, bitmap 4 KiB.  It was 48 KiB: the backup boot region,
	# an 8 KiB root, 16 KiB of FAT.
	((reqs <= 5 && bytes <= 28 * 1024))
	run -0 fsck.exfat -n img
	run -0 "$FK_PYTHON" "$FATKIT_HELPERS/exfatref.py" verify -W img
	# The seed's card: 512-byte clusters, whose 1.2 MiB bitmap's links
	# fill 9 KiB of FAT, read with the up-case table's and the root's in
	# one request (not a page and then more).
	rm img
	truncate -s 4608M img
	mkfs.exfat -c 512 img >/dev/null
	dd if=img of=img bs=1M count=40 conv=notrunc 2>/dev/null
	for i in $(seq 1 16); do seed+=("/f$i" 64K); done
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv,pwritev \
		fatprealloc --lazy --sync img "${seed[@]}"
	read -r reqs bytes < <(card_reads r.log img)
	echo "# 4.5 GiB, 512-byte clusters: $reqs requests, $bytes bytes"
	((reqs <= 5 && bytes <= 36 * 1024))
	run -0 fsck.exfat -n img
	run -0 "$FK_PYTHON" "$FATKIT_HELPERS/exfatref.py" verify -W img
}

# fat32_card_run DEV CMD...: run fatprealloc CMD on the block device DEV,
# cold, under strace; prints "REQUESTS BYTES" as card_reads counts them.
fat32_card_run()
{
	local dev=$1
	shift
	blockdev --flushbufs "$dev"
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv,pwritev \
		fatprealloc "$@"
	card_reads r.log "$dev"
}

# card_judged IMG: the loop device of IMG (LOOPDEV) detached, fsck.fat,
# the two FAT copies and FSInfo judge IMG.
card_judged()
{
	losetup -d "$LOOPDEV"
	LOOPDEV=
	fsck_clean "$1"
	fat_copies_equal "$1"
	fsinfo_exact "$1"
}

@test "reads: the FAT32 writer asks a cold card for four requests: the boot page, the FAT it searches in one (the judges' and the root's entries with it), a page of root, the second copy's sectors it checks" {
	((EUID == 0)) || skip "needs root for losetup"
	local dev reqs bytes i files=()
	# The cold card's: 16 GiB, 4 KiB clusters, empty.  On a block
	# device, as on the card: read with pread, no holes skipped.
	mkimg fat32 16G img -s 8
	cp --sparse=always img img2
	dev=$(losetup -f --show img) || skip "losetup -f --show does not work here"
	LOOPDEV=$dev
	# --no-zero where the bench has -n (--keep-size): the same reads,
	# and a file fsck.fat finds whole.
	read -r reqs bytes < <(fat32_card_run "$dev" --no-zero --sync -p \
		"$dev" /VIDEO/clip.mp4 256M)
	echo "# 256M: $reqs requests, $bytes bytes"
	# Boot region 8 KiB (the opening's read of the volume's start, FSInfo
	# in it); FAT 260 KiB from its start, the entries of the 65,537
	# clusters the run takes with FAT[0] and the root's: one request;
	# the root 4 KiB; the second copy's 513 sectors the run writes, 260
	# KiB.  The floor (bench/floor.py) is 258 KiB in 3 requests, and
	# the second copy's sectors come on top: 4 requests of 532 KiB are
	# 29.2 ms on the card of bench/coldcard.sh, 2x its 14.7.  It was 7
	# requests of 656 KiB: the FAT in pieces of 64 (the root's chain),
	# 128 and 256 KiB, 384 KiB of it, its first page alone before them
	# (the judges'), and 28 KiB after the run's last sector (the check
	# of the sector it writes, read with 63 more).
	((reqs <= 4 && bytes <= 532 * 1024))
	card_judged img
	[[ $(mdir -i img ::VIDEO/clip.mp4) == *" 268435456 "* ]]
	# Sixteen files of 16 MiB: the same.
	dev=$(losetup -f --show img2)
	LOOPDEV=$dev
	for i in $(seq -w 1 16); do files+=("/VIDEO/clip$i.mp4" 16M); done
	read -r reqs bytes < <(fat32_card_run "$dev" --no-zero --sync -p \
		"$dev" "${files[@]}")
	echo "# 16 x 16M: $reqs requests, $bytes bytes"
	((reqs <= 4 && bytes <= 532 * 1024))
	# Run again: the files hold their clusters, FSInfo says so, and no
	# FAT is read for a search the run does not make: the boot page, the
	# root and the directory, and the chains' five 64 KiB spans (320
	# KiB, the last one 60 KiB past the chains' 257 KiB), as before.
	read -r reqs bytes < <(fat32_card_run "$dev" --no-zero --sync -p \
		"$dev" "${files[@]}")
	echo "# 16 x 16M again: $reqs requests, $bytes bytes"
	((bytes <= 336 * 1024))
	card_judged img2
	# The seed's card (bench/prealloc.sh): 4.5 GiB, 512-byte clusters,
	# 16 files of 64 KiB in the root.  The 2,048 clusters' entries are 8
	# KiB of FAT: 12 KiB of its pages in one request, and the root's
	# chain walk reads no 64 KiB span past them.  It was 6 requests of
	# 152 KiB (a 128 KiB chunk, the judges' page and the span before it).
	rm img img2
	mkimg fat32 4608M img -s 1
	dev=$(losetup -f --show img)
	LOOPDEV=$dev
	files=()
	for i in $(seq 1 16); do files+=("/f$i" 64K); done
	read -r reqs bytes < <(fat32_card_run "$dev" --no-zero --sync "$dev" \
		"${files[@]}")
	echo "# seed: $reqs requests, $bytes bytes"
	((reqs <= 4 && bytes <= 36 * 1024))
	card_judged img
}

@test "reads: a stale FSInfo free count sizes one FAT read, not a search one page at a time" {
	((EUID == 0)) || skip "needs root for losetup"
	local dev reqs bytes
	# 2 GiB, 4 KiB clusters, a file of 1800 MiB from the start: the FAT
	# is full from cluster 2 on.  FSInfo then says every cluster is free
	# and the next free one is 2, as a card's can after a crash.
	mkimg fat32 2G img -s 8
	fatprealloc --no-zero img /big.bin 1800M
	"$FK_PYTHON" - img <<'PY'
import struct, sys
with open(sys.argv[1], "r+b") as f:
    bs = f.read(512)
    bps, fsi = struct.unpack_from("<H", bs, 11)[0], struct.unpack_from("<H", bs, 48)[0]
    tot, res = struct.unpack_from("<I", bs, 32)[0], struct.unpack_from("<H", bs, 14)[0]
    nfats, fatsz = bs[16], struct.unpack_from("<I", bs, 36)[0]
    nclus = (tot - res - nfats * fatsz) // bs[13]
    f.seek(fsi * bps + 488)
    f.write(struct.pack("<II", nclus, 2))
PY
	dev=$(losetup -f --show img) || skip "losetup -f --show does not work here"
	LOOPDEV=$dev
	read -r reqs bytes < <(fat32_card_run "$dev" --no-zero "$dev" /small 4K)
	echo "# $reqs requests, $bytes bytes"
	# The count asks for one cluster: one page of FAT at the hint; the
	# search goes on from there in loads that double (64 KiB to 2 MiB,
	# the FAT's 1.8 MiB in use in some 8 requests).  Read one page at a
	# time it was 463 requests.
	((reqs <= 24))
	losetup -d "$dev"
	LOOPDEV=
	# The file is whole; the count stays as stale as it was, less the
	# cluster taken (as Linux keeps it): all fsck.fat finds.
	run fsck.fat -n img
	[[ $output == *"Free cluster summary wrong (523259 vs. really 62458)"* ]]
	[[ -z $(grep -v -e '^fsck\.fat ' -e 'Free cluster summary wrong' \
		-e 'Auto-correcting' -e '^Leaving filesystem unchanged' \
		-e '^img: ' -e '^$' <<<"$output") ]]
	[[ $(mdir -i img ::small) == *" 4096 "* ]]
	fat_copies_equal img
}

@test "reads: the exFAT writer reads the bitmap a request needs in one read, not in pieces that double" {
	local lo hi calls bytes
	truncate -s 1G img
	mkfs.exfat -c 512 img >/dev/null
	dd if=img of=img bs=1M count=40 conv=notrunc 2>/dev/null
	read -r lo hi < <(exfat_span img BITMAP)
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv \
		fatprealloc img /a.bin 64M
	read -r calls bytes < <(span_reads r.log img $((lo + 4096)) "$hi")
	echo "# bitmap past its first page: $calls reads, $bytes bytes"
	# 64 MiB of 512-byte clusters is 131,072 bits, 16 KiB of bitmap:
	# the page the open read, then the rest in one read of 16 KiB, and
	# the sector the run changes (512 bytes, before it writes it).  It
	# was three reads of 24.5 KiB (8 and 16 KiB: read-ahead doubling
	# from one page).
	((calls <= 2 && bytes <= 16384 + 512))
	run -0 fsck.exfat -n img
	run -0 "$FK_PYTHON" "$FATKIT_HELPERS/exfatref.py" verify -W img
}

@test "reads: exFAT fatcheck on an empty card reads its page of FAT once, not again in a 32 KiB read-ahead" {
	local lo hi calls bytes
	truncate -s 64G img
	mkfs.exfat img >/dev/null
	read -r lo hi < <(exfat_span img FAT)
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv \
		fatcheck -n img
	read -r calls bytes < <(span_reads r.log img "$lo" "$hi")
	echo "# FAT: $calls reads, $bytes bytes"
	# The open walks the bitmap's, up-case table's and root's links in
	# one page; the check's look at the bitmap's links finds them there.
	((calls == 1 && bytes == 4096))
}

@test "reads: opening a volume reads its start once: the window's probes, the family's choice and its boot region come from one read at offset 0" {
	local calls bytes img
	truncate -s 16M ex.img && mkfs.exfat ex.img >/dev/null
	truncate -s 2M f12.img && mkfs.fat -F 12 f12.img >/dev/null
	truncate -s 64M f32.img && mkfs.fat -F 32 f32.img >/dev/null
	for img in ex.img f12.img f32.img; do
		run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv \
			fatls "$img"
		read -r calls bytes < <(span_reads r.log "$img" 0 1)
		echo "# fatls $img: $calls reads at offset 0 ($bytes bytes)"
		((calls == 1))
	done
	# A writer reads the main boot region alone, still in one request.
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv \
		fatprealloc ex.img /f 4K
	read -r calls bytes < <(span_reads r.log ex.img 0 1)
	echo "# fatprealloc ex.img: $calls reads at offset 0 ($bytes bytes)"
	((calls == 1 && bytes == 6144))
	# A volume at an offset: its start is read once there too.
	truncate -s 1M off.img && cat ex.img >>off.img
	run -0 strace -f -qq -o r.log -e trace=openat,pread64,preadv \
		fatls off.img@@1M
	read -r calls bytes < <(span_reads r.log off.img 1048576 1048577)
	echo "# fatls off.img@@1M: $calls reads at 1 MiB ($bytes bytes)"
	((calls == 1))
}
