/*
 * check.c: the checker's public side and its spine.  fk_check_new()
 * picks the checker of the volume's family (check-family.h) and
 * fk_check_run() runs it; the findings list is kept here for every
 * family.  The FAT checker's setup and phase order are here too
 * (ck_fat_run(): boot sector, FAT copies, FSInfo, the tree, tails,
 * label, owners, lost clusters and their salvage), with its repair plans
 * and the current path; the phases live in check-fat.c, check-tree.c and
 * check-chain.c, the repair steps in check-repair.c; check-int.h is what
 * they share.
 */
#include "engine/check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fat/check-int.h"
#include "fat/dir.h"
#include "iface/check-family.h"
#include "io/device.h"
#include "lib/diag.h"
#include "table/fat.h"
#include "volume/family.h"
#include "volume/volume.h"

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

/* ---- findings ------------------------------------------------------------ */

const char *ck_path(const struct fk_check *ck)
{
	return ck->path_len ? ck->path : "/";
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
	if (!f.msg || (path && !f.path) || PUSH(ck->finds, f)) {
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

int ck_plan_fat(struct fk_check *ck, uint32_t clus, uint32_t val)
{
	struct fat_fix f = {clus, val};

	return PUSH(ck->fat_fixes, f);
}

int ck_plan_entry(struct fk_check *ck, const struct ent_fix *f)
{
	return PUSH(ck->ent_fixes, *f);
}

/* ---- setup --------------------------------------------------------------- */

/* Every family's checker; the volume's family picks one. */
static const struct fk_check_family *const checkers[] = {
	&fk_check_fat_family,
	&fk_check_exfat_family,
};

int fk_check_new(struct fk_volume *vol, const struct fk_check_opts *opts,
		 struct fk_check **out)
{
	struct fk_check *ck;
	size_t i;
	int err;

	if (!(ck = calloc(1, sizeof(*ck))))
		return -ENOMEM;
	ck->vol = vol;
	ck->o = *opts;
	/* The family is chosen once, by the family the volume opened as. */
	for (i = 0; i < sizeof(checkers) / sizeof(checkers[0]); i++)
		if (checkers[i]->fam == vol->fam)
			ck->fam = checkers[i];
	if (!ck->fam) {
		free(ck);
		return -EOPNOTSUPP;
	}
	if ((err = ck->fam->new_state(ck, vol, opts, &ck->fam_state))) {
		free(ck);
		return err;
	}
	*out = ck;
	return 0;
}

/* The FAT checker's state is the rest of @ck (check-int.h). */
int ck_fat_new_state(struct fk_check *ck, struct fk_volume *vol,
		     const struct fk_check_opts *opts, void **state)
{
	size_t map_len;
	uint32_t top;

	/* Whole 64-bit words, for the lost-cluster count. */
	map_len = (((size_t)fk_clus_max(&vol->g) + 32) / 32) * 8;
	top = fk_clus_max(&vol->g);
	ck->g = &vol->g;
	if (top >= fk_fat_bad(&vol->g)) /* never on a volume mkfs makes */
		top = fk_fat_bad(&vol->g) - 1;
	ck->nlink = top - FK_FIRST_CLUS + 1;
	ck->map = calloc(map_len, 1);
	ck->diffs = calloc(vol->g.nfats, sizeof(*ck->diffs));
	ck->path = calloc(1, 64);
	ck->path_cap = 64;
	fk_dir_stamp(&ck->stamp, opts->now, 0);
	if (!ck->map || !ck->diffs || !ck->path) {
		ck_fat_free_state(ck);
		return -ENOMEM;
	}
	*state = ck;
	return 0;
}

void fk_check_free(struct fk_check *ck)
{
	size_t i;

	if (!ck)
		return;
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
	ck->fam->free_state(ck->fam_state);
	free(ck);
}

void ck_fat_free_state(void *state)
{
	struct fk_check *ck = state;
	size_t i;

	for (i = 0; i < ck->tails.n; i++)
		free(ck->tails.v[i].path);
	for (i = 0; i < ck->shared.n; i++)
		free(ck->shared.v[i].later);
	for (i = 0; i < ck->hidden.n; i++)
		free(ck->hidden.v[i].path);
	free(ck->hidden.v);
	free(ck->fat_fixes.v);
	free(ck->ent_fixes.v);
	free(ck->tails.v);
	free(ck->shared.v);
	for (i = 0; i < ck->runs.nblocks; i++)
		free(ck->runs.blocks[i]);
	free(ck->runs.blocks);
	free(ck->lost.v);
	free(ck->root_labels.v);
	free(ck->patches);
	free(ck->copy_runs.v);
	ck_salvage_free(ck);
	fk_alloc_close(ck->alloc);
	free(ck->path);
	free(ck->map);
	free(ck->diffs);
}

const struct fk_finding *fk_check_findings(const struct fk_check *ck, size_t *n)
{
	*n = ck->finds.n;
	return ck->finds.v;
}

const struct fk_check_stats *fk_check_stats(const struct fk_check *ck)
{
	return &ck->st;
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

char *ck_format(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = vformat(fmt, ap);
	va_end(ap);
	return s;
}

/* ---- the whole check ---------------------------------------------------- */

/* The FAT family's phases, in order. */
static int run_fat(struct fk_check *ck, struct fk_diag *diag)
{
	int err;

	/* A layout that does not hold together is read as nonsense (a
	 * third "FAT" over the root), and every repair planned from that
	 * would destroy what it mends: no finding, no plan, nothing. */
	if ((err = fk_fat_judge_layout(ck->vol, diag)))
		return err;
	if ((err = ck_check_boot(ck)) || (err = ck_scan_fats(ck)) ||
	    (err = ck_check_fsinfo(ck)))
		return err;
	ck_progress(ck, "files", 0, ck->st.used_clus);
	if ((err = ck_walk_root(ck, diag)) || (err = ck_walk_tails(ck)))
		return err;
	ck_check_label(ck);
	if ((err = ck_find_owners(ck)) || (err = ck_check_lost(ck)))
		return err;
	return 0;
}

/* The check reads the FAT copies as kept (check-fat.c) while its
 * phases run, and as they are once it is over: the repair's first step
 * makes every copy hold the kept sectors, and nothing after the check
 * may reach the volume through @ck (a caller may close it first). */
int ck_fat_run(void *state, struct fk_diag *diag)
{
	struct fk_check *ck = state;
	int err = run_fat(ck, diag);

	ck_unpatch(ck);
	return err;
}

int fk_check_run(struct fk_check *ck, struct fk_diag *diag)
{
	int err = ck->fam->run(ck->fam_state, diag);

	if (!err && ck->is_nomem)
		err = -ENOMEM;
	if (err)
		fk_diag_subject(diag, fk_device_path(ck->vol->dev));
	return err;
}
