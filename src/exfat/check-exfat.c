/*
 * check-exfat.c: the checker's exFAT family.  The boot regions are judged
 * from the defects exfat.c records; a walk of the directory tree then
 * claims every stream (allocation bitmap, up-case table, directories,
 * files) in an ownership map of one bit per cluster, so a loop or a
 * second owner shows at the first shared cluster; the allocation bitmap
 * (one more bit per cluster) is then compared with that map both ways.
 * Two bits per cluster in all, plus one entry set per level of nesting,
 * and a record of each claim (20 bytes, and each entry's name once) so
 * that findings can name the files that own the clusters they are about.
 *
 * Repairs are planned while checking as small records (FAT links to end,
 * entry sets to rewrite whole) and applied by fk_check_repair() in the
 * order exFAT asks for: VolumeDirty set first; FAT links; bitmap bits a
 * used cluster lacks; entry sets; bitmap bits nobody owns any more;
 * boot region and PercentInUse; fsync; VolumeDirty cleared; fsync.  A
 * crash anywhere leaves at worst bits set for clusters nobody owns, a
 * chain shorter than its DataLength, or a stale checksum: all of which a
 * second run repairs, and none of which hides or damages a file.
 */
#include "iface/check-family.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"
#include "fat/dir.h"
#include "io/cache.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "lib/vec.h"
#include "table/fat.h"
#include "volume/family.h"
#include "volume/volume.h"

#define STOPPED	      1		 /* a claim walk stopped on purpose */
#define PROGRESS_STEP (1u << 16) /* clusters between progress calls */
#define NO_REC	      UINT32_MAX /* no owner record */
#define OWNERS_LISTED 3		 /* owners a bitmap finding names */
#define MISS_RUNS_MAX (1u << 16) /* runs of clusters marked free kept */

/* Boot sector fields the repairs write (spec 3.1). */
#define BS_VOL_FLAGS 106
#define BS_PERCENT   112

#define LIST(type, name)                                                       \
	struct {                                                               \
		type *v;                                                       \
		size_t n, cap;                                                 \
	} name

#define PUSH(list, item)                                                       \
	(FK_VEC_RESERVE((list).v, (list).cap, (list).n + 1)                    \
		 ? -ENOMEM                                                     \
		 : ((list).v[(list).n++] = (item), 0))

struct fat_fix {
	uint32_t clus, val;
};

/* Who a claim was made for (struct owner_rec). */
enum own_kind {
	OWN_ENTRY,  /* a file or directory: its name, in its directory */
	OWN_ROOT,   /* the root directory */
	OWN_BITMAP, /* an allocation bitmap */
	OWN_UPCASE, /* the up-case table */
	OWN_OTHER,  /* an allocation of a set with no name, in a directory */
};

/*
 * What one claim took, and for whom: following @nclus clusters from
 * @first (one run with NoFatChain) visits exactly them again, so the
 * owner of a cluster is found later without a second walk of the tree.
 */
struct owner_rec {
	uint32_t first, nclus;
	uint32_t parent; /* the record of the directory holding the owner's
			    entry; NO_REC: the root */
	uint32_t name;	 /* OWN_ENTRY: its name's offset in names */
	uint8_t kind;	 /* enum own_kind */
	uint8_t is_no_fat_chain;
};

/* A run of clusters in use that the bitmap marks free. */
struct miss_run {
	uint32_t first, n;
};

/* A cross-link finding, whose first owner is named after the walk. */
struct cross {
	uint32_t clus;
	size_t finding;
	char *later;	/* the path of the later owner; NULL: none */
	uint32_t owner; /* the record holding @clus; NO_REC: not found */
};

/* An entry set rewritten whole: where each entry is, what it becomes. */
struct set_fix {
	int is_idle; /* not to be written (yet): see struct late_tail */
	uint32_t nents;
	uint64_t *off;
	unsigned char (*raw)[FK_EXFAT_ENT_LEN];
};

/*
 * A file's NoFatChain run whose DataLength reaches past the heap: that
 * length is known false, so the run is claimed only after every sound
 * stream (exck_late_claims()), and only as far as its clusters are free of
 * other owners and marked in the bitmap.
 */
struct late_set {
	struct fk_exfat_set *set; /* as planned by exck_check_file() */
	char *path;
	uint32_t own_parent, own_name; /* its owner record's, to be */
};

/*
 * A directory read up to its end marker, with entries after it left
 * unread: exck_walk_tails() reads them when there is a reason to.
 */
struct tail {
	struct fk_exfat_stream s; /* first_clus 0: the root */
	uint32_t nclus;		  /* clusters claimed, as exck_walk_dir() had */
	struct fk_exfat_dir_mark m;
	char *path;
};

/*
 * The tail of a file's NoFatChain run past its ValidDataLength, claimed
 * after every sound stream too (claim_nfc_tails()): a run has no chain to
 * say where it ends, and a DataLength grown by damage reaches over the
 * files behind it, which must keep their clusters.  The written part, up
 * to ValidDataLength (at least the first cluster), is claimed in the walk
 * like any other stream.  Kept small (a card may hold thousands): the
 * set is planned at once, idle unless the tail is cut.
 */
struct late_tail {
	uint32_t rec;  /* the owner record of the part claimed in the walk */
	uint32_t need; /* clusters its DataLength asks for */
	size_t fix;    /* its struct set_fix */
};

/* Why a claim stopped short of the stream's whole length. */
enum cut {
	CUT_NONE,  /* claimed it all (or the chain ended: see nclus) */
	CUT_START, /* FirstCluster out of range */
	CUT_LINK,  /* a free, bad, reserved or out-of-range link */
	CUT_LOOP,  /* the chain runs into itself */
	CUT_CROSS, /* the chain runs into another stream's cluster */
	CUT_LONG,  /* more clusters than DataLength needs */
	CUT_HEAP,  /* a NoFatChain run past the heap */
};

struct claim {
	struct fk_exfat_check *x;
	const struct fk_exfat_stream *s;
	uint64_t need;	/* clusters wanted; 0: up to the end of chain */
	uint64_t limit; /* most clusters accepted without a length */
	uint32_t nclus; /* claimed */
	uint32_t last;	/* last cluster claimed; 0: none */
	uint32_t at;	/* the cluster a loop or cross-link reached */
	uint32_t rec;	/* its struct owner_rec; NO_REC: none */
	enum cut why;
	int is_special; /* the bitmap or up-case table: a broken chain is
			   left as it is (ending it makes it no more usable,
			   only shorter); one too long is ended */
	struct fk_chain_info info;
};

struct name_set;

struct fk_exfat_check {
	struct fk_volume *vol;
	const struct fk_geom *g;
	const struct fk_exfat *ex;
	struct fk_check_opts o;
	struct fk_check *ck;	   /* where findings are recorded */
	struct fk_check_stats *st; /* ck's counts */
	LIST(struct fat_fix, fat_fixes);
	LIST(struct set_fix, set_fixes);
	LIST(struct late_set, late);
	LIST(struct late_tail, nfc_tails);
	LIST(struct tail, tails);
	uint8_t *own; /* one bit per data cluster: bit (clus - 2) % 8 of
			 byte (clus - 2) / 8, the bitmap's own layout */
	uint32_t nowned;
	uint64_t claimed_step; /* for progress */
	/* who owns what: a record per claim, the names of the entries
	   claimed for, and who the next claim is for */
	LIST(struct owner_rec, owners);
	LIST(char, names);
	uint32_t own_parent, own_name;
	enum own_kind own_kind;
	LIST(struct cross, crosses);
	LIST(struct miss_run, misses); /* in cluster order */
	int is_miss_cut;	       /* more runs than were kept */
	size_t miss_find;	       /* the bitmap-free finding */
	/* one entry set per level of nesting, allocated as needed */
	struct fk_exfat_set *sets[FK_CHECK_MAX_DEPTH + 1];
	/* and one table of names (struct name_set), kept from one directory
	   to the next at that level, so that its slots are not grown anew
	   for each */
	struct name_set *dir_names[FK_CHECK_MAX_DEPTH + 1];
	/* bytes of its first cluster the last directory walked needed */
	uint32_t piece_hint;
	char *path;
	size_t path_len, path_cap;
	int is_tree_incomplete; /* then never free bitmap bits */
	const char *keep_why;	/* the first reason for it, at keep_path */
	char *keep_path;
	/* the allocation bitmap (the active one of TexFAT's two) */
	int has_bitmap;
	uint32_t nbitmaps_seen; /* bitmap entries met in the root so far */
	struct fk_exfat_stream bm_stream; /* its clusters, for writing */
	uint64_t bm_need_len;		  /* ceil(ClusterCount / 8) */
	uint32_t bm_nused;		  /* bits set on disk */
	int is_bm_read;			  /* the bitmap could be read */
	int fix_bits_set, fix_bits_clear;
	/* boot region */
	unsigned char *sec0; /* main boot sector as read */
	unsigned char *backup;
	struct fk_exfat_boot boot; /* both regions as judged by this check */
	int restore_main, fix_main_csum, fix_backup;
	int fix_percent;
	uint8_t percent_want;
	int has_upcase, has_label;
	/* the up-case table as loaded by this check */
	int is_upcase_loaded;
	uint32_t upcase_csum; /* computed over the table on disk */
	uint32_t upcase_nfix; /* ASCII units it maps wrongly */
	uint32_t upcase_bad_at, upcase_bad_val; /* the first of them */
	unsigned char *upcase_raw; /* the mended table, when nfix */
	uint64_t upcase_len;
	struct fk_exfat_stream upcase_stream;
	uint32_t upcase_csum_fixed; /* computed over the mended table */
	int fix_upcase_table;
};

