/*
 * ownmap.h: the ownership map both checkers claim clusters in.  Two bit
 * planes of one bit per data cluster, each laid out as exFAT's allocation
 * bitmap (cluster @c is bit (c - 2) % 8 of byte (c - 2) / 8), so that the
 * exFAT checker compares the @own plane with the bitmap on disk a word at
 * a time:
 *
 *   @own     the cluster is claimed (both families)
 *   @second  FAT only: with @own, the cluster's state (enum fk_own_state)
 *
 * Both planes are mapped page by page as first touched (sparse): an
 * emptyish volume's check touches little of them, and start-up clears
 * nothing.  Bytes of @own from @own_end on have never been written (the
 * exFAT checker's bitmap compare reads no further); a two-plane map's
 * @own_end is its whole size, so that a FAT claim has one store less.
 */
#ifndef FATKIT_OWNMAP_H
#define FATKIT_OWNMAP_H

#include <stddef.h>
#include <stdint.h>

#include "lib/endian.h"
#include "volume/volume.h"

/*
 * A cluster's state, (own bit) << 1 | (second bit), for the FAT checker.
 * While claiming: FREE (free or bad), ALLOC (in use, not claimed yet),
 * OWNED (claimed), SHARED (claimed, and a second owner reached it): a
 * claimed cluster is one whose own bit is set, in both families.
 */
enum fk_own_state {
	FK_OWN_FREE = 0,
	FK_OWN_ALLOC = 1,
	FK_OWN_SHARED = 2,
	FK_OWN_OWNED = 3,
};

struct fk_own_map {
	uint8_t *own;
	uint8_t *second; /* NULL: one plane (exFAT) */
	size_t nwords;	 /* each plane's size in 8-byte words */
	uint32_t own_end;
};

/* Set up @m for clusters 2 .. @max, with the second plane if
 * @has_second.  0 or -ENOMEM (then nothing to free). */
int fk_own_init(struct fk_own_map *m, uint32_t max, int has_second);
void fk_own_free(struct fk_own_map *m);
/* Every cluster FREE again. */
void fk_own_clear(struct fk_own_map *m);

static inline size_t fk_own_byte(uint32_t clus)
{
	return (size_t)(clus - FK_FIRST_CLUS) / 8;
}

static inline uint8_t fk_own_mask(uint32_t clus)
{
	return (uint8_t)(1u << (clus - FK_FIRST_CLUS) % 8);
}

/* Is @clus claimed? */
static inline int fk_own_test(const struct fk_own_map *m, uint32_t clus)
{
	return (m->own[fk_own_byte(clus)] & fk_own_mask(clus)) != 0;
}

/* Claim @clus (its own bit). */
static inline void fk_own_set(struct fk_own_map *m, uint32_t clus)
{
	size_t at = fk_own_byte(clus);

	m->own[at] |= fk_own_mask(clus);
	if (at >= m->own_end)
		m->own_end = (uint32_t)at + 1;
}

/* @clus's state (two planes). */
static inline unsigned fk_own_get(const struct fk_own_map *m, uint32_t clus)
{
	size_t at = fk_own_byte(clus);
	unsigned sh = (clus - FK_FIRST_CLUS) % 8;

	return (m->own[at] >> sh & 1) << 1 | (m->second[at] >> sh & 1);
}

/* Make @clus's state @s (two planes). */
static inline void fk_own_put(struct fk_own_map *m, uint32_t clus, unsigned s)
{
	size_t at = fk_own_byte(clus);
	uint8_t bit = fk_own_mask(clus);

	if (s >> 1)
		fk_own_set(m, clus);
	else
		m->own[at] &= (uint8_t)~bit;
	m->second[at] =
		(uint8_t)(s & 1 ? m->second[at] | bit : m->second[at] & ~bit);
}

/*
 * ALLOC -> OWNED for @clus, whose FAT entry is a link, in the own plane
 * @own: the one test of a FAT claim's fast loop.  Such a cluster was in
 * use at the FAT scan (its second bit is set), so it is ALLOC unless a
 * claim took it (its own bit).  1 taken, 0 not (OWNED or SHARED).  Leaves
 * @own_end, which a two-plane map keeps at its whole size.
 */
static inline int fk_own_take_link(uint8_t *own, uint32_t clus)
{
	size_t at = fk_own_byte(clus);
	uint8_t bit = fk_own_mask(clus);

	if (__builtin_expect(own[at] & bit, 0))
		return 0;
	own[at] = (uint8_t)(own[at] | bit);
	return 1;
}

/* Is @clus FREE (neither bit)? */
static inline int fk_own_is_free(const struct fk_own_map *m, uint32_t clus)
{
	size_t at = fk_own_byte(clus);

	return !((m->own[at] | m->second[at]) & fk_own_mask(clus));
}

/* Is @clus ALLOC? */
static inline int fk_own_is_alloc(const struct fk_own_map *m, uint32_t clus)
{
	size_t at = fk_own_byte(clus);

	return (m->second[at] & ~m->own[at] & fk_own_mask(clus)) != 0;
}

/* Is any cluster of 64-cluster word @i other than FREE? */
static inline int fk_own_word_used(const struct fk_own_map *m, size_t i)
{
	return (get_le64(m->own + 8 * i) | get_le64(m->second + 8 * i)) != 0;
}

/* The clusters of 64-cluster word @i in state @s: bit k is cluster
 * 64 @i + k + 2. */
static inline uint64_t fk_own_state_word(const struct fk_own_map *m, size_t i,
					 unsigned s)
{
	uint64_t o = get_le64(m->own + 8 * i), c = get_le64(m->second + 8 * i);

	return (s & 2 ? o : ~o) & (s & 1 ? c : ~c);
}

/* The first cluster from @from on in state @s (not FREE), or UINT32_MAX:
 * a word at a time. */
uint32_t fk_own_next(const struct fk_own_map *m, uint32_t from, unsigned s);

/* Keep only the ALLOC clusters (as ALLOC); the rest become FREE. */
void fk_own_keep_alloc(struct fk_own_map *m);

#endif
