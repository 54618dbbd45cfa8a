#!/usr/bin/env bats
# fatprealloc.bats: fatprealloc held to its issue and to its man page by judges
# we did not write: fsck.fat, mtools (mcopy, mdir, mdel, mmd), sha256sum,
# strace, and fatimg.py (a reader of the on-disk format that shares no code
# with fatkit).  fatls is used only to find where clusters are.

load helpers/common

# The fatls.bats geometries (FAT SECSIZE CLUSSIZE NFATS SIZE), each with
# the size of a file created on it.  On FAT12 that file is long enough for
# its chain to hold entries that straddle two FAT sectors (341 and 682 with
# 512-byte sectors, 2730 with 4096-byte ones).  Images are sparse.
GEOMS=(
	"12 512 512 2 2M 700K"
	"12 4096 4K 1 12M 11M"
	"12 512 32K 2 64M 24M"
	"16 512 2K 2 16M 1M"
	"16 4096 8K 1 64M 1M"
	"16 4096 32K 2 160M 2M"
	"32 512 512 2 40M 1M"
	"32 4096 4K 2 300M 1M"
	"32 512 1K 1 80M 1M"
	"32 4096 32K 2 2100M 2M"
)

teardown()
{
	if [[ -n ${HOLDER:-} ]]; then
		kill "$HOLDER" 2>/dev/null || true
		wait "$HOLDER" 2>/dev/null || true
		HOLDER=
	fi
}

# geom IMG: the fat_geometry variables of IMG in the caller's scope (the
# caller declares them local).
geom()
{
	local g
	g=$(fat_geometry "$1") || return 1
	eval "$g"
}

clus_len()
{
	local bytes_per_sec sec_per_clus rsvd_secs nfats fat_secs root_secs
	local tot_secs data_start_sec nclus type fsinfo_sec
	geom "$1" || return 1
	echo $((bytes_per_sec * sec_per_clus))
}

# fatimg_py IMG CODE [ARGS...]: CODE (python) with v = fatimg.Volume(IMG)
# and e, the first FAT's entries: e[c - 2] is cluster c's.  ARGS are
# sys.argv[3:].
fatimg_py()
{
	local img=$1 code=$2
	shift 2
	"$FK_PYTHON" -c "
import sys
sys.path.insert(0, sys.argv[1])
import fatimg
v = fatimg.Volume(sys.argv[2])
e = list(v.entries(v.fat(0)))
$code" "$FATKIT_HELPERS" "$img" "$@"
}

# fat_entry IMG CLUS: FAT entry CLUS of the first FAT.
fat_entry()
{
	fatimg_py "$1" 'print(e[int(sys.argv[3]) - 2])' "$2"
}

# longest_free_run IMG: the longest run of free clusters, in clusters.
longest_free_run()
{
	fatimg_py "$1" '
best = run = 0
for x in e:
    run = run + 1 if x == 0 else 0
    best = max(best, run)
print(best)'
}

# chain_runs IMG PATH: the runs fatls --chain gives for file PATH, one
# "FIRST LAST OFFSET LENGTH" line each (offsets in the file IMG names).
chain_runs()
{
	local line runs r
	local -a parts
	line=$(fatls --chain "$1" "$2") || return 1
	runs=${line#*runs=}
	runs=${runs%% *}
	[[ $runs == - ]] && return 0
	IFS=, read -ra parts <<<"$runs"
	for r in "${parts[@]}"; do
		if [[ ! $r =~ ^([0-9]+)-([0-9]+)@([0-9]+)\+([0-9]+)$ ]]; then
			echo "chain_runs: cannot parse run '$r' of $2" >&2
			return 1
		fi
		echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}" \
			"${BASH_REMATCH[4]}"
	done
}

# raw IMG OFF LEN: LEN bytes of the file IMG from byte OFF.
raw()
{
	dd if="$1" iflag=skip_bytes,count_bytes skip="$2" count="$3" \
		bs=64K status=none
}

# fill_bytes IMG OFF LEN BYTE: overwrite LEN bytes at OFF with BYTE
# (octal, as tr takes it).
fill_bytes()
{
	head -c "$3" /dev/zero | tr '\0' "\\$4" |
		dd of="$1" oflag=seek_bytes seek="$2" bs=64K conv=notrunc \
			status=none
}

# zeros N: N zero bytes.
zeros()
{
	head -c "$1" /dev/zero
}

# mget IMG PATH OUT: copy PATH out of the volume with mcopy.
mget()
{
	rm -f "$3"
	mcopy -n -i "$1" "::$2" "$3" </dev/null
}

# file_field IMG PATH KEY: KEY of file PATH's entry in fatls --json.
file_field()
{
	fatls --json "$1" "$2" | "$FK_PYTHON" -c '
import json, sys
ents = json.load(sys.stdin)["entries"]
assert len(ents) == 1, ents
print(ents[0][sys.argv[1]])' "$3"
}

# mdir_size IMG PATH: the size mdir lists for file PATH.
mdir_size()
{
	local dir=${2%/*} name=${2##*/}
	mdir -i "$1" "::${dir:-/}" </dev/null | "$FK_PYTHON" -c '
import re, sys
pat = re.compile(r"^(.{8}) (.{3}) +(\d+) +\d{4}-\d\d-\d\d +\d+:\d\d(?:  (.+))?$")
want = sys.argv[1].lower()
for line in sys.stdin:
    m = pat.match(line.rstrip())
    if not m:
        continue
    base, ext, size, lng = m.groups()
    short = base.rstrip() + ("." + ext.rstrip() if ext.strip() else "")
    if want in (short.lower(), (lng or "").lower()):
        print(size)
        sys.exit(0)
sys.exit(1)' "$name"
}

# fsinfo_exact IMG: on FAT32, FSInfo's free count is the free clusters the
# FAT holds and its hint names a free cluster; nothing to check otherwise.
fsinfo_exact()
{
	local next
	[[ $(fat_type "$1") == fat32 ]] || return 0
	if [[ $(fsinfo_free "$1") != "$(count_free_clusters "$1")" ]]; then
		echo "FSInfo free count $(fsinfo_free "$1") but the FAT has" \
			"$(count_free_clusters "$1") free" >&2
		return 1
	fi
	next=$(fsinfo_next "$1") || return 1
	if [[ $(fat_entry "$1" "$next") != 0 ]]; then
		echo "FSInfo hint $next names a cluster in use" >&2
		return 1
	fi
}

# forget_sum IMG PATH: drop PATH from IMG.sums (a file the test changes).
forget_sum()
{
	local sums=${1%%@@*}.sums
	awk -v p="$2" 'substr($0, 67) != p' "$sums" >"$sums.new" &&
		mv "$sums.new" "$sums"
}

# sums_intact IMG: check_sums in one mcopy call (the crash loops make
# hundreds of checks): every file IMAGE.sums names, copied out with the
# top-level entries that hold it, has its sha256.
sums_intact()
{
	local img=$1 sums=${1%%@@*}.sums out
	local -a tops
	out=$(mktemp -d "$BATS_TEST_TMPDIR/sums.XXXXXX") || return 1
	mapfile -t tops < <(cut -c67- "$sums" | cut -d/ -f2 | sort -u |
		sed 's|^|::/|')
	mcopy -s -n -i "$img" "${tops[@]}" "$out/" </dev/null || return 1
	if ! sed "s|  /|  $out/|" "$sums" | sha256sum -c --quiet - >&2; then
		echo "sums_intact: files in $img differ from $sums" >&2
		return 1
	fi
	rm -rf "$out"
}

# judge IMG: what every successful run must leave: fsck.fat clean, FAT
# copies equal, FSInfo exact, the populated files intact.
judge()
{
	fsck_clean "$1" && fat_copies_equal "$1" && fsinfo_exact "$1" &&
		sums_intact "$1"
}

# fsck_tails IMG PATH:SIZE...: fsck.fat -n IMG exits 1 and reports nothing
# but a chain longer than its size for each PATH (as fsck.fat spells it:
# 8.3, upper case; in directory order) and, on FAT32, the free count that
# cutting those tails would give.
fsck_tails()
{
	local img=$1 spec path size c n cut=0 free out rc want= body
	shift
	c=$(clus_len "$img") || return 1
	for spec in "$@"; do
		path=${spec%:*} size=${spec##*:}
		n=$(file_field "$img" "$path" clusters) || return 1
		cut=$((cut + n - (size + c - 1) / c))
		want+="$path"$'\n'
		want+="  File size is $size bytes, cluster chain length is >"
		want+=" $(((size + c - 1) / c * c)) bytes."$'\n'
		want+="  Truncating file to $size bytes."$'\n'
	done
	if [[ $(fat_type "$img") == fat32 ]]; then
		free=$(count_free_clusters "$img") || return 1
		want+="Free cluster summary wrong ($free vs. really"
		want+=" $((free + cut)))"$'\n'"  Auto-correcting."$'\n'
	fi
	want+=$'\n'"Leaving filesystem unchanged."
	out=$(fsck.fat -n "$img" 2>&1 </dev/null) && rc=0 || rc=$?
	body=$(sed -e '1d' -e '$d' <<<"$out")
	if ((rc != 1)) || [[ $out != "fsck.fat "* || $body != "$want" ]] ||
		[[ ! $(tail -n 1 <<<"$out") =~ ^$img:\ [0-9]+\ files,\ [0-9]+/[0-9]+\ clusters$ ]]; then
		echo "fsck.fat -n $img exited $rc and said:" >&2
		echo "$out" >&2
		echo "--- wanted between its first and last lines:" >&2
		echo "$want" >&2
		return 1
	fi
}

# fsck_at_worst_lost IMG [BLOCK]: fsck.fat -n IMG finds at worst lost
# clusters, a wrong free count, or FAT copies that differ but are intact
# (a cut between two copies); BLOCK, when given, is a set of lines that may
# appear once as well.  A cross-link, a cut or damaged file, a bad
# directory or anything else fails.
fsck_at_worst_lost()
{
	local img=$1 block=${2:-} out line bad=
	out=$(fsck.fat -n "$img" 2>&1 </dev/null) || true
	[[ -n $block ]] && out=${out/"$block"$'\n'/}
	while IFS= read -r line; do
		case $line in
		"fsck.fat "* | "" | "Leaving filesystem unchanged." | \
			"FATs differ but appear to be intact." | \
			"  Using first FAT." | "  Auto-correcting.") ;;
		*)
			[[ $line =~ ^Reclaimed\ [0-9]+\ unused\ clusters?\ \([0-9]+\ bytes\)\.$ ||
				$line =~ ^Free\ cluster\ summary\ wrong\ \([0-9]+\ vs\.\ really\ [0-9]+\)$ ||
				$line =~ ^$img:\ [0-9]+\ files,\ [0-9]+/[0-9]+\ clusters$ ]] ||
				bad+="$line"$'\n'
			;;
		esac
	done <<<"$out"
	if [[ -n $bad ]]; then
		echo "fsck.fat -n $img found more than lost clusters:" >&2
		printf '%s' "$bad" >&2
		echo "--- all it said:" >&2
		fsck.fat -n "$img" </dev/null >&2
		return 1
	fi
}

