/* tests/src/test_history.c: src/record/history.c: a record judged against the pooled runs of
 * earlier records. Records are fixtures; the pooled samples, their medians, Welch's t and its
 * degrees of freedom are recomputed here from the records' own per-run figures. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_result.h"
#include "history.h"
#include "stats.h"
#include "test.h"
#include "values.h"

static json_t *rec(double dram_bytes, double latency_ns, int runs, uint32_t seed)
{
	struct t_fx_spec sp = { .protocol = "p1", .cpu = "CPU Alpha", .runs = runs, .warmups = 1,
			      .tokens = 8, .latency_ns = latency_ns, .jitter = 0.01,
			      .dram_bytes = dram_bytes, .instances = 1, .seed = seed };
	return t_fx_record(&sp);
}

/* The measured runs' figure (not the warm-up), read from the record here. */
static size_t figures(const json_t *d, const char *name, double *out)
{
	size_t n = 0, i;
	json_t *r;
	json_array_foreach(json_object_get(d, "runs"), i, r) {
		const json_t *v = json_object_get(json_object_get(r, "figures"), name);
		if (!json_is_true(json_object_get(r, "warmup")) && json_is_number(v))
			out[n++] = json_number_value(v);
	}
	return n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(const double *v, size_t n)
{
	double s[64];
	memcpy(s, v, n * sizeof(double));
	qsort(s, n, sizeof(double), cmp);
	return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

static void mean_var(const double *v, size_t n, double *m, double *var)
{
	double ss;
	t_mean_ss(v, n, m, &ss);
	*var = ss / (double)(n - 1);
}

static const struct mw_metric_cmp *metric(const struct mw_comparison *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->m[i].metric->name, name))
			return &c->m[i];
	return NULL;
}

static const char *const both[] = { "dram_MB_per_token", "tok_per_s" };

static void opts(struct mw_compare_opts *o)
{
	mw_compare_opts_default(o);
	o->require = both;
	o->n_require = 2;
}

/* Every figure of one metric's verdict against arithmetic done here. */
static void check_figures(const struct mw_metric_cmp *m, const json_t *r,
			  const json_t *const *h, size_t nh)
{
	double x[64], y[512];
	size_t nx = figures(r, m->metric->name, x), ny = 0;
	for (size_t i = 0; i < nh; i++)
		ny += figures(h[i], m->metric->name, y + ny);
	T_EQ_INT(m->n[1], nx);
	T_EQ_INT(m->n[0], ny);
	T_EQ_INT(m->records, nh);
	T_NEAR(m->median[1], median(x, nx), 1e-12 * fabs(median(x, nx)));
	T_NEAR(m->median[0], median(y, ny), 1e-12 * fabs(median(y, ny)));
	double want_pct = 100.0 * (median(x, nx) - median(y, ny)) / median(y, ny);
	T_NEAR(m->median_change_pct, want_pct, 1e-9);
	/* Welch (1947): t = (mean_new - mean_base) ... here as memwall reports it, base - new */
	double mx, vx, my, vy;
	mean_var(x, nx, &mx, &vx);
	mean_var(y, ny, &my, &vy);
	double se2 = vx / (double)nx + vy / (double)ny;
	double t = (my - mx) / sqrt(se2);
	double df = se2 * se2 / ((vx / nx) * (vx / nx) / (double)(nx - 1) +
				 (vy / ny) * (vy / ny) / (double)(ny - 1));
	T_NEAR(m->t, t, 1e-9 * fabs(t) + 1e-12);
	T_NEAR(m->df, df, 1e-9 * df);
	T_NEAR(m->p, 2.0 * mw_t_cdf(-fabs(t), df), 1e-12);
	struct mw_mwu u;
	T_EQ_INT(mw_mann_whitney(x, nx, y, ny, &u), 0);
	T_NEAR(m->p_u, u.p, 0);
	T_ASSERT(m->p_u_exact == u.exact);
}

