#!/usr/bin/env bash
# bench/static.sh: the static build (`make static`, build/static/) beside
# the dynamic one (build/): size, start-up time and private memory.
#
#   make all static && bench/static.sh [RUNS [ROUNDS]]   (200 and 5)
#
# Start-up: `perf stat -r RUNS` of `PROG --version` (CPU time, page faults
# and wall time per run), ROUNDS times, dynamic and static in turn, the
# median round reported; and the same for two small real jobs on a 64 MiB
# FAT32 image with 40 files (bench/out/static-fat32.img, made once with
# mkfs.fat and mcopy): `fatls -l IMG /DIR` and `fatcheck IMG`.
# Memory: each job is stopped at exit_group under gdb (`catch syscall
# exit_group`), and /proc/PID/smaps_rollup is read there: Rss (every
# resident page, shared libc pages included), Private (Private_Clean +
# Private_Dirty: pages no other process shares) and Anonymous (heap, stack,
# data written: what the process itself costs the machine).
# Prints Markdown tables for bench/RESULTS.md; appends nothing.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=${1:-200}
ROUNDS=${2:-5}
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

# perf_once CMD...: "CPU-ms faults wall-ms", each per run, over RUNS runs
# (perf stat -r: task-clock, page-faults, time elapsed).
perf_once()
{
	perf stat -r "$RUNS" -e task-clock,page-faults "$@" 2>&1 >/dev/null |
		awk '$2 == "msec" && $3 == "task-clock" { gsub(",", "", $1); c = $1 }
		     $2 == "page-faults" { gsub(",", "", $1); f = $1 }
		     /seconds time elapsed/ { w = $1 * 1000 }
		     END { printf "%.3f %d %.3f\n", c, f, w }'
}

# perf_pair LABEL ARGS...: build/LABEL and build/static/LABEL with ARGS,
# ROUNDS rounds of RUNS runs each, taking turns so that a busy moment
# falls on both; the median round of each figure.
perf_pair()
{
	local prog=$1 r b
	shift
	for ((r = 0; r < ROUNDS; r++)); do
		for b in build build/static; do
			echo "$b $(perf_once "$b/$prog" "$@")"
		done
	done | awk -v p="$prog" -v a="$*" -v n="$ROUNDS" '
		{ k = $1; c[k, ++m[k]] = $2; f[k, m[k]] = $3; w[k, m[k]] = $4 }
		function med(arr, k,    i, j, t, v) {
			for (i = 1; i <= n; i++) v[i] = arr[k, i]
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
				if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			return v[int((n + 1) / 2)]
		}
		END {
			split("build build/static", ks, " ")
			for (i = 1; i <= 2; i++)
				printf "| %s/%s %s | %.3f | %d | %.3f |\n", ks[i], p, a,
					med(c, ks[i]), med(f, ks[i]), med(w, ks[i])
		}'
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
echo "Start-up: median of $ROUNDS rounds of $RUNS runs (perf stat), per run:"
echo
echo "| command | CPU ms | page faults | wall ms |"
echo "|:---|---:|---:|---:|"
perf_pair fatls --version
perf_pair fatls -l "$IMG" /DIR
perf_pair fatcheck "$IMG"
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
