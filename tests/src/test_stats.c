/* tests/src/test_stats.c: src/record/stats.c against values computed by hand (arithmetic in the comments)
 * and against published tables of Student's t; the Mann-Whitney U test's exact p-values against
 * an enumeration of every split of the pooled values, done here. */
#include <math.h>
#include <stdint.h>

#include "stats.h"
#include "test.h"

/* x = 2 4 4 4 5 5 7 9 (n = 8):
 *   sum 40, mean 40 / 8 = 5
 *   squared deviations 9 1 1 1 0 0 4 16, sum 32; variance 32 / 7 = 4.571428571
 *   sd sqrt(4.571428571) = 2.138089935; CV 100 * 2.138089935 / 5 = 42.76179871 %
 *   median: rank h = 7 * 0.5 = 3.5 between x[3] = 4 and x[4] = 5: 4.5
 *   t(0.975, 7) = 2.364624252 (any t table); half-width 2.364624252 * 2.138089935 / sqrt(8)
 *   = 2.364624252 * 0.755928946 = 1.787488; CI [3.212512, 6.787488] */
static void test_summary(void)
{
	const double x[] = { 9, 2, 4, 5, 4, 7, 4, 5 }; /* unsorted on purpose */
	struct mw_stats s;
	mw_stats_compute(x, 8, &s);
	T_EQ_INT(s.n, 8);
	T_NEAR(s.mean, 5.0, 1e-12);
	T_NEAR(s.sd, 2.138089935, 1e-9);
	T_NEAR(s.cv_pct, 42.76179871, 1e-7);
	T_NEAR(s.median, 4.5, 1e-12);
	T_NEAR(s.min, 2, 0);
	T_NEAR(s.max, 9, 0);
	T_NEAR(s.ci95_low, 3.212512, 1e-5);
	T_NEAR(s.ci95_high, 6.787488, 1e-5);
	T_NEAR(x[0], 9, 0); /* input untouched */

	/* One value: mean, median, min and max are that value; spread is undefined (NaN). */
	mw_stats_compute(x, 1, &s);
	T_NEAR(s.mean, 9, 0);
	T_ASSERT(isnan(s.sd) && isnan(s.cv_pct) && isnan(s.ci95_low));
	/* None: everything NaN. */
	mw_stats_compute(x, 0, &s);
	T_ASSERT(s.n == 0 && isnan(s.mean) && isnan(s.median));
	/* Zero mean: CV undefined. x = -1 1: mean 0, sd sqrt(2) */
	const double z[] = { -1, 1 };
	mw_stats_compute(z, 2, &s);
	T_NEAR(s.sd, sqrt(2.0), 1e-12);
	T_ASSERT(isnan(s.cv_pct));
}

/* 1..10 by Hyndman & Fan definition 7, rank h = 9 p / 100 (0-based):
 *   p50 h 4.5 -> 5 + 0.5 (6 - 5) = 5.5; p90 h 8.1 -> 9.1; p99 h 8.91 -> 9.91;
 *   p99.9 h 8.991 -> 9.991; p0 -> 1; p100 -> 10. */
static void test_percentiles(void)
{
	const double x[] = { 10, 9, 8, 7, 6, 5, 4, 3, 2, 1 };
	T_NEAR(mw_percentile(x, 10, 50), 5.5, 1e-12);
	T_NEAR(mw_percentile(x, 10, 90), 9.1, 1e-12);
	T_NEAR(mw_percentile(x, 10, 99), 9.91, 1e-12);
	T_NEAR(mw_percentile(x, 10, 99.9), 9.991, 1e-12);
	T_NEAR(mw_percentile(x, 10, 0), 1, 0);
	T_NEAR(mw_percentile(x, 10, 100), 10, 0);
	T_NEAR(mw_percentile(x, 1, 99), 10, 0);
	T_ASSERT(isnan(mw_percentile(x, 0, 50)));
	/* several at once, from one sort: the same values (hand-computed above) */
	static const double ps[] = { 50, 90, 99, 99.9, 0, 100 };
	static const double want[] = { 5.5, 9.1, 9.91, 9.991, 1, 10 };
	double got[6];
	mw_percentiles(x, 10, ps, 6, got);
	for (int i = 0; i < 6; i++)
		T_NEAR(got[i], want[i], 1e-12);
	mw_percentiles(x, 0, ps, 2, got);
	T_ASSERT(isnan(got[0]) && isnan(got[1]));
}

