/*
 * check-exfat-names.c: the names met in the directory the exFAT checker
 * walks, for duplicates: struct name_set (check-exfat-int.h), an open
 * addressing set of hashes of the up-cased names, with the names kept
 * to compare where the hashes are equal.
 */
#include "exfat/check-exfat-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat.h"

uint64_t exck_name_key(const struct fk_exfat_upcase *up, const uint16_t *u,
		       uint32_t n)
{
	uint64_t h = 14695981039346656037ull ^ n, w = 0;
	uint32_t i;

	/* Four units to a multiply: names are hashed once per entry. */
	for (i = 0; i < n; i++) {
		w = w << 16 | fk_exfat_upcase(up, u[i]);
		if (i % 4 == 3) {
			h = (h ^ w) * 0x100000001B3ull;
			h ^= h >> 29;
			w = 0;
		}
	}
	h = (h ^ w) * 0x100000001B3ull;
	return h ^ h >> 32;
}

int exck_has_name(const struct name_set *ns, const struct fk_exfat_upcase *up,
		  uint64_t key, const uint16_t *u, uint32_t n)
{
	size_t i;

	if (!ns->cap)
		return 0;
	key = key ? key : 1;
	for (i = (size_t)key & (ns->cap - 1); ns->v[i];
	     i = (i + 1) & (ns->cap - 1)) {
		const uint16_t *t = &ns->text[ns->at[i]];

		if (ns->v[i] == key &&
		    !fk_exfat_name_cmp(up, t + 1, t[0], u, n))
			return 1;
	}
	return 0;
}

static void put_slot(struct name_set *ns, uint64_t key, size_t at)
{
	size_t i;

	for (i = (size_t)key & (ns->cap - 1); ns->v[i];
	     i = (i + 1) & (ns->cap - 1))
		;
	ns->v[i] = key;
	ns->at[i] = at;
	ns->n++;
}

int exck_add_name(struct name_set *ns, const struct fk_exfat_upcase *up,
		  uint64_t key, const uint16_t *u, uint32_t n)
{
	if (exck_has_name(ns, up, key, u, n))
		return 0;
	return exck_put_name(ns, key, u, n);
}

int exck_put_name(struct name_set *ns, uint64_t key, const uint16_t *u,
		  uint32_t n)
{
	uint16_t *dst;
	uint32_t k;

	key = key ? key : 1;
	if (2 * (ns->n + 1) > ns->cap) {
		struct name_set big = *ns;
		size_t i;

		big.cap = ns->cap ? 2 * ns->cap : 64;
		big.n = 0;
		big.v = calloc(big.cap, sizeof(*big.v));
		big.at = malloc(big.cap * sizeof(*big.at));
		if (!big.v || !big.at) {
			free(big.v);
			free(big.at);
			return -ENOMEM;
		}
		for (i = 0; i < ns->cap; i++)
			if (ns->v[i])
				put_slot(&big, ns->v[i], ns->at[i]);
		free(ns->v);
		free(ns->at);
		*ns = big;
	}
	if (ns->text_cap - ns->text_len < (size_t)n + 1) {
		size_t cap = ns->text_cap ? 2 * ns->text_cap : 1024;
		uint16_t *t;

		while (cap - ns->text_len < (size_t)n + 1)
			cap *= 2;
		if (!(t = realloc(ns->text, cap * sizeof(*t))))
			return -ENOMEM;
		ns->text = t;
		ns->text_cap = cap;
	}
	put_slot(ns, key, ns->text_len);
	dst = &ns->text[ns->text_len];
	dst[0] = (uint16_t)n;
	/* A loop: names are short, and memcpy of a length known only here
	 * is a string instruction with a start-up cost of its own. */
	for (k = 0; k < n; k++)
		dst[k + 1] = u[k];
	ns->text_len += (size_t)n + 1;
	return 0;
}

void exck_free_names(struct name_set *ns)
{
	if (!ns)
		return;
	free(ns->v);
	free(ns->at);
	free(ns->text);
	free(ns);
}

/*
 * Empty @ns for the next directory at its level.  Clearing costs its
 * capacity, so a table much larger than the directory just walked
 * needed (one huge directory among many small ones) is let go instead.
 */
void exck_clear_names(struct name_set *ns)
{
	if (ns->cap > 1024 && ns->cap > 8 * ns->n) {
		free(ns->v);
		free(ns->at);
		ns->v = NULL;
		ns->at = NULL;
		ns->cap = 0;
	} else if (ns->cap) {
		memset(ns->v, 0, ns->cap * sizeof(*ns->v));
	}
	if (ns->text_cap > 65536 && ns->text_cap > 16 * ns->text_len) {
		free(ns->text);
		ns->text = NULL;
		ns->text_cap = 0;
	}
	ns->n = 0;
	ns->text_len = 0;
}
