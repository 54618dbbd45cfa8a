/*
 * check-tree.c: the directory tree walk.  One walk, depth first, reads
 * each directory once (a hash table of the names seen so far finds
 * duplicates as it goes), claims every entry's chain, and checks names,
 * "." and "..", entries past the end marker and orphaned long-name slots.
 * It plans the names the repair gives: new short names (unique against
 * every name of the directory, which is read a second time only when an
 * entry may be renamed), re-attached long names, and "." and ".."
 * written anew.  Names are compared folded from their slots; an entry's
 * UTF-8 names and path are made only when something is said of it.
 */
#include "fat/check-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fat/dir.h"
#include "fat/dirplan.h"
#include "fat/slot.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/names.h"
#include "lib/vec.h"
#include "volume/volume.h"

/* Which of an entry's names an earlier entry of its directory has. */
#define DUP_SHORT 1u
#define DUP_LONG  2u

struct name_key {
	uint64_t hash; /* fk_name_hash(name) */
	uint32_t slot;
	size_t off;	  /* of the name in the store's bytes */
	const char *name; /* there, once the store is complete */
};

/* Names of one directory, copied end to end, and a key for each. */
struct name_store {
	LIST(struct name_key, keys);
	LIST(char, bytes);
};

/* A name of an entry walked so far, folded (fk_lfn_fold()). */
struct seen_key {
	uint64_t hash; /* fk_name_hash() of the name */
	uint32_t slot;
	uint32_t off, len; /* its units in the table's store */
};

/* The names of the entries walked so far, and a hash table (open
 * addressing) of the first key with each name: key number + 1, 0 empty. */
struct name_table {
	LIST(struct seen_key, keys);
	LIST(uint16_t, units);
	uint32_t *tab;
	size_t cap;
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
	struct fk_dir *dir;	      /* its slots, as the walk reads them */
	/* The entry being checked; its names are made, and its path
	 * pushed, only when something is said of it (ent_path()). */
	struct fk_dirent *ent;
	int is_pushed;
	size_t path_old; /* the path's length before it */
	/* The names of the entries so far, and which names of the entry
	 * in dup_slot an earlier one has (dup_what), the earliest such. */
	struct name_table seen;
	uint32_t dup_slot, dup_earlier;
	unsigned dup_what;
	/* Every name of the directory, sorted by hash, read only when an
	 * entry may be renamed; and the names this run gives (a new short
	 * name, a re-attached long name), taken for every later choice. */
	struct name_store all;
	int has_all;
	struct name_table given;
	unsigned next_fsck; /* FSCKnnnn.REN numbers below it are taken */
	int has_dot, has_dotdot;
	uint32_t orphan_first, orphan_n; /* orphaned long-name slots not yet */
	enum fk_lfn_orphan orphan_why;	 /* reported, and why */
	uint32_t damaged_first;	 /* long-name slots the next entry does */
	uint32_t damaged_n;	 /* not match (FK_LFN_ORPHAN_ENTRY, _SUM) */
	int is_damaged_sum;	 /* ... a complete name (FK_LFN_ORPHAN_SUM) */
	size_t sum_find;	 /* the finding about them (_SUM); or NONE */
	uint32_t reattach_first; /* the entry being checked follows a */
	uint32_t reattach_n;	 /* complete name whose checksum is wrong */
	size_t reattach_find;
	uint32_t ent_first;  /* first slot of the entry being checked */
	size_t fixes_from;   /* entry fixes planned before this walk */
	uint32_t hidden_end; /* one past the last entry read past the end
				marker; 0: none */
	/* Entries whose slots take the place of "." or "..", moved by
	 * dir_after() (two at most: one starts in each slot). */
	struct {
		uint32_t first, n; /* its slots, long name included */
		size_t finding;
	} moves[2];
	int nmoves;
};

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

/* Room for the path of any entry of the directory whose path is the
 * current one, so that ent_path() needs no memory. */
static int reserve_path(struct fk_check *ck)
{
	return FK_VEC_RESERVE(ck->path, ck->path_cap,
			      ck->path_len + 1 + FK_NAME_MAX);
}

/* @d's entry, with its names made. */
static const struct fk_dirent *named(struct dirctx *d)
{
	if (d->dir) /* else an entry kept with its names (hidden_ent) */
		fk_dir_names(d->dir, d->ent);
	return d->ent;
}

/*
 * The path of @d's entry, made on the first call for it: most entries are
 * sound, and need neither UTF-8 names nor a path (a file with long names
 * in a 20,000-file tree took a third of the walk making them).
 */
static const char *ent_path(struct dirctx *d)
{
	struct fk_check *ck = d->ck;

	if (!d->is_pushed) {
		const char *name = named(d)->name;
		size_t len = strlen(name);

		d->is_pushed = 1;
		d->path_old = ck->path_len;
		ck->path[ck->path_len++] = '/';
		memcpy(ck->path + ck->path_len, name, len + 1);
		ck->path_len += len;
	}
	return ck_path(ck);
}

/* Done with @d's entry: the path is the directory's again. */
static void pop_entry(struct dirctx *d)
{
	if (d->is_pushed) {
		d->is_pushed = 0;
		d->ck->path_len = d->path_old;
		d->ck->path[d->path_old] = '\0';
	}
}

/* ---- directory tree ------------------------------------------------------ */

static int walk_dir(struct fk_check *ck, struct dirctx *d,
		    struct fk_diag *diag);

static int is_label(const struct fk_dirent *ent)
{
	return fk_slot_is_label(ent->attr);
}

static void visit(struct dirctx *d, uint32_t nclus)
{
	struct fk_check *ck = d->ck;

	if (ck->o.visit)
		ck->o.visit(ck->o.arg, ent_path(d), named(d), nclus);
}

