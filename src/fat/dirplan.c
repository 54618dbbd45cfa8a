/*
 * dirplan.c: a directory as a plan of changes.  One scan fills a name
 * index (long and short names, folded as FAT compares them), the set of
 * short names (for unique aliases) and a map of used slots with a hint of
 * the first free one, so thousands of creations in one run never rescan.
 * Nothing is written until commit, which rewrites each touched block once.
 */
#include "fat/dirplan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "lib/diag.h"
#include "lib/names.h"
#include "lib/vec.h"
#include "table/alloc.h"
#include "table/fat.h"
#include "volume/volume.h"

#define NO_ID UINT32_MAX

/* One entry, on disk or planned; its short slot as it will be. */
struct dp_ent {
	unsigned char slot[FK_DIRENT_LEN];
	uint32_t slot_idx; /* the short slot */
	uint32_t nslots;   /* long-name slots included */
	uint32_t name_off; /* display name in the arena */
	uint32_t short_off;
	int is_changed; /* the short slot must be written */
	uint32_t tag;	/* the caller's, or FK_DIRPLAN_NO_TAG */
};

/* Open-addressing hash table of (hash, entry id, arena name or -1). */
struct dp_item {
	uint64_t hash;
	uint32_t id; /* NO_ID: empty */
	uint32_t name_off;
};

struct dp_table {
	struct dp_item *items;
	uint32_t cap; /* power of two */
	uint32_t n;
};

/* A long-name slot to write. */
struct dp_write {
	uint32_t slot_idx;
	unsigned char data[FK_DIRENT_LEN];
};

struct fk_dirplan {
	struct fk_volume *vol;
	int is_fixed_root;
	uint32_t first_clus;
	uint32_t block_len; /* bytes per block: a cluster, or a sector */
	uint32_t per_block; /* slots per block */
	uint32_t *clus;	    /* cluster of each block (chained) */
	uint32_t nblocks;
	size_t cap_blocks;
	uint32_t nold;	     /* blocks that exist on disk */
	uint32_t nslots;     /* slots the blocks hold */
	uint8_t *used;	     /* per slot (at most FK_DIR_MAX_ENTS) */
	uint32_t used_cap;   /* slots used[] holds: past nslots by one */
	uint32_t first_free; /* no free slot below this */
	uint32_t end_slot;   /* one past the last slot in use */
	int is_keep;	     /* fk_dirplan_open_keep() */
	uint32_t marker;     /* keep: the end marker the reader met */
	struct dp_ent *ents;
	uint32_t nents;
	size_t cap_ents;
	char *arena;
	uint32_t arena_len; /* names are found by uint32_t offsets */
	size_t arena_cap;
	struct dp_table names;	/* folded long and short names */
	struct dp_table shorts; /* raw 11-byte short names */
	struct dp_write *writes;
	uint32_t nwrites;
	size_t cap_writes;
	struct fk_plan growth;
};

/* ---- tables and the arena -------------------------------------------------
 */

static int table_grow(struct dp_table *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 64, i;
	struct dp_item *items = malloc(cap * sizeof(*items));

	if (!items)
		return -ENOMEM;
	for (i = 0; i < cap; i++)
		items[i].id = NO_ID;
	for (i = 0; i < t->cap; i++) {
		uint32_t h;

		if (t->items[i].id == NO_ID)
			continue;
		for (h = (uint32_t)t->items[i].hash & (cap - 1);
		     items[h].id != NO_ID; h = (h + 1) & (cap - 1))
			;
		items[h] = t->items[i];
	}
	free(t->items);
	t->items = items;
	t->cap = cap;
	return 0;
}

static int table_put(struct dp_table *t, uint64_t hash, uint32_t id,
		     uint32_t name_off)
{
	uint32_t h;
	int err;

	if (2 * (t->n + 1) > t->cap && (err = table_grow(t)))
		return err;
	for (h = (uint32_t)hash & (t->cap - 1); t->items[h].id != NO_ID;
	     h = (h + 1) & (t->cap - 1))
		;
	t->items[h].hash = hash;
	t->items[h].id = id;
	t->items[h].name_off = name_off;
	t->n++;
	return 0;
}

