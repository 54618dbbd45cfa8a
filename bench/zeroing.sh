#!/usr/bin/env bash
# bench/zeroing.sh: fatprealloc zeroing a 1 GiB file on a written-out
# (non-sparse) image, one binary against another, to check that zeroing
# in bounded chunks (8 MiB per fallocate/BLKZEROOUT call, a progress call
# after each) costs no more than one call per run did.
#
#   bench/zeroing.sh NEW_FATPREALLOC OLD_FATPREALLOC [RUNS]
#
# The image (2 GiB FAT32, 4 KiB clusters, every byte written so that no
# part of it is a hole) lives in bench/out/ (git-ignored); each run zeroes
# the same 1 GiB of written data extents (see the preparation below).  The
# medians are printed and appended to bench/out/zeroing.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
NEW=$(realpath "${1:?usage: zeroing.sh NEW OLD [RUNS]}")
OLD=$(realpath "${2:?usage: zeroing.sh NEW OLD [RUNS]}")
RUNS=${3:-15}
OUT=$PWD/bench/out
IMG=$OUT/zeroing.img
export MTOOLS_SKIP_CHECK=1 MTOOLSRC=/dev/null LC_ALL=C.UTF-8

mkdir -p "$OUT"
rm -f "$IMG"
dd if=/dev/zero of="$IMG" bs=16M count=128 status=none # 2 GiB, no holes
mkfs.fat --invariant -F 32 -S 512 -s 8 "$IMG" >/dev/null
sync "$IMG"

# Before each run (not timed): the metadata of the fresh volume (boot
# sector, FATs, FSInfo, root directory: its first 8 MiB) is put back, so
# the allocation lands on the same clusters, and 1 GiB + 8 MiB from there
# on is written with zeros again and synced.  Zeroing with
# FALLOC_FL_ZERO_RANGE leaves unwritten extents, which SEEK_DATA reports
# as holes and fatprealloc then skips: without the rewrite, every run after
# the first would measure nothing.
dd if="$IMG" of="$OUT/zeroing.meta" bs=1M count=8 status=none
prep="dd if=$OUT/zeroing.meta of=$IMG conv=notrunc status=none &&
dd if=/dev/zero of=$IMG bs=8M seek=1 count=129 conv=notrunc,fsync status=none"

# The two binaries alternate, run by run, so that a machine whose load
# changes during the benchmark weighs on both alike (hyperfine would run
# all of one, then all of the other).  Run 0 of each warms up.
: >"$OUT/zeroing.tsv"
for ((i = 0; i <= RUNS; i++)); do
	for which in chunked one-call-per-run; do
		bin=$NEW
		[[ $which == one-call-per-run ]] && bin=$OLD
		eval "$prep"
		t0=$(date +%s%N)
		"$bin" "$IMG" /big.bin 1G </dev/null 2>/dev/null
		t1=$(date +%s%N)
		((i == 0)) || printf '%s\t%d\n' "$which" $(((t1 - t0) / 1000)) >>"$OUT/zeroing.tsv"
	done
done
python3 - "$OUT/zeroing.tsv" <<'EOF' | tee -a "$OUT/zeroing.md"
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    k, us = line.split()
    t.setdefault(k, []).append(int(us) / 1e3)
new, old = t["chunked"], t["one-call-per-run"]
mn, mo = statistics.median(new), statistics.median(old)
print(f"zeroing 1 GiB, written-out image, {len(new)} alternating runs each "
      f"(medians): chunked {mn:.1f} ms (sd {statistics.stdev(new):.1f}), "
      f"one call per run {mo:.1f} ms (sd {statistics.stdev(old):.1f}): "
      f"{(mn / mo - 1) * 100:+.1f}%")
EOF
fsck.fat -n "$IMG" >/dev/null
fatls=$(dirname "$NEW")/fatls
[[ -x $fatls ]] && "$fatls" --chain "$IMG" /big.bin
