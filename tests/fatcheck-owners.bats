#!/usr/bin/env bats
# fatcheck-owners.bats: findings name what the user has. Orphaned long-name
# slots give the name they spell (as fsck.fat does), bitmap findings on
# exFAT name the files that own the clusters (as fsck.exfat does), a
# cross-link names both files, and a repair that frees lost chains says
# that --salvage would have kept them. Judges: fsck.fat -n and fsck.exfat -n
# name the same files; the JSON carries the paths.

bats_require_minimum_version 1.5.0

load helpers/common

CORRUPT=$FATKIT_HELPERS/corrupt.py
LONG="/A long file name for testing.txt"

setup_file()
{
	cd "$BATS_FILE_TMPDIR" || return 1
	mkimg fat16 16M base16.img && populate base16.img || return 1
	rm -f base.exfat
	truncate -s 32M base.exfat && mkfs.exfat -c 4096 -L card base.exfat >/dev/null &&
		{
			echo "put /a.bin --size 9000 --fragmented"
			echo "put /DCIM/100/CLIP1.MP4 --size 20000"
			echo "put /DCIM/100/CLIP2.MP4 --size 5000 --nofatchain"
			echo "put /notes.txt --size 300"
		} | ref batch base.exfat
}

setup()
{
	cd "$BATS_TEST_TMPDIR" || return 1
}

# fsck_exfat_ok IMG: fsck.exfat -n finds nothing wrong.
fsck_exfat_ok()
{
	local out
	if ! out=$(timeout 20 fsck.exfat -n "$1" 2>&1); then
		echo "fsck.exfat -n $1 is not clean:" >&2
		echo "$out" | head -20 >&2
		return 1
	fi
}

# orphan_slots IMG TEXT...: in IMG's (FAT16) root, from its first free slot,
# one long-name slot per TEXT, each the last and only piece of a name
# (Python escapes such as \x1b give any unit), then a deleted slot, so the
# run is orphaned. Prints the first slot's number.
orphan_slots()
{
	"$FK_PYTHON" - "$@" <<'PY'
import struct, sys
img, texts = sys.argv[1], sys.argv[2:]
with open(img, "r+b") as f:
    b = f.read(512)
    bps, rsvd, nfats, nroot = struct.unpack_from("<HxHBH", b, 11)
    fat_secs = struct.unpack_from("<H", b, 22)[0]
    root = (rsvd + nfats * fat_secs) * bps
    f.seek(root)
    slots = f.read(nroot * 32)
    first = next(i for i in range(nroot) if slots[32 * i] == 0)
    for k, text in enumerate(texts):
        units = list(text.encode("utf-8").decode("unicode_escape").encode("utf-16-le"))
        units = units[:26] + [0, 0] + [0xFF] * 26
        e = bytearray(32)
        e[0] = 0x41
        e[1:11] = bytes(units[0:10])
        e[11], e[12], e[13] = 0x0F, 0, 0x55
        e[14:26] = bytes(units[10:22])
        e[28:32] = bytes(units[22:26])
        f.seek(root + 32 * (first + k))
        f.write(e)
    f.seek(root + 32 * (first + len(texts)))
    f.write(b"\xe5")
print(first)
PY
}

@test "fatcheck: orphaned long-name slots give the long name they spell, the one fsck.fat names" {
	local c name
	for c in orphan-lfn "lfn-sum"; do
		cp "$BATS_FILE_TMPDIR/base16.img" img
		"$FK_PYTHON" "$CORRUPT" img "$c" "$LONG" >/dev/null
		# fsck.fat -n names the long name, and fatcheck the same one.
		name=$(fsck.fat -n img 2>&1 | sed -n 's/.*long file name\( part\)\? "\(.*\)".*/\2/p' | head -1)
		[ "$name" = "${LONG#/}" ]
		run -4 fatcheck img
		assert_line --regexp "^error: /: long-name slots 0-2 belong to no entry \(.*\): the long name '$name'\$"
	done
	# A sequence out of order is part of a name.
	cp "$BATS_FILE_TMPDIR/base16.img" img
	"$FK_PYTHON" "$CORRUPT" img lfn-seq "$LONG" >/dev/null
	run -4 fatcheck img
	assert_line "error: /: long-name slots 0-2 belong to no entry (out of sequence): part of a long name, 'A long file name for testing.txt'"
}

@test "fatcheck: a garbled orphaned long name prints escaped: control, bidi and backslash as \\x and \\u escapes" {
	local first
	cp "$BATS_FILE_TMPDIR/base16.img" img
	first=$(orphan_slots img 'a\x1b[2Jb\\c\u202ed\x7f')
	run -4 --separate-stderr fatcheck img
	assert_line "error: /: long-name slot $first belongs to no entry (a free slot follows): the long name 'a\\x1b[2Jb\\x5cc\\u202ed\\x7f'"
	# Nothing raw reaches the terminal.
	[[ $output != *$'\x1b'* && $output != *$'\u202e'* && $output != *$'\x7f'* ]]
	run -1 fatcheck -r img
	run -0 fatcheck img
	fsck_clean img
}

