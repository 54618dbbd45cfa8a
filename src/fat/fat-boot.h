/*
 * fat-boot.h: the FAT family's side of opening a volume (family.h): does
 * a boot sector hold a FAT12/16/32 BPB, and reading it.  The BPB's rules
 * themselves are fk_volume_parse()'s (volume.c), which the unit tests and
 * the FAT32 backup check use too.
 */
#ifndef FATKIT_FAT_BOOT_H
#define FATKIT_FAT_BOOT_H

#include <stdint.h>

struct fk_diag;
struct fk_volume;
struct fk_volume_opts;

/* Does @bs (512 bytes) hold a BPB that parses for @vol_len bytes? */
int fk_fat_probe(const unsigned char *bs, uint64_t vol_len);

/*
 * Parse the BPB of @first (the first 512 bytes; a dump opened with
 * opts->is_cut_ok judged as if whole, vol->present_len set) into vol->g
 * and read the whole boot sector into vol->boot.  Returns 0, FK_ECORRUPT
 * with the reason in @diag, -ENOMEM or -errno.  Reads only.
 */
int fk_fat_read_boot(struct fk_volume *vol, const unsigned char *first,
		     const struct fk_volume_opts *opts, struct fk_diag *diag);

#endif
