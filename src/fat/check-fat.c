/*
 * check-fat.c: the checker's volume-level phases: the boot sector and its
 * FAT32 backup, one pass over the FAT copies that builds the cluster map
 * and compares the copies, which copy to keep where they differ, the
 * reserved entries FAT[0] and FAT[1], and FSInfo.  The label is
 * check-label.c's.
 */
#include "fat/check-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fat/dir.h"
#include "fat/fat-boot.h"
#include "io/cache.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "table/fat.h"
#include "table/fsinfo.h"
#include "volume/family.h"
#include "volume/volume.h"

#define BS_COMPARE_LEN 512 /* boot sector bytes fsck.fat compares */
#define NEW_BACKUP_SEC 6   /* where a missing backup boot sector goes */
#define SCAN_CHUNK     64  /* FAT entries judged at a time (a multiple of 8) */

#define MAX_KEPT_FINDINGS 8 /* runs of differing sectors named one by one */

/* ---- boot sector --------------------------------------------------------- */

int ck_check_boot(struct fat_check *ck)
{
	const struct fk_geom *g = ck->g;
	unsigned char *bak;
	size_t idx, i, ndiff = 0, first = 0;
	size_t dirty_off = fk_fat_dirty_off(ck->vol);
	int err, is_dirty = fk_fat_is_dirty(ck->vol);

	/* A warning, as VolumeDirty on exFAT, though fsck.fat -n flags it:
	 * it records how the card was removed, not damage, and every check
	 * below still runs to find any harm done. */
	if (is_dirty) {
		idx = ck_report(ck->rec, FK_SEV_WARNING, "dirty", NULL,
				"the volume was not cleanly removed (dirty "
				"flag in the boot sector is set)");
		ck_set_fix(ck->rec, idx, "flag cleared");
		ck->fix_dirty = 1;
	}
	if (!fk_fat_is_32(g))
		return 0;
	if (!g->backup_sec) {
		/* Numbered past the reserved sectors (not used: fat-boot.c),
		 * fsck.fat compares what lies there with the boot sector,
		 * calls the differences mostly harmless and exits 0; with
		 * none, it counts it as damage (it creates one). */
		if (g->backup_sec_outside) {
			idx = ck_report(ck->rec, FK_SEV_WARNING, "backup-boot",
					NULL,
					"backup boot sector %u is outside the "
					"%u reserved sectors: not used",
					g->backup_sec_outside, g->rsvd_secs);
		} else {
			idx = ck_report(ck->rec, FK_SEV_ERROR, "no-backup-boot",
					NULL,
					"FAT32 volume without a backup boot "
					"sector");
		}
		/* Sector 6, where every formatter puts it, when the
		 * reserved area holds it and FSInfo is elsewhere. */
		if (g->rsvd_secs > NEW_BACKUP_SEC &&
		    g->fsinfo_sec != NEW_BACKUP_SEC) {
			ck_set_fix(ck->rec, idx, "backup written to sector %u",
				   NEW_BACKUP_SEC);
			ck->fix_new_backup = NEW_BACKUP_SEC;
		}
		return 0;
	}
	if (!(bak = malloc(g->sec_len)))
		return -ENOMEM;
	if ((err = fk_fat_read_backup(ck->vol, bak))) {
		free(bak);
		return err;
	}
	/* Linux sets the flag in the boot sector alone; that difference is
	 * the dirty finding's, and clearing the flag rewrites the backup. */
	for (i = 0; i < BS_COMPARE_LEN; i++) {
		unsigned char diff = bak[i] ^ ck->vol->boot[i];

		if (is_dirty && i == dirty_off)
			diff &= (unsigned char)~FK_BOOT_DIRTY;
		if (diff && !ndiff++)
			first = i;
	}
	free(bak);
	if (ndiff) {
		idx = ck_report(
			ck->rec, FK_SEV_WARNING, "backup-boot", NULL,
			"backup boot sector (sector %u) differs from the "
			"boot sector in %zu byte%s, the first at offset %zu",
			g->backup_sec, ndiff, ck_plural(ndiff), first);
		ck_set_fix(ck->rec, idx,
			   "backup rewritten from the boot sector");
		ck->fix_backup = 1;
	}
	return 0;
}

/* ---- which FAT copy to keep --------------------------------------------- */

