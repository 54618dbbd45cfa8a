#!/usr/bin/env bats
# scripts.bats: what a shell script preparing cards relies on: the
# out-of-space line in bytes for the whole run, a PATH without a SIZE
# named, one JSON document on stdout also when a run fails, --wait for
# the image lock, fatcheck -q.  Judged by mdir, fsck.fat, python's json
# module and sha256 of whole images.

load helpers/common

PROGS=(fatls fatprealloc fatcheck)

teardown()
{
	release_held
}

# rpi FILE: a Raspberry Pi style card image: MBR, partition 1 FAT16 at
# 4 MiB (32 MiB), partition 2 ext4 at 36 MiB (8 MiB).
rpi()
{
	local file=$1
	truncate -s 44M "$file"
	printf 'label: dos\nstart=8192, size=65536, type=c\nstart=73728, type=83\n' |
		sfdisk -q --no-reread --no-tell-kernel "$file"
	mkfs.fat -F 16 -S 512 -s 4 -h 8192 --offset 8192 "$file" 32768 >/dev/null
	truncate -s 8M p2.ext4
	mkfs.ext4 -q -F p2.ext4 >/dev/null 2>&1
	dd if=p2.ext4 of="$file" bs=512 seek=73728 conv=notrunc status=none
	rm -f p2.ext4
}

# hold IMAGE: another process holds an exclusive flock on IMAGE until
# teardown (or until "kill $HOLDER").
hold()
{
	flock -x "$1" sleep 60 &
	HOLDER=$!
	for _ in $(seq 100); do
		flock -n "$1" true || return 0
		sleep 0.05
	done
	return 1
}

@test "out of space: the line gives what the whole run needs and what is free, in bytes, and the requests that do not fit" {
	local t
	for t in fat32 exfat; do
		rm -f img
		if [[ $t == exfat ]]; then
			truncate -s 64M img
			mkfs.exfat img >/dev/null
		else
			mkimg fat32 64M img
		fi
		local before
		before=$(img_sha img)
		run -1 --separate-stderr fatprealloc img /a 20M /b 30M /c 20M /d 1M /e 40M
		# 111 MiB asked; /a, /b fit; /c and /e do not; /d still fits
		[[ $stderr =~ ^"fatprealloc: img: No space left on device: the run needs 111.0 MiB, "[0-9.]+" MiB is free (/c and 1 more do not fit)"$ ]]
		[[ $stderr != *cluster* ]]
		[ "$(img_sha img)" = "$before" ]
		run -1 --separate-stderr fatprealloc img /a 30M /b 30M /c 30M
		[[ $stderr =~ "the run needs 90.0 MiB, "[0-9.]+" MiB is free (/c does not fit)"$ ]]
		# -v adds the clusters
		run -1 --separate-stderr fatprealloc -v img /a 30M /b 30M /c 30M
		[[ $stderr =~ "(/c does not fit); "[0-9]+" clusters of "[0-9]+" bytes needed, "[0-9]+" free"$ ]]
		[ "$(img_sha img)" = "$before" ]
	done
}

