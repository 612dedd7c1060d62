/* tests/fuzz/fuzz_result.c: the result validator (src/record/result.c, jschema.c: what `memwall
 * validate` runs) on arbitrary bytes.
 *
 * Its contract: 0, MW_RESULT_MALFORMED (not of the schema) or MW_RESULT_INCONSISTENT (a figure
 * disagrees with the raw data), the last two with the field named. A record it accepts must
 * re-derive to itself: deriving is what the validator compares against; its token ids lie
 * inside model.shape.vocab_size. The seeds include a real /1 record, so mutations reach the
 * document, vocabulary and sha256 checks. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "result.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t jerr;
	json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return 0;
	struct mw_error err;
	mw_error_clear(&err);
	int rc = mw_result_validate(doc, "fuzz.json", &err);
	FUZZ_CHECK(rc == 0 || rc == MW_RESULT_MALFORMED || rc == MW_RESULT_INCONSISTENT ||
		   rc == -ENOMEM);
	if (rc == MW_RESULT_MALFORMED || rc == MW_RESULT_INCONSISTENT)
		FUZZ_CHECK(err.text[0] && err.source[0]);
	if (rc == MW_RESULT_INCONSISTENT)
		FUZZ_CHECK(err.field[0]);
	if (rc == 0) {
		/* Accepted: every token id inside the vocabulary, when the record gives it. */
		const json_t *vs = json_object_get(
			json_object_get(json_object_get(doc, "model"), "shape"), "vocab_size");
		const json_t *run, *id;
		size_t i, j;
		json_array_foreach(json_object_get(doc, "runs"), i, run)
			json_array_foreach(json_object_get(json_object_get(run, "tokens"), "ids"), j, id)
				FUZZ_CHECK(!json_is_integer(vs) || !json_is_integer(id) ||
					   json_integer_value(id) < json_integer_value(vs) ||
					   !strcmp(json_string_value(json_object_get(doc, "kind")),
						   "reference"));
	}
	if (rc == 0 && strcmp(json_string_value(json_object_get(doc, "kind")), "reference")) {
		/* Valid: deriving again changes nothing, and the result still validates. */
		json_t *copy = json_deep_copy(doc);
		FUZZ_CHECK(copy != NULL);
		FUZZ_CHECK(mw_result_derive(copy, "fuzz.json", &err) == 0);
		FUZZ_CHECK(mw_result_validate(copy, "fuzz.json", &err) == 0);
		json_decref(copy);
	}
	json_decref(doc);
	return 0;
}