static void put_u64le(unsigned char *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t get_u64le(const unsigned char *p)
{
	return (uint64_t)get_le32(p + 4) << 32 | get_le32(p);
}

/* ---- paths --------------------------------------------------------------- */

static const char *exck_cur_path(const struct fk_exfat_check *x)
{
	return x->path_len ? x->path : "/";
}

static int exck_push_name(struct fk_exfat_check *x, const char *name,
			  size_t *old)
{
	size_t len = strlen(name);

	if (FK_VEC_RESERVE(x->path, x->path_cap, x->path_len + len + 2))
		return -ENOMEM;
	*old = x->path_len;
	x->path[x->path_len++] = '/';
	memcpy(x->path + x->path_len, name, len + 1);
	x->path_len += len;
	return 0;
}

static void exck_pop_name(struct fk_exfat_check *x, size_t old)
{
	x->path_len = old;
	if (x->path)
		x->path[old] = '\0';
}

/* The next claims are for the entry @name of the directory walked. */
static int exck_own_entry(struct fk_exfat_check *x, const char *name)
{
	size_t len = strlen(name) + 1;

	if (x->names.n + len > NO_REC ||
	    FK_VEC_RESERVE(x->names.v, x->names.cap, x->names.n + len))
		return -ENOMEM;
	memcpy(x->names.v + x->names.n, name, len);
	x->own_kind = OWN_ENTRY;
	x->own_name = (uint32_t)x->names.n;
	x->names.n += len;
	return 0;
}

/* ---- ownership ----------------------------------------------------------- */

static int is_owned(const struct fk_exfat_check *x, uint32_t clus)
{
	uint32_t i = clus - FK_FIRST_CLUS;

	return x->own[i / 8] >> (i % 8) & 1;
}

static void set_owned(struct fk_exfat_check *x, uint32_t clus)
{
	uint32_t i = clus - FK_FIRST_CLUS;

	x->own[i / 8] |= (uint8_t)(1u << (i % 8));
	x->nowned++;
}

/*
 * Is @clus among the first @n clusters of @s?  Asked only when a claim
 * meets a cluster owned already, to tell a loop from a cross-link.
 */
static int in_stream(struct fk_exfat_check *x, const struct fk_exfat_stream *s,
		     uint32_t n, uint32_t clus, int *err)
{
	uint32_t c = s->first_clus, i, val;

	*err = 0;
	if (s->is_no_fat_chain)
		return clus >= c && clus - c < n;
	for (i = 0; i < n && fk_clus_valid(x->g, c); i++) {
		if (c == clus)
			return 1;
		if ((*err = fk_fat_get(x->vol, c, &val)))
			return 0;
		c = val;
	}
	return 0;
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
			c->why = CUT_LONG;
			return STOPPED;
		}
		if (is_owned(x, clus)) {
			is_in = in_stream(x, c->s, c->nclus, clus, &err);
			if (err)
				return err;
			c->at = clus;
			c->why = is_in ? CUT_LOOP : CUT_CROSS;
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

	c->rec = (uint32_t)x->owners.n;
	return PUSH(x->owners, r);
}

/*
 * Claim the clusters of @s: at most @need (0: to the end of its chain,
 * but no more than @limit).  @c says how far it got and why it stopped,
 * and the claim is kept as an owner record.  Returns 0 or -errno.
 */
static int exck_claim(struct fk_exfat_check *x, const struct fk_exfat_stream *s,
		      uint64_t need, uint64_t limit, struct claim *c)
{
	int err;

	memset(c, 0, sizeof(*c));
	c->x = x;
	c->s = s;
	c->need = need;
	c->limit = limit;
	c->rec = NO_REC;
	if (!fk_clus_valid(x->g, s->first_clus)) {
		c->why = CUT_START;
		return 0;
	}
	err = fk_exfat_stream_walk(x->vol, s, claim_run, c, &c->info);
	if (err < 0)
		return err;
	if (c->nclus && log_owner(x, c))
		return -ENOMEM;
	if (err == STOPPED || c->why != CUT_NONE)
		return 0;
	if (c->info.end == FK_ENT_EOC)
		return 0;
	c->why = s->is_no_fat_chain ? CUT_HEAP : CUT_LINK;
	return 0;
}

/* exck_claim() for the bitmap or the up-case table (see is_special). */
static int exck_claim_special(struct fk_exfat_check *x,
			      const struct fk_exfat_stream *s, uint64_t need,
			      struct claim *c)
{
	int err = exck_claim(x, s, need, 0, c);

	c->is_special = 1;
	return err;
}

/* Does the repair end @c's FAT chain at its last claimed cluster? */
static int exck_is_fat_cut(const struct claim *c)
{
	return !c->s->is_no_fat_chain && c->nclus &&
	       (c->why == CUT_LINK || c->why == CUT_LOOP ||
		c->why == CUT_CROSS || c->why == CUT_LONG);
}

/* Remember cross-link finding @idx, so exck_name_owners() can name the first
 * owner of @clus.  0 or -ENOMEM. */
static int note_cross(struct fk_exfat_check *x, uint32_t clus, size_t idx,
		      const char *later)
{
	struct cross cr = {clus, idx, NULL, NO_REC};

	if (idx == NONE)
		return 0;
	if ((later && !(cr.later = strdup(later))) || PUSH(x->crosses, cr)) {
		free(cr.later);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Report how @c fell short of @what (a stream of @path) and plan the FAT
 * end of chain where it is cut.  Returns the finding or NONE (nothing
 * wrong, or not kept) in *@idx, and 0 or -ENOMEM.
 */
static int exck_judge_claim(struct fk_exfat_check *x, const struct claim *c,
			    const char *path, const char *what, size_t *idx)
{
	const struct fk_exfat_stream *s = c->s;
	uint32_t max = fk_clus_max(x->g);
	struct fat_fix f;

	*idx = NONE;
	switch (c->why) {
	case CUT_NONE:
		if (!c->need || c->nclus >= c->need)
			return 0;
		*idx = ck_report(x->ck, FK_SEV_ERROR, "short-chain", path,
				 "%scluster chain of %u cluster%s is shorter "
				 "than the %llu its length needs",
				 what, c->nclus, ck_plural(c->nclus),
				 (unsigned long long)c->need);
		return 0;
	case CUT_START:
		*idx = ck_report(x->ck, FK_SEV_ERROR, "bad-start", path,
				 "%sfirst cluster %u is out of range (2 to %u)",
				 what, s->first_clus, max);
		return 0;
	case CUT_LINK:
		*idx = ck_report(
			x->ck, FK_SEV_ERROR, "bad-link", path,
			"%scluster %u links to %s 0x%X", what, c->info.last,
			c->info.end == FK_ENT_FREE  ? "a free entry"
			: c->info.end == FK_ENT_BAD ? "a bad cluster"
						    : "the invalid value",
			c->info.end_val);
		break;
	case CUT_LOOP:
		*idx = ck_report(x->ck, FK_SEV_ERROR, "loop", path,
				 "%scluster chain loops: cluster %u links back "
				 "to %u",
				 what, c->last, c->at);
		break;
	case CUT_CROSS:
		*idx = ck_report(x->ck, FK_SEV_ERROR, "cross-link", path,
				 "%sshares cluster %u with another file or "
				 "directory",
				 what, c->at);
		if (note_cross(x, c->at, *idx, path))
			return -ENOMEM;
		break;
	case CUT_LONG:
		if (c->need)
			*idx = ck_report(
				x->ck, FK_SEV_ERROR, "long-chain", path,
				"%scluster chain is longer than the %llu "
				"cluster%s its length needs (exFAT "
				"cannot reserve space past it)",
				what, (unsigned long long)c->need,
				ck_plural(c->need));
		else
			*idx = ck_report(x->ck, FK_SEV_ERROR, "dir-size", path,
					 "%sdirectory is over %u MiB", what,
					 FK_EXFAT_DIR_MAX_LEN >> 20);
		break;
	case CUT_HEAP:
		*idx = ck_report(x->ck, FK_SEV_ERROR, "past-heap", path,
				 "%scontiguous run from cluster %u runs past "
				 "the last cluster %u",
				 what, s->first_clus, max);
		return 0;
	}
	if (!exck_is_fat_cut(c) || (c->is_special && c->why != CUT_LONG))
		return 0;
	ck_set_fix(x->ck, *idx, "chain ended at cluster %u", c->last);
	f.clus = c->last;
	f.val = FK_EXFAT_EOC;
	return PUSH(x->fat_fixes, f);
}

/* ---- allocations of the generic templates -------------------------------- */

/*
 * Remember that the tree holds something this run cannot attribute (@why,
 * at the current path): then no bitmap bit is cleared (exck_check_bitmap()),
 * since the clusters it would free may be that thing's (fsck.exfat only
 * ever sets bits, for the same reason).  Returns 0 or -ENOMEM.
 */
static int exck_keep_bits(struct fk_exfat_check *x, const char *why)
{
	x->is_tree_incomplete = 1;
	if (x->keep_why)
		return 0;
	if (!(x->keep_path = strdup(exck_cur_path(x))))
		return -ENOMEM;
	x->keep_why = why;
	return 0;
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
static int claim_generic(struct fk_exfat_check *x, unsigned char *e,
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
	if (c.why == CUT_NONE && c.nclus >= need)
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

/*
 * The allocations of @s's secondaries other than the Stream Extension and
 * the File Name entries, whose bytes 20 to 31 are something else.
 */
static int claim_secondaries(struct fk_exfat_check *x, struct fk_exfat_set *s,
			     int *is_changed)
{
	uint32_t i;
	int err;

	for (i = 1; i < s->nents; i++) {
		unsigned char *e = s->raw[i];

		if (!(e[GEN_TYPE] & FK_EXFAT_BENIGN))
			continue; /* stream, name, or a set removed anyway */
		if ((err = claim_generic(x, e, GEN_SFLAGS, is_changed)))
			return err;
	}
	return 0;
}

static int exck_plan_set(struct fk_exfat_check *x,
			 const struct fk_exfat_set *s);
static void exck_delete_set(struct fk_exfat_set *s);

/*
 * A benign primary's set (TexFAT padding, a vendor's...): its allocations.
 * A damaged one (fk_exfat_set_damage(), the judgement the writer refuses
 * a directory by) is reported as a file's set would be: one cut short
 * claims the sets after it, and is removed with its clusters kept; a bad
 * SetChecksum is rewritten.
 */
static int exck_check_benign(struct fk_exfat_check *x, struct fk_exfat_set *s)
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
	if ((err = claim_generic(x, s->raw[0], GEN_PFLAGS, &is_changed)) ||
	    (err = claim_secondaries(x, s, &is_changed)))
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
static int exck_may_hold_clusters(const struct fk_exfat_set *s, uint32_t from)
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

/* ---- entry sets ---------------------------------------------------------- */

/* Mark every entry of @s unused, keeping 0x00 (end of directory) away. */
static void exck_delete_set(struct fk_exfat_set *s)
{
	uint32_t i;

	for (i = 0; i < s->nents; i++) {
		uint8_t t = s->raw[i][GEN_TYPE] & 0x7F;

		s->raw[i][GEN_TYPE] = t ? t : 0x01;
	}
}

/* Keep @s as it now is in the list of sets to rewrite. */
static int exck_plan_set(struct fk_exfat_check *x, const struct fk_exfat_set *s)
{
	struct set_fix f;

	f.is_idle = 0;
	f.nents = s->nents;
	f.off = calloc(s->nents, sizeof(*f.off));
	f.raw = calloc(s->nents, sizeof(*f.raw));
	if (!f.off || !f.raw || PUSH(x->set_fixes, f)) {
		free(f.off);
		free(f.raw);
		return -ENOMEM;
	}
	memcpy(f.off, s->off, s->nents * sizeof(*f.off));
	memcpy(f.raw, s->raw, s->nents * sizeof(*f.raw));
	return 0;
}

static uint16_t name_unit(const struct fk_exfat_set *s, uint32_t i)
{
	return get_le16(&s->raw[2 + i / FN_UNITS][FN_NAME + i % FN_UNITS * 2]);
}

static void put_name_unit(struct fk_exfat_set *s, uint32_t i, uint16_t u)
{
	put_le16(&s->raw[2 + i / FN_UNITS][FN_NAME + i % FN_UNITS * 2], u);
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

/* A 64-bit hash of the @n units @u, up-cased. */
static uint64_t name_key(const struct fk_exfat_upcase *up, const uint16_t *u,
			 uint32_t n)
{
	uint64_t h = 14695981039346656037ull ^ n, w = 0;
	uint32_t i;

	/* Four units to a multiply: names are hashed once per entry. */
	for (i = 0; i < n; i++) {
		w = w << 16 | fk_exfat_upcase(up, u[i]);
		if (i % 4 == 3) {
			h = (h ^ w) * 0x100000001B3ull;
			h ^= h >> 29;
			w = 0;
		}
	}
	h = (h ^ w) * 0x100000001B3ull;
	return h ^ h >> 32;
}

/*
 * The names met in the directory being walked, for duplicates: an open
 * addressing set of 64-bit hashes of the up-cased names (0 stands for
 * an empty slot, so a name hashing to 0 is stored as 1).  Equal hashes
 * are only a hint: each slot also points into @text, where the name's
 * length and units are kept, and names are compared there.  @text grows
 * with the names of one directory, so with the directory's size.
 */
struct name_set {
	uint64_t *v;
	size_t *at;    /* per slot: offset of the name's length unit in text */
	size_t n, cap; /* cap: a power of two, or 0 */
	uint16_t *text;
	size_t text_len, text_cap;
};

static int has_name(const struct name_set *ns, const struct fk_exfat_upcase *up,
		    uint64_t key, const uint16_t *u, uint32_t n)
{
	size_t i;

	if (!ns->cap)
		return 0;
	key = key ? key : 1;
	for (i = (size_t)key & (ns->cap - 1); ns->v[i];
	     i = (i + 1) & (ns->cap - 1)) {
		const uint16_t *t = &ns->text[ns->at[i]];

		if (ns->v[i] == key &&
		    !fk_exfat_name_cmp(up, t + 1, t[0], u, n))
			return 1;
	}
	return 0;
}

static void put_slot(struct name_set *ns, uint64_t key, size_t at)
{
	size_t i;

	for (i = (size_t)key & (ns->cap - 1); ns->v[i];
	     i = (i + 1) & (ns->cap - 1))
		;
	ns->v[i] = key;
	ns->at[i] = at;
	ns->n++;
}

/* Add the name @u of @n units, unless an equal one is there already. */
static int add_name(struct name_set *ns, const struct fk_exfat_upcase *up,
		    uint64_t key, const uint16_t *u, uint32_t n)
{
	uint16_t *dst;
	uint32_t k;

	if (has_name(ns, up, key, u, n))
		return 0;
	key = key ? key : 1;
	if (2 * (ns->n + 1) > ns->cap) {
		struct name_set big = *ns;
		size_t i;

		big.cap = ns->cap ? 2 * ns->cap : 64;
		big.n = 0;
		big.v = calloc(big.cap, sizeof(*big.v));
		big.at = malloc(big.cap * sizeof(*big.at));
		if (!big.v || !big.at) {
			free(big.v);
			free(big.at);
			return -ENOMEM;
		}
		for (i = 0; i < ns->cap; i++)
			if (ns->v[i])
				put_slot(&big, ns->v[i], ns->at[i]);
		free(ns->v);
		free(ns->at);
		*ns = big;
	}
	if (ns->text_cap - ns->text_len < (size_t)n + 1) {
		size_t cap = ns->text_cap ? 2 * ns->text_cap : 1024;
		uint16_t *t;

		while (cap - ns->text_len < (size_t)n + 1)
			cap *= 2;
		if (!(t = realloc(ns->text, cap * sizeof(*t))))
			return -ENOMEM;
		ns->text = t;
		ns->text_cap = cap;
	}
	put_slot(ns, key, ns->text_len);
	dst = &ns->text[ns->text_len];
	dst[0] = (uint16_t)n;
	/* A loop: names are short, and memcpy of a length known only here
	 * is a string instruction with a start-up cost of its own. */
	for (k = 0; k < n; k++)
		dst[k + 1] = u[k];
	ns->text_len += (size_t)n + 1;
	return 0;
}

static void exck_free_names(struct name_set *ns)
{
	if (!ns)
		return;
	free(ns->v);
	free(ns->at);
	free(ns->text);
	free(ns);
}

/*
 * Empty @ns for the next directory at its level.  Clearing costs its
 * capacity, so a table much larger than the directory just walked
 * needed (one huge directory among many small ones) is let go instead.
 */
static void exck_clear_names(struct name_set *ns)
{
	if (ns->cap > 1024 && ns->cap > 8 * ns->n) {
		free(ns->v);
		free(ns->at);
		ns->v = NULL;
		ns->at = NULL;
		ns->cap = 0;
	} else if (ns->cap) {
		memset(ns->v, 0, ns->cap * sizeof(*ns->v));
	}
	if (ns->text_cap > 65536 && ns->text_cap > 16 * ns->text_len) {
		free(ns->text);
		ns->text = NULL;
		ns->text_cap = 0;
	}
	ns->n = 0;
	ns->text_len = 0;
}

/* Recompute NameHash and SetChecksum of a file set being rewritten. */
static void exck_reseal(const struct fk_exfat_check *x, struct fk_exfat_set *s)
{
	uint16_t units[FK_EXFAT_NAME_MAX];
	uint32_t i, n = s->raw[1][SE_NAME_LEN];

	for (i = 0; i < n; i++)
		units[i] = name_unit(s, i);
	put_le16(&s->raw[1][SE_NAME_HASH],
		 fk_exfat_name_hash(x->ex->upcase, units, n));
	put_le16(&s->raw[0][GEN_CHECKSUM],
		 fk_exfat_set_checksum((const unsigned char(*)[32])s->raw,
				       s->nents));
}

struct dirwalk {
	struct name_set *names;
	int depth;
};

static int exck_walk_dir(struct fk_exfat_check *x,
			 const struct fk_exfat_stream *s, uint32_t nclus,
			 int depth, struct fk_diag *diag);

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
		*key = name_key(x->ex->upcase, u, n);
		if (!has_name(w->names, x->ex->upcase, *key, u, n)) {
			put_name_unit(s, 0, u[0]);
			return 1;
		}
	}
	u[0] = first;
	*key = name_key(x->ex->upcase, u, n);
	return 0;
}

/* Keep @s (a file, at the current path) for exck_late_claims(). */
static int add_late(struct fk_exfat_check *x, const struct fk_exfat_set *s)
{
	struct late_set l;

	l.set = malloc(sizeof(*l.set));
	l.path = strdup(exck_cur_path(x));
	l.own_parent = x->own_parent;
	l.own_name = x->own_name;
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
	struct late_tail t = {c->rec, (uint32_t)need, x->set_fixes.n - 1};

	x->set_fixes.v[t.fix].is_idle = !is_changed;
	return PUSH(x->nfc_tails, t);
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

/*
 * A file or directory set being judged (exck_check_file()): what the parts of
 * the judgement share, in the order they fill it.
 */
struct file_check {
	struct fk_exfat_set *s;
	int is_dir;
	const char *what;	   /* "directory: " or "" */
	struct fk_exfat_stream st; /* the stream as the repair leaves it */
	struct claim c;		   /* its claim: nclus 0 and CUT_NONE until
				      exck_claim() fills it */
	uint64_t need;		   /* clusters its DataLength needs */
	uint64_t new_len;	   /* its DataLength after the repair */
	uint64_t big_len; /* a directory run's length cut to whole clusters;
			     0: none */
	int is_changed, is_gone, is_late, is_tail;
};

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

/* The set's own fields: SetChecksum, the name, NameHash, and whether
 * AllocationPossible agrees with FirstCluster. */
static int judge_fields(struct fk_exfat_check *x, struct file_check *f)
{
	struct fk_exfat_set *s = f->s;
	size_t idx;
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
		idx = ck_report(x->ck, FK_SEV_ERROR, "name-hash",
				exck_cur_path(x),
				"NameHash 0x%04X, computed 0x%04X",
				s->hash_stored, s->hash_computed);
		ck_set_fix(x->ck, idx, "hash rewritten");
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
		}
		f->is_changed = 1;
	}
	return 0;
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
		 * which may be the next file's. */
		f->need = s->data_len / g->clus_len;
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
	if (head < f->need && c->why == CUT_NONE && c->nclus == head) {
		f->is_tail = 1;
	} else if (c->why != CUT_NONE || c->nclus < f->need ||
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
		f->is_late = 1; /* claimed last: see struct late_set */
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

	if (f->big_len && c->why == CUT_NONE && c->nclus == f->need)
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
			ck_set_fix(x->ck, idx, "ValidDataLength set to %llu",
				   (unsigned long long)f->new_len);
		}
		put_u64le(&s->raw[1][SE_VDL],
			  f->is_dir || s->valid_len > f->new_len
				  ? f->new_len
				  : s->valid_len);
		f->is_changed = 1;
	}
	if (f->is_dir && f->st.first_clus &&
	    (c->why == CUT_START || c->why == CUT_LINK || c->why == CUT_CROSS ||
	     (c->why == CUT_NONE && c->nclus < f->need)) &&
	    (err = exck_keep_bits(x, "a directory cannot be read to its end")))
		return err;
	return claim_secondaries(x, s, &f->is_changed);
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

	units = name_units(s, nlen, f->is_changed, buf);
	key = name_key(x->ex->upcase, units, nlen);
	if (has_name(w->names, x->ex->upcase, key, units, nlen)) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "duplicate",
				exck_cur_path(x),
				"another entry of the directory has the same "
				"name (compared through the up-case table)");
		/* rename_dup() tries other first units in a copy */
		units = name_units(s, nlen, 1, buf);
		if (rename_dup(x, s, w, units, &key)) {
			ck_set_fix(x->ck, idx, "renamed");
			f->is_changed = 1;
		}
	}
	return add_name(w->names, x->ex->upcase, key, units, nlen);
}

