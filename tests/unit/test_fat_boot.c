/*
 * test_fat_boot.c: fk_fat_bpb_parse() on synthetic boot sectors.  The FAT type
 * comes from the cluster count alone (Microsoft FAT specification, "FAT
 * Type Determination"), so the layouts here yield exactly 4084/4085/4086
 * and 65524/65525/65526 clusters; every damaged field must be refused with
 * a reason that names it.  Also defines the bpb.h builder.
 */
#include "tap.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bpb.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "fat/fat-boot.h"
#include "volume/volume.h"

#define NROWS(t)  (sizeof(t) / sizeof((t)[0]))
#define BS_LEN	  4096	       /* room for the largest sector */
#define AMPLE_LEN (1ull << 50) /* a volume length no geometry exceeds */

void test_bpb_layout(struct test_bpb *b, int is_fat32, uint32_t sec_len,
		     uint32_t clus_secs, uint32_t nclus, unsigned bits)
{
	uint64_t fat_len = ((uint64_t)nclus + 2) * bits / 8 +
			   (((uint64_t)nclus + 2) * bits % 8 != 0);

	memset(b, 0, sizeof(*b));
	b->sec_len = sec_len;
	b->clus_secs = clus_secs;
	b->rsvd_secs = is_fat32 ? 32 : 1;
	b->nfats = 2;
	b->root_ents = is_fat32 ? 0 : 512;
	b->fat_secs = (uint32_t)((fat_len + sec_len - 1) / sec_len);
	b->nclus = nclus;
	b->is_fat32 = is_fat32;
}

uint64_t test_bpb_total(const struct test_bpb *b)
{
	uint64_t root_secs =
		((uint64_t)b->root_ents * 32 + b->sec_len - 1) / b->sec_len;

	return b->rsvd_secs + (uint64_t)b->nfats * b->fat_secs + root_secs +
	       (uint64_t)b->nclus * b->clus_secs + b->spare_secs;
}

void test_bpb_write(const struct test_bpb *b, unsigned char *bs)
{
	uint64_t total = test_bpb_total(b);
	unsigned sig = b->is_fat32 ? 66 : 38;

	bs[0] = 0xEB;
	bs[1] = 0x3C;
	bs[2] = 0x90;
	memcpy(bs + 3, "FATKITTS", 8);
	put_le16(bs + 11, b->sec_len);
	bs[13] = (unsigned char)b->clus_secs;
	put_le16(bs + 14, b->rsvd_secs);
	bs[16] = (unsigned char)b->nfats;
	put_le16(bs + 17, b->root_ents);
	if (!b->is_fat32 && total < 65536)
		put_le16(bs + 19, (uint32_t)total);
	else
		put_le32(bs + 32, (uint32_t)total);
	bs[21] = 0xF8;
	put_le16(bs + 24, 32); /* sectors per track, heads: CHS is unused */
	put_le16(bs + 26, 64);
	if (b->is_fat32) {
		put_le32(bs + 36, b->fat_secs);
		put_le32(bs + 44, 2); /* root cluster */
		put_le16(bs + 48, 1); /* FSInfo */
		put_le16(bs + 50, 6); /* backup boot sector */
		memcpy(bs + 82, "FAT32   ", 8);
	} else {
		put_le16(bs + 22, b->fat_secs);
		memcpy(bs + 54, "FAT16   ", 8);
	}
	bs[sig - 2] = 0x80; /* drive number */
	bs[sig] = 0x29;
	put_le32(bs + sig + 1, 0x1234ABCD);
	memcpy(bs + sig + 5, "TESTVOL    ", 11);
	bs[510] = 0x55;
	bs[511] = 0xAA;
}

/* ---- FAT type determination at the edges -------------------------------- */

