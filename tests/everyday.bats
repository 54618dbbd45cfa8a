#!/usr/bin/env bats
# everyday.bats: what a new user meets first: sizes as fallocate takes
# them, names FAT refuses, paths inside the image told apart from the
# image, what libblkid finds where no FAT volume is, who holds the lock,
# the progress line on a terminal.  Judged by mdir, mtype, fsck.fat,
# sfdisk/mkfs.ext4 layouts and sha256 of whole images.

load helpers/common

PROGS=(fatls fatprealloc fatcheck)

teardown()
{
	release_held
}

usage_code()
{
	[[ $1 == fatcheck ]] && echo 16 || echo 2
}

fail_code()
{
	[[ $1 == fatcheck ]] && echo 8 || echo 1
}

# args PROG IMAGE...: a run of PROG that writes nothing.
args()
{
	local p=$1
	shift
	case $p in
	fatls) ARGS=("$@" /) ;;
	fatprealloc) ARGS=(--dry-run "$@" /x.bin 4K) ;;
	fatcheck) ARGS=("$@") ;;
	esac
}

# sdcard FILE: an SD-card-style disk: MBR, partition 1 FAT16 at 4 MiB
# (32 MiB), partition 2 ext4 at 36 MiB (8 MiB).
sdcard()
{
	local file=$1
	truncate -s 44M "$file"
	printf 'label: dos\nstart=8192, size=65536, type=6\nstart=73728, type=83\n' |
		sfdisk -q "$file"
	mkfs.fat --invariant -F 16 -S 512 -s 4 -h 8192 --offset 8192 "$file" 32768 >/dev/null
	truncate -s 8M p2.ext4
	mkfs.ext4 -q -F p2.ext4 >/dev/null 2>&1
	dd if=p2.ext4 of="$file" bs=512 seek=73728 conv=notrunc status=none
	rm -f p2.ext4
}

@test "sizes: a fraction with a suffix is rounded up to whole bytes, as fallocate -l" {
	mkimg fat16 16M img
	run -0 --separate-stderr fatprealloc img /a.bin 1.5K /b.bin 0.1K /c.bin 0.001MB
	[ -z "$stderr" ]
	# mdir prints the sizes; mtype reads back zeros of that length.
	[ "$(mtype -i img ::/a.bin | wc -c)" -eq 1536 ]
	[ "$(mtype -i img ::/b.bin | wc -c)" -eq 103 ]   # ceil(102.4)
	[ "$(mtype -i img ::/c.bin | wc -c)" -eq 1000 ]
	[ "$(mtype -i img ::/a.bin | tr -d '\0' | wc -c)" -eq 0 ]
	fsck_clean img
	# fallocate(1) agrees on the rounding, on a plain file.
	if command -v fallocate >/dev/null; then
		fallocate -l 0.1K plain
		[ "$(stat -c %s plain)" -eq 103 ] || [ "$(stat -c %s plain)" -eq 102 ]
	fi
}

@test "sizes: negative, overflowing and garbage sizes are usage errors listing the accepted forms" {
	mkimg fat16 16M img
	local before s
	before=$(img_sha img)
	for s in -1 -1.5G 1.5 1.5.5M 1,5M 99999999999999999999 16777216T 1Q; do
		run -2 --separate-stderr fatprealloc img /x.bin "$s"
		[[ $stderr == "fatprealloc: invalid size '$s'"*"sizes are bytes, or a number with K M G T (KiB MiB GiB TiB: powers of 1024) or KB MB GB TB (powers of 1000), such as 4096, 64M or 1.5G (try 'fatprealloc --help')" ]]
		[ -z "$output" ]
	done
	run -2 --separate-stderr fatprealloc img /x.bin -1
	[[ $stderr == "fatprealloc: invalid size '-1' (negative): "* ]]
	run -2 --separate-stderr fatprealloc img /x.bin 99999999999999999999
	[[ $stderr == "fatprealloc: invalid size '99999999999999999999' (too large): "* ]]
	[ "$(img_sha img)" = "$before" ]
}

@test "-P N together with IMAGE@@OFFSET is a usage error in every program" {
	mkpartimg disk 8M fat12
	local before p code
	before=$(img_sha disk)
	for p in "${PROGS[@]}"; do
		code=$(usage_code "$p")
		args "$p" -P 1 disk@@1M
		run "-$code" --separate-stderr "$p" "${ARGS[@]}"
		[ "$stderr" = "$p: -P 1 and 'disk@@1M' both choose the volume; give one of them (try '$p --help')" ]
		[ -z "$output" ]
	done
	[ "$(img_sha disk)" = "$before" ]
}

