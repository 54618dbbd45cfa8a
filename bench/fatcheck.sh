#!/usr/bin/env bash
# bench/fatcheck.sh: time `fatcheck` against `fsck.fat -n` side by side,
# compare their peak memory, and their verdicts on damaged images.
#
# Builds (once, cached under bench/out/, which git ignores) sparse images
# with mkfs.fat --invariant, filled by mcopy (as a user would) or, for the
# nearly full one, by bench/fragfill.py (which writes FAT and directories
# directly and leaves file data as holes); every image is the same on
# every run.  The shapes:
#
#   16g       FAT32, 16 GiB, default clusters (8 KiB), 20,000 files of
#             1.5 to 24 KB with long names in 100 directories
#   16g-4k    the same files on 16 GiB with 4 KiB clusters (4 million
#             clusters: a 16 MiB FAT per copy)
#   fat16     FAT16, 2 GiB, 64 KiB clusters, the same 20,000 files
#   frag      FAT32, 8 GiB, 4 KiB clusters, 97% full: 20,000 files in 50
#             directories whose chains interleave 16 at a time, about 100
#             fragments each (bench/fragfill.py IMG 50 400 97 16)
#   256g      FAT32, 256 GiB, 2,000 such files in 20 directories
#   2t        FAT32, the largest mkfs.fat makes (2 TiB, 67 million
#             clusters), empty
#
# Each shape is timed by bench/pair.py: one warm-up run of each checker,
# then RUNS rounds running both in turn (alternating which goes first),
# medians of wall time; peak RSS is the median of three runs under
# /usr/bin/time -f %M.  Both checkers run at this script's nice value.
# Then a copy of the 16g image is damaged in each way
# tests/helpers/corrupt.py knows, and both verdicts are recorded, with
# whether fsck.fat -n is clean after fatcheck -r.  Prints a summary and
# appends a section to bench/RESULTS.md.
#
#   bench/fatcheck.sh               run (build the images if missing)
#   bench/fatcheck.sh --rebuild     remake the images first
#   bench/fatcheck.sh --image       only build the images (if missing)
#   bench/fatcheck.sh --runs N      N rounds per shape (default 11; the
#                                   2 TiB shape takes a third of them)
#   bench/fatcheck.sh --no-verdicts skip the damaged-image verdicts
#
# Targets (issue #10): on every shape at least 10x faster than fsck.fat
# -n at no more than a quarter of its peak memory, and the same verdict
# on every corruption case.
set -euo pipefail

# Paths are relative to the repository root, so the commands recorded in
# RESULTS.md can be pasted as they are.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/out
IMG16=$OUT/fatcheck-16g.img
WORK=$OUT/fatcheck-work.img
RESULTS=bench/RESULTS.md
CORRUPT=tests/helpers/corrupt.py
FATCHECK=build/fatcheck

export MTOOLS_SKIP_CHECK=1 MTOOLSRC=/dev/null LC_ALL=C.UTF-8 TZ=UTC

die()
{
	echo "fatcheck.sh: $*" >&2
	exit 1
}

# Benchmark-only tools are not in deps.sh; install them when we can.
need()
{
	local cmd=$1 pkg=$2

	[[ -x $cmd ]] || command -v "$cmd" >/dev/null 2>&1 && return 0
	if [[ $(id -u) -eq 0 ]]; then
		apt-get update -qq && apt-get install -y -qq "$pkg" >/dev/null ||
			die "cannot install $pkg"
	else
		die "$cmd is missing: sudo apt-get install $pkg"
	fi
}

