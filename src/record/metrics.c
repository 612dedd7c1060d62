/* src/record/metrics.c: the metric table and the reasons for missing figures (metrics.h). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "probes.h"
#include "stats.h"
#include "text.h"

/* Every figure a run and the summary carry. The unit strings spell out MB and MiB. */
static const struct mw_metric metrics[] = {
	{ "tok_per_s", "token/s (decode)", +1, NULL },
	{ "prefill_tok_per_s", "token/s (prefill)", +1, NULL },
	{ "dram_MB_per_token", "MB/token (MB = 10^6 bytes; DRAM read, or read + write where the "
	  "backend has no split: counters.dram.mb_per_token_basis)", -1, "dram" },
	{ "dram_MB_per_token_calibrated", "MB/token (MB = 10^6 bytes; dram_MB_per_token times the "
	  "calibration factor of its basis, counters.dram.calibration.factor: an estimate of the "
	  "bytes moved, beside the counted ones)", -1, "calibration" },
	{ "dram_read_bytes_per_token", "byte/token", -1, "dram_read" },
	{ "dram_read_MB_per_token", "MB/token (MB = 10^6 bytes)", -1, "dram_read" },
	{ "dram_read_MiB_per_token", "MiB/token (MiB = 2^20 bytes)", -1, "dram_read" },
	{ "dram_write_bytes_per_token", "byte/token", -1, "dram_write" },
	{ "dram_write_MB_per_token", "MB/token (MB = 10^6 bytes)", -1, "dram_write" },
	{ "dram_total_bytes_per_token", "byte/token (read + write)", -1, "dram_total" },
	{ "dram_total_MB_per_token", "MB/token (MB = 10^6 bytes; read + write)", -1, "dram_total" },
	{ "idle_dram_read_bytes_per_s", "byte/s (idle baseline, subtracted)", -1, "dram_read" },
	{ "idle_dram_total_bytes_per_s", "byte/s (idle baseline of read + write, subtracted)", -1,
	  "dram_total" },
	{ "engine_bytes_per_token", "byte/token (engine-accounted, not measured)", -1, NULL },
	{ "engine_MB_per_token", "MB/token (MB = 10^6 bytes; engine-accounted)", -1, NULL },
	{ "engine_MiB_per_token", "MiB/token (MiB = 2^20 bytes; engine-accounted)", -1, NULL },
	{ "energy_J_per_token", "J/token (package energy, decode)", -1, "energy" },
	{ "latency_mean_ns", "ns/token", -1, NULL },
	{ "latency_p50_ns", "ns/token", -1, NULL },
	{ "latency_p90_ns", "ns/token", -1, NULL },
	{ "latency_p99_ns", "ns/token", -1, NULL },
	{ "latency_p99_9_ns", "ns/token", -1, NULL },
};

_Static_assert(sizeof(metrics) / sizeof(metrics[0]) == MW_N_METRICS, "MW_N_METRICS");

const struct mw_metric *mw_metrics(size_t *n)
{
	*n = sizeof(metrics) / sizeof(metrics[0]);
	return metrics;
}

const struct mw_metric *mw_metric_find(const char *name)
{
	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++)
		if (!strcmp(metrics[i].name, name))
			return &metrics[i];
	return NULL;
}

json_t *mw_json_num(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

const char *mw_dram_basis(const json_t *doc)
{
	const json_t *dram = json_object_get(json_object_get(doc, "counters"), "dram");
	const char *b = json_string_value(json_object_get(dram, "mb_per_token_basis"));
	return b && !strcmp(b, "total") ? "total" : "read";
}

double mw_dram_calibration_factor(const json_t *doc)
{
	const json_t *cal = json_object_get(json_object_get(json_object_get(doc, "counters"),
							    "dram"), "calibration");
	const json_t *f = json_object_get(json_object_get(cal, "factor"), mw_dram_basis(doc));
	if (!json_is_object(cal) || !json_is_false(json_object_get(cal, "stale")) ||
	    !json_is_number(f))
		return NAN;
	return json_number_value(f);
}

static bool provides(const json_t *dram, const char *figure)
{
	const json_t *list = json_object_get(dram, "provides"), *x;
	size_t i;
	if (!json_is_array(list)) /* records before the list: read and write, always */
		return strcmp(figure, "total") != 0;
	json_array_foreach(list, i, x)
		if (json_is_string(x) && !strcmp(json_string_value(x), figure))
			return true;
	return false;
}

/* The first window (a run's decode or idle window, an external process) whose state of
 * figure is not "measured": its path and state into buf. */
static const char *first_unmeasured(const json_t *doc, const char *figure, char *buf, size_t n)
{
	static const char *const windows[] = { "decode", "idle", "prefill" };
	const json_t *runs = json_object_get(doc, "runs"), *run;
	const json_t *reps = json_object_get(json_object_get(doc, "external"), "repetitions");
	size_t i;
	json_array_foreach(runs, i, run)
		for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
			const json_t *st = json_object_get(json_object_get(run, windows[w]),
							   "dram_state");
			const char *s = json_string_value(json_object_get(st, figure));
			if (s && strcmp(s, "measured")) {
				snprintf(buf, n, "runs[%zu].%s.dram_state.%s", i, windows[w], figure);
				return s;
			}
		}
	json_array_foreach(reps, i, run)
		for (int k = 0; k < 2; k++) {
			const char *which = k ? "long" : "short";
			const json_t *st = json_object_get(json_object_get(run, which), "dram_state");
			const char *s = json_string_value(json_object_get(st, figure));
			if (s && strcmp(s, "measured")) {
				snprintf(buf, n, "external.repetitions[%zu].%s.dram_state.%s", i, which,
					 figure);
				return s;
			}
		}
	return NULL;
}

