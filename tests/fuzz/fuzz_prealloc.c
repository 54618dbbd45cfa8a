/*
 * fuzz_prealloc.c: `fatprealloc -p IMAGE /A/B/f1.bin 100K "/LONG NAME
 * ...txt" 3-clusters`, judged by the checker.  A writer never makes a
 * volume worse: after the run the volume has no kind of error (finding
 * code of error severity) that it did not have before, except where old
 * damage pointed into free space (a FAT chain into a free entry; on exFAT
 * also a cluster in use that the allocation bitmap marks free), and a
 * refusal wrote nothing.
 * Violations abort() after printing both lists.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/check.h"
#include "engine/prealloc.h"
#include "exfat/exfat.h"
#include "fat/dir.h"
#include "image.h"
#include "io/device.h"
#include "lib/diag.h"
#include "volume/volume.h"

#define LONG_NAME "/LONG NAME with many characters.txt"

/* Does @ck hold an error with @code? */
static int has_error(const struct fk_check *ck, const char *code)
{
	const struct fk_finding *f;
	size_t i, n;

	f = fk_check_findings(ck, &n);
	for (i = 0; i < n; i++)
		if (f[i].sev == FK_SEV_ERROR && !strcmp(f[i].code, code))
			return 1;
	return 0;
}

/* Is @path @top or inside it? */
static int is_under(const char *path, const char *top)
{
	size_t n = strlen(top);

	return !strncmp(path, top, n) && (!path[n] || path[n] == '/');
}

/* Does @msg name @path as a whole (a cross-link's other owner)? */
static int names(const char *msg, const char *path)
{
	size_t n = strlen(path);
	const char *p;

	for (p = strstr(msg, path); p; p = strstr(p + 1, path))
		if (p > msg && p[-1] == ' ' && (!p[n] || p[n] == ' '))
			return 1;
	return 0;
}

/* Did @path's chain run into a free cluster in @before? */
static int ran_free(const struct fk_check *before, const char *path)
{
	const struct fk_finding *b;
	size_t i, n;

	b = fk_check_findings(before, &n);
	for (i = 0; i < n; i++)
		if (!strcmp(b[i].code, "bad-link") && b[i].path &&
		    strstr(b[i].msg, " free") && is_under(path, b[i].path))
			return 1;
	return 0;
}

/* Does cross-link finding @f name an owner that ran_free() in @before? */
static int shares_with_old(const struct fk_check *before,
			   const struct fk_finding *f)
{
	const struct fk_finding *b;
	size_t i, n;

	if (strcmp(f->code, "cross-link"))
		return 0;
	b = fk_check_findings(before, &n);
	for (i = 0; i < n; i++)
		if (!strcmp(b[i].code, "bad-link") && b[i].path &&
		    strstr(b[i].msg, " free") && names(f->msg, b[i].path))
			return 1;
	return 0;
}

/*
 * exFAT's own old damage of the same kind: a cluster some entry owns but
 * the allocation bitmap marks free ("bitmap-free").  The writer takes its
 * free space from the bitmap and may allocate that cluster.  The check of
 * the input records every entry it visits; when it found "bitmap-free",
 * each entry's clusters (as many as the checker claimed for it) are
 * looked up in the bitmap, and the entries owning a cluster marked free,
 * and those clusters, are what the writer could not know about.  Excused
 * after the run: findings on such an entry (or inside it, a directory), a
 * cross-link at one of those clusters and the other findings on the file
 * cross-linked there, and "lost" when there is such a cross-link (the
 * checker cuts a cross-linked file; the rest of its clusters are lost).
 * Clusters marked free that nothing owned excuse nothing, nor does the
 * root, the bitmap or the up-case table marked free: the writer reads
 * those and can know.
 */
struct owner {
	char *path;
	struct fk_exfat_stream s;
	uint32_t nclus; /* claimed by the checker */
	int is_hit;	/* owns a cluster the bitmap marks free */
};

static struct owner *owners;
static size_t nowners, cap_owners;
static uint8_t *marked_free; /* owned but marked free, one bit a cluster */
static uint32_t nmarked;     /* clusters the bits cover */

