/*
 * fat.h: FAT entries.  Get and put one entry or a whole run of them, the
 * classes an entry value falls in, bounded chain walks that report runs
 * (contiguous extents), and sequential scans of a FAT copy in large reads.
 * Entry packing (12, 16, 28 or exFAT's 32 bits) is known only to
 * fat-ops.c (with its private fat-ops.h) and fat-links.h, the
 * chain-following loop that fat.c and the checker inline.  The
 * functions live in fat.c (entries and chain walks) and fat-scan.c
 * (sequential scans, the mirror judge).
 */
#ifndef FATKIT_FAT_H
#define FATKIT_FAT_H

#include <stddef.h>
#include <stdint.h>

struct fk_diag;
struct fk_volume;
struct fk_geom;

enum fk_ent_class {
	FK_ENT_FREE,	 /* 0 */
	FK_ENT_NEXT,	 /* a link to a valid data cluster */
	FK_ENT_EOC,	 /* end of chain */
	FK_ENT_BAD,	 /* marked bad */
	FK_ENT_RESERVED, /* 1, or a reserved value below BAD */
	FK_ENT_RANGE,	 /* a link past the last cluster */
};

/* A run of contiguous clusters. */
struct fk_run {
	uint32_t first; /* cluster number */
	uint32_t nclus;
};

/* How a chain walk ended, with what it saw. */
struct fk_chain_info {
	uint32_t nclus;	       /* distinct clusters of the chain's valid part */
	uint32_t nruns;	       /* fragments (on a loop: those walked) */
	uint32_t last;	       /* last valid cluster (0 for an empty chain) */
	enum fk_ent_class end; /* FK_ENT_EOC for a sound chain */
	uint32_t end_val;      /* the value that ended it; on a loop, the
				  cluster @last links back to */
	int is_loop;	       /* the chain runs into itself */
	uint32_t nlinks;       /* FAT entries read (a loop costs more) */
	int is_no_first;       /* exFAT: FirstCluster 0 with a non-zero
				  DataLength (end is FK_ENT_RANGE) */
};

/*
 * Brent's cycle detection over a chain, one link at a time, for every
 * walker of chains: @saved is the cluster reached after the last power of
 * two links; meeting it again proves a loop of @lam links.  A loop is
 * found within about 2 max(mu, lam) + lam links, whatever the volume's
 * cluster count, in constant memory.
 */
struct fk_loop_check {
	uint32_t saved;	     /* cluster */
	uint32_t power, lam; /* links */
};

/* Start at the chain's cluster @clus. */
static inline void fk_loop_check_init(struct fk_loop_check *lc, uint32_t clus)
{
	lc->saved = clus;
	lc->power = lc->lam = 1;
}

/* Nonzero when the link to @next closes a loop of @lc->lam links.
 * Inline: a chain walk takes it for every link. */
static inline int fk_loop_check_step(struct fk_loop_check *lc, uint32_t next)
{
	if (next == lc->saved)
		return 1;
	if (lc->lam == lc->power) {
		lc->saved = next;
		lc->power *= 2;
		lc->lam = 0;
	}
	lc->lam++;
	return 0;
}

enum fk_ent_class fk_fat_class(const struct fk_geom *g, uint32_t val);

/* The end-of-chain and bad-cluster values written for this FAT width. */
uint32_t fk_fat_eoc(const struct fk_geom *g);
uint32_t fk_fat_bad(const struct fk_geom *g);

/*
 * The reserved entries judged: FAT[0] holds the media byte under bits that
 * are all ones, FAT[1] an end-of-chain mark whose two top bits on FAT16/32
 * say "cleanly unmounted" and "no disk errors" (FAT12 has neither).
 */
struct fk_fat_reserved {
	uint32_t want0, want1; /* what a repair writes */
	int is_fat0_ones;      /* FAT[0]'s bits above the media byte are set */
	int is_fat0_media;     /* FAT[0] is want0: the BPB's media byte too */
	int is_clean;	       /* FAT[1]'s clean-shutdown bit is set */
	int is_noerr;	       /* FAT[1]'s no-disk-error bit is set */
	int is_fat1_eoc;       /* FAT[1] is want1 apart from those two bits */
};

/* Judge the values @fat0 and @fat1 read from FAT[0] and FAT[1]. */
void fk_fat_reserved_judge(const struct fk_geom *g, uint32_t fat0,
			   uint32_t fat1, struct fk_fat_reserved *r);

