/*
 * dirent.h: directories as both families list them, for the engines,
 * the programs and the families alike.  An entry (struct fk_dirent) is a
 * FAT short entry with its long name, or an exFAT file entry set; an
 * open directory, a lookup and a walk of an entry's clusters go through
 * the volume's family (vol->fam, family.h), so the callers never ask
 * which family it is.  The FAT family's slot-level calls on an open
 * directory are fat/dir.h's.
 */
#ifndef FATKIT_DIRENT_H
#define FATKIT_DIRENT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/names.h"

struct fk_chain_info;
struct fk_diag;
struct fk_dir;
struct fk_run;
struct fk_volume;

/* Attribute bits: FAT's attribute byte, the low bits of exFAT's
 * FileAttributes (spec 7.4.4). */
#define FK_ATTR_RO	0x01
#define FK_ATTR_HIDDEN	0x02
#define FK_ATTR_SYSTEM	0x04
#define FK_ATTR_VOLUME	0x08
#define FK_ATTR_DIR	0x10
#define FK_ATTR_ARCHIVE 0x20

/* Do attributes @attr make a volume label (the volume bit without the
 * directory bit: the pair is no label to Windows or fsck.fat)? */
int fk_attr_is_label(uint8_t attr);

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
 * The first cluster of directory @clus, where 0 names the root (as ".."
 * and the callers say): 0 again on FAT12/16, whose root is the fixed
 * area, or the BPB's root cluster on FAT32, whose root is a chain.
 */
uint32_t fk_dir_resolve(const struct fk_volume *vol, uint32_t clus);

/* Cluster of the directory @ent describes (0 for the FAT12/16 root). */
uint32_t fk_dirent_dir_clus(const struct fk_volume *vol,
			    const struct fk_dirent *ent);

/*
 * The family's own iterator behind @dir when the family whose dir_open
 * op is @dir_open opened it, else NULL: for a family's calls on its own
 * directories (fat/dir.h's slot-level ones).
 */
void *fk_dir_impl(const struct fk_dir *dir,
		  int (*dir_open)(struct fk_volume *vol,
				  const struct fk_dirent *dent, void **impl));

#endif
