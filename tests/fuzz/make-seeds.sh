#!/usr/bin/env bash
# make-seeds.sh: (re)make the seed corpus of the fuzz targets, from images
# that tools we did not write made: mkfs.fat --invariant and mtools, and
# tests/helpers/corrupt.py for a few typical kinds of damage; exFAT seeds
# from mkfs.exfat (exfatprogs), filled and damaged by
# tests/helpers/exfatref.py.  The exFAT seeds with 4 KiB sectors are made
# on a loop device, so the script needs root.  It makes the same bytes on
# every run.
#
#     tests/fuzz/make-seeds.sh [OUTDIR]      (default tests/fuzz/corpus)
#
# Each image is cut after its last non-zero sector: the targets pad an
# input with a hole up to the size its boot sector claims, and a hole reads
# as zeros, so the cut loses nothing.  Geometries are chosen so that the
# cut stays small: small FATs, a short fixed root, data at the front (a
# fresh volume fills from cluster 2).  FAT32 needs 65525 clusters, so a
# FAT of 256 KiB; its seeds have one FAT copy, or are cut inside the FAT.
# Every target gets every seed (git stores identical files once);
# fuzz_prealloc also gets images where its paths already half exist.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/corpus}
corrupt=$here/../helpers/corrupt.py
exfatref=$here/../helpers/exfatref.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MTOOLS_SKIP_CHECK=1 MTOOLS_NO_VFAT=0 TZ=UTC SOURCE_DATE_EPOCH=1700000000
targets=(fuzz_ls fuzz_check fuzz_repair fuzz_prealloc)

# mkfs NAME KIB ARGS...: a fresh image $tmp/NAME.img.
mkfs() {
	local name=$1 kib=$2
	shift 2
	rm -f "$tmp/$name.img"
	mkfs.fat --invariant "$@" -C "$tmp/$name.img" "$kib" >/dev/null
}

# put NAME FILE CONTENT...: copy a file with CONTENT into image NAME.
put() {
	local img=$tmp/$1.img dst=$2
	shift 2
	printf '%s' "$*" >"$tmp/content"
	mcopy -o -i "$img" "$tmp/content" "::$dst"
}

# bytes N CHAR: N copies of CHAR, for files that span clusters.
bytes() { head -c "$1" /dev/zero | tr '\0' "$2"; }

# populate NAME: a few files, long names, subdirectories, a fragmented file.
populate() {
	local n=$1 img=$tmp/$1.img
	put "$n" /README.TXT "hello"
	put "$n" "/A long file name with spaces.txt" "long"
	put "$n" /lower.txt "lower case short name"
	mmd -i "$img" ::/SUB ::/SUB/deeper "::/Sub dir with a long name"
	put "$n" /SUB/inner.bin "$(bytes 1500 x)"
	put "$n" /SUB/deeper/x.dat "deep"
	put "$n" "/Sub dir with a long name/ünïcödé name.txt" "utf-8"
	# a hole between two files, then a file that fills it and goes on
	put "$n" /GAP1.BIN "$(bytes 1024 a)"
	put "$n" /GAP2.BIN "$(bytes 700 b)"
	put "$n" /GAP3.BIN "$(bytes 600 c)"
	mdel -i "$img" ::/GAP2.BIN
	put "$n" /FRAG.BIN "$(bytes 3000 f)"
}

# cut NAME: the image up to its last non-zero 512-byte sector.
cut() {
	python3 - "$tmp/$1.img" <<'PY'
import sys
p = sys.argv[1]
data = open(p, 'rb').read()
end = len(data.rstrip(b'\0'))
end = (end + 511) // 512 * 512
open(p, 'r+b').truncate(end)
PY
}

# keep NAME [TARGET...]: cut the image and add it to the targets' corpora.
keep() {
	local n=$1
	shift
	cut "$n"
	for t in "${@:-${targets[@]}}"; do
		mkdir -p "$out/$t"
		cp "$tmp/$n.img" "$out/$t/$n"
	done
}

for t in "${targets[@]}"; do rm -rf "${out:?}/$t"; done

# FAT12: 1-sector FATs, 16 root entries, 512-byte clusters.
mkfs fat12-empty 128 -F 12 -S 512 -s 1 -r 16 -n EMPTY
keep fat12-empty
mkfs fat12-files 128 -F 12 -S 512 -s 1 -r 32 -n FILES
populate fat12-files
keep fat12-files
# the smallest volume mkfs.fat makes, with one FAT and 2 KiB clusters
mkfs fat12-tiny 40 -F 12 -S 512 -s 4 -r 16 -f 1
put fat12-tiny /ONE.TXT "one"
keep fat12-tiny
# 4 KiB sectors
mkfs fat12-4k 1024 -F 12 -S 4096 -s 1 -r 128
populate fat12-4k
keep fat12-4k

