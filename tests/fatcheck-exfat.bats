#!/usr/bin/env bats
# fatcheck-exfat.bats: fatcheck on exFAT, held to its issue and its man page.
# Images come from mkfs.exfat (exfatprogs) and are populated and damaged by
# helpers/exfatref.py, a reader, writer, checker and corruptor written from
# Microsoft's exFAT specification that shares no code with fatkit. Judges:
# fsck.exfat -n where it sees the damage, `exfatref.py verify` where it does
# not (leaked bitmap bits, PercentInUse, VolumeDirty, ...), and byte
# comparisons of the files the damage did not touch.

load helpers/common

# mkexfat FILE SIZE CLUSTER: a fresh exFAT image file.
mkexfat()
{
	rm -f "$1"
	truncate -s "$2" "$1" && mkfs.exfat -c "$3" -L card "$1" >/dev/null
}

fsck_exfat_clean()
{
	local out
	if ! out=$(timeout 20 fsck.exfat -n "$1" 2>&1); then
		echo "fsck.exfat -n $1 is not clean:" >&2
		echo "$out" | head -20 >&2
		return 1
	fi
}

# populate IMG CS: long Unicode names, a deep tree, fragmented, NoFatChain
# and FAT-chained files, an empty file, ValidDataLength < DataLength, and
# a directory spanning clusters; FILES lists what cat_all compares.
FILES=(/frag.bin /nofat.bin /chained.bin /vdl.bin /empty "/Éé dir/ΣΊΣΥΦΟΣ/name.txt")
populate()
{
	local img=$1 cs=$2 i
	{
		echo "put /frag.bin --size $((3 * cs + 100)) --fragmented"
		echo "put /nofat.bin --size $((5 * cs)) --nofatchain --pattern 0x42"
		echo "put /chained.bin --size $((2 * cs + 5)) --fatchain"
		echo "put /empty --size 0"
		echo "put /vdl.bin --size $((3 * cs)) --vdl 1000"
		echo "put '/Éé dir/ΣΊΣΥΦΟΣ/name.txt' --size 777"
		echo "put '/$("$FK_PYTHON" -c 'print(("Ωμέγα-ünï-名前-" * 30)[:200])')' --size 100"
		echo "put '$(printf '/lvl%d' $(seq 1 12))/deep.txt' --size 300"
		for i in $(seq 1 40); do echo "put '/many/file $i.txt' --size 10"; done
	} | ref batch "$img"
}

# sums IMG: one line per file of FILES: its SHA-256 as exfatref reads it
# (one interpreter for all of them: `exfatref.py cat` with the file
# redirected into a hash).
sums()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$1" "${FILES[@]}" <<'PY'
import hashlib, io, sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2])
for path in sys.argv[3:]:
    buf = io.BytesIO()
    real = sys.stdout
    sys.stdout = io.TextIOWrapper(buf)
    try:
        r.cmd_cat(v, path)
        sys.stdout.flush()
        digest = hashlib.sha256(buf.getvalue()).hexdigest()
    except r.Fatal as ex:
        digest = "unreadable: %s" % ex
    finally:
        sys.stdout = real
    print(digest, path)
PY
}

setup_file()
{
	cd "$BATS_FILE_TMPDIR" || return 1
	mkexfat base.img 32M 4096 && populate base.img 4096 &&
		sums base.img >base.sums
}

use()
{
	cp "$BATS_FILE_TMPDIR/base.img" img && cp "$BATS_FILE_TMPDIR/base.sums" img.sums
}

# ---- clean volumes ----------------------------------------------------------

@test "fatcheck exFAT: clean mkfs.exfat images, 512 B to 1 MiB clusters, populated, exit 0 and -r writes nothing" {
	local cs size sum
	for cs in 512:8M 4096:32M 32768:64M 1048576:256M; do
		size=${cs#*:} cs=${cs%:*}
		mkexfat c.img "$size" "$cs"
		run -0 fatcheck c.img
		assert_output --partial "c.img: exFAT, "
		populate c.img "$cs"
		ref verify c.img
		run -0 fatcheck c.img
		refute_output --partial "error:"
		sum=$(sha256sum <c.img)
		run -0 fatcheck -r c.img
		[ "$(sha256sum <c.img)" = "$sum" ]
	done
}

@test "fatcheck exFAT: a volume in an MBR partition is found by itself and with -P 1 and @@1M" {
	truncate -s 34M d.img
	printf 'label: dos\nstart=2048, type=7\n' |
		sfdisk --no-reread --no-tell-kernel --label dos d.img >/dev/null 2>&1
	mkexfat p.img 33M 4096
	populate p.img 4096
	dd if=p.img of=d.img bs=1M seek=1 conv=notrunc,sparse status=none
	run -0 fatcheck d.img
	run -0 fatcheck -P 1 d.img
	run -0 fatcheck d.img@@1M
	ref corrupt d.img@@1M bitmap-leak
	run -4 fatcheck d.img
	assert_output --partial "error: d.img: 3 clusters marked in the allocation bitmap are owned by nothing"
	run -1 fatcheck -r -P 1 d.img
	run -0 ref verify -W d.img@@1M
	run -0 fatcheck d.img
}

@test "fatcheck exFAT: 4096-byte sectors (losetup -b 4096): clean, then damage found and mended" {
	local dev c
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
	populate s4k.img 32768
	run -0 fatcheck s4k.img
	cp s4k.img s4k.base
	for c in boot-checksum backup-differs sector-shift cross-link bitmap-leak name-hash; do
		cp s4k.base s4k.img
		ref corrupt s4k.img "$c" >/dev/null
		run -4 fatcheck s4k.img
		run -1 fatcheck -r s4k.img
		run -0 fatcheck s4k.img
		run -0 ref verify -W s4k.img
		fsck_exfat_clean s4k.img
	done
}

# ---- every corruption case ------------------------------------------------

# corruption_cases CS SIZE: for every case of the corruptor (but the valid
# volumes among them, which corrupt-exfat.bats holds to "clean"), on a populated
# volume: fatcheck flags it (exit 4, or a warning for the warning cases);
# fatcheck -r mends it, after which fsck.exfat -n and exfatref verify -W are
# clean, the files the damage did not touch read back the same, and a second
# fatcheck exits 0.
corruption_cases()
{
	local cs=$1 size=$2 name fsck warn out frc failed=0
	mkexfat cb.img "$size" "$cs"
	populate cb.img "$cs"
	sums cb.img >cb.sums
	while read -r name fsck warn _; do
		cp cb.img c.img
		ref corrupt c.img "$name" >/dev/null
		frc=0
		out=$(timeout 20 fatcheck c.img 2>&1) || frc=$?
		if [ "$warn" = warn=1 ]; then
			[[ $frc -eq 0 && $out == *"warning: "* ]] ||
				{ echo "$name: no warning (exit $frc): $out"; failed=1; }
		else
			[[ $frc -eq 4 && $out == *"error: "* ]] ||
				{ echo "$name: not flagged (exit $frc): $out"; failed=1; continue; }
		fi
		# The judges agree that there is damage.
		if [ "$fsck" = fsck=yes ]; then
			timeout 20 fsck.exfat -n c.img >/dev/null 2>&1 &&
				{ echo "$name: fsck.exfat -n sees no damage"; failed=1; }
		else
			ref verify -W c.img >/dev/null &&
				{ echo "$name: exfatref verify sees no damage"; failed=1; }
		fi
		frc=0
		out=$(timeout 20 fatcheck -r c.img 2>&1) || frc=$?
		if [[ $frc -ne 1 && ! ($warn == warn=1 && $frc -eq 0) ]]; then
			echo "$name: fatcheck -r exits $frc: $out"
			failed=1
			continue
		fi
		fsck_exfat_clean c.img || { echo "$name: fsck.exfat after -r"; failed=1; }
		out=$(ref verify -W c.img) || { echo "$name: verify after -r: $out"; failed=1; }
		sums c.img | diff - cb.sums >/dev/null ||
			{ echo "$name: files changed"; sums c.img | diff - cb.sums; failed=1; }
		out=$(timeout 20 fatcheck c.img 2>&1) ||
			{ echo "$name: second fatcheck: $out"; failed=1; }
	done < <(ref corrupt --list | grep -E "${CASES:-.}" | grep -v ' valid=1 ' |
		sed 's/ warn=1/ warn=1/; t; s/^\([^ ]* [^ ]*\)/\1 warn=0/')
	return "$failed"
}

@test "fatcheck exFAT: every corruption case is flagged and -r mends it (4 KiB clusters)" {
	corruption_cases 4096 16M
}

@test "fatcheck exFAT: the chain and bitmap corruption cases on 32 KiB clusters" {
	CASES='^(chain-|cross-link|first-cluster|nofatchain|bitmap-|directory-loop|secondary-count|name-length)'
	corruption_cases 32768 32M
}

# ---- output -----------------------------------------------------------------

@test "fatcheck exFAT: findings and their repairs, in text and --json" {
	use
	ref corrupt img bitmap-leak
	ref corrupt img volume-dirty
	ref corrupt img set-checksum
	run -4 fatcheck img
	assert_line --partial "warning: img: VolumeDirty is set"
	assert_line --regexp "^error: /corrupt-sum: SetChecksum 0x[0-9A-F]{4}, computed 0x[0-9A-F]{4}$"
	assert_line --partial "img: exFAT, "
	run -4 fatcheck --json img
	"$FK_PYTHON" - "$output" <<'EOF'
import json, sys
d = json.loads(sys.argv[1])
codes = {f["code"]: f for f in d["findings"]}
assert codes["dirty"]["severity"] == "warning", codes
assert codes["lost"]["severity"] == "error"
assert codes["set-checksum"]["path"] == "/corrupt-sum"
assert d["summary"]["fat_type"] == "exFAT", d["summary"]
assert d["summary"]["lost_clusters"] == 3
assert d["summary"]["exit_status"] == 4
EOF
	run -1 fatcheck -r --json img
	"$FK_PYTHON" -c 'import json,sys; d=json.loads(sys.argv[1]); assert all(f["fixed"] for f in d["findings"]), d' "$output"
	run -0 fatcheck img
	run -0 ref verify -W img
	fsck_exfat_clean img
	sums img | diff - img.sums
}

@test "fatcheck exFAT: VolumeDirty alone is one warning, exit 0, as on FAT; with real damage exit 4; -r clears it once" {
	local before
	use
	ref corrupt img volume-dirty
	[ "$(ref info img | sed -n 's/^volume_dirty=//p')" = 1 ]
	before=$(img_sha img)
	run -0 --separate-stderr fatcheck img
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[0]}" = "warning: img: VolumeDirty is set: the volume was not cleanly removed" ]
	[[ ${lines[1]} == *"; 0 errors, 1 warning, 0 notes" ]]
	[ "$(img_sha img)" = "$before" ]
	run -1 fatcheck -r img
	[[ $output == *"; 1 fix applied" ]]
	[ "$(ref info img | sed -n 's/^volume_dirty=//p')" = 0 ]
	fsck_exfat_clean img
	run -0 ref verify -W img
	before=$(img_sha img)
	run -0 fatcheck -r img
	[ "$(img_sha img)" = "$before" ]
	sums img | diff - img.sums
	# The same flag beside real damage: the damage fails the check.
	use
	ref corrupt img volume-dirty
	ref corrupt img cross-link >/dev/null
	run -4 --separate-stderr fatcheck img
	assert_line "warning: img: VolumeDirty is set: the volume was not cleanly removed"
	assert_line --partial "error: "
	run -1 fatcheck -r img
	run -0 fatcheck img
	fsck_exfat_clean img
}

