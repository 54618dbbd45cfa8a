/*
 * check-salvage.c: --salvage plans files for the lost chains, as fsck
 * tools traditionally do: /FOUND.000/FILE0000.CHK, FILE0001.CHK, ...,
 * each as long as its chain (clusters times the cluster size).  The
 * directory work is fatprealloc's: a plan of the root (FOUND.000's entry,
 * when it is new) and of FOUND.000 (its files), with new directory
 * clusters from an allocator over the free clusters.  Lost clusters are
 * allocated in the FAT, so the allocator never hands them out; nor those
 * the repair frees (it frees them after it plans).  check-repair.c writes
 * the plans.
 *
 * When nothing can be saved (no free cluster, a full fixed root, no free
 * FOUND.nnn name, a root that cannot be read as a directory) or only some
 * chains can (a directory holds 65536 slots; FILE9999.CHK is the last
 * name; a file holds less than 4 GiB), the rest is freed, and the lost
 * finding's fix says so.
 */
#include "fat/check-int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fat/dirplan.h"
#include "fat/slot.h"
#include "lib/diag.h"
#include "table/fat.h"
#include "volume/volume.h"

#define FOUND_MAX 1000	/* FOUND.000 to FOUND.999 */
#define CHK_MAX	  10000 /* FILE0000.CHK to FILE9999.CHK */

void ck_salvage_free(struct fat_check *ck)
{
	struct salvage *sv = &ck->sv;

	fk_dirplan_close(sv->found);
	fk_dirplan_close(sv->root);
	fk_plan_free(&sv->own);
	fk_alloc_close(sv->alloc);
	memset(sv, 0, sizeof(*sv));
}

/* Is the directory at @clus one the walk did not reach (lost itself)? */
static int is_lost_dir(const struct fat_check *ck, uint32_t clus)
{
	return !fk_clus_valid(ck->g, clus) || get_cs(ck, clus) != CS_FREE;
}

/*
 * May an existing directory @name of the root take the files?  Not when
 * the walk did not reach it, nor when anything was found in or under it:
 * the repair may change it (a "." created where a file would go, a chain
 * cut), and the plan reads it as it is now.
 */
static int may_use(const struct fat_check *ck, const struct fk_dirent *ent)
{
	size_t i, len = strlen(ent->name);

	if (!(ent->attr & FK_ATTR_DIR) || fk_attr_is_label(ent->attr) ||
	    is_lost_dir(ck, ent->first_clus))
		return 0;
	for (i = 0; i < ck->rec->finds.n; i++) {
		const char *p = ck->rec->finds.v[i].path;

		if (p && p[0] == '/' && !strncasecmp(p + 1, ent->name, len) &&
		    (p[len + 1] == '\0' || p[len + 1] == '/'))
			return 0;
	}
	return 1;
}

/* Open /FOUND.nnn (@name), the first that is a directory or free. */
static int open_found(struct fat_check *ck, char *name, size_t len,
		      struct fk_diag *diag)
{
	struct salvage *sv = &ck->sv;
	struct fk_dirent ent, fields;
	uint32_t id, k;
	int err;

	if (ck->is_root_cut) {
		fk_diag_set(diag, "/", "the root directory's chain is damaged");
		return -EIO;
	}
	if ((err = fk_dirplan_open_keep(ck->vol, 0, &sv->root, diag)))
		return err;
	for (k = 0; k < FOUND_MAX; k++) {
		snprintf(name, len, "FOUND.%03u", k);
		if (!fk_dirplan_find(sv->root, name, &ent, &id))
			break;
		if (may_use(ck, &ent))
			return fk_dirplan_open(ck->vol, ent.first_clus,
					       &sv->found, diag);
	}
	if (k == FOUND_MAX) {
		fk_diag_set(diag, "/", "FOUND.000 to FOUND.999 are all taken");
		return -EEXIST;
	}
	if ((err = fk_alloc_plan(sv->alloc, 0, 1, 0, &sv->own, diag)))
		return err;
	fields = ck->stamp;
	fields.attr = FK_ATTR_DIR;
	fields.first_clus = sv->own.runs[0].first;
	if ((err = fk_dirplan_add(sv->root, sv->alloc, name, &fields, &id,
				  diag)))
		return err;
	return fk_dirplan_new(ck->vol, fields.first_clus, 0, &ck->stamp,
			      &sv->found);
}

