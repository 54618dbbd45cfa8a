/*
 * test_device.c: the device contract of device.h on temporary files, read
 * back with plain pread/lseek (not through device.c): locks, the volume
 * window and ranges past it, reader-only refusals, vectored I/O longer than
 * one system call takes, holes reported and kept, zeroing that leaves the
 * bytes around it alone, and (in a -DFK_FAULT_INJECTION build) the write
 * call that fails on request.
 */
#define _GNU_SOURCE /* SEEK_DATA, SEEK_HOLE */
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/device.h"
#include "io/window.h"
#include "lib/diag.h"
#include "mount/families.h"
#include "volume/family.h"

#define KIB	 1024u
#define IMG_LEN	 (2048u * KIB) /* data 0..8K, hole, data 1M..1M+8K, hole */
#define DATA_LEN (8u * KIB)
#define FAR_OFF	 (1024u * KIB)

struct tmpimg {
	char path[4096];
};

static unsigned char pattern(uint64_t off)
{
	return (unsigned char)(off * 7 + 1) | 1; /* never zero */
}

/*
 * A sparse file of IMG_LEN with two data extents of patterned bytes, in
 * @dir (NULL: $TMPDIR or /tmp).
 */
static int tmpimg_make(struct tmpimg *t, const char *dir)
{
	static unsigned char buf[DATA_LEN];
	uint64_t at[2] = {0, FAR_OFF};
	int fd, i, err = 0;
	size_t j;

	if (!dir)
		dir = getenv("TMPDIR");
	snprintf(t->path, sizeof(t->path), "%s/fk-dev-XXXXXX",
		 dir && *dir ? dir : "/tmp");
	if ((fd = mkstemp(t->path)) < 0)
		return -errno;
	for (i = 0; i < 2 && !err; i++) {
		for (j = 0; j < DATA_LEN; j++)
			buf[j] = pattern(at[i] + j);
		if (pwrite(fd, buf, DATA_LEN, (off_t)at[i]) != DATA_LEN)
			err = -EIO;
	}
	if (!err && ftruncate(fd, IMG_LEN))
		err = -errno;
	close(fd);
	return err;
}

/* Bytes [@off, @off + @len) of the file equal the pattern (or zeros). */
static int bytes_are(const struct tmpimg *t, uint64_t off, size_t len,
		     int is_zero)
{
	unsigned char *buf = malloc(len);
	int fd = open(t->path, O_RDONLY), ok;
	size_t j;

	ok = buf && fd >= 0 && pread(fd, buf, len, (off_t)off) == (ssize_t)len;
	for (j = 0; ok && j < len; j++)
		ok = buf[j] == (is_zero ? 0 : pattern(off + j));
	if (fd >= 0)
		close(fd);
	free(buf);
	return ok;
}

static int open_dev(const char *path, int is_writer, struct fk_device **out,
		    struct fk_diag *diag)
{
	struct fk_device_opts o;

	memset(&o, 0, sizeof(o));
	memset(diag, 0, sizeof(*diag));
	o.path = path;
	o.is_writer = is_writer;
	return fk_device_open(&o, out, diag);
}

/* Does a registered family's volume start with @bs?  As mount.c asks. */
static int is_boot(const unsigned char *bs, uint64_t vol_len)
{
	size_t i;

	for (i = 0; fk_families[i]; i++)
		if (fk_families[i]->probe(bs, vol_len))
			return 1;
	return 0;
}

/* Is libblkid's @type a registered family's?  As mount.c asks. */
static int is_type(const char *type, const char *ver, char *name, size_t len)
{
	size_t i;

	for (i = 0; fk_families[i]; i++)
		if (fk_families[i]->is_blkid_type(type, ver, name, len))
			return 1;
	return 0;
}

/* Open @o->path and narrow it to the window @o asks for, as mount.c does. */
static int open_window(const struct fk_device_opts *o, struct fk_device **out,
		       struct fk_diag *diag)
{
	struct fk_window_fs fs = {is_boot, is_type, NULL, 0, 0, 0};
	struct fk_device *dev;
	int err;

	if ((err = fk_device_open(o, &dev, diag)))
		return err;
	if ((err = fk_window_choose(dev, o, &fs, diag))) {
		fk_device_close(dev);
		return err;
	}
	*out = dev;
	return 0;
}

