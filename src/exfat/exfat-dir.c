/*
 * exfat-dir.c: exFAT directories.  The entry-set iterator (Microsoft's
 * exFAT specification, sections 6 and 7.4 - 7.7) reads a directory a
 * cluster at a time along its FAT chain or its NoFatChain run, assembles
 * each primary entry with its secondaries, and records every defect as a
 * bit, stored and computed values side by side.  The family table at the
 * end turns sets into struct fk_dirent for the shared listing and lookup
 * code, refusing the damage a listing cannot read past.
 */
#include "exfat/exfat.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-layout.h"
#include "iface/dirent.h"
#include "io/device.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "lib/names.h"
#include "table/fat.h"
#include "volume/family.h"
#include "volume/volume.h"

#define TZ_VALID 0x80

#define FIRST_PIECE	(8u << 10) /* bytes of a cluster a lister reads first */
#define ROOT_PIECE	(4u << 10) /* the same for the root */
#define MAX_FIRST_PIECE (32u << 10) /* most fk_exfat_dir_set_first_piece() */

struct fk_exfat_dir {
	struct fk_volume *vol;
	struct fk_exfat_stream s;
	uint64_t max_clus;  /* clusters the stream may span */
	uint32_t limit;	    /* fk_exfat_dir_set_limit(); 0: none */
	unsigned char *buf; /* one cluster, or its first bytes (piece) */
	uint32_t buf_cap;   /* bytes buf holds: the longest piece so far */
	uint64_t buf_off;   /* volume offset of the buffer */
	uint32_t clus_done; /* bytes of the cluster read so far */
	uint32_t piece;	    /* bytes the next read of a cluster takes */
	uint32_t buf_ents;  /* entries in the buffer */
	uint32_t pos;	    /* next entry in the buffer */
	uint32_t clus;	    /* cluster in the buffer */
	uint32_t idx;	    /* index in the directory of the next entry */
	struct fk_loop_check loop;
	int is_done, is_root, seen_end, keep_going;
	struct fk_exfat_dir_stats stats;
};

int fk_exfat_dir_open(struct fk_volume *vol, const struct fk_exfat_stream *s,
		      struct fk_exfat_dir **out)
{
	const struct fk_geom *g = &vol->g;
	struct fk_exfat_dir *dir = calloc(1, sizeof(*dir));

	if (!dir)
		return -ENOMEM;
	dir->vol = vol;
	if (s) {
		dir->s = *s;
	} else {
		dir->s.first_clus = g->root_clus;
	}
	dir->is_root = dir->s.first_clus == g->root_clus;
	/* The root has no length: its chain ends it, within the 256 MiB
	 * any directory may take (6.2.1), which also bounds a loop. */
	dir->max_clus = dir->s.data_len
				? fk_exfat_clus_needed(g, dir->s.data_len)
				: FK_EXFAT_DIR_MAX_LEN / g->clus_len;
	/* No directory has more distinct clusters than the volume. */
	if (dir->max_clus > g->nclus)
		dir->max_clus = g->nclus;
	if (!dir->max_clus)
		dir->max_clus = 1;
	fk_loop_check_init(&dir->loop, dir->s.first_clus);
	dir->piece = fk_exfat_dir_first_piece(dir->is_root);
	if (!dir->s.first_clus)
		dir->is_done = 1;
	*out = dir;
	return 0;
}

void fk_exfat_dir_close(struct fk_exfat_dir *dir)
{
	if (!dir)
		return;
	free(dir->buf);
	free(dir);
}

void fk_exfat_dir_keep_going(struct fk_exfat_dir *dir)
{
	dir->keep_going = 1;
}

void fk_exfat_dir_set_limit(struct fk_exfat_dir *dir, uint32_t nclus)
{
	dir->limit = nclus;
}

uint32_t fk_exfat_dir_first_piece(int is_root)
{
	/* A card's root holds a few folders (DCIM, MISC) and the special
	 * entries: a page.  The open reads it first, and every later
	 * reader reads the same pieces again from the page cache. */
	return is_root ? ROOT_PIECE : FIRST_PIECE;
}

void fk_exfat_dir_set_first_piece(struct fk_exfat_dir *dir, uint32_t len)
{
	uint32_t max = dir->vol->g.clus_len;

	if (max > MAX_FIRST_PIECE)
		max = MAX_FIRST_PIECE;
	len = len > max ? max : (len + 4095) / 4096 * 4096;
	if (len > dir->piece)
		dir->piece = len;
}

int fk_exfat_dir_mark(const struct fk_exfat_dir *dir,
		      struct fk_exfat_dir_mark *m)
{
	const struct fk_geom *g = &dir->vol->g;
	uint32_t off;

	if (!dir->seen_end || dir->keep_going)
		return 0;
	off = (uint32_t)(dir->stats.end_off - fk_clus_off(g, dir->clus)) +
	      FK_EXFAT_ENT_LEN;
	/* The marker ends the cluster and the walk could take no more. */
	if (off == g->clus_len &&
	    ((dir->limit && dir->stats.nclus >= dir->limit) ||
	     dir->stats.nclus >= dir->max_clus))
		return 0;
	m->clus = dir->clus;
	m->nclus = dir->stats.nclus;
	m->next_off = off;
	m->next_ent = dir->stats.end_ent + 1;
	return 1;
}