static int arena_add(struct fk_dirplan *dp, const char *s, uint32_t *off)
{
	size_t len = strlen(s) + 1;

	if (len > UINT32_MAX - dp->arena_len ||
	    FK_VEC_RESERVE(dp->arena, dp->arena_cap, dp->arena_len + len))
		return -ENOMEM;
	memcpy(dp->arena + dp->arena_len, s, len);
	*off = dp->arena_len;
	dp->arena_len += (uint32_t)len;
	return 0;
}

/* Entry whose long or short name matches @name, or NO_ID. */
static uint32_t find_name(const struct fk_dirplan *dp, const char *name)
{
	const struct dp_table *t = &dp->names;
	uint64_t hash = fk_name_hash(name);
	uint32_t h;

	if (!t->cap)
		return NO_ID;
	for (h = (uint32_t)hash & (t->cap - 1); t->items[h].id != NO_ID;
	     h = (h + 1) & (t->cap - 1))
		if (t->items[h].hash == hash &&
		    fk_name_equal(name, dp->arena + t->items[h].name_off))
			return t->items[h].id;
	return NO_ID;
}

static int short_taken(const void *arg, const unsigned char raw[11])
{
	const struct fk_dirplan *dp = arg;
	const struct dp_table *t = &dp->shorts;
	uint64_t hash = fk_short_hash(raw);
	uint32_t h;

	if (!t->cap)
		return 0;
	for (h = (uint32_t)hash & (t->cap - 1); t->items[h].id != NO_ID;
	     h = (h + 1) & (t->cap - 1))
		if (t->items[h].hash == hash &&
		    !memcmp(dp->ents[t->items[h].id].slot, raw, 11))
			return 1;
	return 0;
}

/* ---- entries and slots ------------------------------------------------------
 */

static void mark_used(struct fk_dirplan *dp, uint32_t first, uint32_t n)
{
	memset(dp->used + first, 1, n);
	if (first + n > dp->end_slot)
		dp->end_slot = first + n;
	while (dp->first_free < dp->nslots && dp->used[dp->first_free])
		dp->first_free++;
}

/* Record an entry (its slot bytes, names) and index it. */
static int add_ent(struct fk_dirplan *dp, const unsigned char *slot,
		   uint32_t slot_idx, uint32_t nslots, const char *name,
		   const char *short_name, uint32_t *id)
{
	struct dp_ent *e;
	int err;

	if (FK_VEC_RESERVE(dp->ents, dp->cap_ents, (size_t)dp->nents + 1))
		return -ENOMEM;
	e = &dp->ents[dp->nents];
	memset(e, 0, sizeof(*e));
	memcpy(e->slot, slot, FK_DIRENT_LEN);
	e->slot_idx = slot_idx;
	e->nslots = nslots;
	e->tag = FK_DIRPLAN_NO_TAG;
	if ((err = arena_add(dp, name, &e->name_off)) ||
	    (err = arena_add(dp, short_name, &e->short_off)) ||
	    (err = table_put(&dp->names, fk_name_hash(name), dp->nents,
			     e->name_off)) ||
	    (strcmp(name, short_name) &&
	     (err = table_put(&dp->names, fk_name_hash(short_name), dp->nents,
			      e->short_off))) ||
	    (err = table_put(&dp->shorts, fk_short_hash(slot), dp->nents, 0)))
		return err;
	*id = dp->nents++;
	return 0;
}

static struct fk_dirplan *dp_new(struct fk_volume *vol, uint32_t clus)
{
	struct fk_dirplan *dp = calloc(1, sizeof(*dp));

