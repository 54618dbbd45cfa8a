/*
 * test_alloc_policy.c: the allocation policy on free maps written out by
 * hand, without a FAT.  Each row gives the free space as a string (one
 * character per cluster from cluster 2: '.' free, '#' used), the FSInfo
 * next-free hint, the chain's tail and the request, and the runs the
 * policy must choose, worked out by hand from its rules:
 *   1. a chain grows in place while the clusters after its tail are free
 *      (in part, unless the request must be contiguous);
 *   2. else the first free run long enough, from the hint on, wrapping
 *      (next fit);
 *   3. else, unless contiguous, the fewest runs: long runs first, taken in
 *      address order from cluster 2.
 * Every plan is also checked against the map itself: each cluster taken
 * was free and taken once, the counts add up, and giving the plan back
 * restores the free count.
 */
#include "tap.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bigmem.h"
#include "lib/diag.h"
#include "lib/testing.h"
#include "table/alloc.h"
#include "table/fsinfo.h"

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))
#define MAX_CLUS 256

/* Bit c set for each '.' of @free, which starts at cluster 2. */
static uint64_t *map_of(const char *free, uint64_t *map)
{
	size_t i;

	memset(map, 0, (MAX_CLUS + 64) / 8);
	for (i = 0; free[i]; i++)
		if (free[i] == '.')
			map[(i + 2) / 64] |= (uint64_t)1 << (i + 2) % 64;
	return map;
}

/* "first+n,first+n" for the runs of @p. */
static void runs_str(const struct fk_plan *p, char *buf, size_t len)
{
	size_t i, at = 0;

	buf[0] = '\0';
	for (i = 0; i < p->nruns && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%u+%u",
				       i ? "," : "", p->runs[i].first,
				       p->runs[i].nclus);
}

/*
 * Problems with @p judged against the map string alone: a cluster taken
 * that was not free, or taken twice, or a count that does not add up.
 */
static int plan_faults(const char *free, const struct fk_plan *p)
{
	char seen[MAX_CLUS] = {0};
	uint32_t sum = 0, c;
	size_t i, nclus = strlen(free);
	int faults = 0;

	for (i = 0; i < p->nruns; i++) {
		for (c = p->runs[i].first;
		     c < p->runs[i].first + p->runs[i].nclus; c++) {
			if (c < 2 || c - 2 >= nclus || free[c - 2] != '.' ||
			    seen[c]++)
				faults++;
		}
		sum += p->runs[i].nclus;
	}
	return faults + (sum != p->nclus);
}

static uint32_t count_free(const char *free)
{
	uint32_t n = 0;

	for (; *free; free++)
		n += *free == '.';
	return n;
}

struct policy_row {
	const char *rule;
	const char *free; /* from cluster 2 */
	uint32_t hint, tail, need;
	unsigned flags;
	int want_err;
	const char *want; /* runs, "first+n,..." */
};

/* Clusters:      2345678901234567 */
#define GAPPY	".#...#.#....#.."
#define TAIL	"#...#..."
#define STRIPES "..##..##.."

