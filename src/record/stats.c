/* src/record/stats.c: summaries, Student's t distribution, percentiles, Welch's t-test and the
 * Mann-Whitney U test. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double percentile_sorted(const double *s, size_t n, double p)
{
	if (n == 0)
		return NAN;
	double h = (double)(n - 1) * p / 100.0;
	size_t lo = (size_t)floor(h);
	if (lo >= n - 1)
		return s[n - 1];
	return s[lo] + (h - (double)lo) * (s[lo + 1] - s[lo]);
}

double mw_percentile(const double *x, size_t n, double p)
{
	if (n == 0)
		return NAN;
	double *s = malloc(n * sizeof(*s));
	if (!s)
		return NAN;
	memcpy(s, x, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	double v = percentile_sorted(s, n, p);
	free(s);
	return v;
}

void mw_percentiles(const double *x, size_t n, const double *p, size_t k, double *out)
{
	double *s = n ? malloc(n * sizeof(*s)) : NULL;
	if (s) {
		memcpy(s, x, n * sizeof(*s));
		qsort(s, n, sizeof(*s), cmp_double);
	}
	for (size_t i = 0; i < k; i++)
		out[i] = s ? percentile_sorted(s, n, p[i]) : NAN;
	free(s);
}

void mw_stats_compute(const double *x, size_t n, struct mw_stats *out)
{
	*out = (struct mw_stats){ .n = n, .mean = NAN, .sd = NAN, .cv_pct = NAN, .median = NAN,
				  .min = NAN, .max = NAN, .ci95_low = NAN, .ci95_high = NAN };
	if (n == 0)
		return;
	/* Two passes (mean, then squared deviations): exact enough for a handful of runs and
	 * free of the cancellation of the one-pass sum-of-squares formula. */
	double sum = 0, min = x[0], max = x[0];
	for (size_t i = 0; i < n; i++) {
		sum += x[i];
		min = x[i] < min ? x[i] : min;
		max = x[i] > max ? x[i] : max;
	}
	out->mean = sum / (double)n;
	out->min = min;
	out->max = max;
	out->median = mw_percentile(x, n, 50);
	if (n < 2)
		return;
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		ss += (x[i] - out->mean) * (x[i] - out->mean);
	out->sd = sqrt(ss / (double)(n - 1));
	if (out->mean != 0)
		out->cv_pct = 100.0 * out->sd / fabs(out->mean);
	double half = mw_t_quantile(0.975, (double)(n - 1)) * out->sd / sqrt((double)n);
	out->ci95_low = out->mean - half;
	out->ci95_high = out->mean + half;
}

/* Continued fraction for I_x(a, b), DLMF 8.17.22 (https://dlmf.nist.gov/8.17.E22), evaluated
 * by the modified Lentz method (Press et al., Numerical Recipes, 3rd ed., 5.2). It converges
 * quickly for x < (a + 1) / (a + b + 2); mw_betainc uses the symmetry I_x(a, b) =
 * 1 - I_{1-x}(b, a) (DLMF 8.17.4) for larger x. */
static double betainc_cf(double a, double b, double x)
{
	const double tiny = 1e-300, eps = 1e-15;
	double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
	if (fabs(d) < tiny)
		d = tiny;
	d = 1.0 / d;
	double f = d;
	for (int m = 1; m <= 1000; m++) {
		/* Even term d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m)). */
		double num = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
		d = 1.0 + num * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1.0 + num / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1.0 / d;
		f *= d * c;
		/* Odd term d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)). */
		num = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
		d = 1.0 + num * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1.0 + num / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1.0 / d;
		double delta = d * c;
		f *= delta;
		if (fabs(delta - 1.0) < eps)
			break;
	}
	return f;
}

double mw_betainc(double a, double b, double x)
{
	if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1))
		return NAN;
	if (x == 0 || x == 1)
		return x;
	/* Prefactor x^a (1-x)^b / (a B(a, b)), in logs to survive large a and b. */
	double lbeta = lgamma(a) + lgamma(b) - lgamma(a + b);
	double front = exp(a * log(x) + b * log1p(-x) - lbeta);
	if (x < (a + 1.0) / (a + b + 2.0))
		return front * betainc_cf(a, b, x) / a;
	return 1.0 - front * betainc_cf(b, a, 1.0 - x) / b;
}

double mw_t_cdf(double t, double df)
{
	if (!(df > 0) || isnan(t))
		return NAN;
	if (isinf(t))
		return t > 0 ? 1.0 : 0.0;
	/* P(|T| > |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2): Abramowitz & Stegun 26.7.1 with
	 * 26.5.27, or DLMF 8.17(ii). */
	double tail = 0.5 * mw_betainc(df / 2.0, 0.5, df / (df + t * t));
	return t > 0 ? 1.0 - tail : tail;
}

