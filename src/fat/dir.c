/*
 * dir.c: directory slots.  A directory is read a block at a time (a
 * cluster, or a few sectors of the fixed root), its chain checked as it is
 * followed, and never more than 65536 slots (FAT specification: a
 * directory is at most 2 MiB), which also bounds a looping chain.  Long
 * names are assembled from their slots and kept only when sequence and
 * checksum agree; otherwise the short name stands (as Windows does).
 */
#include "fat/dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fat/fat-boot.h"
#include "fat/slot.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/names.h"
#include "table/fat.h"
#include "table/fsinfo.h"
#include "volume/family.h"
#include "volume/volume.h"

#define ROOT_BLOCK_SECS 8 /* fixed-root sectors read at a time */
/*
 * Adjacent clusters of a chain are read in one request, up to this many
 * bytes: on a card each request costs about what 10 KB of transfer does,
 * and a directory of long names in 4 KiB clusters spans several.
 */
#define RUN_LEN (1u << 16)

struct fat_dir {
	struct fk_volume *vol;
	int is_fixed_root;
	uint32_t first_clus;
	uint32_t clus;	    /* last cluster in the buffer (chained dirs) */
	unsigned char *buf; /* one block: a cluster run, or root sectors */
	uint32_t buf_cap;   /* bytes buf holds */
	uint32_t buf_slots; /* slots in the buffer */
	uint64_t buf_off;   /* volume offset of the buffer */
	uint32_t pos;	    /* next slot in the buffer */
	uint32_t slot;	    /* index of the next slot in the directory */
	int is_done;
	int keep_going;
	int is_deferred; /* names made only on fk_dir_names() */
	int seen_end;
	uint32_t max_clus;   /* clusters to read; 0: the whole chain */
	uint32_t nclus_read; /* clusters loaded so far */
	struct fk_dir_stats stats;
	/* long name being assembled */
	uint16_t lfn[FK_LFN_MAX_ORD * FK_LFN_CHARS];
	int lfn_next; /* ordinal expected next; 0: none pending */
	int lfn_slots;
	uint32_t lfn_rsvd;  /* of them, those with has_rsvd */
	uint32_t lfn_first; /* slot of the pending name's first slot */
	size_t name_units;  /* of the last entry's long name; 0: none */
	void (*on_orphan)(void *arg, uint32_t first, uint32_t n,
			  enum fk_lfn_orphan why);
	void *orphan_arg;
	uint8_t lfn_sum;
};

int fk_dirent_is_dot(const struct fk_dirent *ent)
{
	return fk_slot_dot(ent->raw) != FK_DOT_NONE;
}

static int fat_open(struct fk_volume *vol, uint32_t clus, struct fat_dir **out)
{
	struct fat_dir *dir = calloc(1, sizeof(*dir));
	uint32_t len = vol->g.clus_len;

	if (!dir)
		return -ENOMEM;
	dir->vol = vol;
	clus = fk_dir_resolve(vol, clus);
	dir->is_fixed_root = clus == 0;
	dir->first_clus = clus;
	if (dir->is_fixed_root)
		len = ROOT_BLOCK_SECS * vol->g.sec_len;
	if (!(dir->buf = malloc(len))) {
		free(dir);
		return -ENOMEM;
	}
	dir->buf_cap = len;
	*out = dir;
	return 0;
}

static void fat_close(struct fat_dir *dir)
{
	if (!dir)
		return;
	free(dir->buf);
	free(dir);
}

/* Next cluster of a chained directory; 0 at its end. */
static int next_clus(struct fat_dir *dir, uint32_t *clus, struct fk_diag *diag)
{
	struct fk_volume *vol = dir->vol;
	uint32_t val;
	int err;

	if ((err = fk_fat_get(vol, dir->clus, &val)))
		return err;
	switch (fk_fat_class(&vol->g, val)) {
	case FK_ENT_EOC:
		*clus = 0;
		return 0;
	case FK_ENT_NEXT:
		*clus = val;
		return 0;
	default:
		fk_diag_set(diag, NULL,
			    "directory chain breaks after cluster %u (entry "
			    "0x%x)",
			    dir->clus, val);
		return FK_ECORRUPT;
	}
}