void fk_exfat_dir_resume(struct fk_exfat_dir *dir,
			 const struct fk_exfat_dir_mark *m)
{
	dir->keep_going = 1;
	dir->seen_end = 1;
	dir->is_done = 0;
	dir->clus = m->clus;
	dir->clus_done = m->next_off;
	dir->buf_ents = dir->pos = 0;
	dir->idx = m->next_ent;
	dir->stats.nents = m->next_ent;
	dir->stats.end_ent = m->next_ent - 1;
	dir->stats.end_off = fk_clus_off(&dir->vol->g, m->clus) + m->next_off -
			     FK_EXFAT_ENT_LEN;
	dir->stats.nclus = m->nclus;
	dir->stats.chain.nclus = m->nclus;
	dir->stats.chain.last = m->clus;
	/* Brent's check starts afresh at the mark (the limit bounds the
	 * walk in any case). */
	fk_loop_check_init(&dir->loop, m->clus);
}

const struct fk_exfat_dir_stats *
fk_exfat_dir_stats(const struct fk_exfat_dir *dir)
{
	return &dir->stats;
}

static int chain_break(struct fk_exfat_dir *dir, enum fk_ent_class end,
		       uint32_t val, struct fk_diag *diag)
{
	dir->stats.chain.end = end;
	dir->stats.chain.end_val = val;
	fk_diag_set(diag, NULL,
		    "directory chain breaks after cluster %" PRIu32
		    " (entry 0x%" PRIx32 ")",
		    dir->clus, val);
	return FK_ECORRUPT;
}

/*
 * Read the next piece of the cluster in the buffer: a lister stops at the
 * end marker, which a directory of a few hundred files has in its first
 * 32 KiB, so the rest of a 128 KiB cluster is not read on its account (on
 * a card, bytes cost time).  Pieces double, so a long directory costs few
 * reads more; a checker that looks past the end marker reads whole
 * clusters.
 */
static int load_piece(struct fk_exfat_dir *dir)
{
	const struct fk_geom *g = &dir->vol->g;
	uint32_t len = g->clus_len - dir->clus_done;
	int err;

	if (!dir->keep_going && dir->piece < len)
		len = dir->piece;
	if (len > dir->buf_cap) {
		/* The buffer grows with the pieces: a card's root is one
		 * page, where a whole 128 KiB cluster was a fresh mapping
		 * (its system calls and faults) at every open. */
		free(dir->buf);
		if (!(dir->buf = malloc(len))) {
			dir->buf_cap = dir->buf_ents = dir->pos = 0;
			return -ENOMEM;
		}
		dir->buf_cap = len;
	}
	dir->buf_off = fk_clus_off(g, dir->clus) + dir->clus_done;
	if ((err = fk_device_read(dir->vol->dev, dir->buf_off, dir->buf, len)))
		return err;
	dir->clus_done += len;
	if (dir->piece < g->clus_len)
		dir->piece *= 2;
	dir->buf_ents = len / FK_EXFAT_ENT_LEN;
	dir->pos = 0;
	return 0;
}

/* Load the next cluster; sets is_done at the directory's end. */
static int load(struct fk_exfat_dir *dir, struct fk_diag *diag)
{
	struct fk_volume *vol = dir->vol;
	const struct fk_geom *g = &vol->g;
	uint32_t clus, val;
	int err;

	if (dir->stats.nclus && dir->clus_done < g->clus_len)
		return load_piece(dir);
	if ((dir->limit && dir->stats.nclus == dir->limit) ||
	    (dir->s.data_len && dir->stats.nclus == dir->max_clus)) {
		dir->is_done = 1;
		return 0;
	}
	if (!dir->stats.nclus) {
		clus = dir->s.first_clus;
	} else if (dir->s.is_no_fat_chain) {
		clus = dir->clus + 1; /* its FAT entries mean nothing */
	} else {
		enum fk_ent_class c;

		if ((err = fk_fat_get(vol, dir->clus, &val)))
			return err;
		c = fk_fat_class(g, val);
		if (c == FK_ENT_EOC) {
			dir->stats.chain.end = FK_ENT_EOC;
			dir->is_done = 1;
			return 0;
		}
		if (c != FK_ENT_NEXT)
			return chain_break(dir, c, val, diag);
		clus = val;
		/* A loop is one error after about 2 (mu + lam) clusters,
		 * not a read of 256 MiB of the same few clusters. */
		if (fk_loop_check_step(&dir->loop, clus)) {
			dir->stats.chain.is_loop = 1;
			dir->stats.chain.end_val = clus;
			fk_diag_set(diag, NULL,
				    "directory chain loops: cluster %" PRIu32
				    " links back to %" PRIu32,
				    dir->clus, clus);
			return FK_ECORRUPT;
		}
	}
	if (dir->stats.nclus == dir->max_clus) {
		dir->stats.chain.end = FK_ENT_RANGE;
		fk_diag_set(diag, NULL,
			    "directory is longer than %" PRIu64
			    " clusters (%u MiB, or the volume)",
			    dir->max_clus, FK_EXFAT_DIR_MAX_LEN >> 20);
		return FK_ECORRUPT;
	}
	if (!fk_clus_valid(g, clus)) {
		dir->stats.chain.end = FK_ENT_RANGE;
		dir->stats.chain.end_val = clus;
		fk_diag_set(diag, NULL,
			    "directory cluster %" PRIu32 " is out of range",
			    clus);
		return FK_ECORRUPT;
	}
	dir->clus = clus;
	dir->clus_done = 0;
	if ((err = load_piece(dir)))
		return err;
	dir->stats.nclus++;
	dir->stats.chain.nclus = dir->stats.nclus;
	dir->stats.chain.last = clus;
	return 0;
}