/*
 * Is the layout of @vol one a repair or a writer may act on, once the
 * family has judged its boot sector's (at most two copies): at least one
 * FAT copy whose FAT[0]
 * carries the mark fk_fat_reserved_judge() calls is_fat0_ones (fsck.fat
 * gives up on a volume where no copy does)?  Readers may go on without
 * it; writers must not write then.  Reads FAT[0] of each copy from the
 * device.  Returns 0, FK_ECORRUPT (@diag: what is implausible, and that
 * nothing is written) or -errno.
 */
int fk_fat_judge_layout(struct fk_volume *vol, struct fk_diag *diag);

/* On FK_ECORRUPT (@err) from a judge of the layout: append to @diag that
 * nothing is written to the volume, and what to do instead. */
void fk_fat_note_unwritable(struct fk_diag *diag, int err);

/*
 * For a writer, after fk_fat_judge_layout(): does the copy that is read
 * (and written through to the others, a sector at a time) carry the
 * media mark?  One that does not is damage fatcheck -r mends from the
 * other copy; a write would spread it to every copy, leaving none with
 * the mark.  Reads FAT[0] from the device.  Returns 0, FK_ECORRUPT
 * (@diag says which copy) or -errno.
 */
int fk_fat_judge_read_copy(struct fk_volume *vol, struct fk_diag *diag);

/*
 * Put want0 in FAT[0] when @fix0 and want1 in FAT[1] when @fix1 (in the
 * cache, as fk_fat_put()).
 */
int fk_fat_fix_reserved(struct fk_volume *vol, int fix0, int fix1);

/* The sectors of a FAT copy (0-based) that hold entry @clus: *@first and
 * *@last, which differ only for a FAT12 entry split between two. */
void fk_fat_entry_secs(const struct fk_geom *g, uint32_t clus, uint32_t *first,
		       uint32_t *last);

/*
 * Read entry @clus (0 .. nclus + 1) through the FAT cache.  Returns 0,
 * FK_ECORRUPT (entry outside the FAT) or -errno.
 */
int fk_fat_get(struct fk_volume *vol, uint32_t clus, uint32_t *val);

/*
 * Follow the chain from @clus for at most @max (at least 1) entries, as
 * far as one cache lookup serves (fk_cache_get_span(): a span of many
 * sectors while none is dirty, else one sector): @vals[0] is the entry of
 * @clus, each later value the entry of the cluster the one before links
 * to.  Stops after a value that is no link, and where the next entry lies
 * outside what the lookup served.  Returns how many values it stored (at
 * least 1), or what fk_fat_get() returns on failure.
 */
int fk_fat_get_links(struct fk_volume *vol, uint32_t clus, uint32_t *vals,
		     uint32_t max);

/*
 * Set entry @clus to @val in the cache (FAT32 keeps the top 4 bits, as the
 * specification asks).  Written to disk by the next fk_cache_flush().
 */
int fk_fat_put(struct fk_volume *vol, uint32_t clus, uint32_t val);

/*
 * Link @nclus clusters from @first as one contiguous chain whose last
 * entry holds @next (another cluster, or fk_fat_eoc()).  One cache lookup
 * per FAT sector, not per entry.
 */
int fk_fat_put_run(struct fk_volume *vol, uint32_t first, uint32_t nclus,
		   uint32_t next);

/*
 * Set @nclus entries from @first to @val (e.g. 0 to free a run).
 */
int fk_fat_fill(struct fk_volume *vol, uint32_t first, uint32_t nclus,
		uint32_t val);

/*
 * Is @clus among the first @n clusters of the chain from @start (which
 * stops early at a link out of range)?  Sets *@yes; returns 0 or -errno.
 * For a checker's claim that meets a cluster claimed already: its own
 * (a loop) or another owner's (a cross-link).
 */
int fk_chain_holds(struct fk_volume *vol, uint32_t start, uint32_t n,
		   uint32_t clus, int *yes);

/*
 * Walk the chain from @start, calling @fn (if not NULL) once per run, in
 * order, until end of chain, a bad link, or a loop.  A loop is found in
 * time proportional to the chain's distinct part (mu + lam clusters, for a
 * tail of mu and a cycle of lam) and constant memory: at most about
 * 3 (mu + lam) links are walked and passed to @fn, so a caller that
 * collects runs collects no more; on a loop @info names the cluster that
 * closes it and the one it links back to.  @info says how it ended.  Returns 0
 * whatever the chain holds (the caller judges @info), a non-zero value returned
 * by @fn, or -errno.  A @start outside the data area yields an empty walk with
 * @info->end set to its class, except that an end-of-chain mark counts as
 * FK_ENT_RANGE: only a walk through real clusters ends in FK_ENT_EOC.
 */