# faults_compiled: does this fatprealloc stop at a chosen write (a build
# with -DFK_FAULT_INJECTION)?
faults_compiled()
{
	local rc=0
	mkimg fat12 1M probe.img || return 2
	FK_CRASH_AFTER_WRITE=1 fatprealloc probe.img /probe.bin 1 \
		>/dev/null 2>&1 || rc=$?
	rm -f probe.img
	((rc == 99))
}

# stats_value OUTPUT NAME: the number on the "NAME: N" line of --stats.
stats_value()
{
	sed -n "s/^$2: //p" <<<"$1"
}

# json_stat JSON KEY: stats.KEY of fatprealloc --json output.
json_stat()
{
	"$FK_PYTHON" -c 'import json, sys; print(json.loads(sys.argv[1])["stats"][sys.argv[2]])' "$1" "$2"
}

# ---- every geometry ---------------------------------------------------------

# grow_on_geometry ROW: the default run on one geometry: an existing file
# with slack in its last cluster grown, a large file and a long name
# created, then every judge.
grow_on_geometry()
{
	local fat=$1 secsize=$2 clus=$3 nf=$4 size=$5 newsize=$6 c newlen
	local old grow lastoff first last off len n
	echo "# geometry: $*"
	mkimg_geom "$fat" "$secsize" "$clus" "$nf" "$size" img
	populate img
	c=$(clus_len img)
	old=$((c + 100)) grow=$((5 * c + 7))
	gen_bytes "$old" grow >grow.bin
	mcopy -i img grow.bin ::/grow.bin </dev/null
	# Garbage in the slack of its last cluster, so zeroing it shows.
	read -r first last off len < <(chain_runs img /grow.bin | tail -n 1)
	lastoff=$((off + len - c))
	fill_bytes img $((lastoff + 100)) $((c - 100)) 252
	[ "$(raw img $((lastoff + 100)) 4 | od -An -tx1 | tr -d ' ')" = aaaaaaaa ]
	mget img /grow.bin got && cmp grow.bin got

	run -0 --separate-stderr fatprealloc img /grow.bin "$grow" \
		/new.bin "$newsize" '/A new file with a long name.dat' 1000
	[ -z "$output" ] && [ -z "$stderr" ]

	# Old bytes intact, zeros after; the slack read raw is zeros too.
	mget img /grow.bin got
	{ cat grow.bin; zeros $((grow - old)); } | cmp - got
	zeros $((c - 100)) | cmp - <(raw img $((lastoff + 100)) $((c - 100)))
	newlen=$(size_kib "$newsize")
	newlen=$((newlen * 1024))
	mget img /new.bin got
	[ "$(stat -c %s got)" -eq "$newlen" ]
	zeros "$newlen" | cmp - got
	mget img '/A new file with a long name.dat' got
	zeros 1000 | cmp - got
	[ "$(mdir_size img /new.bin)" -eq "$newlen" ]
	judge img
	# FAT12: the new chain holds entries that straddle FAT sectors.
	if ((fat == 12)); then
		# counted in awk: bats traps each command of a test's shell
		n=$(chain_runs img /new.bin | awk -v s="$secsize" '
			{ for (e = $1; e <= $2; e++) if (int(e * 3 / 2) % s == s - 1) n++ }
			END { print n + 0 }')
		echo "# $n straddling entries"
		((n >= (secsize == 512 ? 2 : 1)))
	fi
}

@test "fatprealloc: FAT12 geometries: sizes set, zeros from the old end on (slack included), fsck clean, FATs equal, other files intact" {
	local g
	for g in "${GEOMS[@]}"; do
		[[ $g == 12\ * ]] || continue
		# shellcheck disable=SC2086
		grow_on_geometry $g
	done
}

@test "fatprealloc: FAT16 geometries: sizes set, zeros from the old end on (slack included), fsck clean, FATs equal, other files intact" {
	local g
	for g in "${GEOMS[@]}"; do
		[[ $g == 16\ * ]] || continue
		# shellcheck disable=SC2086
		grow_on_geometry $g
	done
}

@test "fatprealloc: FAT32 geometries: the same, and FSInfo's free count and hint exact" {
	local g
	for g in "${GEOMS[@]}"; do
		[[ $g == 32\ * ]] || continue
		# shellcheck disable=SC2086
		grow_on_geometry $g
	done
}

# ---- -n, --keep-size --------------------------------------------------------

@test "fatprealloc -n: the chain covers SIZE, sizes stay, fsck.fat finds only those tails" {
	local t c
	for t in fat12 fat16 fat32; do
		echo "# $t"
		case $t in
		fat12) mkimg fat12 2M img ;;
		*) mkimg "$t" 40M img ;;
		esac
		populate img
		c=$(clus_len img)
		gen_bytes 700 keep >keep.bin
		mcopy -i img keep.bin ::/KEEP.BIN </dev/null
		run -0 --separate-stderr fatprealloc -n img /KEEP.BIN 20000 \
			/NEW.BIN 5000
		[ -z "$output" ] && [ -z "$stderr" ]
		[ "$(file_field img /KEEP.BIN allocated)" -ge 20000 ]
		[ "$(file_field img /NEW.BIN allocated)" -ge 5000 ]
		[ "$(file_field img /KEEP.BIN clusters)" -eq $(((20000 + c - 1) / c)) ]
		[ "$(mdir_size img /KEEP.BIN)" -eq 700 ]
		[ "$(mdir_size img /NEW.BIN)" -eq 0 ]
		mget img /KEEP.BIN got && cmp keep.bin got
		fat_copies_equal img
		fsinfo_exact img
		check_sums img
		fsck_tails img /KEEP.BIN:700 /NEW.BIN:0
	done
}

# ---- options -----------------------------------------------------------------

@test "fatprealloc -p: creates missing parents (with . and ..); fsck clean" {
	local t
	for t in fat16 fat32; do
		echo "# $t"
		mkimg "$t" 40M img
		populate img
		run -0 --separate-stderr fatprealloc -p img \
			/new1/new2/new3/file.bin 10K \
			'/New dir with a long name/Sub dir/f.txt' 100 \
			/deep1/deep2/more/x.bin 1
		[ -z "$stderr" ]
		run -0 mdir -i img ::/new1/new2
		assert_line --regexp '^\.  +<DIR> '
		assert_line --regexp '^\.\.  +<DIR> '
		assert_line --regexp '^new3  +<DIR> '
		run -0 mdir -i img '::/New dir with a long name/Sub dir'
		assert_line --regexp '^\.  +<DIR> '
		assert_line --regexp '^\.\.  +<DIR> '
		[ "$(mdir_size img /new1/new2/new3/file.bin)" -eq 10240 ]
		[ "$(mdir_size img '/New dir with a long name/Sub dir/f.txt')" -eq 100 ]
		[ "$(mdir_size img /deep1/deep2/more/x.bin)" -eq 1 ]
		mget img /new1/new2/new3/file.bin got
		zeros 10240 | cmp - got
		judge img
	done
}

@test "fatprealloc: a missing parent without -p is refused, image unchanged" {
	mkimg fat16 16M img
	populate img
	before=$(img_sha img)
	run -1 --separate-stderr fatprealloc img /nodir/sub/x.bin 1K
	[ "$stderr" = "fatprealloc: img:/nodir/sub/x.bin: No such file or directory (parent directory 'nodir' is missing; -p creates it)" ]
	[ -z "$output" ]
	[ "$(img_sha img)" = "$before" ]
	run -1 --separate-stderr fatprealloc img /DATA/nodir/x.bin 1K
	[ "$stderr" = "fatprealloc: img:/DATA/nodir/x.bin: No such file or directory (parent directory 'nodir' is missing; -p creates it)" ]
	[ "$(img_sha img)" = "$before" ]
}

