/*
 * family.h: one table per format family (FAT12/16/32 in src/fat/, exFAT
 * in src/exfat/), chosen once when the volume is opened (vol->fam) and
 * holding everything that differs: how a boot sector is recognised and
 * read, directory operations, the family's checker (check-family.h) and
 * preallocation steps (prealloc-int.h), --info, and what the programs
 * show and accept differently (short names, fine times, ValidDataLength,
 * the bitmap, boot-region warnings, options a family refuses).  The
 * families register in one list (mount/families.c), which only the
 * opening (mount/mount.c) walks; each fills in its table in one file
 * (fat/fat-family.c, exfat/exfat-family.c).  The engines, the programs
 * and the shared directory calls (iface/dirent.h) call through it and
 * never ask which family they hold: a capability is a field or an op
 * here, not a test of the family.  tests/helpers/layers.py keeps it so.
 */
#ifndef FATKIT_FAMILY_H
#define FATKIT_FAMILY_H

#include <stddef.h>
#include <stdint.h>

struct fk_chain_info;
struct fk_check_family;
struct fk_diag;
struct fk_dirent;
struct fk_prealloc_family;
struct fk_run;
struct fk_volume;
struct fk_volume_opts;

/* One field of `fatls --info`: a number, or a string when !is_num. */
struct fk_info_item {
	const char *key;
	int is_num;
	uint64_t num;
	char str[64];
};

#define FK_INFO_MAX 32 /* fields a family's info() gives at most */

struct fk_family {
	const char *name; /* "FAT" or "exFAT" */

	/* ---- opening: fk_volume_open() asks each registered family ---- */
	/*
	 * Does a volume of this family start with @bs (its first 512
	 * bytes), @vol_len bytes long (UINT64_MAX: judge it as if whole)?
	 * Pure; the window asks it of each place a volume may start.
	 */
	int (*probe)(const unsigned char *bs, uint64_t vol_len);
	/*
	 * Is the file system libblkid calls @type (with its VERSION @ver, or
	 * NULL) this family's?  Then 1, with the name a list of partitions
	 * shows for it in @name (@len bytes); else 0.
	 */
	int (*is_blkid_type)(const char *type, const char *ver, char *name,
			     size_t len);
	/*
	 * Bytes at the volume's start that read_boot() reads for @opts when
	 * sectors are 512 bytes: the opening reads as many (the most any
	 * family wants) in one request, which the probes are asked of too.
	 */
	size_t (*head_len)(const struct fk_volume_opts *opts);
	/*
	 * Read and judge the boot region (@head: the first @head_len bytes
	 * of the volume, at least 512; what more it needs it reads), fill
	 * vol->g, vol->boot and the family's own facts; reads only.
	 * Returns 0, or FK_ECORRUPT with one reason in @diag, or -errno.
	 */
	int (*read_boot)(struct fk_volume *vol, const unsigned char *head,
			 size_t head_len, const struct fk_volume_opts *opts,
			 struct fk_diag *diag);
	/* Once the FAT cache exists (may be NULL): load what the family
	   keeps from the volume's own structures.  0 or -errno. */
	int (*mount)(struct fk_volume *vol, struct fk_diag *diag);
	/* Free what read_boot() and mount() kept, after either failed too
	   (may be NULL). */
	void (*unmount)(struct fk_volume *vol);
	/* read_boot() can take the geometry from a backup boot region
	   (fk_volume_opts.is_backup_boot). */
	int can_open_backup;
	/* The FAT is read and written little (exFAT: only fragmented files
	   have a chain): its cache keeps ordinary pages, and a writer's
	   fk_volume_opts.fat_read_len applies. */
	int is_fat_rarely_written;

	/* ---- directories ---- */
	/*
	 * Open the directory @dent describes for reading (its first cluster
	 * and, on exFAT, its length and NoFatChain flag); *@impl is the
	 * family's iterator.  Returns 0 or -ENOMEM.
	 */
	int (*dir_open)(struct fk_volume *vol, const struct fk_dirent *dent,
			void **impl);
	/* As fk_dir_next(). */
	int (*dir_next)(void *impl, struct fk_dirent *ent,
			struct fk_diag *diag);
	void (*dir_close)(void *impl);
	/* As fk_dirent_walk(). */
	int (*walk)(struct fk_volume *vol, const struct fk_dirent *ent,
		    int (*fn)(void *arg, const struct fk_run *run), void *arg,
		    struct fk_chain_info *info);
	/* Is @ent a directory's "." or ".." (may be NULL: the family's
	   directories hold no such entries)? */
	int (*is_dot)(const struct fk_dirent *ent);
	/* Does lookup component @name name @ent (case-insensitively)? */
	int (*match)(const struct fk_volume *vol, const char *name,
		     const struct fk_dirent *ent);
	/*
	 * The volume as `fatls --info` shows it: the boot sector's fields
	 * and what the allocation map says, at most FK_INFO_MAX items into
	 * @it.  Returns their number, or -errno with @diag.
	 */
	int (*info)(struct fk_volume *vol, struct fk_info_item *it,
		    struct fk_diag *diag);
	/*
	 * A boot region that is damaged but read on (may be NULL: a family
	 * that opens no such volume): when @vol has one, a phrase saying
	 * what is wrong into @out (@len bytes) and 1; else 0.
	 */
	int (*boot_warning)(const struct fk_volume *vol, char *out, size_t len);

	/* ---- the engines: each family's own steps ---- */
	const struct fk_check_family *check;	   /* fk_check_*() (check.c) */
	const struct fk_prealloc_family *prealloc; /* fk_prealloc() */

	/* ---- what the programs show and accept differently ---- */
	int has_short_names;	 /* 8.3 names beside long ones (fatls -s) */
	int has_fine_times;	 /* times in 10 ms units with a UTC offset */
	int has_valid_len;	 /* files have ValidDataLength and NoFatChain */
	int has_bitmap;		 /* an allocation bitmap fatprealloc writes */
	const char *no_salvage;	 /* why fatcheck --salvage is refused;
				    NULL: it works */
	const char *no_fat_copy; /* why fatcheck --fat-copy is refused;
				    NULL: it works */
};

#endif
