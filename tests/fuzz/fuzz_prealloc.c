/*
 * fuzz_prealloc.c: `fatprealloc -p IMAGE /A/B/f1.bin 100K "/LONG NAME
 * ...txt" 3-clusters`, judged by the checker.  A writer never makes a
 * volume worse: after the run the volume has no kind of error (finding
 * code of error severity) that it did not have before, except where old
 * damage pointed into free space, and a refusal wrote nothing.
 * Violations abort() after printing both lists.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "device.h"
#include "diag.h"
#include "image.h"
#include "prealloc.h"
#include "volume.h"

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
	struct fk_diag diag = {{0}, {0}};
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
	struct fk_volume *vol;
	const char *code;
	int is_written;

	fuzz_image(data, len);
	if (fuzz_open(0, &vol))
		return 0;
	if (vol->g.nclus <= FUZZ_CHECK_MAX_CLUS)
		before = fuzz_check(vol, NULL);
	fk_volume_close(vol);
	if (fuzz_open(1, &vol))
		fail(before, NULL, "the volume opens for reading only");
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
	return 0;
}
