/*
 * claim.h: what the two checkers' claims of cluster chains share.  Both
 * claim a chain's clusters in one ownership map (ownmap.h: a bit per
 * cluster laid out as exFAT's allocation bitmap, which that checker
 * compares it with, and for FAT a second plane, filled by its FAT scan);
 * a claim ends for the same reasons in both, one enum, and a cut is
 * reported and the chain's end planned in one place (claim.c), from one
 * message table.
 */
#ifndef FATKIT_CLAIM_H
#define FATKIT_CLAIM_H

#include <stddef.h>
#include <stdint.h>

#include "table/fat.h"

struct fk_check;

/* Why a claim stopped, short of the chain's whole length or not. */
enum fk_cut {
	FK_CUT_NONE,  /* claimed to the chain's end (exFAT: or as far as
			 its length needs) */
	FK_CUT_LIMIT, /* FAT: claimed what was asked; @at goes on */
	FK_CUT_START, /* the first cluster (@at) is out of range */
	FK_CUT_FREE,  /* FAT: the chain reaches a free cluster (@at) */
	FK_CUT_BAD,   /* FAT: the chain reaches a cluster marked bad (@at) */
	FK_CUT_VALUE, /* @at holds @val, which is no link (class @cls) */
	FK_CUT_LOOP,  /* @last links back into the chain, to @at */
	FK_CUT_CROSS, /* the chain runs into another owner's cluster @at */
	FK_CUT_LONG,  /* exFAT: more clusters than @need (or the limit) */
	FK_CUT_HEAP,  /* exFAT: a contiguous run from @at past the heap */
};

/*
 * Where one claim got to, and why it stopped there.  The fields are
 * spelt once, here, for struct fk_claim and for a family's claim record
 * that begins with a union of the two, so
 * that its code reads c->why while claim.c takes &c->cl.
 */
#define FK_CLAIM_FIELDS                                                        \
	enum fk_cut why;                                                       \
	uint32_t nclus;	       /* clusters claimed */                          \
	uint32_t last;	       /* last cluster claimed; 0: none */             \
	uint32_t at;	       /* the cluster it stopped at (see why) */       \
	uint32_t val;	       /* FK_CUT_VALUE: what @at holds */              \
	enum fk_ent_class cls; /* FK_CUT_VALUE: @val's class */                \
	uint64_t need;	       /* clusters the length needs; 0: no length */

struct fk_claim {
	FK_CLAIM_FIELDS
};

/* A FAT entry a repair rewrites: FAT[@clus] = @val (ending a chain). */
struct fk_fat_fix {
	uint32_t clus, val;
};

/* How a family words and plans what claim.c reports. */
struct fk_claim_ops {
	/* A claim takes every cluster its chain lists and judges the value
	 * the last one holds, free and bad ones too (FK_CUT_VALUE); else a
	 * cluster whose own entry is free or bad is not taken (FK_CUT_FREE,
	 * FK_CUT_BAD) and FK_CUT_VALUE is a reserved value or a link past
	 * the last cluster. */
	int is_value_judged;
	const char *cross_with; /* who else holds a cross-linked cluster */
	const char *long_why;	/* said of a chain longer than its length */
	uint32_t dir_max_len;	/* FK_CUT_LONG with no length: a directory
				    over this many bytes */
	/* Plan FAT[@last] = end of chain.  0 or -ENOMEM. */
	int (*plan_end)(void *arg, uint32_t last);
	/* Keep cross-link finding @idx (NONE: not kept) of @path at @clus,
	 * for the step that names the first owner.  0 or -ENOMEM. */
	int (*note_cross)(void *arg, uint32_t clus, size_t idx,
			  const char *path, const char *what);
};

/*
 * Report why the claim @c of @path stopped short, if it did (@what
 * prefixes the message: "", "directory ", "up-case table: "...).  Returns
 * the finding, or NONE (nothing wrong, or not kept), in *@idx; 0 or
 * -ENOMEM.  Plans nothing but the cross-link note.
 */
int fk_claim_report(struct fk_check *ck, const struct fk_claim_ops *ops,
		    void *arg, const struct fk_claim *c, const char *path,
		    const char *what, size_t *idx);

/*
 * Did @c take its chain as a sound one is taken (to its end or as far as
 * asked, and no shorter than its length needs)?  Then fk_claim_report()
 * has nothing to say and nothing is planned: inline, so that a checker
 * pays no call for each of the many streams that are sound.
 */
static inline int fk_claim_is_whole(const struct fk_claim *c)
{
	return c->why == FK_CUT_LIMIT ||
	       (c->why == FK_CUT_NONE && (!c->need || c->nclus >= c->need));
}

/* Is @c cut inside its chain, so that a repair ends the chain at its last
 * cluster claimed? */
int fk_claim_is_cut(const struct fk_claim *c);

/* Plan the chain's end at @last, said as finding @idx's fix.  0 or
 * -ENOMEM. */
int fk_claim_end(struct fk_check *ck, const struct fk_claim_ops *ops, void *arg,
		 size_t idx, uint32_t last);

#endif
