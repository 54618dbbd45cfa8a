/*
 * test_exfat.c: the exFAT boot region judged field by field, the three
 * checksums, the up-case table's compressed form and NameHash.  Expected
 * checksum and hash values come from tests/helpers/exfatref.py, written
 * from Microsoft's exFAT specification independently of exfat.c.  Then a
 * small volume built here entry by entry: the entry-set iterator over
 * every kind of set, and the checker's claims and bitmap passes on it.
 */
#include "tap.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/check.h"
#include "exfat/exfat.h"
#include "io/device.h"
#include "lib/diag.h"
#include "mount/mount.h"
#include "volume/volume.h"

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))
#define SEC	 512u

static void put16(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
	put16(p, v & 0xffff);
	put16(p + 2, v >> 16);
}

/* The checksum sector of the 12 sectors at @r, as the spec fills it. */
static void seal(unsigned char *r)
{
	uint32_t sum = fk_exfat_boot_checksum(r, SEC, 11), i;

	for (i = 0; i < SEC; i += 4)
		put32(r + 11 * SEC + i, sum);
}

/*
 * A sound 64 MiB volume, as mkfs.exfat lays it out with 4 KiB clusters:
 * FAT at sector 2048, 128 sectors long, heap at 4096, 15872 clusters,
 * root at cluster 5; both regions, the backup a copy of the main one.
 */
static unsigned char *sound_region(void)
{
	unsigned char *r = calloc(24, SEC);
	uint32_t i;

	if (!r)
		abort();
	memcpy(r,
	       "\xEB\x76\x90"
	       "EXFAT   ",
	       11);
	put32(r + 72, 131072); /* VolumeLength */
	put32(r + 80, 2048);   /* FatOffset */
	put32(r + 84, 128);    /* FatLength */
	put32(r + 88, 4096);   /* ClusterHeapOffset */
	put32(r + 92, 15872);  /* ClusterCount */
	put32(r + 96, 5);      /* FirstClusterOfRootDirectory */
	put32(r + 100, 0x1234abcd);
	put16(r + 104, 0x0100);
	r[108] = 9;
	r[109] = 3;
	r[110] = 1;
	r[111] = 0x80;
	put16(r + 510, 0xaa55);
	for (i = 1; i <= 8; i++)
		put32(r + (i + 1) * SEC - 4, 0xaa550000u);
	seal(r);
	memcpy(r + 12 * SEC, r, 12 * SEC);
	return r;
}

static void test_sound(void)
{
	unsigned char *r = sound_region();
	struct fk_exfat_boot b;
	struct fk_geom g;

	OK(fk_exfat_detect(r), "detect: EXFAT at offset 3");
	OK(!fk_exfat_boot_parse(r, 24 * SEC, 64u << 20, &b, NULL) && !b.defects,
	   "sound region: no defect (0x%x)", b.defects);
	OK(b.csum_stored == b.csum_computed, "sound region: checksum agrees");
	fk_exfat_boot_geom(&b, &g);
	OK(!strcmp(g.type_name, "exFAT") && g.ent_bits == 32 &&
		   g.ent_mask == 0xffffffffu && g.ent_eoc == 0xffffffffu &&
		   g.sec_len == 512 && g.clus_len == 4096 &&
		   g.fat_off == 2048 * 512 && g.data_off == 4096u * 512 &&
		   g.nclus == 15872 && g.root_clus == 5,
	   "geometry from the boot sector");
	/* VolumeFlags and PercentInUse are outside the checksum and may
	 * differ from the backup. */
	r[106] = 2;
	r[112] = 55;
	OK(!fk_exfat_boot_parse(r, 24 * SEC, 64u << 20, &b, NULL) && !b.defects,
	   "VolumeFlags and PercentInUse: neither summed nor compared");
	r[200] ^= 1;
	OK(!fk_exfat_boot_parse(r, 24 * SEC, 64u << 20, &b, NULL) &&
		   b.defects == (FK_EXB_CHECKSUM | FK_EXB_BACKUP) &&
		   b.backup_diff_sec == 0,
	   "a boot code byte: checksum and backup defects, not fatal");
	free(r);
}

static const struct field_row {
	const char *edge;
	unsigned off, width;
	uint32_t val;
	uint32_t defect;
	int is_fatal;
} field_rows[] = {
	{"BytesPerSectorShift 8", 108, 1, 8, FK_EXB_SEC_SHIFT, 1},
	{"BytesPerSectorShift 13", 108, 1, 13, FK_EXB_SEC_SHIFT, 1},
	{"clusters of 64 MiB", 109, 1, 17, FK_EXB_CLUS_SHIFT, 1},
	{"NumberOfFats 0", 110, 1, 0, FK_EXB_NFATS, 1},
	{"NumberOfFats 3", 110, 1, 3, FK_EXB_NFATS, 1},
	{"FatOffset 23", 80, 4, 23, FK_EXB_FAT_OFF, 1},
	{"FatLength 0", 84, 4, 0, FK_EXB_FAT_LEN, 1},
	{"FatLength short of the clusters", 84, 4, 100, FK_EXB_FAT_LEN, 1},
	{"ClusterHeapOffset inside the FAT", 88, 4, 2100, FK_EXB_HEAP_OFF, 1},
	{"ClusterCount 0", 92, 4, 0, FK_EXB_NCLUS, 1},
	{"ClusterCount past the volume", 92, 4, 15873, FK_EXB_NCLUS, 1},
	{"root cluster 1", 96, 4, 1, FK_EXB_ROOT_CLUS, 1},
	{"root cluster past the heap", 96, 4, 15874, FK_EXB_ROOT_CLUS, 1},
	{"FileSystemRevision 2.00", 104, 2, 0x200, FK_EXB_REVISION, 1},
	{"VolumeLength past the image", 72, 4, 131073, FK_EXB_VOL_LEN, 1},
	{"VolumeLength under 1 MiB", 72, 4, 2047, FK_EXB_VOL_LEN, 1},
	{"second FAT active with one FAT", 106, 2, 1, FK_EXB_ACTIVE_FAT, 0},
	{"PercentInUse 101", 112, 1, 101, FK_EXB_PERCENT, 0},
	{"PercentInUse 0xFF: not known", 112, 1, 0xff, 0, 0},
	{"MustBeZero byte set", 40, 1, 1, FK_EXB_MBZ, 0},
	{"JumpBoot E9", 0, 1, 0xe9, FK_EXB_JUMP, 0},
	{"boot signature missing", 510, 2, 0, FK_EXB_SIGNATURE, 0},
	{"extended signature 3 missing", 4 * SEC - 4, 4, 0, FK_EXB_EXT_SIG, 0},
};

