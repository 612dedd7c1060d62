/* src/record/compare.c: comparability of two records and a verdict per metric (compare.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "provenance.h"
#include "text.h"
#include "machine.h"
#include "stats.h"

static const char *const verdict_names[MW_N_CMP_VERDICTS] = {
	[MW_CMP_SAME] = "same",
	[MW_CMP_IMPROVEMENT] = "improvement",
	[MW_CMP_REGRESSION] = "regression",
	[MW_CMP_INCONCLUSIVE] = "inconclusive",
	[MW_CMP_NOT_COMPARABLE] = "not-comparable",
};

const char *mw_cmp_verdict_name(enum mw_cmp_verdict v)
{
	return v < MW_N_CMP_VERDICTS ? verdict_names[v] : "?";
}

/* What a CI job gates on unless told otherwise: the two figures memwall exists to measure. */
static const char *const default_require[] = { "dram_MB_per_token", "tok_per_s" };

void mw_compare_opts_default(struct mw_compare_opts *o)
{
	*o = (struct mw_compare_opts){
		.max_regress_pct = 5.0, .alpha = 0.05, .power = 0.8,
		.require = default_require,
		.n_require = sizeof(default_require) / sizeof(default_require[0]),
	};
}

int mw_compare_check_require(const struct mw_compare_opts *o, const char **bad)
{
	for (size_t i = 0; i < o->n_require; i++)
		if (!mw_metric_find(o->require[i])) {
			*bad = o->require[i];
			return -EINVAL;
		}
	return 0;
}

/* ---- settings */

/* One effective setting: its value is the record's own (what the run resolved) where the
 * record has it, else the command-line override, else the protocol document's value. An
 * override equal to the protocol's value is then no difference, and a --threads 2 run is one
 * even in records whose engine block predates the threads field. */
struct setting {
	const char *field;
	const char *record[3];   /* path in the record, NULL-terminated; NULL: none */
	const char *override;    /* key in protocol.overrides; NULL: none */
	const char *document[3]; /* path in protocol.document */
	bool dram_measured_only; /* only when both records measured DRAM */
};

static const struct setting settings[] = {
	{ "protocol.name", { "protocol", "name" }, NULL, { NULL }, false },
	{ "protocol.sha256", { "protocol", "sha256" }, NULL, { NULL }, false },
	{ "model.sha256", { "model", "sha256" }, NULL, { NULL }, false },
	{ "runs", { NULL }, "runs", { "runs" }, false },
	{ "decode_tokens", { NULL }, "decode_tokens", { "decode_tokens" }, false },
	{ "engine.threads", { "engine", "threads" }, "threads", { "engine", "threads" }, false },
	{ "engine.load", { "engine", "load" }, NULL, { "engine", "load" }, false },
	{ "engine.kernels", { "engine", "kernels" }, NULL, { "engine", "kernels" }, false },
	{ "counters.dram.backend", { "counters", "dram", "backend" }, NULL, { NULL }, true },
	{ "counters.dram.mb_per_token_basis", { "counters", "dram", "mb_per_token_basis" }, NULL,
	  { NULL }, true },
};

static const json_t *at(const json_t *doc, const char *const path[3])
{
	for (int i = 0; i < 3 && path[i] && doc; i++)
		doc = json_object_get(doc, path[i]);
	return path[0] ? doc : NULL;
}

static const json_t *effective(const json_t *doc, const struct setting *s, const char **from)
{
	const json_t *v = at(doc, s->record);
	*from = "the record";
	if (v && !json_is_null(v))
		return v;
	const json_t *prot = json_object_get(doc, "protocol");
	if (s->override && (v = json_object_get(json_object_get(prot, "overrides"), s->override))) {
		*from = "protocol.overrides";
		return v;
	}
	*from = "protocol.document";
	return at(json_object_get(prot, "document"), s->document);
}

static void dump(const json_t *v, char *buf, size_t n)
{
	char *s = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	snprintf(buf, n, "%s", s ? s : "absent");
	free(s);
}

static bool dram_measured(const json_t *doc)
{
	return json_is_true(json_object_get(json_object_get(json_object_get(doc, "counters"),
							     "dram"), "measured"));
}

