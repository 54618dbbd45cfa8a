/*
 * exfat.h: the exFAT family, read side.  The boot region checked field by
 * field (Microsoft's exFAT specification, section 3), the up-case table
 * (section 7.2), the allocation bitmap (section 7.1), and an iterator over
 * the entry sets of a directory (sections 6 and 7).
 *
 * Checker-friendly by design: parsing never stops at damage a checker
 * should report.  Every defect is data in the structs below (a bit in a
 * defect mask, stored and computed values side by side); only the lookup
 * and listing paths (dir.c through the family table) turn a defect into
 * one FK_ECORRUPT with one reason.
 *
 * The shared geometry (struct fk_geom, named "exFAT") is filled from the
 * boot sector so fk_clus_off(), fk_chain_walk() and fk_fat_scan() work
 * unchanged: data_off is the cluster heap, fat_off the first FAT and
 * fat_secs the length of each, active_fat the one that is read and
 * written (ActiveFat of VolumeFlags on TexFAT's two FATs, else 0),
 * 32-bit entries, EOC 0xFFFFFFFF, BAD 0xFFFFFFF7.  A NoFatChain stream is
 * one run of ceil(DataLength / cluster) clusters: never read its FAT
 * entries (fk_exfat_stream_walk() does the right thing for both kinds).
 */
#ifndef FATKIT_EXFAT_H
#define FATKIT_EXFAT_H

#include <stddef.h>
#include <stdint.h>

#include "exfat/exfat-boot.h"
#include "table/fat.h"
#include "volume/volume.h"

struct fk_device;
struct fk_diag;
struct fk_dirent;
struct fk_info_item;
struct fk_volume;
struct fk_volume_opts;

/* ---- Boot region (exfat-boot.h) ---- */

/* Fill the shared geometry (named "exFAT", 32-bit entries) from a parsed boot sector. */
void fk_exfat_boot_geom(const struct fk_exfat_boot *b, struct fk_geom *g);

/* ---- Entries (spec 6, 7) ---- */

#define FK_EXFAT_ENT_LEN     32
#define FK_EXFAT_NAME_MAX    255 /* UTF-16 units in a file name */
#define FK_EXFAT_SET_MAX     256 /* a primary and up to 255 secondaries */
#define FK_EXFAT_DIR_MAX_LEN (256u << 20) /* spec 6.2.1: 256 MiB */
/* The longest up-case table: a unit for each of the 65536, uncompressed
 * (spec 7.2.5). */
#define FK_EXFAT_UPCASE_MAX_LEN (65536u * 2)

/* Is @len a directory's length: whole clusters of @clus_len bytes, at
 * least one, up to the limit (spec 6.2)? */
static inline int fk_exfat_is_dir_len(uint32_t clus_len, uint64_t len)
{
	return len && len % clus_len == 0 && len <= FK_EXFAT_DIR_MAX_LEN;
}

/* EntryType values (spec 6.2.1). */
#define FK_EXFAT_T_END		0x00
#define FK_EXFAT_T_BITMAP	0x81
#define FK_EXFAT_T_UPCASE	0x82
#define FK_EXFAT_T_LABEL	0x83
#define FK_EXFAT_T_FILE		0x85
#define FK_EXFAT_T_GUID		0xA0
#define FK_EXFAT_T_PADDING	0xA1 /* TexFAT padding (benign) */
#define FK_EXFAT_T_STREAM	0xC0
#define FK_EXFAT_T_NAME		0xC1
#define FK_EXFAT_T_VENDOR_EXT	0xE0
#define FK_EXFAT_T_VENDOR_ALLOC 0xE1

#define FK_EXFAT_IN_USE	   0x80 /* TypeCode bit 7 */
#define FK_EXFAT_BENIGN	   0x20 /* TypeImportance bit 5 */
#define FK_EXFAT_SECONDARY 0x40 /* TypeCategory bit 6 */

/* GeneralSecondaryFlags (spec 6.4.2). */
#define FK_EXFAT_GSF_ALLOC_POSSIBLE 0x01
#define FK_EXFAT_GSF_NO_FAT_CHAIN   0x02

/* What an entry set's iteration yields. */
enum fk_exfat_kind {
	FK_EXK_FILE,	 /* File + Stream Extension + File Name ... */
	FK_EXK_BITMAP,	 /* allocation bitmap (root only) */
	FK_EXK_UPCASE,	 /* up-case table (root only) */
	FK_EXK_LABEL,	 /* volume label (root only) */
	FK_EXK_GUID,	 /* volume GUID (root only) */
	FK_EXK_BENIGN,	 /* another benign primary (e.g. TexFAT
			     padding): skipped by listings */
	FK_EXK_CRITICAL, /* an unknown critical primary: a checker
			     reports it, listings refuse */
	FK_EXK_ORPHAN,	 /* in-use secondaries with no primary before
			     them (nents of them) */
};

