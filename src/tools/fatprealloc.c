/*
 * fatprealloc: reserve space for files in a FAT12/16/32 or exFAT volume,
 * as util-linux fallocate does on a mounted filesystem, with the whole
 * chain allocated in one batch.  main() parses, asks the core, prints,
 * picks the status.
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

#include "engine/prealloc.h"
#include "iface/dirent.h"
#include "io/cache.h"
#include "lib/diag.h"
#include "mount/mount.h"
#include "tools/cli.h"
#include "tools/json.h"
#include "volume/family.h"
#include "volume/volume.h"

#define PROG	     "fatprealloc"
#define PROGRESS_MIN (64ull << 20) /* zeroing worth a progress line */

/* The first SIGINT, SIGTERM or SIGHUP; 0: none yet.  A handler can
 * reach nothing else. */
static volatile sig_atomic_t caught;

/*
 * The first signal asks the core to stop at its next safe point (it rolls
 * back, or finishes from the commit point on, or cuts a --per-cluster run
 * short after the cluster it is taking).  Later ones are ignored:
 * dying half way through a rollback would leave what it came to undo.
 */
static void on_signal(int signo)
{
	static const char msg[] =
		PROG ": signal ignored; stopping safely, please wait\n";
	int saved = errno; /* a failed write must not hide the I/O's */
	ssize_t n;

	if (!caught) {
		caught = signo;
		return;
	}
	n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)n;
	errno = saved;
}

struct pa_opts {
	struct fk_prealloc_opts core;
	int show_stats;
	int is_json;
	int is_verbose;
	int progress; /* -1: when stderr is a terminal */
};

/* The zeroing progress line. */
struct meter {
	int is_tty;
	int is_forced;	/* --progress: also for short runs */
	int shown;	/* a line is on the terminal */
	unsigned tenth; /* not a terminal: tenths reported */
	struct timespec t0;
	double last; /* seconds since t0 of the last line */
};

/* One source line per line of help, kept as written. */
/* clang-format off */
static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROG " [OPTIONS] IMAGE PATH SIZE [PATH SIZE]...\n"
		"Give each file at least SIZE bytes of allocated clusters in a FAT12/16/32\n"
		"or exFAT volume, without mounting it.  By default the file's size becomes\n"
		"SIZE and the new region reads as zeros.  All pairs are one operation: if\n"
		"any is refused, the image is left unchanged.\n"
		"\n"
		"  -n, --keep-size     reserve only (FALLOC_FL_KEEP_SIZE): size unchanged, no data\n"
		"                      written; see the man page for caveats (refused on exFAT)\n"
		"      --no-zero       do not zero the new region\n"
		"      --lazy          exFAT: raise the size only, keep ValidDataLength (instant;\n"
		"                      some readers mishandle it: see the man page)\n"
		"  -p, --parents       create missing parent directories\n"
		"  -c, --contiguous    new clusters must be one contiguous run\n"
		"      --align SIZE    each new file starts at a device offset that is a\n"
		"                      multiple of SIZE (a power of two, 512 to 1G: an SD\n"
		"                      card's allocation unit, e.g. 4M); with -c the whole\n"
		"                      file is one aligned run\n"
		"  -s, --sync          fsync after every batch flush (like -o sync)\n"
		"      --no-sync       never fsync (default: once before exit)\n"
		"      --batch SIZE    memory bound of dirty FAT data before a flush (default 4M)\n"
		"      --per-cluster   the pre-Linux-7.4 algorithm: one cluster per step, each\n"
		"                      flushed (for comparison benchmarks)\n"
		"      --stats         print what the run cost\n"
		"      --json          stats and resulting files as JSON\n"
		"      --dry-run       plan and report, write nothing\n"
		"  -f, --force         write to a block device even if it is in use, and to\n"
		"                      an exFAT volume not cleanly removed (VolumeDirty)\n"
		"      --wait[=SECONDS]  wait for the image lock (as flock -w; default: fail\n"
		"                      at once when another program holds it)\n"
		"  -v, --verbose       say what is done\n"
		"      --progress      progress of zeroing on stderr (default when it is a\n"
		"                      terminal)\n"
		"      --no-progress   no progress line\n"
		"  -P, --partition N   use partition N (1-based) of an MBR or GPT table\n"
		"  -h, --help          show this help and exit\n"
		"  -V, --version       show the version and exit\n"
		"\n"
		"SIZE: bytes, or with K M G T (KiB MiB GiB TiB; powers of 1024) or KB MB GB TB\n"
		"(powers of 1000); a fraction with a suffix (1.5G) rounds up to whole bytes.\n"
		"IMAGE may be FILE@@OFFSET (e.g. sd.img@@1M).  PATH is absolute; . and ..\n"
		"are resolved by name.\n"
		"Exit status: 0 success, 1 failure, 2 usage error; 128 + N when signal N\n"
		"(SIGINT, SIGTERM, SIGHUP) stopped the run.\n");
}
/* clang-format on */

