/*
 * check-label.c: the volume label, in the boot sector and as the root
 * directory's label entry: which of them is the volume's, a root label
 * entry that owns clusters or is not the only one, a label fsck.fat or
 * Windows would not take, and a boot sector with no extended BPB to
 * hold one.
 */
#include "fat/check-int.h"

#include <string.h>

#include "fat/dir.h"
#include "fat/fat-boot.h"
#include "fat/slot.h"
#include "lib/names.h"
#include "volume/volume.h"

static const unsigned char no_name[11] = "NO NAME    ";

/* @raw as printed: trailing spaces cut, control bytes as '?'. */
static void show_label(const unsigned char raw[11], char out[12])
{
	size_t n, i;

	for (i = 0; i < 11; i++)
		out[i] = raw[i] < 0x20 || raw[i] == 0x7f ? '?' : (char)raw[i];
	for (n = 11; n > 0 && out[n - 1] == ' '; n--)
		;
	out[n] = '\0';
}

/*
 * Will label entry @l still own clusters after this repair (fsck.fat
 * checks a label's chain as a file's, and so does the walk)?  From the
 * claim log, less the tails --trim-prealloc frees: a label of size 0
 * whose whole chain is such a tail owns nothing once repaired, and left
 * alone it would be deleted only by a second run.
 */
static int owns_clusters(const struct fat_check *ck, const struct label_ent *l)
{
	uint64_t nclus = 0;
	size_t i;

	for (i = 0; i < ck->runs.n; i++) {
		const struct run *r = run_at(ck, i);

		if (r->who.dir == l->run && r->who.slot == l->slot)
			nclus += r->nclus;
	}
	for (i = 0; i < ck->tails.n && nclus; i++) {
		const struct tail *t = &ck->tails.v[i];

		if (t->is_trimmed && t->who.dir == l->run &&
		    t->who.slot == l->slot)
			nclus -= t->nclus < nclus ? t->nclus : nclus;
	}
	return nclus > 0;
}

/* Plan to delete the root's label entry @l, which is not valid. */
static void drop_label(struct fat_check *ck, const struct label_ent *l,
		       const char *why)
{
	int has_chain = owns_clusters(ck, l);
	struct ent_fix fix;
	char shown[12];
	size_t idx;

	show_label(l->raw, shown);
	idx = ck_report(ck->rec, FK_SEV_ERROR, "label", NULL,
			"the root directory's volume label '%s' (slot %u) is "
			"not valid: %s%s",
			shown, l->slot, why,
			has_chain ? "; it owns clusters, so it is left for a "
				    "person"
				  : "");
	/* Deleting it would leave its clusters lost, for a second run to
	 * free (no writer gives a label clusters): left alone, judged the
	 * same way every run. */
	if (has_chain)
		return;
	ck_set_fix(ck->rec, idx, "label entry deleted");
	memset(&fix, 0, sizeof(fix));
	fix.op = EF_DELETE;
	fix.dir_clus = l->dir;
	fix.slot = l->slot;
	fix.nslots = 1;
	if (ck_plan_entry(ck, &fix))
		ck->rec->is_nomem = 1;
}

/* A lower-case label @l: stored in upper case (in ck->root_label). */
static size_t mend_case(struct fat_check *ck, const struct label_ent *l)
{
	struct ent_fix fix;
	char shown[12];
	size_t idx;
	int i;

	show_label(l->raw, shown);
	idx = ck_report(ck->rec, FK_SEV_WARNING, "label-case", NULL,
			"the volume label '%s' holds lower-case letters, which "
			"FAT labels may not (fsck.fat -U flags them)",
			shown);
	/* Through the name step, which rewrites the name bytes of the slot
	 * as it finds it then: the walk may have planned changes to the same
	 * slot (its chain), which a whole-slot rewrite would undo or skip. */
	memset(&fix, 0, sizeof(fix));
	fix.op = EF_NAME;
	fix.dir_clus = l->dir;
	fix.slot = l->slot;
	fix.nslots = 1;
	fix.set_name = 1;
	if (fk_dir_read_slot(ck->vol, fix.dir_clus, fix.slot, fix.old))
		return NONE;  /* read before: the walk would have failed */
	fix.nt = fix.old[12]; /* kept as it is */
	for (i = 0; i < 11; i++)
		if (ck->root_label[i] >= 'a' && ck->root_label[i] <= 'z')
			ck->root_label[i] =
				(unsigned char)(ck->root_label[i] - 'a' + 'A');
	memcpy(fix.name, ck->root_label, 11);
	ck_set_fix(ck->rec, idx, "stored in upper case");
	if (ck_plan_entry(ck, &fix))
		ck->rec->is_nomem = 1;
	return idx;
}

/*
 * The root's label entries judged by the rules for labels before the
 * label is compared with the boot sector's: one that is not valid is
 * deleted (as fsck.fat -a does), never copied, and the next one, if
 * any, is the volume's label (so one run settles a root with several);
 * lower case is stored upper case (as fsck.fat -a -U does).  Sets
 * has_root_label and root_label.  Returns 1 when that settles both
 * labels.
 */
