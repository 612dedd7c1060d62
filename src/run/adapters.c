/* src/adapters.c: read prompt tokens, generated tokens and timings from a foreign engine's
 * output (see adapters.h for the table of adapters and the generic line's format).
 *
 * Every adapter works on a private, NUL-terminated copy of the output, split into lines in
 * place, so it never reads past len whatever bytes it is given.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "adapters.h"

/* llama.cpp prints counts with %d; anything past int32 is corruption, not a long run. */
#define COUNT_MAX INT32_MAX
/* llama-bench's avg_ns: up to ~11 days per repetition. */
#define NS_MAX INT64_C(1000000000000000)
/* More tests than this in one llama-bench output is not a single configuration anyway. */
#define BENCH_MAX_TESTS 64

/* ---- Errors and small parsers ------------------------------------------------------------- */

static int fail(struct mw_error *err, int code, const char *source, int line, const char *field,
		const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int fail(struct mw_error *err, int code, const char *source, int line, const char *field,
		const char *fmt, ...)
{
	char text[sizeof(err->text)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	mw_error_set(err, code, source, field, "%s", text);
	if (err)
		err->line = line;
	return code;
}

static void set_unknown(struct mw_adapter_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_unknown(struct mw_adapter_result *res, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->why_unknown, sizeof(res->why_unknown), fmt, ap);
	va_end(ap);
	res->decode_tokens.known = false;
}

static const char *skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Reads a whole number in [0, max] at *p (after blanks) and advances *p past it. Returns NULL
 * on success or what was wrong with the text, for the caller's message. */
static const char *read_count(const char **p, int64_t max, int64_t *out)
{
	const char *s = skip_blanks(*p);
	char *end = NULL;
	if (*s == '-' && isdigit((unsigned char)s[1]))
		return "is negative";
	if (!isdigit((unsigned char)*s))
		return *s ? "is not a number" : "is missing (the line is cut short)";
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno == ERANGE || v > max)
		return "is out of range";
	if (*end == '.' || *end == 'e' || *end == 'E')
		return "is not a whole number";
	*out = v;
	*p = end;
	return NULL;
}

/* Reads a finite, non-negative decimal number at *p (after blanks); see read_count. */
static const char *read_number(const char **p, double *out)
{
	const char *s = skip_blanks(*p);
	char *end = NULL;
	if (*s == '-' && (isdigit((unsigned char)s[1]) || s[1] == '.'))
		return "is negative";
	if (!isdigit((unsigned char)*s) && *s != '.')
		return *s ? "is not a number" : "is missing (the line is cut short)";
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return "is not a decimal number";
	errno = 0;
	double v = strtod(s, &end);
	if (end == s)
		return "is not a number";
	if (errno == ERANGE || !isfinite(v))
		return "is out of range";
	*out = v;
	*p = end;
	return NULL;
}

/* Whole-string variants, for CSV and markdown cells. */
static const char *cell_count(const char *s, int64_t max, int64_t *out)
{
	const char *why = read_count(&s, max, out);
	if (!why && *skip_blanks(s))
		why = "is not a whole number";
	return why;
}

static const char *cell_number(const char *s, double *out)
{
	const char *why = read_number(&s, out);
	if (!why && *skip_blanks(s))
		why = "is not a number";
	return why;
}

/* Advances *p past word (and returns true) when the text at *p starts with it. */
static bool eat(const char **p, const char *word)
{
	size_t n = strlen(word);
	if (strncmp(*p, word, n))
		return false;
	*p += n;
	return true;
}

/* ---- The output as lines ------------------------------------------------------------------ */

struct lines {
	char *text;  /* private copy, NUL-terminated; lines are cut in place */
	char *next;  /* start of the next line */
	char *end;   /* text + len */
	int lineno;  /* 1-based number of the line last returned */
};

/* An embedded NUL ends a line, like a newline: output is text, and a NUL must not hide the
 * rest of the buffer from the string functions. */
static int lines_open(struct lines *l, const char *buf, size_t len)
{
	l->text = malloc(len + 1);
	if (!l->text)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		l->text[i] = buf[i] ? buf[i] : '\n';
	l->text[len] = '\0';
	l->next = l->text;
	l->end = l->text + len;
	l->lineno = 0;
	return 0;
}

static void lines_close(struct lines *l)
{
	free(l->text);
	l->text = l->next = l->end = NULL;
}

/* The next line without its newline (and without a trailing CR), or NULL at the end. */
static char *lines_next(struct lines *l)
{
	char *line = l->next, *nl;
	if (line == l->end)
		return NULL;
	nl = memchr(line, '\n', (size_t)(l->end - line));
	if (nl) {
		*nl = '\0';
		l->next = nl + 1;
	} else {
		l->next = l->end;
	}
	size_t n = strlen(line);
	if (n && line[n - 1] == '\r')
		line[n - 1] = '\0';
	l->lineno++;
	return line;
}

static bool all_blank(const char *s)
{
	return !*skip_blanks(s);
}

static bool all_blank_n(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!isspace((unsigned char)buf[i]))
			return false;
	return true;
}

/* ---- llama-completion / llama-cli --------------------------------------------------------- */

/* The perf lines llama.cpp prints at exit. Their names and layout across its source history:
 *   spring 2023       llama_print_timings: "%8.2f ms / %5d runs   (%8.2f ms per run)"
 *   mid 2023 on       llama_print_timings: "%10.2f ms / %5d runs   (%8.2f ms per token, ...)"
 *   autumn 2024 on    llama_perf_context_print: the same layout (llama-context.cpp)
 *   v0.5.0            common_perf_print: the same layout after a "0.00.081.426 I " log prefix
 *                     (recorded in ../shared/fixtures/llamacpp-output/)
 * Before April 2023 main printed "predict time = ... ms per token" without counts.
 * The numbers are the context's n_p_eval / n_eval, which llama.cpp counts per llama_decode()
 * call: a call with one token adds 1 to n_eval, a call with more adds its size to n_p_eval
 * (llama_context::synchronize). Both are printed as max(1, n) (perf_get_data). */