static int is_zero_slot(const unsigned char *e)
{
	uint64_t w[FK_DIRENT_LEN / 8];

	memcpy(w, e, sizeof(w));
	return !(w[0] | w[1] | w[2] | w[3]);
}

/*
 * Past the end marker, step over the all-zero slots of the block at
 * once: each is a free slot that changes nothing but the counts (a long
 * name pending before them was dropped at the marker).  A directory of
 * few entries in 32 KiB or 64 KiB clusters is mostly such slots, and the
 * checker reads each directory twice.
 */
static void skip_zero_tail(struct fat_dir *dir)
{
	uint32_t n = 0;

	while (dir->pos + n < dir->buf_slots &&
	       is_zero_slot(dir->buf + (size_t)(dir->pos + n) * FK_DIRENT_LEN))
		n++;
	dir->pos += n;
	dir->slot += n;
	dir->stats.slots += n;
}

/*
 * How many clusters from @clus (1 at least, @max at most) follow each
 * other on disk and in the chain, so one read takes them all.  A link
 * that is not to the next cluster, or cannot be read, ends the run; the
 * next load follows and judges it.
 */
static uint32_t run_from(struct fat_dir *dir, uint32_t clus, uint32_t max)
{
	const struct fk_geom *g = &dir->vol->g;
	uint32_t n = 1, val;

	while (n < max && !fk_fat_get(dir->vol, clus + n - 1, &val) &&
	       fk_fat_class(g, val) == FK_ENT_NEXT && val == clus + n &&
	       fk_clus_valid(g, val))
		n++;
	return n;
}

/* The clusters the next read may take from @clus, buffer grown to fit. */
static uint32_t run_to_read(struct fat_dir *dir, uint32_t clus)
{
	const struct fk_geom *g = &dir->vol->g;
	uint32_t clus_slots = g->clus_len / FK_DIRENT_LEN;
	uint32_t max = RUN_LEN > g->clus_len ? RUN_LEN / g->clus_len : 1;
	uint32_t n;
	unsigned char *p;

	if (dir->max_clus && dir->max_clus - dir->nclus_read < max)
		max = dir->max_clus - dir->nclus_read;
	/* Never past the 65536 slots a directory may hold: the load after
	 * says so, as it did one cluster at a time. */
	if ((FK_DIR_MAX_ENTS - dir->slot) / clus_slots < max)
		max = (FK_DIR_MAX_ENTS - dir->slot) / clus_slots;
	n = max > 1 ? run_from(dir, clus, max) : 1;
	if ((uint64_t)n * g->clus_len > dir->buf_cap) {
		if (!(p = realloc(dir->buf, (size_t)n * g->clus_len)))
			return 1; /* one cluster fits, as ever */
		dir->buf = p;
		dir->buf_cap = n * g->clus_len;
	}
	return n;
}

