/* tests/src/test_report_bench.c: `report --format bmf` and `--format gab-smaller|gab-bigger|gab`
 * (src/record/report_bench.c) against each tool's documented shape, and every value against
 * arithmetic done here on the record's raw data.
 *
 * The shapes, written from the tools' documentation (not from memwall's code):
 *   - Bencher Metric Format (bencher.dev/docs/reference/bencher-metric-format, its JSON
 *     Schema https://bencher.dev/bmf.json): an object; each key (".+") a benchmark name of at
 *     most 1024 characters, whose value is an object; each of its keys (".+") a measure
 *     (a slug: at most 64 characters), whose value is an object with "value" (a number,
 *     required), "lower_value" and "upper_value" (numbers, optional).
 *   - github-action-benchmark, tools customSmallerIsBetter / customBiggerIsBetter (its README,
 *     "Examples", and the BenchmarkResult interface of src/extract.ts): an array of objects
 *     with "name" (string), "unit" (string), "value" (number), and optional "range" and
 *     "extra" (strings); nothing else.
 *
 * What memwall promises on top (README, `report --help`): one entry per measured figure, the
 * mean of its runs, its provenance in the name; a figure not measured is left out (never 0)
 * with a line on stderr; the smaller-is-better figures in gab-smaller, tok/s in gab-bigger. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture_result.h"
#include "report_bench.h"
#include "run.h"
#include "test.h"

/* The figures where bigger is better: token rates (the test's own knowledge of them). */
static bool bigger_is_better(const char *metric)
{
	return !strcmp(metric, "tok_per_s") || !strcmp(metric, "prefill_tok_per_s");
}

/* "PROTOCOL: METRIC [WORDS]": the metric's name (into buf), or NULL. */
static const char *metric_of(const char *name, char *buf, size_t n)
{
	const char *colon = strstr(name, ": "), *br = strstr(name, " [");
	if (!colon || !br || br < colon)
		return NULL;
	snprintf(buf, n, "%.*s", (int)(br - colon - 2), colon + 2);
	return buf;
}

static void check_bmf_shape(const json_t *o)
{
	const char *bench, *measure, *k;
	json_t *b, *m, *v;
	T_ASSERT(json_is_object(o));
	json_object_foreach((json_t *)(uintptr_t)o, bench, b) {
		T_ASSERT(strlen(bench) >= 1 && strlen(bench) <= 1024);
		T_ASSERT(json_is_object(b));
		json_object_foreach(b, measure, m) {
			T_ASSERT(strlen(measure) >= 1 && strlen(measure) <= 64);
			T_ASSERT(json_is_object(m));
			T_ASSERT(json_is_number(json_object_get(m, "value")));
			json_object_foreach(m, k, v) {
				T_ASSERT(!strcmp(k, "value") || !strcmp(k, "lower_value") ||
					 !strcmp(k, "upper_value"));
				T_ASSERT(json_is_number(v));
			}
		}
	}
}

static void check_gab_shape(const json_t *a)
{
	size_t i;
	const char *k;
	json_t *e, *v;
	T_ASSERT(json_is_array(a));
	json_array_foreach(a, i, e) {
		T_ASSERT(json_is_string(json_object_get(e, "name")));
		T_ASSERT(json_is_string(json_object_get(e, "unit")));
		T_ASSERT(json_is_number(json_object_get(e, "value")));
		json_object_foreach(e, k, v) {
			bool known = !strcmp(k, "name") || !strcmp(k, "unit") || !strcmp(k, "value") ||
				     !strcmp(k, "range") || !strcmp(k, "extra");
			T_ASSERT(known);
			if (!strcmp(k, "range") || !strcmp(k, "extra"))
				T_ASSERT(json_is_string(v));
		}
	}
}

/* Runs fmt through the library: its output parsed, and its stderr lines into *log. */
static json_t *run_fmt(const json_t *doc, enum mw_bench_format fmt, char **log)
{
	char *buf = NULL;
	size_t len = 0, llen = 0;
	FILE *f = open_memstream(&buf, &len), *l = open_memstream(log, &llen);
	mw_report_bench(f, l, doc, fmt);
	fclose(f);
	fclose(l);
	json_error_t je;
	json_t *o = json_loads(buf, 0, &je);
	if (!o)
		fprintf(stderr, "not JSON (%s): %s\n", je.text, buf);
	free(buf);
	return o;
}

