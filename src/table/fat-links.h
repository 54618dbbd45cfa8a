/*
 * fat-links.h: following a chain through FAT bytes in memory, one loop
 * per entry width, inlined into each caller together with the caller's
 * own judgement of each cluster.  For fat.c and the checker, which
 * follows every chain of a volume and claims each cluster as it goes: the
 * load of an entry is the step a walk waits for, and the caller's work on
 * the cluster hides in its shadow.  How entries are packed is known here
 * and in fat-ops.c (which includes this, as fat.c does); the checker
 * includes it only to instantiate the loop, and everything else it knows
 * of entries is fat.h's.
 */
#ifndef FATKIT_FAT_LINKS_H
#define FATKIT_FAT_LINKS_H

#include <stdint.h>

#include "lib/endian.h"
#include "volume/volume.h"

/* FAT32 entries are 28 bits; the top 4 are reserved and preserved. */
#define W28_MASK 0x0fffffffu

/* Offset of entry @clus in one FAT copy. */
static inline uint64_t w12_off(uint32_t clus)
{
	return (uint64_t)clus + clus / 2;
}

static inline uint64_t w16_off(uint32_t clus)
{
	return (uint64_t)clus * 2;
}

static inline uint64_t w32_off(uint32_t clus)
{
	return (uint64_t)clus * 4;
}

/* Two FAT12 entries share a byte: odd ones hold the high 12 bits. */
static inline uint32_t w12_decode(uint32_t raw, uint32_t clus)
{
	return clus & 1 ? raw >> 4 : raw & 0x0fff;
}

/* Entry @clus, whose bytes start at @p. */
static inline uint32_t w12_get(const unsigned char *p, uint32_t clus)
{
	return w12_decode(get_le16(p), clus);
}

static inline uint32_t w16_get(const unsigned char *p, uint32_t clus)
{
	(void)clus;
	return get_le16(p);
}

/* A 32-bit entry as stored, FAT32's reserved top 4 bits too, which
 * fk_links_walk() masks off (its @mask). */
static inline uint32_t w32_get(const unsigned char *p, uint32_t clus)
{
	(void)clus;
	return get_le32(p);
}

/* FAT bytes of the read copy in memory: what one cache lookup serves
 * (fk_fat_links_span()). */
struct fk_links_span {
	/* The bytes' address less their offset in the copy, as an integer
	 * (a pointer before the bytes would be undefined): the entry of a
	 * cluster is at @base plus its offset, one addition. */
	uintptr_t base;
	/* Clusters @lo .. @lo + @n - 1 have their entries held whole and
	 * are links on every width (the other values are for
	 * fk_fat_class() to judge): one comparison says if a walk goes on
	 * to a value. */
	uint32_t lo, n;
	uint32_t bits, mask; /* the geometry's ent_bits and ent_mask */
};

/*
 * The span of the read copy that holds entry @clus, by one lookup of the
 * FAT cache (fk_cache_get_span()).  Returns 1, 0 when the entry is not
 * held whole (a FAT12 entry straddles the span's end: fk_fat_get() reads
 * it), FK_ECORRUPT (@clus is past the last cluster) or -errno.
 */
int fk_fat_links_span(struct fk_volume *vol, uint32_t clus,
		      struct fk_links_span *s);

/* Where a walk through a span stopped. */
struct fk_links_end {
	uint32_t clus; /* the cluster not taken */
	uint32_t val;  /* its entry */
	uint32_t prev; /* the last cluster taken, if any */
};

/*
 * The caller's judgement of cluster @clus (the walk's @n-th), whose entry
 * @val is a link held in the span: nonzero takes it and goes on to @val.
 * Inlined: a constant function the caller passes.
 */
typedef int fk_links_take(void *arg, uint32_t n, uint32_t clus, uint32_t val);

/*
 * The one link-following loop, per width its own offset and load.  The
 * load is the step each link waits for, so nothing else is between it
 * and the next: a FAT32 entry is compared as stored, and only one with
 * its reserved bits set (larger than any link) is masked (@mask) on a
 * branch of its own.  The span's fields are copied to locals: @take's
 * stores may alias them.
 */
static inline uint32_t
fk_links_walk(const struct fk_links_span *s, uint32_t clus, uint32_t max,
	      fk_links_take *take, void *arg, struct fk_links_end *end,
	      uint64_t (*off_of)(uint32_t),
	      uint32_t (*get)(const unsigned char *, uint32_t), uint32_t mask)
{
	uintptr_t base = s->base;
	uint32_t lo = s->lo, nheld = s->n, n = 0, val, prev = 0;

	for (;;) {
		uintptr_t at = base + (uintptr_t)off_of(clus);

		val = get((const unsigned char *)at, clus);
		/* Going on is the common case: laid out straight. */
		if (__builtin_expect(n == max || val - lo >= nheld, 0)) {
			if (n == max || (val & mask) - lo >= nheld)
				break;
			val &= mask;
		}
		if (__builtin_expect(!take(arg, n, clus, val), 0))
			break;
		n++;
		prev = clus;
		clus = val;
	}
	end->clus = clus;
	end->val = val & mask;
	end->prev = prev;
	return n;
}

/*
 * Follow the chain from @clus (its entry held in @s) while each entry is
 * a link held in @s and @take takes its cluster, at most @max clusters.
 * Returns how many were taken; @end says where it stopped, with the
 * entry of @end->clus loaded (a link or not, in @s or not).
 */
static inline uint32_t fk_links_follow(const struct fk_links_span *s,
				       uint32_t clus, uint32_t max,
				       fk_links_take *take, void *arg,
				       struct fk_links_end *end)
{
	/* Each width its own loop, with a constant mask. */
	if (s->bits == 12)
		return fk_links_walk(s, clus, max, take, arg, end, w12_off,
				     w12_get, UINT32_MAX);
	if (s->bits == 16)
		return fk_links_walk(s, clus, max, take, arg, end, w16_off,
				     w16_get, UINT32_MAX);
	if (s->mask == UINT32_MAX)
		return fk_links_walk(s, clus, max, take, arg, end, w32_off,
				     w32_get, UINT32_MAX);
	return fk_links_walk(s, clus, max, take, arg, end, w32_off, w32_get,
			     W28_MASK);
}

#endif
