/*
 * check-int.h: what the checker's files share, and nobody else may use.
 *
 *   check-run.c     the FAT checker's table, setup, repair plans, the
 *                   order of phases (findings: iface/findings.c)
 *   check-fat.c     boot sector, FAT copies (which to keep where they
 *                   differ) and reserved entries, FSInfo, label
 *   check-tree.c    the directory tree walk: files, subdirectories,
 *                   entries past an end marker; with check-names.c
 *                   (names, duplicates, orphaned long-name slots),
 *                   check-dots.c ("." and "..") and check-dir.c/.h (the
 *                   directory being walked, which only those share)
 *   check-chain.c   claiming chains in the cluster map, tails, cross-link
 *                   owners, lost clusters
 *   check-salvage.c --salvage: plans FOUND.000 files for lost chains
 *   check-repair.c  the repair steps, in write order
 *
 * A phase judges and plans: it records findings with ck_report(), says
 * what the repair does with ck_set_fix(), and queues the change as data
 * (ck_plan_fat(), ck_plan_entry(), or a fix_* flag in struct fat_check).
 * Only check-repair.c writes, and it applies nothing it was not planned.
 * A new repair: plan it where the damage is found, and apply it in the
 * step of check-repair.c whose place in the write order it needs.
 */
#ifndef FATKIT_CHECK_INT_H
#define FATKIT_CHECK_INT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "fat/dir.h"
#include "fat/slot.h"
#include "iface/check-family.h"
#include "iface/claim.h"
#include "iface/findings.h"
#include "iface/ownmap.h"
#include "io/cache.h"
#include "lib/vec.h"
#include "table/alloc.h"
#include "table/fat.h"
#include "table/fsinfo.h"
#include "volume/volume.h"

struct fk_dir;
struct fk_geom;

/*
 * A cluster's state in the ownership map (iface/ownmap.h, both planes).
 * While claiming: FREE (free or bad), ALLOC (allocated, not claimed yet),
 * OWNED, SHARED (a second owner reached it).  After the owners step only
 * the lost clusters stay ALLOC (the rest are FREE); grouping them then
 * reuses OWNED (visited) and SHARED (has a lost predecessor).
 */
enum cstate {
	CS_FREE = FK_OWN_FREE,
	CS_ALLOC = FK_OWN_ALLOC,
	CS_OWNED = FK_OWN_OWNED,
	CS_SHARED = FK_OWN_SHARED,
};

enum ent_op {
	EF_SET,	    /* new first cluster, size and/or attribute byte */
	EF_DELETE,  /* mark slots [slot, slot + nslots) deleted */
	EF_CREATE,  /* write @slot_data into a free slot ("." or "..") */
	EF_NAME,    /* slots [slot, slot + nslots): long-name slots, then the
		      short slot; @set_name: its name becomes @name and @nt;
		      then the long-name slots' checksums match it */
	EF_REBUILD, /* write @slot_data into @slot if it still holds @old */
	EF_UNEND,   /* slots [slot, slot + nslots) that are end markers
		       (0x00) become deleted slots (0xE5) */
	EF_GROW,    /* the directory grows by the zeroed cluster
		       @first_clus, linked from @prev_clus */
	EF_MOVE,    /* an entry in the "." or ".." slot: slots [slot, slot +
		       nslots) copied to [to, to + nslots), then deleted
		       (end markers in [skip_from, to) deleted first) */
};

/* A directory entry or slot change, applied after the FAT is flushed. */
struct ent_fix {
	enum ent_op op;
	uint32_t dir_clus; /* directory holding the slots (0: fixed root) */
	uint32_t slot;	   /* the short slot; the first (DELETE, UNEND) */
	uint32_t nslots;   /* DELETE, UNEND: slots from @slot */
	int set_first, set_size, set_attr;
	uint32_t first_clus, size;
	uint8_t attr; /* SET: the attribute byte, with @set_attr */
	unsigned char slot_data[FK_DIRENT_LEN]; /* CREATE, REBUILD */
	unsigned char old[FK_DIRENT_LEN];	/* REBUILD */
	int set_name;				/* NAME */
	unsigned char name[11];			/* NAME: the new short name */
	uint8_t nt;				/* NAME: its NT flags */
	uint32_t prev_clus;			/* GROW */
	uint32_t to, skip_from;			/* MOVE */
};

