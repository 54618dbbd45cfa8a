/*
 * check-exfat-int.h: what the pieces of the exFAT checker share (its
 * state, the claim record, the plans), private to src/exfat/.  The
 * checker's design is told at the top of check-exfat.c.
 */
#ifndef FATKIT_CHECK_EXFAT_INT_H
#define FATKIT_CHECK_EXFAT_INT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"
#include "iface/check-family.h"
#include "iface/claim.h"
#include "iface/ownmap.h"
#include "lib/bigmem.h"
#include "lib/endian.h"
#include "lib/vec.h"
#include "table/fat.h"
#include "volume/volume.h"

struct fk_diag;

#define STOPPED	      1		 /* a claim walk stopped on purpose */
#define PROGRESS_STEP (1u << 16) /* clusters between progress calls */
#define NO_REC	      UINT32_MAX /* no owner record */
#define OWNERS_LISTED 3		 /* owners a bitmap finding names */
#define MISS_RUNS_MAX (1u << 16) /* runs of clusters marked free kept */

#define LIST(type, name)                                                       \
	struct {                                                               \
		type *v;                                                       \
		size_t n, cap;                                                 \
	} name

#define PUSH(list, item)                                                       \
	(FK_VEC_RESERVE((list).v, (list).cap, (list).n + 1)                    \
		 ? -ENOMEM                                                     \
		 : ((list).v[(list).n++] = (item), 0))

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
	uint32_t name;	 /* OWN_ENTRY: its set's first entry, counted
			    from the start of that directory
			    (fk_exfat_set.first_ent): where its name is
			    read back when a finding names it */
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
/* Why a file's run is claimed after every sound stream (struct late_set). */
enum late_why {
	LATE_NONE,
	LATE_PAST_HEAP, /* its NoFatChain run passes the heap's end */
	LATE_DAMAGED,	/* its SetChecksum fails (claim_damaged()) */
};

struct late_set {
	struct fk_exfat_set *set; /* as planned by exck_check_file() */
	char *path;
	uint32_t own_parent, own_name; /* its owner record's, to be */
	int why;		       /* enum late_why */
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
	char *path;    /* the file's */
	uint32_t need; /* clusters its DataLength asks for */
	size_t fix;    /* its struct set_fix */
};

/* A claim of a stream: where it got to and why (struct fk_claim, read
 * as c->why, c->nclus...), and for what. */
struct claim {
	union {
		struct fk_claim cl;
		struct {
			FK_CLAIM_FIELDS
		};
	};
	struct fk_exfat_check *x;
	const struct fk_exfat_stream *s;
	uint64_t limit; /* most clusters accepted without a length */
	uint32_t rec;	/* its struct owner_rec; NO_REC: none */
	int is_special; /* the bitmap or up-case table: a broken chain is
			   left as it is (ending it makes it no more usable,
			   only shorter); one too long is ended */
	struct fk_chain_info info;
};

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

/* A directory being walked: its names so far, its depth. */
struct dirwalk {
	struct name_set *names;
	int depth;
};

/*
 * A file or directory set being judged (exck_check_file()): what the parts of
 * the judgement share, in the order they fill it.
 */
struct file_check {
	struct fk_exfat_set *s;
	int is_dir;
	const char *what;	   /* "directory: " or "" */
	struct fk_exfat_stream st; /* the stream as the repair leaves it */
	struct claim c;		   /* its claim: nclus 0 and FK_CUT_NONE until
				      exck_claim() fills it */
	uint64_t need;		   /* clusters its DataLength needs */
	uint64_t new_len;	   /* its DataLength after the repair */
	uint64_t big_len; /* a directory run's length cut to whole clusters;
			     0: none */
	int is_changed, is_gone, is_tail;
	int late;      /* claimed after the tree: enum late_why */
	int is_walked; /* a directory exck_check_file() walks next */
};