/* Take the entry at dir->pos (one is buffered). */
static inline void take_ent(struct fk_exfat_dir *dir, const unsigned char **e,
			    uint64_t *off)
{
	*e = dir->buf + (size_t)dir->pos * FK_EXFAT_ENT_LEN;
	*off = dir->buf_off + (uint64_t)dir->pos * FK_EXFAT_ENT_LEN;
	dir->pos++;
	dir->idx++;
	dir->stats.nents++;
}

/* get_ent() once the buffer is used up: load the next cluster. */
static int get_ent_load(struct fk_exfat_dir *dir, const unsigned char **e,
			uint64_t *off, struct fk_diag *diag)
{
	int err;

	while (!dir->is_done && dir->pos == dir->buf_ents)
		if ((err = load(dir, diag)))
			return err;
	if (dir->is_done)
		return 0;
	take_ent(dir, e, off);
	return 1;
}

/*
 * The next raw entry, in the cluster buffer until the next call: 1, 0 at
 * the directory's end, or an error.  Inline: a few loads on every entry,
 * a call once a cluster.
 */
static inline int get_ent(struct fk_exfat_dir *dir, const unsigned char **e,
			  uint64_t *off, struct fk_diag *diag)
{
	if (__builtin_expect(dir->pos == dir->buf_ents || dir->is_done, 0))
		return get_ent_load(dir, e, off, diag);
	take_ent(dir, e, off);
	return 1;
}

/* Give back the entry get_ent() just returned: it is still buffered. */
static void unget_ent(struct fk_exfat_dir *dir)
{
	dir->pos--;
	dir->idx--;
	dir->stats.nents--;
}

static int is_secondary(const unsigned char *e)
{
	return (e[0] & (FK_EXFAT_IN_USE | FK_EXFAT_SECONDARY)) ==
	       (FK_EXFAT_IN_USE | FK_EXFAT_SECONDARY);
}

static inline void get_time(const unsigned char *e, unsigned ts_off, int ms_off,
			    unsigned tz_off, struct fk_exfat_time *t)
{
	uint32_t ts = get_le32(e + ts_off);
	uint8_t tz = e[tz_off];

	t->time = (uint16_t)(ts & 0xFFFF);
	t->date = (uint16_t)(ts >> 16);
	t->ms10 = ms_off >= 0 ? e[ms_off] : 0;
	t->has_utc_off = !!(tz & TZ_VALID);
	/* Seven bits, two's complement, in 15-minute steps (7.4.10). */
	t->utc_off = (int8_t)((tz & 0x7F) - ((tz & 0x40) << 1));
}

/* SetChecksum over the entries found. */
static void sum_set(struct fk_exfat_set *set)
{
	set->csum_computed = fk_exfat_set_checksum(
		(const unsigned char(*)[FK_EXFAT_ENT_LEN])set->raw, set->nents);
	if (set->csum_computed != set->csum_stored)
		set->defects |= FK_EXS_CHECKSUM;
}

/* A File set with a stream, once parse_file() read its secondaries
 * (@names name entries, @bad: a unit no name may hold, @is_ascii: the
 * UTF-8 name is gathered but for its end): the name entries
 * against the stream's NameLength, the checksum and the name hash, and
 * the stream's lengths and clusters. */
