/*
 * exfat-prealloc.c: fatprealloc's exFAT family.  The same contract as the
 * FAT side in fat-prealloc.c (resolve, plan, validate everything, then commit
 * in a crash-safe order; a refusal writes nothing), with exFAT's own
 * structures: the free map comes from the allocation bitmap (one pass), a
 * contiguous file gets NoFatChain and no FAT writes, and entry sets carry
 * ValidDataLength, a SetChecksum and a NameHash through the volume's
 * up-case table.
 *
 * Write order (the specification's section 8.1, plus our batching):
 *   1. VolumeDirty set (if it was clear);
 *   2. FAT chains, only for files that end up fragmented (and the links of
 *      a NoFatChain run that grows past a gap);
 *   3. allocation bitmap, through the bounded dirty-sector cache;
 *   4. zeroing of the new region (from the old ValidDataLength);
 *   5. links from existing chains, then the entry sets (the commit point:
 *      from here the new clusters are owned);
 *   6. PercentInUse and
 *   7. VolumeDirty cleared (only if this run set it), one boot sector write.
 * A crash before 5 leaves at worst bitmap bits nobody owns with VolumeDirty
 * set; a signal before 5 clears those bits again (rollback), unless
 * --per-cluster took a cluster (it takes them one at a time after the
 * zeroing): then the run keeps what it took (fk_prun_cut()).  --sync puts
 * an fsync at each ordering point: after 1, after 2 to 4 (nothing reaches
 * what they write before 5, so they need no order among them), after the
 * links, and after 5 and after 7; the default syncs after 5 and after 7.
 *
 * The run itself (requests, the cluster plan, zeroing, the result, stop
 * requests and rollback decisions) is prealloc.c's: this file plugs into
 * it as fk_exfat_prealloc_family, with the family's start, resolve() and
 * the writes in the order above.  The rest, sharing exfat-prealloc-int.h:
 * exfat-prealloc-dir.c (directories held in memory, free entry slots),
 * exfat-prealloc-sets.c (paths, sizes, entry sets) and
 * exfat-prealloc-own.c (the ownership walk before the first write).
 */
#include "exfat/exfat-boot.h"
#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exfat/exfat-prealloc-int.h"
#include "iface/dirent.h"
#include "iface/prealloc-int.h"
#include "io/cache.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "table/alloc.h"
#include "table/fat.h"
#include "volume/volume.h"

/* ---- time ----------------------------------------------------------------- */

static int days_of(const struct tm *tm)
{
	return tm->tm_year * 366 + tm->tm_yday;
}

/* The exFAT timestamp (7.4.8), 10 ms increment and UTC offset of @t. */
static void make_stamp(struct xop *op, int64_t t, int is_utc)
{
	time_t tt = (time_t)t;
	struct tm l, g;
	uint16_t date, tod;
	long off = 0;

	if ((int64_t)tt != t || !gmtime_r(&tt, &g)) {
		/* A time no struct tm holds: fk_dos_time() clamps it. */
		fk_dos_time(NULL, t, &date, &tod, &op->stamp_ms10);
		op->stamp_ts = (uint32_t)date << 16 | tod;
		op->stamp_tz = 0x80;
		return;
	}
	if (is_utc || !localtime_r(&tt, &l)) {
		l = g;
	} else {
		/* No tm_gmtoff in POSIX: the difference of the two. */
		off = (long)(l.tm_hour - g.tm_hour) * 3600 +
		      (long)(l.tm_min - g.tm_min) * 60;
		if (days_of(&l) != days_of(&g))
			off += (l.tm_year > g.tm_year ||
				(l.tm_year == g.tm_year &&
				 l.tm_yday > g.tm_yday))
				       ? 86400
				       : -86400;
	}
	fk_dos_time(&l, t, &date, &tod, &op->stamp_ms10);
	op->stamp_ts = (uint32_t)date << 16 | tod;
	op->stamp_tz = (uint8_t)(0x80 | ((off / 900) & 0x7f));
}

