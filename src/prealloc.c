/*
 * prealloc.c: resolve, plan, then commit.  Planning touches memory only
 * (the free bitmap and directory plans); commit writes in the order
 * fatprealloc(1) documents so that a crash at any point leaves at worst lost
 * clusters or a stale FSInfo hint:
 *   1. new chains (files, new directories, directory growth), every FAT
 *      copy, unreachable from anything; zeros and fresh directory blocks;
 *   2. links from old chain ends to the new chains;
 *   3. directory entries (sizes, first clusters, new names);
 *   4. FSInfo, once.
 * With --sync each ordering point gets one barrier: after step 1 (chains
 * with their zeros and fresh directory blocks), after step 2 when it
 * linked anything, and one after steps 3 and 4 (FSInfo is only a hint, so
 * it needs no barrier of its own).
 *
 * A signal stops the run only before step 2 (see fk_prealloc()): up to
 * there nothing on disk reaches the new clusters, so freeing them again
 * undoes the run.
 */
#include "prealloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "device.h"
#include "diag.h"
#include "dir.h"
#include "dirplan.h"
#include "family.h"
#include "fat.h"
#include "fsinfo.h"
#include "vec.h"
#include "volume.h"

/* One file the run works on (requests for the same file share one). */
struct file_plan {
	struct fk_dirplan *dp; /* its directory */
	uint32_t id;	       /* its entry there */
	struct fk_dirent ent;  /* fields as they will be */
	struct fk_plan old;    /* the chain it has */
	struct fk_plan add;    /* clusters it gets */
	const char *path;      /* of its first request */
	uint64_t want;	       /* bytes requested (largest request) */
	uint32_t old_size;
	int is_new;
};

/* A directory the run looks into or creates. */
struct dir_node {
	struct fk_dirplan *dp;
	uint32_t clus;	    /* first cluster; 0 for the fixed root */
	struct fk_plan own; /* a new directory's first cluster */
	char *path;	    /* a new directory's path; NULL: it exists */
};

struct op {
	struct fk_volume *vol;
	const struct fk_prealloc_opts *o;
	struct fk_alloc *alloc;
	struct dir_node *dirs;
	size_t ndirs, cap_dirs;
	struct file_plan *files;
	size_t nfiles;
	size_t *file_of;	/* request -> files[] */
	struct fk_dirent stamp; /* times for what the run creates */
	int is_linked;		/* step 2 began: no rollback from here */
};

static int is_stopping(const struct op *op)
{
	return op->o->stop && *op->o->stop;
}

/* ---- directories ------------------------------------------------------------
 */

static int dir_push(struct op *op, struct fk_dirplan *dp, uint32_t clus,
		    struct dir_node **out)
{
	if (FK_VEC_RESERVE(op->dirs, op->cap_dirs, op->ndirs + 1))
		return -ENOMEM;
	memset(&op->dirs[op->ndirs], 0, sizeof(op->dirs[0]));
	op->dirs[op->ndirs].dp = dp;
	op->dirs[op->ndirs].clus = clus;
	*out = &op->dirs[op->ndirs++];
	return 0;
}

/* The plan of directory @clus, scanning it on first use. */
static int dir_get(struct op *op, uint32_t clus, struct fk_dirplan **dp,
		   struct fk_diag *diag)
{
	struct dir_node *node;
	size_t i;
	int err;

	for (i = 0; i < op->ndirs; i++)
		if (op->dirs[i].clus == clus) {
			*dp = op->dirs[i].dp;
			return 0;
		}
	if ((err = fk_dirplan_open(op->vol, clus, dp, diag)))
		return err;
	if ((err = dir_push(op, *dp, clus, &node))) {
		fk_dirplan_close(*dp);
		return err;
	}
	return 0;
}