/* List the file, plan its set's rewrite, walk it if it is a directory. */
static int finish_file(struct fk_exfat_check *x, const struct dirwalk *w,
		       struct file_check *f, struct fk_diag *diag)
{
	struct fk_exfat_set *s = f->s;
	int err = 0;

	/* a tail is listed whole: it is, unless claim_nfc_tails() cuts it */
	visit(x, s, f->is_tail ? (uint32_t)f->need : f->c.nclus);
	if (f->is_late) {
		err = add_late(x, s);
	} else if (f->is_changed || f->is_tail) {
		if (f->is_changed)
			exck_reseal(x, s);
		if ((err = exck_plan_set(x, s)) ||
		    (f->is_tail &&
		     (err = add_nfc_tail(x, &f->c, f->need, f->is_changed))))
			return err;
		if (f->is_changed)
			x->st->has_repairs = 1;
	}
	if (f->is_dir && f->st.first_clus) {
		uint32_t parent = x->own_parent;

		f->st.data_len = f->new_len;
		x->own_parent = f->c.rec; /* the owner of what it holds */
		err = exck_walk_dir(x, &f->st, f->c.nclus, w->depth + 1, diag);
		x->own_parent = parent;
	}
	return err;
}

/* exck_check_file() once the path names the set; sets f->is_gone when the set
 * is to be removed. */
