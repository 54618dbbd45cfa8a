/*
 * check-exfat-claim.c: the exFAT checker's ownership map (one bit per
 * cluster) and its claims: a stream claimed cluster by cluster, a loop or
 * a second owner stopping it at the first shared cluster, the cut
 * reported and the FAT chain's end planned where it is cut (the words
 * and the plan's fix are iface/claim.c's, shared with FAT); the owner
 * records the claims are kept under (the paths and names they use are
 * inline, check-exfat-int.h); and the late claims of
 * NoFatChain runs whose length is in doubt, once every sound stream is
 * claimed.
 */
#include "exfat/check-exfat-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"
#include "io/device.h"
#include "lib/endian.h"
#include "lib/vec.h"
#include "table/fat.h"
#include "volume/volume.h"

/* ---- ownership ----------------------------------------------------------- */

static int is_owned(const struct fk_exfat_check *x, uint32_t clus)
{
	return fk_own_test(&x->map, clus);
}

static void set_owned(struct fk_exfat_check *x, uint32_t clus)
{
	fk_own_set(&x->map, clus);
	x->nowned++;
}

/*
 * Is @clus among the first @n clusters of @s?  Asked only when a claim
 * meets a cluster owned already, to tell a loop from a cross-link.
 */
static int in_stream(struct fk_exfat_check *x, const struct fk_exfat_stream *s,
		     uint32_t n, uint32_t clus, int *err)
{
	int yes;

	*err = 0;
	if (s->is_no_fat_chain)
		return clus >= s->first_clus && clus - s->first_clus < n;
	*err = fk_chain_holds(x->vol, s->first_clus, n, clus, &yes);
	return !*err && yes;
}

static int claim_run(void *arg, const struct fk_run *run)
{
	struct claim *c = arg;
	struct fk_exfat_check *x = c->x;
	uint32_t i, clus;
	int err, is_in;

	for (i = 0; i < run->nclus; i++) {
		clus = run->first + i;
		if ((c->need && c->nclus >= c->need) ||
		    (!c->need && c->nclus >= c->limit)) {
			c->why = FK_CUT_LONG;
			return STOPPED;
		}
		if (is_owned(x, clus)) {
			is_in = in_stream(x, c->s, c->nclus, clus, &err);
			if (err)
				return err;
			c->at = clus;
			c->why = is_in ? FK_CUT_LOOP : FK_CUT_CROSS;
			return STOPPED;
		}
		set_owned(x, clus);
		c->nclus++;
		c->last = clus;
		if (++x->claimed_step % PROGRESS_STEP == 0)
			ck_progress(x->ck, "files", x->nowned, x->g->nclus);
	}
	return 0;
}

/* Keep what @c took for the owner the walk is at (own_kind ...). */
static int log_owner(struct fk_exfat_check *x, struct claim *c)
{
	struct owner_rec r = {
		c->s->first_clus,     c->nclus,
		x->own_parent,	      x->own_name,
		(uint8_t)x->own_kind, (uint8_t)(c->s->is_no_fat_chain != 0)};

	if (x->owners.n == x->owners.cap &&
	    fk_bigmem_grow(&x->owners.v, &x->owners.cap, x->owners.n + 1,
			   sizeof(*x->owners.v)))
		return -ENOMEM;
	c->rec = (uint32_t)x->owners.n;
	x->owners.v[x->owners.n++] = r;
	return 0;
}

/*
 * Claim the clusters of @s: at most @need (0: to the end of its chain,
 * but no more than @limit).  @c says how far it got and why it stopped,
 * and the claim is kept as an owner record.  Returns 0 or -errno.
 */