/* The means of tok/s and of DRAM MB/token (read, net of the idle rate) over the measured
 * runs, and tok/s's sample sd, from the raw windows: results/README.md's definitions. */
struct expect {
	double tok_s, tok_s_sd, dram_mb;
};

static struct expect expected(const json_t *doc)
{
	struct expect e = { 0 };
	double ts[64], sum_mb = 0;
	size_t n = 0, i;
	const json_t *run;
	json_array_foreach(json_object_get(doc, "runs"), i, run) {
		if (json_is_true(json_object_get(run, "warmup")))
			continue;
		const json_t *d = json_object_get(run, "decode"), *idle = json_object_get(run, "idle");
		double tokens = json_number_value(json_object_get(d, "tokens"));
		double ns = json_number_value(json_object_get(d, "ns"));
		double rate = json_number_value(json_object_get(idle, "dram_read_bytes")) /
			      json_number_value(json_object_get(idle, "window_ns"));
		ts[n] = tokens / (ns * 1e-9);
		sum_mb += (json_number_value(json_object_get(d, "dram_read_bytes")) - rate * ns) /
			  tokens / 1e6;
		e.tok_s += ts[n++];
	}
	e.tok_s /= (double)n;
	e.dram_mb = sum_mb / (double)n;
	for (i = 0; i < n; i++)
		e.tok_s_sd += (ts[i] - e.tok_s) * (ts[i] - e.tok_s);
	e.tok_s_sd = sqrt(e.tok_s_sd / (double)(n - 1));
	return e;
}

static const json_t *metric(const json_t *doc, const char *name)
{
	return json_object_get(json_object_get(json_object_get(doc, "summary"), "metrics"), name);
}

/* A record whose DRAM counts are hardware's: every measured figure is in bmf once, valued
 * at its mean, with the 95 % interval as its bounds, and its provenance in its name. */