@test "fatcheck exFAT: -v lists every file checked" {
	use
	run -0 fatcheck -v img
	assert_line --regexp "^checked: /nofat.bin \(20480 bytes, 5 clusters\)$"
	assert_line --regexp "^checked: /many/ \(1 cluster\)$"
}

# ---- crash safety -----------------------------------------------------------

# several_faults: ./img with damage that takes every kind of repair write.
# Damaged once per test, then copied: the loops call it at every write
# number, and the six reference-reader runs cost more than the run tested.
several_faults()
{
	if [[ -f several.img ]]; then
		use && cp several.img img
		return
	fi
	use
	ref corrupt img cross-link >/dev/null
	ref corrupt img bitmap-leak >/dev/null
	ref corrupt img bitmap-missing >/dev/null
	ref corrupt img name-hash >/dev/null
	ref corrupt img backup-differs >/dev/null
	ref corrupt img percent-in-use >/dev/null
	cp img several.img
}

@test "fatcheck exFAT -r: a crash after any write, then another -r, leaves fsck.exfat clean and other files intact" {
	local n crashed
	for n in $(seq 1 40); do
		several_faults
		run env FK_CRASH_AFTER_WRITE=$n fatcheck -r img
		# 99: the crash (a -DFK_FAULT_INJECTION build); else it finished
		[[ $status -eq 99 || $status -eq 1 ]]
		crashed=$status
		run fatcheck -r img
		[[ $status -eq 0 || $status -eq 1 ]]
		run -0 fatcheck img
		fsck_exfat_clean img
		run -0 ref verify -W img
		sums img | diff - img.sums
		[ "$crashed" -eq 99 ] || break
	done
}

@test "fatcheck exFAT -r: a failed write is one error line and exit 12; a later -r finishes the job" {
	local n
	for n in 1 2 3 4 5 6 8 10; do
		several_faults
		run --separate-stderr env FK_FAIL_WRITE=$n fatcheck -r img
		if [ "$status" -eq 1 ]; then
			break # not a fault-injection build, or fewer writes
		fi
		[ "$status" -eq 12 ]
		[[ $stderr == "fatcheck: img: Input/output error" ]]
		# 0 when only the last write (VolumeDirty cleared) failed:
		# a warning, which -r still mends
		run fatcheck -r img
		[[ $status -eq 0 || $status -eq 1 ]]
		run -0 fatcheck img
		refute_output --partial "warning:"
		fsck_exfat_clean img
		run -0 ref verify -W img
		sums img | diff - img.sums
	done
}

# The repairs the loops above do not take: a duplicate name renamed,
# damaged entry sets removed (their clusters freed), and the main boot
# region restored from the backup, first alone (the main region does not
# open), then with entry damage (the main region opens, its checksum does
# not match).
FAULT_SETS=("duplicate-name" "name-length secondary-count unknown-critical-secondary"
	"sector-shift" "boot-checksum duplicate-name name-length"
	"name-dot name-dotdot")

# faulty CASES: ./dmg.img is the base image with the corruptor's CASES
# (applied once: the loops copy it), ./ref.img that repaired by one
# uninterrupted -r, ./ref.ls its tree as exfatref lists it.
faulty()
{
	local c
	use
	for c in $1; do
		ref corrupt img "$c" >/dev/null
	done
	mv img dmg.img
	cp dmg.img ref.img
	run -1 fatcheck -r ref.img
	ref ls -R ref.img >ref.ls
}

# repaired_as_ref: ./img is clean to every judge, its untouched files
# read back the same, and its tree is what an uninterrupted -r leaves
# (judged once per distinct image: once_for).
repaired_as_ref()
{
	once_for img img.sums ref.ls -- repaired_judges
}

repaired_judges()
{
	run -0 fatcheck img
	fsck_exfat_clean img
	run -0 ref verify -W img
	sums img | diff - img.sums
	ref ls -R img | diff - ref.ls
}

@test "fatcheck exFAT -r: a crash after any write of a rename, an entry-set removal or a boot region restore, then another -r" {
	local faults n crashed
	for faults in "${FAULT_SETS[@]}"; do
		faulty "$faults"
		for ((n = 1; n <= 40; n++)); do
			cp dmg.img img
			run env FK_CRASH_AFTER_WRITE=$n fatcheck -r img
			[[ $status -eq 99 || $status -eq 1 ]]
			crashed=$status
			((crashed == 99 || n > 1)) || skip "fatcheck built without -DFK_FAULT_INJECTION"
			((crashed == 1)) || echo "# $faults: crash after write $n"
			run fatcheck -r img
			[[ $status -eq 0 || $status -eq 1 ]]
			repaired_as_ref
			((crashed == 99)) || break
		done
		((n > 2))
	done
}

@test "fatcheck exFAT -r: a failed write of a rename, an entry-set removal or a boot region restore is exit 12; a later -r finishes" {
	local faults n
	for faults in "${FAULT_SETS[@]}"; do
		faulty "$faults"
		for ((n = 1; n <= 40; n++)); do
			cp dmg.img img
			run --separate-stderr env FK_FAIL_WRITE=$n fatcheck -r img
			if [ "$status" -eq 1 ]; then
				((n > 1)) || skip "fatcheck built without -DFK_FAULT_INJECTION"
				break
			fi
			echo "# $faults: write $n fails"
			[ "$status" -eq 12 ]
			[[ $stderr == "fatcheck: img: Input/output error" ]]
			run fatcheck -r img
			[[ $status -eq 0 || $status -eq 1 ]]
			repaired_as_ref
		done
		((n > 2))
	done
}

@test "fatcheck exFAT -r: a signal at any repair write lets the repairs finish, exit 128 + N, and says so" {
	local faults n sig again ref_sha
	local -a sigs=(2 15 1)
	for faults in "cross-link bitmap-leak bitmap-missing name-hash percent-in-use" \
		"${FAULT_SETS[@]}"; do
		faulty "$faults"
		ref_sha=$(img_sha ref.img) # ref.img does not change: hashed once
		# and judged once: each run below must leave its bytes
		cp ref.img img
		repaired_as_ref
		for again in "" 1; do
			for ((n = 1; n <= 40; n++)); do
				sig=${sigs[n % 3]}
				cp dmg.img img
				run --separate-stderr env FK_SIGNAL_BEFORE_WRITE=$n \
					FK_SIGNAL=$sig ${again:+FK_SIGNAL_AGAIN=1} fatcheck -r img
				if [ "$status" -eq 1 ]; then
					((n > 1)) || skip "fatcheck built without -DFK_FAULT_INJECTION"
					break
				fi
				echo "# $faults: signal $sig before write $n${again:+, and again}"
				signal_repair_ok "$sig" "$again"
				# All of it done: what an uninterrupted run leaves.
				[ "$(img_sha img)" = "$ref_sha" ]
			done
			((n > 2))
		done
	done
}

