#!/usr/bin/env bash
# bench/fatcheck.sh: time `fatcheck` against `fsck.fat -n` and compare their
# peak memory and their verdicts.
#
# Builds (once, cached under bench/out/, which git ignores) three sparse
# FAT32 images with mkfs.fat and mcopy: 16 GiB holding 20,000 files (1.5 to
# 24 KB, so chains of 1 to 3 clusters) in 100 directories, 256 GiB holding
# 2,000 such files in 20 directories, and the largest mkfs.fat makes (2 TiB,
# 67 million clusters), empty.  Times both checkers on each with
# hyperfine, measures peak RSS with /usr/bin/time, then damages a copy of the
# 16 GiB image in each way tests/helpers/corrupt.py knows and records both
# verdicts, and whether fsck.fat -n is clean after fatcheck -r.  Prints a
# summary and appends a section to bench/RESULTS.md.
#
#   bench/fatcheck.sh              run (build the images if missing)
#   bench/fatcheck.sh --rebuild    remake the images first
#   bench/fatcheck.sh --image      only build the images (if missing)
#
# Targets from the issue: at least 5x faster than fsck.fat -n, at most half
# its peak memory, the same verdict on every corruption case.
set -euo pipefail

# Paths are relative to the repository root, so the commands recorded in
# RESULTS.md can be pasted as they are.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/out
IMG16=$OUT/fatcheck-16g.img
IMG256=$OUT/fatcheck-256g.img
IMG2T=$OUT/fatcheck-2t.img
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

