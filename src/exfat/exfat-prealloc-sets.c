/*
 * exfat-prealloc-sets.c: the exFAT writer's entry sets: paths resolved
 * to their directory (-p creating the missing ones), the sizes and flags
 * each file ends with (xp_settle()), the sets built from them and the
 * directory sectors written.
 */
#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-prealloc-int.h"
#include "io/device.h"
#include "lib/bigmem.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "lib/names.h"
#include "lib/vec.h"
#include "table/alloc.h"
#include "volume/family.h"
#include "volume/volume.h"

/* ---- resolving ------------------------------------------------------------ */

static int to_name16(const char *name, uint16_t *out, uint32_t *len)
{
	size_t n;
	int err;

	if ((err = fk_name_check(name)))
		return err;
	if ((err = fk_utf8_to_utf16(name, out, FK_EXFAT_NAME_MAX, &n)))
		return err;
	*len = (uint32_t)n;
	return 0;
}

/* A set whose name matched: is it sound enough to change or enter? */
int xp_judge_set(const struct xname *nm, struct fk_diag *diag)
{
	if (!(nm->defects & (FK_EXFAT_SET_FATAL | FK_EXS_CHECKSUM |
			     FK_EXS_HASH | FK_EXS_VDL | FK_EXS_ALLOC)))
		return 0;
	fk_diag_set(diag, NULL, "%s", fk_exfat_set_reason(nm->defects));
	return FK_ECORRUPT;
}

/*
 * -p: plan directory @name16 in @pd, one zeroed cluster, NoFatChain,
 * DataLength = ValidDataLength = its allocation; *@i is its name in @pd.
 */
static int dir_create(struct xop *op, struct xdir *pd, const uint16_t *name16,
		      uint32_t len16, const char *path, size_t path_len,
		      uint32_t *i, struct fk_diag *diag)
{
	const struct fk_geom *g = &op->vol->g;
	struct xdir *d;
	struct xname nm;
	int k, err;

	if (FK_VEC_RESERVE(op->dirs, op->cap_dirs, op->ndirs + 1) ||
	    !(d = calloc(1, sizeof(*d))))
		return -ENOMEM;
	memset(d->bucket, 0xff, sizeof(d->bucket));
	op->dirs[op->ndirs++] = d; /* freed with the run from here on */
	d->is_new = 1;
	d->parent = pd;
	/* Its zeroed cluster in pages mapped as its entries are written:
	 * a dry run's 128 KiB cluster was cleared whole for one entry. */
	if (!(d->path = strndup(path, path_len)) ||
	    !(d->clus = malloc(sizeof(*d->clus))) ||
	    !(d->buf = fk_bigmem_alloc_sparse(1, g->clus_len)))
		return -ENOMEM;
	d->buf_mapped = g->clus_len; /* how xp_dir_free() frees it */
	if (!(d->is_dirty = calloc(g->clus_secs, 1)))
		return -ENOMEM;
	if ((err = fk_alloc_plan(op->alloc, 0, 1, 0, &d->growth, diag)))
		return err;
	d->clus[0] = d->growth.runs[0].first;
	d->nclus = 1;
	d->cap_clus = 1;
	d->nents = g->clus_len / FK_EXFAT_ENT_LEN;
	d->is_nfc = 1;
	d->s.first_clus = d->clus[0];
	d->s.data_len = g->clus_len;
	d->s.is_no_fat_chain = 1;
	memset(&nm, 0, sizeof(nm));
	nm.len = len16;
	nm.nents = 2 + fk_exfat_name_nents(len16);
	nm.attr = FK_ATTR_DIR;
	nm.tag = NO_TAG;
	nm.s = d->s;
	nm.valid_len = g->clus_len;
	if ((err = xp_take_slots(op, pd, nm.nents, &nm.idx, diag)))
		return err;
	if (!(nm.name16 = calloc(len16 + 1, sizeof(uint16_t))))
		return -ENOMEM;
	memcpy(nm.name16, name16, len16 * sizeof(uint16_t));
	if ((k = xp_name_push(pd, &nm)) < 0) {
		free(nm.name16);
		return k;
	}
	*i = (uint32_t)k;
	d->parent_name = *i;
	xp_name_index(op, pd, *i);
	return 0;
}

/* The first @dir_len bytes of @path (0: the root, "/") into @where. */
static void dir_path(char *where, size_t cap, const char *path, size_t dir_len)
{
	if (dir_len >= cap)
		dir_len = cap - 1;
	memcpy(where, dir_len ? path : "/", dir_len ? dir_len : 1);
	where[dir_len ? dir_len : 1] = '\0';
}

