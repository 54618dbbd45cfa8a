#!/usr/bin/env bats
# fatcheck-repair.bats: the repairs that give names back and rebuild "."
# and "..": short names FAT does not allow, duplicate names, long names
# whose checksum alone is wrong, damaged "." and "..", and FAT[0]/FAT[1]
# in every copy.  The damage comes from helpers/corrupt.py; the judges are
# fsck.fat -n, mdir/mcopy (mtools), sha256sum and the image's own bytes.

load helpers/common

CORRUPT=$FATKIT_HELPERS/corrupt.py
LONG="/A long file name for testing.txt"

setup_file()
{
	cd "$BATS_FILE_TMPDIR" || return 1
	mkimg fat12 4M base12.img && populate base12.img &&
		mkimg fat16 16M base16.img && populate base16.img &&
		mkimg fat32 40M base32.img && populate base32.img
}

# use 12|16|32: ./img (and img.sums) become a copy of that populated image.
use()
{
	cp "$BATS_FILE_TMPDIR/base$1.img" img &&
		cp "$BATS_FILE_TMPDIR/base$1.img.sums" img.sums
}

damage()
{
	py_run "$CORRUPT" img "$@" >/dev/null
}

fsck_flags()
{
	if fsck.fat -n img >/dev/null 2>&1 </dev/null; then
		echo "fsck.fat -n finds nothing wrong" >&2
		return 1
	fi
}

# sum_of PATH: the sha256 img.sums holds for PATH (as populate wrote it).
sum_of()
{
	grep -F "  $1" img.sums | head -1 | cut -c1-64
}

# same_data NEWPATH OLDPATH: NEWPATH in img reads back as OLDPATH was made.
same_data()
{
	local got
	got=$(mtype -i img "::$1" | sha256sum | cut -c1-64) || return 1
	if [[ $got != "$(sum_of "$2")" ]]; then
		echo "same_data: $1 does not hold what $2 held" >&2
		return 1
	fi
}