/* Entry-set defects, as bits in fk_exfat_set.defects. */
enum fk_exfat_set_defect {
	FK_EXS_TRUNCATED = 1u << 0,    /* SecondaryCount runs past the end of
					the directory or into a non-
					secondary; nents says what was there */
	FK_EXS_COUNT = 1u << 1,	       /* SecondaryCount below 2 (file) or
					below what NameLength needs */
	FK_EXS_NO_STREAM = 1u << 2,    /* first secondary not a Stream Ext. */
	FK_EXS_NAME_ENTRY = 1u << 3,   /* a File Name entry missing or out of
					place (before the stream, say) */
	FK_EXS_CHECKSUM = 1u << 4,     /* SetChecksum stored != computed */
	FK_EXS_HASH = 1u << 5,	       /* NameHash stored != computed */
	FK_EXS_NAME_LEN = 1u << 6,     /* NameLength 0 (or > 255: cannot be,
					it is one byte, so: 0) */
	FK_EXS_NAME_CHARS = 1u << 7,   /* a character the spec forbids
					(below 0x20, " * / : < > ? \ |) */
	FK_EXS_VDL = 1u << 8,	       /* ValidDataLength > DataLength, or !=
					DataLength on a directory */
	FK_EXS_CRITICAL = 1u << 9,     /* an unknown critical secondary */
	FK_EXS_ALLOC = 1u << 10,       /* AllocationPossible clear with a
					FirstCluster or DataLength set, or
					a non-empty stream with cluster 0 */
	FK_EXS_BIG_DIR = 1u << 11,     /* directory DataLength 0, not a
					cluster multiple, or over 256 MiB */
	FK_EXS_CROSSES_END = 1u << 12, /* the set is after the end marker
					  (keep_going only) */
	FK_EXS_ROOT_ONLY = 1u << 13,   /* bitmap/up-case/label/GUID entry
					outside the root */
	FK_EXS_BAD_SPECIAL = 1u << 14, /* a special entry's own fields are
					  wrong (label over 11 chars, etc.) */
	FK_EXS_NO_FIRST = 1u << 15,    /* FirstCluster 0 with a DataLength
					  (always with FK_EXS_ALLOC; its
					  own reason, so none reads it as
					  the root's cluster) */
	FK_EXS_TYPE = 1u << 16,	       /* a file set cut short by one entry
					  whose type, put back as the one
					  expected there, makes the
					  SetChecksum verify: raw holds it
					  put back (mend_ent, mend_type) */
};

/* An exFAT timestamp (spec 7.4.8 - 7.4.10). */
struct fk_exfat_time {
	uint16_t time, date; /* FAT time and date words (low, high half of
				the 32-bit Timestamp field) */
	uint8_t ms10;	     /* 10msIncrement: 0 .. 199 */
	int8_t utc_off;	     /* minutes / 15, -64 .. 63 */
	int has_utc_off;     /* OffsetValid bit */
};

/*
 * One entry set, or one special root entry, as it is on disk, with every
 * value a checker compares (stored next to computed).  Fields of the
 * Stream Extension are zero when the set has none.
 */
