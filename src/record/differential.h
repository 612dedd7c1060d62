/* src/record/differential.h: the differential method, the arithmetic behind an external engine's
 * figures (results/README.md, "External engines").
 *
 * A foreign program's counters cover everything it did: loading the model, evaluating the
 * prompt, generating, exiting. Running the same command at two lengths N1 < N2 and taking
 *
 *     per token = (B2 - B1) / (N2 - N1)
 *
 * cancels what both runs share (load, prompt, start-up and exit), leaving the cost of the
 * N2 - N1 extra decode steps. B is a counter's count over the whole process minus, for
 * system-wide counters (DRAM), the idle rate measured around it times the process's wall time.
 * The same arithmetic applies to every counter a record holds: DRAM bytes, engine-accounted
 * bytes, software counters. Beside each figure the record keeps the whole-process figure
 * B2 / N2 (named "..._whole_process"), the division the AIOS baseline script makes, so the
 * difference shows.
 *
 * Token counts are the ones the output adapter confirmed (never the requested ones); tok/s is
 * the engine's own: eval runs / eval time of the long run. */
#ifndef MEMWALL_DIFFERENTIAL_H
#define MEMWALL_DIFFERENTIAL_H

#include <jansson.h>
#include <stdbool.h>

#include "mw.h"

/* One counter of a process record and the figures made from it; the table is in
 * differential.c. */
struct mw_diff_counter {
	const char *raw;     /* key in external.repetitions[].{short,long} (or .software) */
	bool software;       /* under .software */
	bool idle;           /* system-wide: subtract the idle rate times the wall time */
	const char *figure;  /* the differential figure; + "_whole_process" for B2 / N2 */
	double scale;        /* bytes per unit of the figure (1e6 for MB) */
	const char *unit;
	const char *needs;   /* "dram", "engine" or "software": where a missing value comes from */
};

/* The table; *n receives its row count. Static storage. */
const struct mw_diff_counter *mw_diff_counters(size_t *n);

/* Computes external.repetitions[].figures, summary and the counts in summary from the raw
 * process records of an external run's doc, replacing what was there. -EINVAL with err naming
 * the field when a raw record is malformed. */
int mw_differential_derive(json_t *doc, const char *source, struct mw_error *err);

/* The fewest tokens a counted long run generated (as its adapter confirmed), for the
 * acceptance criterion min_tokens; -1 when doc is not external or no repetition counts. */
long long mw_differential_least_tokens(const json_t *doc);

/* The values of figure name in the repetitions of an external run's doc that its summary
 * counts (not warm-ups, both processes valid), in order, into v[0..cap); returns how many
 * there were (more than cap: only cap written). */
size_t mw_differential_samples(const json_t *doc, const char *name, double *v, size_t cap);

#endif
