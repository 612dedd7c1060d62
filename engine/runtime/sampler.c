/* engine/runtime/sampler.c: choosing the next token from the logits: greedy, temperature, and
 * nucleus (top-p, Holtzman et al. 2019), as llama2.c run.c's sampler does, with a seeded
 * xoshiro256** so a run is reproducible from its seed on any machine.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "engine.h"
#include "rng.h"

struct prob_index {
	float prob;
	int index;
};

struct eng_sampler {
	int vocab_size;
	struct eng_sampler_options opt;
	struct eng_rng rng;
	struct prob_index *candidates; /* (vocab_size) scratch for top-p */
};

int eng_sampler_new(struct eng_sampler **out, int vocab_size, const struct eng_sampler_options *opt)
{
	struct eng_sampler *s = NULL;

	*out = NULL;
	if (vocab_size <= 0 || !opt || !(opt->temperature >= 0.0f) || !isfinite(opt->temperature) ||
	    !(opt->topp >= 0.0f && opt->topp <= 1.0f))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->candidates = calloc((size_t)vocab_size, sizeof(*s->candidates));
	if (!s->candidates) {
		free(s);
		return -ENOMEM;
	}
	s->vocab_size = vocab_size;
	s->opt = *opt;
	eng_rng_seed(&s->rng, opt->seed);
	*out = s;
	return 0;
}

void eng_sampler_free(struct eng_sampler *s)
{
	if (!s)
		return;
	free(s->candidates);
	free(s);
}

static int argmax(const float *x, int n)
{
	int best = 0;
	for (int i = 1; i < n; i++)
		if (x[i] > x[best])
			best = i;
	return best;
}

static void softmax(float *x, int n)
{
	float max = x[argmax(x, n)], sum = 0.0f;
	for (int i = 0; i < n; i++) {
		x[i] = expf(x[i] - max);
		sum += x[i];
	}
	for (int i = 0; i < n; i++)
		x[i] /= sum;
}

static int sample_mult(const float *prob, int n, float coin)
{
	float cdf = 0.0f;
	for (int i = 0; i < n; i++) {
		cdf += prob[i];
		if (coin < cdf)
			return i;
	}
	return n - 1; /* rounding left the cdf short of 1 */
}

static int by_prob_desc(const void *a, const void *b)
{
	const struct prob_index *x = a, *y = b;
	if (x->prob != y->prob)
		return x->prob > y->prob ? -1 : 1;
	return x->index - y->index; /* a total order, so the result never depends on qsort */
}

/* Samples among the smallest set of tokens whose probability reaches topp. Tokens below
 * (1 - topp) / (n - 1) cannot be in that set and are dropped before sorting (run.c's cut). */
static int sample_topp(struct eng_sampler *s, const float *prob, float coin)
{
	int n = s->vocab_size, m = 0;
	float cutoff = (1.0f - s->opt.topp) / (float)(n > 1 ? n - 1 : 1);
	for (int i = 0; i < n; i++)
		if (prob[i] >= cutoff)
			s->candidates[m++] = (struct prob_index){ prob[i], i };
	if (m == 0)
		return argmax(prob, n);
	qsort(s->candidates, (size_t)m, sizeof(*s->candidates), by_prob_desc);
	float cum = 0.0f;
	int last = m - 1;
	for (int i = 0; i < m; i++) {
		cum += s->candidates[i].prob;
		if (cum > s->opt.topp) {
			last = i;
			break;
		}
	}
	float r = coin * cum, cdf = 0.0f;
	for (int i = 0; i <= last; i++) {
		cdf += s->candidates[i].prob;
		if (r < cdf)
			return s->candidates[i].index;
	}
	return s->candidates[last].index;
}

int eng_sampler_sample(struct eng_sampler *s, float *logits)
{
	if (s->opt.temperature == 0.0f)
		return argmax(logits, s->vocab_size);
	for (int i = 0; i < s->vocab_size; i++)
		logits[i] /= s->opt.temperature;
	softmax(logits, s->vocab_size);
	float coin = eng_rng_float(&s->rng);
	if (s->opt.topp <= 0.0f || s->opt.topp >= 1.0f)
		return sample_mult(logits, s->vocab_size, coin);
	return sample_topp(s, logits, coin);
}
