#!/usr/bin/env bats
# exfat-writer-hostile.bats: fatprealloc on exFAT volumes whose directories
# a writer must not trust.  Every directory on every path is judged before
# the first write (its chain: no loop, free, bad or out-of-range link, as
# many clusters as DataLength needs, no more and no fewer; ValidDataLength
# equal to DataLength; a NoFatChain run inside the heap; no cluster shared
# with the bitmap, the up-case table, another directory on the path or a
# file to grow; no damaged entry set among its entries: one cut short, with
# a bad SetChecksum, orphan secondaries, an unknown critical entry), and a
# refusal is one line naming the directory and `fatcheck -r`, with the
# image byte-identical.  Images are built by
# tests/helpers/exfatref.py (written from Microsoft's exFAT specification),
# which also judges the results with fsck.exfat.

bats_require_minimum_version 1.5.0

load helpers/common

mkex()
{
	rm -f "$1"
	truncate -s "$2" "$1" && mkfs.exfat -c "$3" "$1" >/dev/null
}

# hostile IMG KIND: /A (a directory with /A/in.bin) and /B, then one kind
# of damage around them (see the cases below).
hostile()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$1" "$2" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
kind = sys.argv[3]
a = v.mkdir("/A")
v.put("/A/in.bin", 100, b"x" * 100)
b = v.mkdir("/B")
def point(d, first):
    """Directory d's entry leads to first; its own cluster is freed."""
    for c in d.clusters:
        v.set_bit(c, 0)
    d.entry.set_stream(first=first)
    v.rewrite_set(d.entry)
if kind == "two-entries":          # /B's entry leads to /A's directory
    point(b, a.clusters[0])
elif kind == "to-root":            # /B's entry leads to the root
    point(b, v.root_cluster)
elif kind == "to-upcase":
    point(b, next(r.le(e, 20, 4) for _, e in v.special(r.T_UPCASE)))
elif kind == "to-bitmap":
    v.load_bitmap()
    point(b, v.bitmap_clusters[0])
elif kind == "file-in-dir":        # /A/in.bin's cluster is /A's
    e = a.lookup("in.bin")
    v.set_bit(e.first, 0)
    e.set_stream(first=a.clusters[0])
    v.rewrite_set(e)
elif kind == "first-zero":         # /B: FirstCluster 0, DataLength 4 KiB
    point(b, 0)
elif kind == "nofatchain-past-heap":
    point(b, v.nclus + 1)          # the last cluster, DataLength two
    v.set_bit(v.nclus + 1, 1)
    b.entry.set_stream(dl=2 * v.csize, vdl=2 * v.csize)
    v.rewrite_set(b.entry)
elif kind in ("chain-loop", "chain-free", "chain-bad", "chain-range"):
    d = r.fill_dir(v, "/C", 2)
    last = d.clusters[-1]
    v.fat_set(last, {"chain-loop": d.clusters[0],
                     "chain-free": v.find_free(last + 1),
                     "chain-bad": r.BAD,
                     "chain-range": v.nclus + 2}[kind])
    if kind == "chain-free":
        v.fat_set(v.find_free(last + 1), 0)
    d.entry.set_stream(dl=3 * v.csize, vdl=3 * v.csize)
    v.rewrite_set(d.entry)
else:
    sys.exit("unknown kind " + kind)
v.flush()
v.f.close()
PY
}

# refused IMG LINE ARGS...: fatprealloc ARGS exits 1 with LINE and leaves
# IMG byte-identical.
refused()
{
	local img=$1 line=$2 sha
	shift 2
	sha=$(img_sha "$img")
	run -1 --separate-stderr fatprealloc "$@"
	[ "$stderr" = "$line" ]
	[ "$(img_sha "$img")" = "$sha" ]
}

# refused_like IMG PATTERN ARGS...: as refused(), the line matched as a
# glob pattern.
refused_like()
{
	local img=$1 line=$2 sha
	shift 2
	sha=$(img_sha "$img")
	run -1 --separate-stderr fatprealloc "$@"
	[[ $stderr == $line ]]
	[ "$(img_sha "$img")" = "$sha" ]
}

