/*
 * fatls: list directories, files, their cluster chains and the volume.
 * main() parses, asks the core, prints and picks the exit status.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "iface/dirent.h"
#include "lib/diag.h"
#include "lib/vec.h"
#include "mount/mount.h"
#include "table/fat.h"
#include "tools/cli.h"
#include "tools/json.h"
#include "volume/family.h"
#include "volume/volume.h"

#define PROG "fatls"

struct ls_opts {
	int is_long;
	int show_all;
	int is_recursive;
	int show_short;
	int show_chain;
	int show_info;
	int is_json;
	int progress; /* -1: when stderr is a terminal and stdout is not */
};

struct ls {
	struct ls_opts o;
	struct fk_volume *vol;
	struct fk_json js;
	int status;		     /* FK_EXIT_OK or FK_EXIT_FAIL */
	const struct fk_family *fam; /* what the volume's family shows */
	const char *image;	     /* IMAGE as typed, for messages */
	unsigned char *seen; /* -R: one bit per directory cluster listed */
	size_t seen_len;     /* bytes of @seen */
	uint64_t nlisted;    /* entries printed, for the progress line */
	double t0, last;     /* seconds: start, last progress line */
	int shown;	     /* a progress line is on the terminal */
	int size_width;	     /* -l: columns of size and allocated */
};

/* Is @ent "." or ".." (only in a family that has them)? */
static int is_dot(const struct ls *ls, const struct fk_dirent *ent)
{
	return ls->fam->is_dot && ls->fam->is_dot(ent);
}

/* The chain of one entry, as --chain, -l and --json need it. */
struct chain {
	struct fk_chain_info info;
	struct fk_run *runs;
	size_t nruns, cap;
};

/* One source line per line of help, kept as written. */
/* clang-format off */
static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROG " [OPTIONS] IMAGE [PATH]...\n"
		"List directories and files of a FAT12/16/32 or exFAT volume without\n"
		"mounting it.\n"
		"\n"
		"  -l                 long format: attributes, size, allocated, mtime, name\n"
		"  -a                 include hidden and system entries, . and .., the label\n"
		"  -R                 recurse; print full paths\n"
		"  -s                 show 8.3 short names beside long names (not on exFAT)\n"
		"      --chain        show first cluster, fragments and runs (clusters and\n"
		"                     byte offset+length in IMAGE)\n"
		"      --info         print the volume (FAT type, geometry, free space, FSInfo)\n"
		"      --json         one JSON document on stdout\n"
		"      --progress     count of entries listed on stderr (default when stderr\n"
		"                     is a terminal and stdout is not)\n"
		"      --no-progress  no progress line\n"
		"      --wait[=SECONDS]  wait for the image lock (as flock -w; default: fail\n"
		"                     at once when a writer holds it)\n"
		"  -P, --partition N  use partition N (1-based) of an MBR or GPT table\n"
		"  -h, --help         show this help and exit\n"
		"  -V, --version      show the version and exit\n"
		"\n"
		"IMAGE may be FILE@@OFFSET (mtools convention, e.g. sd.img@@1M).  PATH is\n"
		"absolute; . and .. are resolved by name.\n"
		"Exit status: 0 success, 1 failure, 2 usage error.\n");
}
/* clang-format on */

static int add_run(void *arg, const struct fk_run *run)
{
	struct chain *c = arg;

	if (FK_VEC_RESERVE(c->runs, c->cap, c->nruns + 1))
		return -ENOMEM;
	c->runs[c->nruns++] = *run;
	return 0;
}

/* Walk the chain of @ent; a broken one is reported and fails the run. */
static int get_chain(struct ls *ls, const struct fk_dirent *ent,
		     const char *path, struct chain *c)
{
	struct fk_diag diag = {0};
	int err;

	c->nruns = 0;
	err = fk_dirent_walk(ls->vol, ent, add_run, c, &c->info);
	if (!err && (ent->first_clus || c->info.is_no_first) &&
	    c->info.end != FK_ENT_EOC)
		err = fk_chain_error(&c->info, &diag);
	if (err) {
		fk_diag_set(&diag, path, NULL);
		fk_report_in(PROG, ls->image, &diag, err);
		ls->status = FK_EXIT_FAIL;
	}
	return err;
}