/* Plan a file for each lost chain while there is room; *@first and
 * *@last: the numbers of the first and last file. */
static int plan_files(struct fat_check *ck, uint32_t *first, uint32_t *last,
		      struct fk_diag *diag)
{
	struct salvage *sv = &ck->sv;
	uint32_t clus_len = ck->g->clus_len, num = 0, id;
	struct fk_dirent ent, fields;
	char name[16];
	size_t i;
	int err;

	for (i = 0; i < ck->lost.n; i++) {
		struct lost_chain *lc = &ck->lost.v[i];

		if ((uint64_t)lc->nclus * clus_len > UINT32_MAX)
			continue; /* more than one file holds: freed */
		for (; num < CHK_MAX; num++) {
			snprintf(name, sizeof(name), "FILE%04u.CHK", num);
			if (!fk_dirplan_find(sv->found, name, &ent, &id))
				break;
		}
		if (num == CHK_MAX) {
			fk_diag_set(diag, "/", "FILE9999.CHK is taken");
			return -EEXIST;
		}
		fields = ck->stamp;
		fields.attr = FK_ATTR_ARCHIVE;
		fields.first_clus = lc->head;
		fields.size = lc->nclus * clus_len;
		if ((err = fk_dirplan_add(sv->found, sv->alloc, name, &fields,
					  &id, diag)))
			return err;
		if (!sv->nsaved++)
			*first = num;
		*last = num++;
		lc->is_saved = 1;
	}
	return 0;
}

/* A saved chain ends in end-of-chain, and is no longer to be freed. */
static int keep_chain(struct fat_check *ck, const struct lost_chain *lc)
{
	uint32_t clus = lc->head, val, i;
	int err;

	if (fk_fat_class(ck->g, lc->last_val) != FK_ENT_EOC &&
	    (err = ck_plan_fat(ck, lc->last, fk_fat_eoc(ck->g))))
		return err;
	for (i = 0; i < lc->nclus; i++) {
		set_cs(ck, clus, CS_FREE);
		if (clus == lc->last)
			break;
		if ((err = fk_fat_get(ck->vol, clus, &val)))
			return err;
		clus = val;
	}
	return 0;
}

int ck_plan_salvage(struct fat_check *ck, size_t idx)
{
	struct salvage *sv = &ck->sv;
	struct fk_diag diag = {0};
	char found[16], why[sizeof(diag.reason) + 64] = "";
	uint32_t first = 0, last = 0, left;
	size_t i;
	int err;

	memset(sv, 0, sizeof(*sv));
	sv->alloc = ck->alloc; /* growth planned in the walk: not free */
	ck->alloc = NULL;
	if (!sv->alloc && (err = fk_alloc_open(ck->vol, &sv->alloc)))
		return err;
	sv->nfree = fk_alloc_nfree(sv->alloc);
	err = open_found(ck, found, sizeof(found), &diag);
	if (!err)
		err = plan_files(ck, &first, &last, &diag);
	if (err == -ENOMEM)
		return err;
	if (err) {
		fk_diag_reason(&diag, err, why, sizeof(why));
		if (!sv->nsaved) { /* nothing to write after all */
			ck_salvage_free(ck);
			for (i = 0; i < ck->lost.n; i++)
				ck->lost.v[i].is_saved = 0;
		}
	}
	for (i = 0; i < ck->lost.n; i++)
		if (ck->lost.v[i].is_saved &&
		    (err = keep_chain(ck, &ck->lost.v[i])))
			return err;
	left = ck->st->lost_chains - sv->nsaved;
	if (!sv->nsaved)
		ck_set_fix(ck->rec, idx, "freed, not saved: %s",
			   why[0] ? why : "no chain fits in a file");
	else if (!left && last > first)
		ck_set_fix(ck->rec, idx,
			   "saved as /%s/FILE%04u.CHK to FILE%04u.CHK", found,
			   first, last);
	else if (!left)
		ck_set_fix(ck->rec, idx, "saved as /%s/FILE%04u.CHK", found,
			   first);
	else
		ck_set_fix(ck->rec, idx,
			   "%u saved in /%s from FILE%04u.CHK, %u freed (%s)",
			   sv->nsaved, found, first, left,
			   why[0] ? why : "too long for one file");
	if (left)
		ck->fix_lost = 1;
	return 0;
}
