/* src/record/compare.h: whether two result records may be compared, and a verdict per metric.
 *
 * `memwall compare` (src/cli/cmd_compare.c) is a thin shell around this module; the output
 * formats are in compare_out.c. Two records are comparable when their effective settings
 * match (the table settings[] in compare.c); each metric then gets one verdict from the Welch
 * t-test over the runs and a threshold, or "not comparable" with the reason. */
#ifndef MEMWALL_RECORD_COMPARE_H
#define MEMWALL_RECORD_COMPARE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "metrics.h"
#include "provenance.h"

enum mw_cmp_verdict {
	MW_CMP_SAME,           /* no significant change, or one within the threshold */
	MW_CMP_IMPROVEMENT,    /* significant, beyond the threshold, in the good direction */
	MW_CMP_REGRESSION,     /* significant, beyond the threshold, in the bad direction */
	MW_CMP_INCONCLUSIVE,   /* beyond the threshold but not significant: more runs needed */
	MW_CMP_NOT_COMPARABLE, /* unmeasured on a side, drifted, acceptance failed, n < 2 */
	MW_N_CMP_VERDICTS,
};

/* "same", "improvement", "regression", "inconclusive", "not-comparable". Static storage. */
const char *mw_cmp_verdict_name(enum mw_cmp_verdict v);

/* Exit codes of `memwall compare`, worst first where several apply (src/README.md, "compare: the CI gate"). */
enum mw_compare_exit {
	MW_COMPARE_PASS = 0,           /* no regression; every required metric compared */
	MW_COMPARE_REGRESSION = 1,     /* a metric regressed */
	MW_COMPARE_REFUSED = 2,        /* bad usage, an unreadable record, or settings differ */
	MW_COMPARE_NOT_COMPARABLE = 3, /* a required metric could not be compared */
	MW_COMPARE_INCONCLUSIVE = 4,   /* a required metric changed more than the runs resolve */
};

struct mw_compare_opts {
	double max_regress_pct; /* a change beyond this many percent counts (default 5) where
				 * the protocol gives no tolerance_pct for the metric */
	bool max_regress_set;   /* --max-regress given: it replaces the protocol's tolerances */
	double alpha;           /* significance level of the t-test (0.05) */
	double power;           /* for runs_needed (0.8) */
	const char *const *require; /* metric names a CI job needs compared; NULL: the default */
	size_t n_require;
	bool force;             /* compare records whose settings differ (never a SIMULATED
				 * record with one that is not) */
};

/* Fills the defaults: 5 %, alpha 0.05, power 0.8, required dram_MB_per_token and tok_per_s. */
void mw_compare_opts_default(struct mw_compare_opts *o);

/* One setting that differs: the field as the README names it, each side's value as JSON text,
 * and where the value came from. */
struct mw_setting_diff {
	char field[64];
	char base[160], new[160];
	char note[320];
};

struct mw_metric_cmp {
	const struct mw_metric *metric;
	bool required;
	enum mw_cmp_verdict verdict;
	char reason[1024];       /* why not comparable or inconclusive; "" otherwise */
	size_t n[2];            /* runs, [0] base, [1] new; 0 when not measured */
	double mean[2], sd[2];  /* NaN when not measured */
	double delta, change_pct, t, df, p; /* NaN when not computed */
	long runs_needed;       /* inconclusive: runs per side that would resolve it at the
				 * observed variance; -1 more than MW_COMPARE_MAX_RUNS; 0 n/a */
	double tolerance_pct;   /* the change beyond which it counts (mw_compare_tolerance) */
	/* A check against a history (history.c): the rank test decides, on medians. */
	bool rank;
	double median[2];       /* NaN when not measured */
	double median_change_pct, u, p_u; /* Mann-Whitney U of NEW against BASE, its p */
	bool p_u_exact;
	size_t records;         /* history records pooled into BASE (rank only) */
};