#define ROOT_AREA UINT32_MAX	   /* entry_ref.dir: the FAT12/16 fixed root */
#define NO_DIR	  (UINT32_MAX - 1) /* entry_ref.dir: the root chain itself */
#define NO_RUN	  UINT32_MAX	   /* no run */

/* The entry that owns a run: slot @slot of the directory whose own chain
 * is run @dir (or ROOT_AREA, or NO_DIR for the FAT32 root's chain). */
struct entry_ref {
	uint32_t dir, slot;
};

/* Clusters one claim took, in the order claimed: following @nclus
 * clusters from @first visits exactly them again. */
struct run {
	uint32_t first, nclus;
	struct entry_ref who;
};

/*
 * Every claim, in order, in blocks of RUN_BLOCK runs that never move: a
 * doubling array would copy itself as it grew and leave the old copies in
 * the heap (a third more memory than the log on a 20,000-file volume).
 */
#define RUN_BLOCK 4096 /* 64 KiB of runs */
struct run_log {
	struct run **blocks;
	size_t n, nblocks, cap; /* runs; blocks in use; room for blocks */
};

/* An entry past its directory's end marker, and where it was found:
 * claimed and walked only after the visible tree (check-tree.c). */
struct hidden_ent {
	struct fk_dirent ent; /* its names made */
	char *path;	      /* of the entry */
	uint32_t dir_first;   /* its directory's first cluster; 0: root */
	uint32_t run;	      /* the run of that directory's chain */
	uint32_t ent_first;   /* its first slot (long name included) */
	int depth;	      /* of its directory */
	int is_root;	      /* its directory is the root */
	size_t finding;	      /* the hidden-entry finding */
};

/* A chain part beyond what a file's size needs, claimed after the tree. */
struct tail {
	char *path;
	struct entry_ref who;	 /* the file */
	uint32_t dir_clus, slot; /* the file's entry */
	uint32_t start;		 /* the file's first cluster */
	uint32_t need;		 /* clusters its size needs */
	uint32_t last;		 /* last cluster the size needs; 0: none */
	uint32_t first;		 /* first cluster of the tail */
	uint32_t nclus;		 /* tail clusters claimed */
	int is_trimmed;		 /* freeing it is planned */
};

/* A cluster a later chain reached after another claimed it. */
struct shared {
	uint32_t clus;
	size_t finding;	  /* the later owner's finding, or NONE */
	int is_dir;	  /* the later owner is a directory */
	const char *what; /* prefix of its message */
	char *later;	  /* its path */
	uint32_t owner;	  /* the first owner's run; NO_RUN: not found */
};

struct copy_diff {
	uint32_t nsecs; /* sectors that differ from the read copy */
	uint32_t first; /* the first of them */
};

/* A run of sectors where the two FAT copies differ, and the copy kept
 * there (0-based; the read copy unless judged or forced otherwise). */
struct copy_run {
	uint32_t first, nsecs;
	uint32_t keep;
};

/* A volume label entry of the root. */
struct label_ent {
	unsigned char raw[11];
	uint32_t dir, slot; /* where: the root's first cluster, the slot */
	uint32_t run;	    /* the root's run, for its claims (entry_ref) */
};

/* A lost chain, as the lost-cluster step grouped it (--salvage). */
struct lost_chain {
	uint32_t head, nclus;
	uint32_t last;	   /* its last cluster */
	uint32_t last_val; /* what the FAT holds there */
	int is_saved;	   /* a FOUND.nnn file is planned for it */
};

/* What --salvage plans: files in /FOUND.nnn for the lost chains. */
struct salvage {
	struct fk_alloc *alloc;	  /* free clusters, for the directory */
	struct fk_dirplan *root;  /* the root (FOUND.nnn's entry, if new) */
	struct fk_dirplan *found; /* FOUND.nnn */
	struct fk_plan own;	  /* a new FOUND.nnn's first cluster */
	uint32_t nsaved;	  /* chains saved */
	uint32_t nfree;		  /* free clusters before the plan */
};

#define LIST(type, name)                                                       \
	struct {                                                               \
		type *v;                                                       \
		size_t n, cap;                                                 \
	} name

struct fk_check_family;

/* The FAT checker's state (the record's @fam_state), as exFAT's struct
 * fk_exfat_check is that family's. */
