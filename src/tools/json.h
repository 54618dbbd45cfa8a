/*
 * json.h: a small streaming JSON writer for --json output.  It tracks
 * nesting and commas so callers only say what comes next.
 */
#ifndef FATKIT_JSON_H
#define FATKIT_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct fk_geom;
struct fk_run;

#define FK_JSON_DEPTH 16

struct fk_json {
	FILE *out;
	int depth;
	int need_comma[FK_JSON_DEPTH]; /* per level: a value was written */
	char close[FK_JSON_DEPTH];     /* per level: '}' or ']' */
};

void fk_json_init(struct fk_json *js, FILE *out);
/* Open and close containers; @key names the member (NULL in arrays). */
void fk_json_object(struct fk_json *js, const char *key);
void fk_json_array(struct fk_json *js, const char *key);
void fk_json_end(struct fk_json *js);
/* Members or array elements (@key NULL). Strings are escaped. */
void fk_json_str(struct fk_json *js, const char *key, const char *val);
void fk_json_u64(struct fk_json *js, const char *key, uint64_t val);
void fk_json_bool(struct fk_json *js, const char *key, int val);
void fk_json_double(struct fk_json *js, const char *key, double val);
void fk_json_null(struct fk_json *js, const char *key);
/*
 * The "runs" member of a file (fatls and fatprealloc --json): for each of
 * @nruns runs its first and last cluster, its cluster count, and its byte
 * offset and length in IMAGE, the volume starting @base bytes into IMAGE.
 */
void fk_json_runs(struct fk_json *js, const struct fk_geom *g, uint64_t base,
		  uint64_t disk_off, const struct fk_run *runs, size_t nruns);
/* End the document with a newline. */
void fk_json_finish(struct fk_json *js);

#endif
