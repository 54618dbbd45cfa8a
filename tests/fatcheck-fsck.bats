#!/usr/bin/env bats
# fatcheck-fsck.bats: verdicts where a differential run found fatcheck and
# fsck.fat 4.2 (or mtools) apart: an entry flagged as having no 8.3 name,
# embedded spaces in short names, the extended boot signature, a jump byte
# of 0x00, volume labels in subdirectories, attribute bytes that say
# directory over a file's data.  Each image is damaged by hand
# (dd, fatpoke.py, corrupt.py) and judged by fsck.fat -n and mtools.

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

# byte_at IMG OFF: the byte at OFF, two hex digits.
byte_at()
{
	od -An -tx1 -j "$2" -N1 "$1" | tr -d ' '
}

@test "fatcheck: an entry flagged as having no 8.3 name and without a long name is a bad-name error; -r clears the flag" {
	mkimg fat16 4M img -s 1
	printf 'hi\n' >README.TXT
	mcopy -i img README.TXT ::
	off=$(slot_of img 'README  TXT')
	poke img $((off + 12)) '\x20'
	run -1 fsck.fat -n img
	[[ $output == *"Bad short file name (README.TXT)"* ]]
	run -4 --separate-stderr fatcheck img
	assert_line "error: /README.TXT: flagged as having no 8.3 name (byte 12, 0x20), but it has no long name either"
	run -1 --separate-stderr fatcheck -r img
	assert_line "error: /README.TXT: flagged as having no 8.3 name (byte 12, 0x20), but it has no long name either (repair: flag cleared: it is named 'README.TXT')"
	[ "$(byte_at img $((off + 12)))" = 00 ]
	run -0 --separate-stderr fatcheck img
	fsck_clean img
	[ "$(mtype -i img ::README.TXT)" = hi ]
}

@test "fatcheck: the no-8.3-name flag with a lower-case name keeps the case flags; with a long name it is no finding" {
	mkimg fat16 4M img -s 1
	printf 'hi\n' >t
	mcopy -i img t ::readme.txt
	mcopy -i img t "::A long name.txt"
	off=$(slot_of img 'README  TXT')
	[ "$(byte_at img $((off + 12)))" = 18 ]
	poke img $((off + 12)) '\x38'
	long=$(slot_of img 'ALONGN~1TXT')
	poke img $((long + 12)) '\x20'
	run -1 fsck.fat -n img
	[[ $output == *"Bad short file name (README.TXT)"* ]]
	[[ $output != *ALONGN* ]]
	run -4 --separate-stderr fatcheck img
	[ "${#lines[@]}" -eq 2 ]
	assert_line "error: /readme.txt: flagged as having no 8.3 name (byte 12, 0x20), but it has no long name either"
	run -1 --separate-stderr fatcheck -r img
	[ "$(byte_at img $((off + 12)))" = 18 ]
	[ "$(byte_at img $((long + 12)))" = 20 ]
	run -0 --separate-stderr fatcheck img
	fsck_clean img
	[ "$(mtype -i img ::readme.txt)" = hi ]
	[ "$(mtype -i img "::A long name.txt")" = hi ]
}

@test "fatcheck: the no-8.3-name flag on a short name FAT forbids: -r renames it and clears the flag" {
	mkimg fat16 4M img -s 1
	printf 'hi\n' >README.TXT
	mcopy -i img README.TXT ::
	off=$(slot_of img 'README  TXT')
	poke img $((off + 2)) '?'
	poke img $((off + 12)) '\x20'
	run -1 fsck.fat -n img
	run -1 --separate-stderr fatcheck -r img
	assert_line --partial "error: /RE?DME.TXT: flagged as having no 8.3 name (byte 12, 0x20), but it has no long name either (repair: flag cleared with the new name)"
	[ "$(byte_at img $((off + 12)))" = 00 ]
	run -0 --separate-stderr fatcheck img
	fsck_clean img
}

