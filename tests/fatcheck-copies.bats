#!/usr/bin/env bats
# fatcheck-copies.bats: which FAT copy a repair keeps where the copies
# differ.  A sector of one copy is zeroed under a file's chain (the other
# copy intact); the copy the directory tree agrees with must be kept, per
# run of sectors, and --fat-copy N must force a copy.  Judges: mcopy (the
# file's bytes), fsck.fat -n, the images' FAT copies compared byte for
# byte, sha256sum for "wrote nothing".

load helpers/common

CORRUPT=$FATKIT_HELPERS/corrupt.py
FILE=/DCIM/A.JPG

# Small images whose files' chains reach past FAT sector 0 (512-byte
# clusters: 586 of them for each of the two large files).
setup_file()
{
	cd "$BATS_FILE_TMPDIR" || return 1
	gen_bytes 300000 a.jpg >a.jpg && gen_bytes 300000 c.mov >c.mov &&
		printf 'a note\n' >b.txt || return 1
	local t
	for t in 12 16 32; do
		mkimg_dcim $t "base$t.img" b.txt ::/DCIM/B.TXT a.jpg "::$FILE" \
			c.mov ::/DCIM/C.MOV b.txt ::/NOTES.TXT || return 1
	done
}

use()
{
	cp "$BATS_FILE_TMPDIR/base$1.img" img
}

# zero COPY: copy COPY (1 or 2) of the FAT sector under the file's chain
# becomes zeros.
zero()
{
	"$FK_PYTHON" "$CORRUPT" img fat-sector-zero $(($1 - 1)) "$FILE" >/dev/null
}

# The file reads back as it was written.
file_intact()
{
	mcopy -n -i img "::$FILE" got.jpg &&
		cmp got.jpg "$BATS_FILE_TMPDIR/a.jpg" &&
		mcopy -n -i img ::/DCIM/C.MOV got.mov &&
		cmp got.mov "$BATS_FILE_TMPDIR/c.mov" &&
		[ "$(mtype -i img ::/NOTES.TXT)" = "a note" ]
}

# fault TYPE: what a zeroed sector does to the file, as the note says it.
# On FAT12 the chain first meets the entry split across the sector's
# start, half zeroed: a link back into the file.
fault()
{
	if [ "$1" = 12 ]; then
		echo "links $FILE into clusters in use"
	else
		echo "marks a cluster of $FILE free"
	fi
}

# The sector the fat-copies error names, from fatcheck's $output.
differing_sector()
{
	local re='differs from copy 1 in 1 sector, the first at sector ([0-9]+) of the copy'
	[[ $output =~ $re ]] || return 1
	echo "${BASH_REMATCH[1]}"
}

# After a repair: fsck.fat -n clean, the copies equal, a second -r clean
# and writing nothing.
settled()
{
	local sum
	fsck_clean img
	fat_copies_equal img
	sum=$(img_sha img)
	run -0 fatcheck -r img
	[ "$(img_sha img)" = "$sum" ]
}

@test "fatcheck -r: copy 1 zeroed under a file, copy 2 intact: copy 2 is kept and the file stays whole (FAT12/16/32)" {
	local t s
	for t in 12 16 32; do
		use $t
		zero 1
		run -4 fatcheck img
		s=$(differing_sector)
		assert_line --regexp "^note: img: FAT copy 2 kept for sectors $s-$s: copy 1 $(fault $t)\$"
		refute_output --partial "$FILE:"  # the file itself is sound
		run -1 fatcheck -r img
		assert_line "error: img: FAT copy 2 differs from copy 1 in 1 sector, the first at sector $s of the copy (repair: copy 1 rewritten from copy 2)"
		file_intact
		settled
	done
}