static void check_hardware(const json_t *doc)
{
	struct expect e = expected(doc);
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	char *log = NULL, mbuf[128];
	const char *bench;
	json_t *b, *x;
	size_t measured = 0;
	json_t *o = run_fmt(doc, MW_BENCH_BMF, &log);
	check_bmf_shape(o);
	json_object_foreach((json_t *)(uintptr_t)m, bench, x)
		measured += json_is_true(json_object_get(x, "measured"));
	T_EQ_INT(json_object_size(o), measured);
	json_object_foreach(o, bench, b) {
		const char *name = metric_of(bench, mbuf, sizeof(mbuf));
		T_ASSERT(name != NULL);
		const json_t *rec = metric(doc, name ? name : "");
		T_ASSERT(json_is_true(json_object_get(rec, "measured")));
		T_ASSERT(strncmp(bench, "formats: ", 9) == 0);
		T_CONTAINS(bench, "SYNTHETIC weights"); /* the fixture's model is synthetic */
		if (strstr(name, "dram_")) {
			T_CONTAINS(bench, "hardware (intel_imc_free)");
			T_CONTAINS(bench, "not verified");
		} else if (!strncmp(name, "engine_", 7)) {
			T_CONTAINS(bench, "engine-accounted");
		}
		T_ASSERT(strstr(bench, "SIMULATED") == NULL);
		T_EQ_INT(json_object_size(b), 1);
		const char *slug = NULL;
		json_t *v, *meas;
		json_object_foreach(b, slug, meas) {
			v = json_object_get(meas, "value");
			T_NEAR(json_number_value(v), json_number_value(json_object_get(rec, "mean")), 0);
			if (json_object_get(meas, "lower_value")) {
				T_NEAR(json_number_value(json_object_get(meas, "lower_value")),
				       json_number_value(json_object_get(rec, "ci95_low")), 0);
				T_NEAR(json_number_value(json_object_get(meas, "upper_value")),
				       json_number_value(json_object_get(rec, "ci95_high")), 0);
				T_ASSERT(json_number_value(json_object_get(meas, "lower_value")) <=
					 json_number_value(v));
			}
			/* the unit as a slug: MB and MiB stay apart */
			if (!strcmp(name, "dram_MB_per_token"))
				T_EQ_STR(slug, "mb-per-token");
			if (!strcmp(name, "dram_read_MiB_per_token"))
				T_EQ_STR(slug, "mib-per-token");
			if (!strcmp(name, "tok_per_s"))
				T_EQ_STR(slug, "token-per-s");
			if (!strcmp(name, "tok_per_s"))
				T_NEAR(json_number_value(v), e.tok_s, 1e-9 * e.tok_s);
			if (!strcmp(name, "dram_MB_per_token"))
				T_NEAR(json_number_value(v), e.dram_mb, 1e-9 * e.dram_mb);
			if (!strcmp(name, "dram_read_MiB_per_token"))
				T_NEAR(json_number_value(v), e.dram_mb * 1e6 / 1048576.0,
				       1e-9 * e.dram_mb);
		}
	}
	json_decref(o);
	free(log);

	/* gab-smaller and gab-bigger split the measured figures between them, by direction. */
	char *log_s = NULL, *log_b = NULL;
	json_t *s = run_fmt(doc, MW_BENCH_GAB_SMALLER, &log_s);
	json_t *g = run_fmt(doc, MW_BENCH_GAB_BIGGER, &log_b);
	check_gab_shape(s);
	check_gab_shape(g);
	T_EQ_INT(json_array_size(s) + json_array_size(g), measured);
	size_t i;
	json_array_foreach(s, i, x) {
		const char *name = metric_of(json_string_value(json_object_get(x, "name")), mbuf,
					     sizeof(mbuf));
		T_ASSERT(name && !bigger_is_better(name));
		const json_t *rec = metric(doc, name ? name : "");
		T_NEAR(json_number_value(json_object_get(x, "value")),
		       json_number_value(json_object_get(rec, "mean")), 0);
		const char *unit = json_string_value(json_object_get(x, "unit"));
		if (name && !strcmp(name, "dram_MB_per_token")) {
			T_ASSERT(!strncmp(unit, "MB/token", 8));
			T_CONTAINS(unit, "10^6");
			T_NEAR(json_number_value(json_object_get(x, "value")), e.dram_mb,
			       1e-9 * e.dram_mb);
			T_CONTAINS(json_string_value(json_object_get(x, "extra")),
				   "hardware (intel_imc_free)");
		}
		if (name && !strcmp(name, "dram_read_MiB_per_token")) {
			T_ASSERT(!strncmp(unit, "MiB/token", 9));
			T_CONTAINS(unit, "2^20");
		}
	}
	T_EQ_INT(json_array_size(g), 2); /* tok/s of decode and of prefill */
	json_array_foreach(g, i, x) {
		const char *name = metric_of(json_string_value(json_object_get(x, "name")), mbuf,
					     sizeof(mbuf));
		T_ASSERT(name && bigger_is_better(name));
		if (name && !strcmp(name, "tok_per_s")) {
			T_NEAR(json_number_value(json_object_get(x, "value")), e.tok_s,
			       1e-9 * e.tok_s);
			const char *range = json_string_value(json_object_get(x, "range"));
			T_ASSERT(range && !strncmp(range, "± ", strlen("± ")));
			T_NEAR(strtod(range ? range + strlen("± ") : "", NULL), e.tok_s_sd,
			       1e-5 * e.tok_s_sd);
			T_CONTAINS(json_string_value(json_object_get(x, "unit")), "token/s");
			T_CONTAINS(json_string_value(json_object_get(x, "name")), "[timed");
		}
	}
	/* Each says where the other direction's figures are. */
	T_CONTAINS(log_s, "leaves out 2 bigger-is-better figures (tok_per_s, prefill_tok_per_s): "
			  "--format gab-bigger writes them");
	T_CONTAINS(log_b, "smaller-is-better figures (");
	T_CONTAINS(log_b, "dram_MB_per_token");
	T_CONTAINS(log_b, "--format gab-smaller writes them");
	json_decref(s);
	json_decref(g);
	free(log_s);
	free(log_b);
}

/* A record with no DRAM counter: no DRAM entry at all (never a 0), each named on stderr with
 * the record's reason. */
static void check_not_measured(const json_t *doc)
{
	char *log = NULL;
	const char *bench;
	json_t *b;
	json_t *o = run_fmt(doc, MW_BENCH_BMF, &log);
	check_bmf_shape(o);
	json_object_foreach(o, bench, b)
		T_ASSERT(strstr(bench, ": dram_") == NULL);
	T_CONTAINS(log, "leaves out dram_MB_per_token: not measured: fixture: no memory-controller "
			"counters");
	T_CONTAINS(log, "leaves out dram_read_MiB_per_token: not measured");
	T_ASSERT(json_object_size(o) > 0); /* tok/s and the engine's figures are there */
	json_decref(o);
	free(log);
}

/* The words a record's DRAM figures carry: SIMULATED for the simulated PMU, verified and
 * calibrated (with the calibration's error) where the record says so. */