struct fat_check {
	struct fk_check *rec;	   /* where findings are recorded */
	struct fk_check_stats *st; /* @rec's counts */
	struct fk_volume *vol;
	struct fk_check_opts o;
	const struct fk_geom *g;
	struct fk_own_map map; /* both planes: enum cstate */
	uint64_t *linked;      /* a bit per cluster another links to; made by
			     check-tree.c's first retype() that asks */
	uint32_t nlink;	       /* values from FK_FIRST_CLUS on that are links */
	int is_tree_incomplete; /* never free lost clusters then */
	int is_root_cut;	/* the FAT32 root's chain stops short */
	LIST(struct fk_fat_fix, fat_fixes);
	LIST(struct ent_fix, ent_fixes);
	LIST(struct tail, tails);
	LIST(struct shared, shared);
	struct run_log runs; /* every claim, in order; 16 bytes each */
	/* the path of the directory being walked ("" for the root), and
	   of its entry once check-tree.c has something to say of it */
	char *path;
	size_t path_len, path_cap;
	uint64_t claimed; /* clusters claimed, for progress */
	/* FAT scan */
	uint32_t fat0, fat1;
	uint32_t first_free; /* 0: none */
	struct copy_diff *diffs;
	LIST(struct copy_run, copy_runs); /* ascending */
	struct fk_cache_patch *patches;	  /* the kept runs of the other copy,
					     which the check reads */
	size_t npatches;
	int fix_copies;
	int fix_fat0, fix_fat1;
	uint8_t fix_media; /* the BPB media byte -r writes; 0: none */
	/* boot sector and FSInfo */
	int fix_dirty, fix_backup, fix_label;
	uint32_t fix_new_backup; /* write a backup boot sector here; 0: no */
	unsigned char label[11]; /* what the boot label becomes */
	int fix_fsinfo;
	struct fk_fsinfo fsi;
	/* root directory label: every label entry of the root, in slot
	   order (the first is the volume's), then the one judged valid */
	LIST(struct label_ent, root_labels);
	int has_root_label;
	unsigned char root_label[11];
	/* lost clusters */
	int fix_lost;
	uint32_t first_lost; /* 0: none */
	/* --salvage */
	LIST(struct lost_chain, lost);
	/* entries past an end marker, walked after the visible tree
	   (check-tree.c; empty outside ck_walk_root()) */
	LIST(struct hidden_ent, hidden);
	struct salvage sv;
	struct fk_dirent stamp; /* times for what the salvage creates */
	/* what repairs freed, for FSInfo */
	uint32_t freed;
	uint32_t first_freed;
	/* free clusters for directory growth (EF_GROW), opened when first
	   needed; --salvage takes it over so that neither hands out what
	   the other planned */
	struct fk_alloc *alloc;
	uint32_t grown; /* clusters directories grow by, for FSInfo */
};

#define PUSH(list, item)                                                       \
	(FK_VEC_RESERVE((list).v, (list).cap, (list).n + 1)                    \
		 ? -ENOMEM                                                     \
		 : ((list).v[(list).n++] = (item), 0))

/* The part of a chain claimed before a claim that continues it (a tail). */
struct run_before {
	uint32_t first; /* the chain's first cluster */
	uint32_t nclus; /* clusters of it claimed already */
};

/* Run @i of the log (below ck->runs.n). */
static inline const struct run *run_at(const struct fat_check *ck, size_t i)
{
	return &ck->runs.blocks[i / RUN_BLOCK][i % RUN_BLOCK];
}

/* ---- cluster map ---------------------------------------------------- */

static inline unsigned get_cs(const struct fat_check *ck, uint32_t clus)
{
	return fk_own_get(&ck->map, clus);
}

static inline void set_cs(struct fat_check *ck, uint32_t clus, unsigned s)
{
	fk_own_put(&ck->map, clus, s);
}

/* fk_fat_class() with its common case, a link, inline. */
static inline enum fk_ent_class ck_class(const struct fat_check *ck,
					 uint32_t val)
{
	return val - FK_FIRST_CLUS < ck->nlink ? FK_ENT_NEXT
					       : fk_fat_class(ck->g, val);
}

/* ---- paths and plans; check-run.c: setup ------------------------------ */

/* The path of the entry being checked ("/" for the root). */
static inline const char *ck_path(const struct fat_check *ck)
{
	return ck->path_len ? ck->path : "/";
}

