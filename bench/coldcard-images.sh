#!/usr/bin/env bash
# bench/coldcard-images.sh: build (once, cached in bench/out/, which git
# ignores) the sparse images bench/coldcard.sh runs on:
#
#   coldcard-fat32.img  FAT32, 16 GiB, 4 KiB clusters, 20,000 files of 1.5
#                       to 24 KB with long names in 100 directories, copied
#                       in by mcopy (the 16g-4k shape of bench/fatcheck.sh)
#   coldcard-exfat.img  exFAT, 64 GiB, mkfs.exfat's 128 KiB clusters, the
#                       same 20,000 files written by tests/helpers/exfatref.py
#                       (the 64g-default shape of bench/fatcheck-exfat.sh)
#   coldcard-fresh.img  FAT32, 16 GiB, 4 KiB clusters, empty (fatprealloc)
#   coldcard-fresh-exfat.img  exFAT, 64 GiB, 128 KiB clusters, empty
#   coldcard-seed.img   FAT32, 4.5 GiB, 512-byte clusters, empty (the
#                       seed's row of bench/prealloc.sh: 36 MiB of FAT)
#   coldcard-seed-exfat.img  exFAT, 4.5 GiB, 512-byte clusters, empty
#
#   bench/coldcard-images.sh [--rebuild]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/out
REF=tests/helpers/exfatref.py
export MTOOLS_SKIP_CHECK=1 MTOOLSRC=/dev/null LC_ALL=C.UTF-8 TZ=UTC
export SOURCE_DATE_EPOCH=1767225600

# make_tree DIR: "Dir NNN/File NNNNN.dat", sizes 1500 to 24000 bytes.
make_tree()
{
	local tree=$1 d
	for ((d = 0; d < 100; d++)); do
		mkdir -p "$tree/Dir $(printf %03d "$d")"
		(cd "$tree/Dir $(printf %03d "$d")" && awk -v per=200 -v d="$d" '
		BEGIN {
			for (f = 0; f < per; f++) {
				name = sprintf("File %05d.dat", f)
				n = (f % 16 + 1) * 1500
				line = sprintf("%03d/%05d ", d, f)
				s = ""
				while (length(s) < n)
					s = s line
				printf "%s", substr(s, 1, n) > name
				close(name)
			}
		}')
	done
}

# exFAT: the same shape through the reference writer.
batch_lines()
{
	awk 'BEGIN {
		for (d = 0; d < 100; d++) {
			printf "mkdir '\''/Dir %03d'\''\n", d
			for (f = 0; f < 200; f++)
				printf "put '\''/Dir %03d/File %05d.dat'\'' --size %d\n",
					d, d * 200 + f, (f % 16 + 1) * 1500
		}
	}'
}

# fat32 IMG FILL [SECTORS_PER_CLUSTER KIB]
fat32()
{
	local img=$1 fill=$2 spc=${3:-8} kib=${4:-$((16 * 1024 * 1024))}
	echo "coldcard-images.sh: building $img (one-off)" >&2
	rm -f "$img.tmp"
	mkfs.fat --invariant -S 512 -F 32 -s "$spc" -C "$img.tmp" "$kib" \
		>/dev/null
	if ((fill)); then
		tmp=$(mktemp -d)
		make_tree "$tmp"
		mcopy -s -Q -m -i "$img.tmp" "$tmp"/* ::/
		rm -rf "$tmp"
	fi
	mv "$img.tmp" "$img"
}

# exfat IMG FILL [SIZE CLUSTER]
exfat()
{
	local img=$1 fill=$2 size=${3:-64G}
	local -a opt=()
	[[ -z ${4:-} ]] || opt=(-c "$4")
	echo "coldcard-images.sh: building $img (one-off)" >&2
	rm -f "$img.tmp"
	truncate -s "$size" "$img.tmp"
	mkfs.exfat "${opt[@]}" -L bench "$img.tmp" >/dev/null
	((fill)) && batch_lines | python3 "$REF" batch "$img.tmp"
	mv "$img.tmp" "$img"
}

mkdir -p "$OUT"
if [[ ${1:-} == --rebuild ]]; then
	rm -f "$OUT"/coldcard-*.img
fi
[[ -f $OUT/coldcard-fresh.img ]] || fat32 "$OUT/coldcard-fresh.img" 0
[[ -f $OUT/coldcard-fresh-exfat.img ]] ||
	exfat "$OUT/coldcard-fresh-exfat.img" 0
[[ -f $OUT/coldcard-exfat.img ]] || exfat "$OUT/coldcard-exfat.img" 1
[[ -f $OUT/coldcard-fat32.img ]] || fat32 "$OUT/coldcard-fat32.img" 1
[[ -f $OUT/coldcard-seed.img ]] ||
	fat32 "$OUT/coldcard-seed.img" 0 1 $((4608 * 1024))
[[ -f $OUT/coldcard-seed-exfat.img ]] ||
	exfat "$OUT/coldcard-seed-exfat.img" 0 4608M 512
