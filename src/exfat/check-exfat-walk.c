/*
 * check-exfat-walk.c: the exFAT checker's walk of the directory tree,
 * from the root's claim down, each set handed to its judge by kind, a
 * directory's set judged (check-exfat-sets.c) before the walk descends
 * into it, and the directories read past their end markers when there is
 * a reason to.
 */
#include "exfat/check-exfat-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat.h"
#include "iface/dirent.h"
#include "lib/diag.h"
#include "lib/vec.h"

/*
 * A critical primary of no type this checker knows (spec 6.2.1: a reader
 * must not use the directory as if it were not there).  One that
 * describes clusters through the generic template stays as it is, with
 * its clusters: what it holds is not ours to throw away.  Any other
 * (0x80, the invalid type, say) is removed.  Either way its meaning is
 * unknown, so the run frees no cluster (exck_keep_bits()).
 */
static int check_critical(struct fk_exfat_check *x, struct fk_exfat_set *s)
{
	struct fk_exfat_stream st;
	struct claim c;
	size_t idx;
	int err;

	if ((err = exck_keep_bits(x, "an unknown critical entry")))
		return err;
	if (fk_exfat_entry_alloc(s->raw[0], &st) && st.first_clus &&
	    s->type != 0x80) {
		ck_report(x->ck, FK_SEV_ERROR, "entry-set", exck_cur_path(x),
			  "unknown critical entry type 0x%02X (entry %u) "
			  "with an allocation from cluster %u: left as it "
			  "is, with its clusters",
			  s->type, s->first_ent, st.first_clus);
		/* Claimed as far as it goes, never mended: a repair of
		   what is not understood would be a guess. */
		return exck_claim(x, &st,
				  fk_exfat_clus_needed(x->g, st.data_len),
				  FK_EXFAT_DIR_MAX_LEN / x->g->clus_len, &c);
	}
	idx = ck_report(x->ck, FK_SEV_ERROR, "entry-set", exck_cur_path(x),
			"unknown critical entry type 0x%02X", s->type);
	ck_set_fix(x->ck, idx, "entry removed");
	exck_delete_set(s);
	return exck_plan_set(x, s);
}

/*
 * The end of a directory's iteration with @r (0, FK_ECORRUPT or -errno,
 * @d2 saying why): a directory that cannot be read on is an error that
 * keeps the lost clusters.  Returns 0 or -errno.
 */
static int dir_read_end(struct fk_exfat_check *x, int r,
			const struct fk_diag *d2)
{
	char msg[sizeof(d2->reason) + 64];

	if (r != FK_ECORRUPT)
		return r < 0 ? r : 0;
	fk_diag_reason(d2, r, msg, sizeof(msg));
	ck_report(x->ck, FK_SEV_ERROR, "dir-read", exck_cur_path(x),
		  "directory cannot be read on: %s", msg);
	return exck_keep_bits(x, "a directory cannot be read to its end");
}

/*
 * Remember where the walk of @dir (stored in @s, NULL: the root; @nclus
 * clusters claimed) stopped at its end marker, if anything may lie past
 * it.  Returns 0 or -ENOMEM.
 */
static int add_tail(struct fk_exfat_check *x, const struct fk_exfat_dir *dir,
		    const struct fk_exfat_stream *s, uint32_t nclus)
{
	struct tail t;

	memset(&t, 0, sizeof(t));
	if (!fk_exfat_dir_mark(dir, &t.m))
		return 0;
	if (s)
		t.s = *s;
	t.nclus = nclus;
	if (!(t.path = strdup(x->path_len ? x->path : "")) ||
	    PUSH(x->tails, t)) {
		free(t.path);
		return -ENOMEM;
	}
	return 0;
}

/* A field added to struct file_check must be set in exck_check_file(). */
_Static_assert(sizeof(struct file_check) ==
		       3 * 8 + sizeof(struct fk_exfat_stream) +
			       sizeof(struct claim) + 3 * 8 + 6 * 4,
	       "exck_check_file() sets each field of struct file_check");

