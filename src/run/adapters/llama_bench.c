/* src/run/adapters/llama_bench.c: what the four llama-bench formats share: the table of
 * tests they read, and the one result it reduces to. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "adapters.h"
#include "internal.h"

struct bench_test *mw_ad_bench_add(struct bench *b, const char *source, int line,
			     struct mw_error *err)
{
	if (b->n == BENCH_MAX_TESTS) {
		mw_ad_fail(err, -EINVAL, source, line, "",
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
int mw_ad_bench_finish(const struct bench *b, const char *source, struct mw_adapter_result *res,
		 struct mw_error *err)
{
	const struct bench_test *pp = NULL, *tg = NULL;
	int n_pg = 0;

	if (!b->n) {
		mw_ad_set_unknown(res, "llama-bench printed no test results: check that it ran to the "
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
			return mw_ad_fail(err, -EINVAL, source, t->line, "n_prompt",
				    "a test with n_prompt = 0 and n_gen = 0");
		if (slot && *slot)
			return mw_ad_fail(err, -EINVAL, source, t->line, "",
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
		mw_ad_set_unknown(res, "llama-bench ran no generation test (tgN)%s, so no decode "
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
