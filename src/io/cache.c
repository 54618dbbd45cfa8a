/*
 * cache.c: bounded FAT-sector cache.  Slots live in one arena; a hash table
 * with linear probing maps sector numbers to slots; a clock hand picks a
 * clean slot to reuse.  Dirty sectors are never evicted: when the dirty
 * budget is full the whole set is flushed, which is always safe because
 * callers flush at every ordering point anyway (the Linux 7.4 lesson: pay
 * the write toll per batch, and bound the batch by memory, not by the
 * request).  Chain walks read through a few spans instead: aligned pieces
 * of many sectors, each read in one call and valid only while nothing is
 * dirty, so a walk costs a lookup per span rather than per sector.
 */
#include "io/cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "io/device.h"
#include "lib/bigmem.h"
#include "lib/diag.h"
#include "lib/testing.h"

#define CLEAN_BUDGET (1u << 20) /* bytes of clean sectors kept for reads */
#define READ_AHEAD   64		/* sectors read per miss, when free */
#define NO_SLOT	     UINT32_MAX
#define SPAN_LEN     (1u << 16) /* bytes a span holds (at least a sector) */
#define NSPANS	     8		/* spans kept, least recently used replaced */
#define NO_SEC	     UINT32_MAX
/*
 * An empty hash bucket is 0 (buckets hold slot + 1): a fresh table needs
 * no fill, so a cache that is never used (exFAT's FAT, when every file is
 * contiguous) never touches its pages, and a huge page is not cleared
 * for nothing.
 */
#define TABLE_EMPTY 0u

enum slot_state {
	SLOT_EMPTY,
	SLOT_CLEAN,
	SLOT_DIRTY,
	SLOT_LOADING, /* picked for a read in progress */
};

struct slot {
	uint32_t sec;
	uint8_t state;
	uint8_t referenced; /* second chance for the clock */
};

/* An aligned piece of the read copy, read whole (fk_cache_get_span()). */
struct span {
	uint32_t first; /* its first sector; NO_SEC: holds nothing */
	uint32_t nsecs;
	uint64_t used; /* when last borrowed, on the cache's span clock */
};

struct fk_cache {
	struct fk_device *dev;
	struct fk_cache_layout lay;
	enum fk_cache_sync sync;
	uint32_t nslots;
	uint32_t max_dirty; /* sectors */
	uint32_t ndirty;
	uint32_t hand;	    /* clock position */
	uint32_t last;	    /* slot found last (a hint); NO_SLOT: none */
	uint32_t hash_mask; /* table size - 1 */
	unsigned char *mem; /* the arrays below, in one allocation; NULL
			     * until a slot is first used (need_mem()) */
	size_t mem_len;
	int is_dense;	 /* mem from fk_bigmem_alloc() */
	uint32_t *table; /* slot index + 1, or TABLE_EMPTY */
	struct slot *slots;
	uint64_t *order;      /* dirty slots: sector << 32 | slot */
	struct iovec *iov;    /* scratch for flush */
	unsigned char *arena; /* nslots * sec_len */
	struct fk_cache_stats stats;
	struct span spans[NSPANS];
	unsigned char *span_buf[NSPANS]; /* each NULL until first used */
	uint32_t span_secs;		 /* sectors a span holds */
	uint32_t ra_secs;		 /* sectors a miss reads at most */
	/* With layout.read_len: a span read is that long, and twice the last
	 * one when it starts where the last one ended (a walk going on). */
	uint32_t span_min, span_cur; /* sectors; span_min 0: fixed spans */
	uint32_t span_next;	     /* sector after the last span read */
	uint32_t span_last;	     /* the span borrowed last */
	uint32_t want_lo, want_n;    /* fk_cache_want_span(); want_n 0: none */
	uint32_t page_secs;	     /* sectors in 4 KiB (at least 1) */
	uint64_t span_clock;
	uint32_t bad_span; /* a span whose read failed; NO_SEC: none */
	const struct fk_cache_patch *patches; /* borrowed; ascending */
	size_t npatches;
};

static uint32_t hash_sec(const struct fk_cache *c, uint32_t sec)
{
	return (sec * 2654435761u) & c->hash_mask;
}

static unsigned char *slot_data(const struct fk_cache *c, uint32_t i)
{
	return c->arena + (size_t)i * c->lay.sec_len;
}

