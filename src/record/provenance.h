/* src/record/provenance.h: what counted a record's DRAM figures, in words a reader cannot miss.
 *
 * Every surface a person reads (the run summary and `report`, bundles' provenance.md, the results
 * store's tables, `compare`, `headroom`) says the same things about a record's DRAM figures, read
 * here from the record once: which counter layer counted them (hardware, the simulated PMU, or
 * none: engine-accounted only), through which backend, with which caveat, whether a calibration
 * applies (and its error, age and staleness), the latest verification of the counters, and
 * whether the model's weights are synthetic; and, where the run's cgroup had a CPU quota, that
 * its tok/s is the quota's. */
#ifndef MEMWALL_RECORD_PROVENANCE_H
#define MEMWALL_RECORD_PROVENANCE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* Who counted the DRAM bytes. The library that owns the values owns their names
 * (mw_dram_source_name). */
enum mw_dram_source {
	MW_DRAM_HARDWARE,  /* the memory controllers' counters, through the kernel */
	MW_DRAM_SIMULATED, /* memwall's simulated PMU (MEMWALL_COUNTERS=sim): scripted counts */
	MW_DRAM_NONE,      /* no DRAM counter: only engine-accounted bytes */
};

struct mw_provenance {
	enum mw_dram_source source;
	const char *layer;     /* counters.dram.layer ("syscall", "libperf", "sim"), or NULL */
	const char *backend;   /* counters.dram.backend, or NULL */
	const char *caveat;    /* the backend's caveat, or NULL */
	const char *why_none;  /* MW_DRAM_NONE: why no counter was read */
	char why_mark[8];      /* set by a caller that gives why_none once, as a footnote: the
				* mark ("[1]") said in its place; "" (mw_provenance_of) for the text */
	int n_instances;       /* memory-controller instances summed */
	bool synthetic;        /* the model's weights are synthetic */
	bool reference;        /* an imported reference record (not measured by memwall) */
	/* Calibration (counters.dram.calibration): present when a store entry was found. */
	bool cal_present;      /* an entry was found (it may be stale) */
	bool calibrated;       /* it applies: found and not stale */
	double cal_error_pct;  /* NaN when unknown */
	double cal_age_days;   /* NaN when unknown */
	const char *cal_reason;/* why none applies, or why it is stale; NULL when it applies */
	/* Verification (counters.dram.verification). */
	const char *verdict;   /* "pass", "fail", or NULL: none on record */
	const char *verify_layer; /* the layer the verification ran on */
	double verify_age_days;
	/* The run's cgroup CPU quota (machine.cpu_quota, src/base/cgroup.h): NaN when none. */
	double cpu_quota;
	const char *quota_file; /* the file that set it */
	long long threads;      /* engine.threads, 0 when absent */
};

/* Fills p from doc; strings are borrowed from doc and live as long as it. */
void mw_provenance_of(const json_t *doc, struct mw_provenance *p);

/* "hardware", "simulated", "none": the record's and tables' word for a source. */
const char *mw_dram_source_name(enum mw_dram_source s);

/* A short tag for table columns: "SIMULATED (intel_imc_free)", "hardware (amd_umc,
 * calibrated)", "engine-accounted only". Returns buf. */
const char *mw_provenance_tag(const struct mw_provenance *p, char *buf, size_t n);


/* The provenance block as markdown lines ("- DRAM counts: ...\n"), each ending in '\n': the
 * DRAM source (a simulated record's line begins "**SIMULATED**"), the caveat, calibration and
 * verification, the model's weights, and a CPU quota the run ran under. */
void mw_provenance_print_md(FILE *f, const struct mw_provenance *p);

/* The label a DRAM figure carries in tables: " [SIMULATED]" for a simulated record, "" else. */
const char *mw_provenance_mark(const struct mw_provenance *p);

/* One figure's provenance in the words every surface uses, for formats that carry a figure on
 * its own (report --format bmf and gab, export aios): "SIMULATED (intel_imc_free)",
 * "hardware (amd_umc), verified", "hardware (amd_umc), calibrated (error +1.2 %), not
 * verified", "engine-accounted", "timed", "hardware (package energy)", "imported reference
 * (not measured by memwall)", each followed by ", SYNTHETIC weights" when the model's are.
 * Which words apply follows from the metric's name: a DRAM figure (a name holding "dram_")
 * takes the record's DRAM source, verification and, for the calibrated figure only, the
 * calibration and its error; engine_* figures are engine-accounted; energy is the package's
 * counter; token rates and latencies are timed by the clock. No age and no other changing
 * text: a figure's words stay the same from record to record while what it is stays the
 * same. Record text is escaped (mw_esc). Returns buf. */
const char *mw_provenance_metric(const struct mw_provenance *p, const char *metric, char *buf,
				 size_t n);

/* The same facts as one JSON object (report --format json, jsonl and sql): dram_source,
 * dram_layer, dram_backend, dram_caveat, model_synthetic, calibrated, calibration_error_pct,
 * calibration_age_days, calibration_reason, verification, verification_layer,
 * verification_age_days. New reference. */
json_t *mw_provenance_json(const struct mw_provenance *p);

/* A record's provenance in one line, for a series (`memwall db series`, `db check`): its DRAM
 * figures' words (mw_provenance_metric: "SIMULATED (intel_imc_free)", "hardware (amd_umc),
 * verified", each with ", SYNTHETIC weights" where so), or "engine-accounted only" for a
 * record without DRAM counters. Returns buf. */
const char *mw_provenance_words(const struct mw_provenance *p, char *buf, size_t n);

/* What the record says of who counted it, against itself and the record (validate, and so db
 * import; issue 43): machine.cpu_quota.cpus is a positive number of CPUs or null; and
 * counters.dram.verification, where there is one, has a verdict its failed_checks agree with,
 * the record's own counter layer and machine fingerprint, a created_utc no later than the
 * record's, an age of at least 0 that the two dates give, and stale exactly when that age is
 * over MW_DRAMVERIFY_MAX_AGE_DAYS (dram_verify.h; or unknown). 0, or -EINVAL with field the
 * path of the first that does not and why what it found. */
int mw_provenance_check(const json_t *doc, char *field, size_t fn, char *why, size_t wn);

#endif