/* Plan directory @name in @parent (-p). */
static int dir_create(struct op *op, struct fk_dirplan *parent,
		      const char *name, const char *path, size_t path_len,
		      uint32_t *clus, struct fk_diag *diag)
{
	struct fk_dirent fields = op->stamp;
	struct fk_plan own = {NULL, 0, 0, 0};
	struct fk_dirplan *dp;
	struct dir_node *node;
	uint32_t id;
	int err;

	if ((err = fk_alloc_plan(op->alloc, 0, 1, 0, &own, diag)))
		return err;
	fields.attr = FK_ATTR_DIR;
	fields.first_clus = own.runs[0].first;
	if ((err = fk_dirplan_add(parent, op->alloc, name, &fields, &id, diag)))
		goto out_unplan;
	if ((err = fk_dirplan_new(op->vol, fields.first_clus,
				  fk_dirplan_clus(parent), &op->stamp, &dp)))
		goto out_unplan;
	if ((err = dir_push(op, dp, fields.first_clus, &node))) {
		fk_dirplan_close(dp);
		goto out_unplan;
	}
	node->own = own; /* freed with the node from here on */
	if (!(node->path = strndup(path, path_len)))
		return -ENOMEM;
	*clus = fields.first_clus;
	return 0;
out_unplan:
	fk_alloc_unplan(op->alloc, &own);
	fk_plan_free(&own);
	return err;
}

/* ---- resolving requests -----------------------------------------------------
 */

/*
 * dir_get() for the directory whose entries begin at @at in @path: a
 * damaged one is named by its own path (the user repairs it, not the
 * file asked for).
 */
static int dir_get_named(struct op *op, uint32_t clus, const char *path,
			 const char *at, struct fk_dirplan **dp,
			 struct fk_diag *diag)
{
	char name[FK_NAME_MAX];
	size_t len = (size_t)(at - path);
	int err = dir_get(op, clus, dp, diag);

	if (err != FK_ECORRUPT)
		return err;
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len >= sizeof(name))
		len = sizeof(name) - 1;
	memcpy(name, path, len);
	name[len] = '\0';
	fk_diag_set(diag, name, NULL);
	return err;
}

/*
 * Walk the parents of @path and copy its last component to @leaf (without
 * trailing slashes; *@is_dir_form says there were some, or the path is
 * "/", which asks for a directory).
 */
static int resolve_parent(struct op *op, const char *path,
			  struct fk_dirplan **dp, char *leaf, int *is_dir_form,
			  struct fk_diag *diag)
{
	char comp[FK_NAME_MAX];
	const char *p = path, *next, *at;
	uint32_t clus = 0, id;
	struct fk_dirent ent;
	int err;

	if (*p != '/')
		return -EINVAL;
	size_t len;

	for (;;) {
		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		for (next = p + len; *next == '/'; next++)
			;
		if (!*next)
			break; /* p is the leaf */
		if (len >= sizeof(comp))
			return -ENAMETOOLONG;
		memcpy(comp, p, len);
		comp[len] = '\0';
		at = p;
		p = next;
		if ((err = dir_get_named(op, clus, path, at, dp, diag)))
			return err;
		if (!strcmp(comp, ".") || !strcmp(comp, ".."))
			return -EINVAL;
		if (fk_dirplan_find(*dp, comp, &ent, &id)) {
			if (!(ent.attr & FK_ATTR_DIR))
				return -ENOTDIR;
			clus = fk_dirent_dir_clus(op->vol, &ent);
		} else if (!op->o->parents) {
			fk_diag_detail(diag, NULL,
				       "parent directory '%s' is missing; -p "
				       "creates it",
				       comp);
			return -ENOENT;
		} else if ((err = dir_create(op, *dp, comp, path,
					     (size_t)(at - path) + len, &clus,
					     diag))) {
			return err;
		}
	}
	len = strcspn(p, "/");
	if (len >= FK_NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(leaf, p, len);
	leaf[len] = '\0';
	*is_dir_form = p[len] == '/' || !len;
	return dir_get_named(op, clus, path, p, dp, diag);
}

static int collect_run(void *arg, const struct fk_run *run)
{
	return fk_plan_add(arg, run->first, run->nclus);
}

/* An existing file: its chain must be sound and cover its size. */
static int load_chain(struct op *op, struct file_plan *fp, struct fk_diag *diag)
{
	struct fk_chain_info info;
	int err;

	if ((err = fk_chain_walk(op->vol, fp->ent.first_clus, collect_run,
				 &fp->old, &info)))
		return err;
	if (fp->ent.first_clus && info.end != FK_ENT_EOC)
		return fk_chain_error(&info, diag);
	if ((uint64_t)info.nclus * op->vol->g.clus_len < fp->ent.size) {
		fk_diag_set(diag, NULL,
			    "cluster chain (%u cluster%s) is shorter than the "
			    "file size",
			    info.nclus, info.nclus == 1 ? "" : "s");
		return FK_ECORRUPT;
	}
	return 0;
}

static int file_push(struct op *op, struct file_plan **out)
{
	struct file_plan *fp = &op->files[op->nfiles++];

	memset(fp, 0, sizeof(*fp));
	*out = fp;
	return 0;
}

static int resolve(struct op *op, size_t r, const struct fk_prealloc_req *req,
		   struct fk_diag *diag)
{
	struct file_plan *fp;
	struct fk_dirplan *dp;
	struct fk_dirent ent;
	char leaf[FK_NAME_MAX];
	uint32_t id, tag;
	int is_dir_form, err;

