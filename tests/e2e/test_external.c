/* tests/e2e/test_external.c: `memwall run` of an external engine, end to end.
 *
 * The foreign program is `memwall generate` (on a synthetic stories260K model), read through
 * the generic adapter with a pattern for the summary line it prints. The test recomputes the
 * differential figures from the raw process records itself, for every counter the record
 * holds: (B2 - B1) / (N2 - N1), and the whole-process B2 / N2 beside it. Engine-accounted
 * bytes: `memwall generate` does not print them yet, so that arithmetic is checked by putting
 * known byte counts into the raw records and deriving again (src/record/differential.c), which also
 * shows `memwall validate` catching the edit. Then the refusals: an output without a token
 * line makes the run invalid with the reason; a short count (EOS) is invalid unless
 * allow_short; a prompt holding shell syntax reaches the program as one verbatim argument. */
#include <math.h>
#include <sched.h>
#include <unistd.h>

#include "result.h"
#include "record.h"
#include "run.h"
#include "test.h"

static char scratch[256];

/* Runs `memwall run PROTOCOL -o DIR [extra]` and loads the record it wrote (NULL if none). */
static json_t *run_protocol(const char *name, const char *body, const char *extra,
			    struct t_output *o)
{
	char proto[512], dir[512], path[1024];
	snprintf(proto, sizeof(proto), "%s/%s.json", scratch, name);
	snprintf(dir, sizeof(dir), "%s/out-%s", scratch, name);
	t_write_file(proto, body);
	const char *bin = getenv("MEMWALL_BIN");
	const char *argv[] = { "memwall", "run", proto, "-o", dir, "--llama-bin", bin, NULL };
	if (!extra)
		argv[5] = NULL;
	*o = t_run(argv);
	if (!t_written_path(o->err, path, sizeof(path)))
		return NULL;
	return json_load_file(path, 0, NULL);
}

static double num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The test's own differential arithmetic for one counter of one repetition. */
static void check_counter(const json_t *rep, const char *raw, bool software, const char *figure,
			  double scale)
{
	const json_t *s = json_object_get(rep, "short"), *l = json_object_get(rep, "long");
	const json_t *fig = json_object_get(rep, "figures");
	double n1 = num(t_json_get(s, "adapter", NULL, NULL), "decode_tokens");
	double n2 = num(t_json_get(l, "adapter", NULL, NULL), "decode_tokens");
	double b1 = num(software ? json_object_get(s, "software") : s, raw);
	double b2 = num(software ? json_object_get(l, "software") : l, raw);
	char whole[128];
	snprintf(whole, sizeof(whole), "%s_whole_process", figure);
	if (isnan(b1) || isnan(b2)) {
		T_ASSERT(json_is_null(json_object_get(fig, figure)));
		T_ASSERT(json_is_null(json_object_get(fig, whole)));
		return;
	}
	/* No idle correction to redo: only system-wide (DRAM) counters get one, and this
	 * function is called for the others. */
	T_NEAR(num(fig, figure), (b2 - b1) / (n2 - n1) / scale, 1e-9 * fabs(b2) / scale);
	T_NEAR(num(fig, whole), b2 / n2 / scale, 1e-9 * fabs(b2) / scale);
}

/* Package energy: measured around each process, net of the idle share like DRAM, and checked
 * with the test's own arithmetic; or not measured with the counter's own reason, never 0. */
static void check_energy(const json_t *doc)
{
	const json_t *reps = t_json_get(doc, "external", "repetitions", NULL), *rep;
	const json_t *m = t_json_get(doc, "summary", "metrics", "energy_J_per_token");
	size_t i;
	if (!json_is_true(t_json_get(doc, "counters", "energy", "measured"))) {
		const char *why =
		    json_string_value(t_json_get(doc, "counters", "energy", "reason"));
		T_ASSERT(why && !strstr(why, "not read around external engines"));
		T_ASSERT(json_is_false(json_object_get(m, "measured")));
		T_EQ_STR(json_string_value(json_object_get(m, "reason")), why);
		json_array_foreach(reps, i, rep)
			T_ASSERT(json_is_null(t_json_get(rep, "long", "energy_j", NULL)));
		return;
	}
	json_array_foreach(reps, i, rep) {
		double b[2];
		const char *side[2] = { "short", "long" };
		for (int k = 0; k < 2; k++) {
			const json_t *p = json_object_get(rep, side[k]), *idle = json_object_get(p, "idle");
			double ns = num(idle, "before_ns") + num(idle, "after_ns");
			double rate = ns > 0 ? num(idle, "energy_j") / (ns * 1e-9) : 0;
			b[k] = num(p, "energy_j") - rate * num(p, "wall_ns") * 1e-9;
		}
		double n1 = num(t_json_get(rep, "short", "adapter", NULL), "decode_tokens");
		double n2 = num(t_json_get(rep, "long", "adapter", NULL), "decode_tokens");
		T_NEAR(num(json_object_get(rep, "figures"), "energy_J_per_token"),
		       (b[1] - b[0]) / (n2 - n1), 1e-9 * fabs(b[1]));
	}
}

