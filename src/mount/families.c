/*
 * families.c: the registered families.  Adding one is a folder of its own
 * (src/NAME/, filling in a struct fk_family) and a line here.  exFAT is
 * asked first: its name field ("EXFAT   ") settles it, where the FAT
 * family, last, takes any BPB that holds together and gives the reasons
 * for one that does not.
 */
#include "mount/families.h"

#include <stddef.h>

#include "exfat/exfat-family.h"
#include "fat/fat-family.h"

const struct fk_family *const fk_families[] = {
	&fk_exfat_family,
	&fk_fat_family,
	NULL,
};
