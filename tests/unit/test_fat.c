/*
 * test_fat.c: FAT entries through a real volume in a temporary image.
 *
 * Each image gets a boot sector from bpb.h and FATs of pseudo-random bytes,
 * so every neighbouring nibble and every reserved FAT32 bit is non-trivial.
 * The test keeps its own model of one FAT copy, packed by an independent
 * reference of the specification's layout, applies every change to both,
 * and after fk_cache_flush() reads the image back with pread: both FAT
 * copies must equal the model byte for byte.
 */
#define _GNU_SOURCE /* fallocate(), FALLOC_FL_PUNCH_HOLE */
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpb.h"
#include "fat/fat-boot.h"
#include "io/cache.h"
#include "lib/diag.h"
#include "lib/endian.h"
#include "lib/testing.h"
#include "mount/mount.h"
#include "table/fat.h"
#include "volume/volume.h"

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))
#define SEC_LEN	 512

struct img {
	char path[4096];
	unsigned bits; /* 12, 16 or 32 */
	struct test_bpb b;
	unsigned char *fat; /* model of the copy reads come from */
	size_t fat_len;
	uint32_t ext_flags; /* FAT32 BPB_ExtFlags */
	struct fk_volume *vol;
};

static uint32_t lcg_state;

static uint32_t lcg(void)
{
	lcg_state = lcg_state * 1103515245u + 12345u;
	return lcg_state >> 8;
}

/* ---- the reference packing (FAT specification, "FAT Data Structure") ---- */

static uint32_t ref_get(const struct img *im, uint32_t clus)
{
	const unsigned char *f = im->fat;

	if (im->bits == 12) {
		size_t off = clus + clus / 2;

		if (clus & 1)
			return (uint32_t)(f[off] >> 4) | (uint32_t)f[off + 1]
								 << 4;
		return f[off] | (uint32_t)(f[off + 1] & 0x0f) << 8;
	}
	if (im->bits == 16)
		return get_le16(f + clus * 2);
	return get_le32(f + (size_t)clus * 4) & 0x0fffffff;
}

static void ref_put(struct img *im, uint32_t clus, uint32_t val)
{
	unsigned char *f = im->fat;

	if (im->bits == 12) {
		size_t off = clus + clus / 2;

		val &= 0xfff;
		if (clus & 1) {
			f[off] = (unsigned char)((f[off] & 0x0f) | (val << 4));
			f[off + 1] = (unsigned char)(val >> 4);
		} else {
			f[off] = (unsigned char)val;
			f[off + 1] = (unsigned char)((f[off + 1] & 0xf0) |
						     (val >> 8));
		}
	} else if (im->bits == 16) {
		put_le16(f + clus * 2, val & 0xffff);
	} else {
		uint32_t top = get_le32(f + (size_t)clus * 4) & 0xf0000000;

		put_le32(f + (size_t)clus * 4, top | (val & 0x0fffffff));
	}
}

/* ---- images ---------------------------------------------------------------
 */

static int write_all(int fd, const void *buf, size_t len, uint64_t off)
{
	return pwrite(fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -EIO;
}

/*
 * A @bits-wide volume of @nclus one-sector clusters in a new temporary
 * file, FAT copies filled from seed @seed (copy 1 from @seed + 1 when the
 * FATs are not mirrored), opened as a writer with @batch_len.
 */
static int img_open(struct img *im, unsigned bits, uint32_t nclus,
		    uint32_t seed, size_t batch_len, uint32_t ext_flags)
{
	struct fk_volume_opts opts;
	struct fk_diag diag = {0};
	unsigned char bs[SEC_LEN];
	const char *dir = getenv("TMPDIR");
	uint32_t f;
	size_t i;
	int fd, err;

	memset(im, 0, sizeof(*im));
	im->bits = bits;
	im->ext_flags = ext_flags;
	snprintf(im->path, sizeof(im->path), "%s/fk-unit-XXXXXX",
		 dir && *dir ? dir : "/tmp");
	if ((fd = mkstemp(im->path)) < 0)
		return -errno;
	test_bpb_layout(&im->b, bits == 32, SEC_LEN, 1, nclus, bits);
	im->fat_len = (size_t)im->b.fat_secs * SEC_LEN;
	memset(bs, 0, sizeof(bs));
	test_bpb_write(&im->b, bs);
	if (bits == 32)
		put_le16(bs + 40, ext_flags);
	err = ftruncate(fd, (off_t)(test_bpb_total(&im->b) * SEC_LEN)) ? -errno
								       : 0;
	if (!err)
		err = write_all(fd, bs, sizeof(bs), 0);
	if (!err && !(im->fat = malloc(im->fat_len)))
		err = -ENOMEM;
	for (f = 0; !err && f < im->b.nfats; f++) {
		lcg_state = seed + (ext_flags & 0x80 ? f : 0);
		for (i = 0; i < im->fat_len; i++)
			im->fat[i] = (unsigned char)lcg();
		err = write_all(
			fd, im->fat, im->fat_len,
			(uint64_t)(im->b.rsvd_secs + f * im->b.fat_secs) *
				SEC_LEN);
	}
	close(fd);
	if (err)
		return err;
	/* The model is the copy reads come from (FAT 0 unless told). */
	lcg_state = seed + (ext_flags & 0x80 ? (ext_flags & 0x0f) : 0);
	for (i = 0; i < im->fat_len; i++)
		im->fat[i] = (unsigned char)lcg();
	memset(&opts, 0, sizeof(opts));
	opts.dev.path = im->path;
	opts.dev.is_writer = 1;
	opts.batch_len = batch_len;
	return fk_volume_open(&opts, &im->vol, &diag);
}

static void img_close(struct img *im)
{
	fk_volume_close(im->vol);
	if (im->path[0])
		unlink(im->path);
	free(im->fat);
	im->vol = NULL;
	im->fat = NULL;
}

/* Does FAT copy @copy in the file equal @want (fat_len bytes)? */
static int copy_equals(const struct img *im, uint32_t copy,
		       const unsigned char *want)
{
	unsigned char *buf = malloc(im->fat_len);
	uint64_t off =
		(uint64_t)(im->b.rsvd_secs + copy * im->b.fat_secs) * SEC_LEN;
	int fd = open(im->path, O_RDONLY), is_equal = 0;

	if (buf && fd >= 0 &&
	    pread(fd, buf, im->fat_len, (off_t)off) == (ssize_t)im->fat_len)
		is_equal = !memcmp(buf, want, im->fat_len);
	if (fd >= 0)
		close(fd);
	free(buf);
	return is_equal;
}

static int copies_equal_model(const struct img *im)
{
	uint32_t f;

	for (f = 0; f < im->b.nfats; f++)
		if (!copy_equals(im, f, im->fat))
			return 0;
	return 1;
}

/* Entries 0 .. nclus + 1 whose fk_fat_get() disagrees with the model. */
static uint32_t get_mismatches(struct img *im)
{
	uint32_t clus, val, bad = 0;

	for (clus = 0; clus <= im->b.nclus + 1; clus++)
		if (fk_fat_get(im->vol, clus, &val) || val != ref_get(im, clus))
			bad++;
	return bad;
}

/* ---- single entries --------------------------------------------------------
 */

struct put_row {
	const char *edge;
	uint32_t clus;
	uint32_t val;
};

static void check_puts(struct img *im, const char *tag,
		       const struct put_row *rows, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct put_row *r = &rows[i];
		uint32_t got = 0, before = 0, after = 0, c = r->clus;
		uint32_t max = im->b.nclus + 1;
		int err = fk_fat_put(im->vol, c, r->val);

		ref_put(im, c, r->val);
		if (!err)
			err = fk_fat_get(im->vol, c, &got);
		if (!err && c > 0)
			err = fk_fat_get(im->vol, c - 1, &before);
		if (!err && c < max)
			err = fk_fat_get(im->vol, c + 1, &after);
		OK(!err && got == ref_get(im, c) &&
			   (c == 0 || before == ref_get(im, c - 1)) &&
			   (c == max || after == ref_get(im, c + 1)),
		   "%s put/get: %s (entry %u = 0x%x, got 0x%x)", tag, r->edge,
		   c, r->val, got);
	}
}

