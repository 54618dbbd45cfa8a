/*
 * image.h: what the fuzz targets share.  An input is the start of a
 * whole image; it is written to a memfd that is then truncated up, as a
 * sparse hole, to the size its boot sector claims, so a few KiB reach any
 * geometry up to 2 TiB.  The device layer opens it by path.
 */
#ifndef FATKIT_FUZZ_IMAGE_H
#define FATKIT_FUZZ_IMAGE_H

#include <stddef.h>
#include <stdint.h>

struct fk_check;
struct fk_check_opts;
struct fk_volume;

/* Padded images never exceed this: FAT's 2 TiB, plus a little. */
#define FUZZ_IMAGE_MAX ((2ull << 40) + (1ull << 20))

/*
 * The checker reads every FAT entry, by design: about 9 s for FAT32's
 * 2^28 clusters in a plain build, ten times that under the sanitizers.
 * Targets that check skip (fuzz_check, fuzz_repair) or do not judge
 * (fuzz_prealloc) volumes with more clusters than this, so that the
 * fuzzer spends its time on inputs rather than on one large FAT; 1 Mi
 * clusters still put data past 4 GiB with clusters of 4 KiB and more.
 */
#define FUZZ_CHECK_MAX_CLUS (1u << 20)

/*
 * Make the image for @data (@len bytes): on return the path names it
 * (borrowed until the next call).  Aborts if the host refuses memfds:
 * that is the harness's failure, not the input's.
 */
const char *fuzz_image(const uint8_t *data, size_t len);

/*
 * Open the image for reading or writing (0 or a negative errno, as
 * fk_volume_open(); the caller closes it).  No partition probing: the
 * volume starts at offset 0.
 */
int fuzz_open(int is_writer, struct fk_volume **out);
/* As fatcheck opens it: fk_check_open(). */
int fuzz_open_check(int is_writer, struct fk_volume **out);

/*
 * Check @vol with @opts (NULL: defaults).  Returns the check, or NULL
 * when the volume was too hostile to check (a refusal, not a bug).
 */
struct fk_check *fuzz_check(struct fk_volume *vol,
			    const struct fk_check_opts *opts);

/* Print the findings of @ck on stderr (for the report of a violation). */
void fuzz_print_findings(const char *what, const struct fk_check *ck);

#endif