static void test_generate(void)
{
	struct t_output o;
	json_t *doc = run_protocol(
		"gen",
		"{\"name\": \"gen-ext\", \"model\": {\"format\": \"llama2c\", \"synth\": "
		"{\"shape\": \"stories260K\"}},\n"
		" \"engine\": {\"kind\": \"external\", \"threads\": 1, \"command\": [\"memwall\", "
		"\"generate\", \"-m\", \"{model}\", \"-n\", \"{n}\", \"-t\", \"{threads}\", "
		"\"--seed\", \"{seed}\", \"--temperature\", \"0\", \"--ids\"],\n"
		"  \"adapter\": {\"name\": \"memwall-tokens\", \"stream\": \"stderr\", \"pattern\": "
		"\"memwall generate: {decode} tokens ({prompt} prompt)\"}},\n"
		" \"decode_tokens\": 160, \"differential\": {\"short_tokens\": 40}, \"runs\": 3, "
		"\"warmup_runs\": 1, \"idle_baseline_ms\": 20,\n"
		" \"drift\": {\"probe_ms\": 50, \"max_bandwidth_change_pct\": 1000}}\n",
		"bin", &o);
	T_OK(o, "memwall run");
	T_CONTAINS(o.err, "repetition 2, long run: 160 tokens confirmed by memwall-tokens");
	T_CONTAINS(o.err, "task-clock ns/token: ");
	T_CONTAINS(o.err, "whole-process (/ N2)");
	T_ASSERT(doc != NULL);
	if (!doc) {
		t_output_free(&o);
		return;
	}
	struct mw_error err;
	mw_error_clear(&err);
	int rc = mw_result_validate(doc, "gen record", &err);
	if (rc)
		mw_error_print(&err);
	T_EQ_INT(rc, 0);

	T_EQ_STR(json_string_value(t_json_get(doc, "engine", "kind", NULL)), "external");
	T_EQ_STR(json_string_value(t_json_get(doc, "engine", "program", "path")),
		 getenv("MEMWALL_BIN"));
	T_CONTAINS(json_string_value(t_json_get(doc, "engine", "program", "version")), "memwall ");
	T_EQ_INT(json_integer_value(t_json_get(doc, "external", "short_tokens", NULL)), 40);
	T_EQ_INT(json_integer_value(t_json_get(doc, "external", "long_tokens", NULL)), 160);
	const json_t *reps = t_json_get(doc, "external", "repetitions", NULL);
	T_EQ_INT(json_array_size(reps), 4);
	T_ASSERT(json_is_true(t_json_get(json_array_get(reps, 0), "warmup", NULL, NULL)));

	const json_t *rep;
	size_t i;
	double sum_tc = 0;
	json_array_foreach(reps, i, rep) {
		const json_t *l = json_object_get(rep, "long"), *s = json_object_get(rep, "short");
		/* Both raw runs are kept, with the expanded command and confirmed counts. */
		T_EQ_INT(json_integer_value(t_json_get(s, "adapter", "decode_tokens", NULL)), 40);
		T_EQ_INT(json_integer_value(t_json_get(l, "adapter", "decode_tokens", NULL)), 160);
		T_EQ_STR(json_string_value(json_array_get(json_object_get(l, "argv"), 5)), "160");
		T_EQ_STR(json_string_value(json_array_get(json_object_get(s, "argv"), 5)), "40");
		T_ASSERT(json_integer_value(t_json_get(l, "software", "task_clock_ns", NULL)) > 0);
		T_ASSERT(json_integer_value(t_json_get(l, "wall_ns", NULL, NULL)) > 0);
		check_counter(rep, "task_clock_ns", true, "task_clock_ns_per_token", 1);
		check_counter(rep, "page_faults", true, "page_faults_per_token", 1);
		check_counter(rep, "context_switches", true, "context_switches_per_token", 1);
		check_counter(rep, "engine_bytes", false, "engine_MB_per_token", 1e6);
		if (i > 0)
			sum_tc += num(json_object_get(rep, "figures"), "task_clock_ns_per_token");
	}
	const json_t *m = t_json_get(doc, "summary", "metrics", NULL);
	T_EQ_INT(json_integer_value(t_json_get(m, "task_clock_ns_per_token", "n", NULL)), 3);
	/* The differential figure (B2 - B1) / (N2 - N1) can come out negative on a loaded
	 * machine, so the tolerance is relative to its size, never negative. */
	T_NEAR(num(json_object_get(m, "task_clock_ns_per_token"), "mean"), sum_tc / 3,
	       1e-9 * fabs(sum_tc) + 1e-6);
	T_ASSERT(
	    json_is_true(t_json_get(m, "task_clock_ns_per_token_whole_process", "measured", NULL)));
	T_CONTAINS(json_string_value(t_json_get(m, "task_clock_ns_per_token", "unit", NULL)),
		   "(B2 - B1) / (N2 - N1)");
	T_CONTAINS(
	    json_string_value(t_json_get(m, "task_clock_ns_per_token_whole_process", "unit", NULL)),
	    "whole process: B2 / N2");
	/* memwall generate's summary line has no decode timing the pattern can read: tok/s is
	 * not measured (never computed from wall time under the engine's name). */
	T_ASSERT(json_is_false(t_json_get(m, "tok_per_s", "measured", NULL)));
	T_ASSERT(json_is_false(t_json_get(m, "engine_MB_per_token", "measured", NULL)));

	/* DRAM: measured and checked, or not measured with the probes' reason; never 0. */
	const json_t *dram = t_json_get(doc, "counters", "dram", NULL);
	if (json_is_true(json_object_get(dram, "measured"))) {
		T_ASSERT(json_is_true(t_json_get(m, "dram_read_MB_per_token", "measured", NULL)));
	} else {
		const char *why = json_string_value(json_object_get(dram, "reason"));
		T_ASSERT(why && strlen(why) > 10);
		T_EQ_STR(json_string_value(t_json_get(m, "dram_read_MB_per_token", "reason", NULL)),
			 why);
		T_ASSERT(json_is_null(
		    t_json_get(json_array_get(reps, 1), "long", "dram_read_bytes", NULL)));
		T_ASSERT(json_is_null(t_json_get(json_array_get(reps, 1), "figures",
					  "dram_read_MB_per_token", NULL)));
	}

	/* The drift probe runs around the repetitions, as with the builtin engine. */
	T_ASSERT(json_is_true(t_json_get(doc, "drift", "measured", NULL)));
	T_ASSERT(num(json_object_get(doc, "drift"), "before_gbps") > 0);
	T_ASSERT(num(json_object_get(doc, "drift"), "after_gbps") > 0);
	T_CONTAINS(o.err, "bandwidth probe before the runs: ");
	check_energy(doc);

	/* Engine-accounted bytes: the same arithmetic, on counts put into the raw records. Each
	 * run "loads" 10^6 bytes and then reads 3000 per prompt and decode token. */
	json_array_foreach(reps, i, rep) {
		json_object_set_new((json_t *)(uintptr_t)json_object_get(rep, "short"),
				    "engine_bytes", json_integer(1000000 + 3000 * 41));
		json_object_set_new((json_t *)(uintptr_t)json_object_get(rep, "long"),
				    "engine_bytes", json_integer(1000000 + 3000 * 161));
	}
	mw_error_clear(&err);
	T_EQ_INT(mw_result_validate(doc, "edited record", &err), MW_RESULT_INCONSISTENT);
	T_CONTAINS(err.field, "engine");
	T_EQ_INT(mw_result_derive(doc, "edited record", &err), 0);
	json_array_foreach(reps, i, rep) {
		check_counter(rep, "engine_bytes", false, "engine_bytes_per_token", 1);
		check_counter(rep, "engine_bytes", false, "engine_MB_per_token", 1e6);
		T_NEAR(num(json_object_get(rep, "figures"), "engine_bytes_per_token"), 3000, 1e-9);
		T_NEAR(num(json_object_get(rep, "figures"), "engine_bytes_per_token_whole_process"),
		       (1000000.0 + 3000 * 161) / 160, 1e-9);
	}
	m = t_json_get(doc, "summary", "metrics", NULL);
	T_NEAR(num(json_object_get(m, "engine_MB_per_token"), "mean"), 0.003, 1e-15);
	T_EQ_INT(mw_result_validate(doc, "re-derived record", &err), 0);
	json_decref(doc);
	t_output_free(&o);
}

