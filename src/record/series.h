/* src/record/series.h: which series a record belongs to (`memwall db series|check|changes`).
 *
 * A series is the history of one measurement repeated over time: records of the same machine,
 * protocol, model, engine and DRAM counter layer. Its key is computed here, once, from the
 * record alone (never from the machine that reads it), and the store files each record under
 * it (store.c) and groups by it (store_series.c). The key's parts:
 *
 *   machine   the fingerprint the calibration and verification stores key on
 *             (mw_machine_fingerprint, base/machine.h): CPU name, family, model, stepping,
 *             microcode, kernel, the DRAM backend and its instances (PMU@CPU), with the
 *             record's memory configuration (machine.memory_config, SMBIOS) as its DIMMs
 *   protocol  its name, the sha256 of its file and the command line's overrides
 *   model     the sha256 of the model file (its name only where no sha256 was taken)
 *   engine    what ran, as built: builtin with its f32 and quant kernel tables, or the external
 *             program's name and output adapter. Not its version: a CI job measures every
 *             commit of an engine, and a series must span them for `db changes` to name the
 *             commit where a figure stepped (each record's version is a value, shown there)
 *   counters  the DRAM counter layer (syscall, libperf, sim, or none: engine-accounted only)
 *             and backend: a series never holds SIMULATED and hardware records together
 *
 * The figures are values, never part of the key. */
#ifndef MEMWALL_RECORD_SERIES_H
#define MEMWALL_RECORD_SERIES_H

#include <jansson.h>
#include <stddef.h>

#include "mw.h"

struct mw_series_key {
	char id[65];          /* sha256 of the key's compact JSON with sorted keys */
	json_t *key;          /* {"machine", "protocol", "model", "engine", "counters"}: owned */
	json_t *fingerprint;  /* the machine fingerprint itself (key.machine is its sha256): owned */
	/* Labels for tables, from the record; not part of the key where the key has a hash. */
	char machine[160];    /* the CPU's name */
	char protocol[160];
	char model[160];
	char engine[160];     /* "builtin (avx2, quants avx2)", "external llama-completion (llama.cpp)" */
	char counters[96];    /* "sim/intel_imc_free", "syscall/amd_umc", "none" */
	/* A value, not part of the key: what the engine was at this record. */
	char engine_version[200];
};

/* Fills k from the record doc (validated). 0, or -ENOMEM with err filled; k is freed with
 * mw_series_key_free either way. */
int mw_series_of(const json_t *doc, struct mw_series_key *k, struct mw_error *err);
void mw_series_key_free(struct mw_series_key *k);

/* The metrics `db check` and `db changes` judge unless told otherwise: the two figures
 * memwall exists to measure (compare's required ones). */
extern const char *const mw_series_default_metrics[2];

#endif