static struct mw_setting_diff *add_diff(struct mw_comparison *c, const char *field)
{
	if (c->n_diffs >= MW_COMPARE_MAX_DIFFS)
		return NULL;
	struct mw_setting_diff *d = &c->diffs[c->n_diffs++];
	memset(d, 0, sizeof(*d));
	snprintf(d->field, sizeof(d->field), "%s", field);
	return d;
}

/* Fills c's setting differences; returns true when one of them --force cannot excuse. */
static bool compare_settings(const json_t *x, const json_t *y, struct mw_comparison *c)
{
	bool both_dram = dram_measured(x) && dram_measured(y);
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		const struct setting *s = &settings[i];
		const char *fx, *fy;
		if (s->dram_measured_only && !both_dram)
			continue; /* the DRAM metrics say "not comparable" themselves */
		const json_t *a = effective(x, s, &fx), *b = effective(y, s, &fy);
		if (json_equal(a ? a : json_null(), b ? b : json_null()))
			continue;
		struct mw_setting_diff *d = add_diff(c, s->field);
		if (!d)
			return false;
		dump(a, d->base, sizeof(d->base));
		dump(b, d->new, sizeof(d->new));
		snprintf(d->note, sizeof(d->note), "BASE's from %s, NEW's from %s", fx, fy);
	}
	/* Who counted the DRAM figures is a setting: a simulated PMU's scripted counts never
	 * compare with a record made without it (hardware counters, or none). A record without
	 * DRAM counters beside one with them still compares: its DRAM figures are "not
	 * comparable" one by one, and tok/s compares. */
	struct mw_provenance px, py;
	mw_provenance_of(x, &px);
	mw_provenance_of(y, &py);
	bool layers_differ = (px.source == MW_DRAM_SIMULATED) != (py.source == MW_DRAM_SIMULATED);
	if (layers_differ) {
		struct mw_setting_diff *d = add_diff(c, "counters.dram.layer");
		if (d) {
			snprintf(d->base, sizeof(d->base), "%s (layer %s)",
				 mw_dram_source_name(px.source), px.layer ? px.layer : "none");
			snprintf(d->new, sizeof(d->new), "%s (layer %s)",
				 mw_dram_source_name(py.source), py.layer ? py.layer : "none");
			snprintf(d->note, sizeof(d->note), "one record's DRAM figures come from "
				 "the SIMULATED PMU, the other's do not; --force does not compare "
				 "them");
		}
	}
	char why[200];
	if (!mw_machine_same(json_object_get(x, "machine"), json_object_get(y, "machine"), why,
			     sizeof(why))) {
		struct mw_setting_diff *d = add_diff(c, "machine");
		if (d)
			snprintf(d->note, sizeof(d->note), "%s (mw_machine_same: CPU, "
				 "family/model/stepping, logical CPUs, sockets, memory within 1 GiB)",
				 why);
	}
	return layers_differ;
}

/* ---- per metric */

/* An acceptance criterion that failed makes the metrics it vouches for incomparable: a CV
 * limit vouches for its own figure's family, every other criterion (min_tokens, complete,
 * bandwidth_drift_pct, criteria added later) for the whole record. */
static const struct {
	const char *criterion;
	const char *prefixes[3]; /* metric-name prefixes; { NULL }: every metric */
} criterion_scope[] = {
	{ "max_cv_mb_per_token_pct", { "dram_", NULL } },
	{ "max_cv_tok_s_pct", { "tok_per_s", "latency_", NULL } },
};

static bool criterion_covers(const char *criterion, const char *metric)
{
	for (size_t i = 0; i < sizeof(criterion_scope) / sizeof(criterion_scope[0]); i++) {
		if (strcmp(criterion_scope[i].criterion, criterion))
			continue;
		for (int k = 0; criterion_scope[i].prefixes[k]; k++)
			if (!strncmp(metric, criterion_scope[i].prefixes[k],
				     strlen(criterion_scope[i].prefixes[k])))
				return true;
		return false;
	}
	return true;
}

