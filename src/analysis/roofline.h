/* src/analysis/roofline.h: the roofline (Williams, Waterman and Patterson, CACM 2009) of a decode step,
 * and the plausibility check of a measured MB/token against the analytic floor.
 *
 * Inputs are the analytic model (analytic.h), a bandwidth roof and a compute roof; measured
 * figures are optional, and a figure that was not measured stays "not measured" with its
 * reason: never 0. A record's figures reach here typed, read by record/record_view.c; the
 * roofline block a run's record carries is built in record/roofline_block.c. */
#ifndef MEMWALL_ROOFLINE_H
#define MEMWALL_ROOFLINE_H

#include <stdbool.h>
#include <stdio.h>

#include "analytic.h"
#include "mw.h"

/* The plausibility check's limits, as ratios of measured DRAM read bytes to the floor. */
#define MW_PLAUSIBLE_LOW 0.9
#define MW_PLAUSIBLE_HIGH 1.5

enum mw_verdict {
	MW_VERDICT_NOT_CHECKED, /* nothing measured, or the model nearly fits in the LLC */
	MW_VERDICT_PLAUSIBLE,
	MW_VERDICT_IMPLAUSIBLE, /* below 0.9x the floor: counters are missing traffic */
	MW_VERDICT_EXCESS,      /* above 1.5x the floor: traffic from elsewhere */
};

struct mw_plausibility {
	enum mw_verdict verdict;
	double ratio;    /* measured / floor; NAN when not checked */
	char text[1536]; /* the verdict explained, naming the instances counted */
};

/* "plausible", "IMPLAUSIBLE", "excess", "not checked". Static storage. */
const char *mw_verdict_name(enum mw_verdict v);

/* Checks measured DRAM read bytes per token (NAN: not measured) against a's floor.
 * instances[0..n) name the memory-controller instances that were counted. */
void mw_plausibility_check(const struct mw_analytic *a, double measured_bytes,
			   const char *const *instances, size_t n_instances,
			   struct mw_plausibility *out);

struct mw_roofline_inputs {
	double bw_gbps;            /* bandwidth roof, GB/s (10^9 B/s); NAN: none */
	char bw_source[512];
	double peak_flops;         /* compute roof, FLOP/s; NAN: none */
	char peak_source[256];
	double measured_tok_s;     /* NAN: not measured */
	double measured_bytes;     /* DRAM read bytes per token; NAN: not measured */
	char not_measured_why[512]; /* why measured_bytes is NAN */
	char tok_s_why[512];       /* why measured_tok_s is NAN; "" for "not a record" */
};

struct mw_roofline {
	double max_tok_s_bw;      /* BW / analytic bytes per token; NAN without a BW roof */
	double max_tok_s_compute; /* peak / FLOPs per token; NAN without a compute roof */
	double max_tok_s;         /* the smaller of the two that exist */
	const char *bound;        /* "memory", "compute" or "none" */
	double headroom;          /* max_tok_s / measured tok/s; NAN when not measured */
	double dram_efficiency;   /* measured bytes / analytic bytes per token; NAN when not */
};

/* The roofline arithmetic: max tok/s = min(BW / bytes per token, peak / FLOPs per token),
 * headroom = max / measured tok/s, DRAM efficiency = measured / analytic bytes per token. */
void mw_roofline_compute(const struct mw_analytic *a, const struct mw_roofline_inputs *in,
			 struct mw_roofline *out);

/* One point of the batch curve (issue 17): the analytic bytes per generated token at batch n
 * (mw_analytic_batch) under the two roofs. Aggregate tok/s: the memory roof BW / bytes per
 * token rises towards n x (weights dominate) while the compute roof peak / FLOPs per token
 * stays, since every token costs its own FLOPs. */
struct mw_roofline_point {
	struct mw_analytic_batch b;
	double tok_s_memory;  /* NAN without a bandwidth roof */
	double tok_s_compute; /* NAN without a compute roof */
	double tok_s;         /* the smaller of the two that exist; NAN: neither */
	const char *bound;    /* "memory", "compute" or "none" */
};
void mw_roofline_batch(const struct mw_analytic *a, const struct mw_roofline_inputs *in, int n,
		       struct mw_roofline_point *out);
/* The curve for ns[0..count) as a markdown table on f, with the speedup against ns[0]. */
void mw_roofline_batch_print(FILE *f, const struct mw_analytic *a,
			     const struct mw_roofline_inputs *in, const int *ns, size_t count);

/* Writes roofline.dat and scripts/roofline.gp into dir and runs gnuplot: log-log attainable
 * FLOP/s against FLOPs per byte, the two roofs and the points (analytic step, measured).
 * -ENOENT without gnuplot. */
int mw_roofline_plot(const struct mw_analytic *a, const struct mw_roofline_inputs *in,
		     const char *label, const char *dir, FILE *log, struct mw_error *err);

/* Writes each embedded script of scripts[0..n) into dir, then renders each as PNG and as SVG
 * (the scripts read fmt, 'png' or 'svg'; vars set the rest) in one gnuplot process run in
 * dir. 0, -ENOENT without gnuplot, -EIO when it fails (gnuplot's messages name the script
 * and the line). */
int mw_gnuplot_charts(const char *dir, const char *vars, const char *const *scripts, size_t n,
		      struct mw_error *err);

/* s as a gnuplot string literal in out (n bytes): single quotes, with ' doubled; cut short to
 * fit n, and left untouched when n < 3. */
void mw_gnuplot_quote(char *out, size_t n, const char *s);

#endif
