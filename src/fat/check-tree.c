/*
 * check-tree.c: the directory tree walk.  One walk, depth first, reads
 * each directory once, claims every entry's chain, and hands each entry
 * to the checks of its names (check-names.c) and of "." and ".."
 * (check-dots.c).  Here: files and subdirectories, entries whose
 * attribute byte says what their clusters are not, and entries past a
 * directory's end marker, claimed after the visible tree.
 */
#include "fat/check-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fat/check-dir.h"
#include "fat/check-dots.h"
#include "fat/check-names.h"
#include "fat/dir.h"
#include "fat/slot.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/vec.h"
#include "volume/volume.h"

/* ---- directory tree ------------------------------------------------------ */

static int walk_dir(struct fat_check *ck, struct dirctx *d,
		    struct fk_diag *diag);

static void visit(struct dirctx *d, uint32_t nclus)
{
	struct fat_check *ck = d->ck;

	if (ck->o.visit)
		ck->o.visit(ck->o.arg, ck_ent_path(d), ck_named(d), nclus);
}

static int walk_file(struct fat_check *ck, struct dirctx *d,
		     const struct fk_dirent *ent)
{
	uint32_t clus_len = ck->g->clus_len;
	uint32_t need = ent->size ? (ent->size - 1) / clus_len + 1 : 0;
	struct ent_fix fix;
	struct fk_claim c;
	size_t idx;
	int err;

	struct entry_ref who = {d->run, ent->slot};

	ck->st->files++;
	if (!ent->first_clus) {
		visit(d, 0);
		if (!ent->size)
			return 0;
		ck_entry_set(&fix, d, ent);
		idx = ck_report(ck->rec, FK_SEV_ERROR, "short-chain",
				ck_ent_path(d),
				"file size is %u bytes but it has no clusters",
				(uint32_t)ent->size);
		ck_set_fix(ck->rec, idx, "size set to 0");
		fix.set_size = 1;
		return ck_plan_entry(ck, &fix);
	}
	if ((err = ck_claim(ck, ent->first_clus, need, &who, NULL, &c)))
		return err;
	visit(d, c.nclus);
	if (c.why == FK_CUT_NONE && c.nclus == need)
		return 0; /* the chain its size needs, ending there */
	if (c.why == FK_CUT_LIMIT) {
		struct tail t = {strdup(ck_ent_path(d)),
				 who,
				 d->first,
				 ent->slot,
				 ent->first_clus,
				 need,
				 c.last,
				 c.at,
				 0,
				 0};

		if (!t.path || PUSH(ck->tails, t)) {
			free(t.path);
			return -ENOMEM;
		}
		return 0;
	}
	ck_entry_set(&fix, d, ent);
	if ((err = ck_chain_problem(ck, &c, 0, ck_ent_path(d), "", &idx)))
		return err;
	if (!c.nclus) {
		ck_set_fix(ck->rec, idx, "first cluster set to 0");
		fix.set_first = 1;
	}
	if (c.nclus < need) {
		idx = ck_report(
			ck->rec, FK_SEV_ERROR, "short-chain", ck_ent_path(d),
			"file size is %u bytes but its chain holds %u "
			"cluster%s (%llu bytes)",
			(uint32_t)ent->size, c.nclus, ck_plural(c.nclus),
			(unsigned long long)c.nclus * clus_len);
		fix.set_size = 1;
		fix.size = c.nclus * clus_len;
		ck_set_fix(ck->rec, idx, "size set to %u", fix.size);
	}
	if (fix.set_first || fix.set_size)
		return ck_plan_entry(ck, &fix);
	return 0;
}