/* The generic memwall-tokens line carries decode_ms and decode_steps: the mean time per
 * decode step is measured from them (the engine's own timings); percentiles are not, with a
 * reason naming what the adapter reads. */
static void test_timings(void)
{
	struct t_output o;
	json_t *doc = run_protocol(
		"timings",
		"{\"name\": \"timings-ext\", \"model\": {\"format\": \"llama2c\", \"synth\": "
		"{\"shape\": \"stories260K\"}},\n"
		" \"engine\": {\"kind\": \"external\", \"threads\": 1, \"command\": [\"memwall\", "
		"\"generate\", \"-m\", \"{model}\", \"-n\", \"{n}\", \"-t\", \"{threads}\", "
		"\"--temperature\", \"0\", \"--ids\", \"--report-line\"],\n"
		"  \"adapter\": {\"name\": \"memwall-tokens\", \"stream\": \"stderr\"}},\n"
		" \"decode_tokens\": 24, \"differential\": {\"short_tokens\": 8}, \"runs\": 2, "
		"\"warmup_runs\": 0, \"idle_baseline_ms\": 0, \"drift\": {\"probe_ms\": 0}}\n",
		"bin", &o);
	T_EQ_INT(o.status, 0);
	T_ASSERT(doc != NULL);
	if (!doc) {
		t_output_free(&o);
		return;
	}
	const json_t *reps = t_json_get(doc, "external", "repetitions", NULL), *rep;
	const json_t *m = t_json_get(doc, "summary", "metrics", NULL);
	size_t i;
	double sum = 0;
	json_array_foreach(reps, i, rep) {
		const json_t *ad = t_json_get(rep, "long", "adapter", NULL);
		double want = num(ad, "eval_ms") * 1e6 / num(ad, "eval_runs");
		T_ASSERT(want > 0);
		T_NEAR(num(json_object_get(rep, "figures"), "latency_mean_ns"), want, 1e-9 * want);
		sum += want;
	}
	T_NEAR(num(json_object_get(m, "latency_mean_ns"), "mean"), sum / 2, 1e-9 * sum);
	T_ASSERT(json_is_false(t_json_get(m, "latency_p99_ns", "measured", NULL)));
	T_CONTAINS(json_string_value(t_json_get(m, "latency_p50_ns", "reason", NULL)),
		   "the memwall-tokens adapter reads decode_ms over decode_steps");
	/* Turned off by the protocol: said so, not measured. */
	T_ASSERT(json_is_false(t_json_get(doc, "drift", "measured", NULL)));
	T_CONTAINS(json_string_value(t_json_get(doc, "drift", "reason", NULL)),
		   "drift.probe_ms is 0");
	struct mw_error err;
	mw_error_clear(&err);
	T_EQ_INT(mw_result_validate(doc, "timings record", &err), 0);
	json_decref(doc);
	t_output_free(&o);
}

