/*
 * fat-chain.c: following a cluster chain through the FAT, bounded and in
 * runs, with a loop found in time proportional to the chain's distinct
 * part; and the one wording of how a chain is broken.
 */
#include "table/fat.h"

#include <string.h>

#include "lib/diag.h"
#include "volume/volume.h"

#define WALK_BATCH 128 /* links a chain walk takes per lookup, at most */

/*
 * A walk that met cluster @seen again after @lam more links loops with
 * period @lam.  Find where: the first cluster of the cycle (walking from
 * @start and from @lam links further in step until they meet) and the
 * cluster whose link closes it.  Reads at most 2 mu + lam links, where mu
 * is the length of the part before the cycle.
 */
static int describe_loop(struct fk_volume *vol, uint32_t start, uint32_t lam,
			 struct fk_chain_info *info)
{
	uint32_t a = start, b = start, b_prev = 0, mu = 0, i;
	int err;

	for (i = 0; i < lam; i++, info->nlinks++) {
		b_prev = b;
		if ((err = fk_fat_get(vol, b, &b)))
			return err;
	}
	while (a != b) {
		b_prev = b;
		if ((err = fk_fat_get(vol, a, &a)) ||
		    (err = fk_fat_get(vol, b, &b)))
			return err;
		info->nlinks += 2;
		mu++;
	}
	info->nclus = mu + lam;
	info->last = b_prev;
	info->end_val = a;
	info->is_loop = 1;
	return 0;
}

int fk_chain_walk(struct fk_volume *vol, uint32_t start,
		  int (*fn)(void *arg, const struct fk_run *run), void *arg,
		  struct fk_chain_info *info)
{
	const struct fk_geom *g = &vol->g;
	struct fk_run run = {0, 0};
	uint32_t clus = start, val, saved = start, power = 1, lam = 1;
	uint32_t vals[WALK_BATCH], nvals = 0, at = 0; /* vals[at]: clus's */
	int err;

	memset(info, 0, sizeof(*info));
	info->end = fk_fat_class(g, start);
	info->end_val = start;
	/*
	 * An end mark as first cluster is no chain at all (fsck.fat: "start
	 * cluster beyond limit"); left as FK_ENT_EOC, callers would take it
	 * for a sound chain and list the file as empty.
	 */
	if (info->end == FK_ENT_EOC)
		info->end = FK_ENT_RANGE;
	if (info->end != FK_ENT_NEXT)
		return 0; /* 0: empty file; anything else: a bad start */
	for (;;) {
		/* A bitmap or up-case table of 2,000 clusters is a chain too:
		 * one cache lookup a sector of links, not one a link. */
		if (at == nvals) {
			if ((err = fk_fat_get_links(vol, clus, vals,
						    WALK_BATCH)) < 0)
				return err;
			nvals = (uint32_t)err;
			at = 0;
		}
		val = vals[at++];
		info->nlinks++;
		info->nclus++;
		info->last = clus;
		if (run.nclus && clus == run.first + run.nclus) {
			run.nclus++;
		} else {
			if (run.nclus && fn && (err = fn(arg, &run)))
				return err;
			run.first = clus;
			run.nclus = 1;
			info->nruns++;
		}
		info->end = fk_fat_class(g, val);
		info->end_val = val;
		if (info->end != FK_ENT_NEXT)
			break;
		/*
		 * Brent's cycle detection: @saved is the cluster reached
		 * after the last power of two links; meeting it again
		 * proves a loop of @lam links.  A loop is found within
		 * about 2 max(mu, lam) + lam links, whatever the volume's
		 * cluster count (counting to it cost seconds and a run per
		 * link on a large FAT32), in constant memory.
		 */
		if (val == saved) {
			if (run.nclus && fn && (err = fn(arg, &run)))
				return err;
			return describe_loop(vol, start, lam, info);
		}
		if (lam == power) {
			saved = val;
			power *= 2;
			lam = 0;
		}
		lam++;
		clus = val;
	}
	if (run.nclus && fn && (err = fn(arg, &run)))
		return err;
	return 0;
}

int fk_chain_error(const struct fk_chain_info *info, struct fk_diag *diag)
{
	if (info->is_no_first)
		fk_diag_set(diag, NULL,
			    "first cluster 0 with a non-zero length");
	else if (info->is_loop)
		fk_diag_set(diag, NULL,
			    "cluster chain loops: cluster %u links back to %u",
			    info->last, info->end_val);
	else if (info->end == FK_ENT_FREE)
		fk_diag_set(diag, NULL,
			    "cluster chain links to a free cluster after %u",
			    info->last);
	else if (info->end == FK_ENT_BAD)
		fk_diag_set(diag, NULL,
			    "cluster chain links to a bad cluster after %u",
			    info->last);
	else if (info->nclus == 0)
		fk_diag_set(diag, NULL, "first cluster %u is out of range",
			    info->end_val);
	else
		fk_diag_set(diag, NULL,
			    "cluster chain links to out-of-range cluster %u "
			    "after %u",
			    info->end_val, info->last);
	return FK_ECORRUPT;
}