static int resolve(struct fk_prun *run, size_t r,
		   const struct fk_prealloc_req *req, struct fk_diag *diag)
{
	struct xop *op = run->fam_op;
	uint16_t leaf[FK_EXFAT_NAME_MAX + 1];
	struct xfile *fp;
	struct xdir *d;
	struct xname nm;
	uint32_t len16, i;
	int is_dir_form, err, k;

	if (req->len > (uint64_t)op->vol->g.nclus * op->vol->g.clus_len) {
		fk_diag_detail(diag, NULL, "larger than the whole volume");
		return -EFBIG;
	}
	if ((err = xp_resolve_parent(op, req->path, &d, leaf, &len16,
				     &is_dir_form, diag)))
		return err;
	if (!len16)
		return -EISDIR; /* "/" is the root */
	i = xp_name_find(op, d, leaf, len16);
	if (i != NO_TAG) {
		struct xname *found = &d->names[i];

		if ((err = xp_judge_set(found, diag)))
			return err;
		if (found->attr & FK_ATTR_DIR)
			return -EISDIR;
		if (is_dir_form)
			return -ENOTDIR;
		if (found->tag != NO_TAG) { /* the same file again */
			fp = &op->files[found->tag];
			if (req->len > fp->pf.want)
				fp->pf.want = req->len;
			run->file_of[r] = found->tag;
			return 0;
		}
		fp = (struct xfile *)fk_prun_add_file(run, req);
		fp->pf.old_size = found->s.data_len;
		fp->old_vdl = found->valid_len;
		fp->was_nfc = found->s.is_no_fat_chain;
		if ((err = xp_load_stream(op, &found->s, 1, "file", fp->pf.path,
					  &fp->pf.old, diag)))
			return err;
	} else if (is_dir_form) {
		return -ENOENT;
	} else {
		uint32_t nents = 2 + fk_exfat_name_nents(len16);

		memset(&nm, 0, sizeof(nm));
		if ((err = xp_take_slots(op, d, nents, &nm.idx, diag)))
			return err;
		nm.len = len16;
		nm.nents = nents;
		nm.attr = FK_ATTR_ARCHIVE;
		if (!(nm.name16 = calloc(len16 + 1, sizeof(uint16_t))))
			return -ENOMEM;
		memcpy(nm.name16, leaf, len16 * sizeof(uint16_t));
		if ((k = xp_name_push(d, &nm)) < 0) {
			free(nm.name16);
			return k;
		}
		i = (uint32_t)k;
		xp_name_index(op, d, i);
		fp = (struct xfile *)fk_prun_add_file(run, req);
		fp->pf.is_new = 1;
	}
	fp->d = d;
	fp->name_i = i;
	d->names[i].tag = (uint32_t)(fp - op->files);
	run->file_of[r] = (size_t)(fp - op->files);
	return 0;
}

/* ---- commit --------------------------------------------------------------- */

static int write_boot(struct xop *op)
{
	return fk_device_write(op->vol->dev, 0, op->vol->boot,
			       op->vol->g.sec_len);
}

/* Set or clear bits of @nclus clusters from @first in the bitmap cache. */
static int bitmap_put(struct xop *op, uint32_t first, uint32_t nclus,
		      int is_used)
{
	uint32_t sec_len = op->vol->g.sec_len;
	uint64_t i = first - FK_FIRST_CLUS, end = i + nclus;
	int err;

	while (i < end) {
		uint32_t sec = (uint32_t)(i / 8 / sec_len);
		uint64_t sec_end = ((uint64_t)sec + 1) * sec_len * 8;
		unsigned char *p;

		if (i % ((uint64_t)sec_len * 8) == 0 && end >= sec_end) {
			/* The run covers the whole sector: no read first. */
			if ((err = fk_cache_get_fresh(op->bmc, sec, &p)))
				return err;
			memset(p, is_used ? 0xff : 0, sec_len);
			i = sec_end;
			continue;
		}
		if ((err = fk_cache_get_dirty(op->bmc, sec, &p)))
			return err;
		for (; i < end && i < sec_end; i++) {
			unsigned char *byte = p + (i / 8) % sec_len;
			unsigned char bit = (unsigned char)(1u << (i % 8));

			if (i % 8 == 0 && end - i >= 8 && i + 8 <= sec_end) {
				*byte = is_used ? 0xff : 0;
				i += 7;
				continue;
			}
			*byte = is_used ? (unsigned char)(*byte | bit)
					: (unsigned char)(*byte & ~bit);
		}
	}
	return 0;
}

