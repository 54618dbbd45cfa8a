/*
 * check-exfat.c: the checker's exFAT family.  The boot regions are judged
 * from the defects exfat.c records; a walk of the directory tree then
 * claims every stream (allocation bitmap, up-case table, directories,
 * files) in an ownership map of one bit per cluster, so a loop or a
 * second owner shows at the first shared cluster; the allocation bitmap
 * (one more bit per cluster) is then compared with that map both ways.
 * Two bits per cluster in all, plus one entry set per level of nesting,
 * and a record of each claim (20 bytes, and each entry's name once) so
 * that findings can name the files that own the clusters they are about.
 *
 * Repairs are planned while checking as small records (FAT links to end,
 * entry sets to rewrite whole) and applied by fk_check_repair() in the
 * order exFAT asks for: VolumeDirty set first; FAT links; bitmap bits a
 * used cluster lacks; entry sets; bitmap bits nobody owns any more;
 * boot region and PercentInUse; fsync; VolumeDirty cleared; fsync.  A
 * crash anywhere leaves at worst bits set for clusters nobody owns, a
 * chain shorter than its DataLength, or a stale checksum: all of which a
 * second run repairs, and none of which hides or damages a file.
 */
#include "exfat/check-exfat-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-boot.h"
#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"
#include "io/cache.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "table/fat.h"
#include "volume/volume.h"

/* ---- boot region --------------------------------------------------------- */

static const uint32_t boot_bits[] = {
	FK_EXB_SIGNATURE,  FK_EXB_JUMP,	      FK_EXB_MBZ,     FK_EXB_SEC_SHIFT,
	FK_EXB_CLUS_SHIFT, FK_EXB_NFATS,      FK_EXB_FAT_OFF, FK_EXB_FAT_LEN,
	FK_EXB_HEAP_OFF,   FK_EXB_NCLUS,      FK_EXB_VOL_LEN, FK_EXB_ROOT_CLUS,
	FK_EXB_REVISION,   FK_EXB_ACTIVE_FAT, FK_EXB_PERCENT, FK_EXB_CHECKSUM,
	FK_EXB_EXT_SIG,	   FK_EXB_TRUNCATED,
};

/*
 * The boot regions, read and judged afresh (the volume's copy is as it
 * was at open: the check after a repair must see the repair).
 */
