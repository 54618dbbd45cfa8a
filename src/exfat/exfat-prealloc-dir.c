/*
 * exfat-prealloc-dir.c: the exFAT writer's directories.  They are held in
 * memory while the run plans (a directory is at most 256 MiB by the
 * specification, and in practice a few clusters), so free entry slots and
 * names are found without rereading it: a name index per directory,
 * deleted runs first, then the free run at the end, where a directory
 * grows.  Reading one claims its clusters (xp_claim()), judged against
 * the bitmap.  Also the unit tests' door to the slot finder
 * (exfat-prealloc-test.h).
 */
#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-prealloc-int.h"
#include "exfat/exfat-prealloc-test.h"
#include "io/device.h"
#include "lib/bigmem.h"
#include "lib/diag.h"
#include "lib/vec.h"
#include "table/alloc.h"
#include "table/fat.h"
#include "volume/volume.h"

/* ---- directories ---------------------------------------------------------- */

uint64_t xp_ent_off(const struct xop *op, const struct xdir *d, uint32_t idx)
{
	const struct fk_geom *g = &op->vol->g;
	uint64_t pos = (uint64_t)idx * FK_EXFAT_ENT_LEN;

	return fk_clus_off(g, d->clus[pos / g->clus_len]) + pos % g->clus_len;
}

unsigned char *xp_ent_at(struct xdir *d, uint32_t idx)
{
	return d->buf + (size_t)idx * FK_EXFAT_ENT_LEN;
}

void xp_mark_dirty(const struct xop *op, struct xdir *d, uint32_t idx,
		   uint32_t n)
{
	uint32_t sec_len = op->vol->g.sec_len;
	uint64_t lo = (uint64_t)idx * FK_EXFAT_ENT_LEN;
	uint64_t hi = (uint64_t)(idx + n) * FK_EXFAT_ENT_LEN;
	uint64_t s;

	for (s = lo / sec_len; s < (hi + sec_len - 1) / sec_len; s++)
		d->is_dirty[s] = 1;
}

void xp_dir_free(struct xdir *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->nnames; i++)
		free(d->names[i].name16);
	free(d->names);
	fk_plan_free(&d->growth);
	free(d->path);
	free(d->where);
	free(d->holes);
	free(d->clus);
	if (d->buf_mapped)
		fk_bigmem_free(d->buf, 1, d->buf_mapped);
	else
		free(d->buf);
	free(d->is_dirty);
	free(d);
}

/*
 * Did the bitmap mark cluster @c in use when the run began?  It did when
 * the allocator (which reads the bitmap as asked) has it neither free
 * nor planned for a directory of this run (the only plans made while
 * paths are resolved).
 */
static int was_marked(const struct xop *op, uint32_t c)
{
	size_t i, k;

	if (fk_alloc_is_free(op->alloc, c))
		return 0;
	for (i = 0; i < op->ndirs; i++) {
		const struct fk_plan *p = &op->dirs[i]->growth;

		for (k = 0; k < p->nruns; k++)
			if (c - p->runs[k].first < p->runs[k].nclus)
				return 0;
	}
	return 1;
}

/*
 * Are the @n clusters from @first marked in use in the bitmap?  One that
 * is not could be allocated again, over what it holds: refused.
 */
static int judge_bits(const struct xop *op, uint32_t first, uint32_t n,
		      struct fk_diag *diag)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (!was_marked(op, first + i)) {
			fk_diag_set(diag, NULL,
				    "cluster %" PRIu32 " is in use but marked "
				    "free in the allocation bitmap",
				    first + i);
			return FK_ECORRUPT;
		}
	return 0;
}

int xp_judge_plan_bits(const struct xop *op, const struct fk_plan *p,
		       struct fk_diag *diag)
{
	size_t i;
	int err;

	for (i = 0; i < p->nruns; i++)
		if ((err = judge_bits(op, p->runs[i].first, p->runs[i].nclus,
				      diag)))
			return err;
	return 0;
}

static int cmp_own(const void *a, const void *b)
{
	const struct xown *x = a, *y = b;

	return x->run.first < y->run.first ? -1 : x->run.first > y->run.first;
}

