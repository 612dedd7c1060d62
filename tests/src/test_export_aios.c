/* tests/src/test_export_aios.c: `memwall export aios` (src/record/export_aios.c): the record as
 * AIOS's validation/baseline.py v1.4 writes its baseline, checked against that shape and every
 * value against arithmetic done here on the record's raw data.
 *
 * The shape below is written from ../shared/reference/aios/submission.md (the facts recorded
 * about AIOS's baseline.py): one key "baseline"; its fields in the dataclass's order; the
 * hardware's seven and each run's nine; MB = MiB (bytes / 2^20), GB = GiB; the CV a fraction
 * (population sd, ddof 0, over the mean); pass when it is below 5 %, on tok/s when MB/token
 * was not measured. With --submission the test reads submission.md itself and checks the
 * field lists it gives against the output (skips, 77, without ../shared); without it, the
 * same checks run on the lists written here. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export_aios.h"
#include "fixture_result.h"
#include "test.h"
#include "values.h"

#define MIB 1048576.0
#define GIB 1073741824.0

static const char *const baseline_keys[] = {
	"model_path", "model_size_gb", "hardware", "runs", "mb_per_token_mean",
	"mb_per_token_stddev", "mb_per_token_cv", "tokens_per_sec_mean", "tokens_per_sec_stddev",
	"pass_criterion_met", "perf_available", "counter_used", "notes", NULL,
};
static const char *const hardware_keys[] = {
	"cpu_model", "cpu_cores", "ram_gb", "l3_cache_mb", "architecture", "os", "kernel", NULL,
};
static const char *const run_keys[] = {
	"run_index", "mb_per_token", "tokens_per_sec", "total_tokens", "dram_reads_gb",
	"llc_miss_rate", "duration_sec", "perf_available", "tokens_generated_ok", NULL,
};

/* o's keys are exactly keys, in that order. */
static void check_keys(const json_t *o, const char *const *keys, const char *what)
{
	const char *k;
	json_t *v;
	size_t i = 0;
	T_ASSERT(json_is_object(o));
	json_object_foreach((json_t *)(uintptr_t)o, k, v) {
		if (!keys[i] || strcmp(k, keys[i]))
			T_FAIL_AT(__FILE__, __LINE__, "%s: key %zu is \"%s\", want \"%s\"", what, i,
				  k, keys[i] ? keys[i] : "(none)");
		i += keys[i] != NULL;
	}
	if (keys[i])
		T_FAIL_AT(__FILE__, __LINE__, "%s: \"%s\" is missing", what, keys[i]);
}

static bool num_or_null(const json_t *v)
{
	return json_is_number(v) || json_is_null(v);
}

static void check_shape(const json_t *out)
{
	T_EQ_INT(json_object_size(out), 1);
	const json_t *b = json_object_get(out, "baseline"), *x;
	size_t i;
	check_keys(b, baseline_keys, "baseline");
	check_keys(json_object_get(b, "hardware"), hardware_keys, "hardware");
	T_ASSERT(json_is_array(json_object_get(b, "runs")));
	json_array_foreach(json_object_get(b, "runs"), i, x) {
		check_keys(x, run_keys, "runs[]");
		T_ASSERT(json_is_integer(json_object_get(x, "run_index")));
		T_ASSERT(num_or_null(json_object_get(x, "mb_per_token")));
		T_ASSERT(json_is_boolean(json_object_get(x, "perf_available")));
	}
	T_ASSERT(json_is_string(json_object_get(b, "model_path")) ||
		 json_is_null(json_object_get(b, "model_path")));
	T_ASSERT(json_is_boolean(json_object_get(b, "pass_criterion_met")));
	T_ASSERT(json_is_boolean(json_object_get(b, "perf_available")));
	static const char *const nums[] = { "model_size_gb", "mb_per_token_mean",
					    "mb_per_token_stddev", "mb_per_token_cv",
					    "tokens_per_sec_mean", "tokens_per_sec_stddev" };
	for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++)
		T_ASSERT(num_or_null(json_object_get(b, nums[k])));
	json_array_foreach(json_object_get(b, "notes"), i, x)
		T_ASSERT(json_is_string(x));
}