@test "exFAT writer: a subdirectory whose chain is one cluster longer than its DataLength (first cluster full of sets) is refused, image unchanged; after fatcheck -r the new file is visible" {
	local cs
	for cs in 512 4096; do
		mkex img 16M "$cs"
		ref corrupt img dir-chain-too-long
		refused img "fatprealloc: img:/corrupt-dirlong: directory's cluster chain has 2 clusters, its DataLength needs 1; run 'fatcheck -r img'" \
			img /corrupt-dirlong/NEWFILE 8K
		# a deeper path and -p go through it too
		refused img "fatprealloc: img:/corrupt-dirlong: directory's cluster chain has 2 clusters, its DataLength needs 1; run 'fatcheck -r img'" \
			-p img /ok.bin 1K /corrupt-dirlong/x/y.bin 1K
		run -1 fatcheck -r img
		run -0 fatprealloc img /corrupt-dirlong/NEWFILE 8K
		run -0 ref ls img /corrupt-dirlong/NEWFILE
		assert_output --partial "size=8192"
		run -0 fatls img /corrupt-dirlong/NEWFILE
		fsck.exfat -n img
		ref verify -W img
	done
}

@test "exFAT writer: a subdirectory whose chain is one cluster shorter than its DataLength is refused, image unchanged" {
	mkex img 16M 4096
	ref corrupt img dir-chain-too-short
	refused img "fatprealloc: img:/corrupt-dirshort: directory's cluster chain has 2 clusters, its DataLength needs 3; run 'fatcheck -r img'" \
		img /corrupt-dirshort/NEWFILE 8K
	run -1 fatcheck -r img
	run -0 fatprealloc img /corrupt-dirshort/NEWFILE 8K
	fsck.exfat -n img
	ref verify -W img
}

@test "exFAT writer: a directory chain with a loop, a free, bad or out-of-range link is refused, image unchanged" {
	local kind want
	for kind in chain-loop chain-free chain-bad chain-range; do
		mkex img 8M 4096
		hostile img "$kind"
		case $kind in
		chain-loop) want="cluster chain loops: cluster * links back to *" ;;
		chain-free) want="cluster chain links to a free cluster after *" ;;
		chain-bad) want="cluster chain links to a bad cluster after *" ;;
		chain-range) want="cluster chain links to out-of-range cluster * after *" ;;
		esac
		sha=$(img_sha img)
		run -1 --separate-stderr fatprealloc img /C/new.bin 1K
		[[ $stderr == "fatprealloc: img:/C: "$want"; run 'fatcheck -r img'" ]]
		[ "$(img_sha img)" = "$sha" ]
	done
}

@test "exFAT writer: a directory whose ValidDataLength differs from its DataLength, or whose NoFatChain run ends past the heap, is refused" {
	mkex img 8M 4096
	ref corrupt img dir-vdl
	refused img "fatprealloc: img:/corrupt-dir: ValidDataLength exceeds DataLength (on a directory: differs from it); run 'fatcheck -r img'" \
		img /corrupt-dir/new.bin 1K
	mkex img 8M 4096
	hostile img nofatchain-past-heap
	refused img "fatprealloc: img:/B: contiguous directory runs past the last cluster; run 'fatcheck -r img'" \
		img /B/new.bin 1K
}

@test "exFAT writer: a directory sharing clusters with the up-case table, the bitmap, or a file to grow is refused" {
	mkex img 8M 4096
	hostile img to-upcase
	refused img "fatprealloc: img:/B: cluster 3 is held by both the up-case table and /B (cross-linked); run 'fatcheck -r img'" \
		img /B/new.bin 1K
	mkex img 8M 4096
	hostile img to-bitmap
	refused img "fatprealloc: img:/B: cluster 2 is held by both the allocation bitmap and /B (cross-linked); run 'fatcheck -r img'" \
		img /B/new.bin 1K
	mkex img 8M 4096
	hostile img file-in-dir
	refused img "fatprealloc: img:/A/in.bin: cluster 6 is held by both /A and /A/in.bin (cross-linked); run 'fatcheck -r img'" \
		img /A/in.bin 64K
}

@test "exFAT writer: two directory entries that lead to one directory (or to the root) are refused, image unchanged" {
	mkex img 8M 4096
	hostile img two-entries
	# Both parents would share one directory in memory and only the
	# first one's DataLength would follow the growth.
	refused img "fatprealloc: img:/B: directory entry leads to /A too (cross-linked directories); run 'fatcheck -r img'" \
		img /A/new.bin 1K /B/new.bin 1K
	# whichever comes first on the command line is the one named
	refused img "fatprealloc: img:/A: directory entry leads to /B too (cross-linked directories); run 'fatcheck -r img'" \
		-p img /B/x/y.bin 1K /A/z.bin 1K
	mkex img 8M 4096
	hostile img to-root
	refused img "fatprealloc: img:/B: directory entry leads to / too (cross-linked directories); run 'fatcheck -r img'" \
		img /B/new.bin 1K
}

