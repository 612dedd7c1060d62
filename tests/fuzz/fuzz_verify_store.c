/* tests/fuzz/fuzz_verify_store.c: the verification store's reader and the check of its entries
 * (src/run/dram_verify.c: mw_dramverify_for_run; dram_verify_entry.c), on arbitrary bytes
 * (issue 43).
 *
 * Contract: a run always gets an object for its counters.dram. A verification it takes is one
 * a record may carry: its verdict pass or fail and what failed_checks says (pass exactly when
 * none failed), the run's layer and this machine's fingerprint, an age of at least 0 and
 * stale exactly past MW_DRAMVERIFY_MAX_AGE_DAYS, a created_utc that is a UTC time; and
 * validate's own check of it (mw_provenance_check, on a record made as the run began)
 * agrees. One it does not take comes with a reason. Each entry of the store is also checked
 * directly: mw_dramverify_entry_check answers 0 or -EINVAL with a reason. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "dram_verify.h"
#include "dram_verify_entry.h"
#include "fuzz.h"
#include "provenance.h"
#include "sha256.h"

static void check_taken(const json_t *r, const char *sha, const char *layer, const char *now)
{
	const json_t *v = json_object_get(r, "verification");
	const json_t *why = json_object_get(r, "verification_reason");
	FUZZ_CHECK(json_is_null(v) || json_is_object(v));
	if (!json_is_object(v)) {
		FUZZ_CHECK(json_is_string(why) && json_string_length(why) > 0);
		return;
	}
	const char *verdict = json_string_value(json_object_get(v, "verdict"));
	const json_t *failed = json_object_get(v, "failed_checks");
	const json_t *age = json_object_get(v, "age_days");
	int64_t t;
	FUZZ_CHECK(verdict && (!strcmp(verdict, "pass") || !strcmp(verdict, "fail")));
	FUZZ_CHECK(json_is_array(failed));
	FUZZ_CHECK((json_array_size(failed) == 0) == !strcmp(verdict, "pass"));
	FUZZ_CHECK(!strcmp(json_string_value(json_object_get(v, "layer")), layer));
	FUZZ_CHECK(!strcmp(json_string_value(json_object_get(v, "fingerprint_sha256")), sha));
	FUZZ_CHECK(json_is_number(age) && json_number_value(age) >= 0);
	FUZZ_CHECK(json_is_true(json_object_get(v, "stale")) ==
		   (json_number_value(age) > MW_DRAMVERIFY_MAX_AGE_DAYS));
	FUZZ_CHECK(!mw_utc_parse(json_string_value(json_object_get(v, "created_utc")), &t));
	/* what validate says of it, in a record that began at now */
	json_t *doc = json_pack("{s:s, s:{s:O}}", "created_utc", now, "counters", "dram", r);
	char field[96], text[600];
	json_object_set_new(json_object_get(json_object_get(doc, "counters"), "dram"), "layer",
			    json_string(layer));
	FUZZ_CHECK(doc && mw_provenance_check(doc, field, sizeof(field), text, sizeof(text)) == 0);
	json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char sha[65];
	char now[32];
	if (!sha[0]) /* the machine the seeds were written for (fuzz_seeds.c, seeds_verify_store) */
		mw_sha256_hex("fuzz-machine", 12, sha);
	mw_utc_now(now, sizeof(now), false);
	const char *path = fuzz_memfd_path(data, size);
	static const char *const layers[] = { "sim", "syscall" };
	for (size_t l = 0; l < sizeof(layers) / sizeof(layers[0]); l++) {
		json_t *r = mw_dramverify_for_run(path, sha, layers[l], NULL);
		FUZZ_CHECK(json_is_object(r));
		check_taken(r, sha, layers[l], now);
		json_decref(r);
	}
	/* every entry of a store that parses, through the check a run and a bundle make */
	json_t *store = json_loadb((const char *)data, size, 0, NULL);
	const char *key, *lkey;
	json_t *m, *e;
	json_object_foreach(json_object_get(store, "machines"), key, m) {
		json_object_foreach(m, lkey, e) {
			char why[300] = "";
			double age = NAN;
			int rc = mw_dramverify_entry_check(e, key, lkey, &age, why, sizeof(why));
			FUZZ_CHECK(rc == 0 || (rc == -EINVAL && why[0]));
			FUZZ_CHECK(rc || age >= 0);
		}
	}
	json_decref(store);
	return 0;
}