@test "fatcheck: a space inside a short name's base or extension is no finding, as for fsck.fat; a leading space is bad-name" {
	mkimg fat16 4M img -s 1
	printf 'hi\n' >ABXCD.TXT
	mcopy -i img ABXCD.TXT ::
	off=$(slot_of img 'ABXCD   TXT')
	cp img base.img
	for nm in 'AB CD   TXT' 'ABXCD   T X' 'ABXCD    TX'; do
		cp base.img img
		printf '%s' "$nm" | dd of=img bs=1 seek="$off" conv=notrunc status=none
		fsck_clean img
		run -0 --separate-stderr fatcheck img
		[ "${#lines[@]}" -eq 1 ]
		before=$(img_sha img)
		run -0 --separate-stderr fatcheck -r img
		[ "$(img_sha img)" = "$before" ]
	done
	for nm in ' BXCD   TXT' '        TXT'; do
		cp base.img img
		printf '%s' "$nm" | dd of=img bs=1 seek="$off" conv=notrunc status=none
		run -1 fsck.fat -n img
		[[ $output == *"Bad short file name"* ]]
		run -4 --separate-stderr fatcheck img
		[[ ${lines[0]} == "error: "*"short name '"*"' holds characters FAT does not allow" ]]
		run -1 --separate-stderr fatcheck -r img
		run -0 --separate-stderr fatcheck img
		fsck_clean img
	done
}

@test "fatprealloc: a name with a space still gets a long name and an alias without spaces" {
	mkimg fat16 4M img -s 1
	run -0 --separate-stderr fatprealloc img "/AB CD.TXT" 1K
	[[ $(mdir -i img ::) == *"ABCD~1   TXT      1024 "*" AB CD.TXT"* ]]
	fsck_clean img
	run -0 --separate-stderr fatcheck img
}

@test "fatcheck: a boot sector without the extended boot signature is a label error; -r signs it and keeps the serial" {
	local t sig label
	for t in 16 32; do
		sig=$((t == 32 ? 66 : 38))
		for label in BASE ''; do
			if [ -n "$label" ]; then
				mkimg fat$t $((t == 32 ? 40 : 8))M img -n "$label"
			else
				mkimg fat$t $((t == 32 ? 40 : 8))M img
			fi
			serial=$(od -An -tx1 -j $((sig + 1)) -N4 img)
			poke img $sig '\x10'
			run -1 fsck.fat -n img
			if [ -n "$label" ]; then
				[[ $output == *"Volume label '$label' stored in root directory and label '' stored in boot sector and different"* ]]
			else
				[[ $output == *"Label '' stored in boot sector is not valid"* ]]
			fi
			shown=none
			[ -z "$label" ] || shown="'$label'"
			run -4 --separate-stderr fatcheck img
			assert_line "error: img: the boot sector has no extended boot signature (byte $sig is 0x10, not 0x29), so no label is set there; the root directory's label is $shown"
			run -1 --separate-stderr fatcheck -r img
			[ "$(byte_at img $sig)" = 29 ]
			[ "$(od -An -tx1 -j $((sig + 1)) -N4 img)" = "$serial" ]
			[ "$(dd if=img bs=1 skip=$((sig + 5)) count=19 status=none)" = "$(printf '%-11sFAT%d   ' "${label:-NO NAME}" $t)" ]
			run -0 --separate-stderr fatcheck img
			fsck_clean img
		done
	done
}

@test "every program reads a boot sector whose jump byte is 0x00 when its BPB holds together, as fsck.fat and mtools do" {
	local t
	for t in 12 16 32; do
		mkimg fat$t $((t == 32 ? 40 : 8))M img
		printf 'hi\n' >A.TXT
		mcopy -i img A.TXT ::
		poke img 0 '\x00'
		# FAT32: the backup boot sector (sector 6) alike.
		((t != 32)) || poke img 3072 '\x00'
		fsck_clean img
		run -0 --separate-stderr fatcheck -n img
		[ "${#lines[@]}" -eq 1 ]
		run -0 --separate-stderr fatls img
		[ "$output" = "$(mdir -b -i img :: | sed 's|^::/||')" ]
		run -0 --separate-stderr fatprealloc img /NEW.BIN 4K
		[[ $(mdir -i img ::NEW.BIN) == *"NEW      BIN      4096 "* ]]
		[ "$(byte_at img 0)" = 00 ]
		fsck_clean img
	done
	# Zeros are no FAT boot sector, and are named so.
	head -c 1048576 /dev/zero >zero.img
	run -8 --separate-stderr fatcheck zero.img
	[ "$stderr" = "fatcheck: zero.img: not a FAT boot sector (jump byte 0x00; bytes per sector 0 is not 512, 1024, 2048 or 4096)" ]
}