int main(void)
{
	json_t *h[6], *same, *up, *fast, *one_run;
	struct mw_compare_opts o;
	struct mw_comparison *c = calloc(1, sizeof(*c));
	for (int i = 0; i < 6; i++)
		h[i] = rec(2e6, 1e6, 3, 10 + (uint32_t)i);
	const json_t *const *hist = (const json_t *const *)h;
	same = rec(2e6, 1e6, 3, 50);
	up = rec(2.4e6, 1e6, 3, 51);      /* 20 % more DRAM bytes per token */
	fast = rec(2e6, 0.8e6, 3, 52);    /* 25 % more tokens per second */
	one_run = rec(2e6, 1e6, 1, 53);
	opts(&o);

	mw_history_check(same, hist, 6, MW_HISTORY_MIN_RECORDS, &o, c);
	T_ASSERT(c->history && c->compared);
	T_EQ_INT(c->n, 2);
	T_EQ_INT(c->exit_code, MW_COMPARE_PASS);
	T_EQ_INT(metric(c, "dram_MB_per_token")->verdict, MW_CMP_SAME);
	check_figures(metric(c, "dram_MB_per_token"), same, hist, 6);
	check_figures(metric(c, "tok_per_s"), same, hist, 6);

	mw_history_check(up, hist, 6, MW_HISTORY_MIN_RECORDS, &o, c);
	const struct mw_metric_cmp *m = metric(c, "dram_MB_per_token");
	T_EQ_INT(m->verdict, MW_CMP_REGRESSION);
	T_NEAR(m->median_change_pct, 20.0, 1.0);
	T_NEAR(m->tolerance_pct, 5.0, 0);
	T_ASSERT(m->p_u_exact && m->p_u < 0.05);
	check_figures(m, up, hist, 6);
	T_EQ_INT(c->exit_code, MW_COMPARE_REGRESSION);
	T_CONTAINS(c->exit_reason, "regressed");

	/* The protocol's tolerance for the metric: 30 % hides 20 %; --max-regress replaces it. */
	json_object_set_new(json_object_get(json_object_get(up, "protocol"), "document"),
			    "tolerance_pct", json_pack("{s:f}", "dram_MB_per_token", 30.0));
	mw_history_check(up, hist, 6, MW_HISTORY_MIN_RECORDS, &o, c);
	T_NEAR(metric(c, "dram_MB_per_token")->tolerance_pct, 30.0, 0);
	T_EQ_INT(metric(c, "dram_MB_per_token")->verdict, MW_CMP_SAME);
	T_EQ_INT(c->exit_code, MW_COMPARE_PASS);
	o.max_regress_pct = 10;
	o.max_regress_set = true;
	mw_history_check(up, hist, 6, MW_HISTORY_MIN_RECORDS, &o, c);
	T_EQ_INT(metric(c, "dram_MB_per_token")->verdict, MW_CMP_REGRESSION);
	opts(&o);

	/* Faster is better for tok/s: an improvement, no failure. */
	mw_history_check(fast, hist, 6, MW_HISTORY_MIN_RECORDS, &o, c);
	T_EQ_INT(metric(c, "tok_per_s")->verdict, MW_CMP_IMPROVEMENT);
	T_EQ_INT(c->exit_code, MW_COMPARE_PASS);
	check_figures(metric(c, "tok_per_s"), fast, hist, 6);

	/* Too short a history, or none: not comparable, exit 2, and why. */
	mw_history_check(same, hist, 1, MW_HISTORY_MIN_RECORDS, &o, c);
	T_ASSERT(!c->compared);
	T_EQ_INT(c->exit_code, MW_COMPARE_REFUSED);
	T_CONTAINS(c->exit_reason, "needs at least 2");
	mw_history_check(same, hist, 0, 1, &o, c);
	T_EQ_INT(c->exit_code, MW_COMPARE_REFUSED);
	T_CONTAINS(c->exit_reason, "no earlier record");

	/* A record of one run says nothing about its own spread: not comparable, exit 3. */
	mw_history_check(one_run, hist, 6, MW_HISTORY_MIN_RECORDS, &o, c);
	T_EQ_INT(metric(c, "dram_MB_per_token")->verdict, MW_CMP_NOT_COMPARABLE);
	T_CONTAINS(metric(c, "dram_MB_per_token")->reason, "NEW: 1 run");
	T_EQ_INT(c->exit_code, MW_COMPARE_NOT_COMPARABLE);

	/* A history record without the figure is left out, and the report says so. */
	json_t *no_dram = rec(0, 1e6, 3, 60);
	const json_t *mixed[3] = { h[0], no_dram, h[1] };
	mw_history_check(same, mixed, 3, MW_HISTORY_MIN_RECORDS, &o, c);
	m = metric(c, "dram_MB_per_token");
	T_EQ_INT(m->records, 2);
	T_EQ_INT(m->n[0], 6);
	T_CONTAINS(m->reason, "1 record of the history left out");
	T_CONTAINS(m->reason, "not measured");
	T_EQ_INT(metric(c, "tok_per_s")->records, 3);
	/* Only records without it: not comparable. */
	const json_t *none[1] = { no_dram };
	mw_history_check(same, none, 1, 1, &o, c);
	T_EQ_INT(metric(c, "dram_MB_per_token")->verdict, MW_CMP_NOT_COMPARABLE);
	T_CONTAINS(metric(c, "dram_MB_per_token")->reason, "BASE: 0 runs pooled");

	json_decref(no_dram);
	for (int i = 0; i < 6; i++)
		json_decref(h[i]);
	json_decref(same);
	json_decref(up);
	json_decref(fast);
	json_decref(one_run);
	free(c);
	return t_done();
}
