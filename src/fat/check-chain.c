/*
 * check-chain.c: cluster chains.  Claiming marks a chain in the ownership
 * map (iface/ownmap.h, two bits per cluster in two planes, the exFAT
 * checker's too), so a loop or a second owner shows at the first shared
 * cluster, and keeps what it claimed as a run (16 bytes).  Owners are not
 * stored per cluster: after a cross-link one explicit step follows the
 * runs again to name the first owner of each shared cluster.  A cut is
 * reported as the exFAT checker's are (iface/claim.c).  Also here:
 * preallocated tails, claimed after the tree, and the lost clusters that
 * nothing claimed.
 */
#include "fat/check-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fat/dir.h"
#include "lib/vec.h"
#include "table/fat-links.h"
#include "table/fat.h"
#include "volume/volume.h"

#define PROGRESS_STEP (1u << 16) /* clusters between progress calls */
#define LOST_LISTED   5		 /* lost chains named in the finding */

/* A run whose owner's name the owners step looks up. */
struct owner_name {
	uint32_t run;
	struct entry_ref who;
	char *name; /* the entry's name */
	char *path; /* the whole path */
};

/* ---- cluster map ------------------------------------------------------ */

/* Keep only the clusters in state ALLOC (the lost ones). */
static void keep_alloc_only(struct fat_check *ck)
{
	fk_own_keep_alloc(&ck->map);
}

/* ---- claiming chains ----------------------------------------------------- */

/* Count @k more claimed clusters, calling the progress hook at each
 * multiple of PROGRESS_STEP passed (@k is below it). */
static uint64_t count_claimed(struct fat_check *ck, uint64_t claimed,
			      uint32_t k)
{
	if ((claimed + k) / PROGRESS_STEP != claimed / PROGRESS_STEP)
		ck_progress(ck->rec, "files",
			    (claimed + k) / PROGRESS_STEP * PROGRESS_STEP,
			    ck->st->used_clus);
	return claimed + k;
}

/*
 * Claim @clus (whose entry is @val) unless it is free, bad or claimed
 * already, and say whether the chain goes on from @val: the one judgement
 * of a link, wherever the fast loop of claim_chain() stops.  0 (go on), 1
 * (stopped: @c says why) or -errno.
 */
static int claim_one(struct fat_check *ck, uint32_t start,
		     const struct run_before *before, uint32_t clus,
		     uint32_t val, struct fk_claim *c)
{
	enum fk_ent_class cls = ck_class(ck, val);
	unsigned s = get_cs(ck, clus);
	int err, is_own;

	if (cls == FK_ENT_FREE || cls == FK_ENT_BAD) {
		c->why = cls == FK_ENT_FREE ? FK_CUT_FREE : FK_CUT_BAD;
		return 1; /* @c->at is @clus already */
	}
	/* Take @clus unless a claim (this one or another) has it. */
	if (s == CS_OWNED || s == CS_SHARED) {
		c->why = FK_CUT_CROSS;
		err = before ? fk_chain_holds(ck->vol, before->first,
					      before->nclus + c->nclus, clus,
					      &is_own)
			     : fk_chain_holds(ck->vol, start, c->nclus, clus,
					      &is_own);
		if (err)
			return err;
		if (is_own)
			c->why = FK_CUT_LOOP;
		else
			set_cs(ck, clus, CS_SHARED);
		return 1;
	}
	set_cs(ck, clus, CS_OWNED);
	ck->claimed = count_claimed(ck, ck->claimed, 1);
	c->nclus++;
	c->last = clus;
	c->at = val;
	if (cls == FK_ENT_NEXT)
		return 0;
	c->why = FK_CUT_NONE;
	if (cls == FK_ENT_EOC)
		return 1;
	c->why = FK_CUT_VALUE;
	c->at = clus;
	c->val = val;
	c->cls = cls;
	return 1;
}

/*
 * fk_links_take for claim_chain(): a cluster whose entry is a link was in
 * use at the scan, so it is ALLOC unless a claim took it, and becomes
 * OWNED; any other state is for claim_one() to judge (not expected: the
 * loop is laid out for going on).  @arg is the map's own plane: stores
 * into it may alias anything behind a pointer, so the walk keeps nothing
 * there.
 */
static inline int take_alloc(void *arg, uint32_t n, uint32_t clus, uint32_t val)
{
	(void)n;
	(void)val;
	return fk_own_take_link(arg, clus);
}

/*
 * Claim the chain from @start, at most @limit clusters.  A chain stops at
 * its end, at a free or bad cluster, after a cluster whose value is
 * reserved or out of range, or where it reaches a cluster already claimed
 * (its own: a loop; another's: a cross-link, which marks the cluster
 * SHARED).  Bounded: each step claims a new cluster.
 */