@test "out of space: a need just over what is free never reads as equal to it" {
	mkimg fat32 64M img
	local free
	free=$(fatls --json --info img | "$FK_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["volume"]["free_bytes"])')
	run -1 --separate-stderr fatprealloc img /a "$((free + 1))"
	[[ $stderr =~ "the run needs "([0-9.]+)" MiB, "([0-9.]+)" MiB is free" ]]
	[ "${BASH_REMATCH[1]}" != "${BASH_REMATCH[2]}" ]
}

@test "out of space counts the directories -p would create" {
	mkimg fat16 16M img
	local free
	free=$(fatls --json --info img | "$FK_PYTHON" -c 'import json,sys; v=json.load(sys.stdin)["volume"]; print(v["free_clusters"]*v["cluster_size"])')
	# exactly the free space for the file, plus one cluster for /D
	run -1 --separate-stderr fatprealloc -p img /D/f "$free"
	[[ $stderr == "fatprealloc: img: No space left on device: the run needs "*" (/D/f does not fit)" ]]
	run fatprealloc img /f "$free"
	fsck_clean img
}

@test "a PATH without a SIZE is named (usage error)" {
	mkimg fat16 16M img
	local before
	before=$(img_sha img)
	run -2 --separate-stderr fatprealloc img /a
	[ "$stderr" = "fatprealloc: no SIZE after PATH '/a' (try 'fatprealloc --help')" ]
	run -2 --separate-stderr fatprealloc img /a 1M /b
	[ "$stderr" = "fatprealloc: no SIZE after PATH '/b' (try 'fatprealloc --help')" ]
	# an empty variable in the middle: the PATH before the next PATH
	run -2 --separate-stderr fatprealloc img /a /b 1M
	[ "$stderr" = "fatprealloc: no SIZE after PATH '/a' (try 'fatprealloc --help')" ]
	run -2 --separate-stderr fatprealloc img
	[ "$stderr" = "fatprealloc: expected IMAGE PATH SIZE [PATH SIZE]... (try 'fatprealloc --help')" ]
	[ "$(img_sha img)" = "$before" ]
}

# json_error STATUS CODE: $output is one JSON document whose error has
# exit status STATUS and code CODE, and its message is the stderr line.
json_error()
{
	"$FK_PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
e = d["error"]
assert e["exit_status"] == int(sys.argv[2]), d
assert e["code"] == sys.argv[3], d
assert sys.argv[4] == sys.argv[5] + ": " + e["message"], (sys.argv[4], e)
' "$output" "$1" "$2" "$stderr" "$3"
}

@test "--json: a failed run still prints one JSON document with the error, on every program" {
	mkimg fat16 16M img
	local p
	for p in "${PROGS[@]}"; do
		local code=1 usage=2
		[[ $p == fatcheck ]] && code=8 usage=16
		set -- nosuch.img
		[[ $p == fatprealloc ]] && set -- nosuch.img /a 1K
		run "-$code" --separate-stderr "$p" --json "$@"
		json_error "$code" ENOENT "$p"
		run "-$usage" --separate-stderr "$p" --json --no-such-option img
		json_error "$usage" usage "$p"
	done
	run -1 --separate-stderr fatprealloc --json img /a 1G
	json_error 1 EFBIG fatprealloc || json_error 1 ENOSPC fatprealloc
	run -1 --separate-stderr fatprealloc --json img /a 15M /b 15M
	json_error 1 ENOSPC fatprealloc
	# fatls had begun its document: the error goes inside it
	run -1 --separate-stderr fatls --json img /nosuch
	json_error 1 ENOENT fatls
	"$FK_PYTHON" -c 'import json,sys; assert json.loads(sys.argv[1])["entries"] == []' "$output"
	# a usage error before --json was seen by getopt still gives JSON
	run -2 --separate-stderr fatprealloc --bogus --json img /a 1K
	json_error 2 usage fatprealloc
	# success: the ordinary document, no error member
	run -0 --separate-stderr fatprealloc --json img /a 1K
	"$FK_PYTHON" -c 'import json,sys; d = json.loads(sys.argv[1]); assert "error" not in d' "$output"
}

@test "--json: a held lock is an error object with EBUSY" {
	mkimg fat16 16M img
	hold img
	local p code
	for p in fatprealloc fatcheck; do
		code=1
		[[ $p == fatcheck ]] && code=8
		case $p in
		fatprealloc) set -- img /x 1K ;;
		fatcheck) set -- -r img ;;
		esac
		run "-$code" --separate-stderr "$p" --json "$@"
		json_error "$code" EBUSY "$p"
	done
}

@test "--wait waits for the image lock, --wait=SECONDS gives up after that long" {
	mkimg fat16 16M img
	hold img
	local before p start end
	before=$(img_sha img)
	for p in "${PROGS[@]}"; do
		local code=1
		[[ $p == fatcheck ]] && code=8
		case $p in
		fatls) set -- img / ;;
		fatcheck) set -- -r img ;;
		fatprealloc) set -- img /x.bin 1K ;;
		esac
		start=$(date +%s%N)
		run "-$code" --separate-stderr "$p" --wait=0.5 "$@"
		end=$(date +%s%N)
		[ "$stderr" = "$p: img: image is in use by process $HOLDER (flock); gave up after waiting 0.5 s" ]
		(( (end - start) / 1000000 >= 450 ))
		(( (end - start) / 1000000 < 5000 ))
	done
	[ "$(img_sha img)" = "$before" ]
	# --wait (no limit): the run goes on once the holder lets go
	(sleep 1; kill "$HOLDER") &
	start=$(date +%s%N)
	run -0 --separate-stderr fatprealloc --wait img /x.bin 1K
	end=$(date +%s%N)
	(( (end - start) / 1000000 >= 800 ))
	mdir -i img ::/X.BIN
	fsck_clean img
	# a bad value is a usage error
	run -2 --separate-stderr fatls --wait=soon img
	[ "$stderr" = "fatls: invalid --wait 'soon' (seconds, such as 10 or 0.5) (try 'fatls --help')" ]
	# --wait=0 fails at once, as flock -w 0
	hold img
	run -8 --separate-stderr fatcheck -r --wait=0 img
	[ "$stderr" = "fatcheck: img: image is in use by process $HOLDER (flock)" ]
}