/*
 * Record @runs as held by @owner, refusing a cluster that a structure
 * loaded before (the bitmap, the up-case table, a directory on a path, a
 * file to grow) holds too: writing through one of two cross-linked
 * structures destroys the other.  The new runs are sorted and merged into
 * the sorted list, so a path of many fragmented directories costs their
 * runs once each.
 */
int xp_claim(struct xop *op, const struct fk_plan *runs, const char *owner,
	     struct fk_diag *diag)
{
	size_t n = op->nown, k = runs->nruns, i = 0, j = n, o = 0;
	struct xown *merged;

	if (!k)
		return 0;
	if (FK_VEC_RESERVE(op->own, op->cap_own, n + k))
		return -ENOMEM;
	for (o = 0; o < k; o++)
		op->own[n + o] = (struct xown){runs->runs[o], owner};
	qsort(op->own + n, k, sizeof(*op->own), cmp_own);
	if (!(merged = malloc((n + k) * sizeof(*merged))))
		return -ENOMEM;
	for (o = 0; o < n + k; o++) {
		int is_old =
			j == n + k ||
			(i < n && op->own[i].run.first <= op->own[j].run.first);

		merged[o] = is_old ? op->own[i++] : op->own[j++];
		if (o && merged[o - 1].run.first + merged[o - 1].run.nclus >
				 merged[o].run.first) {
			const struct xown *a = &merged[o - 1], *b = &merged[o];

			fk_diag_set(diag, NULL,
				    "cluster %" PRIu32 " is held by both %s "
				    "and %s (cross-linked)",
				    b->run.first,
				    a->owner == owner ? b->owner : a->owner,
				    owner);
			free(merged);
			op->nown = n; /* the list as it was */
			return FK_ECORRUPT;
		}
	}
	free(op->own);
	op->own = merged;
	op->cap_own = n + k;
	op->nown = n + k;
	return 0;
}

int xp_collect_run(void *arg, const struct fk_run *run)
{
	return fk_plan_add(arg, run->first, run->nclus);
}

/*
 * The clusters of stream @s (a directory on a path, a file to grow) into
 * @runs, judged as a writer must before it relies on them: a chain with
 * no loop, free, bad or out-of-range link, a NoFatChain run inside the
 * heap, exactly the clusters DataLength needs (from a longer chain the
 * writer would use clusters no reader looks at; a shorter one leaves
 * DataLength describing clusters nobody holds), each marked in the
 * bitmap and held by nothing else the run relies on (xp_claim()).  @what
 * says what @s is ("file", "directory"); @owner names it for xp_claim().
 * With @is_sized clear (the root directory) the chain runs to its end.
 */
int xp_load_stream(struct xop *op, const struct fk_exfat_stream *s,
		   int is_sized, const char *what, const char *owner,
		   struct fk_plan *runs, struct fk_diag *diag)
{
	uint64_t need = fk_exfat_clus_needed(&op->vol->g, s->data_len);
	struct fk_chain_info info;
	int err;

	if (!s->first_clus) {
		if (!s->data_len)
			return 0;
		fk_diag_set(diag, NULL,
			    "%s has first cluster 0 with a non-zero length",
			    what);
		return FK_ECORRUPT;
	}
	if ((err = fk_exfat_stream_walk(op->vol, s, xp_collect_run, runs,
					&info)))
		return err;
	if (!s->is_no_fat_chain && info.end != FK_ENT_EOC)
		return fk_chain_error(&info, diag);
	if (s->is_no_fat_chain && info.end == FK_ENT_RANGE) {
		fk_diag_set(diag, NULL,
			    "contiguous %s runs past the last cluster", what);
		return FK_ECORRUPT;
	}
	if (is_sized && runs->nclus != need) {
		fk_diag_set(diag, NULL,
			    "%s's cluster chain has %" PRIu32 " clusters, its "
			    "DataLength needs %" PRIu64,
			    what, runs->nclus, need);
		return FK_ECORRUPT;
	}
	if ((err = xp_judge_plan_bits(op, runs, diag)))
		return err;
	return xp_claim(op, runs, owner, diag);
}

static uint32_t bucket_of(uint16_t hash)
{
	return hash % NBUCKETS;
}

int xp_name_push(struct xdir *d, const struct xname *nm)
{
	struct xname *slot;

	if (FK_VEC_RESERVE(d->names, d->cap_names, d->nnames + 1))
		return -ENOMEM;
	slot = &d->names[d->nnames];
	*slot = *nm;
	return (int)d->nnames++;
}

