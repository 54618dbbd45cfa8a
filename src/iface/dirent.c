/*
 * dirent.c: directories as both families list them.  An open directory
 * is the family's own iterator behind vol->fam's directory operations;
 * lookup walks paths through them and the family's name match, and the
 * timestamp rule is the one both families' date and time words share.
 */
#include "iface/dirent.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/diag.h"
#include "table/fat.h"
#include "volume/family.h"
#include "volume/volume.h"

int fk_attr_is_label(uint8_t attr)
{
	return (attr & (FK_ATTR_VOLUME | FK_ATTR_DIR)) == FK_ATTR_VOLUME;
}

uint32_t fk_dir_resolve(const struct fk_volume *vol, uint32_t clus)
{
	if (clus == 0 && vol->g.is_root_chain)
		return vol->g.root_clus;
	return clus;
}

uint32_t fk_dirent_dir_clus(const struct fk_volume *vol,
			    const struct fk_dirent *ent)
{
	/* ".." of a first-level directory says 0 for the root, even where
	 * the root is a chain. */
	return fk_dir_resolve(vol, ent->first_clus);
}

/* An open directory of either family. */
struct fk_dir {
	const struct fk_family *fam;
	void *impl; /* the family's own iterator */
};

int fk_dir_open_ent(struct fk_volume *vol, const struct fk_dirent *dent,
		    struct fk_dir **out)
{
	struct fk_dir *dir = calloc(1, sizeof(*dir));
	int err;

	if (!dir)
		return -ENOMEM;
	dir->fam = vol->fam;
	if ((err = dir->fam->dir_open(vol, dent, &dir->impl))) {
		free(dir);
		return err;
	}
	*out = dir;
	return 0;
}

int fk_dir_open(struct fk_volume *vol, uint32_t clus, struct fk_dir **out)
{
	struct fk_dirent dent;

	memset(&dent, 0, sizeof(dent));
	dent.attr = FK_ATTR_DIR;
	dent.first_clus = clus;
	return fk_dir_open_ent(vol, &dent, out);
}

void fk_dir_close(struct fk_dir *dir)
{
	if (!dir)
		return;
	dir->fam->dir_close(dir->impl);
	free(dir);
}

int fk_dir_next(struct fk_dir *dir, struct fk_dirent *ent, struct fk_diag *diag)
{
	return dir->fam->dir_next(dir->impl, ent, diag);
}

int fk_dirent_walk(struct fk_volume *vol, const struct fk_dirent *ent,
		   int (*fn)(void *arg, const struct fk_run *run), void *arg,
		   struct fk_chain_info *info)
{
	return vol->fam->walk(vol, ent, fn, arg, info);
}

void *fk_dir_impl(const struct fk_dir *dir,
		  int (*dir_open)(struct fk_volume *vol,
				  const struct fk_dirent *dent, void **impl))
{
	return dir->fam->dir_open == dir_open ? dir->impl : NULL;
}

void fk_dos_time(const struct tm *tm, int64_t t, uint16_t *date, uint16_t *tod,
		 uint8_t *cs)
{
	/* The first and the last instant the words hold; clamping to the
	 * last (rather than wrapping to 1980) keeps a far-future stamp the
	 * latest one on the volume, as a sort by date expects. */
	static const struct tm first = {.tm_year = 80, .tm_mday = 1};
	static const struct tm last = {.tm_year = 207,
				       .tm_mon = 11,
				       .tm_mday = 31,
				       .tm_hour = 23,
				       .tm_min = 59,
				       .tm_sec = 59};

	if (!tm)
		tm = t < 0 ? &first : &last;
	else if (tm->tm_year < 80)
		tm = &first;
	else if (tm->tm_year > 207)
		tm = &last;
	*date = (uint16_t)((tm->tm_year - 80) << 9 | (tm->tm_mon + 1) << 5 |
			   tm->tm_mday);
	*tod = (uint16_t)(tm->tm_hour << 11 | tm->tm_min << 5 |
			  (tm->tm_sec > 59 ? 59 : tm->tm_sec) / 2);
	*cs = (uint8_t)((tm->tm_sec > 59 ? 59 : tm->tm_sec) % 2 * 100);
}

void fk_dir_stamp(struct fk_dirent *ent, int64_t t, int is_utc)
{
	time_t tt = (time_t)t;
	struct tm tm;
	int is_held = (int64_t)tt == t &&
		      (is_utc ? gmtime_r(&tt, &tm) : localtime_r(&tt, &tm));

	fk_dos_time(is_held ? &tm : NULL, t, &ent->mdate, &ent->mtime,
		    &ent->ctime_cs);
	ent->cdate = ent->adate = ent->mdate;
	ent->ctime = ent->mtime;
}

static void root_entry(const struct fk_volume *vol, struct fk_dirent *ent)
{
	memset(ent, 0, sizeof(*ent));
	strcpy(ent->name, "/");
	strcpy(ent->short_name, "/");
	memset(ent->raw, ' ', 11);
	ent->attr = FK_ATTR_DIR;
	ent->first_clus = fk_dir_resolve(vol, 0);
}

/* Find @name in the directory @parent describes; @ent gets the entry. */
static int find_in(struct fk_volume *vol, const struct fk_dirent *parent,
		   const char *name, struct fk_dirent *ent,
		   struct fk_diag *diag)
{
	struct fk_chain_info info;
	struct fk_dir *dir;
	int err;

	if (!parent->first_clus && parent->size) {
		/* exFAT's FirstCluster 0 with a length: say so, rather
		 * than a bare "Structure needs cleaning" from the open. */
		if (!(err = fk_dirent_walk(vol, parent, NULL, NULL, &info)))
			err = fk_chain_error(&info, diag);
		return err;
	}
	if ((err = fk_dir_open_ent(vol, parent, &dir)))
		return err;
	while ((err = fk_dir_next(dir, ent, diag)) == 1) {
		if (ent->attr & FK_ATTR_VOLUME)
			continue;
		if (vol->fam->match(vol, name, ent))
			break;
	}
	fk_dir_close(dir);
	return err == 1 ? 0 : err == 0 ? -ENOENT : err;
}

int fk_dir_lookup(struct fk_volume *vol, const char *path,
		  struct fk_dirent *ent, struct fk_diag *diag)
{
	char comp[FK_NAME_MAX];
	struct fk_dirent parent;
	const char *p = path;
	int err;

	fk_diag_set(diag, path, NULL);
	if (*p != '/')
		return -EINVAL;
	root_entry(vol, ent);
	for (;;) {
		size_t len;

		while (*p == '/')
			p++;
		if (!*p)
			return 0;
		len = strcspn(p, "/");
		if (len >= sizeof(comp))
			return -ENAMETOOLONG;
		memcpy(comp, p, len);
		comp[len] = '\0';
		p += len;
		if (!strcmp(comp, "."))
			continue;
		if (!(ent->attr & FK_ATTR_DIR))
			return -ENOTDIR;
		/* The root has no ".." slot but is its own parent, as in
		 * POSIX and mtools (only root_entry() names an entry "/"). */
		if (!strcmp(comp, "..") && !strcmp(ent->name, "/"))
			continue;
		parent = *ent;
		if ((err = find_in(vol, &parent, comp, ent, diag)))
			return err;
		if (!strcmp(comp, "..") && ent->first_clus == 0)
			root_entry(vol, ent);
	}
}
