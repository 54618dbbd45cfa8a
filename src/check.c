/*
 * check.c: the checker's public side and its spine.  fk_check_run() runs
 * the phases in order (boot sector, FAT copies, FSInfo, the tree, tails,
 * label, owners, lost clusters); the findings list, the repair plans and
 * the current path are kept here for every phase to use.  The phases live
 * in check-fat.c, check-tree.c and check-chain.c, the repair steps in
 * check-repair.c; check-int.h is what they share.
 */
#include "check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-int.h"
#include "device.h"
#include "diag.h"
#include "dir.h"
#include "fat.h"
#include "names.h"
#include "slot.h"
#include "vec.h"
#include "volume.h"

#define PROGRESS_STEP (1u << 16) /* clusters between progress calls */
#define LOST_LISTED   5		 /* lost chains named in the finding */

/* A run whose owner's name the owners step looks up. */
struct owner_name {
	uint32_t run;
	struct entry_ref who;
	char *name; /* the entry's name */
	char *path; /* the whole path */
};

/* The same name twice in one directory: slot numbers of both. */
struct dup {
	uint32_t later, earlier;
};

struct name_key {
	uint64_t hash; /* fk_name_hash(name) */
	uint32_t slot;
	char *name; /* the finder's copy */
};

/* Directory being walked. */
struct dirctx {
	struct fk_check *ck;
	uint32_t first;	 /* first cluster; 0: the FAT12/16 fixed root */
	uint32_t nclus;	 /* clusters claimed (read no further); 0: root */
	uint32_t parent; /* what ".." must say (0: the root) */
	int is_root;
	int depth;
	uint32_t run; /* the run of its chain; ROOT_AREA: fixed root */
	const struct fk_dirent *self; /* the entry naming it; NULL: root */
	struct dup *dups;
	size_t ndups;
	int has_dot, has_dotdot;
	int has_hidden;
	uint32_t end_slot, hidden_last;
	uint32_t orphan_first, orphan_n; /* orphaned long-name slots not yet */
	enum fk_lfn_orphan orphan_why;	 /* reported, and why */
	uint32_t damaged_first; /* long-name slots the next entry does */
	uint32_t damaged_n;	/* not match (FK_LFN_ORPHAN_ENTRY) */
	uint32_t ent_first;	/* first slot of the entry being checked */
	size_t fixes_from;	/* entry fixes planned before this walk */
};

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

/* ---- cluster map ------------------------------------------------------ */