/* Judge one file or directory set; claim its stream; recurse. */
static int exck_check_file(struct fk_exfat_check *x, struct dirwalk *w,
			   struct fk_exfat_set *s, struct fk_diag *diag)
{
	const char *name = s->name[0] ? s->name : "?";
	size_t len = strlen(name), old;
	struct file_check f;
	int err;

	/* Every field set, none by memset() (see exck_claim_clear()). */
	f.s = s;
	f.is_dir = (s->attr & FK_ATTR_DIR) != 0;
	f.what = f.is_dir ? "directory: " : "";
	f.st.first_clus = 0;
	f.st.data_len = 0;
	f.st.is_no_fat_chain = 0;
	exck_claim_clear(&f.c); /* nclus 0 and FK_CUT_NONE until claimed */
	f.need = 0;
	f.new_len = 0;
	f.big_len = 0;
	f.is_changed = 0;
	f.is_gone = 0;
	f.late = LATE_NONE;
	f.is_tail = 0;
	f.is_walked = 0;
	if ((err = exck_push_name(x, name, len, &old)))
		return err;
	exck_own_entry(x, s->first_ent);
	if (f.is_dir)
		x->st->dirs++;
	else
		x->st->files++;
	err = exck_judge_file(x, w, &f);
	if (f.is_walked) {
		uint32_t parent = x->own_parent;

		f.st.data_len = f.new_len;
		x->own_parent = f.c.rec; /* the owner of what it holds */
		err = exck_walk_dir(x, &f.st, f.c.nclus, w->depth + 1, diag);
		x->own_parent = parent;
	}
	if (!err && f.is_gone) {
		exck_delete_set(s);
		err = exck_plan_set(x, s);
		x->st->has_repairs = 1;
	}
	exck_pop_name(x, old);
	return err;
}

/*
 * Walk the directory stored in @s (NULL: the root), whose @nclus clusters
 * are claimed already, up to its end marker (exck_walk_tails() reads on past
 * it when it must).
 */
int exck_walk_dir(struct fk_exfat_check *x, const struct fk_exfat_stream *s,
		  uint32_t nclus, int depth, struct fk_diag *diag)
{
	struct fk_exfat_dir *dir;
	struct fk_exfat_set *set;
	struct dirwalk w;
	struct fk_diag d2 = {0};
	size_t idx;
	int err, r;

	if (depth > FK_CHECK_MAX_DEPTH) {
		fk_diag_set(diag, exck_cur_path(x),
			    "directories nested deeper than %d",
			    FK_CHECK_MAX_DEPTH);
		return FK_ECORRUPT;
	}
	if (!x->sets[depth] && !(x->sets[depth] = malloc(sizeof(*set))))
		return -ENOMEM;
	set = x->sets[depth];
	if (!x->dir_names[depth] &&
	    !(x->dir_names[depth] = calloc(1, sizeof(*x->dir_names[depth]))))
		return -ENOMEM;
	w.names = x->dir_names[depth];
	w.depth = depth;
	if ((err = fk_exfat_dir_open(x->vol, s, &dir)))
		return err;
	fk_exfat_dir_set_limit(dir, nclus);
	/* Sibling directories tend to be alike (a camera's 100XXXXX): read
	 * as much of this one's first cluster at once as the last needed. */
	fk_exfat_dir_set_first_piece(dir, x->piece_hint);
	while ((r = fk_exfat_dir_next(dir, set, &d2)) == 1) {
		if (set->defects & FK_EXS_CROSSES_END) {
			err = exck_hidden_set(x, set);
			if (err)
				break;
			continue;
		}
		x->own_kind = OWN_OTHER; /* exck_check_file() and others say */
		x->own_name = NO_REC;
		switch (set->kind) {
		case FK_EXK_FILE:
			err = exck_check_file(x, &w, set, diag);
			break;
		case FK_EXK_BITMAP:
		case FK_EXK_UPCASE:
		case FK_EXK_LABEL:
		case FK_EXK_GUID:
			err = exck_check_special(x, set, !s);
			break;
		case FK_EXK_BENIGN:
			err = exck_check_benign(x, set);
			break;
		case FK_EXK_CRITICAL:
			err = check_critical(x, set);
			break;
		case FK_EXK_ORPHAN:
			idx = ck_report(
				x->ck, FK_SEV_ERROR, "orphan-entry",
				exck_cur_path(x),
				"%u secondary entr%s without a file entry",
				set->nents, set->nents == 1 ? "y" : "ies");
			ck_set_fix(x->ck, idx, "entries freed");
			if (exck_may_hold_clusters(set, 0) &&
			    (err = exck_keep_bits(x,
						  "secondary entries without a "
						  "file entry were freed")))
				break;
			exck_delete_set(set);
			err = exck_plan_set(x, set);
			break;
		}
		if (err)
			break;
	}
	if (!err && !(err = dir_read_end(x, r, &d2)) && !r)
		err = add_tail(x, dir, s, nclus);
	if (!err) {
		uint64_t used =
			((uint64_t)fk_exfat_dir_stats(dir)->end_ent + 1) *
			FK_EXFAT_ENT_LEN;

		x->piece_hint =
			used < x->g->clus_len ? (uint32_t)used : x->g->clus_len;
	}
	fk_exfat_dir_close(dir);
	exck_clear_names(w.names);
	return err;
}