enum perf_key { PERF_LOAD, PERF_PROMPT, PERF_EVAL, PERF_TOTAL, PERF_COUNT };

static const struct perf_line {
	const char *key;  /* the text before '=' */
	const char *unit; /* the word after the count, or NULL when no count follows */
	bool count_required;
} perf_lines[PERF_COUNT] = {
	[PERF_LOAD] = { "load time", NULL, false },
	[PERF_PROMPT] = { "prompt eval time", "tokens", true },
	[PERF_EVAL] = { "eval time", "runs", true },
	[PERF_TOTAL] = { "total time", "tokens", false },
};

struct perf_seen {
	bool seen;
	int line;
	double ms;
	bool has_count;
	int64_t count;
};

/* Skips ANSI colour escapes ("\033[32m"), which llama.cpp adds around the prefix when colours
 * are on. */
static const char *skip_escapes(const char *s)
{
	while (s[0] == '\033' && s[1] == '[') {
		const char *m = strchr(s, 'm');
		if (!m)
			break;
		s = m + 1;
	}
	return s;
}

/* Skips the "0.00.081.426 " timestamp common/log.cpp puts first (minutes.seconds.ms.us): four
 * groups of digits joined by dots, then a blank. */
static const char *skip_timestamp(const char *s)
{
	const char *p = s;
	for (int group = 0; group < 4; group++) {
		if (group && *p++ != '.')
			return s;
		if (!isdigit((unsigned char)*p))
			return s;
		while (isdigit((unsigned char)*p))
			p++;
	}
	return *p == ' ' ? p + 1 : s;
}

/* Strips llama.cpp's log decorations: colour escapes, the timestamp and the one-letter level.
 * Sets *level to the level letter or 0. */
static const char *strip_log_prefix(const char *s, char *level)
{
	*level = 0;
	s = skip_escapes(skip_timestamp(skip_escapes(s)));
	if (s[0] && strchr("IWEDN", s[0]) && s[1] == ' ') {
		*level = s[0];
		s = skip_escapes(s + 2);
	}
	return s;
}

/* When line is "<name>: <key> = ..." for a key in perf_lines, returns the key and sets *rest
 * to the text after '='. */
static int perf_key_of(const char *line, const char **rest)
{
	const char *p = line;
	while (isalnum((unsigned char)*p) || *p == '_')
		p++;
	if (p == line || *p != ':')
		return -1;
	p = skip_blanks(p + 1);
	for (int k = 0; k < PERF_COUNT; k++) {
		const char *q = p;
		if (!eat(&q, perf_lines[k].key))
			continue;
		q = skip_blanks(q);
		if (*q != '=')
			continue;
		*rest = q + 1;
		return k;
	}
	return -1;
}

static int perf_parse_line(int key, const char *rest, const char *source, int lineno,
			   struct perf_seen *out, struct mw_error *err)
{
	const struct perf_line *pl = &perf_lines[key];
	const char *p = rest, *why;

	if ((why = read_number(&p, &out->ms)))
		return fail(err, -EINVAL, source, lineno, pl->key, "the time %s", why);
	p = skip_blanks(p);
	if (!eat(&p, "ms"))
		return fail(err, -EINVAL, source, lineno, pl->key,
			    "expected 'ms' after the time (the line is cut short or garbled)");
	p = skip_blanks(p);
	if (!pl->unit || (*p != '/' && !pl->count_required))
		return 0;
	if (*p != '/')
		return fail(err, -EINVAL, source, lineno, pl->key,
			    "expected '/ N %s' after the time (the line is cut short or garbled)",
			    pl->unit);
	p++;
	if ((why = read_count(&p, COUNT_MAX, &out->count)))
		return fail(err, -EINVAL, source, lineno, pl->key, "the %s count %s", pl->unit,
			    why);
	p = skip_blanks(p);
	if (!eat(&p, pl->unit))
		return fail(err, -EINVAL, source, lineno, pl->key, "expected '%s' after the count",
			    pl->unit);
	out->has_count = true;
	return 0;
}

static bool detect_completion(const char *buf, size_t len)
{
	return memmem(buf, len, " eval time =", 12) != NULL;
}

/* Derives the generated count from n_p_eval and n_eval as printed (see the perf_lines comment):
 * - the first generated token is sampled from the prompt's logits, and the last one sampled is
 *   never decoded, so -n 32 gives "31 runs" (recorded v0.5.0 output): generated = runs + 1;
 * - that holds only when the prompt went through a multi-token call, i.e. n_p_eval >= 2;
 *   since n_p_eval grows by 2 or more at a time, a printed 1 means it stayed 0;
 * - a printed "1 runs" is n_eval 0 or 1: t_eval grows only with n_eval, so a non-zero eval
 *   time proves 1; a zero time (or --no-perf) leaves it open. */
static void completion_derive(const struct perf_seen *seen, int64_t n_batch,
			      struct mw_adapter_result *res)
{
	const struct perf_seen *pp = &seen[PERF_PROMPT], *ev = &seen[PERF_EVAL];

