/*
 * fat-boot.c: the FAT family's probe and boot-sector read for
 * fk_volume_open() (through fk_fat_family).  A sector that no family
 * claims is read by the FAT family last (mount/families.c), so the
 * parser's reasons say what is wrong with it.
 */
#include "fat/fat-boot.h"

#include <errno.h>
#include <stdlib.h>

#include "io/device.h"
#include "volume/volume.h"

int fk_fat_probe(const unsigned char *bs, uint64_t vol_len)
{
	struct fk_geom g;

	return !fk_volume_parse(bs, 512, vol_len, &g, NULL);
}

int fk_fat_read_boot(struct fk_volume *vol, const unsigned char *first,
		     const struct fk_volume_opts *opts, struct fk_diag *diag)
{
	uint64_t vol_len = fk_device_len(vol->dev);
	struct fk_geom g;
	int err;

	/* A truncated dump: judge the boot sector as if it were whole. */
	if ((err = fk_volume_parse(first, 512,
				   opts->is_cut_ok ? UINT64_MAX : vol_len, &g,
				   diag)))
		return err;
	if (g.total_secs > vol_len / g.sec_len)
		vol->present_len = vol_len;
	if (!(vol->boot = malloc(g.sec_len)))
		return -ENOMEM;
	if ((err = fk_device_read(vol->dev, 0, vol->boot, g.sec_len)))
		return err;
	vol->g = g;
	return 0;
}
