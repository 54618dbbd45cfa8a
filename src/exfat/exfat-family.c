/*
 * exfat-family.c: the exFAT family's table, the one thing of src/exfat/
 * that the opening, the engines and the programs reach: opening (exfat.c,
 * exfat-boot.c, exfat-mount.c), directories (exfat-dir.c), its checker
 * (check-exfat.c and the check-exfat-*.c files), its preallocation steps
 * (exfat-prealloc.c), and what the programs show and accept differently.
 * Nothing in the family refers back to it.
 */
#include "exfat/exfat-family.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "exfat/exfat.h"
#include "iface/check-family.h"
#include "iface/prealloc-int.h"
#include "volume/family.h"

/* The name in the boot sector says exFAT (spec 3.1.2); the rest is
 * fk_exfat_read_boot()'s to judge. */
static int probe(const unsigned char *bs, uint64_t vol_len)
{
	(void)vol_len;
	return fk_exfat_detect(bs);
}

/* libblkid's exfat prober (SDXC cards), shown by that name. */
static int is_blkid_type(const char *type, const char *ver, char *name,
			 size_t len)
{
	(void)ver;
	if (strcmp(type, "exfat"))
		return 0;
	snprintf(name, len, "%s", type);
	return 1;
}

const struct fk_family fk_exfat_family = {
	.name = "exFAT",
	.probe = probe,
	.is_blkid_type = is_blkid_type,
	.head_len = fk_exfat_head_len,
	.read_boot = fk_exfat_read_boot,
	.mount = fk_exfat_mount,
	.unmount = fk_exfat_unmount,
	.can_open_backup = 1,
	.is_fat_rarely_written = 1,
	.dir_open = fk_exfat_fam_dir_open,
	.dir_next = fk_exfat_fam_dir_next,
	.dir_close = fk_exfat_fam_dir_close,
	.walk = fk_exfat_fam_walk,
	.match = fk_exfat_fam_match,
	.info = fk_exfat_fam_info,
	.boot_warning = fk_exfat_fam_boot_warning,
	.check = &fk_check_exfat_family,
	.prealloc = &fk_exfat_prealloc_family,
	.has_fine_times = 1,
	.has_valid_len = 1,
	.has_bitmap = 1,
	/* exFAT has no FOUND.000 convention */
	.no_salvage = "--salvage works on FAT12/16/32 only; on exFAT, -r "
		      "frees lost clusters (run without --salvage)",
	.no_fat_copy = "--fat-copy works on FAT12/16/32 only: leave it out "
		       "on exFAT",
};
