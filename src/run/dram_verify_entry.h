/* src/run/dram_verify_entry.h: whether an entry of the verification store (dram_verify.h) can
 * be taken as the verification it claims to be; a run and a bundle take only one that can. */
#ifndef MEMWALL_RUN_DRAM_VERIFY_ENTRY_H
#define MEMWALL_RUN_DRAM_VERIFY_ENTRY_H

#include <jansson.h>
#include <stddef.h>

/* Whether entry (the store's machines[sha][layer]) can be taken as a verification: an object
 * whose created_utc is a UTC time not after this machine's clock, whose verdict is the one
 * its checks give (pass when every one of at least one check passed, else fail; each check
 * with a verdict and a message), whose own layer and fingerprint_sha256 are the keys it is
 * stored under, and whose backend is a name or null. 0 with *age_days (may be NULL) the days
 * since created_utc, or -EINVAL with why saying what is wrong. */
int mw_dramverify_entry_check(const json_t *entry, const char *sha, const char *layer,
			      double *age_days, char *why, size_t n);

#endif