@test "fatcheck -r: copy 2 zeroed under a file: copy 1 is kept, as before (FAT12/16/32)" {
	local t s
	for t in 12 16 32; do
		use $t
		zero 2
		run -1 fatcheck -r img
		s=$(differing_sector)
		assert_line --regexp "^note: img: FAT copy 1 kept for sectors $s-$s: copy 2 $(fault $t)\$"
		assert_output --partial "(repair: copy 2 rewritten from copy 1)"
		file_intact
		settled
	done
}

@test "fatcheck -r: each copy zeroed under another file: each run keeps the copy that is whole there (FAT12/16/32)" {
	local t
	for t in 12 16 32; do
		use $t
		damage both
		run -4 fatcheck img
		assert_line --regexp "^note: img: FAT copy 2 kept for sectors ([0-9]+)-\1: copy 1 $(fault $t)\$"
		assert_line --regexp "^note: img: FAT copy 1 kept for sectors ([0-9]+)-\1: copy 2 marks a cluster of /DCIM/C.MOV free\$"
		refute_output --partial "error: /DCIM"
		run -1 fatcheck -r img
		assert_line --regexp "^error: img: FAT copy 2 differs from copy 1 in 2 sectors, .* \(repair: copy 1 rewritten from copy 2 in 1 sector, copy 2 from copy 1 in 1\)\$"
		file_intact
		settled
	done
}

@test "fatcheck -r: each copy damaged in one sector, in another entry: a link into free space counts against its copy, and no file is lost (FAT12/16/32)" {
	# Differential (fat32 base, two flips): copy 1 broke the end mark of
	# a directory, copy 2 linked a file's first cluster into free space.
	# The fault of copy 2 was blamed on the free cluster's entry, outside
	# the differing sector: copy 2 was kept and the file cut to a cluster.
	local t
	for t in 12 16 32; do
		use $t
		"$FK_PYTHON" "$CORRUPT" img fat-copies-both /DCIM "$FILE" >/dev/null
		run -1 fatcheck -r img
		assert_line "note: img: FAT copy 1 kept for sectors 0-0: neither copy agrees better with the directory tree there, so the one read"
		assert_line --regexp "^error: /DCIM: directory cluster [0-9]+ links to [0-9]+, past the last cluster [0-9]+ \(repair: chain ended at cluster [0-9]+\)\$"
		refute_output --partial "$FILE"
		refute_output --partial "lost"
		file_intact
		settled
	done
}

@test "fatcheck: copies that differ where no file's chain runs: copy 1 kept, and the note says neither is better" {
	use 16
	# A lost cluster's entry in copy 2 only: no chain of the tree reads it.
	"$FK_PYTHON" - <<-'EOF'
		import struct
		f = open("img", "r+b")
		bs = f.read(512)
		rsvd, fatsz = struct.unpack_from("<H", bs, 14)[0], struct.unpack_from("<H", bs, 22)[0]
		f.seek((rsvd + fatsz) * 512 + 2 * 4000)
		f.write(struct.pack("<H", 0xFFFF))
	EOF
	run -4 fatcheck img
	assert_line "note: img: FAT copy 1 kept for sectors 15-15: neither copy agrees better with the directory tree there, so the one read"
	run -1 fatcheck -r img
	fsck_clean img
	fat_copies_equal img
	file_intact
	run -0 fatcheck img
}

@test "fatcheck -r --fat-copy 1: copy 1 forced, as fatcheck did before: the file is cut to the shortened chain" {
	local t
	for t in 12 16 32; do
		use $t
		zero 1
		run -1 fatcheck -r --fat-copy 1 img
		assert_line "note: img: FAT copy 1 kept where the copies differ (--fat-copy 1)"
		assert_output --partial "(repair: copy 2 rewritten from copy 1)"
		assert_output --regexp "error: $FILE: file size is 300000 bytes but its chain holds [0-9]+ clusters"
		run ! file_intact
		fsck_clean img
		fat_copies_equal img
	done
}

