/* src/run/speculate.c: prompt-lookup speculation, after prompt-lookup decoding (Saxena 2023;
 * llama.cpp's lookup example). Each token comes from the argmax of logits that carry the bits
 * a one-token step gives (engine.h, eng_session_verify), so the output is plain greedy
 * decoding's; what changes is how many passes over the weights it takes. */
#include <string.h>

#include "speculate.h"

int mw_spec_draft(const int *ctx, int n, int ng_min, int ng_max, int k, int *out)
{
	for (int ng = ng_max; ng >= ng_min; ng--) {
		if (n < ng + 1)
			continue;
		const int *tail = ctx + n - ng;
		int best = -1, best_len = 0;
		/* The most recent occurrence followed by k tokens, else the one followed by the
		 * most (a run of one token repeated matches just before the end first). */
		for (int j = n - ng - 1; j >= 0 && best_len < k; j--) {
			int len = n - (j + ng) < k ? n - (j + ng) : k;
			if (len > best_len && !memcmp(ctx + j, tail, (size_t)ng * sizeof(*ctx))) {
				best = j + ng;
				best_len = len;
			}
		}
		if (best >= 0) {
			memcpy(out, ctx + best, (size_t)best_len * sizeof(*ctx));
			return best_len;
		}
	}
	return 0;
}

int mw_spec_argmax(const float *x, int n)
{
	int best = 0;
	for (int i = 1; i < n; i++)
		if (x[i] > x[best])
			best = i;
	return best;
}

int mw_spec_step(struct eng_session *s, int vocab, int *ctx, int *n_ctx, int k, int ng_min,
		 int ng_max, int *pass, struct mw_spec_pass *out)
{
	int pos0 = *n_ctx - 1, rc;
	int drafted = k > 0 ? mw_spec_draft(ctx, *n_ctx, ng_min, ng_max, k, pass + 1) : 0;
	const float *logits;
	pass[0] = ctx[pos0];
	memset(out, 0, sizeof(*out));
	if ((rc = eng_session_verify(s, pass, drafted + 1, pos0, &logits, &out->bytes)))
		return rc;
	int i = 0;
	while (i < drafted &&
	       mw_spec_argmax(logits + (size_t)i * (size_t)vocab, vocab) == pass[1 + i])
		i++;
	int next = mw_spec_argmax(logits + (size_t)i * (size_t)vocab, vocab);
	/* Positions after the last accepted token hold the rejected draft's keys. */
	if ((rc = eng_session_truncate(s, pos0 + i + 1)))
		return rc;
	for (int t = 0; t < i; t++)
		ctx[(*n_ctx)++] = pass[1 + t];
	ctx[(*n_ctx)++] = next;
	out->drafted = drafted;
	out->accepted = i;
	return 0;
}
