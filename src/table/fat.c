/*
 * fat.c: FAT entry access.  One ops table per width keeps the packing in
 * one place, with fat-links.h's loads and link-following loop, which the
 * checker inlines too; callers never see the width.  All access goes
 * through the sector cache, except fk_fat_scan(), which streams a whole
 * copy.
 */
#include "table/fat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/cache.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "table/fat-links.h"
#include "volume/volume.h"

#define SCAN_ENTS (1u << 18) /* entries read per scan block */
/* Entries decoded per callback: the values stay in the CPU's cache. */
#define DECODE_ENTS (1u << 14)
#define WALK_BATCH  128 /* links a chain walk takes per lookup, at most */

/* The reserved top 4 bits of a FAT32 entry (FAT32_MASK: the others). */
#define FAT32_KEEP 0xf0000000u

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
	int is_streamed;  /* large: scans skip holes and map the FAT */
	uint32_t eoc_min; /* values from here on end a chain */
	uint32_t bad;
	uint32_t mask;
	uint32_t keep;	       /* reserved bits a write keeps */
	uint32_t clean, noerr; /* FAT[1]: cleanly unmounted, no disk error */
};

/* Keep the neighbour's nibble. */
static uint32_t fat12_encode(uint32_t raw, uint32_t clus, uint32_t val)
{
	return clus & 1 ? (raw & 0x000f) | val << 4 : (raw & 0xf000) | val;
}

static uint32_t fat16_decode(uint32_t raw, uint32_t clus)
{
	(void)clus;
	return raw;
}

static uint32_t fat16_encode(uint32_t raw, uint32_t clus, uint32_t val)
{
	(void)raw;
	(void)clus;
	return val;
}

static uint32_t fat32_decode(uint32_t raw, uint32_t clus)
{
	(void)clus;
	return raw & FAT32_MASK;
}

static uint32_t fat32_encode(uint32_t raw, uint32_t clus, uint32_t val)
{
	(void)clus;
	return (raw & FAT32_KEEP) | (val & FAT32_MASK);
}

/* exFAT entries are all 32 bits: nothing reserved, nothing kept. */
static uint32_t exfat_decode(uint32_t raw, uint32_t clus)
{
	(void)clus;
	return raw;
}

static uint32_t exfat_encode(uint32_t raw, uint32_t clus, uint32_t val)
{
	(void)raw;
	(void)clus;
	return val;
}

/* ---- whole blocks ---------------------------------------------------------- */

/* Entry @i of a FAT12 block that starts at an even cluster. */
static uint32_t fat12_at(const unsigned char *p, uint32_t i)
{
	return fat12_decode(get_le16(p + i + i / 2), i);
}