/* measure.method "aios-whole-process": one process of N per repetition, the requested count
 * assumed, the first uncore_imc_free_running instance's reads / 2^20 / N under AIOS's name
 * only. The arithmetic is checked on known counts put into the raw records (no DRAM counters
 * here), with the statistics recomputed by the test: population sd (ddof 0), CV < 5 %. */
static const char aios_head[] =
	"{\"name\": \"aios-ext\", \"model\": {\"format\": \"llama2c\", \"synth\": "
	"{\"shape\": \"stories260K\"}},\n"
	" \"engine\": {\"kind\": \"external\", \"threads_rule\": \"cpu-count-halved\", "
	"\"command\": [\"memwall\", \"generate\", \"-m\", \"{model}\", \"-n\", \"{n}\", "
	"\"-t\", \"{threads}\", \"--temperature\", \"0\", \"--ids\"],\n"
	"  \"adapter\": {\"name\": \"memwall-tokens\", \"stream\": \"stderr\"}},\n"
	" \"measure\": {\"method\": \"aios-whole-process\"},\n"
	" \"decode_tokens\": 24, \"runs\": 3, \"warmup_runs\": 1, \"idle_baseline_ms\": 0, "
	"\"drift\": {\"probe_ms\": 0}";

static void test_aios_method(void)
{
	struct t_output o;
	char body[2048];
	snprintf(body, sizeof(body), "%s}\n", aios_head);
	json_t *doc = run_protocol("aios", body, "bin", &o);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.err, "24 tokens assumed (AIOS's method)");
	T_ASSERT(doc != NULL);
	if (!doc) {
		t_output_free(&o);
		return;
	}
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	T_EQ_INT(json_integer_value(t_json_get(doc, "engine", "threads", NULL)),
		 online >= 2 ? online / 2 : 1);
	T_EQ_STR(json_string_value(t_json_get(doc, "external", "method", NULL)),
		 "aios-whole-process");
	json_t *reps = (json_t *)(uintptr_t)t_json_get(doc, "external", "repetitions", NULL), *rep;
	T_EQ_INT(json_array_size(reps), 4);
	/* memwall's own metrics are never filled by AIOS's method. */
	const json_t *m = t_json_get(doc, "summary", "metrics", NULL);
	T_ASSERT(json_is_false(t_json_get(m, "dram_MB_per_token", "measured", NULL)));
	T_CONTAINS(json_string_value(t_json_get(m, "dram_MB_per_token", "reason", NULL)),
		   "AIOS's method");
	T_ASSERT(t_json_get(doc, "summary", "aios_method", "aios_method_MB_per_token") != NULL);

	/* Known bytes: the first free-running instance read 2^20 x (2000 + 10 i) bytes. */
	size_t i;
	double v[4], sum = 0;
	json_array_foreach(reps, i, rep) {
		json_t *l = json_object_get(rep, "long");
		T_ASSERT(json_is_null(json_object_get(rep, "short")));
		T_ASSERT(json_is_true(json_object_get(l, "valid")));
		double bytes = 1048576.0 * (2000 + 10 * (double)i);
		json_object_set_new(l, "aios_counter", json_pack("{s:s, s:I, s:n}", "pmu",
				    "uncore_imc_free_running_0", "read_bytes", (json_int_t)bytes,
				    "reason"));
		v[i] = bytes / 1048576.0 / 24;
		if (i > 0)
			sum += v[i];
	}
	struct mw_error err;
	mw_error_clear(&err);
	T_EQ_INT(mw_result_validate(doc, "edited aios record", &err), MW_RESULT_INCONSISTENT);
	T_EQ_INT(mw_result_derive(doc, "edited aios record", &err), 0);
	const json_t *a = t_json_get(doc, "summary", "aios_method", "aios_method_MB_per_token");
	double mean = sum / 3, ss = 0;
	for (i = 1; i < 4; i++) {
		T_NEAR(num(t_json_get(json_array_get(reps, i), "figures", NULL, NULL),
			   "aios_method_MB_per_token"), v[i], 1e-9);
		ss += (v[i] - mean) * (v[i] - mean);
	}
	T_EQ_INT(json_integer_value(json_object_get(a, "n")), 3);
	T_NEAR(num(a, "mean"), mean, 1e-9);
	T_NEAR(num(a, "sd_population"), sqrt(ss / 3), 1e-9);
	T_NEAR(num(a, "cv_pct_population"), 100 * sqrt(ss / 3) / mean, 1e-9);
	T_ASSERT(json_is_true(json_object_get(a, "pass")) == (100 * sqrt(ss / 3) / mean < 5));
	T_EQ_STR(json_string_value(t_json_get(doc, "summary", "aios_method", "counter")),
		 "uncore_imc_free_running_0");
	m = t_json_get(doc, "summary", "metrics", NULL);
	T_ASSERT(json_is_false(t_json_get(m, "dram_MB_per_token", "measured", NULL)));
	T_EQ_INT(mw_result_validate(doc, "re-derived aios record", &err), 0);
	json_decref(doc);
	t_output_free(&o);

	/* Refusals: AIOS's method is for external programs, with one length. */
	static const struct {
		const char *tail, *want;
	} bad[] = {
		{ ", \"differential\": {\"short_tokens\": 4}}", "AIOS's method runs one length" },
		{ ", \"allow_short\": true}", "AIOS's method runs one length" },
	};
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(body, sizeof(body), "%s%s\n", aios_head, bad[i].tail);
		doc = run_protocol("aios-bad", body, NULL, &o);
		T_EQ_INT(o.status, 2);
		T_CONTAINS(o.err, bad[i].want);
		json_decref(doc);
		t_output_free(&o);
	}
}

