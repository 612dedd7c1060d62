/* src/record/history.c: a record judged against the pooled runs of its series (history.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "result.h"
#include "stats.h"
#include "text.h"

static const json_t *summary_metric(const json_t *doc, const char *name)
{
	return json_object_get(json_object_get(json_object_get(doc, "summary"), "metrics"), name);
}

/* Appends doc's per-run values of name to *v (grown as needed). false when memory runs out. */
static bool append_samples(const json_t *doc, const char *name, double **v, size_t *n,
			   size_t *cap)
{
	size_t k = mw_result_samples(doc, name, NULL, 0);
	if (*n + k > *cap) {
		size_t c = 2 * (*n + k) + 8;
		double *nv = realloc(*v, c * sizeof(double));
		if (!nv)
			return false;
		*v = nv;
		*cap = c;
	}
	*n += mw_result_samples(doc, name, *v + *n, k);
	return true;
}

struct pool {
	double *x, *y;       /* the record's runs, the history's pooled runs */
	size_t nx, ny, capx, capy;
	size_t records, left_out;
	char first_out[480]; /* why the first history record left out was */
};

/* The history's runs of r's metric: records whose figure is not measured, DRIFTED or failed
 * an acceptance criterion that covers it are left out (as compare would refuse them). */
static bool pool_history(const json_t *const *hist, size_t nh, const char *name, struct pool *p)
{
	for (size_t i = 0; i < nh; i++) {
		char why[480];
		mw_compare_side_problem(hist[i], summary_metric(hist[i], name), name, 1, why,
					sizeof(why));
		if (why[0]) {
			if (!p->left_out++)
				snprintf(p->first_out, sizeof(p->first_out), "%s", why);
			continue;
		}
		if (!append_samples(hist[i], name, &p->y, &p->ny, &p->capy))
			return false;
		p->records++;
	}
	return true;
}

static void judge(struct mw_metric_cmp *r, const struct pool *p, const struct mw_compare_opts *o)
{
	struct mw_stats sx, sy;
	struct mw_mwu u;
	mw_stats_compute(p->y, p->ny, &sy);
	mw_stats_compute(p->x, p->nx, &sx);
	r->n[0] = p->ny;
	r->n[1] = p->nx;
	r->mean[0] = sy.mean;
	r->sd[0] = sy.sd;
	r->mean[1] = sx.mean;
	r->sd[1] = sx.sd;
	r->median[0] = sy.median;
	r->median[1] = sx.median;
	r->change_pct = sy.mean != 0 ? 100.0 * (sx.mean - sy.mean) / fabs(sy.mean) : NAN;
	r->delta = sx.median - sy.median;
	r->median_change_pct = sy.median != 0 ? 100.0 * r->delta / fabs(sy.median) : NAN;
	r->p = mw_welch_p(sy.mean, sy.sd, p->ny, sx.mean, sx.sd, p->nx, &r->t, &r->df);
	if (mw_mann_whitney(p->x, p->nx, p->y, p->ny, &u)) {
		r->verdict = MW_CMP_NOT_COMPARABLE;
		snprintf(r->reason, sizeof(r->reason), "out of memory for the rank test");
		return;
	}
	r->u = u.u;
	r->p_u = u.p;
	r->p_u_exact = u.exact;
	mw_compare_judge(r, r->median_change_pct, r->delta, r->p_u, o);
	if (r->verdict == MW_CMP_INCONCLUSIVE)
		snprintf(r->reason, sizeof(r->reason), "%+.1f %% (medians) but p = %.3g >= %g "
			 "(Mann-Whitney, %zu runs against %zu pooled from %zu records): more runs "
			 "in the record (memwall run --runs N) or a longer history (--against "
			 "last:N) would resolve it", r->median_change_pct, r->p_u, o->alpha, p->nx,
			 p->ny, p->records);
}

static void check_metric(const json_t *rec, const json_t *const *hist, size_t nh,
			 const struct mw_metric *met, const struct mw_compare_opts *o,
			 struct mw_metric_cmp *r)
{
	struct pool p = { 0 };
	char why[480];
	memset(r, 0, sizeof(*r));
	r->metric = met;
	r->required = true;
	r->rank = true;
	r->delta = r->change_pct = r->t = r->df = r->p = NAN;
	r->mean[0] = r->mean[1] = r->sd[0] = r->sd[1] = NAN;
	r->median[0] = r->median[1] = r->median_change_pct = r->u = r->p_u = NAN;
	r->tolerance_pct = mw_compare_tolerance(rec, met->name, o);
	r->verdict = MW_CMP_NOT_COMPARABLE;
	/* The record itself needs two runs: one value says nothing about its own spread. */
	mw_compare_side_problem(rec, summary_metric(rec, met->name), met->name, 2, why,
				sizeof(why));
	if (why[0]) {
		snprintf(r->reason, sizeof(r->reason), "NEW: %s", why);
		goto out;
	}
	if (!append_samples(rec, met->name, &p.x, &p.nx, &p.capx) ||
	    !pool_history(hist, nh, met->name, &p)) {
		snprintf(r->reason, sizeof(r->reason), "out of memory pooling the history");
		goto out;
	}
	r->records = p.records;
	if (p.ny < 2) {
		snprintf(r->reason, sizeof(r->reason), "BASE: %zu run%s pooled from %zu record%s "
			 "of the history (%zu left out%s%s): a test needs at least 2", p.ny,
			 p.ny == 1 ? "" : "s", p.records, p.records == 1 ? "" : "s", p.left_out,
			 p.left_out ? "; the first: " : "", p.first_out);
		goto out;
	}
	judge(r, &p, o);
	if (p.left_out && r->verdict != MW_CMP_INCONCLUSIVE)
		snprintf(r->reason, sizeof(r->reason), "%zu record%s of the history left out (the "
			 "first: %s)", p.left_out, p.left_out == 1 ? "" : "s", p.first_out);
out:
	free(p.x);
	free(p.y);
}

void mw_history_check(const json_t *rec, const json_t *const *hist, size_t nh,
		      size_t min_records, const struct mw_compare_opts *o,
		      struct mw_comparison *c)
{
	memset(c, 0, sizeof(*c));
	c->opts = *o;
	c->history = true;
	if (nh < min_records || nh == 0) {
		if (nh == 0)
			snprintf(c->refused, sizeof(c->refused), "no earlier record of this "
				 "record's series in the store (`memwall db series` lists them; "
				 "`memwall db import` adds records)");
		else
			snprintf(c->refused, sizeof(c->refused), "%zu earlier record%s of this "
				 "record's series in the store: a history needs at least %zu "
				 "(--min-records)", nh, nh == 1 ? "" : "s", min_records);
		mw_compare_decide(c);
		return;
	}
	c->compared = true;
	for (size_t i = 0; i < o->n_require && c->n < MW_N_METRICS; i++) {
		const struct mw_metric *met = mw_metric_find(o->require[i]);
		if (met)
			check_metric(rec, hist, nh, met, o, &c->m[c->n++]);
	}
	mw_compare_decide(c);
	for (size_t i = 0; i < c->n; i++)
		mw_utf8_trim(c->m[i].reason);
	mw_utf8_trim(c->exit_reason);
}