/* Closed forms: I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b; I_0.5(a, a) = 0.5. */
static void test_betainc(void)
{
	T_NEAR(mw_betainc(1, 1, 0.3), 0.3, 1e-13);
	T_NEAR(mw_betainc(3, 1, 0.7), 0.343, 1e-13);
	T_NEAR(mw_betainc(1, 4, 0.2), 1 - pow(0.8, 4), 1e-13);
	T_NEAR(mw_betainc(7.5, 7.5, 0.5), 0.5, 1e-13);
	T_NEAR(mw_betainc(50, 0.5, 0.99), 1 - mw_betainc(0.5, 50, 0.01), 1e-13);
	T_ASSERT(isnan(mw_betainc(-1, 1, 0.5)));
}

/* Student's t density, for an independent check of the CDF by Simpson's rule. */
static double t_pdf(double t, double df)
{
	return exp(lgamma((df + 1) / 2) - lgamma(df / 2) - 0.5 * log(df * M_PI) -
		   (df + 1) / 2 * log1p(t * t / df));
}

static double t_cdf_simpson(double t, double df)
{
	/* P(T <= t) = 0.5 + integral_0^t pdf, composite Simpson with 20000 panels. */
	const int n = 20000;
	double h = t / n, s = t_pdf(0, df) + t_pdf(t, df);
	for (int i = 1; i < n; i++)
		s += (i % 2 ? 4 : 2) * t_pdf(i * h, df);
	return 0.5 + s * h / 3;
}

static void test_t(void)
{
	/* df 1 is the Cauchy distribution: F(1) = 1/2 + atan(1) / pi = 0.75.
	 * df 2 has F(t) = 1/2 + t / (2 sqrt(2 + t^2)): F(2) = 0.5 + 2 / (2 sqrt 6) = 0.908248290. */
	T_NEAR(mw_t_cdf(1, 1), 0.75, 1e-13);
	T_NEAR(mw_t_cdf(2, 2), 0.5 + 1 / sqrt(6.0), 1e-13);
	T_NEAR(mw_t_cdf(0, 5), 0.5, 1e-15);
	T_NEAR(mw_t_cdf(-2, 2), 0.5 - 1 / sqrt(6.0), 1e-13);
	for (double df = 1.5; df < 60; df *= 2.3)
		for (double t = 0.25; t < 6; t *= 2.2)
			T_NEAR(mw_t_cdf(t, df), t_cdf_simpson(t, df), 1e-9);
	/* Two-sided 95% critical values, from any t table (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2):
	 * df 1 12.706, 2 4.303, 4 2.776, 7 2.365, 30 2.042, 1000 1.962; to more digits below. */
	T_NEAR(mw_t_quantile(0.975, 1), 12.70620474, 1e-7);
	T_NEAR(mw_t_quantile(0.975, 2), 4.30265273, 1e-7);
	T_NEAR(mw_t_quantile(0.975, 4), 2.77644511, 1e-7);
	T_NEAR(mw_t_quantile(0.975, 7), 2.36462425, 1e-7);
	T_NEAR(mw_t_quantile(0.975, 30), 2.04227246, 1e-7);
	T_NEAR(mw_t_quantile(0.975, 1000), 1.96233908, 1e-7);
	T_NEAR(mw_t_quantile(0.025, 4), -2.77644511, 1e-7);
	T_NEAR(mw_t_quantile(0.995, 10), 3.16927267, 1e-7);
	T_ASSERT(isnan(mw_t_quantile(1.0, 4)) && isnan(mw_t_quantile(0.5, 0)));
}

/* a = 1 2 3 4 5: mean 3, sd sqrt(2.5); b = 2 4 6 8 10: mean 6, sd sqrt(10).
 *   v1 = 2.5 / 5 = 0.5, v2 = 10 / 5 = 2; t = (3 - 6) / sqrt(2.5) = -1.897366596
 *   df = 2.5^2 / (0.5^2 / 4 + 2^2 / 4) = 6.25 / 1.0625 = 5.882352941
 *   p = 2 P(T_df <= -1.897366596), checked against the Simpson integral (R's t.test gives
 *   p-value = 0.1075 for these samples). */