static double num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* |got - want rounded to d decimals| within floating error; null when want is NaN. */
static void check_rounded(const json_t *b, const char *key, double want, int d)
{
	const json_t *v = json_object_get(b, key);
	if (isnan(want)) {
		if (!json_is_null(v))
			T_FAIL_AT(__FILE__, __LINE__, "%s: want null", key);
		return;
	}
	double p = pow(10, d);
	T_NEAR(json_number_value(v), round(want * p) / p, 1e-9 * (1 + fabs(want)));
}

/* What the runs say, computed here from each measured run's raw windows. */
struct want {
	size_t n;
	double mb[16], tps[16], ns[16], tokens[16];
};

static struct want want_of(const json_t *doc)
{
	struct want w = { 0 };
	const json_t *run;
	size_t i;
	json_array_foreach(json_object_get(doc, "runs"), i, run) {
		if (json_is_true(json_object_get(run, "warmup")))
			continue;
		const json_t *d = json_object_get(run, "decode"), *idle = json_object_get(run, "idle");
		double rate = num(idle, "dram_read_bytes") / num(idle, "window_ns");
		w.tokens[w.n] = num(d, "tokens");
		w.ns[w.n] = num(d, "ns");
		w.tps[w.n] = w.tokens[w.n] / (w.ns[w.n] * 1e-9);
		/* memwall's net decode read bytes per token, in AIOS's MB (MiB) */
		w.mb[w.n] = (num(d, "dram_read_bytes") - rate * w.ns[w.n]) / w.tokens[w.n] / MIB;
		w.n++;
	}
	return w;
}

/* numpy's mean and std (ddof 0). */
static void pop(const double *v, size_t n, double *mean, double *sd)
{
	double ss;
	t_mean_ss(v, n, mean, &ss);
	*sd = sqrt(ss / (double)n);
}

static json_t *export(const json_t *doc)
{
	json_t *out = NULL;
	struct mw_error err;
	mw_error_clear(&err);
	int rc = mw_export_aios(doc, "fixture", &out, &err);
	if (rc)
		fprintf(stderr, "export: %s\n", err.text);
	T_EQ_INT(rc, 0);
	if (out)
		check_shape(out);
	return out;
}

static bool notes_contain(const json_t *b, const char *needle)
{
	const json_t *x;
	size_t i;
	json_array_foreach(json_object_get(b, "notes"), i, x)
		if (strstr(json_string_value(x), needle))
			return true;
	return false;
}

/* The machine fields baseline.py reports, which the fixture does not set. */
static void add_machine(json_t *doc)
{
	json_t *m = json_object_get(doc, "machine");
	json_object_set_new(m, "cpu_vendor", json_string("GenuineIntel"));
	json_object_set_new(m, "physical_cores", json_integer(2));
	json_object_set_new(m, "os", json_string("Debian GNU/Linux 12 (bookworm)"));
	json_object_set_new(m, "kernel", json_pack("{s:s, s:s, s:s}", "release", "6.1.0-test",
						   "version", "#1 SMP", "machine", "x86_64"));
	json_object_set_new(m, "caches", json_pack("[{s:i, s:s, s:i}, {s:i, s:s, s:i}]", "level", 1,
						   "type", "Data", "size_bytes", 49152, "level", 3,
						   "type", "Unified", "size_bytes", 33554432));
	json_t *model = json_object_get(doc, "model");
	json_object_set_new(model, "path", json_string("/models/m.gguf"));
	json_object_set_new(model, "file_bytes", json_integer(3 * 1073741824LL + 12345));
	json_object_set_new(json_object_get(json_object_get(doc, "protocol"), "document"),
			    "decode_tokens", json_integer(16));
}

