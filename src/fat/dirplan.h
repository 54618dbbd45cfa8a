/*
 * dirplan.h: planned changes to one directory.  Opening scans the
 * directory once into a name index and a map of used slots; from then on,
 * looking names up, choosing unique 8.3 aliases and finding free slots
 * costs no rescan (creating the 5,000th file costs what the 1st did).
 * Changes are held in memory and written at commit time, in the order the
 * caller's crash-safety argument needs, whole blocks at a time.
 */
#ifndef FATKIT_DIRPLAN_H
#define FATKIT_DIRPLAN_H

#include <stdint.h>

#include "fat/dir.h"

struct fk_alloc;
struct fk_diag;
struct fk_plan;
struct fk_volume;
struct fk_dirplan;

/*
 * Scan directory @clus (0: the root) of @vol.  *@out is the caller's,
 * freed by fk_dirplan_close().  Returns 0, FK_ECORRUPT or -errno.  Only
 * deleted and end-marker slots are free: long-name slots that belong to
 * no entry count as taken (a repair may re-attach them).
 */
int fk_dirplan_open(struct fk_volume *vol, uint32_t clus,
		    struct fk_dirplan **out, struct fk_diag *diag);

/*
 * As fk_dirplan_open(), for a repair that settles the directory's damage
 * before it writes: live entries past the end
 * marker are not refused but taken to be made visible first (the end
 * markers before them deleted slots): they are entries like the others,
 * and a new entry placed after them deletes only the slots after them.
 */
int fk_dirplan_open_keep(struct fk_volume *vol, uint32_t clus,
			 struct fk_dirplan **out, struct fk_diag *diag);

/*
 * Plan a new, empty directory in cluster @clus (already planned by the
 * caller) whose parent starts at @parent_clus (0 for the root), with its
 * "." and ".." entries stamped with @times' dates and times.
 */
int fk_dirplan_new(struct fk_volume *vol, uint32_t clus, uint32_t parent_clus,
		   const struct fk_dirent *times, struct fk_dirplan **out);
void fk_dirplan_close(struct fk_dirplan *dp);

/* A directory's slots as plain data, for fk_dirplan_find_free(). */
struct fk_slot_map {
	const uint8_t *used;  /* per slot: nonzero when taken */
	uint32_t nslots;      /* slots in all blocks */
	uint32_t per_block;   /* slots per block: a cluster, or a sector of
				the fixed root */
	uint32_t nold;	      /* blocks on disk; later ones are new */
	const uint32_t *clus; /* cluster of each block; NULL: fixed root */
};

/*
 * First run of @n free slots of @map at or after slot @from.  A run goes
 * on from one block into the next only when one write puts both on disk:
 * two new blocks, or two old ones adjacent on disk (any two of the fixed
 * root); never from an old block into a new one.  Returns 0 and *@first,
 * or -ENOSPC when no run fits in the slots there are.
 */
int fk_dirplan_find_free(const struct fk_slot_map *map, uint32_t from,
			 uint32_t n, uint32_t *first);

/* First cluster of the directory (0: the FAT12/16 fixed root). */
uint32_t fk_dirplan_clus(const struct fk_dirplan *dp);

/*
 * Look @name up (long or short, case-insensitive).  Returns 1 and fills
 * @ent (names included) and *@id, 0 when absent.  Planned entries count.
 */
int fk_dirplan_find(struct fk_dirplan *dp, const char *name,
		    struct fk_dirent *ent, uint32_t *id);

/*
 * Plan a new entry @name with the fields of @fields (attr, first_clus,
 * size, times): a long name and a unique alias when the name is not a
 * plain 8.3 one, in the first run of free slots, growing the directory by
 * a zeroed cluster from @alloc when it is full.  *@id names the entry for
 * fk_dirplan_set().  Returns 0, -EEXIST, -EINVAL (bad name), -ENOSPC
 * (fixed root full, or 65536 slots) or -ENOMEM.
 */
int fk_dirplan_add(struct fk_dirplan *dp, struct fk_alloc *alloc,
		   const char *name, const struct fk_dirent *fields,
		   uint32_t *id, struct fk_diag *diag);

/* Replace the fields (not the name) of entry @id. */
void fk_dirplan_set(struct fk_dirplan *dp, uint32_t id,
		    const struct fk_dirent *fields);

/* A caller's number attached to entry @id (FK_DIRPLAN_NO_TAG if none). */
#define FK_DIRPLAN_NO_TAG UINT32_MAX
void fk_dirplan_set_tag(struct fk_dirplan *dp, uint32_t id, uint32_t tag);
uint32_t fk_dirplan_tag(const struct fk_dirplan *dp, uint32_t id);

/* Clusters the directory grows by (to chain and count); borrowed. */
const struct fk_plan *fk_dirplan_growth(const struct fk_dirplan *dp);

/*
 * Commit, in three steps the caller orders around its FAT flushes:
 * write_fresh writes the new blocks in full (unreachable until linked);
 * link puts the growth's link from the old last cluster in the FAT cache;
 * write_changes rewrites each changed old block once.  Each returns 0 or
 * -errno.  Slot writes to neighbouring blocks are merged.
 */
int fk_dirplan_write_fresh(struct fk_dirplan *dp);
int fk_dirplan_link(struct fk_dirplan *dp);
/* The cluster whose FAT entry fk_dirplan_link() writes; 0: none. */
uint32_t fk_dirplan_link_from(const struct fk_dirplan *dp);
int fk_dirplan_write_changes(struct fk_dirplan *dp);

#endif
