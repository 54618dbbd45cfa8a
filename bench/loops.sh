#!/usr/bin/env bash
# bench/loops.sh: what a looping chain costs on a huge sparse FAT32 volume
# (268,435,445 clusters in 12 KiB on disk, made by tests/helpers/hugeloop.py):
# time and peak RSS of fatls -l, fatprealloc into the looping directory and
# fatcheck, for one build directory against another.
#
#   bench/loops.sh NEW_BUILD_DIR [OLD_BUILD_DIR]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=$PWD/bench/out
mkdir -p "$OUT"
python3 tests/helpers/hugeloop.py "$OUT/loops.img"
for b in "$@"; do
	for cmd in "fatls -l IMG" "fatprealloc IMG /LOOPDIR/x.bin 4K" "fatcheck IMG"; do
		cp --sparse=always "$OUT/loops.img" "$OUT/loops.run.img"
		read -ra argv <<<"${cmd//IMG/$OUT/loops.run.img}"
		/usr/bin/time -f "$b ${argv[0]}: %e s, peak RSS %M KiB" \
			-o "$OUT/loops.time" timeout 120 "$b/${argv[0]}" \
			"${argv[@]:1}" >/dev/null 2>&1 || true
		grep -v "^Command exited" "$OUT/loops.time"
	done
done