@test "exFAT writer: a directory entry with FirstCluster 0 and a length is refused, never read as the root" {
	mkex img 8M 4096
	hostile img first-zero
	refused img "fatprealloc: img:/B: first cluster 0 with a non-zero length; run 'fatcheck -r img'" \
		img /B/new.bin 1K
}

@test "exFAT writer: a card not cleanly removed (VolumeDirty set) is refused, image unchanged; fatcheck -r makes it writable and keeps the recording; --force writes and leaves the flag" {
	local sum
	mkex img 16M 4096
	# a recording whose clusters lost their bitmap bits when the card
	# was pulled: a writer that trusted the bitmap would zero them
	ref corrupt img bitmap-missing
	ref corrupt img volume-dirty
	sum=$(ref cat img /corrupt-missing | sha256sum)
	refused img "fatprealloc: img: VolumeDirty is set: the card was not cleanly removed and its allocation bitmap may not match what the files own (--force writes anyway); run 'fatcheck -r img'" \
		img /new.bin 1M
	refused img "fatprealloc: img: VolumeDirty is set: the card was not cleanly removed and its allocation bitmap may not match what the files own (--force writes anyway); run 'fatcheck -r img'" \
		--dry-run img /new.bin 1M
	run -1 fatcheck -r img
	run -0 fatprealloc img /new.bin 1M
	[ "$(ref cat img /corrupt-missing | sha256sum)" = "$sum" ]
	fsck.exfat -n img
	ref verify -W img
	# --force: written, and the flag this run did not set stays set
	# (the ownership check still keeps the recording's clusters: see
	# the next test)
	mkex forced.img 16M 4096
	ref corrupt forced.img volume-dirty
	run -0 fatprealloc --force forced.img /new.bin 4K
	[ "$(ref info forced.img | sed -n 's/^volume_dirty=//p')" = 1 ]
}

@test "exFAT writer: a cluster a file owns but the bitmap marks free (VolumeDirty clear) is never taken: the run is refused, image unchanged" {
	local free cs=4096
	mkex img 16M "$cs"
	ref corrupt img bitmap-missing
	free=$(ref info img | sed -n 's/^free_clusters=//p')
	# every cluster the bitmap calls free, so the owned one too
	refused img "fatprealloc: img:/corrupt-missing: owns cluster 7, which the allocation bitmap marks free; run 'fatcheck -r img'" \
		img /new.bin $((free * cs))
	# one that a directory owns, found in a subdirectory the run never
	# enters
	run -1 fatcheck -r img
	run -0 ref put img /deep/er/file.bin --size 5000
	"$FK_PYTHON" - "$FATKIT_HELPERS" img <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
d, e, _ = v.resolve("/deep/er/file.bin")
for c in v.clusters_of(e.first, e.dl, e.nofatchain)[0]:
    v.set_bit(c, 0)
v.flush()
v.f.close()
PY
	free=$(ref info img | sed -n 's/^free_clusters=//p')
	run -1 --separate-stderr fatprealloc img /new.bin $((free * cs))
	[[ $stderr == "fatprealloc: img:/deep/er/file.bin: owns cluster "*", which the allocation bitmap marks free; run 'fatcheck -r img'" ]]
}

# vendor_bits IMG ON: set (ON 1) or clear (ON 0) the bitmap bits of the
# clusters every Vendor Allocation entry (E1h) of the root's sets owns;
# prints the first cluster of each, then whether each still holds the
# corruptor's "V" bytes (1) or not (0).
vendor_bits()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$1" "$2" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
data = v.root_dir().data
for i in range(0, len(data), 32):
    e = data[i:i + 32]
    if e[0] == 0xE1:
        cl, prob = v.clusters_of(r.le(e, 20, 4), r.le(e, 24, 8), e[1] & 2)
        assert not prob and cl, (cl, prob)
        if sys.argv[3] != "-":
            for c in cl:
                v.set_bit(c, int(sys.argv[3]))
        print(cl[0], int(v.read_clusters(cl) == b"V" * len(cl) * v.csize))
v.flush()
v.f.close()
PY
}