# fragment IMG: fill IMG to the last cluster with files of 16 clusters,
# then delete every other one, so the free space is holes of 16 clusters.
fragment()
{
	local img=$1 c free i n
	c=$(clus_len "$img") || return 1
	free=$(count_free_clusters "$img") || return 1
	n=$(((free - 64) / 16))
	mkdir -p fill
	for ((i = 0; i < n; i++)); do
		head -c $((16 * c)) /dev/zero >"fill/f$i.bin"
	done
	mmd -i "$img" ::/FILL </dev/null &&
		mcopy -i "$img" fill/*.bin ::/FILL/ </dev/null || return 1
	free=$(count_free_clusters "$img") || return 1
	head -c $((free * c)) /dev/zero >rest.bin
	mcopy -i "$img" rest.bin ::/REST.BIN </dev/null || return 1
	[ "$(count_free_clusters "$img")" -eq 0 ] || return 1
	local -a odd=()
	for ((i = 0; i < n; i += 2)); do
		odd+=("::/FILL/f$i.bin")
	done
	mdel -i "$img" "${odd[@]}" </dev/null
}

@test "fatprealloc -c: one fragment, or a refusal that changes nothing when no free run is long enough" {
	local c long free
	mkimg_geom 12 512 512 2 2M img
	gen_bytes 1000 small >small.bin
	mcopy -i img small.bin ::/SMALL.BIN </dev/null
	fragment img
	c=$(clus_len img)
	long=$(longest_free_run img)
	free=$(count_free_clusters img)
	echo "# longest free run $long of $free free"
	((long >= 8 && free > 4 * long))
	before=$(img_sha img)

	run -1 --separate-stderr fatprealloc -c img /c.bin $(((long + 1) * c))
	[[ $stderr == "fatprealloc: img:/c.bin: No space left on device: -c needs one contiguous run of "*"; the longest free one is "* ]]
	# -v: the same in clusters, the independent count of the longest
	run -1 --separate-stderr fatprealloc -v -c img /c.bin $(((long + 1) * c))
	[[ $stderr == *" ($((long + 1)) clusters of $c bytes; $long)" ]]
	[ "$(img_sha img)" = "$before" ]
	# Growing an existing file: its new clusters must be one run too.
	run -1 --separate-stderr fatprealloc -c img /SMALL.BIN $((1000 + (long + 2) * c))
	[[ $stderr == "fatprealloc: img:/SMALL.BIN: No space left on device: -c needs one contiguous run of "* ]]
	[ "$(img_sha img)" = "$before" ]

	run -0 --separate-stderr fatprealloc -c img /c.bin $((long * c))
	run -0 fatls --chain img /c.bin
	[[ $output == "first="*" fragments=1 runs="* ]]
	# Without -c the same request on a copy takes several fragments: the
	# free space really is in pieces.
	cp "$BATS_TEST_TMPDIR/img" "$BATS_TEST_TMPDIR/img2"
	run -0 --separate-stderr fatprealloc img2 /d.bin $(((long + 1) * c))
	[ "$(file_field img2 /d.bin fragments)" -ge 2 ]
	fsck_clean img
	fsck_clean img2
	fat_copies_equal img
}

@test "fatprealloc --no-zero: the new region keeps what the clusters held; fsck clean" {
	local c next
	mkimg fat32 40M img
	populate img
	c=$(clus_len img)
	# Free clusters full of 0xAA: a file written and deleted, and the
	# FSInfo hint forgotten, so allocation starts at the lowest cluster.
	head -c 30M /dev/zero | tr '\0' '\252' >junk.bin
	mcopy -i img junk.bin ::/JUNK.BIN </dev/null
	mdel -i img ::/JUNK.BIN </dev/null
	printf '\xff\xff\xff\xff' | dd of=img bs=1 conv=notrunc status=none \
		seek=$((512 + 492))
	[ "$(fsinfo_next img)" = 4294967295 ]
	cp img img2
	cp img.sums img2.sums
	run -0 --separate-stderr fatprealloc --no-zero --stats img /fast.bin 20M
	[ "$(stats_value "$output" "bytes zeroed")" -eq 0 ]
	# Only metadata is written: FAT sectors, one entry, FSInfo.
	[ "$(stats_value "$output" "bytes written")" -lt $((512 * 1024)) ]
	[ "$(mdir_size img /fast.bin)" -eq $((20 << 20)) ]
	mget img /fast.bin got
	[ "$(stat -c %s got)" -eq $((20 << 20)) ]
	[ "$(tr -d '\252' <got | wc -c)" -eq 0 ]
	judge img
	# The default zeroes the same clusters.
	run -0 --separate-stderr fatprealloc img2 /slow.bin 20M
	mget img2 /slow.bin got
	zeros $((20 << 20)) | cmp - got
	judge img2
}

@test "fatprealloc: sparse or fully allocated, an image ends byte-identical; holes are zeroed without allocating them" {
	local spec type size before after
	export SOURCE_DATE_EPOCH=1700000000
	for spec in "fat16 64M" "fat32 300M"; do
		read -r type size <<<"$spec"
		mkimg "$type" "$size" sparse.img
		populate sparse.img
		# 2 MiB of 0xAA in free clusters, so that the new file's range
		# is part data (zeroed by fallocate) and part hole (left be).
		head -c 2M /dev/zero | tr '\0' '\252' >junk.bin
		mcopy -i sparse.img junk.bin ::/JUNK.BIN </dev/null
		mdel -i sparse.img ::/JUNK.BIN </dev/null
		cp --sparse=never sparse.img full.img
		cp sparse.img.sums full.img.sums
		before=$(du -k sparse.img | cut -f1)
		run -0 --separate-stderr fatprealloc --stats -p sparse.img \
			/big.bin 40M /DATA/new/x.bin 3M
		zeroed=$(stats_value "$output" "bytes zeroed")
		run -0 --separate-stderr fatprealloc --stats -p full.img \
			/big.bin 40M /DATA/new/x.bin 3M
		[ "$(stats_value "$output" "bytes zeroed")" -eq "$zeroed" ]
		[ "$(img_sha sparse.img)" = "$(img_sha full.img)" ]
		after=$(du -k sparse.img | cut -f1)
		echo "# $type: $before KiB allocated before, $after after"
		((after - before < 8192))
		mget sparse.img /big.bin got
		zeros $((40 << 20)) | cmp - got
		judge sparse.img
		judge full.img
		rm -f sparse.img* full.img*
	done
}

@test "fatprealloc --dry-run: says what would happen, writes nothing" {
	local c
	mkimg fat16 16M img
	populate img
	c=$(clus_len img)
	before=$(img_sha img)
	run -0 --separate-stderr fatprealloc --dry-run -p img \
		/DATA/rand-1.bin 5000 /new.bin 3000 /nd/x.bin 1 /README.TXT 5
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 5 ]
	# -p would create /nd first; the directory is named.
	[ "${lines[0]}" = "would create directory /nd" ]
	lines=("${lines[@]:1}")
	[[ ${lines[0]} =~ ^would\ grow\ /DATA/rand-1\.bin:\ size\ 1\ -\>\ 5000,\ $((5000 / c))\ new\ clusters,\ [0-9]+\ fragments?$ ]]
	[ "${lines[1]}" = "would create /new.bin: size 0 -> 3000, $(((3000 + c - 1) / c)) new clusters, 1 fragment" ]
	[[ ${lines[2]} =~ ^would\ create\ /nd/x\.bin:\ size\ 0\ -\>\ 1,\ 1\ new\ cluster,\ 1\ fragment$ ]]
	# Left alone.
	[[ ${lines[3]} =~ ^would\ leave\ unchanged\ /README\.TXT:\ size\ 19\ -\>\ 19,\ 0\ new\ clusters,\ 1\ fragment$ ]]
	[ "$(img_sha img)" = "$before" ]
	# A refusal is the same refusal as without --dry-run.
	run -1 --separate-stderr fatprealloc --dry-run img /nd/y.bin 1
	[[ $stderr == "fatprealloc: img:/nd/y.bin: No such file or directory ("* ]]
	[ "$(img_sha img)" = "$before" ]
	# --json says it was a dry run.
	run -0 fatprealloc --dry-run --json img /new.bin 3000
	[ "$(json_stat "$output" write_calls)" -eq 0 ]
	"$FK_PYTHON" -c 'import json, sys; assert json.loads(sys.argv[1])["dry_run"] is True' "$output"
	[ "$(img_sha img)" = "$before" ]
}

@test "fatprealloc --batch: small batches flush more often and give the same image bytes" {
	mkimg_geom 16 512 512 2 30M a.img
	populate a.img
	cp a.img b.img
	export SOURCE_DATE_EPOCH=1700000000
	run -0 --separate-stderr fatprealloc --json --batch 512 a.img \
		/x.bin 8M /DATA/rand-513.bin 100K /d/y.bin 3K -p
	small=$output
	run -0 --separate-stderr fatprealloc --json --batch 64M b.img \
		/x.bin 8M /DATA/rand-513.bin 100K /d/y.bin 3K -p
	large=$output
	echo "# flushes: $(json_stat "$small" fat_flushes) vs $(json_stat "$large" fat_flushes)"
	# 8M of 512-byte clusters is 64 sectors of FAT16 entries.
	[ "$(json_stat "$small" fat_flushes)" -ge 64 ]
	[ "$(json_stat "$large" fat_flushes)" -le 3 ]
	[ "$(json_stat "$small" write_calls)" -gt "$(json_stat "$large" write_calls)" ]
	[ "$(img_sha a.img)" = "$(img_sha b.img)" ]
	forget_sum a.img /DATA/rand-513.bin
	# --stats shows the extra writes as well.
	cp a.img c.img
	cp a.img d.img
	run -0 fatprealloc --stats --batch 512 c.img /z.bin 4M
	small=$(stats_value "$output" "write calls")
	run -0 fatprealloc --stats --batch 4M d.img /z.bin 4M
	large=$(stats_value "$output" "write calls")
	((small > large + 20))
	[ "$(img_sha c.img)" = "$(img_sha d.img)" ]
	judge a.img
}

@test "fatprealloc --json: parses, and agrees with fatls --json on every file" {
	mkimg fat32 40M img
	populate img
	run -0 --separate-stderr fatprealloc --json -p img /DATA/rand-4096.bin 20000 \
		'/Sub dir/new file.bin' 7000 /README.TXT 5 /README.TXT 19
	[ -z "$stderr" ]
	echo "$output" >pa.json
	for p in /DATA/rand-4096.bin '/Sub dir/new file.bin' /README.TXT; do
		fatls --json img "$p"
	done >ls.json
	"$FK_PYTHON" - pa.json ls.json "$(clus_len img)" <<'EOF'
import json, sys
pa = json.load(open(sys.argv[1]))
c = int(sys.argv[3])
ls = {}
for line in open(sys.argv[2]):
    for e in json.loads(line)["entries"]:
        ls[e["path"]] = e
assert pa["dry_run"] is False
files = pa["files"]
assert [f["path"] for f in files] == ["/DATA/rand-4096.bin",
    "/Sub dir/new file.bin", "/README.TXT", "/README.TXT"], files
assert [f["action"] for f in files] == ["grown", "created", "unchanged",
    "unchanged"], files
for f in files:
    e = ls[f["path"]]
    for k in ("size", "allocated", "first_cluster", "clusters",
              "fragments"):
        assert f[k] == e[k], (f["path"], k, f[k], e[k])
    assert [(r["first"], r["last"], r["clusters"], r["offset"],
             r["length"]) for r in f["runs"]] == \
        [(r["first"], r["last"], r["clusters"], r["offset"], r["length"])
         for r in e["runs"]], f["path"]
grown, new = files[0], files[1]
assert (grown["old_size"], grown["size"]) == (4096, 20000)
assert grown["new_clusters"] == (20000 + c - 1) // c - (4096 + c - 1) // c
assert (new["old_size"], new["size"]) == (0, 7000)
assert new["new_clusters"] == (7000 + c - 1) // c
assert files[2]["new_clusters"] == 0 and files[2]["size"] == 19
st = pa["stats"]
assert st["directories_created"] == 1
assert st["clusters"] == grown["new_clusters"] + new["new_clusters"] + 1
for k in ("fragments", "fat_sectors_written", "fat_flushes", "write_calls",
          "bytes_written", "zero_calls", "bytes_zeroed", "fsyncs",
          "seconds"):
    assert k in st, k
assert st["bytes_zeroed"] >= 20000 - 4096 + 7000
EOF
	forget_sum img /DATA/rand-4096.bin
	judge img
}

@test "fatprealloc --stats: every field, with the cluster count of the run" {
	local c
	mkimg fat16 16M img
	c=$(clus_len img)
	run -0 --separate-stderr fatprealloc --stats img /a.bin 10000 /b.bin 1
	[ -z "$stderr" ]
	assert_line "clusters: $(((10000 + c - 1) / c + 1))"
	assert_line --regexp '^fragments: [0-9]+$'
	assert_line --regexp '^fat sectors written: [1-9][0-9]*$'
	assert_line --regexp '^write calls: [1-9][0-9]*$'
	assert_line --regexp '^bytes written: [1-9][0-9]*$'
	assert_line --regexp '^bytes zeroed: [1-9][0-9]*$'
	assert_line 'fsyncs: 1'
	assert_line --regexp '^seconds: [0-9]+\.[0-9]+$'
	[ "${#lines[@]}" -eq 8 ]
	[ "$(stats_value "$output" "bytes zeroed")" -ge $((10000 + 1)) ]
	fsck_clean img
}

@test "fatprealloc: the same path twice (any case): the largest size wins, one entry" {
	mkimg fat16 16M img
	populate img
	run -0 --separate-stderr fatprealloc img /a.bin 10K /A.BIN 30K /a.bin 20K \
		/DATA/rand-0.bin 2K /data/RAND-0.BIN 1K
	[ -z "$stderr" ]
	[ "$(mdir_size img /a.bin)" -eq 30720 ]
	[ "$(mdir_size img /DATA/rand-0.bin)" -eq 2048 ]
	[ "$(mdir -i img ::/ | grep -ci '^a  *bin ')" -eq 1 ]
	mget img /a.bin got
	zeros 30720 | cmp - got
	fsck_clean img
	fat_copies_equal img
}

@test "fatprealloc: a file already large enough is left alone, the image byte-identical" {
	local t
	for t in fat12 fat32; do
		echo "# $t"
		case $t in
		fat12) mkimg fat12 2M img ;;
		*) mkimg fat32 40M img ;;
		esac
		populate img
		before=$(img_sha img)
		run -0 --separate-stderr fatprealloc img /DATA/rand-100000.bin 50000 \
			/DATA/rand-4096.bin 4096 /README.TXT 0
		[ -z "$output" ] && [ -z "$stderr" ]
		[ "$(img_sha img)" = "$before" ]
		run -0 --separate-stderr fatprealloc -n img /DATA/rand-513.bin 513
		[ "$(img_sha img)" = "$before" ]
	done
}

@test "fatprealloc: SOURCE_DATE_EPOCH sets the times of created and grown entries" {
	mkimg fat32 40M img
	populate img
	# 2023-11-14 22:13:20 UTC
	SOURCE_DATE_EPOCH=1700000000 run -0 --separate-stderr fatprealloc -p img \
		/new.bin 10 /DATA/rand-1.bin 100 /nd/in.bin 1 /README.TXT 5
	run -0 mdir -i img ::/
	assert_line --regexp '^new +bin +10 2023-11-14  22:13 *$'
	assert_line --regexp '^nd +<DIR> +2023-11-14  22:13 *$'
	# Unchanged: README.TXT keeps populate's time.
	assert_line --regexp '^README +TXT +19 2024-01-02   3:04 *$'
	run -0 mdir -i img ::/DATA
	assert_line --regexp '^rand-1 +bin +100 2023-11-14  22:13 *$'
	run -0 mdir -i img ::/nd
	assert_line --regexp '^in +bin +1 2023-11-14  22:13 *$'
	assert_line --regexp '^\. +<DIR> +2023-11-14  22:13 *$'
	run -0 fatls -l img /new.bin
	[[ $output == *" 2023-11-14T22:13:20 /new.bin" ]]
	forget_sum img /DATA/rand-1.bin
	judge img
}

# mdir_names IMG DIR: "SHORT<tab>LONG" per entry, as mdir lists them.
mdir_names()
{
	mdir -i "$1" "::$2" </dev/null | "$FK_PYTHON" -c '
import re, sys
pat = re.compile(r"^(.{8}) (.{3}) +(<DIR>|\d+) +\d{4}-\d\d-\d\d +\d+:\d\d(?:  (.+))?$")
for line in sys.stdin:
    m = pat.match(line.rstrip())
    if m:
        base, ext, size, lng = m.groups()
        short = base.rstrip() + ("." + ext.rstrip() if ext.strip() else "")
        if short not in (".", ".."):
            print(short + "\t" + (lng or short))'
}

@test "fatprealloc: long and Unicode names, unique aliases (~N and hashed tails); fsck clean" {
	local t i dir
	local -a names=('A much longer name than 8.3.txt' 'Grüße aus Köln.txt'
		'日本語のファイル.bin' 'name with  two spaces' 'lower.txt'
		'Longfilename one.txt' 'Longfilename two.txt' 'x.y.z.tar.gz'
		"$(printf 'n%.0s' {1..200}).bin")
	for ((i = 1; i <= 20; i++)); do
		names+=("Report number $i.txt")
	done
	for t in fat16 fat32; do
		for dir in / /SUB; do
			echo "# $t $dir"
			mkimg "$t" 40M img
			[[ $dir == / ]] || mmd -i img ::/SUB </dev/null
			# An 8.3 file that takes the first alias of the long names.
			echo taken >taken.txt
			mcopy -i img taken.txt "::${dir%/}/LONGFI~1.TXT" </dev/null
			args=()
			for n in "${names[@]}"; do
				args+=("${dir%/}/$n" 100)
			done
			run -0 --separate-stderr fatprealloc img "${args[@]}"
			[ -z "$stderr" ]
			mdir_names img "$dir" >names.txt
			cat names.txt
			for n in "${names[@]}"; do
				cut -f2 names.txt | grep -qxF -- "$n"
			done
			# Every short name unique; LONGFI~1 kept; ~1..~4 then hashed.
			[ "$(cut -f1 names.txt | sort | uniq -d)" = "" ]
			[ "$(grep -c $'^LONGFI~1.TXT\tLONGFI~1.TXT$' names.txt)" -eq 1 ]
			grep -q $'^LONGFI~2.TXT\tLongfilename one.txt$' names.txt
			grep -q $'^LONGFI~3.TXT\tLongfilename two.txt$' names.txt
			[ "$(grep -cE $'^REPORT~[1-4].TXT\tReport number' names.txt)" -eq 4 ]
			[ "$(grep -cE $'^RE[0-9A-F]{4}~[1-9].TXT\tReport number' names.txt)" -eq 16 ]
			grep -q $'^lower.txt\tlower.txt$' names.txt
			mget img "${dir%/}/日本語のファイル.bin" got
			zeros 100 | cmp - got
			fsck_clean img
		done
	done
}

@test "fatprealloc: 1,100 files created in one directory in one run" {
	local i
	mkimg fat32 40M img
	local -a args=()
	for ((i = 1; i <= 1100; i++)); do
		printf -v n '/big/f%04d.bin' "$i"
		args+=("$n" 1)
	done
	args+=('/big/A long name at the end.txt' 10)
	run -0 --separate-stderr fatprealloc -p img "${args[@]}"
	[ -z "$stderr" ]
	run -0 mdir -i img ::/big
	assert_output --regexp ' 1103 files '
	assert_line --regexp '^f1100 +bin +1 '
	assert_line --regexp ' A long name at the end\.txt$'
	# The directory spans many clusters: 1,105 slots of 32 bytes.
	fatls --json img / | "$FK_PYTHON" -c '
import json, sys
e = [x for x in json.load(sys.stdin)["entries"] if x["name"] == "big"][0]
assert e["clusters"] >= 1105 * 32 // int(sys.argv[1]), e' "$(clus_len img)"
	fsck_clean img
	fat_copies_equal img
	fsinfo_exact img
}

@test "fatprealloc: a long name that does not fit a directory's last cluster goes whole into a new one, visible to mtools" {
	local c off t
	for t in fat16 fat32; do
		echo "# $t"
		mkimg "$t" 40M img
		c=$(clus_len img)
		# One free slot left: ., .. and C/32 - 3 files.
		populate_big_dir img /D $((c / 32 - 3))
		run -0 --separate-stderr fatprealloc img '/D/A long name in a full dir.txt' 10
		run -0 mdir -i img ::/D
		assert_line --regexp ' 10 [0-9-]+ +[0-9:]+  A long name in a full dir\.txt$'
		assert_output --regexp " $((c / 32)) files "
		# The directory's first cluster ends in a deleted slot, not
		# in a piece of the long name nor an end mark.
		off=$(fatls --json img / | "$FK_PYTHON" -c '
import json, sys
print([x for x in json.load(sys.stdin)["entries"] if x["name"] == "D"][0]["runs"][0]["offset"])')
		[ "$(raw img $((off + c - 32)) 1 | od -An -tx1 | tr -d ' ')" = e5 ]
		fsck_clean img
	done
}

@test "fatprealloc: a full FAT12/16 root directory is ENOSPC, image unchanged" {
	local t i
	for t in fat12 fat16; do
		echo "# $t"
		case $t in
		fat12) mkimg fat12 2M img -r 32 ;;
		*) mkimg fat16 16M img -r 32 ;;
		esac
		run -0 fat_geometry img
		assert_line root_secs=2
		rm -rf files && mkdir files
		for ((i = 0; i < 30; i++)); do
			echo "$i" >"files/F$i.TXT"
		done
		mcopy -i img files/* ::/ </dev/null
		before=$(img_sha img)
		run -1 --separate-stderr fatprealloc img /A.BIN 1 /B.BIN 1 /C.BIN 1
		[ "$stderr" = "fatprealloc: img:/C.BIN: No space left on device (the root directory is full)" ]
		[ "$(img_sha img)" = "$before" ]
		# A long name needs 3 slots; 2 are free.
		run -1 --separate-stderr fatprealloc img '/A long name.txt' 1
		[ "$stderr" = "fatprealloc: img:/A long name.txt: No space left on device (the root directory is full)" ]
		[ "$(img_sha img)" = "$before" ]
		run -0 --separate-stderr fatprealloc img /A.BIN 1 /B.BIN 1
		fsck_clean img
	done
}

@test "fatprealloc: sizes: 4G - 1 accepted, 4G refused (File too large), garbage is a usage error" {
	mkimg fat32 4200M big.img -s 64
	run -0 --separate-stderr fatprealloc --no-zero big.img /huge.bin 4294967295
	[ -z "$stderr" ]
	[ "$(mdir_size big.img /huge.bin)" -eq 4294967295 ]
	[ "$(file_field big.img /huge.bin allocated)" -eq $((4 << 30)) ]
	# Walked in the FAT by fatimg.py: 131072 clusters of 32K, then EOC.
	run -0 fatimg_py big.img '
c, n = int(sys.argv[3]), 0
while 2 <= c < len(e) + 2 and n <= len(e):
    n, c = n + 1, e[c - 2]
print(n, c >= 0x0FFFFFF8)' "$(file_field big.img /huge.bin first_cluster)"
	[ "$output" = "131072 True" ]
	fsck_clean_4g big.img /HUGE.BIN
	fat_copies_equal big.img
	fsinfo_exact big.img
	rm -f big.img

	mkimg fat16 16M img
	before=$(img_sha img)
	for s in 4G 4294967296 4096M 5T 3.9999999999G; do
		run -1 --separate-stderr fatprealloc img /ok.bin 1K /x.bin "$s"
		[ "$stderr" = "fatprealloc: img:/x.bin: File too large (FAT files end at 4 GiB - 1 byte)" ]
		[ "$(img_sha img)" = "$before" ]
	done
	for s in 12Q abc 1.5 .5M '' 1M2 0x10 -1 -1.5G 18446744073709551616 20000000000000000000 1E; do
		run -2 --separate-stderr fatprealloc -- img /x.bin "$s"
		[[ $stderr == "fatprealloc: invalid size '$s'"*": sizes are bytes, or a number with K M G T (KiB MiB GiB TiB: powers of 1024) or KB MB GB TB (powers of 1000), such as 4096, 64M or 1.5G (try 'fatprealloc --help')" ]]
		[ -z "$output" ]
		[ "$(img_sha img)" = "$before" ]
	done
}

# fsck_clean_4g IMG PATH: fsck.fat -n IMG is clean but for its one false
# report on PATH, a file of 4 GiB - 1 bytes: fsck.fat 4.2 multiplies the
# chain's clusters by the cluster size in 32 bits, so a chain of exactly
# 4 GiB (the only one that fits such a file) counts as 0 bytes.
fsck_clean_4g()
{
	local out
	out=$(fsck.fat -n "$1" 2>&1 </dev/null) && return 0
	out=$(sed -e '1d' -e '$d' <<<"$out")
	if [[ $out != "$2"$'\n'"  File size is 4294967295 bytes, cluster chain length is 0 bytes."$'\n'"  Truncating file to 0 bytes."$'\n\n'"Leaving filesystem unchanged." ]]; then
		echo "fsck.fat -n $1 says more than its 32-bit overflow:" >&2
		fsck.fat -n "$1" >&2
		return 1
	fi
}

# ---- refusals change nothing ------------------------------------------------

@test "fatprealloc: no space: the exact need and free counts, image unchanged" {
	local c free
	for t in fat16 fat32; do
		mkimg "$t" 40M img
		populate img
		c=$(clus_len img)
		free=$(count_free_clusters img)
		before=$(img_sha img)
		run -1 --separate-stderr fatprealloc -v img /a.bin $((2 * c)) \
			/b.bin $(((free - 1) * c))
		[[ $stderr == "fatprealloc: img: No space left on device: the run needs "*" MiB, "*" MiB is free (/b.bin does not fit); $((free + 1)) clusters of $c bytes needed, $free free" ]]
		[ -z "$output" ]
		[ "$(img_sha img)" = "$before" ]
		# Exactly the free space fits.
		run -0 --separate-stderr fatprealloc --no-zero img /a.bin $((2 * c)) \
			/b.bin $(((free - 2) * c))
		[ "$(count_free_clusters img)" -eq 0 ]
		fsck_clean img
		fsinfo_exact img || [ "$(fsinfo_next img)" = 4294967295 ]
	done
}

@test "fatprealloc: one bad pair among good ones refuses the run, image unchanged" {
	mkimg fat16 16M img
	populate img
	before=$(img_sha img)
	run -1 --separate-stderr fatprealloc img /ok1.bin 1K /nodir/x.bin 1K /ok2.bin 1K
	[ "$stderr" = "fatprealloc: img:/nodir/x.bin: No such file or directory (parent directory 'nodir' is missing; -p creates it)" ]
	[ "$(img_sha img)" = "$before" ]
	run -1 --separate-stderr fatprealloc -p img /ok1.bin 1K /new/x.bin 1K /EMPTYDIR 1K
	[ "$stderr" = "fatprealloc: img:/EMPTYDIR: Is a directory" ]
	[ "$(img_sha img)" = "$before" ]
	run -1 --separate-stderr fatprealloc -p img /ok1.bin 1K /README.TXT/x 1K
	[ "$stderr" = "fatprealloc: img:/README.TXT/x: Not a directory" ]
	[ "$(img_sha img)" = "$before" ]
	run -1 --separate-stderr fatprealloc -p img /ok1.bin 1K '/bad*name.txt' 1K
	[ "$stderr" = "fatprealloc: img:/bad*name.txt: '*' is not allowed in FAT names" ]
	[ "$(img_sha img)" = "$before" ]
	run -1 --separate-stderr fatprealloc -p img /ok1.bin 1K /new/x.bin 1K /last.bin 1T
	[[ $stderr == "fatprealloc: img:/last.bin: "* ]]
	[ "$(img_sha img)" = "$before" ]
}

@test "fatprealloc: a directory as the target is EISDIR, image unchanged" {
	mkimg fat32 40M img
	populate img
	before=$(img_sha img)
	for p in /EMPTYDIR /emptydir /deep1/deep2 '/Mixed Case Dir'; do
		run -1 --separate-stderr fatprealloc img "$p" 1K
		[ "$stderr" = "fatprealloc: img:$p: Is a directory" ]
		[ "$(img_sha img)" = "$before" ]
	done
}

@test "fatprealloc: a locked image is refused at once (image is in use), unchanged" {
	mkimg fat16 16M img
	before=$(img_sha img)
	(exec 9<img && flock -x 9 && exec sleep 30) </dev/null >/dev/null 2>&1 3>&- &
	HOLDER=$!
	for ((i = 0; i < 100; i++)); do
		flock -n img true 2>/dev/null || break
		sleep 0.05
	done
	run -1 flock -n img true # the holder has it
	run -1 --separate-stderr timeout 10 fatprealloc img /x.bin 1K
	# The flock(1) that took the lock has exited (the lock stays with
	# the subshell's descriptor): no process is named.
	[ "$stderr" = "fatprealloc: img: image is in use" ]
	[ "$(img_sha img)" = "$before" ]
	kill "$HOLDER"
	wait "$HOLDER" || true
	HOLDER=
	run -0 fatprealloc img /x.bin 1K
	fsck_clean img
}

# ---- partitions ---------------------------------------------------------------

@test "fatprealloc: -P 1, IMAGE@@1M and automatic choice on a partitioned image" {
	mkpartimg disk.img 40M fat16
	populate disk.img@@1M
	mbr=$(raw disk.img 0 $((1 << 20)) | sha256sum)
	size=$(stat -c %s disk.img)
	run -0 --separate-stderr fatprealloc -P 1 disk.img /p1.bin 100K
	run -0 --separate-stderr fatprealloc disk.img@@1M /p2.bin 200K /DATA/rand-1.bin 3000
	run -0 --separate-stderr fatprealloc disk.img /p3.bin 10K
	[ "$(raw disk.img 0 $((1 << 20)) | sha256sum)" = "$mbr" ]
	[ "$(stat -c %s disk.img)" -eq "$size" ]
	[ "$(mdir_size disk.img@@1M /p1.bin)" -eq 102400 ]
	[ "$(mdir_size disk.img@@1M /p2.bin)" -eq 204800 ]
	[ "$(mdir_size disk.img@@1M /p3.bin)" -eq 10240 ]
	mget disk.img@@1M /p2.bin got
	zeros 204800 | cmp - got
	mget disk.img@@1M /DATA/rand-1.bin got
	{ gen_bytes 1 rand-1; zeros 2999; } | cmp - got
	dd if=disk.img of=part.img bs=1M skip=1 status=none
	fsck_clean part.img
	fat_copies_equal disk.img@@1M
	forget_sum disk.img /DATA/rand-1.bin
	check_sums disk.img@@1M
}

# ---- crash safety (fault-injection builds) ----------------------------------

# crash_fixture TYPE: base.img with the populate tree, /grow.bin (700
# bytes), and /BIGD whose one cluster has a single free slot, so that a
# long name created there grows it; sets ARGS, a multi-file run (-p dirs,
# a grown file, new files, a growing directory), and TAIL, fsck.fat's
# report of grow.bin linked to its new clusters but not yet resized.
crash_fixture()
{
	case $1 in
	fat12) mkimg fat12 2M base.img ;;
	fat32) mkimg fat32 40M base.img ;;
	esac
	populate base.img
	# Half the free clusters hold old data (a file written and deleted,
	# and on FAT32 the FSInfo hint forgotten, so allocation starts low):
	# new clusters are then zeroed by real calls, each a crash point.
	head -c $(($(count_free_clusters base.img) * $(clus_len base.img) / 2)) \
		/dev/zero | tr '\0' '\252' >junk.bin
	mcopy -i base.img junk.bin ::/JUNK.BIN </dev/null
	mdel -i base.img ::/JUNK.BIN </dev/null
	if [[ $1 == fat32 ]]; then
		printf '\xff\xff\xff\xff' | dd of=base.img bs=1 conv=notrunc \
			status=none seek=$((512 + 492))
	fi
	populate_big_dir base.img /BIGD $(($(clus_len base.img) / 32 - 3))
	gen_bytes 700 grow >grow.bin
	mcopy -i base.img grow.bin ::/grow.bin </dev/null
	ARGS=(-p --batch 512 /grow.bin 6000 '/BIGD/A long name in a big dir.txt'
		3000 /BIGD/short.bin 100 /n1/n2/f.bin 2000 /new.bin 1000
		'/DATA/Another long name.dat' 5000)
	export SOURCE_DATE_EPOCH=1700000000 # runs comparable byte for byte
	local c
	c=$(clus_len base.img)
	TAIL="/GROW.BIN"$'\n'"  File size is 700 bytes, cluster chain length is > $(((700 + c - 1) / c * c)) bytes."$'\n'"  Truncating file to 700 bytes."
}

# grow_intact IMG [SIZE]: grow.bin holds its 700 bytes, then zeros to its
# size: 700 or GROWN (6000 unless a fixture says), or SIZE when given.
grow_intact()
{
	local size
	mget "$1" /grow.bin got || return 1
	size=$(stat -c %s got)
	cmp -n 700 grow.bin got || return 1
	[[ $size == "${2:-700}" || $size == "${2:-${GROWN:-6000}}" ]] || return 1
	zeros $((size - 700)) | cmp - <(tail -c +701 got)
}

# crash_loop FIXTURE TYPE: FIXTURE TYPE's run crashing after write or
# zero call 1, 2, ... until a run completes, which must then equal one
# uninterrupted run; each crash leaves at worst lost clusters (and
# grow.bin linked to its new clusters but not yet resized).  Sets TOTAL
# and ZEROS, the uninterrupted run's calls.
crash_loop()
{
	local t=$2 n rc
	"$1" "$t"
	cp base.img ref.img
	run -0 --separate-stderr fatprealloc --json ref.img "${ARGS[@]}"
	ZEROS=$(json_stat "$output" zero_calls)
	TOTAL=$(($(json_stat "$output" write_calls) + ZEROS))
	echo "# $t: $TOTAL write and zero calls"
	# Until the run completes: each write and zero call is a crash
	# point, so there are at least as many as --json counts.
	for ((n = 1; ; n++)); do
		echo "# $t: crash after call $n"
		((n <= 2 * TOTAL + 10))
		cp base.img c.img
		cp base.img.sums c.img.sums
		rc=0
		FK_CRASH_AFTER_WRITE=$n fatprealloc c.img "${ARGS[@]}" \
			2>err || rc=$?
		((rc == 0)) && break
		[ "$rc" -eq 99 ]
		sums_intact c.img
		grow_intact c.img
		fsck_at_worst_lost c.img "$TAIL"
	done
	((n > TOTAL))
	[ ! -s err ]
	judge c.img
	[ "$(img_sha c.img)" = "$(img_sha ref.img)" ]
}

# fail_loop FIXTURE TYPE: FIXTURE TYPE's run with write or zero call 1, 2,
# ... failing: one error line, and at worst lost clusters.
fail_loop()
{
	local t=$2 total n
	"$1" "$t"
	cp base.img ref.img
	run -0 --separate-stderr fatprealloc --json ref.img "${ARGS[@]}"
	total=$(($(json_stat "$output" write_calls) + $(json_stat "$output" zero_calls)))
	for ((n = 1; n <= total; n++)); do
		echo "# $t: write call $n fails"
		cp base.img c.img
		cp base.img.sums c.img.sums
		run -1 --separate-stderr env FK_FAIL_WRITE=$n fatprealloc c.img "${ARGS[@]}"
		[ "$stderr" = "fatprealloc: c.img: Input/output error" ]
		[ -z "$output" ]
		sums_intact c.img
		grow_intact c.img
		fsck_at_worst_lost c.img "$TAIL"
	done
}

@test "fatprealloc: a crash after any write call leaves at worst lost clusters" {
	faults_compiled || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	local t
	for t in fat12 fat32; do
		crash_loop crash_fixture "$t"
		((TOTAL >= 8))
		# Every new file lands on old data: zeroing is in the loop.
		((ZEROS >= 5))
	done
}

@test "fatprealloc: a failed write call fails the run (one error line), leaving at worst lost clusters" {
	faults_compiled || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	fail_loop crash_fixture fat12
	fail_loop crash_fixture fat32
}

# ---- signals ----------------------------------------------------------------

# same_but_free IMG REF [OFF LEN]: IMG is byte-for-byte REF except in
# clusters that are free in REF's first FAT and still free in IMG's, and
# in LEN bytes at OFF, where they are zeros in IMG: what a rolled-back run
# may leave (zeros or fresh directory blocks nobody reaches, and zeros in
# the slack past the end of a file it was to grow).  Names the first
# difference otherwise.
same_but_free()
{
	"$FK_PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import fatimg
a, b = fatimg.Volume(sys.argv[2]), fatimg.Volume(sys.argv[3])
ea, eb = list(a.entries(a.fat(0))), list(b.entries(b.fat(0)))
da, db = open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
start, clus = a.data_start * a.bps, a.bps * a.spc
end = start + a.nclus * clus
def first_diff(x, y, off):
    return off + next(i for i in range(len(x)) if x[i] != y[i])
if len(sys.argv) > 4:
    o, n = int(sys.argv[4]), int(sys.argv[5])
    if da[o:o + n] != bytes(n) and da[o:o + n] != db[o:o + n]:
        sys.exit("same_but_free: slack at %d is neither zeros nor as it was" % o)
    da = da[:o] + db[o:o + n] + da[o + n:]
if len(da) != len(db):
    sys.exit("same_but_free: sizes differ")
if da[:start] != db[:start]:
    sys.exit("same_but_free: byte %d differs (boot sectors, FATs or root)"
             % first_diff(da[:start], db[:start], 0))
for c in range(a.nclus):
    if ea[c] == 0 and eb[c] == 0:
        continue
    o = start + c * clus
    if da[o:o + clus] != db[o:o + clus]:
        sys.exit("same_but_free: cluster %d (in use) differs" % (c + 2))
if da[end:] != db[end:]:
    sys.exit("same_but_free: bytes after the last cluster differ")
' "$FATKIT_HELPERS" "$@"
}

# grow_slack IMG: "OFF LEN" of the slack past grow.bin's 700 bytes in its
# last cluster.
grow_slack()
{
	local first last off len c
	c=$(clus_len "$1") || return 1
	read -r first last off len < <(chain_runs "$1" /grow.bin | tail -n 1)
	echo "$((off + len - c + 700 % c)) $((c - 700 % c))"
}

# signal_judged IMG rolled|completed: IMG is what a run stopped before
# its commit point may leave, or passes judge; grow.bin's first 700
# bytes are intact either way.
signal_judged()
{
	if [ "$2" = rolled ]; then
		pc_rolled_back "$1"
	else
		judge "$1"
	fi
	grow_intact "$1"
}

# signal_loop TYPE: the crash_fixture run with a signal raised before each
# write and zero call in turn (SIGINT, SIGTERM, SIGHUP by turns; with
# FK_SIGNAL_AGAIN set, again before every later call).
signal_loop()
{
	local t=$1 total zero n sig rolled=0 completed=0 line ref_sha
	local -a sigs=(2 15 1)
	crash_fixture "$t"
	read -ra SLACK < <(grow_slack base.img)
	cp base.img ref.img
	run -0 --separate-stderr fatprealloc --json ref.img "${ARGS[@]}"
	ref_sha=$(img_sha ref.img)
	zero=$(json_stat "$output" zero_calls)
	total=$(($(json_stat "$output" write_calls) + zero))
	for ((n = 1; n <= total; n++)); do
		sig=${sigs[n % 3]}
		echo "# $t: signal $sig before call $n of $total${FK_SIGNAL_AGAIN:+, and again}"
		cp base.img c.img
		cp base.img.sums c.img.sums
		run --separate-stderr env FK_SIGNAL_BEFORE_WRITE=$n FK_SIGNAL=$sig \
			fatprealloc c.img "${ARGS[@]}"
		[ "$status" -eq $((128 + sig)) ]
		[ -z "$output" ]
		line=${stderr##*$'\n'}
		if [[ -n ${FK_SIGNAL_AGAIN:-} ]]; then
			# Each later call: one line saying it is ignored.
			[[ $stderr == *"fatprealloc: signal ignored; stopping safely, please wait"* ]] ||
				((n == total))
		else
			[ "$line" = "$stderr" ] # one line
		fi
		if [ "$line" = "fatprealloc: c.img: interrupted; nothing was changed" ]; then
			# Never once the run went past its commit point.
			((completed == 0))
			rolled=$((rolled + 1))
			# each distinct image judged once (once_for)
			once_for c.img base.img -- signal_judged c.img rolled
		else
			[ "$line" = "fatprealloc: c.img: interrupted after the commit point; the run was completed" ]
			completed=$((completed + 1))
			[ "$(img_sha c.img)" = "$ref_sha" ]
			once_for c.img base.img -- signal_judged c.img completed
		fi
	done
	echo "# $t: $rolled rolled back, $completed completed, $zero zero calls"
	# Every zero call comes before the commit point: a signal there
	# rolls back.
	((rolled > zero && completed >= 1))
}

@test "fatprealloc: a signal at any write or zero call rolls back before the commit point and completes after it (exit 128 + N)" {
	faults_compiled || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	signal_loop fat12
	signal_loop fat32
}

@test "fatprealloc: more signals while it rolls back or completes are ignored, each with a line" {
	faults_compiled || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	FK_SIGNAL_AGAIN=1 signal_loop fat32
}

@test "fatprealloc: a real SIGTERM (strace-injected) before the commit point changes nothing; after it the run completes" {
	command -v strace >/dev/null || skip "strace is not installed"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
	local n writes line rolled=0
	local -a slack
	crash_fixture fat32
	read -ra slack < <(grow_slack base.img)
	cp base.img ref.img
	run -0 strace -f -qq -o w.log -e trace=pwrite64,pwritev,fallocate \
		fatprealloc ref.img "${ARGS[@]}"
	writes=$(grep -cE 'pwrite(64|v)\(' w.log)
	echo "# $writes write calls"
	for ((n = 1; n <= writes; n++)); do
		cp base.img c.img
		cp base.img.sums c.img.sums
		run --separate-stderr strace -f -qq -o /dev/null -e trace=pwrite64,pwritev \
			-e inject=pwrite64,pwritev:signal=SIGTERM:when=$n \
			fatprealloc c.img "${ARGS[@]}"
		[ "$status" -eq 143 ]
		line=$stderr
		if [ "$line" = "fatprealloc: c.img: interrupted; nothing was changed" ]; then
			same_but_free c.img base.img "${slack[@]}"
			fsck_clean c.img
			rolled=$((rolled + 1))
		else
			[ "$line" = "fatprealloc: c.img: interrupted after the commit point; the run was completed" ]
			judge c.img
			[ "$(img_sha c.img)" = "$(img_sha ref.img)" ]
		fi
	done
	echo "# $rolled of $writes rolled back"
	((rolled >= 1 && rolled < writes))
}

@test "fatprealloc: a signal before the first write leaves every byte as it was, a FAT copy that differs included" {
	command -v strace >/dev/null || skip "strace is not installed"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
	local reads before
	mkimg fat16 16M img
	# FAT copy 2 differs from copy 1 in the entry of cluster 1034 (FAT
	# sector 4), which the run does not write: a run that would write a
	# sector whose copies differ is refused before its first write
	# (fatprealloc-mirror.bats), and the difference must survive this
	# one's stop.
	local rsvd_secs fat_secs
	eval "$(fat_geometry img | grep -E '^(rsvd_secs|fat_secs)=')"
	local fat2=$((rsvd_secs + fat_secs))
	printf '\xf7\xff' | dd of=img bs=1 seek=$((fat2 * 512 + 4 * 512 + 20)) conv=notrunc status=none
	cp img ref.img
	strace -f -qq -o r.log -e trace=pread64,preadv,pwrite64,pwritev,fallocate \
		fatprealloc ref.img /x.bin 64K
	# The pread64 calls before the first write (strace counts each
	# system call on its own): a signal at the last of them is heard at
	# the commit's first stop check.
	reads=$(awk '/pwrite|fallocate/ { exit } /pread64\(/ { n++ } END { print n }' r.log)
	before=$(img_sha img)
	run -130 --separate-stderr strace -f -qq -o /dev/null -e trace=pread64 \
		-e inject=pread64:signal=SIGINT:when=$reads \
		fatprealloc img /x.bin 64K
	[ "$stderr" = "fatprealloc: img: interrupted; nothing was changed" ]
	[ "$(img_sha img)" = "$before" ]
}

# ---- --per-cluster: a stop between two clusters ---------------------------

# pc_fixture TYPE: crash_fixture's image with a --per-cluster run (four
# write calls a cluster; the loops leave --sync out, which adds only
# fsyncs, and time): grow.bin grows by three clusters, then a
# long name in /BIGD (which grows) gets two, a file in two new
# directories and a new file one each.  Sets ARGS, GROWN, and PC_PATHS
# with each file's PC_WANT and PC_OLD (clusters it has).
pc_fixture()
{
	local c
	crash_fixture "$1"
	c=$(clus_len base.img)
	GROWN=$((700 + 3 * c))
	PC_PATHS=(/grow.bin '/BIGD/A long name in a big dir.txt' /n1/n2/f.bin /new.bin)
	PC_WANT=("$GROWN" $((2 * c)) 100 1)
	PC_OLD=($(((700 + c - 1) / c)) 0 0 0)
	pc_args
}

# pc_sizes_ok IMG [CUT GOT]: each file of the run reads as its size in
# mdir, zeros past what it held: the size asked for, or, when a stop cut
# the run at file CUT (an index) after GOT of its new clusters, as far as
# its chain reaches for that file and the size it had for those after it.
pc_sizes_ok()
{
	local img=$1 cut=${2:-99} got=${3:-0} c i want
	c=$(clus_len "$img") || return 1
	for ((i = 0; i < ${#PC_PATHS[@]}; i++)); do
		want=${PC_WANT[i]}
		if ((i > cut || (i == cut && got == 0))); then
			want=$((PC_OLD[i] ? 700 : 0))
		elif ((i == cut && (PC_OLD[i] + got) * c < want)); then
			want=$(((PC_OLD[i] + got) * c))
		fi
		if ((i == 0)); then
			grow_intact "$img" "$want" || return 1
			continue
		fi
		mget "$img" "${PC_PATHS[i]}" got.bin || return 1
		zeros "$want" | cmp - got.bin || return 1
	done
}

# pc_cut_ok (helpers/common.bash) judges a cut run: fsck.fat clean, not
# even lost clusters, FSInfo exact; fsck.fat clean after the rerun.
PC_JUDGE=judge PC_FINAL=fsck_clean

@test "fatprealloc --per-cluster: a SIGTERM (strace-injected) between two clusters keeps what they took, the volume clean; the same command finishes" {
	command -v strace >/dev/null || skip "strace is not installed"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
	local writes
	pc_fixture fat32
	ARGS=(--sync "${ARGS[@]}")
	cp base.img ref.img
	cp base.img.sums ref.img.sums
	run -0 strace -f -qq -o w.log -e trace=pwrite64,pwritev \
		fatprealloc ref.img "${ARGS[@]}"
	judge ref.img
	pc_sizes_ok ref.img
	writes=$(grep -cE 'pwrite(64|v)\(' w.log)
	echo "# $writes write calls"
	cp base.img c.img
	cp base.img.sums c.img.sums
	# A third in: inside grow.bin's new clusters.
	run --separate-stderr strace -f -qq -o /dev/null -e trace=pwrite64,pwritev \
		-e inject=pwrite64,pwritev:signal=SIGTERM:when=$((writes / 3)) \
		fatprealloc c.img "${ARGS[@]}"
	[ "$status" -eq 143 ]
	[ -z "$output" ]
	[[ $stderr =~ ^fatprealloc:\ c\.img:\ interrupted\;\ /grow\.bin\ got\ [12]\ of\ its\ 3\ new\ clusters,\ 3\ more\ files\ none\;\ run\ again\ to\ finish$ ]]
	pc_cut_ok c.img "$stderr"
}

@test "fatprealloc --per-cluster --sync: a real SIGTERM is heard between two clusters, within a second, and leaves a clean volume" {
	local start ms
	mkimg_geom 32 512 512 2 40M img
	# 61,440 clusters, four synchronous writes each: minutes of work.
	start=$(date +%s%N)
	run --separate-stderr timeout --preserve-status -k 10 -s TERM 0.5 \
		fatprealloc --per-cluster --sync --no-zero img /f.bin 30M
	ms=$((($(date +%s%N) - start) / 1000000 - 500))
	echo "# heard $ms ms after the signal"
	[ "$status" -eq 143 ]
	[[ $stderr =~ ^fatprealloc:\ img:\ interrupted\;\ /f\.bin\ got\ ([0-9]+)\ of\ its\ 61440\ new\ clusters\;\ run\ again\ to\ finish$ ]]
	((ms < 1000))
	fsck_clean img
	fat_copies_equal img
	fsinfo_exact img
	[ "$(mdir_size img /f.bin)" -eq $((BASH_REMATCH[1] * 512)) ]
}

# pc_rolled_back IMG: what a run stopped before its commit point may
# leave (PC_ROLLED of pc_signal_each): base.img's bytes but in clusters
# free in both and in grow.bin's slack (SLACK), fsck.fat clean, the FAT
# copies equal.
pc_rolled_back()
{
	same_but_free "$1" base.img "${SLACK[@]}"
	fsck_clean "$1"
	fat_copies_equal "$1"
}

@test "fatprealloc --per-cluster: a signal at any write or zero call rolls back, keeps the clusters taken, or completes: never lost clusters" {
	faults_compiled || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	pc_fixture fat12
	read -ra SLACK < <(grow_slack base.img)
	PC_ROLLED=pc_rolled_back
	pc_signal_each 2 15 1
	((ROLLED >= 1 && CUT >= 10 && COMPLETED >= 1))
}

@test "fatprealloc --per-cluster: a crash after any write call, or a failed one, leaves at worst lost clusters" {
	faults_compiled || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	crash_loop pc_fixture fat12
	fail_loop pc_fixture fat12
}

# ---- system calls -----------------------------------------------------------

# fsyncs LOG: fsync and fdatasync calls in strace log LOG.
fsyncs()
{
	grep -cE '^([0-9]+ +|\[pid +[0-9]+\] )?f(data)?sync\(' "$1" || true
}

@test "fatprealloc -s: fsyncs grow with batches, not clusters; --per-cluster -s about 4 per cluster" {
	command -v strace >/dev/null || skip "strace is not installed"
	local small big pc n
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
	mkimg_geom 16 512 512 2 30M a.img
	cp a.img b.img
	cp a.img c.img
	strace -f -qq -e trace=fsync,fdatasync -o a.log \
		fatprealloc -s --stats a.img /x.bin 1M >a.out
	strace -f -qq -e trace=fsync,fdatasync -o b.log \
		fatprealloc -s --stats b.img /x.bin 16M >b.out
	small=$(fsyncs a.log) big=$(fsyncs b.log)
	echo "# fsyncs: $small for 1M, $big for 16M (32768 clusters)"
	[ "$small" -eq "$big" ]
	((small >= 2 && small <= 10))
	[ "$(stats_value "$(cat a.out)" fsyncs)" -eq "$small" ]
	[ "$(stats_value "$(cat b.out)" fsyncs)" -eq "$big" ]
	# The default is one fsync; --no-sync none.
	cp c.img d.img
	strace -f -qq -e trace=fsync,fdatasync -o d.log fatprealloc d.img /x.bin 1M
	[ "$(fsyncs d.log)" -eq 1 ]
	strace -f -qq -e trace=fsync,fdatasync -o e.log fatprealloc --no-sync c.img /x.bin 1M
	[ "$(fsyncs e.log)" -eq 0 ]
	# --per-cluster --sync: two synchronous FAT writes (each to both
	# copies) per cluster.
	mkimg_geom 16 512 512 2 30M p.img
	n=200
	strace -f -qq -e trace=fsync,fdatasync -o p.log \
		fatprealloc --per-cluster -s p.img /pc.bin $((n * 512))
	pc=$(fsyncs p.log)
	echo "# --per-cluster -s: $pc fsyncs for $n clusters"
	((pc * 10 >= 35 * n && pc * 10 <= 45 * n))
	fsck_clean p.img
	fsck_clean b.img
}

@test "fatprealloc: a signal during the zeroing of a large file stops it after one 8 MiB step, changing nothing" {
	command -v strace >/dev/null || skip "strace is not installed"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
	local steps
	mkimg_geom 32 512 4K 2 300M base.img
	# 200 MiB of old data in free clusters: zeroed by real calls.
	head -c 200M /dev/zero | tr '\0' '\252' >junk.bin
	mcopy -i base.img junk.bin ::/JUNK.BIN </dev/null
	mdel -i base.img ::/JUNK.BIN </dev/null
	rm junk.bin
	cp base.img ref.img
	strace -f -qq -o ref.log -e trace=fallocate fatprealloc ref.img /big.bin 190M
	steps=$(grep -c 'fallocate(' ref.log)
	echo "# $steps zeroing calls uninterrupted"
	grep -q 'fallocate(.* = 0$' ref.log || skip "this host does not zero with fallocate"
	((steps >= 20)) # one per 8 MiB step
	cp base.img c.img
	run --separate-stderr strace -f -qq -o c.log -e trace=fallocate \
		-e inject=fallocate:signal=SIGINT:when=1 fatprealloc c.img /big.bin 190M
	[ "$status" -eq 130 ]
	[ "$stderr" = "fatprealloc: c.img: interrupted; nothing was changed" ]
	[ "$(grep -c 'fallocate(' c.log)" -eq 1 ]
	same_but_free c.img base.img
	fsck_clean c.img
}

@test "fatprealloc -s: one fsync per ordering point: 2 when only new files and directories are created, 3 with a grown file" {
	command -v strace >/dev/null || skip "strace is not installed"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
	mkimg fat16 16M a.img
	populate a.img
	cp a.img b.img
	# New files and a new directory (one cluster each, nothing linked):
	# the chains with their zeros, then the entries with FSInfo.
	strace -f -qq -e trace=fsync,fdatasync -o a.log fatprealloc -s -p \
		--stats a.img /x.bin 1M /y.bin 10K '/New dir/z.bin' 5K >a.out
	[ "$(fsyncs a.log)" -eq 2 ]
	[ "$(stats_value "$(cat a.out)" fsyncs)" -eq 2 ]
	# A grown file adds the barrier between its link and its entry.
	strace -f -qq -e trace=fsync,fdatasync -o b.log fatprealloc -s \
		--stats b.img /DATA/rand-4096.bin 1M /y.bin 10K >b.out
	[ "$(fsyncs b.log)" -eq 3 ]
	[ "$(stats_value "$(cat b.out)" fsyncs)" -eq 3 ]
	fsck_clean a.img
	fsck_clean b.img
	[ "$(mdir_size b.img /DATA/rand-4096.bin)" -eq 1048576 ]
}

@test "fatprealloc: a trailing slash asks for a directory: EISDIR, ENOTDIR or ENOENT, image unchanged" {
	mkimg fat16 16M img
	populate img
	before=$(img_sha img)
	run -1 --separate-stderr fatprealloc img /DATA/ 1M
	[ "$stderr" = "fatprealloc: img:/DATA/: Is a directory" ]
	run -1 --separate-stderr fatprealloc img /README.TXT/ 1M
	[ "$stderr" = "fatprealloc: img:/README.TXT/: Not a directory" ]
	run -1 --separate-stderr fatprealloc img /nope/ 1M
	[ "$stderr" = "fatprealloc: img:/nope/: No such file or directory" ]
	run -1 --separate-stderr fatprealloc img / 1M
	[ "$stderr" = "fatprealloc: img:/: Is a directory" ]
	[ "$(img_sha img)" = "$before" ]
}

@test "fatprealloc: out of space where FSInfo counts lost clusters as free says so and names fatcheck -r" {
	local free avail clus_len size before
	mkimg fat32 34M img
	eval "$(fat_geometry img)"
	free=$(count_free_clusters img)
	[ "$(fsinfo_free img)" -eq "$free" ]
	# The last 1000 clusters become a chain nobody owns in every FAT
	# copy, as a run cut off after taking them leaves it; FSInfo, which
	# writers update last, still counts them free.
	"$FK_PYTHON" - img "$rsvd_secs" "$bytes_per_sec" "$fat_secs" "$nfats" "$nclus" <<'PY'
import struct, sys
img, rsvd, bps, fat_secs, nfats, nclus = sys.argv[1], *map(int, sys.argv[2:])
first, n = nclus + 2 - 1000, 1000
with open(img, "r+b") as f:
    for copy in range(nfats):
        f.seek((rsvd + copy * fat_secs) * bps + 4 * first)
        f.write(b"".join(struct.pack("<I", c + 1) for c in range(first, first + n - 1)))
        f.write(struct.pack("<I", 0x0FFFFFFF))
PY
	avail=$((free - 1000))
	[ "$(count_free_clusters img)" -eq "$avail" ]
	clus_len=$((bytes_per_sec * sec_per_clus))
	size=$(((avail + 10) * clus_len))
	before=$(img_sha img)
	run -1 --separate-stderr fatprealloc img /big.bin "$size"
	[[ $stderr == "fatprealloc: img: No space left on device: the run needs "*" is free (/big.bin does not fit); FSInfo says $free free, so 1000 clusters are likely lost: run 'fatcheck -r img'" ]]
	run -1 --separate-stderr fatprealloc -v img /big.bin "$size"
	[[ $stderr == *"(/big.bin does not fit); $((avail + 10)) clusters of $clus_len bytes needed, $avail free; FSInfo says $free free, so 1000 clusters are likely lost: run 'fatcheck -r img'" ]]
	[ "$(img_sha img)" = "$before" ]
	# The hint is right: after the repair the same request fits.
	run fatcheck -r img
	[ "$status" -eq 1 ]
	run -0 fatprealloc img /big.bin "$size"
	fsck_clean img
	# Out of space with nothing lost: no such hint.
	run -1 --separate-stderr fatprealloc img /more.bin "$size"
	[[ $stderr == "fatprealloc: img: No space left on device: the run needs "*" is free (/more.bin does not fit)" ]]
}