double mw_t_quantile(double p, double df)
{
	if (!(p > 0) || !(p < 1) || !(df > 0))
		return NAN;
	if (p == 0.5)
		return 0.0;
	/* Bracket, then bisect on the CDF to machine precision: slower than an expansion such as
	 * Hill's (CACM algorithm 396) but exact to the CDF's accuracy for every df, and we call
	 * it a few times per run. */
	double lo = -1.0, hi = 1.0;
	while (mw_t_cdf(lo, df) > p)
		lo *= 2.0;
	while (mw_t_cdf(hi, df) < p)
		hi *= 2.0;
	for (int i = 0; i < 200 && hi - lo > 1e-14 * (1.0 + fabs(lo)); i++) {
		double mid = 0.5 * (lo + hi);
		if (mw_t_cdf(mid, df) < p)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

double mw_welch_p(double mean1, double sd1, size_t n1, double mean2, double sd2, size_t n2,
		  double *t, double *df)
{
	if (t)
		*t = NAN;
	if (df)
		*df = NAN;
	if (n1 < 2 || n2 < 2 || isnan(sd1) || isnan(sd2) || isnan(mean1) || isnan(mean2))
		return NAN;
	/* Welch, "The generalization of 'Student's' problem when several different population
	 * variances are involved", Biometrika 34, 1947; df by Welch-Satterthwaite. */
	double v1 = sd1 * sd1 / (double)n1, v2 = sd2 * sd2 / (double)n2;
	if (v1 + v2 == 0)
		return mean1 == mean2 ? 1.0 : 0.0;
	double tt = (mean1 - mean2) / sqrt(v1 + v2);
	double d = (v1 + v2) * (v1 + v2) /
		   (v1 * v1 / (double)(n1 - 1) + v2 * v2 / (double)(n2 - 1));
	if (t)
		*t = tt;
	if (df)
		*df = d;
	return 2.0 * mw_t_cdf(-fabs(tt), d);
}

double mw_median(const double *x, size_t n)
{
	return mw_percentile(x, n, 50);
}

/* ---- Mann-Whitney U */

struct ranked {
	double v;
	bool from_x;
};

static int cmp_ranked(const void *a, const void *b)
{
	return cmp_double(&((const struct ranked *)a)->v, &((const struct ranked *)b)->v);
}

/* The exact two-sided p-value of a rank sum: the m values of the smaller sample hold the
 * doubled mid-ranks whose sum is w2 (doubled, so that mid-ranks of ties stay integers); under
 * the null hypothesis every choice of m of the n doubled ranks d[] is equally likely, so the
 * p-value is the share of choices whose sum lies at least as far from the mean m (n + 1) as
 * w2 does. The choices are counted by sum with the subset-sum recurrence (one item at a time,
 * ways[k][s] += ways[k - 1][s - d]), which counts ties exactly where the classic recurrence
 * for U without ties would not. -ENOMEM, or 0 with *p set. */
static int exact_p(const long long *d, size_t n, size_t m, long long w2, double *p)
{
	/* d[] ascends (ranks of sorted values): no m of them sum past the m largest. */
	long long smax = 0;
	for (size_t i = n - m; i < n; i++)
		smax += d[i];
	double *ways = calloc((m + 1) * (size_t)(smax + 1), sizeof(*ways));
	if (!ways)
		return -ENOMEM;
#define WAYS(k, s) ways[(size_t)(k) * (size_t)(smax + 1) + (size_t)(s)]
	WAYS(0, 0) = 1;
	long long reach = 0; /* the largest sum reached so far */
	for (size_t i = 0; i < n; i++) {
		reach = reach + d[i] < smax ? reach + d[i] : smax;
		for (size_t k = i + 1 < m ? i + 1 : m; k >= 1; k--)
			for (long long s = reach; s >= d[i]; s--)
				WAYS(k, s) += WAYS(k - 1, s - d[i]);
	}
	long long e2 = (long long)m * (long long)(n + 1), far = llabs(w2 - e2);
	double total = 0, tail = 0;
	for (long long s = 0; s <= smax; s++) {
		total += WAYS(m, s);
		if (llabs(s - e2) >= far)
			tail += WAYS(m, s);
	}
#undef WAYS
	free(ways);
	*p = total > 0 ? fmin(1.0, tail / total) : NAN;
	return 0;
}

int mw_mann_whitney(const double *x, size_t nx, const double *y, size_t ny, struct mw_mwu *out)
{
	*out = (struct mw_mwu){ .u = NAN, .p = NAN, .z = NAN };
	if (!nx || !ny)
		return 0;
	size_t n = nx + ny;
	struct ranked *r = malloc(n * sizeof(*r));
	long long *d = malloc(n * sizeof(*d));
	int rc = 0;
	if (!r || !d) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		r[i] = (struct ranked){ i < nx ? x[i] : y[i - nx], i < nx };
	qsort(r, n, sizeof(*r), cmp_ranked);
	/* Ranks a+1..b of a run of ties [a, b) share their mean (a + 1 + b) / 2: doubled, a + 1 + b. */
	long long wx2 = 0, ws2 = 0;
	double ties = 0;
	bool small_is_x = nx <= ny;
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a + 1; b < n && r[b].v == r[a].v; b++)
			;
		double t = (double)(b - a);
		ties += t * t * t - t;
		for (size_t i = a; i < b; i++) {
			d[i] = (long long)(a + 1 + b);
			wx2 += r[i].from_x ? d[i] : 0;
			ws2 += r[i].from_x == small_is_x ? d[i] : 0;
		}
	}
	out->u = (double)wx2 / 2.0 - (double)nx * (double)(nx + 1) / 2.0;
	size_t m = small_is_x ? nx : ny;
	if (m <= MW_MWU_EXACT_SMALL && n <= MW_MWU_EXACT_TOTAL) {
		out->exact = true;
		rc = exact_p(d, n, m, ws2, &out->p);
		goto out;
	}
	/* The normal approximation: mean nx ny / 2, variance nx ny / 12 ((n + 1) - sum(t^3 - t) /
	 * (n (n - 1))) over the tie groups' sizes t (Lehmann, "Nonparametrics", 1975, 1.4). */
	double mean = (double)nx * (double)ny / 2.0;
	double var = (double)nx * (double)ny / 12.0 *
		     ((double)(n + 1) - ties / ((double)n * (double)(n - 1)));
	if (!(var > 0)) {
		out->z = 0;
		out->p = 1.0; /* every value tied: no evidence either way */
		goto out;
	}
	out->z = fmax(0.0, fabs(out->u - mean) - 0.5) / sqrt(var);
	out->p = fmin(1.0, erfc(out->z / sqrt(2.0)));
out:
	free(r);
	free(d);
	return rc;
}
