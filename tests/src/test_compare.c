/* tests/src/test_compare.c: `memwall compare` on synthetic result pairs: a regression, a
 * non-regression, an improvement, a change within the threshold, pairs it must refuse
 * (different protocols, machines or threads, a malformed record) unless forced, and the cases
 * a CI gate must not pass: DRAM unmeasured on one side, drifted records, an acceptance failure,
 * a large change the runs cannot resolve. Each verdict and exit code, in all three formats;
 * expected figures are computed here from the raw data the test writes. */
#include <math.h>
#include <unistd.h>

#include "fixture_result.h"
#include "record.h"
#include "run.h"
#include "stats.h"
#include "test.h"

static char dir[256];

static const struct t_fx_spec base = {
	.protocol = "pair", .cpu = "Test CPU", .runs = 5, .warmups = 1, .tokens = 64,
	.latency_ns = 20e6, .jitter = 0.005, .dram_bytes = 400e6, .instances = 2, .seed = 11,
};

static void write_pair(const struct t_fx_spec *a, const struct t_fx_spec *b, char *pa, char *pb)
{
	json_t *x = t_fx_record(a), *y = t_fx_record(b);
	t_fx_write(x, dir, "base.json", pa, 1024);
	t_fx_write(y, dir, "new.json", pb, 1024);
	json_decref(x);
	json_decref(y);
}

static struct t_output compare(const char *pa, const char *pb, const char *extra1,
			       const char *extra2)
{
	const char *argv[] = { "memwall", "compare", pa, pb, extra1, extra2, NULL };
	return t_run(argv);
}

/* How many times needle occurs in hay. */
static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *at = hay; (at = strstr(at, needle)); at += strlen(needle))
		n++;
	return n;
}

static void test_same(void)
{
	char pa[1024], pb[1024];
	struct t_fx_spec b = base;
	b.seed = 12; /* same distribution, other noise */
	write_pair(&base, &b, pa, pb);
	struct t_output o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "| tok_per_s |");
	T_CONTAINS(o.out, "0 regressions");
	t_output_free(&o);
}

static void test_regression(void)
{
	char pa[1024], pb[1024];
	struct t_fx_spec b = base;
	b.seed = 12;
	b.latency_ns = 23e6; /* 13 % slower: tok/s down well beyond 5 %, far beyond the noise */
	write_pair(&base, &b, pa, pb);
	struct t_output o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 1);
	T_CONTAINS(o.out, "REGRESSION");
	t_output_free(&o);
	/* The same change under a 20 % threshold is not a regression. */
	o = compare(pa, pb, "--max-regress", "20");
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "| same |");
	t_output_free(&o);
	/* More DRAM bytes per token is a regression too (lower is better). */
	b.latency_ns = base.latency_ns;
	b.dram_bytes = 480e6;
	write_pair(&base, &b, pa, pb);
	o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 1);
	T_CONTAINS(o.out, "| dram_read_MB_per_token |");
	t_output_free(&o);
	/* Faster and leaner: an improvement, exit 0. */
	b.latency_ns = 17e6;
	b.dram_bytes = 350e6;
	write_pair(&base, &b, pa, pb);
	o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "improvement");
	t_output_free(&o);
}

/* Runs as noisy as these fail the fixture protocol's tok/s CV limit (5 %): tok/s and the
 * latencies are not comparable, never a regression; exit 3 as tok_per_s is required. */
static void test_noisy(void)
{
	char pa[1024], pb[1024];
	struct t_fx_spec a = base, b = base;
	a.jitter = b.jitter = 0.4;
	a.runs = b.runs = 2;
	b.seed = 99;
	b.latency_ns = 21e6;
	write_pair(&a, &b, pa, pb);
	struct t_output o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 3);
	T_CONTAINS(o.out, "acceptance criterion max_cv_tok_s_pct failed");
	t_output_free(&o);
}

