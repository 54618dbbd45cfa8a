/*
 * mount.c: fk_volume_open().  The family is chosen here, once, by asking
 * each registered family (families.c) whether the boot sector is its
 * own; nothing after the open asks again, and nothing here names a
 * family: what differs is in the chosen family's table (family.h).
 */
#include "mount/mount.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "io/cache.h"
#include "io/device.h"
#include "io/window.h"
#include "lib/diag.h"
#include "mount/families.h"
#include "volume/family.h"
#include "volume/volume.h"

/* Does any registered family's volume start with @bs?  For the window. */
static int is_boot(const unsigned char *bs, uint64_t vol_len)
{
	size_t i;

	for (i = 0; fk_families[i]; i++)
		if (fk_families[i]->probe(bs, vol_len))
			return 1;
	return 0;
}

/* Is libblkid's @type a registered family's?  For the window. */
static int is_type(const char *type, const char *ver, char *name, size_t len)
{
	size_t i;

	for (i = 0; fk_families[i]; i++)
		if (fk_families[i]->is_blkid_type(type, ver, name, len))
			return 1;
	return 0;
}

/* Bytes of the volume's start read at once: the most a family reads. */
static size_t head_len(const struct fk_volume_opts *opts)
{
	size_t i, len = 512, n;

	for (i = 0; fk_families[i]; i++)
		if ((n = fk_families[i]->head_len(opts)) > len)
			len = n;
	return len;
}

/*
 * The family of the boot sector @first: the first that claims it, else
 * the last, whose reasons say what is wrong.  A caller that asks for a
 * backup boot region gets the first family that keeps one.
 */
static const struct fk_family *choose(const unsigned char *first,
				      uint64_t vol_len,
				      const struct fk_volume_opts *opts)
{
	size_t i;

	for (i = 0; fk_families[i]; i++)
		if (opts->is_backup_boot
			    ? fk_families[i]->can_open_backup
			    : fk_families[i]->probe(first, vol_len))
			return fk_families[i];
	return fk_families[i - 1];
}

/*
 * The volume's start, read once: the window read it already when it
 * asked the probes whether a volume starts there (it did at the offset
 * it chose, unless a partition was chosen by its table).
 */
static int read_boot(struct fk_volume *vol, const struct fk_volume_opts *opts,
		     struct fk_window_fs *fs, struct fk_diag *diag)
{
	uint64_t vol_len = fk_device_len(vol->dev);
	size_t len = fs->head_len;
	int err;

	if (vol_len < 512) {
		fk_diag_set(diag, NULL,
			    "image is truncated: %llu bytes, no boot sector",
			    (unsigned long long)vol_len);
		return FK_ECORRUPT;
	}
	if (len > vol_len)
		len = (size_t)vol_len;
	/* What the window read, if it read here: all of it, or the boot
	 * sector alone where the rest could not be read. */
	if (fs->head_got >= 512 && fs->head_off == fk_device_base(vol->dev)) {
		if (fs->head_got < len)
			len = fs->head_got;
	} else if ((err = fk_window_read_head(vol->dev, 0, fs->head, &len))) {
		return err;
	}
	vol->is_cut_ok = opts->is_cut_ok;
	vol->fam =
		choose(fs->head, opts->is_cut_ok ? UINT64_MAX : vol_len, opts);
	return vol->fam->read_boot(vol, fs->head, len, opts, diag);
}

/* The window, then the boot region, as one request where they meet. */
static int find_volume(struct fk_volume *vol, const struct fk_volume_opts *opts,
		       struct fk_diag *diag)
{
	struct fk_window_fs fs = {is_boot, is_type, NULL, 0, 0, 0};
	int err;

	fs.head_len = head_len(opts);
	if (!(fs.head = malloc(fs.head_len)))
		return -ENOMEM;
	if (!(err = fk_window_choose(vol->dev, &opts->dev, &fs, diag)))
		err = read_boot(vol, opts, &fs, diag);
	free(fs.head);
	return err;
}

int fk_volume_open(const struct fk_volume_opts *opts, struct fk_volume **out,
		   struct fk_diag *diag)
{
	struct fk_volume *vol = calloc(1, sizeof(*vol));
	struct fk_cache_layout lay;
	int err;

	if (!vol)
		return -ENOMEM;
	if ((err = fk_device_open(&opts->dev, &vol->dev, diag)))
		goto out_free;
	if ((err = find_volume(vol, opts, diag))) {
		/* No volume to measure: a writer is told first about a
		 * mounted loop device anywhere in the window (the kernel's
		 * file system is likely what is there). */
		if (fk_device_claim(vol->dev, 0, fk_device_len(vol->dev), diag))
			err = -EBUSY;
		goto out_close;
	}
	if ((err = fk_device_claim(vol->dev, 0,
				   vol->g.total_secs * vol->g.sec_len, diag)))
		goto out_close;
	lay.sec_len = vol->g.sec_len;
	lay.fat_off = vol->g.fat_off;
	lay.fat_secs = vol->g.fat_secs;
	lay.nfats = vol->g.nfats;
	lay.read_fat = vol->g.active_fat;
	lay.is_mirrored = vol->g.is_mirrored;
	lay.is_rarely_written = vol->fam->is_fat_rarely_written;
	lay.read_len = vol->fam->is_fat_rarely_written ? opts->fat_read_len : 0;
	if ((err = fk_cache_new(vol->dev, &lay, opts->batch_len,
				opts->is_sync ? FK_CACHE_SYNC_BUDGET
					      : FK_CACHE_NOSYNC,
				&vol->fat)))
		goto out_close;
	if (vol->fam->mount && (err = vol->fam->mount(vol, diag)))
		goto out_cache;
	*out = vol;
	return 0;
out_cache:
	fk_cache_free(vol->fat);
out_close:
	fk_device_close(vol->dev);
out_free:
	if (vol->fam && vol->fam->unmount)
		vol->fam->unmount(vol);
	free(vol->boot);
	free(vol);
	return err;
}
