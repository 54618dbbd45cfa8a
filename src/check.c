/*
 * check.c: the checker.  One sequential pass over the FAT copies builds a
 * map of two bits per cluster (and compares the copies); a walk of the
 * directory tree then claims every chain in that map, so a loop or a
 * second owner shows at the first shared cluster, and whatever stays
 * unclaimed is lost.  Owners are not stored per cluster: cross-links are
 * rare, so when there is one a second walk replays the first to find who
 * claimed each shared cluster first.  Repairs are planned while checking,
 * as small records, and applied by the repair_*() steps.
 */
#include "check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "check-family.h"
#include "device.h"
#include "diag.h"
#include "dir.h"
#include "family.h"
#include "fat.h"
#include "fsinfo.h"
#include "names.h"
#include "vec.h"
#include "volume.h"

#define NONE	       ((size_t)-1)
#define PROGRESS_STEP  (1u << 16) /* clusters between progress calls */
#define LOST_LISTED    5	  /* lost chains named in the finding */
#define RESYNC_LEN     (1u << 20) /* bytes per read when resyncing FATs */
#define BS_COMPARE_LEN 512	  /* boot sector bytes fsck.fat compares */

/*
 * Two bits per cluster.  Pass 1 (claim): FREE (free or bad), ALLOC
 * (allocated, not claimed yet), OWNED, SHARED (a second owner reached it).
 * Pass 2 (owners) replays pass 1 and turns each cluster it claims back to
 * FREE, so an allocated cluster in state FREE means "claimed already";
 * lost clusters stay ALLOC throughout.  Grouping the lost clusters then
 * reuses OWNED (visited) and SHARED (has a lost predecessor).
 */
enum cstate { CS_FREE, CS_ALLOC, CS_OWNED, CS_SHARED };

/* How a claiming walk of a chain ended. */
enum stop {
	STOP_EOC,   /* end of chain */
	STOP_LIMIT, /* claimed what was asked; @next continues the chain */
	STOP_START, /* the first cluster is out of range */
	STOP_FREE,  /* reached a free cluster (@next) */
	STOP_BAD,   /* reached a cluster marked bad (@next) */
	STOP_VALUE, /* @last holds a reserved or out-of-range value (@next) */
	STOP_LOOP,  /* @last links back into the chain (@next) */
	STOP_CROSS, /* @last links into another owner's cluster (@next) */
};

struct claim {
	uint32_t nclus; /* clusters claimed */
	uint32_t last;	/* last cluster claimed; 0: none */
	uint32_t next;	/* the link (or first cluster) not followed */
	enum stop why;
};

/* A FAT entry to rewrite (ending a chain). */
struct fat_fix {
	uint32_t clus;
	uint32_t val;
};

enum ent_op {
	EF_SET,	   /* new first cluster and/or size */
	EF_DELETE, /* mark slots [slot, slot + nslots) deleted */
	EF_CREATE, /* write @slot_data into a free slot ("." or "..") */
	EF_UNHIDE, /* end markers in [slot, slot + nslots) become deleted */
};

/* A directory entry or slot change, applied after the FAT is flushed. */
struct ent_fix {
	enum ent_op op;
	uint32_t dir_clus; /* directory holding the slots (0: fixed root) */
	uint32_t slot;	   /* the short slot; the first (DELETE, UNHIDE) */
	uint32_t nslots;   /* DELETE, UNHIDE: slots from @slot */
	int set_first, set_size;
	uint32_t first_clus, size;
	unsigned char slot_data[FK_DIRENT_LEN]; /* CREATE */
};

/* A chain part beyond what a file's size needs, claimed after the tree. */
struct tail {
	char *path;
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
	char *owner;	  /* first owner's path, from pass 2 */
};

/* The same name twice in one directory: slot numbers of both. */
struct dup {
	uint32_t later, earlier;
};

struct name_key {
	uint64_t hash; /* fk_name_hash(name) */
	uint32_t slot;
	char *name; /* the finder's copy */
};

struct copy_diff {
	uint32_t nsecs; /* sectors that differ from the read copy */
	uint32_t first; /* the first of them */
};

#define LIST(type, name)                                                       \
	struct {                                                               \
		type *v;                                                       \
		size_t n, cap;                                                 \
	} name

struct fk_check {
	/* Another family's checker (exFAT), chosen once by fk_check_new();
	   NULL: this file's FAT checker, and the fields below. */
	const struct fk_check_family *fam;
	void *fam_state;
	struct fk_volume *vol;
	const struct fk_geom *g;
	struct fk_check_opts o;
	struct fk_check_stats st;
	uint8_t *map; /* 2 bits per cluster, enum cstate */
	int pass;     /* 1: claim and report; 2: find first owners */
	int is_nomem; /* a finding could not be kept for want of memory */
	int is_tree_incomplete; /* never free lost clusters then */
	LIST(struct fk_finding, finds);
	LIST(struct fat_fix, fat_fixes);
	LIST(struct ent_fix, ent_fixes);
	LIST(struct tail, tails);
	LIST(struct shared, shared);
	/* the path of the entry being checked ("" for the root) */
	char *path;
	size_t path_len, path_cap;
	uint64_t claimed; /* clusters claimed, for progress */
	/* FAT scan */
	uint32_t fat0, fat1;
	uint32_t first_free; /* 0: none */
	struct copy_diff *diffs;
	int fix_copies;
	int fix_fat0, fix_fat1;
	/* boot sector and FSInfo */
	int fix_dirty, fix_backup, fix_label;
	unsigned char label[11]; /* what the boot label becomes */
	int fix_fsinfo;
	struct fk_fsinfo fsi;
	/* root directory label */
	int has_root_label;
	unsigned char root_label[11];
	/* lost clusters */
	int fix_lost;
	uint32_t first_lost; /* 0: none */
	/* what repairs freed, for FSInfo */
	uint32_t freed;
	uint32_t first_freed;
};

/* Directory being walked. */
struct dirctx {
	struct fk_check *ck;
	uint32_t first;	 /* first cluster; 0: the FAT12/16 fixed root */
	uint32_t nclus;	 /* clusters claimed (read no further); 0: root */
	uint32_t parent; /* what ".." must say (0: the root) */
	int is_root;
	int depth;
	const struct fk_dirent *self; /* the entry naming it; NULL: root */
	/* pass 1 */
	struct dup *dups;
	size_t ndups;
	int has_dot, has_dotdot;
	int has_hidden;
	uint32_t end_slot, hidden_last;
	uint32_t orphan_first, orphan_n; /* orphaned long-name slots not yet */
	enum fk_lfn_orphan orphan_why;	 /* reported, and why */
	uint32_t damaged_first; /* long-name slots the next entry does */
	uint32_t damaged_n;	/* not match (FK_LFN_ORPHAN_ENTRY) */
	uint32_t ent_first;	/* first slot of the entry being checked */
	size_t fixes_from;	/* entry fixes planned before this walk */
};

/* "s" for a plural count. */
static const char *pl(uint64_t n)
{
	return n == 1 ? "" : "s";
}

const char *fk_sev_name(enum fk_sev sev)
{
	return sev == FK_SEV_ERROR     ? "error"
	       : sev == FK_SEV_WARNING ? "warning"
				       : "note";
}

#define PUSH(list, item)                                                       \
	(FK_VEC_RESERVE((list).v, (list).cap, (list).n + 1)                    \
		 ? -ENOMEM                                                     \
		 : ((list).v[(list).n++] = (item), 0))

/* ---- cluster map ------------------------------------------------------ */

static unsigned get_cs(const struct fk_check *ck, uint32_t clus)
{
	return ck->map[clus >> 2] >> ((clus & 3) * 2) & 3;
}

static void set_cs(struct fk_check *ck, uint32_t clus, unsigned s)
{
	unsigned sh = (clus & 3) * 2;

	ck->map[clus >> 2] =
		(uint8_t)((ck->map[clus >> 2] & ~(3u << sh)) | s << sh);
}

/* Keep only the clusters in state ALLOC (the lost ones). */
static void keep_alloc_only(struct fk_check *ck)
{
	size_t i, len = ((size_t)fk_clus_max(ck->g) + 4) / 4;

	for (i = 0; i < len; i++) {
		unsigned b = ck->map[i];

		ck->map[i] = (uint8_t)(b & 0x55 & ~(b >> 1));
	}
}

/* ---- findings ------------------------------------------------------------ */

static const char *cur_path(const struct fk_check *ck)
{
	return ck->path_len ? ck->path : "/";
}

static char *vformat(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));

static char *vformat(const char *fmt, va_list ap)
{
	va_list aq;
	char *s;
	int n;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0 || !(s = malloc((size_t)n + 1)))
		return NULL;
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

/*
 * Record a finding about @path (NULL: the volume).  Every finding is
 * counted; the first FK_CHECK_MAX_FINDINGS are kept.  Returns its index,
 * or NONE when it was not kept.
 */
