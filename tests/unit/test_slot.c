/*
 * test_slot.c: the 32-byte directory slot, row by row.  Expected bytes
 * are written out here from the Microsoft FAT specification's tables
 * ("Directory Structure", "FAT Long Directory Entries"), not taken from
 * slot.c.
 */
#include "tap.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "fat/dir.h"
#include "fat/fat-boot.h"
#include "fat/slot.h"
#include "volume/volume.h"

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))

static struct fk_volume vol_of(enum fk_fat_type type)
{
	struct fk_volume vol;

	memset(&vol, 0, sizeof(vol));
	fk_fat_geom_type(&vol.g, type); /* as the BPB parser sets it */
	return vol;
}

/* ---- short entries ------------------------------------------------------ */

/* A slot as the specification lays it out, field by field. */
static void spec_short(unsigned char *e, const char *name, unsigned attr,
		       unsigned nt, uint32_t clus, uint32_t size)
{
	memset(e, 0, 32);
	memcpy(e, name, 11);
	e[11] = (unsigned char)attr;
	e[12] = (unsigned char)nt;
	e[13] = 150;			     /* DIR_CrtTimeTenth */
	e[14] = 0x21, e[15] = 0x43;	     /* DIR_CrtTime */
	e[16] = 0x65, e[17] = 0x87;	     /* DIR_CrtDate */
	e[18] = 0xa9, e[19] = 0xcb;	     /* DIR_LstAccDate */
	e[20] = (unsigned char)(clus >> 16); /* DIR_FstClusHI */
	e[21] = (unsigned char)(clus >> 24);
	e[22] = 0x11, e[23] = 0x22;  /* DIR_WrtTime */
	e[24] = 0x33, e[25] = 0x44;  /* DIR_WrtDate */
	e[26] = (unsigned char)clus; /* DIR_FstClusLO */
	e[27] = (unsigned char)(clus >> 8);
	e[28] = (unsigned char)size; /* DIR_FileSize */
	e[29] = (unsigned char)(size >> 8);
	e[30] = (unsigned char)(size >> 16);
	e[31] = (unsigned char)(size >> 24);
}

static void test_short_fat32(void)
{
	struct fk_volume vol = vol_of(FK_FAT32);
	unsigned char e[32], out[32];
	struct fk_dirent ent;

	spec_short(e, "README  TXT", FK_ATTR_ARCHIVE, 0x18, 0x0abc1234,
		   0xfedcba98);
	memset(&ent, 0, sizeof(ent));
	fk_slot_unpack(&vol, e, &ent);
	OK(!memcmp(ent.raw, "README  TXT", 11) && ent.attr == FK_ATTR_ARCHIVE &&
		   ent.nt == 0x18 && ent.first_clus == 0x0abc1234 &&
		   ent.size == 0xfedcba98 && ent.ctime_cs == 150 &&
		   ent.ctime == 0x4321 && ent.cdate == 0x8765 &&
		   ent.adate == 0xcba9 && ent.mtime == 0x2211 &&
		   ent.mdate == 0x4433,
	   "fk_slot_unpack: FAT32 fields, high cluster word included");
	memset(out, 0, sizeof(out));
	fk_slot_pack(&vol, &ent, out);
	OK(!memcmp(out, e, 32), "fk_slot_pack: FAT32 round trip");
}

/* FAT12/16 keep an EA handle where FAT32 keeps the high word. */
static void test_short_fat16(void)
{
	struct fk_volume vol = vol_of(FK_FAT16);
	unsigned char e[32], out[32];
	struct fk_dirent ent;

	spec_short(e, "A       B  ", FK_ATTR_DIR, 0, 0x12340005, 7);
	memset(&ent, 0, sizeof(ent));
	fk_slot_unpack(&vol, e, &ent);
	OK(ent.first_clus == 0x0005,
	   "fk_slot_unpack: FAT16 ignores bytes "
	   "20-21 (got 0x%x)",
	   ent.first_clus);
	memset(out, 0xee, sizeof(out));
	ent.first_clus = 0x70009;
	fk_slot_pack(&vol, &ent, out);
	OK(out[20] == 0xee && out[21] == 0xee && out[26] == 9 && out[27] == 0,
	   "fk_slot_pack: FAT16 leaves bytes 20-21 alone");
	memset(out, 0xee, sizeof(out));
	fk_slot_pack_fields(&vol, &ent, out);
	OK(out[0] == 0xee && out[10] == 0xee && out[11] == FK_ATTR_DIR,
	   "fk_slot_pack_fields: the name bytes stay");
}

/* ---- markers -------------------------------------------------------------
 */

static const struct marker_row {
	const char *edge;
	unsigned char first;
	int is_free, is_end;
} marker_rows[] = {
	{"end marker 0x00", 0x00, 1, 1},
	{"deleted 0xE5", 0xe5, 1, 0},
	{"0x05 is a name", 0x05, 0, 0},
	{"a letter", 'A', 0, 0},
	{"dot", '.', 0, 0},
};