/* Characters, not bytes, so UTF-8 names line up. */
static int display_width(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n > 12 ? 12 : n;
}

static void attr_string(uint8_t attr, char out[6])
{
	out[0] = attr & FK_ATTR_DIR ? 'd' : attr & FK_ATTR_VOLUME ? 'v' : '-';
	out[1] = attr & FK_ATTR_RO ? 'r' : '-';
	out[2] = attr & FK_ATTR_HIDDEN ? 'h' : '-';
	out[3] = attr & FK_ATTR_SYSTEM ? 's' : '-';
	out[4] = attr & FK_ATTR_ARCHIVE ? 'a' : '-';
	out[5] = '\0';
}

/*
 * FAT date and time words as ISO 8601 (local time, as FAT stores it).
 * A family with fine times (exFAT) adds 10 ms units (shown as
 * hundredths) and, when valid, the UTC offset the time was taken in.
 */
static void mtime_string(const struct ls *ls, const struct fk_dirent *ent,
			 char *out, size_t len)
{
	unsigned sec = (ent->mtime & 31) * 2u + ent->mtime_cs / 100u;
	int n;

	if (!ent->mdate) {
		snprintf(out, len, "-");
		return;
	}
	n = snprintf(out, len, "%04u-%02u-%02uT%02u:%02u:%02u",
		     1980 + (ent->mdate >> 9), ent->mdate >> 5 & 15,
		     ent->mdate & 31, ent->mtime >> 11, ent->mtime >> 5 & 63,
		     sec);
	if (!ls->fam->has_fine_times || n < 0 || (size_t)n >= len)
		return;
	n += snprintf(out + n, len - (size_t)n, ".%02u", ent->mtime_cs % 100u);
	if (ent->has_mtime_tz && (size_t)n < len) {
		int min = ent->mtime_tz * 15;

		snprintf(out + n, len - (size_t)n, "%c%02d:%02d",
			 min < 0 ? '-' : '+', abs(min) / 60, abs(min) % 60);
	}
}

static uint64_t run_off(const struct ls *ls, const struct fk_run *r)
{
	return fk_device_base(ls->vol->dev) +
	       fk_clus_off(&ls->vol->g, r->first);
}

static void print_json_entry(struct ls *ls, const struct fk_dirent *ent,
			     const char *path, const struct chain *c)
{
	static const struct {
		uint8_t bit;
		const char *name;
	} attrs[] = {{FK_ATTR_RO, "read-only"},	 {FK_ATTR_HIDDEN, "hidden"},
		     {FK_ATTR_SYSTEM, "system"}, {FK_ATTR_VOLUME, "volume"},
		     {FK_ATTR_DIR, "directory"}, {FK_ATTR_ARCHIVE, "archive"}};
	struct fk_json *js = &ls->js;
	uint32_t clus_len = ls->vol->g.clus_len;
	char mtime[40];
	size_t i;

	mtime_string(ls, ent, mtime, sizeof(mtime));
	fk_json_object(js, NULL);
	fk_json_str(js, "path", path);
	fk_json_str(js, "name", ent->name);
	if (ls->fam->has_short_names)
		fk_json_str(js, "short_name", ent->short_name);
	else
		fk_json_null(js, "short_name");
	fk_json_array(js, "attributes");
	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		if (ent->attr & attrs[i].bit)
			fk_json_str(js, NULL, attrs[i].name);
	fk_json_end(js);
	fk_json_u64(js, "size", ent->size);
	if (ls->fam->has_valid_len) {
		fk_json_u64(js, "valid_data_length", ent->valid_len);
		fk_json_bool(js, "contiguous_no_fat_chain",
			     ent->is_no_fat_chain);
	}
	fk_json_u64(js, "allocated", (uint64_t)c->info.nclus * clus_len);
	fk_json_u64(js, "first_cluster", ent->first_clus);
	fk_json_u64(js, "clusters", c->info.nclus);
	fk_json_u64(js, "fragments", c->info.nruns);
	fk_json_runs(js, &ls->vol->g, fk_device_base(ls->vol->dev),
		     fk_device_disk_off(ls->vol->dev), c->runs, c->nruns);
	if (ent->mdate)
		fk_json_str(js, "mtime", mtime);
	else
		fk_json_null(js, "mtime");
	fk_json_end(js);
}