/* @plan as one unlinked chain ending in end-of-chain (in the cache). */
static int put_chain(struct xop *op, const struct fk_plan *plan)
{
	uint32_t eoc = fk_fat_eoc(&op->vol->g);
	size_t r;
	int err;

	for (r = 0; r < plan->nruns; r++)
		if ((err = fk_fat_put_run(
			     op->vol, plan->runs[r].first, plan->runs[r].nclus,
			     r + 1 < plan->nruns ? plan->runs[r + 1].first
						 : eoc)))
			return err;
	return 0;
}

/*
 * Step 2: fresh directory clusters zeroed, then, in the FAT, the chains of
 * fragmented files and grown directories, unreachable from anything, and
 * the links of a NoFatChain run that becomes a chain (meaningless until
 * its entry clears NoFatChain).  Links from existing chains wait for
 * step 5, behind a barrier, so no reader reaches a cluster of old bytes.
 */
static int write_fat(struct xop *op)
{
	const struct fk_geom *g = &op->vol->g;
	size_t i, r;
	int err;

	for (i = 0; i < op->ndirs; i++)
		for (r = 0; r < op->dirs[i]->growth.nruns; r++) {
			const struct fk_run *run = &op->dirs[i]->growth.runs[r];

			if ((err = fk_device_zero(
				     op->vol->dev, fk_clus_off(g, run->first),
				     (uint64_t)run->nclus * g->clus_len)))
				return err;
		}
	for (i = 0; i < op->ndirs; i++) {
		struct xdir *d = op->dirs[i];

		if (d->is_nfc || !d->growth.nclus)
			continue;
		if (d->s.is_no_fat_chain && d->old_nclus &&
		    (err = fk_fat_put_run(op->vol, d->clus[0], d->old_nclus,
					  d->growth.runs[0].first)))
			return err;
		if ((err = put_chain(op, &d->growth)))
			return err;
	}
	for (i = 0; i < op->run->nfiles; i++) {
		const struct xfile *fp = &op->files[i];
		const struct fk_plan *old = &fp->pf.old, *add = &fp->pf.add;

		if (fp->is_nfc || !add->nclus)
			continue;
		if (old->nclus && fp->was_nfc &&
		    (err = fk_fat_put_run(op->vol, old->runs[0].first,
					  old->runs[0].nclus,
					  add->runs[0].first)))
			return err;
		if (!op->o->per_cluster && (err = put_chain(op, add)))
			return err;
	}
	return fk_cache_flush(op->vol->fat);
}

/*
 * --per-cluster: the one-cluster-at-a-time way of Linux's allocator
 * before batching, for comparison.  Each new cluster's bitmap bit is set
 * and flushed, then, for a file that ends up chained, its FAT entry (end
 * of chain) and the link from the cluster before, each flushed: with
 * --sync, each flush is synchronous.  A stop request is heard between
 * any two clusters: before the first, -EINTR (the run rolls back); after
 * it, fk_prun_cut() keeps what is taken and *@is_kept says so (the entry
 * sets then say what the files got).
 */