static void test_markers(void)
{
	unsigned char e[32];
	size_t i;

	for (i = 0; i < NROWS(marker_rows); i++) {
		const struct marker_row *r = &marker_rows[i];

		memset(e, 'X', sizeof(e));
		e[0] = r->first;
		OK(fk_slot_is_free(e) == r->is_free &&
			   fk_slot_is_end(e) == r->is_end,
		   "fk_slot_is_free/end: %s", r->edge);
	}
	memset(e, 'X', sizeof(e));
	fk_slot_delete(e);
	OK(e[0] == 0xe5 && e[1] == 'X' && e[31] == 'X',
	   "fk_slot_delete: only the first byte becomes 0xE5");
}

static void test_e5_names(void)
{
	unsigned char raw[11];

	memcpy(raw, "\xe5XYZ    TXT", 11);
	fk_short_escape(raw);
	OK(raw[0] == 0x05 && raw[1] == 'X', "fk_short_escape: 0xE5 is "
					    "stored as 0x05");
	OK(fk_short_first(raw) == 0xe5,
	   "fk_short_first: 0x05 reads back as 0xE5");
	memcpy(raw, "AXYZ    TXT", 11);
	fk_short_escape(raw);
	OK(raw[0] == 'A' && fk_short_first(raw) == 'A',
	   "fk_short_escape: other first bytes stay");
}

static const struct label_row {
	const char *edge;
	unsigned attr;
	int is_label;
} label_rows[] = {
	{"volume bit", 0x08, 1},
	{"volume and archive", 0x28, 1},
	{"volume and directory is no label", 0x18, 0},
	{"long-name attributes are no label", 0x0f | 0x10, 0},
	{"directory", 0x10, 0},
	{"file", 0x20, 0},
};

static void test_is_label(void)
{
	size_t i;

	for (i = 0; i < NROWS(label_rows); i++)
		OK(fk_attr_is_label((uint8_t)label_rows[i].attr) ==
			   label_rows[i].is_label,
		   "fk_attr_is_label: %s", label_rows[i].edge);
}

/* ---- long-name slots ---------------------------------------------------- */

static const struct attr_row {
	const char *edge;
	unsigned attr;
	int is_lfn;
} attr_rows[] = {
	{"0x0F", 0x0f, 1},
	{"reserved top bits ignored", 0xcf, 1},
	{"0x1F is a directory", 0x1f, 0},
	{"0x3F", 0x3f, 0},
	{"volume label", 0x08, 0},
	{"plain file", 0x20, 0},
};

static void test_is_lfn(void)
{
	unsigned char e[32];
	size_t i;

	for (i = 0; i < NROWS(attr_rows); i++) {
		memset(e, 0, sizeof(e));
		e[0] = 'A';
		e[11] = (unsigned char)attr_rows[i].attr;
		OK(fk_slot_is_lfn(e) == attr_rows[i].is_lfn,
		   "fk_slot_is_lfn: %s", attr_rows[i].edge);
	}
}

/*
 * The specification: LDIR_Ord at 0, LDIR_Name1 at 1 (5 units), LDIR_Attr
 * at 11, LDIR_Type 12 (0), LDIR_Chksum 13, LDIR_Name2 at 14 (6 units),
 * LDIR_FstClusLO 26 (0), LDIR_Name3 at 28 (2 units).
 */
static void test_lfn_layout(void)
{
	struct fk_lfn_slot l, back;
	unsigned char e[32], want[32];
	int i, u = 0;

	memset(&l, 0, sizeof(l));
	l.ord = 3;
	l.is_last = 1;
	l.sum = 0xa7;
	for (i = 0; i < 13; i++)
		l.units[i] = (uint16_t)(0x0100 * (i + 1) + 0x41 + i);
	memset(want, 0, sizeof(want));
	want[0] = 0x43;
	want[11] = 0x0f;
	want[13] = 0xa7;
	for (i = 1; i < 11; i += 2, u++)
		want[i] = (unsigned char)l.units[u],
		want[i + 1] = (unsigned char)(l.units[u] >> 8);
	for (i = 14; i < 26; i += 2, u++)
		want[i] = (unsigned char)l.units[u],
		want[i + 1] = (unsigned char)(l.units[u] >> 8);
	for (i = 28; i < 32; i += 2, u++)
		want[i] = (unsigned char)l.units[u],
		want[i + 1] = (unsigned char)(l.units[u] >> 8);
	memset(e, 0xee, sizeof(e));
	fk_slot_lfn_pack(&l, e);
	OK(!memcmp(e, want, 32), "fk_slot_lfn_pack: the specification's "
				 "layout");
	fk_slot_lfn_unpack(want, &back);
	OK(back.ord == 3 && back.is_last && back.sum == 0xa7 &&
		   !memcmp(back.units, l.units, sizeof(l.units)),
	   "fk_slot_lfn_unpack: the specification's layout");
	want[0] = 0x02;
	fk_slot_lfn_unpack(want, &back);
	OK(back.ord == 2 && !back.is_last, "fk_slot_lfn_unpack: not last");
	OK(fk_slot_is_lfn(e), "fk_slot_lfn_pack: reads as long-name slot");
}

