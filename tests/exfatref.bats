#!/usr/bin/env bats
# exfatref.bats: tests/helpers/exfatref.py, the exFAT reference reader,
# writer, checker and corruptor, held to exfatprogs (mkfs.exfat, dump.exfat,
# fsck.exfat -n) so the exFAT tests of fatls, fatcheck and fatprealloc can
# trust it. exfatprogs 1.2.0 (Debian 12) misses some damage (leaked bitmap
# bits, PercentInUse, VolumeDirty, ...): there the checker is the only judge,
# and the corruption table records which cases fsck.exfat sees.

load helpers/common

# mkexfat FILE SIZE CLUSTER [MKFS_ARGS...]: a fresh exFAT image file.
mkexfat()
{
	local file=$1 size=$2 clus=$3
	shift 3
	rm -f "$file"
	truncate -s "$size" "$file" &&
		mkfs.exfat -c "$clus" "$@" "$file" >/dev/null
}

# mkexfat_mbr FILE SIZE CLUSTER: a disk image with an MBR (sfdisk) whose one
# partition (type 7) starts at 1 MiB and holds an exFAT volume; the volume
# alone is also left in FILE.part for the exfatprogs tools.
mkexfat_mbr()
{
	local file=$1 size=$2 clus=$3 kib
	kib=$(size_kib "$size") || return 1
	rm -f "$file"
	truncate -s "${kib}K" "$file" || return 1
	printf 'label: dos\nlabel-id: 0x1234abcd\nstart=2048, type=7\n' |
		sfdisk --no-reread --no-tell-kernel --label dos "$file" >/dev/null 2>&1 ||
		return 1
	mkexfat "$file.part" "$((kib - 1024))K" "$clus" || return 1
	dd if="$file.part" of="$file" bs=1M seek=1 conv=notrunc,sparse status=none
}

# fsck_exfat_clean FILE: fsck.exfat -n says clean (it exits 0 then).
fsck_exfat_clean()
{
	local out
	if ! out=$(timeout 20 fsck.exfat -n "$1" 2>&1); then
		echo "fsck.exfat -n $1 is not clean:" >&2
		echo "$out" | head -20 >&2
		return 1
	fi
}

# info_matches_dump VOLUME REFARG: every field dump.exfat prints for the
# volume file VOLUME equals what `exfatref.py info REFARG` says.
info_matches_dump()
{
	local dump info
	dump=$(dump.exfat "$1") || return 1
	info=$(ref info "$2") || return 1
	"$FK_PYTHON" - "$dump" "$info" <<'EOF'
import sys
dump, info = sys.argv[1], sys.argv[2]
d = {}
for line in dump.splitlines():
    k, sep, v = line.partition(":")
    if sep:
        d[k.strip()] = v.strip()
i = dict(l.split("=", 1) for l in info.splitlines())
pairs = [
    ("Volume Length(sectors)", "volume_length"),
    ("FAT Offset(sector offset)", "fat_offset"),
    ("FAT Length(sectors)", "fat_length"),
    ("Cluster Heap Offset (sector offset)", "cluster_heap_offset"),
    ("Cluster Count", "cluster_count"),
    ("Root Cluster (cluster offset)", "root_cluster"),
    ("Volume Serial", "serial"),
    ("Sector Size Bits", "bytes_per_sector_shift"),
    ("Sector per Cluster bits", "sectors_per_cluster_shift"),
    ("Volume label", "label"),
    ("Bitmap start cluster", "bitmap_cluster"),
    ("Bitmap size", "bitmap_length"),
    ("Upcase table start cluster", "upcase_cluster"),
    ("Upcase table size", "upcase_length"),
    ("Cluster size", "cluster_size"),
    ("Total Clusters", "cluster_count"),
    ("Free Clusters", "free_clusters"),
]
bad = 0
for dk, ik in pairs:
    if dk not in d and dk == "Volume label":
        d[dk] = ""
    if d.get(dk) != i.get(ik):
        print("dump.exfat %s=%r, exfatref %s=%r" % (dk, d.get(dk), ik,
                                                     i.get(ik)))
        bad = 1
for k in ("boot_checksum_ok", "must_be_zero_ok"):
    if i[k] != "1":
        print(k, i[k])
        bad = 1
if i["upcase_checksum"] != i["upcase_checksum_computed"]:
    print("up-case checksum", i["upcase_checksum"])
    bad = 1
sys.exit(bad)
EOF
}

