/*
 * prealloc-int.h: the run fk_prealloc() drives and the families that plug
 * into it (the FAT one in fat-prealloc.c, exFAT's in exfat-prealloc.c).  The
 * run owns what the contract makes the same on both: the request loop,
 * the all-or-nothing cluster plan, zeroing in bounded chunks, the result,
 * and what a stop request or a failed write becomes.  A family owns its
 * structures: how a path resolves, what the entries say, the write order.
 * Private to the engine (prealloc.c) and the families' steps; the calls
 * the steps make back into the run (fk_prun_*()) are prealloc-int.c's,
 * below both, so no family reaches up into the engine.
 */
#ifndef FATKIT_PREALLOC_INT_H
#define FATKIT_PREALLOC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "iface/prealloc-types.h"
#include "io/cache.h"
#include "table/alloc.h"

struct fk_diag;
struct fk_volume;

/*
 * One file a run works on (requests for the same file share one): the
 * first member of each family's own file record, so that the run reaches
 * it with fk_prun_file().
 */
struct fk_pfile {
	const char *path;   /* of its first request */
	uint64_t want;	    /* bytes requested (largest request) */
	struct fk_plan old; /* the clusters it has */
	struct fk_plan add; /* clusters it gets */
	uint64_t old_size;  /* bytes, as its entry says before the run */
	uint64_t size;	    /* bytes after the run (settle sets it) */
	uint64_t valid_len; /* exFAT: ValidDataLength after the run (settle
			       sets it); FAT: unused */
	uint64_t zero_from; /* bytes [zero_from, zero_to) read as zeros */
	uint64_t zero_to;   /* after the run (settle sets them) */
	int is_new;	    /* the run creates it */
	int is_changed;	    /* its entry changes (settle sets it) */
};

struct fk_prun {
	struct fk_volume *vol;
	const struct fk_prealloc_opts *o;
	struct fk_alloc *alloc; /* borrowed from the family */
	void *files;		/* the family's file records, one per file */
	size_t file_len;	/* bytes of one record */
	size_t nfiles;
	size_t *file_of; /* request -> files */
	int is_linked;	 /* the commit point passed: no rollback */
	void *fam_op;	 /* the family's own state */
	/* Clusters the requests ask for in all, their files' old ones
	 * included (a path named twice counts twice), and with -p one per
	 * directory on their paths; set before start(). */
	uint64_t asked_clus;
	/* A stop request cut a --per-cluster run short (fk_prun_cut()):
	 * file @cut_file got @cut_taken of its @cut_planned new clusters,
	 * @cut_later files after it none. */
	int is_cut;
	size_t cut_file, cut_later;
	uint32_t cut_taken, cut_planned;
};

struct fk_prealloc_family {
	size_t file_len; /* bytes of the family's file record */
	/*
	 * -c: the whole file, old clusters too, must be one run (exFAT's
	 * NoFatChain), not only the new ones.
	 */
	int is_whole_contig;
	int has_valid_len; /* settle() sets valid_len; else it is size */
	/*
	 * Refusals of options or volumes, then the free map (@run->alloc)
	 * and run->fam_op.  Appends its own hints to @diag.
	 */
	int (*start)(struct fk_prun *run, struct fk_diag *diag);
	/*
	 * Request @r: find or plan the file (fk_prun_add_file() for one not
	 * seen before) and set run->file_of[@r].
	 */
	int (*resolve)(struct fk_prun *run, size_t r,
		       const struct fk_prealloc_req *req, struct fk_diag *diag);
	/* Sizes, zeroing range and entries after the plan; memory only. */
	void (*settle)(struct fk_prun *run);
	/* After settle(), before anything is written (may be NULL): judge
	 * the plan against the volume; reads only. */
	int (*verify)(struct fk_prun *run, struct fk_diag *diag);
	/* The directories' part of @res: allocate @res->dirs, add their
	 * clusters to @res->new_clus and hand over created paths. */
	int (*fill_dirs)(struct fk_prun *run, struct fk_prealloc_result *res);
	/* Every write, in the family's order; -EINTR only before the
	 * commit point (it sets run->is_linked there).  A --per-cluster
	 * loop that took a cluster cuts the run short instead (fk_prun_cut())
	 * and goes on. */
	int (*commit)(struct fk_prun *run, struct fk_prealloc_result *res);
	/* Undo what commit() wrote before its commit point. */
	int (*rollback)(struct fk_prun *run);
	/* Out of space: a hint to append, @nfree as the free map had
	 * it (may be NULL). */
	void (*hint_nospc)(struct fk_prun *run, uint32_t nfree,
			   struct fk_diag *diag);
	/* Free run->fam_op and the free map; accepts a run whose start()
	 * failed or never ran (run->fam_op NULL). */
	void (*end)(struct fk_prun *run);
};

static inline struct fk_pfile *fk_prun_file(const struct fk_prun *run, size_t i)
{
	return (struct fk_pfile *)((char *)run->files + i * run->file_len);
}

/* Has a signal asked the run to stop? */
static inline int fk_prun_is_stopping(const struct fk_prun *run)
{
	return run->o->stop && *run->o->stop;
}

/* The last cluster of @p, 0 for an empty plan. */
static inline uint32_t fk_prun_tail(const struct fk_plan *p)
{
	return p->nruns ? p->runs[p->nruns - 1].first +
				  p->runs[p->nruns - 1].nclus - 1
			: 0;
}

/*
 * A new, zeroed file record at the end of run->files (room for one per
 * request was made before resolving began); @path and @want are set.
 */
struct fk_pfile *fk_prun_add_file(struct fk_prun *run,
				  const struct fk_prealloc_req *req);

/*
 * --per-cluster, between two clusters, when a stop was requested after
 * the loop took at least one: file @i got @ntaken of its new clusters,
 * each taken and linked on disk, the files before it all of theirs.  Cut
 * the plans to what is on disk: file @i keeps @ntaken, later files none,
 * and the rest goes back to the free map (so FSInfo or the bitmap's
 * PercentInUse count only what was taken).  Sizes are then asked for as
 * far as the chains reach: a file that got no new cluster keeps its size
 * (one the run creates is created empty), one that got some grows to the
 * end of its chain at most (with -n its size stays).  The family settles
 * again and goes on with its entries; the run then ends with -EINTR and
 * says what was done.  Memory only.
 */
void fk_prun_cut(struct fk_prun *run, size_t i, uint32_t ntaken);

/*
 * Zero each file's [zero_from, zero_to) (none with --no-zero, --lazy or
 * -n) in chunks of at most FK_ZERO_CHUNK bytes, with progress calls and a
 * stop check before each.  Sets @res->zeroed.  Returns 0, -EINTR or
 * -errno.
 */
int fk_prun_zero(struct fk_prun *run, struct fk_prealloc_result *res);

/*
 * The barrier at an ordering point: an fsync with --sync only (the
 * default syncs once, at the end).  Returns 0 or -errno.
 */
int fk_prun_barrier(const struct fk_prun *run);

/*
 * When a cache flush fsyncs: with --sync after each flush the budget
 * forces, with --per-cluster --sync after every flush.
 */
enum fk_cache_sync fk_prun_cache_sync(const struct fk_prun *run);

#endif
