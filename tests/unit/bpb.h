/*
 * bpb.h: synthetic boot sectors for the unit tests, laid out so the data
 * area holds exactly a chosen number of clusters.  Defined in
 * test_fat_boot.c; test_fat.c builds whole images from them.
 */
#ifndef FATKIT_TEST_BPB_H
#define FATKIT_TEST_BPB_H

#include <stdint.h>

struct test_bpb {
	uint32_t sec_len;    /* bytes per sector */
	uint32_t clus_secs;  /* sectors per cluster */
	uint32_t rsvd_secs;  /* reserved sectors before FAT 0 */
	uint32_t nfats;	     /* FAT copies */
	uint32_t root_ents;  /* fixed root entries; 0: FAT32 layout */
	uint32_t fat_secs;   /* sectors per FAT copy */
	uint32_t nclus;	     /* whole clusters in the data area */
	uint32_t spare_secs; /* sectors past the last whole cluster */
	int is_fat32;	     /* FAT32 layout (BPB_FATSz16 = 0) */
};

/*
 * A layout of @nclus clusters whose FATs are sized for @bits-bit entries:
 * FAT12/16 layout (1 reserved sector, 2 FATs, 512 root entries) unless
 * @is_fat32 (32 reserved sectors, 2 FATs, root cluster 2).
 */
void test_bpb_layout(struct test_bpb *b, int is_fat32, uint32_t sec_len,
		     uint32_t clus_secs, uint32_t nclus, unsigned bits);

/* Total sectors of @b's volume. */
uint64_t test_bpb_total(const struct test_bpb *b);

/*
 * Write @b into the first 512 bytes of @bs (which the caller zeroed):
 * jump, OEM name, BPB, extended BPB with serial 0x1234ABCD and label
 * "TESTVOL", and the 0x55AA signature.  Total sectors go in the 16-bit
 * field when they fit, as mkfs.fat does.
 */
void test_bpb_write(const struct test_bpb *b, unsigned char *bs);

#endif