static void on_visit(void *arg, const char *path, const struct fk_dirent *ent,
		     uint32_t nclus)
{
	struct owner *o;

	(void)arg;
	if (nowners == cap_owners) {
		cap_owners = cap_owners ? 2 * cap_owners : 64;
		if (!(owners = realloc(owners, cap_owners * sizeof(*owners))))
			abort();
	}
	o = &owners[nowners];
	if (!(o->path = strdup(path)))
		abort();
	o->s.first_clus = ent->first_clus;
	o->s.data_len = ent->size;
	o->s.is_no_fat_chain = ent->is_no_fat_chain;
	o->nclus = nclus;
	o->is_hit = 0;
	nowners++;
}

static void owners_free(void)
{
	size_t i;

	for (i = 0; i < nowners; i++)
		free(owners[i].path);
	free(owners);
	owners = NULL;
	nowners = cap_owners = 0;
	free(marked_free);
	marked_free = NULL;
	nmarked = 0;
}

struct hit_walk {
	const struct fk_exfat_bitmap *bm;
	struct owner *o;
	uint32_t left; /* clusters the checker claimed, still to look at */
};

static int hit_run(void *arg, const struct fk_run *run)
{
	struct hit_walk *w = arg;
	uint32_t c, i;

	for (i = 0; i < run->nclus && w->left; i++, w->left--) {
		c = run->first + i;
		if (c - 2 < nmarked && !fk_exfat_bitmap_test(w->bm, c)) {
			marked_free[(c - 2) / 8] |= 1u << (c - 2) % 8;
			w->o->is_hit = 1;
		}
	}
	return w->left ? 0 : 1;
}

/* Find the owners of clusters marked free, after the input's check. */
static void find_marked_free(struct fk_volume *vol,
			     const struct fk_check *before)
{
	struct fk_exfat_bitmap bm;
	struct fk_chain_info info;
	struct hit_walk w;
	size_t i;

	if (!before || !fk_exfat_of(vol) || !has_error(before, "bitmap-free") ||
	    fk_exfat_bitmap_load_active(vol, &bm, NULL))
		return;
	nmarked = vol->g.nclus;
	if (!(marked_free = calloc(nmarked / 8 + 1, 1)))
		abort();
	for (i = 0; i < nowners; i++) {
		w.bm = &bm;
		w.o = &owners[i];
		w.left = owners[i].nclus;
		if (w.left && owners[i].s.first_clus)
			fk_exfat_stream_walk(vol, &owners[i].s, hit_run, &w,
					     &info);
	}
	fk_exfat_bitmap_free(&bm);
}

/* Was cluster @c owned but marked free in the input? */
static int was_marked_free(uint32_t c)
{
	return c - 2 < nmarked && marked_free[(c - 2) / 8] >> (c - 2) % 8 & 1;
}

/* Is @f a cross-link at a cluster that was owned but marked free? */
static int shares_marked_free(const struct fk_finding *f)
{
	const char *p;
	unsigned long c;

	if (strcmp(f->code, "cross-link") || !marked_free ||
	    !(p = strstr(f->msg, "shares cluster ")))
		return 0;
	c = strtoul(p + strlen("shares cluster "), NULL, 10);
	return c <= UINT32_MAX && was_marked_free((uint32_t)c);
}

/*
 * Is @f (of @after) about an entry that owned a cluster marked free, or
 * about a file that now shares such a cluster, or the lost clusters the
 * checker leaves when it cuts a file at such a cluster?
 */
static int is_old_bitmap_damage(const struct fk_check *after,
				const struct fk_finding *f)
{
	const struct fk_finding *g;
	size_t i, n;

	if (!marked_free)
		return 0;
	g = fk_check_findings(after, &n);
	if (!f->path) {
		if (strcmp(f->code, "lost"))
			return 0;
		for (i = 0; i < n; i++)
			if (shares_marked_free(&g[i]))
				return 1;
		return 0;
	}
	if (shares_marked_free(f))
		return 1;
	for (i = 0; i < nowners; i++)
		if (owners[i].is_hit && is_under(f->path, owners[i].path))
			return 1;
	for (i = 0; i < n; i++)
		if (g[i].path && !strcmp(g[i].path, f->path) &&
		    shares_marked_free(&g[i]))
			return 1;
	return 0;
}