static void check_hardware_record(json_t *doc)
{
	struct want w = want_of(doc);
	json_t *out = export(doc);
	const json_t *b = json_object_get(out, "baseline"), *hw = json_object_get(b, "hardware");
	const json_t *x;
	size_t i;
	T_EQ_STR(json_string_value(json_object_get(b, "model_path")), "/models/m.gguf");
	check_rounded(b, "model_size_gb", (3 * 1073741824.0 + 12345) / GIB, 3);
	T_EQ_STR(json_string_value(json_object_get(hw, "cpu_model")), "CPU Alpha");
	T_EQ_INT(json_integer_value(json_object_get(hw, "cpu_cores")), 2);
	check_rounded(hw, "ram_gb", 25276514304.0 / GIB, 1);
	T_NEAR(num(hw, "l3_cache_mb"), 33554432.0 / MIB, 0);
	T_EQ_STR(json_string_value(json_object_get(hw, "architecture")), "x86_intel");
	T_EQ_STR(json_string_value(json_object_get(hw, "os")), "Linux");
	T_EQ_STR(json_string_value(json_object_get(hw, "kernel")), "6.1.0-test");

	T_EQ_INT(json_array_size(json_object_get(b, "runs")), w.n);
	json_array_foreach(json_object_get(b, "runs"), i, x) {
		T_EQ_INT(json_integer_value(json_object_get(x, "run_index")), i);
		T_NEAR(num(x, "mb_per_token"), w.mb[i], 1e-9 * w.mb[i]);
		T_NEAR(num(x, "tokens_per_sec"), w.tps[i], 1e-9 * w.tps[i]);
		T_EQ_INT(json_integer_value(json_object_get(x, "total_tokens")), w.tokens[i]);
		/* GB = GiB: bytes / 2^30, the same bytes as mb_per_token * tokens * 2^20 */
		T_NEAR(num(x, "dram_reads_gb"), w.mb[i] * w.tokens[i] * MIB / GIB, 1e-9);
		T_ASSERT(json_is_null(json_object_get(x, "llc_miss_rate")));
		T_NEAR(num(x, "duration_sec"), w.ns[i] * 1e-9, 1e-12);
		T_ASSERT(json_is_true(json_object_get(x, "perf_available")));
		T_ASSERT(json_is_true(json_object_get(x, "tokens_generated_ok"))); /* 16 of 16 */
	}
	double mean, sd, tmean, tsd;
	pop(w.mb, w.n, &mean, &sd);
	pop(w.tps, w.n, &tmean, &tsd);
	check_rounded(b, "mb_per_token_mean", mean, 3);
	check_rounded(b, "mb_per_token_stddev", sd, 3);
	check_rounded(b, "mb_per_token_cv", sd / mean, 4);
	check_rounded(b, "tokens_per_sec_mean", tmean, 2);
	check_rounded(b, "tokens_per_sec_stddev", tsd, 2);
	T_EQ_INT(json_is_true(json_object_get(b, "pass_criterion_met")), sd / mean < 0.05);
	T_ASSERT(json_is_true(json_object_get(b, "perf_available")));
	T_CONTAINS(json_string_value(json_object_get(b, "counter_used")), "intel_imc_free");
	T_CONTAINS(json_string_value(json_object_get(b, "counter_used")),
		   "uncore_imc_free_running_0");
	T_ASSERT(notes_contain(b, "MiB (2^20 bytes)"));
	T_ASSERT(notes_contain(b, "not verified"));
	T_ASSERT(notes_contain(b, "llc_miss_rate not measured"));
	T_ASSERT(!notes_contain(b, "SIMULATED"));

	/* The comment: AIOS's header in order, the figures with their provenance, the JSON. */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	mw_export_aios_comment(f, doc, out);
	fclose(f);
	const char *h = strstr(buf, "Hardware: CPU Alpha"), *os = strstr(buf, "OS: Linux");
	const char *mo = strstr(buf, "Model: "), *av = strstr(buf, "AIOS version: ");
	T_ASSERT(h && os && mo && av && h < os && os < mo && mo < av);
	T_CONTAINS(buf, "kernel 6.1.0-test");
	T_CONTAINS(buf, "| hardware (intel_imc_free), not verified");
	char figure[64];
	snprintf(figure, sizeof(figure), "| %.6g ± ", round(mean * 1e3) / 1e3);
	T_CONTAINS(buf, figure);
	const char *open = strstr(buf, "```json\n"), *close = open ? strstr(open + 8, "\n```") : NULL;
	T_ASSERT(open && close);
	if (open && close) {
		/* the same text as the plain export writes (its numbers to 15 digits) */
		json_t *att = json_loadb(open + 8, (size_t)(close - open - 8), 0, NULL);
		char *plain = json_dumps(out, MW_EXPORT_AIOS_JSON_FLAGS);
		json_t *again = json_loads(plain ? plain : "", 0, NULL);
		T_ASSERT(att && again && json_equal(att, again));
		json_decref(att);
		json_decref(again);
		free(plain);
	}
	free(buf);
	json_decref(out);

	/* 16 tokens of 20 asked for is under 90 %: short, and said. */
	json_object_set_new(json_object_get(json_object_get(doc, "protocol"), "document"),
			    "decode_tokens", json_integer(20));
	out = export(doc);
	json_array_foreach(json_object_get(json_object_get(out, "baseline"), "runs"), i, x)
		T_ASSERT(json_is_false(json_object_get(x, "tokens_generated_ok")));
	T_ASSERT(notes_contain(json_object_get(out, "baseline"), "3 run(s) produced fewer tokens"));
	json_decref(out);
	json_object_set_new(json_object_get(json_object_get(doc, "protocol"), "document"),
			    "decode_tokens", json_integer(16));
}

