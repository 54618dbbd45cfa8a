/*
 * fsinfo.h: the FAT32 FSInfo sector.  Its free count and next-free hint
 * are only ever hints: fatkit reads them to report and check, never to
 * decide whether space exists, and rewrites them exactly once per run.
 */
#ifndef FATKIT_FSINFO_H
#define FATKIT_FSINFO_H

#include <stdint.h>

struct fk_volume;

#define FK_FSINFO_UNKNOWN 0xffffffffu /* free count or hint not known */

struct fk_fsinfo {
	int is_present;	     /* the volume is FAT32 and names a sector */
	int is_lead_ok;	     /* 0x41615252 at offset 0 */
	int is_struc_ok;     /* 0x61417272 at offset 484 */
	int is_trail_ok;     /* 0xAA550000 at offset 508 */
	uint32_t free_count; /* clusters, or FK_FSINFO_UNKNOWN */
	uint32_t next_free;  /* cluster hint, or FK_FSINFO_UNKNOWN */
};

/* Read the FSInfo sector (not present: is_present 0).  0 or -errno. */
int fk_fsinfo_read(struct fk_volume *vol, struct fk_fsinfo *fsi);

/*
 * Rewrite the FSInfo sector with all three signatures, @free_count and
 * @next_free, keeping its other bytes.  A no-op without FSInfo.  Writes
 * immediately (callers call it last, after every other write).
 */
int fk_fsinfo_write(struct fk_volume *vol, uint32_t free_count,
		    uint32_t next_free);

#endif