static void test_welch(void)
{
	double t, df;
	double p = mw_welch_p(3, sqrt(2.5), 5, 6, sqrt(10), 5, &t, &df);
	T_NEAR(t, -1.897366596, 1e-9);
	T_NEAR(df, 5.882352941, 1e-9);
	T_NEAR(p, 2 * (1 - t_cdf_simpson(1.897366596, 5.882352941)), 1e-8);
	T_NEAR(p, 0.1075, 5e-4);
	/* Identical samples: p = 1. Too few values: NaN. Zero spread: certain. */
	T_NEAR(mw_welch_p(3, 1, 5, 3, 1, 5, NULL, NULL), 1.0, 1e-12);
	T_ASSERT(isnan(mw_welch_p(3, 1, 1, 3, 1, 5, NULL, NULL)));
	T_NEAR(mw_welch_p(100, 0, 5, 101, 0, 5, NULL, NULL), 0.0, 0);
	T_NEAR(mw_welch_p(100, 0, 5, 100, 0, 5, NULL, NULL), 1.0, 0);
	/* A large, tight shift is significant. */
	T_ASSERT(mw_welch_p(100, 0.5, 5, 110, 0.5, 5, NULL, NULL) < 1e-6);
}

/* ---- Mann-Whitney U */

/* U of the values at the positions in mask against the others, by its definition: the pairs
 * (a, b), a in the mask, b not, with a > b, ties counting one half. */
static double u_of(const double *v, size_t n, unsigned mask)
{
	double u = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			if ((mask >> i & 1) && !(mask >> j & 1))
				u += v[i] > v[j] ? 1.0 : v[i] == v[j] ? 0.5 : 0.0;
	return u;
}

/* The exact two-sided p-value by enumeration: of all C(n, nx) ways to label nx of the pooled
 * values x, the share whose U lies at least as far from nx ny / 2 as the observed one (x =
 * the first nx). U moves in halves, so the comparison is exact in doubles. */
static double p_enumerated(const double *x, size_t nx, const double *y, size_t ny)
{
	double v[24];
	size_t n = nx + ny;
	for (size_t i = 0; i < n; i++)
		v[i] = i < nx ? x[i] : y[i - nx];
	double mid = (double)nx * (double)ny / 2.0;
	double far = fabs(u_of(v, n, (1u << nx) - 1) - mid);
	double all = 0, hit = 0;
	for (unsigned m = 0; m < 1u << n; m++) {
		if ((size_t)__builtin_popcount(m) != nx)
			continue;
		all++;
		hit += fabs(u_of(v, n, m) - mid) >= far;
	}
	return hit / all;
}

static void mwu_case(const char *what, const double *x, size_t nx, const double *y, size_t ny)
{
	struct mw_mwu r;
	double v[24];
	for (size_t i = 0; i < nx + ny; i++)
		v[i] = i < nx ? x[i] : y[i - nx];
	T_EQ_INT(mw_mann_whitney(x, nx, y, ny, &r), 0);
	T_ASSERT(r.exact);
	T_NEAR(r.u, u_of(v, nx + ny, (1u << nx) - 1), 0);
	double want = p_enumerated(x, nx, y, ny);
	if (fabs(r.p - want) > 1e-12)
		fprintf(stderr, "%s: p %.15g, enumerated %.15g\n", what, r.p, want);
	T_NEAR(r.p, want, 1e-12);
}

/* A small LCG: the samples must not depend on libc's rand(). */
static double uniform(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return (double)(*s >> 8) / 16777216.0;
}

/* The Mann-Whitney normal approximation's z for x[0..nx) against y[0..ny), values on the
 * grid 0..21, from its formula: U counts the pairs where x wins (a tie: 1/2), into *u; mean
 * nx ny / 2; variance nx ny / 12 ((n + 1) - sum(t^3 - t) / (n (n - 1))), t each value's count
 * in both; a continuity correction of 1/2. */
