/* src/runner_common.h: what the two halves of `memwall run` share, the builtin engine's runner
 * (src/runner.c) and the external engines' one (src/runner_external.c). Not for other modules:
 * they go through src/runner.h. */
#ifndef MEMWALL_RUNNER_COMMON_H
#define MEMWALL_RUNNER_COMMON_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes.h"
#include "runner.h"

/* The software events counted over each run, with their keys in the result record: they
 * explain jitter (context switches, migrations) and show CPU time and page faults. */
struct mw_run_sw_event {
	const char *event; /* the perf event name, as prb_set_add takes it */
	const char *key;   /* the record's key under counters.software */
};
#define MW_RUN_N_SW 4
extern const struct mw_run_sw_event mw_run_sw_events[MW_RUN_N_SW];

/* The SIGINT and SIGTERM handlers in force before mw_run_signals_catch. */
struct mw_run_signals {
	struct sigaction old_int, old_term;
};

/* Clears the stop request and catches SIGINT and SIGTERM until mw_run_signals_restore: the
 * first one only asks the runner to stop (mw_run_stopped), a second one kills as usual. */
void mw_run_signals_catch(struct mw_run_signals *saved);
void mw_run_signals_restore(const struct mw_run_signals *saved);
/* 0, or the signal (SIGINT or SIGTERM) that asked the current run to stop. */
int mw_run_stopped(void);

/* Sleeps ms milliseconds, or less when a stop is asked for meanwhile. */
void mw_run_sleep_ms(int ms);

/* Prints "memwall run: ..." and a newline to o->log, if any, and flushes it. */
void mw_run_say(const struct mw_run_options *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Opens the DRAM counters p asks for (counters.dram, counters.backend) on sys. New handle for
 * the caller to close with prb_dram_close; NULL when DRAM is not measured, with the reason in
 * reason (n bytes). */
struct prb_dram *mw_run_dram_open(const struct mw_protocol *p, struct prb_system *sys,
				  char *reason, size_t n);

/* After mw_run_dram_open: when DRAM is not measured (have false), an error naming
 * counters.dram if p requires it (returns -ENODEV), else a "not measured" line with the
 * reason on o's log (returns 0). */
int mw_run_dram_check(const struct mw_protocol *p, const struct mw_run_options *o, bool have,
		      const char *reason, struct mw_error *err);

/* The record's counters.dram block for dram (NULL: not measured, for reason). New reference. */
json_t *mw_run_dram_json(const struct prb_dram *dram, const char *reason);

/* MW_GIT_DESCRIBE split into the commit (without "+dirty") and whether the tree was dirty. */
void mw_run_git_split(char *commit, size_t n, bool *dirty);

#endif
