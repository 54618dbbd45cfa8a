/*
 * device.c: owns the file descriptor of IMAGE and every system call made
 * on it: opening, locking, the busy/mounted checks, full-length reads and
 * writes within the volume window (which window.c chooses), zeroing, fsync
 * and the I/O counters.
 */
#define _GNU_SOURCE /* fallocate(), FALLOC_FL_*, O_CLOEXEC on old libcs */
#include "io/device.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "lib/diag.h"

#define ZERO_CHUNK (1u << 20) /* bytes per write when zeroing by hand */
#define IOV_BATCH  1024	      /* Linux IOV_MAX */

/* A mounted loop device over part of IMAGE: bytes [off, off + len). */
struct mounted_loop {
	uint64_t off;
	uint64_t len; /* 0: to the end of IMAGE (no size limit) */
	char name[64];
	char where[PATH_MAX];
};

struct fk_device {
	int fd;
	char *path;
	int is_blk;
	int is_writer;
	unsigned
		lsec_len; /* device logical sector (BLKSSZGET); 512 for files */
	uint64_t img_len; /* bytes in IMAGE */
	uint64_t base;	  /* window start in IMAGE */
	uint64_t len;	  /* window length */
	int no_holes;	  /* the host cannot tell holes (no SEEK_DATA) */
	/* Mounted loop devices backed by IMAGE (a writer's, without
	 * --force): refused by fk_device_claim() where they overlap. */
	struct mounted_loop *loops;
	size_t nloops;
	struct fk_io_stats stats;
#ifdef FK_FAULT_INJECTION
	/* Write and zero calls are numbered together, as --stats counts
	 * them, so that a test looping N over a run reaches every call. */
	unsigned long fault_calls; /* write and zero calls so far */
	unsigned long fail_write;  /* fail this call with EIO (1-based) */
	unsigned long crash_after; /* _exit(99) after this call */
	unsigned long signal_at;   /* raise(signo) before this call */
	int signo;		   /* SIGINT unless FK_SIGNAL says */
	int is_signal_again;	   /* and before every later call */
	/* FK_BAD_SECTOR: a read that covers this sector of the image
	 * fails with EIO, as a worn card's does */
	uint64_t bad_sec;
	int has_bad_sec;
#endif
};

/* ---- size, locks and the busy checks ------------------------------------ */

static int image_size(struct fk_device *dev, uint64_t *len, struct fk_diag *d)
{
	struct stat st;

	if (fstat(dev->fd, &st))
		return -errno;
	dev->lsec_len = 512;
	if (S_ISBLK(st.st_mode)) {
		int lsec = 512;

		dev->is_blk = 1;
		if (ioctl(dev->fd, BLKGETSIZE64, len))
			return -errno;
		/* BLKZEROOUT wants ranges aligned to the logical sector. */
		if (!ioctl(dev->fd, BLKSSZGET, &lsec) && lsec >= 512)
			dev->lsec_len = (unsigned)lsec;
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		fk_diag_set(d, NULL, "not a regular file or block device");
		return -EINVAL;
	}
	*len = (uint64_t)st.st_size;
	return 0;
}

/*
 * Who holds a flock on the file @fd is open on?  /proc/locks names the
 * pid by device (hex major:minor) and inode; @who gets "process 123
 * (flock)".  Returns 0, or -ENOENT when the system does not tell.
 */
static int lock_holder(int fd, char *who, size_t len)
{
	char line[256], want[64], comm[64] = "", path[64];
	struct stat st;
	FILE *f;
	long pid = 0;

	if (fstat(fd, &st) || !(f = fopen("/proc/locks", "re")))
		return -ENOENT;
	snprintf(want, sizeof(want), "%02x:%02x:%llu", major(st.st_dev),
		 minor(st.st_dev), (unsigned long long)st.st_ino);
	while (!pid && fgets(line, sizeof(line), f)) {
		char kind[16], id[64];
		long p;

		/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF";
		 * waiters ("1: -> FLOCK ...") do not hold it. */
		if (sscanf(line, "%*s %15s %*s %*s %ld %63s", kind, &p, id) ==
			    3 &&
		    !strcmp(kind, "FLOCK") && !strcmp(id, want))
			pid = p;
	}
	fclose(f);
	if (pid <= 0)
		return -ENOENT;
	/* The locker may have exited, leaving the lock to a child that
	 * shares the open file (flock -x FD in a shell): then say nothing
	 * rather than name a process that is gone. */
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	if (!(f = fopen(path, "re")))
		return -ENOENT;
	if (fgets(comm, sizeof(comm), f))
		comm[strcspn(comm, "\n")] = '\0';
	fclose(f);
	snprintf(who, len, "process %ld (%s)", pid, comm);
	return 0;
}