	if (seen[PERF_LOAD].seen)
		res->load_ms = (struct mw_adapter_ms){ seen[PERF_LOAD].ms, true };
	if (pp->seen)
		res->prompt_ms = (struct mw_adapter_ms){ pp->ms, true };
	if (ev->seen)
		res->eval_ms = (struct mw_adapter_ms){ ev->ms, true };
	if (pp->seen && pp->count >= 2)
		res->prompt_tokens = (struct mw_adapter_count){ pp->count, true };

	if (!ev->seen) {
		set_unknown(res, "llama.cpp printed timings without an 'eval time = ... / N "
				 "runs' line (a build older than April 2023?), so the number of "
				 "generated tokens is unknown: use a newer llama.cpp build");
		return;
	}
	if (ev->count >= 2 || ev->ms > 0)
		res->eval_runs = (struct mw_adapter_count){ ev->count, true };
	if (res->eval_runs.known && ev->ms > 0)
		res->tok_per_s = (struct mw_adapter_ms){ 1e3 * (double)ev->count / ev->ms, true };

	if (!pp->seen) {
		set_unknown(res, "llama.cpp printed no 'prompt eval time' line, so it is unknown "
				 "whether the first generated token came out of the prompt's "
				 "evaluation: keep llama.cpp's full timing block");
		return;
	}
	if (pp->count < 2) {
		set_unknown(res, "llama.cpp evaluated the prompt one token at a time ('prompt eval "
				 "time ... / 1 tokens'), so its eval runs mix prompt and generated "
				 "tokens: use a prompt of two or more tokens and a batch size "
				 "(-b) of two or more");
		return;
	}
	if (n_batch > 1 && pp->count % n_batch == 0) {
		set_unknown(res,
			    "the prompt filled whole batches of n_batch = %" PRId64 " (%" PRId64
			    " tokens), so a last one-token batch may be counted among the eval "
			    "runs: change the prompt length or -b",
			    n_batch, pp->count);
		return;
	}
	if (!res->eval_runs.known) {
		set_unknown(res, "llama.cpp printed 'eval time = 0.00 ms / 1 runs', which it also "
				 "prints when no token was evaluated (it shows max(1, n)): ask for "
				 "two tokens or more (-n 2) and do not pass --no-perf");
		return;
	}
	res->decode_tokens = (struct mw_adapter_count){ ev->count + 1, true };
}

/* "generate: n_ctx = 256, n_batch = 2048, n_predict = 32, n_keep = 1" (llama-completion and
 * every main before it): n_batch lets completion_derive rule out a split prompt. */
static void completion_batch(const char *line, int64_t *n_batch)
{
	const char *p = strstr(line, "n_batch = ");
	if (strncmp(line, "generate:", 9) || !p)
		return;
	p += strlen("n_batch = ");
	int64_t v;
	if (!read_count(&p, COUNT_MAX, &v))
		*n_batch = v;
}

static int parse_completion(const char *buf, size_t len, const struct mw_adapter_opts *opts,
			    const char *source, struct mw_adapter_result *res,
			    struct mw_error *err)
{
	struct lines l = { 0 };
	struct perf_seen seen[PERF_COUNT] = { { 0 } };
	char first_error[256] = "";
	int first_error_line = 0, rc, n_seen = 0;
	int64_t n_batch = 0;
	char *raw;
	(void)opts;

	if ((rc = lines_open(&l, buf, len)))
		goto out;
	while ((raw = lines_next(&l))) {
		char level;
		const char *line = strip_log_prefix(raw, &level), *rest = NULL;
		int key = perf_key_of(line, &rest);

		if (key < 0) {
			/* The first error is the cause; later ones are its echoes. Builds without
			 * log levels say "error:" or "failed to" in the text. */
			if (!first_error[0] && (level == 'E' || strstr(line, "error:") ||
						strstr(line, "failed to load model"))) {
				snprintf(first_error, sizeof(first_error), "%s", line);
				first_error_line = l.lineno;
			}
			completion_batch(line, &n_batch);
			continue;
		}
		if (seen[key].seen) {
			rc = fail(err, -EINVAL, source, l.lineno, perf_lines[key].key,
				  "printed twice (first on line %d): memwall reads one generation "
				  "per run; do not run interactive or several prompts",
				  seen[key].line);
			goto out;
		}
		if ((rc = perf_parse_line(key, rest, source, l.lineno, &seen[key], err)))
			goto out;
		seen[key].seen = true;
		seen[key].line = l.lineno;
		n_seen++;
	}

	if (!n_seen && first_error[0]) {
		rc = fail(err, -EIO, source, first_error_line, "",
			  "llama.cpp failed and printed no timings: %s", first_error);
		goto out;
	}
	if (!n_seen) {
		set_unknown(res, "llama.cpp printed no timings, so the number of generated tokens "
				 "cannot be confirmed: remove --log-disable and keep llama.cpp's "
				 "stderr (it prints its timings there when it exits)");
		rc = 0;
		goto out;
	}
	/* The total's count is n_p_eval + n_eval as printed: a cheap check that the block is
	 * whole. */
	if (seen[PERF_TOTAL].has_count && seen[PERF_PROMPT].seen && seen[PERF_EVAL].seen &&
	    seen[PERF_TOTAL].count != seen[PERF_PROMPT].count + seen[PERF_EVAL].count) {
		rc = fail(err, -EINVAL, source, seen[PERF_TOTAL].line, "total time",
			  "%" PRId64 " tokens, but prompt eval (%" PRId64 ") + eval (%" PRId64
			  ") make %" PRId64 ": the timing block is garbled",
			  seen[PERF_TOTAL].count, seen[PERF_PROMPT].count, seen[PERF_EVAL].count,
			  seen[PERF_PROMPT].count + seen[PERF_EVAL].count);
		goto out;
	}
	completion_derive(seen, n_batch, res);
	rc = 0;
out:
	lines_close(&l);
	return rc;
}

