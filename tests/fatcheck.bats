#!/usr/bin/env bats
# fatcheck.bats: fatcheck held to its issue and to CLI.md.  The damage
# comes from helpers/corrupt.py, which shares no code with fatkit; the
# judges are fsck.fat -n (dosfstools 4.2), mtools and sha256sum.
#
# For each defect fsck.fat calls damage: fsck.fat -n flags it (so the case
# is real), fatcheck exits 4 naming the path, fatcheck -r exits 1, and then
# fsck.fat -n is clean, fatcheck is clean and every other file reads back
# byte-identical.  Defects fsck.fat 4.2 accepts are warnings (exit 0) that
# -r still mends; renaming is never "safe", so names stay errors -r leaves.

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
	out=$("$FK_PYTHON" "$CORRUPT" img "$@") || return 1
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
	local tree=$BATS_TEST_TMPDIR/tree line sum path d skip got
	rm -rf "$tree" && mkdir "$tree" || return 1
	mcopy -s -n -i img '::/*' "$tree/" </dev/null || return 1
	while IFS= read -r line; do
		sum=${line%%  *}
		path=${line#*  }
		skip=0
		for d in "${DAMAGED[@]}"; do
			[[ ${path,,} == "${d,,}" || ${path,,} == "${d,,}"/* ]] &&
				skip=1
		done
		((skip)) && continue
		if [[ ! -f $tree$path ]]; then
			echo "sums_intact: $path is gone" >&2
			return 1
		fi
		got=$(sha256sum <"$tree$path")
		if [[ ${got%% *} != "$sum" ]]; then
			echo "sums_intact: $path changed" >&2
			return 1
		fi
	done <img.sums
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
	[[ $output == *"(fixed: "* ]]
	[[ $output == *" left)"* ]]
	fsck_clean img
	run -0 fatcheck img
	[ "${#lines[@]}" -eq 1 ] # the summary alone
	sums_intact
	fat_copies_equal img
}

# warning_case TYPE CASE [ARGS...]: a defect fsck.fat 4.2 lets pass; a
# warning (exit 0) that -r mends all the same.
warning_case()
{
	local type=$1
	shift
	use "$type"
	damage "$@"
	fsck_clean img
	run -0 fatcheck img
	names warning
	run -0 fatcheck -r img
	[[ $output == *"(fixed: "* ]]
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

@test "fatcheck: a labelled volume (mlabel) and 3 FAT copies are clean" {
	mkimg fat16 32M img -n MYLABEL
	populate img
	run -0 fatcheck img
	[ "${#lines[@]}" -eq 1 ]
	mkimg_geom 16 512 2K 3 16M img
	populate img
	run -0 fatcheck img
	[ "${#lines[@]}" -eq 1 ]
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

@test "fatcheck: dirty flag in the boot sector (FAT12/16/32)" {
	local t
	for t in 12 16 32; do error_case $t boot-dirty; done
}

@test "fatcheck: clean-shutdown bit of FAT[1] clear (FAT16/32)" {
	local t
	for t in 16 32; do error_case $t fat1-dirty; done
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

@test "fatcheck: an entry hidden past the end marker is seen, and -r makes it visible" {
	local t
	for t in 12 16 32; do
		use $t
		damage after-end "$SMALL"
		run -1 mtype -i img "::$SMALL" # mtools stops at the marker
		warning_case $t after-end "$SMALL"
		[ "$(mtype -i img "::$SMALL" | sha256sum)" = \
			"$(grep -F "  $SMALL" img.sums | cut -c1-64)  -" ]
	done
}

@test "fatcheck: long-name slots with a bad checksum or sequence are warnings" {
	use 16
	damage lfn-sum "$LONG"
	run -0 fatcheck img
	[[ $output == *"warning: /ALONGF~1.TXT: long-name slots before this entry do not match it"* ]]
	use 32
	damage lfn-seq "$LONG"
	run -0 fatcheck img
	[[ $output == *"warning: /: "*" long-name slots out of sequence belong to no entry; readers ignore them"* ]]
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

@test "fatcheck: a duplicate name and a bad short name are errors -r leaves alone" {
	local t before
	for t in 12 16 32; do
		use $t
		damage dup /DATA/rand-0.bin /DATA/rand-1.bin
		fsck_flags
		run -4 fatcheck img
		[[ $output == *"error: /DATA/rand-0.bin: another entry of this directory (slot "*") has the same name"* ]]
		before=$(img_sha img)
		run -4 fatcheck -r img
		[ "$(img_sha img)" = "$before" ]
		use $t
		damage bad-char /README.TXT
		fsck_flags
		run -4 fatcheck img
		[[ $output == *"error: /R?ADME.TXT: short name 'R?ADME.TXT' holds characters FAT does not allow"* ]]
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
		run -0 fatcheck -r --trim-prealloc img
		[[ $output == *"(fixed: tail freed)"* ]]
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
	[[ $stderr == "fatcheck: img: image is in use" ]]
	run -8 --separate-stderr timeout 10 fatcheck img
}

# ---- hostile images ------------------------------------------------------------

@test "fatcheck: random bytes, an absurd BPB and a truncated image: one error line, exit 8" {
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
	run -8 --separate-stderr timeout 20 fatcheck img
	[[ $stderr == "fatcheck: img: image is truncated"* ]]
}

@test "fatcheck: an endless directory and endless nesting end in one error line, exit 8" {
	local t
	for t in 12 16 32; do
		use $t
		damage endless-dir /EMPTYDIR
		run -8 --separate-stderr timeout 20 fatcheck img
		[ "$stderr" = "fatcheck: /EMPTYDIR: directory has more than 65536 entries (a looping chain?)" ]
		[ -z "$output" ]
		# --json still writes one whole document, saying why
		run -8 --separate-stderr timeout 20 fatcheck --json img
		"$FK_PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["error_path"] == "/EMPTYDIR" and d["exit_status"] == 8, d
assert d["error"].startswith("directory has more than 65536 entries")
' "$output"
		use $t
		damage nest /EMPTYDIR 300
		run -8 --separate-stderr timeout 20 fatcheck -r img
		[[ $stderr == "fatcheck: /EMPTYDIR/D/D/"*": directories nest deeper than 256 levels" ]]
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
	for n in $(seq 1 40); do
		use 32
		damage cross "$BIG" "$SMALL"
		"$FK_PYTHON" "$CORRUPT" img lost >/dev/null
		"$FK_PYTHON" "$CORRUPT" img fat-copy >/dev/null
		"$FK_PYTHON" "$CORRUPT" img dot /EMPTYDIR >/dev/null
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