	if (!dp)
		return NULL;
	dp->vol = vol;
	clus = fk_dir_resolve(vol, clus);
	dp->first_clus = clus;
	dp->is_fixed_root = clus == 0;
	dp->block_len = dp->is_fixed_root ? vol->g.sec_len : vol->g.clus_len;
	dp->per_block = dp->block_len / FK_DIRENT_LEN;
	return dp;
}

/*
 * used[] as far as the slots go, and one more (keep_orphans() marks the
 * slot after a run, which may be the first of a block yet to be added):
 * a directory of one cluster clears its few pages, where the whole 64 KiB
 * a directory may take was cleared, a page fault per page, for each
 * directory a run opens.
 */
static int grow_used(struct fk_dirplan *dp, uint32_t nslots)
{
	uint32_t want = nslots < FK_DIR_MAX_ENTS ? nslots + 1 : FK_DIR_MAX_ENTS;
	uint32_t cap = dp->used_cap ? dp->used_cap : 1024;
	uint8_t *p;

	if (want <= dp->used_cap)
		return 0;
	while (cap < want)
		cap *= 2;
	cap = cap < FK_DIR_MAX_ENTS ? cap : FK_DIR_MAX_ENTS;
	if (!(p = realloc(dp->used, cap)))
		return -ENOMEM;
	memset(p + dp->used_cap, 0, cap - dp->used_cap);
	dp->used = p;
	dp->used_cap = cap;
	return 0;
}

/* The counts grow only once both arrays hold the new block: a plan
 * that failed for want of memory stays one that can be read. */
static int add_block(struct fk_dirplan *dp, uint32_t clus)
{
	if (FK_VEC_RESERVE(dp->clus, dp->cap_blocks, (size_t)dp->nblocks + 1) ||
	    grow_used(dp, dp->nslots + dp->per_block))
		return -ENOMEM;
	dp->clus[dp->nblocks++] = clus;
	dp->nslots += dp->per_block;
	return 0;
}

/* -E2BIG: the chain holds more slots than FAT allows a directory. */
static int add_run_blocks(void *arg, const struct fk_run *run)
{
	struct fk_dirplan *dp = arg;
	uint32_t i;
	int err;

	for (i = 0; i < run->nclus; i++) {
		if (dp->nslots + dp->per_block > FK_DIR_MAX_ENTS)
			return -E2BIG;
		if ((err = add_block(dp, run->first + i)))
			return err;
	}
	return 0;
}

/*
 * The blocks of the directory, from a chain verified before any slot is
 * read: it ends in an end-of-chain mark (no loop, no free, bad, reserved
 * or out-of-range link) within FK_DIR_MAX_ENTS slots.  A plan built on a
 * looping chain had blocks past its used[] map, and would write new
 * slots over live ones reached a second time.
 */
static int load_blocks(struct fk_dirplan *dp, struct fk_diag *diag)
{
	struct fk_volume *vol = dp->vol;
	struct fk_chain_info info;
	int err;

	if (dp->is_fixed_root) {
		if (grow_used(dp, vol->g.root_ents))
			return -ENOMEM;
		dp->nslots = vol->g.root_ents;
		dp->nblocks = vol->g.root_secs;
		return 0;
	}
	err = fk_chain_walk(vol, dp->first_clus, add_run_blocks, dp, &info);
	if (err == -E2BIG) {
		fk_diag_set(diag, NULL, "directory has more than %u entries",
			    FK_DIR_MAX_ENTS);
		return FK_ECORRUPT;
	}
	if (err)
		return err;
	if (info.end != FK_ENT_EOC)
		return fk_chain_error(&info, diag);
	return 0;
}

/*
 * Past the end marker: live slots (Linux and fsck.fat read on, Windows
 * and mtools stop) make the directory two different ones to different
 * readers, and any slot we took there could be one of them, so we
 * refuse; fatcheck -r makes them visible to all.  Other slots there that
 * are not all zeros (deleted, or a stray byte) are nobody's, but we take
 * none of them: only the all-zero tail counts as free.
 */
