/*
 * exfat-boot.c: the exFAT boot region judged field by field (Microsoft's
 * exFAT specification, section 3): the main boot sector's fields, the
 * layout they describe, the extended signatures, the boot checksum and
 * the backup region.  Pure: the caller reads the bytes (exfat.c at open,
 * the checker again), and every defect is a bit, never acted on here.
 */
#include "exfat/exfat-boot.h"

#include <inttypes.h>
#include <string.h>

#include "exfat/exfat-layout.h"
#include "lib/diag.h"
#include "lib/endian.h"

#define EXT_SIG	    0xAA550000u /* last 4 bytes of sectors 1 .. 8 */
#define MIN_VOL_LEN (1u << 20)	/* spec 3.1.6: at least 1 MiB */
#define MAX_NCLUS   0xFFFFFFF5u

int fk_exfat_detect(const unsigned char *bs)
{
	return !memcmp(bs + EB_NAME, "EXFAT   ", 8);
}

void fk_exfat_set_dirty(unsigned char *bs, int is_dirty)
{
	uint16_t f = get_le16(bs + EB_FLAGS);

	f = is_dirty ? (uint16_t)(f | FK_EXFAT_FLAG_DIRTY)
		     : (uint16_t)(f & ~FK_EXFAT_FLAG_DIRTY);
	put_le16(bs + EB_FLAGS, f);
}

/* fk_exfat_ror32_add() of bytes [@from, @to) of @p into @sum. */
static uint32_t sum_bytes(uint32_t sum, const unsigned char *p, uint64_t from,
			  uint64_t to)
{
	uint64_t i;

	for (i = from; i < to; i++)
		sum = fk_exfat_ror32_add(sum, p[i]);
	return sum;
}

/* sum_bytes() of @p and @q side by side: two chains in one loop. */
static void sum_bytes2(uint32_t *sp, uint32_t *sq, const unsigned char *p,
		       const unsigned char *q, uint64_t from, uint64_t to)
{
	uint32_t a = *sp, b = *sq;
	uint64_t i;

	for (i = from; i < to; i++) {
		a = fk_exfat_ror32_add(a, p[i]);
		b = fk_exfat_ror32_add(b, q[i]);
	}
	*sp = a;
	*sq = b;
}

/*
 * The boot checksums of a region and its backup, 11 sectors each: every
 * step waits for the one before, so the two chains together cost about
 * what one did alone (each open sums both).
 */
static void boot_checksums(const unsigned char *region, const unsigned char *bk,
			   uint32_t sec_len, uint32_t *csum, uint32_t *bk_csum)
{
	uint64_t n = (uint64_t)sec_len * 11;

	*csum = *bk_csum = 0;
	sum_bytes2(csum, bk_csum, region, bk, 0, EB_FLAGS);
	sum_bytes2(csum, bk_csum, region, bk, EB_FLAGS + 2, EB_PERCENT);
	sum_bytes2(csum, bk_csum, region, bk, EB_PERCENT + 1, n);
}

uint32_t fk_exfat_boot_checksum(const unsigned char *region, uint32_t sec_len,
				uint32_t nsecs)
{
	uint64_t n = (uint64_t)sec_len * nsecs;
	uint32_t sum;

	/* Every byte but VolumeFlags and PercentInUse (spec 3.4), in
	 * three runs rather than a test per byte: a checker sums four
	 * regions of 5.5 KiB or more before its first finding. */
	sum = sum_bytes(0, region, 0, n < EB_FLAGS ? n : EB_FLAGS);
	sum = sum_bytes(sum, region, EB_FLAGS + 2,
			n < EB_PERCENT ? n : EB_PERCENT);
	return sum_bytes(sum, region, EB_PERCENT + 1, n);
}