static uint32_t lookup(const struct fk_cache *c, uint32_t sec)
{
	uint32_t h = hash_sec(c, sec);

	if (!c->mem)
		return NO_SLOT; /* no slot was ever used */
	for (; c->table[h] != TABLE_EMPTY; h = (h + 1) & c->hash_mask)
		if (c->slots[c->table[h] - 1].sec == sec)
			return c->table[h] - 1;
	return NO_SLOT;
}

static void hash_insert(struct fk_cache *c, uint32_t i)
{
	uint32_t h = hash_sec(c, c->slots[i].sec);

	while (c->table[h] != TABLE_EMPTY)
		h = (h + 1) & c->hash_mask;
	c->table[h] = i + 1;
}

/* Remove slot @i, shifting later probes back so lookups stay correct. */
static void hash_remove(struct fk_cache *c, uint32_t i)
{
	uint32_t h = hash_sec(c, c->slots[i].sec), next;

	while (c->table[h] != i + 1)
		h = (h + 1) & c->hash_mask;
	for (next = (h + 1) & c->hash_mask; c->table[next] != TABLE_EMPTY;
	     next = (next + 1) & c->hash_mask) {
		uint32_t want = hash_sec(c, c->slots[c->table[next] - 1].sec);

		/* Move the entry back unless its home lies in (h, next]. */
		if (((next - want) & c->hash_mask) >=
		    ((next - h) & c->hash_mask)) {
			c->table[h] = c->table[next];
			h = next;
		}
	}
	c->table[h] = TABLE_EMPTY;
}

/* @len rounded up to a multiple of 64 (alignment for any array). */
static size_t align64(size_t len)
{
	return (len + 63) & ~(size_t)63;
}

/*
 * The cache's arrays come from one allocation, the small ones first, so
 * that a writer's first huge page holds them and its first dirty sectors.
 * A writer fills whole batches of dirty sectors, so huge pages pay off
 * (bigmem.h); a reader touches a few clean slots, so it gets calloc()'s
 * lazily mapped pages.
 */
static int carve(struct fk_cache *c)
{
	uint32_t tsize = c->hash_mask + 1;
	size_t table_len = align64(tsize * sizeof(*c->table));
	size_t slots_len = align64(c->nslots * sizeof(*c->slots));
	size_t order_len = align64(c->max_dirty * sizeof(*c->order));
	size_t iov_len = align64(c->max_dirty * sizeof(*c->iov));
	unsigned char *p;

	/* The arena starts on a page boundary, where reads land. */
	c->mem_len = (table_len + slots_len + order_len + iov_len + 4095) &
		     ~(size_t)4095;
	c->mem_len += (size_t)c->nslots * c->lay.sec_len;
	c->is_dense = !c->lay.is_rarely_written &&
		      (uint64_t)c->max_dirty * c->lay.sec_len >= (1u << 20);
	p = c->is_dense ? fk_bigmem_alloc(1, c->mem_len)
			: calloc(1, c->mem_len);
	if (!(c->mem = p))
		return -ENOMEM;
	c->table = (uint32_t *)(void *)p;
	c->slots = (struct slot *)(void *)(p += table_len);
	c->order = (uint64_t *)(void *)(p += slots_len);
	c->iov = (struct iovec *)(void *)(p += order_len);
	c->arena = c->mem + c->mem_len - (size_t)c->nslots * c->lay.sec_len;
	return 0;
}

/*
 * The slot arrays, made when a slot is first used: an exFAT reader reads
 * its FAT through spans only, and a dry run or a run whose files are all
 * contiguous writes no FAT sector, so the cache's megabyte or more was
 * mapped and unmapped for nothing (two system calls and a page fault, on
 * every start-up).
 */
static int need_mem(struct fk_cache *c)
{
	return c->mem || !carve(c) ? 0 : -ENOMEM;
}

/* The disk changed under the spans (a flush wrote), or none was read. */
static void forget_spans(struct fk_cache *c)
{
	uint32_t i;

	for (i = 0; i < NSPANS; i++)
		c->spans[i].first = NO_SEC;
}

int fk_cache_new(struct fk_device *dev, const struct fk_cache_layout *layout,
		 size_t dirty_len, enum fk_cache_sync sync,
		 struct fk_cache **out)
{
	struct fk_cache *c = calloc(1, sizeof(*c));
	uint64_t max_dirty = dirty_len / layout->sec_len;
	uint32_t tsize = 1;

