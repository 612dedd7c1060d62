/* src/record/report_counters.h: what a report says about how the DRAM counters counted: their
 * multiplexing share where it fell below 100 %, and the `perf stat` command that checks them
 * (perf_line.h). Used by the run's summary and `memwall report` (report.c). */
#ifndef MEMWALL_RECORD_REPORT_COUNTERS_H
#define MEMWALL_RECORD_REPORT_COUNTERS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* The smallest dram_running_share of doc's windows (runs[].idle, prefill, decode, and each
 * external repetition's short and long process): *share and the window's path into where
 * (e.g. "runs[2].decode"); *below the number of windows under 1, *windows how many have a
 * share. false when no window has one (no DRAM, or a record made before the share). */
bool mw_record_min_share(const json_t *doc, double *share, char *where, size_t n, int *below,
			 int *windows);

/* A markdown bullet, "- **Multiplexed:** ...", when a window's share is below 1: the smallest
 * share, where, the instance (decode.dram_instances) and what it means; nothing otherwise. */
void mw_report_multiplex_md(FILE *f, const json_t *doc);

/* "Check with perf" and the `perf stat -a -e ...` line for the events the record opened
 * (counters.dram.opened) around the recorded memwall command, with the note on scale and
 * units; nothing when DRAM was not measured or no event was opened. */
void mw_report_perf_md(FILE *f, const json_t *doc);

#endif
