/*
 * check-exfat-bitmap.c: the exFAT checker's allocation bitmap compared
 * with the ownership map both ways, and brought to it by the repair.
 */
#include "exfat/check-exfat-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat-layout.h"
#include "exfat/exfat.h"
#include "io/device.h"
#include "table/fat.h"
#include "volume/volume.h"

/*
 * One pass over the on-disk bitmap, a chunk at a time (never all of it in
 * memory: with the ownership map that would be a third bit per cluster):
 * PASS_COMPARE counts the differences; PASS_SET writes the sectors where
 * an owned cluster lacks its bit; PASS_CLEAR makes every sector the
 * ownership map.  Bits past ClusterCount in the last byte are ignored and
 * written as 0.
 */

struct bm_walk {
	struct fk_exfat_check *x;
	enum bm_pass pass;
	uint64_t done;	    /* bitmap bytes behind the runs walked */
	unsigned char *buf; /* BM_CHUNK bytes, when a chunk is read */
	uint32_t nmiss, nleak, first_miss, first_leak, nused;
};

#define BM_CHUNK (256u << 10)

/* Byte @at of the ownership map, as the bitmap should hold it. */
static unsigned own_byte(const struct fk_exfat_check *x, uint64_t at)
{
	uint64_t nbits = x->g->nclus;
	unsigned v = at < x->map.own_end ? x->map.own[at] : 0;

	if ((at + 1) * 8 > nbits)
		v &= (1u << (nbits - at * 8)) - 1;
	return v;
}

/* Byte @at of the bitmap with its bits past ClusterCount dropped. */
static unsigned disk_byte(const struct fk_exfat_check *x, uint64_t at,
			  unsigned b)
{
	uint64_t nbits = x->g->nclus;

	if ((at + 1) * 8 > nbits)
		b &= (1u << (nbits - at * 8)) - 1;
	return b;
}

/* Keep the clusters of @miss (bit i: cluster @base + i), in use and
 * marked free, as runs for exck_name_owners(); as many as MISS_RUNS_MAX. */
static void note_misses(struct fk_exfat_check *x, uint32_t base, unsigned miss)
{
	struct miss_run *last, r = {0, 1};
	uint32_t clus;

	for (; miss; miss &= miss - 1) {
		clus = base + (uint32_t)__builtin_ctz(miss);
		last = x->misses.n ? &x->misses.v[x->misses.n - 1] : NULL;
		if (last && last->first + last->n == clus) {
			last->n++;
			continue;
		}
		if (x->misses.n == MISS_RUNS_MAX) {
			x->is_miss_cut = 1;
			return;
		}
		r.first = clus;
		if (PUSH(x->misses, r)) {
			x->is_miss_cut = 1; /* named as far as they go */
			return;
		}
	}
}

/*
 * Bytes from @i of @buf (@len long) that are zero, in whole 32-byte
 * blocks: past the last owned cluster an equal bitmap is all zero, most of
 * a card's, and a word-by-word compare there was a fifth of an empty
 * card's check (64 KiB of bitmap, 213,000 instructions).
 */
static size_t skip_zero(const unsigned char *buf, size_t i, size_t len)
{
	uint64_t v[4];

	for (; i + sizeof(v) <= len; i += sizeof(v)) {
		memcpy(v, buf + i, sizeof(v));
		if (v[0] | v[1] | v[2] | v[3])
			break;
	}
	return i;
}

static void compare_chunk(struct bm_walk *w, uint64_t at, size_t len,
			  const unsigned char *buf)
{
	struct fk_exfat_check *x = w->x;
	/* Whole blocks below ClusterCount's last byte only. */
	size_t zero_end = (uint64_t)x->g->nclus / 8 - at < len
				  ? (size_t)((uint64_t)x->g->nclus / 8 - at)
				  : len;
	size_t i = 0;

	while (i < len) {
		uint32_t base = (uint32_t)((at + i) * 8) + FK_FIRST_CLUS;
		unsigned o, b, miss, leak;

		if (at + i >= x->map.own_end && i < zero_end) {
			size_t j = skip_zero(buf, i, zero_end);

			if (j != i) {
				i = j;
				continue;
			}
		}

		/* Equal whole words go fast (none reaches past the end). */
		if (i + 8 <= len && (at + i + 8) * 8 <= x->g->nclus) {
			uint64_t ow = 0, bw;

			if (at + i < x->map.own_end)
				memcpy(&ow, x->map.own + at + i, 8);
			memcpy(&bw, buf + i, 8);
			if (ow == bw) {
				/* Without -mpopcnt a count is a libgcc call:
				 * free and full words, most of a card's
				 * bitmap, need none. */
				if (bw == ~(uint64_t)0)
					w->nused += 64;
				else if (bw)
					w->nused +=
						(uint32_t)__builtin_popcountll(
							bw);
				i += 8;
				continue;
			}
		}
		o = own_byte(x, at + i);
		b = disk_byte(x, at + i, buf[i]);
		miss = o & ~b;
		leak = b & ~o;
		w->nused += (uint32_t)__builtin_popcount(b);
		if (miss) {
			if (!w->nmiss)
				w->first_miss =
					base + (uint32_t)__builtin_ctz(miss);
			w->nmiss += (uint32_t)__builtin_popcount(miss);
			note_misses(x, base, miss);
		}
		if (leak) {
			if (!w->nleak)
				w->first_leak =
					base + (uint32_t)__builtin_ctz(leak);
			w->nleak += (uint32_t)__builtin_popcount(leak);
		}
		i++;
	}
}