static int walk_subdir(struct fat_check *ck, struct dirctx *d,
		       const struct fk_dirent *ent, struct fk_diag *diag)
{
	struct entry_ref who = {d->run, ent->slot};
	struct dirctx child;
	struct ent_fix fix;
	struct fk_claim c;
	const char *path;
	size_t idx;
	int err;

	ck->st->dirs++;
	path = ck_ent_path(d); /* the path of every entry under it */
	if (ent->size) {
		idx = ck_report(ck->rec, FK_SEV_ERROR, "dir-size", path,
				"directory has a size (%u bytes); "
				"directories must have 0",
				(uint32_t)ent->size);
		ck_set_fix(ck->rec, idx, "size set to 0");
		ck_entry_set(&fix, d, ent);
		fix.set_size = 1;
		if ((err = ck_plan_entry(ck, &fix)))
			return err;
	}
	if (!ent->first_clus) {
		visit(d, 0);
		idx = ck_report(ck->rec, FK_SEV_ERROR, "bad-start", path,
				"directory entry has first cluster 0, which "
				"means the root");
		ck_set_fix(ck->rec, idx, "entry removed");
		return ck_plan_delete(ck, d, ent);
	}
	if ((err = ck_claim(ck, ent->first_clus, UINT32_MAX, &who, NULL, &c)))
		return err;
	visit(d, c.nclus);
	if ((err = ck_chain_problem(ck, &c, 1, path, "directory ", &idx)))
		return err;
	if (!c.nclus) {
		ck_set_fix(ck->rec, idx, "entry removed");
		return ck_plan_delete(ck, d, ent);
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
static size_t hidden_entry(struct fat_check *ck, struct dirctx *d,
			   const struct fk_dirent *ent, uint32_t end_slot)
{
	const char *what = ck_is_label(ent)	       ? "volume label"
			   : (ent->attr & FK_ATTR_DIR) ? "directory"
						       : "file";
	size_t idx;

	idx = ck_report(ck->rec, FK_SEV_ERROR, "hidden-entry", ck_ent_path(d),
			"%s '%s' (slot %u) lies past the directory's end "
			"marker (slot %u): Linux and fsck.fat see it, Windows "
			"and mtools do not",
			what, ent->name, ent->slot, end_slot);
	ck_set_fix(ck->rec, idx,
		   "made visible: the end markers before it became deleted "
		   "slots");
	d->hidden_end = ent->slot + 1;
	return idx;
}

/* Keep @d's hidden entry @ent for walk_hidden(), after the visible tree. */
static int defer_hidden(struct fat_check *ck, struct dirctx *d, size_t finding)
{
	struct hidden_ent h;

	memset(&h, 0, sizeof(h));
	h.ent = *ck_named(d);
	if (!(h.path = strdup(ck_ent_path(d))))
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
static int plan_unend(struct fat_check *ck, const struct dirctx *d,
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

/* ---- entries whose attribute byte says what they are not ------------------ */

/* Set the bit of every cluster an in-use cluster links to. */
static int mark_linked_to(void *arg, uint32_t first, const uint32_t *vals,
			  uint32_t n)
{
	struct fat_check *ck = arg;
	uint32_t i;

	for (i = first < FK_FIRST_CLUS ? FK_FIRST_CLUS - first : 0; i < n; i++)
		if (ck_class(ck, vals[i]) == FK_ENT_NEXT)
			ck->linked[vals[i] / 64] |= 1ull << (vals[i] % 64);
	return 0;
}

/*
 * Does another cluster link to @clus: is it inside some chain rather than
 * at its head?  The active FAT is scanned once, the first time it is
 * asked (only a damaged volume asks), into a bit per cluster.
 */
static int is_linked_to(struct fat_check *ck, uint32_t clus)
{
	int err;

	if (!ck->linked) {
		size_t words = (size_t)fk_clus_max(ck->g) / 64 + 1;

		if (!(ck->linked = calloc(words, sizeof(*ck->linked))))
			return -ENOMEM;
		if ((err = fk_fat_scan(ck->vol, ck->g->active_fat,
				       mark_linked_to, ck)))
			return err;
	}
	return (ck->linked[clus / 64] >> (clus % 64)) & 1;
}

/* Do @ent's clusters begin a chain in the FAT (1), or has it none? */
static int owns_clusters(struct fat_check *ck, const struct fk_dirent *ent)
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
 * leading dot is not enough, as it is for ck_check_dot().  One that cannot
 * be read is left to the walk (1).
 */
static int begins_as_dir(struct fat_check *ck, const struct dirctx *d,
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
		if ((s.attr & FK_ATTR_DIR) && !ck_is_label(&s) &&
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
 *   directory bit goes too: the entry would be a label then.  One past the
 *   end marker (@is_hidden) is left to walk_hidden(), which keeps it only
 *   if it begins as a directory: its clusters may be free or another
 *   entry's, and a writer may take free ones at any time.
 * - A volume label in a subdirectory, where no label belongs, that owns
 *   clusters: fsck.fat checks its chain as a file's already, and says
 *   nothing of it unless its name is not valid and most entries of the
 *   directory are bad ones, so it is a warning.  Deleting it would lose
 *   the clusters.  One that owns none is deleted (walk_entry()), and so
 *   is one whose first cluster another entry has claimed or another
 *   cluster links to: those clusters are another chain's, and a writer
 *   may give the free cluster such a label names to a new file at any
 *   time (read as a file, the label cut that file at a cross-link).
 *   Claims are seen as the walk makes them: a label walked before the
 *   entry whose chain head it names still becomes a file, and the
 *   cross-link then leaves it empty (its first cluster set to 0), the
 *   other entry whole.
 */
static int retype(struct fat_check *ck, struct dirctx *d, struct fk_dirent *ent,
		  int is_hidden)
{
	int is_sub_label = ck_is_label(ent) && !d->is_root;
	int is_sized_dir = (ent->attr & FK_ATTR_DIR) && !ck_is_label(ent) &&
			   ent->size && !is_hidden;
	struct ent_fix fix;
	size_t idx;
	int r;

	if ((!is_sub_label && !is_sized_dir) || fk_dirent_is_dot(ent) ||
	    ck_is_damaged_dot(d, ent))
		return 0;
	if ((r = owns_clusters(ck, ent)) <= 0)
		return r;
	if (is_sub_label &&
	    ((r = ck_chain_unclaimed(ck, ent->first_clus, 1)) <= 0 ||
	     (r = is_linked_to(ck, ent->first_clus))))
		return r < 0 ? r : 0; /* another entry's: it owns none */
	if (is_sub_label) {
		idx = ck_report(ck->rec, FK_SEV_WARNING, "sub-label",
				ck_ent_path(d),
				"a volume label entry in a subdirectory (only "
				"the root directory holds the label) that owns "
				"clusters");
		ck_set_fix(ck->rec, idx, "volume bit cleared: a file of them");
	} else {
		if ((r = begins_as_dir(ck, d, ent->first_clus)))
			return r < 0 ? r : 0;
		idx = ck_report(
			ck->rec, FK_SEV_ERROR, "not-dir", ck_ent_path(d),
			"attribute byte 0x%02x says directory, but it "
			"has a size (%u bytes), as only files have, and "
			"its first cluster does not begin with '.' and "
			"'..': a file's data",
			ent->attr, (uint32_t)ent->size);
		ck_set_fix(ck->rec, idx, "directory bit cleared: a file again");
	}
	ent->attr &= (uint8_t) ~(FK_ATTR_DIR | FK_ATTR_VOLUME);
	ck_entry_set(&fix, d, ent);
	fix.set_attr = 1;
	fix.attr = ent->attr;
	return ck_plan_entry(ck, &fix);
}

/* A volume label in a subdirectory that owns no clusters (retype() made
 * the others files): deleted, as nothing is lost with it.  One past the
 * end marker is deleted by walk_hidden(), not made visible. */
static int drop_label(struct fat_check *ck, struct dirctx *d,
		      const struct fk_dirent *ent)
{
	size_t idx =
		ck_report(ck->rec, FK_SEV_WARNING, "sub-label", ck_ent_path(d),
			  "a volume label entry in a subdirectory (only "
			  "the root directory holds the label)");

	ck_set_fix(ck->rec, idx, "entry deleted");
	return ck_plan_delete(ck, d, ent);
}

static int walk_entry(struct fat_check *ck, struct dirctx *d,
		      const struct fk_dirent *ent,
		      const struct fk_dir_stats *st, struct fk_diag *diag)
{
	size_t hidden = NONE;
	int err;

	if (d->reattach_n &&
	    (fk_dirent_is_dot(ent) || ck_is_label(ent) ||
	     ck_is_damaged_dot(d, ent)) &&
	    (err = ck_drop_reattach(ck, d)))
		return err;
	if (fk_dirent_is_dot(ent) || ck_is_damaged_dot(d, ent))
		return ck_check_dot(ck, d, ent); /* past a marker: misplaced */
	if (st->after_end)
		hidden = hidden_entry(ck, d, ck_named(d), st->end_slot);
	if (!d->is_root && d->ent_first < 2)
		ck_note_move(ck, d, ent); /* a hidden one too: if it is kept */
	if (ck_is_label(ent)) {
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
	if ((err = ck_check_names(ck, d, ent, diag)))
		return err;
	if (st->after_end)
		return defer_hidden(ck, d, hidden);
	if ((ent->attr & FK_ATTR_DIR) && !ck_is_label(ent))
		return walk_subdir(ck, d, ent, diag);
	return walk_file(ck, d, ent);
}

/* Does the directory at @first begin as one: a "." naming @first? */
static int is_real_dir(struct fat_check *ck, uint32_t first)
{
	unsigned char e[FK_DIRENT_LEN];
	struct fk_dirent dot;
	int err;

	if ((err = fk_dir_read_slot(ck->vol, first, 0, e)))
		return err == FK_ECORRUPT ? 0 : err;
	memset(&dot, 0, sizeof(dot));
	fk_slot_unpack(ck->vol, e, &dot);
	return fk_slot_dot(dot.raw) == FK_DOT && (dot.attr & FK_ATTR_DIR) &&
	       !ck_is_label(&dot) && dot.first_clus == first;
}

/*
 * After the visible tree: the hidden entry @h (defer_hidden()), walked as
 * it would have been in its directory if its chain takes nothing a
 * visible entry (or an earlier hidden one) holds, and if a directory, it
 * begins with its own ".".  Otherwise it is stale: its slot is deleted
 * and its clusters left alone, lost clusters unless another entry has
 * them.
 */
static int walk_hidden(struct fat_check *ck, struct hidden_ent *h,
		       struct fk_diag *diag)
{
	struct fk_dirent *ent = &h->ent;
	int is_dir = (ent->attr & FK_ATTR_DIR) && !ck_is_label(ent);
	int is_sub_label = ck_is_label(ent) && !h->is_root;
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
	} else if (ent->first_clus && !ck_is_label(ent)) {
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
		ck_set_fix(ck->rec, h->finding,
			   "deleted, not made visible (%s); its clusters were "
			   "left alone: those no other entry holds are lost "
			   "clusters, freed, or saved by --salvage",
			   why);
		err = ck_plan_delete(ck, &d, ent);
	} else if (is_dir) {
		err = walk_subdir(ck, &d, ent, diag);
	} else {
		err = walk_file(ck, &d, ent);
	}
	ck_pop_entry(&d);
	return err;
}

/* After the entries: what the directory as a whole showed. */
static int dir_after(struct fat_check *ck, struct dirctx *d,
		     const struct fk_dir_stats *st)
{
	int err;

	ck_report_orphans(ck, d);
	if ((err = plan_unend(ck, d, st->end_slot)))
		return err;
	if (d->is_root)
		return 0;
	if ((err = ck_plan_moves(ck, d, st)))
		return err;
	if (!d->has_dot && (err = ck_missing_dot(ck, d, 1, st->end_slot)))
		return err;
	if (!d->has_dotdot && (err = ck_missing_dot(ck, d, 0, st->end_slot)))
		return err;
	return 0;
}

static int walk_dir(struct fat_check *ck, struct dirctx *d,
		    struct fk_diag *diag)
{
	struct fk_dirent *ent = malloc(sizeof(*ent));
	struct fk_dir *dir = NULL;
	int r = 0, err;

	if (!ent)
		return -ENOMEM;
	d->sum_find = NONE;
	d->dup_slot = UINT32_MAX;
	if ((err = ck_reserve_path(ck)) ||
	    (err = ck_open_dir(ck, d->first, d->nclus, &dir)))
		goto out;
	d->ck = ck;
	d->dir = dir;
	d->ent = ent;
	d->fixes_from = ck->ent_fixes.n;
	fk_dir_on_orphan(dir, ck_on_orphan, d);
	fk_dir_defer_names(dir);
	while ((r = fk_dir_next(dir, ent, diag)) == 1) {
		const struct fk_dir_stats *st = fk_dir_stats(dir);

		ck_report_orphans(ck, d); /* the slots before this entry */
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

		if ((err = retype(ck, d, ent, st->after_end)))
			goto out;
		if (!fk_dirent_is_dot(ent) && !ck_is_label(ent) &&
		    (err = ck_note_names(d, ent)))
			goto out;
		err = walk_entry(ck, d, ent, st, diag);
		ck_pop_entry(d);
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
	ck_free_table(&d->seen);
	ck_free_store(&d->all);
	d->has_all = 0;
	ck_free_table(&d->given);
	free(ent);
	return err;
}

/* The FAT32 root is a chain like any other; FAT12/16 have a fixed area. */
int ck_walk_root(struct fat_check *ck, struct fk_diag *diag)
{
	static const struct entry_ref root_self = {NO_DIR, 0};
	uint32_t root = fk_dir_resolve(ck->vol, 0);
	struct dirctx d;
	struct fk_claim c;
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
		ck->is_root_cut = c.why != FK_CUT_NONE;
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
