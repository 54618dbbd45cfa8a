/*
 * fatcheck: verify a FAT volume fsck-style and, with -r, apply the safe
 * repairs.  main() parses, runs the checker, prints its findings and a
 * summary, and picks the fsck(8) exit status from what was found.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/check.h"
#include "iface/dirent.h"
#include "io/device.h"
#include "lib/diag.h"
#include "tools/cli.h"
#include "tools/json.h"
#include "volume/family.h"
#include "volume/volume.h"

#define PROG "fatcheck"

/*
 * Signals during a repair run (-r).  Checking writes nothing, so a signal
 * then ends the run at once.  The repairs are short metadata writes that
 * fix one another's findings: a signal once they began lets them all
 * finish (stopping half way could leave what a second run must repair).
 * A handler can reach nothing but these.
 */
static volatile sig_atomic_t caught;	   /* the first signal; 0: none */
static volatile sig_atomic_t is_repairing; /* the first write may come */
static char stop_line[1100];		   /* what an early signal says */
static size_t stop_len;			   /* set before the handler */

static void on_signal(int signo)
{
	static const char msg[] =
		PROG ": signal ignored; finishing the repairs, please wait\n";
	int saved = errno; /* a failed write must not hide the I/O's */
	ssize_t n;

	if (caught) {
		n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
		(void)n;
		errno = saved;
		return;
	}
	caught = signo;
	if (is_repairing) {
		errno = saved;
		return;
	}
	n = write(STDERR_FILENO, stop_line, stop_len);
	(void)n;
	_exit(fk_exit_signal(signo));
}

/* Catch signals for a repair run on @image (IMAGE as typed). */
static void catch_signals(const char *image)
{
	int len = snprintf(stop_line, sizeof(stop_line),
			   PROG ": %s: interrupted; nothing was changed\n",
			   image);

	stop_len = len < 0 ? 0 : (size_t)len;
	if (stop_len >= sizeof(stop_line)) { /* a path past PATH_MAX */
		stop_len = sizeof(stop_line) - 1;
		stop_line[stop_len - 1] = '\n';
	}
	fk_cli_catch_signals(on_signal);
}

struct opts {
	int is_repair;
	int is_read_only; /* -n: refuse any repair option with it */
	int trim_prealloc;
	int salvage;
	int is_strict;
	int is_json;
	int is_verbose;
	int is_quiet;	   /* -q: text output holds only error findings */
	uint32_t fat_copy; /* --fat-copy N (1-based); 0: judged per run */
	int progress;	   /* -1: when stderr is a terminal */
};

struct run {
	struct opts o;
	const char *image; /* IMAGE as given, for volume-level findings */
	struct fk_json js;
	/* progress */
	int is_tty;
	int shown;	   /* a progress line is on the terminal */
	double last;	   /* when it was drawn */
	const char *phase; /* of the last line printed (not a terminal) */
	unsigned last_tenth;
};

