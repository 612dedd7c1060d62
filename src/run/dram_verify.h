/* src/run/dram_verify.h: `memwall verify`, a first bare-metal run that proves itself, and the
 * store of its verifications that runs record.
 *
 * On a machine with DRAM counters, verify opens the DRAM backend and checks what it counts
 * against known traffic, and against every other meter the machine has:
 *
 *   idle     the background traffic over an idle window, per instance; its rate (bytes per
 *            ns of the counters' own time_enabled) is subtracted from every pass below;
 *   canary   a read pass and a write pass over a buffer several times the last-level cache
 *            (eng_llc_size; the write pass with non-temporal stores where the kernel table
 *            has them, so the written lines really reach DRAM and no write-allocate read is
 *            added): the sum over instances against the bytes the stream moved, and each
 *            instance against its fair share, total / n_instances. The fair share ASSUMES
 *            memory interleaved evenly over every instance (the default of every multi-
 *            channel system; a NUMA-split or non-interleaved layout breaks it, and the
 *            check then says so by failing with the instance named);
 *   perf     where the kernel's perf tool exists, `perf stat -a -x, -e PMU/config=.../ --
 *            sleep S` over a window in which the canary streams, against memwall's own
 *            counts of the same events over a window that contains perf's;
 *   resctrl  where resctrl MBM exists beside the memory-controller counters, the two meters
 *            over the canary passes.
 *
 * Each check has a threshold (MW_DRAMVERIFY_*_PCT; the README's "doctor -> verify -> run ->
 * bundle" says why each is what it is) and a verdict. The record (schema
 * MW_DRAMVERIFY_SCHEMA) is kept per machine and counter layer in the verification store,
 * verification.json beside calibration.json: {"schema": MW_DRAMVERIFY_STORE_SCHEMA,
 * "machines": {"<fingerprint sha256>": {"<layer>": record}}}. A simulated verification
 * (layer "sim") is kept apart from a hardware one and never taken for it.
 */
#ifndef MEMWALL_RUN_DRAM_VERIFY_H
#define MEMWALL_RUN_DRAM_VERIFY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mw.h"

#define MW_DRAMVERIFY_SCHEMA "memwall-verification/1"
#define MW_DRAMVERIFY_STORE_SCHEMA "memwall-verification-store/1"
#define MW_DRAMVERIFY_MAX_AGE_DAYS 30.0 /* older: stale, as a calibration is */

/* Thresholds, in percent (README: "doctor -> verify -> run -> bundle"). */
#define MW_DRAMVERIFY_SUM_PCT 3.0      /* the sum over instances against the canary */
#define MW_DRAMVERIFY_INSTANCE_PCT 5.0 /* each instance against its fair share */
#define MW_DRAMVERIFY_PERF_PCT 2.0     /* perf stat against memwall, same events */
#define MW_DRAMVERIFY_RESCTRL_PCT 15.0 /* resctrl MBM against the memory controllers */

/* The canary when --size is not given: ENG_ROOF_LLC_MULTIPLE times the last-level cache, and
 * at least this, so that the canary dwarfs the background traffic of its window. */
#define MW_DRAMVERIFY_MIN_BYTES (1ull << 30)

struct mw_dramverify_options {
	const char *sysfs;     /* NULL: /sys (or $MEMWALL_SYSFS_ROOT, as prb_system_open says) */
	const char *backend;   /* NULL: the most accurate present */
	uint64_t bytes;        /* the canary's working set; 0: the default above */
	int threads;           /* streaming threads, >= 1 */
	int idle_ms;           /* the idle window */
	const char *perf;      /* the perf tool: NULL looks for "perf" on $PATH; "" uses none */
	double perf_seconds;   /* perf's window (`-- sleep S`); the canary streams within it */
	FILE *log;             /* progress lines (may be NULL) */
};

/* Runs the checks above. 0 with *record a new verification record (its "verdict" is "pass"
 * or "fail"); -ENOENT when this machine cannot be verified (no DRAM counters, or they cannot
 * be opened), with why saying why in the probe's words; -EINVAL for a usage error (an unknown
 * backend), with why; another -errno (why says what) when the environment failed midway. */
int mw_dramverify_run(const struct mw_dramverify_options *o, json_t **record, char *why,
		      size_t n);

/* The store's path: verification.json in the folder of the calibration store
 * (mw_dramcal_store_path). 0 or -ENOENT with err saying which variables to set. */
int mw_dramverify_store_path(char *buf, size_t n, struct mw_error *err);

/* Keeps record in the store at path as the latest verification of its machine and layer,
 * keeping every other entry; atomically (mw_json_write_atomic). 0 or -errno with err. */
int mw_dramverify_save(const char *path, const json_t *record, struct mw_error *err);

/* What a run's counters.dram says of verification, for this machine's fingerprint (sha) and
 * the counter layer the run counts on: {"verification": {"verdict", "created_utc",
 * "age_days", "stale", "backend", "layer", "source", "fingerprint_sha256", "failed_checks"}
 * or null, "verification_reason": why there is none, or why it is stale; null when the
 * latest verification of this machine and layer is found and fresh}. store: the store's path,
 * NULL for mw_dramverify_store_path. When log is given, a missing or stale verification is
 * said there too. New reference; NULL on ENOMEM. */
json_t *mw_dramverify_for_run(const char *store, const char *sha, const char *layer, FILE *log);

#endif