/* The probes' sentence for a state's name ("not-run" ...). */
static const char *state_reason(const char *name)
{
	for (int s = PRB_MEASURED; s <= PRB_NOT_PROVIDED; s++)
		if (!strcmp(prb_state_name((enum prb_state)s), name))
			return prb_state_reason((enum prb_state)s);
	return "not measured";
}

const char *mw_metric_reason(const json_t *doc, const char *needs, char *buf, size_t n)
{
	const json_t *counters = json_object_get(doc, "counters");
	char where[160];
	if (!needs)
		return snprintf(buf, n, "no run recorded this figure"), buf;
	if (!strcmp(needs, "calibration")) {
		const json_t *d = json_object_get(counters, "dram");
		const char *why = json_string_value(json_object_get(d, "calibration_reason"));
		if (json_is_true(json_object_get(d, "measured")) && why)
			return snprintf(buf, n, "no calibration applied: %s", why), buf;
		if (json_is_true(json_object_get(d, "measured")) &&
		    !json_object_get(d, "calibration"))
			return snprintf(buf, n, "no calibration recorded (a record made before "
					"`memwall run` read calibrations)"), buf;
		needs = "dram"; /* calibrated and still no value: the counts are missing */
	}
	bool dram = !strncmp(needs, "dram", 4);
	const json_t *blk = json_object_get(counters, dram ? "dram" : needs);
	const char *r = json_string_value(json_object_get(blk, "reason"));
	if (!json_is_true(json_object_get(blk, "measured"))) {
		snprintf(buf, n, "%s", r ? r : "no counter reading was recorded");
		return buf;
	}
	if (!dram)
		return snprintf(buf, n, "no counter reading was recorded"), buf;
	const char *figure = !strcmp(needs, "dram") ? mw_dram_basis(doc) : needs + 5;
	const char *backend = json_string_value(json_object_get(blk, "backend"));
	if (!provides(blk, figure)) {
		snprintf(buf, n, "not provided: the %s backend has no read/write split, it measures "
			 "the total only (dram_total_*; dram_MB_per_token counts it)",
			 backend ? backend : "DRAM");
		return buf;
	}
	const char *state = first_unmeasured(doc, figure, where, sizeof(where));
	if (state) {
		snprintf(buf, n, "%s (%s is \"%s\")", state_reason(state), where, state);
		return buf;
	}
	snprintf(buf, n, "no counter reading was recorded");
	return buf;
}

void mw_stats_mark_ci(json_t *o, const struct mw_stats *s)
{
	/* Every figure in the metric table is a rate, a count or a time: none can be negative.
	 * With few runs, Student's t makes the interval wide enough to cross 0 (t(0.975, 1) is
	 * 12.7); the interval stays as computed and is marked, so no reader prints it as if a
	 * negative value were possible. */
	if (!(s->ci95_low < 0))
		return;
	char note[200];
	snprintf(note, sizeof(note), "n too small: the 95%% interval (Student's t, n = %zu) "
		 "reaches below 0, which this figure cannot", s->n);
	json_object_set_new(o, "ci95_clamped", json_true());
	json_object_set_new(o, "ci95_note", json_string(note));
}

double mw_roof_pct(const json_t *doc, char *why, size_t n, char *words, size_t wn)
{
	const json_t *r = json_object_get(doc, "roofline");
	const json_t *h = json_object_get(r, "headroom");
	const char *src = json_string_value(json_object_get(r, "bandwidth_source"));
	const char *reason = json_string_value(json_object_get(r, "headroom_reason"));
	bool synthetic = json_is_true(json_object_get(json_object_get(doc, "model"), "synthetic"));
	snprintf(words, wn, "timed, against the bandwidth roof of %s%s",
		 src ? mw_esc(src) : "none", synthetic ? ", SYNTHETIC weights" : "");
	if (!json_is_object(r))
		snprintf(why, n, "no roofline block: the record predates it, or was not made by "
			 "`memwall run`");
	else if (!json_is_true(json_object_get(r, "computed")))
		snprintf(why, n, "roofline not computed: %s",
			 json_string_value(json_object_get(r, "reason"))
				 ? json_string_value(json_object_get(r, "reason")) : "no reason given");
	else if (!json_is_number(json_object_get(r, "max_tok_s")))
		snprintf(why, n, "no bandwidth roof (%s)", src ? src : "none given");
	else if (json_is_number(h) && json_number_value(h) > 0)
		return 100.0 / json_number_value(h);
	else
		snprintf(why, n, "%s", reason ? reason : "tok/s not measured");
	return NAN;
}