/* One source line per line of help, kept as written. */
/* clang-format off */
static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROG " [OPTIONS] IMAGE\n"
		"Check a FAT12/16/32 or exFAT volume fsck-style, and optionally repair it.\n"
		"\n"
		"  -r, --repair        apply safe repairs: resync FAT copies, fix FSInfo,\n"
		"                      free lost clusters, cut chains at a loop or cross-link,\n"
		"                      fix sizes of too-short chains, rename bad or duplicate\n"
		"                      short names, re-attach long names, rebuild . and ..,\n"
		"                      make entries hidden past an end-of-directory marker\n"
		"                      visible; never on a layout fsck.fat gives up on\n"
		"  -a, -p, -y          as -r (fsck(8) option letters)\n"
		"  -n                  read only, the default (for fsck(8) callers)\n"
		"  -f                  accepted and ignored (every check is full); it does not\n"
		"                      force writing: see --force\n"
		"      --salvage       with --repair: save lost chains as files\n"
		"                      /FOUND.000/FILE0000.CHK, ... instead of freeing them\n"
		"                      (FAT12/16/32 only)\n"
		"      --trim-prealloc with --repair: free preallocated tails\n"
		"      --strict        treat preallocated tails as errors (as fsck.fat does)\n"
		"      --fat-copy N    where the FAT copies differ, keep copy N (1-based):\n"
		"                      check the volume as it has it, and with -r rewrite\n"
		"                      the other copy from it (default: per run of\n"
		"                      differing sectors, the copy the directory tree agrees\n"
		"                      with; copy 1 where neither is better)\n"
		"      --json          findings and summary as one JSON document\n"
		"  -q, --quiet         print only findings of error severity (no warnings,\n"
		"                      notes or summary; --json is unchanged)\n"
		"  -v, --verbose       list every file checked\n"
		"      --progress      progress on stderr (default when it is a terminal)\n"
		"      --no-progress   no progress line\n"
		"  -P, --partition N   use partition N (1-based) of an MBR or GPT table\n"
		"      --force         with --repair, write even to a device in use\n"
		"      --wait[=SECONDS]  wait for the image lock (as flock -w; default: fail\n"
		"                      at once when another program holds it)\n"
		"  -h, --help          show this help and exit\n"
		"  -V, --version       show the version and exit\n"
		"\n"
		"IMAGE may be FILE@@OFFSET (mtools convention, e.g. sd.img@@1M).\n"
		"Each finding is a line 'error|warning|note: PATH: message'; a summary ends\n"
		"the report.\n"
		"A dirty flag (a card not cleanly removed) is a warning on FAT and exFAT\n"
		"alike; the rest is checked as usual, so real damage still fails the check.\n"
		"exFAT: also the boot regions and their checksums, entry-set checksums and\n"
		"name hashes, and the allocation bitmap against what the files own (-r\n"
		"rewrites them); PercentInUse and VolumeDirty are warnings. A chain longer\n"
		"than the file is an error there; --strict and --trim-prealloc do nothing,\n"
		"--salvage is refused.\n"
		"Exit status (as fsck): 0 clean, 1 the repair wrote (errors corrected),\n"
		"4 errors left uncorrected,\n"
		"8 operational error, 16 usage error; 128 + N when signal N stopped a\n"
		"repair run.\n");
}
/* clang-format on */

enum {
	OPT_TRIM = 256,
	OPT_SALVAGE,
	OPT_FAT_COPY,
	OPT_STRICT,
	OPT_JSON,
	OPT_FORCE,
};

/* --fat-copy's N: a whole number from 1 (compared with the volume's copies
 * once it is open). */
static int parse_fat_copy(const char *arg, uint32_t *copy)
{
	unsigned long val;
	char *end;

	if (*arg < '0' || *arg > '9')
		return -EINVAL;
	errno = 0;
	val = strtoul(arg, &end, 10);
	if (errno || *end || val < 1 || val > UINT32_MAX)
		return -EINVAL;
	*copy = (uint32_t)val;
	return 0;
}

/* What parse_args() read, judged whole: options that need or exclude
 * another, and the one IMAGE operand. */