# files_intact [SKIP...]: every file of img.sums except SKIP reads back
# identical under its old path.
files_intact()
{
	local tree=$BATS_TEST_TMPDIR/tree line path s skip
	rm -rf "$tree" && mkdir "$tree" || return 1
	mcopy -s -n -i img '::/*' "$tree/" </dev/null || return 1
	while IFS= read -r line; do
		path=${line#*  }
		skip=0
		for s in "$@"; do [[ ${path,,} == "${s,,}" ]] && skip=1; done
		((skip)) || echo "$line"
	done <img.sums | tree_sums_ok "$tree" files_intact
}

# settled: after a repair, fsck.fat -n is clean, fatcheck prints the
# summary alone, and another -r writes nothing.
settled()
{
	local sha
	fsck_clean img
	run -0 fatcheck img
	[ "${#lines[@]}" -eq 1 ]
	sha=$(img_sha img)
	run -0 fatcheck -r img
	[ "$(img_sha img)" = "$sha" ]
}

# mdir_has DIR REGEX: a line of mdir -a DIR matches (short name columns,
# then the long name).
mdir_has()
{
	if ! mdir -a -i img "::$1" | grep -qE -- "$2"; then
		echo "mdir -a ::$1 has no line matching '$2':" >&2
		mdir -a -i img "::$1" >&2
		return 1
	fi
}

@test "fatcheck -r: a short name FAT does not allow gets the alias a writer makes of its long name; the long name stays" {
	local t
	for t in 12 16 32; do
		use $t
		damage bad-char "$LONG"
		fsck_flags
		run -4 fatcheck img
		assert_line --partial "error: $LONG: short name 'A?ONGF~1.TXT' holds characters FAT does not allow"
		run -1 fatcheck -r img
		assert_line --partial "(repair: renamed to 'ALONGF~1.TXT' (its long name kept))"
		settled
		mdir_has / '^ALONGF~1 TXT +24 .* A long file name for testing\.txt$'
		files_intact
	done
}

@test "fatcheck -r: an alias is unique against the other names, and two renamed in one run differ" {
	local t
	for t in 12 16 32; do
		use $t
		printf 'second\n' >"A long file name 2.txt"
		mcopy -i img "A long file name 2.txt" ::/
		printf 'taken\n' >FSCK0000.REN
		mcopy -i img FSCK0000.REN ::/
		mdir_has / '^ALONGF~2 TXT .* A long file name 2\.txt$'
		damage bad-char "/A long file name 2.txt"
		damage bad-char /README.TXT
		damage lead-space /EMPTYDIR
		damage bad-char /DATA/rand-512.bin
		fsck_flags
		run -4 fatcheck img
		[ "$(grep -c '^error: .*holds characters FAT does not allow' <<<"$output")" -eq 4 ]
		run -1 fatcheck -r img
		settled
		# ~1 is the other long name's: this one keeps ~2.
		mdir_has / '^ALONGF~2 TXT .* A long file name 2\.txt$'
		mdir_has / '^ALONGF~1 TXT .* A long file name for testing\.txt$'
		# FSCK0000.REN was taken: the two without long names get the
		# next two, in slot order; the one in /DATA its directory's first.
		mdir_has / '^FSCK0001 REN +<DIR> '
		mdir_has / '^FSCK0002 REN +19 '
		mdir_has /DATA '^FSCK0000 REN +512 '
		same_data /FSCK0002.REN /README.TXT
		[ "$(mtype -i img ::/FSCK0000.REN)" = taken ]
		same_data /DATA/FSCK0000.REN /DATA/rand-512.bin
		[ "$(mtype -i img '::/A long file name 2.txt')" = second ]
		files_intact /README.TXT /DATA/rand-512.bin
	done
}

@test "fatcheck -r: a leading space and a lower-case short name without the NT flags" {
	local t
	for t in 12 16 32; do
		use $t
		damage lead-space /README.TXT
		fsck_flags
		run -4 fatcheck img
		run -1 fatcheck -r img
		assert_line --partial "(repair: renamed to 'FSCK0000.REN')"
		settled
		same_data /FSCK0000.REN /README.TXT
		files_intact /README.TXT

		# A name that is lower case throughout keeps its look: upper
		# case on disk, with the NT lower-case flags.
		use $t
		damage lower-short /README.TXT
		run -0 fatcheck img
		assert_line --partial "warning: /readme.txt: short name 'readme.txt' is not a valid 8.3 name"
		run fatcheck -r img
		assert_line --partial "(repair: stored in upper case with the NT lower-case flags (still shown as 'readme.txt'))"
		settled
		mdir_has / '^readme +txt +19 '
		same_data /README.TXT /README.TXT
		files_intact /README.TXT

		# Mixed case has no such form: upper case it is.
		use $t
		damage lower-name /README.TXT
		run fatcheck -r img
		assert_line --partial "(repair: renamed to 'README.TXT')"
		settled
		mdir_has / '^README +TXT +19 '
		files_intact
	done
}

@test "fatcheck -r: of two entries with one name the later is renamed; both keep their data" {
	local t
	for t in 12 16 32; do
		# No long name: FSCK0000.REN.
		use $t
		damage dup /DATA/rand-0.bin /DATA/rand-1.bin
		fsck_flags
		run -4 fatcheck img
		run -1 fatcheck -r img
		assert_line --regexp "^error: /DATA/rand-0.bin: another entry of this directory \(slot [0-9]+\) has the same name .*\(repair: this later entry renamed to 'FSCK0000.REN'\)$"
		settled
		same_data /DATA/FSCK0000.REN /DATA/rand-1.bin
		files_intact /DATA/rand-1.bin

		# A long name: the alias comes from it, and it stays.
		use $t
		damage dup /DATA/rand-512.bin /DATA/rand-4096.bin
		fsck_flags
		run -4 fatcheck img
		run -1 fatcheck -r img
		assert_line --partial "(repair: this later entry renamed to 'RAND-4~1.BIN' (its long name kept))"
		settled
		mdir_has /DATA '^RAND-4~1 BIN +4096 .* rand-4096\.bin$'
		files_intact
	done
}

@test "fatcheck -r: a short name equal to another entry's long name is a collision too" {
	local t
	for t in 12 16 32; do
		# The later entry's short name is the earlier's long name.
		use $t
		damage long-is /README.TXT "$LONG"
		run -4 fatcheck img
		run -1 fatcheck -r img
		assert_line --partial "(repair: this later entry renamed to 'FSCK0000.REN')"
		settled
		[ "$(mtype -i img ::/README.TXT)" = "$(mtype -i img ::/ALONGF~1.TXT)" ]
		same_data /FSCK0000.REN /README.TXT
		same_data /ALONGF~1.TXT "$LONG"

		# The later entry's long name is the earlier's short name: that
		# long name goes, its own short name stays.
		use $t
		damage long-is /README.TXT "/name with spaces.dat"
		run -4 fatcheck img
		run -1 fatcheck -r img
		assert_line --partial "(repair: this later entry's long name deleted)"
		settled
		mdir_has / '^NAMEWI~1 DAT +19 [^ ]+ +[^ ]+ *$'
		same_data /README.TXT /README.TXT
		same_data /NAMEWI~1.DAT "/name with spaces.dat"
	done
}

@test "fatcheck -r: a long name whose checksum alone is wrong is re-attached" {
	local t
	for t in 12 16 32; do
		use $t
		damage lfn-sum "$LONG"
		run -4 fatcheck img
		assert_line "error: /: long-name slots 0-2 belong to no entry (the next entry does not match): the long name 'A long file name for testing.txt'"
		run -1 fatcheck -r img
		assert_line "error: /: long-name slots 0-2 belong to no entry (the next entry does not match): the long name 'A long file name for testing.txt' (repair: checksum rewritten: the long name 'A long file name for testing.txt' is re-attached to 'ALONGF~1.TXT')"
		settled
		mdir_has / '^ALONGF~1 TXT +24 .* A long file name for testing\.txt$'
		files_intact
	done
}

@test "fatcheck -r: a long name that lacks its last piece is deleted; the entry stays" {
	local t
	for t in 12 16 32; do
		use $t
		damage lfn-unfinished "$LONG"
		# fsck.fat -n reports it, and exits 0 (it leaves it).
		fsck.fat -n img 2>&1 | grep -q 'Unfinished long file name'
		run -4 fatcheck img
		run -1 fatcheck -r img
		assert_line "error: /: long-name slots 0-2 belong to no entry (the next entry does not match): part of a long name, 'A long file name for testing.txt' (repair: slots deleted)"
		settled
		mdir_has / '^ALONGF~1 TXT +24 [^ ]+ +[^ ]+ *$'
		same_data /ALONGF~1.TXT "$LONG"
	done
}

@test "fatcheck -r: a re-attached long name would duplicate another name: the slots are deleted instead" {
	local t
	for t in 12 16 32; do
		use $t
		damage lfn-sum "$LONG"
		# With its long name unattached, a writer may give the name to
		# a new file.
		printf 'new\n' >new.txt
		mcopy -i img new.txt "::$LONG"
		run -4 fatcheck img
		run -1 fatcheck -r img
		assert_line "error: /: long-name slots 0-2 belong to no entry (the next entry does not match): the long name 'A long file name for testing.txt' (repair: slots deleted (another entry has that name))"
		settled
		[ "$(mtype -i img "::$LONG")" = new ]
		same_data /ALONGF~1.TXT "$LONG"
	done
}

@test "fatcheck -r: '.' and '..' rebuilt from the directory's entry, for every damage fsck.fat flags" {
	local t c
	for t in 12 16 32; do
		for c in "no-dotdot /EMPTYDIR" "dot-attr /EMPTYDIR" \
			"dot-attr /deep1/deep2 .." "dot-name /EMPTYDIR" \
			"dot-name /deep1/deep2 .." "dot-swap /deep1/deep2" \
			"no-dot /deep1/deep2"; do
			use $t
			# shellcheck disable=SC2086
			damage $c
			fsck_flags
			run -4 fatcheck img
			assert_line --regexp "^error: /(EMPTYDIR|deep1/deep2): '\.\.?' "
			run -1 fatcheck -r img
			settled
			files_intact
			"$FK_PYTHON" - "$FATKIT_HELPERS" img "${c#* }" <<'PY'
import sys
# "." and ".." as mkfs makes them: first and second, directories, with
# the start clusters "." and ".." must have.
sys.path.insert(0, sys.argv[1])
import corrupt
vol = corrupt.Volume(sys.argv[2])
path = sys.argv[3].split()[0]
ent, parent = vol.lookup(path)
up = parent if path.count("/") > 1 else 0
offs = [off for off, _ in vol.dir_slots(ent.first)][:2]
for off, name, first in zip(offs, (b".", b".."), (ent.first, up)):
    s = bytes(vol.read(off, 32))
    assert s[:11] == name.ljust(11), s
    assert s[11] & 0x10, s
    clus = int.from_bytes(s[26:28], "little") | \
        int.from_bytes(s[20:22], "little") << 16
    assert clus == first, (name, clus, first)
PY
		done
	done
}

# dot_entries_img: ./img as dosfstools' test image check-dot_entries is
# made: a FAT16 volume TESTFAT16 whose directory DIR holds TEST1.TXT and
# TEST2.TXT ("test 1", "test 2") in its first two slots, then ".." and
# "." (built here with mkfs.fat, mtools and corrupt.py, not copied).
dot_entries_img()
{
	rm -f img
	mkfs.fat --invariant -F 16 -S 512 -s 1 -n TESTFAT16 -C img 8192 >/dev/null
	printf 'test 1\n' >TEST1.TXT
	printf 'test 2\n' >TEST2.TXT
	mmd -i img ::/DIR
	mcopy -i img TEST1.TXT TEST2.TXT ::/DIR/
	damage dot-entries /DIR
}

# dot_entries_kept: what any repair of dot_entries_img leaves, however
# many runs it took: a settled volume with TEST1.TXT and TEST2.TXT whole
# (an interrupted move may leave a renamed, emptied copy besides).
dot_entries_kept()
{
	settled
	[ "$(mtype -i img ::/DIR/TEST1.TXT)" = "test 1" ]
	[ "$(mtype -i img ::/DIR/TEST2.TXT)" = "test 2" ]
}

# dot_entries_ok: what one repair of dot_entries_img leaves: "." and ".."
# first, TEST1.TXT and TEST2.TXT in slots 4 and 5 (where fsck.fat -a puts
# them, as dosfstools' reference result has it).
dot_entries_ok()
{
	local dot
	dot_entries_kept
	dot=$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot img ".          ")
	[ "$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot img "..         ")" -eq $((dot + 32)) ]
	[ "$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot img "TEST1   TXT")" -eq $((dot + 4 * 32)) ]
	[ "$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot img "TEST2   TXT")" -eq $((dot + 5 * 32)) ]
}

