/*
 * json.c: streaming JSON writer; escapes per RFC 8259.  Also the one
 * writer of the "runs" array both fatls and fatprealloc print.
 */
#include "tools/json.h"

#include <inttypes.h>

#include "table/fat.h"
#include "volume/volume.h"

void fk_json_init(struct fk_json *js, FILE *out)
{
	js->out = out;
	js->depth = 0;
	js->need_comma[0] = 0;
}

static void put_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	for (; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

/* Separator and key before any value. */
static void begin_value(struct fk_json *js, const char *key)
{
	if (js->need_comma[js->depth])
		fputc(',', js->out);
	js->need_comma[js->depth] = 1;
	if (key) {
		put_string(js->out, key);
		fputc(':', js->out);
	}
}

static void open_container(struct fk_json *js, const char *key, char c)
{
	begin_value(js, key);
	fputc(c, js->out);
	/* Deeper nesting than we ever write is a bug of ours. */
	if (js->depth + 1 < FK_JSON_DEPTH)
		js->depth++;
	js->need_comma[js->depth] = 0;
	js->close[js->depth] = c == '{' ? '}' : ']';
}

void fk_json_object(struct fk_json *js, const char *key)
{
	open_container(js, key, '{');
}

void fk_json_array(struct fk_json *js, const char *key)
{
	open_container(js, key, '[');
}

void fk_json_end(struct fk_json *js)
{
	if (js->depth == 0)
		return;
	fputc(js->close[js->depth], js->out);
	js->depth--;
}

void fk_json_str(struct fk_json *js, const char *key, const char *val)
{
	begin_value(js, key);
	put_string(js->out, val ? val : "");
}

void fk_json_u64(struct fk_json *js, const char *key, uint64_t val)
{
	begin_value(js, key);
	fprintf(js->out, "%" PRIu64, val);
}

void fk_json_bool(struct fk_json *js, const char *key, int val)
{
	begin_value(js, key);
	fputs(val ? "true" : "false", js->out);
}

void fk_json_double(struct fk_json *js, const char *key, double val)
{
	begin_value(js, key);
	fprintf(js->out, "%.6f", val);
}

void fk_json_null(struct fk_json *js, const char *key)
{
	begin_value(js, key);
	fputs("null", js->out);
}

void fk_json_finish(struct fk_json *js)
{
	fputc('\n', js->out);
	fflush(js->out);
}

static uint64_t run_alignment(uint64_t off)
{
	unsigned shift = off ? (unsigned)__builtin_ctzll(off) : 30;

	return 1ull << (shift > 30 ? 30 : shift);
}

void fk_json_runs(struct fk_json *js, const struct fk_geom *g, uint64_t base,
		  uint64_t disk_off, const struct fk_run *runs, size_t nruns)
{
	size_t i;

	fk_json_array(js, "runs");
	for (i = 0; i < nruns; i++) {
		fk_json_object(js, NULL);
		fk_json_u64(js, "first", runs[i].first);
		fk_json_u64(js, "last", runs[i].first + runs[i].nclus - 1);
		fk_json_u64(js, "clusters", runs[i].nclus);
		uint64_t off = base + fk_clus_off(g, runs[i].first);

		fk_json_u64(js, "offset", off);
		fk_json_u64(js, "length",
			    (uint64_t)runs[i].nclus * g->clus_len);
		/* the largest power of two dividing the offset on the
		 * disk (a partition's device starts into it), up to 1G */
		fk_json_u64(js, "alignment", run_alignment(disk_off + off));
		fk_json_end(js);
	}
	fk_json_end(js);
}