static int judge_root_label(struct fat_check *ck)
{
	const struct label_ent *l = NULL;
	const char *why;
	char shown[12];
	size_t i, idx;

	for (i = 0; i < ck->root_labels.n; i++) {
		l = &ck->root_labels.v[i];
		if (fk_label_check(l->raw, &why) != FK_LABEL_BAD)
			break;
		drop_label(ck, l, why);
	}
	if (i == ck->root_labels.n) {
		ck->has_root_label = 0;
		return 0; /* none left: compared as none */
	}
	ck->has_root_label = 1;
	memcpy(ck->root_label, l->raw, 11);
	show_label(l->raw, shown);
	switch (fk_label_check(l->raw, &why)) {
	case FK_LABEL_HIGH:
		ck_report(ck->rec, FK_SEV_WARNING, "label-8bit", NULL,
			  "the volume label '%s' holds bytes from 0x80, "
			  "code-page letters Windows and Linux show (fsck.fat "
			  "4.2 takes them for control characters and would "
			  "remove the label)",
			  shown);
		return 0;
	case FK_LABEL_LOWER:
		idx = mend_case(ck, l);
		if (!ck->g->has_ext_boot || strcmp(shown, ck->g->label))
			return 0; /* compared as mended, with the boot's */
		ck_set_fix(ck->rec, idx,
			   "stored in upper case, in the boot sector too");
		memcpy(ck->label, ck->root_label, 11);
		ck->fix_label = 1;
		return 1;
	default:
		return 0;
	}
}

/*
 * No extended boot signature: the boot sector defines no label or serial,
 * which fsck.fat takes for an empty label that differs from the root's
 * (or, with none there, for a label that is not valid).  The repair
 * signs the extended BPB with the root's label or "NO NAME", as fsck.fat
 * -a does, but keeps the serial bytes (fsck.fat zeroes them).
 */
static void check_no_ext_bpb(struct fat_check *ck)
{
	/* BS_BootSig: byte 38, on FAT32 byte 66 */
	unsigned sig_off = fk_fat_is_32(ck->g) ? 66 : 38;
	char root[12];
	size_t idx;

	if (ck->has_root_label)
		show_label(ck->root_label, root);
	idx = ck_report(ck->rec, FK_SEV_ERROR, "label", NULL,
			"the boot sector has no extended boot signature "
			"(byte %u is 0x%02X, not 0x29), so no label is set "
			"there; the root directory's label is %s%s%s",
			sig_off, ck->vol->boot[sig_off],
			ck->has_root_label ? "'" : "",
			ck->has_root_label ? root : "none",
			ck->has_root_label ? "'" : "");
	memcpy(ck->label, ck->has_root_label ? ck->root_label : no_name, 11);
	ck->label[0] = fk_short_first(ck->label); /* as a boot sector */
	ck_set_fix(ck->rec, idx,
		   "extended boot signature set, with the label '%.11s' (the "
		   "serial kept)",
		   (const char *)ck->label);
	ck->fix_label = 1;
}

/* fsck.fat's rule: the root's label entry wins; none means "NO NAME". */
void ck_check_label(struct fat_check *ck)
{
	const struct fk_geom *g = ck->g;
	char root[12];
	size_t idx;

	if (judge_root_label(ck))
		return;
	if (!g->has_ext_boot) {
		check_no_ext_bpb(ck);
		return;
	}
	if (!ck->has_root_label) {
		/* A blank one too: fsck.fat calls it not valid. */
		if (!memcmp(g->label_raw, no_name, 11))
			return;
		show_label(g->label_raw, root);
		idx = ck_report(ck->rec, FK_SEV_ERROR, "label", NULL,
				"the boot sector's label is '%s' but the root "
				"directory has %s",
				root,
				ck->root_labels.n ? "no valid one" : "none");
		memcpy(ck->label, no_name, 11);
	} else {
		/* As the boot sector holds it: a directory entry stores a
		 * first byte 0xE5 as 0x05, a boot sector does not. */
		unsigned char want[11];
		char boot[12];
		size_t n;

		memcpy(want, ck->root_label, 11);
		want[0] = fk_short_first(want);
		/* Byte for byte, as fsck.fat compares them: a NUL in the
		 * padding is a difference too (fsck.fat: "... and
		 * different"), which the shown names may not tell. */
		if (!memcmp(want, g->label_raw, 11))
			return;
		show_label(want, root);
		show_label(g->label_raw, boot);
		for (n = 0; want[n] == g->label_raw[n]; n++)
			;
		idx = ck_report(ck->rec, FK_SEV_ERROR, "label", NULL,
				"the boot sector's label is '%s' but the root "
				"directory's is '%s' (byte %zu: 0x%02X, not "
				"0x%02X)",
				boot, root, n, g->label_raw[n], want[n]);
		memcpy(ck->label, want, 11);
	}
	ck_set_fix(ck->rec, idx, "boot sector label set to '%.11s'",
		   (const char *)ck->label);
	ck->fix_label = 1;
}
