/*
 * fat-prealloc.c: the FAT family's preallocation steps, which plug into
 * the run fk_prealloc() drives (engine/prealloc.c, iface/prealloc-int.h):
 * how a request resolves to a directory entry, what the entries say, and
 * the write order.  Planning touches memory only (the free bitmap and
 * directory plans); commit writes in the order fatprealloc(1) documents
 * so that a crash at any point leaves at worst lost clusters or a stale
 * FSInfo hint:
 *   1. new chains (files, new directories, directory growth), every FAT
 *      copy, unreachable from anything; zeros and fresh directory blocks;
 *   2. links from old chain ends to the new chains;
 *   3. directory entries (sizes, first clusters, new names);
 *   4. FSInfo, once.
 * With --sync each ordering point gets one barrier: after step 1 (chains
 * with their zeros and fresh directory blocks), after step 2 when it
 * linked anything, and one after steps 3 and 4 (FSInfo is only a hint, so
 * it needs no barrier of its own); --per-cluster adds one after its fresh
 * directory blocks.
 *
 * A signal stops the run only before step 2 (see fk_prealloc()): up to
 * there nothing on disk reaches the new clusters, so freeing them again
 * undoes the run.  --per-cluster takes the files' clusters one at a time
 * in step 1, after the zeroing and before the fresh directory blocks; a
 * signal heard between two of them cuts the run short (fk_prun_cut()),
 * keeping what is taken.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fat/fat-boot.h"
#include "fat/dir.h"
#include "fat/dirplan.h"
#include "iface/prealloc-int.h"
#include "io/cache.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/vec.h"
#include "table/fat.h"
#include "table/fsinfo.h"
#include "volume/volume.h"

/* One file the run works on (requests for the same file share one). */
struct file_plan {
	struct fk_pfile pf;    /* what the run sees; first */
	struct fk_dirplan *dp; /* its directory */
	uint32_t id;	       /* its entry there */
	struct fk_dirent ent;  /* fields as they will be */
};

/* A directory the run looks into or creates. */
struct dir_node {
	struct fk_dirplan *dp;
	uint32_t clus;	    /* first cluster; 0 for the fixed root */
	struct fk_plan own; /* a new directory's first cluster */
	char *path;	    /* a new directory's path; NULL: it exists */
};

struct op {
	struct fk_prun *run; /* files, and is_linked once step 2 began */
	struct fk_volume *vol;
	const struct fk_prealloc_opts *o;
	struct fk_alloc *alloc;
	struct dir_node *dirs;
	size_t ndirs, cap_dirs;
	struct file_plan *files; /* run->files */
	struct fk_dirent stamp;	 /* times for what the run creates */
};

static int is_stopping(const struct op *op)
{
	return fk_prun_is_stopping(op->run);
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
				 &fp->pf.old, &info)))
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

static int resolve(struct fk_prun *run, size_t r,
		   const struct fk_prealloc_req *req, struct fk_diag *diag)
{
	struct op *op = run->fam_op;
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
			if (req->len > fp->pf.want)
				fp->pf.want = req->len;
			run->file_of[r] = tag;
			return 0;
		}
		fp = (struct file_plan *)fk_prun_add_file(run, req);
		fp->ent = ent;
		fp->pf.old_size = ent.size;
		if ((err = load_chain(op, fp, diag)))
			return err;
	} else if (is_dir_form) {
		return *leaf ? -ENOENT : -EISDIR; /* "/" is the root */
	} else {
		fp = (struct file_plan *)fk_prun_add_file(run, req);
		fp->ent = op->stamp;
		fp->ent.attr = FK_ATTR_ARCHIVE;
		fp->pf.is_new = 1;
		if ((err = fk_dirplan_add(dp, op->alloc, leaf, &fp->ent, &id,
					  diag)))
			return err;
	}
	fp->dp = dp;
	fp->id = id;
	fk_dirplan_set_tag(dp, id, (uint32_t)(fp - op->files));
	run->file_of[r] = (size_t)(fp - op->files);
	return 0;
}

/* ---- commit
 * ------------------------------------------------------------------ */

/* Final size of @fp (the entry's size field). */
static uint32_t final_size(const struct op *op, const struct file_plan *fp)
{
	if (op->o->keep_size || fp->pf.want <= fp->pf.old_size)
		return (uint32_t)fp->pf.old_size;
	return (uint32_t)fp->pf.want;
}

