/* src/run/adapters/memwall_tokens.c: the memwall-tokens row: the generic line, or the
 * pattern a protocol gives instead (see adapters.h for both formats). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters.h"
#include "internal.h"

enum gen_key { GEN_DECODE, GEN_PROMPT, GEN_DECODE_MS, GEN_DECODE_STEPS, GEN_PROMPT_MS, GEN_LOAD_MS,
	       GEN_COUNT };
static const struct { const char *name; bool is_count; } gen_keys[GEN_COUNT] = {
	[GEN_DECODE] = { "decode", true },       [GEN_PROMPT] = { "prompt", true },
	[GEN_DECODE_MS] = { "decode_ms", false }, [GEN_DECODE_STEPS] = { "decode_steps", true },
	[GEN_PROMPT_MS] = { "prompt_ms", false }, [GEN_LOAD_MS] = { "load_ms", false },
};

#define GEN_PREFIX "memwall-tokens:"

struct gen_values {
	bool has[GEN_COUNT];
	int64_t count[GEN_COUNT];
	double ms[GEN_COUNT];
};

/* The key named by the len bytes at name, or -1. */
static int gen_key_of(const char *name, size_t len)
{
	for (int k = 0; k < GEN_COUNT; k++)
		if (strlen(gen_keys[k].name) == len && !strncmp(gen_keys[k].name, name, len))
			return k;
	return -1;
}

static const char *gen_read(int key, const char **p, struct gen_values *v)
{
	if (gen_keys[key].is_count)
		return mw_ad_read_count(p, COUNT_MAX, &v->count[key]);
	return mw_ad_read_number(p, &v->ms[key]);
}

/* "decode=32 prompt=5 ...": strict, since the program chose to print this line. */
static int gen_parse_line(const char *p, struct gen_values *v, const char *source, int lineno,
			  struct mw_error *err)
{
	for (p = mw_ad_skip_blanks(p); *p; p = mw_ad_skip_blanks(p)) {
		const char *name = p, *why;
		while (*p && *p != '=' && *p != ' ' && *p != '\t')
			p++;
		int key = gen_key_of(name, (size_t)(p - name));
		if (key < 0)
			return mw_ad_fail(err, -EINVAL, source, lineno, "memwall-tokens",
				    "unknown key '%.*s' (keys: decode, prompt, decode_ms, "
				    "decode_steps, prompt_ms, load_ms)",
				    (int)(p - name), name);
		if (*p != '=')
			return mw_ad_fail(err, -EINVAL, source, lineno, gen_keys[key].name,
				    "expected '=' and a value after the key");
		p++;
		if (v->has[key])
			return mw_ad_fail(err, -EINVAL, source, lineno, gen_keys[key].name,
				    "given twice");
		if ((why = gen_read(key, &p, v)))
			return mw_ad_fail(err, -EINVAL, source, lineno, gen_keys[key].name,
				    "the value %s", why);
		if (*p && *p != ' ' && *p != '\t')
			return mw_ad_fail(err, -EINVAL, source, lineno, gen_keys[key].name,
				    "unexpected '%c' after the value", *p);
		v->has[key] = true;
	}
	return 0;
}

/* Checks a protocol's pattern once, before any output is read: keys must be known, closed and
 * used once, and {decode} must be there. */
static int gen_pattern_check(const char *pattern, struct mw_error *err)
{
	bool used[GEN_COUNT] = { false };
	for (const char *p = pattern; *p; p++) {
		if (*p != '{')
			continue;
		const char *close = strchr(p, '}');
		if (!close)
			return mw_ad_fail(err, -EINVAL, "output pattern", 0, "pattern",
				    "'{' without '}' in \"%s\"", pattern);
		int key = gen_key_of(p + 1, (size_t)(close - p - 1));
		if (key < 0)
			return mw_ad_fail(err, -EINVAL, "output pattern", 0, "pattern",
				    "unknown key {%.*s} in \"%s\" (keys: decode, prompt, "
				    "decode_ms, decode_steps, prompt_ms, load_ms)",
				    (int)(close - p - 1), p + 1, pattern);
		if (used[key])
			return mw_ad_fail(err, -EINVAL, "output pattern", 0, "pattern",
				    "{%s} appears twice in \"%s\"", gen_keys[key].name, pattern);
		if (close[1] == '{')
			return mw_ad_fail(err, -EINVAL, "output pattern", 0, "pattern",
				    "{%s} is followed directly by another key in \"%s\": put text "
				    "between them",
				    gen_keys[key].name, pattern);
		used[key] = true;
		p = close;
	}
	if (!used[GEN_DECODE])
		return mw_ad_fail(err, -EINVAL, "output pattern", 0, "pattern",
			    "\"%s\" has no {decode}: memwall needs the generated token count",
			    pattern);
	return 0;
}