static void check_flush(struct img *im, const char *tag)
{
	int err = fk_cache_flush(im->vol->fat);

	OK(!err && !fk_cache_dirty(im->vol->fat) && copies_equal_model(im),
	   "%s: flush writes the model to every FAT copy (err %d)", tag, err);
}

static void check_range_refused(struct img *im, const char *tag)
{
	uint32_t past = im->b.nclus + 2, val = 7;

	OK(fk_fat_put(im->vol, past, 1) == FK_ECORRUPT &&
		   fk_fat_get(im->vol, past, &val) == FK_ECORRUPT && val == 7,
	   "%s: entry %u past the last is refused", tag, past);
	OK(fk_fat_fill(im->vol, past - 2, 3, 0) == FK_ECORRUPT &&
		   fk_fat_put_run(im->vol, 0xfffffff0u, 0x20, 0) == FK_ECORRUPT,
	   "%s: runs past the last entry are refused", tag);
	OK(fk_fat_fill(im->vol, 5, 0, 0) == 0, "%s: an empty run is a no-op",
	   tag);
}

/* ---- runs and chains ------------------------------------------------------
 */

#define MAX_RUNS 8

struct runs {
	struct fk_run run[MAX_RUNS];
	uint32_t n;	  /* runs reported */
	uint32_t stop_at; /* return 42 at this run (1-based); 0: never */
};

static int collect(void *arg, const struct fk_run *run)
{
	struct runs *rs = arg;

	if (rs->n < MAX_RUNS)
		rs->run[rs->n] = *run;
	rs->n++;
	return rs->stop_at && rs->n == rs->stop_at ? 42 : 0;
}

static void model_run(struct img *im, uint32_t first, uint32_t n, uint32_t next)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		ref_put(im, first + i, i + 1 < n ? first + i + 1 : next);
}

static void model_fill(struct img *im, uint32_t first, uint32_t n, uint32_t val)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		ref_put(im, first + i, val);
}

struct link {
	uint32_t clus, val;
};

/* What a walk must report. */
struct walk_want {
	uint32_t nclus; /* distinct clusters, also on a loop */
	uint32_t nruns; /* not checked for a loop */
	uint32_t last;	/* on a loop: the cluster that closes it */
	enum fk_ent_class end;
	int is_loop;
	uint32_t to; /* a loop: the cluster @last links back to */
};

struct walk_row {
	const char *edge;
	uint32_t start;
	struct link links[8];  /* set before the walk; clus 0 ends */
	struct walk_want want; /* nclus, nruns, last, end, is_loop */
	struct fk_run runs[4]; /* the first runs, when not a loop */
};

static void check_walks(struct img *im, const char *tag,
			const struct walk_row *rows, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct walk_row *r = &rows[i];
		const struct walk_want *w = &r->want;
		struct fk_chain_info info;
		struct runs rs;
		int err = 0, is_ok;
		uint32_t k;

		for (k = 0; !err && k < 8 && r->links[k].clus; k++) {
			err = fk_fat_put(im->vol, r->links[k].clus,
					 r->links[k].val);
			ref_put(im, r->links[k].clus, r->links[k].val);
		}
		memset(&rs, 0, sizeof(rs));
		if (!err)
			err = fk_chain_walk(im->vol, r->start, collect, &rs,
					    &info);
		is_ok = !err && info.nclus == w->nclus && info.end == w->end &&
			info.is_loop == w->is_loop && rs.n == info.nruns &&
			info.last == w->last &&
			(w->is_loop ? info.end_val == w->to
				    : info.nruns == w->nruns);
		for (k = 0; is_ok && !w->is_loop && k < w->nruns && k < 4; k++)
			is_ok = rs.run[k].first == r->runs[k].first &&
				rs.run[k].nclus == r->runs[k].nclus;
		OK(is_ok,
		   "%s fk_chain_walk: %s (err %d, %u clusters, %u runs, last "
		   "%u, end %d, loop %d)",
		   tag, r->edge, err, info.nclus, info.nruns, info.last,
		   (int)info.end, info.is_loop);
	}
}

/*
 * A chain of @mu clusters, then a cycle of @lam: clusters @base ..
 * @base + mu + lam - 1 in a row, the last linking back to @base + mu.
 */
struct loop_row {
	const char *edge;
	uint32_t base, mu, lam;
};

/*
 * Loops are found by the chain's distinct part: the walk reads a small
 * multiple of mu + lam links (Brent's method; 6 covers finding the cycle
 * and then where it starts), never the volume's cluster count, and names
 * the cluster that closes the loop and where it links back to.
 */