enum { MW_COMPARE_MAX_DIFFS = 16, MW_COMPARE_MAX_RUNS = 1000 };

struct mw_comparison {
	struct mw_compare_opts opts;
	size_t n_diffs;
	struct mw_setting_diff diffs[MW_COMPARE_MAX_DIFFS];
	bool compared;          /* false: refused (settings differ and not forced) */
	size_t n;               /* metrics in m[] */
	struct mw_metric_cmp m[MW_N_METRICS];
	size_t count[MW_N_CMP_VERDICTS];
	int exit_code;          /* enum mw_compare_exit */
	char exit_reason[512];
	/* Who counted each side's DRAM figures ([0] BASE, [1] NEW), said on every output: a
	 * comparison of two simulated records is one of scripted counts. */
	enum mw_dram_source source[2];
	char source_tag[2][128]; /* mw_provenance_tag: "SIMULATED (intel_imc_free)", ... */
	bool layers_differ;     /* one side SIMULATED, the other not: refused even with --force */
	/* Set by a check against a history (history.c): BASE is the pooled runs of a series'
	 * records, not one record; the output formats say so. */
	bool history;
	char refused[200];      /* why a history check compared nothing ("" otherwise) */
	char provenance[256];   /* NEW's DRAM provenance (mw_provenance_words), when the caller
				 * sets it: the formats show it; "" shows nothing */
};

/* Checks opts->require against the metric table: 0, or -EINVAL with *bad set to the first
 * unknown name (borrowed from opts). */
int mw_compare_check_require(const struct mw_compare_opts *o, const char **bad);

/* The tolerance of metric name for a comparison whose NEW record is doc: --max-regress where
 * given, else the protocol's own (protocol.document.tolerance_pct.<name>), else
 * o->max_regress_pct. */
double mw_compare_tolerance(const json_t *doc, const char *name, const struct mw_compare_opts *o);

/* Why a record's metric (its summary.metrics entry met, NULL when absent) cannot be compared,
 * into buf: "" when it can: not measured, DRIFTED, an acceptance criterion covering it failed,
 * fewer than min_runs runs (2 for a t-test; 1 for a record pooled into a history). */
void mw_compare_side_problem(const json_t *doc, const json_t *met, const char *name,
			     size_t min_runs, char *buf, size_t n);

/* Sets r->verdict from a change in percent (NaN: judged by delta != 0), its p-value and
 * r->tolerance_pct: same, or improvement / regression (by r->metric->better) when significant,
 * or inconclusive. */
void mw_compare_judge(struct mw_metric_cmp *r, double change_pct, double delta, double p,
		      const struct mw_compare_opts *o);

/* Whether name is among o's required metrics. */
bool mw_compare_required(const struct mw_compare_opts *o, const char *name);

/* Counts c's verdicts and sets its exit code and reason (the worst outcome decides). */
void mw_compare_decide(struct mw_comparison *c);

/* Compares two validated records: settings first, then (when they match, or when forced)
 * every metric either record carries and every required one. Fills *c completely. */
void mw_compare(const json_t *base, const json_t *new, const struct mw_compare_opts *o,
		struct mw_comparison *c);

/* Runs per side that a two-sided Welch t-test at level alpha needs to detect a difference
 * delta with the given power, with standard deviations sd1 and sd2 (equal n per side);
 * -1 when more than MW_COMPARE_MAX_RUNS would be needed, 0 when it cannot be said (no
 * spread). */
long mw_compare_runs_needed(double delta, double sd1, double sd2, double alpha, double power);

/* The output formats (compare_out.c). paths[2]: the records as named on the command line. */
void mw_compare_print_md(FILE *f, const struct mw_comparison *c, const char *const paths[2]);
void mw_compare_print_json(FILE *f, const struct mw_comparison *c, const char *const paths[2]);
void mw_compare_print_junit(FILE *f, const struct mw_comparison *c, const char *const paths[2]);

#endif
