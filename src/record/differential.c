/* src/record/differential.c: the differential method's arithmetic (see differential.h). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aios_method.h"
#include "differential.h"
#include "metrics.h"
#include "stats.h"

#define MB 1e6          /* MB = 10^6 bytes */
#define MIB 1048576.0   /* MiB = 2^20 bytes */
#define WHOLE "_whole_process"

/* DRAM_BASIS stands for the figure counters.dram.mb_per_token_basis names: dram_read_bytes,
 * or dram_total_bytes where the backend has no read/write split. */
#define DRAM_BASIS "(basis)"

static const struct mw_diff_counter counters[] = {
	{ DRAM_BASIS, false, true, "dram_MB_per_token", MB,
	  "MB/token (MB = 10^6 bytes; DRAM read, or read + write where the backend has no split: "
	  "counters.dram.mb_per_token_basis)", "dram" },
	{ "dram_read_bytes", false, true, "dram_read_bytes_per_token", 1, "byte/token",
	  "dram_read" },
	{ "dram_read_bytes", false, true, "dram_read_MB_per_token", MB,
	  "MB/token (MB = 10^6 bytes)", "dram_read" },
	{ "dram_read_bytes", false, true, "dram_read_MiB_per_token", MIB,
	  "MiB/token (MiB = 2^20 bytes)", "dram_read" },
	{ "dram_write_bytes", false, true, "dram_write_bytes_per_token", 1, "byte/token",
	  "dram_write" },
	{ "dram_write_bytes", false, true, "dram_write_MB_per_token", MB,
	  "MB/token (MB = 10^6 bytes)", "dram_write" },
	{ "dram_total_bytes", false, true, "dram_total_bytes_per_token", 1,
	  "byte/token (read + write)", "dram_total" },
	{ "dram_total_bytes", false, true, "dram_total_MB_per_token", MB,
	  "MB/token (MB = 10^6 bytes; read + write)", "dram_total" },
	{ "engine_bytes", false, false, "engine_bytes_per_token", 1,
	  "byte/token (engine-accounted, not measured)", "engine" },
	{ "engine_bytes", false, false, "engine_MB_per_token", MB,
	  "MB/token (MB = 10^6 bytes; engine-accounted)", "engine" },
	{ "engine_bytes", false, false, "engine_MiB_per_token", MIB,
	  "MiB/token (MiB = 2^20 bytes; engine-accounted)", "engine" },
	{ "task_clock_ns", true, false, "task_clock_ns_per_token", 1,
	  "ns/token (CPU time of every thread of the program)", "software" },
	{ "energy_j", false, true, "energy_J_per_token", 1,
	  "J/token (package energy, the whole package: RAPL counts every core)", "energy" },
	{ "page_faults", true, false, "page_faults_per_token", 1, "faults/token", "software" },
	{ "context_switches", true, false, "context_switches_per_token", 1, "switches/token",
	  "software" },
	{ "cpu_migrations", true, false, "cpu_migrations_per_token", 1, "migrations/token",
	  "software" },
};
#define N_COUNTERS (sizeof(counters) / sizeof(counters[0]))

/* Figures that are not counters: the engine's own timings and the idle rate. */
enum { F_TOK_S, F_PREFILL_TOK_S, F_LAT_MEAN, F_IDLE_RATE, F_OTHER };
static const struct {
	const char *name, *unit, *needs;
} others[F_OTHER] = {
	[F_TOK_S] = { "tok_per_s", "token/s (decode, the engine's own eval timings, long run)",
		      "timing" },
	[F_PREFILL_TOK_S] = { "prefill_tok_per_s",
			      "token/s (prefill, the engine's own timings, long run)", "timing" },
	[F_LAT_MEAN] = { "latency_mean_ns",
			 "ns/token (mean decode step, the engine's own eval timings: eval time / eval "
			 "runs, long run)", "timing" },
	[F_IDLE_RATE] = { "idle_dram_read_bytes_per_s",
			  "byte/s (idle baseline around the long run, subtracted)", "dram_read" },
};

