/*
 * check-exfat-sets.c: the exFAT checker's judgement of entry sets: a
 * file or directory set field by field, its stream claimed, its name
 * against the others of its directory (check-exfat-names.c keeps them);
 * benign sets and the allocations of the generic templates.  The rewrites
 * are planned as whole sets by check-exfat-rewrite.c.
 */
#include "exfat/check-exfat-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"
#include "iface/dirent.h"
#include "lib/endian.h"
#include "table/fat.h"

/*
 * A benign primary's set (TexFAT padding, a vendor's...): its allocations.
 * A damaged one (fk_exfat_set_damage(), the judgement the writer refuses
 * a directory by) is reported as a file's set would be: one cut short
 * claims the sets after it, and is removed with its clusters kept; a bad
 * SetChecksum is rewritten.
 */
int exck_check_benign(struct fk_exfat_check *x, struct fk_exfat_set *s)
{
	const char *why = fk_exfat_set_damage(s);
	int is_changed = 0, err;
	size_t idx;

	if (why && (s->defects & FK_EXS_TRUNCATED)) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "entry-set",
				exck_cur_path(x),
				"damaged entry set of type 0x%02X (entry %u): "
				"%s",
				s->type, s->first_ent, why);
		ck_set_fix(x->ck, idx, "entry set removed");
		if ((err = exck_keep_bits(x,
					  "a damaged entry set was removed")))
			return err;
		exck_delete_set(s);
		return exck_plan_set(x, s);
	}
	if (why) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "set-checksum",
				exck_cur_path(x),
				"entry set of type 0x%02X (entry %u): "
				"SetChecksum 0x%04X, computed 0x%04X",
				s->type, s->first_ent, s->csum_stored,
				s->csum_computed);
		ck_set_fix(x->ck, idx, "checksum rewritten");
		is_changed = 1;
	}
	if ((err = exck_claim_generic(x, s->raw[0], GEN_PFLAGS, &is_changed)) ||
	    (err = exck_claim_secondaries(x, s, &is_changed)))
		return err;
	if (!is_changed)
		return 0;
	put_le16(&s->raw[0][GEN_CHECKSUM],
		 fk_exfat_set_checksum((const unsigned char(*)[32])s->raw,
				       s->nents));
	x->st->has_repairs = 1;
	return exck_plan_set(x, s);
}

/*
 * May the entries of @s from @from on describe clusters (a stream with a
 * FirstCluster, a benign secondary with AllocationPossible), or did the
 * set lose entries that might?  Asked of sets a repair removes.
 */
int exck_may_hold_clusters(const struct fk_exfat_set *s, uint32_t from)
{
	uint32_t i;

	if (s->defects & FK_EXS_TRUNCATED)
		return 1;
	for (i = from; i < s->nents; i++) {
		const unsigned char *e = s->raw[i];

		if (!get_le32(e + GEN_FIRST))
			continue;
		if (e[GEN_TYPE] == FK_EXFAT_T_STREAM ||
		    ((e[GEN_TYPE] & FK_EXFAT_BENIGN) &&
		     (e[GEN_SFLAGS] & FK_EXFAT_GSF_ALLOC_POSSIBLE)))
			return 1;
	}
	return 0;
}

/* Name units the set's File Name entries hold (after its stream). */
static uint32_t name_room(const struct fk_exfat_set *s)
{
	uint32_t n = 0, i;

	for (i = 2; i < s->nents && s->raw[i][GEN_TYPE] == FK_EXFAT_T_NAME; i++)
		n += FN_UNITS;
	return n;
}

/*
 * The first @n units of @s's name: the units the iterator gathered, in
 * place, unless @is_raw (a repair changed the entries) or they are too
 * few; then from the raw entries into @out.
 */
static uint16_t *name_units(struct fk_exfat_set *s, uint32_t n, int is_raw,
			    uint16_t *out)
{
	uint32_t i;

	if (!is_raw && s->name16_len >= n)
		return s->name16;
	for (i = 0; i < n; i++)
		out[i] = name_unit(s, i);
	return out;
}

