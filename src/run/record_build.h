/* src/run/record_build.h: a run's result record, built in one place for every engine row. */
#ifndef MEMWALL_RUN_RECORD_BUILD_H
#define MEMWALL_RUN_RECORD_BUILD_H

#include <jansson.h>

#include "run_state.h"

/* The result record of run, before derivation: the provenance, the plan, the counters and
 * the row's parts, each in one place. New reference, or NULL when memory ran out. */
json_t *mw_record_build(const struct mw_run *run);

#endif