# make_tree DIR NDIRS PER_DIR: "Dir NNN/File NNNNN.dat", long mixed-case
# names, sizes 1500 to 24000 bytes by file number.
make_tree()
{
	local tree=$1 ndirs=$2 per=$3 d
	for ((d = 0; d < ndirs; d++)); do
		mkdir -p "$tree/Dir $(printf %03d "$d")"
		(cd "$tree/Dir $(printf %03d "$d")" && awk -v per="$per" -v d="$d" '
		BEGIN {
			for (f = 0; f < per; f++) {
				name = sprintf("File %05d.dat", f)
				n = (f % 16 + 1) * 1500
				line = sprintf("%03d/%05d ", d, f)
				s = ""
				while (length(s) < n)
					s = s line
				printf "%s", substr(s, 1, n) > name
				close(name)
			}
		}')
	done
}

# make_image IMG SIZE_KIB NDIRS PER_DIR MKFS_OPTION...: mkfs.fat
# --invariant (pinned serial and timestamps) -S 512 and the options, then
# mcopy the tree (kept in $tmp for the next image of the same tree).
make_image()
{
	local img=$1 kib=$2 ndirs=$3 per=$4 tree=$tmp/tree-$3-$4
	shift 4
	echo "fatcheck.sh: building $img (one-off; cached in bench/out/)" >&2
	mkdir -p "$OUT"
	rm -f "$img"
	[[ -d $tree ]] || make_tree "$tree" "$ndirs" "$per"
	mkfs.fat --invariant -S 512 "$@" -C "$img.tmp" "$kib" >/dev/null
	mcopy -s -Q -m -i "$img.tmp" "$tree"/* ::/
	mv "$img.tmp" "$img"
}

# make_frag IMG SIZE_KIB: nearly full of fragmented files, see the top.
make_frag()
{
	local img=$1 kib=$2
	echo "fatcheck.sh: building $img (one-off; cached in bench/out/)" >&2
	mkdir -p "$OUT"
	rm -f "$img"
	mkfs.fat --invariant -S 512 -F 32 -s 8 -C "$img.tmp" "$kib" >/dev/null
	python3 bench/fragfill.py "$img.tmp" 50 400 97 16
	mv "$img.tmp" "$img"
}

# The shapes: name, image, what it is (for the tables).
SHAPES=(16g 16g-4k fat16 frag 256g 2t)
declare -A IMG=(
	[16g]=$IMG16 [16g-4k]=$OUT/fatcheck-16g-4k.img
	[fat16]=$OUT/fatcheck-fat16.img [frag]=$OUT/fatcheck-frag.img
	[256g]=$OUT/fatcheck-256g.img [2t]=$OUT/fatcheck-2t.img
)
declare -A WHAT=(
	[16g]="FAT32 16 GiB, 8 KiB clusters, 20,000 files"
	[16g-4k]="FAT32 16 GiB, 4 KiB clusters, 20,000 files"
	[fat16]="FAT16 2 GiB, 64 KiB clusters, 20,000 files"
	[frag]="FAT32 8 GiB, 4 KiB clusters, 97% full, 20,000 files of ~100 fragments"
	[256g]="FAT32 256 GiB, 2,000 files"
	[2t]="FAT32 2 TiB (67 million clusters), empty"
)

build_images()
{
	local i=${IMG[2t]}
	[[ -f ${IMG[16g]} ]] ||
		make_image "${IMG[16g]}" $((16 * 1024 * 1024)) 100 200 -F 32
	[[ -f ${IMG[16g-4k]} ]] ||
		make_image "${IMG[16g-4k]}" $((16 * 1024 * 1024)) 100 200 \
			-F 32 -s 8
	[[ -f ${IMG[fat16]} ]] ||
		make_image "${IMG[fat16]}" $((2 * 1024 * 1024)) 100 200 \
			-F 16 -s 128
	[[ -f ${IMG[frag]} ]] || make_frag "${IMG[frag]}" $((8 * 1024 * 1024))
	[[ -f ${IMG[256g]} ]] ||
		make_image "${IMG[256g]}" $((256 * 1024 * 1024)) 20 100 -F 32
	if [[ ! -f $i ]]; then
		echo "fatcheck.sh: building $i (one-off)" >&2
		mkfs.fat --invariant -F 32 -S 512 -C "$i.tmp" \
			$((2 * 1024 * 1024 * 1024 - 1)) >/dev/null
		mv "$i.tmp" "$i"
	fi
}

need mkfs.fat dosfstools
need mcopy mtools
need /usr/bin/time time
need python3 python3

RUNS=11
VERDICTS=1
MODE=run
while (($#)); do
	case $1 in
	--rebuild) MODE=rebuild ;;
	--image) MODE=image ;;
	--runs)
		[[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--runs wants a count"
		RUNS=$2
		shift
		;;
	--no-verdicts) VERDICTS=0 ;;
	*) die "unknown option $1 (see the top of bench/fatcheck.sh)" ;;
	esac
	shift
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$OUT"/fatcheck-*.img.tmp "$WORK"' EXIT
if [[ $MODE == rebuild ]]; then
	for s in "${SHAPES[@]}"; do rm -f "${IMG[$s]}"; done
fi
build_images
[[ $MODE == image ]] && exit 0
make -s "$FATCHECK" >/dev/null || die "cannot build $FATCHECK"

# time_pair SHAPE RUNS: both checkers on its image, side by side (both
# must say clean); appends a row to $tmp/table.md and one to the summary.
time_pair()
{
	local name=$1 img=${IMG[$1]} runs=$2 fc fc_rss fsck fsck_rss fc_range
	local fsck_range fc_cpu fsck_cpu speed cpu mem ok
	"$FATCHECK" "$img" >/dev/null || die "$img is not clean to fatcheck"
	fsck.fat -n "$img" >/dev/null || die "$img is not clean to fsck.fat"
	echo "fatcheck.sh: timing $name ($runs rounds)" >&2
	read -r fc fc_rss fsck fsck_rss fc_range fsck_range fc_cpu fsck_cpu < <(
		python3 bench/pair.py "$runs" -- "$FATCHECK" "$img" -- \
			fsck.fat -n "$img")
	speed=$(python3 -c "print(f'{$fsck / $fc:.1f}')")
	cpu=$(python3 -c "print(f'{$fsck_cpu / max($fc_cpu, 0.1):.1f}')")
	mem=$(python3 -c "print(f'{$fsck_rss / $fc_rss:.1f}')")
	ok=$(python3 -c "print('yes' if $fsck / $fc >= 10 and $fc_rss * 4 <= $fsck_rss else 'no')")
	echo "| $name | ${WHAT[$name]} | $fsck ($fsck_range) | $fsck_rss |" \
		"$fc ($fc_range) | $fc_rss | ${speed}x | ${mem}x | $ok |" \
		"$fsck_cpu | $fc_cpu | ${cpu}x |" >>"$tmp/table.md"
	printf '%-7s fsck.fat -n %8.1f ms %7d KiB  fatcheck %7.1f ms %6d KiB  %5sx faster, %5sx less memory\n' \
		"$name" "$fsck" "$fsck_rss" "$fc" "$fc_rss" "$speed" "$mem" \
		>>"$tmp/summary.txt"
}

# Pick files with 2 and 3 clusters (the chain cases need two or more).
big="/Dir 007/File 00015.dat"	# 24000 bytes
other="/Dir 007/File 00014.dat" # 22500 bytes
small="/Dir 008/File 00011.dat" # 18000 bytes
CASES=(
	"fat-copy" "media" "fat1-dirty" "boot-dirty" "backup-boot"
	"fsinfo-sig" "fsinfo-free" "fsinfo-next" "lost" "label"
	"start-range|$big" "link-free|$big" "link-bad|$big"
	"link-reserved|$big" "link-range|$big" "loop|$big"
	"cross|$big|$other" "short|$small" "tail|$small"
	"dot|/Dir 003" "dotdot|/Dir 004" "no-dot|/Dir 005"
	"deep-loop|/Dir 006" "dir-size|/Dir 009"
	"dup|/Dir 010/File 00001.dat|/Dir 010/File 00002.dat"
	"lfn-sum|$small" "lfn-seq|$small" "orphan-lfn|$small"
	"bad-char|$small" "after-end|/Dir 011/File 00003.dat"
)

# verdicts: one table row per case.
verdicts()
{
	local c args a fsck fc strict after same t_fsck t_fc s nsame=0 n=0
	local -a argv
	echo "| case | fsck.fat -n | fatcheck | fatcheck --strict | same verdict | fsck.fat -n after fatcheck -r | fsck.fat ms | fatcheck ms |"
	echo "|:---|:---|:---|:---|:---|:---|---:|---:|"
	for c in "${CASES[@]}"; do
		IFS='|' read -ra argv <<<"$c"
		cp --sparse=always "$IMG16" "$WORK"
		python3 "$CORRUPT" "$WORK" "${argv[@]}" >/dev/null ||
			die "corrupt.py $c failed"
		s=$(date +%s%N)
		if fsck.fat -n "$WORK" >/dev/null 2>&1; then fsck=clean; else fsck=damaged; fi
		t_fsck=$((($(date +%s%N) - s) / 1000000))
		s=$(date +%s%N)
		set +e
		"$FATCHECK" "$WORK" >/dev/null 2>&1
		a=$?
		set -e
		t_fc=$((($(date +%s%N) - s) / 1000000))
		fc=$( ((a & 4)) && echo damaged || echo clean)
		((a & 8)) && fc="not checked (exit $a)"
		set +e
		"$FATCHECK" --strict "$WORK" >/dev/null 2>&1
		a=$?
		set -e
		strict=$( ((a & 4)) && echo damaged || echo clean)
		((a & 8)) && strict="not checked (exit $a)"
		same=no
		[[ $fsck == "$fc" ]] && same=yes
		[[ $same == no && $fsck == "$strict" ]] && same="with --strict"
		[[ $same == no ]] || nsame=$((nsame + 1))
		n=$((n + 1))
		set +e
		"$FATCHECK" -r --trim-prealloc "$WORK" >/dev/null 2>&1
		set -e
		if fsck.fat -n "$WORK" >/dev/null 2>&1; then after=clean; else after=damaged; fi
		echo "| ${argv[0]} | $fsck | $fc | $strict | $same | $after | $t_fsck | $t_fc |"
	done
	echo
	echo "Same verdict on $nsame of $n cases."
}

echo "| shape | image | fsck.fat -n ms (min-max) | fsck.fat KiB |" \
	"fatcheck ms (min-max) | fatcheck KiB | speed-up | memory |" \
	"target met | fsck.fat CPU ms | fatcheck CPU ms | CPU ratio |" \
	>"$tmp/table.md"
echo "|:---|:---|---:|---:|---:|---:|---:|---:|:---|---:|---:|---:|" \
	>>"$tmp/table.md"
: >"$tmp/summary.txt"
for s in "${SHAPES[@]}"; do
	r=$RUNS
	[[ $s == 2t ]] && r=$(((RUNS + 2) / 3))
	time_pair "$s" "$r"
done
((VERDICTS)) && verdicts >"$tmp/verdicts.md"

fsck_version=$(fsck.fat -n "$IMG16" 2>&1 | head -n 1)
cmd=bench/fatcheck.sh
[[ $RUNS == 11 ]] || cmd+=" --runs $RUNS"
((VERDICTS)) || cmd+=" --no-verdicts"
echo
cat "$tmp/summary.txt"
((VERDICTS)) && tail -n 1 "$tmp/verdicts.md"

# Append only: others may add sections to RESULTS.md concurrently.
{
	[[ -s $RESULTS ]] && echo
	echo "## fatcheck vs fsck.fat -n"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- machine: $(nproc) CPUs, Linux $(uname -r)," \
		"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "- command: \`$cmd\` at nice $(nice) (images as its header" \
		"describes); each shape timed by \`bench/pair.py RUNS --" \
		"build/fatcheck IMG -- fsck.fat -n IMG\`: $RUNS alternating" \
		"rounds after a warm-up ($(((RUNS + 2) / 3)) for 2 TiB), median" \
		"wall time and CPU time (user + system); peak RSS the median" \
		"of three runs under \`/usr/bin/time -f %M\`; load average" \
		"at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- fsck.fat: $fsck_version"
	echo
	cat "$tmp/table.md"
	if ((VERDICTS)); then
		echo
		echo "### Verdicts on the 16 GiB image, one defect at a time"
		echo
		cat "$tmp/verdicts.md"
	fi
} >>"$RESULTS"
echo "fatcheck.sh: appended to bench/RESULTS.md" >&2
