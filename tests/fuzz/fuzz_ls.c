/*
 * fuzz_ls.c: what `fatls -R --chain` does.  Open the volume, walk every
 * directory with the fk_dir API (each once, nesting bounded, as fatls
 * does), look entries up by path, and walk every chain collecting its
 * runs.  The oracles are the sanitizers, -timeout and -rss_limit_mb.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "dir.h"
#include "fat.h"
#include "image.h"
#include "volume.h"

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

/* The chain of @clus as --chain prints it: runs, then the verdict. */
static int walk_chain(struct walk *w, uint32_t clus)
{
	struct fk_chain_info info;
	struct fk_diag diag = {{0}, {0}};
	int err;

	w->nruns = 0;
	err = fk_chain_walk(w->vol, clus, add_run, w, &info);
	if (!err && clus && info.end != FK_ENT_EOC)
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

static void list_dir(struct walk *w, uint32_t clus, const char *path, int depth)
{
	struct fk_dirent ent, found;
	struct fk_dir *dir;
	struct fk_diag diag = {{0}, {0}};

	if (depth > MAX_DEPTH || is_seen(w, clus) ||
	    (clus && walk_chain(w, clus)) || fk_dir_open(w->vol, clus, &dir))
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
		is_broken = walk_chain(w, ent.first_clus) != 0;
		if (!is_broken && (ent.attr & FK_ATTR_DIR) &&
		    !(ent.attr & FK_ATTR_VOLUME) && !fk_dirent_is_dot(&ent))
			list_dir(w, fk_dirent_dir_clus(w->vol, &ent), full,
				 depth + 1);
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
		list_dir(&w, fk_dirent_dir_clus(w.vol, &root), "", 0);
	list_hidden(&w);
	free(w.runs);
	free(w.seen);
	fk_volume_close(w.vol);
	return 0;
}
