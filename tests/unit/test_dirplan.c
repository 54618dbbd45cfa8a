/*
 * test_dirplan.c: the free-slot search, row by row, on plain slot maps
 * (no image).  Each row's answer is worked out by hand from the rule
 * dirplan.h states: the first run of free slots, never crossing from an
 * old block into a new one, nor between old blocks apart on disk.
 */
#include "tap.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fat/dirplan.h"

#define NROWS(t)  (sizeof(t) / sizeof((t)[0]))
#define MAX_SLOTS 32

static const struct free_row {
	const char *edge;
	const char *used; /* one character per slot: 'x' taken, '.' free */
	uint32_t per_block, nold;
	uint32_t clus[4]; /* all 0: the fixed root */
	uint32_t from, n;
	int want; /* first slot, or -ENOSPC */
} free_rows[] = {
	{"empty directory", "........", 4, 2, {10, 11}, 0, 1, 0},
	{"after the used slots", "xx......", 4, 2, {10, 11}, 0, 2, 2},
	{"a hole that fits", "x..xx...", 4, 2, {10, 11}, 0, 2, 1},
	{"a hole too small", "x.xxx...", 4, 2, {10, 11}, 0, 2, 5},
	{"across adjacent old clusters", "xxx.....", 4, 2, {10, 11}, 0, 3, 3},
	{"not across old clusters apart", "xxx.....", 4, 2, {10, 20}, 0, 3, 4},
	{"across fixed-root sectors", "xxx.....", 4, 2, {0, 0}, 0, 3, 3},
	{"not from an old block into a new one",
	 "xxx.....",
	 4,
	 1,
	 {10, 0},
	 0,
	 3,
	 4},
	{"across new blocks", "xxxxxxx.....", 4, 1, {10, 0}, 0, 3, 7},
	{"a new directory: every block new", "xx......", 4, 0, {0}, 0, 6, 2},
	{"a run as long as a block", "x.......", 4, 2, {10, 20}, 0, 4, 4},
	{"from skips earlier holes", "..xx....", 4, 2, {10, 11}, 3, 1, 4},
	{"from at the end", "........", 4, 2, {10, 11}, 8, 1, -ENOSPC},
	{"full", "xxxxxxxx", 4, 2, {10, 11}, 0, 1, -ENOSPC},
	{"free tail too short", "xxxxxx..", 4, 2, {10, 11}, 0, 3, -ENOSPC},
	{"room only across a gap on disk",
	 "xx....xx",
	 4,
	 2,
	 {10, 30},
	 0,
	 4,
	 -ENOSPC},
	{"the longest name, 21 slots",
	 "x...........................",
	 4,
	 0,
	 {0},
	 0,
	 21,
	 1},
};

static void test_find_free(void)
{
	size_t i;

	for (i = 0; i < NROWS(free_rows); i++) {
		const struct free_row *r = &free_rows[i];
		uint8_t used[MAX_SLOTS];
		struct fk_slot_map map;
		uint32_t first = UINT32_MAX, s, n = (uint32_t)strlen(r->used);
		int err;

		for (s = 0; s < n; s++)
			used[s] = r->used[s] == 'x';
		map.used = used;
		map.nslots = n;
		map.per_block = r->per_block;
		map.nold = r->nold;
		map.clus = r->clus[0] ? r->clus : NULL;
		err = fk_dirplan_find_free(&map, r->from, r->n, &first);
		if (r->want < 0)
			OK(err == r->want && first == UINT32_MAX,
			   "fk_dirplan_find_free: %s (err %d)", r->edge, err);
		else
			OK(!err && first == (uint32_t)r->want,
			   "fk_dirplan_find_free: %s (slot %u, want %d)",
			   r->edge, first, r->want);
	}
}

void suite_dirplan(void)
{
	test_find_free();
}
