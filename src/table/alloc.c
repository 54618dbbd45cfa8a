/*
 * alloc.c: the free-cluster bitmap and allocation plans.  Plans are
 * memory only, so validating every request before the first write costs
 * nothing; the FAT sees them through fk_alloc_write_chain(), run by run
 * and sector by sector, never cluster by cluster.  A lazy allocator reads
 * the FAT a chunk at a time as its searches reach it, from the FSInfo
 * hint on: on a card, 256 MiB near the start of an empty volume then
 * costs a few hundred KiB of FAT, not all of it.
 */
#include "table/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/cache.h"
#include "io/device.h"
#include "lib/bigmem.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "lib/testing.h"
#include "lib/vec.h"
#include "table/fsinfo.h"
#include "volume/volume.h"

#define WORD_BITS 64u
#define NBUCKETS  32 /* run lengths by power of two */
/*
 * Clusters per chunk of a lazy exFAT map: 4 KiB of allocation bitmap.  A
 * lazy FAT map's chunks are a page of FAT (fat_chunk()); its first load
 * reads CHUNK_CLUS clusters' entries at least, as many as a bitmap's
 * (128 KiB of a FAT32 FAT), and one load at most MAX_AHEAD times that.
 */
#define CHUNK_CLUS  (1u << 15)
#define MAX_AHEAD   64u	 /* CHUNK_CLUS clusters one lazy load reads at most */
#define BM_MAX_LOAD 256u /* bitmap chunks one read takes (1 MiB) */
#define BM_BUF_LEN  ((size_t)BM_MAX_LOAD * CHUNK_CLUS / 8)
#define BM_BIG_LEN  ((size_t)64 << 10) /* from here on, into bm_buf */

struct fk_alloc {
	uint64_t *free_map; /* bit set: cluster is free */
	uint32_t nwords;
	uint32_t end; /* one past the last cluster */
	uint32_t nfree;
	uint32_t cursor; /* where the next search starts */
	int is_blank;	 /* fk_fat_scan_free(): free sectors need no read */
	uint32_t nfound; /* free clusters the map held when loaded */
	/* A lazy map (fk_alloc_open_lazy()); vol NULL: all of it known. */
	struct fk_volume *vol;
	uint8_t *is_loaded; /* per chunk of @chunk clusters */
	uint32_t chunk;
	uint32_t nchunks;
	uint32_t max_ahead; /* chunks one load reads at most (but @want) */
	uint32_t nunloaded; /* chunks not read yet */
	uint32_t ahead;	    /* chunks the next load reads, at most */
	uint32_t fsi_free;  /* FSInfo's free count at open, or UNKNOWN */
	int has_fsinfo;	    /* FAT32 with an FSInfo sector to keep */
	int err;	    /* a load failed: the next plan fails with it */
	/* A lazy exFAT map reads the allocation bitmap, from byte @bm_off of
	 * the volume; 0: the FAT.  Its chunks are aligned in the bitmap's
	 * bits, which start at cluster 2 (@base), so that each load is
	 * whole sectors; a FAT's start at cluster 0. */
	uint64_t bm_off;
	uint32_t base;
	unsigned char *bm_buf; /* BM_BUF_LEN bytes for large loads, or NULL */
};

/* The chunk that holds cluster @clus. */
static uint32_t chunk_of(const struct fk_alloc *a, uint32_t clus)
{
	return clus < a->base ? 0 : (clus - a->base) / a->chunk;
}

/* The first cluster of chunk @k (past the end for k == nchunks). */
static uint64_t chunk_first(const struct fk_alloc *a, uint32_t k)
{
	return (uint64_t)k * a->chunk + a->base;
}

/*
 * A buffer for @len bytes of bitmap, whole 8-byte words.  A load of 64 KiB
 * or more (a search that reads on, up to 1 MiB) goes to one buffer kept
 * for the run, filled in huge pages: a fresh megabyte each time cost a
 * page fault per 4 KiB, more than reading it from the page cache.
 */
static unsigned char *bm_buf(struct fk_alloc *a, size_t len)
{
	if (len < BM_BIG_LEN)
		return calloc((len + 7) / 8, 8);
	if (!a->bm_buf &&
	    !(a->bm_buf = fk_bigmem_alloc_lazy(BM_BUF_LEN / 8, 8)))
		return NULL;
	fk_bigmem_will_fill(a->bm_buf, BM_BUF_LEN / 8, 8, 0, len);
	return a->bm_buf;
}

static void bm_buf_done(struct fk_alloc *a, unsigned char *buf)
{
	if (buf != a->bm_buf)
		free(buf);
}