void mw_compare_side_problem(const json_t *doc, const json_t *met, const char *name,
			     size_t min_runs, char *buf, size_t n)
{
	const json_t *drift = json_object_get(doc, "drift"), *cr;
	buf[0] = '\0';
	if (!met) {
		snprintf(buf, n, "absent from the record");
		return;
	}
	if (!json_is_true(json_object_get(met, "measured"))) {
		const char *r = json_string_value(json_object_get(met, "reason"));
		snprintf(buf, n, "not measured: %s", r ? r : "no reason given");
		return;
	}
	if (json_is_true(json_object_get(drift, "drifted"))) {
		snprintf(buf, n, "DRIFTED: the machine's read bandwidth changed %+.1f %% between "
			 "the first and the last run (tolerance %g %%)",
			 json_number_value(json_object_get(drift, "change_pct")),
			 json_number_value(json_object_get(drift, "tolerance_pct")));
		return;
	}
	size_t i;
	json_array_foreach(json_object_get(json_object_get(doc, "acceptance"), "criteria"), i, cr) {
		const char *c = json_string_value(json_object_get(cr, "criterion"));
		const char *st = json_string_value(json_object_get(cr, "status"));
		if (!c || !st || strcmp(st, "fail") || !criterion_covers(c, name))
			continue;
		snprintf(buf, n, "acceptance criterion %s failed (value %g, limit %g)", c,
			 json_number_value(json_object_get(cr, "value")),
			 json_number_value(json_object_get(cr, "limit")));
		return;
	}
	json_int_t runs = json_integer_value(json_object_get(met, "n"));
	if (runs < (json_int_t)min_runs)
		snprintf(buf, n, "%lld run%s: a t-test needs at least 2 per side", (long long)runs,
			 runs == 1 ? "" : "s");
}