/*
 * xp_dir_get() for the directory of the first @dir_len bytes of @path (0:
 * the root): damage is named by the directory's own path, which the user
 * repairs, not by the file asked for.
 */
static int dir_get_named(struct xop *op, const struct fk_exfat_stream *s,
			 struct xdir *parent, uint32_t parent_name,
			 const char *path, size_t dir_len, struct xdir **dp,
			 struct fk_diag *diag)
{
	char where[FK_NAME_MAX * 2];
	int err;

	dir_path(where, sizeof(where), path, dir_len);
	err = xp_dir_get(op, s, parent, parent_name, where, dp, diag);
	if (err == FK_ECORRUPT)
		fk_diag_set(diag, where, NULL);
	return err;
}

int xp_resolve_parent(struct xop *op, const char *path, struct xdir **dp,
		      uint16_t *leaf, uint32_t *leaf_len, int *is_dir_form,
		      struct fk_diag *diag)
{
	char comp[FK_NAME_MAX];
	uint16_t name16[FK_EXFAT_NAME_MAX + 1];
	const char *p = path, *next, *start;
	struct fk_exfat_stream cur, *at = NULL;
	struct xdir *parent = NULL;
	uint32_t len16, i, parent_name = 0;
	size_t len, dir_len = 0;
	int err;

	if (*p != '/')
		return -EINVAL;
	for (;;) {
		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		for (next = p + len; *next == '/'; next++)
			;
		if ((err = dir_get_named(op, at, at ? parent : NULL,
					 parent_name, path, dir_len, dp, diag)))
			return err;
		if (!*next)
			break;
		if (len >= sizeof(comp))
			return -ENAMETOOLONG;
		memcpy(comp, p, len);
		comp[len] = '\0';
		start = p;
		p = next;
		if (!strcmp(comp, ".") || !strcmp(comp, ".."))
			return -EINVAL;
		if ((err = to_name16(comp, name16, &len16)))
			return err;
		i = xp_name_find(op, *dp, name16, len16);
		if (i == NO_TAG && !op->o->parents) {
			fk_diag_detail(diag, NULL,
				       "parent directory '%s' is missing; -p "
				       "creates it",
				       comp);
			return -ENOENT;
		}
		if (i == NO_TAG &&
		    (err = dir_create(op, *dp, name16, len16, path,
				      (size_t)(start - path) + len, &i, diag)))
			return err;
		dir_len = (size_t)(start - path) + len;
		if ((err = xp_judge_set(&(*dp)->names[i], diag))) {
			char where[FK_NAME_MAX * 2];

			dir_path(where, sizeof(where), path, dir_len);
			fk_diag_set(diag, where, NULL);
			return err;
		}
		if (!((*dp)->names[i].attr & FK_ATTR_DIR))
			return -ENOTDIR;
		cur = (*dp)->names[i].s;
		at = &cur;
		parent = *dp;
		parent_name = i;
	}
	len = strcspn(p, "/");
	*is_dir_form = p[len] == '/' || !len;
	*leaf_len = 0;
	if (!len)
		return 0;
	if (len >= sizeof(comp))
		return -ENAMETOOLONG;
	memcpy(comp, p, len);
	comp[len] = '\0';
	return to_name16(comp, leaf, leaf_len);
}

/* ---- planning ------------------------------------------------------------- */

/* Does the run change @fp's entry? */
int xp_is_changed(const struct xfile *fp)
{
	return fp->pf.is_new || fp->pf.add.nclus ||
	       fp->pf.size != fp->pf.old_size || fp->is_nfc != fp->was_nfc;
}

/*
 * Sizes and layout after the run.  Zeroing covers the old ValidDataLength
 * to the end of the last cluster, so the slack reads as zeros too (for a
 * reader that ignores ValidDataLength).
 */
