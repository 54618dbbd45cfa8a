#!/usr/bin/env bash
# bench/static.sh: the static build (`make static`, build/static/) beside
# the dynamic one (build/): size, start-up time and private memory.
#
#   make all static && bench/static.sh [RUNS]      (RUNS: default 500)
#
# Start-up: `perf stat -r RUNS` of `PROG --version` (CPU time, page faults
# and wall time per run), and of two small real jobs on a 64 MiB FAT32
# image with 40 files (bench/out/static-fat32.img, made once with mkfs.fat
# and mcopy): `fatls -l IMG /` and `fatcheck IMG`.
# Memory: each job is stopped at exit_group under gdb (`catch syscall
# exit_group`), and /proc/PID/smaps_rollup is read there: Rss (every
# resident page, shared libc pages included), Private (Private_Clean +
# Private_Dirty: pages no other process shares) and Anonymous (heap, stack,
# data written: what the process itself costs the machine).
# Prints Markdown tables for bench/RESULTS.md; appends nothing.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=${1:-500}
OUT=bench/out
IMG=$OUT/static-fat32.img
export MTOOLS_SKIP_CHECK=1 MTOOLSRC=/dev/null LC_ALL=C TZ=UTC

for b in build build/static; do
	for p in fatls fatcheck fatprealloc; do
		[[ -x $b/$p ]] || {
			echo "static.sh: $b/$p missing: run make all static" >&2
			exit 1
		}
	done
done
for c in perf gdb mkfs.fat mcopy; do
	command -v "$c" >/dev/null || {
		echo "static.sh: needs $c" >&2
		exit 1
	}
done

if [[ ! -f $IMG ]]; then
	mkdir -p "$OUT"
	rm -f "$IMG.tmp"
	truncate -s 64M "$IMG.tmp"
	mkfs.fat -F 32 "$IMG.tmp" >/dev/null
	mmd -i "$IMG.tmp" ::/DIR
	for i in $(seq 1 40); do
		head -c $((i * 1000)) /dev/zero >"$OUT/f$i"
		mcopy -i "$IMG.tmp" "$OUT/f$i" "::/DIR/file$i.bin"
		rm -f "$OUT/f$i"
	done
	mv "$IMG.tmp" "$IMG"
fi

# perf_line LABEL CMD...: task-clock ms, page faults and wall ms per run.
perf_line()
{
	local label=$1 csv clock faults wall
	shift
	csv=$(perf stat -r "$RUNS" -x, -e task-clock,page-faults "$@" \
		2>&1 >/dev/null)
	clock=$(awk -F, '$3 == "task-clock" { printf "%.3f", $1 }' <<<"$csv")
	faults=$(awk -F, '$3 == "page-faults" { printf "%d", $1 }' <<<"$csv")
	# Wall time: perf's -x output has none, so time the same loop.
	local s e i
	s=$(date +%s%N)
	for ((i = 0; i < RUNS; i++)); do "$@" >/dev/null 2>&1 || true; done
	e=$(date +%s%N)
	wall=$(awk -v d=$((e - s)) -v n="$RUNS" 'BEGIN { printf "%.3f", d / n / 1e6 }')
	printf '| %s | %s | %s | %s |\n' "$label" "$clock" "$faults" "$wall"
}

# mem_line LABEL CMD...: smaps_rollup at exit_group, in KiB.
mem_line()
{
	local label=$1 roll
	shift
	roll=$(gdb -q -batch -ex 'catch syscall exit_group' -ex run \
		-ex 'python print(open("/proc/%d/smaps_rollup" % gdb.selected_inferior().pid).read())' \
		--args "$@" 2>/dev/null)
	awk -v l="$label" '
		$1 == "Rss:" { rss = $2 }
		$1 == "Private_Clean:" || $1 == "Private_Dirty:" { priv += $2 }
		$1 == "Anonymous:" { anon = $2 }
		END { printf "| %s | %d | %d | %d |\n", l, rss, priv, anon }' <<<"$roll"
}

echo "Sizes (bytes; stripped with strip(1) in brackets):"
echo
echo "| program | dynamic | static |"
echo "|:---|---:|---:|"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in fatprealloc fatls fatcheck; do
	cp build/$p "$tmp/d" && cp build/static/$p "$tmp/s"
	strip "$tmp/d" "$tmp/s"
	printf '| %s | %d (%d) | %d (%d) |\n' "$p" \
		"$(stat -c %s build/$p)" "$(stat -c %s "$tmp/d")" \
		"$(stat -c %s build/static/$p)" "$(stat -c %s "$tmp/s")"
done
echo
echo "Start-up, $RUNS runs each (perf stat; wall time from a shell loop):"
echo
echo "| command | CPU ms/run | page faults/run | wall ms/run |"
echo "|:---|---:|---:|---:|"
for b in build build/static; do
	perf_line "$b/fatls --version" $b/fatls --version
done
for b in build build/static; do
	perf_line "$b/fatls -l IMG /DIR" $b/fatls -l "$IMG" /DIR
done
for b in build build/static; do
	perf_line "$b/fatcheck IMG" $b/fatcheck "$IMG"
done
echo
echo "Memory at exit (KiB, /proc/PID/smaps_rollup under gdb):"
echo
echo "| command | Rss | Private | Anonymous |"
echo "|:---|---:|---:|---:|"
for b in build build/static; do
	mem_line "$b/fatls --version" $b/fatls --version
	mem_line "$b/fatls -l IMG /DIR" $b/fatls -l "$IMG" /DIR
	mem_line "$b/fatcheck IMG" $b/fatcheck "$IMG"
done
