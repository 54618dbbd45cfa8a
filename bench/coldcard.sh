#!/usr/bin/env bash
# bench/coldcard.sh: fatkit against its peers on a cold, slow card.
#
# The card is bench/coldcard.c, a FUSE file that passes requests through to
# an image and charges each one a latency plus its length at a bandwidth
# (and each fsync a flush time), serving one at a time (--qd), with a
# buffered loop device on top (losetup --direct-io=off), so that the
# kernel's block-device read-ahead decides what reaches the card, as it
# does for an SD card behind a USB reader.  Before every run the loop
# device's page cache is dropped (blockdev --flushbufs, and
# /proc/sys/vm/drop_caches), so each run starts cold.  Each command runs
# RUNS times (a writer on a fresh copy of its image each time); the table
# gives the median wall time and the requests and bytes the card served
# (the same on every run but for a few read-ahead requests) and the time
# the card charged for them (card ms: what the run costs on the card,
# without the CPU time of a machine shared with other work), side by side
# with the peer (mdir -/ for fatls -R, fsck.fat -n and fsck.exfat -n for
# fatcheck) and with the floor: the bytes the job must read and their cost
# at one request per contiguous run (bench/floor.py says what each job
# needs; reads only: a writer's own writes and flushes come on top; read
# ms is the card time of the reads alone, the figure to set beside the
# floor's).  Images: bench/coldcard-images.sh.
#
#   bench/coldcard.sh [--runs N] [--profile LATENCY_US:MBPS[:FLUSH_US]]...
#                     [--qd N] [--read-ahead-kb N] [--build DIR]
#                     [--only REGEX] [--no-record]
#
# Default profiles 500:20:2000 and 100:80:2000 (a flush: 2 ms).  The loop
# device's read-ahead is set to 128 KiB, what Linux gives an SD card or a
# USB card reader (the table says what the kernel gave the loop device).
# The rows: fatls -R and fatcheck on a 16 GiB FAT32 and a 64 GiB exFAT
# card of 20,000 files, fatprealloc of 256 MiB (one file, and 16) on empty
# ones (and one file on the exFAT card of 20,000 files, whose every
# directory the exFAT writer reads before its first write, to be sure no
# file owns a cluster it takes), and the seed's rows of bench/prealloc.sh (--per-cluster runs once:
# every cluster is flushed, tens of seconds).  --build runs the programs of another build (e.g. of an older commit, for
# before-and-after).  --only keeps the rows whose name matches.  Appends a
# section to bench/RESULTS.md unless --no-record.  Needs root (losetup,
# FUSE).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/out
RESULTS=bench/RESULTS.md
CARD=$OUT/coldcard
export MTOOLS_SKIP_CHECK=1 MTOOLSRC=/dev/null LC_ALL=C.UTF-8 TZ=UTC

die()
{
	echo "coldcard.sh: $*" >&2
	exit 1
}

RUNS=3
QD=1
RA=128
BUILD=build
ONLY=.
RECORD=1
PROFILES=()
while (($#)); do
	case $1 in
	--runs)
		[[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--runs wants a count"
		RUNS=$2
		shift
		;;
	--profile)
		[[ ${2:-} =~ ^[0-9]+:[0-9]+(:[0-9]+)?$ ]] ||
			die "--profile wants LATENCY_US:MBPS[:FLUSH_US]"
		PROFILES+=("$2")
		shift
		;;
	--qd)
		[[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--qd wants a count"
		QD=$2
		shift
		;;
	--only)
		ONLY=$2
		shift
		;;
	--read-ahead-kb)
		[[ ${2:-} =~ ^[0-9]+$ ]] || die "--read-ahead-kb wants a number"
		RA=$2
		shift
		;;
	--build)
		[[ -x ${2:-}/fatls ]] || die "--build wants a build directory"
		BUILD=$2
		shift
		;;
	--no-record) RECORD=0 ;;
	*) die "unknown option $1 (see the top of bench/coldcard.sh)" ;;
	esac
	shift
