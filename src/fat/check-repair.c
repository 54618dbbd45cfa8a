/*
 * check-repair.c: the repair steps, in the contract's write order: FAT
 * copies (per run of differing sectors, the copy kept), FAT entries
 * (flushed), directory entries, freed clusters,
 * salvaged chains, boot sector, FSInfo last.  Each step applies what the phases planned and
 * nothing else; none of them judges the volume again.
 */
#include "fat/check-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fat/dir.h"
#include "fat/dirplan.h"
#include "fat/fat-boot.h"
#include "fat/slot.h"
#include "iface/check-family.h"
#include "io/cache.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/names.h"
#include "table/fat.h"
#include "table/fsinfo.h"
#include "volume/volume.h"

#define RESYNC_LEN	 (1u << 20) /* bytes per read when resyncing FATs */
#define BS32_BK_BOOT_SEC 50	    /* BPB_BkBootSec */

/* ---- repairs ------------------------------------------------------------- */

/* Copy the runs of sectors where @dst differs from @src (the same range
 * of two FAT copies), so a sparse image stays sparse. */
static int resync_range(struct fat_check *ck, const unsigned char *src,
			const unsigned char *dst, uint64_t dst_off, size_t len)
{
	uint32_t sec_len = ck->g->sec_len;
	size_t i = 0, j;
	int err;

	while (i < len) {
		if (!memcmp(src + i, dst + i, sec_len)) {
			i += sec_len;
			continue;
		}
		for (j = i + sec_len;
		     j < len && memcmp(src + j, dst + j, sec_len); j += sec_len)
			;
		if ((err = fk_device_write(ck->vol->dev, dst_off + i, src + i,
					   j - i)))
			return err;
		i = j;
	}
	return 0;
}

/* Run @r of the copies: the kept copy's sectors over the other's. */
static int resync_run(struct fat_check *ck, const struct copy_run *r,
		      unsigned char *src, unsigned char *dst)
{
	const struct fk_geom *g = ck->g;
	uint64_t copy_len = (uint64_t)g->fat_secs * g->sec_len;
	uint64_t off = (uint64_t)r->first * g->sec_len;
	uint64_t end = off + (uint64_t)r->nsecs * g->sec_len;
	uint32_t c;
	int err = 0;

	for (; off < end && !err; off += RESYNC_LEN) {
		size_t len = end - off < RESYNC_LEN ? (size_t)(end - off)
						    : RESYNC_LEN;

		err = fk_device_read(ck->vol->dev,
				     g->fat_off + r->keep * copy_len + off, src,
				     len);
		for (c = 0; c < g->nfats && !err; c++) {
			uint64_t dst_off = g->fat_off + c * copy_len + off;

			if (c == r->keep)
				continue;
			if (!(err = fk_device_read(ck->vol->dev, dst_off, dst,
						   len)))
				err = resync_range(ck, src, dst, dst_off, len);
		}
	}
	return err;
}

/* Each run where the copies differ gets the kept copy's sectors in every
 * copy: the check read the FAT so, and the steps after this one read it
 * from the first copy, which then holds them. */
static int repair_fat_copies(struct fat_check *ck)
{
	unsigned char *src = NULL, *dst = NULL;
	size_t i;
	int err = 0;

	if (!ck->fix_copies)
		return 0;
	if (!(src = malloc(RESYNC_LEN)) || !(dst = malloc(RESYNC_LEN))) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ck->copy_runs.n && !err; i++)
		err = resync_run(ck, &ck->copy_runs.v[i], src, dst);
out:
	free(src);
	free(dst);
	return err;
}

static int repair_fat(struct fat_check *ck)
{
	size_t i;
	int err;

	/* FAT[0] is written against the media byte the boot sector gets
	 * last (repair_boot()): after a crash in between, FAT[0] holds a
	 * valid one, which the next run copies to the boot sector. */
	if (ck->fix_media)
		fk_fat_set_media(ck->vol, ck->fix_media);
	if ((err = fk_fat_fix_reserved(ck->vol, ck->fix_fat0, ck->fix_fat1)))
		return err;
	for (i = 0; i < ck->fat_fixes.n; i++)
		if ((err = fk_fat_put(ck->vol, ck->fat_fixes.v[i].clus,
				      ck->fat_fixes.v[i].val)))
			return err;
	return fk_cache_flush(ck->vol->fat);
}

/*
 * A short entry's new name, and its long-name slots' checksums made to
 * match it (their fields that must be 0 zeroed on the way).  Slots that
 * lie together on the volume go in one write (a name within one cluster:
 * all of it at once).  Else the short slot goes
 * first, then the long-name slots: a crash in between leaves a long name
 * whose checksum alone is wrong, which the next run re-attaches.  Nothing
 * is written unless the slots still hold a long name and a short entry.
 */
