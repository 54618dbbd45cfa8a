/*
 * test_fat_reserved.c: FAT[0] and FAT[1] judged against the values the
 * Microsoft FAT specification gives ("FAT Data Structure": FAT[0] is the
 * media byte with all other bits set; FAT[1] is the EOC mark, whose two
 * top bits on FAT16 (0x8000, 0x4000) and FAT32 (0x08000000, 0x04000000)
 * are ClnShutBitMask and HrdErrBitMask), written out by hand per width.
 */
#include "tap.h"

#include <stdint.h>
#include <string.h>

#include "fat/fat-boot.h"
#include "table/fat.h"
#include "volume/volume.h"

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))

struct reserved_row {
	enum fk_fat_type type;
	uint8_t media;
	uint32_t fat0, fat1;
	uint32_t want0, want1;
	int ones, media_ok, clean, noerr, eoc;
};

static const struct reserved_row reserved_rows[] = {
	/* type   media fat0        fat1        want0       want1 */
	{FK_FAT12, 0xf8, 0xff8, 0xfff, 0xff8, 0xfff, 1, 1, 1, 1, 1},
	{FK_FAT12, 0xf0, 0xff8, 0xfff, 0xff0, 0xfff, 1, 0, 1, 1, 1},
	{FK_FAT12, 0xf8, 0x0f8, 0xff0, 0xff8, 0xfff, 0, 0, 1, 1, 0},
	/* FAT12 has no shutdown bits: a clear top bit is just not EOC */
	{FK_FAT12, 0xf8, 0xff8, 0x7ff, 0xff8, 0xfff, 1, 1, 1, 1, 0},
	{FK_FAT16, 0xf8, 0xfff8, 0xffff, 0xfff8, 0xffff, 1, 1, 1, 1, 1},
	{FK_FAT16, 0xf8, 0xfff0, 0x7fff, 0xfff8, 0xffff, 1, 0, 0, 1, 1},
	{FK_FAT16, 0xf8, 0x0ff8, 0xbfff, 0xfff8, 0xffff, 0, 0, 1, 0, 1},
	/* fsck.fat's mark takes the media byte's high nibble too */
	{FK_FAT16, 0xf8, 0xff08, 0xffff, 0xfff8, 0xffff, 0, 0, 1, 1, 1},
	/* a media byte without it: the mark is still there to write */
	{FK_FAT16, 0x00, 0xfff0, 0xffff, 0xfff0, 0xffff, 1, 1, 1, 1, 1},
	{FK_FAT16, 0xf8, 0xfff8, 0x3ff0, 0xfff8, 0xffff, 1, 1, 0, 0, 0},
	{FK_FAT32, 0xf8, 0x0ffffff8, 0x0fffffff, 0x0ffffff8, 0x0fffffff, 1, 1,
	 1, 1, 1},
	{FK_FAT32, 0xf0, 0x0ffffff8, 0x07ffffff, 0x0ffffff0, 0x0fffffff, 1, 0,
	 0, 1, 1},
	{FK_FAT32, 0xf8, 0x0fff0ff8, 0x0bffffff, 0x0ffffff8, 0x0fffffff, 0, 0,
	 1, 0, 1},
	{FK_FAT32, 0xf8, 0x0ffffff8, 0x0ffffff8, 0x0ffffff8, 0x0fffffff, 1, 1,
	 1, 1, 0},
};

void suite_fat_reserved(void)
{
	size_t i;

	for (i = 0; i < NROWS(reserved_rows); i++) {
		const struct reserved_row *r = &reserved_rows[i];
		struct fk_geom g;
		struct fk_fat_reserved got;

		memset(&g, 0, sizeof(g));
		fk_fat_geom_type(&g, r->type);
		g.media = r->media;
		g.nclus = 100;
		fk_fat_reserved_judge(&g, r->fat0, r->fat1, &got);
		OK(got.want0 == r->want0 && got.want1 == r->want1 &&
			   got.is_fat0_ones == r->ones &&
			   got.is_fat0_media == r->media_ok &&
			   got.is_clean == r->clean &&
			   got.is_noerr == r->noerr &&
			   got.is_fat1_eoc == r->eoc,
		   "FAT%u reserved entries 0x%X, 0x%X (media 0x%02X): want "
		   "0x%X 0x%X, ones %d media %d clean %d noerr %d eoc %d; got "
		   "0x%X 0x%X, %d %d %d %d %d",
		   (unsigned)r->type, r->fat0, r->fat1, r->media, r->want0,
		   r->want1, r->ones, r->media_ok, r->clean, r->noerr, r->eoc,
		   got.want0, got.want1, got.is_fat0_ones, got.is_fat0_media,
		   got.is_clean, got.is_noerr, got.is_fat1_eoc);
	}
}