void xp_settle(struct fk_prun *run)
{
	struct xop *op = run->fam_op;
	uint64_t clus_len = op->vol->g.clus_len;
	size_t i;

	for (i = 0; i < run->nfiles; i++) {
		struct xfile *fp = &op->files[i];
		struct fk_pfile *pf = &fp->pf;
		size_t nruns = pf->old.nruns + pf->add.nruns;

		pf->size = pf->want > pf->old_size ? pf->want : pf->old_size;
		if (pf->size == pf->old_size)
			fp->new_vdl = fp->old_vdl;
		else
			fp->new_vdl = op->o->lazy ? fp->old_vdl : pf->size;
		pf->valid_len = fp->new_vdl;
		/* One run (the last old one and the first new one merge when
		 * adjacent): NoFatChain, as long as the file had it. */
		if (pf->old.nruns && pf->add.nruns &&
		    pf->add.runs[0].first == fk_prun_tail(&pf->old) + 1)
			nruns--;
		fp->is_nfc = nruns <= 1 &&
			     (pf->is_new || fp->was_nfc || !pf->old.nclus);
		if (!pf->size)
			fp->is_nfc = 0;
		pf->is_changed = xp_is_changed(fp);
		pf->zero_from = fp->old_vdl;
		pf->zero_to = pf->size == pf->old_size
				      ? 0
				      : (pf->size + clus_len - 1) / clus_len *
						clus_len;
	}
}

/* ---- entry sets ----------------------------------------------------------- */

static void put_stamps(const struct xop *op, unsigned char *e, int is_new)
{
	if (is_new) {
		put_le32(e + FE_CTIME, op->stamp_ts);
		e[FE_CTIME_MS] = op->stamp_ms10;
		e[FE_CTIME_TZ] = op->stamp_tz;
	}
	put_le32(e + FE_MTIME, op->stamp_ts);
	e[FE_MTIME_MS] = op->stamp_ms10;
	e[FE_MTIME_TZ] = op->stamp_tz;
	put_le32(e + FE_ATIME, op->stamp_ts);
	e[FE_ATIME_TZ] = op->stamp_tz;
}

static void put_checksum(struct xdir *d, uint32_t idx, uint32_t nents)
{
	uint16_t sum = fk_exfat_set_checksum(
		(const unsigned char(*)[FK_EXFAT_ENT_LEN])xp_ent_at(d, idx),
		nents);

	put_le16(xp_ent_at(d, idx) + GEN_CHECKSUM, sum);
}

/*
 * A new set for @nm in @d's buffer: File, Stream Extension and File Name
 * entries, times and name hash; the stream's fields are the caller's.
 */
static void new_set(struct xop *op, struct xdir *d, const struct xname *nm)
{
	unsigned char *e = xp_ent_at(d, nm->idx), *se = e + FK_EXFAT_ENT_LEN;
	uint32_t k, u;

	memset(e, 0, (size_t)nm->nents * FK_EXFAT_ENT_LEN);
	e[0] = FK_EXFAT_T_FILE;
	e[GEN_COUNT] = (uint8_t)(nm->nents - 1);
	put_le16(e + FE_ATTR, nm->attr);
	se[0] = FK_EXFAT_T_STREAM;
	se[SE_NAME_LEN] = (uint8_t)nm->len;
	put_le16(se + SE_NAME_HASH,
		 fk_exfat_name_hash(fk_exfat_of(op->vol)->upcase, nm->name16,
				    nm->len));
	for (k = 2; k < nm->nents; k++) {
		unsigned char *fn = e + (size_t)k * FK_EXFAT_ENT_LEN;

		fn[0] = FK_EXFAT_T_NAME;
		for (u = 0; u < FN_UNITS; u++) {
			uint32_t at = (k - 2) * FN_UNITS + u;

			put_le16(fn + FN_NAME + 2 * u,
				 at < nm->len ? nm->name16[at] : 0);
		}
	}
	put_stamps(op, e, 1);
}

/* Write @fp's new or changed set into its directory's buffer. */
static void build_set(struct xop *op, struct xfile *fp)
{
	struct xdir *d = fp->d;
	struct xname *nm = &d->names[fp->name_i];
	unsigned char *e = xp_ent_at(d, nm->idx), *se = e + FK_EXFAT_ENT_LEN;
	uint32_t first = fp->pf.old.nruns   ? fp->pf.old.runs[0].first
			 : fp->pf.add.nruns ? fp->pf.add.runs[0].first
					    : 0;

	if (fp->pf.is_new) {
		new_set(op, d, nm);
	} else {
		put_le16(e + FE_ATTR,
			 (uint16_t)(get_le16(e + FE_ATTR) | FK_ATTR_ARCHIVE));
		put_stamps(op, e, 0);
	}
	se[SE_FLAGS] = (uint8_t)((se[SE_FLAGS] & ~FK_EXFAT_GSF_NO_FAT_CHAIN) |
				 FK_EXFAT_GSF_ALLOC_POSSIBLE |
				 (fp->is_nfc ? FK_EXFAT_GSF_NO_FAT_CHAIN : 0));
	put_le64(se + SE_VDL, fp->new_vdl);
	put_le32(se + SE_FIRST, first);
	put_le64(se + SE_LEN, fp->pf.size);
	put_checksum(d, nm->idx, nm->nents);
	xp_mark_dirty(op, d, nm->idx, nm->nents);
}