@test "fatcheck: a run of several orphaned names gives the first three and how many more" {
	local first
	cp "$BATS_FILE_TMPDIR/base16.img" img
	first=$(orphan_slots img one two three four five)
	run -4 fatcheck img
	# Each name is the last piece of one: the next starts another name.
	assert_line "error: /: long-name slots $first-$((first + 3)) belong to no entry (another long name starts after): the long names 'one', 'two', 'three' and 1 more"
	assert_line "error: /: long-name slot $((first + 4)) belongs to no entry (a free slot follows): the long name 'five'"
}

@test "fatcheck exFAT: clusters the bitmap marks free name their owner, the one fsck.exfat names" {
	local name
	cp "$BATS_FILE_TMPDIR/base.exfat" img
	ref corrupt img bitmap-missing
	name=$(fsck.exfat -n img 2>&1 | sed -n 's/^ERROR: \(.*\): cluster 0x[0-9a-f]* is marked as free.*/\1/p')
	[ "$name" = /corrupt-missing ]
	run -4 --separate-stderr fatcheck img
	assert_line --regexp "^error: img: 1 cluster in use is marked free in the allocation bitmap, the first [0-9]+; owned by $name \(1 cluster\)\$"
	run -4 --separate-stderr fatcheck --json img
	"$FK_PYTHON" -c '
import json, sys
f = [x for x in json.load(sys.stdin)["findings"] if x["code"] == "bitmap-free"]
assert len(f) == 1 and f[0]["paths"] == [sys.argv[1]], f
' "$name" <<<"$output"
	run -1 fatcheck -r img
	run -0 fatcheck img
}

@test "fatcheck exFAT: a bitmap marking everything free names the first three owners and how many more, on one line" {
	cp "$BATS_FILE_TMPDIR/base.exfat" img
	"$FK_PYTHON" - "$FATKIT_HELPERS" img <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
v.load_bitmap()
for c in range(2, v.nclus + 2):
    v.set_bit(c, 0)
v.flush()
PY
	run -4 --separate-stderr fatcheck img
	# In cluster order: mkfs.exfat puts the bitmap, the up-case table and
	# the root first; then the directories and files as written.
	assert_line --regexp "^error: img: [0-9]+ clusters in use are marked free in the allocation bitmap, the first 2; owned by the allocation bitmap \(1 cluster\), the up-case table \([0-9]+ clusters\), / \(1 cluster\) and 6 more\$"
	run -4 --separate-stderr fatcheck --json img
	"$FK_PYTHON" -c '
import json, sys
f = [x for x in json.load(sys.stdin)["findings"] if x["code"] == "bitmap-free"]
assert len(f) == 1 and f[0]["paths"] == ["/"], f
' <<<"$output"
	run -1 fatcheck -r img
	run -0 fatcheck img
	fsck_exfat_ok img
}

@test "fatcheck exFAT: a file whose clusters the bitmap marks free in a subdirectory is named by its whole path" {
	cp "$BATS_FILE_TMPDIR/base.exfat" img
	"$FK_PYTHON" - "$FATKIT_HELPERS" img <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
v.load_bitmap()
for path in ("/DCIM/100/CLIP1.MP4", "/DCIM/100/CLIP2.MP4"):
    e = v.resolve(path)[1]
    for c in v.clusters_of(e.first, e.dl, e.flags & 2)[0]:
        v.set_bit(c, 0)
v.flush()
PY
	run -4 --separate-stderr fatcheck img
	assert_line --regexp "^error: img: 7 clusters in use are marked free in the allocation bitmap, the first [0-9]+; owned by /DCIM/100/CLIP1.MP4 \(5 clusters\), /DCIM/100/CLIP2.MP4 \(2 clusters\)\$"
	fsck.exfat -n img 2>&1 | grep -q '^ERROR: /DCIM/100/CLIP1.MP4: '
}

@test "fatcheck exFAT: an allocation of a benign primary entry in a subdirectory is named by its directory" {
	cp "$BATS_FILE_TMPDIR/base.exfat" img
	# A benign primary (0xA5: a reader may skip it) with one cluster of
	# its own, NoFatChain, in /DCIM/100, on a cluster the bitmap leaves
	# free: its owner has no name but its directory's.
	"$FK_PYTHON" - "$FATKIT_HELPERS" img <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
d = v.open_dir(v.resolve("/DCIM/100")[1])
clus = v.find_free(2)
e = bytearray(32)
e[0] = 0xA5
e[4] = 0x03  # AllocationPossible, NoFatChain
r.put_le(e, 20, 4, clus)
r.put_le(e, 24, 8, v.csize)
r.put_le(e, 2, 2, r.set_checksum(bytes(e)))
d.write_entries(d.free_slot(1), bytes(e))
v.flush()
PY
	run -4 --separate-stderr fatcheck img
	assert_line --regexp "^error: img: 1 cluster in use is marked free in the allocation bitmap, the first [0-9]+; owned by an allocation of an entry in /DCIM/100 \(1 cluster\)\$"
	run -1 fatcheck -r img
	run -0 fatcheck img
	fsck_exfat_ok img
}