struct fk_exfat_set {
	enum fk_exfat_kind kind;
	uint32_t defects;   /* enum fk_exfat_set_defect bits */
	uint32_t nents;	    /* entries of the set as found on disk (at
			      most FK_EXFAT_SET_MAX) */
	uint32_t first_ent; /* index of the primary in the directory */
	uint8_t mend_ent;   /* FK_EXS_TYPE: the entry of the set whose type
			       raw puts back */
	uint8_t mend_type;  /* FK_EXS_TYPE: that entry's type on disk */
	unsigned char raw[FK_EXFAT_SET_MAX][FK_EXFAT_ENT_LEN];
	uint64_t off[FK_EXFAT_SET_MAX]; /* volume byte offset of each */
	uint8_t type;			/* EntryType of the primary */
	uint8_t sec_count;		/* SecondaryCount as stored */
	uint16_t csum_stored;		/* SetChecksum */
	uint16_t csum_computed;		/* over the nents entries found */
	/* File entry (0x85) */
	uint16_t attr; /* FileAttributes (FK_ATTR_* bits) */
	struct fk_exfat_time ctime, mtime, atime; /* atime: no ms10 */
	/* Stream Extension (0xC0) */
	uint8_t gsf;		/* GeneralSecondaryFlags */
	int is_alloc_possible;	/* gsf bit 0 */
	int is_no_fat_chain;	/* gsf bit 1 */
	uint8_t name_len;	/* NameLength, UTF-16 units */
	uint16_t hash_stored;	/* NameHash */
	uint16_t hash_computed; /* over the name through the up-case
				    table in use */
	uint64_t valid_len;	/* ValidDataLength */
	uint32_t first_clus;	/* FirstCluster */
	uint64_t data_len;	/* DataLength */
	uint32_t name16_len;	/* units of name16[] actually gathered */
	/* unknown secondaries (neither stream nor name) */
	uint32_t nbenign;   /* unknown benign secondaries skipped */
	uint32_t ncritical; /* unknown critical ones (FK_EXS_CRITICAL) */
	/* special root entries: the same first_clus/data_len above hold
	   the bitmap's and up-case table's location (the iterator clears
	   these only for sets other than files) */
	uint8_t bitmap_flags; /* BitmapFlags: bit 0, which FAT */
	uint32_t upcase_csum; /* up-case TableChecksum as stored */
	uint8_t label_len;    /* CharacterCount of the label */
	uint16_t label16[11];
	char label[11 * 3 + 1]; /* UTF-8 */
	unsigned char guid[16]; /* VolumeGuid */
	/* File Name entries (0xC1), last: the iterator clears everything
	   before them for each set, and ends each of these instead. */
	uint16_t name16[FK_EXFAT_NAME_MAX + 1]; /* name_len units (as many
						   as present), 0-ended */
	char name[FK_EXFAT_NAME_MAX * 3 + 1];	/* UTF-8; unpaired
						 surrogates as U+FFFD */
	/* name16's units through the up-case table the name hash was
	   computed with, when has_name_up (a volume with no table has
	   none): how names compare (spec 7.2) */
	uint16_t name_up[FK_EXFAT_NAME_MAX];
	int has_name_up;
};

/* ---- Up-case table (spec 7.2) ---- */

/* Up-case defects, as bits in fk_exfat_upcase.defects. */
enum fk_exfat_upcase_defect {
	FK_EXU_MISSING = 1u << 0,   /* no up-case entry in the root */
	FK_EXU_CHECKSUM = 1u << 1,  /* TableChecksum stored != computed */
	FK_EXU_RANGE = 1u << 2,	    /* FirstCluster or DataLength out of
				       range (0, odd, over 128 KiB raw...) */
	FK_EXU_CHAIN = 1u << 3,	    /* its chain is broken or short */
	FK_EXU_COMPRESS = 1u << 4,  /* a 0xFFFF run runs past 0xFFFF */
	FK_EXU_DUPLICATE = 1u << 5, /* a second up-case entry */
};

/*
 * The volume's up-case table, expanded to all 65536 units, by pages of
 * 256: unit c maps to c + pool[idx[c >> 8]][c & 255] (mod 65536), and
 * pool[0], all zeros, stands for every page a table leaves alone, so only
 * the pages it changes are filled in (13 of 256 for mkfs.exfat's table:
 * a program that looks a few names up does not build, and fault in, 128
 * KiB).  Read it with fk_exfat_upcase(), write it with
 * fk_exfat_upcase_put().  When the table could not be loaded, is_fallback
 * is set and the table maps ASCII a-z only, the spec's recommended
 * minimum (7.2.5).
 */
struct fk_exfat_upcase {
	uint16_t idx[256];	 /* pool page of each page; 0: none */
	uint16_t pool[257][256]; /* pool[0] is never written */
	uint32_t npool;		 /* pool pages in use, pool[0] included */
	uint32_t csum_stored;	 /* TableChecksum from the entry */
	uint32_t csum_computed;	 /* over the raw table bytes (spec 7.2.2) */
	uint64_t raw_len;	 /* DataLength */
	uint32_t first_clus;
	uint32_t defects;    /* enum fk_exfat_upcase_defect bits */
	int is_compressed;   /* the raw table used 0xFFFF runs */
	uint32_t nbad_ascii; /* units below 128 the raw table names one by
				one and maps elsewhere than the mandatory
				fk_exfat_upcase_ascii() (fatcheck -r mends
				those); a-z inside a compressed identity
				run are not counted */
	int is_fallback;
};

/* TableChecksum of @len raw bytes (spec 7.2.2). */
uint32_t fk_exfat_upcase_checksum(const unsigned char *raw, size_t len);