static int write_per_cluster(struct xop *op, int *is_kept)
{
	uint32_t eoc = fk_fat_eoc(&op->vol->g);
	size_t i, r;
	int err;

	for (i = 0; i < op->run->nfiles; i++) {
		const struct xfile *fp = &op->files[i];
		uint32_t prev = 0, c, ntaken = 0;

		for (r = 0; r < fp->pf.add.nruns; r++) {
			const struct fk_run *run = &fp->pf.add.runs[r];

			for (c = run->first; c < run->first + run->nclus; c++) {
				if (is_stopping(op) && !*is_kept)
					return -EINTR;
				if (is_stopping(op)) {
					fk_prun_cut(op->run, i, ntaken);
					xp_settle(op->run);
					return 0;
				}
				*is_kept = 1;
				ntaken++;
				if ((err = bitmap_put(op, c, 1, 1)) ||
				    (err = fk_cache_flush(op->bmc)))
					return err;
				if (fp->is_nfc)
					continue;
				if ((err = fk_fat_put(op->vol, c, eoc)) ||
				    (err = fk_cache_flush(op->vol->fat)))
					return err;
				if (prev &&
				    ((err = fk_fat_put(op->vol, prev, c)) ||
				     (err = fk_cache_flush(op->vol->fat))))
					return err;
				prev = c;
			}
		}
	}
	return 0;
}

/*
 * Does a set of @d begin in its old clusters and end in new ones?  Only
 * a new set can (the old ones lay within the old clusters).
 */
static int crosses_old_end(const struct xdir *d)
{
	size_t i;

	for (i = 0; i < d->nnames; i++)
		if (d->names[i].idx < d->disk_nents &&
		    d->names[i].idx + d->names[i].nents > d->disk_nents)
			return 1;
	return 0;
}

/*
 * Step 5a, the commit point: old chain ends (chained files, chained
 * directories) link to their new clusters.  *@nlinks counts the links
 * that must reach the disk before the entry sets do.  A file's or a
 * subdirectory's must: its set's new DataLength would otherwise describe
 * clusters its chain does not reach.  The root's need not: it has no
 * DataLength, its new clusters are zeroed (all end markers) behind the
 * barrier before this step, and sets written into them before the link
 * lands are in no directory yet; only a set that starts in the old
 * clusters and ends in new ones would be cut short, so then it counts.
 */
static int write_links(struct xop *op, int *nlinks)
{
	size_t i;
	int err;

	for (i = 0; i < op->ndirs; i++) {
		const struct xdir *d = op->dirs[i];

		if (d->is_nfc || !d->growth.nclus || d->s.is_no_fat_chain)
			continue;
		if ((err = fk_fat_put(op->vol, d->clus[d->old_nclus - 1],
				      d->growth.runs[0].first)))
			return err;
		if (d->parent || crosses_old_end(d))
			(*nlinks)++;
	}
	for (i = 0; i < op->run->nfiles; i++) {
		const struct xfile *fp = &op->files[i];

		if (fp->is_nfc || !fp->pf.add.nclus || !fp->pf.old.nclus ||
		    fp->was_nfc)
			continue;
		if ((err = fk_fat_put(op->vol, fk_prun_tail(&fp->pf.old),
				      fp->pf.add.runs[0].first)))
			return err;
		(*nlinks)++;
	}
	return fk_cache_flush(op->vol->fat);
}

static int bitmap_plan(struct xop *op, const struct fk_plan *plan, int is_used)
{
	size_t r;
	int err;

	for (r = 0; r < plan->nruns; r++)
		if ((err = bitmap_put(op, plan->runs[r].first,
				      plan->runs[r].nclus, is_used)))
			return err;
	return 0;
}

/* Step 3: every new cluster's bit, one flush. */
static int write_bitmap(struct xop *op, int is_used)
{
	size_t i;
	int err;

	for (i = 0; i < op->ndirs; i++)
		if ((err = bitmap_plan(op, &op->dirs[i]->growth, is_used)))
			return err;
	for (i = 0; i < op->run->nfiles && !(is_used && op->o->per_cluster);
	     i++)
		if ((err = bitmap_plan(op, &op->files[i].pf.add, is_used)))
			return err;
	return fk_cache_flush(op->bmc);
}