static int judge_file(struct fk_exfat_check *x, struct dirwalk *w,
		      struct file_check *f, struct fk_diag *diag)
{
	struct fk_exfat_set *s = f->s;
	uint32_t dead = FK_EXS_TRUNCATED | FK_EXS_NO_STREAM | FK_EXS_CRITICAL;
	int err;

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
	return finish_file(x, w, f, diag);
}

/* Judge one file or directory set; claim its stream; recurse. */
static int exck_check_file(struct fk_exfat_check *x, struct dirwalk *w,
			   struct fk_exfat_set *s, struct fk_diag *diag)
{
	struct file_check f;
	size_t old;
	int err;

	memset(&f, 0, sizeof(f));
	f.s = s;
	f.is_dir = (s->attr & FK_ATTR_DIR) != 0;
	f.what = f.is_dir ? "directory: " : "";
	f.c.nclus = 0; /* all of c read before a exck_claim() fills it */
	f.c.why = CUT_NONE;
	if ((err = exck_push_name(x, s->name[0] ? s->name : "?", &old)))
		return err;
	if ((err = exck_own_entry(x, s->name[0] ? s->name : "?"))) {
		exck_pop_name(x, old);
		return err;
	}
	if (f.is_dir)
		x->st->dirs++;
	else
		x->st->files++;
	err = judge_file(x, w, &f, diag);
	if (!err && f.is_gone) {
		exck_delete_set(s);
		err = exck_plan_set(x, s);
		x->st->has_repairs = 1;
	}
	exck_pop_name(x, old);
	return err;
}

/* The allocation bitmap entry (spec 7.1). */
static int check_bitmap_entry(struct fk_exfat_check *x, struct fk_exfat_set *s)
{
	const struct fk_geom *g = x->g;
	uint32_t nth = x->nbitmaps_seen++;
	struct claim c;
	size_t idx;
	int err;

	x->own_kind = OWN_BITMAP;
	if (x->has_bitmap && nth >= (g->nfats == 2 ? 2u : 1u)) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "bitmap", NULL,
				"a second allocation bitmap entry");
		ck_set_fix(x->ck, idx, "entry removed");
		exck_delete_set(s);
		return exck_plan_set(x, s);
	}
	if (g->nfats == 2 && nth != fk_exfat_active_bitmap(x->vol)) {
		/* TexFAT's other bitmap, whichever comes first in the root:
		 * stale by spec 3.1.13.1 (ActiveFat names the one to use),
		 * so owned but never compared with ownership. */
		struct fk_exfat_stream other = {s->first_clus, s->data_len, 0};

		if ((err = exck_claim_special(
			     x, &other, fk_exfat_clus_needed(g, s->data_len),
			     &c)))
			return err;
		return exck_judge_claim(x, &c, NULL,
					"inactive allocation bitmap: ", &idx);
	}
	x->bm_need_len = fk_exfat_bitmap_len(g->nclus);
	x->bm_stream.first_clus = s->first_clus;
	x->bm_stream.data_len = x->bm_need_len;
	x->bm_stream.is_no_fat_chain = 0;
	if ((err = exck_claim_special(x, &x->bm_stream,
				      fk_exfat_clus_needed(g, x->bm_need_len),
				      &c)) ||
	    (err = exck_judge_claim(x, &c, NULL, "allocation bitmap: ", &idx)))
		return err;
	if ((c.why != CUT_NONE && c.why != CUT_LONG) ||
	    c.nclus < fk_exfat_clus_needed(g, x->bm_need_len)) {
		/* XXX: rebuilding a bitmap elsewhere needs free clusters
		 * found without one; refused for now. */
		x->is_tree_incomplete = 1;
		return 0;
	}
	if (!x->has_bitmap)
		x->has_bitmap = 1;
	if (s->data_len != x->bm_need_len) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "bitmap", NULL,
				"allocation bitmap DataLength %llu, the heap "
				"needs %llu",
				(unsigned long long)s->data_len,
				(unsigned long long)x->bm_need_len);
		ck_set_fix(x->ck, idx, "DataLength set to %llu",
			   (unsigned long long)x->bm_need_len);
		put_u64le(&s->raw[0][GEN_LEN], x->bm_need_len);
		if ((err = exck_plan_set(x, s)))
			return err;
	}
	return 0;
}

#define UPCASE_MAX_LEN (128u << 10) /* 65536 units, uncompressed */

/*
 * Load the up-case table at @first_clus (@len bytes) afresh: its checksum
 * as stored on disk into x->upcase_csum, and its map, with the ASCII
 * mappings that the specification makes mandatory (7.2.5) mended where
 * the raw table names them one by one, into the volume's table, which the
 * entry-set iterator hashes names through.  x->upcase_raw keeps the
 * mended raw table when there was something to mend.  Returns 0,
 * FK_ECORRUPT (out of range, unreadable: the volume keeps its table) or
 * -errno.
 */
static int load_upcase(struct fk_exfat_check *x, uint32_t first_clus,
		       uint64_t len)
{
	struct fk_exfat_upcase *up = x->vol->exfat->upcase;
	struct fk_exfat_stream st = {first_clus, len, 0};
	unsigned char *raw;
	uint32_t at = 0, nfix = 0;
	uint64_t k;
	int err;

	if (!len || len > UPCASE_MAX_LEN || len % 2 ||
	    !fk_clus_valid(x->g, first_clus))
		return FK_ECORRUPT;
	if (!(raw = malloc((size_t)len)))
		return -ENOMEM;
	if ((err = fk_exfat_stream_read(x->vol, &st, raw, len, NULL))) {
		free(raw);
		return err;
	}
	x->upcase_csum = fk_exfat_upcase_checksum(raw, (size_t)len);
	for (k = 0; k + 1 < len && at < 65536; k += 2) {
		uint32_t v = get_le16(raw + k);

		if (v == 0xFFFF && k + 3 < len) {
			at += get_le16(raw + k + 2);
			k += 2;
			continue;
		}
		if (at < 128 && v != fk_exfat_upcase_ascii(at)) {
			if (!nfix) {
				x->upcase_bad_at = at;
				x->upcase_bad_val = v;
			}
			put_le16(raw + k, fk_exfat_upcase_ascii(at));
			nfix++;
		}
		at++;
	}
	x->upcase_nfix = nfix;
	if (nfix) {
		x->upcase_raw = raw;
		x->upcase_len = len;
		x->upcase_stream = st;
		x->upcase_csum_fixed =
			fk_exfat_upcase_checksum(raw, (size_t)len);
	}
	/* The map is 128 KiB to build: when the volume's is the expansion
	 * of a table at this place whose checksum is this one's, with
	 * nothing to mend, it is kept (a check of a card that needs no
	 * repair starts sooner); only its other fields start afresh. */
	if (!nfix && !up->is_fallback && up->first_clus == first_clus &&
	    up->raw_len == len && up->csum_computed == x->upcase_csum &&
	    !(up->defects & (FK_EXU_RANGE | FK_EXU_CHAIN))) {
		up->csum_stored = 0;
		up->defects &= FK_EXU_COMPRESS;
		up->nbad_ascii = 0;
	} else {
		fk_exfat_upcase_clear(up);
		fk_exfat_upcase_expand(raw, (size_t)len, up);
		up->first_clus = first_clus;
		up->raw_len = len;
		/* what the map was built from, for the test above */
		up->csum_computed =
			nfix ? x->upcase_csum_fixed : x->upcase_csum;
		up->nbad_ascii = nfix;
	}
	if (!nfix)
		free(raw);
	x->is_upcase_loaded = 1;
	return 0;
}