static const struct policy_row policy_rows[] = {
	{"tail: the chain grows in place, not from the hint", TAIL, 7, 2, 2, 0,
	 0, "3+2"},
	{"tail: grows in place to the last free cluster after it", TAIL, 7, 2,
	 3, 0, 0, "3+3"},
	{"tail: grows in part, the rest by next fit", TAIL, 2, 2, 5, 0, 0,
	 "3+3,7+2"},
	{"tail: contiguous and too short: no growth, no fit", TAIL, 2, 2, 5,
	 FK_ALLOC_CONTIG, -ENOSPC, ""},
	{"tail: contiguous, grown in place when it fits", TAIL, 7, 2, 3,
	 FK_ALLOC_CONTIG, 0, "3+3"},
	{"tail: contiguous, too short in place, whole run elsewhere",
	 "#..#.....", 2, 2, 4, FK_ALLOC_CONTIG, 0, "6+4"},
	{"tail: the next cluster is used: next fit from the hint", "##.#....",
	 2, 2, 2, 0, 0, "6+2"},
	{"tail: the last cluster of the volume cannot grow", "..#..#", 2, 7, 1,
	 0, 0, "2+1"},
	{"next fit: from the hint", STRIPES, 8, 0, 2, 0, 0, "10+2"},
	{"next fit: from the hint, skipping a short run", STRIPES, 7, 0, 2, 0,
	 0, "10+2"},
	{"next fit: wraps to cluster 2 past the end", STRIPES, 11, 0, 2, 0, 0,
	 "2+2"},
	{"next fit: hint past the volume: from cluster 2", STRIPES,
	 FK_FSINFO_UNKNOWN, 0, 2, 0, 0, "2+2"},
	{"next fit: hint 0: from cluster 2", STRIPES, 0, 0, 2, 0, 0, "2+2"},
	{"next fit: first run long enough, not the best fit", "..#....#...", 2,
	 0, 3, 0, 0, "5+3"},
	{"next fit: wrapped, a run is measured past the hint", "..........", 5,
	 0, 10, 0, 0, "2+10"},
	{"contiguous: a run long enough", GAPPY, 2, 0, 4, FK_ALLOC_CONTIG, 0,
	 "10+4"},
	{"contiguous: no run long enough", GAPPY, 2, 0, 5, FK_ALLOC_CONTIG,
	 -ENOSPC, ""},
	{"fewest runs: two long runs, not five by address", GAPPY, 2, 0, 7, 0,
	 0, "4+3,10+4"},
	{"fewest runs: the last run taken in part", GAPPY, 2, 0, 8, 0, 0,
	 "4+3,10+4,15+1"},
	{"fewest runs: from cluster 2, whatever the hint", GAPPY, 14, 0, 7, 0,
	 0, "4+3,10+4"},
	{"fewest runs: every free cluster", GAPPY, 2, 0, 11, 0, 0,
	 "2+1,4+3,8+1,10+4,15+2"},
	{"no space: more than is free", GAPPY, 2, 0, 12, 0, -ENOSPC, ""},
	{"no space: a full volume", "####", 2, 0, 1, 0, -ENOSPC, ""},
	{"nothing asked: nothing taken", GAPPY, 2, 3, 0, 0, 0, ""},
};

static void check_policy_row(const struct policy_row *r)
{
	uint64_t map[(MAX_CLUS + 64) / 64];
	struct fk_diag diag = {0};
	struct fk_plan plan = {NULL, 0, 0, 0};
	struct fk_alloc *a = NULL;
	uint32_t nfree = count_free(r->free), after, back;
	char got[256];
	int err;

	if ((err = fk_alloc_from_map(map_of(r->free, map),
				     (uint32_t)strlen(r->free), r->hint, &a))) {
		OK(0, "%s: fk_alloc_from_map failed (%d)", r->rule, err);
		return;
	}
	err = fk_alloc_plan(a, r->tail, r->need, r->flags, &plan, &diag);
	runs_str(&plan, got, sizeof(got));
	after = fk_alloc_nfree(a);
	OK(err == r->want_err && !strcmp(got, r->want),
	   "%s (want %d \"%s\", got %d \"%s\")", r->rule, r->want_err, r->want,
	   err, got);
	OK(!plan_faults(r->free, &plan) &&
		   after == nfree - (err ? 0 : r->need) &&
		   plan.nclus == (err ? 0 : r->need),
	   "%s: the plan takes %u free clusters once each (free %u -> %u)",
	   r->rule, plan.nclus, nfree, after);
	fk_alloc_unplan(a, &plan);
	back = fk_alloc_nfree(a);
	OK(back == nfree, "%s: unplanned, %u of %u free again", r->rule, back,
	   nfree);
	fk_plan_free(&plan);
	fk_alloc_close(a);
}

