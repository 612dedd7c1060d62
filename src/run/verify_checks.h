/* src/run/verify_checks.h: `memwall verify`'s checks (verify_checks.c) on its meters
 * (verify_meters.h, read at each boundary): each canary pass in both directions against what the stream
 * moved, net of the idle rate, each instance against its fair share, resctrl against the
 * controllers. Used by verify_run.c (the measurement and the record), dram_verify.c (perf)
 * and verify_matrix.c (--matrix). */
#ifndef MEMWALL_RUN_VERIFY_CHECKS_H
#define MEMWALL_RUN_VERIFY_CHECKS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "probes.h"
#include "topology.h"
#include "verify_meters.h"
#include "verify_numa.h"
#include "verify_thresholds.h"

/* ---- checks (verify_checks.c) */

/* The figure f (PRB_DRAM_READ, _WRITE, _TOTAL) of an instance or of a sample's sums. */
const struct prb_bytes *mw_verify_figure(const struct prb_dram_instance_sample *is, unsigned f);
const char *mw_verify_figure_name(unsigned f);
/* An instance's name: its PMU, "@cpuN" added where several instances share a PMU. */
void mw_verify_label(const struct prb_dram_status *st, int i, char *buf, size_t n);
/* Bytes of figure f counted by instance i over the window [a, b], net of the idle rate
 * (the idle window's bytes scaled by the two windows' time_enabled); NaN when not measured,
 * *state then saying why. raw and bg (may be NULL) receive the raw count and the
 * background. */
double mw_verify_net(struct mw_verify_meters *m, int i, unsigned f, int a, int b,
		     enum prb_state *state, double *raw, double *bg);
/* The sum of figure f over every instance over [a, b], net of the idle rate; NaN when an
 * instance's figure was not measured, *state then saying why. */
double mw_verify_sum_net(struct mw_verify_meters *m, unsigned f, int a, int b,
			 enum prb_state *state);
/* One check, appended to checks: measured against expected, within threshold percent; a
 * measured 0 fails whatever the threshold. who ("memwall", "resctrl") names the meter. */
void mw_verify_check(json_t *checks, const char *name, const char *subject, double expected,
		     double measured, double threshold, const char *against, const char *who);
/* A figure expected to stay at the idle rate: |measured| within limit_pct of scale bytes. */
void mw_verify_check_idle(json_t *checks, const char *name, const char *subject,
			  double measured, double scale, double limit_pct);
/* A figure that was not counted: a failed check with its state, never a 0. */
void mw_verify_not_counted(json_t *checks, const char *name, const char *subject,
			   enum prb_state state);
bool mw_verify_passed(const json_t *check);

/* One placement's two passes: the readings that end them, and what the stream moved. */
struct mw_verify_passes {
	int start, after_read, after_write;
	struct eng_stream_sample rs, ws;
	bool nt;              /* the write pass had non-temporal stores */
};

/* Checks both directions of both passes of target tg (index k of the plan, named when the
 * plan has several) and returns {"label", "node", "placement", "passes": {"read", "write"}}.
 * placement: {"policy", "nodes", "cpus", "applied", "reason"}, built by the caller. */
json_t *mw_verify_target_check(struct mw_verify_meters *m, const struct mw_verify_plan *p,
			       int k, const struct mw_verify_passes *ps, json_t *placement,
			       json_t *checks);

/* resctrl MBM against the memory controllers over every canary pass: the windows
 * m->canary[0 .. n_canary) (each placement's passes, from its start to its write pass's end),
 * summed. */
json_t *mw_verify_resctrl_check(struct mw_verify_meters *m, const char *why, json_t *checks);


#endif