/* The up-case table entry (spec 7.2). */
static int check_upcase_entry(struct fk_exfat_check *x, struct fk_exfat_set *s)
{
	struct fk_exfat_stream st;
	struct claim c;
	size_t idx;
	uint32_t want;
	int err;

	x->own_kind = OWN_UPCASE;
	if (x->has_upcase) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "upcase", NULL,
				"a second up-case table entry");
		ck_set_fix(x->ck, idx, "entry removed");
		exck_delete_set(s);
		return exck_plan_set(x, s);
	}
	x->has_upcase = 1;
	st.first_clus = s->first_clus;
	st.data_len = s->data_len;
	st.is_no_fat_chain = 0;
	if ((err = exck_claim_special(
		     x, &st, fk_exfat_clus_needed(x->g, s->data_len), &c)) ||
	    (err = exck_judge_claim(x, &c, NULL, "up-case table: ", &idx)))
		return err;
	if ((c.why != CUT_NONE && c.why != CUT_LONG) || !x->is_upcase_loaded ||
	    x->vol->exfat->upcase->first_clus != s->first_clus) {
		ck_report(x->ck, FK_SEV_ERROR, "upcase", NULL,
			  "up-case table at cluster %u (%llu bytes) cannot be "
			  "read; names are compared through ASCII only",
			  s->first_clus, (unsigned long long)s->data_len);
		return 0;
	}
	want = x->upcase_csum;
	if (x->upcase_nfix) {
		/* Its content is damaged: a new checksum would bless it.
		 * The mandatory entries are mended in place (the same
		 * length, before the checksum: a crash leaves at worst a
		 * stale checksum over a sound table). */
		idx = ck_report(x->ck, FK_SEV_ERROR, "upcase", NULL,
				"up-case table maps %u of the ASCII characters "
				"elsewhere than the specification's mandatory "
				"mapping (%04Xh to %04Xh)",
				x->upcase_nfix, x->upcase_bad_at,
				x->upcase_bad_val);
		want = x->upcase_csum_fixed;
		ck_set_fix(x->ck, idx, "mandatory mapping restored%s",
			   s->upcase_csum != want ? ", checksum rewritten"
						  : "");
		x->fix_upcase_table = 1;
	} else if (s->upcase_csum != want) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "upcase-checksum", NULL,
				"up-case TableChecksum 0x%08X, computed 0x%08X",
				s->upcase_csum, want);
		ck_set_fix(x->ck, idx, "checksum rewritten");
	}
	if (s->upcase_csum != want) {
		put_le32(&s->raw[0][UC_CHECKSUM], want);
		if ((err = exck_plan_set(x, s)))
			return err;
	}
	return 0;
}

/*
 * A bitmap or up-case entry (@type) marked unused in the root's first
 * cluster, whose fields still make sense: into @s, restored in use.
 * Returns 1 when found, 0 when not, or -errno.
 */
static int find_deleted(struct fk_exfat_check *x, uint8_t type,
			struct fk_exfat_set *s)
{
	const struct fk_geom *g = x->g;
	uint64_t off = fk_clus_off(g, g->root_clus);
	unsigned char *buf = malloc(g->clus_len);
	uint32_t i, first;
	uint64_t len;
	int err, found = 0;

	if (!buf)
		return -ENOMEM;
	if ((err = fk_device_read(x->vol->dev, off, buf, g->clus_len))) {
		free(buf);
		return err;
	}
	for (i = 0; i < g->clus_len / FK_EXFAT_ENT_LEN && !found; i++) {
		unsigned char *e = buf + (size_t)i * FK_EXFAT_ENT_LEN;

		if (e[GEN_TYPE] == FK_EXFAT_T_END)
			break;
		if (e[GEN_TYPE] != (type & 0x7F))
			continue;
		first = get_le32(e + GEN_FIRST);
		len = get_le32(e + GEN_LEN) |
		      (uint64_t)get_le32(e + GEN_LEN + 4) << 32;
		if (!fk_clus_valid(g, first) ||
		    (type == FK_EXFAT_T_BITMAP &&
		     len != ((uint64_t)g->nclus + 7) / 8) ||
		    (type == FK_EXFAT_T_UPCASE &&
		     (!len || len > UPCASE_MAX_LEN)))
			continue;
		memset(s, 0, sizeof(*s));
		s->kind = type == FK_EXFAT_T_BITMAP ? FK_EXK_BITMAP
						    : FK_EXK_UPCASE;
		s->type = type;
		s->nents = 1;
		s->first_ent = i;
		memcpy(s->raw[0], e, FK_EXFAT_ENT_LEN);
		s->raw[0][GEN_TYPE] = type;
		s->off[0] = off + (uint64_t)i * FK_EXFAT_ENT_LEN;
		s->first_clus = first;
		s->data_len = len;
		s->upcase_csum = get_le32(e + UC_CHECKSUM);
		found = 1;
	}
	free(buf);
	return found;
}

/*
 * Before the root is walked: the up-case table loaded afresh (names are
 * judged through it), and a bitmap or up-case entry that was only marked
 * unused brought back, as fsck.exfat cannot.
 */
static int exck_prepare_root(struct fk_exfat_check *x, struct fk_exfat_set *s)
{
	const struct fk_exfat_upcase *up = x->vol->exfat->upcase;
	size_t idx;
	int err, found;

	if (!(up->defects & FK_EXU_MISSING) && up->raw_len) {
		err = load_upcase(x, up->first_clus, up->raw_len);
		if (err && err != FK_ECORRUPT)
			return err;
	} else {
		if ((found = find_deleted(x, FK_EXFAT_T_UPCASE, s)) < 0)
			return found;
		err = found ? load_upcase(x, s->first_clus, s->data_len)
			    : FK_ECORRUPT;
		if (err && err != FK_ECORRUPT)
			return err;
		if (!err && x->upcase_csum == s->upcase_csum) {
			idx = ck_report(x->ck, FK_SEV_ERROR, "upcase", NULL,
					"the up-case table entry is marked "
					"unused");
			ck_set_fix(x->ck, idx, "entry restored");
			if ((err = check_upcase_entry(x, s)) ||
			    (err = exck_plan_set(x, s)))
				return err;
		} else {
			x->is_upcase_loaded = 0;
		}
	}
	if (x->vol->exfat->nbitmaps)
		return 0;
	if ((found = find_deleted(x, FK_EXFAT_T_BITMAP, s)) <= 0)
		return found;
	idx = ck_report(x->ck, FK_SEV_ERROR, "bitmap", NULL,
			"the allocation bitmap entry is marked unused");
	if ((err = check_bitmap_entry(x, s)))
		return err;
	if (!x->has_bitmap) /* its chain refused: nothing to restore */
		return 0;
	ck_set_fix(x->ck, idx, "entry restored");
	return exck_plan_set(x, s);
}

static int exck_check_special(struct fk_exfat_check *x, struct fk_exfat_set *s,
			      int is_root)
{
	size_t idx;

	if (!is_root) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "entry-set",
				exck_cur_path(x),
				"a volume entry (type 0x%02X) outside the root",
				s->type);
		ck_set_fix(x->ck, idx, "entry removed");
		exck_delete_set(s);
		return exck_plan_set(x, s);
	}
	switch (s->kind) {
	case FK_EXK_BITMAP:
		return check_bitmap_entry(x, s);
	case FK_EXK_UPCASE:
		return check_upcase_entry(x, s);
	case FK_EXK_LABEL:
		if (x->has_label || s->label_len > 11) {
			idx = ck_report(x->ck, FK_SEV_ERROR, "label", NULL,
					x->has_label
						? "a second volume label "
						  "entry"
						: "volume label of %u "
						  "characters (11 at most)",
					s->label_len);
			if (x->has_label) {
				ck_set_fix(x->ck, idx, "entry removed");
				exck_delete_set(s);
			} else {
				ck_set_fix(x->ck, idx, "cut to 11 characters");
				s->raw[0][VL_COUNT] = 11;
			}
			x->has_label = 1;
			return exck_plan_set(x, s);
		}
		x->has_label = 1;
		return 0;
	case FK_EXK_GUID:
		return exck_check_benign(x, s);
	default:
		return 0;
	}
}

/*
 * An entry set past the directory's end marker: no reader that stops at
 * the marker has it, so its stream is not claimed (its clusters are lost
 * clusters, which this run frees) and -r makes its entries end markers,
 * as the specification wants every entry after the first one to be.
 */
static int hidden_set(struct fk_exfat_check *x, struct fk_exfat_set *s)
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

/*
 * Walk the directory stored in @s (NULL: the root), whose @nclus clusters
 * are claimed already, up to its end marker (exck_walk_tails() reads on past
 * it when it must).
 */
static int exck_walk_dir(struct fk_exfat_check *x,
			 const struct fk_exfat_stream *s, uint32_t nclus,
			 int depth, struct fk_diag *diag)
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
			err = hidden_set(x, set);
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
 * entry sets hidden there (hidden_set()).  Returns 0 or -errno.
 */
static int exck_walk_tails(struct fk_exfat_check *x)
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
			if ((err = hidden_set(x, set)))
				break;
		if (!err)
			err = dir_read_end(x, r, &d2);
		fk_exfat_dir_close(dir);
	}
	exck_pop_name(x, 0);
	return err;
}

static int exck_walk_root(struct fk_exfat_check *x, struct fk_diag *diag)
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

/* ---- allocation bitmap ----------------------------------------------- */

/*
 * One pass over the on-disk bitmap, a chunk at a time (never all of it in
 * memory: with the ownership map that would be a third bit per cluster):
 * PASS_COMPARE counts the differences; PASS_SET writes the sectors where
 * an owned cluster lacks its bit; PASS_CLEAR makes every sector the
 * ownership map.  Bits past ClusterCount in the last byte are ignored and
 * written as 0.
 */
enum bm_pass { PASS_COMPARE, PASS_SET, PASS_CLEAR };

struct bm_walk {
	struct fk_exfat_check *x;
	enum bm_pass pass;
	uint64_t done;	    /* bitmap bytes behind the runs walked */
	unsigned char *buf; /* BM_CHUNK bytes, when a chunk is read */
	uint32_t nmiss, nleak, first_miss, first_leak, nused;
};

#define BM_CHUNK (256u << 10)

/* Byte @at of the ownership map, as the bitmap should hold it. */
static unsigned own_byte(const struct fk_exfat_check *x, uint64_t at)
{
	uint64_t nbits = x->g->nclus;
	unsigned v = x->own[at];

	if ((at + 1) * 8 > nbits)
		v &= (1u << (nbits - at * 8)) - 1;
	return v;
}

