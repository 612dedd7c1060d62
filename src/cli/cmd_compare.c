/* src/cli/cmd_compare.c: `memwall compare`: is NEW a significant regression from BASE?
 * What a CI job on a bare-metal runner calls. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "machine.h"
#include "mw.h"
#include "result.h"
#include "stats.h"
#include "verbs.h"

#define DEFAULT_MAX_REGRESS 5.0
#define ALPHA 0.05

static void usage(FILE *f)
{
	fprintf(f, "usage: memwall compare BASE NEW [--max-regress PCT] [--force]\n\n"
		   "Compares two result records metric by metric: means, delta, %% change and a\n"
		   "Welch t-test p-value over the runs. A metric regresses when it moved in its bad\n"
		   "direction by more than PCT %% (default %g) with p < %g.\n"
		   "Both records must come from the same protocol, model and machine; --force\n"
		   "compares them anyway.\n"
		   "Exit: 0 no significant regression, 1 a regression, 2 different protocols, models or\n"
		   "machines (without --force) or unreadable records.\n",
		DEFAULT_MAX_REGRESS, ALPHA);
}

static const char *path_str(const json_t *doc, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(doc, a), b));
}

/* Empty when comparable, else why not. */
static void comparable(const json_t *x, const json_t *y, char *why, size_t n)
{
	const char *pa = path_str(x, "protocol", "name"), *pb = path_str(y, "protocol", "name");
	const char *ha = path_str(x, "protocol", "sha256"), *hb = path_str(y, "protocol", "sha256");
	const char *ma = path_str(x, "model", "sha256"), *mb = path_str(y, "model", "sha256");
	why[0] = '\0';
	if (!pa || !pb || strcmp(pa, pb))
		snprintf(why, n, "different protocols: %s vs %s", pa ? pa : "?", pb ? pb : "?");
	else if (ha && hb && strcmp(ha, hb))
		snprintf(why, n, "protocol %s was edited between the two (sha256 %.12s vs %.12s)", pa,
			 ha, hb);
	else if (ma && mb && strcmp(ma, mb))
		snprintf(why, n, "different model files (sha256 %.12s vs %.12s)", ma, mb);
	else if (!ma != !mb)
		snprintf(why, n, "one record pins its model file's sha256 and the other does not");
	else if (strcmp(mw_dram_basis(x), mw_dram_basis(y)))
		snprintf(why, n, "MB/token counts %s bytes in one record and %s bytes in the other "
			 "(counters.dram.mb_per_token_basis: DRAM backends %s vs %s)",
			 mw_dram_basis(x), mw_dram_basis(y),
			 path_str(json_object_get(x, "counters"), "dram", "backend") ?
			 path_str(json_object_get(x, "counters"), "dram", "backend") : "?",
			 path_str(json_object_get(y, "counters"), "dram", "backend") ?
			 path_str(json_object_get(y, "counters"), "dram", "backend") : "?");
	else if (!mw_machine_same(json_object_get(x, "machine"), json_object_get(y, "machine"), why,
				  n))
		return;
}

int mw_cmd_compare(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max-regress", required_argument, NULL, 'm' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double max_regress = DEFAULT_MAX_REGRESS;
	bool force = false;
	json_t *doc[2] = { NULL, NULL };
	struct mw_error err;
	int c, code = MW_EXIT_OK;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (mw_parse_double(optarg, 0, 1e6, &max_regress))
				return mw_fail(MW_EXIT_USAGE, "compare", "--max-regress wants a "
					       "percentage >= 0, got '%s'", optarg);
			break;
		case 'f':
			force = true;
			break;
		case 'h':
			usage(stdout);
			return MW_EXIT_OK;
		default:
			return mw_opt_usage_error("compare", argv, usage);
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return MW_EXIT_USAGE;
	}
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
	char why[512];
	comparable(doc[0], doc[1], why, sizeof(why));
	if (why[0] && !force) {
		fprintf(stderr, "memwall compare: refusing: %s (--force compares anyway)\n", why);
		code = MW_EXIT_USAGE;
		goto out;
	}
	if (why[0])
		printf("**forced:** %s\n\n", why);

	size_t nm;
	const struct mw_metric *met = mw_metrics(&nm);
	const json_t *ma = json_object_get(json_object_get(doc[0], "summary"), "metrics");
	const json_t *mb = json_object_get(json_object_get(doc[1], "summary"), "metrics");
	int regressions = 0;
	printf("| metric | unit | base mean +/- sd (n) | new mean +/- sd (n) | delta | %% | p "
	       "(Welch) | verdict |\n|---|---|---:|---:|---:|---:|---:|---|\n");
	for (size_t i = 0; i < nm; i++) {
		const json_t *a = json_object_get(ma, met[i].name), *b = json_object_get(mb, met[i].name);
		if (!a && !b)
			continue;
		if (!json_is_true(json_object_get(a, "measured")) ||
		    !json_is_true(json_object_get(b, "measured"))) {
			printf("| %s | %s | %s | %s | | | | not compared |\n", met[i].name,
			       met[i].unit,
			       json_is_true(json_object_get(a, "measured")) ? "measured" : "not measured",
			       json_is_true(json_object_get(b, "measured")) ? "measured" : "not measured");
			continue;
		}
		double am = json_number_value(json_object_get(a, "mean"));
		double as = json_number_value(json_object_get(a, "sd"));
		double bm = json_number_value(json_object_get(b, "mean"));
		double bs = json_number_value(json_object_get(b, "sd"));
		json_int_t an = json_integer_value(json_object_get(a, "n"));
		json_int_t bn = json_integer_value(json_object_get(b, "n"));
		if (!json_is_number(json_object_get(a, "sd")))
			as = NAN;
		if (!json_is_number(json_object_get(b, "sd")))
			bs = NAN;
		double delta = bm - am, pct = am != 0 ? 100.0 * delta / fabs(am) : NAN;
		double p = mw_welch_p(am, as, (size_t)an, bm, bs, (size_t)bn, NULL, NULL);
		/* Worse means lower for higher-is-better figures and higher for the others. */
		double worse_pct = met[i].better > 0 ? -pct : pct;
		const char *verdict = "same";
		if (isnan(p))
			verdict = "not testable (fewer than 2 runs)";
		else if (p < ALPHA && worse_pct > max_regress) {
			verdict = "REGRESSION";
			regressions++;
		} else if (p < ALPHA && worse_pct < -max_regress)
			verdict = "improvement";
		else if (p < ALPHA)
			verdict = "changed, within threshold";
		printf("| %s | %s | %.6g +/- %.3g (%lld) | %.6g +/- %.3g (%lld) | %+.4g | %+.2f | "
		       "%.3g | %s |\n", met[i].name, met[i].unit, am, as, (long long)an, bm, bs,
		       (long long)bn, delta, pct, p, verdict);
	}
	printf("\n%d regression%s beyond %g%% with p < %g\n", regressions, regressions == 1 ? "" : "s",
	       max_regress, ALPHA);
	code = regressions ? MW_EXIT_CHECK : MW_EXIT_OK;
out:
	json_decref(doc[0]);
	json_decref(doc[1]);
	return code;
}
