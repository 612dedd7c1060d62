/* src/run/dram_calibration.h: DRAM counter calibrations, stored per machine and used by runs.
 *
 * `memwall calibrate` streams known bytes and compares them with what the memory controllers
 * counted (src/cli/cmd_calibrate.c). Its result is stored in one JSON file per user, the
 * calibration store, keyed by a fingerprint of what the calibration depends on: the CPU
 * (name, family, model, stepping, microcode), the DIMM layout where the kernel shows it, the
 * kernel, and the DRAM backend with its instances. `memwall run` looks the fingerprint up and
 * records in counters.dram the calibration's error, its per-instance factors, its age and its
 * source, or why there is none (missing, or stale: another fingerprint, or older than
 * MW_DRAMCAL_MAX_AGE_DAYS). Raw counts are never changed: the corrected figure is a metric of
 * its own (dram_MB_per_token_calibrated), computed only from a calibration that is not stale.
 *
 * Store file (schema "memwall-calibration/1", results/README.md "Calibration store"):
 *   {"schema": "memwall-calibration/1",
 *    "machines": {"<fingerprint sha256>": {"created_utc", "memwall_version", "fingerprint",
 *                 "backend", "working_set_bytes", "threads", "error_pct": {read, write,
 *                 total}, "factor": {read, write, total}, "instances": [{pmu, cpu,
 *                 share_pct, factor}], "passes": {...calibrate's report...}}}}
 */
#ifndef MEMWALL_RUN_DRAM_CALIBRATION_H
#define MEMWALL_RUN_DRAM_CALIBRATION_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "mw.h"
#include "probes.h"

#define MW_DRAMCAL_SCHEMA "memwall-calibration/1"
#define MW_DRAMCAL_MAX_AGE_DAYS 30.0
#define MW_DRAMCAL_MAX_BYTES (4u << 20) /* a store larger than this is refused, not read */

/* The store's path: $MEMWALL_STATE_DIR/calibration.json, else
 * $XDG_STATE_HOME/memwall/calibration.json, else ~/.local/state/memwall/calibration.json.
 * 0, or -ENOENT with err saying which variables to set. */
int mw_dramcal_store_path(char *buf, size_t n, struct mw_error *err);

/* What a calibration depends on, from a machine description (mw_machine_describe) and the
 * open DRAM backend's status: {"cpu_name", "cpu_family", "cpu_model", "cpu_stepping",
 * "microcode", "dimms", "kernel", "dram_backend", "dram_instances"}. *sha receives the
 * fingerprint's sha256 (of its compact JSON, keys sorted). New reference; NULL on ENOMEM. */
json_t *mw_dramcal_fingerprint(const json_t *machine, const struct prb_dram_status *st,
			       char sha[65]);

/* Stores calibrate's report (its "passes" and "instances", as cmd_calibrate.c builds them)
 * under fingerprint in the store at path, keeping the other machines' entries. The file is
 * replaced atomically (a temporary file in the same folder, then rename), its folder created.
 * 0, or -errno with err naming the file and the fix. */
int mw_dramcal_save(const char *path, const json_t *report, const json_t *fingerprint,
		    const char *sha, struct mw_error *err);

/* Writes doc to path through a temporary file in the same folder and rename(2), so a reader
 * sees the old file or the new one, never half of one; the folder is created. what names the
 * file in errors ("the calibration store"). 0, or -errno with err naming the file and the
 * fix. (The verification store, dram_verify.h, writes its files the same way.) */
int mw_json_write_atomic(const char *path, const json_t *doc, const char *what,
			 struct mw_error *err);

/* How a run finds its calibration. */
struct mw_dramcal_source {
	const char *file;  /* --calibration FILE; NULL: the store (mw_dramcal_store_path) */
	bool off;          /* --no-calibration */
};

/* What the record's counters.dram says of calibration, for this machine's fingerprint (sha)
 * and the MB/token basis ("read" or "total"): {"calibration_error_pct", "calibration_reason",
 * "calibration"} to merge into the block. The reason is null only when a calibration was
 * found and is not stale; otherwise it says why (and, when log is given, is said there too).
 * New reference; NULL on ENOMEM. */
json_t *mw_dramcal_for_run(const struct mw_dramcal_source *src, const json_t *fingerprint,
			   const char *sha, const char *basis, FILE *log);

#endif