static void test_refusals(void)
{
	char pa[1024], pb[1024];
	struct t_fx_spec b = base;
	b.protocol = "other";
	b.latency_ns = 30e6;
	write_pair(&base, &b, pa, pb);
	struct t_output o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 2);
	/* The difference is said once: the markdown table on stdout; stderr says what to do. */
	T_CONTAINS(o.out, "| protocol.name | \"pair\" | \"other\" |");
	T_EQ_INT(count(o.out, "protocol.name") + count(o.err, "protocol.name"), 1);
	T_CONTAINS(o.err, "pass --force to compare anyway");
	T_CONTAINS(o.out, "refused (--force compares anyway)");
	t_output_free(&o);
	/* json and junit keep stdout to the document: the difference goes to stderr too */
	o = compare(pa, pb, "--format", "json");
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "protocol.name: BASE \"pair\", NEW \"other\"");
	t_output_free(&o);
	o = compare(pa, pb, "--force", NULL);
	T_EQ_INT(o.status, 1); /* forced: compared, and 50 % slower is a regression */
	T_CONTAINS(o.out, "forced");
	t_output_free(&o);

	b = base;
	b.cpu = "Other CPU";
	write_pair(&base, &b, pa, pb);
	o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.out, "machine.cpu_name differs");
	t_output_free(&o);

	FILE *f = fopen(pb, "w");
	fputs("{\"schema\": \"memwall-result/1\",", f);
	fclose(f);
	o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "not valid JSON");
	t_output_free(&o);
	o = compare(pa, NULL, NULL, NULL);
	T_EQ_INT(o.status, 2);
	t_output_free(&o);
}

/* ---- the cases a CI gate must stop, and the formats */

