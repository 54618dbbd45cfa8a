/*
 * test_vec.c: the growable array.  Room is made for what is asked, the
 * items already there survive a move, the capacity doubles from 16, and a
 * size whose product overflows size_t is refused with the array left as
 * it was.
 */
#include "tap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/vec.h"

struct reserve_row {
	const char *edge;
	size_t cap, need; /* before */
	size_t want_cap;  /* after */
};

static const struct reserve_row rows[] = {
	{"an empty array gets 16 items", 0, 1, 16},
	{"an empty array asked for 40 gets 64", 0, 40, 64},
	{"a full array doubles", 16, 17, 32},
	{"room enough is left alone", 32, 20, 32},
	{"exactly full is left alone", 32, 32, 32},
	{"a big jump doubles until it fits", 16, 1000, 1024},
};

static void reserve_rows(void)
{
	size_t i, k;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct reserve_row *r = &rows[i];
		uint32_t *v = NULL;
		size_t cap = 0;
		int is_kept = 1;

		if (r->cap && FK_VEC_RESERVE(v, cap, r->cap)) {
			OK(0, "%s: setting up", r->edge);
			continue;
		}
		for (k = 0; k < cap; k++)
			v[k] = (uint32_t)k * 7;
		OK(!FK_VEC_RESERVE(v, cap, r->need) && cap == r->want_cap,
		   "%s: capacity %zu, want %zu", r->edge, cap, r->want_cap);
		for (k = 0; k < r->cap; k++)
			is_kept &= v[k] == (uint32_t)k * 7;
		OK(is_kept, "%s: the items survive", r->edge);
		if (cap)
			v[cap - 1] = 1; /* writable to the end (ASan checks) */
		free(v);
	}
}

static void overflow_refused(void)
{
	uint64_t *v = NULL;
	size_t cap = 0;
	uint64_t *before;

	OK(!FK_VEC_RESERVE(v, cap, 3), "overflow: a small array first");
	before = v;
	OK(FK_VEC_RESERVE(v, cap, SIZE_MAX / 4) == -ENOMEM && v == before &&
		   cap == 16,
	   "overflow: items times size past SIZE_MAX is -ENOMEM, array kept");
	OK(FK_VEC_RESERVE(v, cap, SIZE_MAX) == -ENOMEM && cap == 16,
	   "overflow: SIZE_MAX items is -ENOMEM");
	free(v);
}

void suite_vec(void)
{
	reserve_rows();
	overflow_refused();
}