static void visit(struct fk_exfat_check *x, const struct fk_exfat_set *s,
		  uint32_t nclus)
{
	struct fk_dirent ent;

	if (!x->o.visit)
		return;
	memset(&ent, 0, sizeof(ent));
	snprintf(ent.name, sizeof(ent.name), "%s", s->name);
	ent.attr = (uint8_t)s->attr;
	ent.first_clus = s->first_clus;
	ent.size = s->data_len;
	ent.valid_len = s->valid_len;
	ent.is_no_fat_chain = s->is_no_fat_chain;
	x->o.visit(x->o.arg, exck_cur_path(x), &ent, nclus);
}

/*
 * Name checks of a file set: the length against its File Name entries,
 * characters the specification forbids.  Plans the rewrite in @s.
 * Returns 1 when the set must go (no name left), else 0.
 */
static int check_name(struct fk_exfat_check *x, struct fk_exfat_set *s,
		      const char *path, int *is_changed)
{
	uint32_t room = name_room(s), n = s->raw[1][SE_NAME_LEN], i, bad = 0;
	size_t idx;

	if (!n) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "bad-name", path,
				"entry set with an empty name");
		ck_set_fix(x->ck, idx, "entry set removed");
		return 1;
	}
	if (n > room || (s->defects & FK_EXS_COUNT)) {
		uint32_t keep = n < room ? n : room;

		for (i = 0; i < keep && name_unit(s, i); i++)
			;
		keep = i;
		idx = ck_report(x->ck, FK_SEV_ERROR, "name-length", path,
				"NameLength %u but the set's File Name entries "
				"hold %u character%s",
				n, room, ck_plural(room));
		if (!keep) {
			ck_set_fix(x->ck, idx, "entry set removed");
			return 1;
		}
		ck_set_fix(x->ck, idx, "name cut to %u character%s", keep,
			   ck_plural(keep));
		s->raw[1][SE_NAME_LEN] = (uint8_t)keep;
		for (i = keep; i < room; i++)
			put_name_unit(s, i, 0);
		n = keep;
		*is_changed = 1;
	}
	/* The iterator judged every unit it gathered, and a set gets here
	 * only with its File Name entries in place (check_file removes it
	 * otherwise), so they are these: look again only where it found
	 * one to replace. */
	for (i = 0; (s->defects & FK_EXS_NAME_CHARS) && i < n; i++)
		if (!fk_exfat_name_unit_ok(name_unit(s, i))) {
			put_name_unit(s, i, '_');
			bad++;
		}
	if (bad) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "bad-name", path,
				"name holds %u character%s exFAT forbids", bad,
				ck_plural(bad));
		ck_set_fix(x->ck, idx, "replaced by '_'");
		*is_changed = 1;
	}
	/* "." and ".." stand for a directory and its parent in every path
	 * (spec 7.7.3): no path reaches a file of either name, and
	 * fsck.exfat refuses them. */
	if (n <= 2 && name_unit(s, 0) == '.' && name_unit(s, n - 1) == '.') {
		idx = ck_report(x->ck, FK_SEV_ERROR, "bad-name", path,
				"the name '%s' is reserved (no path can name "
				"this entry)",
				n == 1 ? "." : "..");
		ck_set_fix(x->ck, idx, "renamed to '%s'", n == 1 ? "_" : "__");
		for (i = 0; i < n; i++)
			put_name_unit(s, i, '_');
		*is_changed = 1;
	}
	return 0;
}