const struct mw_diff_counter *mw_diff_counters(size_t *n)
{
	*n = N_COUNTERS;
	return counters;
}

static double num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static bool proc_valid(const json_t *proc)
{
	return json_is_true(json_object_get(proc, "valid"));
}

static bool rep_counts(const json_t *rep)
{
	return !json_is_true(json_object_get(rep, "warmup")) &&
	       proc_valid(json_object_get(rep, "short")) && proc_valid(json_object_get(rep, "long"));
}

/* A process's count of counter c, net of the idle machine's share for system-wide counters:
 * raw - idle rate x wall time. An idle window of 0 ns (idle_baseline_ms 0) means no
 * correction. NaN when the counter was not read. */
static double net_count(const json_t *proc, const struct mw_diff_counter *c, const char *basis,
			double *idle_rate)
{
	const json_t *holder = c->software ? json_object_get(proc, "software") : proc;
	const char *key = strcmp(c->raw, DRAM_BASIS) ? c->raw : basis;
	double raw = num(holder, key);
	*idle_rate = NAN;
	if (!c->idle || isnan(raw))
		return raw;
	const json_t *idle = json_object_get(proc, "idle");
	double idle_ns = num(idle, "before_ns") + num(idle, "after_ns");
	double idle_bytes = num(idle, key);
	if (isnan(idle_ns) || idle_ns <= 0) {
		*idle_rate = 0;
		return raw;
	}
	if (isnan(idle_bytes))
		return NAN;
	*idle_rate = idle_bytes / (idle_ns * 1e-9);
	return raw - *idle_rate * num(proc, "wall_ns") * 1e-9;
}

static int malformed(const char *source, struct mw_error *err, size_t i, const char *what)
{
	char field[96];
	snprintf(field, sizeof(field), "external.repetitions[%zu]", i);
	return mw_error_set(err, MW_RESULT_MALFORMED, source, field, "%s", what);
}

static int derive_repetition(json_t *rep, size_t idx, const char *basis, const char *source,
			     struct mw_error *err)
{
	const json_t *s = json_object_get(rep, "short"), *l = json_object_get(rep, "long");
	const json_t *la = json_object_get(l, "adapter"), *sa = json_object_get(s, "adapter");
	json_t *fig;
	char name[128];

	/* A long run is null when the short one was invalid and the run stopped there. */
	if (!json_is_object(s) || !(json_is_object(l) || json_is_null(l)))
		return malformed(source, err, idx, "needs both raw runs, \"short\" and \"long\"");
	fig = json_object();
	if (!fig)
		return -ENOMEM;
	bool ok = rep_counts(rep) || (json_is_true(json_object_get(rep, "warmup")) &&
				     proc_valid(s) && proc_valid(l));
	/* Confirmed counts only: the adapter's, never the requested ones. */
	double n1 = num(sa, "decode_tokens"), n2 = num(la, "decode_tokens");
	double dn = n2 - n1;
	for (size_t k = 0; k < N_COUNTERS; k++) {
		const struct mw_diff_counter *c = &counters[k];
		double r1, r2;
		double b1 = net_count(s, c, basis, &r1), b2 = net_count(l, c, basis, &r2);
		double d = ok && dn > 0 ? (b2 - b1) / dn / c->scale : NAN;
		double whole = ok && n2 > 0 ? b2 / n2 / c->scale : NAN;
		json_object_set_new(fig, c->figure, mw_json_num(d));
		snprintf(name, sizeof(name), "%s" WHOLE, c->figure);
		json_object_set_new(fig, name, mw_json_num(whole));
	}
	double steps = num(la, "eval_runs"), eval_ms = num(la, "eval_ms");
	double prompt = num(la, "prompt_tokens"), prompt_ms = num(la, "prompt_ms");
	double rate;
	net_count(l, &counters[1] /* dram_read_bytes */, basis, &rate);
	const double values[F_OTHER] = {
		[F_TOK_S] = ok && eval_ms > 0 ? steps / (eval_ms * 1e-3) : NAN,
		[F_PREFILL_TOK_S] = ok && prompt_ms > 0 ? prompt / (prompt_ms * 1e-3) : NAN,
		[F_LAT_MEAN] = ok && steps > 0 ? eval_ms * 1e6 / steps : NAN,
		[F_IDLE_RATE] = ok ? rate : NAN,
	};
	for (size_t k = 0; k < F_OTHER; k++)
		json_object_set_new(fig, others[k].name, mw_json_num(values[k]));
	json_object_set_new(rep, "figures", fig);
	return 0;
}