/*
 * Is @f (of @after) about an entry whose chain ran into a free cluster in
 * @before, or about a file that now shares clusters with one?  The writer
 * allocates free clusters; it cannot know that a damaged entry somewhere
 * points at one without checking the whole volume, so what follows (the
 * entry shares the new file's clusters, and the checker cuts one of them
 * short; a directory reads the new file's zeros) is the old damage.
 */
static int is_old_damage(const struct fk_check *before,
			 const struct fk_check *after,
			 const struct fk_finding *f)
{
	const struct fk_finding *g;
	size_t i, n;

	if (is_old_bitmap_damage(after, f))
		return 1;
	if (!f->path)
		return 0;
	if (ran_free(before, f->path) || shares_with_old(before, f))
		return 1;
	g = fk_check_findings(after, &n);
	for (i = 0; i < n; i++)
		if (g[i].path && !strcmp(g[i].path, f->path) &&
		    shares_with_old(before, &g[i]))
			return 1;
	return 0;
}

/* The first new error of @after that is not old damage, or NULL. */
static const char *new_error(const struct fk_check *before,
			     const struct fk_check *after)
{
	const struct fk_finding *f;
	size_t i, n;

	f = fk_check_findings(after, &n);
	for (i = 0; i < n; i++)
		if (f[i].sev == FK_SEV_ERROR && !has_error(before, f[i].code) &&
		    !is_old_damage(before, after, &f[i]))
			return f[i].code;
	return NULL;
}

static void fail(const struct fk_check *before, const struct fk_check *after,
		 const char *why)
{
	if (before)
		fuzz_print_findings("before", before);
	if (after)
		fuzz_print_findings("after", after);
	fprintf(stderr, "fuzz: %s\n", why);
	abort();
}

/* Run the two requests; 1 when the run wrote anything. */
static int run_prealloc(struct fk_volume *vol, const struct fk_check *before)
{
	struct fk_prealloc_req reqs[2] = {
		{"/A/B/f1.bin", 100 * 1024},
		{LONG_NAME, 3ull * vol->g.clus_len},
	};
	const struct fk_io_stats *io;
	struct fk_prealloc_result res;
	struct fk_prealloc_opts po;
	struct fk_diag diag = {0};
	int err;

	memset(&po, 0, sizeof(po));
	po.parents = 1;
	po.sync = FK_SYNC_NEVER;
	po.now = 1700000000;
	po.now_is_utc = 1;
	err = fk_prealloc(vol, reqs, 2, &po, &res, &diag);
	fk_prealloc_result_free(&res);
	io = fk_device_stats(vol->dev);
	if (err && (io->write_calls || io->zero_calls)) {
		fprintf(stderr, "fuzz: refused (%d: %s: %s) after writing\n",
			err, diag.what, diag.reason);
		fail(before, NULL, "a refusal wrote to the image");
	}
	return !err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct fk_check *before = NULL, *after;
	struct fk_check_opts co;
	struct fk_volume *vol;
	const char *code;
	int is_written, is_cut;

	fuzz_image(data, len);
	if (fuzz_open(0, &vol))
		return 0;
	/* A truncated dump is read as far as it goes; writers refuse it. */
	is_cut = vol->present_len != 0;
	memset(&co, 0, sizeof(co));
	co.visit = fk_exfat_of(vol) ? on_visit : NULL;
	if (vol->g.nclus <= FUZZ_CHECK_MAX_CLUS)
		before = fuzz_check(vol, &co);
	find_marked_free(vol, before);
	fk_volume_close(vol);
	if (fuzz_open(1, &vol)) {
		if (!is_cut)
			fail(before, NULL, "the volume opens for reading only");
		goto out;
	}
	is_written = run_prealloc(vol, before);
	fk_volume_close(vol);
	/* Without a whole verdict on the input there is nothing to compare
	 * (a kind may hide among findings that were counted, not kept). */
	if (!before || !is_written || fk_check_stats(before)->unlisted)
		goto out;
	if (fuzz_open(0, &vol))
		fail(before, NULL, "the volume no longer opens");
	if (!(after = fuzz_check(vol, NULL)))
		fail(before, NULL, "the volume can no longer be checked");
	if ((code = new_error(before, after))) {
		fprintf(stderr, "fuzz: new kind of error: %s\n", code);
		fail(before, after, "the writer made the volume worse");
	}
	fk_check_free(after);
	fk_volume_close(vol);
out:
	fk_check_free(before);
	owners_free();
	return 0;
}