static int check_args(int argc, char **argv, const struct opts *o)
{
	if (o->is_read_only && o->is_repair) {
		fk_usage_error(PROG, "-n cannot be combined with -r, -a, -p "
				     "or -y");
		return -EINVAL;
	}
	if (o->trim_prealloc && !o->is_repair) {
		fk_usage_error(PROG, "--trim-prealloc needs --repair");
		return -EINVAL;
	}
	if (o->salvage && !o->is_repair) {
		fk_usage_error(PROG, "--salvage needs --repair");
		return -EINVAL;
	}
	if (optind >= argc) {
		fk_usage_error(PROG, "no IMAGE given");
		return -EINVAL;
	}
	if (optind + 1 < argc) {
		fk_usage_error(PROG, "unexpected argument '%s'",
			       argv[optind + 1]);
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o,
		      struct fk_volume_opts *vo)
{
	static const struct option longs[] = {
		{"repair", no_argument, NULL, 'r'},
		{"trim-prealloc", no_argument, NULL, OPT_TRIM},
		{"salvage", no_argument, NULL, OPT_SALVAGE},
		{"strict", no_argument, NULL, OPT_STRICT},
		{"fat-copy", required_argument, NULL, OPT_FAT_COPY},
		{"json", no_argument, NULL, OPT_JSON},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"partition", required_argument, NULL, 'P'},
		FK_CLI_LONG_OPTS,
		{"force", no_argument, NULL, OPT_FORCE},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}};
	int c, err;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":rapynfqvP:hV", longs, NULL)) !=
	       -1) {
		switch (c) {
		case 'r':
		case 'a': /* fsck(8): repair what is safe, asking nothing */
		case 'p':
		case 'y': /* fsck(8): yes to every question */
			o->is_repair = 1;
			break;
		case 'n':
			o->is_read_only = 1;
			break;
		case 'f':
			/* e2fsck's "check even if clean": every check here
			 * is full.  Never the force to write to a mounted
			 * device, which e2fsck habits would give by accident.
			 */
			break;
		case OPT_TRIM:
			o->trim_prealloc = 1;
			break;
		case OPT_SALVAGE:
			o->salvage = 1;
			break;
		case OPT_STRICT:
			o->is_strict = 1;
			break;
		case OPT_FAT_COPY:
			if (parse_fat_copy(optarg, &o->fat_copy)) {
				fk_usage_error(PROG,
					       "invalid --fat-copy '%s' (a FAT "
					       "copy number: 1 or 2)",
					       optarg);
				return -EINVAL;
			}
			break;
		case OPT_JSON:
			o->is_json = 1;
			break;
		case 'v':
			o->is_verbose = 1;
			break;
		case 'q':
			o->is_quiet = 1;
			break;
		case OPT_FORCE:
			vo->dev.force = 1;
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
	return check_args(argc, argv, o);
}

/* ---- progress and -v ---------------------------------------------------- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void clear_progress(struct run *r)
{
	if (r->shown)
		fprintf(stderr, "\r%*s\r", 40, "");
	r->shown = 0;
}

/* On a terminal, one line redrawn ten times a second; elsewhere a line
 * per tenth of each phase. */
static void on_progress(void *arg, const char *phase, uint64_t done,
			uint64_t total)
{
	struct run *r = arg;
	unsigned pct = total ? (unsigned)(done * 100 / total) : 100;
	double t;

	if (pct > 100)
		pct = 100;
	if (!r->is_tty) {
		if (r->phase != phase) {
			r->phase = phase;
			r->last_tenth = 0;
		}
		if (pct / 10 <= r->last_tenth && pct != 0)
			return;
		r->last_tenth = pct / 10;
		fprintf(stderr, PROG ": %s %u%%\n", phase, pct);
		return;
	}
	t = now();
	if (r->shown && t - r->last < 0.1)
		return;
	r->last = t;
	r->shown = 1;
	fprintf(stderr, "\r" PROG ": checking %s %3u%%", phase, pct);
	fflush(stderr);
}

static void on_visit(void *arg, const char *path, const struct fk_dirent *ent,
		     uint32_t nclus)
{
	struct run *r = arg;
	int is_dir = (ent->attr & FK_ATTR_DIR) != 0;

	if (r->o.is_json) {
		fk_json_object(&r->js, NULL);
		fk_json_str(&r->js, "path", path);
		fk_json_str(&r->js, "type", is_dir ? "directory" : "file");
		fk_json_u64(&r->js, "size", ent->size);
		fk_json_u64(&r->js, "clusters", nclus);
		fk_json_end(&r->js);
		return;
	}
	clear_progress(r);
	if (is_dir)
		printf("checked: %s/ (%" PRIu32 " cluster%s)\n", path, nclus,
		       nclus == 1 ? "" : "s");
	else
		printf("checked: %s (%" PRIu64 " bytes, %" PRIu32
		       " cluster%s)\n",
		       path, ent->size, nclus, nclus == 1 ? "" : "s");
}

/* ---- output -------------------------------------------------------------- */

static const char *path_of(const struct run *r, const struct fk_finding *f)
{
	return f->path ? f->path : r->image;
}

static void print_finding(struct run *r, const struct fk_finding *f,
			  const char *prefix)
{
	/* -q: what a script must act on, nothing else */
	if (r->o.is_quiet && !r->o.is_json && f->sev != FK_SEV_ERROR)
		return;
	if (r->o.is_json) {
		fk_json_object(&r->js, NULL);
		fk_json_str(&r->js, "severity", fk_sev_name(f->sev));
		fk_json_str(&r->js, "code", f->code);
		if (f->path)
			fk_json_str(&r->js, "path", f->path);
		else
			fk_json_null(&r->js, "path");
		fk_json_str(&r->js, "message", f->msg);
		if (f->npaths) { /* the files the message names */
			size_t i;

			fk_json_array(&r->js, "paths");
			for (i = 0; i < f->npaths; i++)
				fk_json_str(&r->js, NULL, f->paths[i]);
			fk_json_end(&r->js);
		}
		if (f->fix)
			fk_json_str(&r->js, "repair", f->fix);
		else
			fk_json_null(&r->js, "repair");
		fk_json_bool(&r->js, "fixed", f->is_fixed);
		if (*prefix)
			fk_json_bool(&r->js, "after_repair", 1);
		fk_json_end(&r->js);
		return;
	}
	printf("%s: %s: %s%s", fk_sev_name(f->sev), path_of(r, f), prefix,
	       f->msg);
	/* Printed before the repair writes: what it is about to do. */
	if (r->o.is_repair && f->fix && !*prefix)
		printf(" (repair: %s)", f->fix);
	printf("\n");
}

/* Is @f (found after repair) one the first check listed as not fixed? */
static int is_known(const struct fk_finding *f, const struct fk_finding *v,
		    size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!v[i].is_fixed && !strcmp(v[i].code, f->code) &&
		    (v[i].path && f->path ? !strcmp(v[i].path, f->path)
					  : v[i].path == f->path))
			return 1;
	return 0;
}

