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

uint64_t exck_upname_key(const uint16_t *v, uint32_t n)
{
	uint64_t h = 14695981039346656037ull ^ n, w;
	uint32_t i;

	/* Four units (one load) to a multiply: names are hashed once per
	 * entry.  The key lives in memory only: the byte order is the
	 * machine's. */
	for (i = 0; i + 4 <= n; i += 4) {
		memcpy(&w, v + i, sizeof(w));
		h = (h ^ w) * 0x100000001B3ull;
		h ^= h >> 29;
	}
	for (w = 0; i < n; i++)
		w = w << 16 | v[i];
	h = (h ^ w) * 0x100000001B3ull;
	return h ^ h >> 32;
}

uint64_t exck_name_key(const struct fk_exfat_upcase *up, const uint16_t *u,
		       uint32_t n)
{
	uint16_t v[FK_EXFAT_NAME_MAX];
	uint32_t i;

	for (i = 0; i < n && i < FK_EXFAT_NAME_MAX; i++)
		v[i] = fk_exfat_upcase(up, u[i]);
	return exck_upname_key(v, i);
}

/*
 * The slot of the name @u (@n units, hashed to @key, not 0) in @ns (whose
 * cap is not 0): where it is (*@found set) or the empty slot where it
 * would go.
 */
static size_t find_slot(const struct name_set *ns,
			const struct fk_exfat_upcase *up, uint64_t key,
			const uint16_t *u, uint32_t n, int *found)
{
	size_t i;

	for (i = (size_t)key & (ns->cap - 1); ns->v[i];
	     i = (i + 1) & (ns->cap - 1)) {
		const uint16_t *t = &ns->text[ns->at[i]];

		if (ns->v[i] == key &&
		    !fk_exfat_name_cmp(up, t + 1, t[0], u, n)) {
			*found = 1;
			return i;
		}
	}
	*found = 0;
	return i;
}

int exck_has_name(const struct name_set *ns, const struct fk_exfat_upcase *up,
		  uint64_t key, const uint16_t *u, uint32_t n)
{
	int found;

	if (!ns->cap)
		return 0;
	find_slot(ns, up, key ? key : 1, u, n, &found);
	return found;
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

/* Room in @ns for one more name of @n units: slots kept at most half
 * full, and the text.  0 or -ENOMEM. */
static int make_room(struct name_set *ns, uint32_t n)
{
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
	return 0;
}

int exck_add_name(struct name_set *ns, const struct fk_exfat_upcase *up,
		  uint64_t key, const uint16_t *u, uint32_t n)
{
	uint16_t *dst;
	uint32_t k;
	size_t i;
	int found, err;

	key = key ? key : 1;
	if ((err = make_room(ns, n)))
		return err;
	/* one probe: a clean directory's one look-up per name */
	i = find_slot(ns, up, key, u, n, &found);
	if (found)
		return 0;
	ns->v[i] = key;
	ns->at[i] = ns->text_len;
	ns->n++;
	dst = &ns->text[ns->text_len];
	dst[0] = (uint16_t)n;
	/* A loop: names are short, and memcpy of a length known only here
	 * is a string instruction with a start-up cost of its own. */
	for (k = 0; k < n; k++)
		dst[k + 1] = u[k];
	ns->text_len += (size_t)n + 1;
	return 1;
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
