/* src/record/report_variants.h: the report of a record of variants (report_variants.c). */
#ifndef MEMWALL_REPORT_VARIANTS_H
#define MEMWALL_REPORT_VARIANTS_H

#include <jansson.h>
#include <stdio.h>

#include "mw.h"

/* Markdown: each variant's measured figures and analytic prediction, the batch-2 claim
 * beside its prediction and measurement, speculation's acceptance and AIOS's mechanisms.
 * Nothing for a record without variants. */
void mw_report_variants(FILE *f, const json_t *doc);

/* batch.dat and batch.png / .svg in dir (scripts/batch.gp): measured MB/token and tok/s
 * against N beside the analytic curve, for a record with plain variants at two or more N.
 * 0 (nothing written without them), -ENOENT without gnuplot, -errno otherwise. */
int mw_report_variants_plot(const json_t *doc, const char *dir, FILE *log, struct mw_error *err);

#endif