/*
 * The alignment of byte offset @off in IMAGE: the largest power of two
 * that divides it, up to 1G ("4M", "512"), which is what an SD card's
 * allocation unit or an erase block is compared with.
 */
static void align_string(uint64_t off, char *out, size_t len)
{
	static const char units[] = {'\0', 'K', 'M', 'G'};
	unsigned shift = off ? (unsigned)__builtin_ctzll(off) : 30;

	if (shift > 30)
		shift = 30;
	snprintf(out, len, "%llu%.1s", 1ull << (shift % 10),
		 &units[shift / 10]);
}

/*
 * The -l size columns: wide enough for the volume's byte size, which no
 * sound file exceeds, and never below ten.  A listing streams entry by
 * entry, so the width is fixed before the first line.
 */
static int size_width(const struct fk_geom *g)
{
	uint64_t v = g->total_secs * g->sec_len;
	int w = 1;

	while (v >= 10) {
		v /= 10;
		w++;
	}
	return w < 10 ? 10 : w;
}

static void print_text_entry(struct ls *ls, const struct fk_dirent *ent,
			     const char *shown, const struct chain *c)
{
	uint32_t clus_len = ls->vol->g.clus_len;
	char attr[6], mtime[40];
	size_t i;

	if (ls->o.is_long) {
		attr_string(ent->attr, attr);
		mtime_string(ls, ent, mtime, sizeof(mtime));
		printf("%s %*" PRIu64 " %*" PRIu64 " %-19s ", attr,
		       ls->size_width, ent->size, ls->size_width,
		       (uint64_t)c->info.nclus * clus_len, mtime);
	}
	/* Without 8.3 names (exFAT), -s leaves the long name alone. */
	if (ls->o.show_short && ls->fam->has_short_names)
		printf("%s%*s ", ent->short_name,
		       12 - display_width(ent->short_name), "");
	if (ls->o.show_chain) {
		printf("first=%" PRIu32 " fragments=%" PRIu32 " runs=",
		       ent->first_clus, c->info.nruns);
		for (i = 0; i < c->nruns; i++)
			printf("%s%" PRIu32 "-%" PRIu32 "@%" PRIu64 "+%" PRIu64,
			       i ? "," : "", c->runs[i].first,
			       c->runs[i].first + c->runs[i].nclus - 1,
			       run_off(ls, &c->runs[i]),
			       (uint64_t)c->runs[i].nclus * clus_len);
		printf("%s ", c->nruns ? "" : "-");
		for (i = 0; i < c->nruns; i++) {
			char al[16];

			/* on the card: a partition's device starts into it */
			align_string(fk_device_disk_off(ls->vol->dev) +
					     run_off(ls, &c->runs[i]),
				     al, sizeof(al));
			printf("%s%s", i ? "," : "aligned=", al);
		}
		if (c->nruns)
			printf(" ");
		if (ent->is_no_fat_chain)
			printf("NoFatChain ");
	}
	printf("%s", shown);
	/* Bytes past ValidDataLength read as zeros (exFAT 7.6.5). */
	if (ls->o.is_long && ent->valid_len < ent->size)
		printf("  (valid %" PRIu64 " of %" PRIu64 " bytes)",
		       ent->valid_len, ent->size);
	printf("\n");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void clear_progress(struct ls *ls)
{
	if (ls->shown)
		fputs("\r\033[K", stderr);
	ls->shown = 0;
}

/*
 * One line redrawn at most ten times a second.  A listing has no total
 * known in advance, so the line says what is done and the rate only.
 */
static void count_entry(struct ls *ls)
{
	double t;

	ls->nlisted++;
	if (!ls->o.progress)
		return;
	t = now();
	if (t - ls->last < 0.1)
		return;
	ls->last = t;
	ls->shown = 1;
	fflush(stdout);
	fprintf(stderr, "\r" PROG ": %" PRIu64 " entries listed, %.0f/s\033[K",
		ls->nlisted,
		t > ls->t0 ? (double)ls->nlisted / (t - ls->t0) : 0);
}

/*
 * Print one entry; @path is its full path, @shown what the line names.
 * Returns 0, or the error of a broken chain, which is reported already.
 */
/*
 * A truncated dump: name an entry whose clusters reach past the end of
 * the image (one line each, as ls names an entry it cannot read), and
 * fail the run.
 */
static void warn_cut(struct ls *ls, const char *path, const struct chain *c)
{
	const struct fk_geom *g = &ls->vol->g;
	uint64_t have = ls->vol->present_len, held = 0, all = 0;
	struct fk_diag diag;
	size_t i;

	for (i = 0; i < c->nruns; i++) {
		uint64_t off = fk_clus_off(g, c->runs[i].first);
		uint64_t len = (uint64_t)c->runs[i].nclus * g->clus_len;

		all += len;
		held += off >= have ? 0 : have - off < len ? have - off : len;
	}
	if (held == all)
		return;
	memset(&diag, 0, sizeof(diag));
	fk_diag_set(&diag, path,
		    "reaches past the end of the truncated image (it holds "
		    "%" PRIu64 " of its %" PRIu64 " allocated bytes)",
		    held, all);
	fflush(stdout);
	fk_report_in(PROG, ls->image, &diag, FK_ECORRUPT);
	ls->status = FK_EXIT_FAIL;
}

static int print_entry(struct ls *ls, const struct fk_dirent *ent,
		       const char *path, const char *shown)
{
	struct chain c;
	int need_chain = ls->o.is_long || ls->o.show_chain || ls->o.is_json ||
			 ls->vol->present_len;
	int err;

	memset(&c, 0, sizeof(c));
	clear_progress(ls);
	count_entry(ls);
	/* "." and ".." share their target's chain; do not walk them twice. */
	if (need_chain && !is_dot(ls, ent) && !(ent->attr & FK_ATTR_VOLUME) &&
	    (err = get_chain(ls, ent, path, &c))) {
		free(c.runs);
		return err;
	}
	if (ls->o.is_json)
		print_json_entry(ls, ent, path, &c);
	else
		print_text_entry(ls, ent, shown, &c);
	if (ls->vol->present_len && !is_dot(ls, ent))
		warn_cut(ls, path, &c);
	free(c.runs);
	return 0;
}

static int is_shown(const struct ls *ls, const struct fk_dirent *ent)
{
	if (ls->o.show_all)
		return 1;
	return !(ent->attr &
		 (FK_ATTR_HIDDEN | FK_ATTR_SYSTEM | FK_ATTR_VOLUME)) &&
	       !is_dot(ls, ent);
}

static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);

	if (!p)
		return NULL;
	memcpy(p, dir, a);
	p[a] = '/';
	memcpy(p + a + 1, name, b + 1);
	return p;
}