static const struct {
	uint32_t bit;
	const char *why;
} boot_reasons[] = {
	{FK_EXB_SIGNATURE, "boot signature 0xAA55 is missing"},
	{FK_EXB_NAME, "file system name is not \"EXFAT   \""},
	{FK_EXB_JUMP, "JumpBoot is not EB 76 90"},
	{FK_EXB_MBZ, "MustBeZero bytes 11-63 are not zero"},
	{FK_EXB_SEC_SHIFT, "BytesPerSectorShift is not 9 to 12"},
	{FK_EXB_CLUS_SHIFT,
	 "SectorsPerClusterShift makes clusters over 32 MiB"},
	{FK_EXB_NFATS, "NumberOfFats is not 1 or 2"},
	{FK_EXB_VOL_LEN, "VolumeLength is out of range"},
	{FK_EXB_NCLUS, "ClusterCount is out of range"},
	{FK_EXB_FAT_OFF, "FatOffset is out of range"},
	{FK_EXB_FAT_LEN, "FatLength is out of range"},
	{FK_EXB_HEAP_OFF, "ClusterHeapOffset is out of range"},
	{FK_EXB_ROOT_CLUS, "FirstClusterOfRootDirectory is out of range"},
	{FK_EXB_REVISION, "FileSystemRevision is not 1.x"},
	{FK_EXB_ACTIVE_FAT, "VolumeFlags name the second FAT of one"},
	{FK_EXB_PERCENT, "PercentInUse is over 100"},
	{FK_EXB_CHECKSUM, "boot checksum mismatch"},
	{FK_EXB_EXT_SIG, "an extended boot sector lacks its signature"},
	{FK_EXB_BACKUP, "backup boot region differs from the main one"},
	{FK_EXB_BACKUP_CHECKSUM, "backup boot checksum mismatch"},
	{FK_EXB_TRUNCATED, "image is truncated: no complete boot region"},
};

/* The defect of @defects that is reported first (table order). */
static uint32_t first_defect(uint32_t defects)
{
	size_t i;

	for (i = 0; i < sizeof(boot_reasons) / sizeof(boot_reasons[0]); i++)
		if (defects & boot_reasons[i].bit)
			return boot_reasons[i].bit;
	return 0;
}

const char *fk_exfat_boot_reason(uint32_t defects)
{
	uint32_t bit = first_defect(defects);
	size_t i;

	for (i = 0; i < sizeof(boot_reasons) / sizeof(boot_reasons[0]); i++)
		if (bit == boot_reasons[i].bit)
			return boot_reasons[i].why;
	return "";
}

static void read_fields(const unsigned char *bs, struct fk_exfat_boot *b)
{
	memcpy(b->jump, bs + EB_JUMP, 3);
	memcpy(b->fs_name, bs + EB_NAME, 8);
	b->fs_name[8] = '\0';
	b->part_off = get_le64(bs + EB_PART_OFF);
	b->vol_len = get_le64(bs + EB_VOL_LEN);
	b->fat_off = get_le32(bs + EB_FAT_OFF);
	b->fat_len = get_le32(bs + EB_FAT_LEN);
	b->heap_off = get_le32(bs + EB_HEAP_OFF);
	b->nclus = get_le32(bs + EB_NCLUS);
	b->root_clus = get_le32(bs + EB_ROOT_CLUS);
	b->serial = get_le32(bs + EB_SERIAL);
	b->revision = (uint16_t)get_le16(bs + EB_REVISION);
	b->vol_flags = (uint16_t)get_le16(bs + EB_FLAGS);
	b->sec_shift = bs[EB_SEC_SHIFT];
	b->clus_shift = bs[EB_CLUS_SHIFT];
	b->nfats = bs[EB_NFATS];
	b->drive_sel = bs[EB_DRIVE_SEL];
	b->percent_in_use = bs[EB_PERCENT];
	b->boot_sig = (uint16_t)get_le16(bs + EB_BOOT_SIG);
}