static int claim_chain(struct fat_check *ck, uint32_t start, uint32_t limit,
		       const struct run_before *before, struct fk_claim *c)
{
	struct fk_links_span span;
	struct fk_links_end end;
	uint32_t clus = start, k, want;
	int held, err; /* held: @clus's entry is whole in the span */

	*c = (struct fk_claim){FK_CUT_NONE, 0, 0, start, 0, FK_ENT_FREE, 0};
	/* (FK_CUT_NONE as left on an error) */
	if (!fk_clus_valid(ck->g, start)) {
		c->why = FK_CUT_START;
		return 0;
	}
	for (;;) {
		if (c->nclus == limit) {
			c->why = FK_CUT_LIMIT;
			return 0;
		}
		if ((held = fk_fat_links_span(ck->vol, clus, &span)) < 0)
			return held;
		/* Claimed in one go while each cluster's entry is a link in
		 * the span and the cluster is ALLOC (count_claimed() takes
		 * fewer than PROGRESS_STEP at a time). */
		want = limit - c->nclus;
		if (want >= PROGRESS_STEP)
			want = PROGRESS_STEP - 1;
		k = 0;
		end.clus = clus;
		if (held) {
			k = fk_links_follow(&span, clus, want, take_alloc,
					    ck->map.own, &end);
		} else if ((err = fk_fat_get(ck->vol, clus, &end.val))) {
			return err; /* a FAT12 entry straddles the span's end */
		}
		if (k) {
			ck->claimed = count_claimed(ck, ck->claimed, k);
			c->nclus += k;
			c->last = end.prev;
			c->at = end.clus;
			if (k == want) { /* the limit, or another batch */
				clus = end.clus;
				continue;
			}
		}
		/* The one cluster the fast loop stopped at. */
		if ((err = claim_one(ck, start, before, end.clus, end.val, c)))
			return err < 0 ? err : 0;
		clus = end.val;
	}
}

/* Append @r to the run log, a new block when the last is full. */
static int log_run(struct run_log *log, const struct run *r)
{
	if (log->n == log->nblocks * RUN_BLOCK) {
		struct run *b;

		if (FK_VEC_RESERVE(log->blocks, log->cap, log->nblocks + 1) ||
		    !(b = malloc(RUN_BLOCK * sizeof(*b))))
			return -ENOMEM;
		log->blocks[log->nblocks++] = b;
	}
	log->blocks[log->n / RUN_BLOCK][log->n % RUN_BLOCK] = *r;
	log->n++;
	return 0;
}

/* Claim as claim_chain() does, and keep what was claimed as a run of @who
 * for the owners step. */
int ck_claim(struct fat_check *ck, uint32_t start, uint32_t limit,
	     const struct entry_ref *who, const struct run_before *before,
	     struct fk_claim *c)
{
	int err = claim_chain(ck, start, limit, before, c);
	struct run r = {start, c->nclus, *who};

	if (err || !c->nclus)
		return err;
	return log_run(&ck->runs, &r);
}

int ck_chain_unclaimed(struct fat_check *ck, uint32_t start, uint32_t limit)
{
	uint32_t clus = start, n, val, max = fk_clus_max(ck->g);
	int err;

	if (!fk_clus_valid(ck->g, start))
		return 0;
	/* Bounded by the cluster count: a loop is claim_chain()'s to find. */
	for (n = 0; n < limit && n <= max; n++) {
		if (get_cs(ck, clus) != CS_ALLOC)
			return 0;
		if ((err = fk_fat_get(ck->vol, clus, &val)))
			return err;
		if (ck_class(ck, val) != FK_ENT_NEXT)
			return 1; /* its end, or a bad link claim_chain() cuts */
		clus = val;
	}
	return 1;
}

/* Remember a cross-link, so the owners step can name the first owner. */
static int note_shared(struct fat_check *ck, uint32_t clus, size_t finding,
		       int is_dir, const char *path, const char *what)
{
	struct shared s = {clus, finding, is_dir, what, strdup(path), NO_RUN};

	if (!s.later || PUSH(ck->shared, s)) {
		free(s.later);
		return -ENOMEM;
	}
	return 0;
}

/* The claim being reported on, for claim_ops. */
struct judged {
	struct fat_check *ck;
	int is_dir; /* the chain is a directory's */
};

static int plan_end(void *arg, uint32_t last)
{
	struct judged *j = arg;

	return ck_plan_fat(j->ck, last, fk_fat_eoc(j->ck->g));
}

static int note_cross(void *arg, uint32_t clus, size_t idx, const char *path,
		      const char *what)
{
	struct judged *j = arg;

	return note_shared(j->ck, clus, idx, j->is_dir, path, what);
}