/* Load the next block; sets is_done at the end of the directory. */
static int load_block(struct fat_dir *dir, struct fk_diag *diag)
{
	struct fk_volume *vol = dir->vol;
	const struct fk_geom *g = &vol->g;
	uint32_t len, clus, n;
	int err;

	if (dir->is_fixed_root) {
		uint32_t left = g->root_ents - dir->slot;

		if (!left) {
			dir->is_done = 1;
			return 0;
		}
		len = ROOT_BLOCK_SECS * g->sec_len;
		if (len / FK_DIRENT_LEN > left)
			len = left * FK_DIRENT_LEN;
		dir->buf_off =
			g->root_off + (uint64_t)dir->slot * FK_DIRENT_LEN;
	} else {
		if (dir->max_clus && dir->nclus_read == dir->max_clus) {
			dir->is_done = 1;
			return 0;
		}
		if (dir->slot == 0) {
			clus = dir->first_clus;
		} else {
			if ((err = next_clus(dir, &clus, diag)))
				return err;
			if (!clus) {
				dir->is_done = 1;
				return 0;
			}
		}
		if (!fk_clus_valid(g, clus)) {
			fk_diag_set(diag, NULL,
				    "directory cluster %u is out of range",
				    clus);
			return FK_ECORRUPT;
		}
		if (dir->slot >= FK_DIR_MAX_ENTS) {
			fk_diag_set(diag, NULL,
				    "directory has more than %u entries (a "
				    "looping chain?)",
				    FK_DIR_MAX_ENTS);
			return FK_ECORRUPT;
		}
		n = run_to_read(dir, clus);
		dir->clus = clus + n - 1;
		dir->nclus_read += n;
		len = n * g->clus_len;
		dir->buf_off = fk_clus_off(g, clus);
	}
	if ((err = fk_device_read(vol->dev, dir->buf_off, dir->buf, len)))
		return err;
	dir->buf_slots = len / FK_DIRENT_LEN;
	dir->pos = 0;
	return 0;
}

static void orphan(struct fat_dir *dir, uint32_t first, uint32_t n,
		   enum fk_lfn_orphan why)
{
	dir->stats.orphan_lfn += n;
	if (dir->on_orphan && n)
		dir->on_orphan(dir->orphan_arg, first, n, why);
}

static void lfn_drop(struct fat_dir *dir, enum fk_lfn_orphan why)
{
	if (dir->lfn_next)
		orphan(dir, dir->lfn_first, (uint32_t)dir->lfn_slots, why);
	dir->lfn_next = 0;
	dir->lfn_slots = 0;
	dir->lfn_rsvd = 0;
}

/* Why a pending name is dropped when another long-name slot comes: a
 * complete one is orphaned (fsck.fat deletes it), a partial one broken. */
static enum fk_lfn_orphan interrupted(const struct fat_dir *dir)
{
	return dir->lfn_next == -1 ? FK_LFN_ORPHAN_RESTART
				   : FK_LFN_ORPHAN_BROKEN;
}

static void lfn_take(struct fat_dir *dir, const unsigned char *e)
{
	struct fk_lfn_slot l;
	int ord;

	fk_slot_lfn_unpack(e, &l);
	ord = (int)l.ord;
	if (l.is_last) {
		lfn_drop(dir, interrupted(dir));
		if (ord < 1 || ord > FK_LFN_MAX_ORD) {
			orphan(dir, dir->slot, 1, FK_LFN_ORPHAN_BROKEN);
			return;
		}
		/* No fill: a name is used only once every slot from @ord down
		 * to 1 has been copied in. */
		dir->lfn_first = dir->slot;
		dir->lfn_sum = l.sum;
	} else if (!dir->lfn_next || ord != dir->lfn_next ||
		   l.sum != dir->lfn_sum) {
		lfn_drop(dir, interrupted(dir));
		orphan(dir, dir->slot, 1, FK_LFN_ORPHAN_BROKEN);
		return;
	}
	memcpy(dir->lfn + (ord - 1) * FK_LFN_CHARS, l.units, sizeof(l.units));
	dir->lfn_next = ord - 1;
	dir->lfn_slots++;
	dir->lfn_rsvd += (uint32_t)l.has_rsvd;
	if (!dir->lfn_next)
		dir->lfn_next = -1; /* complete: the short slot comes next */
}

