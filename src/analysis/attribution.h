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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mw.h"

/* What attribution takes from a record, typed: record/record_view.c reads it
 * (mw_record_attribution_read); nothing here reads JSON. */

/* The phases of a decode step as `memwall run --phases` records them (decode.phases). */
enum mw_phase { MW_PHASE_ATTENTION, MW_PHASE_FFN, MW_PHASE_CLASSIFIER, MW_PHASE_COUNT };
/* "attention", "ffn", "classifier": the phase's key in decode.phases and its name in the
 * report. Static storage. */
const char *mw_phase_name(enum mw_phase p);

struct mw_attribution_phase {
	int64_t engine_bytes;       /* engine-accounted, summed over the run's decode tokens */
	bool dram;                  /* both DRAM figures were read at the markers */
	int64_t dram_read, dram_write; /* gross, before the idle baseline; 0 when !dram */
};

/* One layer of `--phases=layers`: DRAM bytes of its attention and FFN, summed over the run. */
enum { MW_LAYER_ATTN_READ, MW_LAYER_ATTN_WRITE, MW_LAYER_FFN_READ, MW_LAYER_FFN_WRITE,
       MW_LAYER_FIGURES };
struct mw_attribution_layer {
	bool dram;                         /* all four were read */
	int64_t bytes[MW_LAYER_FIGURES];   /* 0 when !dram */
};

/* One complete measured run (warm-up and incomplete runs are not read). */
struct mw_attribution_run {
	int64_t prefill_tokens;    /* prefill.tokens; 0 when the run records none */
	size_t n_tokens;
	int64_t *engine_bytes;     /* (n_tokens): tokens.engine_bytes, one per decode token */
	bool phases;               /* decode.phases was recorded */
	int64_t decode_tokens;     /* decode.tokens, with phases */
	struct mw_attribution_phase phase[MW_PHASE_COUNT];
	size_t n_layers;
	struct mw_attribution_layer *layers; /* (n_layers); NULL without --phases=layers */
};

struct mw_attribution_input {
	size_t n_runs;
	struct mw_attribution_run *runs; /* (n_runs) */
	bool dram_read, dram_write;      /* summary.metrics.dram_{read,write}_bytes_per_token
					  * measured */
	double dram_read_mean, dram_write_mean; /* bytes per decode token; NAN when not */
	const char *dram_reason;         /* why DRAM read was not measured (the metric's reason,
					  * else counters.dram.reason); NULL when neither says */
	bool simulated;                  /* counters.dram.layer "sim": never called measured */
};

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

void mw_attribution_compute(const struct mw_attribution_input *in, struct mw_attribution *out);
/* The "Attribution" section of `memwall report --format md`. dram_note (may be NULL) is the
 * report's footnote mark for why DRAM was not measured ("[1]"), said there instead of the
 * reason, which the report gives once. */
void mw_attribution_print_md(FILE *f, const struct mw_attribution_input *in,
			     const char *dram_note);
/* attribution.dat and scripts/attribution.gp (a stacked bar) into dir, run with gnuplot. */
int mw_attribution_plot(const struct mw_attribution_input *in, const char *dir, FILE *log,
			struct mw_error *err);

#endif
