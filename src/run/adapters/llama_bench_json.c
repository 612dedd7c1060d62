/* src/run/adapters/llama_bench_json.c: the llama-bench-json and llama-bench-jsonl rows
 * (`llama-bench -o json|jsonl`), which read the same object per test. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "adapters.h"
#include "internal.h"

/* JSON and JSONL: one object per test. Where a test was: a line of JSONL (index -1), or an
 * element of the JSON array (line 0, named "[i].key" in messages). */
struct json_at {
	const char *source;
	int line, index;
	struct mw_error *err;
};

static int json_at_fail(const struct json_at *at, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int json_at_fail(const struct json_at *at, const char *key, const char *fmt, ...)
{
	char field[96], text[512];
	va_list ap;
	if (at->index >= 0)
		snprintf(field, sizeof(field), "[%d]%s%s", at->index, *key ? "." : "", key);
	else
		snprintf(field, sizeof(field), "%s", key);
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return mw_ad_fail(at->err, -EINVAL, at->source, at->line, field, "%s", text);
}

static int json_count(const struct json_at *at, json_t *o, const char *key, bool required,
		      int64_t max, int64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!v && !required)
		return 0;
	if (!v)
		return json_at_fail(at, key, "missing: not llama-bench output?");
	if (!json_is_integer(v))
		return json_at_fail(at, key, "expected a whole number");
	json_int_t n = json_integer_value(v);
	if (n < 0 || n > max)
		return json_at_fail(at, key, "%" JSON_INTEGER_FORMAT " is %s", n,
				    n < 0 ? "negative" : "out of range");
	*out = n;
	return 0;
}

static int json_number(const struct json_at *at, json_t *o, const char *key, bool required,
		       double *out, bool *has)
{
	json_t *v = json_object_get(o, key);
	if (!v && !required)
		return 0;
	if (!v)
		return json_at_fail(at, key, "missing: not llama-bench output?");
	if (!json_is_number(v))
		return json_at_fail(at, key, "expected a number");
	double d = json_number_value(v);
	if (!isfinite(d) || d < 0)
		return json_at_fail(at, key, "%g is %s", d, d < 0 ? "negative" : "out of range");
	*out = d;
	if (has)
		*has = true;
	return 0;
}

static int bench_from_object(json_t *o, struct bench *b, const struct json_at *at)
{
	struct bench_test *t;
	json_t *samples;
	int64_t ns = 0;
	int rc;

	if (!json_is_object(o))
		return json_at_fail(at, "", "expected an object per test");
	if (!(t = mw_ad_bench_add(b, at->source, at->line, at->err)))
		return -EINVAL;
	if (at->index >= 0)
		snprintf(t->where, sizeof(t->where), "element [%d]", at->index);
	if ((rc = json_count(at, o, "n_prompt", true, COUNT_MAX, &t->n_prompt)) ||
	    (rc = json_count(at, o, "n_gen", true, COUNT_MAX, &t->n_gen)) ||
	    (rc = json_count(at, o, "n_depth", false, COUNT_MAX, &t->n_depth)) ||
	    (rc = json_count(at, o, "avg_ns", true, NS_MAX, &ns)) ||
	    (rc = json_number(at, o, "stddev_ns", false, &t->stddev_ns, &t->has_stddev_ns)) ||
	    (rc = json_number(at, o, "avg_ts", true, &t->avg_ts, NULL)) ||
	    (rc = json_number(at, o, "stddev_ts", false, &t->stddev_ts, &t->has_stddev_ts)))
		return rc;
	t->avg_ns = (double)ns;
	t->has_ns = true;
	if ((samples = json_object_get(o, "samples_ns"))) {
		size_t i;
		json_t *s;
		if (!json_is_array(samples))
			return json_at_fail(at, "samples_ns", "expected an array");
		json_array_foreach(samples, i, s) {
			if (!json_is_integer(s) || json_integer_value(s) <= 0)
				return json_at_fail(at, "samples_ns", "element %zu is not a "
						    "positive whole number", i);
		}
		t->reps = (int64_t)json_array_size(samples);
	}
	return 0;
}

static int json_fail(struct mw_error *err, const char *source, const json_error_t *je)
{
	return mw_ad_fail(err, -EINVAL, source, je->line, "", "not valid JSON: %s (column %d)", je->text,
		    je->column);
}

bool mw_ad_detect_bench_json(const char *buf, size_t len)
{
	return mw_ad_detect_first_byte(buf, len, '[');
}

bool mw_ad_detect_bench_jsonl(const char *buf, size_t len)
{
	return mw_ad_detect_first_byte(buf, len, '{');
}

int mw_ad_parse_bench_json(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		     const char *source, struct mw_adapter_result *res,
		     struct mw_error *err)
{
	json_error_t je;
	json_t *root = NULL, *o;
	struct bench *b = NULL;
	size_t i;
	int rc;
	(void)opts;

	if (!(b = calloc(1, sizeof(*b)))) {
		rc = -ENOMEM;
		goto out;
	}
	if (!(root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je))) {
		rc = json_fail(err, source, &je);
		goto out;
	}
	if (!json_is_array(root)) {
		rc = mw_ad_fail(err, -EINVAL, source, 1, "",
			  "expected a JSON array of tests (llama-bench -o json); for one object "
			  "per line use llama-bench-jsonl");
		goto out;
	}
	json_array_foreach(root, i, o) {
		struct json_at at = { source, 0, (int)i, err };
		if ((rc = bench_from_object(o, b, &at)))
			goto out;
	}
	rc = mw_ad_bench_finish(b, source, res, err);
out:
	json_decref(root);
	free(b);
	return rc;
}

int mw_ad_parse_bench_jsonl(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		      const char *source, struct mw_adapter_result *res,
		      struct mw_error *err)
{
	struct lines l = { 0 };
	struct bench *b = NULL;
	json_t *o = NULL;
	char *line;
	int rc;
	(void)opts;

	if (!(b = calloc(1, sizeof(*b))) || (rc = mw_ad_lines_open(&l, buf, len))) {
		rc = -ENOMEM;
		goto out;
	}
	while ((line = mw_ad_lines_next(&l))) {
		json_error_t je;
		if (mw_ad_all_blank(line))
			continue;
		if (!(o = json_loads(line, JSON_REJECT_DUPLICATES, &je))) {
			je.line = l.lineno;
			rc = json_fail(err, source, &je);
			goto out;
		}
		struct json_at at = { source, l.lineno, -1, err };
		if ((rc = bench_from_object(o, b, &at)))
			goto out;
		json_decref(o);
		o = NULL;
	}
	rc = mw_ad_bench_finish(b, source, res, err);
out:
	json_decref(o);
	mw_ad_lines_close(&l);
	free(b);
	return rc;
}