/* Give @s a name no earlier entry of the directory has. */
static int rename_dup(struct fk_exfat_check *x, struct fk_exfat_set *s,
		      const struct dirwalk *w, uint16_t *u, uint64_t *key)
{
	static const char alt[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	uint32_t n = s->raw[1][SE_NAME_LEN];
	uint16_t first = u[0];
	size_t i;

	for (i = 0; i < sizeof(alt) - 1; i++) {
		u[0] = (uint16_t)alt[i];
		*key = exck_name_key(x->ex->upcase, u, n);
		if (!exck_has_name(w->names, x->ex->upcase, *key, u, n)) {
			put_name_unit(s, 0, u[0]);
			return 1;
		}
	}
	u[0] = first;
	*key = exck_name_key(x->ex->upcase, u, n);
	return 0;
}

/* Keep @s (a file, at the current path) for exck_late_claims(). */
static int add_late(struct fk_exfat_check *x, const struct fk_exfat_set *s,
		    int why)
{
	struct late_set l;

	l.set = malloc(sizeof(*l.set));
	l.path = strdup(exck_cur_path(x));
	l.own_parent = x->own_parent;
	l.own_name = x->own_name;
	l.why = why;
	if (!l.set || !l.path || PUSH(x->late, l)) {
		free(l.set);
		free(l.path);
		return -ENOMEM;
	}
	memcpy(l.set, s, sizeof(*s));
	return 0;
}

/* Keep the tail of the file @c claimed the head of (struct late_tail);
 * its set was planned last, idle unless @is_changed. */
static int add_nfc_tail(struct fk_exfat_check *x, const struct claim *c,
			uint64_t need, int is_changed)
{
	struct late_tail t = {c->rec, NULL, (uint32_t)need, x->set_fixes.n - 1};

	x->set_fixes.v[t.fix].is_idle = !is_changed;
	if (!(t.path = strdup(exck_cur_path(x))) || PUSH(x->nfc_tails, t)) {
		free(t.path);
		return -ENOMEM;
	}
	return 0;
}

/*
 * A file set with a critical secondary of no type this checker knows
 * (spec 6.4: the whole set is then not understood) and an allocation: as
 * an unknown critical primary (check_critical()), left as it is with its
 * clusters claimed as far as they go.  Returns 0 or -errno.
 */
static int keep_unknown_set(struct fk_exfat_check *x, struct fk_exfat_set *s)
{
	struct fk_exfat_stream st = {s->first_clus, s->data_len,
				     s->is_no_fat_chain};
	struct claim c;
	int err;

	ck_report(x->ck, FK_SEV_ERROR, "entry-set", exck_cur_path(x),
		  "entry set holds an unknown critical secondary entry and "
		  "an allocation from cluster %u: left as it is, with its "
		  "clusters",
		  s->first_clus);
	if ((err = exck_keep_bits(x, "an unknown critical entry")))
		return err;
	return exck_claim(x, &st, fk_exfat_clus_needed(x->g, s->data_len),
			  FK_EXFAT_DIR_MAX_LEN / x->g->clus_len, &c);
}

/*
 * Are @s's File Name entries all in place, right after its stream, and
 * only too few for its NameLength?  The iterator calls that a missing
 * name entry like any other; check_name() mends it by cutting the name to
 * what the entries hold, which keeps the file (removing the set would
 * free its clusters over a name).
 */
static int is_name_short(const struct fk_exfat_set *s)
{
	uint32_t i = 2;

	if (s->nents < 3 || s->raw[1][GEN_TYPE] != FK_EXFAT_T_STREAM)
		return 0;
	while (i < s->nents && s->raw[i][GEN_TYPE] == FK_EXFAT_T_NAME)
		i++;
	for (; i < s->nents; i++)
		if (s->raw[i][GEN_TYPE] == FK_EXFAT_T_NAME ||
		    s->raw[i][GEN_TYPE] == FK_EXFAT_T_STREAM)
			return 0;
	return s->raw[1][SE_NAME_LEN] > name_room(s);
}

/* A set damaged past mending (@dead of its defects): removed. */
static int remove_damaged(struct fk_exfat_check *x, struct file_check *f,
			  uint32_t dead)
{
	struct fk_exfat_set *s = f->s;
	size_t idx;

	idx = ck_report(x->ck, FK_SEV_ERROR, "entry-set", exck_cur_path(x),
			"damaged entry set: %s",
			fk_exfat_set_reason(s->defects & dead));
	ck_set_fix(x->ck, idx, "entry set removed");
	f->is_gone = 1;
	/* A set whose stream is in place is understood: its clusters
	 * go with it.  One cut short, or with entries of unknown
	 * meaning, may own clusters nobody can name any more. */
	if ((s->defects &
	     (FK_EXS_TRUNCATED | FK_EXS_NO_STREAM | FK_EXS_CRITICAL)) &&
	    exck_may_hold_clusters(s, 1))
		return exck_keep_bits(x, "a damaged entry set was removed");
	return 0;
}

/* A set being rewritten keeps no unit past its name: fsck.exfat 1.2.0
 * calls a name whose File Name entries run on past NameLength the wrong
 * length, and those units mean nothing once the set is sealed again. */
static void clear_past_name(struct fk_exfat_set *s)
{
	uint32_t room = name_room(s), i;

	for (i = s->raw[1][SE_NAME_LEN]; i < room; i++)
		put_name_unit(s, i, 0);
}

/*
 * A NameHash that does not match the name may mean NameLength lost a bit:
 * the units after it, up to the first 0 in the File Name entries, then
 * complete a name the stored hash matches.  That longer length, or 0.
 */
static uint32_t hashed_length(const struct fk_exfat_check *x,
			      const struct fk_exfat_set *s)
{
	uint16_t units[FK_EXFAT_NAME_MAX];
	uint32_t room = name_room(s), n = s->raw[1][SE_NAME_LEN], i;

	if (room > FK_EXFAT_NAME_MAX)
		room = FK_EXFAT_NAME_MAX;
	for (i = 0; i < room && (units[i] = name_unit(s, i)); i++)
		if (i >= n && !fk_exfat_name_unit_ok(units[i]))
			return 0;
	if (i <= n ||
	    fk_exfat_name_hash(x->ex->upcase, units, i) != s->hash_stored)
		return 0;
	return i;
}

/* The set's own fields: SetChecksum, the name, NameHash, and whether
 * AllocationPossible agrees with FirstCluster. */
static int judge_fields(struct fk_exfat_check *x, struct file_check *f)
{
	struct fk_exfat_set *s = f->s;
	size_t idx = NONE; /* set with FK_EXS_ALLOC, where it is read */
	int err;

	if (s->defects & FK_EXS_CHECKSUM) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "set-checksum",
				exck_cur_path(x),
				"SetChecksum 0x%04X, computed 0x%04X",
				s->csum_stored, s->csum_computed);
		ck_set_fix(x->ck, idx, "checksum rewritten");
		f->is_changed = 1;
	}
	if (check_name(x, s, exck_cur_path(x), &f->is_changed)) {
		f->is_gone = 1;
		return 0;
	}
	if ((s->defects & FK_EXS_HASH) && x->is_upcase_loaded) {
		uint32_t len = hashed_length(x, s);

		if (len) {
			/* Cut, the name would lose what the hash still
			 * vouches for (and fsck.exfat calls a name with
			 * units past its length wrong). */
			idx = ck_report(
				x->ck, FK_SEV_ERROR, "name-length",
				exck_cur_path(x),
				"NameLength %u, but the name runs on to "
				"%u characters, which NameHash 0x%04X "
				"matches",
				s->raw[1][SE_NAME_LEN], len, s->hash_stored);
			ck_set_fix(x->ck, idx, "NameLength set to %u", len);
			s->raw[1][SE_NAME_LEN] = (uint8_t)len;
		} else {
			idx = ck_report(x->ck, FK_SEV_ERROR, "name-hash",
					exck_cur_path(x),
					"NameHash 0x%04X, computed 0x%04X",
					s->hash_stored, s->hash_computed);
			ck_set_fix(x->ck, idx, "hash rewritten");
		}
		f->is_changed = 1;
	}
	if ((s->defects & FK_EXS_ALLOC) && s->is_alloc_possible) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "alloc-flag",
				exck_cur_path(x),
				"%sfirst cluster 0 with a non-zero length "
				"(%llu bytes)",
				f->what, (unsigned long long)s->data_len);
	} else if (s->defects & FK_EXS_ALLOC) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "alloc-flag",
				exck_cur_path(x),
				"%sAllocationPossible and FirstCluster %u "
				"disagree",
				f->what, s->first_clus);
	}
	if (s->defects & FK_EXS_ALLOC) {
		if (s->first_clus && s->data_len) {
			ck_set_fix(x->ck, idx, "AllocationPossible set");
			s->raw[1][SE_FLAGS] |= FK_EXFAT_GSF_ALLOC_POSSIBLE;
		} else {
			ck_set_fix(x->ck, idx, "file made empty");
			/* A directory whose clusters are unknown held files
			 * whose clusters nothing names any more. */
			if (f->is_dir && s->data_len &&
			    (err = exck_keep_bits(
				     x, "a directory cannot be read")))
				return err;
			s->first_clus = 0;
			s->data_len = 0;
			s->raw[1][SE_FLAGS] &=
				(uint8_t)~FK_EXFAT_GSF_NO_FAT_CHAIN;
		}
		f->is_changed = 1;
	}
	return 0;
}