void xp_name_index(struct xop *op, struct xdir *d, uint32_t i)
{
	struct xname *nm = &d->names[i];
	uint32_t b;

	nm->hash = fk_exfat_name_hash(fk_exfat_of(op->vol)->upcase, nm->name16,
				      nm->len);
	b = bucket_of(nm->hash);
	nm->next = d->bucket[b];
	d->bucket[b] = i;
}

/* The name @name16 in @d, or NO_TAG. */
uint32_t xp_name_find(const struct xop *op, const struct xdir *d,
		      const uint16_t *name16, uint32_t len)
{
	const struct fk_exfat_upcase *up = fk_exfat_of(op->vol)->upcase;
	uint16_t hash = fk_exfat_name_hash(up, name16, len);
	uint32_t i = d->bucket[bucket_of(hash)];

	/* Names whose hashes differ differ: most need no compare. */
	for (; i != NO_TAG; i = d->names[i].next)
		if (d->names[i].hash == hash &&
		    !fk_exfat_name_cmp(up, d->names[i].name16, d->names[i].len,
				       name16, len))
			return i;
	return NO_TAG;
}

/*
 * Read @d's entries up to @upto at least: whole sectors, to the end of a
 * piece a lister reads (fk_exfat_dir_first_piece() first, then twice the
 * last: the open or the walk of every directory read those pages already,
 * so a card is not asked again), no further than the directory,
 * adjacent clusters in one request.  A writer needs the sets before the
 * end marker and the slots it takes after it: on a card a 128 KiB
 * cluster is not read whole for a few entries.
 */
static int read_ents(struct xop *op, struct xdir *d, uint32_t upto)
{
	const struct fk_geom *g = &op->vol->g;
	uint64_t have = (uint64_t)d->nread * FK_EXFAT_ENT_LEN;
	uint64_t want = (uint64_t)upto * FK_EXFAT_ENT_LEN;
	uint64_t disk = (uint64_t)d->disk_nents * FK_EXFAT_ENT_LEN;
	uint64_t end;
	uint32_t first;
	int err;

	if (upto <= d->nread)
		return 0;
	/* To the end of the lister's piece that holds entry @upto - 1: its
	 * pieces are the first, then twice the last, back to back. */
	first = fk_exfat_dir_first_piece(!d->parent);
	for (end = first; end < want; end = 2 * end + first)
		;
	want = end;
	want = (want + g->sec_len - 1) / g->sec_len * g->sec_len;
	want = want < disk ? want : disk;
	while (have < want) {
		uint32_t k = (uint32_t)(have / g->clus_len);
		uint64_t len = g->clus_len - have % g->clus_len;

		for (; have + len < want && d->clus[k + 1] == d->clus[k] + 1;
		     k++)
			len += g->clus_len;
		len = len < want - have ? len : want - have;
		if ((err = fk_device_read(
			     op->vol->dev,
			     xp_ent_off(op, d,
					(uint32_t)(have / FK_EXFAT_ENT_LEN)),
			     d->buf + have, (size_t)len)))
			return err;
		have += len;
	}
	d->nread = (uint32_t)(have / FK_EXFAT_ENT_LEN);
	return 0;
}

/*
 * The entries from the end marker up to @upto (the slots a new set takes
 * and the one after it) must be 0x00 (spec 6.2: all entries after the
 * marker are markers too): a set hidden there, which fatcheck can bring
 * back, would be overwritten, or read as the directory's once a new set
 * ends before it.  The rest of the directory past the marker is not read
 * (nor changed).
 */
static int check_tail(struct xop *op, struct xdir *d, uint32_t upto,
		      struct fk_diag *diag)
{
	int err;

	upto = upto < d->disk_nents ? upto : d->disk_nents;
	if (upto <= d->tail_ok)
		return 0;
	if ((err = read_ents(op, d, upto)))
		return err;
	for (; d->tail_ok < upto; d->tail_ok++)
		if (xp_ent_at(d, d->tail_ok)[0] != FK_EXFAT_T_END) {
			fk_diag_set(diag, d->where,
				    "directory has entries after its end "
				    "marker");
			return FK_ECORRUPT;
		}
	return 0;
}

