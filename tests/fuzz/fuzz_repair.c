/*
 * fuzz_repair.c: `fatcheck -r --trim-prealloc` (and `--salvage` when the
 * input's last byte is odd), then a second check.  The
 * repair must converge: what one run leaves, a second run finds nothing
 * to repair in (no finding with a planned fix).  One exception, by
 * design: on exFAT a run that keeps lost clusters because the tree held
 * what it could not attribute (finding "lost-kept") may have repaired
 * that very thing, and the next run then frees them ("lost", and the
 * PercentInUse that follows).  A repair must not leave a volume the
 * checker can no longer check either.  Violations abort() after printing
 * both lists of findings.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "image.h"
#include "volume.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static int has_code(const struct fk_check *ck, const char *code)
{
	const struct fk_finding *f;
	size_t i, n;

	f = fk_check_findings(ck, &n);
	for (i = 0; i < n; i++)
		if (!strcmp(f[i].code, code))
			return 1;
	return 0;
}

/* Does @after plan a repair that @before's kept clusters do not explain? */
static int is_unconverged(const struct fk_check *before,
			  const struct fk_check *after)
{
	const struct fk_finding *f;
	size_t i, n;

	if (!fk_check_stats(after)->has_repairs)
		return 0;
	if (!has_code(before, "lost-kept"))
		return 1;
	f = fk_check_findings(after, &n);
	for (i = 0; i < n; i++)
		if (f[i].fix && strcmp(f[i].code, "lost") &&
		    strcmp(f[i].code, "percent-in-use"))
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct fk_check_opts co;
	struct fk_volume *vol;
	struct fk_check *ck, *after;
	int err;

	fuzz_image(data, len);
	if (fuzz_open_check(1, &vol))
		return 0;
	if (vol->g.nclus > FUZZ_CHECK_MAX_CLUS) {
		fk_volume_close(vol);
		return -1; /* not worth keeping in the corpus */
	}
	memset(&co, 0, sizeof(co));
	co.trim_prealloc = 1;
	co.salvage = len && (data[len - 1] & 1);
	if (!(ck = fuzz_check(vol, &co)))
		goto out_close;
	if (!fk_check_stats(ck)->has_repairs ||
	    (err = fk_check_repair(ck, NULL)))
		goto out_free; /* nothing to do, or refused: not our case */
	fk_volume_close(vol);
	if (fuzz_open_check(0, &vol)) {
		fuzz_print_findings("first check", ck);
		fprintf(stderr, "fuzz: the repaired volume does not open\n");
		abort();
	}
	if (!(after = fuzz_check(vol, &co))) {
		fuzz_print_findings("first check", ck);
		fprintf(stderr,
			"fuzz: the repaired volume cannot be checked\n");
		abort();
	}
	if (is_unconverged(ck, after)) {
		fuzz_print_findings("first check", ck);
		fuzz_print_findings("second check", after);
		fprintf(stderr, "fuzz: repair did not converge\n");
		abort();
	}
	fk_check_free(after);
out_free:
	fk_check_free(ck);
out_close:
	fk_volume_close(vol);
	return 0;
}
