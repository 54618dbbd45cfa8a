/*
 * names.h: FAT name rules.  VFAT long names (UCS-2 on disk, UTF-8 here)
 * and their checksums, 8.3 short names with the NT lower-case flags,
 * unique 8.3 aliases, and the case folding used to match names the way
 * Windows and mtools do.  No I/O.
 */
#ifndef FATKIT_NAMES_H
#define FATKIT_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define FK_LFN_MAX	 255		      /* UCS-2 units in a long name */
#define FK_NAME_MAX	 (FK_LFN_MAX * 3 + 1) /* UTF-8 bytes, with NUL */
#define FK_NT_LOWER_BASE 0x08 /* NT byte: base shown in lower case */
#define FK_NT_LOWER_EXT	 0x10 /* NT byte: extension in lower case */
/* NT byte: no 8.3 name, only the long one (fsck.fat's FAT_NO_83NAME) */
#define FK_NT_NO_83 0x20

/* The checksum a long name's slots carry of its 11-byte short name. */
uint8_t fk_lfn_checksum(const unsigned char raw[11]);

/*
 * Convert @n UCS-2/UTF-16 units to UTF-8 in @out (@len bytes with NUL).
 * Unpaired surrogates become U+FFFD.  Returns 0 or -ENAMETOOLONG.
 */
int fk_utf16_to_utf8(const uint16_t *in, size_t n, char *out, size_t len);

/*
 * A form of @n UTF-16 units that may be garbage (orphaned long-name
 * slots) safe to print: UTF-8, with unpaired surrogates as U+FFFD, and
 * '\\', control characters (C0, DEL, C1), bidirectional controls and
 * the noncharacters U+FFFE/U+FFFF as \xNN or \uNNNN escapes, so that
 * it cannot upset a terminal or pass for other text.  Cut, ending in
 * "...", where @len (at least 8 bytes, with NUL) is too short.
 */
void fk_utf16_display(const uint16_t *in, size_t n, char *out, size_t len);

/*
 * Convert UTF-8 @in to at most @max UTF-16 units; *@n is the count.
 * Returns 0, -EILSEQ (invalid UTF-8) or -ENAMETOOLONG.
 */
int fk_utf8_to_utf16(const char *in, uint16_t *out, size_t max, size_t *n);

/*
 * Display form of an 11-byte short name: "NAME.EXT", with the NT flags'
 * lower case applied (to code page letters as well as ASCII ones, as
 * Windows, Linux and mtools show them) and OEM bytes (code page 850,
 * mtools' default) in UTF-8.  @out needs 40 bytes.
 */
void fk_short_display(const unsigned char raw[11], uint8_t nt, char *out,
		      size_t len);

/*
 * Display form of an 11-byte volume label (boot sector or root entry):
 * all 11 characters with no dot, as mlabel and Windows show it, trailing
 * spaces cut, OEM bytes (code page 850) in UTF-8.  @out needs 40 bytes.
 */
void fk_label_display(const unsigned char raw[11], char *out, size_t len);

/* Do two UTF-8 names match, ignoring case as FAT does? */
int fk_name_equal(const char *a, const char *b);

/*
 * Order two UTF-8 names as FAT compares them (case folded by fk_upcase()):
 * <0, 0 or >0, and 0 exactly when fk_name_equal().  Names that are not
 * valid UTF-8 sort after all others, byte by byte.
 */
int fk_name_compare(const char *a, const char *b);

/*
 * The one hash of a name: names fk_name_equal() matches hash alike, so a
 * table keyed on it finds a name in any case.  Equal hashes do not make
 * equal names: compare them too.
 */
uint64_t fk_name_hash(const char *name);

/*
 * Names as the walk of a directory meets them, folded and hashed in one
 * pass with no UTF-8 made: the UTF-16 units, folded by fk_upcase(), that
 * fk_name_compare() and fk_name_hash() see in the UTF-8 form.  Two names
 * are fk_name_equal() exactly when these units are the same.
 * fk_lfn_fold() folds the @n units of a long name as stored into @out (@n
 * units: unpaired surrogates become U+FFFD, as in UTF-8) and returns the
 * fk_name_hash() of the name; fk_short_fold() folds the name
 * fk_short_display() shows for @raw into @out, returns its length and puts
 * its fk_name_hash() in *@hash.
 */
#define FK_SHORT_UNITS 12 /* 8 + '.' + 3 */
uint64_t fk_lfn_fold(const uint16_t *in, size_t n, uint16_t *out);
size_t fk_short_fold(const unsigned char raw[11], uint16_t out[FK_SHORT_UNITS],
		     uint64_t *hash);

/* Hash of an 11-byte short name as stored (equal bytes, equal hashes). */
uint64_t fk_short_hash(const unsigned char raw[11]);

