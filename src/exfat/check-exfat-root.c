/*
 * check-exfat-root.c: the exFAT checker's volume entries of the root
 * (allocation bitmap, up-case table, label, GUID), and the up-case table
 * loaded and mended before the root is walked.
 */
#include "exfat/check-exfat-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "table/fat.h"
#include "volume/volume.h"

#define UPCASE_SEARCH 4096u /* clusters from the heap's start */

/* Is the contiguous run of the clusters @len needs from @first in the heap? */
static int is_run_in_heap(const struct fk_geom *g, uint32_t first, uint64_t len)
{
	uint64_t n = fk_exfat_clus_needed(g, len);

	return n && fk_clus_valid(g, first) && n - 1 <= fk_clus_max(g) - first;
}

/*
 * The FAT chain of the allocation bitmap or the up-case table (@what,
 * finding @code), which Linux and fsck.exfat never follow: they read the
 * contiguous run @c claimed.  Where the chain leaves the run, a finding,
 * and when the run is known to be the structure (@is_sound), the chain
 * rewritten as the run ending in EOC.  Else no bitmap bit is cleared.
 * Returns 1 when the chain leaves the run, 0 when it does not, or -errno.
 */
static int judge_run_chain(struct fk_exfat_check *x, const struct claim *c,
			   const char *code, const char *what, int is_sound)
{
	uint32_t i, val, want, bad = 0, bad_val = 0, nbad = 0;
	struct fk_fat_fix f;
	size_t idx;
	int err;

	for (i = 0; i < c->nclus; i++) {
		f.clus = c->s->first_clus + i;
		want = i + 1 < c->nclus ? f.clus + 1 : fk_fat_eoc(x->g);
		if ((err = fk_fat_get(x->vol, f.clus, &val)))
			return err;
		if (val == want)
			continue;
		if (!nbad++) {
			bad = f.clus;
			bad_val = val;
		}
		f.val = want;
		if (is_sound && (err = PUSH(x->fat_fixes, f)))
			return err;
	}
	if (!nbad)
		return 0;
	idx = ck_report(x->ck, FK_SEV_ERROR, code, NULL,
			"%s: its FAT chain leaves the contiguous run of %u "
			"cluster%s from cluster %u that readers use "
			"(FatEntry[%u] is 0x%X)",
			what, c->nclus, ck_plural(c->nclus), c->s->first_clus,
			bad, bad_val);
	if (is_sound) {
		ck_set_fix(x->ck, idx, "chain rewritten as the run");
		return 1;
	}
	err = exck_keep_bits(x, "the up-case table is not known for certain");
	return err ? err : 1;
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
	/* Read, owned and written as Linux and fsck.exfat read it: the
	 * contiguous run, when it is in the heap; its chain is judged
	 * apart. */
	x->bm_stream.is_no_fat_chain =
		is_run_in_heap(g, s->first_clus, x->bm_need_len);
	if ((err = exck_claim_special(x, &x->bm_stream,
				      fk_exfat_clus_needed(g, x->bm_need_len),
				      &c)) ||
	    (err = exck_judge_claim(x, &c, NULL, "allocation bitmap: ", &idx)))
		return err;
	if ((c.why != FK_CUT_NONE && c.why != FK_CUT_LONG) ||
	    c.nclus < fk_exfat_clus_needed(g, x->bm_need_len)) {
		/* XXX: rebuilding a bitmap elsewhere needs free clusters
		 * found without one; refused for now. */
		x->is_tree_incomplete = 1;
		return 0;
	}
	if (x->bm_stream.is_no_fat_chain &&
	    (err = judge_run_chain(x, &c, "bitmap-chain", "allocation bitmap",
				   1)) < 0)
		return err;
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
	struct fk_exfat_upcase *up = fk_exfat_of(x->vol)->upcase;
	struct fk_exfat_stream st = {first_clus, len, 1};
	unsigned char *raw;
	uint32_t at = 0, nfix = 0;
	uint64_t k;
	int err;

	/* Read as Linux and fsck.exfat read it: the contiguous run from
	 * FirstCluster, whatever the FAT says (check_upcase_entry() judges
	 * the chain). */
	if (!len || len > FK_EXFAT_UPCASE_MAX_LEN || len % 2 ||
	    !is_run_in_heap(x->g, first_clus, len))
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

/*
 * Where is the up-case table of @len bytes whose TableChecksum is @csum,
 * when FirstCluster (@skip) holds something else?  Every formatter puts it
 * near the heap's start, after the bitmap, so the first UPCASE_SEARCH
 * clusters are searched (a bounded cost on any card): a run starts where
 * a table may (unit 0 maps to 0, or a compressed table opens with an
 * identity run), and its bytes must hash to @csum.  *@at: the one run
 * found; two or more are no answer (a copy in a file).  Returns 1 when
 * found, 0 when not, or -errno.
 */
static int find_upcase(struct fk_exfat_check *x, uint32_t skip, uint64_t len,
		       uint32_t csum, uint32_t *at)
{
	const struct fk_geom *g = x->g;
	uint32_t c, last = fk_clus_max(g), nfound = 0;
	uint64_t n = fk_exfat_clus_needed(g, len);
	unsigned char *raw;
	int err = 0;

	if (!len || len > FK_EXFAT_UPCASE_MAX_LEN || len % 2 || n > g->nclus)
		return 0; /* a run of @n clusters must fit the heap */
	if (!(raw = malloc((size_t)len)))
		return -ENOMEM;
	last -= (uint32_t)(n - 1);
	if (last - FK_FIRST_CLUS >= UPCASE_SEARCH)
		last = FK_FIRST_CLUS + UPCASE_SEARCH - 1;
	for (c = FK_FIRST_CLUS; c <= last && nfound < 2; c++) {
		struct fk_exfat_stream st = {c, len, 1};
		uint32_t u0;

		if (c == skip)
			continue;
		if ((err = fk_device_read(x->vol->dev, fk_clus_off(g, c), raw,
					  2)))
			goto unread;
		u0 = get_le16(raw);
		if (u0 != 0 && u0 != 0xFFFF)
			continue;
		if ((err = fk_exfat_stream_read(x->vol, &st, raw, len, NULL)))
			goto unread;
		if (fk_exfat_upcase_checksum(raw, (size_t)len) == csum &&
		    !nfound++)
			*at = c;
		continue;
	unread: /* a cut image: no table here */
		if (err != FK_ECORRUPT)
			break;
		err = 0;
	}
	free(raw);
	if (err)
		return err;
	return nfound == 1;
}

/*
 * The table at FirstCluster @first does not hash to the entry's
 * TableChecksum @csum, even mended, or cannot be read: a damaged
 * FirstCluster is found out by a run that does, which is then loaded in
 * its place.  Returns 0 or -errno.
 */
static int find_moved_upcase(struct fk_exfat_check *x, uint32_t first,
			     uint64_t len, uint32_t csum)
{
	uint32_t at = 0;
	int found;

	if ((found = find_upcase(x, first, len, csum, &at)) <= 0)
		return found;
	free(x->upcase_raw);
	x->upcase_raw = NULL;
	x->upcase_nfix = 0;
	if ((found = load_upcase(x, at, len)))
		return found == FK_ECORRUPT ? 0 : found;
	x->upcase_lost_at = first;
	x->upcase_found_at = at;
	return 0;
}

/* The up-case table entry (spec 7.2). */
static int check_upcase_entry(struct fk_exfat_check *x, struct fk_exfat_set *s)
{
	struct fk_exfat_stream st;
	struct claim c;
	size_t idx, moved = 0;
	uint32_t want;
	int err, is_moved = 0;

	x->own_kind = OWN_UPCASE;
	if (x->has_upcase) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "upcase", NULL,
				"a second up-case table entry");
		ck_set_fix(x->ck, idx, "entry removed");
		exck_delete_set(s);
		return exck_plan_set(x, s);
	}
	x->has_upcase = 1;
	if (x->upcase_found_at && s->first_clus == x->upcase_lost_at) {
		/* The table this check loaded, found by its checksum. */
		moved = ck_report(x->ck, FK_SEV_ERROR, "upcase", NULL,
				  "up-case table: FirstCluster %u holds no "
				  "table with its TableChecksum 0x%08X; the "
				  "run from cluster %u does",
				  s->first_clus, s->upcase_csum,
				  x->upcase_found_at);
		s->first_clus = x->upcase_found_at;
		is_moved = 1;
	}
	st.first_clus = s->first_clus;
	st.data_len = s->data_len;
	/* Claimed as Linux and fsck.exfat read it: the contiguous run, when
	 * it is in the heap; its chain is judged apart. */
	st.is_no_fat_chain = is_run_in_heap(x->g, s->first_clus, s->data_len);
	if ((err = exck_claim_special(
		     x, &st, fk_exfat_clus_needed(x->g, s->data_len), &c)) ||
	    (err = exck_judge_claim(x, &c, NULL, "up-case table: ", &idx)))
		return err;
	if ((c.why != FK_CUT_NONE && c.why != FK_CUT_LONG) ||
	    !x->is_upcase_loaded ||
	    fk_exfat_of(x->vol)->upcase->first_clus != s->first_clus) {
		ck_report(x->ck, FK_SEV_ERROR, "upcase", NULL,
			  "up-case table at cluster %u (%llu bytes) cannot be "
			  "read; names are compared through ASCII only",
			  s->first_clus, (unsigned long long)s->data_len);
		/* Its clusters, wherever they are, are not known: none is
		 * freed (the rule for structures not understood). */
		return exck_keep_bits(x, "the up-case table cannot be read");
	}
	if (is_moved) {
		ck_set_fix(x->ck, moved, "FirstCluster set to %u",
			   s->first_clus);
		put_le32(&s->raw[0][GEN_FIRST], s->first_clus);
	}
	if ((err = judge_run_chain(x, &c, "upcase-chain", "up-case table",
				   s->upcase_csum == x->upcase_csum)) < 0)
		return err;
	if (err && s->upcase_csum != x->upcase_csum) {
		/* Neither the chain nor the run is known to be the table: a
		 * new checksum would bless the run, and the next repair
		 * would then rewrite the chain over it.  Both are left. */
		ck_report(x->ck, FK_SEV_ERROR, "upcase-checksum", NULL,
			  "up-case TableChecksum 0x%08X, computed 0x%08X over "
			  "the contiguous run",
			  s->upcase_csum, x->upcase_csum);
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
		/* FirstCluster may be what is damaged: the table's own
		 * clusters may then be owned by nothing. */
		if ((err = exck_keep_bits(x, "the up-case table's checksum "
					     "does not match")))
			return err;
	}
	if (s->upcase_csum != want)
		put_le32(&s->raw[0][UC_CHECKSUM], want);
	if ((s->upcase_csum != want || is_moved) && (err = exck_plan_set(x, s)))
		return err;
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
		     len != fk_exfat_bitmap_len(g->nclus)) ||
		    (type == FK_EXFAT_T_UPCASE &&
		     (!len || len > FK_EXFAT_UPCASE_MAX_LEN)))
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
int exck_prepare_root(struct fk_exfat_check *x, struct fk_exfat_set *s)
{
	const struct fk_exfat_upcase *up = fk_exfat_of(x->vol)->upcase;
	size_t idx;
	int err, found;

	if (!(up->defects & FK_EXU_MISSING) && up->raw_len) {
		uint32_t first = up->first_clus, csum = up->csum_stored;
		uint64_t len = up->raw_len;

		err = load_upcase(x, first, len);
		if (err && err != FK_ECORRUPT)
			return err;
		if ((err ||
		     (x->upcase_csum != csum &&
		      (!x->upcase_nfix || x->upcase_csum_fixed != csum))) &&
		    !(up->defects & FK_EXU_DUPLICATE) &&
		    (err = find_moved_upcase(x, first, len, csum)))
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
	if (fk_exfat_of(x->vol)->nbitmaps)
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

int exck_check_special(struct fk_exfat_check *x, struct fk_exfat_set *s,
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
