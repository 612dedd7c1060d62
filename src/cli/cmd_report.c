/* src/cli/cmd_report.c: `memwall report`: a result record's tables and charts. */
#include <stdio.h>
#include <string.h>

#include "mw.h"
#include "opt.h"
#include "report.h"
#include "report_rows.h"
#include "result.h"
#include "sha256.h"
#include "verbs.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: memwall report RESULT [--format md|csv|json|jsonl|sql|bmf|gab-smaller|"
		   "gab-bigger]\n                      [--plot DIR]\n\n"
		   "Prints a result record's summary: every figure with its unit, n, mean, sd, CV,\n"
		   "median, min/max and 95%% confidence interval, the per-token latency percentiles,\n"
		   "and the acceptance verdicts. With --plot, also writes PNG and SVG charts to DIR\n"
		   "with gnuplot: MB/token per run (measured and engine-accounted), tok/s per run,\n"
		   "the per-token latency ECDF and rolling mean, and the per-controller DRAM split\n"
		   "when it was measured. The data files and gnuplot scripts stay beside them.\n"
		   "jsonl and sql print one line (an INSERT) per metric with the record's sha256,\n"
		   "protocol, model, backend and machine, as llama-bench does: concatenate them for\n"
		   "many records; the sql creates table memwall_metrics and loads into SQLite\n"
		   "(results/README.md lists the columns).\n"
		   "bmf and gab-* are for continuous-benchmarking tools, one entry per measured\n"
		   "figure, valued at the mean of its runs and named \"PROTOCOL: METRIC [PROVENANCE]\"\n"
		   "(SIMULATED, hardware, calibrated with its error, verified or not, engine-\n"
		   "accounted, timed; SYNTHETIC weights), so figures of different provenance never\n"
		   "share a history:\n"
		   "  bmf          Bencher Metric Format: {NAME: {MEASURE: {value, lower_value,\n"
		   "               upper_value}}}, MEASURE the unit as a slug (mb-per-token), the\n"
		   "               bounds the 95%% interval (left out with too few runs); for\n"
		   "               `bencher run --adapter json --file FILE`\n"
		   "  gab-smaller  github-action-benchmark's customSmallerIsBetter: [{name, unit,\n"
		   "               value, range, extra}] of the figures where smaller is better\n"
		   "               (MB/token, latency, J/token); range is \"± SD\" of the runs, extra\n"
		   "               the interval, full unit, provenance and record\n"
		   "  gab-bigger   the same for customBiggerIsBetter: tok/s (decode, prefill)\n"
		   "  gab          gab-smaller (the headline MB/token is smaller-is-better)\n"
		   "A tool reads one direction per file, so a CI job writes both gab files. A figure\n"
		   "that is not measured is left out, never written as 0: a line on stderr names it\n"
		   "and why; one more names the figures of the other direction.\n"
		   "A record of variants (protocols/README.md) also gets a table of the variants:\n"
		   "measured MB/token (DRAM where measured, else engine-accounted, named so), tok/s\n"
		   "and speedup beside the analytic prediction; for batch variants the claim \"near-2x\n"
		   "decode throughput at batch size 2\" beside prediction and measurement; for\n"
		   "speculation the acceptance and bytes per accepted token; for mechanisms AIOS's\n"
		   "projection, memwall's prediction and the measurement. --plot adds batch.png:\n"
		   "MB/token and tok/s against N, measured and predicted.\n");
}

int mw_cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "plot", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum mw_format fmt = MW_FORMAT_MD;
	const char *plot = NULL;
	struct mw_error err;
	json_t *doc = NULL;
	int c, rc;
	struct mw_opt op;
	mw_opt_init(&op, "report", argc, argv, "h", opts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case 'f':
			if (mw_format_parse(optarg, &fmt))
				return mw_fail(MW_EXIT_USAGE, "report",
					       "--format wants md, csv, json, jsonl, sql, bmf, "
					       "gab-smaller, gab-bigger or gab, got '%s'",
					       optarg);
			break;
		case 'p':
			plot = mw_path_trim(optarg);
			break;
		case 'h':
			usage(stdout);
			return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	if (argc - optind != 1) {
		usage(stderr);
		return MW_EXIT_USAGE;
	}
	mw_error_clear(&err);
	if ((rc = mw_result_load(&doc, argv[optind], &err))) {
		mw_error_print(&err);
		return MW_EXIT_USAGE;
	}
	rc = mw_result_validate(doc, argv[optind], &err);
	if (rc == MW_RESULT_MALFORMED || (rc && rc != MW_RESULT_INCONSISTENT)) {
		mw_error_print(&err);
		json_decref(doc);
		return MW_EXIT_USAGE;
	}
	if (rc) {
		fprintf(stderr, "memwall report: warning: this record does not validate; its recorded "
				"figures are shown as they are:\n");
		mw_error_print(&err);
	}
	if (fmt == MW_FORMAT_JSONL || fmt == MW_FORMAT_SQL) {
		char sha[65];
		bool have = !mw_sha256_file(argv[optind], sha, NULL, &err);
		mw_report_rows(stdout, doc, have ? sha : NULL, fmt == MW_FORMAT_SQL);
	} else {
		mw_report_print(stdout, doc, fmt);
	}
	if (plot && (rc = mw_report_plot(doc, plot, stderr, &err))) {
		mw_error_print(&err);
		json_decref(doc);
		return MW_EXIT_ENV; /* gnuplot absent or failing: this machine cannot plot */
	}
	json_decref(doc);
	return MW_EXIT_OK;
}
