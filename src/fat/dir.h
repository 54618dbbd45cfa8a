/*
 * dir.h: the FAT family's directories.  Iterating the slots of the
 * FAT12/16 fixed root or of a cluster-chained directory, assembling VFAT
 * long names, and the slot-level calls on an open directory (keep_going,
 * orphans, limits, deferred names, stats, raw slots), which do nothing on
 * another family's directory.  Entries, opening, lookup and walks are
 * both families' (iface/dirent.h); dirplan.c plans and writes new
 * entries.
 */
#ifndef FATKIT_DIR_H
#define FATKIT_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "fat/slot.h"
#include "iface/dirent.h"
#include "lib/names.h"
#include "table/fat.h"

struct fk_diag;
struct fk_dir;
struct fk_info_item;
struct fk_volume;

#define FK_DIR_MAX_ENTS 65536 /* a directory holds at most 2 MiB of slots */

/* What an iteration saw besides entries (for the checker). */
struct fk_dir_stats {
	uint32_t slots;	     /* slots read */
	uint32_t orphan_lfn; /* long-name slots that led nowhere */
	uint32_t after_end;  /* used slots found after the end marker */
	uint32_t end_slot;   /* slot of the end marker; slots if none */
	uint32_t zero_from;  /* after the marker, every slot from here on
				read all zeros (keep_going only) */
};

/* Read on past the end marker (fk_dir_next(), iface/dirent.h). */
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

/* Is @ent "." or ".."? (fk_fat_family's is_dot) */
int fk_dirent_is_dot(const struct fk_dirent *ent);

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
