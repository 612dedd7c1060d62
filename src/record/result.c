/* src/record/result.c: deriving and validating result records (reading and writing them:
 * result_file.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "differential.h"
#include "metrics.h"
#include "embedded.h"
#include "file.h"
#include "jschema.h"
#include "layer_check.h"
#include "provenance.h"
#include "result.h"
#include "stats.h"

#define MB 1e6          /* MB = 10^6 bytes */
#define MIB 1048576.0   /* MiB = 2^20 bytes */

json_t *mw_result_schema(void)
{
	const struct mw_embedded *e = mw_embedded_find("result.schema.json");
	return e ? json_loadb(e->data, e->len, 0, NULL) : NULL;
}

/* ---- deriving ------------------------------------------------------------------------------ */

struct dctx {
	const char *source;
	struct mw_error *err;
	bool v1; /* a memwall-result/1 record: checked on the figures it carries */
};

static int inconsistent(struct dctx *c, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int inconsistent(struct dctx *c, const char *field, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return mw_error_set(c->err, MW_RESULT_INCONSISTENT, c->source, field, "%s", text);
}

/* A number or NaN for null/absent. */
static double num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Sum of an array of numbers; NaN when the array is absent or null. */
static int array_sum(struct dctx *c, const json_t *arr, size_t want, const char *field,
		     double *sum)
{
	size_t i;
	json_t *v;
	*sum = NAN;
	if (!json_is_array(arr))
		return 0;
	if (json_array_size(arr) != want)
		return inconsistent(c, field, "has %zu entries but the window counts %zu tokens",
				    json_array_size(arr), want);
	*sum = 0;
	json_array_foreach(arr, i, v)
		*sum += json_number_value(v);
	return 0;
}

/* Checks a window's total against the sum of its per-token values. Counters are integers,
 * so they must agree exactly; energy is a real and may differ by rounding. */
static int check_total(struct dctx *c, const json_t *window, const char *key, double sum,
		       const char *field)
{
	double total = num(window, key);
	if (isnan(sum) != isnan(total))
		return inconsistent(c, field, "%s is %s in the window but %s per token", key,
				    isnan(total) ? "null" : "present", isnan(sum) ? "null" : "present");
	if (!isnan(sum) && fabs(total - sum) > 1e-9 * fabs(total) + 1e-9)
		return inconsistent(c, field, "window total %.17g is not the sum of its tokens %.17g",
				    total, sum);
	return 0;
}

/* Checks that the per-instance split adds up to the window's figures, where both are known. */
static int check_instances(struct dctx *c, const json_t *dec, size_t idx)
{
	static const char *const inst_key[3] = { "read_bytes", "write_bytes", "total_bytes" };
	static const char *const win_key[3] = { "dram_read_bytes", "dram_write_bytes",
						"dram_total_bytes" };
	const json_t *split = json_object_get(dec, "dram_instances"), *e;
	char f[160];
	size_t i;
	for (int k = 0; k < 3 && json_array_size(split); k++) {
		double sum = 0, want = num(dec, win_key[k]);
		json_array_foreach(split, i, e)
			sum += num(e, inst_key[k]);
		if (isnan(want) || isnan(sum)) /* not measured, or a record before totals */
			continue;
		if (sum != want) {
			snprintf(f, sizeof(f), "runs[%zu].decode.dram_instances", idx);
			return inconsistent(c, f, "instances sum to %.0f %s, the window says %.0f",
					    sum, inst_key[k], want);
		}
	}
	return 0;
}

/* Where a run's per-pass arrays are: runs[].tokens, one entry per token, when each pass of
 * the engine decodes one token; runs[].steps, one entry per pass, when a pass yields several
 * (a batch, a speculative verification: results/README.md, Steps). */
static const json_t *per_pass(const json_t *run)
{
	const json_t *steps = json_object_get(run, "steps");
	return steps ? steps : json_object_get(run, "tokens");
}

/* runs[].steps: the passes' token counts add up to the window's tokens. */
static int check_steps(struct dctx *c, const json_t *run, size_t idx, size_t n, size_t *n_pass)
{
	const json_t *dec = json_object_get(run, "decode"), *steps = json_object_get(run, "steps");
	char f[160];
	double sum;
	*n_pass = n;
	if (!steps)
		return 0;
	*n_pass = (size_t)json_integer_value(json_object_get(dec, "steps"));
	snprintf(f, sizeof(f), "runs[%zu].steps.tokens", idx);
	int rc = array_sum(c, json_object_get(steps, "tokens"), *n_pass, f, &sum);
	if (!rc && (isnan(sum) || sum != (double)n))
		rc = inconsistent(c, f, "the steps yield %.0f tokens, the window counts %zu", sum,
				  n);
	return rc;
}

/* Per-token (or per-step) arrays against the window totals they must add up to. */
static int check_tokens(struct dctx *c, const json_t *run, size_t idx, size_t n, double *sums)
{
	static const char *const per_token[] = { "latency_ns", "engine_bytes", "dram_read_bytes",
						 "dram_write_bytes", "dram_total_bytes", "energy_j" };
	static const char *const window_key[] = { "ns", "engine_bytes", "dram_read_bytes",
						  "dram_write_bytes", "dram_total_bytes", "energy_j" };
	const json_t *dec = json_object_get(run, "decode"), *tok = json_object_get(run, "tokens");
	const json_t *arr = per_pass(run);
	const char *where = arr == tok ? "tokens" : "steps";
	char f[160];
	size_t n_pass;
	int rc;
	if ((rc = check_steps(c, run, idx, n, &n_pass)))
		return rc;
	for (size_t i = 0; i < sizeof(per_token) / sizeof(per_token[0]); i++) {
		snprintf(f, sizeof(f), "runs[%zu].%s.%s", idx, where, per_token[i]);
		if ((rc = array_sum(c, json_object_get(arr, per_token[i]), n_pass, f, &sums[i])))
			return rc;
		snprintf(f, sizeof(f), "runs[%zu].decode.%s", idx, window_key[i]);
		if ((rc = check_total(c, dec, window_key[i], sums[i], f)))
			return rc;
	}
	if (json_array_size(json_object_get(tok, "ids")) != n) {
		snprintf(f, sizeof(f), "runs[%zu].tokens.ids", idx);
		return inconsistent(c, f, "has %zu entries but the window counts %zu tokens",
				    json_array_size(json_object_get(tok, "ids")), n);
	}
	return check_instances(c, dec, idx);
}

/* Net DRAM bytes per token of one figure: the decode window's count minus what the idle
 * machine moved in the same time (the idle baseline, measured just before the run). */
static double net_per_token(const json_t *run, const char *key, double *idle_rate)
{
	const json_t *idle = json_object_get(run, "idle"), *dec = json_object_get(run, "decode");
	double idle_s = num(idle, "window_ns") * 1e-9, secs = num(dec, "ns") * 1e-9;
	double nt = (double)json_integer_value(json_object_get(dec, "tokens"));
	*idle_rate = num(idle, key) / idle_s;
	double net = (num(dec, key) - *idle_rate * secs) / nt;
	/* Below zero the baseline is noise larger than the traffic (a window of a few
	 * microseconds with idle_baseline_ms 0): not a measurement (issue 28). */
	return net < 0 ? NAN : net;
}

/* Speculation (runs[].steps with drafted and accepted): the share of draft tokens the model
 * accepted, the tokens a pass yields, and the engine bytes per accepted token: every token a
 * verification yields is accepted (its drafted prefix and the model's own next token), so
 * that is the decode window's engine bytes over its tokens, named for what it compares with. */
static void spec_figures(const json_t *run, json_t *fig, double eng_per_token)
{
	const json_t *steps = json_object_get(run, "steps");
	const json_t *dr = json_object_get(steps, "drafted"), *ac = json_object_get(steps, "accepted");
	double drafted = 0, accepted = 0, passes = (double)json_array_size(dr);
	size_t i;
	json_t *x;
	if (!json_is_array(dr) || !json_is_array(ac))
		return;
	json_array_foreach(dr, i, x)
		drafted += json_number_value(x);
	json_array_foreach(ac, i, x)
		accepted += json_number_value(x);
	double nt = (double)json_integer_value(json_object_get(json_object_get(run, "decode"),
								"tokens"));
	json_object_set_new(fig, "spec_acceptance", mw_json_num(drafted > 0 ? accepted / drafted
									  : NAN));
	json_object_set_new(fig, "spec_tokens_per_pass", mw_json_num(passes > 0 ? nt / passes
									       : NAN));
	json_object_set_new(fig, "engine_bytes_per_accepted_token", mw_json_num(eng_per_token));
}

static int derive_run(struct dctx *c, const json_t *doc, json_t *run, size_t idx)
{
	const json_t *pre = json_object_get(run, "prefill");
	const json_t *dec = json_object_get(run, "decode");
	const json_t *lat = json_object_get(per_pass(run), "latency_ns");
	json_t *fig = json_object();
	double *l = NULL, sums[6];
	int rc = 0;
	size_t i, n = (size_t)json_integer_value(json_object_get(dec, "tokens"));
	size_t n_metrics;
	const struct mw_metric *metrics = mw_metrics(&n_metrics);

	if (!fig)
		return mw_error_set(c->err, -ENOMEM, c->source, "runs", "out of memory deriving a run's figures");
	if ((rc = check_tokens(c, run, idx, n, sums)))
		goto out;
	double secs = num(dec, "ns") * 1e-9, nt = (double)n, idle_r, idle_t;
	double rd = net_per_token(run, "dram_read_bytes", &idle_r);
	double wr = net_per_token(run, "dram_write_bytes", &(double){ 0 });
	double tot = net_per_token(run, "dram_total_bytes", &idle_t);
	double basis = !strcmp(mw_dram_basis(doc), "total") ? tot : rd;
	double cal = mw_dram_calibration_factor(doc);
	double eng = num(dec, "engine_bytes") / nt;
	size_t n_lat = json_array_size(lat); /* n, or the passes with runs[].steps */
	l = malloc((n_lat ? n_lat : 1) * sizeof(*l));
	if (!l) {
		rc = mw_error_set(c->err, -ENOMEM, c->source, "runs", "out of memory deriving per-token figures (%zu tokens)", n);
		goto out;
	}
	for (i = 0; i < n_lat; i++)
		l[i] = json_number_value(json_array_get(lat, i));
	static const double pcts[4] = { 50, 90, 99, 99.9 };
	double pv[4];
	mw_percentiles(l, n_lat, pcts, 4, pv);
	const double values[] = {
		nt / secs,
		num(pre, "tokens") / (num(pre, "ns") * 1e-9),
		basis / MB,
		basis / MB * cal,
		rd,
		rd / MB,
		rd / MIB,
		wr,
		wr / MB,
		tot,
		tot / MB,
		idle_r,
		idle_t,
		eng,
		eng / MB,
		eng / MIB,
		num(dec, "energy_j") / nt,
		n ? sums[0] / nt : NAN,
		pv[0],
		pv[1],
		pv[2],
		pv[3],
	};
	_Static_assert(sizeof(values) / sizeof(values[0]) == MW_N_METRICS, "one value per metric");
	for (i = 0; i < n_metrics; i++)
		json_object_set_new(fig, metrics[i].name, n ? mw_json_num(values[i]) : json_null());
	spec_figures(run, fig, eng);
	json_object_set(run, "figures", fig);
out:
	free(l);
	json_decref(fig);
	return rc;
}

static bool run_counts(const json_t *run)
{
	return json_is_true(json_object_get(run, "complete")) &&
	       !json_is_true(json_object_get(run, "warmup"));
}

size_t mw_result_samples(const json_t *doc, const char *name, double *v, size_t cap)
{
	const json_t *run;
	size_t i, n = 0;
	/* An external run's summary is the differential method's, over its repetitions. */
	if (json_object_get(doc, "external"))
		return mw_differential_samples(doc, name, v, cap);
	json_array_foreach(json_object_get(doc, "runs"), i, run) {
		const json_t *x = json_object_get(json_object_get(run, "figures"), name);
		if (run_counts(run) && json_is_number(x) && n++ < cap)
			v[n - 1] = json_number_value(x);
	}
	return n;
}

static json_t *stats_json(const struct mw_stats *s, const char *unit)
{
	return json_pack("{s:s, s:b, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "unit", unit,
			 "measured", 1, "n", (json_int_t)s->n, "mean", mw_json_num(s->mean), "sd",
			 mw_json_num(s->sd), "cv_pct", mw_json_num(s->cv_pct), "median",
			 mw_json_num(s->median), "min", mw_json_num(s->min), "max",
			 mw_json_num(s->max), "ci95_low", mw_json_num(s->ci95_low), "ci95_high",
			 mw_json_num(s->ci95_high));
}

static int derive_summary(json_t *doc)
{
	const json_t *runs = json_object_get(doc, "runs");
	json_t *sum = json_object(), *m = json_object(), *run;
	size_t i, nruns = json_array_size(runs), measured = 0, warm = 0, incomplete = 0, tokens = 0;
	double *v = calloc(nruns ? nruns : 1, sizeof(double));
	double *pool = NULL;
	size_t npool = 0, cap = 0;
	int rc = -ENOMEM;
	if (!sum || !m || !v)
		goto out;
	json_array_foreach(runs, i, run) {
		warm += json_is_true(json_object_get(run, "warmup"));
		incomplete += !json_is_true(json_object_get(run, "complete"));
		if (!run_counts(run))
			continue;
		measured++;
		const json_t *lat = json_object_get(per_pass(run), "latency_ns");
		tokens += json_array_size(json_object_get(json_object_get(run, "tokens"), "ids"));
		if (npool + json_array_size(lat) > cap) {
			cap = 2 * (npool + json_array_size(lat));
			double *np = realloc(pool, cap * sizeof(double));
			if (!np)
				goto out;
			pool = np;
		}
		size_t k;
		json_t *x;
		json_array_foreach(lat, k, x)
			pool[npool++] = json_number_value(x);
	}
	json_object_set_new(sum, "runs_measured", json_integer((json_int_t)measured));
	json_object_set_new(sum, "runs_warmup", json_integer((json_int_t)warm));
	json_object_set_new(sum, "runs_incomplete", json_integer((json_int_t)incomplete));
	json_object_set_new(sum, "tokens_measured", json_integer((json_int_t)tokens));
	size_t n_metrics;
	const struct mw_metric *metrics = mw_metrics(&n_metrics);
	char why_buf[1024];
	for (size_t k = 0; k < n_metrics; k++) {
		size_t n = 0;
		json_array_foreach(runs, i, run) {
			const json_t *x = json_object_get(json_object_get(run, "figures"),
							  metrics[k].name);
			if (run_counts(run) && json_is_number(x))
				v[n++] = json_number_value(x);
		}
		if (n) {
			struct mw_stats s;
			mw_stats_compute(v, n, &s);
			json_t *st = stats_json(&s, metrics[k].unit);
			if (st)
				mw_stats_mark_ci(st, &s);
			json_object_set_new(m, metrics[k].name, st);
		} else {
			const char *why = !measured ? "no complete measured run"
				: mw_metric_reason(doc, metrics[k].needs, why_buf, sizeof(why_buf));
			json_object_set_new(m, metrics[k].name,
					    json_pack("{s:s, s:b, s:s}", "unit", metrics[k].unit,
						      "measured", 0, "reason", why));
		}
	}
	json_object_set(sum, "metrics", m);
	static const double pcts[4] = { 50, 90, 99, 99.9 };
	double pv[4];
	mw_percentiles(pool, npool, pcts, 4, pv);
	json_object_set_new(
		sum, "latency_pooled_ns",
		json_pack("{s:i, s:o, s:o, s:o, s:o, s:s}", "n", (json_int_t)npool, "p50",
			  mw_json_num(pv[0]), "p90", mw_json_num(pv[1]), "p99", mw_json_num(pv[2]),
			  "p99_9", mw_json_num(pv[3]), "method",
			  "Hyndman & Fan (1996) definition 7 (linear interpolation, as R and NumPy), "
			  "over every decode token of every measured run"));
	json_object_set(doc, "summary", sum);
	rc = 0;
out:
	free(v);
	free(pool);
	json_decref(m);
	json_decref(sum);
	return rc;
}

/* One criterion. required < 0 leaves "required" out (a record derived before it existed). */
static json_t *criterion(const char *name, json_t *limit, json_t *value, const char *status,
			 const char *reason, int required)
{
	json_t *c = json_pack("{s:s, s:o, s:o, s:s, s:s?}", "criterion", name, "limit", limit,
			      "value", value, "status", status, "reason", reason);
	if (c && required >= 0)
		json_object_set_new(c, "required", json_boolean(required));
	return c;
}

/* What decides whether a criterion's missing figure is excused. */
struct acc_ctx {
	bool legacy;         /* the record was derived before "required": keep its rules */
	bool dram_optional;  /* DRAM was not opened and the protocol did not require it */
};

/* A limit on a CV: pass when cv <= limit; not-measured without at least two measured runs or
 * without the counter. A missing counter excuses the criterion (required false) only when
 * the protocol made that counter optional and it was not available; too few runs never do. */
static json_t *cv_criterion(const struct acc_ctx *a, const char *name, double limit,
			    const json_t *metric, bool counter_optional)
{
	int req = a->legacy ? -1 : 1;
	if (!json_is_true(json_object_get(metric, "measured")))
		return criterion(name, json_real(limit), json_null(), "not-measured",
				 json_string_value(json_object_get(metric, "reason")),
				 a->legacy ? -1 : !counter_optional);
	double cv = num(metric, "cv_pct");
	if (isnan(cv))
		return criterion(name, json_real(limit), json_null(), "not-measured",
				 "a CV needs at least 2 measured runs", req);
	return criterion(name, json_real(limit), json_real(cv), cv <= limit ? "pass" : "fail",
			 NULL, req);
}

/* The context of doc's acceptance: whether its recorded block predates "required" (its
 * criteria lack the key; validate re-derives such a record under its own rules), and
 * whether DRAM was optional and absent (counters.dram.measured false, and the protocol's
 * counters.dram not "required"; absent means "optional", as the protocol loader reads it). */
static struct acc_ctx acceptance_ctx(const json_t *doc)
{
	const json_t *crit = json_object_get(json_object_get(doc, "acceptance"), "criteria");
	const json_t *need = json_object_get(
		json_object_get(json_object_get(json_object_get(doc, "protocol"), "document"),
				"counters"),
		"dram");
	const json_t *dram = json_object_get(json_object_get(doc, "counters"), "dram");
	struct acc_ctx a = {
		.legacy = json_array_size(crit) > 0 &&
			  !json_object_get(json_array_get(crit, 0), "required"),
		.dram_optional = !json_is_true(json_object_get(dram, "measured")) &&
				 !(json_is_string(need) &&
				   !strcmp(json_string_value(need), "required")),
	};
	return a;
}

/* Overall: fail when a criterion failed; not-measured when a required figure was not
 * measured; pass otherwise (a criterion excused as optional does not change it). Records
 * derived before "required" keep their rule: any not-measured criterion made it
 * not-measured. */
static const char *acceptance_overall(const json_t *list, bool legacy)
{
	const char *overall = "pass";
	const json_t *c;
	size_t i;
	json_array_foreach(list, i, c) {
		const char *s = json_string_value(json_object_get(c, "status"));
		if (!strcmp(s, "fail"))
			return "fail";
		if (!strcmp(s, "not-measured") &&
		    (legacy || json_is_true(json_object_get(c, "required"))))
			overall = "not-measured";
	}
	return overall;
}

static int derive_acceptance(json_t *doc)
{
	const json_t *acc = json_object_get(
		json_object_get(json_object_get(doc, "protocol"), "document"), "acceptance");
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	const json_t *runs = json_object_get(doc, "runs");
	const json_t *drift = json_object_get(doc, "drift");
	struct acc_ctx a = acceptance_ctx(doc);
	int req = a.legacy ? -1 : 1;
	json_t *list = json_array(), *run;
	size_t i;
	if (!list)
		return -ENOMEM; /* the caller says what it was doing */
	/* MB/token as defined on what was measured (records before it: the read figure). */
	const char *mb_metric = json_object_get(m, "dram_MB_per_token") ? "dram_MB_per_token"
									: "dram_read_MB_per_token";
	if (json_object_get(acc, "max_cv_mb_per_token_pct"))
		json_array_append_new(list, cv_criterion(&a, "max_cv_mb_per_token_pct",
							 num(acc, "max_cv_mb_per_token_pct"),
							 json_object_get(m, mb_metric),
							 a.dram_optional));
	if (json_object_get(acc, "max_cv_tok_s_pct"))
		json_array_append_new(list, cv_criterion(&a, "max_cv_tok_s_pct",
							 num(acc, "max_cv_tok_s_pct"),
							 json_object_get(m, "tok_per_s"), false));
	if (json_object_get(acc, "min_tokens")) {
		json_int_t lim = json_integer_value(json_object_get(acc, "min_tokens")), least = -1;
		json_array_foreach(runs, i, run) {
			json_int_t t = json_integer_value(
				json_object_get(json_object_get(run, "decode"), "tokens"));
			if (run_counts(run) && (least < 0 || t < least))
				least = t;
		}
		if (least < 0)
			least = (json_int_t)mw_differential_least_tokens(doc);
		json_array_append_new(list, least < 0
			? criterion("min_tokens", json_integer(lim), json_null(), "not-measured",
				    "no complete measured run", req)
			: criterion("min_tokens", json_integer(lim), json_integer(least),
				    least >= lim ? "pass" : "fail", NULL, req));
	}
	/* Two criteria every protocol has: the record is complete, and the machine's bandwidth did
	 * not drift between the first and the last run. The drift probe is memwall's own guard,
	 * not a figure a protocol's acceptance names: when it could not run (turned off by
	 * drift.probe_ms 0, an external engine) the criterion says so and is not required. */
	bool complete = json_is_true(json_object_get(doc, "complete"));
	json_array_append_new(list, criterion("complete", json_true(), json_boolean(complete),
					      complete ? "pass" : "fail",
					      complete ? NULL
						       : json_string_value(json_object_get(
								 doc, "incomplete_reason")),
					      req));
	if (json_is_true(json_object_get(drift, "measured")))
		json_array_append_new(list, criterion("bandwidth_drift_pct",
						      json_real(num(drift, "tolerance_pct")),
						      mw_json_num(num(drift, "change_pct")),
						      json_is_true(json_object_get(drift, "drifted"))
							      ? "fail" : "pass", NULL, req));
	else
		json_array_append_new(list, criterion("bandwidth_drift_pct",
						      mw_json_num(num(drift, "tolerance_pct")),
						      json_null(), "not-measured",
						      json_string_value(json_object_get(drift, "reason")),
						      a.legacy ? -1 : 0));
	json_object_set_new(doc, "acceptance",
			    json_pack("{s:s, s:o}", "status", acceptance_overall(list, a.legacy),
				      "criteria", list));
	return 0;
}

static void derive_drift(json_t *doc)
{
	json_t *d = json_object_get(doc, "drift");
	if (!json_is_object(d))
		return;
	double a = num(d, "before_gbps"), b = num(d, "after_gbps"), tol = num(d, "tolerance_pct");
	bool measured = json_is_true(json_object_get(d, "measured")) && a > 0 && b > 0;
	/* Change relative to the first probe: what the machine could do when the runs began. */
	double change = measured ? 100.0 * (b - a) / a : NAN;
	json_object_set_new(d, "change_pct", mw_json_num(change));
	json_object_set_new(d, "drifted", measured ? json_boolean(fabs(change) > tol) : json_null());
}

int mw_result_derive(json_t *doc, const char *source, struct mw_error *err)
{
	struct dctx c = { .source = source, .err = err };
	json_t *runs = json_object_get(doc, "runs"), *run;
	size_t i;
	int rc;
	json_array_foreach(runs, i, run)
		if ((rc = derive_run(&c, doc, run, i)))
			return rc;
	derive_drift(doc);
	if ((rc = derive_summary(doc)))
		return mw_error_set(err, rc, source, "summary", "out of memory deriving the summary");
	/* External engines: figures by the differential method from the raw processes. */
	if (json_object_get(doc, "external") && (rc = mw_differential_derive(doc, source, err)))
		return rc;
	if ((rc = derive_acceptance(doc)))
		return mw_error_set(err, rc, source, "acceptance", "out of memory deriving the "
				    "acceptance verdict");
	return 0;
}

/* ---- validating ---------------------------------------------------------------------------- */

/* Keys a later memwall derives that records written before them lack: a record is checked
 * on the figures it carries, as a /1 record is. */
static bool added_later(const char *key)
{
	static const char *const keys[] = { "ci95_clamped", "ci95_note", "roofline",
					    "dram_MB_per_token_calibrated" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

/* Compares a recomputed tree with the recorded one; the first difference fills err. */
static int same(struct dctx *c, const json_t *want, const json_t *got, const char *path)
{
	char sub[512];
	if (json_is_number(want) && json_is_number(got)) {
		double a = json_number_value(want), b = json_number_value(got);
		/* Records are written with 17 significant digits, so a figure read back equals the
		 * one computed bit for bit; the slack only forgives other writers' last digit. */
		if (fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)) + 1e-300)
			return 0;
		return inconsistent(c, path, "recorded %.10g, but the raw data give %.10g", b, a);
	}
	if (json_is_object(want)) {
		const char *k;
		json_t *v;
		if (!json_is_object(got))
			return inconsistent(c, path, "should be an object as recomputed");
		json_object_foreach((json_t *)(uintptr_t)want, k, v) {
			snprintf(sub, sizeof(sub), "%s.%s", path, k);
			const json_t *g = json_object_get(got, k);
			if (!g && (c->v1 || added_later(k)))
				continue; /* a figure added after the record was derived */
			if (!g)
				return inconsistent(c, sub, "is missing; the raw data give a value");
			int rc = same(c, v, g, sub);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (json_is_array(want)) {
		size_t i;
		json_t *v;
		if (!json_is_array(got) || json_array_size(got) != json_array_size(want))
			return inconsistent(c, path, "has a different number of entries than recomputed");
		json_array_foreach(want, i, v) {
			snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
			int rc = same(c, v, json_array_get(got, i), sub);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (json_equal((json_t *)(uintptr_t)want, (json_t *)(uintptr_t)got))
		return 0;
	char *a = json_dumps(want, JSON_ENCODE_ANY), *b = json_dumps(got, JSON_ENCODE_ANY);
	int rc = inconsistent(c, path, "recorded %s, but the raw data give %s", b ? b : "?",
			      a ? a : "?");
	free(a);
	free(b);
	return rc;
}

/* Imported reference records have no raw data: check what can be checked, that each CV is
 * sd / mean to the precision the source printed. Where the source's SD is a population SD
 * (sd_population, as AIOS's np.std), the CV is the source's population CV and sd the sample SD
 * derived from it: sd_population x sqrt(n / (n - 1)). */
static int check_reference(struct dctx *c, const json_t *doc)
{
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	const char *k;
	json_t *v;
	char f[256];
	json_object_foreach((json_t *)(uintptr_t)m, k, v) {
		double mean = num(v, "mean"), sd = num(v, "sd"), cv = num(v, "cv_pct");
		double pop = num(v, "sd_population"), n = num(v, "n");
		if (!isnan(pop) && !isnan(sd)) {
			snprintf(f, sizeof(f), "summary.metrics.%s.sd", k);
			if (!(n > 1) || fabs(pop * sqrt(n / (n - 1)) - sd) > 1e-4 * sd)
				return inconsistent(c, f, "recorded %g, but the sample SD of "
						    "sd_population %g over n = %g runs is %g", sd, pop,
						    n, n > 1 ? pop * sqrt(n / (n - 1)) : NAN);
			sd = pop;
		}
		if (isnan(mean) || isnan(sd) || isnan(cv))
			continue;
		snprintf(f, sizeof(f), "summary.metrics.%s.cv_pct", k);
		/* Published figures carry 2 significant digits or so: allow 10% of the CV. */
		if (fabs(100.0 * sd / mean - cv) > 0.1 * cv + 1e-12)
			return inconsistent(c, f, "recorded %g %%, but sd / mean = %g %%", cv,
					    100.0 * sd / mean);
	}
	return 0;
}

/* ---- the record against itself: token ids and the protocol's document ------------------- */

/* Who counted the DRAM figures, checked as far as a record can show it: a simulated record
 * names the script it replayed (counters.dram.sim_script_sha256), so a layer edited from "sim"
 * to a hardware layer is caught; a record that names what it opened (counters.dram.opened)
 * opened exactly its instances, each event with a PMU type and a config. Records made before
 * `opened` existed are checked on the first rule only. A hardware layer must also agree with
 * the rest of the record: the machine and the backend's instance names (layer_check.h). */
static int check_layer(struct dctx *c, const json_t *doc)
{
	const json_t *dram = json_object_get(json_object_get(doc, "counters"), "dram");
	const json_t *opened = json_object_get(dram, "opened"), *o, *ev;
	const char *layer = json_string_value(json_object_get(dram, "layer"));
	bool sim = layer && !strcmp(layer, "sim");
	size_t i, j;
	if (!json_is_true(json_object_get(dram, "measured")))
		return 0;
	if (json_object_get(dram, "sim_script_sha256") && !sim)
		return inconsistent(c, "counters.dram.layer", "is \"%s\", but the record names the "
				    "simulated PMU's script (counters.dram.sim_script_sha256): its "
				    "counts were simulated and the layer was edited", layer ? layer : "");
	char lf[64], lwhy[400];
	if (mw_layer_contradiction(doc, lf, sizeof(lf), lwhy, sizeof(lwhy)))
		return inconsistent(c, lf, "%s", lwhy);
	if (!opened)
		return 0;
	if (sim && !json_is_string(json_object_get(dram, "sim_script_sha256")))
		return inconsistent(c, "counters.dram.sim_script_sha256", "is missing: a simulated "
				    "record names the script it replayed");
	const json_t *inst = json_object_get(dram, "instances");
	if (json_array_size(opened) != json_array_size(inst))
		return inconsistent(c, "counters.dram.opened", "names %zu instances, "
				    "counters.dram.instances %zu: the record was edited",
				    json_array_size(opened), json_array_size(inst));
	json_array_foreach(opened, i, o) {
		char f[96];
		snprintf(f, sizeof(f), "counters.dram.opened[%zu].pmu", i);
		if (!json_equal(json_object_get(o, "pmu"), json_array_get(inst, i)))
			return inconsistent(c, f, "differs from counters.dram.instances[%zu]: the "
					    "record was edited", i);
		json_array_foreach(json_object_get(o, "events"), j, ev) {
			const char *cfg = json_string_value(json_object_get(ev, "config"));
			snprintf(f, sizeof(f), "counters.dram.opened[%zu].events[%zu]", i, j);
			if (!json_is_integer(json_object_get(ev, "type")) || !cfg ||
			    strncmp(cfg, "0x", 2) || !cfg[2] || strspn(cfg + 2,
			    "0123456789abcdef") != strlen(cfg + 2))
				return inconsistent(c, f, "needs a perf type (integer) and a config "
						    "(\"0x...\", lower-case hex)");
		}
	}
	return 0;
}

/* The multiplexing shares against their own times: each decode instance's running_share is
 * its time_running_ns / time_enabled_ns, and the window's dram_running_share the least of
 * them (results/README.md, Multiplexing). Records made before the share have none. */
static int check_shares(struct dctx *c, const json_t *doc)
{
	const json_t *run, *in;
	size_t i, k;
	char f[96];
	json_array_foreach(json_object_get(doc, "runs"), i, run) {
		const json_t *dec = json_object_get(run, "decode");
		double min = NAN, ws = num(dec, "dram_running_share");
		json_array_foreach(json_object_get(dec, "dram_instances"), k, in) {
			double sh = num(in, "running_share"), e = num(in, "time_enabled_ns");
			double r = num(in, "time_running_ns");
			if (isnan(sh))
				continue;
			snprintf(f, sizeof(f), "runs[%zu].decode.dram_instances[%zu].running_share", i,
				 k);
			if (!(e > 0) || fabs(sh - r / e) > 1e-9)
				return inconsistent(c, f, "is %g, but time_running_ns / time_enabled_ns "
						    "is %g / %g: the record was edited", sh, r, e);
			min = isnan(min) || sh < min ? sh : min;
		}
		snprintf(f, sizeof(f), "runs[%zu].decode.dram_running_share", i);
		if (!isnan(min) && !isnan(ws) && fabs(ws - min) > 1e-9)
			return inconsistent(c, f, "is %g, but its least counted instance ran %g of "
					    "the window: the record was edited", ws, min);
	}
	return 0;
}

/* Every token id a run recorded, and the document's prompt, inside the model's vocabulary
 * (model.shape.vocab_size, when the record has it). */
static int check_vocab(struct dctx *c, const json_t *doc)
{
	const json_t *vs = json_object_get(json_object_get(json_object_get(doc, "model"), "shape"),
					   "vocab_size");
	const json_t *prompt = json_object_get(
		json_object_get(json_object_get(doc, "protocol"), "document"), "prompt_tokens");
	const json_t *run, *id;
	size_t i, j;
	char f[96];
	if (!json_is_integer(vs))
		return 0;
	json_int_t n = json_integer_value(vs);
	json_array_foreach(prompt, j, id) {
		if (json_is_integer(id) && json_integer_value(id) >= n) {
			snprintf(f, sizeof(f), "protocol.document.prompt_tokens[%zu]", j);
			return inconsistent(c, f, "is %lld, outside the model's vocabulary of %lld "
					    "tokens (model.shape.vocab_size): the record was edited",
					    (long long)json_integer_value(id), (long long)n);
		}
	}
	json_array_foreach(json_object_get(doc, "runs"), i, run) {
		json_array_foreach(json_object_get(json_object_get(run, "tokens"), "ids"), j, id) {
			if (json_integer_value(id) < n)
				continue;
			snprintf(f, sizeof(f), "runs[%zu].tokens.ids[%zu]", i, j);
			return inconsistent(c, f, "is %lld, outside the model's vocabulary of %lld "
					    "tokens (model.shape.vocab_size): the record was edited",
					    (long long)json_integer_value(id), (long long)n);
		}
	}
	return 0;
}

/* A figure of the protocol as the run used it: the command line's override, else the
 * document's; -1 when neither is an integer. */
static json_int_t protocol_int(const json_t *doc, const char *key)
{
	const json_t *p = json_object_get(doc, "protocol");
	const json_t *v = json_object_get(json_object_get(p, "overrides"), key);
	if (!json_is_integer(v))
		v = json_object_get(json_object_get(p, "document"), key);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* protocol.sha256 hashes the protocol file, which the record does not hold: the copy in
 * protocol.document is checked against what the runs did instead. Each complete run decoded
 * decode_tokens tokens after a prefill of the prompt's; a complete record holds runs measured
 * runs and warmup_runs warm-ups (an interrupted one at most that many). */
static int check_document(struct dctx *c, const json_t *doc)
{
	const json_t *d = json_object_get(json_object_get(doc, "protocol"), "document");
	const json_t *prompt = json_object_get(d, "prompt_tokens"), *run;
	json_int_t decode = protocol_int(doc, "decode_tokens"), runs = protocol_int(doc, "runs");
	json_int_t warm = protocol_int(doc, "warmup_runs"), n_runs = 0, n_warm = 0;
	/* A batch decodes decode_tokens for each of its sequences, after a prefill of each. */
	/* The engine block says what ran (a record of variants: its first variant, which the
	 * runs at the top are). */
	const json_t *eb = json_object_get(json_object_get(doc, "engine"), "batch");
	json_int_t batch = json_is_integer(eb) ? json_integer_value(eb) : 1;
	if (decode >= 0)
		decode *= batch;
	bool complete = json_is_true(json_object_get(doc, "complete"));
	size_t i;
	char f[96];
	/* An external engine's runs are its program's (the external section), not these. */
	if (!json_is_object(d) || json_object_get(doc, "external"))
		return 0;
	json_array_foreach(json_object_get(doc, "runs"), i, run) {
		bool is_warm = json_is_true(json_object_get(run, "warmup"));
		n_warm += is_warm;
		n_runs += !is_warm;
		json_int_t dec = json_integer_value(json_object_get(json_object_get(run, "decode"),
								    "tokens"));
		json_int_t pre = json_integer_value(json_object_get(json_object_get(run, "prefill"),
								    "tokens"));
		if (decode >= 0 && json_is_true(json_object_get(run, "complete")) && dec != decode) {
			snprintf(f, sizeof(f), "runs[%zu].decode.tokens", i);
			return inconsistent(c, f, "is %lld, but the protocol's decode_tokens is %lld "
					    "(protocol.document, or protocol.overrides): the document or "
					    "the run was edited", (long long)dec, (long long)decode);
		}
		/* A run stopped by a signal may have stopped inside its prefill. */
		json_int_t n_prompt = (json_int_t)json_array_size(prompt) * batch;
		bool run_complete = json_is_true(json_object_get(run, "complete"));
		if (json_is_array(prompt) && (run_complete ? pre != n_prompt : pre > n_prompt)) {
			snprintf(f, sizeof(f), "runs[%zu].prefill.tokens", i);
			return inconsistent(c, f, "is %lld, but protocol.document.prompt_tokens holds "
					    "%zu (times the batch, %lld): the document or the run was "
					    "edited", (long long)pre, json_array_size(prompt),
					    (long long)batch);
		}
	}
	static const char *const what[2] = { "runs", "warmup_runs" };
	json_int_t want[2] = { runs, warm }, got[2] = { n_runs, n_warm };
	for (int k = 0; k < 2; k++) {
		if (want[k] < 0 || got[k] == want[k] || (!complete && got[k] < want[k]))
			continue;
		snprintf(f, sizeof(f), "protocol.document.%s", what[k]);
		return inconsistent(c, f, "is %lld, but the record holds %lld %s: the document or "
				    "the runs were edited", (long long)want[k], (long long)got[k],
				    k ? "warm-up runs" : "measured runs");
	}
	return 0;
}

/* Who counted the record, against itself and the record (provenance.h: the CPU quota, the
 * verification's verdict, layer, dates, age and staleness). */
static int check_provenance(struct dctx *c, const json_t *doc)
{
	char field[96], why[600];
	if (!mw_provenance_check(doc, field, sizeof(field), why, sizeof(why)))
		return 0;
	return inconsistent(c, field, "%s", why);
}

/* What the schema cannot say (issue 28): created_utc is a real UTC time in RFC 3339's form
 * with Z, as memwall writes it ("2026-11-21T07:36:00Z"; "9999-99-99T99:99:99Z" passed), with
 * fractional seconds allowed (mw_utc_parse; issue 44), and the protocol's name is the name in
 * the document it copies. */
static int check_identity(struct dctx *c, const json_t *doc)
{
	const char *t = json_string_value(json_object_get(doc, "created_utc"));
	int64_t when;
	if (mw_utc_parse(t, &when))
		return mw_error_set(c->err, MW_RESULT_MALFORMED, c->source, "created_utc",
				    "'%s' is not a UTC time such as 2026-11-21T07:36:00Z or "
				    "2026-11-21T07:36:00.250Z (RFC 3339 with Z, every field in "
				    "range)", t ? t : "");
	const json_t *p = json_object_get(doc, "protocol");
	const char *name = json_string_value(json_object_get(p, "name"));
	const char *dname = json_string_value(json_object_get(json_object_get(p, "document"),
							      "name"));
	if (name && dname && strcmp(name, dname))
		return inconsistent(c, "protocol.name", "is '%s', but protocol.document.name is "
				    "'%s': the record or its copy of the protocol was edited", name,
				    dname);
	return 0;
}

int mw_result_validate(const json_t *doc, const char *source, struct mw_error *err)
{
	struct dctx c = { .source = source, .err = err };
	json_t *schema = mw_result_schema(), *copy = NULL;
	int rc;
	if (!schema)
		return mw_error_set(err, MW_RESULT_MALFORMED, "(built in)", "result.schema.json",
				    "the embedded schema does not parse: a build problem");
	const char *version = json_string_value(json_object_get(doc, "schema"));
	if (version && strncmp(version, "memwall-result/", 15) == 0 &&
	    strcmp(version, "memwall-result/1") && strcmp(version, MW_RESULT_SCHEMA_ID)) {
		rc = mw_error_set(err, MW_RESULT_MALFORMED, source, "schema",
				  "\"%s\" is a schema this memwall cannot read (it reads "
				  "memwall-result/1 and %s): the record comes from a newer memwall; "
				  "validate it with that version", version, MW_RESULT_SCHEMA_ID);
		goto out;
	}
	rc = mw_schema_check(schema, doc, source, err);
	if (rc) {
		rc = MW_RESULT_MALFORMED;
		goto out;
	}
	c.v1 = !strcmp(json_string_value(json_object_get(doc, "schema")), "memwall-result/1");
	if ((rc = check_identity(&c, doc)))
		goto out;
	if (!strcmp(json_string_value(json_object_get(doc, "kind")), "reference")) {
		rc = check_reference(&c, doc);
		goto out;
	}
	if ((rc = check_vocab(&c, doc)) || (rc = check_layer(&c, doc)) ||
	    (rc = check_shares(&c, doc)) || (rc = check_document(&c, doc)) ||
	    (rc = check_provenance(&c, doc)))
		goto out;
	copy = json_deep_copy(doc);
	if (!copy) {
		rc = mw_error_set(err, -ENOMEM, source, "", "out of memory copying the record to "
				  "check its figures");
		goto out;
	}
	rc = mw_result_derive(copy, source, err);
	if (rc)
		goto out;
	static const char *const derived[] = { "summary", "acceptance", "drift", "external" };
	size_t i;
	json_t *run;
	json_array_foreach(json_object_get(copy, "runs"), i, run) {
		char path[64];
		snprintf(path, sizeof(path), "runs[%zu].figures", i);
		const json_t *got = json_object_get(json_array_get(json_object_get(doc, "runs"), i),
						    "figures");
		if ((rc = same(&c, json_object_get(run, "figures"), got, path)))
			goto out;
	}
	for (i = 0; i < sizeof(derived) / sizeof(derived[0]); i++)
		if (json_object_get(copy, derived[i]) &&
		    (rc = same(&c, json_object_get(copy, derived[i]), json_object_get(doc, derived[i]),
			       derived[i])))
			goto out;
	/* A record of variants (protocols/README.md, Variants) holds each one's whole record. */
	json_array_foreach(json_object_get(doc, "variants"), i, run) {
		char vsrc[600];
		snprintf(vsrc, sizeof(vsrc), "%.400s variants[%zu] (%.64s)", source, i,
			 json_string_value(json_object_get(run, "name")));
		if ((rc = mw_result_validate(json_object_get(run, "record"), vsrc, err)))
			goto out;
	}
out:
	json_decref(copy);
	json_decref(schema);
	return rc;
}