/* The program prints no token line: the run is invalid, stops, and says why and what to do. */
static void test_no_token_line(void)
{
	struct t_output o;
	json_t *doc = run_protocol(
		"noline",
		"{\"name\": \"noline\", \"model\": {\"format\": \"llama2c\", \"synth\": "
		"{\"shape\": \"stories260K\"}}, \"engine\": {\"kind\": \"external\", \"command\": "
		"[\"memwall\", \"generate\", \"-m\", \"{model}\", \"-n\", \"{n}\", \"--ids\"], "
		"\"adapter\": {\"name\": \"memwall-tokens\", \"stream\": \"both\"}}, "
		"\"decode_tokens\": 8, \"runs\": 2, \"idle_baseline_ms\": 0, \"drift\": {\"probe_ms\": 0}}",
		"bin", &o);
	T_EQ_INT(o.status, 1);
	T_CONTAINS(o.err, "repetition 1 (warm-up), short run (2 tokens) is invalid: no "
			  "'memwall-tokens: decode=N ...' line in the output");
	T_CONTAINS(o.err, "make the program print one");
	T_CONTAINS(o.err, "(incomplete)");
	T_ASSERT(doc != NULL);
	if (doc) {
		struct mw_error err;
		T_EQ_INT(mw_result_validate(doc, "noline record", &err), 0);
		T_ASSERT(json_is_false(json_object_get(doc, "complete")));
		T_CONTAINS(json_string_value(json_object_get(doc, "incomplete_reason")),
			   "no 'memwall-tokens");
		const json_t *rep =
		    json_array_get(t_json_get(doc, "external", "repetitions", NULL), 0);
		T_ASSERT(json_is_false(t_json_get(rep, "short", "valid", NULL)));
		T_ASSERT(json_is_null(t_json_get(rep, "short", "adapter", "decode_tokens")));
		T_ASSERT(json_is_null(json_object_get(rep, "long")));
		T_EQ_INT(json_array_size(t_json_get(doc, "external", "repetitions", NULL)), 1);
		T_EQ_STR(json_string_value(t_json_get(doc, "acceptance", "status", NULL)), "fail");
		json_decref(doc);
	}
	t_output_free(&o);
}