/* One field changed, main checksum and backup recomputed: one defect. */
static void test_fields(void)
{
	struct fk_exfat_boot b;
	size_t i;

	for (i = 0; i < NROWS(field_rows); i++) {
		const struct field_row *f = &field_rows[i];
		unsigned char *r = sound_region();
		int err;

		if (f->width == 1)
			r[f->off] = (unsigned char)f->val;
		else if (f->width == 2)
			put16(r + f->off, f->val);
		else
			put32(r + f->off, f->val);
		seal(r);
		memcpy(r + 12 * SEC, r, 12 * SEC);
		err = fk_exfat_boot_parse(r, 24 * SEC, 64u << 20, &b, NULL);
		/* Other rules may break with it (a volume under 1 MiB
		 * leaves no room for the FAT either): the field's own
		 * defect is the one reported. */
		OK(f->defect ? (b.defects & f->defect) &&
				       !strcmp(fk_exfat_boot_reason(b.defects),
					       fk_exfat_boot_reason(f->defect))
			     : !b.defects,
		   "%s: reason \"%s\" (defects 0x%x)", f->edge,
		   fk_exfat_boot_reason(b.defects), b.defects);
		OK(!err == !f->is_fatal, "%s: %s", f->edge,
		   f->is_fatal ? "fatal" : "read on");
		free(r);
	}
}

static void test_checksums(void)
{
	static const unsigned char table[] = {0xff, 0xff, 0x61, 0,
					      0x41, 0,	  0x42, 0};
	unsigned char set[3][FK_EXFAT_ENT_LEN];
	struct fk_exfat_upcase *up = calloc(1, sizeof(*up));
	uint16_t frag[] = {'f', 'r', 'a', 'g', '.', 'b', 'i', 'n'};
	uint16_t sisyphus[] = {0x3c3, 0x3af, 0x3c3, 0x3c5, 0x3c6, 0x3bf,
			       0x3c2, '.',   't',   'x',   't'};
	uint16_t upper[] = {0x3a3, 0x38a, 0x3a3, 0x3a5, 0x3a6, 0x39f,
			    0x3a3, '.',	  'T',	 'X',	'T'};

	if (!up)
		abort();
	/* exfatref.py: table_checksum(FF FF 61 00 41 00 42 00) */
	OK(fk_exfat_upcase_checksum(table, sizeof(table)) == 0x22000032u,
	   "TableChecksum of a compressed table");
	fk_exfat_upcase_expand(table, sizeof(table), up);
	OK(up->is_compressed && fk_exfat_upcase(up, 'a') == 'A' &&
		   fk_exfat_upcase(up, 'b') == 'B' &&
		   fk_exfat_upcase(up, 'c') == 'c' &&
		   fk_exfat_upcase(up, 'A') == 'A' &&
		   fk_exfat_upcase(up, 0xFFFF) == 0xFFFF && !up->defects,
	   "compressed table: 0x61 units kept, then a -> A, b -> B");
	memset(up, 0, sizeof(*up));
	fk_exfat_upcase_expand((const unsigned char *)"\x41\x00\x42\x00\xff"
						      "\xff\xff\xff",
			       8, up);
	OK(up->defects & FK_EXU_COMPRESS, "a run past 0xFFFF is a defect");
	/* A table that maps ASCII and Greek (as mkfs.exfat's does). */
	memset(up, 0, sizeof(*up));
	fk_exfat_upcase_fallback(up);
	fk_exfat_upcase_put(up, 0x3c3, 0x3a3);
	fk_exfat_upcase_put(up, 0x3af, 0x38a);
	fk_exfat_upcase_put(up, 0x3c5, 0x3a5);
	fk_exfat_upcase_put(up, 0x3c6, 0x3a6);
	fk_exfat_upcase_put(up, 0x3bf, 0x39f);
	fk_exfat_upcase_put(up, 0x3c2, 0x3a3);
	/* exfatref.py: name_hash(units_of("FRAG.BIN")), "ΣΊΣΥΦΟΣ.TXT" */
	OK(fk_exfat_name_hash(up, frag, 8) == 0xbaee, "NameHash of frag.bin");
	OK(fk_exfat_name_hash(up, sisyphus, 11) == 0x347a,
	   "NameHash through the table: σίσυφος.txt as ΣΊΣΥΦΟΣ.TXT");
	OK(!fk_exfat_name_cmp(up, sisyphus, 11, upper, 11) &&
		   fk_exfat_name_cmp(up, frag, 8, upper, 11),
	   "names compared through the up-case table");
	memset(set, 0, sizeof(set));
	set[0][0] = 0x85;
	set[0][1] = 2;
	set[0][2] = 0x12; /* the checksum field is skipped */
	set[1][0] = 0xc0;
	set[1][1] = 3;
	set[2][0] = 0xc1;
	set[2][2] = 0x41;
	/* exfatref.py: set_checksum() of the same 96 bytes */
	OK(fk_exfat_set_checksum((const unsigned char(*)[FK_EXFAT_ENT_LEN])set,
				 3) == 0x095e,
	   "SetChecksum skips its own field");
	{
		uint16_t csum, hash, upname[FK_EXFAT_NAME_MAX], longer[20];
		uint32_t n, i, same;

		/* Names shorter and longer than the set's 94 bytes, of
		 * even and odd lengths (a round takes two units). */
		for (n = 0; n <= 11; n++) {
			memset(upname, 0xee, sizeof(upname));
			fk_exfat_set_sums((const unsigned char(*)[32])set, 3,
					  up, sisyphus, n, upname, &csum,
					  &hash);
			for (i = same = 0; i < n; i++)
				same += upname[i] ==
					fk_exfat_upcase(up, sisyphus[i]);
			OK(csum == 0x095e &&
				   hash == fk_exfat_name_hash(up, sisyphus,
							      n) &&
				   same == n && upname[n] == 0xeeee,
			   "both sums in one loop, the name up-cased: %u units",
			   n);
		}
		/* 20 units: more rounds than one entry's 28 bytes hold */
		for (i = 0; i < 20; i++)
			longer[i] = frag[i % 8];
		fk_exfat_set_sums((const unsigned char(*)[32])set, 1, up,
				  longer, 20, upname, &csum, &hash);
		OK(csum == fk_exfat_set_checksum(
				   (const unsigned char(*)[32])set, 1) &&
			   hash == fk_exfat_name_hash(up, longer, 20) &&
			   upname[19] == fk_exfat_upcase(up, frag[3]),
		   "both sums: a name longer than the one entry");
		fk_exfat_set_sums((const unsigned char(*)[32])set, 1, up, frag,
				  8, upname, &csum, &hash);
		OK(hash == 0xbaee, "the name hash of a known name");
	}
	OK(fk_exfat_percent(1, 3) == 33 && fk_exfat_percent(0, 0) == 0,
	   "PercentInUse rounds down");
	free(up);
}

