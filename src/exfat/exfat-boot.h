/*
 * exfat-boot.h: the exFAT boot region (Microsoft's exFAT specification,
 * sections 3.1 - 3.4), parsed and judged field by field in exfat-boot.c.
 * Included through exfat.h.
 */
#ifndef FATKIT_EXFAT_BOOT_H
#define FATKIT_EXFAT_BOOT_H

#include <stddef.h>
#include <stdint.h>

struct fk_diag;

#define FK_EXFAT_REGION_SECS  12	  /* main region: sectors 0 .. 11 */
#define FK_EXFAT_BACKUP_SEC   12	  /* backup region: sectors 12 .. 23 */
#define FK_EXFAT_CSUM_SEC     11	  /* the boot checksum sector */
#define FK_EXFAT_MAX_CLUS_LEN (32u << 20) /* spec 3.1.9: 32 MiB at most */

/* VolumeFlags bits (spec 3.1.13). */
#define FK_EXFAT_FLAG_ACTIVE_FAT 0x0001u
#define FK_EXFAT_FLAG_DIRTY	 0x0002u
#define FK_EXFAT_FLAG_MEDIA_FAIL 0x0004u
#define FK_EXFAT_FLAG_CLEAR_ZERO 0x0008u

/*
 * One bit per boot-region defect.  The first one set (lowest bit) is the
 * reason fk_exfat_boot_reason() gives; a checker reports them all.
 * FK_EXFAT_BOOT_FATAL masks those that leave no usable geometry.
 */
enum fk_exfat_boot_defect {
	FK_EXB_SIGNATURE = 1u << 0,   /* 0x55AA at 510 missing */
	FK_EXB_NAME = 1u << 1,	      /* not "EXFAT   " (never set when
					  the volume opened as exFAT) */
	FK_EXB_JUMP = 1u << 2,	      /* JumpBoot is not EB 76 90 */
	FK_EXB_MBZ = 1u << 3,	      /* MustBeZero (11..63) not zero */
	FK_EXB_SEC_SHIFT = 1u << 4,   /* BytesPerSectorShift not 9..12 */
	FK_EXB_CLUS_SHIFT = 1u << 5,  /* SectorsPerClusterShift too large
					  (cluster over 32 MiB) */
	FK_EXB_NFATS = 1u << 6,	      /* NumberOfFats not 1 or 2 */
	FK_EXB_FAT_OFF = 1u << 7,     /* FatOffset < 24 or past the end */
	FK_EXB_FAT_LEN = 1u << 8,     /* FatLength too small for the
					  clusters, or FATs past the heap */
	FK_EXB_HEAP_OFF = 1u << 9,    /* ClusterHeapOffset before the FATs'
					  end or past the volume */
	FK_EXB_NCLUS = 1u << 10,      /* ClusterCount 0, over 0xFFFFFFF5,
					  or past VolumeLength */
	FK_EXB_VOL_LEN = 1u << 11,    /* VolumeLength below 1 MiB worth of
					  sectors, or past the device */
	FK_EXB_ROOT_CLUS = 1u << 12,  /* FirstClusterOfRootDirectory out
					  of 2 .. ClusterCount + 1 */
	FK_EXB_REVISION = 1u << 13,   /* FileSystemRevision major not 1 */
	FK_EXB_ACTIVE_FAT = 1u << 14, /* ActiveFat 1 with one FAT */
	FK_EXB_PERCENT = 1u << 15,    /* PercentInUse over 100, not 0xFF */
	FK_EXB_CHECKSUM = 1u << 16,   /* sector 11 disagrees with the sum */
	FK_EXB_EXT_SIG = 1u << 17,    /* extended boot sector 1..8 lacks
					  its 0xAA550000 signature */
	FK_EXB_BACKUP = 1u << 18,     /* backup region differs (flags and
					  PercentInUse excepted) */
	FK_EXB_BACKUP_CHECKSUM = 1u << 19, /* backup's own sum is wrong */
	FK_EXB_TRUNCATED = 1u << 20,	   /* device too short for the region */
};

