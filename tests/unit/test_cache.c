/*
 * test_cache.c: the FAT sector cache under read traffic larger than its
 * clean budget, on a temporary file whose every sector says which it is.
 * Sectors 8192 apart share a hash home, so evictions take entries out of
 * the middle of probe runs; every read must still return the right bytes,
 * judged against the file's own pattern (the cache is read, never the
 * model).
 */
#include "tap.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/cache.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/endian.h"

#define SEC_LEN	 512u
#define FAT_SECS 16384u /* 8 MiB: twice the hash table's span */
#define SPAN	 8192u	/* sectors this far apart collide */

static unsigned char byte_of(uint32_t sec, uint32_t i)
{
	return (unsigned char)(sec * 31 + i * 7 + (sec >> 8));
}

static int make_file(char *path, size_t len)
{
	static unsigned char sec_buf[SEC_LEN * 64];
	const char *dir = getenv("TMPDIR");
	uint32_t s, i;
	int fd, err = 0;

	snprintf(path, len, "%s/fk-cache-XXXXXX", dir && *dir ? dir : "/tmp");
	if ((fd = mkstemp(path)) < 0)
		return -errno;
	for (s = 0; s < FAT_SECS && !err; s += 64) {
		for (i = 0; i < sizeof(sec_buf); i++)
			sec_buf[i] = byte_of(s + i / SEC_LEN, i % SEC_LEN);
		if (pwrite(fd, sec_buf, sizeof(sec_buf), (off_t)s * SEC_LEN) !=
		    (ssize_t)sizeof(sec_buf))
			err = -EIO;
	}
	close(fd);
	return err;
}

static int sector_ok(const unsigned char *data, uint32_t sec)
{
	uint32_t i;

	for (i = 0; i < SEC_LEN; i++)
		if (data[i] != byte_of(sec, i))
			return 0;
	return 1;
}

/* Spans: strided reads over more spans than are kept, then a dirty
 * sector, which spans must never hide. */
static void check_spans(struct fk_cache *c)
{
	const unsigned char *data;
	unsigned char *dirty;
	uint32_t k, sec, first, nsecs, bad = 0;
	uint64_t misses;
	int err;

	for (k = 0; k < 3000; k++) {
		sec = k * 997 % FAT_SECS;
		err = fk_cache_get_span(c, sec, &data, &first, &nsecs);
		if (err || sec < first || sec - first >= nsecs ||
		    !sector_ok(data + (size_t)(sec - first) * SEC_LEN, sec) ||
		    !sector_ok(data, first))
			bad++;
	}
	OK(bad == 0 && nsecs > 1,
	   "cache: 3000 strided span reads hold their own sectors (%u wrong, "
	   "spans of %u)",
	   bad, nsecs);
	err = fk_cache_get_dirty(c, 100, &dirty);
	if (!err)
		dirty[0] ^= 0xff;
	err = err ? err : fk_cache_get_span(c, 100, &data, &first, &nsecs);
	OK(!err && first == 100 && nsecs == 1 &&
		   data[0] == (unsigned char)(byte_of(100, 0) ^ 0xff),
	   "cache: with a sector dirty, a span is that sector, as changed");
	fk_cache_discard(c);
	err = fk_cache_get_span(c, 100, &data, &first, &nsecs);
	OK(!err && nsecs > 1 &&
		   sector_ok(data + (size_t)(100 - first) * SEC_LEN, 100),
	   "cache: a discarded change leaves spans the bytes on disk");
	OK(fk_cache_get_span(c, FAT_SECS, &data, &first, &nsecs) == FK_ECORRUPT,
	   "cache: a span for the sector after the FAT is refused");
	/* Sector 5001, in no slot, in the span read for 5000. */
	err = fk_cache_get_span(c, 5000, &data, &first, &nsecs);
	misses = fk_cache_stats(c)->misses;
	err = err ? err : fk_cache_get(c, 5001, &data);
	OK(!err && sector_ok(data, 5001) && fk_cache_stats(c)->misses == misses,
	   "cache: a sector a span holds is read from it, not again");
	err = fk_cache_get_dirty(c, 100, &dirty);
	if (!err)
		dirty[0] ^= 0xff;
	err = err ? err : fk_cache_get(c, 5002, &data);
	OK(!err && sector_ok(data, 5002) && fk_cache_stats(c)->misses > misses,
	   "cache: with a sector dirty, reads go to the slots, not the spans");
	err = fk_cache_get(c, 100, &data);
	OK(!err && data[0] == (unsigned char)(byte_of(100, 0) ^ 0xff),
	   "cache: the dirty sector reads as changed");
	fk_cache_discard(c);
}

/* Patches over a two-copy layout of the same file (copy 1 is sectors
 * HALF on): sectors read through every path come from the copy the
 * patch names, the others from copy 0; clearing the patches forgets
 * what they put in the cache. */
