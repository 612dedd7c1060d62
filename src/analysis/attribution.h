/* src/analysis/attribution.h: where each decode token's bytes go, from a result record: weights, KV
 * cache, and the remainder of the measured DRAM bytes (activations, spills and everything
 * else): the decomposition AIOS is built on (MB/token = weight reads + KV reads + activation
 * spill), shown by `memwall report`.
 *
 * Weights and KV are engine-accounted (computed from tensor shapes, named as such): the
 * record's per-token engine bytes are weights + KV read + KV written, and the KV part grows by
 * the same amount at every position, so the two separate exactly from the raw data. The
 * remainder exists only where DRAM was measured; otherwise it is "not measured" with the
 * reason, never 0. */
#ifndef MEMWALL_ATTRIBUTION_H
#define MEMWALL_ATTRIBUTION_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "mw.h"

struct mw_attribution {
	bool engine;           /* weights and kv are known */
	double weights;        /* engine-accounted weight bytes per decode token */
	double kv;             /* engine-accounted KV bytes (read + written) per decode token,
				* mean over the measured tokens */
	double kv_per_position; /* what one more cached position adds to a step */
	char engine_reason[256];
	bool dram;             /* dram_bytes and remainder are measured */
	double dram_bytes;     /* DRAM read + write per decode token (idle baseline removed) */
	double remainder;      /* dram_bytes - weights - kv: activations and everything else */
	char dram_reason[512];
};

void mw_attribution_compute(const json_t *doc, struct mw_attribution *out);
/* The "Attribution" section of `memwall report --format md`. dram_note (may be NULL) is the
 * report's footnote mark for why DRAM was not measured ("[1]"), said there instead of the
 * reason, which the report gives once. */
void mw_attribution_print_md(FILE *f, const json_t *doc, const char *dram_note);
/* attribution.dat and scripts/attribution.gp (a stacked bar) into dir, run with gnuplot. */
int mw_attribution_plot(const json_t *doc, const char *dir, FILE *log, struct mw_error *err);

#endif
