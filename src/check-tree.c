/*
 * check-tree.c: the directory tree walk.  One walk, depth first, reads
 * each directory once (plus once to hash its names for duplicates),
 * claims every entry's chain, and checks names, "." and "..", entries
 * past the end marker and orphaned long-name slots.
 */
#include "check-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "dir.h"
#include "names.h"
#include "slot.h"
#include "vec.h"
#include "volume.h"

/* The same name twice in one directory: slot numbers of both. */
struct dup {
	uint32_t later, earlier;
};

struct name_key {
	uint64_t hash; /* fk_name_hash(name) */
	uint32_t slot;
	uint32_t name; /* offset of the name in the finder's buffer */
};

/* The names of one directory and a table of the first key per name. */
struct name_set {
	LIST(struct name_key, keys);
	char *buf; /* the names, each ending in '\0' */
	size_t buf_len, buf_cap;
	uint32_t *table; /* key index or NO_KEY, open addressing */
	size_t table_mask;
};

#define NO_KEY UINT32_MAX

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

/* Same slot: the order of the names' keys (hash, then name). */
static int cmp_dup_key(const struct name_set *ns, const struct name_key *x,
		       const struct name_key *y)
{
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return fk_name_compare(ns->buf + x->name, ns->buf + y->name);
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

static int add_key(struct name_set *ns, const char *name, uint32_t slot)
{
	size_t len = strlen(name) + 1;
	struct name_key k = {fk_name_hash(name), slot, (uint32_t)ns->buf_len};

	if (ns->buf_len + len > UINT32_MAX ||
	    FK_VEC_RESERVE(ns->buf, ns->buf_cap, ns->buf_len + len))
		return -ENOMEM;
	memcpy(ns->buf + ns->buf_len, name, len);
	ns->buf_len += len;
	return PUSH(ns->keys, k);
}

/* The key of the first entry with the name of key @i, entering @i when
 * it is the first. */
static uint32_t first_key(struct name_set *ns, uint32_t i)
{
	const struct name_key *k = &ns->keys.v[i];
	size_t h = (size_t)k->hash & ns->table_mask;

	for (; ns->table[h] != NO_KEY; h = (h + 1) & ns->table_mask) {
		const struct name_key *o = &ns->keys.v[ns->table[h]];

		if (o->hash == k->hash &&
		    !fk_name_compare(ns->buf + o->name, ns->buf + k->name))
			return ns->table[h];
	}
	ns->table[h] = i;
	return i;
}

/*
 * Pair each key with the first key of its name.  Keys come in slot
 * order, so the pairs come sorted by the later slot; an entry whose short
 * and long names both repeat others' gets two pairs, put in the order
 * of their keys (hash, then name), as the lookup in is_dup() expects.
 */
static int pair_dups(struct name_set *ns, struct dup **out, size_t *nout)
{
	LIST(struct dup, dups) = {NULL, 0, 0};
	size_t tsize = 2, i;
	uint32_t prev = NO_KEY; /* the key of the last pair */
	int err = 0;

	while (tsize < 2 * ns->keys.n)
		tsize <<= 1;
	if (!(ns->table = malloc(tsize * sizeof(*ns->table))))
		return -ENOMEM;
	memset(ns->table, 0xff, tsize * sizeof(*ns->table)); /* NO_KEY */
	ns->table_mask = tsize - 1;
	for (i = 0; !err && i < ns->keys.n; i++) {
		uint32_t j = first_key(ns, (uint32_t)i);
		struct dup dp = {ns->keys.v[i].slot, ns->keys.v[j].slot};

		if (dp.later == dp.earlier)
			continue; /* the first, or an entry's other name */
		err = PUSH(dups, dp);
		if (!err && prev != NO_KEY &&
		    ns->keys.v[prev].slot == dp.later &&
		    cmp_dup_key(ns, &ns->keys.v[prev], &ns->keys.v[i]) > 0) {
			dups.v[dups.n - 1] = dups.v[dups.n - 2];
			dups.v[dups.n - 2] = dp;
		}
		prev = (uint32_t)i;
	}
	if (err) {
		free(dups.v);
		return err;
	}
	*out = dups.v;
	*nout = dups.n;
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
	struct name_set ns = {{NULL, 0, 0}, NULL, 0, 0, NULL, 0};
	struct fk_dirent ent;
	struct fk_dir *dir;
	int r, err;

	if ((err = ck_open_dir(ck, d->first, d->nclus, &dir)))
		return err;
	while ((r = fk_dir_next(dir, &ent, diag)) == 1) {
		if (fk_dirent_is_dot(&ent) || is_label(&ent))
			continue;
		if ((err = add_key(&ns, ent.short_name, ent.slot)))
			break;
		/* The long name only when it is another name than the short. */
		if (ent.has_lfn && fk_name_compare(ent.name, ent.short_name) &&
		    (err = add_key(&ns, ent.name, ent.slot)))
			break;
	}
	fk_dir_close(dir);
	if (!err && r)
		err = r; /* -errno or FK_ECORRUPT */
	if (!err && ns.keys.n > UINT32_MAX / 2)
		err = -ENOMEM;
	if (!err && ns.keys.n)
		err = pair_dups(&ns, &d->dups, &d->ndups);
	free(ns.table);
	free(ns.buf);
	free(ns.keys.v);
	return err;
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
