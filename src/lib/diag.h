/*
 * diag.h: error detail carried from the core to the one place that prints.
 *
 * Core functions return 0 or a negative errno; the context a user needs
 * (which path, which cluster, need versus free) travels in a struct fk_diag
 * that the caller owns.  Only the programs print it (fk_report(), cli.h).
 */
#ifndef FATKIT_DIAG_H
#define FATKIT_DIAG_H

#include <errno.h>
#include <stddef.h>

/*
 * A damaged image is input, not a bug: it gets its own errno, negative as
 * every error the core returns, so `err < 0` tests catch it too.
 */
#define FK_ECORRUPT (-EUCLEAN)

/*
 * What to run about the damage a reason describes.  The core flags it and
 * the program words it after the reason (cli.c), so the core never names
 * a program or the arguments that reach the volume again.
 */
enum fk_diag_hint {
	FK_HINT_NONE,
	FK_HINT_CHECK,	     /* "; run fatcheck" */
	FK_HINT_REPAIR,	     /* "; run 'fatcheck -r IMAGE'" */
	FK_HINT_REPAIR_LOST, /* ": run 'fatcheck -r IMAGE'", after a reason
				that ends by counting lost clusters */
};

struct fk_diag {
	char what[1024];  /* the subject: a path inside the volume, or IMAGE */
	char reason[512]; /* our words; empty: strerror() of the error */
	enum fk_diag_hint hint; /* cleared by a new reason */
};

/*
 * Record @what and a printf-style reason in @diag (which may be NULL).
 * A NULL @what or @fmt leaves that part as it was; the first subject set
 * wins only if @what is NULL later, so inner layers can name a path and
 * outer ones need not overwrite it.
 */
void fk_diag_set(struct fk_diag *diag, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Flag what to run about the damage @diag's reason describes. */
void fk_diag_hint(struct fk_diag *diag, enum fk_diag_hint hint);

/* Set the subject of @diag only if none is recorded yet. */
void fk_diag_subject(struct fk_diag *diag, const char *what);

/*
 * Format the REASON for error @err (negative errno) into @buf: the recorded
 * reason, else strerror(-err) followed by the recorded detail in
 * parentheses when both exist (see fk_diag_detail).  @diag may be NULL.
 */
void fk_diag_reason(const struct fk_diag *diag, int err, char *buf, size_t len);

/*
 * Append printf-style text to the recorded reason or detail.  With
 * nothing recorded yet, the text follows strerror(-@err).
 */
void fk_diag_append(struct fk_diag *diag, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Record a detail that is printed after strerror() text in parentheses,
 * as in `No space left on device (need N clusters, M free)`.
 */
void fk_diag_detail(struct fk_diag *diag, const char *what, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));

#endif