static void judge_file(struct fk_exfat_dir *dir, struct fk_exfat_set *set,
		       uint32_t names, int bad, int is_ascii)
{
	const struct fk_exfat_upcase *up =
		fk_exfat_of(dir->vol) ? fk_exfat_of(dir->vol)->upcase : NULL;
	uint32_t need;

	need = fk_exfat_name_nents(set->name_len);
	if (!set->name_len)
		set->defects |= FK_EXS_NAME_LEN;
	if ((uint32_t)set->sec_count < 1 + need)
		set->defects |= FK_EXS_COUNT;
	if (names != need || set->name16_len < set->name_len)
		set->defects |= FK_EXS_NAME_ENTRY;
	if (bad)
		set->defects |= FK_EXS_NAME_CHARS;
	if (is_ascii) /* gather_units() copied it */
		set->name[set->name16_len] = '\0';
	else
		fk_utf16_to_utf8(set->name16, set->name16_len, set->name,
				 sizeof(set->name));
	if (up) {
		fk_exfat_set_sums(
			(const unsigned char(*)[FK_EXFAT_ENT_LEN])set->raw,
			set->nents, up, set->name16, set->name16_len,
			set->name_up, &set->csum_computed, &set->hash_computed);
		set->has_name_up = 1;
		if (set->csum_computed != set->csum_stored)
			set->defects |= FK_EXS_CHECKSUM;
		if (set->hash_computed != set->hash_stored)
			set->defects |= FK_EXS_HASH;
	} else {
		sum_set(set);
	}
	if (set->valid_len > set->data_len ||
	    ((set->attr & FK_ATTR_DIR) && set->valid_len != set->data_len))
		set->defects |= FK_EXS_VDL;
	if (!set->is_alloc_possible ? set->first_clus || set->data_len
				    : set->data_len && !set->first_clus)
		set->defects |= FK_EXS_ALLOC;
	if (set->data_len && !set->first_clus)
		set->defects |= FK_EXS_NO_FIRST;
	if ((set->attr & FK_ATTR_DIR) &&
	    !fk_exfat_is_dir_len(dir->vol->g.clus_len, set->data_len))
		set->defects |= FK_EXS_BIG_DIR;
}

/*
 * @take units of a File Name entry's @src onto the set's name, each judged
 * as it is gathered (*@bad: one no name may hold; *@wide: the units ORed,
 * so below 0x80 means all ASCII) and copied into the UTF-8 name too,
 * which is done when the name is ASCII (most are).
 */
static inline void gather_units(struct fk_exfat_set *set,
				const unsigned char *src, uint32_t take,
				int *bad, uint32_t *wide)
{
	uint16_t *u16 = set->name16 + set->name16_len;
	char *u8 = set->name + set->name16_len;
	uint32_t k, all = 0;
	int b = 0;

	for (k = 0; k < take; k++) {
		uint16_t u = (uint16_t)get_le16(src + 2 * k);

		u16[k] = u;
		u8[k] = (char)u;
		all |= u;
		b |= !fk_exfat_name_unit_ok(u);
	}
	set->name16_len += take;
	*bad |= b;
	*wide |= all;
}

/* The File set's secondaries, Stream Extension and names. */
static void parse_file(struct fk_exfat_dir *dir, struct fk_exfat_set *set)
{
	uint32_t i, names = 0, take, wide = 0;
	int has_stream = 0, bad = 0;

	set->attr = (uint16_t)get_le16(set->raw[0] + FE_ATTR);
	get_time(set->raw[0], FE_CTIME, FE_CTIME_MS, FE_CTIME_TZ, &set->ctime);
	get_time(set->raw[0], FE_MTIME, FE_MTIME_MS, FE_MTIME_TZ, &set->mtime);
	get_time(set->raw[0], FE_ATIME, -1, FE_ATIME_TZ, &set->atime);
	if (set->sec_count < 2)
		set->defects |= FK_EXS_COUNT;
	for (i = 1; i < set->nents; i++) {
		const unsigned char *e = set->raw[i];

		if (i == 1 && e[0] == FK_EXFAT_T_STREAM) {
			has_stream = 1;
			set->gsf = e[SE_FLAGS];
			set->is_alloc_possible =
				!!(e[SE_FLAGS] & FK_EXFAT_GSF_ALLOC_POSSIBLE);
			set->is_no_fat_chain =
				!!(e[SE_FLAGS] & FK_EXFAT_GSF_NO_FAT_CHAIN);
			set->name_len = e[SE_NAME_LEN];
			set->hash_stored = (uint16_t)get_le16(e + SE_NAME_HASH);
			set->valid_len = get_le32(e + SE_VDL) |
					 (uint64_t)get_le32(e + SE_VDL + 4)
						 << 32;
			set->first_clus = get_le32(e + SE_FIRST);
			set->data_len = get_le32(e + SE_LEN) |
					(uint64_t)get_le32(e + SE_LEN + 4)
						<< 32;
		} else if (e[0] == FK_EXFAT_T_NAME) {
			/* Names follow the stream, each in its place (7.7). */
			if (i != 2 + names || !has_stream)
				set->defects |= FK_EXS_NAME_ENTRY;
			take = set->name_len > set->name16_len
				       ? set->name_len - set->name16_len
				       : 0;
			if (take > FN_UNITS)
				take = FN_UNITS;
			gather_units(set, e + FN_NAME, take, &bad, &wide);
			names++;
		} else if (e[0] == FK_EXFAT_T_STREAM) {
			set->defects |= FK_EXS_NAME_ENTRY; /* a second one */
		} else if (e[0] & FK_EXFAT_BENIGN) {
			set->nbenign++;
		} else {
			set->ncritical++;
			set->defects |= FK_EXS_CRITICAL;
		}
	}
	set->name16[set->name16_len] = 0;
	if (!has_stream) {
		sum_set(set);
		set->defects |= FK_EXS_NO_STREAM;
		return;
	}
	judge_file(dir, set, names, bad, wide < 0x80);
}