@test "fatcheck exFAT: a cross-link names both files, as fsck.exfat names the later" {
	cp "$BATS_FILE_TMPDIR/base.exfat" img
	ref corrupt img cross-link
	fsck.exfat -n img 2>&1 | grep -q '^ERROR: /corrupt-xb: cluster is already allocated'
	run -4 --separate-stderr fatcheck img
	assert_line --regexp "^error: /corrupt-xb: shares cluster [0-9]+ with another file or directory: /corrupt-xa\$"
	run -4 --separate-stderr fatcheck --json img
	"$FK_PYTHON" -c '
import json, sys
f = [x for x in json.load(sys.stdin)["findings"] if x["code"] == "cross-link"]
assert len(f) == 1 and f[0]["paths"] == ["/corrupt-xa", "/corrupt-xb"], f
' <<<"$output"
}

@test "fatcheck exFAT: cross-links in several directories each name their first owner, read back from its directory" {
	truncate -s 32M img && mkfs.exfat -c 4096 img >/dev/null
	{
		echo "put '/First Directory With A Long Name/first owner of one.bin' --size 9000"
		echo "put '/second/deeper/first owner of two.bin' --size 5000 --nofatchain"
		echo "put '/third/later one.bin' --size 4000"
		echo "put '/later two.bin' --size 4000 --nofatchain"
	} | ref batch img
	# Each later file starts at its first owner's first cluster.
	"$FK_PYTHON" - "$FATKIT_HELPERS" img <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
for first, later in (
        ("/First Directory With A Long Name/first owner of one.bin",
         "/third/later one.bin"),
        ("/second/deeper/first owner of two.bin", "/later two.bin")):
    e = v.resolve(later)[1]
    e.set_stream(first=v.resolve(first)[1].first)
    v.rewrite_set(e)
v.flush()
PY
	fsck.exfat -n img 2>&1 | grep -q '^ERROR: /third/later one.bin: cluster is already allocated'
	run -4 --separate-stderr fatcheck img
	assert_line --regexp "^error: /third/later one.bin: shares cluster [0-9]+ with another file or directory: /First Directory With A Long Name/first owner of one.bin\$"
	assert_line --regexp "^error: /later two.bin: shares cluster [0-9]+ with another file or directory: /second/deeper/first owner of two.bin\$"
	run -1 fatcheck -r img
	run -0 fatcheck img
	fsck_exfat_ok img
}

@test "fatcheck: a FAT cross-link's JSON names both files" {
	cp "$BATS_FILE_TMPDIR/base16.img" img
	"$FK_PYTHON" "$CORRUPT" img cross /DATA/rand-100000.bin /README.TXT >/dev/null
	run -4 --separate-stderr fatcheck img
	assert_line --regexp "^error: /README.TXT: shares cluster [0-9]+ with /DATA/rand-100000.bin \(cross-linked\)\$"
	run -4 --separate-stderr fatcheck --json img
	"$FK_PYTHON" -c '
import json, sys
f = [x for x in json.load(sys.stdin)["findings"] if x["code"] == "cross-link"]
assert len(f) == 1 and f[0]["paths"] == ["/DATA/rand-100000.bin", "/README.TXT"], f
' <<<"$output"
}

@test "fatcheck -r: freeing lost chains says that --salvage would have kept them; with --salvage, or nothing lost, it does not" {
	cp "$BATS_FILE_TMPDIR/base16.img" img
	"$FK_PYTHON" "$CORRUPT" img lost >/dev/null
	cp img lost.img
	run -1 fatcheck -r img
	[[ ${lines[-1]} == "img: FAT16, "*"; 1 fix applied; 1 lost chain was freed (--salvage would have kept it as a file)" ]]
	fsck_clean img
	cp lost.img img
	run -1 fatcheck -r --salvage img
	[[ ${lines[-1]} == *"; 1 fix applied" ]]
	cp "$BATS_FILE_TMPDIR/base16.img" img
	"$FK_PYTHON" "$CORRUPT" img boot-dirty >/dev/null
	run -1 fatcheck -r img
	[[ ${lines[-1]} != *salvage* ]]
	# Two chains: counted.
	cp "$BATS_FILE_TMPDIR/base16.img" img
	"$FK_PYTHON" "$CORRUPT" img orphan-lfn "$LONG" >/dev/null
	"$FK_PYTHON" "$CORRUPT" img lost >/dev/null
	run -1 fatcheck -r img
	[[ ${lines[-1]} == *"; 2 lost chains were freed (--salvage would have kept them as files)" ]]
}