/* Byte @at of the bitmap with its bits past ClusterCount dropped. */
static unsigned disk_byte(const struct fk_exfat_check *x, uint64_t at,
			  unsigned b)
{
	uint64_t nbits = x->g->nclus;

	if ((at + 1) * 8 > nbits)
		b &= (1u << (nbits - at * 8)) - 1;
	return b;
}

/* Keep the clusters of @miss (bit i: cluster @base + i), in use and
 * marked free, as runs for exck_name_owners(); as many as MISS_RUNS_MAX. */
static void note_misses(struct fk_exfat_check *x, uint32_t base, unsigned miss)
{
	struct miss_run *last, r = {0, 1};
	uint32_t clus;

	for (; miss; miss &= miss - 1) {
		clus = base + (uint32_t)__builtin_ctz(miss);
		last = x->misses.n ? &x->misses.v[x->misses.n - 1] : NULL;
		if (last && last->first + last->n == clus) {
			last->n++;
			continue;
		}
		if (x->misses.n == MISS_RUNS_MAX) {
			x->is_miss_cut = 1;
			return;
		}
		r.first = clus;
		if (PUSH(x->misses, r)) {
			x->is_miss_cut = 1; /* named as far as they go */
			return;
		}
	}
}

static void compare_chunk(struct bm_walk *w, uint64_t at, size_t len,
			  const unsigned char *buf)
{
	struct fk_exfat_check *x = w->x;
	size_t i = 0;

	while (i < len) {
		uint32_t base = (uint32_t)((at + i) * 8) + FK_FIRST_CLUS;
		unsigned o, b, miss, leak;

		/* Equal whole words go fast (none reaches past the end). */
		if (i + 8 <= len && (at + i + 8) * 8 <= x->g->nclus) {
			uint64_t ow, bw;

			memcpy(&ow, x->own + at + i, 8);
			memcpy(&bw, buf + i, 8);
			if (ow == bw) {
				/* Without -mpopcnt a count is a libgcc call:
				 * free and full words, most of a card's
				 * bitmap, need none. */
				if (bw == ~(uint64_t)0)
					w->nused += 64;
				else if (bw)
					w->nused +=
						(uint32_t)__builtin_popcountll(
							bw);
				i += 8;
				continue;
			}
		}
		o = own_byte(x, at + i);
		b = disk_byte(x, at + i, buf[i]);
		miss = o & ~b;
		leak = b & ~o;
		w->nused += (uint32_t)__builtin_popcount(b);
		if (miss) {
			if (!w->nmiss)
				w->first_miss =
					base + (uint32_t)__builtin_ctz(miss);
			w->nmiss += (uint32_t)__builtin_popcount(miss);
			note_misses(x, base, miss);
		}
		if (leak) {
			if (!w->nleak)
				w->first_leak =
					base + (uint32_t)__builtin_ctz(leak);
			w->nleak += (uint32_t)__builtin_popcount(leak);
		}
		i++;
	}
}

/* Write the sectors of the chunk at bitmap byte @at whose bits change. */
static int write_chunk(struct bm_walk *w, uint64_t at, size_t len, uint64_t off)
{
	struct fk_exfat_check *x = w->x;
	uint32_t sec_len = x->g->sec_len;
	size_t pos, i, n;
	int err;

	for (pos = 0; pos < len; pos += sec_len) {
		int is_diff = 0;

		n = len - pos < sec_len ? len - pos : sec_len;
		for (i = 0; i < n; i++) {
			unsigned char *b = w->buf + pos + i;
			unsigned o = own_byte(x, at + pos + i);
			unsigned v =
				w->pass == PASS_SET
					? o | disk_byte(x, at + pos + i, *b)
					: o;

			if (v != *b) {
				*b = (unsigned char)v;
				is_diff = 1;
			}
		}
		if (is_diff && (err = fk_device_write(x->vol->dev, off + pos,
						      w->buf + pos, sec_len)))
			return err;
	}
	return 0;
}

static int bm_run(void *arg, const struct fk_run *run)
{
	struct bm_walk *w = arg;
	struct fk_exfat_check *x = w->x;
	uint64_t len = (uint64_t)run->nclus * x->g->clus_len, pos, at;
	uint64_t off = fk_clus_off(x->g, run->first);
	const unsigned char *map;
	size_t n, rd;
	int err;

	for (pos = 0; pos < len && w->done + pos < x->bm_need_len; pos += n) {
		at = w->done + pos;
		n = (size_t)(len - pos < BM_CHUNK ? len - pos : BM_CHUNK);
		rd = n;
		if (at + n > x->bm_need_len)
			n = (size_t)(x->bm_need_len - at);
		/* whole sectors are read (and written back) */
		rd = (n + x->g->sec_len - 1) / x->g->sec_len * x->g->sec_len;
		if (w->pass == PASS_COMPARE &&
		    !fk_device_map(x->vol->dev, off + pos, rd, &map)) {
			/* An image file's page cache, in place: no buffer
			 * to fault in and no copy (a check of a card that
			 * needs nothing starts sooner). */
			compare_chunk(w, at, n, map);
			fk_device_unmap(map, rd);
			continue;
		}
		if (!w->buf && !(w->buf = malloc(BM_CHUNK)))
			return -ENOMEM;
		if ((err = fk_device_read(x->vol->dev, off + pos, w->buf, rd)))
			return err;
		if (w->pass == PASS_COMPARE)
			compare_chunk(w, at, n, w->buf);
		else if ((err = write_chunk(w, at, n, off + pos)))
			return err;
	}
	w->done += len;
	return 0;
}

static int bitmap_pass(struct fk_exfat_check *x, struct bm_walk *w,
		       enum bm_pass pass)
{
	struct fk_chain_info info;
	int err;

	memset(w, 0, sizeof(*w));
	w->x = x;
	w->pass = pass;
	err = fk_exfat_stream_walk(x->vol, &x->bm_stream, bm_run, w, &info);
	free(w->buf);
	w->buf = NULL;
	if (err < 0)
		return err;
	/* the bitmap's own chain was judged when it was claimed */
	return 0;
}

/*
 * The bits the bitmap holds once the repair has set and cleared what
 * exck_check_bitmap() planned: the only count PercentInUse is written from, so
 * that the next check finds the hint true.  The bits are set whether or
 * not any is cleared (an incomplete tree keeps its leaks: a fuzzed volume
 * once got the 0% of its bitmap as read, 7 of 254 clusters in use).
 */
static uint32_t bits_after_repair(const struct fk_exfat_check *x,
				  const struct bm_walk *w)
{
	uint32_t n = w->nused;

	if (x->fix_bits_set)
		n += w->nmiss;
	if (x->fix_bits_clear)
		n -= w->nleak;
	return n;
}

static int exck_check_bitmap(struct fk_exfat_check *x)
{
	const struct fk_geom *g = x->g;
	unsigned pct, want, lo, hi;
	struct bm_walk w;
	size_t idx;
	int err;

	x->st->used_clus = x->nowned;
	x->st->free_clus = g->nclus - x->nowned;
	if (!x->has_bitmap)
		return exck_walk_tails(x); /* nothing says what is lost */
	if ((err = bitmap_pass(x, &w, PASS_COMPARE)))
		return err;
	/* Sets hidden past an end marker own none of the clusters they name
	 * (hidden_set()): the lost clusters are where they show, and only
	 * lost clusters are freed, so the directories are read past their
	 * markers when there are any: never is a hidden set's cluster freed
	 * while the set stays.  A hidden set whose clusters are all free or
	 * owned by a visible file is not looked for by a check: no reader
	 * sees it and nothing is freed on its account (fsck.exfat never
	 * looks past a marker).  A repair looks for every one (is_thorough),
	 * as fatprealloc refuses a directory that holds one. */
	if ((w.nleak || x->o.is_thorough) && (err = exck_walk_tails(x)))
		return err;
	x->is_bm_read = 1;
	x->bm_nused = w.nused;
	if (w.nmiss) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "bitmap-free", NULL,
				"%u cluster%s in use %s marked free in the "
				"allocation bitmap, the first %u",
				w.nmiss, ck_plural(w.nmiss),
				w.nmiss == 1 ? "is" : "are", w.first_miss);
		x->miss_find = idx; /* exck_name_owners() adds the owners */
		ck_set_fix(x->ck, idx, "bit%s set", ck_plural(w.nmiss));
		x->fix_bits_set = 1;
	}
	if (w.nleak) {
		x->st->lost_clus = w.nleak;
		idx = ck_report(x->ck, FK_SEV_ERROR, "lost", NULL,
				"%u cluster%s marked in the allocation bitmap "
				"%s owned by nothing, the first %u",
				w.nleak, ck_plural(w.nleak),
				w.nleak == 1 ? "is" : "are", w.first_leak);
		if (!x->is_tree_incomplete) {
			ck_set_fix(x->ck, idx, "bit%s cleared",
				   ck_plural(w.nleak));
			x->fix_bits_clear = 1;
		} else if (x->keep_why) {
			ck_report(x->ck, FK_SEV_WARNING, "lost-kept",
				  x->keep_path,
				  "%s: the %u cluster%s owned by nothing %s "
				  "kept, as they may be what it held",
				  x->keep_why, w.nleak, ck_plural(w.nleak),
				  w.nleak == 1 ? "is" : "are");
		}
	}
	/* PercentInUse is a hint (spec 3.1.16) that Linux never updates
	 * and mkfs.exfat rounds: floor and ceiling both pass. */
	pct = x->boot.percent_in_use;
	lo = fk_exfat_percent(w.nused, g->nclus);
	hi = g->nclus && (uint64_t)w.nused * 100 % g->nclus ? lo + 1 : lo;
	want = fk_exfat_percent(bits_after_repair(x, &w), g->nclus);
	if (pct <= 100 && pct != lo && pct != hi) {
		idx = ck_report(x->ck, FK_SEV_WARNING, "percent-in-use", NULL,
				"PercentInUse %u%%, the allocation bitmap says "
				"%u%%",
				pct, lo);
		ck_set_fix(x->ck, idx, "set to %u%%", want);
		x->fix_percent = 1;
	} else if (pct != 0xFF && pct != want &&
		   (x->fix_bits_set || x->fix_bits_clear)) {
		x->fix_percent = 1; /* keep the hint true after a repair */
	}
	/* A main region restored from the backup gets the backup's hint. */
	if (x->restore_main && x->backup[BS_PERCENT] != want)
		x->fix_percent = 1;
	x->percent_want = (uint8_t)want;
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
	uint32_t i = clus - FK_FIRST_CLUS, sec_len = x->g->sec_len;
	struct bm_find f = {x->g, (uint64_t)i / 8 / sec_len * sec_len, 0, 0};
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
	*bit = sec[i / 8 - *sec_at] >> (i % 8) & 1;
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
static char *exck_owner_name(const struct fk_exfat_check *x, uint32_t r,
			     int *is_path);

