/*
 * names.c: long names, short names and aliases, case folding, UTF-8 and
 * UCS-2.  Rules follow the Microsoft FAT specification ("FAT Long
 * Directory Entries", "Short name generation") and what Windows and mtools
 * do where it is silent.  No I/O.
 */
#include "lib/names.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Code page 850, mtools' default, for OEM bytes 0x80-0xFF. */
static const uint16_t cp850[128] = {
	0x00c7, 0x00fc, 0x00e9, 0x00e2, 0x00e4, 0x00e0, 0x00e5, 0x00e7, 0x00ea,
	0x00eb, 0x00e8, 0x00ef, 0x00ee, 0x00ec, 0x00c4, 0x00c5, 0x00c9, 0x00e6,
	0x00c6, 0x00f4, 0x00f6, 0x00f2, 0x00fb, 0x00f9, 0x00ff, 0x00d6, 0x00dc,
	0x00f8, 0x00a3, 0x00d8, 0x00d7, 0x0192, 0x00e1, 0x00ed, 0x00f3, 0x00fa,
	0x00f1, 0x00d1, 0x00aa, 0x00ba, 0x00bf, 0x00ae, 0x00ac, 0x00bd, 0x00bc,
	0x00a1, 0x00ab, 0x00bb, 0x2591, 0x2592, 0x2593, 0x2502, 0x2524, 0x00c1,
	0x00c2, 0x00c0, 0x00a9, 0x2563, 0x2551, 0x2557, 0x255d, 0x00a2, 0x00a5,
	0x2510, 0x2514, 0x2534, 0x252c, 0x251c, 0x2500, 0x253c, 0x00e3, 0x00c3,
	0x255a, 0x2554, 0x2569, 0x2566, 0x2560, 0x2550, 0x256c, 0x00a4, 0x00f0,
	0x00d0, 0x00ca, 0x00cb, 0x00c8, 0x0131, 0x00cd, 0x00ce, 0x00cf, 0x2518,
	0x250c, 0x2588, 0x2584, 0x00a6, 0x00cc, 0x2580, 0x00d3, 0x00df, 0x00d4,
	0x00d2, 0x00f5, 0x00d5, 0x00b5, 0x00fe, 0x00de, 0x00da, 0x00db, 0x00d9,
	0x00fd, 0x00dd, 0x00af, 0x00b4, 0x00ad, 0x00b1, 0x2017, 0x00be, 0x00b6,
	0x00a7, 0x00f7, 0x00b8, 0x00b0, 0x00a8, 0x00b7, 0x00b9, 0x00b3, 0x00b2,
	0x25a0, 0x00a0,
};

uint8_t fk_lfn_checksum(const unsigned char raw[11])
{
	uint8_t sum = 0;
	int i;

	for (i = 0; i < 11; i++)
		sum = (uint8_t)(((sum & 1) << 7) + (sum >> 1) + raw[i]);
	return sum;
}

