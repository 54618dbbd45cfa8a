/*
 * fat-boot.c: the FAT family's boot sector and its BPB, and the family's
 * probe and boot-sector read for fk_volume_open() (through
 * fk_fat_family).  Each field is checked with its own reason, the FAT
 * type comes from the cluster count (Microsoft FAT specification, "FAT
 * Type Determination"), and the geometry every other module relies on is
 * derived here, with every product checked against the volume so later
 * loops can trust it.  A sector that no family claims is read by the FAT
 * family last (mount/families.c), so the parser's reasons say what is
 * wrong with it.  Also the dirty flag and the boot-sector repair.
 */
#include "fat/fat-boot.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/device.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "table/fat.h"
#include "volume/volume.h"

/* BPB fields (byte offsets in the boot sector). */
#define BS_JMP		   0
#define BS_OEM		   3
#define BPB_BYTS_PER_SEC   11
#define BPB_SEC_PER_CLUS   13
#define BPB_RSVD_SEC_CNT   14
#define BPB_NUM_FATS	   16
#define BPB_ROOT_ENT_CNT   17
#define BPB_TOT_SEC16	   19
#define BPB_MEDIA	   21
#define BPB_FAT_SZ16	   22
#define BPB_TOT_SEC32	   32
#define BPB_FAT_SZ32	   36
#define BPB_EXT_FLAGS	   40
#define BPB_FS_VER	   42
#define BPB_ROOT_CLUS	   44
#define BPB_FS_INFO	   48
#define BPB_BK_BOOT_SEC	   50
#define BS16_BOOT_SIG	   38 /* extended BPB of FAT12/16 */
#define BS32_BOOT_SIG	   66 /* extended BPB of FAT32 */
#define BS_VOL_ID_REL	   1  /* from the boot signature */
#define BS_VOL_LAB_REL	   5
#define BS_FIL_SYS_REL	   16 /* BS_FilSysType, 8 bytes */
#define BS16_STATE	   37 /* BS_Reserved1: Linux's state flags */
#define BS32_STATE	   65
#define EXT_FLAG_NO_MIRROR 0x80
#define EXT_FLAG_ACTIVE	   0x0f

void fk_fat_geom_type(struct fk_geom *g, enum fk_fat_type type)
{
	g->ent_bits = type;
	g->ent_mask = type == FK_FAT12	 ? 0xfffu
		      : type == FK_FAT16 ? 0xffffu
					 : 0x0fffffffu; /* top 4 reserved */
	g->ent_eoc = g->ent_mask - 7; /* 0xFF8 .. 0xFFF end a chain */
	g->is_root_chain = type == FK_FAT32;
	strcpy(g->type_name, type == FK_FAT12	? "FAT12"
			     : type == FK_FAT16 ? "FAT16"
						: "FAT32");
}

