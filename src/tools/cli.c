/*
 * cli.c: sizes, IMAGE@@OFFSET, version text, usage errors (also as JSON
 * for --json) and the writers' signal set-up.
 */
#define _GNU_SOURCE /* strerrorname_np() */
#include "tools/cli.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/diag.h"
#include "lib/names.h"
#include "tools/json.h"
#include "volume/family.h"

/*
 * --json: the first error line of the run, kept for fk_cli_exit().  The
 * programs' one piece of state outside main(): fk_report_in() and
 * fk_usage_error() are called from every layer of option and argument
 * handling, and each run prints at most one document.
 */
static struct {
	int is_on;    /* the run has --json */
	int is_begun; /* the program began its own document */
	int has_err;
	int errnum;	/* positive errno; 0 for a usage error */
	char code[32];	/* "ENOSPC", or "usage" */
	char msg[2048]; /* the stderr line without "PROGRAM: " */
} json_err;

static void keep_error(const char *code, int errnum, const char *msg)
{
	if (!json_err.is_on || json_err.has_err)
		return;
	json_err.has_err = 1;
	json_err.errnum = errnum;
	snprintf(json_err.code, sizeof(json_err.code), "%s", code);
	snprintf(json_err.msg, sizeof(json_err.msg), "%s", msg);
}

void fk_cli_json_errors(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			json_err.is_on = 1;
}

void fk_cli_json_begun(void)
{
	json_err.is_begun = 1;
}

static void put_error(struct fk_json *js, int status)
{
	fk_json_object(js, "error");
	fk_json_str(js, "code", json_err.code);
	fk_json_u64(js, "errno", (uint64_t)json_err.errnum);
	fk_json_str(js, "message", json_err.msg);
	fk_json_u64(js, "exit_status", (uint64_t)status);
	fk_json_end(js);
}

void fk_cli_json_error_member(struct fk_json *js, int status)
{
	if (json_err.has_err && status)
		put_error(js, status);
}

int fk_cli_exit(int status)
{
	struct fk_json js;

	if (!json_err.is_on || json_err.is_begun || !json_err.has_err ||
	    !status)
		return status;
	fk_json_init(&js, stdout);
	fk_json_object(&js, NULL);
	put_error(&js, status);
	fk_json_end(&js);
	fk_json_finish(&js);
	if (fflush(stdout) || ferror(stdout))
		fprintf(stderr, "write error: %s\n", strerror(errno));
	return status;
}

struct suffix {
	const char *name;
	unsigned shift; /* power of 1024 ... */
	unsigned exp10; /* ... or power of 1000 */
};

/* util-linux fallocate -l rules: binary unless the suffix says "B" alone. */
static const struct suffix suffixes[] = {
	{"", 0, 0},	{"K", 10, 0},	{"M", 20, 0},	{"G", 30, 0},
	{"T", 40, 0},	{"KiB", 10, 0}, {"MiB", 20, 0}, {"GiB", 30, 0},
	{"TiB", 40, 0}, {"KB", 0, 3},	{"MB", 0, 6},	{"GB", 0, 9},
	{"TB", 0, 12},
};

/*
 * ceil(@frac / @den * @mult) for @frac < @den <= 10^18, without a 128-bit
 * type: Horner over the bits of @mult, keeping the quotient and the
 * remainder (below @den, so 2 * rem + frac stays under 2^63).
 */
static uint64_t scale_fraction(uint64_t frac, uint64_t den, uint64_t mult)
{
	uint64_t quot = 0, rem = 0;
	int bit;

	for (bit = 63; bit >= 0; bit--) {
		quot <<= 1;
		rem <<= 1;
		if (mult >> bit & 1)
			rem += frac;
		while (rem >= den) {
			rem -= den;
			quot++;
		}
	}
	return quot + (rem != 0);
}

/*
 * Digits after a '.': at most 18, so that 10^digits fits.  Returns the
 * end of them, or NULL for none or too many.
 */
static const char *parse_fraction(const char *s, uint64_t *frac, uint64_t *den)
{
	const char *p = s;

	*frac = 0;
	*den = 1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (p - s == 18)
			return NULL;
		*frac = *frac * 10 + (uint64_t)(*p - '0');
		*den *= 10;
	}
	return p == s ? NULL : p;
}

