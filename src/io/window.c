/*
 * window.c: where in IMAGE the FAT volume lies.  IMAGE@@OFFSET and -P N
 * are taken as given, else a volume at offset 0 or the one FAT partition
 * libblkid finds.  When there is no FAT volume there, it says what is
 * there instead (another filesystem, a partition table), in words a user
 * can act on.  Whether a boot sector is a volume is the families'
 * verdict (their probes, which the opening hands in): this file knows no
 * file system.
 */
#include "io/window.h"

#include <blkid.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/device.h"
#include "lib/diag.h"

#ifdef FK_BLKID_DLOPEN
#include <dlfcn.h>

/*
 * libblkid is opened on first use instead of linked: a volume at offset 0,
 * most runs, never asks it anything, and loading and relocating it was
 * about a third of what a check of an empty card costs above /bin/true
 * (bench/RESULTS.md).  The static programs link it in (the Makefile
 * builds their window.o without FK_BLKID_DLOPEN).  The table below is
 * filled once per process, the one state here that is not per call.
 */
#define BLKID_FNS(X)                                                           \
	X(blkid_new_probe)                                                     \
	X(blkid_free_probe)                                                    \
	X(blkid_probe_set_device)                                              \
	X(blkid_probe_enable_superblocks)                                      \
	X(blkid_probe_set_superblocks_flags)                                   \
	X(blkid_probe_filter_superblocks_type)                                 \
	X(blkid_do_safeprobe)                                                  \
	X(blkid_probe_lookup_value)                                            \
	X(blkid_probe_enable_partitions)                                       \
	X(blkid_do_fullprobe)                                                  \
	X(blkid_probe_get_partitions)                                          \
	X(blkid_partlist_numof_partitions)                                     \
	X(blkid_partlist_get_table)                                            \
	X(blkid_parttable_get_type)                                            \
	X(blkid_partlist_get_partition)                                        \
	X(blkid_partition_get_partno)                                          \
	X(blkid_partition_get_start)                                           \
	X(blkid_partition_get_size)

static struct {
	int state; /* 0: not tried; 1: loaded; -1: cannot be */
#define X(f) __typeof__(f) *f;
	BLKID_FNS(X)
#undef X
} bk;

