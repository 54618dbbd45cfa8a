/*
 * test_ownmap.c: the ownership map both checkers claim in.  Its own plane
 * is laid out as exFAT's allocation bitmap (cluster c: bit (c - 2) % 8 of
 * byte (c - 2) / 8); the two planes give the FAT checker's four states,
 * each read back as written; ALLOC alone is taken; keeping the lost
 * clusters leaves exactly the ALLOC ones; the next cluster in a state
 * is found a word at a time; @own_end bounds what was written.
 */
#include "tap.h"

#include "iface/ownmap.h"

/* Every cluster 2 .. @max reads back as @want says. */
static int states_are(const struct fk_own_map *m, uint32_t max,
		      unsigned (*want)(uint32_t))
{
	uint32_t c;

	for (c = FK_FIRST_CLUS; c <= max; c++)
		if (fk_own_get(m, c) != want(c))
			return 0;
	return 1;
}

static unsigned mixed(uint32_t c)
{
	return c % 4; /* FREE, ALLOC, SHARED, OWNED in turn */
}

static unsigned lost_only(uint32_t c)
{
	return c % 4 == FK_OWN_ALLOC ? FK_OWN_ALLOC : FK_OWN_FREE;
}

static void test_layout(void)
{
	struct fk_own_map m;

	OK(!fk_own_init(&m, 1001, 0) && !m.second && m.nwords == 16,
	   "ownmap: 1,000 clusters: one plane of 16 words");
	fk_own_set(&m, 2);
	fk_own_set(&m, 12);
	fk_own_set(&m, 1001);
	OK(m.own[0] == 0x01 && m.own[1] == 0x04 && m.own[124] == 0x80 &&
		   m.own_end == 125,
	   "ownmap: cluster 2 is bit 0 of byte 0, 12 bit 2 of byte 1, 1001 "
	   "bit 7 of byte 124, the bitmap's layout; own_end 125");
	OK(fk_own_test(&m, 12) && !fk_own_test(&m, 13),
	   "ownmap: test reads the own plane");
	fk_own_free(&m);
}

static void test_states(void)
{
	struct fk_own_map m;
	uint32_t c, max = 5000, ntaken = 0;

	OK(!fk_own_init(&m, max, 1) && m.second, "ownmap: two planes");
	for (c = FK_FIRST_CLUS; c <= max; c++)
		fk_own_put(&m, c, mixed(c));
	OK(states_are(&m, max, mixed), "ownmap: four states read back");
	for (c = FK_FIRST_CLUS; c <= max; c++)
		fk_own_put(&m, c, FK_OWN_ALLOC);
	for (c = FK_FIRST_CLUS; c <= max; c++)
		fk_own_put(&m, c, mixed(c));
	OK(states_are(&m, max, mixed), "ownmap: states overwrite");
	/* A cluster whose entry is a link is ALLOC, OWNED or SHARED. */
	for (c = FK_FIRST_CLUS; c <= max; c++)
		if (mixed(c) != FK_OWN_FREE)
			ntaken += (unsigned)fk_own_take_link(m.own, c);
	OK(ntaken == (max - 1) / 4 && fk_own_get(&m, 5) == FK_OWN_OWNED &&
		   fk_own_get(&m, 6) == FK_OWN_SHARED &&
		   fk_own_get(&m, 7) == FK_OWN_OWNED,
	   "ownmap: of a link's three states only ALLOC is taken, and "
	   "becomes OWNED");
	for (c = FK_FIRST_CLUS; c <= max; c++)
		fk_own_put(&m, c, mixed(c));
	OK(fk_own_next(&m, 2, FK_OWN_SHARED) == 2 &&
		   fk_own_next(&m, 3, FK_OWN_SHARED) == 6 &&
		   fk_own_next(&m, 4994, FK_OWN_ALLOC) == 4997 &&
		   fk_own_next(&m, 4998, FK_OWN_ALLOC) == UINT32_MAX,
	   "ownmap: the next cluster in a state, within a word and past it");
	fk_own_keep_alloc(&m);
	OK(states_are(&m, max, lost_only),
	   "ownmap: keeping the lost clusters leaves only ALLOC");
	for (c = 70; c < 4000; c++)
		fk_own_put(&m, c, FK_OWN_FREE);
	OK(fk_own_next(&m, 70, FK_OWN_ALLOC) == 4001 &&
		   fk_own_word_used(&m, 0) && !fk_own_word_used(&m, 2),
	   "ownmap: the next cluster found words away; a FREE word");
	fk_own_clear(&m);
	OK(!fk_own_test(&m, 7) && fk_own_get(&m, 5) == FK_OWN_FREE,
	   "ownmap: cleared");
	fk_own_free(&m);
}

void suite_ownmap(void)
{
	test_layout();
	test_states();
}