/* compare BASE NEW [args...] (NULL-terminated). */
static struct t_output compare_v(const char *pa, const char *pb, const char *const *args)
{
	const char *argv[16] = { "memwall", "compare", pa, pb };
	int n = 4;
	for (; args && *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	return t_run(argv);
}

static void rederive(json_t *doc)
{
	struct mw_error err;
	if (mw_result_derive(doc, "fixture", &err)) {
		fprintf(stderr, "fixture: cannot re-derive: %s\n", err.text);
		exit(1);
	}
}

static void write_docs(json_t *x, json_t *y, char *pa, char *pb)
{
	t_fx_write(x, dir, "base.json", pa, 1024);
	t_fx_write(y, dir, "new.json", pb, 1024);
}

/* Every decode token of run r (warm-ups count from 0) takes ns nanoseconds. */
static void set_run_latency(json_t *doc, size_t r, json_int_t ns)
{
	json_t *run = json_array_get(json_object_get(doc, "runs"), r);
	json_t *lat = json_object_get(json_object_get(run, "tokens"), "latency_ns");
	json_int_t sum = 0;
	for (size_t t = 0; t < json_array_size(lat); t++) {
		json_array_set_new(lat, t, json_integer(ns));
		sum += ns;
	}
	json_object_set_new(json_object_get(run, "decode"), "ns", json_integer(sum));
}

static void set_acceptance(json_t *doc, const char *key, double limit)
{
	json_object_set_new(json_object_get(json_object_get(json_object_get(doc, "protocol"),
							     "document"), "acceptance"), key,
			    json_real(limit));
}

static json_t *parse_json(const char *text)
{
	json_error_t e;
	json_t *doc = json_loads(text ? text : "", 0, &e);
	if (!doc)
		fprintf(stderr, "compare --format json: not JSON: %s (line %d)\n", e.text, e.line);
	T_ASSERT(doc != NULL);
	return doc;
}

static const json_t *metric_of(const json_t *cmp, const char *name)
{
	return t_json_find(json_object_get(cmp, "metrics"), "name", name);
}

static const char *verdict_of(const json_t *cmp, const char *name)
{
	const char *v = json_string_value(json_object_get(metric_of(cmp, name), "verdict"));
	return v ? v : "(absent)";
}

static size_t count_str(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Runs all three formats on one pair: the same exit code from each; the JSON parses, its
 * exit_code matches; the JUnit XML has one testcase per metric of the JSON and a failure
 * element for each regression and each required metric not compared or not resolved. Returns
 * the parsed JSON (caller frees). */
static json_t *check_formats(const char *pa, const char *pb, const char *const *extra,
			     int want)
{
	const char *args[12];
	size_t n = 0;
	for (; extra && extra[n] && n < 8; n++)
		args[n] = extra[n];
	args[n] = "--format";
	args[n + 2] = NULL;
	struct t_output o = compare_v(pa, pb, extra);
	T_EQ_INT(o.status, want);
	t_output_free(&o);
	args[n + 1] = "json";
	o = compare_v(pa, pb, args);
	T_EQ_INT(o.status, want);
	json_t *cmp = parse_json(o.out);
	t_output_free(&o);
	if (!cmp)
		return NULL;
	T_EQ_INT(json_integer_value(json_object_get(cmp, "exit_code")), want);
	T_EQ_STR(json_string_value(json_object_get(cmp, "schema")), "memwall-compare/1");
	size_t fails = 0, i;
	const json_t *m;
	json_array_foreach(json_object_get(cmp, "metrics"), i, m) {
		const char *v = json_string_value(json_object_get(m, "verdict"));
		bool req = json_is_true(json_object_get(m, "required"));
		fails += !strcmp(v, "regression") ||
			 (req && (!strcmp(v, "not-comparable") || !strcmp(v, "inconclusive")));
	}
	args[n + 1] = "junit";
	o = compare_v(pa, pb, args);
	T_EQ_INT(o.status, want);
	T_CONTAINS(o.out, "<?xml version=\"1.0\"");
	if (want != 2) {
		T_EQ_INT(count_str(o.out, "<testcase "), json_array_size(json_object_get(cmp,
											 "metrics")));
		T_EQ_INT(count_str(o.out, "<failure "), fails);
	} else {
		T_EQ_INT(count_str(o.out, "<testcase "), 1);
		T_EQ_INT(count_str(o.out, "<failure "), 1);
	}
	T_EQ_INT(count_str(o.out, "<testcase "), count_str(o.out, "</testcase>"));
	t_output_free(&o);
	return cmp;
}

/* A --threads 2 run against the protocol's 1-thread run: refused, naming the field; the same
 * effective value reached by an override and by the protocol is no difference. */
static void test_threads(void)
{
	char pa[1024], pb[1024];
	struct t_fx_spec b = base;
	b.seed = 12;
	json_t *x = t_fx_record(&base), *y = t_fx_record(&b);
	json_object_set_new(json_object_get(x, "protocol"), "overrides", json_pack("{s:i}", "runs",
										   5));
	json_object_set_new(json_object_get(json_object_get(y, "protocol"), "document"), "runs",
			    json_integer(5));
	json_object_set_new(x, "engine", json_pack("{s:s, s:i}", "kind", "builtin", "threads", 1));
	json_object_set_new(y, "engine", json_pack("{s:s, s:i}", "kind", "builtin", "threads", 1));
	write_docs(x, y, pa, pb);
	json_t *c = check_formats(pa, pb, NULL, 0);
	T_ASSERT(json_is_true(json_object_get(c, "comparable")));
	json_decref(c);

	json_object_set_new(json_object_get(y, "protocol"), "overrides",
			    json_pack("{s:i}", "threads", 2));
	json_object_set_new(json_object_get(y, "engine"), "threads", json_integer(2));
	json_object_set_new(json_object_get(y, "model"), "sha256", json_string("2222222222222222222222222222222222222222222222222222222222222222"));
	write_docs(x, y, pa, pb);
	struct t_output o = compare_v(pa, pb, NULL);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.out, "| engine.threads | 1 | 2 |");
	T_CONTAINS(o.out, "| model.sha256 |");
	T_CONTAINS(o.out, "**refused**");
	T_CONTAINS(o.err, "2 settings differ");
	t_output_free(&o);
	c = check_formats(pa, pb, NULL, 2);
	T_EQ_INT(json_array_size(json_object_get(c, "differences")), 2);
	T_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(c,
		"differences"), 0), "field")), "model.sha256");
	T_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(c,
		"differences"), 1), "field")), "engine.threads");
	T_EQ_INT(json_array_size(json_object_get(c, "metrics")), 0);
	json_decref(c);
	/* Forced: compared, and every format says so. */
	static const char *const force[] = { "--force", NULL };
	o = compare_v(pa, pb, force);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "**forced** (--force)");
	t_output_free(&o);
	c = check_formats(pa, pb, force, 0);
	T_ASSERT(json_is_true(json_object_get(c, "forced")));
	T_ASSERT(!json_is_true(json_object_get(c, "comparable")));
	json_decref(c);
	json_decref(x);
	json_decref(y);
}

/* A DRAM-measured base against a new run whose DRAM went unmeasured: the required
 * dram_MB_per_token is not comparable, exit 3; without it required, exit 0. */
static void test_dram_unmeasured(void)
{
	char pa[1024], pb[1024];
	struct t_fx_spec b = base;
	b.seed = 12;
	b.dram_bytes = 0;
	write_pair(&base, &b, pa, pb);
	json_t *c = check_formats(pa, pb, NULL, 3);
	T_EQ_STR(verdict_of(c, "dram_MB_per_token"), "not-comparable");
	T_CONTAINS(json_string_value(json_object_get(metric_of(c, "dram_MB_per_token"), "reason")),
		   "NEW: not measured: fixture: no memory-controller counters");
	T_ASSERT(json_is_null(json_object_get(metric_of(c, "dram_MB_per_token"), "new")));
	T_EQ_STR(verdict_of(c, "tok_per_s"), "same");
	json_decref(c);
	static const char *const req[] = { "--require", "tok_per_s", NULL };
	c = check_formats(pa, pb, req, 0);
	T_EQ_STR(verdict_of(c, "dram_MB_per_token"), "not-comparable");
	T_ASSERT(!json_is_true(json_object_get(metric_of(c, "dram_MB_per_token"), "required")));
	json_decref(c);
	static const char *const bad[] = { "--require", "tok_s", NULL };
	struct t_output o = compare_v(pa, pb, bad);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "--require tok_s: no such metric");
	t_output_free(&o);
}

