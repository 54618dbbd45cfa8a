/*
 * fat.c: FAT entry access.  One ops table per width keeps the packing in
 * one place; callers never see the width.  All access goes through the
 * sector cache, except fk_fat_scan(), which streams a whole copy.
 */
#include "fat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "diag.h"
#include "endian.h"
#include "volume.h"

#define SCAN_ENTS (1u << 18) /* entries decoded per scan block */

struct fat_ops {
	uint64_t (*entry_off)(uint32_t clus); /* offset in one FAT copy */
	unsigned load_len;		      /* 2 or 4 bytes hold it */
	uint32_t (*decode)(uint32_t raw, uint32_t clus);
	uint32_t (*encode)(uint32_t raw, uint32_t clus, uint32_t val);
	uint32_t eoc_min; /* values from here on end a chain */
	uint32_t bad;
	uint32_t mask;
};

static uint64_t fat12_off(uint32_t clus)
{
	return (uint64_t)clus + clus / 2;
}

static uint64_t fat16_off(uint32_t clus)
{
	return (uint64_t)clus * 2;
}

static uint64_t fat32_off(uint32_t clus)
{
	return (uint64_t)clus * 4;
}

/* Two FAT12 entries share a byte: odd ones hold the high 12 bits. */
static uint32_t fat12_decode(uint32_t raw, uint32_t clus)
{
	return clus & 1 ? raw >> 4 : raw & 0x0fff;
}

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

/* FAT32 entries are 28 bits; the top 4 are reserved and preserved. */
static uint32_t fat32_decode(uint32_t raw, uint32_t clus)
{
	(void)clus;
	return raw & 0x0fffffff;
}

static uint32_t fat32_encode(uint32_t raw, uint32_t clus, uint32_t val)
{
	(void)clus;
	return (raw & 0xf0000000) | (val & 0x0fffffff);
}

static const struct fat_ops fat12_ops = {
	fat12_off, 2, fat12_decode, fat12_encode, 0xff8, 0xff7, 0xfff};
static const struct fat_ops fat16_ops = {
	fat16_off, 2, fat16_decode, fat16_encode, 0xfff8, 0xfff7, 0xffff};
static const struct fat_ops fat32_ops = {fat32_off,    4,	   fat32_decode,
					 fat32_encode, 0x0ffffff8, 0x0ffffff7,
					 0x0fffffff};

