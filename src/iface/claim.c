/*
 * claim.c: a claim's cut reported, and the chain's end planned, for both
 * checkers: the one table of what each reason is called and says.
 */
#include "iface/claim.h"

#include "iface/findings.h"
#include "table/fat.h"
#include "volume/volume.h"

/* The finding code of each reason; NULL: nothing to report. */
static const char *const cut_code[] = {
	[FK_CUT_NONE] = "short-chain", [FK_CUT_LIMIT] = NULL,
	[FK_CUT_START] = "bad-start",  [FK_CUT_FREE] = "bad-link",
	[FK_CUT_BAD] = "bad-link",     [FK_CUT_VALUE] = "bad-link",
	[FK_CUT_LOOP] = "loop",	       [FK_CUT_CROSS] = "cross-link",
	[FK_CUT_LONG] = "long-chain",  [FK_CUT_HEAP] = "past-heap",
};

/* What a value that is no link is called, where the value is judged. */
static const char *value_name(enum fk_ent_class cls)
{
	return cls == FK_ENT_FREE  ? "a free entry"
	       : cls == FK_ENT_BAD ? "a bad cluster"
				   : "the invalid value";
}

/* The finding for a link to a free or bad cluster, or a value that is no
 * link: the one reason the families word differently. */
static size_t report_link(struct fk_check *ck, const struct fk_claim_ops *ops,
			  const struct fk_claim *c, const char *path,
			  const char *what, uint32_t max)
{
	const char *code = cut_code[c->why];
	int is_free = c->why == FK_CUT_FREE;

	if (c->why == FK_CUT_VALUE && ops->is_value_judged)
		return ck_report(ck, FK_SEV_ERROR, code, path,
				 "%scluster %u links to %s 0x%X", what, c->at,
				 value_name(c->cls), c->val);
	if (c->why == FK_CUT_VALUE && c->cls == FK_ENT_RANGE)
		return ck_report(ck, FK_SEV_ERROR, code, path,
				 "%scluster %u links to %u, past the last "
				 "cluster %u",
				 what, c->at, c->val, max);
	if (c->why == FK_CUT_VALUE)
		return ck_report(ck, FK_SEV_ERROR, code, path,
				 "%scluster %u holds the reserved value 0x%X",
				 what, c->at, c->val);
	if (!c->last)
		return ck_report(ck, FK_SEV_ERROR, code, path,
				 "%sfirst cluster %u is %s", what, c->at,
				 is_free ? "free" : "marked bad");
	return ck_report(ck, FK_SEV_ERROR, code, path,
			 "%scluster %u links to %s cluster %u", what, c->last,
			 is_free ? "free" : "bad", c->at);
}

int fk_claim_report(struct fk_check *ck, const struct fk_claim_ops *ops,
		    void *arg, const struct fk_claim *c, const char *path,
		    const char *what, size_t *idx)
{
	uint32_t max = fk_clus_max(&ck->vol->g);
	const char *code = cut_code[c->why];

	*idx = NONE;
	switch (c->why) {
	case FK_CUT_NONE:
		if (!c->need || c->nclus >= c->need)
			return 0;
		*idx = ck_report(ck, FK_SEV_ERROR, code, path,
				 "%scluster chain of %u cluster%s is shorter "
				 "than the %llu its length needs",
				 what, c->nclus, ck_plural(c->nclus),
				 (unsigned long long)c->need);
		return 0;
	case FK_CUT_LIMIT:
		return 0;
	case FK_CUT_START:
		*idx = ck_report(ck, FK_SEV_ERROR, code, path,
				 "%sfirst cluster %u is out of range (2 to %u)",
				 what, c->at, max);
		return 0;
	case FK_CUT_FREE:
	case FK_CUT_BAD:
	case FK_CUT_VALUE:
		*idx = report_link(ck, ops, c, path, what, max);
		return 0;
	case FK_CUT_LOOP:
		*idx = ck_report(ck, FK_SEV_ERROR, code, path,
				 "%scluster chain loops: cluster %u links back "
				 "to %u",
				 what, c->last, c->at);
		return 0;
	case FK_CUT_CROSS:
		/* The owners step names the first owner in the message. */
		*idx = ck_report(ck, FK_SEV_ERROR, code, path,
				 "%sshares cluster %u with %s", what, c->at,
				 ops->cross_with);
		return ops->note_cross(arg, c->at, *idx, path, what);
	case FK_CUT_LONG:
		if (c->need)
			*idx = ck_report(ck, FK_SEV_ERROR, code, path,
					 "%scluster chain is longer than the "
					 "%llu cluster%s its length needs%s",
					 what, (unsigned long long)c->need,
					 ck_plural(c->need), ops->long_why);
		else
			*idx = ck_report(ck, FK_SEV_ERROR, "dir-size", path,
					 "%sdirectory is over %u MiB", what,
					 ops->dir_max_len >> 20);
		return 0;
	case FK_CUT_HEAP:
		*idx = ck_report(ck, FK_SEV_ERROR, code, path,
				 "%scontiguous run from cluster %u runs past "
				 "the last cluster %u",
				 what, c->at, max);
		return 0;
	}
	return 0;
}

int fk_claim_is_cut(const struct fk_claim *c)
{
	return c->nclus && (c->why == FK_CUT_FREE || c->why == FK_CUT_BAD ||
			    c->why == FK_CUT_VALUE || c->why == FK_CUT_LOOP ||
			    c->why == FK_CUT_CROSS || c->why == FK_CUT_LONG);
}

int fk_claim_end(struct fk_check *ck, const struct fk_claim_ops *ops, void *arg,
		 size_t idx, uint32_t last)
{
	ck_set_fix(ck, idx, "chain ended at cluster %u", last);
	return ops->plan_end(arg, last);
}
