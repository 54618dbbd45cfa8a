/*
 * fat.c: FAT entry access, one entry or a run of them, through the sector
 * cache; the reserved entries and the layout a writer may act on; chain
 * walks (which take fk_fat_class() for every link, inlined here).  The
 * packing is fat-ops.c's (and fat-links.h's, whose link-following loop
 * the checker inlines too): callers never see the width.
 */
#include "table/fat.h"

#include <string.h>

#include "io/cache.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "table/fat-links.h"
#include "table/fat-ops.h"
#include "volume/volume.h"

#define WALK_BATCH 128 /* links a chain walk takes per lookup, at most */

enum fk_ent_class fk_fat_class(const struct fk_geom *g, uint32_t val)
{
	const struct fat_ops *ops = ops_of(g);

	if (val == 0)
		return FK_ENT_FREE;
	if (val >= g->ent_eoc)
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

void fk_fat_note_unwritable(struct fk_diag *diag, int err)
{
	if (err == FK_ECORRUPT)
		fk_diag_append(diag, err,
			       "; nothing is written to it (fsck.fat refuses "
			       "it too): copy the files off with mtools, or "
			       "restore the boot sector");
}

int fk_fat_judge_layout(struct fk_volume *vol, struct fk_diag *diag)
{
	struct fk_fat_reserved r;
	uint32_t c, fat0[2];
	int err;

	/*
	 * One copy with its mark is a FAT with a damaged first entry
	 * (fsck.fat then uses that copy: a repair); none is FATs that are
	 * not where the boot sector puts them, or not FATs at all.  The
	 * family's judge of its boot sector comes first and allows two
	 * copies at most (the bound is kept anyway).
	 */
	fk_fat_reserved_judge(&vol->g, 0, 0, &r); /* r.want0 for the line */
	for (c = 0; c < vol->g.nfats && c < 2; c++) {
		if ((err = read_fat0(vol, c, &fat0[c])))
			return err;
		fk_fat_reserved_judge(&vol->g, fat0[c], 0, &r);
		if (r.is_fat0_ones)
			return 0;
	}
	err = FK_ECORRUPT;
	if (vol->g.nfats == 1)
		fk_diag_set(diag, NULL,
			    "implausible geometry: the FAT does not begin "
			    "with a media mark (FAT[0] is 0x%X, expected "
			    "0x%X): it is not where the boot sector puts it, "
			    "or it is damaged",
			    fat0[0], r.want0);
	else
		fk_diag_set(diag, NULL,
			    "implausible geometry: no FAT copy begins with a "
			    "media mark (FAT[0] is 0x%X and 0x%X, expected "
			    "0x%X): the FATs are not where the boot sector "
			    "puts them, or both are damaged",
			    fat0[0], fat0[1], r.want0);
	fk_fat_note_unwritable(diag, err);
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
	/* Sector sizes are powers of two: no division per entry. */
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
	s->mask = vol->g.ent_mask;
	s->bits = vol->g.ent_bits;
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

int fk_chain_holds(struct fk_volume *vol, uint32_t start, uint32_t n,
		   uint32_t clus, int *yes)
{
	uint32_t c = start, i;
	int err;

	*yes = 0;
	for (i = 0; i < n && fk_clus_valid(&vol->g, c); i++) {
		if (c == clus) {
			*yes = 1;
			return 0;
		}
		if ((err = fk_fat_get(vol, c, &c)))
			return err;
	}
	return 0;
}

int fk_chain_walk(struct fk_volume *vol, uint32_t start,
		  int (*fn)(void *arg, const struct fk_run *run), void *arg,
		  struct fk_chain_info *info)
{
	const struct fk_geom *g = &vol->g;
	struct fk_run run = {0, 0};
	struct fk_loop_check loop;
	uint32_t clus = start, val;
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
	fk_loop_check_init(&loop, start);
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
		/* Counting links to the volume's cluster count instead cost
		 * seconds and a run per link on a large FAT32. */
		if (fk_loop_check_step(&loop, val)) {
			if (run.nclus && fn && (err = fn(arg, &run)))
				return err;
			return describe_loop(vol, start, loop.lam, info);
		}
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