int fk_parse_size(const char *arg, uint64_t *len)
{
	unsigned long long num;
	uint64_t mult = 1, frac = 0, den = 1, part;
	const char *end;
	char *num_end;
	size_t i;

	if (!arg || *arg < '0' || *arg > '9')
		return -EINVAL; /* rejects "", "-1", " 1", "+1", ".5" */
	errno = 0;
	num = strtoull(arg, &num_end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	end = num_end;
	if (*end == '.' && !(end = parse_fraction(end + 1, &frac, &den)))
		return -EINVAL;
	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (!strcasecmp(end, suffixes[i].name))
			break;
	if (i == sizeof(suffixes) / sizeof(suffixes[0]))
		return -EINVAL;
	/* fallocate -l takes 1.5G; a fraction of a plain byte means nothing */
	if (den > 1 && !*end)
		return -EINVAL;
	if (suffixes[i].exp10)
		for (unsigned e = 0; e < suffixes[i].exp10; e++)
			mult *= 10;
	else
		mult = (uint64_t)1 << suffixes[i].shift;
	if (num > UINT64_MAX / mult)
		return -ERANGE;
	/* The fraction rounds up to a whole byte, as fallocate does. */
	part = frac ? scale_fraction(frac, den, mult) : 0;
	if (num * mult > UINT64_MAX - part)
		return -ERANGE;
	*len = num * mult + part;
	return 0;
}

int fk_parse_image(const char *arg, char **path, uint64_t *off, int *has_off)
{
	const char *at = strstr(arg, "@@");
	uint64_t val = 0;
	char *copy;
	int err;

	if (at) {
		if ((err = fk_parse_size(at + 2, &val)))
			return err;
		copy = strndup(arg, (size_t)(at - arg));
	} else {
		copy = strdup(arg);
	}
	if (!copy)
		return -ENOMEM;
	if (!*copy) {
		free(copy);
		return -EINVAL;
	}
	*path = copy;
	*off = val;
	*has_off = at != NULL;
	return 0;
}

/* The fatcheck arguments that reach the volume again, for the hints
 * (fk_cli_image() sets them): "sd.img", "-P 2 sd.img". */
static char *hint_args;

int fk_cli_image(const char *prog, const char *arg, struct fk_device_opts *dev,
		 char **owned)
{
	int has_off, err;

	if ((err = fk_parse_image(arg, owned, &dev->off, &has_off))) {
		if (err == -ENOMEM)
			fprintf(stderr, "%s: %s\n", prog, strerror(ENOMEM));
		else
			fk_usage_error(
				prog,
				"invalid image offset in '%s': " FK_SIZE_FORMS,
				arg);
		return err;
	}
	if (has_off && dev->partition) {
		fk_usage_error(prog,
			       "-P %d and '%s' both choose the volume; give "
			       "one of them",
			       dev->partition, arg);
		free(*owned);
		*owned = NULL;
		return -EINVAL;
	}
	dev->path = *owned;
	dev->has_off = has_off;
	free(hint_args);
	if (!(hint_args = malloc(strlen(arg) + 32)))
		return 0;   /* the hints say IMAGE */
	if (dev->partition) /* the hints must name the same partition */
		sprintf(hint_args, "-P %d %s", dev->partition, arg);
	else
		strcpy(hint_args, arg);
	return 0;
}

int fk_cli_size(const char *prog, const char *what, const char *arg,
		uint64_t *len)
{
	int err = fk_parse_size(arg, len);

	if (err)
		fk_usage_error(prog, "invalid %s '%s'%s: " FK_SIZE_FORMS, what,
			       arg,
			       arg[0] == '-'	? " (negative)"
			       : err == -ERANGE ? " (too large)"
						: "");
	return err;
}

int fk_path_normalise(const char *in, char *out, size_t len)
{
	const char *p = in;
	size_t o = 0, n;
	int is_dir_form = 0;

	if (*p != '/')
		return -EINVAL;
	if (len < 2)
		return -ENAMETOOLONG;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		n = strcspn(p, "/");
		is_dir_form = p[n] == '/';
		if (n == 1 && p[0] == '.') {
			is_dir_form = 1;
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			/* The root is its own parent, as in POSIX. */
			while (o > 0 && out[--o] != '/')
				;
			is_dir_form = 1;
		} else {
			if (o + 1 + n + 2 > len)
				return -ENAMETOOLONG;
			out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
	}
	if (!o || is_dir_form)
		out[o++] = '/';
	out[o] = '\0';
	return 0;
}

/*
 * "FAT names ..." as the rule reads in family @name: "exFAT names ...",
 * with "a" before a consonant and "an" before a vowel.
 */
static void say_family(char *why, size_t len, const char *name)
{
	char out[256];
	const char *p = why;
	size_t o = 0, n = strlen(name);
	int is_an = strchr("aeiouAEIOU", name[0]) != NULL;

	while (*p && o + n + 8 < sizeof(out)) {
		int has_a = !strncmp(p, "a FAT name", 10);

		if (has_a || !strncmp(p, "FAT name", 8)) {
			if (has_a)
				o += (size_t)snprintf(out + o, sizeof(out) - o,
						      "%s ",
						      is_an ? "an" : "a");
			o += (size_t)snprintf(out + o, sizeof(out) - o,
					      "%s name", name);
			p += has_a ? 10 : 8;
		} else {
			out[o++] = *p++;
		}
	}
	out[o] = '\0';
	if (o >= len)
		o = len - 1;
	memcpy(why, out, o);
	why[o] = '\0';
}

int fk_cli_path(const char *prog, const char *image, const char *arg,
		const struct fk_family *fam, char **out)
{
	size_t len = strlen(arg) + 2;
	char why[128] = "name too long", comp[FK_NAME_MAX];
	const char *p;
	char *path;
	int err;

	if (arg[0] != '/') {
		fk_usage_error(prog, "path '%s' is not absolute", arg);
		return -EINVAL;
	}
	if (!(path = malloc(len))) {
		fk_report(prog, NULL, -ENOMEM);
		return -ENOMEM;
	}
	err = fk_path_normalise(arg, path, len);
	for (p = path; !err && *p;) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			break;
		if (n >= sizeof(comp)) {
			snprintf(why, sizeof(why), "%s",
				 "FAT names are at most 255 UTF-16 units long");
			err = -ENAMETOOLONG;
			break;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		err = fk_name_explain(comp, why, sizeof(why));
		p += n;
	}
	if (err) {
		struct fk_diag diag;

		say_family(why, sizeof(why), fam->name);
		memset(&diag, 0, sizeof(diag));
		fk_diag_set(&diag, arg, "%s", why);
		fk_report_in(prog, image, &diag, -EILSEQ);
		free(path);
		return -EILSEQ;
	}
	*out = path;
	return 0;
}

/* `PROGRAM (fatkit) VERSION` on stdout. */
static void print_version(const char *prog)
{
	printf("%s (fatkit) %s\n", prog, FK_VERSION);
}

int fk_cli_common_opt(const char *prog, int c, const char *arg,
		      const char *word, struct fk_device_opts *dev,
		      int *progress, void (*usage)(FILE *out))
{
	switch (c) {
	case 'P':
		if (fk_parse_partition(arg, &dev->partition)) {
			fk_usage_error(prog, "invalid partition number '%s'",
				       arg);
			return -EINVAL;
		}
		return FK_OPT_DONE;
	case 'h':
		usage(stdout);
		return FK_OPT_EXIT;
	case 'V':
		print_version(prog);
		return FK_OPT_EXIT;
	case FK_CLI_OPT_WAIT:
		dev->wait_ms = -1; /* --wait alone: as long as it takes */
		if (arg && fk_parse_wait(arg, &dev->wait_ms)) {
			fk_usage_error(prog,
				       "invalid --wait '%s' (seconds, such "
				       "as 10 or 0.5)",
				       arg);
			return -EINVAL;
		}
		return FK_OPT_DONE;
	case FK_CLI_OPT_PROGRESS:
	case FK_CLI_OPT_NO_PROGRESS:
		*progress = c == FK_CLI_OPT_PROGRESS;
		return FK_OPT_DONE;
	case ':':
		fk_usage_error(prog, "option '%s' needs an argument", word);
		return -EINVAL;
	case '?':
		fk_usage_error(prog, "unknown option '%s'", word);
		return -EINVAL;
	}
	return FK_OPT_OTHER;
}

int fk_parse_wait(const char *arg, long long *ms)
{
	uint64_t frac, den;
	unsigned long long secs;
	const char *end;
	char *num_end;

	if (*arg < '0' || *arg > '9')
		return -EINVAL;
	errno = 0;
	secs = strtoull(arg, &num_end, 10);
	if (errno || secs > 1000000000ull) /* about 30 years */
		return -EINVAL;
	end = num_end;
	frac = 0;
	den = 1;
	if (*end == '.' && !(end = parse_fraction(end + 1, &frac, &den)))
		return -EINVAL;
	if (*end)
		return -EINVAL;
	*ms = (long long)(secs * 1000 + scale_fraction(frac, den, 1000));
	return 0;
}

int fk_parse_partition(const char *arg, int *num)
{
	char *end;
	long val;

	if (!arg || *arg < '0' || *arg > '9')
		return -EINVAL;
	errno = 0;
	val = strtol(arg, &end, 10);
	if (errno || *end || val < 1 || val > 256)
		return -EINVAL;
	*num = (int)val;
	return 0;
}

void fk_usage_error(const char *prog, const char *fmt, ...)
{
	char msg[1024];
	size_t len;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	len = strlen(msg);
	snprintf(msg + len, sizeof(msg) - len, " (try '%s --help')", prog);
	fprintf(stderr, "%s: %s\n", prog, msg);
	keep_error("usage", 0, msg);
}

/*
 * Is @what a path inside the volume rather than IMAGE itself?  Inner
 * layers name volume paths ("/VIDEO"); the device names the image file,
 * which may be absolute too, alone or with the @@OFFSET it was opened at.
 */
static int is_volume_path(const char *what, const char *image)
{
	const char *at = strstr(image, "@@");
	size_t n = at ? (size_t)(at - image) : strlen(image);

	if (!strncmp(what, image, n) &&
	    (!what[n] || !strncmp(what + n, "@@", 2)))
		return 0;
	return what[0] == '/';
}

/* @diag's reason, followed by what to run about the damage it flags. */
static void reason_hinted(const struct fk_diag *diag, int err, char *buf,
			  size_t len)
{
	const char *args = hint_args ? hint_args : "IMAGE";
	struct fk_diag d;

	if (!diag || diag->hint == FK_HINT_NONE) {
		fk_diag_reason(diag, err, buf, len);
		return;
	}
	d = *diag;
	if (d.hint == FK_HINT_CHECK)
		fk_diag_append(&d, err, "; run fatcheck");
	else
		fk_diag_append(&d, err, "%s run 'fatcheck -r %s'",
			       d.hint == FK_HINT_REPAIR_LOST ? ":" : ";", args);
	fk_diag_reason(&d, err, buf, len);
}

void fk_report_in(const char *prog, const char *image,
		  const struct fk_diag *diag, int err)
{
	const char *what = diag && diag->what[0] ? diag->what : NULL;
	char reason[sizeof(diag->reason) + 128];
	char line[sizeof(reason) + sizeof(diag->what) + 256];
	const char *name = strerrorname_np(err < 0 ? -err : err);

	reason_hinted(diag, err, reason, sizeof(reason));
	if (what && image && is_volume_path(what, image))
		snprintf(line, sizeof(line), "%s:%s: %s", image, what, reason);
	else if (what)
		snprintf(line, sizeof(line), "%s: %s", what, reason);
	else
		snprintf(line, sizeof(line), "%s", reason);
	fprintf(stderr, "%s: %s\n", prog, line);
	keep_error(name ? name : "EIO", err < 0 ? -err : err, line);
}

void fk_report(const char *prog, const struct fk_diag *diag, int err)
{
	fk_report_in(prog, NULL, diag, err);
}

void fk_cli_catch_signals(void (*handler)(int signo))
{
	static const int signos[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler ? handler : SIG_DFL;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(signos) / sizeof(signos[0]); i++)
		sigaddset(&sa.sa_mask, signos[i]);
	for (i = 0; i < sizeof(signos) / sizeof(signos[0]); i++) {
		struct sigaction old;

		/* A signal the caller ignores (nohup, trap '' INT) stays
		 * ignored, as shells and coreutils leave it. */
		if (!sigaction(signos[i], NULL, &old) &&
		    old.sa_handler == SIG_IGN)
			continue;
		sigaction(signos[i], &sa, NULL);
	}
}