/* Milliseconds on the monotonic clock. */
static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * --wait polls rather than blocking in flock(): a blocking call would
 * need a timer signal to give up, and a poll every 50 ms costs nothing
 * beside a lock that is held for seconds.
 */
static int take_lock(struct fk_device *dev, long long wait_ms,
		     struct fk_diag *diag)
{
	int op = (dev->is_writer ? LOCK_EX : LOCK_SH) | LOCK_NB;
	long long until = wait_ms > 0 ? now_ms() + wait_ms : 0;
	struct timespec pause = {0, 50 * 1000000L};
	char who[128];

	while (flock(dev->fd, op)) {
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK)
			return -errno;
		if (wait_ms < 0 || (wait_ms > 0 && now_ms() < until)) {
			nanosleep(&pause, NULL);
			continue;
		}
		if (!lock_holder(dev->fd, who, sizeof(who)))
			fk_diag_set(diag, NULL, "image is in use by %s", who);
		else
			fk_diag_set(diag, NULL, "image is in use");
		if (wait_ms > 0)
			fk_diag_append(diag, -EBUSY,
				       "; gave up after waiting %g s",
				       (double)wait_ms / 1000);
		return -EBUSY;
	}
	return 0;
}

/*
 * Is device number @devno, or a partition of it, in the mount table?
 * @where (@len bytes) gets the mount point, as mountinfo spells it.
 */
static int devno_mounted(dev_t devno, char *where, size_t len)
{
	char line[4096], self[64], mine[PATH_MAX], other[PATH_MAX];
	unsigned maj, min;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = 0;

	if (!f)
		return 0;
	snprintf(self, sizeof(self), "/sys/dev/block/%u:%u", major(devno),
		 minor(devno));
	if (!realpath(self, mine))
		mine[0] = '\0';
	while (!found && fgets(line, sizeof(line), f)) {
		char path[64];
		size_t n;

		char point[PATH_MAX];

		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min,
			   point) != 3)
			continue;
		snprintf(where, len, "%s", point);
		if (makedev(maj, min) == devno) {
			found = 1;
			break;
		}
		/* A mounted partition lives in a subdirectory of its disk. */
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", maj, min);
		n = strlen(mine);
		if (n && realpath(path, other) && !strncmp(other, mine, n) &&
		    other[n] == '/')
			found = 1;
	}
	fclose(f);
	return found;
}