/* Plans one after another: next fit goes on from where the last ended. */
static void check_sequence(void)
{
	uint64_t map[(MAX_CLUS + 64) / 64];
	struct fk_diag diag = {0};
	struct fk_plan p1 = {NULL, 0, 0, 0}, p2 = {NULL, 0, 0, 0};
	struct fk_alloc *a = NULL;
	char got1[64], got2[64];
	uint32_t next1 = 0, next2 = 0;

	if (fk_alloc_from_map(map_of("....#.....", map), 10, 2, &a)) {
		OK(0, "sequence: fk_alloc_from_map failed");
		return;
	}
	if (!fk_alloc_plan(a, 0, 3, 0, &p1, &diag))
		next1 = fk_alloc_next_free(a);
	if (!fk_alloc_plan(a, 0, 2, 0, &p2, &diag))
		next2 = fk_alloc_next_free(a);
	runs_str(&p1, got1, sizeof(got1));
	runs_str(&p2, got2, sizeof(got2));
	OK(!strcmp(got1, "2+3") && next1 == 5 && !strcmp(got2, "7+2") &&
		   next2 == 9,
	   "sequence: next fit resumes after the last plan (got %s then %s, "
	   "next free %u then %u)",
	   got1, got2, next1, next2);
	fk_plan_free(&p1);
	fk_plan_free(&p2);
	fk_alloc_close(a);
}

/* Bits for clusters 0 and 1 and past the last cluster are not free space. */
static void check_map_edges(void)
{
	uint64_t map[2] = {~(uint64_t)0, ~(uint64_t)0};
	struct fk_alloc *a = NULL;
	uint32_t nfree = 0, next = 0;

	if (!fk_alloc_from_map(map, 10, 0, &a)) {
		nfree = fk_alloc_nfree(a);
		next = fk_alloc_next_free(a);
		fk_alloc_close(a);
	}
	OK(nfree == 10 && next == 2,
	   "from_map: only clusters 2 .. nclus + 1 count (%u free, next %u)",
	   nfree, next);
	memset(map, 0, sizeof(map));
	if (!fk_alloc_from_map(map, 10, 5, &a)) {
		next = fk_alloc_next_free(a);
		fk_alloc_close(a);
	}
	OK(next == FK_FSINFO_UNKNOWN,
	   "from_map: no free cluster: next free is unknown (0x%X)", next);
}

/*
 * fk_alloc_from_used() (exFAT's bitmap, bit c - 2 per cluster, a word at
 * a time) against fk_alloc_from_map() (bit c, bit by bit) on pseudo-random
 * maps whose sizes straddle word edges: the same free count and the same
 * plan of every free cluster.
 */
/*
 * fk_alloc_take_used() on a copy of @used in memory as the exFAT loader
 * allocates it: the same free count and the same plan as @ref, including
 * sizes whose map needs the spare word (@nclus % 64 of 62 and 63).
 */
static void check_take_used(const uint64_t *used, uint32_t nclus,
			    struct fk_alloc *ref)
{
	size_t nwords = ((size_t)nclus + 65) / 64;
	uint64_t *buf = fk_bigmem_alloc(nwords, sizeof(*buf));
	struct fk_plan pa = {NULL, 0, 0, 0}, pb = {NULL, 0, 0, 0};
	struct fk_alloc *a = NULL, *b = NULL;
	int same;
	size_t r;