static int flush(struct op *op)
{
	return fk_cache_flush(op->vol->fat);
}

/*
 * Sizes after the run (memory only; a stop that cuts a --per-cluster run
 * short settles again).  Zeroing covers the old end of file through the
 * last cluster the file now needs.
 */
static void settle_entries(struct fk_prun *run)
{
	struct op *op = run->fam_op;
	uint64_t clus_len = op->vol->g.clus_len;
	size_t i;

	for (i = 0; i < run->nfiles; i++) {
		struct fk_pfile *pf = &op->files[i].pf;
		uint32_t size = final_size(op, &op->files[i]);

		pf->size = size;
		pf->is_changed = pf->add.nclus || size != pf->old_size;
		pf->zero_from = pf->old_size;
		pf->zero_to = (size + clus_len - 1) / clus_len * clus_len;
	}
}

/*
 * Sizes, first clusters and times go into the directory plans before
 * fresh directory blocks (new directories, growth) are written, so those
 * are written once and already final.
 */
static void set_entries(struct op *op)
{
	size_t i;

	for (i = 0; i < op->run->nfiles; i++) {
		const struct file_plan *fp = &op->files[i];
		const struct fk_pfile *pf = &fp->pf;
		struct fk_dirent ent = fp->ent;

		if (!pf->is_new && !pf->add.nruns && pf->size == pf->old_size)
			continue;
		if (!ent.first_clus && pf->add.nruns)
			ent.first_clus = pf->add.runs[0].first;
		if (pf->size != ent.size && !pf->is_new) {
			/* The data changed: stamp it, as a write would. */
			ent.mtime = op->stamp.mtime;
			ent.mdate = op->stamp.mdate;
			ent.adate = op->stamp.adate;
			ent.attr |= FK_ATTR_ARCHIVE;
		}
		ent.size = (uint32_t)pf->size;
		fk_dirplan_set(fp->dp, fp->id, &ent);
	}
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
	for (i = 0; i < op->run->nfiles && !op->o->per_cluster; i++) {
		if (is_stopping(op))
			return -EINTR;
		if ((err = fk_alloc_write_chain(op->alloc, op->vol,
						&op->files[i].pf.add)))
			return err;
	}
	return flush(op);
}

/*
 * --per-cluster: the algorithm before Linux 7.4.  Each cluster is taken
 * (its entry set to end-of-chain, flushed) and then linked to the one
 * before (flushed): with --sync, four synchronous sector writes each.
 * Nothing else is on disk yet that reaches a new cluster (fresh
 * directory blocks and links to them come after this loop), so a stop
 * request is heard between any two clusters: before the first, the run
 * rolls back (-EINTR); after it, fk_prun_cut() keeps what is taken.  The
 * first link from an old chain end is this mode's commit point.
 */
