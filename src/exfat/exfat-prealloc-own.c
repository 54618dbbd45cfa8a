/*
 * exfat-prealloc-own.c: the exFAT writer's last judge before the first
 * write: every file and directory of the volume walked once, none of
 * which may own a cluster the run takes or writes through (xp_verify()).
 */
#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-prealloc-int.h"
#include "lib/diag.h"
#include "lib/vec.h"
#include "table/fat.h"
#include "volume/family.h"
#include "volume/volume.h"

/* ---- ownership ------------------------------------------------------------ */

/*
 * The bitmap is the free map, and the bitmap may be wrong where nothing
 * said so (a writer that crashed between its entry set and its bitmap, a
 * card pulled out with VolumeDirty cleared by a careless tool): before
 * the first write, every file and directory of the volume is walked once
 * and none may own a cluster the run takes.  Nor may any own a cluster
 * of what the run writes through (xp_claim(): a file to grow, a directory
 * on a path): a NoFatChain DataLength stretched over a neighbour's
 * clusters, which the bitmap rightly marks in use, would have the run
 * zero the neighbour or link its clusters into the grown file's chain.
 * On a card of 20,000 files this costs about as much as zeroing a few
 * MiB (bench/RESULTS.md).
 */

/* Runs the run takes (new clusters of files and directories), sorted. */
struct taken {
	struct fk_run *runs;
	size_t n, cap;
	uint32_t hit; /* a taken cluster found owned; 0: none yet */
};

static int cmp_run(const void *a, const void *b)
{
	const struct fk_run *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

static int take_plan(struct taken *t, const struct fk_plan *p)
{
	if (!p->nruns)
		return 0;
	if (FK_VEC_RESERVE(t->runs, t->cap, t->n + p->nruns))
		return -ENOMEM;
	memcpy(t->runs + t->n, p->runs, p->nruns * sizeof(*p->runs));
	t->n += p->nruns;
	return 0;
}

/*
 * Which of @n runs (sorted and apart, @stride bytes each, each beginning
 * with a struct fk_run) shares a cluster with @run?  Its index, with the
 * first cluster shared in @hit; @n: none.
 */
static size_t overlap(const void *list, size_t n, size_t stride,
		      const struct fk_run *run, uint32_t *hit)
{
	const char *base = list;
	const struct fk_run *r;
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		r = (const struct fk_run *)(const void *)(base + mid * stride);
		if ((uint64_t)r->first + r->nclus <= run->first)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n)
		return n;
	r = (const struct fk_run *)(const void *)(base + lo * stride);
	if ((uint64_t)r->first >= (uint64_t)run->first + run->nclus)
		return n;
	*hit = r->first > run->first ? r->first : run->first;
	return lo;
}

/*
 * A directory the ownership walk reached: its name and its parent, so a
 * path is built only for the message that needs one.  Copying the whole
 * path into each subdirectory made a deep tree cost the square of its
 * depth (a 255-unit name is up to 765 bytes a level).
 */
struct wnode {
	char *name;    /* NULL: the root */
	size_t parent; /* index of the parent's node */
};

/* A directory still to read. */
struct pending {
	struct fk_exfat_stream s;
	size_t node; /* in walk.nodes; 0 is the root */
};

/*
 * First clusters of the directories read, so that a directory two
 * entries lead to (or a loop) is read once: open addressing, grown at
 * half full.
 */
struct seen {
	uint32_t *slot; /* 0: empty (no directory starts at cluster 0) */
	size_t cap, n;
};

/* The ownership walk: what it looks for and where it has been. */
struct walk {
	struct taken t;
	const struct xop *op; /* its own list: what the run writes through */
	/* where the sets of those are (self_key()), sorted */
	uint64_t *selves;
	size_t nselves;
	int is_self;		 /* the stream walked is one of those */
	const struct xown *held; /* what a stream was found to share */
	uint32_t held_hit;	 /* the first cluster it shares */
	struct seen sn;
	struct pending *stack;
	size_t n, cap;
	struct wnode *nodes;
	size_t nnodes, cap_nodes;
	struct fk_exfat_set *set;
};