/* DRAM counts that no hardware made: never a measured mb_per_token. tok/s stays, and the pass
 * criterion is on its CV, as baseline.py's is without a counter. */
static void check_no_dram(const json_t *doc, const char *why)
{
	struct want w = want_of(doc);
	json_t *out = export(doc);
	const json_t *b = json_object_get(out, "baseline"), *x;
	size_t i;
	json_array_foreach(json_object_get(b, "runs"), i, x) {
		T_ASSERT(json_is_null(json_object_get(x, "mb_per_token")));
		T_ASSERT(json_is_null(json_object_get(x, "dram_reads_gb")));
		T_ASSERT(json_is_false(json_object_get(x, "perf_available")));
		T_NEAR(num(x, "tokens_per_sec"), w.tps[i], 1e-9 * w.tps[i]);
	}
	T_ASSERT(json_is_null(json_object_get(b, "mb_per_token_mean")));
	T_ASSERT(json_is_null(json_object_get(b, "mb_per_token_cv")));
	T_ASSERT(json_is_false(json_object_get(b, "perf_available")));
	T_ASSERT(json_is_null(json_object_get(b, "counter_used")));
	double tmean, tsd;
	pop(w.tps, w.n, &tmean, &tsd);
	T_EQ_INT(json_is_true(json_object_get(b, "pass_criterion_met")), tsd / tmean < 0.05);
	T_ASSERT(notes_contain(b, why));
	T_ASSERT(notes_contain(b, "engine-accounted"));
	json_decref(out);
}

static void check_refused(const json_t *doc, const char *needle)
{
	json_t *out = NULL;
	struct mw_error err;
	mw_error_clear(&err);
	T_EQ_INT(mw_export_aios(doc, "fixture", &out, &err), -EINVAL);
	T_ASSERT(out == NULL);
	T_CONTAINS(err.text, needle);
}

static const json_t *hw_field(const json_t *out, const char *key)
{
	return json_object_get(json_object_get(json_object_get(out, "baseline"), "hardware"), key);
}

static void check_variants(json_t *doc)
{
	json_t *m = json_object_get(doc, "machine");
	json_t *k = json_object_get(m, "kernel");
	json_object_set_new(m, "cpu_vendor", json_string("AuthenticAMD"));
	json_t *out = export(doc);
	T_EQ_STR(json_string_value(hw_field(out, "architecture")), "x86_amd");
	json_decref(out);
	json_object_set_new(k, "machine", json_string("aarch64"));
	out = export(doc);
	T_EQ_STR(json_string_value(hw_field(out, "architecture")), "arm");
	json_decref(out);
	/* A VM without an L3 in sysfs: null and named, never 0.0 */
	json_object_del(m, "caches");
	out = export(doc);
	T_ASSERT(json_is_null(hw_field(out, "l3_cache_mb")));
	T_ASSERT(notes_contain(json_object_get(out, "baseline"), "l3_cache_mb"));
	/* A backtick in the record's text cannot end the comment's code block. */
	json_object_set_new(json_object_get(doc, "model"), "path", json_string("/m/```x.gguf"));
	char *buf = NULL;
	size_t len = 0, fences = 0;
	json_decref(out);
	out = export(doc);
	FILE *f = open_memstream(&buf, &len);
	mw_export_aios_comment(f, doc, out);
	fclose(f);
	for (const char *p = buf; (p = strstr(p, "```")); p += 3)
		fences++;
	T_EQ_INT(fences, 2);
	free(buf);
	json_decref(out);
}

/* --submission: the field lists as submission.md gives them. */
static void names_after(const char *line, char names[][64], size_t *n)
{
	for (const char *p = line; (p = strchr(p, '`'));) {
		const char *e = strchr(p + 1, '`');
		if (!e)
			break;
		snprintf(names[(*n)++], 64, "%.*s", (int)(e - p - 1), p + 1);
		p = e + 1;
	}
}