static void check_loops(struct img *im, const char *tag,
			const struct loop_row *rows, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct loop_row *r = &rows[i];
		uint32_t len = r->mu + r->lam;
		struct fk_chain_info info;
		struct runs rs;
		int err;

		memset(&rs, 0, sizeof(rs));
		err = fk_fat_put_run(im->vol, r->base, len, r->base + r->mu);
		model_run(im, r->base, len, r->base + r->mu);
		if (!err)
			err = fk_chain_walk(im->vol, r->base, collect, &rs,
					    &info);
		OK(!err && info.is_loop && info.nclus == len &&
			   info.last == r->base + len - 1 &&
			   info.end_val == r->base + r->mu &&
			   info.nlinks <= 6 * len + 2 && rs.n == info.nruns &&
			   info.nruns <= info.nlinks,
		   "%s fk_chain_walk loop: %s (err %d, %u clusters, last %u -> "
		   "%u, %u links read)",
		   tag, r->edge, err, info.nclus, info.last, info.end_val,
		   info.nlinks);
		err = fk_fat_fill(im->vol, r->base, len, 0);
		model_fill(im, r->base, len, 0);
		OK(!err, "%s: loop row %s cleared", tag, r->edge);
	}
}

static const struct loop_row fat32_loops[] = {
	{"a self-loop at the start", 10000, 0, 1},
	{"a self-loop after one cluster", 10000, 1, 1},
	{"a self-loop at the end of a long tail", 10000, 70000, 1},
	{"a loop of 2 at the start", 10000, 0, 2},
	{"a loop of 3 in the middle", 10000, 5, 3},
	{"a loop back to the start of 1000", 10000, 0, 1000},
	{"a loop of 1000 after 1000", 10000, 1000, 1000},
	{"a loop of 1025 after 1023 (powers of two)", 10000, 1023, 1025},
	{"the last cluster back to the first, 200000 long", 20000, 0, 200000},
	{"a loop of 2 at the end of 150000", 20000, 149998, 2},
};

/* ---- scans ------------------------------------------------------------------
 */

struct scan_check {
	struct img *im;
	uint32_t next; /* the entry the next block must start at */
	uint32_t blocks;
	uint32_t mismatches; /* against fk_fat_get() */
	int stop;	     /* return this from the first block */
};

static int scan_block(void *arg, uint32_t first, const uint32_t *vals,
		      uint32_t n)
{
	struct scan_check *sc = arg;
	uint32_t i, val;

	if (first != sc->next)
		sc->mismatches++;
	for (i = 0; i < n; i++)
		if (fk_fat_get(sc->im->vol, first + i, &val) || val != vals[i])
			sc->mismatches++;
	sc->next = first + n;
	sc->blocks++;
	return sc->stop;
}

static void check_scan(struct img *im, const char *tag)
{
	struct scan_check sc;
	uint32_t copy;
	int err;

	for (copy = 0; copy < im->b.nfats; copy++) {
		memset(&sc, 0, sizeof(sc));
		sc.im = im;
		err = fk_fat_scan(im->vol, copy, scan_block, &sc);
		OK(!err && !sc.mismatches && sc.next == im->b.nclus + 2,
		   "%s fk_fat_scan: copy %u equals per-entry gets (err %d, %u "
		   "blocks, %u mismatches, ended at %u)",
		   tag, copy, err, sc.blocks, sc.mismatches, sc.next);
	}
	memset(&sc, 0, sizeof(sc));
	sc.im = im;
	sc.stop = 42;
	OK(fk_fat_scan(im->vol, 0, scan_block, &sc) == 42 && sc.blocks == 1,
	   "%s fk_fat_scan: a non-zero return stops the scan", tag);
}

/* Clusters whose bit in a fk_fat_scan_free() map disagrees with the model. */
static uint32_t free_map_mismatches(struct img *im, uint32_t *nfree)
{
	uint32_t total = im->b.nclus + 2, clus, bad = 0, want = 0;
	uint64_t *map = calloc((total + 63) / 64 + 1, sizeof(*map));

	if (!map || fk_fat_scan_free(im->vol, im->vol->g.active_fat, map, nfree,
				     NULL)) {
		free(map);
		return UINT32_MAX;
	}
	for (clus = 0; clus < total; clus++) {
		int is_free = clus >= 2 && ref_get(im, clus) == 0;

		want += (uint32_t)is_free;
		bad += (uint32_t)(is_free !=
				  (int)(map[clus / 64] >> (clus % 64) & 1));
	}
	free(map);
	return bad + (*nfree != want);
}

/*
 * fk_fat_scan_free() against the model, then again after holes are
 * punched into the FAT it reads (sparse images are scanned by asking the
 * host where data lies): a hole at the start, one of a few sectors, one
 * not on a 4 KiB boundary, and one that runs to the last entry.
 */
static void check_scan_free(struct img *im, const char *tag)
{
	uint64_t fat0 = (uint64_t)(im->b.rsvd_secs +
				   im->vol->g.active_fat * im->b.fat_secs) *
			SEC_LEN;
	size_t end = im->bits == 32 ? (size_t)(im->b.nclus + 2) * 4
				    : (size_t)(im->b.nclus + 2) * 2;
	const size_t holes[][2] = {{0, 8192},
				   {3 * 4096, 3 * 4096},
				   {10 * 4096 + 512, 4096 + 1024},
				   {end - end / 3, end / 3}};
	uint32_t nfree = 0, bad;
	size_t i;
	int fd, err = 0;

	bad = free_map_mismatches(im, &nfree);
	OK(bad == 0,
	   "%s fk_fat_scan_free: the map and count match the model "
	   "(%u free, %u mismatches)",
	   tag, nfree, bad);
	if ((fd = open(im->path, O_RDWR)) < 0)
		err = -errno;
	for (i = 0; !err && i < NROWS(holes); i++) {
		size_t from = holes[i][0], len = holes[i][1];

		if (from >= end) /* a small FAT */
			continue;
		if (from + len > end)
			len = end - from;
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)(fat0 + from), (off_t)len))
			err = -errno;
		memset(im->fat + from, 0, len);
	}
	if (fd >= 0)
		close(fd);
	bad = free_map_mismatches(im, &nfree);
	OK(!err && bad == 0,
	   "%s fk_fat_scan_free: holes punched in the FAT read as free "
	   "(err %d, %u free, %u mismatches)",
	   tag, err, nfree, bad);
}