	if (req->len > FK_FILE_MAX) {
		fk_diag_detail(diag, NULL, "FAT files end at 4 GiB - 1 byte");
		return -EFBIG;
	}
	if ((err = resolve_parent(op, req->path, &dp, leaf, &is_dir_form,
				  diag)))
		return err;
	if (fk_dirplan_find(dp, leaf, &ent, &id)) {
		if (ent.attr & (FK_ATTR_DIR | FK_ATTR_VOLUME))
			return -EISDIR;
		if (is_dir_form)
			return -ENOTDIR;
		tag = fk_dirplan_tag(dp, id);
		if (tag != FK_DIRPLAN_NO_TAG) { /* the same file again */
			fp = &op->files[tag];
			fp->want = req->len > fp->want ? req->len : fp->want;
			op->file_of[r] = tag;
			return 0;
		}
		file_push(op, &fp);
		fp->ent = ent;
		fp->old_size = ent.size;
		if ((err = load_chain(op, fp, diag)))
			return err;
	} else if (is_dir_form) {
		return *leaf ? -ENOENT : -EISDIR; /* "/" is the root */
	} else {
		file_push(op, &fp);
		fp->ent = op->stamp;
		fp->ent.attr = FK_ATTR_ARCHIVE;
		fp->is_new = 1;
		if ((err = fk_dirplan_add(dp, op->alloc, leaf, &fp->ent, &id,
					  diag)))
			return err;
	}
	fp->dp = dp;
	fp->id = id;
	fp->path = req->path;
	fp->want = req->len;
	fk_dirplan_set_tag(dp, id, (uint32_t)(fp - op->files));
	op->file_of[r] = (size_t)(fp - op->files);
	return 0;
}

/* ---- planning clusters
 * ------------------------------------------------------- */

static uint32_t clusters_for(const struct op *op, uint64_t len)
{
	return (uint32_t)((len + op->vol->g.clus_len - 1) /
			  op->vol->g.clus_len);
}

static uint32_t need_of(const struct op *op, const struct file_plan *fp)
{
	uint32_t want = clusters_for(op, fp->want);

	return want > fp->old.nclus ? want - fp->old.nclus : 0;
}

static uint32_t tail_of(const struct fk_plan *p)
{
	return p->nruns ? p->runs[p->nruns - 1].first +
				  p->runs[p->nruns - 1].nclus - 1
			: 0;
}

static int plan_clusters(struct op *op, struct fk_diag *diag)
{
	unsigned flags = op->o->contiguous ? FK_ALLOC_CONTIG : 0;
	uint64_t total = 0;
	size_t i;
	int err;

	/* All-or-nothing: the whole run must fit before anything is taken. */
	for (i = 0; i < op->nfiles; i++) {
		total += need_of(op, &op->files[i]);
		if (total > fk_alloc_nfree(op->alloc)) {
			fk_diag_detail(diag, op->files[i].path,
				       "need %llu cluster%s, %u free",
				       (unsigned long long)total,
				       total == 1 ? "" : "s",
				       fk_alloc_nfree(op->alloc));
			return -ENOSPC;
		}
	}
	for (i = 0; i < op->nfiles; i++) {
		struct file_plan *fp = &op->files[i];
		uint32_t need = need_of(op, fp), tail = tail_of(&fp->old);

		fk_diag_set(diag, fp->path, NULL);
		if (!op->o->per_cluster) {
			err = fk_alloc_plan(op->alloc, tail, need, flags,
					    &fp->add, diag);
			if (err)
				return err;
			continue;
		}
		/* The old kernel took one cluster per call, from its hint. */
		for (; need; need--) {
			if ((err = fk_alloc_plan(op->alloc, tail, 1, 0,
						 &fp->add, diag)))
				return err;
			tail = tail_of(&fp->add);
		}
	}
	return 0;
}

/* ---- commit
 * ------------------------------------------------------------------ */

/* Bytes [@from, @to) of a file whose chain is @old then @add, as zeros. */
static int zero_file_range(struct op *op, const struct file_plan *fp,
			   uint64_t from, uint64_t to, uint64_t *done,
			   uint64_t total)
{
	const struct fk_geom *g = &op->vol->g;
	uint64_t at = 0;
	size_t i;
	int err;

	for (i = 0; i < fp->old.nruns + fp->add.nruns && at < to; i++) {
		const struct fk_run *r =
			i < fp->old.nruns ? &fp->old.runs[i]
					  : &fp->add.runs[i - fp->old.nruns];
		uint64_t len = (uint64_t)r->nclus * g->clus_len;
		uint64_t lo = from > at ? from : at;
		uint64_t hi = to < at + len ? to : at + len;

		/* Bounded chunks: a slow card shows progress within each
		 * run instead of one BLKZEROOUT for the whole of it, and a
		 * signal is heard between them. */
		while (lo < hi) {
			uint64_t n = hi - lo < FK_ZERO_CHUNK ? hi - lo
							     : FK_ZERO_CHUNK;

			if (is_stopping(op))
				return -EINTR;
			err = fk_device_zero(
				op->vol->dev,
				fk_clus_off(g, r->first) + (lo - at), n);
			if (err)
				return err;
			lo += n;
			*done += n;
			if (op->o->progress)
				op->o->progress(op->o->progress_arg, *done,
						total);
		}
		at += len;
	}
	return 0;
}

/* Final size of @fp (the entry's size field). */
static uint32_t final_size(const struct op *op, const struct file_plan *fp)
{
	if (op->o->keep_size || fp->want <= fp->old_size)
		return fp->old_size;
	return (uint32_t)fp->want;
}

/* Zero from the old end of file through the last cluster it now needs. */
static int zero_new_regions(struct op *op, struct fk_prealloc_result *res)
{
	uint64_t total = 0, done = 0, clus_len = op->vol->g.clus_len;
	size_t i;
	int pass, err;

	if (op->o->keep_size || op->o->no_zero)
		return 0;
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < op->nfiles; i++) {
			const struct file_plan *fp = &op->files[i];
			uint64_t to = final_size(op, fp);

			to = (to + clus_len - 1) / clus_len * clus_len;
			if (to <= fp->old_size)
				continue;
			if (!pass)
				total += to - fp->old_size;
			else if ((err = zero_file_range(op, fp, fp->old_size,
							to, &done, total)))
				return err;
		}
	}
	res->zeroed = done;
	return 0;
}

