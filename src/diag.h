/*
 * diag.h: error detail carried from the core to the one place that prints.
 *
 * Core functions return 0 or a negative errno; the context a user needs
 * (which path, which cluster, need versus free) travels in a struct fk_diag
 * that the caller owns.  Only fk_report() prints it.
 */
#ifndef FATKIT_DIAG_H
#define FATKIT_DIAG_H

#include <errno.h>

/*
 * A damaged image is input, not a bug: it gets its own errno, negative as
 * every error the core returns, so `err < 0` tests catch it too.
 */
#define FK_ECORRUPT (-EUCLEAN)

struct fk_diag {
	char what[1024];  /* the subject: a path inside the volume, or IMAGE */
	char reason[512]; /* our words; empty: strerror() of the error */
};

/*
 * Record @what and a printf-style reason in @diag (which may be NULL).
 * A NULL @what or @fmt leaves that part as it was; the first subject set
 * wins only if @what is NULL later, so inner layers can name a path and
 * outer ones need not overwrite it.
 */
void fk_diag_set(struct fk_diag *diag, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Set the subject of @diag only if none is recorded yet. */
void fk_diag_subject(struct fk_diag *diag, const char *what);

/*
 * Print `PROGRAM: WHAT: REASON` on stderr for error @err (negative errno).
 * The reason is the recorded one, else strerror(-err) followed by the
 * recorded detail in parentheses when both exist (see fk_diag_detail).
 */
void fk_report(const char *prog, const struct fk_diag *diag, int err);

/*
 * fk_report() for a run on @image (the IMAGE argument as typed; may be
 * NULL): a subject that is a path inside the volume is printed as
 * `IMAGE:/path`, so that it cannot be taken for a file outside.
 */
void fk_report_in(const char *prog, const char *image,
		  const struct fk_diag *diag, int err);

/*
 * Record a detail that is printed after strerror() text in parentheses,
 * as in `No space left on device (need N clusters, M free)`.
 */
void fk_diag_detail(struct fk_diag *diag, const char *what, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));

#endif