/* ---- llama-bench -------------------------------------------------------------------------- */

/* One llama-bench test: a row of its table. Field names are llama-bench's own
 * (test::get_fields). */
struct bench_test {
	int line;            /* the line it was read from, 0 for an element of a JSON array */
	char where[32];      /* "line 3" or "element [1]", for messages */
	int64_t n_prompt, n_gen, n_depth;
	double avg_ns, stddev_ns;
	bool has_ns, has_stddev_ns;
	double avg_ts, stddev_ts;
	bool has_stddev_ts;
	int64_t reps;        /* samples_ns entries, 0 when not printed */
	char label[64];      /* markdown: the test column as printed */
};

struct bench {
	struct bench_test t[BENCH_MAX_TESTS];
	int n;
};

static struct bench_test *bench_add(struct bench *b, const char *source, int line,
				    struct mw_error *err)
{
	if (b->n == BENCH_MAX_TESTS) {
		fail(err, -EINVAL, source, line, "",
		     "more than %d tests: memwall reads one configuration per run",
		     BENCH_MAX_TESTS);
		return NULL;
	}
	struct bench_test *t = &b->t[b->n++];
	memset(t, 0, sizeof(*t));
	t->line = line;
	snprintf(t->where, sizeof(t->where), "line %d", line);
	return t;
}

/* llama-bench's test_gen() calls llama_decode() once per generated token, all inside the timed
 * interval, so a tgN test is N single-token forward passes; avg_ts is the mean over
 * repetitions of n_tokens / t (test::get_ts), which is what we report as tok/s. */
static int bench_finish(const struct bench *b, const char *source, struct mw_adapter_result *res,
			struct mw_error *err)
{
	const struct bench_test *pp = NULL, *tg = NULL;
	int n_pg = 0;

	if (!b->n) {
		set_unknown(res, "llama-bench printed no test results: check that it ran to the "
				 "end (its stderr says why it stopped)");
		return 0;
	}
	for (int i = 0; i < b->n; i++) {
		const struct bench_test *t = &b->t[i];
		const struct bench_test **slot = NULL;
		if (t->n_prompt > 0 && t->n_gen == 0)
			slot = &pp;
		else if (t->n_gen > 0 && t->n_prompt == 0)
			slot = &tg;
		else if (t->n_gen > 0)
			n_pg++;
		else
			return fail(err, -EINVAL, source, t->line, "n_prompt",
				    "a test with n_prompt = 0 and n_gen = 0");
		if (slot && *slot)
			return fail(err, -EINVAL, source, t->line, "",
				    "a second %s test (the first is at %s): memwall reads one "
				    "configuration per run; give -p, -n, -t and the other options "
				    "one value each",
				    slot == &pp ? "prompt (pp)" : "generation (tg)",
				    (*slot)->where);
		if (slot)
			*slot = t;
	}
	if (pp) {
		res->prompt_tokens = (struct mw_adapter_count){ pp->n_prompt, true };
		if (pp->has_ns)
			res->prompt_ms = (struct mw_adapter_ms){ pp->avg_ns / 1e6, true };
	}
	if (!tg) {
		set_unknown(res, "llama-bench ran no generation test (tgN)%s, so no decode "
				 "figures: pass -n N",
			    n_pg ? " (a pp+tg test times prompt and decode together)" : "");
		return 0;
	}
	res->decode_tokens = (struct mw_adapter_count){ tg->n_gen, true };
	res->eval_runs = (struct mw_adapter_count){ tg->n_gen, true };
	if (tg->has_ns)
		res->eval_ms = (struct mw_adapter_ms){ tg->avg_ns / 1e6, true };
	res->tok_per_s = (struct mw_adapter_ms){ tg->avg_ts, true };
	if (tg->has_stddev_ts)
		res->tok_per_s_sd = (struct mw_adapter_ms){ tg->stddev_ts, true };
	if (tg->reps)
		res->repetitions = (struct mw_adapter_count){ tg->reps, true };
	return 0;
}

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
	return fail(at->err, -EINVAL, at->source, at->line, field, "%s", text);
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
	if (!(t = bench_add(b, at->source, at->line, at->err)))
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
	return fail(err, -EINVAL, source, je->line, "", "not valid JSON: %s (column %d)", je->text,
		    je->column);
}

static bool detect_first_byte(const char *buf, size_t len, char c)
{
	size_t i = 0;
	while (i < len && isspace((unsigned char)buf[i]))
		i++;
	return i < len && buf[i] == c;
}

static bool detect_bench_json(const char *buf, size_t len)
{
	return detect_first_byte(buf, len, '[');
}

static bool detect_bench_jsonl(const char *buf, size_t len)
{
	return detect_first_byte(buf, len, '{');
}

static int parse_bench_json(const char *buf, size_t len, const struct mw_adapter_opts *opts,
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
		rc = fail(err, -EINVAL, source, 1, "",
			  "expected a JSON array of tests (llama-bench -o json); for one object "
			  "per line use llama-bench-jsonl");
		goto out;
	}
	json_array_foreach(root, i, o) {
		struct json_at at = { source, 0, (int)i, err };
		if ((rc = bench_from_object(o, b, &at)))
			goto out;
	}
	rc = bench_finish(b, source, res, err);
out:
	json_decref(root);
	free(b);
	return rc;
}

static int parse_bench_jsonl(const char *buf, size_t len, const struct mw_adapter_opts *opts,
			     const char *source, struct mw_adapter_result *res,
			     struct mw_error *err)
{
	struct lines l = { 0 };
	struct bench *b = NULL;
	json_t *o = NULL;
	char *line;
	int rc;
	(void)opts;

