/*
 * cli.h: what the three programs share on the command line: sizes,
 * IMAGE@@OFFSET, version text and exit codes.  Touches no volume.
 */
#ifndef FATKIT_CLI_H
#define FATKIT_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "io/device.h"

struct fk_family;

struct fk_diag;
struct fk_json;

/* Exit codes of fatprealloc and fatls (fatkit(7), EXIT STATUS). */
enum fk_exit {
	FK_EXIT_OK = 0,
	FK_EXIT_FAIL = 1,
	FK_EXIT_USAGE = 2,
};

/* Exit codes of fatcheck, as fsck(8); they combine with '|'. */
enum fk_fsck_exit {
	FK_FSCK_CLEAN = 0,
	FK_FSCK_CORRECTED = 1,
	FK_FSCK_UNCORRECTED = 4,
	FK_FSCK_OPERATIONAL = 8,
	FK_FSCK_USAGE = 16,
};

/*
 * Parse a size as util-linux does: plain bytes, K M G T (or KiB...) as
 * powers of 1024, KB MB GB TB as powers of 1000.  Returns 0 and sets
 * *@len, or -EINVAL (garbage, negative) or -ERANGE (overflow).
 */
int fk_parse_size(const char *arg, uint64_t *len);

/* What a size may look like, for messages. */
#define FK_SIZE_FORMS                                                          \
	"sizes are bytes, or a number with K M G T (KiB MiB GiB TiB: "         \
	"powers of 1024) or KB MB GB TB (powers of 1000), such as 4096, "      \
	"64M or 1.5G"

/*
 * fk_parse_size() for the program: on a refusal print one usage line that
 * names @what ("size", "--batch size") and lists the accepted forms.
 */
int fk_cli_size(const char *prog, const char *what, const char *arg,
		uint64_t *len);

/*
 * Resolve "." and ".." in absolute path @in by name, as `realpath -m`
 * does (FAT has no symbolic links; the root is its own parent) and
 * collapse repeated slashes.  A trailing slash, "." or ".." keeps one
 * trailing slash: the path names a directory.  @out (@len bytes; strlen
 * (@in) + 2 always suffice) gets the result.  Returns 0, -EINVAL (not
 * absolute) or -ENAMETOOLONG.
 */
int fk_path_normalise(const char *in, char *out, size_t len);

/*
 * A PATH argument for the program: absolute (else a usage line), "." and
 * ".." resolved by fk_path_normalise(), and every component a name FAT
 * allows (else one line `PROG: IMAGE:PATH: rule`, IMAGE as typed; the
 * rule names the volume's family @fam: both families refuse the same
 * names).  *@out is a new string the caller frees.  Returns 0, -EINVAL
 * (after the usage line), -EILSEQ (after the line naming the rule) or
 * -ENOMEM.
 */
int fk_cli_path(const char *prog, const char *image, const char *arg,
		const struct fk_family *fam, char **out);

/*
 * Split `IMAGE@@OFFSET` (mtools convention).  *@path is a new string the
 * caller frees; *@off is 0 and *@has_off false without `@@`.  Returns 0,
 * -EINVAL for a bad offset, or -ENOMEM.
 */
int fk_parse_image(const char *arg, char **path, uint64_t *off, int *has_off);

/*
 * Fill the IMAGE part of @dev from @arg (path, `@@OFFSET`); the path string
 * is stored in *@owned, which the caller frees after closing the volume.
 * Prints a usage error and returns -EINVAL for a bad offset, or when
 * `@@OFFSET` and -P (already in @dev) both choose the volume.  Keeps
 * "-P N IMAGE" or IMAGE for the hints fk_report() words.
 */
int fk_cli_image(const char *prog, const char *arg, struct fk_device_opts *dev,
		 char **owned);

/*
 * The long options every program shares beside -P, -h and -V; the values
 * are above any program's own option codes.  `--wait[=SECONDS]` waits for
 * the image lock (as flock -w); fk_cli_common_opt() fills @dev->wait_ms.
 * `--progress` and `--no-progress` set the program's progress to 1 or 0
 * (its default, when neither is given, is the program's to choose).
 */