# fsck_silent IMG: fsck.fat -n exits 0 and says nothing but its version
# and summary lines ("Has a large number of bad entries" exits 0).
fsck_silent()
{
	run -0 fsck.fat -n "$1"
	[ "${#lines[@]}" -eq 2 ] || {
		echo "fsck.fat -n $1 complains:" >&2
		echo "$output" >&2
		return 1
	}
}

@test "fatcheck -r: a file whose attribute byte says directory stays the file of its data; fsck.fat would rewrite the data as entries" {
	local t sha a
	gen_bytes 4096 attr >R.BIN
	printf 'fatkit test volume\n' >T.TXT
	for t in 12 16 32; do
		for a in '\x10' '\x1e' '\xff'; do
			mkimg fat$t $((t == 32 ? 40 : 4))M img
			mmd -i img ::D
			mcopy -i img R.BIN ::D/
			mcopy -i img T.TXT ::
			poke img $(($(slot_of img 'R       BIN') + 11)) "$a"
			poke img $(($(slot_of img 'T       TXT') + 11)) "$a"
			run fsck.fat -n img
			assert_output --regexp "Has a large number of bad entries|Expected a valid '.' entry|volume label"
			run -4 --separate-stderr fatcheck img
			assert_line "error: /D/R.BIN: attribute byte 0x${a#??} says directory, but it has a size (4096 bytes), as only files have, and its first cluster does not begin with '.' and '..': a file's data"
			run -1 --separate-stderr fatcheck -r img
			assert_line --partial "/T.TXT: attribute byte 0x${a#??} says directory, but it has a size (19 bytes), as only files have, and its first cluster does not begin with '.' and '..': a file's data (repair: directory bit cleared: a file again)"
			fsck_silent img
			run -0 --separate-stderr fatcheck img
			sha=$(img_sha img)
			run -0 --separate-stderr fatcheck -r img
			[ "$(img_sha img)" = "$sha" ]
			cmp R.BIN <(mtype -i img ::D/R.BIN)
			cmp T.TXT <(mtype -i img ::T.TXT)
			[[ $(mdir -a -i img ::D/R.BIN) == *"R        BIN      4096 "* ]]
		done
	done
}

@test "fatcheck -r: a volume label entry in a subdirectory (a warning) is deleted when it owns no cluster, else it becomes the file of them" {
	mkimg fat12 4M img
	mmd -i img ::D
	: >E.TXT
	printf 'data\n' >F.TXT
	printf 'keep\n' >K.TXT
	mcopy -i img E.TXT F.TXT K.TXT ::D/
	e=$(slot_of img 'E       TXT')
	f=$(slot_of img 'F       TXT')
	poke img $((e + 11)) '\x08'
	poke img $((f + 11)) '\x08'
	# fsck.fat says nothing of labels with valid names: warnings.
	fsck_silent img
	run -0 --separate-stderr fatcheck img
	assert_line "warning: /D/E.TXT: a volume label entry in a subdirectory (only the root directory holds the label)"
	assert_line "warning: /D/F.TXT: a volume label entry in a subdirectory (only the root directory holds the label) that owns clusters"
	# mdir lists no F.TXT while it is a label.
	run -1 grep '^F  *TXT' <<<"$(mdir -a -i img ::D)"
	run -1 --separate-stderr fatcheck -r img
	assert_line "warning: /D/E.TXT: a volume label entry in a subdirectory (only the root directory holds the label) (repair: entry deleted)"
	assert_line "warning: /D/F.TXT: a volume label entry in a subdirectory (only the root directory holds the label) that owns clusters (repair: volume bit cleared: a file of them)"
	[ "$(byte_at img "$e")" = e5 ]
	[ "$(byte_at img $((f + 11)))" = 00 ]
	fsck_silent img
	run -0 --separate-stderr fatcheck img
	[ "$(mtype -i img ::D/F.TXT)" = data ]
	[ "$(mtype -i img ::D/K.TXT)" = keep ]
}