/*
 * Chunks @k .. @k + @n - 1 of the allocation bitmap into the free map:
 * bit c - 2 of the bitmap is cluster c, so a word of used bits from bit
 * b (a multiple of 64) is map bits b + 2 .. b + 65: the low 62 in map
 * word b / 64, the top two in the next.  Map words start zeroed and each
 * bit is written by its own chunk only, so bits are or-ed in; on a read
 * error nothing is (the clusters stay used).
 */
static int scan_bitmap(struct fk_alloc *a, uint32_t k, uint32_t n,
		       uint32_t *found)
{
	uint64_t bit = (uint64_t)k * a->chunk, stop, nbits, b;
	unsigned char *buf;
	size_t len, i;
	int err;

	nbits = a->end - a->base;
	stop = bit + (uint64_t)n * a->chunk < nbits
		       ? bit + (uint64_t)n * a->chunk
		       : nbits;
	len = (size_t)((stop - bit + 7) / 8);
	/* Bytes past @len in the last word are masked off below. */
	if ((buf = bm_buf(a, len)) == NULL)
		return -ENOMEM;
	if ((err = fk_device_read(a->vol->dev, a->bm_off + bit / 8, buf,
				  len))) {
		bm_buf_done(a, buf);
		return err;
	}
	*found = 0;
	for (i = 0, b = bit; b < stop; i++, b += WORD_BITS) {
		uint64_t free_bits =
			~((uint64_t)get_le32(buf + i * 8) |
			  (uint64_t)get_le32(buf + i * 8 + 4) << 32);
		size_t w = (size_t)(b / WORD_BITS);

		if (stop - b < WORD_BITS)
			free_bits &= ((uint64_t)1 << (stop - b)) - 1;
		if (!free_bits)
			continue;
		a->free_map[w] |= free_bits << 2;
		if (free_bits >> 62)
			a->free_map[w + 1] |= free_bits >> 62;
		*found += free_bits == ~(uint64_t)0
				  ? WORD_BITS
				  : (uint32_t)__builtin_popcountll(free_bits);
	}
	bm_buf_done(a, buf);
	return 0;
}

/* The map words of clusters @first .. @first + @n - 1 are about to be
 * written: in huge pages when they are many (bigmem.h). */
static void fill_soon(struct fk_alloc *a, uint64_t first, uint64_t n)
{
	uint64_t end = first + n < a->end ? first + n : a->end;
	size_t lo = (size_t)(first / WORD_BITS) * sizeof(*a->free_map);
	size_t hi = (size_t)((end + WORD_BITS - 1) / WORD_BITS) *
		    sizeof(*a->free_map);

	fk_bigmem_will_fill(a->free_map, a->nwords, sizeof(*a->free_map), lo,
			    hi - lo);
}

/*
 * Read chunk @k, and up to a->ahead - 1 (or @want - 1, when more; with
 * @is_exact, @want - 1 only) unread chunks after it, in one sequential
 * scan; each further load reads twice as many, so a search that goes on
 * costs few requests.  A failed read leaves its chunks with no free
 * clusters and a->err set.
 */
static void load_from(struct fk_alloc *a, uint32_t k, uint32_t want,
		      int is_exact)
{
	uint32_t n = 1, found = 0, i, first = (uint32_t)chunk_first(a, k);
	uint32_t most = a->ahead > want && !is_exact ? a->ahead : want;
	int is_blank = 0, err;

	while (n < most && k + n < a->nchunks && !a->is_loaded[k + n] &&
	       (!a->bm_off || n < BM_MAX_LOAD))
		n++;
	fill_soon(a, first, (uint64_t)n * a->chunk);
	if (a->bm_off) {
		if ((err = scan_bitmap(a, k, n, &found)) && !a->err)
			a->err = err;
	} else if ((err = fk_fat_scan_free_range(
			    a->vol, a->vol->g.active_fat, first, n * a->chunk,
			    a->free_map, &found, &is_blank))) {
		uint32_t end = (k + n) * a->chunk;

		memset(a->free_map + first / WORD_BITS, 0,
		       (size_t)((end < a->end ? end : a->end) - first +
				WORD_BITS - 1) /
			       WORD_BITS * sizeof(*a->free_map));
		found = 0;
		if (!a->err)
			a->err = err;
	}
	a->is_blank &= is_blank;
	a->nfree += found;
	a->nfound += found;
	for (i = 0; i < n; i++)
		a->is_loaded[k + i] = 1;
	a->nunloaded -= n;
	/* A load sized by what was missing guessed nothing: the next one
	 * need not be larger (a FAT chunk costs a card as much time as a
	 * dozen requests). */
	if (!is_exact && n <= a->ahead && a->ahead < a->max_ahead)
		a->ahead *= 2;
}