static int apply_name(struct fat_check *ck, const struct ent_fix *f)
{
	unsigned char e[FK_LFN_MAX_ORD + 1][FK_DIRENT_LEN];
	uint64_t off[FK_LFN_MAX_ORD + 1];
	uint32_t s, k, n = f->nslots, last = n - 1;
	uint8_t sum;
	int err;

	if (!n || n > FK_LFN_MAX_ORD + 1)
		return 0;
	for (s = 0; s < n; s++)
		if ((err = fk_dir_slot_off(ck->vol, f->dir_clus, f->slot + s,
					   &off[s])) ||
		    (err = fk_device_read(ck->vol->dev, off[s], e[s],
					  FK_DIRENT_LEN)))
			return err;
	if (fk_slot_is_free(e[last]) || fk_slot_is_lfn(e[last]))
		return 0;
	for (s = 0; s < last; s++)
		if (fk_slot_is_free(e[s]) || !fk_slot_is_lfn(e[s]))
			return 0;
	if (f->set_name) {
		memcpy(e[last], f->name, 11);
		e[last][12] = f->nt;
	}
	sum = fk_lfn_checksum(e[last]);
	for (s = 0; s < last; s++) {
		e[s][13] = sum;
		fk_slot_lfn_clean(e[s]); /* 0 there, as every writer has it */
	}
	if (off[last] != off[0] + (uint64_t)last * FK_DIRENT_LEN) {
		if (f->set_name &&
		    (err = fk_device_write(ck->vol->dev, off[last], e[last],
					   FK_DIRENT_LEN)))
			return err;
		n = last;
	}
	/* The rest in runs of adjacent slots. */
	for (s = 0; s < n; s = k) {
		for (k = s + 1;
		     k < n &&
		     off[k] == off[s] + (uint64_t)(k - s) * FK_DIRENT_LEN;
		     k++)
			;
		if ((err = fk_device_write(ck->vol->dev, off[s], e[s],
					   (size_t)(k - s) * FK_DIRENT_LEN)))
			return err;
	}
	return 0;
}

/*
 * End markers before entries that lie past them become deleted slots, a
 * cluster's worth of slots at a time (the fixed root is one run): read,
 * and written back from the first changed slot to the last.  Every state
 * a crash can leave is a directory each reader reads whole, with fewer
 * entries hidden, which the next run finds again.
 */
static int apply_unend(struct fat_check *ck, const struct ent_fix *f)
{
	uint32_t per = ck->g->clus_len / FK_DIRENT_LEN, s, n, k, lo, hi;
	unsigned char *buf = malloc(ck->g->clus_len);
	uint64_t off;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (s = f->slot; s - f->slot < f->nslots && !err; s += n) {
		n = per - s % per;
		if (n > f->nslots - (s - f->slot))
			n = f->nslots - (s - f->slot);
		if ((err = fk_dir_slot_off(ck->vol, f->dir_clus, s, &off)) ||
		    (err = fk_device_read(ck->vol->dev, off, buf,
					  (size_t)n * FK_DIRENT_LEN)))
			break;
		for (lo = n, hi = 0, k = 0; k < n; k++) {
			if (buf[k * FK_DIRENT_LEN])
				continue;
			fk_slot_delete(buf + k * FK_DIRENT_LEN);
			lo = lo < k ? lo : k;
			hi = k + 1;
		}
		if (lo < hi)
			err = fk_device_write(
				ck->vol->dev,
				off + (uint64_t)lo * FK_DIRENT_LEN,
				buf + lo * FK_DIRENT_LEN,
				(size_t)(hi - lo) * FK_DIRENT_LEN);
	}
	free(buf);
	return err;
}

/*
 * A directory grows as a writer grows it: the new cluster is zeroed while
 * nothing links to it, then chained (end-of-chain, and the link from the
 * old last cluster) in every FAT copy.  A crash before the flush leaves a
 * lost cluster at worst; after it, an empty cluster at the directory's
 * end, which every reader takes for free slots.  Nothing is written
 * unless the old last cluster still ends the chain and the new one is
 * still free.
 */
