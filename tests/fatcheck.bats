#!/usr/bin/env bats
# fatcheck.bats: fatcheck held to its issue and to its man page.  The damage
# comes from helpers/corrupt.py, which shares no code with fatkit; the
# judges are fsck.fat -n (dosfstools 4.2), mtools and sha256sum.
#
# For each defect fsck.fat calls damage: fsck.fat -n flags it (so the case
# is real), fatcheck exits 4 naming the path, fatcheck -r exits 1, and then
# fsck.fat -n is clean, fatcheck is clean and every other file reads back
# byte-identical.  Defects fsck.fat 4.2 accepts are warnings (exit 0) that
# -r still mends.  Names -r gives back (renames, re-attached long names,
# rebuilt "." and "..") have their own file, fatcheck-repair.bats.

load helpers/common

CORRUPT=$FATKIT_HELPERS/corrupt.py
BIG=/DATA/rand-100000.bin
SMALL=/DATA/rand-4096.bin
LONG="/A long file name for testing.txt"

# Populated images, one per FAT type, made once and copied by each test.
setup_file()
{
	cd "$BATS_FILE_TMPDIR" || return 1
	mkimg fat12 4M base12.img && populate base12.img &&
		mkimg fat16 16M base16.img && populate base16.img &&
		mkimg fat32 40M base32.img && populate base32.img
}

teardown()
{
	if [[ -n ${HOLDER:-} ]]; then
		kill "$HOLDER" 2>/dev/null || true
		wait "$HOLDER" 2>/dev/null || true
		HOLDER=
	fi
	if [[ -n ${ROMNT:-} ]]; then
		umount "$ROMNT" 2>/dev/null || true
		ROMNT=
	fi
	if [[ -n ${LOOPDEV:-} ]]; then
		losetup -d "$LOOPDEV" 2>/dev/null || true
		LOOPDEV=
	fi
}

# loop_dev [-r] FILE: LOOPDEV becomes a loop device over FILE (read-only
# with -r), or the test is skipped where loop devices cannot be made.
loop_dev()
{
	((EUID == 0)) || skip "needs root for losetup"
	LOOPDEV=$(losetup -f --show "$@" 2>/dev/null) && [[ -b $LOOPDEV ]] ||
		skip "losetup -f --show does not work here"
}

# use 12|16|32: ./img (and img.sums) become a copy of that populated image.
use()
{
	cp "$BATS_FILE_TMPDIR/base$1.img" img &&
		cp "$BATS_FILE_TMPDIR/base$1.img.sums" img.sums
	DAMAGED=()
}

# damage CASE [ARGS...]: corrupt ./img; DAMAGED holds the paths corrupt.py
# names ("-" for the volume itself).
damage()
{
	local out
	out=$(py_run "$CORRUPT" img "$@") || return 1
	mapfile -t DAMAGED <<<"$out"
}

# fsck_flags: fsck.fat -n must find something wrong with ./img.
fsck_flags()
{
	local out
	if out=$(fsck.fat -n img 2>&1 </dev/null); then
		echo "fsck.fat -n finds nothing wrong:" >&2
		echo "$out" >&2
		return 1
	fi
}

# names SEV: $output has a SEV line about one of the damaged paths (the
# image itself for "-"), matched ignoring case as FAT names are.
names()
{
	local want
	for want in "${DAMAGED[@]}"; do
		[[ $want == - ]] && want=img
		grep -qiF -- "$1: $want: " <<<"$output" && return 0
	done
	echo "no '$1: ${DAMAGED[*]}: ' line in:" >&2
	echo "$output" >&2
	return 1
}