/* The findings of @ck unless @is_printed (text printed before the repair),
 * then the errors @after (the check after the repair) found anew. */
static void print_findings(struct run *r, const struct fk_check *ck,
			   int is_printed, const struct fk_check *after)
{
	const struct fk_finding *v, *w;
	size_t n, m, i;

	v = fk_check_findings(ck, &n);
	if (r->o.is_json)
		fk_json_array(&r->js, "findings");
	for (i = 0; i < n && !is_printed; i++)
		print_finding(r, &v[i], "");
	if (after) {
		w = fk_check_findings(after, &m);
		for (i = 0; i < m; i++)
			if (w[i].sev == FK_SEV_ERROR && !is_known(&w[i], v, n))
				print_finding(r, &w[i], "after repair: ");
	}
	if (r->o.is_json)
		fk_json_end(&r->js);
}

static void count(uint32_t n, const char *one, const char *many)
{
	printf("%" PRIu32 " %s", n, n == 1 ? one : many);
}

/*
 * The summary: what was found (@st, the first check) and the volume as
 * it is now (@now: the check after a repair, else @st again), with the
 * count of fixes when a repair wrote (@is_repaired).
 */
static void print_summary(struct run *r, const struct fk_volume *vol,
			  const struct fk_check_stats *st,
			  const struct fk_check_stats *now, uint32_t remaining,
			  int is_repaired, int status)
{
	const struct fk_geom *g = &vol->g;

	if (r->o.is_json) {
		fk_json_object(&r->js, "summary");
		fk_json_str(&r->js, "fat_type", g->type_name);
		fk_json_u64(&r->js, "files", now->files);
		fk_json_u64(&r->js, "directories", now->dirs);
		fk_json_u64(&r->js, "clusters", g->nclus);
		fk_json_u64(&r->js, "used_clusters", now->used_clus);
		fk_json_u64(&r->js, "free_clusters", now->free_clus);
		fk_json_u64(&r->js, "bad_clusters", now->bad_clus);
		fk_json_u64(&r->js, "lost_clusters", now->lost_clus);
		fk_json_u64(&r->js, "lost_chains", now->lost_chains);
		fk_json_u64(&r->js, "tail_clusters", now->tail_clus);
		fk_json_u64(&r->js, "errors", st->errors);
		fk_json_u64(&r->js, "warnings", st->warnings);
		fk_json_u64(&r->js, "notes", st->notes);
		fk_json_u64(&r->js, "fixed", st->fixed);
		fk_json_bool(&r->js, "repaired", is_repaired);
		fk_json_u64(&r->js, "errors_fixed", st->errors - remaining);
		fk_json_u64(&r->js, "unlisted", st->unlisted);
		fk_json_u64(&r->js, "errors_left", remaining);
		fk_json_u64(&r->js, "exit_status", (uint64_t)status);
		fk_json_end(&r->js);
		return;
	}
	if (r->o.is_quiet)
		return;
	printf("%s: %s, ", r->image, g->type_name);
	count(now->files, "file", "files");
	printf(", ");
	count(now->dirs, "directory", "directories");
	printf(", %" PRIu32 "/%" PRIu32 " clusters used; ", now->used_clus,
	       g->nclus);
	count(st->errors, "error", "errors");
	if (r->o.is_repair && st->errors)
		printf(" (%" PRIu32 " fixed, %" PRIu32 " left)",
		       st->errors - remaining, remaining);
	printf(", ");
	count(st->warnings, "warning", "warnings");
	printf(", ");
	count(st->notes, "note", "notes");
	if (st->unlisted)
		printf(" (%" PRIu32 " not listed)", st->unlisted);
	if (is_repaired) {
		printf("; ");
		count(st->fixed, "fix", "fixes");
		printf(" applied");
		/* What the user lost, and how not to: the default frees
		 * them, as fsck.fat -a does. */
		if (st->freed_chains && !r->o.salvage) {
			printf("; ");
			count(st->freed_chains, "lost chain was",
			      "lost chains were");
			printf(" freed (--salvage would have kept %s)",
			       st->freed_chains == 1 ? "it as a file"
						     : "them as files");
		}
	}
	printf("\n");
}