# ---- TexFAT: two FATs, two bitmaps ------------------------------------------

@test "fatcheck exFAT on TexFAT: ActiveFat's bitmap is compared and repaired, the stale one left alone" {
	local active other sum
	use
	texfat img convert
	run -0 ref verify -W img
	run -0 fatcheck img
	cp img tex.img
	for active in 0 1; do
		other=$((1 - active))
		echo "# ActiveFat $active"
		cp tex.img img
		((active == 0)) || texfat img active1
		run -0 fatcheck img
		# The inactive bitmap differs: stale by the specification.
		texfat img "leak$other"
		run -0 fatcheck img
		refute_output --partial "error:"
		sum=$(img_sha img)
		run -0 fatcheck -r img
		[ "$(img_sha img)" = "$sum" ]
		# The active one leaks three clusters, and a chain is one too long
		# (the fourth lost cluster once it is cut): mended in
		# the active bitmap and FAT, the inactive ones untouched.
		texfat img "leak$active"
		ref corrupt img chain-too-long >/dev/null
		run -1 ref verify img # exfatref reads the active pair too
		run -4 fatcheck img
		assert_output --partial "4 clusters marked in the allocation bitmap are owned by nothing"
		assert_output --partial "/corrupt-long: cluster chain is longer"
		sum="$(texfat img "bitmap$other") $(texfat img "fat$other")"
		run -1 fatcheck -r img
		run -0 fatcheck img
		run -0 ref verify -W img
		[ "$(texfat img "bitmap$other") $(texfat img "fat$other")" = "$sum" ]
		sums img | diff - img.sums
	done
}

# ---- damage the corruptor has no case for -----------------------------------

# exdamage IMG CASE: damage ./IMG through exfatref's writer objects.
exdamage()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
img, case = sys.argv[2], sys.argv[3]
v = r.Volume(img, write=True)
cs = v.csize
if case == "empty-with-cluster":
    # DataLength 0, FirstCluster and its bitmap bit still set
    e, cl = v.put("/x-empty", cs, b"", vdl=0)
    e.set_stream(dl=0, vdl=0)
    v.rewrite_set(e)
elif case == "nfc-first-zero":
    # a NoFatChain file's FirstCluster 0 (one byte), its length kept
    e, cl = v.put("/x-nfc0", 2 * cs + 7, b"n", chain=False)
    e.set_stream(first=0)
    v.rewrite_set(e)
elif case == "nfc-empty":
    # an empty file (FirstCluster 0, DataLength 0) flagged NoFatChain
    e, cl = v.put("/x-nfce", 0, b"")
    e.set_stream(flags=0x03)
    v.rewrite_set(e)
elif case in ("stream-type", "name-type", "type-unconfirmed"):
    # one bit of a secondary's type byte flipped (0xC0 -> 0x80, 0xC1 ->
    # 0x81): the set is cut short there; unconfirmed: the SetChecksum
    # is off too, so nothing says the type was the only damage
    e, cl = v.put("/x-ty", 3 * cs + 5, b"t" * (3 * cs + 5))
    raw = bytearray(e.raw)
    raw[64 if case == "name-type" else 32] &= 0xBF
    if case == "type-unconfirmed":
        raw[2] ^= 1
    e.dir.write_entries(e.index, bytes(raw))
elif case == "nofat-overlap":
    # a NoFatChain file whose run starts inside another file's
    a, acl = v.put("/x-a", 3 * cs, b"", vdl=0, chain=False)
    b, bcl = v.put("/x-b", 2 * cs, b"", vdl=0, chain=False)
    b.set_stream(first=acl[1])
    v.rewrite_set(b)
elif case == "nfc-huge":
    # a NoFatChain file whose DataLength is 2^64-1, then a directory with
    # a child in the clusters after it
    e, cl = v.put("/x-nfc", cs, b"", vdl=0, chain=False)
    v.put("/x-d/child", 100, b"c" * 100)
    e.set_stream(dl=2**64 - 1)
    v.rewrite_set(e)
elif case == "dir-len-huge":
    # a NoFatChain directory whose DataLength gained a high byte (its
    # ValidDataLength still says one cluster), before a file's clusters
    v.put("/x-d/child", 100, b"c" * 100)
    v.put("/x-after", 2 * cs, b"a" * (2 * cs))
    _, e, _ = v.resolve("/x-d")
    e.set_stream(dl=cs | (0xFF << 32))
    v.rewrite_set(e)
elif case == "dir-len-grown":
    # the same directory, DataLength grown to four clusters (a directory
    # length still): ValidDataLength still says one
    v.put("/x-d/child", 100, b"c" * 100)
    v.put("/x-after", 2 * cs, b"a" * (2 * cs))
    _, e, _ = v.resolve("/x-d")
    e.set_stream(dl=4 * cs)
    v.rewrite_set(e)
elif case == "hidden-set":
    # an end marker where /x-a's set was: /x-h's set lies past it
    a, acl = v.put("/x-a", cs, b"", vdl=0)
    v.put("/x-h", 2 * cs, b"h" * cs)
    a.dir.write_entries(a.index, bytes(len(a.raw)))
elif case == "critical-primary-alloc":
    # an unknown critical primary (type 86h) with a one-cluster
    # allocation through the generic primary template
    cl = v.alloc_run(1)
    v.claim(cl, False)
    e = bytearray(32)
    e[0], e[4] = 0x86, 3
    r.put_le(e, 20, 4, cl[0])
    r.put_le(e, 24, 8, cs)
    r.put_le(e, 2, 2, r.set_checksum(e))
    root = v.root_dir()
    root.write_entries(root.free_slot(1), bytes(e))
elif case == "critical-secondary-alloc":
    # a file of two clusters whose set holds an unknown critical
    # secondary (DFh)
    cl = v.alloc_run(2)
    v.claim(cl, False)
    raw = v.build_set("x-crit", r.ATTR_ARCHIVE, cl[0], 2 * cs, 2 * cs,
                      True, extra=bytes([0xDF]) + bytes(31))
    v.add_set(v.root_dir(), raw)
elif case == "truncated-set":
    # /x-t's SecondaryCount says 3 but /x-u's File entry follows its
    # name: the set is cut short, its two clusters owned by nothing known
    t, _ = v.put("/x-t", 2 * cs, b"", vdl=0)
    v.put("/x-u", 10, b"u")
    t.raw[1] = 3
    v.rewrite_set(t)
elif case == "fat-reserved":
    v.fat_set(0, 0x12345678)
    v.fat_set(1, 0)
elif case == "bitmap-unused-bad-chain":
    # the bitmap entry marked unused (0x01), its first cluster marked bad
    # in the FAT: nothing left to restore it from
    i, e = v.special(r.T_BITMAP)[0]
    first = r.le(e, 20, 4)
    root = v.root_dir()
    root.write_entries(i, bytes([e[0] & 0x7f]) + bytes(e[1:]))
    v.fat_set(first, 0xFFFFFFF7)
elif case == "bitmap-twice":
    # a second allocation bitmap entry (BitmapFlags 0) on a one-FAT
    # volume, naming the same clusters as the first
    raw = next(bytes(e) for _, e in v.special(r.T_BITMAP))
    root = v.root_dir()
    root.write_entries(root.free_slot(1), raw)
v.flush()
v.f.close()
PY
}

@test "fatcheck exFAT: clusters under an empty file, overlapping NoFatChain runs, FAT[0] and FAT[1], a second bitmap entry, NoFatChain without clusters" {
	local c sum
	for c in empty-with-cluster nofat-overlap fat-reserved bitmap-twice nfc-first-zero nfc-empty; do
		use
		exdamage img "$c"
		run -4 fatcheck img
		# NoFatChain on a stream without clusters: fsck.exfat's "empty,
		# but has no Fat chain", left behind by a file made empty
		[[ $c != nfc-first-zero ]] ||
			assert_line "error: /x-nfc0: first cluster 0 with a non-zero length (8199 bytes)"
		[[ $c != nfc-empty ]] ||
			assert_line "error: /x-nfce: NoFatChain set on a file without clusters"
		[[ $c != empty-with-cluster ]] ||
			assert_line --regexp "^error: /x-empty: DataLength is 0 but FirstCluster is [0-9]+$"
		[[ $c != nofat-overlap ]] ||
			assert_line --regexp "^error: /x-a: DataLength 12288 reaches past the file's own contiguous clusters: cluster [0-9]+ is owned by another file or directory$"
		[[ $c != fat-reserved ]] ||
			assert_line "error: img: FatEntry[1] is 0x00000000, not 0xFFFFFFFF"
		# one FAT: the first entry is the bitmap (as Linux reads it)
		[[ $c != bitmap-twice ]] ||
			assert_output "error: img: a second allocation bitmap entry
img: exFAT, 48 files, 15 directories, 77/7680 clusters used; 1 error, 0 warnings, 0 notes"
		run -1 fatcheck -r img
		[[ $c != nfc-empty ]] ||
			assert_line "error: /x-nfce: NoFatChain set on a file without clusters (repair: NoFatChain cleared)"
		run -0 fatcheck img
		fsck_exfat_clean img
		run -0 ref verify -W img
		sums img | diff - img.sums
		sum=$(img_sha img)
		run -0 fatcheck -r img
		[ "$(img_sha img)" = "$sum" ]
	done
}