	if (!(b = calloc(1, sizeof(*b))) || (rc = lines_open(&l, buf, len))) {
		rc = -ENOMEM;
		goto out;
	}
	while ((line = lines_next(&l))) {
		json_error_t je;
		if (all_blank(line))
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
	rc = bench_finish(b, source, res, err);
out:
	json_decref(o);
	lines_close(&l);
	free(b);
	return rc;
}

/* CSV: a header of field names, then one row per test; every value is quoted, and a quote
 * inside a value is doubled (llama-bench's csv_printer::escape_csv). Splits line in place into
 * at most max cells; returns the cell count, or -1 on an unterminated quote. */
static int csv_split(char *line, char **cells, int max)
{
	int n = 0;
	char *r = line, *w = line;
	for (;;) {
		if (n == max)
			return max + 1;
		cells[n++] = w;
		if (*r == '"') {
			r++;
			for (;;) {
				if (!*r)
					return -1;
				if (*r == '"' && r[1] == '"') {
					*w++ = '"';
					r += 2;
				} else if (*r == '"') {
					r++;
					break;
				} else {
					*w++ = *r++;
				}
			}
		} else {
			while (*r && *r != ',')
				*w++ = *r++;
		}
		if (*r != ',' && *r)
			return -1;
		bool more = *r == ',';
		*w++ = '\0';
		if (!more)
			return n;
		r++;
	}
}

enum csv_col { CSV_N_PROMPT, CSV_N_GEN, CSV_N_DEPTH, CSV_AVG_NS, CSV_STDDEV_NS, CSV_AVG_TS,
	       CSV_STDDEV_TS, CSV_COLS };
static const struct { const char *name; bool required; } csv_cols[CSV_COLS] = {
	[CSV_N_PROMPT] = { "n_prompt", true },   [CSV_N_GEN] = { "n_gen", true },
	[CSV_N_DEPTH] = { "n_depth", false },    [CSV_AVG_NS] = { "avg_ns", true },
	[CSV_STDDEV_NS] = { "stddev_ns", false }, [CSV_AVG_TS] = { "avg_ts", true },
	[CSV_STDDEV_TS] = { "stddev_ts", false },
};
#define CSV_MAX_CELLS 128

/* Length of the first line of buf. */
static size_t first_line_len(const char *buf, size_t len)
{
	size_t n = 0;
	while (n < len && buf[n] != '\n')
		n++;
	return n;
}

static bool detect_bench_csv(const char *buf, size_t len)
{
	size_t n = buf ? first_line_len(buf, len) : 0;
	return n > 0 && memmem(buf, n, "n_prompt", 8) && memmem(buf, n, "n_gen", 5) &&
	       memchr(buf, ',', n) && buf[0] != '|' && buf[0] != '{' && buf[0] != '[';
}

static int csv_row(char **cells, const int *col, struct bench_test *t, const char *source,
		   int line, struct mw_error *err)
{
	int64_t ns = 0;
	const char *why;
	for (int c = 0; c < CSV_COLS; c++) {
		if (col[c] < 0)
			continue;
		const char *s = cells[col[c]];
		switch (c) {
		case CSV_N_PROMPT: why = cell_count(s, COUNT_MAX, &t->n_prompt); break;
		case CSV_N_GEN: why = cell_count(s, COUNT_MAX, &t->n_gen); break;
		case CSV_N_DEPTH: why = cell_count(s, COUNT_MAX, &t->n_depth); break;
		case CSV_AVG_NS: why = cell_count(s, NS_MAX, &ns); break;
		case CSV_STDDEV_NS: why = cell_number(s, &t->stddev_ns); break;
		case CSV_AVG_TS: why = cell_number(s, &t->avg_ts); break;
		default: why = cell_number(s, &t->stddev_ts); break;
		}
		if (why)
			return fail(err, -EINVAL, source, line, csv_cols[c].name, "'%s' %s", s,
				    why);
	}
	t->avg_ns = (double)ns;
	t->has_ns = true;
	t->has_stddev_ns = col[CSV_STDDEV_NS] >= 0;
	t->has_stddev_ts = col[CSV_STDDEV_TS] >= 0;
	return 0;
}

static int parse_bench_csv(const char *buf, size_t len, const struct mw_adapter_opts *opts,
			   const char *source, struct mw_adapter_result *res,
			   struct mw_error *err)
{
	struct lines l = { 0 };
	struct bench *b = NULL;
	char **cells = NULL, *line;
	int col[CSV_COLS], n_header = 0, rc;
	(void)opts;

