/* src/cli/cmd_compare.c: `memwall compare`: did NEW regress from BASE? What a CI job on a
 * bare-metal runner gates on (scripts/ci-example/). The verdicts are src/record/compare.c's;
 * this file reads options and records and picks the output format. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "compare.h"
#include "mw.h"
#include "opt.h"
#include "result.h"
#include "verbs.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall compare BASE NEW [--format md|json|junit] [--require METRIC]...\n"
		"                       [--max-regress PCT] [--force]\n\n"
		"Compares two result records metric by metric: means, delta, %% change and the\n"
		"Welch t-test over the runs. Each metric gets one verdict:\n"
		"  regression      moved the bad way by more than PCT %% with p < 0.05 (PCT: the\n"
		"                  protocol's tolerance_pct for the metric, else 5; --max-regress\n"
		"                  replaces both)\n"
		"  improvement     the same, the good way\n"
		"  same            a change within PCT %%\n"
		"  inconclusive    a change beyond PCT %% the runs cannot resolve (p >= 0.05): says\n"
		"                  how many runs per side would, at the observed variance\n"
		"  not-comparable  unmeasured on a side, a record DRIFTED, an acceptance criterion\n"
		"                  failed on a side, or fewer than 2 runs\n"
		"Required metrics (default dram_MB_per_token and tok_per_s; --require replaces the\n"
		"list, repeatable) must be compared and resolved.\n\n"
		"The records must have the same effective settings: protocol name and sha256, runs,\n"
		"decode tokens, threads, load mode and kernels (protocol.overrides, engine.*), model\n"
		"sha256, machine, and DRAM backend and counters.dram.mb_per_token_basis; every\n"
		"difference is named. --force compares them anyway and says so, with one exception:\n"
		"a record whose DRAM counts are SIMULATED (counters.dram.layer sim) never compares\n"
		"with one whose are not, --force or not (exit 2).\n\n"
		"On a machine without DRAM counters (any VM) the DRAM figures are not measured and\n"
		"the default --require fails (exit 3): --require tok_per_s gates on tok/s alone.\n\n"
		"--format md (default) prints a table, json a memwall-compare/1 document, junit\n"
		"JUnit XML with one testcase per metric (README.md, \"compare\").\n\n"
		"Exit codes, the first that applies:\n"
		"  2  bad usage, an unreadable or invalid record, or the settings differ (no --force)\n"
		"  1  a metric regressed\n"
		"  3  a required metric is not comparable\n"
		"  4  a required metric is inconclusive: rerun both with more runs\n"
		"  0  no regression and every required metric compared\n");
}

/* Output formats: a table, so a new one is one line. */
static const struct {
	const char *name;
	void (*print)(FILE *f, const struct mw_comparison *c, const char *const paths[2]);
} formats[] = {
	{ "md", mw_compare_print_md },
	{ "json", mw_compare_print_json },
	{ "junit", mw_compare_print_junit },
};

enum { MAX_REQUIRE = 32 };

int mw_cmd_compare(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max-regress", required_argument, NULL, 'm' },
		{ "format", required_argument, NULL, 'F' },
		{ "require", required_argument, NULL, 'r' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mw_compare_opts o;
	const char *require[MAX_REQUIRE], *bad;
	size_t n_require = 0, fmt = 0;
	json_t *doc[2] = { NULL, NULL };
	struct mw_comparison *cmp = NULL;
	struct mw_error err;
	int c, code = MW_EXIT_OK;
	mw_compare_opts_default(&o);
	struct mw_opt op;
	mw_opt_init(&op, "compare", argc, argv, "h", opts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case 'm':
			if (mw_parse_double(optarg, 0, 1e6, &o.max_regress_pct))
				return mw_fail(MW_EXIT_USAGE, "compare", "--max-regress wants a "
					       "percentage >= 0, got '%s'", optarg);
			o.max_regress_set = true;
			break;
		case 'F':
			for (fmt = 0; fmt < sizeof(formats) / sizeof(formats[0]); fmt++)
				if (!strcmp(formats[fmt].name, optarg))
					break;
			if (fmt == sizeof(formats) / sizeof(formats[0]))
				return mw_fail(MW_EXIT_USAGE, "compare", "--format '%s': use md, json "
					       "or junit", optarg);
			break;
		case 'r':
			if (n_require == MAX_REQUIRE)
				return mw_fail(MW_EXIT_USAGE, "compare", "more than %d --require",
					       MAX_REQUIRE);
			require[n_require++] = optarg;
			break;
		case 'f':
			o.force = true;
			break;
		case 'h':
			usage(stdout);
			return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return MW_EXIT_USAGE;
	}
	if (n_require) {
		o.require = require;
		o.n_require = n_require;
	}
	if (mw_compare_check_require(&o, &bad))
		return mw_fail(MW_EXIT_USAGE, "compare", "--require %s: no such metric (the names "
			       "are summary.metrics' keys, e.g. tok_per_s, dram_MB_per_token; "
			       "results/README.md lists them)", bad);
	for (int i = 0; i < 2; i++) {
		mw_error_clear(&err);
		int rc = mw_result_load(&doc[i], argv[optind + i], &err);
		if (!rc)
			rc = mw_result_validate(doc[i], argv[optind + i], &err);
		if (rc) {
			mw_error_print(&err);
			code = MW_EXIT_USAGE;
			goto out;
		}
	}
	/* About 20 KB, and freed on every path: on the heap, not the stack. */
	if (!(cmp = calloc(1, sizeof(*cmp)))) {
		code = mw_fail(MW_EXIT_ENV, "compare", "out of memory");
		goto out;
	}
	mw_compare(doc[0], doc[1], &o, cmp);
	const char *paths[2] = { argv[optind], argv[optind + 1] };
	formats[fmt].print(stdout, cmp, paths);
	/* The differences once: the markdown on stdout has them as a table; json and junit
	 * are for machines, so a person reading the job's log gets them on stderr. */
	for (size_t i = 0; fmt != 0 && i < cmp->n_diffs; i++)
		fprintf(stderr, "memwall compare: %s: %s: BASE %s, NEW %s (%s)\n",
			cmp->compared ? "forced past" : "refusing", cmp->diffs[i].field,
			cmp->diffs[i].base, cmp->diffs[i].new, cmp->diffs[i].note);
	if (cmp->layers_differ)
		fprintf(stderr, "memwall compare: refused: compare a SIMULATED record only with "
			"another simulated one (--force does not change that)\n");
	else if (!cmp->compared)
		fprintf(stderr, "memwall compare: refused: %zu setting%s (the table names %s): rerun NEW with "
			"BASE's settings, or pass --force to compare anyway\n", cmp->n_diffs,
			cmp->n_diffs == 1 ? " differs" : "s differ", cmp->n_diffs == 1 ? "it" : "them");
	code = cmp->exit_code;
out:
	free(cmp);
	json_decref(doc[0]);
	json_decref(doc[1]);
	return code;
}
