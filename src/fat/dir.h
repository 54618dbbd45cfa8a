/*
 * dir.h: directories.  Iterating the slots of the FAT12/16 fixed root or
 * of a cluster-chained directory, assembling VFAT long names, looking up
 * paths, and packing and unpacking short slots (dirplan.c plans and
 * writes new entries).  Open, next, lookup and walks go through the
 * volume's family (family.h), so they work on exFAT too; the slot-level
 * calls (keep_going, orphans, limits, stats, raw slots) are the FAT
 * family's and do nothing on exFAT (its checker uses exfat.h).
 */
#ifndef FATKIT_DIR_H
#define FATKIT_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "fat/slot.h"
#include "lib/names.h"
#include "table/fat.h"

struct fk_diag;
struct fk_dir;
struct fk_info_item;
struct fk_volume;

#define FK_DIR_MAX_ENTS 65536 /* a directory holds at most 2 MiB of slots */

/*
 * One directory entry, with its long name when it has a sound one.  On
 * exFAT it is a file entry set: no 8.3 name (short_name is "", raw is
 * spaces), the set's first entry in off/slot and its entries in nslots.
 */
struct fk_dirent {
	char name[FK_NAME_MAX]; /* long name, else the short display */
	char short_name[40];	/* 8.3 display form, UTF-8; "" on exFAT */
	unsigned char raw[11];	/* the short name as stored */
	uint8_t attr;
	uint8_t nt; /* NT lower-case flags */
	uint32_t first_clus;
	uint64_t size;	       /* bytes, as the entry says (DataLength) */
	uint64_t valid_len;    /* exFAT ValidDataLength; size on FAT */
	int is_no_fat_chain;   /* exFAT: one run, FAT entries unused */
	uint16_t mtime, mdate; /* FAT date and time words */
	uint16_t ctime, cdate, adate;
	uint8_t ctime_cs;   /* creation time, 10 ms units */
	uint8_t mtime_cs;   /* exFAT modification time, 10 ms units */
	int8_t mtime_tz;    /* exFAT UTC offset, 15-minute units */
	int has_mtime_tz;   /* mtime_tz is valid (else local time) */
	uint64_t off;	    /* volume byte offset of the short slot */
	uint32_t slot;	    /* index of the short slot in the dir */
	uint32_t nslots;    /* slots used, long-name slots included */
	int has_lfn;	    /* a long name matched its checksum */
	int is_lfn_damaged; /* long-name slots were there but bad */
	uint32_t nlfn_rsvd; /* of them, with a must-be-0 field not 0 */
	uint32_t dir_clus;  /* first cluster of the parent; 0: root */
};

/* What an iteration saw besides entries (for the checker). */
struct fk_dir_stats {
	uint32_t slots;	     /* slots read */
	uint32_t orphan_lfn; /* long-name slots that led nowhere */
	uint32_t after_end;  /* used slots found after the end marker */
	uint32_t end_slot;   /* slot of the end marker; slots if none */
	uint32_t zero_from;  /* after the marker, every slot from here on
				read all zeros (keep_going only) */
};

/*
 * Open directory @clus for reading (0 and, on FAT32, the root cluster mean
 * the root).  *@out is the caller's, freed by fk_dir_close().  Returns 0,
 * -ENOMEM.  Reading checks the chain as it goes.
 */
int fk_dir_open(struct fk_volume *vol, uint32_t clus, struct fk_dir **out);
/*
 * Open the directory @dent describes (NULL: the root); what exFAT needs,
 * whose directories have a length and may be NoFatChain runs.
 */
int fk_dir_open_ent(struct fk_volume *vol, const struct fk_dirent *dent,
		    struct fk_dir **out);
void fk_dir_close(struct fk_dir *dir);

/*
 * Walk the clusters of @ent's data as fk_chain_walk() does: a FAT chain,
 * or on exFAT a NoFatChain file's one run of ceil(size / cluster)
 * clusters, whose FAT entries are never read.  Returns as fk_chain_walk().
 */
int fk_dirent_walk(struct fk_volume *vol, const struct fk_dirent *ent,
		   int (*fn)(void *arg, const struct fk_run *run), void *arg,
		   struct fk_chain_info *info);

/*
 * Next entry (deleted slots and long-name slots are folded away; "." and
 * ".." and the volume label are returned).  Returns 1 with *@ent filled,
 * 0 at the end, FK_ECORRUPT (broken chain, over 65536 slots; @diag says
 * which) or -errno.  After fk_dir_keep_going() the walk continues past the
 * end marker and returns the entries hidden there, as Linux and fsck.fat
 * read them (Windows and mtools stop at the marker); fk_dir_stats() counts
 * their slots in after_end.
 */
int fk_dir_next(struct fk_dir *dir, struct fk_dirent *ent,
		struct fk_diag *diag);
void fk_dir_keep_going(struct fk_dir *dir);
/*
 * Read at most @nclus clusters of a chained directory (0: no limit; no
 * effect on the FAT12/16 fixed root).  The checker claims a chain before
 * reading it, and reads only what it owns.
 */
void fk_dir_set_limit(struct fk_dir *dir, uint32_t nclus);