static int check_end(struct fk_dirplan *dp, const struct fk_dir_stats *st,
		     struct fk_diag *diag)
{
	uint32_t to = st->zero_from < dp->nslots ? st->zero_from : dp->nslots;

	dp->marker = st->end_slot;
	if (st->after_end && !dp->is_keep) {
		fk_diag_set(diag, NULL,
			    "live entries hidden after the end-of-directory "
			    "marker (slot %u)",
			    st->end_slot);
		return FK_ECORRUPT;
	}
	/* Not through mark_used(): new entries must still replace the
	 * marker (mark_skipped() starts at end_slot), or Windows would not
	 * see them. */
	if (to > st->end_slot)
		memset(dp->used + st->end_slot, 1, to - st->end_slot);
	return 0;
}

/*
 * Long-name slots that belong to no entry are not free: only deleted
 * (0xE5) and end-marker slots are, as for Linux and Windows, which never
 * reuse another slot.  A repair may re-attach them (fatcheck -r mends a
 * checksum), and a new entry over the first of them would leave the rest
 * out of sequence.
 *
 * Nor may a new entry come straight after them: every reader would take
 * the orphans for its long name, with the wrong checksum (fsck.fat: "may
 * have changed without updating the long name").  The slot after the run
 * stays as it is when free: a deleted slot ends the run for every reader,
 * and an end marker (or a slot of a block yet to be added) is rewritten
 * as deleted by mark_skipped() when a new entry goes past it, since it
 * lies at or past end_slot, which this does not move.
 */
static void keep_orphans(void *arg, uint32_t first, uint32_t n,
			 enum fk_lfn_orphan why)
{
	struct fk_dirplan *dp = arg;

	(void)why;
	if (first >= dp->nslots || n > dp->nslots - first)
		return;
	mark_used(dp, first, n);
	if (first + n < FK_DIR_MAX_ENTS)
		dp->used[first + n] = 1;
}

static int scan(struct fk_dirplan *dp, struct fk_diag *diag)
{
	struct fk_volume *vol = dp->vol;
	struct fk_dirent ent;
	struct fk_dir *dir;
	uint32_t id;
	int err;

	if ((err = load_blocks(dp, diag)))
		return err;
	if ((err = fk_dir_open(vol, dp->first_clus, &dir)))
		return err;
	fk_dir_keep_going(dir);
	if (!dp->is_fixed_root)
		fk_dir_set_limit(dir, dp->nblocks);
	fk_dir_on_orphan(dir, keep_orphans, dp);
	while ((err = fk_dir_next(dir, &ent, diag)) == 1) {
		unsigned char slot[FK_DIRENT_LEN];

		mark_used(dp, ent.slot + 1 - ent.nslots, ent.nslots);
		if (fk_attr_is_label(ent.attr))
			continue; /* a label is not a name in the directory */
		if (fk_dirent_is_dot(&ent))
			continue;
		memset(slot, 0, sizeof(slot));
		fk_slot_pack(vol, &ent, slot);
		if ((err = add_ent(dp, slot, ent.slot, ent.nslots, ent.name,
				   ent.short_name, &id)))
			break;
	}
	if (!err)
		err = check_end(dp, fk_dir_stats(dir), diag);
	fk_dir_close(dir);
	if (err)
		return err;
	dp->nold = dp->nblocks;
	/* The slots read lie in the verified blocks: used[] was marked
	 * within nslots, at most FK_DIR_MAX_ENTS. */
	dp->first_free = 0;
	while (dp->first_free < dp->nslots && dp->used[dp->first_free])
		dp->first_free++;
	return 0;
}

static int open_plan(struct fk_volume *vol, uint32_t clus, int is_keep,
		     struct fk_dirplan **out, struct fk_diag *diag)
{
	struct fk_dirplan *dp = dp_new(vol, clus);
	int err;