/* ---- entry classes ----------------------------------------------------------
 */

struct class_row {
	const char *edge;
	uint32_t val;
	enum fk_ent_class cls;
};

/* ---- chain links in batches ---------------------------------------------- */

/* Starts whose fk_fat_get_links() differs from entry-by-entry reads. */
static uint32_t links_mismatches(struct img *im, uint32_t max, uint32_t step)
{
	uint32_t vals[64], clus, bad = 0, i;
	int n;

	for (clus = 0; clus <= im->b.nclus + 1; clus += step) {
		n = fk_fat_get_links(im->vol, clus, vals, max);
		if (n < 1 || (uint32_t)n > max ||
		    vals[0] != ref_get(im, clus)) {
			bad++;
			continue;
		}
		for (i = 1; i < (uint32_t)n; i++)
			if (vals[i - 1] < 2 || vals[i - 1] > im->b.nclus + 1 ||
			    vals[i] != ref_get(im, vals[i - 1]))
				break;
		bad += i != (uint32_t)n;
	}
	return bad;
}

static void check_links(struct img *im, const char *tag, uint32_t step)
{
	uint32_t vals[64], per = SEC_LEN * 8 / (im->bits == 32 ? 32 : 16);
	uint32_t first = 4 * per, i, ok;
	int n, err;

	OK(links_mismatches(im, 1, step) == 0 &&
		   links_mismatches(im, 2, step) == 0 &&
		   links_mismatches(im, 64, step) == 0,
	   "%s fk_fat_get_links: every start (step %u), at most 1, 2 and 64 "
	   "values, each the entry of the link before",
	   tag, step);
	n = fk_fat_get_links(im->vol, im->b.nclus + 2, vals, 64);
	OK(n == FK_ECORRUPT,
	   "%s fk_fat_get_links: past the last cluster is "
	   "FK_ECORRUPT (%d)",
	   tag, n);
	/* A contiguous chain from a sector's start: while sectors are dirty
	 * one lookup serves the links that sector holds. */
	err = fk_fat_put_run(im->vol, first, per + 10, fk_fat_eoc(&im->vol->g));
	model_run(im, first, per + 10, fk_fat_eoc(&im->vol->g));
	n = err ? err : fk_fat_get_links(im->vol, first, vals, 64);
	for (ok = n > 0, i = 0; ok && i < (uint32_t)n; i++)
		ok = vals[i] == first + i + 1;
	OK(ok && n == 64,
	   "%s fk_fat_get_links: a contiguous run gives %d links a lookup", tag,
	   n);
	n = fk_fat_get_links(im->vol, first + per + 9 - 2, vals, 64);
	OK(n == 3 && vals[n - 1] == fk_fat_eoc(&im->vol->g),
	   "%s fk_fat_get_links: stops after the end-of-chain value (%d)", tag,
	   n);
	if (im->bits != 12) {
		n = fk_fat_get_links(im->vol, first + per - 3, vals, 64);
		OK(n == 3 && vals[2] == first + per,
		   "%s fk_fat_get_links: with dirty sectors, stops where the "
		   "next entry lies in the next sector (%d)",
		   tag, n);
	}
	/* Nothing dirty: the lookup serves a span of many sectors. */
	err = fk_cache_flush(im->vol->fat);
	n = err ? err : fk_fat_get_links(im->vol, first + per - 3, vals, 64);
	OK(n == 13 && vals[11] == first + per + 9 &&
		   vals[12] == fk_fat_eoc(&im->vol->g),
	   "%s fk_fat_get_links: with nothing dirty, goes on across sectors "
	   "(%d)",
	   tag, n);
}

/* ---- scanning the copies together ----------------------------------------- */

struct copies_check {
	struct img *im;
	uint32_t next, mismatches, zero_blocks, ndiffs, diff_copy, diff_sec;
};

static int copies_fn(void *arg, uint32_t first, const uint32_t *vals,
		     uint32_t n)
{
	struct copies_check *cc = arg;
	uint32_t i;

	if (first != cc->next)
		cc->mismatches++;
	cc->zero_blocks += !vals;
	for (i = 0; i < n; i++)
		if ((vals ? vals[i] : 0) != ref_get(cc->im, first + i))
			cc->mismatches++;
	cc->next = first + n;
	return 0;
}

static int copies_diff(void *arg, uint32_t copy, uint32_t sec)
{
	struct copies_check *cc = arg;

	if (!cc->ndiffs++) {
		cc->diff_copy = copy;
		cc->diff_sec = sec;
	}
	return 0;
}

/* Flip a byte of copy @copy at byte @off of it in the image file. */
static int flip_byte(const struct img *im, uint32_t copy, uint64_t off)
{
	uint64_t at =
		(uint64_t)(im->b.rsvd_secs + copy * im->b.fat_secs) * SEC_LEN +
		off;
	unsigned char c;
	int fd = open(im->path, O_RDWR), err = 0;

	if (fd < 0)
		return -errno;
	if (pread(fd, &c, 1, (off_t)at) != 1)
		err = -EIO;
	c ^= 0x5a;
	if (!err && pwrite(fd, &c, 1, (off_t)at) != 1)
		err = -EIO;
	close(fd);
	return err;
}

/* Zero @len bytes from byte @off of every copy and of the model. */
static int zero_bytes(struct img *im, size_t off, size_t len)
{
	unsigned char *zero = calloc(1, len);
	int fd = open(im->path, O_RDWR), err = zero && fd >= 0 ? 0 : -ENOMEM;
	uint32_t f;

	for (f = 0; !err && f < im->b.nfats; f++)
		err = write_all(
			fd, zero, len,
			(uint64_t)(im->b.rsvd_secs + f * im->b.fat_secs) *
					SEC_LEN +
				off);
	if (fd >= 0)
		close(fd);
	free(zero);
	memset(im->fat + off, 0, len);
	return err;
}

/* fk_fat_scan_copies() over a FAT with a long free stretch: the same
 * values as entry-by-entry reads (NULL for all-zero pieces), and a
 * differing byte of copy 2 reported as its sector. */