/* Why a figure has no value in any counted repetition. buf holds the text for counters. */
static const char *reason_for(const json_t *doc, const char *needs, size_t counted, char *buf,
			      size_t n)
{
	if (!counted)
		return "no valid measured repetition (both runs of a repetition must be valid)";
	if (!strncmp(needs, "dram", 4) || !strcmp(needs, "energy"))
		return mw_metric_reason(doc, needs, buf, n);
	if (!strcmp(needs, "engine"))
		return "the program's output reports no engine-accounted bytes (no output adapter "
		       "reads them): only memwall's own engine accounts bytes from tensor shapes";
	if (!strcmp(needs, "software"))
		return "the software counter could not be opened on the program (see "
		       "counters.software)";
	if (!strcmp(needs, "calibration"))
		return "the differential method does not apply a calibration yet: "
		       "counters.dram.calibration_error_pct says how far to trust dram_MB_per_token";
	if (!strcmp(needs, "timing"))
		return "the program's output gives no decode (or prompt) timing the adapter could "
		       "read: tok/s comes only from the engine's own timings";
	if (!strcmp(needs, "latency")) {
		const json_t *ad = json_object_get(json_object_get(doc, "engine"), "adapter");
		const char *name = json_string_value(json_object_get(ad, "name"));
		const char *times = json_string_value(json_object_get(ad, "token_times"));
		snprintf(buf, n, "percentiles need each token's time, and the program's output "
			 "does not give it: the %s adapter reads %s (latency_mean_ns is that mean)",
			 name ? name : "output", times ? times : "no per-token times");
		return buf;
	}
	return "an external program's per-token figures are not visible to memwall: it reads "
	       "counters around the whole process";
}

size_t mw_differential_samples(const json_t *doc, const char *name, double *v, size_t cap)
{
	const json_t *rep;
	size_t i, n = 0;
	json_array_foreach(json_object_get(json_object_get(doc, "external"), "repetitions"), i,
			   rep) {
		const json_t *x = json_object_get(json_object_get(rep, "figures"), name);
		if (rep_counts(rep) && json_is_number(x) && n++ < cap)
			v[n - 1] = json_number_value(x);
	}
	return n;
}

static json_t *metric(const json_t *doc, json_t *reps, const char *name, const char *unit,
		      const char *needs, size_t counted)
{
	double *v = calloc(json_array_size(reps) + 1, sizeof(double));
	size_t i, n = 0;
	json_t *rep, *m;
	if (!v)
		return NULL;
	json_array_foreach(reps, i, rep) {
		const json_t *x = json_object_get(json_object_get(rep, "figures"), name);
		if (rep_counts(rep) && json_is_number(x))
			v[n++] = json_number_value(x);
	}
	if (n) {
		struct mw_stats s;
		mw_stats_compute(v, n, &s);
		m = json_pack("{s:s, s:b, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "unit", unit,
			      "measured", 1, "n", (json_int_t)s.n, "mean", mw_json_num(s.mean), "sd",
			      mw_json_num(s.sd), "cv_pct", mw_json_num(s.cv_pct), "median",
			      mw_json_num(s.median), "min", mw_json_num(s.min), "max",
			      mw_json_num(s.max), "ci95_low", mw_json_num(s.ci95_low), "ci95_high",
			      mw_json_num(s.ci95_high));
		if (m)
			mw_stats_mark_ci(m, &s);
	} else {
		char why[1024];
		m = json_pack("{s:s, s:b, s:s}", "unit", unit, "measured", 0, "reason",
			      reason_for(doc, needs, counted, why, sizeof(why)));
	}
	free(v);
	return m;
}