static int is_zero(const unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

/*
 * The layout rules of spec 3.1.5 - 3.1.10, each a defect of its own.
 * Later rules lean on earlier ones only where the earlier field is sound.
 */
static void judge_layout(struct fk_exfat_boot *b, uint64_t dev_len)
{
	uint64_t fats_end, heap_secs;
	uint32_t sec_len, clus_secs, fat_need;

	if (b->sec_shift < 9 || b->sec_shift > 12) {
		b->defects |= FK_EXB_SEC_SHIFT;
		return; /* nothing below can be measured */
	}
	sec_len = 1u << b->sec_shift;
	if (b->clus_shift > 25 - b->sec_shift) {
		b->defects |= FK_EXB_CLUS_SHIFT;
		return;
	}
	clus_secs = 1u << b->clus_shift;
	if (b->nfats != 1 && b->nfats != 2)
		b->defects |= FK_EXB_NFATS;
	if (b->vol_len < MIN_VOL_LEN / sec_len ||
	    (dev_len && b->vol_len > dev_len / sec_len))
		b->defects |= FK_EXB_VOL_LEN;
	if (b->fat_off < 24 || b->fat_off >= b->vol_len)
		b->defects |= FK_EXB_FAT_OFF;
	heap_secs = b->heap_off < b->vol_len ? b->vol_len - b->heap_off : 0;
	if (!b->nclus || b->nclus > MAX_NCLUS ||
	    b->nclus > heap_secs / clus_secs)
		b->defects |= FK_EXB_NCLUS;
	fats_end = b->fat_off + (uint64_t)b->fat_len * (b->nfats == 2 ? 2 : 1);
	/* A FAT too small for a ClusterCount that is itself wrong is the
	 * count's defect, not the FAT's. */
	fat_need = (uint32_t)(((uint64_t)b->nclus + 2) * 4 / sec_len +
			      (((uint64_t)b->nclus + 2) * 4 % sec_len != 0));
	if (!b->fat_len ||
	    (!(b->defects & FK_EXB_NCLUS) && b->fat_len < fat_need))
		b->defects |= FK_EXB_FAT_LEN;
	if (b->heap_off < fats_end || b->heap_off >= b->vol_len)
		b->defects |= FK_EXB_HEAP_OFF;
	if (b->root_clus < 2 || b->root_clus - 2 >= b->nclus)
		b->defects |= FK_EXB_ROOT_CLUS;
	if (b->revision >> 8 != 1)
		b->defects |= FK_EXB_REVISION;
	if ((b->vol_flags & FK_EXFAT_FLAG_ACTIVE_FAT) && b->nfats == 1)
		b->defects |= FK_EXB_ACTIVE_FAT;
	if (b->percent_in_use > 100 && b->percent_in_use != 0xFF)
		b->defects |= FK_EXB_PERCENT;
}

/* Sectors 1 .. 11 and the backup: what can only be judged in full. */
static void judge_region(const unsigned char *region, size_t len,
			 struct fk_exfat_boot *b)
{
	uint32_t sec_len = 1u << b->sec_shift, i;
	const unsigned char *csum, *bk;

	if (len < (size_t)FK_EXFAT_REGION_SECS * sec_len) {
		b->defects |= FK_EXB_TRUNCATED;
		return;
	}
	for (i = 1; i <= 8; i++)
		if (get_le32(region + (size_t)(i + 1) * sec_len - 4) != EXT_SIG)
			b->ext_sig_bad |= 1u << (i - 1);
	if (b->ext_sig_bad)
		b->defects |= FK_EXB_EXT_SIG;
	bk = region + (size_t)FK_EXFAT_BACKUP_SEC * sec_len;
	if (len >= (size_t)2 * FK_EXFAT_REGION_SECS * sec_len)
		boot_checksums(region, bk, sec_len, &b->csum_computed,
			       &b->backup_csum_computed);
	else
		b->csum_computed = fk_exfat_boot_checksum(region, sec_len, 11);
	csum = region + (size_t)FK_EXFAT_CSUM_SEC * sec_len;
	b->csum_stored = get_le32(csum);
	/* Sector 11 is the checksum repeated: every word must agree. */
	for (i = 0; i < sec_len; i += 4)
		if (get_le32(csum + i) != b->csum_computed)
			b->defects |= FK_EXB_CHECKSUM;
	if (len < (size_t)2 * FK_EXFAT_REGION_SECS * sec_len)
		return; /* no backup to compare (a checker reads it itself) */
	b->backup_csum_stored = get_le32(bk + (size_t)11 * sec_len);
	for (i = 0; i < sec_len; i += 4)
		if (get_le32(bk + (size_t)11 * sec_len + i) !=
		    b->backup_csum_computed)
			b->defects |= FK_EXB_BACKUP_CHECKSUM;
	for (i = 0; i < FK_EXFAT_REGION_SECS; i++) {
		const unsigned char *m = region + (size_t)i * sec_len;
		const unsigned char *k = bk + (size_t)i * sec_len;
		uint32_t j;

		if (i && !memcmp(m, k, sec_len))
			continue; /* the usual case, without a test per byte */
		for (j = 0; j < sec_len; j++) {
			/* VolumeFlags and PercentInUse may differ (3.1.13):
			 * only the main copy is kept current. */
			if (i == 0 && (j == EB_FLAGS || j == EB_FLAGS + 1 ||
				       j == EB_PERCENT))
				continue;
			if (m[j] != k[j])
				break;
		}
		/* The checksum sector follows the fields it sums. */
		if (j < sec_len && i != FK_EXFAT_CSUM_SEC) {
			b->defects |= FK_EXB_BACKUP;
			b->backup_diff_sec = i;
			break;
		}
	}
}

/* The reason for fatal defect @bit, with the values that make it one. */
static void explain(const struct fk_exfat_boot *b, uint32_t bit,
		    uint64_t dev_len, struct fk_diag *diag)
{
	const char *why = fk_exfat_boot_reason(bit);

	switch (bit) {
	case FK_EXB_SEC_SHIFT:
		fk_diag_set(diag, NULL,
			    "bad exFAT boot sector: BytesPerSectorShift %u is "
			    "not 9 to 12",
			    b->sec_shift);
		return;
	case FK_EXB_CLUS_SHIFT:
		fk_diag_set(diag, NULL,
			    "bad exFAT boot sector: SectorsPerClusterShift %u "
			    "makes clusters over 32 MiB",
			    b->clus_shift);
		return;
	case FK_EXB_NFATS:
		fk_diag_set(diag, NULL,
			    "bad exFAT boot sector: NumberOfFats %u is not 1 "
			    "or 2",
			    b->nfats);
		return;
	case FK_EXB_VOL_LEN:
		if (dev_len && b->vol_len > dev_len >> b->sec_shift &&
		    b->vol_len >= MIN_VOL_LEN >> b->sec_shift) {
			fk_diag_set(diag, NULL,
				    "image is truncated: the volume needs "
				    "%" PRIu64 " bytes, the image has %" PRIu64,
				    b->vol_len << b->sec_shift, dev_len);
			return;
		}
		fk_diag_set(diag, NULL,
			    "bad exFAT boot sector: VolumeLength %" PRIu64
			    " sectors is under 1 MiB",
			    b->vol_len);
		return;
	case FK_EXB_NCLUS:
		fk_diag_set(
			diag, NULL,
			"bad exFAT boot sector: ClusterCount %" PRIu32
			" is out of range (the cluster heap holds %" PRIu64 ")",
			b->nclus,
			b->heap_off < b->vol_len
				? (b->vol_len - b->heap_off) >> b->clus_shift
				: 0);
		return;
	case FK_EXB_FAT_OFF:
		fk_diag_set(diag, NULL,
			    "bad exFAT boot sector: FatOffset %" PRIu32
			    " is out of range (24 to %" PRIu64 ")",
			    b->fat_off, b->vol_len);
		return;
	case FK_EXB_FAT_LEN:
		fk_diag_set(diag, NULL,
			    "bad exFAT boot sector: FatLength %" PRIu32
			    " sectors is out of range for %" PRIu32
			    " clusters before heap offset %" PRIu32,
			    b->fat_len, b->nclus, b->heap_off);
		return;
	case FK_EXB_HEAP_OFF:
		fk_diag_set(diag, NULL,
			    "bad exFAT boot sector: ClusterHeapOffset %" PRIu32
			    " is out of range",
			    b->heap_off);
		return;
	case FK_EXB_ROOT_CLUS:
		fk_diag_set(
			diag, NULL,
			"bad exFAT boot sector: FirstClusterOfRootDirectory "
			"%" PRIu32 " is out of range (2 to %" PRIu64 ")",
			b->root_clus, (uint64_t)b->nclus + 1);
		return;
	case FK_EXB_REVISION:
		fk_diag_set(diag, NULL,
			    "bad exFAT boot sector: FileSystemRevision %u.%02u "
			    "is not 1.x",
			    b->revision >> 8, b->revision & 0xFFu);
		return;
	default:
		fk_diag_set(diag, NULL, "bad exFAT boot sector: %s", why);
	}
}

int fk_exfat_boot_parse(const unsigned char *region, size_t len,
			uint64_t dev_len, struct fk_exfat_boot *b,
			struct fk_diag *diag)
{
	uint32_t fatal;

	memset(b, 0, sizeof(*b));
	if (len < 512) {
		b->defects = FK_EXB_TRUNCATED;
		fk_diag_set(diag, NULL, "exFAT boot sector: %s",
			    fk_exfat_boot_reason(b->defects));
		return FK_ECORRUPT;
	}
	read_fields(region, b);
	if (!fk_exfat_detect(region))
		b->defects |= FK_EXB_NAME;
	if (b->boot_sig != 0xAA55)
		b->defects |= FK_EXB_SIGNATURE;
	if (memcmp(b->jump, "\xEB\x76\x90", 3))
		b->defects |= FK_EXB_JUMP;
	if (!is_zero(region + EB_MBZ, EB_MBZ_LEN))
		b->defects |= FK_EXB_MBZ;
	judge_layout(b, dev_len);
	if (!(b->defects & (FK_EXB_SEC_SHIFT | FK_EXB_CLUS_SHIFT)))
		judge_region(region, len, b);
	fatal = b->defects & FK_EXFAT_BOOT_FATAL;
	if (!fatal)
		return 0;
	explain(b, first_defect(fatal), dev_len, diag);
	return FK_ECORRUPT;
}