static double mwu_z(const double *x, int nx, const double *y, int ny, double *u)
{
	double ties = 0, n = nx + ny;
	*u = 0;
	for (int i = 0; i < nx; i++)
		for (int j = 0; j < ny; j++)
			*u += x[i] > y[j] ? 1.0 : x[i] == y[j] ? 0.5 : 0.0;
	for (int val = 0; val <= 21; val++) {
		double t = 0;
		for (int i = 0; i < nx; i++)
			t += x[i] == val;
		for (int i = 0; i < ny; i++)
			t += y[i] == val;
		ties += t * t * t - t;
	}
	double var = (double)nx * ny / 12.0 * ((n + 1) - ties / (n * (n - 1)));
	return (fabs(*u - (double)nx * ny / 2) - 0.5) / sqrt(var);
}

static void test_mann_whitney(void)
{
	/* Complete separation of 3 and 3: U = 9 (every pair), and only the two extreme labellings
	 * of C(6, 3) = 20 are as far from 4.5: p = 2 / 20. */
	const double a[] = { 4, 5, 6 }, b[] = { 1, 2, 3 };
	struct mw_mwu r;
	T_EQ_INT(mw_mann_whitney(a, 3, b, 3, &r), 0);
	T_NEAR(r.u, 9, 0);
	T_NEAR(r.p, 0.1, 1e-15);
	mwu_case("separated", a, 3, b, 3);
	/* Ties within and across the samples: the exact distribution given the ties. */
	const double c[] = { 1, 2, 2, 3 }, d[] = { 2, 3, 3, 4, 5 };
	mwu_case("ties", c, 4, d, 5);
	const double e[] = { 7, 7, 7 }, f[] = { 7, 7, 7, 7 };
	mwu_case("all tied", e, 3, f, 4);
	T_EQ_INT(mw_mann_whitney(e, 3, f, 4, &r), 0);
	T_NEAR(r.p, 1.0, 1e-15);
	const double g[] = { 3.5 }, h[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	mwu_case("one value", g, 1, h, 8);
	/* Random samples, rounded to a grid so some values tie; the smaller sample first and
	 * last (the recurrence runs over the smaller one). */
	uint32_t seed = 12345;
	for (int k = 0; k < 12; k++) {
		double x[10], y[12];
		size_t nx = 2 + (size_t)(uniform(&seed) * 6), ny = 3 + (size_t)(uniform(&seed) * 9);
		if (nx + ny > 18)
			ny = 18 - nx;
		for (size_t i = 0; i < nx; i++)
			x[i] = floor(uniform(&seed) * 8) + (k % 3 == 0 ? 2 : 0);
		for (size_t i = 0; i < ny; i++)
			y[i] = floor(uniform(&seed) * 8);
		char what[32];
		snprintf(what, sizeof(what), "random %d", k);
		if (k % 2)
			mwu_case(what, x, nx, y, ny);
		else
			mwu_case(what, y, ny, x, nx);
	}
	/* Empty samples have no p-value. */
	T_EQ_INT(mw_mann_whitney(a, 0, b, 3, &r), 0);
	T_ASSERT(isnan(r.p));

	/* Above MW_MWU_EXACT_SMALL: the normal approximation, recomputed here from its formula
	 * (mean nx ny / 2; variance nx ny / 12 ((n + 1) - sum(t^3 - t) / (n (n - 1))); a
	 * continuity correction of 1/2), with ties on a grid of 20 values. */
	double x[30], y[40], u;
	for (int i = 0; i < 30; i++)
		x[i] = floor(uniform(&seed) * 20) + 1;
	for (int i = 0; i < 40; i++)
		y[i] = floor(uniform(&seed) * 20);
	double z = mwu_z(x, 30, y, 40, &u);
	T_EQ_INT(mw_mann_whitney(x, 30, y, 40, &r), 0);
	T_ASSERT(!r.exact);
	T_NEAR(r.u, u, 0);
	T_NEAR(r.z, z, 1e-12);
	T_NEAR(r.p, erfc(z / sqrt(2.0)), 1e-12);
	/* Where both apply, the approximation is close to the exact value: 20 against 20. */
	T_EQ_INT(mw_mann_whitney(x, 20, y, 20, &r), 0);
	T_ASSERT(r.exact);
	double u20, z20 = mwu_z(x, 20, y, 20, &u20);
	T_NEAR(r.p, erfc(z20 / sqrt(2.0)), 0.02);
}

int main(void)
{
	test_summary();
	test_percentiles();
	test_betainc();
	test_t();
	test_welch();
	test_mann_whitney();
	return t_done();
}