	if (!(b = calloc(1, sizeof(*b))) || !(cells = calloc(CSV_MAX_CELLS, sizeof(*cells))) ||
	    lines_open(&l, buf, len)) {
		rc = -ENOMEM;
		goto out;
	}
	while ((line = lines_next(&l))) {
		if (all_blank(line))
			continue;
		int n = csv_split(line, cells, CSV_MAX_CELLS);
		if (n < 0 || n > CSV_MAX_CELLS) {
			rc = fail(err, -EINVAL, source, l.lineno, "",
				  n < 0 ? "a quoted value is not closed (the line is cut short)"
					: "more than %d columns", CSV_MAX_CELLS);
			goto out;
		}
		if (!n_header) {
			for (int c = 0; c < CSV_COLS; c++) {
				col[c] = -1;
				for (int i = 0; i < n; i++)
					if (!strcmp(cells[i], csv_cols[c].name))
						col[c] = i;
				if (col[c] < 0 && csv_cols[c].required) {
					rc = fail(err, -EINVAL, source, l.lineno, csv_cols[c].name,
						  "no such column in the header: not llama-bench "
						  "-o csv output?");
					goto out;
				}
			}
			n_header = n;
			continue;
		}
		if (n != n_header) {
			rc = fail(err, -EINVAL, source, l.lineno, "",
				  "%d values for %d columns (the line is cut short or garbled)", n,
				  n_header);
			goto out;
		}
		struct bench_test *t = bench_add(b, source, l.lineno, err);
		if (!t || (rc = csv_row(cells, col, t, source, l.lineno, err))) {
			rc = -EINVAL;
			goto out;
		}
	}
	rc = bench_finish(b, source, res, err);
out:
	lines_close(&l);
	free(cells);
	free(b);
	return rc;
}

/* Markdown: "| model | size | ... | test | t/s |", a rule, then rows such as
 * "| ... | pp512 | 1234.56 ± 7.89 |"; test labels are pp<N>, tg<N> or pp<N>+tg<N>, with
 * " @ d<D>" (or "@d<D>") when a depth was set (llama-bench's markdown_printer). The table
 * carries no times, only t/s. */
static bool detect_bench_md(const char *buf, size_t len)
{
	size_t n = first_line_len(buf, len);
	return detect_first_byte(buf, len, '|') && memmem(buf, n, " test ", 6) &&
	       memmem(buf, n, " t/s ", 5);
}

/* Splits "| a | b |" into trimmed cells in place; returns the count, or -1 when the row is
 * not closed by '|'. */
static int md_split(char *line, char **cells, int max)
{
	char *p = line;
	int n = 0;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '|')
		return -1;
	p++;
	for (;;) {
		char *bar = strchr(p, '|');
		if (!bar)
			return all_blank(p) ? n : -1;
		if (n == max)
			return max + 1;
		*bar = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		char *e = p + strlen(p);
		while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		cells[n++] = p;
		p = bar + 1;
	}
}

static const char *md_label(const char *s, struct bench_test *t)
{
	const char *p = s, *why;
	if (eat(&p, "pp")) {
		if ((why = read_count(&p, COUNT_MAX, &t->n_prompt)))
			return why;
		if (eat(&p, "+tg") && (why = read_count(&p, COUNT_MAX, &t->n_gen)))
			return why;
	} else if (eat(&p, "tg")) {
		if ((why = read_count(&p, COUNT_MAX, &t->n_gen)))
			return why;
	} else {
		return "is not a test label (ppN, tgN, ppN+tgN)";
	}
	p = skip_blanks(p);
	if (eat(&p, "@")) {
		p = skip_blanks(p);
		if (!eat(&p, "d") || (why = read_count(&p, COUNT_MAX, &t->n_depth)))
			return "has a depth that is not '@ dN'";
	}
	return *skip_blanks(p) ? "has unexpected text after the test label" : NULL;
}

/* "12086.39 ± 742.55", or a bare mean. */
static const char *md_rate(const char *s, struct bench_test *t)
{
	const char *p = s, *why;
	if ((why = read_number(&p, &t->avg_ts)))
		return why;
	p = skip_blanks(p);
	if (!*p)
		return NULL;
	if (!eat(&p, "\xc2\xb1") && !eat(&p, "+-"))
		return "is not 'mean \xc2\xb1 sd'";
	if ((why = read_number(&p, &t->stddev_ts)))
		return why;
	t->has_stddev_ts = true;
	return *skip_blanks(p) ? "is not 'mean \xc2\xb1 sd'" : NULL;
}

static int parse_bench_md(const char *buf, size_t len, const struct mw_adapter_opts *opts,
			  const char *source, struct mw_adapter_result *res, struct mw_error *err)
{
	struct lines l = { 0 };
	struct bench *b = NULL;
	char *cells[CSV_MAX_CELLS], *line;
	int test_col = -1, ts_col = -1, n_header = 0, rc;
	(void)opts;

	if (!(b = calloc(1, sizeof(*b))) || lines_open(&l, buf, len)) {
		rc = -ENOMEM;
		goto out;
	}
	while ((line = lines_next(&l))) {
		if (*skip_blanks(line) != '|')
			continue; /* blank lines and the "build: ..." footer */
		int n = md_split(line, cells, CSV_MAX_CELLS);
		if (n < 0 || n > CSV_MAX_CELLS) {
			rc = fail(err, -EINVAL, source, l.lineno, "",
				  "a table row that does not end with '|' (the line is cut short)");
			goto out;
		}
		if (!n_header) {
			for (int i = 0; i < n; i++) {
				if (!strcmp(cells[i], "test"))
					test_col = i;
				if (!strcmp(cells[i], "t/s"))
					ts_col = i;
			}
			if (test_col < 0 || ts_col < 0) {
				rc = fail(err, -EINVAL, source, l.lineno,
					  test_col < 0 ? "test" : "t/s",
					  "no such column in the table header: not llama-bench "
					  "-o md output?");
				goto out;
			}
			n_header = n;
			continue;
		}
		if (n && cells[0][0] == '-')
			continue; /* the rule under the header */
		if (n != n_header) {
			rc = fail(err, -EINVAL, source, l.lineno, "",
				  "%d cells for %d columns (the line is cut short or garbled)", n,
				  n_header);
			goto out;
		}
		struct bench_test *t = bench_add(b, source, l.lineno, err);
		const char *why;
		if (!t) {
			rc = -EINVAL;
			goto out;
		}
		snprintf(t->label, sizeof(t->label), "%s", cells[test_col]);
		if ((why = md_label(cells[test_col], t))) {
			rc = fail(err, -EINVAL, source, l.lineno, "test", "'%s' %s",
				  cells[test_col], why);
			goto out;
		}
		if ((why = md_rate(cells[ts_col], t))) {
			rc = fail(err, -EINVAL, source, l.lineno, "t/s", "'%s' %s", cells[ts_col],
				  why);
			goto out;
		}
	}
	if (!n_header) {
		rc = fail(err, -EINVAL, source, 0, "", "no markdown table: not llama-bench -o md "
						    "output?");
		goto out;
	}
	rc = bench_finish(b, source, res, err);
out:
	lines_close(&l);
	free(b);
	return rc;
}