@test "fatcheck -r: dosfstools' check-dot_entries: the entries in the '.' and '..' slots move down, '.' and '..' are created" {
	dot_entries_img
	run fsck.fat -n img
	assert_output --partial "Expected a valid '.' entry in this slot."
	run -4 fatcheck img
	run -1 fatcheck -r img
	assert_output - <<'OUT'
error: /DIR/TEST1.TXT: entry in slot 0, where '.' belongs (repair: moved to slot 4)
error: /DIR/TEST2.TXT: entry in slot 1, where '..' belongs (repair: moved to slot 5)
error: /DIR: '..' entry in slot 2 (repair: entry removed)
error: /DIR: '.' entry in slot 3 (repair: entry removed)
error: /DIR: '.' entry is missing from slot 0 (repair: '.' created)
error: /DIR: '..' entry is missing from slot 1 (repair: '..' created)
img: FAT16, 2 files, 1 directory, 3/16223 clusters used; 6 errors (6 fixed, 0 left), 0 warnings, 0 notes; 6 fixes applied
OUT
	dot_entries_ok
}

@test "fatcheck -r: an entry read past an end marker in the '..' slot is made visible and moved down in one run" {
	local off
	dot_entries_img
	# Slot 0 (TEST1.TXT) all zeros: an end marker, and TEST2.TXT, ".."
	# and "." behind it, seen by Linux and fsck.fat only.
	off=$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot img "TEST1   TXT")
	dd if=/dev/zero of=img bs=32 count=1 seek=$((off / 32)) conv=notrunc status=none
	run -4 fatcheck img
	assert_line --partial "error: /DIR/TEST2.TXT: file 'TEST2.TXT' (slot 1) lies past the directory's end marker (slot 0)"
	run -1 fatcheck -r img
	assert_line "error: /DIR/TEST2.TXT: entry in slot 1, where '..' belongs (repair: moved to slot 4)"
	settled
	[ "$(mtype -i img ::/DIR/TEST2.TXT)" = "test 2" ]
	run -0 mdir -b -i img ::/DIR
	[ "$output" = "::/DIR/TEST2.TXT" ]
}