/* Keep only the clusters in state ALLOC (the lost ones). */
static void keep_alloc_only(struct fk_check *ck)
{
	size_t i, len = ((size_t)fk_clus_max(ck->g) + 4) / 4;

	for (i = 0; i < len; i++) {
		unsigned b = ck->map[i];

		ck->map[i] = (uint8_t)(b & 0x55 & ~(b >> 1));
	}
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

int ck_plan_fat(struct fk_check *ck, uint32_t clus, uint32_t val)
{
	struct fat_fix f = {clus, val};

	return PUSH(ck->fat_fixes, f);
}

int ck_plan_entry(struct fk_check *ck, const struct ent_fix *f)
{
	return PUSH(ck->ent_fixes, *f);
}

/* An EF_SET of @ent in @d, with nothing set yet. */
static void entry_set(struct ent_fix *f, const struct dirctx *d,
		      const struct fk_dirent *ent)
{
	memset(f, 0, sizeof(*f));
	f->op = EF_SET;
	f->dir_clus = d->first;
	f->slot = ent->slot;
}

static int plan_erase(struct fk_check *ck, uint32_t dir_clus, uint32_t first,
		      uint32_t n)
{
	struct ent_fix f;

	memset(&f, 0, sizeof(f));
	f.op = EF_DELETE;
	f.dir_clus = dir_clus;
	f.slot = first;
	f.nslots = n;
	return ck_plan_entry(ck, &f);
}

/* Delete @ent with every long-name slot before it, matching or not. */
static int plan_delete(struct fk_check *ck, const struct dirctx *d,
		       const struct fk_dirent *ent)
{
	return plan_erase(ck, d->first, d->ent_first,
			  ent->slot - d->ent_first + 1);
}

/* ---- paths --------------------------------------------------------------- */

/* Append "/@name" to the current path; returns the old length. */
static int push_name(struct fk_check *ck, const char *name, size_t *old)
{
	size_t len = strlen(name);

	if (FK_VEC_RESERVE(ck->path, ck->path_cap, ck->path_len + len + 2))
		return -ENOMEM;
	*old = ck->path_len;
	ck->path[ck->path_len++] = '/';
	memcpy(ck->path + ck->path_len, name, len + 1);
	ck->path_len += len;
	return 0;
}

static void pop_name(struct fk_check *ck, size_t old)
{
	ck->path_len = old;
	if (ck->path)
		ck->path[old] = '\0';
}

/* ---- setup --------------------------------------------------------------- */

int fk_check_new(struct fk_volume *vol, const struct fk_check_opts *opts,
		 struct fk_check **out)
{
	struct fk_check *ck = calloc(1, sizeof(*ck));
	size_t map_len = ((size_t)fk_clus_max(&vol->g) + 4) / 4;

	if (!ck)
		return -ENOMEM;
	ck->vol = vol;
	ck->g = &vol->g;
	ck->o = *opts;
	ck->map = calloc(map_len, 1);
	ck->diffs = calloc(vol->g.nfats, sizeof(*ck->diffs));
	ck->path = calloc(1, 64);
	ck->path_cap = 64;
	if (!ck->map || !ck->diffs || !ck->path) {
		fk_check_free(ck);
		return -ENOMEM;
	}
	*out = ck;
	return 0;
}

void fk_check_free(struct fk_check *ck)
{
	size_t i;

	if (!ck)
		return;
	for (i = 0; i < ck->finds.n; i++) {
		free(ck->finds.v[i].path);
		free(ck->finds.v[i].msg);
		free(ck->finds.v[i].fix);
	}
	for (i = 0; i < ck->tails.n; i++)
		free(ck->tails.v[i].path);
	for (i = 0; i < ck->shared.n; i++)
		free(ck->shared.v[i].later);
	free(ck->finds.v);
	free(ck->fat_fixes.v);
	free(ck->ent_fixes.v);
	free(ck->tails.v);
	free(ck->shared.v);
	free(ck->runs.v);
	free(ck->path);
	free(ck->map);
	free(ck->diffs);
	free(ck);
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

void ck_progress(struct fk_check *ck, const char *phase, uint64_t done,
		 uint64_t total)
{
	if (ck->o.progress)
		ck->o.progress(ck->o.arg, phase, done, total);
}

/* ---- claiming chains ----------------------------------------------------- */

/* Is @clus among the first @n clusters of the chain from @start? */
static int in_chain(struct fk_check *ck, uint32_t start, uint32_t n,
		    uint32_t clus, int *yes)
{
	uint32_t c = start, i, val;
	int err;

	*yes = 0;
	for (i = 0; i < n; i++) {
		if (c == clus) {
			*yes = 1;
			return 0;
		}
		if ((err = fk_fat_get(ck->vol, c, &val)))
			return err;
		c = val;
	}
	return 0;
}

/*
 * Take one cluster of a chain in the map.  Returns 1 if @clus was free to
 * take (and is now), 0 if another claim had it first.
 */
static int take(struct fk_check *ck, uint32_t clus)
{
	unsigned s = get_cs(ck, clus);

	if (s == CS_OWNED || s == CS_SHARED)
		return 0;
	set_cs(ck, clus, CS_OWNED);
	if (!(++ck->claimed % PROGRESS_STEP))
		ck_progress(ck, "files", ck->claimed, ck->st.used_clus);
	return 1;
}

/*
 * Claim the chain from @start, at most @limit clusters.  A chain stops at
 * its end, at a free or bad cluster, after a cluster whose value is
 * reserved or out of range, or where it reaches a cluster already claimed
 * (its own: a loop; another's: a cross-link, which marks the cluster
 * SHARED).  Bounded: each step claims a new cluster.
 */
static int claim_chain(struct fk_check *ck, uint32_t start, uint32_t limit,
		       const struct run_before *before, struct claim *c)
{
	const struct fk_geom *g = ck->g;
	uint32_t clus = start, val;
	int err, is_own;

	memset(c, 0, sizeof(*c));
	c->next = start;
	if (!fk_clus_valid(g, start)) {
		c->why = STOP_START;
		return 0;
	}
	for (;;) {
		if (c->nclus == limit) {
			c->why = STOP_LIMIT;
			return 0;
		}
		if ((err = fk_fat_get(ck->vol, clus, &val)))
			return err;
		switch (fk_fat_class(g, val)) {
		case FK_ENT_FREE:
			c->why = STOP_FREE;
			return 0;
		case FK_ENT_BAD:
			c->why = STOP_BAD;
			return 0;
		default:
			break;
		}
		if (!take(ck, clus)) {
			c->why = STOP_CROSS;
			err = before ? in_chain(ck, before->first,
						before->nclus + c->nclus, clus,
						&is_own)
				     : in_chain(ck, start, c->nclus, clus,
						&is_own);
			if (err)
				return err;
			if (is_own)
				c->why = STOP_LOOP;
			else
				set_cs(ck, clus, CS_SHARED);
			return 0;
		}
		c->nclus++;
		c->last = clus;
		c->next = val;
		switch (fk_fat_class(g, val)) {
		case FK_ENT_EOC:
			c->why = STOP_EOC;
			return 0;
		case FK_ENT_NEXT:
			clus = val;
			break;
		default:
			c->why = STOP_VALUE;
			return 0;
		}
	}
}

/* Claim as claim_chain() does, and keep what was claimed as a run of @who
 * for the owners step. */
int ck_claim(struct fk_check *ck, uint32_t start, uint32_t limit,
	     const struct entry_ref *who, const struct run_before *before,
	     struct claim *c)
{
	int err = claim_chain(ck, start, limit, before, c);
	struct run r = {start, c->nclus, *who};

	if (err || !c->nclus)
		return err;
	return PUSH(ck->runs, r);
}

/* Remember a cross-link, so the owners step can name the first owner. */
static int note_shared(struct fk_check *ck, uint32_t clus, size_t finding,
		       int is_dir, const char *path, const char *what)
{
	struct shared s = {clus, finding, is_dir, what, strdup(path), NO_RUN};

	if (!s.later || PUSH(ck->shared, s)) {
		free(s.later);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Report why the claim @c of the chain of the entry being checked
 * stopped short, and plan the cut: the chain ends at its last good
 * cluster (the later owner of a shared cluster loses the shared part).
 * With nothing claimed, the caller decides (first cluster 0, or removal).
 * Returns the finding's index through @idx.
 */
int ck_chain_problem(struct fk_check *ck, const struct claim *c, int is_dir,
		     const char *path, const char *what, size_t *idx)
{
	const struct fk_geom *g = ck->g;
	int err;

	*idx = NONE;
	switch (c->why) {
	case STOP_EOC:
	case STOP_LIMIT:
		return 0;
	case STOP_START:
		*idx = ck_report(ck, FK_SEV_ERROR, "bad-start", path,
				 "%sfirst cluster %u is out of range (2 to %u)",
				 what, c->next, fk_clus_max(g));
		return 0;
	case STOP_FREE:
	case STOP_BAD:
		if (!c->last)
			*idx = ck_report(
				ck, FK_SEV_ERROR, "bad-link", path,
				"%sfirst cluster %u is %s", what, c->next,
				c->why == STOP_FREE ? "free" : "marked bad");
		else
			*idx = ck_report(ck, FK_SEV_ERROR, "bad-link", path,
					 "%scluster %u links to %s cluster %u",
					 what, c->last,
					 c->why == STOP_FREE ? "free" : "bad",
					 c->next);
		break;
	case STOP_VALUE:
		if (fk_fat_class(g, c->next) == FK_ENT_RANGE)
			*idx = ck_report(
				ck, FK_SEV_ERROR, "bad-link", path,
				"%scluster %u links to %u, past the last "
				"cluster %u",
				what, c->last, c->next, fk_clus_max(g));
		else
			*idx = ck_report(
				ck, FK_SEV_ERROR, "bad-link", path,
				"%scluster %u holds the reserved value "
				"0x%X",
				what, c->last, c->next);
		break;
	case STOP_LOOP:
		*idx = ck_report(ck, FK_SEV_ERROR, "loop", path,
				 "%scluster chain loops: cluster %u links back "
				 "to %u",
				 what, c->last, c->next);
		break;
	case STOP_CROSS:
		/* The owners step names the first owner in the message. */
		*idx = ck_report(ck, FK_SEV_ERROR, "cross-link", path,
				 "%sshares cluster %u with another chain", what,
				 c->next);
		if ((err = note_shared(ck, c->next, *idx, is_dir, path, what)))
			return err;
		break;
	}
	if (!c->nclus)
		return 0;
	ck_set_fix(ck, *idx, "chain ended at cluster %u", c->last);
	return ck_plan_fat(ck, c->last, fk_fat_eoc(g));
}

/* ---- directory tree ------------------------------------------------------ */

static int walk_dir(struct fk_check *ck, struct dirctx *d,
		    struct fk_diag *diag);

static int is_label(const struct fk_dirent *ent)
{
	return fk_slot_is_label(ent->attr);
}

static void visit(struct fk_check *ck, const struct fk_dirent *ent,
		  uint32_t nclus)
{
	if (ck->o.visit)
		ck->o.visit(ck->o.arg, ck_path(ck), ent, nclus);
}

static int walk_file(struct fk_check *ck, const struct dirctx *d,
		     const struct fk_dirent *ent)
{
	uint32_t clus_len = ck->g->clus_len;
	uint32_t need = ent->size ? (ent->size - 1) / clus_len + 1 : 0;
	struct ent_fix fix;
	struct claim c;
	size_t idx;
	int err;

	struct entry_ref who = {d->run, ent->slot};

	entry_set(&fix, d, ent);
	ck->st.files++;
	if (!ent->first_clus) {
		visit(ck, ent, 0);
		if (!ent->size)
			return 0;
		idx = ck_report(ck, FK_SEV_ERROR, "short-chain", ck_path(ck),
				"file size is %u bytes but it has no clusters",
				ent->size);
		ck_set_fix(ck, idx, "size set to 0");
		fix.set_size = 1;
		return ck_plan_entry(ck, &fix);
	}
	if ((err = ck_claim(ck, ent->first_clus, need, &who, NULL, &c)))
		return err;
	visit(ck, ent, c.nclus);
	if (c.why == STOP_LIMIT) {
		struct tail t = {strdup(ck_path(ck)),
				 who,
				 d->first,
				 ent->slot,
				 ent->first_clus,
				 need,
				 c.last,
				 c.next,
				 0,
				 0};

		if (!t.path || PUSH(ck->tails, t)) {
			free(t.path);
			return -ENOMEM;
		}
		return 0;
	}
	if ((err = ck_chain_problem(ck, &c, 0, ck_path(ck), "", &idx)))
		return err;
	if (!c.nclus) {
		ck_set_fix(ck, idx, "first cluster set to 0");
		fix.set_first = 1;
	}
	if (c.nclus < need) {
		idx = ck_report(ck, FK_SEV_ERROR, "short-chain", ck_path(ck),
				"file size is %u bytes but its chain holds %u "
				"cluster%s (%llu bytes)",
				ent->size, c.nclus, ck_plural(c.nclus),
				(unsigned long long)c.nclus * clus_len);
		fix.set_size = 1;
		fix.size = c.nclus * clus_len;
		ck_set_fix(ck, idx, "size set to %u", fix.size);
	}
	if (fix.set_first || fix.set_size)
		return ck_plan_entry(ck, &fix);
	return 0;
}

static int walk_subdir(struct fk_check *ck, const struct dirctx *d,
		       const struct fk_dirent *ent, struct fk_diag *diag)
{
	struct entry_ref who = {d->run, ent->slot};
	struct dirctx child;
	struct ent_fix fix;
	struct claim c;
	size_t idx;
	int err;

	ck->st.dirs++;
	if (ent->size) {
		idx = ck_report(ck, FK_SEV_ERROR, "dir-size", ck_path(ck),
				"directory has a size (%u bytes); "
				"directories must have 0",
				ent->size);
		ck_set_fix(ck, idx, "size set to 0");
		entry_set(&fix, d, ent);
		fix.set_size = 1;
		if ((err = ck_plan_entry(ck, &fix)))
			return err;
	}
	if (!ent->first_clus) {
		visit(ck, ent, 0);
		idx = ck_report(ck, FK_SEV_ERROR, "bad-start", ck_path(ck),
				"directory entry has first cluster 0, which "
				"means the root");
		ck_set_fix(ck, idx, "entry removed");
		return plan_delete(ck, d, ent);
	}
	if ((err = ck_claim(ck, ent->first_clus, UINT32_MAX, &who, NULL, &c)))
		return err;
	visit(ck, ent, c.nclus);
	if ((err = ck_chain_problem(ck, &c, 1, ck_path(ck), "directory ",
				    &idx)))
		return err;
	if (!c.nclus) {
		ck_set_fix(ck, idx, "entry removed");
		return plan_delete(ck, d, ent);
	}
	if (d->depth + 1 > FK_CHECK_MAX_DEPTH) {
		fk_diag_set(diag, ck_path(ck),
			    "directories nest deeper than %d levels",
			    FK_CHECK_MAX_DEPTH);
		return FK_ECORRUPT;
	}
	memset(&child, 0, sizeof(child));
	child.first = ent->first_clus;
	child.nclus = c.nclus;
	child.run = (uint32_t)(ck->runs.n - 1);
	child.parent = d->is_root ? 0 : d->first;
	child.depth = d->depth + 1;
	child.self = ent;
	return walk_dir(ck, &child, diag);
}

/* Does an earlier entry have the name of the one in @slot?  Which: @earlier. */
static int find_dup(const struct dirctx *d, uint32_t slot, uint32_t *earlier)
{
	size_t lo = 0, hi = d->ndups;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->dups[mid].later == slot) {
			*earlier = d->dups[mid].earlier;
			return 1;
		}
		if (d->dups[mid].later < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static void check_names(struct fk_check *ck, const struct dirctx *d,
			const struct fk_dirent *ent)
{
	const char *path = ck_path(ck);
	enum fk_short_verdict verdict;
	uint32_t earlier;

	/* Slots that do not match it were orphans (d->ent_first is before
	 * the entry then); what is left is a name that does not decode. */
	if (ent->is_lfn_damaged && d->ent_first + ent->nslots == ent->slot + 1)
		ck_report(ck, FK_SEV_WARNING, "long-name", path,
			  "its long name is empty or not valid UTF-16; it is "
			  "listed by its short name");
	verdict = fk_short_check(ent->raw);
	if (verdict == FK_SHORT_BAD)
		ck_report(ck, FK_SEV_ERROR, "bad-name", path,
			  "short name '%s' holds characters FAT does not allow",
			  ent->short_name);
	else if (verdict == FK_SHORT_ODD)
		ck_report(ck, FK_SEV_WARNING, "short-name", path,
			  "short name '%s' is not a valid 8.3 name",
			  ent->short_name);
	if (find_dup(d, ent->slot, &earlier))
		ck_report(ck, FK_SEV_ERROR, "duplicate", path,
			  "another entry of this directory (slot %u) has the "
			  "same name (names are compared ignoring case)",
			  earlier);
}

/* "." must be the first slot of a subdirectory and name it; ".." the
 * second and name its parent (0 for the root): fsck.fat's rules. */
static int check_dot(struct fk_check *ck, struct dirctx *d,
		     const struct fk_dirent *ent)
{
	int dot = fk_slot_dot(ent->raw) == FK_DOT;
	uint32_t want = dot ? d->first : d->parent;
	const char *name = dot ? "." : "..";
	struct ent_fix fix;
	size_t idx;

	if (d->is_root) {
		idx = ck_report(ck, FK_SEV_ERROR, "dot", "/",
				"the root directory holds a '%s' entry", name);
		ck_set_fix(ck, idx, "entry removed");
		return plan_delete(ck, d, ent);
	}
	if (ent->slot != (dot ? 0u : 1u) || !(ent->attr & FK_ATTR_DIR)) {
		ck_report(ck, FK_SEV_ERROR, "dot", ck_path(ck),
			  "'%s' entry in slot %u%s", name, ent->slot,
			  ent->attr & FK_ATTR_DIR ? "" : " is not a directory");
		return 0;
	}
	if (dot)
		d->has_dot = 1;
	else
		d->has_dotdot = 1;
	if (ent->first_clus == want)
		return 0;
	idx = ck_report(ck, FK_SEV_ERROR, "dot", ck_path(ck),
			"'%s' points to cluster %u instead of %u", name,
			ent->first_clus, want);
	ck_set_fix(ck, idx, "'%s' set to %u", name, want);
	entry_set(&fix, d, ent);
	fix.set_first = 1;
	fix.first_clus = want;
	return ck_plan_entry(ck, &fix);
}

/*
 * Does a repair planned while walking @d delete @slot of it?  Then the
 * slot is free by the time "." or ".." is created there, and one run of
 * the repair settles what would otherwise take two.
 */
static int will_delete(const struct fk_check *ck, const struct dirctx *d,
		       uint32_t slot)
{
	size_t i;

	for (i = d->fixes_from; i < ck->ent_fixes.n; i++) {
		const struct ent_fix *f = &ck->ent_fixes.v[i];

		if (f->op == EF_DELETE && f->dir_clus == d->first &&
		    slot - f->slot < f->nslots)
			return 1;
	}
	return 0;
}

/* A missing "." or "..": recreate it when its slot is or will be free. */
static int missing_dot(struct fk_check *ck, const struct dirctx *d, int dot)
{
	struct fk_dirent ent;
	struct ent_fix fix;
	unsigned char e[FK_DIRENT_LEN];
	size_t idx;
	int err;

	idx = ck_report(ck, FK_SEV_ERROR, "dot", ck_path(ck),
			"'%s' entry is missing from slot %d", dot ? "." : "..",
			dot ? 0 : 1);
	if ((err = fk_dir_read_slot(ck->vol, d->first, dot ? 0 : 1, e)))
		return err == FK_ECORRUPT ? 0 : err;
	if (!fk_slot_is_free(e) && !will_delete(ck, d, dot ? 0 : 1))
		return 0;
	memset(&ent, 0, sizeof(ent));
	fk_slot_set_dot(dot ? FK_DOT : FK_DOT_DOT, ent.raw);
	ent.attr = FK_ATTR_DIR;
	ent.first_clus = dot ? d->first : d->parent;
	if (d->self) {
		ent.mtime = d->self->mtime;
		ent.mdate = d->self->mdate;
		ent.ctime = d->self->ctime;
		ent.cdate = d->self->cdate;
		ent.adate = d->self->adate;
	}
	memset(&fix, 0, sizeof(fix));
	fix.op = EF_CREATE;
	fix.dir_clus = d->first;
	fix.slot = dot ? 0 : 1;
	memset(fix.slot_data, 0, sizeof(fix.slot_data));
	fk_slot_pack(ck->vol, &ent, fix.slot_data);
	ck_set_fix(ck, idx, "'%s' created", dot ? "." : "..");
	return ck_plan_entry(ck, &fix);
}

static int walk_entry(struct fk_check *ck, struct dirctx *d,
		      const struct fk_dirent *ent, int is_hidden,
		      struct fk_diag *diag)
{
	size_t old, idx;
	int err;

	if (fk_dirent_is_dot(ent))
		return check_dot(ck, d, ent);
	if (is_label(ent)) {
		if (d->is_root && !ck->has_root_label) {
			ck->has_root_label = 1;
			memcpy(ck->root_label, ent->raw, 11);
		}
		/* fsck.fat checks any chain a label claims: as a file. */
		if (!ent->first_clus && !ent->size)
			return 0;
	}
	if ((err = push_name(ck, ent->name, &old)))
		return err;
	check_names(ck, d, ent);
	if (is_hidden) {
		idx = ck_report(ck, FK_SEV_WARNING, "hidden-entry", ck_path(ck),
				"entry lies past the directory's end marker: "
				"Linux and fsck.fat see it, Windows and mtools "
				"do not");
		ck_set_fix(ck, idx, "end marker before it cleared");
		d->has_hidden = 1;
		d->hidden_last = ent->slot;
	}
	if ((ent->attr & FK_ATTR_DIR) && !is_label(ent))
		err = walk_subdir(ck, d, ent, diag);
	else
		err = walk_file(ck, d, ent);
	pop_name(ck, old);
	return err;
}

static int cmp_key(const void *a, const void *b)
{
	const struct name_key *x = a, *y = b;
	int c;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	/* Equal hashes need not be equal names: equal names sit together. */
	if ((c = fk_name_compare(x->name, y->name)))
		return c;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static int cmp_dup(const void *a, const void *b)
{
	const struct dup *x = a, *y = b;

	return x->later < y->later ? -1 : x->later > y->later;
}

/* Open the directory at @first (0: the root), reading at most @nclus
 * clusters of it (0: no limit), as the walk reads it. */
int ck_open_dir(struct fk_check *ck, uint32_t first, uint32_t nclus,
		struct fk_dir **dir)
{
	int err;

	if ((err = fk_dir_open(ck->vol, first, dir)))
		return err;
	if (nclus)
		fk_dir_set_limit(*dir, nclus);
	fk_dir_keep_going(*dir);
	return 0;
}

static int add_key(struct name_key **v, size_t *n, size_t *cap,
		   const char *name, uint32_t slot)
{
	char *copy = strdup(name);

	if (!copy || FK_VEC_RESERVE(*v, *cap, *n + 1)) {
		free(copy);
		return -ENOMEM;
	}
	(*v)[*n].hash = fk_name_hash(name);
	(*v)[*n].slot = slot;
	(*v)[(*n)++].name = copy;
	return 0;
}

/*
 * Before the entries are checked: hash every name (short, and
 * long when there is one) and note the entries whose name an earlier
 * entry already has.  Memory: two keys and names per entry of this
 * directory only.
 */
static int find_dups(struct fk_check *ck, struct dirctx *d,
		     struct fk_diag *diag)
{
	LIST(struct name_key, keys) = {NULL, 0, 0};
	LIST(struct dup, dups) = {NULL, 0, 0};
	struct fk_dirent ent;
	struct fk_dir *dir;
	size_t i, run = 0;
	int r, err;

	if ((err = ck_open_dir(ck, d->first, d->nclus, &dir)))
		return err;
	while ((r = fk_dir_next(dir, &ent, diag)) == 1) {
		if (fk_dirent_is_dot(&ent) || is_label(&ent))
			continue;
		if ((err = add_key(&keys.v, &keys.n, &keys.cap, ent.short_name,
				   ent.slot)))
			break;
		/* The long name only when it is another name than the short. */
		if (ent.has_lfn && fk_name_compare(ent.name, ent.short_name) &&
		    (err = add_key(&keys.v, &keys.n, &keys.cap, ent.name,
				   ent.slot)))
			break;
	}
	fk_dir_close(dir);
	if (!err && r)
		err = r; /* -errno or FK_ECORRUPT */
	if (!err && keys.n)
		qsort(keys.v, keys.n, sizeof(*keys.v), cmp_key);
	for (i = 1; !err && i < keys.n; i++) {
		struct dup dp;

		if (keys.v[i].hash != keys.v[run].hash ||
		    fk_name_compare(keys.v[i].name, keys.v[run].name)) {
			run = i;
			continue;
		}
		if (keys.v[i].slot == keys.v[run].slot)
			continue; /* an entry's long and short name */
		dp.later = keys.v[i].slot;
		dp.earlier = keys.v[run].slot;
		err = PUSH(dups, dp);
	}
	for (i = 0; i < keys.n; i++)
		free(keys.v[i].name);
	free(keys.v);
	if (err) {
		free(dups.v);
		return err;
	}
	if (dups.n)
		qsort(dups.v, dups.n, sizeof(*dups.v), cmp_dup);
	d->dups = dups.v;
	d->ndups = dups.n;
	return 0;
}

/*
 * One finding for a run of orphaned long-name slots, whatever made
 * them orphans: fsck.fat reports every case.  It deletes the slots a free
 * slot or another complete name follows, and so does the repair; the
 * others it leaves for a person, and so (for now) does the repair.
 */
static void report_orphans(struct fk_check *ck, struct dirctx *d)
{
	static const char *const why[] = {
		[FK_LFN_ORPHAN_FREE] = "a free slot follows",
		[FK_LFN_ORPHAN_RESTART] = "another long name starts after",
		[FK_LFN_ORPHAN_BROKEN] = "out of sequence",
		[FK_LFN_ORPHAN_ENTRY] = "the next entry does not match",
	};
	uint32_t first = d->orphan_first, n = d->orphan_n;
	char range[32];
	size_t idx;

	if (!n)
		return;
	d->orphan_n = 0;
	if (n > 1)
		snprintf(range, sizeof(range), "s %u-%u", first, first + n - 1);
	else
		snprintf(range, sizeof(range), " %u", first);
	idx = ck_report(ck, FK_SEV_ERROR, "orphan-lfn", ck_path(ck),
			"long-name slot%s belong%s to no entry (%s)", range,
			n > 1 ? "" : "s", why[d->orphan_why]);
	/*
	 * fsck.fat deletes runs a free slot or another name ends, and
	 * leaves runs out of sequence; but deleting a run makes the one
	 * before it "followed by a free slot", which a second repair would
	 * then delete.  One run settles it: out-of-sequence slots, which no
	 * reader joins to any name, are deleted too.  Slots whose only
	 * fault is the next entry's checksum stay (they may be re-attached).
	 */
	if (d->orphan_why == FK_LFN_ORPHAN_ENTRY)
		return;
	ck_set_fix(ck, idx, "slot%s deleted", ck_plural(n));
	if (plan_erase(ck, d->first, first, n))
		ck->is_nomem = 1;
}

/* Long-name slots the directory iteration dropped; adjacent runs
 * dropped for the same reason are one finding. */
static void on_orphan(void *arg, uint32_t first, uint32_t n,
		      enum fk_lfn_orphan why)
{
	struct dirctx *d = arg;

	if (why == FK_LFN_ORPHAN_ENTRY) {
		d->damaged_first = first;
		d->damaged_n = n;
	}
	if (d->orphan_n && d->orphan_why == why &&
	    d->orphan_first + d->orphan_n == first) {
		d->orphan_n += n;
		return;
	}
	report_orphans(d->ck, d);
	d->orphan_first = first;
	d->orphan_n = n;
	d->orphan_why = why;
}

/* After the entries: what the directory as a whole showed. */
static int dir_after(struct fk_check *ck, struct dirctx *d)
{
	struct ent_fix fix;
	int err;

	report_orphans(ck, d);
	if (d->has_hidden) {
		memset(&fix, 0, sizeof(fix));
		fix.op = EF_UNHIDE;
		fix.dir_clus = d->first;
		fix.slot = d->end_slot;
		fix.nslots = d->hidden_last - d->end_slot + 1;
		if ((err = ck_plan_entry(ck, &fix)))
			return err;
	}
	if (d->is_root)
		return 0;
	if (!d->has_dot && (err = missing_dot(ck, d, 1)))
		return err;
	if (!d->has_dotdot && (err = missing_dot(ck, d, 0)))
		return err;
	return 0;
}

static int walk_dir(struct fk_check *ck, struct dirctx *d, struct fk_diag *diag)
{
	struct fk_dirent *ent = malloc(sizeof(*ent));
	struct fk_dir *dir = NULL;
	int r = 0, err;

	if (!ent)
		return -ENOMEM;
	if ((err = find_dups(ck, d, diag)))
		goto out;
	if ((err = ck_open_dir(ck, d->first, d->nclus, &dir)))
		goto out;
	d->ck = ck;
	d->fixes_from = ck->ent_fixes.n;
	fk_dir_on_orphan(dir, on_orphan, d);
	while ((r = fk_dir_next(dir, ent, diag)) == 1) {
		const struct fk_dir_stats *st = fk_dir_stats(dir);

		report_orphans(ck, d); /* the slots before this entry */
		d->ent_first = ent->slot + 1 - ent->nslots;
		if (ent->is_lfn_damaged && d->damaged_n &&
		    d->damaged_first + d->damaged_n == ent->slot)
			d->ent_first = d->damaged_first;
		d->damaged_n = 0;

		if (st->after_end && !d->has_hidden)
			d->end_slot = st->end_slot;
		if ((err = walk_entry(ck, d, ent, st->after_end > 0, diag)))
			goto out;
	}
	if (r) { /* -errno or FK_ECORRUPT */
		err = r;
		fk_diag_subject(diag, ck_path(ck));
		goto out;
	}
	err = dir_after(ck, d);
out:
	if (err)
		fk_diag_subject(diag, ck_path(ck));
	fk_dir_close(dir);
	free(d->dups);
	d->dups = NULL;
	free(ent);
	return err;
}

/* The FAT32 root is a chain like any other; FAT12/16 have a fixed area. */
int ck_walk_root(struct fk_check *ck, struct fk_diag *diag)
{
	static const struct entry_ref root_self = {NO_DIR, 0};
	uint32_t root = fk_dir_resolve(ck->vol, 0);
	struct dirctx d;
	struct claim c;
	size_t idx;
	int err;

	memset(&d, 0, sizeof(d));
	d.is_root = 1;
	d.run = ROOT_AREA;
	if (root) {
		if ((err = ck_claim(ck, root, UINT32_MAX, &root_self, NULL,
				    &c)))
			return err;
		if ((err = ck_chain_problem(ck, &c, 1, "/", "root directory ",
					    &idx)))
			return err;
		if (!c.nclus) {
			ck->is_tree_incomplete = 1;
			return 0;
		}
		d.first = root;
		d.nclus = c.nclus;
		d.run = (uint32_t)(ck->runs.n - 1);
	}
	return walk_dir(ck, &d, diag);
}

/* End @t's file where its size ends: FAT[last] = EOC, or first cluster 0. */
static int cut_before_tail(struct fk_check *ck, const struct tail *t,
			   size_t idx)
{
	struct ent_fix fix;

	if (t->last) {
		ck_set_fix(ck, idx, "chain ended at cluster %u", t->last);
		return ck_plan_fat(ck, t->last, fk_fat_eoc(ck->g));
	}
	ck_set_fix(ck, idx, "first cluster set to 0");
	memset(&fix, 0, sizeof(fix));
	fix.op = EF_SET;
	fix.dir_clus = t->dir_clus;
	fix.slot = t->slot;
	fix.set_first = 1;
	return ck_plan_entry(ck, &fix);
}

static int check_tail(struct fk_check *ck, struct tail *t,
		      const struct claim *c)
{
	uint64_t len = (uint64_t)c->nclus * ck->g->clus_len;
	size_t idx;
	int err;

	if (c->why != STOP_EOC) {
		struct claim m = *c;

		if (!m.nclus) /* the link that failed is the file's last */
			m.last = t->last;
		if ((err = ck_chain_problem(ck, &m, 0, t->path, "", &idx)))
			return err;
		if (!c->nclus && (err = cut_before_tail(ck, t, idx)))
			return err;
	}
	if (!c->nclus)
		return 0;
	idx = ck_report(ck, ck->o.is_strict ? FK_SEV_ERROR : FK_SEV_NOTE,
			"prealloc-tail", t->path,
			"%u cluster%s (%llu bytes) %s chained past the end of "
			"the file (a preallocated tail)",
			c->nclus, ck_plural(c->nclus), (unsigned long long)len,
			c->nclus == 1 ? "is" : "are");
	if (!ck->o.trim_prealloc)
		return 0;
	t->is_trimmed = 1;
	if ((err = cut_before_tail(ck, t, idx)))
		return err;
	ck_set_fix(ck, idx, "tail freed");
	return 0;
}

/*
 * Claim the tails (chain parts beyond what sizes need) after every file's
 * needed part, so a tail that runs into another file's data loses, not
 * the file; report them and plan trimming.
 */
int ck_walk_tails(struct fk_check *ck)
{
	size_t i;
	int err;

	for (i = 0; i < ck->tails.n; i++) {
		struct tail *t = &ck->tails.v[i];
		struct claim c;

		struct run_before before = {t->start, t->need};

		if ((err = ck_claim(ck, t->first, UINT32_MAX, &t->who, &before,
				    &c)))
			return err;
		t->nclus = c.nclus;
		ck->st.tail_clus += c.nclus;
		if ((err = check_tail(ck, t, &c)))
			return err;
	}
	return 0;
}

/* ---- cross-link owners ---------------------------------------------------- */

/*
 * This step runs only after a cross-link, and only names owners: it
 * reports nothing and plans no repair.  The first owner of a shared
 * cluster is the first run, in claim order, that holds it; following each
 * run's clusters again finds it without a second walk of the tree.  Then
 * the owners' paths are rebuilt from their entry references, reading each
 * directory on the way at most once.
 */

/* Is @dir an ancestor of (or the same as) @path? */
static int is_ancestor(const char *dir, const char *path)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return 1;
	return !strncmp(dir, path, n) && (path[n] == '/' || !path[n]);
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

static int cmp_shared(const void *a, const void *b)
{
	const struct shared *x = a, *y = b;

	return x->clus < y->clus ? -1 : x->clus > y->clus;
}

/* Run @r claimed shared cluster @clus before any later run. */
static void set_owner(struct fk_check *ck, uint32_t clus, uint32_t r)
{
	size_t lo = 0, hi = ck->shared.n;

	while (lo < hi) { /* first record of @clus; sorted by cluster */
		size_t mid = lo + (hi - lo) / 2;

		if (ck->shared.v[mid].clus < clus)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < ck->shared.n && ck->shared.v[lo].clus == clus; lo++)
		ck->shared.v[lo].owner = r;
	set_cs(ck, clus, CS_OWNED); /* named: later runs do not count */
}

/* Follow every run again, in claim order, to the shared clusters. */
static int follow_runs(struct fk_check *ck)
{
	size_t i;

	for (i = 0; i < ck->runs.n; i++) {
		const struct run *r = &ck->runs.v[i];
		uint32_t clus = r->first, k, val;
		int err;

		for (k = 0;;) {
			if (get_cs(ck, clus) == CS_SHARED)
				set_owner(ck, clus, (uint32_t)i);
			if (++k == r->nclus)
				break;
			if ((err = fk_fat_get(ck->vol, clus, &val)))
				return err;
			clus = val;
		}
	}
	return 0;
}

/* The run of the directory holding run @r's entry; NO_RUN: the root. */
static uint32_t parent_run(const struct fk_check *ck, uint32_t r)
{
	uint32_t dir = ck->runs.v[r].who.dir;

	if (dir == ROOT_AREA || dir == NO_DIR ||
	    ck->runs.v[dir].who.dir == NO_DIR)
		return NO_RUN;
	return dir;
}

static int cmp_name_run(const void *a, const void *b)
{
	const struct owner_name *x = a, *y = b;

	return x->run < y->run ? -1 : x->run > y->run;
}

static int cmp_name_ref(const void *a, const void *b)
{
	const struct owner_name *x = a, *y = b;

	if (x->who.dir != y->who.dir)
		return x->who.dir < y->who.dir ? -1 : 1;
	return x->who.slot < y->who.slot ? -1 : x->who.slot > y->who.slot;
}

static struct owner_name *find_name(struct owner_name *v, size_t n, uint32_t r)
{
	struct owner_name key = {r, {0, 0}, NULL, NULL};

	return bsearch(&key, v, n, sizeof(*v), cmp_name_run);
}

/* Add @r to the names wanted (sorted by run, @n of them, @cap room). */
static int want_name(struct owner_name **v, size_t *n, size_t *cap,
		     const struct fk_check *ck, uint32_t r)
{
	struct owner_name o = {r, ck->runs.v[r].who, NULL, NULL};

	if (FK_VEC_RESERVE(*v, *cap, *n + 1))
		return -ENOMEM;
	(*v)[(*n)++] = o;
	return 0;
}

/* Sort by run and drop repeats. */
static void unique_names(struct owner_name *v, size_t *n)
{
	size_t i, m = 0;

	if (*n)
		qsort(v, *n, sizeof(*v), cmp_name_run);
	for (i = 0; i < *n; i++)
		if (!m || v[m - 1].run != v[i].run)
			v[m++] = v[i];
	*n = m;
}

/*
 * The names of the entries @v[0..@n) of one directory, sorted by slot, in
 * one read of it, with the limit the walk used.
 */
static int read_names(struct fk_check *ck, struct owner_name *v, size_t n)
{
	uint32_t dir = v[0].who.dir;
	uint32_t first = 0, nclus = 0; /* the fixed root */
	struct fk_dirent *ent = malloc(sizeof(*ent));
	struct fk_dir *it;
	size_t i = 0;
	int r = 0, err;

	if (!ent)
		return -ENOMEM;
	if (dir != ROOT_AREA) {
		first = ck->runs.v[dir].first;
		nclus = ck->runs.v[dir].nclus;
	}
	if ((err = ck_open_dir(ck, first, nclus, &it))) {
		free(ent);
		return err;
	}
	while (i < n && (r = fk_dir_next(it, ent, NULL)) == 1) {
		for (; i < n && v[i].who.slot < ent->slot; i++)
			;
		for (; i < n && v[i].who.slot == ent->slot; i++)
			if (!(v[i].name = strdup(ent->name))) {
				err = -ENOMEM;
				goto out;
			}
	}
	if (i < n && r < 0)
		err = r;
out:
	fk_dir_close(it);
	free(ent);
	return err;
}

/* The path of each owner in @v (sorted by run), parents first. */
static int build_paths(struct fk_check *ck, struct owner_name *v, size_t n)
{
	size_t i, j;
	int err;

	qsort(v, n, sizeof(*v), cmp_name_ref);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && v[j].who.dir == v[i].who.dir; j++)
			;
		if ((err = read_names(ck, v + i, j - i)))
			return err;
	}
	qsort(v, n, sizeof(*v), cmp_name_run);
	for (i = 0; i < n; i++) { /* a parent's run precedes its entries' */
		uint32_t p = parent_run(ck, v[i].run);
		const char *prefix = "";

		if (p != NO_RUN) {
			const struct owner_name *o = find_name(v, n, p);

			prefix = o ? o->path : NULL;
		}
		if (!prefix || !v[i].name)
			continue;
		if (!(v[i].path = ck_format("%s/%s", prefix, v[i].name)))
			return -ENOMEM;
	}
	return 0;
}

/* Rewrite each cross-link finding to name the first owner. */
static int name_owners(struct fk_check *ck)
{
	LIST(struct owner_name, names) = {NULL, 0, 0};
	size_t i, from;
	int err = 0;

	for (i = 0; i < ck->shared.n && !err; i++)
		if (ck->shared.v[i].finding != NONE &&
		    ck->shared.v[i].owner != NO_RUN &&
		    ck->runs.v[ck->shared.v[i].owner].who.dir != NO_DIR)
			err = want_name(&names.v, &names.n, &names.cap, ck,
					ck->shared.v[i].owner);
	/* Then their directories, level by level up to the root. */
	for (from = 0; !err && from < names.n;) {
		size_t n = names.n;

		for (i = from; i < n && !err; i++) {
			uint32_t p = parent_run(ck, names.v[i].run);

			if (p != NO_RUN)
				err = want_name(&names.v, &names.n, &names.cap,
						ck, p);
		}
		from = n;
	}
	if (!err) {
		unique_names(names.v, &names.n);
		err = build_paths(ck, names.v, names.n);
	}
	for (i = 0; i < ck->shared.n && !err; i++) {
		struct shared *s = &ck->shared.v[i];
		const struct owner_name *o;
		const char *owner = "/";
		struct fk_finding *f;
		char *msg;

		if (s->finding == NONE || s->owner == NO_RUN)
			continue;
		if (ck->runs.v[s->owner].who.dir != NO_DIR) {
			o = find_name(names.v, names.n, s->owner);
			if (!o || !(owner = o->path))
				continue;
		}
		f = &ck->finds.v[s->finding];
		if (s->is_dir && is_ancestor(owner, s->later))
			msg = ck_format(
				"directory loop: shares cluster %u with "
				"%s, which contains it",
				s->clus, owner);
		else
			msg = ck_format("%sshares cluster %u with %s "
					"(cross-linked)",
					s->what, s->clus, owner);
		if (!msg) {
			err = -ENOMEM;
			break;
		}
		free(f->msg);
		f->msg = msg;
	}
	for (i = 0; i < names.n; i++) {
		free(names.v[i].name);
		free(names.v[i].path);
	}
	free(names.v);
	return err;
}

/*
 * Name the first owner of each shared cluster, if there is one.  Either
 * way the map then holds only the lost clusters, as ALLOC.
 */
int ck_find_owners(struct fk_check *ck)
{
	int err;

	if (!ck->shared.n) {
		keep_alloc_only(ck);
		return 0;
	}
	qsort(ck->shared.v, ck->shared.n, sizeof(*ck->shared.v), cmp_shared);
	if ((err = follow_runs(ck)))
		return err;
	keep_alloc_only(ck);
	return name_owners(ck);
}

/* ---- lost clusters ------------------------------------------------------- */

/* Mark each lost cluster that another lost cluster links to (SHARED). */
static int mark_linked(void *arg, uint32_t first, const uint32_t *vals,
		       uint32_t n)
{
	struct fk_check *ck = arg;
	const struct fk_geom *g = ck->g;
	uint32_t i;

	for (i = first < FK_FIRST_CLUS ? FK_FIRST_CLUS - first : 0; i < n;
	     i++) {
		uint32_t v = vals[i];

		if (get_cs(ck, first + i) != CS_FREE &&
		    fk_fat_class(g, v) == FK_ENT_NEXT &&
		    get_cs(ck, v) == CS_ALLOC)
			set_cs(ck, v, CS_SHARED);
	}
	ck_progress(ck, "lost", (uint64_t)first + n, fk_clus_max(g) + 1);
	return 0;
}

/* Follow a lost chain from @head, marking it visited (OWNED). */
static int follow_lost(struct fk_check *ck, uint32_t head, uint32_t *len)
{
	uint32_t clus = head, val;
	int err;

	*len = 0;
	for (;;) {
		set_cs(ck, clus, CS_OWNED);
		++*len;
		if ((err = fk_fat_get(ck->vol, clus, &val)))
			return err;
		if (fk_fat_class(ck->g, val) != FK_ENT_NEXT ||
		    get_cs(ck, val) != CS_SHARED)
			return 0;
		clus = val;
	}
}

/*
 * Count the lost clusters (the map's ALLOC ones), group them into chains
 * by their links (heads first, then loops with no head), and report them.
 * Afterwards every lost cluster is non-FREE in the map, for the repair.
 */
int ck_check_lost(struct fk_check *ck)
{
	const struct fk_geom *g = ck->g;
	char list[256] = "";
	uint32_t clus, len, max = fk_clus_max(g), nlisted = 0;
	size_t idx, off = 0;
	int err, round;

	for (clus = FK_FIRST_CLUS; clus <= max; clus++)
		if (get_cs(ck, clus) == CS_ALLOC) {
			if (!ck->st.lost_clus++)
				ck->first_lost = clus;
		}
	if (!ck->st.lost_clus)
		return 0;
	if ((err = fk_fat_scan(ck->vol, g->active_fat, mark_linked, ck)))
		return err;
	/* Round 0: chains from their heads; round 1: loops. */
	for (round = 0; round < 2; round++)
		for (clus = FK_FIRST_CLUS; clus <= max; clus++) {
			unsigned s = get_cs(ck, clus);

			if (s != (round ? CS_SHARED : CS_ALLOC))
				continue;
			if ((err = follow_lost(ck, clus, &len)))
				return err;
			ck->st.lost_chains++;
			if (nlisted++ < LOST_LISTED && off < sizeof(list))
				off += (size_t)snprintf(
					list + off, sizeof(list) - off,
					"%s%u (%u cluster%s)", off ? ", " : "",
					clus, len, len == 1 ? "" : "s");
		}
	idx = ck_report(
		ck, FK_SEV_ERROR, "lost", NULL,
		"%u lost cluster%s (%llu bytes, owned by no file) in %u "
		"chain%s, from %s%s",
		ck->st.lost_clus, ck_plural(ck->st.lost_clus),
		(unsigned long long)ck->st.lost_clus * g->clus_len,
		ck->st.lost_chains, ck_plural(ck->st.lost_chains), list,
		ck->st.lost_chains > LOST_LISTED ? ", ..." : "");
	if (ck->is_tree_incomplete)
		return 0; /* they might belong to what could not be read */
	ck_set_fix(ck, idx, "freed");
	ck->fix_lost = 1;
	return 0;
}

/* ---- the whole check ---------------------------------------------------- */

int fk_check_run(struct fk_check *ck, struct fk_diag *diag)
{
	int err;

	if ((err = ck_check_boot(ck)) || (err = ck_scan_fats(ck)) ||
	    (err = ck_check_fsinfo(ck)))
		goto fail;
	ck_progress(ck, "files", 0, ck->st.used_clus);
	if ((err = ck_walk_root(ck, diag)) || (err = ck_walk_tails(ck)))
		goto fail;
	ck_check_label(ck);
	if ((err = ck_find_owners(ck)) || (err = ck_check_lost(ck)))
		goto fail;
	if (ck->is_nomem)
		err = -ENOMEM;
fail:
	if (err)
		fk_diag_subject(diag, fk_device_path(ck->vol->dev));
	return err;
}