/*
 * With -R each directory is listed once per PATH: meeting its cluster
 * again means an entry points at an ancestor, or several entries share one
 * directory, which would multiply the listing at every level.  Bit 0
 * stands for the FAT12/16 fixed root.
 */
static int mark_seen(struct ls *ls, uint32_t clus, struct fk_diag *diag)
{
	if (!ls->seen || clus > fk_clus_max(&ls->vol->g))
		return 0; /* out of range: check_dir_chain() says so */
	if (ls->seen[clus / 8] & 1u << clus % 8) {
		fk_diag_set(diag, NULL,
			    "directory loop (cluster %u is listed already)",
			    clus);
		return FK_ECORRUPT;
	}
	ls->seen[clus / 8] |= (unsigned char)(1u << clus % 8);
	return 0;
}

/*
 * Walk a directory's chain before reading its slots, so that a looping
 * or broken chain is one error, not the same entries printed again and
 * again until fk_dir_next() hits its 2 MiB bound.
 */
static int check_dir_chain(struct ls *ls, const struct fk_dirent *dent,
			   struct fk_diag *diag)
{
	struct fk_chain_info info;
	int err;

	if (!fk_dirent_dir_clus(ls->vol, dent))
		return 0; /* the FAT12/16 fixed root has no chain */
	if (!dent->first_clus && !dent->size)
		return 0; /* FAT's cluster 0 is the root (as ".." has it),
			     whose chain its own listing judges */
	if ((err = fk_dirent_walk(ls->vol, dent, NULL, NULL, &info)))
		return err;
	if (info.end != FK_ENT_EOC)
		return fk_chain_error(&info, diag);
	return 0;
}

