/*
 * check.c: the checker's public side and its spine.  fk_check_open()
 * opens the volume a check should see, fk_check_new() takes the checker
 * of the volume's family (vol->fam->check, check-family.h), and
 * fk_check_run() and fk_check_repair() run it; what every check records
 * (findings, counts) is the record of findings.h, which the families
 * fill in through findings.c.  The FAT checker's own setup and phase
 * order are in fat/check-run.c, the exFAT one's in check-exfat.c.
 */
#include "engine/check.h"

#include <errno.h>
#include <stdlib.h>

#include "iface/check-family.h"
#include "iface/findings.h"
#include "io/device.h"
#include "lib/diag.h"
#include "mount/mount.h"
#include "volume/family.h"
#include "volume/volume.h"

/* ---- setup --------------------------------------------------------------- */

/* Does the checker of @vol's family prefer its backup boot region? */
static int wants_backup(const struct fk_volume *vol)
{
	const struct fk_check_family *fam = vol->fam->check;

	return fam && fam->wants_backup && fam->wants_backup(vol);
}

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
		if (!wants_backup(vol)) {
			*out = vol;
			return 0;
		}
		/* A writer's lock is the open's own: one open at a time. */
		fk_volume_close(vol);
	}
	/* The repair restores the main region from a sound backup: check
	 * the volume the backup describes, or a second run would see
	 * another one (another root, say). */
	bo.is_backup_boot = 1;
	if (!fk_volume_open(&bo, &vol, NULL)) {
		if (!wants_backup(vol)) {
			*out = vol;
			return 0;
		}
		fk_volume_close(vol);
	}
	if (err)
		return err; /* the main region's reason stays in @diag */
	return fk_volume_open(opts, out, diag);
}

int fk_check_new(struct fk_volume *vol, const struct fk_check_opts *opts,
		 struct fk_check **out)
{
	/* The checker of the family the volume was opened as. */
	const struct fk_check_family *fam = vol->fam->check;
	struct fk_check *ck;
	int err;

	if (!fam)
		return -EOPNOTSUPP;
	if (!(ck = calloc(1, sizeof(*ck))))
		return -ENOMEM;
	ck->vol = vol;
	ck->o = *opts;
	ck->fam = fam;
	if ((err = fam->new_state(ck, vol, opts, &ck->fam_state))) {
		free(ck);
		return err;
	}
	*out = ck;
	return 0;
}

void fk_check_free(struct fk_check *ck)
{
	if (!ck)
		return;
	ck_findings_free(ck);
	ck->fam->free_state(ck->fam_state);
	free(ck);
}

const struct fk_finding *fk_check_findings(const struct fk_check *ck, size_t *n)
{
	*n = ck->finds.n;
	return ck->finds.v;
}

const struct fk_check_stats *fk_check_stats(const struct fk_check *ck)
{
	return &ck->st;
}

/* ---- the whole check ---------------------------------------------------- */

int fk_check_run(struct fk_check *ck, struct fk_diag *diag)
{
	int err = ck->fam->run(ck->fam_state, diag);

	if (!err && ck->is_nomem)
		err = -ENOMEM;
	if (err)
		fk_diag_subject(diag, fk_device_path(ck->vol->dev));
	return err;
}

int fk_check_repair(struct fk_check *ck, struct fk_diag *diag)
{
	size_t i;
	int err = ck->fam->repair(ck->fam_state, diag);

	if (err) {
		fk_diag_subject(diag, fk_device_path(ck->vol->dev));
		return err;
	}
	for (i = 0; i < ck->finds.n; i++)
		if (ck->finds.v[i].fix && !ck->finds.v[i].is_fixed) {
			ck->finds.v[i].is_fixed = 1;
			ck->st.fixed++;
		}
	return 0;
}
