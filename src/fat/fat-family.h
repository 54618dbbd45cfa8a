/*
 * fat-family.h: the FAT family (FAT12/16/32) as the rest of fatkit sees
 * it: one table (family.h), registered in mount/families.c.
 */
#ifndef FATKIT_FAT_FAMILY_H
#define FATKIT_FAT_FAMILY_H

struct fk_check_family;
struct fk_family;
struct fk_prealloc_family;

extern const struct fk_family fk_fat_family;

/* Its engines' steps, which its table holds: the checker's
 * (check-run.c) and the preallocation's (fat-prealloc.c). */
extern const struct fk_check_family fk_check_fat_family;
extern const struct fk_prealloc_family fk_fat_prealloc_family;

#endif