/* printf as a stand-in engine whose count falls short of the target (an EOS). */
static void test_short_count(void)
{
	/* A macro, so that snprintf sees a literal format at every optimization level. */
#define SHORT_FMT \
		"{\"name\": \"eos%s\", \"model\": {\"format\": \"llama2c\", \"synth\": " \
		"{\"shape\": \"stories260K\"}}, \"engine\": {\"kind\": \"external\", \"command\": " \
		"[\"printf\", \"memwall-tokens: decode=3\\\\n%%.0s%%.0s\", \"{n}\", \"{model}\"], " \
		"\"adapter\": {\"name\": \"memwall-tokens\", \"stream\": \"stdout\"}}, " \
		"\"decode_tokens\": 16, \"runs\": 1, \"warmup_runs\": 0, \"idle_baseline_ms\": 0, \"drift\": {\"probe_ms\": 0}%s}"
	char body[1024];
	struct t_output o;
	snprintf(body, sizeof(body), SHORT_FMT, "", "");
	json_t *doc = run_protocol("eos", body, NULL, &o);
	T_EQ_INT(o.status, 1);
	T_CONTAINS(o.err, "short run (4 tokens) is invalid");
	T_CONTAINS(o.err, "3");
	json_decref(doc);
	t_output_free(&o);

	/* Allowed: both runs are valid, but 3 - 3 tokens give no differential figure. */
	snprintf(body, sizeof(body), SHORT_FMT, "-allowed", ", \"allow_short\": true");
	doc = run_protocol("eos-allowed", body, NULL, &o);
	T_OK(o, "run");
	T_ASSERT(doc != NULL);
	if (doc) {
		const json_t *rep =
		    json_array_get(t_json_get(doc, "external", "repetitions", NULL), 0);
		T_ASSERT(json_is_true(t_json_get(rep, "long", "valid", NULL)));
		T_EQ_INT(json_integer_value(t_json_get(rep, "long", "adapter", "decode_tokens")),
			 3);
		T_ASSERT(json_is_null(t_json_get(rep, "figures", "task_clock_ns_per_token", NULL)));
		json_decref(doc);
	}
	t_output_free(&o);
}