static void fat12_decode_block(const unsigned char *p, uint32_t first,
			       uint32_t n, uint32_t *vals)
{
	uint32_t i;

	(void)first;
	for (i = 0; i < n; i++)
		vals[i] = fat12_at(p, i);
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

static uint32_t fat32_ent(const unsigned char *p)
{
	return fat32_decode(get_le32(p), 0);
}

static void fat16_decode_block(const unsigned char *restrict p, uint32_t first,
			       uint32_t n, uint32_t *restrict vals)
{
	(void)first;
	decode_groups(p, n, vals, 2, get_le16);
}

static void fat32_decode_block(const unsigned char *restrict p, uint32_t first,
			       uint32_t n, uint32_t *restrict vals)
{
	(void)first;
	decode_groups(p, n, vals, 4, fat32_ent);
}

static void exfat_decode_block(const unsigned char *restrict p, uint32_t first,
			       uint32_t n, uint32_t *restrict vals)
{
	(void)first;
	decode_groups(p, n, vals, 4, get_le32);
}

/* Are the @len bytes at @p all zero?  The first is, and each equals the
 * one before: libc's memcmp() is vectorized and stops at the first
 * difference, where a loop of ours took a load per 8 bytes (and
 * byte-wise get_le32() calls per entry were once the scan's bottleneck). */
static int is_zero(const unsigned char *p, size_t len)
{
	return !len || (!p[0] && !memcmp(p, p + 1, len - 1));
}

/* A map word with the low @m (1 to 64) bits set. */
static uint64_t all_bits(uint32_t m)
{
	return m == 64 ? ~(uint64_t)0 : ((uint64_t)1 << m) - 1;
}

/* Free bits of the @m (at most 64) entries held in @p, one width each. */
static uint64_t fat12_free_word(const unsigned char *p, uint32_t m,
				uint32_t *kept)
{
	uint64_t word = 0;
	uint32_t j;

	(void)kept;
	for (j = 0; j < m; j++)
		word |= (uint64_t)(fat12_at(p, j) == 0) << j;
	return word;
}

static uint64_t fat16_free_word(const unsigned char *p, uint32_t m,
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

static uint64_t fat32_free_word(const unsigned char *p, uint32_t m,
				uint32_t *kept)
{
	uint64_t word = 0;
	uint32_t j;

	if (is_zero(p, 4 * (size_t)m))
		return all_bits(m);
	for (j = 0; j < m; j++) {
		uint32_t raw = get_le32(p + 4 * j);
		uint32_t is_free = (raw & FAT32_MASK) == 0;

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

static uint32_t fat12_free_block(const unsigned char *p, uint32_t first,
				 uint32_t n, uint64_t *map, uint32_t *kept)
{
	return free_groups(p, first, n, map, kept, 96, fat12_free_word);
}

static uint32_t fat16_free_block(const unsigned char *p, uint32_t first,
				 uint32_t n, uint64_t *map, uint32_t *kept)
{
	return free_groups(p, first, n, map, kept, 128, fat16_free_word);
}

static uint32_t fat32_free_block(const unsigned char *p, uint32_t first,
				 uint32_t n, uint64_t *map, uint32_t *kept)
{
	return free_groups(p, first, n, map, kept, 256, fat32_free_word);
}

static uint64_t exfat_free_word(const unsigned char *p, uint32_t m,
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

static uint32_t exfat_free_block(const unsigned char *p, uint32_t first,
				 uint32_t n, uint64_t *map, uint32_t *kept)
{
	return free_groups(p, first, n, map, kept, 256, exfat_free_word);
}

static void fat16_store_block(unsigned char *p, uint32_t cnt, uint32_t val,
			      uint32_t step, int is_fresh)
{
	uint32_t k;

	(void)is_fresh;
	for (k = 0; k < cnt; k++, p += 2, val += step)
		put_le16(p, val);
}

static void fat32_store_block(unsigned char *p, uint32_t cnt, uint32_t val,
			      uint32_t step, int is_fresh)
{
	uint32_t k;

	if (is_fresh) {
		for (k = 0; k < cnt; k++, p += 4, val += step)
			put_le32(p, val);
		return;
	}
	for (k = 0; k < cnt; k++, p += 4, val += step)
		put_le32(p, (get_le32(p) & FAT32_KEEP) | val);
}

static void exfat_store_block(unsigned char *p, uint32_t cnt, uint32_t val,
			      uint32_t step, int is_fresh)
{
	uint32_t k;

	(void)is_fresh;
	for (k = 0; k < cnt; k++, p += 4, val += step)
		put_le32(p, val);
}

static const struct fat_ops fat12_ops = {
	.entry_off = fat12_off,
	.bits = 12,
	.load_len = 2,
	.decode = fat12_decode,
	.encode = fat12_encode,
	.decode_block = fat12_decode_block,
	.free_block = fat12_free_block,
	.store_block = NULL, /* entries straddle sectors; runs are short */
	.is_streamed = 0,    /* at most 6 KiB */
	.eoc_min = 0xff8,
	.bad = 0xff7,
	.mask = 0xfff,
};

static const struct fat_ops fat16_ops = {
	.entry_off = fat16_off,
	.bits = 16,
	.load_len = 2,
	.decode = fat16_decode,
	.encode = fat16_encode,
	.decode_block = fat16_decode_block,
	.free_block = fat16_free_block,
	.store_block = fat16_store_block,
	.is_streamed = 1,
	.eoc_min = 0xfff8,
	.bad = 0xfff7,
	.mask = 0xffff,
	.clean = 0x8000,
	.noerr = 0x4000,
};

static const struct fat_ops fat32_ops = {
	.entry_off = fat32_off,
	.bits = 32,
	.load_len = 4,
	.decode = fat32_decode,
	.encode = fat32_encode,
	.decode_block = fat32_decode_block,
	.free_block = fat32_free_block,
	.store_block = fat32_store_block,
	.is_streamed = 1,
	.eoc_min = 0x0ffffff8,
	.bad = 0x0ffffff7,
	.mask = FAT32_MASK,
	.keep = FAT32_KEEP,
	.clean = 0x08000000,
	.noerr = 0x04000000,
};

/*
 * exFAT (spec 4.1): 0xFFFFFFF7 bad, 0xFFFFFFFF the end of a chain; the
 * values between are neither (FK_ENT_RESERVED).  FAT[1] has no state
 * bits.  The free state of a cluster is the allocation bitmap's, not the
 * FAT's: a zero entry is "free" here only as a chain link.
 */
static const struct fat_ops exfat_ops = {
	.entry_off = fat32_off,
	.bits = 32,
	.load_len = 4,
	.decode = exfat_decode,
	.encode = exfat_encode,
	.decode_block = exfat_decode_block,
	.free_block = exfat_free_block,
	.store_block = exfat_store_block,
	.is_streamed = 1,
	.eoc_min = 0xffffffff,
	.bad = 0xfffffff7,
	.mask = 0xffffffff,
};

/* The only place that looks at the width. */
static const struct fat_ops *ops_of(const struct fk_geom *g)
{
	return g->type == FK_FAT12   ? &fat12_ops
	       : g->type == FK_FAT16 ? &fat16_ops
	       : g->type == FK_EXFAT ? &exfat_ops
				     : &fat32_ops;
}

enum fk_ent_class fk_fat_class(const struct fk_geom *g, uint32_t val)
{
	const struct fat_ops *ops = ops_of(g);

	if (val == 0)
		return FK_ENT_FREE;
	if (val >= ops->eoc_min)
		return FK_ENT_EOC;
	if (val == ops->bad)
		return FK_ENT_BAD;
	if (val == 1)
		return FK_ENT_RESERVED;
	/*
	 * A full FAT12 (4084 clusters) or FAT16 (65524) has data clusters up
	 * to 0xFF5 or 0xFFF5: links to them are links, as Linux and fsck.fat
	 * treat them.  Only past the last cluster is 0xFF0..0xFF6 reserved.
	 */
	if (val <= fk_clus_max(g))
		return FK_ENT_NEXT;
	if (val > ops->bad - 8)
		return FK_ENT_RESERVED; /* 0xFFF0..0xFFF6 and friends */
	return FK_ENT_RANGE;
}

void fk_fat_entry_secs(const struct fk_geom *g, uint32_t clus, uint32_t *first,
		       uint32_t *last)
{
	const struct fat_ops *ops = ops_of(g);
	uint64_t off = ops->entry_off(clus);

	*first = (uint32_t)(off / g->sec_len);
	*last = (uint32_t)((off + (ops->bits + 7) / 8 - 1) / g->sec_len);
}

uint32_t fk_fat_eoc(const struct fk_geom *g)
{
	return ops_of(g)->mask;
}

uint32_t fk_fat_bad(const struct fk_geom *g)
{
	return ops_of(g)->bad;
}

void fk_fat_reserved_judge(const struct fk_geom *g, uint32_t fat0,
			   uint32_t fat1, struct fk_fat_reserved *r)
{
	const struct fat_ops *ops = ops_of(g);
	/* fsck.fat's mark (FAT_EXTD): every bit above the low nibble, so a
	 * media byte's own high nibble too (0xF0 and 0xF8 to 0xFF all have
	 * it); what it writes over a bad FAT[0] is this mark and the BPB's
	 * media byte. */
	uint32_t ones = ops->mask & ~0xfu;

	r->want0 = ones | g->media;
	r->want1 = ops->mask;
	r->is_fat0_ones = (fat0 & ones) == ones;
	r->is_fat0_media = fat0 == r->want0;
	r->is_clean = !ops->clean || (fat1 & ops->clean);
	r->is_noerr = !ops->noerr || (fat1 & ops->noerr);
	r->is_fat1_eoc = (fat1 | ops->clean | ops->noerr) == ops->mask;
}

/* FAT[0] of copy @copy as stored, read past the cache (which holds the
 * read copy only). */
static int read_fat0(struct fk_volume *vol, uint32_t copy, uint32_t *fat0)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	unsigned char raw[4];
	uint64_t off = vol->g.fat_off +
		       (uint64_t)copy * vol->g.fat_secs * vol->g.sec_len;
	int err;

	if ((err = fk_device_read(vol->dev, off, raw, ops->load_len)))
		return err;
	*fat0 = ops->decode(ops->load_len == 4 ? get_le32(raw) : get_le16(raw),
			    0);
	return 0;
}

int fk_fat_judge_layout(struct fk_volume *vol, struct fk_diag *diag)
{
	struct fk_fat_reserved r;
	uint32_t c, fat0[2];
	int err;

	fk_fat_reserved_judge(&vol->g, 0, 0, &r); /* r.want0 for the line */
	if (!(err = fk_volume_judge(&vol->g, diag))) {
		/*
		 * One copy with its mark is a FAT with a damaged first entry
		 * (fsck.fat then uses that copy: a repair); none is FATs
		 * that are not where the BPB puts them, or not FATs at all.
		 * fk_volume_judge() allows two copies at most.
		 */
		for (c = 0; c < vol->g.nfats; c++) {
			if ((err = read_fat0(vol, c, &fat0[c])))
				return err;
			fk_fat_reserved_judge(&vol->g, fat0[c], 0, &r);
			if (r.is_fat0_ones)
				return 0;
		}
		err = FK_ECORRUPT;
		if (vol->g.nfats == 1)
			fk_diag_set(diag, NULL,
				    "implausible geometry: the FAT does not "
				    "begin with a media mark (FAT[0] is 0x%X, "
				    "expected 0x%X): it is not where the boot "
				    "sector puts it, or it is damaged",
				    fat0[0], r.want0);
		else
			fk_diag_set(diag, NULL,
				    "implausible geometry: no FAT copy begins "
				    "with a media mark (FAT[0] is 0x%X and "
				    "0x%X, expected 0x%X): the FATs are not "
				    "where the boot sector puts them, or both "
				    "are damaged",
				    fat0[0], fat0[1], r.want0);
	}
	if (err == FK_ECORRUPT)
		fk_diag_append(diag, err,
			       "; nothing is written to it (fsck.fat refuses "
			       "it too): copy the files off with mtools, or "
			       "restore the boot sector");
	return err;
}

int fk_fat_judge_read_copy(struct fk_volume *vol, struct fk_diag *diag)
{
	struct fk_fat_reserved r;
	uint32_t fat0;
	int err;

	if ((err = read_fat0(vol, vol->g.active_fat, &fat0)))
		return err;
	fk_fat_reserved_judge(&vol->g, fat0, 0, &r);
	if (r.is_fat0_ones)
		return 0;
	fk_diag_set(diag, NULL,
		    "FAT copy %u, the one read, lacks its media mark (FAT[0] "
		    "is 0x%X, expected 0x%X), and a write there would copy "
		    "that to every copy",
		    vol->g.active_fat + 1, fat0, r.want0);
	return FK_ECORRUPT;
}

/* Load the 2 or 4 bytes holding entry @clus (they may straddle sectors). */
static int load_raw(struct fk_volume *vol, uint32_t clus, uint32_t *raw)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	uint64_t off = ops->entry_off(clus);
	/* volume.c takes only a power of two: no division per entry. */
	unsigned shift = (unsigned)__builtin_ctz(vol->g.sec_len);
	uint32_t sec = (uint32_t)(off >> shift);
	uint32_t in = (uint32_t)(off & (vol->g.sec_len - 1));
	const unsigned char *data;
	uint32_t val = 0;
	unsigned i;
	int err;

	if (clus > fk_clus_max(&vol->g))
		return FK_ECORRUPT;
	/* Chain walks load one entry at a time: the common case is one
	 * cache lookup and one little-endian load. */
	if (in + ops->load_len <= vol->g.sec_len) {
		if ((err = fk_cache_get(vol->fat, sec, &data)))
			return err;
		*raw = ops->load_len == 4 ? get_le32(data + in)
					  : get_le16(data + in);
		return 0;
	}
	for (i = 0; i < ops->load_len; i++, in++) {
		if (in == vol->g.sec_len) {
			sec++;
			in = 0;
		}
		if ((i == 0 || in == 0) &&
		    (err = fk_cache_get(vol->fat, sec, &data)))
			return err;
		val |= (uint32_t)data[in] << 8 * i; /* little-endian */
	}
	*raw = val;
	return 0;
}

int fk_fat_get(struct fk_volume *vol, uint32_t clus, uint32_t *val)
{
	uint32_t raw;
	int err = load_raw(vol, clus, &raw);

	if (!err)
		*val = ops_of(&vol->g)->decode(raw, clus);
	return err;
}

/* The first cluster whose entry starts at byte @off of a copy or later:
 * entry c starts at byte floor(c * bits / 8).  Each width divides by a
 * constant: this runs for every chain the checker claims. */
static uint64_t clus_from(const struct fat_ops *ops, uint64_t off)
{
	return ops->bits == 12	 ? (off * 8 + 11) / 12
	       : ops->bits == 16 ? (off * 8 + 15) / 16
				 : (off * 8 + 31) / 32;
}

int fk_fat_links_span(struct fk_volume *vol, uint32_t clus,
		      struct fk_links_span *s)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	unsigned shift = (unsigned)__builtin_ctz(vol->g.sec_len);
	/* Values a walk goes on through: links that are links on every
	 * width (fk_fat_class() judges them, this only stops early). */
	uint32_t top = fk_clus_max(&vol->g) < ops->bad ? fk_clus_max(&vol->g)
						       : ops->bad - 1;
	const unsigned char *data;
	uint64_t off, lo, hi, c_lo, c_end;
	uint32_t first, nsecs;
	int err;

	if (clus > fk_clus_max(&vol->g))
		return FK_ECORRUPT;
	off = ops->entry_off(clus);
	if ((err = fk_cache_get_span(vol->fat, (uint32_t)(off >> shift), &data,
				     &first, &nsecs)))
		return err;
	lo = (uint64_t)first << shift;
	hi = lo + ((uint64_t)nsecs << shift);
	s->base = (uintptr_t)data - (uintptr_t)lo;
	s->type = vol->g.type;
	/* The clusters from 2 to @top whose entries lie whole in [lo, hi). */
	c_lo = clus_from(ops, lo);
	c_end = clus_from(ops, hi - ops->load_len + 1);
	if (c_lo < FK_FIRST_CLUS)
		c_lo = FK_FIRST_CLUS;
	if (c_end > (uint64_t)top + 1)
		c_end = (uint64_t)top + 1;
	s->lo = (uint32_t)c_lo;
	s->n = c_end > c_lo ? (uint32_t)(c_end - c_lo) : 0;
	return off + ops->load_len <= hi; /* a FAT12 entry may straddle */
}

/* fk_links_take for fk_fat_get_links(): every link, kept in order. */
static int keep_link(void *arg, uint32_t n, uint32_t clus, uint32_t val)
{
	uint32_t *vals = arg;

	(void)clus;
	vals[n] = val;
	return 1;
}

int fk_fat_get_links(struct fk_volume *vol, uint32_t clus, uint32_t *vals,
		     uint32_t max)
{
	struct fk_links_span s;
	struct fk_links_end end;
	uint32_t n;
	int err = fk_fat_links_span(vol, clus, &s);

	if (err < 0)
		return err;
	if (!err) {
		if ((err = fk_fat_get(vol, clus, vals)))
			return err;
		return 1;
	}
	/* The links before the last value, then the value that ended it. */
	n = fk_links_follow(&s, clus, max - 1, keep_link, vals, &end);
	vals[n] = end.val;
	return (int)n + 1;
}

/* Store the bytes of @raw for entry @clus, sector by sector. */
static int store_raw(struct fk_volume *vol, uint32_t clus, uint32_t raw)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	uint64_t off = ops->entry_off(clus);
	uint32_t sec = (uint32_t)(off / vol->g.sec_len);
	uint32_t in = (uint32_t)(off % vol->g.sec_len);
	unsigned char *data;
	unsigned i;
	int err;

	for (i = 0; i < ops->load_len; i++, in++) {
		if (in == vol->g.sec_len) {
			sec++;
			in = 0;
		}
		if ((i == 0 || in == 0) &&
		    (err = fk_cache_get_dirty(vol->fat, sec, &data)))
			return err;
		data[in] = (unsigned char)(raw >> 8 * i); /* little-endian */
	}
	return 0;
}

int fk_fat_put(struct fk_volume *vol, uint32_t clus, uint32_t val)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	uint32_t raw;
	int err;

	if ((err = load_raw(vol, clus, &raw)))
		return err;
	return store_raw(vol, clus, ops->encode(raw, clus, val & ops->mask));
}

