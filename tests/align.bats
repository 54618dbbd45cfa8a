#!/usr/bin/env bats
# align.bats: fatprealloc --align SIZE.  Each new file's first cluster
# must sit at a byte offset of the device (IMAGE, partition offset
# included) that is a multiple of SIZE; with -c the whole file is one
# run.  Offsets are computed from what mtools (mshowfat) and exfatref.py
# say, never from fatkit's own output; fsck.fat / fsck.exfat and
# exfatref.py judge the volume.

load helpers/common

# dev_off IMAGE[@@OFF] PATH FAMILY: byte offset in IMAGE of PATH's first
# cluster, and on a second line its run count, from mtools or exfatref.
dev_off()
{
	local img=$1 path=$2 fam=$3 base=0 first runs
	[[ $img == *@@* ]] && base=${img#*@@}
	if [[ $fam == exfat ]]; then
		local line info
		line=$(ref ls "$img" "$path")
		first=$(sed 's/.*\tfirst=\([0-9]*\).*/\1/' <<<"$line")
		runs=$(sed 's/.*\truns=\([^\t]*\).*/\1/' <<<"$line")
		info=$(ref info "$img")
		local heap ss cs
		heap=$(sed -n 's/^cluster_heap_offset=//p' <<<"$info")
		ss=$(sed -n 's/^sector_size=//p' <<<"$info")
		cs=$(sed -n 's/^cluster_size=//p' <<<"$info")
		echo $((base + heap * ss + (first - 2) * cs))
		tr ',' '\n' <<<"$runs" | wc -l
	else
		local geo bps spc data
		geo=$("$FK_PYTHON" "$FATKIT_HELPERS/fatimg.py" geometry "$img")
		bps=$(sed -n 's/^bytes_per_sec=//p' <<<"$geo")
		spc=$(sed -n 's/^sec_per_clus=//p' <<<"$geo")
		data=$(sed -n 's/^data_start_sec=//p' <<<"$geo")
		# mshowfat: "::/F <2-9> <20-29>" (a group may hold commas)
		runs=$(mshowfat -i "$img" "::$path" | grep -o '<[^>]*>' |
			tr -d '<>' | tr ',' '\n')
		first=$(head -1 <<<"$runs")
		first=${first%%-*}
		echo $((base + data * bps + (first - 2) * bps * spc))
		wc -l <<<"$runs"
	fi
}

# judge IMAGE[@@OFF] FAMILY: the independent checkers find nothing (a
# volume at @@OFF is copied out first: fsck knows no offsets).
judge()
{
	local f=$1
	if [[ $1 == *@@* ]]; then
		dd if="${1%@@*}" of=part.img bs=64K skip=$((${1#*@@} / 65536)) status=none
		f=part.img
	fi
	if [[ $2 == exfat ]]; then
		fsck.exfat -n "$f"
		ref verify "$f"
	else
		fsck_clean "$f"
	fi
	rm -f part.img
}

# mkvol FAMILY CLUSTER_BYTES PARTITIONED: sets VOL (IMAGE[@@OFF]).
mkvol()
{
	local fam=$1 clus=$2 part=$3 file=img
	rm -f img vol
	truncate -s 80M vol
	if [[ $fam == exfat ]]; then
		mkfs.exfat -c "$clus" vol >/dev/null
	else
		mkfs.fat -F "${fam#fat}" -S 512 -s $((clus / 512)) vol >/dev/null
	fi
	if ((part)); then
		# a partition at 1 MiB + 64 KiB: the card's AU grid and the
		# volume's own grid differ, as on a badly partitioned card
		truncate -s 82M img
		printf 'label: dos\nstart=2176, size=163840, type=c\n' |
			sfdisk -q --no-reread --no-tell-kernel img
		dd if=vol of=img bs=64K seek=17 conv=notrunc status=none
		VOL=img@@1114112
	else
		mv vol img
		VOL=img
	fi
}

@test "--align: every new file starts at a device offset that is a multiple of SIZE (FAT16, FAT32, exFAT; 512 B to 128 KiB clusters; partitioned or not)" {
	local fam clus part off n align
	for fam in fat32 fat16 exfat; do
		for clus in 512 1024 2048 4096 16384 32768 65536 131072; do
			# FAT32 needs 65525 clusters, FAT16 4085 to 65524:
			# on 80M, FAT32 takes 512 B and 1 KiB clusters,
			# FAT16 2 KiB to 16 KiB; exFAT all of them
			[[ $fam == fat32 && $clus -gt 1024 ]] && continue
			[[ $fam == fat16 && ($clus -lt 2048 || $clus -gt 16384) ]] && continue
			for part in 0 1; do
				mkvol "$fam" "$clus" "$part"
				# a small file first, so that the next free
				# cluster is not aligned
				run -0 fatprealloc "$VOL" /pad 3000
				if ((part && clus > 65536)); then
					# the partition's 64 KiB offset puts
					# 128 KiB clusters off every 4M
					# boundary: refused, nothing written
					local before
					before=$(img_sha img)
					run -1 --separate-stderr fatprealloc --align 4M "$VOL" /a 5M
					[[ $stderr == "fatprealloc: $VOL: --align 4194304: no cluster starts at a multiple of it: the data area starts at byte "*" of the image and clusters are 131072 bytes" ]]
					[ "$(img_sha img)" = "$before" ]
					continue
				fi
				run -0 --separate-stderr fatprealloc --align 4M "$VOL" /a 5M /b 1000 /c 2M
				for f in /a /b /c; do
					read -r off n < <(dev_off "$VOL" "$f" "$fam" | paste -sd' ')
					(( off % (4 << 20) == 0 )) || {
						echo "$fam $clus part=$part $f at $off" >&2
						false
					}
				done
				# -c: one aligned run
				run -0 --separate-stderr fatprealloc -c --align 1M "$VOL" /d 3M
				read -r off n < <(dev_off "$VOL" /d "$fam" | paste -sd' ')
				(( off % (1 << 20) == 0 )) && [ "$n" -eq 1 ]
				judge "$VOL" "$fam"
			done
		done
	done
}

@test "--align: a SIZE no larger than a cluster only asks the data area to be aligned; a data area off the grid is refused, image unchanged" {
	# clusters of 4 KiB: --align 4K and 512 take any cluster
	mkvol fat16 4096 0
	run -0 fatprealloc --align 4K img /a 5000
	run -0 fatprealloc --align 512 img /b 5000
	fsck_clean img
	# a volume at @@512 with 4 KiB clusters: its clusters sit at
	# 512 + k * 4096, so no cluster is 4K-aligned on the device
	rm -f img
	truncate -s 41M img
	mkfs.fat -F 16 -S 512 -s 8 --offset 1 img $((40 * 1024)) >/dev/null
	local before
	before=$(img_sha img)
	run -1 --separate-stderr fatprealloc --align 4K img@@512 /a 1M
	[[ $stderr == "fatprealloc: img@@512: --align 4096: no cluster starts at a multiple of it: the data area starts at byte "*" of the image and clusters are 4096 bytes" ]]
	[ "$(img_sha img)" = "$before" ]
	# 512 works there
	run -0 fatprealloc --align 512 img@@512 /a 1M
}

@test "--align: with -c and no aligned run long enough, out of space and nothing changes; without -c the first run is aligned and the rest fragments" {
	mkvol fat16 4096 0
	local geo data pad i off n before
	geo=$("$FK_PYTHON" "$FATKIT_HELPERS/fatimg.py" geometry img)
	data=$(($(sed -n 's/^data_start_sec=//p' <<<"$geo") * 512))
	# files of 1 MiB that each start on a 1 MiB boundary, filling the
	# volume; then free those at 4 MiB boundaries: the only aligned
	# free runs are 1 MiB long
	pad=$(((1048576 - data % 1048576) % 1048576))
	((pad == 0)) || run -0 fatprealloc --no-zero img /pad "$pad"
	for i in $(seq 100); do
		fatprealloc --no-zero img "/f$i" 1M 2>/dev/null || break
	done
	for i in $(seq 100); do
		mdir -i img "::/F$i" >/dev/null 2>&1 || break
		read -r off n < <(dev_off img "/f$i" fat16 | paste -sd' ')
		((off % 4194304 == 0)) && mdel -i img "::/F$i"
	done
	before=$(img_sha img)
	run -1 --separate-stderr fatprealloc -c --align 4M img /x 2M
	[ "$stderr" = "fatprealloc: img:/x: No space left on device: -c needs one contiguous run of 2.0 MiB that starts at a multiple of 4194304; the longest free one is 1.0 MiB" ]
	run -1 --separate-stderr fatprealloc -v -c --align 4M img /x 2M
	[[ $stderr == *" (512 clusters of 4096 bytes; 256)" ]]
	[ "$(img_sha img)" = "$before" ]
	run -0 --separate-stderr fatprealloc --align 4M img /y 2M
	read -r off n < <(dev_off img /y fat16 | paste -sd' ')
	((off % 4194304 == 0)) && [ "$n" -ge 2 ]
	fsck_clean img
}

@test "--align: usage errors (not a power of two, too small, too large, with --per-cluster)" {
	mkimg fat16 16M img
	local bad
	for bad in 1000 256 2G 3M abc; do
		run -2 --separate-stderr fatprealloc --align "$bad" img /a 1K
		[[ $stderr == "fatprealloc: invalid --align"* ]]
	done
	run -2 --separate-stderr fatprealloc --align 4M --per-cluster img /a 1K
	[ "$stderr" = "fatprealloc: --align cannot be combined with --per-cluster (try 'fatprealloc --help')" ]
}

@test "--align: a grown file keeps its chain; fatls --chain shows each run's alignment" {
	mkvol fat16 4096 1
	run -0 fatprealloc --align 4M "$VOL" /a 1M
	run -0 --separate-stderr fatls --chain "$VOL" /a
	[[ $output =~ " aligned="([0-9]+[KMG]?)" /a"$ ]]
	[[ ${BASH_REMATCH[1]} =~ ^(4M|8M|16M|32M|64M|128M|256M|512M|1G)$ ]]
	run -0 --separate-stderr fatls --json "$VOL" /a
	"$FK_PYTHON" -c '
import json, sys
r = json.loads(sys.argv[1])["entries"][0]["runs"][0]
assert r["offset"] % r["alignment"] == 0 and r["alignment"] >= 4 << 20, r
' "$output"
}

@test "--align on a partition's block device counts from the start of the disk (sysfs start)" {
	((EUID == 0)) || skip "needs root for losetup"
	mkvol fat16 4096 1 # partition 1 at 1 MiB + 64 KiB
	local loop off n
	loop=$(losetup -f --show -P img 2>/dev/null) || skip "losetup -P does not work here"
	LOOPDEV=$loop
	for _ in $(seq 50); do
		[[ -b ${loop}p1 ]] && break
		sleep 0.1
	done
	[[ -b ${loop}p1 ]] || { losetup -d "$loop"; skip "no partition device"; }
	run fatprealloc --align 4M "${loop}p1" /a 1M
	local st=$status
	losetup -d "$loop"
	LOOPDEV=
	[ "$st" -eq 0 ]
	# the offset on the disk, from mtools through the partition offset
	read -r off n < <(dev_off "$VOL" /a fat16 | paste -sd' ')
	((off % (4 << 20) == 0))
	judge "$VOL" fat16
}

teardown()
{
	if [[ -n ${LOOPDEV:-} ]]; then
		losetup -d "$LOOPDEV" 2>/dev/null || true
	fi
}

@test "--align: a crash after any write call leaves at worst lost clusters; the old file is intact" {
	local rc=0 n out
	mkimg fat12 1M probe.img
	FK_CRASH_AFTER_WRITE=1 fatprealloc probe.img /probe.bin 1 >/dev/null 2>&1 || rc=$?
	((rc == 99)) || skip "fatprealloc built without -DFK_FAULT_INJECTION"
	mkvol fat16 4096 1
	head -c 300000 /dev/urandom >old.bin
	mcopy -i "$VOL" old.bin ::/OLD.BIN
	cp img base.img
	for ((n = 1; n < 100; n++)); do
		cp base.img img
		rc=0
		FK_CRASH_AFTER_WRITE=$n fatprealloc -c --align 1M "$VOL" /a 3M /b 100K 2>/dev/null || rc=$?
		((rc == 0)) && break
		[ "$rc" -eq 99 ]
		mtype -i "$VOL" ::/OLD.BIN | cmp - old.bin
		dd if=img of=part.img bs=64K skip=17 status=none
		out=$(fsck.fat -n part.img 2>&1) || true
		# lost clusters and a stale free count are the worst allowed
		# (a crash between the FAT copies leaves them differing, each
		# intact: fsck.fat takes the first, as fatcheck -r does)
		if grep -vE '^(fsck.fat |part.img: [0-9]+ files|Leaving filesystem unchanged|Reclaimed [0-9]+ unused|Free cluster summary wrong|FATs differ but appear to be intact|  Using first FAT|  Auto-correcting|$)' <<<"$out"; then
			echo "crash after call $n: $out" >&2
			false
		fi
	done
	((n > 1 && n < 100))
	judge "$VOL" fat16
}