int exck_claim(struct fk_exfat_check *x, const struct fk_exfat_stream *s,
	       uint64_t need, uint64_t limit, struct claim *c)
{
	int err;

	exck_claim_clear(c);
	c->x = x;
	c->s = s;
	c->need = need;
	c->limit = limit;
	c->rec = NO_REC;
	if (!fk_clus_valid(x->g, s->first_clus)) {
		c->why = FK_CUT_START;
		c->at = s->first_clus;
		return 0;
	}
	err = fk_exfat_stream_walk(x->vol, s, claim_run, c, &c->info);
	if (err < 0)
		return err;
	if (c->nclus && log_owner(x, c))
		return -ENOMEM;
	if (err == STOPPED || c->why != FK_CUT_NONE)
		return 0;
	if (c->info.end == FK_ENT_EOC)
		return 0;
	if (s->is_no_fat_chain) {
		c->why = FK_CUT_HEAP;
		c->at = s->first_clus;
		return 0;
	}
	c->why = FK_CUT_VALUE;
	c->at = c->info.last;
	c->val = c->info.end_val;
	c->cls = c->info.end;
	return 0;
}

/* exck_claim() for the bitmap or the up-case table (see is_special). */
int exck_claim_special(struct fk_exfat_check *x,
		       const struct fk_exfat_stream *s, uint64_t need,
		       struct claim *c)
{
	int err = exck_claim(x, s, need, 0, c);

	c->is_special = 1;
	return err;
}

/* Does the repair end @c's FAT chain at its last claimed cluster? */
int exck_is_fat_cut(const struct claim *c)
{
	return !c->s->is_no_fat_chain && fk_claim_is_cut(&c->cl);
}

/* Remember cross-link finding @idx, so exck_name_owners() can name the first
 * owner of @clus.  0 or -ENOMEM. */
static int note_cross(void *arg, uint32_t clus, size_t idx, const char *later,
		      const char *what)
{
	struct fk_exfat_check *x = arg;
	struct cross cr = {clus, idx, NULL, NO_REC};

	(void)what;
	if (idx == NONE)
		return 0;
	if ((later && !(cr.later = strdup(later))) || PUSH(x->crosses, cr)) {
		free(cr.later);
		return -ENOMEM;
	}
	return 0;
}

/* The FAT entry of @last becomes the end of chain. */
static int plan_end(void *arg, uint32_t last)
{
	struct fk_exfat_check *x = arg;
	struct fk_fat_fix f = {last, fk_fat_eoc(x->g)};

	return PUSH(x->fat_fixes, f);
}

static const struct fk_claim_ops claim_ops = {
	.is_value_judged = 1,
	.cross_with = "another file or directory",
	.long_why = " (exFAT cannot reserve space past it)",
	.dir_max_len = FK_EXFAT_DIR_MAX_LEN,
	.plan_end = plan_end,
	.note_cross = note_cross,
};

/*
 * Report how @c fell short of @what (a stream of @path) and plan the FAT
 * end of chain where it is cut.  Returns the finding or NONE (nothing
 * wrong, or not kept) in *@idx, and 0 or -ENOMEM.
 */
int exck_judge_claim(struct fk_exfat_check *x, const struct claim *c,
		     const char *path, const char *what, size_t *idx)
{
	int err;

	if (fk_claim_is_whole(&c->cl)) {
		*idx = NONE;
		return 0;
	}
	err = fk_claim_report(x->ck, &claim_ops, x, &c->cl, path, what, idx);
	if (err || !exck_is_fat_cut(c) ||
	    (c->is_special && c->why != FK_CUT_LONG))
		return err;
	return fk_claim_end(x->ck, &claim_ops, x, *idx, c->last);
}

/* ---- allocations of the generic templates -------------------------------- */

/* exck_keep_bits() for the entry at @path. */
static int keep_bits_at(struct fk_exfat_check *x, const char *path,
			const char *why)
{
	x->is_tree_incomplete = 1;
	if (x->keep_why)
		return 0;
	if (!(x->keep_path = strdup(path)))
		return -ENOMEM;
	x->keep_why = why;
	return 0;
}

/*
 * Remember that the tree holds something this run cannot attribute (@why,
 * at the current path): then no bitmap bit is cleared (exck_check_bitmap()),
 * since the clusters it would free may be that thing's (fsck.exfat only
 * ever sets bits, for the same reason).  Returns 0 or -ENOMEM.
 */
int exck_keep_bits(struct fk_exfat_check *x, const char *why)
{
	return keep_bits_at(x, exck_cur_path(x), why);
}

