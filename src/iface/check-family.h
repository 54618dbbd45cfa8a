/*
 * check-family.h: private to the checker.  fk_check_new() picks one
 * family's checker for the whole run, the one whose @fam is the family
 * the volume was opened as: the FAT checker (fk_check_fat_family, its
 * phases in check-fat.c, check-tree.c, check-chain.c, check-salvage.c,
 * its repair in check-repair.c), or the exFAT one (check-exfat.c).  A
 * family owns its state;
 * findings (struct fk_finding) and statistics (struct fk_check_stats)
 * are the shared currency fatcheck.c prints and turns into JSON, kept
 * in struct fk_check for every family and recorded only through the
 * functions below (check.c).
 */
#ifndef FATKIT_CHECK_FAMILY_H
#define FATKIT_CHECK_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "engine/check.h"

#define NONE ((size_t)-1) /* no finding kept */

struct fk_family;

struct fk_check_family {
	const struct fk_family *fam; /* the family it checks */
	/* Set up @state for @vol, recording findings into @ck; 0 or
	   -ENOMEM. */
	int (*new_state)(struct fk_check *ck, struct fk_volume *vol,
			 const struct fk_check_opts *opts, void **state);
	void (*free_state)(void *state);
	int (*run)(void *state, struct fk_diag *diag);
	/* NULL: the FAT repair steps (check-repair.c; see check-fat.c). */
	int (*repair)(void *state, struct fk_diag *diag);
};

/* The FAT checker (check-fat.c) and the exFAT one (check-exfat.c). */
extern const struct fk_check_family fk_check_fat_family;
extern const struct fk_check_family fk_check_exfat_family;

/* "s" for a plural count. */
const char *ck_plural(uint64_t n);

/*
 * Record a finding about @path (NULL: the volume).  Every finding is
 * counted; the first FK_CHECK_MAX_FINDINGS are kept.  Returns its index,
 * or NONE when it was not kept (fk_check_run() then fails with -ENOMEM
 * if memory was short).
 */
size_t ck_report(struct fk_check *ck, enum fk_sev sev, const char *code,
		 const char *path, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Say what the repair will do about finding @idx (which may be NONE), and
 * note that there is a repair. */
void ck_set_fix(struct fk_check *ck, size_t idx, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Append to the message of finding @idx (which may be NONE). */
void ck_append_msg(struct fk_check *ck, size_t idx, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Add @path to the files finding @idx (which may be NONE) names. */
void ck_add_path(struct fk_check *ck, size_t idx, const char *path);

/* The counts @ck keeps (borrowed until fk_check_free()), for a family to
 * add its own to: files, clusters; ck_report() counts the findings. */
struct fk_check_stats *ck_stats(struct fk_check *ck);

/* Tell the caller's progress hook (if any) how far @phase is. */
void ck_progress(struct fk_check *ck, const char *phase, uint64_t done,
		 uint64_t total);

#endif