/* Plan FAT[@clus] = @val, written before any entry.  0 or -ENOMEM. */
static inline int ck_plan_fat(struct fat_check *ck, uint32_t clus, uint32_t val)
{
	struct fk_fat_fix f = {clus, val};

	return PUSH(ck->fat_fixes, f);
}

/* Plan an entry change, applied after the FAT is flushed.  0 or -ENOMEM. */
static inline int ck_plan_entry(struct fat_check *ck, const struct ent_fix *f)
{
	return PUSH(ck->ent_fixes, *f);
}

/* The FAT checker's table (fk_check_fat_family) calls these: check-run.c
 * sets up, frees and runs the FAT phases, check-repair.c repairs. */
int ck_fat_new_state(struct fk_check *rec, struct fk_volume *vol,
		     const struct fk_check_opts *opts, void **state);
void ck_fat_free_state(void *state);
int ck_fat_run(void *state, struct fk_diag *diag);
int ck_fat_repair(void *state, struct fk_diag *diag);

/* ---- check-fat.c: the volume's own structures ------------------------- */

int ck_check_boot(struct fat_check *ck);
/* One pass over every FAT copy: the map, the counts, FAT[0] and FAT[1];
 * where the copies differ, the copy kept for each run of sectors, which
 * the check reads from then on (until ck_unpatch()). */
int ck_scan_fats(struct fat_check *ck);
/* Read the read copy as it is again: the check is over. */
void ck_unpatch(struct fat_check *ck);
int ck_check_fsinfo(struct fat_check *ck);
/* After the tree (which finds the root's label entry). */
void ck_check_label(struct fat_check *ck);
static inline int ck_fsinfo_hint_ok(const struct fat_check *ck, uint32_t hint)
{
	return hint == FK_FSINFO_UNKNOWN || fk_clus_valid(ck->g, hint);
}

/* ---- check-tree.c: the directory tree ---------------------------------- */

/* Walk the tree from the root, claiming every chain: the one walk. */
int ck_walk_root(struct fat_check *ck, struct fk_diag *diag);

/* ---- check-dir.c: the directory being walked ---------------------------- */

/* Open the directory at @first (0: the root), reading at most @nclus
 * clusters of it (0: no limit), as the walk reads it. */
int ck_open_dir(struct fat_check *ck, uint32_t first, uint32_t nclus,
		struct fk_dir **dir);

/* ---- check-chain.c: chains and the cluster map ------------------------ */

/*
 * Claim the chain from @start for the entry @who, at most @limit clusters
 * (@before: the part claimed earlier, for a tail).  @c says how it ended.
 * The clusters taken are kept as a run for the owners step.  Returns 0 or
 * -errno.
 */
int ck_claim(struct fat_check *ck, uint32_t start, uint32_t limit,
	     const struct entry_ref *who, const struct run_before *before,
	     struct fk_claim *c);

/*
 * Does the chain from @start, up to @limit clusters, hold only clusters
 * in use that no claim has taken?  1 yes; 0 no (@start out of range, or a
 * cluster free, bad or claimed); -errno.  Claims nothing.
 */
int ck_chain_unclaimed(struct fat_check *ck, uint32_t start, uint32_t limit);

/*
 * Report why the claim @c of @path stopped short and plan the cut.
 * @what prefixes the message ("", "directory ", "root directory ").
 * Returns the finding's index through @idx.
 */
int ck_chain_problem(struct fat_check *ck, const struct fk_claim *c, int is_dir,
		     const char *path, const char *what, size_t *idx);

/* After the tree: claim, report and plan the preallocated tails. */
int ck_walk_tails(struct fat_check *ck);

/* After the tree and tails: name each cross-link's first owner; leaves
 * only the lost clusters in the map (as ALLOC).  Plans nothing. */
int ck_find_owners(struct fat_check *ck);

/* Last: count, group and report the lost clusters; plan to free them,
 * or with --salvage to save them (ck_plan_salvage()). */
int ck_check_lost(struct fat_check *ck);

/* ---- check-salvage.c: lost chains become files -------------------------- */

/*
 * Plan /FOUND.nnn/FILEnnnn.CHK files for the chains in ck->lost (the
 * lost finding is @idx): mend each saved chain's end, leave only the
 * chains not saved in the map for the free step, and say in the
 * finding's fix what happens to each.  0 or -ENOMEM/-errno.
 */
int ck_plan_salvage(struct fat_check *ck, size_t idx);
void ck_salvage_free(struct fat_check *ck);

#endif