/* Add @clus to @sn; 1 if it was there already, 0 if added, -ENOMEM. */
static int seen_add(struct seen *sn, uint32_t clus)
{
	size_t i;

	if (2 * (sn->n + 1) > sn->cap) {
		size_t cap = sn->cap ? 2 * sn->cap : 256, k;
		uint32_t *slot = calloc(cap, sizeof(*slot));

		if (!slot)
			return -ENOMEM;
		for (k = 0; k < sn->cap; k++) {
			if (!sn->slot[k])
				continue;
			for (i = sn->slot[k] * 2654435761u % cap; slot[i];
			     i = (i + 1) % cap)
				;
			slot[i] = sn->slot[k];
		}
		free(sn->slot);
		sn->slot = slot;
		sn->cap = cap;
	}
	for (i = clus * 2654435761u % sn->cap; sn->slot[i];
	     i = (i + 1) % sn->cap)
		if (sn->slot[i] == clus)
			return 1;
	sn->slot[i] = clus;
	sn->n++;
	return 0;
}

/*
 * The path of @node in @buf (@cap bytes, at least 8): "/" for the root.
 * Built from the end, so a path longer than @buf keeps its last levels,
 * the ones that say what it is, behind "/...".
 */
static void path_of(const struct walk *w, size_t node, char *buf, size_t cap)
{
	size_t pos = cap - 1, len, k;

	buf[pos] = '\0';
	for (k = node; w->nodes[k].name; k = w->nodes[k].parent) {
		len = strlen(w->nodes[k].name);
		if (len + 1 + 4 > pos) {
			pos -= 4;
			memcpy(buf + pos, "/...", 4);
			break;
		}
		pos -= len;
		memcpy(buf + pos, w->nodes[k].name, len);
		buf[--pos] = '/';
	}
	if (pos == cap - 1)
		buf[--pos] = '/';
	memmove(buf, buf + pos, cap - pos);
}

/*
 * fk_exfat_stream_walk() callback: does @run hold a taken cluster, or one
 * of what the run writes through (unless it is that structure's own
 * stream)?  Either stops the walk.
 */
static int hit_owned(void *arg, const struct fk_run *run)
{
	struct walk *w = arg;
	const struct xop *op = w->op;
	size_t i;

	if (overlap(w->t.runs, w->t.n, sizeof(*w->t.runs), run, &w->t.hit) <
	    w->t.n)
		return 1;
	if (w->is_self)
		return 0;
	i = overlap(op->own, op->nown, sizeof(*op->own), run, &w->held_hit);
	if (i == op->nown)
		return 0;
	w->held = &op->own[i];
	return 1;
}

/*
 * Does @st, which @owner (a name) or entry @ent of directory @node holds
 * (@ent 0: @owner's own stream), hold a taken cluster, or one of what the
 * run writes through?  Then, or when its clusters cannot be read, @diag
 * says whose they are and the run is refused.  Returns 0, FK_ECORRUPT or
 * -errno.
 */
static int check_owner(struct xop *op, struct walk *w, size_t node,
		       const struct fk_exfat_stream *st, const char *owner,
		       const unsigned char *ent, struct fk_diag *diag)
{
	struct fk_chain_info info;
	char what[sizeof(diag->what)], whose[32] = "";
	size_t len;
	int err;

	if (!st->first_clus)
		return 0;
	w->held = NULL;
	err = fk_exfat_stream_walk(op->vol, st, hit_owned, w, &info);
	if (err >= 0 && !w->t.hit && !w->held)
		return 0;
	/* The owner's name whole, its directory's path in what is left. */
	len = owner ? strlen(owner) + 1 : 0;
	path_of(w, node, what, sizeof(what) - len);
	if (owner)
		snprintf(what + strlen(what), sizeof(what) - strlen(what),
			 "%s%s", node ? "/" : "", owner);
	if (ent)
		snprintf(whose, sizeof(whose), "entry type 0x%02X %s",
			 ent[GEN_TYPE], owner ? "of its set " : "");
	if (err < 0 && err != -ENOMEM) {
		fk_diag_set(diag, what,
			    "%sclusters from %" PRIu32 " cannot be read (%s)",
			    whose, st->first_clus, strerror(-err));
		return FK_ECORRUPT;
	}
	if (err < 0)
		return err;
	if (w->held)
		fk_diag_set(diag, what,
			    "%sowns cluster %" PRIu32 ", which %s owns too "
			    "(cross-linked)",
			    whose, w->held_hit, w->held->owner);
	else
		fk_diag_set(diag, what,
			    "%sowns cluster %" PRIu32 ", which the allocation "
			    "bitmap marks free",
			    whose, w->t.hit);
	return FK_ECORRUPT;
}