/*
 * A NoFatChain directory whose DataLength and ValidDataLength are both
 * directory lengths but differ (they must not, spec 7.6.4): one of them
 * is damaged, and a run has no chain to tell which.  The shorter is
 * claimed, so that a grown DataLength takes none of the clusters of the
 * files after the directory (its walk would read their data as entries
 * and the repair rewrite it); the repair sets DataLength to it.  What the
 * longer one covered is not freed: the tree is then incomplete, and its
 * clusters nothing else owns are kept (lost-kept).
 */
static void shorter_run(struct fk_exfat_check *x, struct file_check *f)
{
	const struct fk_exfat_set *s = f->s;

	if (!f->is_dir || !f->st.is_no_fat_chain ||
	    (s->defects & FK_EXS_BIG_DIR) ||
	    !fk_exfat_is_dir_len(x->g->clus_len, s->valid_len) ||
	    s->valid_len >= s->data_len)
		return;
	f->need = s->valid_len / x->g->clus_len;
	f->big_len = s->valid_len;
	f->st.data_len = f->big_len;
	f->is_changed = 1;
	x->is_tree_incomplete = 1;
}

/* The stream the set names: directories must fill whole clusters (spec
 * 6.2). */
static void start_stream(struct fk_exfat_check *x, struct file_check *f)
{
	const struct fk_geom *g = x->g;
	struct fk_exfat_set *s = f->s;
	size_t idx;

	f->st.first_clus = s->first_clus;
	f->st.data_len = s->data_len;
	f->st.is_no_fat_chain = s->is_no_fat_chain;
	f->need = fk_exfat_clus_needed(g, s->data_len);
	shorter_run(x, f);
	if (!f->is_dir || !(s->defects & FK_EXS_BIG_DIR))
		return;
	idx = ck_report(x->ck, FK_SEV_ERROR, "dir-size", exck_cur_path(x),
			"directory DataLength %llu is not a whole "
			"number of clusters up to %u MiB",
			(unsigned long long)s->data_len,
			FK_EXFAT_DIR_MAX_LEN >> 20);
	f->is_changed = 1;
	if (f->st.is_no_fat_chain) {
		/* A run has no chain to tell its end: it owns the
		 * whole clusters its length covers (at least its
		 * first), never the one its stray bytes reach into,
		 * which may be the next file's.  ValidDataLength, which
		 * equals DataLength on a directory, tells the length
		 * when it alone is sound: one damaged byte of DataLength
		 * must not claim the clusters of the files after it. */
		uint64_t len = s->data_len;

		if (fk_exfat_is_dir_len(g->clus_len, s->valid_len) &&
		    s->valid_len < len)
			len = s->valid_len;
		f->need = len / g->clus_len;
		if (f->need > FK_EXFAT_DIR_MAX_LEN / g->clus_len)
			f->need = FK_EXFAT_DIR_MAX_LEN / g->clus_len;
		if (!f->need)
			f->need = 1;
		f->big_len = f->need * g->clus_len;
		f->st.data_len = f->big_len;
		ck_set_fix(x->ck, idx, "DataLength set to %llu",
			   (unsigned long long)f->big_len);
	} else {
		ck_set_fix(x->ck, idx, "DataLength set from the chain");
		f->need = 0; /* take what the chain holds, then fix the
				length */
	}
}