/* Spec 7.7.3, Table 35: the 32 control codes and 9 characters a file
 * name may not hold; every other unit (DEL, space, surrogates) it may. */
static void test_name_units(void)
{
	static const char bad[] = "\"*/:<>?\\|";
	uint32_t u, nbad = 0, nwrong = 0;

	for (u = 0; u <= 0xFFFF; u++) {
		int is_bad = u < 0x20 || (u < 0x80 && u && strchr(bad, (int)u));

		nbad += !fk_exfat_name_unit_ok((uint16_t)u);
		nwrong += !fk_exfat_name_unit_ok((uint16_t)u) != !!is_bad;
	}
	OK(nbad == 41 && !nwrong, "41 units a name may not hold (%u, %u wrong)",
	   nbad, nwrong);
	OK(fk_exfat_name_unit_ok(0x7F) && fk_exfat_name_unit_ok(' ') &&
		   fk_exfat_name_unit_ok(0xD800) &&
		   fk_exfat_name_unit_ok(0xFFFF),
	   "DEL, space, a surrogate and 0xFFFF are allowed");
}

/* ---- a small volume ------------------------------------------------------ */

/*
 * 1 MiB of 512-byte sectors and clusters: FAT at sector 24 (16 sectors),
 * heap at 40, 2008 clusters.  Cluster 2 is the bitmap, 3 the up-case
 * table, 4 and 6 the root (non-adjacent), 5 d.txt, 7 a Vendor
 * Allocation's, 8 a benign primary's.
 */
#define V_SECS	2048u
#define V_NCLUS 2008u
#define V_HEAP	40u

enum vol_flags {
	V_DAMAGE = 1,	   /* a bad checksum, a set cut short, an orphan */
	V_CRITICAL = 2,	   /* an unknown critical primary (0x86) */
	V_LEAK = 4,	   /* cluster 9 marked, owned by nothing */
	V_MISS = 8,	   /* d.txt's cluster 5 marked free */
	V_VCROSS = 16,	   /* the Vendor Allocation runs into cluster 8 */
	V_VZERO = 32,	   /* the Vendor Allocation: cluster 7, length 0 */
	V_ROOT_FREE = 64,  /* the root's chain: 4 links to a free entry */
	V_ROOT_LOOP = 128, /* the root's chain: 6 links back to 4 */
	V_PAST_HEAP = 256, /* d.txt: NoFatChain from the last cluster, 2 long */
	V_NO_ALLOC = 512,  /* d.txt: AllocationPossible clear */
	V_GUID = 1024,	   /* entry 20: a Volume GUID entry, not deleted */
	V_UPCASE2 = 2048,  /* entry 20: a second up-case table entry */
	V_LABEL2 = 4096,   /* entries 20 and 21: two volume labels */
	V_FILE_LOOP = 8192, /* d.txt: FAT-chained, 3 clusters, 5, 9, 5 */
	V_HIDDEN = 16384,   /* entry 22, past the end marker: a GUID entry */
	V_PERCENT = 32768,  /* PercentInUse 101 */
	V_MEDIA = 65536,    /* VolumeFlags: MediaFailure */
	V_CSUM = 131072,    /* a boot code byte changed in both regions */
	V_VFIRST0 = 262144, /* the Vendor Allocation: FirstCluster 0 */
	V_VSHORT = 524288,  /* the Vendor Allocation: FAT-chained, 3 long */
	V_NONAME = 1048576, /* a.txt: NameLength 0; b.txt: 20, unit 0 is 0 */
	V_UPLEN = 2097152,  /* the up-case table: 3 clusters long, chain 1 */
};