static const struct type_row {
	const char *edge;
	int is_fat32;  /* layout */
	unsigned bits; /* FAT entry width the FATs are sized for */
	uint32_t nclus;
	uint32_t sec_len;
	uint32_t clus_secs;
	uint32_t spare_secs;
	enum fk_fat_type type; /* 0: refused as contradicting */
} type_rows[] = {
	{"1 cluster is FAT12", 0, 12, 1, 512, 1, 0, FK_FAT12},
	{"4084 clusters are FAT12", 0, 12, 4084, 512, 1, 0, FK_FAT12},
	{"4084 clusters and a partial one are FAT12", 0, 12, 4084, 512, 4, 3,
	 FK_FAT12},
	{"4085 clusters are FAT16", 0, 16, 4085, 512, 1, 0, FK_FAT16},
	{"4086 clusters are FAT16", 0, 16, 4086, 512, 1, 0, FK_FAT16},
	{"65524 clusters are FAT16", 0, 16, 65524, 512, 1, 0, FK_FAT16},
	{"65524 clusters and a partial one are FAT16", 0, 16, 65524, 512, 8, 7,
	 FK_FAT16},
	{"65525 clusters in a FAT16 layout contradict", 0, 16, 65525, 512, 1, 0,
	 0},
	{"65526 clusters in a FAT16 layout contradict", 0, 16, 65526, 512, 1, 0,
	 0},
	{"4084 clusters in a FAT32 layout contradict", 1, 32, 4084, 512, 1, 0,
	 0},
	{"65524 clusters in a FAT32 layout contradict", 1, 32, 65524, 512, 1, 0,
	 0},
	{"65525 clusters are FAT32", 1, 32, 65525, 512, 1, 0, FK_FAT32},
	{"65526 clusters are FAT32", 1, 32, 65526, 512, 1, 0, FK_FAT32},
	{"FAT12 with 1024-byte sectors", 0, 12, 4000, 1024, 1, 0, FK_FAT12},
	{"FAT16 with 1024-byte sectors", 0, 16, 5000, 1024, 2, 0, FK_FAT16},
	{"FAT16 with 2048-byte sectors", 0, 16, 5000, 2048, 4, 0, FK_FAT16},
	{"FAT16 with 4096-byte sectors", 0, 16, 65524, 4096, 1, 0, FK_FAT16},
	{"FAT32 with 1024-byte sectors", 1, 32, 70000, 1024, 1, 0, FK_FAT32},
	{"FAT32 with 2048-byte sectors", 1, 32, 70000, 2048, 2, 0, FK_FAT32},
	{"FAT32 with 4096-byte sectors", 1, 32, 65525, 4096, 8, 0, FK_FAT32},
	{"64 KiB clusters (4096 x 16)", 1, 32, 70000, 4096, 16, 0, FK_FAT32},
	{"64 KiB clusters (512 x 128)", 0, 16, 5000, 512, 128, 0, FK_FAT16},
};

static int geom_matches(const struct test_bpb *b, const struct fk_geom *g)
{
	uint64_t root_secs = (uint64_t)b->root_ents * 32 / b->sec_len;
	uint64_t fat_off = (uint64_t)b->rsvd_secs * b->sec_len;
	uint64_t root_off =
		fat_off + (uint64_t)b->nfats * b->fat_secs * b->sec_len;

	return g->nclus == b->nclus && g->sec_len == b->sec_len &&
	       g->clus_secs == b->clus_secs &&
	       g->clus_len == b->sec_len * b->clus_secs &&
	       g->fat_secs == b->fat_secs && g->nfats == b->nfats &&
	       g->total_secs == test_bpb_total(b) && g->fat_off == fat_off &&
	       g->root_secs == root_secs && g->root_off == root_off &&
	       g->data_off == root_off + root_secs * b->sec_len &&
	       g->root_clus == (b->is_fat32 ? 2u : 0u) && g->is_mirrored;
}

static void test_type_edges(void)
{
	static unsigned char bs[BS_LEN];
	size_t i;

	for (i = 0; i < NROWS(type_rows); i++) {
		const struct type_row *r = &type_rows[i];
		struct fk_diag diag = {0};
		struct test_bpb b;
		struct fk_geom g;
		int err;

		test_bpb_layout(&b, r->is_fat32, r->sec_len, r->clus_secs,
				r->nclus, r->bits);
		b.spare_secs = r->spare_secs;
		memset(bs, 0, sizeof(bs));
		test_bpb_write(&b, bs);
		err = fk_fat_bpb_parse(bs, r->sec_len,
				       test_bpb_total(&b) * r->sec_len, &g,
				       &diag);
		if (r->type)
			OK(!err && g.ent_bits == (uint32_t)r->type &&
				   geom_matches(&b, &g),
			   "fk_fat_bpb_parse: %s (err %d, FAT%u, %u clusters)",
			   r->edge, err, err ? 0 : g.ent_bits,
			   err ? 0 : g.nclus);
		else
			OK(err == FK_ECORRUPT &&
				   strstr(diag.reason, "contradicts the BPB"),
			   "fk_fat_bpb_parse: %s (err %d, \"%s\")", r->edge,
			   err, diag.reason);
	}
}

