/* src/record/report.h: printing result records as tables and plotting them with gnuplot. */
#ifndef MEMWALL_REPORT_H
#define MEMWALL_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "mw.h"

/* The formats of `report`; jsonl and sql are one line or row per metric (report_rows.c); bmf
 * (Bencher) and the gab ones (github-action-benchmark) one entry per figure (report_bench.c).
 * Formats that only some verbs take come after MW_FORMAT_JSON (cmd_db.c relies on it). */
enum mw_format {
	MW_FORMAT_MD,
	MW_FORMAT_CSV,
	MW_FORMAT_JSON,
	MW_FORMAT_JSONL,
	MW_FORMAT_SQL,
	MW_FORMAT_BMF,
	MW_FORMAT_GAB_SMALLER,
	MW_FORMAT_GAB_BIGGER,
};

/* "md", "csv", "json", "jsonl", "sql", "bmf", "gab-smaller", "gab-bigger", or "gab" (the
 * same as gab-smaller: the headline MB/token is smaller-is-better); -EINVAL otherwise. */
int mw_format_parse(const char *text, enum mw_format *out);

/* Prints the record's summary: markdown tables, one CSV table of every metric, or the summary
 * and acceptance objects as JSON. */
void mw_report_print(FILE *f, const json_t *doc, enum mw_format fmt);

/* Writes the plot data and the gnuplot scripts (compiled into memwall from scripts/NAME.gp)
 * into dir, runs gnuplot on each, and leaves NAME.png and NAME.svg beside them. Names of the
 * charts made go to log. -ENOENT when gnuplot is not installed; -errno otherwise. */
int mw_report_plot(const json_t *doc, const char *dir, FILE *log, struct mw_error *err);

#endif