@test "fatcheck exFAT -r: a set cut short by one type byte that the SetChecksum confirms keeps its file, type restored" {
	local c sum
	for c in stream-type name-type type-unconfirmed; do
		use
		exdamage img "$c"
		run -4 fatcheck img
		case $c in
		stream-type)
			assert_line "error: /x-ty: entry 1 of the set has type 0x80, where 0xC0 makes the SetChecksum verify" ;;
		name-type)
			assert_line "error: /x-ty: entry 2 of the set has type 0x81, where 0xC1 makes the SetChecksum verify" ;;
		type-unconfirmed)
			assert_line "error: /?: damaged entry set: entry set is cut short (SecondaryCount says more)" ;;
		esac
		run fatcheck -r img
		if [[ $c == type-unconfirmed ]]; then
			# the clusters of a set removed as cut short are kept
			((status == 4))
			run -2 ref cat img /x-ty
			continue
		fi
		((status == 1))
		assert_line --partial "makes the SetChecksum verify (repair: type restored)"
		run -0 fatcheck img
		fsck_exfat_clean img
		run -0 ref verify -W img
		[ "$(ref cat img /x-ty | tr -d t | wc -c)" -eq 0 ]
		[ "$(ref cat img /x-ty | wc -c)" -eq $((3 * 4096 + 5)) ]
		sums img | diff - img.sums
		sum=$(img_sha img)
		run -0 fatcheck -r img
		[ "$(img_sha img)" = "$sum" ]
	done
}

@test "fatcheck exFAT -r: a crash or a failed write at any write of a type restored or NoFatChain cleared, then another -r, keeps /x-ty" {
	local c n crashed
	for c in stream-type nfc-empty; do
		use
		exdamage img "$c"
		mv img dmg.img
		for ((n = 1; n <= 20; n++)); do
			cp dmg.img img
			run env FK_CRASH_AFTER_WRITE=$n fatcheck -r img
			[[ $status -eq 99 || $status -eq 1 ]]
			crashed=$status
			((crashed == 99 || n > 1)) || skip "fatcheck built without -DFK_FAULT_INJECTION"
			run fatcheck -r img
			[[ $status -eq 0 || $status -eq 1 ]]
			run -0 fatcheck img
			fsck_exfat_clean img
			run -0 ref verify -W img
			sums img | diff - img.sums
			[[ $c != stream-type ]] ||
				[ "$(ref cat img /x-ty | wc -c)" -eq $((3 * 4096 + 5)) ]
			cp dmg.img img
			run --separate-stderr env FK_FAIL_WRITE=$n fatcheck -r img
			[[ $status -eq 12 || $status -eq 1 ]]
			run fatcheck -r img
			[[ $status -eq 0 || $status -eq 1 ]]
			run -0 fatcheck img
			((crashed == 99)) || break
		done
		((n > 1))
	done
}

@test "fatcheck exFAT: a bitmap entry marked unused whose chain is broken is restored with its contiguous run, which readers use; -r converges" {
	use
	exdamage img bitmap-unused-bad-chain
	run -4 fatcheck img
	assert_line "error: img: the allocation bitmap entry is marked unused"
	run -1 fatcheck -r img
	assert_line "error: img: the allocation bitmap entry is marked unused (repair: entry restored)"
	assert_output --partial "(repair: chain rewritten as the run)"
	run -0 fatcheck -r img
	fsck_exfat_clean img
	run -0 ref verify -W img
	sums img | diff - img.sums
}

@test "fatcheck exFAT: two names whose 64-bit hashes collide are not duplicates; -r changes nothing" {
	local a b sum
	# The duplicate finder's hash (name_key in src/exfat/check-exfat.c, mirrored
	# here) mixes four up-cased units at a time with invertible steps: two
	# 8-unit names whose first halves differ get second halves that cancel
	# the difference.  Digits and CJK ideographs have no case, so up-casing
	# leaves every unit as it is.
	read -r a b < <("$FK_PYTHON" -c '
M, P = 2**64, 0x100000001B3
def key(u):
    h, w = (14695981039346656037 ^ len(u)) % M, 0
    for i, c in enumerate(u):
        w = (w << 16 | c) % M
        if i % 4 == 3:
            h = (h ^ w) * P % M
            h, w = h ^ h >> 29, 0
    h = (h ^ w) * P % M
    return h ^ h >> 32
def half(u):
    w = 0
    for c in u:
        w = w << 16 | c
    h = ((14695981039346656037 ^ 8) ^ w) * P % M
    return h ^ h >> 29
safe = list(range(0x30, 0x3A)) + list(range(0x4E00, 0xA000))
fixed = set(safe)
def solve(d):
    return next((x for x in safe if x ^ d in fixed), None)
for i in range(10000):
    a1, b1 = [ord(c) for c in "AB%04d" % i][:4], [ord(c) for c in "CD%02d" % (i % 100)]
    d = half(a1) ^ half(b1)
    diff = [d >> 48 - 16 * k & 0xFFFF for k in range(4)]
    a2 = [solve(x) for x in diff]
    if None not in a2:
        break
a, b = a1 + a2, b1 + [x ^ y for x, y in zip(a2, diff)]
assert a != b and key(a) == key(b)
print("".join(map(chr, a)), "".join(map(chr, b)))')
	[ -n "$b" ]
	mkexfat d.img 8M 4096
	printf 'put /%s --size 10\nput /%s --size 20\n' "$a" "$b" | ref batch d.img
	run -0 ref verify -W d.img
	run -0 --separate-stderr fatcheck d.img
	refute_output --partial duplicate
	sum=$(sha256sum <d.img)
	run -0 fatcheck -r d.img
	[ "$(sha256sum <d.img)" = "$sum" ]
	# names equal through the up-case table still are duplicates
	ref corrupt d.img duplicate-name >/dev/null
	run -4 fatcheck d.img
	assert_output --partial "same name"
}

@test "fatcheck exFAT: a NoFatChain DataLength past the heap does not take the directory after it" {
	use
	exdamage img nfc-huge
	run -4 fatcheck img
	assert_line --regexp "^error: /x-nfc: contiguous run from cluster [0-9]+ runs past the last cluster [0-9]+$"
	refute_output --partial "/x-d"
	run -1 fatcheck -r img
	assert_output --partial "DataLength set to 4096"
	run -0 fatcheck img
	fsck_exfat_clean img
	run -0 ref verify -W img
	run -0 ref cat img /x-d/child
	assert_output "$(printf 'c%.0s' $(seq 100))"
	sums img | diff - img.sums
}

@test "fatcheck exFAT: a NoFatChain directory whose DataLength grew (a high byte, or to another directory length) claims what ValidDataLength says; the files after it keep their data" {
	local c
	for c in dir-len-huge dir-len-grown; do
		use
		exdamage img "$c"
		run -4 fatcheck img
		if [[ $c == dir-len-huge ]]; then
			assert_line --regexp "^error: /x-d: directory DataLength [0-9]+ is not a whole number of clusters up to 256 MiB"
		else
			assert_line "error: /x-d: directory: ValidDataLength 4096 is not DataLength 16384"
		fi
		refute_output --partial "shares cluster"
		run -1 fatcheck -r img
		[[ $c == dir-len-huge ]] ||
			assert_output --partial "(repair: DataLength set to it, the shorter)"
		run -0 fatcheck img
		fsck_exfat_clean img
		run -0 ref verify -W img
		run -0 ref cat img /x-d/child
		assert_output "$(printf 'c%.0s' $(seq 100))"
		run -0 ref cat img /x-after
		[ "${#output}" -eq 8192 ] && [[ $output != *[^a]* ]]
		sums img | diff - img.sums
	done
}

@test "fatcheck exFAT: an entry set past the end marker is a hidden-entry; -r frees it and its clusters" {
	use
	exdamage img hidden-set
	run -1 ref verify img
	assert_output --partial "after the end-of-directory marker"
	run -4 fatcheck img
	assert_line --regexp "^warning: /: file 'x-h' \(entry [0-9]+\) lies past the directory's end marker, where readers stop; its clusters count as lost$"
	assert_line --regexp "^error: img: [0-9]+ clusters marked in the allocation bitmap are owned by nothing, the first [0-9]+$"
	run -1 fatcheck -r img
	assert_output --partial "(repair: file freed)"
	run -0 fatcheck img
	fsck_exfat_clean img
	run -0 ref verify -W img
	sums img | diff - img.sums
}

# ---- allocations fatcheck must not free -------------------------------------

# vendor_intact IMG: every Vendor Allocation entry of the root (the sets of
# /corrupt-vfile and /corrupt-vdir) still names clusters that hold the
# corruptor's "V" bytes; prints how many entries were found.
vendor_intact()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$1" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2])
data, n = v.root_dir().data, 0
for i in range(0, len(data), 32):
    e = data[i:i + 32]
    if e[0] == 0xE1:
        cl, prob = v.clusters_of(r.le(e, 20, 4), r.le(e, 24, 8), e[1] & 2)
        assert not prob and cl, (cl, prob)
        assert v.read_clusters(cl) == b"V" * len(cl) * v.csize, cl
        assert all(v.bit(c) for c in cl), cl
        n += 1
print(n)
PY
}