/* Make the free bit of @clus known. */
static void ensure(struct fk_alloc *a, uint32_t clus)
{
	if (a->nunloaded && clus < a->end && !a->is_loaded[chunk_of(a, clus)])
		load_from(a, chunk_of(a, clus), 1, 0);
}

/* Read every chunk still unread, consecutive ones in one scan. */
static void load_all(struct fk_alloc *a)
{
	uint32_t k;

	a->ahead = UINT32_MAX;
	for (k = 0; a->nunloaded && k < a->nchunks; k++)
		if (!a->is_loaded[k])
			load_from(a, k, 1, 0);
}

/* The end of the stretch from @from whose bits one check makes known. */
static uint32_t known_end(const struct fk_alloc *a, uint32_t from)
{
	uint64_t end = chunk_first(a, chunk_of(a, from) + 1);

	return a->nunloaded && end < a->end ? (uint32_t)end : a->end;
}

static int is_free(struct fk_alloc *a, uint32_t clus)
{
	ensure(a, clus);
	return a->free_map[clus / WORD_BITS] >> (clus % WORD_BITS) & 1;
}

static void set_range(struct fk_alloc *a, uint32_t first, uint32_t n,
		      int is_free_now)
{
	uint32_t c = first, end = first + n;

	/* A word at a time, whole words in one memset: long runs are the
	 * point of batching (16 x 256 MiB of 512-byte clusters is 1 MiB of
	 * map). */
	while (c < end) {
		if (c % WORD_BITS == 0 && end - c >= WORD_BITS) {
			uint32_t nw = (end - c) / WORD_BITS;

			memset(a->free_map + c / WORD_BITS,
			       is_free_now ? 0xff : 0,
			       (size_t)nw * sizeof(*a->free_map));
			c += nw * WORD_BITS;
			continue;
		}
		uint32_t w = c / WORD_BITS, lo = c % WORD_BITS;
		uint32_t len =
			end - c < WORD_BITS - lo ? end - c : WORD_BITS - lo;
		uint64_t bits = (len == WORD_BITS ? ~(uint64_t)0
						  : (((uint64_t)1 << len) - 1))
				<< lo;

		if (is_free_now)
			a->free_map[w] |= bits;
		else
			a->free_map[w] &= ~bits;
		c += len;
	}
	if (is_free_now)
		a->nfree += n;
	else
		a->nfree -= n;
}

/* Next-fit starts at @hint, when it is a data cluster. */
static void set_hint(struct fk_alloc *a, uint32_t hint)
{
	a->cursor =
		hint >= FK_FIRST_CLUS && hint < a->end ? hint : FK_FIRST_CLUS;
}

/* An allocator with an empty map for clusters 0 .. @nclus + 1. */
static int alloc_new(uint32_t nclus, uint32_t hint, int is_lazy,
		     struct fk_alloc **out)
{
	struct fk_alloc *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->end = nclus + FK_FIRST_CLUS;
	a->nwords = (a->end + WORD_BITS - 1) / WORD_BITS;
	a->chunk = CHUNK_CLUS; /* chunk_of() divides by it, lazy or not */
	/* A lazy map is touched where its loads write (fill_soon()): a
	 * small card's run reads a page of it, not a huge page. */
	a->free_map = is_lazy ? fk_bigmem_alloc_lazy(a->nwords, 8)
			      : fk_bigmem_alloc(a->nwords, 8);
	if (!a->free_map) {
		free(a);
		return -ENOMEM;
	}
	set_hint(a, hint);
	*out = a;
	return 0;
}

/*
 * Clusters whose FAT entries fill a page (three for FAT12, whose entries
 * are a byte and a half): a lazy FAT map reads whole pages, as many as a
 * search needs, where a chunk of 128 KiB read up to 124 KiB more than a
 * search took (a card's page cache reads pages, whatever is asked).
 */
static uint32_t fat_chunk(const struct fk_geom *g)
{
	return g->ent_bits == 12 ? 8192u : 32768u / g->ent_bits;
}

/* A lazy map's chunks of @chunk clusters; its loads start as long as
 * CHUNK_CLUS clusters and double up to MAX_AHEAD times that. */
static int set_chunks(struct fk_alloc *a, uint32_t chunk)
{
	a->chunk = chunk;
	a->nchunks =
		(uint32_t)(((uint64_t)a->end - a->base + chunk - 1) / chunk);
	a->nunloaded = a->nchunks;
	a->ahead = CHUNK_CLUS > chunk ? CHUNK_CLUS / chunk : 1;
	a->max_ahead = a->ahead * MAX_AHEAD;
	a->is_loaded = calloc(a->nchunks ? a->nchunks : 1, 1);
	return a->is_loaded ? 0 : -ENOMEM;
}

