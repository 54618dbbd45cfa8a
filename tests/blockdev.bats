#!/usr/bin/env bats
# blockdev.bats: the writers on block devices, and the refusals that keep
# them off mounted ones. Needs root and working loop devices (losetup, and
# mount for an ext4 volume); skips otherwise. Judged by fsck.fat, mtools
# and cmp on the backing image file, never through fatkit.

load helpers/common

setup()
{
	common_setup
	((EUID == 0)) || skip "needs root for losetup"
	MNT= LOOPDEV= LOOPDEV2=
}

teardown()
{
	if [[ -n ${MNT:-} ]]; then
		umount "$MNT" 2>/dev/null || true
	fi
	if [[ -n ${LOOPDEV:-} ]]; then
		losetup -d "$LOOPDEV" 2>/dev/null || true
	fi
	if [[ -n ${LOOPDEV2:-} ]]; then
		losetup -d "$LOOPDEV2" 2>/dev/null || true
	fi
}

# attach FILE [LOSETUP_ARGS...]: LOOPDEV, a loop device backed by FILE.
attach()
{
	local file=$1
	shift
	if ! LOOPDEV=$(losetup -f --show "$@" "$file" 2>/dev/null) ||
		[[ ! -b $LOOPDEV ]]; then
		LOOPDEV=
		skip "losetup -f --show does not work here"
	fi
}

detach()
{
	losetup -d "$LOOPDEV"
	LOOPDEV=
}

# old_data IMG: fill the free space with 3 MiB of random bytes and free it
# again, so that new clusters hold old data and zeroing is real work.
old_data()
{
	gen_bytes $((3 * 1024 * 1024)) old >junk
	mcopy -i "$1" junk ::JUNK
	mdel -i "$1" ::JUNK
	rm -f junk
}

# reads_zeros IMG PATH BYTES: PATH in IMG is BYTES long and all zeros.
reads_zeros()
{
	mcopy -n -i "$1" "::$2" got.bin
	[ "$(stat -c %s got.bin)" -eq "$3" ]
	cmp got.bin <(head -c "$3" /dev/zero)
}

@test "blockdev: fatprealloc and fatcheck -r write through a loop device as through the file" {
	mkimg_geom 16 512 512 2 16M img
	old_data img
	attach img
	run -0 --separate-stderr fatprealloc --stats "$LOOPDEV" /a.bin 1M /DIR/b.bin 300K -p
	assert_line --regexp '^bytes zeroed: [1-9]'
	# Lose a chain on the device, then repair it there.
	detach
	mcopy -i img <(echo lost) ::LOST.TXT
	lost=$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot img 'LOST    TXT')
	printf '\xe5' | dd of=img bs=1 seek="$lost" conv=notrunc status=none
	attach img
	run -4 --separate-stderr fatcheck "$LOOPDEV"
	assert_line --regexp '^error: .*lost'
	run -1 --separate-stderr fatcheck -r "$LOOPDEV"
	run -0 --separate-stderr fatcheck "$LOOPDEV"
	detach
	fsck_clean img
	reads_zeros img /a.bin 1048576
	reads_zeros img /DIR/b.bin 307200
}

@test "blockdev: a 4096-byte-sector loop device under 512-byte clusters is zeroed by writing" {
	# BLKZEROOUT takes only ranges aligned to the device's logical
	# sector; a 512-byte cluster mostly is not, so zeros are written.
	mkimg_geom 16 512 512 2 16M img
	old_data img
	attach img -b 4096
	[ "$(blockdev --getss "$LOOPDEV")" -eq 4096 ] ||
		skip "losetup -b 4096 is not honoured here"
	run -0 --separate-stderr fatprealloc --stats "$LOOPDEV" /c.bin 1000K
	assert_line --regexp '^bytes written: 10[0-9]{5}$'
	detach
	fsck_clean img
	reads_zeros img /c.bin 1024000
}

@test "blockdev: writers refuse a mounted device and an image behind a mounted loop device" {
	command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 is not installed"
	truncate -s 16M ext
	mkfs.ext4 -q ext
	attach ext
	mkdir mnt
	mount "$LOOPDEV" mnt 2>/dev/null || skip "cannot mount ext4 here"
	MNT=$PWD/mnt
	run -1 --separate-stderr fatprealloc ext /a.bin 1K
	[ "$stderr" = "fatprealloc: ext: image is mounted on $MNT via $LOOPDEV; refusing to write (use --force)" ]
	run -8 --separate-stderr fatcheck -r ext
	[ "$stderr" = "fatcheck: ext: image is mounted on $MNT via $LOOPDEV; refusing to write (use --force)" ]
	run -1 --separate-stderr fatprealloc "$LOOPDEV" /a.bin 1K
	[ "$stderr" = "fatprealloc: $LOOPDEV: device is busy; refusing to write (use --force)" ]
	# --force skips only the mount check: this is no FAT volume either.
	run -1 --separate-stderr fatprealloc --force ext /a.bin 1K
	[ "$stderr" = "fatprealloc: ext: holds ext4, not a FAT volume" ]
	# Readers are not writers: no refusal for being mounted.
	run -1 --separate-stderr fatls ext
	[ "$stderr" = "fatls: ext: holds ext4, not a FAT volume" ]
	# An image on a loop device nobody mounted is written as usual,
	# whatever other loop devices are mounted.
	mkimg fat16 16M fat.img
	LOOPDEV2=$(losetup -f --show fat.img)
	run -0 --separate-stderr fatprealloc fat.img /a.bin 1K
	losetup -d "$LOOPDEV2"
	LOOPDEV2=
	fsck_clean fat.img
	[[ $(mdir -i fat.img ::a.bin) == *"a        bin      1024 "* ]]
}

# mapped_reads TRACE PATH: how many mmap calls of strace's TRACE map the
# file descriptor PATH was opened as, once it was (ld.so maps its cache
# under the same number before).
mapped_reads()
{
	awk -v path="\"$2\"" '
		index($0, "openat(") && index($0, path ", ") {
			fd = $NF
			next
		}
		fd != "" && $0 ~ ("mmap\\(.*PROT_READ, MAP_PRIVATE[|A-Z_]*, " fd ", ") { n++ }
		END { print fd == "" ? "none" : n + 0 }
	' "$1"
}

@test "blockdev: fatcheck reads a device's FAT with pread, never through a mapping (a bad sector there would kill it with SIGBUS)" {
	command -v strace >/dev/null || skip "strace is not installed"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot run under ptrace
	mkimg fat32 64M img
	populate img
	# The image file itself is mapped: the test can tell the two apart.
	run -0 strace -f -e trace=openat,mmap -o file.trace fatcheck img
	(($(mapped_reads file.trace img) > 0))
	attach img
	run -0 strace -f -e trace=openat,mmap -o dev.trace \
		fatcheck "$LOOPDEV"
	[ "$(mapped_reads dev.trace "$LOOPDEV")" -eq 0 ]
	detach
	fsck_clean img
}
