/* src/record/changepoint.c: steps in a history by penalized L1 optimal partitioning
 * (changepoint.h says the method and where it comes from). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "changepoint.h"
#include "stats.h"

void mw_cp_opts_default(struct mw_cp_opts *o)
{
	*o = (struct mw_cp_opts){ .k = 3.0, .min_segment = 3, .floor_rel = 0.001 };
}

void mw_cp_result_free(struct mw_cp_result *r)
{
	free(r->changes);
	r->changes = NULL;
	r->n_changes = 0;
}

/* ---- the L1 cost of y[s..t) for every s below a fixed t, by two Fenwick trees over the values'
 * ranks (count and sum of the values inserted so far): inserting y[t-1], y[t-2], ... one at a
 * time, each segment's median and cost come in O(log n). */

struct fenwick {
	size_t n;
	int *cnt;
	double *sum;
	const double *sorted; /* the values by rank */
};

static void fw_add(struct fenwick *f, size_t rank, double v)
{
	for (size_t i = rank + 1; i <= f->n; i += i & (~i + 1)) {
		f->cnt[i]++;
		f->sum[i] += v;
	}
}

/* The k-th smallest inserted value (k from 1), and the sum of the k smallest. */
static double fw_kth(const struct fenwick *f, size_t k, double *sum_k)
{
	size_t pos = 0, step = 1;
	double s = 0;
	while (step * 2 <= f->n)
		step *= 2;
	for (; step; step /= 2)
		if (pos + step <= f->n && (size_t)f->cnt[pos + step] < k) {
			pos += step;
			k -= (size_t)f->cnt[pos];
			s += f->sum[pos];
		}
	/* pos is the rank (from 0) of the k-th value: add it */
	*sum_k = s + f->sorted[pos];
	return f->sorted[pos];
}

/* The L1 cost of the len values inserted, around their (lower) median m, the k-th smallest:
 * sum_{j<=k} (m - a_j) + sum_{j>k} (a_j - m) = S_all - 2 S_k + m (2k - len). */
static double fw_cost(const struct fenwick *f, size_t len, double total)
{
	size_t k = (len + 1) / 2;
	double sk, m = fw_kth(f, k, &sk);
	return fmax(0.0, total - 2.0 * sk + m * (2.0 * (double)k - (double)len));
}

struct by_value {
	double v;
	size_t i;
};

static int cmp_by_value(const void *a, const void *b)
{
	double x = ((const struct by_value *)a)->v, y = ((const struct by_value *)b)->v;
	return (x > y) - (x < y);
}

/* The L1 cost of y[a..b) around its median, directly (for the evidence of each step). */
static double l1_cost(const double *y, size_t a, size_t b)
{
	double m = mw_median(y + a, b - a), c = 0;
	for (size_t i = a; i < b; i++)
		c += fabs(y[i] - m);
	return c;
}

static double noise_sigma(const double *y, size_t n, double floor_rel)
{
	double *d = malloc((n - 1) * sizeof(*d));
	if (!d)
		return NAN;
	for (size_t i = 1; i < n; i++)
		d[i - 1] = fabs(y[i] - y[i - 1]);
	double s = 1.4826 * mw_median(d, n - 1) / sqrt(2.0);
	free(d);
	return fmax(s, floor_rel * fabs(mw_median(y, n)));
}

/* The dynamic program: F[t] = min over the last cut s of F[s] + C(s, t) + penalty, with
 * F[0] = -penalty (no cut before the first segment); last[t] receives the best s. Ties go to
 * the earlier cut, so equal fits never add a step. */
static int partition(const double *y, size_t n, size_t L, double penalty, size_t *last)
{
	double *F = malloc((n + 1) * sizeof(*F));
	struct by_value *bv = malloc(n * sizeof(*bv));
	size_t *rank = malloc(n * sizeof(*rank));
	double *sorted = malloc(n * sizeof(*sorted));
	struct fenwick fw = { .n = n, .cnt = calloc(n + 1, sizeof(int)),
			      .sum = calloc(n + 1, sizeof(double)), .sorted = sorted };
	int rc = 0;
	if (!F || !bv || !rank || !sorted || !fw.cnt || !fw.sum) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		bv[i] = (struct by_value){ y[i], i };
	qsort(bv, n, sizeof(*bv), cmp_by_value);
	for (size_t r = 0; r < n; r++) {
		rank[bv[r].i] = r;
		sorted[r] = bv[r].v;
	}
	F[0] = -penalty;
	for (size_t t = 1; t <= n; t++) {
		F[t] = INFINITY;
		last[t] = 0;
		memset(fw.cnt, 0, (n + 1) * sizeof(int));
		memset(fw.sum, 0, (n + 1) * sizeof(double));
		double total = 0;
		for (size_t s = t; s-- > 0;) {
			fw_add(&fw, rank[s], y[s]);
			total += y[s];
			/* a segment [s, t) of at least L values, after a feasible prefix */
			if (t - s < L || !isfinite(F[s]))
				continue;
			double c = F[s] + fw_cost(&fw, t - s, total) + penalty;
			if (c <= F[t]) {
				F[t] = c;
				last[t] = s;
			}
		}
	}
out:
	free(F);
	free(bv);
	free(rank);
	free(sorted);
	free(fw.cnt);
	free(fw.sum);
	return rc;
}