/*
 * A late set @s keeps the first @n clusters of its run (none: it is made
 * empty), as finding @idx's fix says; its ValidDataLength no more than
 * that.  The set is sealed and planned by the caller.
 */
static void cut_late_run(struct fk_exfat_check *x, struct fk_exfat_set *s,
			 size_t idx, uint32_t n)
{
	uint64_t len = (uint64_t)n * x->g->clus_len;

	if (n) {
		ck_set_fix(x->ck, idx, "DataLength set to %llu",
			   (unsigned long long)len);
	} else {
		ck_set_fix(x->ck, idx, "file made empty");
		put_le32(&s->raw[1][GEN_FIRST], 0);
		s->raw[1][SE_FLAGS] &= (uint8_t)~FK_EXFAT_GSF_NO_FAT_CHAIN;
	}
	put_u64le(&s->raw[1][GEN_LEN], len);
	if (get_u64le(&s->raw[1][SE_VDL]) > len)
		put_u64le(&s->raw[1][SE_VDL], len);
}

/*
 * A NoFatChain file whose SetChecksum fails (exck_late_claims()): its
 * FirstCluster or DataLength may be the damage, so its run is claimed
 * after every sound stream, and only up to the first cluster one of them
 * owns.  A run that reaches one is cut there (made empty when that is its
 * first cluster), the cross-link names the owner, and the run frees no
 * cluster: what the set held before the damage is kept as lost clusters.
 * Either way the set is written back sealed.  Returns 0 or -errno.
 */
static int claim_damaged(struct fk_exfat_check *x, const struct late_set *l)
{
	struct fk_exfat_set *s = l->set;
	uint64_t need = fk_exfat_clus_needed(x->g, s->data_len);
	struct fk_claim cross = {.why = FK_CUT_CROSS};
	struct fk_exfat_stream st = {s->first_clus, s->data_len, 1};
	struct claim c;
	uint32_t clus, n;
	size_t idx;
	int err;

	/* within the heap: a run past it is LATE_PAST_HEAP's */
	for (clus = st.first_clus, n = 0;
	     n < need && clus <= fk_clus_max(x->g) && !is_owned(x, clus);
	     clus++, n++)
		;
	if (n < need)
		st.data_len = (uint64_t)n * x->g->clus_len;
	if (n && (err = exck_claim(x, &st, n, 0, &c)))
		return err;
	if (n < need) {
		cross.at = clus;
		cross.nclus = n;
		if ((err = fk_claim_report(x->ck, &claim_ops, x, &cross,
					   l->path, "", &idx)) ||
		    (err = keep_bits_at(x, l->path,
					"a set whose SetChecksum fails runs "
					"into another owner")))
			return err;
		cut_late_run(x, s, idx, n);
	}
	exck_reseal(x, s);
	return exck_plan_set(x, s);
}

/*
 * The allocation entry @e describes through the generic template
 * (fk_exfat_entry_alloc(); @flags_off says where its flags are, for the
 * repair), if AllocationPossible is set: a Vendor Allocation secondary (7.9), or any
 * other benign entry, known or not.  What its owner keeps there is not
 * ours to judge, but the clusters are its own: they are claimed as a
 * file's are (FAT chain or NoFatChain per the flags), so no repair frees
 * them and no writer takes them.  A broken chain is cut and DataLength set
 * to what was claimed, as for a file.  Sets *@is_changed when @e changed.
 * Returns 0 or -errno.
 */