# sums_intact: every file of img.sums that corrupt.py did not name (nor
# lies under a directory it named) reads back identical, copied out in one
# mcopy -s.
sums_intact()
{
	local tree=$BATS_TEST_TMPDIR/tree line path d skip
	rm -rf "$tree" && mkdir "$tree" || return 1
	mcopy -s -n -i img '::/*' "$tree/" </dev/null || return 1
	while IFS= read -r line; do
		path=${line#*  }
		skip=0
		for d in "${DAMAGED[@]}"; do
			[[ ${path,,} == "${d,,}" || ${path,,} == "${d,,}"/* ]] &&
				skip=1
		done
		((skip)) || echo "$line"
	done <img.sums | tree_sums_ok "$tree" sums_intact
}

# error_case TYPE CASE [ARGS...]: the full round for a defect fsck.fat
# calls damage and -r can mend.
error_case()
{
	local type=$1
	shift
	use "$type"
	damage "$@"
	fsck_flags
	local before
	before=$(img_sha img)
	run -4 fatcheck img
	names error
	[ "$(img_sha img)" = "$before" ] # read-only by default
	run -1 fatcheck -r img
	names error
	[[ $output == *"(repair: "* ]]
	[[ $output == *" left)"* ]]
	fsck_clean img
	run -0 fatcheck img
	[ "${#lines[@]}" -eq 1 ] # the summary alone
	# One repair settles it: a second writes nothing.
	before=$(img_sha img)
	run -0 fatcheck -r img
	[ "$(img_sha img)" = "$before" ]
	sums_intact
	fat_copies_equal img
}

# warning_case TYPE CASE [ARGS...]: a defect fsck.fat 4.2 lets pass; a
# warning (exit 0) that -r mends all the same (exit 1: it wrote).
warning_case()
{
	local type=$1
	shift
	use "$type"
	damage "$@"
	fsck_clean img
	run -0 fatcheck img
	names warning
	run -1 fatcheck -r img
	[[ $output == *"(repair: "* ]]
	[[ $output == *"; 1 fix applied" ]]
	run -0 fatcheck img
	[ "${#lines[@]}" -eq 1 ]
	fsck_clean img
	sums_intact
}

# ---- clean images ---------------------------------------------------------

# FAT SECSIZE CLUSSIZE NFATS SIZE, as in fatls.bats and fatprealloc.bats.
GEOMS=(
	"12 512 512 2 2M"
	"12 4096 4K 1 12M"
	"12 512 32K 2 64M"
	"16 512 2K 2 16M"
	"16 4096 8K 1 64M"
	"16 4096 32K 2 160M"
	"32 512 512 2 40M"
	"32 4096 4K 2 300M"
	"32 512 1K 1 80M"
	"32 4096 32K 2 2100M"
)

@test "fatcheck: clean images of every geometry, empty and populated, exit 0 with the summary alone" {
	local g fat sec clus nfats size
	for g in "${GEOMS[@]}"; do
		read -r fat sec clus nfats size <<<"$g"
		mkimg_geom "$fat" "$sec" "$clus" "$nfats" "$size" img
		run -0 --separate-stderr fatcheck img
		[ "${#lines[@]}" -eq 1 ]
		[[ ${lines[0]} == "img: FAT$fat, 0 files, 0 directories, "*"; 0 errors, 0 warnings, 0 notes" ]]
		[ -z "$stderr" ]
		populate img
		run -0 --separate-stderr fatcheck img
		[ "${#lines[@]}" -eq 1 ]
		[[ ${lines[0]} == "img: FAT$fat, 15 files, 9 directories, "*"; 0 errors, 0 warnings, 0 notes" ]]
		# -r on a clean volume writes nothing (no write, no new mtime;
		# hashing a 2 GiB image twice would take longer than the test).
		local before
		before=$(stat -c '%y %s' img)
		sleep 0.01
		run -0 fatcheck -r img
		[ "$(stat -c '%y %s' img)" = "$before" ]
	done
}

@test "fatcheck: a labelled volume (mlabel) is clean; 3 FAT copies are refused, as fsck.fat refuses them, and still read" {
	mkimg fat16 32M img -n MYLABEL
	populate img
	run -0 fatcheck img
	[ "${#lines[@]}" -eq 1 ]
	# mkfs.fat -f 3 makes them; fsck.fat gives up on them, and nothing
	# tells a third copy from a changed byte 16 that makes the root one.
	mkimg_geom 16 512 2K 3 16M img
	populate img
	run fsck.fat -n img
	[[ $status -ne 0 && $output == *"only 1 or 2 FATs are supported"* ]]
	run -8 --separate-stderr fatcheck img
	[[ $stderr == "fatcheck: img: implausible geometry: 3 FAT copies (boot sector byte 16), not 1 or 2 (a changed byte cannot be told from more copies); "* ]]
	diff <(fatls -R img | sort) \
		<(mdir -/ -b -i img ::/ | sed 's|^::||; s|/$||' | sort)
}

@test "fatcheck: -P 1, IMAGE@@1M and automatic choice on a partitioned image; a repair there" {
	mkpartimg disk.img 40M fat16
	populate disk.img@@1M
	run -0 fatcheck disk.img@@1M
	[ "${#lines[@]}" -eq 1 ]
	run -0 fatcheck -P 1 disk.img
	run -0 fatcheck disk.img
	"$FK_PYTHON" "$CORRUPT" disk.img@@1M lost
	run -4 fatcheck -P 1 disk.img
	[[ $output == *"error: disk.img: 3 lost clusters"* ]]
	run -1 fatcheck -r disk.img@@1M
	run -0 fatcheck -P 1 disk.img
	dd if=disk.img of=part.img bs=1M skip=1 status=none
	fsck_clean part.img
}

# ---- defects fsck.fat calls damage, which -r mends ------------------------

@test "fatcheck: FAT copies differ (FAT12/16/32)" {
	local t
	for t in 12 16 32; do error_case $t fat-copy; done
}

# dirty_case TYPE CASE: a volume whose only finding is a dirty flag, which
# fsck.fat -n reports ("Dirty bit is set") and fatcheck calls a warning
# (exit 0), as exFAT's VolumeDirty: the card was not cleanly removed, and
# nothing else is wrong.  -r clears it (exit 1, a change written, the
# FAT32 backup boot sector too), after which fsck.fat -n is clean and a
# second -r writes nothing.
dirty_case()
{
	local before
	use "$1"
	damage "$2"
	fsck_flags
	[[ $(fsck.fat -n img 2>&1 </dev/null) == *"Dirty bit is set"* ]]
	before=$(img_sha img)
	run -0 --separate-stderr fatcheck img
	names warning
	# One warning and the summary: on FAT32 no second finding that the
	# backup boot sector differs (at offset 65, the flag's byte).
	[ "${#lines[@]}" -eq 2 ]
	[[ ${lines[0]} == "warning: img: the volume was not cleanly removed ("* ]]
	[[ ${lines[1]} == *"; 0 errors, 1 warning, 0 notes" ]]
	[ "$(img_sha img)" = "$before" ]
	run -0 --separate-stderr fatcheck --json img
	"$FK_PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
assert [(f["code"], f["severity"]) for f in d["findings"]] == \
    [("dirty", "warning")], d["findings"]
assert d["summary"]["exit_status"] == 0, d["summary"]' "$output"
	run -1 fatcheck -r img
	[[ $output == *"(repair: "* ]]
	[[ $output == *"; 1 fix applied" ]]
	fsck_clean img
	# The boot sector and its FAT32 backup are identical again.
	"$FK_PYTHON" -c '
import struct, sys
b = open(sys.argv[1], "rb").read()
bps = struct.unpack_from("<H", b, 11)[0]
if struct.unpack_from("<H", b, 22)[0] == 0:
    bk = struct.unpack_from("<H", b, 50)[0]
    assert b[:512] == b[bk * bps:bk * bps + 512], "backup differs"
' img
	run -0 fatcheck img
	[ "${#lines[@]}" -eq 1 ]
	before=$(img_sha img)
	run -0 fatcheck -r img
	[ "$(img_sha img)" = "$before" ]
	sums_intact
	fat_copies_equal img
}

@test "fatcheck: dirty flag in the boot sector alone is one warning, exit 0; -r clears it (FAT12/16/32)" {
	local t
	for t in 12 16 32; do dirty_case $t boot-dirty; done
}

@test "fatcheck: clean-shutdown bit of FAT[1] clear alone is one warning, exit 0; -r sets it (FAT16/32)" {
	local t
	for t in 16 32; do dirty_case $t fat1-dirty; done
}

@test "fatcheck: a dirty volume with real damage (lost clusters, a cross-link) still fails, exit 4; -r mends both" {
	local t
	for t in 12 16 32; do
		use $t
		damage boot-dirty
		[ $t = 12 ] || damage fat1-dirty
		damage lost
		run -4 --separate-stderr fatcheck img
		assert_line --partial "warning: img: the volume was not cleanly removed (dirty flag"
		[ $t = 12 ] ||
			assert_line --partial "warning: img: the volume was not cleanly removed (clean-shutdown bit"
		assert_line --partial "error: img: 3 lost clusters"
		refute_output --partial "backup boot sector"
		run -1 fatcheck -r img
		fsck_clean img
		run -0 fatcheck img
		[ "${#lines[@]}" -eq 1 ]
		use $t
		damage boot-dirty
		damage cross "$BIG" "$SMALL"
		run -4 --separate-stderr fatcheck img
		assert_line --partial "warning: img: the volume was not cleanly removed"
		[[ $output == *"error: "* ]]
		run -1 fatcheck -r img
		fsck_clean img
		run -0 fatcheck img
	done
}

@test "fatcheck: lost clusters are counted, grouped into chains and freed" {
	local t
	for t in 12 16 32; do
		error_case $t lost
		[ $t != 32 ] || [ "$(fsinfo_free img)" = "$(count_free_clusters img)" ]
		use $t
		damage lost
		run -4 fatcheck img
		[[ $output == *"error: img: 3 lost clusters ("*" in 1 chain, from "*" (3 clusters)"* ]]
	done
}

@test "fatcheck: FSInfo signatures and free count (FAT32)" {
	error_case 32 fsinfo-sig
	[ "$(fsinfo_free img)" = "$(count_free_clusters img)" ]
	error_case 32 fsinfo-free
	[ "$(fsinfo_free img)" = "$(count_free_clusters img)" ]
}

@test "fatcheck: boot sector label differs from the root's" {
	local t
	for t in 12 16 32; do error_case $t label; done
}

@test "fatcheck: first cluster out of range" {
	local t
	for t in 12 16 32; do error_case $t start-range "$BIG"; done
	use 16
	damage start-range "$BIG"
	run -4 fatcheck img
	[[ $output == *"error: $BIG: first cluster "*" is out of range (2 to "*")"* ]]
}

@test "fatcheck: a link to a free cluster" {
	local t
	for t in 12 16 32; do error_case $t link-free "$BIG"; done
}

@test "fatcheck: a link to a cluster marked bad" {
	local t
	for t in 12 16 32; do error_case $t link-bad "$BIG"; done
}

@test "fatcheck: a link holding a reserved value" {
	local t
	for t in 12 16 32; do error_case $t link-reserved "$BIG"; done
}

@test "fatcheck: a link past the last cluster" {
	local t
	for t in 12 16 32; do error_case $t link-range "$BIG"; done
}

@test "fatcheck: a looping chain is cut where it loops" {
	local t
	for t in 12 16 32; do
		error_case $t loop "$BIG"
		# the file keeps every cluster it had
		[ "$(mtype -i img "::$BIG" | sha256sum)" = \
			"$(grep -F "  $BIG" img.sums | cut -c1-64)  -" ]
	done
}

@test "fatcheck: a cross-link names both paths; the later owner loses the shared tail" {
	local t
	for t in 12 16 32; do
		error_case $t cross "$BIG" "$SMALL"
		use $t
		damage cross "$BIG" "$SMALL"
		run -4 fatcheck img
		[[ $output == *"error: $SMALL: shares cluster "*" with $BIG (cross-linked)"* ]]
		run -1 fatcheck -r img
		# The first owner keeps its data; the second its own clusters.
		DAMAGED=("$SMALL")
		sums_intact
		[ "$(mtype -i img "::$SMALL" | sha256sum)" = \
			"$(grep -F "  $SMALL" img.sums | cut -c1-64)  -" ]
	done
}

@test "fatcheck: a chain too short for the size: the size is cut to the chain" {
	local t
	for t in 12 16 32; do error_case $t short /README.TXT; done
}

@test "fatcheck: '.' and '..' pointing elsewhere, or '.' missing" {
	local t
	for t in 12 16 32; do
		error_case $t dot /EMPTYDIR
		error_case $t dotdot /deep1/deep2
		error_case $t no-dot /EMPTYDIR
	done
}

@test "fatcheck -r: an entry in the '..' slot that is removed makes room for '..' in the same run" {
	local t
	# One run must leave nothing that a second would repair (found by
	# tests/fuzz/fuzz_repair).
	for t in 12 16 32; do error_case $t dotdot-renamed /deep1/deep2; done
}

@test "fatcheck: a directory with a size" {
	local t
	for t in 12 16 32; do error_case $t dir-size /EMPTYDIR; done
}

@test "fatcheck: directory loops (an ancestor's chain, or the directory's own)" {
	local t
	for t in 12 16 32; do
		error_case $t dir-loop /deep1/deep2/deep3 /deep1
		error_case $t deep-loop /deep1/deep2
	done
	use 16
	damage dir-loop /deep1/deep2/deep3 /deep1
	run -4 fatcheck img
	[[ $output == *"error: /deep1/deep2/deep3: directory loop: shares cluster "*" with /deep1, which contains it"* ]]
}

# ---- verdicts: every kind of damage, judged by fsck.fat -n -----------------

# Each kind of damage corrupt.py makes: "CASE;ARG...|FAT types|verdict|what
# fatcheck's line says|fsck.fat's words".  Verdicts:
#   refused  fsck.fat -n gives up on the volume: fatcheck exits 8 with one
#            line (and -r writes nothing: see fatcheck-repair.bats)
#   error    fsck.fat -n reports damage: fatcheck exits 4 with an error line
#   warning  fsck.fat -n says nothing: fatcheck exits 0 with a warning line
#   note     as warning, with a note line
# and, where fsck.fat's words are given, the exceptions the man page
# defends: fsck.fat -n reports them in those words, fatcheck keeps a
# warning or note (exit 0).
VERDICTS=(
	"fat-copy|12 16 32|error|FAT copy 2 differs from copy 1"
	"fat0-zero;0|12 16 32|error|FAT[0] of copy 1 is 0x0, without the mark"
	"fat0-high;0|12 16 32|error|without the mark fsck.fat looks for"
	"fat0-zero;1|12 16 32|error|FAT copy 2 differs from copy 1"
	"fat0-zero|12 16 32|refused|implausible geometry: no FAT copy begins with a media mark"
	"fat0-high|12 16 32|refused|implausible geometry: no FAT copy begins with a media mark"
	"nfats;3|12 16 32|refused|implausible geometry: 3 FAT copies (boot sector byte 16)"
	"root-ents;513|12 16|refused|implausible geometry: a root directory of 513 entries"
	"media|12 16 32|warning|FAT[0] is 0x"
	"boot-dirty|12 16 32|warning|dirty flag in the boot sector|Dirty bit is set"
	"fat1-dirty|16 32|warning|clean-shutdown bit of FAT[1] is clear|Dirty bit is set"
	"fat1-error|16 32|warning|FAT[1] records a disk I/O error"
	"fat1-value|12 16 32|warning|not an end-of-chain mark"
	"no-backup|32|error|FAT32 volume without a backup boot sector"
	"backup-boot|32|warning|backup boot sector (sector 6) differs|This is mostly harmless"
	"backup-outside|32|warning|reserved sectors: not used|This is mostly harmless"
	"fsinfo-sig|32|error|FSInfo sector 1 has bad signatures"
	"fsinfo-free|32|error|FSInfo free count is"
	"fsinfo-unset|32|note|FSInfo free count is not set|Free cluster summary uninitialized"
	"fsinfo-next|32|warning|FSInfo next-free hint"
	"label|12 16 32|error|"
	"root-label;A*B|12 16 32|error|is not valid: it holds a character labels may not hold"
	"root-label;ab\\x01c;same|12 16 32|error|is not valid: it holds a control character"
	"root-label;lowlab;same|12 16 32|warning|holds lower-case letters"
	"lfn-field;$LONG|12 16 32|error|type or first-cluster field"
	"lfn-field;$LONG;type|12 16 32|error|type or first-cluster field"
	"lost|12 16 32|error|lost cluster"
	"start-range;$BIG|12 16 32|error|"
	"link-free;$BIG|12 16 32|error|"
	"link-bad;$BIG|12 16 32|error|"
	"link-reserved;$BIG|12 16 32|error|"
	"link-range;$BIG|12 16 32|error|"
	"loop;$BIG|12 16 32|error|"
	"cross;$BIG;$SMALL|12 16 32|error|"
	"short;/README.TXT|12 16 32|error|"
	"tail;/README.TXT;3|12 16 32|note|preallocated|cluster chain length is"
	"dot;/EMPTYDIR|12 16 32|error|'.' points to cluster"
	"dotdot;/deep1/deep2|12 16 32|error|'..' points to cluster"
	"no-dot;/EMPTYDIR|12 16 32|error|'.' entry is missing"
	"no-dotdot;/EMPTYDIR|12 16 32|error|'..' entry is missing"
	"dot-attr;/EMPTYDIR|12 16 32|error|'.' entry in slot 0 is not a directory"
	"dot-attr;/deep1/deep2;..|12 16 32|error|'..' entry in slot 1 is not a directory"
	"dot-name;/EMPTYDIR|12 16 32|error|'.' entry is damaged"
	"dot-name;/deep1/deep2;..|12 16 32|error|'..' entry is damaged"
	"dot-swap;/deep1/deep2|12 16 32|error|'..' entry in slot 0"
	"dot-entries;/DATA|12 16 32|error|entry in slots 0-2, where '.' and '..' belong"
	"dots-removed;/deep1|12 16 32|error|entry in slot 0, where '.' belongs"
	"dir-size;/EMPTYDIR|12 16 32|error|"
	"dir-loop;/deep1/deep2/deep3;/deep1|12 16 32|error|directory loop"
	"dup;/DATA/rand-0.bin;/DATA/rand-1.bin|12 16 32|error|has the same name"
	"bad-char;/README.TXT|12 16 32|error|holds characters FAT does not allow"
	"lead-space;/README.TXT|12 16 32|error|holds characters FAT does not allow"
	"lower-name;/README.TXT|12 16 32|warning|is not a valid 8.3 name"
	"lower-short;/README.TXT|12 16 32|warning|is not a valid 8.3 name"
	"punct-name;/README.TXT|12 16 32|warning|is not a valid 8.3 name"
	"orphan-lfn;$LONG|12 16 32|error|belong to no entry (a free slot follows)"
	"lfn-sum;$LONG|12 16 32|error|belong to no entry (the next entry does not match)"
	"lfn-seq;$LONG|12 16 32|error|belong to no entry (out of sequence)"
	"lfn-unfinished;$LONG|12 16 32|error|belong to no entry (the next entry does not match)"
	"lfn-empty;$LONG|12 16 32|warning|its long name is empty"
)
# Not in the table: an entry past the end marker.  fsck.fat reads on and
# sees it, and says nothing; to Windows and mtools it is not there, and
# fatcheck calls that an error (see its own tests).

# fsck_reports: does fsck.fat -n report damage in ./img?  It exits 1 for
# what it would change, and 0 for what it reports but leaves for a person
# ("Not auto-correcting this"), so any line besides its banner and its
# summary is a report.  FSCK_OUT holds what it said.
fsck_reports()
{
	local rc=0
	FSCK_OUT=$(fsck.fat -n img 2>&1 </dev/null) || rc=$?
	((rc != 0)) ||
		grep -qvE '^(fsck\.fat [0-9.]+ \(.*\)|img: [0-9]+ files, [0-9]+/[0-9]+ clusters)$' \
			<<<"$FSCK_OUT"
}

@test "fatcheck: every verdict agrees with fsck.fat -n, on FAT12, FAT16 and FAT32" {
	local row spec types verdict what words t fsck_says bad=0
	local -a args
	for row in "${VERDICTS[@]}"; do
		IFS='|' read -r spec types verdict what words <<<"$row"
		IFS=';' read -ra args <<<"$spec"
		for t in $types; do
			use "$t"
			damage "${args[@]}"
			fsck_says=nothing
			fsck_reports && fsck_says=damage
			run fatcheck img
			if [[ $verdict == refused ]]; then
				[[ $fsck_says == damage && $status -eq 8 &&
					${#lines[@]} -eq 1 &&
					$output == "fatcheck: img: "*"$what"* ]] &&
					continue
			elif [[ $verdict == error ]]; then
				[[ $fsck_says == damage && $status -eq 4 ]] &&
					grep -qF -- "$what" <<<"$(grep '^error: ' <<<"$output")" &&
					continue
			elif [[ -n $words ]]; then
				[[ $fsck_says == damage && $FSCK_OUT == *"$words"* &&
					$status -eq 0 ]] &&
					grep -qF -- "$what" <<<"$(grep "^$verdict: " <<<"$output")" &&
					continue
			else
				[[ $fsck_says == nothing && $status -eq 0 ]] &&
					grep -qF -- "$what" <<<"$(grep "^$verdict: " <<<"$output")" &&
					continue
			fi
			echo "FAT$t ${args[*]}: want $verdict '$what'; fsck.fat -n says $fsck_says, fatcheck exits $status:" >&2
			echo "$FSCK_OUT" | sed 's/^/  fsck.fat: /' >&2
			echo "$output" | sed 's/^/  fatcheck: /' >&2
			bad=1
		done
	done
	((!bad))
}

# ---- defects fsck.fat 4.2 lets pass: warnings, mended by -r ---------------

@test "fatcheck: FAT[0] media byte (a warning; fsck.fat 4.2 does not look)" {
	local t
	for t in 12 16 32; do warning_case $t media; done
}

@test "fatcheck: backup boot sector and next-free hint (FAT32 warnings)" {
	warning_case 32 backup-boot
	warning_case 32 fsinfo-next
	[ "$(fsinfo_next img)" -ge 2 ]
}

@test "a FAT32 backup boot sector numbered past the reserved sectors is not used: fatls and fatprealloc take the volume, fatcheck -r moves the backup to sector 6" {
	warning_case 32 backup-outside
	[ "$(od -An -tu2 -j50 -N2 img | tr -d ' ')" -eq 6 ]
	cmp <(head -c 512 img) <(tail -c +$((6 * 512 + 1)) img | head -c 512)
	use 32
	damage backup-outside
	cp img before.img
	run -0 fatls -R img
	[[ $output == *README.TXT* ]]
	# The writer reads and writes nothing at that number: the FAT there
	# stays the FAT, and fsck.fat finds the volume whole.
	run -0 fatprealloc img /new.bin 1M
	fsck_clean img
	fat_copies_equal img
	[[ $(mdir -i img ::new.bin) == *" 1048576 "* ]]
}

# clus_len: bytes per cluster of ./img.
clus_len()
{
	local bytes_per_sec sec_per_clus
	eval "$(fat_geometry img | grep -E '^(bytes_per_sec|sec_per_clus)=')"
	echo $((bytes_per_sec * sec_per_clus))
}

# first_clus PATH: the first cluster of PATH in ./img (mshowfat).
first_clus()
{
	mshowfat -i img "::$1" </dev/null | sed -n 's/^[^<]*<\([0-9]*\).*/\1/p'
}

# lose NAME11: the first directory slot of ./img with the short name NAME11
# is deleted (0xE5), so the file's clusters are lost.
lose()
{
	local off
	off=$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot img "$1") &&
		printf '\xe5' | dd of=img bs=1 seek="$off" conv=notrunc status=none
}

# same_prefix FILE VOLPATH: FILE (on the host) begins with the bytes of
# VOLPATH in ./base.img, and the rest of FILE (its cluster slack) is there.
same_prefix()
{
	mcopy -n -i base.img "::$2" want.bin </dev/null &&
		cmp -n "$(stat -c %s want.bin)" want.bin "$1"
}

@test "fatcheck: an entry hidden past the end marker is an error; -r makes it visible to every reader and frees nothing" {
	local t free_before sha_lfn
	for t in 12 16 32; do
		use $t
		damage after-end "$SMALL"
		run -1 mtype -i img "::$SMALL" # mtools stops at the marker
		run -0 fsck.fat -n -l img      # fsck.fat reads on and sees it
		[[ $output == *"rand-4096.bin"* ]]
		free_before=$(count_free_clusters img)
		run -4 fatcheck img
		assert_line --regexp "^error: $SMALL: file 'rand-4096.bin' \(slot [0-9]+\) lies past the directory's end marker \(slot [0-9]+\): Linux and fsck.fat see it, Windows and mtools do not$"
		refute_line --partial "lost cluster"
		run -1 fatcheck -r img
		assert_line --partial "(repair: made visible: the end markers before it became deleted slots)"
		refute_line --partial "freed"
		fsck_clean img
		# Every reader now has the file, whole, and no cluster was freed.
		[ "$(mtype -i img "::$SMALL" | sha256sum | cut -c1-64)" = "$(grep -F "  $SMALL" img.sums | cut -c1-64)" ]
		mdir -i img ::/DATA | grep -q ' rand-4096\.bin$'
		[ "$(count_free_clusters img)" -eq "$free_before" ]
		run -0 fatcheck img
		[ "${#lines[@]}" -eq 1 ]
		sha_lfn=$(img_sha img)
		run -0 fatcheck -r img
		[ "$(img_sha img)" = "$sha_lfn" ]
		DAMAGED=() # nothing is lost: every file reads back
		sums_intact
		fat_copies_equal img
	done
}

@test "fatcheck -r: end markers before several hidden entries, a hidden directory and the root's, all become deleted slots" {
	local t
	for t in 12 16 32; do
		use $t
		damage after-end "$SMALL"
		damage after-end /DATA/rand-0.bin
		damage after-end /README.TXT
		damage after-end /deep1
		run -4 fatcheck img
		[ "$(grep -c "lies past the directory's end marker" <<<"$output")" -eq 4 ]
		run -1 fatcheck -r img
		fsck_clean img
		run -0 fatcheck img
		[ "${#lines[@]}" -eq 1 ]
		# mtools, which stops at a marker, reads the whole tree now.
		DAMAGED=()
		sums_intact
		"$FK_PYTHON" - "$FATKIT_HELPERS" img <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import corrupt
vol = corrupt.Volume(sys.argv[2])
# No 0x00 slot before any live slot, in any directory.
def walk(first):
    slots = [vol.read(off, 32) for off, _ in vol.dir_slots(first)]
    live = [i for i, e in enumerate(slots) if e[0] not in (0, 0xE5)]
    zeros = [i for i, e in enumerate(slots) if e[0] == 0]
    assert not live or not zeros or min(zeros) > max(live), (first, zeros[:3], max(live))
    for e in vol.entries(first):
        if e.is_dir() and e.short not in (".", "..") and not e.attr & 8:
            walk(e.first)
walk(vol.root_clus)
PY
	done
}

@test "fatcheck -r --salvage: hidden entries are kept, not salvaged; only lost chains become /FOUND.000 files" {
	local t
	for t in 12 16 32; do
		damage_for_salvage $t
		run -1 fatcheck -r --salvage img
		[ "$(grep -c "(repair: made visible: " <<<"$output")" -eq 2 ]
		[[ $output == *"(repair: saved as /FOUND.000/FILE0000.CHK)"* ]]
		fsck_clean img
		# Readers that stop at the root's end marker see FOUND.000 and
		# the files that were hidden.
		run -0 mdir -b -i img ::/
		[[ $output == *"::/FOUND.000"* ]]
		[[ $output == *"::/README.TXT"* ]]
		run -0 mdir -b -i img ::/FOUND.000
		[ "$(grep -c CHK <<<"$output")" -eq 1 ]
		run -0 fatcheck img
		[ "${#lines[@]}" -eq 1 ]
		DAMAGED=()
		sums_intact
		fat_copies_equal img
	done
}

# hidden_stale ATTR FIRST: ./img, FAT16 with 2 KiB clusters: /D (cluster
# 2), /E, and /E/F.BIN, 20,000 bytes of ./f.bin in clusters 4-13; past the
# end marker of /D (its slot 2) a stale entry H.BIN with attribute ATTR
# and first cluster FIRST, as a reused directory cluster leaves one.
hidden_stale()
{
	rm -f img
	mkfs.fat -F 16 -S 512 -s 4 -C img 16384 >/dev/null
	mmd -i img ::D ::E
	head -c 20000 /dev/urandom >f.bin
	mcopy -i img f.bin ::E/F.BIN
	run -0 fatls --chain img /E
	assert_line --partial "runs=4-13@"
	local off
	off=$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot img "..         ")
	"$FK_PYTHON" - img "$off" "$1" "$2" <<'PY'
import struct, sys
path, dotdot, attr, first = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 0), int(sys.argv[4])
b = bytearray(open(path, 'rb').read())
o = dotdot + 32  # /D: ".", "..", the end marker (o), then H.BIN
assert b[o] == 0 and b[o + 32] == 0
e = bytearray(32)
e[0:11] = b'H       BIN'
e[11] = attr
struct.pack_into('<H', e, 26, first)
if not attr & 0x10:
    struct.pack_into('<I', e, 28, 8192)
b[o + 32:o + 64] = e
open(path, 'wb').write(b)
PY
}

# hidden_stale_ok: F.BIN is whole, H.BIN gone, the volume clean, and a
# second repair writes nothing.
hidden_stale_ok()
{
	cmp f.bin <(mtype -i img ::E/F.BIN)
	run -0 fatls -l img /E
	assert_line --regexp ' 20000 .*F\.BIN$'
	run -0 mdir -b -i img ::D
	refute_output --partial "H.BIN"
	fsck_clean img
	run -0 fsck.fat -n img
	refute_output --partial "H.BIN"
	run -0 fatcheck img
	[ "${#lines[@]}" -eq 1 ]
	local sha
	sha=$(img_sha img)
	run -0 fatcheck -r img
	[ "$(img_sha img)" = "$sha" ]
}

@test "fatcheck -r: a stale file past an end marker loses a cross-link to a live file walked after it; its slot is deleted" {
	hidden_stale 0x20 6
	run -4 fatcheck img
	assert_line --partial "file 'H.BIN' (slot 3) lies past the directory's end marker (slot 2)"
	run -1 fatcheck -r img
	assert_line --partial "(repair: deleted, not made visible (its clusters are free or another entry's)"
	refute_line --partial "F.BIN"
	hidden_stale_ok
}

@test "fatcheck -r: a stale directory past an end marker is not walked over a live file's clusters; its slot is deleted" {
	hidden_stale 0x10 6
	run -1 fatcheck -r img
	assert_line --partial "directory 'H.BIN' (slot 3) lies past the directory's end marker (slot 2)"
	assert_line --partial "(repair: deleted, not made visible (its clusters are free or another entry's)"
	refute_line --partial "F.BIN"
	hidden_stale_ok
}

@test "fatcheck -r: a hidden directory whose cluster has no '.' is deleted, not walked; its cluster is lost and left as it was with --salvage" {
	local clus2
	hidden_stale 0x10 200
	# Cluster 200: in use, no entry's, holding file data.
	"$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" set img 200 0xffff
	head -c 2048 /dev/urandom >junk.bin
	clus2=$(($("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot img "..         ") - 32))
	dd if=junk.bin of=img bs=2048 seek=$(((clus2 + 198 * 2048) / 2048)) conv=notrunc status=none
	[ $((clus2 % 2048)) -eq 0 ]
	run -1 fatcheck -r --salvage img
	assert_line --partial "(repair: deleted, not made visible (it has no '.' entry: not a directory)"
	fsck_clean img
	# Its cluster was not rewritten as a directory: saved whole.
	run -0 mdir -b -i img ::/FOUND.000
	mcopy -n -i img ::/FOUND.000/FILE0000.CHK saved.bin
	cmp junk.bin saved.bin
	hidden_stale_ok
}

@test "fatcheck -r: a crash or a failed write at any write while deleting a stale hidden entry, then another -r, leaves the live file whole" {
	local attr n status1
	for attr in 0x20 0x10; do
		for n in $(seq 1 20); do
			hidden_stale $attr 6
			run env FK_CRASH_AFTER_WRITE=$n fatcheck -r img
			[[ $status -eq 99 || $status -eq 1 ]]
			status1=$status
			run fatcheck -r img
			[[ $status -eq 0 || $status -eq 1 ]]
			hidden_stale_ok
			hidden_stale $attr 6
			run --separate-stderr env FK_FAIL_WRITE=$n fatcheck -r img
			[[ $status -eq 12 || $status -eq 1 ]]
			run fatcheck -r img
			[[ $status -eq 0 || $status -eq 1 ]]
			hidden_stale_ok
			[ "$status1" -eq 99 ] || break
		done
		((n > 1)) || skip "not a fault-injection build"
	done
}

@test "fatcheck -r --salvage: lost chains, one looping and one cut, become FILE0000.CHK, FILE0001.CHK" {
	local t first last cl runs nclus
	for t in 12 16 32; do
		use $t
		cp img base.img
		cl=$(clus_len)
		first=$(first_clus "$BIG")
		lose "RAND-1~1BIN" # its long-name slots become orphans too
		runs=$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" chain img "$first")
		last=${runs%% end=*}
		last=${last##*-}
		"$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" set img "$last" "$first" # a loop
		first=$(first_clus /README.TXT)
		lose "README  TXT"
		eval "$(fat_geometry img | grep '^nclus=')"
		[ "$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" get img $((nclus + 1)))" = 0 ]
		# a link to a free cluster (the last): the chain is cut there
		"$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" set img "$first" $((nclus + 1))
		run -4 fatcheck img
		[[ $output == *"lost cluster"*" in 2 chains"* ]]
		run -1 fatcheck -r --salvage img
		[[ $output == *"(repair: saved as /FOUND.000/FILE0000.CHK to FILE0001.CHK)"* ]]
		fsck_clean img
		run -0 fatcheck img
		[ "${#lines[@]}" -eq 1 ]
		mcopy -n -i img ::/FOUND.000/FILE0000.CHK f0.bin </dev/null
		mcopy -n -i img ::/FOUND.000/FILE0001.CHK f1.bin </dev/null
		# README's one cluster (its link to a free cluster cut), and the
		# looping chain of the big file, cut where it loops.
		[ "$(stat -c %s f0.bin)" -eq "$cl" ]
		[ "$(stat -c %s f1.bin)" -eq $(((100000 + cl - 1) / cl * cl)) ]
		same_prefix f0.bin /README.TXT
		same_prefix f1.bin "$BIG"
		DAMAGED=("$BIG" /README.TXT)
		sums_intact
		fat_copies_equal img
	done
}

@test "fatcheck -r --salvage: FOUND.000 taken by a file means FOUND.001; an existing FOUND.000 gets the next number" {
	use 16
	cp img base.img
	printf 'not a directory\n' >found.txt
	mcopy -i img found.txt ::/FOUND.000
	damage lost
	run -1 fatcheck -r --salvage img
	[[ $output == *"(repair: saved as /FOUND.001/FILE0000.CHK)"* ]]
	run -0 mtype -i img ::/FOUND.000
	[ "$output" = "not a directory" ]
	damage lost
	run -1 fatcheck -r --salvage img
	[[ $output == *"(repair: saved as /FOUND.001/FILE0001.CHK)"* ]]
	fsck_clean img
	run -0 mdir -b -i img ::/FOUND.001
	[ "${#lines[@]}" -eq 2 ]
	run -0 fatcheck img
	[ "${#lines[@]}" -eq 1 ]
}

@test "fatcheck -r --salvage: with no free cluster for FOUND.000 the lost chains are freed, and the finding says why" {
	local t
	for t in 12 16 32; do
		use $t
		damage lost
		fatprealloc img /FILL.BIN $(($(count_free_clusters img) * $(clus_len)))
		[ "$(count_free_clusters img)" -eq 0 ]
		run -1 fatcheck -r --salvage img
		[[ $output == *"lost cluster"*"(repair: freed, not saved: No space left on device"* ]]
		fsck_clean img
		[ "$(count_free_clusters img)" -eq 3 ]
		run -1 mdir -i img ::/FOUND.000
		run -0 fatcheck img
		[ "${#lines[@]}" -eq 1 ]
	done
}

@test "fatcheck: --salvage needs -r (usage error)" {
	use 16
	run -16 --separate-stderr fatcheck --salvage img
	[ "$stderr" = "fatcheck: --salvage needs --repair" ] ||
		[[ ${stderr_lines[0]} == "fatcheck: --salvage needs --repair"* ]]
}

@test "fatcheck -r: exit 1 whenever it wrote; the summary describes the volume after the repair" {
	local free
	use 32
	damage lost
	run -1 --separate-stderr fatcheck -r --json img
	free=$(count_free_clusters img)
	"$FK_PYTHON" -c '
import json, sys
s = json.loads(sys.argv[1])["summary"]
assert s["exit_status"] == 1 and s["fixed"] == 1 and s["repaired"] is True, s
assert s["free_clusters"] == int(sys.argv[2]), (s, sys.argv[2])
assert s["used_clusters"] + s["free_clusters"] == s["clusters"], s
assert s["lost_clusters"] == 0 and s["lost_chains"] == 0, s
' "$output" "$free"
	use 32
	damage lost
	run -1 fatcheck -r --salvage img
	[[ ${lines[-1]} == "img: FAT32, 16 files, 10 directories, "*"; 1 error (1 fixed, 0 left), 0 warnings, 0 notes; 1 fix applied" ]]
	use 32
	damage fsinfo-next # a warning alone: written, so exit 1
	run -1 fatcheck -r img
	[[ ${lines[-1]} == *"; 1 fix applied" ]]
	run -0 fatcheck -r img # nothing to write: exit 0, no count
	[[ ${lines[-1]} != *"applied"* ]]
}

# ---- every case of the corruption generator --------------------------------

# case_args CASE: ARGS becomes what corrupt.py CASE needs on the populated
# images; RFLAGS the repair options beyond -r.
case_args()
{
	ARGS=()
	RFLAGS=()
	case $1 in
	start-range | short | after-end) ARGS=("$SMALL") ;;
	link-* | loop) ARGS=("$BIG") ;;
	cross) ARGS=("$BIG" "$SMALL") ;;
	tail) ARGS=("$SMALL") RFLAGS=(--trim-prealloc) ;;
	fat-garbage) ARGS=(seed1) RFLAGS=(--trim-prealloc) ;;
	dir-garbage) ARGS=(/DATA seed1) ;;
	dot | dotdot | no-dot | no-dotdot | dot-attr | dot-name | dot-swap | \
		dotdot-renamed | dir-size | deep-loop | endless-dir)
		ARGS=(/EMPTYDIR) ;;
	nest) ARGS=(/EMPTYDIR 300) ;;
	dir-loop) ARGS=(/deep1/deep2 /deep1) ;;
	dot-entries | dots-removed) ARGS=(/DATA) ;;
	dup) ARGS=(/DATA/rand-0.bin /DATA/rand-1.bin) ;;
	lfn-*) ARGS=("$LONG") ;;
	orphan-lfn) ARGS=("$LONG") ;;
	bad-char | lower-name | lower-short | lead-space | punct-name)
		ARGS=(/README.TXT) ;;
	long-is) ARGS=(/README.TXT "$LONG") ;;
	fat0-zero | fat0-high) ARGS=(0) ;; # every copy: BEYOND_REPAIR
	fat-sector-zero) ARGS=(0 "$BIG") ;; # copy 1 under a file
	fat-copies-both) ARGS=(/EMPTYDIR "$BIG") ;;
	root-label) ARGS=('A*B') ;;
	esac
}