done
((${#PROFILES[@]})) || PROFILES=(500:20:2000 100:80:2000)
[[ $(id -u) == 0 ]] || die "needs root (losetup, FUSE, drop_caches)"
command -v fusermount3 >/dev/null && pkg-config --exists fuse3 ||
	die "needs FUSE 3: apt-get install libfuse3-dev fuse3"

bench/coldcard-images.sh
[[ $BUILD != build ]] ||
	make -s build/fatls build/fatcheck build/fatprealloc >/dev/null ||
	die "cannot build fatkit"
if [[ $BUILD == build ]]; then
	COMMIT="commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo ' with changes to src/')"
else
	COMMIT="the programs in $BUILD"
fi
mkdir -p "$OUT"
[[ $CARD -nt bench/coldcard.c ]] ||
	cc -O2 -Wall -Wextra -o "$CARD" bench/coldcard.c \
		$(pkg-config --cflags --libs fuse3) || die "cannot build $CARD"

tmp=$(mktemp -d)
MNT=$tmp/mnt
LOOP=
FUSE_PID=
RA_KB=?
mkdir "$MNT"

unmount()
{
	local i
	[[ -z $LOOP ]] || losetup -d "$LOOP" || true
	LOOP=
	if [[ -n $FUSE_PID ]]; then
		# The loop device lets go of the card a moment after losetup
		# -d returns; until then the mount is busy.
		for i in 1 2 3 4 5 6 7 8 9 10; do
			fusermount3 -u "$MNT" 2>/dev/null && break
			sleep 0.2
		done
		fusermount3 -u -z "$MNT" 2>/dev/null || true
		wait "$FUSE_PID" 2>/dev/null || true
	fi
	FUSE_PID=
}
trap 'unmount; rm -rf "$tmp"' EXIT

# mount_card IMAGE LAT_US MBPS FLUSH_US: the card and its loop device.
mount_card()
{
	local i
	"$CARD" "$1" "$MNT" --latency-us "$2" --mbps "$3" --flush-us "$4" \
		--qd "$QD" -f 2>"$tmp/fuse.log" &
	FUSE_PID=$!
	for ((i = 0; i < 100; i++)); do
		[[ -f $MNT/stats ]] && break
		sleep 0.05
	done
	[[ -f $MNT/stats ]] || die "the card did not mount: $(cat "$tmp/fuse.log")"
	LOOP=$(losetup --direct-io=off -f --show "$MNT/card")
	RA_KB=$(cat "/sys/block/${LOOP#/dev/}/queue/read_ahead_kb")
	echo "$RA" >"/sys/block/${LOOP#/dev/}/queue/read_ahead_kb"
}

# counters: "reads bytes_read writes bytes_written flushes busy_ns"
counters()
{
	awk '{ v[$1] = $2 } END { print v["reads"], v["bytes_read"],
		v["writes"], v["bytes_written"], v["flushes"],
		v["busy_ns"] }' "$MNT/stats"
}

cold()
{
	sync
	blockdev --flushbufs "$LOOP"
	echo 3 >/proc/sys/vm/drop_caches
}

# measure CMD...: one cold run on $LOOP ("@" in CMD); prints "us reads
# bytes_read writes bytes_written flushes card_us".
measure()
{
	local -a argv=("${@//@/$LOOP}") a b
	local t0 t1
	cold
	read -ra a < <(counters)
	t0=$(date +%s%N)
	"${argv[@]}" >/dev/null 2>"$tmp/err" || {
		local rc=$?
		# The checkers exit non-zero on findings (fsck.fat -n: 1 for
		# a dirty bit); 8 and up is an operational error.  Other
		# programs must succeed.
		[[ ${argv[0]} =~ (fatcheck|fsck) ]] && ((rc < 8)) ||
			die "${argv[*]}: exit $rc: $(head -c 300 "$tmp/err")"
	}
	t1=$(date +%s%N)
	sync
	read -ra b < <(counters)
	echo "$(((t1 - t0) / 1000)) $((b[0] - a[0])) $((b[1] - a[1]))" \
		"$((b[2] - a[2])) $((b[3] - a[3])) $((b[4] - a[4]))" \
		"$(((b[5] - a[5]) / 1000))"
}

# median of the first fields of the lines on stdin (the other fields of
# that line come with it).
median_line()
{
	sort -n | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }'
}

# ROWS: name | image | a fresh copy per run (1), and one run only (2) |
# command | floor job args.  The seed rows are bench/prealloc.sh's 16
# files of 64 KiB in 512-byte clusters, batched and --per-cluster (the
# pre-Linux-7.4 algorithm: every cluster flushed, so the card's flush time
# rules; one run of it is enough).
SEED=$(for i in $(seq 1 16); do printf '/f%d 64K ' "$i"; done)
ROWS=(
	"fat32 fatls -R|coldcard-fat32.img|0|build/fatls -R @|ls"
	"fat32 mdir -/|coldcard-fat32.img|0|mdir -/ -i @ ::|ls"
	"fat32 fatcheck|coldcard-fat32.img|0|build/fatcheck @|check"
	"fat32 fsck.fat -n|coldcard-fat32.img|0|fsck.fat -n @|check"
	"exfat fatls -R|coldcard-exfat.img|0|build/fatls -R @|ls"
	"exfat fatcheck|coldcard-exfat.img|0|build/fatcheck @|check"
	"exfat fsck.exfat -n|coldcard-exfat.img|0|fsck.exfat -n @|check"
	"fat32 fatprealloc 256M|coldcard-fresh.img|1|build/fatprealloc -n --sync -p @ /VIDEO/clip.mp4 256M|prealloc 268435456 1"
	"exfat fatprealloc 256M|coldcard-fresh-exfat.img|1|build/fatprealloc --no-zero --sync -p @ /VIDEO/clip.mp4 256M|prealloc 268435456 1"
	"fat32 fatprealloc 16x16M|coldcard-fresh.img|1|build/fatprealloc -n --sync -p @ $(for i in $(seq -w 1 16); do printf '/VIDEO/clip%s.mp4 16M ' "$i"; done)|prealloc 268435456 1"
	"exfat fatprealloc 16x16M|coldcard-fresh-exfat.img|1|build/fatprealloc --no-zero --sync -p @ $(for i in $(seq -w 1 16); do printf '/VIDEO/clip%s.mp4 16M ' "$i"; done)|prealloc 268435456 1"
	"exfat fatprealloc 256M, 20,000 files|coldcard-exfat.img|1|build/fatprealloc --no-zero --sync -p @ /VIDEO/clip.mp4 256M|prealloc 268435456 1"
	"fat32 seed --sync|coldcard-seed.img|1|build/fatprealloc -n --sync @ $SEED|prealloc 1048576 0"
	"fat32 seed --per-cluster --sync|coldcard-seed.img|2|build/fatprealloc -n --per-cluster --sync @ $SEED|prealloc 1048576 0"
	"exfat seed --sync|coldcard-seed-exfat.img|1|build/fatprealloc --lazy --sync @ $SEED|prealloc 1048576 0"
	"exfat seed --per-cluster --sync|coldcard-seed-exfat.img|2|build/fatprealloc --lazy --per-cluster --sync @ $SEED|prealloc 1048576 0"
)

mib()
{
	awk -v b="$1" 'BEGIN { printf "%.2f", b / 1048576 }'
}

# run_profile LAT MBPS FLUSH: one table.
run_profile()
{
	local lat=$1 mbps=$2 flush=$3 row name image fresh cmd fjob img
	local mounted= r line ms reads br writes bw fl cus fb fr fms rms
	echo "| job | wall ms | card ms | read requests | MiB read | write requests | MiB written | flushes | floor MiB | floor runs | floor ms | bytes / floor | card time / floor | read ms | read time / floor |"
	echo "|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for row in "${ROWS[@]}"; do
		IFS='|' read -r name image fresh cmd fjob <<<"$row"
		[[ $name =~ $ONLY ]] || continue
		img=$OUT/$image
		read -ra fargs <<<"$fjob"
		read -r fb fr fms < <(python3 bench/floor.py "${fargs[0]}" \
			"$img" "$lat" "$mbps" "${fargs[@]:1}")
		: >"$tmp/lines"
		for ((r = 0; r < (fresh == 2 ? 1 : RUNS); r++)); do
			if ((fresh)); then
				unmount
				mounted=
				rm -f "$tmp/work.img"
				cp --sparse=always "$img" "$tmp/work.img"
				mount_card "$tmp/work.img" "$lat" "$mbps" "$flush"
			elif [[ $mounted != "$img" ]]; then
				unmount
				mount_card "$img" "$lat" "$mbps" "$flush"
				mounted=$img
			fi
			read -ra argv <<<"${cmd//build\//$BUILD/}"
			measure "${argv[@]}" >>"$tmp/lines"
		done
		((fresh)) && { unmount; mounted=; }
		((fresh != 2)) || name+=" (1 run)"
		read -r ms reads br writes bw fl cus < <(median_line <"$tmp/lines")
		# What the card charged for the reads alone, as the floor
		# counts it (a writer's writes and flushes come on top).
		rms=$(awk -v n="$reads" -v b="$br" -v l="$lat" -v m="$mbps" \
			'BEGIN { printf "%.1f", n * l / 1000 + b / (m * 1e6) * 1000 }')
		echo "coldcard.sh: $lat us, $mbps MB/s: $name: $((ms / 1000)) ms, card $((cus / 1000)) ms, $reads reads, $(mib "$br") MiB ($((br / 1024)) KiB)" >&2
		echo "| $name | $((ms / 1000)) | $((cus / 1000)) | $reads |" \
			"$(mib "$br") | $writes |" \
			"$(mib "$bw") | $fl | $(mib "$fb") | $fr | $fms |" \
			"$(awk -v a="$br" -v b="$fb" 'BEGIN { printf "%.1fx", a / b }') |" \
			"$(awk -v a="$cus" -v b="$fms" 'BEGIN { printf "%.1fx", a / 1000 / b }') |" \
			"$rms | $(awk -v a="$rms" -v b="$fms" 'BEGIN { printf "%.2fx", a / b }') |"
	done
	unmount
}

for p in "${PROFILES[@]}"; do
	IFS=: read -r lat mbps flush <<<"$p"
	flush=${flush:-2000}
	{
		echo "### $lat us per request, $mbps MB/s, $flush us per flush, queue depth $QD"
		echo
		run_profile "$lat" "$mbps" "$flush"
		echo
	} >>"$tmp/section.md"
done

cmd=bench/coldcard.sh
[[ $RUNS == 3 ]] || cmd+=" --runs $RUNS"
for p in "${PROFILES[@]}"; do
	[[ ${PROFILES[*]} == "500:20:2000 100:80:2000" ]] ||
		cmd+=" --profile $p"
done
[[ $QD == 1 ]] || cmd+=" --qd $QD"
[[ $RA == 128 ]] || cmd+=" --read-ahead-kb $RA"
[[ $BUILD == build ]] || cmd+=" --build $BUILD"
[[ $ONLY == . ]] || cmd+=" --only '$ONLY'"
{
	echo
	echo "## Cold card: fatkit and its peers on a slow device"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), $COMMIT"
	echo "- machine: $(nproc) CPUs, Linux $(uname -r); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- command: \`$cmd\` (a FUSE card, bench/coldcard.c, under a buffered loop device with read-ahead $RA KiB (the kernel gave it $RA_KB); median of $RUNS cold runs; requests and bytes as the card served them; floor by bench/floor.py)"
	echo
	cat "$tmp/section.md"
} >"$tmp/record.md"
cat "$tmp/record.md"
((RECORD)) && cat "$tmp/record.md" >>"$RESULTS" &&
	echo "coldcard.sh: appended to $RESULTS" >&2
exit 0