@test "fatcheck -q prints only findings of error severity: no warning, note or summary" {
	mkimg fat32 64M img
	# a warning alone: -q prints nothing, exit 0
	"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img media
	run -0 --separate-stderr fatcheck img
	[[ $output == "warning: img: FAT[0] is "* ]]
	run -0 --separate-stderr fatcheck -q img
	[ -z "$output" ] && [ -z "$stderr" ]
	run -0 --separate-stderr fatcheck --quiet -v img
	[ -z "$output" ]
	# add errors: only they are printed, exit as without -q
	"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img lost
	run -4 --separate-stderr fatcheck -q img
	[ "${#lines[@]}" -eq 1 ]
	[[ ${lines[0]} == "error: img: "*" lost clusters"* ]]
	# with -r the errors are printed with their repair, nothing else
	run -1 --separate-stderr fatcheck -q -r img
	[ "${#lines[@]}" -eq 1 ]
	[[ ${lines[0]} == "error: img: "*"(repair: freed)" ]]
	run -0 --separate-stderr fatcheck -q img
	[ -z "$output" ]
	fsck.fat -n img
	# --json is unchanged by -q: a warning is still in it
	"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img media
	run -0 --separate-stderr fatcheck -q --json img
	"$FK_PYTHON" -c 'import json,sys; d = json.loads(sys.argv[1]); assert [f["severity"] for f in d["findings"]] == ["warning"], d' "$output"
	# an operational error is still printed
	run -8 --separate-stderr fatcheck -q nosuch.img
	[ "$stderr" = "fatcheck: nosuch.img: No such file or directory" ]
}

@test "a mounted other partition of the same image (losetup -o) does not block writes to the FAT partition; one over the FAT partition does" {
	[ "$(id -u)" -eq 0 ] || skip "needs root for losetup and mount"
	rpi sd.img
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
	LOOPDEV=$(losetup -f --show -o $((73728 * 512)) --sizelimit $((8 << 20)) sd.img 2>/dev/null) ||
		skip "no loop devices"
	mount -o ro "$LOOPDEV" "$MNT" 2>/dev/null || skip "cannot mount ext4"
	# partition 2 is mounted: partition 1 is written all the same
	run -0 --separate-stderr fatprealloc sd.img /boot.bin 1M
	run -0 --separate-stderr fatprealloc -P 1 sd.img /cfg.txt 10K
	run -0 --separate-stderr fatprealloc sd.img@@4M /x.bin 2K
	run -0 --separate-stderr fatcheck -r -P 1 sd.img
	mdir -i sd.img@@4M ::/BOOT.BIN ::/CFG.TXT ::/X.BIN
	dd if=sd.img of=p1.img bs=1M skip=4 count=32 status=none
	fsck_clean p1.img
	umount "$MNT"
	losetup -d "$LOOPDEV"
	# the other way round: ext4 first, FAT after it.  A loop device on
	# partition 1 without --sizelimit reaches to the end of the image,
	# over the FAT partition: refused; with the size limit it is not.
	truncate -s 44M sd2.img
	printf 'label: dos\nstart=8192, size=16384, type=83\nstart=24576, size=65536, type=c\n' |
		sfdisk -q --no-reread --no-tell-kernel sd2.img
	mkfs.fat -F 16 -S 512 -s 4 -h 24576 --offset 24576 sd2.img 32768 >/dev/null
	truncate -s 8M p1.ext4
	mkfs.ext4 -q -F p1.ext4 >/dev/null 2>&1
	dd if=p1.ext4 of=sd2.img bs=512 seek=8192 conv=notrunc status=none
	LOOPDEV=$(losetup -f --show -o $((8192 * 512)) sd2.img) || skip "no loop devices"
	mount -o ro "$LOOPDEV" "$MNT"
	local before
	before=$(img_sha sd2.img)
	run -1 --separate-stderr fatprealloc sd2.img /y.bin 1K
	[ "$stderr" = "fatprealloc: sd2.img: image is mounted on $MNT via $LOOPDEV; refusing to write (use --force)" ]
	run -8 --separate-stderr fatcheck -r -P 2 sd2.img
	[ "$stderr" = "fatcheck: sd2.img: image is mounted on $MNT via $LOOPDEV; refusing to write (use --force)" ]
	[ "$(img_sha sd2.img)" = "$before" ]
	# readers are not concerned
	run -0 fatls sd2.img /
	umount "$MNT"
	losetup -d "$LOOPDEV"
	LOOPDEV=$(losetup -f --show -o $((8192 * 512)) --sizelimit $((8 << 20)) sd2.img) ||
		skip "no loop devices"
	mount -o ro "$LOOPDEV" "$MNT"
	run -0 --separate-stderr fatprealloc sd2.img /y.bin 1K
	mdir -i sd2.img@@12M ::/Y.BIN
}