/* ---- one damaged field at a time ---------------------------------------- */

enum base { B16, B32 };

struct poke {
	unsigned off;	/* byte offset in the boot sector; 0 with width 0 */
	unsigned width; /* 1, 2 or 4 bytes; 0: none */
	uint32_t val;
};

static const struct damage_row {
	const char *edge;
	enum base base;
	struct poke poke[2];
	const char *needle; /* expected in the reason; NULL: accepted */
} damage_rows[] = {
	{"jump byte 0x00 is accepted (the BPB decides)",
	 B16,
	 {{0, 1, 0x00}},
	 NULL},
	{"jump byte 0x00 and a bad BPB: not a FAT boot sector",
	 B16,
	 {{0, 1, 0x00}, {11, 2, 0}},
	 "not a FAT boot sector (jump byte 0x00; "},
	{"jump byte 0xE9 is accepted", B16, {{0, 1, 0xE9}}, NULL},
	{"bytes per sector 0", B16, {{11, 2, 0}}, "bytes per sector"},
	{"bytes per sector 256", B16, {{11, 2, 256}}, "bytes per sector"},
	{"bytes per sector 768", B16, {{11, 2, 768}}, "bytes per sector"},
	{"bytes per sector 8192", B16, {{11, 2, 8192}}, "bytes per sector"},
	{"sectors per cluster 0", B16, {{13, 1, 0}}, "sectors per cluster"},
	{"sectors per cluster 3", B16, {{13, 1, 3}}, "sectors per cluster"},
	{"cluster of 128 KiB",
	 B16,
	 {{11, 2, 1024}, {13, 1, 128}},
	 "cluster size"},
	{"no reserved sectors", B16, {{14, 2, 0}}, "reserved sectors"},
	{"no FATs", B16, {{16, 1, 0}}, "number of FATs"},
	{"17 FATs", B16, {{16, 1, 17}}, "number of FATs"},
	{"sectors per FAT 0", B32, {{36, 4, 0}}, "sectors per FAT"},
	{"FAT16 total sectors 0", B16, {{19, 2, 0}}, "total sectors"},
	{"FAT32 total sectors 0", B32, {{32, 4, 0}}, "total sectors"},
	{"FAT32 layout with fixed root entries",
	 B32,
	 {{17, 2, 512}},
	 "fixed root entries"},
	{"FAT16 layout without root entries",
	 B16,
	 {{17, 2, 0}},
	 "no root directory entries"},
	{"FAT area larger than the volume",
	 B16,
	 {{22, 2, 0xFFFF}},
	 "does not fit"},
	{"FAT too small for its clusters", B16, {{22, 2, 19}}, "cannot map"},
	{"no data clusters",
	 B16,
	 {{19, 2, 74}, {13, 1, 2}},
	 "no data clusters"},
	{"more clusters than FAT32 allows",
	 B32,
	 {{32, 4, 0xFFFFFFFF}},
	 "FAT32 limit"},
	{"FAT32 version 0.1", B32, {{42, 2, 1}}, "version"},
	{"root cluster 0", B32, {{44, 4, 0}}, "root cluster"},
	{"root cluster 1", B32, {{44, 4, 1}}, "root cluster"},
	{"root cluster past the last", B32, {{44, 4, 70002}}, "root cluster"},
	{"root cluster at the last is accepted", B32, {{44, 4, 70001}}, NULL},
	{"FSInfo sector outside the reserved area",
	 B32,
	 {{48, 2, 32}},
	 "FSInfo"},
	{"FSInfo sector 0xFFFF (none) is accepted",
	 B32,
	 {{48, 2, 0xFFFF}},
	 NULL},
	{"backup boot sector outside the reserved area is not used, not "
	 "refused",
	 B32,
	 {{50, 2, 32}},
	 NULL},
	{"active FAT 2 of 2 without mirroring",
	 B32,
	 {{40, 2, 0x82}},
	 "active FAT"},
	{"active FAT 1 without mirroring is accepted",
	 B32,
	 {{40, 2, 0x81}},
	 NULL},
};

