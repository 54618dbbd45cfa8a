/*
 * slot.c: the 32-byte directory slot, as the Microsoft FAT specification
 * lays it out ("Directory Structure", "FAT Long Directory Entries").  The
 * one place that knows a byte offset inside a slot or a marker value.
 */
#include "fat/slot.h"

#include <string.h>

#include "fat/fat-boot.h"
#include "iface/dirent.h"
#include "lib/endian.h"
#include "lib/names.h"
#include "volume/volume.h"

/* Short entry fields. */
#define DIR_NAME	   0
#define DIR_ATTR	   11
#define DIR_NTRES	   12
#define DIR_CRT_TIME_TENTH 13
#define DIR_CRT_TIME	   14
#define DIR_CRT_DATE	   16
#define DIR_LST_ACC_DATE   18
#define DIR_FST_CLUS_HI	   20
#define DIR_WRT_TIME	   22
#define DIR_WRT_DATE	   24
#define DIR_FST_CLUS_LO	   26
#define DIR_FILE_SIZE	   28

/* Long-name slot fields. */
#define LDIR_ORD      0
#define LDIR_ATTR     11
#define LDIR_TYPE     12 /* 0: a name piece; anything else, no name */
#define LDIR_CHKSUM   13
#define LDIR_FST_CLUS 26   /* 2 bytes, 0 in every long-name slot */
#define LDIR_LAST     0x40 /* in LDIR_ORD */
#define LDIR_ORD_MASK 0x3f
/* Attribute bits that must read FK_ATTR_LFN; the top two are reserved. */
#define LDIR_ATTR_MASK 0x3f

/* First-byte markers. */
#define SLOT_END  0x00
#define SLOT_FREE FK_SHORT_DELETED

/* The 13 UCS-2 units of a long-name slot sit in three runs: LDIR_Name1
 * (units 0-4), LDIR_Name2 (5-10), LDIR_Name3 (11-12). */
#define LDIR_NAME1 1
#define LDIR_NAME2 14
#define LDIR_NAME3 28

/* @n units from @p; the counts are constants, so each run unrolls. */
static void get_units(const unsigned char *p, uint16_t *u, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		u[i] = (uint16_t)get_le16(p + 2 * i);
}

static void put_units(unsigned char *p, const uint16_t *u, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		put_le16(p + 2 * i, u[i]);
}

void fk_slot_unpack(const struct fk_volume *vol, const unsigned char *e,
		    struct fk_dirent *ent)
{
	memcpy(ent->raw, e + DIR_NAME, 11);
	ent->attr = e[DIR_ATTR];
	ent->nt = e[DIR_NTRES];
	ent->first_clus = get_le16(e + DIR_FST_CLUS_LO);
	if (fk_fat_is_32(&vol->g))
		ent->first_clus |= get_le16(e + DIR_FST_CLUS_HI) << 16;
	ent->size = get_le32(e + DIR_FILE_SIZE);
	/* FAT has no ValidDataLength, NoFatChain or exFAT time fields */
	ent->valid_len = ent->size;
	ent->is_no_fat_chain = 0;
	ent->mtime_cs = 0;
	ent->mtime_tz = 0;
	ent->has_mtime_tz = 0;
	ent->mtime = (uint16_t)get_le16(e + DIR_WRT_TIME);
	ent->mdate = (uint16_t)get_le16(e + DIR_WRT_DATE);
	ent->ctime = (uint16_t)get_le16(e + DIR_CRT_TIME);
	ent->cdate = (uint16_t)get_le16(e + DIR_CRT_DATE);
	ent->adate = (uint16_t)get_le16(e + DIR_LST_ACC_DATE);
	ent->ctime_cs = e[DIR_CRT_TIME_TENTH];
}