@test "exFAT --lazy: with --no-zero a usage error; -v says ValidDataLength was kept (exfatref.py agrees)" {
	truncate -s 64M img
	mkfs.exfat img >/dev/null
	local before
	before=$(img_sha img)
	run -2 --separate-stderr fatprealloc --lazy --no-zero img /a 1M
	[ "$stderr" = "fatprealloc: --lazy cannot be combined with --no-zero (--lazy keeps ValidDataLength, --no-zero raises it without zeroing) (try 'fatprealloc --help')" ]
	[ "$(img_sha img)" = "$before" ]
	run -0 fatprealloc img /b 10K
	run -0 --separate-stderr fatprealloc -v --lazy img /a 1M /b 1M
	[ "${lines[0]}" = "created /a: size 0 -> 1048576, 256 new clusters, 1 fragment" ]
	[ "${lines[1]}" = "  ValidDataLength kept at 0 (bytes past it read as zeros)" ]
	[[ ${lines[2]} == "grown /b: size 10240 -> 1048576, 253 new clusters, "* ]]
	[ "${lines[3]}" = "  ValidDataLength kept at 10240 (bytes past it read as zeros)" ]
	[[ $("$FK_PYTHON" "$FATKIT_HELPERS/exfatref.py" ls img /b) == *$'\tvdl=10240\t'* ]]
	run -0 --separate-stderr fatprealloc -v --dry-run --lazy img /c 1M
	[ "${lines[1]}" = "  ValidDataLength would be kept at 0 (bytes past it read as zeros)" ]
	# without --lazy: no such line
	run -0 --separate-stderr fatprealloc -v img /d 1M
	[ "${#lines[@]}" -eq 1 ]
	fsck.exfat -n img
}