/*
 * Fast path where entries never straddle sectors (16- and 32-bit): fill
 * whole sectors in place, one cache lookup per sector.  Entry clus + k
 * links to clus + k + 1 (@is_chain) or holds @next; a chain's last entry
 * holds @next.
 */
static int put_many(struct fk_volume *vol, uint32_t first, uint32_t nclus,
		    uint32_t next, int is_chain, int may_skip_read)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	uint32_t per_sec = vol->g.sec_len / ops->load_len;
	uint32_t clus = first, end = first + nclus;
	unsigned char *data;
	int err;

	while (clus < end) {
		uint32_t sec = clus / per_sec, i = clus % per_sec;
		uint32_t cnt =
			per_sec - i < end - clus ? per_sec - i : end - clus;
		/* A whole sector of free entries has nothing worth reading. */
		int is_fresh = may_skip_read && cnt == per_sec;
		unsigned char *p;

		if (is_fresh)
			err = fk_cache_get_fresh(vol->fat, sec, &data);
		else
			err = fk_cache_get_dirty(vol->fat, sec, &data);
		if (err)
			return err;
		p = data + (size_t)i * ops->load_len;
		if (is_chain)
			ops->store_block(p, cnt, clus + 1, 1, is_fresh);
		else
			ops->store_block(p, cnt, next, 0, is_fresh);
		clus += cnt;
		if (clus == end && is_chain) /* the last entry: @next */
			ops->store_block(p + (size_t)(cnt - 1) * ops->load_len,
					 1, next, 0, 0);
	}
	return 0;
}