	if (!c)
		return -ENOMEM;
	if (max_dirty < 1)
		max_dirty = 1;
	if (max_dirty > layout->fat_secs)
		max_dirty = layout->fat_secs; /* never more than the FAT */
	c->dev = dev;
	c->lay = *layout;
	c->sync = sync;
	c->max_dirty = (uint32_t)max_dirty;
	c->nslots = c->max_dirty + CLEAN_BUDGET / layout->sec_len;
	while (tsize < 2 * c->nslots)
		tsize <<= 1;
	c->hash_mask = tsize - 1;
	c->last = NO_SLOT;
	c->span_secs =
		layout->sec_len < SPAN_LEN ? SPAN_LEN / layout->sec_len : 1;
	c->ra_secs = READ_AHEAD;
	c->page_secs = layout->sec_len < 4096 ? 4096 / layout->sec_len : 1;
	c->span_next = NO_SEC;
	if (layout->read_len) {
		uint32_t n = layout->read_len / layout->sec_len;

		n = n ? n : 1;
		c->ra_secs = n < READ_AHEAD ? n : READ_AHEAD;
		c->span_min = n < c->span_secs ? n : c->span_secs;
		c->span_cur = c->span_min;
	}
	forget_spans(c);
	c->bad_span = NO_SEC;
	*out = c;
	return 0;
}

void fk_cache_free(struct fk_cache *c)
{
	uint32_t i;

	if (!c)
		return;
	if (c->is_dense)
		fk_bigmem_free(c->mem, 1, c->mem_len);
	else
		free(c->mem);
	for (i = 0; i < NSPANS; i++)
		free(c->span_buf[i]);
	free(c);
}

/* A slot to (re)use: an empty one, or a clean one not used lately. */
static uint32_t victim(struct fk_cache *c)
{
	/*
	 * Dirty and loading slots never exceed max_dirty + READ_AHEAD, fewer
	 * than nslots (the clean budget is larger), so this ends.
	 */
	for (;;) {
		uint32_t i = c->hand;
		struct slot *s = &c->slots[i];

		c->hand = (c->hand + 1) % c->nslots;
		if (s->state == SLOT_EMPTY)
			return i;
		if (s->state == SLOT_DIRTY || s->state == SLOT_LOADING)
			continue;
		if (s->referenced) {
			s->referenced = 0;
			continue;
		}
		hash_remove(c, i);
		s->state = SLOT_EMPTY;
		return i;
	}
}

int fk_cache_patch_read(struct fk_cache *c, uint64_t off, unsigned char *buf,
			size_t len)
{
	uint64_t copy_len = (uint64_t)c->lay.fat_secs * c->lay.sec_len;
	size_t lo = 0, hi = c->npatches, i;
	int err;

	/* The first patch that ends past @off. */
	while (lo < hi) {
		const struct fk_cache_patch *p = &c->patches[(lo + hi) / 2];

		if (((uint64_t)p->first + p->nsecs) * c->lay.sec_len <= off)
			lo = (lo + hi) / 2 + 1;
		else
			hi = (lo + hi) / 2;
	}
	for (i = lo; i < c->npatches; i++) {
		const struct fk_cache_patch *p = &c->patches[i];
		uint64_t from = (uint64_t)p->first * c->lay.sec_len;
		uint64_t to = from + (uint64_t)p->nsecs * c->lay.sec_len;

		if (from >= off + len)
			break;
		from = from > off ? from : off;
		to = to < off + len ? to : off + len;
		err = fk_device_read(c->dev,
				     c->lay.fat_off + p->copy * copy_len + from,
				     buf + (from - off), (size_t)(to - from));
		if (err)
			return err;
	}
	return 0;
}

/*
 * Read @sec, and the uncached sectors after it, straight into free slots
 * with one vectored read: sequential FAT walks cost one system call per
 * READ_AHEAD sectors and no copying.  A sector read to be changed
 * (@is_change) brings only the rest of its page: the writer's search
 * read the pages its plans change, and the sectors past the last one
 * were, on a card, a request for bytes nobody needs.
 */
