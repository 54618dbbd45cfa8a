/*
 * check-dots.c: "." and ".." of a subdirectory.  Each must be in its slot
 * and name its cluster; a damaged one is rebuilt, a missing one created
 * where its slot is or will be free, and an entry in their slots is moved
 * to the first free ones, as a writer would place it.
 */
#include "fat/check-dots.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fat/check-dir.h"
#include "fat/dir.h"
#include "fat/dirplan.h"
#include "fat/slot.h"
#include "io/device.h"
#include "lib/diag.h"
#include "table/alloc.h"
#include "table/fat.h"
#include "volume/volume.h"

/* The "." (@dot) or ".." entry of @d, as mkfs and every writer make it:
 * the directory bit, its start cluster, the times of @d's own entry. */
static void dot_slot(struct fat_check *ck, const struct dirctx *d, int dot,
		     unsigned char e[FK_DIRENT_LEN])
{
	struct fk_dirent ent;

	memset(&ent, 0, sizeof(ent));
	fk_slot_set_dot(dot ? FK_DOT : FK_DOT_DOT, ent.raw);
	ent.attr = FK_ATTR_DIR;
	ent.first_clus = dot ? d->first : d->parent;
	if (d->self) {
		ent.mtime = d->self->mtime;
		ent.mdate = d->self->mdate;
		ent.ctime = d->self->ctime;
		ent.cdate = d->self->cdate;
		ent.adate = d->self->adate;
		ent.ctime_cs = d->self->ctime_cs;
	}
	memset(e, 0, FK_DIRENT_LEN);
	fk_slot_pack(ck->vol, &ent, e);
}

/* Slot 0 (".") or 1 ("..") of @d holds a damaged form of it: rewrite it
 * whole, if it still holds what was read when the repair comes. */
static int rebuild_dot(struct fat_check *ck, struct dirctx *d, uint32_t slot,
		       size_t idx)
{
	struct ent_fix fix;
	int err;

	memset(&fix, 0, sizeof(fix));
	fix.op = EF_REBUILD;
	fix.dir_clus = d->first;
	fix.slot = slot;
	if ((err = fk_dir_read_slot(ck->vol, d->first, slot, fix.old)))
		return err == FK_ECORRUPT ? 0 : err;
	dot_slot(ck, d, !slot, fix.slot_data);
	if (slot)
		d->has_dotdot = 1;
	else
		d->has_dot = 1;
	ck_set_fix(ck->rec, idx, "'%s' rebuilt", slot ? ".." : ".");
	return ck_plan_entry(ck, &fix);
}

/* Is @ent, in slot 0 or 1 of a subdirectory, what is left of "." or ".."
 * there: a name FAT does not allow that starts with a dot, or a directory
 * entry with the start cluster "." or ".." would have? */
int ck_is_damaged_dot(const struct dirctx *d, const struct fk_dirent *ent)
{
	if (d->is_root || ent->slot > 1 || ent->nslots != 1 ||
	    fk_dirent_is_dot(ent) || ck_is_label(ent))
		return 0;
	if (fk_short_first(ent->raw) == '.')
		return 1;
	return (ent->attr & FK_ATTR_DIR) &&
	       ent->first_clus == (ent->slot ? d->parent : d->first);
}

/* "." must be the first slot of a subdirectory and name it; ".." the
 * second and name its parent (0 for the root): fsck.fat's rules. */