static const unsigned char up_raw[] = {
	0xff, 0xff, 0x61, 0x00, 'A', 0, 'B', 0, 'C', 0, 'D', 0, 'E', 0,
	'F',  0,    'G',  0,	'H', 0, 'I', 0, 'J', 0, 'K', 0, 'L', 0,
	'M',  0,    'N',  0,	'O', 0, 'P', 0, 'Q', 0, 'R', 0, 'S', 0,
	'T',  0,    'U',  0,	'V', 0, 'W', 0, 'X', 0, 'Y', 0, 'Z', 0,
};

static unsigned char *clus_at(unsigned char *img, uint32_t clus)
{
	return img + (size_t)(V_HEAP + clus - 2) * SEC;
}

static unsigned char *root_ent(unsigned char *img, uint32_t i)
{
	return clus_at(img, i < 16 ? 4 : 6) + (i % 16) * 32;
}

static void fat_put(unsigned char *img, uint32_t clus, uint32_t val)
{
	put32(img + 24 * SEC + clus * 4, val);
}

/*
 * A file set of @name (ASCII, at most 15) at root entry @at, with @extra
 * (a 32-byte secondary, or NULL) last; checksum and NameHash sealed.
 */
static void put_file(unsigned char *img, const struct fk_exfat_upcase *up,
		     uint32_t at, const char *name, uint32_t first,
		     uint32_t len, const unsigned char *extra)
{
	unsigned char set[4][32];
	uint16_t u[16];
	uint32_t n = (uint32_t)strlen(name), i, nents = extra ? 4 : 3;

	memset(set, 0, sizeof(set));
	set[0][0] = 0x85;
	set[0][1] = (unsigned char)(nents - 1);
	set[0][4] = 0x20;
	set[1][0] = 0xc0;
	set[1][1] = first ? 3 : 1; /* NoFatChain when it has clusters */
	set[1][3] = (unsigned char)n;
	for (i = 0; i < n; i++) {
		u[i] = (uint16_t)name[i];
		put16(set[2] + 2 + 2 * i, u[i]);
	}
	put16(set[1] + 4, fk_exfat_name_hash(up, u, n));
	put32(set[1] + 8, len);
	put32(set[1] + 20, first);
	put32(set[1] + 24, len);
	set[2][0] = 0xc1;
	if (extra)
		memcpy(set[3], extra, 32);
	put16(set[0] + 2,
	      fk_exfat_set_checksum((const unsigned char(*)[32])set, nents));
	for (i = 0; i < nents; i++)
		memcpy(root_ent(img, at + i), set[i], 32);
}

/* A one-entry primary of @type with a generic allocation of @first. */
static void put_primary(unsigned char *img, uint32_t at, uint8_t type,
			uint32_t first)
{
	unsigned char *e = root_ent(img, at);

	memset(e, 0, 32);
	e[0] = type;
	e[4] = first ? 1 : 0;
	put32(e + 20, first);
	put32(e + 24, first ? SEC : 0);
	put16(e + 2, fk_exfat_set_checksum((const unsigned char(*)[32])e, 1));
}

/* Root entry @ent's byte @off becomes @val; the set of @n entries at @at
 * gets its checksum again. */
static void reseal(unsigned char *img, uint32_t at, uint32_t n, uint32_t ent,
		   uint32_t off, unsigned char val)
{
	unsigned char set[4][32];
	uint32_t i;

	root_ent(img, ent)[off] = val;
	for (i = 0; i < n; i++)
		memcpy(set[i], root_ent(img, at + i), 32);
	put16(root_ent(img, at) + 2,
	      fk_exfat_set_checksum((const unsigned char(*)[32])set, n));
}