static const struct fk_claim_ops claim_ops = {
	.is_value_judged = 0,
	.cross_with = "another chain",
	.long_why = "",
	.dir_max_len = 0,
	.plan_end = plan_end,
	.note_cross = note_cross,
};

/*
 * Report why the claim @c of the chain of the entry being checked
 * stopped short, and plan the cut: the chain ends at its last good
 * cluster (the later owner of a shared cluster loses the shared part).
 * With nothing claimed, the caller decides (first cluster 0, or removal).
 * Returns the finding's index through @idx.
 */
int ck_chain_problem(struct fat_check *ck, const struct fk_claim *c, int is_dir,
		     const char *path, const char *what, size_t *idx)
{
	struct judged j = {ck, is_dir};
	int err = fk_claim_report(ck->rec, &claim_ops, &j, c, path, what, idx);

	if (err || !fk_claim_is_cut(c))
		return err;
	return fk_claim_end(ck->rec, &claim_ops, &j, *idx, c->last);
}

/* ---- preallocated tails ----------------------------------------------- */

/* End @t's file where its size ends: FAT[last] = EOC, or first cluster 0. */
static int cut_before_tail(struct fat_check *ck, const struct tail *t,
			   size_t idx)
{
	struct judged j = {ck, 0};
	struct ent_fix fix;

	if (t->last)
		return fk_claim_end(ck->rec, &claim_ops, &j, idx, t->last);
	ck_set_fix(ck->rec, idx, "first cluster set to 0");
	memset(&fix, 0, sizeof(fix));
	fix.op = EF_SET;
	fix.dir_clus = t->dir_clus;
	fix.slot = t->slot;
	fix.set_first = 1;
	return ck_plan_entry(ck, &fix);
}