# FAT16: 4085 clusters is the least; 1-sector clusters keep the FAT small.
mkfs fat16-files 2200 -F 16 -S 512 -s 1 -r 32 -n FAT16
populate fat16-files
keep fat16-files
# 4 KiB sectors: 2-sector FATs
mkfs fat16-4k 17000 -F 16 -S 4096 -s 1 -r 128
populate fat16-4k
keep fat16-4k

# FAT32: 65525 clusters; one FAT copy keeps the data near the front.
mkfs fat32-files 33500 -F 32 -S 512 -s 1 -f 1 -R 8 -n FAT32
populate fat32-files
keep fat32-files
# two copies, cut inside the first FAT: the directories read as empty
# (zeros) and the copies differ, but boot sector, FSInfo, backup boot
# sector and the first FAT entries are there
mkfs fat32-two-fats 33500 -F 32 -S 512 -s 1 -f 2 -R 8
populate fat32-two-fats
truncate -s 16K "$tmp/fat32-two-fats.img"
keep fat32-two-fats

# Damage of the kinds the checker repairs, on the small FAT12 image.
damage() {
	local name=$1
	shift
	cp "$tmp/fat12-files.img" "$tmp/$name.img"
	python3 "$corrupt" "$tmp/$name.img" "$@" >/dev/null
	keep "$name"
}
mkfs fat12-files 128 -F 12 -S 512 -s 1 -r 32 -n FILES
populate fat12-files
damage bad-loop loop /FRAG.BIN
damage bad-cross cross /GAP1.BIN /FRAG.BIN
damage bad-orphan-lfn orphan-lfn "/A long file name with spaces.txt"
damage bad-after-end after-end /SUB/inner.bin
damage bad-dir-loop dir-loop /SUB/deeper /SUB
damage bad-no-dot no-dot /SUB
damage bad-lost lost
damage bad-fat-copy fat-copy
damage bad-short short /FRAG.BIN
damage bad-tail tail /README.TXT 3
damage bad-lfn-seq lfn-seq "/A long file name with spaces.txt"

# fatprealloc's paths half there: /A a directory with B, and /A a file.
mkfs pa-parents 128 -F 12 -S 512 -s 1 -r 16
mmd -i "$tmp/pa-parents.img" ::/A ::/A/B
put pa-parents /A/B/f1.bin "x"
keep pa-parents fuzz_prealloc
mkfs pa-file-in-way 128 -F 12 -S 512 -s 1 -r 16
put pa-file-in-way /A "a file where a directory is wanted"
keep pa-file-in-way fuzz_prealloc

# exFAT (every target): 4 KiB alignment instead of mkfs.exfat's 1 MiB
# keeps FAT, bitmap, up-case table and root within the first 30 KiB.
# mkfs.exfat takes the serial number from the clock: tune.exfat sets a
# fixed one, so that the seeds are the same on every run.
mkexfat() {
	local name=$1 kib=$2
	shift 2
	rm -f "$tmp/$name.img"
	truncate -s "${kib}K" "$tmp/$name.img"
	mkfs.exfat -b 4096 "$@" "$tmp/$name.img" >/dev/null
	tune.exfat -I 0x5eed5eed "$tmp/$name.img" >/dev/null
}
exfill() {
	python3 "$exfatref" batch "$tmp/$1.img" <<'CMDS'
put "/A long Unicode name, ünïcödé ΣΊΣΥΦΟΣ.txt" --size 100 --pattern 0x61
mkdir /sub/deeper
put /sub/inner.bin --size 1500 --pattern 0x78
put /frag.bin --size 2000 --fragmented --pattern 0x66
put /nofat.bin --size 1200 --nofatchain --pattern 0x6e
put /chained.bin --size 1200 --fatchain --pattern 0x63
put /vdl.bin --size 2048 --vdl 100 --pattern 0x76
put /empty --size 0
CMDS
}
mkexfat exfat-empty 1024 -c 512 -L EMPTY
keep exfat-empty
mkexfat exfat-files 2048 -c 512 -L FILES
exfill exfat-files
keep exfat-files
mkexfat exfat-4k 4096 -c 4096
exfill exfat-4k
keep exfat-4k
# every damage the corruptor knows
for c in $(python3 "$exfatref" corrupt --list | awk '{print $1}'); do
	mkexfat "exfat-bad-$c" 2048 -c 512
	exfill "exfat-bad-$c"
	python3 "$exfatref" corrupt "$tmp/exfat-bad-$c.img" "$c" >/dev/null
	keep "exfat-bad-$c"
