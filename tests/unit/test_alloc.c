/*
 * test_alloc.c: the allocator's policy on a FAT16 volume in a temporary
 * image whose free space is three islands: 3 clusters at 100, 5 at 200 and
 * the last 12 of the volume (4990..5001).  Each row plans a request and is
 * judged against that map, written out here by hand: which runs, in what
 * order, the refusal text, that a refusal or an unplan takes nothing, and
 * what a cut keeps.
 */
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpb.h"
#include "io/cache.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "lib/testing.h"
#include "mount/mount.h"
#include "table/alloc.h"
#include "table/fat.h"
#include "volume/volume.h"

#define NCLUS	5000u /* clusters 2..5001 */
#define SEC_LEN 512u

struct island {
	uint32_t first, n;
};

static const struct island islands[] = {{100, 3}, {200, 5}, {4990, 12}};

/* The FAT16 image: every cluster used (end of chain) but the islands. */
static int make_volume(char *path, size_t len, struct fk_volume **vol)
{
	struct fk_volume_opts opts;
	struct fk_diag diag = {0};
	unsigned char bs[SEC_LEN] = {0};
	const char *dir = getenv("TMPDIR");
	struct test_bpb b;
	uint32_t prev = FK_FIRST_CLUS;
	size_t i;
	int fd, err;

	snprintf(path, len, "%s/fk-alloc-XXXXXX", dir && *dir ? dir : "/tmp");
	if ((fd = mkstemp(path)) < 0)
		return -errno;
	test_bpb_layout(&b, 0, SEC_LEN, 1, NCLUS, 16);
	test_bpb_write(&b, bs);
	err = ftruncate(fd, (off_t)(test_bpb_total(&b) * SEC_LEN)) ||
			      pwrite(fd, bs, SEC_LEN, 0) != SEC_LEN
		      ? -EIO
		      : 0;
	close(fd);
	memset(&opts, 0, sizeof(opts));
	opts.dev.path = path;
	opts.dev.is_writer = 1;
	opts.batch_len = 1 << 20;
	if (err || (err = fk_volume_open(&opts, vol, &diag)))
		return err;
	for (i = 0; i <= sizeof(islands) / sizeof(islands[0]) && !err; i++) {
		uint32_t end = i < sizeof(islands) / sizeof(islands[0])
				       ? islands[i].first
				       : NCLUS + 2;

		err = fk_fat_fill(*vol, prev, end - prev, 0xffff);
		if (i < sizeof(islands) / sizeof(islands[0]))
			prev = islands[i].first + islands[i].n;
	}
	if (!err)
		err = fk_cache_flush((*vol)->fat);
	return err;
}

/* @p holds exactly the runs @want (first, n pairs), in order. */
static int plan_is(const struct fk_plan *p, const uint32_t *want, size_t n)
{
	uint32_t total = 0;
	size_t i;

	if (p->nruns != n)
		return 0;
	for (i = 0; i < n; i++) {
		if (p->runs[i].first != want[2 * i] ||
		    p->runs[i].nclus != want[2 * i + 1])
			return 0;
		total += want[2 * i + 1];
	}
	return p->nclus == total;
}