	if (!dp)
		return -ENOMEM;
	dp->is_keep = is_keep;
	if ((err = scan(dp, diag))) {
		fk_dirplan_close(dp);
		return err;
	}
	*out = dp;
	return 0;
}

int fk_dirplan_open(struct fk_volume *vol, uint32_t clus,
		    struct fk_dirplan **out, struct fk_diag *diag)
{
	return open_plan(vol, clus, 0, out, diag);
}

int fk_dirplan_open_keep(struct fk_volume *vol, uint32_t clus,
			 struct fk_dirplan **out, struct fk_diag *diag)
{
	return open_plan(vol, clus, 1, out, diag);
}

void fk_dirplan_close(struct fk_dirplan *dp)
{
	if (!dp)
		return;
	free(dp->clus);
	free(dp->used);
	free(dp->ents);
	free(dp->arena);
	free(dp->names.items);
	free(dp->shorts.items);
	free(dp->writes);
	fk_plan_free(&dp->growth);
	free(dp);
}

uint32_t fk_dirplan_clus(const struct fk_dirplan *dp)
{
	return dp->first_clus;
}

const struct fk_plan *fk_dirplan_growth(const struct fk_dirplan *dp)
{
	return &dp->growth;
}

static int add_write(struct fk_dirplan *dp, uint32_t slot_idx,
		     const unsigned char *data)
{
	if (FK_VEC_RESERVE(dp->writes, dp->cap_writes, (size_t)dp->nwrites + 1))
		return -ENOMEM;
	dp->writes[dp->nwrites].slot_idx = slot_idx;
	memcpy(dp->writes[dp->nwrites++].data, data, FK_DIRENT_LEN);
	return 0;
}

int fk_dirplan_new(struct fk_volume *vol, uint32_t clus, uint32_t parent_clus,
		   const struct fk_dirent *times, struct fk_dirplan **out)
{
	struct fk_dirplan *dp = dp_new(vol, clus);
	struct fk_dirent dot = *times;
	unsigned char slot[FK_DIRENT_LEN];
	int err, i;

	if (!dp)
		return -ENOMEM;
	if ((err = add_block(dp, clus)))
		goto out_close;
	/* ".." names the root as cluster 0, even on FAT32. */
	if (parent_clus == fk_dir_resolve(vol, 0))
		parent_clus = 0;
	for (i = 0; i < 2; i++) {
		fk_slot_set_dot(i ? FK_DOT_DOT : FK_DOT, dot.raw);
		dot.attr = FK_ATTR_DIR;
		dot.nt = 0;
		dot.size = 0;
		dot.first_clus = i ? parent_clus : clus;
		memset(slot, 0, sizeof(slot));
		fk_slot_pack(vol, &dot, slot);
		if ((err = add_write(dp, (uint32_t)i, slot)))
			goto out_close;
	}
	mark_used(dp, 0, 2);
	*out = dp;
	return 0;
out_close:
	fk_dirplan_close(dp);
	return err;
}

int fk_dirplan_find(struct fk_dirplan *dp, const char *name,
		    struct fk_dirent *ent, uint32_t *id)
{
	uint32_t i = find_name(dp, name);
	const struct dp_ent *e;

	if (i == NO_ID)
		return 0;
	e = &dp->ents[i];
	memset(ent, 0, sizeof(*ent));
	fk_slot_unpack(dp->vol, e->slot, ent);
	snprintf(ent->name, sizeof(ent->name), "%s", dp->arena + e->name_off);
	snprintf(ent->short_name, sizeof(ent->short_name), "%s",
		 dp->arena + e->short_off);
	ent->slot = e->slot_idx;
	ent->nslots = e->nslots;
	ent->dir_clus = dp->is_fixed_root ? 0 : dp->first_clus;
	*id = i;
	return 1;
}