/*
 * PercentInUse after the run, or -1 to leave it: the percentage of
 * clusters in use, or 0xFF, "not available" (spec 3.1.16: a writer that
 * changes the allocation updates it or sets 0xFF).  Exact when the
 * searches have read the whole bitmap (a small volume), or it was 0xFF
 * already; else counting it would read the rest of a bitmap of
 * megabytes for a hint that Linux never reads (it counts the bitmap at
 * mount), so 0xFF.  A run that took no cluster leaves a value it cannot
 * check as it was.
 */
static int new_percent(struct xop *op)
{
	unsigned old = op->vol->boot[EB_PERCENT], pct;
	uint32_t nclus = op->vol->g.nclus, ntaken = 0;
	size_t i;

	for (i = 0; i < op->run->nfiles; i++)
		ntaken += op->files[i].pf.add.nclus;
	for (i = 0; i < op->ndirs; i++)
		ntaken += op->dirs[i]->growth.nclus;
	if (old == 0xff)
		return -1;
	if (fk_alloc_nunread(op->alloc))
		return ntaken ? 0xff : -1;
	pct = fk_exfat_percent(nclus - fk_alloc_nfree(op->alloc), nclus);
	return pct == old ? -1 : (int)pct;
}

static int commit_steps(struct xop *op, struct fk_prealloc_result *res)
{
	unsigned char *b = op->vol->boot;
	int err, nlinks = 0, percent, is_kept = 0;

	if (is_stopping(op))
		return -EINTR;
	/* Only the entry sets a commit writes carry the time: a dry run
	 * does not read /etc/localtime (seven system calls and a parse). */
	make_stamp(op, op->o->now, op->o->now_is_utc);
	if (!op->was_dirty) {
		fk_exfat_set_dirty(op->vol->boot, 1);
		op->set_dirty = 1;
		if ((err = write_boot(op)) || (err = fk_prun_barrier(op->run)))
			return err;
	}
	if (is_stopping(op))
		return -EINTR;
	/* Steps 2 to 4 need no order among them: until step 5 nothing
	 * reaches what they write.  One barrier ends them.  The per-cluster
	 * loop comes last, after the zeroing of every cluster it may take,
	 * so that a stop it hears leaves nothing more to do there. */
	if ((err = write_fat(op)) || (err = write_bitmap(op, 1)) ||
	    (err = fk_prun_zero(op->run, res)) ||
	    (op->o->per_cluster && (err = write_per_cluster(op, &is_kept))) ||
	    (err = fk_prun_barrier(op->run)))
		return err;
	if (is_stopping(op) && !is_kept)
		return -EINTR;
	op->run->is_linked = 1;
	if ((err = write_links(op, &nlinks)) ||
	    (nlinks && (err = fk_prun_barrier(op->run))))
		return err;
	xp_build_sets(op);
	if ((err = xp_write_dirs(op)))
		return err;
	percent = new_percent(op);
	/* Steps 6 and 7 are one write of the boot sector, after the entry
	 * sets are on disk. */
	if (op->o->sync != FK_SYNC_NEVER &&
	    (err = fk_device_sync(op->vol->dev)))
		return err;
	if (percent < 0 && !op->set_dirty)
		return 0;
	if (percent >= 0)
		b[EB_PERCENT] = (unsigned char)percent;
	if (op->set_dirty)
		fk_exfat_set_dirty(op->vol->boot, 0);
	if ((err = write_boot(op)))
		return err;
	if (op->o->sync != FK_SYNC_NEVER)
		return fk_device_sync(op->vol->dev);
	return 0;
}

/*
 * Before the commit point: clear the bitmap bits the run set and clear
 * VolumeDirty if this run set it.  Nothing reaches the new clusters yet,
 * and FAT entries of clusters the bitmap calls free mean nothing
 * (spec 7.1.5), so the new chains need no undoing.
 */
