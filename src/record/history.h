/* src/record/history.h: a record judged against the history of its series (`memwall db check`).
 *
 * conbench's idea, with compare's verdicts: the record's per-run samples of each metric
 * against the pooled per-run samples of earlier records of its series (series.h), by the
 * Mann-Whitney U test (stats.h: exact for small samples), which decides, beside Welch's t
 * over the same samples, which is shown. A change is the change of the medians in percent,
 * judged against the protocol's tolerance for the metric (mw_compare_tolerance). The verdicts,
 * exit codes and output formats are compare's (compare.h, compare_out.c): a check is a
 * struct mw_comparison whose BASE is the pooled history. */
#ifndef MEMWALL_RECORD_HISTORY_H
#define MEMWALL_RECORD_HISTORY_H

#include <jansson.h>
#include <stddef.h>

#include "compare.h"

/* A history needs at least this many records unless told otherwise (`--min-records`): fewer
 * cannot tell one record's bad day from the series' level. */
enum { MW_HISTORY_MIN_RECORDS = 2 };

/* Judges rec against the records hist[0..nh) of its series (validated documents, any
 * order). Metrics: o->require (the required ones, every one judged). Fills *c completely;
 * c->history is set, and c->records the records pooled. When nh < min_records, nothing is
 * compared: c->refused says why and the exit code is MW_COMPARE_REFUSED (2). */
void mw_history_check(const json_t *rec, const json_t *const *hist, size_t nh,
		      size_t min_records, const struct mw_compare_opts *o,
		      struct mw_comparison *c);

#endif