/*
 * List the directory @dent describes, whose path is @path ("" for the
 * root).  With -R the
 * recursion depth is bounded too, so that a long chain of distinct
 * directories cannot exhaust the stack; no real volume nests this deep.
 */
static int list_dir(struct ls *ls, const struct fk_dirent *dent,
		    const char *path, int depth)
{
	struct fk_diag diag = {0};
	uint32_t clus = fk_dirent_dir_clus(ls->vol, dent);
	struct fk_dirent ent;
	struct fk_dir *dir;
	int err;

	if (depth > 128) {
		fk_diag_set(&diag, NULL,
			    "directories nest deeper than 128 "
			    "levels (a directory loop?)");
		err = FK_ECORRUPT;
		goto out_report;
	}
	/* The chain first: an exFAT entry with FirstCluster 0 is damage
	 * to name, not the root met again. */
	if ((err = check_dir_chain(ls, dent, &diag)) ||
	    (err = mark_seen(ls, clus, &diag)) ||
	    (err = fk_dir_open_ent(ls->vol, dent, &dir)))
		goto out_report;
	while ((err = fk_dir_next(dir, &ent, &diag)) == 1) {
		char *full;

		if (!is_shown(ls, &ent))
			continue;
		if (fk_attr_is_label(ent.attr)) {
			/* A label is 11 characters, not 8.3: no dot. */
			fk_label_display(ent.raw, ent.name, sizeof(ent.name));
			fk_label_display(ent.raw, ent.short_name,
					 sizeof(ent.short_name));
		}
		if (!(full = join(path, ent.name))) {
			err = -ENOMEM;
			break;
		}
		/* A directory whose chain -l found broken is not entered:
		 * one error for one damage. */
		if (!print_entry(ls, &ent, full,
				 ls->o.is_recursive ? full : ent.name) &&
		    ls->o.is_recursive && (ent.attr & FK_ATTR_DIR) &&
		    !is_dot(ls, &ent) && !(ent.attr & FK_ATTR_VOLUME))
			list_dir(ls, &ent, full, depth + 1);
		free(full);
	}
	fk_dir_close(dir);
	if (err >= 0)
		return 0;
out_report:
	fk_diag_set(&diag, *path ? path : "/", NULL);
	fk_report_in(PROG, ls->image, &diag, err);
	ls->status = FK_EXIT_FAIL;
	return err;
}

/*
 * The path to show for an entry found by @arg: its last component as the
 * volume spells it, not as typed (an alias or another case), as mdir and
 * Windows dir do.  NULL when out of memory.
 */
static char *real_path(const char *arg, const struct fk_dirent *ent)
{
	size_t n = strlen(arg), cut;
	char *out;

	while (n > 0 && arg[n - 1] == '/')
		n--;
	if (!n)
		return strdup("");
	for (cut = n; cut > 0 && arg[cut - 1] != '/'; cut--)
		;
	if (!(out = malloc(cut + strlen(ent->name) + 1)))
		return NULL;
	memcpy(out, arg, cut);
	strcpy(out + cut, ent->name);
	return out;
}