/* Claim the stream of a set that has one, and judge how far it went. */
static int claim_stream(struct fk_exfat_check *x, struct file_check *f)
{
	const struct fk_geom *g = x->g;
	struct fk_exfat_set *s = f->s;
	struct claim *c = &f->c;
	uint64_t head;
	size_t idx;
	int err;

	if (!f->st.first_clus)
		f->st.first_clus = 1; /* out of range: judged below */
	head = f->need;
	if (!f->is_dir && f->st.is_no_fat_chain) {
		/* the tail past ValidDataLength is claimed late
		 * (struct late_tail); the first cluster, named by
		 * FirstCluster, is as sound as any stream's */
		head = fk_exfat_clus_needed(g, s->valid_len);
		if (!head)
			head = 1;
		if (head >= f->need)
			head = f->need;
		else
			f->st.data_len = head * g->clus_len;
	}
	if ((err = exck_claim(x, &f->st, head,
			      FK_EXFAT_DIR_MAX_LEN / g->clus_len, c)) ||
	    (err = exck_judge_claim(x, c, exck_cur_path(x), f->what, &idx)))
		return err;
	f->st.data_len = s->data_len;
	if (head < f->need && c->why == FK_CUT_NONE && c->nclus == head) {
		f->is_tail = 1;
	} else if (c->why != FK_CUT_NONE || c->nclus < f->need ||
		   (f->is_dir && !f->need)) {
		f->new_len = (uint64_t)c->nclus * g->clus_len;
		if (f->new_len > s->data_len && f->need)
			f->new_len = s->data_len;
		if (!c->nclus && f->is_dir) {
			ck_set_fix(x->ck, idx, "entry set removed");
			f->is_gone = 1;
			return exck_keep_bits(x, "a directory cannot be read");
		}
		if (!c->nclus)
			ck_set_fix(x->ck, idx, "file made empty");
		else if (f->new_len != s->data_len)
			ck_set_fix(x->ck, idx, "%sDataLength set to %llu",
				   exck_is_fat_cut(c) ? "chain ended, " : "",
				   (unsigned long long)f->new_len);
		if (f->new_len != s->data_len || !c->nclus)
			f->is_changed = 1;
		if (!c->nclus) {
			f->st.first_clus = 0;
			f->new_len = 0;
			s->raw[1][SE_FLAGS] &=
				(uint8_t)~FK_EXFAT_GSF_NO_FAT_CHAIN;
		}
	}
	return 0;
}