# fsck_exfat_vendor IMG: fsck.exfat -n 1.2.0 predates Vendor Allocation
# entries: its only complaint may be "failed to get name dentry" (one per
# such set), which -y would act on by deleting the set.
fsck_exfat_vendor()
{
	local out
	out=$(timeout 20 fsck.exfat -n "$1" 2>&1) && return 0
	if grep '^ERROR' <<<"$out" | grep -qv 'failed to get name dentry'; then
		echo "fsck.exfat -n $1: $out" >&2
		return 1
	fi
}

@test "fatcheck exFAT: a Vendor Allocation secondary owns its clusters, in a file's set and a directory's; -r frees nothing and fatprealloc does not take them" {
	local c sum free
	for c in vendor-alloc-file vendor-alloc-dir; do
		use
		ref corrupt img "$c"
		run -0 ref verify -W img
		run -0 vendor_intact img
		assert_output 1
		run -0 fatcheck img
		refute_output --partial "error:"
		sum=$(img_sha img)
		run -0 fatcheck -r img
		[ "$(img_sha img)" = "$sum" ]
		# Every free cluster to a new file: the vendor's stay the vendor's.
		free=$(ref info img | sed -n 's/^free_clusters=//p')
		run -0 fatprealloc img /fill.bin $((free * 4096))
		run -0 ref verify -W img
		run -0 vendor_intact img
		assert_output 1
		fsck_exfat_vendor img
		sums img | diff - img.sums
	done
}

@test "fatcheck exFAT: files named . and .. are errors; -r renames them, fsck.exfat agrees, a second -r writes nothing" {
	local c name sum
	for c in name-dot name-dotdot; do
		use
		ref corrupt img "$c"
		name=.
		[[ $c == name-dot ]] || name=..
		run -4 fatcheck img
		assert_line "error: /$name: the name '$name' is reserved (no path can name this entry)"
		run -1 fatcheck -r img
		assert_line "error: /$name: the name '$name' is reserved (no path can name this entry) (repair: renamed to '${name//./_}')"
		fsck_exfat_clean img
		run -0 ref verify -W img
		sum=$(img_sha img)
		run -0 fatcheck -r img
		[ "$(img_sha img)" = "$sum" ]
		run -0 fatls img "/${name//./_}"
		run -0 ref cat img "/${name//./_}"
		assert_output d
		sums img | diff - img.sums
	done
}

@test "fatcheck exFAT: a NameLength past what the File Name entries hold cuts the name and keeps the file" {
	local c sum
	for c in name-length secondary-count; do
		use
		ref corrupt img "$c"
		run -4 fatcheck img
		assert_line --regexp "^error: /corrupt-(len|x{7}): NameLength (40|28) but the set's File Name entries hold 15 characters$"
		run -1 fatcheck -r img
		assert_output --regexp "\(repair: name cut to (11|15) characters\)"
		refute_output --partial "entry set removed"
		fsck_exfat_clean img
		run -0 ref verify -W img
		run -0 ref ls img /
		assert_output --regexp $'size=4096\t[^\n]*path=/corrupt-(len|x{7})$'
		sum=$(img_sha img)
		run -0 fatcheck -r img
		[ "$(img_sha img)" = "$sum" ]
		sums img | diff - img.sums
	done
}

# leaked IMG: the clusters whose bitmap bits exfatref finds owned by
# nothing, one a line, sorted as text.
leaked()
{
	ref verify "$1" | sed -n 's/^error: bitmap: clusters \([0-9]*\)-\([0-9]*\) are marked used but owned by nothing.*/\1 \2/p' |
		while read -r a b; do seq "$a" "$b"; done | sort
}

@test "fatcheck exFAT -r: no bitmap bit is cleared while the tree holds what fatcheck cannot attribute" {
	local c leak sum
	for c in critical-primary-alloc critical-secondary-alloc truncated-set dir-chain-short first-cluster-zero; do
		use
		ref corrupt img bitmap-leak
		leak=$(leaked img)
		[ -n "$leak" ]
		if [[ $c == dir-chain-short || $c == first-cluster-zero ]]; then
			ref corrupt img "$c"
		else
			exdamage img "$c"
		fi
		run -4 fatcheck img
		assert_line --regexp "^error: img: [0-9]+ clusters marked in the allocation bitmap are owned by nothing, the first [0-9]+$"
		case $c in
		critical-*)
			assert_line --regexp "^warning: /(x-crit)?: an unknown critical entry: the 3 clusters owned by nothing are kept, as they may be what it held$"
			assert_line --regexp "^error: /.*(unknown critical entry type 0x86 \(entry [0-9]+\) with an allocation from cluster [0-9]+|holds an unknown critical secondary entry and an allocation from cluster [0-9]+): left as it is, with its clusters$"
			# nothing to write: the entry stays, the bits too
			sum=$(img_sha img)
			run -4 fatcheck -r img
			[ "$(img_sha img)" = "$sum" ]
			;;
		truncated-set)
			assert_line "warning: /x-t: a damaged entry set was removed: the 5 clusters owned by nothing are kept, as they may be what it held"
			run -4 fatcheck -r img
			;;
		dir-chain-short)
			assert_line "warning: /corrupt-dshort: a directory cannot be read to its end: the 3 clusters owned by nothing are kept, as they may be what it held"
			run -4 fatcheck -r img
			;;
		first-cluster-zero)
			assert_line "error: /corrupt-fc0: directory: first cluster 0 with a non-zero length (4096 bytes)"
			assert_line "warning: /corrupt-fc0: a directory cannot be read: the 3 clusters owned by nothing are kept, as they may be what it held"
			run -4 fatcheck -r img
			;;
		esac
		refute_output --partial "bits cleared"
		# the leaked bits are still set
		[ -z "$(comm -23 <(echo "$leak") <(leaked img))" ]
		sums img | diff - img.sums
	done
}

# unmarked IMG: /x-big (2 MiB) with every bitmap bit of its clusters clear,
# an orphan Stream Extension in the root naming a free cluster (so that the
# repair keeps the bitmap's leaks: the tree is incomplete) and PercentInUse
# 50, true of neither the bitmap as read nor as repaired.
unmarked()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$1" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
e, cl = v.put("/x-big", 2 << 20, b"b" * (2 << 20))
for c in cl:
    v.set_bit(c, 0)
o = bytearray(32)
o[0], o[1] = r.T_STREAM, 3
r.put_le(o, 20, 4, v.alloc_run(1)[0])
r.put_le(o, 24, 8, v.csize)
root = v.root_dir()
root.write_entries(root.free_slot(1), bytes(o))
v.flush()
v.set_percent(50)
v.f.close()
PY
}

@test "fatcheck exFAT -r: PercentInUse is written from the bitmap as repaired, so -n then finds it true and a second -r writes nothing" {
	local sum
	use
	unmarked img
	run -4 fatcheck img
	assert_line --regexp "^error: img: 512 clusters in use are marked free in the allocation bitmap, the first [0-9]+; owned by /x-big \\(512 clusters\\)$"
	assert_line --regexp "^warning: img: PercentInUse 50%, the allocation bitmap says [0-9]%$"
	run -1 fatcheck -r img
	assert_line --regexp "^warning: img: PercentInUse 50%, the allocation bitmap says [0-9]% \\(repair: set to [0-9]+%\\)$"
	run -0 fatcheck -n img
	assert_output --regexp "0 errors, 0 warnings, 0 notes$"
	fsck_exfat_clean img
	run -0 ref verify -W img	# PercentInUse, which fsck.exfat ignores
	sum=$(img_sha img)
	run -0 fatcheck -r img
	[ "$(img_sha img)" = "$sum" ]
}

# ---- memory -----------------------------------------------------------------