static int load(struct fk_cache *c, uint32_t sec, uint32_t *slot, int is_change)
{
	uint64_t fat_off = c->lay.fat_off + (uint64_t)c->lay.read_fat *
						    c->lay.fat_secs *
						    c->lay.sec_len;
	struct iovec iov[READ_AHEAD];
	uint32_t idx[READ_AHEAD];
	uint32_t n = 1, i;
	int err;

	if ((err = need_mem(c)))
		return err;
	/* With layout.read_len, the read ends at a multiple of it: a
	 * sector changed is read with its page, not into the next one. */
	while (n < c->ra_secs && sec + n < c->lay.fat_secs &&
	       (!c->span_min || (sec + n) % c->ra_secs) &&
	       (!is_change || (sec + n) % c->page_secs) &&
	       lookup(c, sec + n) == NO_SLOT)
		n++;
	for (i = 0; i < n; i++) {
		idx[i] = victim(c);
		c->slots[idx[i]].state = SLOT_LOADING; /* not a victim again */
		iov[i].iov_base = slot_data(c, idx[i]);
		iov[i].iov_len = c->lay.sec_len;
	}
	err = fk_device_readv(c->dev, fat_off + (uint64_t)sec * c->lay.sec_len,
			      iov, (int)n);
	for (i = 0; i < n && !err && c->npatches; i++)
		err = fk_cache_patch_read(c,
					  (uint64_t)(sec + i) * c->lay.sec_len,
					  slot_data(c, idx[i]), c->lay.sec_len);
	for (i = 0; i < n; i++) {
		struct slot *s = &c->slots[idx[i]];

		if (err) {
			s->state = SLOT_EMPTY;
			continue;
		}
		s->sec = sec + i;
		s->state = SLOT_CLEAN;
		s->referenced = i == 0; /* read-ahead goes first if unused */
		hash_insert(c, idx[i]);
	}
	if (!err) {
		c->stats.misses += n;
		*slot = idx[0];
	}
	return err;
}

/* Sector @sec from a span already read, or NULL: only while nothing is
 * dirty, when a span holds what the disk holds. */
static const unsigned char *in_span(const struct fk_cache *c, uint32_t sec)
{
	uint32_t i;

	for (i = 0; !c->ndirty && i < NSPANS; i++)
		if (c->spans[i].first != NO_SEC &&
		    sec - c->spans[i].first < c->spans[i].nsecs)
			return c->span_buf[i] +
			       (size_t)(sec - c->spans[i].first) *
				       c->lay.sec_len;
	return NULL;
}

/*
 * The slot holding @sec, read in on a miss.  With @span, a miss that a
 * span already holds is served from it instead (*@span set, *@slot
 * NO_SLOT): the exFAT checker's look at the bitmap's links, after the
 * open walked them in a span, cost a 32 KiB read-ahead into slots and
 * some 25 page faults of slots and hash table for one page in memory.
 */
static int find(struct fk_cache *c, uint32_t sec, uint32_t *slot,
		const unsigned char **span, int is_change)
{
	uint32_t i;

	if (sec >= c->lay.fat_secs)
		return FK_ECORRUPT;
	/* A chain walk asks for the same sector many times in a row.  A
	 * slot that is in use holds the sector it names, so the hint needs
	 * no invalidation. */
	i = c->last;
	if (i == NO_SLOT || c->slots[i].sec != sec ||
	    (c->slots[i].state != SLOT_CLEAN &&
	     c->slots[i].state != SLOT_DIRTY)) {
		if ((i = lookup(c, sec)) == NO_SLOT) {
			int err;

			if (span && (*span = in_span(c, sec))) {
				*slot = NO_SLOT;
				return 0;
			}
			if (!(err = load(c, sec, slot, is_change)))
				c->last = *slot;
			return err;
		}
	}
	c->slots[i].referenced = 1;
	c->last = i;
	*slot = i;
	return 0;
}

static int get(struct fk_cache *c, uint32_t sec, const unsigned char **data,
	       int is_change)
{
	const unsigned char *span = NULL;
	uint32_t i;
	int err = find(c, sec, &i, &span, is_change);

	if (!err)
		*data = i == NO_SLOT ? span : slot_data(c, i);
	return err;
}

int fk_cache_get(struct fk_cache *c, uint32_t sec, const unsigned char **data)
{
	return get(c, sec, data, 0);
}

int fk_cache_get_to_change(struct fk_cache *c, uint32_t sec,
			   const unsigned char **data)
{
	return get(c, sec, data, 1);
}

