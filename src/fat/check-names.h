/*
 * check-names.h: the names of a directory's entries, as the tree walk
 * checks them (check-names.c).  For check-tree.c only.
 */
#ifndef FATKIT_CHECK_NAMES_H
#define FATKIT_CHECK_NAMES_H

#include <stdint.h>

#include "fat/check-dir.h"
#include "fat/check-int.h"
#include "fat/dir.h"

struct fk_diag;

/* Free a directory's name store or name table (struct dirctx's). */
void ck_free_store(struct name_store *st);
void ck_free_table(struct name_table *t);

/* Before @ent (no "." nor label) is checked: note which of its names an
 * earlier entry of @d has.  Returns 0 or -ENOMEM. */
int ck_note_names(struct dirctx *d, const struct fk_dirent *ent);

/* Check @ent's names, and plan new ones where they are not valid or
 * taken.  Returns 0, -errno or FK_ECORRUPT (@diag says). */
int ck_check_names(struct fat_check *ck, struct dirctx *d,
		   const struct fk_dirent *ent, struct fk_diag *diag);

/* Delete the long-name slots before an entry that cannot have a long
 * name ("." or "..", a label).  Returns 0 or -ENOMEM. */
int ck_drop_reattach(struct fat_check *ck, struct dirctx *d);

/* Report the orphaned long-name slots of @d noted so far. */
void ck_report_orphans(struct fat_check *ck, struct dirctx *d);

/* fk_dir_on_orphan()'s callback; @arg is the struct dirctx. */
void ck_on_orphan(void *arg, uint32_t first, uint32_t n,
		  enum fk_lfn_orphan why);

#endif