@test "a truncated card dump: fatls lists what it holds and names each file past its end; fatcheck reports it as an error; writers refuse it, image unchanged" {
	local fam want got before
	for fam in fat16 exfat; do
		rm -f img whole
		truncate -s 64M img
		if [[ $fam == exfat ]]; then
			mkfs.exfat img >/dev/null
		else
			mkfs.fat -F 16 -s 8 img >/dev/null
		fi
		run -0 fatprealloc --no-zero img /a 10M /b 10M /c 30M /d 5K
		cp img whole
		truncate -s 32M img
		before=$(img_sha img)
		run -1 --separate-stderr fatls img
		# the names the whole image holds, listed all the same
		if [[ $fam == exfat ]]; then
			want=$("$FK_PYTHON" "$FATKIT_HELPERS/exfatref.py" ls whole / | sed 's/.*path=\///' | sort)
		else
			want=$(mdir -b -i whole :: | sed 's|^::/||' | sort)
			# mdir reads the cut image too, and agrees
			[ "$(mdir -b -i img :: | sed 's|^::/||' | sort)" = "$want" ]
		fi
		[ "$(sort <<<"$output")" = "$(tr 'A-Z' 'a-z' <<<"$want")" ]
		[ "${stderr_lines[0]}" = "fatls: img: image is truncated: the volume needs 67108864 bytes, the image has 33554432; files past its end are named" ]
		# /c straddles the end, /d lies past it; /a and /b are whole
		[[ ${stderr_lines[1]} == "fatls: img:/c: reaches past the end of the truncated image (it holds "*" of its 31457280 allocated bytes)" ]]
		[ "${stderr_lines[2]}" = "fatls: img:/d: reaches past the end of the truncated image (it holds 0 of its 8192 allocated bytes)" ]
		[ "${#stderr_lines[@]}" -eq 3 ]
		# a file that lies wholly inside: exit 0
		run -0 --separate-stderr fatls img /a
		# fatcheck: one error, exit 4; -r refuses (8); nothing written
		run -4 --separate-stderr fatcheck img
		[ "${lines[0]}" = "error: img: image is truncated: the volume needs 67108864 bytes, the image has 33554432; nothing past its end can be checked or repaired" ]
		run -8 --separate-stderr fatcheck -r img
		[ "$stderr" = "fatcheck: img: image is truncated: the volume needs 67108864 bytes, the image has 33554432" ]
		run -1 --separate-stderr fatprealloc img /e 1K
		[ "$stderr" = "fatprealloc: img: image is truncated: the volume needs 67108864 bytes, the image has 33554432" ]
		[ "$(img_sha img)" = "$before" ]
	done
}

@test "name rules say exFAT on exFAT, FAT on FAT; -v names each file as the volume stores it, not as typed" {
	truncate -s 64M ex.img
	mkfs.exfat ex.img >/dev/null
	mkimg fat16 16M fat.img
	local before
	before=$(img_sha ex.img)
	run -1 --separate-stderr fatprealloc ex.img /a:b 1K
	[ "$stderr" = "fatprealloc: ex.img:/a:b: ':' is not allowed in exFAT names" ]
	run -1 --separate-stderr fatprealloc ex.img /trail. 1K
	[ "$stderr" = "fatprealloc: ex.img:/trail.: exFAT names cannot end with a dot" ]
	run -1 --separate-stderr fatls ex.img '/a*b'
	[ "$stderr" = "fatls: ex.img:/a*b: '*' is not allowed in exFAT names" ]
	[ "$(img_sha ex.img)" = "$before" ]
	run -1 --separate-stderr fatprealloc fat.img /a:b 1K
	[ "$stderr" = "fatprealloc: fat.img:/a:b: ':' is not allowed in FAT names" ]
	# usage errors still come before the image is opened
	run -2 --separate-stderr fatprealloc nosuch.img a 1K
	[ "$stderr" = "fatprealloc: path 'a' is not absolute (try 'fatprealloc --help')" ]
	# -v: the stored spelling of every component
	run -0 fatprealloc -p ex.img '/DCIM/Résumé.TXT' 1K
	run -0 --separate-stderr fatprealloc -v ex.img '/dcim/RÉSUMÉ.txt' 2K /dcim/new.bin 1K
	[ "${lines[0]}" = "grown /DCIM/Résumé.TXT: size 1024 -> 2048, 0 new clusters, 1 fragment" ]
	[ "${lines[1]}" = "created /DCIM/new.bin: size 0 -> 1024, 1 new cluster, 1 fragment" ]
	run -0 fatprealloc -p fat.img '/Dcim/Long Name.Txt' 1K
	run -0 --separate-stderr fatprealloc -v fat.img '/DCIM/LONGNA~1.TXT' 2K
	[[ $output == "grown /Dcim/Long Name.Txt: size 1024 -> 2048, "* ]]
	mdir -i fat.img '::/Dcim/Long Name.Txt'
	fsck.exfat -n ex.img
	fsck_clean fat.img
}

@test "--json: fatcheck --salvage refused on exFAT is a JSON error too (exit 16)" {
	truncate -s 64M img
	mkfs.exfat img >/dev/null
	run -16 --separate-stderr fatcheck -r --salvage --json img
	json_error 16 EINVAL fatcheck
	[ "$stderr" = "fatcheck: img: --salvage works on FAT12/16/32 only; on exFAT, -r frees lost clusters (run without --salvage)" ]
}