static void list_path(struct ls *ls, const char *arg, int nargs)
{
	struct fk_diag diag = {0};
	struct fk_dirent ent;
	char *path;
	int err;

	err = fk_dir_lookup(ls->vol, arg, &ent, &diag);
	/* "/file.txt/" names a directory, as for ls(1). */
	if (!err && arg[strlen(arg) - 1] == '/' && !(ent.attr & FK_ATTR_DIR))
		err = -ENOTDIR;
	if (err) {
		fk_report_in(PROG, ls->image, &diag, err);
		ls->status = FK_EXIT_FAIL;
		return;
	}
	if (!(path = real_path(arg, &ent))) {
		fk_report(PROG, NULL, -ENOMEM);
		ls->status = FK_EXIT_FAIL;
		return;
	}
	if (ls->seen)
		memset(ls->seen, 0, ls->seen_len);
	if (!(ent.attr & FK_ATTR_DIR)) {
		print_entry(ls, &ent, path, path);
	} else {
		if (nargs > 1 && !ls->o.is_recursive && !ls->o.is_json)
			printf("%s:\n", *path ? path : "/");
		list_dir(ls, &ent, path, 0);
		if (nargs > 1 && !ls->o.is_recursive && !ls->o.is_json)
			printf("\n");
	}
	free(path);
}

/* Print (or add to the JSON) the volume's --info fields. */
static void print_info(struct ls *ls)
{
	struct fk_info_item it[FK_INFO_MAX];
	struct fk_diag diag = {0};
	int n, i;

	memset(it, 0, sizeof(it));
	if ((n = ls->vol->fam->info(ls->vol, it, &diag)) < 0) {
		fk_diag_subject(&diag, ls->image);
		fk_report_in(PROG, ls->image, &diag, n);
		ls->status = FK_EXIT_FAIL;
		return;
	}
	if (ls->o.is_json) {
		fk_json_object(&ls->js, "volume");
		for (i = 0; i < n; i++) {
			char key[32];
			size_t k;

			snprintf(key, sizeof(key), "%s", it[i].key);
			for (k = 0; key[k]; k++)
				key[k] = key[k] == ' ' ? '_' : key[k];
			if (it[i].is_num)
				fk_json_u64(&ls->js, key, it[i].num);
			else
				fk_json_str(&ls->js, key, it[i].str);
		}
		fk_json_end(&ls->js);
		return;
	}
	for (i = 0; i < n; i++)
		if (it[i].is_num)
			printf("%s: %" PRIu64 "\n", it[i].key, it[i].num);
		else
			printf("%s: %s\n", it[i].key, it[i].str);
}

/*
 * A damaged boot region whose fields still pass their range checks (on
 * exFAT: a checksum mismatch, a backup that differs, a missing
 * signature) is read on: the listing only reads, and every field it
 * relies on was checked.  One warning line says so; the exit status is
 * the listing's.
 */
static void warn_boot(const struct ls *ls)
{
	char what[160];

	if (!ls->fam->boot_warning ||
	    !ls->fam->boot_warning(ls->vol, what, sizeof(what)))
		return;
	fprintf(stderr,
		PROG ": %s: warning: %s; listing read on, check the volume "
		     "with fatcheck\n",
		ls->image, what);
}

/* One PATH argument: names checked, "." and ".." resolved, then listed. */
static void list_arg(struct ls *ls, const char *arg, int nargs)
{
	char *path;

	clear_progress(ls);
	if (fk_cli_path(PROG, ls->image, arg, ls->fam, &path)) {
		ls->status = FK_EXIT_FAIL;
		return;
	}
	list_path(ls, path, nargs);
	free(path);
}

enum { OPT_CHAIN = 256, OPT_INFO, OPT_JSON };

static int parse_args(int argc, char **argv, struct ls_opts *o,
		      struct fk_volume_opts *vo)
{
	static const struct option longs[] = {
		{"chain", no_argument, NULL, OPT_CHAIN},
		{"info", no_argument, NULL, OPT_INFO},
		{"json", no_argument, NULL, OPT_JSON},
		{"partition", required_argument, NULL, 'P'},
		FK_CLI_LONG_OPTS,
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}};
	int c, err;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":laRsP:hV", longs, NULL)) != -1) {
		switch (c) {
		case 'l':
			o->is_long = 1;
			break;
		case 'a':
			o->show_all = 1;
			break;
		case 'R':
			o->is_recursive = 1;
			break;
		case 's':
			o->show_short = 1;
			break;
		case OPT_CHAIN:
			o->show_chain = 1;
			break;
		case OPT_INFO:
			o->show_info = 1;
			break;
		case OPT_JSON:
			o->is_json = 1;
			break;
		default:
			err = fk_cli_common_opt(PROG, c, optarg,
						argv[optind - 1], &vo->dev,
						&o->progress, usage);
			if (err != FK_OPT_DONE)
				return err == FK_OPT_OTHER ? -EINVAL : err;
			break;
		}
	}
	if (optind >= argc) {
		fk_usage_error(PROG, "no IMAGE given");
		return -EINVAL;
	}
	return 0;
}