# Not damage to fsck.fat, and past what the checker takes by design (a
# directory over 65536 entries, nesting deeper than 256): exit 8, as
# "an endless directory and endless nesting end in one error line" says.
BEYOND_LIMITS=" endless-dir nest "
# Layouts fsck.fat gives up on: exit 8, nothing written (their own tests
# in fatcheck-repair.bats).
BEYOND_REPAIR=" nfats root-ents "

@test "fatcheck -r: every corrupt.py case on FAT12/16/32 is flagged, repaired (exit 1), fsck.fat-clean, then exit 0" {
	local c t bad=0 applied fsck_out
	local -a cases
	read -ra cases <<<"$("$FK_PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import corrupt
print(" ".join(sorted(corrupt.CASES)))' "$FATKIT_HELPERS")"
	[ "${#cases[@]}" -ge 40 ]
	for c in "${cases[@]}"; do
		[[ $BEYOND_LIMITS$BEYOND_REPAIR == *" $c "* ]] && continue
		case_args "$c"
		applied=0
		for t in 12 16 32; do
			use $t
			if ! py_run "$CORRUPT" img "$c" "${ARGS[@]}" \
				>/dev/null 2>corrupt.err; then
				# Only FAT32 has FSInfo and a backup boot sector,
				# only FAT16/32 the flag bits of FAT[1]; the
				# entries fat-copies-both needs in one sector
				# are not so here on FAT32.
				grep -qE 'FAT12 has no|no backup boot|only FAT32|no FSInfo|different FAT sectors' \
					corrupt.err && continue
				echo "$c FAT$t: $(cat corrupt.err)"
				bad=1
				continue
			fi
			applied=1
			run fatcheck img
			if ! ((status == 4 || (status == 0 && ${#lines[@]} > 1))); then
				echo "$c FAT$t: not flagged (exit $status): $output"
				bad=1
				continue
			fi
			run fatcheck -r "${RFLAGS[@]}" img
			if ((status != 1)); then
				echo "$c FAT$t: fatcheck -r ${RFLAGS[*]} exits $status: $output"
				bad=1
				continue
			fi
			if ! fsck_out=$(fsck.fat -n img 2>&1 </dev/null); then
				echo "$c FAT$t: fsck.fat -n after -r: $fsck_out"
				bad=1
				continue
			fi
			run fatcheck img
			if ((status != 0)); then
				echo "$c FAT$t: a second fatcheck exits $status: $output"
				bad=1
			fi
		done
		if ((!applied)); then
			echo "$c applies to no FAT type"
			bad=1
		fi
	done
	((!bad))
}

@test "fatcheck: orphaned long-name slots are one kind of error, whatever orphaned them" {
	local t c why
	for t in 12 16 32; do
		for c in "lfn-sum|the next entry does not match|the long name" \
			"lfn-seq|out of sequence|part of a long name," \
			"orphan-lfn|a free slot follows|the long name"; do
			use $t
			damage "${c%%|*}" "$LONG"
			why=${c#*|}
			run -4 --separate-stderr fatcheck --json img
			"$FK_PYTHON" -c '
import json, sys
f = [x for x in json.load(sys.stdin)["findings"] if x["path"] == "/"]
assert [(x["severity"], x["code"]) for x in f] == [("error", "orphan-lfn")], f
why, spelt = sys.argv[1].split("|")
assert f[0]["message"] == "long-name slots 0-2 belong to no entry (%s): %s %s" % (why, spelt, repr(sys.argv[2][1:])), f
' "$why" "$LONG" <<<"$output"
		done
	done
}

@test "fatcheck: orphans whose only fault is the next entry's checksum are errors -r re-attaches" {
	local t
	for t in 12 16 32; do
		use $t
		damage lfn-sum "$LONG"
		run -4 fatcheck img
		run -1 fatcheck -r img
		[[ $output == *"error: /: long-name slots 0-2 belong to no entry (the next entry does not match): the long name '${LONG#/}' (repair: checksum rewritten: "* ]]
		run -0 fatcheck img
		fsck_clean img
		sums_intact # under the long name again
	done
}

@test "fatcheck -r: long-name slots out of sequence are deleted in one run (fsck.fat leaves them)" {
	local t
	for t in 12 16 32; do
		use $t
		damage lfn-seq "$LONG"
		run -1 fatcheck -r img
		[[ $output == *"error: /: long-name slots 0-2 belong to no entry (out of sequence): part of a long name, '${LONG#/}' (repair: slots deleted)"* ]]
		run -0 fatcheck img
		fsck_clean img
	done
}

@test "fatcheck: FAT[0] without its reserved ones in one copy is an error -r mends from the other" {
	local t
	for t in 12 16 32; do
		error_case $t fat0-zero 0
		error_case $t fat0-high 0
		error_case $t fat0-zero 1
	done
}

@test "fatcheck: a FAT32 volume without a backup boot sector is an error -r mends (sector 6)" {
	error_case 32 no-backup
	cmp <(head -c 512 img) <(dd if=img bs=512 skip=6 count=1 status=none)
	[ "$("$FK_PYTHON" -c 'import sys; b = open("img", "rb").read(52); print(b[50] | b[51] << 8)')" = 6 ]
}

@test "fatcheck: long-name slots a free slot follows are orphans: an error -r deletes" {
	local t
	for t in 12 16 32; do
		use $t
		damage orphan-lfn "$LONG"
		run -4 fatcheck img
		[[ $output == *"error: /: long-name slots "*" belong to no entry (a free slot follows)"* ]]
		error_case $t orphan-lfn "$LONG"
	done
}

# ---- names: errors -r leaves ---------------------------------------------

@test "fatcheck: a duplicate name and a bad short name are errors -r renames" {
	local t
	for t in 12 16 32; do
		use $t
		damage dup /DATA/rand-0.bin /DATA/rand-1.bin
		fsck_flags
		run -4 fatcheck img
		[[ $output == *"error: /DATA/rand-0.bin: another entry of this directory (slot "*") has the same name"* ]]
		run -1 fatcheck -r img
		[[ $output == *"(repair: this later entry renamed to 'FSCK0000.REN')"* ]]
		run -0 fatcheck img
		fsck_clean img
		use $t
		damage bad-char /README.TXT
		fsck_flags
		run -4 fatcheck img
		[[ $output == *"error: /R?ADME.TXT: short name 'R?ADME.TXT' holds characters FAT does not allow"* ]]
		run -1 fatcheck -r img
		[[ $output == *"(repair: renamed to 'FSCK0000.REN')"* ]]
		run -0 fatcheck img
		fsck_clean img
	done
}

@test "fatcheck: two names whose hashes collide are not duplicates" {
	# These two names have one 64-bit FNV-1a hash of their upper-cased
	# UTF-16 (found by a Pollard rho search): a checker that took equal
	# hashes for equal names would call them duplicates.
	local a=QC1I2GQAVMTU6 b=ag97ao23pr7de
	"$FK_PYTHON" -c '
import sys
def fnv(s):
    h = 0xcbf29ce484222325
    for c in s.upper().encode("utf-16-le"):
        h = ((h ^ c) * 0x100000001b3) % 2**64
    return h
a, b = sys.argv[1:]
sys.exit(not (fnv(a) == fnv(b) and a.upper() != b.upper()))' "$a" "$b"
	mkimg fat16 16M img
	printf 'one\n' >"$a"
	printf 'two\n' >"$b"
	mcopy -i img "$a" "$b" ::/
	fsck_clean img
	[ "$(mdir -i img -b ::/ | wc -l)" -eq 2 ] # two names to mtools too
	run -0 --separate-stderr fatcheck img
	[[ $output != *duplicate* && $output != *"same name"* ]]
}

@test "fatcheck: an entry whose short and long names both repeat others' names the earliest of them" {
	# X.TXT; "Long Name One.txt"; and an entry whose short name is X.TXT
	# and whose long name is "Long Name One.txt".  The finding names the
	# earliest entry either name repeats (slot 0, X.TXT), whatever order
	# the two names hash in: D.TXT hashes above the long name, C.TXT
	# below it.
	local x want
	for x in D.TXT:0 C.TXT:0; do
		want=${x#*:}
		x=${x%:*}
		rm -f img
		mkimg fat16 16M img
		printf 'x\n' >"$x"
		printf 'y\n' >"Long Name One.txt"
		printf 'z\n' >"Long Name Onf.txt"
		mcopy -i img "$x" "Long Name One.txt" "Long Name Onf.txt" ::/
		damage dup "/$x" "/Long Name Onf.txt"
		"$FK_PYTHON" -c '
f = open("img", "r+b")
d = f.read()
i = d.find(b"n\x00f\x00")  # "Onf" in the long name: make it "One"
assert i > 0 and d.find(b"n\x00f\x00", i + 1) < 0
f.seek(i + 2)
f.write(b"e")'
		[ "$(mdir -i img -b ::/ | grep -c 'Long Name One.txt')" -eq 2 ]
		run -4 fatcheck img
		[[ $output == *"error: /Long Name One.txt: another entry of this directory (slot $want) has the same name"* ]]
		[ "$(grep -c 'same name' <<<"$output")" -eq 1 ]
	done
}

# ---- preallocated tails -----------------------------------------------------

@test "fatcheck: a kept-size tail is a note (exit 0), an error with --strict; --trim-prealloc frees it" {
	local t before
	for t in 12 16 32; do
		use $t
		damage tail /README.TXT 3
		fsck_flags # fsck.fat calls it damage
		run -0 fatcheck img
		names note
		[[ $output == *"note: /README.TXT: 3 clusters ("*" bytes) are chained past the end of the file (a preallocated tail)"* ]]
		run -4 fatcheck --strict img
		names error
		before=$(img_sha img)
		run -0 fatcheck -r img # a note is not repaired unasked
		[ "$(img_sha img)" = "$before" ]
		[[ $output != *"fix"*"applied"* ]]
		run -1 fatcheck -r --trim-prealloc img # it wrote: exit 1
		[[ $output == *"(repair: tail freed)"* ]]
		[[ $output == *"0 errors, 0 warnings, 1 note; 1 fix applied" ]]
		fsck_clean img
		sums_intact
		if [ $t = 32 ]; then
			[ "$(fsinfo_free img)" = "$(count_free_clusters img)" ]
		fi
		use $t
		damage tail /empty.bin 2 # a size-0 file with clusters
		run -1 fatcheck --strict -r --trim-prealloc img
		fsck_clean img
		run -0 fatls -l --chain img /empty.bin
		[[ $output == *"first=0 "* ]]
	done
}

@test "fatcheck: tails fatprealloc -n leaves are notes; -r --trim-prealloc leaves fsck.fat clean" {
	[ -x "$FATKIT_BUILD/fatprealloc" ] || skip "fatprealloc not built yet"
	use 32
	fatprealloc -n img /README.TXT 64K /new.bin 100K
	run -0 fatcheck img
	[[ $output == *"note: /README.TXT: "* ]]
	[[ $output == *"note: /new.bin: "* ]]
	[[ $output == *"0 errors, 0 warnings, 2 notes"* ]]
	run -4 fatcheck --strict img
	run -1 fatcheck --strict -r --trim-prealloc img
	fsck_clean img
	sums_intact
}

@test "fatcheck: a tail that runs into another file's data loses, not the file" {
	use 16
	# README.TXT's chain continues into rand-100000.bin's second cluster.
	"$FK_PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import corrupt
v = corrupt.Volume("img")
_, a = corrupt.file_chain(v, "/README.TXT", 1)
_, b = corrupt.file_chain(v, "/DATA/rand-100000.bin", 2)
v.put(a[-1], b[1])
' "$FATKIT_HELPERS"
	DAMAGED=(/README.TXT)
	run -4 fatcheck img
	[[ $output == *"error: /README.TXT: shares cluster "*" with /DATA/rand-100000.bin (cross-linked)"* ]]
	run -1 fatcheck -r img
	fsck_clean img
	sums_intact
	[ "$(mtype -i img ::/README.TXT)" = "fatkit test volume" ]
}

# ---- scale --------------------------------------------------------------------

@test "fatcheck: the largest FAT32 mkfs.fat makes (2 TiB, sparse), in memory bounded by the cluster map" {
	local avail nclus rss
	avail=$(df --output=avail -k . | tail -n 1)
	((avail > 2 * 1024 * 1024)) || skip "needs 2 GiB free in $PWD"
	mkfs.fat --invariant -F 32 -C big.img $((2 * 1024 * 1024 * 1024 - 1)) \
		>/dev/null
	"$FK_PYTHON" "$CORRUPT" big.img lost >/dev/null # past the middle
	run -4 --separate-stderr /usr/bin/time -f 'rss=%M' fatcheck big.img
	[[ $output == *"error: big.img: 3 lost clusters"* ]]
	rss=${stderr##*rss=}
	nclus=$(fat_geometry big.img | sed -n 's/^nclus=//p')
	[ "$nclus" -gt 67000000 ]
	# Two bits per cluster, plus a few MiB of buffers; the sanitizers'
	# shadow memory would not fit that bound.
	if ! ldd "$FATKIT_BUILD/fatcheck" | grep -q libasan; then
		((rss <= nclus / 4 / 1024 + 12 * 1024))
	fi
	run -1 fatcheck -r big.img
	run -0 fatcheck big.img
	[ "$(fsinfo_free big.img)" -eq "$((nclus - 1))" ]
	rm -f big.img
}

# ---- output -------------------------------------------------------------------

@test "fatcheck --json: one document with the findings and the summary" {
	use 16
	damage cross "$BIG" "$SMALL"
	run -4 --separate-stderr fatcheck --json img
	"$FK_PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["image"] == "img"
f = d["findings"]
assert [x["code"] for x in f] == ["cross-link", "short-chain"], f
assert f[0]["severity"] == "error" and f[0]["path"] == sys.argv[2]
assert sys.argv[3] in f[0]["message"]
assert f[0]["fixed"] is False and f[0]["repair"].startswith("chain ended")
s = d["summary"]
assert s["errors"] == 2 and s["exit_status"] == 4 and s["fat_type"] == "FAT16"
assert s["files"] == 15 and s["directories"] == 9
' "$output" "$SMALL" "$BIG"
	run -1 fatcheck --json -r img
	"$FK_PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
assert all(x["fixed"] for x in d["findings"])
assert d["summary"]["exit_status"] == 1 and d["summary"]["errors_left"] == 0
' "$output"
	use 16
	damage lost
	run -4 fatcheck --json -v img
	"$FK_PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["findings"][0]["path"] is None and d["findings"][0]["code"] == "lost"
assert len(d["files"]) == 24, len(d["files"])
assert {"path": "/README.TXT", "type": "file", "size": 19, "clusters": 1} in d["files"]
' "$output"
}

@test "fatcheck -v lists every file and directory checked" {
	use 32
	run -0 fatcheck -v img
	[ "${#lines[@]}" -eq 25 ]
	[[ $output == *"checked: /README.TXT (19 bytes, 1 cluster"* ]]
	[[ $output == *"checked: /deep1/deep2/deep3/deep4/deep5/deep6/leaf.txt ("* ]]
	[[ $output == *"checked: /EMPTYDIR/ ("* ]]
}

@test "fatcheck --progress: progress on stderr; none by default when stderr is not a terminal" {
	use 32
	run -0 --separate-stderr fatcheck img
	[ -z "$stderr" ]
	run -0 --separate-stderr fatcheck --progress img
	[[ $stderr == *"fatcheck: FAT 100%"* ]]
	[[ $stderr == *"fatcheck: files "* ]]
	[ "${#lines[@]}" -eq 1 ]
}

# ---- the command line -------------------------------------------------------

@test "fatcheck: -h, -V and usage errors (exit 16, one line)" {
	run -0 fatcheck -h
	[[ $output == *"Usage: fatcheck [OPTIONS] IMAGE"* ]]
	run -0 fatcheck --version
	[ "$output" = "fatcheck (fatkit) 0.1.0" ]
	run -16 --separate-stderr fatcheck
	[ "$stderr" = "fatcheck: no IMAGE given (try 'fatcheck --help')" ]
	run -16 --separate-stderr fatcheck --bogus img
	[ "$stderr" = "fatcheck: unknown option '--bogus' (try 'fatcheck --help')" ]
	run -16 --separate-stderr fatcheck --trim-prealloc img
	[ "$stderr" = "fatcheck: --trim-prealloc needs --repair (try 'fatcheck --help')" ]
	run -16 --separate-stderr fatcheck -P zero img
	run -16 --separate-stderr fatcheck img@@12X
	run -16 --separate-stderr fatcheck a.img b.img
	[ -z "$output" ]
}

@test "fatcheck: a missing image is an operational error (exit 8)" {
	run -8 --separate-stderr fatcheck nosuch.img
	[ "$stderr" = "fatcheck: nosuch.img: No such file or directory" ]
	[ -z "$output" ]
}

@test "fatcheck: a locked image is refused at once (image is in use)" {
	use 16
	flock -x img sleep 30 &
	HOLDER=$!
	sleep 0.3
	run -8 --separate-stderr timeout 10 fatcheck -r img
	[[ $stderr == "fatcheck: img: image is in use by process $HOLDER (flock)" ]]
	run -8 --separate-stderr timeout 10 fatcheck img
}

# ---- fsck(8) option letters -------------------------------------------------

@test "fatcheck: -n only reads; -a, -p and -y repair as -r does" {
	local opt before
	use 16
	damage link-free "$BIG"
	before=$(img_sha img)
	run -4 fatcheck -n img
	names error
	[ "$(img_sha img)" = "$before" ]
	for opt in -a -p -y -r -fy -af; do
		use 16
		damage link-free "$BIG"
		"$FK_PYTHON" "$CORRUPT" img fat-copy >/dev/null
		run -1 fatcheck $opt img
		[[ $output == *"(repair: "* ]]
		fsck_clean img
		run -0 fatcheck -n img
		[ "${#lines[@]}" -eq 1 ]
		sums_intact
	done
}

@test "fatcheck: -n with a repair letter is a usage error; -f alone only reads" {
	local opt before
	use 16
	damage fat-copy
	before=$(img_sha img)
	for opt in -r -a -p -y --repair; do
		run -16 --separate-stderr fatcheck -n $opt img
		[ "$stderr" = "fatcheck: -n cannot be combined with -r, -a, -p or -y (try 'fatcheck --help')" ]
		[ -z "$output" ]
	done
	# e2fsck's "check even if clean": accepted, and never a write.
	run -4 fatcheck -f img
	names error
	[ "$(img_sha img)" = "$before" ]
}

@test "fatcheck: -f does not bypass the image lock or a busy device; --force does the latter" {
	local before
	use 16
	damage fat-copy
	flock -x img sleep 30 &
	HOLDER=$!
	sleep 0.3
	run -8 --separate-stderr timeout 10 fatcheck -r -f img
	[ "$stderr" = "fatcheck: img: image is in use by process $HOLDER (flock)" ]
	run -8 --separate-stderr timeout 10 fatcheck -fy img
	[ "$stderr" = "fatcheck: img: image is in use by process $HOLDER (flock)" ]
	kill "$HOLDER" && wait "$HOLDER" 2>/dev/null || true
	HOLDER=
	# A block device another program holds exclusively (as a mount does).
	loop_dev img
	"$FK_PYTHON" -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)
time.sleep(30)' "$LOOPDEV" &
	HOLDER=$!
	sleep 0.5
	before=$(img_sha img)
	run -8 --separate-stderr timeout 10 fatcheck -r -f "$LOOPDEV"
	[ "$stderr" = "fatcheck: $LOOPDEV: device is busy; refusing to write (use --force)" ]
	run -8 --separate-stderr timeout 10 fatcheck -a -f "$LOOPDEV"
	[ "$(img_sha img)" = "$before" ]
	run -1 timeout 10 fatcheck -r --force "$LOOPDEV"
	[ "$(img_sha img)" != "$before" ]
}

@test "fatcheck -r: a read-only image file is refused up front (device is read-only)" {
	((EUID == 0)) || skip "needs root for a read-only bind mount"
	local before opt
	use 16
	damage fat-copy
	mkdir -p src ro
	mv img src/img
	before=$(img_sha src/img)
	mount --bind src ro 2>/dev/null && ROMNT=$PWD/ro &&
		mount -o remount,ro,bind ro 2>/dev/null ||
		skip "read-only bind mounts do not work here"
	for opt in -r -a -p -y; do
		run -8 --separate-stderr fatcheck $opt ro/img
		[ "$stderr" = "fatcheck: ro/img: device is read-only" ]
		[ -z "$output" ]
	done
	run -4 fatcheck ro/img # reading still works
	[[ $output == "error: ro/img: FAT copy 2 differs"* ]]
	[ "$(img_sha src/img)" = "$before" ]
}

@test "fatcheck -r: a read-only block device is refused up front (BLKROGET)" {
	local before
	use 16
	damage fat-copy
	before=$(img_sha img)
	loop_dev -r img
	[ "$(blockdev --getro "$LOOPDEV")" = 1 ]
	run -8 --separate-stderr fatcheck -r "$LOOPDEV"
	[ "$stderr" = "fatcheck: $LOOPDEV: device is read-only" ]
	[ -z "$output" ]
	run -8 --separate-stderr fatcheck -r --force "$LOOPDEV"
	[ "$stderr" = "fatcheck: $LOOPDEV: device is read-only" ]
	run -4 fatcheck "$LOOPDEV"
	[ "$(img_sha img)" = "$before" ]
}

@test "fatcheck -r: every finding is printed before the first write, so a failed write hides none" {
	local before
	use 16
	damage link-free "$BIG"
	"$FK_PYTHON" "$CORRUPT" img fat-copy >/dev/null
	run -4 fatcheck img
	local found=$output
	before=$(img_sha img)
	# strace fails every write call: the image cannot change.  (LSan
	# cannot run under ptrace.)
	run --separate-stderr env \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -o /dev/null \
		-e trace=pwrite64,pwritev,pwritev2 \
		-e inject=pwrite64,pwritev,pwritev2:error=EIO fatcheck -r img
	[ "$status" -eq 12 ]
	[ "$stderr" = "fatcheck: img: Input/output error" ]
	[ "$(img_sha img)" = "$before" ]
	# Each error line of the read-only check, with what -r was to do.
	local line
	while IFS= read -r line; do
		[[ $line == error:* ]] || continue
		[[ $output == *"$line (repair: "* ]]
	done <<<"$found"
	[[ $output == *"error: "* ]]
}

@test "fatcheck: make install FSCK_LINKS=1 adds fsck.fat, fsck.vfat and fsck.exfat, which run fatcheck" {
	local b=$PWD/b p
	mkdir -p "$b"
	for p in fatls fatprealloc fatcheck; do
		cp "$FATKIT_BUILD/$p" "$b/" || skip "$p not built"
	done
	# -o: install the binaries as they are, building nothing.
	run -0 make -s -C "$BATS_TEST_DIRNAME/.." install BUILD="$b" \
		-o "$b/fatls" -o "$b/fatprealloc" -o "$b/fatcheck" \
		PREFIX="$PWD/plain"
	[ ! -e plain/sbin ]
	run -0 make -s -C "$BATS_TEST_DIRNAME/.." install BUILD="$b" \
		-o "$b/fatls" -o "$b/fatprealloc" -o "$b/fatcheck" \
		PREFIX="$PWD/usr" FSCK_LINKS=1
	for p in fsck.fat fsck.vfat fsck.exfat; do
		[ -L "usr/sbin/$p" ]
		[ "$(readlink -f "usr/sbin/$p")" = "$(readlink -f usr/bin/fatcheck)" ]
	done
	use 16
	damage fat-copy
	run -4 usr/sbin/fsck.vfat -n img
	[[ $output == "error: img: FAT copy 2 differs"* ]]
	run -1 usr/sbin/fsck.fat -a img
	fsck_clean img
	# As fsck.exfat it checks exFAT, and says so (exfatprogs' would not).
	truncate -s 64M ex.img
	mkfs.exfat ex.img >/dev/null
	run -0 usr/sbin/fsck.exfat -n ex.img
	[[ $output == "ex.img: exFAT, "*"; 0 errors, 0 warnings, 0 notes" ]]
}

# ---- hostile images ------------------------------------------------------------

@test "fatcheck: random bytes and an absurd BPB: one error line, exit 8; a truncated image: one error finding, exit 4, and -r refuses it" {
	gen_bytes 1048576 hostile >img
	run -8 --separate-stderr timeout 20 fatcheck img
	[[ $stderr == "fatcheck: img: "* ]]
	[ "$(wc -l <<<"$stderr")" -eq 1 ]
	[ -z "$output" ]
	mkimg fat16 16M img
	printf '\x03\x00' | dd of=img bs=1 seek=11 conv=notrunc status=none
	run -8 --separate-stderr timeout 20 fatcheck img
	[[ $stderr == "fatcheck: img: bad boot sector: bytes per sector 3 "* ]]
	mkimg fat32 64M img
	truncate -s 20M img
	run -4 --separate-stderr timeout 20 fatcheck img
	[ -z "$stderr" ]
	[[ ${lines[0]} == "error: img: image is truncated"* ]]
	local before
	before=$(img_sha img)
	run -8 --separate-stderr timeout 20 fatcheck -r img
	[[ $stderr == "fatcheck: img: image is truncated"* ]]
	[ "$(img_sha img)" = "$before" ]
}

@test "fatcheck: an endless directory and endless nesting end in one error line, exit 8" {
	local t
	for t in 12 16 32; do
		use $t
		damage endless-dir /EMPTYDIR
		run -8 --separate-stderr timeout 20 fatcheck img
		[ "$stderr" = "fatcheck: img:/EMPTYDIR: directory has more than 65536 entries (a looping chain?)" ]
		[ -z "$output" ]
		# --json still writes one whole document, saying why
		run -8 --separate-stderr timeout 20 fatcheck --json img
		"$FK_PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
e = d["error"]
assert e["exit_status"] == 8 and e["code"] == "EUCLEAN", d
assert e["message"].startswith("img:/EMPTYDIR: directory has more than 65536 entries")
' "$output"
		use $t
		damage nest /EMPTYDIR 300
		run -8 --separate-stderr timeout 20 fatcheck -r img
		[[ $stderr == "fatcheck: img:/EMPTYDIR/D/D/"*": directories nest deeper than 256 levels" ]]
		[ -z "$output" ]
	done
}

@test "fatcheck: random FATs and random directories end in bounded time, and -r converges" {
	local t seed
	for t in 12 16 32; do
		for seed in 1 2 3; do
			use $t
			damage fat-garbage $seed
			run timeout 20 fatcheck img
			[[ $status -eq 4 || $status -eq 8 ]]
			run timeout 20 fatcheck -r --trim-prealloc img
			[[ $status -eq 1 || $status -eq 4 || $status -eq 8 ]]
			# whatever is left, a second repair finds nothing new to do
			run timeout 20 fatcheck -r --trim-prealloc img
			[[ $status -eq 0 || $status -eq 4 ]]
			if [ "$status" -eq 0 ]; then fsck_clean img; fi
			use $t
			damage dir-garbage /DATA $seed
			run timeout 20 fatcheck -r --trim-prealloc img
			[[ $status -eq 0 || $status -eq 1 || $status -eq 4 || $status -eq 8 ]]
		done
	done
}

# ---- crash safety -------------------------------------------------------------

@test "fatcheck -r: a crash after any write, then another -r, leaves fsck.fat clean and other files intact" {
	local n
	# The same damage for every write number: made once, then copied.
	use 32
	damage cross "$BIG" "$SMALL"
	"$FK_PYTHON" "$CORRUPT" img lost >/dev/null
	"$FK_PYTHON" "$CORRUPT" img fat-copy >/dev/null
	"$FK_PYTHON" "$CORRUPT" img dot /EMPTYDIR >/dev/null
	# the backup boot sector written to sector 6 before the boot
	# sector names it there
	"$FK_PYTHON" "$CORRUPT" img backup-outside >/dev/null
	cp img damaged.img
	for n in $(seq 1 40); do
		cp damaged.img img
		run env FK_CRASH_AFTER_WRITE=$n fatcheck -r img
		# 99: the crash (a -DFK_FAULT_INJECTION build); else it finished
		[[ $status -eq 99 || $status -eq 1 ]]
		local crashed=$status
		run fatcheck -r img
		[[ $status -eq 0 || $status -eq 1 ]]
		fsck_clean img
		sums_intact
		[ "$crashed" -eq 99 ] || break
	done
	# the loop reached a run with no crash: every write was covered
	[ "$crashed" -eq 1 ]
	cmp <(head -c 512 img) <(tail -c +$((6 * 512 + 1)) img | head -c 512)
}

# damage_for_salvage TYPE: ./img of TYPE with entries hidden past an end
# marker (in /DATA and in the root) and a lost chain; base.img is the
# undamaged copy.  Made once per test and TYPE, then copied (with what
# DAMAGED named): the loops call it at every write number.
damage_for_salvage()
{
	if [[ -f salvage$1.img ]]; then
		use "$1" && cp img base.img && cp "salvage$1.img" img || return 1
		DAMAGED=("${SALVAGE_DAMAGED[@]}")
		return
	fi
	use "$1"
	cp img base.img
	damage after-end "$SMALL"
	"$FK_PYTHON" "$CORRUPT" img after-end /README.TXT >/dev/null
	DAMAGED+=(/README.TXT)
	"$FK_PYTHON" "$CORRUPT" img lost >/dev/null
	cp img "salvage$1.img"
	SALVAGE_DAMAGED=("${DAMAGED[@]}")
}

@test "fatcheck -r --salvage: a crash after any write, then another run, converges: fsck.fat clean, data saved, nothing else touched" {
	local t n crashed
	for t in 12 16 32; do
		for n in $(seq 1 30); do
			damage_for_salvage $t
			run env FK_CRASH_AFTER_WRITE=$n fatcheck -r --salvage img
			[[ $status -eq 99 || $status -eq 1 ]]
			crashed=$status
			run fatcheck -r --salvage img
			[[ $status -eq 0 || $status -eq 1 ]]
			fsck_clean img
			run -0 fatcheck img
			[ "${#lines[@]}" -eq 1 ]
			# The hidden files are kept, whole; the lost chain is
			# a .CHK file of its 3 clusters (a crash may leave a
			# new FOUND.000 cluster lost, saved as another).
			DAMAGED=()
			sums_intact
			run -0 mdir -i img ::/FOUND.000
			grep -qE "^FILE[0-9]{4} CHK +$((3 * $(clus_len))) " <<<"$output"
			[ "$crashed" -eq 99 ] || break
		done
		((n > 4)) || skip "not a fault-injection build"
	done
}

@test "fatcheck -r: a crash after any write while making hidden entries visible, then another -r, converges and keeps them" {
	local t n crashed
	for t in 12 32; do
		for n in $(seq 1 30); do
			damage_for_salvage $t
			damage after-end /deep1
			run env FK_CRASH_AFTER_WRITE=$n fatcheck -r img
			[[ $status -eq 99 || $status -eq 1 ]]
			crashed=$status
			run fatcheck -r img
			[[ $status -eq 0 || $status -eq 1 ]]
			fsck_clean img
			run -0 fatcheck img
			[ "${#lines[@]}" -eq 1 ]
			DAMAGED=() # every file reads back, the hidden ones too
			sums_intact
			[ "$crashed" -eq 99 ] || break
		done
		((n > 3)) || skip "not a fault-injection build"
	done
}

@test "fatcheck -r --salvage: a failed write is one error line and exit 8; a later run finishes the job" {
	local t n
	for t in 12 16 32; do
		for n in $(seq 1 30); do
			damage_for_salvage $t
			run --separate-stderr env FK_FAIL_WRITE=$n fatcheck -r --salvage img
			if [ "$status" -eq 1 ]; then
				break # not a fault-injection build, or fewer writes
			fi
			[ "$status" -eq 12 ]
			[[ $stderr == "fatcheck: img: Input/output error" ]]
			run fatcheck -r --salvage img
			[[ $status -eq 0 || $status -eq 1 ]]
			fsck_clean img
			run -0 fatcheck img
			sums_intact
		done
	done
}

# damage_for_signals: the use 32 image with damage that takes several
# repair writes; ref.img is it repaired by an uninterrupted -r.
damage_for_signals()
{
	use 32
	damage cross "$BIG" "$SMALL"
	"$FK_PYTHON" "$CORRUPT" img lost >/dev/null
	"$FK_PYTHON" "$CORRUPT" img fat-copy >/dev/null
	cp img base.img
	cp img ref.img
	run -1 fatcheck -r ref.img
}

@test "fatcheck -r: a signal at any repair write lets the repairs finish, exit 128 + N, and says so" {
	local n sig again ref_sha
	local -a sigs=(2 15 1)
	# The damage and the uninterrupted repair are the same for every
	# run: made and hashed once, each run starts from a copy.
	damage_for_signals
	ref_sha=$(img_sha ref.img)
	for again in "" 1; do
		for ((n = 1; n <= 40; n++)); do
			sig=${sigs[n % 3]}
			cp base.img img
			run --separate-stderr env FK_SIGNAL_BEFORE_WRITE=$n \
				FK_SIGNAL=$sig ${again:+FK_SIGNAL_AGAIN=1} fatcheck -r img
			if [ "$status" -eq 1 ]; then
				# Not a fault-injection build, or fewer writes.
				((n > 1)) || skip "fatcheck built without -DFK_FAULT_INJECTION"
				break
			fi
			echo "# signal $sig before write $n${again:+, and again}"
			signal_repair_ok "$sig" "$again"
			# All of it done: what an uninterrupted run leaves.
			[ "$(img_sha img)" = "$ref_sha" ]
			fsck_clean img
			sums_intact
		done
		((n > 3))
	done
}

@test "fatcheck -r: a real SIGINT (strace-injected) while checking changes nothing, exit 130" {
	command -v strace >/dev/null || skip "strace is not installed"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
	local k reads early=0 late=0 base_sha ref_sha
	damage_for_signals
	cp base.img t.img
	# base.img and ref.img do not change: hashed once, not per read
	base_sha=$(img_sha base.img) && ref_sha=$(img_sha ref.img)
	strace -f -qq -o r.log -e trace=pread64,preadv fatcheck -r t.img >/dev/null || true
	reads=$(grep -cE 'pread(64|v)\(' r.log)
	for ((k = 1; k <= reads; k++)); do
		cp base.img img
		run --separate-stderr strace -f -qq -o /dev/null -e trace=pread64,preadv \
			-e inject=pread64,preadv:signal=SIGINT:when=$k fatcheck -r img
		# A stopped run skips the second check: fewer reads.
		[ "$status" -eq 1 ] && ((late)) && break
		[ "$status" -eq 130 ]
		case $stderr in
		"") # before the handlers: the default action, nothing written
			[ "$(img_sha img)" = "$base_sha" ] ;;
		"fatcheck: img: interrupted; nothing was changed")
			[ "$(img_sha img)" = "$base_sha" ]
			early=$((early + 1)) ;;
		"fatcheck: img: interrupted after the first repair write; the repairs were completed")
			[ "$(img_sha img)" = "$ref_sha" ]
			late=$((late + 1)) ;;
		*) false ;;
		esac
	done
	echo "# $reads reads: $early stopped while checking, $late after the repairs"
	((early >= 10 && late >= 1))
}

@test "fatcheck -r: a SIGINT while the findings are printed (before any write) stops the run, nothing changed" {
	command -v strace >/dev/null || skip "strace is not installed"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
	damage_for_signals
	cp base.img img
	# The first write(2) is the first finding line on stdout: printing
	# may block on a pipe, and no repair has been written yet.
	run -130 --separate-stderr strace -f -qq -o /dev/null -e trace=write \
		-e inject=write:signal=SIGINT:when=1 fatcheck -r img
	[ "$stderr" = "fatcheck: img: interrupted; nothing was changed" ]
	[ "$(img_sha img)" = "$(img_sha base.img)" ]
}

@test "fatcheck -r, fatprealloc: a signal the caller ignores (nohup) stays ignored" {
	command -v strace >/dev/null || skip "strace is not installed"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
	damage_for_signals
	cp base.img img
	run -1 --separate-stderr strace -f -qq -o /dev/null -e trace=pwrite64,pwritev \
		-e inject=pwrite64,pwritev:signal=SIGHUP:when=1 \
		nohup fatcheck -r img
	[ "$(img_sha img)" = "$(img_sha ref.img)" ]
	mkimg fat16 16M p.img
	run -0 --separate-stderr strace -f -qq -o /dev/null -e trace=pwrite64,pwritev \
		-e inject=pwrite64,pwritev:signal=SIGHUP:when=1 \
		nohup fatprealloc p.img /a.bin 1M
	[ -z "$stderr" ]
	fsck_clean p.img
}

@test "fatcheck -r: a failed write is one error line and exit 8; a later -r finishes the job" {
	local n
	for n in 1 2 3 5 8; do
		use 16
		damage link-free "$BIG"
		"$FK_PYTHON" "$CORRUPT" img fat-copy >/dev/null
		run --separate-stderr env FK_FAIL_WRITE=$n fatcheck -r img
		if [ "$status" -eq 1 ]; then
			break # not a fault-injection build, or fewer writes
		fi
		[ "$status" -eq 12 ]
		[[ $stderr == "fatcheck: img: Input/output error" ]]
		run -1 fatcheck -r img
		fsck_clean img
		sums_intact
	done
}

# lfn_over_dot SLOT: in ./img, /EMPTYDIR's slot SLOT ("." or "..") becomes
# an orphaned long-name slot that a free slot follows (slot 1 is freed
# too when SLOT is 0), so "." or ".." is missing where an orphan sits.
lfn_over_dot()
{
	local clus
	eval "$(fat_geometry img)"
	clus=$(mshowfat -i img ::/EMPTYDIR </dev/null | sed -n 's/^[^<]*<\([0-9]*\).*/\1/p')
	"$FK_PYTHON" - img $((data_start_sec * bytes_per_sec + (clus - 2) * sec_per_clus * bytes_per_sec)) "$1" <<'PY'
import sys
img, off, slot = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lfn = bytearray(b"\xff" * 32)
lfn[0] = 0x41          # the last (and only) piece of a name
lfn[1:5] = "ab".encode("utf-16-le")
lfn[5:7] = b"\0\0"
lfn[11], lfn[12], lfn[13] = 0x0F, 0, 0x55
lfn[26:28] = b"\0\0"
with open(img, "r+b") as f:
    f.seek(off + 32 * slot)
    f.write(lfn)
    if slot == 0:
        f.seek(off + 32)
        f.write(b"\xe5")
PY
}

@test "fatcheck -r: one run settles an orphaned long-name slot where '.' or '..' belongs" {
	local t slot sha
	for t in 12 16 32; do
		for slot in 0 1; do
			use $t
			lfn_over_dot "$slot"
			fsck_flags
			run -4 fatcheck img
			assert_line --partial "long-name slot $slot belongs to no entry"
			run -1 fatcheck -r img
			# A second repair finds nothing to do and writes nothing.
			sha=$(img_sha img)
			run -0 fatcheck -r img
			[ "${#lines[@]}" -eq 1 ]
			[ "$(img_sha img)" = "$sha" ]
			fsck_clean img
			sums_intact
		done
	done
}
