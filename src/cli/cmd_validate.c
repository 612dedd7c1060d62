/* src/cli/cmd_validate.c: `memwall validate`: schema and internal consistency of result records. */
#include <stdio.h>
#include <string.h>

#include "bundle.h"
#include "mw.h"
#include "opt.h"
#include "result.h"
#include "verbs.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: memwall validate RESULT|BUNDLE...\n\n"
		   "Checks each result record against the result schema (results/result.schema.json)\n"
		   "and recomputes every derived figure (per-run figures, summary statistics,\n"
		   "acceptance, drift verdict) from the raw per-token data, so an edited figure is\n"
		   "caught. A bundle (memwall bundle's tar.gz) is checked file by file against its\n"
		   "manifest's sha256 sums, and each record in it as above. Exit: 0 all valid, 1 a figure disagrees with the raw data (the field is\n"
		   "named), 2 unreadable or not of the schema.\n");
}

int mw_cmd_validate(int argc, char **argv)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' },
					       { NULL, 0, NULL, 0 } };
	int c, worst = MW_EXIT_OK;
	struct mw_opt op;
	mw_opt_init(&op, "validate", argc, argv, "h", opts);
	while ((c = mw_opt_next(&op)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return MW_EXIT_OK;
		}
		return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
	}
	if (optind >= argc) {
		usage(stderr);
		return MW_EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++) {
		struct mw_error err;
		json_t *doc = NULL;
		mw_error_clear(&err);
		if (mw_bundle_is(argv[i])) {
			int brc = mw_bundle_check(argv[i], stdout, &err);
			int code = !brc ? MW_EXIT_OK : brc == MW_RESULT_INCONSISTENT ? MW_EXIT_CHECK
										: MW_EXIT_USAGE;
			worst = code > worst ? code : worst;
			continue;
		}
		int rc = mw_result_load(&doc, argv[i], &err);
		if (!rc)
			rc = mw_result_validate(doc, argv[i], &err);
		if (rc) {
			mw_error_print(&err);
			int code = rc == MW_RESULT_INCONSISTENT ? MW_EXIT_CHECK : MW_EXIT_USAGE;
			worst = code > worst ? code : worst;
		} else {
			const json_t *s = json_object_get(doc, "summary");
			printf("%s: valid (%s%s, %lld measured run%s, %lld tokens)\n", argv[i],
			       json_string_value(json_object_get(doc, "kind")),
			       json_is_true(json_object_get(doc, "complete")) ? "" : ", INCOMPLETE",
			       (long long)json_integer_value(json_object_get(s, "runs_measured")),
			       json_integer_value(json_object_get(s, "runs_measured")) == 1 ? "" : "s",
			       (long long)json_integer_value(json_object_get(s, "tokens_measured")));
		}
		json_decref(doc);
	}
	return worst;
}
