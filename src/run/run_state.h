/* src/run/run_state.h: a run in progress and the engine rows, for the files in src/run/ only.
 * Types and the rows' names only: no file defines what this header declares but the rows
 * themselves, so the rows depend on it and the pipeline on them, never the other way round.
 *
 * One run loop (pipeline.c) drives one of the engine rows below: memwall's own engine, read
 * at every token (engine_builtin.c), or a foreign program measured around it by the
 * differential method (engine_external.c). Both read the same plan (plan.h) and the same
 * counters (counters.h), and the record is built in one place (record_build.c). A new kind of
 * engine is one file and one row in pipeline.c's table. */
#ifndef MEMWALL_RUN_RUN_STATE_H
#define MEMWALL_RUN_RUN_STATE_H

#include <jansson.h>

#include "counters.h"
#include "plan.h"
#include "runner.h"

/* One execution of a protocol in progress. The pipeline owns it; an engine row fills the
 * parts marked "row" and keeps its own state behind `state`. */
struct mw_run {
	const struct mw_protocol *p;
	const struct mw_run_options *o;
	struct mw_plan plan;
	struct mw_counters ctr;
	char started[32];      /* created_utc */
	json_t *machine;       /* mw_machine_describe, taken once before the runs */
	json_t *calibration;   /* what counters.dram says of calibration (dram_calibration.h);
				* NULL when DRAM is not measured */
	json_t *verification;  /* what counters.dram says of verification (dram_verify.h); NULL
				* when DRAM is not measured */
	/* row: what the record says of the engine, the model and the runs */
	json_t *engine;        /* the record's engine block (kind, threads, cpus, ...) */
	json_t *model;         /* model facts the row knows: arch, shape, weight_bytes, synthetic */
	const char *kernels;   /* memwall.kernels: the builtin engine's ISA kernels; NULL */
	const char *quant_kernels; /* memwall.quant_kernels: its quant table; NULL */
	json_t *preflight;     /* NULL when the row makes no preflight checks */
	json_t *software;      /* counters.software: the events that were read */
	json_t *drift;         /* the record's drift block */
	json_t *runs;          /* runs[] (builtin); [] for external engines */
	json_t *external;      /* the differential method's block; NULL for builtin */
	char stop_why[1024];   /* "" when every run completed */
	void *state;
};

struct mw_engine_row {
	enum mw_engine_kind kind;
	bool energy;           /* package energy is read around this engine's runs */
	/* Opens what the runs need (the model, the program) before the counters are opened. */
	enum mw_run_status (*prepare)(struct mw_run *run, struct mw_error *err);
	/* The warm-ups and the measured runs; fills the row's parts of *run. */
	enum mw_run_status (*execute)(struct mw_run *run, struct mw_error *err);
	/* After the record is derived: a closing word on the log (may be NULL). */
	void (*summarize)(const struct mw_run *run, const json_t *doc);
	void (*close)(struct mw_run *run);
};

extern const struct mw_engine_row mw_engine_builtin;
extern const struct mw_engine_row mw_engine_external;

#endif
