/*
 * check-family.h: private to the checker.  Each family's struct
 * fk_family points at its checker (fk_family.check), which fk_check_new()
 * runs for the whole check: the FAT checker (fk_check_fat_family, its
 * phases in check-fat.c, check-tree.c, check-chain.c, check-salvage.c,
 * its repair in check-repair.c, its order in check-run.c), or the exFAT
 * one (check-exfat.c).  A family owns its state; findings (struct
 * fk_finding) and statistics (struct fk_check_stats) are the shared
 * currency fatcheck.c prints and turns into JSON, kept in struct
 * fk_check, the one record both families' states point at, and recorded
 * only through the functions of findings.h.
 */
#ifndef FATKIT_CHECK_FAMILY_H
#define FATKIT_CHECK_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "iface/findings.h"

struct fk_diag;

struct fk_check_family {
	/* Set up @state (the family's own) for @vol, recording findings
	   into @ck (findings.h); 0 or -ENOMEM. */
	int (*new_state)(struct fk_check *ck, struct fk_volume *vol,
			 const struct fk_check_opts *opts, void **state);
	void (*free_state)(void *state);
	int (*run)(void *state, struct fk_diag *diag);
	/* Apply what run() planned, in the family's write order; 0 or
	   -errno (fk_check_repair() names the device in @diag). */
	int (*repair)(void *state, struct fk_diag *diag);
	/*
	 * Is @vol's main boot region damaged so that the check should read
	 * the volume its backup region describes, the one a repair
	 * restores (fk_check_open())?  May be NULL: never.
	 */
	int (*wants_backup)(const struct fk_volume *vol);
};

#endif
