/*
 * bench/coldcard.c: a slow card for benchmarks, as a FUSE file system of
 * two files.  /card passes reads and writes through to IMAGE, and charges
 * each request what an SD card behind a USB reader would: a fixed latency
 * plus its length at a bandwidth, and a flush time per fsync; at most
 * --qd requests are served at once (1: one at a time, as such a card
 * does).  /stats reads as the counters so far.  Both are direct_io files,
 * so the FUSE page cache hides no request: put a buffered loop device on
 * /card (losetup --direct-io=off) and the kernel's block-device read-ahead
 * decides what reaches the card, as it does for a real one.
 *
 *   coldcard IMAGE MOUNTPOINT [--latency-us N] [--mbps N] [--flush-us N]
 *            [--qd N] [FUSE OPTIONS]
 *
 * --mbps is in 10^6 bytes per second.  Built by bench/coldcard.sh (not by
 * the project's build): cc -O2 coldcard.c $(pkg-config --cflags --libs
 * fuse3).
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int img_fd = -1;
static uint64_t img_len;
static uint64_t latency_ns = 500000;
static uint64_t bytes_per_s = 20000000;
static uint64_t flush_ns = 2000000;
static sem_t slots; /* --qd requests in service at once */
static pthread_mutex_t stat_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint64_t reads, bytes_read, writes, bytes_written, flushes;
	uint64_t busy_ns; /* time charged */
} st;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Hold a service slot from @start until @cost has passed. */
static void charge(uint64_t start, uint64_t cost)
{
	uint64_t end = start + cost;
	struct timespec ts = {(time_t)(end / 1000000000u),
			      (long)(end % 1000000000u)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static uint64_t transfer_ns(size_t len)
{
	return latency_ns + (uint64_t)len * 1000000000u / bytes_per_s;
}

static int cc_getattr(const char *path, struct stat *s,
		      struct fuse_file_info *fi)
{
	(void)fi;
	memset(s, 0, sizeof(*s));
	if (!strcmp(path, "/")) {
		s->st_mode = S_IFDIR | 0755;
		s->st_nlink = 2;
	} else if (!strcmp(path, "/card")) {
		s->st_mode = S_IFREG | 0644;
		s->st_nlink = 1;
		s->st_size = (off_t)img_len;
	} else if (!strcmp(path, "/stats")) {
		s->st_mode = S_IFREG | 0444;
		s->st_nlink = 1;
		s->st_size = 4096;
	} else {
		return -ENOENT;
	}
	return 0;
}

static int cc_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, "card", NULL, 0, 0);
	fill(buf, "stats", NULL, 0, 0);
	return 0;
}

static int cc_open(const char *path, struct fuse_file_info *fi)
{
	if (strcmp(path, "/card") && strcmp(path, "/stats"))
		return -ENOENT;
	fi->direct_io = 1; /* every read and write reaches us */
	return 0;
}

static int stats_text(char *buf, size_t len)
{
	int n;

	pthread_mutex_lock(&stat_lock);
	n = snprintf(buf, len,
		     "reads %" PRIu64 "\nbytes_read %" PRIu64
		     "\nwrites %" PRIu64 "\nbytes_written %" PRIu64
		     "\nflushes %" PRIu64 "\nbusy_ns %" PRIu64 "\n",
		     st.reads, st.bytes_read, st.writes, st.bytes_written,
		     st.flushes, st.busy_ns);
	pthread_mutex_unlock(&stat_lock);
	return n;
}

static int cc_read(const char *path, char *buf, size_t len, off_t off,
		   struct fuse_file_info *fi)
{
	uint64_t start;
	ssize_t n;