@test "exFAT writer: a Vendor Allocation whose clusters the bitmap marks free is never taken: the run is refused naming its set, image unchanged; with its bits set, a run fills the volume around it" {
	local c owner first free out
	for c in vendor-alloc-file vendor-alloc-dir; do
		owner=/corrupt-vfile
		[ "$c" = vendor-alloc-dir ] && owner=/corrupt-vdir
		mkex img 16M 4096
		ref corrupt img "$c"
		# a normal run on the intact volume: fine
		run -0 fatprealloc img /small.bin 8K
		run -0 ref verify -W img
		out=$(vendor_bits img 0)
		first=${out%% *}
		[ "$out" = "$first 1" ]
		run -4 fatcheck img
		assert_output --partial "marked free in the allocation bitmap, the first $first"
		free=$(ref info img | sed -n 's/^free_clusters=//p')
		refused img "fatprealloc: img:$owner: entry type 0xE1 of its set owns cluster $first, which the allocation bitmap marks free; run 'fatcheck -r img'" \
			img /W.BIN $((free * 4096))
		# one cluster too: whichever free cluster the run would take
		# first is never the vendor's, or the run is refused
		run fatprealloc img /W1.BIN 4K
		[ "$(vendor_bits img -)" = "$first 1" ]
		# bits set again: every free cluster to a new file, the
		# vendor's untouched
		mkex img 16M 4096
		ref corrupt img "$c"
		free=$(ref info img | sed -n 's/^free_clusters=//p')
		run -0 fatprealloc img /fill.bin $((free * 4096))
		run -0 ref verify -W img
		out=$(vendor_bits img -)
		[ "${out#* }" = 1 ]
		run -0 fatcheck img
	done
}

# odd_entry IMG TYPE DIR: one entry of TYPE (hex) in DIR (/ or a new
# directory) that points at a cluster whose bit stays clear; prints it.
odd_entry()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
t = int(sys.argv[3], 16)
d = v.root_dir() if sys.argv[4] == "/" else v.mkdir(sys.argv[4])
c = v.alloc_run(1)[0]              # its bit stays clear
v.write(v.cluster_off(c), b"V" * v.csize)
e = bytearray(32)
e[0] = t
if t & 0x40:                       # a secondary: flags at 1
    e[1] = 3
else:                              # a primary: flags at 4, no secondaries
    e[4] = 3
r.put_le(e, 20, 4, c)
r.put_le(e, 24, 8, v.csize)
if not t & 0x40:
    r.put_le(e, 2, 2, r.set_checksum(e))
d.write_entries(d.free_slot(1), bytes(e))
v.flush()
v.f.close()
print(c)
PY
}

@test "exFAT writer: a cluster the bitmap marks free that an unknown benign or critical primary or an orphan stream entry points at is never taken: the run is refused, image unchanged" {
	local t first free
	for t in A5 86 C0; do
		# in a directory off the path: the ownership walk finds it
		mkex img 16M 4096
		first=$(odd_entry img "$t" /X)
		free=$(ref info img | sed -n 's/^free_clusters=//p')
		refused img "fatprealloc: img:/X: entry type 0x$t owns cluster $first, which the allocation bitmap marks free; run 'fatcheck -r img'" \
			img /W.BIN $((free * 4096))
	done
	mkex img 16M 4096
	first=$(odd_entry img A5 /)
	free=$(ref info img | sed -n 's/^free_clusters=//p')
	refused img "fatprealloc: img:/: entry type 0xA5 owns cluster $first, which the allocation bitmap marks free; run 'fatcheck -r img'" \
		img /W.BIN $((free * 4096))
	# in the root, on the path: an unknown critical primary and an
	# orphan are damage of the directory itself, refused before any plan
	mkex img 16M 4096
	odd_entry img 86 / >/dev/null
	refused_like img "fatprealloc: img:/: damaged entry set at entry * (type 0x86): unknown critical entry; run 'fatcheck -r img'" \
		img /W.BIN 1K
	mkex img 16M 4096
	odd_entry img C0 / >/dev/null
	refused_like img "fatprealloc: img:/: damaged entry set at entry * (type 0xC0): secondary entries without a file entry; run 'fatcheck -r img'" \
		img /W.BIN 1K
}

# split_fixture IMG: 512-byte clusters, a directory /F of five small
# files, then every other free cluster taken, so that /F grows only by
# clusters apart from each other.  NAME is 255 UTF-16 units: its set is
# 19 entries, and a 512-byte cluster holds 16.
split_fixture()
{
	local nfree
	mkex "$1" 4M 512
	for i in 1 2 3 4 5; do echo "put /F/f$i --size 10"; done | ref batch "$1"
	nfree=$(ref info "$1" | sed -n 's/^free_clusters=//p')
	ref put "$1" /filler --size $((nfree / 2 * 512)) --fragmented
	NAME=$("$FK_PYTHON" -c 'print(("Ω" + "abcdefghij" * 30)[:255])')
}

# field_runs IMG PATH: the runs of PATH as the reference reader lists them.
field_runs()
{
	ref ls "$1" "$(dirname "$2")" | awk -F'\t' -v p="path=$2" '$NF == p' |
		tr '\t' '\n' | sed -n 's/^runs=//p'
}

