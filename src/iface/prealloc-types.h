/*
 * prealloc-types.h: what a preallocation is asked (requests, options) and
 * what it answers (the result), shared by the engine's fk_prealloc()
 * (engine/prealloc.h), the families' steps (prealloc-int.h) and
 * fatprealloc.
 */
#ifndef FATKIT_PREALLOC_TYPES_H
#define FATKIT_PREALLOC_TYPES_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "table/alloc.h"

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

#endif