int fk_alloc_open_lazy(struct fk_volume *vol, struct fk_alloc **out)
{
	struct fk_alloc *a;
	struct fk_fsinfo fsi;
	int err;

	if ((err = alloc_new(vol->g.nclus, FK_FIRST_CLUS, 1, &a)))
		return err;
	if ((err = set_chunks(a, fat_chunk(&vol->g)))) {
		fk_alloc_close(a);
		return err;
	}
	if ((err = fk_fsinfo_read(vol, &fsi))) {
		fk_alloc_close(a);
		return err;
	}
	a->vol = vol;
	a->is_blank = 1;
	a->has_fsinfo = fsi.is_present;
	a->fsi_free = fsi.is_present && fsi.is_lead_ok && fsi.is_struc_ok
			      ? fsi.free_count
			      : FK_FSINFO_UNKNOWN;
	set_hint(a, fsi.next_free);
	*out = a;
	return 0;
}

int fk_alloc_open_bitmap(struct fk_volume *vol, uint64_t bm_off,
			 struct fk_alloc **out)
{
	struct fk_alloc *a;
	int err;

	if (!bm_off)
		return -EINVAL; /* the boot region is there */
	if ((err = alloc_new(vol->g.nclus, FK_FIRST_CLUS, 1, &a)))
		return err;
	a->base = FK_FIRST_CLUS;
	if ((err = set_chunks(a, CHUNK_CLUS))) {
		fk_alloc_close(a);
		return err;
	}
	a->vol = vol;
	a->bm_off = bm_off;
	a->fsi_free = FK_FSINFO_UNKNOWN;
	*out = a;
	return 0;
}

uint32_t fk_alloc_nunread(const struct fk_alloc *a)
{
	uint32_t k, n = 0;

	for (k = 0; a->nunloaded && k < a->nchunks; k++)
		if (!a->is_loaded[k])
			n += (uint32_t)((chunk_first(a, k + 1) < a->end
						 ? chunk_first(a, k + 1)
						 : a->end) -
					chunk_first(a, k));
	return n;
}

int fk_alloc_open(struct fk_volume *vol, struct fk_alloc **out)
{
	struct fk_alloc *a;
	int err;

	if ((err = fk_alloc_open_lazy(vol, &a)))
		return err;
	load_all(a);
	if ((err = a->err)) {
		fk_alloc_close(a);
		return err;
	}
	*out = a;
	return 0;
}

int fk_alloc_from_map(const uint64_t *map, uint32_t nclus, uint32_t hint,
		      struct fk_alloc **out)
{
	struct fk_alloc *a;
	uint32_t c;
	int err;

	if ((err = alloc_new(nclus, hint, 0, &a)))
		return err;
	/* Bit by bit: clusters 0 and 1 and bits past the end stay used. */
	for (c = FK_FIRST_CLUS; c < a->end; c++)
		if (map[c / WORD_BITS] >> (c % WORD_BITS) & 1)
			set_range(a, c, 1, 1);
	a->nfound = a->nfree;
	*out = a;
	return 0;
}

/*
 * Turn @a->free_map, which holds exFAT's used bits (bit c - 2 for cluster
 * c), into the free map in place.  Map bit c is used bit c - 2: a word of
 * the map takes the top two bits of the used word before it and the rest
 * of its own, so the words are made from the last one down, each before
 * the used word it overwrites is needed again.
 */
static void used_to_free(struct fk_alloc *a, uint32_t nclus)
{
	uint64_t *m = a->free_map;
	uint32_t w = a->nwords;

	a->nfree = 0;
	while (w--) {
		uint64_t lo = w ? m[w - 1] >> 62 : 3;
		uint64_t hi = (uint64_t)w * WORD_BITS < nclus ? m[w] << 2 : 0;
		uint64_t bits = ~(hi | lo);
		uint64_t first = (uint64_t)w * WORD_BITS;

		if (first + WORD_BITS > a->end)
			bits &= ((uint64_t)1 << (a->end - first)) - 1;
		m[w] = bits;
		/* Without -mpopcnt each count is a libgcc call: the common
		 * all-free and all-used words need none. */
		if (bits == ~(uint64_t)0)
			a->nfree += WORD_BITS;
		else if (bits)
			a->nfree += (uint32_t)__builtin_popcountll(bits);
	}
	a->nfound = a->nfree;
}

int fk_alloc_from_used(const uint64_t *used, uint32_t nclus, uint32_t hint,
		       struct fk_alloc **out)
{
	struct fk_alloc *a;
	int err;