@test "names FAT refuses: one line naming the rule, exit 1, image unchanged" {
	mkimg fat16 16M img
	local before c long
	before=$(img_sha img)
	for c in '*' ':' '?' '"' '<' '>' '|' '\'; do
		run -1 --separate-stderr fatprealloc img "/a${c}b.txt" 1K
		[ "$stderr" = "fatprealloc: img:/a${c}b.txt: '$c' is not allowed in FAT names" ]
		run -1 --separate-stderr fatls img "/a${c}b.txt"
		[ "$stderr" = "fatls: img:/a${c}b.txt: '$c' is not allowed in FAT names" ]
	done
	run -1 --separate-stderr fatprealloc -p img "/dir:x/f.txt" 1K
	[ "$stderr" = "fatprealloc: img:/dir:x/f.txt: ':' is not allowed in FAT names" ]
	run -1 --separate-stderr fatprealloc img "/a$(printf '\t')b" 1K
	[ "$stderr" = "fatprealloc: img:/a$(printf '\t')b: control characters (here 0x09) are not allowed in FAT names" ]
	run -1 --separate-stderr fatprealloc img /trailing. 1K
	[ "$stderr" = "fatprealloc: img:/trailing.: FAT names cannot end with a dot" ]
	run -1 --separate-stderr fatprealloc img '/trailing ' 1K
	[ "$stderr" = "fatprealloc: img:/trailing : FAT names cannot end with a space" ]
	long=$(printf 'x%.0s' {1..256})
	run -1 --separate-stderr fatprealloc img "/$long" 1K
	[ "$stderr" = "fatprealloc: img:/$long: FAT names are at most 255 UTF-16 units long" ]
	# 255 units is the limit, not past it: é is one UTF-16 unit.
	long=$(printf 'é%.0s' {1..255})
	run -0 --separate-stderr fatprealloc --dry-run img "/$long" 1K
	[ "$(img_sha img)" = "$before" ]
}

@test ". and .. are resolved by name the same way in fatprealloc and fatls" {
	mkimg fat16 16M img
	populate img
	run -0 fatprealloc img /DATA/../dot.bin 1K /./deep1/./deep2/../x.bin 2K
	# mdir, not fatkit, says where the files went.
	run -0 mdir -b -i img ::/DOT.BIN
	run -0 mdir -b -i img ::/deep1/X.BIN
	run -0 fatls img /DATA/../dot.bin
	[ "$output" = /dot.bin ]
	run -0 fatls img /deep1/deep2/../x.bin
	[ "$output" = /deep1/x.bin ]
	[ "$(fatls img /..)" = "$(fatls img /)" ]
	fsck_clean img
}

@test "a missing image and a missing path inside it give different lines" {
	mkimg fat16 16M img
	local before
	before=$(img_sha img)
	run -1 --separate-stderr fatls nothere.img /VIDEO
	[ "$stderr" = "fatls: nothere.img: No such file or directory" ]
	run -1 --separate-stderr fatls img /VIDEO
	[ "$stderr" = "fatls: img:/VIDEO: No such file or directory" ]
	run -1 --separate-stderr fatprealloc img /VIDEO/clip.mp4 1M
	[ "$stderr" = "fatprealloc: img:/VIDEO/clip.mp4: No such file or directory (parent directory 'VIDEO' is missing; -p creates it)" ]
	# With @@OFFSET, the image as typed.
	mkpartimg disk 8M fat12
	run -1 --separate-stderr fatls disk@@1M /VIDEO
	[ "$stderr" = "fatls: disk@@1M:/VIDEO: No such file or directory" ]
	# An absolute image path is still the image, not a path inside.
	run -1 --separate-stderr fatls "$PWD/nothere.img"
	[ "$stderr" = "fatls: $PWD/nothere.img: No such file or directory" ]
	[ "$(img_sha img)" = "$before" ]
}