int ck_check_dot(struct fat_check *ck, struct dirctx *d,
		 const struct fk_dirent *ent)
{
	int dot = fk_slot_dot(ent->raw) == FK_DOT;
	uint32_t want = dot ? d->first : d->parent;
	const char *name = dot ? "." : "..";
	struct ent_fix fix;
	size_t idx;

	if (d->is_root) {
		idx = ck_report(ck->rec, FK_SEV_ERROR, "dot", "/",
				"the root directory holds a '%s' entry", name);
		ck_set_fix(ck->rec, idx, "entry removed");
		return ck_plan_delete(ck, d, ent);
	}
	if (ck_is_damaged_dot(d, ent)) {
		idx = ck_report(ck->rec, FK_SEV_ERROR, "dot", ck_path(ck),
				"'%s' entry is damaged: slot %u holds '%s'",
				ent->slot ? ".." : ".", ent->slot,
				ck_named(d)->short_name);
		return rebuild_dot(ck, d, ent->slot, idx);
	}
	if (ent->slot <= 1 &&
	    (ent->slot != (dot ? 0u : 1u) || !(ent->attr & FK_ATTR_DIR))) {
		idx = ck_report(
			ck->rec, FK_SEV_ERROR, "dot", ck_path(ck),
			"'%s' entry in slot %u%s", name, ent->slot,
			ent->attr & FK_ATTR_DIR ? "" : " is not a directory");
		return rebuild_dot(ck, d, ent->slot, idx);
	}
	if (ent->slot != (dot ? 0u : 1u)) {
		idx = ck_report(ck->rec, FK_SEV_ERROR, "dot", ck_path(ck),
				"'%s' entry in slot %u", name, ent->slot);
		ck_set_fix(ck->rec, idx, "entry removed");
		return ck_plan_delete(ck, d, ent);
	}
	if (dot)
		d->has_dot = 1;
	else
		d->has_dotdot = 1;
	if (ent->first_clus == want)
		return 0;
	idx = ck_report(ck->rec, FK_SEV_ERROR, "dot", ck_path(ck),
			"'%s' points to cluster %u instead of %u", name,
			ent->first_clus, want);
	ck_set_fix(ck->rec, idx, "'%s' set to %u", name, want);
	ck_entry_set(&fix, d, ent);
	fix.set_first = 1;
	fix.first_clus = want;
	return ck_plan_entry(ck, &fix);
}

/*
 * Does a repair planned while walking @d delete @slot of it, or move the
 * entry there elsewhere?  Then the slot is free by the time "." or ".."
 * is created there, and one run of the repair settles what would
 * otherwise take two.
 */
static int will_delete(const struct fat_check *ck, const struct dirctx *d,
		       uint32_t slot)
{
	size_t i;

	for (i = d->fixes_from; i < ck->ent_fixes.n; i++) {
		const struct ent_fix *f = &ck->ent_fixes.v[i];

		if ((f->op == EF_DELETE || f->op == EF_MOVE) &&
		    f->dir_clus == d->first && slot - f->slot < f->nslots)
			return 1;
	}
	return 0;
}

/*
 * A missing "." or "..": recreate it when its slot is or will be free.
 * A slot read past the end marker (@end_slot) may be: the entry there is
 * deleted if it is stale (after the visible tree, ck_walk_root()), and
 * the creation, applied after every deletion, then finds it free; one
 * kept and made visible keeps its slot, and the creation leaves it.
 */
int ck_missing_dot(struct fat_check *ck, const struct dirctx *d, int dot,
		   uint32_t end_slot)
{
	uint32_t slot = dot ? 0 : 1;
	struct ent_fix fix;
	unsigned char e[FK_DIRENT_LEN];
	size_t idx;
	int err;

	idx = ck_report(ck->rec, FK_SEV_ERROR, "dot", ck_path(ck),
			"'%s' entry is missing from slot %d", dot ? "." : "..",
			dot ? 0 : 1);
	if ((err = fk_dir_read_slot(ck->vol, d->first, dot ? 0 : 1, e)))
		return err == FK_ECORRUPT ? 0 : err;
	if (!fk_slot_is_free(e) && !will_delete(ck, d, slot) &&
	    !(slot >= end_slot && slot < d->hidden_end))
		return 0;
	memset(&fix, 0, sizeof(fix));
	fix.op = EF_CREATE;
	fix.dir_clus = d->first;
	fix.slot = dot ? 0 : 1;
	dot_slot(ck, d, dot, fix.slot_data);
	ck_set_fix(ck->rec, idx, "'%s' created", dot ? "." : "..");
	return ck_plan_entry(ck, &fix);
}

