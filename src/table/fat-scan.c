/*
 * fat-scan.c: sequential scans of a whole FAT copy in large reads straight
 * from the device (past the sector cache, skipping the holes of a sparse
 * image): free maps and counts, decoded values, the comparison of copies,
 * and the judgement of the mirrors.
 */
#include "table/fat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/cache.h"
#include "lib/diag.h"
#include "table/fat-ops.h"
#include "volume/volume.h"

#define SCAN_ENTS (1u << 18) /* entries read per scan block */
/* Entries decoded per callback: the values stay in the CPU's cache. */
#define DECODE_ENTS (1u << 14)

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
	unsigned char *buf = NULL; /* made at the first block read */
	uint64_t data_end = 0; /* the FAT is known to hold data up to here */
	int err = 0;

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
		/* A mapped image never needs the buffer: its megabyte was a
		 * fresh mapping (or heap) at every scan. */
		if (!buf && !(buf = malloc(scan_buf_len(vol)))) {
			err = -ENOMEM;
			break;
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
	/* The other copy's buffer only where it cannot be mapped. */
	if (ds->diff && !ds->other &&
	    !(ds->other = malloc(scan_buf_len(ds->vol))))
		return -ENOMEM;
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
	ds.next_sec = calloc(vol->g.nfats, sizeof(*ds.next_sec));
	ds.maps = calloc(vol->g.nfats, sizeof(*ds.maps));
	if (ds.vals && ds.next_sec && ds.maps)
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
			if (!is_zero(p, sec_len))
				goto differ;
			continue;
		}
		if ((err = fk_cache_get_to_change(vol->fat, s, &data)))
			return err;
		if (memcmp(p, data, sec_len))
			goto differ;
	}
	return 0;
differ:
	*bad = s;
	return 1;
}

/*
 * Compare sectors @lo .. @lo + @nsecs - 1 of the copy at @copy_off with
 * the read copy: in place from an image file's page cache, else read
 * into *@buf (made at its first use).  The 256 KiB a writer checks for a
 * 256 MiB file were copied into a fresh buffer, a page fault per page.
 */
static int compare_copy(struct fk_volume *vol, uint64_t copy_off, uint32_t lo,
			uint32_t nsecs, unsigned char **buf,
			const struct sec_range *fresh, size_t nfresh, size_t *f,
			uint32_t *bad)
{
	uint64_t off = copy_off + (uint64_t)lo * vol->g.sec_len;
	size_t len = (size_t)nsecs * vol->g.sec_len;
	const unsigned char *map;
	int err;

	if (!fk_device_map(vol->dev, off, len, &map)) {
		err = compare_secs(vol, map, lo, nsecs, fresh, nfresh, f, bad);
		fk_device_unmap(map, len);
		return err;
	}
	if (!*buf &&
	    !(*buf = malloc(MIRROR_READ_LEN > vol->g.sec_len ? MIRROR_READ_LEN
							     : vol->g.sec_len)))
		return -ENOMEM;
	if ((err = fk_device_read(vol->dev, off, *buf, len)))
		return err;
	return compare_secs(vol, *buf, lo, nsecs, fresh, nfresh, f, bad);
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
	for (c = 0; c < g->nfats && nall && !err; c++) {
		if (c == g->active_fat)
			continue;
		f = 0;
		for (i = 0; i < nall && !err; i++) {
			uint32_t lo = all[i].lo;

			while (lo <= all[i].hi && !err) {
				uint32_t cnt = all[i].hi - lo + 1 < max_secs
						       ? all[i].hi - lo + 1
						       : max_secs;

				err = compare_copy(
					vol, g->fat_off + c * copy_len, lo, cnt,
					&buf, fresh, nfresh, &f, &bad);
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
