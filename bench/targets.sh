#!/usr/bin/env bash
# bench/targets.sh: re-measure the two fatprealloc targets that depend on
# per-run fixed costs, quickly and side by side, without the full table of
# bench/prealloc.sh (same images, same commands):
#   1. --no-sync batched, 16 x 256 MiB, 512-byte clusters: ns per cluster
#      (fatprealloc's JSON seconds, median and best of REPS runs);
#   2. a default (zeroed) 256 MiB file against mcopy of 256 MiB of zeros
#      onto the same image, 512-byte and 4 KiB clusters (hyperfine; the
#      ratio of medians, and of means).
# Each on two copies of the image: "sparse" as mkfs.fat -C makes it (the
# FAT and free space are holes, which fatprealloc skips), and "written",
# where both FATs and the first 300 MiB of the data area are written out
# (no holes), as on a card image made with dd or on a block device: the FAT
# is scanned in full and the new file's clusters are zeroed in place.
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
	# The written copy's recipe: a sparse copy, then the image's own bytes
	# from the first FAT to 300 MiB into the data area written over it,
	# holes as written zeros (offsets from the FAT32 BPB).
	read -r fat_off data_off < <(python3 - "$img" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read(512)
bps, rsvd, nfats = struct.unpack_from("<H", b, 11)[0], \
    struct.unpack_from("<H", b, 14)[0], b[16]
fatsz = struct.unpack_from("<I", b, 36)[0]
print(rsvd * bps, (rsvd + nfats * fatsz) * bps)
PY
	)
	printf 'cp --sparse=always %s %s/w.img && dd if=%s of=%s/w.img bs=1M iflag=skip_bytes,count_bytes oflag=seek_bytes skip=%d seek=%d count=%d conv=notrunc status=none && sync %s/w.img\n' \
		"$img" "$tmp" "$img" "$tmp" "$fat_off" "$fat_off" \
		$((data_off - fat_off + (300 << 20))) "$tmp" >"$tmp/written-$cs.sh"
	# Synced, as an image made earlier would be: else the first fsync
	# of the timed run would write back the copy's dirty pages.
	echo "cp --sparse=always $img $tmp/w.img && sync $tmp/w.img" \
		>"$tmp/sparse-$cs.sh"
done

args=()
for i in $(seq 1 16); do args+=("/f$i" 256M); done
for kind in sparse written; do
	secs=()
	for r in $(seq 1 "$REPS"); do
		sh "$tmp/$kind-512.sh"
		# To a file first: a reader started alongside would share the
		# CPUs.
		"$B/fatprealloc" -n --no-sync --json "$tmp/w.img" "${args[@]}" \
			>"$tmp/o.json"
		secs+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stats"]["seconds"])' "$tmp/o.json")")
	done
	python3 - "$kind" "${secs[@]}" <<'PY'
import statistics, sys
s = sorted(float(x) for x in sys.argv[2:])
n = 16 * 256 * 2048
print("16 x 256M, 512 B clusters, -n --no-sync, %s image: median %.1f "
      "ns/cluster, best %.1f ns/cluster (%d runs)"
      % (sys.argv[1], statistics.median(s) / n * 1e9, s[0] / n * 1e9,
         len(s)))
PY
done

truncate -s 256M "$tmp/zeros256M"
for kind in sparse written; do
	for cs in 512 4096; do
		hyperfine -N --runs "$REPS" --warmup 1 --style none \
			--export-json "$tmp/h.json" \
			--prepare "sh $tmp/$kind-$cs.sh" \
			-n fatprealloc "$B/fatprealloc $tmp/w.img /z.bin 256M" \
			-n mcopy "mcopy -i $tmp/w.img $tmp/zeros256M ::/z.bin"
		# Medians: one slow run of either (the machine is shared)
		# moves a mean a lot and a median little.
		python3 - "$tmp/h.json" "$cs" "$kind" <<'PY'
import json, statistics, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
med = {k: statistics.median(r["times"]) * 1e3 for k, r in res.items()}
mean = {k: r["mean"] * 1e3 for k, r in res.items()}
print("zeroed 256 MiB, %s B clusters, %s image: fatprealloc median %.1f ms "
      "(mean %.1f), mcopy median %.1f ms (mean %.1f): %.1fx by medians, "
      "%.1fx by means"
      % (sys.argv[2], sys.argv[3], med["fatprealloc"], mean["fatprealloc"],
         med["mcopy"], mean["mcopy"], med["mcopy"] / med["fatprealloc"],
         mean["mcopy"] / mean["fatprealloc"]))
PY
	done
done