/* Each cut moved to the split of its two neighbouring segments that fits them best, each
 * side at least one value: the program places a step where segments of min_segment values fit
 * best, so a step two values before the end comes out one early, with a value from before the
 * step opening the segment after it. Left to right, each with its neighbours as moved. */
static void refine(const double *y, size_t *cuts, size_t nc, size_t n)
{
	for (size_t c = 0; c < nc; c++) {
		size_t from = c ? cuts[c - 1] : 0, to = c + 1 < nc ? cuts[c + 1] : n;
		double best = INFINITY;
		for (size_t at = from + 1; at < to; at++) {
			double x = l1_cost(y, from, at) + l1_cost(y, at, to);
			/* ties keep the program's own choice */
			if (x < best || (x == best && at == cuts[c])) {
				best = x;
				cuts[c] = at;
			}
		}
	}
}

static int evidence(const double *y, const size_t *cuts, size_t nc, size_t n,
		    struct mw_change *ch)
{
	for (size_t c = 0; c < nc; c++) {
		struct mw_change *x = &ch[c];
		x->at = cuts[c];
		x->from = c ? cuts[c - 1] : 0;
		x->to = c + 1 < nc ? cuts[c + 1] : n;
		x->before = mw_median(y + x->from, x->at - x->from);
		x->after = mw_median(y + x->at, x->to - x->at);
		x->change_pct = x->before != 0 ? 100.0 * (x->after - x->before) / fabs(x->before)
					       : NAN;
		x->gain = l1_cost(y, x->from, x->to) - l1_cost(y, x->from, x->at) -
			  l1_cost(y, x->at, x->to);
		struct mw_mwu u;
		if (mw_mann_whitney(y + x->from, x->at - x->from, y + x->at, x->to - x->at, &u))
			return -ENOMEM;
		x->p = u.p;
	}
	return 0;
}

int mw_changepoints(const double *y, size_t n, const struct mw_cp_opts *o,
		    struct mw_cp_result *out)
{
	*out = (struct mw_cp_result){ .sigma = NAN, .penalty = NAN };
	if (!o || !(o->k >= 0) || o->min_segment < 1 || !(o->floor_rel >= 0))
		return -EINVAL;
	size_t L = o->min_segment;
	if (n < 2 * L)
		return 0;
	out->sigma = noise_sigma(y, n, o->floor_rel);
	if (isnan(out->sigma))
		return -ENOMEM;
	out->penalty = o->k * out->sigma * log((double)n);
	/* Nothing varies (or a zero level without noise): no step to find. */
	if (!(out->sigma > 0))
		return 0;
	size_t *last = malloc((n + 1) * sizeof(*last)), *cuts = malloc(n * sizeof(*cuts));
	int rc = last && cuts ? partition(y, n, L, out->penalty, last) : -ENOMEM;
	size_t nc = 0;
	for (size_t t = n; !rc && last[t] > 0; t = last[t])
		cuts[nc++] = last[t];
	/* backwards to forwards */
	for (size_t i = 0; !rc && i < nc / 2; i++) {
		size_t tmp = cuts[i];
		cuts[i] = cuts[nc - 1 - i];
		cuts[nc - 1 - i] = tmp;
	}
	if (!rc && nc) {
		refine(y, cuts, nc, n);
		out->changes = calloc(nc, sizeof(*out->changes));
		rc = out->changes ? evidence(y, cuts, nc, n, out->changes) : -ENOMEM;
		out->n_changes = rc ? 0 : nc;
		if (rc)
			mw_cp_result_free(out);
	}
	free(last);
	free(cuts);
	return rc;
}