static int put_range(struct fk_volume *vol, uint32_t first, uint32_t nclus,
		     uint32_t next, int is_chain, int may_skip_read)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	uint32_t i;
	int err;

	if (!nclus)
		return 0;
	if (first > fk_clus_max(&vol->g) ||
	    nclus - 1 > fk_clus_max(&vol->g) - first)
		return FK_ECORRUPT;
	next &= ops->mask; /* as fk_fat_put(): reserved bits are kept */
	if (ops->store_block)
		return put_many(vol, first, nclus, next, is_chain,
				may_skip_read);
	for (i = 0; i < nclus; i++) {
		uint32_t val = !is_chain       ? next
			       : i + 1 < nclus ? first + i + 1
					       : next;
		if ((err = fk_fat_put(vol, first + i, val)))
			return err;
	}
	return 0;
}

int fk_fat_fix_reserved(struct fk_volume *vol, int fix0, int fix1)
{
	struct fk_fat_reserved r;
	int err = 0;

	fk_fat_reserved_judge(&vol->g, 0, 0, &r);
	if (fix0)
		err = fk_fat_put(vol, 0, r.want0);
	if (!err && fix1)
		err = fk_fat_put(vol, 1, r.want1);
	return err;
}

int fk_fat_put_run(struct fk_volume *vol, uint32_t first, uint32_t nclus,
		   uint32_t next)
{
	return put_range(vol, first, nclus, next, 1, 0);
}

int fk_fat_put_free_run(struct fk_volume *vol, uint32_t first, uint32_t nclus,
			uint32_t next, int is_blank)
{
	return put_range(vol, first, nclus, next, 1, is_blank);
}

int fk_fat_fill(struct fk_volume *vol, uint32_t first, uint32_t nclus,
		uint32_t val)
{
	return put_range(vol, first, nclus, val, 0, 0);
}

/*
 * A walk that met cluster @seen again after @lam more links loops with
 * period @lam.  Find where: the first cluster of the cycle (walking from
 * @start and from @lam links further in step until they meet) and the
 * cluster whose link closes it.  Reads at most 2 mu + lam links, where mu
 * is the length of the part before the cycle.
 */
static int describe_loop(struct fk_volume *vol, uint32_t start, uint32_t lam,
			 struct fk_chain_info *info)
{
	uint32_t a = start, b = start, b_prev = 0, mu = 0, i;
	int err;