/* Write the sectors of the chunk at bitmap byte @at whose bits change. */
static int write_chunk(struct bm_walk *w, uint64_t at, size_t len, uint64_t off)
{
	struct fk_exfat_check *x = w->x;
	uint32_t sec_len = x->g->sec_len;
	size_t pos, i, n;
	int err;

	for (pos = 0; pos < len; pos += sec_len) {
		int is_diff = 0;

		n = len - pos < sec_len ? len - pos : sec_len;
		for (i = 0; i < n; i++) {
			unsigned char *b = w->buf + pos + i;
			unsigned o = own_byte(x, at + pos + i);
			unsigned v =
				w->pass == PASS_SET
					? o | disk_byte(x, at + pos + i, *b)
					: o;

			if (v != *b) {
				*b = (unsigned char)v;
				is_diff = 1;
			}
		}
		if (is_diff && (err = fk_device_write(x->vol->dev, off + pos,
						      w->buf + pos, sec_len)))
			return err;
	}
	return 0;
}

static int bm_run(void *arg, const struct fk_run *run)
{
	struct bm_walk *w = arg;
	struct fk_exfat_check *x = w->x;
	uint64_t len = (uint64_t)run->nclus * x->g->clus_len, pos, at;
	uint64_t off = fk_clus_off(x->g, run->first);
	const unsigned char *map;
	size_t n, rd;
	int err;

	for (pos = 0; pos < len && w->done + pos < x->bm_need_len; pos += n) {
		at = w->done + pos;
		n = (size_t)(len - pos < BM_CHUNK ? len - pos : BM_CHUNK);
		rd = n;
		if (at + n > x->bm_need_len)
			n = (size_t)(x->bm_need_len - at);
		/* whole sectors are read (and written back) */
		rd = (n + x->g->sec_len - 1) / x->g->sec_len * x->g->sec_len;
		if (w->pass == PASS_COMPARE &&
		    !fk_device_map(x->vol->dev, off + pos, rd, &map)) {
			/* An image file's page cache, in place: no buffer
			 * to fault in and no copy (a check of a card that
			 * needs nothing starts sooner). */
			compare_chunk(w, at, n, map);
			fk_device_unmap(map, rd);
			continue;
		}
		if (!w->buf && !(w->buf = malloc(BM_CHUNK)))
			return -ENOMEM;
		if ((err = fk_device_read(x->vol->dev, off + pos, w->buf, rd)))
			return err;
		if (w->pass == PASS_COMPARE)
			compare_chunk(w, at, n, w->buf);
		else if ((err = write_chunk(w, at, n, off + pos)))
			return err;
	}
	w->done += len;
	return 0;
}

static int bitmap_pass(struct fk_exfat_check *x, struct bm_walk *w,
		       enum bm_pass pass)
{
	struct fk_chain_info info;
	int err;

	memset(w, 0, sizeof(*w));
	w->x = x;
	w->pass = pass;
	err = fk_exfat_stream_walk(x->vol, &x->bm_stream, bm_run, w, &info);
	free(w->buf);
	w->buf = NULL;
	if (err < 0)
		return err;
	/* the bitmap's own chain was judged when it was claimed */
	return 0;
}

/*
 * The bits the bitmap holds once the repair has set and cleared what
 * exck_check_bitmap() planned: the only count PercentInUse is written from, so
 * that the next check finds the hint true.  The bits are set whether or
 * not any is cleared (an incomplete tree keeps its leaks: a fuzzed volume
 * once got the 0% of its bitmap as read, 7 of 254 clusters in use).
 */