/* FirstCluster and DataLength against each other; then the stream. */
static int judge_stream(struct fk_exfat_check *x, struct file_check *f)
{
	const struct fk_geom *g = x->g;
	struct fk_exfat_set *s = f->s;
	size_t idx;

	f->new_len = s->data_len;
	if (!f->is_dir && f->st.first_clus && !s->data_len) {
		/* Nothing to walk a length against: the clusters go. */
		idx = ck_report(x->ck, FK_SEV_ERROR, "long-chain",
				exck_cur_path(x),
				"DataLength is 0 but FirstCluster is %u",
				f->st.first_clus);
		ck_set_fix(x->ck, idx, "FirstCluster cleared");
		f->st.first_clus = 0;
		s->raw[1][SE_FLAGS] &= (uint8_t)~FK_EXFAT_GSF_NO_FAT_CHAIN;
		f->is_changed = 1;
	} else if (!f->st.first_clus && !s->data_len) {
		f->c.nclus = 0;
		if (!f->is_dir &&
		    (s->raw[1][SE_FLAGS] & FK_EXFAT_GSF_NO_FAT_CHAIN)) {
			/* A run of no cluster: fsck.exfat calls it damage
			 * ("empty, but has no Fat chain"). */
			idx = ck_report(x->ck, FK_SEV_ERROR, "alloc-flag",
					exck_cur_path(x),
					"NoFatChain set on a file without "
					"clusters");
			ck_set_fix(x->ck, idx, "NoFatChain cleared");
			s->raw[1][SE_FLAGS] &=
				(uint8_t)~FK_EXFAT_GSF_NO_FAT_CHAIN;
			f->is_changed = 1;
		}
		if (f->is_dir) {
			idx = ck_report(x->ck, FK_SEV_ERROR, "dir-size",
					exck_cur_path(x),
					"directory without clusters");
			ck_set_fix(x->ck, idx, "entry set removed");
			f->is_gone = 1;
		}
	} else if (!f->is_dir && f->st.is_no_fat_chain &&
		   fk_clus_valid(g, f->st.first_clus) &&
		   f->need > (uint64_t)fk_clus_max(g) - f->st.first_clus + 1) {
		f->late = LATE_PAST_HEAP; /* see struct late_set */
	} else if (!f->is_dir && f->st.is_no_fat_chain &&
		   (s->defects & FK_EXS_CHECKSUM) &&
		   fk_clus_valid(g, f->st.first_clus)) {
		/* Its FirstCluster may be the damage: the run is claimed
		 * after every sound stream (claim_damaged()), so that what it
		 * lands on keeps its clusters. */
		f->late = LATE_DAMAGED;
	} else {
		return claim_stream(x, f);
	}
	return 0;
}

