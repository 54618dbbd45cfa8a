/*
 * check-run.c: the FAT checker's table, its setup and the order of its
 * phases (ck_fat_run(): boot sector, FAT copies, FSInfo, the tree,
 * tails, label, owners, lost clusters and their salvage).  The phases live in check-fat.c,
 * check-tree.c and check-chain.c, the repair steps in check-repair.c;
 * check-int.h is what they share.
 */
#include "fat/check-int.h"

#include <errno.h>
#include <stdlib.h>

#include "fat/dir.h"
#include "fat/fat-boot.h"
#include "iface/check-family.h"
#include "table/alloc.h"
#include "table/fat.h"
#include "volume/volume.h"

/* ---- the FAT checker's table ------------------------------------------- */

/* The engine reaches the FAT checker only through this table, which
 * fk_fat_family (fat-family.c) holds. */
const struct fk_check_family fk_check_fat_family = {
	.new_state = ck_fat_new_state,
	.free_state = ck_fat_free_state,
	.run = ck_fat_run,
	.repair = ck_fat_repair,
};

/* ---- setup --------------------------------------------------------------- */

/* The FAT checker's own state (check-int.h), recording into @rec. */
int ck_fat_new_state(struct fk_check *rec, struct fk_volume *vol,
		     const struct fk_check_opts *opts, void **state)
{
	struct fat_check *ck = calloc(1, sizeof(*ck));
	uint32_t top;

	if (!ck)
		return -ENOMEM;
	ck->rec = rec;
	ck->st = ck_stats(rec);
	ck->vol = vol;
	ck->o = *opts;

	top = fk_clus_max(&vol->g);
	ck->g = &vol->g;
	if (top >= fk_fat_bad(&vol->g)) /* never on a volume mkfs makes */
		top = fk_fat_bad(&vol->g) - 1;
	ck->nlink = top - FK_FIRST_CLUS + 1;
	ck->diffs = calloc(vol->g.nfats, sizeof(*ck->diffs));
	ck->path = calloc(1, 64);
	ck->path_cap = 64;
	fk_dir_stamp(&ck->stamp, opts->now, 0);
	if (!ck->diffs || !ck->path ||
	    fk_own_init(&ck->map, fk_clus_max(&vol->g), 1)) {
		ck_fat_free_state(ck);
		return -ENOMEM;
	}
	*state = ck;
	return 0;
}

void ck_fat_free_state(void *state)
{
	struct fat_check *ck = state;
	size_t i;

	for (i = 0; i < ck->tails.n; i++)
		free(ck->tails.v[i].path);
	for (i = 0; i < ck->shared.n; i++)
		free(ck->shared.v[i].later);
	for (i = 0; i < ck->hidden.n; i++)
		free(ck->hidden.v[i].path);
	free(ck->hidden.v);
	free(ck->fat_fixes.v);
	free(ck->ent_fixes.v);
	free(ck->tails.v);
	free(ck->shared.v);
	for (i = 0; i < ck->runs.nblocks; i++)
		free(ck->runs.blocks[i]);
	free(ck->runs.blocks);
	free(ck->lost.v);
	free(ck->root_labels.v);
	free(ck->patches);
	free(ck->copy_runs.v);
	ck_salvage_free(ck);
	fk_alloc_close(ck->alloc);
	free(ck->path);
	fk_own_free(&ck->map);
	free(ck->linked);
	free(ck->diffs);
	free(ck);
}

/* ---- the whole check ---------------------------------------------------- */

/* The FAT family's phases, in order. */
static int run_fat(struct fat_check *ck, struct fk_diag *diag)
{
	int err;

	/* A layout that does not hold together is read as nonsense (a
	 * third "FAT" over the root), and every repair planned from that
	 * would destroy what it mends: no finding, no plan, nothing. */
	if ((err = fk_fat_judge_boot(ck->vol, diag)))
		return err;
	if ((err = ck_check_boot(ck)) || (err = ck_scan_fats(ck)) ||
	    (err = ck_check_fsinfo(ck)))
		return err;
	ck_progress(ck->rec, "files", 0, ck->st->used_clus);
	if ((err = ck_walk_root(ck, diag)) || (err = ck_walk_tails(ck)))
		return err;
	ck_check_label(ck);
	if ((err = ck_find_owners(ck)) || (err = ck_check_lost(ck)))
		return err;
	return 0;
}

/* The check reads the FAT copies as kept (check-fat.c) while its
 * phases run, and as they are once it is over: the repair's first step
 * makes every copy hold the kept sectors, and nothing after the check
 * may reach the volume through @ck (a caller may close it first). */
int ck_fat_run(void *state, struct fk_diag *diag)
{
	struct fat_check *ck = state;
	int err = run_fat(ck, diag);

	ck_unpatch(ck);
	return err;
}
