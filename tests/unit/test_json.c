/*
 * test_json.c: the --json writer against documents written out by hand
 * from RFC 8259: string escapes (the two-character forms and \u00XX for
 * the other control characters and DEL), commas between members and
 * elements at each depth, and every value type.  UTF-8 passes through.
 */
#include "tap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/json.h"

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))

/* One string member through the writer; the document as text. */
struct str_row {
	const char *edge;
	const char *val;
	const char *want; /* the whole document, newline included */
};

static const struct str_row str_rows[] = {
	{"string: plain ASCII", "README.TXT", "{\"s\":\"README.TXT\"}\n"},
	{"string: quote", "a\"b", "{\"s\":\"a\\\"b\"}\n"},
	{"string: backslash", "a\\b", "{\"s\":\"a\\\\b\"}\n"},
	{"string: newline, tab, return", "1\n2\t3\r",
	 "{\"s\":\"1\\n2\\t3\\r\"}\n"},
	{"string: other control characters", "\x01\x1f",
	 "{\"s\":\"\\u0001\\u001f\"}\n"},
	{"string: DEL", "x\x7f", "{\"s\":\"x\\u007f\"}\n"},
	{"string: space is not escaped", " ", "{\"s\":\" \"}\n"},
	{"string: UTF-8 passes through",
	 "Gr\xc3\xbc\xc3\x9f"
	 "e",
	 "{\"s\":\"Gr\xc3\xbc\xc3\x9f"
	 "e\"}\n"},
	{"string: empty", "", "{\"s\":\"\"}\n"},
	{"string: NULL is empty", NULL, "{\"s\":\"\"}\n"},
};

/* Run @fill against a memory stream; the text is the caller's. */
static char *render(void (*fill)(struct fk_json *, const void *),
		    const void *arg)
{
	struct fk_json js;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fk_json_init(&js, f);
	fill(&js, arg);
	fk_json_finish(&js);
	fclose(f);
	return buf;
}

static void fill_str(struct fk_json *js, const void *arg)
{
	fk_json_object(js, NULL);
	fk_json_str(js, "s", arg);
	fk_json_end(js);
}

static void fill_types(struct fk_json *js, const void *arg)
{
	(void)arg;
	fk_json_object(js, NULL);
	fk_json_u64(js, "u", UINT64_MAX);
	fk_json_bool(js, "t", 1);
	fk_json_bool(js, "f", 0);
	fk_json_double(js, "d", 0.5);
	fk_json_null(js, "n");
	fk_json_array(js, "a");
	fk_json_u64(js, NULL, 1);
	fk_json_object(js, NULL);
	fk_json_end(js);
	fk_json_array(js, NULL);
	fk_json_str(js, NULL, "x");
	fk_json_end(js);
	fk_json_end(js);
	fk_json_object(js, "key \"q\"");
	fk_json_null(js, "z");
	fk_json_end(js);
	fk_json_end(js);
	/* One end too many is ignored: the document stays whole. */
	fk_json_end(js);
}

static const char types_want[] =
	"{\"u\":18446744073709551615,"
	"\"t\":true,\"f\":false,\"d\":0.500000,\"n\":null,"
	"\"a\":[1,{},[\"x\"]],\"key \\\"q\\\"\":{\"z\":null}}\n";

/* A TAP line; on failure, what the writer wrote as a comment. */
static void show(int is_ok, const char *got, const char *name)
{
	OK(is_ok, "json: %s", name);
	if (!is_ok)
		printf("# got: %s", got ? got : "(no memory)\n");
}

void suite_json(void)
{
	size_t i;
	char *got;

	for (i = 0; i < NROWS(str_rows); i++) {
		const struct str_row *r = &str_rows[i];

		got = render(fill_str, r->val);
		show(got && !strcmp(got, r->want), got, r->edge);
		free(got);
	}
	got = render(fill_types, NULL);
	show(got && !strcmp(got, types_want), got,
	     "every value type, nested containers and commas");
	free(got);
}