static void rows(struct fk_alloc *a)
{
	struct fk_plan p = {NULL, 0, 0, 0};
	struct fk_diag d;
	int err;

	memset(&d, 0, sizeof(d));
	err = fk_alloc_plan(a, 0, 21, 0, &p, &d);
	OK(err == -ENOSPC && !strcmp(d.reason, "(need 21 clusters, 20 free") &&
		   p.nruns == 0 && fk_alloc_nfree(a) == 20,
	   "alloc: one more than free is refused with need and free (%s)",
	   d.reason);

	memset(&d, 0, sizeof(d));
	err = fk_alloc_plan(a, 0, 13, FK_ALLOC_CONTIG, &p, &d);
	OK(err == -ENOSPC &&
		   !strcmp(d.reason, "(no contiguous run of 13 clusters, "
				     "longest free run is 12") &&
		   fk_alloc_nfree(a) == 20,
	   "alloc: -c longer than the longest run names that run (%s)",
	   d.reason);

	/* In place up to the volume's end, the rest from the first fit. */
	err = fk_alloc_plan(a, 4989, 15, 0, &p, NULL);
	{
		static const uint32_t want[] = {4990, 12, 100, 3};

		OK(!err && plan_is(&p, want, 2) && fk_alloc_nfree(a) == 5,
		   "alloc: a chain ending at 4989 grows in place to the end, "
		   "then takes the first fit");
	}
	fk_alloc_unplan(a, &p);
	fk_plan_free(&p);
	OK(fk_alloc_nfree(a) == 20, "alloc: unplan gives every cluster back");

	/* -c does not grow in place into a run too short for it. */
	err = fk_alloc_plan(a, 99, 4, FK_ALLOC_CONTIG, &p, NULL);
	{
		static const uint32_t want[] = {200, 4};

		OK(!err && plan_is(&p, want, 1),
		   "alloc: -c skips a 3-cluster run after the tail for the "
		   "first 4-cluster one");
	}
	fk_alloc_unplan(a, &p);
	fk_plan_free(&p);

	/* No run fits 16: the fewest large runs (5 + 11), never the 3. */
	err = fk_alloc_plan(a, 0, 16, 0, &p, NULL);
	{
		static const uint32_t want[] = {200, 5, 4990, 11};

		OK(!err && plan_is(&p, want, 2) && fk_alloc_nfree(a) == 4,
		   "alloc: 16 clusters come from the 5 and the 12, not the 3");
	}
	OK(fk_alloc_next_free(a) == 5001,
	   "alloc: the next-free hint follows the last cluster planned (%u)",
	   fk_alloc_next_free(a));

	/* A stop after 7 of those 16: 200-204 and 4990-4991 stay. */
	fk_alloc_cut(a, &p, 7);
	{
		static const uint32_t want[] = {200, 5, 4990, 2};

		OK(plan_is(&p, want, 2) && p.nclus == 7 &&
			   fk_alloc_nfree(a) == 13 &&
			   fk_alloc_next_free(a) == 4992,
		   "alloc: a cut keeps the first clusters, in chain order, "
		   "and the next search starts at the first given back (%u)",
		   fk_alloc_next_free(a));
	}
	fk_alloc_cut(a, &p, 5); /* at a run's end: the next run goes whole */
	{
		static const uint32_t want[] = {200, 5};

		OK(plan_is(&p, want, 1) && fk_alloc_nfree(a) == 15 &&
			   fk_alloc_next_free(a) == 4990,
		   "alloc: a cut at the end of a run drops the runs after it");
		fk_alloc_cut(a, &p, 9); /* more than the plan has */
		OK(plan_is(&p, want, 1) && fk_alloc_nfree(a) == 15,
		   "alloc: a cut past the plan's end keeps it whole");
	}
	fk_alloc_cut(a, &p, 0);
	OK(p.nruns == 0 && p.nclus == 0 && fk_alloc_nfree(a) == 20 &&
		   fk_alloc_next_free(a) == 200,
	   "alloc: a cut to nothing gives every cluster back");
	fk_plan_free(&p);
	fk_plan_free(&p); /* an emptied plan may be freed again */
}

/*
 * --align over a map with free runs 10-13, 16-17 and 20-39 (nclus 40):
 * aligned clusters are 4 + 8k, so the aligned free runs start at 12 (2
 * long), 20 (20), 28 and 36.
 */
static void aligned_rows(void)
{
	uint64_t map[1] = {0};
	struct fk_alloc *a;
	struct fk_plan p = {NULL, 0, 0, 0};
	struct fk_diag d;
	uint32_t c;
	int err;

	for (c = 10; c < 14; c++)
		map[0] |= (uint64_t)1 << c;
	map[0] |= (uint64_t)3 << 16;
	for (c = 20; c < 40; c++)
		map[0] |= (uint64_t)1 << c;
	if (fk_alloc_from_map(map, 40, 2, &a)) {
		OK(0, "align: set up the map");
		return;
	}
	memset(&d, 0, sizeof(d));
	err = fk_alloc_plan_aligned(a, 21, 4, 8, FK_ALLOC_CONTIG, &p, &d);
	OK(err == -ENOSPC && p.nruns == 0 && fk_alloc_nfree(a) == 26 &&
		   !strcmp(d.reason, "(no free run of 21 clusters starts at "
				     "an aligned cluster; the longest that "
				     "does is 20"),
	   "align: -c with no aligned run long enough takes nothing (%s; "
	   "%u free)",
	   d.reason, fk_alloc_nfree(a));
	err = fk_alloc_plan_aligned(a, 6, 4, 8, FK_ALLOC_CONTIG, &p, &d);
	OK(!err && plan_is(&p, (const uint32_t[]){20, 6}, 1),
	   "align: the first aligned run long enough (20, not 12)");
	fk_plan_free(&p);
	err = fk_alloc_plan_aligned(a, 3, 4, 8, 0, &p, &d);
	OK(!err && plan_is(&p, (const uint32_t[]){28, 3}, 1),
	   "align: the chain starts at an aligned cluster (%u)",
	   p.nruns ? p.runs[0].first : 0);
	fk_plan_free(&p);
	err = fk_alloc_plan_aligned(a, 12, 4, 8, 0, &p, &d);
	OK(!err && p.nclus == 12 && p.runs[0].first % 8 == 4 && p.nruns > 1,
	   "align: without -c the longest aligned run starts the chain, the "
	   "rest follows anywhere (%zu runs)",
	   p.nruns);
	fk_plan_free(&p);
	fk_alloc_close(a);
}

void suite_alloc(void)
{
	struct fk_volume *vol = NULL;
	struct fk_alloc *a = NULL;
	char path[4096];
	int err;

	if ((err = make_volume(path, sizeof(path), &vol)) ||
	    (err = fk_alloc_open(vol, &a))) {
		OK(0, "alloc: set up the volume (%d)", err);
	} else {
		OK(fk_alloc_nfree(a) == 20,
		   "alloc: the free map counts the three islands (%u)",
		   fk_alloc_nfree(a));
		rows(a);
	}
	aligned_rows();
	fk_alloc_close(a);
	fk_alloc_close(NULL);
	fk_volume_close(vol);
	unlink(path);
}
