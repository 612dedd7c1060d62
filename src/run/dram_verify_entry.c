/* src/run/dram_verify_entry.c: whether an entry of the verification store can be taken as the
 * verification it claims to be (dram_verify_entry.h).
 *
 * The store is a file in the user's state folder, which anything can edit or replace (issue 43,
 * class 14): an entry dated in the future reads as fresh with a negative age, a verdict "pass"
 * over checks that all failed reads as passed, a verdict that is neither pass nor fail makes
 * the run's own record invalid, and an entry whose layer is not the one it is stored under
 * would put a simulated verification on a hardware run. A run (and a bundle) takes an entry
 * only when it says of itself what verify would have written. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dram_verify_entry.h"
#include "mw.h"

static bool is_verdict(const char *v)
{
	return v && (!strcmp(v, "pass") || !strcmp(v, "fail"));
}

/* Its checks: each an object with a verdict (pass or fail) and a message; *failed counts the
 * ones that did not pass. 0, or -EINVAL with why. */
static int checks_of(const json_t *entry, size_t *failed, size_t *total, char *why, size_t n)
{
	const json_t *checks = json_object_get(entry, "checks"), *c;
	size_t i;
	*failed = *total = 0;
	if (!json_is_array(checks) || !json_array_size(checks)) {
		snprintf(why, n, "it holds no checks (verify writes every check it made, and a "
			 "verdict stands on them)");
		return -EINVAL;
	}
	json_array_foreach(checks, i, c) {
		const char *v = json_string_value(json_object_get(c, "verdict"));
		if (!is_verdict(v) || !json_is_string(json_object_get(c, "message"))) {
			snprintf(why, n, "its check %zu has no verdict (pass or fail) or no message", i);
			return -EINVAL;
		}
		*failed += strcmp(v, "pass") != 0;
		(*total)++;
	}
	return 0;
}

int mw_dramverify_entry_check(const json_t *entry, const char *sha, const char *layer,
			      double *age_days, char *why, size_t n)
{
	const char *created = json_string_value(json_object_get(entry, "created_utc"));
	const char *verdict = json_string_value(json_object_get(entry, "verdict"));
	const char *own_layer = json_string_value(json_object_get(entry, "layer"));
	const char *own_sha = json_string_value(json_object_get(entry, "fingerprint_sha256"));
	const json_t *backend = json_object_get(entry, "backend");
	size_t failed, total;
	int64_t when;
	if (!json_is_object(entry)) {
		snprintf(why, n, "it is not a verification record (a JSON object)");
		return -EINVAL;
	}
	if (mw_utc_parse(created, &when)) {
		snprintf(why, n, "its created_utc is not a UTC time such as 2026-11-21T07:36:00Z");
		return -EINVAL;
	}
	/* the same clock wrote it (verify on this machine, in seconds): a time after now is an
	 * edited entry or a clock set back, and its age would be negative */
	double age = difftime(time(NULL), (time_t)when) / 86400.0;
	if (age < 0) {
		snprintf(why, n, "it is dated %s, %.1f days after this machine's clock", created,
			 -age);
		return -EINVAL;
	}
	if (!is_verdict(verdict)) {
		snprintf(why, n, "its verdict is neither \"pass\" nor \"fail\"");
		return -EINVAL;
	}
	if (checks_of(entry, &failed, &total, why, n))
		return -EINVAL;
	if (strcmp(verdict, failed ? "fail" : "pass")) {
		snprintf(why, n, "its verdict \"%s\" is not what its checks give (%zu of %zu failed)",
			 verdict, failed, total);
		return -EINVAL;
	}
	if (!own_layer || strcmp(own_layer, layer)) {
		snprintf(why, n, "its own layer is not the %s layer it is stored under", layer);
		return -EINVAL;
	}
	if (!own_sha || strcmp(own_sha, sha)) {
		snprintf(why, n, "its own fingerprint_sha256 is not the machine it is stored under");
		return -EINVAL;
	}
	if (backend && !json_is_string(backend) && !json_is_null(backend)) {
		snprintf(why, n, "its backend is not a name");
		return -EINVAL;
	}
	if (age_days)
		*age_days = age;
	return 0;
}
