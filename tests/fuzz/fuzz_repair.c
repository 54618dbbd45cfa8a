/*
 * fuzz_repair.c: `fatcheck -r --trim-prealloc` (and `--salvage` when the
 * input's last byte is odd), then a second check.  The
 * repair must converge: what one run leaves, a second run finds nothing
 * to repair in (no finding with a planned fix).  One exception, by
 * design: on exFAT a run that keeps lost clusters because the tree held
 * what it could not attribute (finding "lost-kept") may have repaired
 * that very thing, and the next run then frees them ("lost", and the
 * PercentInUse that follows).  A repair must not leave a volume the
 * checker can no longer check either.  And a repair never writes on a
 * layout fsck.fat gives up on: judged here from the input's bytes,
 * without fatkit's code, such a volume must be refused by the check
 * (which then writes nothing), and a refusal for "implausible geometry"
 * must be one of them.  Violations abort() after printing what was
 * found.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/check.h"
#include "exfat/exfat.h"
#include "image.h"
#include "io/device.h"
#include "lib/diag.h"
#include "volume/volume.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static int has_code(const struct fk_check *ck, const char *code)
{
	const struct fk_finding *f;
	size_t i, n;

	f = fk_check_findings(ck, &n);
	for (i = 0; i < n; i++)
		if (!strcmp(f[i].code, code))
			return 1;
	return 0;
}

/* Does @after plan a repair that @before's kept clusters do not explain? */
static int is_unconverged(const struct fk_check *before,
			  const struct fk_check *after)
{
	const struct fk_finding *f;
	size_t i, n;

	if (!fk_check_stats(after)->has_repairs)
		return 0;
	if (!has_code(before, "lost-kept"))
		return 1;
	f = fk_check_findings(after, &n);
	for (i = 0; i < n; i++)
		if (f[i].fix && strcmp(f[i].code, "lost") &&
		    strcmp(f[i].code, "percent-in-use"))
			return 1;
	return 0;
}

static uint32_t byte_at(const uint8_t *data, size_t len, uint64_t off)
{
	return off < len ? data[off] : 0; /* past the input: the hole */
}

static uint32_t le_at(const uint8_t *data, size_t len, uint64_t off, unsigned n)
{
	uint32_t v = 0;

	while (n--)
		v = v << 8 | byte_at(data, len, off + n);
	return v;
}

/*
 * fsck.fat 4.2's refusals of a layout that fk_volume_open() accepted:
 * other than 1 or 2 FATs, a fixed root that is not whole sectors (Linux's
 * rule; fsck.fat's is 16 entries), or no FAT copy whose FAT[0] has every
 * bit above the low 4 set.  The FAT width from the cluster count, as the
 * Microsoft specification has it.
 */
static int is_implausible(const uint8_t *data, size_t len)
{
	uint32_t sec_len = le_at(data, len, 11, 2);
	uint32_t clus_secs = byte_at(data, len, 13);
	uint32_t rsvd = le_at(data, len, 14, 2), nfats = byte_at(data, len, 16);
	uint32_t root_ents = le_at(data, len, 17, 2);
	uint64_t total = le_at(data, len, 19, 2), fat_secs, meta, nclus;
	uint32_t c, v, ones;

	if (len >= 11 && !memcmp(data + 3, "EXFAT   ", 8))
		return 0;
	if (nfats != 1 && nfats != 2)
		return 1;
	if (!sec_len || !clus_secs || root_ents * 32 % sec_len)
		return 1;
	total = total ? total : le_at(data, len, 32, 4);
	fat_secs = le_at(data, len, 22, 2);
	fat_secs = fat_secs ? fat_secs : le_at(data, len, 36, 4);
	meta = rsvd + nfats * fat_secs + root_ents * 32 / sec_len;
	nclus = total > meta ? (total - meta) / clus_secs : 0;
	for (c = 0; c < nfats; c++) {
		uint64_t off = ((uint64_t)rsvd + c * fat_secs) * sec_len;

		if (nclus < 4085) {
			v = le_at(data, len, off, 2) & 0xfff;
			ones = 0xff0;
		} else if (nclus < 65525) {
			v = le_at(data, len, off, 2);
			ones = 0xfff0;
		} else {
			v = le_at(data, len, off, 4);
			ones = 0x0ffffff0;
		}
		if ((v & ones) == ones)
			return 0;
	}
	return 1;
}

/* Run the check as fatcheck does; NULL when it refused (@diag says why). */
static struct fk_check *check_or_refuse(struct fk_volume *vol,
					const struct fk_check_opts *co,
					struct fk_diag *diag)
{
	struct fk_check *ck;

	if (fk_check_new(vol, co, &ck))
		return NULL;
	if (fk_check_run(ck, diag)) {
		fk_check_free(ck);
		return NULL;
	}
	return ck;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct fk_diag diag = {0};
	struct fk_check_opts co;
	struct fk_volume *vol;
	struct fk_check *ck, *after;
	int err, is_odd;

	fuzz_image(data, len);
	if (fuzz_open_check(1, &vol))
		return 0;
	if (vol->g.nclus > FUZZ_CHECK_MAX_CLUS) {
		fk_volume_close(vol);
		return -1; /* not worth keeping in the corpus */
	}
	memset(&co, 0, sizeof(co));
	co.trim_prealloc = 1;
	co.salvage = len && (data[len - 1] & 1);
	/* Another bit forces FAT copy 2 where the copies differ (fatcheck
	 * --fat-copy 2), else each run of sectors is judged. */
	if (!fk_exfat_of(vol) && vol->g.nfats == 2 && len &&
	    (data[len - 1] & 2))
		co.fat_copy = 2;
	co.is_thorough = 1; /* as fatcheck -r */
	is_odd = !fk_exfat_of(vol) && is_implausible(data, len);
	ck = check_or_refuse(vol, &co, &diag);
	if (ck && is_odd) {
		fuzz_print_findings("check", ck);
		fprintf(stderr, "fuzz: the checker took a layout fsck.fat "
				"gives up on, and may repair it\n");
		abort();
	}
	if (!ck && !is_odd && !fk_exfat_of(vol) &&
	    strstr(diag.reason, "implausible geometry")) {
		fprintf(stderr, "fuzz: refused a plausible layout: %s\n",
			diag.reason);
		abort();
	}
	if (!ck && fk_device_stats(vol->dev)->write_calls) {
		fprintf(stderr, "fuzz: a refused check wrote: %s\n",
			diag.reason);
		abort();
	}
	if (!ck)
		goto out_close;
	if (!fk_check_stats(ck)->has_repairs ||
	    (err = fk_check_repair(ck, NULL)))
		goto out_free; /* nothing to do, or refused: not our case */
	fk_volume_close(vol);
	if (fuzz_open_check(0, &vol)) {
		fuzz_print_findings("first check", ck);
		fprintf(stderr, "fuzz: the repaired volume does not open\n");
		abort();
	}
	if (!(after = fuzz_check(vol, &co))) {
		fuzz_print_findings("first check", ck);
		fprintf(stderr,
			"fuzz: the repaired volume cannot be checked\n");
		abort();
	}
	if (is_unconverged(ck, after)) {
		fuzz_print_findings("first check", ck);
		fuzz_print_findings("second check", after);
		fprintf(stderr, "fuzz: repair did not converge\n");
		abort();
	}
	fk_check_free(after);
out_free:
	fk_check_free(ck);
out_close:
	fk_volume_close(vol);
	return 0;
}
