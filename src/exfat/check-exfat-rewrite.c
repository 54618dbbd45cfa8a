/*
 * check-exfat-rewrite.c: the exFAT checker's rewrites of entry sets: a set
 * kept as it now is in the list the repair writes whole, marked unused,
 * or resealed (NameHash and SetChecksum) after its fields changed.
 */
#include "exfat/check-exfat-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"
#include "lib/endian.h"

/* Mark every entry of @s unused, keeping 0x00 (end of directory) away. */
void exck_delete_set(struct fk_exfat_set *s)
{
	uint32_t i;

	for (i = 0; i < s->nents; i++) {
		uint8_t t = s->raw[i][GEN_TYPE] & 0x7F;

		s->raw[i][GEN_TYPE] = t ? t : 0x01;
	}
}

/* Keep @s as it now is in the list of sets to rewrite. */
int exck_plan_set(struct fk_exfat_check *x, const struct fk_exfat_set *s)
{
	struct set_fix f;

	f.is_idle = 0;
	f.nents = s->nents;
	f.off = calloc(s->nents, sizeof(*f.off));
	f.raw = calloc(s->nents, sizeof(*f.raw));
	if (!f.off || !f.raw || PUSH(x->set_fixes, f)) {
		free(f.off);
		free(f.raw);
		return -ENOMEM;
	}
	memcpy(f.off, s->off, s->nents * sizeof(*f.off));
	memcpy(f.raw, s->raw, s->nents * sizeof(*f.raw));
	return 0;
}

/* Recompute NameHash and SetChecksum of a file set being rewritten. */
void exck_reseal(const struct fk_exfat_check *x, struct fk_exfat_set *s)
{
	uint16_t units[FK_EXFAT_NAME_MAX];
	uint32_t i, n = s->raw[1][SE_NAME_LEN];

	for (i = 0; i < n; i++)
		units[i] = name_unit(s, i);
	put_le16(&s->raw[1][SE_NAME_HASH],
		 fk_exfat_name_hash(x->ex->upcase, units, n));
	put_le16(&s->raw[0][GEN_CHECKSUM],
		 fk_exfat_set_checksum((const unsigned char(*)[32])s->raw,
				       s->nents));
}
