/*
 * fuzz_ls.c: what `fatls -R --chain` does.  Open the volume, walk every
 * directory with the fk_dir API (each once, nesting bounded, as fatls
 * does), look entries up by path, and walk every chain collecting its
 * runs.  On exFAT also the raw entry-set iterator and the bitmap.  The oracles are the sanitizers, -timeout and -rss_limit_mb.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exfat/exfat.h"
#include "fat/dir.h"
#include "image.h"
#include "lib/diag.h"
#include "table/fat.h"
#include "volume/volume.h"

#define MAX_DEPTH   128 /* as fatls -R */
#define MAX_LOOKUPS 256 /* lookups cost a walk each: keep a run quick */

struct walk {
	struct fk_volume *vol;
	unsigned char *seen; /* directories listed, one bit per cluster */
	unsigned lookups;
	struct fk_run *runs; /* the last chain walked */
	size_t nruns, cap;
};

static int add_run(void *arg, const struct fk_run *run)
{
	struct walk *w = arg;

	if (w->nruns == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 8;
		struct fk_run *r = realloc(w->runs, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		w->runs = r;
		w->cap = cap;
	}
	w->runs[w->nruns++] = *run;
	return 0;
}

/* The clusters of @ent as --chain prints them: runs, then the verdict. */
static int walk_chain(struct walk *w, const struct fk_dirent *ent)
{
	struct fk_chain_info info;
	struct fk_diag diag = {0};
	int err;

	w->nruns = 0;
	err = fk_dirent_walk(w->vol, ent, add_run, w, &info);
	if (!err && ent->first_clus && info.end != FK_ENT_EOC)
		err = fk_chain_error(&info, &diag);
	return err;
}

static int is_seen(struct walk *w, uint32_t clus)
{
	if (clus > fk_clus_max(&w->vol->g))
		return 0;
	if (w->seen[clus / 8] & 1u << clus % 8)
		return 1;
	w->seen[clus / 8] |= (unsigned char)(1u << clus % 8);
	return 0;
}

static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);

	if (p) {
		memcpy(p, dir, a);
		p[a] = '/';
		memcpy(p + a + 1, name, b + 1);
	}
	return p;
}

static void list_dir(struct walk *w, const struct fk_dirent *dent,
		     const char *path, int depth)
{
	uint32_t clus = fk_dirent_dir_clus(w->vol, dent);
	struct fk_dirent ent, found;
	struct fk_dir *dir;
	struct fk_diag diag = {0};

	if (depth > MAX_DEPTH || is_seen(w, clus) ||
	    (clus && walk_chain(w, dent)) ||
	    fk_dir_open_ent(w->vol, dent, &dir))
		return;
	while (fk_dir_next(dir, &ent, &diag) == 1) {
		char *full = join(path, ent.name);
		int is_broken;

		if (!full)
			break;
		if (w->lookups < MAX_LOOKUPS && !fk_dirent_is_dot(&ent)) {
			w->lookups++;
			fk_dir_lookup(w->vol, full, &found, &diag);
		}
		is_broken = walk_chain(w, &ent) != 0;
		if (!is_broken && (ent.attr & FK_ATTR_DIR) &&
		    !(ent.attr & FK_ATTR_VOLUME) && !fk_dirent_is_dot(&ent))
			list_dir(w, &ent, full, depth + 1);
		free(full);
	}
	fk_dir_close(dir);
}

/* The root again, past its end marker, as the checker reads it. */
static void list_hidden(struct walk *w)
{
	struct fk_dirent ent;
	struct fk_dir *dir;

	if (fk_dir_open(w->vol, 0, &dir))
		return;
	fk_dir_keep_going(dir);
	while (fk_dir_next(dir, &ent, NULL) == 1)
		;
	(void)fk_dir_stats(dir);
	fk_dir_close(dir);
}

/*
 * exFAT: every entry set of the root and of its first subdirectory, past
 * the end marker too (what a checker reads), and the allocation bitmap.
 */
static void list_exfat(struct walk *w)
{
	struct fk_exfat_set *set = malloc(sizeof(*set));
	struct fk_exfat_stream sub = {0, 0, 0};
	struct fk_exfat_bitmap bm;
	struct fk_exfat_dir *dir;
	int pass;

	if (!set)
		return;
	for (pass = 0; pass < 2; pass++) {
		if (fk_exfat_dir_open(w->vol, pass ? &sub : NULL, &dir))
			break;
		fk_exfat_dir_keep_going(dir);
		while (fk_exfat_dir_next(dir, set, NULL) == 1)
			if (set->kind == FK_EXK_FILE && !sub.first_clus &&
			    (set->attr & FK_ATTR_DIR)) {
				sub.first_clus = set->first_clus;
				sub.data_len = set->data_len;
				sub.is_no_fat_chain = set->is_no_fat_chain;
			}
		(void)fk_exfat_dir_stats(dir);
		fk_exfat_dir_close(dir);
		if (!sub.first_clus)
			break;
	}
	free(set);
	if (!fk_exfat_bitmap_load_active(w->vol, &bm, NULL)) {
		(void)fk_exfat_bitmap_count(&bm, 2, bm.nclus);
		fk_exfat_bitmap_free(&bm);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct walk w;
	struct fk_dirent root;

	memset(&w, 0, sizeof(w));
	fuzz_image(data, len);
	if (fuzz_open(0, &w.vol))
		return 0;
	w.seen = calloc(((size_t)fk_clus_max(&w.vol->g) + 8) / 8, 1);
	if (w.seen && !fk_dir_lookup(w.vol, "/", &root, NULL))
		list_dir(&w, &root, "", 0);
	if (fk_exfat_of(w.vol))
		list_exfat(&w);
	else
		list_hidden(&w);
	free(w.runs);
	free(w.seen);
	fk_volume_close(w.vol);
	return 0;
}
