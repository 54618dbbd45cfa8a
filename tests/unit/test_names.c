/*
 * test_names.c: long-name checksums, UTF-8 and UTF-16, case folding, long
 * name rules, 8.3 fitting with the NT lower-case flags, aliases and their
 * display, row by row.  Expected values come from the Microsoft FAT
 * specification and from images made by mkfs.fat and mcopy (mtools 4.0).
 */
#include "tap.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "lib/names.h"

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))

/* @n copies of @c in @out, NUL-terminated. */
static const char *repeat_char(char *out, char c, size_t n)
{
	memset(out, c, n);
	out[n] = '\0';
	return out;
}

/* ---- long-name checksums ------------------------------------------------ */

/*
 * The specification's ChkSum(), written out independently: rotate the
 * running sum right by one bit, then add the next byte.
 */
static uint8_t spec_checksum(const unsigned char *raw)
{
	unsigned sum = 0, i;

	for (i = 0; i < 11; i++) {
		sum = ((sum & 1) ? 0x80 : 0) | (sum >> 1);
		sum = (sum + raw[i]) & 0xff;
	}
	return (uint8_t)sum;
}

static const struct sum_row {
	const char *edge;
	const char *raw;
	int sum; /* -1: compare with spec_checksum() only */
} sum_rows[] = {
	/* Slot bytes 13 of images made by mcopy (mtools 4.0.32). */
	{"mcopy: Long File Name.txt", "LONGFI~1TXT", 0xd4},
	{"mcopy: ReadMe2.Txt", "README2 TXT", 0x54},
	/* Worked by hand: 11 spaces (0x20) rotate and add to 0x5a... */
	{"all spaces", "           ", -1},
	{"README  TXT", "README  TXT", -1},
	{"high bytes", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", -1},
	{"deleted-marker byte",
	 "\x05"
	 "BC     TXT",
	 -1},
	{"all zero bytes", "\0\0\0\0\0\0\0\0\0\0\0", 0},
};

static void test_checksum(void)
{
	size_t i;

	for (i = 0; i < NROWS(sum_rows); i++) {
		const struct sum_row *r = &sum_rows[i];
		const unsigned char *raw = (const unsigned char *)r->raw;
		int want = r->sum < 0 ? spec_checksum(raw) : r->sum;

		OK(fk_lfn_checksum(raw) == want && spec_checksum(raw) == want,
		   "fk_lfn_checksum: %s (0x%02x, want 0x%02x)", r->edge,
		   fk_lfn_checksum(raw), want);
	}
}

/* ---- UTF-8 <-> UTF-16 -----------------------------------------------------
 */

static const struct utf_row {
	const char *edge;
	const char *utf8;
	uint16_t u16[6];
	size_t n;
} utf_rows[] = {
	{"ASCII", "abc", {'a', 'b', 'c'}, 3},
	{"empty", "", {0}, 0},
	{"Latin-1 two bytes", "\xc3\xbc", {0xfc}, 1},
	{"largest two-byte U+07FF", "\xdf\xbf", {0x7ff}, 1},
	{"smallest three-byte U+0800", "\xe0\xa0\x80", {0x800}, 1},
	{"euro sign", "\xe2\x82\xac", {0x20ac}, 1},
	{"last before surrogates U+D7FF", "\xed\x9f\xbf", {0xd7ff}, 1},
	{"first after surrogates U+E000", "\xee\x80\x80", {0xe000}, 1},
	{"U+FFFF", "\xef\xbf\xbf", {0xffff}, 1},
	{"surrogate pair U+10000", "\xf0\x90\x80\x80", {0xd800, 0xdc00}, 2},
	{"surrogate pair emoji U+1F600",
	 "\xf0\x9f\x98\x80",
	 {0xd83d, 0xde00},
	 2},
	{"surrogate pair U+10FFFF", "\xf4\x8f\xbf\xbf", {0xdbff, 0xdfff}, 2},
	{"Cyrillic", "\xd0\x96\xd0\xb6", {0x416, 0x436}, 2},
	{"mixed", "a\xf0\x9f\x98\x80z", {'a', 0xd83d, 0xde00, 'z'}, 4},
};

static void test_utf_round_trip(void)
{
	size_t i;

	for (i = 0; i < NROWS(utf_rows); i++) {
		const struct utf_row *r = &utf_rows[i];
		uint16_t u[8];
		char back[32];
		size_t n = 99;
		int err = fk_utf8_to_utf16(r->utf8, u, 8, &n);
		int err2 =
			err ? err : fk_utf16_to_utf8(u, n, back, sizeof(back));

		OK(!err && n == r->n && !memcmp(u, r->u16, n * 2) && !err2 &&
			   !strcmp(back, r->utf8),
		   "utf8 <-> utf16: %s (err %d/%d, %zu units)", r->edge, err,
		   err2, n);
	}
}

static const struct bad_utf8_row {
	const char *edge;
	const char *utf8;
} bad_utf8_rows[] = {
	{"overlong '/' in two bytes", "\xc0\xaf"},
	{"overlong NUL in two bytes", "\xc0\x80"},
	{"overlong U+007F in two bytes", "\xc1\xbf"},
	{"overlong U+07FF in three bytes", "\xe0\x9f\xbf"},
	{"overlong U+FFFF in four bytes", "\xf0\x8f\xbf\xbf"},
	{"lone continuation byte", "\x80"},
	{"continuation byte inside ASCII", "a\xbf"
					   "b"},
	{"two-byte lead at the end", "ab\xc3"},
	{"three-byte lead cut short", "\xe2\x82"},
	{"lead followed by ASCII", "\xc3"
				   "A"},
	{"high surrogate U+D800 in UTF-8", "\xed\xa0\x80"},
	{"low surrogate U+DFFF in UTF-8", "\xed\xbf\xbf"},
	{"surrogate pair encoded as CESU-8", "\xed\xa0\xbd\xed\xb8\x80"},
	{"past Unicode U+110000", "\xf4\x90\x80\x80"},
	{"five-byte form", "\xf8\x88\x80\x80\x80"},
	{"byte 0xFE", "\xfe"},
	{"byte 0xFF", "\xff"},
};

static void test_bad_utf8(void)
{
	size_t i;

	for (i = 0; i < NROWS(bad_utf8_rows); i++) {
		const struct bad_utf8_row *r = &bad_utf8_rows[i];
		uint16_t u[16];
		size_t n = 99;
		int err = fk_utf8_to_utf16(r->utf8, u, 16, &n);

		OK(err == -EILSEQ && n == 99,
		   "fk_utf8_to_utf16: %s is refused (err %d)", r->edge, err);
	}
}

static const struct u16_row {
	const char *edge;
	uint16_t u16[4];
	size_t n;
	size_t out_len; /* bytes of output buffer, NUL included */
	int err;
	const char *utf8;
} u16_rows[] = {
	{"lone high surrogate at the end",
	 {'a', 0xd800},
	 2,
	 32,
	 0,
	 "a\xef\xbf\xbd"},
	{"lone low surrogate",
	 {0xdc00, 'b'},
	 2,
	 32,
	 0,
	 "\xef\xbf\xbd"
	 "b"},
	{"high surrogate before a letter",
	 {0xd800, 'A'},
	 2,
	 32,
	 0,
	 "\xef\xbf\xbd"
	 "A"},
	{"pair in the wrong order",
	 {0xdc00, 0xd800},
	 2,
	 32,
	 0,
	 "\xef\xbf\xbd\xef\xbf\xbd"},
	{"two high surrogates then a low",
	 {0xd83d, 0xd83d, 0xde00},
	 3,
	 32,
	 0,
	 "\xef\xbf\xbd\xf0\x9f\x98\x80"},
	{"output exactly big enough", {'a', 'b', 'c'}, 3, 4, 0, "abc"},
	{"output one byte short", {'a', 'b', 'c'}, 3, 3, -ENAMETOOLONG, NULL},
	{"four-byte character exactly fits",
	 {0xd83d, 0xde00},
	 2,
	 5,
	 0,
	 "\xf0\x9f\x98\x80"},
	{"four-byte character one byte short",
	 {0xd83d, 0xde00},
	 2,
	 4,
	 -ENAMETOOLONG,
	 NULL},
	{"three-byte character one byte short",
	 {0x20ac},
	 1,
	 3,
	 -ENAMETOOLONG,
	 NULL},
};

static void test_utf16_to_utf8(void)
{
	size_t i;

	for (i = 0; i < NROWS(u16_rows); i++) {
		const struct u16_row *r = &u16_rows[i];
		char out[32];
		int err = fk_utf16_to_utf8(r->u16, r->n, out, r->out_len);

		OK(err == r->err && (err || !strcmp(out, r->utf8)),
		   "fk_utf16_to_utf8: %s (err %d)", r->edge, err);
	}
}

static void test_utf16_limits(void)
{
	uint16_t u[4];
	size_t n = 99;

	OK(fk_utf8_to_utf16("abc", u, 3, &n) == 0 && n == 3,
	   "fk_utf8_to_utf16: exactly max units fit");
	n = 99;
	OK(fk_utf8_to_utf16("abcd", u, 3, &n) == -ENAMETOOLONG && n == 99,
	   "fk_utf8_to_utf16: one unit over max");
	OK(fk_utf8_to_utf16("ab\xf0\x9f\x98\x80", u, 3, &n) == -ENAMETOOLONG,
	   "fk_utf8_to_utf16: a surrogate pair does not split at max");
}

/* fk_utf16_display(): what orphaned slots spell, safe to print. */
static const struct show_row {
	const char *edge;
	uint16_t u16[8];
	size_t n, len;
	const char *out;
} show_rows[] = {
	{"plain ASCII", {'a', 'b', 'c'}, 3, 32, "abc"},
	{"ESC and DEL escaped", {'a', 0x1b, '[', 0x7f}, 4, 32, "a\\x1b[\\x7f"},
	{"backslash escaped, so escapes are unambiguous",
	 {'\\'},
	 1,
	 32,
	 "\\x5c"},
	{"C1 control escaped", {0x85}, 1, 32, "\\x85"},
	{"right-to-left override escaped",
	 {'x', 0x202e, 'y'},
	 3,
	 32,
	 "x\\u202ey"},
	{"U+FFFF padding escaped", {'a', 0xffff}, 2, 32, "a\\uffff"},
	{"letters beyond ASCII kept",
	 {0xe9, 0x65e5},
	 2,
	 32,
	 "\xc3\xa9\xe6\x97\xa5"},
	{"surrogate pair joined", {0xd83d, 0xde00}, 2, 32, "\xf0\x9f\x98\x80"},
	{"lone surrogate as U+FFFD",
	 {0xd800, 'a'},
	 2,
	 32,
	 "\xef\xbf\xbd"
	 "a"},
	{"cut with ... when it does not fit",
	 {'a', 'b', 'c', 'd', 'e', 'f'},
	 6,
	 8,
	 "abc..."},
	{"an escape is not split", {'a', 'b', 0x1b}, 3, 8, "ab..."},
};

static void test_utf16_display(void)
{
	size_t i;

	for (i = 0; i < NROWS(show_rows); i++) {
		const struct show_row *r = &show_rows[i];
		char out[32];

		fk_utf16_display(r->u16, r->n, out, r->len);
		OK(!strcmp(out, r->out), "fk_utf16_display: %s (got '%s')",
		   r->edge, out);
	}
}

/* ---- case folding and matching ------------------------------------------ */

static const struct up_row {
	const char *edge;
	uint16_t c, up;
} up_rows[] = {
	{"a", 'a', 'A'},
	{"z", 'z', 'Z'},
	{"A stays", 'A', 'A'},
	{"backquote before a", '`', '`'},
	{"brace after z", '{', '{'},
	{"digit", '7', '7'},
	{"u umlaut", 0xfc, 0xdc},
	{"a grave", 0xe0, 0xc0},
	{"thorn", 0xfe, 0xde},
	{"division sign stays", 0xf7, 0xf7},
	{"sharp s stays", 0xdf, 0xdf},
	{"y diaeresis to U+0178", 0xff, 0x178},
	{"micro sign stays", 0xb5, 0xb5},
	{"a macron (even/odd pairs)", 0x101, 0x100},
	{"A macron stays", 0x100, 0x100},
	{"dotless i stays", 0x131, 0x131},
	{"l acute (odd/even pairs)", 0x13a, 0x139},
	{"L acute stays", 0x139, 0x139},
	{"eng", 0x14b, 0x14a},
	{"z caron", 0x17e, 0x17d},
	{"Greek alpha", 0x3b1, 0x391},
	{"Greek final sigma stays", 0x3c2, 0x3c2},
	{"Greek sigma", 0x3c3, 0x3a3},
	{"Cyrillic a", 0x430, 0x410},
	{"Cyrillic ya", 0x44f, 0x42f},
	{"Cyrillic io", 0x451, 0x401},
	{"Cyrillic dzhe", 0x45f, 0x40f},
	{"Cyrillic A stays", 0x410, 0x410},
	{"CJK stays", 0x4e00, 0x4e00},
	{"high surrogate stays", 0xd83d, 0xd83d},
};

static void test_upcase(void)
{
	size_t i;

	for (i = 0; i < NROWS(up_rows); i++) {
		const struct up_row *r = &up_rows[i];
		uint16_t got = fk_upcase(r->c);

		OK(got == r->up, "fk_upcase: %s (U+%04X -> U+%04X)", r->edge,
		   r->c, got);
	}
}

static const struct eq_row {
	const char *edge;
	const char *a, *b;
	int is_equal;
} eq_rows[] = {
	{"ASCII case", "readme.txt", "README.TXT", 1},
	{"ASCII mixed case", "ReadMe.Txt", "rEADmE.tXT", 1},
	{"ASCII different", "a.txt", "b.txt", 0},
	{"prefix is not equal", "abc", "abcd", 0},
	{"Latin-1 u umlaut",
	 "\xc3\xbc"
	 "ber",
	 "\xc3\x9c"
	 "BER",
	 1},
	{"u umlaut is not u",
	 "\xc3\xbc"
	 "ber",
	 "uber", 0},
	{"Cyrillic", "\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82",
	 "\xd0\x9f\xd0\xa0\xd0\x98\xd0\x92\xd0\x95\xd0\xa2", 1},
	{"Cyrillic io", "\xd1\x91", "\xd0\x81", 1},
	{"Greek", "\xce\xb1\xce\xb2", "\xce\x91\xce\x92", 1},
	{"sharp s is not SS",
	 "stra\xc3\x9f"
	 "e",
	 "STRASSE", 0},
	{"emoji equal", "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80", 1},
	{"invalid UTF-8, same bytes", "a\xff", "a\xff", 1},
	{"invalid UTF-8, other case", "a\xff", "A\xff", 0},
	{"empty names", "", "", 1},
};

static void test_name_equal(void)
{
	size_t i;

	for (i = 0; i < NROWS(eq_rows); i++) {
		const struct eq_row *r = &eq_rows[i];

		OK(fk_name_equal(r->a, r->b) == r->is_equal &&
			   fk_name_equal(r->b, r->a) == r->is_equal,
		   "fk_name_equal: %s", r->edge);
	}
}

/*
 * Names fk_name_equal() matches must hash alike, or a table keyed on the
 * hash misses a name typed in another case: every row above, and every
 * BMP character against its upper case.
 */
static void test_name_hash(void)
{
	unsigned bad = 0, c;
	size_t i;

	for (i = 0; i < NROWS(eq_rows); i++) {
		const struct eq_row *r = &eq_rows[i];

		if (r->is_equal)
			OK(fk_name_hash(r->a) == fk_name_hash(r->b),
			   "fk_name_hash: %s hashes alike", r->edge);
		else
			OK(fk_name_hash(r->a) != fk_name_hash(r->b),
			   "fk_name_hash: %s hashes apart", r->edge);
	}
	for (c = 1; c < 0x10000; c++) {
		uint16_t lo[2] = {'x', (uint16_t)c}, up[2] = {'X', 0};
		char a[16], b[16];

		if (c >= 0xd800 && c < 0xe000)
			continue;
		up[1] = fk_upcase((uint16_t)c);
		if (fk_utf16_to_utf8(lo, 2, a, sizeof(a)) ||
		    fk_utf16_to_utf8(up, 2, b, sizeof(b)) ||
		    !fk_name_equal(a, b) || fk_name_hash(a) != fk_name_hash(b))
			bad++;
	}
	OK(!bad,
	   "fk_name_hash: x<c> and X<upcase(c)> hash alike for every "
	   "BMP c (%u bad)",
	   bad);
}

/* FNV-1a over bytes, written out from its definition. */
static uint64_t ref_fnv(uint64_t h, const unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/*
 * What fk_name_hash() is defined as: FNV-1a over the folded name's UTF-16
 * units, little-endian; over the bytes for a name that does not fold (not
 * UTF-8, or longer than 256 units).  The ASCII shortcut must give the
 * same: fk_name_equal() names of both kinds meet in one table.
 */
static uint64_t ref_name_hash(const char *name)
{
	uint16_t u[FK_LFN_MAX + 1];
	uint64_t h = 0xcbf29ce484222325ull;
	size_t n, i;

	if (fk_utf8_to_utf16(name, u, FK_LFN_MAX + 1, &n))
		return ref_fnv(h, (const unsigned char *)name, strlen(name));
	for (i = 0; i < n; i++) {
		uint16_t up = fk_upcase(u[i]);
		unsigned char b[2] = {(unsigned char)up,
				      (unsigned char)(up >> 8)};

		h = ref_fnv(h, b, 2);
	}
	return h;
}

static void test_name_hash_defined(void)
{
	static const char *const names[] = {
		"",
		"a",
		"File 00001.dat",
		"README.TXT",
		"a~b!c@d",
		"\x7f",
		"\303\274ber", /* u umlaut, then ASCII */
		"abc\xc3\xa9",
		"a\xff",
	};
	char x256[300], x257[300];
	size_t i;

	for (i = 0; i < NROWS(names); i++)
		OK(fk_name_hash(names[i]) == ref_name_hash(names[i]),
		   "fk_name_hash: as defined for name %zu", i);
	OK(fk_name_hash(repeat_char(x256, 'x', 256)) == ref_name_hash(x256),
	   "fk_name_hash: as defined for 256 ASCII units (folds)");
	OK(fk_name_hash(repeat_char(x257, 'x', 257)) == ref_name_hash(x257),
	   "fk_name_hash: as defined for 257 ASCII units (bytes)");
}

/*
 * fk_lfn_fold() and fk_short_fold() against the UTF-8 they stand for: the
 * folded units of a name are those of its UTF-8 form (@utf8, through
 * fk_utf8_to_utf16() and fk_upcase()), and the hash is its
 * fk_name_hash(), so the walk's names meet fk_name_equal() exactly.
 */
static int folds_as(const uint16_t *u, size_t n, uint64_t hash,
		    const char *utf8)
{
	uint16_t want[FK_LFN_MAX + 1];
	size_t nw, i;

	if (fk_utf8_to_utf16(utf8, want, FK_LFN_MAX + 1, &nw) || nw != n ||
	    hash != fk_name_hash(utf8))
		return 0;
	for (i = 0; i < n; i++)
		if (u[i] != fk_upcase(want[i]))
			return 0;
	return 1;
}

static void test_lfn_fold(void)
{
	unsigned bad = 0, c;
	size_t i;

	for (i = 0; i < NROWS(u16_rows); i++) {
		const struct u16_row *r = &u16_rows[i];
		uint16_t out[4];

		if (r->err)
			continue;
		OK(folds_as(out, r->n, fk_lfn_fold(r->u16, r->n, out), r->utf8),
		   "fk_lfn_fold: %s folds as its UTF-8", r->edge);
	}
	for (c = 1; c < 0x10000; c++) {
		uint16_t in[3] = {'a', (uint16_t)c, 'b'}, out[3];
		char utf8[16];

		if (fk_utf16_to_utf8(in, 3, utf8, sizeof(utf8)) ||
		    !folds_as(out, 3, fk_lfn_fold(in, 3, out), utf8))
			bad++;
	}
	OK(!bad, "fk_lfn_fold: a<c>b folds as its UTF-8 for every c (%u bad)",
	   bad);
}

/* Names in ascending order as FAT compares them. */
static const char *const ordered[] = {
	"",
	"a",
	"A.TXT",
	"ab",
	"abc",
	"B",
	"\xc3\xa9",	    /* U+00E9 folds to U+00C9 */
	"\xd0\xb0",	    /* Cyrillic a, U+0430 -> U+0410 */
	"\xf0\x9f\x98\x80", /* a surrogate pair sorts as its units */
	"a\xff",	    /* not UTF-8: after every valid name */
	"b\xff",
};

static void test_name_compare(void)
{
	unsigned bad = 0;
	size_t i, j;

	for (i = 0; i < NROWS(ordered); i++)
		for (j = 0; j < NROWS(ordered); j++) {
			int c = fk_name_compare(ordered[i], ordered[j]);

			if ((i < j && c >= 0) || (i > j && c <= 0) ||
			    (i == j && c != 0))
				bad++;
		}
	OK(!bad, "fk_name_compare: a total order over %zu names (%u bad)",
	   NROWS(ordered), bad);
	{
		char a[300], b[300];

		/* 256 units fold, so case is ignored; 257 do not, so the
		 * bytes decide. */
		repeat_char(a, 'x', 256);
		repeat_char(b, 'X', 256);
		OK(fk_name_compare(a, b) == 0,
		   "fk_name_compare: 256 ASCII units ignore case");
		repeat_char(a, 'x', 257);
		repeat_char(b, 'X', 257);
		OK(fk_name_compare(a, b) > 0 && fk_name_compare(b, a) < 0,
		   "fk_name_compare: 257 ASCII units compare as bytes");
	}
	for (i = 0; i < NROWS(eq_rows); i++) {
		const struct eq_row *r = &eq_rows[i];

		OK((fk_name_compare(r->a, r->b) == 0) == r->is_equal,
		   "fk_name_compare: 0 exactly when equal: %s", r->edge);
	}
}

/* ---- long name rules ------------------------------------------------------
 */

/* A name of @n copies of @unit (UTF-8) in @out. */
static const char *repeat(char *out, const char *unit, size_t n)
{
	size_t len = strlen(unit), i;

	for (i = 0; i < n; i++)
		memcpy(out + i * len, unit, len);
	out[n * len] = '\0';
	return out;
}

static const struct check_row {
	const char *edge;
	const char *unit; /* the name, or its repeated unit when n */
	size_t n;
	int err;
} check_rows[] = {
	{"plain", "a.txt", 0, 0},
	{"leading space is kept", " a", 0, 0},
	{"leading dot", ".profile", 0, 0},
	{"characters legal only in long names", "a+b,c;d=e[f]g", 0, 0},
	{"non-ASCII",
	 "\xc3\xbc"
	 "ber",
	 0, 0},
	{"empty", "", 0, -EINVAL},
	{"dot", ".", 0, -EINVAL},
	{"dot dot", "..", 0, -EINVAL},
	{"asterisk", "a*b", 0, -EINVAL},
	{"question mark", "a?b", 0, -EINVAL},
	{"less than", "a<b", 0, -EINVAL},
	{"greater than", "a>b", 0, -EINVAL},
	{"pipe", "a|b", 0, -EINVAL},
	{"double quote", "a\"b", 0, -EINVAL},
	{"colon", "a:b", 0, -EINVAL},
	{"backslash", "a\\b", 0, -EINVAL},
	{"slash", "a/b", 0, -EINVAL},
	{"control character",
	 "a\x01"
	 "b",
	 0, -EINVAL},
	{"tab", "a\tb", 0, -EINVAL},
	{"trailing dot", "name.", 0, -EINVAL},
	{"trailing space", "name ", 0, -EINVAL},
	{"only dots", "...", 0, -EINVAL},
	{"invalid UTF-8", "a\xc0\xaf", 0, -EINVAL},
	{"255 units", "x", 255, 0},
	{"256 units", "x", 256, -ENAMETOOLONG},
	{"255 two-byte characters", "\xc3\xbc", 255, 0},
	{"256 two-byte characters", "\xc3\xbc", 256, -ENAMETOOLONG},
	{"127 surrogate pairs (254 units)", "\xf0\x9f\x98\x80", 127, 0},
	{"128 surrogate pairs (256 units)", "\xf0\x9f\x98\x80", 128,
	 -ENAMETOOLONG},
};

static void test_name_check(void)
{
	static char name[1100];
	size_t i;

	for (i = 0; i < NROWS(check_rows); i++) {
		const struct check_row *r = &check_rows[i];
		const char *s = r->n ? repeat(name, r->unit, r->n) : r->unit;
		int err = fk_name_check(s);
		char why[128] = "";

		OK(err == r->err, "fk_name_check: %s (err %d, want %d)",
		   r->edge, err, r->err);
		/* The explaining form applies the same rules. */
		OK(fk_name_explain(s, why, sizeof(why)) == r->err &&
			   !why[0] == !r->err,
		   "fk_name_explain agrees: %s (\"%s\")", r->edge, why);
	}
}

static const struct explain_row {
	const char *edge;
	const char *name;
	const char *why;
} explain_rows[] = {
	{"colon", "bad:name.txt", "':' is not allowed in FAT names"},
	{"star", "a*b", "'*' is not allowed in FAT names"},
	{"backslash", "a\\b", "'\\' is not allowed in FAT names"},
	{"double quote", "a\"b", "'\"' is not allowed in FAT names"},
	{"tab", "a\tb",
	 "control characters (here 0x09) are not allowed in "
	 "FAT names"},
	{"trailing dot", "name.", "FAT names cannot end with a dot"},
	{"trailing space", "name ", "FAT names cannot end with a space"},
	{"dot-dot", "..", "'..' cannot be a FAT name"},
	{"bad UTF-8", "\xff", "FAT names must be valid UTF-8"},
};

static void test_name_explain(void)
{
	size_t i;

	for (i = 0; i < NROWS(explain_rows); i++) {
		const struct explain_row *r = &explain_rows[i];
		char why[128] = "";

		fk_name_explain(r->name, why, sizeof(why));
		OK(!strcmp(why, r->why), "fk_name_explain: %s (\"%s\")",
		   r->edge, why);
	}
}

/* ---- 8.3 names ------------------------------------------------------------
 */

static const struct fit_row {
	const char *edge;
	const char *name;
	int ret;
	const char *raw;
	uint8_t nt;
} fit_rows[] = {
	{"exact upper", "README.TXT", FK_SHORT_EXACT, "README  TXT", 0},
	{"lower: NT flags (as mcopy stores it)", "readme.txt", FK_SHORT_EXACT,
	 "README  TXT", FK_NT_LOWER_BASE | FK_NT_LOWER_EXT},
	{"lower base only", "readme.TXT", FK_SHORT_EXACT, "README  TXT",
	 FK_NT_LOWER_BASE},
	{"lower extension only", "README.txt", FK_SHORT_EXACT, "README  TXT",
	 FK_NT_LOWER_EXT},
	{"mixed base needs a long name", "ReadMe.txt", FK_SHORT_NEEDS_LFN,
	 "README  TXT", 0},
	{"mixed extension needs a long name", "readme.Txt", FK_SHORT_NEEDS_LFN,
	 "README  TXT", 0},
	{"no extension", "NOEXT", FK_SHORT_EXACT, "NOEXT      ", 0},
	{"no extension, lower", "makefile", FK_SHORT_EXACT, "MAKEFILE   ",
	 FK_NT_LOWER_BASE},
	{"no extension, mixed", "Makefile", FK_SHORT_NEEDS_LFN, "MAKEFILE   ",
	 0},
	{"one character", "A", FK_SHORT_EXACT, "A          ", 0},
	{"digits only", "12345678.123", FK_SHORT_EXACT, "12345678123", 0},
	{"exactly 8.3", "ABCDEFGH.TXT", FK_SHORT_EXACT, "ABCDEFGHTXT", 0},
	{"base of 9", "ABCDEFGHI.TXT", FK_SHORT_NEEDS_LFN, "ABCDEFGHTXT", 0},
	{"long name", "longfilename.txt", FK_SHORT_NEEDS_LFN, "LONGFILETXT", 0},
	{"extension of 4", "page.html", FK_SHORT_NEEDS_LFN, "PAGE    HTM", 0},
	{"space in base", "my file.txt", FK_SHORT_NEEDS_LFN, "MYFILE  TXT", 0},
	{"space in extension", "a.t t", FK_SHORT_NEEDS_LFN, "A       TT ", 0},
	{"leading dot", ".profile", FK_SHORT_NEEDS_LFN, "PROFILE    ", 0},
	{"multiple dots", "a.b.c", FK_SHORT_NEEDS_LFN, "AB      C  ", 0},
	{"legal short specials", "A~1$%.'-@", FK_SHORT_EXACT, "A~1$%   '-@", 0},
	{"plus becomes underscore", "a+b.txt", FK_SHORT_NEEDS_LFN,
	 "A_B     TXT", 0},
	{"brackets become underscores", "[x].txt", FK_SHORT_NEEDS_LFN,
	 "_X_     TXT", 0},
	{"non-ASCII first",
	 "\xc3\xbc"
	 "ber.txt",
	 FK_SHORT_NEEDS_LFN, "_BER    TXT", 0},
	{"non-ASCII inside", "na\xc3\xafve.txt", FK_SHORT_NEEDS_LFN,
	 "NA_VE   TXT", 0},
	{"non-ASCII extension", "x.\xc3\xbc", FK_SHORT_NEEDS_LFN, "X       _  ",
	 0},
	{"four-byte character", "\xf0\x9f\x98\x80.txt", FK_SHORT_NEEDS_LFN,
	 "_       TXT", 0},
	{"only a space before the dot", " .txt", FK_SHORT_NEEDS_LFN,
	 "_       TXT", 0},
};

static void test_short_fit(void)
{
	size_t i;

	for (i = 0; i < NROWS(fit_rows); i++) {
		const struct fit_row *r = &fit_rows[i];
		unsigned char raw[11];
		uint8_t nt = 0xee;
		int ret = fk_short_fit(r->name, raw, &nt);

		OK(ret == r->ret && !memcmp(raw, r->raw, 11) &&
			   (ret != FK_SHORT_EXACT || nt == r->nt),
		   "fk_short_fit: %s (\"%s\" -> %d \"%.11s\" nt 0x%02x)",
		   r->edge, r->name, ret, (const char *)raw, nt);
	}
	OK(fk_short_fit("a*b", (unsigned char[11]){0}, &(uint8_t){0}) ==
		   -EINVAL,
	   "fk_short_fit: an illegal long name is refused");
	OK(fk_short_fit("name.", (unsigned char[11]){0}, &(uint8_t){0}) ==
		   -EINVAL,
	   "fk_short_fit: a trailing dot is refused");
}

static const struct alias_row {
	const char *edge;
	const char *basis;
	unsigned k;
	const char *raw; /* '#': any upper-case hex digit; NULL: -EEXIST */
} alias_rows[] = {
	{"~1", "LONGFILETXT", 1, "LONGFI~1TXT"},
	{"~2", "LONGFILETXT", 2, "LONGFI~2TXT"},
	{"~4, the last plain one", "LONGFILETXT", 4, "LONGFI~4TXT"},
	{"~5 is hashed", "LONGFILETXT", 5, "LO####~1TXT"},
	{"~13 is the last hashed one", "LONGFILETXT", 13, "LO####~9TXT"},
	{"past the hashed ones", "LONGFILETXT", 14, "LONGFI~6TXT"},
	{"~9", "LONGFILETXT", 17, "LONGFI~9TXT"},
	{"~10 keeps 8 characters", "LONGFILETXT", 18, "LONGF~10TXT"},
	{"~99", "LONGFILETXT", 107, "LONGF~99TXT"},
	{"~100 keeps 8 characters", "LONGFILETXT", 108, "LONG~100TXT"},
	{"~999991, the last", "LONGFILETXT", 999999, "L~999991TXT"},
	{"past the last", "LONGFILETXT", 1000000, NULL},
	{"k of 0", "LONGFILETXT", 0, NULL},
	{"short basis ~1", "AB      TXT", 1, "AB~1    TXT"},
	{"short basis ~10", "AB      TXT", 18, "AB~10   TXT"},
	{"short basis hashed", "AB      TXT", 5, "AB####~1TXT"},
	{"one-letter basis hashed", "A          ", 6, "A####~2    "},
	{"basis of 6 ~1", "ABCDEFTXT", 1, "ABCDEF~1TXT"},
	{"basis of 7 ~1 is cut", "ABCDEFGTXT", 1, "ABCDEF~1TXT"},
	{"basis of 7 ~10 is cut", "ABCDEFGTXT", 18, "ABCDE~10TXT"},
	{"no extension ~3", "MAKEFILE   ", 3, "MAKEFI~3   "},
};

static int alias_matches(const unsigned char *raw, const char *want)
{
	int i;

	for (i = 0; i < 11; i++) {
		if (want[i] == '#') {
			if (!((raw[i] >= '0' && raw[i] <= '9') ||
			      (raw[i] >= 'A' && raw[i] <= 'F')))
				return 0;
		} else if (raw[i] != (unsigned char)want[i]) {
			return 0;
		}
	}
	return 1;
}

static void test_short_alias(void)
{
	size_t i;

	for (i = 0; i < NROWS(alias_rows); i++) {
		const struct alias_row *r = &alias_rows[i];
		unsigned char basis[11], raw[11];
		int err;

		/* Rows write short bases unpadded; pad to 8 + 3. */
		memset(basis, ' ', 11);
		if (strlen(r->basis) == 11) {
			memcpy(basis, r->basis, 11);
		} else {
			size_t blen = strlen(r->basis) - 3;

			memcpy(basis, r->basis, blen);
			memcpy(basis + 8, r->basis + blen, 3);
		}
		memset(raw, '?', 11);
		err = fk_short_alias(basis, "some long name.txt", r->k, raw);
		if (!r->raw)
			OK(err == -EEXIST, "fk_short_alias: %s (err %d)",
			   r->edge, err);
		else
			OK(!err && alias_matches(raw, r->raw) &&
				   fk_short_is_valid(raw),
			   "fk_short_alias: %s (k %u -> \"%.11s\")", r->edge,
			   r->k, (const char *)raw);
	}
}

/* Every alias of one name differs from every other: k 1 .. 2000. */
static void test_alias_unique(void)
{
	static unsigned char seen[2000][11];
	const unsigned char basis[11] = {'L', 'O', 'N', 'G', 'F', 'I',
					 'L', 'E', 'T', 'X', 'T'};
	unsigned k, j, dups = 0, bad = 0;

	for (k = 1; k <= 2000; k++) {
		unsigned char *raw = seen[k - 1];

		if (fk_short_alias(basis, "longfilename.txt", k, raw) ||
		    !fk_short_is_valid(raw) || memcmp(raw + 8, "TXT", 3))
			bad++;
		for (j = 1; j < k; j++)
			dups += !memcmp(seen[j - 1], raw, 11);
	}
	OK(!bad && !dups,
	   "fk_short_alias: k 1..2000 are valid and distinct (%u bad, %u "
	   "duplicates)",
	   bad, dups);
	{
		unsigned char a[11], b[11];

		fk_short_alias(basis, "longfilename.txt", 7, a);
		fk_short_alias(basis, "longfilename.txt", 7, b);
		OK(!memcmp(a, b, 11), "fk_short_alias: hashed tail is stable");
	}
}

static const struct display_row {
	const char *edge;
	const char *raw;
	uint8_t nt;
	const char *shown;
} display_rows[] = {
	{"upper", "README  TXT", 0, "README.TXT"},
	{"NT lower base", "README  TXT", FK_NT_LOWER_BASE, "readme.TXT"},
	{"NT lower extension", "README  TXT", FK_NT_LOWER_EXT, "README.txt"},
	{"NT lower both", "README  TXT", FK_NT_LOWER_BASE | FK_NT_LOWER_EXT,
	 "readme.txt"},
	{"no extension", "NOEXT      ", 0, "NOEXT"},
	{"no extension, NT lower", "NOEXT      ", FK_NT_LOWER_BASE, "noext"},
	{"full 8.3", "ABCDEFGHTXT", 0, "ABCDEFGH.TXT"},
	{"NT flags leave digits and ~", "LONGFI~1TXT", FK_NT_LOWER_BASE,
	 "longfi~1.TXT"},
	{"0x05 first byte shows 0xE5 (CP850 O tilde)",
	 "\x05"
	 "BC     TXT",
	 0,
	 "\xc3\x95"
	 "BC.TXT"},
	{"0x05 with NT lower: O tilde lowered like the rest",
	 "\x05"
	 "BC     TXT",
	 FK_NT_LOWER_BASE,
	 "\xc3\xb5"
	 "bc.TXT"},
	{"NT lower both: code page letters lowered (E acute)",
	 "R\x90SUM\x90  DOC", FK_NT_LOWER_BASE | FK_NT_LOWER_EXT,
	 "r\xc3\xa9sum\xc3\xa9.doc"},
	{"NT lower base only: extension's E acute kept", "R\x90SUM\x90  \x90X ",
	 FK_NT_LOWER_BASE, "r\xc3\xa9sum\xc3\xa9.\xc3\x89X"},
	{"NT lower ext only: base's E acute kept", "R\x90SUM\x90  \x90X ",
	 FK_NT_LOWER_EXT, "R\xc3\x89SUM\xc3\x89.\xc3\xa9x"},
	{"NT lower: multiplication sign, no letter, kept", "A\x9e      TXT",
	 FK_NT_LOWER_BASE, "a\xc3\x97.TXT"},
	{"NT lower: dotless i and already-lower letters kept",
	 "\xd5\x82\x9f     TXT", FK_NT_LOWER_BASE,
	 "\xc4\xb1\xc3\xa9\xc6\x92.TXT"},
	{"NT lower: U umlaut and AE lowered", "\x9a\x92      TXT",
	 FK_NT_LOWER_BASE, "\xc3\xbc\xc3\xa6.TXT"},
	{"0x05 only special first",
	 "A\x05"
	 "      TXT",
	 0, "A?.TXT"},
	{"CP850 u umlaut",
	 "\x81"
	 "BER    TXT",
	 0,
	 "\xc3\xbc"
	 "BER.TXT"},
	{"CP850 U umlaut",
	 "\x9a"
	 "BER    TXT",
	 0,
	 "\xc3\x9c"
	 "BER.TXT"},
	{"control character as ?",
	 "\x01"
	 "ABC    TXT",
	 0, "?ABC.TXT"},
	{"dot entry", ".          ", 0, "."},
	{"empty base: the extension's first byte", "        TXT", 0, ".TXT"},
	{"dot dot entry", "..         ", 0, ".."},
};

static void test_short_display(void)
{
	size_t i;
	char out[40];

	for (i = 0; i < NROWS(display_rows); i++) {
		const struct display_row *r = &display_rows[i];

		fk_short_display((const unsigned char *)r->raw, r->nt, out,
				 sizeof(out));
		OK(!strcmp(out, r->shown), "fk_short_display: %s (\"%s\")",
		   r->edge, out);
	}
	memset(out, '#', sizeof(out));
	fk_short_display((const unsigned char *)"README  TXT", 0, out, 5);
	OK(!strcmp(out, "READ") && out[5] == '#',
	   "fk_short_display: a short buffer is cut and terminated");
}

static void test_short_fold(void)
{
	unsigned bad = 0, c, nt;
	uint16_t out[FK_SHORT_UNITS];
	uint64_t h;
	size_t i, n;

	for (i = 0; i < NROWS(display_rows); i++) {
		const struct display_row *r = &display_rows[i];

		n = fk_short_fold((const unsigned char *)r->raw, out, &h);
		OK(folds_as(out, n, h, r->shown),
		   "fk_short_fold: %s folds as it shows", r->edge);
	}
	for (c = 0; c < 256; c++) {
		for (nt = 0; nt < 4; nt++) {
			unsigned char raw[11] = "A       A  ";
			char shown[40];

			raw[c & 1 ? 0 : 7] = (unsigned char)c;
			raw[9] = (unsigned char)c;
			fk_short_display(raw, (uint8_t)(nt * FK_NT_LOWER_BASE),
					 shown, sizeof(shown));
			n = fk_short_fold(raw, out, &h);
			if (!folds_as(out, n, h, shown))
				bad++;
		}
	}
	OK(!bad,
	   "fk_short_fold: every byte, first or not, folds as it shows "
	   "(%u bad)",
	   bad);
}

static const struct valid_row {
	const char *edge;
	const char *raw;
	int is_valid;
} valid_rows[] = {
	{"plain", "README  TXT", 1},
	{"one character", "A          ", 1},
	{"alias", "LONGFI~1TXT", 1},
	{"every special", "!#$%&'()-@^", 1},
	{"more specials", "_`{}~   A  ", 1},
	{"OEM byte",
	 "\x81"
	 "BER    TXT",
	 1},
	{"0x05 first byte (0xE5 name)",
	 "\x05"
	 "BC     TXT",
	 1},
	{"lower case", "readme  txt", 0},
	{"lower case extension", "README  txt", 0},
	{"leading space", " README TXT", 0},
	{"empty base", "        TXT", 0},
	{"space inside the base", "READ ME TXT", 1},
	{"space inside the extension", "README  T X", 1},
	{"extension starting with space", "README   TX", 1},
	{"plus", "A+B     TXT", 0},
	{"dot inside", "A.B     TXT", 0},
	{"asterisk", "A*      TXT", 0},
	{"control character first",
	 "\x01"
	 "ABC    TXT",
	 0},
	{"control character later",
	 "AB\x01"
	 "     TXT",
	 0},
	{"0x05 later",
	 "AB\x05"
	 "     TXT",
	 0},
	{"0x05 first, then lower case",
	 "\x05"
	 "bc     TXT",
	 0},
	{"0x05 first, then an illegal byte",
	 "\x05"
	 "B*     TXT",
	 0},
	{"0x05 first, then a space inside",
	 "\x05"
	 " C     TXT",
	 1},
};

static void test_short_is_valid(void)
{
	size_t i;

	for (i = 0; i < NROWS(valid_rows); i++) {
		const struct valid_row *r = &valid_rows[i];

		OK(fk_short_is_valid((const unsigned char *)r->raw) ==
			   r->is_valid,
		   "fk_short_is_valid: %s", r->edge);
	}
}

/*
 * Choosing a unique short name: the directory's names in use are the
 * first @ntaken candidates asked about, plus those listed in @taken.
 */
struct taken_set {
	unsigned ntaken, asked;
	const char *const *taken;
};

static int is_taken(const void *arg, const unsigned char raw[11])
{
	struct taken_set *t = (struct taken_set *)arg;
	size_t i;

	if (t->asked++ < t->ntaken)
		return 1;
	for (i = 0; t->taken && t->taken[i]; i++)
		if (!memcmp(raw, t->taken[i], 11))
			return 1;
	return 0;
}

static const char *const taken_1_3[] = {"LONGFI~1TXT", "LONGFI~3TXT", NULL};
static const char *const taken_plain[] = {"LONGFI~1TXT", "LONGFI~2TXT",
					  "LONGFI~3TXT", "LONGFI~4TXT", NULL};
static const char *const taken_exact[] = {"README  TXT", NULL};

static const struct choose_row {
	const char *edge;
	const char *name;
	unsigned ntaken;
	const char *const *taken;
	int want; /* FK_SHORT_EXACT, FK_SHORT_NEEDS_LFN or -errno */
	const char *raw;
	uint8_t nt;
} choose_rows[] = {
	{"exact 8.3, free", "readme.txt", 0, NULL, FK_SHORT_EXACT,
	 "README  TXT", FK_NT_LOWER_BASE | FK_NT_LOWER_EXT},
	{"exact 8.3, taken: ~1", "readme.txt", 0, taken_exact,
	 FK_SHORT_NEEDS_LFN, "README~1TXT", 0},
	{"long name: ~1", "Long File Name.txt", 0, NULL, FK_SHORT_NEEDS_LFN,
	 "LONGFI~1TXT", 0},
	{"~1 taken: ~2", "longfilename.txt", 1, NULL, FK_SHORT_NEEDS_LFN,
	 "LONGFI~2TXT", 0},
	{"first free, not one past the last", "longfilename.txt", 0, taken_1_3,
	 FK_SHORT_NEEDS_LFN, "LONGFI~2TXT", 0},
	{"~1..~4 taken: hashed", "longfilename.txt", 0, taken_plain,
	 FK_SHORT_NEEDS_LFN, "LO####~1TXT", 0},
	{"hashed ~1..~8 taken: hashed ~9", "longfilename.txt", 12, NULL,
	 FK_SHORT_NEEDS_LFN, "LO####~9TXT", 0},
	{"every hashed one taken", "longfilename.txt", 13, NULL,
	 FK_SHORT_NEEDS_LFN, "LONGFI~6TXT", 0},
	{"~9", "longfilename.txt", 16, NULL, FK_SHORT_NEEDS_LFN, "LONGFI~9TXT",
	 0},
	{"~10 keeps 8 characters", "longfilename.txt", 17, NULL,
	 FK_SHORT_NEEDS_LFN, "LONGF~10TXT", 0},
	{"~100", "longfilename.txt", 107, NULL, FK_SHORT_NEEDS_LFN,
	 "LONG~100TXT", 0},
	{"the last alias", "longfilename.txt", 999998, NULL, FK_SHORT_NEEDS_LFN,
	 "L~999991TXT", 0},
	{"past the last alias", "longfilename.txt", 999999, NULL, -EEXIST, NULL,
	 0},
	{"exact taken, then every alias", "README.TXT", 1000000, NULL, -EEXIST,
	 NULL, 0},
	{"a refused name", "a:b", 0, NULL, -EINVAL, NULL, 0},
};

static void test_short_choose(void)
{
	size_t i;

	for (i = 0; i < NROWS(choose_rows); i++) {
		const struct choose_row *r = &choose_rows[i];
		struct taken_set t = {r->ntaken, 0, r->taken};
		unsigned char raw[11];
		uint8_t nt = 0xff;
		int got = fk_short_choose(r->name, is_taken, &t, raw, &nt);

		if (r->want < 0)
			OK(got == r->want, "fk_short_choose: %s (%d)", r->edge,
			   got);
		else
			OK(got == r->want && alias_matches(raw, r->raw) &&
				   nt == r->nt,
			   "fk_short_choose: %s (\"%.11s\", nt 0x%x)", r->edge,
			   got == r->want ? (const char *)raw : "", nt);
	}
}

/* fsck.fat renames BAD names, and warns of none of the ODD ones. */
static const struct sverdict_row {
	const char *edge;
	const char *raw;
	enum fk_short_verdict want;
} sverdict_rows[] = {
	{"plain", "README  TXT", FK_SHORT_VALID},
	{"0x05 first byte",
	 "\x05"
	 "BC     TXT",
	 FK_SHORT_VALID},
	{"OEM byte",
	 "\x9a"
	 "BER    TXT",
	 FK_SHORT_VALID},
	{"lower case", "readme  txt", FK_SHORT_ODD},
	{"empty base", "        TXT", FK_SHORT_BAD},
	{"leading space, then a name", " README TXT", FK_SHORT_BAD},
	{"plus", "A+B     TXT", FK_SHORT_ODD},
	{"comma, semicolon, equals", "A,B;C=D    ", FK_SHORT_ODD},
	{"brackets", "A[B]    TXT", FK_SHORT_ODD},
	{"dot inside", "A.B     TXT", FK_SHORT_ODD},
	{"every forbidden character is bad", "A*      TXT", FK_SHORT_BAD},
	{"question mark", "A?      TXT", FK_SHORT_BAD},
	{"less than", "A<      TXT", FK_SHORT_BAD},
	{"greater than", "A>      TXT", FK_SHORT_BAD},
	{"bar", "A|      TXT", FK_SHORT_BAD},
	{"double quote", "A\"      TXT", FK_SHORT_BAD},
	{"backslash", "A\\      TXT", FK_SHORT_BAD},
	{"slash", "A/      TXT", FK_SHORT_BAD},
	{"colon", "A:      TXT", FK_SHORT_BAD},
	{"DEL", "A\x7f      TXT", FK_SHORT_BAD},
	{"control character", "A\x01      TXT", FK_SHORT_BAD},
	{"NUL inside", "A\0      TXT", FK_SHORT_BAD},
	{"0x05 later", "AB\x05     TXT", FK_SHORT_BAD},
	{"space inside the base", "READ ME TXT", FK_SHORT_VALID},
	{"space inside the extension", "README  T X", FK_SHORT_VALID},
	{"extension starting with space", "README   TX", FK_SHORT_VALID},
	{"lower case, then a bad byte", "a*      TXT", FK_SHORT_BAD},
	{"spaces only (a leading space)", "           ", FK_SHORT_BAD},
};

static void test_short_check(void)
{
	size_t i;

	for (i = 0; i < NROWS(sverdict_rows); i++) {
		const struct sverdict_row *r = &sverdict_rows[i];
		enum fk_short_verdict v =
			fk_short_check((const unsigned char *)r->raw);

		OK(v == r->want, "fk_short_check: %s (%d, want %d)", r->edge, v,
		   r->want);
	}
}

/* The byte rules as the specification lists them, with strchr(). */
static enum fk_short_verdict ref_short_byte(unsigned char c)
{
	if (c < 0x20 || c == 0x7f || strchr("\"*/:<>?\\|", c))
		return FK_SHORT_BAD;
	if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80 ||
	    (c > 0x20 && strchr("!#$%&'()-@^_`{}~", c)))
		return FK_SHORT_VALID;
	return FK_SHORT_ODD;
}

/* Every byte but the space, as the second of the base and of the
 * extension. */
static void test_short_check_bytes(void)
{
	unsigned bad = 0, c;

	for (c = 1; c < 256; c++) {
		unsigned char base[11] = "A          ", ext[11] = "A       A  ";

		if (c == ' ')
			continue;
		base[1] = (unsigned char)c;
		ext[9] = (unsigned char)c;
		if (fk_short_check(base) != ref_short_byte((unsigned char)c) ||
		    fk_short_check(ext) != ref_short_byte((unsigned char)c))
			bad++;
	}
	OK(!bad, "fk_short_check: every byte as the rules list it (%u bad)",
	   bad);
}

/* Volume labels, after fsck.fat 4.2's validate_volume_label(). */
static const struct label_row {
	const char *edge;
	const char raw[12];
	enum fk_label_verdict want;
} label_rows[] = {
	{"upper case, digits and a space", "MY CARD 01 ", FK_LABEL_VALID},
	{"'NO NAME'", "NO NAME    ", FK_LABEL_VALID},
	{"punctuation labels may hold", "A-B_C!#$%&'", FK_LABEL_VALID},
	{"lower case", "myCard     ", FK_LABEL_LOWER},
	{"a code-page letter", "\x90TE        ", FK_LABEL_HIGH},
	{"a code-page letter and lower case", "\x90te        ", FK_LABEL_LOWER},
	{"0x05 stands for 0xE5", "\x05TE        ", FK_LABEL_HIGH},
	{"a control character",
	 "AB\x01"
	 "CD      ",
	 FK_LABEL_BAD},
	{"a NUL", "AB\0CD      ", FK_LABEL_BAD},
	{"'*'", "A*B        ", FK_LABEL_BAD},
	{"'.'", "NAME.EXT   ", FK_LABEL_BAD},
	{"'\\'", "A\\B        ", FK_LABEL_BAD},
	{"'|'", "A|B        ", FK_LABEL_BAD},
	{"blank", "           ", FK_LABEL_BAD},
	{"a leading space", " LEAD      ", FK_LABEL_BAD},
};

static void test_label_check(void)
{
	const char *why;
	size_t i;

	for (i = 0; i < NROWS(label_rows); i++) {
		const struct label_row *r = &label_rows[i];
		enum fk_label_verdict v =
			fk_label_check((const unsigned char *)r->raw, &why);

		OK(v == r->want && (v == FK_LABEL_BAD) == (why != NULL),
		   "fk_label_check: %s (%d, want %d; %s)", r->edge, v, r->want,
		   why ? why : "no reason");
	}
}

void suite_names(void)
{
	test_checksum();
	test_utf_round_trip();
	test_bad_utf8();
	test_utf16_to_utf8();
	test_utf16_limits();
	test_utf16_display();
	test_upcase();
	test_name_equal();
	test_name_hash();
	test_name_hash_defined();
	test_lfn_fold();
	test_label_check();
	test_name_compare();
	test_name_check();
	test_name_explain();
	test_short_fit();
	test_short_alias();
	test_alias_unique();
	test_short_display();
	test_short_fold();
	test_short_check();
	test_short_check_bytes();
	test_short_choose();
	test_short_is_valid();
}
