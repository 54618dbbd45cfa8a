/*
 * cli.c: sizes, IMAGE@@OFFSET, version text, usage errors and the
 * writers' signal set-up.
 */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "diag.h"

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

int fk_parse_size(const char *arg, uint64_t *len)
{
	unsigned long long num;
	char *end;
	uint64_t mult = 1;
	size_t i;

	if (!arg || *arg < '0' || *arg > '9')
		return -EINVAL; /* rejects "", "-1", " 1", "+1" */
	errno = 0;
	num = strtoull(arg, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (!strcasecmp(end, suffixes[i].name))
			break;
	if (i == sizeof(suffixes) / sizeof(suffixes[0]))
		return -EINVAL;
	if (suffixes[i].exp10)
		for (unsigned e = 0; e < suffixes[i].exp10; e++)
			mult *= 10;
	else
		mult = (uint64_t)1 << suffixes[i].shift;
	if (num > UINT64_MAX / mult)
		return -ERANGE;
	*len = num * mult;
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

int fk_cli_image(const char *prog, const char *arg, struct fk_device_opts *dev,
		 char **owned)
{
	int has_off, err;

	if ((err = fk_parse_image(arg, owned, &dev->off, &has_off))) {
		if (err == -ENOMEM)
			fprintf(stderr, "%s: %s\n", prog, strerror(ENOMEM));
		else
			fk_usage_error(prog, "invalid image offset in '%s'",
				       arg);
		return err;
	}
	dev->path = *owned;
	dev->has_off = has_off;
	return 0;
}

int fk_cli_common_opt(const char *prog, int c, const char *arg,
		      const char *word, struct fk_device_opts *dev,
		      void (*usage)(FILE *out))
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
		fk_print_version(prog);
		return FK_OPT_EXIT;
	case ':':
		fk_usage_error(prog, "option '%s' needs an argument", word);
		return -EINVAL;
	case '?':
		fk_usage_error(prog, "unknown option '%s'", word);
		return -EINVAL;
	}
	return FK_OPT_OTHER;
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

void fk_print_version(const char *prog)
{
	printf("%s (fatkit) %s\n", prog, FK_VERSION);
}

void fk_usage_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try '%s --help')\n", prog);
}

void fk_report(const char *prog, const struct fk_diag *diag, int err)
{
	char reason[sizeof(diag->reason) + 128];

	fk_diag_reason(diag, err, reason, sizeof(reason));
	if (diag && diag->what[0])
		fprintf(stderr, "%s: %s: %s\n", prog, diag->what, reason);
	else
		fprintf(stderr, "%s: %s\n", prog, reason);
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
	for (i = 0; i < sizeof(signos) / sizeof(signos[0]); i++)
		sigaction(signos[i], &sa, NULL);
}