/* A grown subdirectory's entry: its new length and layout. */
static void build_dir_set(struct xop *op, struct xdir *d)
{
	struct xdir *pd = d->parent;
	struct xname *nm = &pd->names[d->parent_name];
	unsigned char *e = xp_ent_at(pd, nm->idx), *se = e + FK_EXFAT_ENT_LEN;
	uint64_t len = (uint64_t)d->nclus * op->vol->g.clus_len;

	if (d->is_new) {
		new_set(op, pd, nm);
		put_le32(se + SE_FIRST, d->clus[0]);
	} else {
		put_stamps(op, e, 0);
	}
	se[SE_FLAGS] = (uint8_t)((se[SE_FLAGS] & ~FK_EXFAT_GSF_NO_FAT_CHAIN) |
				 FK_EXFAT_GSF_ALLOC_POSSIBLE |
				 (d->is_nfc ? FK_EXFAT_GSF_NO_FAT_CHAIN : 0));
	put_le64(se + SE_VDL, len);
	put_le64(se + SE_LEN, len);
	put_checksum(pd, nm->idx, nm->nents);
	xp_mark_dirty(op, pd, nm->idx, nm->nents);
}

void xp_build_sets(struct xop *op)
{
	size_t i;

	for (i = 0; i < op->run->nfiles; i++)
		if (op->files[i].pf.is_changed)
			build_set(op, &op->files[i]);
	for (i = 0; i < op->ndirs; i++)
		if (op->dirs[i]->growth.nclus && op->dirs[i]->parent)
			build_dir_set(op, op->dirs[i]);
}

/* The device offset of sector @s of @d. */
static uint64_t sec_off(const struct xop *op, const struct xdir *d, uint32_t s)
{
	return xp_ent_off(op, d,
			  (uint32_t)((uint64_t)s * op->vol->g.sec_len /
				     FK_EXFAT_ENT_LEN));
}

/* Is sector @s of @d in a cluster the run adds (zeroed, nobody's)? */
static int is_fresh(const struct xop *op, const struct xdir *d, uint32_t s)
{
	uint32_t per_sec = op->vol->g.sec_len / FK_EXFAT_ENT_LEN;

	return s < d->nclus * op->vol->g.clus_secs &&
	       s >= d->disk_nents / per_sec;
}

/*
 * Dirty sectors of every directory, adjacent ones in one write.  In the
 * clusters the run adds a write is widened to whole pages (of a buffered
 * block device): their zeroing dropped them from the kernel's cache, and
 * a part-page write would make it read the page first, one more request
 * on a card.  Sectors of old clusters are written only when changed.
 */
int xp_write_dirs(struct xop *op)
{
	const struct fk_geom *g = &op->vol->g;
	size_t i;
	int err;

	for (i = 0; i < op->ndirs; i++) {
		struct xdir *d = op->dirs[i];
		uint32_t nsecs = d->nclus * g->clus_secs, s = 0;

		while (s < nsecs) {
			uint64_t off, len;
			uint32_t first = s;

			if (!d->is_dirty[s]) {
				s++;
				continue;
			}
			off = sec_off(op, d, s);
			len = g->sec_len;
			for (s++; s < nsecs && d->is_dirty[s] &&
				  sec_off(op, d, s) == off + len;
			     s++)
				len += g->sec_len;
			for (; off % PAGE_LEN && first &&
			       is_fresh(op, d, first - 1) &&
			       sec_off(op, d, first - 1) == off - g->sec_len;
			     first--) {
				off -= g->sec_len;
				len += g->sec_len;
			}
			for (; (off + len) % PAGE_LEN && is_fresh(op, d, s) &&
			       sec_off(op, d, s) == off + len;
			     s++)
				len += g->sec_len;
			if ((err = fk_device_write(op->vol->dev, off,
						   d->buf + (size_t)first *
								    g->sec_len,
						   (size_t)len)))
				return err;
			memset(d->is_dirty + first, 0, s - first);
		}
	}
	return 0;
}