/* A number from a sysfs file of loop device @name; 0 when unreadable. */
static uint64_t loop_u64(const char *name, const char *field)
{
	char path[512];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/block/%s/loop/%s", name, field);
	if (!(f = fopen(path, "re")))
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/*
 * Record every mounted loop device backed by the file @st, with its byte
 * range (losetup --offset, --sizelimit), in @dev->loops.  Returns 0 or
 * -ENOMEM.
 */
static int find_mounted_loops(struct fk_device *dev, const struct stat *st)
{
	DIR *dir = opendir("/sys/block");
	struct dirent *de;
	int err = 0;

	if (!dir)
		return 0;
	while (!err && (de = readdir(dir))) {
		char path[512], backing[PATH_MAX], where[PATH_MAX];
		struct mounted_loop *m;
		struct stat bst;
		unsigned maj, min;
		FILE *f;
		char *nl;
		int n;

		if (strncmp(de->d_name, "loop", 4))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file",
			 de->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		if (!fgets(backing, sizeof(backing), f))
			backing[0] = '\0';
		fclose(f);
		if ((nl = strchr(backing, '\n')))
			*nl = '\0';
		if (stat(backing, &bst) || bst.st_dev != st->st_dev ||
		    bst.st_ino != st->st_ino)
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/dev", de->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		n = fscanf(f, "%u:%u", &maj, &min);
		fclose(f);
		if (n != 2 ||
		    !devno_mounted(makedev(maj, min), where, sizeof(where)))
			continue;
		m = realloc(dev->loops, (dev->nloops + 1) * sizeof(*m));
		if (!m) {
			err = -ENOMEM;
			break;
		}
		dev->loops = m;
		m += dev->nloops++;
		m->off = loop_u64(de->d_name, "offset");
		m->len = loop_u64(de->d_name, "sizelimit");
		snprintf(m->name, sizeof(m->name), "/dev/%.58s", de->d_name);
		snprintf(m->where, sizeof(m->where), "%s", where);
	}
	closedir(dir);
	return err;
}

static int check_not_mounted(struct fk_device *dev, struct fk_diag *diag)
{
	char where[PATH_MAX];
	struct stat st;

	if (fstat(dev->fd, &st))
		return -errno;
	if (dev->is_blk && devno_mounted(st.st_rdev, where, sizeof(where))) {
		fk_diag_set(diag, NULL,
			    "device is mounted on %s; refusing to write (use "
			    "--force)",
			    where);
		return -EBUSY;
	}
	/* An image file: which part is mounted is known only once the
	 * volume is (fk_device_claim()). */
	if (!dev->is_blk)
		return find_mounted_loops(dev, &st);
	return 0;
}

int fk_device_claim(struct fk_device *dev, uint64_t off, uint64_t len,
		    struct fk_diag *diag)
{
	uint64_t lo = dev->base + off, hi = lo + len;
	size_t i;

	for (i = 0; i < dev->nloops; i++) {
		const struct mounted_loop *m = &dev->loops[i];
		uint64_t end = m->len ? m->off + m->len : UINT64_MAX;

		if (m->off >= hi || end <= lo)
			continue; /* another partition: not ours */
		fk_diag_set(diag, NULL,
			    "image is mounted on %s via %s; refusing to write "
			    "(use --force)",
			    m->where, m->name);
		return -EBUSY;
	}
	return 0;
}

/* A read-only block device (BLKROGET: losetup -r, a locked SD card, a
 * write-protected disk) may still open for writing, and only fail at the
 * first write: a writer asks before it reads anything. */
static int is_read_only(int fd)
{
	struct stat st;
	int ro = 0;

	return !fstat(fd, &st) && S_ISBLK(st.st_mode) &&
	       !ioctl(fd, BLKROGET, &ro) && ro;
}

static int open_fd(struct fk_device *dev, const struct fk_device_opts *opts,
		   struct fk_diag *diag)
{
	int flags = (opts->is_writer ? O_RDWR : O_RDONLY) | O_CLOEXEC;
	struct stat st;

	if (!stat(opts->path, &st) && S_ISBLK(st.st_mode) && opts->is_writer &&
	    !opts->force)
		flags |= O_EXCL; /* the kernel refuses a device in use */
	dev->fd = open(opts->path, flags);
	if (dev->fd < 0) {
		if (errno == EBUSY)
			fk_diag_set(diag, NULL,
				    "device is busy; refusing to "
				    "write (use --force)");
		else if (errno == EROFS) /* a file on a read-only mount */
			fk_diag_set(diag, NULL, "device is read-only");
		return -errno;
	}
	if (opts->is_writer && is_read_only(dev->fd)) {
		fk_diag_set(diag, NULL, "device is read-only");
		close(dev->fd);
		return -EROFS;
	}
	return 0;
}

/* ---- open and close ------------------------------------------------------ */

static void fault_setup(struct fk_device *dev)
{
#ifdef FK_FAULT_INJECTION
	const char *s;

	if ((s = getenv("FK_FAIL_WRITE")))
		dev->fail_write = strtoul(s, NULL, 10);
	if ((s = getenv("FK_CRASH_AFTER_WRITE")))
		dev->crash_after = strtoul(s, NULL, 10);
	if ((s = getenv("FK_SIGNAL_BEFORE_WRITE")))
		dev->signal_at = strtoul(s, NULL, 10);
	dev->signo = SIGINT;
	if ((s = getenv("FK_SIGNAL")))
		dev->signo = (int)strtol(s, NULL, 10);
	dev->is_signal_again = getenv("FK_SIGNAL_AGAIN") != NULL;
	if ((s = getenv("FK_BAD_SECTOR"))) {
		dev->bad_sec = strtoull(s, NULL, 10);
		dev->has_bad_sec = 1;
	}
#else
	(void)dev;
#endif
}

int fk_device_open(const struct fk_device_opts *opts, struct fk_device **out,
		   struct fk_diag *diag)
{
	struct fk_device *dev = calloc(1, sizeof(*dev));
	int err;

	fk_diag_subject(diag, opts->path);
	if (!dev)
		return -ENOMEM;
	dev->is_writer = opts->is_writer;
	if (!(dev->path = strdup(opts->path))) {
		err = -ENOMEM;
		goto out_free;
	}
	if ((err = open_fd(dev, opts, diag)))
		goto out_free;
	if ((err = image_size(dev, &dev->img_len, diag)))
		goto out_close;
	if ((err = take_lock(dev, opts->wait_ms, diag)))
		goto out_close;
	if (opts->is_writer && !opts->force &&
	    (err = check_not_mounted(dev, diag)))
		goto out_close;
	dev->len = dev->img_len;
	/*
	 * fatkit reads what it needs in large requests itself (FAT spans,
	 * whole directory runs).  The kernel's read-ahead would turn each
	 * small read of a directory cluster or FAT sector into 128 KiB
	 * more: on a card that answers one request at a time, bytes nobody
	 * reads.  Advice only: a kernel that ignores it changes no result.
	 */
	(void)posix_fadvise(dev->fd, 0, 0, POSIX_FADV_RANDOM);
	fault_setup(dev);
	*out = dev;
	return 0;
out_close:
	close(dev->fd);
out_free:
	free(dev->loops);
	free(dev->path);
	free(dev);
	return err;
}

void fk_device_close(struct fk_device *dev)
{
	if (!dev)
		return;
	close(dev->fd);
	free(dev->loops);
	free(dev->path);
	free(dev);
}

uint64_t fk_device_len(const struct fk_device *dev)
{
	return dev->len;
}

uint64_t fk_device_base(const struct fk_device *dev)
{
	return dev->base;
}

uint64_t fk_device_disk_off(const struct fk_device *dev)
{
	unsigned long long start = 0;
	struct stat st;
	char path[96];
	FILE *f;

	if (!dev->is_blk || fstat(dev->fd, &st))
		return 0;
	/* "start" exists for partitions only, in 512-byte units */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/start",
		 major(st.st_rdev), minor(st.st_rdev));
	if (!(f = fopen(path, "re")))
		return 0;
	if (fscanf(f, "%llu", &start) != 1)
		start = 0;
	fclose(f);
	return (uint64_t)start * 512;
}

