/* src/run/verify_diagnose.h: a failed verification matched against the failures this field
 * knows, by their signatures (verify_diagnose.c says each). */
#ifndef MEMWALL_RUN_VERIFY_DIAGNOSE_H
#define MEMWALL_RUN_VERIFY_DIAGNOSE_H

#include <jansson.h>

/* A failed record's targets matched against known failures: [{"id", "evidence", "fix",
 * "where"}]; [] when nothing matches. root is the sysfs root (for the .scale files named).
 * New reference. */
json_t *mw_verify_diagnose(const json_t *record, const char *root);

#endif