/* Why long-name slots led to no entry (fsck.fat's cases). */
enum fk_lfn_orphan {
	FK_LFN_ORPHAN_FREE,    /* a free slot or the directory's end came
				  first: fsck.fat deletes */
	FK_LFN_ORPHAN_RESTART, /* a complete name, then another name's slot:
				  fsck.fat deletes */
	FK_LFN_ORPHAN_BROKEN,  /* out of sequence: fsck.fat leaves them,
				  fatcheck -r deletes them */
	FK_LFN_ORPHAN_ENTRY,   /* the name is unfinished when an entry
				  comes: fatcheck -r deletes them */
	FK_LFN_ORPHAN_SUM,     /* a complete name in sequence, but the entry
				  after it has another checksum: fatcheck -r
				  re-attaches it */
};

/*
 * Call @fn for each run of long-name slots the iteration drops: @n slots
 * from slot number @first of this directory (for the checker, which
 * reports them and deletes the ones fsck.fat would).  Before the
 * fk_dir_next() call that drops them returns.
 */
void fk_dir_on_orphan(struct fk_dir *dir,
		      void (*fn)(void *arg, uint32_t first, uint32_t n,
				 enum fk_lfn_orphan why),
		      void *arg);
const struct fk_dir_stats *fk_dir_stats(const struct fk_dir *dir);

/*
 * After fk_dir_defer_names(), fk_dir_next() leaves name and short_name ""
 * (has_lfn and every other field are as ever) until fk_dir_names() makes
 * them for the entry it returned last: the checker makes UTF-8 only for
 * the entries it says something of.  fk_dir_long_units() is that entry's
 * long name as stored, *@n UCS-2 units (0: it has none), borrowed until
 * the next fk_dir_next().
 */
void fk_dir_defer_names(struct fk_dir *dir);
void fk_dir_names(struct fk_dir *dir, struct fk_dirent *ent);
const uint16_t *fk_dir_long_units(struct fk_dir *dir, size_t *n);

/*
 * Look up absolute @path ("/" separated, case-insensitive on long and short
 * names).  "/" yields a synthesized root entry (FK_ATTR_DIR, first_clus the
 * FAT32 root cluster or 0).  Returns 0, -ENOENT, -ENOTDIR, -EINVAL (not
 * absolute), FK_ECORRUPT or -errno; @diag names the path.
 */
int fk_dir_lookup(struct fk_volume *vol, const char *path,
		  struct fk_dirent *ent, struct fk_diag *diag);

/*
 * The one timestamp rule of both families: the FAT date and time words
 * (FAT's and exFAT's Timestamp halves) and the 10 ms increment (0 or 100,
 * the odd second) of broken-down time @tm, clamped to what they can hold:
 * before 1980-01-01 00:00:00 is that instant, after 2107-12-31 23:59:59
 * is that one.  @tm NULL (a time no struct tm holds) clamps by the sign
 * of @t.  Pure.
 */
struct tm;
void fk_dos_time(const struct tm *tm, int64_t t, uint16_t *date, uint16_t *tod,
		 uint8_t *cs);

/*
 * Stamp @ent's creation, modification and access fields with @t, in local
 * time (FAT stores local time) or UTC when @is_utc (SOURCE_DATE_EPOCH),
 * by fk_dos_time()'s rule.
 */
void fk_dir_stamp(struct fk_dirent *ent, int64_t t, int is_utc);

/*
 * Raw slot access for repairs: read or write the 32-byte slot number
 * @slot of directory @dir_clus (0: the root), found by following the
 * directory's chain through the FAT cache.  Writes are immediate.
 * Returns 0, FK_ECORRUPT (the directory has no such slot) or -errno.
 */
int fk_dir_read_slot(struct fk_volume *vol, uint32_t dir_clus, uint32_t slot,
		     unsigned char e[FK_DIRENT_LEN]);
int fk_dir_write_slot(struct fk_volume *vol, uint32_t dir_clus, uint32_t slot,
		      const unsigned char e[FK_DIRENT_LEN]);
/* The volume byte offset of that slot, as the two above find it. */
int fk_dir_slot_off(struct fk_volume *vol, uint32_t dir_clus, uint32_t slot,
		    uint64_t *off);

/*
 * The first cluster of directory @clus, where 0 names the root (as ".."
 * and the callers say): 0 again on FAT12/16, whose root is the fixed
 * area, or the BPB's root cluster on FAT32, whose root is a chain.
 */
uint32_t fk_dir_resolve(const struct fk_volume *vol, uint32_t clus);

/* Is @ent "." or ".."? */
int fk_dirent_is_dot(const struct fk_dirent *ent);

/* Cluster of the directory @ent describes (0 for the FAT12/16 root). */
uint32_t fk_dirent_dir_clus(const struct fk_volume *vol,
			    const struct fk_dirent *ent);

/*
 * The FAT family's directory operations, as family.h describes each;
 * fk_fat_family (fat-family.c) holds them, and the shared calls above
 * reach them through vol->fam.
 */
int fk_fat_fam_dir_open(struct fk_volume *vol, const struct fk_dirent *dent,
			void **impl);
int fk_fat_fam_dir_next(void *impl, struct fk_dirent *ent,
			struct fk_diag *diag);
void fk_fat_fam_dir_close(void *impl);
int fk_fat_fam_walk(struct fk_volume *vol, const struct fk_dirent *ent,
		    int (*fn)(void *arg, const struct fk_run *run), void *arg,
		    struct fk_chain_info *info);
int fk_fat_fam_match(const struct fk_volume *vol, const char *name,
		     const struct fk_dirent *ent);
int fk_fat_fam_info(struct fk_volume *vol, struct fk_info_item *it,
		    struct fk_diag *diag);

#endif