@test "fatcheck -r: an entry in the '.' or '..' slot moves down with its long name; '.' and '..' are created in the same run" {
	local c
	for c in "12 dot-entries /DATA" "16 dots-removed /DATA" \
		"16 dots-removed /EMPTYDIR" "32 dots-removed /deep1" \
		"32 dot-entries /DATA"; do
		use "${c%% *}"
		c=${c#* }
		# shellcheck disable=SC2086
		damage $c
		fsck_flags
		run -4 fatcheck img
		run -1 fatcheck -r img
		[[ $c == *EMPTYDIR ]] ||
			assert_line --regexp "^error: /(DATA/rand-100000\.bin|deep1/deep2): entry in slots? 0(-[0-9]+)?, where '\.' (and '\.\.' )?belongs? \(repair: moved to slots? [0-9]+(-[0-9]+)?\)$"
		settled
		files_intact
		mdir_has /DATA ' rand-100000\.bin$'
		mdir_has /deep1 '^deep2 +<DIR>'
		run -0 mdir -i img ::/deep1/deep2/deep3/deep4/deep5/deep6/leaf.txt
	done
}

# full_dir_img 16|32: ./img with 512-byte clusters and a directory /D of
# one full cluster (".", "..", a file with a four-slot long name, ten 8.3
# files), whose "." and ".." were then removed: the long-named file sits
# in slots 0-3 and only two free slots are left, too few to take it.
full_dir_img()
{
	local i
	rm -f img
	mkimg "fat$1" "$([ "$1" = 32 ] && echo 34M || echo 8M)" img -s 1
	mmd -i img ::/D
	printf 'long\n' >"A long file name for testing.txt"
	for i in 0 1 2 3 4 5 6 7 8 9; do
		printf 'file %s\n' $i >F$i.TXT
	done
	# One mcopy: the entries take the slots in the order named.
	mcopy -i img "A long file name for testing.txt" F?.TXT ::/D/
	damage dots-removed /D
}

full_dir_ok()
{
	local first i
	settled
	fat_copies_equal img
	mdir_has /D '^ALONGF~1 TXT +5 .* A long file name for testing\.txt$'
	[ "$(mtype -i img "::/D/A long file name for testing.txt")" = long ]
	for i in 0 1 2 3 4 5 6 7 8 9; do
		[ "$(mtype -i img ::/D/F$i.TXT)" = "file $i" ]
	done
}

@test "fatcheck -r: a full directory grows by a zeroed cluster, chained in every FAT copy, to take the entry out of the '.' slots" {
	local t first
	for t in 16 32; do
		full_dir_img $t
		run -4 fatcheck img
		run -1 fatcheck -r img
		assert_line "error: /D/A long file name for testing.txt: entry in slots 0-3, where '.' and '..' belong (repair: moved to slots 16-19 (the directory grew by 1 cluster))"
		full_dir_ok
		first=$(mshowfat -i img ::/D </dev/null | sed -n 's/^[^<]*<\([0-9]*\).*/\1/p')
		[[ $("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" chain img "$first") == *"end=eoc" ]]
		run -0 mdir -a -i img ::/D
		[ "$(grep -c ' TXT ' <<<"$output")" -eq 11 ]
	done
	# --salvage plans its new clusters around the one the directory
	# takes (one allocator), and FSInfo counts both.
	full_dir_img 32
	damage lost
	run -1 fatcheck -r --salvage img
	assert_line --partial "(repair: saved as /FOUND.000/FILE0000.CHK)"
	full_dir_ok
	[ "$(fsinfo_free img)" -eq "$(count_free_clusters img)" ]
}

# fresh dot_entries|full_dir: ./img as that helper makes it (made once per
# test, then copied).
fresh()
{
	if [[ ! -f $1.base ]]; then
		if [ "$1" = dot_entries ]; then dot_entries_img; else full_dir_img 32; fi
		cp img "$1.base"
	fi
	cp "$1.base" img
}

@test "fatcheck -r: a crash after any write while moving entries out of the '.' slots, then another -r, loses no file and no name" {
	local set n crashed
	for set in dot_entries full_dir; do
		for n in $(seq 1 20); do
			fresh $set
			run env FK_CRASH_AFTER_WRITE=$n fatcheck -r img
			[[ $status -eq 99 || $status -eq 1 ]]
			crashed=$status
			run fatcheck -r img
			[[ $status -eq 0 || $status -eq 1 ]]
			if [ $set = dot_entries ]; then dot_entries_kept; else full_dir_ok; fi
			[ "$crashed" -eq 99 ] || break
		done
		((n > 3)) || skip "not a fault-injection build"
	done
}

@test "fatcheck -r: a failed write while moving entries out of the '.' slots is exit 12; a later -r finishes the job" {
	local set n
	for set in dot_entries full_dir; do
		for n in 1 2 3 5 8 13; do
			fresh $set
			run --separate-stderr env FK_FAIL_WRITE=$n fatcheck -r img
			[ "$status" -eq 1 ] && break # no fault injection, or done
			[ "$status" -eq 12 ]
			[[ $stderr == "fatcheck: img: Input/output error" ]]
			run -1 fatcheck -r img
			if [ $set = dot_entries ]; then dot_entries_kept; else full_dir_ok; fi
		done
	done
}

@test "fatcheck -r: a layout fsck.fat gives up on is refused: exit 8, one line, nothing written; fatprealloc refuses it too" {
	local t c sha
	for t in 12 16 32; do
		for c in "nfats 3" "nfats 16" "root-ents 513" "root-ents 500" \
			"fat0-zero" "fat0-high"; do
			[[ $t == 32 && $c == root-ents* ]] && continue
			use $t
			# shellcheck disable=SC2086
			damage $c
			# fsck.fat gives up on it (and says why).
			run fsck.fat -n img
			[ "$status" -ne 0 ]
			assert_output --regexp "only 1 or 2 FATs|integral number of sectors|Both FATs appear to be corrupt"
			sha=$(img_sha img)
			for a in "" -n -r "-r --salvage" "-r --trim-prealloc"; do
				# shellcheck disable=SC2086
				run -8 --separate-stderr fatcheck $a img
				[ "${#stderr_lines[@]}" -eq 1 ]
				[[ $stderr == "fatcheck: img: implausible geometry: "*"; nothing is written to it (fsck.fat refuses it too): copy the files off with mtools, or restore the boot sector" ]]
				[ -z "$output" ]
				[ "$(img_sha img)" = "$sha" ]
			done
			run -8 --separate-stderr fatcheck -r --json img
			[ "$(img_sha img)" = "$sha" ]
			"$FK_PYTHON" -c 'import json, sys; d = json.loads(sys.argv[1]); e = d["error"]; assert e["exit_status"] == 8 and "implausible geometry" in e["message"], d' "$output"
			run -1 --separate-stderr fatprealloc img /NEW.BIN 10K
			[[ $stderr == "fatprealloc: img: implausible geometry: "* ]]
			[ "${#stderr_lines[@]}" -eq 1 ]
			run -1 --separate-stderr fatprealloc -p img "$LONG" 100K /DATA/x/y 1
			[ "$(img_sha img)" = "$sha" ]
		done
		# Reading goes on: Linux and mtools read three FAT copies
		# where the BPB puts them (what they find there is another
		# matter), and fatls is not refused either.
		use $t
		damage nfats 3
		run -0 --separate-stderr fatls -a img /
		[ -z "$stderr" ]
	done
}

@test "fatprealloc: a FAT copy read without its media mark is refused (a write would copy it to the other); fatcheck -r mends it first" {
	local t sha
	for t in 12 16 32; do
		use $t
		damage fat0-zero 0
		sha=$(img_sha img)
		run -1 --separate-stderr fatprealloc img /NEW.BIN 10K
		[ "$stderr" = "fatprealloc: img: FAT copy 1, the one read, lacks its media mark (FAT[0] is 0x0, expected $(fat0_want)), and a write there would copy that to every copy; run 'fatcheck -r img'" ]
		[ "$(img_sha img)" = "$sha" ]
		run -1 fatcheck -r img
		run -0 fatprealloc img /NEW.BIN 10K
		fsck_clean img
		run -0 fatcheck img
		files_intact
	done
}

# fat0_want: what FAT[0] should hold in ./img, as fatcheck prints it.
fat0_want()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" img <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import corrupt
vol = corrupt.Volume(sys.argv[2])
print("0x%X" % ((vol.eoc & ~0xF) | vol.media))
PY
}