/* ---- main ---------------------------------------------------------------- */

static int run_check(struct run *r, struct fk_volume *vol, int with_cb,
		     struct fk_check **out, struct fk_diag *diag)
{
	struct fk_check_opts co;
	int err;

	memset(&co, 0, sizeof(co));
	co.is_strict = r->o.is_strict;
	co.trim_prealloc = r->o.trim_prealloc;
	co.salvage = r->o.salvage && with_cb; /* the check after: no plans */
	co.fat_copy = r->o.fat_copy;
	/* A repair looks for every hidden exFAT set, and so does the check
	 * after it: fatprealloc refuses a directory holding one and sends
	 * the user here, lost clusters or not. */
	co.is_thorough = r->o.is_repair;
	co.now = (int64_t)time(NULL);
	co.arg = r;
	if (with_cb && r->o.progress)
		co.progress = on_progress;
	if (with_cb && r->o.is_verbose && (!r->o.is_quiet || r->o.is_json))
		co.visit = on_visit;
	if ((err = fk_check_new(vol, &co, out)))
		return err;
	if ((err = fk_check_run(*out, diag))) {
		fk_check_free(*out);
		*out = NULL;
	}
	clear_progress(r);
	return err;
}

/*
 * A truncated dump (read-only check): one error finding, and nothing
 * else checked, since every structure may reach past the end.  A repair
 * never opens one (the open refuses it), so the image is never written.
 */