/* Any of the four formats, by their first bytes. */
static bool detect_bench(const char *buf, size_t len);
static int parse_bench(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		       const char *source, struct mw_adapter_result *res, struct mw_error *err);

/* ---- memwall-tokens: the generic line ----------------------------------------------------- */

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
		return read_count(p, COUNT_MAX, &v->count[key]);
	return read_number(p, &v->ms[key]);
}

/* "decode=32 prompt=5 ...": strict, since the program chose to print this line. */
static int gen_parse_line(const char *p, struct gen_values *v, const char *source, int lineno,
			  struct mw_error *err)
{
	for (p = skip_blanks(p); *p; p = skip_blanks(p)) {
		const char *name = p, *why;
		while (*p && *p != '=' && *p != ' ' && *p != '\t')
			p++;
		int key = gen_key_of(name, (size_t)(p - name));
		if (key < 0)
			return fail(err, -EINVAL, source, lineno, "memwall-tokens",
				    "unknown key '%.*s' (keys: decode, prompt, decode_ms, "
				    "decode_steps, prompt_ms, load_ms)",
				    (int)(p - name), name);
		if (*p != '=')
			return fail(err, -EINVAL, source, lineno, gen_keys[key].name,
				    "expected '=' and a value after the key");
		p++;
		if (v->has[key])
			return fail(err, -EINVAL, source, lineno, gen_keys[key].name,
				    "given twice");
		if ((why = gen_read(key, &p, v)))
			return fail(err, -EINVAL, source, lineno, gen_keys[key].name,
				    "the value %s", why);
		if (*p && *p != ' ' && *p != '\t')
			return fail(err, -EINVAL, source, lineno, gen_keys[key].name,
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
			return fail(err, -EINVAL, "output pattern", 0, "pattern",
				    "'{' without '}' in \"%s\"", pattern);
		int key = gen_key_of(p + 1, (size_t)(close - p - 1));
		if (key < 0)
			return fail(err, -EINVAL, "output pattern", 0, "pattern",
				    "unknown key {%.*s} in \"%s\" (keys: decode, prompt, "
				    "decode_ms, decode_steps, prompt_ms, load_ms)",
				    (int)(close - p - 1), p + 1, pattern);
		if (used[key])
			return fail(err, -EINVAL, "output pattern", 0, "pattern",
				    "{%s} appears twice in \"%s\"", gen_keys[key].name, pattern);
		if (close[1] == '{')
			return fail(err, -EINVAL, "output pattern", 0, "pattern",
				    "{%s} is followed directly by another key in \"%s\": put text "
				    "between them",
				    gen_keys[key].name, pattern);
		used[key] = true;
		p = close;
	}
	if (!used[GEN_DECODE])
		return fail(err, -EINVAL, "output pattern", 0, "pattern",
			    "\"%s\" has no {decode}: memwall needs the generated token count",
			    pattern);
	return 0;
}

/* True when line starts with pattern; fills v. A number that does not read is no match: the
 * pattern defines the line, and text that does not fit it is some other line. */
static bool gen_pattern_match(const char *pattern, const char *line, struct gen_values *v)
{
	struct gen_values m = { 0 };
	const char *p = pattern, *s = skip_blanks(line);
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
			p = skip_blanks(p);
			s = skip_blanks(s);
		} else if (*p++ != *s++) {
			return false;
		}
	}
	*v = m;
	return true;
}

static bool detect_generic(const char *buf, size_t len)
{
	return memmem(buf, len, GEN_PREFIX, strlen(GEN_PREFIX)) != NULL;
}

