/* tests/src/test_changepoint.c: src/record/changepoint.c on synthetic histories made here: a step is
 * found at the index it was put, with the size and evidence recomputed here from the segments; a
 * flat but noisy history has none; a single outlier, wherever it is and however large, is never
 * a step; the false-step rate and the power the header states hold on histories drawn here. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "changepoint.h"
#include "test.h"

/* Deterministic noise: an LCG and Box-Muller (the histories must not depend on libc). */
static double uniform(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return ((double)(*s >> 8) + 0.5) / 16777216.0;
}

static double gauss(uint32_t *s)
{
	double u = uniform(s), v = uniform(s);
	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

static void noisy(double *y, size_t n, double level, double sd, uint32_t *seed)
{
	for (size_t i = 0; i < n; i++)
		y[i] = level + sd * gauss(seed);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median and the L1 cost around it, by sorting here. */
static double median(const double *y, size_t n)
{
	double s[256];
	for (size_t i = 0; i < n; i++)
		s[i] = y[i];
	qsort(s, n, sizeof(double), cmp);
	return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

static double cost(const double *y, size_t n)
{
	double m = median(y, n), c = 0;
	for (size_t i = 0; i < n; i++)
		c += fabs(y[i] - m);
	return c;
}

static size_t changes(const double *y, size_t n, struct mw_cp_result *r)
{
	struct mw_cp_opts o;
	mw_cp_opts_default(&o);
	T_EQ_INT(mw_changepoints(y, n, &o, r), 0);
	return r->n_changes;
}

/* The Done-when's shape: 30 records, then 10 with 15 % more, noise of 1 %. */
static void test_step(void)
{
	double y[40];
	uint32_t seed = 7;
	struct mw_cp_result r;
	noisy(y, 30, 100, 1, &seed);
	noisy(y + 30, 10, 115, 1, &seed);
	T_EQ_INT(changes(y, 40, &r), 1);
	if (r.n_changes == 1) {
		const struct mw_change *c = &r.changes[0];
		T_EQ_INT(c->at, 30);
		T_EQ_INT(c->from, 0);
		T_EQ_INT(c->to, 40);
		double b = median(y, 30), a = median(y + 30, 10);
		T_NEAR(c->before, b, 1e-12);
		T_NEAR(c->after, a, 1e-12);
		T_NEAR(c->change_pct, 100.0 * (a - b) / b, 1e-9);
		T_NEAR(c->change_pct, 15.0, 3.0);
		T_NEAR(c->gain, cost(y, 40) - cost(y, 30) - cost(y + 30, 10), 1e-9);
		T_ASSERT(c->gain > r.penalty);
		T_ASSERT(c->p < 1e-6);
	}
	/* The penalty as the header defines it: k sigma ln(n), sigma from successive
	 * differences (1.4826 MAD / sqrt 2), floored at 0.1 % of the median. */
	double d[39];
	for (int i = 1; i < 40; i++)
		d[i - 1] = fabs(y[i] - y[i - 1]);
	double sigma = fmax(1.4826 * median(d, 39) / sqrt(2.0), 0.001 * median(y, 40));
	T_NEAR(r.sigma, sigma, 1e-12);
	T_NEAR(r.penalty, 3.0 * sigma * log(40.0), 1e-12);
	mw_cp_result_free(&r);

	/* Down, and two steps: each found where it was put. */
	noisy(y, 15, 100, 1, &seed);
	noisy(y + 15, 12, 90, 1, &seed);
	noisy(y + 27, 13, 120, 1, &seed);
	T_EQ_INT(changes(y, 40, &r), 2);
	if (r.n_changes == 2) {
		T_EQ_INT(r.changes[0].at, 15);
		T_EQ_INT(r.changes[1].at, 27);
		T_EQ_INT(r.changes[0].to, 27);
		T_EQ_INT(r.changes[1].from, 15);
		T_ASSERT(r.changes[0].change_pct < -5);
		T_ASSERT(r.changes[1].change_pct > 25);
	}
	mw_cp_result_free(&r);

	/* A step three records before the end is found; two before, found where it is (the
	 * program's segments of 3 would put it one early; the refinement moves it); one
	 * before, never: one value after a step is one outlier. */
	noisy(y, 20, 100, 1, &seed);
	noisy(y + 20, 3, 115, 1, &seed);
	for (size_t n = 23; n >= 21; n--) {
		T_EQ_INT(changes(y, n, &r), n > 21);
		if (r.n_changes)
			T_EQ_INT(r.changes[0].at, 20);
		mw_cp_result_free(&r);
	}

	/* Nearly deterministic figures (engine-accounted bytes, a simulated PMU): a 1e-6 wobble
	 * is below the floor, a 2 % step is not. */
	for (int i = 0; i < 40; i++)
		y[i] = 2.0 * (1 + 1e-6 * gauss(&seed)) * (i < 25 ? 1.0 : 1.02);
	T_EQ_INT(changes(y, 40, &r), 1);
	if (r.n_changes)
		T_EQ_INT(r.changes[0].at, 25);
	mw_cp_result_free(&r);
	for (int i = 0; i < 40; i++)
		y[i] = 2.0 * (1 + 1e-6 * gauss(&seed));
	T_EQ_INT(changes(y, 40, &r), 0);
	mw_cp_result_free(&r);
}

static void test_flat(void)
{
	double y[100];
	uint32_t seed = 99;
	struct mw_cp_result r;
	/* The Done-when's flat case: 40 records of noise. */
	noisy(y, 40, 100, 1, &seed);
	T_EQ_INT(changes(y, 40, &r), 0);
	mw_cp_result_free(&r);
	/* Constant, and too short to cut. */
	for (int i = 0; i < 40; i++)
		y[i] = 3.25;
	T_EQ_INT(changes(y, 40, &r), 0);
	mw_cp_result_free(&r);
	noisy(y, 5, 100, 1, &seed);
	y[4] = 1000;
	T_EQ_INT(changes(y, 5, &r), 0);
	mw_cp_result_free(&r);
	/* The header's false-step rate (about 1 in 300 histories of 10 to 100 values): over 300
	 * histories drawn here, allow 3 % before calling it broken. */
	int false_steps = 0;
	for (int k = 0; k < 300; k++) {
		size_t n = (size_t)(10 + 30 * (k % 4));
		noisy(y, n, 50 + k, 0.5 + 0.01 * k, &seed);
		false_steps += changes(y, n, &r) > 0;
		mw_cp_result_free(&r);
	}
	printf("flat histories with a false step: %d of 300\n", false_steps);
	T_ASSERT(false_steps <= 9);
	/* The header's power: a 3 sigma step between 20 and 20 values, found (at 20 +/- 2) in
	 * 98 of 100; allow 90. */
	int found = 0;
	for (int k = 0; k < 100; k++) {
		noisy(y, 20, 100, 1, &seed);
		noisy(y + 20, 20, 103, 1, &seed);
		found += changes(y, 40, &r) == 1 && r.changes[0].at >= 18 && r.changes[0].at <= 22;
		mw_cp_result_free(&r);
	}
	printf("3 sigma steps found: %d of 100\n", found);
	T_ASSERT(found >= 90);
}

/* One wild value is never a step, wherever it sits and however far out it is. */
static void test_outlier(void)
{
	double y[40];
	uint32_t seed = 3;
	struct mw_cp_result r;
	static const size_t where[] = { 0, 1, 2, 17, 29, 30, 37, 38, 39 };
	static const double factor[] = { 1.2, 2, 10, 1000, 0.5, 0.01 };
	for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++)
		for (size_t f = 0; f < sizeof(factor) / sizeof(factor[0]); f++) {
			noisy(y, 40, 100, 1, &seed);
			y[where[w]] *= factor[f];
			size_t n = changes(y, 40, &r);
			if (n)
				fprintf(stderr, "outlier x%g at %zu: %zu changes\n", factor[f],
					where[w], n);
			T_EQ_INT(n, 0);
			mw_cp_result_free(&r);
		}
	/* Two outliers far apart are two single outliers. */
	noisy(y, 40, 100, 1, &seed);
	y[8] *= 5;
	y[31] *= 0.2;
	T_EQ_INT(changes(y, 40, &r), 0);
	mw_cp_result_free(&r);
	/* An outlier beside a real step moves neither the step nor its size much. */
	noisy(y, 30, 100, 1, &seed);
	noisy(y + 30, 10, 115, 1, &seed);
	y[12] = 500;
	T_EQ_INT(changes(y, 40, &r), 1);
	if (r.n_changes) {
		T_EQ_INT(r.changes[0].at, 30);
		T_NEAR(r.changes[0].change_pct, 15.0, 3.0);
	}
	mw_cp_result_free(&r);
}

static void test_bad_options(void)
{
	struct mw_cp_opts o;
	struct mw_cp_result r;
	double y[10] = { 0 };
	mw_cp_opts_default(&o);
	o.min_segment = 0;
	T_EQ_INT(mw_changepoints(y, 10, &o, &r), -EINVAL);
	mw_cp_opts_default(&o);
	o.k = NAN;
	T_EQ_INT(mw_changepoints(y, 10, &o, &r), -EINVAL);
}

int main(void)
{
	test_step();
	test_flat();
	test_outlier();
	test_bad_options();
	return t_done();
}