/* Open libblkid and find its functions: 0, or -ELIBACC when it cannot. */
static int load_blkid(void)
{
	void *h;

	if (bk.state)
		return bk.state > 0 ? 0 : -ELIBACC;
	bk.state = -1;
	if (!(h = dlopen("libblkid.so.1", RTLD_NOW | RTLD_LOCAL)))
		return -ELIBACC;
#define X(f)                                                                   \
	if (!(bk.f = (__typeof__(bk.f))dlsym(h, #f)))                          \
		return -ELIBACC;
	BLKID_FNS(X)
#undef X
	bk.state = 1;
	return 0;
}

#define blkid_new_probe		       (*bk.blkid_new_probe)
#define blkid_free_probe	       (*bk.blkid_free_probe)
#define blkid_probe_set_device	       (*bk.blkid_probe_set_device)
#define blkid_probe_enable_superblocks (*bk.blkid_probe_enable_superblocks)
#define blkid_probe_set_superblocks_flags                                      \
	(*bk.blkid_probe_set_superblocks_flags)
#define blkid_probe_filter_superblocks_type                                    \
	(*bk.blkid_probe_filter_superblocks_type)
#define blkid_do_safeprobe		(*bk.blkid_do_safeprobe)
#define blkid_probe_lookup_value	(*bk.blkid_probe_lookup_value)
#define blkid_probe_enable_partitions	(*bk.blkid_probe_enable_partitions)
#define blkid_do_fullprobe		(*bk.blkid_do_fullprobe)
#define blkid_probe_get_partitions	(*bk.blkid_probe_get_partitions)
#define blkid_partlist_numof_partitions (*bk.blkid_partlist_numof_partitions)
#define blkid_partlist_get_table	(*bk.blkid_partlist_get_table)
#define blkid_parttable_get_type	(*bk.blkid_parttable_get_type)
#define blkid_partlist_get_partition	(*bk.blkid_partlist_get_partition)
#define blkid_partition_get_partno	(*bk.blkid_partition_get_partno)
#define blkid_partition_get_start	(*bk.blkid_partition_get_start)
#define blkid_partition_get_size	(*bk.blkid_partition_get_size)
#else
static int load_blkid(void)
{
	return 0;
}
#endif

int fk_window_read_head(struct fk_device *dev, uint64_t off, unsigned char *buf,
			size_t *len)
{
	int err = fk_device_read(dev, off, buf, *len);

	if (err && *len > 512 && !fk_device_read(dev, off, buf, 512)) {
		*len = 512;
		return 0;
	}
	return err;
}

/*
 * Does a volume this program reads start at @off?  @fs->is_boot (the
 * families' probes, which the opening passes) decides, so the boot
 * sector's rules live with each family alone.  What is read is left in
 * @fs->head for the opening, which reads the volume's start only once.
 * The window reads the whole image until it is chosen, so window offsets
 * here are image offsets.
 */
static int boot_parses(struct fk_device *dev, uint64_t off, uint64_t img_len,
		       struct fk_window_fs *fs)
{
	unsigned char bs[512], *head = fs->head ? fs->head : bs;
	size_t len = fs->head ? fs->head_len : sizeof(bs);

	fs->head_got = 0;
	if (off >= img_len || img_len - off < sizeof(bs))
		return 0;
	if (img_len - off < len)
		len = (size_t)(img_len - off);
	if (fk_window_read_head(dev, off, head, &len))
		return 0;
	if (fs->head) {
		fs->head_got = len;
		fs->head_off = off;
	}
	return fs->is_boot(head, img_len - off);
}

/*
 * What libblkid finds in [@off, @off + @len): @type gets the name
 * @fs->is_type() gives a file system this program reads, libblkid's
 * ("ext4"...) for another, or "" when it finds nothing.  Returns 1 for
 * one this program reads.
 */
static int probe_fs(int fd, uint64_t off, uint64_t len,
		    const struct fk_window_fs *fs, char *type, size_t type_len)
{
	/* libblkid 2.38's OCFS (version 1) prober copies a mount name of the
	 * length the disk gives out of a 128-byte buffer on its stack: a
	 * hostile image reads past the stack (found by fuzz_prealloc). */
	static char ocfs[] = "ocfs";
	char *skip[] = {ocfs, NULL};
	blkid_probe pr;
	const char *t = NULL, *ver = NULL;
	int is_ours = 0;

	type[0] = '\0';
	if (load_blkid() || !(pr = blkid_new_probe()))
		return 0; /* nothing known to be there */
	if (!blkid_probe_set_device(pr, fd, (blkid_loff_t)off,
				    (blkid_loff_t)len)) {
		blkid_probe_enable_superblocks(pr, 1);
		blkid_probe_set_superblocks_flags(
			pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_VERSION);
		blkid_probe_filter_superblocks_type(pr, BLKID_FLTR_NOTIN, skip);
		if (!blkid_do_safeprobe(pr) &&
		    !blkid_probe_lookup_value(pr, "TYPE", &t, NULL)) {
			if (blkid_probe_lookup_value(pr, "VERSION", &ver, NULL))
				ver = NULL;
			is_ours = fs->is_type &&
				  fs->is_type(t, ver, type, type_len);
			if (!is_ours)
				snprintf(type, type_len, "%s", t);
		}
	}
	blkid_free_probe(pr);
	return is_ours;
}

/* "4 MiB", "512 KiB" or "1000000 bytes": offsets as people read them. */
static void offset_text(uint64_t off, char *out, size_t len)
{
	if (off && !(off % (1u << 20)))
		snprintf(out, len, "%llu MiB", (unsigned long long)(off >> 20));
	else if (off && !(off % 1024))
		snprintf(out, len, "%llu KiB", (unsigned long long)(off >> 10));
	else
		snprintf(out, len, "%llu bytes", (unsigned long long)off);
}

struct part {
	int partno;
	uint64_t off, len;
	int is_fat;
	char type[32]; /* what libblkid finds in it; "" for nothing */
};

/*
 * Read the partition table; *@parts is the caller's, *@table says which
 * kind with its article ("an MBR", "a GPT").  Returns the count.
 */
static int list_partitions(int fd, uint64_t img_len,
			   const struct fk_window_fs *fs, struct part **parts,
			   const char **table)
{
	blkid_probe pr;
	blkid_partlist ls;
	int n = 0, i;

	*parts = NULL;
	if ((n = load_blkid()))
		return n;
	if (!(pr = blkid_new_probe()))
		return -ENOMEM;
	if (blkid_probe_set_device(pr, fd, 0, (blkid_loff_t)img_len))
		goto out;
	blkid_probe_enable_superblocks(pr, 0);
	blkid_probe_enable_partitions(pr, 1);
	if (blkid_do_fullprobe(pr) || !(ls = blkid_probe_get_partitions(pr)))
		goto out;
	n = blkid_partlist_numof_partitions(ls);
	*table = "a";
	if (blkid_partlist_get_table(ls)) {
		const char *t =
			blkid_parttable_get_type(blkid_partlist_get_table(ls));

		*table = t && !strcmp(t, "dos")	  ? "an MBR"
			 : t && !strcmp(t, "gpt") ? "a GPT"
						  : "a";
	}
	if (n <= 0 || !(*parts = calloc((size_t)n, sizeof(**parts)))) {
		n = n > 0 ? -ENOMEM : 0;
		goto out;
	}
	for (i = 0; i < n; i++) {
		blkid_partition p = blkid_partlist_get_partition(ls, i);
		struct part *q = &(*parts)[i];

		q->partno = blkid_partition_get_partno(p);
		q->off = (uint64_t)blkid_partition_get_start(p) * 512;
		q->len = (uint64_t)blkid_partition_get_size(p) * 512;
		/* Probe only what the image holds: a partition cut short
		 * is still found, and the volume then says it is truncated. */
		if (q->off < img_len)
			q->is_fat = probe_fs(fd, q->off,
					     q->len < img_len - q->off
						     ? q->len
						     : img_len - q->off,
					     fs, q->type, sizeof(q->type));
	}
out:
	blkid_free_probe(pr);
	return n;
}

/* "1 (FAT32) at 4 MiB, 2 (ext4) at 68 MiB" */
static void describe_partitions(const struct part *parts, int n, char *buf,
				size_t len)
{
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < n && off < len; i++) {
		char at[32];

		offset_text(parts[i].off, at, sizeof(at));
		off += (size_t)snprintf(
			buf + off, len - off, "%s%d (%s) at %s", i ? ", " : "",
			parts[i].partno,
			parts[i].type[0] ? parts[i].type : "no filesystem", at);
	}
}

/*
 * @off (IMAGE@@OFFSET) holds no FAT boot sector: say what is there
 * instead, from libblkid, and where the partitions start.  Returns
 * -EINVAL with @diag set, or 0 to leave the verdict to the family (nothing
 * known there: a damaged FAT volume gets its own reasons).
 */
static int explain_offset(struct fk_device *dev, uint64_t off, uint64_t img_len,
			  struct fk_window_fs *fs, struct fk_diag *diag)
{
	char type[32], at[32], list[512], subject[1024];
	const char *table = "a";
	struct part *parts = NULL;
	int n, i, nfat = 0, pick = 0;

	if (off >= img_len || boot_parses(dev, off, img_len, fs))
		return 0;
	offset_text(off, at, sizeof(at));
	/* IMAGE@@OFFSET as it was probably typed: 1M, 512K or bytes */
	snprintf(subject, sizeof(subject), "%s@@%llu%s", fk_device_path(dev),
		 (unsigned long long)(off && !(off % (1u << 20)) ? off >> 20
				      : off && !(off % 1024)	 ? off >> 10
								 : off),
		 off && !(off % (1u << 20)) ? "M"
		 : off && !(off % 1024)	    ? "K"
					    : "");
	if (probe_fs(fk_device_fd(dev), off, img_len - off, fs, type,
		     sizeof(type)))
		return 0; /* damaged, perhaps: the family says how */
	if (type[0]) {
		fk_diag_set(diag, subject,
			    "offset %s holds %s, not a FAT volume", at, type);
		return -EINVAL;
	}
	if ((n = list_partitions(fk_device_fd(dev), img_len, fs, &parts,
				 &table)) <= 0)
		return n;
	describe_partitions(parts, n, list, sizeof(list));
	for (i = 0; i < n; i++)
		if (parts[i].is_fat && !nfat++)
			pick = parts[i].partno;
	if (!off)
		fk_diag_set(diag, subject,
			    "%s partition table, not a FAT volume, is at "
			    "offset 0: %s; %s%.0d",
			    table, list,
			    nfat == 1 ? "use -P "
				      : "choose a partition with -P",
			    nfat == 1 ? pick : 0);
	else
		fk_diag_set(diag, subject,
			    "no FAT volume at offset %s (%s partition table "
			    "holds %s)",
			    at, table, list);
	free(parts);
	return -EINVAL;
}

/* Partition @p was chosen: refuse it if libblkid knows it is no FAT. */
static int explain_partition(const struct part *p, struct fk_diag *diag)
{
	if (!p->type[0] || p->is_fat)
		return 0;
	fk_diag_set(diag, NULL, "partition %d holds %s, not a FAT volume",
		    p->partno, p->type);
	return -EINVAL;
}

/*
 * A volume at offset 0 wins even when libblkid also sees a partition
 * table in its boot sector; a damaged one that libblkid still calls FAT
 * wins too, so that its family says what is wrong with it.
 */
static int fat_at_start(struct fk_device *dev, uint64_t img_len,
			struct fk_window_fs *fs)
{
	char type[32];

	if (boot_parses(dev, 0, img_len, fs))
		return 1;
	return probe_fs(fk_device_fd(dev), 0, img_len, fs, type, sizeof(type));
}

int fk_window_choose(struct fk_device *dev, const struct fk_device_opts *opts,
		     struct fk_window_fs *fs, struct fk_diag *diag)
{
	uint64_t img_len = fk_device_image_len(dev), base = 0;
	struct part *parts, *pick = NULL;
	int n, i, nfat = 0, err = 0;
	const char *table = "a";
	char list[512], type[32];

	if (opts->has_off) {
		base = opts->off;
		if ((err = explain_offset(dev, opts->off, img_len, fs, diag)))
			return err;
		goto bounds;
	}
	if (!opts->partition && img_len && fat_at_start(dev, img_len, fs))
		goto bounds;
	if ((n = list_partitions(fk_device_fd(dev), img_len, fs, &parts,
				 &table)) < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (opts->partition && parts[i].partno == opts->partition)
			pick = &parts[i];
		if (!opts->partition && parts[i].is_fat && !nfat++)
			pick = &parts[i];
	}
	describe_partitions(parts, n, list, sizeof(list));
	if (opts->partition && !pick) {
		fk_diag_set(diag, NULL, "no partition %d (%s%s)",
			    opts->partition, n ? "partitions: " : "",
			    n ? list : "no partition table");
		err = -ENXIO;
	} else if (!opts->partition && n && nfat != 1) {
		fk_diag_set(diag, NULL, "%s partition table with %s: %s", table,
			    nfat ? "more than one FAT partition; choose one "
				   "with -P"
				 : "no FAT partition",
			    list);
		err = -ENXIO;
	} else if (pick && !(err = explain_partition(pick, diag))) {
		base = pick->off;
		if (pick->len && pick->off + pick->len <= img_len)
			img_len = pick->off + pick->len;
	}
	free(parts);
	if (err)
		return err;
	if (!n && img_len) {
		/* No table and no FAT at 0: name what is there, if known. */
		if (!probe_fs(fk_device_fd(dev), 0, img_len, fs, type,
			      sizeof(type)) &&
		    type[0]) {
			fk_diag_set(diag, NULL, "holds %s, not a FAT volume",
				    type);
			return -EINVAL;
		}
	}
bounds:
	/* An empty image gets an empty window: the opening then says it holds
	 * no boot sector, which is the useful news. */
	if (base > img_len || (base == img_len && img_len)) {
		fk_diag_set(diag, NULL,
			    "volume offset %llu is past the end "
			    "of the image (%llu bytes)",
			    (unsigned long long)base,
			    (unsigned long long)img_len);
		return FK_ECORRUPT;
	}
	return fk_device_set_window(dev, base, img_len - base);
}