static void suite_open(const struct tmpimg *t)
{
	struct fk_device *w = NULL, *r = NULL;
	struct fk_device_opts o;
	struct fk_diag d;
	int err;

	err = open_dev("/nonexistent/fk-image", 0, &r, &d);
	OK(err == -ENOENT, "device: a missing image is ENOENT (%d)", err);
	err = open_dev("/dev/null", 0, &r, &d);
	OK(err == -EINVAL &&
		   !strcmp(d.reason, "not a regular file or block device"),
	   "device: a character device is refused by name (%d, %s)", err,
	   d.reason);
	err = open_dev(t->path, 1, &w, &d);
	OK(!err && fk_device_len(w) == IMG_LEN && fk_device_base(w) == 0 &&
		   !strcmp(fk_device_path(w), t->path),
	   "device: a writer opens the whole file as its window");
	err = open_dev(t->path, 0, &r, &d);
	OK(err == -EBUSY && !strncmp(d.reason, "image is in use", 15) &&
		   !strcmp(d.what, t->path),
	   "device: a reader is busy at once while a writer holds it (%d)",
	   err);
	err = open_dev(t->path, 1, &r, &d);
	OK(err == -EBUSY, "device: a second writer is busy too (%d)", err);
	fk_device_close(w);
	fk_device_close(NULL);

	memset(&o, 0, sizeof(o));
	memset(&d, 0, sizeof(d));
	o.path = t->path;
	o.has_off = 1;
	o.off = IMG_LEN;
	err = open_window(&o, &r, &d);
	OK(err == FK_ECORRUPT &&
		   !strcmp(d.reason, "volume offset 2097152 is past the end "
				     "of the image (2097152 bytes)"),
	   "device: an offset at the end of the image is refused (%s)",
	   d.reason);
	o.off = FAR_OFF;
	err = open_window(&o, &r, &d);
	OK(!err && fk_device_base(r) == FAR_OFF &&
		   fk_device_len(r) == IMG_LEN - FAR_OFF,
	   "device: IMAGE@@OFFSET is a window from OFFSET to the end");
	fk_device_close(r);
}

static void suite_ranges(const struct tmpimg *t)
{
	unsigned char a[16], b[16];
	struct iovec iov[2] = {{a, sizeof(a)}, {b, sizeof(b)}};
	const unsigned char *map;
	struct fk_device *r = NULL, *w = NULL;
	uint64_t hole, data;
	struct fk_diag d;
	int err;

	if ((err = open_dev(t->path, 0, &r, &d))) {
		OK(0, "device: open a reader (%d)", err);
		return;
	}
	OK(fk_device_read(r, IMG_LEN - 8, a, 16) == FK_ECORRUPT &&
		   fk_device_readv(r, IMG_LEN - 16, iov, 2) == FK_ECORRUPT &&
		   fk_device_map(r, IMG_LEN, 1, &map) == FK_ECORRUPT &&
		   fk_device_extent(r, IMG_LEN, 1, &hole, &data) == FK_ECORRUPT,
	   "device: reads past the window are FK_ECORRUPT");
	OK(fk_device_write(r, 0, a, 1) == -EBADF &&
		   fk_device_zero(r, 0, 1) == -EBADF,
	   "device: a reader never writes or zeroes (EBADF)");
	err = fk_device_readv(r, 100, iov, 2);
	OK(!err && a[0] == pattern(100) && a[15] == pattern(115) &&
		   b[0] == pattern(116) && b[15] == pattern(131),
	   "device: a vectored read fills each buffer in turn");
	fk_device_close(r);

	if ((err = open_dev(t->path, 1, &w, &d))) {
		OK(0, "device: open a writer (%d)", err);
		return;
	}
	memset(a, 0xee, sizeof(a));
	OK(fk_device_write(w, IMG_LEN - 8, a, 16) == FK_ECORRUPT &&
		   fk_device_zero(w, IMG_LEN - 8, 16) == FK_ECORRUPT &&
		   bytes_are(t, 0, DATA_LEN, 0),
	   "device: writes and zeroing past the window are refused, "
	   "nothing written");
	fk_device_close(w);
}