# fsck_split IMG: fsck.exfat -n clean, except for its false positive on
# 512-byte clusters: a valid set spanning three of its read blocks (a
# 255-unit name) is reported as a wrong checksum plus unknown entry types
# 0xC0/0xC1 (exfatprogs 1.2.0; Linux writes such sets itself).  Those
# lines are not damage; anything else is.
fsck_split()
{
	local out
	out=$(fsck.exfat -n "$1" 2>&1) && return 0
	if grep '^ERROR' <<<"$out" | grep -v -e 'the checksum of a file is wrong' \
		-e 'unknown entry type 0xc[01] '; then
		echo "$out" >&2
		return 1
	fi
}

@test "exFAT writer: a 255-unit name on 512-byte clusters is placed across clusters apart on disk (spec 6.3), not refused as out of space; read back by the reference reader, fatls and fsck.exfat" {
	split_fixture img
	run -0 fatprealloc img "/F/$NAME" 1K "/F/${NAME:0:250}.two" 2K
	# /F's clusters are apart from each other
	[[ $(field_runs img /F) == *,*,*,* ]]
	ref verify -W img
	fsck_split img
	run -0 ref ls img "/F/$NAME"
	assert_output --partial "size=1024"
	run -0 ref ls img "/F/${NAME:0:250}.two"
	assert_output --partial "size=2048"
	run -0 fatls img /F
	assert_line "$NAME"
	assert_line "${NAME:0:250}.two"
	run -0 fatcheck img
}

@test "exFAT writer: a crash after any write call of a set across clusters apart leaves existing files intact, and fatcheck -r a clean volume" {
	split_fixture base.img
	cp base.img probe.img
	local rc=0
	FK_CRASH_AFTER_WRITE=1 fatprealloc probe.img /probe 1 >/dev/null 2>&1 || rc=$?
	((rc == 99)) || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	local -A was # base.img does not change: read once, not at every write
	for f in /F/f1 /F/f5 /filler; do
		was[$f]=$(ref cat base.img "$f" | sha256sum)
	done
	for ((n = 1; ; n++)); do
		((n < 100))
		cp base.img c.img
		rc=0
		FK_CRASH_AFTER_WRITE=$n fatprealloc c.img "/F/$NAME" 1K 2>/dev/null || rc=$?
		((rc == 0)) && break
		[ "$rc" -eq 99 ]
		# the files that were there read as before
		for f in /F/f1 /F/f5 /filler; do
			[ "$(ref cat c.img "$f" | sha256sum)" = "${was[$f]}" ]
		done
		run fatcheck -r c.img
		# A set the crash cut short is removed, and the clusters it
		# held are kept that run (nothing left explains them: the
		# checker frees no cluster it cannot attribute); the next -r
		# frees them, as fatcheck(1) says.
		if ((status == 4)); then
			assert_output --partial "are kept, as they may be what it held"
			run fatcheck -r c.img
		fi
		((status == 0 || status == 1))
		run -0 fatcheck c.img
		ref verify c.img
		fsck_split c.img
	done
	ref verify -W c.img
}

# identity_upcase IMG: rewrite the up-case table so that a compressed
# identity run (0xFFFF, count) covers a-z: a-z map to themselves, every
# other unit as mkfs.exfat had it; TableChecksum and DataLength follow,
# and clusters the shorter table no longer needs are freed.
identity_upcase()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$1" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
i, e = v.upcase_entry()
e = bytearray(e)
t = list(v.load_upcase())
for c in range(ord("a"), ord("z") + 1):
    t[c] = c
out, k = [], 0
while k < 65536:
    n = 0
    while k + n < 65536 and t[k + n] == k + n and n < 0xFFFF:
        n += 1
    if n >= 3:
        out += [0xFFFF, n]
        k += n
    else:
        out.append(t[k])
        k += 1
raw = b"".join(x.to_bytes(2, "little") for x in out)
clusters, _ = v.chain(r.le(e, 20, 4))
need = -(-len(raw) // v.csize)
for n, c in enumerate(clusters[:need]):
    piece = raw[n * v.csize:(n + 1) * v.csize]
    v.write(v.cluster_off(c), piece + bytes(v.csize - len(piece)))
v.fat_set(clusters[need - 1], r.EOC)
for c in clusters[need:]:
    v.fat_set(c, 0)
    v.set_bit(c, 0)
r.put_le(e, 24, 8, len(raw))
r.put_le(e, 4, 4, r.table_checksum(raw))
v.root_dir().write_entries(i, e)
v.flush()
v.f.close()
PY
}

