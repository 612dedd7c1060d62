/* tests/lib/compare_fixture.c: compare-fixture IN OUT FACTOR: a record whose every decode token
 * took FACTOR times as long, figures re-derived by the library (mw_result_derive), so that
 * `memwall validate` accepts it. tests/e2e/test_ci_example.sh makes its regression case with it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "result.h"

static void scale_run(json_t *run, double factor)
{
	json_t *lat = json_object_get(json_object_get(run, "tokens"), "latency_ns");
	json_int_t sum = 0;
	for (size_t t = 0; t < json_array_size(lat); t++) {
		json_int_t ns = (json_int_t)llround(
			(double)json_integer_value(json_array_get(lat, t)) * factor);
		json_array_set_new(lat, t, json_integer(ns));
		sum += ns;
	}
	/* The decode window is exactly the sum of its tokens (results/README.md). */
	json_object_set_new(json_object_get(run, "decode"), "ns", json_integer(sum));
}

int main(int argc, char **argv)
{
	struct mw_error err;
	json_t *doc = NULL, *run;
	size_t i;
	double factor = argc == 4 ? strtod(argv[3], NULL) : 0;
	if (!(factor > 0)) {
		fprintf(stderr, "usage: compare-fixture IN OUT FACTOR (FACTOR > 0)\n");
		return 2;
	}
	mw_error_clear(&err);
	if (mw_result_load(&doc, argv[1], &err)) {
		mw_error_print(&err);
		return 2;
	}
	json_array_foreach(json_object_get(doc, "runs"), i, run)
		scale_run(run, factor);
	if (mw_result_derive(doc, argv[2], &err) ||
	    json_dump_file(doc, argv[2], JSON_INDENT(1) | JSON_REAL_PRECISION(17))) {
		fprintf(stderr, "compare-fixture: cannot write %s\n", argv[2]);
		json_decref(doc);
		return 1;
	}
	json_decref(doc);
	return 0;
}