#define FK_EXFAT_BOOT_FATAL                                                    \
	(FK_EXB_NAME | FK_EXB_SEC_SHIFT | FK_EXB_CLUS_SHIFT | FK_EXB_NFATS |   \
	 FK_EXB_FAT_OFF | FK_EXB_FAT_LEN | FK_EXB_HEAP_OFF | FK_EXB_NCLUS |    \
	 FK_EXB_VOL_LEN | FK_EXB_ROOT_CLUS | FK_EXB_REVISION |                 \
	 FK_EXB_TRUNCATED)

/* The main boot sector's fields as stored, and what was judged of them. */
struct fk_exfat_boot {
	unsigned char jump[3];
	char fs_name[9];	  /* "EXFAT   ", NUL-terminated */
	uint64_t part_off;	  /* PartitionOffset, sectors (informational) */
	uint64_t vol_len;	  /* VolumeLength, sectors */
	uint32_t fat_off;	  /* FatOffset, sectors */
	uint32_t fat_len;	  /* FatLength, sectors per FAT */
	uint32_t heap_off;	  /* ClusterHeapOffset, sectors */
	uint32_t nclus;		  /* ClusterCount */
	uint32_t root_clus;	  /* FirstClusterOfRootDirectory */
	uint32_t serial;	  /* VolumeSerialNumber */
	uint16_t revision;	  /* FileSystemRevision: major << 8 | minor */
	uint16_t vol_flags;	  /* VolumeFlags (FK_EXFAT_FLAG_*) */
	uint8_t sec_shift;	  /* BytesPerSectorShift */
	uint8_t clus_shift;	  /* SectorsPerClusterShift */
	uint8_t nfats;		  /* NumberOfFats */
	uint8_t drive_sel;	  /* DriveSelect */
	uint8_t percent_in_use;	  /* PercentInUse; 0xFF: not known */
	uint16_t boot_sig;	  /* BootSignature at 510 (0xAA55) */
	uint32_t defects;	  /* enum fk_exfat_boot_defect bits */
	uint32_t csum_stored;	  /* first word of sector 11 */
	uint32_t csum_computed;	  /* over sectors 0 .. 10 (spec 3.4) */
	uint32_t ext_sig_bad;	  /* bit n-1: extended sector n (1..8) lacks
				   its signature */
	uint32_t backup_diff_sec; /* first differing sector of the backup
				     (0..11); valid with FK_EXB_BACKUP */
	uint32_t backup_csum_stored, backup_csum_computed;
};

/*
 * The boot checksum (spec 3.4) over @nsecs sectors of @sec_len bytes at
 * @region: bytes 106, 107 (VolumeFlags) and 112 (PercentInUse) of the
 * first sector are skipped.
 */
uint32_t fk_exfat_boot_checksum(const unsigned char *region, uint32_t sec_len,
				uint32_t nsecs);

/*
 * Parse and judge a boot region: @region holds @len bytes from sector 0
 * (at least 512; 12 sectors, 24 with the backup, to judge the checksum,
 * the extended signatures and the backup).  @dev_len is the device or
 * window length in bytes (0: unknown, not checked).  Fills every field
 * and every defect bit of @b; never stops at a defect.  Returns 0, or
 * FK_ECORRUPT when a FK_EXFAT_BOOT_FATAL defect is set, with its reason
 * in @diag (which may be NULL).  Pure: no I/O.
 */
int fk_exfat_boot_parse(const unsigned char *region, size_t len,
			uint64_t dev_len, struct fk_exfat_boot *b,
			struct fk_diag *diag);

/* One clause for the lowest defect bit in @defects ("" when none). */
const char *fk_exfat_boot_reason(uint32_t defect);

/*
 * Set (@is_dirty) or clear VolumeDirty in the VolumeFlags of the boot
 * sector @bs (spec 3.1.13.3), in memory: the one place the bit is
 * written, by the writer around its writes and by the checker's repair.
 */
void fk_exfat_set_dirty(unsigned char *bs, int is_dirty);

/* Is the 512-byte @bs an exFAT boot sector ("EXFAT   " at offset 3)? */
int fk_exfat_detect(const unsigned char *bs);

/* The step the three exFAT checksums share: rotate right, add. */
static inline uint32_t fk_exfat_ror32_add(uint32_t sum, unsigned char b)
{
	return (sum >> 1 | sum << 31) + b;
}

#endif
