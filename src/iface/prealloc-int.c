/*
 * prealloc-int.c: the calls the families' preallocation steps make back
 * into the run (prealloc-int.h): file records, zeroing in bounded
 * chunks, a cut short --per-cluster run, and the barriers --sync asks
 * for.  Below both families and the engine, so neither reaches up.
 */
#include "iface/prealloc-int.h"

#include <errno.h>
#include <string.h>

#include "io/cache.h"
#include "io/device.h"
#include "table/alloc.h"
#include "table/fat.h"
#include "volume/volume.h"

int fk_prun_barrier(const struct fk_prun *run)
{
	if (run->o->sync == FK_SYNC_BATCH)
		return fk_device_sync(run->vol->dev);
	return 0;
}

enum fk_cache_sync fk_prun_cache_sync(const struct fk_prun *run)
{
	if (run->o->sync != FK_SYNC_BATCH)
		return FK_CACHE_NOSYNC;
	return run->o->per_cluster ? FK_CACHE_SYNC_COPY : FK_CACHE_SYNC_BUDGET;
}

struct fk_pfile *fk_prun_add_file(struct fk_prun *run,
				  const struct fk_prealloc_req *req)
{
	struct fk_pfile *pf = fk_prun_file(run, run->nfiles++);

	memset(pf, 0, run->file_len);
	pf->path = req->path;
	pf->want = req->len;
	return pf;
}

/* Bytes [@from, @to) of a file whose clusters are @pf's old then new. */
static int zero_file_range(struct fk_prun *run, const struct fk_pfile *pf,
			   uint64_t from, uint64_t to, uint64_t *done,
			   uint64_t total)
{
	const struct fk_geom *g = &run->vol->g;
	uint64_t at = 0;
	size_t i;
	int err;

	for (i = 0; i < pf->old.nruns + pf->add.nruns && at < to; i++) {
		const struct fk_run *r =
			i < pf->old.nruns ? &pf->old.runs[i]
					  : &pf->add.runs[i - pf->old.nruns];
		uint64_t len = (uint64_t)r->nclus * g->clus_len;
		uint64_t lo = from > at ? from : at;
		uint64_t hi = to < at + len ? to : at + len;

		/* Bounded chunks: a slow card shows progress within each
		 * run instead of one BLKZEROOUT for the whole of it, and a
		 * signal is heard between them. */
		while (lo < hi) {
			uint64_t n = hi - lo < FK_ZERO_CHUNK ? hi - lo
							     : FK_ZERO_CHUNK;

			if (fk_prun_is_stopping(run))
				return -EINTR;
			err = fk_device_zero(
				run->vol->dev,
				fk_clus_off(g, r->first) + (lo - at), n);
			if (err)
				return err;
			lo += n;
			*done += n;
			if (run->o->progress)
				run->o->progress(run->o->progress_arg, *done,
						 total);
		}
		at += len;
	}
	return 0;
}

int fk_prun_zero(struct fk_prun *run, struct fk_prealloc_result *res)
{
	uint64_t total = 0, done = 0;
	size_t i;
	int pass, err;

	if (run->o->keep_size || run->o->no_zero || run->o->lazy)
		return 0;
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < run->nfiles; i++) {
			const struct fk_pfile *pf = fk_prun_file(run, i);

			if (pf->zero_to <= pf->zero_from)
				continue;
			if (!pass)
				total += pf->zero_to - pf->zero_from;
			else if ((err = zero_file_range(run, pf, pf->zero_from,
							pf->zero_to, &done,
							total)))
				return err;
		}
	}
	res->zeroed = done;
	return 0;
}

void fk_prun_cut(struct fk_prun *run, size_t i, uint32_t ntaken)
{
	uint64_t clus_len = run->vol->g.clus_len;
	size_t k;

	run->is_cut = 1;
	run->cut_file = i;
	run->cut_taken = ntaken;
	run->cut_planned = fk_prun_file(run, i)->add.nclus;
	run->cut_later = 0;
	/* From the last file back, so that the next search (FSInfo's hint)
	 * starts at the first cluster file @i did not get. */
	for (k = run->nfiles; k-- > i;) {
		struct fk_pfile *pf = fk_prun_file(run, k);
		uint32_t keep = k == i ? ntaken : 0;
		uint64_t reach = (uint64_t)(pf->old.nclus + keep) * clus_len;

		if (k > i && (pf->add.nclus || pf->size != pf->old_size))
			run->cut_later++;
		fk_alloc_cut(run->alloc, &pf->add, keep);
		if (!keep)
			pf->want = pf->old_size;
		else if (pf->want > reach)
			pf->want = reach;
	}
}