static uint32_t bits_after_repair(const struct fk_exfat_check *x,
				  const struct bm_walk *w)
{
	uint32_t n = w->nused;

	if (x->fix_bits_set)
		n += w->nmiss;
	if (x->fix_bits_clear)
		n -= w->nleak;
	return n;
}

int exck_check_bitmap(struct fk_exfat_check *x)
{
	const struct fk_geom *g = x->g;
	unsigned pct, want, lo, hi;
	struct bm_walk w;
	size_t idx;
	int err;

	x->st->used_clus = x->nowned;
	x->st->free_clus = g->nclus - x->nowned;
	if (!x->has_bitmap)
		return exck_walk_tails(x); /* nothing says what is lost */
	if ((err = bitmap_pass(x, &w, PASS_COMPARE)))
		return err;
	/* Sets hidden past an end marker own none of the clusters they name
	 * (exck_hidden_set()): the lost clusters are where they show, and only
	 * lost clusters are freed, so the directories are read past their
	 * markers when there are any: never is a hidden set's cluster freed
	 * while the set stays.  A hidden set whose clusters are all free or
	 * owned by a visible file is not looked for by a check: no reader
	 * sees it and nothing is freed on its account (fsck.exfat never
	 * looks past a marker).  A repair looks for every one (is_thorough),
	 * as fatprealloc refuses a directory that holds one. */
	if ((w.nleak || x->o.is_thorough) && (err = exck_walk_tails(x)))
		return err;
	x->is_bm_read = 1;
	x->bm_nused = w.nused;
	if (w.nmiss) {
		idx = ck_report(x->ck, FK_SEV_ERROR, "bitmap-free", NULL,
				"%u cluster%s in use %s marked free in the "
				"allocation bitmap, the first %u",
				w.nmiss, ck_plural(w.nmiss),
				w.nmiss == 1 ? "is" : "are", w.first_miss);
		x->miss_find = idx; /* exck_name_owners() adds the owners */
		ck_set_fix(x->ck, idx, "bit%s set", ck_plural(w.nmiss));
		x->fix_bits_set = 1;
	}
	if (w.nleak) {
		x->st->lost_clus = w.nleak;
		idx = ck_report(x->ck, FK_SEV_ERROR, "lost", NULL,
				"%u cluster%s marked in the allocation bitmap "
				"%s owned by nothing, the first %u",
				w.nleak, ck_plural(w.nleak),
				w.nleak == 1 ? "is" : "are", w.first_leak);
		if (!x->is_tree_incomplete) {
			ck_set_fix(x->ck, idx, "bit%s cleared",
				   ck_plural(w.nleak));
			x->fix_bits_clear = 1;
		} else if (x->keep_why) {
			ck_report(x->ck, FK_SEV_WARNING, "lost-kept",
				  x->keep_path,
				  "%s: the %u cluster%s owned by nothing %s "
				  "kept, as they may be what it held",
				  x->keep_why, w.nleak, ck_plural(w.nleak),
				  w.nleak == 1 ? "is" : "are");
		}
	}
	/* PercentInUse is a hint (spec 3.1.16) that Linux never updates
	 * and mkfs.exfat rounds: floor and ceiling both pass. */
	pct = x->boot.percent_in_use;
	lo = fk_exfat_percent(w.nused, g->nclus);
	hi = g->nclus && (uint64_t)w.nused * 100 % g->nclus ? lo + 1 : lo;
	want = fk_exfat_percent(bits_after_repair(x, &w), g->nclus);
	if (pct <= 100 && pct != lo && pct != hi) {
		idx = ck_report(x->ck, FK_SEV_WARNING, "percent-in-use", NULL,
				"PercentInUse %u%%, the allocation bitmap says "
				"%u%%",
				pct, lo);
		ck_set_fix(x->ck, idx, "set to %u%%", want);
		x->fix_percent = 1;
	} else if (pct != 0xFF && pct != want &&
		   (x->fix_bits_set || x->fix_bits_clear)) {
		x->fix_percent = 1; /* keep the hint true after a repair */
	}
	/* A main region restored from the backup gets the backup's hint. */
	if (x->restore_main && x->backup[EB_PERCENT] != want)
		x->fix_percent = 1;
	x->percent_want = (uint8_t)want;
	return 0;
}

/* Bring the on-disk bitmap to the ownership map (see bitmap_pass()). */
int exck_repair_bitmap(struct fk_exfat_check *x, enum bm_pass pass)
{
	struct bm_walk w;

	return bitmap_pass(x, &w, pass);
}