/*
 * The fields from type to bitmap_flags, about 100 bytes, once per set: in
 * 32-byte pieces, which compilers store inline, where one memset of the
 * whole is a string instruction with a start-up cost of its own.
 */
static void clear_fields(struct fk_exfat_set *set)
{
	enum {
		FROM = offsetof(struct fk_exfat_set, type),
		LEN = offsetof(struct fk_exfat_set, bitmap_flags) - FROM,
	};
	unsigned char *p = (unsigned char *)set + FROM;
	size_t i;

	for (i = 0; i + 32 <= LEN; i += 32)
		memset(p + i, 0, 32);
	memset(p + i, 0, LEN % 32);
}

/*
 * The fields only special entries fill, from bitmap_flags to name16: a
 * file's set (most sets) does without clearing them.
 */
static void clear_special(struct fk_exfat_set *set)
{
	memset(&set->bitmap_flags, 0,
	       offsetof(struct fk_exfat_set, name16) -
		       offsetof(struct fk_exfat_set, bitmap_flags));
}

/* The fields of a special entry of the root (7.1 - 7.3, 7.5). */
static void parse_special(struct fk_exfat_set *set)
{
	const unsigned char *e = set->raw[0];
	uint32_t k;

	clear_special(set);
	switch (set->type) {
	case FK_EXFAT_T_BITMAP:
	case FK_EXFAT_T_UPCASE:
		set->bitmap_flags = e[BM_FLAGS];
		set->upcase_csum = get_le32(e + UC_CHECKSUM);
		set->first_clus = get_le32(e + SE_FIRST);
		set->data_len = get_le32(e + SE_LEN) |
				(uint64_t)get_le32(e + SE_LEN + 4) << 32;
		break;
	case FK_EXFAT_T_LABEL:
		set->label_len = e[VL_COUNT];
		if (set->label_len > 11)
			set->defects |= FK_EXS_BAD_SPECIAL;
		for (k = 0; k < 11; k++)
			set->label16[k] =
				(uint16_t)get_le16(e + VL_LABEL + 2 * k);
		fk_utf16_to_utf8(set->label16,
				 set->label_len > 11 ? 11 : set->label_len,
				 set->label, sizeof(set->label));
		break;
	case FK_EXFAT_T_GUID:
		memcpy(set->guid, e + GUID_VALUE, sizeof(set->guid));
		break;
	default:
		break;
	}
}

static enum fk_exfat_kind kind_of(uint8_t type)
{
	switch (type) {
	case FK_EXFAT_T_FILE:
		return FK_EXK_FILE;
	case FK_EXFAT_T_BITMAP:
		return FK_EXK_BITMAP;
	case FK_EXFAT_T_UPCASE:
		return FK_EXK_UPCASE;
	case FK_EXFAT_T_LABEL:
		return FK_EXK_LABEL;
	case FK_EXFAT_T_GUID:
		return FK_EXK_GUID;
	default:
		return type & FK_EXFAT_BENIGN ? FK_EXK_BENIGN : FK_EXK_CRITICAL;
	}
}

/* Primaries that follow the generic template: a count and a checksum. */
static int has_secondaries(uint8_t type)
{
	return type != FK_EXFAT_T_BITMAP && type != FK_EXFAT_T_UPCASE &&
	       type != FK_EXFAT_T_LABEL;
}

/*
 * A file set cut short at its secondary @i by the entry at dir->pos, not
 * an in-use secondary: is it one damaged type byte?  The SetChecksum
 * covers every byte of the set but the checksum itself, EntryType
 * included, so when the type expected there (a Stream Extension first, a
 * File Name after it) and the entries that follow in the buffer make the
 * checksum verify, the set is whole and only that byte is wrong: they are
 * taken with the type put back.  The rest of the set must already be in
 * the buffer (a set that runs on past it stays cut short: nothing read
 * ahead is given back), and an end marker is never taken for damage.
 * Returns 1 when taken.
 */
static int mend_type(struct fk_exfat_dir *dir, struct fk_exfat_set *set,
		     uint32_t i)
{
	const unsigned char *e = dir->buf + (size_t)dir->pos * FK_EXFAT_ENT_LEN;
	uint8_t want = i ? FK_EXFAT_T_NAME : FK_EXFAT_T_STREAM;
	uint32_t rest = set->sec_count - i, k, n = set->nents;
	uint64_t off = dir->buf_off + (uint64_t)dir->pos * FK_EXFAT_ENT_LEN;

	if (set->type != FK_EXFAT_T_FILE || e[0] == FK_EXFAT_T_END ||
	    dir->buf_ents - dir->pos < rest || n + rest > FK_EXFAT_SET_MAX)
		return 0;
	for (k = 1; k < rest; k++)
		if (!is_secondary(e + (size_t)k * FK_EXFAT_ENT_LEN))
			return 0;
	memcpy(set->raw[n], e, (size_t)rest * FK_EXFAT_ENT_LEN);
	set->raw[n][0] = want;
	if (fk_exfat_set_checksum(
		    (const unsigned char(*)[FK_EXFAT_ENT_LEN])set->raw,
		    n + rest) != set->csum_stored)
		return 0;
	set->defects |= FK_EXS_TYPE;
	set->mend_ent = (uint8_t)n;
	set->mend_type = e[0];
	for (k = 0; k < rest; k++)
		set->off[n + k] = off + (uint64_t)k * FK_EXFAT_ENT_LEN;
	set->nents = n + rest;
	dir->pos += rest;
	dir->idx += rest;
	dir->stats.nents += rest;
	return 1;
}

