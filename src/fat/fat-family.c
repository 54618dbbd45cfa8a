/*
 * fat-family.c: the FAT family's table, the one thing of src/fat/ that
 * the opening, the engines and the programs reach: opening (fat-boot.c),
 * directories (dir.c), its checker (check-run.c and the check-*.c files
 * it runs), its preallocation steps (fat-prealloc.c), and what the
 * programs show differently.  Nothing in the family refers back to it,
 * so the family's files use each other without a circle.
 */
#include "fat/fat-family.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fat/dir.h"
#include "fat/fat-boot.h"
#include "iface/check-family.h"
#include "iface/prealloc-int.h"
#include "volume/family.h"

/* libblkid's vfat (or msdos) prober: FAT12, FAT16 or FAT32 as its
 * VERSION says, else "FAT". */
static int is_blkid_type(const char *type, const char *ver, char *name,
			 size_t len)
{
	if (strcmp(type, "vfat") && strcmp(type, "msdos"))
		return 0;
	snprintf(name, len, "%s", ver && !strncmp(ver, "FAT", 3) ? ver : "FAT");
	return 1;
}

/* The boot sector: 512 bytes read with 512-byte sectors. */
static size_t head_len(const struct fk_volume_opts *opts)
{
	(void)opts;
	return 512;
}

const struct fk_family fk_fat_family = {
	.name = "FAT",
	.probe = fk_fat_probe,
	.is_blkid_type = is_blkid_type,
	.head_len = head_len,
	.read_boot = fk_fat_read_boot,
	.dir_open = fk_fat_fam_dir_open,
	.dir_next = fk_fat_fam_dir_next,
	.dir_close = fk_fat_fam_dir_close,
	.walk = fk_fat_fam_walk,
	.is_dot = fk_dirent_is_dot,
	.match = fk_fat_fam_match,
	.info = fk_fat_fam_info,
	.check = &fk_check_fat_family,
	.prealloc = &fk_fat_prealloc_family,
	.has_short_names = 1,
};