/*
 * An entry whose slots (its long name's included) begin in slot 0 or 1 of
 * a subdirectory, where "." and ".." belong (fsck.fat moves it down and
 * creates them).  It is checked and repaired where it is, as any other;
 * dir_after() then plans its move (ck_plan_moves()).  So is one read past
 * an end marker in slot 0: made visible where it is, it would hold the
 * slot still; judged stale (walk_hidden(), later), it is deleted before
 * the move, which then finds nothing to copy.
 */
void ck_note_move(struct fat_check *ck, struct dirctx *d,
		  const struct fk_dirent *ent)
{
	uint32_t first = d->ent_first, last = ent->slot;
	char range[32];

	if (d->nmoves == 2)
		return;
	if (last > first)
		snprintf(range, sizeof(range), "s %u-%u", first, last);
	else
		snprintf(range, sizeof(range), " %u", first);
	d->moves[d->nmoves].first = first;
	d->moves[d->nmoves].n = last - first + 1;
	d->moves[d->nmoves++].finding =
		ck_report(ck->rec, FK_SEV_ERROR, "dot", ck_ent_path(d),
			  "entry in slot%s, where %s", range,
			  first	 ? "'..' belongs"
			  : last ? "'.' and '..' belong"
				 : "'.' belongs");
}

/* A directory's slots as a writer would find room in them. */
struct room {
	uint8_t *used;	/* per slot (FK_DIR_MAX_ENTS) */
	uint32_t *clus; /* per block: its cluster */
	uint32_t nslots, nblocks, nold, per_block;
};

/*
 * The slots of @d's claimed clusters: free are deleted slots before the
 * end marker, and slots of all zeros (past the marker, a slot that is
 * not all zeros may be a hidden entry's, as fk_dirplan_open() has it).
 * Slots 0 and 1 are "."'s and ".."'s whatever they hold now.
 */
static int load_room(struct fat_check *ck, const struct dirctx *d,
		     uint32_t end_slot, struct room *r)
{
	static const unsigned char zero[FK_DIRENT_LEN];
	uint32_t clus_len = ck->g->clus_len, b, k;
	unsigned char *buf;
	int err = 0;

	r->per_block = clus_len / FK_DIRENT_LEN;
	r->nold = r->nblocks = d->nclus;
	r->nslots = d->nclus * r->per_block; /* the walk read them all */
	r->used = calloc(FK_DIR_MAX_ENTS, 1);
	r->clus = calloc(FK_DIR_MAX_ENTS / r->per_block + 1, sizeof(*r->clus));
	if (!(buf = malloc(clus_len)) || !r->used || !r->clus) {
		free(buf);
		return -ENOMEM;
	}
	r->clus[0] = d->first;
	for (b = 0; b < r->nblocks && !err; b++) {
		if (b &&
		    (err = fk_fat_get(ck->vol, r->clus[b - 1], &r->clus[b])))
			break;
		if ((err = fk_device_read(ck->vol->dev,
					  fk_clus_off(ck->g, r->clus[b]), buf,
					  clus_len)))
			break;
		for (k = 0; k < r->per_block; k++) {
			const unsigned char *e = buf + k * FK_DIRENT_LEN;
			uint32_t s = b * r->per_block + k;

			r->used[s] = s < 2 ||
				     (s < end_slot ? !fk_slot_is_free(e)
						   : !!memcmp(e, zero,
							      sizeof(zero)));
		}
	}
	free(buf);
	return err;
}

/*
 * Room for @n slots, as a writer finds it (fk_dirplan_find_free(): the
 * first free run from slot 2; growing the directory by a cluster from
 * the free ones, planned as EF_GROW, while none is long enough).
 * Returns 0 and *@to, 1 when there is no room, or -errno.
 */