static int run_main(int argc, char **argv)
{
	struct fk_volume_opts vo;
	struct fk_diag diag = {0};
	struct ls ls;
	char *image = NULL;
	int err, i, nargs;

	memset(&vo, 0, sizeof(vo));
	memset(&ls, 0, sizeof(ls));
	ls.o.progress = -1;
	vo.batch_len = 0; /* a reader holds nothing dirty */
	vo.is_cut_ok = 1; /* a truncated dump: list what it holds */
	if ((err = parse_args(argc, argv, &ls.o, &vo)))
		return err > 0 ? FK_EXIT_OK : FK_EXIT_USAGE;
	if (fk_cli_image(PROG, argv[optind], &vo.dev, &image))
		return FK_EXIT_USAGE;
	ls.image = argv[optind];
	/* A listing on the terminal is its own progress. */
	if (ls.o.progress < 0)
		ls.o.progress = isatty(STDERR_FILENO) && !isatty(STDOUT_FILENO);
	ls.t0 = ls.last = now();
	for (i = optind + 1; i < argc; i++)
		if (argv[i][0] != '/') {
			fk_usage_error(PROG, "path '%s' is not absolute",
				       argv[i]);
			free(image);
			return FK_EXIT_USAGE;
		}
	if ((err = fk_volume_open(&vo, &ls.vol, &diag))) {
		fk_report_in(PROG, ls.image, &diag, err);
		free(image);
		return FK_EXIT_FAIL;
	}
	ls.fam = ls.vol->fam;
	ls.size_width = size_width(&ls.vol->g);
	if (ls.vol->present_len)
		fprintf(stderr,
			PROG
			": %s: image is truncated: the volume needs %" PRIu64
			" bytes, the image has %" PRIu64
			"; files past its end are named\n",
			ls.image, ls.vol->g.total_secs * ls.vol->g.sec_len,
			ls.vol->present_len);
	warn_boot(&ls);
	if (ls.o.is_recursive) {
		ls.seen_len = ((size_t)fk_clus_max(&ls.vol->g) + 8) / 8;
		if (!(ls.seen = calloc(ls.seen_len, 1))) {
			fk_report(PROG, NULL, -ENOMEM);
			fk_volume_close(ls.vol);
			free(image);
			return FK_EXIT_FAIL;
		}
	}
	nargs = argc - optind - 1;
	fk_json_init(&ls.js, stdout);
	if (ls.o.is_json) {
		fk_cli_json_begun();
		fk_json_object(&ls.js, NULL);
	}
	if (ls.o.show_info)
		print_info(&ls);
	if (ls.o.is_json)
		fk_json_array(&ls.js, "entries");
	if (!ls.o.show_info || nargs)
		for (i = 0; i < (nargs ? nargs : 1); i++)
			list_arg(&ls, nargs ? argv[optind + 1 + i] : "/",
				 nargs);
	clear_progress(&ls);
	if (ls.o.is_json) {
		fk_json_end(&ls.js);
		fk_cli_json_error_member(&ls.js, ls.status);
		fk_json_end(&ls.js);
		fk_json_finish(&ls.js);
	}
	fk_volume_close(ls.vol);
	free(ls.seen);
	free(image);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, PROG ": write error: %s\n", strerror(errno));
		return FK_EXIT_FAIL;
	}
	return ls.status;
}

int main(int argc, char **argv)
{
	fk_cli_json_errors(argc, argv);
	return fk_cli_exit(run_main(argc, argv));
}
