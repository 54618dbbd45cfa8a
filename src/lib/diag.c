/*
 * diag.c: error detail, and the one formatter of the REASON in
 * `PROGRAM: WHAT: REASON` (the programs' fk_report() prints the line).
 */
#include "lib/diag.h"

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

	diag->hint = FK_HINT_NONE; /* it was about the reason replaced */
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

void fk_diag_append(struct fk_diag *diag, int err, const char *fmt, ...)
{
	size_t len;
	va_list ap;

	if (!diag)
		return;
	if (!diag->reason[0])
		snprintf(diag->reason, sizeof(diag->reason), "%s",
			 strerror(err < 0 ? -err : err));
	len = strlen(diag->reason);
	va_start(ap, fmt);
	vsnprintf(diag->reason + len, sizeof(diag->reason) - len, fmt, ap);
	va_end(ap);
}

void fk_diag_hint(struct fk_diag *diag, enum fk_diag_hint hint)
{
	if (diag)
		diag->hint = hint;
}

void fk_diag_subject(struct fk_diag *diag, const char *what)
{
	if (diag && !diag->what[0] && what)
		snprintf(diag->what, sizeof(diag->what), "%s", what);
}

void fk_diag_reason(const struct fk_diag *diag, int err, char *buf, size_t len)
{
	const char *reason = diag ? diag->reason : "";
	const char *sys = strerror(err < 0 ? -err : err);

	if (!reason[0])
		snprintf(buf, len, "%s", sys);
	else if (reason[0] == '(')
		snprintf(buf, len, "%s %s)", sys, reason);
	else
		snprintf(buf, len, "%s", reason);
}