/* The span holding @sec, read now if no span does; NO_SLOT on failure. */
static uint32_t span_of(struct fk_cache *c, uint32_t sec)
{
	uint64_t fat_off = c->lay.fat_off + (uint64_t)c->lay.read_fat *
						    c->lay.fat_secs *
						    c->lay.sec_len;
	uint32_t len = c->span_secs, first, i, old = 0;
	struct span *s;

	for (i = 0; i < NSPANS; i++) {
		if (c->spans[i].first != NO_SEC &&
		    sec - c->spans[i].first < c->spans[i].nsecs)
			return i;
		if (c->spans[i].used < c->spans[old].used)
			old = i;
	}
	if (c->span_min) {
		/* A walk that goes on reads on from where it stopped, in
		 * longer pieces; a jump starts small again. */
		if (sec == c->span_next)
			len = c->span_cur * 2 < c->span_secs ? c->span_cur * 2
							     : c->span_secs;
		else
			len = c->span_min;
		c->span_cur = len;
	}
	first = sec == c->span_next && c->span_min ? sec : sec - sec % len;
	if (sec - c->want_lo < c->want_n) {
		/* Sectors a caller said it will walk: one read of the pages
		 * (or small spans) that hold them, a span's length at most. */
		uint32_t unit = c->span_min ? c->span_min : c->page_secs;

		first = c->want_lo - c->want_lo % unit;
		len = c->want_lo + c->want_n - first;
		len = (len + unit - 1) / unit * unit;
		len = len < c->span_secs ? len : c->span_secs;
		if (sec - first >= len)
			first = sec - sec % unit;
		if (c->span_min)
			c->span_cur = len;
		c->want_n = 0;
	}
	if (first == c->bad_span)
		return NO_SLOT;
	/* Each span on its own, made when first needed: an empty card's
	 * walks fit one, and 64 KiB comes from the heap where NSPANS of them
	 * at once were a fresh mapping, its system calls and faults. */
	if (!c->span_buf[old] &&
	    !(c->span_buf[old] = malloc((size_t)c->span_secs * c->lay.sec_len)))
		return NO_SLOT;
	s = &c->spans[old];
	s->first = NO_SEC;
	s->nsecs =
		c->lay.fat_secs - first < len ? c->lay.fat_secs - first : len;
	/* A span past the end of a short image is no error of the sectors
	 * asked for: those are then read as fk_cache_get() reads them. */
	if (fk_device_read(c->dev, fat_off + (uint64_t)first * c->lay.sec_len,
			   c->span_buf[old],
			   (size_t)s->nsecs * c->lay.sec_len) ||
	    fk_cache_patch_read(c, (uint64_t)first * c->lay.sec_len,
				c->span_buf[old],
				(size_t)s->nsecs * c->lay.sec_len)) {
		c->bad_span = first;
		return NO_SLOT;
	}
	c->stats.misses += s->nsecs;
	s->first = first;
	c->span_next = first + s->nsecs;
	return old;
}

void fk_cache_want_span(struct fk_cache *c, uint32_t first, uint32_t nsecs)
{
	c->want_lo = first;
	c->want_n = first < c->lay.fat_secs && nsecs <= c->lay.fat_secs - first
			    ? nsecs
			    : 0;
}

int fk_cache_get_span(struct fk_cache *c, uint32_t sec,
		      const unsigned char **data, uint32_t *first,
		      uint32_t *nsecs)
{
	uint32_t i;
	int err;

	if (sec >= c->lay.fat_secs)
		return FK_ECORRUPT;
	i = c->span_last;
	/* Dirty sectors live in slots only: a span would be stale. */
	if (!c->ndirty && (c->spans[i].first == NO_SEC ||
			   sec - c->spans[i].first >= c->spans[i].nsecs))
		i = span_of(c, sec);
	if (c->ndirty || i == NO_SLOT) {
		if ((err = fk_cache_get(c, sec, data)))
			return err;
		*first = sec;
		*nsecs = 1;
		return 0;
	}
	c->span_last = i;
	c->spans[i].used = ++c->span_clock;
	*data = c->span_buf[i];
	*first = c->spans[i].first;
	*nsecs = c->spans[i].nsecs;
	return 0;
}

/*
 * A flush the budget forced comes at no ordering point of the caller's,
 * so --sync (a -o sync mount, per batch) puts its barrier here.
 */
static int flush_budget(struct fk_cache *c)
{
	int err = fk_cache_flush(c);

	if (!err && c->sync == FK_CACHE_SYNC_BUDGET)
		err = fk_device_sync(c->dev);
	return err;
}

int fk_cache_get_dirty(struct fk_cache *c, uint32_t sec, unsigned char **data)
{
	uint32_t i;
	int err;

	if ((err = find(c, sec, &i, NULL, 1)))
		return err;
	if (c->slots[i].state != SLOT_DIRTY) {
		if (c->ndirty == c->max_dirty && (err = flush_budget(c)))
			return err;
		c->slots[i].state = SLOT_DIRTY;
		c->order[c->ndirty++] = (uint64_t)sec << 32 | i;
	}
	*data = slot_data(c, i);
	return 0;
}

