/*
 * exfat.c: the exFAT family's volume-level facts: the boot region read at
 * open (exfat-boot.c judges it field by field: Microsoft's exFAT
 * specification, section 3), the shared geometry derived from it, the
 * up-case table (7.2), the allocation bitmap (7.1) and streams as runs
 * of clusters (exfat-mount.c finds the root's special entries).  Damage
 * is recorded as defect bits, never acted on here: the checker reports
 * it, the listing paths refuse with one reason (an entry set's, as
 * exfat-dir.c finds them, worded here with the set's checksums).
 */
#include "exfat/exfat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-layout.h"
#include "io/device.h"
#include "lib/bigmem.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "volume/volume.h"

void fk_exfat_boot_geom(const struct fk_exfat_boot *b, struct fk_geom *g)
{
	memset(g, 0, sizeof(*g));
	strcpy(g->type_name, "exFAT");
	/* 32-bit entries, all of them the value: 0xFFFFFFFF alone ends a
	 * chain, 0xFFFFFFF8 to 0xFFFFFFFE are neither link nor end (spec
	 * 4.1). */
	g->ent_bits = 32;
	g->ent_mask = 0xffffffffu;
	g->ent_eoc = 0xffffffffu;
	g->sec_len = 1u << b->sec_shift;
	g->clus_secs = 1u << b->clus_shift;
	g->clus_len = g->sec_len * g->clus_secs;
	g->rsvd_secs = b->fat_off;
	g->nfats = b->nfats;
	g->fat_secs = b->fat_len;
	g->total_secs = b->vol_len;
	g->nclus = b->nclus;
	g->fat_off = (uint64_t)b->fat_off * g->sec_len;
	g->data_off = (uint64_t)b->heap_off * g->sec_len;
	g->root_off = g->data_off;
	g->root_clus = b->root_clus;
	g->is_root_chain = 1;
	g->active_fat = b->nfats == 2 ? (b->vol_flags & 1) : 0;
	g->is_mirrored = 0; /* TexFAT keeps the FATs apart */
	g->media = 0xF8;    /* FAT[0] holds F8FFFFFF (spec 4.1) */
	g->serial = b->serial;
	memcpy(g->oem, b->fs_name, 9);
}

/* Where the backup region starts: the sector size whose sector 12 holds
 * an exFAT boot sector that says it has that size. */
static int find_backup(struct fk_volume *vol, uint64_t dev_len,
		       unsigned char *bs, struct fk_diag *diag)
{
	unsigned shift;
	int err;

	for (shift = 9; shift <= 12; shift++) {
		uint64_t off = (uint64_t)FK_EXFAT_BACKUP_SEC << shift;

		if (off + 512 > dev_len)
			break;
		if ((err = fk_device_read(vol->dev, off, bs, 512)))
			return err;
		if (fk_exfat_detect(bs) && bs[EB_SEC_SHIFT] == shift)
			return 0;
	}
	fk_diag_set(diag, NULL, "no exFAT backup boot sector at sector 12");
	return FK_ECORRUPT;
}

/* The geometry from the backup region alone (is_backup_boot). */
static int read_backup(struct fk_volume *vol, uint64_t dev_len,
		       struct fk_diag *diag)
{
	struct fk_exfat *ex = fk_exfat_of(vol);
	unsigned char bs[512], *region;
	uint32_t sec_len;
	size_t len;
	int err;

	if ((err = find_backup(vol, dev_len, bs, diag)))
		return err;
	sec_len = 1u << bs[EB_SEC_SHIFT];
	len = (size_t)FK_EXFAT_REGION_SECS * sec_len;
	if (!(region = calloc(1, len)))
		return -ENOMEM;
	err = fk_device_read(vol->dev, (uint64_t)FK_EXFAT_BACKUP_SEC * sec_len,
			     region, len);
	if (!err)
		err = fk_exfat_boot_parse(region, len, dev_len, &ex->boot,
					  diag);
	if (!err && !(vol->boot = malloc(sec_len)))
		err = -ENOMEM;
	if (!err) {
		memcpy(vol->boot, region, sec_len);
		fk_exfat_boot_geom(&ex->boot, &vol->g);
		ex->is_backup_boot = 1;
	}
	free(region);
	return err;
}

size_t fk_exfat_head_len(const struct fk_volume_opts *opts)
{
	return (size_t)(opts->is_main_boot_only ? 1 : 2) *
	       FK_EXFAT_REGION_SECS * 512;
}

