/* tests/lib/ref_check.h: the engine's logits against the reference forward pass
 * (ref_forward.h), for the tests that run a model and want more than its greedy ids (issue
 * 44). Include after test.h. */
#ifndef MEMWALL_TEST_REF_CHECK_H
#define MEMWALL_TEST_REF_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "ref_forward.h"

/* The reference's logits and their sigmas for a token sequence: row t (vocab values) after
 * token t at position t. */
struct ref_run {
	int n, vocab;
	double *logits, *sigma; /* (n, vocab) */
};

/* Runs tokens[0..n) through the reference of the model at path; kv_f16 as the engine's
 * session keeps its cache (GGUF's default, not llama2.c's). 0, or -1 with the reason
 * printed. Free with ref_run_free. */
static inline int ref_run_tokens(struct ref_run *r, const char *path, bool kv_f16,
				 const int *tokens, int n)
{
	struct ref_model *m = NULL;
	struct ref_state *s = NULL;
	struct ref_numerics num = { .kv_f16 = kv_f16 };
	char err[512];
	int rc = -1;
	r->n = n;
	r->logits = r->sigma = NULL;
	if (ref_model_open(&m, path, err, sizeof(err))) {
		fprintf(stderr, "%s: reference: %s\n", path, err);
		return -1;
	}
	r->vocab = ref_model_info(m)->vocab;
	r->logits = malloc((size_t)n * (size_t)r->vocab * sizeof(double));
	r->sigma = malloc((size_t)n * (size_t)r->vocab * sizeof(double));
	if (r->logits && r->sigma && (s = ref_state_new(m, n, &num))) {
		rc = 0;
		for (int t = 0; !rc && t < n; t++)
			rc = ref_step(s, tokens[t], t, r->logits + (size_t)t * (size_t)r->vocab,
				      r->sigma + (size_t)t * (size_t)r->vocab);
		if (rc)
			fprintf(stderr, "%s: reference: a token outside the vocabulary\n", path);
	}
	ref_state_free(s);
	ref_model_close(m);
	return rc;
}

static inline void ref_run_free(struct ref_run *r)
{
	free(r->logits);
	free(r->sigma);
	r->logits = r->sigma = NULL;
}

/* Position pos of the engine's logits (eng, vocab floats) against row pos of r: one check,
 * failed (naming label, the position and the first logits outside) when any logit lies
 * further than ref_tolerance from the reference's. The largest |d| / sigma goes to *worst
 * (may be NULL). */
static inline void ref_check_row(const char *label, int pos, const float *eng,
				 const struct ref_run *r, double *worst)
{
	const double *ref = r->logits + (size_t)pos * (size_t)r->vocab;
	const double *sigma = r->sigma + (size_t)pos * (size_t)r->vocab;
	int bad = 0;
	for (int i = 0; i < r->vocab; i++) {
		double d = fabs((double)eng[i] - ref[i]);
		if (!(d <= ref_tolerance(sigma[i]))) {
			if (bad < 3)
				fprintf(stderr, "  %s pos %d logit %d: engine %.7g reference %.7g "
					"|d| %.3g = %.3g sigma\n", label, pos, i, (double)eng[i],
					ref[i], d, d / sigma[i]);
			bad++;
		}
		if (worst && d > REF_FLOOR)
			*worst = fmax(*worst, d / sigma[i]);
	}
	t_checks++;
	if (bad)
		T_FAIL_AT(__FILE__, __LINE__, "%s: position %d: %d of %d logits further from the "
			  "reference than %g sigma", label, pos, bad, r->vocab, REF_SIGMAS);
}

/* The reference's choice at row pos when it is clear: the argmax, if its lead over every
 * other logit exceeds both tolerances (so any engine within them picks it too); else -1. */
static inline int ref_clear_argmax(const struct ref_run *r, int pos)
{
	const double *ref = r->logits + (size_t)pos * (size_t)r->vocab;
	const double *sigma = r->sigma + (size_t)pos * (size_t)r->vocab;
	int best = 0;
	for (int i = 1; i < r->vocab; i++)
		best = ref[i] > ref[best] ? i : best;
	for (int i = 0; i < r->vocab; i++)
		if (i != best &&
		    ref[best] - ref_tolerance(sigma[best]) <= ref[i] + ref_tolerance(sigma[i]))
			return -1;
	return best;
}

#endif