@test "fatcheck -r --fat-copy 2: copy 2 forced keeps the intact copy; --fat-copy 2 without -r only reports" {
	local sum
	use 16
	zero 1
	sum=$(img_sha img)
	run -4 fatcheck --fat-copy 2 img
	assert_line "note: img: FAT copy 2 kept where the copies differ (--fat-copy 2)"
	[ "$(img_sha img)" = "$sum" ]
	run -1 fatcheck -r --fat-copy 2 img
	file_intact
	settled
}

@test "fatcheck --fat-copy: a copy the volume lacks, no number, or exFAT is a usage error (exit 16, image unchanged)" {
	local sum
	use 16
	zero 1
	sum=$(img_sha img)
	run -16 --separate-stderr fatcheck -r --fat-copy 3 img
	[ "$stderr" = "fatcheck: img: --fat-copy 3: the volume has 2 FAT copies (give 1 or 2)" ]
	[ -z "$output" ]
	run -16 --separate-stderr fatcheck -r --fat-copy two img
	[ "$stderr" = "fatcheck: invalid --fat-copy 'two' (a FAT copy number: 1 or 2) (try 'fatcheck --help')" ]
	run -16 --separate-stderr fatcheck -r --fat-copy 0 img
	run -16 --separate-stderr fatcheck -r --fat-copy=-1 img
	[ "$(img_sha img)" = "$sum" ]
	# One FAT copy: only 1 may be named.
	mkimg fat16 4M one.img -s 1 -f 1
	run -16 --separate-stderr fatcheck --fat-copy 2 one.img
	[ "$stderr" = "fatcheck: one.img: --fat-copy 2: the volume has 1 FAT copy (give 1 or leave it out)" ]
	run -0 fatcheck --fat-copy 1 one.img
	# exFAT keeps its FAT copies apart (TexFAT): nothing to choose.
	truncate -s 8M ex.img && mkfs.exfat ex.img >/dev/null
	sum=$(img_sha ex.img)
	run -16 --separate-stderr fatcheck -r --fat-copy 1 ex.img
	[ "$stderr" = "fatcheck: ex.img: --fat-copy works on FAT12/16/32 only: leave it out on exFAT" ]
	[ "$(img_sha ex.img)" = "$sum" ]
}

# damage one|both: copy 1 zeroed under the file; with "both" also copy 2
# under the other file, so that the repair writes each copy.
damage()
{
	[ "$1" = one ] ||
		"$FK_PYTHON" "$CORRUPT" img fat-sector-zero 1 /DCIM/C.MOV last >/dev/null
	zero 1
}

@test "fatcheck -r: a crash after any write of the copy repair, then another -r, keeps the files whole" {
	local t n crashed set
	for t in 12 16 32; do
		for set in one both; do
			# both copies written: one FAT type is enough
			[[ $set == both && $t != 16 ]] && continue
		for n in $(seq 1 10); do
			use $t
			damage $set
			run env FK_CRASH_AFTER_WRITE=$n fatcheck -r img
			# 99: the crash (a -DFK_FAULT_INJECTION build); else done
			[[ $status -eq 99 || $status -eq 1 ]]
			crashed=$status
			run fatcheck -r img
			[[ $status -eq 0 || $status -eq 1 ]]
			file_intact
			settled
			[ "$crashed" -eq 99 ] || break
		done
		done
	done
}

@test "fatcheck -r: a failed write of the copy repair is exit 12 and changes nothing the next -r cannot finish" {
	local t n set
	for t in 12 16 32; do
		for set in one both; do
			# both copies written: one FAT type is enough
			[[ $set == both && $t != 16 ]] && continue
		for n in $(seq 1 10); do
			use $t
			damage $set
			run --separate-stderr env FK_FAIL_WRITE=$n fatcheck -r img
			[ "$status" -eq 1 ] && break # no fault injection, or done
			[ "$status" -eq 12 ]
			[[ $stderr == "fatcheck: img: Input/output error" ]]
			run -1 fatcheck -r img
			file_intact
			settled
		done
		done
	done
}