/*
 * Expand a raw (possibly compressed) table of @len bytes into @up's map,
 * recording defects.  Pure; unmapped units map to themselves.
 */
void fk_exfat_upcase_expand(const unsigned char *raw, size_t len,
			    struct fk_exfat_upcase *up);

/*
 * @up as a zeroed one after fk_exfat_upcase_identity(): every field 0, the
 * map the identity, without touching (faulting in) its pool's pages.
 */
void fk_exfat_upcase_clear(struct fk_exfat_upcase *up);

/* Make @up's map the identity; its other fields stay. */
void fk_exfat_upcase_identity(struct fk_exfat_upcase *up);

/* Map unit @c to @v in @up. */
void fk_exfat_upcase_put(struct fk_exfat_upcase *up, uint16_t c, uint16_t v);

/* ASCII-only fallback table (is_fallback set). */
void fk_exfat_upcase_fallback(struct fk_exfat_upcase *up);

/*
 * The up-case of ASCII unit @c (below 128) that the specification makes
 * mandatory (7.2.5, the first 128 entries): a-z to A-Z, every other unit
 * to itself.  The one rule of the writer and the checker.
 */
static inline uint16_t fk_exfat_upcase_ascii(uint32_t c)
{
	return (uint16_t)(c >= 'a' && c <= 'z' ? c - 0x20 : c);
}

/*
 * Does @up name no ASCII unit one by one with a mapping other than the
 * mandatory fk_exfat_upcase_ascii()?  fatcheck -r mends a table that
 * names them otherwise (a damaged table, whose TableChecksum then does
 * not match either: rewriting the checksum would bless it), then judges every
 * hash by the mended one: a writer refuses such a table, since the hash
 * of a new name would be damage after the mend.  A table whose compressed
 * identity run covers a-z (no formatter writes one) is the volume's own
 * mapping, which fatcheck, fsck.exfat and Linux hash names through: the
 * writer uses it too, and names that differ in the case of a-z are then
 * different names on that volume.
 */
int fk_exfat_upcase_maps_ascii(const struct fk_exfat_upcase *up);

static inline uint16_t fk_exfat_upcase(const struct fk_exfat_upcase *up,
				       uint16_t c)
{
	return (uint16_t)(c + up->pool[up->idx[c >> 8]][c & 0xFF]);
}

/* NameHash (spec 7.6.4) of @n units of @name, up-cased through @up. */
uint16_t fk_exfat_name_hash(const struct fk_exfat_upcase *up,
			    const uint16_t *name, uint32_t n);

/* The ASCII units a file name may not hold (spec 7.7.3, Table 35: the
 * control codes and " * / : < > ? \\ |), bit u of word u / 64. */
#define FK_EXFAT_BAD_LO                                                        \
	(0xffffffffull | 1ull << '"' | 1ull << '*' | 1ull << '/' |             \
	 1ull << ':' | 1ull << '<' | 1ull << '>' | 1ull << '?')
#define FK_EXFAT_BAD_HI (1ull << ('\\' - 64) | 1ull << ('|' - 64))

/* Whether a file name may hold UTF-16 unit @u: inline, as the checker
 * asks it of every unit of every name. */
static inline int fk_exfat_name_unit_ok(uint16_t u)
{
	/* No branch on the unit: names mix units below 64 (digits, space,
	 * dot) with letters above it in no order a predictor can learn. */
	static const uint64_t bad[2] = {FK_EXFAT_BAD_LO, FK_EXFAT_BAD_HI};

	return !((u < 128) & (unsigned)(bad[u >> 6 & 1] >> (u & 63)));
}

/* SetChecksum (spec 6.3.3) over @nents raw entries. */
uint16_t fk_exfat_set_checksum(const unsigned char (*raw)[FK_EXFAT_ENT_LEN],
			       uint32_t nents);

/*
 * fk_exfat_set_checksum() of @nents entries @raw into *@csum and
 * fk_exfat_name_hash() of the @n units @name into *@hash, in one loop:
 * each is a chain of steps that waits on the step before, so side by side
 * the two take the time of the longer one.  The @n units up-cased go to
 * @upname (room for @n), for a caller that compares names.
 */
void fk_exfat_set_sums(const unsigned char (*raw)[FK_EXFAT_ENT_LEN],
		       uint32_t nents, const struct fk_exfat_upcase *up,
		       const uint16_t *name, uint32_t n, uint16_t *upname,
		       uint16_t *csum, uint16_t *hash);

/* ---- Allocation bitmap (spec 7.1) ---- */

