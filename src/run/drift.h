/* src/run/drift.h: the bandwidth drift probe, run before and after a protocol's repetitions by
 * every engine row (engine_builtin.c, engine_external.c).
 *
 * A machine whose memory bandwidth changed while it was measured (thermal throttling, another
 * tenant, a governor decision) gives figures from two different machines. The probe measures
 * read bandwidth with memwall's own STREAM-style pass before the first repetition and after
 * the last, and the record's drift block keeps both with the protocol's tolerance
 * (drift.max_bandwidth_change_pct); `memwall validate` and the report judge the change. */
#ifndef MEMWALL_RUN_DRIFT_H
#define MEMWALL_RUN_DRIFT_H

#include "run_state.h"

struct mw_drift {
	double gbps[2];     /* before, after; NaN when not measured */
	char method[256];   /* how the probe measured, for the record */
	char why[512];      /* why a side was not measured */
};

/* The probe before (when 0) or after (when 1) the repetitions, said on the run's log. After
 * the second call run->drift holds the record's drift block (a new reference; NULL when out
 * of memory). d is the caller's, zeroed or not. */
void mw_drift_step(struct mw_drift *d, struct mw_run *run, int when);

#endif