/* The prompt is one argv element, byte for byte: no shell sees it. */
static void test_injection(void)
{
	char canary[300], made[300], body[6000];
	struct t_output o;
	snprintf(canary, sizeof(canary), "%s/canary", scratch);
	snprintf(made, sizeof(made), "%s/made", scratch);
	t_write_file(canary, "still here\n");
	char prompt[2200];
	snprintf(prompt, sizeof(prompt), "Hi; rm -f %s; $(touch %s) `touch %s` | tee %s && '\\\"",
		 canary, made, made, made);
	/* prompt as a JSON string: escape the backslash and the quote */
	char jprompt[4500];
	size_t j = 0;
	for (const char *c = prompt; *c && j < sizeof(jprompt) - 3; c++) {
		if (*c == '\\' || *c == '"')
			jprompt[j++] = '\\';
		jprompt[j++] = *c;
	}
	jprompt[j] = '\0';
	snprintf(body, sizeof(body),
		 "{\"name\": \"inject\", \"model\": {\"format\": \"llama2c\", \"synth\": "
		 "{\"shape\": \"stories260K\"}}, \"prompt\": \"%s\", \"engine\": {\"kind\": "
		 "\"external\", \"command\": [\"printf\", \"memwall-tokens: decode=%%s\\\\n[%%s]\\\\n"
		 "%%.0s\", \"{n}\", \"{prompt}\", \"{model}\"], \"adapter\": {\"name\": "
		 "\"memwall-tokens\", \"stream\": \"stdout\"}}, \"decode_tokens\": 8, \"runs\": 1, "
		 "\"warmup_runs\": 0, \"idle_baseline_ms\": 0, \"drift\": {\"probe_ms\": 0}}", jprompt);
	json_t *doc = run_protocol("inject", body, NULL, &o);
	T_OK(o, "run");
	T_ASSERT(access(canary, F_OK) == 0);
	T_ASSERT(access(made, F_OK) != 0);
	T_ASSERT(doc != NULL);
	if (doc) {
		const json_t *argv =
		    t_json_get(json_array_get(t_json_get(doc, "external", "repetitions", NULL), 0),
			       "long", "argv", NULL);
		T_EQ_INT(json_array_size(argv), 5);
		T_EQ_STR(json_string_value(json_array_get(argv, 3)), prompt);
		json_decref(doc);
	}
	t_output_free(&o);
}

/* engine.cpus: the child pins itself before exec, so the program runs on those CPUs only. A
 * shell stands in for the engine here to read its own /proc status. */