/*
 * The allocations of @set's entries from @from on other than its stream
 * and names (a Vendor Allocation, any entry through the generic
 * template: fk_exfat_entry_alloc()), checked as check_owner() does.  An
 * entry of unknown meaning (@is_unknown: an unknown critical entry, an
 * orphan) is walked wherever its fields point, AllocationPossible or not:
 * nobody can say those clusters are free.
 */
static int check_entries(struct xop *op, struct walk *w, size_t node,
			 const struct fk_exfat_set *set, uint32_t from,
			 const char *owner, struct fk_diag *diag)
{
	struct fk_exfat_stream st;
	uint32_t i;
	int err, is_unknown;

	for (i = from; i < set->nents && i < FK_EXFAT_SET_MAX; i++) {
		const unsigned char *e = set->raw[i];

		if (e[GEN_TYPE] == FK_EXFAT_T_NAME ||
		    (set->kind == FK_EXK_FILE &&
		     e[GEN_TYPE] == FK_EXFAT_T_STREAM))
			continue;
		is_unknown = set->kind == FK_EXK_CRITICAL ||
			     set->kind == FK_EXK_ORPHAN ||
			     !(e[GEN_TYPE] & FK_EXFAT_BENIGN);
		if (!fk_exfat_entry_alloc(e, &st) && !is_unknown)
			continue;
		if ((err = check_owner(op, w, node, &st, owner, e, diag)))
			return err;
	}
	return 0;
}