enum {
	OPT_NO_ZERO = 256,
	OPT_LAZY,
	OPT_NO_SYNC,
	OPT_BATCH,
	OPT_PER_CLUSTER,
	OPT_STATS,
	OPT_JSON,
	OPT_DRY_RUN,
	OPT_ALIGN,
};

static int parse_opt(int c, struct pa_opts *o, struct fk_volume_opts *vo)
{
	uint64_t len;

	switch (c) {
	case 'n':
		o->core.keep_size = 1;
		break;
	case OPT_NO_ZERO:
		o->core.no_zero = 1;
		break;
	case OPT_LAZY:
		o->core.lazy = 1;
		break;
	case 'p':
		o->core.parents = 1;
		break;
	case 'c':
		o->core.contiguous = 1;
		break;
	case 's':
		o->core.sync = FK_SYNC_BATCH;
		break;
	case OPT_NO_SYNC:
		o->core.sync = FK_SYNC_NEVER;
		break;
	case OPT_BATCH:
		if (fk_cli_size(PROG, "--batch size", optarg, &len))
			return -EINVAL;
		if (len < 512 || len > (1ull << 30)) {
			fk_usage_error(PROG,
				       "invalid --batch size '%s' (512 "
				       "bytes to 1G)",
				       optarg);
			return -EINVAL;
		}
		vo->batch_len = (size_t)len;
		break;
	case OPT_ALIGN:
		if (fk_cli_size(PROG, "--align size", optarg, &len))
			return -EINVAL;
		if (len < 512 || len > (1ull << 30) || (len & (len - 1))) {
			fk_usage_error(PROG,
				       "invalid --align size '%s' (a power of "
				       "two from 512 bytes to 1G, such as 4M)",
				       optarg);
			return -EINVAL;
		}
		o->core.align_len = len;
		break;
	case OPT_PER_CLUSTER:
		o->core.per_cluster = 1;
		break;
	case OPT_STATS:
		o->show_stats = 1;
		break;
	case OPT_JSON:
		o->is_json = 1;
		break;
	case OPT_DRY_RUN:
		o->core.dry_run = 1;
		break;
	case 'f':
		vo->dev.force = 1;
		o->core.force = 1;
		break;
	case 'v':
		o->is_verbose = 1;
		o->core.verbose = 1;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct pa_opts *o,
		      struct fk_volume_opts *vo)
{
	static const struct option longs[] = {
		{"keep-size", no_argument, NULL, 'n'},
		{"no-zero", no_argument, NULL, OPT_NO_ZERO},
		{"lazy", no_argument, NULL, OPT_LAZY},
		{"parents", no_argument, NULL, 'p'},
		{"contiguous", no_argument, NULL, 'c'},
		{"sync", no_argument, NULL, 's'},
		{"no-sync", no_argument, NULL, OPT_NO_SYNC},
		{"batch", required_argument, NULL, OPT_BATCH},
		{"per-cluster", no_argument, NULL, OPT_PER_CLUSTER},
		{"align", required_argument, NULL, OPT_ALIGN},
		{"stats", no_argument, NULL, OPT_STATS},
		{"json", no_argument, NULL, OPT_JSON},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"force", no_argument, NULL, 'f'},
		{"verbose", no_argument, NULL, 'v'},
		{"partition", required_argument, NULL, 'P'},
		FK_CLI_LONG_OPTS,
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}};
	int c, err;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":npcsfvP:hV", longs, NULL)) !=
	       -1) {
		const char *word = argv[optind - 1];

		/* getopt takes a negative SIZE for options; in "-1.5G" it
		 * stops at '1' before moving optind past the word. */
		if (c == '?' && optopt >= '0' && optopt <= '9') {
			uint64_t len;

			if (optind < argc && argv[optind][0] == '-' &&
			    argv[optind][1] == optopt)
				word = argv[optind];
			return fk_cli_size(PROG, "size", word, &len);
		}
		err = fk_cli_common_opt(PROG, c, optarg, word, &vo->dev,
					&o->progress, usage);
		if (err == FK_OPT_OTHER)
			err = parse_opt(c, o, vo);
		if (err)
			return err;
	}
	if (o->core.lazy && o->core.no_zero) {
		/* two answers to one question: what ValidDataLength becomes */
		fk_usage_error(PROG, "--lazy cannot be combined with --no-zero "
				     "(--lazy keeps ValidDataLength, --no-zero "
				     "raises it without zeroing)");
		return -EINVAL;
	}
	if (o->core.align_len && o->core.per_cluster) {
		/* the old kernels' algorithm knows no alignment */
		fk_usage_error(PROG, "--align cannot be combined with "
				     "--per-cluster");
		return -EINVAL;
	}
	if (argc - optind >= 2 && (argc - optind) % 2 == 0) {
		/* A PATH has no SIZE (a script's empty variable): name the
		 * first PATH followed by another path or by nothing. */
		int i = optind + 1;

		while (i + 2 < argc && argv[i + 1][0] != '/')
			i += 2;
		fk_usage_error(PROG, "no SIZE after PATH '%s'", argv[i]);
		return -EINVAL;
	}
	if (argc - optind < 3) {
		fk_usage_error(PROG, "expected IMAGE PATH SIZE [PATH SIZE]...");
		return -EINVAL;
	}
	return 0;
}

