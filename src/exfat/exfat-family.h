/*
 * exfat-family.h: the exFAT family as the rest of fatkit sees it: one
 * table (family.h), registered in mount/families.c.
 */
#ifndef FATKIT_EXFAT_FAMILY_H
#define FATKIT_EXFAT_FAMILY_H

struct fk_check_family;
struct fk_family;
struct fk_prealloc_family;

extern const struct fk_family fk_exfat_family;

/* Its engines' steps, which its table holds: the checker's
 * (check-exfat.c) and the preallocation's (exfat-prealloc.c). */
extern const struct fk_check_family fk_check_exfat_family;
extern const struct fk_prealloc_family fk_exfat_prealloc_family;

#endif