/* True when line starts with pattern; fills v. A number that does not read is no match: the
 * pattern defines the line, and text that does not fit it is some other line. */
static bool gen_pattern_match(const char *pattern, const char *line, struct gen_values *v)
{
	struct gen_values m = { 0 };
	const char *p = pattern, *s = mw_ad_skip_blanks(line);
	while (*p) {
		if (*p == '{') {
			const char *close = strchr(p, '}');
			int key = gen_key_of(p + 1, (size_t)(close - p - 1));
			if (gen_read(key, &s, &m))
				return false;
			m.has[key] = true;
			p = close + 1;
		} else if (*p == ' ' || *p == '\t') {
			if (*s != ' ' && *s != '\t')
				return false;
			p = mw_ad_skip_blanks(p);
			s = mw_ad_skip_blanks(s);
		} else if (*p++ != *s++) {
			return false;
		}
	}
	*v = m;
	return true;
}

bool mw_ad_detect_generic(const char *buf, size_t len)
{
	return memmem(buf, len, GEN_PREFIX, strlen(GEN_PREFIX)) != NULL;
}

int mw_ad_parse_generic(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		  const char *source, struct mw_adapter_result *res, struct mw_error *err)
{
	const char *pattern = opts ? opts->pattern : NULL;
	struct lines l = { 0 };
	struct gen_values v = { 0 };
	int found_line = 0, rc;
	char *line;

	if (pattern && (rc = gen_pattern_check(pattern, err)))
		goto out;
	if ((rc = mw_ad_lines_open(&l, buf, len)))
		goto out;
	while ((line = mw_ad_lines_next(&l))) {
		struct gen_values here = { 0 };
		const char *p = mw_ad_skip_blanks(line);
		if (pattern) {
			if (!gen_pattern_match(pattern, p, &here))
				continue;
		} else {
			if (!mw_ad_eat(&p, GEN_PREFIX))
				continue;
			if ((rc = gen_parse_line(p, &here, source, l.lineno, err)))
				goto out;
		}
		if (found_line) {
			rc = mw_ad_fail(err, -EINVAL, source, l.lineno, "memwall-tokens",
				  "a second token line (the first is on line %d): print it once "
				  "per run",
				  found_line);
			goto out;
		}
		found_line = l.lineno;
		v = here;
	}

	if (!found_line) {
		if (pattern)
			mw_ad_set_unknown(res, "no line of the output matches the pattern \"%s\", so the "
					 "number of generated tokens is unknown: check the "
					 "program's output against the protocol's pattern",
				    pattern);
		else
			mw_ad_set_unknown(res, "no '" GEN_PREFIX " decode=N ...' line in the output, so "
					 "the number of generated tokens is unknown: make the "
					 "program print one (see src/run/adapters.h)");
		rc = 0;
		goto out;
	}
	if (!v.has[GEN_DECODE]) {
		rc = mw_ad_fail(err, -EINVAL, source, found_line, "decode",
			  "missing: the token line must say how many tokens were generated");
		goto out;
	}
	res->decode_tokens = (struct mw_adapter_count){ v.count[GEN_DECODE], true };
	if (v.has[GEN_PROMPT])
		res->prompt_tokens = (struct mw_adapter_count){ v.count[GEN_PROMPT], true };
	if (v.has[GEN_PROMPT_MS])
		res->prompt_ms = (struct mw_adapter_ms){ v.ms[GEN_PROMPT_MS], true };
	if (v.has[GEN_LOAD_MS])
		res->load_ms = (struct mw_adapter_ms){ v.ms[GEN_LOAD_MS], true };
	if (v.has[GEN_DECODE_MS]) {
		int64_t steps = v.has[GEN_DECODE_STEPS] ? v.count[GEN_DECODE_STEPS]
							: v.count[GEN_DECODE];
		if (steps > v.count[GEN_DECODE]) {
			rc = mw_ad_fail(err, -EINVAL, source, found_line, "decode_steps",
				  "%" PRId64 " steps for %" PRId64 " generated tokens: at most one "
				  "step per token",
				  steps, v.count[GEN_DECODE]);
			goto out;
		}
		res->eval_ms = (struct mw_adapter_ms){ v.ms[GEN_DECODE_MS], true };
		res->eval_runs = (struct mw_adapter_count){ steps, true };
		if (v.ms[GEN_DECODE_MS] > 0)
			res->tok_per_s = (struct mw_adapter_ms){
				1e3 * (double)steps / v.ms[GEN_DECODE_MS], true };
	} else if (v.has[GEN_DECODE_STEPS]) {
		rc = mw_ad_fail(err, -EINVAL, source, found_line, "decode_steps",
			  "given without decode_ms: steps only say what decode_ms covers");
		goto out;
	}
	rc = 0;
out:
	mw_ad_lines_close(&l);
	return rc;
}
