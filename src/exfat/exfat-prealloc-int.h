/*
 * exfat-prealloc-int.h: what the files of fatprealloc's exFAT family
 * (exfat-prealloc*.c) share: the run's state (struct xop), the directory
 * model (struct xdir), the file records, and the functions one of them
 * calls in another.  Private to those files.
 */
#ifndef FATKIT_EXFAT_PREALLOC_INT_H
#define FATKIT_EXFAT_PREALLOC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "exfat/exfat.h"
#include "iface/dirent.h"
#include "iface/prealloc-int.h"
#include "table/alloc.h"

struct fk_cache;
struct fk_diag;
struct fk_exfat_dir_stats;
struct fk_prealloc_opts;
struct fk_prealloc_result;
struct fk_volume;

#define NBUCKETS 4096 /* name index buckets per directory */
#define NO_TAG	 UINT32_MAX
#define PAGE_LEN 4096u /* a page of a buffered block device */

/* A name in a directory, for lookups and duplicates. */
struct xname {
	uint16_t *name16;
	uint32_t len;	/* UTF-16 units */
	uint32_t idx;	/* entry index of the primary */
	uint32_t nents; /* entries of the set */
	uint32_t next;	/* next in the bucket, or NO_TAG */
	uint32_t tag;	/* file plan index, or NO_TAG */
	uint32_t defects;
	uint16_t attr;
	uint16_t hash; /* NameHash through the volume's up-case table */
	struct fk_exfat_stream s;
	uint64_t valid_len;
};

/* A free run of entry slots before the end marker (deleted sets). */
struct xhole {
	uint32_t idx, n;
};

struct xdir {
	struct fk_exfat_stream s; /* as its entry says (the root: chain) */
	uint32_t *clus;		  /* cluster of each directory cluster */
	uint32_t nclus;
	uint32_t cap_clus;  /* clusters @buf, @is_dirty and @clus hold */
	unsigned char *buf; /* the whole directory, read as far as needed */
	size_t buf_mapped;  /* @buf is fk_bigmem_alloc_sparse() of this
			       many bytes; 0: malloc() */
	uint32_t nents;
	uint32_t disk_nents; /* entries it had on disk (0: a new one) */
	uint32_t nread;	     /* entries of @buf read (whole sectors) */
	uint32_t tail_ok;    /* entries end_idx .. tail_ok - 1 are 0x00 */
	uint8_t *is_dirty;   /* per sector */
	uint32_t end_idx;    /* first slot of the free run at the end */
	struct xhole *holes;
	size_t nholes, cap_holes;
	struct xname *names;
	size_t nnames, cap_names;
	uint32_t bucket[NBUCKETS];
	struct fk_plan growth; /* clusters the run adds (zeroed) */
	uint32_t old_nclus;    /* clusters before the run */
	struct xdir *parent;   /* NULL: the root */
	uint32_t parent_name;  /* its entry in @parent's names */
	int is_nfc;	       /* NoFatChain after the run */
	int is_new;	       /* -p creates it (its clusters: growth) */
	char *path;	       /* a new directory's path */
	char *where;	       /* its path, for messages ("/": the root) */
};

/* pf.old_size and pf.size are DataLength before and after the run. */
struct xfile {
	struct fk_pfile pf; /* what the run sees; first */
	struct xdir *d;
	uint32_t name_i; /* in d->names */
	uint64_t old_vdl, new_vdl;
	int was_nfc, is_nfc;
};

/* A run of clusters a structure the run relies on holds. */
struct xown {
	struct fk_run run; /* first, so overlap() can search a list */
	const char *owner; /* its name, alive as long as the run */
};

struct xop {
	struct fk_prun *run; /* files, and is_linked once entry sets go */
	struct fk_volume *vol;
	const struct fk_prealloc_opts *o;
	struct fk_alloc *alloc;
	struct fk_exfat_bitmap bm; /* where it is (the allocator reads it) */
	struct fk_cache *bmc;	   /* the bitmap's sectors */
	uint64_t bm_off;	   /* byte offset of the bitmap */
	struct xdir **dirs;
	size_t ndirs, cap_dirs;
	struct xown *own; /* sorted by first cluster, none overlapping */
	size_t nown, cap_own;
	struct xfile *files; /* run->files */
	uint32_t stamp_ts;   /* exFAT timestamp for what the run writes */
	uint8_t stamp_ms10, stamp_tz;
	int was_dirty; /* VolumeDirty was set before the run */
	int set_dirty; /* this run set it */
};

static inline int is_stopping(const struct xop *op)
{
	return fk_prun_is_stopping(op->run);
}

/* exfat-prealloc-dir.c: the directory model and its entry slots. */
int xp_claim(struct xop *op, const struct fk_plan *runs, const char *owner,
	     struct fk_diag *diag);
int xp_collect_run(void *arg, const struct fk_run *run);
int xp_dir_get(struct xop *op, const struct fk_exfat_stream *s,
	       struct xdir *parent, uint32_t parent_name, const char *where,
	       struct xdir **out, struct fk_diag *diag);
unsigned char *xp_ent_at(struct xdir *d, uint32_t idx);
uint64_t xp_ent_off(const struct xop *op, const struct xdir *d, uint32_t idx);
int xp_judge_plan_bits(const struct xop *op, const struct fk_plan *p,
		       struct fk_diag *diag);
int xp_load_stream(struct xop *op, const struct fk_exfat_stream *s,
		   int is_sized, const char *what, const char *owner,
		   struct fk_plan *runs, struct fk_diag *diag);
void xp_mark_dirty(const struct xop *op, struct xdir *d, uint32_t idx,
		   uint32_t n);
uint32_t xp_name_find(const struct xop *op, const struct xdir *d,
		      const uint16_t *name16, uint32_t len);
void xp_name_index(struct xop *op, struct xdir *d, uint32_t i);
int xp_name_push(struct xdir *d, const struct xname *nm);
int xp_take_slots(struct xop *op, struct xdir *d, uint32_t n, uint32_t *idx,
		  struct fk_diag *diag);
void xp_dir_free(struct xdir *d);

/* exfat-prealloc-sets.c: resolving paths, settling, entry sets. */
void xp_build_sets(struct xop *op);
int xp_is_changed(const struct xfile *fp);
int xp_judge_set(const struct xname *nm, struct fk_diag *diag);
int xp_resolve_parent(struct xop *op, const char *path, struct xdir **dp,
		      uint16_t *leaf, uint32_t *leaf_len, int *is_dir_form,
		      struct fk_diag *diag);
void xp_settle(struct fk_prun *run);
int xp_write_dirs(struct xop *op);

/* exfat-prealloc-own.c: the ownership walk before the first write. */
int xp_verify(struct fk_prun *run, struct fk_diag *diag);

#endif