/* B16: FAT16, 5000 clusters of 1 sector; B32: FAT32, 70000 clusters. */
static void make_base(enum base base, struct test_bpb *b, unsigned char *bs)
{
	if (base == B16)
		test_bpb_layout(b, 0, 512, 1, 5000, 16);
	else
		test_bpb_layout(b, 1, 512, 1, 70000, 32);
	memset(bs, 0, BS_LEN);
	test_bpb_write(b, bs);
}

static void apply(unsigned char *bs, const struct poke *p)
{
	if (p->width == 1)
		bs[p->off] = (unsigned char)p->val;
	else if (p->width == 2)
		put_le16(bs + p->off, p->val);
	else if (p->width == 4)
		put_le32(bs + p->off, p->val);
}

static void test_damage(void)
{
	static unsigned char bs[BS_LEN];
	size_t i;

	for (i = 0; i < NROWS(damage_rows); i++) {
		const struct damage_row *r = &damage_rows[i];
		struct fk_diag diag = {0};
		struct fk_geom g, before;
		struct test_bpb b;
		int err;

		make_base(r->base, &b, bs);
		apply(bs, &r->poke[0]);
		apply(bs, &r->poke[1]);
		memset(&g, 0x5a, sizeof(g));
		before = g;
		err = fk_fat_bpb_parse(bs, 512, AMPLE_LEN, &g, &diag);
		if (r->needle)
			OK(err == FK_ECORRUPT &&
				   strstr(diag.reason, r->needle) &&
				   !memcmp(&g, &before, sizeof(g)),
			   "fk_fat_bpb_parse: %s is refused (err %d, \"%s\")",
			   r->edge, err, diag.reason);
		else
			OK(!err, "fk_fat_bpb_parse: %s (err %d, \"%s\")",
			   r->edge, err, diag.reason);
	}
}

/* ---- the image is shorter than the volume ------------------------------- */

static const struct trunc_row {
	const char *edge;
	int64_t delta; /* bytes added to the exact volume length */
	size_t bs_len; /* bytes of boot sector handed over */
	const char *needle;
} trunc_rows[] = {
	{"image exactly as long as the volume", 0, 512, NULL},
	{"image longer than the volume", 12345, 512, NULL},
	{"image one byte short", -1, 512, "image is truncated"},
	{"image one sector short", -512, 512, "image is truncated"},
	{"image of one boot sector", -5072 * 512, 512, "image is truncated"},
	{"boot sector of 511 bytes", 0, 511, "no boot sector"},
};

static void test_truncated(void)
{
	static unsigned char bs[BS_LEN];
	size_t i;

	for (i = 0; i < NROWS(trunc_rows); i++) {
		const struct trunc_row *r = &trunc_rows[i];
		struct fk_diag diag = {0};
		struct test_bpb b;
		struct fk_geom g;
		uint64_t len;
		int err;

		make_base(B16, &b, bs);
		len = test_bpb_total(&b) * 512 + (uint64_t)r->delta;
		err = fk_fat_bpb_parse(bs, r->bs_len, len, &g, &diag);
		if (r->needle)
			OK(err == FK_ECORRUPT && strstr(diag.reason, r->needle),
			   "fk_fat_bpb_parse: %s is refused (err %d, \"%s\")",
			   r->edge, err, diag.reason);
		else
			OK(!err, "fk_fat_bpb_parse: %s (err %d, \"%s\")",
			   r->edge, err, diag.reason);
	}
}

/* ---- identity fields and what the geometry says beyond sizes ------------ */