/* Gather @set's secondaries after its primary (already in raw[0]). */
static int gather(struct fk_exfat_dir *dir, struct fk_exfat_set *set,
		  struct fk_diag *diag)
{
	const unsigned char *e;
	uint64_t off;
	uint32_t i;
	int r;

	for (i = 0; i < set->sec_count; i++) {
		if ((r = get_ent(dir, &e, &off, diag)) < 0)
			return r;
		if (!r) {
			set->defects |= FK_EXS_TRUNCATED;
			break;
		}
		if (!is_secondary(e)) {
			unget_ent(dir);
			if (!mend_type(dir, set, i))
				set->defects |= FK_EXS_TRUNCATED;
			break;
		}
		memcpy(set->raw[set->nents], e, FK_EXFAT_ENT_LEN);
		set->off[set->nents++] = off;
	}
	return 0;
}

/* Secondaries with no primary: one ORPHAN set of all in a row. */
static int gather_orphans(struct fk_exfat_dir *dir, struct fk_exfat_set *set,
			  struct fk_diag *diag)
{
	const unsigned char *e;
	uint64_t off;
	int r;

	set->kind = FK_EXK_ORPHAN;
	while (set->nents < FK_EXFAT_SET_MAX) {
		if ((r = get_ent(dir, &e, &off, diag)) <= 0)
			return r < 0 ? r : 0;
		if (!is_secondary(e)) {
			unget_ent(dir);
			break;
		}
		memcpy(set->raw[set->nents], e, FK_EXFAT_ENT_LEN);
		set->off[set->nents++] = off;
	}
	return 0;
}

/*
 * Past the end marker every entry is still looked at (a set hidden there
 * is damage), but the free entries that fill most of a directory's last
 * cluster (4,096 of them in 128 KiB) are passed in one step.
 */
static void skip_ends(struct fk_exfat_dir *dir)
{
	uint32_t pos = dir->pos;

	while (pos < dir->buf_ents &&
	       dir->buf[(size_t)pos * FK_EXFAT_ENT_LEN] == FK_EXFAT_T_END)
		pos++;
	dir->idx += pos - dir->pos;
	dir->stats.nents += pos - dir->pos;
	dir->pos = pos;
}

int fk_exfat_dir_next(struct fk_exfat_dir *dir, struct fk_exfat_set *set,
		      struct fk_diag *diag)
{
	const unsigned char *e;
	uint64_t off;
	int r;

	for (;;) {
		if (dir->seen_end)
			skip_ends(dir);
		if ((r = get_ent(dir, &e, &off, diag)) <= 0) {
			if (!r && !dir->seen_end)
				dir->stats.end_ent = dir->stats.nents;
			return r;
		}
		if (e[0] == FK_EXFAT_T_END) {
			if (!dir->seen_end) {
				dir->seen_end = 1;
				dir->stats.end_ent = dir->idx - 1;
				dir->stats.end_off = off;
			}
			if (!dir->keep_going) {
				dir->is_done = 1;
				return 0;
			}
			continue;
		}
		if (dir->seen_end)
			dir->stats.after_end++;
		if (!(e[0] & FK_EXFAT_IN_USE)) {
			dir->stats.ndeleted++;
			continue;
		}
		break;
	}
	memset(set, 0, offsetof(struct fk_exfat_set, raw));
	clear_fields(set);
	set->name16[0] = 0;
	set->name[0] = 0;
	set->has_name_up = 0;
	set->first_ent = dir->idx - 1;
	memcpy(set->raw[0], e, FK_EXFAT_ENT_LEN);
	e = set->raw[0]; /* the buffer may be refilled from here on */
	set->off[0] = off;
	set->nents = 1;
	set->type = e[0];
	if (dir->seen_end)
		set->defects |= FK_EXS_CROSSES_END;
	if (e[0] & FK_EXFAT_SECONDARY) {
		clear_special(set);
		if ((r = gather_orphans(dir, set, diag)))
			return r;
		return 1;
	}
	set->kind = kind_of(e[0]);
	if (has_secondaries(e[0])) {
		set->sec_count = e[GEN_COUNT];
		set->csum_stored = (uint16_t)get_le16(e + GEN_CHECKSUM);
		if ((r = gather(dir, set, diag)))
			return r;
	}
	if (set->kind == FK_EXK_FILE) {
		parse_file(dir, set); /* the checksum with the name hash */
	} else {
		if (has_secondaries(e[0]))
			sum_set(set);
		parse_special(set);
	}
	if (!dir->is_root && set->kind != FK_EXK_FILE &&
	    set->kind != FK_EXK_BENIGN && set->kind != FK_EXK_CRITICAL)
		set->defects |= FK_EXS_ROOT_ONLY;
	return 1;
}