@test "fatcheck -r: a layout fsck.fat refuses keeps every file: restored, the volume is as it was" {
	local t c
	for t in 12 16 32; do
		for c in "nfats 3" "root-ents 513"; do
			[[ $t == 32 && $c == root-ents* ]] && continue
			use $t
			# shellcheck disable=SC2086
			damage $c
			run -8 fatcheck -r img
			run -1 fatprealloc img /NEW.BIN 10K
			# put the byte back: nothing else has moved
			if [[ $c == nfats* ]]; then
				damage nfats 2
			else
				damage root-ents 512
			fi
			fsck_clean img
			run -0 fatcheck img
			files_intact
		done
	done
}

@test "fatcheck -r: FAT[0] and FAT[1] are rewritten from the media byte where one FAT copy keeps the mark" {
	local t
	for t in 12 16 32; do
		use $t
		damage fat0-zero 0
		[ $t = 12 ] || damage fat1-dirty
		fsck_flags
		run -4 fatcheck img
		run -1 fatcheck -r img
		fsck_clean img
		run -0 fatcheck img
		"$FK_PYTHON" - img <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
sec, res, nfats, media = struct.unpack_from("<H", b, 11)[0], struct.unpack_from("<H", b, 14)[0], b[16], b[21]
fsz = struct.unpack_from("<H", b, 22)[0] or struct.unpack_from("<I", b, 36)[0]
nsec = struct.unpack_from("<H", b, 19)[0] or struct.unpack_from("<I", b, 32)[0]
bits = 32 if not struct.unpack_from("<H", b, 22)[0] else None
if bits is None:
    rootsec = (struct.unpack_from("<H", b, 17)[0] * 32 + sec - 1) // sec
    spc = b[13]
    nclus = (nsec - res - nfats * fsz - rootsec) // spc
    bits = 12 if nclus < 4085 else 16
assert nfats == 2, nfats
for c in range(nfats):
    off = (res + c * fsz) * sec
    if bits == 12:
        raw = b[off:off + 3]
        assert raw == bytes([media, 0xFF, 0xFF]), (c, raw.hex())
    elif bits == 16:
        assert b[off:off + 4] == bytes([media, 0xFF, 0xFF, 0xFF]), (c, b[off:off + 4].hex())
    else:
        f0, f1 = struct.unpack_from("<II", b, off)
        assert f0 & 0x0FFFFFFF == 0x0FFFFF00 | media, (c, hex(f0))
        assert f1 & 0x0FFFFFFF == 0x0FFFFFFF, (c, hex(f1))
PY
	done
}

# set_media BYTE: the boot sector's media byte (and the FAT32 backup's)
# becomes BYTE (two hex digits), FAT[0] left.
set_media()
{
	local off
	for off in 21 $((6 * 512 + 21)); do
		printf "\\x$1" | dd of=img bs=1 seek=$off conv=notrunc status=none
		[ "$(fat_type img)" = fat32 ] || break
	done
}

