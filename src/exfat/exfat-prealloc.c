/*
 * exfat-prealloc.c: fatprealloc's exFAT family.  The same contract as the
 * FAT side in prealloc.c (resolve, plan, validate everything, then commit
 * in a crash-safe order; a refusal writes nothing), with exFAT's own
 * structures: the free map comes from the allocation bitmap (one pass), a
 * contiguous file gets NoFatChain and no FAT writes, and entry sets carry
 * ValidDataLength, a SetChecksum and a NameHash through the volume's
 * up-case table.
 *
 * Write order (the specification's section 8.1, plus our batching):
 *   1. VolumeDirty set (if it was clear);
 *   2. FAT chains, only for files that end up fragmented (and the links of
 *      a NoFatChain run that grows past a gap);
 *   3. allocation bitmap, through the bounded dirty-sector cache;
 *   4. zeroing of the new region (from the old ValidDataLength);
 *   5. links from existing chains, then the entry sets (the commit point:
 *      from here the new clusters are owned);
 *   6. PercentInUse and
 *   7. VolumeDirty cleared (only if this run set it), one boot sector write.
 * A crash before 5 leaves at worst bitmap bits nobody owns with VolumeDirty
 * set; a signal before 5 clears those bits again (rollback), unless
 * --per-cluster took a cluster (it takes them one at a time after the
 * zeroing): then the run keeps what it took (fk_prun_cut()).  --sync puts
 * an fsync at each ordering point: after 1, after 2 to 4 (nothing reaches
 * what they write before 5, so they need no order among them), after the
 * links, and after 5 and after 7; the default syncs after 5 and after 7.
 *
 * Directories are held in memory while the run plans (a directory is at
 * most 256 MiB by the specification, and in practice a few clusters), so
 * free entry slots and names are found without rereading it: a name
 * index per directory, deleted runs first, then the free run at the end.
 *
 * The run itself (requests, the cluster plan, zeroing, the result, stop
 * requests and rollback decisions) is prealloc.c's: this file plugs into
 * it as fk_exfat_prealloc_family.
 */
#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/prealloc.h"
#include "exfat/exfat-prealloc-test.h"
#include "fat/dir.h"
#include "iface/prealloc-int.h"
#include "io/cache.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "lib/names.h"
#include "lib/vec.h"
#include "table/alloc.h"
#include "table/fat.h"
#include "volume/family.h"
#include "volume/volume.h"

/* Boot sector fields rewritten here (spec 3.1.13, 3.1.16). */
#define EB_VOL_FLAGS 106
#define EB_PERCENT   112

#define ATTR_DIR     0x10
#define ATTR_ARCHIVE 0x20
#define NBUCKETS     4096 /* name index buckets per directory */
#define NO_TAG	     UINT32_MAX
#define PAGE_LEN     4096u /* a page of a buffered block device */

/* A name in a directory, for lookups and duplicates. */
struct xname {
	uint16_t *name16;
	uint32_t len;	/* UTF-16 units */
	uint32_t idx;	/* entry index of the primary */
	uint32_t nents; /* entries of the set */
	uint32_t next;	/* next in the bucket, or NO_TAG */
	uint32_t tag;	/* file plan index, or NO_TAG */
	uint32_t defects;
	uint16_t attr;
	uint16_t hash; /* NameHash through the volume's up-case table */
	struct fk_exfat_stream s;
	uint64_t valid_len;
};

/* A free run of entry slots before the end marker (deleted sets). */
struct xhole {
	uint32_t idx, n;
};

struct xdir {
	struct fk_exfat_stream s; /* as its entry says (the root: chain) */
	uint32_t *clus;		  /* cluster of each directory cluster */
	uint32_t nclus;
	uint32_t cap_clus;  /* clusters @buf, @is_dirty and @clus hold */
	unsigned char *buf; /* the whole directory, read as far as needed */
	uint32_t nents;
	uint32_t disk_nents; /* entries it had on disk (0: a new one) */
	uint32_t nread;	     /* entries of @buf read (whole sectors) */
	uint32_t tail_ok;    /* entries end_idx .. tail_ok - 1 are 0x00 */
	uint8_t *is_dirty;   /* per sector */
	uint32_t end_idx;    /* first slot of the free run at the end */
	struct xhole *holes;
	size_t nholes, cap_holes;
	struct xname *names;
	size_t nnames, cap_names;
	uint32_t bucket[NBUCKETS];
	struct fk_plan growth; /* clusters the run adds (zeroed) */
	uint32_t old_nclus;    /* clusters before the run */
	struct xdir *parent;   /* NULL: the root */
	uint32_t parent_name;  /* its entry in @parent's names */
	int is_nfc;	       /* NoFatChain after the run */
	int is_new;	       /* -p creates it (its clusters: growth) */
	char *path;	       /* a new directory's path */
	char *where;	       /* its path, for messages ("/": the root) */
};

/* pf.old_size and pf.size are DataLength before and after the run. */
struct xfile {
	struct fk_pfile pf; /* what the run sees; first */
	struct xdir *d;
	uint32_t name_i; /* in d->names */
	uint64_t old_vdl, new_vdl;
	int was_nfc, is_nfc;
};

/* A run of clusters a structure the run relies on holds. */
struct xown {
	struct fk_run run; /* first, so overlap() can search a list */
	const char *owner; /* its name, alive as long as the run */
};

struct xop {
	struct fk_prun *run; /* files, and is_linked once entry sets go */
	struct fk_volume *vol;
	const struct fk_prealloc_opts *o;
	struct fk_alloc *alloc;
	struct fk_exfat_bitmap bm; /* where it is (the allocator reads it) */
	struct fk_cache *bmc;	   /* the bitmap's sectors */
	uint64_t bm_off;	   /* byte offset of the bitmap */
	struct xdir **dirs;
	size_t ndirs, cap_dirs;
	struct xown *own; /* sorted by first cluster, none overlapping */
	size_t nown, cap_own;
	struct xfile *files; /* run->files */
	uint32_t stamp_ts;   /* exFAT timestamp for what the run writes */
	uint8_t stamp_ms10, stamp_tz;
	int was_dirty; /* VolumeDirty was set before the run */
	int set_dirty; /* this run set it */
};

static int is_stopping(const struct xop *op)
{
	return fk_prun_is_stopping(op->run);
}

/* ---- time ----------------------------------------------------------------- */

static int days_of(const struct tm *tm)
{
	return tm->tm_year * 366 + tm->tm_yday;
}

/* The exFAT timestamp (7.4.8), 10 ms increment and UTC offset of @t. */
static void make_stamp(struct xop *op, int64_t t, int is_utc)
{
	time_t tt = (time_t)t;
	struct tm l, g;
	uint16_t date, tod;
	long off = 0;

	if ((int64_t)tt != t || !gmtime_r(&tt, &g)) {
		/* A time no struct tm holds: fk_dos_time() clamps it. */
		fk_dos_time(NULL, t, &date, &tod, &op->stamp_ms10);
		op->stamp_ts = (uint32_t)date << 16 | tod;
		op->stamp_tz = 0x80;
		return;
	}
	if (is_utc || !localtime_r(&tt, &l)) {
		l = g;
	} else {
		/* No tm_gmtoff in POSIX: the difference of the two. */
		off = (long)(l.tm_hour - g.tm_hour) * 3600 +
		      (long)(l.tm_min - g.tm_min) * 60;
		if (days_of(&l) != days_of(&g))
			off += (l.tm_year > g.tm_year ||
				(l.tm_year == g.tm_year &&
				 l.tm_yday > g.tm_yday))
				       ? 86400
				       : -86400;
	}
	fk_dos_time(&l, t, &date, &tod, &op->stamp_ms10);
	op->stamp_ts = (uint32_t)date << 16 | tod;
	op->stamp_tz = (uint8_t)(0x80 | ((off / 900) & 0x7f));
}