static int flush(struct op *op)
{
	return fk_cache_flush(op->vol->fat);
}

/* The barrier at an ordering point: --sync only (the default syncs once,
 * at the end). */
static int barrier(struct op *op)
{
	if (op->o->sync == FK_SYNC_BATCH)
		return fk_device_sync(op->vol->dev);
	return 0;
}

/* Step 1: every new chain, unlinked, on every FAT copy. */
static int write_chains(struct op *op)
{
	size_t i;
	int err;

	for (i = 0; i < op->ndirs; i++) {
		if (is_stopping(op))
			return -EINTR;
		if ((err = fk_alloc_write_chain(op->alloc, op->vol,
						&op->dirs[i].own)) ||
		    (err = fk_alloc_write_chain(
			     op->alloc, op->vol,
			     fk_dirplan_growth(op->dirs[i].dp))))
			return err;
	}
	for (i = 0; i < op->nfiles && !op->o->per_cluster; i++) {
		if (is_stopping(op))
			return -EINTR;
		if ((err = fk_alloc_write_chain(op->alloc, op->vol,
						&op->files[i].add)))
			return err;
	}
	return flush(op);
}

/*
 * --per-cluster: the algorithm before Linux 7.4.  Each cluster is taken
 * (its entry set to end-of-chain, flushed) and then linked to the one
 * before (flushed): with --sync, four synchronous sector writes each.
 */