#define FK_CLI_OPT_WAIT	       1000
#define FK_CLI_OPT_PROGRESS    1001
#define FK_CLI_OPT_NO_PROGRESS 1002
/* clang-format off */
#define FK_CLI_LONG_OPTS                                                  \
	{"wait", optional_argument, NULL, FK_CLI_OPT_WAIT},                \
	{"progress", no_argument, NULL, FK_CLI_OPT_PROGRESS},              \
	{"no-progress", no_argument, NULL, FK_CLI_OPT_NO_PROGRESS}
/* clang-format on */

/* Outcomes of fk_cli_common_opt() besides a negative error. */
enum fk_cli_opt {
	FK_OPT_DONE = 0,  /* handled; go on */
	FK_OPT_EXIT = 1,  /* --help or --version printed; exit 0 */
	FK_OPT_OTHER = 2, /* the program's own option */
};

/*
 * Handle what every program's getopt_long() loop shares: -P N, -h, -V,
 * FK_CLI_LONG_OPTS (into @dev and *@progress) and getopt's ':' (missing
 * argument) and '?' (unknown option), which need opterr = 0 and an
 * optstring starting with ':'.  @arg is getopt's optarg, @word the
 * argument getopt just read (argv[optind - 1]).  Prints the usage line
 * itself and returns -EINVAL on a usage error.
 */
int fk_cli_common_opt(const char *prog, int c, const char *arg,
		      const char *word, struct fk_device_opts *dev,
		      int *progress, void (*usage)(FILE *out));

/*
 * Parse --wait's SECONDS (a decimal, fractions allowed, as flock -w takes)
 * into milliseconds.  Returns 0 or -EINVAL.
 */
int fk_parse_wait(const char *arg, long long *ms);

/*
 * --json errors.  A program with --json calls fk_cli_json_errors() before
 * it parses its options (it looks for `--json` before any `--`); from
 * then on the first error line fk_report_in() or fk_usage_error() prints
 * is also kept, and fk_cli_exit() prints it on stdout as one JSON object
 * {"error": {"code", "errno", "message", "exit_status"}} when the run
 * fails and no document was begun, so `| jq` always gets one document.
 * A program that began its document calls fk_cli_json_begun() and puts
 * the error inside it with fk_cli_json_error_member().
 */
void fk_cli_json_errors(int argc, char **argv);
void fk_cli_json_begun(void);
void fk_cli_json_error_member(struct fk_json *js, int status);
/* The program's exit: prints the pending JSON error; returns @status. */
int fk_cli_exit(int status);

/* Parse a 1-based partition number; 0 or -EINVAL. */
int fk_parse_partition(const char *arg, int *num);

/*
 * Send SIGINT, SIGTERM and SIGHUP to @handler (the three blocked while it
 * runs, interrupted system calls restarted), or back to their default
 * action when @handler is NULL.  A writer's handler only records the
 * signal for the core to hear at its next safe point.
 */
void fk_cli_catch_signals(void (*handler)(int signo));

/* The exit status of a run a signal stopped, as shells show it. */
static inline int fk_exit_signal(int signo)
{
	return 128 + signo;
}

/* Print one line `PROGRAM: MESSAGE (try 'PROGRAM --help')` on stderr. */
void fk_usage_error(const char *prog, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Print the one error line `PROGRAM: WHAT: REASON` on stderr for error
 * @err (negative errno); WHAT is left out when @diag (may be NULL) names
 * no subject, and REASON is fk_diag_reason()'s, followed by the words of
 * the hint @diag flags ("; run 'fatcheck -r IMAGE'", with the arguments
 * fk_cli_image() was given).
 */
void fk_report(const char *prog, const struct fk_diag *diag, int err);

/*
 * fk_report() for a run on @image (the IMAGE argument as typed; may be
 * NULL): a subject that is a path inside the volume is printed as
 * `IMAGE:/path`, so that it cannot be taken for a file outside.
 */
void fk_report_in(const char *prog, const char *image,
		  const struct fk_diag *diag, int err);

#endif