static int find_room(struct fat_check *ck, const struct dirctx *d,
		     struct room *r, uint32_t n, uint32_t *to)
{
	struct fk_plan plan;
	struct ent_fix f;
	int err;

	for (;;) {
		struct fk_slot_map map = {r->used, r->nslots, r->per_block,
					  r->nold, r->clus};

		if (!fk_dirplan_find_free(&map, 2, n, to))
			return 0;
		if (r->nslots + r->per_block > FK_DIR_MAX_ENTS)
			return 1;
		if (!ck->alloc && (err = fk_alloc_open(ck->vol, &ck->alloc)))
			return err;
		memset(&plan, 0, sizeof(plan));
		err = fk_alloc_plan(ck->alloc, r->clus[r->nblocks - 1], 1, 0,
				    &plan, NULL);
		if (err)
			return err == -ENOSPC ? 1 : err;
		memset(&f, 0, sizeof(f));
		f.op = EF_GROW;
		f.dir_clus = d->first;
		f.first_clus = plan.runs[0].first;
		f.prev_clus = r->clus[r->nblocks - 1];
		fk_plan_free(&plan);
		if ((err = ck_plan_entry(ck, &f)))
			return err;
		r->clus[r->nblocks++] = f.first_clus;
		r->nslots += r->per_block;
		ck->grown++;
	}
}

/*
 * Plan the moves ck_note_move() noted: each entry to the first free slots
 * from slot 2, as a writer would place a new one.  An entry another
 * repair deletes stays where it is (its slots will be free); one that
 * finds no room (no free cluster, or 65536 slots) stays too, and "." or
 * ".." is left missing.  Growth planned for a move that then found no
 * room is dropped again.
 */
int ck_plan_moves(struct fat_check *ck, struct dirctx *d,
		  const struct fk_dir_stats *st)
{
	struct room r;
	struct ent_fix f;
	size_t nfixes;
	uint32_t grown, to;
	char grew[64];
	int i, err = 0;

	memset(&r, 0, sizeof(r));
	if (!d->nmoves ||
	    d->nclus > FK_DIR_MAX_ENTS / (ck->g->clus_len / FK_DIRENT_LEN) ||
	    (err = load_room(ck, d, st->end_slot, &r)))
		goto out;
	for (i = 0; i < d->nmoves && !err; i++) {
		uint32_t first = d->moves[i].first, n = d->moves[i].n;

		if (will_delete(ck, d, first + n - 1) || n > FK_LFN_MAX_ORD + 1)
			continue;
		nfixes = ck->ent_fixes.n;
		grown = ck->grown;
		if ((err = find_room(ck, d, &r, n, &to)) == 1) {
			r.nblocks -= ck->grown - grown;
			r.nslots = r.nblocks * r.per_block;
			ck->ent_fixes.n = nfixes;
			ck->grown = grown;
			err = 0;
			continue;
		}
		if (err)
			break;
		memset(&f, 0, sizeof(f));
		f.op = EF_MOVE;
		f.dir_clus = d->first;
		f.slot = first;
		f.nslots = n;
		f.to = to;
		/* Every end marker before the copy goes, or it would lie
		 * hidden behind one (what lies between is what the walk
		 * read on past the first marker). */
		f.skip_from = st->end_slot < to ? st->end_slot : to;
		memset(r.used + to, 1, n);
		if ((err = ck_plan_entry(ck, &f)))
			break;
		grew[0] = '\0';
		if (ck->grown > grown)
			snprintf(grew, sizeof(grew),
				 " (the directory grew by %u cluster%s)",
				 ck->grown - grown,
				 ck_plural(ck->grown - grown));
		if (n > 1)
			ck_set_fix(ck->rec, d->moves[i].finding,
				   "moved to slots %u-%u%s", to, to + n - 1,
				   grew);
		else
			ck_set_fix(ck->rec, d->moves[i].finding,
				   "moved to slot %u%s", to, grew);
	}
out:
	free(r.used);
	free(r.clus);
	return err;
}