static int write_chains_per_cluster(struct op *op)
{
	uint32_t eoc = fk_fat_eoc(&op->vol->g);
	size_t i, r;
	int err;

	for (i = 0; i < op->nfiles; i++) {
		const struct file_plan *fp = &op->files[i];
		uint32_t prev = tail_of(&fp->old), c;

		for (r = 0; r < fp->add.nruns; r++) {
			const struct fk_run *run = &fp->add.runs[r];

			for (c = run->first; c < run->first + run->nclus; c++) {
				if ((err = fk_fat_put(op->vol, c, eoc)) ||
				    (err = flush(op)))
					return err;
				if (prev &&
				    ((err = fk_fat_put(op->vol, prev, c)) ||
				     (err = flush(op))))
					return err;
				prev = c;
			}
		}
	}
	return 0;
}

/*
 * Step 2: old chain ends and directory chains point at the new ones.  A
 * run that only creates files links nothing, and needs no barrier here.
 */
static int write_links(struct op *op)
{
	size_t i, nlinks = 0;
	int err;

	op->is_linked = 1;
	for (i = 0; i < op->nfiles && !op->o->per_cluster; i++) {
		const struct file_plan *fp = &op->files[i];
		uint32_t tail = tail_of(&fp->old);

		if (!tail || !fp->add.nruns)
			continue;
		if ((err = fk_fat_put(op->vol, tail, fp->add.runs[0].first)))
			return err;
		nlinks++;
	}
	for (i = 0; i < op->ndirs; i++) {
		if (!fk_dirplan_growth(op->dirs[i].dp)->nclus)
			continue;
		if ((err = fk_dirplan_link(op->dirs[i].dp)))
			return err;
		nlinks++;
	}
	if ((err = flush(op)) || !nlinks)
		return err;
	return barrier(op);
}

/*
 * Sizes, first clusters and times go into the plans before anything is
 * written, so fresh directory blocks (new directories, growth) are
 * written once and already final.
 */
static void settle_entries(struct op *op)
{
	size_t i;

	for (i = 0; i < op->nfiles; i++) {
		struct file_plan *fp = &op->files[i];
		uint32_t size = final_size(op, fp);

		if (!fp->ent.first_clus && fp->add.nruns)
			fp->ent.first_clus = fp->add.runs[0].first;
		if (size != fp->ent.size && !fp->is_new) {
			/* The data changed: stamp it, as a write would. */
			fp->ent.mtime = op->stamp.mtime;
			fp->ent.mdate = op->stamp.mdate;
			fp->ent.adate = op->stamp.adate;
			fp->ent.attr |= FK_ATTR_ARCHIVE;
		}
		fp->ent.size = size;
		if (fp->is_new || fp->add.nruns || size != fp->old_size)
			fk_dirplan_set(fp->dp, fp->id, &fp->ent);
	}
}