@test "exFAT writer and checker agree on an up-case table whose compressed identity run covers a-z: both take the volume's own mapping" {
	mkex img 16M 4096
	identity_upcase img
	fsck.exfat -n img
	run -0 fatcheck img
	run -0 fatprealloc img /abc.bin 1K
	# a-z map to themselves here: another case is another name, for
	# fatprealloc as for fsck.exfat and fatcheck (hashes through the table)
	run -0 fatprealloc img /ABC.bin 2K
	run -0 fatls img
	assert_output $'abc.bin\nABC.bin'
	run -0 fatcheck img
	fsck.exfat -n img
	# a table that names 'a' one by one as itself is still refused, and
	# fatcheck reports and mends it (fatprealloc-exfat.bats)
}

@test "exFAT writer: an up-case table that cannot be read (missing, or its chain broken) is refused, image unchanged: new names would hash through ASCII alone" {
	mkex img 8M 4096
	ref corrupt img no-upcase-entry
	refused img "fatprealloc: img: the root holds no up-case table; run 'fatcheck -r img'" \
		img /new.bin 1K
	# Found by fuzz_prealloc: the table's chain ran into a cluster the
	# bitmap marks free; the writer took it for a new file's chain,
	# which then continued the table's.
	mkex img 8M 4096
	"$FK_PYTHON" - "$FATKIT_HELPERS" img <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
first = next(r.le(e, 20, 4) for _, e in v.special(r.T_UPCASE))
v.fat_set(first, 0)
v.flush()
v.f.close()
PY
	refused img "fatprealloc: img: the up-case table cannot be read (its location or cluster chain is damaged); run 'fatcheck -r img'" \
		img /new.bin 1K
}

# damaged_set IMG KIND DIR: DIR (the root, or a subdirectory) holding the
# directory Music and the 4 KiB files a.bin and b.bin (Music first; for
# past-end last), a clean directory /Clean, then Music's set damaged by
# KIND: count (SecondaryCount 0xFF, the SetChecksum recomputed over its
# three entries: the set claims the sets after it), checksum (SetChecksum
# wrong), past-end (SecondaryCount 3, recomputed: the set runs into the
# end marker).
damaged_set()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
kind, top = sys.argv[3], sys.argv[4].rstrip("/")
v.mkdir("/Clean")
names = ["Music", "a.bin", "b.bin"]
if kind == "past-end":
    names = names[1:] + names[:1]
for n in names:
    if n == "Music":
        v.mkdir(top + "/Music")
    else:
        v.put(top + "/" + n, 4096, b"d" * 4096)
d, e, _ = v.resolve(top + "/Music")
raw = bytearray(e.raw)
raw[1] = {"count": 0xFF, "checksum": 2, "past-end": 3}[kind]
csum = r.set_checksum(bytes(raw))
r.put_le(raw, 2, 2, csum ^ 0x5A5A if kind == "checksum" else csum)
d.write_entries(e.index, bytes(raw))
v.flush()
v.f.close()
PY
}

@test "exFAT writer: a directory holding a damaged entry set (SecondaryCount past the next sets or the end marker, a bad SetChecksum) is refused, written to or only gone through, image unchanged; fatcheck reports the set" {
	local kind why
	for kind in count checksum past-end; do
		case $kind in
		checksum) why="entry set checksum mismatch" ;;
		*) why="entry set is cut short (SecondaryCount says more)" ;;
		esac
		# 2 MiB, 512-byte clusters, as the differential run found it
		rm -f img
		truncate -s 2M img && mkfs.exfat -b 4K -c 512 img >/dev/null
		damaged_set img "$kind" /
		# the new set would land in the span the damaged set claims
		refused_like img "fatprealloc: img:/: damaged entry set at entry * ('Music'): $why; run 'fatcheck -r img'" \
			-p img /NEW/f.bin 64K
		refused_like img "fatprealloc: img:/: damaged entry set at entry * ('Music'): $why; run 'fatcheck -r img'" \
			img /new.bin 1K
		# the root is only gone through: refused as well (a lookup
		# there may find a name that is part of the damaged set)
		refused_like img "fatprealloc: img:/: damaged entry set at entry * ('Music'): $why; run 'fatcheck -r img'" \
			img /Clean/new.bin 1K
		run -4 fatcheck img
		assert_output --partial "error: /Music: "
		# after the repair (which keeps a removed set's cluster, so
		# its bit is reported as left) the writer writes, and every
		# reader sees the new file
		run fatcheck -r img
		run -0 fatprealloc -p img /NEW/f.bin 64K
		run -0 ref ls img /NEW/f.bin
		assert_output --partial "size=65536"
		run -0 fatls -R img
		assert_output --partial "/NEW/f.bin"
		run fatcheck img
		refute_output --partial "entry set"
		refute_output --partial "SetChecksum"
	done
}