static int claim_nfc_tails(struct fk_exfat_check *x, unsigned char *sec)
{
	const struct fk_geom *g = x->g;
	uint64_t sec_at = UINT64_MAX, new_len, vdl;
	struct fk_exfat_stream st;
	struct claim c;
	uint32_t clus, end, n;
	size_t i, idx;
	char *path;
	int err = 0, bit, is_path;

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
		if (!(path = exck_owner_name(x, t->rec, &is_path)))
			return -ENOMEM;
		idx = ck_report(
			x->ck, FK_SEV_ERROR, "past-clusters", path,
			"DataLength %llu reaches past the file's own "
			"contiguous clusters: cluster %u is %s",
			(unsigned long long)get_u64le(&f->raw[1][GEN_LEN]),
			clus,
			!bit ? "marked free in the allocation bitmap"
			     : "owned by another file or directory");
		free(path);
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
static int exck_late_claims(struct fk_exfat_check *x)
{
	const struct fk_geom *g = x->g;
	uint32_t max = fk_clus_max(g), clus, n;
	uint64_t sec_at = UINT64_MAX, new_len, vdl;
	unsigned char *sec = NULL;
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
		x->own_kind = OWN_ENTRY;
		x->own_parent = x->late.v[i].own_parent;
		x->own_name = x->late.v[i].own_name;
		if (n && (err = exck_claim(x, &st, n, 0, &c)))
			goto out;
		idx = ck_report(x->ck, FK_SEV_ERROR, "past-heap",
				x->late.v[i].path,
				"contiguous run from cluster %u runs past the "
				"last cluster %u",
				s->first_clus, max);
		if (n) {
			ck_set_fix(x->ck, idx, "DataLength set to %llu",
				   (unsigned long long)new_len);
		} else {
			ck_set_fix(x->ck, idx, "file made empty");
			st.first_clus = 0;
			s->raw[1][SE_FLAGS] &=
				(uint8_t)~FK_EXFAT_GSF_NO_FAT_CHAIN;
		}
		put_le32(&s->raw[1][GEN_FIRST], st.first_clus);
		put_u64le(&s->raw[1][GEN_LEN], new_len);
		vdl = (uint64_t)get_le32(&s->raw[1][SE_VDL + 4]) << 32 |
		      get_le32(&s->raw[1][SE_VDL]);
		if (vdl > new_len)
			put_u64le(&s->raw[1][SE_VDL], new_len);
		exck_reseal(x, s);
		err = exck_plan_set(x, s);
	}
out:
	free(sec);
	return err;
}

/* ---- boot region --------------------------------------------------------- */

static const uint32_t boot_bits[] = {
	FK_EXB_SIGNATURE,  FK_EXB_JUMP,	      FK_EXB_MBZ,     FK_EXB_SEC_SHIFT,
	FK_EXB_CLUS_SHIFT, FK_EXB_NFATS,      FK_EXB_FAT_OFF, FK_EXB_FAT_LEN,
	FK_EXB_HEAP_OFF,   FK_EXB_NCLUS,      FK_EXB_VOL_LEN, FK_EXB_ROOT_CLUS,
	FK_EXB_REVISION,   FK_EXB_ACTIVE_FAT, FK_EXB_PERCENT, FK_EXB_CHECKSUM,
	FK_EXB_EXT_SIG,	   FK_EXB_TRUNCATED,
};

/*
 * The boot regions, read and judged afresh (the volume's copy is as it
 * was at open: the check after a repair must see the repair).
 */
static int check_boot(struct fk_exfat_check *x)
{
	const struct fk_exfat_boot *b = &x->boot;
	uint32_t sec_len = x->g->sec_len, main_bad, i;
	size_t idx, region_len = (size_t)FK_EXFAT_REGION_SECS * sec_len;
	struct fk_exfat_boot bb;
	unsigned char *both;
	int err, is_backup_ok;

	x->sec0 = malloc(sec_len);
	x->backup = malloc(region_len);
	both = malloc(2 * region_len);
	if (!x->sec0 || !x->backup || !both) {
		free(both);
		return -ENOMEM;
	}
	if ((err = fk_device_read(x->vol->dev, 0, both, 2 * region_len))) {
		free(both);
		return err;
	}
	memcpy(x->sec0, both, sec_len);
	memcpy(x->backup, both + region_len, region_len);
	fk_exfat_boot_parse(both, 2 * region_len, fk_device_len(x->vol->dev),
			    &x->boot, NULL);
	free(both);
	fk_exfat_boot_parse(x->backup, region_len, fk_device_len(x->vol->dev),
			    &bb, NULL);
	is_backup_ok =
		!(bb.defects & ~(FK_EXB_BACKUP | FK_EXB_BACKUP_CHECKSUM)) &&
		(1u << bb.sec_shift) == sec_len;
	/* PercentInUse is outside the checksum, and set from the bitmap by
	 * any repair that finds it wrong (exck_check_bitmap()). */
	main_bad = b->defects &
		   ~(FK_EXB_BACKUP | FK_EXB_BACKUP_CHECKSUM | FK_EXB_PERCENT);
	for (i = 0; i < sizeof(boot_bits) / sizeof(boot_bits[0]); i++) {
		if (!(b->defects & boot_bits[i]))
			continue;
		idx = ck_report(x->ck, FK_SEV_ERROR, "boot", NULL,
				"main boot region: %s",
				fk_exfat_boot_reason(boot_bits[i]));
		if (boot_bits[i] == FK_EXB_PERCENT) {
			ck_set_fix(x->ck, idx,
				   "set from the allocation bitmap");
			x->fix_percent = 1;
		} else if (is_backup_ok)
			ck_set_fix(x->ck, idx,
				   "restored from the backup region");
		else if (boot_bits[i] == FK_EXB_CHECKSUM &&
			 main_bad == FK_EXB_CHECKSUM)
			ck_set_fix(x->ck, idx, "checksum rewritten");
	}
	if (main_bad && is_backup_ok)
		x->restore_main = 1;
	else if (main_bad == FK_EXB_CHECKSUM)
		x->fix_main_csum = 1;
	/* A main region that is sound, or will be once its checksum is
	 * rewritten, is the model for a bad backup. */
	if ((!main_bad || x->fix_main_csum) &&
	    (b->defects & (FK_EXB_BACKUP | FK_EXB_BACKUP_CHECKSUM))) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "backup-boot", NULL,
				"backup boot region %s",
				b->defects & FK_EXB_BACKUP_CHECKSUM
					? "has a wrong checksum"
					: "differs from the main one");
		ck_set_fix(x->ck, idx, "rewritten from the main region");
		x->fix_backup = 1;
	}
	if (b->vol_flags & FK_EXFAT_FLAG_DIRTY) {
		/* A warning: Linux sets it while mounted, and a card pulled
		 * out keeps it; the checks below say whether harm was done. */
		idx = ck_report(
			x->ck, FK_SEV_WARNING, "dirty", NULL,
			"VolumeDirty is set: the volume was not cleanly "
			"removed");
		ck_set_fix(x->ck, idx, "flag cleared");
	}
	if (b->vol_flags & FK_EXFAT_FLAG_MEDIA_FAIL)
		ck_report(x->ck, FK_SEV_WARNING, "media-failure", NULL,
			  "MediaFailure is set: a driver met I/O errors on "
			  "this medium");
	if (x->restore_main || x->fix_main_csum || x->fix_backup)
		x->st->has_repairs = 1;
	return 0;
}

/*
 * FAT[0] and FAT[1] (spec 4.1.1, 4.1.2): the media descriptor under all
 * ones, and all ones.  No reader uses them, but they are the spec's, and
 * a FAT whose first entries are not even that is suspect as a whole.
 */
static int check_fat_reserved(struct fk_exfat_check *x)
{
	struct fat_fix f;
	uint32_t v0, v1;
	size_t idx;
	int err;

	if ((err = fk_fat_get(x->vol, 0, &v0)) ||
	    (err = fk_fat_get(x->vol, 1, &v1)))
		return err == FK_ECORRUPT ? 0 : err;
	if (v0 >> 8 != 0xFFFFFF) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "fat0", NULL,
				"FatEntry[0] is 0x%08X, not 0xFFFFFFF8", v0);
		ck_set_fix(x->ck, idx, "set to 0xFFFFFFF8");
		f.clus = 0;
		f.val = 0xFFFFFFF8u;
		if ((err = PUSH(x->fat_fixes, f)))
			return err;
	}
	if (v1 != FK_EXFAT_EOC) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "fat0", NULL,
				"FatEntry[1] is 0x%08X, not 0xFFFFFFFF", v1);
		ck_set_fix(x->ck, idx, "set to 0xFFFFFFFF");
		f.clus = 1;
		f.val = FK_EXFAT_EOC;
		return PUSH(x->fat_fixes, f);
	}
	return 0;
}

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

/*
 * Record @r's owner as a message names it: a path, or what it is (*@is_path
 * 0).  malloc()ed; NULL without memory.  Parents are recorded before what
 * they hold, so the walk up ends, within the nesting the walk allowed.
 */
