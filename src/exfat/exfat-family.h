/*
 * exfat-family.h: the exFAT family as the rest of fatkit sees it: one
 * table (family.h), registered in mount/families.c.
 */
#ifndef FATKIT_EXFAT_FAMILY_H
#define FATKIT_EXFAT_FAMILY_H

struct fk_family;

extern const struct fk_family fk_exfat_family;

#endif