/* Step 3: the entries in blocks that existed before. */
static int write_entries(struct op *op)
{
	size_t i;
	int err;

	for (i = 0; i < op->ndirs; i++)
		if ((err = fk_dirplan_write_changes(op->dirs[i].dp)))
			return err;
	return 0;
}

static int write_fresh_dirs(struct op *op)
{
	size_t i;
	int err;

	for (i = 0; i < op->ndirs; i++)
		if ((err = fk_dirplan_write_fresh(op->dirs[i].dp)))
			return err;
	return 0;
}

/*
 * Steps 1 to 4.  -EINTR only before step 2: from the commit point on, a
 * stop request waits for the end of the run.
 */
static int commit(struct op *op, struct fk_prealloc_result *res)
{
	int err;

	if (is_stopping(op))
		return -EINTR;
	if ((err = write_chains(op)) || (err = zero_new_regions(op, res)) ||
	    (err = write_fresh_dirs(op)) || (err = barrier(op)))
		return err;
	if (is_stopping(op))
		return -EINTR;
	if ((err = write_links(op)) ||
	    (op->o->per_cluster && (err = write_chains_per_cluster(op))) ||
	    (err = write_entries(op)))
		return err;
	if ((err = fk_fsinfo_write(op->vol, fk_alloc_nfree(op->alloc),
				   fk_alloc_next_free(op->alloc))))
		return err;
	if (op->o->sync != FK_SYNC_NEVER)
		return fk_device_sync(op->vol->dev);
	return 0;
}

/*
 * A write failed, or a signal came, before anything linked to the new
 * chains: give their clusters back, in every FAT copy.  They were all
 * free before, so the FAT ends as it was.  Returns 0 or -errno; if this
 * fails too, they are lost clusters, which fatcheck -r frees.
 */
static int rollback(struct op *op)
{
	int err = 0;
	const struct fk_plan *plans[3];
	size_t i, k, r;

	fk_cache_discard(op->vol->fat);
	for (i = 0; i < op->ndirs || i < op->nfiles; i++) {
		plans[0] = i < op->ndirs ? &op->dirs[i].own : NULL;
		plans[1] = i < op->ndirs ? fk_dirplan_growth(op->dirs[i].dp)
					 : NULL;
		plans[2] = i < op->nfiles ? &op->files[i].add : NULL;
		for (k = 0; k < 3; k++)
			for (r = 0; plans[k] && r < plans[k]->nruns; r++)
				if (!err)
					err = fk_fat_fill(
						op->vol,
						plans[k]->runs[r].first,
						plans[k]->runs[r].nclus, 0);
	}
	if (!err)
		err = fk_cache_flush(op->vol->fat);
	if (!err && op->o->sync != FK_SYNC_NEVER)
		err = fk_device_sync(op->vol->dev);
	return err;
}

/* The arguments that make fatcheck find this volume again. */
static const char *check_args(const struct fk_volume *vol,
			      const struct fk_prealloc_opts *opts)
{
	if (opts->check_args)
		return opts->check_args;
	return opts->image ? opts->image : fk_device_path(vol->dev);
}

/* What a stop request (-EINTR from commit(), or one noticed after it)
 * became, in @diag's words. */
static int interrupted(struct op *op, int undo_err, struct fk_diag *diag)
{
	const char *image =
		op->o->image ? op->o->image : fk_device_path(op->vol->dev);

	if (op->is_linked)
		fk_diag_set(diag, image,
			    "interrupted after the commit point; the run was "
			    "completed");
	else if (undo_err)
		fk_diag_set(diag, image,
			    "interrupted, and freeing the new clusters failed "
			    "(%s); run 'fatcheck -r %s'",
			    strerror(-undo_err), check_args(op->vol, op->o));
	else
		fk_diag_set(diag, image, "interrupted; nothing was changed");
	return -EINTR;
}

