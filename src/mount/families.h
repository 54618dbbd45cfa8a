/*
 * families.h: every family fatkit reads, the one list that names them
 * (families.c).  fk_volume_open() asks each in turn whether a boot
 * sector is its own; everything after that reaches the family only
 * through vol->fam.
 */
#ifndef FATKIT_FAMILIES_H
#define FATKIT_FAMILIES_H

struct fk_family;

/*
 * The registered families, NULL-terminated, in the order they are asked.
 * The last one also reads a boot sector that no family claims, so that
 * its parser's reasons say what is wrong there.
 */
extern const struct fk_family *const fk_families[];

#endif