/* Attach the pending long name to @ent if it belongs to it. */
static void lfn_finish(struct fat_dir *dir, struct fk_dirent *ent)
{
	size_t n = 0, max = (size_t)dir->lfn_slots * FK_LFN_CHARS;

	ent->nslots = 1;
	dir->name_units = 0;
	if (!dir->lfn_next)
		return;
	if (dir->lfn_next != -1 || dir->lfn_sum != fk_lfn_checksum(ent->raw)) {
		ent->is_lfn_damaged = 1;
		lfn_drop(dir, dir->lfn_next == -1 ? FK_LFN_ORPHAN_SUM
						  : FK_LFN_ORPHAN_ENTRY);
		return;
	}
	if (max > FK_LFN_MAX)
		max = FK_LFN_MAX;
	while (n < max && dir->lfn[n] != 0)
		n++;
	/* FK_NAME_MAX holds any FK_LFN_MAX units in UTF-8. */
	if (n)
		ent->has_lfn = 1;
	else
		ent->is_lfn_damaged = 1;
	dir->name_units = n;
	ent->nslots += (uint32_t)dir->lfn_slots;
	ent->nlfn_rsvd = dir->lfn_rsvd;
	dir->lfn_next = 0;
	dir->lfn_slots = 0;
	dir->lfn_rsvd = 0;
}

/* The UTF-8 names of @ent, the entry just returned. */
static void make_names(const struct fat_dir *dir, struct fk_dirent *ent)
{
	fk_short_display(ent->raw, ent->attr & FK_ATTR_VOLUME ? 0 : ent->nt,
			 ent->short_name, sizeof(ent->short_name));
	if (ent->has_lfn)
		fk_utf16_to_utf8(dir->lfn, dir->name_units, ent->name,
				 sizeof(ent->name));
	else
		memcpy(ent->name, ent->short_name, sizeof(ent->short_name));
}

static void fill_entry(struct fat_dir *dir, const unsigned char *e,
		       struct fk_dirent *ent)
{
	/* Every field is set below: no memset of the 800-byte entry, which
	 * the checker fills twice per entry of every directory. */
	ent->has_lfn = 0;
	ent->is_lfn_damaged = 0;
	ent->nlfn_rsvd = 0;
	fk_slot_unpack(dir->vol, e, ent);
	ent->off = dir->buf_off + (uint64_t)dir->pos * FK_DIRENT_LEN;
	ent->slot = dir->slot;
	ent->dir_clus = dir->is_fixed_root ? 0 : dir->first_clus;
	lfn_finish(dir, ent);
	if (!dir->is_deferred)
		make_names(dir, ent);
	else
		ent->name[0] = ent->short_name[0] = '\0';
}

static int fat_next(struct fat_dir *dir, struct fk_dirent *ent,
		    struct fk_diag *diag)
{
	int err;

	for (;;) {
		const unsigned char *e;

		if (dir->is_done) {
			/* fsck.fat deletes a name the directory ends in. */
			lfn_drop(dir, FK_LFN_ORPHAN_FREE);
			if (!dir->seen_end)
				dir->stats.end_slot = dir->slot;
			return 0;
		}
		if (dir->seen_end && !dir->lfn_next)
			skip_zero_tail(dir);
		if (dir->pos == dir->buf_slots || !dir->buf_slots) {
			if ((err = load_block(dir, diag)))
				return err;
			continue;
		}
		e = dir->buf + (size_t)dir->pos * FK_DIRENT_LEN;
		dir->stats.slots++;
		if (fk_slot_is_end(e) && !dir->seen_end) {
			dir->seen_end = 1;
			dir->stats.end_slot = dir->slot;
			dir->stats.zero_from = dir->slot;
			lfn_drop(dir, FK_LFN_ORPHAN_FREE);
			if (!dir->keep_going) {
				dir->is_done = 1;
				return 0;
			}
		}
		if (dir->seen_end && !fk_slot_is_free(e))
			dir->stats.after_end++;
		/* A writer may take a slot past the marker only in an
		 * all-zero tail: deleted or half-written slots there are
		 * nobody's, but not provably so. */
		if (dir->seen_end && !is_zero_slot(e))
			dir->stats.zero_from = dir->slot + 1;
		/* Past the marker (keep_going), 0x00 is one more free slot:
		 * Linux and fsck.fat read on, so the checker must too. */
		if (fk_slot_is_free(e)) {
			lfn_drop(dir, FK_LFN_ORPHAN_FREE);
		} else if (fk_slot_is_lfn(e)) {
			lfn_take(dir, e);
		} else {
			fill_entry(dir, e, ent);
			dir->pos++;
			dir->slot++;
			return 1;
		}
		dir->pos++;
		dir->slot++;
	}
}