@test "fatls: a trailing slash after a file is Not a directory; an alias or other case prints the real name" {
	mkimg fat16 16M img
	populate img
	printf 'x\n' >rootfile_long.txt
	mcopy -i img rootfile_long.txt ::/
	run -1 --separate-stderr fatls img /README.TXT/
	[ "$stderr" = "fatls: img:/README.TXT/: Not a directory" ]
	# mdir names the alias; fatls shows the long name, as mdir does.
	alias=$(mdir -i img ::/ | awk '/rootfile_long.txt/ {print $1 "~" }' | head -1)
	run -0 mdir -i img ::/ROOTFI~1.TXT
	[[ $output == *rootfile_long.txt* ]]
	run -0 fatls img /rootfi~1.txt
	[ "$output" = /rootfile_long.txt ]
	run -0 fatls img /ROOTFILE_LONG.TXT
	[ "$output" = /rootfile_long.txt ]
	run -0 fatls img /data/RAND-1.BIN
	[ "$output" = /data/rand-1.bin ]
}

@test "fatprealloc --dry-run lists the directories -p would create; counts are singular for one" {
	mkimg fat16 16M img
	populate img
	local before c
	before=$(img_sha img)
	run -0 --separate-stderr fatprealloc --dry-run -p img /new/sub/a.bin 1 /NEW/other/b.bin 1 /DATA/c.bin 1
	[ "${lines[0]}" = "would create directory /new" ]
	[ "${lines[1]}" = "would create directory /new/sub" ]
	[ "${lines[2]}" = "would create directory /NEW/other" ]
	[ "${lines[3]}" = "would create /new/sub/a.bin: size 0 -> 1, 1 new cluster, 1 fragment" ]
	[ "${#lines[@]}" -eq 6 ]
	[ "$(img_sha img)" = "$before" ]
	# -v after a real run says the same, in the past tense.
	run -0 fatprealloc -v -p img /new/sub/a.bin 1
	[ "${lines[0]}" = "created directory /new" ]
	[ "${lines[1]}" = "created directory /new/sub" ]
	fsck_clean img
	# Need 1 cluster with none free: "1 cluster", not "1 clusters".
	mkimg fat12 1M full
	c=$(count_free_clusters full)
	run -0 fatprealloc full /fill.bin $((c * 512))
	before=$(img_sha full)
	run -1 --separate-stderr fatprealloc full /one.bin 1
	[ "$stderr" = "fatprealloc: full: No space left on device: the run needs 512 B, 0 B is free (/one.bin does not fit)" ]
	run -1 --separate-stderr fatprealloc -v full /one.bin 1
	[ "$stderr" = "fatprealloc: full: No space left on device: the run needs 512 B, 0 B is free (/one.bin does not fit); 1 cluster of 512 bytes needed, 0 free" ]
	[ "$(img_sha full)" = "$before" ]
}

@test "libblkid says what is there when a partition or an offset holds no FAT volume" {
	sdcard sd.img
	local before p code
	before=$(img_sha sd.img)
	# On its own: the lone FAT partition, as mdir reads it at 4 MiB.
	run -0 fatls sd.img /
	run -0 minfo -i sd.img@@4M ::
	for p in "${PROGS[@]}"; do
		code=$(fail_code "$p")
		args "$p" -P 2 sd.img
		run "-$code" --separate-stderr "$p" "${ARGS[@]}"
		[ "$stderr" = "$p: sd.img: partition 2 holds ext4, not a FAT volume" ]
		args "$p" sd.img@@1M
		run "-$code" --separate-stderr "$p" "${ARGS[@]}"
		[ "$stderr" = "$p: sd.img@@1M: no FAT volume at offset 1 MiB (an MBR partition table holds 1 (FAT16) at 4 MiB, 2 (ext4) at 36 MiB)" ]
		# An absolute IMAGE is still IMAGE, not a path inside the volume.
		args "$p" "$PWD/sd.img@@1M"
		run "-$code" --separate-stderr "$p" "${ARGS[@]}"
		[ "$stderr" = "$p: $PWD/sd.img@@1M: no FAT volume at offset 1 MiB (an MBR partition table holds 1 (FAT16) at 4 MiB, 2 (ext4) at 36 MiB)" ]
		args "$p" sd.img@@0
		run "-$code" --separate-stderr "$p" "${ARGS[@]}"
		[ "$stderr" = "$p: sd.img@@0: an MBR partition table, not a FAT volume, is at offset 0: 1 (FAT16) at 4 MiB, 2 (ext4) at 36 MiB; use -P 1" ]
		args "$p" sd.img@@36M
		run "-$code" --separate-stderr "$p" "${ARGS[@]}"
		[ "$stderr" = "$p: sd.img@@36M: offset 36 MiB holds ext4, not a FAT volume" ]
		args "$p" -P 3 sd.img
		run "-$code" --separate-stderr "$p" "${ARGS[@]}"
		[ "$stderr" = "$p: sd.img: no partition 3 (partitions: 1 (FAT16) at 4 MiB, 2 (ext4) at 36 MiB)" ]
	done
	# A FAT volume with a broken BPB is still FAT to libblkid: the
	# volume's own reason is given, not "no FAT volume".
	mkpartimg disk 8M fat12
	printf '\x00' | dd of=disk bs=1 seek=1048576 conv=notrunc status=none
	printf '\x11' | dd of=disk bs=1 seek=$((1048576 + 16)) conv=notrunc status=none
	run -1 --separate-stderr fatls disk@@1M
	[ "$stderr" = "fatls: disk: not a FAT boot sector (jump byte 0x00; number of FATs 17 is not 1 to 16)" ]
	# A bare ext4 image says so.
	truncate -s 8M bare.ext4
	mkfs.ext4 -q -F bare.ext4 >/dev/null 2>&1
	run -1 --separate-stderr fatls bare.ext4
	[ "$stderr" = "fatls: bare.ext4: holds ext4, not a FAT volume" ]
	[ "$(img_sha sd.img)" = "$before" ]
}

