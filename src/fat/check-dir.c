/*
 * check-dir.c: the directory the tree walk is in and the entry it checks.
 * An entry's UTF-8 names and path are made only when something is said
 * of it; its fixes are planned as data (struct ent_fix).
 */
#include "fat/check-dir.h"

#include <errno.h>
#include <string.h>

#include "fat/dir.h"
#include "lib/vec.h"

/* An EF_SET of @ent in @d, with nothing set yet. */
void ck_entry_set(struct ent_fix *f, const struct dirctx *d,
		  const struct fk_dirent *ent)
{
	memset(f, 0, sizeof(*f));
	f->op = EF_SET;
	f->dir_clus = d->first;
	f->slot = ent->slot;
}

int ck_plan_erase(struct fat_check *ck, uint32_t dir_clus, uint32_t first,
		  uint32_t n)
{
	struct ent_fix f;

	memset(&f, 0, sizeof(f));
	f.op = EF_DELETE;
	f.dir_clus = dir_clus;
	f.slot = first;
	f.nslots = n;
	return ck_plan_entry(ck, &f);
}

/* Delete @ent with every long-name slot before it, matching or not. */
int ck_plan_delete(struct fat_check *ck, const struct dirctx *d,
		   const struct fk_dirent *ent)
{
	return ck_plan_erase(ck, d->first, d->ent_first,
			     ent->slot - d->ent_first + 1);
}
/* ---- paths --------------------------------------------------------------- */

/* Room for the path of any entry of the directory whose path is the
 * current one, so that ck_ent_path() needs no memory. */
int ck_reserve_path(struct fat_check *ck)
{
	return FK_VEC_RESERVE(ck->path, ck->path_cap,
			      ck->path_len + 1 + FK_NAME_MAX);
}

/* @d's entry, with its names made. */
const struct fk_dirent *ck_named(struct dirctx *d)
{
	if (d->dir) /* else an entry kept with its names (hidden_ent) */
		fk_dir_names(d->dir, d->ent);
	return d->ent;
}

/*
 * The path of @d's entry, made on the first call for it: most entries are
 * sound, and need neither UTF-8 names nor a path (a file with long names
 * in a 20,000-file tree took a third of the walk making them).
 */
const char *ck_ent_path(struct dirctx *d)
{
	struct fat_check *ck = d->ck;

	if (!d->is_pushed) {
		const char *name = ck_named(d)->name;
		size_t len = strlen(name);

		d->is_pushed = 1;
		d->path_old = ck->path_len;
		ck->path[ck->path_len++] = '/';
		memcpy(ck->path + ck->path_len, name, len + 1);
		ck->path_len += len;
	}
	return ck_path(ck);
}

/* Done with @d's entry: the path is the directory's again. */
void ck_pop_entry(struct dirctx *d)
{
	if (d->is_pushed) {
		d->is_pushed = 0;
		d->ck->path_len = d->path_old;
		d->ck->path[d->path_old] = '\0';
	}
}

/* Open the directory at @first (0: the root), reading at most @nclus
 * clusters of it (0: no limit), as the walk reads it. */
int ck_open_dir(struct fat_check *ck, uint32_t first, uint32_t nclus,
		struct fk_dir **dir)
{
	int err;

	if ((err = fk_dir_open(ck->vol, first, dir)))
		return err;
	if (nclus)
		fk_dir_set_limit(*dir, nclus);
	fk_dir_keep_going(*dir);
	return 0;
}
