#!/usr/bin/env bash
# bench/targets.sh: re-measure the two fatprealloc targets that depend on
# per-run fixed costs, quickly and side by side, without the full table of
# bench/prealloc.sh (same images, same commands):
#   1. --no-sync batched, 16 x 256 MiB, 512-byte clusters: ns per cluster
#      (fatprealloc's JSON seconds, median and best of REPS runs);
#   2. a default (zeroed) 256 MiB file against mcopy of 256 MiB of zeros
#      onto the same image, 512-byte and 4 KiB clusters (hyperfine).
#   bench/targets.sh [BUILD_DIR]       REPS=9 by default
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=$(cd "${1:-build}" && pwd)
REPS=${REPS:-9}
OUT=bench/out
mkdir -p "$OUT"
tmp=$(mktemp -d "$OUT/targets.XXXXXX") # same filesystem as the images
trap 'rm -rf "$tmp"' EXIT
for cs in 512 4096; do
	img=$OUT/targets-$cs.img
	[ -e "$img" ] || mkfs.fat --invariant -F 32 -S 512 -s $((cs / 512)) \
		-C "$img" $((4608 * 1024)) >/dev/null
done

args=()
for i in $(seq 1 16); do args+=("/f$i" 256M); done
secs=()
for r in $(seq 1 "$REPS"); do
	cp --sparse=always "$OUT/targets-512.img" "$tmp/w.img"
	# To a file first: a reader started alongside would share the CPUs.
	"$B/fatprealloc" -n --no-sync --json "$tmp/w.img" "${args[@]}" >"$tmp/o.json"
	secs+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stats"]["seconds"])' "$tmp/o.json")")
done
fsck.fat -n "$tmp/w.img" >/dev/null 2>&1 || true # kept-size tails: exit 1
python3 - "${secs[@]}" <<'PY'
import statistics, sys
s = sorted(float(x) for x in sys.argv[1:])
n = 16 * 256 * 2048
print("16 x 256M, 512 B clusters, -n --no-sync: median %.1f ns/cluster, "
      "best %.1f ns/cluster (%d runs)" % (statistics.median(s) / n * 1e9,
                                          s[0] / n * 1e9, len(s)))
PY

truncate -s 256M "$tmp/zeros256M"
for cs in 512 4096; do
	hyperfine -N --runs "$REPS" --warmup 1 --style basic \
		--prepare "cp --sparse=always $OUT/targets-$cs.img $tmp/w.img" \
		-n "fatprealloc ($cs B clusters)" "$B/fatprealloc $tmp/w.img /z.bin 256M" \
		-n "mcopy ($cs B clusters)" "mcopy -i $tmp/w.img $tmp/zeros256M ::/z.bin" \
		2>&1 | grep -E "Time|faster|^ +[0-9.]+ ±"
done
