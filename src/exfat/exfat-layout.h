/*
 * exfat-layout.h: byte offsets of the fields of exFAT's main boot sector
 * and of its 32-byte directory entries (Microsoft's exFAT specification,
 * sections 3.1, 6 and 7), for the exFAT modules only: the boot region's
 * judge, the iterator, the checker and the writer read and write them
 * through these names and no others.
 */
#ifndef FATKIT_EXFAT_LAYOUT_H
#define FATKIT_EXFAT_LAYOUT_H

#include <stdint.h>

/* Main boot sector fields (spec 3.1), byte offsets. */
#define EB_JUMP	      0
#define EB_NAME	      3
#define EB_MBZ	      11
#define EB_MBZ_LEN    53
#define EB_PART_OFF   64
#define EB_VOL_LEN    72
#define EB_FAT_OFF    80
#define EB_FAT_LEN    84
#define EB_HEAP_OFF   88
#define EB_NCLUS      92
#define EB_ROOT_CLUS  96
#define EB_SERIAL     100
#define EB_REVISION   104
#define EB_FLAGS      106
#define EB_SEC_SHIFT  108
#define EB_CLUS_SHIFT 109
#define EB_NFATS      110
#define EB_DRIVE_SEL  111
#define EB_PERCENT    112
#define EB_BOOT_SIG   510

/* Any entry (6.2 - 6.4): the generic primary and secondary templates. */
#define GEN_TYPE     0	/* EntryType */
#define GEN_COUNT    1	/* primary: SecondaryCount */
#define GEN_CHECKSUM 2	/* primary: SetChecksum */
#define GEN_PFLAGS   4	/* primary: GeneralPrimaryFlags */
#define GEN_SFLAGS   1	/* secondary: GeneralSecondaryFlags */
#define GEN_FIRST    20 /* FirstCluster */
#define GEN_LEN	     24 /* DataLength */
/* File directory entry (7.4). */
#define FE_ATTR	    4
#define FE_CTIME    8
#define FE_MTIME    12
#define FE_ATIME    16
#define FE_CTIME_MS 20
#define FE_MTIME_MS 21
#define FE_CTIME_TZ 22
#define FE_MTIME_TZ 23
#define FE_ATIME_TZ 24
/* Stream Extension (7.6). */
#define SE_FLAGS     1
#define SE_NAME_LEN  3
#define SE_NAME_HASH 4
#define SE_VDL	     8
#define SE_FIRST     GEN_FIRST
#define SE_LEN	     GEN_LEN
/* File Name (7.7): 15 units from byte 2. */
#define FN_NAME	 2
#define FN_UNITS 15

/* File Name entries a name of @len16 UTF-16 units takes (7.7). */
static inline uint32_t fk_exfat_name_nents(uint32_t len16)
{
	return (len16 + FN_UNITS - 1) / FN_UNITS;
}
/* Special entries (7.1 - 7.5). */
#define BM_FLAGS    1 /* allocation bitmap: BitmapFlags */
#define UC_CHECKSUM 4 /* up-case table: TableChecksum */
#define VL_COUNT    1 /* volume label: CharacterCount */
#define VL_LABEL    2 /* volume label: VolumeLabel */
#define GUID_VALUE  6 /* volume GUID: VolumeGuid */

#endif