	for (i = 0; i < lam; i++, info->nlinks++) {
		b_prev = b;
		if ((err = fk_fat_get(vol, b, &b)))
			return err;
	}
	while (a != b) {
		b_prev = b;
		if ((err = fk_fat_get(vol, a, &a)) ||
		    (err = fk_fat_get(vol, b, &b)))
			return err;
		info->nlinks += 2;
		mu++;
	}
	info->nclus = mu + lam;
	info->last = b_prev;
	info->end_val = a;
	info->is_loop = 1;
	return 0;
}

int fk_chain_walk(struct fk_volume *vol, uint32_t start,
		  int (*fn)(void *arg, const struct fk_run *run), void *arg,
		  struct fk_chain_info *info)
{
	const struct fk_geom *g = &vol->g;
	struct fk_run run = {0, 0};
	uint32_t clus = start, val, saved = start, power = 1, lam = 1;
	uint32_t vals[WALK_BATCH], nvals = 0, at = 0; /* vals[at]: clus's */
	int err;

	memset(info, 0, sizeof(*info));
	info->end = fk_fat_class(g, start);
	info->end_val = start;
	/*
	 * An end mark as first cluster is no chain at all (fsck.fat: "start
	 * cluster beyond limit"); left as FK_ENT_EOC, callers would take it
	 * for a sound chain and list the file as empty.
	 */
	if (info->end == FK_ENT_EOC)
		info->end = FK_ENT_RANGE;
	if (info->end != FK_ENT_NEXT)
		return 0; /* 0: empty file; anything else: a bad start */
	for (;;) {
		/* A bitmap or up-case table of 2,000 clusters is a chain too:
		 * one cache lookup a sector of links, not one a link. */
		if (at == nvals) {
			if ((err = fk_fat_get_links(vol, clus, vals,
						    WALK_BATCH)) < 0)
				return err;
			nvals = (uint32_t)err;
			at = 0;
		}
		val = vals[at++];
		info->nlinks++;
		info->nclus++;
		info->last = clus;
		if (run.nclus && clus == run.first + run.nclus) {
			run.nclus++;
		} else {
			if (run.nclus && fn && (err = fn(arg, &run)))
				return err;
			run.first = clus;
			run.nclus = 1;
			info->nruns++;
		}
		info->end = fk_fat_class(g, val);
		info->end_val = val;
		if (info->end != FK_ENT_NEXT)
			break;
		/*
		 * Brent's cycle detection: @saved is the cluster reached
		 * after the last power of two links; meeting it again
		 * proves a loop of @lam links.  A loop is found within
		 * about 2 max(mu, lam) + lam links, whatever the volume's
		 * cluster count (counting to it cost seconds and a run per
		 * link on a large FAT32), in constant memory.
		 */
		if (val == saved) {
			if (run.nclus && fn && (err = fn(arg, &run)))
				return err;
			return describe_loop(vol, start, lam, info);
		}
		if (lam == power) {
			saved = val;
			power *= 2;
			lam = 0;
		}
		lam++;
		clus = val;
	}
	if (run.nclus && fn && (err = fn(arg, &run)))
		return err;
	return 0;
}

int fk_chain_error(const struct fk_chain_info *info, struct fk_diag *diag)
{
	if (info->is_no_first)
		fk_diag_set(diag, NULL,
			    "first cluster 0 with a non-zero length");
	else if (info->is_loop)
		fk_diag_set(diag, NULL,
			    "cluster chain loops: cluster %u links back to %u",
			    info->last, info->end_val);
	else if (info->end == FK_ENT_FREE)
		fk_diag_set(diag, NULL,
			    "cluster chain links to a free cluster after %u",
			    info->last);
	else if (info->end == FK_ENT_BAD)
		fk_diag_set(diag, NULL,
			    "cluster chain links to a bad cluster after %u",
			    info->last);
	else if (info->nclus == 0)
		fk_diag_set(diag, NULL, "first cluster %u is out of range",
			    info->end_val);
	else
		fk_diag_set(diag, NULL,
			    "cluster chain links to out-of-range cluster %u "
			    "after %u",
			    info->end_val, info->last);
	return FK_ECORRUPT;
}

/* ---- sequential scans ------------------------------------------------------ */

/*
 * How many entries from @first (a multiple of 64) the scan may take as
 * free without reading them, because they lie in a hole of a sparse image
 * (a freshly made one is mostly holes); 0 when @first is in data.  Else
 * *@data_end is where the data at @first ends, in bytes into the FAT.
 */
static int hole_ents(struct fk_volume *vol, const struct fat_ops *ops,
		     uint64_t copy_off, uint32_t first, uint32_t total,
		     uint32_t *skip, uint64_t *data_end)
{
	uint64_t from = ops->entry_off(first);
	uint64_t end = ops->entry_off(total - 1) + ops->load_len;
	uint64_t hole, data;
	int err;

	*skip = 0;
	if ((err = fk_device_extent(vol->dev, copy_off + from, end - from,
				    &hole, &data)))
		return err;
	if (hole == end - from)
		*skip = total - first;
	else /* whole groups of 64 (a 512-byte sector holds 2 or 4) */
		*skip = (uint32_t)(hole / ops->load_len) & ~63u;
	*data_end = from + hole + data;
	return 0;
}

/* What a scan does with each block of raw entries. */
struct scan_fns {
	/* Entries @first .. @first + @n - 1, held in @p: the @len bytes at
	 * @from into the copy (4 readable zero bytes follow, unless mapped). */
	int (*block)(void *arg, uint32_t first, uint32_t n,
		     const unsigned char *p, uint64_t from, size_t len);
	/* @n entries from @first lie in a hole: all free.  NULL: read holes
	 * like data (callers that compare copies must: a hole in one copy
	 * may be data in another). */
	int (*hole)(void *arg, uint32_t first, uint32_t n);
	/* Large FATs may be mapped rather than read: @block then gets no
	 * readable bytes past @len. */
	int can_map;
	/* The copy as stored, without the cache's patches (a comparison of
	 * copies). */
	int is_raw;
};

/* Bytes a scan block can span (SCAN_ENTS entries, fewer on a smaller FAT)
 * and the 4 zero bytes after it: a small volume's checker then peaks at
 * what its FAT needs, not at a megabyte.  A block spans at most
 * entry_off(n - 1) + load_len bytes; one more load_len of slack covers a
 * FAT12 block that starts on an odd entry. */
static size_t scan_buf_len(const struct fk_volume *vol)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	uint32_t total = fk_clus_max(&vol->g) + 1;
	uint32_t n = total < SCAN_ENTS ? total : SCAN_ENTS;

	return (size_t)ops->entry_off(n) + 2 * ops->load_len + 4;
}