struct fk_exfat_check {
	struct fk_volume *vol;
	const struct fk_geom *g;
	const struct fk_exfat *ex;
	struct fk_check_opts o;
	struct fk_check *ck;	   /* where findings are recorded */
	struct fk_check_stats *st; /* ck's counts */
	LIST(struct fk_fat_fix, fat_fixes);
	LIST(struct set_fix, set_fixes);
	LIST(struct late_set, late);
	LIST(struct late_tail, nfc_tails);
	LIST(struct tail, tails);
	struct fk_own_map map; /* the own plane only (iface/ownmap.h):
				  the clusters claimed, in the bitmap's
				  layout */
	uint32_t nowned;
	uint64_t claimed_step; /* for progress */
	/* who owns what: a record per claim (in huge pages past 64 KiB,
	   fk_bigmem_grow()), and who the next claim is for */
	LIST(struct owner_rec, owners);
	char **rec_names; /* per record, once a finding names its owner:
			     the entry's name, read back (check-exfat-
			     owners.c); NULL until then */
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
	uint32_t upcase_lost_at;  /* FirstCluster that holds no table; 0: */
	uint32_t upcase_found_at; /* the run found by its checksum instead */
};

/* The passes over the on-disk bitmap (see struct bm_walk). */
enum bm_pass { PASS_COMPARE, PASS_SET, PASS_CLEAR };