static void check_scan_copies(struct img *im, const char *tag)
{
	struct copies_check cc;
	uint32_t want_sec = im->b.fat_secs / 2;
	int err;

	err = fk_fat_fill(im->vol, 2, im->b.nclus * 3 / 4, 0);
	model_fill(im, 2, im->b.nclus * 3 / 4, 0);
	if (!err)
		err = fk_cache_flush(im->vol->fat);
	/* FAT32 fills keep the reserved top bits: zero some whole bytes
	 * (behind the cache, which later checks here do not use). */
	if (!err && im->bits == 32)
		err = zero_bytes(im, 20000 * 4, 40000 * 4);
	memset(&cc, 0, sizeof(cc));
	cc.im = im;
	if (!err)
		err = fk_fat_scan_copies(im->vol, 0, copies_fn, copies_diff,
					 &cc);
	OK(!err && !cc.mismatches && cc.next == im->b.nclus + 2 &&
		   (cc.zero_blocks > 0 || im->b.nclus < 65536) && !cc.ndiffs,
	   "%s fk_fat_scan_copies: every entry as read one by one, %u "
	   "all-zero pieces passed as NULL, equal copies (err %d, %u "
	   "mismatches, %u diffs)",
	   tag, cc.zero_blocks, err, cc.mismatches, cc.ndiffs);
	err = flip_byte(im, 1, (uint64_t)want_sec * SEC_LEN + 7);
	memset(&cc, 0, sizeof(cc));
	cc.im = im;
	if (!err)
		err = fk_fat_scan_copies(im->vol, 0, copies_fn, copies_diff,
					 &cc);
	OK(!err && !cc.mismatches && cc.ndiffs == 1 && cc.diff_copy == 1 &&
		   cc.diff_sec == want_sec,
	   "%s fk_fat_scan_copies: one byte of copy 2 in a zero stretch is "
	   "one differing sector, %u (got %u diffs, copy %u, sector %u)",
	   tag, want_sec, cc.ndiffs, cc.diff_copy, cc.diff_sec);
	if (!err)
		err = flip_byte(im, 1, (uint64_t)want_sec * SEC_LEN + 7);
	OK(!err, "%s: copy 2 restored", tag);
}

/*
 * fk_fat_judge_mirror(): a byte of copy 2 that differs in a sector a span
 * reaches is refused, naming that sector; one elsewhere is not; a FAT12
 * entry across a sector boundary reaches both sectors.  With @is_fresh,
 * a span of free clusters over zeroed sectors (check_scan_copies() zeroed
 * them) is judged without reading copy 1 there.
 */
static void check_judge_mirror(struct img *im, const char *tag, int is_fresh)
{
	uint32_t per = SEC_LEN * 8 / im->bits;
	struct fk_fat_span in = {3 * per, per, is_fresh};
	struct fk_fat_span out = {6 * per, 4, 0};
	struct fk_fat_span across = {341, 1, 0}, before = {340, 1, 0};
	struct fk_diag diag;
	char want[128];
	int e0, e1, e2, e3 = 0, e4 = 0, err;

	memset(&diag, 0, sizeof(diag));
	e0 = fk_fat_judge_mirror(im->vol, &in, 1, is_fresh, NULL);
	err = flip_byte(im, 1, 3 * SEC_LEN + 100);
	e1 = fk_fat_judge_mirror(im->vol, &in, 1, is_fresh, &diag);
	e2 = fk_fat_judge_mirror(im->vol, &out, 1, is_fresh, NULL);
	if (!err)
		err = flip_byte(im, 1, 3 * SEC_LEN + 100);
	snprintf(want, sizeof(want),
		 "FAT copies 1 and 2 differ in sector 3 (of the FAT), which "
		 "this run would write");
	OK(!err && !e0 && e1 == FK_ECORRUPT && !strcmp(diag.reason, want) &&
		   !e2,
	   "%s fk_fat_judge_mirror: equal copies pass, a byte of copy 2 in "
	   "a sector the span writes is refused, one elsewhere is not (%d "
	   "%d %d, \"%s\")",
	   tag, e0, e1, e2, diag.reason);
	if (im->bits != 12)
		return;
	err = flip_byte(im, 1, SEC_LEN + 0);
	if (!err) {
		e3 = fk_fat_judge_mirror(im->vol, &across, 1, 0, NULL);
		e4 = fk_fat_judge_mirror(im->vol, &before, 1, 0, NULL);
		err = flip_byte(im, 1, SEC_LEN + 0);
	}
	OK(!err && e3 == FK_ECORRUPT && !e4,
	   "%s fk_fat_judge_mirror: entry 341 across the sector boundary "
	   "reaches sector 1, entry 340 does not (%d %d)",
	   tag, e3, e4);
}

static void check_classes(const struct img *im, const char *tag,
			  const struct class_row *rows, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		OK(fk_fat_class(&im->vol->g, rows[i].val) == rows[i].cls,
		   "%s fk_fat_class: %s (0x%x -> %d)", tag, rows[i].edge,
		   rows[i].val, (int)fk_fat_class(&im->vol->g, rows[i].val));
}

/* ---- FAT12: 4084 clusters, the most FAT12 allows ------------------------- */

static const struct put_row fat12_puts[] = {
	{"even entry 340 (bytes 510-511)", 340, 0x123},
	{"odd entry 341 across the sector boundary (bytes 511-512)", 341,
	 0xabc},
	{"even entry 342 after the boundary", 342, 0x456},
	{"odd entry 343", 343, 0x789},
	{"even entry 682 across the second boundary (bytes 1023-1024)", 682,
	 0xdef},
	{"odd entry 683 after it", 683, 0x001},
	{"odd entry 681 before it", 681, 0xffe},
	{"entry 2, next to the reserved ones", 2, 0xff8},
	{"last entry 4085", 4085, 0xfff},
	{"a value wider than 12 bits is cut", 100, 0x1f00d},
	{"free again", 341, 0},
	{"end of chain", 341, 0xfff},
	{"bad mark", 342, 0xff7},
};