@test "exFAT writer: a damaged entry set in a subdirectory refuses that directory and the paths through it; a clean directory next to it is written" {
	local kind why
	for kind in count checksum past-end; do
		case $kind in
		checksum) why="entry set checksum mismatch" ;;
		*) why="entry set is cut short (SecondaryCount says more)" ;;
		esac
		mkex img 4M 512
		damaged_set img "$kind" /P
		refused_like img "fatprealloc: img:/P: damaged entry set at entry * ('Music'): $why; run 'fatcheck -r img'" \
			img /P/new.bin 1K
		refused_like img "fatprealloc: img:/P: damaged entry set at entry * ('Music'): $why; run 'fatcheck -r img'" \
			-p img /P/x/y.bin 1K
		run -0 fatprealloc -p img /Clean/new.bin 8K /Q/r.bin 1K
		run -0 ref ls img /Clean/new.bin
		assert_output --partial "size=8192"
		run -0 fatls img /Clean
		assert_output "new.bin"
		run -0 fatls img /Q/r.bin
	done
}

@test "exFAT writer and checker agree on a damaged benign entry set (SecondaryCount into the next set, a bad SetChecksum): the writer refuses its directory, fatcheck reports it and -r mends it" {
	local kind want
	for kind in count checksum; do
		mkex img 4M 512
		"$FK_PYTHON" - "$FATKIT_HELPERS" img "$kind" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
v.put("/a.bin", 100, b"a" * 100)
d = v.root_dir()
e = bytearray(32)
e[0] = r.T_PADDING                 # a benign primary, no allocation
e[1] = 4 if sys.argv[3] == "count" else 0
csum = r.set_checksum(bytes(e))
r.put_le(e, 2, 2, csum ^ 0x1234 if sys.argv[3] == "checksum" else csum)
d.write_entries(d.free_slot(1), bytes(e))
v.put("/b.bin", 100, b"b" * 100)   # the set after it
v.flush()
v.f.close()
PY
		case $kind in
		count) want="entry set is cut short (SecondaryCount says more)" ;;
		checksum) want="entry set checksum mismatch" ;;
		esac
		refused_like img "fatprealloc: img:/: damaged entry set at entry * (type 0xA1): $want; run 'fatcheck -r img'" \
			img /c.bin 1K
		run -4 fatcheck img
		assert_output --partial "error: /: "
		assert_output --partial "(entry 6): "
		run -1 fatcheck -r img
		run -0 fatcheck img
		run -0 fatprealloc img /c.bin 1K
		run -0 fatls img
		assert_output $'a.bin\nb.bin\nc.bin'
		ref verify img
		fsck.exfat -n img
	done
}

@test "exFAT writer: a tree 200 directories deep is walked for owners before the first write: a new file in its deepest directory is written; a cluster its deepest file owns that the bitmap marks free is refused, the message keeping the path's end" {
	local deep free sha
	mkex img 16M 4096
	deep=$("$FK_PYTHON" -c 'print("".join("/level-%03d-of-a-deep-tree" % i for i in range(1, 201)))')
	ref put img "$deep/file.bin" --size 5000
	cp img base.img
	# The ownership walk reads all 201 directories; each level used to
	# copy every ancestor's name, which a deep tree made quadratic.
	run -0 timeout 20 fatprealloc img "$deep/new.bin" 64K
	run -0 ref verify img
	run -0 fsck.exfat -n img
	run -0 ref ls img "$deep/new.bin"
	assert_output --regexp $'^attr=----A\tsize=65536\t'
	cmp <(ref cat base.img "$deep/file.bin") <(ref cat img "$deep/file.bin")

	cp base.img img
	"$FK_PYTHON" - "$FATKIT_HELPERS" img "$deep/file.bin" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
d, e, _ = v.resolve(sys.argv[3])
for c in v.clusters_of(e.first, e.dl, e.nofatchain)[0]:
    v.set_bit(c, 0)
v.flush()
v.f.close()
PY
	free=$(ref info img | sed -n 's/^free_clusters=//p')
	sha=$(img_sha img)
	run -1 --separate-stderr timeout 20 fatprealloc img /new.bin $((free * 4096))
	[ "$(img_sha img)" = "$sha" ]
	# 5,200 bytes of path: its first levels give way, not the file's name.
	[[ $stderr == "fatprealloc: img:/.../level-1"*"-of-a-deep-tree/level-200-of-a-deep-tree/file.bin: owns cluster "*", which the allocation bitmap marks free; run 'fatcheck -r img'" ]]
	[ "${#lines[@]}" -eq 0 ]
}

