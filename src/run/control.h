/* src/run/control.h: what every part of a run shares to be stopped and to talk: the stop
 * request from SIGINT or SIGTERM, sleeps that end early on one, and the progress log. */
#ifndef MEMWALL_RUN_CONTROL_H
#define MEMWALL_RUN_CONTROL_H

#include <signal.h>

#include "runner.h"

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
/* "SIGTERM" or "SIGINT (Ctrl-C)", for the signal that stopped the run. Static storage. */
const char *mw_run_stop_name(void);

/* The n tokens into sequence seq of s from position 0, one pass (ENG_PREFILL_CHUNK tokens)
 * per call, so the passes fall where one call puts them, with the stop request checked
 * between: a SIGTERM during a 65536-token context ends the run within a pass, not after the
 * whole prompt (issue 28). 0 with *logits the last token's (NULL when stopped first), or the
 * engine's error. */
struct eng_session;
int mw_run_prefill(struct eng_session *s, int seq, const int *tokens, int n,
		   const float **logits);

/* Sleeps ms milliseconds, or less when a stop is asked for meanwhile. */
void mw_run_sleep_ms(int ms);

/* Prints "memwall run: ..." and a newline to o->log, if any, and flushes it. */
void mw_run_say(const struct mw_run_options *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
