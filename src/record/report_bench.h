/* src/record/report_bench.h: a record's figures in the formats continuous-benchmarking tools
 * read: Bencher's BMF (`report --format bmf`) and github-action-benchmark's custom JSON
 * (`--format gab-smaller`, `gab-bigger`; `gab` is gab-smaller). */
#ifndef MEMWALL_REPORT_BENCH_H
#define MEMWALL_REPORT_BENCH_H

#include <jansson.h>
#include <stdio.h>

/* The formats (report.h's MW_FORMAT_BMF, _GAB_SMALLER and _GAB_BIGGER map onto them). */
enum mw_bench_format { MW_BENCH_BMF, MW_BENCH_GAB_SMALLER, MW_BENCH_GAB_BIGGER };

/* Writes doc's summary figures to f in fmt, one entry per measured figure, named "PROTOCOL: METRIC [PROVENANCE]"
 * (mw_provenance_metric), valued at the mean of its runs:
 *   bmf: {NAME: {MEASURE: {"value", "lower_value", "upper_value"}}}, MEASURE the unit's slug
 *        ("mb-per-token"), the bounds the 95 % interval (left out where the interval is not
 *        known or reaches below 0);
 *   gab: [{"name", "unit", "value", "range", "extra"}], the figures whose direction is fmt's
 *        (smaller or bigger is better, src/record/metrics.c), range "± SD" of the runs, extra
 *        the interval, the full unit, the provenance and the record.
 * A figure left out (not measured, no mean, no direction known) is said on log, one line each,
 * with why; the figures of the other direction in one line, with the format that has them.
 * Returns the number of entries written. */
int mw_report_bench(FILE *f, FILE *log, const json_t *doc, enum mw_bench_format fmt);

#endif