# make_image IMG SIZE_KIB NDIRS PER_DIR
make_image()
{
	local img=$1 kib=$2 tree=$tmp/tree
	echo "fatcheck.sh: building $img (one-off; cached in bench/out/)" >&2
	mkdir -p "$OUT"
	rm -rf "$tree" "$img"
	make_tree "$tree" "$3" "$4"
	# --invariant pins the serial and timestamps; -S 512, default cluster.
	mkfs.fat --invariant -F 32 -S 512 -C "$img.tmp" "$kib" >/dev/null
	mcopy -s -Q -m -i "$img.tmp" "$tree"/* ::/
	mv "$img.tmp" "$img"
	rm -rf "$tree"
}

need mkfs.fat dosfstools
need mcopy mtools
need hyperfine hyperfine
need /usr/bin/time time
need python3 python3

tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$IMG16.tmp" "$IMG256.tmp" "$IMG2T.tmp" "$WORK"' EXIT
if [[ ${1:-} == --rebuild ]]; then
	rm -f "$IMG16" "$IMG256" "$IMG2T"
fi
[[ -f $IMG16 ]] || make_image "$IMG16" $((16 * 1024 * 1024)) 100 200
[[ -f $IMG256 ]] || make_image "$IMG256" $((256 * 1024 * 1024)) 20 100
if [[ ! -f $IMG2T ]]; then
	echo "fatcheck.sh: building $IMG2T (one-off)" >&2
	mkfs.fat --invariant -F 32 -S 512 -C "$IMG2T.tmp" \
		$((2 * 1024 * 1024 * 1024 - 1)) >/dev/null
	mv "$IMG2T.tmp" "$IMG2T"
fi
[[ ${1:-} == --image ]] && exit 0
make -s "$FATCHECK" >/dev/null || die "cannot build $FATCHECK"

rss()
{
	/usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -n 1
}

# time_pair NAME IMG [RUNS]: hyperfine both checkers on IMG (both must say
# clean); sets MEAN_FC MEAN_FSCK (ms), RSS_FC RSS_FSCK (KiB).
time_pair()
{
	local name=$1 img=$2 runs=${3:-5}
	"$FATCHECK" "$img" >/dev/null || die "$img is not clean to fatcheck"
	fsck.fat -n "$img" >/dev/null || die "$img is not clean to fsck.fat"
	hyperfine -N --output=null --warmup 1 --runs "$runs" \
		--export-markdown "$tmp/$name.md" \
		--export-json "$tmp/$name.json" \
		-n "fatcheck" "$FATCHECK $img" \
		-n "fsck.fat -n" "fsck.fat -n $img" >&2
	read -r MEAN_FC MEAN_FSCK < <(python3 - "$tmp/$name.json" <<'EOF'
import json, sys
r = {x["command"]: x["mean"] for x in json.load(open(sys.argv[1]))["results"]}
print(f'{r["fatcheck"] * 1000:.1f} {r["fsck.fat -n"] * 1000:.1f}')
EOF
)
	RSS_FC=$(rss "$FATCHECK" "$img")
	RSS_FSCK=$(rss fsck.fat -n "$img")
}

ratio()
{
	python3 -c "print(f'{$1 / $2:.1f}')"
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

time_pair 16g "$IMG16"
M16=("$MEAN_FC" "$MEAN_FSCK" "$RSS_FC" "$RSS_FSCK")
time_pair 256g "$IMG256"
M256=("$MEAN_FC" "$MEAN_FSCK" "$RSS_FC" "$RSS_FSCK")
time_pair 2t "$IMG2T" 3
M2T=("$MEAN_FC" "$MEAN_FSCK" "$RSS_FC" "$RSS_FSCK")
verdicts >"$tmp/verdicts.md"

r16=$(ratio "${M16[1]}" "${M16[0]}")
r256=$(ratio "${M256[1]}" "${M256[0]}")
m16=$(ratio "${M16[3]}" "${M16[2]}")
m256=$(ratio "${M256[3]}" "${M256[2]}")
r2t=$(ratio "${M2T[1]}" "${M2T[0]}")
m2t=$(ratio "${M2T[3]}" "${M2T[2]}")
fsck_version=$(fsck.fat -n "$IMG16" 2>&1 | head -n 1)
echo
echo "16 GiB:  fatcheck ${M16[0]} ms, ${M16[2]} KiB; fsck.fat -n ${M16[1]} ms, ${M16[3]} KiB (${r16}x faster, ${m16}x less memory)"
echo "256 GiB: fatcheck ${M256[0]} ms, ${M256[2]} KiB; fsck.fat -n ${M256[1]} ms, ${M256[3]} KiB (${r256}x faster, ${m256}x less memory)"
echo "2 TiB:   fatcheck ${M2T[0]} ms, ${M2T[2]} KiB; fsck.fat -n ${M2T[1]} ms, ${M2T[3]} KiB (${r2t}x faster, ${m2t}x less memory)"
tail -n 1 "$tmp/verdicts.md"

# Append only: others may add sections to RESULTS.md concurrently.
{
	[[ -s $RESULTS ]] && echo
	echo "## fatcheck vs fsck.fat -n"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- machine: $(nproc) CPUs, Linux $(uname -r)," \
		"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "- images: sparse FAT32 (mkfs.fat -F 32 -S 512, default cluster)" \
		"filled by mcopy: 16 GiB with 20000 files in 100 directories," \
		"256 GiB with 2000 files in 20 directories; files of 1500 to" \
		"24000 bytes with long names; and 2 TiB (67 million clusters," \
		"the largest FAT32 mkfs.fat makes), empty"
	echo "- reproduce: \`bench/fatcheck.sh\` (builds the images once, then" \
		"\`hyperfine -N --warmup 1 --runs 5 'build/fatcheck IMG'" \
		"'fsck.fat -n IMG'\` and \`/usr/bin/time -f %M\` on each; the" \
		"verdicts damage a copy of the 16 GiB image with" \
		"\`tests/helpers/corrupt.py\`)"
	echo "- fsck.fat: $fsck_version"
	echo
	echo "### 16 GiB, 20,000 files"
	echo
	cat "$tmp/16g.md"
	echo
	echo "### 256 GiB, 2,000 files"
	echo
	cat "$tmp/256g.md"
	echo
	echo "### 2 TiB, empty"
	echo
	cat "$tmp/2t.md"
	echo
	echo "| image | fatcheck peak RSS | fsck.fat -n peak RSS | speed-up | memory |"
	echo "|:---|---:|---:|---:|---:|"
	echo "| 16 GiB | ${M16[2]} KiB | ${M16[3]} KiB | ${r16}x | ${m16}x less |"
	echo "| 256 GiB | ${M256[2]} KiB | ${M256[3]} KiB | ${r256}x | ${m256}x less |"
	echo "| 2 TiB | ${M2T[2]} KiB | ${M2T[3]} KiB | ${r2t}x | ${m2t}x less |"
	echo
	echo "### Verdicts on the 16 GiB image, one defect at a time"
	echo
	cat "$tmp/verdicts.md"
} >>"$RESULTS"
echo "fatcheck.sh: appended to bench/RESULTS.md" >&2
