/*
 * fat-boot.h: the FAT family's boot sector: its side of opening a volume
 * (family.h): does a boot sector hold a FAT12/16/32 BPB, and reading it;
 * the BPB's rules themselves (fk_fat_bpb_parse(), which the unit tests
 * and the FAT32 backup check use too); the dirty flag and the
 * boot-sector repair.
 */
#ifndef FATKIT_FAT_BOOT_H
#define FATKIT_FAT_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "volume/volume.h"

struct fk_diag;
struct fk_volume;
struct fk_volume_opts;

/* The FAT type: its entry width (Microsoft FAT specification). */
enum fk_fat_type {
	FK_FAT12 = 12,
	FK_FAT16 = 16,
	FK_FAT32 = 32,
};

/* Limits from the Microsoft FAT specification. */
#define FK_FAT12_MAX_CLUS 4084u	 /* fewer than 4085 clusters: FAT12 */
#define FK_FAT16_MAX_CLUS 65524u /* fewer than 65525 clusters: FAT16 */
#define FK_FAT32_MAX_CLUS 0x0FFFFFF5u

/*
 * Fill in what follows from the FAT type @type in @g: the entry width,
 * mask and end-of-chain value, the root kind (a chain on FAT32, the
 * fixed area before) and the type's name.
 */
void fk_fat_geom_type(struct fk_geom *g, enum fk_fat_type type);

/* Is @g (a FAT family volume's) FAT32: the FAT32 BPB, with a root
 * cluster, FSInfo and backup boot sector fields, FAT mirroring flags and
 * the high word of cluster numbers in directory entries? */
static inline int fk_fat_is_32(const struct fk_geom *g)
{
	return g->ent_bits == FK_FAT32;
}

/* Does @bs (512 bytes) hold a BPB that parses for @vol_len bytes? */
int fk_fat_probe(const unsigned char *bs, uint64_t vol_len);

/*
 * Parse the BPB in @head (the first @head_len bytes of the volume, at
 * least 512; a dump opened with opts->is_cut_ok judged as if whole,
 * vol->present_len set) into vol->g and keep the whole boot sector in
 * vol->boot (read when longer than @head_len).  Returns 0, FK_ECORRUPT
 * with the reason in @diag, -ENOMEM or -errno.  Reads only.
 */
int fk_fat_read_boot(struct fk_volume *vol, const unsigned char *head,
		     size_t head_len, const struct fk_volume_opts *opts,
		     struct fk_diag *diag);

/*
 * Check a boot sector image @bs of @len bytes (>= 512) against a volume
 * of @vol_len bytes and fill @g.  Returns 0 or FK_ECORRUPT with a reason.
 * Pure: exposed for the unit tests and for checking the FAT32 backup.
 */
int fk_fat_bpb_parse(const unsigned char *bs, size_t len, uint64_t vol_len,
		     struct fk_geom *g, struct fk_diag *diag);

/*
 * Does the BPB of @g describe a layout a writer may act on?  Open accepts
 * every layout a reader can follow (Linux mounts three FAT copies and
 * reads them where the BPB puts them); a writer also needs 1 or 2 FAT
 * copies (nothing tells a third copy from a changed byte that makes the
 * root one; fsck.fat refuses more) and a fixed root of whole sectors
 * (Linux refuses any other; fsck.fat one of other than 16-entry steps).
 * Pure.  Returns 0 or FK_ECORRUPT with @diag saying what is implausible.
 */
int fk_fat_bpb_judge(const struct fk_geom *g, struct fk_diag *diag);

/*
 * fk_fat_bpb_judge(), then the FAT copies' own marks
 * (fk_fat_judge_layout(), table/fat.h): whether a repair or a writer may
 * act on @vol.  Returns as those.
 */
int fk_fat_judge_boot(struct fk_volume *vol, struct fk_diag *diag);

/*
 * Read the FAT32 backup boot sector (sec_len bytes) into @buf.  Returns 0,
 * -ENOENT when the volume has none, FK_ECORRUPT or -errno.
 */
int fk_fat_read_backup(struct fk_volume *vol, unsigned char *buf);

/* Is the boot sector's dirty flag set (Linux sets it while mounted)? */
int fk_fat_is_dirty(const struct fk_volume *vol);

/* The boot sector byte that holds the dirty flag (bit FK_BOOT_DIRTY):
 * BS_Reserved1, offset 37 on FAT12/16 and 65 on FAT32. */
#define FK_BOOT_DIRTY 0x01
unsigned fk_fat_dirty_off(const struct fk_volume *vol);

/*
 * Repair the boot sector in vol->boot: clear the dirty flag when
 * @clear_dirty, set the 11-byte label field to @label when it is not NULL
 * (without an extended BPB, its signature 0x29 and file system type are
 * set too; the serial bytes stay), then write the boot sector, and over
 * the FAT32 backup boot sector too when @sync_backup.  Writes immediately;
 * callers order it after the FAT and directory writes.  0 or -errno.
 */
int fk_fat_fix_boot(struct fk_volume *vol, int clear_dirty,
		    const unsigned char *label, int sync_backup);

/*
 * Set the BPB media byte to @media in vol->boot and the geometry, in
 * memory only: FAT[0] is then judged and written against it, and the next
 * fk_fat_fix_boot() writes the boot sector.
 */
void fk_fat_set_media(struct fk_volume *vol, uint8_t media);

/* A media byte Linux mounts (fat_valid_media(): 0xF0, 0xF8 to 0xFF);
 * mtools refuses the others too. */
static inline int fk_media_is_valid(unsigned media)
{
	return media == 0xF0 || (media >= 0xF8 && media <= 0xFF);
}

#endif