static int check_tail(struct fat_check *ck, struct tail *t,
		      const struct fk_claim *c)
{
	uint64_t len = (uint64_t)c->nclus * ck->g->clus_len;
	size_t idx;
	int err;

	if (c->why != FK_CUT_NONE) {
		struct fk_claim m = *c;

		if (!m.nclus) /* the link that failed is the file's last */
			m.last = t->last;
		if ((err = ck_chain_problem(ck, &m, 0, t->path, "", &idx)))
			return err;
		if (!c->nclus && (err = cut_before_tail(ck, t, idx)))
			return err;
	}
	if (!c->nclus)
		return 0;
	idx = ck_report(ck->rec, ck->o.is_strict ? FK_SEV_ERROR : FK_SEV_NOTE,
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
	ck_set_fix(ck->rec, idx, "tail freed");
	return 0;
}

/*
 * Claim the tails (chain parts beyond what sizes need) after every file's
 * needed part, so a tail that runs into another file's data loses, not
 * the file; report them and plan trimming.
 */
int ck_walk_tails(struct fat_check *ck)
{
	size_t i;
	int err;

	for (i = 0; i < ck->tails.n; i++) {
		struct tail *t = &ck->tails.v[i];
		struct fk_claim c;

		struct run_before before = {t->start, t->need};

		if ((err = ck_claim(ck, t->first, UINT32_MAX, &t->who, &before,
				    &c)))
			return err;
		t->nclus = c.nclus;
		ck->st->tail_clus += c.nclus;
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

static int cmp_shared(const void *a, const void *b)
{
	const struct shared *x = a, *y = b;

	return x->clus < y->clus ? -1 : x->clus > y->clus;
}

/* Run @r claimed shared cluster @clus before any later run. */
static void set_owner(struct fat_check *ck, uint32_t clus, uint32_t r)
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
static int follow_runs(struct fat_check *ck)
{
	size_t i;

	for (i = 0; i < ck->runs.n; i++) {
		const struct run *r = run_at(ck, i);
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
static uint32_t parent_run(const struct fat_check *ck, uint32_t r)
{
	uint32_t dir = run_at(ck, r)->who.dir;

	if (dir == ROOT_AREA || dir == NO_DIR ||
	    run_at(ck, dir)->who.dir == NO_DIR)
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
		     const struct fat_check *ck, uint32_t r)
{
	struct owner_name o = {r, run_at(ck, r)->who, NULL, NULL};

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
static int read_names(struct fat_check *ck, struct owner_name *v, size_t n)
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
		first = run_at(ck, dir)->first;
		nclus = run_at(ck, dir)->nclus;
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
static int build_paths(struct fat_check *ck, struct owner_name *v, size_t n)
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
static int name_owners(struct fat_check *ck)
{
	LIST(struct owner_name, names) = {NULL, 0, 0};
	size_t i, from;
	int err = 0;

	for (i = 0; i < ck->shared.n && !err; i++)
		if (ck->shared.v[i].finding != NONE &&
		    ck->shared.v[i].owner != NO_RUN &&
		    run_at(ck, ck->shared.v[i].owner)->who.dir != NO_DIR)
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
		if (run_at(ck, s->owner)->who.dir != NO_DIR) {
			o = find_name(names.v, names.n, s->owner);
			if (!o || !(owner = o->path))
				continue;
		}
		f = &ck->rec->finds.v[s->finding];
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
		ck_add_path(ck->rec, s->finding, owner);
		ck_add_path(ck->rec, s->finding, s->later);
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
int ck_find_owners(struct fat_check *ck)
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
	struct fat_check *ck = arg;
	const struct fk_geom *g = ck->g;
	uint32_t i;

	for (i = first < FK_FIRST_CLUS ? FK_FIRST_CLUS - first : 0; i < n;
	     i++) {
		uint32_t clus = first + i, v = vals[i];

		/* A word of FREE clusters (no lost one) at a time: none
		 * becomes anything else here. */
		if (!((clus - FK_FIRST_CLUS) % 64) && n - i >= 64 &&
		    !fk_own_word_used(&ck->map, (clus - FK_FIRST_CLUS) / 64)) {
			i += 63;
			continue;
		}
		if (!fk_own_is_free(&ck->map, clus) &&
		    ck_class(ck, v) == FK_ENT_NEXT &&
		    fk_own_is_alloc(&ck->map, v))
			set_cs(ck, v, CS_SHARED);
	}
	ck_progress(ck->rec, "lost", (uint64_t)first + n, fk_clus_max(g) + 1);
	return 0;
}

/* Follow a lost chain from @head, marking it visited (OWNED).  It ends
 * where its link leaves the lost clusters not yet visited (@lc->last). */
static int follow_lost(struct fat_check *ck, uint32_t head,
		       struct lost_chain *lc)
{
	uint32_t clus = head, val;
	int err;

	memset(lc, 0, sizeof(*lc));
	lc->head = head;
	for (;;) {
		set_cs(ck, clus, CS_OWNED);
		lc->nclus++;
		if ((err = fk_fat_get(ck->vol, clus, &val)))
			return err;
		lc->last = clus;
		lc->last_val = val;
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
int ck_check_lost(struct fat_check *ck)
{
	const struct fk_geom *g = ck->g;
	char list[256] = "";
	struct lost_chain lc;
	uint32_t clus, max = fk_clus_max(g), nlisted = 0;
	size_t idx, off = 0, i, n;
	uint64_t w;
	int err, round;

	/* A map word at a time: clusters past the last are FREE in the
	 * map. */
	for (i = 0, n = ck->map.nwords; i < n; i++)
		if ((w = fk_own_state_word(&ck->map, i, CS_ALLOC)))
			ck->st->lost_clus += (uint32_t)__builtin_popcountll(w);
	if (!ck->st->lost_clus)
		return 0;
	ck->first_lost = fk_own_next(&ck->map, FK_FIRST_CLUS, CS_ALLOC);
	if ((err = fk_fat_scan(ck->vol, g->active_fat, mark_linked, ck)))
		return err;
	/* Round 0: chains from their heads; round 1: loops. */
	for (round = 0; round < 2; round++)
		for (clus = fk_own_next(&ck->map, FK_FIRST_CLUS,
					round ? CS_SHARED : CS_ALLOC);
		     clus <= max;
		     clus = fk_own_next(&ck->map, clus + 1,
					round ? CS_SHARED : CS_ALLOC)) {
			if ((err = follow_lost(ck, clus, &lc)))
				return err;
			ck->st->lost_chains++;
			if (ck->o.salvage && (err = PUSH(ck->lost, lc)))
				return err;
			if (nlisted++ < LOST_LISTED && off < sizeof(list))
				off += (size_t)snprintf(
					list + off, sizeof(list) - off,
					"%s%u (%u cluster%s)", off ? ", " : "",
					clus, lc.nclus,
					lc.nclus == 1 ? "" : "s");
		}
	idx = ck_report(
		ck->rec, FK_SEV_ERROR, "lost", NULL,
		"%u lost cluster%s (%llu bytes, owned by no file) in %u "
		"chain%s, from %s%s",
		ck->st->lost_clus, ck_plural(ck->st->lost_clus),
		(unsigned long long)ck->st->lost_clus * g->clus_len,
		ck->st->lost_chains, ck_plural(ck->st->lost_chains), list,
		ck->st->lost_chains > LOST_LISTED ? ", ..." : "");
	if (ck->is_tree_incomplete)
		return 0; /* they might belong to what could not be read */
	if (ck->o.salvage)
		return ck_plan_salvage(ck, idx);
	ck_set_fix(ck->rec, idx, "freed");
	ck->fix_lost = 1;
	ck->st->freed_chains = ck->st->lost_chains;
	return 0;
}