# A file list for populate_exfat: long Unicode names (255 UTF-16 units,
# letters the up-case table maps), a deep tree, fragmented, NoFatChain and
# FAT-chained contiguous files, empty files, ValidDataLength < DataLength.
# Each put's data comes from data.N files made by gen_bytes, so cat can be
# compared byte for byte.
populate_exfat()
{
	local img=$1 cs=$2 long deep
	gen_bytes $((3 * cs + 100)) a >data.a
	gen_bytes $((5 * cs)) b >data.b
	gen_bytes 777 c >data.c
	gen_bytes $((2 * cs + 5)) d >data.d
	long=$("$FK_PYTHON" -c 'print(("Ωμέγα-ünï-名前-" * 30)[:255])')
	deep=$(printf '/lvl%d' $(seq 1 20))
	{
		echo "put '/$long' --size 777 --data-from data.c"
		echo "put /frag.bin --size $((3 * cs + 100)) --fragmented --data-from data.a"
		echo "put /nofat.bin --size $((5 * cs)) --nofatchain --data-from data.b"
		echo "put /chained.bin --size $((2 * cs + 5)) --fatchain --data-from data.d"
		echo "put /empty --size 0"
		echo "put /sub/empty2 --size 0"
		echo "put /vdl.bin --size $((5 * cs)) --vdl 1000 --data-from data.b"
		echo "put '$deep/deep file.txt' --size 777 --data-from data.c"
		echo "mkdir '/Éé dir/ΣΊΣΥΦΟΣ'"
	} | ref batch "$img"
}

# check_populated IMG CS: the content populate_exfat wrote reads back.
check_populated()
{
	local img=$1 cs=$2 long
	long=$("$FK_PYTHON" -c 'print(("Ωμέγα-ünï-名前-" * 30)[:255])')
	ref cat "$img" "/$long" | cmp - data.c
	# Lookups go through the volume's up-case table: Greek and accented
	# letters match in either case.
	ref cat "$img" "/$("$FK_PYTHON" -c 'import sys; print(sys.argv[1].upper())' "$long")" | cmp - data.c
	ref cat "$img" /FRAG.BIN | cmp - data.a
	ref cat "$img" /nofat.bin | cmp - data.b
	ref cat "$img" /chained.bin | cmp - data.d
	[ "$(ref cat "$img" /empty | wc -c)" -eq 0 ]
	ref cat "$img" "$(printf '/lvl%d' $(seq 1 20))/DEEP FILE.TXT" | cmp - data.c
	# Past ValidDataLength reads are zeros, whatever the clusters hold.
	{ head -c 1000 data.b; head -c $((5 * cs - 1000)) /dev/zero; } >want.vdl
	ref cat "$img" /vdl.bin | cmp - want.vdl
	ref ls "$img" /vdl.bin >ls.out
	grep -q "size=$((5 * cs))	vdl=1000	" ls.out
	ref ls "$img" /nofat.bin | grep -q 'nofatchain=1	runs=[0-9]*-[0-9]*	'
	ref ls "$img" /chained.bin | grep -q 'nofatchain=0	runs=[0-9]*-[0-9]*	'
	# Fragmented: four clusters in four runs.
	ref ls "$img" /frag.bin | grep -q 'nofatchain=0	runs=[0-9]*-[0-9]*,[0-9]*-[0-9]*,[0-9]*-[0-9]*,[0-9]*-[0-9]*	'
	ref ls "$img" /empty | grep -q 'size=0	vdl=0	first=0	nofatchain=0	runs=-	'
	ref ls -R "$img" | grep -q 'attr=---D-.*path=/Éé dir/ΣΊΣΥΦΟΣ$'
}

