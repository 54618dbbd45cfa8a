/* fsinfo.c: reading, checking and rewriting the FAT32 FSInfo sector. */
#include "table/fsinfo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/endian.h"
#include "volume/volume.h"

#define FSI_LEAD_SIG   0
#define FSI_STRUC_SIG  484
#define FSI_FREE_COUNT 488
#define FSI_NXT_FREE   492
#define FSI_TRAIL_SIG  508
#define LEAD_SIG       0x41615252u
#define STRUC_SIG      0x61417272u
#define TRAIL_SIG      0xaa550000u

static uint64_t fsinfo_off(const struct fk_volume *vol)
{
	return (uint64_t)vol->g.fsinfo_sec * vol->g.sec_len;
}

int fk_fsinfo_read(struct fk_volume *vol, struct fk_fsinfo *fsi)
{
	unsigned char b[512];
	int err;

	memset(fsi, 0, sizeof(*fsi));
	fsi->free_count = fsi->next_free = FK_FSINFO_UNKNOWN;
	if (!vol->g.fsinfo_sec) /* none, or not FAT32 */
		return 0;
	if ((err = fk_device_read(vol->dev, fsinfo_off(vol), b, sizeof(b))))
		return err;
	fsi->is_present = 1;
	fsi->is_lead_ok = get_le32(b + FSI_LEAD_SIG) == LEAD_SIG;
	fsi->is_struc_ok = get_le32(b + FSI_STRUC_SIG) == STRUC_SIG;
	fsi->is_trail_ok = get_le32(b + FSI_TRAIL_SIG) == TRAIL_SIG;
	fsi->free_count = get_le32(b + FSI_FREE_COUNT);
	fsi->next_free = get_le32(b + FSI_NXT_FREE);
	return 0;
}

int fk_fsinfo_write(struct fk_volume *vol, uint32_t free_count,
		    uint32_t next_free)
{
	unsigned char b[512];
	int err;

	if (!vol->g.fsinfo_sec) /* none, or not FAT32 */
		return 0;
	if ((err = fk_device_read(vol->dev, fsinfo_off(vol), b, sizeof(b))))
		return err;
	put_le32(b + FSI_LEAD_SIG, LEAD_SIG);
	put_le32(b + FSI_STRUC_SIG, STRUC_SIG);
	put_le32(b + FSI_FREE_COUNT, free_count);
	put_le32(b + FSI_NXT_FREE, next_free);
	put_le32(b + FSI_TRAIL_SIG, TRAIL_SIG);
	return fk_device_write(vol->dev, fsinfo_off(vol), b, sizeof(b));
}
