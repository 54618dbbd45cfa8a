/*
 * fat-ops.c: the packing of FAT entries, one ops table per width: an
 * entry's offset, decode and encode, the value ranges, and the plain
 * per-width loops that decode, count free or store whole blocks of
 * entries.  fat-links.h holds the offsets and loads that the checker's
 * link-following loop inlines too.
 */
#include "table/fat-ops.h"

#include "lib/endian.h"
#include "table/fat-links.h"

/* The reserved top 4 bits of a 28-bit entry in 32 (W28_MASK: the
 * others; FAT32's). */
#define W28_KEEP 0xf0000000u

/* Keep the neighbour's nibble. */
static uint32_t w12_encode(uint32_t raw, uint32_t clus, uint32_t val)
{
	return clus & 1 ? (raw & 0x000f) | val << 4 : (raw & 0xf000) | val;
}

static uint32_t w16_decode(uint32_t raw, uint32_t clus)
{
	(void)clus;
	return raw;
}

static uint32_t w16_encode(uint32_t raw, uint32_t clus, uint32_t val)
{
	(void)raw;
	(void)clus;
	return val;
}

static uint32_t w28_decode(uint32_t raw, uint32_t clus)
{
	(void)clus;
	return raw & W28_MASK;
}

static uint32_t w28_encode(uint32_t raw, uint32_t clus, uint32_t val)
{
	(void)clus;
	return (raw & W28_KEEP) | (val & W28_MASK);
}

/* exFAT entries are all 32 bits: nothing reserved, nothing kept. */
static uint32_t w32_decode(uint32_t raw, uint32_t clus)
{
	(void)clus;
	return raw;
}

static uint32_t w32_encode(uint32_t raw, uint32_t clus, uint32_t val)
{
	(void)raw;
	(void)clus;
	return val;
}

/* ---- whole blocks ---------------------------------------------------------- */

/* Entry @i of a FAT12 block that starts at an even cluster. */
static uint32_t w12_at(const unsigned char *p, uint32_t i)
{
	return w12_decode(get_le16(p + i + i / 2), i);
}

static void w12_decode_block(const unsigned char *p, uint32_t first, uint32_t n,
			     uint32_t *vals)
{
	uint32_t i;

	(void)first;
	for (i = 0; i < n; i++)
		vals[i] = w12_at(p, i);
}

/*
 * The one decoding loop of 16- and 32-bit widths: whole groups of 64 in
 * a loop of constant count that the compiler turns into vector code (the
 * checker decodes every entry of a FAT), the rest one by one.  Inlined
 * into each width's decode_block with its own load; their parameters are
 * restrict, as the values never overlap the bytes: else -O2 would not
 * vectorize (it takes no run-time overlap check).
 */
static inline void decode_groups(const unsigned char *restrict p, uint32_t n,
				 uint32_t *restrict vals, unsigned len,
				 uint32_t (*get)(const unsigned char *))
{
	uint32_t i;
	size_t j;

	for (i = 0; n - i >= 64; i += 64, p += 64 * len, vals += 64)
		for (j = 0; j < 64; j++)
			vals[j] = get(p + j * len);
	for (; i < n; i++, p += len)
		*vals++ = get(p);
}

static uint32_t w28_ent(const unsigned char *p)
{
	return w28_decode(get_le32(p), 0);
}

static void w16_decode_block(const unsigned char *restrict p, uint32_t first,
			     uint32_t n, uint32_t *restrict vals)
{
	(void)first;
	decode_groups(p, n, vals, 2, get_le16);
}

static void w28_decode_block(const unsigned char *restrict p, uint32_t first,
			     uint32_t n, uint32_t *restrict vals)
{
	(void)first;
	decode_groups(p, n, vals, 4, w28_ent);
}

static void w32_decode_block(const unsigned char *restrict p, uint32_t first,
			     uint32_t n, uint32_t *restrict vals)
{
	(void)first;
	decode_groups(p, n, vals, 4, get_le32);
}

/* Free bits of the @m (at most 64) entries held in @p, one width each. */
static uint64_t w12_free_word(const unsigned char *p, uint32_t m,
			      uint32_t *kept)
{
	uint64_t word = 0;
	uint32_t j;

	(void)kept;
	for (j = 0; j < m; j++)
		word |= (uint64_t)(w12_at(p, j) == 0) << j;
	return word;
}

static uint64_t w16_free_word(const unsigned char *p, uint32_t m,
			      uint32_t *kept)
{
	uint64_t word = 0;
	uint32_t j;

	(void)kept;
	/* Free space comes in long runs: a whole free group is one test. */
	if (is_zero(p, 2 * (size_t)m))
		return all_bits(m);
	for (j = 0; j < m; j++, p += 2)
		word |= (uint64_t)(get_le16(p) == 0) << j;
	return word;
}

static uint64_t w28_free_word(const unsigned char *p, uint32_t m,
			      uint32_t *kept)
{
	uint64_t word = 0;
	uint32_t j;

	if (is_zero(p, 4 * (size_t)m))
		return all_bits(m);
	for (j = 0; j < m; j++) {
		uint32_t raw = get_le32(p + 4 * j);
		uint32_t is_free = (raw & W28_MASK) == 0;

		word |= (uint64_t)is_free << j;
		*kept |= is_free ? raw : 0;
	}
	return word;
}