/* The lengths and first cluster as the claim found them, in the set; then
 * the allocations of its other secondaries. */
static int fix_lengths(struct fk_exfat_check *x, struct file_check *f)
{
	struct fk_exfat_set *s = f->s;
	const struct claim *c = &f->c;
	size_t idx;
	int err;

	if (f->big_len && c->why == FK_CUT_NONE && c->nclus == f->need)
		f->new_len = f->big_len;
	if (f->is_changed || f->st.first_clus != s->first_clus ||
	    f->new_len != s->data_len) {
		put_le32(&s->raw[1][GEN_FIRST], f->st.first_clus);
		put_u64le(&s->raw[1][GEN_LEN], f->new_len);
		f->is_changed = 1;
	}
	/* ValidDataLength: at most DataLength; all of it on a directory. */
	if ((s->defects & FK_EXS_VDL) || s->valid_len > f->new_len ||
	    (f->is_dir && s->valid_len != f->new_len)) {
		if (s->defects & FK_EXS_VDL) {
			idx = ck_report(x->ck, FK_SEV_ERROR, "valid-length",
					exck_cur_path(x),
					"%sValidDataLength %llu %s DataLength "
					"%llu",
					f->what,
					(unsigned long long)s->valid_len,
					f->is_dir ? "is not" : "exceeds",
					(unsigned long long)s->data_len);
			if (f->is_dir && f->new_len == s->valid_len)
				ck_set_fix(x->ck, idx,
					   "DataLength set to it, the shorter");
			else
				ck_set_fix(x->ck, idx,
					   "ValidDataLength set to %llu",
					   (unsigned long long)f->new_len);
		}
		put_u64le(&s->raw[1][SE_VDL],
			  f->is_dir || s->valid_len > f->new_len
				  ? f->new_len
				  : s->valid_len);
		f->is_changed = 1;
	}
	if (f->is_dir && f->st.first_clus &&
	    (c->why == FK_CUT_START || c->why == FK_CUT_VALUE ||
	     c->why == FK_CUT_CROSS ||
	     (c->why == FK_CUT_NONE && c->nclus < f->need)) &&
	    (err = exck_keep_bits(x, "a directory cannot be read to its end")))
		return err;
	return exck_claim_secondaries(x, s, &f->is_changed);
}

/* Duplicates, through the volume's up-case table (spec 7.2). */
static int judge_duplicate(struct fk_exfat_check *x, const struct dirwalk *w,
			   struct file_check *f)
{
	struct fk_exfat_set *s = f->s;
	uint16_t buf[FK_EXFAT_NAME_MAX], *units;
	uint32_t nlen = s->raw[1][SE_NAME_LEN];
	uint64_t key;
	size_t idx;
	int err;

	units = name_units(s, nlen, f->is_changed, buf);
	/* the units the name hash was computed over, up-cased there */
	key = units == s->name16 && s->has_name_up
		      ? exck_upname_key(s->name_up, nlen)
		      : exck_name_key(x->ex->upcase, units, nlen);
	if ((err = exck_add_name(w->names, x->ex->upcase, key, units, nlen)))
		return err < 0 ? err : 0;
	idx = ck_report(x->ck, FK_SEV_ERROR, "duplicate", exck_cur_path(x),
			"another entry of the directory has the same "
			"name (compared through the up-case table)");
	/* rename_dup() tries other first units in a copy */
	units = name_units(s, nlen, 1, buf);
	if (rename_dup(x, s, w, units, &key)) {
		ck_set_fix(x->ck, idx, "renamed");
		f->is_changed = 1;
	}
	/* not renamed: the name is there, and stays once */
	err = exck_add_name(w->names, x->ex->upcase, key, units, nlen);
	return err < 0 ? err : 0;
}