@test "fatcheck exFAT: memory stays within 2 bits per cluster plus buffers on a full 1 TiB volume" {
	local rss nclus
	truncate -s 1T big.img
	mkfs.exfat -c 32K big.img >/dev/null
	# one NoFatChain file over every free cluster: each ownership bit and
	# each bitmap bit is 1 (exfatref's writer would try to hold 1 TiB of
	# data, so the file is made by hand)
	"$FK_PYTHON" - "$FATKIT_HELPERS" big.img <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
e, cl = v.put("/huge", v.csize, b"", vdl=0, chain=False)
e.set_stream(dl=(v.nclus + 2 - cl[0]) * v.csize, vdl=0)
v.rewrite_set(e)
bm = v.load_bitmap()
for c in range(cl[0], v.nclus + 2):
    if (c - 2) % 8 == 0:
        break
    v.set_bit(c, 1)
start = (cl[0] - 2 + 7) // 8
bm[start:] = b"\xff" * (len(bm) - start)
if v.nclus % 8:
    bm[v.nclus // 8] &= (1 << (v.nclus % 8)) - 1
v.bitmap_dirty = True
v.flush()
v.f.close()
PY
	nclus=$(od -An -tu4 -j92 -N4 big.img | tr -d ' ') # ClusterCount
	rss=$(/usr/bin/time -f %M fatcheck big.img 2>&1 >/dev/null | tail -n 1)
	echo "peak RSS $rss KiB for $nclus clusters"
	# 2 bits per cluster is nclus / 4 bytes; buffers and the program 4 MiB
	# (the sanitizers' shadow memory would not fit that bound)
	if ! ldd "$FATKIT_BUILD/fatcheck" | grep -q libasan; then
		[ "$rss" -le $((nclus / 4 / 1024 + 4096)) ]
	fi
	run -0 fatcheck big.img
	assert_output --partial "$nclus/$nclus clusters used; 0 errors"
}

@test "fatcheck exFAT: --salvage is refused (one line, exit 16, image untouched); -r frees the leak" {
	local sum
	use
	ref corrupt img bitmap-leak
	sum=$(img_sha img)
	run -16 fatcheck -r --salvage img
	assert_output "fatcheck: img: --salvage works on FAT12/16/32 only; on exFAT, -r frees lost clusters (run without --salvage)"
	[ "$(img_sha img)" = "$sum" ]
	run -1 fatcheck -r img
	run -0 ref verify -W img
}

# ---- repairs keep intact data (found by the differential run) ---------------

# grow IMG PATH N: DataLength of PATH's stream N bytes longer, nothing else
# (the set's checksum stays right: only the length is wrong).
grow()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as x
v = x.Volume(sys.argv[2], write=True)
d, e, _ = v.resolve(sys.argv[3])
e.set_stream(dl=e.dl + int(sys.argv[4]))
v.rewrite_set(e)
v.flush()
PY
}

# csums IMG PATH...: each file's SHA-256 as exfatref reads it, and the
# first N bytes only where N is given as PATH:N.
csums()
{
	local img=$1 p n
	shift
	for p; do
		n=${p#*:}
		[ "$n" = "$p" ] && n=
		p=${p%%:*}
		if [ -n "$n" ]; then
			ref cat "$img" "$p" | head -c "$n" | sha256sum
		else
			ref cat "$img" "$p" | sha256sum
		fi
	done
}

# prealloc_safe IMG: fatprealloc refuses with IMG byte-identical, or it
# succeeds and fatcheck finds nothing new.
prealloc_safe()
{
	local sum before
	cp "$1" pre.img
	sum=$(img_sha pre.img)
	before=$(fatcheck pre.img 2>&1 | grep -c '^error' || true)
	if fatprealloc pre.img /NEW.bin 8K; then
		[ "$(fatcheck pre.img 2>&1 | grep -c '^error' || true)" -le "$before" ]
	else
		[ "$(img_sha pre.img)" = "$sum" ]
	fi
}

@test "fatcheck -r exFAT: a NoFatChain file whose DataLength grew over its neighbours is cut back to what the bitmap gives it; the neighbours keep their data; grown over free clusters only, it keeps them" {
	rm -f x.img
	truncate -s 8M x.img
	mkfs.exfat -c 32K -b 4096 x.img >/dev/null
	printf 'put /a.bin --size 100K\nput /b.bin --size 64K --fatchain\nput /c.bin --size 64K\n' |
		ref batch x.img
	csums x.img /a.bin /b.bin /c.bin >want.sums
	grow x.img /a.bin 262144
	prealloc_safe x.img
	run -4 fatcheck x.img
	refute_output --partial "shares cluster"
	assert_line "error: /a.bin: DataLength 364544 reaches past the file's own contiguous clusters: cluster 9 is owned by another file or directory"
	run -1 fatcheck -r x.img
	refute_output --partial "made empty"
	assert_line "error: /a.bin: DataLength 364544 reaches past the file's own contiguous clusters: cluster 9 is owned by another file or directory (repair: DataLength set to 131072)"
	run -0 fatcheck x.img
	fsck_exfat_clean x.img
	run -0 ref verify -W x.img
	# a.bin: its 100 KiB of data, then zeros to its new length
	csums x.img /a.bin:102400 /b.bin /c.bin | diff - want.sums
	[ "$(ref cat x.img /a.bin | wc -c)" = 131072 ]
	# grown into clusters the bitmap marks free but nobody else owns (as
	# a recording whose bits were lost when the card was pulled): the
	# file keeps them, and the bitmap gets their bits
	rm -f z.img
	truncate -s 8M z.img
	mkfs.exfat -c 32K -b 4096 z.img >/dev/null
	printf 'put /a.bin --size 100K\n' | ref batch z.img
	grow z.img /a.bin 65536
	prealloc_safe z.img
	run -1 fatcheck -r z.img
	refute_output --partial "DataLength set"
	assert_line --partial "marked free in the allocation bitmap"
	run -0 fatcheck z.img
	fsck_exfat_clean z.img
	run -0 ref verify -W z.img
	[ "$(ref cat z.img /a.bin | wc -c)" = 167936 ]
	# listed with all its clusters, though its tail is claimed last
	run -0 fatcheck -v z.img
	assert_line "checked: /a.bin (167936 bytes, 6 clusters)"
	csums z.img /a.bin:102400 | diff - <(head -1 want.sums)
}

@test "fatcheck -r exFAT: a NoFatChain directory's DataLength one byte over a cluster is cut to its cluster; the next directory and its file stay" {
	rm -f y.img
	truncate -s 4M y.img
	mkfs.exfat -c 4K -b 4096 y.img >/dev/null
	printf 'mkdir /D\nmkdir /M\nput /M/f.bin --size 8K\n' | ref batch y.img
	csums y.img /M/f.bin >want.sums
	grow y.img /D 1
	prealloc_safe y.img
	run -4 fatcheck y.img
	assert_line "error: /D: directory DataLength 4097 is not a whole number of clusters up to 256 MiB"
	refute_output --partial "shares cluster"
	refute_output --partial "end marker"
	run -1 fatcheck -r y.img
	assert_line "error: /D: directory DataLength 4097 is not a whole number of clusters up to 256 MiB (repair: DataLength set to 4096)"
	refute_output --partial "removed"
	run -0 fatcheck y.img
	fsck_exfat_clean y.img
	run -0 ref verify -W y.img
	csums y.img /M/f.bin | diff - want.sums
}

@test "fatcheck -r exFAT: an up-case table that maps 'V' to a space is mended in place, not blessed with a new checksum" {
	rm -f u.img
	truncate -s 4M u.img
	mkfs.exfat -c 4K -b 4096 u.img >/dev/null
	# the raw table's entry for 0056h ('V', not compressed) becomes 0020h
	printf '\x20' | dd of=u.img bs=1 seek=$((0x50ac)) conv=notrunc 2>/dev/null
	run -1 ref verify u.img
	assert_line "error: up-case table: mandatory mapping of 0056h is 0020h"
	prealloc_safe u.img
	run -4 fatcheck u.img
	assert_line "error: u.img: up-case table maps 1 of the ASCII characters elsewhere than the specification's mandatory mapping (0056h to 0020h)"
	refute_output --partial "TableChecksum"
	run -1 fatcheck -r u.img
	refute_output --partial "checksum rewritten"
	run -0 fatcheck u.img
	fsck_exfat_clean u.img
	run -0 ref verify -W u.img
}

@test "fatcheck -r exFAT: a crash after any write of these three repairs, then another -r, keeps every file and leaves every judge clean" {
	local img n crashed
	rm -f x.img y.img u.img
	truncate -s 4M x.img y.img u.img
	for img in x.img y.img u.img; do
		mkfs.exfat -c 4K -b 4096 "$img" >/dev/null
	done
	printf 'put /a.bin --size 12800\nput /b.bin --size 8K --fatchain\nput /c.bin --size 8K\n' |
		ref batch x.img
	csums x.img /a.bin /b.bin /c.bin >x.sums
	grow x.img /a.bin 32768
	printf 'mkdir /D\nmkdir /M\nput /M/f.bin --size 8K\n' | ref batch y.img
	csums y.img /M/f.bin >y.sums
	grow y.img /D 1
	printf '\x20' | dd of=u.img bs=1 seek=$((0x50ac)) conv=notrunc 2>/dev/null
	for img in x y u; do
		for ((n = 1; n <= 20; n++)); do
			cp $img.img c.img
			run env FK_CRASH_AFTER_WRITE=$n fatcheck -r c.img
			[[ $status -eq 99 || $status -eq 1 ]]
			crashed=$status
			((crashed == 99 || n > 1)) || skip "fatcheck built without -DFK_FAULT_INJECTION"
			run fatcheck -r c.img
			[[ $status -eq 0 || $status -eq 1 ]]
			run -0 fatcheck c.img
			fsck_exfat_clean c.img
			run -0 ref verify -W c.img
			case $img in
			x) csums c.img /a.bin:12800 /b.bin /c.bin | diff - x.sums ;;
			y) csums c.img /M/f.bin | diff - y.sums ;;
			esac
			((crashed == 99)) || break
		done
		((n > 2))
	done
}

