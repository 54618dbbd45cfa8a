/*
 * alloc.h: free space.  A bitmap of free clusters built in one sequential
 * pass over the FAT (FSInfo's free count is never trusted for this), and
 * plans of new clusters as runs: extend the file's last cluster when the
 * next one is free, else the first free run long enough from the FSInfo
 * next-free hint (as the kernel does), else the fewest large runs.  A plan
 * is memory only; fk_alloc_write_chain() puts it in the FAT cache.
 */
#ifndef FATKIT_ALLOC_H
#define FATKIT_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "table/fat.h"

struct fk_diag;
struct fk_volume;
struct fk_alloc;

#define FK_ALLOC_CONTIG 0x1 /* one run or nothing */

/* New clusters for one chain, in chain order. */
struct fk_plan {
	struct fk_run *runs;
	size_t nruns, cap;
	uint32_t nclus;
};

/*
 * Build the free map of @vol from its active FAT (one pass, large reads).
 * *@out is the caller's, freed by fk_alloc_close().  Memory: one bit per
 * cluster.  Returns 0 or -errno.
 */
int fk_alloc_open(struct fk_volume *vol, struct fk_alloc **out);
/*
 * fk_alloc_open() that reads the FAT only as searches reach it, a chunk
 * at a time from the FSInfo next-free hint on, larger chunks as a search
 * goes on.  Planning reads (a failed read is the next plan's error); the
 * FAT must not change under it except through its own plans.  Reads
 * FSInfo now.  Returns 0 or -errno.
 */
int fk_alloc_open_lazy(struct fk_volume *vol, struct fk_alloc **out);

/*
 * An allocator over exFAT's allocation bitmap as loaded in memory: bit
 * (c - 2) of @used set when cluster c is in use ((@nclus + 63) / 64 words,
 * bits past @nclus clear), made in place in @used, which must hold
 * (@nclus + 65) / 64 words from fk_bigmem_alloc() (as fk_exfat_bitmap.bits
 * does) and becomes the allocator's on success (fk_alloc_close() frees
 * it); on -ENOMEM it is still the caller's.  A word at a time.  (The unit
 * tests' copying forms are in testing.h.)
 */
int fk_alloc_take_used(uint64_t *used, uint32_t nclus, uint32_t hint,
		       struct fk_alloc **out);
void fk_alloc_close(struct fk_alloc *alloc);

/*
 * fk_alloc_open_lazy() for exFAT: the allocation bitmap, one run from
 * byte @bm_off of the volume, read as searches reach it (4 KiB of bitmap
 * first, then twice as much each load, at most 1 MiB a read), next fit
 * from cluster 2.  A failed read is the next plan's error.  Returns 0,
 * -EINVAL (@bm_off 0) or -ENOMEM.
 */
int fk_alloc_open_bitmap(struct fk_volume *vol, uint64_t bm_off,
			 struct fk_alloc **out);
/* Clusters whose free bits a lazy map has not read (0: all known). */
uint32_t fk_alloc_nunread(const struct fk_alloc *alloc);

/* Free clusters not yet planned (a lazy map reads the rest of the FAT). */
uint32_t fk_alloc_nfree(struct fk_alloc *alloc);
/* Free clusters when opened (a lazy map reads the rest of the FAT). */
uint32_t fk_alloc_nfree_open(struct fk_alloc *alloc);
/*
 * Are at least @nclus clusters free and not yet planned?  A lazy map
 * reads from the cursor on until it has seen them, or all of the FAT.
 * Also 1 when a read failed, for fk_alloc_plan() to report.
 */
int fk_alloc_has_free(struct fk_alloc *alloc, uint32_t nclus);
/*
 * A lazy FAT map, told that the run asks for @nclus clusters in all (some
 * perhaps held already by the files it extends): reads now, in one load
 * from the cursor, the entries of as many free clusters as the run must
 * take at least by FSInfo's count (@nclus less the clusters in use), so
 * that a card gets one request for what the searches, and the judges of
 * the FAT's first sectors, would have asked in several; and no entry a
 * run that extends its files does not reach.  Nothing without a count in
 * FSInfo.  A failed read is the next plan's error.
 */
