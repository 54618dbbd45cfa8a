/*
 * findings.h: what a check records, whichever family's checker runs it:
 * findings as data (severity, code, path, message, what the repair does),
 * the counts, the options and the progress hook.  Both families' checkers
 * record through the functions below (findings.c); the engine
 * (engine/check.c) keeps the record and hands it to the programs.
 */
#ifndef FATKIT_FINDINGS_H
#define FATKIT_FINDINGS_H

#include <stddef.h>
#include <stdint.h>

struct fk_check;
struct fk_check_family;
struct fk_dirent;
struct fk_volume;

#define FK_CHECK_MAX_DEPTH    256   /* directory nesting that is checked */
#define FK_CHECK_MAX_FINDINGS 10000 /* kept for listing; the rest counted */

enum fk_sev {
	FK_SEV_NOTE,
	FK_SEV_WARNING,
	FK_SEV_ERROR,
};

struct fk_finding {
	enum fk_sev sev;
	const char *code; /* stable short name, e.g. "cross-link" */
	char *path;	  /* in-volume path; NULL: the volume itself */
	char *msg;
	char *fix;    /* what the repair does; NULL: nothing safe */
	int is_fixed; /* the repair was applied */
	char **paths; /* the files its message names (the owners of its
			 clusters, both sides of a cross-link); @npaths */
	size_t npaths;
};

struct fk_check_opts {
	int is_strict;	   /* preallocated tails are errors */
	int trim_prealloc; /* plan to free preallocated tails */
	int salvage;	   /* save lost chains as /FOUND.000/FILEnnnn.CHK */
	uint32_t fat_copy; /* where FAT copies differ, keep this one
			      (1-based; at most nfats); 0: judge */
	int64_t now;	   /* timestamp for what a salvage creates */
	int is_thorough;   /* exFAT: read every directory past its end
			      marker, lost clusters or not (a repair) */
	/* Optional: @phase ("FAT", "files", "lost") has done @done of @total.
	 */
	void (*progress)(void *arg, const char *phase, uint64_t done,
			 uint64_t total);
	/* Optional: each file or directory checked, with its chain length. */
	void (*visit)(void *arg, const char *path, const struct fk_dirent *ent,
		      uint32_t nclus);
	void *arg;
};

struct fk_check_stats {
	uint32_t files, dirs;
	uint32_t used_clus;   /* allocated in the FAT (not free, not bad) */
	uint32_t free_clus;   /* free in the FAT */
	uint32_t bad_clus;    /* marked bad */
	uint32_t lost_clus;   /* allocated, owned by nobody */
	uint32_t lost_chains; /* lost clusters grouped by their links */
	uint32_t tail_clus;   /* chained past what file sizes need */
	uint32_t errors, warnings, notes; /* found, listed or not */
	uint32_t fixed;			  /* findings a repair dealt with */
	uint32_t unlisted;		  /* found but not kept in the list */
	int has_repairs;		  /* something is planned */
	/* lost chains the repair frees (none when --salvage saves them) */
	uint32_t freed_chains;
};

/* "error", "warning" or "note". */
const char *fk_sev_name(enum fk_sev sev);

#define NONE ((size_t)-1) /* no finding kept */

/* The findings kept, in the order found. */
struct ck_finding_list {
	struct fk_finding *v;
	size_t n, cap;
};

/*
 * What every check keeps, whichever family's checker runs it: the
 * findings, the counts, the options and the progress hook.  The engine
 * allocates it (fk_check_new()) and hands it to the family's new_state(),
 * whose state (@fam_state: the FAT checker's struct fat_check,
 * fat/check-int.h; exFAT's struct fk_exfat_check) points back at it and
 * records into it only through the functions below.
 */
struct fk_check {
	const struct fk_check_family *fam; /* chosen by fk_check_new() */
	void *fam_state;
	struct fk_volume *vol;
	struct fk_check_opts o;
	struct fk_check_stats st;
	int is_nomem; /* a finding could not be kept for want of memory */
	struct ck_finding_list finds;
};

/* "s" for a plural count. */
const char *ck_plural(uint64_t n);

/* A malloc()ed string, or NULL. */
char *ck_format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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

/* Free the findings @ck keeps. */
void ck_findings_free(struct fk_check *ck);

#endif
