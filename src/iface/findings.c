/*
 * findings.c: what every family's checker records, kept in struct
 * fk_check (findings.h): the findings, what the repair does about each,
 * the files they name, the counts and progress.
 * The engine (engine/check.c) hands them to the programs.
 */
#include "iface/findings.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/vec.h"

/* "s" for a plural count. */
const char *ck_plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

const char *fk_sev_name(enum fk_sev sev)
{
	return sev == FK_SEV_ERROR     ? "error"
	       : sev == FK_SEV_WARNING ? "warning"
				       : "note";
}

/* Append @f to @list.  0 or -ENOMEM. */
static int push(struct ck_finding_list *list, const struct fk_finding *f)
{
	if (FK_VEC_RESERVE(list->v, list->cap, list->n + 1))
		return -ENOMEM;
	list->v[list->n++] = *f;
	return 0;
}

static char *vformat(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));

static char *vformat(const char *fmt, va_list ap)
{
	va_list aq;
	char *s;
	int n;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0 || !(s = malloc((size_t)n + 1)))
		return NULL;
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

size_t ck_report(struct fk_check *ck, enum fk_sev sev, const char *code,
		 const char *path, const char *fmt, ...)
{
	struct fk_finding f;
	va_list ap;

	if (sev == FK_SEV_ERROR)
		ck->st.errors++;
	else if (sev == FK_SEV_WARNING)
		ck->st.warnings++;
	else
		ck->st.notes++;
	if (ck->finds.n >= FK_CHECK_MAX_FINDINGS) {
		ck->st.unlisted++;
		return NONE;
	}
	memset(&f, 0, sizeof(f));
	f.sev = sev;
	f.code = code;
	va_start(ap, fmt);
	f.msg = vformat(fmt, ap);
	va_end(ap);
	f.path = path ? strdup(path) : NULL;
	if (!f.msg || (path && !f.path) || push(&ck->finds, &f)) {
		free(f.msg);
		free(f.path);
		ck->is_nomem = 1;
		ck->st.unlisted++;
		return NONE;
	}
	return ck->finds.n - 1;
}

/* Say what the repair will do about finding @idx (which may be NONE). */
void ck_set_fix(struct fk_check *ck, size_t idx, const char *fmt, ...)
{
	va_list ap;

	ck->st.has_repairs = 1;
	if (idx == NONE)
		return;
	va_start(ap, fmt);
	free(ck->finds.v[idx].fix);
	if (!(ck->finds.v[idx].fix = vformat(fmt, ap)))
		ck->is_nomem = 1;
	va_end(ap);
}

void ck_append_msg(struct fk_check *ck, size_t idx, const char *fmt, ...)
{
	struct fk_finding *f;
	va_list ap;
	char *more, *msg;

	if (idx == NONE)
		return;
	f = &ck->finds.v[idx];
	va_start(ap, fmt);
	more = vformat(fmt, ap);
	va_end(ap);
	msg = more ? ck_format("%s%s", f->msg, more) : NULL;
	free(more);
	if (!msg) {
		ck->is_nomem = 1;
		return;
	}
	free(f->msg);
	f->msg = msg;
}

void ck_add_path(struct fk_check *ck, size_t idx, const char *path)
{
	struct fk_finding *f;
	char **v, *dup;

	if (idx == NONE)
		return;
	f = &ck->finds.v[idx];
	dup = strdup(path);
	v = dup ? realloc(f->paths, (f->npaths + 1) * sizeof(*v)) : NULL;
	if (!v) {
		free(dup);
		ck->is_nomem = 1;
		return;
	}
	v[f->npaths++] = dup;
	f->paths = v;
}

char *ck_format(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = vformat(fmt, ap);
	va_end(ap);
	return s;
}

struct fk_check_stats *ck_stats(struct fk_check *ck)
{
	return &ck->st;
}

void ck_progress(struct fk_check *ck, const char *phase, uint64_t done,
		 uint64_t total)
{
	if (ck->o.progress)
		ck->o.progress(ck->o.arg, phase, done, total);
}

void ck_findings_free(struct fk_check *ck)
{
	size_t i;

	for (i = 0; i < ck->finds.n; i++) {
		struct fk_finding *f = &ck->finds.v[i];

		while (f->npaths)
			free(f->paths[--f->npaths]);
		free(f->paths);
		free(f->path);
		free(f->msg);
		free(f->fix);
	}
	free(ck->finds.v);
}
