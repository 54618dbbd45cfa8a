/*
 * exfat-mount.c: the exFAT family's mount: the root scanned once, through
 * the entry-set iterator (exfat-dir.c), for its special entries (the
 * allocation bitmaps, the label, the GUID), and the up-case table it
 * names loaded (Microsoft's exFAT specification, 7.1 to 7.4); and the
 * unmount that frees what the open and the mount hold.
 */
#include "exfat/exfat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/cache.h"
#include "lib/diag.h"
#include "volume/volume.h"

/*
 * Formatters put the bitmap, the up-case table and the root side by side at
 * the heap's start (mkfs.exfat, Windows): their links are read in one
 * request, as far as a span holds, where a writer's small FAT reads would
 * take two or three on a card of 512-byte clusters (a 1.2 MiB bitmap's
 * links fill 9 KiB of FAT).
 */
static void want_specials(struct fk_volume *vol, uint32_t up_clus,
			  uint64_t up_len)
{
	const struct fk_geom *g = &vol->g;
	const struct fk_exfat *ex = fk_exfat_of(vol);
	uint64_t lo = up_clus, hi = up_clus + fk_exfat_clus_needed(g, up_len);

	if (fk_clus_valid(g, g->root_clus)) {
		lo = g->root_clus < lo ? g->root_clus : lo;
		hi = g->root_clus + 1 > hi ? g->root_clus + 1 : hi;
	}
	if (ex->nbitmaps && fk_clus_valid(g, ex->bitmap_clus[0])) {
		uint64_t end = ex->bitmap_clus[0] +
			       fk_exfat_clus_needed(g, ex->bitmap_len[0]);

		lo = ex->bitmap_clus[0] < lo ? ex->bitmap_clus[0] : lo;
		hi = end > hi ? end : hi;
	}
	lo = lo * 4 / g->sec_len;
	hi = (hi * 4 + g->sec_len - 1) / g->sec_len;
	if (hi - lo <= g->fat_secs)
		fk_cache_want_span(vol->fat, (uint32_t)lo, (uint32_t)(hi - lo));
}

/* Load the table @set describes; on damage, the fallback with defects. */
static int load_upcase(struct fk_volume *vol, const struct fk_exfat_set *set,
		       struct fk_exfat_upcase *up)
{
	struct fk_exfat_stream s = {set->first_clus, set->data_len, 0};
	unsigned char *raw;
	int err;

	up->csum_stored = set->upcase_csum;
	up->first_clus = set->first_clus;
	up->raw_len = set->data_len;
	if (!set->data_len || set->data_len > FK_EXFAT_UPCASE_MAX_LEN ||
	    set->data_len % 2 || !fk_clus_valid(&vol->g, set->first_clus)) {
		up->defects |= FK_EXU_RANGE;
		fk_exfat_upcase_fallback(up);
		return 0;
	}
	if (!(raw = malloc((size_t)set->data_len)))
		return -ENOMEM;
	want_specials(vol, set->first_clus, set->data_len);
	err = fk_exfat_stream_read(vol, &s, raw, set->data_len, NULL);
	if (err == FK_ECORRUPT) {
		up->defects |= FK_EXU_CHAIN;
		fk_exfat_upcase_fallback(up);
		err = 0;
	} else if (!err) {
		up->csum_computed =
			fk_exfat_upcase_checksum(raw, (size_t)set->data_len);
		if (up->csum_computed != up->csum_stored)
			up->defects |= FK_EXU_CHECKSUM;
		fk_exfat_upcase_expand(raw, (size_t)set->data_len, up);
	}
	free(raw);
	return err;
}

static void take_special(struct fk_exfat *ex, const struct fk_exfat_set *set)
{
	switch (set->kind) {
	case FK_EXK_BITMAP:
		if (ex->nbitmaps < 2) {
			ex->bitmap_clus[ex->nbitmaps] = set->first_clus;
			ex->bitmap_len[ex->nbitmaps] = set->data_len;
			ex->bitmap_flags[ex->nbitmaps] = set->bitmap_flags;
		}
		ex->nbitmaps++;
		break;
	case FK_EXK_LABEL:
		if (!ex->has_label) {
			ex->has_label = 1;
			ex->label_len = set->label_len;
			memcpy(ex->label16, set->label16, sizeof(ex->label16));
			memcpy(ex->label, set->label, sizeof(ex->label));
		}
		break;
	case FK_EXK_GUID:
		if (!ex->has_guid) {
			ex->has_guid = 1;
			memcpy(ex->guid, set->guid, sizeof(ex->guid));
		}
		break;
	default:
		break;
	}
}

int fk_exfat_mount(struct fk_volume *vol, struct fk_diag *diag)
{
	struct fk_exfat *ex = fk_exfat_of(vol);
	struct fk_exfat_set *set = malloc(sizeof(*set));
	struct fk_exfat_upcase *up = calloc(1, sizeof(*up));
	struct fk_exfat_dir *dir = NULL;
	int err, nup = 0;

	if (!set || !up) {
		err = -ENOMEM;
		goto out;
	}
	if ((err = fk_exfat_dir_open(vol, NULL, &dir)))
		goto out;
	/* The special entries come first in practice, but the spec does not
	 * say so: the whole root is read (names hashed later, once the table
	 * is known). */
	while ((err = fk_exfat_dir_next(dir, set, diag)) == 1) {
		if (set->kind == FK_EXK_UPCASE) {
			if (nup++) {
				up->defects |= FK_EXU_DUPLICATE;
				continue;
			}
			if ((err = load_upcase(vol, set, up)))
				break;
		}
		take_special(ex, set);
	}
	/* A broken root is the listing's error and the checker's finding,
	 * not a volume that cannot be opened. */
	if (err == FK_ECORRUPT) {
		ex->root_err = err;
		if (diag)
			diag->reason[0] = '\0';
	} else if (err < 0) {
		goto out;
	}
	err = 0;
	if (!nup) {
		up->defects |= FK_EXU_MISSING;
		fk_exfat_upcase_fallback(up);
	}
	ex->root_defects = up->defects;
	ex->upcase = up;
	up = NULL;
out:
	fk_exfat_dir_close(dir);
	free(set);
	free(up);
	return err;
}

void fk_exfat_unmount(struct fk_volume *vol)
{
	struct fk_exfat *ex = fk_exfat_of(vol);

	if (!ex)
		return;
	free(ex->upcase);
	free(ex);
	vol->fam_priv = NULL;
}
