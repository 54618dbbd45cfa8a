#!/usr/bin/env bats
# fatprealloc-edges.bats: writer refusals the main fatprealloc.bats does
# not reach (found with `make coverage`). Judged by exit status, the exact
# error line and sha256sum of the whole image.

load helpers/common

# full_dir IMG NAME11: make directory NAME11's chain exactly 65536 slots
# (FAT's limit), every slot after "." and ".." a live empty file F0000000.DAT
# onwards, with clusters taken right after the last used one. Written with
# fatpoke.py and fatimg.py, which share no code with fatkit.
full_dir()
{
	local off clus
	off=$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot "$1" "$2") || return 1
	clus=$(od -An -tu2 -j $((off + 26)) -N2 "$1") || return 1
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$1" "$clus" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from fatimg import Volume
import fatpoke
img, first = sys.argv[2], int(sys.argv[3])
v = Volume(img)
per = v.spc * v.bps // 32
used = [i + 2 for i, e in enumerate(v.entries(v.fat(0))) if e]
nxt = max(used) + 1
chain = [first] + list(range(nxt, nxt + 65536 // per - 1))
for a, b in zip(chain, chain[1:]):
    fatpoke.set_entry(v, a, b)
fatpoke.set_entry(v, chain[-1], 0xFFFF)
n = 0
with open(img, "r+b") as f:
    for k, c in enumerate(chain):
        off = v.base + (v.data_start + (c - 2) * v.spc) * v.bps
        buf = bytearray()
        for i in range(per):
            if k == 0 and i < 2:
                buf += v.read(off + 32 * i, 32)  # keep "." and ".."
                continue
            buf += b"F%07dDAT" % n + bytes([0x20]) + bytes(20)
            n += 1
        f.seek(off)
        f.write(buf)
PY
}

@test "fatprealloc: a directory at FAT's 65536-slot limit takes no new name, and the image is unchanged" {
	mkimg fat16 64M img -s 16
	mmd -i img ::BIG
	full_dir img 'BIG        '
	[ "$(mdir -b -i img ::BIG | wc -l)" -eq 65534 ]
	before=$(img_sha img)
	run -1 --separate-stderr fatprealloc img /BIG/new.bin 1K
	[ "$stderr" = "fatprealloc: img:/BIG/new.bin: No space left on device (the directory has 65536 slots, FAT's limit)" ]
	[ "$(img_sha img)" = "$before" ]
	# An existing name needs no slot: it still grows.
	run -0 --separate-stderr fatprealloc img /BIG/F0000005.DAT 1K
	[[ $(mdir -i img ::BIG/F0000005.DAT) == *"F0000005 DAT      1024 "* ]]
}

@test "fatprealloc: a name that is not UTF-8 is refused, and the image is unchanged" {
	mkimg fat16 16M img
	populate img
	before=$(img_sha img)
	run -1 --separate-stderr fatprealloc img $'/bad\xffname.bin' 1K
	[ "$stderr" = $'fatprealloc: img:/bad\xffname.bin: FAT names must be valid UTF-8' ]
	run -1 --separate-stderr fatprealloc -p img $'/DATA/d\xff/x.bin' 1K
	[ "$stderr" = $'fatprealloc: img:/DATA/d\xff/x.bin: FAT names must be valid UTF-8' ]
	[ "$(img_sha img)" = "$before" ]
}

@test "fatprealloc: a write cut short by the file-size limit fails with EFBIG and links nothing" {
	# RLIMIT_FSIZE cuts a write that crosses it short (here inside a FAT
	# sector, 20000 bytes into the image) and refuses the rest: a short
	# pwritev, then one that fails, in the first FAT copy's new chain.
	# SIGXFSZ is ignored, so the write fails with EFBIG instead.
	command -v prlimit >/dev/null || skip "prlimit is not installed"
	mkimg fat16 64M img -s 4
	populate img
	run -1 --separate-stderr bash -c \
		"trap '' XFSZ; exec prlimit --fsize=20000 fatprealloc --no-zero img /big.bin 40M"
	[ "$stderr" = "fatprealloc: img: File too large" ]
	# The chain was not linked: no entry, every old file intact, at
	# worst lost clusters, which one repair frees.
	run -1 mdir -i img ::big.bin
	check_sums img
	run --separate-stderr fatcheck -r img
	((status <= 1))
	run -0 --separate-stderr fatcheck img
	fsck_clean img
	check_sums img
}

@test "fatprealloc: long-name slots that belong to no entry are not reused; fatcheck -r still re-attaches the name" {
	mkimg fat16 4M img -s 1
	printf 'hi\n' >t
	mcopy -i img t "::/A long file name.txt"
	"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img lfn-sum "/A long file name.txt"
	off=$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot img 'ALONGF~1TXT')
	# The two long-name slots in front of the short slot.
	before=$(dd if=img bs=1 skip=$((off - 64)) count=96 status=none | sha256sum)
	run -0 --separate-stderr fatprealloc img /NEW.BIN 1K
	[ "$(dd if=img bs=1 skip=$((off - 64)) count=96 status=none | sha256sum)" = "$before" ]
	[[ $(mdir -i img ::NEW.BIN) == *"NEW      BIN      1024 "* ]]
	run -1 --separate-stderr fatcheck -r img
	[[ $output == *"(repair: checksum rewritten: the long name 'A long file name.txt' is re-attached to 'ALONGF~1.TXT')"* ]]
	fsck_clean img
	[[ $(mdir -i img ::) == *"ALONGF~1 TXT         3 "*" A long file name.txt"* ]]
	[ "$(mtype -i img "::/A long file name.txt")" = hi ]
}