void fk_slot_pack_fields(const struct fk_volume *vol,
			 const struct fk_dirent *ent, unsigned char *e)
{
	e[DIR_ATTR] = ent->attr;
	e[DIR_NTRES] = ent->nt;
	e[DIR_CRT_TIME_TENTH] = ent->ctime_cs;
	put_le16(e + DIR_CRT_TIME, ent->ctime);
	put_le16(e + DIR_CRT_DATE, ent->cdate);
	put_le16(e + DIR_LST_ACC_DATE, ent->adate);
	/* FAT12/16 keep EA handles here; only FAT32 owns the high word. */
	if (fk_fat_is_32(&vol->g))
		put_le16(e + DIR_FST_CLUS_HI, ent->first_clus >> 16);
	put_le16(e + DIR_WRT_TIME, ent->mtime);
	put_le16(e + DIR_WRT_DATE, ent->mdate);
	put_le16(e + DIR_FST_CLUS_LO, ent->first_clus & 0xffff);
	put_le32(e + DIR_FILE_SIZE, ent->size);
}

void fk_slot_pack(const struct fk_volume *vol, const struct fk_dirent *ent,
		  unsigned char *e)
{
	memcpy(e + DIR_NAME, ent->raw, 11);
	fk_slot_pack_fields(vol, ent, e);
}

int fk_slot_is_free(const unsigned char *e)
{
	return e[0] == SLOT_FREE || e[0] == SLOT_END;
}

int fk_slot_is_end(const unsigned char *e)
{
	return e[0] == SLOT_END;
}

void fk_slot_delete(unsigned char *e)
{
	e[0] = SLOT_FREE;
}

int fk_slot_is_lfn(const unsigned char *e)
{
	return (e[DIR_ATTR] & LDIR_ATTR_MASK) == FK_ATTR_LFN;
}

void fk_slot_lfn_unpack(const unsigned char *e, struct fk_lfn_slot *l)
{
	l->ord = e[LDIR_ORD] & LDIR_ORD_MASK;
	l->is_last = !!(e[LDIR_ORD] & LDIR_LAST);
	l->sum = e[LDIR_CHKSUM];
	get_units(e + LDIR_NAME1, l->units, 5);
	get_units(e + LDIR_NAME2, l->units + 5, 6);
	get_units(e + LDIR_NAME3, l->units + 11, 2);
	l->has_rsvd = e[LDIR_TYPE] || e[LDIR_FST_CLUS] || e[LDIR_FST_CLUS + 1];
}

void fk_slot_lfn_clean(unsigned char *e)
{
	e[LDIR_TYPE] = 0;
	e[LDIR_FST_CLUS] = e[LDIR_FST_CLUS + 1] = 0;
}

void fk_slot_lfn_pack(const struct fk_lfn_slot *l, unsigned char *e)
{
	memset(e, 0, FK_DIRENT_LEN);
	e[LDIR_ORD] = (unsigned char)((l->ord & LDIR_ORD_MASK) |
				      (l->is_last ? LDIR_LAST : 0));
	e[LDIR_ATTR] = FK_ATTR_LFN;
	e[LDIR_CHKSUM] = l->sum;
	put_units(e + LDIR_NAME1, l->units, 5);
	put_units(e + LDIR_NAME2, l->units + 5, 6);
	put_units(e + LDIR_NAME3, l->units + 11, 2);
}

static const char dot_names[][12] = {
	[FK_DOT] = ".          ",
	[FK_DOT_DOT] = "..         ",
};

enum fk_dot fk_slot_dot(const unsigned char raw[11])
{
	if (raw[0] != '.') /* every entry is asked, most are no dot */
		return FK_DOT_NONE;
	if (!memcmp(raw, dot_names[FK_DOT], 11))
		return FK_DOT;
	if (!memcmp(raw, dot_names[FK_DOT_DOT], 11))
		return FK_DOT_DOT;
	return FK_DOT_NONE;
}

void fk_slot_set_dot(enum fk_dot which, unsigned char raw[11])
{
	memcpy(raw, dot_names[which], 11);
}