/* ---- the family: entry sets as struct fk_dirent --------------------------- */

struct lister {
	struct fk_exfat_dir *dir;
	uint32_t dir_clus;
	struct fk_exfat_set set;
};

int fk_exfat_fam_dir_open(struct fk_volume *vol, const struct fk_dirent *dent,
			  void **impl)
{
	struct lister *ls = malloc(sizeof(*ls));
	struct fk_exfat_stream s = {vol->g.root_clus, 0, 0};
	int err;

	if (!ls)
		return -ENOMEM;
	if (dent && !dent->first_clus && dent->size) {
		/* An entry without clusters is not the root (only
		 * fk_dir_open(vol, 0) means the root, with no length);
		 * callers walk the entry first to say so. */
		free(ls);
		return FK_ECORRUPT;
	}
	if (dent && dent->first_clus) {
		s.first_clus = dent->first_clus;
		s.data_len = dent->size;
		s.is_no_fat_chain = dent->is_no_fat_chain;
	}
	if ((err = fk_exfat_dir_open(vol, &s, &ls->dir))) {
		free(ls);
		return err;
	}
	ls->dir_clus = s.first_clus;
	*impl = ls;
	return 0;
}

void fk_exfat_fam_dir_close(void *impl)
{
	struct lister *ls = impl;

	if (!ls)
		return;
	fk_exfat_dir_close(ls->dir);
	free(ls);
}

static void put_time(const struct fk_exfat_time *t, uint16_t *time,
		     uint16_t *date)
{
	*time = t->time;
	*date = t->date;
}

static void fill_dirent(const struct lister *ls, struct fk_dirent *ent)
{
	const struct fk_exfat_set *set = &ls->set;

	memset(ent, 0, sizeof(*ent));
	memcpy(ent->name, set->name, sizeof(set->name));
	memset(ent->raw, ' ', sizeof(ent->raw)); /* no 8.3 name on exFAT */
	/* Only the bits FAT shares: exFAT's reserved 0x08 would read as a
	 * volume label there, and the file would vanish from listings. */
	ent->attr = (uint8_t)(set->attr &
			      (FK_ATTR_RO | FK_ATTR_HIDDEN | FK_ATTR_SYSTEM |
			       FK_ATTR_DIR | FK_ATTR_ARCHIVE));
	ent->first_clus = set->first_clus;
	ent->size = set->data_len;
	ent->valid_len = set->valid_len;
	ent->is_no_fat_chain = set->is_no_fat_chain;
	put_time(&set->mtime, &ent->mtime, &ent->mdate);
	put_time(&set->ctime, &ent->ctime, &ent->cdate);
	ent->adate = set->atime.date;
	ent->ctime_cs = set->ctime.ms10;
	ent->mtime_cs = set->mtime.ms10;
	ent->has_mtime_tz = set->mtime.has_utc_off;
	ent->mtime_tz = set->mtime.utc_off;
	ent->off = set->off[0];
	ent->slot = set->first_ent;
	ent->nslots = set->nents;
	ent->has_lfn = 1;
	ent->dir_clus = ls->dir_clus;
}

int fk_exfat_fam_dir_next(void *impl, struct fk_dirent *ent,
			  struct fk_diag *diag)
{
	struct lister *ls = impl;
	int r;

	while ((r = fk_exfat_dir_next(ls->dir, &ls->set, diag)) == 1) {
		uint32_t bad = ls->set.defects & FK_EXFAT_SET_FATAL;

		if (ls->set.kind == FK_EXK_CRITICAL) {
			fk_diag_set(diag, NULL,
				    "unknown critical entry type 0x%02x at "
				    "entry %" PRIu32,
				    ls->set.type, ls->set.first_ent);
			fk_diag_hint(diag, FK_HINT_CHECK);
			return FK_ECORRUPT;
		}
		if (ls->set.kind != FK_EXK_FILE)
			continue; /* special, benign or orphan entries */
		if (bad) {
			fk_diag_set(diag, NULL, "entry %" PRIu32 ": %s",
				    ls->set.first_ent,
				    fk_exfat_set_reason(bad));
			fk_diag_hint(diag, FK_HINT_CHECK);
			return FK_ECORRUPT;
		}
		fill_dirent(ls, ent);
		return 1;
	}
	return r;
}

int fk_exfat_fam_walk(struct fk_volume *vol, const struct fk_dirent *ent,
		      int (*fn)(void *arg, const struct fk_run *run), void *arg,
		      struct fk_chain_info *info)
{
	struct fk_exfat_stream s = {ent->first_clus, ent->size,
				    ent->is_no_fat_chain};