/* Free slots: deleted runs before the end marker, the run after it. */
static int find_slots(struct xdir *d, const struct fk_exfat_dir_stats *st)
{
	uint32_t i, run = 0;

	d->end_idx = st->end_ent < d->nents ? st->end_ent : d->nents;
	d->tail_ok = d->end_idx;
	for (i = 0; i <= d->end_idx; i++) {
		if (i < d->end_idx && !(xp_ent_at(d, i)[0] & FK_EXFAT_IN_USE)) {
			run++;
			continue;
		}
		if (run) {
			if (FK_VEC_RESERVE(d->holes, d->cap_holes,
					   d->nholes + 1))
				return -ENOMEM;
			d->holes[d->nholes].idx = i - run;
			d->holes[d->nholes++].n = run;
			run = 0;
		}
	}
	return 0;
}

/* The clusters of @runs, one by one, as @d's. */
static int set_clus(struct xdir *d, const struct fk_plan *runs)
{
	size_t r;
	uint32_t i;

	if (!(d->clus = malloc((size_t)runs->nclus * sizeof(*d->clus))))
		return -ENOMEM;
	for (r = 0; r < runs->nruns; r++)
		for (i = 0; i < runs->runs[r].nclus; i++)
			d->clus[d->nclus++] = runs->runs[r].first + i;
	return 0;
}

/*
 * A damaged set (fk_exfat_set_damage()) in a directory the run writes to
 * or goes through: its SecondaryCount may claim the slots after it, so a
 * new set placed there, or a name found there, may be part of it for
 * another reader.  The directory is refused, never written around it.
 */
static void refuse_damage(const struct fk_exfat_set *set, struct fk_diag *diag)
{
	const char *why = fk_exfat_set_damage(set);

	if (set->kind == FK_EXK_FILE && set->name[0])
		fk_diag_set(diag, NULL,
			    "damaged entry set at entry %" PRIu32 " ('%s'): %s",
			    set->first_ent, set->name, why);
	else
		fk_diag_set(diag, NULL,
			    "damaged entry set at entry %" PRIu32
			    " (type 0x%02X): %s",
			    set->first_ent, set->type, why);
}

/*
 * One set @set of directory @d as xdir_load() reads it: a damaged one
 * refuses the directory, a file's name goes into the name index.
 * Returns 0, FK_ECORRUPT or -ENOMEM.
 */
static int add_set(struct xop *op, struct xdir *d,
		   const struct fk_exfat_set *set, struct fk_diag *diag)
{
	struct xname nm;
	int k;

	if (fk_exfat_set_damage(set)) {
		refuse_damage(set, diag);
		return FK_ECORRUPT;
	}
	if (set->kind != FK_EXK_FILE)
		return 0;
	memset(&nm, 0, sizeof(nm));
	/* A name with a NUL unit is read, and mended by fatcheck, as cut
	 * there: indexed so, a new name equal to that part finds this set
	 * (and its defects refuse the run) instead of being created beside
	 * it as a duplicate. */
	for (nm.len = 0; nm.len < set->name16_len && set->name16[nm.len];
	     nm.len++)
		;
	nm.idx = set->first_ent;
	nm.nents = set->nents;
	nm.tag = NO_TAG;
	nm.defects = set->defects;
	nm.attr = set->attr;
	nm.s.first_clus = set->first_clus;
	nm.s.data_len = set->data_len;
	nm.s.is_no_fat_chain = set->is_no_fat_chain;
	nm.valid_len = set->valid_len;
	if (nm.idx + nm.nents > d->nents)
		return FK_ECORRUPT;
	if (!(nm.name16 = calloc(nm.len + 1, sizeof(uint16_t))))
		return -ENOMEM;
	memcpy(nm.name16, set->name16, nm.len * sizeof(uint16_t));
	if ((k = xp_name_push(d, &nm)) < 0) {
		free(nm.name16);
		return k;
	}
	xp_name_index(op, d, (uint32_t)k);
	return 0;
}

/*
 * Read directory @s (NULL: the root), called @where in messages, with its
 * sets and free slots.  Its stream is judged as a file's (xp_load_stream())
 * before anything is read from it.
 */