static const struct fat_ops *ops_of(const struct fk_geom *g)
{
	return g->type == FK_FAT12   ? &fat12_ops
	       : g->type == FK_FAT16 ? &fat16_ops
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

uint32_t fk_fat_eoc(const struct fk_geom *g)
{
	return ops_of(g)->mask;
}

uint32_t fk_fat_bad(const struct fk_geom *g)
{
	return ops_of(g)->bad;
}

/* Load the 2 or 4 bytes holding entry @clus (they may straddle sectors). */
static int load_raw(struct fk_volume *vol, uint32_t clus, uint32_t *raw)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	uint64_t off = ops->entry_off(clus);
	uint32_t sec = (uint32_t)(off / vol->g.sec_len);
	uint32_t in = (uint32_t)(off % vol->g.sec_len);
	unsigned char b[4];
	const unsigned char *data;
	unsigned i;
	int err;

	if (clus > fk_clus_max(&vol->g))
		return FK_ECORRUPT;
	for (i = 0; i < ops->load_len; i++, in++) {
		if (in == vol->g.sec_len) {
			sec++;
			in = 0;
		}
		if ((i == 0 || in == 0) &&
		    (err = fk_cache_get(vol->fat, sec, &data)))
			return err;
		b[i] = data[in];
	}
	*raw = ops->load_len == 2 ? get_le16(b) : get_le32(b);
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

/* Store the bytes of @raw for entry @clus, sector by sector. */
static int store_raw(struct fk_volume *vol, uint32_t clus, uint32_t raw)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	uint64_t off = ops->entry_off(clus);
	uint32_t sec = (uint32_t)(off / vol->g.sec_len);
	uint32_t in = (uint32_t)(off % vol->g.sec_len);
	unsigned char b[4], *data;
	unsigned i;
	int err;

	if (ops->load_len == 2)
		put_le16(b, raw);
	else
		put_le32(b, raw);
	for (i = 0; i < ops->load_len; i++, in++) {
		if (in == vol->g.sec_len) {
			sec++;
			in = 0;
		}
		if ((i == 0 || in == 0) &&
		    (err = fk_cache_get_dirty(vol->fat, sec, &data)))
			return err;
		data[in] = b[i];
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
 * Fast path for 16- and 32-bit entries: fill whole sectors in place.
 * @val_of gives the value of each entry.  FAT12 takes the generic path
 * (its entries straddle sectors and a run is rarely long).
 */
static int put_many(struct fk_volume *vol, uint32_t first, uint32_t nclus,
		    uint32_t next, int is_chain, int may_skip_read)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	uint32_t per_sec = vol->g.sec_len / ops->load_len;
	uint32_t clus = first, end = first + nclus;
	unsigned char *data;
	int err;

	next &= ops->mask; /* as fk_fat_put(): FAT32 keeps its top 4 bits */
	while (clus < end) {
		uint32_t sec = clus / per_sec, i = clus % per_sec;
		uint32_t k, cnt = per_sec - i < end - clus ? per_sec - i
							   : end - clus;
		unsigned char *p;

		/* A whole sector of free entries has nothing worth reading. */
		if (may_skip_read && cnt == per_sec)
			err = fk_cache_get_fresh(vol->fat, sec, &data);
		else
			err = fk_cache_get_dirty(vol->fat, sec, &data);
		if (err)
			return err;
		/* Entry clus + k links to clus + k + 1, or holds @next. */
		p = data + (size_t)i * ops->load_len;
		if (may_skip_read && cnt == per_sec && ops->load_len == 4) {
			for (k = 0; k < cnt; k++, p += 4)
				put_le32(p, is_chain ? clus + k + 1 : next);
		} else if (ops->load_len == 2) {
			for (k = 0; k < cnt; k++, p += 2)
				put_le16(p, is_chain ? clus + k + 1 : next);
		} else {
			for (k = 0; k < cnt; k++, p += 4)
				put_le32(p, (get_le32(p) & 0xf0000000) |
						    (is_chain ? clus + k + 1
							      : next));
		}
		clus += cnt;
		if (clus == end && is_chain) { /* the last entry: @next */
			p -= ops->load_len;
			if (ops->load_len == 2)
				put_le16(p, next);
			else
				put_le32(p, (get_le32(p) & 0xf0000000) | next);
		}
	}
	return 0;
}

static int put_range(struct fk_volume *vol, uint32_t first, uint32_t nclus,
		     uint32_t next, int is_chain, int may_skip_read)
{
	uint32_t i;
	int err;

	if (!nclus)
		return 0;
	if (first > fk_clus_max(&vol->g) ||
	    nclus - 1 > fk_clus_max(&vol->g) - first)
		return FK_ECORRUPT;
	if (vol->g.type != FK_FAT12)
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

int fk_fat_put_run(struct fk_volume *vol, uint32_t first, uint32_t nclus,
		   uint32_t next)
{
	return put_range(vol, first, nclus, next, 1, 0);
}

int fk_fat_put_free_run(struct fk_volume *vol, uint32_t first, uint32_t nclus,
			uint32_t next)
{
	int may_skip = vol->g.type == FK_FAT16 ||
		       (vol->g.type == FK_FAT32 && vol->is_free_top_clear);

	return put_range(vol, first, nclus, next, 1, may_skip);
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
		if ((err = fk_fat_get(vol, clus, &val)))
			return err;
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
	if (info->is_loop)
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

/* Decode @n entries from @first out of raw FAT bytes @buf at @buf_off. */
static void decode_block(const struct fat_ops *ops, const unsigned char *buf,
			 uint64_t buf_off, uint32_t first, uint32_t n,
			 uint32_t *vals)
{
	const unsigned char *p = buf + (ops->entry_off(first) - buf_off);
	uint32_t i;

	/* Aligned 16- and 32-bit entries: a plain loop, no call per entry. */
	if (ops == &fat32_ops) {
		for (i = 0; i < n; i++, p += 4)
			vals[i] = get_le32(p) & 0x0fffffff;
		return;
	}
	if (ops == &fat16_ops) {
		for (i = 0; i < n; i++, p += 2)
			vals[i] = get_le16(p);
		return;
	}
	for (i = 0; i < n; i++) {
		uint32_t clus = first + i;
		uint32_t raw;

		p = buf + (ops->entry_off(clus) - buf_off);
		raw = ops->load_len == 2 ? get_le16(p) : get_le32(p);
		vals[i] = ops->decode(raw, clus);
	}
}

/* Are the @len bytes at @p all zero?  Eight bytes a load: byte-wise
 * get_le32() calls per entry were the scan's bottleneck. */
static int is_zero(const unsigned char *p, size_t len)
{
	uint64_t any = 0, w;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		any |= w;
	}
	for (; i < len; i++)
		any |= p[i];
	return !any;
}

/* A map word with the low @m (1 to 64) bits set. */
static uint64_t all_bits(uint32_t m)
{
	return m == 64 ? ~(uint64_t)0 : ((uint64_t)1 << m) - 1;
}

/* Free bits of the @m (at most 64) 16-bit entries held in @p. */
static uint64_t free_word16(const unsigned char *p, uint32_t m)
{
	uint64_t word = 0;
	uint32_t j;

	/* Free space comes in long runs: a whole free group is one test. */
	if (is_zero(p, 2 * (size_t)m))
		return all_bits(m);
	for (j = 0; j < m; j++, p += 2)
		word |= (uint64_t)(get_le16(p) == 0) << j;
	return word;
}

/* The same for 32-bit entries, ORing the high bits of free ones into
 * *@top_bits. */
static uint64_t free_word32(const unsigned char *p, uint32_t m,
			    uint32_t *top_bits)
{
	uint64_t word = 0;
	uint32_t j;

	if (is_zero(p, 4 * (size_t)m))
		return all_bits(m);
	for (j = 0; j < m; j++) {
		uint32_t raw = get_le32(p + 4 * j);
		uint32_t is_free = (raw & 0x0fffffff) == 0;

		word |= (uint64_t)is_free << j;
		*top_bits |= is_free ? raw : 0;
	}
	return word;
}

/*
 * Free bits of @n entries from @first (a multiple of 64, so each group of
 * 64 entries is one word of @map) held in @p, a block read from the FAT,
 * or for FAT12 decoded into @vals.
 */
static void free_bits(const struct fat_ops *ops, const unsigned char *p,
		      const uint32_t *vals, uint32_t first, uint32_t n,
		      uint64_t *map, uint32_t *nfree, uint32_t *top_bits)
{
	uint32_t i, j;

	for (i = 0; i < n; i += 64) {
		uint32_t m = n - i < 64 ? n - i : 64;
		uint64_t word = 0;

		if (vals) { /* FAT12, decoded */
			for (j = 0; j < m; j++)
				word |= (uint64_t)(vals[i + j] == 0) << j;
		} else if (ops->load_len == 2) {
			word = free_word16(p + 2 * (size_t)i, m);
		} else {
			word = free_word32(p + 4 * (size_t)i, m, top_bits);
		}
		if (first + i == 0) /* clusters 0 and 1 hold no data */
			word &= ~(uint64_t)3;
		map[(first + i) / 64] = word;
		*nfree += (uint32_t)__builtin_popcountll(word);
	}
}

/* Bits of @n free entries from @first (a multiple of 64): a hole. */
static void free_all(uint32_t first, uint32_t n, uint64_t *map, uint32_t *nfree)
{
	uint32_t i;

	for (i = 0; i < n; i += 64)
		map[(first + i) / 64] = all_bits(n - i < 64 ? n - i : 64);
	if (first == 0) { /* clusters 0 and 1 hold no data */
		map[0] &= ~(uint64_t)3;
		n -= n < 2 ? n : 2;
	}
	*nfree += n;
}

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

int fk_fat_scan_free(struct fk_volume *vol, uint32_t copy, uint64_t *map,
		     uint32_t *nfree)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	uint64_t copy_off = vol->g.fat_off +
			    (uint64_t)copy * vol->g.fat_secs * vol->g.sec_len;
	uint64_t fat_len = (uint64_t)vol->g.fat_secs * vol->g.sec_len;
	uint32_t total = fk_clus_max(&vol->g) + 1, first = 0, top_bits = 0;
	unsigned char *buf = malloc((size_t)SCAN_ENTS * 4 + 4);
	uint32_t *vals = NULL;
	uint64_t data_end = 0; /* the FAT is known to hold data up to here */
	int err = 0;

	*nfree = 0;
	if (ops == &fat12_ops)
		vals = malloc(SCAN_ENTS * sizeof(*vals));
	if (!buf || (ops == &fat12_ops && !vals)) {
		err = -ENOMEM;
		goto out;
	}
	while (first < total) {
		uint32_t n =
			total - first < SCAN_ENTS ? total - first : SCAN_ENTS;
		uint64_t from = ops->entry_off(first);
		uint64_t to = ops->entry_off(first + n - 1) + ops->load_len;

		const unsigned char *mapped;

		/* FAT12 is at most 6 KiB: not worth asking about holes. */
		if (!vals && from >= data_end) {
			uint32_t skip;

			if ((err = hole_ents(vol, ops, copy_off, first, total,
					     &skip, &data_end)))
				break;
			if (skip) {
				free_all(first, skip, map, nfree);
				first += skip;
				continue;
			}
		}
		if (!vals && data_end - from < (uint64_t)n * ops->load_len) {
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
		/* 16- and 32-bit entries are read in place from the page
		 * cache; FAT12 (small, and its last entry may run past the
		 * FAT) goes through the buffer. */
		if (!vals && !fk_device_map(vol->dev, copy_off + from,
					    (size_t)(to - from), &mapped)) {
			free_bits(ops, mapped, NULL, first, n, map, nfree,
				  &top_bits);
			fk_device_unmap(mapped, (size_t)(to - from));
			first += n;
			continue;
		}
		memset(buf + (to - from), 0, 4);
		if ((err = fk_device_read(vol->dev, copy_off + from, buf,
					  (size_t)(to - from))))
			break;
		if (vals)
			decode_block(ops, buf, from, first, n, vals);
		free_bits(ops, buf, vals, first, n, map, nfree, &top_bits);
		first += n;
	}
	vol->is_free_top_clear = !err && !(top_bits & 0xf0000000);
out:
	free(buf);
	free(vals);
	return err;
}

int fk_fat_scan(struct fk_volume *vol, uint32_t copy,
		int (*fn)(void *arg, uint32_t first, const uint32_t *vals,
			  uint32_t n),
		void *arg)
{
	const struct fat_ops *ops = ops_of(&vol->g);
	uint64_t copy_off = vol->g.fat_off +
			    (uint64_t)copy * vol->g.fat_secs * vol->g.sec_len;
	uint32_t total = fk_clus_max(&vol->g) + 1, first = 0;
	unsigned char *buf = malloc((size_t)SCAN_ENTS * 4 + 4);
	uint32_t *vals = malloc(SCAN_ENTS * sizeof(*vals));
	int err = 0;

	if (!buf || !vals) {
		err = -ENOMEM;
		goto out;
	}
	while (first < total && !err) {
		uint32_t n =
			total - first < SCAN_ENTS ? total - first : SCAN_ENTS;
		uint64_t from = ops->entry_off(first);
		uint64_t to = ops->entry_off(first + n - 1) + ops->load_len;

		/* The last FAT12 entry may end in the middle of a byte pair. */
		if (to > (uint64_t)vol->g.fat_secs * vol->g.sec_len)
			to = (uint64_t)vol->g.fat_secs * vol->g.sec_len;
		/* Only the bytes past the read can be stale. */
		memset(buf + (to - from), 0, 4);
		if ((err = fk_device_read(vol->dev, copy_off + from, buf,
					  (size_t)(to - from))))
			break;
		decode_block(ops, buf, from, first, n, vals);
		err = fn(arg, first, vals, n);
		first += n;
	}
out:
	free(buf);
	free(vals);
	return err;
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

int fk_fat_scan_copies(struct fk_volume *vol, uint32_t copy,
		       int (*fn)(void *arg, uint32_t first,
				 const uint32_t *vals, uint32_t n),
		       int (*diff)(void *arg, uint32_t copy, uint32_t sec),
		       void *arg)
{
	const struct fk_geom *g = &vol->g;
	const struct fat_ops *ops = ops_of(g);
	uint64_t copy_len = (uint64_t)g->fat_secs * g->sec_len;
	uint32_t total = fk_clus_max(g) + 1, first = 0, c;
	unsigned char *buf = malloc((size_t)SCAN_ENTS * 4 + 4);
	unsigned char *other = malloc((size_t)SCAN_ENTS * 4 + 4);
	uint32_t *vals = calloc(SCAN_ENTS, sizeof(*vals));
	uint64_t *next_sec = calloc(g->nfats, sizeof(*next_sec));
	int err = 0;

	if (!buf || !other || !vals || !next_sec) {
		err = -ENOMEM;
		goto out;
	}
	while (first < total && !err) {
		uint32_t n =
			total - first < SCAN_ENTS ? total - first : SCAN_ENTS;
		uint64_t from = ops->entry_off(first);
		uint64_t to = ops->entry_off(first + n - 1) + ops->load_len;
		size_t len;

		if (to > copy_len)
			to = copy_len;
		len = (size_t)(to - from);
		memset(buf, 0, len + 4);
		if ((err = fk_device_read(vol->dev,
					  g->fat_off + copy * copy_len + from,
					  buf, len)))
			break;
		for (c = 0; c < g->nfats && diff && !err; c++) {
			if (c == copy)
				continue;
			if (!(err = fk_device_read(vol->dev,
						   g->fat_off + c * copy_len +
							   from,
						   other, len)))
				err = diff_sectors(buf, other, from, len,
						   g->sec_len, c, next_sec,
						   diff, arg);
		}
		if (err)
			break;
		decode_block(ops, buf, from, first, n, vals);
		err = fn(arg, first, vals, n);
		first += n;
	}
out:
	free(buf);
	free(other);
	free(vals);
	free(next_sec);
	return err;
}
