/* src/analysis/mechanisms.h: `memwall headroom`'s table of AIOS's mechanisms (Model Contract R1
 * to R5), each with three figures kept apart: AIOS's projected reduction (protocols/projections/
 * aios.json, a projection), memwall's analytic prediction for this model (computed from its
 * tensor table and, where it says so, from measurements of its activations or weights), and the
 * measured reduction where the engine accounts for one. A figure that does not exist is null
 * with the reason, never a stand-in. */
#ifndef MEMWALL_MECHANISMS_H
#define MEMWALL_MECHANISMS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "analytic.h"
#include "engine.h"
#include "headroom.h"

/* R2's measurement: the engine-accounted KV bytes one decode token read at a context
 * (`memwall generate --context C -n 2 --report-line`'s kv_read_per_token: the token at position
 * C, which attends over C + 1 positions). */
struct mw_r2_measured {
	int context;
	uint64_t kv_read;
};
#define MW_MECH_R2_MAX 8

struct mw_mech_inputs {
	const json_t *proj;                /* the projections file */
	const struct eng_tensor_table *t;
	const struct mw_analytic *a;       /* the dense step at the baseline position */
	const struct mw_r1 *r1;            /* NULL when R1 was not measured */
	const char *r1_reason;             /* why not, then */
	const struct mw_r3 *r3;            /* NULL when R3 was not measured */
	const char *r3_reason;
	const struct mw_r3_engine *r3_engine; /* NULL when the engine did not run the model */
	const struct mw_r4 *r4;
	const struct mw_r2_measured *r2;   /* n_r2 measurements, NULL when none was given */
	size_t n_r2;
	uint64_t l2, llc;                  /* 0: unknown */
	bool manifest;
};

/* The contexts of R2's predictions. */
#define MW_MECH_R2_CONTEXTS { 1024, 2048, 4096 }

/* [{rule, mechanism, projection: {kind, text, range_pct}, prediction: {kind, reduction_pct,
 * text}, measurement: {kind, reduction_pct, text}}] for R1 .. R5. New reference. */
json_t *mw_mechanisms_build(const struct mw_mech_inputs *in);

#endif