/* Entry @idx of the directory that starts at @dir_clus. */
static uint64_t self_key(uint32_t dir_clus, uint32_t idx)
{
	return (uint64_t)dir_clus << 32 | idx;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Where the entry sets of the files to grow and the directories on the
 * paths are (the bitmap's and up-case table's sets are not walked), so
 * that the walk knows their own streams from a stranger's.  0 or -ENOMEM.
 */
static int find_selves(const struct xop *op, struct walk *w)
{
	const struct xfile *fp;
	const struct xdir *d;
	size_t i, n = 0;

	if (!(w->selves = calloc(op->run->nfiles + op->ndirs + 1,
				 sizeof(*w->selves))))
		return -ENOMEM;
	for (i = 0; i < op->run->nfiles; i++) {
		fp = &op->files[i];
		if (!fp->pf.is_new)
			w->selves[n++] = self_key(fp->d->s.first_clus,
						  fp->d->names[fp->name_i].idx);
	}
	for (i = 0; i < op->ndirs; i++) {
		d = op->dirs[i];
		if (d->parent && !d->is_new)
			w->selves[n++] =
				self_key(d->parent->s.first_clus,
					 d->parent->names[d->parent_name].idx);
	}
	qsort(w->selves, n, sizeof(*w->selves), cmp_u64);
	w->nselves = n;
	return 0;
}

/* Is entry @idx of the directory at @dir_clus one of find_selves()'? */
static int is_self(const struct walk *w, uint32_t dir_clus, uint32_t idx)
{
	uint64_t key = self_key(dir_clus, idx);

	return bsearch(&key, w->selves, w->nselves, sizeof(key), cmp_u64) !=
	       NULL;
}

/* Push directory @s, named @name, in node @parent, to be read. */
static int push_dir(struct walk *w, const struct fk_exfat_stream *s,
		    const char *name, size_t parent)
{
	struct wnode *nd;

	if (FK_VEC_RESERVE(w->stack, w->cap, w->n + 1) ||
	    FK_VEC_RESERVE(w->nodes, w->cap_nodes, w->nnodes + 1))
		return -ENOMEM;
	nd = &w->nodes[w->nnodes];
	nd->parent = parent;
	if (name && !(nd->name = strdup(name)))
		return -ENOMEM;
	if (!name)
		nd->name = NULL;
	w->stack[w->n].s = *s;
	w->stack[w->n++].node = w->nnodes++;
	return 0;
}

/*
 * Read directory @p and every set in it: a set whose stream, or any
 * other allocation of its entries, holds a taken cluster is refused, as
 * is an entry of unknown meaning whose fields point at one;
 * subdirectories are pushed.  Damage is not judged here (the checker's
 * job): what can be read is looked at.
 */
static int scan_dir(struct xop *op, const struct pending *p, struct walk *w,
		    struct fk_diag *diag)
{
	struct fk_exfat_set *set = w->set;
	struct fk_exfat_dir *it;
	int err = 0, r;

	if ((err = fk_exfat_dir_open(op->vol, p->node ? &p->s : NULL, &it)))
		return err;
	while ((r = fk_exfat_dir_next(it, set, NULL)) == 1) {
		struct fk_exfat_stream s = {set->first_clus, set->data_len,
					    set->is_no_fat_chain};

		switch (set->kind) {
		case FK_EXK_FILE:
			w->is_self =
				is_self(w, p->s.first_clus, set->first_ent);
			err = check_owner(op, w, p->node, &s, set->name, NULL,
					  diag);
			w->is_self = 0;
			if (!err)
				err = check_entries(op, w, p->node, set, 1,
						    set->name, diag);
			break;
		case FK_EXK_BENIGN:
		case FK_EXK_CRITICAL:
		case FK_EXK_ORPHAN:
			err = check_entries(op, w, p->node, set, 0, NULL, diag);
			break;
		default: /* the bitmap and up-case table: judged before */
			break;
		}
		if (err)
			break;
		if (set->kind != FK_EXK_FILE || !s.first_clus ||
		    !(set->attr & FK_ATTR_DIR) ||
		    (r = seen_add(&w->sn, s.first_clus)) == 1)
			continue;
		if (r < 0 || (err = push_dir(w, &s, set->name, p->node))) {
			err = -ENOMEM;
			break;
		}
	}
	fk_exfat_dir_close(it);
	return err ? err : r < 0 && r != FK_ECORRUPT ? r : 0;
}

int xp_verify(struct fk_prun *run, struct fk_diag *diag)
{
	struct xop *op = run->fam_op;
	struct fk_exfat_stream root = {op->vol->g.root_clus, 0, 0};
	struct walk w;
	struct pending p;
	size_t i;
	int err = 0, xp_is_changed = 0;

	memset(&w, 0, sizeof(w));
	w.op = op;
	for (i = 0; !err && i < run->nfiles; i++) {
		err = take_plan(&w.t, &op->files[i].pf.add);
		xp_is_changed |= op->files[i].pf.is_changed;
	}
	for (i = 0; !err && i < op->ndirs; i++)
		err = take_plan(&w.t, &op->dirs[i]->growth);
	/* A run that changes nothing writes nothing: no walk. */
	if (err || (!w.t.n && !xp_is_changed) || (err = find_selves(op, &w)))
		goto out;
	qsort(w.t.runs, w.t.n, sizeof(*w.t.runs), cmp_run);
	if (!(w.set = malloc(sizeof(*w.set))) ||
	    (err = push_dir(&w, &root, NULL, 0)) ||
	    (err = seen_add(&w.sn, root.first_clus)) < 0) {
		err = -ENOMEM;
		goto out;
	}
	while (!err && w.n) {
		p = w.stack[--w.n];
		err = scan_dir(op, &p, &w, diag);
	}
out:
	for (i = 0; i < w.nnodes; i++)
		free(w.nodes[i].name);
	free(w.nodes);
	free(w.stack);
	free(w.set);
	free(w.sn.slot);
	free(w.t.runs);
	free(w.selves);
	return err;
}
