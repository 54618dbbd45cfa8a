/*
 * prealloc.h: the fatprealloc operation.  Every request is resolved and
 * every cluster planned in memory first; the first write comes only after
 * all of them passed, so a refusal leaves the image byte-for-byte as it
 * was.  Commit follows the write order fatprealloc(1) documents: new
 * chains on every FAT copy, then links, then directory entries, FSInfo
 * last.
 */
#ifndef FATKIT_PREALLOC_H
#define FATKIT_PREALLOC_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "table/alloc.h"

struct fk_diag;
struct fk_volume;

#define FK_FILE_MAX 0xffffffffull /* FAT's limit: 4 GiB - 1 byte */

/*
 * Bytes zeroed between progress calls and checks for a stop request: a
 * card that zeroes at 10 MB/s (BLKZEROOUT writes the zeros) takes 0.8 s
 * for one, so a signal is heard within a second; 128 calls a GiB cost
 * nothing measurable where zeroing is a hole punched in a file.
 */
#define FK_ZERO_CHUNK (8ull << 20)

struct fk_prealloc_req {
	const char *path; /* absolute path in the volume */
	uint64_t len;	  /* bytes to reserve */
};

enum fk_sync_mode {
	FK_SYNC_NEVER, /* --no-sync */
	FK_SYNC_END,   /* default: one fsync before returning */
	FK_SYNC_BATCH, /* --sync: fsync at each ordering point the run has
			  and after each flush the --batch budget forces */
};

struct fk_prealloc_opts {
	int keep_size;	 /* -n: chain only, size and data untouched */
	int no_zero;	 /* --no-zero */
	int lazy;	 /* --lazy (exFAT): raise DataLength only, keep
			    ValidDataLength, write no data */
	int parents;	 /* -p */
	int contiguous;	 /* -c */
	int per_cluster; /* --per-cluster: the pre-7.4 algorithm */
	int dry_run;
	int verbose; /* -v: messages also give clusters */
	/* --align: a new chain starts at a device byte offset that is a
	 * multiple of it (a power of two); 0: anywhere */
	uint64_t align_len;
	int force;	  /* --force: also write an exFAT volume whose
		      VolumeDirty is set */
	size_t batch_len; /* dirty bitmap bytes held before a flush
			     (exFAT; the FAT cache has its own) */
	enum fk_sync_mode sync;
	int64_t now;	   /* timestamp for new and changed entries */
	const char *image; /* IMAGE as the user named it, for messages;
			      NULL: the device path */
	int now_is_utc;	   /* @now came from SOURCE_DATE_EPOCH */
	/* Called after each chunk of zeroing (may be NULL): bytes done of
	 * total; at most FK_ZERO_CHUNK bytes apart. */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
	/* Nonzero once a signal asks the run to stop (may be NULL); set by
	 * the program's handler, only read here. */
	const volatile sig_atomic_t *stop;
};

enum fk_file_action {
	FK_FILE_UNCHANGED, /* already large enough */
	FK_FILE_CREATED,
	FK_FILE_GROWN,
};

/* What happened to one request. */
struct fk_prealloc_file {
	const char *path; /* borrowed from the request */
	enum fk_file_action action;
	uint64_t old_size, size; /* bytes, as the entry says */
	uint64_t valid_len;	 /* exFAT: ValidDataLength; FAT: size */
	uint32_t first_clus;
	uint32_t new_clus;    /* clusters added */
	struct fk_plan chain; /* the whole chain after the run */
};

struct fk_prealloc_result {
	struct fk_prealloc_file *files; /* one per request, in order */
	size_t nfiles;
	uint32_t new_clus;     /* clusters allocated, directories included */
	uint32_t new_frags;    /* runs of new file clusters */
	char **dirs;	       /* paths of the directories -p creates, in
				  the order they are created */
	uint32_t dirs_created; /* entries in @dirs */
	uint64_t zeroed;       /* bytes made to read as zeros */
	uint64_t bitmap_secs;  /* exFAT allocation bitmap sectors written */
};

/*
 * Carry out @n requests on @vol (opened for writing unless dry_run).
 * Returns 0, or -errno with @diag naming the path: -ENOENT (missing parent
 * without -p), -ENOTDIR, -EISDIR, -EFBIG, -EINVAL (bad name), -ENOSPC
 * (need and free in @diag), FK_ECORRUPT (damage, on exFAT also an
 * up-case table that does not fold a-z, a bitmap DataLength other than
 * the cluster count needs, or a cluster in use that the bitmap marks
 * free), -EOPNOTSUPP (an option or layout the exFAT side
 * cannot express or write: -n, a fragmented bitmap, TexFAT with its
 * second FAT active).  Every refusal comes before the first write.  On
 * exFAT, exfat-prealloc.c writes in exFAT's order (VolumeDirty, FAT chains
 * of fragmented files, bitmap, zeros, entry sets, then PercentInUse and
 * VolumeDirty cleared in one write).  @res is filled either way; free it with
 * fk_prealloc_result_free().
 *
 * -EINTR: *@opts->stop was set.  The run stops at the next safe point:
 * between chains, between zeroing chunks of at most FK_ZERO_CHUNK bytes,
 * and with per_cluster between two clusters.  Before the commit point
 * (the first link or directory-entry write) every cluster the run took is
 * freed again in every FAT copy, so the FAT, the directories and FSInfo
 * are as they were (only data may differ: clusters that were free and
 * still are, and the slack of a grown file's last cluster past its size,
 * which zeroing reached); @diag says `interrupted; nothing was changed`.
 * From the commit point on, the few metadata writes left are finished and
 * @diag says the run was completed.  A per_cluster run stopped after its
 * first cluster keeps the clusters taken: the file being served ends
 * where its chain does, later files keep their sizes (new ones are
 * created empty), the rest of the plan stays free (FSInfo, the exFAT
 * bitmap and PercentInUse say so), and @diag says `interrupted; PATH got
 * N of its M new clusters[, K more files none]; run again to finish`.
 * In every case @diag names IMAGE.
 */
int fk_prealloc(struct fk_volume *vol, const struct fk_prealloc_req *reqs,
		size_t n, const struct fk_prealloc_opts *opts,
		struct fk_prealloc_result *res, struct fk_diag *diag);
void fk_prealloc_result_free(struct fk_prealloc_result *res);

#endif
