/*
 * check-exfat-owners.c: the owners the exFAT checker's findings name (the
 * first owner of a cross-linked cluster, the files whose clusters the
 * bitmap marks free), found from the owner records the claims kept.
 */
#include "exfat/check-exfat-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat.h"
#include "lib/diag.h"
#include "table/fat.h"

/* ---- owners ------------------------------------------------------------ */

/*
 * After the bitmap is compared, findings name the owners of the clusters
 * they are about: the first owner of each cross-linked cluster, and the
 * files whose clusters the bitmap marks free.  One pass over the owner
 * records the walk kept (following each FAT chain once more, never the
 * tree), only when there is something to name; it reports nothing new
 * and plans nothing.
 */

/* An owner record holding clusters marked free: how many, the first. */
struct owner_hit {
	uint32_t rec, nclus, first;
	uint32_t name, parent; /* the record's, with its kind: the owner */
	uint8_t kind;
};

struct owner_pass {
	struct fk_exfat_check *x;
	uint32_t rec, left; /* the record followed; clusters still to go */
	LIST(struct owner_hit, hits);
};

/* The first run of clusters marked free that ends after @clus. */
static size_t miss_after(const struct fk_exfat_check *x, uint32_t clus)
{
	size_t lo = 0, hi = x->misses.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct miss_run *m = &x->misses.v[mid];

		if ((uint64_t)m->first + m->n <= clus)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first cross-link at @clus or after (sorted by cluster). */
static size_t cross_from(const struct fk_exfat_check *x, uint32_t clus)
{
	size_t lo = 0, hi = x->crosses.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->crosses.v[mid].clus < clus)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int cmp_cross(const void *a, const void *b)
{
	const struct cross *p = a, *q = b;

	return p->clus < q->clus ? -1 : p->clus > q->clus;
}

/* A run of the record being followed: what of it is marked free, and
 * which cross-linked clusters it holds. */
static int owner_run(void *arg, const struct fk_run *run)
{
	struct owner_pass *p = arg;
	struct fk_exfat_check *x = p->x;
	uint32_t n = run->nclus < p->left ? run->nclus : p->left;
	uint64_t a = run->first, end = a + n, lo, hi;
	const struct owner_rec *o = &x->owners.v[p->rec];
	struct owner_hit h = {p->rec, 0, 0, o->name, o->parent, o->kind};
	size_t i;

	for (i = miss_after(x, run->first);
	     i < x->misses.n && x->misses.v[i].first < end; i++) {
		const struct miss_run *m = &x->misses.v[i];

		lo = m->first > a ? m->first : a;
		hi = (uint64_t)m->first + m->n < end ? m->first + m->n : end;
		if (!h.nclus)
			h.first = (uint32_t)lo;
		h.nclus += (uint32_t)(hi - lo);
	}
	if (h.nclus && p->hits.n && p->hits.v[p->hits.n - 1].rec == p->rec)
		p->hits.v[p->hits.n - 1].nclus += h.nclus;
	else if (h.nclus && PUSH(p->hits, h))
		return -ENOMEM;
	for (i = cross_from(x, run->first);
	     i < x->crosses.n && x->crosses.v[i].clus < end; i++)
		if (x->crosses.v[i].owner == NO_REC)
			x->crosses.v[i].owner = p->rec;
	p->left -= n;
	return p->left ? 0 : STOPPED;
}

/* Follow every owner record once. */
static int follow_owners(struct fk_exfat_check *x, struct owner_pass *p)
{
	struct fk_chain_info info;
	size_t i;
	int err;

	for (i = 0; i < x->owners.n; i++) {
		const struct owner_rec *o = &x->owners.v[i];
		struct fk_exfat_stream st = {
			o->first, (uint64_t)o->nclus * x->g->clus_len,
			o->is_no_fat_chain};

		p->rec = (uint32_t)i;
		p->left = o->nclus;
		err = fk_exfat_stream_walk(x->vol, &st, owner_run, p, &info);
		if (err < 0)
			return err;
	}
	return 0;
}

/* ---- names, read back ------------------------------------------------ */

/* An entry whose name a finding needs: its directory's record (NO_REC:
 * the root), where its set starts there, and its own record. */
struct place {
	uint32_t dir, ent, rec;
};

typedef LIST(struct place, place_list);

/* Directory order: by the directory, then the entry. */
static int cmp_place(const void *a, const void *b)
{
	const struct place *p = a, *q = b;

	if (p->dir != q->dir)
		return p->dir < q->dir ? -1 : 1;
	return p->ent < q->ent ? -1 : p->ent > q->ent;
}

/* Add the entry record @r is for (an allocation of an entry with no name:
 * its directory) and the directories above it to @want, each once: a
 * record named or wanted already has a rec_names slot that is not NULL. */
static int want_chain(struct fk_exfat_check *x, uint32_t r, place_list *want)
{
	static char wanted[] = "?"; /* read_names() clears it again */

	if (x->owners.v[r].kind == OWN_OTHER)
		r = x->owners.v[r].parent;
	for (; r != NO_REC && x->owners.v[r].kind == OWN_ENTRY &&
	       !x->rec_names[r];
	     r = x->owners.v[r].parent) {
		struct place pl = {x->owners.v[r].parent, x->owners.v[r].name,
				   r};

		if (PUSH(*want, pl))
			return -ENOMEM;
		x->rec_names[r] = wanted; /* only once listed: see above */
	}
	return 0;
}

/*
 * The names of the @n entries @pl, all of one directory, in the order of
 * their sets: read as the walk read them, up to the last.  A name the
 * read does not reach stays NULL.
 */
static int read_dir_names(struct fk_exfat_check *x, const struct place *pl,
			  size_t n, struct fk_exfat_set *set)
{
	struct fk_exfat_stream st = {0};
	struct fk_exfat_dir *dir;
	struct fk_diag d2 = {0};
	size_t k = 0;
	int err;

	if (pl->dir != NO_REC) {
		const struct owner_rec *d = &x->owners.v[pl->dir];

		st.first_clus = d->first;
		st.data_len = (uint64_t)d->nclus * x->g->clus_len;
		st.is_no_fat_chain = d->is_no_fat_chain;
	}
	if ((err = fk_exfat_dir_open(x->vol, pl->dir != NO_REC ? &st : NULL,
				     &dir)))
		return err;
	if (pl->dir != NO_REC)
		fk_exfat_dir_set_limit(dir, x->owners.v[pl->dir].nclus);
	while (k < n && (err = fk_exfat_dir_next(dir, set, &d2)) == 1) {
		const char *name = set->name[0] ? set->name : "?";

		for (; k < n && pl[k].ent <= set->first_ent; k++)
			if (pl[k].ent == set->first_ent &&
			    !(x->rec_names[pl[k].rec] = strdup(name))) {
				fk_exfat_dir_close(dir);
				return -ENOMEM;
			}
	}
	fk_exfat_dir_close(dir);
	/* Damage ends the read where it ended the walk's; a device that
	 * fails now, where the walk read, is an error of its own. */
	return err < 0 ? err : 0;
}

/*
 * Read back the names of the entries the @n records @recs were made for,
 * and of the directories above them, into x->rec_names: each directory
 * once, however many of its entries are named (a volume cross-linked
 * file by file costs one more walk at most).  0 or -errno.
 */
static int read_names(struct fk_exfat_check *x, const uint32_t *recs, size_t n)
{
	place_list want = {0};
	struct fk_exfat_set *set = NULL;
	size_t i, j;
	int err = 0;

	if (!x->rec_names &&
	    !(x->rec_names = calloc(x->owners.n ? x->owners.n : 1,
				    sizeof(*x->rec_names))))
		return -ENOMEM;
	for (i = 0; i < n && !err; i++)
		err = want_chain(x, recs[i], &want);
	for (i = 0; i < want.n; i++)
		x->rec_names[want.v[i].rec] = NULL;
	if (!err && want.n) {
		if ((set = malloc(sizeof(*set))))
			qsort(want.v, want.n, sizeof(*want.v), cmp_place);
		else
			err = -ENOMEM;
	}
	for (i = 0; i < want.n && !err; i = j) {
		for (j = i; j < want.n && want.v[j].dir == want.v[i].dir; j++)
			;
		err = read_dir_names(x, want.v + i, j - i, set);
	}
	/* not reached by the read (or no memory): named as unreadable */
	for (i = 0; i < want.n && !err; i++)
		if (!x->rec_names[want.v[i].rec] &&
		    !(x->rec_names[want.v[i].rec] = strdup("?")))
			err = -ENOMEM;
	free(set);
	free(want.v);
	return err;
}

/*
 * Record @r's owner as a message names it: a path, or what it is (*@is_path
 * 0).  malloc()ed; NULL without memory.  Parents are recorded before what
 * they hold, so the walk up ends, within the nesting the walk allowed.
 * The names are read_names()'s.
 */
static char *owner_name(const struct fk_exfat_check *x, uint32_t r,
			int *is_path)
{
	const struct owner_rec *o = &x->owners.v[r];
	const char *part[FK_CHECK_MAX_DEPTH + 2];
	size_t n = 0, len = 1, i;
	uint32_t p;
	char *out, *at;

	*is_path = o->kind == OWN_ENTRY || o->kind == OWN_ROOT;
	if (o->kind == OWN_ROOT)
		return strdup("/");
	if (o->kind == OWN_BITMAP)
		return strdup("the allocation bitmap");
	if (o->kind == OWN_UPCASE)
		return strdup("the up-case table");
	for (p = o->kind == OWN_ENTRY ? r : o->parent;
	     p != NO_REC && n < FK_CHECK_MAX_DEPTH + 2 &&
	     x->owners.v[p].kind == OWN_ENTRY;
	     p = x->owners.v[p].parent)
		part[n++] = x->rec_names[p] ? x->rec_names[p] : "?";
	for (i = 0; i < n; i++)
		len += 1 + strlen(part[i]);
	if (!(out = malloc(len + sizeof("an allocation of an entry in /"))))
		return NULL;
	at = out;
	if (o->kind == OWN_OTHER)
		at += sprintf(at, "an allocation of an entry in %s",
			      n ? "" : "/");
	for (i = n; i-- > 0;)
		at += sprintf(at, "/%s", part[i]);
	*at = '\0';
	return out;
}

/* Hits of one owner are one: a file's stream and its entries' allocations. */
static int cmp_hit_owner(const void *a, const void *b)
{
	const struct owner_hit *p = a, *q = b;

	if (p->kind != q->kind)
		return p->kind < q->kind ? -1 : 1;
	if (p->name != q->name)
		return p->name < q->name ? -1 : 1;
	return p->parent < q->parent ? -1 : p->parent > q->parent;
}

static int cmp_hit_first(const void *a, const void *b)
{
	const struct owner_hit *p = a, *q = b;

	return p->first < q->first ? -1 : p->first > q->first;
}

/* One hit per owner, in the order of their first cluster marked free. */
static void merge_hits(struct owner_pass *p)
{
	size_t i, m = 0;

	qsort(p->hits.v, p->hits.n, sizeof(*p->hits.v), cmp_hit_owner);
	for (i = 0; i < p->hits.n; i++) {
		struct owner_hit *h = &p->hits.v[i];

		if (m && !cmp_hit_owner(&p->hits.v[m - 1], h)) {
			p->hits.v[m - 1].nclus += h->nclus;
			if (h->first < p->hits.v[m - 1].first)
				p->hits.v[m - 1].first = h->first;
		} else {
			p->hits.v[m++] = *h;
		}
	}
	p->hits.n = m;
	qsort(p->hits.v, p->hits.n, sizeof(*p->hits.v), cmp_hit_first);
}

/* "; owned by /A (3 clusters), ... and N more" on the bitmap-free finding:
 * the first few owners, so that a huge volume's line stays short. */
static int name_miss_owners(struct fk_exfat_check *x, struct owner_pass *p)
{
	char list[OWNERS_LISTED * 160], *name;
	size_t i, len = 0;
	int is_path;

	if (!p->hits.n)
		return 0;
	for (i = 0; i < p->hits.n && i < OWNERS_LISTED; i++) {
		const struct owner_hit *h = &p->hits.v[i];

		if (!(name = owner_name(x, h->rec, &is_path)))
			return -ENOMEM;
		len += (size_t)snprintf(list + len, sizeof(list) - len,
					"%s%s (%u cluster%s)", i ? ", " : "",
					name, h->nclus, ck_plural(h->nclus));
		if (is_path)
			ck_add_path(x->ck, x->miss_find, name);
		free(name);
		if (len >= sizeof(list))
			len = sizeof(list) - 1;
	}
	if (p->hits.n > OWNERS_LISTED)
		ck_append_msg(x->ck, x->miss_find,
			      "; owned by %s and %zu more%s", list,
			      p->hits.n - OWNERS_LISTED,
			      x->is_miss_cut ? " (at least)" : "");
	else
		ck_append_msg(x->ck, x->miss_find, "; owned by %s%s", list,
			      x->is_miss_cut ? " and more" : "");
	return 0;
}

/* ": /A" on each cross-link finding: its cluster's first owner. */
static int name_cross_owners(struct fk_exfat_check *x)
{
	size_t i;
	int is_path;
	char *name;

	for (i = 0; i < x->crosses.n; i++) {
		const struct cross *cr = &x->crosses.v[i];

		if (cr->owner == NO_REC)
			continue;
		if (!(name = owner_name(x, cr->owner, &is_path)))
			return -ENOMEM;
		ck_append_msg(x->ck, cr->finding, ": %s", name);
		if (is_path)
			ck_add_path(x->ck, cr->finding, name);
		if (cr->later)
			ck_add_path(x->ck, cr->finding, cr->later);
		free(name);
	}
	return 0;
}

/* read_names() of the owners the findings will name: the first few of
 * the clusters marked free (merged, one per owner), and each cross-link's
 * first owner. */
static int read_owner_names(struct fk_exfat_check *x, struct owner_pass *p)
{
	uint32_t *recs;
	size_t i, n = 0;
	int err;

	if (p->hits.n)
		merge_hits(p);
	if (!(recs = malloc((OWNERS_LISTED + x->crosses.n) * sizeof(*recs))))
		return -ENOMEM;
	for (i = 0; i < p->hits.n && i < OWNERS_LISTED; i++)
		recs[n++] = p->hits.v[i].rec;
	for (i = 0; i < x->crosses.n; i++)
		if (x->crosses.v[i].owner != NO_REC)
			recs[n++] = x->crosses.v[i].owner;
	err = read_names(x, recs, n);
	free(recs);
	return err;
}

/* Name the owners that findings are about (see above). */
int exck_name_owners(struct fk_exfat_check *x)
{
	struct owner_pass p;
	int err;

	if (!x->crosses.n && (x->miss_find == NONE || !x->misses.n))
		return 0;
	memset(&p, 0, sizeof(p));
	p.x = x;
	if (x->crosses.n)
		qsort(x->crosses.v, x->crosses.n, sizeof(*x->crosses.v),
		      cmp_cross);
	if (x->miss_find == NONE)
		x->misses.n = 0; /* not listed: nothing to add them to */
	if (!(err = follow_owners(x, &p)) && !(err = read_owner_names(x, &p)) &&
	    !(err = name_miss_owners(x, &p)))
		err = name_cross_owners(x);
	free(p.hits.v);
	return err;
}