int fk_exfat_read_boot(struct fk_volume *vol, const unsigned char *first,
		       size_t head_len, const struct fk_volume_opts *opts,
		       struct fk_diag *diag)
{
	int is_backup = opts->is_backup_boot;
	int is_main_only = opts->is_main_boot_only;
	uint64_t dev_len = fk_device_len(vol->dev);
	struct fk_exfat *ex = calloc(1, sizeof(*ex));
	unsigned char *region = NULL;
	uint32_t sec_len;
	size_t len;
	int err;

	if (!ex)
		return -ENOMEM;
	vol->fam_priv = ex;
	if (is_backup)
		return read_backup(vol, dev_len, diag);
	/* The shift decides how much to read; judged again below. */
	if (first[EB_SEC_SHIFT] < 9 || first[EB_SEC_SHIFT] > 12)
		return fk_exfat_boot_parse(first, 512, dev_len, &ex->boot,
					   diag);
	sec_len = 1u << first[EB_SEC_SHIFT];
	len = (size_t)(is_main_only ? 1 : 2) * FK_EXFAT_REGION_SECS * sec_len;
	if (len > dev_len)
		len = (size_t)(dev_len / sec_len * sec_len);
	if (len < 512)
		len = 512;
	if (!(region = calloc(1, len)))
		return -ENOMEM;
	/* The opening read the start already: only what lies past it. */
	if (head_len > len)
		head_len = len;
	memcpy(region, first, head_len);
	if (len > head_len &&
	    (err = fk_device_read(vol->dev, head_len, region + head_len,
				  len - head_len)))
		goto out;
	/* A truncated dump a reader asked for: judged as if whole. */
	if ((err = fk_exfat_boot_parse(region, len,
				       vol->is_cut_ok ? 0 : dev_len, &ex->boot,
				       diag)))
		goto out;
	fk_exfat_boot_geom(&ex->boot, &vol->g);
	if (vol->g.total_secs > dev_len / vol->g.sec_len)
		vol->present_len = dev_len;
	if (!(vol->boot = malloc(sec_len))) {
		err = -ENOMEM;
		goto out;
	}
	memcpy(vol->boot, region, sec_len);
out:
	free(region);
	return err;
}

/* ---- clusters ------------------------------------------------------------- */

int fk_exfat_stream_walk(struct fk_volume *vol, const struct fk_exfat_stream *s,
			 int (*fn)(void *arg, const struct fk_run *run),
			 void *arg, struct fk_chain_info *info)
{
	const struct fk_geom *g = &vol->g;
	uint64_t need, room;
	struct fk_run run;

	if (!s->first_clus && s->data_len) {
		/* Not an empty stream, and never the root: damage. */
		memset(info, 0, sizeof(*info));
		info->end = FK_ENT_RANGE;
		info->is_no_first = 1;
		return 0;
	}
	if (!s->is_no_fat_chain || !s->first_clus)
		return fk_chain_walk(vol, s->first_clus, fn, arg, info);
	memset(info, 0, sizeof(*info));
	info->end_val = s->first_clus;
	need = fk_exfat_clus_needed(g, s->data_len);
	if (!fk_clus_valid(g, s->first_clus)) {
		info->end = FK_ENT_RANGE;
		return 0;
	}
	/* No FAT entry is read: they mean nothing for this stream (7.6.2). */
	room = (uint64_t)fk_clus_max(g) - s->first_clus + 1;
	run.first = s->first_clus;
	run.nclus = (uint32_t)(need < room ? need : room);
	info->end = need <= room ? FK_ENT_EOC : FK_ENT_RANGE;
	if (need > room)
		info->end_val = fk_clus_max(g) + 1;
	if (!run.nclus)
		return 0;
	info->nclus = run.nclus;
	info->nruns = 1;
	info->last = run.first + run.nclus - 1;
	return fn ? fn(arg, &run) : 0;
}

int fk_exfat_entry_alloc(const unsigned char *e, struct fk_exfat_stream *st)
{
	uint8_t flags = e[GEN_TYPE] & FK_EXFAT_SECONDARY ? e[GEN_SFLAGS]
							 : e[GEN_PFLAGS];

	st->first_clus = get_le32(e + GEN_FIRST);
	st->data_len = get_le64(e + GEN_LEN);
	st->is_no_fat_chain = !!(flags & FK_EXFAT_GSF_NO_FAT_CHAIN);
	return (flags & FK_EXFAT_GSF_ALLOC_POSSIBLE) &&
	       (st->first_clus || st->data_len);
}