@test "fatprealloc: a new entry never follows long-name slots that belong to no entry (they would read as its long name)" {
	local f off n rc
	mkimg fat16 4M img -s 1
	printf 'hi\n' >t
	mcopy -i img t "::/A long file name.txt"
	off=$("$FK_PYTHON" "$FATKIT_HELPERS/fatpoke.py" slot img 'ALONGF~1TXT')
	# The short slot is deleted: two orphaned long-name slots, then a
	# deleted slot, then the end marker.
	"$FK_PYTHON" "$FATKIT_HELPERS/corrupt.py" img orphan-lfn "/A long file name.txt" >/dev/null
	cp img marker.img
	# Or the end marker right after them.
	dd if=/dev/zero of=marker.img bs=1 seek="$off" count=32 conv=notrunc status=none
	cp marker.img marker.img.orig
	for f in img marker.img; do
		run -0 --separate-stderr fatprealloc -p "$f" /NEW/f.bin 1K
		run -1 fsck.fat -n "$f"
		[[ $output == *'Orphaned long file name part "A long file name.txt"'* ]]
		[[ $output != *"Wrong checksum"* ]]
		[[ $output != *"may have changed"* ]]
		# The slot after the orphans is deleted: mtools reads on to NEW.
		[ "$(od -An -tx1 -j "$off" -N1 "$f" | tr -d ' ')" = e5 ]
		[[ $(mdir -i "$f" ::/NEW/f.bin) == *"f        bin      1024 "* ]]
		run -1 --separate-stderr fatcheck -r "$f"
		fsck_clean "$f"
		[[ $(mdir -i "$f" ::/NEW/f.bin) == *"f        bin      1024 "* ]]
	done
	# A crash after any write (the end marker turns deleted in the same
	# write as the new entry): never a long name read as NEW's.
	for ((n = 1; n <= 20; n++)); do
		cp marker.img.orig c.img
		rc=0
		FK_CRASH_AFTER_WRITE=$n fatprealloc -p c.img /NEW/f.bin 1K 2>/dev/null || rc=$?
		((rc == 0 || rc == 99))
		((rc == 99 || n > 1)) || skip "fatprealloc built without -DFK_FAULT_INJECTION"
		run fsck.fat -n c.img
		[[ $output != *"may have changed"* ]]
		run --separate-stderr fatcheck -r c.img
		fsck_clean c.img
		((rc == 99)) || break
	done
}