static unsigned char *build_volume(unsigned flags)
{
	unsigned char *img = calloc(V_SECS, SEC);
	struct fk_exfat_upcase *up = calloc(1, sizeof(*up));
	unsigned char vendor[32], *e;
	uint32_t i;

	if (!img || !up)
		abort();
	memcpy(img,
	       "\xEB\x76\x90"
	       "EXFAT   ",
	       11);
	put32(img + 72, V_SECS);
	put32(img + 80, 24);
	put32(img + 84, 16);
	put32(img + 88, V_HEAP);
	put32(img + 92, V_NCLUS);
	put32(img + 96, 4);
	put16(img + 104, 0x0100);
	img[108] = 9;
	img[110] = 1;
	img[112] = 0xff;
	put16(img + 510, 0xaa55);
	for (i = 1; i <= 8; i++)
		put32(img + (i + 1) * SEC - 4, 0xaa550000u);
	seal(img);
	memcpy(img + 12 * SEC, img, 12 * SEC);
	/* Outside the checksum, or past it (V_CSUM: neither region can be
	 * restored from the other). */
	if (flags & V_PERCENT)
		img[112] = 101;
	if (flags & V_MEDIA)
		img[106] = 4;
	if (flags & V_CSUM) {
		img[200] ^= 1;
		img[12 * SEC + 200] ^= 1;
	}
	fat_put(img, 0, 0xfffffff8u);
	for (i = 1; i <= 8; i++)
		fat_put(img, i, 0xFFFFFFFFu); /* end of chain */
	fat_put(img, 4, (flags & V_ROOT_FREE) ? 0 : 6);
	if (flags & V_ROOT_LOOP)
		fat_put(img, 6, 4);
	/* bitmap: clusters 2 to 8 */
	clus_at(img, 2)[0] = 0x7f;
	if (flags & V_LEAK)
		clus_at(img, 2)[0] |= 0x80;
	if (flags & V_MISS)
		clus_at(img, 2)[0] &= (unsigned char)~(1u << 3);
	memcpy(clus_at(img, 3), up_raw, sizeof(up_raw));
	fk_exfat_upcase_expand(up_raw, sizeof(up_raw), up);
	e = root_ent(img, 0);
	e[0] = 0x81;
	put32(e + 20, 2);
	put32(e + 24, (V_NCLUS + 7) / 8);
	e = root_ent(img, 1);
	e[0] = 0x82;
	put32(e + 4, fk_exfat_upcase_checksum(up_raw, sizeof(up_raw)));
	put32(e + 20, 3);
	put32(e + 24, (flags & V_UPLEN) ? 3 * SEC : sizeof(up_raw));
	put_file(img, up, 2, "a.txt", 0, 0, NULL);
	put_file(img, up, 5, "b.txt", 0, 0, NULL);
	put_file(img, up, 8, "x.txt", 0, 0, NULL);
	if (flags & V_NONAME) {
		reseal(img, 2, 3, 3, 3, 0);
		reseal(img, 5, 3, 6, 3, 20);
		reseal(img, 5, 3, 7, 2, 0);
	}
	if (flags & V_PAST_HEAP)
		put_file(img, up, 11, "d.txt", V_NCLUS + 1, 2 * SEC, NULL);
	else
		put_file(img, up, 11, "d.txt", 5, SEC, NULL);
	if (flags & V_NO_ALLOC)
		reseal(img, 11, 3, 12, 1, 0x02);
	if (flags & V_FILE_LOOP) {
		put_file(img, up, 11, "d.txt", 5, 3 * SEC, NULL);
		reseal(img, 11, 3, 12, 1, 0x01);
		fat_put(img, 5, 9);
		fat_put(img, 9, 5);
		clus_at(img, 2)[0] |= 0x80;
	}
	memset(vendor, 0, sizeof(vendor));
	vendor[0] = 0xe1;
	vendor[1] = (flags & V_VSHORT) ? 1 : 3; /* AllocationPossible,
						 NoFatChain */
	put32(vendor + 20, (flags & V_VFIRST0) ? 0 : 7);
	put32(vendor + 24, flags & V_VZERO    ? 0
			   : flags & V_VCROSS ? 2 * SEC
			   : flags & V_VSHORT ? 3 * SEC
					      : SEC);
	/* entries 14 to 17: across the root's two clusters, 4 and 6 */
	put_file(img, up, 14, "c.txt", 0, 0, vendor);
	root_ent(img, 18)[0] = 0x05; /* deleted */
	put_primary(img, 19, 0xa5, 8);
	put_primary(img, 20,
		    (flags & V_CRITICAL) ? 0x86
		    : (flags & V_GUID)	 ? 0xa0
					 : 0x05,
		    0);
	if (flags & V_UPCASE2)
		memcpy(root_ent(img, 20), root_ent(img, 1), 32);
	if (flags & V_LABEL2) {
		memset(root_ent(img, 20), 0, 64);
		root_ent(img, 20)[0] = root_ent(img, 21)[0] = 0x83;
		root_ent(img, 20)[1] = root_ent(img, 21)[1] = 1;
		root_ent(img, 20)[2] = 'A';
		root_ent(img, 21)[2] = 'B';
	}
	if (flags & V_HIDDEN)
		put_primary(img, 22, 0xa0, 0);
	/* 21: the end marker (22 with V_LABEL2) */
	if (flags & V_DAMAGE) {
		root_ent(img, 5)[2] ^= 0x5a; /* b.txt: SetChecksum */
		root_ent(img, 8)[1] = 3;     /* x.txt: cut short by d.txt */
		root_ent(img, 18)[0] = 0xc1; /* an orphaned name entry */
		put_file(img, up, 22, "e.txt", 0, 0, NULL); /* past the end */
	}
	free(up);
	return img;
}

struct vol_file {
	char path[64];
	struct fk_volume *vol;
};