/* One transfer through a stream: into @to, or (@to NULL) from @from. */
struct stream_io {
	struct fk_volume *vol;
	unsigned char *to;
	const unsigned char *from;
	uint64_t done, len;
	int is_zeroed; /* @to reads as zeros: holes need no read */
};

/*
 * @len bytes at @off into @buf, which already reads as zeros: the holes of
 * a sparse image are skipped.  A fresh card image's 1 MiB bitmap is mostly
 * hole, and reading one costs the kernel a zeroed page-cache page per
 * 4 KiB, and us the copy.
 */
static int read_sparse(struct fk_device *dev, uint64_t off, unsigned char *buf,
		       uint64_t len)
{
	uint64_t hole, data;
	int err;

	while (len) {
		if ((err = fk_device_extent(dev, off, len, &hole, &data)))
			return err;
		if (data && (err = fk_device_read(dev, off + hole, buf + hole,
						  (size_t)data)))
			return err;
		off += hole + data;
		buf += hole + data;
		len -= hole + data;
	}
	return 0;
}

static int io_run(void *arg, const struct fk_run *run)
{
	struct stream_io *io = arg;
	const struct fk_geom *g = &io->vol->g;
	uint64_t n = (uint64_t)run->nclus * g->clus_len;
	uint64_t off = fk_clus_off(g, run->first);
	int err;

	if (n > io->len - io->done)
		n = io->len - io->done;
	if (!n)
		return 1; /* all done: stop the walk */
	if (io->to && io->is_zeroed)
		err = read_sparse(io->vol->dev, off, io->to + io->done, n);
	else if (io->to)
		err = fk_device_read(io->vol->dev, off, io->to + io->done,
				     (size_t)n);
	else
		err = fk_device_write(io->vol->dev, off, io->from + io->done,
				      (size_t)n);
	if (err)
		return err;
	io->done += n;
	return io->done == io->len ? 1 : 0; /* 1: all done, stop the walk */
}

static int stream_io(struct stream_io *io, const struct fk_exfat_stream *s,
		     struct fk_diag *diag)
{
	struct fk_chain_info info;
	uint64_t len = io->len;
	int err;

	if (!len)
		return 0;
	if ((err = fk_exfat_stream_walk(io->vol, s, io_run, io, &info)) < 0)
		return err;
	if (io->done == len)
		return 0;
	if (info.end != FK_ENT_EOC)
		return fk_chain_error(&info, diag);
	fk_diag_set(diag, NULL,
		    "cluster chain of %" PRIu32 " clusters is shorter than its "
		    "%" PRIu64 " bytes",
		    info.nclus, len);
	return FK_ECORRUPT;
}

int fk_exfat_stream_read(struct fk_volume *vol, const struct fk_exfat_stream *s,
			 void *buf, uint64_t len, struct fk_diag *diag)
{
	struct stream_io io = {vol, buf, NULL, 0, len, 0};

	return stream_io(&io, s, diag);
}

/* fk_exfat_stream_read() into @buf that reads as zeros already. */
static int read_stream_sparse(struct fk_volume *vol,
			      const struct fk_exfat_stream *s, void *buf,
			      uint64_t len, struct fk_diag *diag)
{
	struct stream_io io = {vol, buf, NULL, 0, len, 1};

	return stream_io(&io, s, diag);
}

int fk_exfat_stream_write(struct fk_volume *vol,
			  const struct fk_exfat_stream *s, const void *buf,
			  uint64_t len, struct fk_diag *diag)
{
	struct stream_io io = {vol, NULL, buf, 0, len, 0};

	return stream_io(&io, s, diag);
}

/* ---- up-case table -------------------------------------------------------- */

uint32_t fk_exfat_upcase_checksum(const unsigned char *raw, size_t len)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i < len; i++)
		sum = fk_exfat_ror32_add(sum, raw[i]);
	return sum;
}

void fk_exfat_upcase_identity(struct fk_exfat_upcase *up)
{
	memset(up->idx, 0, sizeof(up->idx));
	up->npool = 1;
}

void fk_exfat_upcase_clear(struct fk_exfat_upcase *up)
{
	fk_exfat_upcase_identity(up);
	up->csum_stored = 0;
	up->csum_computed = 0;
	up->raw_len = 0;
	up->first_clus = 0;
	up->defects = 0;
	up->is_compressed = 0;
	up->nbad_ascii = 0;
	up->is_fallback = 0;
}