/* Entries a decoded piece holds, at most. */
static size_t decode_ents(const struct fk_volume *vol)
{
	uint32_t total = fk_clus_max(&vol->g) + 1;

	return total < DECODE_ENTS ? total : DECODE_ENTS;
}

/*
 * The one scan loop: FAT copy @copy, entries @first (a multiple of 64) ..
 * @total - 1, in blocks of SCAN_ENTS, read sequentially straight from the
 * device.  Returns 0, a non-zero value from @fns, or -errno.  Memory: one
 * read buffer.
 */
static int scan_raw(struct fk_volume *vol, uint32_t copy, uint32_t first,
		    uint32_t total, const struct scan_fns *fns, void *arg)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	uint64_t fat_len = (uint64_t)vol->g.fat_secs * vol->g.sec_len;
	uint64_t copy_off = vol->g.fat_off + copy * fat_len;
	/* Patched sectors come from another copy: no hole or mapping of
	 * this one tells what they hold. */
	int is_patched = !fns->is_raw && copy == vol->g.active_fat &&
			 fk_cache_is_patched(vol->fat);
	int is_fast = fns->hole && ops->is_streamed && !is_patched;
	int is_mapped = fns->can_map && ops->is_streamed && !is_patched;
	unsigned char *buf = malloc(scan_buf_len(vol));
	uint64_t data_end = 0; /* the FAT is known to hold data up to here */
	int err = 0;

	if (!buf)
		return -ENOMEM;
	while (first < total && !err) {
		uint32_t n =
			total - first < SCAN_ENTS ? total - first : SCAN_ENTS;
		uint64_t from = ops->entry_off(first);
		uint64_t to = ops->entry_off(first + n - 1) + ops->load_len;
		const unsigned char *mapped;
		size_t len;

		if (is_fast && from >= data_end) {
			uint32_t skip;

			if ((err = hole_ents(vol, ops, copy_off, first, total,
					     &skip, &data_end)))
				break;
			if (skip) {
				err = fns->hole(arg, first, skip);
				first += skip;
				continue;
			}
		}
		if (is_fast && data_end - from < (uint64_t)n * ops->load_len) {
			/* Read only the data; the hole after it is skipped. */
			n = (uint32_t)((data_end - from + ops->load_len - 1) /
				       ops->load_len);
			n = (n + 63) & ~63u;
			if (n > total - first)
				n = total - first;
			to = ops->entry_off(first + n - 1) + ops->load_len;
		}
		if (to > fat_len) /* the last FAT12 entry's odd half byte */
			to = fat_len;
		len = (size_t)(to - from);
		/* Large FATs are read in place from the page cache. */
		if (is_mapped &&
		    !fk_device_map(vol->dev, copy_off + from, len, &mapped)) {
			err = fns->block(arg, first, n, mapped, from, len);
			fk_device_unmap(mapped, len);
			first += n;
			continue;
		}
		/* Only the bytes past the read can be stale. */
		memset(buf + len, 0, 4);
		if (!(err = fk_device_read(vol->dev, copy_off + from, buf,
					   len)) &&
		    !(is_patched &&
		      (err = fk_cache_patch_read(vol->fat, from, buf, len))))
			err = fns->block(arg, first, n, buf, from, len);
		first += n;
	}
	free(buf);
	return err;
}

struct free_scan {
	const struct fat_ops *ops;
	uint64_t *map;
	uint32_t nfree;
	uint32_t kept; /* raw bits of free entries, ORed */
};

static int free_block(void *arg, uint32_t first, uint32_t n,
		      const unsigned char *p, uint64_t from, size_t len)
{
	struct free_scan *fs = arg;

	(void)from;
	(void)len;
	fs->nfree += fs->ops->free_block(p, first, n, fs->map, &fs->kept);
	return 0;
}

/* Bits of @n free entries from @first (a multiple of 64): a hole. */
static int free_hole(void *arg, uint32_t first, uint32_t n)
{
	struct free_scan *fs = arg;
	uint32_t i;

	if (fs->map) {
		for (i = 0; i < n; i += 64)
			fs->map[(first + i) / 64] =
				all_bits(n - i < 64 ? n - i : 64);
		if (first == 0) /* clusters 0 and 1 hold no data */
			fs->map[0] &= ~(uint64_t)3;
	}
	if (first == 0)
		n -= n < 2 ? n : 2;
	fs->nfree += n;
	return 0;
}

int fk_fat_scan_free_range(struct fk_volume *vol, uint32_t copy, uint32_t first,
			   uint32_t n, uint64_t *map, uint32_t *nfree,
			   int *is_blank)
{
	static const struct scan_fns fns = {free_block, free_hole, 1, 0};
	struct free_scan fs = {ops_of(&vol->g), map, 0, 0};
	uint32_t total = fk_clus_max(&vol->g) + 1;
	int err;

	if (first % 64 || first > total)
		return -EINVAL;
	n = n < total - first ? n : total - first;
	err = scan_raw(vol, copy, first, first + n, &fns, &fs);
	*nfree = fs.nfree;
	if (is_blank)
		*is_blank = !err && !(fs.kept & fs.ops->keep);
	return err;
}

int fk_fat_scan_free(struct fk_volume *vol, uint32_t copy, uint64_t *map,
		     uint32_t *nfree, int *is_blank)
{
	return fk_fat_scan_free_range(vol, copy, 0, UINT32_MAX, map, nfree,
				      is_blank);
}

struct decode_scan {
	const struct fat_ops *ops;
	uint32_t *vals;
	int (*fn)(void *arg, uint32_t first, const uint32_t *vals, uint32_t n);
	int (*diff)(void *arg, uint32_t other, uint32_t sec);
	void *arg;
	/* fk_fat_scan_copies() only: */
	struct fk_volume *vol;
	uint32_t copy;
	unsigned char *other;	    /* a block of another copy */
	uint64_t *next_sec;	    /* per copy: sectors below are reported */
	const unsigned char **maps; /* per copy: the block mapped, or NULL */
};

static int decode_block(void *arg, uint32_t first, uint32_t n,
			const unsigned char *p, uint64_t from, size_t len)
{
	struct decode_scan *ds = arg;
	uint64_t at = ds->ops->entry_off(first);
	uint32_t done, m;
	int err;

	(void)from;
	(void)len;
	/* DECODE_ENTS is even: each piece starts at an even cluster. */
	for (done = 0; done < n; done += m) {
		m = n - done < DECODE_ENTS ? n - done : DECODE_ENTS;
		ds->ops->decode_block(
			p + (ds->ops->entry_off(first + done) - at),
			first + done, m, ds->vals);
		if ((err = ds->fn(ds->arg, first + done, ds->vals, m)))
			return err;
	}
	return 0;
}

