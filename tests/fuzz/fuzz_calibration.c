/* tests/fuzz/fuzz_calibration.c: the calibration store's reader and its use by a run
 * (src/run/dram_calibration.c: mw_dramcal_for_run) on arbitrary bytes (issue 28).
 *
 * Contract: always an object for the record's counters.dram; a calibration error it applies
 * (calibration_error_pct a number, no reason given) is one a calibration can produce, -90 to
 * 900 %, from an entry whose fingerprint is this machine's; anything else comes with a reason. */
#include <math.h>
#include <string.h>

#include "dram_calibration.h"
#include "fuzz.h"
#include "sha256.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_t *fp;
	static char sha[65];
	if (!fp) {
		/* the machine the seeds were written for (fuzz_seeds.c, seeds_calibration) */
		fp = json_pack("{s:s, s:i}", "cpu_name", "Fuzz CPU", "cpu_model", 17);
		mw_sha256_hex("fuzz-machine", 12, sha);
	}
	const char *path = fuzz_memfd_path(data, size);
	struct mw_dramcal_source src = { .file = path };
	json_t *r = mw_dramcal_for_run(&src, fp, sha, "total", NULL);
	FUZZ_CHECK(json_is_object(r));
	const json_t *e = json_object_get(r, "calibration_error_pct");
	const json_t *why = json_object_get(r, "calibration_reason");
	FUZZ_CHECK(json_is_null(e) || json_is_number(e));
	if (json_is_number(e) && !json_is_string(why)) {
		double v = json_number_value(e);
		FUZZ_CHECK(isfinite(v) && v >= -90.0 && v <= 900.0);
		FUZZ_CHECK(json_is_true(json_object_get(json_object_get(r, "calibration"), "matches")));
	}
	json_decref(r);
	return 0;
}