static int is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static int bad(struct fk_diag *diag, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* One reason per defect; every message names the field. */
static int bad(struct fk_diag *diag, const char *fmt, ...)
{
	va_list ap;

	if (diag) {
		va_start(ap, fmt);
		vsnprintf(diag->reason, sizeof(diag->reason), fmt, ap);
		va_end(ap);
	}
	return FK_ECORRUPT;
}

static int parse_sizes(const unsigned char *bs, struct fk_geom *g,
		       struct fk_diag *diag)
{
	g->sec_len = get_le16(bs + BPB_BYTS_PER_SEC);
	if (!is_pow2(g->sec_len) || g->sec_len < 512 || g->sec_len > 4096)
		return bad(diag,
			   "bad boot sector: bytes per sector %u is not "
			   "512, 1024, 2048 or 4096",
			   g->sec_len);
	g->clus_secs = bs[BPB_SEC_PER_CLUS];
	if (!is_pow2(g->clus_secs))
		return bad(diag,
			   "bad boot sector: sectors per cluster %u is "
			   "not a power of two",
			   g->clus_secs);
	g->clus_len = g->clus_secs * g->sec_len;
	if (g->clus_len > 65536)
		return bad(diag,
			   "bad boot sector: cluster size %u exceeds "
			   "%u bytes",
			   g->clus_len, 65536u);
	g->rsvd_secs = get_le16(bs + BPB_RSVD_SEC_CNT);
	if (!g->rsvd_secs)
		return bad(diag, "bad boot sector: no reserved sectors");
	g->nfats = bs[BPB_NUM_FATS];
	if (!g->nfats || g->nfats > 16)
		return bad(diag,
			   "bad boot sector: number of FATs %u is not "
			   "1 to %u",
			   g->nfats, 16u);
	return 0;
}

/* Counts and the layout: FAT area, fixed root, data area, cluster count. */
static int parse_layout(const unsigned char *bs, uint64_t vol_len,
			struct fk_geom *g, struct fk_diag *diag)
{
	uint32_t fat_sz16 = get_le16(bs + BPB_FAT_SZ16);
	uint32_t tot16 = get_le16(bs + BPB_TOT_SEC16);
	uint64_t meta_secs, data_secs, fat_ents;

	g->root_ents = get_le16(bs + BPB_ROOT_ENT_CNT);
	g->fat_secs = fat_sz16 ? fat_sz16 : get_le32(bs + BPB_FAT_SZ32);
	g->total_secs = tot16 ? tot16 : get_le32(bs + BPB_TOT_SEC32);
	if (!g->fat_secs)
		return bad(diag, "bad boot sector: sectors per FAT is 0");
	if (!g->total_secs)
		return bad(diag, "bad boot sector: total sectors is 0");
	if (!fat_sz16 && g->root_ents)
		return bad(diag,
			   "bad boot sector: FAT32 layout with %u fixed "
			   "root entries",
			   g->root_ents);
	if (fat_sz16 && !g->root_ents)
		return bad(diag,
			   "bad boot sector: FAT12/16 layout with no root "
			   "directory entries");
	g->root_secs = (g->root_ents * 32 + g->sec_len - 1) / g->sec_len;
	meta_secs =
		g->rsvd_secs + (uint64_t)g->nfats * g->fat_secs + g->root_secs;
	if (meta_secs >= g->total_secs)
		return bad(diag,
			   "bad boot sector: FAT area (%" PRIu64
			   " sectors) does "
			   "not fit in the volume (%" PRIu64 " sectors)",
			   meta_secs, g->total_secs);
	if (g->total_secs > vol_len / g->sec_len)
		return bad(diag,
			   "image is truncated: the volume needs %" PRIu64 " "
			   "bytes, the image has %" PRIu64 "",
			   g->total_secs * g->sec_len, vol_len);
	data_secs = g->total_secs - meta_secs;
	if (data_secs / g->clus_secs > FK_FAT32_MAX_CLUS)
		return bad(diag,
			   "bad boot sector: %" PRIu64
			   " clusters exceed the FAT32 "
			   "limit of %" PRIu64 "",
			   data_secs / g->clus_secs,
			   (uint64_t)FK_FAT32_MAX_CLUS);
	g->nclus = (uint32_t)(data_secs / g->clus_secs);
	if (!g->nclus)
		return bad(diag, "bad boot sector: no data clusters");
	fk_fat_geom_type(g, g->nclus <= FK_FAT12_MAX_CLUS   ? FK_FAT12
			    : g->nclus <= FK_FAT16_MAX_CLUS ? FK_FAT16
							    : FK_FAT32);
	if (fk_fat_is_32(g) != !fat_sz16)
		return bad(diag,
			   "bad boot sector: %u clusters make FAT%u, "
			   "which contradicts the BPB layout",
			   g->nclus, g->ent_bits);
	fat_ents = (uint64_t)g->fat_secs * g->sec_len * 8 / g->ent_bits;
	if (fat_ents < (uint64_t)g->nclus + 2)
		return bad(diag,
			   "bad boot sector: a FAT of %" PRIu64
			   " entries cannot "
			   "map %" PRIu64 " clusters",
			   fat_ents, (uint64_t)g->nclus + 2);
	g->fat_off = (uint64_t)g->rsvd_secs * g->sec_len;
	g->root_off =
		g->fat_off + (uint64_t)g->nfats * g->fat_secs * g->sec_len;
	g->data_off = g->root_off + (uint64_t)g->root_secs * g->sec_len;
	return 0;
}

static int parse_fat32(const unsigned char *bs, struct fk_geom *g,
		       struct fk_diag *diag)
{
	uint32_t flags = get_le16(bs + BPB_EXT_FLAGS);

	g->is_mirrored = 1;
	if (!fk_fat_is_32(g))
		return 0;
	if (get_le16(bs + BPB_FS_VER))
		return bad(diag,
			   "bad boot sector: FAT32 version %u.%u is not "
			   "0.0",
			   (unsigned)bs[BPB_FS_VER + 1],
			   (unsigned)bs[BPB_FS_VER]);
	g->root_clus = get_le32(bs + BPB_ROOT_CLUS);
	if (!fk_clus_valid(g, g->root_clus))
		return bad(diag,
			   "bad boot sector: root cluster %u is out of "
			   "range (2 to %u)",
			   g->root_clus, fk_clus_max(g));
	g->fsinfo_sec = get_le16(bs + BPB_FS_INFO);
	if (g->fsinfo_sec == 0xFFFF)
		g->fsinfo_sec = 0;
	if (g->fsinfo_sec >= g->rsvd_secs)
		return bad(diag,
			   "bad boot sector: FSInfo sector %u is outside "
			   "the %u reserved sectors",
			   g->fsinfo_sec, g->rsvd_secs);
	g->backup_sec = get_le16(bs + BPB_BK_BOOT_SEC);
	if (g->backup_sec == 0xFFFF)
		g->backup_sec = 0;
	/* A number past the reserved sectors names a sector of the FAT or
	 * the data: no copy is read or written there.  Linux never reads
	 * the backup, so the volume stays readable and writable; fatcheck
	 * names it and moves the backup where it belongs. */
	if (g->backup_sec >= g->rsvd_secs) {
		g->backup_sec_outside = g->backup_sec;
		g->backup_sec = 0;
	}
	if (flags & EXT_FLAG_NO_MIRROR) {
		g->is_mirrored = 0;
		g->active_fat = flags & EXT_FLAG_ACTIVE;
		if (g->active_fat >= g->nfats)
			return bad(diag,
				   "bad boot sector: active FAT %u of "
				   "%u",
				   g->active_fat, g->nfats);
	}
	return 0;
}

static void parse_ids(const unsigned char *bs, struct fk_geom *g)
{
	unsigned sig_off = fk_fat_is_32(g) ? BS32_BOOT_SIG : BS16_BOOT_SIG;
	int n;

	g->media = bs[BPB_MEDIA];
	memcpy(g->oem, bs + BS_OEM, 8);
	g->oem[8] = '\0';
	g->has_ext_boot = bs[sig_off] == 0x29;
	g->label[0] = '\0';
	if (!g->has_ext_boot)
		return;
	g->serial = get_le32(bs + sig_off + BS_VOL_ID_REL);
	memcpy(g->label, bs + sig_off + BS_VOL_LAB_REL, 11);
	memcpy(g->label_raw, g->label, 11);
	for (n = 11; n > 0 && (g->label[n - 1] == ' ' || !g->label[n - 1]); n--)
		;
	g->label[n] = '\0';
}

/*
 * Whether @bs looks like the start of a text file: printable ASCII, tab,
 * CR, LF and well-formed UTF-8 only (a sequence cut by the end of the
 * sector counts), no NUL.  No FAT or exFAT boot sector passes: both
 * start with a jump instruction (0xEB or 0xE9), and without one the
 * BPB's zero bytes fail.
 */
static bool is_text(const unsigned char *bs, size_t len)
{
	size_t i = 0, n, k;

	while (i < len) {
		unsigned char c = bs[i];

		if ((c >= 0x20 && c < 0x7F) || c == '\t' || c == '\r' ||
		    c == '\n') {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			n = 1;
		else if (c >= 0xE0 && c <= 0xEF)
			n = 2;
		else if (c >= 0xF0 && c <= 0xF4)
			n = 3;
		else
			return false;
		for (k = 1; k <= n && i + k < len; k++)
			if ((bs[i + k] & 0xC0) != 0x80)
				return false;
		i += k;
	}
	return true;
}

/*
 * The jump byte is not judged: fsck.fat, mtools, libblkid and Linux take
 * a sector whose BPB holds together for a FAT boot sector whatever byte 0
 * is (0x00 after a wiped boot code), and the BPB rules alone let no
 * random sector through (none of 5,000,000 tried).  Without a jump
 * instruction, though, a sector the BPB rules reject is most likely none
 * at all (zeros, an MBR, another file): the reason says so first.
 */
static void name_not_fat(const unsigned char *bs, struct fk_diag *diag)
{
	static const char prefix[] = "bad boot sector: ";
	char why[sizeof(diag->reason)];

	if (!diag || bs[BS_JMP] == 0xEB || bs[BS_JMP] == 0xE9 ||
	    strncmp(diag->reason, prefix, sizeof(prefix) - 1))
		return;
	if (is_text(bs, 512)) {
		bad(diag, "not a FAT or exFAT volume (text file?)");
		return;
	}
	snprintf(why, sizeof(why), "%s", diag->reason + sizeof(prefix) - 1);
	bad(diag, "not a FAT boot sector (jump byte 0x%02x; %s)", bs[BS_JMP],
	    why);
}

int fk_fat_bpb_parse(const unsigned char *bs, size_t len, uint64_t vol_len,
		     struct fk_geom *out, struct fk_diag *diag)
{
	struct fk_geom g;
	int err;

	memset(&g, 0, sizeof(g));
	if (len < 512)
		return bad(diag,
			   "image is truncated: %llu bytes, no boot "
			   "sector",
			   (unsigned long long)len);
	if ((err = parse_sizes(bs, &g, diag)) ||
	    (err = parse_layout(bs, vol_len, &g, diag)) ||
	    (err = parse_fat32(bs, &g, diag))) {
		name_not_fat(bs, diag);
		return err;
	}
	parse_ids(bs, &g);
	*out = g;
	return 0;
}

int fk_fat_bpb_judge(const struct fk_geom *g, struct fk_diag *diag)
{
	if (g->nfats != 1 && g->nfats != 2)
		return bad(diag,
			   "implausible geometry: %u FAT copies (boot sector "
			   "byte %u), not 1 or 2 (a changed byte cannot be "
			   "told from more copies)",
			   g->nfats, BPB_NUM_FATS);
	/* parse_layout() rounds the root up to whole sectors, where the
	 * data area then starts: a count that needs the rounding puts it
	 * where no formatter would (a changed byte, or a foreign layout). */
	if (g->root_ents * 32 % g->sec_len)
		return bad(diag,
			   "implausible geometry: a root directory of %u "
			   "entries (boot sector bytes %u-%u) does not fill "
			   "whole %u-byte sectors",
			   g->root_ents, BPB_ROOT_ENT_CNT, BPB_ROOT_ENT_CNT + 1,
			   g->sec_len);
	return 0;
}

int fk_fat_read_backup(struct fk_volume *vol, unsigned char *buf)
{
	if (!vol->g.backup_sec) /* none, or not FAT32 */
		return -ENOENT;
	return fk_device_read(vol->dev,
			      (uint64_t)vol->g.backup_sec * vol->g.sec_len, buf,
			      vol->g.sec_len);
}

unsigned fk_fat_dirty_off(const struct fk_volume *vol)
{
	return fk_fat_is_32(&vol->g) ? BS32_STATE : BS16_STATE;
}

int fk_fat_is_dirty(const struct fk_volume *vol)
{
	return vol->boot[fk_fat_dirty_off(vol)] & FK_BOOT_DIRTY;
}

void fk_fat_set_media(struct fk_volume *vol, uint8_t media)
{
	vol->boot[BPB_MEDIA] = media;
	vol->g.media = media;
}

int fk_fat_fix_boot(struct fk_volume *vol, int clear_dirty,
		    const unsigned char *label, int sync_backup)
{
	unsigned sig_off =
		fk_fat_is_32(&vol->g) ? BS32_BOOT_SIG : BS16_BOOT_SIG;
	int err;

	if (clear_dirty)
		vol->boot[fk_fat_dirty_off(vol)] &=
			(unsigned char)~FK_BOOT_DIRTY;
	if (label && !vol->g.has_ext_boot) {
		/* A label needs the signature (as fsck.fat -a sets it).  The
		 * serial bytes stay: undefined without it, any value is one,
		 * and after a one-byte change they are the volume's own. */
		char type[9];

		snprintf(type, sizeof(type), "%-8s", vol->g.type_name);
		vol->boot[sig_off] = 0x29;
		memcpy(vol->boot + sig_off + BS_FIL_SYS_REL, type, 8);
	}
	if (label) {
		memcpy(vol->boot + sig_off + BS_VOL_LAB_REL, label, 11);
		parse_ids(vol->boot, &vol->g); /* g.label follows */
	}
	if ((err = fk_device_write(vol->dev, 0, vol->boot, vol->g.sec_len)))
		return err;
	if (!sync_backup || !fk_fat_is_32(&vol->g) || !vol->g.backup_sec)
		return 0;
	return fk_device_write(vol->dev,
			       (uint64_t)vol->g.backup_sec * vol->g.sec_len,
			       vol->boot, vol->g.sec_len);
}

int fk_fat_judge_boot(struct fk_volume *vol, struct fk_diag *diag)
{
	int err;

	if ((err = fk_fat_bpb_judge(&vol->g, diag))) {
		fk_fat_note_unwritable(diag, err);
		return err;
	}
	return fk_fat_judge_layout(vol, diag);
}

int fk_fat_probe(const unsigned char *bs, uint64_t vol_len)
{
	struct fk_geom g;

	return !fk_fat_bpb_parse(bs, 512, vol_len, &g, NULL);
}

int fk_fat_read_boot(struct fk_volume *vol, const unsigned char *head,
		     size_t head_len, const struct fk_volume_opts *opts,
		     struct fk_diag *diag)
{
	uint64_t vol_len = fk_device_len(vol->dev);
	struct fk_geom g;
	int err;

	/* A truncated dump: judge the boot sector as if it were whole. */
	if ((err = fk_fat_bpb_parse(head, 512,
				    opts->is_cut_ok ? UINT64_MAX : vol_len, &g,
				    diag)))
		return err;
	if (g.total_secs > vol_len / g.sec_len)
		vol->present_len = vol_len;
	if (!(vol->boot = malloc(g.sec_len)))
		return -ENOMEM;
	if (g.sec_len <= head_len)
		memcpy(vol->boot, head, g.sec_len);
	else if ((err = fk_device_read(vol->dev, 0, vol->boot, g.sec_len)))
		return err;
	vol->g = g;
	return 0;
}
