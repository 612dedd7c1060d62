/* src/record/result.h: result records (results/README.md documents the format).
 *
 * A record holds raw data (per-token latencies and byte counts, window durations, counter
 * deltas) and figures derived from it (per-run figures, summary statistics, acceptance, drift
 * verdict). mw_result_derive computes every derived figure from the raw data; the runner
 * calls it before writing, and `memwall validate` calls it on a copy to check that no figure
 * was edited. */
#ifndef MEMWALL_RESULT_H
#define MEMWALL_RESULT_H

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>

#include "metrics.h"
#include "mw.h"

#define MW_RESULT_SCHEMA_ID "memwall-result/2"


/* Computes runs[].figures, summary, acceptance and drift.{change_pct,drifted} from the raw
 * data in doc, replacing whatever was there. -EDOM with err naming the field when the raw
 * data contradicts itself (an array of the wrong length, a window that is not the sum of its
 * tokens); -EINVAL when a needed field is missing. */
int mw_result_derive(json_t *doc, const char *source, struct mw_error *err);

/* Checks doc against the result schema, then (for measured records) recomputes every derived
 * figure and compares. 0, MW_RESULT_MALFORMED or MW_RESULT_INCONSISTENT; err names the field,
 * the recorded and the recomputed value. */
int mw_result_validate(const json_t *doc, const char *source, struct mw_error *err);

/* The largest record memwall reads (results/README.md): parsed, a record takes about
 * MW_RESULT_MEMORY_FACTOR times its size in memory, so 128 MiB needs about 2 GiB. A run of
 * a million tokens writes about 100 MiB. */
#define MW_RESULT_MAX_BYTES (128u << 20)
#define MW_RESULT_MEMORY_FACTOR 16

/* Reads a record: a regular file of at most MW_RESULT_MAX_BYTES (-EFBIG past it, -EINVAL
 * for a FIFO, a directory or a device, named). *out is a new reference. -errno / -EINVAL (not
 * JSON) with err filled; -ENOMEM says so. */
int mw_result_load(json_t **out, const char *path, struct mw_error *err);

/* Writes doc into dir (created if needed) as STEM.json, or STEM-2.json, STEM-3.json, ... when
 * that name is taken: never replacing a file. The bytes go to a temporary file in dir, which
 * is fsync'd and then renamed (RENAME_NOREPLACE, or link+unlink where the filesystem lacks
 * it), and the directory is fsync'd: a crash leaves either no record or a whole one.
 * path[0..n) receives the final path. 0 or -errno with err filled. */
int mw_result_write(const json_t *doc, const char *dir, const char *stem, char *path, size_t n,
		    struct mw_error *err);

/* Makes dir ready for records, before anything is measured: refuses a name that is not a
 * folder, creates it (and its parents), checks that a file can be created in it, and removes
 * the temporary files writers killed mid-write (kill -9) left there: names of the form
 * ".mw-PID-STEM.XXXXXX.tmp" that mw_result_write makes, owned by this user, whose PID no
 * longer runs. Nothing else is removed. 0 or -errno with err filled. */
int mw_result_dir_prepare(const char *dir, struct mw_error *err);

/* The per-run values of metric name that doc's summary statistics were computed from (its
 * complete measured runs, or an external run's counted repetitions), in order, into
 * v[0..cap); returns how many there were (more than cap: only cap written). A run without
 * the figure (not measured) gives no value, never a 0. */
size_t mw_result_samples(const json_t *doc, const char *name, double *v, size_t cap);

/* The result schema (results/result.schema.json as compiled in). New reference. */
json_t *mw_result_schema(void);


#endif