/* One bit per data cluster: bit (clus - 2), as on disk. */
struct fk_exfat_bitmap {
	uint64_t *bits; /* fk_exfat_bitmap_words(nclus) words from
			   fk_bigmem_alloc(), the bits in the first
			   (nclus + 63) / 64; caller frees with
			   fk_exfat_bitmap_free() or hands them to
			   fk_alloc_take_used() */
	uint32_t nclus; /* ClusterCount */
	uint32_t first_clus;
	uint64_t data_len;
	int is_tail_set; /* bits past nclus in the last byte are set */
};

/*
 * Bytes the allocation bitmap of @nclus clusters has, one bit each: its
 * DataLength must be exactly this (spec 7.1.5; Linux will not mount a
 * volume whose bitmap says otherwise).
 */
static inline uint64_t fk_exfat_bitmap_len(uint32_t nclus)
{
	return ((uint64_t)nclus + 7) / 8;
}

/* The bitmap's byte that holds the bit of @clus (spec 7.1.5: bit
 * (@clus - 2) % 8 of byte (@clus - 2) / 8), and that bit's mask. */
static inline uint64_t fk_exfat_bit_byte(uint32_t clus)
{
	return ((uint64_t)clus - FK_FIRST_CLUS) / 8;
}

static inline uint8_t fk_exfat_bit_mask(uint32_t clus)
{
	return (uint8_t)(1u << (clus - FK_FIRST_CLUS) % 8);
}

/*
 * Words fk_exfat_bitmap.bits holds: as many as a free map of clusters
 * 0 .. @nclus + 1 needs (alloc.h), one more than the bits alone when
 * @nclus % 64 > 62, so that the allocator can build its map in place.
 */
static inline size_t fk_exfat_bitmap_words(uint32_t nclus)
{
	return ((size_t)nclus + 2 + 63) / 64;
}

/*
 * Read the bitmap of @data_len bytes from cluster @first_clus (an
 * FK_EXK_BITMAP entry's fields) through its FAT chain, one bit per cluster
 * in memory.  A bitmap shorter than the clusters need is read as far as
 * it goes (the missing bits read as clear).  Returns 0, FK_ECORRUPT
 * (cluster out of range or a broken chain; @diag says which), or -errno /
 * -ENOMEM.  @bm is filled only on success.
 */
int fk_exfat_bitmap_load(struct fk_volume *vol, uint32_t first_clus,
			 uint64_t data_len, struct fk_exfat_bitmap *bm,
			 struct fk_diag *diag);
/*
 * Which of the root's allocation bitmap entries, counted in directory
 * order from 0, goes with the active FAT: on TexFAT (two FATs) the first
 * whose BitmapFlags bit 0 is ActiveFat (the first entry when neither is;
 * the other one is stale, spec 3.1.13.1); with one FAT the first entry,
 * as Linux reads it (a second one is damage).
 */
uint32_t fk_exfat_active_bitmap(const struct fk_volume *vol);

/*
 * The bitmap that goes with the active FAT (BitmapFlags bit 0, for
 * TexFAT's two), as fk_exfat_bitmap_load(); FK_ECORRUPT when the root
 * had none.
 */
int fk_exfat_bitmap_load_active(struct fk_volume *vol,
				struct fk_exfat_bitmap *bm,
				struct fk_diag *diag);
void fk_exfat_bitmap_free(struct fk_exfat_bitmap *bm);

static inline int fk_exfat_bitmap_test(const struct fk_exfat_bitmap *bm,
				       uint32_t clus)
{
	uint32_t i = clus - 2;
	return i < bm->nclus && (bm->bits[i / 64] >> (i % 64) & 1);
}

/* Set bits among clusters @first .. @first + @n - 1 (clamped). */
uint32_t fk_exfat_bitmap_count(const struct fk_exfat_bitmap *bm, uint32_t first,
			       uint32_t n);

/* ---- The mounted exFAT facts (fk_exfat_of()) ---- */

/* What fk_volume_open() found in an exFAT root, kept on the volume. */
struct fk_exfat {
	struct fk_exfat_boot boot;
	struct fk_exfat_upcase *upcase; /* always set after open (maybe the
					   fallback) */
	uint32_t nbitmaps;		/* 1, or 2 with TexFAT */
	uint32_t bitmap_clus[2];
	uint64_t bitmap_len[2];
	uint8_t bitmap_flags[2];
	int has_label, has_guid;
	char label[11 * 3 + 1];
	uint16_t label16[11];
	uint8_t label_len;
	unsigned char guid[16];
	uint32_t root_defects; /* FK_EXU_* / special-entry trouble seen */
	int root_err;	       /* FK_ECORRUPT: the root's chain broke while
				  mounting (its special entries may be
				  missing); 0 otherwise */
	int is_backup_boot;    /* geometry taken from the backup region */
};