# media_is BYTE: the boot sector's media byte (and the FAT32 backup's) and
# FAT[0]'s low byte in every copy are BYTE (two hex digits).
media_is()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" img "$1" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import corrupt
vol = corrupt.Volume(sys.argv[2])
want = int(sys.argv[3], 16)
assert vol.read(21, 1)[0] == want, vol.read(21, 1).hex()
if vol.backup_sec:
    assert vol.read(vol.backup_sec * vol.bps + 21, 1)[0] == want
for c in range(vol.nfats):
    assert vol.get(0, c) & 0xFF == want, (c, hex(vol.get(0, c)))
PY
}

@test "fatcheck -r: a boot sector media byte Linux does not mount (0x00, 0x7F, 0xF1) is an error, set from FAT[0]; mtools reads the volume again (FAT12/16/32)" {
	# Differential: fsck.fat does not look at it, fatcheck said nothing,
	# and mdir (as Linux's fat_valid_media()) refused the volume.
	local t m
	for t in 12 16 32; do
		for m in 00 7F F1; do
			use $t
			set_media $m
			# (mtools refuses one below 0xF0 even with
			# MTOOLS_SKIP_CHECK)
			[[ $m == F1 ]] || run ! mdir -/ -i img ::
			run -4 fatcheck img
			assert_line --regexp "^error: img: the boot sector's media byte 0x$m is not one Linux mounts \(0xF0, 0xF8 to 0xFF\); FAT\[0\] is 0x[0-9A-F]+F8\$"
			run -1 fatcheck -r img
			assert_line --partial "(repair: media byte set to 0xF8)"
			media_is F8
			settled
			files_intact
		done
	done
}

@test "fatcheck -r: a crash or a failed write at any write of a media byte mended (with FAT[0] damaged too), then another -r, leaves it mended" {
	local n crashed
	for n in $(seq 1 10); do
		use 32
		set_media 00
		damage fat0-high 1
		run env FK_CRASH_AFTER_WRITE=$n fatcheck -r img
		[[ $status -eq 99 || $status -eq 1 ]]
		crashed=$status
		run fatcheck -r img
		[[ $status -eq 0 || $status -eq 1 ]]
		media_is F8
		settled
		files_intact
		use 32
		set_media 00
		damage fat0-high 1
		run --separate-stderr env FK_FAIL_WRITE=$n fatcheck -r img
		[[ $status -eq 12 || $status -eq 1 ]]
		run fatcheck -r img
		[[ $status -eq 0 || $status -eq 1 ]]
		media_is F8
		settled
		[ "$crashed" -eq 99 ] || break
	done
	((n > 3)) || skip "not a fault-injection build"
}

# label_is TEXT: the root's label entry and the boot sector's label are
# TEXT (padded); "" for none, which the boot sector says as NO NAME.
label_is()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" img "$1" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import corrupt
vol = corrupt.Volume(sys.argv[2])
want = __import__("os").fsencode(sys.argv[3])
root = [e.raw for e in vol.entries(vol.root_clus) if e.attr & 0x18 == 0x08]
boot = vol.read(71 if vol.bits == 32 else 43, 11)
assert root == ([want.ljust(11)] if want else []), (root, want)
assert boot == (want.ljust(11) if want else b"NO NAME    "), boot
PY
}

# no_label_left: ./img is settled, with no label, and its files intact.
no_label_left()
{
	settled
	label_is ""
	files_intact
}

@test "fatcheck -r: a root label that is not valid is removed, in the boot sector too, never copied there" {
	local t l same copied
	for t in 12 16 32; do
		for l in 'A*B' 'ab\x01c' 'NAME.EXT' ' LEAD' ''; do
			for same in "" same; do
				use $t
				# shellcheck disable=SC2086
				damage root-label "$l" $same
				run fsck.fat -n img
				assert_output --partial "stored in root directory is not valid"
				run -4 fatcheck img
				assert_line --regexp "^error: img: the root directory's volume label '.*' \(slot [0-9]+\) is not valid: "
				run -1 fatcheck -r img
				# never copied: the boot sector gets NO NAME
				copied=$(grep "boot sector label set to" <<<"$output" |
					grep -v "set to 'NO NAME    ')$" || true)
				[ -z "$copied" ]
				# judged once per distinct image (once_for)
				once_for img img.sums -- no_label_left
			done
		done
	done
}

@test "fatcheck -r: a lower-case label is stored in upper case (as fsck.fat -a -U does); a label with code-page letters is kept" {
	local t sha
	for t in 12 16 32; do
		use $t
		damage root-label lowlab same
		fsck_clean img # fsck.fat allows lower case, unless -U
		run fsck.fat -n -U img
		assert_output --partial "contains lowercase characters"
		run -0 fatcheck img
		assert_line "warning: img: the volume label 'lowlab' holds lower-case letters, which FAT labels may not (fsck.fat -U flags them)"
		run -1 fatcheck -r img
		assert_line --partial "(repair: stored in upper case, in the boot sector too)"
		settled
		run -0 fsck.fat -n -U img
		label_is LOWLAB
		# Only the root's: the boot sector gets the mended label.
		use $t
		damage root-label lowlab
		run -4 fatcheck img
		run -1 fatcheck -r img
		settled
		label_is LOWLAB
		files_intact

		# fsck.fat 4.2 compares label bytes as signed chars, so it
		# takes code-page letters for control characters and would
		# remove the label: a warning, and nothing is written.
		use $t
		damage root-label '\x90TE' same
		run fsck.fat -n img
		assert_output --partial "is not valid"
		run -0 fatcheck img
		assert_line --partial "warning: img: the volume label '"
		assert_line --partial "holds bytes from 0x80, code-page letters Windows and Linux show"
		sha=$(img_sha img)
		run -0 fatcheck -r img
		[ "$(img_sha img)" = "$sha" ]
		label_is $'\x90TE'
	done
}