	if (!buf || fk_alloc_take_used(buf, nclus, 2, &a)) {
		OK(0, "take_used: set up %u clusters", nclus);
		fk_bigmem_free(buf, nwords, sizeof(*buf));
		return;
	}
	OK(fk_alloc_nfree(a) == nclus,
	   "take_used: %u clusters, none used: %u free", nclus,
	   fk_alloc_nfree(a));
	fk_alloc_close(a);
	buf = fk_bigmem_alloc(nwords, sizeof(*buf));
	if (!buf) {
		OK(0, "take_used: set up %u clusters", nclus);
		return;
	}
	memcpy(buf, used, ((size_t)nclus + 63) / 64 * sizeof(*buf));
	if (fk_alloc_take_used(buf, nclus, 2, &a) ||
	    fk_alloc_from_used(used, nclus, 2, &b)) {
		OK(0, "take_used: set up %u clusters", nclus);
		fk_alloc_close(a);
		return;
	}
	OK(fk_alloc_nfree(a) == fk_alloc_nfree(ref),
	   "take_used: %u clusters: %u free in place, as the copy says (%u)",
	   nclus, fk_alloc_nfree(a), fk_alloc_nfree(ref));
	if (fk_alloc_nfree(ref)) {
		fk_alloc_plan(a, 0, fk_alloc_nfree(ref), 0, &pa, NULL);
		fk_alloc_plan(b, 0, fk_alloc_nfree(ref), 0, &pb, NULL);
	}
	same = pa.nruns == pb.nruns && pa.nclus == pb.nclus;
	for (r = 0; same && r < pa.nruns; r++)
		same = pa.runs[r].first == pb.runs[r].first &&
		       pa.runs[r].nclus == pb.runs[r].nclus;
	OK(same, "take_used: %u clusters: the same plan as the copy", nclus);
	fk_plan_free(&pa);
	fk_plan_free(&pb);
	fk_alloc_close(a);
	fk_alloc_close(b);
}

static void check_from_used(void)
{
	static const uint32_t sizes[] = {1,   61,  62,	63,  64,  65,
					 126, 127, 128, 129, 1000};
	uint64_t used[20], map[20];
	uint32_t seed = 12345;
	size_t k;

	for (k = 0; k < NROWS(sizes); k++) {
		uint32_t nclus = sizes[k], c;
		struct fk_alloc *a = NULL, *b = NULL;
		struct fk_plan pa = {NULL, 0, 0, 0}, pb = {NULL, 0, 0, 0};
		int same = 1;
		size_t r;

		memset(used, 0, sizeof(used));
		memset(map, 0, sizeof(map));
		for (c = 0; c < nclus; c++) {
			seed = seed * 1103515245u + 12345u;
			if (seed >> 16 & 1)
				used[c / 64] |= (uint64_t)1 << (c % 64);
			else
				map[(c + 2) / 64] |= (uint64_t)1
						     << ((c + 2) % 64);
		}
		if (fk_alloc_from_used(used, nclus, 2, &a) ||
		    fk_alloc_from_map(map, nclus, 2, &b)) {
			OK(0, "from_used: set up %u clusters", nclus);
			fk_alloc_close(a);
			fk_alloc_close(b);
			continue;
		}
		OK(fk_alloc_nfree(a) == fk_alloc_nfree(b),
		   "from_used: %u clusters: %u free, as the bit-by-bit map "
		   "says (%u)",
		   nclus, fk_alloc_nfree(a), fk_alloc_nfree(b));
		check_take_used(used, nclus, b);
		if (fk_alloc_nfree(b)) {
			fk_alloc_plan(a, 0, fk_alloc_nfree(b), 0, &pa, NULL);
			fk_alloc_plan(b, 0, fk_alloc_nfree(b), 0, &pb, NULL);
		}
		same = pa.nruns == pb.nruns && pa.nclus == pb.nclus;
		for (r = 0; same && r < pa.nruns; r++)
			same = pa.runs[r].first == pb.runs[r].first &&
			       pa.runs[r].nclus == pb.runs[r].nclus;
		OK(same,
		   "from_used: %u clusters: the same plan of every free "
		   "cluster",
		   nclus);
		fk_plan_free(&pa);
		fk_plan_free(&pb);
		fk_alloc_close(a);
		fk_alloc_close(b);
	}
}

void suite_alloc_policy(void)
{
	size_t i;

	for (i = 0; i < NROWS(policy_rows); i++)
		check_policy_row(&policy_rows[i]);
	check_sequence();
	check_map_edges();
	check_from_used();
}
