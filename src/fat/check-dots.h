/*
 * check-dots.h: "." and ".." of a subdirectory, as the tree walk checks
 * them (check-dots.c).  For check-tree.c only.
 */
#ifndef FATKIT_CHECK_DOTS_H
#define FATKIT_CHECK_DOTS_H

#include <stdint.h>

#include "fat/check-dir.h"
#include "fat/check-int.h"
#include "fat/dir.h"

/* Is @ent, in slot 0 or 1 of a subdirectory, what is left of "." or
 * ".." there? */
int ck_is_damaged_dot(const struct dirctx *d, const struct fk_dirent *ent);

/* Check the "." or ".." entry @ent (or a damaged one) of @d. */
int ck_check_dot(struct fat_check *ck, struct dirctx *d,
		 const struct fk_dirent *ent);

/* A missing "." (@dot) or "..": recreated when its slot is or will be
 * free. */
int ck_missing_dot(struct fat_check *ck, const struct dirctx *d, int dot,
		   uint32_t end_slot);

/* Note that @ent's slots begin in slot 0 or 1, where "." and ".."
 * belong (moved by ck_plan_moves()). */
void ck_note_move(struct fat_check *ck, struct dirctx *d,
		  const struct fk_dirent *ent);

/* Plan the moves ck_note_move() noted, after @d's entries. */
int ck_plan_moves(struct fat_check *ck, struct dirctx *d,
		  const struct fk_dir_stats *st);

#endif