# overgrown IMG KIND: /a.bin (two clusters), a neighbour right after it,
# then /c.bin; /a.bin runs on over the neighbour, whose bitmap bits are
# set (so no bitmap check sees it).  KIND: nfc-file, nfc-dir (the
# neighbour /D, holding /D/in.bin), nfc-vendor (a Vendor Allocation of
# /v.bin's set): a NoFatChain DataLength stretched over it, the old
# ValidDataLength kept; chain-file: /a.bin's FAT chain linked on into
# /b.bin's (DataLength to match).  Prints the neighbour's first cluster.
overgrown()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$1" "$2" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
kind = sys.argv[3]
cs = v.csize
chain = kind == "chain-file"
a, acl = v.put("/a.bin", 2 * cs, b"a" * 2 * cs, chain=chain)
if kind == "nfc-dir":
    d = v.mkdir("/D")
    v.put("/D/in.bin", 100, b"i" * 100)
    bcl = d.clusters
elif kind == "nfc-vendor":
    bcl = v.alloc_run(1)
    v.claim(bcl, False)
    v.write(v.cluster_off(bcl[0]), b"V" * cs)
    e = bytearray(32)
    e[0], e[1] = 0xE1, 3            # AllocationPossible, NoFatChain
    e[2:18] = bytes(range(0x10, 0x20))
    r.put_le(e, 20, 4, bcl[0])
    r.put_le(e, 24, 8, cs)
    v.add_set(v.root_dir(), v.build_set("v.bin", r.ATTR_ARCHIVE, 0, 0, 0,
                                        False, extra=bytes(e)))
else:
    b, bcl = v.put("/b.bin", 2 * cs, b"b" * 2 * cs, chain=chain)
v.put("/c.bin", cs, b"c" * cs)      # a growth of /a.bin cannot follow on
n = len(acl) + len(bcl)
if chain:
    v.fat_set(acl[-1], bcl[0])
    a.set_stream(dl=n * cs, vdl=n * cs)
else:
    assert bcl[0] == acl[-1] + 1, (acl, bcl)
    a.set_stream(dl=n * cs, vdl=len(acl) * cs)
v.rewrite_set(a)
v.flush()
v.f.close()
print(bcl[0])
PY
}

@test "exFAT writer: a file to grow whose NoFatChain run or FAT chain runs on over another file, a directory or a Vendor Allocation is refused (cross-linked), image unchanged; after fatcheck -r it grows and the neighbour keeps its data" {
	local k first owner sum
	for k in nfc-file nfc-dir nfc-vendor chain-file; do
		mkex img 16M 4096
		first=$(overgrown img "$k")
		case $k in
		nfc-dir) owner=/D: ;;
		nfc-vendor) owner="/v.bin: entry type 0xE1 of its set" ;;
		*) owner=/b.bin: ;;
		esac
		# Growing /a.bin used to zero the neighbour from the old
		# ValidDataLength on, or chain its clusters into /a.bin's.
		refused img "fatprealloc: img:$owner owns cluster $first, which /a.bin owns too (cross-linked); run 'fatcheck -r img'" \
			img /a.bin 512K
		refused img "fatprealloc: img:$owner owns cluster $first, which /a.bin owns too (cross-linked); run 'fatcheck -r img'" \
			--dry-run img /a.bin 512K
		run -1 fatcheck -r img
		case $k in
		nfc-file) sum=$(ref cat img /b.bin | sha256sum) ;;
		nfc-dir) sum=$(ref cat img /D/in.bin | sha256sum) ;;
		esac
		run -0 fatprealloc img /a.bin 512K
		run -0 ref verify -W img
		case $k in
		nfc-file) [ "$(ref cat img /b.bin | sha256sum)" = "$sum" ] ;;
		nfc-dir) [ "$(ref cat img /D/in.bin | sha256sum)" = "$sum" ] ;;
		esac
		# fsck.exfat 1.2.0 cannot read a set with a Vendor Allocation
		# ("failed to get name dentry"): the reference reader judges it.
		[ "$k" = nfc-vendor ] || run -0 fsck.exfat -n img
	done
}

@test "exFAT writer: a directory on the path whose clusters a file elsewhere also runs over is refused (cross-linked), image unchanged" {
	local first
	mkex img 16M 4096
	first=$(overgrown img nfc-dir)
	# /a.bin is not written; /D is, and /a.bin would read its new entry
	refused img "fatprealloc: img:/a.bin: owns cluster $first, which /D owns too (cross-linked); run 'fatcheck -r img'" \
		img /D/new.bin 1K
}