static int xdir_load(struct xop *op, const struct fk_exfat_stream *s,
		     const char *where, struct xdir **out, struct fk_diag *diag)
{
	const struct fk_geom *g = &op->vol->g;
	struct fk_exfat_set *set = NULL;
	struct fk_exfat_dir *it = NULL;
	struct fk_plan runs = {NULL, 0, 0, 0};
	struct xdir *d = calloc(1, sizeof(*d));
	int err;

	if (!d)
		return -ENOMEM;
	memset(d->bucket, 0xff, sizeof(d->bucket));
	if (s) {
		d->s = *s;
	} else {
		d->s.first_clus = g->root_clus;
	}
	if (!(d->where = strdup(where))) {
		err = -ENOMEM;
		goto out;
	}
	if ((err = xp_load_stream(op, &d->s, !!s, "directory", d->where, &runs,
				  diag)) ||
	    (err = set_clus(d, &runs)))
		goto out;
	if (!d->nclus ||
	    (uint64_t)d->nclus * g->clus_len > FK_EXFAT_DIR_MAX_LEN) {
		fk_diag_set(diag, NULL,
			    "directory has no clusters or is "
			    "over 256 MiB");
		err = FK_ECORRUPT;
		goto out;
	}
	if (!s)
		d->s.data_len = (uint64_t)d->nclus * g->clus_len;
	d->nents =
		(uint32_t)((uint64_t)d->nclus * g->clus_len / FK_EXFAT_ENT_LEN);
	d->disk_nents = d->nents;
	if (!(d->buf = malloc((size_t)d->nclus * g->clus_len)) ||
	    !(d->is_dirty = calloc((size_t)d->nclus * g->clus_secs, 1)) ||
	    !(set = malloc(sizeof(*set)))) {
		err = -ENOMEM;
		goto out;
	}
	/* The sets come from the iterator, which reads up to the end
	 * marker; the buffer is read as far (from the page cache), and
	 * further only for the slots the run takes (check_tail()). */
	if ((err = fk_exfat_dir_open(op->vol, s, &it)))
		goto out;
	while ((err = fk_exfat_dir_next(it, set, diag)) == 1)
		if ((err = add_set(op, d, set, diag)))
			break;
	if (err < 0)
		goto out;
	if (!(err = read_ents(op, d, fk_exfat_dir_stats(it)->end_ent + 1)))
		err = find_slots(d, fk_exfat_dir_stats(it));
out:
	fk_exfat_dir_close(it);
	fk_plan_free(&runs);
	free(set);
	if (err) {
		xp_dir_free(d);
		return err;
	}
	*out = d;
	return 0;
}

/*
 * The directory whose first cluster is @s's (NULL: the root), the entry
 * @parent_name of @parent, called @where.  Two entries that lead to one
 * directory are refused: the run would grow it through one of them and
 * leave the other's DataLength short.
 */
int xp_dir_get(struct xop *op, const struct fk_exfat_stream *s,
	       struct xdir *parent, uint32_t parent_name, const char *where,
	       struct xdir **out, struct fk_diag *diag)
{
	uint32_t first = s ? s->first_clus : op->vol->g.root_clus;
	size_t i;
	int err;

	for (i = 0; i < op->ndirs; i++) {
		struct xdir *d = op->dirs[i];

		if (d->s.first_clus != first)
			continue;
		if (d->parent != parent ||
		    (parent && d->parent_name != parent_name)) {
			fk_diag_set(diag, NULL,
				    "directory entry leads to %s too "
				    "(cross-linked directories)",
				    d->where ? d->where : d->path);
			return FK_ECORRUPT;
		}
		*out = d;
		return 0;
	}
	if (FK_VEC_RESERVE(op->dirs, op->cap_dirs, op->ndirs + 1))
		return -ENOMEM;
	if ((err = xdir_load(op, s, where, out, diag)))
		return err;
	(*out)->parent = parent;
	(*out)->parent_name = parent_name;
	(*out)->old_nclus = (*out)->nclus;
	(*out)->cap_clus = (*out)->nclus;
	(*out)->is_nfc = (*out)->s.is_no_fat_chain;
	op->dirs[op->ndirs++] = *out;
	return 0;
}

/*
 * One more zeroed cluster for @d, after its last one when that is free
 * (a NoFatChain directory stays one), else from the allocator (its chain
 * is then written out).  Memory only, as every plan.
 */