int fk_chain_walk(struct fk_volume *vol, uint32_t start,
		  int (*fn)(void *arg, const struct fk_run *run), void *arg,
		  struct fk_chain_info *info);

/*
 * Describe a chain that did not end in EOC as a reason in @diag, e.g.
 * "cluster chain loops (more than N links)" or "cluster chain links to
 * free cluster N".  Returns FK_ECORRUPT.
 */
int fk_chain_error(const struct fk_chain_info *info, struct fk_diag *diag);

/*
 * Decode every entry of FAT copy @copy (0-based), sequentially in large
 * reads straight from the device (not the cache), calling @fn with
 * consecutive blocks: @vals[i] is the entry of cluster @first + i.
 * Covers clusters 0 .. nclus + 1.  Returns 0, @fn's non-zero value, or
 * -errno.  Memory: one read buffer.
 */
int fk_fat_scan(struct fk_volume *vol, uint32_t copy,
		int (*fn)(void *arg, uint32_t first, const uint32_t *vals,
			  uint32_t n),
		void *arg);

/*
 * The free map of FAT copy @copy in one sequential pass: bit c of @map
 * (which the caller zeroed, one bit per cluster 0 .. nclus + 1) is set for
 * each free data cluster, and *@nfree counts them.  Faster than
 * fk_fat_scan() with a callback: no decoded copy of the FAT is made.
 * *@is_blank (if not NULL) says whether no free entry holds bits a write
 * must keep (FAT32's reserved top 4), for fk_fat_put_free_run().  Returns
 * 0 or -errno.
 */
int fk_fat_scan_free(struct fk_volume *vol, uint32_t copy, uint64_t *map,
		     uint32_t *nfree, int *is_blank);

/*
 * fk_fat_scan_free() of entries @first (a multiple of 64) .. @first + @n
 * - 1 only (@n is cut at the end of the FAT): the words of @map for them
 * are written whole, *@nfree counts their free data clusters, *@is_blank
 * is for them.  Returns 0, -EINVAL for an unaligned @first, or -errno.
 */
int fk_fat_scan_free_range(struct fk_volume *vol, uint32_t copy, uint32_t first,
			   uint32_t n, uint64_t *map, uint32_t *nfree,
			   int *is_blank);

/* The free data clusters of FAT copy @copy, as fk_fat_scan_free(). */
int fk_fat_count_free(struct fk_volume *vol, uint32_t copy, uint32_t *nfree);

/*
 * fk_fat_put_run() for clusters that fk_fat_scan_free() found free: when
 * it said @is_blank, FAT sectors the run fills whole are not read first.
 */
int fk_fat_put_free_run(struct fk_volume *vol, uint32_t first, uint32_t nclus,
			uint32_t next, int is_blank);

/* A run of clusters whose FAT entries a writer will write. */
struct fk_fat_span {
	uint32_t first, nclus;
	int is_free; /* written by fk_fat_put_free_run() */
};

/*
 * For a writer, after planning and before its first write: does every
 * FAT copy the write reaches hold the same bytes as the read copy in each
 * sector holding an entry of @spans[0 .. @n - 1]?  A write there would
 * copy the read copy's sector over the others, and where they differ the
 * other copy may be the sound one (fatcheck judges which).  With
 * mirroring off (FAT32) or one copy, only the read copy is written:
 * nothing to compare.  Reads each other copy's sectors once, adjacent ones
 * in one call; the read copy's through the cache the write uses, except
 * sectors a free span fills whole when @is_blank (as
 * fk_fat_put_free_run(): known to be all zeros).  @spans may overlap, in
 * any order.  Returns 0, FK_ECORRUPT (@diag names the copies and the
 * first differing sector) or -errno.
 */
int fk_fat_judge_mirror(struct fk_volume *vol, const struct fk_fat_span *spans,
			size_t n, int is_blank, struct fk_diag *diag);

/*
 * fk_fat_scan() of copy @copy that also reads the same bytes of every
 * other copy in step, so a checker makes one sequential pass over each
 * copy.  @diff (if not NULL) is called once for each sector (0-based, in
 * the copy) where copy @other differs from @copy, in ascending order per
 * copy; only the bytes that hold entries 0 .. nclus + 1 are compared, as
 * fsck.fat does.  @fn may get NULL for @vals: all @n entries are 0.
 * Returns 0, a non-zero value from @fn or @diff, or -errno.  Memory: two
 * read buffers.
 */
int fk_fat_scan_copies(struct fk_volume *vol, uint32_t copy,
		       int (*fn)(void *arg, uint32_t first,
				 const uint32_t *vals, uint32_t n),
		       int (*diff)(void *arg, uint32_t other, uint32_t sec),
		       void *arg);

#endif
