/*
 * fuzz_repair.c: `fatcheck -r --trim-prealloc` (and `--salvage` when the
 * input's last byte is odd), then a second check.  The
 * repair must converge: what one run leaves, a second run finds nothing
 * to repair in (no finding with a planned fix).  A repair must not leave
 * a volume the checker can no longer check either.  Violations abort()
 * after printing both lists of findings.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "image.h"
#include "volume.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct fk_check_opts co;
	struct fk_volume *vol;
	struct fk_check *ck, *after;
	int err;

	fuzz_image(data, len);
	if (fuzz_open(1, &vol))
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
	if (fuzz_open(0, &vol)) {
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
	if (fk_check_stats(after)->has_repairs) {
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