static char *exck_owner_name(const struct fk_exfat_check *x, uint32_t r,
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
	if (o->kind == OWN_ENTRY)
		part[n++] = x->names.v + o->name;
	for (p = o->parent; p != NO_REC && n < FK_CHECK_MAX_DEPTH + 2 &&
			    x->owners.v[p].kind == OWN_ENTRY;
	     p = x->owners.v[p].parent)
		part[n++] = x->names.v + x->owners.v[p].name;
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
	merge_hits(p);
	for (i = 0; i < p->hits.n && i < OWNERS_LISTED; i++) {
		const struct owner_hit *h = &p->hits.v[i];

		if (!(name = exck_owner_name(x, h->rec, &is_path)))
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
		if (!(name = exck_owner_name(x, cr->owner, &is_path)))
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

/* Name the owners that findings are about (see above). */
static int exck_name_owners(struct fk_exfat_check *x)
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
	if (!(err = follow_owners(x, &p)) && !(err = name_miss_owners(x, &p)))
		err = name_cross_owners(x);
	free(p.hits.v);
	return err;
}

/* ---- family entry points ---------------------------------------------- */

static int new_state(struct fk_check *ck, struct fk_volume *vol,
		     const struct fk_check_opts *opts, void **state)
{
	struct fk_exfat_check *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	x->ck = ck;
	x->st = ck_stats(ck);
	x->vol = vol;
	x->g = &vol->g;
	x->ex = vol->exfat;
	x->o = *opts;
	/* Whole words, for the bitmap passes; calloc's pages are touched
	   only where clusters are owned. */
	x->own = calloc(((size_t)vol->g.nclus + 63) / 64, 8);
	x->percent_want = 0xFF; /* "not known", while no bitmap says */
	x->own_parent = NO_REC;
	x->own_name = NO_REC;
	x->miss_find = NONE;
	x->path = calloc(1, 64);
	x->path_cap = 64;
	if (!x->own || !x->path) {
		free(x->own);
		free(x->path);
		free(x);
		return -ENOMEM;
	}
	*state = x;
	return 0;
}

static void free_state(void *state)
{
	struct fk_exfat_check *x = state;
	size_t i;

	if (!x)
		return;
	for (i = 0; i < x->set_fixes.n; i++) {
		free(x->set_fixes.v[i].off);
		free(x->set_fixes.v[i].raw);
	}
	for (i = 0; i < x->late.n; i++) {
		free(x->late.v[i].set);
		free(x->late.v[i].path);
	}
	free(x->late.v);
	for (i = 0; i < x->crosses.n; i++)
		free(x->crosses.v[i].later);
	free(x->crosses.v);
	free(x->owners.v);
	free(x->names.v);
	free(x->misses.v);
	for (i = 0; i < x->tails.n; i++)
		free(x->tails.v[i].path);
	free(x->tails.v);
	for (i = 0; i <= FK_CHECK_MAX_DEPTH; i++) {
		free(x->sets[i]);
		exck_free_names(x->dir_names[i]);
	}
	free(x->fat_fixes.v);
	free(x->set_fixes.v);
	free(x->nfc_tails.v);
	free(x->own);
	free(x->path);
	free(x->keep_path);
	free(x->sec0);
	free(x->backup);
	free(x->upcase_raw);
	free(x);
}

static int run(void *state, struct fk_diag *diag)
{
	struct fk_exfat_check *x = state;
	int err;

	if ((err = check_boot(x)) || (err = check_fat_reserved(x)))
		return err;
	ck_progress(x->ck, "files", 0, x->g->nclus);
	if ((err = exck_walk_root(x, diag)) || (err = exck_late_claims(x)) ||
	    (err = exck_check_bitmap(x)) || (err = exck_name_owners(x)))
		return err;
	return 0;
}

/* ---- repairs ------------------------------------------------------------- */

/* Write VolumeFlags (with @is_dirty) and PercentInUse into sector 0. */
static int write_flags(struct fk_exfat_check *x, int is_dirty)
{
	uint16_t f = get_le16(x->sec0 + BS_VOL_FLAGS);

	f = is_dirty ? (uint16_t)(f | FK_EXFAT_FLAG_DIRTY)
		     : (uint16_t)(f & ~FK_EXFAT_FLAG_DIRTY);
	put_le16(x->sec0 + BS_VOL_FLAGS, f);
	if (x->fix_percent)
		x->sec0[BS_PERCENT] = x->percent_want;
	return fk_device_write(x->vol->dev, 0, x->sec0, x->g->sec_len);
}

static int repair_fat(struct fk_exfat_check *x)
{
	size_t i;
	int err;

	for (i = 0; i < x->fat_fixes.n; i++)
		if ((err = fk_fat_put(x->vol, x->fat_fixes.v[i].clus,
				      x->fat_fixes.v[i].val)))
			return err;
	return x->fat_fixes.n ? fk_cache_flush(x->vol->fat) : 0;
}

/* Bring the on-disk bitmap to the ownership map (see bitmap_pass()). */
static int exck_repair_bitmap(struct fk_exfat_check *x, enum bm_pass pass)
{
	struct bm_walk w;

	return bitmap_pass(x, &w, pass);
}

/* The mended up-case table, through its clusters, before its entry. */
static int repair_upcase(struct fk_exfat_check *x)
{
	if (!x->fix_upcase_table)
		return 0;
	return fk_exfat_stream_write(x->vol, &x->upcase_stream, x->upcase_raw,
				     x->upcase_len, NULL);
}

static int repair_sets(struct fk_exfat_check *x)
{
	size_t i;
	uint32_t j, k;
	int err;

	for (i = 0; i < x->set_fixes.n; i++) {
		const struct set_fix *f = &x->set_fixes.v[i];

		if (f->is_idle)
			continue;
		/* Adjacent entries in one write; a set spans clusters. */
		for (j = 0; j < f->nents; j = k) {
			for (k = j + 1;
			     k < f->nents &&
			     f->off[k] == f->off[k - 1] + FK_EXFAT_ENT_LEN;
			     k++)
				;
			if ((err = fk_device_write(
				     x->vol->dev, f->off[j], f->raw[j],
				     (size_t)(k - j) * FK_EXFAT_ENT_LEN)))
				return err;
		}
	}
	return 0;
}

static int repair_boot(struct fk_exfat_check *x)
{
	uint32_t sec_len = x->g->sec_len, i, sum;
	size_t len = (size_t)FK_EXFAT_REGION_SECS * sec_len;
	unsigned char *r;
	int err = 0;

	if (!x->restore_main && !x->fix_main_csum && !x->fix_backup)
		return 0;
	if (!(r = malloc(len)))
		return -ENOMEM;
	if (x->restore_main) {
		/* The backup, with the main region's record of how the
		 * card was used (dirty, media failure); which FAT is active
		 * is the backup's, as a bad main region may name a FAT the
		 * volume does not have. */
		const uint16_t kept =
			FK_EXFAT_FLAG_DIRTY | FK_EXFAT_FLAG_MEDIA_FAIL;
		uint16_t f;

		memcpy(r, x->backup, len);
		f = (uint16_t)((get_le16(r + BS_VOL_FLAGS) & ~kept) |
			       (get_le16(x->sec0 + BS_VOL_FLAGS) & kept));
		put_le16(r + BS_VOL_FLAGS, f);
		memcpy(x->sec0, r, sec_len);
		err = fk_device_write(x->vol->dev, 0, r, len);
	} else if ((err = fk_device_read(x->vol->dev, 0, r, len))) {
		/* nothing */
	} else {
		memcpy(r, x->sec0, sec_len);
		sum = fk_exfat_boot_checksum(r, sec_len, FK_EXFAT_CSUM_SEC);
		for (i = 0; i < sec_len / 4; i++)
			put_le32(r + FK_EXFAT_CSUM_SEC * sec_len + i * 4, sum);
		if (x->fix_main_csum)
			err = fk_device_write(
				x->vol->dev,
				(uint64_t)FK_EXFAT_CSUM_SEC * sec_len,
				r + FK_EXFAT_CSUM_SEC * sec_len, sec_len);
		if (!err && x->fix_backup) {
			/* The backup keeps no dirty flag of ours. */
			put_le16(r + BS_VOL_FLAGS,
				 (uint16_t)(get_le16(r + BS_VOL_FLAGS) &
					    ~FK_EXFAT_FLAG_DIRTY));
			err = fk_device_write(x->vol->dev,
					      (uint64_t)FK_EXFAT_BACKUP_SEC *
						      sec_len,
					      r, len);
		}
	}
	free(r);
	return err;
}

static int repair(void *state, struct fk_diag *diag)
{
	struct fk_exfat_check *x = state;
	struct fk_device *dev = x->vol->dev;
	int err;

	(void)diag; /* fk_check_repair() names the device */
	/* Spec 3.1.13.2: dirty while the metadata is inconsistent. */
	if ((err = write_flags(x, 1)) || (err = fk_device_sync(dev)) ||
	    (err = repair_fat(x)) ||
	    (x->fix_bits_set && (err = exck_repair_bitmap(x, PASS_SET))) ||
	    (err = repair_upcase(x)) || (err = repair_sets(x)) ||
	    (x->fix_bits_clear && (err = exck_repair_bitmap(x, PASS_CLEAR))) ||
	    (err = repair_boot(x)) || (err = fk_device_sync(dev)) ||
	    (err = write_flags(x, 0)) || (err = fk_device_sync(dev)))
		return err;
	return 0;
}

/* Main-region defects that a sound backup is not preferred over. */
#define BOOT_MINOR (FK_EXB_BACKUP | FK_EXB_BACKUP_CHECKSUM | FK_EXB_PERCENT)

int fk_check_open(const struct fk_volume_opts *opts, struct fk_volume **out,
		  struct fk_diag *diag)
{
	struct fk_volume_opts bo = *opts;
	struct fk_volume *vol;
	int err;

	err = fk_volume_open(opts, &vol, diag);
	if (err && err != FK_ECORRUPT)
		return err;
	if (!err) {
		if (!vol->exfat || !(vol->exfat->boot.defects & ~BOOT_MINOR)) {
			*out = vol;
			return 0;
		}
		/* A writer's lock is the open's own: one open at a time. */
		fk_volume_close(vol);
	}
	/* The repair restores the main region from a sound backup: check
	 * the volume the backup describes, or a second run would see
	 * another one (another root, say). */
	bo.is_exfat_backup = 1;
	if (!fk_volume_open(&bo, &vol, NULL)) {
		if (!(vol->exfat->boot.defects & ~BOOT_MINOR)) {
			*out = vol;
			return 0;
		}
		fk_volume_close(vol);
	}
	if (err)
		return err; /* the main region's reason stays in @diag */
	return fk_volume_open(opts, out, diag);
}

const struct fk_check_family fk_check_exfat_family = {
	.fam = &fk_exfat_family,
	.new_state = new_state,
	.free_state = free_state,
	.run = run,
	.repair = repair,
};