static double num_or_nan(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

long mw_compare_runs_needed(double delta, double sd1, double sd2, double alpha, double power)
{
	double s2 = sd1 * sd1 + sd2 * sd2, s4 = sd1 * sd1 * sd1 * sd1 + sd2 * sd2 * sd2 * sd2;
	if (!(s2 > 0) || !(fabs(delta) > 0) || !(alpha > 0) || !(power > 0 && power < 1))
		return 0;
	/* Power of the two-sided Welch test with n runs per side, by the shifted central t
	 * (the normal approximation to the noncentral t, with the t distribution for small n;
	 * Cohen, "Statistical Power Analysis for the Behavioral Sciences", 2nd ed., 1988, 2.3):
	 * power = P(T > t_crit - d) + P(T < -t_crit - d), d = |delta| / sqrt(s2 / n), with the
	 * Welch-Satterthwaite df for equal n: (n - 1) s2^2 / s4. */
	for (long n = 2; n <= MW_COMPARE_MAX_RUNS; n++) {
		double df = (double)(n - 1) * s2 * s2 / s4;
		double tc = mw_t_quantile(1.0 - alpha / 2.0, df);
		double d = fabs(delta) / sqrt(s2 / (double)n);
		double pw = 1.0 - mw_t_cdf(tc - d, df) + mw_t_cdf(-tc - d, df);
		if (pw >= power)
			return n;
	}
	return -1;
}

double mw_compare_tolerance(const json_t *doc, const char *name, const struct mw_compare_opts *o)
{
	const json_t *tol = json_object_get(json_object_get(json_object_get(json_object_get(doc,
				"protocol"), "document"), "tolerance_pct"), name);
	return !o->max_regress_set && json_is_number(tol) ? json_number_value(tol)
							  : o->max_regress_pct;
}

void mw_compare_judge(struct mw_metric_cmp *r, double change_pct, double delta, double p,
		      const struct mw_compare_opts *o)
{
	/* Worse is lower for higher-is-better figures and higher for the others. */
	double worse = r->metric->better > 0 ? -change_pct : change_pct;
	if (isnan(change_pct))
		worse = r->metric->better > 0 ? -delta : delta;
	bool large = isnan(change_pct) ? delta != 0 : fabs(change_pct) > r->tolerance_pct;
	if (!large)
		r->verdict = MW_CMP_SAME;
	else if (p < o->alpha)
		r->verdict = worse > 0 ? MW_CMP_REGRESSION : MW_CMP_IMPROVEMENT;
	else
		r->verdict = MW_CMP_INCONCLUSIVE;
}

static void test_metric(struct mw_metric_cmp *r, const struct mw_compare_opts *o)
{
	r->delta = r->mean[1] - r->mean[0];
	r->change_pct = r->mean[0] != 0 ? 100.0 * r->delta / fabs(r->mean[0]) : NAN;
	r->p = mw_welch_p(r->mean[0], r->sd[0], r->n[0], r->mean[1], r->sd[1], r->n[1], &r->t,
			  &r->df);
	mw_compare_judge(r, r->change_pct, r->delta, r->p, o);
	if (r->verdict == MW_CMP_INCONCLUSIVE) {
		r->runs_needed = mw_compare_runs_needed(r->delta, r->sd[0], r->sd[1], o->alpha,
							o->power);
		char runs[96];
		if (r->runs_needed > 0)
			snprintf(runs, sizeof(runs), "%ld runs per side would resolve it",
				 r->runs_needed);
		else
			snprintf(runs, sizeof(runs), "more than %d runs per side would be needed",
				 MW_COMPARE_MAX_RUNS);
		snprintf(r->reason, sizeof(r->reason), "%+.1f %% but p = %.3g >= %g with %zu and "
			 "%zu runs: %s (power %g at the observed sd; memwall run --runs N on both)",
			 r->change_pct, r->p, o->alpha, r->n[0], r->n[1], runs, o->power);
	}
}

bool mw_compare_required(const struct mw_compare_opts *o, const char *name)
{
	for (size_t i = 0; i < o->n_require; i++)
		if (!strcmp(o->require[i], name))
			return true;
	return false;
}

static void compare_metric(const json_t *const doc[2], const struct mw_metric *met,
			   const struct mw_compare_opts *o, struct mw_metric_cmp *r)
{
	static const char *const side[2] = { "BASE", "NEW" };
	memset(r, 0, sizeof(*r));
	r->metric = met;
	r->required = mw_compare_required(o, met->name);
	r->delta = r->change_pct = r->t = r->df = r->p = NAN;
	r->median[0] = r->median[1] = r->median_change_pct = r->u = r->p_u = NAN;
	r->tolerance_pct = mw_compare_tolerance(doc[1], met->name, o);
	char why[2][480];
	for (int s = 0; s < 2; s++) {
		const json_t *m = json_object_get(json_object_get(json_object_get(doc[s], "summary"),
								  "metrics"), met->name);
		r->mean[s] = r->sd[s] = NAN;
		mw_compare_side_problem(doc[s], m, met->name, 2, why[s], sizeof(why[s]));
		if (json_is_true(json_object_get(m, "measured"))) {
			r->n[s] = (size_t)json_integer_value(json_object_get(m, "n"));
			r->mean[s] = num_or_nan(m, "mean");
			r->sd[s] = num_or_nan(m, "sd");
		}
	}
	if (!why[0][0] && !why[1][0]) {
		test_metric(r, o);
		return;
	}
	r->verdict = MW_CMP_NOT_COMPARABLE;
	size_t k = 0;
	if (!strcmp(why[0], why[1])) {
		snprintf(r->reason, sizeof(r->reason), "BASE and NEW: %s", why[0]);
		return;
	}
	for (int s = 0; s < 2; s++)
		if (why[s][0] && k < sizeof(r->reason))
			k += (size_t)snprintf(r->reason + k, sizeof(r->reason) - k, "%s%s: %s",
					      k ? "; " : "", side[s], why[s]);
}

/* Exit 3's reason: the required metrics that were not compared, by name; when each of them is
 * a DRAM figure neither record measured (a machine without DRAM counters: every VM), the flag
 * that gates on what such a machine does measure. */
static void not_comparable_reason(struct mw_comparison *c, size_t req_nc)
{
	size_t k = (size_t)snprintf(c->exit_reason, sizeof(c->exit_reason), "%zu required metric%s "
				    "not comparable (", req_nc, req_nc == 1 ? "" : "s");
	bool dram_unmeasured = true, first = true;
	for (size_t i = 0; i < c->n; i++) {
		const struct mw_metric_cmp *m = &c->m[i];
		if (!m->required || m->verdict != MW_CMP_NOT_COMPARABLE)
			continue;
		dram_unmeasured = dram_unmeasured && !strncmp(m->metric->name, "dram_", 5) &&
				  m->n[0] == 0 && m->n[1] == 0;
		if (k < sizeof(c->exit_reason))
			k += (size_t)snprintf(c->exit_reason + k, sizeof(c->exit_reason) - k, "%s%s",
					      first ? "" : ", ", m->metric->name);
		first = false;
	}
	if (k < sizeof(c->exit_reason))
		snprintf(c->exit_reason + k, sizeof(c->exit_reason) - k, ")%s", dram_unmeasured
			 ? ": neither record measured DRAM (see its row); on a "
			   "machine without DRAM counters, --require tok_per_s gates on tok/s alone"
			 : "");
}

/* The worst outcome decides the exit code: a regression is a finding, a required metric that
 * could not be compared or resolved is a gap in the evidence; either fails a CI job. */
void mw_compare_decide(struct mw_comparison *c)
{
	size_t req_nc = 0, req_inc = 0;
	for (size_t i = 0; i < c->n; i++) {
		c->count[c->m[i].verdict]++;
		req_nc += c->m[i].required && c->m[i].verdict == MW_CMP_NOT_COMPARABLE;
		req_inc += c->m[i].required && c->m[i].verdict == MW_CMP_INCONCLUSIVE;
	}
	if (!c->compared && c->refused[0]) {
		c->exit_code = MW_COMPARE_REFUSED;
		snprintf(c->exit_reason, sizeof(c->exit_reason), "not comparable: %s", c->refused);
	} else if (!c->compared) {
		c->exit_code = MW_COMPARE_REFUSED;
		/* --force never excuses counters.dram.layer: say so whether or not it was given,
		 * never "--force compares anyway" beside a note that says it does not. */
		snprintf(c->exit_reason, sizeof(c->exit_reason), "%zu setting%s: refused %s",
			 c->n_diffs, c->n_diffs == 1 ? " differs" : "s differ",
			 c->layers_differ ? "(counters.dram.layer differs: --force does not compare "
					    "a SIMULATED record with one that is not)"
					  : "(--force compares anyway)");
	} else if (c->count[MW_CMP_REGRESSION]) {
		c->exit_code = MW_COMPARE_REGRESSION;
		snprintf(c->exit_reason, sizeof(c->exit_reason), "%zu metric%s regressed",
			 c->count[MW_CMP_REGRESSION],
			 c->count[MW_CMP_REGRESSION] == 1 ? "" : "s");
	} else if (req_nc) {
		c->exit_code = MW_COMPARE_NOT_COMPARABLE;
		not_comparable_reason(c, req_nc);
	} else if (req_inc) {
		c->exit_code = MW_COMPARE_INCONCLUSIVE;
		snprintf(c->exit_reason, sizeof(c->exit_reason), "%zu required metric%s "
			 "inconclusive: more runs needed", req_inc, req_inc == 1 ? "" : "s");
	} else {
		c->exit_code = MW_COMPARE_PASS;
		snprintf(c->exit_reason, sizeof(c->exit_reason), "no regression; every required "
			 "metric compared");
	}
}

void mw_compare(const json_t *base, const json_t *new, const struct mw_compare_opts *o,
		struct mw_comparison *c)
{
	const json_t *doc[2] = { base, new };
	memset(c, 0, sizeof(*c));
	c->opts = *o;
	bool layers_differ = compare_settings(base, new, c);
	c->layers_differ = layers_differ;
	for (int s = 0; s < 2; s++) {
		struct mw_provenance p;
		mw_provenance_of(doc[s], &p);
		c->source[s] = p.source;
		mw_provenance_tag(&p, c->source_tag[s], sizeof(c->source_tag[s]));
	}
	c->compared = c->n_diffs == 0 || (o->force && !layers_differ);
	size_t nm;
	const struct mw_metric *met = mw_metrics(&nm);
	for (size_t i = 0; c->compared && i < nm; i++) {
		const json_t *a = json_object_get(json_object_get(json_object_get(base, "summary"),
								  "metrics"), met[i].name);
		const json_t *b = json_object_get(json_object_get(json_object_get(new, "summary"),
								  "metrics"), met[i].name);
		if (!a && !b && !mw_compare_required(o, met[i].name))
			continue;
		compare_metric(doc, &met[i], o, &c->m[c->n++]);
	}
	mw_compare_decide(c);
	/* The fixed buffers above may have cut a record's text inside a UTF-8 sequence: never
	 * hand half a character to the JSON and XML writers (issue 28). */
	for (size_t i = 0; i < c->n_diffs; i++) {
		mw_utf8_trim(c->diffs[i].field);
		mw_utf8_trim(c->diffs[i].base);
		mw_utf8_trim(c->diffs[i].new);
		mw_utf8_trim(c->diffs[i].note);
	}
	for (size_t i = 0; i < c->n; i++)
		mw_utf8_trim(c->m[i].reason);
	mw_utf8_trim(c->exit_reason);
	mw_utf8_trim(c->source_tag[0]);
	mw_utf8_trim(c->source_tag[1]);
}
