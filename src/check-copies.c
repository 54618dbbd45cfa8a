/*
 * check-copies.c: which FAT copy to keep where the copies differ.  The
 * scan notes the runs of sectors where they differ; here the directory
 * tree is walked once through each copy, and each problem a walk meets
 * (a free, bad or out-of-range link inside a chain, a chain that ends
 * before or after its file's size says, a link into clusters already
 * taken) counts against the copy it read, in the run whose sectors hold
 * the entry at fault.  Per run the copy with fewer problems is kept (the
 * read copy on a tie, as before); the checker then reads the FAT as the
 * kept sectors make it (fk_cache_set_patches()), and the repair writes
 * them over the other copy.  fsck.fat rewrites the second copy from the
 * first whatever they hold, so a zeroed sector in the first copy cuts
 * every file through it short and the intact copy is lost.
 */
#include "check-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "diag.h"
#include "dir.h"
#include "fat.h"
#include "slot.h"
#include "volume.h"

#define MAX_KEPT_FINDINGS 8 /* runs named one by one; the rest counted */

/* One copy's walk: the problems it met in each run. */
struct judge {
	struct fk_check *ck;
	uint64_t *seen; /* clusters this walk has taken, 1 bit each */
	uint32_t *nbad; /* per run */
	char **why;	/* per run: the first problem, or NULL */
	char *path;	/* of the entry walked */
	size_t path_len, path_cap;
};

/* How a chain walk goes, cluster by cluster. */
struct chain_walk {
	struct judge *j;
	uint32_t need;	    /* clusters the size needs; 0: none (a
			       directory, or an empty file) */
	uint32_t nclus;	    /* taken so far */
	uint32_t prev;	    /* the cluster before; 0: none */
	uint32_t need_last; /* the need-th cluster; 0: not reached */
	int is_cross;	    /* stopped at a cluster already taken */
};

int ck_note_diff(struct fk_check *ck, uint32_t sec)
{
	struct copy_run r = {sec, 1, ck->g->active_fat};
	struct copy_run *last =
		ck->copy_runs.n ? &ck->copy_runs.v[ck->copy_runs.n - 1] : NULL;

	if (last && last->first + last->nsecs == sec) {
		last->nsecs++;
		return 0;
	}
	return PUSH(ck->copy_runs, r);
}

/* The run holding sector @sec, or NO_RUN. */
static uint32_t run_of(const struct fk_check *ck, uint32_t sec)
{
	size_t lo = 0, hi = ck->copy_runs.n;

	while (lo < hi) {
		const struct copy_run *r = &ck->copy_runs.v[(lo + hi) / 2];

		if (sec < r->first)
			hi = (lo + hi) / 2;
		else if (sec >= r->first + r->nsecs)
			lo = (lo + hi) / 2 + 1;
		else
			return (uint32_t)((lo + hi) / 2);
	}
	return NO_RUN;
}

/* What a copy does wrong to the entry walked. */
enum fault { CUTS, RUNS_PAST, FREE_INSIDE, BREAKS, CROSSES };

static char *say_fault(enum fault f, const char *path)
{
	switch (f) {
	case CUTS:
		return ck_format("cuts %s short", path);
	case RUNS_PAST:
		return ck_format("runs %s past its size", path);
	case FREE_INSIDE:
		return ck_format("marks a cluster of %s free", path);
	case BREAKS:
		return ck_format("breaks the chain of %s", path);
	default:
		return ck_format("links %s into clusters in use", path);
	}
}

/* A fault in the entry of @clus, said of the entry walked.  Counts only
 * where the copies differ. */
static void blame(struct judge *j, uint32_t clus, enum fault f)
{
	uint32_t secs[2], r, i;

	fk_fat_entry_secs(j->ck->g, clus, &secs[0], &secs[1]);
	for (i = 0; i < 2; i++) {
		if (i && secs[1] == secs[0])
			break;
		if ((r = run_of(j->ck, secs[i])) == NO_RUN)
			continue;
		if (!j->nbad[r]++)
			j->why[r] = say_fault(f, j->path_len ? j->path : "/");
	}
}

static int take_run(void *arg, const struct fk_run *run)
{
	struct chain_walk *w = arg;
	uint64_t *seen = w->j->seen;
	uint32_t c;

	for (c = run->first; c < run->first + run->nclus; c++) {
		if (seen[c / 64] >> (c % 64) & 1) {
			w->is_cross = 1;
			return 1;
		}
		seen[c / 64] |= (uint64_t)1 << (c % 64);
		if (++w->nclus == w->need)
			w->need_last = c;
		w->prev = c;
	}
	return 0;
}

