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

#include <stddef.h>

/*
 * What the opening tells the window about the volumes this program reads
 * (every registered family's answer), since the window knows no file
 * system, and where the window leaves what it read of one's start.
 */
struct fk_window_fs {
	/* Does a volume start with @bs (512 bytes), @vol_len bytes before
	 * the image ends? */
	int (*is_boot)(const unsigned char *bs, uint64_t vol_len);
	/* Is the file system libblkid calls @type (VERSION @ver, or NULL)
	 * one of them?  Then 1, with the name to show for it in @name (@len
	 * bytes); else 0.  May be NULL: none is. */
	int (*is_type)(const char *type, const char *ver, char *name,
		       size_t len);
	/* The start of a candidate volume, as read to ask is_boot(): up to
	 * @head_len bytes (at least 512) into @head (NULL: 512 bytes of the
	 * window's own); the window sets @head_got (0: nothing read) and
	 * @head_off, the image offset they came from.  The opening takes
	 * them from there instead of reading them again. */
	unsigned char *head;
	size_t head_len;
	size_t head_got;
	uint64_t head_off;
};

/*
 * Read the @*len bytes of a volume's start at device offset @off into
 * @buf; where that fails and @*len is more than the boot sector, read the
 * boot sector alone and set @*len to 512.  A card with one bad sector
 * among the reserved sectors or the first FAT still opens: a family
 * reads what it needs past 512 bytes itself.  Returns 0 or -errno.
 */
int fk_window_read_head(struct fk_device *dev, uint64_t off, unsigned char *buf,
			size_t *len);

/*
 * Narrow @dev, freshly opened on the whole image, to the volume window
 * @opts asks for (off and has_off, or partition), or, when it asks for
 * none, to a FAT volume (one @fs->is_boot accepts) at offset 0 or else the
 * one FAT partition.
 * Reads the image (the partition table, the candidate boot sector) and
 * writes nothing.  Returns 0; -EINVAL when the chosen place holds no FAT
 * volume; -ENXIO when no partition fits; FK_ECORRUPT when the offset is
 * past the end of the image; or -errno.  @diag says why.
 */
int fk_window_choose(struct fk_device *dev, const struct fk_device_opts *opts,
		     struct fk_window_fs *fs, struct fk_diag *diag);

#endif
