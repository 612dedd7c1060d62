/* src/record/stats.h: the statistics memwall reports: summaries, t-based confidence intervals,
 * percentiles, Welch's t-test and the Mann-Whitney U rank test. Pure functions of their inputs; NaN marks a figure that
 * the sample cannot give (an sd from one value, a CV of a zero mean). */
#ifndef MEMWALL_STATS_H
#define MEMWALL_STATS_H

#include <stdbool.h>
#include <stddef.h>

struct mw_stats {
	size_t n;
	double mean;
	double sd;        /* sample standard deviation, divisor n - 1; NaN when n < 2 */
	double cv_pct;    /* 100 * sd / |mean|; NaN when sd is NaN or mean is 0 */
	double median;
	double min, max;
	double ci95_low;  /* mean -/+ t(0.975, n - 1) * sd / sqrt(n); NaN when n < 2 */
	double ci95_high;
};

/* Summarises x[0..n). n == 0 gives n = 0 and NaN everywhere. */
void mw_stats_compute(const double *x, size_t n, struct mw_stats *out);

/* Percentile p in [0, 100] of x[0..n) (need not be sorted; x is not modified), by linear
 * interpolation between order statistics at rank h = (n - 1) p / 100: definition 7 of
 * Hyndman & Fan, "Sample quantiles in statistical packages", Am. Stat. 50(4), 1996, the
 * default of R's quantile() and NumPy's percentile(). NaN when n == 0. */
double mw_percentile(const double *x, size_t n, double p);
/* mw_percentile for each of p[0..k) into out[0..k), sorting x's copy once (a record's four
 * latency percentiles sorted it four times). NaN each when n is 0 or out of memory. */
void mw_percentiles(const double *x, size_t n, const double *p, size_t k, double *out);

/* Regularized incomplete beta function I_x(a, b), a, b > 0, x in [0, 1]. */
double mw_betainc(double a, double b, double x);
/* Student's t distribution with df > 0 degrees of freedom: P(T <= t). */
double mw_t_cdf(double t, double df);
/* Its quantile: the t with P(T <= t) = p, p in (0, 1). */
double mw_t_quantile(double p, double df);

/* Welch's unequal-variance t-test from summaries: two-sided p-value for equal means; *t and
 * *df (either may be NULL) receive the statistic and the Welch-Satterthwaite degrees of
 * freedom. NaN when a sample has fewer than 2 values. With both sds 0 the p-value is 1 for
 * equal means and 0 otherwise (deterministic figures, such as engine-accounted bytes). */
double mw_welch_p(double mean1, double sd1, size_t n1, double mean2, double sd2, size_t n2,
		  double *t, double *df);

/* The Mann-Whitney U test of x[0..nx) against y[0..ny) (Mann & Whitney, "On a test of whether
 * one of two random variables is stochastically larger than the other", Ann. Math. Statist.
 * 18(1), 1947): ranks over both samples, ties at their mean rank. */
struct mw_mwu {
	double u;     /* U of x: the pairs (x_i, y_j) with x_i > y_j, ties counting one half */
	double p;     /* two-sided p-value for "neither is stochastically larger"; NaN when a
		       * sample is empty */
	double z;     /* the normal approximation's statistic (with the continuity correction);
		       * NaN when the p-value is exact */
	bool exact;   /* p from the exact permutation distribution (see MW_MWU_EXACT_*) */
};

/* The p-value is exact (the permutation distribution of the rank sum given the ties, counted
 * by dynamic programming) when the smaller sample has at most MW_MWU_EXACT_SMALL values and
 * both together at most MW_MWU_EXACT_TOTAL; above that, the normal approximation with the tie
 * correction of the variance and a continuity correction of 1/2. */
enum { MW_MWU_EXACT_SMALL = 20, MW_MWU_EXACT_TOTAL = 200 };

/* 0, or -ENOMEM (out->p NaN). x and y are not modified; NaNs are the caller's to leave out. */
int mw_mann_whitney(const double *x, size_t nx, const double *y, size_t ny, struct mw_mwu *out);

/* The median of x[0..n) (mw_percentile at 50): NaN when n == 0. */
double mw_median(const double *x, size_t n);

#endif
