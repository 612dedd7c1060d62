/* src/record/metrics.h: the figures a record carries, their units, and why one is missing.
 *
 * Shared by the derivation of memwall's own runs (result.c) and of external engines' runs
 * (differential.c), so both name a figure, its unit and its reason for being absent alike. */
#ifndef MEMWALL_RECORD_METRICS_H
#define MEMWALL_RECORD_METRICS_H

#include <errno.h>
#include <jansson.h>
#include <stddef.h>

/* Returned by mw_result_validate (and the derivations) for each kind of failure. */
enum {
	MW_RESULT_MALFORMED = -EINVAL,  /* not JSON, or not of the schema: exit 2 */
	MW_RESULT_INCONSISTENT = -EDOM, /* a figure disagrees with the raw data: exit 1 */
};

/* One metric of a run and of the summary. */
struct mw_metric {
	const char *name;   /* key in runs[].figures and summary.metrics */
	const char *unit;   /* e.g. "MB/token (MB = 10^6 bytes)" */
	int better;         /* +1 higher is better, -1 lower is better */
	const char *needs;  /* where a missing value comes from: "dram" (the figure
			     * mb_per_token_basis names), "dram_read", "dram_write", "dram_total",
			     * "energy", "calibration" (dram and a calibration that is not
			     * stale: counters.dram.calibration); NULL for figures every run has */
};

/* The metric table, in report order; *n receives the count (MW_N_METRICS). Static storage. */
enum { MW_N_METRICS = 22 };
const struct mw_metric *mw_metrics(size_t *n);

/* The metric named name in the table; NULL for a name that is not one. */
const struct mw_metric *mw_metric_find(const char *name);

/* A JSON number, or null for NaN and infinities (JSON has no NaN). New reference. */
json_t *mw_json_num(double x);

/* Which DRAM figure MB/token counts in doc: "read" where the backend splits reads from writes,
 * "total" where it cannot (counters.dram.mb_per_token_basis; "read" in records before it). */
const char *mw_dram_basis(const json_t *doc);

/* The factor that turns counted MB/token into an estimate of the bytes moved: the recorded
 * calibration's factor for the MB/token basis, when a calibration was found and is not stale
 * (counters.dram.calibration); NaN otherwise, so the calibrated figure is null. */
double mw_dram_calibration_factor(const json_t *doc);

/* Why the figure `needs` names has no value in doc, for a summary's reason: the counter's
 * reason when it was not opened, "not provided" when the backend lacks the figure, else the
 * first window whose state says it was not measured. Written into buf (n bytes), returned. */
const char *mw_metric_reason(const json_t *doc, const char *needs, char *buf, size_t n);

/* Marks a summary's metric o whose 95% interval (from s) reaches below 0, the physical
 * bound of every figure in the table: ci95_clamped true and ci95_note saying n is too small.
 * The interval itself is kept as computed. Nothing is added otherwise. */
struct mw_stats;
void mw_stats_mark_ci(json_t *o, const struct mw_stats *s);

/* The record's decode tok/s as a percentage of its bandwidth roof's most tok/s: 100 / the
 * headroom of the roofline block `memwall run` writes (src/record/roofline_block.c; headroom =
 * max tok/s over the analytic bytes per token / measured tok/s, the mean over the runs).
 * NaN when the record has none, with why[0..n) saying why: no roofline block, not computed,
 * no bandwidth roof, or the record's own headroom_reason (a model whose weights fit in the
 * last-level cache is not bounded by the DRAM roof), copied as it is (escape it where it is
 * printed). words[0..wn) receives the figure's provenance in the words every surface uses:
 * "timed, against the bandwidth roof of SOURCE" (the roofline block's bandwidth_source,
 * mw_esc'd), with ", SYNTHETIC weights" where the model's are. */
double mw_roof_pct(const json_t *doc, char *why, size_t n, char *words, size_t wn);

#endif
