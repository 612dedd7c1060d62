/* src/record/export_aios.h: a memwall record in AIOS's own submission shape (`memwall export
 * aios`): the {"baseline": {...}} object AIOS's validation/baseline.py v1.4 writes, and the
 * Markdown comment its issue #2 asks for (../shared/reference/aios/submission.md).
 *
 * AIOS's "MB" is MiB (2^20 bytes) and its "GB" GiB (2^30 bytes); memwall's MB is 10^6 bytes.
 * Every figure is converted (x 10^6 / 2^20 for MB/token) and the notes say so.
 *
 * What is not measured by hardware is never exported as measured: a record whose DRAM counts
 * are SIMULATED (MEMWALL_COUNTERS=sim) or were not read is exported the way baseline.py
 * writes a run without a DRAM counter: mb_per_token and dram_reads_gb null, perf_available
 * false, counter_used null, and the reason in notes. Its tok/s, which the clock measured, is
 * kept; the pass criterion then falls back to the tok/s CV, as baseline.py's does. */
#ifndef MEMWALL_EXPORT_AIOS_H
#define MEMWALL_EXPORT_AIOS_H

#include <jansson.h>
#include <stdio.h>

#include "mw.h"

/* How the JSON is written: indented as baseline.py's json.dump(indent=2), numbers to 15
 * significant digits, so a value rounded to 3 decimals prints as such (17 would print
 * 2231.712 as 2231.7119999999999). */
#define MW_EXPORT_AIOS_JSON_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

#define MW_AIOS_ISSUE_URL "https://github.com/acasavaraju/AIOS/issues/2"

/* AIOS's baseline object for doc (read from source, for messages). *out is a new reference.
 * 0; -EINVAL with err saying why the record cannot be a baseline (an imported reference
 * record, a record of several variants, an external method memwall does not know, no
 * complete measured run); -ENOMEM. */
int mw_export_aios(const json_t *doc, const char *source, json_t **out, struct mw_error *err);

/* The comment for AIOS's issue #2: the header validation/README.md asks for (Hardware, OS,
 * Model, AIOS version), the exact command, the figures with their provenance, the notes, and
 * aios (from mw_export_aios) attached as JSON. Record text is escaped for Markdown. */
void mw_export_aios_comment(FILE *f, const json_t *doc, const json_t *aios);

#endif
