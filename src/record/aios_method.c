/* src/record/aios_method.c: the AIOS baseline script's arithmetic (aios_method.h). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aios_method.h"
#include "metrics.h"

#define MIB 1048576.0 /* what baseline.py divides by, and calls MB */
#define FIGURE "aios_method_MB_per_token"

static const char label[] =
	"AIOS's method (validation/baseline.py v1.4, acasavaraju/AIOS commit bbf1ceef), faults "
	"included: one memory controller, the whole process, the requested token count assumed, "
	"MiB called MB. Not memwall's figure: memwall's own is dram_MB_per_token of a protocol "
	"measured by the differential method";

static bool counts(const json_t *rep)
{
	return !json_is_true(json_object_get(rep, "warmup")) &&
	       json_is_true(json_object_get(json_object_get(rep, "long"), "valid"));
}

/* One repetition's figure: the first instance's read bytes / 2^20 / the requested N. NaN when
 * the counter was not read. */
static double figure_of(const json_t *rep)
{
	const json_t *l = json_object_get(rep, "long");
	const json_t *b = json_object_get(json_object_get(l, "aios_counter"), "read_bytes");
	const json_t *n = json_object_get(l, "tokens_target");
	if (!json_is_integer(b) || !json_is_integer(n) || json_integer_value(n) <= 0)
		return NAN;
	return (double)json_integer_value(b) / MIB / (double)json_integer_value(n);
}

/* Why no repetition has the figure: the counter's own reason where one was recorded. */
static const char *reason_of(const json_t *reps, size_t counted)
{
	const json_t *rep;
	size_t i;
	if (!counted)
		return "no valid measured repetition (the command must exit 0)";
	json_array_foreach(reps, i, rep) {
		const char *r = json_string_value(json_object_get(json_object_get(
			json_object_get(rep, "long"), "aios_counter"), "reason"));
		if (counts(rep) && r)
			return r;
	}
	return "no counter reading was recorded";
}

/* The figure's statistics as baseline.py computes them: population sd (ddof 0), CV = sd / mean,
 * pass when CV < 5 %. */
static json_t *figure_json(const json_t *reps, size_t counted)
{
	double sum = 0, ss = 0, lo = INFINITY, hi = -INFINITY;
	size_t n = 0, i;
	const json_t *rep;
	json_array_foreach(reps, i, rep) {
		double v = json_number_value(json_object_get(json_object_get(rep, "figures"), FIGURE));
		if (!counts(rep) || !json_is_number(json_object_get(json_object_get(rep, "figures"),
								      FIGURE)))
			continue;
		sum += v;
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
		n++;
	}
	const char *unit = "MiB/token, called MB by AIOS (2^20 bytes): one memory controller's "
			   "data_read bytes over the whole process / the requested token count";
	if (!n)
		return json_pack("{s:s, s:b, s:s}", "unit", unit, "measured", 0, "reason",
				 reason_of(reps, counted));
	double mean = sum / (double)n;
	json_array_foreach(reps, i, rep) {
		const json_t *x = json_object_get(json_object_get(rep, "figures"), FIGURE);
		if (counts(rep) && json_is_number(x))
			ss += (json_number_value(x) - mean) * (json_number_value(x) - mean);
	}
	double sd = sqrt(ss / (double)n), cv = mean != 0 ? 100.0 * sd / fabs(mean) : NAN;
	return json_pack("{s:s, s:b, s:I, s:o, s:o, s:o, s:o, s:o, s:o}", "unit", unit, "measured",
			 1, "n", (json_int_t)n, "mean", mw_json_num(mean), "sd_population",
			 mw_json_num(sd), "cv_pct_population", mw_json_num(cv), "min",
			 mw_json_num(lo), "max", mw_json_num(hi), "pass",
			 isfinite(cv) ? json_boolean(cv < MW_AIOS_PASS_CV_PCT) : json_null());
}

int mw_aios_method_derive(json_t *doc, const char *source, struct mw_error *err)
{
	json_t *reps = json_object_get(json_object_get(doc, "external"), "repetitions"), *rep;
	size_t i, counted = 0, warm = 0, invalid = 0;
	const char *counter = NULL;
	if (!json_is_array(reps))
		return mw_error_set(err, MW_RESULT_MALFORMED, source, "external.repetitions",
				    "missing: an external run keeps its raw runs there");
	json_array_foreach(reps, i, rep) {
		const json_t *l = json_object_get(rep, "long");
		if (!json_is_object(l) && !json_is_null(l)) {
			char field[96];
			snprintf(field, sizeof(field), "external.repetitions[%zu].long", i);
			return mw_error_set(err, MW_RESULT_MALFORMED, source, field,
					    "must be the raw run (or null)");
		}
		bool warmup = json_is_true(json_object_get(rep, "warmup"));
		json_object_set_new(rep, "figures",
				    json_pack("{s:o}", FIGURE, mw_json_num(figure_of(rep))));
		warm += warmup;
		counted += counts(rep);
		invalid += !warmup && !counts(rep);
		const char *pmu = json_string_value(json_object_get(json_object_get(l,
								    "aios_counter"), "pmu"));
		if (pmu && !counter)
			counter = pmu;
	}
	json_t *m = json_object();
	size_t nm;
	const struct mw_metric *met = mw_metrics(&nm);
	for (size_t k = 0; m && k < nm; k++)
		json_object_set_new(m, met[k].name, json_pack(
			"{s:s, s:b, s:s}", "unit", met[k].unit, "measured", 0, "reason",
			"this record follows AIOS's method (external.method \"" MW_AIOS_METHOD "\"): "
			"whole-process traffic of one memory controller over an assumed token count is "
			"not memwall's metric; its figure is summary.aios_method"));
	json_t *sum = json_pack("{s:I, s:I, s:I, s:o, s:{s:s, s:o, s:s, s:o}}", "runs_measured",
				(json_int_t)counted, "runs_warmup", (json_int_t)warm,
				"runs_incomplete", (json_int_t)invalid, "metrics", m,
				"aios_method", "label", label, "counter",
				counter ? json_string(counter) : json_null(), "tokens",
				"assumed: the requested count (tokens_target), as baseline.py does "
				"when llama.cpp's timing lines are hidden", FIGURE,
				figure_json(reps, counted));
	if (!sum)
		return -ENOMEM;
	json_object_set_new(doc, "summary", sum);
	return 0;
}