/* Fold one UTF-16 unit to upper case (ASCII, Latin, Greek, Cyrillic). */
uint16_t fk_upcase(uint16_t c);

/*
 * Can @name be a long name?  Rejects empty, ".", "..", over 255 units,
 * control characters and "*?<>|\":\\/", and trailing dots or spaces
 * (Windows strips them).  Returns 0, -EINVAL or -ENAMETOOLONG.
 */
int fk_name_check(const char *name);

/*
 * As fk_name_check(), and on a refusal write the rule it breaks to @why
 * (@len bytes), as a phrase such as "':' is not allowed in FAT names".
 */
int fk_name_explain(const char *name, char *why, size_t len);

/* What fk_short_check() makes of an on-disk short name. */
enum fk_short_verdict {
	FK_SHORT_VALID = 0, /* the specification's upper-case 8.3 set */
	FK_SHORT_ODD = 1,   /* readable, but not a valid 8.3 name: lower
			       case, "+,;=[]." or a leading space */
	FK_SHORT_BAD = 2,   /* bytes every FAT reader refuses (fsck.fat
			       renames): control characters, 0x7F,
			       "*?<>|\"\\/:", or a space before a non-space
			       within the base or the extension */
};

/*
 * The first byte of a deleted slot's name (DIR_Name[0]); a short name
 * that starts with that byte is stored with a stand-in (0x05) there.
 * fk_short_escape() puts a name's first byte in that form,
 * fk_short_first() reads it back (the display form and the validators
 * see the real byte).
 */
#define FK_SHORT_DELETED 0xe5
void fk_short_escape(unsigned char raw[11]);
unsigned char fk_short_first(const unsigned char raw[11]);

/* The one validator of on-disk short names. */
enum fk_short_verdict fk_short_check(const unsigned char raw[11]);

/* fk_short_check() == FK_SHORT_VALID. */
int fk_short_is_valid(const unsigned char raw[11]);

/*
 * What fk_label_check() makes of an on-disk volume label (11 bytes, as
 * in the root's label entry or the boot sector), after fsck.fat's rules
 * for labels: bytes below 0x20, '"*+,./:;<=>?[\\]|', a blank label or a
 * leading space make it not valid (fsck.fat removes it); lower-case
 * letters are allowed by fsck.fat unless told otherwise (-U), which
 * upper-cases them.  Bytes from 0x80 are code-page letters Windows and
 * Linux show, which fsck.fat 4.2 compares as signed chars and so takes
 * for control characters.
 */
enum fk_label_verdict {
	FK_LABEL_VALID = 0,
	FK_LABEL_HIGH = 1,  /* valid, with bytes from 0x80 */
	FK_LABEL_LOWER = 2, /* valid but for lower-case ASCII letters */
	FK_LABEL_BAD = 3,   /* not valid; @why says why */
};
enum fk_label_verdict fk_label_check(const unsigned char raw[11],
				     const char **why);

/* Outcome of fk_short_fit(). */
enum fk_short_fit {
	FK_SHORT_NEEDS_LFN = 0, /* @raw is a basis for an alias */
	FK_SHORT_EXACT = 1,	/* @raw and @nt store the name; no LFN */
};

/*
 * Map long name @name to an 11-byte short name.  If the name is a valid
 * 8.3 name whose base and extension are each all upper or all lower case,
 * returns FK_SHORT_EXACT with the NT flags in *@nt.  Otherwise writes the
 * Windows basis name (upper case, invalid characters as '_') and returns
 * FK_SHORT_NEEDS_LFN.  Returns -EINVAL for a name fk_name_check() refuses.
 */
int fk_short_fit(const char *name, unsigned char raw[11], uint8_t *nt);

/*
 * Make alias number @k (1, 2, ...) from basis @basis for long name @name:
 * "BASIS~1" .. "BASIS~4", then, as Windows does when many collide,
 * two basis characters, four hex digits of a hash of @name, "~" and a
 * digit.  Returns 0, or -EEXIST when @k is past the last alias we make.
 */
int fk_short_alias(const unsigned char basis[11], const char *name, unsigned k,
		   unsigned char raw[11]);

/*
 * The short name a new entry @name gets in a directory whose names in use
 * @is_taken(@arg, raw) knows: its exact 8.3 form when it has one and that
 * is free (FK_SHORT_EXACT, NT flags in *@nt), else the first free alias
 * of fk_short_alias() (FK_SHORT_NEEDS_LFN, *@nt 0).  Returns -EINVAL (a
 * name fk_name_check() refuses) or -EEXIST (every alias is taken).
 */
int fk_short_choose(const char *name,
		    int (*is_taken)(const void *arg,
				    const unsigned char raw[11]),
		    const void *arg, unsigned char raw[11], uint8_t *nt);

#endif
