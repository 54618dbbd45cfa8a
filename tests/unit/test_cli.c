/*
 * test_cli.c: sizes (util-linux rules: K M G T binary, KB MB GB TB decimal),
 * IMAGE@@OFFSET (mtools convention) and partition numbers, row by row.
 */
#include "tap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

#define NROWS(t)  (sizeof(t) / sizeof((t)[0]))
#define UNTOUCHED 0xdeadbeefcafef00dull /* out-parameter before a call */

static const struct size_row {
	const char *edge;
	const char *arg;
	int err;
	uint64_t len;
} size_rows[] = {
	{"plain bytes", "4096", 0, 4096},
	{"zero", "0", 0, 0},
	{"leading zeros are decimal", "010", 0, 10},
	{"K is 1024", "1K", 0, 1024},
	{"M is 1024^2", "3M", 0, 3ull << 20},
	{"G is 1024^3", "2G", 0, 2ull << 30},
	{"T is 1024^4", "5T", 0, 5ull << 40},
	{"KiB is 1024", "1KiB", 0, 1024},
	{"MiB is 1024^2", "7MiB", 0, 7ull << 20},
	{"GiB is 1024^3", "1GiB", 0, 1ull << 30},
	{"TiB is 1024^4", "1TiB", 0, 1ull << 40},
	{"KB is 1000", "1KB", 0, 1000},
	{"MB is 1000^2", "3MB", 0, 3000000},
	{"GB is 1000^3", "2GB", 0, 2000000000ull},
	{"TB is 1000^4", "1TB", 0, 1000000000000ull},
	{"lower-case k", "1k", 0, 1024},
	{"lower-case m", "1m", 0, 1u << 20},
	{"lower-case kb", "1kb", 0, 1000},
	{"lower-case gib", "1gib", 0, 1u << 30},
	{"largest plain value", "18446744073709551615", 0, UINT64_MAX},
	{"largest exact T", "16777215T", 0, 16777215ull << 40},
	{"garbage suffix 1X", "1X", -EINVAL, 0},
	{"empty string", "", -EINVAL, 0},
	{"negative -1", "-1", -EINVAL, 0},
	{"plus sign +1", "+1", -EINVAL, 0},
	{"leading space", " 1", -EINVAL, 0},
	{"trailing space", "1 ", -EINVAL, 0},
	{"space before suffix", "1 M", -EINVAL, 0},
	{"fraction 1.5M", "1.5M", 0, 3ull << 19},
	{"fraction 1.5G", "1.5G", 0, 3ull << 29},
	{"fraction 0.5K", "0.5K", 0, 512},
	{"fraction 1.5KB", "1.5KB", 0, 1500},
	{"fraction 2.25GiB", "2.25GiB", 0, 9ull << 28},
	{"fraction rounds up 0.1K", "0.1K", 0, 103},
	{"fraction rounds up 1.0001K", "1.0001K", 0, 1025},
	{"fraction tiny rounds up to 1", "0.000000000000000001K", 0, 1},
	{"fraction zero 0.0M", "0.0M", 0, 0},
	{"fraction 3.999T", "3.999T", 0, 4396946999477ull},
	{"fraction largest T", "16777215.5T", 0,
	 16777215ull << 40 | 1ull << 39},
	{"fraction just fits 16777215.99999999999T", "16777215.99999999999T", 0,
	 UINT64_MAX - 9},
	{"fraction rounds up past the top", "16777215.999999999999999999T",
	 -ERANGE, 0},
	{"fraction without a suffix", "1.5", -EINVAL, 0},
	{"fraction without digits 1.M", "1.M", -EINVAL, 0},
	{"fraction without integer .5M", ".5M", -EINVAL, 0},
	{"fraction two dots", "1.5.5M", -EINVAL, 0},
	{"fraction comma", "1,5M", -EINVAL, 0},
	{"fraction 19 digits", "0.1234567890123456789M", -EINVAL, 0},
	{"negative fraction", "-1.5M", -EINVAL, 0},
	{"hex 0x10", "0x10", -EINVAL, 0},
	{"suffix alone", "M", -EINVAL, 0},
	{"double suffix", "1MM", -EINVAL, 0},
	{"iB without a unit", "1iB", -EINVAL, 0},
	{"overflow 20000000T", "20000000T", -ERANGE, 0},
	{"overflow 16777216T", "16777216T", -ERANGE, 0},
	{"overflow 18446744073709551616", "18446744073709551616", -ERANGE, 0},
	{"overflow 18446744073709551615K", "18446744073709551615K", -ERANGE, 0},
	{"overflow 18446744073709552TB", "18446744073709552TB", -ERANGE, 0},
};

