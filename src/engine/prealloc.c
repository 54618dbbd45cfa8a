/*
 * prealloc.c: fk_prealloc(), the run both families share (prealloc-int.h):
 * resolve every request, plan every cluster in memory, then commit, so a
 * refusal leaves the image as it was.  The run owns the request loop, the
 * all-or-nothing cluster plan, zeroing in bounded chunks, the result, and
 * what a stop request or a failed write becomes; each family's steps
 * (fat-prealloc.c, exfat-prealloc.c) own its structures and write order.
 */
#include "engine/prealloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iface/prealloc-int.h"
#include "io/cache.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/vec.h"
#include "table/fat.h"
#include "volume/family.h"
#include "volume/volume.h"

/* New clusters @pf needs for its largest request. */
static uint32_t need_of(const struct fk_prun *run, const struct fk_pfile *pf)
{
	uint64_t clus_len = run->vol->g.clus_len;
	uint64_t want = (pf->want + clus_len - 1) / clus_len;

	return want > pf->old.nclus ? (uint32_t)(want - pf->old.nclus) : 0;
}

/*
 * "1.5 GiB": sizes in messages, as people read them, rounded to the
 * nearest tenth (@is_up < 0), up (> 0) or down (0), so that a need just
 * over what is free can be shown as more.
 */
static void human_len(uint64_t len, int is_up, char *out, size_t out_len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	unsigned u = 0, shift;
	uint64_t whole, rem, tenths;

	while (u < 4 && len >> (10 * (u + 1)))
		u++;
	if (!u) {
		snprintf(out, out_len, "%llu B", (unsigned long long)len);
		return;
	}
	shift = 10 * u;
	whole = len >> shift;
	rem = len & (((uint64_t)1 << shift) - 1);
	/* tenths, in integers: rem * 10 stays below 10 * 2^40 */
	tenths = whole * 10 + ((rem * 10) >> shift);
	if (is_up < 0 && ((rem * 10) >> (shift - 1) & 1))
		tenths++; /* nearest */
	else if (is_up > 0 && ((rem * 10) & (((uint64_t)1 << shift) - 1)))
		tenths++;
	snprintf(out, out_len, "%llu.%llu %s",
		 (unsigned long long)(tenths / 10),
		 (unsigned long long)(tenths % 10), units[u]);
}

/*
 * The whole run does not fit: say, in bytes, what it needs (directories
 * -p creates included) and what is free on the volume (@nfree clusters
 * before the run), and which requests do not fit when the others are
 * served in command-line order.  Clusters only with -v.
 */
static int no_space(struct fk_prun *run, uint32_t nfree, uint64_t total,
		    struct fk_diag *diag)
{
	uint64_t clus_len = run->vol->g.clus_len, avail, need_all;
	const char *first = NULL;
	char need_s[32], free_s[32], more[32] = "";
	size_t i, nmiss = 0;

	avail = fk_alloc_nfree(run->alloc);
	need_all = total + (nfree - avail); /* + the new directories */
	for (i = 0; i < run->nfiles; i++) {
		uint32_t need = need_of(run, fk_prun_file(run, i));

		if (need <= avail) {
			avail -= need;
		} else if (!nmiss++) {
			first = fk_prun_file(run, i)->path;
		}
	}
	human_len(need_all * clus_len, -1, need_s, sizeof(need_s));
	human_len((uint64_t)nfree * clus_len, -1, free_s, sizeof(free_s));
	if (!strcmp(need_s, free_s)) {
		human_len(need_all * clus_len, 1, need_s, sizeof(need_s));
		human_len((uint64_t)nfree * clus_len, 0, free_s,
			  sizeof(free_s));
	}
	if (nmiss > 1)
		snprintf(more, sizeof(more), " and %zu more", nmiss - 1);
	fk_diag_set(diag,
		    run->o->image ? run->o->image
				  : fk_device_path(run->vol->dev),
		    "%s: the run needs %s, %s is free (%s%s do%s not fit)",
		    strerror(ENOSPC), need_s, free_s, first ? first : "it",
		    more, nmiss > 1 ? "" : "es");
	if (run->o->verbose)
		fk_diag_append(diag, -ENOSPC,
			       "; %llu cluster%s of %llu bytes needed, %u free",
			       (unsigned long long)need_all,
			       need_all == 1 ? "" : "s",
			       (unsigned long long)clus_len, nfree);
	return -ENOSPC;
}

/*
 * --align: the clusters whose byte offset on the device (IMAGE, the
 * volume's offset in it included, and IMAGE's own on its disk when it is
 * a partition's block device) is a multiple of @run->o->align_len
 * are *@phase + k * *@step.  Cluster and alignment sizes are powers of
 * two, so either every cluster is aligned, or every step-th one, or none
 * (a data area that starts off the cluster grid): that is a refusal.
 */