static int vol_open(struct vol_file *vf, unsigned flags, int is_writer)
{
	struct fk_volume_opts opts;
	struct fk_diag diag = {0};
	const char *dir = getenv("TMPDIR");
	unsigned char *img = build_volume(flags);
	ssize_t n;
	int fd;

	snprintf(vf->path, sizeof(vf->path), "%s/fk-unit-XXXXXX",
		 dir && *dir ? dir : "/tmp");
	if ((fd = mkstemp(vf->path)) < 0) {
		free(img);
		return -errno;
	}
	n = write(fd, img, (size_t)V_SECS * SEC);
	close(fd);
	free(img);
	if (n != (ssize_t)V_SECS * SEC)
		return -EIO;
	memset(&opts, 0, sizeof(opts));
	opts.dev.path = vf->path;
	opts.dev.is_writer = is_writer;
	opts.batch_len = 1 << 20;
	return fk_volume_open(&opts, &vf->vol, &diag);
}

static int vol_reopen(struct vol_file *vf)
{
	struct fk_volume_opts opts;
	struct fk_diag diag = {0};

	fk_volume_close(vf->vol);
	memset(&opts, 0, sizeof(opts));
	opts.dev.path = vf->path;
	opts.batch_len = 1 << 20;
	return fk_volume_open(&opts, &vf->vol, &diag);
}

static void vol_close(struct vol_file *vf)
{
	fk_volume_close(vf->vol);
	unlink(vf->path);
}

/* @damage: what fk_exfat_set_damage() says (NULL: a sound set, one a
 * writer may write next to). */
static const struct set_row {
	const char *edge;
	enum fk_exfat_kind kind;
	uint32_t first_ent, nents, defects;
	const char *damage;
} set_rows[] = {
	{"the allocation bitmap", FK_EXK_BITMAP, 0, 1, 0, NULL},
	{"the up-case table", FK_EXK_UPCASE, 1, 1, 0, NULL},
	{"an empty file", FK_EXK_FILE, 2, 3, 0, NULL},
	{"a bad SetChecksum", FK_EXK_FILE, 5, 3, FK_EXS_CHECKSUM,
	 "entry set checksum mismatch"},
	{"a set cut short by the next File entry", FK_EXK_FILE, 8, 3,
	 FK_EXS_TRUNCATED | FK_EXS_CHECKSUM,
	 "entry set is cut short (SecondaryCount says more)"},
	{"a file with a cluster", FK_EXK_FILE, 11, 3, 0, NULL},
	{"a set over two clusters apart, Vendor Allocation last", FK_EXK_FILE,
	 14, 4, 0, NULL},
	{"an orphaned File Name entry", FK_EXK_ORPHAN, 18, 1, 0,
	 "secondary entries without a file entry"},
	{"a benign primary", FK_EXK_BENIGN, 19, 1, 0, NULL},
	{"an unknown critical primary", FK_EXK_CRITICAL, 20, 1, 0,
	 "unknown critical entry"},
	{"a set past the end marker", FK_EXK_FILE, 22, 3, FK_EXS_CROSSES_END,
	 "entry set after the end marker"},
};

static void test_iterator(void)
{
	struct fk_exfat_set *set = malloc(sizeof(*set));
	struct fk_diag diag = {0};
	const struct fk_exfat_dir_stats *st;
	struct fk_exfat_dir *dir;
	struct vol_file vf;
	size_t i;
	int r = 0;

	if (!set || vol_open(&vf, V_DAMAGE | V_CRITICAL, 0) ||
	    fk_exfat_dir_open(vf.vol, NULL, &dir)) {
		OK(0, "iterator: the small volume opens");
		free(set);
		return;
	}
	fk_exfat_dir_keep_going(dir);
	for (i = 0; i < NROWS(set_rows); i++) {
		const struct set_row *w = &set_rows[i];

		r = fk_exfat_dir_next(dir, set, &diag);
		OK(r == 1 && set->kind == w->kind &&
			   set->first_ent == w->first_ent &&
			   set->nents == w->nents && set->defects == w->defects,
		   "iterator: %s (r %d, kind %d, entry %u, %u entries, "
		   "defects 0x%x)",
		   w->edge, r, set->kind, set->first_ent, set->nents,
		   set->defects);
		OK(w->damage ? fk_exfat_set_damage(set) &&
				       !strcmp(fk_exfat_set_damage(set),
					       w->damage)
			     : !fk_exfat_set_damage(set),
		   "iterator: %s: damaged: %s", w->edge,
		   fk_exfat_set_damage(set) ? fk_exfat_set_damage(set) : "no");
		if (w->nents == 4)
			OK(set->off[1] == 42u * SEC + 15 * 32 &&
				   set->off[2] == 44u * SEC &&
				   set->nbenign == 1 &&
				   !strcmp(set->name, "c.txt"),
			   "iterator: the set's entries where they lie, in "
			   "clusters 4 and 6, its vendor entry counted");
	}
	r = fk_exfat_dir_next(dir, set, &diag);
	st = fk_exfat_dir_stats(dir);
	OK(r == 0 && st->end_ent == 21 && st->nclus == 2 && !st->ndeleted &&
		   st->after_end == 1,
	   "iterator: the end at the root's last cluster (end marker %u, "
	   "%u clusters, %u deleted, %u after the end)",
	   st->end_ent, st->nclus, st->ndeleted, st->after_end);
	fk_exfat_dir_close(dir);
	/* Without keep_going the end marker ends it; a limit of one cluster
	 * ends it at entry 16. */
	if (!fk_exfat_dir_open(vf.vol, NULL, &dir)) {
		for (i = 0; (r = fk_exfat_dir_next(dir, set, &diag)) == 1; i++)
			;
		OK(r == 0 && i == NROWS(set_rows) - 1,
		   "iterator: stops at the end marker (%zu sets)", i);
		fk_exfat_dir_close(dir);
	}
	if (!fk_exfat_dir_open(vf.vol, NULL, &dir)) {
		fk_exfat_dir_set_limit(dir, 1);
		for (i = 0; (r = fk_exfat_dir_next(dir, set, &diag)) == 1; i++)
			if (set->first_ent == 14)
				break;
		OK(r == 1 && (set->defects & FK_EXS_TRUNCATED) &&
			   set->nents == 2,
		   "iterator: a one-cluster limit cuts the spanning set short");
		fk_exfat_dir_close(dir);
	}
	vol_close(&vf);
	free(set);
}

