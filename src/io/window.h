/*
 * window.h: choosing where in IMAGE the FAT volume lies (IMAGE@@OFFSET,
 * partition -P N, or automatic via libblkid).
 */
#ifndef FATKIT_WINDOW_H
#define FATKIT_WINDOW_H

struct fk_device;
struct fk_device_opts;
struct fk_diag;

/*
 * Narrow @dev, freshly opened on the whole image, to the volume window
 * @opts asks for (off and has_off, or partition), or, when it asks for
 * none, to a FAT volume at offset 0 or else the one FAT partition.
 * Reads the image (the partition table, the candidate boot sector) and
 * writes nothing.  Returns 0; -EINVAL when the chosen place holds no FAT
 * volume; -ENXIO when no partition fits; FK_ECORRUPT when the offset is
 * past the end of the image; or -errno.  @diag says why.
 */
int fk_window_choose(struct fk_device *dev, const struct fk_device_opts *opts,
		     struct fk_diag *diag);

#endif