int fk_cache_get_fresh(struct fk_cache *c, uint32_t sec, unsigned char **data)
{
	uint32_t i;
	int err;

	if (sec >= c->lay.fat_secs)
		return FK_ECORRUPT;
	if (lookup(c, sec) != NO_SLOT)
		return fk_cache_get_dirty(c, sec, data);
	if (c->ndirty == c->max_dirty && (err = flush_budget(c)))
		return err;
	if ((err = need_mem(c)))
		return err;
	i = victim(c);
	c->slots[i].sec = sec;
	c->slots[i].referenced = 1;
	c->slots[i].state = SLOT_CLEAN;
	hash_insert(c, i);
	return fk_cache_get_dirty(c, sec, data);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Dirty slots as (sector << 32 | slot) keys in sector order; the count.
 * fk_cache_get_dirty() lists each slot as it turns dirty, so a flush costs
 * its dirty sectors, not the size of the cache (--per-cluster flushes
 * after every entry).
 */
static uint32_t sort_dirty(struct fk_cache *c)
{
	qsort(c->order, c->ndirty, sizeof(*c->order), cmp_u64);
	return c->ndirty;
}

#define KEY_SEC(k)  ((uint32_t)((k) >> 32))
#define KEY_SLOT(k) ((uint32_t)(k))

/* One vectored write per run of adjacent sectors into one FAT copy. */
static int write_runs(struct fk_cache *c, uint32_t n, uint64_t copy_off)
{
	uint32_t start = 0, end, k;
	int err;

	while (start < n) {
		uint32_t first = KEY_SEC(c->order[start]);

		for (end = start + 1;
		     end < n && KEY_SEC(c->order[end]) == first + (end - start);
		     end++)
			;
		for (k = start; k < end; k++) {
			c->iov[k - start].iov_base =
				slot_data(c, KEY_SLOT(c->order[k]));
			c->iov[k - start].iov_len = c->lay.sec_len;
		}
		err = fk_device_writev(
			c->dev, copy_off + (uint64_t)first * c->lay.sec_len,
			c->iov, (int)(end - start));
		if (err)
			return err;
		c->stats.secs_written += end - start;
		start = end;
	}
	return 0;
}

int fk_cache_flush(struct fk_cache *c)
{
	uint64_t copy_len = (uint64_t)c->lay.fat_secs * c->lay.sec_len;
	uint32_t n, f, i;
	int err;

	if (!c->ndirty)
		return 0;
	forget_spans(c); /* even a failed write may have changed the disk */
	n = sort_dirty(c);
	for (f = 0; f < c->lay.nfats; f++) {
		if (!c->lay.is_mirrored && f != c->lay.read_fat)
			continue;
		if ((err = write_runs(c, n, c->lay.fat_off + f * copy_len)))
			return err;
		if (c->sync == FK_CACHE_SYNC_COPY &&
		    (err = fk_device_sync(c->dev)))
			return err;
	}
	for (i = 0; i < n; i++)
		c->slots[KEY_SLOT(c->order[i])].state = SLOT_CLEAN;
	c->ndirty = 0;
	c->stats.flushes++;
	return 0;
}

void fk_cache_set_sync(struct fk_cache *c, enum fk_cache_sync sync)
{
	c->sync = sync;
}

size_t fk_cache_dirty(const struct fk_cache *c)
{
	return c->ndirty;
}

void fk_cache_discard(struct fk_cache *c)
{
	uint32_t i;

	for (i = 0; c->mem && i < c->nslots; i++) {
		if (c->slots[i].state != SLOT_DIRTY)
			continue;
		hash_remove(c, i);
		c->slots[i].state = SLOT_EMPTY;
	}
	c->ndirty = 0;
}

void fk_cache_set_patches(struct fk_cache *c,
			  const struct fk_cache_patch *patches, size_t n)
{
	uint32_t i;

	/* What was read came from another mix of copies. */
	for (i = 0; c->mem && i < c->nslots; i++) {
		if (c->slots[i].state != SLOT_CLEAN)
			continue;
		hash_remove(c, i);
		c->slots[i].state = SLOT_EMPTY;
	}
	c->last = NO_SLOT;
	forget_spans(c);
	c->bad_span = NO_SEC;
	c->patches = n ? patches : NULL;
	c->npatches = n;
}

int fk_cache_is_patched(const struct fk_cache *c)
{
	return c->npatches != 0;
}

const struct fk_cache_stats *fk_cache_stats(const struct fk_cache *c)
{
	return &c->stats;
}
