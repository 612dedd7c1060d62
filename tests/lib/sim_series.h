/* tests/lib/sim_series.h: series of records made by `memwall run` on the simulated PMU, whose
 * DRAM bytes per token are known (tests/e2e/test_db_series.c, test_site_chromium.c).
 *
 * A short protocol (3 prompt tokens, D decode tokens, R runs, no warm-up, a 1 ms idle window,
 * no drift probe) runs the synthetic stories260K model with its DRAM counts scripted on a
 * recorded sysfs tree with intel_imc_free's two instances (read and write). A script gives
 * every decode token X counts of each instance's data_read (and X / 100 of data_write): the
 * MB/token it makes is t_series_mb_per_token(X), computed from the counts and the tree's
 * bytes per count. The builtin runner reads the counters once per window: per run, the idle
 * window's two reads, the prefill's start, its one chunk, then one read per decode token
 * (tests/e2e/test_run_sim.c has the plan), so each run is D + 4 reads, and a script's steps
 * give the idle window 1 count (its rate, subtracted over the decode time, is a few bytes a
 * token) and every other window X. Needs MEMWALL_COUNTERS=sim and MEMWALL_SYSFS_ROOT set to the
 * tree by the caller. */
#ifndef MEMWALL_TEST_SIM_SERIES_H
#define MEMWALL_TEST_SIM_SERIES_H

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "sim_tree.h"
#include "test.h"

/* The script of X counts per decode token for `runs` runs of `decode` tokens, into path. */
void t_series_script(const char *path, const char *tree, unsigned x, int runs, int decode);

/* Points memwall at tree's simulated PMU (MEMWALL_COUNTERS=sim, MEMWALL_SYSFS_ROOT) and
 * writes two series' scripts: dir/a.script of x_a counts per decode token and dir/b.script of
 * x_b (t_series_script), their paths into a and b (n bytes each). */
void t_series_ab(const char *dir, const char *tree, unsigned x_a, unsigned x_b, int runs,
		 int decode, char *a, char *b, size_t n);

/* MB/token of a script of X counts per decode token, from the tree's bytes per count. */
double t_series_mb_per_token(const char *tree, unsigned x);

/* The protocol NAME (a file dir/NAME.json; another name is another protocol file, so another
 * series) of `decode` tokens and `runs` runs; roofline is its "roofline" object's JSON. The
 * tok/s CV limit is off: runs of a millisecond on a busy machine differ tenfold. Returns
 * static storage. */
const char *t_series_protocol(const char *dir, const char *name, int decode,
				int runs, const char *roofline);

/* One `memwall run PROTO -o DIR` with the script at script; the record's path into out. */
void t_series_run(const char *dir, const char *proto, const char *script, char *out, size_t n);

#endif
