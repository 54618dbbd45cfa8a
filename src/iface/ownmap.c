/*
 * ownmap.c: the ownership map's planes (ownmap.h): set up, cleared, freed,
 * and the FAT checker's step that keeps only the lost clusters.
 */
#include "iface/ownmap.h"

#include <errno.h>
#include <string.h>

#include "lib/bigmem.h"

int fk_own_init(struct fk_own_map *m, uint32_t max, int has_second)
{
	memset(m, 0, sizeof(*m));
	/* Whole words, for the bitmap compare and the lost-cluster count. */
	m->nwords = ((size_t)max - FK_FIRST_CLUS + 1 + 63) / 64;
	m->own = fk_bigmem_alloc_sparse(m->nwords, 8);
	if (has_second)
		m->second = fk_bigmem_alloc_sparse(m->nwords, 8);
	if (!m->own || (has_second && !m->second)) {
		fk_own_free(m);
		return -ENOMEM;
	}
	if (has_second)
		m->own_end = (uint32_t)(m->nwords * 8);
	return 0;
}

void fk_own_free(struct fk_own_map *m)
{
	fk_bigmem_free(m->own, m->nwords, 8);
	fk_bigmem_free(m->second, m->nwords, 8);
	m->own = m->second = NULL;
}

void fk_own_clear(struct fk_own_map *m)
{
	memset(m->own, 0, m->own_end);
	if (m->second)
		memset(m->second, 0, m->nwords * 8);
	else
		m->own_end = 0;
}

void fk_own_keep_alloc(struct fk_own_map *m)
{
	size_t i;

	/* Words with nothing claimed are ALLOC or FREE already: written
	 * only where claimed, so that no page is touched for nothing. */
	for (i = 0; i < m->nwords; i++) {
		if (!get_le64(m->own + 8 * i))
			continue;
		put_le64(m->second + 8 * i,
			 fk_own_state_word(m, i, FK_OWN_ALLOC));
		memset(m->own + 8 * i, 0, 8);
	}
}

uint32_t fk_own_next(const struct fk_own_map *m, uint32_t from, unsigned s)
{
	size_t i = (size_t)(from - FK_FIRST_CLUS) / 64;
	uint64_t w;

	if (from < FK_FIRST_CLUS)
		return fk_own_next(m, FK_FIRST_CLUS, s);
	if (i >= m->nwords)
		return UINT32_MAX;
	/* The first word without the clusters before @from. */
	w = fk_own_state_word(m, i, s) & ~(uint64_t)0
						 << (from - FK_FIRST_CLUS) % 64;
	while (!w) {
		if (++i == m->nwords)
			return UINT32_MAX;
		w = fk_own_state_word(m, i, s);
	}
	return (uint32_t)(64 * i) + (uint32_t)__builtin_ctzll(w) +
	       FK_FIRST_CLUS;
}