/* The exFAT facts of @vol, kept as the family's own (vol->fam_priv, set
 * by fk_exfat_read_boot()); NULL before it ran. */
static inline struct fk_exfat *fk_exfat_of(const struct fk_volume *vol)
{
	return (struct fk_exfat *)vol->fam_priv;
}

/*
 * A stream (file, directory, bitmap, up-case table): where its clusters
 * are, as the directory entry says.
 */
struct fk_exfat_stream {
	uint32_t first_clus; /* 0: no clusters */
	uint64_t data_len;   /* bytes; 0 with no length known (the root
				directory: walk the chain to its end) */
	int is_no_fat_chain; /* one run of ceil(data_len / cluster) */
};

/*
 * Walk @s's clusters, calling @fn per run: a NoFatChain stream is one run
 * and no FAT entry is read; a chained one is fk_chain_walk() (loop and
 * range protection) whose @info the caller judges against data_len.  A
 * NoFatChain run past the heap is cut at the heap's end and reported as
 * info->end = FK_ENT_RANGE.  Returns as fk_chain_walk().
 */
int fk_exfat_stream_walk(struct fk_volume *vol, const struct fk_exfat_stream *s,
			 int (*fn)(void *arg, const struct fk_run *run),
			 void *arg, struct fk_chain_info *info);

/*
 * The allocation entry @e (32 bytes, any type but a File Name's) describes
 * through the generic template (spec 6.3 primary, 6.4 secondary: flags at
 * 4 or 1 by TypeCategory, FirstCluster at 20, DataLength at 24, NoFatChain
 * in the flags): a Vendor Allocation, any benign entry, an entry of a
 * type nobody knows, a Stream Extension.  Fills @st from those fields
 * whatever the flags say.  Returns 1 when AllocationPossible is set and
 * FirstCluster or DataLength is not 0 (@e owns what @st walks), else 0.
 * The one place that rule is written: the checker claims what it owns,
 * the writer never takes it.
 */
int fk_exfat_entry_alloc(const unsigned char *e, struct fk_exfat_stream *st);

/*
 * Read the first @len bytes of @s into @buf, run by run, as
 * fk_exfat_stream_walk() finds its clusters.  Returns 0, FK_ECORRUPT when
 * the stream's clusters end before @len bytes (@diag says where), or
 * -errno.
 */
int fk_exfat_stream_read(struct fk_volume *vol, const struct fk_exfat_stream *s,
			 void *buf, uint64_t len, struct fk_diag *diag);

/*
 * Write @buf over the first @len bytes of @s, as fk_exfat_stream_read()
 * reads them; nothing flushes or syncs.  Returns as fk_exfat_stream_read()
 * (a short stream has had its clusters written).
 */
int fk_exfat_stream_write(struct fk_volume *vol,
			  const struct fk_exfat_stream *s, const void *buf,
			  uint64_t len, struct fk_diag *diag);

/* Clusters a stream of @data_len bytes needs: ceil(len / cluster).
 * Inline: asked several times per file a check walks. */
static inline uint64_t fk_exfat_clus_needed(const struct fk_geom *g,
					    uint64_t data_len)
{
	/* exFAT clusters are 2^n bytes (spec 3.1.15): a shift, not a
	 * 64-bit division. */
	unsigned shift = (unsigned)__builtin_ctz(g->clus_len);

	return (data_len >> shift) + ((data_len & (g->clus_len - 1)) != 0);
}

/* ---- Entry-set iterator ---- */

struct fk_exfat_dir;

/* What a directory iteration saw besides sets (for the checker). */
struct fk_exfat_dir_stats {
	uint32_t nents;	    /* entries read */
	uint32_t ndeleted;  /* entries with InUse clear (type 0x01-0x7F) */
	uint32_t end_ent;   /* index of the 0x00 end marker; nents if none */
	uint64_t end_off;   /* its volume byte offset; 0 if none */
	uint32_t after_end; /* non-zero entries after the marker (the spec
				 says all later entries are 0x00 too) */
	uint32_t nclus;	    /* clusters of the directory walked */
	struct fk_chain_info chain; /* how the directory's chain ended */
};