static int apply_grow(struct fat_check *ck, const struct ent_fix *f)
{
	unsigned char *zero;
	uint32_t val;
	int err;

	if ((err = fk_fat_get(ck->vol, f->prev_clus, &val)))
		return err;
	if (fk_fat_class(ck->g, val) != FK_ENT_EOC)
		return 0;
	if ((err = fk_fat_get(ck->vol, f->first_clus, &val)))
		return err;
	if (val)
		return 0;
	if (!(zero = calloc(1, ck->g->clus_len)))
		return -ENOMEM;
	err = fk_device_write(ck->vol->dev, fk_clus_off(ck->g, f->first_clus),
			      zero, ck->g->clus_len);
	free(zero);
	if (err ||
	    (err = fk_fat_put(ck->vol, f->first_clus, fk_fat_eoc(ck->g))) ||
	    (err = fk_fat_put(ck->vol, f->prev_clus, f->first_clus)))
		return err;
	return fk_cache_flush(ck->vol->fat);
}

/* Volume offsets of @n slots from @first of directory @dir_clus. */
static int find_slots(struct fat_check *ck, uint32_t dir_clus, uint32_t first,
		      uint32_t n, uint64_t *off)
{
	uint32_t s;
	int err;

	for (s = 0; s < n; s++)
		if ((err = fk_dir_slot_off(ck->vol, dir_clus, first + s,
					   &off[s])))
			return err;
	return 0;
}

/* Write @n slots @e at @off, a run of slots adjacent on disk at a time. */
static int write_slots(struct fat_check *ck, const uint64_t *off,
		       unsigned char (*e)[FK_DIRENT_LEN], uint32_t n)
{
	uint32_t s, k;
	int err;

	for (s = 0; s < n; s = k) {
		for (k = s + 1;
		     k < n &&
		     off[k] == off[s] + (uint64_t)(k - s) * FK_DIRENT_LEN;
		     k++)
			;
		if ((err = fk_device_write(ck->vol->dev, off[s], e[s],
					   (size_t)(k - s) * FK_DIRENT_LEN)))
			return err;
	}
	return 0;
}

/*
 * An entry out of the "." and ".." slots, its long-name slots with it,
 * after every other fix of it (it is copied as those left it).  Order:
 * end markers before the new place become deleted slots (or the copy
 * would lie hidden behind one; what they hid is what the walk read on,
 * its stale entries deleted by now); the copy is written whole; then the old
 * short slot is deleted, then the old long-name slots; "." and ".." are
 * created after (apply_phase()).  A crash before the old short slot goes
 * leaves the entry twice, which the next run reports as a duplicate name
 * and a cross-link and repairs, keeping the first (the old one, moved
 * again); after it, the old long-name slots are orphans the next run
 * deletes.  Never neither copy.  Nothing is written unless the old slots
 * still hold an entry and the new ones are still free.
 */
static int apply_move(struct fat_check *ck, const struct ent_fix *f)
{
	unsigned char e[FK_LFN_MAX_ORD + 1][FK_DIRENT_LEN];
	unsigned char t[FK_DIRENT_LEN];
	uint64_t from[FK_LFN_MAX_ORD + 1], to[FK_LFN_MAX_ORD + 1];
	uint32_t s, n = f->nslots, last = n - 1;
	struct ent_fix skip;
	int err;

	if (!n || n > FK_LFN_MAX_ORD + 1)
		return 0;
	if ((err = find_slots(ck, f->dir_clus, f->slot, n, from)) ||
	    (err = find_slots(ck, f->dir_clus, f->to, n, to)))
		return err == FK_ECORRUPT ? 0 : err; /* the growth failed */
	for (s = 0; s < n; s++) {
		if ((err = fk_device_read(ck->vol->dev, to[s], t, sizeof(t))) ||
		    (err = fk_device_read(ck->vol->dev, from[s], e[s],
					  FK_DIRENT_LEN)))
			return err;
		if (!fk_slot_is_free(t))
			return 0;
	}
	if (fk_slot_is_free(e[last]))
		return 0; /* deleted by another fix */
	memset(&skip, 0, sizeof(skip));
	skip.dir_clus = f->dir_clus;
	skip.slot = f->skip_from;
	skip.nslots = f->to - f->skip_from;
	if ((err = apply_unend(ck, &skip)) || (err = write_slots(ck, to, e, n)))
		return err;
	for (s = 0; s < n; s++)
		fk_slot_delete(e[s]);
	if ((err = write_slots(ck, from + last, e + last, 1)))
		return err;
	return write_slots(ck, from, e, last);
}

