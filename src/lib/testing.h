/*
 * testing.h: core functions that only the unit tests call, kept out of the
 * headers the programs and the families use.  Each is defined in the
 * module named beside it.
 */
#ifndef FATKIT_TESTING_H
#define FATKIT_TESTING_H

#include <stddef.h>
#include <stdint.h>

struct fk_alloc;
struct fk_cache;

/*
 * alloc.c: an allocator over a free map given as plain data: bit c of
 * @map set when cluster c (2 .. @nclus + 1) is free, @hint where next-fit
 * starts (as FSInfo's next-free hint; an invalid one means cluster 2).
 * @map is copied.  Returns 0 or -ENOMEM.
 */
int fk_alloc_from_map(const uint64_t *map, uint32_t nclus, uint32_t hint,
		      struct fk_alloc **out);

/*
 * alloc.c: the allocator fk_alloc_take_used() makes, from a copy of
 * @used, which stays the caller's.  Returns 0 or -ENOMEM.
 */
int fk_alloc_from_used(const uint64_t *used, uint32_t nclus, uint32_t hint,
		       struct fk_alloc **out);

/* cache.c: the number of dirty sectors @cache now holds. */
size_t fk_cache_dirty(const struct fk_cache *cache);

#endif
