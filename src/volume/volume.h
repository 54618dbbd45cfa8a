/*
 * volume.h: an open volume: the device, the FAT cache, and the geometry
 * every module relies on, which the family's read_boot op (family.h)
 * fills when the volume is opened (mount/mount.h) and vol->fam names.
 * What only one family knows (its boot sector's own rules, its mounted
 * facts) stays in its folder, reached through vol->fam and kept in
 * vol->fam_priv.
 */
#ifndef FATKIT_VOLUME_H
#define FATKIT_VOLUME_H

#include <stddef.h>
#include <stdint.h>

#include "io/device.h"

struct fk_cache;
struct fk_diag;
struct fk_family;

#define FK_FIRST_CLUS 2u

struct fk_geom {
	char type_name[8];  /* the family's name for the layout, for
				fatls --info and fatcheck ("FAT16") */
	uint32_t sec_len;   /* bytes per sector */
	uint32_t clus_secs; /* sectors per cluster */
	uint32_t clus_len;  /* bytes per cluster */
	uint32_t rsvd_secs; /* reserved sectors before FAT 0 */
	uint32_t nfats;	    /* FAT copies */
	uint32_t fat_secs;  /* sectors per FAT copy */
	/* How an allocation-table entry is stored: 12, 16 or 32 bits, of
	 * which @ent_mask hold the value (the rest are reserved and kept on
	 * a write), and the smallest value that ends a chain.  The table's
	 * code (table/) packs and judges entries by these alone. */
	uint32_t ent_bits;
	uint32_t ent_mask;
	uint32_t ent_eoc;
	uint32_t root_ents;  /* entries of a fixed root area; 0: none */
	uint32_t root_secs;  /* sectors of the fixed root */
	uint64_t total_secs; /* sectors in the volume */
	uint32_t nclus;	     /* data clusters: 2 .. nclus + 1 are valid */
	uint64_t fat_off;    /* byte offset of FAT copy 0 */
	uint64_t root_off;   /* byte offset of the fixed root, if any */
	uint64_t data_off;   /* byte offset of cluster 2 */
	/* The root directory is a cluster chain from @root_clus (and a
	 * directory entry's cluster 0 means it), not a fixed area. */
	int is_root_chain;
	uint32_t root_clus;  /* first cluster of a chained root; else 0 */
	uint32_t fsinfo_sec; /* free-count sector; 0: none */
	uint32_t backup_sec; /* backup boot sector; 0: none */
	/* a backup boot sector numbered past the reserved sectors: not
	 * used (the checker names it); 0: none */
	uint32_t backup_sec_outside;
	uint32_t active_fat; /* copy that is read */
	int is_mirrored;     /* FAT copies are kept identical */
	uint8_t media;	     /* media byte (FAT[0] repeats it) */
	int has_ext_boot;    /* boot signature 0x29: serial and label */
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
	const struct fk_family *fam; /* chosen once at open */
	void *fam_priv; /* the family's own facts (its read_boot sets them,
			   its unmount frees them); NULL: none */
	/* A truncated dump opened by a reader (opts->is_cut_ok): bytes of
	 * the volume the image holds; 0: all of it.  Reads past them fail
	 * (FK_ECORRUPT); fk_volume_cut_len() tells what reaches there. */
	uint64_t present_len;
	int is_cut_ok; /* opened with opts->is_cut_ok */
};

/* Undo fk_volume_open() (mount.h), without flushing; accepts NULL. */
void fk_volume_close(struct fk_volume *vol);

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

#endif
