/* diag.c: error detail and the one formatter of `PROGRAM: WHAT: REASON`. */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void set_reason(struct fk_diag *diag, int is_detail, const char *fmt,
		       va_list ap) __attribute__((format(printf, 3, 0)));

/* A leading '(' marks a detail that follows strerror() text. */
static void set_reason(struct fk_diag *diag, int is_detail, const char *fmt,
		       va_list ap)
{
	size_t off = 0;

	if (is_detail)
		diag->reason[off++] = '(';
	vsnprintf(diag->reason + off, sizeof(diag->reason) - off, fmt, ap);
}

void fk_diag_set(struct fk_diag *diag, const char *what, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return;
	if (what)
		snprintf(diag->what, sizeof(diag->what), "%s", what);
	if (fmt) {
		va_start(ap, fmt);
		set_reason(diag, 0, fmt, ap);
		va_end(ap);
	}
}

void fk_diag_detail(struct fk_diag *diag, const char *what, const char *fmt,
		    ...)
{
	va_list ap;

	if (!diag)
		return;
	if (what)
		snprintf(diag->what, sizeof(diag->what), "%s", what);
	va_start(ap, fmt);
	set_reason(diag, 1, fmt, ap);
	va_end(ap);
}

void fk_diag_subject(struct fk_diag *diag, const char *what)
{
	if (diag && !diag->what[0] && what)
		snprintf(diag->what, sizeof(diag->what), "%s", what);
}

void fk_report(const char *prog, const struct fk_diag *diag, int err)
{
	fk_report_in(prog, NULL, diag, err);
}

/*
 * Is @what a path inside the volume rather than IMAGE itself?  Inner
 * layers name volume paths ("/VIDEO") and the device names the image
 * file, which may be absolute too.
 */
static int is_volume_path(const char *what, const char *image)
{
	const char *at = strstr(image, "@@");
	size_t n = at ? (size_t)(at - image) : strlen(image);

	return what[0] == '/' &&
	       !(strlen(what) == n && !strncmp(what, image, n));
}

void fk_report_in(const char *prog, const char *image,
		  const struct fk_diag *diag, int err)
{
	const char *what = diag && diag->what[0] ? diag->what : NULL;
	const char *reason = diag ? diag->reason : "";
	const char *sys = strerror(err < 0 ? -err : err);

	fprintf(stderr, "%s: ", prog);
	if (what && image && is_volume_path(what, image))
		fprintf(stderr, "%s:%s: ", image, what);
	else if (what)
		fprintf(stderr, "%s: ", what);
	if (!reason[0])
		fprintf(stderr, "%s\n", sys);
	else if (reason[0] == '(')
		fprintf(stderr, "%s %s)\n", sys, reason);
	else
		fprintf(stderr, "%s\n", reason);
}