/*
 * List the file, plan its set's rewrite, and mark it to be walked if it is
 * a directory (exck_check_file() walks it).
 */
static int finish_file(struct fk_exfat_check *x, struct file_check *f)
{
	struct fk_exfat_set *s = f->s;
	int err = 0;

	/* a tail is listed whole: it is, unless claim_nfc_tails() cuts it */
	visit(x, s, f->is_tail ? (uint32_t)f->need : f->c.nclus);
	if (f->late) {
		if (f->is_changed) /* the late claim writes the set */
			clear_past_name(s);
		err = add_late(x, s, f->late);
	} else if (f->is_changed || f->is_tail) {
		if (f->is_changed) {
			clear_past_name(s); /* whatever changed it */
			exck_reseal(x, s);
		}
		if ((err = exck_plan_set(x, s)) ||
		    (f->is_tail &&
		     (err = add_nfc_tail(x, &f->c, f->need, f->is_changed))))
			return err;
		if (f->is_changed)
			x->st->has_repairs = 1;
	}
	if (f->is_dir && f->st.first_clus)
		f->is_walked = 1;
	return err;
}

int exck_judge_file(struct fk_exfat_check *x, struct dirwalk *w,
		    struct file_check *f)
{
	struct fk_exfat_set *s = f->s;
	uint32_t dead = FK_EXS_TRUNCATED | FK_EXS_NO_STREAM | FK_EXS_CRITICAL;
	int err;

	if (s->defects & FK_EXS_TYPE) {
		size_t idx = ck_report(
			x->ck, FK_SEV_ERROR, "entry-set", exck_cur_path(x),
			"entry %u of the set has type 0x%02X, where 0x%02X "
			"makes the SetChecksum verify",
			s->mend_ent, s->mend_type, s->raw[s->mend_ent][0]);

		ck_set_fix(x->ck, idx, "type restored");
		f->is_changed = 1;
	}
	if (!is_name_short(s))
		dead |= FK_EXS_NAME_ENTRY;
	if ((s->defects & dead) == FK_EXS_CRITICAL && s->first_clus)
		return keep_unknown_set(x, s);
	if (s->defects & dead)
		return remove_damaged(x, f, dead);
	if ((err = judge_fields(x, f)) || f->is_gone)
		return err;
	start_stream(x, f);
	if ((err = judge_stream(x, f)) || f->is_gone)
		return err;
	if ((err = fix_lengths(x, f)) || (err = judge_duplicate(x, w, f)))
		return err;
	return finish_file(x, f);
}

/*
 * An entry set past the directory's end marker: no reader that stops at
 * the marker has it, so its stream is not claimed (its clusters are lost
 * clusters, which this run frees) and -r makes its entries end markers,
 * as the specification wants every entry after the first one to be.
 */
int exck_hidden_set(struct fk_exfat_check *x, struct fk_exfat_set *s)
{
	const char *what = s->kind != FK_EXK_FILE    ? "entry set"
			   : (s->attr & FK_ATTR_DIR) ? "directory"
						     : "file";
	size_t idx;

	if (s->kind == FK_EXK_FILE)
		idx = ck_report(
			x->ck, FK_SEV_WARNING, "hidden-entry", exck_cur_path(x),
			"%s '%s' (entry %u) lies past the directory's "
			"end marker, where readers stop%s",
			what, s->name, s->first_ent,
			s->first_clus ? "; its clusters count as lost" : "");
	else
		idx = ck_report(x->ck, FK_SEV_WARNING, "hidden-entry",
				exck_cur_path(x),
				"%s of type 0x%02X (entry %u) lies past the "
				"directory's end marker, where readers stop",
				what, s->type, s->first_ent);
	ck_set_fix(x->ck, idx, "%s freed", what);
	memset(s->raw, 0, s->nents * sizeof(s->raw[0]));
	return exck_plan_set(x, s);
}
