#!/usr/bin/env bash
# bench/fatls.sh: time `fatls -R` against `mdir -/` on a large FAT32 image.
#
# Builds (once, cached under bench/out/, which git ignores) a 16 GiB sparse
# FAT32 image holding 20,000 small files in 100 directories, then times both
# listers side by side with hyperfine and measures the peak RSS of each with
# /usr/bin/time.  Prints a summary and appends a section to bench/RESULTS.md.
#
#   bench/fatls.sh              run (build the image if missing)
#   bench/fatls.sh --rebuild    remake the image first
#   bench/fatls.sh --image      only build the image (if missing)
#
# The target from the issue: fatls at least 3x faster than mdir, with memory
# bounded by the FAT cache and one directory block, not by the file count.
set -euo pipefail

# Paths are relative to the repository root, so the commands recorded in
# RESULTS.md can be pasted as they are.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/out
IMG=$OUT/fatls-16g.img
RESULTS=bench/RESULTS.md
NDIRS=100
PER_DIR=200 # 100 x 200 = 20,000 files
SIZE_KIB=$((16 * 1024 * 1024))

# mtools: no geometry checks on images, no user configuration.
export MTOOLS_SKIP_CHECK=1 MTOOLSRC=/dev/null LC_ALL=C.UTF-8 TZ=UTC

die()
{
	echo "fatls.sh: $*" >&2
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

make_image()
{
	local tree=$tmp/tree d f

	echo "fatls.sh: building $IMG (one-off; cached in bench/out/)" >&2
	mkdir -p "$OUT" "$tree"
	rm -f "$IMG"
	# Long, mixed-case names, so every entry carries long-name slots.
	for ((d = 0; d < NDIRS; d++)); do
		mkdir "$tree/Directory_$(printf %03d "$d")"
	done
	for ((d = 0; d < NDIRS; d++)); do
		for ((f = 0; f < PER_DIR; f++)); do
			printf '%d/%d\n' "$d" "$f"
		done | (
			cd "$tree/Directory_$(printf %03d "$d")" &&
				awk -v d="$d" '{ f = sprintf("File number %05d of dir %03d.txt", NR - 1, d); print > f; close(f) }'
		)
	done
	# --invariant pins the serial and timestamps; -S 512, default cluster.
	mkfs.fat --invariant -F 32 -S 512 -C "$IMG.tmp" "$SIZE_KIB" >/dev/null
	mcopy -s -Q -m -i "$IMG.tmp" "$tree"/* ::/
	mv "$IMG.tmp" "$IMG"
	rm -rf "$tree"
}

need mkfs.fat dosfstools
need mcopy mtools
need hyperfine hyperfine
need /usr/bin/time time
need python3 python3

tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$IMG.tmp"' EXIT
[[ ${1:-} == --rebuild ]] && rm -f "$IMG"
[[ -f $IMG ]] || make_image
[[ ${1:-} == --image ]] && exit 0
make -s build/fatls >/dev/null || die "cannot build build/fatls"

# Sanity: both listers see every file before we time them.
nfatls=$(build/fatls -R "$IMG" | wc -l)
nmdir=$(mdir -/ -b -i "$IMG" ::/ | wc -l)
[[ $nfatls -eq $((NDIRS * PER_DIR + NDIRS)) ]] ||
	die "fatls -R listed $nfatls entries, expected $((NDIRS * PER_DIR + NDIRS))"
[[ $nmdir -ge $((NDIRS * PER_DIR)) ]] || die "mdir listed only $nmdir entries"

# No intermediate shell (-N), so its start-up is not billed to either side;
# both outputs go to /dev/null.
FATLS_CMD="build/fatls -R $IMG"
MDIR_CMD="mdir -/ -i $IMG ::/"
hyperfine -N --output=null --warmup 2 --runs 10 \
	--export-markdown "$tmp/table.md" --export-json "$tmp/times.json" \
	-n "fatls -R" "$FATLS_CMD" -n "mdir -/" "$MDIR_CMD" >&2

rss()
{
	/usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -n 1
}
rss_fatls=$(rss build/fatls -R "$IMG")
rss_mdir=$(rss mdir -/ -i "$IMG" ::/)

read -r mean_fatls mean_mdir ratio < <(python3 - "$tmp/times.json" <<'EOF'
import json, sys
r = {x["command"]: x["mean"] for x in json.load(open(sys.argv[1]))["results"]}
f, m = r["fatls -R"], r["mdir -/"]
print(f"{f * 1000:.1f} {m * 1000:.1f} {m / f:.1f}")
EOF
)

verdict="meets"
python3 -c "import sys; sys.exit(0 if float('$ratio') >= 3 else 1)" ||
	verdict="misses"

echo
echo "fatls -R: ${mean_fatls} ms mean, peak RSS ${rss_fatls} KiB"
echo "mdir -/:  ${mean_mdir} ms mean, peak RSS ${rss_mdir} KiB"
echo "fatls is ${ratio}x faster than mdir ($verdict the 3x target)"

# Append only: others may add sections to RESULTS.md concurrently.
{
	[[ -s $RESULTS ]] && echo
	echo "## fatls -R vs mdir -/"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- machine: $(nproc) CPUs, Linux $(uname -r)," \
		"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "- image: 16 GiB sparse FAT32 (mkfs.fat -F 32 -S 512, default" \
		"cluster), $((NDIRS * PER_DIR)) files in $NDIRS directories," \
		"long names"
	echo "- reproduce: \`bench/fatls.sh\` (builds the image once, then" \
		"runs \`MTOOLS_SKIP_CHECK=1 hyperfine -N --output=null --warmup 2" \
		"--runs 10 '$FATLS_CMD' '$MDIR_CMD'\` and" \
		"\`/usr/bin/time -f %M\` on each)"
	echo
	cat "$tmp/table.md"
	echo
	echo "| program | peak RSS |"
	echo "|:---|---:|"
	echo "| \`fatls -R\` | $rss_fatls KiB |"
	echo "| \`mdir -/\` | $rss_mdir KiB |"
	echo
	echo "fatls -R is **${ratio}x** faster than mdir -/ ($verdict the 3x" \
		"target)."
} >>"$RESULTS"
echo "fatls.sh: appended to bench/RESULTS.md" >&2