/* Append code point @cp to @out as UTF-8; returns bytes or 0 if full. */
static size_t put_utf8(uint32_t cp, char *out, size_t room)
{
	unsigned char *p = (unsigned char *)out;

	if (cp < 0x80 && room > 1) {
		p[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800 && room > 2) {
		p[0] = (unsigned char)(0xc0 | cp >> 6);
		p[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000 && room > 3) {
		p[0] = (unsigned char)(0xe0 | cp >> 12);
		p[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		p[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	if (cp >= 0x10000 && room > 4) {
		p[0] = (unsigned char)(0xf0 | cp >> 18);
		p[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
		p[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		p[3] = (unsigned char)(0x80 | (cp & 0x3f));
		return 4;
	}
	return 0;
}

/*
 * The one rule for UTF-16 surrogates, which the conversion to UTF-8 and
 * the folding both follow (so a name folds as it prints): a high half
 * followed by a low half is a pair; any other half is lone, read as
 * U+FFFD.
 */
enum { UNIT_PLAIN, UNIT_PAIR, UNIT_LONE };

static int unit_kind(const uint16_t *in, size_t i, size_t n)
{
	uint16_t c = in[i];

	if (c < 0xd800 || c >= 0xe000)
		return UNIT_PLAIN;
	if (c < 0xdc00 && i + 1 < n && in[i + 1] >= 0xdc00 &&
	    in[i + 1] < 0xe000)
		return UNIT_PAIR;
	return UNIT_LONE;
}

int fk_utf16_to_utf8(const uint16_t *in, size_t n, char *out, size_t len)
{
	size_t i, o = 0, k;

	for (i = 0; i < n; i++) {
		uint32_t cp = in[i];

		if (cp < 0x80 && len - o > 1) { /* most names are ASCII */
			out[o++] = (char)cp;
			continue;
		}
		switch (unit_kind(in, i, n)) {
		case UNIT_PAIR:
			cp = 0x10000 + ((cp - 0xd800) << 10) +
			     (in[i + 1] - 0xdc00);
			i++;
			break;
		case UNIT_LONE:
			cp = 0xfffd;
			break;
		}
		if (!(k = put_utf8(cp, out + o, len - o)))
			return -ENAMETOOLONG;
		o += k;
	}
	out[o] = '\0';
	return 0;
}

/* Would @u upset a terminal, or read as other text, printed as it is? */
static int is_unsafe_unit(uint16_t u)
{
	return u < 0x20 || (u >= 0x7f && u < 0xa0) || u == '\\' ||
	       (u >= 0x200e && u <= 0x200f) || (u >= 0x202a && u <= 0x202e) ||
	       (u >= 0x2066 && u <= 0x2069) || u >= 0xfffe;
}

void fk_utf16_display(const uint16_t *in, size_t n, char *out, size_t len)
{
	size_t i, o = 0, k, room = len - 4; /* "..." and NUL kept back */
	char esc[8];

	for (i = 0; i < n; i++, o += k) {
		uint32_t cp = in[i];

		if (is_unsafe_unit(in[i])) {
			snprintf(esc, sizeof(esc),
				 cp < 0x100 ? "\\x%02x" : "\\u%04x",
				 (unsigned)cp);
			k = strlen(esc);
			if (k >= room - o)
				break;
			memcpy(out + o, esc, k);
			continue;
		}
		switch (unit_kind(in, i, n)) {
		case UNIT_PAIR:
			cp = 0x10000 + ((cp - 0xd800) << 10) +
			     (in[i + 1] - 0xdc00);
			break;
		case UNIT_LONE:
			cp = 0xfffd;
			break;
		}
		if (!(k = put_utf8(cp, out + o, room - o)))
			break;
		if (cp >= 0x10000)
			i++;
	}
	if (i < n) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

/* Decode one UTF-8 sequence at *@s; returns the code point or -1. */
static long next_cp(const unsigned char **s)
{
	const unsigned char *p = *s;
	unsigned need, i;
	uint32_t cp;

	if (p[0] < 0x80) {
		*s = p + 1;
		return p[0];
	}
	if ((p[0] & 0xe0) == 0xc0) {
		need = 1;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		need = 2;
		cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		need = 3;
		cp = p[0] & 0x07;
	} else {
		return -1;
	}
	for (i = 1; i <= need; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past Unicode are invalid. */
	if ((need == 1 && cp < 0x80) || (need == 2 && cp < 0x800) ||
	    (need == 3 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp < 0xe000))
		return -1;
	*s = p + need + 1;
	return (long)cp;
}

int fk_utf8_to_utf16(const char *in, uint16_t *out, size_t max, size_t *n)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0;

	while (*s) {
		long cp;

		if (*s < 0x80) { /* most names are ASCII */
			if (o + 1 > max)
				return -ENAMETOOLONG;
			out[o++] = *s++;
			continue;
		}
		if ((cp = next_cp(&s)) < 0)
			return -EILSEQ;
		if (cp >= 0x10000) {
			if (o + 2 > max)
				return -ENAMETOOLONG;
			out[o++] = (uint16_t)(0xd800 + ((cp - 0x10000) >> 10));
			out[o++] =
				(uint16_t)(0xdc00 + ((cp - 0x10000) & 0x3ff));
		} else {
			if (o + 1 > max)
				return -ENAMETOOLONG;
			out[o++] = (uint16_t)cp;
		}
	}
	*n = o;
	return 0;
}

uint16_t fk_upcase(uint16_t c)
{
	if (c < 0xe0) /* below the first lower-case letter past ASCII */
		return c >= 'a' && c <= 'z' ? (uint16_t)(c - 32) : c;
	if ((c >= 0xe0 && c <= 0xfe && c != 0xf7) ||
	    (c >= 0x3b1 && c <= 0x3cb && c != 0x3c2) ||
	    (c >= 0x430 && c <= 0x44f))
		return (uint16_t)(c - 32);
	if (c == 0xff)
		return 0x178;
	if (c >= 0x450 && c <= 0x45f)
		return (uint16_t)(c - 80);
	/* Latin Extended-A pairs upper/lower case as even/odd, but for the
	 * stretches 0x139-0x148 and 0x179-0x17e, which pair odd/even. */
	if ((c >= 0x100 && c <= 0x137 && (c & 1) && c != 0x131) ||
	    (c >= 0x14a && c <= 0x177 && (c & 1)))
		return (uint16_t)(c - 1);
	if (((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) &&
	    !(c & 1))
		return (uint16_t)(c - 1);
	return c;
}

/*
 * @name as UTF-16 units folded to upper case, FK_LFN_MAX + 1 of them at
 * most: the form in which names are compared and hashed.  Returns the
 * count, or -1 when @name is not valid UTF-8 or too long.
 */
static long fold(const char *name, uint16_t *u)
{
	size_t n, i;

	if (fk_utf8_to_utf16(name, u, FK_LFN_MAX + 1, &n))
		return -1;
	for (i = 0; i < n; i++)
		u[i] = fk_upcase(u[i]);
	return (long)n;
}

/*
 * The length of @name when it is all ASCII and fold() takes it, else -1.
 * ASCII names, the common case, fold byte by byte with no UTF-16 copy:
 * the checker hashes and compares every name of every directory.
 */
static long ascii_len(const char *name)
{
	long n = 0;

	while (name[n]) {
		if ((unsigned char)name[n] >= 0x80 || n == FK_LFN_MAX + 1)
			return -1;
		n++;
	}
	return n;
}

static unsigned char ascii_upper(unsigned char c)
{
	return c >= 'a' && c <= 'z' ? (unsigned char)(c - 32) : c;
}

/* fk_name_compare() of two names ascii_len() took: @na and @nb long. */
static int ascii_compare(const char *a, long na, const char *b, long nb)
{
	long i;

	for (i = 0; i < na && i < nb; i++) {
		unsigned char x = ascii_upper((unsigned char)a[i]);
		unsigned char y = ascii_upper((unsigned char)b[i]);

		if (x != y)
			return x < y ? -1 : 1;
	}
	return na < nb ? -1 : na > nb;
}

int fk_name_compare(const char *a, const char *b)
{
	uint16_t ua[FK_LFN_MAX + 1], ub[FK_LFN_MAX + 1];
	long na = ascii_len(a), nb = ascii_len(b), i;

	if (na >= 0 && nb >= 0)
		return ascii_compare(a, na, b, nb);
	na = fold(a, ua);
	nb = fold(b, ub);
	if (na < 0 || nb < 0)
		return na < 0 && nb < 0 ? strcmp(a, b) : na < 0 ? 1 : -1;
	for (i = 0; i < na && i < nb; i++)
		if (ua[i] != ub[i])
			return ua[i] < ub[i] ? -1 : 1;
	return na < nb ? -1 : na > nb;
}

int fk_name_equal(const char *a, const char *b)
{
	return !fk_name_compare(a, b);
}

/* FNV-1a: any stable hash would do; this one is short and spreads well. */
#define FNV_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * FNV_PRIME;
	return h;
}

/* FNV-1a of one folded unit's two bytes, low first: for the units below
 * 0x100 (most names) the high byte's step is a second multiplication. */
static uint64_t fnv_unit(uint64_t h, uint16_t u)
{
	if (u < 0x100)
		return (h ^ u) * (FNV_PRIME * FNV_PRIME);
	return ((h ^ (u & 0xff)) * FNV_PRIME ^ u >> 8) * FNV_PRIME;
}

uint64_t fk_name_hash(const char *name)
{
	uint16_t u[FK_LFN_MAX + 1];
	uint64_t h = FNV_BASIS;
	long n = ascii_len(name), i;

	if (n >= 0) {
		for (i = 0; i < n; i++)
			h = fnv_unit(h, ascii_upper((unsigned char)name[i]));
		return h;
	}
	n = fold(name, u);
	/* fk_name_compare() takes such names byte by byte: so do we. */
	if (n < 0)
		return fnv(h, (const unsigned char *)name, strlen(name));
	for (i = 0; i < n; i++)
		h = fnv_unit(h, u[i]);
	return h;
}

uint64_t fk_lfn_fold(const uint16_t *in, size_t n, uint16_t *out)
{
	uint64_t h = FNV_BASIS;
	size_t i = 0;

	while (i < n) {
		uint16_t c;

		for (; i < n && in[i] < 0x80; i++) { /* most names are ASCII */
			c = ascii_upper((unsigned char)in[i]);
			out[i] = c;
			h = fnv_unit(h, c);
		}
		if (i == n)
			break;
		c = in[i];
		/* A pair is kept as it is (fk_upcase() maps no character
		 * past U+FFFF), a lone half reads as U+FFFD, as in UTF-8. */
		switch (unit_kind(in, i, n)) {
		case UNIT_PAIR:
			out[i++] = c;
			h = fnv_unit(h, c);
			c = in[i];
			break;
		case UNIT_LONE:
			c = 0xfffd;
			break;
		default:
			c = fk_upcase(c);
		}
		out[i++] = c;
		h = fnv_unit(h, c);
	}
	return h;
}

uint64_t fk_short_hash(const unsigned char raw[11])
{
	return fnv(FNV_BASIS, raw, 11);
}

/* What OEM byte @c shows as: its code page 850 character, or '?' for a
 * control character, which no name may show. */
static uint32_t oem_cp(unsigned char c)
{
	uint32_t cp = c < 0x80 ? c : cp850[c - 0x80];

	return cp < 0x20 ? '?' : cp;
}

/*
 * The lower-case partner of @c that fk_upcase() raises to it, or @c when
 * it has none: what an NT lower-case flag makes of a code page letter, as
 * Windows and Linux show it (0x90, "É", shows as "é").
 */
static uint32_t lower_cp(uint32_t c)
{
	if ((c >= 0xc0 && c <= 0xde && c != 0xd7) ||
	    (c >= 0x391 && c <= 0x3ab && c != 0x3a2) ||
	    (c >= 0x410 && c <= 0x42f))
		return c + 32;
	if (c == 0x178)
		return 0xff;
	if (c >= 0x400 && c <= 0x40f)
		return c + 80;
	if ((c >= 0x100 && c <= 0x137 && !(c & 1) && c != 0x130) ||
	    (c >= 0x14a && c <= 0x177 && !(c & 1)))
		return c + 1;
	if (((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) &&
	    (c & 1))
		return c + 1;
	return c;
}

#define SHORT_E5_STORED 0x05 /* stands for FK_SHORT_DELETED */

void fk_short_escape(unsigned char raw[11])
{
	if (raw[0] == FK_SHORT_DELETED)
		raw[0] = SHORT_E5_STORED;
}

unsigned char fk_short_first(const unsigned char raw[11])
{
	return raw[0] == SHORT_E5_STORED ? FK_SHORT_DELETED : raw[0];
}

/*
 * The bytes fk_short_display() shows for @raw, before code page 850 and
 * the NT flags: the base and the extension with their trailing spaces cut,
 * a dot between them when there is an extension, and the deleted marker's
 * stand-in as the byte it means.  Returns how many; *@base_len is the
 * base's.
 */
static size_t short_bytes(const unsigned char raw[11],
			  unsigned char out[FK_SHORT_UNITS], size_t *base_len)
{
	size_t b, e;

	for (b = 8; b > 0 && raw[b - 1] == ' '; b--)
		;
	for (e = 3; e > 0 && raw[8 + e - 1] == ' '; e--)
		;
	/* Whole parts, fixed lengths: copies with no call. */
	memcpy(out, raw, 8);
	out[0] = fk_short_first(raw);
	*base_len = b;
	if (!e)
		return b;
	out[b] = '.';
	memcpy(out + b + 1, raw + 8, 3);
	return b + 1 + e;
}

void fk_short_display(const unsigned char raw[11], uint8_t nt, char *out,
		      size_t len)
{
	unsigned char c, b[FK_SHORT_UNITS];
	size_t base_len, n = short_bytes(raw, b, &base_len), o = 0, i, k;

	for (i = 0; i < n; i++) {
		int is_lower = nt & (i < base_len ? FK_NT_LOWER_BASE
						  : FK_NT_LOWER_EXT);

		c = b[i];
		if (c >= 'A' && c <= 'Z' && is_lower)
			c = (unsigned char)(c + 32);
		if (c >= 0x20 && c < 0x80 && len - o > 1) { /* ASCII */
			out[o++] = (char)c;
			continue;
		}
		if (!(k = put_utf8(is_lower ? lower_cp(oem_cp(c)) : oem_cp(c),
				   out + o, len - o)))
			break;
		o += k;
	}
	out[o] = '\0';
}

size_t fk_short_fold(const unsigned char raw[11], uint16_t out[FK_SHORT_UNITS],
		     uint64_t *hash)
{
	unsigned char b[FK_SHORT_UNITS];
	size_t base_len, n = short_bytes(raw, b, &base_len), i;
	uint64_t h = FNV_BASIS;

	/* The NT flags only lower what folding raises again. */
	for (i = 0; i < n; i++) {
		uint16_t c = ascii_upper(b[i]);

		if (c < 0x20 || c >= 0x80)
			c = fk_upcase((uint16_t)oem_cp(b[i]));
		out[i] = c;
		h = fnv_unit(h, c);
	}
	*hash = h;
	return n;
}

void fk_label_display(const unsigned char raw[11], char *out, size_t len)
{
	size_t o = 0, k;
	int n, i;

	for (n = 11; n > 0 && (raw[n - 1] == ' ' || !raw[n - 1]); n--)
		;
	for (i = 0; i < n; i++) {
		if (!(k = put_utf8(oem_cp(raw[i]), out + o, len - o)))
			break;
		o += k;
	}
	out[o] = '\0';
}

/* Refused in long names and short ones alike (besides controls). */
static const char forbidden[] = "\"*/:<>?\\|";

static int is_long_illegal(uint16_t c)
{
	return c < 0x20 || (c < 0x80 && strchr(forbidden, c));
}

/*
 * The one home of the long-name rules: fk_name_check() and
 * fk_name_explain() both ask this.  @why (may be NULL) gets the rule.
 */
static int check_name(const char *name, char *why, size_t len)
{
	uint16_t u[FK_LFN_MAX + 1];
	size_t n, i;
	int err;

	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		if (why)
			snprintf(why, len, "'%s' cannot be a FAT name", name);
		return -EINVAL;
	}
	if ((err = fk_utf8_to_utf16(name, u, FK_LFN_MAX, &n))) {
		if (why)
			snprintf(why, len, "%s",
				 err == -EILSEQ
					 ? "FAT names must be valid UTF-8"
					 : "FAT names are at most 255 UTF-16 "
					   "units long");
		return err == -EILSEQ ? -EINVAL : err;
	}
	for (i = 0; i < n; i++) {
		if (!is_long_illegal(u[i]))
			continue;
		if (why && u[i] < 0x20)
			snprintf(why, len,
				 "control characters (here 0x%02x) are not "
				 "allowed in FAT names",
				 u[i]);
		else if (why)
			snprintf(why, len, "'%c' is not allowed in FAT names",
				 (char)u[i]);
		return -EINVAL;
	}
	/* Windows strips them, so such a name could never be opened. */
	if (u[n - 1] == '.' || u[n - 1] == ' ') {
		if (why)
			snprintf(why, len, "FAT names cannot end with a %s",
				 u[n - 1] == '.' ? "dot" : "space");
		return -EINVAL;
	}
	return 0;
}

int fk_name_check(const char *name)
{
	return check_name(name, NULL, 0);
}

int fk_name_explain(const char *name, char *why, size_t len)
{
	return check_name(name, why, len);
}

/*
 * ASCII sets as two 64-bit masks (bit c of lo for c < 64, bit c - 64 of
 * hi).  The strings they hold are the comments; the unit tests compare
 * what the table below makes of them with those strings.
 */
/* forbidden[] */
#define FORBIDDEN_LO 0xd400840400000000ull
#define FORBIDDEN_HI 0x1000000010000000ull
/* Characters a short name may hold besides A-Z and 0-9 (FAT spec):
 * "!#$%&'()-@^_`{}~" */
#define SPECIAL_LO 0x000023fa00000000ull
#define SPECIAL_HI 0x68000001c0000001ull

/*
 * What each byte of an on-disk short name is (SHORT_SPACE for ' '): bad
 * for control characters, 0x7F and forbidden[], valid for the short set,
 * odd otherwise.  The compiler makes the table from the sets above: the
 * checker judges every short name.
 */
#define SHORT_SPACE 3
#define SET_HAS(lo, hi, c)                                                     \
	((c) < 64 ? (lo) >> ((c)&63) & 1 : (c) < 128 ? (hi) >> ((c)&63) & 1 : 0)
#define SHORT_CLASS(c)                                                         \
	((c) == ' ' ? SHORT_SPACE                                              \
	 : (c) < 0x20 || (c) == 0x7f || SET_HAS(FORBIDDEN_LO, FORBIDDEN_HI, c) \
		 ? FK_SHORT_BAD                                                \
	 : ((c) >= 'A' && (c) <= 'Z') || ((c) >= '0' && (c) <= '9') ||         \
			 (c) >= 0x80 || SET_HAS(SPECIAL_LO, SPECIAL_HI, c)     \
		 ? FK_SHORT_VALID                                              \
		 : FK_SHORT_ODD)
#define SC4(c)                                                                 \
	SHORT_CLASS(c), SHORT_CLASS(c + 1), SHORT_CLASS(c + 2),                \
		SHORT_CLASS(c + 3)
#define SC16(c) SC4(c), SC4(c + 4), SC4(c + 8), SC4(c + 12)
#define SC64(c) SC16(c), SC16(c + 16), SC16(c + 32), SC16(c + 48)
static const unsigned char short_class[256] = {SC64(0u), SC64(64u), SC64(128u),
					       SC64(192u)};

static int is_short_char(unsigned char c)
{
	return short_class[c] == FK_SHORT_VALID;
}

enum fk_short_verdict fk_short_check(const unsigned char raw[11])
{
	/* A leading space (an empty base too) is a bad name to fsck.fat;
	 * a space inside the base or the extension is allowed by the
	 * specification, Windows and fsck.fat 4.2, and every reader shows
	 * it as stored.  Writers still make no such name (short_char()). */
	unsigned v = raw[0] == ' ' ? FK_SHORT_BAD : FK_SHORT_VALID;
	int i;

	for (i = 0; i < 11; i++) {
		/* A stand-in first byte is judged as the byte it means. */
		unsigned b = short_class[i ? raw[i] : fk_short_first(raw)];

		if (b != SHORT_SPACE && b > v)
			v = b;
	}
	return (enum fk_short_verdict)v;
}

int fk_short_is_valid(const unsigned char raw[11])
{
	return fk_short_check(raw) == FK_SHORT_VALID;
}

enum fk_label_verdict fk_label_check(const unsigned char raw[11],
				     const char **why)
{
	enum fk_label_verdict v = FK_LABEL_VALID;
	int i, is_blank = 1;

	*why = NULL;
	for (i = 0; i < 11; i++) {
		/* A stand-in first byte is judged as the byte it means. */
		unsigned c = i ? raw[i] : fk_short_first(raw);

		is_blank &= c == ' ';
		if (c < 0x20) {
			*why = "it holds a control character";
			return FK_LABEL_BAD;
		}
		if (c < 0x80 && strchr("\"*+,./:;<=>?[\\]|", (int)c)) {
			*why = "it holds a character labels may not hold";
			return FK_LABEL_BAD;
		}
		if (c >= 'a' && c <= 'z')
			v = FK_LABEL_LOWER;
		else if (c >= 0x80 && v == FK_LABEL_VALID)
			v = FK_LABEL_HIGH;
	}
	if (is_blank)
		*why = "it is blank";
	else if (raw[0] == ' ')
		*why = "it starts with a space";
	return *why ? FK_LABEL_BAD : v;
}

/* Case of an ASCII run: 1 all lower, 2 all upper, 3 mixed, 0 no letters. */
static int case_of(const char *s, size_t n)
{
	int lower = 0, upper = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		lower |= s[i] >= 'a' && s[i] <= 'z';
		upper |= s[i] >= 'A' && s[i] <= 'Z';
	}
	return lower && upper ? 3 : lower ? 1 : upper ? 2 : 0;
}

/* Upper-case one ASCII character into the short set, '_' if it has none. */
static unsigned char short_char(unsigned char c, int *is_lossy)
{
	if (c >= 'a' && c <= 'z')
		c = (unsigned char)(c - 32);
	if (c < 0x80 && is_short_char(c))
		return c;
	*is_lossy = 1;
	return '_';
}

int fk_short_fit(const char *name, unsigned char raw[11], uint8_t *nt)
{
	const char *dot = strrchr(name, '.');
	size_t len = strlen(name), blen, elen, i, o;
	int is_lossy = 0, bc, ec;
	const char *p;

	if (fk_name_check(name))
		return -EINVAL;
	memset(raw, ' ', 11);
	*nt = 0;
	if (dot == name)
		dot = NULL; /* ".profile": no extension, leading dot dropped */
	blen = dot ? (size_t)(dot - name) : len;
	elen = dot ? len - blen - 1 : 0;
	/* Basis: spaces and dots are dropped, the base cut to 8. */
	for (p = name, o = 0; p < name + blen; p++) {
		if (*p == ' ' || *p == '.') {
			is_lossy = 1;
			continue;
		}
		if ((unsigned char)*p >=
		    0x80) /* skip a whole UTF-8 character */
			while ((unsigned char)p[1] >= 0x80 &&
			       ((unsigned char)p[1] & 0xc0) == 0x80)
				p++;
		if (o < 8)
			raw[o++] = short_char((unsigned char)*p, &is_lossy);
		else
			is_lossy = 1;
	}
	for (i = 0, o = 8; dot && i < elen; i++) {
		const char *q = dot + 1 + i;

		if (*q == ' ') {
			is_lossy = 1;
			continue;
		}
		if ((unsigned char)*q >= 0x80)
			while (i + 1 < elen &&
			       ((unsigned char)q[1] & 0xc0) == 0x80) {
				q++;
				i++;
			}
		if (o < 11)
			raw[o++] = short_char((unsigned char)*q, &is_lossy);
		else
			is_lossy = 1;
	}
	if (raw[0] == ' ')
		raw[0] = '_'; /* a name of dots and spaces only */
	fk_short_escape(raw);
	bc = case_of(name, blen);
	ec = dot ? case_of(dot + 1, elen) : 0;
	if (is_lossy || bc == 3 || ec == 3 || blen > 8 || elen > 3 ||
	    (dot && !elen))
		return FK_SHORT_NEEDS_LFN;
	*nt = (uint8_t)((bc == 1 ? FK_NT_LOWER_BASE : 0) |
			(ec == 1 ? FK_NT_LOWER_EXT : 0));
	return FK_SHORT_EXACT;
}

/* Four hex digits of @name's hash for hashed alias tails. */
static uint16_t alias_hash(const char *name)
{
	uint64_t h = fk_name_hash(name);

	return (uint16_t)(h ^ h >> 16 ^ h >> 32 ^ h >> 48);
}

int fk_short_alias(const unsigned char basis[11], const char *name, unsigned k,
		   unsigned char raw[11])
{
	char tail[16];
	int blen, tlen, keep;

	if (k == 0 || k > 999999)
		return -EEXIST;
	memcpy(raw, basis, 11);
	for (blen = 8; blen > 0 && basis[blen - 1] == ' '; blen--)
		;
	if (k >= 5 && k <= 13) {
		/* Windows' way once ~1..~4 are taken: 2 chars, hash, ~n. */
		keep = blen < 2 ? blen : 2;
		tlen = snprintf(tail, sizeof(tail), "%04X~%u", alias_hash(name),
				k - 4);
	} else {
		tlen = snprintf(tail, sizeof(tail), "~%u", k >= 14 ? k - 8 : k);
		keep = blen < 8 - tlen ? blen : 8 - tlen;
	}
	memset(raw + keep, ' ', (size_t)(8 - keep));
	memcpy(raw + keep, tail, (size_t)tlen);
	return 0;
}

int fk_short_choose(const char *name,
		    int (*is_taken)(const void *arg,
				    const unsigned char raw[11]),
		    const void *arg, unsigned char raw[11], uint8_t *nt)
{
	unsigned char basis[11];
	unsigned k;
	int fit = fk_short_fit(name, basis, nt);

	if (fit < 0)
		return fit;
	if (fit == FK_SHORT_EXACT && !is_taken(arg, basis)) {
		memcpy(raw, basis, 11);
		return FK_SHORT_EXACT;
	}
	*nt = 0;
	for (k = 1; !fk_short_alias(basis, name, k, raw); k++)
		if (!is_taken(arg, raw))
			return FK_SHORT_NEEDS_LFN;
	return -EEXIST;
}