/* fk_exfat_upcase_put(), inlined into the expansion of a table (a few
 * thousand units at every open). */
static inline void put_unit(struct fk_exfat_upcase *up, uint16_t c, uint16_t v)
{
	unsigned pg = c >> 8;

	if (!up->idx[pg]) {
		if (v == c)
			return;
		if (!up->npool)
			up->npool = 1; /* a zeroed table: pool[0] stays 0 */
		/* at most 256 pages besides pool[0]: always room */
		up->idx[pg] = (uint16_t)up->npool++;
		memset(up->pool[up->idx[pg]], 0, sizeof(up->pool[0]));
	}
	up->pool[up->idx[pg]][c & 0xFF] = (uint16_t)(v - c);
}

void fk_exfat_upcase_put(struct fk_exfat_upcase *up, uint16_t c, uint16_t v)
{
	put_unit(up, c, v);
}

void fk_exfat_upcase_expand(const unsigned char *raw, size_t len,
			    struct fk_exfat_upcase *up)
{
	uint32_t at = 0;
	size_t k;

	fk_exfat_upcase_identity(up);
	up->nbad_ascii = 0;
	/* Spec 7.2.1: 0xFFFF then a count maps that many units to
	 * themselves; any other unit is the up-case of the next index. */
	for (k = 0; k + 1 < len && at < 65536; k += 2) {
		uint16_t v = (uint16_t)get_le16(raw + k);

		if (v == 0xFFFF && k + 3 < len) {
			uint32_t skip = get_le16(raw + k + 2);

			up->is_compressed = 1;
			if (at + skip > 65536)
				up->defects |= FK_EXU_COMPRESS;
			at += skip;
			k += 2;
			continue;
		}
		if (at < 128 && v != fk_exfat_upcase_ascii(at))
			up->nbad_ascii++;
		put_unit(up, (uint16_t)at++, v);
	}
}

void fk_exfat_upcase_fallback(struct fk_exfat_upcase *up)
{
	uint16_t c;

	fk_exfat_upcase_identity(up);
	for (c = 'a'; c <= 'z'; c++)
		fk_exfat_upcase_put(up, c, (uint16_t)(c - 32));
	up->nbad_ascii = 0;
	up->is_fallback = 1;
}

int fk_exfat_upcase_maps_ascii(const struct fk_exfat_upcase *up)
{
	return !up->nbad_ascii;
}

/* One byte into a SetChecksum or NameHash: rotate right by one, add. */
static uint16_t csum_step(uint16_t sum, unsigned char b)
{
	return (uint16_t)((uint16_t)(sum >> 1 | sum << 15) + b);
}

/* Four bytes into a SetChecksum. */
static inline uint16_t csum_4(uint16_t sum, const unsigned char *p)
{
	return csum_step(csum_step(csum_step(csum_step(sum, p[0]), p[1]), p[2]),
			 p[3]);
}

/* Up-cased unit @c into a NameHash (spec 7.6.4: low byte first). */
static inline uint16_t hash_unit(uint16_t h, uint16_t c)
{
	return csum_step(csum_step(h, (unsigned char)c),
			 (unsigned char)(c >> 8));
}

uint16_t fk_exfat_name_hash(const struct fk_exfat_upcase *up,
			    const uint16_t *name, uint32_t n)
{
	uint16_t hash = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		hash = hash_unit(hash, fk_exfat_upcase(up, name[i]));
	return hash;
}

uint16_t fk_exfat_set_checksum(const unsigned char (*raw)[FK_EXFAT_ENT_LEN],
			       uint32_t nents)
{
	const unsigned char *p = raw[0];
	const unsigned char *end = p + (size_t)nents * FK_EXFAT_ENT_LEN;
	uint16_t sum;

	if (!nents)
		return 0;
	/* Spec 6.3.3: every byte but the checksum field itself (bytes 2
	 * and 3 of the primary); the entries lie end to end, so what
	 * follows is a whole number of 4-byte steps. */
	sum = csum_step(csum_step(0, p[0]), p[1]);
	for (p += 4; p < end; p += 4)
		sum = csum_4(sum, p);
	return sum;
}

/* fk_exfat_upcase() with the first page's map @pg0 at hand: most names
 * are Latin-1 (one look-up, not two). */
static inline uint16_t upcase_unit(const struct fk_exfat_upcase *up,
				   const uint16_t *pg0, uint16_t u)
{
	return u < 256 ? (uint16_t)(u + pg0[u]) : fk_exfat_upcase(up, u);
}