	if ((err = alloc_new(nclus, hint, 0, &a)))
		return err;
	memcpy(a->free_map, used, ((size_t)nclus + 63) / 64 * sizeof(*used));
	used_to_free(a, nclus);
	*out = a;
	return 0;
}

int fk_alloc_take_used(uint64_t *used, uint32_t nclus, uint32_t hint,
		       struct fk_alloc **out)
{
	struct fk_alloc *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->end = nclus + FK_FIRST_CLUS;
	a->nwords = (a->end + WORD_BITS - 1) / WORD_BITS;
	a->chunk = CHUNK_CLUS; /* chunk_of() divides by it, lazy or not */
	a->free_map = used;
	set_hint(a, hint);
	used_to_free(a, nclus);
	*out = a;
	return 0;
}

void fk_alloc_close(struct fk_alloc *a)
{
	if (!a)
		return;
	fk_bigmem_free(a->free_map, a->nwords, sizeof(*a->free_map));
	fk_bigmem_free(a->bm_buf, BM_BUF_LEN / 8, 8);
	free(a->is_loaded);
	free(a);
}

uint32_t fk_alloc_nfree(struct fk_alloc *a)
{
	load_all(a);
	return a->nfree;
}

uint32_t fk_alloc_nfree_open(struct fk_alloc *a)
{
	load_all(a);
	return a->nfound;
}

int fk_alloc_has_free(struct fk_alloc *a, uint32_t nclus)
{
	uint32_t k = chunk_of(a, a->cursor), i;
	/* The clusters before the cursor in its chunk are read with it but
	 * are not where the search goes: the first load covers them too. */
	uint64_t before = a->cursor - chunk_first(a, k);

	/* The chunks the search from the cursor will reach, in its order,
	 * at least as many at once as can hold what is missing (each must
	 * be read anyway): 256 MiB of 512-byte clusters is one read, not
	 * five that double, and its map one huge page. */
	for (i = 0; a->nfree < nclus && a->nunloaded && i < a->nchunks; i++) {
		if (!a->is_loaded[(k + i) % a->nchunks])
			load_from(a, (k + i) % a->nchunks,
				  (uint32_t)((before + nclus - a->nfree +
					      a->chunk - 1) /
					     a->chunk),
				  0);
		before = 0;
	}
	/* A failed read is no lack of space: fk_alloc_plan() reports it. */
	return a->nfree >= nclus || a->err;
}

/*
 * The chain walks after the first load (the root's, the files'), when
 * they start in the FAT it read: their first span is its pages, which
 * the page cache holds, not a 64 KiB span whose pages past them a card
 * serves in a request of their own.
 */
static void want_loaded(struct fk_alloc *a)
{
	const struct fk_geom *g = &a->vol->g;
	uint32_t k = chunk_of(a, a->cursor), n = 0;
	uint64_t lo, hi, end;

	while (k + n < a->nchunks && a->is_loaded[k + n])
		n++;
	if (!n)
		return;
	end = chunk_first(a, k + n) < a->end ? chunk_first(a, k + n) : a->end;
	lo = chunk_first(a, k) * g->ent_bits / 8 / g->sec_len;
	hi = (end * g->ent_bits / 8 + g->sec_len - 1) / g->sec_len;
	fk_cache_want_span(a->vol->fat, (uint32_t)lo, (uint32_t)(hi - lo));
}

void fk_alloc_expect(struct fk_alloc *a, uint64_t nclus)
{
	uint32_t total = a->end - FK_FIRST_CLUS, used, k;
	uint64_t need, want;

	if (!a->nunloaded || a->bm_off || a->fsi_free == FK_FSINFO_UNKNOWN ||
	    a->fsi_free > total)
		return;
	/* The files the run extends hold at most the clusters in use. */
	used = total - a->fsi_free;
	if (nclus <= used)
		return;
	need = nclus - used < total ? nclus - used : total;
	/* One load: past it, a stale count's searches double as usual. */
	k = chunk_of(a, a->cursor);
	want = (a->cursor - chunk_first(a, k) + need + a->chunk - 1) / a->chunk;
	if (k < a->nchunks && !a->is_loaded[k])
		load_from(a, k, (uint32_t)want, 1);
	want_loaded(a);
}