int fk_fat_scan(struct fk_volume *vol, uint32_t copy,
		int (*fn)(void *arg, uint32_t first, const uint32_t *vals,
			  uint32_t n),
		void *arg)
{
	static const struct scan_fns fns = {decode_block, NULL, 1, 0};
	struct decode_scan ds = {ops_of(&vol->g),
				 NULL,
				 fn,
				 NULL,
				 arg,
				 vol,
				 copy,
				 NULL,
				 NULL,
				 NULL};
	int err;

	if (!(ds.vals = malloc(decode_ents(vol) * sizeof(*ds.vals))))
		return -ENOMEM;
	err = scan_raw(vol, copy, 0, fk_clus_max(&vol->g) + 1, &fns, &ds);
	free(ds.vals);
	return err;
}

int fk_fat_count_free(struct fk_volume *vol, uint32_t copy, uint32_t *nfree)
{
	return fk_fat_scan_free(vol, copy, NULL, nfree, NULL);
}

/*
 * Note each sector of copy @c that differs from the read copy in
 * [@from, @from + @len), once: sectors ascend, and a FAT12 block shares
 * its first byte with the block before.
 */
static int diff_sectors(const unsigned char *a, const unsigned char *b,
			uint64_t from, size_t len, uint32_t sec_len, uint32_t c,
			uint64_t *next_sec,
			int (*diff)(void *arg, uint32_t copy, uint32_t sec),
			void *arg)
{
	size_t i = 0;
	int err;

	if (!memcmp(a, b, len))
		return 0;
	while (i < len) {
		uint64_t sec = (from + i) / sec_len;

		if (a[i] == b[i] || sec < next_sec[c]) {
			i++;
			continue;
		}
		if ((err = diff(arg, c, (uint32_t)sec)))
			return err;
		next_sec[c] = sec + 1;
		i = (size_t)((sec + 1) * sec_len - from);
	}
	return 0;
}

/*
 * Every other copy's block is mapped: compare and decode a piece at a
 * time, so each piece of @p is read from the CPU's cache after the first
 * time; an all-zero piece (most of a FAT) is handed on undecoded.
 */
static int copies_pieces(struct decode_scan *ds, uint32_t first, uint32_t n,
			 const unsigned char *p, uint64_t from, size_t len)
{
	const struct fk_geom *g = &ds->vol->g;
	uint64_t at = ds->ops->entry_off(first);
	uint32_t done, m, c;
	int err;

	/* DECODE_ENTS is even: each piece starts at an even cluster, on a
	 * byte of its own. */
	for (done = 0; done < n; done += m) {
		size_t lo = (size_t)(ds->ops->entry_off(first + done) - at), hi;

		m = n - done < DECODE_ENTS ? n - done : DECODE_ENTS;
		hi = done + m == n
			     ? len
			     : (size_t)(ds->ops->entry_off(first + done + m) -
					at);
		for (c = 0; c < g->nfats; c++)
			if (ds->maps[c] &&
			    (err = diff_sectors(p + lo, ds->maps[c] + lo,
						from + lo, hi - lo, g->sec_len,
						c, ds->next_sec, ds->diff,
						ds->arg)))
				return err;
		if (is_zero(p + lo, hi - lo)) {
			err = ds->fn(ds->arg, first + done, NULL, m);
		} else {
			ds->ops->decode_block(p + lo, first + done, m,
					      ds->vals);
			err = ds->fn(ds->arg, first + done, ds->vals, m);
		}
		if (err)
			return err;
	}
	return 0;
}

/* Read the same bytes of every other copy and compare, then decode. */
static int copies_block(void *arg, uint32_t first, uint32_t n,
			const unsigned char *p, uint64_t from, size_t len)
{
	struct decode_scan *ds = arg;
	const struct fk_geom *g = &ds->vol->g;
	uint64_t copy_len = (uint64_t)g->fat_secs * g->sec_len;
	uint32_t c;
	int err = 0, is_mapped = ds->ops->is_streamed && ds->diff;

	/* In place from the page cache when @p was (no copying). */
	for (c = 0; c < g->nfats; c++) {
		ds->maps[c] = NULL;
		if (c == ds->copy || !is_mapped)
			continue;
		if (fk_device_map(ds->vol->dev,
				  g->fat_off + c * copy_len + from, len,
				  &ds->maps[c])) {
			ds->maps[c] = NULL;
			is_mapped = 0;
		}
	}
	if (is_mapped)
		err = copies_pieces(ds, first, n, p, from, len);
	for (c = 0; c < g->nfats; c++)
		if (ds->maps[c])
			fk_device_unmap(ds->maps[c], len);
	if (is_mapped)
		return err;
	for (c = 0; c < g->nfats && ds->diff; c++) {
		uint64_t off = g->fat_off + c * copy_len + from;

		if (c == ds->copy)
			continue;
		if ((err = fk_device_read(ds->vol->dev, off, ds->other, len)))
			return err;
		if ((err = diff_sectors(p, ds->other, from, len, g->sec_len, c,
					ds->next_sec, ds->diff, ds->arg)))
			return err;
	}
	return decode_block(arg, first, n, p, from, len);
}

int fk_fat_scan_copies(struct fk_volume *vol, uint32_t copy,
		       int (*fn)(void *arg, uint32_t first,
				 const uint32_t *vals, uint32_t n),
		       int (*diff)(void *arg, uint32_t copy, uint32_t sec),
		       void *arg)
{
	static const struct scan_fns fns = {copies_block, NULL, 1, 1};
	struct decode_scan ds = {ops_of(&vol->g),
				 NULL,
				 fn,
				 diff,
				 arg,
				 vol,
				 copy,
				 NULL,
				 NULL,
				 NULL};
	int err = -ENOMEM;

	ds.vals = malloc(decode_ents(vol) * sizeof(*ds.vals));
	ds.other = malloc(scan_buf_len(vol));
	ds.next_sec = calloc(vol->g.nfats, sizeof(*ds.next_sec));
	ds.maps = calloc(vol->g.nfats, sizeof(*ds.maps));
	if (ds.vals && ds.other && ds.next_sec && ds.maps)
		err = scan_raw(vol, copy, 0, fk_clus_max(&vol->g) + 1, &fns,
			       &ds);
	free(ds.vals);
	free(ds.other);
	free(ds.next_sec);
	free(ds.maps);
	return err;
}

