/*
 * check-names.c: the names of a directory's entries.  A hash table of the
 * names seen so far finds duplicates as the walk goes; short names that
 * are not valid or are taken get new ones (unique against every name of
 * the directory, which is read a second time only when an entry may be
 * renamed); long names are re-attached or dropped; orphaned long-name
 * slots are reported, spelling what they hold.  Names are compared
 * folded from their slots.
 */
#include "fat/check-names.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fat/check-dir.h"
#include "fat/dir.h"
#include "fat/slot.h"
#include "lib/diag.h"
#include "lib/names.h"
#include "lib/vec.h"

/* Which of an entry's names an earlier entry of its directory has. */
#define DUP_SHORT 1u
#define DUP_LONG  2u
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

void ck_free_store(struct name_store *st)
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
static inline size_t table_place(const struct name_table *t, const uint16_t *u,
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

void ck_free_table(struct name_table *t)
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
int ck_note_names(struct dirctx *d, const struct fk_dirent *ent)
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
static int load_names(struct fat_check *ck, struct dirctx *d,
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
		if (fk_dirent_is_dot(ent) || ck_is_label(ent))
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
		ck_free_store(st);
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
		raw[0] = fk_short_first(raw);
		for (i = 0; i < 11; i++)
			if (raw[i] >= 'a' && raw[i] <= 'z')
				raw[i] = (unsigned char)(raw[i] - 32);
		fk_short_escape(raw);
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
static int read_long_name(struct fat_check *ck, const struct dirctx *d,
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
static int reattach(struct fat_check *ck, struct dirctx *d,
		    const struct fk_dirent *ent, char *name, size_t len)
{
	uint32_t first = d->reattach_first, n = d->reattach_n;
	size_t idx = d->reattach_find;
	int r;

	d->reattach_n = 0;
	if ((r = read_long_name(ck, d, first, n, name, len)) < 0)
		return r;
	if (r && !name_taken(d, name, ent->slot)) {
		ck_set_fix(ck->rec, idx,
			   "checksum rewritten: the long name '%s' is "
			   "re-attached to '%s'",
			   name, ent->short_name);
		return give_name(d, name, ent->slot) ? -ENOMEM : 1;
	}
	ck_set_fix(ck->rec, idx, "slot%s deleted%s", ck_plural(n),
		   r ? " (another entry has that name)" : "");
	return ck_plan_erase(ck, d->first, first, n) ? -ENOMEM : 0;
}

/*
 * Long-name slots whose type or first-cluster field is not 0 (fsck.fat
 * reports each and sets it to 0).  No reader takes the field for a
 * cluster, but a checker that did would call the cluster owned.  The
 * repair rewrites the slots (apply_name() zeroes those fields in every
 * long-name slot it writes), so the long name stays.
 */
static size_t report_rsvd(struct fat_check *ck, const struct fk_dirent *ent,
			  const char *path)
{
	size_t idx = ck_report(
		ck->rec, FK_SEV_ERROR, "long-name-field", path,
		"%u of its %u long-name slots hold%s a type or first-cluster "
		"field (bytes 12, 26-27) that is not 0",
		ent->nlfn_rsvd, ent->nslots - 1,
		ent->nlfn_rsvd == 1 ? "s" : "");

	ck_set_fix(ck->rec, idx, "fields set to 0 (the long name kept)");
	return idx;
}

/* What ck_check_names() knows of an entry's names as it judges them. */
struct verdict {
	const struct fk_dirent *ent;
	const char *path;
	enum fk_short_verdict short_verdict;
	/* Which names an earlier entry has (DUP_*), and the earliest. */
	unsigned what;
	uint32_t earlier;
	int is_no83;	    /* flagged as having no 8.3 name */
	char *long_name;    /* ent->name, one re-attached (ours), or NULL */
	uint32_t lfn_first; /* its first slot; ent->slot: none */
	size_t bad, dup, rsvd, no83; /* the findings made, or NONE */
};

/* Long-name slots that match @ent but do not decode (slots that do not
 * match it were orphans, and d->ent_first is before the entry then):
 * deleted, as every reader shows the short name alone already. */
static void drop_undecoded(struct fat_check *ck, struct dirctx *d,
			   const struct fk_dirent *ent, const char *path)
{
	size_t idx = ck_report(ck->rec, FK_SEV_WARNING, "long-name", path,
			       "its long name is empty or not valid "
			       "UTF-16; it is listed by its short "
			       "name");

	ck_set_fix(ck->rec, idx, "long-name slots deleted");
	if (ck_plan_erase(ck, d->first, d->ent_first, ent->slot - d->ent_first))
		ck->rec->is_nomem = 1;
}

/* The long name of @v's entry: its own (with any reserved fields
 * reported), or one whose checksum names another entry, re-attached. */
static int find_long_name(struct fat_check *ck, struct dirctx *d,
			  struct verdict *v)
{
	const struct fk_dirent *ent = v->ent;
	char *kept;
	int r;

	if (ent->has_lfn) {
		v->long_name = (char *)ent->name;
		v->lfn_first = d->ent_first;
		if (ent->nlfn_rsvd && !ck_is_label(ent))
			v->rsvd = report_rsvd(ck, ent, v->path);
	} else if (d->reattach_n) {
		if (!(kept = malloc(FK_NAME_MAX)))
			return -ENOMEM;
		v->lfn_first = d->reattach_first;
		if ((r = reattach(ck, d, ent, kept, FK_NAME_MAX)) <= 0) {
			free(kept);
			if (r < 0)
				return r;
			v->lfn_first = ent->slot;
		} else {
			v->long_name = kept;
		}
	}
	return 0;
}

/* Report what is wrong with @v's names; a later entry's long name that
 * an earlier entry has is deleted here. */
static int report_names(struct fat_check *ck, struct dirctx *d,
			struct verdict *v)
{
	const struct fk_dirent *ent = v->ent;
	int err;

	/* fsck.fat: an entry that says it has no 8.3 name needs a long
	 * one, or it has no name at all ("Bad short file name"). */
	if (v->is_no83 && !v->long_name)
		v->no83 = ck_report(ck->rec, FK_SEV_ERROR, "bad-name", v->path,
				    "flagged as having no 8.3 name (byte 12, "
				    "0x20), but it has no long name either");
	if (v->short_verdict == FK_SHORT_BAD)
		v->bad = ck_report(ck->rec, FK_SEV_ERROR, "bad-name", v->path,
				   "short name '%s' holds characters FAT does "
				   "not allow",
				   ent->short_name);
	else if (v->short_verdict == FK_SHORT_ODD)
		v->bad = ck_report(ck->rec, FK_SEV_WARNING, "short-name",
				   v->path,
				   "short name '%s' is not a valid 8.3 name",
				   ent->short_name);
	if (v->what)
		v->dup = ck_report(ck->rec, FK_SEV_ERROR, "duplicate", v->path,
				   "another entry of this directory (slot %u) "
				   "has the same name (names are compared "
				   "ignoring case)",
				   v->earlier);
	if (v->what & DUP_LONG && ent->has_lfn) {
		/* Its long name is the earlier entry's: only its short
		 * name is left to tell them apart. */
		if ((err = ck_plan_erase(ck, d->first, v->lfn_first,
					 ent->slot - v->lfn_first)))
			return err;
		ck_set_fix(ck->rec, v->dup,
			   "this later entry's long name deleted");
		v->long_name = NULL;
		v->lfn_first = ent->slot;
	}
	return 0;
}

/* Plan the name @v's entry is given: a new short name, its own with the
 * no-8.3 flag cleared, or its long-name slots rewritten (re-attached, or
 * their reserved fields cleaned).  Nothing when none of those is due. */
static int plan_name(struct fat_check *ck, struct dirctx *d,
		     const struct verdict *v)
{
	const struct fk_dirent *ent = v->ent;
	const char *long_name = v->long_name;
	unsigned what = v->what;
	struct ent_fix fix;
	unsigned char raw[11];
	char shown[40];
	uint8_t nt;
	int err;

	memset(&fix, 0, sizeof(fix));
	if ((v->short_verdict != FK_SHORT_VALID || what & DUP_SHORT) &&
	    !new_short(d, ent, long_name, raw, &nt)) {
		fk_short_display(raw, nt, shown, sizeof(shown));
		if ((err = give_name(d, shown, ent->slot)))
			return err;
		fix.set_name = 1;
		if (v->bad != NONE && nt && !long_name)
			ck_set_fix(ck->rec, v->bad,
				   "stored in upper case with the NT "
				   "lower-case flags (still shown as '%s')",
				   shown);
		else if (v->bad != NONE)
			ck_set_fix(ck->rec, v->bad, "renamed to '%s'%s", shown,
				   long_name ? " (its long name kept)" : "");
		if (what & DUP_SHORT)
			ck_set_fix(ck->rec, v->dup,
				   "this later entry renamed to '%s'%s%s",
				   shown,
				   long_name ? " (its long name kept)" : "",
				   what & DUP_LONG && ent->has_lfn
					   ? ", its long name deleted"
					   : "");
		if (v->no83 != NONE)
			ck_set_fix(ck->rec, v->no83,
				   "flag cleared with the new name");
	} else if (v->no83 != NONE) {
		/* Its short name is sound: it becomes the name. */
		memcpy(raw, ent->raw, 11);
		nt = (uint8_t)(ent->nt & ~FK_NT_NO_83);
		fix.set_name = 1;
		ck_set_fix(ck->rec, v->no83, "flag cleared: it is named '%s'",
			   ent->short_name);
	} else if ((long_name == NULL || long_name == ent->name) &&
		   (v->rsvd == NONE || long_name == NULL)) {
		/* nothing renamed (or every name taken), no long name
		 * re-attached, none to clean: nothing to write */
		return 0;
	}
	fix.op = EF_NAME;
	fix.dir_clus = d->first;
	fix.slot = v->lfn_first;
	fix.nslots = ent->slot - v->lfn_first + 1;
	memcpy(fix.name, raw, 11);
	fix.nt = nt;
	return ck_plan_entry(ck, &fix);
}

/*
 * A short name that is not valid, or that an earlier entry has, gets a
 * new one (new_short()); a long name an earlier entry has is dropped.  Of
 * two entries with one name, the later is renamed: the earlier keeps the
 * name every reader already shows for it.  Long-name slots stay, their
 * checksums rewritten for the new name; the data, times and attributes
 * stay.
 */
int ck_check_names(struct fat_check *ck, struct dirctx *d,
		   const struct fk_dirent *ent, struct fk_diag *diag)
{
	struct verdict v = {0};
	int err;

	v.ent = ent;
	v.short_verdict = fk_short_check(ent->raw);
	v.what = ck_is_label(ent) ? 0 : find_dup(d, ent->slot, &v.earlier);
	v.is_no83 = !ent->has_lfn && !ck_is_label(ent) && ent->nt & FK_NT_NO_83;
	if (v.short_verdict == FK_SHORT_VALID && !v.what && !d->reattach_n &&
	    !ent->is_lfn_damaged && !ent->nlfn_rsvd && !v.is_no83)
		return 0; /* most entries: nothing to say, nothing to name */
	v.path = ck_ent_path(d);
	v.lfn_first = ent->slot;
	v.bad = v.dup = v.rsvd = v.no83 = NONE;
	/* A name may be given: every name of the directory is needed. */
	if ((d->reattach_n || v.short_verdict != FK_SHORT_VALID ||
	     v.what & DUP_SHORT) &&
	    (err = load_names(ck, d, diag)))
		return err;
	if (ent->is_lfn_damaged && d->ent_first + ent->nslots == ent->slot + 1)
		drop_undecoded(ck, d, ent, v.path);
	if ((err = find_long_name(ck, d, &v)))
		return err;
	err = report_names(ck, d, &v);
	/* A label's bytes are its text, not a file name. */
	if (!err && !ck_is_label(ent))
		err = plan_name(ck, d, &v);
	if (v.long_name != ent->name)
		free(v.long_name);
	return err;
}

/* Long-name slots before an entry that cannot have a long name ("." or
 * "..", a label): deleted, as other orphans are. */
int ck_drop_reattach(struct fat_check *ck, struct dirctx *d)
{
	uint32_t n = d->reattach_n;

	d->reattach_n = 0;
	ck_set_fix(ck->rec, d->reattach_find, "slot%s deleted", ck_plural(n));
	return ck_plan_erase(ck, d->first, d->reattach_first, n);
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
static void spell_orphans(struct fat_check *ck, const struct dirctx *d,
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
 * ck_check_names() re-attaches to the entry after it when it can.
 */
void ck_report_orphans(struct fat_check *ck, struct dirctx *d)
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
	idx = ck_report(ck->rec, FK_SEV_ERROR, "orphan-lfn", ck_path(ck),
			"long-name slot%s belong%s to no entry (%s)%s", range,
			n > 1 ? "" : "s", why[d->orphan_why], spelt);
	/*
	 * fsck.fat deletes runs a free slot or another name ends, and
	 * leaves runs out of sequence; but deleting a run makes the one
	 * before it "followed by a free slot", which a second repair would
	 * then delete.  One run settles it: out-of-sequence slots, which no
	 * reader joins to any name, are deleted too.  A complete name
	 * whose only fault is the next entry's checksum is judged with that
	 * entry (ck_check_names(): re-attached or deleted).
	 */
	if (d->orphan_why == FK_LFN_ORPHAN_SUM) {
		d->sum_find = idx;
		return;
	}
	ck_set_fix(ck->rec, idx, "slot%s deleted", ck_plural(n));
	if (ck_plan_erase(ck, d->first, first, n))
		ck->rec->is_nomem = 1;
}

/* Long-name slots the directory iteration dropped; adjacent runs
 * dropped for the same reason are one finding. */
void ck_on_orphan(void *arg, uint32_t first, uint32_t n, enum fk_lfn_orphan why)
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
	ck_report_orphans(d->ck, d);
	d->orphan_first = first;
	d->orphan_n = n;
	d->orphan_why = why;
}
