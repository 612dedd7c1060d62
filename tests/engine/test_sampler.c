/* tests/engine/test_sampler.c: greedy, temperature and top-p sampling, and reproducibility from the
 * seed. */
#include <errno.h>
#include <math.h>

#include "engine.h"
#include "test.h"

static int draw(struct eng_sampler *s, const float *logits, int n)
{
	float copy[16];
	memcpy(copy, logits, (size_t)n * sizeof(float));
	return eng_sampler_sample(s, copy);
}

static void test_greedy(void)
{
	struct eng_sampler *s = NULL;
	struct eng_sampler_options o = { .temperature = 0.0f, .topp = 0.9f, .seed = 1 };
	T_EQ_INT(eng_sampler_new(&s, 5, &o), 0);
	float logits[5] = { -1.0f, 3.0f, 2.5f, 3.5f, 0.0f };
	T_EQ_INT(draw(s, logits, 5), 3);
	float ties[5] = { 1.0f, 2.0f, 2.0f, 0.0f, 0.0f };
	T_EQ_INT(draw(s, ties, 5), 1); /* the first of equal maxima */
	eng_sampler_free(s);
}

/* Temperature 1, no top-p: frequencies follow softmax(logits). */
static void test_distribution(void)
{
	struct eng_sampler *s = NULL;
	struct eng_sampler_options o = { .temperature = 1.0f, .topp = 1.0f, .seed = 42 };
	T_EQ_INT(eng_sampler_new(&s, 3, &o), 0);
	float logits[3] = { 0.0f, logf(2.0f), logf(4.0f) }; /* p = 1/7, 2/7, 4/7 */
	int count[3] = { 0 }, n = 70000;
	for (int i = 0; i < n; i++)
		count[draw(s, logits, 3)]++;
	/* 5 standard deviations of a binomial count at n = 70000 is under 0.01 */
	T_NEAR(count[0] / (double)n, 1.0 / 7, 0.01);
	T_NEAR(count[1] / (double)n, 2.0 / 7, 0.01);
	T_NEAR(count[2] / (double)n, 4.0 / 7, 0.01);
	eng_sampler_free(s);

	/* Temperature 0.5 squares the odds: p proportional to 1, 4, 16. */
	o.temperature = 0.5f;
	T_EQ_INT(eng_sampler_new(&s, 3, &o), 0);
	memset(count, 0, sizeof(count));
	for (int i = 0; i < n; i++)
		count[draw(s, logits, 3)]++;
	T_NEAR(count[2] / (double)n, 16.0 / 21, 0.01);
	eng_sampler_free(s);
}

/* Top-p keeps the smallest set whose mass exceeds p. */
static void test_topp(void)
{
	struct eng_sampler *s = NULL;
	struct eng_sampler_options o = { .temperature = 1.0f, .topp = 0.7f, .seed = 7 };
	T_EQ_INT(eng_sampler_new(&s, 4, &o), 0);
	float logits[4] = { logf(0.05f), logf(0.5f), logf(0.15f), logf(0.3f) };
	int count[4] = { 0 };
	for (int i = 0; i < 20000; i++)
		count[draw(s, logits, 4)]++;
	T_EQ_INT(count[0], 0);
	T_EQ_INT(count[2], 0);
	/* Renormalised over {1, 3}: 0.5 / 0.8 and 0.3 / 0.8. */
	T_NEAR(count[1] / 20000.0, 0.625, 0.02);
	T_NEAR(count[3] / 20000.0, 0.375, 0.02);
	eng_sampler_free(s);
}

static void sequence(uint64_t seed, int *out, int n)
{
	struct eng_sampler *s = NULL;
	struct eng_sampler_options o = { .temperature = 0.8f, .topp = 0.95f, .seed = seed };
	T_EQ_INT(eng_sampler_new(&s, 16, &o), 0);
	float logits[16];
	for (int i = 0; i < 16; i++)
		logits[i] = sinf((float)i);
	for (int i = 0; i < n; i++)
		out[i] = draw(s, logits, 16);
	eng_sampler_free(s);
}

static void test_seed(void)
{
	int a[200], b[200], c[200];
	sequence(123, a, 200);
	sequence(123, b, 200);
	sequence(124, c, 200);
	T_ASSERT(!memcmp(a, b, sizeof(a)));
	T_ASSERT(memcmp(a, c, sizeof(a)) != 0);
}

static void test_bad_options(void)
{
	struct eng_sampler *s = (struct eng_sampler *)1;
	struct eng_sampler_options o = { .temperature = -1.0f, .topp = 0.9f };
	T_EQ_INT(eng_sampler_new(&s, 4, &o), -EINVAL);
	T_ASSERT(s == NULL);
	o = (struct eng_sampler_options){ .temperature = 1.0f, .topp = 1.5f };
	T_EQ_INT(eng_sampler_new(&s, 4, &o), -EINVAL);
	o.topp = NAN;
	T_EQ_INT(eng_sampler_new(&s, 4, &o), -EINVAL);
	o = (struct eng_sampler_options){ .temperature = INFINITY, .topp = 0.5f };
	T_EQ_INT(eng_sampler_new(&s, 4, &o), -EINVAL);
	o.temperature = 1.0f;
	T_EQ_INT(eng_sampler_new(&s, 0, &o), -EINVAL);
	eng_sampler_free(NULL);
}

int main(void)
{
	test_greedy();
	test_distribution();
	test_topp();
	test_seed();
	test_bad_options();
	return t_done();
}
