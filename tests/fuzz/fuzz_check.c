/*
 * fuzz_check.c: the read-only checker, as `fatcheck -v` runs it.  The
 * oracles are the sanitizers, -timeout and -rss_limit_mb, and one of the
 * checker's own promises: every finding has a code, a message and a
 * severity, and the counts agree with the list.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/check.h"
#include "fat/dir.h"
#include "image.h"
#include "volume/volume.h"

static void on_progress(void *arg, const char *phase, uint64_t done,
			uint64_t total)
{
	(void)arg;
	(void)phase;
	(void)done;
	(void)total;
}

static void on_visit(void *arg, const char *path, const struct fk_dirent *ent,
		     uint32_t nclus)
{
	(void)nclus;
	if (!path || !ent)
		abort();
	++*(uint32_t *)arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const struct fk_check_stats *st;
	const struct fk_finding *f;
	struct fk_check_opts co;
	struct fk_volume *vol;
	struct fk_check *ck;
	uint32_t visits = 0, kept[3] = {0};
	size_t i, n;

	fuzz_image(data, len);
	if (fuzz_open_check(0, &vol))
		return 0;
	if (vol->g.nclus > FUZZ_CHECK_MAX_CLUS) {
		fk_volume_close(vol);
		return -1; /* not worth keeping in the corpus */
	}
	memset(&co, 0, sizeof(co));
	co.progress = on_progress;
	co.visit = on_visit;
	co.arg = &visits;
	if ((ck = fuzz_check(vol, &co))) {
		st = fk_check_stats(ck);
		f = fk_check_findings(ck, &n);
		for (i = 0; i < n; i++) {
			if (!f[i].code || !f[i].msg || f[i].is_fixed ||
			    (unsigned)f[i].sev > FK_SEV_ERROR)
				abort();
			kept[f[i].sev]++;
		}
		/* Found = listed + unlisted, per severity summed. */
		if (st->errors + st->warnings + st->notes != n + st->unlisted ||
		    kept[FK_SEV_ERROR] > st->errors)
			abort();
		fk_check_free(ck);
	}
	fk_volume_close(vol);
	return 0;
}
