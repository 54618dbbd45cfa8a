/*
 * volume.c: closing a volume.  Opening it is mount.c's (it asks each
 * family whose boot sector it is); the boot sector's own rules are the
 * family's (fat/fat-boot.c, exfat/exfat-boot.c).
 */
#include "volume/volume.h"

#include <stdlib.h>

#include "io/cache.h"
#include "io/device.h"
#include "volume/family.h"

void fk_volume_close(struct fk_volume *vol)
{
	if (!vol)
		return;
	fk_cache_free(vol->fat);
	fk_device_close(vol->dev);
	if (vol->fam->unmount)
		vol->fam->unmount(vol);
	free(vol->boot);
	free(vol);
}
