/*
 * check-family.h: private to the checker.  fk_check_new() picks one
 * family for the whole run from the volume's type: the FAT checker in
 * check.c, or the exFAT one in check-exfat.c.  A family owns its state;
 * findings (struct fk_finding) and statistics (struct fk_check_stats)
 * are the shared currency fatcheck.c prints and turns into JSON.
 */
#ifndef FATKIT_CHECK_FAMILY_H
#define FATKIT_CHECK_FAMILY_H

#include <stddef.h>

#include "check.h"

struct fk_check_family {
	/* Set up @state for @vol; 0 or -ENOMEM. */
	int (*new_state)(struct fk_volume *vol,
			 const struct fk_check_opts *opts, void **state);
	void (*free_state)(void *state);
	int (*run)(void *state, struct fk_diag *diag);
	int (*repair)(void *state, struct fk_diag *diag);
	const struct fk_finding *(*findings)(const void *state, size_t *n);
	const struct fk_check_stats *(*stats)(const void *state);
};

/* The exFAT checker (check-exfat.c). */
extern const struct fk_check_family fk_check_exfat_family;

#endif