uint32_t fk_alloc_fsinfo_free(struct fk_alloc *a)
{
	/*
	 * FSInfo's count less what this run took, as the kernel keeps it,
	 * while it is at least what the chunks read held: checking it all
	 * would read the whole FAT, the cost the lazy map saves.
	 */
	if (a->nunloaded && a->vol && !a->has_fsinfo)
		return FK_FSINFO_UNKNOWN; /* FAT12/16: nothing keeps a count */
	if (a->nunloaded && a->fsi_free != FK_FSINFO_UNKNOWN &&
	    a->fsi_free <= a->end - FK_FIRST_CLUS && a->fsi_free >= a->nfound)
		return a->fsi_free - (a->nfound - a->nfree);
	load_all(a);
	return a->err ? FK_FSINFO_UNKNOWN : a->nfree;
}

int fk_alloc_is_free(struct fk_alloc *a, uint32_t clus)
{
	return clus >= FK_FIRST_CLUS && clus < a->end && is_free(a, clus);
}

/* First free cluster in [from, a->end), or a->end. Skips whole words. */
static uint32_t next_free(struct fk_alloc *a, uint32_t from)
{
	uint32_t w, stop, last_w, c;
	uint64_t word;

	for (; from < a->end; from = stop) {
		stop = known_end(a, from);
		ensure(a, from);
		w = from / WORD_BITS;
		last_w = (stop - 1) / WORD_BITS;
		word = a->free_map[w] & (~(uint64_t)0 << (from % WORD_BITS));
		while (!word && w < last_w)
			word = a->free_map[++w];
		if (word && (c = w * WORD_BITS +
				 (uint32_t)__builtin_ctzll(word)) < stop)
			return c;
	}
	return a->end;
}

/*
 * First used cluster in [from, limit), or limit (clamped to a->end): a
 * caller that needs only @limit - @from free clusters stops looking there,
 * instead of walking a free region to the end of a large volume.
 */
static uint32_t next_used_upto(struct fk_alloc *a, uint32_t from,
			       uint32_t limit)
{
	uint32_t w, last_w, stop, c;
	uint64_t word;

	if (limit > a->end || limit < from)
		limit = a->end;
	for (; from < limit; from = stop) {
		stop = known_end(a, from);
		stop = stop < limit ? stop : limit;
		ensure(a, from);
		w = from / WORD_BITS;
		last_w = (stop - 1) / WORD_BITS;
		word = ~a->free_map[w] & (~(uint64_t)0 << (from % WORD_BITS));
		while (!word && w < last_w)
			word = ~a->free_map[++w];
		if (word && (c = w * WORD_BITS +
				 (uint32_t)__builtin_ctzll(word)) < stop)
			return c;
	}
	return limit;
}

/* First used cluster in [from, a->end), or a->end. */
static uint32_t next_used(struct fk_alloc *a, uint32_t from)
{
	return next_used_upto(a, from, a->end);
}

int fk_plan_add(struct fk_plan *p, uint32_t first, uint32_t n)
{
	if (p->nruns &&
	    p->runs[p->nruns - 1].first + p->runs[p->nruns - 1].nclus ==
		    first) {
		p->runs[p->nruns - 1].nclus += n;
	} else {
		if (FK_VEC_RESERVE(p->runs, p->cap, p->nruns + 1))
			return -ENOMEM;
		p->runs[p->nruns].first = first;
		p->runs[p->nruns++].nclus = n;
	}
	p->nclus += n;
	return 0;
}

/* Take @n clusters from @first (all free) into @p. */
static int take(struct fk_alloc *a, struct fk_plan *p, uint32_t first,
		uint32_t n)
{
	int err = fk_plan_add(p, first, n);

	if (err)
		return err;
	set_range(a, first, n, 0);
	a->cursor = first + n < a->end ? first + n : FK_FIRST_CLUS;
	return 0;
}

/*
 * First free run of at least @need clusters from the cursor, wrapping
 * (next fit, as the kernel's allocator).  Returns its start or 0; the
 * longest run seen goes to *@longest.
 */
static uint32_t find_fit(struct fk_alloc *a, uint32_t need, uint32_t *longest)
{
	uint32_t start = a->cursor, pass, c, end;

	*longest = 0;
	for (pass = 0; pass < 2; pass++) {
		uint32_t from = pass ? FK_FIRST_CLUS : start;
		uint32_t to = pass ? start : a->end;

		for (c = next_free(a, from); c < to; c = next_free(a, end)) {
			/* A run shorter than @need is measured in full. */
			end = next_used_upto(a, c, c + need);
			if (end - c >= need)
				return c;
			if (end - c > *longest)
				*longest = end - c;
		}
	}
	return 0;
}

static unsigned bucket_of(uint32_t len)
{
	return 31u - (unsigned)__builtin_clz(len);
}

/*
 * No single run fits: take the fewest runs by taking long ones first.
 * A histogram by powers of two picks the shortest length class that,
 * with all longer ones, covers @need; runs of that class or longer are
 * then taken in address order from cluster 2 (not from the cursor).
 */