/* Iterate @dir to its end; returns what the last fk_exfat_dir_next() did. */
static int iterate(struct fk_exfat_dir *dir, struct fk_exfat_set *set,
		   struct fk_diag *diag)
{
	int r;

	while ((r = fk_exfat_dir_next(dir, set, diag)) == 1)
		;
	return r;
}

static const struct chain_row {
	const char *edge;
	unsigned flags;
	struct fk_exfat_stream s; /* first 0: the root */
	const char *reason;
	int is_loop;
	uint32_t end_val;
} chain_rows[] = {
	{"a root chain that runs into a free entry",
	 V_ROOT_FREE,
	 {0, 0, 0},
	 "directory chain breaks after cluster 4 (entry 0x0)",
	 0,
	 0},
	{"a root chain that loops",
	 V_ROOT_LOOP,
	 {0, 0, 0},
	 "directory chain loops: cluster 4 links back to 6",
	 1,
	 6},
	{"a first cluster past the heap",
	 0,
	 {V_NCLUS + 2, SEC, 0},
	 "directory cluster 2010 is out of range",
	 0,
	 V_NCLUS + 2},
	{"a NoFatChain run that ends past the heap",
	 0,
	 {V_NCLUS + 1, 2 * SEC, 1},
	 "directory cluster 2010 is out of range",
	 0,
	 V_NCLUS + 2},
};

/* A directory's chain that breaks, loops or leaves the heap: the iterator
 * stops with FK_ECORRUPT, says why and records how the chain ended. */
static void test_dir_chain(void)
{
	struct fk_exfat_set *set = malloc(sizeof(*set));
	size_t i;

	for (i = 0; set && i < NROWS(chain_rows); i++) {
		const struct chain_row *w = &chain_rows[i];
		struct fk_diag diag = {0};
		const struct fk_exfat_dir_stats *st;
		struct fk_exfat_dir *dir;
		struct vol_file vf;
		int r;

		if (vol_open(&vf, w->flags, 0) ||
		    fk_exfat_dir_open(vf.vol, w->s.first_clus ? &w->s : NULL,
				      &dir)) {
			OK(0, "dir chain: %s: the volume opens", w->edge);
			continue;
		}
		fk_exfat_dir_keep_going(dir);
		r = iterate(dir, set, &diag);
		st = fk_exfat_dir_stats(dir);
		OK(r == FK_ECORRUPT && !strcmp(diag.reason, w->reason) &&
			   st->chain.is_loop == w->is_loop &&
			   st->chain.end_val == w->end_val,
		   "dir chain: %s: \"%s\" (r %d, loop %d, value %u)", w->edge,
		   diag.reason, r, st->chain.is_loop, st->chain.end_val);
		fk_exfat_dir_close(dir);
		vol_close(&vf);
	}
	free(set);
}

/* Run the checker on a volume of @flags; optionally repair and check again. */
static struct fk_check *check_vol(struct vol_file *vf, unsigned flags,
				  int is_repair)
{
	struct fk_check_opts co;
	struct fk_check *ck = NULL;
	struct fk_diag diag = {0};

	memset(&co, 0, sizeof(co));
	if (vol_open(vf, flags, is_repair) || fk_check_new(vf->vol, &co, &ck) ||
	    fk_check_run(ck, &diag))
		return NULL;
	if (!is_repair)
		return ck;
	if (fk_check_repair(ck, &diag) || vol_reopen(vf)) {
		fk_check_free(ck);
		return NULL;
	}
	fk_check_free(ck);
	ck = NULL;
	if (fk_check_new(vf->vol, &co, &ck) || fk_check_run(ck, &diag)) {
		fk_check_free(ck);
		return NULL;
	}
	return ck;
}

static const char *codes(const struct fk_check *ck, char *buf, size_t len)
{
	const struct fk_finding *f = fk_check_findings(ck, &len);
	size_t i, at = 0;

	buf[0] = 0;
	for (i = 0; i < len && at + 40 < 256; i++)
		at += (size_t)snprintf(buf + at, 256 - at, "%s%s%s",
				       i ? " " : "", f[i].code,
				       f[i].fix ? "+" : "");
	return buf;
}

/* Bitmap byte 0 (clusters 2 to 9) of the volume's file. */
static int bitmap_byte(const struct vol_file *vf)
{
	unsigned char b;
	FILE *f = fopen(vf->path, "rb");
	int v = -1;

	if (f && !fseek(f, (long)V_HEAP * SEC, SEEK_SET) && fread(&b, 1, 1, f))
		v = b;
	if (f)
		fclose(f);
	return v;
}