const char *fk_device_path(const struct fk_device *dev)
{
	return dev->path;
}

uint64_t fk_device_image_len(const struct fk_device *dev)
{
	return dev->img_len;
}

int fk_device_fd(const struct fk_device *dev)
{
	return dev->fd;
}

int fk_device_set_window(struct fk_device *dev, uint64_t base, uint64_t len)
{
	if (base > dev->img_len || len > dev->img_len - base)
		return -EINVAL;
	dev->base = base;
	dev->len = len;
	return 0;
}

const struct fk_io_stats *fk_device_stats(const struct fk_device *dev)
{
	return &dev->stats;
}

/* ---- I/O ------------------------------------------------------------------
 */

static int in_window(const struct fk_device *dev, uint64_t off, uint64_t len)
{
	return off <= dev->len && len <= dev->len - off;
}

/* Does a read of [@off, @off + @len) cover the sector FK_BAD_SECTOR
 * names (fault-injection builds)? */
static int reads_bad_sector(const struct fk_device *dev, uint64_t off,
			    size_t len)
{
#ifdef FK_FAULT_INJECTION
	uint64_t lo = dev->base + off, bad = dev->bad_sec * 512;

	return dev->has_bad_sec && lo < bad + 512 && bad < lo + len;
#else
	(void)dev;
	(void)off;
	(void)len;
	return 0;
#endif
}