/* Two records of a machine without DRAM counters (every VM): each DRAM figure has the same
 * reason, said once under the table; exit 3's line names the flag that gates on tok/s. */
static void test_dram_unmeasured_both(void)
{
	char pa[1024], pb[1024];
	struct t_fx_spec a = base, b = base;
	a.dram_bytes = b.dram_bytes = 0;
	b.seed = 12;
	write_pair(&a, &b, pa, pb);
	struct t_output o = compare(pa, pb, NULL, NULL);
	T_EQ_INT(o.status, 3);
	T_EQ_INT(count(o.out, "no memory-controller counters"), 1);
	T_CONTAINS(o.out, "| dram_MB_per_token | yes | not measured | not measured |  |  |  | "
			  "not-comparable | [1] |");
	T_CONTAINS(o.out, "\n[1] BASE and NEW: not measured: fixture: no memory-controller counters");
	T_CONTAINS(o.out, "Exit 3: 1 required metric not comparable (dram_MB_per_token): neither "
			  "record measured DRAM (see its row); on a machine without DRAM counters, "
			  "--require tok_per_s gates on tok/s alone.");
	t_output_free(&o);
	/* The flag it names does what it says: exit 0 (tok/s compared, no regression). */
	o = compare(pa, pb, "--require", "tok_per_s");
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
}

/* Two records that each say DRIFTED (bandwidth 50 -> 80 GB/s against a 10 % tolerance): no
 * metric is comparable. */
static void test_drifted(void)
{
	char pa[1024], pb[1024];
	struct t_fx_spec b = base;
	b.seed = 12;
	json_t *x = t_fx_record(&base), *y = t_fx_record(&b);
	json_object_set_new(json_object_get(x, "drift"), "after_gbps", json_real(80.0));
	json_object_set_new(json_object_get(y, "drift"), "after_gbps", json_real(80.0));
	rederive(x);
	rederive(y);
	T_ASSERT(json_is_true(json_object_get(json_object_get(x, "drift"), "drifted")));
	write_docs(x, y, pa, pb);
	json_t *c = check_formats(pa, pb, NULL, 3);
	const json_t *m;
	size_t i;
	json_array_foreach(json_object_get(c, "metrics"), i, m)
		T_EQ_STR(json_string_value(json_object_get(m, "verdict")), "not-comparable");
	T_CONTAINS(json_string_value(json_object_get(metric_of(c, "tok_per_s"), "reason")),
		   "BASE and NEW: DRIFTED: the machine's read bandwidth changed +60.0 %");
	json_decref(c);
	json_decref(x);
	json_decref(y);
}

/* An acceptance criterion failed on one side: its figures are not comparable, the others are. */
static void test_acceptance_failed(void)
{
	char pa[1024], pb[1024];
	struct t_fx_spec b = base;
	b.seed = 12;
	json_t *x = t_fx_record(&base), *y = t_fx_record(&b);
	set_acceptance(y, "max_cv_mb_per_token_pct", 1e-6);
	rederive(y);
	write_docs(x, y, pa, pb);
	json_t *c = check_formats(pa, pb, NULL, 3);
	T_EQ_STR(verdict_of(c, "dram_MB_per_token"), "not-comparable");
	T_CONTAINS(json_string_value(json_object_get(metric_of(c, "dram_MB_per_token"), "reason")),
		   "NEW: acceptance criterion max_cv_mb_per_token_pct failed");
	T_EQ_STR(verdict_of(c, "tok_per_s"), "same");
	T_EQ_STR(verdict_of(c, "engine_MB_per_token"), "same");
	json_decref(c);
	json_decref(x);
	json_decref(y);
}

/* Power of the two-sided Welch test with n per side (shifted central t), written out here
 * to check compare's runs_needed_per_side. */
static double power_at(double delta, double s1, double s2, int n)
{
	double v = (s1 * s1 + s2 * s2) / n;
	double df = (n - 1) * pow(s1 * s1 + s2 * s2, 2) / (pow(s1, 4) + pow(s2, 4));
	double tc = mw_t_quantile(0.975, df), d = fabs(delta) / sqrt(v);
	return 1.0 - mw_t_cdf(tc - d, df) + mw_t_cdf(-tc - d, df);
}