/* ---- the FAT family's directory operations (family.h) -------------------- */

int fk_fat_fam_dir_open(struct fk_volume *vol, const struct fk_dirent *dent,
			void **impl)
{
	struct fat_dir *dir;
	int err;

	if ((err = fat_open(vol, dent ? fk_dirent_dir_clus(vol, dent) : 0,
			    &dir)))
		return err;
	*impl = dir;
	return 0;
}

int fk_fat_fam_dir_next(void *impl, struct fk_dirent *ent, struct fk_diag *diag)
{
	return fat_next(impl, ent, diag);
}

void fk_fat_fam_dir_close(void *impl)
{
	fat_close(impl);
}

int fk_fat_fam_walk(struct fk_volume *vol, const struct fk_dirent *ent,
		    int (*fn)(void *arg, const struct fk_run *run), void *arg,
		    struct fk_chain_info *info)
{
	return fk_chain_walk(vol, ent->first_clus, fn, arg, info);
}

int fk_fat_fam_match(const struct fk_volume *vol, const char *name,
		     const struct fk_dirent *ent)
{
	(void)vol;
	return fk_name_equal(name, ent->name) ||
	       fk_name_equal(name, ent->short_name);
}

/* The label in the root directory (what mlabel and Windows show). */
static void root_label(struct fk_volume *vol, char *out, size_t len)
{
	struct fk_dirent ent;
	struct fk_dir *dir;

	out[0] = '\0';
	if (fk_dir_open(vol, 0, &dir))
		return;
	while (fk_dir_next(dir, &ent, NULL) == 1)
		if (fk_attr_is_label(ent.attr) && !ent.has_lfn) {
			fk_label_display(ent.raw, out, len);
			break;
		}
	fk_dir_close(dir);
}

#define NUM(k, v) (it[n].key = (k), it[n].is_num = 1, it[n++].num = (v))
#define STR(k, ...)                                                            \
	(it[n].key = (k), snprintf(it[n++].str, sizeof(it[0].str), __VA_ARGS__))

int fk_fat_fam_info(struct fk_volume *vol, struct fk_info_item *it,
		    struct fk_diag *diag)
{
	const struct fk_geom *g = &vol->g;
	struct fk_fsinfo fsi;
	uint32_t nfree = 0;
	int n = 0, err;

	(void)diag; /* the errors here are the device's, said by errno */
	if ((err = fk_fat_count_free(vol, g->active_fat, &nfree)) ||
	    (err = fk_fsinfo_read(vol, &fsi)))
		return err;
	STR("fat type", "%s", g->type_name);
	NUM("sector size", g->sec_len);
	NUM("cluster size", g->clus_len);
	NUM("sectors per cluster", g->clus_secs);
	NUM("reserved sectors", g->rsvd_secs);
	NUM("fat copies", g->nfats);
	NUM("sectors per fat", g->fat_secs);
	if (fk_fat_is_32(g))
		NUM("root cluster", g->root_clus);
	else
		NUM("root entries", g->root_ents);
	NUM("total sectors", g->total_secs);
	NUM("data clusters", g->nclus);
	NUM("free clusters", nfree);
	NUM("free bytes", (uint64_t)nfree * g->clus_len);
	if (fsi.is_present) {
		NUM("fsinfo free count", fsi.free_count);
		NUM("fsinfo next free", fsi.next_free);
	}
	if (fk_fat_is_32(g))
		STR("fat mirroring", "%s", g->is_mirrored ? "on" : "off");
	STR("label", "%s", g->has_ext_boot ? g->label : "");
	root_label(vol, it[n].str, sizeof(it[0].str));
	it[n++].key = "root label";
	if (g->has_ext_boot)
		STR("serial", "%04X-%04X", g->serial >> 16, g->serial & 0xffff);
	STR("oem", "%s", g->oem);
	STR("media", "0x%02x", g->media);
	NUM("volume offset", fk_device_base(vol->dev));
	return n;
}