/* Holes as SEEK_DATA sees them; zeroing keeps them and the bytes around. */
static void suite_holes(const struct tmpimg *t)
{
	struct fk_device *w = NULL;
	uint64_t hole, data;
	struct fk_diag d;
	struct stat before, after;
	int err;

	if ((err = open_dev(t->path, 1, &w, &d))) {
		OK(0, "device: open a writer (%d)", err);
		return;
	}
	err = fk_device_extent(w, 0, IMG_LEN, &hole, &data);
	OK(!err && hole == 0 && data == DATA_LEN,
	   "device: extent at 0: data first, up to the hole (%llu, %llu)",
	   (unsigned long long)hole, (unsigned long long)data);
	err = fk_device_extent(w, DATA_LEN, IMG_LEN - DATA_LEN, &hole, &data);
	OK(!err && hole == FAR_OFF - DATA_LEN && data == DATA_LEN,
	   "device: extent in a hole: the hole, then the next data");
	err = fk_device_extent(w, DATA_LEN, 4 * KIB, &hole, &data);
	OK(!err && hole == 4 * KIB && data == 0,
	   "device: a range inside a hole is all hole");
	err = fk_device_extent(w, FAR_OFF + DATA_LEN, 4 * KIB, &hole, &data);
	OK(!err && hole == 4 * KIB && data == 0,
	   "device: past the last data (ENXIO) is all hole");
	err = fk_device_extent(w, 0, 0, &hole, &data);
	OK(!err && hole == 0 && data == 0, "device: an empty extent is empty");

	stat(t->path, &before);
	/* From the middle of the first extent to the middle of the second. */
	err = fk_device_zero(w, DATA_LEN / 2, FAR_OFF);
	stat(t->path, &after);
	OK(!err && bytes_are(t, 0, DATA_LEN / 2, 0) &&
		   bytes_are(t, DATA_LEN / 2, FAR_OFF, 1) &&
		   bytes_are(t, FAR_OFF + DATA_LEN / 2, DATA_LEN / 2, 0),
	   "device: zeroing across a hole zeroes exactly the range");
	OK(after.st_blocks <= before.st_blocks,
	   "device: zeroing never fills a hole (%lld then %lld blocks)",
	   (long long)before.st_blocks, (long long)after.st_blocks);
	OK(fk_device_stats(w)->bytes_zeroed == FAR_OFF,
	   "device: --stats counts holes as zeroed bytes too");
	fk_device_close(w);
}

/* More buffers than one pwritev takes (IOV_MAX): the rest follow. */
static void suite_writev(const struct tmpimg *t)
{
	enum { NIOV = 1500 };
	static unsigned char bytes[NIOV];
	static struct iovec iov[NIOV];
	struct fk_device *w = NULL;
	struct fk_diag d;
	int err, i;

	if ((err = open_dev(t->path, 1, &w, &d))) {
		OK(0, "device: open a writer (%d)", err);
		return;
	}
	for (i = 0; i < NIOV; i++) {
		bytes[i] = pattern((uint64_t)FAR_OFF * 2 - 1 + (uint64_t)i);
		iov[i].iov_base = &bytes[i];
		iov[i].iov_len = 1;
	}
	err = fk_device_writev(w, 2 * FAR_OFF - 1 - NIOV, iov, NIOV);
	OK(!err && fk_device_stats(w)->write_calls == 2,
	   "device: %d buffers go in two system calls (%llu)", NIOV,
	   (unsigned long long)fk_device_stats(w)->write_calls);
	fk_device_close(w);
	{
		int fd = open(t->path, O_RDONLY), ok = fd >= 0;
		unsigned char got[NIOV];

		ok = ok &&
		     pread(fd, got, NIOV, (off_t)(2 * FAR_OFF - 1 - NIOV)) ==
			     NIOV &&
		     !memcmp(got, bytes, NIOV);
		if (fd >= 0)
			close(fd);
		OK(ok, "device: the bytes land in buffer order");
	}
}

/*
 * tmpfs has no FALLOC_FL_ZERO_RANGE: zeroing falls back to punching a
 * hole (the size kept), still one call.  Skipped where /dev/shm is not
 * tmpfs.
 */
static void suite_punch(void)
{
	struct tmpimg t;
	struct statfs sfs;
	struct fk_device *w = NULL;
	struct fk_diag d;
	struct stat st;
	int err;

	if (statfs("/dev/shm", &sfs) || sfs.f_type != 0x01021994) {
		OK(1, "device: # SKIP /dev/shm is not tmpfs");
		return;
	}
	if ((err = tmpimg_make(&t, "/dev/shm")) ||
	    (err = open_dev(t.path, 1, &w, &d))) {
		OK(0, "device: a tmpfs image (%d)", err);
		return;
	}
	err = fk_device_zero(w, 1024, 4096);
	OK(!err && fk_device_stats(w)->zero_calls == 1 &&
		   bytes_are(&t, 0, 1024, 0) && bytes_are(&t, 1024, 4096, 1) &&
		   bytes_are(&t, 5120, DATA_LEN - 5120, 0) &&
		   !stat(t.path, &st) && st.st_size == IMG_LEN,
	   "device: on tmpfs a punched hole zeroes exactly the range, size "
	   "kept");
	fk_device_close(w);
	unlink(t.path);
}

