/* src/record/report_rows.h: one line or row per metric of a record (`report --format jsonl` and
 * `--format sql`), in the spirit of llama-bench's outputs. */
#ifndef MEMWALL_REPORT_ROWS_H
#define MEMWALL_REPORT_ROWS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* The table --format sql creates and fills. */
#define MW_REPORT_SQL_TABLE "memwall_metrics"

/* One JSON object per line (jsonl), or with sql a CREATE TABLE IF NOT EXISTS and one INSERT per
 * metric, for each of the record's summary metrics: the record's context (sha256 when given, may
 * be NULL; protocol, model, backend, machine, memory configuration) then the metric's figures.
 * NaN and absent figures are null / NULL. results/README.md documents the columns. */
void mw_report_rows(FILE *f, const json_t *doc, const char *sha256, bool sql);

#endif
