/* src/record/bundle.h: submission bundles: records, their charts, a provenance summary and a
 * manifest of sha256 sums in one tar.gz (src/base/tar.h), to attach to an issue.
 *
 * Layout (results/README.md): manifest.json (schema "memwall-bundle/1": every other file's path,
 * bytes and sha256; whether charts were made and, if not, why), provenance.md, records/NAME.json
 * (the bytes as given), plots/NAME/ (`memwall report --plot` output for each record). */
#ifndef MEMWALL_BUNDLE_H
#define MEMWALL_BUNDLE_H
#include <stdio.h>
#include "mw.h"

#define MW_BUNDLE_SCHEMA "memwall-bundle/1"

/* Writes the bundle of the n records at paths to out (never replacing a file). Each record must
 * validate (mw_result_validate) or nothing is written. Progress goes to log (may be NULL).
 * 0, MW_RESULT_MALFORMED / MW_RESULT_INCONSISTENT for a record, or -errno; err names the file. */
int mw_bundle_write(const char *const *paths, int n, const char *out, FILE *log,
		    struct mw_error *err);

/* Checks the bundle at path: every file listed in its manifest is there with its sha256, nothing
 * else is, and each record validates. A line per record goes to log; each problem is printed
 * to stderr as it is found, and err keeps the first. 0,
 * MW_RESULT_INCONSISTENT (a sum or a record's figure disagrees) or MW_RESULT_MALFORMED. */
int mw_bundle_check(const char *path, FILE *log, struct mw_error *err);

/* Whether path starts with gzip's magic bytes (a bundle rather than a JSON record). */
bool mw_bundle_is(const char *path);
#endif