/*
 * Which FAT copy to keep where the copies differ.  The scan notes the runs of sectors where they differ; here the directory
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
/* One copy's walk: the problems it met in each run. */
struct judge {
	struct fat_check *ck;
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
	uint32_t prev;	    /* the cluster taken last; 0: none */
	uint32_t before;    /* the one taken before it; 0: none */
	uint32_t need_last; /* the need-th cluster; 0: not reached */
	int is_cross;	    /* stopped at a cluster already taken */
};

/* Note sector @sec (ascending) as one where the copies differ. */
static int note_diff(struct fat_check *ck, uint32_t sec)
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
static uint32_t run_of(const struct fat_check *ck, uint32_t sec)
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

/* A fault that lies in the entry of @link (0: none, the first cluster
 * came from the directory entry) or of @clus: counted once per run. */
static void blame_pair(struct judge *j, uint32_t link, uint32_t clus,
		       enum fault f)
{
	uint32_t secs[4], r, runs[4], i, k, n = 0;

	fk_fat_entry_secs(j->ck->g, clus, &secs[0], &secs[1]);
	secs[2] = secs[3] = secs[0];
	if (link)
		fk_fat_entry_secs(j->ck->g, link, &secs[2], &secs[3]);
	for (i = 0; i < 4; i++) {
		if ((r = run_of(j->ck, secs[i])) == NO_RUN)
			continue;
		for (k = 0; k < n && runs[k] != r; k++)
			;
		if (k < n)
			continue;
		runs[n++] = r;
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
		w->before = w->prev;
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
	struct chain_walk w = {j, need, 0, 0, 0, 0, 0};
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
		/* The free entry is one copy's fault, or the link to it is:
		 * a flipped link into free space (differing in one copy only)
		 * lies in the entry before, which may sit in another run or
		 * the only run where the copies differ. */
		blame_pair(j, w.before, info.last, FREE_INSIDE);
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
	struct fk_diag diag = {0};
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
static int judge_copy(struct fat_check *ck, uint32_t copy, struct judge *j)
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
static void decide(struct fat_check *ck, size_t i, struct judge *js,
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
		ck_report(ck->rec, FK_SEV_NOTE, "fat-copy-kept", NULL,
			  "FAT copy %u kept for %s: copy %u %s", r->keep + 1,
			  secs, lose + 1,
			  js[lose].why[i] ? js[lose].why[i]
					  : "disagrees with the tree");
	else
		ck_report(ck->rec, FK_SEV_NOTE, "fat-copy-kept", NULL,
			  "FAT copy %u kept for %s: neither copy agrees "
			  "better with the directory tree there, so the one "
			  "read",
			  r->keep + 1, secs);
}

/* Both walks, then a decision per run. */
static int judge_runs(struct fat_check *ck)
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
		ck_report(ck->rec, FK_SEV_NOTE, "fat-copy-kept", NULL,
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

/*
 * Where the copies differ, keep per run the copy the directory tree
 * agrees with (or the one --fat-copy names), with a note for each, and
 * read the FAT as kept from here on.  *@is_patched: some sectors come
 * from the copy not read, so what the scan built from the read copy is
 * stale.  Returns 0 or -errno.
 */
static int judge_copies(struct fat_check *ck, int *is_patched)
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
		ck_report(ck->rec, FK_SEV_NOTE, "fat-copy-kept", NULL,
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

void ck_unpatch(struct fat_check *ck)
{
	if (ck->npatches)
		fk_cache_set_patches(ck->vol->fat, NULL, 0);
	ck->npatches = 0;
}

/* ---- FAT copies and the cluster map ------------------------------------ */

/* What the scan counts, in locals while a block is scanned: stores into
 * the map may alias any of *ck. */
struct scan_counts {
	uint32_t nfree, nused, first_free;
};

/* A value is free (0), bad (the bad mark: fk_fat_class() says no other
 * value is) or in use, which the map records as ALLOC. */
static inline unsigned is_used(uint32_t v, uint32_t bad)
{
	return (v != 0) & (v != bad);
}

/* The first free cluster of the @m entries @v from @clus, if any. */
static void note_free(const uint32_t *v, uint32_t m, uint32_t clus,
		      struct scan_counts *sc)
{
	uint32_t j;

	for (j = 0; j < m && !sc->first_free; j++)
		if (!v[j])
			sc->first_free = clus + j;
}

/*
 * SCAN_CHUNK entries from a cluster on a map byte's first bit, ORed into
 * their bytes @sec of the map's second plane (in use: ALLOC).  Loops of a
 * constant count with no branch, which the compiler turns into vector
 * code: most of a FAT is judged here.
 */
static void scan_chunk(const uint32_t *v, uint32_t clus, uint32_t bad,
		       uint8_t *sec, struct scan_counts *sc)
{
	uint8_t used[SCAN_CHUNK];
	uint32_t j, nfree = 0, nused = 0;

	for (j = 0; j < SCAN_CHUNK; j++) {
		used[j] = (uint8_t)is_used(v[j], bad);
		nfree += !v[j];
	}
	for (j = 0; j < SCAN_CHUNK; j++)
		nused += used[j];
	/* Eight flags of 0 or 1, byte i of a little-endian word, become bit
	 * i of its top byte by one multiply: no partial product carries. */
	for (j = 0; j < SCAN_CHUNK / 8; j++)
		sec[j] |= (uint8_t)(get_le64(used + 8 * j) *
					    0x0102040810204080u >>
				    56);
	sc->nused += nused;
	sc->nfree += nfree;
	if (nfree && !sc->first_free)
		note_free(v, SCAN_CHUNK, clus, sc);
}

/* The second-plane bits of @m entries from @clus, all in one map byte. */
static unsigned scan_some(const uint32_t *v, uint32_t m, uint32_t clus,
			  uint32_t bad, struct scan_counts *sc)
{
	unsigned bits = 0;
	uint32_t j;

	for (j = 0; j < m; j++) {
		sc->nused += is_used(v[j], bad);
		sc->nfree += !v[j];
		bits |= is_used(v[j], bad) << (clus + j - FK_FIRST_CLUS) % 8;
	}
	note_free(v, m, clus, sc);
	return bits;
}

static int scan_block(void *arg, uint32_t first, const uint32_t *vals,
		      uint32_t n)
{
	struct fat_check *ck = arg;
	const struct fk_geom *g = ck->g;
	uint8_t *sec = ck->map.second;
	uint32_t i = 0, bad = fk_fat_bad(g), m, head;
	struct scan_counts sc = {0, 0, ck->first_free};

	for (; i < n && first + i < FK_FIRST_CLUS; i++)
		if (first + i == 0)
			ck->fat0 = vals ? vals[i] : 0;
		else
			ck->fat1 = vals ? vals[i] : 0;
	if (!vals) { /* all free */
		if (i < n) {
			ck->st->free_clus += n - i;
			if (!ck->first_free)
				ck->first_free = first + i;
		}
		ck_progress(ck->rec, "FAT", (uint64_t)first + n,
			    fk_clus_max(g) + 1);
		return 0;
	}
	/* Chunks where they fit whole from a map byte's first bit, else a
	 * map byte at a time (a block's start and end). */
	for (head = i; i < n; i += m) {
		uint32_t clus = first + i, bit = (clus - FK_FIRST_CLUS) % 8;

		if (!bit && n - i >= SCAN_CHUNK) {
			m = SCAN_CHUNK;
			scan_chunk(vals + i, clus, bad, sec + fk_own_byte(clus),
				   &sc);
			continue;
		}
		m = 8 - bit < n - i ? 8 - bit : n - i;
		sec[fk_own_byte(clus)] |=
			(uint8_t)scan_some(vals + i, m, clus, bad, &sc);
	}
	ck->st->free_clus += sc.nfree;
	ck->st->used_clus += sc.nused;
	ck->st->bad_clus += n - head - sc.nfree - sc.nused;
	ck->first_free = sc.first_free;
	ck_progress(ck->rec, "FAT", (uint64_t)first + n, fk_clus_max(g) + 1);
	return 0;
}

static int scan_diff(void *arg, uint32_t copy, uint32_t sec)
{
	struct fat_check *ck = arg;

	if (!ck->diffs[copy].nsecs++)
		ck->diffs[copy].first = sec;
	return note_diff(ck, sec);
}

/*
 * A BPB media byte Linux refuses to mount (and mtools, below 0xF0, to
 * read), which fsck.fat does not look at: set from FAT[0]'s low byte,
 * which formatters write the same, when that is one Linux takes, else
 * 0xF8 (a fixed disk, what every card is formatted as).  *@media: the byte FAT[0] is then
 * judged against.
 */
static void check_media(struct fat_check *ck, uint8_t *media)
{
	unsigned low = ck->fat0 & 0xFF;
	size_t idx;

	if (fk_media_is_valid(*media))
		return;
	*media = fk_media_is_valid(low) ? (uint8_t)low : 0xF8;
	idx = ck_report(ck->rec, FK_SEV_ERROR, "media", NULL,
			"the boot sector's media byte 0x%02X is not one Linux "
			"mounts (0xF0, 0xF8 to 0xFF); FAT[0] is 0x%X",
			ck->g->media, ck->fat0);
	ck_set_fix(ck->rec, idx, "media byte set to 0x%02X", *media);
	ck->fix_media = *media;
}

/* FAT[0] holds the media byte under bits that are all ones, FAT[1] an
 * end-of-chain mark whose two top bits on FAT16/32 say "cleanly unmounted"
 * and "no disk errors".  fsck.fat takes a copy whose FAT[0] lacks those
 * ones for corrupt and mends it from a copy that has them (with none, the
 * layout judge refused the volume before this scan), but does not look at
 * a media byte that differs from the boot sector's, nor does any reader. */
static void check_reserved(struct fat_check *ck)
{
	struct fk_geom gm = *ck->g; /* with the media byte -r writes */
	const struct fk_geom *g = &gm;
	struct fk_fat_reserved r;
	size_t idx;

	check_media(ck, &gm.media);
	fk_fat_reserved_judge(g, ck->fat0, ck->fat1, &r);
	if (!r.is_fat0_ones) {
		idx = ck_report(
			ck->rec, FK_SEV_ERROR, "fat0", NULL,
			"FAT[0] of copy %u is 0x%X, without the mark fsck.fat "
			"looks for (every bit above the low 4 set, as in "
			"0x%X): it takes this copy for corrupt",
			g->active_fat + 1, ck->fat0, r.want0);
		ck_set_fix(ck->rec, idx, "FAT[0] set to 0x%X", r.want0);
		ck->fix_fat0 = 1;
	} else if (!r.is_fat0_media) {
		idx = ck_report(
			ck->rec, FK_SEV_WARNING, "media", NULL,
			"FAT[0] is 0x%X, expected 0x%X (the boot sector's "
			"media byte is 0x%02X)",
			ck->fat0, r.want0, g->media);
		ck_set_fix(ck->rec, idx, "FAT[0] set to 0x%X", r.want0);
		ck->fix_fat0 = 1;
	}
	if (!r.is_clean) {
		/* A warning, as the boot sector's flag above. */
		idx = ck_report(ck->rec, FK_SEV_WARNING, "dirty", NULL,
				"the volume was not cleanly removed "
				"(clean-shutdown bit of FAT[1] is clear)");
		ck_set_fix(ck->rec, idx, "FAT[1] set to 0x%X", r.want1);
		ck->fix_fat1 = 1;
	}
	if (!r.is_noerr) {
		idx = ck_report(
			ck->rec, FK_SEV_WARNING, "disk-error", NULL,
			"FAT[1] records a disk I/O error (its hard-error "
			"bit is clear)");
		ck_set_fix(ck->rec, idx, "FAT[1] set to 0x%X", r.want1);
		ck->fix_fat1 = 1;
	}
	if (!r.is_fat1_eoc) {
		idx = ck_report(ck->rec, FK_SEV_WARNING, "reserved-entry", NULL,
				"FAT[1] is 0x%X, not an end-of-chain mark",
				ck->fat1);
		ck_set_fix(ck->rec, idx, "FAT[1] set to 0x%X", r.want1);
		ck->fix_fat1 = 1;
	}
}

/* The map, counts and reserved entries again, from the FAT as kept where
 * the copies differ (the first scan read one copy whole). */
static int rescan(struct fat_check *ck)
{
	const struct fk_geom *g = ck->g;

	fk_own_clear(&ck->map);
	ck->st->free_clus = ck->st->used_clus = ck->st->bad_clus = 0;
	ck->first_free = 0;
	return fk_fat_scan(ck->vol, g->active_fat, scan_block, ck);
}

/* What the repair does about the differing sectors: which copy is
 * rewritten from which, in how many sectors. */
static void set_copies_fix(struct fat_check *ck, size_t idx)
{
	uint32_t a = ck->g->active_fat, nsecs[2] = {0, 0};
	size_t i;

	for (i = 0; i < ck->copy_runs.n; i++)
		nsecs[ck->copy_runs.v[i].keep == a] += ck->copy_runs.v[i].nsecs;
	if (!nsecs[0])
		ck_set_fix(ck->rec, idx, "copy %u rewritten from copy %u",
			   !a + 1, a + 1);
	else if (!nsecs[1])
		ck_set_fix(ck->rec, idx, "copy %u rewritten from copy %u",
			   a + 1, !a + 1);
	else
		ck_set_fix(ck->rec, idx,
			   "copy %u rewritten from copy %u in %u sector%s, "
			   "copy %u from copy %u in %u",
			   a + 1, !a + 1, nsecs[0], ck_plural(nsecs[0]), !a + 1,
			   a + 1, nsecs[1]);
}

int ck_scan_fats(struct fat_check *ck)
{
	const struct fk_geom *g = ck->g;
	uint32_t c;
	size_t idx;
	int err, is_patched;

	err = fk_fat_scan_copies(ck->vol, g->active_fat, scan_block,
				 g->is_mirrored ? scan_diff : NULL, ck);
	if (err)
		return err;
	for (c = 0; c < g->nfats; c++) {
		if (!ck->diffs[c].nsecs)
			continue;
		idx = ck_report(
			ck->rec, FK_SEV_ERROR, "fat-copies", NULL,
			"FAT copy %u differs from copy %u in %u sector%s, "
			"the first at sector %u of the copy",
			c + 1, g->active_fat + 1, ck->diffs[c].nsecs,
			ck_plural(ck->diffs[c].nsecs), ck->diffs[c].first);
		if ((err = judge_copies(ck, &is_patched)) ||
		    (is_patched && (err = rescan(ck))))
			return err;
		set_copies_fix(ck, idx);
		ck->fix_copies = 1;
	}
	check_reserved(ck);
	return 0;
}

/* ---- FSInfo -------------------------------------------------------------- */

int ck_check_fsinfo(struct fat_check *ck)
{
	struct fk_fsinfo *fsi = &ck->fsi;
	size_t idx;
	int err;

	if ((err = fk_fsinfo_read(ck->vol, fsi)) || !fsi->is_present)
		return err;
	if (!fsi->is_lead_ok || !fsi->is_struc_ok || !fsi->is_trail_ok) {
		idx = ck_report(ck->rec, FK_SEV_ERROR, "fsinfo", NULL,
				"FSInfo sector %u has bad signatures (%s%s%s)",
				ck->g->fsinfo_sec,
				fsi->is_lead_ok ? "" : " lead",
				fsi->is_struc_ok ? "" : " struct",
				fsi->is_trail_ok ? "" : " trail");
		ck_set_fix(ck->rec, idx, "FSInfo rewritten");
		ck->fix_fsinfo = 1;
		return 0; /* its counts mean nothing then */
	}
	if (fsi->free_count == FK_FSINFO_UNKNOWN) {
		idx = ck_report(ck->rec, FK_SEV_NOTE, "fsinfo-unset", NULL,
				"FSInfo free count is not set; the FAT has %u "
				"free clusters",
				ck->st->free_clus);
		ck_set_fix(ck->rec, idx, "FSInfo free count set");
		ck->fix_fsinfo = 1;
	} else if (fsi->free_count != ck->st->free_clus) {
		idx = ck_report(ck->rec, FK_SEV_ERROR, "fsinfo", NULL,
				"FSInfo free count is %u; the FAT has %u free "
				"clusters",
				fsi->free_count, ck->st->free_clus);
		ck_set_fix(ck->rec, idx, "FSInfo free count set");
		ck->fix_fsinfo = 1;
	}
	if (!ck_fsinfo_hint_ok(ck, fsi->next_free)) {
		idx = ck_report(ck->rec, FK_SEV_WARNING, "fsinfo-hint", NULL,
				"FSInfo next-free hint %u is not a cluster of "
				"the volume (2 to %u)",
				fsi->next_free, fk_clus_max(ck->g));
		ck_set_fix(ck->rec, idx, "FSInfo next-free hint set");
		ck->fix_fsinfo = 1;
	}
	return 0;
}