static const struct check_row {
	const char *edge;
	unsigned flags;
	int is_repair;
	const char *codes; /* "+": with a fix */
	int bitmap;	   /* byte 0 after; -1: not looked at */
} check_rows[] = {
	{"a clean volume: the vendor's and the benign primary's clusters "
	 "owned",
	 0, 0, "", 0x7f},
	{"a leaked bit is lost, and cleared", V_LEAK, 0, "lost+", 0xff},
	{"after the repair: clean, the leak cleared", V_LEAK, 1, "", 0x7f},
	{"an owned cluster marked free is set again", V_MISS, 1, "", 0x7f},
	{"an unknown critical entry keeps the leak", V_LEAK | V_CRITICAL, 0,
	 "entry-set+ lost lost-kept", 0xff},
	{"the same repaired: the entry removed, the leak kept",
	 V_LEAK | V_CRITICAL, 1, "lost+", 0xff},
	{"a Vendor Allocation over the benign primary's cluster: the later "
	 "claim, the primary's, is cleared",
	 V_VCROSS, 0, "cross-link+", 0x7f},
	{"the same repaired: the clusters stay the vendor's", V_VCROSS, 1, "",
	 0x7f},
	{"a Vendor Allocation of length 0 loses its cluster", V_VZERO, 0,
	 "long-chain+ lost+", 0x7f},
	{"the same repaired: its cluster freed", V_VZERO, 1, "", 0x5f},
	{"a set cut short keeps the leak: its clusters are unknown",
	 V_LEAK | V_DAMAGE, 0,
	 "set-checksum+ entry-set+ orphan-entry+ hidden-entry+ lost lost-kept",
	 0xff},
	{"a NoFatChain run past the heap; d.txt's old cluster lost",
	 V_PAST_HEAP, 0, "past-heap+ lost+", 0x7f},
	{"the same repaired: clean, cluster 5 freed", V_PAST_HEAP, 1, "", 0x77},
	{"AllocationPossible clear on a file with a cluster", V_NO_ALLOC, 0,
	 "alloc-flag+", 0x7f},
	{"the same repaired: clean, the cluster still the file's", V_NO_ALLOC,
	 1, "", 0x7f},
	{"a Volume GUID entry in the root is benign: clean", V_GUID, 0, "",
	 0x7f},
	{"a second up-case table entry", V_UPCASE2, 0, "upcase+", 0x7f},
	{"the same repaired: clean", V_UPCASE2, 1, "", 0x7f},
	{"two volume labels", V_LABEL2, 0, "label+", 0x7f},
	{"the same repaired: clean", V_LABEL2, 1, "", 0x7f},
	{"a file chain that loops", V_FILE_LOOP, 0, "loop+", 0xff},
	{"the same repaired: clean, both clusters the file's", V_FILE_LOOP, 1,
	 "", 0xff},
	/* Read past the marker only when clusters are lost (or by -r). */
	{"a benign entry past the end marker, no cluster lost: unread",
	 V_HIDDEN, 0, "", 0x7f},
	{"the same repaired: clean", V_HIDDEN, 1, "", 0x7f},
	{"PercentInUse over 100", V_PERCENT, 0, "boot+", 0x7f},
	{"the same repaired: set from the bitmap, clean", V_PERCENT, 1, "",
	 0x7f},
	{"MediaFailure set: a warning, nothing to repair", V_MEDIA, 0,
	 "media-failure", 0x7f},
	{"both regions' checksums wrong: neither restores the other", V_CSUM, 0,
	 "boot+ backup-boot+", 0x7f},
	{"the same repaired: both checksums rewritten, clean", V_CSUM, 1, "",
	 0x7f},
	{"a Vendor Allocation with FirstCluster 0 and a length: its cluster "
	 "7 lost",
	 V_VFIRST0, 0, "bad-start+ lost+", 0x7f},
	{"the same repaired: the allocation cleared, cluster 7 freed",
	 V_VFIRST0, 1, "", 0x5f},
	{"a FAT-chained Vendor Allocation shorter than its length", V_VSHORT, 0,
	 "short-chain+", 0x7f},
	{"the same repaired: its length cut to its chain, clean", V_VSHORT, 1,
	 "", 0x7f},
	{"a set with NameLength 0, one whose name starts with unit 0", V_NONAME,
	 0, "entry-set+ name-length+", 0x7f},
	{"the same repaired: both sets removed, clean", V_NONAME, 1, "", 0x7f},
	/* Read as Linux reads it, the contiguous run, which reaches into
	 * the clusters the next entries own. */
	{"an up-case table longer than its chain: its run crosses another "
	 "owner, names compared through ASCII, nothing planned",
	 V_UPLEN, 0, "cross-link upcase", 0x7f},
};

static void test_checker(void)
{
	char buf[256];
	size_t i;

	for (i = 0; i < NROWS(check_rows); i++) {
		const struct check_row *w = &check_rows[i];
		struct vol_file vf;
		struct fk_check *ck = check_vol(&vf, w->flags, w->is_repair);

		OK(ck && !strcmp(codes(ck, buf, sizeof(buf)), w->codes),
		   "checker: %s: \"%s\"", w->edge, ck ? buf : "(failed)");
		OK(bitmap_byte(&vf) == w->bitmap,
		   "checker: %s: bitmap byte 0x%02x", w->edge,
		   (unsigned)bitmap_byte(&vf));
		fk_check_free(ck);
		vol_close(&vf);
	}
}

void suite_exfat(void)
{
	test_sound();
	test_fields();
	test_checksums();
	test_name_units();
	test_iterator();
	test_dir_chain();
	test_checker();
}
