/*
 * exfat-prealloc-test.h: the exFAT writer's entry-slot finder, opened to
 * the unit tests (tests/unit/test_exfat_slots.c) and to nothing else.
 * fatprealloc reaches the same code through fk_exfat_prealloc_family; these
 * run it on a directory laid out in memory, so the tests can place deleted
 * runs, cluster ends and non-adjacent clusters exactly.
 */
#ifndef FATKIT_EXFAT_PREALLOC_TEST_H
#define FATKIT_EXFAT_PREALLOC_TEST_H

#include <stdint.h>

struct fk_alloc;
struct fk_diag;
struct fk_exfat_slots;
struct fk_geom;

/*
 * A directory of @nclus clusters (@clus, in chain order) of @g's cluster
 * size, holding @ents (@nclus * clus_len bytes, entries as on disk), as
 * fatprealloc holds one after reading it; clusters it grows by come from
 * @alloc, which stays the caller's and must outlive it.  Only @g's
 * sec_len, clus_secs and clus_len are used.  Returns 0 or -ENOMEM
 * (entries after the end marker are judged by fk_exfat_slots_take()).
 */
int fk_exfat_slots_open(const struct fk_geom *g, struct fk_alloc *alloc,
			const uint32_t *clus, uint32_t nclus,
			const unsigned char *ents, struct fk_exfat_slots **out,
			struct fk_diag *diag);
void fk_exfat_slots_close(struct fk_exfat_slots *s);

/* Take @n free slots for a new set, growing the directory as fatprealloc
 * would; *@idx is the first.  Returns 0, -ENOSPC, FK_ECORRUPT (an entry
 * after the end marker among the slots or the one after them: @diag says
 * so) or -ENOMEM. */
int fk_exfat_slots_take(struct fk_exfat_slots *s, uint32_t n, uint32_t *idx,
			struct fk_diag *diag);

/* Would @n entries at @idx span clusters that are not adjacent on disk? */
int fk_exfat_slots_is_split(const struct fk_exfat_slots *s, uint32_t idx,
			    uint32_t n);

/*
 * The directory now: its entries (returned), clusters and the first slot
 * of the free run at its end.  Borrowed until the next call on @s.
 */
const unsigned char *fk_exfat_slots_dir(const struct fk_exfat_slots *s,
					const uint32_t **clus, uint32_t *nclus,
					uint32_t *end_idx);

#endif