static int align_grid(struct fk_prun *run, uint32_t *phase, uint32_t *step,
		      struct fk_diag *diag)
{
	const struct fk_geom *g = &run->vol->g;
	uint64_t align = run->o->align_len, clus_len = g->clus_len;
	uint64_t off2 = fk_device_disk_off(run->vol->dev) +
			fk_device_base(run->vol->dev) + fk_clus_off(g, 2);
	uint64_t k;

	if (clus_len >= align ? off2 % align == 0 : off2 % clus_len == 0) {
		*step = clus_len >= align ? 1 : (uint32_t)(align / clus_len);
		k = (align - off2 % align) % align / clus_len;
		*phase = FK_FIRST_CLUS + (uint32_t)(clus_len >= align ? 0 : k);
		return 0;
	}
	fk_diag_set(diag,
		    run->o->image ? run->o->image
				  : fk_device_path(run->vol->dev),
		    "--align %llu: no cluster starts at a multiple of it: the "
		    "data area starts at byte %llu of the image and clusters "
		    "are %llu bytes",
		    (unsigned long long)align, (unsigned long long)off2,
		    (unsigned long long)clus_len);
	return -EINVAL;
}

/*
 * -c (or --align) found no free run long enough for @pf: say so in bytes,
 * with the longest run there is (starting aligned, with --align), and
 * clusters only with -v.
 */
static int no_run(struct fk_prun *run, const struct fk_pfile *pf, uint32_t need,
		  int is_aligned, uint32_t phase, uint32_t step,
		  struct fk_diag *diag)
{
	uint64_t clus_len = run->vol->g.clus_len;
	uint32_t longest = fk_alloc_longest(run->alloc, is_aligned ? phase : 2,
					    is_aligned ? step : 1);
	char need_s[32], long_s[32], at[64] = "";

	human_len((uint64_t)need * clus_len, 1, need_s, sizeof(need_s));
	human_len((uint64_t)longest * clus_len, 0, long_s, sizeof(long_s));
	if (is_aligned)
		snprintf(at, sizeof(at), " that starts at a multiple of %llu",
			 (unsigned long long)run->o->align_len);
	fk_diag_set(diag, pf->path,
		    "%s: %s needs %s run of %s%s; the longest free one is %s",
		    strerror(ENOSPC), run->o->contiguous ? "-c" : "--align",
		    run->o->contiguous ? "one contiguous" : "a free", need_s,
		    at, long_s);
	if (run->o->verbose)
		fk_diag_append(diag, -ENOSPC,
			       " (%u cluster%s of %llu bytes; %u)", need,
			       need == 1 ? "" : "s",
			       (unsigned long long)clus_len, longest);
	return -ENOSPC;
}

/* Plan the new clusters of @pf, --align honoured for a new chain. */
static int plan_file(struct fk_prun *run, struct fk_pfile *pf, uint32_t need,
		     uint32_t phase, uint32_t step, struct fk_diag *diag)
{
	unsigned flags = run->o->contiguous ? FK_ALLOC_CONTIG : 0;
	uint32_t tail = fk_prun_tail(&pf->old);
	int is_aligned = run->o->align_len && !pf->old.nclus;
	int err;

	if (!need)
		return 0;
	if (is_aligned)
		err = fk_alloc_plan_aligned(run->alloc, need, phase, step,
					    flags, &pf->add, diag);
	else
		err = fk_alloc_plan(run->alloc, tail, need, flags, &pf->add,
				    diag);
	/* The whole run fits (checked before): no run long enough. */
	if (err == -ENOSPC && (flags || is_aligned))
		return no_run(run, pf, need, is_aligned, phase, step, diag);
	return err;
}

static int plan_clusters(struct fk_prun *run,
			 const struct fk_prealloc_family *fam,
			 struct fk_diag *diag)
{
	uint32_t phase = 0, step = 1;
	uint64_t total = 0;
	size_t i;
	int err;