static int fill_result(struct op *op, const struct fk_prealloc_req *reqs,
		       size_t n, struct fk_prealloc_result *res)
{
	size_t i, k;

	if (!(res->files = calloc(n, sizeof(*res->files))))
		return -ENOMEM;
	res->nfiles = n;
	if (!(res->dirs = calloc(op->ndirs ? op->ndirs : 1, sizeof(char *))))
		return -ENOMEM;
	for (i = 0; i < op->ndirs; i++) {
		res->new_clus += op->dirs[i].own.nclus +
				 fk_dirplan_growth(op->dirs[i].dp)->nclus;
		if (op->dirs[i].path) { /* the result takes it over */
			res->dirs[res->dirs_created++] = op->dirs[i].path;
			op->dirs[i].path = NULL;
		}
	}
	for (i = 0; i < op->nfiles; i++) {
		res->new_clus += op->files[i].add.nclus;
		res->new_frags += (uint32_t)op->files[i].add.nruns;
	}
	for (i = 0; i < n; i++) {
		const struct file_plan *fp = &op->files[op->file_of[i]];
		struct fk_prealloc_file *f = &res->files[i];
		struct fk_plan *c = &f->chain;

		f->path = reqs[i].path;
		f->action =
			fp->is_new ? FK_FILE_CREATED
			: fp->add.nclus || final_size(op, fp) != fp->old_size
				? FK_FILE_GROWN
				: FK_FILE_UNCHANGED;
		f->old_size = fp->old_size;
		f->size = final_size(op, fp);
		f->first_clus = fp->ent.first_clus ? fp->ent.first_clus
				: fp->add.nruns	   ? fp->add.runs[0].first
						   : 0;
		f->new_clus = fp->add.nclus;
		/* Growing in place merges the last old run and the first new
		 * one, as fatls will count them. */
		for (k = 0; k < fp->old.nruns + fp->add.nruns; k++) {
			const struct fk_run *r =
				k < fp->old.nruns
					? &fp->old.runs[k]
					: &fp->add.runs[k - fp->old.nruns];

			if (fk_plan_add(c, r->first, r->nclus))
				return -ENOMEM;
		}
	}
	return 0;
}

static int has_changes(const struct fk_prealloc_result *res)
{
	size_t i;

	for (i = 0; i < res->nfiles; i++)
		if (res->files[i].action != FK_FILE_UNCHANGED)
			return 1;
	return res->new_clus != 0;
}

static void op_free(struct op *op)
{
	size_t i;

	for (i = 0; i < op->ndirs; i++) {
		fk_dirplan_close(op->dirs[i].dp);
		fk_plan_free(&op->dirs[i].own);
		free(op->dirs[i].path);
	}
	for (i = 0; i < op->nfiles; i++) {
		fk_plan_free(&op->files[i].old);
		fk_plan_free(&op->files[i].add);
	}
	free(op->dirs);
	free(op->files);
	free(op->file_of);
	fk_alloc_close(op->alloc);
}

static void set_sync(struct op *op)
{
	enum fk_cache_sync mode = FK_CACHE_NOSYNC;

	if (op->o->sync == FK_SYNC_BATCH)
		mode = op->o->per_cluster ? FK_CACHE_SYNC_COPY
					  : FK_CACHE_SYNC_BUDGET;
	fk_cache_set_sync(op->vol->fat, mode);
}

/* Say what to do about damage: each kind resolving finds, fatcheck -r
 * repairs. */
static void hint_repair(struct fk_volume *vol,
			const struct fk_prealloc_opts *opts,
			struct fk_diag *diag)
{
	fk_diag_append(diag, FK_ECORRUPT, "; run 'fatcheck -r %s'",
		       check_args(vol, opts));
}

/*
 * Out of space while FSInfo, written last by every writer, counts more
 * free clusters than the FAT (@nfree) has: most likely a run was cut off
 * (a crash, a kill) after taking clusters it never linked, which are now
 * lost.  Say so, and what gets them back.
 */