static void test_parse_size(void)
{
	size_t i;

	for (i = 0; i < NROWS(size_rows); i++) {
		const struct size_row *r = &size_rows[i];
		uint64_t len = UNTOUCHED;
		int err = fk_parse_size(r->arg, &len);

		OK(err == r->err && len == (r->err ? UNTOUCHED : r->len),
		   "fk_parse_size: %s (\"%s\": err %d, len %llu)", r->edge,
		   r->arg, err, (unsigned long long)len);
	}
	OK(fk_parse_size(NULL, &(uint64_t){0}) == -EINVAL,
	   "fk_parse_size: NULL argument");
}

static const struct image_row {
	const char *edge;
	const char *arg;
	int err;
	const char *path;
	uint64_t off;
	int has_off;
} image_rows[] = {
	{"offset with suffix", "a.img@@1M", 0, "a.img", 1u << 20, 1},
	{"no @@", "a.img", 0, "a.img", 0, 0},
	{"plain byte offset", "sd.img@@32256", 0, "sd.img", 32256, 1},
	{"zero offset is still an offset", "a.img@@0", 0, "a.img", 0, 1},
	{"decimal suffix", "a.img@@1MB", 0, "a.img", 1000000, 1},
	{"path with directories", "/tmp/x y/a.img@@2K", 0, "/tmp/x y/a.img",
	 2048, 1},
	{"single @ is part of the path", "a@b.img", 0, "a@b.img", 0, 0},
	{"@@ with garbage", "a.img@@junk", -EINVAL, NULL, 0, 0},
	{"@@ with nothing after", "a.img@@", -EINVAL, NULL, 0, 0},
	{"@@ with a negative offset", "a.img@@-1", -EINVAL, NULL, 0, 0},
	{"@@ with an overflowing offset", "a.img@@20000000T", -ERANGE, NULL, 0,
	 0},
	{"second @@ is garbage", "a.img@@1M@@2M", -EINVAL, NULL, 0, 0},
	{"empty path", "", -EINVAL, NULL, 0, 0},
	{"empty path before @@", "@@1M", -EINVAL, NULL, 0, 0},
};

static void test_parse_image(void)
{
	size_t i;

	for (i = 0; i < NROWS(image_rows); i++) {
		const struct image_row *r = &image_rows[i];
		char *path = NULL;
		uint64_t off = UNTOUCHED;
		int has_off = -1;
		int err = fk_parse_image(r->arg, &path, &off, &has_off);
		int is_ok;

		if (r->err)
			is_ok = err == r->err && !path && off == UNTOUCHED &&
				has_off == -1;
		else
			is_ok = !err && path && !strcmp(path, r->path) &&
				off == r->off && has_off == r->has_off;
		OK(is_ok, "fk_parse_image: %s (\"%s\": err %d)", r->edge,
		   r->arg, err);
		free(path);
	}
}

static const struct part_row {
	const char *edge;
	const char *arg;
	int err;
	int num;
} part_rows[] = {
	{"first partition", "1", 0, 1},
	{"two digits", "12", 0, 12},
	{"largest accepted", "256", 0, 256},
	{"past the largest", "257", -EINVAL, 0},
	{"zero (1-based)", "0", -EINVAL, 0},
	{"negative", "-1", -EINVAL, 0},
	{"plus sign", "+1", -EINVAL, 0},
	{"empty", "", -EINVAL, 0},
	{"leading space", " 1", -EINVAL, 0},
	{"trailing garbage", "1a", -EINVAL, 0},
	{"size suffix", "1K", -EINVAL, 0},
	{"overflowing long", "99999999999999999999", -EINVAL, 0},
};

