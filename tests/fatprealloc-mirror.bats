#!/usr/bin/env bats
# fatprealloc-mirror.bats: the FAT writer copies each FAT sector it
# changes to every mirrored copy, so before its first write it checks that
# the copies agree in every sector it will write.  A zeroed sector of copy
# 1 under a file (copy 2 intact) calls the file's clusters free: taking
# them would destroy the file and copy 2's good sector with it.  Judges:
# sha256sum for "wrote nothing", mcopy (the file's bytes), fsck.fat -n,
# the FAT copies' bytes read with dd.

load helpers/common

CORRUPT=$FATKIT_HELPERS/corrupt.py
FILE=/DCIM/A.JPG

# Small images whose file's chain reaches past FAT sector 0 (512-byte
# clusters, 586 of them).
setup_file()
{
	cd "$BATS_FILE_TMPDIR" || return 1
	gen_bytes 300000 a.jpg >a.jpg || return 1
	local t
	for t in 12 16 32; do
		mkimg_dcim $t "base$t.img" a.jpg "::$FILE" || return 1
	done
}

use()
{
	cp "$BATS_FILE_TMPDIR/base$1.img" img
}

file_intact()
{
	mcopy -n -i img "::$FILE" got.jpg && cmp got.jpg "$BATS_FILE_TMPDIR/a.jpg"
}

# fat_sector COPY SEC: sector SEC of FAT copy COPY (from 1), as hex.
fat_sector()
{
	local rsvd fat_secs
	rsvd=$(fat_geometry img | sed -n 's/^rsvd_secs=//p') &&
		fat_secs=$(fat_geometry img | sed -n 's/^fat_secs=//p') &&
		dd if=img bs=512 skip=$((rsvd + ($1 - 1) * fat_secs + $2)) \
			count=1 status=none | od -An -tx1 -v | tr -d ' \n'
}

# A zeroed sector of copy 1 under the file: the new file would take the
# file's clusters.  Refused, image unchanged; fatcheck -r keeps copy 2;
# then the same run succeeds and fsck.fat is clean.
zeroed_read_copy()
{
	use "$1"
	"$FK_PYTHON" "$CORRUPT" img fat-sector-zero 0 "$FILE" >/dev/null
	# FAT32 starts its search at the FSInfo hint, past the file: a hint
	# past the end starts it at the first free cluster, as on FAT16.
	if [ "$1" = 32 ]; then
		"$FK_PYTHON" "$CORRUPT" img fsinfo-next >/dev/null
	fi
	local before
	before=$(img_sha img)
	run "$FATKIT_BUILD/fatprealloc" img /NEW.BIN 50K
	[ "$status" -eq 1 ]
	[ "$output" = "fatprealloc: img: FAT copies 1 and 2 differ in sector 1 (of the FAT), which this run would write; run 'fatcheck -r img'" ]
	[ "$(img_sha img)" = "$before" ]
	run "$FATKIT_BUILD/fatcheck" -r img
	[ "$status" -eq 1 ]
	[[ $output == *"FAT copy 2 kept for sectors 1-1"* ]]
	file_intact
	fat_copies_equal img
	run "$FATKIT_BUILD/fatprealloc" img /NEW.BIN 50K
	[ "$status" -eq 0 ]
	fsck_clean img
	file_intact
	[ "$(mdir -i img -b ::/NEW.BIN)" = "::/NEW.BIN" ]
}

@test "fatprealloc FAT12: refuses to write a FAT sector whose copies differ (entries straddle sectors)" {
	zeroed_read_copy 12
}

@test "fatprealloc FAT16: refuses to write a FAT sector whose copies differ" {
	zeroed_read_copy 16
}

@test "fatprealloc FAT32: refuses to write a FAT sector whose copies differ" {
	zeroed_read_copy 32
}

@test "fatprealloc: copies that differ only where the run does not write do not block it" {
	use 16
	# Copy 2 zeroed under the file; the run reads copy 1 (intact) and
	# writes past the file.
	"$FK_PYTHON" "$CORRUPT" img fat-sector-zero 1 "$FILE" >/dev/null
	local zeros
	zeros=$(fat_sector 2 1)
	[ "$zeros" = "$(printf '0%.0s' $(seq 1024))" ]
	run "$FATKIT_BUILD/fatprealloc" img /NEW.BIN 50K
	[ "$status" -eq 0 ]
	file_intact
	[ "$(fat_sector 2 1)" = "$zeros" ]
	[ "$(mdir -i img -b ::/NEW.BIN)" = "::/NEW.BIN" ]
}

@test "fatprealloc: a difference where the new chain goes is refused too" {
	use 16
	# Copy 2's sector 3 (clusters 768-1023, free) holds junk: the run
	# would overwrite it with copy 1's.
	local rsvd fat_secs before
	rsvd=$(fat_geometry img | sed -n 's/^rsvd_secs=//p')
	fat_secs=$(fat_geometry img | sed -n 's/^fat_secs=//p')
	printf 'junk' | dd of=img bs=1 seek=$(((rsvd + fat_secs + 3) * 512 + 100)) \
		conv=notrunc status=none
	before=$(img_sha img)
	run "$FATKIT_BUILD/fatprealloc" img /NEW.BIN 300K
	[ "$status" -eq 1 ]
	[[ $output == *"FAT copies 1 and 2 differ in sector 3 (of the FAT)"* ]]
	[ "$(img_sha img)" = "$before" ]
	# A run that stays clear of it goes ahead.
	run "$FATKIT_BUILD/fatprealloc" img /SMALL.BIN 10K
	[ "$status" -eq 0 ]
	file_intact
}

@test "fatprealloc FAT32 with mirroring off: only the active copy is written, nothing to compare" {
	use 32
	# ext_flags (offset 40) 0x80: mirroring off, copy 1 active; in the
	# backup boot sector (sector 6) too.
	printf '\x80' | dd of=img bs=1 seek=40 conv=notrunc status=none
	printf '\x80' | dd of=img bs=1 seek=$((6 * 512 + 40)) conv=notrunc status=none
	local rsvd fat_secs copy2
	rsvd=$(fat_geometry img | sed -n 's/^rsvd_secs=//p')
	fat_secs=$(fat_geometry img | sed -n 's/^fat_secs=//p')
	# Copy 2 differs where the new chain goes (sector 4: clusters 512-639).
	printf 'junk' | dd of=img bs=1 seek=$(((rsvd + fat_secs + 4) * 512 + 100)) \
		conv=notrunc status=none
	copy2=$(dd if=img bs=512 skip=$((rsvd + fat_secs)) count="$fat_secs" \
		status=none | sha256sum)
	run "$FATKIT_BUILD/fatprealloc" img /NEW.BIN 300K
	[ "$status" -eq 0 ]
	[ "$(dd if=img bs=512 skip=$((rsvd + fat_secs)) count="$fat_secs" \
		status=none | sha256sum)" = "$copy2" ]
	file_intact
	run "$FATKIT_BUILD/fatls" --chain img /NEW.BIN
	[ "$status" -eq 0 ]
	[[ $output == *"fragments=1"* ]]
}