static int take_large_runs(struct fk_alloc *a, uint32_t need, struct fk_plan *p)
{
	uint64_t sum[NBUCKETS] = {0}, acc = 0;
	uint32_t c, end, min_len = 1, pass;
	int b, err;

	load_all(a); /* the histogram is of the whole volume */
	for (c = next_free(a, FK_FIRST_CLUS); c < a->end;
	     c = next_free(a, end)) {
		end = next_used(a, c);
		sum[bucket_of(end - c)] += end - c;
	}
	for (b = NBUCKETS - 1; b >= 0; b--) {
		acc += sum[b];
		if (acc >= need) {
			min_len = (uint32_t)1 << b;
			break;
		}
	}
	for (pass = 0; need && pass < 2; pass++, min_len = 1) {
		for (c = next_free(a, FK_FIRST_CLUS); need && c < a->end;
		     c = next_free(a, end)) {
			end = next_used(a, c);
			if (end - c < min_len)
				continue;
			if (end - c > need)
				end = c + need;
			if ((err = take(a, p, c, end - c)))
				return err;
			need -= end - c;
		}
	}
	return 0;
}

/*
 * Append the runs of @mine, a plan made whole, to @plan; on failure give
 * them back to the map.  @mine is freed either way.
 */
static int hand_over(struct fk_alloc *a, struct fk_plan *mine,
		     struct fk_plan *plan)
{
	int err = 0;

	for (size_t i = 0; !err && i < mine->nruns; i++)
		err = fk_plan_add(plan, mine->runs[i].first,
				  mine->runs[i].nclus);
	if (err)
		fk_alloc_unplan(a, mine);
	fk_plan_free(mine);
	return err;
}

/*
 * 0 when @nclus clusters are free; else a failed read's error, or -ENOSPC
 * with what was needed and what is free in @diag.
 */
static int check_room(struct fk_alloc *a, uint32_t nclus, struct fk_diag *diag)
{
	if (fk_alloc_has_free(a, nclus) && !a->err)
		return 0;
	if (a->err)
		return a->err;
	fk_diag_detail(diag, NULL, "need %u cluster%s, %u free", nclus,
		       nclus == 1 ? "" : "s", a->nfree);
	return -ENOSPC;
}

int fk_alloc_plan(struct fk_alloc *a, uint32_t tail, uint32_t nclus,
		  unsigned flags, struct fk_plan *plan, struct fk_diag *diag)
{
	uint32_t need = nclus, longest, start, n;
	struct fk_plan mine = {NULL, 0, 0, 0};
	int err;

	if ((err = check_room(a, nclus, diag)))
		return err;
	/* Growing in place keeps the file in one piece. */
	if (need && tail && tail + 1 < a->end && is_free(a, tail + 1)) {
		n = next_used_upto(a, tail + 1, tail + 1 + need) - (tail + 1);
		if (n >= need || !(flags & FK_ALLOC_CONTIG)) {
			n = n < need ? n : need;
			if ((err = take(a, &mine, tail + 1, n)))
				goto out_undo;
			need -= n;
		}
	}
	if (need && (start = find_fit(a, need, &longest))) {
		if ((err = take(a, &mine, start, need)))
			goto out_undo;
		need = 0;
	}
	if (need && (flags & FK_ALLOC_CONTIG)) {
		fk_diag_detail(diag, NULL,
			       "no contiguous run of %u cluster%s, longest "
			       "free run is %u",
			       nclus, nclus == 1 ? "" : "s", longest);
		err = -ENOSPC;
		goto out_undo;
	}
	if (need && (err = take_large_runs(a, need, &mine)))
		goto out_undo;
	if ((err = a->err)) /* a load failed: what was seen is not all */
		goto out_undo;
	return hand_over(a, &mine, plan);
out_undo:
	fk_alloc_unplan(a, &mine);
	fk_plan_free(&mine);
	return err;
}

/* The first cluster at or after @c of the form @phase + k * @step. */
static uint32_t aligned_from(uint32_t c, uint32_t phase, uint32_t step)
{
	uint64_t k;

	if (c <= phase)
		return phase;
	k = ((uint64_t)c - phase + step - 1) / step;
	return phase + k * step > UINT32_MAX ? UINT32_MAX
					     : (uint32_t)(phase + k * step);
}

/*
 * First free run of at least @need clusters that starts at an aligned
 * cluster, next fit from the cursor, wrapping.  Each free run is measured
 * once (the next candidate is the first aligned cluster past its end), so
 * the search is linear in the volume whatever @step is.  Returns its
 * start or 0; the longest aligned run seen goes to *@best (its start) and
 * *@best_len.
 */
