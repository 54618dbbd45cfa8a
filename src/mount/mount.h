/*
 * mount.h: opening a volume.  The device, the window where the volume
 * lies, the family whose boot sector it is (asked of each registered
 * family, families.h, chosen once into vol->fam), its boot region, the
 * FAT cache, and what the family keeps.  fk_volume_close() (volume.h)
 * undoes it.
 */
#ifndef FATKIT_MOUNT_H
#define FATKIT_MOUNT_H

struct fk_diag;
struct fk_volume;
struct fk_volume_opts;

/*
 * Open the device, read and check the boot sector, set up the FAT cache
 * (on exFAT also: the boot region's checksum, and the backup unless
 * opts->is_main_boot_only, judged into the family's own facts, the root's
 * special entries and up-case table loaded).  Every defect gets its own
 * reason in @diag and FK_ECORRUPT.  *@out is the caller's;
 * fk_volume_close() frees it (without flushing).  Reads only.
 */
int fk_volume_open(const struct fk_volume_opts *opts, struct fk_volume **out,
		   struct fk_diag *diag);

#endif
