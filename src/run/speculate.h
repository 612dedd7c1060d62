/* src/run/speculate.h: prompt-lookup speculation (issue 17), shared by `memwall generate
 * --speculate lookup` (src/cli/gen_spec.c) and the runner's protocol field "speculative"
 * (src/run/engine_builtin.c). One call drafts from the context, verifies the draft in one
 * pass (eng_session_verify) and accepts the longest prefix the greedy argmax agrees with,
 * plus the model's own next token; the cache forgets the rest (eng_session_truncate). */
#ifndef MEMWALL_RUN_SPECULATE_H
#define MEMWALL_RUN_SPECULATE_H

#include "engine.h"

/* One verification pass's outcome. */
struct mw_spec_pass {
	int drafted;   /* draft tokens proposed (0: no match; the pass is a plain step) */
	int accepted;  /* of them, accepted: the pass yields accepted + 1 tokens */
	struct eng_step_bytes bytes; /* the pass's engine bytes */
};

/* The draft: the tokens that followed an earlier occurrence of the context's last ng tokens,
 * for ng from ng_max down to ng_min (most recent occurrence followed by k tokens first); up
 * to k of them into out. Returns their count (0: no match). */
int mw_spec_draft(const int *ctx, int n, int ng_min, int ng_max, int k, int *out);

/* The greedy choice, as the sampler makes it at temperature 0 (the first of equal maxima). */
int mw_spec_argmax(const float *x, int n);

/* One pass: ctx[0..*n_ctx) is the context whose last token is not yet in the cache (it sits
 * at position *n_ctx - 1); drafts up to k tokens (k <= the session's verify_tokens - 1) with
 * n-grams ng_min..ng_max, verifies, truncates the cache, and appends the accepted tokens and
 * the model's next one to ctx (room for k + 1 more). pass is scratch of k + 1 ints. 0, or the
 * engine's negative error (the context is unchanged then). */
int mw_spec_step(struct eng_session *s, int vocab, int *ctx, int *n_ctx, int k, int ng_min,
		 int ng_max, int *pass, struct mw_spec_pass *out);

#endif
