/*
 * window.h: choosing where in IMAGE the FAT volume lies (IMAGE@@OFFSET,
 * partition -P N, or automatic via libblkid).
 */
#ifndef FATKIT_WINDOW_H
#define FATKIT_WINDOW_H

#include <stdint.h>

struct fk_device;
struct fk_device_opts;
struct fk_diag;

/*
 * Does a volume this program reads start with @bs (512 bytes), @vol_len
 * bytes before the image ends?  The opening's answer (every registered
 * family's probe), since the window knows no file system.
 */
typedef int fk_window_is_boot(const unsigned char *bs, uint64_t vol_len);

/*
 * Narrow @dev, freshly opened on the whole image, to the volume window
 * @opts asks for (off and has_off, or partition), or, when it asks for
 * none, to a FAT volume (one @is_boot accepts) at offset 0 or else the
 * one FAT partition.
 * Reads the image (the partition table, the candidate boot sector) and
 * writes nothing.  Returns 0; -EINVAL when the chosen place holds no FAT
 * volume; -ENXIO when no partition fits; FK_ECORRUPT when the offset is
 * past the end of the image; or -errno.  @diag says why.
 */
int fk_window_choose(struct fk_device *dev, const struct fk_device_opts *opts,
		     fk_window_is_boot *is_boot, struct fk_diag *diag);

#endif
