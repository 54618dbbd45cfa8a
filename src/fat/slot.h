/*
 * slot.h: the on-disk 32-byte directory slot, read and written by the
 * directory reader (dir.c, check-tree.c) and the writer (dirplan.c) alike: the
 * short entry's fields, the long-name slot and its scattered UCS-2 units,
 * the first-byte markers, the attribute bits and the "." and ".." names.
 * No I/O.
 */
#ifndef FATKIT_SLOT_H
#define FATKIT_SLOT_H

#include <stdint.h>

struct fk_dirent;
struct fk_volume;

#define FK_DIRENT_LEN 32

/* A long-name slot's attribute byte (the others: iface/dirent.h). */
#define FK_ATTR_LFN 0x0f

#define FK_LFN_CHARS   13 /* UCS-2 units per long-name slot */
#define FK_LFN_MAX_ORD 20 /* 20 slots x 13 = 260 units >= 255 */

/*
 * Short slots: unpack the fields of slot @e into @ent (not the names: raw,
 * attr, nt, clusters, size, times), or pack @ent's fields and @ent->raw
 * into @e.  The cluster's high word is FAT32's only.
 */
void fk_slot_unpack(const struct fk_volume *vol, const unsigned char *e,
		    struct fk_dirent *ent);
void fk_slot_pack(const struct fk_volume *vol, const struct fk_dirent *ent,
		  unsigned char *e);
/* As fk_slot_pack(), leaving the 11 name bytes of @e alone. */
void fk_slot_pack_fields(const struct fk_volume *vol,
			 const struct fk_dirent *ent, unsigned char *e);

/* Is slot @e free: deleted, or the end marker (then so is every later
 * slot, for Windows and mtools)? */
int fk_slot_is_free(const unsigned char *e);
int fk_slot_is_end(const unsigned char *e);
/* Mark slot @e deleted (its other bytes stay, as every FAT driver does). */
void fk_slot_delete(unsigned char *e);

/* Is @e a long-name slot (by its attribute byte)? */
int fk_slot_is_lfn(const unsigned char *e);

/* One long-name slot, decoded. */
struct fk_lfn_slot {
	unsigned ord; /* 1 .. 63: piece of the name; 1 is the first */
	int is_last;  /* the name's last piece, stored first */
	uint8_t sum;  /* fk_lfn_checksum() of the short name */
	uint16_t units[FK_LFN_CHARS];
	int has_rsvd; /* LDIR_Type or LDIR_FstClusLO, which must be 0,
			   is not (fsck.fat reports and clears them) */
};
void fk_slot_lfn_unpack(const unsigned char *e, struct fk_lfn_slot *l);
/* Lay @l into @e, zeroing the slot's other bytes. */
void fk_slot_lfn_pack(const struct fk_lfn_slot *l, unsigned char *e);
/* Zero the fields of long-name slot @e that must be 0 (has_rsvd's). */
void fk_slot_lfn_clean(unsigned char *e);

/* "." and "..": which one 11-byte name @raw is, or put it in @raw. */
enum fk_dot {
	FK_DOT_NONE = 0,
	FK_DOT = 1,
	FK_DOT_DOT = 2,
};
enum fk_dot fk_slot_dot(const unsigned char raw[11]);
void fk_slot_set_dot(enum fk_dot which, unsigned char raw[11]);

#endif