static int apply_entry(struct fat_check *ck, const struct ent_fix *f)
{
	unsigned char e[FK_DIRENT_LEN];
	struct fk_dirent ent;
	uint32_t s;
	int err;

	switch (f->op) {
	case EF_SET:
		if ((err = fk_dir_read_slot(ck->vol, f->dir_clus, f->slot, e)))
			return err;
		memset(&ent, 0, sizeof(ent));
		fk_slot_unpack(ck->vol, e, &ent);
		if (f->set_first)
			ent.first_clus = f->first_clus;
		if (f->set_size)
			ent.size = f->size;
		if (f->set_attr)
			ent.attr = f->attr;
		fk_slot_pack(ck->vol, &ent, e);
		return fk_dir_write_slot(ck->vol, f->dir_clus, f->slot, e);
	case EF_CREATE:
		if ((err = fk_dir_read_slot(ck->vol, f->dir_clus, f->slot, e)))
			return err;
		if (!fk_slot_is_free(e))
			return 0; /* not free after all: leave it */
		return fk_dir_write_slot(ck->vol, f->dir_clus, f->slot,
					 f->slot_data);
	case EF_NAME:
		return apply_name(ck, f);
	case EF_GROW:
		return apply_grow(ck, f);
	case EF_MOVE:
		return apply_move(ck, f);
	case EF_UNEND:
		return apply_unend(ck, f);
	case EF_REBUILD:
		if ((err = fk_dir_read_slot(ck->vol, f->dir_clus, f->slot, e)))
			return err;
		if (memcmp(e, f->old, sizeof(e)))
			return 0; /* changed since: leave it */
		return fk_dir_write_slot(ck->vol, f->dir_clus, f->slot,
					 f->slot_data);
	case EF_DELETE:
		for (s = 0; s < f->nslots; s++) {
			uint32_t slot = f->slot + s;

			if ((err = fk_dir_read_slot(ck->vol, f->dir_clus, slot,
						    e)))
				return err;
			fk_slot_delete(e);
			if ((err = fk_dir_write_slot(ck->vol, f->dir_clus, slot,
						     e)))
				return err;
		}
		return 0;
	}
	return 0;
}

/*
 * The end markers go last (EF_UNEND): a stale entry past one is deleted
 * first, so a crash between the two never leaves it visible to win a
 * cluster from a live file on the next run; kept hidden entries are
 * fixed while still hidden, and a crash leaves them for the next run.
 */
/*
 * When an entry fix is applied: entries in the "." and ".." slots move
 * after every other fix of them (they are copied as fixed), into
 * directories grown first; creations of "." and ".." after every
 * deletion and move (a stale entry read past an end marker may hold the
 * slot until then, a moved one until it is copied), and the end markers
 * last.
 */
static int apply_phase(int op)
{
	switch (op) {
	case EF_GROW:
		return 1;
	case EF_MOVE:
		return 2;
	case EF_CREATE:
		return 3;
	case EF_UNEND:
		return 4;
	default:
		return 0;
	}
}

static int repair_entries(struct fat_check *ck)
{
	size_t i;
	int err, phase;

	for (phase = 0; phase < 5; phase++)
		for (i = 0; i < ck->ent_fixes.n; i++)
			if (apply_phase(ck->ent_fixes.v[i].op) == phase &&
			    (err = apply_entry(ck, &ck->ent_fixes.v[i])))
				return err;
	return 0;
}

static void count_freed(struct fat_check *ck, uint32_t clus, uint32_t n)
{
	ck->freed += n;
	if (!ck->first_freed || clus < ck->first_freed)
		ck->first_freed = clus;
}

/* Free @nclus clusters of a chain from @first (a trimmed tail). */
static int free_chain(struct fat_check *ck, uint32_t first, uint32_t nclus)
{
	uint32_t clus = first, val, i;
	int err;

	for (i = 0; i < nclus; i++) {
		if ((err = fk_fat_get(ck->vol, clus, &val)) ||
		    (err = fk_fat_put(ck->vol, clus, 0)))
			return err;
		count_freed(ck, clus, 1);
		if (fk_fat_class(ck->g, val) != FK_ENT_NEXT)
			break;
		clus = val;
	}
	return 0;
}

static int repair_free(struct fat_check *ck)
{
	uint32_t clus, max = fk_clus_max(ck->g), run;
	size_t i;
	int err;

	for (i = 0; i < ck->tails.n; i++)
		if (ck->tails.v[i].is_trimmed &&
		    (err = free_chain(ck, ck->tails.v[i].first,
				      ck->tails.v[i].nclus)))
			return err;
	for (clus = FK_FIRST_CLUS; ck->fix_lost && clus <= max; clus++) {
		if (get_cs(ck, clus) == CS_FREE)
			continue;
		for (run = 1;
		     clus + run <= max && get_cs(ck, clus + run) != CS_FREE;
		     run++)
			;
		if ((err = fk_fat_fill(ck->vol, clus, run, 0)))
			return err;
		count_freed(ck, clus, run);
		clus += run - 1;
	}
	return fk_cache_flush(ck->vol->fat);
}

