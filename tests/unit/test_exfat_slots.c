/*
 * test_exfat_slots.c: where the exFAT writer puts a new entry set.  Each
 * case lays out a directory in memory (entry types only: a set in use is
 * 0x85 0xC0 0xC1, a deleted one 0x05 0x40 0x41, the end marker 0x00) on
 * 512-byte clusters, 16 entries each, and an allocator whose free clusters
 * decide whether the directory grows into an adjacent cluster or one
 * apart; then asks for slots as fatprealloc does and checks the index,
 * the padding and the clusters against what the specification allows
 * (6.3: a set may span clusters; fatkit keeps a set that fits in one
 * cluster within one when the next is not adjacent, so it is one write).
 */
#include "tap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-prealloc-test.h"
#include "lib/diag.h"
#include "lib/testing.h"
#include "table/alloc.h"
#include "volume/volume.h"

#define CLUS_LEN 512u
#define PER	 (CLUS_LEN / 32u) /* entries per cluster */
#define NCLUS	 64u		  /* clusters 2..65 */
#define MAXCL	 4u

/* Entries of a directory of up to MAXCL clusters: "u" a set in use (3
 * entries), "d" a deleted one, "D" one deleted entry, "U" one in-use
 * entry, "0" the end marker; the rest stays 0. */
static void lay(unsigned char *ents, const char *what)
{
	static const unsigned char used[] = {0x85, 0xc0, 0xc1};
	static const unsigned char gone[] = {0x05, 0x40, 0x41};
	uint32_t i = 0, k;

	memset(ents, 0, MAXCL * CLUS_LEN);
	for (; *what; what++) {
		switch (*what) {
		case 'u':
		case 'd':
			for (k = 0; k < 3; k++, i++)
				ents[i * 32] = *what == 'u' ? used[k] : gone[k];
			break;
		case 'U':
			ents[i++ * 32] = 0x85;
			break;
		case 'D':
			ents[i++ * 32] = 0x05;
			break;
		default:
			i++; /* '0': an end marker, 0 already */
		}
	}
}

/* An allocator whose only free clusters are @free (0-terminated). */
static struct fk_alloc *alloc_with(const uint32_t *free_clus)
{
	uint64_t used[(NCLUS + 63) / 64];
	struct fk_alloc *a;
	uint32_t c;

	memset(used, 0xff, sizeof(used));
	for (; *free_clus; free_clus++) {
		c = *free_clus - 2;
		used[c / 64] &= ~((uint64_t)1 << (c % 64));
	}
	if (fk_alloc_from_used(used, NCLUS, 2, &a))
		abort();
	return a;
}

static struct fk_geom geom(void)
{
	struct fk_geom g;

	memset(&g, 0, sizeof(g));
	g.sec_len = 512;
	g.clus_secs = 1;
	g.clus_len = CLUS_LEN;
	g.nclus = NCLUS;
	return g;
}

/* A directory on @clus (@nclus of them) laid out as @what, growing into
 * @free_clus; *@a is its allocator, for the caller to close. */
static struct fk_exfat_slots *open_dir(const uint32_t *clus, uint32_t nclus,
				       const char *what,
				       const uint32_t *free_clus,
				       struct fk_alloc **a)
{
	static unsigned char ents[MAXCL * CLUS_LEN];
	struct fk_geom g = geom();
	struct fk_exfat_slots *s;

	lay(ents, what);
	*a = alloc_with(free_clus);
	if (fk_exfat_slots_open(&g, *a, clus, nclus, ents, &s, NULL))
		abort();
	return s;
}

static unsigned type_at(const struct fk_exfat_slots *s, uint32_t idx)
{
	const uint32_t *clus;
	uint32_t nclus, end;

	return fk_exfat_slots_dir(s, &clus, &nclus, &end)[idx * 32];
}

static void clus_of(const struct fk_exfat_slots *s, const uint32_t **clus,
		    uint32_t *nclus)
{
	uint32_t end;

	fk_exfat_slots_dir(s, clus, nclus, &end);
}

static const uint32_t none[] = {0};

/* Take @n slots in @s: the first, or UINT32_MAX and *@err set. */
static uint32_t take(struct fk_exfat_slots *s, uint32_t n, int *err)
{
	uint32_t idx;

	if ((*err = fk_exfat_slots_take(s, n, &idx, NULL)))
		return UINT32_MAX;
	return idx;
}

