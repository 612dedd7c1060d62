/* src/record/aios_method.h: the AIOS baseline script's arithmetic, reproduced faults included,
 * for records whose protocol asks for it (measure.method "aios-whole-process";
 * protocols/README.md, "AIOS's method").
 *
 * AIOS's validation/baseline.py v1.4 (repository acasavaraju/AIOS, commit bbf1ceef) wraps the
 * whole llama.cpp process in `perf stat` with ONE counter, the first uncore_imc_free_running
 * instance's data_read, and divides its bytes by 2^20 and by the requested token count (its
 * --log-disable hides the timing lines that would confirm the count), calling the result "MB".
 * Its CV is the population standard deviation (ddof 0) over the mean, and a run passes when
 * that CV is below 5 %.
 *
 * These figures are AIOS's method's, never memwall's: they live under summary.aios_method and
 * the repetitions' figures as aios_method_MB_per_token, and every metric of memwall's own is
 * "not measured" in such a record, with the reason. */
#ifndef MEMWALL_AIOS_METHOD_H
#define MEMWALL_AIOS_METHOD_H

#include <jansson.h>

#include "mw.h"

#define MW_AIOS_METHOD "aios-whole-process" /* external.method of such a record */
#define MW_AIOS_PASS_CV_PCT 5.0             /* baseline.py: pass when CV < 5 % */

/* Computes external.repetitions[].figures and summary from the raw process records of a
 * record measured by AIOS's method, replacing what was there. -EINVAL (MW_RESULT_MALFORMED)
 * with err naming the field when a raw record is malformed, -ENOMEM. */
int mw_aios_method_derive(json_t *doc, const char *source, struct mw_error *err);

#endif
