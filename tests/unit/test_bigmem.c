/*
 * test_bigmem.c: large zeroed arrays.  Each size comes back zeroed and
 * writable to its last byte; from 64 KiB on they start on a 2 MiB
 * boundary (so that the kernel can back them with huge pages); a product
 * that overflows is refused.
 */
#include "tap.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "lib/bigmem.h"

struct size_row {
	const char *edge;
	size_t n, size;
	int is_mapped; /* expected to start on a 2 MiB boundary */
};

static const struct size_row sizes[] = {
	{"one byte", 1, 1, 0},
	{"just under 64 KiB", 1, (64 << 10) - 1, 0},
	{"64 KiB, the first mapped size", 8192, 8, 1},
	{"1.2 MiB, a 9-million-cluster free map", 145408, 8, 1},
	{"exactly 2 MiB", 1, 2 << 20, 1},
	{"2 MiB + 1, two huge pages", 1, (2 << 20) + 1, 1},
};

/* Zeroed throughout, then writable throughout. */
static int is_usable(unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return 0;
	memset(p, 0xa5, len);
	return p[0] == 0xa5 && p[len - 1] == 0xa5;
}

/*
 * fk_bigmem_grow(): records pushed one at a time from nothing past the
 * heap (64 KiB), the first huge mapping (2 MiB) and three moves of it keep
 * every one; the mapped capacity counts the whole mapping; an overflow is
 * refused with the array kept.
 */
static void grow_rows(void)
{
	struct rec {
		uint32_t a, b, c, d, e;
	} *v = NULL;
	size_t cap = 0, n, i, max = (9u << 20) / sizeof(*v);
	int is_kept = 1, err = 0;

	for (n = 0; n < max && !err; n++) {
		if (n == cap &&
		    (err = fk_bigmem_grow(&v, &cap, n + 1, sizeof(*v))))
			break;
		v[n] = (struct rec){(uint32_t)n, (uint32_t)n * 3, 7, 8,
				    (uint32_t)~n};
	}
	for (i = 0; i < n && is_kept; i++)
		is_kept = v[i].a == (uint32_t)i && v[i].b == (uint32_t)i * 3 &&
			  v[i].c == 7 && v[i].d == 8 && v[i].e == (uint32_t)~i;
	OK(!err && n == max && is_kept && cap >= max,
	   "fk_bigmem_grow: 9 MiB of records pushed one by one, all kept");
	OK(!FK_BIGMEM_MAPS || cap == (16u << 20) / sizeof(*v),
	   "fk_bigmem_grow: a mapped array's capacity is its whole mapping (16 "
	   "MiB)");
	OK(fk_bigmem_grow(&v, &cap, SIZE_MAX / 2, sizeof(*v)) == -ENOMEM &&
		   v[max - 1].a == (uint32_t)(max - 1),
	   "fk_bigmem_grow: a size that overflows is refused, the array kept");
	fk_bigmem_free(v, cap, sizeof(*v));
}

void suite_bigmem(void)
{
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		const struct size_row *r = &sizes[i];
		unsigned char *p = fk_bigmem_alloc(r->n, r->size);
		/* calloc()'s pointers (all of them under ASan) are not
		 * checked: any may happen to be aligned. */
		int is_aligned = !r->is_mapped || !FK_BIGMEM_MAPS ||
				 (p && (uintptr_t)p % (2u << 20) == 0);

		OK(p && is_usable(p, r->n * r->size) && is_aligned,
		   "fk_bigmem_alloc: %s: zeroed, writable%s", r->edge,
		   r->is_mapped ? ", on a 2 MiB boundary" : "");
		fk_bigmem_free(p, r->n, r->size);
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		const struct size_row *r = &sizes[i];
		size_t len = r->n * r->size;
		unsigned char *p = fk_bigmem_alloc_lazy(r->n, r->size);
		int is_aligned = !r->is_mapped || !FK_BIGMEM_MAPS ||
				 (p && (uintptr_t)p % (2u << 20) == 0);
		int is_kept = 0;

		/* A small fill, then one past it that becomes huge pages
		 * (a collapse of what the first mapped): bytes kept. */
		if (p) {
			fk_bigmem_will_fill(p, r->n, r->size, 0, 1);
			p[0] = 0x5a;
			fk_bigmem_will_fill(p, r->n, r->size, 0, len);
			is_kept = p[0] == 0x5a;
			p[0] = 0;
		}
		OK(p && is_kept && is_usable(p, len) && is_aligned,
		   "fk_bigmem_alloc_lazy: %s: zeroed, writable, kept across "
		   "fills%s",
		   r->edge, r->is_mapped ? ", on a 2 MiB boundary" : "");
		fk_bigmem_free(p, r->n, r->size);
	}
	grow_rows();
	fk_bigmem_free(NULL, 1, 1 << 20); /* ignored, as free(NULL) is */
	OK(fk_bigmem_alloc(SIZE_MAX / 2, 3) == NULL,
	   "fk_bigmem_alloc: a size that overflows is refused");
}
