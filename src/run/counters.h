/* src/run/counters.h: the counters a run reads, opened once and read together.
 *
 * A snapshot keeps every figure with its state (probes.h, enum prb_state), so a counter that
 * did not run, a read that failed and a backend without a read/write split each stay what
 * they are all the way to the record: none of them becomes a measured 0. Used by both engine
 * rows of the run pipeline (engine_builtin.c, engine_external.c). */
#ifndef MEMWALL_RUN_COUNTERS_H
#define MEMWALL_RUN_COUNTERS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "mw.h"
#include "plan.h"
#include "probes.h"

/* The software events counted over each run, with their keys in the result record: they
 * explain jitter (context switches, migrations) and show CPU time and page faults. */
struct mw_sw_event {
	const char *event; /* the perf event name, as prb_set_add takes it */
	const char *key;   /* the record's key under counters.software */
};
#define MW_N_SW 4
extern const struct mw_sw_event mw_sw_events[MW_N_SW];

struct mw_counters {
	struct prb_system *sys;   /* NULL when the PMU list could not be read */
	struct prb_dram *dram;    /* NULL: DRAM not measured, for dram_reason */
	char dram_reason[1024];
	struct prb_set *eset;     /* package energy; NULL: not measured, for energy_reason */
	int eidx;
	struct prb_reading *ereadings;
	char energy_reason[1024];
};

/* One reading of every counter, taken together. */
struct mw_snap {
	uint64_t ns;
	bool dram_open;                /* false: DRAM is not measured at all */
	struct prb_dram_sample dram;   /* bytes since open, each with its state */
	enum prb_state energy;
	double joules;
};

/* Opens the PMU list, the DRAM counters the plan asks for and, when energy is true, package
 * energy. A required counter that is unavailable is an error naming counters.dram or
 * counters.energy (-ENODEV); an optional one is said on the log as "not measured" with the
 * reason. Close with mw_counters_close, also after a failure. */
int mw_counters_open(struct mw_counters *c, const struct mw_plan *pl, bool energy,
		     FILE *log, struct mw_error *err);
/* The DRAM counters alone, for a command that is not a protocol (`memwall stat`): the PMU list
 * and the backend named (NULL: the most accurate present), as a run opens them; no energy.
 * 0 when DRAM is open; -EINVAL for a backend name no backend has; -ENODEV when this machine's
 * DRAM cannot be counted (c->dram_reason says why, in one line). Close with
 * mw_counters_close, also after a failure. */
int mw_counters_open_dram(struct mw_counters *c, const char *backend);
void mw_counters_close(struct mw_counters *c);
void mw_counters_read(struct mw_counters *c, struct mw_snap *s);

/* What MB/token counts with the open DRAM backend: "read" where it splits reads from writes,
 * "total" where it cannot (the record's counters.dram.mb_per_token_basis). Static storage. */
const char *mw_counters_dram_basis(const struct mw_counters *c);

/* The record's counters.dram and counters.energy blocks. New references. */
json_t *mw_counters_dram_json(const struct mw_counters *c);
json_t *mw_counters_energy_json(const struct mw_counters *c);

/* later - earlier, figure by figure, each with its state. */
void mw_snap_dram_delta(const struct mw_snap *later, const struct mw_snap *earlier,
			struct prb_dram_sample *out);

/* A byte figure for the record: the count when measured, else null. New reference. */
json_t *mw_bytes_json(struct prb_bytes b);

/* Sets a window's dram_read_bytes, dram_write_bytes and dram_total_bytes from d (null for a
 * figure that was not measured) and, when DRAM is open, its dram_state: each figure's state
 * by name ("measured", "not-run", "read-failed", "not-provided"), and dram_running_share: the
 * smallest time running / time enabled of its instances (null when none has a time). */
void mw_window_set_dram(json_t *window, bool dram_open, const struct prb_dram_sample *d);

/* Per instance of d (a delta of the backend whose status is st): {pmu, cpu, read_bytes,
 * write_bytes, total_bytes (null when not measured), time_enabled_ns, time_running_ns,
 * running_share}. New reference. */
json_t *mw_dram_instances_json(const struct prb_dram_status *st, const struct prb_dram_sample *d);

/* What was opened on each instance (the record's counters.dram.opened): {pmu, cpu, events:
 * [{dir, type, config, config1 when set, bytes_per_count}]}. New reference. */
json_t *mw_dram_opened_json(const struct prb_dram_status *st);

#endif
