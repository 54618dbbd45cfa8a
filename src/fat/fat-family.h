/*
 * fat-family.h: the FAT family (FAT12/16/32) as the rest of fatkit sees
 * it: one table (family.h), registered in mount/families.c.
 */
#ifndef FATKIT_FAT_FAMILY_H
#define FATKIT_FAT_FAMILY_H

struct fk_family;

extern const struct fk_family fk_fat_family;

#endif