static void free_pairs(struct fk_prealloc_req *reqs, size_t n)
{
	size_t i;

	for (i = 0; reqs && i < n; i++)
		free((char *)reqs[i].path);
	free(reqs);
}

/*
 * The usage errors of the PATH SIZE pairs, before the image is opened: a
 * size that does not parse, a path that is not absolute.
 */
static int check_pairs(int argc, char **argv)
{
	int i;
	uint64_t len;

	for (i = optind + 1; i + 1 < argc; i += 2) {
		if (fk_cli_size(PROG, "size", argv[i + 1], &len))
			return -EINVAL;
		if (argv[i][0] != '/') {
			fk_usage_error(PROG, "path '%s' is not absolute",
				       argv[i]);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * PATH SIZE pairs from the command line; paths resolved, names checked
 * by the rules of the volume's family (@fam), which the messages name.
 */
static int parse_pairs(int argc, char **argv, const struct fk_family *fam,
		       struct fk_prealloc_req **out, size_t *n)
{
	size_t i, count = (size_t)(argc - optind - 1) / 2;
	struct fk_prealloc_req *reqs = calloc(count, sizeof(*reqs));
	int err = 0;

	if (!reqs) {
		fprintf(stderr, PROG ": %s\n", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (i = 0; i < count && !err; i++) {
		char *path = argv[optind + 1 + 2 * i];
		char *size = argv[optind + 2 + 2 * i];
		char *norm;

		if ((err = fk_cli_size(PROG, "size", size, &reqs[i].len)))
			break;
		if ((err = fk_cli_path(PROG, argv[optind], path, fam, &norm)))
			break;
		reqs[i].path = norm;
	}
	if (err) {
		free_pairs(reqs, count);
		return err;
	}
	*out = reqs;
	*n = count;
	return 0;
}

/* SOURCE_DATE_EPOCH, for reproducible images; else the clock. */
static void pick_time(struct fk_prealloc_opts *o)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	char *end;
	long long v;

	if (s && *s) {
		errno = 0;
		v = strtoll(s, &end, 10);
		if (!errno && !*end && v >= 0) {
			o->now = v;
			o->now_is_utc = 1;
			return;
		}
	}
	o->now = (int64_t)time(NULL);
}

static double seconds_since(const struct timespec *t0);

/* "1.5 GiB": sizes on the progress line, as people read them. */
static void human(uint64_t len, char *out, size_t out_len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)len;
	unsigned u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(out, out_len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void clear_progress(struct meter *m)
{
	if (m->shown)
		fputs("\r\033[K", stderr);
	m->shown = 0;
}

/*
 * Called after each chunk of zeroing (FK_ZERO_CHUNK bytes at most).  On a
 * terminal, one line redrawn at most ten times a second and cleared at the
 * end, as fatcheck does; with --progress elsewhere, a line per tenth.
 */
static void show_progress(void *arg, uint64_t done, uint64_t total)
{
	struct meter *m = arg;
	double t = seconds_since(&m->t0), rate = t > 0 ? (double)done / t : 0;
	unsigned pct = total ? (unsigned)(done * 100 / total) : 100;
	char d[16], all[16], r[16], left[24] = "";

	if (total < PROGRESS_MIN && !m->is_forced)
		return;
	if (!m->is_tty) {
		if (pct / 10 > m->tenth || done == total) {
			m->tenth = pct / 10;
			fprintf(stderr, PROG ": zeroing %u%%\n", pct);
		}
		return;
	}
	if (done == total) {
		clear_progress(m);
		return;
	}
	if (m->shown && t - m->last < 0.1)
		return;
	m->last = t;
	m->shown = 1;
	human(done, d, sizeof(d));
	human(total, all, sizeof(all));
	human((uint64_t)rate, r, sizeof(r));
	if (rate > 0)
		snprintf(left, sizeof(left), ", %.0f s left",
			 (double)(total - done) / rate + 0.5);
	fprintf(stderr, "\r" PROG ": zeroing %s of %s (%u%%), %s/s%s\033[K", d,
		all, pct, r, left);
	fflush(stderr);
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	       (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static const char *action_name(enum fk_file_action a)
{
	return a == FK_FILE_CREATED ? "created"
	       : a == FK_FILE_GROWN ? "grown"
				    : "unchanged";
}

static void print_json(struct fk_volume *vol,
		       const struct fk_prealloc_result *res, double secs,
		       int is_dry)
{
	const struct fk_io_stats *io = fk_device_stats(vol->dev);
	const struct fk_cache_stats *cs = fk_cache_stats(vol->fat);
	uint64_t base = fk_device_base(vol->dev);
	uint32_t clus_len = vol->g.clus_len;
	struct fk_json js;
	size_t i;

	fk_json_init(&js, stdout);
	fk_json_object(&js, NULL);
	fk_json_bool(&js, "dry_run", is_dry);
	fk_json_object(&js, "stats");
	fk_json_u64(&js, "clusters", res->new_clus);
	fk_json_u64(&js, "fragments", res->new_frags);
	fk_json_u64(&js, "directories_created", res->dirs_created);
	fk_json_u64(&js, "fat_sectors_written", cs->secs_written);
	if (vol->fam->has_bitmap)
		fk_json_u64(&js, "bitmap_sectors_written", res->bitmap_secs);
	fk_json_u64(&js, "fat_flushes", cs->flushes);
	fk_json_u64(&js, "write_calls", io->write_calls);
	fk_json_u64(&js, "bytes_written", io->bytes_written);
	fk_json_u64(&js, "zero_calls", io->zero_calls);
	fk_json_u64(&js, "bytes_zeroed", io->bytes_zeroed);
	fk_json_u64(&js, "fsyncs", io->fsyncs);
	fk_json_double(&js, "seconds", secs);
	fk_json_end(&js);
	fk_json_array(&js, "files");
	for (i = 0; i < res->nfiles; i++) {
		const struct fk_prealloc_file *f = &res->files[i];

		fk_json_object(&js, NULL);
		fk_json_str(&js, "path", f->path);
		fk_json_str(&js, "action", action_name(f->action));
		fk_json_u64(&js, "old_size", f->old_size);
		fk_json_u64(&js, "size", f->size);
		fk_json_u64(&js, "allocated",
			    (uint64_t)f->chain.nclus * clus_len);
		fk_json_u64(&js, "first_cluster", f->first_clus);
		fk_json_u64(&js, "clusters", f->chain.nclus);
		fk_json_u64(&js, "new_clusters", f->new_clus);
		fk_json_u64(&js, "fragments", f->chain.nruns);
		fk_json_runs(&js, &vol->g, base, fk_device_disk_off(vol->dev),
			     f->chain.runs, f->chain.nruns);
		fk_json_end(&js);
	}
	fk_json_end(&js);
	fk_json_end(&js);
	fk_json_finish(&js);
}

static void print_stats(struct fk_volume *vol,
			const struct fk_prealloc_result *res, double secs)
{
	const struct fk_io_stats *io = fk_device_stats(vol->dev);
	const struct fk_cache_stats *cs = fk_cache_stats(vol->fat);

	printf("clusters: %" PRIu32 "\n", res->new_clus);
	printf("fragments: %" PRIu32 "\n", res->new_frags);
	printf("fat sectors written: %" PRIu64 "\n", cs->secs_written);
	if (vol->fam->has_bitmap)
		printf("bitmap sectors written: %" PRIu64 "\n",
		       res->bitmap_secs);
	printf("write calls: %" PRIu64 "\n", io->write_calls);
	printf("bytes written: %" PRIu64 "\n", io->bytes_written);
	printf("bytes zeroed: %" PRIu64 "\n", io->bytes_zeroed);
	printf("fsyncs: %" PRIu64 "\n", io->fsyncs);
	printf("seconds: %.6f\n", secs);
}

/*
 * @path as the volume spells it ("/DCIM/Clip.MP4" for a typed
 * "/dcim/clip.mp4"), each component looked up; @path itself where a
 * component is not there (a --dry-run that would create it).
 */
static void stored_path(struct fk_volume *vol, const char *path, char *out,
			size_t len)
{
	char prefix[1024];
	struct fk_dirent ent;
	size_t o = 0, n = strlen(path);
	const char *p = path;

	if (n >= sizeof(prefix))
		goto typed;
	while (*p == '/' && p[1]) {
		const char *end = strchr(p + 1, '/');
		size_t k = end ? (size_t)(end - path) : n;

		memcpy(prefix, path, k);
		prefix[k] = '\0';
		if (fk_dir_lookup(vol, prefix, &ent, NULL) ||
		    o + 1 + strlen(ent.name) + 1 > len)
			goto typed;
		o += (size_t)snprintf(out + o, len - o, "/%s", ent.name);
		p = path + k;
	}
	if (o)
		return;
typed:
	snprintf(out, len, "%s", path);
}

static void print_verbose(struct fk_volume *vol, FILE *out,
			  const struct fk_prealloc_result *res, int is_dry,
			  int is_lazy)
{
	static const char *const done[] = {"unchanged", "created", "grown"};
	static const char *const plan[] = {"would leave unchanged",
					   "would create", "would grow"};
	size_t i;

	for (i = 0; i < res->nfiles; i++) {
		const struct fk_prealloc_file *f = &res->files[i];
		char name[1024];

		stored_path(vol, f->path, name, sizeof(name));
		fprintf(out,
			"%s %s: size %" PRIu64 " -> %" PRIu64 ", %" PRIu32
			" new cluster%s, %zu fragment%s\n",
			(is_dry ? plan : done)[f->action], name, f->old_size,
			f->size, f->new_clus, f->new_clus == 1 ? "" : "s",
			f->chain.nruns, f->chain.nruns == 1 ? "" : "s");
		/* --lazy: say what readers will see as data */
		if (is_lazy && f->action != FK_FILE_UNCHANGED)
			fprintf(out,
				"  ValidDataLength %s at %" PRIu64
				" (bytes past it read as zeros)\n",
				is_dry ? "would be kept" : "kept",
				f->valid_len);
	}
}

/* -v and --dry-run: the directories -p creates, then the files. */
static void print_plan(struct fk_volume *vol, const struct pa_opts *o,
		       const struct fk_prealloc_result *res)
{
	uint32_t i;

	for (i = 0; i < res->dirs_created; i++)
		printf("%s directory %s\n",
		       o->core.dry_run ? "would create" : "created",
		       res->dirs[i]);
	print_verbose(vol, stdout, res, o->core.dry_run, o->core.lazy);
}

static int run_main(int argc, char **argv)
{
	struct fk_prealloc_result res;
	struct fk_prealloc_req *reqs = NULL;
	struct fk_diag diag = {0};
	struct fk_volume_opts vo;
	struct fk_volume *vol;
	struct meter meter;
	struct pa_opts o;
	char *image = NULL;
	int err, status = FK_EXIT_OK;
	size_t n = 0;

	memset(&vo, 0, sizeof(vo));
	memset(&o, 0, sizeof(o));
	memset(&meter, 0, sizeof(meter));
	o.core.sync = FK_SYNC_END;
	o.progress = -1;
	vo.batch_len = 4u << 20;
	/* The exFAT writer walks the chains of the bitmap, the up-case
	 * table and the directories on its paths: a page at a time (the
	 * links of 1024 clusters), more while a walk goes on, not 64 KiB
	 * spans of FAT; the first three are read together, as far as they
	 * reach (fk_cache_want_span()). */
	vo.fat_read_len = 4096;
	vo.is_main_boot_only = 1; /* the backup boot region is not its */
	if ((err = parse_args(argc, argv, &o, &vo)))
		return err > 0 ? FK_EXIT_OK : FK_EXIT_USAGE;
	if (fk_cli_image(PROG, argv[optind], &vo.dev, &image))
		return FK_EXIT_USAGE;
	if (check_pairs(argc, argv)) {
		free(image);
		return FK_EXIT_USAGE;
	}
	pick_time(&o.core);
	o.core.image = argv[optind];
	meter.is_tty = isatty(STDERR_FILENO);
	meter.is_forced = o.progress == 1;
	if (o.progress < 0 ? meter.is_tty : o.progress) {
		o.core.progress = show_progress;
		o.core.progress_arg = &meter;
	}
	vo.dev.is_writer = !o.core.dry_run;
	o.core.batch_len = vo.batch_len;
	clock_gettime(CLOCK_MONOTONIC, &meter.t0);
	if ((err = fk_volume_open(&vo, &vol, &diag))) {
		fk_report_in(PROG, argv[optind], &diag, err);
		status = FK_EXIT_FAIL;
		goto out_free;
	}
	/* a name the volume refuses is refused as mkdir(1) refuses it */
	if ((err = parse_pairs(argc, argv, vol->fam, &reqs, &n))) {
		status = err == -EILSEQ || err == -ENOMEM ? FK_EXIT_FAIL
							  : FK_EXIT_USAGE;
		fk_volume_close(vol);
		goto out_free;
	}
	if (!o.core.dry_run) {
		o.core.stop = &caught;
		fk_cli_catch_signals(on_signal);
	}
	err = fk_prealloc(vol, reqs, n, &o.core, &res, &diag);
	clear_progress(&meter);
	if (err) {
		fk_report_in(PROG, argv[optind], &diag, err);
		status = err == -EINTR && caught ? fk_exit_signal(caught)
						 : FK_EXIT_FAIL;
	} else if (o.is_json) {
		print_json(vol, &res, seconds_since(&meter.t0), o.core.dry_run);
	} else {
		if (o.is_verbose || o.core.dry_run)
			print_plan(vol, &o, &res);
		if (o.show_stats)
			print_stats(vol, &res, seconds_since(&meter.t0));
	}
	/* A signal after the core's last look: the run is done anyway. */
	if (!err && caught)
		status = fk_exit_signal(caught);
	fk_prealloc_result_free(&res);
	fk_volume_close(vol);
out_free:
	free_pairs(reqs, n);
	free(image);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, PROG ": write error: %s\n", strerror(errno));
		return FK_EXIT_FAIL;
	}
	return status;
}

int main(int argc, char **argv)
{
	fk_cli_json_errors(argc, argv);
	return fk_cli_exit(run_main(argc, argv));
}