static int report_cut(struct run *r, const struct fk_volume *vol)
{
	char msg[256];

	snprintf(msg, sizeof(msg),
		 "image is truncated: the volume needs %" PRIu64
		 " bytes, the image has %" PRIu64
		 "; nothing past its end can be checked or repaired",
		 vol->g.total_secs * vol->g.sec_len, vol->present_len);
	if (!r->o.is_json) {
		printf("error: %s: %s\n", r->image, msg);
		if (!r->o.is_quiet)
			printf("%s: %s, 1 error (not checked further)\n",
			       r->image, vol->g.type_name);
		return FK_FSCK_UNCORRECTED;
	}
	fk_cli_json_begun();
	fk_json_object(&r->js, NULL);
	fk_json_str(&r->js, "image", r->image);
	fk_json_array(&r->js, "findings");
	fk_json_object(&r->js, NULL);
	fk_json_str(&r->js, "severity", "error");
	fk_json_str(&r->js, "code", "truncated");
	fk_json_null(&r->js, "path");
	fk_json_str(&r->js, "message", msg);
	fk_json_null(&r->js, "repair");
	fk_json_bool(&r->js, "fixed", 0);
	fk_json_end(&r->js);
	fk_json_end(&r->js);
	fk_json_object(&r->js, "summary");
	fk_json_str(&r->js, "fat_type", vol->g.type_name);
	fk_json_u64(&r->js, "errors", 1);
	fk_json_u64(&r->js, "exit_status", FK_FSCK_UNCORRECTED);
	fk_json_end(&r->js);
	fk_json_end(&r->js);
	fk_json_finish(&r->js);
	return FK_FSCK_UNCORRECTED;
}

/* Check, repair and check again; the exit status as fsck(8) has it. */
static int check_volume(struct run *r, struct fk_volume *vol)
{
	struct fk_diag diag = {0};
	struct fk_check *ck = NULL, *after = NULL;
	const struct fk_check_stats *st;
	uint32_t remaining;
	uint64_t writes;
	int err, status, is_printed = 0, is_repaired = 0;

	if (r->o.is_json) {
		fk_cli_json_begun();
		fk_json_object(&r->js, NULL);
		fk_json_str(&r->js, "image", r->image);
		if (r->o.is_verbose)
			fk_json_array(&r->js, "files");
	}
	err = run_check(r, vol, 1, &ck, &diag);
	if (r->o.is_json && r->o.is_verbose)
		fk_json_end(&r->js);
	if (err)
		goto fail;
	st = fk_check_stats(ck);
	remaining = st->errors;
	if (r->o.is_repair && st->has_repairs) {
		/* Every finding is out before the first write, so a write
		 * that fails (or a crash) hides nothing that was found. */
		if (!r->o.is_json) {
			print_findings(r, ck, 0, NULL);
			is_printed = 1;
			fflush(stdout);
		}
		/* From here a signal lets the repairs finish; one that came
		 * before (printing can block on a pipe) stops the run. */
		is_repairing = 1;
		if (caught) {
			err = -EINTR;
			fk_diag_set(&diag, r->image,
				    "interrupted; nothing was changed");
			goto fail;
		}
		writes = fk_device_stats(vol->dev)->write_calls;
		if ((err = fk_check_repair(ck, &diag)))
			goto fail;
		is_repaired = fk_device_stats(vol->dev)->write_calls > writes;
		/* The exit status says what is true now, not what was
		 * planned: check again. */
		if (!caught && (err = run_check(r, vol, 0, &after, &diag)))
			goto fail;
		if (caught) {
			err = -EINTR;
			fk_diag_set(&diag, r->image,
				    "interrupted after the first repair write; "
				    "the repairs were completed");
			goto fail;
		}
		remaining = fk_check_stats(after)->errors;
	}
	/* Exit 1 whenever the repair wrote, warnings and notes alike. */
	status = remaining		     ? FK_FSCK_UNCORRECTED
		 : st->errors || is_repaired ? FK_FSCK_CORRECTED
					     : FK_FSCK_CLEAN;
	print_findings(r, ck, is_printed, after);
	print_summary(r, vol, st, after ? fk_check_stats(after) : st, remaining,
		      is_repaired, status);
	if (r->o.is_json) {
		fk_json_end(&r->js);
		fk_json_finish(&r->js);
	}
	fk_check_free(ck);
	fk_check_free(after);
	return status;
fail:
	/* One line on stderr and no report: the check did not finish. */
	fk_report_in(PROG, r->image, &diag, err);
	status = FK_FSCK_OPERATIONAL;
	if (ck && fk_check_stats(ck)->errors)
		status |= FK_FSCK_UNCORRECTED;
	if (err == -EINTR && caught)
		status = fk_exit_signal(caught);
	if (r->o.is_json) { /* still one whole document */
		/* what was found before the failure */
		if (ck)
			print_findings(r, ck, 0, NULL);
		fk_cli_json_error_member(&r->js, status);
		fk_json_end(&r->js);
		fk_json_finish(&r->js);
	}
	fk_check_free(ck);
	return status;
}