static int rollback(struct fk_prun *run)
{
	struct xop *op = run->fam_op;
	int err;

	fk_cache_discard(op->vol->fat);
	fk_cache_discard(op->bmc);
	if ((err = write_bitmap(op, 0)))
		return err;
	if (op->o->sync != FK_SYNC_NEVER &&
	    (err = fk_device_sync(op->vol->dev)))
		return err;
	if (op->set_dirty) {
		fk_exfat_set_dirty(op->vol->boot, 0);
		if ((err = write_boot(op)))
			return err;
		if (op->o->sync != FK_SYNC_NEVER)
			err = fk_device_sync(op->vol->dev);
	}
	return err;
}

static int fill_dirs(struct fk_prun *run, struct fk_prealloc_result *res)
{
	struct xop *op = run->fam_op;
	size_t i;

	if (!(res->dirs = calloc(op->ndirs ? op->ndirs : 1, sizeof(char *))))
		return -ENOMEM;
	for (i = 0; i < op->ndirs; i++) {
		res->new_clus += op->dirs[i]->growth.nclus;
		if (op->dirs[i]->path) { /* the result takes it over */
			res->dirs[res->dirs_created++] = op->dirs[i]->path;
			op->dirs[i]->path = NULL;
		}
	}
	return 0;
}

/* ---- setup ---------------------------------------------------------------- */

/*
 * The active allocation bitmap: it must be one run of clusters (as Linux
 * reads it), of the length the heap needs.  The allocator reads it only
 * as its searches reach it, from the start of the heap (on a card, 256
 * MiB near the start of an empty one is a few KiB of a bitmap of
 * megabytes), and its sectors are written through a cache region.
 */
static int open_bitmap(struct xop *op, size_t batch_len, struct fk_diag *diag)
{
	const struct fk_geom *g = &op->vol->g;
	const struct fk_exfat *ex = fk_exfat_of(op->vol);
	uint32_t pick = fk_exfat_active_bitmap(op->vol);
	struct fk_exfat_stream s;
	struct fk_cache_layout lay;
	struct fk_chain_info info;
	struct fk_plan runs = {NULL, 0, 0, 0};
	uint64_t need;
	int err;

	if (!ex->nbitmaps) {
		fk_diag_set(diag, NULL,
			    "the root has no allocation bitmap entry; run "
			    "fatcheck");
		return FK_ECORRUPT;
	}
	op->bm.nclus = g->nclus;
	op->bm.first_clus = ex->bitmap_clus[pick];
	op->bm.data_len = ex->bitmap_len[pick];
	if (!fk_clus_valid(g, op->bm.first_clus)) {
		fk_diag_set(diag, NULL,
			    "allocation bitmap cluster %" PRIu32
			    " is out of range",
			    op->bm.first_clus);
		return FK_ECORRUPT;
	}
	s = (struct fk_exfat_stream){op->bm.first_clus, op->bm.data_len, 0};
	if ((err = fk_exfat_stream_walk(op->vol, &s, xp_collect_run, &runs,
					&info)) < 0)
		goto out;
	need = op->bm.data_len < fk_exfat_bitmap_len(g->nclus)
		       ? op->bm.data_len
		       : fk_exfat_bitmap_len(g->nclus);
	if (runs.nclus < fk_exfat_clus_needed(g, need)) {
		if (info.end != FK_ENT_EOC) {
			err = fk_chain_error(&info, diag);
			goto out;
		}
		fk_diag_set(diag, NULL,
			    "cluster chain of %" PRIu32 " clusters is shorter "
			    "than its %" PRIu64 " bytes",
			    info.nclus, need);
		err = FK_ECORRUPT;
		goto out;
	}
	if (op->bm.data_len != fk_exfat_bitmap_len(g->nclus)) {
		/* Shorter, the missing bits would read as free; longer,
		 * its sectors (cached as one region of the length the
		 * clusters need) would address bits past the heap. */
		fk_diag_set(diag, NULL,
			    "allocation bitmap DataLength %" PRIu64
			    ", the heap needs %" PRIu64,
			    op->bm.data_len, fk_exfat_bitmap_len(g->nclus));
		err = FK_ECORRUPT;
		goto out;
	}
	if (runs.nruns != 1) {
		fk_diag_set(diag, NULL,
			    "allocation bitmap is fragmented; fatprealloc "
			    "writes only a contiguous one");
		err = -EOPNOTSUPP;
		goto out;
	}
	op->bm_off = fk_clus_off(g, runs.runs[0].first);
	if ((err = fk_alloc_open_bitmap(op->vol, op->bm_off, &op->alloc)) ||
	    (err = xp_judge_plan_bits(op, &runs, diag)))
		goto out;
	memset(&lay, 0, sizeof(lay));
	lay.sec_len = g->sec_len;
	lay.fat_off = op->bm_off;
	lay.fat_secs =
		(uint32_t)((fk_exfat_bitmap_len(g->nclus) + g->sec_len - 1) /
			   g->sec_len);
	lay.nfats = 1;
	lay.is_mirrored = 1;
	lay.is_rarely_written = 1; /* a few sectors a run: no huge page */
	lay.read_len = g->sec_len; /* the sectors a run changes, no more */
	err = fk_cache_new(op->vol->dev, &lay, batch_len, FK_CACHE_NOSYNC,
			   &op->bmc);
out:
	fk_plan_free(&runs);
	return err;
}

