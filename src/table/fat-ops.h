/*
 * fat-ops.h: how entries are packed, one table per width (12, 16, 28 or
 * exFAT's 32 bits), for the files of the allocation table only (fat.c,
 * fat-scan.c); everyone else sees entries through fat.h.
 */
#ifndef FATKIT_FAT_OPS_H
#define FATKIT_FAT_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "volume/volume.h"

struct fat_ops {
	uint64_t (*entry_off)(uint32_t clus); /* offset in one FAT copy */
	unsigned bits;			      /* of an entry: 12, 16 or 32 */
	unsigned load_len;		      /* 2 or 4 bytes hold it */
	uint32_t (*decode)(uint32_t raw, uint32_t clus);
	uint32_t (*encode)(uint32_t raw, uint32_t clus, uint32_t val);
	/*
	 * Whole blocks, a plain loop per width with no call per entry (the
	 * scan is fatprealloc's hot path).  @p holds the entries from @first,
	 * which is even (a multiple of 64 for free_block).
	 */
	void (*decode_block)(const unsigned char *p, uint32_t first, uint32_t n,
			     uint32_t *vals);
	/* Sets the free bits of @map (if not NULL), returns how many are
	 * free, ORs the raw value of free entries into *@kept. */
	uint32_t (*free_block)(const unsigned char *p, uint32_t first,
			       uint32_t n, uint64_t *map, uint32_t *kept);
	/* Stores @cnt entries @val, @val + @step, ... keeping the reserved
	 * bits unless @is_fresh; NULL where entries straddle sectors. */
	void (*store_block)(unsigned char *p, uint32_t cnt, uint32_t val,
			    uint32_t step, int is_fresh);
	int is_streamed; /* large: scans skip holes and map the FAT */
	uint32_t bad;
	uint32_t mask;
	uint32_t keep;	       /* reserved bits a write keeps */
	uint32_t clean, noerr; /* FAT[1]: cleanly unmounted, no disk error */
};

/* 12 and 16 bits; 28 bits of 32 (the top 4 reserved); all 32 bits. */
extern const struct fat_ops fk_ops_w12, fk_ops_w16, fk_ops_w28, fk_ops_w32;

/* The only place that looks at the width: the geometry's entry width
 * and mask (the end-of-chain value, g->ent_eoc, is read where needed). */
static inline const struct fat_ops *ops_of(const struct fk_geom *g)
{
	return g->ent_bits == 12	   ? &fk_ops_w12
	       : g->ent_bits == 16	   ? &fk_ops_w16
	       : g->ent_mask != UINT32_MAX ? &fk_ops_w28
					   : &fk_ops_w32;
}

/* Are the @len bytes at @p all zero?  The first is, and each equals the
 * one before: libc's memcmp() is vectorized and stops at the first
 * difference, where a loop of ours took a load per 8 bytes (and
 * byte-wise get_le32() calls per entry were once the scan's bottleneck). */
static inline int is_zero(const unsigned char *p, size_t len)
{
	return !len || (!p[0] && !memcmp(p, p + 1, len - 1));
}

/* A map word with the low @m (1 to 64) bits set. */
static inline uint64_t all_bits(uint32_t m)
{
	return m == 64 ? ~(uint64_t)0 : ((uint64_t)1 << m) - 1;
}

#endif