static int run_main(int argc, char **argv)
{
	struct fk_volume_opts vo;
	struct fk_diag diag = {0};
	struct fk_volume *vol;
	struct run r;
	char *image = NULL;
	int err, status;

	memset(&vo, 0, sizeof(vo));
	memset(&r, 0, sizeof(r));
	r.o.progress = -1;
	if ((err = parse_args(argc, argv, &r.o, &vo)))
		return err > 0 ? FK_FSCK_CLEAN : FK_FSCK_USAGE;
	if (fk_cli_image(PROG, argv[optind], &vo.dev, &image))
		return FK_FSCK_USAGE;
	r.image = argv[optind];
	r.is_tty = isatty(STDERR_FILENO);
	if (r.o.progress < 0)
		r.o.progress = r.is_tty;
	vo.dev.is_writer = r.o.is_repair;
	vo.is_cut_ok = !r.o.is_repair; /* a repair refuses a truncated dump */
	/* A checker that does not repair holds nothing dirty. */
	vo.batch_len = r.o.is_repair ? 4u << 20 : 0;
	fk_json_init(&r.js, stdout);
	if ((err = fk_check_open(&vo, &vol, &diag))) {
		fk_diag_subject(&diag, r.image);
		fk_report_in(PROG, r.image, &diag, err);
		free(image);
		return FK_FSCK_OPERATIONAL;
	}
	if (r.o.salvage && vol->fam->no_salvage) {
		/* Say why, write nothing (through fk_report_in(), so that
		 * --json says it too). */
		fk_diag_set(&diag, r.image, "%s", vol->fam->no_salvage);
		fk_report_in(PROG, r.image, &diag, -EINVAL);
		fk_volume_close(vol);
		free(image);
		return FK_FSCK_USAGE;
	}
	if (r.o.fat_copy &&
	    (vol->fam->no_fat_copy || r.o.fat_copy > vol->g.nfats)) {
		/* Said before anything is checked, and nothing written. */
		if (vol->fam->no_fat_copy)
			fk_diag_set(&diag, r.image, "%s",
				    vol->fam->no_fat_copy);
		else
			fk_diag_set(&diag, r.image,
				    "--fat-copy %u: the volume has %u FAT "
				    "cop%s (give 1%s)",
				    r.o.fat_copy, vol->g.nfats,
				    vol->g.nfats == 1 ? "y" : "ies",
				    vol->g.nfats == 1 ? " or leave it out"
						      : " or 2");
		fk_report_in(PROG, r.image, &diag, -EINVAL);
		fk_volume_close(vol);
		free(image);
		return FK_FSCK_USAGE;
	}
	if (r.o.is_repair)
		catch_signals(r.image);
	status = vol->present_len ? report_cut(&r, vol) : check_volume(&r, vol);
	fk_volume_close(vol);
	free(image);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, PROG ": write error: %s\n", strerror(errno));
		return status | FK_FSCK_OPERATIONAL;
	}
	return status;
}

int main(int argc, char **argv)
{
	fk_cli_json_errors(argc, argv);
	return fk_cli_exit(run_main(argc, argv));
}
