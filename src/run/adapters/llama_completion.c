/* src/run/adapters/llama_completion.c: the llama-completion and llama-cli rows: the perf
 * lines llama.cpp prints on stderr at exit, in every version since spring 2023. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "adapters.h"
#include "internal.h"

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
	p = mw_ad_skip_blanks(p + 1);
	for (int k = 0; k < PERF_COUNT; k++) {
		const char *q = p;
		if (!mw_ad_eat(&q, perf_lines[k].key))
			continue;
		q = mw_ad_skip_blanks(q);
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

	if ((why = mw_ad_read_number(&p, &out->ms)))
		return mw_ad_fail(err, -EINVAL, source, lineno, pl->key, "the time %s", why);
	p = mw_ad_skip_blanks(p);
	if (!mw_ad_eat(&p, "ms"))
		return mw_ad_fail(err, -EINVAL, source, lineno, pl->key,
			    "expected 'ms' after the time (the line is cut short or garbled)");
	p = mw_ad_skip_blanks(p);
	if (!pl->unit || (*p != '/' && !pl->count_required))
		return 0;
	if (*p != '/')
		return mw_ad_fail(err, -EINVAL, source, lineno, pl->key,
			    "expected '/ N %s' after the time (the line is cut short or garbled)",
			    pl->unit);
	p++;
	if ((why = mw_ad_read_count(&p, COUNT_MAX, &out->count)))
		return mw_ad_fail(err, -EINVAL, source, lineno, pl->key, "the %s count %s", pl->unit,
			    why);
	p = mw_ad_skip_blanks(p);
	if (!mw_ad_eat(&p, pl->unit))
		return mw_ad_fail(err, -EINVAL, source, lineno, pl->key, "expected '%s' after the count",
			    pl->unit);
	out->has_count = true;
	return 0;
}

bool mw_ad_detect_completion(const char *buf, size_t len)
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
		mw_ad_set_unknown(res, "llama.cpp printed timings without an 'eval time = ... / N "
				 "runs' line (a build older than April 2023?), so the number of "
				 "generated tokens is unknown: use a newer llama.cpp build");
		return;
	}
	if (ev->count >= 2 || ev->ms > 0)
		res->eval_runs = (struct mw_adapter_count){ ev->count, true };
	if (res->eval_runs.known && ev->ms > 0)
		res->tok_per_s = (struct mw_adapter_ms){ 1e3 * (double)ev->count / ev->ms, true };

	if (!pp->seen) {
		mw_ad_set_unknown(res, "llama.cpp printed no 'prompt eval time' line, so it is unknown "
				 "whether the first generated token came out of the prompt's "
				 "evaluation: keep llama.cpp's full timing block");
		return;
	}
	if (pp->count < 2) {
		mw_ad_set_unknown(res, "llama.cpp evaluated the prompt one token at a time ('prompt eval "
				 "time ... / 1 tokens'), so its eval runs mix prompt and generated "
				 "tokens: use a prompt of two or more tokens and a batch size "
				 "(-b) of two or more");
		return;
	}
	if (n_batch > 1 && pp->count % n_batch == 0) {
		mw_ad_set_unknown(res,
			    "the prompt filled whole batches of n_batch = %" PRId64 " (%" PRId64
			    " tokens), so a last one-token batch may be counted among the eval "
			    "runs: change the prompt length or -b",
			    n_batch, pp->count);
		return;
	}
	if (!res->eval_runs.known) {
		mw_ad_set_unknown(res, "llama.cpp printed 'eval time = 0.00 ms / 1 runs', which it also "
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
	if (!mw_ad_read_count(&p, COUNT_MAX, &v))
		*n_batch = v;
}

int mw_ad_parse_completion(const char *buf, size_t len, const struct mw_adapter_opts *opts,
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

	if ((rc = mw_ad_lines_open(&l, buf, len)))
		goto out;
	while ((raw = mw_ad_lines_next(&l))) {
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
			rc = mw_ad_fail(err, -EINVAL, source, l.lineno, perf_lines[key].key,
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
		rc = mw_ad_fail(err, -EIO, source, first_error_line, "",
			  "llama.cpp failed and printed no timings: %s", first_error);
		goto out;
	}
	if (!n_seen) {
		mw_ad_set_unknown(res, "llama.cpp printed no timings, so the number of generated tokens "
				 "cannot be confirmed: remove --log-disable and keep llama.cpp's "
				 "stderr (it prints its timings there when it exits)");
		rc = 0;
		goto out;
	}
	/* The total's count is n_p_eval + n_eval as printed: a cheap check that the block is
	 * whole. */
	if (seen[PERF_TOTAL].has_count && seen[PERF_PROMPT].seen && seen[PERF_EVAL].seen &&
	    seen[PERF_TOTAL].count != seen[PERF_PROMPT].count + seen[PERF_EVAL].count) {
		rc = mw_ad_fail(err, -EINVAL, source, seen[PERF_TOTAL].line, "total time",
			  "%" PRId64 " tokens, but prompt eval (%" PRId64 ") + eval (%" PRId64
			  ") make %" PRId64 ": the timing block is garbled",
			  seen[PERF_TOTAL].count, seen[PERF_PROMPT].count, seen[PERF_EVAL].count,
			  seen[PERF_PROMPT].count + seen[PERF_EVAL].count);
		goto out;
	}
	completion_derive(seen, n_batch, res);
	rc = 0;
out:
	mw_ad_lines_close(&l);
	return rc;
}