/*
 * May a new entry's slots run on from block @b - 1 into block @b?  Only
 * when one write puts both on disk: fresh blocks all go out before the
 * link, old blocks adjacent on disk in one vectored write.  Across any
 * other boundary a crash between two writes would cut a long name from
 * its short slot, which fsck.fat reports as a damaged directory.
 */
static int may_span(const struct fk_slot_map *m, uint32_t b)
{
	if (b - 1 >= m->nold)
		return 1;
	return b < m->nold && (!m->clus || m->clus[b] == m->clus[b - 1] + 1);
}

int fk_dirplan_find_free(const struct fk_slot_map *map, uint32_t from,
			 uint32_t n, uint32_t *first)
{
	uint32_t s, run = 0;

	for (s = from; s < map->nslots; s++) {
		if (run && s % map->per_block == 0 &&
		    !may_span(map, s / map->per_block))
			run = 0;
		run = map->used[s] ? 0 : run + 1;
		if (run == n) {
			*first = s + 1 - n;
			return 0;
		}
	}
	return -ENOSPC;
}

/* First run of @n free slots, growing the directory when needed. */
static int find_slots(struct fk_dirplan *dp, struct fk_alloc *alloc, uint32_t n,
		      uint32_t *first, struct fk_diag *diag)
{
	int err;

	for (;;) {
		/* Growth changes no earlier slot or boundary: searching
		 * again from the start finds what going on would. */
		struct fk_slot_map map = {dp->used, dp->nslots, dp->per_block,
					  dp->nold,
					  dp->is_fixed_root ? NULL : dp->clus};

		if (!fk_dirplan_find_free(&map, dp->first_free, n, first))
			return 0;
		if (dp->is_fixed_root) {
			fk_diag_detail(diag, NULL,
				       "the root directory is full");
			return -ENOSPC;
		}
		if (dp->nslots + dp->per_block > FK_DIR_MAX_ENTS) {
			fk_diag_detail(diag, NULL,
				       "the directory has %u slots, "
				       "FAT's limit",
				       FK_DIR_MAX_ENTS);
			return -ENOSPC;
		}
		if ((err = fk_alloc_plan(alloc, dp->clus[dp->nblocks - 1], 1, 0,
					 &dp->growth, diag)) ||
		    (err = add_block(
			     dp, dp->growth.runs[dp->growth.nruns - 1].first +
					 dp->growth.runs[dp->growth.nruns - 1]
						 .nclus -
					 1)))
			return err;
	}
}

/*
 * Free slots skipped before @first, past the last entry, may hold the
 * 0x00 end mark, behind which Windows and mtools would never see the new
 * entry: mark them deleted, and keep them from later entries.
 */
static int mark_skipped(struct fk_dirplan *dp, uint32_t first)
{
	unsigned char e[FK_DIRENT_LEN], old[FK_DIRENT_LEN];
	uint32_t s, from = dp->end_slot;
	int err;

	memset(e, 0, sizeof(e));
	fk_slot_delete(e);
	/* A repair's plan (keep) reads on past the end marker, where the
	 * entries it keeps lie, and those it deletes: an end marker left
	 * among them would hide the new entry from Windows and mtools.
	 * Only end markers are rewritten; live slots stay for the repair. */
	for (s = dp->is_keep ? dp->marker : from; s < from && s < first; s++) {
		if ((err = fk_dir_read_slot(dp->vol, dp->first_clus, s, old)))
			return err;
		if (fk_slot_is_end(old) && (err = add_write(dp, s, e)))
			return err;
	}
	for (s = from; s < first; s++)
		if ((err = add_write(dp, s, e)))
			return err;
	if (first > from)
		mark_used(dp, from, first - from);
	return 0;
}