static inline void put_u64le(unsigned char *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t get_u64le(const unsigned char *p)
{
	return (uint64_t)get_le32(p + 4) << 32 | get_le32(p);
}

/* Unit @i of a file set's name, in its File Name entries (after its
 * stream). */
static inline uint16_t name_unit(const struct fk_exfat_set *s, uint32_t i)
{
	return get_le16(&s->raw[2 + i / FN_UNITS][FN_NAME + i % FN_UNITS * 2]);
}

static inline void put_name_unit(struct fk_exfat_set *s, uint32_t i, uint16_t u)
{
	put_le16(&s->raw[2 + i / FN_UNITS][FN_NAME + i % FN_UNITS * 2], u);
}

/*
 * Zero every field of @c, one store each: what memset() did, but memset()
 * of a struct this size became "rep stos", whose start-up cost more than
 * the rest of a sound file's claim (twice a file: the claim, and the
 * struct file_check that holds one).  A field added to either struct
 * must be added here: the assertions below fail until it is.
 */
static inline void exck_claim_clear(struct claim *c)
{
	c->why = FK_CUT_NONE;
	c->nclus = 0;
	c->last = 0;
	c->at = 0;
	c->val = 0;
	c->cls = FK_ENT_FREE;
	c->need = 0;
	c->x = NULL;
	c->s = NULL;
	c->limit = 0;
	c->rec = 0;
	c->is_special = 0;
	c->info.nclus = 0;
	c->info.nruns = 0;
	c->info.last = 0;
	c->info.end = FK_ENT_FREE;
	c->info.end_val = 0;
	c->info.is_loop = 0;
	c->info.nlinks = 0;
	c->info.is_no_first = 0;
}

_Static_assert(sizeof(struct fk_chain_info) == 8 * 4 &&
		       sizeof(struct fk_claim) == 6 * 4 + 8,
	       "exck_claim_clear() zeroes each field of the structs it holds");
_Static_assert(sizeof(struct claim) == sizeof(struct fk_claim) + 3 * 8 + 2 * 4 +
					       sizeof(struct fk_chain_info),
	       "exck_claim_clear() zeroes each field of struct claim");

/*
 * The path of the entry being judged, and the names the claims are kept
 * under: inline, as they are run once per entry set of the tree (a call
 * into another file each cost more than their work).
 */
static inline const char *exck_cur_path(const struct fk_exfat_check *x)
{
	return x->path_len ? x->path : "/";
}

/* Append "/@name" (@len bytes, without its NUL) to the current path; the
 * old length in *@old.  0 or -ENOMEM. */
static inline int exck_push_name(struct fk_exfat_check *x, const char *name,
				 size_t len, size_t *old)
{
	if (FK_VEC_RESERVE(x->path, x->path_cap, x->path_len + len + 2))
		return -ENOMEM;
	*old = x->path_len;
	x->path[x->path_len++] = '/';
	memcpy(x->path + x->path_len, name, len + 1);
	x->path_len += len;
	return 0;
}

static inline void exck_pop_name(struct fk_exfat_check *x, size_t old)
{
	x->path_len = old;
	if (x->path)
		x->path[old] = '\0';
}

/* The next claims are for the entry whose set starts at entry @ent of the
 * directory walked (its name is read back only if a finding names it). */
static inline void exck_own_entry(struct fk_exfat_check *x, uint32_t ent)
{
	x->own_kind = OWN_ENTRY;
	x->own_name = ent;
}

/* check-exfat-claim.c: the ownership map, claims and their cuts, late
 * claims */
int exck_claim(struct fk_exfat_check *x, const struct fk_exfat_stream *s,
	       uint64_t need, uint64_t limit, struct claim *c);
int exck_claim_special(struct fk_exfat_check *x,
		       const struct fk_exfat_stream *s, uint64_t need,
		       struct claim *c);
int exck_is_fat_cut(const struct claim *c);
int exck_judge_claim(struct fk_exfat_check *x, const struct claim *c,
		     const char *path, const char *what, size_t *idx);
int exck_keep_bits(struct fk_exfat_check *x, const char *why);
int exck_claim_generic(struct fk_exfat_check *x, unsigned char *e,
		       unsigned flags_off, int *is_changed);

/*
 * The allocations of @s's secondaries other than the Stream Extension and
 * the File Name entries, whose bytes 20 to 31 are something else.  Inline:
 * asked of every set, and most hold none.
 */
static inline int exck_claim_secondaries(struct fk_exfat_check *x,
					 struct fk_exfat_set *s,
					 int *is_changed)
{
	uint32_t i;
	int err;

	for (i = 1; i < s->nents; i++) {
		unsigned char *e = s->raw[i];

		if (!(e[GEN_TYPE] & FK_EXFAT_BENIGN))
			continue; /* stream, name, or a set removed anyway */
		if ((err = exck_claim_generic(x, e, GEN_SFLAGS, is_changed)))
			return err;
	}
	return 0;
}
int exck_late_claims(struct fk_exfat_check *x);

/* check-exfat-owners.c: the owners findings name */
int exck_name_owners(struct fk_exfat_check *x);

/* check-exfat-names.c: the names of the directory walked */
/* A 64-bit hash of the @n units @u, up-cased, for the two below. */
uint64_t exck_name_key(const struct fk_exfat_upcase *up, const uint16_t *u,
		       uint32_t n);
/* The same of @n units @v up-cased already (a set's name_up). */
uint64_t exck_upname_key(const uint16_t *v, uint32_t n);
/* Does @ns hold a name equal to the @n units @u (hashed to @key)? */
int exck_has_name(const struct name_set *ns, const struct fk_exfat_upcase *up,
		  uint64_t key, const uint16_t *u, uint32_t n);
/* Add the name @u of @n units (hashed to @key), unless an equal one is
 * there already: 1 added, 0 there already, or -ENOMEM. */
int exck_add_name(struct name_set *ns, const struct fk_exfat_upcase *up,
		  uint64_t key, const uint16_t *u, uint32_t n);
void exck_free_names(struct name_set *ns);
void exck_clear_names(struct name_set *ns);

/* check-exfat-rewrite.c: entry sets planned for the repair's rewrite */
void exck_delete_set(struct fk_exfat_set *s);
int exck_plan_set(struct fk_exfat_check *x, const struct fk_exfat_set *s);
void exck_reseal(const struct fk_exfat_check *x, struct fk_exfat_set *s);

/* check-exfat-sets.c: entry sets */
int exck_check_benign(struct fk_exfat_check *x, struct fk_exfat_set *s);
int exck_may_hold_clusters(const struct fk_exfat_set *s, uint32_t from);
int exck_hidden_set(struct fk_exfat_check *x, struct fk_exfat_set *s);
/* The judgement of @f once the path names its set: sets f->is_gone when
 * the set is to be removed, f->is_walked when it is a directory to walk. */
int exck_judge_file(struct fk_exfat_check *x, struct dirwalk *w,
		    struct file_check *f);

/* check-exfat-walk.c: the walk of the tree */
int exck_walk_dir(struct fk_exfat_check *x, const struct fk_exfat_stream *s,
		  uint32_t nclus, int depth, struct fk_diag *diag);
int exck_walk_tails(struct fk_exfat_check *x);
int exck_walk_root(struct fk_exfat_check *x, struct fk_diag *diag);

/* check-exfat-root.c: the root's volume entries */
int exck_prepare_root(struct fk_exfat_check *x, struct fk_exfat_set *s);
int exck_check_special(struct fk_exfat_check *x, struct fk_exfat_set *s,
		       int is_root);

/* check-exfat-bitmap.c: the allocation bitmap */
int exck_check_bitmap(struct fk_exfat_check *x);
int exck_repair_bitmap(struct fk_exfat_check *x, enum bm_pass pass);

#endif
