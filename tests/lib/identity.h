/* tests/lib/identity.h: what the identity tests share (issue 26): synthetic models of either
 * construction (engine.h, eng_synth_construction), a greedy run that keeps the logits of
 * every position, and the comparisons: ids, distinct ids, first differing position, largest
 * logit difference. Include after test.h.
 *
 * Why the varied construction: the legacy one's greedy output repeats one token, so two paths
 * that disagree about attention still print the same ids; the varied one's next token is read
 * through attention (64 distinct ids in 64 on stories15M), and a broken attention changes it
 * (test_attention.c's deliberate faults).
 */
#ifndef MEMWALL_TEST_IDENTITY_H
#define MEMWALL_TEST_IDENTITY_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "values.h"

/* Writes a llama2.c model of construction c (act: the FFN activation). 0 or the engine's
 * error, printed. */
static inline int t_id_synth_l2c(const char *path, const char *shape, uint64_t seed,
			       enum eng_synth_construction c, enum eng_ffn_act act)
{
	struct eng_error err;
	struct eng_synth_opts o = { .construction = c, .act = act };
	eng_error_clear(&err);
	int rc = eng_synth_llama2c_opts(path, shape, seed, &o, &err);
	if (rc)
		fprintf(stderr, "%s: %s\n", path, err.text);
	return rc;
}

static inline int t_id_synth_gguf(const char *path, const char *arch, const char *shape,
				const char *quant, uint64_t seed, enum eng_synth_construction c)
{
	struct eng_error err;
	struct eng_synth_opts o = { .construction = c };
	eng_error_clear(&err);
	int rc = eng_synth_gguf_opts(path, arch, shape, quant, seed, &o, &err);
	if (rc)
		fprintf(stderr, "%s: %s\n", path, err.text);
	return rc;
}

/* Greedy decoding of `steps` tokens after prompt[n] (prefilled in one call, o's chunking),
 * on a session of its own: ids[steps]; logits (steps, vocab): row k is what chose ids[k]
 * (the prompt's last position, then each step's). 0 or the engine's error. */
static inline int t_id_greedy(struct eng_model *m, const struct eng_session_options *o,
			    const int *prompt, int n, int steps, int *ids, float *logits)
{
	struct eng_session *s = NULL;
	struct eng_error err;
	int vocab = eng_model_info(m)->vocab_size, rc;
	const float *lg = NULL;
	if ((rc = eng_session_new(&s, m, o, &err))) {
		fprintf(stderr, "session: %s\n", err.text);
		return rc;
	}
	rc = eng_session_prefill(s, prompt, n, 0, &lg, NULL);
	for (int k = 0; !rc && k < steps; k++) {
		memcpy(logits + (size_t)k * (size_t)vocab, lg, (size_t)vocab * sizeof(float));
		ids[k] = t_argmax(lg, vocab);
		if (k + 1 < steps)
			rc = eng_session_step(s, ids[k], n + k, &lg, NULL);
	}
	eng_session_free(s);
	return rc;
}

/* t_id_greedy on the model at path, loaded with mode load. */
static inline int t_id_greedy_file(const char *path, enum eng_load_mode load,
				 const struct eng_session_options *o, const int *prompt, int n,
				 int steps, int *ids, float **logits, int *vocab)
{
	struct eng_model *m = NULL;
	struct eng_error err;
	struct eng_model_options mo = { .load = load };
	int rc = eng_model_open(&m, path, &mo, &err);
	if (rc) {
		fprintf(stderr, "%s: %s\n", path, err.text);
		return rc;
	}
	*vocab = eng_model_info(m)->vocab_size;
	*logits = malloc((size_t)steps * (size_t)*vocab * sizeof(float));
	rc = *logits ? t_id_greedy(m, o, prompt, n, steps, ids, *logits) : -1;
	eng_model_close(m);
	return rc;
}

static inline int t_id_distinct(const int *ids, int n)
{
	int d = 0;
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = ids[j] == ids[i];
		d += !seen;
	}
	return d;
}

/* The first position where a and b differ, or -1. */
static inline int t_id_first_diff(const int *a, const int *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			return i;
	return -1;
}

/* The largest |a - b| over n values (NaN counts as infinite), and the largest |a| in *big. */
static inline double t_id_max_diff(const float *a, const float *b, size_t n, double *big)
{
	double worst = 0, m = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - (double)b[i]);
		worst = d > worst || d != d ? (d != d ? INFINITY : d) : worst;
		m = fabs((double)a[i]) > m ? fabs((double)a[i]) : m;
	}
	if (big)
		*big = m;
	return worst;
}

#endif