@test "a file that is no volume says what it is: text, another file system; a damaged boot sector keeps its reason" {
	local p code before
	cp "$BATS_TEST_DIRNAME/../README.md" readme
	# UTF-8 text, one sequence cut by the end of the first sector
	{ printf 'x%.0s' $(seq 511); printf '\xc3\xa9 caf\xc3\xa9\n'; } >utf8
	mkimg fat12 1M broken
	printf '\x00' | dd of=broken bs=1 conv=notrunc status=none
	printf '\x11' | dd of=broken bs=1 seek=16 conv=notrunc status=none
	# text but for one NUL byte: not called text
	{ printf 'a%.0s' $(seq 100); printf '\0'; printf 'b%.0s' $(seq 600); } >nul
	before=$(img_sha readme)
	for p in "${PROGS[@]}"; do
		code=$(fail_code "$p")
		for f in readme utf8; do
			args "$p" "$f"
			run "-$code" --separate-stderr "$p" "${ARGS[@]}"
			[ "$stderr" = "$p: $f: not a FAT or exFAT volume (text file?)" ]
		done
		args "$p" broken
		run "-$code" --separate-stderr "$p" "${ARGS[@]}"
		[ "$stderr" = "$p: broken: not a FAT boot sector (jump byte 0x00; number of FATs 17 is not 1 to 16)" ]
		args "$p" nul
		run "-$code" --separate-stderr "$p" "${ARGS[@]}"
		[[ $stderr == "$p: nul: not a FAT boot sector (jump byte 0x61; "* ]]
	done
	[ "$(img_sha readme)" = "$before" ]
	command -v mkfs.ext4 >/dev/null || skip "no mkfs.ext4"
	truncate -s 4M x.img
	mkfs.ext4 -q -F x.img >/dev/null 2>&1
	for p in "${PROGS[@]}"; do
		args "$p" x.img
		run "-$(fail_code "$p")" --separate-stderr "$p" "${ARGS[@]}"
		[ "$stderr" = "$p: x.img: holds ext4, not a FAT volume" ]
	done
}

@test "image is in use names the process that holds the lock (from /proc/locks)" {
	mkimg fat16 16M img
	local before p code
	before=$(img_sha img)
	[ -r /proc/locks ] || skip "no /proc/locks"
	flock img sleep 30 &
	HOLDER=$!
	for _ in $(seq 100); do
		flock -n img true || break
		sleep 0.05
	done
	for p in "${PROGS[@]}"; do
		code=$(fail_code "$p")
		case $p in
		fatls) set -- img / ;;
		fatcheck) set -- -r img ;;
		fatprealloc) set -- img /x.bin 1K ;;
		esac
		run "-$code" --separate-stderr "$p" "$@"
		# flock(1) takes the lock itself, then runs sleep.
		[ "$stderr" = "$p: img: image is in use by process $HOLDER (flock)" ]
	done
	[ "$(img_sha img)" = "$before" ]
}