# label_tails [own]: ./img, FAT16 with 2 KiB clusters, /F.BIN (20,000
# bytes of ./f.bin), then root label entries that are not valid (a control
# character): one before the end marker, two past it, each of size 0 with
# a chain of its own (clusters 20, 21-22 and 23), all of it a
# preallocated tail.  With "own", one more past the marker whose size
# needs its chain (cluster 24): a label that owns clusters.
label_tails()
{
	rm -f img
	mkfs.fat -F 16 -S 512 -s 4 -C img 16384 >/dev/null
	head -c 20000 /dev/urandom >f.bin
	mcopy -i img f.bin ::F.BIN
	"$FK_PYTHON" - "$FATKIT_HELPERS" img "${1:-}" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[1])
import corrupt
path, own = sys.argv[2], sys.argv[3] == "own"
vol = corrupt.Volume(path)
slots = [off for off, _ in vol.dir_slots(vol.root_clus)]
assert vol.read(slots[1], 1) == b"\0" and vol.read(slots[2], 1) == b"\0"
def label(slot, name, first, size):
    e = bytearray(32)
    e[0:11] = name.ljust(11)
    e[11] = 0x08
    struct.pack_into("<HI", e, 26, first, size)
    vol.write(slots[slot], bytes(e))
def chain(*clus):
    for c, n in zip(clus, clus[1:] + (0xFFFF,)):
        for copy in range(vol.nfats):
            vol.write((vol.rsvd + copy * vol.fat_secs) * vol.bps + 2 * c,
                      struct.pack("<H", n))
label(1, b"T\x01IL1", 20, 0)   # before the marker at slot 2
label(3, b"T\x01IL2", 21, 0)
label(4, b"T\x01IL3", 23, 0)
chain(20); chain(21, 22); chain(23)
if own:
    label(5, b"O\x01N", 24, 2048)
    chain(24)
PY
}

# root_labels: the root's label entries, one per line, as Python bytes.
root_labels()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" img <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import corrupt
vol = corrupt.Volume(sys.argv[2])
for off, _ in vol.dir_slots(vol.root_clus):
    e = vol.read(off, 32)
    if e[0] not in (0, 0xE5) and e[11] & 0x3F != 0x0F and e[11] & 0x18 == 0x08:
        print(e[:11])
PY
}

@test "fatcheck -r --trim-prealloc: label entries that are not valid, whose chains are all tail, are deleted in one run, past the end marker too" {
	local sha
	label_tails
	run fsck.fat -n img
	[ "$status" -ne 0 ]
	assert_output --partial "is not valid"
	run -4 fatcheck img
	[ "$(grep -c "volume label 'T?IL[123]' (slot [0-9]*) is not valid: it holds a control character; it owns clusters, so it is left for a person$" <<<"$output")" -eq 3 ]
	run -1 fatcheck -r --trim-prealloc img
	[ "$(grep -c "is not valid: it holds a control character (repair: label entry deleted)$" <<<"$output")" -eq 3 ]
	refute_output --partial "left for a person"
	# One run settles them: clean, and a second run writes nothing.
	fsck_clean img
	run -0 fatcheck img
	[ "${#lines[@]}" -eq 1 ]
	sha=$(img_sha img)
	run -0 fatcheck -r --trim-prealloc img
	[ "$(img_sha img)" = "$sha" ]
	[ -z "$(root_labels)" ]
	for c in 20 21 22 23; do
		[ "$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" get img $c)" -eq 0 ]
	done
	cmp f.bin <(mtype -i img ::F.BIN)
}

@test "fatcheck -r: a label entry that owns clusters is left for a person; each later repair writes nothing" {
	local sha opt
	for opt in --trim-prealloc ""; do
		label_tails own
		# shellcheck disable=SC2086
		run -4 fatcheck -r $opt img
		assert_line --partial "(repair: made visible: the end markers before it became deleted slots)"
		assert_line --partial "volume label 'O?N' (slot 5) is not valid: it holds a control character; it owns clusters, so it is left for a person"
		# Converged: the finding stays, and nothing is written again.
		sha=$(img_sha img)
		# shellcheck disable=SC2086
		run -4 fatcheck -r $opt img
		[ "$(img_sha img)" = "$sha" ]
		refute_output --partial "(repair:"
		assert_line --partial "volume label 'O?N' (slot 5) is not valid: it holds a control character; it owns clusters, so it is left for a person"
		# Without --trim-prealloc the labels' tails stay, and so do they.
		[ "$(grep -c "is not valid" <<<"$output")" -eq "$([[ -n $opt ]] && echo 1 || echo 4)" ]
		# fsck.fat still calls that label not valid, as fatcheck does.
		run fsck.fat -n img
		[ "$status" -ne 0 ]
		assert_output --partial "is not valid"
		[[ $(root_labels) == *"O\\x01N"* ]]
		cmp f.bin <(mtype -i img ::F.BIN)
	done
}

@test "fatcheck -r: a long-name slot whose first-cluster or type field is not 0 is an error; -r clears it and keeps the name" {
	local t w
	for t in 12 16 32; do
		for w in start type; do
			use $t
			damage lfn-field "$LONG" $w
			run fsck.fat -n img
			assert_output --regexp "(Start cluster|Reserved) field in VFAT long filename slot is not 0"
			run -4 fatcheck img
			assert_line "error: $LONG: 1 of its 3 long-name slots holds a type or first-cluster field (bytes 12, 26-27) that is not 0"
			run -1 fatcheck -r img
			assert_line --partial "(repair: fields set to 0 (the long name kept))"
			settled
			mdir_has / '^ALONGF~1 TXT +24 .* A long file name for testing\.txt$'
			files_intact
		done
	done
}