/*
 * --salvage: the FAT already ends each saved chain (the fat step).  New
 * directory clusters (a new FOUND.nnn, growth) are chained and flushed,
 * written whole, then linked and flushed; last the entries in blocks that
 * existed.  A crash before the last write leaves lost clusters, which the
 * next run saves again.
 */
static int repair_salvage(struct fat_check *ck)
{
	struct salvage *sv = &ck->sv;
	int err;

	if (!sv->nsaved)
		return 0;
	if ((err = fk_alloc_write_chain(sv->alloc, ck->vol, &sv->own)) ||
	    (err = fk_alloc_write_chain(sv->alloc, ck->vol,
					fk_dirplan_growth(sv->found))) ||
	    (err = fk_alloc_write_chain(sv->alloc, ck->vol,
					fk_dirplan_growth(sv->root))) ||
	    (err = fk_cache_flush(ck->vol->fat)))
		return err;
	if ((err = fk_dirplan_write_fresh(sv->found)) ||
	    (err = fk_dirplan_write_fresh(sv->root)))
		return err;
	if ((err = fk_dirplan_link(sv->found)) ||
	    (err = fk_dirplan_link(sv->root)) ||
	    (err = fk_cache_flush(ck->vol->fat)))
		return err;
	if ((err = fk_dirplan_write_changes(sv->found)))
		return err;
	return fk_dirplan_write_changes(sv->root);
}

/* A missing FAT32 backup boot sector: the copy is written first, then the
 * boot sector that names it (BPB_BkBootSec, offset 50). */
static int repair_new_backup(struct fat_check *ck)
{
	struct fk_volume *vol = ck->vol;
	uint32_t sec = ck->fix_new_backup;
	int err;

	if (!sec)
		return 0;
	vol->boot[BS32_BK_BOOT_SEC] = (unsigned char)sec;
	vol->boot[BS32_BK_BOOT_SEC + 1] = (unsigned char)(sec >> 8);
	if ((err = fk_device_write(vol->dev, (uint64_t)sec * vol->g.sec_len,
				   vol->boot, vol->g.sec_len)))
		return err;
	vol->g.backup_sec = sec;
	vol->g.backup_sec_outside = 0;
	return 0;
}

static int repair_boot(struct fat_check *ck)
{
	int err;

	if (!ck->fix_dirty && !ck->fix_label && !ck->fix_backup &&
	    !ck->fix_new_backup && !ck->fix_media)
		return 0;
	if ((err = repair_new_backup(ck)))
		return err;
	return fk_fat_fix_boot(ck->vol, ck->fix_dirty,
			       ck->fix_label ? ck->label : NULL, 1);
}

static int repair_fsinfo(struct fat_check *ck)
{
	uint32_t used =
		ck->sv.nsaved ? ck->sv.nfree - fk_alloc_nfree(ck->sv.alloc) : 0;
	uint32_t nfree = ck->st->free_clus + ck->freed - used - ck->grown;
	uint32_t hint = ck->fsi.next_free;

	if (!ck->fsi.is_present ||
	    (!ck->fix_fsinfo && !ck->freed && !used && !ck->grown))
		return 0;
	if (used) /* the hint may name a cluster FOUND.nnn took */
		hint = fk_alloc_next_free(ck->sv.alloc);
	else if (!ck_fsinfo_hint_ok(ck, hint) || !ck->fsi.is_lead_ok ||
		 !ck->fsi.is_struc_ok || !ck->fsi.is_trail_ok) {
		hint = ck->first_free;
		if (ck->first_freed && (!hint || ck->first_freed < hint))
			hint = ck->first_freed;
		if (!hint)
			hint = FK_FSINFO_UNKNOWN;
	}
	return fk_fsinfo_write(ck->vol, nfree, hint);
}

/* The FAT family's repair steps, in write order. */
static int repair_fat_family(struct fat_check *ck)
{
	int err;

	if ((err = repair_fat_copies(ck)) || (err = repair_fat(ck)) ||
	    (err = repair_entries(ck)) || (err = repair_free(ck)) ||
	    (err = repair_salvage(ck)) || (err = repair_boot(ck)) ||
	    (err = repair_fsinfo(ck)))
		return err;
	return fk_device_sync(ck->vol->dev);
}

int ck_fat_repair(void *state, struct fk_diag *diag)
{
	(void)diag; /* fk_check_repair() names the device */
	return repair_fat_family(state);
}