/*
 * Read every directory past its end marker, where exck_walk_dir() stopped, for
 * entry sets hidden there (exck_hidden_set()).  Returns 0 or -errno.
 */
int exck_walk_tails(struct fk_exfat_check *x)
{
	struct fk_exfat_set *set = x->sets[0];
	struct fk_exfat_dir *dir;
	struct fk_diag d2;
	size_t i, len;
	int err = 0, r = 0;

	memset(&d2, 0, sizeof(d2));
	for (i = 0; i < x->tails.n && !err; i++) {
		const struct tail *t = &x->tails.v[i];

		len = strlen(t->path);
		if (FK_VEC_RESERVE(x->path, x->path_cap, len + 1))
			return -ENOMEM;
		memcpy(x->path, t->path, len + 1);
		x->path_len = len;
		if ((err = fk_exfat_dir_open(
			     x->vol, t->s.first_clus ? &t->s : NULL, &dir)))
			break;
		fk_exfat_dir_set_limit(dir, t->nclus);
		fk_exfat_dir_resume(dir, &t->m);
		while ((r = fk_exfat_dir_next(dir, set, &d2)) == 1)
			if ((err = exck_hidden_set(x, set)))
				break;
		if (!err)
			err = dir_read_end(x, r, &d2);
		fk_exfat_dir_close(dir);
	}
	exck_pop_name(x, 0);
	return err;
}

int exck_walk_root(struct fk_exfat_check *x, struct fk_diag *diag)
{
	struct fk_exfat_stream root;
	struct claim c;
	size_t idx;
	int err;

	root.first_clus = x->g->root_clus;
	root.data_len = 0;
	root.is_no_fat_chain = 0;
	x->own_kind = OWN_ROOT;
	x->own_parent = NO_REC;
	if ((err = exck_claim(x, &root, 0,
			      FK_EXFAT_DIR_MAX_LEN / x->g->clus_len, &c)) ||
	    (err = exck_judge_claim(x, &c, "/", "root directory: ", &idx)))
		return err;
	if (!c.nclus) {
		fk_diag_set(diag, NULL, "root directory has no clusters");
		return FK_ECORRUPT;
	}
	if (!x->sets[1] && !(x->sets[1] = malloc(sizeof(*x->sets[1]))))
		return -ENOMEM;
	if ((err = exck_prepare_root(x, x->sets[1])) ||
	    (err = exck_walk_dir(x, NULL, c.nclus, 0, diag)))
		return err;
	if (!x->has_bitmap)
		ck_report(x->ck, FK_SEV_ERROR, "bitmap", NULL,
			  "no usable allocation bitmap entry in the root");
	if (!x->has_upcase)
		ck_report(x->ck, FK_SEV_ERROR, "upcase", NULL,
			  "no up-case table entry in the root");
	return 0;
}