static int write_chains_per_cluster(struct op *op)
{
	uint32_t eoc = fk_fat_eoc(&op->vol->g), nall = 0;
	size_t i, r;
	int err;

	for (i = 0; i < op->run->nfiles; i++) {
		const struct fk_pfile *pf = &op->files[i].pf;
		uint32_t prev = fk_prun_tail(&pf->old), c, ntaken = 0;

		for (r = 0; r < pf->add.nruns; r++) {
			const struct fk_run *run = &pf->add.runs[r];

			for (c = run->first; c < run->first + run->nclus; c++) {
				if (is_stopping(op) && !nall)
					return -EINTR;
				if (is_stopping(op)) {
					fk_prun_cut(op->run, i, ntaken);
					settle_entries(op->run);
					return 0;
				}
				if ((err = fk_fat_put(op->vol, c, eoc)) ||
				    (err = flush(op)))
					return err;
				if (!ntaken && pf->old.nclus)
					op->run->is_linked = 1;
				if (prev &&
				    ((err = fk_fat_put(op->vol, prev, c)) ||
				     (err = flush(op))))
					return err;
				prev = c;
				ntaken++;
				nall++;
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

	op->run->is_linked = 1;
	for (i = 0; i < op->run->nfiles && !op->o->per_cluster; i++) {
		const struct fk_pfile *pf = &op->files[i].pf;
		uint32_t tail = fk_prun_tail(&pf->old);

		if (!tail || !pf->add.nruns)
			continue;
		if ((err = fk_fat_put(op->vol, tail, pf->add.runs[0].first)))
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
	return fk_prun_barrier(op->run);
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
 * Step 1 with --per-cluster: the files' chains a cluster at a time (a
 * stop may cut them short), then the fresh directory blocks, whose
 * entries say what the files really got.  Nothing reaches those blocks
 * before step 2, behind the barrier.
 */
static int write_per_cluster(struct op *op)
{
	int err;

	if ((err = write_chains_per_cluster(op)))
		return err;
	set_entries(op);
	if ((err = write_fresh_dirs(op)))
		return err;
	return fk_prun_barrier(op->run);
}

/*
 * Steps 1 to 4.  -EINTR only before step 2 (with --per-cluster, before
 * its first cluster): from the commit point on, a stop request waits for
 * the end of the run, or cuts a --per-cluster run short.
 */
static int commit(struct fk_prun *run, struct fk_prealloc_result *res)
{
	struct op *op = run->fam_op;
	int is_pc = op->o->per_cluster, err;

	fk_cache_set_sync(op->vol->fat, fk_prun_cache_sync(run));
	if (is_stopping(op))
		return -EINTR;
	if (!is_pc)
		set_entries(op);
	if ((err = write_chains(op)) || (err = fk_prun_zero(run, res)) ||
	    (!is_pc && (err = write_fresh_dirs(op))) ||
	    (err = fk_prun_barrier(op->run)))
		return err;
	if (is_stopping(op))
		return -EINTR;
	if ((is_pc && (err = write_per_cluster(op))) ||
	    (err = write_links(op)) || (err = write_entries(op)))
		return err;
	if ((err = fk_fsinfo_write(op->vol, fk_alloc_fsinfo_free(op->alloc),
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
static int rollback(struct fk_prun *run)
{
	struct op *op = run->fam_op;
	int err = 0;
	const struct fk_plan *plans[3];
	size_t i, k, r;

	fk_cache_discard(op->vol->fat);
	for (i = 0; i < op->ndirs || i < run->nfiles; i++) {
		plans[0] = i < op->ndirs ? &op->dirs[i].own : NULL;
		plans[1] = i < op->ndirs ? fk_dirplan_growth(op->dirs[i].dp)
					 : NULL;
		plans[2] = i < run->nfiles ? &op->files[i].pf.add : NULL;
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

static int fill_dirs(struct fk_prun *run, struct fk_prealloc_result *res)
{
	struct op *op = run->fam_op;
	size_t i;

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
	return 0;
}

/*
 * Out of space while FSInfo, written last by every writer, counts more
 * free clusters than the FAT (@nfree) has: most likely a run was cut off
 * (a crash, a kill) after taking clusters it never linked, which are now
 * lost.  Say so, and what gets them back.
 */
static void hint_lost(struct fk_prun *run, uint32_t nfree, struct fk_diag *diag)
{
	struct fk_volume *vol = run->vol;
	struct fk_fsinfo fsi;

	if (fk_fsinfo_read(vol, &fsi) || !fsi.is_present || !fsi.is_lead_ok ||
	    !fsi.is_struc_ok || fsi.free_count == FK_FSINFO_UNKNOWN ||
	    fsi.free_count <= nfree || fsi.free_count > vol->g.nclus)
		return;
	fk_diag_append(diag, -ENOSPC,
		       "; FSInfo says %u free, so %u cluster%s likely lost",
		       fsi.free_count, fsi.free_count - nfree,
		       fsi.free_count - nfree == 1 ? " is" : "s are");
	fk_diag_hint(diag, FK_HINT_REPAIR_LOST);
}

static int start(struct fk_prun *run, struct fk_diag *diag)
{
	struct op *op;
	int err, open_err;

	if (run->o->lazy) {
		fk_diag_set(diag, NULL,
			    "--lazy is for exFAT volumes only (FAT has no "
			    "valid data length)");
		return -EINVAL;
	}
	if (!(op = calloc(1, sizeof(*op))))
		return -ENOMEM;
	run->fam_op = op;
	op->run = run;
	op->vol = run->vol;
	op->o = run->o;
	op->files = run->files;
	fk_dir_stamp(&op->stamp, run->o->now, run->o->now_is_utc);
	/*
	 * The free map before the judges: its first read, of the entries
	 * the run must take by FSInfo's count, holds the FAT's first
	 * sectors that the judges and the root's chain read too, when the
	 * hint is near the start (an empty card's); a card then serves
	 * them all in one request, not four.  The judges' refusals still
	 * come first.
	 */
	if (!(open_err = fk_alloc_open_lazy(op->vol, &op->alloc))) {
		run->alloc = op->alloc;
		fk_alloc_expect(op->alloc, run->asked_clus);
	}
	if ((err = fk_fat_judge_boot(run->vol, diag)))
		return err;
	if ((err = fk_fat_judge_read_copy(run->vol, diag))) {
		if (err == FK_ECORRUPT)
			fk_diag_hint(diag, FK_HINT_REPAIR);
		return err;
	}
	return open_err;
}

static void end(struct fk_prun *run)
{
	struct op *op = run->fam_op;
	size_t i;

	if (!op)
		return;
	for (i = 0; i < op->ndirs; i++) {
		fk_dirplan_close(op->dirs[i].dp);
		fk_plan_free(&op->dirs[i].own);
		free(op->dirs[i].path);
	}
	free(op->dirs);
	fk_alloc_close(op->alloc);
	free(op);
	run->fam_op = NULL;
}

/* The FAT entries a plan writes, free clusters each. */
static int push_plan(struct fk_fat_span **spans, size_t *n, size_t *cap,
		     const struct fk_plan *p)
{
	size_t r;

	for (r = 0; r < p->nruns; r++) {
		if (FK_VEC_RESERVE(*spans, *cap, *n + 1))
			return -ENOMEM;
		(*spans)[(*n)++] = (struct fk_fat_span){p->runs[r].first,
							p->runs[r].nclus, 1};
	}
	return 0;
}

/* One entry a link writes (an old chain end, taken already). */
static int push_link(struct fk_fat_span **spans, size_t *n, size_t *cap,
		     uint32_t clus)
{
	if (!clus)
		return 0;
	if (FK_VEC_RESERVE(*spans, *cap, *n + 1))
		return -ENOMEM;
	(*spans)[(*n)++] = (struct fk_fat_span){clus, 1, 0};
	return 0;
}

/*
 * Every FAT sector the commit (or its rollback) writes must hold the same
 * bytes in every copy it reaches: the write copies the read copy's sector
 * over the others, and where they differ the other copy may be the sound
 * one (a zeroed sector in the read copy calls a file's clusters free).
 * Reads only the other copies' sectors this run writes.
 */
static int verify(struct fk_prun *run, struct fk_diag *diag)
{
	struct op *op = run->fam_op;
	struct fk_fat_span *spans = NULL;
	size_t n = 0, cap = 0, i;
	int err = 0;

	for (i = 0; !err && i < op->ndirs; i++) {
		const struct fk_dirplan *dp = op->dirs[i].dp;

		if (!(err = push_plan(&spans, &n, &cap, &op->dirs[i].own)) &&
		    !(err = push_plan(&spans, &n, &cap, fk_dirplan_growth(dp))))
			err = push_link(&spans, &n, &cap,
					fk_dirplan_link_from(dp));
	}
	for (i = 0; !err && i < run->nfiles; i++) {
		const struct fk_pfile *pf = &op->files[i].pf;

		if (!(err = push_plan(&spans, &n, &cap, &pf->add)) &&
		    pf->add.nruns)
			err = push_link(&spans, &n, &cap,
					fk_prun_tail(&pf->old));
	}
	if (!err)
		err = fk_fat_judge_mirror(op->vol, spans, n,
					  fk_alloc_is_blank(op->alloc), diag);
	if (err == FK_ECORRUPT) /* the volume's damage, not a path's */
		fk_diag_set(diag, fk_device_path(op->vol->dev), NULL);
	free(spans);
	return err;
}

const struct fk_prealloc_family fk_fat_prealloc_family = {
	.file_len = sizeof(struct file_plan),
	.is_whole_contig = 0,
	.has_valid_len = 0,
	.start = start,
	.resolve = resolve,
	.settle = settle_entries,
	.verify = verify,
	.fill_dirs = fill_dirs,
	.commit = commit,
	.rollback = rollback,
	.hint_nospc = hint_lost,
	.end = end,
};
