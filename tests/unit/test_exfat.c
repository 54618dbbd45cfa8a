/*
 * test_exfat.c: the exFAT boot region judged field by field, the three
 * checksums, the up-case table's compressed form and NameHash.  Expected
 * checksum and hash values come from tests/helpers/exfatref.py, written
 * from Microsoft's exFAT specification independently of exfat.c.
 */
#include "tap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exfat.h"
#include "volume.h"

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
	OK(g.type == FK_EXFAT && g.sec_len == 512 && g.clus_len == 4096 &&
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
	OK(up->is_compressed && up->map['a'] == 'A' && up->map['b'] == 'B' &&
		   up->map['c'] == 'c' && up->map['A'] == 'A' && !up->defects,
	   "compressed table: 0x61 units kept, then a -> A, b -> B");
	memset(up, 0, sizeof(*up));
	fk_exfat_upcase_expand((const unsigned char *)"\x41\x00\x42\x00\xff"
						      "\xff\xff\xff",
			       8, up);
	OK(up->defects & FK_EXU_COMPRESS, "a run past 0xFFFF is a defect");
	/* A table that maps ASCII and Greek (as mkfs.exfat's does). */
	memset(up, 0, sizeof(*up));
	fk_exfat_upcase_fallback(up);
	up->map[0x3c3] = 0x3a3;
	up->map[0x3af] = 0x38a;
	up->map[0x3c5] = 0x3a5;
	up->map[0x3c6] = 0x3a6;
	up->map[0x3bf] = 0x39f;
	up->map[0x3c2] = 0x3a3;
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

void suite_exfat(void)
{
	test_sound();
	test_fields();
	test_checksums();
	test_name_units();
}