/*
 * A file that reads short: a sysfs attribute says 4096 bytes (st_size) but
 * holds a few.  Reads that run into the missing bytes are FK_ECORRUPT, as
 * for an image shorter than its geometry (or one that shrank while open);
 * a vectored read finishes what it can piece by piece first.  sysfs has no
 * mmap for attributes, so the map fails with -errno and callers read.
 */
static void suite_short(void)
{
	/* Fixed text of a few bytes, present on any Linux with sysfs. */
	static const char *const paths[] = {
		"/sys/kernel/fscaps",
		"/sys/kernel/profiling",
		"/sys/kernel/rcu_expedited",
	};
	unsigned char a[1], b[60], buf[64];
	struct iovec iov[2] = {{a, sizeof(a)}, {b, sizeof(b)}};
	const unsigned char *map;
	struct fk_device *r = NULL;
	const char *path = NULL;
	struct fk_diag d;
	struct stat st;
	ssize_t real = 0;
	size_t i;
	int fd, err;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]) && !path; i++) {
		if (stat(paths[i], &st) || st.st_size != 4096 ||
		    (fd = open(paths[i], O_RDONLY)) < 0)
			continue;
		real = pread(fd, buf, sizeof(buf), 0);
		close(fd);
		if (real > (ssize_t)sizeof(a) &&
		    real < (ssize_t)(sizeof(a) + sizeof(b)))
			path = paths[i];
	}
	if (!path) {
		OK(1, "device: # SKIP no sysfs file that reads short");
		return;
	}
	if ((err = open_dev(path, 0, &r, &d))) {
		OK(0, "device: open %s (%d)", path, err);
		return;
	}
	OK(fk_device_len(r) == 4096, "device: the window is st_size long");
	err = fk_device_read(r, 0, buf + 32, 32);
	OK(err == FK_ECORRUPT,
	   "device: a read past the real end is FK_ECORRUPT (%d)", err);
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	err = fk_device_readv(r, 0, iov, 2);
	OK(err == FK_ECORRUPT && a[0] == buf[0] &&
		   !memcmp(b, buf + 1, (size_t)real - 1),
	   "device: a short vectored read fills what it can, then is "
	   "FK_ECORRUPT (%d)",
	   err);
	err = fk_device_map(r, 0, 16, &map);
	OK(err < 0 && err != FK_ECORRUPT,
	   "device: a file without mmap fails the map with -errno (%d)", err);
	fk_device_close(r);
}

#ifdef FK_FAULT_INJECTION
/* FK_FAIL_WRITE=N fails write or zero call N (1-based) with EIO. */
static void suite_fault(const struct tmpimg *t)
{
	struct fk_device *w = NULL;
	unsigned char x = 0x5a;
	struct fk_diag d;
	int err, e1, e2, e3;

	setenv("FK_FAIL_WRITE", "2", 1);
	err = open_dev(t->path, 1, &w, &d);
	unsetenv("FK_FAIL_WRITE");
	if (err) {
		OK(0, "device: open a writer (%d)", err);
		return;
	}
	e1 = fk_device_write(w, 0, &x, 1);
	e2 = fk_device_write(w, 1, &x, 1);
	e3 = fk_device_zero(w, 2, 1);
	OK(!e1 && e2 == -EIO && !e3 && bytes_are(t, 1, 1, 0),
	   "device: FK_FAIL_WRITE=2 fails the second write only, "
	   "which writes nothing (%d %d %d)",
	   e1, e2, e3);
	fk_device_close(w);
}
#endif

void suite_device(void)
{
	struct tmpimg t;
	int err;

	if ((err = tmpimg_make(&t, NULL))) {
		OK(0, "device: make a temporary image (%d)", err);
		return;
	}
	suite_open(&t);
	suite_ranges(&t);
	suite_holes(&t);
	suite_writev(&t);
	suite_punch();
	suite_short();
#ifdef FK_FAULT_INJECTION
	suite_fault(&t);
#endif
	unlink(t.path);
}