static const struct walk_row fat12_walks[] = {
	{"three fragments, one across the sector boundary",
	 100,
	 {{100, 101},
	  {101, 102},
	  {102, 200},
	  {200, 201},
	  {201, 340},
	  {340, 341},
	  {341, 342},
	  {342, 0xfff}},
	 {8, 3, 342, FK_ENT_EOC, 0, 0},
	 {{100, 3}, {200, 2}, {340, 3}}},
	{"one cluster",
	 400,
	 {{400, 0xff8}},
	 {1, 1, 400, FK_ENT_EOC, 0, 0},
	 {{400, 1}}},
	{"loop back to the start",
	 410,
	 {{410, 411}, {411, 412}, {412, 410}},
	 {3, 0, 412, FK_ENT_NEXT, 1, 410},
	 {{0, 0}}},
	{"cluster linked to itself",
	 420,
	 {{420, 420}},
	 {1, 0, 420, FK_ENT_NEXT, 1, 420},
	 {{0, 0}}},
	{"ends in a free entry",
	 430,
	 {{430, 431}, {431, 0}},
	 {2, 1, 431, FK_ENT_FREE, 0, 0},
	 {{430, 2}}},
	{"ends in a bad mark",
	 440,
	 {{440, 0xff7}},
	 {1, 1, 440, FK_ENT_BAD, 0, 0},
	 {{440, 1}}},
	{"ends in a reserved value",
	 445,
	 {{445, 0xff6}},
	 {1, 1, 445, FK_ENT_RESERVED, 0, 0},
	 {{445, 1}}},
	{"ends in a link to cluster 1",
	 446,
	 {{446, 1}},
	 {1, 1, 446, FK_ENT_RESERVED, 0, 0},
	 {{446, 1}}},
	{"through clusters 0xFF0-0xFF5, the top of a full FAT12",
	 0xff0,
	 {{0xff0, 0xff1}, {0xff1, 0xff5}, {0xff5, 0xfff}},
	 {3, 2, 0xff5, FK_ENT_EOC, 0, 0},
	 {{0xff0, 2}, {0xff5, 1}}},
	{"start 0 is an empty file",
	 0,
	 {{0, 0}},
	 {0, 0, 0, FK_ENT_FREE, 0, 0},
	 {{0, 0}}},
	{"start 1 is reserved",
	 1,
	 {{0, 0}},
	 {0, 0, 0, FK_ENT_RESERVED, 0, 0},
	 {{0, 0}}},
	{"start at an end-of-chain mark is no chain",
	 0xff8,
	 {{0, 0}},
	 {0, 0, 0, FK_ENT_RANGE, 0, 0},
	 {{0, 0}}},
};

static const struct class_row fat12_classes[] = {
	{"free", 0, FK_ENT_FREE},
	{"cluster 1 is reserved", 1, FK_ENT_RESERVED},
	{"first data cluster", 2, FK_ENT_NEXT},
	{"0xFEF", 0xfef, FK_ENT_NEXT},
	{"0xFF0 is a data cluster of a 4084-cluster FAT12", 0xff0, FK_ENT_NEXT},
	{"0xFF5, the last data cluster", 0xff5, FK_ENT_NEXT},
	{"0xFF6 is reserved", 0xff6, FK_ENT_RESERVED},
	{"0xFF7 is bad", 0xff7, FK_ENT_BAD},
	{"0xFF8 ends a chain", 0xff8, FK_ENT_EOC},
	{"0xFFF ends a chain", 0xfff, FK_ENT_EOC},
};

static void suite_fat12(void)
{
	struct img im;
	struct fk_chain_info info;
	struct runs rs;
	int err;

	if ((err = img_open(&im, 12, 4084, 12, 4096, 0))) {
		OK(0, "FAT12: open a 4084-cluster image (err %d)", err);
		img_close(&im);
		return;
	}
	OK(im.vol->g.ent_bits == FK_FAT12 && im.vol->g.nclus == 4084,
	   "FAT12: the image is FAT12 with 4084 clusters");
	OK(fk_fat_eoc(&im.vol->g) == 0xfff && fk_fat_bad(&im.vol->g) == 0xff7,
	   "FAT12: EOC 0xFFF, bad 0xFF7");
	check_classes(&im, "FAT12", fat12_classes, NROWS(fat12_classes));
	OK(get_mismatches(&im) == 0,
	   "FAT12: every entry reads as the specification packs it");
	check_puts(&im, "FAT12", fat12_puts, NROWS(fat12_puts));
	check_range_refused(&im, "FAT12");
	check_flush(&im, "FAT12");

	err = fk_fat_put_run(im.vol, 330, 30, 0xfff);
	model_run(&im, 330, 30, 0xfff);
	memset(&rs, 0, sizeof(rs));
	if (!err)
		err = fk_chain_walk(im.vol, 330, collect, &rs, &info);
	OK(!err && info.nclus == 30 && info.nruns == 1 && rs.n == 1 &&
		   rs.run[0].first == 330 && rs.run[0].nclus == 30 &&
		   info.end == FK_ENT_EOC && get_mismatches(&im) == 0,
	   "FAT12 fk_fat_put_run: 30 clusters across the sector boundary");
	err = fk_fat_fill(im.vol, 670, 20, 0);
	model_fill(&im, 670, 20, 0);
	OK(!err && get_mismatches(&im) == 0,
	   "FAT12 fk_fat_fill: 20 entries across the second boundary");
	check_walks(&im, "FAT12", fat12_walks, NROWS(fat12_walks));
	memset(&rs, 0, sizeof(rs));
	rs.stop_at = 2;
	OK(fk_chain_walk(im.vol, 100, collect, &rs, &info) == 42 && rs.n == 2,
	   "FAT12 fk_chain_walk: a non-zero return from the callback stops "
	   "the walk");
	check_flush(&im, "FAT12");
	check_scan(&im, "FAT12");
	check_links(&im, "FAT12", 1);
	check_judge_mirror(&im, "FAT12", 0);
	img_close(&im);
}

/* ---- FAT16 ------------------------------------------------------------------
 */

static const struct put_row fat16_puts[] = {
	{"last entry of sector 0", 255, 0x1234},
	{"first entry of sector 1", 256, 0xfff8},
	{"entry 257", 257, 0},
	{"last entry 5001", 5001, 0xffff},
	{"bad mark", 3000, 0xfff7},
};

