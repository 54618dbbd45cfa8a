/*
 * volume.h: an open volume: the device, the FAT cache, and the geometry
 * every module relies on, which the family's read_boot op (family.h)
 * fills when the volume is opened (mount/mount.h) and vol->fam names.
 * For the FAT family also the BPB's own rules: the checked boot sector,
 * the FAT type chosen by cluster count as the Microsoft FAT
 * specification does, the dirty flag and the boot-sector repair.  exFAT
 * keeps its own facts in vol->exfat (exfat.h).
 */
#ifndef FATKIT_VOLUME_H
#define FATKIT_VOLUME_H

#include <stddef.h>
#include <stdint.h>

#include "io/device.h"

struct fk_cache;
struct fk_diag;
struct fk_exfat;
struct fk_family;

enum fk_fat_type {
	FK_FAT12 = 12,
	FK_FAT16 = 16,
	FK_FAT32 = 32,
	FK_EXFAT = 64, /* not a width: the exFAT family, 32-bit entries */
};

/* Limits from the Microsoft FAT specification. */
#define FK_FAT12_MAX_CLUS 4084u	 /* fewer than 4085 clusters: FAT12 */
#define FK_FAT16_MAX_CLUS 65524u /* fewer than 65525 clusters: FAT16 */
#define FK_FAT32_MAX_CLUS 0x0FFFFFF5u
#define FK_FIRST_CLUS	  2u

struct fk_geom {
	enum fk_fat_type type;
	uint32_t sec_len;    /* bytes per sector */
	uint32_t clus_secs;  /* sectors per cluster */
	uint32_t clus_len;   /* bytes per cluster */
	uint32_t rsvd_secs;  /* reserved sectors before FAT 0 */
	uint32_t nfats;	     /* FAT copies */
	uint32_t fat_secs;   /* sectors per FAT copy */
	uint32_t root_ents;  /* FAT12/16 fixed root entries; 0 on FAT32 */
	uint32_t root_secs;  /* sectors of the fixed root */
	uint64_t total_secs; /* sectors in the volume */
	uint32_t nclus;	     /* data clusters: 2 .. nclus + 1 are valid */
	uint64_t fat_off;    /* byte offset of FAT copy 0 */
	uint64_t root_off;   /* byte offset of the fixed root (FAT12/16) */
	uint64_t data_off;   /* byte offset of cluster 2 */
	uint32_t root_clus;  /* FAT32 root directory cluster; 0 otherwise */
	uint32_t fsinfo_sec; /* FAT32 FSInfo sector; 0: none */
	uint32_t backup_sec; /* FAT32 backup boot sector; 0: none */
	uint32_t active_fat; /* copy that is read (FAT32 ext flags) */
	int has_bpb32;	     /* the FAT32 BPB: a root cluster, FSInfo and
				backup boot sector fields, FAT mirroring,
				and 32-bit cluster numbers in entries */
	int is_mirrored;     /* FAT copies are kept identical */
	uint8_t media;	     /* BPB media byte */
	int has_ext_bpb;     /* boot signature 0x29: serial and label */
	uint32_t serial;
	char label[12]; /* boot sector label, trailing spaces cut */
	unsigned char label_raw[11]; /* the label field as stored */
	char oem[9];
};

struct fk_volume_opts {
	struct fk_device_opts dev;
	size_t batch_len; /* dirty FAT bytes held before a flush */
	int is_sync;	  /* fsync after every flush the budget forces */
	/* Take the geometry from the backup boot region, whatever the main
	 * one holds (for a checker that restores the main region): the
	 * first family that keeps one (fk_family.can_open_backup, exFAT). */
	int is_backup_boot;
	/* Read the main boot region alone, not the backup with it, for a
	 * writer (exFAT: it changes only the main VolumeFlags and
	 * PercentInUse, which the backup does not follow, spec 3.1.13, and
	 * judges only the main checksum; a lister warns about a backup that
	 * differs, a checker judges it).  A family without such a backup
	 * reads its boot sector alike either way. */
	int is_main_boot_only;
	/* A reader that lists what a truncated image (shorter than its
	 * volume) holds: open it, with vol->present_len set, instead of
	 * refusing.  Writers never set it. */
	int is_cut_ok;
	/* Bytes a FAT read takes at most (fk_cache_layout.read_len; 0: the
	 * reader's large spans), for a writer that walks a few short chains
	 * on a card, where each byte read costs time.  Only a family whose
	 * FAT is rarely written (fk_family.is_fat_rarely_written, exFAT)
	 * takes it: a FAT volume's every file has a chain to read. */
	uint32_t fat_read_len;
};