void fk_exfat_set_sums(const unsigned char (*raw)[FK_EXFAT_ENT_LEN],
		       uint32_t nents, const struct fk_exfat_upcase *up,
		       const uint16_t *name, uint32_t n, uint16_t *upname,
		       uint16_t *csum, uint16_t *hash)
{
	const unsigned char *p = raw[0];
	const unsigned char *end = p + (size_t)nents * FK_EXFAT_ENT_LEN;
	const uint16_t *pg0 = up->pool[up->idx[0]];
	uint16_t sum = 0, h = 0, c, d;
	uint32_t i = 0;

	if (nents) {
		sum = csum_step(csum_step(0, p[0]), p[1]);
		p += 4; /* past the checksum field: 4-byte steps from here */
	}
	/* Four bytes of the set and two units of the name a round, in step;
	 * the rest of either after. */
	for (; p < end && n - i >= 2; p += 4, i += 2) {
		c = upcase_unit(up, pg0, name[i]);
		d = upcase_unit(up, pg0, name[i + 1]);
		upname[i] = c;
		upname[i + 1] = d;
		sum = csum_4(sum, p);
		h = hash_unit(hash_unit(h, c), d);
	}
	for (; p < end; p += 4)
		sum = csum_4(sum, p);
	for (; i < n; i++) {
		c = upcase_unit(up, pg0, name[i]);
		upname[i] = c;
		h = hash_unit(h, c);
	}
	*csum = sum;
	*hash = h;
}

/* What each defect bit of a set is called, in the order judged. */
static const struct {
	uint32_t bit;
	const char *why;
} set_reasons[] = {
	{FK_EXS_TRUNCATED, "entry set is cut short (SecondaryCount says more)"},
	{FK_EXS_TYPE, "an entry's type byte is damaged (the SetChecksum "
		      "verifies with the type expected there)"},
	{FK_EXS_COUNT, "entry set's SecondaryCount is too small"},
	{FK_EXS_NO_STREAM, "file entry has no stream extension"},
	{FK_EXS_NAME_ENTRY, "file name entries are missing or out of place"},
	{FK_EXS_CHECKSUM, "entry set checksum mismatch"},
	{FK_EXS_HASH, "name hash mismatch"},
	{FK_EXS_NAME_LEN, "file name is empty"},
	{FK_EXS_NAME_CHARS, "file name holds a forbidden character"},
	{FK_EXS_VDL, "ValidDataLength exceeds DataLength (on a "
		     "directory: differs from it)"},
	{FK_EXS_CRITICAL, "unknown critical entry"},
	{FK_EXS_NO_FIRST, "first cluster 0 with a non-zero length"},
	{FK_EXS_ALLOC, "first cluster and AllocationPossible disagree"},
	{FK_EXS_BIG_DIR, "directory length is 0, not whole clusters, or over "
			 "256 MiB"},
	{FK_EXS_CROSSES_END, "entry set after the end marker"},
	{FK_EXS_ROOT_ONLY, "root-only entry outside the root"},
	{FK_EXS_BAD_SPECIAL, "volume label is over 11 characters"},
};

const char *fk_exfat_set_reason(uint32_t defects)
{
	size_t i;

	for (i = 0; i < sizeof(set_reasons) / sizeof(set_reasons[0]); i++)
		if (defects & set_reasons[i].bit)
			return set_reasons[i].why;
	return "";
}

const char *fk_exfat_set_damage(const struct fk_exfat_set *set)
{
	if (set->kind == FK_EXK_ORPHAN)
		return "secondary entries without a file entry";
	if (set->kind == FK_EXK_CRITICAL)
		return "unknown critical entry";
	if (set->defects & FK_EXFAT_SET_DAMAGED)
		return fk_exfat_set_reason(set->defects & FK_EXFAT_SET_DAMAGED);
	return NULL;
}