/* -36 % tok/s over 3 runs a side, p above 0.05: inconclusive, exit 4, with the runs per side
 * that would resolve it. tok/s per run are set through the per-token latencies. */
static void test_inconclusive(void)
{
	static const double tps[2][3] = { { 800, 1000, 1200 }, { 520, 640, 760 } };
	char pa[1024], pb[1024];
	struct t_fx_spec a = base, b = base;
	a.runs = b.runs = 3;
	b.seed = 12;
	json_t *doc[2] = { t_fx_record(&a), t_fx_record(&b) };
	double mean[2], sd[2];
	for (int s = 0; s < 2; s++) {
		double x[3];
		set_run_latency(doc[s], 0, 1000000); /* the warm-up */
		for (int r = 0; r < 3; r++) {
			json_int_t ns = (json_int_t)llround(1e9 / tps[s][r]);
			set_run_latency(doc[s], (size_t)r + 1, ns);
			x[r] = 1e9 / (double)ns; /* tokens / (tokens * ns) */
		}
		mean[s] = (x[0] + x[1] + x[2]) / 3;
		double ss = 0;
		for (int r = 0; r < 3; r++)
			ss += (x[r] - mean[s]) * (x[r] - mean[s]);
		sd[s] = sqrt(ss / 2);
		set_acceptance(doc[s], "max_cv_tok_s_pct", 50);
		rederive(doc[s]);
	}
	write_docs(doc[0], doc[1], pa, pb);
	double pct = 100 * (mean[1] - mean[0]) / mean[0];
	double p = mw_welch_p(mean[0], sd[0], 3, mean[1], sd[1], 3, NULL, NULL);
	T_NEAR(pct, -36.0, 0.01);
	T_ASSERT(p > 0.05 && p < 0.1);
	json_t *c = check_formats(pa, pb, NULL, 4);
	const json_t *m = metric_of(c, "tok_per_s");
	T_EQ_STR(verdict_of(c, "tok_per_s"), "inconclusive");
	T_NEAR(json_number_value(json_object_get(m, "change_pct")), pct, 1e-6);
	T_NEAR(json_number_value(json_object_get(m, "p")), p, 1e-6);
	json_int_t need = json_integer_value(json_object_get(m, "runs_needed_per_side"));
	T_ASSERT(need > 3);
	T_ASSERT(power_at(mean[1] - mean[0], sd[0], sd[1], (int)need) >= 0.8);
	T_ASSERT(power_at(mean[1] - mean[0], sd[0], sd[1], (int)need - 1) < 0.8);
	char want[64];
	snprintf(want, sizeof(want), "%lld runs per side would resolve it", (long long)need);
	T_CONTAINS(json_string_value(json_object_get(m, "reason")), want);
	json_decref(c);
	/* Under a 50 % threshold the same change is no longer large: same. */
	struct t_output o = compare(pa, pb, "--max-regress", "50");
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
	json_decref(doc[0]);
	json_decref(doc[1]);
}

/* A regression in every format: exit 1, a failure element for tok_per_s. */
static void test_regression_formats(void)
{
	char pa[1024], pb[1024];
	struct t_fx_spec b = base;
	b.seed = 12;
	b.latency_ns = 23e6;
	write_pair(&base, &b, pa, pb);
	json_t *c = check_formats(pa, pb, NULL, 1);
	T_EQ_STR(verdict_of(c, "tok_per_s"), "regression");
	T_EQ_STR(verdict_of(c, "dram_MB_per_token"), "same");
	T_ASSERT(json_integer_value(json_object_get(json_object_get(c, "counts"), "regression")) >=
		 1);
	json_decref(c);
	b.latency_ns = 17e6;
	b.dram_bytes = 350e6;
	write_pair(&base, &b, pa, pb);
	c = check_formats(pa, pb, NULL, 0);
	T_EQ_STR(verdict_of(c, "tok_per_s"), "improvement");
	T_EQ_STR(verdict_of(c, "dram_MB_per_token"), "improvement");
	json_decref(c);
}

int main(void)
{
	t_scratch(dir, sizeof(dir), "compare");
	test_same();
	test_regression();
	test_noisy();
	test_refusals();
	test_threads();
	test_dram_unmeasured();
	test_dram_unmeasured_both();
	test_drifted();
	test_acceptance_failed();
	test_inconclusive();
	test_regression_formats();
	return t_done_rm(dir, 0);
}