static const struct walk_row fat16_walks[] = {
	{"two fragments across a sector boundary",
	 254,
	 {{254, 255}, {255, 256}, {256, 300}, {300, 0xffff}},
	 {4, 2, 300, FK_ENT_EOC, 0, 0},
	 {{254, 3}, {300, 1}}},
	{"ends in an out-of-range link",
	 700,
	 {{700, 6000}},
	 {1, 1, 700, FK_ENT_RANGE, 0, 0},
	 {{700, 1}}},
	{"ends in a link just past the last cluster",
	 710,
	 {{710, 5002}},
	 {1, 1, 710, FK_ENT_RANGE, 0, 0},
	 {{710, 1}}},
	{"start out of range",
	 6000,
	 {{0, 0}},
	 {0, 0, 0, FK_ENT_RANGE, 0, 0},
	 {{0, 0}}},
	{"a long loop",
	 799,
	 {{800, 801}, {801, 802}, {802, 799}, {799, 800}},
	 {4, 0, 802, FK_ENT_NEXT, 1, 799},
	 {{0, 0}}},
	{"start at an end-of-chain mark is no chain",
	 0xffff,
	 {{0, 0}},
	 {0, 0, 0, FK_ENT_RANGE, 0, 0},
	 {{0, 0}}},
};

static const struct class_row fat16_classes[] = {
	{"last data cluster", 5001, FK_ENT_NEXT},
	{"just past the last", 5002, FK_ENT_RANGE},
	{"0xFFEF is out of range", 0xffef, FK_ENT_RANGE},
	{"0xFFF0 is reserved", 0xfff0, FK_ENT_RESERVED},
	{"0xFFF6 is reserved", 0xfff6, FK_ENT_RESERVED},
	{"0xFFF7 is bad", 0xfff7, FK_ENT_BAD},
	{"0xFFF8 ends a chain", 0xfff8, FK_ENT_EOC},
};

static void suite_fat16(void)
{
	struct img im;
	int err;

	if ((err = img_open(&im, 16, 5000, 16, 4096, 0))) {
		OK(0, "FAT16: open a 5000-cluster image (err %d)", err);
		img_close(&im);
		return;
	}
	OK(im.vol->g.ent_bits == FK_FAT16 && fk_fat_eoc(&im.vol->g) == 0xffff &&
		   fk_fat_bad(&im.vol->g) == 0xfff7,
	   "FAT16: the image is FAT16; EOC 0xFFFF, bad 0xFFF7");
	check_classes(&im, "FAT16", fat16_classes, NROWS(fat16_classes));
	OK(get_mismatches(&im) == 0, "FAT16: every entry reads as stored");
	check_puts(&im, "FAT16", fat16_puts, NROWS(fat16_puts));
	check_range_refused(&im, "FAT16");
	err = fk_fat_put_run(im.vol, 250, 20, 0xffff);
	model_run(&im, 250, 20, 0xffff);
	OK(!err && get_mismatches(&im) == 0,
	   "FAT16 fk_fat_put_run: 20 clusters across a sector boundary");
	err = fk_fat_fill(im.vol, 500, 600, 0);
	model_fill(&im, 500, 600, 0);
	OK(!err && get_mismatches(&im) == 0,
	   "FAT16 fk_fat_fill: 600 entries over three sectors");
	check_walks(&im, "FAT16", fat16_walks, NROWS(fat16_walks));
	check_flush(&im, "FAT16");
	check_scan(&im, "FAT16");
	check_links(&im, "FAT16", 1);
	check_scan_copies(&im, "FAT16");
	check_judge_mirror(&im, "FAT16", 1);
	check_scan_free(&im, "FAT16");
	img_close(&im);
}

/* ---- FAT32: a FAT larger than the cache's clean budget ------------------- */

static const struct put_row fat32_puts[] = {
	{"top 4 bits are kept", 1000, 0x0ffffff8},
	{"top 4 bits of the value are dropped", 1001, 0xffffffff},
	{"last entry of sector 0", 127, 0x00012345},
	{"first entry of sector 1", 128, 0},
	{"last entry 300001", 300001, 0x0fffffff},
};

static const struct walk_row fat32_walks[] = {
	{"links above 16 bits",
	 70000,
	 {{70000, 200000}, {200000, 0x0ffffff8}},
	 {2, 2, 200000, FK_ENT_EOC, 0, 0},
	 {{70000, 1}, {200000, 1}}},
	{"link just past the last cluster",
	 70010,
	 {{70010, 300002}},
	 {1, 1, 70010, FK_ENT_RANGE, 0, 0},
	 {{70010, 1}}},
	{"start at an end-of-chain mark is no chain",
	 0x0ffffff8,
	 {{0, 0}},
	 {0, 0, 0, FK_ENT_RANGE, 0, 0},
	 {{0, 0}}},
	{"start at a bad mark",
	 0x0ffffff7,
	 {{0, 0}},
	 {0, 0, 0, FK_ENT_BAD, 0, 0},
	 {{0, 0}}},
};

static const struct class_row fat32_classes[] = {
	{"last data cluster", 300001, FK_ENT_NEXT},
	{"just past the last", 300002, FK_ENT_RANGE},
	{"0x0FFFFFF6 is reserved", 0x0ffffff6, FK_ENT_RESERVED},
	{"0x0FFFFFF7 is bad", 0x0ffffff7, FK_ENT_BAD},
	{"0x0FFFFFF8 ends a chain", 0x0ffffff8, FK_ENT_EOC},
};

/* Entries in an order that defeats read-ahead: every cache path runs. */
static uint32_t random_mismatches(struct img *im, uint32_t n)
{
	uint32_t i, clus, val, bad = 0;

	lcg_state = 32;
	for (i = 0; i < n; i++) {
		clus = lcg() % (im->b.nclus + 2);
		if (fk_fat_get(im->vol, clus, &val) || val != ref_get(im, clus))
			bad++;
	}
	return bad;
}

