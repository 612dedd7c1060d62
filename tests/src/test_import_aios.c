/* tests/src/test_import_aios.c: `memwall import-aios` on the inputs in tests/data/aios/: the record
 * validates, keeps the published runs, recomputes their statistics, and says what the AIOS
 * script did not measure; bad inputs are refused naming the field; nothing is overwritten. */
#include <unistd.h>

#include "result.h"
#include "run.h"
#include "stats.h"
#include "test.h"

static char scratch[256];

static const json_t *metric(const json_t *doc, const char *name)
{
	return json_object_get(json_object_get(json_object_get(doc, "summary"), "metrics"), name);
}

/* True when some string of arr contains needle. */
static bool any_contains(const json_t *arr, const char *needle)
{
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v)
		if (json_is_string(v) && strstr(json_string_value(v), needle))
			return true;
	return false;
}

static json_t *import(const char *name, struct t_output *o)
{
	char in[4200], out[600];
	snprintf(in, sizeof(in), "%s", t_data(name));
	snprintf(out, sizeof(out), "%s/%s", scratch, name);
	const char *argv[] = { "memwall", "import-aios", in, "-o", out, NULL };
	*o = t_run(argv);
	return json_load_file(out, 0, NULL);
}

/* An import that succeeds: exit 0, and the record it wrote validates (as what); NULL where it
 * wrote none. */
static json_t *import_ok(const char *name, const char *what)
{
	struct t_output o;
	json_t *doc = import(name, &o);
	T_EQ_INT(o.status, 0);
	T_ASSERT(doc != NULL);
	t_output_free(&o);
	if (!doc)
		return NULL;
	struct mw_error err;
	T_EQ_INT(mw_result_validate(doc, what, &err), 0);
	return doc;
}

static void test_imc0(void)
{
	json_t *doc = import_ok("aios/imc0-timings.json", "imc0");
	if (!doc)
		return;
	T_EQ_STR(json_string_value(json_object_get(doc, "kind")), "reference");
	const json_t *ref = json_object_get(doc, "reference");
	T_EQ_INT(json_array_size(json_object_get(ref, "published_runs")), 5);
	const json_t *not = json_object_get(ref, "not_measured");
	T_ASSERT(any_contains(not, "uncore_imc_free_running_0"));
	T_ASSERT(any_contains(not, "whole-process"));
	T_ASSERT(!any_contains(not, "mem-loads"));
	T_ASSERT(!any_contains(not, "confirmed token counts"));

	/* The published per-run values, summarised again here. */
	const double mb[] = { 2341.0, 2336.5, 2344.2, 2338.1, 2340.3 };
	struct mw_stats s;
	mw_stats_compute(mb, 5, &s);
	const json_t *whole = metric(doc, "dram_read_MB_per_token_whole_process");
	T_ASSERT(json_is_true(json_object_get(whole, "measured")));
	T_NEAR(json_number_value(json_object_get(whole, "mean")), s.mean, 1e-9);
	T_NEAR(json_number_value(json_object_get(whole, "sd")), s.sd, 1e-9);
	/* Never under the differential name: the script divides the whole process. */
	T_ASSERT(json_is_false(json_object_get(metric(doc, "dram_read_MB_per_token"), "measured")));
	T_CONTAINS(json_string_value(json_object_get(metric(doc, "dram_read_MB_per_token"),
						     "reason")), "whole-process");
	T_CONTAINS(json_string_value(json_object_get(
			   json_object_get(json_object_get(doc, "counters"), "dram"), "caveat")),
		   "one memory-controller instance");
	T_EQ_STR(json_string_value(json_object_get(json_object_get(doc, "acceptance"), "status")),
		 "pass");
	json_decref(doc);

	/* Nothing is overwritten. */
	struct t_output o;
	doc = import("aios/imc0-timings.json", &o);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "File exists");
	json_decref(doc);
	t_output_free(&o);
}

static void test_mem_loads(void)
{
	json_t *doc = import_ok("aios/mem-loads-assumed.json", "mem-loads");
	if (!doc)
		return;
	const json_t *not = json_object_get(json_object_get(doc, "reference"), "not_measured");
	T_ASSERT(any_contains(not, "mem-loads by 64"));
	T_ASSERT(any_contains(not, "confirmed token counts in 3 of 3 runs"));
	T_ASSERT(json_is_false(json_object_get(
		json_object_get(json_object_get(doc, "counters"), "dram"), "measured")));
	T_ASSERT(json_is_true(json_object_get(metric(doc, "aios_mem_loads_x64_MB_per_token"),
					      "measured")));
	T_ASSERT(json_is_false(json_object_get(metric(doc, "dram_read_MB_per_token_whole_process"),
					       "measured")));
	T_EQ_INT(json_integer_value(json_object_get(json_object_get(doc, "summary"),
						    "tokens_measured")), 587);
	const json_t *c;
	size_t i;
	json_array_foreach(json_object_get(json_object_get(doc, "acceptance"), "criteria"), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "criterion")), "min_tokens"))
			T_EQ_STR(json_string_value(json_object_get(c, "status")), "not-measured");
	json_decref(doc);
}

static void test_bad(void)
{
	static const struct {
		const char *file, *want;
	} cases[] = {
		{ "aios/bad-unknown-field.json", "dram_gb: unknown field" },
		{ "aios/bad-run-type.json", "runs[1].tok_per_s: must be a number" },
		{ "aios/README.md", "aios/README.md:1:" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct t_output o;
		json_t *doc = import(cases[i].file, &o);
		T_EQ_INT(o.status, 2);
		T_CONTAINS(o.err, cases[i].want);
		T_ASSERT(doc == NULL);
		json_decref(doc);
		t_output_free(&o);
	}
}

int main(void)
{
	snprintf(scratch, sizeof(scratch), "/tmp/mw-test-import-XXXXXX");
	t_mkdtemp(scratch);
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/aios", scratch);
	mkdir(dir, 0777);
	test_imc0();
	test_mem_loads();
	test_bad();
	return t_done_rm(scratch, 0);
}
