#!/usr/bin/env bats
# helpers.bats: the test helpers in helpers/common.bash, checked against
# mtools, dosfstools and sfdisk, so the program tests can trust them.

load helpers/common

# Free bytes as mdir reports them (digits are grouped with spaces).
mtools_free_bytes()
{
	mdir -i "$1" ::/ </dev/null | sed -n 's/ bytes free$//p' | tr -d ' '
}

cluster_bytes()
{
	local g
	g=$(fat_geometry "$1") || return 1
	eval "$g"
	echo $((bytes_per_sec * sec_per_clus))
}

@test "common: tests run in their own temp dir with the build first on PATH" {
	[ "$PWD" = "$BATS_TEST_TMPDIR" ]
	[ "${PATH%%:*}" = "$FATKIT_BUILD" ]
	[[ $FATKIT_BUILD == /* ]]
	[ "$MTOOLS_SKIP_CHECK" = 1 ]
	[ "$MTOOLSRC" = /dev/null ]
}

@test "size_kib: suffixes are powers of 1024, bytes must be whole KiB" {
	run -0 size_kib 64M
	assert_output 65536
	run -0 size_kib 512K
	assert_output 512
	run -0 size_kib 1G
	assert_output 1048576
	run -0 size_kib 2048
	assert_output 2
	run -1 size_kib 1000
	run -1 size_kib 12X
}

@test "mkimg: each type is what minfo and the cluster count say it is" {
	local t
	for t in fat12 fat16 fat32; do
		case $t in
		fat12) mkimg fat12 4M img ;;
		fat16) mkimg fat16 64M img ;;
		fat32) mkimg fat32 64M img ;;
		esac
		run -0 fat_type img
		assert_output "$t"
		run -0 minfo -i img ::
		assert_output --partial "disk type=\"${t^^}   \""
		assert_output --partial 'sector size: 512 bytes'
		assert_output --partial 'serial number: 1234ABCD'
		fsck_clean img
	done
}

@test "mkimg: --invariant images are byte-for-byte reproducible" {
	mkimg fat16 32M a
	mkimg fat16 32M b
	[ "$(img_sha a)" = "$(img_sha b)" ]
}

@test "mkimg: extra mkfs.fat arguments are passed on, -s/-S win" {
	mkimg fat32 300M img -s 8 -f 1 -n LABEL
	run -0 fat_geometry img
	assert_line sec_per_clus=8
	assert_line nfats=1
	assert_line bytes_per_sec=512
	run -0 minfo -i img ::
	assert_output --partial 'disk label="LABEL      "'
	mkimg fat16 64M img2 -S 4096
	run -0 fat_geometry img2
	assert_line bytes_per_sec=4096
	assert_line type=fat16
}

@test "mkimg: a size too small for the type fails and leaves no file" {
	run -1 --separate-stderr mkimg fat32 16M img
	[[ $stderr == *"made fat16 by cluster count, not fat32"* ]]
	[ ! -e img ]
	run -1 mkimg fat64 16M img
	[ ! -e img ]
}

@test "mkimg_geom: pins sector size, cluster size and FAT count" {
	mkimg_geom 16 2048 8K 3 128M img
	run -0 fat_geometry img
	assert_line bytes_per_sec=2048
	assert_line sec_per_clus=4
	assert_line nfats=3
	assert_line type=fat16
	mkimg_geom fat12 512 512 1 2M img12
	run -0 fat_geometry img12
	assert_line sec_per_clus=1
	assert_line nfats=1
	assert_line type=fat12
	# fsck.fat 4.2 refuses more than 2 FATs, so only img12 is judged.
	fsck_clean img12
}

@test "mkpartimg: MBR with one FAT partition at 1 MiB that mtools reads" {
	local t
	for t in fat16 fat32; do
		mkpartimg disk 64M "$t"
		run -0 sfdisk -d disk
		assert_output --regexp 'disk1 : start= +2048, size= +129024'
		run -0 fat_type disk@@1M
		assert_output "$t"
		run -0 minfo -i disk@@1M ::
		assert_output --partial 'hidden sectors: 2048'
		run -0 mdir -i disk@@1M ::/
		assert_output --partial 'No files'
	done
	run -0 img_sha disk
	local sha=$output
	mkpartimg disk 64M fat32
	[ "$(img_sha disk)" = "$sha" ]
}

@test "populate: the tree reads back through mtools and fsck.fat is clean" {
	mkimg fat16 64M img
	populate img
	[ -s img.sums ]
	run -0 mdir -i img ::/
	assert_output --partial 'A long file name for testing.txt'
	assert_output --partial 'Grüße.txt'
	assert_output --partial '日本語.txt'
	assert_output --partial 'name with spaces.dat'
	run -0 mdir -i img '::/deep1/deep2/deep3/deep4/deep5/deep6'
	assert_output --partial 'leaf'
	run -0 mdir -i img ::/DATA
	assert_output --regexp 'RAND-1~1 BIN +100000 2024-01-02 +3:04 +rand-100000.bin'
	run -0 mtype -i img ::/README.TXT
	assert_output 'fatkit test volume'
	check_sums img
	fsck_clean img
	fat_copies_equal img
}

@test "populate: works through IMAGE@@OFFSET on a partitioned disk" {
	mkpartimg disk 64M fat32
	populate disk@@1M
	[ -s disk.sums ]
	check_sums disk@@1M
	fat_copies_equal disk@@1M
}

@test "check_sums: notices a changed file" {
	mkimg fat12 4M img
	populate img
	echo changed >new.txt
	mcopy -o -i img new.txt ::/DATA/rand-512.bin
	run -1 --separate-stderr check_sums img
	[[ $stderr == "check_sums: /DATA/rand-512.bin in img has sha256 "* ]]
}

@test "gen_bytes: deterministic, exact length, seed matters" {
	[ "$(gen_bytes 100000 s | wc -c)" -eq 100000 ]
	[ "$(gen_bytes 513 s | sha256sum)" = "$(gen_bytes 513 s | sha256sum)" ]
	[ "$(gen_bytes 513 s | sha256sum)" != "$(gen_bytes 513 t | sha256sum)" ]
	[ "$(gen_bytes 0 s | wc -c)" -eq 0 ]
}

@test "populate_big_dir: 1100 files in a directory of several clusters" {
	mkimg fat16 64M img
	populate_big_dir img /BIG/sub 1100
	run -0 mdir -i img ::/BIG/sub
	assert_output --regexp ' 1102 files +11 000 bytes'
	# 1102 slots (with . and ..) of 32 bytes each.
	(($(cluster_bytes img) * 2 < 1102 * 32))
	run -0 mtype -i img ::/BIG/sub/f1100.txt
	assert_output f1100.txt
	fsck_clean img
	[ "$(count_free_clusters img)" -eq $(($(mtools_free_bytes img) / $(cluster_bytes img))) ]
}

@test "img_sha: changes with one byte, stable otherwise" {
	mkimg fat12 1M img
	local a b
	a=$(img_sha img)
	[ "$(img_sha img)" = "$a" ]
	[[ $a =~ ^[0-9a-f]{64}$ ]]
	printf 'x' | dd of=img bs=1 seek=600000 conv=notrunc status=none
	b=$(img_sha img)
	[ "$a" != "$b" ]
}

@test "fat_copies_equal and fsck_clean: fail after one byte of FAT 2 changes" {
	local t
	for t in fat12 fat16 fat32; do
		case $t in
		fat12) mkimg fat12 4M img ;;
		*) mkimg "$t" 64M img ;;
		esac
		fat_copies_equal img
		eval "$(fat_geometry img)"
		local off=$(((rsvd_secs + fat_secs) * bytes_per_sec + 7))
		printf '\x55' | dd of=img bs=1 seek="$off" conv=notrunc status=none
		run -1 --separate-stderr fat_copies_equal img
		[[ $stderr == "FAT copy 1 differs from copy 0 at byte 7 of "* ]]
		run -1 --separate-stderr fsck_clean img
		[[ $stderr == *"FATs differ"* ]]
	done
}

@test "fat_copies_equal: compares every copy, not only the second" {
	mkimg_geom 16 512 2048 3 64M img
	eval "$(fat_geometry img)"
	local off=$(((rsvd_secs + 2 * fat_secs) * bytes_per_sec + 100))
	printf '\x01' | dd of=img bs=1 seek="$off" conv=notrunc status=none
	run -1 --separate-stderr fat_copies_equal img
	[[ $stderr == "FAT copy 2 differs from copy 0 at byte 100 of "* ]]
}

@test "count_free_clusters: equals mtools' free bytes per cluster size" {
	local t clus
	for t in fat12 fat16 fat32; do
		case $t in
		fat12) mkimg fat12 8M img ;;
		*) mkimg "$t" 64M img ;;
		esac
		clus=$(cluster_bytes img)
		[ "$(count_free_clusters img)" -eq $(($(mtools_free_bytes img) / clus)) ]
		populate img
		[ "$(count_free_clusters img)" -eq $(($(mtools_free_bytes img) / clus)) ]
	done
}

@test "fsinfo_free, fsinfo_next: FAT32 FSInfo as minfo reports it" {
	mkimg fat32 64M img
	populate img
	run -0 minfo -i img ::
	assert_output --partial "free clusters=$(fsinfo_free img)"
	assert_output --partial "last allocated cluster=$(fsinfo_next img)"
	[ "$(fsinfo_free img)" -eq "$(count_free_clusters img)" ]
	mkimg fat16 64M img16
	run -2 fsinfo_free img16
	run -2 fsinfo_next img16
}

# path_without DIR PATTERN...: fill DIR with a symlink to every command in
# the usual bin directories except those matching a PATTERN, so that a
# test can run as on a system where they are not installed.
path_without()
{
	# In a bash of its own, with one ln: bats traps each command a
	# test's shell runs, and this loop runs ten thousand (7 s of CPU).
	bash -c '
	dir=$1
	shift
	declare -A seen=()
	links=()
	mkdir -p "$dir" || exit 1
	for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
		[ -d "$d" ] || continue
		for f in "$d"/*; do
			name=${f##*/}
			[ -x "$f" ] && [ -z "${seen[$name]:-}" ] && [ ! -e "$dir/$name" ] || continue
			for x; do
				# shellcheck disable=SC2053 # x is a glob on purpose
				[[ $name == $x ]] && continue 2
			done
			seen[$name]=1
			links+=("$f")
		done
	done
	((${#links[@]} == 0)) || ln -s -t "$dir" -- "${links[@]}"
	' path_without "$@"
}

@test "deps.sh: every tool present and no dpkg or apt: quiet success" {
	path_without bin 'dpkg*' 'apt*'
	# one test a line: set -e stops at no failure but the last of a && list
	[ ! -e bin/dpkg-query ]
	[ -e bin/mdir ]
	[ -e bin/bash ]
	run -0 --separate-stderr env PATH="$PWD/bin" \
		"$BATS_TEST_DIRNAME/helpers/deps.sh" check
	[ -z "$output" ]
	[ -z "$stderr" ]
	run -0 --separate-stderr env PATH="$PWD/bin" \
		"$BATS_TEST_DIRNAME/helpers/deps.sh" demo
	[ -z "$output" ]
	[ -z "$stderr" ]
}

@test "deps.sh: a missing command and no dpkg: named, exit 1" {
	path_without bin 'dpkg*' 'apt*' mdir sfdisk
	run -1 --separate-stderr env PATH="$PWD/bin" \
		"$BATS_TEST_DIRNAME/helpers/deps.sh" check
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "deps.sh: missing: mdir sfdisk" ]
	[ "${stderr_lines[1]}" = "deps.sh: install them with your system's package manager (Debian packages: mtools fdisk)" ]
	# The demo needs mtools but not sfdisk.
	run -1 --separate-stderr env PATH="$PWD/bin" \
		"$BATS_TEST_DIRNAME/helpers/deps.sh" demo
	[ "${stderr_lines[0]}" = "deps.sh: missing: mdir" ]
}

@test "layers.py: names a new break, a circle, a module in no room and a fixed known break" {
	local py="$BATS_TEST_DIRNAME/helpers/layers.py"
	mkdir -p src/fat src/exfat src/io src/volume src/mount obj
	echo '#include "exfat/exfat.h"' >src/fat/dir.c  # one family uses the other
	# The list of families, above both, may name each.
	printf '#include "%s"\n' exfat/exfat.h fat/dir.h >src/mount/families.c
	echo '#include "volume/volume.h"' >src/io/device.c  # I/O uses a room above
	echo '#include "io/cache.h"' >src/io/device.h  # device <-> cache: a circle
	echo '#include "io/device.h"' >src/io/cache.c
	: >src/exfat/exfat.h
	: >src/volume/volume.h
	: >src/io/cache.h
	: >known
	run -1 python3 "$py" src obj known
	assert_line "layers: new break: dir -> exfat: one family uses the other's module (fat/dir.c includes exfat/exfat.h)"
	assert_line "layers: new break: device -> volume: io uses volume, a room above it (io/device.c includes volume/volume.h)"
	assert_line "layers: new break: circle: cache -> device -> cache"
	assert_equal "${#lines[@]}" 3
	# Known breaks pass; a known line that no longer breaks fails.
	printf '%s\n' "dir -> exfat: one family uses the other's module" \
		"device -> volume: io uses volume, a room above it" \
		"circle: cache -> device -> cache" >known
	run -0 python3 "$py" src obj known
	echo "window -> volume: io uses volume, a room above it" >>known
	run -1 python3 "$py" src obj known
	assert_output "layers: fixed, remove it from known: window -> volume: io uses volume, a room above it"
	# A module's room is its folder: one left in src/ or in a folder that
	# is not a room has none.
	sed -i '$d' known
	: >src/loose.c
	mkdir src/misc && : >src/misc/odd.h
	run -1 python3 "$py" src obj known
	assert_line "layers: new break: loose: in no room (move loose.c into the folder of its room: src/{lib,io,volume,table,iface,fat,exfat,mount,engine,tools}/)"
	assert_line "layers: new break: odd: in no room (src/misc/ is not one of ROOMS in tests/helpers/layers.py)"
	assert_equal "${#lines[@]}" 2
}