/* Lay @units of a long name into slots for short name @raw. */
static int write_lfn(struct fk_dirplan *dp, uint32_t first, uint32_t nlfn,
		     const uint16_t *units, size_t nunits,
		     const unsigned char *raw)
{
	struct fk_lfn_slot l;
	unsigned char e[FK_DIRENT_LEN];
	uint32_t i;
	int err, c;

	l.sum = fk_lfn_checksum(raw);
	/* Slots run from the last piece of the name to the first. */
	for (i = 0; i < nlfn; i++) {
		l.ord = nlfn - i;
		l.is_last = i == 0;
		for (c = 0; c < FK_LFN_CHARS; c++) {
			size_t u = (l.ord - 1) * FK_LFN_CHARS + (size_t)c;
			/* NUL after the name, then 0xFFFF padding. */
			l.units[c] = u < nunits	   ? units[u]
				     : u == nunits ? 0
						   : 0xffff;
		}
		fk_slot_lfn_pack(&l, e);
		if ((err = add_write(dp, first + i, e)))
			return err;
	}
	return 0;
}

int fk_dirplan_add(struct fk_dirplan *dp, struct fk_alloc *alloc,
		   const char *name, const struct fk_dirent *fields,
		   uint32_t *id, struct fk_diag *diag)
{
	uint16_t units[FK_LFN_MAX];
	struct fk_dirent ent = *fields;
	unsigned char slot[FK_DIRENT_LEN];
	uint32_t nlfn = 0, first;
	size_t nunits = 0;
	int fit, err;

	if ((err = fk_name_check(name)))
		return err;
	if (find_name(dp, name) != NO_ID)
		return -EEXIST;
	fit = fk_short_choose(name, short_taken, dp, ent.raw, &ent.nt);
	if (fit < 0)
		return fit;
	if (fit == FK_SHORT_NEEDS_LFN) {
		if ((err = fk_utf8_to_utf16(name, units, FK_LFN_MAX, &nunits)))
			return err;
		nlfn = (uint32_t)((nunits + FK_LFN_CHARS - 1) / FK_LFN_CHARS);
	}
	if ((err = find_slots(dp, alloc, nlfn + 1, &first, diag)) ||
	    (err = mark_skipped(dp, first)))
		return err;
	if (fit == FK_SHORT_NEEDS_LFN &&
	    (err = write_lfn(dp, first, nlfn, units, nunits, ent.raw)))
		return err;
	memset(slot, 0, sizeof(slot));
	fk_slot_pack(dp->vol, &ent, slot);
	fk_short_display(ent.raw, ent.nt, ent.short_name,
			 sizeof(ent.short_name));
	if ((err = add_ent(dp, slot, first + nlfn, nlfn + 1, name,
			   ent.short_name, id)))
		return err;
	dp->ents[*id].is_changed = 1;
	mark_used(dp, first, nlfn + 1);
	return 0;
}

void fk_dirplan_set(struct fk_dirplan *dp, uint32_t id,
		    const struct fk_dirent *fields)
{
	struct dp_ent *e = &dp->ents[id];
	struct fk_dirent ent = *fields, old;

	/* The name and its case flags are not the caller's to change. */
	fk_slot_unpack(dp->vol, e->slot, &old);
	ent.nt = old.nt;
	fk_slot_pack_fields(dp->vol, &ent, e->slot);
	e->is_changed = 1;
}

void fk_dirplan_set_tag(struct fk_dirplan *dp, uint32_t id, uint32_t tag)
{
	dp->ents[id].tag = tag;
}

uint32_t fk_dirplan_tag(const struct fk_dirplan *dp, uint32_t id)
{
	return dp->ents[id].tag;
}

/* ---- commit -------------------------------------------------------------- */

static uint64_t block_off(const struct fk_dirplan *dp, uint32_t b)
{
	const struct fk_geom *g = &dp->vol->g;

	if (dp->is_fixed_root)
		return g->root_off + (uint64_t)b * g->sec_len;
	return fk_clus_off(g, dp->clus[b]);
}

static int cmp_write(const void *a, const void *b)
{
	uint32_t x = ((const struct dp_write *)a)->slot_idx;
	uint32_t y = ((const struct dp_write *)b)->slot_idx;

	return x < y ? -1 : x > y;
}