# first_clus IMG NAME11: the first cluster the short slot NAME11 names
# (bytes 26-27; FAT12 and FAT16).
first_clus()
{
	od -An -tu2 -j $(($(slot_of "$1" "$2") + 26)) -N2 "$1" | tr -d ' '
}

@test "fatcheck -r: a volume label in a subdirectory that names a cluster of another file's chain owns nothing: it is deleted, the file kept whole" {
	mkimg fat16 8M img -s 1
	head -c 8192 /dev/urandom >BIG.BIN
	head -c 4096 /dev/urandom >HEAD.BIN
	mcopy -i img HEAD.BIN ::
	mmd -i img ::SUB
	mmd -i img ::A
	mcopy -i img BIG.BIN ::A/
	printf 'a\n' >L.TXT
	printf 'b\n' >M.TXT
	mcopy -i img L.TXT M.TXT ::SUB/
	# L.TXT: a label naming BIG.BIN's fifth cluster, which its fourth
	# links to (/SUB is walked before /A); M.TXT: a label naming
	# HEAD.BIN's first cluster, claimed before /SUB is walked.
	big=$(first_clus img 'BIG     BIN')
	hd=$(first_clus img 'HEAD    BIN')
	mid=$((big + 4))
	l=$(slot_of img 'L       TXT')
	m=$(slot_of img 'M       TXT')
	poke img $((l + 11)) '\x08'
	poke img $((l + 26)) "$(printf '\\x%02x\\x%02x' $((mid & 255)) $((mid >> 8)))"
	poke img $((m + 11)) '\x08'
	poke img $((m + 26)) "$(printf '\\x%02x\\x%02x' $((hd & 255)) $((hd >> 8)))"
	# Their own clusters, the labels' files once, are lost now.
	run -4 --separate-stderr fatcheck img
	assert_line --partial "error: img: 2 lost clusters"
	assert_line "warning: /SUB/L.TXT: a volume label entry in a subdirectory (only the root directory holds the label)"
	assert_line "warning: /SUB/M.TXT: a volume label entry in a subdirectory (only the root directory holds the label)"
	refute_output --partial "cross-linked"
	run -1 --separate-stderr fatcheck -r img
	assert_line "warning: /SUB/L.TXT: a volume label entry in a subdirectory (only the root directory holds the label) (repair: entry deleted)"
	[ "$(byte_at img "$l")" = e5 ]
	[ "$(byte_at img "$m")" = e5 ]
	fsck_silent img
	cmp BIG.BIN <(mtype -i img ::A/BIG.BIN)
	cmp HEAD.BIN <(mtype -i img ::HEAD.BIN)
	run -0 --separate-stderr fatcheck img
}

@test "fatcheck -r: a subdirectory of garbage entries, volume labels among them (past its end marker too), ends clean to fsck.fat" {
	local t seed sha
	for t in 12 16 32; do
		mkimg fat$t $((t == 32 ? 40 : 4))M base.img
		mmd -i base.img ::D
		for f in a b c; do printf '%s\n' $f >$f.txt; mcopy -i base.img $f.txt ::D/; done
		printf 'keep\n' >K.TXT
		mcopy -i base.img K.TXT ::
		for seed in 7 11 19; do
			cp base.img img
			"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img dir-garbage /D "seed$seed" >/dev/null
			run -1 --separate-stderr fatcheck -r img
			assert_line --partial "a volume label entry in a subdirectory"
			run -0 --separate-stderr fatcheck img
			fsck_silent img
			sha=$(img_sha img)
			run -0 --separate-stderr fatcheck -r img
			[ "$(img_sha img)" = "$sha" ]
			[ "$(mtype -i img ::K.TXT)" = keep ]
		done
	done
}
