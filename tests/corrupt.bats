#!/usr/bin/env bats
# corrupt.bats: hostile images.  Whatever the damage, fatls gives one
# clear stderr line and exit 1: no crash or signal (exit < 128), no hang
# (each run under timeout 20), no flood of repeated output.  Images are
# built small with mkfs.fat and broken here with dd and fatpoke.py; the
# expected messages name the field or chain at fault.

load helpers/common

FATPOKE=$BATS_TEST_DIRNAME/helpers/fatpoke.py

# hostile WANT ARGS...: fatls ARGS exits 1 within 20 s with exactly one
# stderr line, which matches the glob WANT.
hostile()
{
	local want=$1
	shift
	run --separate-stderr timeout 20 fatls "$@"
	if ((status != 1)) || ((${#stderr_lines[@]} != 1)) ||
		[[ $stderr != $want ]]; then
		echo "fatls $*: exit $status, want 1; stderr:"
		printf '  %s\n' "${stderr_lines[@]}"
		echo "want one line: $want"
		return 1
	fi
}

# cut_listing WANT ARGS...: fatls ARGS on a truncated image lists what
# the image holds: the first stderr line is WANT, every other one names
# the image (a file cut, a directory it cannot read), and the exit status
# is 0 or 1, never a crash or a hang.
cut_listing()
{
	local want=$1 line
	shift
	run --separate-stderr timeout 20 fatls "$@"
	if ((status > 1)) || [[ ${stderr_lines[0]} != "$want" ]]; then
		echo "fatls $*: exit $status; stderr:"
		printf '  %s\n' "${stderr_lines[@]}"
		echo "want first: $want"
		return 1
	fi
	for line in "${stderr_lines[@]:1}"; do
		[[ $line == "fatls: ${*: -1}"* || $line == "fatls: "*"cut.img"* ||
			$line == "fatls: disk"* ]] || {
			echo "unexpected: $line"
			return 1
		}
	done
}

# poke FILE OFFSET HEX: write the bytes HEX (e.g. 0002) at OFFSET.
poke()
{
	local hex=$3 fmt= i
	for ((i = 0; i < ${#hex}; i += 2)); do
		fmt+="\\x${hex:i:2}"
	done
	# shellcheck disable=SC2059
	printf "$fmt" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# le16 N, le32 N: N as little-endian hex for poke.
le16()
{
	printf '%02x%02x' $(($1 & 255)) $(($1 >> 8 & 255))
}

le32()
{
	printf '%s%s' "$(le16 $(($1 & 65535)))" "$(le16 $(($1 >> 16)))"
}

# One small populated image per FAT type, built once, in parallel.
setup_file()
{
	local t size
	cd "$BATS_FILE_TMPDIR" || return 1
	for t in fat12 fat16 fat32; do
		case $t in
		fat12) size=1M ;;
		fat16) size=8M ;;
		fat32) size=34M ;;
		esac
		{
			mkimg "$t" "$size" "$t.img" && populate "$t.img" &&
				fat_geometry "$t.img" >"$t.geom"
		} >"$t.log" 2>&1 &
	done
	wait
	for t in fat12 fat16 fat32; do
		[[ -s $t.geom ]] || { cat "$t.log" >&2; return 1; }
	done
}

# small IMG TYPE: a copy of the small populated image of TYPE, and its
# geometry in the caller's variables (fat_geometry names).
small()
{
	cp --sparse=always "$BATS_FILE_TMPDIR/$2.img" "$1"
	eval "$(cat "$BATS_FILE_TMPDIR/$2.geom")"
}

# set_first IMG SLOT_OFFSET CLUSTER: the first cluster of a directory
# entry (DIR_FstClusLO at 26, DIR_FstClusHI at 20, which FAT12/16 ignore).
set_first()
{
	poke "$1" $(($2 + 26)) "$(le16 $(($3 & 65535)))"
	poke "$1" $(($2 + 20)) "$(le16 $(($3 >> 16)))"
}

# survives WHAT ARGS...: fatls ARGS ends within 20 s with exit 0 or 1;
# every stderr line is one of ours (not a sanitizer report), and there is
# one when it fails.  Output is not kept: a garbage tree may be large.
survives()
{
	local what=$1 status=0
	shift
	timeout 20 fatls "$@" >/dev/null 2>err || status=$?
	if ((status > 1)) || grep -qv '^fatls: ' err ||
		{ ((status == 1)) && [[ ! -s err ]]; }; then
		echo "$what: fatls $*: exit $status; stderr:"
		head -n 20 err
		return 1
	fi
}

# first_clus IMG PATH: the first cluster of PATH, as mshowfat sees it.
first_clus()
{
	mshowfat -i "$1" "::$2" </dev/null | sed -n 's/^[^<]*<\([0-9]*\).*/\1/p'
}

@test "corrupt: an empty image" {
	: >empty.img
	hostile 'fatls: empty.img: image is truncated: 0 bytes, no boot sector' empty.img
	hostile 'fatls: empty.img: image is truncated: 0 bytes, no boot sector' -l -R --info empty.img
	hostile 'fatls: empty.img: image is truncated: 0 bytes, no boot sector' --json empty.img
	hostile 'fatls: empty.img: volume offset 512 is past the end of the image (0 bytes)' empty.img@@512
}

@test "corrupt: images cut short inside the boot sector, the FATs, the root directory and the data area" {
	local t cut total
	for t in fat12 fat16 fat32; do
		small cut.img "$t"
		run -0 fatls -R cut.img
		total=$((tot_secs * bytes_per_sec))
		# Shorter and shorter: one byte short, inside the data area,
		# the root directory (FAT32: data), FAT 2, FAT 1, after the boot
		# sector, and inside it.
		for cut in $((total - 1)) \
			$((data_start_sec * bytes_per_sec + 3 * bytes_per_sec + 7)) \
			$(((rsvd_secs + nfats * fat_secs) * bytes_per_sec + 100)) \
			$(((rsvd_secs + fat_secs) * bytes_per_sec + 5)) \
			$((rsvd_secs * bytes_per_sec + 3)) 512; do
			truncate -s "$cut" cut.img
			cut_listing "fatls: cut.img: image is truncated: the volume needs $total bytes, the image has $cut; files past its end are named" -l -R cut.img
		done
		for cut in 511 100 1; do
			truncate -s "$cut" cut.img
			hostile "fatls: cut.img: image is truncated: $cut bytes, no boot sector" cut.img
		done
	done
	# A partition that the end of the disk cuts short.
	mkpartimg disk 8M fat12
	truncate -s 3M disk
	cut_listing "fatls: disk: image is truncated: the volume needs 7340032 bytes, the image has 2097152; files past its end are named" disk
	cut_listing "fatls: disk: image is truncated: the volume needs 7340032 bytes, the image has 2097152; files past its end are named" -P 1 disk
	cut_listing "fatls: disk@@1M: image is truncated: the volume needs 7340032 bytes, the image has 2097152; files past its end are named" disk@@1M
}

@test "corrupt: 1 MiB of random bytes" {
	local seed
	for seed in 1 2 3; do
		gen_bytes 1048576 "random-$seed" >rnd.img
		hostile 'fatls: rnd.img: *' -l -R rnd.img
	done
	# The same behind a jump instruction, so the BPB is read.
	for seed in 1 2; do
		gen_bytes 1048576 "random-$seed" >rnd.img
		poke rnd.img 0 eb3c90
		hostile 'fatls: rnd.img: *bad boot sector: *' -l -R rnd.img
	done
	# Unseeded too; no jump byte and no 55AA, so no partition table.
	head -c 1048576 /dev/urandom >rnd.img
	poke rnd.img 0 00
	poke rnd.img 510 0000
	hostile 'fatls: rnd.img: not a FAT boot sector (jump byte 0x00; *)' rnd.img
}

# Each row: TYPES OFFSET HEX MESSAGE.  TYPES is which FAT types get the
# damage (12, 16, 32, joined by commas; checks that do not depend on the
# type are spread over the types to save time); MESSAGE may use $nclus
# and friends (fat_geometry) and is expanded per image.
BPB_DAMAGE=(
	'12,32|0|00000000000000000000000000|not a FAT boot sector (jump byte 0x00; bytes per sector 0 is not 512, 1024, 2048 or 4096)'
	'12,16,32|11|0000|bad boot sector: bytes per sector 0 is not 512, 1024, 2048 or 4096'
	'16|11|6400|bad boot sector: bytes per sector 100 is not 512, 1024, 2048 or 4096'
	'32|11|0020|bad boot sector: bytes per sector 8192 is not 512, 1024, 2048 or 4096'
	'12|11|0003|bad boot sector: bytes per sector 768 is not 512, 1024, 2048 or 4096'
	'12,16,32|13|00|bad boot sector: sectors per cluster 0 is not a power of two'
	'16|13|03|bad boot sector: sectors per cluster 3 is not a power of two'
	'32|11|001080|bad boot sector: cluster size 524288 exceeds 65536 bytes'
	'12,16,32|14|0000|bad boot sector: no reserved sectors'
	'12,16,32|16|00|bad boot sector: number of FATs 0 is not 1 to 16'
	'16|16|11|bad boot sector: number of FATs 17 is not 1 to 16'
	'12,16|19|0000|bad boot sector: total sectors is 0'
	'32|32|00000000|bad boot sector: total sectors is 0'
	'12,16|22|0000|bad boot sector: *'
	'32|36|00000000|bad boot sector: sectors per FAT is 0'
	'12,16|17|0000|bad boot sector: FAT12/16 layout with no root directory entries'
	'32|17|0002|bad boot sector: FAT32 layout with 512 fixed root entries'
	'12,16|22|0100|bad boot sector: a FAT of * entries cannot map * clusters'
	# a reader takes a volume longer than the image as a truncated dump,
	# so the FAT that cannot map it is the defect named
	'12,16|19|ffff|bad boot sector: a FAT of * entries cannot map * clusters'
	'32|44|00000000|bad boot sector: root cluster 0 is out of range (2 to $((nclus + 1)))'
	'32|44|$(le32 $((nclus + 2)))|bad boot sector: root cluster $((nclus + 2)) is out of range (2 to $((nclus + 1)))'
	'32|44|ffffff0f|bad boot sector: root cluster 268435455 is out of range (2 to $((nclus + 1)))'
	'32|48|$(le16 rsvd_secs)|bad boot sector: FSInfo sector $rsvd_secs is outside the $rsvd_secs reserved sectors'
	'32|48|feff|bad boot sector: FSInfo sector 65534 is outside the $rsvd_secs reserved sectors'
	'32|42|0001|bad boot sector: FAT32 version 1.0 is not 0.0'
	'32|40|8300|bad boot sector: active FAT 3 of 2'
)

@test "corrupt: each damaged BPB field gets its own one-line reason" {
	local t row types off hex msg n=0
	for t in 12 16 32; do
		small img "fat$t"
		dd if=img of=boot.orig bs=512 count=1 status=none
		for row in "${BPB_DAMAGE[@]}"; do
			IFS='|' read -r types off hex msg <<<"$row"
			[[ ,$types, == *,$t,* ]] || continue
			hex=$(eval "echo \"$hex\"")
			msg=$(eval "echo \"$msg\"")
			poke img "$off" "$hex"
			hostile "fatls: img: $msg" -l -R --info img
			dd if=boot.orig of=img conv=notrunc status=none
			n=$((n + 1))
		done
		# Restored, the image lists again: the damage made the failure.
		run -0 fatls -R img
	done
	[ "$n" -eq 40 ]
}

@test "corrupt: BPBs with shifted fields never crash or hang fatls" {
	local t i
	for t in fat12 fat16 fat32; do
		small img "$t"
		dd if=img of=boot.orig bs=512 count=1 status=none
		# 16 boot sectors, each with one to three of the fields that
		# decide the layout nudged (+-3, doubled, halved): many still
		# pass the checks and describe a volume shifted over the real
		# FATs and directories, which fatls then has to read.
		"$FK_PYTHON" - boot.orig "$t" <<'EOF'
import random, struct, sys
orig, kind = open(sys.argv[1], "rb").read(), sys.argv[2]
rnd = random.Random("bpb-" + kind)
fields = [(13, "B"), (14, "H"), (16, "B"), (17, "H"), (19, "H"), (22, "H"),
          (32, "I"), (36, "I"), (44, "I"), (48, "H"), (50, "H")]
if kind != "fat32":
    fields = fields[:7]
for i in range(16):
    bs = bytearray(orig)
    for off, fmt in rnd.sample(fields, rnd.choice([1, 1, 2, 3])):
        v = struct.unpack_from("<" + fmt, bs, off)[0]
        v = rnd.choice([v + rnd.randint(-3, 3), v * 2, v // 2, v + 1, v - 1])
        struct.pack_into("<" + fmt, bs, off, v % (1 << 8 * struct.calcsize(fmt)))
    open("boot.%d" % i, "wb").write(bs)
EOF
		for ((i = 0; i < 16; i++)); do
			dd if="boot.$i" of=img conv=notrunc status=none
			survives "boot.$i" -l -a -R --info img
		done
	done
}

@test "corrupt: a file whose chain loops back to itself, on both FAT copies" {
	local t first
	for t in fat12 fat16 fat32; do
		small img "$t"
		first=$(first_clus img /README.TXT)
		[ -n "$first" ]
		"$FK_PYTHON" "$FATPOKE" set img "$first" "$first"
		fat_copies_equal img
		run -0 "$FK_PYTHON" "$FATPOKE" chain img "$first"
		[ "$output" = "runs=$first-$first end=loop" ]
		# fsck.fat, our judge, sees the same damage.
		run -1 fsck.fat -n img
		assert_output --partial 'Circular cluster chain'
		hostile "fatls: img:/README.TXT: cluster chain loops: cluster $first links back to $first" -l img /README.TXT
		hostile "fatls: img:/README.TXT: cluster chain loops: cluster $first links back to $first" --chain img /README.TXT
		hostile "fatls: img:/README.TXT: cluster chain loops: cluster $first links back to $first" --json img /README.TXT
		# In a listing, the other entries are still shown.
		hostile "fatls: img:/README.TXT: cluster chain loops: cluster $first links back to $first" -l img /
		assert_line --partial 'A long file name for testing.txt'
		assert_line --partial '日本語.txt'
		refute_line --partial 'README.TXT'
		hostile "fatls: img:/README.TXT: cluster chain loops: cluster $first links back to $first" -l -R img
		assert_line --partial /DATA/rand-100000.bin
		# Names need no chain: the plain listing is sound.
		run -0 --separate-stderr fatls img /
		assert_line README.TXT
	done
}

@test "corrupt: a longer loop, the last cluster linking back to the first" {
	local first last
	small img fat16
	first=$(first_clus img /DATA/rand-100000.bin)
	last=$(("$first" + 100000 / 512))
	run -0 "$FK_PYTHON" "$FATPOKE" chain img "$first"
	[ "$output" = "runs=$first-$last end=eoc" ]
	"$FK_PYTHON" "$FATPOKE" set img "$last" "$first"
	hostile "fatls: img:/DATA/rand-100000.bin: cluster chain loops: cluster $last links back to $first" --chain img /DATA
	[ "${#lines[@]}" -eq 6 ]
}

@test "corrupt: a chain that links out of range, to a free cluster, to a bad cluster" {
	local t first
	for t in fat12 fat16 fat32; do
		small img "$t"
		first=$(first_clus img /DATA/rand-4096.bin)
		"$FK_PYTHON" "$FATPOKE" set img "$first" $((nclus + 2))
		hostile "fatls: img:/DATA/rand-4096.bin: cluster chain links to out-of-range cluster $((nclus + 2)) after $first" -l img /DATA/rand-4096.bin
		"$FK_PYTHON" "$FATPOKE" set img "$first" 0
		hostile "fatls: img:/DATA/rand-4096.bin: cluster chain links to a free cluster after $first" --chain img /DATA/rand-4096.bin
		case $t in
		fat12) "$FK_PYTHON" "$FATPOKE" set img "$first" 0xff7 ;;
		fat16) "$FK_PYTHON" "$FATPOKE" set img "$first" 0xfff7 ;;
		fat32) "$FK_PYTHON" "$FATPOKE" set img "$first" 0x0ffffff7 ;;
		esac
		hostile "fatls: img:/DATA/rand-4096.bin: cluster chain links to a bad cluster after $first" --json img /DATA/rand-4096.bin
	done
}

@test "corrupt: a directory entry whose first cluster is out of range" {
	local t off
	for t in fat16 fat32; do
		small img "$t"
		off=$("$FK_PYTHON" "$FATPOKE" slot img 'README  TXT')
		# DIR_FstClusLO (bytes 26..27): past the last cluster.
		set_first img "$off" $((nclus + 5))
		hostile "fatls: img:/README.TXT: first cluster $((nclus + 5)) is out of range" -l img /README.TXT
		# A subdirectory pointing past the end.
		off=$("$FK_PYTHON" "$FATPOKE" slot img 'DATA       ')
		set_first img "$off" $((nclus + 7))
		hostile "fatls: img:/DATA: first cluster $((nclus + 7)) is out of range" img /DATA
		# -R reports it and lists the rest; two bad entries, two lines.
		run --separate-stderr timeout 20 fatls -l -R img
		[ "$status" -eq 1 ]
		[ "${#stderr_lines[@]}" -eq 2 ]
		assert_line --partial /deep1/deep2/deep3/deep4/deep5/deep6/leaf.txt
	done
}

# loop_dir IMG N: IMG (FAT16, 2 KiB clusters) with N files in /LOOP, whose
# chain of 4 clusters is then made to loop: the last links to the first
# (the caller's loop_first and loop_last).
loop_dir()
{
	local first runs last
	mkimg_geom 16 512 2K 2 16M "$1"
	populate "$1"
	populate_big_dir "$1" /LOOP "$2"
	first=$(first_clus "$1" /LOOP)
	runs=$("$FK_PYTHON" "$FATPOKE" chain "$1" "$first")
	[[ $runs =~ ^runs=.*-([0-9]+)\ end=eoc$ ]]
	last=${BASH_REMATCH[1]}
	"$FK_PYTHON" "$FATPOKE" set "$1" "$last" "$first"
	loop_first=$first loop_last=$last
	eval "$(fat_geometry "$1")"
}

@test "corrupt: a directory whose chain loops: fatls -R ends with one error, not the entries over and over" {
	# 254 files, . and ..: 256 slots fill 4 clusters, so there is no
	# end marker and the walk reaches the loop.
	loop_dir img 254
	run -1 fsck.fat -n img
	assert_output --partial 'Circular cluster chain'
	hostile "fatls: img:/LOOP: cluster chain loops: cluster $loop_last links back to $loop_first" -R img
	# The rest of the tree is listed, /LOOP's entries never.
	assert_line /LOOP
	assert_line /deep1/deep2/deep3/deep4/deep5/deep6/leaf.txt
	refute_line --partial /LOOP/
	hostile "fatls: img:/LOOP: cluster chain loops: cluster $loop_last links back to $loop_first" img /LOOP
	[ -z "$output" ]
	hostile "fatls: img:/LOOP: cluster chain loops: cluster $loop_last links back to $loop_first" -l img /LOOP
	hostile "fatls: img:/LOOP: cluster chain loops: cluster $loop_last links back to $loop_first" --json img /LOOP
	# Looking a name up in it ends too.
	run --separate-stderr timeout 20 fatls img /LOOP/nothere.txt
	[ "$status" -eq 1 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
}

@test "corrupt: a FAT32 root directory whose chain loops or breaks" {
	local root
	small img fat32
	root=$(fatls --info img | sed -n 's/^root cluster: //p')
	"$FK_PYTHON" "$FATPOKE" set img "$root" "$root"
	hostile "fatls: img:/: cluster chain loops: cluster $root links back to $root" img
	hostile "fatls: img:/: cluster chain loops: cluster $root links back to $root" -R img
	"$FK_PYTHON" "$FATPOKE" set img "$root" 0
	hostile "fatls: img:/: cluster chain links to a free cluster after $root" -l img /
}

@test "corrupt: a directory that contains its own ancestor: fatls -R ends with one error" {
	local t off top
	for t in fat12 fat16 fat32; do
		small img "$t"
		top=$(first_clus img /deep1)
		off=$("$FK_PYTHON" "$FATPOKE" slot img 'DEEP6      ')
		set_first img "$off" "$top"
		hostile "fatls: img:/deep1/deep2/deep3/deep4/deep5/deep6: directory loop (cluster $top is listed already)" -R img
		assert_line /deep1/deep2/deep3/deep4/deep5/deep6
		assert_line /README.TXT
		# Without -R nothing recurses: deep6 lists deep1's entries.
		run -0 fatls img /deep1/deep2/deep3/deep4/deep5/deep6
		[ "$output" = deep2 ]
	done
}

@test "corrupt: directories that point at the root, and two entries pointing at their parent, end at once" {
	local t off
	for t in fat16 fat32; do
		small img "$t"
		mmd -i img ::/deep1/deep2/deep3/deep4/deep5/other
		# deep6 and other both point at deep5's parent, deep4: without a
		# check each level doubles the walk (2^128 listings).
		local d4
		d4=$(first_clus img /deep1/deep2/deep3/deep4)
		off=$("$FK_PYTHON" "$FATPOKE" slot img 'DEEP6      ')
		set_first img "$off" "$d4"
		off=$("$FK_PYTHON" "$FATPOKE" slot img 'OTHER      ')
		set_first img "$off" "$d4"
		run --separate-stderr timeout 20 fatls -R img
		[ "$status" -eq 1 ]
		[ "${#stderr_lines[@]}" -eq 2 ]
		[[ ${stderr_lines[0]} == "fatls: img:/deep1/deep2/deep3/deep4/deep5/deep6: directory loop (cluster $d4 is listed already)" ]]
		[[ ${stderr_lines[1]} == "fatls: img:/deep1/deep2/deep3/deep4/deep5/other: directory loop (cluster $d4 is listed already)" ]]
		[ "${#lines[@]}" -lt 40 ]
		# A subdirectory whose first cluster is 0 means the root (as
		# ".." does); as a plain entry it is a loop back to /.
		off=$("$FK_PYTHON" "$FATPOKE" slot img 'DEEP1      ')
		set_first img "$off" 0
		run --separate-stderr timeout 20 fatls -R img
		[ "$status" -eq 1 ]
		[ "${#stderr_lines[@]}" -eq 1 ]
		[[ $stderr == "fatls: img:/deep1: directory loop (cluster "*" is listed already)" ]]
	done
}

@test "corrupt: garbage in the FAT and in directories: fatls ends, every stderr line its own" {
	local t seed off
	for t in fat12 fat16 fat32; do
		small img "$t"
		cp --sparse=always img orig.img
		for seed in 1 2; do
			# Random FAT entries in both copies, past the first sector
			# (which keeps the two reserved entries).
			gen_bytes $(((fat_secs - 1) * bytes_per_sec)) "fat-$seed" >fat.bin
			dd if=fat.bin of=img bs="$bytes_per_sec" conv=notrunc status=none \
				seek=$((rsvd_secs + 1))
			dd if=fat.bin of=img bs="$bytes_per_sec" conv=notrunc status=none \
				seek=$((rsvd_secs + fat_secs + 1))
			survives "fat-$seed" -l -a -R --chain img /
			survives "fat-$seed" --json --info -R img /
			timeout 20 fatls --json --info -R img / 2>/dev/null |
				"$FK_PYTHON" -c 'import json, sys; json.load(sys.stdin)' 
			# Random directory slots in /DATA (its first cluster).
			cp --sparse=always orig.img img
			local data
			data=$((data_start_sec * bytes_per_sec + ($(first_clus img /DATA) - 2) * sec_per_clus * bytes_per_sec))
			gen_bytes $((sec_per_clus * bytes_per_sec)) "dir-$seed" >dir.bin
			dd if=dir.bin of=img bs="$bytes_per_sec" conv=notrunc status=none \
				seek=$((data / bytes_per_sec))
			survives "dir-$seed" -l -a -R --chain img
			cp --sparse=always orig.img img
		done
	done
}

# bounded LIMIT_S WANT_STATUS WANT_ERR CMD...: CMD ends within LIMIT_S
# seconds with WANT_STATUS, one of its stderr lines is WANT_ERR (when not
# empty), and its peak RSS stays under 400 MiB: a cost that grows with
# the volume's cluster count (about 1 GiB here) fails.  FK_SLOW_BUILD
# (set by `make coverage`, whose -O0 gcov build is some 20x slower)
# multiplies the time limit; the memory bound stays.
bounded()
{
	local limit=$(($1 * ${FK_SLOW_BUILD:-1})) want_status=$2 want_err=$3
	local rss line seen=
	shift 3
	run --separate-stderr /usr/bin/time -f 'rss=%M' -o rss.txt \
		timeout "$limit" "$@"
	rss=$(sed -n 's/^rss=//p' rss.txt)
	for line in "${stderr_lines[@]}"; do
		[[ $line == "$want_err" ]] && seen=1
	done
	if ((status != want_status)) || ((rss > 400 * 1024)) ||
		[[ -n $want_err && -z $seen ]]; then
		echo "$*: exit $status (want $want_status), peak RSS $rss KiB; stderr:"
		printf '  %s\n' "${stderr_lines[@]}"
		echo "want: $want_err"
		return 1
	fi
}

# sparse_sum IMG: a fingerprint of a huge sparse image without reading
# its holes: the allocated block count and the bytes that hold data.
sparse_sum()
{
	stat -c %b "$1"
	dd if="$1" bs=1M count=1 status=none | sha256sum
	dd if="$1" bs=1M skip=1024 count=2 status=none | sha256sum
}

@test "corrupt: looping chains on a huge sparse FAT32 cost time and memory by the chain, not by the volume" {
	"$FK_PYTHON" "$BATS_TEST_DIRNAME/helpers/hugeloop.py" img
	# About 12 KiB on disk for a volume of 268435445 clusters.
	(($(stat -c %b img) < 1024))
	local file="fatls: img:/LOOP.BIN: cluster chain loops: cluster 4 links back to 3"
	local dir="fatls: img:/LOOPDIR: cluster chain loops: cluster 6 links back to 5"
	bounded 10 1 "$file" fatls -l img
	bounded 10 1 "$dir" fatls -l img
	bounded 10 1 "$file" fatls --chain img /LOOP.BIN
	bounded 10 1 "$file" fatls --json img /LOOP.BIN
	bounded 10 1 "$dir" fatls -R img
	bounded 10 1 "$dir" fatls -l img /LOOPDIR
	local before
	before=$(sparse_sum img)
	bounded 10 1 "fatprealloc: img:/LOOP.BIN: cluster chain loops: cluster 4 links back to 3; run 'fatcheck -r img'" \
		fatprealloc img /LOOP.BIN 4K
	bounded 10 1 "fatprealloc: img:/LOOPDIR: cluster chain loops: cluster 6 links back to 5; run 'fatcheck -r img'" \
		fatprealloc img /LOOPDIR/new.bin 4K
	# A name long enough for many slots must not run the slot search
	# off the end of its map either.
	bounded 10 1 "fatprealloc: img:/LOOPDIR: cluster chain loops: cluster 6 links back to 5; run 'fatcheck -r img'" \
		fatprealloc img "/LOOPDIR/$(printf 'n%.0s' {1..200}).bin" 4K
	[ "$(sparse_sum img)" = "$before" ]
	bounded 60 4 "" fatcheck img
	assert_line "error: /LOOP.BIN: cluster chain loops: cluster 4 links back to 3"
}

# refused IMG WANT ARGS...: fatprealloc IMG ARGS exits 1 with the one
# stderr line WANT and leaves IMG byte-identical.
refused()
{
	local img=$1 want=$2 before
	shift 2
	before=$(img_sha "$img")
	run --separate-stderr timeout 20 fatprealloc "$img" "$@"
	if ((status != 1)) || ((${#stderr_lines[@]} != 1)) ||
		[[ $stderr != "$want" ]] || [[ $(img_sha "$img") != "$before" ]]; then
		echo "fatprealloc $img $*: exit $status, want 1; stderr:"
		printf '  %s\n' "${stderr_lines[@]}"
		echo "want: $want"
		[[ $(img_sha "$img") == "$before" ]] || echo "the image changed"
		return 1
	fi
}

# dir_img IMG TYPE: a small image with /DIR holding five small files
# F1.TXT .. F5.TXT; $dir is /DIR's first cluster.
dir_img()
{
	local i
	small "$1" "$2"
	mmd -i "$1" ::/DIR
	for i in 1 2 3 4 5; do
		echo "file $i" >"F$i.TXT"
		mcopy -i "$1" "F$i.TXT" ::/DIR/
	done
	dir=$(first_clus "$1" /DIR)
}

@test "corrupt: fatprealloc refuses a directory whose chain loops, breaks or leaves the volume, changing nothing" {
	local t name
	name="/DIR/$(printf 'n%.0s' {1..200}).bin"
	for t in fat12 fat16 fat32; do
		# Its entries end at an end marker in the first cluster, so
		# only the chain walk can see the damage after it.
		dir_img img "$t"
		"$FK_PYTHON" "$FATPOKE" set img "$dir" "$dir"
		run -1 fsck.fat -n img
		refused img "fatprealloc: img:/DIR: cluster chain loops: cluster $dir links back to $dir; run 'fatcheck -r img'" /DIR/new.bin 4K
		refused img "fatprealloc: img:/DIR: cluster chain loops: cluster $dir links back to $dir; run 'fatcheck -r img'" "$name" 4K
		refused img "fatprealloc: img:/DIR: cluster chain loops: cluster $dir links back to $dir; run 'fatcheck -r img'" /DIR/F1.TXT 4K
		refused img "fatprealloc: img:/DIR: cluster chain loops: cluster $dir links back to $dir; run 'fatcheck -r img'" -p /DIR/sub/new.bin 4K
		"$FK_PYTHON" "$FATPOKE" set img "$dir" 0
		refused img "fatprealloc: img:/DIR: cluster chain links to a free cluster after $dir; run 'fatcheck -r img'" /DIR/new.bin 4K
		"$FK_PYTHON" "$FATPOKE" set img "$dir" $((nclus + 2))
		refused img "fatprealloc: img:/DIR: cluster chain links to out-of-range cluster $((nclus + 2)) after $dir; run 'fatcheck -r img'" "$name" 4K
		# After the repair, the same request works.
		run fatcheck -r img
		((status == 1))
		run -0 fatprealloc img /DIR/new.bin 4K
		fsck_clean img
	done
}

@test "corrupt: fatprealloc refuses a FAT32 root whose chain loops" {
	local root
	small img fat32
	root=$(fatls --info img | sed -n 's/^root cluster: //p')
	"$FK_PYTHON" "$FATPOKE" set img "$root" "$root"
	refused img "fatprealloc: img:/: cluster chain loops: cluster $root links back to $root; run 'fatcheck -r img'" /new.bin 4K
}

@test "corrupt: fatprealloc never writes over entries hidden after an end marker" {
	local t off
	for t in fat12 fat16 fat32; do
		dir_img img "$t"
		# F2's slot becomes the end marker: F3..F5 now lie after it,
		# where Linux and fsck.fat still see them.
		off=$("$FK_PYTHON" "$FATPOKE" slot img 'F2      TXT')
		poke img "$off" 00
		run -0 mdir -i img ::/DIR
		refute_output --partial F3
		refused img "fatprealloc: img:/DIR: live entries hidden after the end-of-directory marker (slot 3); run 'fatcheck -r img'" \
			"/DIR/A long name for the new file.bin" 4K
		refused img "fatprealloc: img:/DIR: live entries hidden after the end-of-directory marker (slot 3); run 'fatcheck -r img'" \
			/DIR/NEW.BIN 4K
		run fatcheck -r img
		((status == 1))
		# The repair keeps them, and every reader sees them now.
		run -0 mdir -i img ::/DIR
		assert_output --partial F3
		assert_output --partial F5
		run -0 fatprealloc img "/DIR/A long name for the new file.bin" 4K
		fsck_clean img
	done
}

@test "corrupt: fatprealloc takes slots after an end marker only from its all-zero tail" {
	local t off i first
	for t in fat12 fat16 fat32; do
		dir_img img "$t"
		# Slot 3 (F2) becomes the end marker; F3..F5 (slots 4..6)
		# deleted entries after it: nobody's, but not all zeros.
		off=$("$FK_PYTHON" "$FATPOKE" slot img "F2      TXT")
		for i in 2 3 4 5; do
			mdel -i img "::/DIR/F$i.TXT"
		done
		poke img "$off" 00
		fsck_clean img
		run -0 fatprealloc img "/DIR/A long name for the new file.bin" 4K
		fsck_clean img
		run -0 mdir -i img ::/DIR
		assert_output --partial "A long name for the new file.bin"
		# The new name's first slot is slot 7, past the deleted ones,
		# and the marker became a deleted slot so Windows sees it.
		eval "$(fat_geometry img)"
		first=$(("$data_start_sec" * "$bytes_per_sec" + (dir - 2) * "$sec_per_clus" * "$bytes_per_sec"))
		run -0 "$FK_PYTHON" - img "$first" <<'PY'
import sys
f = open(sys.argv[1], "rb"); f.seek(int(sys.argv[2]))
d = f.read(32 * 12)
print(" ".join("%02x" % d[32 * i] for i in range(12)))
PY
		[[ $output == "2e 2e 46 e5 e5 e5 e5 43 02 01 41 00" ]]
	done
}

@test "corrupt: fatprealloc refuses a directory longer than FAT's 65536 entries" {
	local t name
	name="/DATA/$(printf 'n%.0s' {1..200}).bin"
	for t in fat16 fat32; do
		small img "$t"
		"$FK_PYTHON" "$BATS_TEST_DIRNAME/helpers/corrupt.py" img endless-dir /DATA
		refused img "fatprealloc: img:/DATA: directory has more than 65536 entries; run 'fatcheck -r img'" /DATA/new.bin 4K
		refused img "fatprealloc: img:/DATA: directory has more than 65536 entries; run 'fatcheck -r img'" "$name" 4K
		refused img "fatprealloc: img:/DATA: directory has more than 65536 entries; run 'fatcheck -r img'" /DATA/rand-4096.bin 8K
	done
}

@test "corrupt: the repair hint names the partition that was opened (-P N)" {
	dir_img img fat16
	"$FK_PYTHON" "$FATPOKE" set img "$dir" "$dir"
	truncate -s $(($(stat -c %s img) + (1 << 20))) disk
	echo 'start=2048, type=06' | sfdisk -q --label dos disk
	dd if=img of=disk bs=1M seek=1 conv=notrunc status=none
	refused disk "fatprealloc: disk:/DIR: cluster chain loops: cluster $dir links back to $dir; run 'fatcheck -r -P 1 disk'" -P 1 /DIR/new.bin 4K
	# Without -P the volume is found the same way, and the hint needs none.
	refused disk "fatprealloc: disk:/DIR: cluster chain loops: cluster $dir links back to $dir; run 'fatcheck -r disk'" /DIR/new.bin 4K
	# The hinted command does what it says.
	run fatcheck -r -P 1 disk
	((status == 1))
	run -0 fatprealloc -P 1 disk /DIR/new.bin 4K
}

@test "corrupt: an unreadable sector among the reserved sectors does not keep a FAT volume from opening" {
	# FK_BAD_SECTOR (fault-injection builds) fails every read that covers
	# that sector with EIO, as a worn card's does.  The volume's start is
	# read in one request of the most any family needs (12 KiB); where
	# that fails, the boot sector alone must serve, as it did when only
	# 512 bytes were read.
	mkimg fat32 64M probe.img
	FK_BAD_SECTOR=0 run fatls probe.img
	[[ $status -ne 0 ]] || skip "fatls built without -DFK_FAULT_INJECTION"
	assert_output --partial "Input/output error"
	local t want
	for t in fat32 fat16; do
		rm -f img
		mkimg "$t" 64M img -R 8 # sectors 1 to 7 reserved on both
		mcopy -i img "$BATS_TEST_FILENAME" ::/KEEP.TXT
		mdir -b -i img ::/ | grep -q KEEP.TXT
		want=$(fatcheck -n img)
		FK_BAD_SECTOR=3 run fatls img
		assert_success
		assert_line KEEP.TXT
		FK_BAD_SECTOR=3 run fatcheck -n img
		assert_success
		assert_output "$want"
	done
}
