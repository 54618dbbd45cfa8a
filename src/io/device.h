/*
 * device.h: the IMAGE a volume lives in: a regular file or a block device,
 * a byte window in it (window.c chooses where), locks, full-length I/O and
 * I/O counters.  Knows nothing of FAT.
 */
#ifndef FATKIT_DEVICE_H
#define FATKIT_DEVICE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct fk_diag;
struct fk_device;

struct fk_device_opts {
	const char *path; /* the file or block device */
	uint64_t off;	  /* volume start, when has_off (window.c) */
	int has_off;	  /* IMAGE@@OFFSET was given (window.c) */
	int partition;	  /* 1-based partition number; 0: choose (window.c) */
	int is_writer;	  /* exclusive lock, O_EXCL, mount check */
	int force;	  /* write even if mounted or busy */

	/* --wait: ms to wait for the lock; 0: fail at once (the default);
	 * -1: wait for ever */
	long long wait_ms;
};

/* What a run cost, as the device saw it. */
struct fk_io_stats {
	uint64_t read_calls;
	uint64_t bytes_read;
	uint64_t write_calls; /* pwrite/pwritev system calls */
	uint64_t bytes_written;
	uint64_t zero_calls; /* fallocate/BLKZEROOUT calls */
	uint64_t bytes_zeroed;
	uint64_t fsyncs;
};

/*
 * Open @opts->path, lock it (shared for readers, exclusive for writers;
 * a held lock fails at once with -EBUSY "image is in use", or is waited
 * for with @opts->wait_ms), refuse a mounted device for writing, and
 * note the mounted loop devices behind an image file for
 * fk_device_claim(), which refuses the ones over the volume.  The
 * window is the whole image until fk_device_set_window() narrows it.  On
 * success *@out is the caller's, to free with fk_device_close().  Returns
 * 0 or -errno; @diag says why.
 */
int fk_device_open(const struct fk_device_opts *opts, struct fk_device **out,
		   struct fk_diag *diag);
void fk_device_close(struct fk_device *dev);

/*
 * A writer's last busy check, once the volume's extent is known: refuse
 * (-EBUSY, @diag naming the mount point and loop device) when a mounted
 * loop device backed by IMAGE overlaps bytes [@off, @off + @len) of the
 * window.  Loop devices over other partitions of the same image do not
 * count.  0 for readers, block devices and --force.
 */
int fk_device_claim(struct fk_device *dev, uint64_t off, uint64_t len,
		    struct fk_diag *diag);

/* Bytes in the volume window (from its start to the end of IMAGE). */
uint64_t fk_device_len(const struct fk_device *dev);
/* Byte offset of the window in IMAGE (for --chain offsets). */
uint64_t fk_device_base(const struct fk_device *dev);
/*
 * Where IMAGE itself starts on its disk: a partition's block device
 * (/dev/sdb1, /dev/mmcblk0p1) starts that many bytes into the card, from
 * sysfs; 0 for a whole disk or an image file.  For --align, which the
 * card's own grid decides.
 */
uint64_t fk_device_disk_off(const struct fk_device *dev);
/* The path as given; borrowed until fk_device_close(). */
const char *fk_device_path(const struct fk_device *dev);
/* Bytes in the whole IMAGE, whatever the window. */
uint64_t fk_device_image_len(const struct fk_device *dev);
/*
 * The open descriptor, borrowed until fk_device_close(), for libblkid's
 * probes (window.c), which read through a descriptor of their own choice.
 */
int fk_device_fd(const struct fk_device *dev);
/* Make [@base, @base + @len) of IMAGE the window.  0, or -EINVAL past it. */
int fk_device_set_window(struct fk_device *dev, uint64_t base, uint64_t len);

/*
 * Read or write exactly @len bytes at window offset @off.  A range past the
 * window is FK_ECORRUPT (the image is shorter than its geometry); I/O
 * errors are -errno.  Writes on a reader are -EBADF.
 */
int fk_device_read(struct fk_device *dev, uint64_t off, void *buf, size_t len);
/*
 * Map @len bytes at window offset @off read-only (the page cache itself, no
 * copy: the FAT scans read tens of MiB this way).  *@addr is valid until
 * fk_device_unmap(@addr, @len).  Image files only: on a block device
 * it returns -EOPNOTSUPP, since a sector that fails to read through a
 * mapping kills the process with SIGBUS.  (An image file keeps that risk
 * if its own disk fails or another process truncates it mid-scan.)
 * Returns 0, FK_ECORRUPT (past the window) or -errno (callers then fall
 * back to fk_device_read()).
 */
int fk_device_map(struct fk_device *dev, uint64_t off, size_t len,
		  const unsigned char **addr);
void fk_device_unmap(const unsigned char *addr, size_t len);

/*
 * The layout of @len bytes at window offset @off in a sparse image file:
 * *@hole bytes from @off are a hole (they read as zeros, so a reader may
 * skip them), then *@data bytes are data, both within @len.  Block devices
 * and hosts without SEEK_DATA report everything as data.  Returns 0 or
 * FK_ECORRUPT (past the window).
 */
int fk_device_extent(struct fk_device *dev, uint64_t off, uint64_t len,
		     uint64_t *hole, uint64_t *data);

/* Read adjacent bytes at @off into several buffers (one system call). */
int fk_device_readv(struct fk_device *dev, uint64_t off,
		    const struct iovec *iov, int iovcnt);
int fk_device_write(struct fk_device *dev, uint64_t off, const void *buf,
		    size_t len);
/* One vectored write of adjacent buffers (one system call when it can). */
int fk_device_writev(struct fk_device *dev, uint64_t off,
		     const struct iovec *iov, int iovcnt);
/*
 * Make @len bytes at @off read as zeros, cheaply where the host can: holes
 * of a sparse image are left as they are, data is zeroed in place with
 * FALLOC_FL_ZERO_RANGE (else punch hole), BLKZEROOUT on a block device,
 * else by large writes.
 */
int fk_device_zero(struct fk_device *dev, uint64_t off, uint64_t len);
int fk_device_sync(struct fk_device *dev);

/* The counters so far; borrowed until fk_device_close(). */
const struct fk_io_stats *fk_device_stats(const struct fk_device *dev);

#endif