/* Walk the chain from @start for the entry walked (@need: clusters its
 * size needs; 0 for a directory); *@nclus: clusters taken.  Returns 0 or
 * -errno. */
static int judge_chain(struct judge *j, uint32_t start, uint32_t need,
		       uint32_t *nclus)
{
	struct chain_walk w = {j, need, 0, 0, 0, 0};
	struct fk_chain_info info;
	int err;

	*nclus = 0;
	if (!fk_clus_valid(j->ck->g, start))
		return 0; /* the entry's fault, the same in every copy */
	err = fk_chain_walk(j->ck->vol, start, take_run, &w, &info);
	if (err < 0)
		return err;
	*nclus = w.nclus;
	if (w.is_cross) {
		/* The first cluster comes from the entry, not the FAT. */
		if (w.prev)
			blame(j, w.prev, CROSSES);
		return 0;
	}
	switch (info.end) {
	case FK_ENT_EOC:
		if (need && w.nclus < need)
			blame(j, info.last, CUTS);
		else if (need && w.nclus > need && w.need_last)
			blame(j, w.need_last, RUNS_PAST);
		return 0;
	case FK_ENT_FREE:
		blame(j, info.last, FREE_INSIDE);
		return 0;
	default:
		blame(j, info.last, BREAKS);
		return 0;
	}
}

static int push_name(struct judge *j, const char *name, size_t *old)
{
	size_t n = strlen(name);

	*old = j->path_len;
	if (FK_VEC_RESERVE(j->path, j->path_cap, j->path_len + n + 2))
		return -ENOMEM;
	j->path[j->path_len++] = '/';
	memcpy(j->path + j->path_len, name, n + 1);
	j->path_len += n;
	return 0;
}

/*
 * The entries of the directory at @first (0: the root), @nclus clusters
 * of it (0: the fixed root), and below, to @depth levels.  A directory
 * that does not read is left there: the check proper reports it.
 */
static int judge_dir(struct judge *j, uint32_t first, uint32_t nclus, int depth)
{
	const struct fk_geom *g = j->ck->g;
	struct fk_diag diag = {{0}, {0}};
	struct fk_dirent *ent;
	struct fk_dir *dir;
	int err = 0, r;

	if (!(ent = malloc(sizeof(*ent))))
		return -ENOMEM;
	if ((err = fk_dir_open(j->ck->vol, first, &dir))) {
		free(ent);
		return err;
	}
	if (nclus)
		fk_dir_set_limit(dir, nclus);
	while (!err && (r = fk_dir_next(dir, ent, &diag)) == 1) {
		int is_dir = (ent->attr & FK_ATTR_DIR) != 0;
		uint32_t need = 0, n;
		size_t old;

		if (fk_dirent_is_dot(ent) || (ent->attr & FK_ATTR_VOLUME))
			continue;
		if (!is_dir)
			need = (uint32_t)((ent->size + g->clus_len - 1) /
					  g->clus_len);
		if ((err = push_name(j, ent->name, &old)))
			break;
		if (!(err = judge_chain(j, ent->first_clus, need, &n)) &&
		    is_dir && n && depth > 1)
			err = judge_dir(j, ent->first_clus, n, depth - 1);
		j->path_len = old;
		j->path[old] = '\0';
	}
	fk_dir_close(dir);
	free(ent);
	if (!err && r < 0 && r != FK_ECORRUPT)
		err = r;
	return err;
}

/* Walk the tree through copy @copy where the copies differ. */
static int judge_copy(struct fk_check *ck, uint32_t copy, struct judge *j)
{
	const struct fk_geom *g = ck->g;
	uint32_t nclus = 0;
	size_t i;
	int err;

	for (i = 0; i < ck->copy_runs.n; i++) {
		ck->patches[i].first = ck->copy_runs.v[i].first;
		ck->patches[i].nsecs = ck->copy_runs.v[i].nsecs;
		ck->patches[i].copy = copy;
	}
	fk_cache_set_patches(ck->vol->fat, ck->patches,
			     copy == g->active_fat ? 0 : ck->copy_runs.n);
	memset(j->seen, 0,
	       ((size_t)fk_clus_max(g) / 64 + 1) * sizeof(*j->seen));
	j->path_len = 0;
	if (g->root_clus &&
	    ((err = judge_chain(j, g->root_clus, 0, &nclus)) || !nclus))
		return err;
	return judge_dir(j, 0, nclus, FK_CHECK_MAX_DEPTH);
}

static void free_judge(struct judge *j, size_t nruns)
{
	size_t i;

	if (j->why)
		for (i = 0; i < nruns; i++)
			free(j->why[i]);
	free(j->why);
	free(j->nbad);
}