int mw_differential_derive(json_t *doc, const char *source, struct mw_error *err)
{
	json_t *ext = json_object_get(doc, "external");
	json_t *reps = json_object_get(ext, "repetitions"), *rep;
	json_t *sum = NULL, *m = NULL;
	size_t i, counted = 0, warm = 0, invalid = 0;
	json_int_t tokens = 0;
	char name[128], unit[256];
	int rc;

	const char *method = json_string_value(json_object_get(ext, "method"));
	if (method && !strcmp(method, MW_AIOS_METHOD))
		return mw_aios_method_derive(doc, source, err);
	const char *basis = !strcmp(mw_dram_basis(doc), "total") ? "dram_total_bytes"
								 : "dram_read_bytes";
	if (!json_is_array(reps))
		return mw_error_set(err, MW_RESULT_MALFORMED, source, "external.repetitions",
				    "missing: an external run keeps its raw runs there");
	json_array_foreach(reps, i, rep) {
		if ((rc = derive_repetition(rep, i, basis, source, err)))
			return rc;
		warm += json_is_true(json_object_get(rep, "warmup"));
		if (rep_counts(rep)) {
			counted++;
			tokens += json_integer_value(json_object_get(
				json_object_get(json_object_get(rep, "long"), "adapter"),
				"decode_tokens"));
		} else if (!json_is_true(json_object_get(rep, "warmup"))) {
			invalid++;
		}
	}
	sum = json_object();
	m = json_object();
	if (!sum || !m) {
		rc = -ENOMEM;
		goto out;
	}
	json_object_set_new(sum, "runs_measured", json_integer((json_int_t)counted));
	json_object_set_new(sum, "runs_warmup", json_integer((json_int_t)warm));
	json_object_set_new(sum, "runs_incomplete", json_integer((json_int_t)invalid));
	json_object_set_new(sum, "tokens_measured", json_integer(tokens));
	for (size_t k = 0; k < N_COUNTERS; k++) {
		const struct mw_diff_counter *c = &counters[k];
		snprintf(unit, sizeof(unit), "%s, differential: (B2 - B1) / (N2 - N1)", c->unit);
		json_object_set_new(m, c->figure, metric(doc, reps, c->figure, unit, c->needs,
							 counted));
		snprintf(name, sizeof(name), "%s" WHOLE, c->figure);
		snprintf(unit, sizeof(unit), "%s, whole process: B2 / N2 (load, prompt and exit "
			 "included)", c->unit);
		json_object_set_new(m, name, metric(doc, reps, name, unit, c->needs, counted));
	}
	for (size_t k = 0; k < F_OTHER; k++)
		json_object_set_new(m, others[k].name, metric(doc, reps, others[k].name,
							      others[k].unit, others[k].needs,
							      counted));
	/* The builtin engine's metrics this method cannot give, so every table has its row. */
	size_t nm;
	const struct mw_metric *met = mw_metrics(&nm);
	char why[1024];
	for (size_t k = 0; k < nm; k++)
		if (!json_object_get(m, met[k].name))
			json_object_set_new(m, met[k].name,
					    json_pack("{s:s, s:b, s:s}", "unit", met[k].unit,
						      "measured", 0, "reason",
						      reason_for(doc, met[k].needs ? met[k].needs
								 : !strncmp(met[k].name, "latency_", 8)
								 ? "latency" : "", counted, why,
								 sizeof(why))));
	json_object_set(sum, "metrics", m);
	json_object_set(doc, "summary", sum);
	rc = 0;
out:
	json_decref(m);
	json_decref(sum);
	return rc;
}

long long mw_differential_least_tokens(const json_t *doc)
{
	const json_t *reps = json_object_get(json_object_get(doc, "external"), "repetitions");
	const json_t *rep;
	long long least = -1;
	size_t i;
	json_array_foreach(reps, i, rep) {
		if (!rep_counts(rep))
			continue;
		long long t = json_integer_value(json_object_get(
			json_object_get(json_object_get(rep, "long"), "adapter"), "decode_tokens"));
		if (least < 0 || t < least)
			least = t;
	}
	return least;
}