static size_t report(struct fk_check *ck, enum fk_sev sev, const char *code,
		     const char *path, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static size_t report(struct fk_check *ck, enum fk_sev sev, const char *code,
		     const char *path, const char *fmt, ...)
{
	struct fk_finding f;
	va_list ap;

	if (ck->pass != 1)
		return NONE;
	if (sev == FK_SEV_ERROR)
		ck->st.errors++;
	else if (sev == FK_SEV_WARNING)
		ck->st.warnings++;
	else
		ck->st.notes++;
	if (ck->finds.n >= FK_CHECK_MAX_FINDINGS) {
		ck->st.unlisted++;
		return NONE;
	}
	memset(&f, 0, sizeof(f));
	f.sev = sev;
	f.code = code;
	va_start(ap, fmt);
	f.msg = vformat(fmt, ap);
	va_end(ap);
	f.path = path ? strdup(path) : NULL;
	if (!f.msg || (path && !f.path) || PUSH(ck->finds, f)) {
		free(f.msg);
		free(f.path);
		ck->is_nomem = 1;
		ck->st.unlisted++;
		return NONE;
	}
	return ck->finds.n - 1;
}

static void set_fix(struct fk_check *ck, size_t idx, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Say what the repair will do about finding @idx (which may be NONE). */
static void set_fix(struct fk_check *ck, size_t idx, const char *fmt, ...)
{
	va_list ap;

	ck->st.has_repairs = 1;
	if (idx == NONE)
		return;
	va_start(ap, fmt);
	free(ck->finds.v[idx].fix);
	if (!(ck->finds.v[idx].fix = vformat(fmt, ap)))
		ck->is_nomem = 1;
	va_end(ap);
}

static int plan_fat(struct fk_check *ck, uint32_t clus, uint32_t val)
{
	struct fat_fix f = {clus, val};

	return PUSH(ck->fat_fixes, f);
}

static int plan_entry(struct fk_check *ck, const struct ent_fix *f)
{
	return PUSH(ck->ent_fixes, *f);
}

/* An EF_SET of @ent in @d, with nothing set yet. */
static void entry_set(struct ent_fix *f, const struct dirctx *d,
		      const struct fk_dirent *ent)
{
	memset(f, 0, sizeof(*f));
	f->op = EF_SET;
	f->dir_clus = d->first;
	f->slot = ent->slot;
}

static int plan_erase(struct fk_check *ck, uint32_t dir_clus, uint32_t first,
		      uint32_t n)
{
	struct ent_fix f;

	memset(&f, 0, sizeof(f));
	f.op = EF_DELETE;
	f.dir_clus = dir_clus;
	f.slot = first;
	f.nslots = n;
	return plan_entry(ck, &f);
}

/* Delete @ent with every long-name slot before it, matching or not. */
static int plan_delete(struct fk_check *ck, const struct dirctx *d,
		       const struct fk_dirent *ent)
{
	return plan_erase(ck, d->first, d->ent_first,
			  ent->slot - d->ent_first + 1);
}

/* ---- paths --------------------------------------------------------------- */

/* Append "/@name" to the current path; returns the old length. */
static int push_name(struct fk_check *ck, const char *name, size_t *old)
{
	size_t len = strlen(name);

	if (FK_VEC_RESERVE(ck->path, ck->path_cap, ck->path_len + len + 2))
		return -ENOMEM;
	*old = ck->path_len;
	ck->path[ck->path_len++] = '/';
	memcpy(ck->path + ck->path_len, name, len + 1);
	ck->path_len += len;
	return 0;
}

static void pop_name(struct fk_check *ck, size_t old)
{
	ck->path_len = old;
	if (ck->path)
		ck->path[old] = '\0';
}

/* ---- setup --------------------------------------------------------------- */

int fk_check_new(struct fk_volume *vol, const struct fk_check_opts *opts,
		 struct fk_check **out)
{
	struct fk_check *ck;
	size_t map_len;
	int err;

	if (!(ck = calloc(1, sizeof(*ck))))
		return -ENOMEM;
	/* The family is chosen once: exFAT has its own checker. */
	if (vol->fam != &fk_fat_family) {
		ck->fam = &fk_check_exfat_family;
		if ((err = ck->fam->new_state(vol, opts, &ck->fam_state))) {
			free(ck);
			return err;
		}
		*out = ck;
		return 0;
	}
	map_len = ((size_t)fk_clus_max(&vol->g) + 4) / 4;
	ck->vol = vol;
	ck->g = &vol->g;
	ck->o = *opts;
	ck->pass = 1;
	ck->map = calloc(map_len, 1);
	ck->diffs = calloc(vol->g.nfats, sizeof(*ck->diffs));
	ck->path = calloc(1, 64);
	ck->path_cap = 64;
	if (!ck->map || !ck->diffs || !ck->path) {
		fk_check_free(ck);
		return -ENOMEM;
	}
	*out = ck;
	return 0;
}

void fk_check_free(struct fk_check *ck)
{
	size_t i;

	if (!ck)
		return;
	if (ck->fam) {
		ck->fam->free_state(ck->fam_state);
		free(ck);
		return;
	}
	for (i = 0; i < ck->finds.n; i++) {
		free(ck->finds.v[i].path);
		free(ck->finds.v[i].msg);
		free(ck->finds.v[i].fix);
	}
	for (i = 0; i < ck->tails.n; i++)
		free(ck->tails.v[i].path);
	for (i = 0; i < ck->shared.n; i++) {
		free(ck->shared.v[i].later);
		free(ck->shared.v[i].owner);
	}
	free(ck->finds.v);
	free(ck->fat_fixes.v);
	free(ck->ent_fixes.v);
	free(ck->tails.v);
	free(ck->shared.v);
	free(ck->path);
	free(ck->map);
	free(ck->diffs);
	free(ck);
}

const struct fk_finding *fk_check_findings(const struct fk_check *ck, size_t *n)
{
	if (ck->fam)
		return ck->fam->findings(ck->fam_state, n);
	*n = ck->finds.n;
	return ck->finds.v;
}

const struct fk_check_stats *fk_check_stats(const struct fk_check *ck)
{
	if (ck->fam)
		return ck->fam->stats(ck->fam_state);
	return &ck->st;
}

static void progress(struct fk_check *ck, const char *phase, uint64_t done,
		     uint64_t total)
{
	if (ck->o.progress && ck->pass == 1)
		ck->o.progress(ck->o.arg, phase, done, total);
}

/* ---- boot sector --------------------------------------------------------- */

static int check_boot(struct fk_check *ck)
{
	const struct fk_geom *g = ck->g;
	unsigned char *bak;
	size_t idx, i, ndiff = 0, first = 0;
	int err;

	if (fk_volume_is_dirty(ck->vol)) {
		idx = report(ck, FK_SEV_ERROR, "dirty", NULL,
			     "the volume was not cleanly unmounted (dirty "
			     "flag in the boot sector)");
		set_fix(ck, idx, "flag cleared");
		ck->fix_dirty = 1;
	}
	if (!g->has_bpb32)
		return 0;
	if (!g->backup_sec) {
		/* fsck.fat counts this as damage (it creates one). */
		report(ck, FK_SEV_ERROR, "no-backup-boot", NULL,
		       "FAT32 volume without a backup boot sector");
		return 0;
	}
	if (!(bak = malloc(g->sec_len)))
		return -ENOMEM;
	if ((err = fk_volume_read_backup(ck->vol, bak))) {
		free(bak);
		return err;
	}
	for (i = 0; i < BS_COMPARE_LEN; i++)
		if (bak[i] != ck->vol->boot[i] && !ndiff++)
			first = i;
	free(bak);
	if (ndiff) {
		idx = report(
			ck, FK_SEV_WARNING, "backup-boot", NULL,
			"backup boot sector (sector %u) differs from the "
			"boot sector in %zu byte%s, the first at offset %zu",
			g->backup_sec, ndiff, pl(ndiff), first);
		set_fix(ck, idx, "backup rewritten from the boot sector");
		ck->fix_backup = 1;
	}
	return 0;
}

/* ---- FAT copies and the cluster map ------------------------------------ */

static int scan_block(void *arg, uint32_t first, const uint32_t *vals,
		      uint32_t n)
{
	struct fk_check *ck = arg;
	const struct fk_geom *g = ck->g;
	uint32_t i = 0;

	for (; i < n && first + i < FK_FIRST_CLUS; i++)
		if (first + i == 0)
			ck->fat0 = vals[i];
		else
			ck->fat1 = vals[i];
	for (; i < n; i++) {
		uint32_t clus = first + i;

		switch (fk_fat_class(g, vals[i])) {
		case FK_ENT_FREE:
			ck->st.free_clus++;
			if (!ck->first_free)
				ck->first_free = clus;
			break;
		case FK_ENT_BAD:
			ck->st.bad_clus++;
			break;
		default:
			ck->st.used_clus++;
			ck->map[clus >> 2] |=
				(uint8_t)(CS_ALLOC << (clus & 3) * 2);
		}
	}
	progress(ck, "FAT", (uint64_t)first + n, fk_clus_max(g) + 1);
	return 0;
}

static int scan_diff(void *arg, uint32_t copy, uint32_t sec)
{
	struct fk_check *ck = arg;

	if (!ck->diffs[copy].nsecs++)
		ck->diffs[copy].first = sec;
	return 0;
}

/* FAT[0] holds the media byte under bits that are all ones, FAT[1] an
 * end-of-chain mark whose two top bits on FAT16/32 say "cleanly unmounted"
 * and "no disk errors".  fsck.fat gives up on a FAT whose FAT[0] lacks
 * those ones ("Both FATs appear to be corrupt"), but not on a media byte
 * that differs from the boot sector's, which no reader compares. */
static void check_reserved(struct fk_check *ck)
{
	const struct fk_geom *g = ck->g;
	struct fk_fat_reserved r;
	size_t idx;

	fk_fat_reserved_judge(g, ck->fat0, ck->fat1, &r);
	if (!r.is_fat0_ones) {
		idx = report(ck, FK_SEV_ERROR, "fat0", NULL,
			     "FAT[0] is 0x%X: the bits above its media byte "
			     "are not all ones, so fsck.fat takes the FAT for "
			     "corrupt (expected 0x%X)",
			     ck->fat0, r.want0);
		set_fix(ck, idx, "FAT[0] set to 0x%X", r.want0);
		ck->fix_fat0 = 1;
	} else if (!r.is_fat0_media) {
		idx = report(ck, FK_SEV_WARNING, "media", NULL,
			     "FAT[0] is 0x%X, expected 0x%X (the boot sector's "
			     "media byte is 0x%02X)",
			     ck->fat0, r.want0, g->media);
		set_fix(ck, idx, "FAT[0] set to 0x%X", r.want0);
		ck->fix_fat0 = 1;
	}
	if (!r.is_clean) {
		idx = report(ck, FK_SEV_ERROR, "dirty", NULL,
			     "the volume was not cleanly unmounted "
			     "(clean-shutdown bit of FAT[1] is clear)");
		set_fix(ck, idx, "FAT[1] set to 0x%X", r.want1);
		ck->fix_fat1 = 1;
	}
	if (!r.is_noerr) {
		idx = report(ck, FK_SEV_WARNING, "disk-error", NULL,
			     "FAT[1] records a disk I/O error (its hard-error "
			     "bit is clear)");
		set_fix(ck, idx, "FAT[1] set to 0x%X", r.want1);
		ck->fix_fat1 = 1;
	}
	if (!r.is_fat1_eoc) {
		idx = report(ck, FK_SEV_WARNING, "reserved-entry", NULL,
			     "FAT[1] is 0x%X, not an end-of-chain mark",
			     ck->fat1);
		set_fix(ck, idx, "FAT[1] set to 0x%X", r.want1);
		ck->fix_fat1 = 1;
	}
}

static int scan_fats(struct fk_check *ck)
{
	const struct fk_geom *g = ck->g;
	uint32_t c;
	size_t idx;
	int err;

	err = fk_fat_scan_copies(ck->vol, g->active_fat, scan_block,
				 g->is_mirrored ? scan_diff : NULL, ck);
	if (err)
		return err;
	for (c = 0; c < g->nfats; c++) {
		if (!ck->diffs[c].nsecs)
			continue;
		idx = report(ck, FK_SEV_ERROR, "fat-copies", NULL,
			     "FAT copy %u differs from copy %u in %u sector%s, "
			     "the first at sector %u of the copy",
			     c + 1, g->active_fat + 1, ck->diffs[c].nsecs,
			     pl(ck->diffs[c].nsecs), ck->diffs[c].first);
		set_fix(ck, idx, "copy %u rewritten from copy %u", c + 1,
			g->active_fat + 1);
		ck->fix_copies = 1;
	}
	check_reserved(ck);
	return 0;
}

/* ---- FSInfo -------------------------------------------------------------- */

static int fsinfo_hint_ok(const struct fk_check *ck, uint32_t hint)
{
	return hint == FK_FSINFO_UNKNOWN || fk_clus_valid(ck->g, hint);
}

static int check_fsinfo(struct fk_check *ck)
{
	struct fk_fsinfo *fsi = &ck->fsi;
	size_t idx;
	int err;

	if ((err = fk_fsinfo_read(ck->vol, fsi)) || !fsi->is_present)
		return err;
	if (!fsi->is_lead_ok || !fsi->is_struc_ok || !fsi->is_trail_ok) {
		idx = report(ck, FK_SEV_ERROR, "fsinfo", NULL,
			     "FSInfo sector %u has bad signatures (%s%s%s)",
			     ck->g->fsinfo_sec, fsi->is_lead_ok ? "" : " lead",
			     fsi->is_struc_ok ? "" : " struct",
			     fsi->is_trail_ok ? "" : " trail");
		set_fix(ck, idx, "FSInfo rewritten");
		ck->fix_fsinfo = 1;
		return 0; /* its counts mean nothing then */
	}
	if (fsi->free_count == FK_FSINFO_UNKNOWN) {
		idx = report(ck, FK_SEV_NOTE, "fsinfo-unset", NULL,
			     "FSInfo free count is not set; the FAT has %u "
			     "free clusters",
			     ck->st.free_clus);
		set_fix(ck, idx, "FSInfo free count set");
		ck->fix_fsinfo = 1;
	} else if (fsi->free_count != ck->st.free_clus) {
		idx = report(ck, FK_SEV_ERROR, "fsinfo", NULL,
			     "FSInfo free count is %u; the FAT has %u free "
			     "clusters",
			     fsi->free_count, ck->st.free_clus);
		set_fix(ck, idx, "FSInfo free count set");
		ck->fix_fsinfo = 1;
	}
	if (!fsinfo_hint_ok(ck, fsi->next_free)) {
		idx = report(ck, FK_SEV_WARNING, "fsinfo-hint", NULL,
			     "FSInfo next-free hint %u is not a cluster of "
			     "the volume (2 to %u)",
			     fsi->next_free, fk_clus_max(ck->g));
		set_fix(ck, idx, "FSInfo next-free hint set");
		ck->fix_fsinfo = 1;
	}
	return 0;
}

/* ---- claiming chains ----------------------------------------------------- */

/* Is @clus among the first @n clusters of the chain from @start? */
static int in_chain(struct fk_check *ck, uint32_t start, uint32_t n,
		    uint32_t clus, int *yes)
{
	uint32_t c = start, i, val;
	int err;

	*yes = 0;
	for (i = 0; i < n; i++) {
		if (c == clus) {
			*yes = 1;
			return 0;
		}
		if ((err = fk_fat_get(ck->vol, c, &val)))
			return err;
		c = val;
	}
	return 0;
}

/* Pass 2: @path claimed shared cluster @clus first. */
static int note_owner(struct fk_check *ck, uint32_t clus, const char *path)
{
	size_t lo = 0, hi = ck->shared.n;

	while (lo < hi) { /* first event for @clus; sorted by cluster */
		size_t mid = lo + (hi - lo) / 2;

		if (ck->shared.v[mid].clus < clus)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < ck->shared.n && ck->shared.v[lo].clus == clus; lo++)
		if (!ck->shared.v[lo].owner &&
		    !(ck->shared.v[lo].owner = strdup(path)))
			return -ENOMEM;
	return 0;
}

/*
 * Take one cluster of a chain in the map.  Returns 1 if @clus was free to
 * take (and is now), 0 if another claim had it first, or -ENOMEM.
 */
static int take(struct fk_check *ck, uint32_t clus, const char *path)
{
	unsigned s = get_cs(ck, clus);
	int err;

	if (ck->pass == 1) {
		if (s == CS_OWNED || s == CS_SHARED)
			return 0;
		set_cs(ck, clus, CS_OWNED);
	} else {
		if (s == CS_FREE || s == CS_ALLOC)
			return 0; /* claimed earlier in this replay */
		if (s == CS_SHARED && (err = note_owner(ck, clus, path)))
			return err;
		set_cs(ck, clus, CS_FREE);
	}
	if (!(++ck->claimed % PROGRESS_STEP))
		progress(ck, "files", ck->claimed, ck->st.used_clus);
	return 1;
}

/* The part of a chain claimed before a claim that continues it (a tail). */
struct run_before {
	uint32_t first; /* the chain's first cluster */
	uint32_t nclus; /* clusters of it claimed already */
};

/*
 * Claim the chain from @start for @path, at most @limit clusters.  A
 * chain stops at its end, at a free or bad cluster, after a cluster whose
 * value is reserved or out of range, or where it reaches a cluster
 * already claimed (its own: a loop; another's: a cross-link, which marks
 * the cluster SHARED).  Bounded: each step claims a new cluster.
 */
static int claim(struct fk_check *ck, uint32_t start, uint32_t limit,
		 const char *path, const struct run_before *before,
		 struct claim *c)
{
	const struct fk_geom *g = ck->g;
	uint32_t clus = start, val;
	int err, ok, is_own;

	memset(c, 0, sizeof(*c));
	c->next = start;
	if (!fk_clus_valid(g, start)) {
		c->why = STOP_START;
		return 0;
	}
	for (;;) {
		if (c->nclus == limit) {
			c->why = STOP_LIMIT;
			return 0;
		}
		if ((err = fk_fat_get(ck->vol, clus, &val)))
			return err;
		switch (fk_fat_class(g, val)) {
		case FK_ENT_FREE:
			c->why = STOP_FREE;
			return 0;
		case FK_ENT_BAD:
			c->why = STOP_BAD;
			return 0;
		default:
			break;
		}
		if ((ok = take(ck, clus, path)) < 0)
			return ok;
		if (!ok) {
			c->why = STOP_CROSS;
			if (ck->pass != 1)
				return 0;
			err = before ? in_chain(ck, before->first,
						before->nclus + c->nclus, clus,
						&is_own)
				     : in_chain(ck, start, c->nclus, clus,
						&is_own);
			if (err)
				return err;
			if (is_own)
				c->why = STOP_LOOP;
			else
				set_cs(ck, clus, CS_SHARED);
			return 0;
		}
		c->nclus++;
		c->last = clus;
		c->next = val;
		switch (fk_fat_class(g, val)) {
		case FK_ENT_EOC:
			c->why = STOP_EOC;
			return 0;
		case FK_ENT_NEXT:
			clus = val;
			break;
		default:
			c->why = STOP_VALUE;
			return 0;
		}
	}
}

/* Pass 1: remember a cross-link so pass 2 can name the first owner. */
static int note_shared(struct fk_check *ck, uint32_t clus, size_t finding,
		       int is_dir, const char *path, const char *what)
{
	struct shared s = {clus, finding, is_dir, what, strdup(path), NULL};

	if (!s.later || PUSH(ck->shared, s)) {
		free(s.later);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Pass 1: report why the claim @c of the chain of the entry being checked
 * stopped short, and plan the cut: the chain ends at its last good
 * cluster (the later owner of a shared cluster loses the shared part).
 * With nothing claimed, the caller decides (first cluster 0, or removal).
 * Returns the finding's index through @idx.
 */
static int chain_problem(struct fk_check *ck, const struct claim *c, int is_dir,
			 const char *path, const char *what, size_t *idx)
{
	const struct fk_geom *g = ck->g;
	int err;

	*idx = NONE;
	switch (c->why) {
	case STOP_EOC:
	case STOP_LIMIT:
		return 0;
	case STOP_START:
		*idx = report(ck, FK_SEV_ERROR, "bad-start", path,
			      "%sfirst cluster %u is out of range (2 to %u)",
			      what, c->next, fk_clus_max(g));
		return 0;
	case STOP_FREE:
	case STOP_BAD:
		if (!c->last)
			*idx = report(ck, FK_SEV_ERROR, "bad-link", path,
				      "%sfirst cluster %u is %s", what, c->next,
				      c->why == STOP_FREE ? "free"
							  : "marked bad");
		else
			*idx = report(ck, FK_SEV_ERROR, "bad-link", path,
				      "%scluster %u links to %s cluster %u",
				      what, c->last,
				      c->why == STOP_FREE ? "free" : "bad",
				      c->next);
		break;
	case STOP_VALUE:
		if (fk_fat_class(g, c->next) == FK_ENT_RANGE)
			*idx = report(ck, FK_SEV_ERROR, "bad-link", path,
				      "%scluster %u links to %u, past the last "
				      "cluster %u",
				      what, c->last, c->next, fk_clus_max(g));
		else
			*idx = report(ck, FK_SEV_ERROR, "bad-link", path,
				      "%scluster %u holds the reserved value "
				      "0x%X",
				      what, c->last, c->next);
		break;
	case STOP_LOOP:
		*idx = report(ck, FK_SEV_ERROR, "loop", path,
			      "%scluster chain loops: cluster %u links back "
			      "to %u",
			      what, c->last, c->next);
		break;
	case STOP_CROSS:
		/* The message names the first owner once pass 2 finds it. */
		*idx = report(ck, FK_SEV_ERROR, "cross-link", path,
			      "%sshares cluster %u with another chain", what,
			      c->next);
		if ((err = note_shared(ck, c->next, *idx, is_dir, path, what)))
			return err;
		break;
	}
	if (!c->nclus)
		return 0;
	set_fix(ck, *idx, "chain ended at cluster %u", c->last);
	return plan_fat(ck, c->last, fk_fat_eoc(g));
}

/* ---- directory tree ------------------------------------------------------ */

static int walk_dir(struct fk_check *ck, struct dirctx *d,
		    struct fk_diag *diag);

static int is_label(const struct fk_dirent *ent)
{
	return fk_slot_is_label(ent->attr);
}

static void visit(struct fk_check *ck, const struct fk_dirent *ent,
		  uint32_t nclus)
{
	if (ck->o.visit && ck->pass == 1)
		ck->o.visit(ck->o.arg, cur_path(ck), ent, nclus);
}

static int walk_file(struct fk_check *ck, const struct dirctx *d,
		     const struct fk_dirent *ent)
{
	uint32_t clus_len = ck->g->clus_len;
	uint32_t need = ent->size ? (ent->size - 1) / clus_len + 1 : 0;
	struct ent_fix fix;
	struct claim c;
	size_t idx;
	int err;

	entry_set(&fix, d, ent);
	if (ck->pass == 1)
		ck->st.files++;
	if (!ent->first_clus) {
		visit(ck, ent, 0);
		if (!ent->size)
			return 0;
		idx = report(ck, FK_SEV_ERROR, "short-chain", cur_path(ck),
			     "file size is %u bytes but it has no clusters",
			     (uint32_t)ent->size);
		set_fix(ck, idx, "size set to 0");
		fix.set_size = 1;
		return ck->pass == 1 ? plan_entry(ck, &fix) : 0;
	}
	if ((err = claim(ck, ent->first_clus, need, cur_path(ck), NULL, &c)))
		return err;
	if (ck->pass != 1)
		return 0;
	visit(ck, ent, c.nclus);
	if (c.why == STOP_LIMIT) {
		struct tail t = {strdup(cur_path(ck)),
				 d->first,
				 ent->slot,
				 ent->first_clus,
				 need,
				 c.last,
				 c.next,
				 0,
				 0};

		if (!t.path || PUSH(ck->tails, t)) {
			free(t.path);
			return -ENOMEM;
		}
		return 0;
	}
	if ((err = chain_problem(ck, &c, 0, cur_path(ck), "", &idx)))
		return err;
	if (!c.nclus) {
		set_fix(ck, idx, "first cluster set to 0");
		fix.set_first = 1;
	}
	if (c.nclus < need) {
		idx = report(ck, FK_SEV_ERROR, "short-chain", cur_path(ck),
			     "file size is %u bytes but its chain holds %u "
			     "cluster%s (%llu bytes)",
			     (uint32_t)ent->size, c.nclus, pl(c.nclus),
			     (unsigned long long)c.nclus * clus_len);
		fix.set_size = 1;
		fix.size = c.nclus * clus_len;
		set_fix(ck, idx, "size set to %u", fix.size);
	}
	if (fix.set_first || fix.set_size)
		return plan_entry(ck, &fix);
	return 0;
}

static int walk_subdir(struct fk_check *ck, const struct dirctx *d,
		       const struct fk_dirent *ent, struct fk_diag *diag)
{
	struct dirctx child;
	struct ent_fix fix;
	struct claim c;
	size_t idx;
	int err;

	if (ck->pass == 1) {
		ck->st.dirs++;
		if (ent->size) {
			idx = report(ck, FK_SEV_ERROR, "dir-size", cur_path(ck),
				     "directory has a size (%u bytes); "
				     "directories must have 0",
				     (uint32_t)ent->size);
			set_fix(ck, idx, "size set to 0");
			entry_set(&fix, d, ent);
			fix.set_size = 1;
			if ((err = plan_entry(ck, &fix)))
				return err;
		}
	}
	if (!ent->first_clus) {
		visit(ck, ent, 0);
		idx = report(ck, FK_SEV_ERROR, "bad-start", cur_path(ck),
			     "directory entry has first cluster 0, which "
			     "means the root");
		set_fix(ck, idx, "entry removed");
		return ck->pass == 1 ? plan_delete(ck, d, ent) : 0;
	}
	if ((err = claim(ck, ent->first_clus, UINT32_MAX, cur_path(ck), NULL,
			 &c)))
		return err;
	if (ck->pass == 1) {
		visit(ck, ent, c.nclus);
		if ((err = chain_problem(ck, &c, 1, cur_path(ck), "directory ",
					 &idx)))
			return err;
		if (!c.nclus) {
			set_fix(ck, idx, "entry removed");
			if ((err = plan_delete(ck, d, ent)))
				return err;
		}
	}
	if (!c.nclus)
		return 0;
	if (d->depth + 1 > FK_CHECK_MAX_DEPTH) {
		fk_diag_set(diag, cur_path(ck),
			    "directories nest deeper than %d levels",
			    FK_CHECK_MAX_DEPTH);
		return FK_ECORRUPT;
	}
	memset(&child, 0, sizeof(child));
	child.first = ent->first_clus;
	child.nclus = c.nclus;
	child.parent = d->is_root ? 0 : d->first;
	child.depth = d->depth + 1;
	child.self = ent;
	return walk_dir(ck, &child, diag);
}

/* Does an earlier entry have the name of the one in @slot?  Which: @earlier. */
static int find_dup(const struct dirctx *d, uint32_t slot, uint32_t *earlier)
{
	size_t lo = 0, hi = d->ndups;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->dups[mid].later == slot) {
			*earlier = d->dups[mid].earlier;
			return 1;
		}
		if (d->dups[mid].later < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static void check_names(struct fk_check *ck, const struct dirctx *d,
			const struct fk_dirent *ent)
{
	const char *path = cur_path(ck);
	enum fk_short_verdict verdict;
	uint32_t earlier;

	/* Slots that do not match it were orphans (d->ent_first is before
	 * the entry then); what is left is a name that does not decode. */
	if (ent->is_lfn_damaged && d->ent_first + ent->nslots == ent->slot + 1)
		report(ck, FK_SEV_WARNING, "long-name", path,
		       "its long name is empty or not valid UTF-16; it is "
		       "listed by its short name");
	verdict = fk_short_check(ent->raw);
	if (verdict == FK_SHORT_BAD)
		report(ck, FK_SEV_ERROR, "bad-name", path,
		       "short name '%s' holds characters FAT does not allow",
		       ent->short_name);
	else if (verdict == FK_SHORT_ODD)
		report(ck, FK_SEV_WARNING, "short-name", path,
		       "short name '%s' is not a valid 8.3 name",
		       ent->short_name);
	if (find_dup(d, ent->slot, &earlier))
		report(ck, FK_SEV_ERROR, "duplicate", path,
		       "another entry of this directory (slot %u) has the "
		       "same name (names are compared ignoring case)",
		       earlier);
}

/* "." must be the first slot of a subdirectory and name it; ".." the
 * second and name its parent (0 for the root): fsck.fat's rules. */
static int check_dot(struct fk_check *ck, struct dirctx *d,
		     const struct fk_dirent *ent)
{
	int dot = fk_slot_dot(ent->raw) == FK_DOT;
	uint32_t want = dot ? d->first : d->parent;
	const char *name = dot ? "." : "..";
	struct ent_fix fix;
	size_t idx;

	if (d->is_root) {
		idx = report(ck, FK_SEV_ERROR, "dot", "/",
			     "the root directory holds a '%s' entry", name);
		set_fix(ck, idx, "entry removed");
		return plan_delete(ck, d, ent);
	}
	if (ent->slot != (dot ? 0u : 1u) || !(ent->attr & FK_ATTR_DIR)) {
		report(ck, FK_SEV_ERROR, "dot", cur_path(ck),
		       "'%s' entry in slot %u%s", name, ent->slot,
		       ent->attr & FK_ATTR_DIR ? "" : " is not a directory");
		return 0;
	}
	if (dot)
		d->has_dot = 1;
	else
		d->has_dotdot = 1;
	if (ent->first_clus == want)
		return 0;
	idx = report(ck, FK_SEV_ERROR, "dot", cur_path(ck),
		     "'%s' points to cluster %u instead of %u", name,
		     ent->first_clus, want);
	set_fix(ck, idx, "'%s' set to %u", name, want);
	entry_set(&fix, d, ent);
	fix.set_first = 1;
	fix.first_clus = want;
	return plan_entry(ck, &fix);
}

/*
 * Does a repair planned while walking @d delete @slot of it?  Then the
 * slot is free by the time "." or ".." is created there, and one run of
 * the repair settles what would otherwise take two.
 */
static int will_delete(const struct fk_check *ck, const struct dirctx *d,
		       uint32_t slot)
{
	size_t i;

	for (i = d->fixes_from; i < ck->ent_fixes.n; i++) {
		const struct ent_fix *f = &ck->ent_fixes.v[i];

		if (f->op == EF_DELETE && f->dir_clus == d->first &&
		    slot - f->slot < f->nslots)
			return 1;
	}
	return 0;
}

/* A missing "." or "..": recreate it when its slot is or will be free. */
static int missing_dot(struct fk_check *ck, const struct dirctx *d, int dot)
{
	struct fk_dirent ent;
	struct ent_fix fix;
	unsigned char e[FK_DIRENT_LEN];
	size_t idx;
	int err;

	idx = report(ck, FK_SEV_ERROR, "dot", cur_path(ck),
		     "'%s' entry is missing from slot %d", dot ? "." : "..",
		     dot ? 0 : 1);
	if ((err = fk_dir_read_slot(ck->vol, d->first, dot ? 0 : 1, e)))
		return err == FK_ECORRUPT ? 0 : err;
	if (!fk_slot_is_free(e) && !will_delete(ck, d, dot ? 0 : 1))
		return 0;
	memset(&ent, 0, sizeof(ent));
	fk_slot_set_dot(dot ? FK_DOT : FK_DOT_DOT, ent.raw);
	ent.attr = FK_ATTR_DIR;
	ent.first_clus = dot ? d->first : d->parent;
	if (d->self) {
		ent.mtime = d->self->mtime;
		ent.mdate = d->self->mdate;
		ent.ctime = d->self->ctime;
		ent.cdate = d->self->cdate;
		ent.adate = d->self->adate;
	}
	memset(&fix, 0, sizeof(fix));
	fix.op = EF_CREATE;
	fix.dir_clus = d->first;
	fix.slot = dot ? 0 : 1;
	memset(fix.slot_data, 0, sizeof(fix.slot_data));
	fk_slot_pack(ck->vol, &ent, fix.slot_data);
	set_fix(ck, idx, "'%s' created", dot ? "." : "..");
	return plan_entry(ck, &fix);
}

static int walk_entry(struct fk_check *ck, struct dirctx *d,
		      const struct fk_dirent *ent, int is_hidden,
		      struct fk_diag *diag)
{
	size_t old, idx;
	int err;

	if (fk_dirent_is_dot(ent))
		return ck->pass == 1 ? check_dot(ck, d, ent) : 0;
	if (is_label(ent)) {
		if (ck->pass == 1 && d->is_root && !ck->has_root_label) {
			ck->has_root_label = 1;
			memcpy(ck->root_label, ent->raw, 11);
		}
		/* fsck.fat checks any chain a label claims: as a file. */
		if (!ent->first_clus && !ent->size)
			return 0;
	}
	if ((err = push_name(ck, ent->name, &old)))
		return err;
	if (ck->pass == 1) {
		check_names(ck, d, ent);
		if (is_hidden) {
			idx = report(ck, FK_SEV_WARNING, "hidden-entry",
				     cur_path(ck),
				     "entry lies past the directory's end "
				     "marker: Linux and fsck.fat see it, "
				     "Windows and mtools do not");
			set_fix(ck, idx, "end marker before it cleared");
			d->has_hidden = 1;
			d->hidden_last = ent->slot;
		}
	}
	if ((ent->attr & FK_ATTR_DIR) && !is_label(ent))
		err = walk_subdir(ck, d, ent, diag);
	else
		err = walk_file(ck, d, ent);
	pop_name(ck, old);
	return err;
}

static int cmp_key(const void *a, const void *b)
{
	const struct name_key *x = a, *y = b;
	int c;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	/* Equal hashes need not be equal names: equal names sit together. */
	if ((c = fk_name_compare(x->name, y->name)))
		return c;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static int cmp_dup(const void *a, const void *b)
{
	const struct dup *x = a, *y = b;

	return x->later < y->later ? -1 : x->later > y->later;
}

static int open_dir(struct fk_check *ck, const struct dirctx *d,
		    struct fk_dir **dir)
{
	int err;

	if ((err = fk_dir_open(ck->vol, d->first, dir)))
		return err;
	if (d->nclus)
		fk_dir_set_limit(*dir, d->nclus);
	fk_dir_keep_going(*dir);
	return 0;
}

static int add_key(struct name_key **v, size_t *n, size_t *cap,
		   const char *name, uint32_t slot)
{
	char *copy = strdup(name);

	if (!copy || FK_VEC_RESERVE(*v, *cap, *n + 1)) {
		free(copy);
		return -ENOMEM;
	}
	(*v)[*n].hash = fk_name_hash(name);
	(*v)[*n].slot = slot;
	(*v)[(*n)++].name = copy;
	return 0;
}

/*
 * Pass 1, before the entries are checked: hash every name (short, and
 * long when there is one) and note the entries whose name an earlier
 * entry already has.  Memory: two keys and names per entry of this
 * directory only.
 */
static int find_dups(struct fk_check *ck, struct dirctx *d,
		     struct fk_diag *diag)
{
	LIST(struct name_key, keys) = {NULL, 0, 0};
	LIST(struct dup, dups) = {NULL, 0, 0};
	struct fk_dirent ent;
	struct fk_dir *dir;
	size_t i, run = 0;
	int r, err;

	if ((err = open_dir(ck, d, &dir)))
		return err;
	while ((r = fk_dir_next(dir, &ent, diag)) == 1) {
		if (fk_dirent_is_dot(&ent) || is_label(&ent))
			continue;
		if ((err = add_key(&keys.v, &keys.n, &keys.cap, ent.short_name,
				   ent.slot)))
			break;
		/* The long name only when it is another name than the short. */
		if (ent.has_lfn && fk_name_compare(ent.name, ent.short_name) &&
		    (err = add_key(&keys.v, &keys.n, &keys.cap, ent.name,
				   ent.slot)))
			break;
	}
	fk_dir_close(dir);
	if (!err && r)
		err = r; /* -errno or FK_ECORRUPT */
	if (!err && keys.n)
		qsort(keys.v, keys.n, sizeof(*keys.v), cmp_key);
	for (i = 1; !err && i < keys.n; i++) {
		struct dup dp;

		if (keys.v[i].hash != keys.v[run].hash ||
		    fk_name_compare(keys.v[i].name, keys.v[run].name)) {
			run = i;
			continue;
		}
		if (keys.v[i].slot == keys.v[run].slot)
			continue; /* an entry's long and short name */
		dp.later = keys.v[i].slot;
		dp.earlier = keys.v[run].slot;
		err = PUSH(dups, dp);
	}
	for (i = 0; i < keys.n; i++)
		free(keys.v[i].name);
	free(keys.v);
	if (err) {
		free(dups.v);
		return err;
	}
	if (dups.n)
		qsort(dups.v, dups.n, sizeof(*dups.v), cmp_dup);
	d->dups = dups.v;
	d->ndups = dups.n;
	return 0;
}

/*
 * Pass 1: one finding for a run of orphaned long-name slots, whatever made
 * them orphans: fsck.fat reports every case.  It deletes the slots a free
 * slot or another complete name follows, and so does the repair; the
 * others it leaves for a person, and so (for now) does the repair.
 */
static void report_orphans(struct fk_check *ck, struct dirctx *d)
{
	static const char *const why[] = {
		[FK_LFN_ORPHAN_FREE] = "a free slot follows",
		[FK_LFN_ORPHAN_RESTART] = "another long name starts after",
		[FK_LFN_ORPHAN_BROKEN] = "out of sequence",
		[FK_LFN_ORPHAN_ENTRY] = "the next entry does not match",
	};
	uint32_t first = d->orphan_first, n = d->orphan_n;
	char range[32];
	size_t idx;

	if (!n)
		return;
	d->orphan_n = 0;
	if (n > 1)
		snprintf(range, sizeof(range), "s %u-%u", first, first + n - 1);
	else
		snprintf(range, sizeof(range), " %u", first);
	idx = report(ck, FK_SEV_ERROR, "orphan-lfn", cur_path(ck),
		     "long-name slot%s belong%s to no entry (%s)", range,
		     n > 1 ? "" : "s", why[d->orphan_why]);
	/*
	 * fsck.fat deletes runs a free slot or another name ends, and
	 * leaves runs out of sequence; but deleting a run makes the one
	 * before it "followed by a free slot", which a second repair would
	 * then delete.  One run settles it: out-of-sequence slots, which no
	 * reader joins to any name, are deleted too.  Slots whose only
	 * fault is the next entry's checksum stay (they may be re-attached).
	 */
	if (d->orphan_why == FK_LFN_ORPHAN_ENTRY)
		return;
	set_fix(ck, idx, "slot%s deleted", pl(n));
	if (plan_erase(ck, d->first, first, n))
		ck->is_nomem = 1;
}

/* Pass 1: long-name slots the directory iteration dropped; adjacent runs
 * dropped for the same reason are one finding. */
static void on_orphan(void *arg, uint32_t first, uint32_t n,
		      enum fk_lfn_orphan why)
{
	struct dirctx *d = arg;

	if (why == FK_LFN_ORPHAN_ENTRY) {
		d->damaged_first = first;
		d->damaged_n = n;
	}
	if (d->orphan_n && d->orphan_why == why &&
	    d->orphan_first + d->orphan_n == first) {
		d->orphan_n += n;
		return;
	}
	report_orphans(d->ck, d);
	d->orphan_first = first;
	d->orphan_n = n;
	d->orphan_why = why;
}

/* Pass 1, after the entries: what the directory as a whole showed. */
static int dir_after(struct fk_check *ck, struct dirctx *d)
{
	struct ent_fix fix;
	int err;

	report_orphans(ck, d);
	if (d->has_hidden) {
		memset(&fix, 0, sizeof(fix));
		fix.op = EF_UNHIDE;
		fix.dir_clus = d->first;
		fix.slot = d->end_slot;
		fix.nslots = d->hidden_last - d->end_slot + 1;
		if ((err = plan_entry(ck, &fix)))
			return err;
	}
	if (d->is_root)
		return 0;
	if (!d->has_dot && (err = missing_dot(ck, d, 1)))
		return err;
	if (!d->has_dotdot && (err = missing_dot(ck, d, 0)))
		return err;
	return 0;
}

static int walk_dir(struct fk_check *ck, struct dirctx *d, struct fk_diag *diag)
{
	struct fk_dirent *ent = malloc(sizeof(*ent));
	struct fk_dir *dir = NULL;
	int r = 0, err;

	if (!ent)
		return -ENOMEM;
	if (ck->pass == 1 && (err = find_dups(ck, d, diag)))
		goto out;
	if ((err = open_dir(ck, d, &dir)))
		goto out;
	d->ck = ck;
	d->fixes_from = ck->ent_fixes.n;
	if (ck->pass == 1)
		fk_dir_on_orphan(dir, on_orphan, d);
	while ((r = fk_dir_next(dir, ent, diag)) == 1) {
		const struct fk_dir_stats *st = fk_dir_stats(dir);

		report_orphans(ck, d); /* the slots before this entry */
		d->ent_first = ent->slot + 1 - ent->nslots;
		if (ent->is_lfn_damaged && d->damaged_n &&
		    d->damaged_first + d->damaged_n == ent->slot)
			d->ent_first = d->damaged_first;
		d->damaged_n = 0;

		if (st->after_end && !d->has_hidden)
			d->end_slot = st->end_slot;
		if ((err = walk_entry(ck, d, ent, st->after_end > 0, diag)))
			goto out;
	}
	if (r) { /* -errno or FK_ECORRUPT */
		err = r;
		fk_diag_subject(diag, cur_path(ck));
		goto out;
	}
	if (ck->pass == 1)
		err = dir_after(ck, d);
out:
	if (err)
		fk_diag_subject(diag, cur_path(ck));
	fk_dir_close(dir);
	free(d->dups);
	d->dups = NULL;
	free(ent);
	return err;
}

/* The FAT32 root is a chain like any other; FAT12/16 have a fixed area. */
static int walk_root(struct fk_check *ck, struct fk_diag *diag)
{
	uint32_t root = fk_dir_resolve(ck->vol, 0);
	struct dirctx d;
	struct claim c;
	size_t idx;
	int err;

	memset(&d, 0, sizeof(d));
	d.is_root = 1;
	if (root) {
		if ((err = claim(ck, root, UINT32_MAX, "/", NULL, &c)))
			return err;
		if (ck->pass == 1 &&
		    (err = chain_problem(ck, &c, 1, "/", "root directory ",
					 &idx)))
			return err;
		if (!c.nclus) {
			ck->is_tree_incomplete = 1;
			return 0;
		}
		d.first = root;
		d.nclus = c.nclus;
	}
	return walk_dir(ck, &d, diag);
}

/* End @t's file where its size ends: FAT[last] = EOC, or first cluster 0. */
static int cut_before_tail(struct fk_check *ck, const struct tail *t,
			   size_t idx)
{
	struct ent_fix fix;

	if (t->last) {
		set_fix(ck, idx, "chain ended at cluster %u", t->last);
		return plan_fat(ck, t->last, fk_fat_eoc(ck->g));
	}
	set_fix(ck, idx, "first cluster set to 0");
	memset(&fix, 0, sizeof(fix));
	fix.op = EF_SET;
	fix.dir_clus = t->dir_clus;
	fix.slot = t->slot;
	fix.set_first = 1;
	return plan_entry(ck, &fix);
}

static int check_tail(struct fk_check *ck, struct tail *t,
		      const struct claim *c)
{
	uint64_t len = (uint64_t)c->nclus * ck->g->clus_len;
	size_t idx;
	int err;

	if (c->why != STOP_EOC) {
		struct claim m = *c;

		if (!m.nclus) /* the link that failed is the file's last */
			m.last = t->last;
		if ((err = chain_problem(ck, &m, 0, t->path, "", &idx)))
			return err;
		if (!c->nclus && (err = cut_before_tail(ck, t, idx)))
			return err;
	}
	if (!c->nclus)
		return 0;
	idx = report(ck, ck->o.is_strict ? FK_SEV_ERROR : FK_SEV_NOTE,
		     "prealloc-tail", t->path,
		     "%u cluster%s (%llu bytes) %s chained past the end of "
		     "the file (a preallocated tail)",
		     c->nclus, pl(c->nclus), (unsigned long long)len,
		     c->nclus == 1 ? "is" : "are");
	if (!ck->o.trim_prealloc)
		return 0;
	t->is_trimmed = 1;
	if ((err = cut_before_tail(ck, t, idx)))
		return err;
	set_fix(ck, idx, "tail freed");
	return 0;
}

/*
 * Claim the tails (chain parts beyond what sizes need) after every file's
 * needed part, so a tail that runs into another file's data loses, not
 * the file.  Pass 1 also reports them and plans trimming.
 */
static int walk_tails(struct fk_check *ck)
{
	size_t i;
	int err;

	for (i = 0; i < ck->tails.n; i++) {
		struct tail *t = &ck->tails.v[i];
		struct claim c;

		struct run_before before = {t->start, t->need};

		if ((err = claim(ck, t->first, UINT32_MAX, t->path, &before,
				 &c)))
			return err;
		if (ck->pass != 1)
			continue;
		t->nclus = c.nclus;
		ck->st.tail_clus += c.nclus;
		if ((err = check_tail(ck, t, &c)))
			return err;
	}
	return 0;
}

/* fsck.fat's rule: the root's label entry wins; none means "NO NAME". */
static void check_label(struct fk_check *ck)
{
	static const unsigned char no_name[11] = "NO NAME    ";
	const struct fk_geom *g = ck->g;
	char root[12];
	size_t idx, n;

	if (!g->has_ext_bpb)
		return;
	if (!ck->has_root_label) {
		if (!g->label[0] || !strcmp(g->label, "NO NAME"))
			return;
		idx = report(ck, FK_SEV_ERROR, "label", NULL,
			     "the boot sector's label is '%s' but the root "
			     "directory has none",
			     g->label);
		memcpy(ck->label, no_name, 11);
	} else {
		memcpy(root, ck->root_label, 11);
		for (n = 11; n > 0 && (root[n - 1] == ' ' || !root[n - 1]); n--)
			;
		root[n] = '\0';
		if (!strcmp(root, g->label))
			return;
		idx = report(ck, FK_SEV_ERROR, "label", NULL,
			     "the boot sector's label is '%s' but the root "
			     "directory's is '%s'",
			     g->label, root);
		memcpy(ck->label, ck->root_label, 11);
	}
	set_fix(ck, idx, "boot sector label set to '%.11s'",
		(const char *)ck->label);
	ck->fix_label = 1;
}

/* ---- cross-link owners (pass 2) ----------------------------------------- */

static int cmp_shared(const void *a, const void *b)
{
	const struct shared *x = a, *y = b;

	return x->clus < y->clus ? -1 : x->clus > y->clus;
}

/* Is @dir an ancestor of (or the same as) @path? */
static int is_ancestor(const char *dir, const char *path)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return 1;
	return !strncmp(dir, path, n) && (path[n] == '/' || !path[n]);
}

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *format(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = vformat(fmt, ap);
	va_end(ap);
	return s;
}

/* Rewrite each cross-link finding to name the first owner. */
static int name_owners(struct fk_check *ck)
{
	size_t i;

	for (i = 0; i < ck->shared.n; i++) {
		struct shared *s = &ck->shared.v[i];
		struct fk_finding *f;
		char *msg;

		if (s->finding == NONE || !s->owner)
			continue;
		f = &ck->finds.v[s->finding];
		if (s->is_dir && is_ancestor(s->owner, s->later))
			msg = format("directory loop: shares cluster %u with "
				     "%s, which contains it",
				     s->clus, s->owner);
		else
			msg = format("%sshares cluster %u with %s "
				     "(cross-linked)",
				     s->what, s->clus, s->owner);
		if (!msg)
			return -ENOMEM;
		free(f->msg);
		f->msg = msg;
	}
	return 0;
}

/*
 * Replay the claiming walk in the same order (pass 2), so the first claim
 * of each shared cluster names its first owner; unless there was a
 * cross-link, just clear the claims.  Either way the map then holds only
 * the lost clusters, as ALLOC.
 */
static int find_owners(struct fk_check *ck, struct fk_diag *diag)
{
	int err;

	if (!ck->shared.n) {
		keep_alloc_only(ck);
		return 0;
	}
	qsort(ck->shared.v, ck->shared.n, sizeof(*ck->shared.v), cmp_shared);
	ck->pass = 2;
	err = walk_root(ck, diag);
	if (!err)
		err = walk_tails(ck);
	ck->pass = 1;
	if (err)
		return err;
	keep_alloc_only(ck);
	return name_owners(ck);
}

/* ---- lost clusters ------------------------------------------------------- */

/* Mark each lost cluster that another lost cluster links to (SHARED). */
static int mark_linked(void *arg, uint32_t first, const uint32_t *vals,
		       uint32_t n)
{
	struct fk_check *ck = arg;
	const struct fk_geom *g = ck->g;
	uint32_t i;

	for (i = first < FK_FIRST_CLUS ? FK_FIRST_CLUS - first : 0; i < n;
	     i++) {
		uint32_t v = vals[i];

		if (get_cs(ck, first + i) != CS_FREE &&
		    fk_fat_class(g, v) == FK_ENT_NEXT &&
		    get_cs(ck, v) == CS_ALLOC)
			set_cs(ck, v, CS_SHARED);
	}
	progress(ck, "lost", (uint64_t)first + n, fk_clus_max(g) + 1);
	return 0;
}

/* Follow a lost chain from @head, marking it visited (OWNED). */
static int follow_lost(struct fk_check *ck, uint32_t head, uint32_t *len)
{
	uint32_t clus = head, val;
	int err;

	*len = 0;
	for (;;) {
		set_cs(ck, clus, CS_OWNED);
		++*len;
		if ((err = fk_fat_get(ck->vol, clus, &val)))
			return err;
		if (fk_fat_class(ck->g, val) != FK_ENT_NEXT ||
		    get_cs(ck, val) != CS_SHARED)
			return 0;
		clus = val;
	}
}

/*
 * Count the lost clusters (the map's ALLOC ones), group them into chains
 * by their links (heads first, then loops with no head), and report them.
 * Afterwards every lost cluster is non-FREE in the map, for the repair.
 */
static int check_lost(struct fk_check *ck)
{
	const struct fk_geom *g = ck->g;
	char list[256] = "";
	uint32_t clus, len, max = fk_clus_max(g), nlisted = 0;
	size_t idx, off = 0;
	int err, round;

	for (clus = FK_FIRST_CLUS; clus <= max; clus++)
		if (get_cs(ck, clus) == CS_ALLOC) {
			if (!ck->st.lost_clus++)
				ck->first_lost = clus;
		}
	if (!ck->st.lost_clus)
		return 0;
	if ((err = fk_fat_scan(ck->vol, g->active_fat, mark_linked, ck)))
		return err;
	/* Round 0: chains from their heads; round 1: loops. */
	for (round = 0; round < 2; round++)
		for (clus = FK_FIRST_CLUS; clus <= max; clus++) {
			unsigned s = get_cs(ck, clus);

			if (s != (round ? CS_SHARED : CS_ALLOC))
				continue;
			if ((err = follow_lost(ck, clus, &len)))
				return err;
			ck->st.lost_chains++;
			if (nlisted++ < LOST_LISTED && off < sizeof(list))
				off += (size_t)snprintf(
					list + off, sizeof(list) - off,
					"%s%u (%u cluster%s)", off ? ", " : "",
					clus, len, len == 1 ? "" : "s");
		}
	idx = report(ck, FK_SEV_ERROR, "lost", NULL,
		     "%u lost cluster%s (%llu bytes, owned by no file) in %u "
		     "chain%s, from %s%s",
		     ck->st.lost_clus, pl(ck->st.lost_clus),
		     (unsigned long long)ck->st.lost_clus * g->clus_len,
		     ck->st.lost_chains, pl(ck->st.lost_chains), list,
		     ck->st.lost_chains > LOST_LISTED ? ", ..." : "");
	if (ck->is_tree_incomplete)
		return 0; /* they might belong to what could not be read */
	set_fix(ck, idx, "freed");
	ck->fix_lost = 1;
	return 0;
}

/* ---- the whole check ---------------------------------------------------- */

int fk_check_run(struct fk_check *ck, struct fk_diag *diag)
{
	int err;

	if (ck->fam)
		return ck->fam->run(ck->fam_state, diag);
	if ((err = check_boot(ck)) || (err = scan_fats(ck)) ||
	    (err = check_fsinfo(ck)))
		goto fail;
	progress(ck, "files", 0, ck->st.used_clus);
	if ((err = walk_root(ck, diag)) || (err = walk_tails(ck)))
		goto fail;
	check_label(ck);
	if ((err = find_owners(ck, diag)) || (err = check_lost(ck)))
		goto fail;
	if (ck->is_nomem)
		err = -ENOMEM;
fail:
	if (err)
		fk_diag_subject(diag, fk_device_path(ck->vol->dev));
	return err;
}

/* ---- repairs ------------------------------------------------------------- */

/* Copy the runs of sectors where @dst differs from @src (the same range
 * of two FAT copies), so a sparse image stays sparse. */
static int resync_range(struct fk_check *ck, const unsigned char *src,
			const unsigned char *dst, uint64_t dst_off, size_t len)
{
	uint32_t sec_len = ck->g->sec_len;
	size_t i = 0, j;
	int err;

	while (i < len) {
		if (!memcmp(src + i, dst + i, sec_len)) {
			i += sec_len;
			continue;
		}
		for (j = i + sec_len;
		     j < len && memcmp(src + j, dst + j, sec_len); j += sec_len)
			;
		if ((err = fk_device_write(ck->vol->dev, dst_off + i, src + i,
					   j - i)))
			return err;
		i = j;
	}
	return 0;
}

static int repair_fat_copies(struct fk_check *ck)
{
	const struct fk_geom *g = ck->g;
	uint64_t copy_len = (uint64_t)g->fat_secs * g->sec_len, off;
	unsigned char *src = NULL, *dst = NULL;
	uint32_t c;
	int err = 0;

	if (!ck->fix_copies)
		return 0;
	if (!(src = malloc(RESYNC_LEN)) || !(dst = malloc(RESYNC_LEN))) {
		err = -ENOMEM;
		goto out;
	}
	for (off = 0; off < copy_len && !err; off += RESYNC_LEN) {
		size_t len = copy_len - off < RESYNC_LEN
				     ? (size_t)(copy_len - off)
				     : RESYNC_LEN;

		err = fk_device_read(
			ck->vol->dev,
			g->fat_off + g->active_fat * copy_len + off, src, len);
		for (c = 0; c < g->nfats && !err; c++) {
			uint64_t dst_off = g->fat_off + c * copy_len + off;

			if (c == g->active_fat || !ck->diffs[c].nsecs)
				continue;
			if (!(err = fk_device_read(ck->vol->dev, dst_off, dst,
						   len)))
				err = resync_range(ck, src, dst, dst_off, len);
		}
	}
out:
	free(src);
	free(dst);
	return err;
}

static int repair_fat(struct fk_check *ck)
{
	size_t i;
	int err;

	if ((err = fk_fat_fix_reserved(ck->vol, ck->fix_fat0, ck->fix_fat1)))
		return err;
	for (i = 0; i < ck->fat_fixes.n; i++)
		if ((err = fk_fat_put(ck->vol, ck->fat_fixes.v[i].clus,
				      ck->fat_fixes.v[i].val)))
			return err;
	return fk_cache_flush(ck->vol->fat);
}

static int apply_entry(struct fk_check *ck, const struct ent_fix *f)
{
	unsigned char e[FK_DIRENT_LEN];
	struct fk_dirent ent;
	uint32_t s;
	int err;

	switch (f->op) {
	case EF_SET:
		if ((err = fk_dir_read_slot(ck->vol, f->dir_clus, f->slot, e)))
			return err;
		memset(&ent, 0, sizeof(ent));
		fk_slot_unpack(ck->vol, e, &ent);
		if (f->set_first)
			ent.first_clus = f->first_clus;
		if (f->set_size)
			ent.size = f->size;
		fk_slot_pack(ck->vol, &ent, e);
		return fk_dir_write_slot(ck->vol, f->dir_clus, f->slot, e);
	case EF_CREATE:
		if ((err = fk_dir_read_slot(ck->vol, f->dir_clus, f->slot, e)))
			return err;
		if (!fk_slot_is_free(e))
			return 0; /* not free after all: leave it */
		return fk_dir_write_slot(ck->vol, f->dir_clus, f->slot,
					 f->slot_data);
	case EF_DELETE:
	case EF_UNHIDE:
		for (s = 0; s < f->nslots; s++) {
			uint32_t slot = f->slot + s;

			if ((err = fk_dir_read_slot(ck->vol, f->dir_clus, slot,
						    e)))
				return err;
			if (f->op == EF_UNHIDE && !fk_slot_is_end(e))
				continue;
			fk_slot_delete(e);
			if ((err = fk_dir_write_slot(ck->vol, f->dir_clus, slot,
						     e)))
				return err;
		}
		return 0;
	}
	return 0;
}

static int repair_entries(struct fk_check *ck)
{
	size_t i;
	int err;

	for (i = 0; i < ck->ent_fixes.n; i++)
		if ((err = apply_entry(ck, &ck->ent_fixes.v[i])))
			return err;
	return 0;
}

static void count_freed(struct fk_check *ck, uint32_t clus, uint32_t n)
{
	ck->freed += n;
	if (!ck->first_freed || clus < ck->first_freed)
		ck->first_freed = clus;
}

/* Free @nclus clusters of a chain from @first (a trimmed tail). */
static int free_chain(struct fk_check *ck, uint32_t first, uint32_t nclus)
{
	uint32_t clus = first, val, i;
	int err;

	for (i = 0; i < nclus; i++) {
		if ((err = fk_fat_get(ck->vol, clus, &val)) ||
		    (err = fk_fat_put(ck->vol, clus, 0)))
			return err;
		count_freed(ck, clus, 1);
		if (fk_fat_class(ck->g, val) != FK_ENT_NEXT)
			break;
		clus = val;
	}
	return 0;
}

static int repair_free(struct fk_check *ck)
{
	uint32_t clus, max = fk_clus_max(ck->g), run;
	size_t i;
	int err;

	for (i = 0; i < ck->tails.n; i++)
		if (ck->tails.v[i].is_trimmed &&
		    (err = free_chain(ck, ck->tails.v[i].first,
				      ck->tails.v[i].nclus)))
			return err;
	for (clus = FK_FIRST_CLUS; ck->fix_lost && clus <= max; clus++) {
		if (get_cs(ck, clus) == CS_FREE)
			continue;
		for (run = 1;
		     clus + run <= max && get_cs(ck, clus + run) != CS_FREE;
		     run++)
			;
		if ((err = fk_fat_fill(ck->vol, clus, run, 0)))
			return err;
		count_freed(ck, clus, run);
		clus += run - 1;
	}
	return fk_cache_flush(ck->vol->fat);
}

static int repair_boot(struct fk_check *ck)
{
	if (!ck->fix_dirty && !ck->fix_label && !ck->fix_backup)
		return 0;
	return fk_volume_fix_boot(ck->vol, ck->fix_dirty,
				  ck->fix_label ? ck->label : NULL, 1);
}

static int repair_fsinfo(struct fk_check *ck)
{
	uint32_t nfree = ck->st.free_clus + ck->freed;
	uint32_t hint = ck->fsi.next_free;

	if (!ck->fsi.is_present || (!ck->fix_fsinfo && !ck->freed))
		return 0;
	if (!fsinfo_hint_ok(ck, hint) || !ck->fsi.is_lead_ok ||
	    !ck->fsi.is_struc_ok || !ck->fsi.is_trail_ok) {
		hint = ck->first_free;
		if (ck->first_freed && (!hint || ck->first_freed < hint))
			hint = ck->first_freed;
		if (!hint)
			hint = FK_FSINFO_UNKNOWN;
	}
	return fk_fsinfo_write(ck->vol, nfree, hint);
}

int fk_check_repair(struct fk_check *ck, struct fk_diag *diag)
{
	size_t i;
	int err;

	if (ck->fam)
		return ck->fam->repair(ck->fam_state, diag);
	if ((err = repair_fat_copies(ck)) || (err = repair_fat(ck)) ||
	    (err = repair_entries(ck)) || (err = repair_free(ck)) ||
	    (err = repair_boot(ck)) || (err = repair_fsinfo(ck)) ||
	    (err = fk_device_sync(ck->vol->dev))) {
		fk_diag_subject(diag, fk_device_path(ck->vol->dev));
		return err;
	}
	for (i = 0; i < ck->finds.n; i++)
		if (ck->finds.v[i].fix && !ck->finds.v[i].is_fixed) {
			ck->finds.v[i].is_fixed = 1;
			ck->st.fixed++;
		}
	return 0;
}