#undef NUM
#undef STR

/* The FAT family's slot-level calls; nothing to do on exFAT. */
static struct fat_dir *fat_of(struct fk_dir *dir)
{
	return fk_dir_impl(dir, fk_fat_fam_dir_open);
}

void fk_dir_keep_going(struct fk_dir *dir)
{
	struct fat_dir *d = fat_of(dir);

	if (d)
		d->keep_going = 1;
}

void fk_dir_on_orphan(struct fk_dir *dir,
		      void (*fn)(void *arg, uint32_t first, uint32_t n,
				 enum fk_lfn_orphan why),
		      void *arg)
{
	struct fat_dir *d = fat_of(dir);

	if (d) {
		d->on_orphan = fn;
		d->orphan_arg = arg;
	}
}

void fk_dir_set_limit(struct fk_dir *dir, uint32_t nclus)
{
	struct fat_dir *d = fat_of(dir);

	if (d)
		d->max_clus = nclus;
}

void fk_dir_defer_names(struct fk_dir *dir)
{
	struct fat_dir *d = fat_of(dir);

	if (d)
		d->is_deferred = 1;
}

void fk_dir_names(struct fk_dir *dir, struct fk_dirent *ent)
{
	struct fat_dir *d = fat_of(dir);

	if (d && d->is_deferred && !ent->name[0])
		make_names(d, ent);
}

const uint16_t *fk_dir_long_units(struct fk_dir *dir, size_t *n)
{
	struct fat_dir *d = fat_of(dir);

	*n = d ? d->name_units : 0;
	return d ? d->lfn : NULL;
}

const struct fk_dir_stats *fk_dir_stats(const struct fk_dir *dir)
{
	static const struct fk_dir_stats none; /* another family's */
	const struct fat_dir *d = fk_dir_impl(dir, fk_fat_fam_dir_open);

	return d ? &d->stats : &none;
}

/* Volume offset of slot @slot of directory @dir_clus, following its chain. */
int fk_dir_slot_off(struct fk_volume *vol, uint32_t dir_clus, uint32_t slot,
		    uint64_t *off)
{
	const struct fk_geom *g = &vol->g;
	uint32_t per_clus = g->clus_len / FK_DIRENT_LEN, clus, val, i;
	int err;

	dir_clus = fk_dir_resolve(vol, dir_clus);
	if (dir_clus == 0) {
		if (slot >= g->root_ents)
			return FK_ECORRUPT;
		*off = g->root_off + (uint64_t)slot * FK_DIRENT_LEN;
		return 0;
	}
	if (slot >= FK_DIR_MAX_ENTS)
		return FK_ECORRUPT;
	for (clus = dir_clus, i = 0; i < slot / per_clus; i++) {
		if ((err = fk_fat_get(vol, clus, &val)))
			return err;
		if (fk_fat_class(g, val) != FK_ENT_NEXT)
			return FK_ECORRUPT;
		clus = val;
	}
	if (!fk_clus_valid(g, clus))
		return FK_ECORRUPT;
	*off = fk_clus_off(g, clus) +
	       (uint64_t)(slot % per_clus) * FK_DIRENT_LEN;
	return 0;
}

int fk_dir_read_slot(struct fk_volume *vol, uint32_t dir_clus, uint32_t slot,
		     unsigned char e[FK_DIRENT_LEN])
{
	uint64_t off;
	int err;

	if ((err = fk_dir_slot_off(vol, dir_clus, slot, &off)))
		return err;
	return fk_device_read(vol->dev, off, e, FK_DIRENT_LEN);
}

int fk_dir_write_slot(struct fk_volume *vol, uint32_t dir_clus, uint32_t slot,
		      const unsigned char e[FK_DIRENT_LEN])
{
	uint64_t off;
	int err;

	if ((err = fk_dir_slot_off(vol, dir_clus, slot, &off)))
		return err;
	return fk_device_write(vol->dev, off, e, FK_DIRENT_LEN);
}
