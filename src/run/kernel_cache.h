/* src/run/kernel_cache.h: the kernel choice `memwall bench-kernels` measures, cached per
 * machine in the state folder and passed to the engine's sessions (issue 42).
 *
 * On one CPU one quant table's kernel can be slower than another's for an operation and a
 * token count (an AVX-512 machine's avx2 two-token kernel had beaten its avx512 one).
 * bench-kernels times every table the CPU runs, per x8 weight type and token count (1, 2, 4,
 * 8: engine.h's eng_kbench_run), and stores the fastest in one JSON file, keyed by the machine
 * fingerprint of the calibration store (dram_calibration.h: CPU, microcode, DIMMs, kernel)
 * and the memwall version that measured it. generate and run load it when their kernels are
 * the default ("auto") and both keys match; otherwise the default stays as it was, and the
 * reason is said. engine/ never reads the file: it gets a struct eng_kernel_choice.
 *
 * File ($MEMWALL_STATE_DIR/kernels.json, schema "memwall-kernels/1", results/README.md):
 *   {"schema": "memwall-kernels/1", "created_utc", "memwall_version", "fingerprint": {...},
 *    "fingerprint_sha256", "method": "...", "default": "avx512",
 *    "choice": {"q4_0": {"1": "avx512", "2": "avx2", "4": "avx512", "8": "avx512"}, ...},
 *    "rates": {"q4_0": {"2": {"avx512": 31.2, "avx2": 40.5}, ...}, ...}}
 * rates are GB of weights x tokens per second, medians over the rounds: what was measured,
 * for a reader; only choice is used. */
#ifndef MEMWALL_RUN_KERNEL_CACHE_H
#define MEMWALL_RUN_KERNEL_CACHE_H

#include <jansson.h>
#include <stdbool.h>

#include "engine.h"
#include "mw.h"

#define MW_KCACHE_SCHEMA "memwall-kernels/1"
#define MW_KCACHE_MAX_BYTES (1u << 20) /* a cache larger than this is refused, not read */

/* $MEMWALL_STATE_DIR/kernels.json (else XDG_STATE_HOME's or ~/.local/state's memwall folder):
 * 0, or -ENOENT with err saying which variables to set. */
int mw_kcache_path(char *buf, size_t n, struct mw_error *err);

/* This machine's fingerprint for the cache: the calibration store's without a DRAM backend
 * (mw_dramcal_fingerprint), its sha256 into sha. New reference; NULL on ENOMEM. */
json_t *mw_kcache_fingerprint(char sha[65]);

/* Where a session's kernel choice came from. */
struct mw_kcache_use {
	bool used;        /* the choice holds the cache's entries */
	bool ignored;     /* a cache exists but is another machine's or version's */
	char path[4096];  /* the cache looked at; "" when there is no state folder */
	char reason[640]; /* why it is not used ("" when used); for the record and the log */
	char sha[65];     /* the fingerprint it was matched against */
};

/* Reads the cache at path into out for a machine of fingerprint sha and a memwall of version
 * `version`. A missing file, another fingerprint or another version: 0 with use->used false
 * and use->reason saying why and what to run. A file that is not such a cache, or whose
 * entries the engine refuses (a type, token count or table it does not know here): -EINVAL
 * with err naming the file, the field and the fix. */
int mw_kcache_load(const char *path, const char *sha, const char *version,
		   struct eng_kernel_choice *out, struct mw_kcache_use *use, struct mw_error *err);

/* The cache of this machine for a session whose kernels option is `kernels`: NULL or "auto"
 * looks it up (mw_kcache_load with this machine's fingerprint and version); a named table
 * is the user's choice, and the cache is not used (the reason says so). */
int mw_kcache_for_session(const char *kernels, struct eng_kernel_choice *out,
			  struct mw_kcache_use *use, struct mw_error *err);

/* The record's view: {"source": "measured" or "default", "cache": path or null, "reason":
 * null or why not} (engine.kernel_choice), and {type: {"1": table, "2", "4", "8"}} for the
 * session's x8 weight types (engine.op_kernels: which table ran each operation). New
 * references; NULL on ENOMEM. */
json_t *mw_kcache_record(const struct mw_kcache_use *use);
json_t *mw_kcache_op_kernels(const struct eng_session *s);

/* "q4_0 avx2, q6_K avx512": the table of each of the session's x8 types at n_tok tokens a
 * call, into buf ("none" when no weights are in the x8 layout). */
void mw_kcache_describe(const struct eng_session *s, int n_tok, char *buf, size_t n);

#endif