/* ---- dot entries -------------------------------------------------------- */

static const struct dot_row {
	const char *edge;
	const char *raw;
	enum fk_dot want;
} dot_rows[] = {
	{"dot", ".          ", FK_DOT},
	{"dot dot", "..         ", FK_DOT_DOT},
	{"three dots", "...        ", FK_DOT_NONE},
	{"dot with an extension", ".       TXT", FK_DOT_NONE},
	{"a name", "DOT        ", FK_DOT_NONE},
	{"dot, NUL padded", ".\0\0\0\0\0\0\0\0\0\0", FK_DOT_NONE},
};

static void test_dots(void)
{
	unsigned char raw[11];
	size_t i;

	for (i = 0; i < NROWS(dot_rows); i++)
		OK(fk_slot_dot((const unsigned char *)dot_rows[i].raw) ==
			   dot_rows[i].want,
		   "fk_slot_dot: %s", dot_rows[i].edge);
	fk_slot_set_dot(FK_DOT, raw);
	OK(!memcmp(raw, ".          ", 11), "fk_slot_set_dot: dot");
	fk_slot_set_dot(FK_DOT_DOT, raw);
	OK(!memcmp(raw, "..         ", 11), "fk_slot_set_dot: dot dot");
}

/* ---- the timestamp rule ------------------------------------------------- */

/* Date and time words by hand from the specification's bit layout. */
#define DOS_DATE(y, mo, d) ((uint16_t)(((y)-1980) << 9 | (mo) << 5 | (d)))
#define DOS_TIME(h, mi, s) ((uint16_t)((h) << 11 | (mi) << 5 | (s) / 2))

static const struct time_row {
	const char *edge;
	int64_t t; /* seconds since the epoch, UTC */
	uint16_t date, tod;
	uint8_t cs;
} time_rows[] = {
	{"1979-12-31 23:59:59: the first instant", 315532799,
	 DOS_DATE(1980, 1, 1), DOS_TIME(0, 0, 0), 0},
	{"1980-01-01 00:00:00 exactly", 315532800, DOS_DATE(1980, 1, 1),
	 DOS_TIME(0, 0, 0), 0},
	{"1980-01-01 00:00:01: the odd second in 10 ms units", 315532801,
	 DOS_DATE(1980, 1, 1), DOS_TIME(0, 0, 0), 100},
	{"2107-12-31 23:59:59 exactly", 4354819199, DOS_DATE(2107, 12, 31),
	 DOS_TIME(23, 59, 58), 100},
	{"2108-01-01 00:00:00: the last instant, not 1980", 4354819200,
	 DOS_DATE(2107, 12, 31), DOS_TIME(23, 59, 58), 100},
	{"2150-06-15: the last instant, not the year alone", 5700000000,
	 DOS_DATE(2107, 12, 31), DOS_TIME(23, 59, 58), 100},
	{"before 1970: the first instant", -86400, DOS_DATE(1980, 1, 1),
	 DOS_TIME(0, 0, 0), 0},
};

static void test_dos_time(void)
{
	uint16_t date, tod;
	uint8_t cs;
	size_t i;

	for (i = 0; i < NROWS(time_rows); i++) {
		const struct time_row *r = &time_rows[i];
		time_t tt = (time_t)r->t;
		struct tm tm;

		if (!gmtime_r(&tt, &tm)) {
			OK(0, "fk_dos_time: %s (gmtime)", r->edge);
			continue;
		}
		fk_dos_time(&tm, r->t, &date, &tod, &cs);
		OK(date == r->date && tod == r->tod && cs == r->cs,
		   "fk_dos_time: %s", r->edge);
	}
	/* A time no struct tm holds clamps by its sign. */
	fk_dos_time(NULL, INT64_MAX, &date, &tod, &cs);
	OK(date == DOS_DATE(2107, 12, 31) && tod == DOS_TIME(23, 59, 58) &&
		   cs == 100,
	   "fk_dos_time: past struct tm: the last instant");
	fk_dos_time(NULL, INT64_MIN, &date, &tod, &cs);
	OK(date == DOS_DATE(1980, 1, 1) && tod == 0 && cs == 0,
	   "fk_dos_time: before struct tm: the first instant");
}

void suite_slot(void)
{
	test_dos_time();
	test_short_fat32();
	test_short_fat16();
	test_markers();
	test_e5_names();
	test_is_label();
	test_is_lfn();
	test_lfn_layout();
	test_dots();
}