	return fk_exfat_stream_walk(vol, &s, fn, arg, info);
}

/* Case-insensitive through the volume's own up-case table (7.2). */
int fk_exfat_fam_match(const struct fk_volume *vol, const char *name,
		       const struct fk_dirent *ent)
{
	uint16_t a[FK_EXFAT_NAME_MAX + 1], b[FK_EXFAT_NAME_MAX + 1];
	size_t na, nb;

	if (fk_utf8_to_utf16(name, a, FK_EXFAT_NAME_MAX, &na) ||
	    fk_utf8_to_utf16(ent->name, b, FK_EXFAT_NAME_MAX, &nb))
		return 0;
	return !fk_exfat_name_cmp(fk_exfat_of(vol)->upcase, a, (uint32_t)na, b,
				  (uint32_t)nb);
}

/* VolumeFlags in words: "0x0002 (dirty)", "0x0000 (clean)". */
static void flags_string(uint16_t flags, char *out, size_t len)
{
	snprintf(out, len, "0x%04x (%s%s%s%s)", flags,
		 flags & FK_EXFAT_FLAG_DIRTY ? "dirty" : "clean",
		 flags & FK_EXFAT_FLAG_ACTIVE_FAT ? ", second FAT active" : "",
		 flags & FK_EXFAT_FLAG_MEDIA_FAIL ? ", media failure" : "",
		 flags & FK_EXFAT_FLAG_CLEAR_ZERO ? ", clear to zero" : "");
}

#define NUM(k, v) (it[n].key = (k), it[n].is_num = 1, it[n++].num = (v))
#define STR(k, ...)                                                            \
	(it[n].key = (k), snprintf(it[n++].str, sizeof(it[0].str), __VA_ARGS__))

/* The boot sector's fields and the root's facts. */
int fk_exfat_fam_info(struct fk_volume *vol, struct fk_info_item *it,
		      struct fk_diag *diag)
{
	const struct fk_geom *g = &vol->g;
	const struct fk_exfat *ex = fk_exfat_of(vol);
	const struct fk_exfat_boot *b = &ex->boot;
	struct fk_exfat_bitmap bm;
	uint32_t nused, nfree;
	int n = 0, err;

	if ((err = fk_exfat_bitmap_load_active(vol, &bm, diag)))
		return err;
	nused = fk_exfat_bitmap_count(&bm, FK_FIRST_CLUS, g->nclus);
	nfree = g->nclus - nused;
	fk_exfat_bitmap_free(&bm);
	STR("fat type", "%s", g->type_name);
	STR("revision", "%u.%02u", b->revision >> 8, b->revision & 0xffu);
	NUM("sector size", g->sec_len);
	NUM("cluster size", g->clus_len);
	NUM("sectors per cluster", g->clus_secs);
	NUM("fat offset", b->fat_off);
	NUM("fat length", b->fat_len);
	NUM("fat copies", g->nfats);
	NUM("active fat", g->active_fat);
	NUM("cluster heap offset", b->heap_off);
	NUM("total sectors", b->vol_len);
	NUM("data clusters", g->nclus);
	NUM("root cluster", g->root_clus);
	NUM("free clusters", nfree);
	NUM("free bytes", (uint64_t)nfree * g->clus_len);
	NUM("percent in use", b->percent_in_use);
	NUM("percent in use computed", fk_exfat_percent(nused, g->nclus));
	flags_string(b->vol_flags, it[n].str, sizeof(it[0].str));
	it[n++].key = "volume flags";
	STR("label", "%s", ex->has_label ? ex->label : "");
	STR("serial", "%04X-%04X", g->serial >> 16, g->serial & 0xffff);
	STR("upcase checksum", "0x%08x", ex->upcase->csum_stored);
	STR("upcase checksum computed", "0x%08x", ex->upcase->csum_computed);
	STR("boot checksum", "0x%08x", b->csum_stored);
	STR("boot checksum computed", "0x%08x", b->csum_computed);
	NUM("volume offset", fk_device_base(vol->dev));
	return n;
}

#undef NUM
#undef STR

/*
 * A boot region whose fields still pass their range checks (a checksum
 * mismatch, a backup that differs, a missing signature) opens: readers
 * go on, since every field they rely on was checked, and say so.
 */
int fk_exfat_fam_boot_warning(const struct fk_volume *vol, char *out,
			      size_t len)
{
	const struct fk_exfat_boot *b = &fk_exfat_of(vol)->boot;

	if (!b->defects)
		return 0;
	if (b->defects & FK_EXB_CHECKSUM)
		snprintf(out, len,
			 "exFAT boot checksum mismatch (stored 0x%08" PRIx32
			 ", computed 0x%08" PRIx32 ")",
			 b->csum_stored, b->csum_computed);
	else
		snprintf(out, len, "exFAT boot region: %s",
			 fk_exfat_boot_reason(b->defects));
	return 1;
}