# upcase_poke IMG WHAT [FIRST]: damage the up-case table's chain or entry in raw
# bytes and print its contiguous run's bitmap bits as "FIRST N BITS" (taken
# before the damage: the run Linux and fsck.exfat read).  WHAT: "bad" marks
# the table's first cluster bad in the FAT, "free" frees its last link,
# "first" flips the high byte of its FirstCluster, "first-free" points it
# at cluster 100 (free), "first-root" at the root's cluster, "table"
# changes a byte of the table itself, "bitmap" frees the
# allocation bitmap's FAT entry, "bits" only prints
# (the run from FIRST, when given, as FirstCluster may be damaged).
upcase_poke()
{
	"$FK_PYTHON" - "$@" <<'PY'
import struct, sys
img, what = sys.argv[1], sys.argv[2]
f = open(img, "r+b")
bs = f.read(512)
u32 = lambda b, o: struct.unpack_from("<I", b, o)[0]
bps, spc = 1 << bs[108], 1 << bs[109]
clen = bps * spc
fat, heap, root = u32(bs, 80) * bps, u32(bs, 88) * bps, u32(bs, 96)
off = lambda c: heap + (c - 2) * clen
f.seek(off(root))
d = f.read(clen)
ents = [d[i:i + 32] for i in range(0, clen, 32)]
up = next(i for i, e in enumerate(ents) if e[0] == 0x82)
bm = next(e for e in ents if e[0] == 0x81)
first, ln = u32(ents[up], 20), struct.unpack_from("<Q", ents[up], 24)[0]
first = int(sys.argv[3]) if len(sys.argv) > 3 else first
n = -(-ln // clen)
f.seek(off(u32(bm, 20)))
bits = f.read(-(-(first + n) // 8) + 1)
run = "".join(str(bits[(c - 2) // 8] >> ((c - 2) % 8) & 1)
              for c in range(first, first + n))
print(first, n, run)
if what == "bad":
    f.seek(fat + 4 * first); f.write(struct.pack("<I", 0xFFFFFFF7))
elif what == "free":
    f.seek(fat + 4 * (first + n - 2)); f.write(struct.pack("<I", 0))
elif what == "bitmap":
    f.seek(fat + 4 * u32(bm, 20)); f.write(struct.pack("<I", 0))
elif what == "first":
    f.seek(off(root) + 32 * up + 23); f.write(bytes([0x20]))
elif what == "first-free":
    f.seek(off(root) + 32 * up + 20); f.write(struct.pack("<I", 100))
elif what == "first-root":
    f.seek(off(root) + 32 * up + 20); f.write(struct.pack("<I", root))
elif what == "table":
    f.seek(off(first) + 2); f.write(bytes([0x41]))
PY
}

@test "fatcheck -r exFAT: an up-case table or bitmap whose FAT chain is broken is read as its contiguous run, its chain rewritten, its bitmap bits kept" {
	local what before sum
	for what in bad free bitmap; do
		rm -f u.img
		truncate -s 4M u.img
		mkfs.exfat -c 512 u.img >/dev/null
		ref put u.img /a.bin --size 3000
		before=$(upcase_poke u.img $what)
		[[ $before == "3 12 111111111111" ]]
		run -1 ref verify u.img
		if [[ $what == bitmap ]]; then
			assert_output --partial "allocation bitmap chain"
			run -1 fatcheck -r u.img
			assert_line --partial "error: u.img: allocation bitmap: its FAT chain leaves the contiguous run of 1 cluster from cluster 2"
		else
			assert_output --partial "up-case table chain"
			run -1 fatcheck -r u.img
			assert_line --partial "error: u.img: up-case table: its FAT chain leaves the contiguous run of 12 clusters from cluster 3"
		fi
		assert_output --partial "(repair: chain rewritten as the run)"
		refute_output --partial "cleared"
		run -0 upcase_poke u.img bits
		assert_output "$before"
		fsck_exfat_clean u.img
		run -0 ref verify -W u.img
		sum=$(img_sha u.img)
		run -0 fatcheck -r u.img
		[ "$(img_sha u.img)" = "$sum" ]
	done
}

@test "fatcheck -r exFAT: an up-case table whose FirstCluster was damaged is found again by its TableChecksum, and FirstCluster mended" {
	# Differential: out of range, a free cluster, another structure's
	# cluster: the table was kept unread (exit 4), its clusters as lost.
	local what before sum
	rm -f base.img
	truncate -s 4M base.img
	mkfs.exfat -c 4K base.img >/dev/null
	ref put base.img /a.bin --size 9000
	sum=$(img_sha base.img)
	for what in first first-free first-root; do
		cp base.img u.img
		before=$(upcase_poke u.img $what)
		[[ $before == "3 2 11" ]]
		run -1 ref verify u.img
		run -1 fatcheck -r u.img
		assert_line --regexp "^error: u.img: up-case table: FirstCluster [0-9]+ holds no table with its TableChecksum 0x[0-9A-F]{8}; the run from cluster 3 does \(repair: FirstCluster set to 3\)\$"
		refute_output --partial "cleared"
		refute_output --partial "freed"
		[ "$(img_sha u.img)" = "$sum" ] # the entry as mkfs.exfat wrote it
		fsck_exfat_clean u.img
		run -0 ref verify -W u.img
		run -0 fatcheck u.img
	done
}

@test "fatcheck -r exFAT: an up-case table whose FirstCluster is out of range and whose bytes changed too frees none of the clusters it may hold" {
	local before sum
	rm -f u.img
	truncate -s 4M u.img
	mkfs.exfat -c 4K u.img >/dev/null
	upcase_poke u.img table >/dev/null
	before=$(upcase_poke u.img first 3)
	[[ $before == "3 2 11" ]]
	sum=$(img_sha u.img)
	run -4 fatcheck -r u.img
	assert_line "error: u.img: up-case table: first cluster 536870915 is out of range (2 to 513)"
	assert_line "warning: /: the up-case table cannot be read: the 2 clusters owned by nothing are kept, as they may be what it held"
	refute_output --partial "cleared"
	run -0 upcase_poke u.img bits 3
	assert_output "$before"
	[ "$(img_sha u.img)" = "$sum" ] # nothing it could mend
}

@test "fatcheck exFAT: an up-case DataLength of the whole heap and one cluster more, on a volume whose ClusterCount shrank, is a finding, not an end of the check" {
	mkexfat u.img 8M 4K
	# ClusterCount 31 (boot checksum redone), the up-case table's
	# DataLength 31 clusters and 2 bytes: the search for the table by its
	# checksum counted from cluster 2 - 31 and read past the volume.
	"$FK_PYTHON" - "$FATKIT_HELPERS" u.img <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
v.write(92, struct.pack("<I", 31))
r.fix_boot_checksum(v, 0)
bs = v.read(0, 512)
heap, root = struct.unpack_from("<I", bs, 88)[0] * 512, struct.unpack_from("<I", bs, 96)[0]
at = heap + (root - 2) * 4096
d = v.read(at, 4096)
up = next(i for i in range(0, 4096, 32) if d[i] == 0x82)
v.write(at + up + 24, struct.pack("<Q", 31 * 4096 + 2))
PY
	run -4 --separate-stderr fatcheck -n u.img
	assert_line --partial "up-case table at cluster"
	refute_output --partial "Structure needs cleaning"
	[ -z "$stderr" ]
}

# crash_fail_repairs DMG MAX JUDGE: at each write number N up to MAX, a
# copy of DMG whose -r crashes after write N, then one whose write N
# fails, each followed by a second -r after which fatcheck calls it
# clean; then JUDGE IMG crash|fail judges it.  Stops at the first N that
# -r does not reach; REACHED is that N.
crash_fail_repairs()
{
	local dmg=$1 max=$2 judge=$3 n crashed
	for ((n = 1; n <= max; n++)); do
		cp "$dmg" x.img
		run env FK_CRASH_AFTER_WRITE=$n fatcheck -r x.img
		[[ $status -eq 99 || $status -eq 1 ]]
		crashed=$status
		((crashed == 99 || n > 1)) || skip "fatcheck built without -DFK_FAULT_INJECTION"
		run fatcheck -r x.img
		[[ $status -eq 0 || $status -eq 1 ]]
		run -0 fatcheck x.img
		"$judge" x.img crash
		cp "$dmg" x.img
		run --separate-stderr env FK_FAIL_WRITE=$n fatcheck -r x.img
		[[ $status -eq 12 || $status -eq 1 ]]
		run fatcheck -r x.img
		[[ $status -eq 0 || $status -eq 1 ]]
		run -0 fatcheck x.img
		"$judge" x.img fail
		((crashed == 99)) || break
	done
	REACHED=$n
}

# upcase_judged IMG crash|fail: the tables' bitmap bits are as before
# ($before); after a crash every judge calls IMG clean too.
upcase_judged()
{
	if [ "$2" = crash ]; then
		fsck_exfat_clean "$1"
		run -0 ref verify -W "$1"
	fi
	run -0 upcase_poke "$1" bits
	assert_output "$before"
}

@test "fatcheck -r exFAT: a crash or a failed write at any write of an up-case or bitmap chain rewritten or of a FirstCluster mended, then another -r, leaves every judge clean" {
	local what before
	for what in bad bitmap first-free; do
		rm -f dmg.img
		truncate -s 4M dmg.img
		mkfs.exfat -c 512 dmg.img >/dev/null
		before=$(upcase_poke dmg.img $what)
		crash_fail_repairs dmg.img 20 upcase_judged
		((REACHED > 2))
	done
}

# set_poke IMG NAME OFF BYTE [stale]: byte OFF of the root's entry set
# named NAME becomes BYTE (hex); its SetChecksum made right unless "stale".
set_poke()
{
	"$FK_PYTHON" - "$@" <<'PY'
import struct, sys
img, name, off, byte = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4], 16)
stale = len(sys.argv) > 5
f = open(img, "r+b")
bs = f.read(512)
u32 = lambda b, o: struct.unpack_from("<I", b, o)[0]
bps, spc = 1 << bs[108], 1 << bs[109]
clen = bps * spc
at = u32(bs, 88) * bps + (u32(bs, 96) - 2) * clen
f.seek(at)
d = f.read(clen)
for i in range(0, clen, 32):
    if d[i] != 0x85:
        continue
    n = d[i + 1] + 1
    s = bytearray(d[i:i + 32 * n])
    units = b"".join(s[32 * k + 2:32 * k + 32] for k in range(2, n))
    if units.decode("utf-16-le")[:s[35]] != name:
        continue
    s[off] = byte
    if not stale:
        c = 0
        for k, b in enumerate(s):
            if k not in (2, 3):
                c = ((c >> 1) | ((c & 1) << 15)) + b & 0xFFFF
        struct.pack_into("<H", s, 2, c)
    f.seek(at + i)
    f.write(s)
    sys.exit(0)
sys.exit("set_poke: no set named " + name)
PY
}

# damaged_first IMG: ./IMG, 512-byte clusters: /DCIM/100MEDIA/CLIP0001.MP4
# (NoFatChain) and 16 files in /DCIM/many, whose entries fill three
# clusters; the clip's FirstCluster damaged onto the directory's second
# cluster, its SetChecksum left stale (as the differential run found it).
damaged_first()
{
	rm -f "$1"
	truncate -s 2M "$1" && mkfs.exfat -c 512 -b 4096 "$1" >/dev/null
	{
		echo "put /DCIM/100MEDIA/CLIP0001.MP4 --size 7000 --nofatchain"
		for i in $(seq -w 0 15); do
			echo "put '/DCIM/many/file $i.dat' --size $((300 * (10#$i + 1)))"
		done
	} | ref batch "$1"
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$1" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
d = v.resolve("/DCIM/many")[1]
second = v.clusters_of(d.first, d.dl, d.flags & 2)[0][1]
e = v.resolve("/DCIM/100MEDIA/CLIP0001.MP4")[1]
v.write(e.dir.entry_offset(e.index + 1) + 20, second.to_bytes(4, "little"))
v.flush()
PY
}

@test "fatcheck -r exFAT: a set whose SetChecksum fails and whose run lands on a directory loses the run, not the directory's files" {
	local files=() want i n
	damaged_first x.img
	for i in $(seq -w 0 15); do files+=("/DCIM/many/file $i.dat"); done
	want=$(csums x.img "${files[@]}")
	# Claimed after every sound stream, the clip meets the directory's
	# cluster; it was claimed first, and -r cut the directory after
	# its first cluster: eleven files gone.
	run -4 fatcheck x.img
	assert_line --regexp "^error: /DCIM/100MEDIA/CLIP0001.MP4: shares cluster [0-9]+ with another file or directory: /DCIM/many\$"
	refute_output --partial "/DCIM/many: directory"
	cp x.img damaged.img
	run -4 fatcheck -r x.img
	assert_output --partial "(repair: file made empty)"
	assert_output --partial "are kept, as they may be what it held"
	[ "$(csums x.img "${files[@]}")" = "$want" ]
	fsck_exfat_clean x.img
	# After a crash at any write (a -DFK_FAULT_INJECTION build; any
	# other finishes at once), another -r ends the same way.
	for n in $(seq 1 30); do
		cp damaged.img x.img
		run env FK_CRASH_AFTER_WRITE=$n fatcheck -r x.img
		[[ $status -eq 99 || $status -eq 4 ]]
		i=$status
		run fatcheck -r x.img
		[[ $status -eq 0 || $status -eq 1 || $status -eq 4 ]]
		[ "$(csums x.img "${files[@]}")" = "$want" ]
		fsck_exfat_clean x.img
		[ "$i" -eq 99 ] || break
	done
	[ "$i" -eq 4 ]
}

@test "fatcheck -r exFAT: a NameLength cut short is restored where NameHash matches the longer name; units past a name are cleared on a rewrite" {
	# Differential: NameLength 14 became 10 with SetChecksum made right:
	# -r rewrote NameHash for "half valid" and fsck.exfat still called
	# the name length wrong (the units ".bin" remained past it).
	local want
	mkexfat x.img 4M 4K
	ref put x.img "/half valid.bin" --size 3000
	want=$(csums x.img "/half valid.bin")
	set_poke x.img "half valid.bin" 35 0a
	run -4 fatcheck x.img
	assert_line --regexp "^error: /half valid: NameLength 10, but the name runs on to 14 characters, which NameHash 0x[0-9A-F]{4} matches\$"
	run -1 fatcheck -r x.img
	assert_output --partial "(repair: NameLength set to 14)"
	fsck_exfat_clean x.img
	run -0 ref verify -W x.img
	[ "$(csums x.img "/half valid.bin")" = "$want" ]
	run -0 fatcheck x.img
	# A unit past the name changed, SetChecksum left stale (the set is
	# rewritten for its checksum): the unit is cleared too.
	set_poke x.img "half valid.bin" 95 0e stale
	run -1 fatcheck -r x.img
	assert_output --partial "(repair: checksum rewritten)"
	fsck_exfat_clean x.img
	run -0 ref verify -W x.img
	[ "$(csums x.img "/half valid.bin")" = "$want" ]
}

@test "fatcheck -r exFAT: a set rewritten for its stream alone keeps no name unit past NameLength" {
	mkexfat x.img 4M 4K
	ref put x.img "/abc" --size 0
	# 'Z' after "abc" in the File Name entry: the hash of "abc" still
	# matches; then FirstCluster 5 with DataLength 0, which -r clears.
	set_poke x.img abc 72 5a
	set_poke x.img abc 52 05
	run -4 --separate-stderr fatcheck x.img
	run -1 --separate-stderr fatcheck -r x.img
	fsck_exfat_clean x.img
	run -0 ref verify -W x.img
	run -0 --separate-stderr fatcheck x.img
	[ "$(ref cat x.img /abc | wc -c)" -eq 0 ]
}

# name_judged IMG crash|fail: /half valid.bin reads as before ($want);
# after a crash fsck.exfat calls IMG clean too.
name_judged()
{
	[ "$2" = fail ] || fsck_exfat_clean "$1"
	[ "$(csums "$1" "/half valid.bin")" = "$want" ]
}

@test "fatcheck -r exFAT: a crash or a failed write at any write of a NameLength restored, then another -r, leaves the name whole" {
	local want
	mkexfat dmg.img 4M 4K
	ref put dmg.img "/half valid.bin" --size 3000
	want=$(csums dmg.img "/half valid.bin")
	set_poke dmg.img "half valid.bin" 35 0a
	crash_fail_repairs dmg.img 10 name_judged
	((REACHED > 1))
}
