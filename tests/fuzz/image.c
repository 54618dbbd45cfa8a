/*
 * image.c: the memfd every target reads its image from, and the
 * open and check steps they share.
 */
#define _GNU_SOURCE /* memfd_create */
#include "image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/check.h"
#include "lib/diag.h"
#include "mount/mount.h"
#include "volume/volume.h"

static int image_fd = -1;
static char image_path[64];

static uint32_t le16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t le32(const uint8_t *p)
{
	return le16(p) | le16(p + 2) << 16;
}

/*
 * Bytes the boot sector claims (BPB total sectors times sector size; on
 * exFAT, VolumeLength shifted by BytesPerSectorShift).
 */
static uint64_t claimed_len(const uint8_t *data, size_t len)
{
	uint64_t secs;

	if (len >= 109 && !memcmp(data + 3, "EXFAT   ", 8)) {
		secs = le32(data + 72) | (uint64_t)le32(data + 76) << 32;
		if (data[108] > 12 || secs > FUZZ_IMAGE_MAX)
			return FUZZ_IMAGE_MAX;
		return secs << data[108];
	}
	if (len < 36)
		return 0;
	secs = le16(data + 19);
	if (!secs)
		secs = le32(data + 32);
	return secs * le16(data + 11);
}

const char *fuzz_image(const uint8_t *data, size_t len)
{
	uint64_t want = claimed_len(data, len);

	if (image_fd < 0) {
		image_fd = memfd_create("fatkit-fuzz", MFD_CLOEXEC);
		if (image_fd < 0) {
			perror("fuzz: memfd_create");
			abort();
		}
		snprintf(image_path, sizeof(image_path), "/proc/self/fd/%d",
			 image_fd);
	}
	if (want > FUZZ_IMAGE_MAX)
		want = FUZZ_IMAGE_MAX;
	if (want < len)
		want = len;
	/* Truncating to 0 first drops the last input's pages. */
	if (ftruncate(image_fd, 0) ||
	    (len && pwrite(image_fd, data, len, 0) != (ssize_t)len) ||
	    ftruncate(image_fd, (off_t)want)) {
		perror("fuzz: image");
		abort();
	}
	return image_path;
}

static void fuzz_opts(int is_writer, struct fk_volume_opts *vo)
{
	memset(vo, 0, sizeof(*vo));
	vo->dev.path = image_path;
	vo->dev.has_off = 1; /* offset 0: fuzz FAT, not libblkid */
	vo->dev.is_writer = is_writer;
	vo->dev.force = 1; /* a memfd backs no loop device: skip /sys */
	vo->batch_len = is_writer ? 4u << 20 : 0;
}

int fuzz_open(int is_writer, struct fk_volume **out)
{
	struct fk_volume_opts vo;

	fuzz_opts(is_writer, &vo);
	/* As fatls: a reader lists a truncated dump as far as it goes. */
	vo.is_cut_ok = !is_writer;
	return fk_volume_open(&vo, out, NULL);
}

int fuzz_open_check(int is_writer, struct fk_volume **out)
{
	struct fk_volume_opts vo;

	fuzz_opts(is_writer, &vo);
	return fk_check_open(&vo, out, NULL);
}

struct fk_check *fuzz_check(struct fk_volume *vol,
			    const struct fk_check_opts *opts)
{
	struct fk_check_opts def;
	struct fk_check *ck;

	if (!opts) {
		memset(&def, 0, sizeof(def));
		opts = &def;
	}
	if (fk_check_new(vol, opts, &ck))
		return NULL;
	if (fk_check_run(ck, NULL)) {
		fk_check_free(ck);
		return NULL;
	}
	return ck;
}

void fuzz_print_findings(const char *what, const struct fk_check *ck)
{
	const struct fk_finding *f;
	size_t i, n;

	f = fk_check_findings(ck, &n);
	fprintf(stderr, "%s: %zu findings\n", what, n);
	for (i = 0; i < n; i++)
		fprintf(stderr, "  %s %s: %s: %s%s%s%s\n",
			fk_sev_name(f[i].sev), f[i].code,
			f[i].path ? f[i].path : "(volume)", f[i].msg,
			f[i].fix ? " [fix: " : "", f[i].fix ? f[i].fix : "",
			f[i].fix ? "]" : "");
}