static int check_boot(struct fk_exfat_check *x)
{
	const struct fk_exfat_boot *b = &x->boot;
	uint32_t sec_len = x->g->sec_len, main_bad, i;
	size_t idx, region_len = (size_t)FK_EXFAT_REGION_SECS * sec_len;
	struct fk_exfat_boot bb;
	unsigned char *both;
	int err, is_backup_ok;

	x->sec0 = malloc(sec_len);
	x->backup = malloc(region_len);
	both = malloc(2 * region_len);
	if (!x->sec0 || !x->backup || !both) {
		free(both);
		return -ENOMEM;
	}
	if ((err = fk_device_read(x->vol->dev, 0, both, 2 * region_len))) {
		free(both);
		return err;
	}
	memcpy(x->sec0, both, sec_len);
	memcpy(x->backup, both + region_len, region_len);
	fk_exfat_boot_parse(both, 2 * region_len, fk_device_len(x->vol->dev),
			    &x->boot, NULL);
	free(both);
	fk_exfat_boot_parse(x->backup, region_len, fk_device_len(x->vol->dev),
			    &bb, NULL);
	is_backup_ok =
		!(bb.defects & ~(FK_EXB_BACKUP | FK_EXB_BACKUP_CHECKSUM)) &&
		(1u << bb.sec_shift) == sec_len;
	/* PercentInUse is outside the checksum, and set from the bitmap by
	 * any repair that finds it wrong (exck_check_bitmap()). */
	main_bad = b->defects &
		   ~(FK_EXB_BACKUP | FK_EXB_BACKUP_CHECKSUM | FK_EXB_PERCENT);
	for (i = 0; i < sizeof(boot_bits) / sizeof(boot_bits[0]); i++) {
		if (!(b->defects & boot_bits[i]))
			continue;
		idx = ck_report(x->ck, FK_SEV_ERROR, "boot", NULL,
				"main boot region: %s",
				fk_exfat_boot_reason(boot_bits[i]));
		if (boot_bits[i] == FK_EXB_PERCENT) {
			ck_set_fix(x->ck, idx,
				   "set from the allocation bitmap");
			x->fix_percent = 1;
		} else if (is_backup_ok)
			ck_set_fix(x->ck, idx,
				   "restored from the backup region");
		else if (boot_bits[i] == FK_EXB_CHECKSUM &&
			 main_bad == FK_EXB_CHECKSUM)
			ck_set_fix(x->ck, idx, "checksum rewritten");
	}
	if (main_bad && is_backup_ok)
		x->restore_main = 1;
	else if (main_bad == FK_EXB_CHECKSUM)
		x->fix_main_csum = 1;
	/* A main region that is sound, or will be once its checksum is
	 * rewritten, is the model for a bad backup. */
	if ((!main_bad || x->fix_main_csum) &&
	    (b->defects & (FK_EXB_BACKUP | FK_EXB_BACKUP_CHECKSUM))) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "backup-boot", NULL,
				"backup boot region %s",
				b->defects & FK_EXB_BACKUP_CHECKSUM
					? "has a wrong checksum"
					: "differs from the main one");
		ck_set_fix(x->ck, idx, "rewritten from the main region");
		x->fix_backup = 1;
	}
	if (b->vol_flags & FK_EXFAT_FLAG_DIRTY) {
		/* A warning: Linux sets it while mounted, and a card pulled
		 * out keeps it; the checks below say whether harm was done. */
		idx = ck_report(
			x->ck, FK_SEV_WARNING, "dirty", NULL,
			"VolumeDirty is set: the volume was not cleanly "
			"removed");
		ck_set_fix(x->ck, idx, "flag cleared");
	}
	if (b->vol_flags & FK_EXFAT_FLAG_MEDIA_FAIL)
		ck_report(x->ck, FK_SEV_WARNING, "media-failure", NULL,
			  "MediaFailure is set: a driver met I/O errors on "
			  "this medium");
	if (x->restore_main || x->fix_main_csum || x->fix_backup)
		x->st->has_repairs = 1;
	return 0;
}

/*
 * FAT[0] and FAT[1] (spec 4.1.1, 4.1.2): the media descriptor under all
 * ones, and all ones.  No reader uses them, but they are the spec's, and
 * a FAT whose first entries are not even that is suspect as a whole.
 */
static int check_fat_reserved(struct fk_exfat_check *x)
{
	const unsigned char *sec0;
	struct fk_fat_reserved r;
	struct fk_fat_fix f;
	uint32_t v0, v1, first, nsecs;
	size_t idx;
	int err;

	/* From the span the open's chain walks read (the up-case table's
	 * links are in it on a formatted volume), not 32 KiB read again
	 * into the cache's slots for two entries. */
	if ((err = fk_cache_get_span(x->vol->fat, 0, &sec0, &first, &nsecs)))
		return err == FK_ECORRUPT ? 0 : err;
	v0 = get_le32(sec0);
	v1 = get_le32(sec0 + 4);
	fk_fat_reserved_judge(x->g, v0, v1, &r);
	if (v0 >> 8 != 0xFFFFFF) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "fat0", NULL,
				"FatEntry[0] is 0x%08X, not 0x%08X", v0,
				r.want0);
		ck_set_fix(x->ck, idx, "set to 0x%08X", r.want0);
		f.clus = 0;
		f.val = r.want0;
		if ((err = PUSH(x->fat_fixes, f)))
			return err;
	}
	if (v1 != r.want1) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "fat0", NULL,
				"FatEntry[1] is 0x%08X, not 0x%08X", v1,
				r.want1);
		ck_set_fix(x->ck, idx, "set to 0x%08X", r.want1);
		f.clus = 1;
		f.val = r.want1;
		return PUSH(x->fat_fixes, f);
	}
	return 0;
}

/* ---- family entry points ---------------------------------------------- */