#define HALF (FAT_SECS / 2)
static void check_patches(struct fk_device *dev)
{
	static const struct fk_cache_patch p[2] = {{100, 3, 1}, {700, 1, 1}};
	struct fk_cache_layout lay = {SEC_LEN, 0, HALF, 2, 0, 1, 0, 0};
	const unsigned char *data;
	unsigned char buf[8 * SEC_LEN];
	struct fk_cache *c = NULL;
	uint32_t first, nsecs, s, bad = 0;
	int err;

	if ((err = fk_cache_new(dev, &lay, 0, FK_CACHE_NOSYNC, &c))) {
		OK(0, "cache: patches set up (%d)", err);
		return;
	}
	err = fk_cache_get(c, 101, &data); /* cached before the patches */
	fk_cache_set_patches(c, p, 2);
	OK(fk_cache_is_patched(c), "cache: patches are set");
	for (s = 96; s < 106 && !err; s++)
		if ((err = fk_cache_get(c, s, &data)) ||
		    !sector_ok(data, s >= 100 && s < 103 ? s + HALF : s))
			bad++;
	OK(!err && !bad,
	   "cache: sectors 100-102 come from copy 1, their neighbours from "
	   "copy 0");
	err = fk_cache_get_span(c, 700, &data, &first, &nsecs);
	OK(!err && nsecs > 2 &&
		   sector_ok(data + (size_t)(700 - first) * SEC_LEN,
			     700 + HALF) &&
		   sector_ok(data + (size_t)(701 - first) * SEC_LEN, 701),
	   "cache: a span holds the patched sector from copy 1 only");
	/* From mid-sector 98 to mid-sector 105 of the copy. */
	memset(buf, 0, sizeof(buf));
	err = fk_device_read(dev, 98 * SEC_LEN + 10, buf, 7 * SEC_LEN);
	err = err ? err
		  : fk_cache_patch_read(c, 98 * SEC_LEN + 10, buf, 7 * SEC_LEN);
	OK(!err && buf[0] == byte_of(98, 10) &&
		   buf[2 * SEC_LEN - 10] == byte_of(100 + HALF, 0) &&
		   buf[5 * SEC_LEN - 11] == byte_of(102 + HALF, SEC_LEN - 1) &&
		   buf[5 * SEC_LEN - 10] == byte_of(103, 0),
	   "cache: a byte range across patch edges takes exactly the patched "
	   "sectors");
	fk_cache_set_patches(c, NULL, 0);
	err = fk_cache_get(c, 101, &data);
	OK(!err && !fk_cache_is_patched(c) && sector_ok(data, 101),
	   "cache: without patches, a sector read patched is read again");
	fk_cache_free(c);
}

void suite_cache_evict(void)
{
	struct fk_cache_layout lay = {SEC_LEN, 0, FAT_SECS, 1, 0, 1, 0, 0};
	const unsigned char *data;
	struct fk_device_opts o;
	struct fk_device *dev = NULL;
	struct fk_cache *c = NULL;
	struct fk_diag d;
	char path[4096];
	uint32_t k, bad = 0, round;
	int err;

	memset(&o, 0, sizeof(o));
	memset(&d, 0, sizeof(d));
	o.path = path;
	if ((err = make_file(path, sizeof(path))) ||
	    (err = fk_device_open(&o, &dev, &d)) ||
	    (err = fk_cache_new(dev, &lay, 0, FK_CACHE_NOSYNC, &c))) {
		OK(0, "cache: set up (%d)", err);
		goto out;
	}
	/* 2 x 3000 sectors, each pair sharing a home, read twice. */
	for (round = 0; round < 2; round++)
		for (k = 0; k < 3000; k++) {
			uint32_t sec[2] = {k, k + SPAN}, j;

			for (j = 0; j < 2; j++)
				if ((err = fk_cache_get(c, sec[j], &data)) ||
				    !sector_ok(data, sec[j]))
					bad++;
		}
	OK(bad == 0 && fk_cache_stats(c)->misses > 0,
	   "cache: 12000 reads over 6000 colliding sectors all return their "
	   "own bytes (%u wrong, %llu misses)",
	   bad, (unsigned long long)fk_cache_stats(c)->misses);
	/* Reads after heavy eviction: the most recent ones still hit. */
	{
		uint64_t misses = fk_cache_stats(c)->misses;

		err = fk_cache_get(c, 2999 + SPAN, &data);
		OK(!err && sector_ok(data, 2999 + SPAN) &&
			   fk_cache_stats(c)->misses == misses,
		   "cache: the last sector read is still cached");
	}
	OK(fk_cache_get(c, FAT_SECS, &data) == FK_ECORRUPT,
	   "cache: the sector after the FAT is refused");
	check_spans(c);
	check_patches(dev);
out:
	fk_cache_free(c);
	fk_cache_free(NULL);
	fk_device_close(dev);
	unlink(path);
}
