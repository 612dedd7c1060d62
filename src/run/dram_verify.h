/* src/run/dram_verify.h: `memwall verify`, a first bare-metal run that proves itself, and the
 * store of its verifications that runs record.
 *
 * On a machine with DRAM counters, verify opens the DRAM backend and checks what it counts
 * against known traffic, and against every other meter the machine has:
 *
 *   idle     the background traffic over an idle window, per instance; its rate (bytes per
 *            ns of the counters' own time_enabled) is subtracted from every pass below;
 *   canary   a read pass and a write pass over a buffer several times the last-level cache
 *            (eng_llc_size; the write pass is ENG_STREAM_WRITE with non-temporal stores
 *            where the kernel table has them, so the written lines reach DRAM and nothing
 *            is read), placed on each NUMA node in turn (verify_numa.h): the sum over
 *            instances against the bytes the stream moved, each instance serving the node
 *            against its fair share (the node's bytes / its instances), the other direction
 *            of each pass and the other nodes' instances against the idle rate
 *            (verify_checks.h);
 *   matrix   with --matrix, five patterns at four sizes, each direction against what the
 *            pattern must move (verify_matrix.h);
 *   perf     where the kernel's perf tool exists, `perf stat -a -x, -e PMU/config=.../ --
 *            sleep S` over a window in which the canary streams, against memwall's own
 *            counts of the same events over a window that contains perf's;
 *   resctrl  where resctrl MBM exists beside the memory-controller counters, the two meters
 *            over the canary passes.
 *
 * Each check has a threshold (MW_DRAMVERIFY_*_PCT; the README's "doctor -> verify -> run ->
 * bundle" says why each is what it is) and a verdict; a failed verification is matched
 * against known failures (verify_diagnose.h) into the record's "diagnoses". The record (schema
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

/* /2 (issue 40): "targets" (one per placement of the canary: each NUMA node in turn), both
 * directions of both passes, "topology", "diagnoses" and, with --matrix, "matrix"; "passes"
 * is kept, as /1 had it, where there is one target. */
#define MW_DRAMVERIFY_SCHEMA "memwall-verification/2"
#define MW_DRAMVERIFY_STORE_SCHEMA "memwall-verification-store/1"
#define MW_DRAMVERIFY_MAX_AGE_DAYS 30.0 /* older: stale, as a calibration is */

#include "verify_thresholds.h" /* MW_DRAMVERIFY_*_PCT */

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
	const char *numa;      /* "auto" (NULL), "interleave" or "off": where the canary's pages
				* go (verify_numa.h, mw_verify_plan_make) */
	bool matrix;           /* also stream the five patterns at four sizes */
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

/* perf stat over the canary (src/run/verify_run.c calls it): memwall's counters m read around
 * `perf stat -a -x, -e EVENTS -- sleep S` while es streams; returns the record's "perf"
 * object, checks appended (src/run/verify_checks.h). */
struct mw_verify_meters;
struct eng_stream;
json_t *mw_verify_perf_check(struct mw_verify_meters *m, struct eng_stream *es,
			     const struct mw_dramverify_options *o, json_t *checks);

/* What a run's counters.dram says of verification, for this machine's fingerprint (sha) and
 * the counter layer the run counts on: {"verification": {"verdict", "created_utc",
 * "age_days", "stale", "backend", "layer", "source", "fingerprint_sha256", "failed_checks"}
 * or null, "verification_reason": why there is none, or why it is stale; null when the
 * latest verification of this machine and layer is found and fresh}. store: the store's path,
 * NULL for mw_dramverify_store_path. When log is given, a missing or stale verification is
 * said there too. New reference; NULL on ENOMEM. */
json_t *mw_dramverify_for_run(const char *store, const char *sha, const char *layer, FILE *log);

#endif