/* ---- mirror judge ------------------------------------------------------- */

#define MIRROR_READ_LEN (1u << 20) /* bytes of another copy read at once */

/* Sectors @lo .. @hi of a FAT copy. */
struct sec_range {
	uint32_t lo, hi;
};

static int cmp_sec_range(const void *a, const void *b)
{
	const struct sec_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sort @r and merge ranges that overlap or touch; the new count. */
static size_t merge_sec_ranges(struct sec_range *r, size_t n)
{
	size_t i, out = 0;

	if (!n)
		return 0;
	qsort(r, n, sizeof(*r), cmp_sec_range);
	for (i = 1; i < n; i++) {
		if (r[i].lo <= r[out].hi + 1) {
			if (r[i].hi > r[out].hi)
				r[out].hi = r[i].hi;
		} else {
			r[++out] = r[i];
		}
	}
	return out + 1;
}

/*
 * The sectors holding entries of @sp (into @all) and, for a free span
 * written without reading, the sectors it fills whole (into @fresh, when
 * there are any; as put_many() decides).
 */
static void span_sectors(const struct fk_geom *g, const struct fat_ops *ops,
			 const struct fk_fat_span *sp, int is_blank,
			 struct sec_range *all, struct sec_range *fresh,
			 size_t *nfresh)
{
	uint64_t from = ops->entry_off(sp->first);
	uint64_t to = ops->entry_off(sp->first + sp->nclus - 1) + ops->load_len;
	uint32_t per_sec = g->sec_len / ops->load_len;
	uint32_t lo, hi;

	all->lo = (uint32_t)(from / g->sec_len);
	all->hi = (uint32_t)((to - 1) / g->sec_len);
	if (all->hi >= g->fat_secs) /* the last FAT12 entry's half byte */
		all->hi = g->fat_secs - 1;
	if (!sp->is_free || !is_blank || !ops->store_block)
		return;
	lo = (sp->first + per_sec - 1) / per_sec;
	hi = (sp->first + sp->nclus) / per_sec; /* one past */
	if (lo < hi) {
		fresh[*nfresh].lo = lo;
		fresh[(*nfresh)++].hi = hi - 1;
	}
}

static int is_zero_buf(const unsigned char *p, size_t len)
{
	return !len || (!p[0] && !memcmp(p, p + 1, len - 1));
}

/* Compare sectors @lo .. @lo + @nsecs - 1 of copy @c, in @buf, with the
 * read copy; the first that differs into *@bad. */
static int compare_secs(struct fk_volume *vol, const unsigned char *buf,
			uint32_t lo, uint32_t nsecs,
			const struct sec_range *fresh, size_t nfresh, size_t *f,
			uint32_t *bad)
{
	uint32_t sec_len = vol->g.sec_len, s;
	const unsigned char *data;
	int err;

	for (s = lo; s < lo + nsecs; s++) {
		const unsigned char *p = buf + (size_t)(s - lo) * sec_len;

		while (*f < nfresh && fresh[*f].hi < s)
			(*f)++;
		if (*f < nfresh && fresh[*f].lo <= s) {
			if (!is_zero_buf(p, sec_len))
				goto differ;
			continue;
		}
		if ((err = fk_cache_get(vol->fat, s, &data)))
			return err;
		if (memcmp(p, data, sec_len))
			goto differ;
	}
	return 0;
differ:
	*bad = s;
	return 1;
}

int fk_fat_judge_mirror(struct fk_volume *vol, const struct fk_fat_span *spans,
			size_t n, int is_blank, struct fk_diag *diag)
{
	const struct fk_geom *g = &vol->g;
	const struct fat_ops *ops = ops_of(g);
	uint64_t copy_len = (uint64_t)g->fat_secs * g->sec_len;
	uint32_t max_secs = MIRROR_READ_LEN / g->sec_len, bad = 0, c;
	struct sec_range *all = NULL, *fresh = NULL;
	unsigned char *buf = NULL;
	size_t nall = 0, nfresh = 0, i, f;
	int err = -ENOMEM;

	if (g->nfats < 2 || !g->is_mirrored)
		return 0; /* only the read copy is written */
	if (!max_secs)
		max_secs = 1;
	all = malloc((n ? n : 1) * sizeof(*all));
	fresh = malloc((n ? n : 1) * sizeof(*fresh));
	if (!all || !fresh)
		goto out;
	for (i = 0; i < n; i++) {
		if (!spans[i].nclus || spans[i].first > fk_clus_max(g) ||
		    spans[i].nclus - 1 > fk_clus_max(g) - spans[i].first)
			continue; /* the write itself refuses those */
		span_sectors(g, ops, &spans[i], is_blank, &all[nall++], fresh,
			     &nfresh);
	}
	nall = merge_sec_ranges(all, nall);
	nfresh = merge_sec_ranges(fresh, nfresh);
	err = 0;
	if (!nall)
		goto out;
	if (!(buf = malloc((size_t)max_secs * g->sec_len))) {
		err = -ENOMEM;
		goto out;
	}
	for (c = 0; c < g->nfats && !err; c++) {
		if (c == g->active_fat)
			continue;
		f = 0;
		for (i = 0; i < nall && !err; i++) {
			uint32_t lo = all[i].lo;

			while (lo <= all[i].hi && !err) {
				uint32_t cnt = all[i].hi - lo + 1 < max_secs
						       ? all[i].hi - lo + 1
						       : max_secs;

				err = fk_device_read(
					vol->dev,
					g->fat_off + c * copy_len +
						(uint64_t)lo * g->sec_len,
					buf, (size_t)cnt * g->sec_len);
				if (!err)
					err = compare_secs(vol, buf, lo, cnt,
							   fresh, nfresh, &f,
							   &bad);
				lo += cnt;
			}
		}
		if (err == 1) {
			fk_diag_set(diag, NULL,
				    "FAT copies %u and %u differ in sector %u "
				    "(of the FAT), which this run would write",
				    g->active_fat + 1, c + 1, bad);
			err = FK_ECORRUPT;
		}
	}
out:
	free(all);
	free(fresh);
	free(buf);
	return err;
}