@test "an image behind a mounted loop device: the refusal names the loop device and the mount point" {
	[ "$(id -u)" -eq 0 ] || skip "needs root for losetup and mount"
	# The check comes before the boot sector is read and goes by the
	# backing file, so any filesystem the kernel mounts will do: vfat
	# where it is built, else ext4.
	mkimg fat16 16M img
	LOOPDEV=$(losetup -f --show img 2>/dev/null) || skip "no loop devices"
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
	if ! mount -t vfat -o ro "$LOOPDEV" "$MNT" 2>/dev/null; then
		losetup -d "$LOOPDEV"
		truncate -s 8M img
		mkfs.ext4 -q -F img >/dev/null 2>&1 || skip "no mkfs.ext4"
		LOOPDEV=$(losetup -f --show img) || skip "no loop devices"
		mount -o ro "$LOOPDEV" "$MNT" 2>/dev/null || {
			MNT=
			skip "cannot mount vfat or ext4 here"
		}
	fi
	local before
	before=$(img_sha img)
	run -1 --separate-stderr fatprealloc img /x.bin 1K
	[ "$stderr" = "fatprealloc: img: image is mounted on $MNT via $LOOPDEV; refusing to write (use --force)" ]
	run -8 --separate-stderr fatcheck -r img
	[ "$stderr" = "fatcheck: img: image is mounted on $MNT via $LOOPDEV; refusing to write (use --force)" ]
	# The loop device itself: the mount point, from the mount table.
	run -1 --separate-stderr fatprealloc "$LOOPDEV" /x.bin 1K
	[[ $stderr == "fatprealloc: $LOOPDEV: "*"refusing to write (use --force)" ]]
	[[ $stderr == *"mounted on $MNT"* || $stderr == *"device is busy"* ]]
	[ "$(img_sha img)" = "$before" ]
}

# on_pty CMD...: run CMD with stderr (and stdout) on a pseudo-terminal made
# by script(1); the raw bytes are in pty.out.
on_pty()
{
	command -v script >/dev/null || skip "script(1) is not installed"
	local cmd
	printf -v cmd '%q ' "$@"
	script -qfec "$cmd" /dev/null >pty.out </dev/null
}

@test "progress: on a terminal a zeroing line with bytes, rate and time left, cleared at the end" {
	truncate -s 400M img
	mkfs.fat --invariant -F 32 -S 512 -s 8 img >/dev/null
	on_pty fatprealloc img /big.bin 130M
	# A line per 8 MiB chunk at most ten times a second (the first is
	# always drawn), then the clearing sequence as the last bytes on the
	# terminal.
	grep -aqE $'\rfatprealloc: zeroing 8.0 MiB of 130.0 MiB \\(6%\\), [0-9.]+ [KMGT]?i?B/s(, [0-9]+ s left)?\e\\[K' pty.out
	[ "$(tail -c 4 pty.out | od -An -c | tr -s ' ')" = " \r 033 [ K" ]
	[ "$(mtype -i img ::/big.bin | tr -d '\0' | wc -c)" -eq 0 ]
	fsck_clean img
	# --no-progress: nothing on the terminal.
	on_pty fatprealloc --no-progress img /big2.bin 80M
	[ ! -s pty.out ]
	# --progress off a terminal: a line per tenth, none are escapes.
	run -0 --separate-stderr fatprealloc --progress img /big3.bin 1M
	[ "${stderr_lines[-1]}" = "fatprealloc: zeroing 100%" ]
	# Default off a terminal: silent.
	run -0 --separate-stderr fatprealloc img /big4.bin 80M
	[ -z "$stderr" ]
}

@test "progress: --progress and --no-progress are accepted by every program" {
	mkimg fat16 16M img
	populate img
	local p
	for p in "${PROGS[@]}"; do
		args "$p" --no-progress img
		run -0 --separate-stderr "$p" "${ARGS[@]}"
		[ -z "$stderr" ]
		args "$p" --progress img
		run -0 "$p" "${ARGS[@]}"
	done
	# fatls on a terminal with its listing piped: the listing is unchanged
	# and whatever line was shown is cleared.
	on_pty sh -c 'fatls -R --progress img / | cat >listing'
	[ "$(cat listing)" = "$(fatls -R img /)" ]
}