@test "exfatref: mkfs.exfat images, 512 B to 1 MiB clusters: verify clean, info agrees with dump.exfat" {
	local cs size
	for cs in 512:16M 4096:64M 32768:64M 1048576:64M; do
		size=${cs#*:} cs=${cs%:*}
		mkexfat v.img "$size" "$cs" -L "Card$cs"
		run -0 ref verify v.img
		info_matches_dump v.img v.img
		run -0 ref info v.img
		assert_line "cluster_size=$cs"
		assert_line "label=Card$cs"
		assert_line "volume_dirty=0"
	done
	# A volume without a label.
	mkexfat n.img 8M 4096
	info_matches_dump n.img n.img
	run -0 ref info n.img
	assert_line "label="
}

@test "exfatref: exFAT in an MBR partition: reader, writer and checker at @@1M" {
	mkexfat_mbr d.img 66M 4096
	run -0 ref verify d.img@@1M
	info_matches_dump d.img.part d.img@@1M
	populate_exfat d.img@@1M 4096
	check_populated d.img@@1M 4096
	run -0 ref verify -W d.img@@1M
	# fsck.exfat and dump.exfat see the partition cut out of the disk.
	dd if=d.img of=p.img bs=1M skip=1 status=none
	fsck_exfat_clean p.img
	info_matches_dump p.img d.img@@1M
}

@test "exfatref: 4096-byte sectors (a loop device made with losetup -b 4096)" {
	local dev
	[ "$(id -u)" -eq 0 ] || skip "needs root for losetup"
	truncate -s 64M s4k.img
	dev=$(losetup -b 4096 -f --show s4k.img 2>/dev/null) || skip "losetup -b 4096 failed"
	if ! mkfs.exfat -c 32768 "$dev" >/dev/null 2>&1; then
		losetup -d "$dev"
		skip "mkfs.exfat on $dev failed"
	fi
	losetup -d "$dev"
	run -0 ref info s4k.img
	assert_line sector_size=4096
	assert_line cluster_size=32768
	run -0 ref verify s4k.img
	info_matches_dump s4k.img s4k.img
	populate_exfat s4k.img 32768
	check_populated s4k.img 32768
	run -0 ref verify -W s4k.img
	fsck_exfat_clean s4k.img
}

@test "exfatref: populated images, 512 B to 1 MiB clusters: fsck.exfat clean, verify clean, data reads back" {
	local cs size long
	for cs in 4096:64M 32768:64M 1048576:64M; do
		size=${cs#*:} cs=${cs%:*}
		mkexfat p.img "$size" "$cs"
		# Junk in every free cluster first: nothing may read it back.
		ref junk p.img
		populate_exfat p.img "$cs"
		run -0 ref verify -W p.img
		fsck_exfat_clean p.img
		check_populated p.img "$cs"
	done
	# 512-byte clusters: same content, plus a 255-unit name whose entry set
	# (19 entries, 608 bytes) starts at entry 15 of /span's first cluster
	# and so covers bytes 480-1087: three 512-byte blocks. fsck.exfat 1.2.0
	# wrongly flags such a valid set ("the checksum of a file is wrong" or
	# "failed to get name dentry", then its secondaries as unknown entries;
	# with some names it even loops under -n); the same set at entries 12 or
	# 18 (two blocks) passes, and Linux writes such sets itself. Not damage:
	# verify is clean, and fsck.exfat may complain about /span only.
	# /span comes first, so it grows into the next cluster: contiguous.
	mkexfat p.img 16M 512
	ref junk p.img
	long=$("$FK_PYTHON" -c 'print(("Ωμέγα-ünï-名前-" * 30)[:255])')
	printf 'put /span/%s --size 0\n' a b c d e | ref batch p.img
	ref put p.img "/span/$long" --size 0
	populate_exfat p.img 512
	run -0 ref verify -W p.img
	check_populated p.img 512
	run -0 ref ls p.img "/span/$long"
	run -0 bash -c 'timeout 5 fsck.exfat -n p.img | grep "^ERROR" | grep -v "^ERROR: /span: " | head -5'
	assert_output ""
}

@test "exfatref: 1,200 files in one directory spanning clusters; a NoFatChain directory that must jump becomes a FAT chain" {
	local i
	mkexfat m.img 32M 512
	{
		echo "mkdir /grow"
		# Takes the cluster after /grow's: its growth must jump.
		echo "put /blocker --size 512"
		for i in $(seq 1 1200); do
			echo "put /many/file-$i.txt --size $((i % 3 * 300))"
		done
		for i in $(seq 1 40); do
			echo "put /grow/g$i --size 0"
		done
	} | ref batch m.img
	run -0 ref verify -W m.img
	fsck_exfat_clean m.img
	run -0 ref ls m.img /many
	[ "${#lines[@]}" -eq 1200 ]
	# 1,200 sets of 3 entries: 3,600 entries = 225 clusters of 512 bytes.
	run -0 ref ls m.img
	assert_line --regexp $'^attr=---D-\tsize=115200\tvdl=115200\t.*path=/many$'
	assert_line --regexp $'^attr=---D-\tsize=4096\tvdl=4096\tfirst=[0-9]+\tnofatchain=0\truns=[0-9]+-[0-9]+,[0-9]+-[0-9]+\t.*path=/grow$'
	[ "$(ref cat m.img /MANY/FILE-1199.TXT | wc -c)" -eq 600 ]
	# 40 sets of 3 entries: 3,840 bytes = 8 clusters, the first apart.
	run -0 ref ls m.img /grow
	[ "${#lines[@]}" -eq 40 ]
}

@test "exfatref: PercentInUse follows the writer; info counts free clusters from the bitmap" {
	mkexfat q.img 16M 4096
	ref put q.img /big --size 8M
	run -0 ref info q.img
	assert_line percent_in_use=$(ref info q.img | sed -n 's/^percent_in_use_computed=//p')
	# 2048 clusters of data plus the bitmap (1 cluster), the up-case table
	# (5836 bytes: 2) and the root (1).
	local total free
	total=$(ref info q.img | sed -n 's/^cluster_count=//p')
	free=$(ref info q.img | sed -n 's/^free_clusters=//p')
	[ $((total - free)) -eq $((2048 + 4)) ]
	info_matches_dump q.img q.img
	# Timestamps: 2 s units, 10 ms increments and a UTC offset.
	SOURCE_DATE_EPOCH=1700000001 ref put q.img /stamped --size 1
	run -0 ref ls q.img /stamped
	assert_output --partial $'ctime=2023-11-14T22:13:21.00+00:00\tmtime=2023-11-14T22:13:21.00+00:00\tatime=2023-11-14T22:13:20.00+00:00\t'
}

# run_corruption_cases CLUSTER SIZE: every case of `corrupt --list` on a
# fresh copy of a populated image: verify must flag it (warn=1 cases only as
# a warning, so with -W; valid=1 cases not at all), and fsck.exfat -n must
# fail exactly when the table says it does.
run_corruption_cases()
{
	local cs=$1 size=$2 name fsck warn vout fout frc failed=0
	mkexfat base.img "$size" "$cs" -L base
	populate_exfat base.img "$cs"
	ref verify -W base.img
	fsck_exfat_clean base.img
	while read -r name fsck warn valid _; do
		cp base.img c.img
		ref corrupt c.img "$name"
		if [ "$valid" = valid=1 ]; then
			vout=$(ref verify -W c.img) || { echo "$name: a valid volume fails verify: $vout"; failed=1; }
		elif [ "$warn" = warn=1 ]; then
			vout=$(ref verify c.img) || { echo "$name: warning-only case made verify fail: $vout"; failed=1; }
			vout=$(ref verify -W c.img) && { echo "$name: verify -W missed it"; failed=1; }
			grep -q '^warning: ' <<<"$vout" || { echo "$name: no warning line"; failed=1; }
		else
			vout=$(ref verify c.img) && { echo "$name: verify missed it"; failed=1; }
			grep -q '^error: ' <<<"$vout" || { echo "$name: no error line"; failed=1; }
		fi
		frc=0
		fout=$(timeout 20 fsck.exfat -n c.img 2>&1) || frc=$?
		if [ "$fsck" = fsck=yes ] && [ "$frc" -eq 0 ]; then
			echo "$name: the table says fsck.exfat detects it, but it says: $fout"
			failed=1
		elif [ "$fsck" = fsck=no ] && [ "$frc" -ne 0 ]; then
			echo "$name: the table says fsck.exfat misses it, but it exits $frc: $fout"
			failed=1
		fi
	done < <(ref corrupt --list | sed 's/ warn=1/ warn=1/; t; s/^\([^ ]* [^ ]*\)/\1 warn=0/')
	return "$failed"
}

@test "exfatref: every corruption case is flagged by verify, and by fsck.exfat -n where the table says so (4 KiB clusters)" {
	run_corruption_cases 4096 32M
}

@test "exfatref: every corruption case on 32 KiB clusters" {
	run_corruption_cases 32768 32M
}

@test "exfatref: usage errors and a FAT image exit 2" {
	run -2 ref
	run -2 ref info
	mkfs.fat -C f.img 1024 >/dev/null
	run -2 ref info f.img
	assert_output --partial "not an exFAT boot sector"
	mkexfat e.img 8M 4096
	run -2 ref corrupt e.img no-such-case
	run -2 ref put e.img /x
	run -0 ref corrupt --list
	[ "${#lines[@]}" -ge 30 ]
}