done

# fatprealloc's paths on exFAT.  mkfs.exfat takes the sector size from the
# device: 4 KiB sectors need a loop device with 4 KiB logical sectors
# (root).  Clusters of 32 KiB keep the cut small with files whose data is
# left zero (--vdl 0) and few directories.
mkexfat4k() {
	local name=$1 kib=$2 dev
	shift 2
	rm -f "$tmp/$name.img"
	truncate -s "${kib}K" "$tmp/$name.img"
	dev=$(losetup -f --show -b 4096 "$tmp/$name.img")
	mkfs.exfat -b 4096 "$@" "$dev" >/dev/null || {
		losetup -d "$dev"
		exit 1
	}
	losetup -d "$dev"
	tune.exfat -I 0x5eed5eed "$tmp/$name.img" >/dev/null
}
exbatch() {
	local n=$1
	python3 "$exfatref" batch "$tmp/$n.img"
}
# unmark NAME PATH: clear the bitmap bit of PATH's last cluster, which
# stays in use (the damage a writer can allocate again).
unmark() {
	python3 - "$exfatref" "$tmp/$1.img" "$2" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("exfatref", sys.argv[1])
x = importlib.util.module_from_spec(spec)
spec.loader.exec_module(x)
v = x.Volume(sys.argv[2], write=True)
_, e, _ = v.resolve(sys.argv[3])
clusters, _ = v.clusters_of(e.first, e.dl, e.nofatchain)
v.set_bit(clusters[-1], 0)
v.flush()
v.f.close()
PY
}
mkexfat4k expa-4k-sectors 4096 -c 4096
exfill expa-4k-sectors
exbatch expa-4k-sectors <<'CMDS'
put /A/B/f1.bin --size 5000 --pattern 0x31
CMDS
keep expa-4k-sectors
mkexfat expa-32k-clusters 8192 -c 32K
exbatch expa-32k-clusters <<'CMDS'
put /A/B/f1.bin --size 40000 --vdl 0
put /other.bin --size 70000 --vdl 0 --fragmented
CMDS
keep expa-32k-clusters
# /A/B/f1.bin NoFatChain with a file right behind it, so that growing it
# ends the run; "/LONG NAME..." there already, empty
mkexfat expa-f1-nofatchain 2048 -c 512
exbatch expa-f1-nofatchain <<'CMDS'
put /A/B/f1.bin --size 1000 --nofatchain --pattern 0x31
put /A/B/after.bin --size 600 --pattern 0x32
put "/LONG NAME with many characters.txt" --size 0
CMDS
keep expa-f1-nofatchain
# /A/B/f1.bin FAT-chained and fragmented; "/LONG NAME..." longer than asked
mkexfat expa-f1-chained 2048 -c 512
exbatch expa-f1-chained <<'CMDS'
put /A/B/f1.bin --size 1500 --fragmented --pattern 0x31
put "/LONG NAME with many characters.txt" --size 2048 --pattern 0x4c
CMDS
keep expa-f1-chained
# /A/B and the root full (a 512-byte cluster holds 16 entries, a short
# name takes 3): both must grow, /A/B from a NoFatChain cluster
mkexfat expa-dirs-full 2048 -c 512 -L FULL
exbatch expa-dirs-full <<'CMDS'
put /A/B/b1 --size 10
put /A/B/b2 --size 10
put /A/B/b3 --size 10
put /A/B/b4 --size 10
put /A/B/b5 --size 10
put /r1 --size 10
put /r2 --size 10
put /r3 --size 10
CMDS
keep expa-dirs-full
# /A a file where a directory is wanted
mkexfat expa-file-in-way 1024 -c 512
exbatch expa-file-in-way <<'CMDS'
put /A --size 40 --pattern 0x41
CMDS
keep expa-file-in-way
# damage on the paths: f1.bin's last cluster marked free; /A/B's chain
# links to a free entry; other damage beside them
cp "$tmp/expa-f1-nofatchain.img" "$tmp/expa-bad-f1-marked-free.img"
unmark expa-bad-f1-marked-free /A/B/f1.bin
keep expa-bad-f1-marked-free
cp "$tmp/expa-f1-chained.img" "$tmp/expa-bad-chained-marked-free.img"
unmark expa-bad-chained-marked-free /A/B/f1.bin
keep expa-bad-chained-marked-free
for c in bitmap-missing chain-free-link cross-link bitmap-leak; do
	cp "$tmp/expa-f1-nofatchain.img" "$tmp/expa-bad-$c.img"
	python3 "$exfatref" corrupt "$tmp/expa-bad-$c.img" "$c" >/dev/null
	keep "expa-bad-$c"
done