int exck_claim_generic(struct fk_exfat_check *x, unsigned char *e,
		       unsigned flags_off, int *is_changed)
{
	const struct fk_geom *g = x->g;
	struct fk_exfat_stream st;
	struct claim c;
	char what[48];
	uint64_t need, new_len;
	size_t idx;
	int err;

	if (!fk_exfat_entry_alloc(e, &st))
		return 0;
	snprintf(what, sizeof(what),
		 "allocation of entry type 0x%02X: ", e[GEN_TYPE]);
	need = fk_exfat_clus_needed(g, st.data_len);
	if (!need) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "long-chain",
				exck_cur_path(x),
				"%sDataLength is 0 but FirstCluster is %u",
				what, st.first_clus);
		ck_set_fix(x->ck, idx, "FirstCluster cleared");
		put_le32(e + GEN_FIRST, 0);
		*is_changed = 1;
		return 0;
	}
	if (!st.first_clus)
		st.first_clus = 1; /* out of range: judged below */
	if ((err = exck_claim(x, &st, need, 0, &c)) ||
	    (err = exck_judge_claim(x, &c, exck_cur_path(x), what, &idx)))
		return err;
	if (c.why == FK_CUT_NONE && c.nclus >= need)
		return 0;
	new_len = (uint64_t)c.nclus * g->clus_len;
	if (new_len > st.data_len)
		new_len = st.data_len;
	if (!c.nclus) {
		ck_set_fix(x->ck, idx, "allocation cleared");
		put_le32(e + GEN_FIRST, 0);
		e[flags_off] &= (uint8_t)~FK_EXFAT_GSF_NO_FAT_CHAIN;
	} else if (new_len != st.data_len) {
		ck_set_fix(x->ck, idx, "%sDataLength set to %llu",
			   exck_is_fat_cut(&c) ? "chain ended, " : "",
			   (unsigned long long)new_len);
	} else {
		return 0;
	}
	put_u64le(e + GEN_LEN, new_len);
	*is_changed = 1;
	return 0;
}

/* ---- NoFatChain runs past the heap -------------------------------------- */

struct bm_find {
	const struct fk_geom *g;
	uint64_t at, done; /* bitmap byte sought; bytes of runs behind */
	uint64_t off;	   /* its volume offset, once found */
};

static int bm_find_run(void *arg, const struct fk_run *run)
{
	struct bm_find *f = arg;
	uint64_t len = (uint64_t)run->nclus * f->g->clus_len;

	if (f->at < f->done + len) {
		f->off = fk_clus_off(f->g, run->first) + (f->at - f->done);
		return STOPPED;
	}
	f->done += len;
	return 0;
}

/*
 * Is @clus marked in the bitmap on disk?  @sec caches one sector of the
 * bitmap, the one starting at bitmap byte *@sec_at (UINT64_MAX: none).
 */
static int bm_bit(struct fk_exfat_check *x, uint32_t clus, unsigned char *sec,
		  uint64_t *sec_at, int *bit)
{
	uint64_t at = fk_exfat_bit_byte(clus);
	uint32_t sec_len = x->g->sec_len;
	struct bm_find f = {x->g, at / sec_len * sec_len, 0, 0};
	struct fk_chain_info info;
	int err;

	*bit = 0;
	if (*sec_at != f.at) {
		err = fk_exfat_stream_walk(x->vol, &x->bm_stream, bm_find_run,
					   &f, &info);
		if (err < 0)
			return err;
		if (err != STOPPED)
			return 0; /* the bitmap's chain ends short: "free" */
		if ((err = fk_device_read(x->vol->dev, f.off, sec, sec_len)))
			return err;
		*sec_at = f.at;
	}
	*bit = (sec[at - *sec_at] & fk_exfat_bit_mask(clus)) != 0;
	return 0;
}

/*
 * Claim the tails of struct late_tail, every sound stream being claimed.
 * A tail nothing else owns stays whole, whatever the bitmap says: it may
 * be a recording whose bits were lost, and keeping it takes nothing from
 * anyone (the bitmap gets its bits).  One that runs into another stream
 * was grown by damage: it ends at the first cluster the bitmap marks
 * free or another stream owns, and DataLength with it.
 */