	(void)fi;
	if (!strcmp(path, "/stats")) {
		char text[512];
		int tl = stats_text(text, sizeof(text));

		if (off >= tl)
			return 0;
		if (len > (size_t)(tl - off))
			len = (size_t)(tl - off);
		memcpy(buf, text + off, len);
		return (int)len;
	}
	sem_wait(&slots);
	start = now_ns();
	n = pread(img_fd, buf, len, off);
	if (n > 0) {
		charge(start, transfer_ns((size_t)n));
		pthread_mutex_lock(&stat_lock);
		st.reads++;
		st.bytes_read += (uint64_t)n;
		st.busy_ns += transfer_ns((size_t)n);
		pthread_mutex_unlock(&stat_lock);
	}
	sem_post(&slots);
	return n < 0 ? -errno : (int)n;
}

static int cc_write(const char *path, const char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	uint64_t start;
	ssize_t n;

	(void)fi;
	if (strcmp(path, "/card"))
		return -EACCES;
	sem_wait(&slots);
	start = now_ns();
	n = pwrite(img_fd, buf, len, off);
	if (n > 0) {
		charge(start, transfer_ns((size_t)n));
		pthread_mutex_lock(&stat_lock);
		st.writes++;
		st.bytes_written += (uint64_t)n;
		st.busy_ns += transfer_ns((size_t)n);
		pthread_mutex_unlock(&stat_lock);
	}
	sem_post(&slots);
	return n < 0 ? -errno : (int)n;
}

/* A card commits its write cache: the flush time, nothing else. */
static int cc_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	(void)fi;
	sem_wait(&slots);
	charge(now_ns(), flush_ns);
	pthread_mutex_lock(&stat_lock);
	st.flushes++;
	st.busy_ns += flush_ns;
	pthread_mutex_unlock(&stat_lock);
	sem_post(&slots);
	return 0;
}

static void cc_destroy(void *data)
{
	char text[512];

	(void)data;
	stats_text(text, sizeof(text));
	fputs(text, stderr);
}

static const struct fuse_operations ops = {
	.getattr = cc_getattr,
	.readdir = cc_readdir,
	.open = cc_open,
	.read = cc_read,
	.write = cc_write,
	.fsync = cc_fsync,
	.destroy = cc_destroy,
};

static uint64_t number(const char *opt, const char *s)
{
	char *end;
	unsigned long long v = strtoull(s ? s : "", &end, 10);

	if (!s || !*s || *end) {
		fprintf(stderr, "coldcard: %s wants a number\n", opt);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	char **fargv = calloc((size_t)argc + 2, sizeof(*fargv));
	unsigned qd = 1;
	int fargc = 0, i;
	struct stat s;

	if (argc < 3 || !fargv) {
		fprintf(stderr, "usage: coldcard IMAGE MOUNTPOINT "
				"[--latency-us N] [--mbps N] [--flush-us N] "
				"[--qd N] [FUSE OPTIONS]\n");
		return 2;
	}
	img_fd = open(argv[1], O_RDWR);
	if (img_fd < 0 || fstat(img_fd, &s)) {
		perror(argv[1]);
		return 1;
	}
	img_len = (uint64_t)s.st_size;
	fargv[fargc++] = argv[0];
	fargv[fargc++] = argv[2];
	for (i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--latency-us"))
			latency_ns = number(argv[i], argv[i + 1]) * 1000, i++;
		else if (!strcmp(argv[i], "--mbps"))
			bytes_per_s = number(argv[i], argv[i + 1]) * 1000000,
			i++;
		else if (!strcmp(argv[i], "--flush-us"))
			flush_ns = number(argv[i], argv[i + 1]) * 1000, i++;
		else if (!strcmp(argv[i], "--qd"))
			qd = (unsigned)number(argv[i], argv[i + 1]), i++;
		else
			fargv[fargc++] = argv[i];
	}
	if (!bytes_per_s || !qd) {
		fprintf(stderr, "coldcard: --mbps and --qd must be positive\n");
		return 2;
	}
	sem_init(&slots, 0, qd);
	return fuse_main(fargc, fargv, &ops, NULL);
}