/* Deleted sets are reused, first fit, before the free run at the end. */
static void test_reuse(void)
{
	static const uint32_t one[] = {10};
	struct fk_alloc *a;
	struct fk_exfat_slots *s = open_dir(one, 1, "udDDuDu0", none, &a);
	uint32_t idx;
	int err;

	/* u 0-2, d 3-5, D 6, D 7, u 8-10, D 11, u 12-14, end 15 */
	idx = take(s, 3, &err);
	OK(!err && idx == 3,
	   "slots: a deleted set of 3 takes a new set of 3 (idx %u)", idx);
	idx = take(s, 2, &err);
	OK(!err && idx == 6,
	   "slots: two deleted entries in a row take a set of 2 (idx %u)", idx);
	idx = take(s, 1, &err);
	OK(!err && idx == 11,
	   "slots: a single deleted entry takes a set of 1 (idx %u)", idx);
	idx = take(s, 1, &err);
	OK(!err && idx == 15,
	   "slots: holes used up, then the run after the end marker (idx %u)",
	   idx);
	take(s, 1, &err);
	OK(err == -ENOSPC,
	   "slots: a full directory with no free cluster: -ENOSPC");
	fk_exfat_slots_close(s);
	fk_alloc_close(a);
}

/* A set that fits in a cluster is kept in one when the next is apart. */
static void test_cluster_end(void)
{
	static const uint32_t apart[] = {10, 20}, next[] = {10, 11};
	const uint32_t *clus;
	uint32_t idx, nclus;
	int err;
	struct fk_alloc *a;
	struct fk_exfat_slots *s;

	/* 14 entries in use, end marker at 14: 2 free at the cluster's
	 * end, then the second cluster, zeroed. */
	s = open_dir(apart, 2, "uuuuUU0", none, &a);
	OK(fk_exfat_slots_is_split(s, 14, 3) &&
		   !fk_exfat_slots_is_split(s, 14, 2) &&
		   !fk_exfat_slots_is_split(s, 16, 16),
	   "is_split: 14+3 spans clusters 10 and 20; 14+2 and 16+16 do not");
	idx = take(s, 2, &err);
	OK(!err && idx == 14,
	   "slots: a set of 2 fills the cluster's end (idx %u)", idx);
	idx = take(s, 3, &err);
	OK(!err && idx == 16,
	   "slots: the next set starts the next cluster (idx %u)", idx);
	fk_exfat_slots_close(s);
	fk_alloc_close(a);

	s = open_dir(apart, 2, "uuuuUU0", none, &a);
	idx = take(s, 3, &err);
	OK(!err && idx == 16,
	   "slots: a set of 3 at 14 would span clusters 10 and 20: it starts "
	   "at 16 (idx %u)",
	   idx);
	OK(type_at(s, 14) == 0x05 && type_at(s, 15) == 0x05,
	   "slots: the cluster's end is filled with deleted entries, not "
	   "left as end markers before the set (0x%02x 0x%02x)",
	   type_at(s, 14), type_at(s, 15));
	clus_of(s, &clus, &nclus);
	OK(nclus == 2, "slots: no cluster added (%u)", nclus);
	fk_exfat_slots_close(s);
	fk_alloc_close(a);

	s = open_dir(next, 2, "uuuuUU0", none, &a);
	OK(!fk_exfat_slots_is_split(s, 14, 3), "is_split: 14+3 on 10, 11: no");
	idx = take(s, 3, &err);
	OK(!err && idx == 14,
	   "slots: into the adjacent next cluster, a set of 3 spans the "
	   "boundary (idx %u)",
	   idx);
	OK(type_at(s, 14) == 0 && type_at(s, 15) == 0,
	   "slots: nothing padded when the set may span");
	fk_exfat_slots_close(s);
	fk_alloc_close(a);
}

/* A deleted run across clusters apart: only a set that stays in one
 * cluster, or one longer than a cluster, may take it. */
static void test_hole_across(void)
{
	static const uint32_t apart[] = {10, 20};
	uint32_t idx;
	int err;
	struct fk_alloc *a;
	struct fk_exfat_slots *s;

	/* u 0-11, D 12, d 13-15, d 16-18, D 19, u 20-22, end 23: a hole of
	 * 8 at 12-19, across clusters 10 and 20. */
	s = open_dir(apart, 2, "uuuuDddDu0", none, &a);
	idx = take(s, 5, &err);
	OK(!err && idx == 23,
	   "slots: a hole of 8 across clusters apart does not take a set of "
	   "5 that would span them (idx %u)",
	   idx);
	idx = take(s, 4, &err);
	OK(!err && idx == 12,
	   "slots: it takes a set of 4 that stays in the first cluster "
	   "(idx %u)",
	   idx);
	fk_exfat_slots_close(s);
	fk_alloc_close(a);

	/* A hole of 19 (a 255-unit name's set: 2 + 17) across clusters
	 * apart is taken: such a set cannot fit in one cluster. */
	s = open_dir(apart, 2, "uDdddddd0", none, &a);
	idx = take(s, 19, &err);
	OK(!err && idx == 3,
	   "slots: a 19-entry set takes a 19-entry hole across clusters "
	   "apart (idx %u)",
	   idx);
	fk_exfat_slots_close(s);
	fk_alloc_close(a);
}