static void suite_fat32(void)
{
	struct img im;
	uint32_t val = 0;
	int err;

	if ((err = img_open(&im, 32, 300000, 32, 4096, 0))) {
		OK(0, "FAT32: open a 300000-cluster image (err %d)", err);
		img_close(&im);
		return;
	}
	OK(im.vol->g.ent_bits == FK_FAT32 &&
		   fk_fat_eoc(&im.vol->g) == 0x0fffffff &&
		   fk_fat_bad(&im.vol->g) == 0x0ffffff7,
	   "FAT32: the image is FAT32; EOC 0x0FFFFFFF, bad 0x0FFFFFF7");
	check_classes(&im, "FAT32", fat32_classes, NROWS(fat32_classes));
	OK(get_mismatches(&im) == 0,
	   "FAT32: every entry reads as its low 28 bits (FAT of %u sectors "
	   "through a 1 MiB cache)",
	   im.b.fat_secs);
	OK(random_mismatches(&im, 100000) == 0,
	   "FAT32: 100000 entries in random order read right");
	check_puts(&im, "FAT32", fat32_puts, NROWS(fat32_puts));
	check_range_refused(&im, "FAT32");
	err = fk_fat_put_run(im.vol, 120, 20, 0x0fffffff);
	model_run(&im, 120, 20, 0x0fffffff);
	OK(!err && get_mismatches(&im) == 0,
	   "FAT32 fk_fat_put_run: across a sector boundary, top bits kept");
	err = fk_fat_fill(im.vol, 2000, 500, 0);
	model_fill(&im, 2000, 500, 0);
	OK(!err && get_mismatches(&im) == 0,
	   "FAT32 fk_fat_fill: 500 entries freed, top bits kept");
	err = fk_fat_fill(im.vol, 3000, 10, 0xffffffff);
	model_fill(&im, 3000, 10, 0xffffffff);
	if (!err)
		err = fk_cache_flush(im.vol->fat);
	OK(!err && !fk_fat_get(im.vol, 3005, &val) && val == 0x0fffffff &&
		   copies_equal_model(&im),
	   "FAT32 fk_fat_fill: a value wider than 28 bits keeps the top bits "
	   "(as fk_fat_put does)");
	check_walks(&im, "FAT32", fat32_walks, NROWS(fat32_walks));
	check_loops(&im, "FAT32", fat32_loops, NROWS(fat32_loops));
	check_flush(&im, "FAT32");
	check_scan(&im, "FAT32");
	check_links(&im, "FAT32", 7);
	check_scan_copies(&im, "FAT32");
	check_judge_mirror(&im, "FAT32", 0);
	check_scan_free(&im, "FAT32");
	img_close(&im);
}

/* FAT32 with mirroring off: reads and writes touch the active copy only. */
static void suite_fat32_unmirrored(void)
{
	struct img im;
	unsigned char *copy0;
	int err;

	if ((err = img_open(&im, 32, 65525, 320, 4096, 0x81))) {
		OK(0, "FAT32 unmirrored: open (err %d)", err);
		img_close(&im);
		return;
	}
	copy0 = malloc(im.fat_len);
	lcg_state = 320;
	for (size_t i = 0; copy0 && i < im.fat_len; i++)
		copy0[i] = (unsigned char)lcg();
	OK(!im.vol->g.is_mirrored && im.vol->g.active_fat == 1 &&
		   get_mismatches(&im) == 0,
	   "FAT32 unmirrored: entries are read from the active FAT 1");
	err = fk_fat_put_run(im.vol, 500, 300, 0x0fffffff);
	model_run(&im, 500, 300, 0x0fffffff);
	if (!err)
		err = fk_cache_flush(im.vol->fat);
	OK(!err && copy0 && copy_equals(&im, 1, im.fat) &&
		   copy_equals(&im, 0, copy0),
	   "FAT32 unmirrored: a flush writes FAT 1 and leaves FAT 0 alone");
	free(copy0);
	img_close(&im);
}

/* ---- the cache's dirty budget ----------------------------------------------
 */

static void suite_cache(void)
{
	const struct fk_cache_stats *st;
	const unsigned char *data;
	struct img im;
	uint32_t i, val = 0;
	size_t max_dirty = 0;
	int err = 0;

	/* 4 dirty sectors allowed; a fill of 20 sectors must flush early. */
	if ((err = img_open(&im, 16, 5000, 160, 4 * SEC_LEN, 0))) {
		OK(0, "cache: open (err %d)", err);
		img_close(&im);
		return;
	}
	for (i = 0; !err && i < im.b.fat_secs; i++) {
		uint32_t first = i * 256, n = im.b.nclus + 2 - first;

		n = n < 256 ? n : 256;
		err = fk_fat_fill(im.vol, first, n, 0x4000 + i);
		model_fill(&im, first, n, 0x4000 + i);
		if (fk_cache_dirty(im.vol->fat) > max_dirty)
			max_dirty = fk_cache_dirty(im.vol->fat);
	}
	st = fk_cache_stats(im.vol->fat);
	OK(!err && st->flushes > 1 && max_dirty <= 4,
	   "cache: a 4-sector budget flushes while %u sectors are filled "
	   "(%llu flushes, at most %zu dirty)",
	   im.b.fat_secs, (unsigned long long)st->flushes, max_dirty);
	OK(get_mismatches(&im) == 0,
	   "cache: entries read right across intermediate flushes");
	check_flush(&im, "cache, 4-sector budget");
	OK(st->secs_written == 2ull * im.b.fat_secs,
	   "cache: each dirty sector went once to each copy (%llu written)",
	   (unsigned long long)st->secs_written);

	err = fk_fat_put(im.vol, 3000, 0x1111);
	fk_cache_discard(im.vol->fat);
	OK(!err && !fk_cache_dirty(im.vol->fat) &&
		   !fk_fat_get(im.vol, 3000, &val) &&
		   val == ref_get(&im, 3000) && copies_equal_model(&im),
	   "cache: a discarded change is forgotten and never written");
	OK(fk_cache_get(im.vol->fat, im.b.fat_secs, &data) == FK_ECORRUPT,
	   "cache: a sector past the FAT is refused");
	img_close(&im);

	/* Budget 0 still allows one sector: a split entry flushes midway. */
	if ((err = img_open(&im, 12, 4084, 120, 0, 0))) {
		OK(0, "cache: open FAT12 (err %d)", err);
		img_close(&im);
		return;
	}
	err = fk_fat_put(im.vol, 341, 0xa5a);
	ref_put(&im, 341, 0xa5a);
	for (i = 0; !err && i < 50; i++) {
		uint32_t clus = i & 1 ? 100 + i : 2000 + i;

		err = fk_fat_put(im.vol, clus, i);
		ref_put(&im, clus, i);
	}
	st = fk_cache_stats(im.vol->fat);
	OK(!err && st->flushes > 1 && fk_cache_dirty(im.vol->fat) <= 1 &&
		   get_mismatches(&im) == 0,
	   "cache: a one-sector budget flushes on every other sector (%llu "
	   "flushes)",
	   (unsigned long long)st->flushes);
	check_flush(&im, "cache, one-sector budget");
	img_close(&im);
}

void suite_fat(void)
{
	suite_fat12();
	suite_fat16();
	suite_fat32();
	suite_fat32_unmirrored();
	suite_cache();
}