static int walk_file(struct fk_check *ck, struct dirctx *d,
		     const struct fk_dirent *ent)
{
	uint32_t clus_len = ck->g->clus_len;
	uint32_t need = ent->size ? (ent->size - 1) / clus_len + 1 : 0;
	struct ent_fix fix;
	struct claim c;
	size_t idx;
	int err;

	struct entry_ref who = {d->run, ent->slot};

	ck->st.files++;
	if (!ent->first_clus) {
		visit(d, 0);
		if (!ent->size)
			return 0;
		entry_set(&fix, d, ent);
		idx = ck_report(ck, FK_SEV_ERROR, "short-chain", ent_path(d),
				"file size is %u bytes but it has no clusters",
				(uint32_t)ent->size);
		ck_set_fix(ck, idx, "size set to 0");
		fix.set_size = 1;
		return ck_plan_entry(ck, &fix);
	}
	if ((err = ck_claim(ck, ent->first_clus, need, &who, NULL, &c)))
		return err;
	visit(d, c.nclus);
	if (c.why == STOP_EOC && c.nclus == need)
		return 0; /* the chain its size needs, ending there */
	if (c.why == STOP_LIMIT) {
		struct tail t = {strdup(ent_path(d)),
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
	entry_set(&fix, d, ent);
	if ((err = ck_chain_problem(ck, &c, 0, ent_path(d), "", &idx)))
		return err;
	if (!c.nclus) {
		ck_set_fix(ck, idx, "first cluster set to 0");
		fix.set_first = 1;
	}
	if (c.nclus < need) {
		idx = ck_report(ck, FK_SEV_ERROR, "short-chain", ent_path(d),
				"file size is %u bytes but its chain holds %u "
				"cluster%s (%llu bytes)",
				(uint32_t)ent->size, c.nclus,
				ck_plural(c.nclus),
				(unsigned long long)c.nclus * clus_len);
		fix.set_size = 1;
		fix.size = c.nclus * clus_len;
		ck_set_fix(ck, idx, "size set to %u", fix.size);
	}
	if (fix.set_first || fix.set_size)
		return ck_plan_entry(ck, &fix);
	return 0;
}

static int walk_subdir(struct fk_check *ck, struct dirctx *d,
		       const struct fk_dirent *ent, struct fk_diag *diag)
{
	struct entry_ref who = {d->run, ent->slot};
	struct dirctx child;
	struct ent_fix fix;
	struct claim c;
	const char *path;
	size_t idx;
	int err;

	ck->st.dirs++;
	path = ent_path(d); /* the path of every entry under it */
	if (ent->size) {
		idx = ck_report(ck, FK_SEV_ERROR, "dir-size", path,
				"directory has a size (%u bytes); "
				"directories must have 0",
				(uint32_t)ent->size);
		ck_set_fix(ck, idx, "size set to 0");
		entry_set(&fix, d, ent);
		fix.set_size = 1;
		if ((err = ck_plan_entry(ck, &fix)))
			return err;
	}
	if (!ent->first_clus) {
		visit(d, 0);
		idx = ck_report(ck, FK_SEV_ERROR, "bad-start", path,
				"directory entry has first cluster 0, which "
				"means the root");
		ck_set_fix(ck, idx, "entry removed");
		return plan_delete(ck, d, ent);
	}
	if ((err = ck_claim(ck, ent->first_clus, UINT32_MAX, &who, NULL, &c)))
		return err;
	visit(d, c.nclus);
	if ((err = ck_chain_problem(ck, &c, 1, path, "directory ", &idx)))
		return err;
	if (!c.nclus) {
		ck_set_fix(ck, idx, "entry removed");
		return plan_delete(ck, d, ent);
	}
	if (d->depth + 1 > FK_CHECK_MAX_DEPTH) {
		fk_diag_set(diag, path,
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

/* ---- names of a directory ---------------------------------------------- */

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

static int add_key(struct name_store *st, const char *name, uint64_t hash,
		   uint32_t slot)
{
	size_t len = strlen(name) + 1;
	struct name_key k = {hash, slot, st->bytes.n, NULL};

	if (FK_VEC_RESERVE(st->bytes.v, st->bytes.cap, st->bytes.n + len) ||
	    PUSH(st->keys, k))
		return -ENOMEM;
	memcpy(st->bytes.v + st->bytes.n, name, len);
	st->bytes.n += len;
	return 0;
}

static void free_store(struct name_store *st)
{
	free(st->keys.v);
	free(st->bytes.v);
	memset(st, 0, sizeof(*st));
}

/*
 * The first place of @hash in a table of @cap places (a power of two):
 * the top bits of a multiplicative mix.  The low bits of fk_name_hash()
 * depend only on the low bits of the names' bytes, so names made to
 * share them would all probe from one place.
 */
static size_t first_place(uint64_t hash, size_t cap)
{
	return (size_t)((hash * 0x9e3779b97f4a7c15ull) >>
			(64 - __builtin_ctzll(cap)));
}

/* Double @t's table (64 places at first); its keys have distinct names. */
static int grow_table(struct name_table *t)
{
	size_t cap = t->cap ? 2 * t->cap : 64, mask = cap - 1, i, h;
	uint32_t *tab = calloc(cap, sizeof(*tab));

	if (!tab || cap > UINT32_MAX) {
		free(tab);
		return -ENOMEM;
	}
	for (i = 0; i < t->keys.n; i++) {
		const struct seen_key *k = &t->keys.v[i];

		for (h = first_place(k->hash, cap); tab[h]; h = (h + 1) & mask)
			;
		tab[h] = (uint32_t)i + 1;
	}
	free(t->tab);
	t->tab = tab;
	t->cap = cap;
	return 0;
}

/*
 * Add the name of @len folded units @u (fk_name_hash() @hash) of the entry
 * in @slot to @t.  Returns the slot of the first entry that had the name
 * (which may be @slot itself), or -errno.
 */
/* The place of the name of @len folded units @u (hash @hash) in @t's
 * table (of at least one place): where its first key is, or the empty
 * place where it would go. */
static size_t table_place(const struct name_table *t, const uint16_t *u,
			  size_t len, uint64_t hash)
{
	size_t h;

	for (h = first_place(hash, t->cap); t->tab[h];
	     h = (h + 1) & (t->cap - 1)) {
		const struct seen_key *first = &t->keys.v[t->tab[h] - 1];

		/* A hostile entry's name may fold to no units at all, with
		 * no units stored yet: no pointer arithmetic on NULL. */
		if (first->hash == hash && first->len == len &&
		    (!len ||
		     !memcmp(t->units.v + first->off, u, len * sizeof(*u))))
			break;
	}
	return h;
}

static int64_t table_add(struct name_table *t, const uint16_t *u, size_t len,
			 uint64_t hash, uint32_t slot)
{
	struct seen_key k = {hash, slot, (uint32_t)t->units.n, (uint32_t)len};
	size_t h;
	int err;

	if (2 * (t->keys.n + 1) > t->cap && (err = grow_table(t)))
		return err;
	if (t->tab[h = table_place(t, u, len, hash)])
		return t->keys.v[t->tab[h] - 1].slot; /* the first keeps it */
	/* Tested here first: most names fit, and need no call. */
	if ((t->units.n + len > t->units.cap &&
	     FK_VEC_RESERVE(t->units.v, t->units.cap, t->units.n + len)) ||
	    (t->keys.n == t->keys.cap &&
	     FK_VEC_RESERVE(t->keys.v, t->keys.cap, t->keys.n + 1)))
		return -ENOMEM;
	t->keys.v[t->keys.n++] = k;
	if (len)
		memcpy(t->units.v + t->units.n, u, len * sizeof(*u));
	t->units.n += len;
	t->tab[h] = (uint32_t)t->keys.n;
	return slot;
}

static void free_table(struct name_table *t)
{
	free(t->keys.v);
	free(t->units.v);
	free(t->tab);
	memset(t, 0, sizeof(*t));
}

/*
 * Before @ent (no "." nor label) is checked: note which of its names an
 * earlier entry of @d has (short, and long when it is another name), and
 * the earliest such entry, for find_dup().  Of two entries with one name
 * the later is the duplicate.
 */
static int note_names(struct dirctx *d, const struct fk_dirent *ent)
{
	uint16_t su[FK_SHORT_UNITS], lu[FK_LFN_MAX];
	const uint16_t *units;
	size_t sn, ln;
	uint64_t hs, hl;
	int64_t first;

	d->dup_slot = ent->slot;
	d->dup_what = 0;
	sn = fk_short_fold(ent->raw, su, &hs);
	if ((first = table_add(&d->seen, su, sn, hs, ent->slot)) < 0)
		return (int)first;
	if (first != ent->slot) {
		d->dup_what = DUP_SHORT;
		d->dup_earlier = (uint32_t)first;
	}
	units = fk_dir_long_units(d->dir, &ln);
	if (!ln)
		return 0;
	hl = fk_lfn_fold(units, ln, lu);
	if (hl == hs && ln == sn && !memcmp(lu, su, sn * sizeof(*su)))
		return 0;
	if ((first = table_add(&d->seen, lu, ln, hl, ent->slot)) < 0)
		return (int)first;
	if (first != ent->slot) {
		if (!d->dup_what || (uint32_t)first < d->dup_earlier)
			d->dup_earlier = (uint32_t)first;
		d->dup_what |= DUP_LONG;
	}
	return 0;
}

/*
 * Every name of @d (short, and long when it is another name), sorted by
 * hash for name_taken(): read once, when the first entry may be renamed.
 * Memory: two keys and names per entry of this directory only.
 */
static int load_names(struct fk_check *ck, struct dirctx *d,
		      struct fk_diag *diag)
{
	struct name_store *st = &d->all;
	struct fk_dirent *ent;
	struct fk_dir *dir;
	size_t i;
	int r, err;

	if (d->has_all)
		return 0;
	if (!(ent = malloc(sizeof(*ent))))
		return -ENOMEM;
	if ((err = ck_open_dir(ck, d->first, d->nclus, &dir))) {
		free(ent);
		return err;
	}
	while ((r = fk_dir_next(dir, ent, diag)) == 1) {
		if (fk_dirent_is_dot(ent) || is_label(ent))
			continue;
		if ((err = add_key(st, ent->short_name,
				   fk_name_hash(ent->short_name), ent->slot)))
			break;
		if (ent->has_lfn &&
		    fk_name_compare(ent->name, ent->short_name) &&
		    (err = add_key(st, ent->name, fk_name_hash(ent->name),
				   ent->slot)))
			break;
	}
	fk_dir_close(dir);
	free(ent);
	if (!err && r)
		err = r; /* -errno or FK_ECORRUPT */
	if (err) {
		free_store(st);
		return err;
	}
	for (i = 0; i < st->keys.n; i++)
		st->keys.v[i].name = st->bytes.v + st->keys.v[i].off;
	if (st->keys.n) /* no array at all for a directory of no names */
		qsort(st->keys.v, st->keys.n, sizeof(*st->keys.v), cmp_key);
	d->has_all = 1;
	return 0;
}

/* ---- new names ----------------------------------------------------------- */

/* Is @name a name of an entry of @d other than the one in @slot, or one
 * this run gives it? */
/* The folded units of UTF-8 @name and their fk_name_hash() in *@hash;
 * returns their count, 0 for no name this run could give. */
static size_t fold_name(const char *name, uint16_t out[FK_LFN_MAX],
			uint64_t *hash)
{
	uint16_t u[FK_LFN_MAX];
	size_t n;

	if (fk_utf8_to_utf16(name, u, FK_LFN_MAX, &n) || !n)
		return 0;
	*hash = fk_lfn_fold(u, n, out);
	return n;
}

/* The slot of the entry this run gave @name in @d, or -1: none. */
static int64_t given_to(const struct dirctx *d, const char *name)
{
	uint16_t u[FK_LFN_MAX];
	uint64_t hash;
	size_t n, h;

	if (!d->given.cap || !(n = fold_name(name, u, &hash)))
		return -1;
	h = table_place(&d->given, u, n, hash);
	if (!d->given.tab[h])
		return -1;
	return d->given.keys.v[d->given.tab[h] - 1].slot;
}

static int name_taken(const struct dirctx *d, const char *name, uint32_t slot)
{
	uint64_t h = fk_name_hash(name);
	int64_t owner;
	const struct name_key *keys = d->all.keys.v;
	size_t lo = 0, hi = d->all.keys.n, i;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (keys[mid].hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < d->all.keys.n && keys[i].hash == h; i++)
		if (keys[i].slot != slot && fk_name_equal(keys[i].name, name))
			return 1;
	owner = given_to(d, name);
	return owner >= 0 && owner != slot;
}

static int give_name(struct dirctx *d, const char *name, uint32_t slot)
{
	uint16_t u[FK_LFN_MAX];
	uint64_t hash;
	size_t n = fold_name(name, u, &hash);
	int64_t r = n ? table_add(&d->given, u, n, hash, slot) : 0;

	return r < 0 ? (int)r : 0;
}

struct taken_arg {
	const struct dirctx *d;
	uint32_t slot;
};

static int short_taken(const void *arg, const unsigned char raw[11])
{
	const struct taken_arg *t = arg;
	char shown[40];

	fk_short_display(raw, 0, shown, sizeof(shown));
	return name_taken(t->d, shown, t->slot);
}

/*
 * A new short name for @ent, valid and unique in @d: from @long_name as a
 * writer makes an alias, when there is one; else the name it shows, when
 * that has a valid 8.3 form (lower case through the NT flags, or upper
 * case); else the first free FSCK0000.REN, FSCK0001.REN, ...  Returns 0,
 * or -EEXIST when all of those are taken.
 */
static int new_short(struct dirctx *d, const struct fk_dirent *ent,
		     const char *long_name, unsigned char raw[11], uint8_t *nt)
{
	struct taken_arg t = {d, ent->slot};
	unsigned k;
	int i;

	if (long_name &&
	    fk_short_choose(long_name, short_taken, &t, raw, nt) >= 0)
		return 0;
	if (!long_name) {
		if (fk_short_fit(ent->short_name, raw, nt) == FK_SHORT_EXACT &&
		    !short_taken(&t, raw))
			return 0;
		memcpy(raw, ent->raw, 11);
		raw[0] = fk_slot_name_first(raw);
		for (i = 0; i < 11; i++)
			if (raw[i] >= 'a' && raw[i] <= 'z')
				raw[i] = (unsigned char)(raw[i] - 32);
		fk_slot_escape_name(raw);
		*nt = 0;
		if (fk_short_is_valid(raw) && !short_taken(&t, raw))
			return 0;
	}
	*nt = 0;
	/* Each number is tried once per directory: a directory of
	 * thousands of entries to rename stays linear. */
	for (k = d->next_fsck; k < 10000; k++) {
		char base[16];

		snprintf(base, sizeof(base), "FSCK%04u", k);
		memcpy(raw, base, 8);
		memcpy(raw + 8, "REN", 3);
		if (!short_taken(&t, raw)) {
			d->next_fsck = k + 1;
			return 0;
		}
	}
	d->next_fsck = k;
	return -EEXIST;
}

/*
 * The long name held by the @n slots from @first (a complete name in
 * sequence, as the directory reader found it), in UTF-8.  Returns 1 with
 * @out filled, 0 when it is no name a long name may be, or -errno.
 */
static int read_long_name(struct fk_check *ck, const struct dirctx *d,
			  uint32_t first, uint32_t n, char *out, size_t len)
{
	uint16_t units[FK_LFN_MAX_ORD * FK_LFN_CHARS];
	unsigned char e[FK_DIRENT_LEN];
	struct fk_lfn_slot l;
	size_t nu = 0;
	uint32_t s;
	int err;

	if (!n || n > FK_LFN_MAX_ORD)
		return 0;
	for (s = 0; s < n; s++) {
		if ((err = fk_dir_read_slot(ck->vol, d->first, first + s, e)))
			return err == FK_ECORRUPT ? 0 : err;
		fk_slot_lfn_unpack(e, &l);
		if (!fk_slot_is_lfn(e) || l.ord != n - s)
			return 0;
		memcpy(units + (l.ord - 1) * FK_LFN_CHARS, l.units,
		       sizeof(l.units));
	}
	while (nu < n * FK_LFN_CHARS && units[nu] && nu < FK_LFN_MAX)
		nu++;
	if (!nu || fk_utf16_to_utf8(units, nu, out, len) || fk_name_check(out))
		return 0;
	return 1;
}

/* Does an earlier entry have a name of the one in @slot?  Which entry:
 * @earlier; which names: the DUP_* bits returned (0: none). */
static unsigned find_dup(const struct dirctx *d, uint32_t slot,
			 uint32_t *earlier)
{
	if (slot != d->dup_slot)
		return 0;
	*earlier = d->dup_earlier;
	return d->dup_what;
}

/*
 * Long-name slots before @ent whose only fault is their checksum: keep
 * the name when it is a sound one that no other entry of @d has (it is
 * then @ent's long name, copied to @name); else delete them.  Returns 1
 * when kept, 0 when not, or -errno.
 */
static int reattach(struct fk_check *ck, struct dirctx *d,
		    const struct fk_dirent *ent, char *name, size_t len)
{
	uint32_t first = d->reattach_first, n = d->reattach_n;
	size_t idx = d->reattach_find;
	int r;

	d->reattach_n = 0;
	if ((r = read_long_name(ck, d, first, n, name, len)) < 0)
		return r;
	if (r && !name_taken(d, name, ent->slot)) {
		ck_set_fix(ck, idx,
			   "checksum rewritten: the long name '%s' is "
			   "re-attached to '%s'",
			   name, ent->short_name);
		return give_name(d, name, ent->slot) ? -ENOMEM : 1;
	}
	ck_set_fix(ck, idx, "slot%s deleted%s", ck_plural(n),
		   r ? " (another entry has that name)" : "");
	return plan_erase(ck, d->first, first, n) ? -ENOMEM : 0;
}

/*
 * Long-name slots whose type or first-cluster field is not 0 (fsck.fat
 * reports each and sets it to 0).  No reader takes the field for a
 * cluster, but a checker that did would call the cluster owned.  The
 * repair rewrites the slots (apply_name() zeroes those fields in every
 * long-name slot it writes), so the long name stays.
 */
static size_t report_rsvd(struct fk_check *ck, const struct fk_dirent *ent,
			  const char *path)
{
	size_t idx = ck_report(
		ck, FK_SEV_ERROR, "long-name-field", path,
		"%u of its %u long-name slots hold%s a type or first-cluster "
		"field (bytes 12, 26-27) that is not 0",
		ent->nlfn_rsvd, ent->nslots - 1,
		ent->nlfn_rsvd == 1 ? "s" : "");

	ck_set_fix(ck, idx, "fields set to 0 (the long name kept)");
	return idx;
}

/*
 * A short name that is not valid, or that an earlier entry has, gets a
 * new one (new_short()); a long name an earlier entry has is dropped.  Of
 * two entries with one name, the later is renamed: the earlier keeps the
 * name every reader already shows for it.  Long-name slots stay, their
 * checksums rewritten for the new name; the data, times and attributes
 * stay.
 */
static int check_names(struct fk_check *ck, struct dirctx *d,
		       const struct fk_dirent *ent, struct fk_diag *diag)
{
	const char *path;
	char *long_name = NULL, *kept;
	enum fk_short_verdict verdict;
	size_t bad = NONE, dup = NONE, rsvd = NONE, no83 = NONE;
	uint32_t earlier = 0, lfn_first = ent->slot;
	unsigned what;
	struct ent_fix fix;
	unsigned char raw[11];
	char shown[40];
	uint8_t nt;
	int r, is_no83, err = 0;

	verdict = fk_short_check(ent->raw);
	what = is_label(ent) ? 0 : find_dup(d, ent->slot, &earlier);
	is_no83 = !ent->has_lfn && !is_label(ent) && ent->nt & FK_NT_NO_83;
	if (verdict == FK_SHORT_VALID && !what && !d->reattach_n &&
	    !ent->is_lfn_damaged && !ent->nlfn_rsvd && !is_no83)
		return 0; /* most entries: nothing to say, nothing to name */
	path = ent_path(d);
	/* A name may be given: every name of the directory is needed. */
	if ((d->reattach_n || verdict != FK_SHORT_VALID || what & DUP_SHORT) &&
	    (err = load_names(ck, d, diag)))
		return err;
	/* Slots that do not match it were orphans (d->ent_first is before
	 * the entry then); what is left is a name that does not decode. */
	if (ent->is_lfn_damaged &&
	    d->ent_first + ent->nslots == ent->slot + 1) {
		size_t idx = ck_report(ck, FK_SEV_WARNING, "long-name", path,
				       "its long name is empty or not valid "
				       "UTF-16; it is listed by its short "
				       "name");

		/* What every reader shows already: the short name alone. */
		ck_set_fix(ck, idx, "long-name slots deleted");
		if (plan_erase(ck, d->first, d->ent_first,
			       ent->slot - d->ent_first))
			ck->is_nomem = 1;
	}
	if (ent->has_lfn) {
		long_name = (char *)ent->name;
		lfn_first = d->ent_first;
		if (ent->nlfn_rsvd && !is_label(ent))
			rsvd = report_rsvd(ck, ent, path);
	} else if (d->reattach_n) {
		if (!(kept = malloc(FK_NAME_MAX)))
			return -ENOMEM;
		lfn_first = d->reattach_first;
		if ((r = reattach(ck, d, ent, kept, FK_NAME_MAX)) <= 0) {
			free(kept);
			if (r < 0)
				return r;
			lfn_first = ent->slot;
		} else {
			long_name = kept;
		}
	}
	/* fsck.fat: an entry that says it has no 8.3 name needs a long
	 * one, or it has no name at all ("Bad short file name"). */
	if (is_no83 && !long_name)
		no83 = ck_report(ck, FK_SEV_ERROR, "bad-name", path,
				 "flagged as having no 8.3 name (byte 12, "
				 "0x20), but it has no long name either");
	if (verdict == FK_SHORT_BAD)
		bad = ck_report(ck, FK_SEV_ERROR, "bad-name", path,
				"short name '%s' holds characters FAT does "
				"not allow",
				ent->short_name);
	else if (verdict == FK_SHORT_ODD)
		bad = ck_report(ck, FK_SEV_WARNING, "short-name", path,
				"short name '%s' is not a valid 8.3 name",
				ent->short_name);
	if (what)
		dup = ck_report(ck, FK_SEV_ERROR, "duplicate", path,
				"another entry of this directory (slot %u) has "
				"the same name (names are compared ignoring "
				"case)",
				earlier);
	if (what & DUP_LONG && ent->has_lfn) {
		/* Its long name is the earlier entry's: only its short
		 * name is left to tell them apart. */
		if ((err = plan_erase(ck, d->first, lfn_first,
				      ent->slot - lfn_first)))
			goto out;
		ck_set_fix(ck, dup, "this later entry's long name deleted");
		long_name = NULL;
		lfn_first = ent->slot;
	}
	memset(&fix, 0, sizeof(fix));
	if (is_label(ent))
		goto out; /* a label's bytes are its text, not a file name */
	if ((verdict != FK_SHORT_VALID || what & DUP_SHORT) &&
	    !new_short(d, ent, long_name, raw, &nt)) {
		fk_short_display(raw, nt, shown, sizeof(shown));
		if ((err = give_name(d, shown, ent->slot)))
			goto out;
		fix.set_name = 1;
		if (bad != NONE && nt && !long_name)
			ck_set_fix(ck, bad,
				   "stored in upper case with the NT "
				   "lower-case flags (still shown as '%s')",
				   shown);
		else if (bad != NONE)
			ck_set_fix(ck, bad, "renamed to '%s'%s", shown,
				   long_name ? " (its long name kept)" : "");
		if (what & DUP_SHORT)
			ck_set_fix(
				ck, dup, "this later entry renamed to '%s'%s%s",
				shown, long_name ? " (its long name kept)" : "",
				what & DUP_LONG && ent->has_lfn
					? ", its long name deleted"
					: "");
		if (no83 != NONE)
			ck_set_fix(ck, no83, "flag cleared with the new name");
	} else if (no83 != NONE) {
		/* Its short name is sound: it becomes the name. */
		memcpy(raw, ent->raw, 11);
		nt = (uint8_t)(ent->nt & ~FK_NT_NO_83);
		fix.set_name = 1;
		ck_set_fix(ck, no83, "flag cleared: it is named '%s'",
			   ent->short_name);
	} else if ((long_name == NULL || long_name == ent->name) &&
		   (rsvd == NONE || long_name == NULL)) {
		/* nothing renamed (or every name taken), no long name
		 * re-attached, none to clean: nothing to write */
		goto out;
	}
	fix.op = EF_NAME;
	fix.dir_clus = d->first;
	fix.slot = lfn_first;
	fix.nslots = ent->slot - lfn_first + 1;
	memcpy(fix.name, raw, 11);
	fix.nt = nt;
	err = ck_plan_entry(ck, &fix);
out:
	if (long_name != ent->name)
		free(long_name);
	return err;
}

/* The "." (@dot) or ".." entry of @d, as mkfs and every writer make it:
 * the directory bit, its start cluster, the times of @d's own entry. */
static void dot_slot(struct fk_check *ck, const struct dirctx *d, int dot,
		     unsigned char e[FK_DIRENT_LEN])
{
	struct fk_dirent ent;

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
		ent.ctime_cs = d->self->ctime_cs;
	}
	memset(e, 0, FK_DIRENT_LEN);
	fk_slot_pack(ck->vol, &ent, e);
}

/* Slot 0 (".") or 1 ("..") of @d holds a damaged form of it: rewrite it
 * whole, if it still holds what was read when the repair comes. */
static int rebuild_dot(struct fk_check *ck, struct dirctx *d, uint32_t slot,
		       size_t idx)
{
	struct ent_fix fix;
	int err;

	memset(&fix, 0, sizeof(fix));
	fix.op = EF_REBUILD;
	fix.dir_clus = d->first;
	fix.slot = slot;
	if ((err = fk_dir_read_slot(ck->vol, d->first, slot, fix.old)))
		return err == FK_ECORRUPT ? 0 : err;
	dot_slot(ck, d, !slot, fix.slot_data);
	if (slot)
		d->has_dotdot = 1;
	else
		d->has_dot = 1;
	ck_set_fix(ck, idx, "'%s' rebuilt", slot ? ".." : ".");
	return ck_plan_entry(ck, &fix);
}

/* Is @ent, in slot 0 or 1 of a subdirectory, what is left of "." or ".."
 * there: a name FAT does not allow that starts with a dot, or a directory
 * entry with the start cluster "." or ".." would have? */
static int is_damaged_dot(const struct dirctx *d, const struct fk_dirent *ent)
{
	if (d->is_root || ent->slot > 1 || ent->nslots != 1 ||
	    fk_dirent_is_dot(ent) || is_label(ent))
		return 0;
	if (fk_slot_name_first(ent->raw) == '.')
		return 1;
	return (ent->attr & FK_ATTR_DIR) &&
	       ent->first_clus == (ent->slot ? d->parent : d->first);
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
	if (is_damaged_dot(d, ent)) {
		idx = ck_report(ck, FK_SEV_ERROR, "dot", ck_path(ck),
				"'%s' entry is damaged: slot %u holds '%s'",
				ent->slot ? ".." : ".", ent->slot,
				named(d)->short_name);
		return rebuild_dot(ck, d, ent->slot, idx);
	}
	if (ent->slot <= 1 &&
	    (ent->slot != (dot ? 0u : 1u) || !(ent->attr & FK_ATTR_DIR))) {
		idx = ck_report(
			ck, FK_SEV_ERROR, "dot", ck_path(ck),
			"'%s' entry in slot %u%s", name, ent->slot,
			ent->attr & FK_ATTR_DIR ? "" : " is not a directory");
		return rebuild_dot(ck, d, ent->slot, idx);
	}
	if (ent->slot != (dot ? 0u : 1u)) {
		idx = ck_report(ck, FK_SEV_ERROR, "dot", ck_path(ck),
				"'%s' entry in slot %u", name, ent->slot);
		ck_set_fix(ck, idx, "entry removed");
		return plan_delete(ck, d, ent);
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
 * Does a repair planned while walking @d delete @slot of it, or move the
 * entry there elsewhere?  Then the slot is free by the time "." or ".."
 * is created there, and one run of the repair settles what would
 * otherwise take two.
 */
static int will_delete(const struct fk_check *ck, const struct dirctx *d,
		       uint32_t slot)
{
	size_t i;

	for (i = d->fixes_from; i < ck->ent_fixes.n; i++) {
		const struct ent_fix *f = &ck->ent_fixes.v[i];

		if ((f->op == EF_DELETE || f->op == EF_MOVE) &&
		    f->dir_clus == d->first && slot - f->slot < f->nslots)
			return 1;
	}
	return 0;
}

/*
 * A missing "." or "..": recreate it when its slot is or will be free.
 * A slot read past the end marker (@end_slot) may be: the entry there is
 * deleted if it is stale (after the visible tree, ck_walk_root()), and
 * the creation, applied after every deletion, then finds it free; one
 * kept and made visible keeps its slot, and the creation leaves it.
 */
static int missing_dot(struct fk_check *ck, const struct dirctx *d, int dot,
		       uint32_t end_slot)
{
	uint32_t slot = dot ? 0 : 1;
	struct ent_fix fix;
	unsigned char e[FK_DIRENT_LEN];
	size_t idx;
	int err;

	idx = ck_report(ck, FK_SEV_ERROR, "dot", ck_path(ck),
			"'%s' entry is missing from slot %d", dot ? "." : "..",
			dot ? 0 : 1);
	if ((err = fk_dir_read_slot(ck->vol, d->first, dot ? 0 : 1, e)))
		return err == FK_ECORRUPT ? 0 : err;
	if (!fk_slot_is_free(e) && !will_delete(ck, d, slot) &&
	    !(slot >= end_slot && slot < d->hidden_end))
		return 0;
	memset(&fix, 0, sizeof(fix));
	fix.op = EF_CREATE;
	fix.dir_clus = d->first;
	fix.slot = dot ? 0 : 1;
	dot_slot(ck, d, dot, fix.slot_data);
	ck_set_fix(ck, idx, "'%s' created", dot ? "." : "..");
	return ck_plan_entry(ck, &fix);
}

/*
 * An entry past the directory's end marker: Linux and fsck.fat read on
 * and see it, Windows and mtools stop at the marker and do not, and a
 * writer that stops there may write over it.  It may be a file a Linux
 * user has, so it stays: the end markers before it become deleted slots
 * (dir_after() plans that once for the directory), and every reader then
 * sees it.  But what lies past a marker is as often stale (a directory
 * cluster reused without being zeroed), so a visible entry always wins
 * over it: it is only noted here, and claimed after the whole visible
 * tree (walk_hidden()).  Returns the finding's index.
 */
static size_t hidden_entry(struct fk_check *ck, struct dirctx *d,
			   const struct fk_dirent *ent, uint32_t end_slot)
{
	const char *what = is_label(ent)	       ? "volume label"
			   : (ent->attr & FK_ATTR_DIR) ? "directory"
						       : "file";
	size_t idx;

	idx = ck_report(ck, FK_SEV_ERROR, "hidden-entry", ent_path(d),
			"%s '%s' (slot %u) lies past the directory's end "
			"marker (slot %u): Linux and fsck.fat see it, Windows "
			"and mtools do not",
			what, ent->name, ent->slot, end_slot);
	ck_set_fix(ck, idx,
		   "made visible: the end markers before it became deleted "
		   "slots");
	d->hidden_end = ent->slot + 1;
	return idx;
}

/* Keep @d's hidden entry @ent for walk_hidden(), after the visible tree. */
static int defer_hidden(struct fk_check *ck, struct dirctx *d, size_t finding)
{
	struct hidden_ent h;

	memset(&h, 0, sizeof(h));
	h.ent = *named(d);
	if (!(h.path = strdup(ent_path(d))))
		return -ENOMEM;
	h.dir_first = d->first;
	h.run = d->run;
	h.ent_first = d->ent_first;
	h.depth = d->depth;
	h.is_root = d->is_root;
	h.finding = finding;
	if (PUSH(ck->hidden, h)) {
		free(h.path);
		return -ENOMEM;
	}
	return 0;
}

/* The end markers before the entries read past the first of them become
 * deleted slots (see hidden_entry()). */
static int plan_unend(struct fk_check *ck, const struct dirctx *d,
		      uint32_t end_slot)
{
	struct ent_fix f;

	if (d->hidden_end <= end_slot)
		return 0;
	memset(&f, 0, sizeof(f));
	f.op = EF_UNEND;
	f.dir_clus = d->first;
	f.slot = end_slot;
	f.nslots = d->hidden_end - end_slot;
	return ck_plan_entry(ck, &f);
}

/* Long-name slots before an entry that cannot have a long name ("." or
 * "..", a label): deleted, as other orphans are. */
static int drop_reattach(struct fk_check *ck, struct dirctx *d)
{
	uint32_t n = d->reattach_n;

	d->reattach_n = 0;
	ck_set_fix(ck, d->reattach_find, "slot%s deleted", ck_plural(n));
	return plan_erase(ck, d->first, d->reattach_first, n);
}

/*
 * An entry whose slots (its long name's included) begin in slot 0 or 1 of
 * a subdirectory, where "." and ".." belong (fsck.fat moves it down and
 * creates them).  It is checked and repaired where it is, as any other;
 * dir_after() then plans its move (plan_moves()).  So is one read past
 * an end marker in slot 0: made visible where it is, it would hold the
 * slot still; judged stale (walk_hidden(), later), it is deleted before
 * the move, which then finds nothing to copy.
 */
static void note_move(struct fk_check *ck, struct dirctx *d,
		      const struct fk_dirent *ent)
{
	uint32_t first = d->ent_first, last = ent->slot;
	char range[32];

	if (d->nmoves == 2)
		return;
	if (last > first)
		snprintf(range, sizeof(range), "s %u-%u", first, last);
	else
		snprintf(range, sizeof(range), " %u", first);
	d->moves[d->nmoves].first = first;
	d->moves[d->nmoves].n = last - first + 1;
	d->moves[d->nmoves++].finding =
		ck_report(ck, FK_SEV_ERROR, "dot", ent_path(d),
			  "entry in slot%s, where %s", range,
			  first	 ? "'..' belongs"
			  : last ? "'.' and '..' belong"
				 : "'.' belongs");
}

/* ---- entries whose attribute byte says what they are not ------------------ */

/* Do @ent's clusters begin a chain in the FAT (1), or has it none? */
static int owns_clusters(struct fk_check *ck, const struct fk_dirent *ent)
{
	enum fk_ent_class cls;
	uint32_t val;
	int err;

	if (!fk_clus_valid(ck->g, ent->first_clus))
		return 0;
	if ((err = fk_fat_get(ck->vol, ent->first_clus, &val)))
		return err;
	cls = fk_fat_class(ck->g, val);
	return cls == FK_ENT_NEXT || cls == FK_ENT_EOC;
}

/*
 * Does the cluster @first, which an entry of @d says is a directory, begin
 * as one: "." or ".." in its first two slots, or what one damaged byte
 * leaves of them (a directory entry naming the cluster or the parent)?
 * A file's bytes start with a dot as often as with any other byte, so a
 * leading dot is not enough, as it is for check_dot().  One that cannot
 * be read is left to the walk (1).
 */
static int begins_as_dir(struct fk_check *ck, const struct dirctx *d,
			 uint32_t first)
{
	unsigned char e[FK_DIRENT_LEN];
	struct fk_dirent s;
	uint32_t slot;
	int err;

	for (slot = 0; slot < 2; slot++) {
		if ((err = fk_dir_read_slot(ck->vol, first, slot, e)))
			return err == FK_ECORRUPT ? 1 : err;
		memset(&s, 0, sizeof(s));
		fk_slot_unpack(ck->vol, e, &s);
		if (fk_slot_dot(s.raw))
			return 1;
		if ((s.attr & FK_ATTR_DIR) && !is_label(&s) &&
		    s.first_clus ==
			    (slot ? (d->is_root ? 0 : d->first) : first))
			return 1;
	}
	return 0;
}

/*
 * An entry whose attribute byte says what its clusters are not; fsck.fat
 * goes by the byte alone.  Such an entry becomes the file its clusters
 * hold (@ent's attribute byte is changed here, so the walk checks it as
 * one, and the repair writes it), which keeps every byte of them:
 *
 * - A directory with a size (directories have 0) whose first cluster
 *   does not begin with "." and "..": a file's data under a damaged
 *   attribute byte.  Read as a directory, its data would be rewritten as
 *   entries ("." and ".." over its first 64 bytes, its "names" changed,
 *   its size set to 0), as fsck.fat does.  A volume bit set with the
 *   directory bit goes too: the entry would be a label then.
 * - A volume label in a subdirectory, where no label belongs, that owns
 *   clusters: fsck.fat checks its chain as a file's already, and says
 *   nothing of it unless its name is not valid and most entries of the
 *   directory are bad ones, so it is a warning.  Deleting it would lose
 *   the clusters.  One that owns none is deleted (walk_entry()).
 */
static int retype(struct fk_check *ck, struct dirctx *d, struct fk_dirent *ent)
{
	int is_sub_label = is_label(ent) && !d->is_root;
	int is_sized_dir =
		(ent->attr & FK_ATTR_DIR) && !is_label(ent) && ent->size;
	struct ent_fix fix;
	size_t idx;
	int r;

	if ((!is_sub_label && !is_sized_dir) || fk_dirent_is_dot(ent) ||
	    is_damaged_dot(d, ent))
		return 0;
	if ((r = owns_clusters(ck, ent)) <= 0)
		return r;
	if (is_sub_label) {
		idx = ck_report(ck, FK_SEV_WARNING, "sub-label", ent_path(d),
				"a volume label entry in a subdirectory (only "
				"the root directory holds the label) that owns "
				"clusters");
		ck_set_fix(ck, idx, "volume bit cleared: a file of them");
	} else {
		if ((r = begins_as_dir(ck, d, ent->first_clus)))
			return r < 0 ? r : 0;
		idx = ck_report(
			ck, FK_SEV_ERROR, "not-dir", ent_path(d),
			"attribute byte 0x%02x says directory, but it "
			"has a size (%u bytes), as only files have, and "
			"its first cluster does not begin with '.' and "
			"'..': a file's data",
			ent->attr, (uint32_t)ent->size);
		ck_set_fix(ck, idx, "directory bit cleared: a file again");
	}
	ent->attr &= (uint8_t) ~(FK_ATTR_DIR | FK_ATTR_VOLUME);
	entry_set(&fix, d, ent);
	fix.set_attr = 1;
	fix.attr = ent->attr;
	return ck_plan_entry(ck, &fix);
}

/* A volume label in a subdirectory that owns no clusters (retype() made
 * the others files): deleted, as nothing is lost with it.  One past the
 * end marker is deleted by walk_hidden(), not made visible. */
static int drop_label(struct fk_check *ck, struct dirctx *d,
		      const struct fk_dirent *ent)
{
	size_t idx = ck_report(ck, FK_SEV_WARNING, "sub-label", ent_path(d),
			       "a volume label entry in a subdirectory (only "
			       "the root directory holds the label)");

	ck_set_fix(ck, idx, "entry deleted");
	return plan_delete(ck, d, ent);
}

static int walk_entry(struct fk_check *ck, struct dirctx *d,
		      const struct fk_dirent *ent,
		      const struct fk_dir_stats *st, struct fk_diag *diag)
{
	size_t hidden = NONE;
	int err;

	if (d->reattach_n &&
	    (fk_dirent_is_dot(ent) || is_label(ent) ||
	     is_damaged_dot(d, ent)) &&
	    (err = drop_reattach(ck, d)))
		return err;
	if (fk_dirent_is_dot(ent) || is_damaged_dot(d, ent))
		return check_dot(ck, d, ent); /* past a marker: misplaced */
	if (st->after_end)
		hidden = hidden_entry(ck, d, named(d), st->end_slot);
	if (!d->is_root && d->ent_first < 2)
		note_move(ck, d, ent); /* a hidden one too: if it is kept */
	if (is_label(ent)) {
		if (d->is_root) {
			struct label_ent l = {{0}, d->first, ent->slot, d->run};

			memcpy(l.raw, ent->raw, 11);
			if ((err = PUSH(ck->root_labels, l)))
				return err;
		} else if (!st->after_end) {
			return drop_label(ck, d, ent);
		} else {
			return defer_hidden(ck, d, hidden); /* deleted there */
		}
		/* fsck.fat checks any chain a label claims: as a file. */
		if (!ent->first_clus && !ent->size)
			return 0;
	}
	if ((err = check_names(ck, d, ent, diag)))
		return err;
	if (st->after_end)
		return defer_hidden(ck, d, hidden);
	if ((ent->attr & FK_ATTR_DIR) && !is_label(ent))
		return walk_subdir(ck, d, ent, diag);
	return walk_file(ck, d, ent);
}

/* Does the directory at @first begin as one: a "." naming @first? */
static int is_real_dir(struct fk_check *ck, uint32_t first)
{
	unsigned char e[FK_DIRENT_LEN];
	struct fk_dirent dot;
	int err;

	if ((err = fk_dir_read_slot(ck->vol, first, 0, e)))
		return err == FK_ECORRUPT ? 0 : err;
	memset(&dot, 0, sizeof(dot));
	fk_slot_unpack(ck->vol, e, &dot);
	return fk_slot_dot(dot.raw) == FK_DOT && (dot.attr & FK_ATTR_DIR) &&
	       !is_label(&dot) && dot.first_clus == first;
}

/*
 * After the visible tree: the hidden entry @h (defer_hidden()), walked as
 * it would have been in its directory if its chain takes nothing a
 * visible entry (or an earlier hidden one) holds, and if a directory, it
 * begins with its own ".".  Otherwise it is stale: its slot is deleted
 * and its clusters left alone, lost clusters unless another entry has
 * them.
 */
static int walk_hidden(struct fk_check *ck, struct hidden_ent *h,
		       struct fk_diag *diag)
{
	struct fk_dirent *ent = &h->ent;
	int is_dir = (ent->attr & FK_ATTR_DIR) && !is_label(ent);
	int is_sub_label = is_label(ent) && !h->is_root;
	uint32_t clus_len = ck->g->clus_len, need;
	const char *why = NULL;
	struct dirctx d;
	size_t len = strlen(h->path);
	int ok = 1, err;

	if ((err = FK_VEC_RESERVE(ck->path, ck->path_cap, len + 1)))
		return err;
	memcpy(ck->path, h->path, len + 1);
	ck->path_len = len;
	memset(&d, 0, sizeof(d));
	d.ck = ck;
	d.first = h->dir_first;
	d.run = h->run;
	d.is_root = h->is_root;
	d.depth = h->depth;
	d.ent = ent;
	d.ent_first = h->ent_first;
	d.is_pushed = 1; /* the path is the entry's; popped to the root's */
	d.path_old = 0;
	d.sum_find = NONE;
	/* A root label is the volume's (ck_check_label() has it): kept,
	 * and its chain, if any, claimed as a file's, after every visible
	 * one.  One in a subdirectory that owned clusters is a file now
	 * (retype()); the others go. */
	if (is_sub_label) {
		ok = 0;
		why = "a volume label in a subdirectory, where no label "
		      "belongs, that owns no clusters";
	} else if (ent->first_clus && !is_label(ent)) {
		need = is_dir	   ? UINT32_MAX
		       : ent->size ? (uint32_t)((ent->size - 1) / clus_len + 1)
				   : 1;
		if ((ok = ck_chain_unclaimed(ck, ent->first_clus, need)) < 0)
			return ok;
		if (!ok)
			why = "its clusters are free or another entry's";
		else if (is_dir && (ok = is_real_dir(ck, ent->first_clus)) < 0)
			return ok;
		else if (!ok)
			why = "it has no '.' entry: not a directory";
	}
	if (!ok) {
		ck_set_fix(ck, h->finding,
			   "deleted, not made visible (%s); its clusters were "
			   "left alone: those no other entry holds are lost "
			   "clusters, freed, or saved by --salvage",
			   why);
		err = plan_delete(ck, &d, ent);
	} else if (is_dir) {
		err = walk_subdir(ck, &d, ent, diag);
	} else {
		err = walk_file(ck, &d, ent);
	}
	pop_entry(&d);
	return err;
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

#define ORPHANS_SPELT 3 /* names an orphan finding spells out */

/* The names orphaned slots spell, as spell_orphans() gathers them. */
struct spelling {
	/* "'a', 'b' (part)", the first few, each whole */
	char list[ORPHANS_SPELT * (FK_NAME_MAX + 16)];
	/* the name last added (the only one, when one), as it prints */
	char first[FK_NAME_MAX];
	size_t len;
	uint32_t ngroups, nshown;
	int is_whole; /* of the first name */
};

/*
 * Add the name (or the part of one) that the @n slots @v spell, a
 * sequence stored last piece first; whole when it begins with its last
 * piece and counts down to piece 1.  Nothing readable adds nothing.
 */
static void spell_group(struct spelling *sp, const struct fk_lfn_slot *v,
			uint32_t n)
{
	uint16_t units[FK_LFN_MAX_ORD * FK_LFN_CHARS];
	char *name = sp->first;
	size_t nu = 0, k, room = sizeof(sp->list) - sp->len;
	uint32_t s;
	int is_whole = v[0].is_last && v[0].ord == n;

	for (s = n; s-- > 0;) {
		if (v[s].ord != n - s)
			is_whole = 0;
		for (k = 0; k < FK_LFN_CHARS && v[s].units[k]; k++)
			units[nu++] = v[s].units[k];
	}
	if (!nu)
		return;
	if (!sp->ngroups++)
		sp->is_whole = is_whole;
	if (sp->nshown == ORPHANS_SPELT)
		return;
	fk_utf16_display(units, nu, name, sizeof(sp->first));
	k = (size_t)snprintf(sp->list + sp->len, room, "%s'%s'%s",
			     sp->nshown ? ", " : "", name,
			     is_whole ? "" : " (part)");
	sp->len += k < room ? k : room - 1;
	sp->nshown++;
}

/*
 * What the orphaned slots [@first, @first + @n) of @d spell, as fsck.fat
 * shows it: ": the long name 'NAME'", the part a broken sequence holds,
 * or the first few names of several sequences (each starts at a slot
 * holding a name's last piece); "" when nothing can be read.
 */
static void spell_orphans(struct fk_check *ck, const struct dirctx *d,
			  uint32_t first, uint32_t n, char *out, size_t len)
{
	struct fk_lfn_slot v[FK_LFN_MAX_ORD], l;
	unsigned char e[FK_DIRENT_LEN];
	struct spelling *sp = calloc(1, sizeof(*sp));
	uint32_t s, nv = 0;

	*out = '\0';
	if (!sp)
		return; /* the finding is said without it */
	for (s = 0; s < n; s++) {
		if (fk_dir_read_slot(ck->vol, d->first, first + s, e))
			break; /* what was read so far */
		fk_slot_lfn_unpack(e, &l);
		if (nv && (l.is_last || nv == FK_LFN_MAX_ORD)) {
			spell_group(sp, v, nv);
			nv = 0;
		}
		v[nv++] = l;
	}
	if (nv)
		spell_group(sp, v, nv);
	if (sp->ngroups == 1)
		snprintf(out, len, ": %s '%s'",
			 sp->is_whole ? "the long name"
				      : "part of a long name,",
			 sp->first);
	else if (sp->ngroups > sp->nshown)
		snprintf(out, len, ": the long names %s and %u more", sp->list,
			 sp->ngroups - sp->nshown);
	else if (sp->ngroups)
		snprintf(out, len, ": the long names %s", sp->list);
	free(sp);
}

/*
 * One finding for a run of orphaned long-name slots, whatever made
 * them orphans: fsck.fat reports every case.  The repair deletes them,
 * but for a complete name whose only fault is its checksum, which
 * check_names() re-attaches to the entry after it when it can.
 */
static void report_orphans(struct fk_check *ck, struct dirctx *d)
{
	static const char *const why[] = {
		[FK_LFN_ORPHAN_FREE] = "a free slot follows",
		[FK_LFN_ORPHAN_RESTART] = "another long name starts after",
		[FK_LFN_ORPHAN_BROKEN] = "out of sequence",
		[FK_LFN_ORPHAN_ENTRY] = "the next entry does not match",
		[FK_LFN_ORPHAN_SUM] = "the next entry does not match",
	};
	uint32_t first = d->orphan_first, n = d->orphan_n;
	char range[32], spelt[sizeof(((struct spelling *)0)->list) + 64];
	size_t idx;

	if (!n)
		return;
	d->orphan_n = 0;
	if (n > 1)
		snprintf(range, sizeof(range), "s %u-%u", first, first + n - 1);
	else
		snprintf(range, sizeof(range), " %u", first);
	spell_orphans(ck, d, first, n, spelt, sizeof(spelt));
	idx = ck_report(ck, FK_SEV_ERROR, "orphan-lfn", ck_path(ck),
			"long-name slot%s belong%s to no entry (%s)%s", range,
			n > 1 ? "" : "s", why[d->orphan_why], spelt);
	/*
	 * fsck.fat deletes runs a free slot or another name ends, and
	 * leaves runs out of sequence; but deleting a run makes the one
	 * before it "followed by a free slot", which a second repair would
	 * then delete.  One run settles it: out-of-sequence slots, which no
	 * reader joins to any name, are deleted too.  A complete name
	 * whose only fault is the next entry's checksum is judged with that
	 * entry (check_names(): re-attached or deleted).
	 */
	if (d->orphan_why == FK_LFN_ORPHAN_SUM) {
		d->sum_find = idx;
		return;
	}
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

	if (why == FK_LFN_ORPHAN_ENTRY || why == FK_LFN_ORPHAN_SUM) {
		d->damaged_first = first;
		d->damaged_n = n;
		d->is_damaged_sum = why == FK_LFN_ORPHAN_SUM;
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

/* A directory's slots as a writer would find room in them. */
struct room {
	uint8_t *used;	/* per slot (FK_DIR_MAX_ENTS) */
	uint32_t *clus; /* per block: its cluster */
	uint32_t nslots, nblocks, nold, per_block;
};

/*
 * The slots of @d's claimed clusters: free are deleted slots before the
 * end marker, and slots of all zeros (past the marker, a slot that is
 * not all zeros may be a hidden entry's, as fk_dirplan_open() has it).
 * Slots 0 and 1 are "."'s and ".."'s whatever they hold now.
 */
static int load_room(struct fk_check *ck, const struct dirctx *d,
		     uint32_t end_slot, struct room *r)
{
	static const unsigned char zero[FK_DIRENT_LEN];
	uint32_t clus_len = ck->g->clus_len, b, k;
	unsigned char *buf;
	int err = 0;

	r->per_block = clus_len / FK_DIRENT_LEN;
	r->nold = r->nblocks = d->nclus;
	r->nslots = d->nclus * r->per_block; /* the walk read them all */
	r->used = calloc(FK_DIR_MAX_ENTS, 1);
	r->clus = calloc(FK_DIR_MAX_ENTS / r->per_block + 1, sizeof(*r->clus));
	if (!(buf = malloc(clus_len)) || !r->used || !r->clus) {
		free(buf);
		return -ENOMEM;
	}
	r->clus[0] = d->first;
	for (b = 0; b < r->nblocks && !err; b++) {
		if (b &&
		    (err = fk_fat_get(ck->vol, r->clus[b - 1], &r->clus[b])))
			break;
		if ((err = fk_device_read(ck->vol->dev,
					  fk_clus_off(ck->g, r->clus[b]), buf,
					  clus_len)))
			break;
		for (k = 0; k < r->per_block; k++) {
			const unsigned char *e = buf + k * FK_DIRENT_LEN;
			uint32_t s = b * r->per_block + k;

			r->used[s] = s < 2 ||
				     (s < end_slot ? !fk_slot_is_free(e)
						   : !!memcmp(e, zero,
							      sizeof(zero)));
		}
	}
	free(buf);
	return err;
}

/*
 * Room for @n slots, as a writer finds it (fk_dirplan_find_free(): the
 * first free run from slot 2; growing the directory by a cluster from
 * the free ones, planned as EF_GROW, while none is long enough).
 * Returns 0 and *@to, 1 when there is no room, or -errno.
 */
static int find_room(struct fk_check *ck, const struct dirctx *d,
		     struct room *r, uint32_t n, uint32_t *to)
{
	struct fk_plan plan;
	struct ent_fix f;
	int err;

	for (;;) {
		struct fk_slot_map map = {r->used, r->nslots, r->per_block,
					  r->nold, r->clus};

		if (!fk_dirplan_find_free(&map, 2, n, to))
			return 0;
		if (r->nslots + r->per_block > FK_DIR_MAX_ENTS)
			return 1;
		if (!ck->alloc && (err = fk_alloc_open(ck->vol, &ck->alloc)))
			return err;
		memset(&plan, 0, sizeof(plan));
		err = fk_alloc_plan(ck->alloc, r->clus[r->nblocks - 1], 1, 0,
				    &plan, NULL);
		if (err)
			return err == -ENOSPC ? 1 : err;
		memset(&f, 0, sizeof(f));
		f.op = EF_GROW;
		f.dir_clus = d->first;
		f.first_clus = plan.runs[0].first;
		f.prev_clus = r->clus[r->nblocks - 1];
		fk_plan_free(&plan);
		if ((err = ck_plan_entry(ck, &f)))
			return err;
		r->clus[r->nblocks++] = f.first_clus;
		r->nslots += r->per_block;
		ck->grown++;
	}
}

/*
 * Plan the moves note_move() noted: each entry to the first free slots
 * from slot 2, as a writer would place a new one.  An entry another
 * repair deletes stays where it is (its slots will be free); one that
 * finds no room (no free cluster, or 65536 slots) stays too, and "." or
 * ".." is left missing.  Growth planned for a move that then found no
 * room is dropped again.
 */
static int plan_moves(struct fk_check *ck, struct dirctx *d,
		      const struct fk_dir_stats *st)
{
	struct room r;
	struct ent_fix f;
	size_t nfixes;
	uint32_t grown, to;
	char grew[64];
	int i, err = 0;

	memset(&r, 0, sizeof(r));
	if (!d->nmoves ||
	    d->nclus > FK_DIR_MAX_ENTS / (ck->g->clus_len / FK_DIRENT_LEN) ||
	    (err = load_room(ck, d, st->end_slot, &r)))
		goto out;
	for (i = 0; i < d->nmoves && !err; i++) {
		uint32_t first = d->moves[i].first, n = d->moves[i].n;

		if (will_delete(ck, d, first + n - 1) || n > FK_LFN_MAX_ORD + 1)
			continue;
		nfixes = ck->ent_fixes.n;
		grown = ck->grown;
		if ((err = find_room(ck, d, &r, n, &to)) == 1) {
			r.nblocks -= ck->grown - grown;
			r.nslots = r.nblocks * r.per_block;
			ck->ent_fixes.n = nfixes;
			ck->grown = grown;
			err = 0;
			continue;
		}
		if (err)
			break;
		memset(&f, 0, sizeof(f));
		f.op = EF_MOVE;
		f.dir_clus = d->first;
		f.slot = first;
		f.nslots = n;
		f.to = to;
		/* Every end marker before the copy goes, or it would lie
		 * hidden behind one (what lies between is what the walk
		 * read on past the first marker). */
		f.skip_from = st->end_slot < to ? st->end_slot : to;
		memset(r.used + to, 1, n);
		if ((err = ck_plan_entry(ck, &f)))
			break;
		grew[0] = '\0';
		if (ck->grown > grown)
			snprintf(grew, sizeof(grew),
				 " (the directory grew by %u cluster%s)",
				 ck->grown - grown,
				 ck_plural(ck->grown - grown));
		if (n > 1)
			ck_set_fix(ck, d->moves[i].finding,
				   "moved to slots %u-%u%s", to, to + n - 1,
				   grew);
		else
			ck_set_fix(ck, d->moves[i].finding,
				   "moved to slot %u%s", to, grew);
	}
out:
	free(r.used);
	free(r.clus);
	return err;
}

/* After the entries: what the directory as a whole showed. */
static int dir_after(struct fk_check *ck, struct dirctx *d,
		     const struct fk_dir_stats *st)
{
	int err;

	report_orphans(ck, d);
	if ((err = plan_unend(ck, d, st->end_slot)))
		return err;
	if (d->is_root)
		return 0;
	if ((err = plan_moves(ck, d, st)))
		return err;
	if (!d->has_dot && (err = missing_dot(ck, d, 1, st->end_slot)))
		return err;
	if (!d->has_dotdot && (err = missing_dot(ck, d, 0, st->end_slot)))
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
	d->sum_find = NONE;
	d->dup_slot = UINT32_MAX;
	if ((err = reserve_path(ck)) ||
	    (err = ck_open_dir(ck, d->first, d->nclus, &dir)))
		goto out;
	d->ck = ck;
	d->dir = dir;
	d->ent = ent;
	d->fixes_from = ck->ent_fixes.n;
	fk_dir_on_orphan(dir, on_orphan, d);
	fk_dir_defer_names(dir);
	while ((r = fk_dir_next(dir, ent, diag)) == 1) {
		const struct fk_dir_stats *st = fk_dir_stats(dir);

		report_orphans(ck, d); /* the slots before this entry */
		d->ent_first = ent->slot + 1 - ent->nslots;
		d->reattach_n = 0;
		if (ent->is_lfn_damaged && d->damaged_n &&
		    d->damaged_first + d->damaged_n == ent->slot) {
			d->ent_first = d->damaged_first;
			if (d->is_damaged_sum) {
				d->reattach_first = d->damaged_first;
				d->reattach_n = d->damaged_n;
				d->reattach_find = d->sum_find;
			}
		}
		d->damaged_n = 0;
		d->sum_find = NONE;

		if ((err = retype(ck, d, ent)))
			goto out;
		if (!fk_dirent_is_dot(ent) && !is_label(ent) &&
		    (err = note_names(d, ent)))
			goto out;
		err = walk_entry(ck, d, ent, st, diag);
		pop_entry(d);
		if (err)
			goto out;
	}
	if (r) { /* -errno or FK_ECORRUPT */
		err = r;
		fk_diag_subject(diag, ck_path(ck));
		goto out;
	}
	err = dir_after(ck, d, fk_dir_stats(dir));
out:
	if (err)
		fk_diag_subject(diag, ck_path(ck));
	fk_dir_close(dir);
	free_table(&d->seen);
	free_store(&d->all);
	d->has_all = 0;
	free_table(&d->given);
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
	size_t idx, i;
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
		ck->is_root_cut = c.why != STOP_EOC;
		if (!c.nclus) {
			ck->is_tree_incomplete = 1;
			return 0;
		}
		d.first = root;
		d.nclus = c.nclus;
		d.run = (uint32_t)(ck->runs.n - 1);
	}
	if ((err = walk_dir(ck, &d, diag)))
		return err;
	/* Then what lies past end markers, which may find more of it. */
	for (i = 0; i < ck->hidden.n; i++) {
		struct hidden_ent h = ck->hidden.v[i]; /* the list may grow */

		ck->hidden.v[i].path = NULL;
		err = walk_hidden(ck, &h, diag);
		free(h.path);
		if (err)
			return err;
	}
	return 0;
}