/* ---- directories ---------------------------------------------------------- */

static uint64_t ent_off(const struct xop *op, const struct xdir *d,
			uint32_t idx)
{
	const struct fk_geom *g = &op->vol->g;
	uint64_t pos = (uint64_t)idx * FK_EXFAT_ENT_LEN;

	return fk_clus_off(g, d->clus[pos / g->clus_len]) + pos % g->clus_len;
}

static unsigned char *ent_at(struct xdir *d, uint32_t idx)
{
	return d->buf + (size_t)idx * FK_EXFAT_ENT_LEN;
}

static void mark_dirty(const struct xop *op, struct xdir *d, uint32_t idx,
		       uint32_t n)
{
	uint32_t sec_len = op->vol->g.sec_len;
	uint64_t lo = (uint64_t)idx * FK_EXFAT_ENT_LEN;
	uint64_t hi = (uint64_t)(idx + n) * FK_EXFAT_ENT_LEN;
	uint64_t s;

	for (s = lo / sec_len; s < (hi + sec_len - 1) / sec_len; s++)
		d->is_dirty[s] = 1;
}

static void xdir_free(struct xdir *d)
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

static int judge_plan_bits(const struct xop *op, const struct fk_plan *p,
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
static int claim(struct xop *op, const struct fk_plan *runs, const char *owner,
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

static int collect_run(void *arg, const struct fk_run *run)
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
 * bitmap and held by nothing else the run relies on (claim()).  @what
 * says what @s is ("file", "directory"); @owner names it for claim().
 * With @is_sized clear (the root directory) the chain runs to its end.
 */
static int load_stream(struct xop *op, const struct fk_exfat_stream *s,
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
	if ((err = fk_exfat_stream_walk(op->vol, s, collect_run, runs, &info)))
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
	if ((err = judge_plan_bits(op, runs, diag)))
		return err;
	return claim(op, runs, owner, diag);
}

static uint32_t bucket_of(uint16_t hash)
{
	return hash % NBUCKETS;
}

static int name_push(struct xdir *d, const struct xname *nm)
{
	struct xname *slot;

	if (FK_VEC_RESERVE(d->names, d->cap_names, d->nnames + 1))
		return -ENOMEM;
	slot = &d->names[d->nnames];
	*slot = *nm;
	return (int)d->nnames++;
}

static void name_index(struct xop *op, struct xdir *d, uint32_t i)
{
	struct xname *nm = &d->names[i];
	uint32_t b;

	nm->hash =
		fk_exfat_name_hash(op->vol->exfat->upcase, nm->name16, nm->len);
	b = bucket_of(nm->hash);
	nm->next = d->bucket[b];
	d->bucket[b] = i;
}

/* The name @name16 in @d, or NO_TAG. */
static uint32_t name_find(const struct xop *op, const struct xdir *d,
			  const uint16_t *name16, uint32_t len)
{
	const struct fk_exfat_upcase *up = op->vol->exfat->upcase;
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
			     ent_off(op, d,
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
		if (ent_at(d, d->tail_ok)[0] != FK_EXFAT_T_END) {
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
		if (i < d->end_idx && !(ent_at(d, i)[0] & FK_EXFAT_IN_USE)) {
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
 * Read directory @s (NULL: the root), called @where in messages, with its
 * sets and free slots.  Its stream is judged as a file's (load_stream())
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
	if ((err = load_stream(op, &d->s, !!s, "directory", d->where, &runs,
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
	while ((err = fk_exfat_dir_next(it, set, diag)) == 1) {
		struct xname nm;
		int k;

		if (fk_exfat_set_damage(set)) {
			refuse_damage(set, diag);
			err = FK_ECORRUPT;
			break;
		}
		if (set->kind != FK_EXK_FILE)
			continue;
		memset(&nm, 0, sizeof(nm));
		/* A name with a NUL unit is read, and mended by fatcheck,
		 * as cut there: indexed so, a new name equal to that part
		 * finds this set (and its defects refuse the run) instead
		 * of being created beside it as a duplicate. */
		for (nm.len = 0;
		     nm.len < set->name16_len && set->name16[nm.len]; nm.len++)
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
		if (nm.idx + nm.nents > d->nents) {
			err = FK_ECORRUPT;
			break;
		}
		if (!(nm.name16 = calloc(nm.len + 1, sizeof(uint16_t)))) {
			err = -ENOMEM;
			break;
		}
		memcpy(nm.name16, set->name16, nm.len * sizeof(uint16_t));
		if ((k = name_push(d, &nm)) < 0) {
			free(nm.name16);
			err = k;
			break;
		}
		name_index(op, d, (uint32_t)k);
	}
	if (err < 0)
		goto out;
	if (!(err = read_ents(op, d, fk_exfat_dir_stats(it)->end_ent + 1)))
		err = find_slots(d, fk_exfat_dir_stats(it));
out:
	fk_exfat_dir_close(it);
	fk_plan_free(&runs);
	free(set);
	if (err) {
		xdir_free(d);
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
static int dir_get(struct xop *op, const struct fk_exfat_stream *s,
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
		if (!(buf = realloc(d->buf, len)))
			return -ENOMEM;
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
static int take_slots(struct xop *op, struct xdir *d, uint32_t n, uint32_t *idx,
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
		mark_dirty(op, d, d->end_idx, next - d->end_idx);
		for (; d->end_idx < next; d->end_idx++)
			ent_at(d, d->end_idx)[0] =
				FK_EXFAT_T_FILE & ~FK_EXFAT_IN_USE;
	}
	if ((err = check_tail(op, d, d->end_idx + n + 1, diag)))
		return err;
	*idx = d->end_idx;
	d->end_idx += n;
	return 0;
}

/* ---- resolving ------------------------------------------------------------ */

static int to_name16(const char *name, uint16_t *out, uint32_t *len)
{
	size_t n;
	int err;

	if ((err = fk_name_check(name)))
		return err;
	if ((err = fk_utf8_to_utf16(name, out, FK_EXFAT_NAME_MAX, &n)))
		return err;
	*len = (uint32_t)n;
	return 0;
}

/* A set whose name matched: is it sound enough to change or enter? */
static int judge_set(const struct xname *nm, struct fk_diag *diag)
{
	if (!(nm->defects & (FK_EXFAT_SET_FATAL | FK_EXS_CHECKSUM |
			     FK_EXS_HASH | FK_EXS_VDL | FK_EXS_ALLOC)))
		return 0;
	fk_diag_set(diag, NULL, "%s", fk_exfat_set_reason(nm->defects));
	return FK_ECORRUPT;
}

/*
 * -p: plan directory @name16 in @pd, one zeroed cluster, NoFatChain,
 * DataLength = ValidDataLength = its allocation; *@i is its name in @pd.
 */
static int dir_create(struct xop *op, struct xdir *pd, const uint16_t *name16,
		      uint32_t len16, const char *path, size_t path_len,
		      uint32_t *i, struct fk_diag *diag)
{
	const struct fk_geom *g = &op->vol->g;
	struct xdir *d;
	struct xname nm;
	int k, err;

	if (FK_VEC_RESERVE(op->dirs, op->cap_dirs, op->ndirs + 1) ||
	    !(d = calloc(1, sizeof(*d))))
		return -ENOMEM;
	memset(d->bucket, 0xff, sizeof(d->bucket));
	op->dirs[op->ndirs++] = d; /* freed with the run from here on */
	d->is_new = 1;
	d->parent = pd;
	if (!(d->path = strndup(path, path_len)) ||
	    !(d->clus = malloc(sizeof(*d->clus))) ||
	    !(d->buf = calloc(1, g->clus_len)) ||
	    !(d->is_dirty = calloc(g->clus_secs, 1)))
		return -ENOMEM;
	if ((err = fk_alloc_plan(op->alloc, 0, 1, 0, &d->growth, diag)))
		return err;
	d->clus[0] = d->growth.runs[0].first;
	d->nclus = 1;
	d->cap_clus = 1;
	d->nents = g->clus_len / FK_EXFAT_ENT_LEN;
	d->is_nfc = 1;
	d->s.first_clus = d->clus[0];
	d->s.data_len = g->clus_len;
	d->s.is_no_fat_chain = 1;
	memset(&nm, 0, sizeof(nm));
	nm.len = len16;
	nm.nents = 2 + (len16 + FN_UNITS - 1) / FN_UNITS;
	nm.attr = ATTR_DIR;
	nm.tag = NO_TAG;
	nm.s = d->s;
	nm.valid_len = g->clus_len;
	if ((err = take_slots(op, pd, nm.nents, &nm.idx, diag)))
		return err;
	if (!(nm.name16 = calloc(len16 + 1, sizeof(uint16_t))))
		return -ENOMEM;
	memcpy(nm.name16, name16, len16 * sizeof(uint16_t));
	if ((k = name_push(pd, &nm)) < 0) {
		free(nm.name16);
		return k;
	}
	*i = (uint32_t)k;
	d->parent_name = *i;
	name_index(op, pd, *i);
	return 0;
}

/* The first @dir_len bytes of @path (0: the root, "/") into @where. */
static void dir_path(char *where, size_t cap, const char *path, size_t dir_len)
{
	if (dir_len >= cap)
		dir_len = cap - 1;
	memcpy(where, dir_len ? path : "/", dir_len ? dir_len : 1);
	where[dir_len ? dir_len : 1] = '\0';
}

/*
 * dir_get() for the directory of the first @dir_len bytes of @path (0:
 * the root): damage is named by the directory's own path, which the user
 * repairs, not by the file asked for.
 */
static int dir_get_named(struct xop *op, const struct fk_exfat_stream *s,
			 struct xdir *parent, uint32_t parent_name,
			 const char *path, size_t dir_len, struct xdir **dp,
			 struct fk_diag *diag)
{
	char where[FK_NAME_MAX * 2];
	int err;

	dir_path(where, sizeof(where), path, dir_len);
	err = dir_get(op, s, parent, parent_name, where, dp, diag);
	if (err == FK_ECORRUPT)
		fk_diag_set(diag, where, NULL);
	return err;
}

static int resolve_parent(struct xop *op, const char *path, struct xdir **dp,
			  uint16_t *leaf, uint32_t *leaf_len, int *is_dir_form,
			  struct fk_diag *diag)
{
	char comp[FK_NAME_MAX];
	uint16_t name16[FK_EXFAT_NAME_MAX + 1];
	const char *p = path, *next, *start;
	struct fk_exfat_stream cur, *at = NULL;
	struct xdir *parent = NULL;
	uint32_t len16, i, parent_name = 0;
	size_t len, dir_len = 0;
	int err;

	if (*p != '/')
		return -EINVAL;
	for (;;) {
		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		for (next = p + len; *next == '/'; next++)
			;
		if ((err = dir_get_named(op, at, at ? parent : NULL,
					 parent_name, path, dir_len, dp, diag)))
			return err;
		if (!*next)
			break;
		if (len >= sizeof(comp))
			return -ENAMETOOLONG;
		memcpy(comp, p, len);
		comp[len] = '\0';
		start = p;
		p = next;
		if (!strcmp(comp, ".") || !strcmp(comp, ".."))
			return -EINVAL;
		if ((err = to_name16(comp, name16, &len16)))
			return err;
		i = name_find(op, *dp, name16, len16);
		if (i == NO_TAG && !op->o->parents) {
			fk_diag_detail(diag, NULL,
				       "parent directory '%s' is missing; -p "
				       "creates it",
				       comp);
			return -ENOENT;
		}
		if (i == NO_TAG &&
		    (err = dir_create(op, *dp, name16, len16, path,
				      (size_t)(start - path) + len, &i, diag)))
			return err;
		dir_len = (size_t)(start - path) + len;
		if ((err = judge_set(&(*dp)->names[i], diag))) {
			char where[FK_NAME_MAX * 2];

			dir_path(where, sizeof(where), path, dir_len);
			fk_diag_set(diag, where, NULL);
			return err;
		}
		if (!((*dp)->names[i].attr & ATTR_DIR))
			return -ENOTDIR;
		cur = (*dp)->names[i].s;
		at = &cur;
		parent = *dp;
		parent_name = i;
	}
	len = strcspn(p, "/");
	*is_dir_form = p[len] == '/' || !len;
	*leaf_len = 0;
	if (!len)
		return 0;
	if (len >= sizeof(comp))
		return -ENAMETOOLONG;
	memcpy(comp, p, len);
	comp[len] = '\0';
	return to_name16(comp, leaf, leaf_len);
}

static int resolve(struct fk_prun *run, size_t r,
		   const struct fk_prealloc_req *req, struct fk_diag *diag)
{
	struct xop *op = run->fam_op;
	uint16_t leaf[FK_EXFAT_NAME_MAX + 1];
	struct xfile *fp;
	struct xdir *d;
	struct xname nm;
	uint32_t len16, i;
	int is_dir_form, err, k;

	if (req->len > (uint64_t)op->vol->g.nclus * op->vol->g.clus_len) {
		fk_diag_detail(diag, NULL, "larger than the whole volume");
		return -EFBIG;
	}
	if ((err = resolve_parent(op, req->path, &d, leaf, &len16, &is_dir_form,
				  diag)))
		return err;
	if (!len16)
		return -EISDIR; /* "/" is the root */
	i = name_find(op, d, leaf, len16);
	if (i != NO_TAG) {
		struct xname *found = &d->names[i];

		if ((err = judge_set(found, diag)))
			return err;
		if (found->attr & ATTR_DIR)
			return -EISDIR;
		if (is_dir_form)
			return -ENOTDIR;
		if (found->tag != NO_TAG) { /* the same file again */
			fp = &op->files[found->tag];
			if (req->len > fp->pf.want)
				fp->pf.want = req->len;
			run->file_of[r] = found->tag;
			return 0;
		}
		fp = (struct xfile *)fk_prun_add_file(run, req);
		fp->pf.old_size = found->s.data_len;
		fp->old_vdl = found->valid_len;
		fp->was_nfc = found->s.is_no_fat_chain;
		if ((err = load_stream(op, &found->s, 1, "file", fp->pf.path,
				       &fp->pf.old, diag)))
			return err;
	} else if (is_dir_form) {
		return -ENOENT;
	} else {
		uint32_t nents = 2 + (len16 + FN_UNITS - 1) / FN_UNITS;

		memset(&nm, 0, sizeof(nm));
		if ((err = take_slots(op, d, nents, &nm.idx, diag)))
			return err;
		nm.len = len16;
		nm.nents = nents;
		nm.attr = ATTR_ARCHIVE;
		if (!(nm.name16 = calloc(len16 + 1, sizeof(uint16_t))))
			return -ENOMEM;
		memcpy(nm.name16, leaf, len16 * sizeof(uint16_t));
		if ((k = name_push(d, &nm)) < 0) {
			free(nm.name16);
			return k;
		}
		i = (uint32_t)k;
		name_index(op, d, i);
		fp = (struct xfile *)fk_prun_add_file(run, req);
		fp->pf.is_new = 1;
	}
	fp->d = d;
	fp->name_i = i;
	d->names[i].tag = (uint32_t)(fp - op->files);
	run->file_of[r] = (size_t)(fp - op->files);
	return 0;
}

/* ---- planning ------------------------------------------------------------- */

/* Does the run change @fp's entry? */
static int is_changed(const struct xfile *fp)
{
	return fp->pf.is_new || fp->pf.add.nclus ||
	       fp->pf.size != fp->pf.old_size || fp->is_nfc != fp->was_nfc;
}

/*
 * Sizes and layout after the run.  Zeroing covers the old ValidDataLength
 * to the end of the last cluster, so the slack reads as zeros too (for a
 * reader that ignores ValidDataLength).
 */
static void settle(struct fk_prun *run)
{
	struct xop *op = run->fam_op;
	uint64_t clus_len = op->vol->g.clus_len;
	size_t i;

	for (i = 0; i < run->nfiles; i++) {
		struct xfile *fp = &op->files[i];
		struct fk_pfile *pf = &fp->pf;
		size_t nruns = pf->old.nruns + pf->add.nruns;

		pf->size = pf->want > pf->old_size ? pf->want : pf->old_size;
		if (pf->size == pf->old_size)
			fp->new_vdl = fp->old_vdl;
		else
			fp->new_vdl = op->o->lazy ? fp->old_vdl : pf->size;
		pf->valid_len = fp->new_vdl;
		/* One run (the last old one and the first new one merge when
		 * adjacent): NoFatChain, as long as the file had it. */
		if (pf->old.nruns && pf->add.nruns &&
		    pf->add.runs[0].first == fk_prun_tail(&pf->old) + 1)
			nruns--;
		fp->is_nfc = nruns <= 1 &&
			     (pf->is_new || fp->was_nfc || !pf->old.nclus);
		if (!pf->size)
			fp->is_nfc = 0;
		pf->is_changed = is_changed(fp);
		pf->zero_from = fp->old_vdl;
		pf->zero_to = pf->size == pf->old_size
				      ? 0
				      : (pf->size + clus_len - 1) / clus_len *
						clus_len;
	}
}

/* ---- ownership ------------------------------------------------------------ */

/*
 * The bitmap is the free map, and the bitmap may be wrong where nothing
 * said so (a writer that crashed between its entry set and its bitmap, a
 * card pulled out with VolumeDirty cleared by a careless tool): before
 * the first write, every file and directory of the volume is walked once
 * and none may own a cluster the run takes.  Nor may any own a cluster
 * of what the run writes through (claim(): a file to grow, a directory
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
		    !(set->attr & ATTR_DIR) ||
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

static int verify(struct fk_prun *run, struct fk_diag *diag)
{
	struct xop *op = run->fam_op;
	struct fk_exfat_stream root = {op->vol->g.root_clus, 0, 0};
	struct walk w;
	struct pending p;
	size_t i;
	int err = 0, is_changed = 0;

	memset(&w, 0, sizeof(w));
	w.op = op;
	for (i = 0; !err && i < run->nfiles; i++) {
		err = take_plan(&w.t, &op->files[i].pf.add);
		is_changed |= op->files[i].pf.is_changed;
	}
	for (i = 0; !err && i < op->ndirs; i++)
		err = take_plan(&w.t, &op->dirs[i]->growth);
	/* A run that changes nothing writes nothing: no walk. */
	if (err || (!w.t.n && !is_changed) || (err = find_selves(op, &w)))
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

/* ---- entry sets ----------------------------------------------------------- */

static void put_stamps(const struct xop *op, unsigned char *e, int is_new)
{
	if (is_new) {
		put_le32(e + FE_CTIME, op->stamp_ts);
		e[FE_CTIME_MS] = op->stamp_ms10;
		e[FE_CTIME_TZ] = op->stamp_tz;
	}
	put_le32(e + FE_MTIME, op->stamp_ts);
	e[FE_MTIME_MS] = op->stamp_ms10;
	e[FE_MTIME_TZ] = op->stamp_tz;
	put_le32(e + FE_ATIME, op->stamp_ts);
	e[FE_ATIME_TZ] = op->stamp_tz;
}

static void put_checksum(struct xdir *d, uint32_t idx, uint32_t nents)
{
	uint16_t sum = fk_exfat_set_checksum(
		(const unsigned char(*)[FK_EXFAT_ENT_LEN])ent_at(d, idx),
		nents);

	put_le16(ent_at(d, idx) + GEN_CHECKSUM, sum);
}

/*
 * A new set for @nm in @d's buffer: File, Stream Extension and File Name
 * entries, times and name hash; the stream's fields are the caller's.
 */
static void new_set(struct xop *op, struct xdir *d, const struct xname *nm)
{
	unsigned char *e = ent_at(d, nm->idx), *se = e + FK_EXFAT_ENT_LEN;
	uint32_t k, u;

	memset(e, 0, (size_t)nm->nents * FK_EXFAT_ENT_LEN);
	e[0] = FK_EXFAT_T_FILE;
	e[GEN_COUNT] = (uint8_t)(nm->nents - 1);
	put_le16(e + FE_ATTR, nm->attr);
	se[0] = FK_EXFAT_T_STREAM;
	se[SE_NAME_LEN] = (uint8_t)nm->len;
	put_le16(se + SE_NAME_HASH, fk_exfat_name_hash(op->vol->exfat->upcase,
						       nm->name16, nm->len));
	for (k = 2; k < nm->nents; k++) {
		unsigned char *fn = e + (size_t)k * FK_EXFAT_ENT_LEN;

		fn[0] = FK_EXFAT_T_NAME;
		for (u = 0; u < FN_UNITS; u++) {
			uint32_t at = (k - 2) * FN_UNITS + u;

			put_le16(fn + FN_NAME + 2 * u,
				 at < nm->len ? nm->name16[at] : 0);
		}
	}
	put_stamps(op, e, 1);
}

/* Write @fp's new or changed set into its directory's buffer. */
static void build_set(struct xop *op, struct xfile *fp)
{
	struct xdir *d = fp->d;
	struct xname *nm = &d->names[fp->name_i];
	unsigned char *e = ent_at(d, nm->idx), *se = e + FK_EXFAT_ENT_LEN;
	uint32_t first = fp->pf.old.nruns   ? fp->pf.old.runs[0].first
			 : fp->pf.add.nruns ? fp->pf.add.runs[0].first
					    : 0;

	if (fp->pf.is_new) {
		new_set(op, d, nm);
	} else {
		put_le16(e + FE_ATTR,
			 (uint16_t)(get_le16(e + FE_ATTR) | ATTR_ARCHIVE));
		put_stamps(op, e, 0);
	}
	se[SE_FLAGS] = (uint8_t)((se[SE_FLAGS] & ~FK_EXFAT_GSF_NO_FAT_CHAIN) |
				 FK_EXFAT_GSF_ALLOC_POSSIBLE |
				 (fp->is_nfc ? FK_EXFAT_GSF_NO_FAT_CHAIN : 0));
	put_le64(se + SE_VDL, fp->new_vdl);
	put_le32(se + SE_FIRST, first);
	put_le64(se + SE_LEN, fp->pf.size);
	put_checksum(d, nm->idx, nm->nents);
	mark_dirty(op, d, nm->idx, nm->nents);
}

/* A grown subdirectory's entry: its new length and layout. */
static void build_dir_set(struct xop *op, struct xdir *d)
{
	struct xdir *pd = d->parent;
	struct xname *nm = &pd->names[d->parent_name];
	unsigned char *e = ent_at(pd, nm->idx), *se = e + FK_EXFAT_ENT_LEN;
	uint64_t len = (uint64_t)d->nclus * op->vol->g.clus_len;

	if (d->is_new) {
		new_set(op, pd, nm);
		put_le32(se + SE_FIRST, d->clus[0]);
	} else {
		put_stamps(op, e, 0);
	}
	se[SE_FLAGS] = (uint8_t)((se[SE_FLAGS] & ~FK_EXFAT_GSF_NO_FAT_CHAIN) |
				 FK_EXFAT_GSF_ALLOC_POSSIBLE |
				 (d->is_nfc ? FK_EXFAT_GSF_NO_FAT_CHAIN : 0));
	put_le64(se + SE_VDL, len);
	put_le64(se + SE_LEN, len);
	put_checksum(pd, nm->idx, nm->nents);
	mark_dirty(op, pd, nm->idx, nm->nents);
}

static void build_sets(struct xop *op)
{
	size_t i;

	for (i = 0; i < op->run->nfiles; i++)
		if (op->files[i].pf.is_changed)
			build_set(op, &op->files[i]);
	for (i = 0; i < op->ndirs; i++)
		if (op->dirs[i]->growth.nclus && op->dirs[i]->parent)
			build_dir_set(op, op->dirs[i]);
}

/* The device offset of sector @s of @d. */
static uint64_t sec_off(const struct xop *op, const struct xdir *d, uint32_t s)
{
	return ent_off(op, d,
		       (uint32_t)((uint64_t)s * op->vol->g.sec_len /
				  FK_EXFAT_ENT_LEN));
}

/* Is sector @s of @d in a cluster the run adds (zeroed, nobody's)? */
static int is_fresh(const struct xop *op, const struct xdir *d, uint32_t s)
{
	uint32_t per_sec = op->vol->g.sec_len / FK_EXFAT_ENT_LEN;

	return s < d->nclus * op->vol->g.clus_secs &&
	       s >= d->disk_nents / per_sec;
}

/*
 * Dirty sectors of every directory, adjacent ones in one write.  In the
 * clusters the run adds a write is widened to whole pages (of a buffered
 * block device): their zeroing dropped them from the kernel's cache, and
 * a part-page write would make it read the page first, one more request
 * on a card.  Sectors of old clusters are written only when changed.
 */
static int write_dirs(struct xop *op)
{
	const struct fk_geom *g = &op->vol->g;
	size_t i;
	int err;

	for (i = 0; i < op->ndirs; i++) {
		struct xdir *d = op->dirs[i];
		uint32_t nsecs = d->nclus * g->clus_secs, s = 0;

		while (s < nsecs) {
			uint64_t off, len;
			uint32_t first = s;

			if (!d->is_dirty[s]) {
				s++;
				continue;
			}
			off = sec_off(op, d, s);
			len = g->sec_len;
			for (s++; s < nsecs && d->is_dirty[s] &&
				  sec_off(op, d, s) == off + len;
			     s++)
				len += g->sec_len;
			for (; off % PAGE_LEN && first &&
			       is_fresh(op, d, first - 1) &&
			       sec_off(op, d, first - 1) == off - g->sec_len;
			     first--) {
				off -= g->sec_len;
				len += g->sec_len;
			}
			for (; (off + len) % PAGE_LEN && is_fresh(op, d, s) &&
			       sec_off(op, d, s) == off + len;
			     s++)
				len += g->sec_len;
			if ((err = fk_device_write(op->vol->dev, off,
						   d->buf + (size_t)first *
								    g->sec_len,
						   (size_t)len)))
				return err;
			memset(d->is_dirty + first, 0, s - first);
		}
	}
	return 0;
}

/* ---- commit --------------------------------------------------------------- */

static int write_boot(struct xop *op)
{
	return fk_device_write(op->vol->dev, 0, op->vol->boot,
			       op->vol->g.sec_len);
}

static void set_flags(struct xop *op, int is_dirty)
{
	unsigned char *b = op->vol->boot;
	uint16_t flags = get_le16(b + EB_VOL_FLAGS);

	flags = is_dirty ? (uint16_t)(flags | FK_EXFAT_FLAG_DIRTY)
			 : (uint16_t)(flags & ~FK_EXFAT_FLAG_DIRTY);
	put_le16(b + EB_VOL_FLAGS, flags);
}

/* Set or clear bits of @nclus clusters from @first in the bitmap cache. */
static int bitmap_put(struct xop *op, uint32_t first, uint32_t nclus,
		      int is_used)
{
	uint32_t sec_len = op->vol->g.sec_len;
	uint64_t i = first - FK_FIRST_CLUS, end = i + nclus;
	int err;

	while (i < end) {
		uint32_t sec = (uint32_t)(i / 8 / sec_len);
		uint64_t sec_end = ((uint64_t)sec + 1) * sec_len * 8;
		unsigned char *p;

		if (i % ((uint64_t)sec_len * 8) == 0 && end >= sec_end) {
			/* The run covers the whole sector: no read first. */
			if ((err = fk_cache_get_fresh(op->bmc, sec, &p)))
				return err;
			memset(p, is_used ? 0xff : 0, sec_len);
			i = sec_end;
			continue;
		}
		if ((err = fk_cache_get_dirty(op->bmc, sec, &p)))
			return err;
		for (; i < end && i < sec_end; i++) {
			unsigned char *byte = p + (i / 8) % sec_len;
			unsigned char bit = (unsigned char)(1u << (i % 8));

			if (i % 8 == 0 && end - i >= 8 && i + 8 <= sec_end) {
				*byte = is_used ? 0xff : 0;
				i += 7;
				continue;
			}
			*byte = is_used ? (unsigned char)(*byte | bit)
					: (unsigned char)(*byte & ~bit);
		}
	}
	return 0;
}

/* @plan as one unlinked chain ending in end-of-chain (in the cache). */
static int put_chain(struct xop *op, const struct fk_plan *plan)
{
	uint32_t eoc = fk_fat_eoc(&op->vol->g);
	size_t r;
	int err;

	for (r = 0; r < plan->nruns; r++)
		if ((err = fk_fat_put_run(
			     op->vol, plan->runs[r].first, plan->runs[r].nclus,
			     r + 1 < plan->nruns ? plan->runs[r + 1].first
						 : eoc)))
			return err;
	return 0;
}

/*
 * Step 2: fresh directory clusters zeroed, then, in the FAT, the chains of
 * fragmented files and grown directories, unreachable from anything, and
 * the links of a NoFatChain run that becomes a chain (meaningless until
 * its entry clears NoFatChain).  Links from existing chains wait for
 * step 5, behind a barrier, so no reader reaches a cluster of old bytes.
 */
static int write_fat(struct xop *op)
{
	const struct fk_geom *g = &op->vol->g;
	size_t i, r;
	int err;

	for (i = 0; i < op->ndirs; i++)
		for (r = 0; r < op->dirs[i]->growth.nruns; r++) {
			const struct fk_run *run = &op->dirs[i]->growth.runs[r];

			if ((err = fk_device_zero(
				     op->vol->dev, fk_clus_off(g, run->first),
				     (uint64_t)run->nclus * g->clus_len)))
				return err;
		}
	for (i = 0; i < op->ndirs; i++) {
		struct xdir *d = op->dirs[i];

		if (d->is_nfc || !d->growth.nclus)
			continue;
		if (d->s.is_no_fat_chain && d->old_nclus &&
		    (err = fk_fat_put_run(op->vol, d->clus[0], d->old_nclus,
					  d->growth.runs[0].first)))
			return err;
		if ((err = put_chain(op, &d->growth)))
			return err;
	}
	for (i = 0; i < op->run->nfiles; i++) {
		const struct xfile *fp = &op->files[i];
		const struct fk_plan *old = &fp->pf.old, *add = &fp->pf.add;

		if (fp->is_nfc || !add->nclus)
			continue;
		if (old->nclus && fp->was_nfc &&
		    (err = fk_fat_put_run(op->vol, old->runs[0].first,
					  old->runs[0].nclus,
					  add->runs[0].first)))
			return err;
		if (!op->o->per_cluster && (err = put_chain(op, add)))
			return err;
	}
	return fk_cache_flush(op->vol->fat);
}

/*
 * --per-cluster: the one-cluster-at-a-time way of Linux's allocator
 * before batching, for comparison.  Each new cluster's bitmap bit is set
 * and flushed, then, for a file that ends up chained, its FAT entry (end
 * of chain) and the link from the cluster before, each flushed: with
 * --sync, each flush is synchronous.  A stop request is heard between
 * any two clusters: before the first, -EINTR (the run rolls back); after
 * it, fk_prun_cut() keeps what is taken and *@is_kept says so (the entry
 * sets then say what the files got).
 */
static int write_per_cluster(struct xop *op, int *is_kept)
{
	uint32_t eoc = fk_fat_eoc(&op->vol->g);
	size_t i, r;
	int err;

	for (i = 0; i < op->run->nfiles; i++) {
		const struct xfile *fp = &op->files[i];
		uint32_t prev = 0, c, ntaken = 0;

		for (r = 0; r < fp->pf.add.nruns; r++) {
			const struct fk_run *run = &fp->pf.add.runs[r];

			for (c = run->first; c < run->first + run->nclus; c++) {
				if (is_stopping(op) && !*is_kept)
					return -EINTR;
				if (is_stopping(op)) {
					fk_prun_cut(op->run, i, ntaken);
					settle(op->run);
					return 0;
				}
				*is_kept = 1;
				ntaken++;
				if ((err = bitmap_put(op, c, 1, 1)) ||
				    (err = fk_cache_flush(op->bmc)))
					return err;
				if (fp->is_nfc)
					continue;
				if ((err = fk_fat_put(op->vol, c, eoc)) ||
				    (err = fk_cache_flush(op->vol->fat)))
					return err;
				if (prev &&
				    ((err = fk_fat_put(op->vol, prev, c)) ||
				     (err = fk_cache_flush(op->vol->fat))))
					return err;
				prev = c;
			}
		}
	}
	return 0;
}

/*
 * Does a set of @d begin in its old clusters and end in new ones?  Only
 * a new set can (the old ones lay within the old clusters).
 */
static int crosses_old_end(const struct xdir *d)
{
	size_t i;

	for (i = 0; i < d->nnames; i++)
		if (d->names[i].idx < d->disk_nents &&
		    d->names[i].idx + d->names[i].nents > d->disk_nents)
			return 1;
	return 0;
}

/*
 * Step 5a, the commit point: old chain ends (chained files, chained
 * directories) link to their new clusters.  *@nlinks counts the links
 * that must reach the disk before the entry sets do.  A file's or a
 * subdirectory's must: its set's new DataLength would otherwise describe
 * clusters its chain does not reach.  The root's need not: it has no
 * DataLength, its new clusters are zeroed (all end markers) behind the
 * barrier before this step, and sets written into them before the link
 * lands are in no directory yet; only a set that starts in the old
 * clusters and ends in new ones would be cut short, so then it counts.
 */
static int write_links(struct xop *op, int *nlinks)
{
	size_t i;
	int err;

	for (i = 0; i < op->ndirs; i++) {
		const struct xdir *d = op->dirs[i];

		if (d->is_nfc || !d->growth.nclus || d->s.is_no_fat_chain)
			continue;
		if ((err = fk_fat_put(op->vol, d->clus[d->old_nclus - 1],
				      d->growth.runs[0].first)))
			return err;
		if (d->parent || crosses_old_end(d))
			(*nlinks)++;
	}
	for (i = 0; i < op->run->nfiles; i++) {
		const struct xfile *fp = &op->files[i];

		if (fp->is_nfc || !fp->pf.add.nclus || !fp->pf.old.nclus ||
		    fp->was_nfc)
			continue;
		if ((err = fk_fat_put(op->vol, fk_prun_tail(&fp->pf.old),
				      fp->pf.add.runs[0].first)))
			return err;
		(*nlinks)++;
	}
	return fk_cache_flush(op->vol->fat);
}

static int bitmap_plan(struct xop *op, const struct fk_plan *plan, int is_used)
{
	size_t r;
	int err;

	for (r = 0; r < plan->nruns; r++)
		if ((err = bitmap_put(op, plan->runs[r].first,
				      plan->runs[r].nclus, is_used)))
			return err;
	return 0;
}

/* Step 3: every new cluster's bit, one flush. */
static int write_bitmap(struct xop *op, int is_used)
{
	size_t i;
	int err;

	for (i = 0; i < op->ndirs; i++)
		if ((err = bitmap_plan(op, &op->dirs[i]->growth, is_used)))
			return err;
	for (i = 0; i < op->run->nfiles && !(is_used && op->o->per_cluster);
	     i++)
		if ((err = bitmap_plan(op, &op->files[i].pf.add, is_used)))
			return err;
	return fk_cache_flush(op->bmc);
}

/*
 * PercentInUse after the run, or -1 to leave it: the percentage of
 * clusters in use, or 0xFF, "not available" (spec 3.1.16: a writer that
 * changes the allocation updates it or sets 0xFF).  Exact when the
 * searches have read the whole bitmap (a small volume), or it was 0xFF
 * already; else counting it would read the rest of a bitmap of
 * megabytes for a hint that Linux never reads (it counts the bitmap at
 * mount), so 0xFF.  A run that took no cluster leaves a value it cannot
 * check as it was.
 */
static int new_percent(struct xop *op)
{
	unsigned old = op->vol->boot[EB_PERCENT], pct;
	uint32_t nclus = op->vol->g.nclus, ntaken = 0;
	size_t i;

	for (i = 0; i < op->run->nfiles; i++)
		ntaken += op->files[i].pf.add.nclus;
	for (i = 0; i < op->ndirs; i++)
		ntaken += op->dirs[i]->growth.nclus;
	if (old == 0xff)
		return -1;
	if (fk_alloc_nunread(op->alloc))
		return ntaken ? 0xff : -1;
	pct = fk_exfat_percent(nclus - fk_alloc_nfree(op->alloc), nclus);
	return pct == old ? -1 : (int)pct;
}

static int commit_steps(struct xop *op, struct fk_prealloc_result *res)
{
	unsigned char *b = op->vol->boot;
	int err, nlinks = 0, percent, is_kept = 0;

	if (is_stopping(op))
		return -EINTR;
	if (!op->was_dirty) {
		set_flags(op, 1);
		op->set_dirty = 1;
		if ((err = write_boot(op)) || (err = fk_prun_barrier(op->run)))
			return err;
	}
	if (is_stopping(op))
		return -EINTR;
	/* Steps 2 to 4 need no order among them: until step 5 nothing
	 * reaches what they write.  One barrier ends them.  The per-cluster
	 * loop comes last, after the zeroing of every cluster it may take,
	 * so that a stop it hears leaves nothing more to do there. */
	if ((err = write_fat(op)) || (err = write_bitmap(op, 1)) ||
	    (err = fk_prun_zero(op->run, res)) ||
	    (op->o->per_cluster && (err = write_per_cluster(op, &is_kept))) ||
	    (err = fk_prun_barrier(op->run)))
		return err;
	if (is_stopping(op) && !is_kept)
		return -EINTR;
	op->run->is_linked = 1;
	if ((err = write_links(op, &nlinks)) ||
	    (nlinks && (err = fk_prun_barrier(op->run))))
		return err;
	build_sets(op);
	if ((err = write_dirs(op)))
		return err;
	percent = new_percent(op);
	/* Steps 6 and 7 are one write of the boot sector, after the entry
	 * sets are on disk. */
	if (op->o->sync != FK_SYNC_NEVER &&
	    (err = fk_device_sync(op->vol->dev)))
		return err;
	if (percent < 0 && !op->set_dirty)
		return 0;
	if (percent >= 0)
		b[EB_PERCENT] = (unsigned char)percent;
	if (op->set_dirty)
		set_flags(op, 0);
	if ((err = write_boot(op)))
		return err;
	if (op->o->sync != FK_SYNC_NEVER)
		return fk_device_sync(op->vol->dev);
	return 0;
}

/*
 * Before the commit point: clear the bitmap bits the run set and clear
 * VolumeDirty if this run set it.  Nothing reaches the new clusters yet,
 * and FAT entries of clusters the bitmap calls free mean nothing
 * (spec 7.1.5), so the new chains need no undoing.
 */
static int rollback(struct fk_prun *run)
{
	struct xop *op = run->fam_op;
	int err;

	fk_cache_discard(op->vol->fat);
	fk_cache_discard(op->bmc);
	if ((err = write_bitmap(op, 0)))
		return err;
	if (op->o->sync != FK_SYNC_NEVER &&
	    (err = fk_device_sync(op->vol->dev)))
		return err;
	if (op->set_dirty) {
		set_flags(op, 0);
		if ((err = write_boot(op)))
			return err;
		if (op->o->sync != FK_SYNC_NEVER)
			err = fk_device_sync(op->vol->dev);
	}
	return err;
}

static int fill_dirs(struct fk_prun *run, struct fk_prealloc_result *res)
{
	struct xop *op = run->fam_op;
	size_t i;

	if (!(res->dirs = calloc(op->ndirs ? op->ndirs : 1, sizeof(char *))))
		return -ENOMEM;
	for (i = 0; i < op->ndirs; i++) {
		res->new_clus += op->dirs[i]->growth.nclus;
		if (op->dirs[i]->path) { /* the result takes it over */
			res->dirs[res->dirs_created++] = op->dirs[i]->path;
			op->dirs[i]->path = NULL;
		}
	}
	return 0;
}

/* ---- setup ---------------------------------------------------------------- */

/*
 * The active allocation bitmap: it must be one run of clusters (as Linux
 * reads it), of the length the heap needs.  The allocator reads it only
 * as its searches reach it, from the start of the heap (on a card, 256
 * MiB near the start of an empty one is a few KiB of a bitmap of
 * megabytes), and its sectors are written through a cache region.
 */
static int open_bitmap(struct xop *op, size_t batch_len, struct fk_diag *diag)
{
	const struct fk_geom *g = &op->vol->g;
	const struct fk_exfat *ex = op->vol->exfat;
	uint32_t pick = fk_exfat_active_bitmap(op->vol);
	struct fk_exfat_stream s;
	struct fk_cache_layout lay;
	struct fk_chain_info info;
	struct fk_plan runs = {NULL, 0, 0, 0};
	uint64_t need;
	int err;

	if (!ex->nbitmaps) {
		fk_diag_set(diag, NULL,
			    "the root has no allocation bitmap entry; run "
			    "fatcheck");
		return FK_ECORRUPT;
	}
	op->bm.nclus = g->nclus;
	op->bm.first_clus = ex->bitmap_clus[pick];
	op->bm.data_len = ex->bitmap_len[pick];
	if (!fk_clus_valid(g, op->bm.first_clus)) {
		fk_diag_set(diag, NULL,
			    "allocation bitmap cluster %" PRIu32
			    " is out of range",
			    op->bm.first_clus);
		return FK_ECORRUPT;
	}
	s = (struct fk_exfat_stream){op->bm.first_clus, op->bm.data_len, 0};
	if ((err = fk_exfat_stream_walk(op->vol, &s, collect_run, &runs,
					&info)) < 0)
		goto out;
	need = op->bm.data_len < fk_exfat_bitmap_len(g->nclus)
		       ? op->bm.data_len
		       : fk_exfat_bitmap_len(g->nclus);
	if (runs.nclus < fk_exfat_clus_needed(g, need)) {
		if (info.end != FK_ENT_EOC) {
			err = fk_chain_error(&info, diag);
			goto out;
		}
		fk_diag_set(diag, NULL,
			    "cluster chain of %" PRIu32 " clusters is shorter "
			    "than its %" PRIu64 " bytes",
			    info.nclus, need);
		err = FK_ECORRUPT;
		goto out;
	}
	if (op->bm.data_len != fk_exfat_bitmap_len(g->nclus)) {
		/* Shorter, the missing bits would read as free; longer,
		 * its sectors (cached as one region of the length the
		 * clusters need) would address bits past the heap. */
		fk_diag_set(diag, NULL,
			    "allocation bitmap DataLength %" PRIu64
			    ", the heap needs %" PRIu64,
			    op->bm.data_len, fk_exfat_bitmap_len(g->nclus));
		err = FK_ECORRUPT;
		goto out;
	}
	if (runs.nruns != 1) {
		fk_diag_set(diag, NULL,
			    "allocation bitmap is fragmented; fatprealloc "
			    "writes only a contiguous one");
		err = -EOPNOTSUPP;
		goto out;
	}
	op->bm_off = fk_clus_off(g, runs.runs[0].first);
	if ((err = fk_alloc_open_bitmap(op->vol, op->bm_off, &op->alloc)) ||
	    (err = judge_plan_bits(op, &runs, diag)))
		goto out;
	memset(&lay, 0, sizeof(lay));
	lay.sec_len = g->sec_len;
	lay.fat_off = op->bm_off;
	lay.fat_secs =
		(uint32_t)((fk_exfat_bitmap_len(g->nclus) + g->sec_len - 1) /
			   g->sec_len);
	lay.nfats = 1;
	lay.is_mirrored = 1;
	lay.is_rarely_written = 1; /* a few sectors a run: no huge page */
	lay.read_len = g->sec_len; /* the sectors a run changes, no more */
	err = fk_cache_new(op->vol->dev, &lay, batch_len, FK_CACHE_NOSYNC,
			   &op->bmc);
out:
	fk_plan_free(&runs);
	return err;
}

static void end(struct fk_prun *run)
{
	struct xop *op = run->fam_op;
	size_t i;

	if (!op)
		return;
	for (i = 0; i < op->ndirs; i++)
		xdir_free(op->dirs[i]);
	free(op->dirs);
	free(op->own);
	fk_cache_free(op->bmc);
	fk_alloc_close(op->alloc);
	free(op);
	run->fam_op = NULL;
}

static int commit(struct fk_prun *run, struct fk_prealloc_result *res)
{
	struct xop *op = run->fam_op;
	int err;

	fk_cache_set_sync(op->vol->fat, fk_prun_cache_sync(run));
	fk_cache_set_sync(op->bmc, fk_prun_cache_sync(run));
	err = commit_steps(op, res);
	res->bitmap_secs = fk_cache_stats(op->bmc)->secs_written;
	return err;
}

/* Refusals exFAT alone makes, before anything is read. */
static int refuse(const struct fk_volume *vol, const struct fk_prealloc_opts *o,
		  struct fk_diag *diag)
{
	if (o->keep_size) {
		fk_diag_set(diag, NULL,
			    "-n/--keep-size cannot be expressed on exFAT "
			    "(clusters past the size are damage or leaks "
			    "there); the image is left untouched");
		return -EOPNOTSUPP;
	}
	if (vol->g.active_fat) {
		/* Linux reads the first FAT and bitmap whatever ActiveFat
		 * says: it would see the new clusters as free. */
		fk_diag_set(diag, NULL,
			    "TexFAT volume with its second FAT active (Linux "
			    "reads the first one); the image is left "
			    "untouched");
		return -EOPNOTSUPP;
	}
	if ((get_le16(vol->boot + EB_VOL_FLAGS) & FK_EXFAT_FLAG_DIRTY) &&
	    !o->force) {
		/* After an unclean removal the bitmap may lack the bits of
		 * clusters a file owns (a recording cut short): the run
		 * would hand them out again and zero them. */
		fk_diag_set(diag, NULL,
			    "VolumeDirty is set: the card was not cleanly "
			    "removed and its allocation bitmap may not match "
			    "what the files own (--force writes anyway)");
		return FK_ECORRUPT;
	}
	if (vol->exfat->boot.defects & FK_EXB_CHECKSUM) {
		/* Linux refuses to mount it: writing would hide the damage. */
		fk_diag_set(diag, NULL, "%s",
			    fk_exfat_boot_reason(FK_EXB_CHECKSUM));
		return FK_ECORRUPT;
	}
	if (vol->exfat->upcase->is_fallback) {
		/* New names would be hashed through ASCII folding, not the
		 * volume's table, and its clusters (where a broken chain
		 * runs into free ones) could not be judged. */
		fk_diag_set(diag, NULL, "%s",
			    vol->exfat->upcase->defects & FK_EXU_MISSING
				    ? "the root holds no up-case table"
				    : "the up-case table cannot be read (its "
				      "location or cluster chain is damaged)");
		return FK_ECORRUPT;
	}
	if (!fk_exfat_upcase_maps_ascii(vol->exfat->upcase)) {
		/* Names hash through it: a new name's hash would be damage. */
		fk_diag_set(diag, NULL,
			    "the up-case table breaks the mandatory ASCII "
			    "mapping (a-z to A-Z, the rest to itself)");
		return FK_ECORRUPT;
	}
	return 0;
}

/*
 * The up-case table's clusters and every bitmap's (a TexFAT volume has a
 * second one) must be marked in the bitmap: a cluster marked free there
 * could be given to a new directory and zeroed.  They are claim()ed, so
 * that no directory on a path may share them.
 */
static int judge_specials(struct xop *op, struct fk_diag *diag)
{
	static const char *const names[] = {"the up-case table",
					    "the allocation bitmap",
					    "the second allocation bitmap"};
	const struct fk_exfat *ex = op->vol->exfat;
	struct fk_exfat_stream s[3];
	const char *owner[3];
	struct fk_plan runs = {NULL, 0, 0, 0};
	struct fk_chain_info info;
	uint32_t i, n = 0;
	int err = 0;

	if (!ex->upcase->is_fallback && ex->upcase->first_clus) {
		owner[n] = names[0];
		s[n++] = (struct fk_exfat_stream){ex->upcase->first_clus,
						  ex->upcase->raw_len, 0};
	}
	for (i = 0; i < ex->nbitmaps && i < 2; i++) {
		owner[n] = names[1 + i];
		s[n++] = (struct fk_exfat_stream){ex->bitmap_clus[i],
						  ex->bitmap_len[i], 0};
	}
	for (i = 0; !err && i < n; i++) {
		runs.nruns = 0;
		runs.nclus = 0;
		if (!(err = fk_exfat_stream_walk(op->vol, &s[i], collect_run,
						 &runs, &info)) &&
		    !(err = judge_plan_bits(op, &runs, diag)))
			err = claim(op, &runs, owner[i], diag);
	}
	fk_plan_free(&runs);
	return err;
}

static int start(struct fk_prun *run, struct fk_diag *diag)
{
	struct fk_volume *vol = run->vol;
	struct xop *op;
	int err;

	if ((err = refuse(vol, run->o, diag)))
		goto out;
	if (!(op = calloc(1, sizeof(*op))))
		return -ENOMEM;
	run->fam_op = op;
	op->run = run;
	op->vol = vol;
	op->o = run->o;
	op->files = run->files;
	make_stamp(op, run->o->now, run->o->now_is_utc);
	op->was_dirty =
		!!(get_le16(vol->boot + EB_VOL_FLAGS) & FK_EXFAT_FLAG_DIRTY);
	if ((err = open_bitmap(op, run->o->batch_len, diag)) ||
	    (err = judge_specials(op, diag)))
		goto out;
	run->alloc = op->alloc;
out:
	if (err == FK_ECORRUPT)
		fk_diag_hint(diag, FK_HINT_REPAIR);
	return err;
}

const struct fk_prealloc_family fk_exfat_prealloc_family = {
	.fam = &fk_exfat_family,
	.has_valid_len = 1,
	.file_len = sizeof(struct xfile),
	.is_whole_contig = 1,
	.start = start,
	.resolve = resolve,
	.settle = settle,
	.verify = verify,
	.fill_dirs = fill_dirs,
	.commit = commit,
	.rollback = rollback,
	.hint_nospc = NULL,
	.end = end,
};

/* ---- test hooks (exfat-prealloc-test.h) ------------------------------------ */

/*
 * The slot finder above (find_slots(), is_split(), take_slots() and the
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
	xdir_free(s->d);
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
		if (ent_at(d, i)[0] == FK_EXFAT_T_END) {
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
	return take_slots(&s->op, s->d, n, idx, diag);
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