static int parse_generic(const char *buf, size_t len, const struct mw_adapter_opts *opts,
			 const char *source, struct mw_adapter_result *res, struct mw_error *err)
{
	const char *pattern = opts ? opts->pattern : NULL;
	struct lines l = { 0 };
	struct gen_values v = { 0 };
	int found_line = 0, rc;
	char *line;

	if (pattern && (rc = gen_pattern_check(pattern, err)))
		goto out;
	if ((rc = lines_open(&l, buf, len)))
		goto out;
	while ((line = lines_next(&l))) {
		struct gen_values here = { 0 };
		const char *p = skip_blanks(line);
		if (pattern) {
			if (!gen_pattern_match(pattern, p, &here))
				continue;
		} else {
			if (!eat(&p, GEN_PREFIX))
				continue;
			if ((rc = gen_parse_line(p, &here, source, l.lineno, err)))
				goto out;
		}
		if (found_line) {
			rc = fail(err, -EINVAL, source, l.lineno, "memwall-tokens",
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
			set_unknown(res, "no line of the output matches the pattern \"%s\", so the "
					 "number of generated tokens is unknown: check the "
					 "program's output against the protocol's pattern",
				    pattern);
		else
			set_unknown(res, "no '" GEN_PREFIX " decode=N ...' line in the output, so "
					 "the number of generated tokens is unknown: make the "
					 "program print one (see src/adapters.h)");
		rc = 0;
		goto out;
	}
	if (!v.has[GEN_DECODE]) {
		rc = fail(err, -EINVAL, source, found_line, "decode",
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
			rc = fail(err, -EINVAL, source, found_line, "decode_steps",
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
		rc = fail(err, -EINVAL, source, found_line, "decode_steps",
			  "given without decode_ms: steps only say what decode_ms covers");
		goto out;
	}
	rc = 0;
out:
	lines_close(&l);
	return rc;
}

/* ---- The table ---------------------------------------------------------------------------- */

static const struct mw_adapter adapters[] = {
	{ "memwall-tokens", MW_ADAPTER_BOTH, detect_generic, parse_generic,
	  "a 'memwall-tokens: decode=N ...' line, or a protocol's pattern" },
	{ "llama-bench", MW_ADAPTER_STDOUT, detect_bench, parse_bench,
	  "llama-bench output in any of its formats (json, jsonl, csv, md)" },
	{ "llama-completion", MW_ADAPTER_STDERR, detect_completion, parse_completion,
	  "llama.cpp's perf lines at exit (llama-completion, llama-cli, main)" },
	{ "llama-cli", MW_ADAPTER_STDERR, detect_completion, parse_completion,
	  "the same as llama-completion" },
	{ "llama-bench-json", MW_ADAPTER_STDOUT, detect_bench_json, parse_bench_json,
	  "llama-bench -o json" },
	{ "llama-bench-jsonl", MW_ADAPTER_STDOUT, detect_bench_jsonl, parse_bench_jsonl,
	  "llama-bench -o jsonl" },
	{ "llama-bench-csv", MW_ADAPTER_STDOUT, detect_bench_csv, parse_bench_csv,
	  "llama-bench -o csv" },
	{ "llama-bench-md", MW_ADAPTER_STDOUT, detect_bench_md, parse_bench_md,
	  "llama-bench -o md (t/s only: no times)" },
};
#define N_ADAPTERS (sizeof(adapters) / sizeof(adapters[0]))

/* llama-bench's own formats are the rows named llama-bench-<format>. */
static bool is_bench_format(const struct mw_adapter *a)
{
	return !strncmp(a->name, "llama-bench-", strlen("llama-bench-"));
}

static bool detect_bench(const char *buf, size_t len)
{
	for (size_t i = 0; i < N_ADAPTERS; i++)
		if (is_bench_format(&adapters[i]) && adapters[i].detect(buf, len))
			return true;
	return false;
}

static int parse_bench(const char *buf, size_t len, const struct mw_adapter_opts *opts,
		       const char *source, struct mw_adapter_result *res, struct mw_error *err)
{
	for (size_t i = 0; i < N_ADAPTERS; i++) {
		if (!is_bench_format(&adapters[i]) || !adapters[i].detect(buf, len))
			continue;
		int rc = adapters[i].parse(buf, len, opts, source, res, err);
		res->adapter = adapters[i].name;
		return rc;
	}
	if (len == 0 || all_blank_n(buf, len)) {
		set_unknown(res, "llama-bench printed nothing on stdout, so there are no figures: "
				 "check its stderr and exit code");
		return 0;
	}
	return fail(err, -EINVAL, source, 1, "",
		    "not llama-bench output in a known format (json, jsonl, csv, md): pass "
		    "-o json");
}

const struct mw_adapter *mw_adapter_find(const char *name)
{
	for (size_t i = 0; name && i < N_ADAPTERS; i++)
		if (!strcmp(adapters[i].name, name))
			return &adapters[i];
	return NULL;
}

const struct mw_adapter *mw_adapter_detect(const char *buf, size_t len)
{
	for (size_t i = 0; i < N_ADAPTERS; i++)
		if (adapters[i].detect(buf, len))
			return &adapters[i];
	return NULL;
}

const struct mw_adapter *mw_adapter_list(size_t *n)
{
	*n = N_ADAPTERS;
	return adapters;
}

int mw_adapter_parse(const char *name, const char *buf, size_t len,
		     const struct mw_adapter_opts *opts, const char *source,
		     struct mw_adapter_result *res, struct mw_error *err)
{
	const struct mw_adapter *a = mw_adapter_find(name);
	memset(res, 0, sizeof(*res));
	mw_error_clear(err);
	if (!a)
		return fail(err, -EINVAL, source, 0, "adapter",
			    "unknown adapter '%s' (memwall-tokens, llama-completion, llama-cli, "
			    "llama-bench, llama-bench-json, -jsonl, -csv, -md)",
			    name ? name : "(null)");
	res->adapter = a->name;
	int rc = a->parse(buf ? buf : "", buf ? len : 0, opts, source, res, err);
	if (rc == 0 && !res->decode_tokens.known && !res->why_unknown[0])
		set_unknown(res, "the %s adapter could not confirm the generated token count",
			    a->name);
	return rc;
}

int mw_adapter_check(const struct mw_adapter_result *res, int64_t target, bool allow_short,
		     const char *source, struct mw_error *err)
{
	if (!res->decode_tokens.known)
		return fail(err, -ENODATA, source, 0, "decode tokens", "%s", res->why_unknown);
	if (res->decode_tokens.value < target && !allow_short)
		return fail(err, -ERANGE, source, 0, "decode tokens",
			    "%" PRId64 " tokens generated of the %" PRId64 " asked for: generation "
			    "stopped early (an end-of-sequence token?); pass --ignore-eos, or "
			    "allow short runs in the protocol",
			    res->decode_tokens.value, target);
	if (res->decode_tokens.value > target)
		return fail(err, -EPROTO, source, 0, "decode tokens",
			    "%" PRId64 " tokens generated but %" PRId64 " asked for: the command "
			    "template does not pass the token count where the program reads it",
			    res->decode_tokens.value, target);
	return 0;
}