static void test_parse_partition(void)
{
	size_t i;

	for (i = 0; i < NROWS(part_rows); i++) {
		const struct part_row *r = &part_rows[i];
		int num = -7;
		int err = fk_parse_partition(r->arg, &num);

		OK(err == r->err && num == (r->err ? -7 : r->num),
		   "fk_parse_partition: %s (\"%s\": err %d, num %d)", r->edge,
		   r->arg, err, num);
	}
	OK(fk_parse_partition(NULL, &(int){0}) == -EINVAL,
	   "fk_parse_partition: NULL argument");
}

/* --wait=SECONDS, as flock -w takes them, in milliseconds. */
static const struct wait_row {
	const char *edge, *arg;
	int err;
	long long ms;
} wait_rows[] = {
	{"whole seconds", "10", 0, 10000},
	{"zero: fail at once", "0", 0, 0},
	{"a fraction", "0.5", 0, 500},
	{"a fraction below a ms rounds up", "0.0001", 0, 1},
	{"many digits", "1.25", 0, 1250},
	{"empty", "", -EINVAL, 0},
	{"negative", "-1", -EINVAL, 0},
	{"a unit", "5s", -EINVAL, 0},
	{"a bare dot", "1.", -EINVAL, 0},
	{"leading dot", ".5", -EINVAL, 0},
	{"too long", "99999999999999999999", -EINVAL, 0},
};

static void test_parse_wait(void)
{
	size_t i;

	for (i = 0; i < NROWS(wait_rows); i++) {
		const struct wait_row *r = &wait_rows[i];
		long long ms = -7;
		int err = fk_parse_wait(r->arg, &ms);

		OK(err == r->err && ms == (r->err ? -7 : r->ms),
		   "fk_parse_wait: %s (\"%s\": err %d, ms %lld)", r->edge,
		   r->arg, err, ms);
	}
}

/* Expected results worked out by hand, as `realpath -m` gives them. */
static const struct path_row {
	const char *edge;
	const char *in;
	int err;
	const char *out;
} path_rows[] = {
	{"root", "/", 0, "/"},
	{"plain", "/a/b.txt", 0, "/a/b.txt"},
	{"repeated slashes", "//a///b", 0, "/a/b"},
	{"trailing slash kept", "/a/b/", 0, "/a/b/"},
	{"dot", "/a/./b", 0, "/a/b"},
	{"dot-dot", "/a/../b", 0, "/b"},
	{"dot-dot of the root is the root", "/..", 0, "/"},
	{"dot-dot past the root", "/a/../../b", 0, "/b"},
	{"trailing dot names a directory", "/a/.", 0, "/a/"},
	{"trailing dot-dot names a directory", "/a/b/..", 0, "/a/"},
	{"only dots", "/./../.", 0, "/"},
	{"three dots is a name", "/.../x", 0, "/.../x"},
	{"dot-prefixed name", "/.hidden", 0, "/.hidden"},
	{"relative", "a/b", -EINVAL, NULL},
	{"empty", "", -EINVAL, NULL},
};

static void test_path_normalise(void)
{
	char out[64];
	size_t i;

	for (i = 0; i < NROWS(path_rows); i++) {
		const struct path_row *r = &path_rows[i];
		int err;

		strcpy(out, "untouched");
		err = fk_path_normalise(r->in, out, sizeof(out));
		OK(err == r->err && (r->err || !strcmp(out, r->out)),
		   "fk_path_normalise: %s (\"%s\": err %d, \"%s\")", r->edge,
		   r->in, err, out);
	}
	OK(fk_path_normalise("/abc", out, 4) == -ENAMETOOLONG,
	   "fk_path_normalise: a short buffer is -ENAMETOOLONG");
}

void suite_cli(void)
{
	test_parse_size();
	test_parse_image();
	test_parse_partition();
	test_parse_wait();
	test_path_normalise();
}