static void end(struct fk_prun *run)
{
	struct xop *op = run->fam_op;
	size_t i;

	if (!op)
		return;
	for (i = 0; i < op->ndirs; i++)
		xp_dir_free(op->dirs[i]);
	free(op->dirs);
	free(op->own);
	fk_cache_free(op->bmc);
	fk_alloc_close(op->alloc);
	free(op);
	run->fam_op = NULL;
}

static int commit(struct fk_prun *run, struct fk_prealloc_result *res)
{
	struct xop *op = run->fam_op;
	int err;

	fk_cache_set_sync(op->vol->fat, fk_prun_cache_sync(run));
	fk_cache_set_sync(op->bmc, fk_prun_cache_sync(run));
	err = commit_steps(op, res);
	res->bitmap_secs = fk_cache_stats(op->bmc)->secs_written;
	return err;
}

/* Refusals exFAT alone makes, before anything is read. */
static int refuse(const struct fk_volume *vol, const struct fk_prealloc_opts *o,
		  struct fk_diag *diag)
{
	if (o->keep_size) {
		fk_diag_set(diag, NULL,
			    "-n/--keep-size cannot be expressed on exFAT "
			    "(clusters past the size are damage or leaks "
			    "there); the image is left untouched");
		return -EOPNOTSUPP;
	}
	if (vol->g.active_fat) {
		/* Linux reads the first FAT and bitmap whatever ActiveFat
		 * says: it would see the new clusters as free. */
		fk_diag_set(diag, NULL,
			    "TexFAT volume with its second FAT active (Linux "
			    "reads the first one); the image is left "
			    "untouched");
		return -EOPNOTSUPP;
	}
	if ((get_le16(vol->boot + EB_FLAGS) & FK_EXFAT_FLAG_DIRTY) &&
	    !o->force) {
		/* After an unclean removal the bitmap may lack the bits of
		 * clusters a file owns (a recording cut short): the run
		 * would hand them out again and zero them. */
		fk_diag_set(diag, NULL,
			    "VolumeDirty is set: the card was not cleanly "
			    "removed and its allocation bitmap may not match "
			    "what the files own (--force writes anyway)");
		return FK_ECORRUPT;
	}
	if (fk_exfat_of(vol)->boot.defects & FK_EXB_CHECKSUM) {
		/* Linux refuses to mount it: writing would hide the damage. */
		fk_diag_set(diag, NULL, "%s",
			    fk_exfat_boot_reason(FK_EXB_CHECKSUM));
		return FK_ECORRUPT;
	}
	if (fk_exfat_of(vol)->upcase->is_fallback) {
		/* New names would be hashed through ASCII folding, not the
		 * volume's table, and its clusters (where a broken chain
		 * runs into free ones) could not be judged. */
		fk_diag_set(diag, NULL, "%s",
			    fk_exfat_of(vol)->upcase->defects & FK_EXU_MISSING
				    ? "the root holds no up-case table"
				    : "the up-case table cannot be read (its "
				      "location or cluster chain is damaged)");
		return FK_ECORRUPT;
	}
	if (!fk_exfat_upcase_maps_ascii(fk_exfat_of(vol)->upcase)) {
		/* Names hash through it: a new name's hash would be damage. */
		fk_diag_set(diag, NULL,
			    "the up-case table breaks the mandatory ASCII "
			    "mapping (a-z to A-Z, the rest to itself)");
		return FK_ECORRUPT;
	}
	return 0;
}