/* No room: the directory grows, into the adjacent cluster or one apart. */
static void test_grow(void)
{
	static const uint32_t one[] = {10}, adj[] = {11, 0}, far[] = {30, 0};
	const uint32_t *clus;
	uint32_t idx, nclus;
	int err;
	struct fk_alloc *a;
	struct fk_exfat_slots *s;

	/* The directory laid out here is the root (no parent): a set
	 * never starts in its old clusters and ends in a new one, so that
	 * its link needs no barrier of its own (write_links()). */
	s = open_dir(one, 1, "uuuuUU0", adj, &a);
	idx = take(s, 3, &err);
	OK(!err && idx == 16,
	   "grow: a set of 3 does not span from the root's old cluster "
	   "into the adjacent new one: it starts the new one (idx %u)",
	   idx);
	clus_of(s, &clus, &nclus);
	OK(nclus == 2 && clus[1] == 11 && type_at(s, 14) == 0x05 &&
		   type_at(s, 15) == 0x05,
	   "grow: cluster 11 added, 14-15 deleted entries (%u: %u)", nclus,
	   nclus > 1 ? clus[1] : 0);
	OK(type_at(s, 17) == 0 && type_at(s, 31) == 0,
	   "grow: the new cluster is zeroed");
	fk_exfat_slots_close(s);
	fk_alloc_close(a);

	s = open_dir(one, 1, "uuuuUU0", far, &a);
	idx = take(s, 3, &err);
	OK(!err && idx == 16,
	   "grow: the new cluster is 30, apart: the set starts it (idx %u)",
	   idx);
	clus_of(s, &clus, &nclus);
	OK(nclus == 2 && clus[1] == 30 && type_at(s, 14) == 0x05 &&
		   type_at(s, 15) == 0x05,
	   "grow: cluster 30 added, 14-15 deleted entries");
	fk_exfat_slots_close(s);
	fk_alloc_close(a);

	s = open_dir(one, 1, "uuuuuU0", none, &a);
	take(s, 3, &err);
	OK(err == -ENOSPC, "grow: no free cluster: -ENOSPC");
	clus_of(s, &clus, &nclus);
	OK(nclus == 1, "grow: a refusal adds no cluster");
	fk_exfat_slots_close(s);
	fk_alloc_close(a);
}

/* 255-unit names on 512-byte clusters: 19 entries, more than a cluster
 * holds, so they span clusters wherever they are (spec 6.3). */
static void test_long_names(void)
{
	static const uint32_t one[] = {10}, far[] = {30, 31, 40, 0};
	const uint32_t *clus;
	uint32_t idx, idx2, idx3, nclus;
	int err;
	struct fk_alloc *a;
	struct fk_exfat_slots *s;

	s = open_dir(one, 1, "uU0", far, &a);
	idx = take(s, 19, &err);
	OK(!err && idx == 4,
	   "long name: its set starts right after the last set (idx %u)", idx);
	clus_of(s, &clus, &nclus);
	OK(nclus == 2 && clus[1] == 30 && fk_exfat_slots_is_split(s, 4, 19),
	   "long name: it spans clusters 10 and 30, apart");
	idx2 = take(s, 19, &err);
	OK(!err && idx2 == 23, "long name: a second one follows it (idx %u)",
	   idx2);
	idx3 = take(s, 19, &err);
	OK(!err && idx3 == 42, "long name: a third one too (idx %u)", idx3);
	clus_of(s, &clus, &nclus);
	OK(nclus == 4 && clus[2] == 31 && clus[3] == 40,
	   "long name: the directory grew by 30, 31 and 40 (%u clusters)",
	   nclus);
	OK(type_at(s, 4) == 0 && type_at(s, 22) == 0,
	   "long name: no slot padded for a set that may span");
	fk_exfat_slots_close(s);
	fk_alloc_close(a);
}

/*
 * An entry after the end marker is refused where a new set would take it
 * or end just before it (it would be read as the directory's); further on
 * it is left alone.
 */
static void test_after_end(void)
{
	static const uint32_t one[] = {10};
	static unsigned char ents[MAXCL * CLUS_LEN];
	struct fk_diag diag = {0};
	struct fk_geom g = geom();
	struct fk_exfat_slots *s = NULL;
	struct fk_alloc *a = alloc_with(none);
	uint32_t idx = 0;

	lay(ents, "u0u");
	OK(fk_exfat_slots_open(&g, a, one, 1, ents, &s, &diag) == 0 &&
		   fk_exfat_slots_take(s, 3, &idx, &diag) == FK_ECORRUPT &&
		   strstr(diag.reason, "entries after its end marker"),
	   "after end: a set over it refused (%s)", diag.reason);
	fk_exfat_slots_close(s);
	s = NULL;
	memset(&diag, 0, sizeof(diag));
	lay(ents, "u00000000000u");
	OK(fk_exfat_slots_open(&g, a, one, 1, ents, &s, &diag) == 0 &&
		   fk_exfat_slots_take(s, 3, &idx, &diag) == 0 && idx == 3,
	   "after end: one further on is left alone (idx %u)", idx);
	fk_exfat_slots_close(s);
	fk_alloc_close(a);
}

void suite_exfat_slots(void)
{
	test_reuse();
	test_cluster_end();
	test_hole_across();
	test_grow();
	test_long_names();
	test_after_end();
}