struct fk_volume {
	struct fk_device *dev;
	struct fk_cache *fat; /* every FAT access goes through it */
	struct fk_geom g;
	unsigned char *boot; /* the boot sector as read, sec_len bytes */
	const struct fk_family *fam; /* FAT or exFAT: chosen once at open */
	struct fk_exfat *exfat;	     /* exFAT-only facts; NULL on FAT */
	/* A truncated dump opened by a reader (opts->is_cut_ok): bytes of
	 * the volume the image holds; 0: all of it.  Reads past them fail
	 * (FK_ECORRUPT); fk_volume_cut_len() tells what reaches there. */
	uint64_t present_len;
	int is_cut_ok; /* opened with opts->is_cut_ok */
};

/* Undo fk_volume_open() (mount.h), without flushing; accepts NULL. */
void fk_volume_close(struct fk_volume *vol);

/*
 * Check a boot sector image @bs of @len bytes (>= 512) against a volume
 * of @vol_len bytes and fill @g.  Returns 0 or FK_ECORRUPT with a reason.
 * Pure: exposed for the unit tests and for checking the FAT32 backup.
 */
int fk_volume_parse(const unsigned char *bs, size_t len, uint64_t vol_len,
		    struct fk_geom *g, struct fk_diag *diag);

/*
 * Does the BPB of @g describe a layout a writer may act on?  Open accepts
 * every layout a reader can follow (Linux mounts three FAT copies and
 * reads them where the BPB puts them); a writer also needs 1 or 2 FAT
 * copies (nothing tells a third copy from a changed byte that makes the
 * root one; fsck.fat refuses more) and a fixed root of whole sectors
 * (Linux refuses any other; fsck.fat one of other than 16-entry steps).
 * Pure.  Returns 0 or FK_ECORRUPT with @diag saying what is implausible.
 * fk_fat_judge_layout() adds the FAT copies' own marks.
 */
int fk_volume_judge(const struct fk_geom *g, struct fk_diag *diag);

/*
 * Read the FAT32 backup boot sector (sec_len bytes) into @buf.  Returns 0,
 * -ENOENT when the volume has none, FK_ECORRUPT or -errno.
 */
int fk_volume_read_backup(struct fk_volume *vol, unsigned char *buf);

/* Is the boot sector's dirty flag set (Linux sets it while mounted)? */
int fk_volume_is_dirty(const struct fk_volume *vol);

/* The boot sector byte that holds the dirty flag (bit FK_BOOT_DIRTY):
 * BS_Reserved1, offset 37 on FAT12/16 and 65 on FAT32. */
#define FK_BOOT_DIRTY 0x01
unsigned fk_volume_dirty_off(const struct fk_volume *vol);

/*
 * Repair the boot sector in vol->boot: clear the dirty flag when
 * @clear_dirty, set the 11-byte label field to @label when it is not NULL
 * (without an extended BPB, its signature 0x29 and file system type are
 * set too; the serial bytes stay), then write the boot sector, and over
 * the FAT32 backup boot sector too when @sync_backup.  Writes immediately;
 * callers order it after the FAT and directory writes.  0 or -errno.
 */
int fk_volume_fix_boot(struct fk_volume *vol, int clear_dirty,
		       const unsigned char *label, int sync_backup);

/*
 * Set the BPB media byte to @media in vol->boot and the geometry, in
 * memory only: FAT[0] is then judged and written against it, and the next
 * fk_volume_fix_boot() writes the boot sector.
 */
void fk_volume_set_media(struct fk_volume *vol, uint8_t media);

/* A media byte Linux mounts (fat_valid_media(): 0xF0, 0xF8 to 0xFF);
 * mtools refuses the others too. */
static inline int fk_media_is_valid(unsigned media)
{
	return media == 0xF0 || (media >= 0xF8 && media <= 0xFF);
}

/* Byte offset of data cluster @clus (which must be in range). */
static inline uint64_t fk_clus_off(const struct fk_geom *g, uint32_t clus)
{
	return g->data_off + (uint64_t)(clus - FK_FIRST_CLUS) * g->clus_len;
}

/* Is @clus a data cluster of this volume? */
static inline int fk_clus_valid(const struct fk_geom *g, uint32_t clus)
{
	return clus >= FK_FIRST_CLUS && clus - FK_FIRST_CLUS < g->nclus;
}

/* The largest valid cluster number. */
static inline uint32_t fk_clus_max(const struct fk_geom *g)
{
	return g->nclus + 1;
}

/* "FAT12", "FAT16", "FAT32" or "exFAT". */
const char *fk_fat_type_name(enum fk_fat_type type);

#endif
