/* src/record/changepoint.h: steps in a history of values (`memwall db changes`).
 *
 * The method: penalized optimal partitioning under the L1 cost. The history y[0..n) is cut into
 * segments, each at least min_segment values long, so as to minimize
 *
 *     sum over segments of sum_i |y_i - median(segment)|  +  penalty * (number of cuts)
 *
 * solved exactly by dynamic programming over the last cut (Jackson et al., "An algorithm for
 * optimal partitioning of data on an interval", IEEE Signal Processing Letters 12(2), 2005; PELT,
 * Killick, Fearnhead & Eckley, JASA 107(500), 2012, is the same program with pruning). The L1
 * cost around each segment's median keeps one wild value from moving a level, and a segment of at
 * least 3 values can never be a single outlier: its median is an ordinary value, so isolating an
 * outlier buys nothing. The penalty is the reduction in the sum of absolute deviations (in the
 * values' own unit) that one more cut must buy:
 *
 *     penalty = k * sigma * ln(n),   sigma = max(1.4826 * median_i |y_i - y_{i-1}| / sqrt(2),
 *                                                  floor_rel * |median(y)|)
 *
 * sigma is the noise's standard deviation estimated from successive differences (a step moves
 * only one of them; 1.4826 * MAD is the normal sd, and a difference of two values has sqrt(2)
 * times the sd of one), floored at floor_rel of the level so that nearly deterministic figures
 * (engine-accounted bytes, a simulated PMU) do not turn rounding into steps; ln(n) is Schwarz's
 * (BIC) growth of the penalty with the length of the history (Yao, "Estimating the number of
 * change-points via Schwarz' criterion", Stat. Prob. Letters 6, 1988). With k = 3 a flat history
 * of Gaussian noise shows a false step in about 1 of 300 histories of 10 to 100 values, and a
 * step of 3 sigma between two runs of 20 values is found nearly always (tests/src/
 * test_changepoint.c draws both; src/README.md, "A series").
 *
 * Each cut found is then moved to the split of its two neighbouring segments that fits them
 * best with at least one value a side: segments of min_segment values would put a step two
 * values before the end one value early. The cost is O(n^2 log n) in time for n values. */
#ifndef MEMWALL_RECORD_CHANGEPOINT_H
#define MEMWALL_RECORD_CHANGEPOINT_H

#include <stddef.h>

struct mw_cp_opts {
	double k;           /* the penalty's multiple of sigma * ln(n) (default 3) */
	size_t min_segment; /* values per segment, at least (default 3) */
	double floor_rel;   /* sigma's floor, relative to the history's median (default 0.001) */
};

void mw_cp_opts_default(struct mw_cp_opts *o);

/* One step: the segments [from, at) and [at, to) on either side of it. */
struct mw_change {
	size_t at;          /* index of the first value after the step */
	size_t from, to;
	double before, after; /* the two segments' medians */
	double change_pct;  /* 100 (after - before) / |before|; NaN when before is 0 */
	double gain;        /* what the cut saves: L1 cost of [from, to) as one segment minus
			     * the two segments' costs (compare with penalty) */
	double p;           /* Mann-Whitney p of the two segments' values (stats.h) */
};

struct mw_cp_result {
	size_t n_changes;
	struct mw_change *changes; /* n_changes of them, in order; owned, mw_cp_result_free */
	double sigma;              /* the noise scale used */
	double penalty;            /* the penalty used */
};

/* The steps of y[0..n) (NaN-free: the caller leaves unmeasured values out). A history
 * shorter than 2 * min_segment has none. 0, or -ENOMEM / -EINVAL (bad opts). */
int mw_changepoints(const double *y, size_t n, const struct mw_cp_opts *o,
		    struct mw_cp_result *out);
void mw_cp_result_free(struct mw_cp_result *r);

#endif
