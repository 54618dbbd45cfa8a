/*
 * check-dir.h: the directory the tree walk is in (struct dirctx) and the
 * entry it is checking, shared by the walk's files only: check-tree.c
 * (the walk), check-names.c (names, duplicates, long names, orphaned
 * slots) and check-dots.c ("." and "..").
 */
#ifndef FATKIT_CHECK_DIR_H
#define FATKIT_CHECK_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "fat/check-int.h"
#include "fat/dir.h"
#include "fat/slot.h"

struct name_key {
	uint64_t hash; /* fk_name_hash(name) */
	uint32_t slot;
	size_t off;	  /* of the name in the store's bytes */
	const char *name; /* there, once the store is complete */
};

/* Names of one directory, copied end to end, and a key for each. */
struct name_store {
	LIST(struct name_key, keys);
	LIST(char, bytes);
};

/* A name of an entry walked so far, folded (fk_lfn_fold()). */
struct seen_key {
	uint64_t hash; /* fk_name_hash() of the name */
	uint32_t slot;
	uint32_t off, len; /* its units in the table's store */
};

/* The names of the entries walked so far, and a hash table (open
 * addressing) of the first key with each name: key number + 1, 0 empty. */
struct name_table {
	LIST(struct seen_key, keys);
	LIST(uint16_t, units);
	uint32_t *tab;
	size_t cap;
};

/* Directory being walked. */
struct dirctx {
	struct fat_check *ck;
	uint32_t first;	 /* first cluster; 0: the FAT12/16 fixed root */
	uint32_t nclus;	 /* clusters claimed (read no further); 0: root */
	uint32_t parent; /* what ".." must say (0: the root) */
	int is_root;
	int depth;
	uint32_t run; /* the run of its chain; ROOT_AREA: fixed root */
	const struct fk_dirent *self; /* the entry naming it; NULL: root */
	struct fk_dir *dir;	      /* its slots, as the walk reads them */
	/* The entry being checked; its names are made, and its path
	 * pushed, only when something is said of it (ck_ent_path()). */
	struct fk_dirent *ent;
	int is_pushed;
	size_t path_old; /* the path's length before it */
	/* The names of the entries so far, and which names of the entry
	 * in dup_slot an earlier one has (dup_what), the earliest such. */
	struct name_table seen;
	uint32_t dup_slot, dup_earlier;
	unsigned dup_what;
	/* Every name of the directory, sorted by hash, read only when an
	 * entry may be renamed; and the names this run gives (a new short
	 * name, a re-attached long name), taken for every later choice. */
	struct name_store all;
	int has_all;
	struct name_table given;
	unsigned next_fsck; /* FSCKnnnn.REN numbers below it are taken */
	int has_dot, has_dotdot;
	uint32_t orphan_first, orphan_n; /* orphaned long-name slots not yet */
	enum fk_lfn_orphan orphan_why;	 /* reported, and why */
	uint32_t damaged_first;	 /* long-name slots the next entry does */
	uint32_t damaged_n;	 /* not match (FK_LFN_ORPHAN_ENTRY, _SUM) */
	int is_damaged_sum;	 /* ... a complete name (FK_LFN_ORPHAN_SUM) */
	size_t sum_find;	 /* the finding about them (_SUM); or NONE */
	uint32_t reattach_first; /* the entry being checked follows a */
	uint32_t reattach_n;	 /* complete name whose checksum is wrong */
	size_t reattach_find;
	uint32_t ent_first;  /* first slot of the entry being checked */
	size_t fixes_from;   /* entry fixes planned before this walk */
	uint32_t hidden_end; /* one past the last entry read past the end
				marker; 0: none */
	/* Entries whose slots take the place of "." or "..", moved by
	 * dir_after() (two at most: one starts in each slot). */
	struct {
		uint32_t first, n; /* its slots, long name included */
		size_t finding;
	} moves[2];
	int nmoves;
};

static inline int ck_is_label(const struct fk_dirent *ent)
{
	return fk_attr_is_label(ent->attr);
}

/* Fill @f as an EF_SET of @ent in @d, with nothing set yet. */
void ck_entry_set(struct ent_fix *f, const struct dirctx *d,
		  const struct fk_dirent *ent);

/* Plan the deletion of the @n slots from @first of the directory at
 * @dir_clus.  Returns 0 or -ENOMEM. */
int ck_plan_erase(struct fat_check *ck, uint32_t dir_clus, uint32_t first,
		  uint32_t n);

/* Plan the deletion of @ent with every long-name slot before it. */
int ck_plan_delete(struct fat_check *ck, const struct dirctx *d,
		   const struct fk_dirent *ent);

/* Room for the path of any entry of the current directory.  0 or -ENOMEM. */
int ck_reserve_path(struct fat_check *ck);

/* @d's entry, with its names made. */
const struct fk_dirent *ck_named(struct dirctx *d);

/* The path of @d's entry, made on the first call for it; borrowed until
 * ck_pop_entry(). */
const char *ck_ent_path(struct dirctx *d);

/* Done with @d's entry: the path is the directory's again. */
void ck_pop_entry(struct dirctx *d);

#endif
