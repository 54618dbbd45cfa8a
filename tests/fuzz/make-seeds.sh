#!/usr/bin/env bash
# make-seeds.sh: (re)make the seed corpus of the fuzz targets, from images
# that tools we did not write made: mkfs.fat --invariant and mtools, and
# tests/helpers/corrupt.py for a few typical kinds of damage; exFAT seeds
# from mkfs.exfat (exfatprogs), filled and damaged by
# tests/helpers/exfatref.py.
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

# exFAT (fuzz_ls and fuzz_check): 4 KiB alignment instead of mkfs.exfat's
# 1 MiB keeps FAT, bitmap, up-case table and root within the first 30 KiB.
exfat_targets=(fuzz_ls fuzz_check)
mkexfat() {
	local name=$1 kib=$2
	shift 2
	rm -f "$tmp/$name.img"
	truncate -s "${kib}K" "$tmp/$name.img"
	mkfs.exfat -b 4096 "$@" "$tmp/$name.img" >/dev/null
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
keep exfat-empty "${exfat_targets[@]}"
mkexfat exfat-files 2048 -c 512 -L FILES
exfill exfat-files
keep exfat-files "${exfat_targets[@]}"
mkexfat exfat-4k 4096 -c 4096
exfill exfat-4k
keep exfat-4k "${exfat_targets[@]}"
for c in boot-checksum backup-differs set-checksum secondary-count \
	name-length unknown-critical-secondary entry-type-80 chain-loop \
	cross-link nofatchain-past-heap upcase-checksum bitmap-too-small \
	directory-loop label-length; do
	mkexfat "exfat-bad-$c" 2048 -c 512
	exfill "exfat-bad-$c"
	python3 "$exfatref" corrupt "$tmp/exfat-bad-$c.img" "$c" >/dev/null
	keep "exfat-bad-$c" "${exfat_targets[@]}"
done
