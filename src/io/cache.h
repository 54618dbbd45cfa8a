/*
 * cache.h: a bounded cache of FAT sectors.  Reads come from one FAT copy;
 * dirty sectors are held (up to a byte budget) and a flush writes each
 * once to every FAT copy that mirrors, in sector order, adjacent sectors
 * in one vectored write.  While nothing is dirty, chain walks may borrow
 * whole spans of sectors.  It never decides when an ordering point is:
 * callers flush there.  Sector numbers are relative to the FAT start.
 */
#ifndef FATKIT_CACHE_H
#define FATKIT_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct fk_device;
struct fk_cache;

struct fk_cache_layout {
	uint32_t sec_len;  /* bytes per sector */
	uint64_t fat_off;  /* byte offset of FAT copy 0 in the volume */
	uint32_t fat_secs; /* sectors per FAT copy */
	uint32_t nfats;	   /* copies on disk */
	uint32_t read_fat; /* the copy reads come from (FAT32 active FAT) */
	int is_mirrored;   /* write every copy; else only read_fat */
	/*
	 * Writes are rare (exFAT's FAT: only fragmented files have a
	 * chain): memory in ordinary lazily mapped pages, as for a reader,
	 * not in huge pages a few reads would make the kernel clear whole.
	 */
	int is_rarely_written;
	/*
	 * Bytes a miss reads (0: a sector and 63 after it, or a 64 KiB span
	 * for a chain walk).  Set, a miss reads at most this much and a
	 * span this much, doubling while a walk reads on from the end of
	 * the last one: on a card, where every byte read costs time, a
	 * writer that looks at a few scattered sectors reads little.
	 */
	uint32_t read_len;
};

/* When a flush fsyncs. */
enum fk_cache_sync {
	FK_CACHE_NOSYNC,      /* never (the caller syncs) */
	FK_CACHE_SYNC_BUDGET, /* after each flush the budget forced (-o sync
				 per batch); callers sync their own flushes
				 at their ordering points */
	FK_CACHE_SYNC_COPY,   /* after each FAT copy's write, as the kernel's
				 per-buffer sync did (--per-cluster --sync) */
};

struct fk_cache_stats {
	uint64_t secs_written; /* FAT sectors written, all copies */
	uint64_t flushes;      /* flushes that wrote something */
	uint64_t misses;       /* sectors read from the device */
};

/*
 * Create a cache for @layout on @dev.  @dirty_len bounds the dirty bytes
 * held before a flush (at least one sector is always allowed); @sync
 * says when a flush fsyncs.  *@out is the caller's; free it
 * with fk_cache_free() (which does not flush).  Returns 0 or -ENOMEM.
 */
int fk_cache_new(struct fk_device *dev, const struct fk_cache_layout *layout,
		 size_t dirty_len, enum fk_cache_sync sync,
		 struct fk_cache **out);
void fk_cache_free(struct fk_cache *cache);

/*
 * Borrow sector @sec for reading (fk_cache_get) or for changing it
 * (fk_cache_get_dirty, which marks it dirty and may first flush when the
 * budget is full).  The pointer is valid until the next call on @cache.
 * Returns 0, FK_ECORRUPT for a sector outside the FAT, or -errno.
 */
int fk_cache_get(struct fk_cache *cache, uint32_t sec,
		 const unsigned char **data);
int fk_cache_get_dirty(struct fk_cache *cache, uint32_t sec,
		       unsigned char **data);
/*
 * fk_cache_get() of a sector a writer is about to change (to check it
 * first): a miss reads the rest of its page, as fk_cache_get_dirty()'s
 * do, not the sectors after it that no search of the writer's read and
 * a card serves in a request of their own.
 */
int fk_cache_get_to_change(struct fk_cache *cache, uint32_t sec,
			   const unsigned char **data);

/*
 * Borrow the sectors around @sec for reading as one piece of memory:
 * *@data holds sectors *@first .. *@first + *@nsecs - 1, @sec among them.
 * While no sector is dirty that is a whole aligned span read in one call
 * (and kept apart from the slots fk_cache_get() uses), else sector @sec
 * alone.  A chain walk then needs a lookup per span, not per sector.  The
 * pointer is valid until the next call on @cache.  Returns 0, FK_ECORRUPT
 * for a sector outside the FAT, or -errno.
 */
int fk_cache_get_span(struct fk_cache *cache, uint32_t sec,
		      const unsigned char **data, uint32_t *first,
		      uint32_t *nsecs);

/*
 * The next span read for a sector in @first .. @first + @nsecs - 1 covers
 * the pages (with layout.read_len: the small spans) that hold those
 * sectors, in one read of at most a span: for a caller that knows which
 * links it is about to walk (exFAT's bitmap, up-case table and root side
 * by side), where a writer's spans would start small and double, and a
 * reader's would be 64 KiB of FAT for a few links.  Reads of other
 * sectors are as before.
 */
void fk_cache_want_span(struct fk_cache *cache, uint32_t first, uint32_t nsecs);

/*
 * fk_cache_get_dirty() for a caller that overwrites all of sector @sec:
 * on a miss the sector is not read, and *@data holds garbage until the
 * caller has filled it.  Returns 0, FK_ECORRUPT or -errno.
 */
int fk_cache_get_fresh(struct fk_cache *cache, uint32_t sec,
		       unsigned char **data);

/* Sectors @first .. @first + @nsecs - 1 of every read come from copy
 * @copy instead of the read copy. */
struct fk_cache_patch {
	uint32_t first, nsecs;
	uint32_t copy;
};

/*
 * Read the FAT as the read copy with the runs @patches[0 .. @n - 1]
 * (ascending, apart) taken from other copies: the FAT a checker judged
 * to be the sound one, before any copy holds it whole.  @patches is
 * borrowed until the next call (@n 0: none).  Forgets the clean sectors
 * read before; dirty ones are kept (they are written to every copy).
 */
void fk_cache_set_patches(struct fk_cache *cache,
			  const struct fk_cache_patch *patches, size_t n);

/* Are patches set? */
int fk_cache_is_patched(const struct fk_cache *cache);

/*
 * Lay the patches over @len bytes @buf read from the read copy at byte
 * @off of a copy (for readers that stream the FAT past the cache).
 * Returns 0 or -errno.
 */
int fk_cache_patch_read(struct fk_cache *cache, uint64_t off,
			unsigned char *buf, size_t len);

/*
 * Write every dirty sector to each mirrored FAT copy (merged runs, sector
 * order), fsyncing only in FK_CACHE_SYNC_COPY mode: an explicit flush is
 * an ordering point, and its caller decides where the barrier goes.
 * Returns 0 or -errno; on error the sectors stay dirty.
 */
int fk_cache_flush(struct fk_cache *cache);

/* Change the sync mode. */
void fk_cache_set_sync(struct fk_cache *cache, enum fk_cache_sync sync);

/* Forget every dirty change (a refused operation that wrote nothing). */
void fk_cache_discard(struct fk_cache *cache);

const struct fk_cache_stats *fk_cache_stats(const struct fk_cache *cache);

#endif
