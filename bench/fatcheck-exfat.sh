#!/usr/bin/env bash
# bench/fatcheck-exfat.sh: time `fatcheck` against `fsck.exfat -n` on exFAT
# and compare their peak memory.
#
# Builds (once, cached under bench/out/, which git ignores) sparse exFAT
# images with mkfs.exfat, populated by tests/helpers/exfatref.py batch:
#   64 GiB, 20,000 files (1.5 to 24 KB) in 100 directories, twice: with
#          mkfs.exfat's default 128 KiB clusters (half a million clusters)
#          and with 4 KiB clusters (16.7 million, the shape of the FAT32
#          16 GiB / 4 KiB comparison in RESULTS.md, where the per-cluster
#          work shows);
#   1 TiB, the same 20,000 files, with the default 128 KiB clusters (8.4
#          million) and with 32 KiB clusters (33.5 million).
# Times both checkers on each with hyperfine, measures peak RSS with
# /usr/bin/time, prints a summary and appends a section to bench/RESULTS.md.
#
#   bench/fatcheck-exfat.sh              run (build the images if missing)
#   bench/fatcheck-exfat.sh --rebuild    remake the images first
#   bench/fatcheck-exfat.sh --image      only build the images
#
# Target from the issue: at least 5x faster than fsck.exfat -n, at most half
# its peak memory.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/out
RESULTS=bench/RESULTS.md
REF=tests/helpers/exfatref.py
FATCHECK=${FATCHECK:-build/fatcheck}
# name:size:cluster (cluster 0: mkfs.exfat's default)
SHAPES=(64g-default:64G:0 64g-4k:64G:4K 1t-default:1T:0 1t-32k:1T:32K)

export LC_ALL=C.UTF-8 TZ=UTC SOURCE_DATE_EPOCH=1767225600

die()
{
	echo "fatcheck-exfat.sh: $*" >&2
	exit 1
}

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

# batch_lines: 100 directories of 200 files, 1500 to 24000 bytes.
batch_lines()
{
	awk 'BEGIN {
		for (d = 0; d < 100; d++) {
			printf "mkdir '\''/Dir %03d'\''\n", d
			for (f = 0; f < 200; f++)
				printf "put '\''/Dir %03d/File %05d.dat'\'' --size %d\n",
					d, d * 200 + f, (f % 16 + 1) * 1500
		}
	}'
}

# make_image IMG SIZE CLUSTER
make_image()
{
	local img=$1 size=$2 clus=$3
	local -a opt=()
	echo "fatcheck-exfat.sh: building $img (one-off; cached in bench/out/)" >&2
	mkdir -p "$OUT"
	rm -f "$img" "$img.tmp"
	truncate -s "$size" "$img.tmp"
	[[ $clus == 0 ]] || opt=(-c "$clus")
	mkfs.exfat "${opt[@]}" -L bench "$img.tmp" >/dev/null
	batch_lines | python3 "$REF" batch "$img.tmp"
	mv "$img.tmp" "$img"
}

need mkfs.exfat exfatprogs
need hyperfine hyperfine
need /usr/bin/time time
need python3 python3

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in "${SHAPES[@]}"; do
	IFS=: read -r name size clus <<<"$s"
	img=$OUT/exfat-$name.img
	[[ ${1:-} == --rebuild ]] && rm -f "$img"
	[[ -f $img ]] || make_image "$img" "$size" "$clus"
done
[[ ${1:-} == --image ]] && exit 0
[[ $FATCHECK != build/fatcheck ]] || make -s "$FATCHECK" >/dev/null || die "cannot build $FATCHECK"

rss()
{
	/usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -n 1
}

ratio()
{
	python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.1f}')" "$1" "$2"
}

rows=()
tables=()
for s in "${SHAPES[@]}"; do
	IFS=: read -r name size clus <<<"$s"
	img=$OUT/exfat-$name.img
	"$FATCHECK" "$img" >/dev/null || die "$img is not clean to fatcheck"
	fsck.exfat -n "$img" >/dev/null 2>&1 || die "$img is not clean to fsck.exfat"
	ncl=$(python3 "$REF" info "$img" | sed -n 's/^cluster_count=//p')
	csz=$(python3 "$REF" info "$img" | sed -n 's/^cluster_size=//p')
	hyperfine -N --output=null --warmup 2 --runs 10 \
		--export-markdown "$tmp/$name.md" --export-json "$tmp/$name.json" \
		-n fatcheck "$FATCHECK $img" \
		-n "fsck.exfat -n" "fsck.exfat -n $img" >&2
	read -r fc fs < <(python3 - "$tmp/$name.json" <<'EOF'
import json, sys
r = {x["command"]: x["mean"] for x in json.load(open(sys.argv[1]))["results"]}
print(f'{r["fatcheck"] * 1000:.1f} {r["fsck.exfat -n"] * 1000:.1f}')
EOF
)
	rfc=$(rss "$FATCHECK" "$img")
	rfs=$(rss fsck.exfat -n "$img")
	tables+=("### $size, $((csz / 1024)) KiB clusters ($ncl clusters), 20,000 files" ""
		"$(cat "$tmp/$name.md")" "")
	rows+=("| $size / $((csz / 1024)) KiB | $ncl | $fc ms | $fs ms | $(ratio "$fs" "$fc")x | $rfc KiB | $rfs KiB | $(ratio "$rfs" "$rfc")x less |")
	echo "$name: fatcheck $fc ms $rfc KiB; fsck.exfat -n $fs ms $rfs KiB" >&2
done

{
	echo
	echo "## fatcheck vs fsck.exfat -n (exFAT)"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M') UTC"
	echo "- machine: $(nproc) CPUs, Linux $(uname -r), $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "- images: sparse, mkfs.exfat, then 100 directories of 200 files (1500 to 24000 bytes) written by \`tests/helpers/exfatref.py batch\`"
	echo "- reproduce: \`bench/fatcheck-exfat.sh\` (\`hyperfine -N --warmup 2 --runs 10 'build/fatcheck IMG' 'fsck.exfat -n IMG'\` and \`/usr/bin/time -f %M\` on each)"
	echo "- fsck.exfat: $(fsck.exfat -n "$OUT/exfat-64g-default.img" 2>&1 | grep -m 1 version)"
	echo
	printf '%s\n' "${tables[@]}"
	echo "| image | clusters | fatcheck | fsck.exfat -n | speed-up | fatcheck peak RSS | fsck.exfat -n peak RSS | memory |"
	echo "|:---|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s\n' "${rows[@]}"
} >"$tmp/section.md"
cat "$tmp/section.md"
cat "$tmp/section.md" >>"$RESULTS"