static int grow_dir(struct xop *op, struct xdir *d, struct fk_diag *diag)
{
	const struct fk_geom *g = &op->vol->g;
	uint32_t tail = d->clus[d->nclus - 1], c;
	size_t len = (size_t)(d->nclus + 1) * g->clus_len;
	unsigned char *buf;
	uint8_t *dirty;
	uint32_t *clus;
	int err;

	if (len > FK_EXFAT_DIR_MAX_LEN) {
		fk_diag_detail(diag, NULL,
			       "the directory is at its 256 MiB limit");
		return -ENOSPC;
	}
	if ((err = fk_alloc_plan(op->alloc, tail, 1, 0, &d->growth, diag)))
		return err;
	c = d->growth.runs[d->growth.nruns - 1].first +
	    d->growth.runs[d->growth.nruns - 1].nclus - 1;
	if (d->nclus == d->cap_clus) {
		/* Doubling: thousands of new files in one directory cost
		 * the same per file at the end as at the start. */
		uint32_t cap = d->cap_clus * 2;

		if ((uint64_t)cap * g->clus_len > FK_EXFAT_DIR_MAX_LEN)
			cap = (uint32_t)(FK_EXFAT_DIR_MAX_LEN / g->clus_len);
		len = (size_t)cap * g->clus_len;
		if (d->buf_mapped) {
			if (!(buf = malloc(len)))
				return -ENOMEM;
			memcpy(buf, d->buf, (size_t)d->nclus * g->clus_len);
			fk_bigmem_free(d->buf, 1, d->buf_mapped);
			d->buf_mapped = 0;
		} else if (!(buf = realloc(d->buf, len))) {
			return -ENOMEM;
		}
		d->buf = buf;
		if (!(dirty = realloc(d->is_dirty, (size_t)cap * g->clus_secs)))
			return -ENOMEM;
		d->is_dirty = dirty;
		if (!(clus = realloc(d->clus, (size_t)cap * sizeof(*clus))))
			return -ENOMEM;
		d->clus = clus;
		d->cap_clus = cap;
	}
	memset(d->buf + (size_t)d->nclus * g->clus_len, 0, g->clus_len);
	memset(d->is_dirty + (size_t)d->nclus * g->clus_secs, 0, g->clus_secs);
	d->clus[d->nclus++] = c;
	d->nents += g->clus_len / FK_EXFAT_ENT_LEN;
	if (c != tail + 1)
		d->is_nfc = 0;
	return 0;
}

/*
 * Would a set of @n entries at @idx span clusters that are not adjacent
 * on disk?  Then it would take two writes, and a crash between them would
 * leave half a set.
 */
static int is_split(const struct xop *op, const struct xdir *d, uint32_t idx,
		    uint32_t n)
{
	uint32_t per = op->vol->g.clus_len / FK_EXFAT_ENT_LEN;
	uint32_t k;

	for (k = idx / per; k < (idx + n - 1) / per; k++)
		if (d->clus[k + 1] != d->clus[k] + 1)
			return 1;
	return 0;
}

/*
 * @n free slots in @d for a new set: a deleted run that is long enough,
 * else the free run at the end, grown by zeroed clusters as needed.  A
 * set that fits in a cluster never spans two clusters apart on disk (see
 * is_split()): the rest of the cluster is filled with deleted entries
 * instead (an end marker there would hide the set after it).  A set
 * longer than a cluster (a 255-unit name on 512-byte clusters is 19
 * entries, 16 fit) spans clusters wherever they are, as the
 * specification allows (6.3) and Linux does; waiting for adjacent ones
 * would grow the directory to its 256 MiB limit.  Nor does a set that
 * fits in a cluster start in the root's old clusters and end in new ones:
 * the link to them then needs no barrier of its own (write_links()).
 * Returns 0, -ENOSPC, FK_ECORRUPT (check_tail()) or -ENOMEM.
 */
int xp_take_slots(struct xop *op, struct xdir *d, uint32_t n, uint32_t *idx,
		  struct fk_diag *diag)
{
	uint32_t per = op->vol->g.clus_len / FK_EXFAT_ENT_LEN;
	int may_split = n > per;
	size_t i;
	int err;