void fk_alloc_expect(struct fk_alloc *alloc, uint64_t nclus);

/*
 * The free count for FSInfo after the plans: exact where the whole FAT was
 * read; else FSInfo's count at open less the clusters planned, when that
 * count is at least what the chunks read hold; else the whole FAT is read
 * (FK_FSINFO_UNKNOWN's 0xFFFFFFFF if that fails, or for a lazy map of a
 * volume without FSInfo, whose count nobody keeps).
 */
uint32_t fk_alloc_fsinfo_free(struct fk_alloc *alloc);

/* Is cluster @clus free and not yet planned?  (0 for one out of range.) */
int fk_alloc_is_free(struct fk_alloc *alloc, uint32_t clus);

/*
 * Plan @nclus more clusters for a chain ending at @tail (0: a new chain),
 * appending runs to @plan and taking them from the map.  @flags: 0 or
 * FK_ALLOC_CONTIG.  Returns 0 or -ENOSPC (@diag says need and free, or the
 * longest run); on error nothing is taken.
 */
int fk_alloc_plan(struct fk_alloc *alloc, uint32_t tail, uint32_t nclus,
		  unsigned flags, struct fk_plan *plan, struct fk_diag *diag);

/*
 * fk_alloc_plan() for a new chain whose first cluster must be one of
 * @phase + k * @step (k >= 0; @step >= 1): the clusters at an aligned
 * byte offset (--align).  The first free run long enough that starts at
 * such a cluster is taken, next fit from the cursor; with
 * FK_ALLOC_CONTIG nothing else will do.  Without it, when no aligned run
 * is long enough, the longest aligned one starts the chain and the rest
 * is planned as fk_alloc_plan() plans a growing chain.  Returns 0 or
 * -ENOSPC (@diag says why); on error nothing is taken.
 */
int fk_alloc_plan_aligned(struct fk_alloc *alloc, uint32_t nclus,
			  uint32_t phase, uint32_t step, unsigned flags,
			  struct fk_plan *plan, struct fk_diag *diag);

/*
 * The longest free run that starts at a cluster @phase + k * @step (all
 * of them: @phase 2, @step 1), for messages.  One pass over the map.
 */
uint32_t fk_alloc_longest(struct fk_alloc *alloc, uint32_t phase,
			  uint32_t step);

/* Give the clusters of @plan back to the map (a plan not carried out). */
void fk_alloc_unplan(struct fk_alloc *alloc, const struct fk_plan *plan);

/*
 * Cut @plan to its first @keep clusters (at most its own) and give the
 * rest back to the map, where the next search then starts (a plan a stop
 * request cut short).  Memory only.
 */
void fk_alloc_cut(struct fk_alloc *alloc, struct fk_plan *plan, uint32_t keep);

/*
 * Append @n clusters from @first to @plan, merging with its last run when
 * they are adjacent.  Returns 0 or -ENOMEM.
 */
int fk_plan_add(struct fk_plan *plan, uint32_t first, uint32_t n);

/* Release @plan's memory; accepts an empty or zeroed plan. */
void fk_plan_free(struct fk_plan *plan);

/* Did the free map find no free entry holding bits a write keeps (as
 * fk_fat_scan_free()'s @is_blank)? */
int fk_alloc_is_blank(const struct fk_alloc *a);

/*
 * Put @plan in the FAT cache as one chain ending in end-of-chain.  Nothing
 * links to it yet: a crash from here on leaves lost clusters at worst.
 */
int fk_alloc_write_chain(const struct fk_alloc *alloc, struct fk_volume *vol,
			 const struct fk_plan *plan);

/*
 * The next-free hint for FSInfo: the first free cluster at or after the
 * last one planned (wrapping), or FK_FSINFO_UNKNOWN-compatible 0xFFFFFFFF
 * when none is free.
 */
uint32_t fk_alloc_next_free(struct fk_alloc *alloc);

#endif