static uint32_t find_aligned(struct fk_alloc *a, uint32_t need, uint32_t phase,
			     uint32_t step, uint32_t *best, uint32_t *best_len)
{
	uint32_t start = a->cursor, pass, c, end;

	*best = *best_len = 0;
	for (pass = 0; pass < 2; pass++) {
		uint32_t from = pass ? FK_FIRST_CLUS : start;
		uint32_t to = pass ? start : a->end;

		for (c = aligned_from(next_free(a, from), phase, step); c < to;
		     c = aligned_from(next_free(a, c), phase, step)) {
			if (!is_free(a, c))
				continue; /* the step moves past it */
			end = next_used_upto(a, c, c + need);
			if (end - c >= need)
				return c;
			if (end - c > *best_len) {
				*best = c;
				*best_len = end - c;
			}
			c = end;
		}
	}
	return 0;
}

uint32_t fk_alloc_longest(struct fk_alloc *a, uint32_t phase, uint32_t step)
{
	uint32_t best, best_len;

	/* a need no run meets: the search measures every candidate */
	find_aligned(a, a->end, phase, step, &best, &best_len);
	return best_len;
}

int fk_alloc_plan_aligned(struct fk_alloc *a, uint32_t nclus, uint32_t phase,
			  uint32_t step, unsigned flags, struct fk_plan *plan,
			  struct fk_diag *diag)
{
	struct fk_plan mine = {NULL, 0, 0, 0};
	uint32_t start, best, best_len;
	int err;

	if ((err = check_room(a, nclus, diag)))
		return err;
	if (!nclus)
		return 0;
	start = find_aligned(a, nclus, phase, step, &best, &best_len);
	if (a->err) /* a chunk that failed to read counts as used */
		return a->err;
	if (start)
		return take(a, plan, start, nclus);
	if ((flags & FK_ALLOC_CONTIG) || !best_len) {
		fk_diag_detail(diag, NULL,
			       "no free run of %u cluster%s starts at an "
			       "aligned cluster; the longest that does is %u",
			       nclus, nclus == 1 ? "" : "s", best_len);
		return -ENOSPC;
	}
	if ((err = take(a, &mine, best, best_len)) ||
	    (err = fk_alloc_plan(a, best + best_len - 1, nclus - best_len, 0,
				 &mine, diag)))
		goto out_undo;
	return hand_over(a, &mine, plan);
out_undo:
	fk_alloc_unplan(a, &mine);
	fk_plan_free(&mine);
	return err;
}

void fk_alloc_unplan(struct fk_alloc *a, const struct fk_plan *p)
{
	size_t i;

	for (i = 0; i < p->nruns; i++)
		set_range(a, p->runs[i].first, p->runs[i].nclus, 1);
}

void fk_alloc_cut(struct fk_alloc *a, struct fk_plan *p, uint32_t keep)
{
	uint32_t seen = 0, stay;
	size_t i, nruns = 0;
	int is_given = 0;

	for (i = 0; i < p->nruns; i++) {
		struct fk_run *r = &p->runs[i];

		stay = keep - seen < r->nclus ? keep - seen : r->nclus;
		seen += stay;
		if (stay < r->nclus) {
			if (!is_given++)
				a->cursor = r->first + stay;
			set_range(a, r->first + stay, r->nclus - stay, 1);
			r->nclus = stay;
		}
		if (stay)
			nruns = i + 1;
	}
	p->nruns = nruns;
	p->nclus = seen;
}

void fk_plan_free(struct fk_plan *p)
{
	free(p->runs);
	memset(p, 0, sizeof(*p));
}

int fk_alloc_write_chain(const struct fk_alloc *a, struct fk_volume *vol,
			 const struct fk_plan *p)
{
	uint32_t eoc = fk_fat_eoc(&vol->g);
	size_t i;
	int err;

	for (i = 0; i < p->nruns; i++) {
		uint32_t next = i + 1 < p->nruns ? p->runs[i + 1].first : eoc;

		if ((err = fk_fat_put_free_run(vol, p->runs[i].first,
					       p->runs[i].nclus, next,
					       a->is_blank)))
			return err;
	}
	return 0;
}

int fk_alloc_is_blank(const struct fk_alloc *a)
{
	return a->is_blank;
}

uint32_t fk_alloc_next_free(struct fk_alloc *a)
{
	uint32_t c = next_free(a, a->cursor);

	if (c == a->end)
		c = next_free(a, FK_FIRST_CLUS);
	return c == a->end ? FK_FSINFO_UNKNOWN : c;
}