static void hint_lost(struct fk_volume *vol,
		      const struct fk_prealloc_opts *opts, uint32_t nfree,
		      struct fk_diag *diag)
{
	struct fk_fsinfo fsi;

	if (fk_fsinfo_read(vol, &fsi) || !fsi.is_present || !fsi.is_lead_ok ||
	    !fsi.is_struc_ok || fsi.free_count == FK_FSINFO_UNKNOWN ||
	    fsi.free_count <= nfree || fsi.free_count > vol->g.nclus)
		return;
	fk_diag_append(diag, -ENOSPC,
		       "; FSInfo says %u free, so %u cluster%s likely lost: "
		       "run 'fatcheck -r %s'",
		       fsi.free_count, fsi.free_count - nfree,
		       fsi.free_count - nfree == 1 ? " is" : "s are",
		       check_args(vol, opts));
}

int fk_prealloc(struct fk_volume *vol, const struct fk_prealloc_req *reqs,
		size_t n, const struct fk_prealloc_opts *opts,
		struct fk_prealloc_result *res, struct fk_diag *diag)
{
	const struct fk_io_stats *io;
	uint64_t writes_before;
	struct op op;
	uint32_t nfree;
	size_t i;
	int err;

	memset(res, 0, sizeof(*res));
	memset(&op, 0, sizeof(op));
	/* FAT slots and chains only: exFAT preallocation is a later step. */
	if (vol->fam != &fk_fat_family)
		return -EOPNOTSUPP;
	op.vol = vol;
	op.o = opts;
	fk_dir_stamp(&op.stamp, opts->now, opts->now_is_utc);
	op.files = calloc(n ? n : 1, sizeof(*op.files));
	op.file_of = calloc(n ? n : 1, sizeof(*op.file_of));
	if (!op.files || !op.file_of) {
		err = -ENOMEM;
		goto out;
	}
	if ((err = fk_alloc_open(vol, &op.alloc)))
		goto out;
	nfree = fk_alloc_nfree(op.alloc);
	for (i = 0; i < n; i++) {
		fk_diag_set(diag, reqs[i].path, NULL);
		if ((err = resolve(&op, i, &reqs[i], diag))) {
			if (err == FK_ECORRUPT)
				hint_repair(vol, opts, diag);
			if (err == -ENOSPC)
				hint_lost(vol, opts, nfree, diag);
			goto out;
		}
	}
	if ((err = plan_clusters(&op, diag))) {
		if (err == -ENOSPC)
			hint_lost(vol, opts, nfree, diag);
		goto out;
	}
	settle_entries(&op);
	if ((err = fill_result(&op, reqs, n, res)))
		goto out;
	if (opts->dry_run || !has_changes(res)) {
		/* Nothing to do writes nothing, not even FSInfo. */
		if (is_stopping(&op))
			err = interrupted(&op, 0, diag);
		goto out;
	}
	set_sync(&op);
	fk_diag_set(diag, fk_device_path(vol->dev), NULL);
	io = fk_device_stats(vol->dev);
	writes_before = io->write_calls + io->zero_calls;
	err = commit(&op, res);
	if (err && !op.is_linked) {
		/* Undo only what was written: a stop or failure before the
		 * first write leaves the image as it was, FAT copies too. */
		int undo_err = io->write_calls + io->zero_calls == writes_before
				       ? 0
				       : rollback(&op);

		if (err == -EINTR)
			err = interrupted(&op, undo_err, diag);
	} else if (is_stopping(&op)) {
		/* Heard during or after the commit point; the run is done. */
		err = err ? err : interrupted(&op, 0, diag);
	}
out:
	op_free(&op);
	return err;
}

void fk_prealloc_result_free(struct fk_prealloc_result *res)
{
	size_t i;

	for (i = 0; i < res->nfiles; i++)
		fk_plan_free(&res->files[i].chain);
	for (i = 0; i < res->dirs_created; i++)
		free(res->dirs[i]);
	free(res->dirs);
	free(res->files);
	memset(res, 0, sizeof(*res));
}