	for (i = 0; i < d->nholes; i++)
		if (d->holes[i].n >= n &&
		    (may_split || !is_split(op, d, d->holes[i].idx, n))) {
			*idx = d->holes[i].idx;
			d->holes[i].idx += n;
			d->holes[i].n -= n;
			return 0;
		}
	for (;;) {
		uint32_t next;

		while (d->end_idx + n > d->nents)
			if ((err = grow_dir(op, d, diag)))
				return err;
		if (may_split)
			break;
		if (is_split(op, d, d->end_idx, n))
			next = (d->end_idx / per + 1) * per;
		else if (!d->parent && d->end_idx < d->disk_nents &&
			 d->end_idx + n > d->disk_nents)
			next = d->disk_nents; /* see write_links() */
		else
			break;
		if ((err = check_tail(op, d, next, diag)))
			return err;
		xp_mark_dirty(op, d, d->end_idx, next - d->end_idx);
		for (; d->end_idx < next; d->end_idx++)
			xp_ent_at(d, d->end_idx)[0] =
				FK_EXFAT_T_FILE & ~FK_EXFAT_IN_USE;
	}
	if ((err = check_tail(op, d, d->end_idx + n + 1, diag)))
		return err;
	*idx = d->end_idx;
	d->end_idx += n;
	return 0;
}

/* ---- test hooks (exfat-prealloc-test.h) ------------------------------------ */

/*
 * The slot finder above (find_slots(), is_split(), xp_take_slots() and the
 * growth it calls) on a directory the unit tests lay out in memory: the
 * same code fatprealloc runs, with a volume that is only a geometry.
 */
struct fk_exfat_slots {
	struct fk_volume vol; /* its geometry only */
	struct xop op;	      /* vol and alloc only */
	struct xdir *d;
};

void fk_exfat_slots_close(struct fk_exfat_slots *s)
{
	if (!s)
		return;
	xp_dir_free(s->d);
	free(s);
}

int fk_exfat_slots_open(const struct fk_geom *g, struct fk_alloc *alloc,
			const uint32_t *clus, uint32_t nclus,
			const unsigned char *ents, struct fk_exfat_slots **out,
			struct fk_diag *diag)
{
	struct fk_exfat_slots *s = calloc(1, sizeof(*s));
	struct fk_exfat_dir_stats st;
	struct xdir *d;
	uint32_t i;
	int err;

	(void)diag; /* entries after the end marker: judged as slots go */
	if (!s || !(s->d = d = calloc(1, sizeof(*d))) ||
	    !(d->clus = calloc(nclus, sizeof(*d->clus))) ||
	    !(d->buf = malloc((size_t)nclus * g->clus_len)) ||
	    !(d->is_dirty = calloc((size_t)nclus * g->clus_secs, 1))) {
		fk_exfat_slots_close(s);
		return -ENOMEM;
	}
	s->vol.g = *g;
	s->op.vol = &s->vol;
	s->op.alloc = alloc;
	memset(d->bucket, 0xff, sizeof(d->bucket));
	memcpy(d->clus, clus, (size_t)nclus * sizeof(*clus));
	memcpy(d->buf, ents, (size_t)nclus * g->clus_len);
	d->nclus = d->cap_clus = d->old_nclus = nclus;
	d->nents = (uint32_t)((uint64_t)nclus * g->clus_len / FK_EXFAT_ENT_LEN);
	d->disk_nents = d->nread = d->nents; /* all of it in memory */
	memset(&st, 0, sizeof(st));
	st.nents = st.end_ent = d->nents;
	for (i = 0; i < d->nents; i++)
		if (xp_ent_at(d, i)[0] == FK_EXFAT_T_END) {
			st.end_ent = i;
			break;
		}
	if ((err = find_slots(d, &st))) {
		fk_exfat_slots_close(s);
		return err;
	}
	*out = s;
	return 0;
}

int fk_exfat_slots_take(struct fk_exfat_slots *s, uint32_t n, uint32_t *idx,
			struct fk_diag *diag)
{
	return xp_take_slots(&s->op, s->d, n, idx, diag);
}

int fk_exfat_slots_is_split(const struct fk_exfat_slots *s, uint32_t idx,
			    uint32_t n)
{
	return is_split(&s->op, s->d, idx, n);
}

const unsigned char *fk_exfat_slots_dir(const struct fk_exfat_slots *s,
					const uint32_t **clus, uint32_t *nclus,
					uint32_t *end_idx)
{
	*clus = s->d->clus;
	*nclus = s->d->nclus;
	*end_idx = s->d->end_idx;
	return s->d->buf;
}