/*
 * The up-case table's clusters and every bitmap's (a TexFAT volume has a
 * second one) must be marked in the bitmap: a cluster marked free there
 * could be given to a new directory and zeroed.  They are xp_claim()ed, so
 * that no directory on a path may share them.
 */
static int judge_specials(struct xop *op, struct fk_diag *diag)
{
	static const char *const names[] = {"the up-case table",
					    "the allocation bitmap",
					    "the second allocation bitmap"};
	const struct fk_exfat *ex = fk_exfat_of(op->vol);
	struct fk_exfat_stream s[3];
	const char *owner[3];
	struct fk_plan runs = {NULL, 0, 0, 0};
	struct fk_chain_info info;
	uint32_t i, n = 0;
	int err = 0;

	if (!ex->upcase->is_fallback && ex->upcase->first_clus) {
		owner[n] = names[0];
		s[n++] = (struct fk_exfat_stream){ex->upcase->first_clus,
						  ex->upcase->raw_len, 0};
	}
	for (i = 0; i < ex->nbitmaps && i < 2; i++) {
		owner[n] = names[1 + i];
		s[n++] = (struct fk_exfat_stream){ex->bitmap_clus[i],
						  ex->bitmap_len[i], 0};
	}
	for (i = 0; !err && i < n; i++) {
		runs.nruns = 0;
		runs.nclus = 0;
		if (!(err = fk_exfat_stream_walk(op->vol, &s[i], xp_collect_run,
						 &runs, &info)) &&
		    !(err = xp_judge_plan_bits(op, &runs, diag)))
			err = xp_claim(op, &runs, owner[i], diag);
	}
	fk_plan_free(&runs);
	return err;
}

static int start(struct fk_prun *run, struct fk_diag *diag)
{
	struct fk_volume *vol = run->vol;
	struct xop *op;
	int err;

	if ((err = refuse(vol, run->o, diag)))
		goto out;
	if (!(op = calloc(1, sizeof(*op))))
		return -ENOMEM;
	run->fam_op = op;
	op->run = run;
	op->vol = vol;
	op->o = run->o;
	op->files = run->files;
	op->was_dirty =
		!!(get_le16(vol->boot + EB_FLAGS) & FK_EXFAT_FLAG_DIRTY);
	if ((err = open_bitmap(op, run->o->batch_len, diag)) ||
	    (err = judge_specials(op, diag)))
		goto out;
	run->alloc = op->alloc;
out:
	if (err == FK_ECORRUPT)
		fk_diag_hint(diag, FK_HINT_REPAIR);
	return err;
}

const struct fk_prealloc_family fk_exfat_prealloc_family = {
	.has_valid_len = 1,
	.file_len = sizeof(struct xfile),
	.is_whole_contig = 1,
	.start = start,
	.resolve = resolve,
	.settle = xp_settle,
	.verify = xp_verify,
	.fill_dirs = fill_dirs,
	.commit = commit,
	.rollback = rollback,
	.hint_nospc = NULL,
	.end = end,
};