	/* All-or-nothing: the whole run must fit before anything is taken. */
	for (i = 0; i < run->nfiles; i++)
		total += need_of(run, fk_prun_file(run, i));
	/* A lazy map reads on only until the run is covered; short of
	 * that, it has read all of the FAT and its counts are exact. */
	if (total > UINT32_MAX ||
	    !fk_alloc_has_free(run->alloc, (uint32_t)total))
		return no_space(run, fk_alloc_nfree_open(run->alloc), total,
				diag);
	if (run->o->align_len && (err = align_grid(run, &phase, &step, diag)))
		return err;
	for (i = 0; i < run->nfiles; i++) {
		struct fk_pfile *pf = fk_prun_file(run, i);
		uint32_t need = need_of(run, pf), tail = fk_prun_tail(&pf->old);

		fk_diag_set(diag, pf->path, NULL);
		if (run->o->per_cluster) {
			/* The old kernels took one cluster per call, from
			 * the last one. */
			for (; need; need--) {
				if ((err = fk_alloc_plan(run->alloc, tail, 1, 0,
							 &pf->add, diag)))
					return err;
				tail = fk_prun_tail(&pf->add);
			}
			continue;
		}
		if ((err = plan_file(run, pf, need, phase, step, diag)))
			return err;
		if (fam->is_whole_contig && run->o->contiguous && need &&
		    pf->old.nclus && pf->add.runs[0].first != tail + 1) {
			fk_diag_detail(diag, NULL,
				       "no free clusters right after the file "
				       "for one contiguous run");
			return -ENOSPC;
		}
	}
	return 0;
}

/* What a stop request (-EINTR from commit(), or one noticed after it)
 * became, in @diag's words. */
static int interrupted(struct fk_prun *run, int undo_err, struct fk_diag *diag)
{
	const char *image =
		run->o->image ? run->o->image : fk_device_path(run->vol->dev);
	char later[64] = "";

	if (run->is_cut) {
		if (run->cut_later)
			snprintf(later, sizeof(later), ", %zu more file%s none",
				 run->cut_later,
				 run->cut_later == 1 ? "" : "s");
		fk_diag_set(diag, image,
			    "interrupted; %s got %u of its %u new cluster%s%s; "
			    "run again to finish",
			    fk_prun_file(run, run->cut_file)->path,
			    run->cut_taken, run->cut_planned,
			    run->cut_planned == 1 ? "" : "s", later);
	} else if (run->is_linked)
		fk_diag_set(diag, image,
			    "interrupted after the commit point; the run was "
			    "completed");
	else if (undo_err) {
		fk_diag_set(diag, image,
			    "interrupted, and freeing the new clusters failed "
			    "(%s)",
			    strerror(-undo_err));
		fk_diag_hint(diag, FK_HINT_REPAIR);
	} else
		fk_diag_set(diag, image, "interrupted; nothing was changed");
	return -EINTR;
}

static int fill_result(struct fk_prun *run,
		       const struct fk_prealloc_family *fam,
		       const struct fk_prealloc_req *reqs, size_t n,
		       struct fk_prealloc_result *res)
{
	size_t i, k;
	int err;