int fk_exfat_name_cmp(const struct fk_exfat_upcase *up, const uint16_t *a,
		      uint32_t alen, const uint16_t *b, uint32_t blen)
{
	uint32_t i;

	if (alen != blen)
		return alen < blen ? -1 : 1;
	for (i = 0; i < alen; i++) {
		uint16_t x = fk_exfat_upcase(up, a[i]);
		uint16_t y = fk_exfat_upcase(up, b[i]);

		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

unsigned fk_exfat_percent(uint32_t nused, uint32_t nclus)
{
	return nclus ? (unsigned)((uint64_t)nused * 100 / nclus) : 0;
}

/* ---- allocation bitmap ---------------------------------------------------- */

int fk_exfat_bitmap_load(struct fk_volume *vol, uint32_t first_clus,
			 uint64_t data_len, struct fk_exfat_bitmap *out,
			 struct fk_diag *diag)
{
	const struct fk_geom *g = &vol->g;
	uint64_t need = fk_exfat_bitmap_len(g->nclus), len;
	size_t nwords = ((size_t)g->nclus + 63) / 64, i;
	struct fk_exfat_stream s = {first_clus, 0, 0};
	struct fk_exfat_bitmap bm;
	unsigned char *bytes;
	int err;

	memset(&bm, 0, sizeof(bm));
	bm.nclus = g->nclus;
	bm.first_clus = first_clus;
	bm.data_len = data_len;
	if (!fk_clus_valid(g, first_clus)) {
		fk_diag_set(diag, NULL,
			    "allocation bitmap cluster %" PRIu32
			    " is out of range",
			    first_clus);
		return FK_ECORRUPT;
	}
	len = data_len < need ? data_len : need;
	s.data_len = len;
	/* bigmem: a 1 MiB bitmap in 4 KiB page faults costs more than its
	 * read; and the allocator takes these words over as its map. */
	if (!(bm.bits = fk_bigmem_alloc(fk_exfat_bitmap_words(g->nclus),
					sizeof(*bm.bits))))
		return -ENOMEM;
	/* The words' bytes, little-endian as on disk, then put in order. */
	bytes = (unsigned char *)bm.bits;
	if ((err = read_stream_sparse(vol, &s, bytes, len, diag))) {
		fk_exfat_bitmap_free(&bm);
		return err;
	}
	/* Already in order where the host is little-endian. */
	for (i = 0; __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ && i < nwords;
	     i++)
		bm.bits[i] = get_le64(bytes + i * 8);
	if (g->nclus % 64) {
		uint64_t tail = ~(uint64_t)0 << (g->nclus % 64);

		bm.is_tail_set = !!(bm.bits[nwords - 1] & tail);
		bm.bits[nwords - 1] &= ~tail;
	}
	*out = bm; /* not counted: the allocator counts as it takes them */
	return 0;
}

uint32_t fk_exfat_active_bitmap(const struct fk_volume *vol)
{
	const struct fk_exfat *ex = fk_exfat_of(vol);
	uint32_t i, n = ex->nbitmaps < 2 ? ex->nbitmaps : 2;

	if (vol->g.nfats < 2)
		return 0; /* a second entry is damage: the first is the one */
	for (i = 0; i < n; i++)
		if ((ex->bitmap_flags[i] & 1) == vol->g.active_fat)
			return i;
	return 0;
}

int fk_exfat_bitmap_load_active(struct fk_volume *vol,
				struct fk_exfat_bitmap *bm,
				struct fk_diag *diag)
{
	const struct fk_exfat *ex = fk_exfat_of(vol);
	uint32_t pick = fk_exfat_active_bitmap(vol);

	if (!ex->nbitmaps) {
		fk_diag_set(diag, NULL,
			    "the root has no allocation bitmap entry");
		fk_diag_hint(diag, FK_HINT_CHECK);
		return FK_ECORRUPT;
	}
	return fk_exfat_bitmap_load(vol, ex->bitmap_clus[pick],
				    ex->bitmap_len[pick], bm, diag);
}

void fk_exfat_bitmap_free(struct fk_exfat_bitmap *bm)
{
	if (!bm)
		return;
	fk_bigmem_free(bm->bits, fk_exfat_bitmap_words(bm->nclus),
		       sizeof(*bm->bits));
	bm->bits = NULL;
}

uint32_t fk_exfat_bitmap_count(const struct fk_exfat_bitmap *bm, uint32_t first,
			       uint32_t n)
{
	uint64_t i, end;
	uint32_t count = 0;

	if (first < 2)
		first = 2;
	i = first - 2;
	end = i + n < bm->nclus ? i + n : bm->nclus;
	while (i < end) {
		uint64_t w = bm->bits[i / 64] >> (i % 64);
		uint64_t m = 64 - i % 64;

		if (m > end - i) {
			w &= ((uint64_t)1 << (end - i)) - 1;
			m = end - i;
		}
		/* Without -mpopcnt each count is a libgcc call: the common
		 * all-clear and all-set words need none. */
		if (w == ~(uint64_t)0)
			count += 64;
		else if (w)
			count += (uint32_t)__builtin_popcountll(w);
		i += m;
	}
	return count;
}