/*
 * Open the directory stored in @s for entry-set iterator (@s NULL: the
 * root, chained from FirstClusterOfRootDirectory to its end).  Special
 * entries found outside the root (first cluster not the root's) get
 * FK_EXS_ROOT_ONLY.  The walk reads at most ceil(DataLength / cluster)
 * clusters (the root: 256 MiB), never more than the volume has, and stops
 * at a chain loop (Brent, as fk_chain_walk()).  *@out is the caller's,
 * freed by fk_exfat_dir_close().  Returns 0, -ENOMEM.
 */
int fk_exfat_dir_open(struct fk_volume *vol, const struct fk_exfat_stream *s,
		      struct fk_exfat_dir **out);
void fk_exfat_dir_close(struct fk_exfat_dir *dir);

/*
 * Keep iterating past the 0x00 end marker (a checker wants what lies
 * there: sets found are flagged FK_EXS_CROSSES_END).  Without it the
 * iteration ends at the marker.
 */
void fk_exfat_dir_keep_going(struct fk_exfat_dir *dir);

/* Read at most @nclus clusters (0: no limit), as fk_dir_set_limit(). */
void fk_exfat_dir_set_limit(struct fk_exfat_dir *dir, uint32_t nclus);

/*
 * Bytes of its first cluster an iteration reads first (the root's: 4 KiB,
 * another directory's: 8 KiB), then twice as much each time: a writer that
 * reads a directory itself starts alike, so its reads are ones the open or
 * a lister made already.
 */
uint32_t fk_exfat_dir_first_piece(int is_root);

/*
 * Read the first @len bytes of the first cluster in one request (rounded
 * up to 4 KiB, at least fk_exfat_dir_first_piece(), at most 32 KiB or the
 * cluster) where an iteration that stops at the end marker reads less
 * first: a walker
 * that expects a directory's entries to take about @len bytes saves a
 * request per directory that way.
 */
void fk_exfat_dir_set_first_piece(struct fk_exfat_dir *dir, uint32_t len);

/*
 * Where an iteration without fk_exfat_dir_keep_going() stopped at the end
 * marker, for fk_exfat_dir_resume() to read on past it later (a checker
 * that reads the rest only when it has a reason to).
 */
struct fk_exfat_dir_mark {
	uint32_t clus;	   /* the cluster holding the marker */
	uint32_t nclus;	   /* clusters walked up to it, that one included */
	uint32_t next_off; /* byte offset in it of the entry after it */
	uint32_t next_ent; /* that entry's index in the directory */
};

/*
 * After fk_exfat_dir_next() returned 0: did the iteration stop at the end
 * marker with entries after it maybe left unread (the rest of its cluster,
 * or more clusters)?  Then *@m says where, and 1 is returned; else 0.
 */
int fk_exfat_dir_mark(const struct fk_exfat_dir *dir,
		      struct fk_exfat_dir_mark *m);

/*
 * Make the freshly opened @dir (the same stream, limit as before) go on
 * from the entry after the end marker @m recorded, as with
 * fk_exfat_dir_keep_going(): every set it returns has FK_EXS_CROSSES_END.
 */
void fk_exfat_dir_resume(struct fk_exfat_dir *dir,
			 const struct fk_exfat_dir_mark *m);

/*
 * The next entry set into *@set (the caller's; about 12 KiB, allocate it
 * once).  Damaged sets are returned with their defect bits, never
 * skipped.  Returns 1, 0 at the end (the marker, or the directory's last
 * cluster), FK_ECORRUPT when the directory itself cannot be read on (a
 * broken chain, over 256 MiB; @diag says which, fk_exfat_dir_stats()
 * holds the chain info) or -errno.
 */
int fk_exfat_dir_next(struct fk_exfat_dir *dir, struct fk_exfat_set *set,
		      struct fk_diag *diag);
const struct fk_exfat_dir_stats *
fk_exfat_dir_stats(const struct fk_exfat_dir *dir);

/*
 * One-line reason for the lowest defect of @defects, for the listing
 * paths ("entry set checksum mismatch", ...).
 */
const char *fk_exfat_set_reason(uint32_t defects);

/* Set defects that make a listing refuse the entry (FK_ECORRUPT). */
#define FK_EXFAT_SET_FATAL                                                     \
	(FK_EXS_TRUNCATED | FK_EXS_COUNT | FK_EXS_NO_STREAM |                  \
	 FK_EXS_NAME_ENTRY | FK_EXS_NAME_LEN | FK_EXS_CRITICAL |               \
	 FK_EXS_BIG_DIR | FK_EXS_TYPE)

