#!/usr/bin/env bats
# fatcheck-edges.bats: checker findings the main fatcheck.bats does not
# reach (found with `make coverage`): entries that claim no cluster, a "."
# in the root, FAT[1]'s hard-error and reserved bits, an unset FSInfo free
# count, a label the boot sector and the root disagree on, and several
# duplicates or cross-links in one run. Each is damaged by hand (dd, fatpoke.py, corrupt.py), named by
# its exact line, repaired by one -r, and judged by fsck.fat -n and mtools.

load helpers/common

# slot_of IMG NAME11: byte offset of the short slot NAME11 in IMG.
slot_of()
{
	"$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot "$1" "$2"
}

# poke IMG OFF HEXBYTES: write bytes (as "\x00\x01") at OFF.
poke()
{
	printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# repaired IMG: one fatcheck -r fixes every error (exit 1), a second check
# finds nothing, and fsck.fat -n agrees.
repaired()
{
	run -1 --separate-stderr fatcheck -r "$1"
	run -0 --separate-stderr fatcheck "$1"
	fsck_clean "$1"
}

@test "fatcheck: a file with a size but no first cluster is an error; -r sets its size to 0" {
	mkimg fat16 16M img
	populate img
	off=$(slot_of img 'README  TXT')
	poke img $((off + 26)) '\x00\x00'
	run -4 --separate-stderr fatcheck img
	assert_line 'error: /README.TXT: file size is 19 bytes but it has no clusters'
	assert_line --regexp '^error: img: 1 lost cluster \(512 bytes, owned by no file\)'
	repaired img
	run -0 mdir -b -i img ::README.TXT
	[ "$(mdir -i img ::README.TXT | awk '/^README/ {print $3}')" = 0 ]
}

@test "fatcheck: a directory entry with first cluster 0 is an error; -r removes it" {
	mkimg fat16 16M img
	populate img
	off=$(slot_of img 'EMPTYDIR   ')
	poke img $((off + 26)) '\x00\x00'
	run -4 --separate-stderr fatcheck img
	assert_line 'error: /EMPTYDIR: directory entry has first cluster 0, which means the root'
	repaired img
	run -1 mdir -i img ::EMPTYDIR
	run -0 mdir -i img ::deep1
}

@test "fatcheck: a '.' entry in the root is an error; -r removes it" {
	mkimg fat16 16M img
	populate img
	off=$(slot_of img 'README  TXT')
	# Rename README.TXT to "." and make it a directory: the root's own
	# "." that FAT12/16 roots never have.
	poke img "$off" '.          \x10'
	run -4 --separate-stderr fatcheck img
	assert_line "error: /: the root directory holds a '.' entry"
	repaired img
	run -0 mdir -b -i img ::
	refute_output --partial 'README'
}

@test "fatcheck: FAT[1] with its hard-error bit or a reserved bit clear is a warning; -r restores it" {
	mkimg fat16 16M img
	"$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" set img 1 0xbfff
	run -0 --separate-stderr fatcheck img
	assert_line 'warning: img: FAT[1] records a disk I/O error (its hard-error bit is clear)'
	run -1 --separate-stderr fatcheck -r img # it wrote
	[ "$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" get img 1)" = 65535 ]
	"$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" set img 1 0xfff0
	run -0 --separate-stderr fatcheck img
	assert_line 'warning: img: FAT[1] is 0xFFF0, not an end-of-chain mark'
	run -1 --separate-stderr fatcheck -r img # it wrote
	[ "$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" get img 1)" = 65535 ]
	fsck_clean img
}

@test "fatcheck: an unset FSInfo free count is a note; -r sets it from the FAT" {
	mkimg fat32 40M img
	populate img
	sec=$(fat_geometry img | sed -n 's/^fsinfo_sec=//p')
	poke img $((sec * 512 + 488)) '\xff\xff\xff\xff'
	[ "$(fsinfo_free img)" = 4294967295 ]
	run -0 --separate-stderr fatcheck img
	assert_line --regexp "^note: img: FSInfo free count is not set; the FAT has $(count_free_clusters img) free clusters$"
	run -1 --separate-stderr fatcheck -r img # it wrote
	[ "$(fsinfo_free img)" = "$(count_free_clusters img)" ]
	fsck_clean img
}

@test "fatcheck: a boot sector label unlike the root's is an error; -r copies the root's" {
	mkimg fat16 16M img
	mlabel -i img ::ROOTLABEL
	poke img 43 'BOOTLABEL  '
	run -4 --separate-stderr fatcheck img
	assert_line "error: img: the boot sector's label is 'BOOTLABEL' but the root directory's is 'ROOTLABEL' (byte 0: 0x42, not 0x52)"
	repaired img
	[ "$(dd if=img bs=1 skip=43 count=11 status=none)" = 'ROOTLABEL  ' ]
	run -0 mlabel -s -i img ::
	assert_output --partial 'ROOTLABEL'
}

@test "fatcheck: a NUL in the boot sector label's padding is a difference from the root's, as fsck.fat says; -r copies the root's" {
	# Differential: fsck.fat compares the 11 bytes ("... and different"),
	# fatcheck compared the names with their padding cut.
	local t off
	for t in 16 32; do
		mkimg fat$t 40M img
		mlabel -i img ::CARD
		off=$(( t == 32 ? 71 : 43 ))
		poke img $((off + 6)) '\x00'
		run ! fsck.fat -n img
		run -4 --separate-stderr fatcheck img
		assert_line "error: img: the boot sector's label is 'CARD  ?' but the root directory's is 'CARD' (byte 6: 0x00, not 0x20)"
		repaired img
		[ "$(dd if=img bs=1 skip=$off count=11 status=none)" = 'CARD       ' ]
	done
}

@test "fatcheck: two duplicate names and two cross-links in one run: each reported, -r settles the links" {
	mkimg fat16 16M img
	populate img
	"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img dup /DATA/rand-0.bin /DATA/rand-1.bin
	"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img dup /DATA/rand-511.bin /DATA/rand-512.bin
	run -4 --separate-stderr fatcheck img
	[ "$(grep -c '^error: /DATA/.*has the same name' <<<"$output")" -eq 2 ]
	mkimg fat16 16M img2
	populate img2
	"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img2 cross /DATA/rand-100000.bin /DATA/rand-4096.bin
	"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img2 cross /DATA/rand-513.bin /README.TXT
	run -4 --separate-stderr fatcheck img2
	assert_line --regexp '^error: /DATA/rand-4096.bin: shares cluster [0-9]+ with /DATA/rand-100000.bin \(cross-linked\)$'
	assert_line --regexp '^error: /README.TXT: shares cluster [0-9]+ with /DATA/rand-513.bin \(cross-linked\)$'
	repaired img2
	# The first owner of each shared cluster keeps its data.
	grep -v 'README.TXT\|rand-4096' img2.sums >keep.sums
	mv keep.sums img2.sums
	check_sums img2
}

@test "fatcheck: a cross-link past the 4,096th claim names its first owner, as fsck.fat does" {
	# The claim log keeps runs in blocks of 4,096: the owner and its
	# directory here are both past the first block.  7,500 files are
	# written straight into the FAT and directories by the benchmark's
	# filler (mcopy would take minutes).
	mkfs.fat -C -F 32 --invariant -S 512 -s 1 img $((96 * 1024)) >/dev/null
	"$FK_PYTHON" "$BATS_TEST_DIRNAME/../bench/fragfill.py" img 3 2500 60 1
	run -0 --separate-stderr fatcheck img
	owner='/Frag 002/Piece 01000.bin' later='/Frag 002/Piece 01100.bin'
	"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img cross "$owner" "$later"
	run -1 fsck.fat -n img
	assert_output --partial "$owner  and"$'\n'"$later"$'\n'"  share clusters."
	run -4 --separate-stderr fatcheck img
	assert_line --regexp "^error: $later: shares cluster [0-9]+ with $owner \\(cross-linked\\)\$"
	repaired img
}

@test "fatcheck: '.' and '..' swapped in a subdirectory are errors fsck.fat sees too" {
	mkimg fat16 16M img
	mmd -i img ::SUB
	off=$(slot_of img '.          ')
	dd if=img bs=32 skip=$((off / 32)) count=1 status=none >dot
	dd if=img bs=32 skip=$((off / 32 + 1)) count=1 status=none >dotdot
	cat dotdot dot | dd of=img bs=32 seek=$((off / 32)) conv=notrunc status=none
	before=$(img_sha img)
	run -4 --separate-stderr fatcheck img
	assert_line "error: /SUB: '..' entry in slot 0"
	assert_line "error: /SUB: '.' entry in slot 1"
	[ "$(img_sha img)" = "$before" ]
	run fsck.fat -n img
	((status != 0))
}

# first_free IMG: the lowest free cluster of the first FAT (fatimg.py).
first_free()
{
	"$FK_PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import fatimg
v = fatimg.Volume(sys.argv[2])
e = list(v.entries(v.fat(0)))
print(e.index(0) + 2 if 0 in e else "none")' "$FATKIT_HELPERS" "$1"
}

@test "fatcheck -r: a bad next-free hint is set to the lowest free cluster, one freed by the repair included" {
	mkimg fat32 40M img
	populate img
	# Lose the three lowest free clusters, then break the hint.
	c=$(first_free img)
	"$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" set img "$c" $((c + 1))
	"$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" set img $((c + 1)) $((c + 2))
	"$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" set img $((c + 2)) 0x0fffffff
	"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img fsinfo-next
	[ "$(first_free img)" -gt "$c" ]
	repaired img
	[ "$(fsinfo_next img)" = "$c" ]
	[ "$(first_free img)" = "$c" ]
	[ "$(fsinfo_free img)" = "$(count_free_clusters img)" ]
	check_sums img
}

@test "fatcheck -r: on a full volume a bad next-free hint becomes 'unknown'" {
	mkimg fat32 40M img
	n=$(count_free_clusters img)
	eval "$(fat_geometry img | grep -E '^(bytes_per_sec|sec_per_clus)=')"
	fatprealloc --no-zero img /fill.bin $((n * bytes_per_sec * sec_per_clus))
	[ "$(count_free_clusters img)" = 0 ]
	"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img fsinfo-next
	run -1 --separate-stderr fatcheck -r img # it wrote
	assert_line --regexp '^warning: img: FSInfo next-free hint [0-9]+ is not a cluster of the volume .* \(repair: FSInfo next-free hint set\)$'
	[ "$(fsinfo_next img)" = 4294967295 ]
	[ "$(fsinfo_free img)" = 0 ]
	fsck_clean img
}