# set_attr NAME11 BYTE: the attribute byte of the short slot NAME11.
set_attr()
{
	local off
	off=$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot img "$1") &&
		printf "$2" | dd of=img bs=1 seek=$((off + 11)) conv=notrunc status=none
}

# Every damage this file repairs, in one image.
all_damage()
{
	# Attribute bytes that say what the data is not: a directory over a
	# file's data, a volume label in a subdirectory (both stay files).
	set_attr 'LOWER   TXT' '\x10'
	set_attr 'LEAF    TXT' '\x08'
	damage bad-char "$LONG"
	damage bad-char /README.TXT
	damage dup /DATA/rand-512.bin /DATA/rand-4096.bin
	damage dup /DATA/rand-0.bin /DATA/rand-1.bin
	damage lfn-sum "/name with spaces.dat"
	damage dot-name /EMPTYDIR
	damage dot-attr /deep1/deep2 ..
	damage no-dotdot /deep1
	damage lower-short /DATA/rand-100000.bin
	damage lfn-field "/Mixed Case Dir"
	damage lfn-field "/Grüße.txt" type
	damage root-label 'A*B' same
}

# after_all: what all_damage leaves once repaired, however many runs it took.
after_all()
{
	settled
	mdir_has / '^ALONGF~1 TXT .* A long file name for testing\.txt$'
	mdir_has / '^NAMEWI~1 DAT .* name with spaces\.dat$'
	mdir_has /DATA '^RAND-4~1 BIN +4096 .* rand-4096\.bin$'
	mdir_has / ' Grüße\.txt$'
	mdir_has / ' Mixed Case Dir$'
	same_data /FSCK0000.REN /README.TXT
	same_data /DATA/FSCK0000.REN /DATA/rand-1.bin
	files_intact /README.TXT /DATA/rand-1.bin
	label_is ""
}

# The label mended rather than removed, with the boot sector's.
label_damage()
{
	damage root-label lowlab same
	damage lfn-field "$LONG"
}

after_label()
{
	settled
	mdir_has / '^ALONGF~1 TXT .* A long file name for testing\.txt$'
	files_intact
	label_is LOWLAB
}

# damaged 12|16|32 all|label: ./img (and img.sums) as `use T; SET_damage`
# leaves them, damaged once per test and copied after: the damage is the
# same every time, and a dozen corrupt.py runs per write number cost more
# than the run under test.
damaged()
{
	if [[ -f damaged$1-$2.img ]]; then
		cp "damaged$1-$2.img" img &&
			cp "$BATS_FILE_TMPDIR/base$1.img.sums" img.sums
	else
		use "$1" && "$2_damage" && cp img "damaged$1-$2.img"
	fi
}

@test "fatcheck -r: a crash after any write of these repairs, then another -r, loses no name and no data" {
	local t n crashed set
	for t in 12 16 32; do
		for set in all label; do
			for n in $(seq 1 40); do
				damaged $t $set
				run env FK_CRASH_AFTER_WRITE=$n fatcheck -r img
				# 99: the crash (a -DFK_FAULT_INJECTION build);
				# else done
				[[ $status -eq 99 || $status -eq 1 ]]
				crashed=$status
				run fatcheck -r img
				[[ $status -eq 0 || $status -eq 1 ]]
				# judged once per distinct image (once_for)
				once_for img img.sums -- "after_$set"
				[ "$crashed" -eq 99 ] || break
			done
		done
	done
}

@test "fatcheck -r: a failed write of these repairs is exit 8; a later -r finishes them" {
	local t n set
	for t in 12 16 32; do
		for set in all label; do
			for n in 1 2 3 5 8 13; do
				damaged $t $set
				run --separate-stderr env FK_FAIL_WRITE=$n fatcheck -r img
				[ "$status" -eq 1 ] && break # no fault injection, or done
				[ "$status" -eq 12 ]
				[[ $stderr == "fatcheck: img: Input/output error" ]]
				run -1 fatcheck -r img
				once_for img img.sums -- "after_$set"
			done
		done
	done
}

@test "fatcheck -r: 4,000 entries of one name are renamed FSCK0000.REN to FSCK3998.REN, each number tried once (a fuzz input took minutes)" {
	# A FAT16 root of 4,096 entries, 4,000 of them "A.TXT" (empty files):
	# each later one is renamed to the next free FSCKnnnn.REN.  Found by
	# fuzz_check: every rename tried FSCK0000 upwards against every name
	# given so far, cubic in the renames.
	mkfs.fat -F 16 -r 4096 -C img 32768 >/dev/null
	eval "$(fat_geometry img)"
	"$FK_PYTHON" - img $(((rsvd_secs + nfats * fat_secs) * bytes_per_sec)) <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]))
    f.write((b"A       TXT" + bytes(21)) * 4000)
PY
	# grep, not assert_line: its loop over 4,000 lines ran 5 s under
	# bats' trap on every command
	run -4 fatcheck img
	grep -qF "/A.TXT: another entry of this directory" <<<"$output"
	run -1 timeout 60 fatcheck -r img
	grep -qF "(repair: this later entry renamed to 'FSCK3998.REN')" <<<"$output"
	run -0 fatcheck -n img
	run -0 fsck.fat -n img
	run -0 mdir -i img ::/
	grep -qE "^FSCK3998 REN +0 " <<<"$output"
	if grep -E "^FSCK3999 " <<<"$output"; then return 1; fi
}