static int claim_nfc_tails(struct fk_exfat_check *x, unsigned char *sec)
{
	const struct fk_geom *g = x->g;
	uint64_t sec_at = UINT64_MAX, new_len, vdl;
	struct fk_exfat_stream st;
	struct claim c;
	uint32_t clus, end, n;
	size_t i, idx;
	int err = 0, bit;

	for (i = 0; i < x->nfc_tails.n; i++) {
		const struct late_tail *t = &x->nfc_tails.v[i];
		const struct owner_rec *o = &x->owners.v[t->rec];
		struct set_fix *f = &x->set_fixes.v[t->fix];

		st.first_clus = o->first + o->nclus;
		st.is_no_fat_chain = 1;
		end = o->first + t->need;
		bit = 1;
		for (clus = st.first_clus; clus < end && !is_owned(x, clus);
		     clus++)
			;
		if (clus < end && x->has_bitmap) {
			for (clus = st.first_clus;
			     clus < end && !is_owned(x, clus); clus++) {
				if ((err = bm_bit(x, clus, sec, &sec_at, &bit)))
					return err;
				if (!bit)
					break;
			}
		}
		n = clus - st.first_clus;
		st.data_len = (uint64_t)n * g->clus_len;
		x->own_kind = OWN_ENTRY;
		x->own_parent = o->parent;
		x->own_name = o->name;
		if (n && (err = exck_claim(x, &st, n, 0, &c)))
			return err;
		if (clus == end)
			continue;
		o = &x->owners.v[t->rec]; /* exck_claim() may have moved it */
		new_len = (uint64_t)(o->nclus + n) * g->clus_len;
		idx = ck_report(
			x->ck, FK_SEV_ERROR, "past-clusters", t->path,
			"DataLength %llu reaches past the file's own "
			"contiguous clusters: cluster %u is %s",
			(unsigned long long)get_u64le(&f->raw[1][GEN_LEN]),
			clus,
			!bit ? "marked free in the allocation bitmap"
			     : "owned by another file or directory");
		ck_set_fix(x->ck, idx, "DataLength set to %llu",
			   (unsigned long long)new_len);
		put_u64le(&f->raw[1][GEN_LEN], new_len);
		vdl = get_u64le(&f->raw[1][SE_VDL]);
		if (vdl > new_len)
			put_u64le(&f->raw[1][SE_VDL], new_len);
		put_le16(&f->raw[0][GEN_CHECKSUM],
			 fk_exfat_set_checksum(
				 (const unsigned char(*)[FK_EXFAT_ENT_LEN])
					 f->raw,
				 f->nents));
		f->is_idle = 0;
		x->st->has_repairs = 1;
	}
	return 0;
}

/*
 * Claim the runs of struct late_set, every sound stream being claimed:
 * each keeps its clusters up to the first one owned already or marked
 * free in the bitmap, and its DataLength is cut to them.
 */
int exck_late_claims(struct fk_exfat_check *x)
{
	const struct fk_geom *g = x->g;
	uint32_t max = fk_clus_max(g), clus, n;
	uint64_t sec_at = UINT64_MAX, new_len;
	unsigned char *sec = NULL;
	struct fk_claim heap = {.why = FK_CUT_HEAP};
	struct fk_exfat_stream st;
	struct claim c;
	size_t i, idx;
	int err = 0, bit;

	if ((x->late.n || x->nfc_tails.n) && !(sec = malloc(g->sec_len)))
		return -ENOMEM;
	if ((err = claim_nfc_tails(x, sec)))
		goto out;
	for (i = 0; i < x->late.n && !err; i++) {
		struct fk_exfat_set *s = x->late.v[i].set;

		x->own_kind = OWN_ENTRY;
		x->own_parent = x->late.v[i].own_parent;
		x->own_name = x->late.v[i].own_name;
		if (x->late.v[i].why == LATE_DAMAGED) {
			err = claim_damaged(x, &x->late.v[i]);
			continue;
		}
		st.first_clus = s->first_clus;
		st.is_no_fat_chain = 1;
		for (clus = st.first_clus, n = 0;
		     clus <= max && !is_owned(x, clus); clus++, n++) {
			if (!x->has_bitmap)
				continue;
			if ((err = bm_bit(x, clus, sec, &sec_at, &bit)))
				goto out;
			if (!bit)
				break;
		}
		new_len = (uint64_t)n * g->clus_len;
		st.data_len = new_len;
		if (n && (err = exck_claim(x, &st, n, 0, &c)))
			goto out;
		heap.at = s->first_clus;
		if ((err = fk_claim_report(x->ck, &claim_ops, x, &heap,
					   x->late.v[i].path, "", &idx)))
			goto out;
		cut_late_run(x, s, idx, n);
		exck_reseal(x, s);
		err = exck_plan_set(x, s);
	}
out:
	free(sec);
	return err;
}