/* "sectors 3-5" of a run. */
static void say_run(const struct copy_run *r, char *buf, size_t len)
{
	snprintf(buf, len, "sectors %u-%u", r->first, r->first + r->nsecs - 1);
}

/* Decide run @i from the two walks (@js[c]: copy c's) and say why. */
static void decide(struct fk_check *ck, size_t i, struct judge *js,
		   size_t *nsaid)
{
	struct copy_run *r = &ck->copy_runs.v[i];
	uint32_t a = ck->g->active_fat, b = !a, lose;
	char secs[48];

	if (js[b].nbad[i] < js[a].nbad[i])
		r->keep = b;
	if (++*nsaid > MAX_KEPT_FINDINGS)
		return;
	say_run(r, secs, sizeof(secs));
	lose = !r->keep;
	if (js[lose].nbad[i] > js[r->keep].nbad[i])
		ck_report(ck, FK_SEV_NOTE, "fat-copy-kept", NULL,
			  "FAT copy %u kept for %s: copy %u %s", r->keep + 1,
			  secs, lose + 1,
			  js[lose].why[i] ? js[lose].why[i]
					  : "disagrees with the tree");
	else
		ck_report(ck, FK_SEV_NOTE, "fat-copy-kept", NULL,
			  "FAT copy %u kept for %s: neither copy agrees "
			  "better with the directory tree there, so the one "
			  "read",
			  r->keep + 1, secs);
}

/* Both walks, then a decision per run. */
static int judge_runs(struct fk_check *ck)
{
	struct judge js[2];
	uint64_t *seen;
	size_t nruns = ck->copy_runs.n, nsaid = 0, i;
	uint32_t c;
	int err = -ENOMEM;

	memset(js, 0, sizeof(js));
	seen = calloc((size_t)fk_clus_max(ck->g) / 64 + 1, sizeof(*seen));
	for (c = 0; c < 2; c++) {
		js[c].ck = ck;
		js[c].seen = seen;
		js[c].nbad = calloc(nruns, sizeof(*js[c].nbad));
		js[c].why = calloc(nruns, sizeof(*js[c].why));
		if (!js[c].nbad || !js[c].why)
			goto out;
	}
	if (!seen)
		goto out;
	for (c = 0; c < 2; c++)
		if ((err = judge_copy(ck, c, &js[c])))
			goto out;
	for (i = 0; i < nruns; i++)
		decide(ck, i, js, &nsaid);
	if (nsaid > MAX_KEPT_FINDINGS)
		ck_report(ck, FK_SEV_NOTE, "fat-copy-kept", NULL,
			  "%zu more runs of differing sectors judged the "
			  "same way",
			  nsaid - MAX_KEPT_FINDINGS);
out:
	for (c = 0; c < 2; c++)
		free_judge(&js[c], nruns);
	free(js[0].path);
	free(js[1].path);
	free(seen);
	return err;
}

int ck_judge_copies(struct fk_check *ck, int *is_patched)
{
	const struct fk_geom *g = ck->g;
	uint32_t forced = ck->o.fat_copy;
	size_t i, n = 0;
	int err;

	*is_patched = 0;
	if (!ck->copy_runs.n || g->nfats != 2)
		return 0;
	if (!(ck->patches = calloc(ck->copy_runs.n, sizeof(*ck->patches))))
		return -ENOMEM;
	if (forced) {
		for (i = 0; i < ck->copy_runs.n; i++)
			ck->copy_runs.v[i].keep = forced - 1;
		ck_report(ck, FK_SEV_NOTE, "fat-copy-kept", NULL,
			  "FAT copy %u kept where the copies differ "
			  "(--fat-copy %u)",
			  forced, forced);
	} else if ((err = judge_runs(ck))) {
		fk_cache_set_patches(ck->vol->fat, NULL, 0);
		return err;
	}
	/* From here on the check reads the kept sectors. */
	for (i = 0; i < ck->copy_runs.n; i++) {
		const struct copy_run *r = &ck->copy_runs.v[i];

		if (r->keep == g->active_fat)
			continue;
		ck->patches[n].first = r->first;
		ck->patches[n].nsecs = r->nsecs;
		ck->patches[n++].copy = r->keep;
	}
	ck->npatches = n;
	fk_cache_set_patches(ck->vol->fat, ck->patches, n);
	*is_patched = n != 0;
	return 0;
}

void ck_unpatch(struct fk_check *ck)
{
	if (ck->npatches)
		fk_cache_set_patches(ck->vol->fat, NULL, 0);
	ck->npatches = 0;
}