static void test_ids(void)
{
	static unsigned char bs[BS_LEN];
	struct test_bpb b;
	struct fk_geom g;
	int err;

	make_base(B16, &b, bs);
	err = fk_fat_bpb_parse(bs, 512, AMPLE_LEN, &g, NULL);
	OK(!err && g.has_ext_boot && g.serial == 0x1234ABCD &&
		   !strcmp(g.label, "TESTVOL") && !strcmp(g.oem, "FATKITTS") &&
		   g.media == 0xF8 && g.root_ents == 512 && !g.fsinfo_sec,
	   "fk_fat_bpb_parse: FAT16 label, serial, OEM name and media");
	make_base(B32, &b, bs);
	err = fk_fat_bpb_parse(bs, 512, AMPLE_LEN, &g, NULL);
	OK(!err && g.has_ext_boot && g.serial == 0x1234ABCD &&
		   !strcmp(g.label, "TESTVOL") && g.root_clus == 2 &&
		   g.fsinfo_sec == 1 && g.backup_sec == 6 && g.is_mirrored &&
		   !g.active_fat,
	   "fk_fat_bpb_parse: FAT32 label, root cluster, FSInfo, backup");
	put_le16(bs + 50, 32); /* the first FAT's first sector */
	err = fk_fat_bpb_parse(bs, 512, AMPLE_LEN, &g, NULL);
	OK(!err && !g.backup_sec && g.backup_sec_outside == 32,
	   "fk_fat_bpb_parse: a backup boot sector past the reserved ones is "
	   "not used, and kept to be named");
	put_le16(bs + 50, 6);
	bs[66] = 0;
	err = fk_fat_bpb_parse(bs, 512, AMPLE_LEN, &g, NULL);
	OK(!err && !g.has_ext_boot && !g.label[0],
	   "fk_fat_bpb_parse: no extended boot signature, no label");
	put_le16(bs + 40, 0x81);
	err = fk_fat_bpb_parse(bs, 512, AMPLE_LEN, &g, NULL);
	OK(!err && !g.is_mirrored && g.active_fat == 1,
	   "fk_fat_bpb_parse: mirroring off, FAT 1 active");
	bs[0] = 0;
	put_le16(bs + 11, 0);
	OK(fk_fat_bpb_parse(bs, 512, AMPLE_LEN, &g, NULL) == FK_ECORRUPT,
	   "fk_fat_bpb_parse: a NULL diag is allowed on a refusal");
}

/* ---- what a writer may act on: fk_fat_bpb_judge() ------------------------ */

static const struct judge_row {
	const char *edge;
	uint32_t nfats, root_ents, sec_len;
	const char *why; /* in the reason; NULL: plausible */
} judge_rows[] = {
	{"two FATs, 512 root entries", 2, 512, 512, NULL},
	{"one FAT", 1, 512, 512, NULL},
	{"FAT32 (no fixed root)", 2, 0, 512, NULL},
	{"three FATs (Linux mounts it, fsck.fat refuses)", 3, 512, 512,
	 "3 FAT copies"},
	{"sixteen FATs", 16, 512, 512, "16 FAT copies"},
	{"513 root entries", 2, 513, 512, "513 entries"},
	{"16 root entries in a 4096-byte sector (Linux refuses)", 2, 16, 4096,
	 "whole 4096-byte sectors"},
	{"128 root entries in a 4096-byte sector", 1, 128, 4096, NULL},
};

static void test_judge(void)
{
	size_t i;

	for (i = 0; i < NROWS(judge_rows); i++) {
		const struct judge_row *r = &judge_rows[i];
		struct fk_diag diag = {0};
		struct fk_geom g;
		int err;

		memset(&g, 0, sizeof(g));
		g.nfats = r->nfats;
		g.root_ents = r->root_ents;
		g.sec_len = r->sec_len;
		err = fk_fat_bpb_judge(&g, &diag);
		if (r->why)
			OK(err == FK_ECORRUPT &&
				   !strncmp(diag.reason,
					    "implausible geometry: ", 22) &&
				   strstr(diag.reason, r->why),
			   "fk_fat_bpb_judge: %s is refused (err %d, \"%s\")",
			   r->edge, err, diag.reason);
		else
			OK(!err, "fk_fat_bpb_judge: %s is plausible (\"%s\")",
			   r->edge, diag.reason);
	}
}

void suite_fat_boot(void)
{
	test_type_edges();
	test_damage();
	test_truncated();
	test_ids();
	test_judge();
}
