/* src/run/runner.h: the run layer's public face: executes a protocol and builds its result
 * record (`memwall run`). The options and statuses here are what every part of src/run/ shares;
 * mw_runner_run is the pipeline (src/run/pipeline.c). */
#ifndef MEMWALL_RUNNER_H
#define MEMWALL_RUNNER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "mw.h"
#include "protocol.h"

struct mw_run_options {
	int runs;            /* > 0 overrides the protocol's runs */
	int tokens;          /* > 0 overrides decode_tokens */
	int threads;         /* > 0 overrides engine.threads */
	int argc;            /* the command line, recorded in the result */
	char **argv;
	FILE *log;           /* progress and warnings; NULL for none */
	const char *llama_bin; /* external engines: the program instead of engine.command[0] */
	int phases;          /* 1: also read counters at the engine's phase markers (attention,
			      * FFN, classifier) for the report's attribution; 2: and per layer.
			      * It adds readings inside every step, so it is off (0) unless asked */
	bool force;          /* run a model larger than the memory available (else refused) */
	const char *calibration; /* --calibration FILE: the calibration store to read instead of
				  * the user's (dram_calibration.h); NULL for the user's */
	bool no_calibration; /* --no-calibration: record none (the record says so) */
};

/* What went wrong, for the caller's exit code. */
enum mw_run_status {
	MW_RUN_DONE = 0,          /* every run completed */
	MW_RUN_INTERRUPTED = 1,   /* SIGINT or SIGTERM, or an external engine's run was invalid:
				   * *out is a partial record marked incomplete, with the reason */
	MW_RUN_BAD_INPUT = 2,     /* the protocol or its files are wrong: err says how */
	MW_RUN_ENVIRONMENT = 3,   /* this machine or build cannot do it: err says why */
};

/* Executes p. On MW_RUN_DONE and MW_RUN_INTERRUPTED, *out is a new result record with every
 * derived figure computed (the caller writes it); otherwise *out is NULL and err explains.
 * Installs SIGINT and SIGTERM handlers for the duration: the first signal ends the current run
 * and keeps what was measured; a second one kills as usual. */
enum mw_run_status mw_runner_run(const struct mw_protocol *p, const struct mw_run_options *opt,
				 json_t **out, struct mw_error *err);

#endif