	if (!(res->files = calloc(n ? n : 1, sizeof(*res->files))))
		return -ENOMEM;
	res->nfiles = n;
	if ((err = fam->fill_dirs(run, res)))
		return err;
	for (i = 0; i < run->nfiles; i++) {
		const struct fk_pfile *pf = fk_prun_file(run, i);

		res->new_clus += pf->add.nclus;
		res->new_frags += (uint32_t)pf->add.nruns;
	}
	for (i = 0; i < n; i++) {
		const struct fk_pfile *pf = fk_prun_file(run, run->file_of[i]);
		struct fk_prealloc_file *f = &res->files[i];
		struct fk_plan *c = &f->chain;

		f->path = reqs[i].path;
		f->action = pf->is_new	     ? FK_FILE_CREATED
			    : pf->is_changed ? FK_FILE_GROWN
					     : FK_FILE_UNCHANGED;
		f->old_size = pf->old_size;
		f->size = pf->size;
		f->valid_len = fam->has_valid_len ? pf->valid_len : pf->size;
		f->new_clus = pf->add.nclus;
		/* Growing in place merges the last old run and the first new
		 * one, as fatls will count them. */
		for (k = 0; k < pf->old.nruns + pf->add.nruns; k++) {
			const struct fk_run *r =
				k < pf->old.nruns
					? &pf->old.runs[k]
					: &pf->add.runs[k - pf->old.nruns];

			if (fk_plan_add(c, r->first, r->nclus))
				return -ENOMEM;
		}
		f->first_clus = c->nruns ? c->runs[0].first : 0;
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

/* Parent directories on @path: the most -p creates for it. */
static uint32_t parents_of(const char *path)
{
	uint32_t n = 0;

	for (; *path; path++)
		n += path[0] != '/' && (path[1] == '/' || !path[1]);
	return n ? n - 1 : 0;
}

/* Do @a and @b name files in the same directory (the same text up to
 * the last slash)? */
static int same_dir(const char *a, const char *b)
{
	const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');

	return sa && sb && sa - a == sb - b && !memcmp(a, b, (size_t)(sa - a));
}

/*
 * Clusters the requests ask for in all (and with -p, one for each
 * directory on their paths, counted once for files that follow one
 * another in one directory), before anything is read: what the FAT
 * writer's first read of the FAT is sized by (fk_alloc_expect()).
 */
static uint64_t asked_clus(const struct fk_prun *run,
			   const struct fk_prealloc_req *reqs, size_t n)
{
	uint64_t clus_len = run->vol->g.clus_len, sum = 0;
	size_t i;

	for (i = 0; i < n && sum < UINT32_MAX; i++) {
		sum += reqs[i].len / clus_len + (reqs[i].len % clus_len != 0);
		if (run->o->parents &&
		    !(i && same_dir(reqs[i - 1].path, reqs[i].path)))
			sum += parents_of(reqs[i].path);
	}
	return sum < UINT32_MAX ? sum : UINT32_MAX; /* more than any FAT */
}

/*
 * The run: resolve every request, plan every cluster, then hand the
 * commit to the family.  Undoes only what was written: a stop or failure
 * before the first write leaves the image as it was.
 */
static int run_family(struct fk_prun *run, const struct fk_prealloc_family *fam,
		      const struct fk_prealloc_req *reqs, size_t n,
		      struct fk_prealloc_result *res, struct fk_diag *diag)
{
	const struct fk_io_stats *io;
	uint64_t writes_before;
	size_t i;
	int err;

	run->asked_clus = asked_clus(run, reqs, n);
	if ((err = fam->start(run, diag)))
		return err;
	/* Out of space, the lazy free map has read all of the FAT. */
	for (i = 0; i < n; i++) {
		fk_diag_set(diag, reqs[i].path, NULL);
		if ((err = fam->resolve(run, i, &reqs[i], diag))) {
			if (err == FK_ECORRUPT)
				fk_diag_hint(diag, FK_HINT_REPAIR);
			if (err == -ENOSPC && fam->hint_nospc)
				fam->hint_nospc(run,
						fk_alloc_nfree_open(run->alloc),
						diag);
			return err;
		}
	}
	if ((err = plan_clusters(run, fam, diag))) {
		if (err == -ENOSPC && fam->hint_nospc)
			fam->hint_nospc(run, fk_alloc_nfree_open(run->alloc),
					diag);
		return err;
	}
	fam->settle(run);
	if (fam->verify && (err = fam->verify(run, diag))) {
		if (err == FK_ECORRUPT)
			fk_diag_hint(diag, FK_HINT_REPAIR);
		return err;
	}
	if ((err = fill_result(run, fam, reqs, n, res)))
		return err;
	if (run->o->dry_run || !has_changes(res)) {
		/* Nothing to do writes nothing, not even FSInfo. */
		if (fk_prun_is_stopping(run))
			err = interrupted(run, 0, diag);
		return err;
	}
	fk_diag_set(diag, fk_device_path(run->vol->dev), NULL);
	io = fk_device_stats(run->vol->dev);
	writes_before = io->write_calls + io->zero_calls;
	err = fam->commit(run, res);
	if (err && !run->is_linked) {
		/* Undo only what was written: a stop or failure before the
		 * first write leaves the image as it was, FAT copies too. */
		int undo_err = io->write_calls + io->zero_calls == writes_before
				       ? 0
				       : fam->rollback(run);

		if (err == -EINTR)
			err = interrupted(run, undo_err, diag);
	} else if (fk_prun_is_stopping(run)) {
		/* Heard during or after the commit point; the run is done. */
		err = err ? err : interrupted(run, 0, diag);
	}
	return err;
}

int fk_prealloc(struct fk_volume *vol, const struct fk_prealloc_req *reqs,
		size_t n, const struct fk_prealloc_opts *opts,
		struct fk_prealloc_result *res, struct fk_diag *diag)
{
	/* The steps of the family the volume was opened as. */
	const struct fk_prealloc_family *fam = vol->fam->prealloc;
	struct fk_prun run;
	size_t i;
	int err;

	memset(res, 0, sizeof(*res));
	if (!fam)
		return -EOPNOTSUPP;
	memset(&run, 0, sizeof(run));
	run.vol = vol;
	run.o = opts;
	run.file_len = fam->file_len;
	run.files = calloc(n ? n : 1, fam->file_len);
	run.file_of = calloc(n ? n : 1, sizeof(*run.file_of));
	if (!run.files || !run.file_of)
		err = -ENOMEM;
	else
		err = run_family(&run, fam, reqs, n, res, diag);
	fam->end(&run);
	for (i = 0; i < run.nfiles; i++) {
		fk_plan_free(&fk_prun_file(&run, i)->old);
		fk_plan_free(&fk_prun_file(&run, i)->add);
	}
	free(run.files);
	free(run.file_of);
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