/* Gather every slot to write (long-name slots and changed short ones). */
static int gather(struct fk_dirplan *dp)
{
	uint32_t i;
	int err;

	for (i = 0; i < dp->nents; i++) {
		if (!dp->ents[i].is_changed)
			continue;
		if ((err = add_write(dp, dp->ents[i].slot_idx,
				     dp->ents[i].slot)))
			return err;
		dp->ents[i].is_changed = 0;
	}
	/* qsort() must not see NULL, even with nothing to sort. */
	if (dp->nwrites)
		qsort(dp->writes, dp->nwrites, sizeof(*dp->writes), cmp_write);
	return 0;
}

/*
 * Write blocks [@from, @to) that have writes (or all of them when
 * @is_fresh: new blocks start as zeros and are written whole).  Blocks
 * adjacent on disk go out in one vectored write.
 */
static int write_blocks(struct fk_dirplan *dp, uint32_t from, uint32_t to,
			int is_fresh)
{
	uint32_t w = 0, b, nb = to - from;
	struct iovec *iov = NULL;
	unsigned char *buf = NULL;
	uint8_t *touched = NULL;
	int err = 0, n;

	if (!nb)
		return 0;
	buf = calloc(nb, dp->block_len);
	touched = calloc(nb, 1);
	iov = calloc(nb, sizeof(*iov));
	if (!buf || !touched || !iov) {
		err = -ENOMEM;
		goto out;
	}
	for (w = 0; w < dp->nwrites; w++) {
		b = dp->writes[w].slot_idx / dp->per_block;
		if (b < from || b >= to)
			continue;
		if (!touched[b - from] && !is_fresh &&
		    (err = fk_device_read(dp->vol->dev, block_off(dp, b),
					  buf + (size_t)(b - from) *
							  dp->block_len,
					  dp->block_len)))
			goto out;
		touched[b - from] = 1;
		memcpy(buf + (size_t)(b - from) * dp->block_len +
			       (dp->writes[w].slot_idx % dp->per_block) *
				       FK_DIRENT_LEN,
		       dp->writes[w].data, FK_DIRENT_LEN);
	}
	for (b = 0; b < nb && !err; b += (uint32_t)n) {
		n = 0;
		if (!touched[b] && !is_fresh) {
			n = 1;
			continue;
		}
		while (b + (uint32_t)n < nb && (touched[b + n] || is_fresh) &&
		       (n == 0 ||
			block_off(dp, from + b + n) ==
				block_off(dp, from + b) +
					(uint64_t)n * dp->block_len)) {
			iov[n].iov_base = buf + (size_t)(b + n) * dp->block_len;
			iov[n].iov_len = dp->block_len;
			n++;
		}
		err = fk_device_writev(dp->vol->dev, block_off(dp, from + b),
				       iov, n);
	}
out:
	free(buf);
	free(touched);
	free(iov);
	return err;
}

int fk_dirplan_write_fresh(struct fk_dirplan *dp)
{
	int err = gather(dp);

	if (err)
		return err;
	return write_blocks(dp, dp->nold, dp->nblocks, 1);
}

int fk_dirplan_link(struct fk_dirplan *dp)
{
	/* The block before the growth: the old end, or a new directory's
	 * own first cluster. */
	uint32_t before = dp->nblocks - dp->growth.nclus - 1;

	if (!dp->growth.nclus)
		return 0;
	return fk_fat_put(dp->vol, dp->clus[before], dp->growth.runs[0].first);
}

uint32_t fk_dirplan_link_from(const struct fk_dirplan *dp)
{
	if (!dp->growth.nclus)
		return 0;
	return dp->clus[dp->nblocks - dp->growth.nclus - 1];
}

int fk_dirplan_write_changes(struct fk_dirplan *dp)
{
	int err = gather(dp);

	if (err)
		return err;
	return write_blocks(dp, 0, dp->nold, 0);
}