static int new_state(struct fk_check *ck, struct fk_volume *vol,
		     const struct fk_check_opts *opts, void **state)
{
	struct fk_exfat_check *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	x->ck = ck;
	x->st = ck_stats(ck);
	x->vol = vol;
	x->g = &vol->g;
	x->ex = fk_exfat_of(vol);
	x->o = *opts;
	x->percent_want = 0xFF; /* "not known", while no bitmap says */
	x->own_parent = NO_REC;
	x->own_name = NO_REC;
	x->miss_find = NONE;
	x->path = calloc(1, 64);
	x->path_cap = 64;
	/* Pages are touched only where clusters are owned, and the bitmap
	   passes read up to own_end only. */
	if (!x->path || fk_own_init(&x->map, fk_clus_max(&vol->g), 0)) {
		free(x->path);
		free(x);
		return -ENOMEM;
	}
	*state = x;
	return 0;
}

static void free_state(void *state)
{
	struct fk_exfat_check *x = state;
	size_t i;

	if (!x)
		return;
	for (i = 0; i < x->set_fixes.n; i++) {
		free(x->set_fixes.v[i].off);
		free(x->set_fixes.v[i].raw);
	}
	for (i = 0; i < x->late.n; i++) {
		free(x->late.v[i].set);
		free(x->late.v[i].path);
	}
	free(x->late.v);
	for (i = 0; i < x->crosses.n; i++)
		free(x->crosses.v[i].later);
	free(x->crosses.v);
	fk_bigmem_free(x->owners.v, x->owners.cap, sizeof(*x->owners.v));
	if (x->rec_names)
		for (i = 0; i < x->owners.n; i++)
			free(x->rec_names[i]);
	free(x->rec_names);
	free(x->misses.v);
	for (i = 0; i < x->tails.n; i++)
		free(x->tails.v[i].path);
	free(x->tails.v);
	for (i = 0; i <= FK_CHECK_MAX_DEPTH; i++) {
		free(x->sets[i]);
		exck_free_names(x->dir_names[i]);
	}
	free(x->fat_fixes.v);
	free(x->set_fixes.v);
	for (i = 0; i < x->nfc_tails.n; i++)
		free(x->nfc_tails.v[i].path);
	free(x->nfc_tails.v);
	fk_own_free(&x->map);
	free(x->path);
	free(x->keep_path);
	free(x->sec0);
	free(x->backup);
	free(x->upcase_raw);
	free(x);
}

static int run(void *state, struct fk_diag *diag)
{
	struct fk_exfat_check *x = state;
	int err;

	if ((err = check_boot(x)) || (err = check_fat_reserved(x)))
		return err;
	ck_progress(x->ck, "files", 0, x->g->nclus);
	if ((err = exck_walk_root(x, diag)) || (err = exck_late_claims(x)) ||
	    (err = exck_check_bitmap(x)) || (err = exck_name_owners(x)))
		return err;
	return 0;
}

/* ---- repairs ------------------------------------------------------------- */

/* Write VolumeFlags (with @is_dirty) and PercentInUse into sector 0. */
static int write_flags(struct fk_exfat_check *x, int is_dirty)
{
	fk_exfat_set_dirty(x->sec0, is_dirty);
	if (x->fix_percent)
		x->sec0[EB_PERCENT] = x->percent_want;
	return fk_device_write(x->vol->dev, 0, x->sec0, x->g->sec_len);
}

static int repair_fat(struct fk_exfat_check *x)
{
	size_t i;
	int err;

	for (i = 0; i < x->fat_fixes.n; i++)
		if ((err = fk_fat_put(x->vol, x->fat_fixes.v[i].clus,
				      x->fat_fixes.v[i].val)))
			return err;
	return x->fat_fixes.n ? fk_cache_flush(x->vol->fat) : 0;
}

/* The mended up-case table, through its clusters, before its entry. */
static int repair_upcase(struct fk_exfat_check *x)
{
	if (!x->fix_upcase_table)
		return 0;
	return fk_exfat_stream_write(x->vol, &x->upcase_stream, x->upcase_raw,
				     x->upcase_len, NULL);
}