/*
 * Set defects that leave the directory around the set in doubt: which
 * entries the set holds (a SecondaryCount that runs past the directory or
 * into the next set, a SetChecksum that does not confirm it, a set past
 * the end marker), or what they mean (what a listing refuses).
 */
#define FK_EXFAT_SET_DAMAGED                                                   \
	(FK_EXFAT_SET_FATAL | FK_EXS_CHECKSUM | FK_EXS_CROSSES_END)

/*
 * Is @set, as fk_exfat_dir_next() returned it, damaged: a defect of
 * FK_EXFAT_SET_DAMAGED, secondaries with no primary (FK_EXK_ORPHAN), or
 * an unknown critical primary (spec 6.2.1.2: its directory cannot be
 * used as if it were not there)?  Returns the reason, or NULL for a sound
 * set.  The one judgement of a damaged set: a writer refuses to write in
 * (or to go through) a directory that holds one, since slots inside or
 * after it may belong to it for another reader; the checker reports every
 * such set (check-exfat-sets.c judges file and benign sets and hidden
 * ones; check-exfat-walk.c unknown critical primaries and orphans) and -r
 * mends or removes it.
 */
const char *fk_exfat_set_damage(const struct fk_exfat_set *set);

/* ---- Volume-level ---- */

/*
 * The exFAT side of fk_volume_open() (fk_exfat_family's read_boot, mount
 * and unmount), in two steps.  fk_exfat_read_boot() runs when the open
 * found "EXFAT   " in @first (the first @head_len bytes, at least 512,
 * which it reads no more): it reads both boot
 * regions (the main one alone with opts->is_main_boot_only), judges them
 * into fk_exfat_of(vol)->boot and fills vol->g.  Only FK_EXFAT_BOOT_FATAL
 * defects fail it (FK_ECORRUPT, one reason); a bad checksum or a
 * differing backup is left in the defect bits for the program to warn
 * about.  fk_exfat_mount() (exfat-mount.c) runs once the FAT cache
 * exists: it scans the root for its special entries and loads the
 * up-case table (a damaged one: the fallback, with its defects kept).  A
 * root that cannot be read
 * to its end (a broken or looping chain) is not a failure:
 * fk_exfat_of(vol)->root_err says so and the listing reports it.  Returns 0,
 * -ENOMEM or -errno.
 *
 * With opts->is_backup_boot, the geometry comes from the backup boot
 * region (sectors 12-23 of whichever sector size holds an exFAT boot
 * sector there) and fk_exfat_of(vol)->is_backup_boot is set; fk_exfat_of(vol)->boot
 * then describes the backup (no backup comparison), and
 * the main region is the caller's to read and judge with
 * fk_exfat_boot_parse().
 */
int fk_exfat_read_boot(struct fk_volume *vol, const unsigned char *first,
		       size_t head_len, const struct fk_volume_opts *opts,
		       struct fk_diag *diag);

/* Bytes of the boot regions fk_exfat_read_boot() reads for @opts with
 * 512-byte sectors (the main region alone for a writer). */
size_t fk_exfat_head_len(const struct fk_volume_opts *opts);
int fk_exfat_mount(struct fk_volume *vol, struct fk_diag *diag);
void fk_exfat_unmount(struct fk_volume *vol);

/* Compare two UTF-16 names through @up (0: equal). */
int fk_exfat_name_cmp(const struct fk_exfat_upcase *up, const uint16_t *a,
		      uint32_t alen, const uint16_t *b, uint32_t blen);

/* PercentInUse computed from @nused of @nclus (spec 3.1.16: floor). */
unsigned fk_exfat_percent(uint32_t nused, uint32_t nclus);

/*
 * The exFAT family's directory operations and probe, as family.h
 * describes each; fk_exfat_family (exfat-family.c) holds them.
 */
int fk_exfat_fam_dir_open(struct fk_volume *vol, const struct fk_dirent *dent,
			  void **impl);
int fk_exfat_fam_dir_next(void *impl, struct fk_dirent *ent,
			  struct fk_diag *diag);
void fk_exfat_fam_dir_close(void *impl);
int fk_exfat_fam_walk(struct fk_volume *vol, const struct fk_dirent *ent,
		      int (*fn)(void *arg, const struct fk_run *run), void *arg,
		      struct fk_chain_info *info);
int fk_exfat_fam_match(const struct fk_volume *vol, const char *name,
		       const struct fk_dirent *ent);
int fk_exfat_fam_info(struct fk_volume *vol, struct fk_info_item *it,
		      struct fk_diag *diag);
int fk_exfat_fam_boot_warning(const struct fk_volume *vol, char *out,
			      size_t len);

#endif