static bool in(char names[][64], size_t n, const char *k)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], k))
			return true;
	return false;
}

static void check_submission_md(const json_t *out)
{
	const char *path = t_shared("reference/aios/submission.md");
	FILE *f = fopen(path, "r");
	char line[1024], top[64][64], hw[64][64], run[64][64];
	size_t nt = 0, nh = 0, nr = 0;
	int section = 0, bullet = 0; /* bullet: 1 top-level fields, 2 hardware, 3 runs */
	bool mib = false;
	T_ASSERT(f != NULL);
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "## ", 3)) {
			section = strstr(line, "The JSON that validation/baseline.py writes") != NULL;
			continue;
		}
		if (!section)
			continue;
		if (strstr(line, "MiB (bytes / 2^20)"))
			mib = true;
		if (!strncmp(line, "- ", 2))
			bullet = !strncmp(line, "- `hardware`:", 13) ? 2
				 : !strncmp(line, "- `runs`:", 9) ? 3 : 1;
		else if (strncmp(line, "  ", 2))
			continue; /* neither a bullet nor its continuation */
		const char *rest = line;
		if (bullet >= 2 && !strncmp(line, "- ", 2)) {
			/* "- `hardware`: `cpu_model`, ...": a field of the baseline, then its own */
			snprintf(top[nt++], 64, "%s", bullet == 2 ? "hardware" : "runs");
			rest = strchr(line, ':') + 1;
		}
		if (bullet == 2)
			names_after(rest, hw, &nh);
		else if (bullet == 3)
			names_after(rest, run, &nr);
		else
			names_after(rest, top, &nt);
	}
	if (f)
		fclose(f);
	T_ASSERT(mib); /* the unit the conversion assumes */
	const json_t *b = json_object_get(out, "baseline");
	T_EQ_INT(json_object_size(b), nt);
	for (size_t i = 0; i < nt; i++)
		if (!json_object_get(b, top[i]))
			T_FAIL_AT(__FILE__, __LINE__, "submission.md's %s is not in the output",
				  top[i]);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)(uintptr_t)b, k, v)
		T_ASSERT(in(top, nt, k));
	json_object_foreach(json_object_get(b, "hardware"), k, v)
		T_ASSERT(in(hw, nh, k));
	T_EQ_INT(json_object_size(json_object_get(b, "hardware")), nh);
	json_object_foreach(json_array_get(json_object_get(b, "runs"), 0), k, v)
		T_ASSERT(in(run, nr, k));
	T_EQ_INT(json_object_size(json_array_get(json_object_get(b, "runs"), 0)), nr);
}

int main(int argc, char **argv)
{
	struct t_fx_spec sp = { .protocol = "aios-export", .cpu = "CPU Alpha", .runs = 3,
			      .warmups = 1, .tokens = 16, .latency_ns = 2e6, .jitter = 0.03,
			      .dram_bytes = 5e6, .instances = 2, .seed = 11 };
	json_t *doc = t_fx_record(&sp);
	add_machine(doc);
	if (argc > 1 && !strcmp(argv[1], "--submission")) {
		json_t *out = export(doc);
		check_submission_md(out);
		json_decref(out);
		json_decref(doc);
		return t_done();
	}
	check_hardware_record(doc);

	json_t *dram = json_object_get(json_object_get(doc, "counters"), "dram");
	json_object_set_new(dram, "layer", json_string("sim"));
	check_no_dram(doc, "SIMULATED");
	json_object_del(dram, "layer");

	check_variants(doc);

	json_object_set_new(doc, "kind", json_string("reference"));
	check_refused(doc, "reference record");
	json_object_set_new(doc, "kind", json_string("run"));
	json_object_set_new(doc, "variants", json_pack("[{s:s}]", "name", "a"));
	check_refused(doc, "variants");
	json_object_del(doc, "variants");
	json_t *run;
	size_t i;
	json_array_foreach(json_object_get(doc, "runs"), i, run)
		json_object_set_new(run, "warmup", json_true());
	check_refused(doc, "no complete measured run");
	json_decref(doc);

	sp.dram_bytes = 0;
	doc = t_fx_record(&sp);
	add_machine(doc);
	check_no_dram(doc, "MB/token not measured: fixture: no memory-controller counters");
	json_decref(doc);
	return t_done();
}