static int repair_sets(struct fk_exfat_check *x)
{
	size_t i;
	uint32_t j, k;
	int err;

	for (i = 0; i < x->set_fixes.n; i++) {
		const struct set_fix *f = &x->set_fixes.v[i];

		if (f->is_idle)
			continue;
		/* Adjacent entries in one write; a set spans clusters. */
		for (j = 0; j < f->nents; j = k) {
			for (k = j + 1;
			     k < f->nents &&
			     f->off[k] == f->off[k - 1] + FK_EXFAT_ENT_LEN;
			     k++)
				;
			if ((err = fk_device_write(
				     x->vol->dev, f->off[j], f->raw[j],
				     (size_t)(k - j) * FK_EXFAT_ENT_LEN)))
				return err;
		}
	}
	return 0;
}

static int repair_boot(struct fk_exfat_check *x)
{
	uint32_t sec_len = x->g->sec_len, i, sum;
	size_t len = (size_t)FK_EXFAT_REGION_SECS * sec_len;
	unsigned char *r;
	int err = 0;

	if (!x->restore_main && !x->fix_main_csum && !x->fix_backup)
		return 0;
	if (!(r = malloc(len)))
		return -ENOMEM;
	if (x->restore_main) {
		/* The backup, with the main region's record of how the
		 * card was used (dirty, media failure); which FAT is active
		 * is the backup's, as a bad main region may name a FAT the
		 * volume does not have. */
		const uint16_t kept =
			FK_EXFAT_FLAG_DIRTY | FK_EXFAT_FLAG_MEDIA_FAIL;
		uint16_t f;

		memcpy(r, x->backup, len);
		f = (uint16_t)((get_le16(r + EB_FLAGS) & ~kept) |
			       (get_le16(x->sec0 + EB_FLAGS) & kept));
		put_le16(r + EB_FLAGS, f);
		memcpy(x->sec0, r, sec_len);
		err = fk_device_write(x->vol->dev, 0, r, len);
	} else if ((err = fk_device_read(x->vol->dev, 0, r, len))) {
		/* nothing */
	} else {
		memcpy(r, x->sec0, sec_len);
		sum = fk_exfat_boot_checksum(r, sec_len, FK_EXFAT_CSUM_SEC);
		for (i = 0; i < sec_len / 4; i++)
			put_le32(r + FK_EXFAT_CSUM_SEC * sec_len + i * 4, sum);
		if (x->fix_main_csum)
			err = fk_device_write(
				x->vol->dev,
				(uint64_t)FK_EXFAT_CSUM_SEC * sec_len,
				r + FK_EXFAT_CSUM_SEC * sec_len, sec_len);
		if (!err && x->fix_backup) {
			/* The backup keeps no dirty flag of ours. */
			fk_exfat_set_dirty(r, 0);
			err = fk_device_write(x->vol->dev,
					      (uint64_t)FK_EXFAT_BACKUP_SEC *
						      sec_len,
					      r, len);
		}
	}
	free(r);
	return err;
}

static int repair(void *state, struct fk_diag *diag)
{
	struct fk_exfat_check *x = state;
	struct fk_device *dev = x->vol->dev;
	int err;

	(void)diag; /* fk_check_repair() names the device */
	/* Spec 3.1.13.2: dirty while the metadata is inconsistent. */
	if ((err = write_flags(x, 1)) || (err = fk_device_sync(dev)) ||
	    (err = repair_fat(x)) ||
	    (x->fix_bits_set && (err = exck_repair_bitmap(x, PASS_SET))) ||
	    (err = repair_upcase(x)) || (err = repair_sets(x)) ||
	    (x->fix_bits_clear && (err = exck_repair_bitmap(x, PASS_CLEAR))) ||
	    (err = repair_boot(x)) || (err = fk_device_sync(dev)) ||
	    (err = write_flags(x, 0)) || (err = fk_device_sync(dev)))
		return err;
	return 0;
}

/* Main-region defects that a sound backup is not preferred over. */
#define BOOT_MINOR (FK_EXB_BACKUP | FK_EXB_BACKUP_CHECKSUM | FK_EXB_PERCENT)

/* A main boot region damaged beyond those: the check reads the volume
 * the backup describes, which the repair restores. */
static int wants_backup(const struct fk_volume *vol)
{
	return (fk_exfat_of(vol)->boot.defects & ~BOOT_MINOR) != 0;
}

const struct fk_check_family fk_check_exfat_family = {
	.new_state = new_state,
	.free_state = free_state,
	.run = run,
	.repair = repair,
	.wants_backup = wants_backup,
};