int fk_device_read(struct fk_device *dev, uint64_t off, void *buf, size_t len)
{
	char *p = buf;

	if (!in_window(dev, off, len))
		return FK_ECORRUPT;
	if (reads_bad_sector(dev, off, len))
		return -EIO;
	while (len) {
		ssize_t n = pread(dev->fd, p, len, (off_t)(dev->base + off));

		dev->stats.read_calls++;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return FK_ECORRUPT; /* the file shrank under us */
		dev->stats.bytes_read += (uint64_t)n;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int fk_device_extent(struct fk_device *dev, uint64_t off, uint64_t len,
		     uint64_t *hole, uint64_t *data)
{
	off_t at = (off_t)(dev->base + off), d, h;

	*hole = 0;
	*data = len;
	if (!in_window(dev, off, len))
		return FK_ECORRUPT;
	if (dev->is_blk || dev->no_holes || !len)
		return 0;
	if ((d = lseek(dev->fd, at, SEEK_DATA)) < 0) {
		if (errno != ENXIO) { /* EINVAL: the host cannot tell */
			dev->no_holes = 1;
			return 0;
		}
		*hole = len; /* no data from @off to the end of the file */
		*data = 0;
		return 0;
	}
	if ((uint64_t)(d - at) >= len) {
		*hole = len;
		*data = 0;
		return 0;
	}
	*hole = (uint64_t)(d - at);
	if ((h = lseek(dev->fd, d, SEEK_HOLE)) >= 0 &&
	    (uint64_t)(h - d) < len - *hole)
		*data = (uint64_t)(h - d);
	else
		*data = len - *hole;
	return 0;
}

int fk_device_map(struct fk_device *dev, uint64_t off, size_t len,
		  const unsigned char **addr)
{
	uint64_t at = dev->base + off;
	uint64_t skew = at % (uint64_t)sysconf(_SC_PAGESIZE);
	void *p;

	if (!in_window(dev, off, len))
		return FK_ECORRUPT;
	/* A sector that fails to read through a mapping is a SIGBUS, not
	 * an error.  Block devices, where sectors go bad, are read with
	 * pread(): their own speed, not the copy, sets the pace there. */
	if (dev->is_blk)
		return -EOPNOTSUPP;
	/* Not MAP_POPULATE: faulting the pages in as the scan reaches them
	 * costs less than populating up front, warm or cold (measured in
	 * bench/RESULTS.md). */
	p = mmap(NULL, len + skew, PROT_READ, MAP_PRIVATE, dev->fd,
		 (off_t)(at - skew));
	if (p == MAP_FAILED)
		return -errno;
	dev->stats.read_calls++;
	dev->stats.bytes_read += len;
	*addr = (const unsigned char *)p + skew;
	return 0;
}

void fk_device_unmap(const unsigned char *addr, size_t len)
{
	uintptr_t skew = (uintptr_t)addr % (uintptr_t)sysconf(_SC_PAGESIZE);

	munmap((void *)(addr - skew), len + skew);
}

int fk_device_readv(struct fk_device *dev, uint64_t off,
		    const struct iovec *iov, int iovcnt)
{
	uint64_t len = 0;
	ssize_t n;
	int i, err;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (!in_window(dev, off, len))
		return FK_ECORRUPT;
	do
		n = preadv(dev->fd, iov, iovcnt, (off_t)(dev->base + off));
	while (n < 0 && errno == EINTR);
	dev->stats.read_calls++;
	if (n < 0)
		return -errno;
	dev->stats.bytes_read += (uint64_t)n;
	/* A short read (rare: signals, odd files) finishes piece by piece. */
	for (i = 0; i < iovcnt && (uint64_t)n < len; i++) {
		if ((size_t)n >= iov[i].iov_len) {
			n -= (ssize_t)iov[i].iov_len;
			off += iov[i].iov_len;
			len -= iov[i].iov_len;
			continue;
		}
		if ((err = fk_device_read(dev, off + (uint64_t)n,
					  (char *)iov[i].iov_base + n,
					  iov[i].iov_len - (size_t)n)))
			return err;
		off += iov[i].iov_len;
		len -= iov[i].iov_len;
		n = 0;
	}
	return 0;
}

/*
 * Test builds fail, crash or get a signal at a chosen write call.  The
 * signal comes just before the call, which then still happens: as a
 * signal arriving at any moment, it is heard at the next safe point.
 */
static int fault_before_write(struct fk_device *dev)
{
#ifdef FK_FAULT_INJECTION
	++dev->fault_calls;
	if (dev->signal_at &&
	    (dev->fault_calls == dev->signal_at ||
	     (dev->is_signal_again && dev->fault_calls > dev->signal_at)))
		raise(dev->signo);
	if (dev->fault_calls == dev->fail_write) {
		dev->stats.write_calls++;
		return -EIO;
	}
#else
	(void)dev;
#endif
	return 0;
}

static void fault_after_write(struct fk_device *dev)
{
#ifdef FK_FAULT_INJECTION
	if (dev->crash_after && dev->fault_calls == dev->crash_after)
		_exit(99);
#else
	(void)dev;
#endif
}

int fk_device_writev(struct fk_device *dev, uint64_t off,
		     const struct iovec *iov, int iovcnt)
{
	uint64_t len = 0;
	int i, err;

	if (!dev->is_writer)
		return -EBADF;
	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (!in_window(dev, off, len))
		return FK_ECORRUPT;
	while (iovcnt > 0) {
		int n = iovcnt < IOV_BATCH ? iovcnt : IOV_BATCH;
		ssize_t done;

		if ((err = fault_before_write(dev)))
			return err;
		done = pwritev(dev->fd, iov, n, (off_t)(dev->base + off));
		dev->stats.write_calls++;
		if (done < 0 && errno == EINTR)
			continue;
		if (done < 0)
			return -errno;
		dev->stats.bytes_written += (uint64_t)done;
		fault_after_write(dev);
		off += (uint64_t)done;
		while (iovcnt > 0 && (size_t)done >= iov->iov_len) {
			done -= (ssize_t)iov->iov_len;
			iov++;
			iovcnt--;
		}
		if (done > 0) { /* a short write stopped inside *iov */
			if ((err = fk_device_write(
				     dev, off, (char *)iov->iov_base + done,
				     iov->iov_len - (size_t)done)))
				return err;
			off += iov->iov_len - (size_t)done;
			iov++;
			iovcnt--;
		}
	}
	return 0;
}

int fk_device_write(struct fk_device *dev, uint64_t off, const void *buf,
		    size_t len)
{
	struct iovec iov = {(void *)buf, len};

	return fk_device_writev(dev, off, &iov, 1);
}

static int zero_by_writing(struct fk_device *dev, uint64_t off, uint64_t len)
{
	struct iovec iov[16];
	char *zeros = calloc(1, ZERO_CHUNK);
	int err = 0, i;

	if (!zeros)
		return -ENOMEM;
	for (i = 0; i < 16; i++)
		iov[i].iov_base = zeros;
	while (len && !err) {
		uint64_t step = 0;
		int n = 0;

		while (n < 16 && step < len) {
			uint64_t piece = len - step < ZERO_CHUNK ? len - step
								 : ZERO_CHUNK;
			iov[n++].iov_len = (size_t)piece;
			step += piece;
		}
		err = fk_device_writev(dev, off, iov, n);
		off += step;
		len -= step;
	}
	free(zeros);
	return err;
}

/* Zero @len bytes of data at @off: one fallocate or ioctl call if it can. */
static int zero_data(struct fk_device *dev, uint64_t off, uint64_t len)
{
	off_t at = (off_t)(dev->base + off);
	int err;

	if ((err = fault_before_write(dev)))
		return err;
	if (dev->is_blk) {
		uint64_t range[2] = {dev->base + off, len};

		if (!(range[0] % dev->lsec_len) && !(len % dev->lsec_len) &&
		    !ioctl(dev->fd, BLKZEROOUT, range))
			goto done;
	} else if (!fallocate(dev->fd, FALLOC_FL_ZERO_RANGE, at, (off_t)len) ||
		   !fallocate(dev->fd,
			      FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, at,
			      (off_t)len)) {
		goto done;
	}
	return zero_by_writing(dev, off, len);
done:
	dev->stats.zero_calls++;
	dev->stats.bytes_zeroed += len;
	fault_after_write(dev);
	return 0;
}

int fk_device_zero(struct fk_device *dev, uint64_t off, uint64_t len)
{
	uint64_t hole, data;
	int err;

	if (!dev->is_writer)
		return -EBADF;
	if (!in_window(dev, off, len))
		return FK_ECORRUPT;
	/*
	 * Holes already read as zeros: only the data between them is zeroed,
	 * so a sparse image stays as sparse as it was (the free space of a
	 * fresh one costs nothing) and the space it does hold stays held.
	 */
	while (len) {
		if ((err = fk_device_extent(dev, off, len, &hole, &data)))
			return err;
		dev->stats.bytes_zeroed += hole;
		if (data && (err = zero_data(dev, off + hole, data)))
			return err;
		off += hole + data;
		len -= hole + data;
	}
	return 0;
}

int fk_device_sync(struct fk_device *dev)
{
	dev->stats.fsyncs++;
	if (fsync(dev->fd))
		return -errno;
	return 0;
}