static void test_pinning(void)
{
	cpu_set_t set;
	int cpu = 0;
	char body[2048], want[64];
	struct t_output o;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
			cpu++;
	snprintf(body, sizeof(body),
		 "{\"name\": \"pin\", \"model\": {\"format\": \"llama2c\", \"synth\": "
		 "{\"shape\": \"stories260K\"}}, \"engine\": {\"kind\": \"external\", \"cpus\": "
		 "[%d], \"command\": [\"sh\", \"-c\", \"grep Cpus_allowed_list /proc/self/status "
		 ">&2; echo memwall-tokens: decode=$0 >&2; echo threads=$2 >&2\", \"{n}\", "
		 "\"{model}\", \"{threads}\"], \"adapter\": {\"name\": \"memwall-tokens\"}}, "
		 "\"decode_tokens\": 8, \"runs\": 1, \"warmup_runs\": 0, \"idle_baseline_ms\": 0, \"drift\": {\"probe_ms\": 0}}",
		 cpu);
	json_t *doc = run_protocol("pin", body, NULL, &o);
	T_OK(o, "run");
	T_ASSERT(doc != NULL);
	if (doc) {
		const char *tail = json_string_value(
		    t_json_get(json_array_get(t_json_get(doc, "external", "repetitions", NULL), 0),
			       "long", "stderr_tail", NULL));
		snprintf(want, sizeof(want), "Cpus_allowed_list:\t%d\n", cpu);
		T_CONTAINS(tail, want);
		/* {threads} defaults to one per pinned CPU. */
		T_CONTAINS(tail, "threads=1\n");
		json_decref(doc);
	}
	t_output_free(&o);
}

static void test_refusals(void)
{
	struct t_output o;
	const char *head = "{\"name\": \"r\", \"model\": {\"format\": \"llama2c\", \"synth\": "
			   "{\"shape\": \"stories260K\"}}, \"decode_tokens\": 8, \"runs\": 1, ";
	char body[1024];
	static const struct {
		const char *engine, *want;
		int status;
	} cases[] = {
		{ "\"engine\": {\"kind\": \"external\", \"command\": [\"llama-completion\", \"-m\", "
		  "\"{model}\", \"-n\", \"{n}\"]}", "engine.adapter: an external engine needs an "
		  "output adapter", 2 },
		{ "\"engine\": {\"kind\": \"external\", \"command\": [\"x\", \"-m\", \"{model}\", "
		  "\"-n\", \"{nn}\"], \"adapter\": {\"name\": \"llama-completion\"}}",
		  "engine.command[4]: unknown placeholder '{nn}'", 2 },
		{ "\"engine\": {\"kind\": \"external\", \"command\": [\"x\", \"-m\", \"{model}\"], "
		  "\"adapter\": {\"name\": \"llama-completion\"}}", "no argument holds {n}", 2 },
		{ "\"engine\": {\"kind\": \"external\", \"command\": [\"x\", \"-m\", \"{model}\", "
		  "\"-n\", \"{n}\"], \"adapter\": {\"name\": \"llama-complete\"}}",
		  "unknown adapter \"llama-complete\"", 2 },
		{ "\"differential\": {\"short_tokens\": 8}, \"engine\": {\"kind\": \"external\", "
		  "\"command\": [\"x\", \"-m\", \"{model}\", \"-n\", \"{n}\"], \"adapter\": "
		  "{\"name\": \"llama-completion\"}}", "differential.short_tokens: 8 is not below", 2 },
		{ "\"differential\": {\"short_tokens\": 2}, \"engine\": {\"kind\": \"builtin\"}",
		  "differential: only external engines", 2 },
		{ "\"engine\": {\"kind\": \"external\", \"command\": [\"no-such-llama-xyz\", \"-m\", "
		  "\"{model}\", \"-n\", \"{n}\"], \"adapter\": {\"name\": \"llama-completion\"}}",
		  "'no-such-llama-xyz' is not in PATH: pass --llama-bin", 3 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(body, sizeof(body), "%s%s}", head, cases[i].engine);
		json_t *doc = run_protocol("refused", body, NULL, &o);
		T_EQ_INT(o.status, cases[i].status);
		T_CONTAINS(o.err, cases[i].want);
		T_ASSERT(doc == NULL);
		json_decref(doc);
		t_output_free(&o);
	}
}

int main(void)
{
	char cache[300];
	snprintf(scratch, sizeof(scratch), "/tmp/mw-test-external-XXXXXX");
	t_mkdtemp(scratch);
	snprintf(cache, sizeof(cache), "%s/cache", scratch);
	setenv("MEMWALL_CACHE_DIR", cache, 1);
	test_generate();
	test_timings();
	test_aios_method();
	test_no_token_line();
	test_short_count();
	test_injection();
	test_pinning();
	test_refusals();
	return t_done_rm(scratch, 0);
}