static void check_words(json_t *doc)
{
	json_t *dram = json_object_get(json_object_get(doc, "counters"), "dram");
	char *log = NULL;
	const char *bench;
	json_t *b;

	json_object_set_new(dram, "layer", json_string("sim"));
	json_t *o = run_fmt(doc, MW_BENCH_BMF, &log);
	size_t sim = 0;
	json_object_foreach(o, bench, b) {
		if (strstr(bench, ": dram_")) {
			T_CONTAINS(bench, "[SIMULATED (intel_imc_free)");
			sim++;
		}
		T_ASSERT(strstr(bench, "hardware") == NULL);
	}
	T_ASSERT(sim > 0);
	json_decref(o);
	free(log);

	/* Hardware again, verified, and a calibration that applies with its error. */
	json_object_set_new(dram, "layer", json_string("syscall"));
	json_object_set_new(dram, "verification", json_pack("{s:s, s:s, s:f}", "verdict", "pass",
							    "layer", "syscall", "age_days", 1.0));
	json_object_set_new(dram, "calibration", json_pack("{s:b, s:f}", "stale", 0, "age_days",
							   2.0));
	json_object_set_new(dram, "calibration_error_pct", json_real(-1.5));
	json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	json_object_set_new(m, "dram_MB_per_token_calibrated",
			    json_pack("{s:s, s:b, s:i, s:f, s:f}", "unit", "MB/token (MB = 10^6 "
				      "bytes; calibrated)", "measured", 1, "n", 3, "mean", 2.5, "sd",
				      0.1));
	o = run_fmt(doc, MW_BENCH_BMF, &log);
	json_object_foreach(o, bench, b) {
		if (!strstr(bench, ": dram_"))
			continue;
		T_CONTAINS(bench, "hardware (intel_imc_free)");
		T_CONTAINS(bench, ", verified, SYNTHETIC weights]");
		if (strstr(bench, "dram_MB_per_token_calibrated"))
			T_CONTAINS(bench, "calibrated (error -1.5 %)");
		else
			T_ASSERT(strstr(bench, "calibrated") == NULL);
	}
	json_decref(o);
	free(log);
}

/* The command: each format on stdout, gab the same as gab-smaller, the list in the error. */
static void check_cli(const char *path)
{
	static const char *const fmts[] = { "bmf", "gab", "gab-smaller", "gab-bigger" };
	char *out[4] = { 0 };
	for (int k = 0; k < 4; k++) {
		struct t_output o = t_run((const char *[]){ "memwall", "report", path, "--format",
							    fmts[k], NULL });
		T_EQ_INT(o.status, 0);
		json_t *j = json_loads(o.out ? o.out : "", 0, NULL);
		T_ASSERT(j != NULL);
		if (k == 0)
			check_bmf_shape(j);
		else
			check_gab_shape(j);
		json_decref(j);
		out[k] = o.out;
		o.out = NULL;
		if (k == 1)
			T_CONTAINS(o.err, "--format gab-bigger writes them");
		t_output_free(&o);
	}
	T_EQ_STR(out[1], out[2]);
	for (int k = 0; k < 4; k++)
		free(out[k]);
	struct t_output o = t_run((const char *[]){ "memwall", "report", path, "--format", "gabby",
						    NULL });
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "bmf, gab-smaller, gab-bigger or gab");
	t_output_free(&o);
	o = t_run((const char *[]){ "memwall", "report", "--help", NULL });
	T_CONTAINS(o.out, "customSmallerIsBetter");
	T_CONTAINS(o.out, "Bencher Metric Format");
	t_output_free(&o);
}

int main(void)
{
	char tmp[] = "/tmp/mw-test-bench-XXXXXX", path[4200];
	t_mkdtemp(tmp);
	struct t_fx_spec sp = { .protocol = "formats", .cpu = "CPU Alpha", .runs = 3, .warmups = 1,
			      .tokens = 16, .latency_ns = 1e6, .jitter = 0.02, .dram_bytes = 4e6,
			      .instances = 2, .seed = 7 };
	json_t *doc = t_fx_record(&sp);
	check_hardware(doc);
	t_fx_write(doc, tmp, "r.json", path, sizeof(path));
	check_cli(path);
	check_words(doc);
	json_decref(doc);

	sp.dram_bytes = 0;
	doc = t_fx_record(&sp);
	check_not_measured(doc);
	json_decref(doc);

	T_EQ_INT(t_rm_tree(tmp), 0);
	return t_done();
}