/*
 * The one free-bits loop: @n entries from @first (a multiple of 64, so
 * each group of 64 is one word of @map), a group of 64 taking @group_len
 * bytes of @p.  Inlined into each width's free_block with its own @word,
 * so no call per group is left.
 */
static inline uint32_t
free_groups(const unsigned char *p, uint32_t first, uint32_t n, uint64_t *map,
	    uint32_t *kept, size_t group_len,
	    uint64_t (*word_of)(const unsigned char *, uint32_t, uint32_t *))
{
	uint32_t i, nfree = 0;

	for (i = 0; i < n; i += 64, p += group_len) {
		uint32_t m = n - i < 64 ? n - i : 64;
		uint64_t word = word_of(p, m, kept);

		if (first + i == 0) /* clusters 0 and 1 hold no data */
			word &= ~(uint64_t)3;
		if (map)
			map[(first + i) / 64] = word;
		nfree += (uint32_t)__builtin_popcountll(word);
	}
	return nfree;
}

static uint32_t w12_free_block(const unsigned char *p, uint32_t first,
			       uint32_t n, uint64_t *map, uint32_t *kept)
{
	return free_groups(p, first, n, map, kept, 96, w12_free_word);
}

static uint32_t w16_free_block(const unsigned char *p, uint32_t first,
			       uint32_t n, uint64_t *map, uint32_t *kept)
{
	return free_groups(p, first, n, map, kept, 128, w16_free_word);
}

static uint32_t w28_free_block(const unsigned char *p, uint32_t first,
			       uint32_t n, uint64_t *map, uint32_t *kept)
{
	return free_groups(p, first, n, map, kept, 256, w28_free_word);
}

static uint64_t w32_free_word(const unsigned char *p, uint32_t m,
			      uint32_t *kept)
{
	uint64_t word = 0;
	uint32_t j;

	(void)kept;
	if (is_zero(p, 4 * (size_t)m))
		return all_bits(m);
	for (j = 0; j < m; j++)
		word |= (uint64_t)(get_le32(p + 4 * j) == 0) << j;
	return word;
}

static uint32_t w32_free_block(const unsigned char *p, uint32_t first,
			       uint32_t n, uint64_t *map, uint32_t *kept)
{
	return free_groups(p, first, n, map, kept, 256, w32_free_word);
}

static void w16_store_block(unsigned char *p, uint32_t cnt, uint32_t val,
			    uint32_t step, int is_fresh)
{
	uint32_t k;

	(void)is_fresh;
	for (k = 0; k < cnt; k++, p += 2, val += step)
		put_le16(p, val);
}

static void w28_store_block(unsigned char *p, uint32_t cnt, uint32_t val,
			    uint32_t step, int is_fresh)
{
	uint32_t k;

	if (is_fresh) {
		for (k = 0; k < cnt; k++, p += 4, val += step)
			put_le32(p, val);
		return;
	}
	for (k = 0; k < cnt; k++, p += 4, val += step)
		put_le32(p, (get_le32(p) & W28_KEEP) | val);
}

static void w32_store_block(unsigned char *p, uint32_t cnt, uint32_t val,
			    uint32_t step, int is_fresh)
{
	uint32_t k;

	(void)is_fresh;
	for (k = 0; k < cnt; k++, p += 4, val += step)
		put_le32(p, val);
}

const struct fat_ops fk_ops_w12 = {
	.entry_off = w12_off,
	.bits = 12,
	.load_len = 2,
	.decode = w12_decode,
	.encode = w12_encode,
	.decode_block = w12_decode_block,
	.free_block = w12_free_block,
	.store_block = NULL, /* entries straddle sectors; runs are short */
	.is_streamed = 0,    /* at most 6 KiB */
	.bad = 0xff7,
	.mask = 0xfff,
};

const struct fat_ops fk_ops_w16 = {
	.entry_off = w16_off,
	.bits = 16,
	.load_len = 2,
	.decode = w16_decode,
	.encode = w16_encode,
	.decode_block = w16_decode_block,
	.free_block = w16_free_block,
	.store_block = w16_store_block,
	.is_streamed = 1,
	.bad = 0xfff7,
	.mask = 0xffff,
	.clean = 0x8000,
	.noerr = 0x4000,
};

const struct fat_ops fk_ops_w28 = {
	.entry_off = w32_off,
	.bits = 32,
	.load_len = 4,
	.decode = w28_decode,
	.encode = w28_encode,
	.decode_block = w28_decode_block,
	.free_block = w28_free_block,
	.store_block = w28_store_block,
	.is_streamed = 1,
	.bad = 0x0ffffff7,
	.mask = W28_MASK,
	.keep = W28_KEEP,
	.clean = 0x08000000,
	.noerr = 0x04000000,
};

/*
 * exFAT (spec 4.1): 0xFFFFFFF7 bad, 0xFFFFFFFF the end of a chain; the
 * values between are neither (FK_ENT_RESERVED).  FAT[1] has no state
 * bits.  The free state of a cluster is the allocation bitmap's, not the
 * FAT's: a zero entry is "free" here only as a chain link.
 */
const struct fat_ops fk_ops_w32 = {
	.entry_off = w32_off,
	.bits = 32,
	.load_len = 4,
	.decode = w32_decode,
	.encode = w32_encode,
	.decode_block = w32_decode_block,
	.free_block = w32_free_block,
	.store_block = w32_store_block,
	.is_streamed = 1,
	.bad = 0xfffffff7,
	.mask = 0xffffffff,
};
