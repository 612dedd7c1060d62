/* src/cli/cmd_run.c: `memwall run`: execute a protocol, write its result record, print a summary. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters.h"
#include "mw.h"
#include "opt.h"
#include "protocol.h"
#include "protocol_find.h"
#include "report.h"
#include "result.h"
#include "runner.h"
#include "text.h"
#include "verbs.h"

#define DEFAULT_PROTOCOL "stories110m-synthetic"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall run [PROTOCOL] [--runs N] [--tokens N] [--threads N] [-o DIR]\n"
		"                   [--format md|json|csv] [--llama-bin PATH]\n"
		"                   [--phases[=layers]] [--force]\n"
		"                   [--calibration FILE | --no-calibration]\n"
		"       memwall run --list\n\n"
		"Runs a protocol with counters read at every token, writes the result record to\n"
		"DIR (default results/runs) under a new name, and prints its summary. PROTOCOL is a\n"
		"file's path, or the name of a shipped protocol (stories260k-smoke), looked up in\n"
		"the data directory's protocols/ ($MEMWALL_DATA_DIR, else " MW_DATA_DIR "),\n"
		"then, for a memwall run from its build tree, the source tree's protocols/.\n"
		"Without PROTOCOL: the built-in " DEFAULT_PROTOCOL " protocol.\n"
		"A protocol with \"batch\" decodes N sequences together, with \"speculative\"\n"
		"verifies prompt-lookup drafts; one with \"variants\" runs once per variant and\n"
		"writes one record holding them all (protocols/README.md, Variants).\n\n"
		"  --list        list the shipped protocols with their descriptions, and exit\n"
		"  --runs N      measured runs instead of the protocol's (warm-ups stay as given)\n"
		"  --tokens N    decode tokens per run instead of the protocol's\n"
		"  --threads N   engine threads instead of the protocol's\n"
		"  -o DIR        where to write the record (created if needed; nothing is overwritten)\n"
		"  --format F    summary as md (default), json or csv\n"
		"  --llama-bin PATH\n"
		"                external engines: run PATH instead of the protocol's program\n"
		"                (engine.command[0]), e.g. your llama.cpp build's\n"
		"                bin/llama-completion\n"
		"  --phases[=layers]\n"
		"                also read the counters at the engine's phase markers (attention,\n"
		"                FFN, classifier; =layers: and each layer's) for `memwall report`'s\n"
		"                attribution; adds readings inside every step\n"
		"  --force       run even when the model is larger than the memory available\n"
		"                (refused otherwise: paging would distort every figure; the record\n"
		"                says it was forced)\n"
		"  --calibration FILE\n"
		"                the DRAM calibration store to read instead of the user's\n"
		"                ($MEMWALL_STATE_DIR, $XDG_STATE_HOME/memwall or\n"
		"                ~/.local/state/memwall: calibration.json, written by\n"
		"                `memwall calibrate`). The record's counters.dram carries its error,\n"
		"                factors, age and source, and dram_MB_per_token_calibrated stands\n"
		"                beside the raw figures; a calibration of another machine\n"
		"                fingerprint or older than 30 days is recorded as stale, not applied\n"
		"  --no-calibration\n"
		"                record no calibration (the record says so)\n\n"
		"External engines (engine.kind \"external\") run at two lengths per repetition and\n"
		"are measured by the differential method (protocols/README.md); a protocol with\n"
		"measure.method \"aios-whole-process\" is measured by AIOS's baseline method instead,\n"
		"faults included, its figure filed under summary.aios_method. Output adapters\n"
		"(engine.adapter.name):\n");
	size_t n;
	const struct mw_adapter *a = mw_adapter_list(&n);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-18s %s\n", a[i].name, a[i].summary);
	fprintf(f,
		"\nCtrl-C or SIGTERM ends the current run and writes a record marked incomplete.\n"
		"Exit: 0 acceptance passed (a criterion on a counter the protocol made optional\n"
		"and this machine lacks reads \"not-measured (optional)\" and does not count);\n"
		"1 a criterion failed, a figure a criterion requires was not measured (e.g. a CV\n"
		"from one run), or the run was interrupted: the reason is printed; 2 bad protocol\n"
		"or options; 3 this machine cannot run it (e.g. counters.dram \"required\" and no\n"
		"DRAM counters: refused before running; `memwall doctor` explains).\n");
}

/* Criteria that a busy or unpinned machine fails: run-to-run spread and bandwidth drift. */
static bool noise_criterion(const char *name)
{
	return name && (!strncmp(name, "max_cv_", 7) || !strcmp(name, "bandwidth_drift_pct"));
}

/* The clock advice that applies to the machine the record describes: pinning the governor
 * where a cpufreq driver has one that is not already "performance"; nothing to pin where there
 * is none (a VM: the host sets the clock). */
static void clock_advice(const json_t *doc, char *buf, size_t n)
{
	const json_t *m = json_object_get(doc, "machine");
	const char *gov = json_string_value(json_object_get(m, "governor"));
	const char *why = json_string_value(json_object_get(json_object_get(m, "unavailable"),
							    "governor"));
	if (!gov)
		snprintf(buf, n, ", or add runs (--runs 10); there is no CPU governor here to pin "
			 "(%s)", mw_esc(why ? why : "the record names none"));
	else if (strcmp(gov, "performance"))
		snprintf(buf, n, ", pin the CPU governor (it is %s: sudo cpupower frequency-set -g "
			 "performance), or add runs (--runs 10)", mw_esc(gov));
	else
		snprintf(buf, n, ", or add runs (--runs 10) (the governor is already performance)");
}

/* One line of what to do, after the verdict: a newcomer's busy laptop fails a CV limit, and
 * "acceptance: fail" alone reads as "broken". */
static void acceptance_hint(FILE *f, const json_t *doc, bool noisy, bool cv_unmeasured,
			    long long runs)
{
	char clock[400];
	clock_advice(doc, clock, sizeof(clock));
	if (noisy)
		fprintf(f, "memwall run: what to do: the runs varied too much (a busy machine or "
			"a moving clock): close other programs%s; the record is kept either way\n",
			clock);
	else if (cv_unmeasured && runs < 2)
		fprintf(f, "memwall run: what to do: a CV needs at least 2 measured runs: "
			"--runs 2 or more\n");
	else if (cv_unmeasured)
		/* The runs were there; the counter gave no value in enough of them (it did not
		 * run, a read failed, or the backend lacks the figure): more runs would not help. */
		fprintf(f, "memwall run: what to do: the counter behind the figure gave no value "
			"in enough of the %lld runs (the reason is above): check it with `memwall "
			"doctor` and `memwall verify`; more runs will not help\n", runs);
}

/* The acceptance verdict on f when it is not a pass: each failed criterion, and each
 * required one that was not measured, with its figure and why, then what to do about it.
 * True when the exit code must say so (overall "fail" or "not-measured"). */
static bool acceptance_says(FILE *f, const json_t *doc)
{
	const json_t *acc = json_object_get(doc, "acceptance"), *c;
	const char *overall = json_string_value(json_object_get(acc, "status"));
	bool noisy = false, cv_unmeasured = false;
	size_t i;
	if (!overall || !strcmp(overall, "pass"))
		return false;
	json_array_foreach(json_object_get(acc, "criteria"), i, c) {
		const char *s = json_string_value(json_object_get(c, "status"));
		const char *why = json_string_value(json_object_get(c, "reason"));
		bool fail = s && !strcmp(s, "fail");
		bool missing = s && !strcmp(s, "not-measured") &&
			       !json_is_false(json_object_get(c, "required"));
		if (!fail && !missing)
			continue;
		const char *name = json_string_value(json_object_get(c, "criterion"));
		noisy = noisy || (fail && noise_criterion(name));
		cv_unmeasured = cv_unmeasured || (missing && noise_criterion(name));
		char *val = json_dumps(json_object_get(c, "value"), JSON_ENCODE_ANY |
				       JSON_REAL_PRECISION(4));
		char *lim = json_dumps(json_object_get(c, "limit"), JSON_ENCODE_ANY |
				       JSON_REAL_PRECISION(4));
		if (fail)
			fprintf(f, "memwall run: acceptance: %s failed (value %s, limit %s)%s%s\n",
				json_string_value(json_object_get(c, "criterion")), val ? val : "?",
				lim ? lim : "?", why ? ": " : "", why ? why : "");
		else
			fprintf(f, "memwall run: acceptance: %s not measured, and the protocol "
				"requires it: %s\n", json_string_value(json_object_get(c, "criterion")),
				why ? why : "no reason recorded");
		free(val);
		free(lim);
	}
	fprintf(f, "memwall run: acceptance: %s (exit 1)\n", overall);
	acceptance_hint(f, doc, noisy, cv_unmeasured,
			(long long)json_integer_value(json_object_get(json_object_get(doc, "summary"),
								      "runs_measured")));
	return true;
}

/* The folder is checked (and created) before the first run, not after the last: a
 * measurement is never thrown away for want of a place to put it. A folder the run creates is
 * said, with where it is: `memwall run NAME` from any folder puts results/runs/ there (issue
 * 44: silently). cwd (n bytes) receives the current folder when dir is relative, else "".
 * MW_EXIT_OK, or the exit code with the error printed. */
static int results_folder(const char *dir, char *cwd, size_t n)
{
	struct stat st;
	struct mw_error err;
	bool existed = stat(dir, &st) == 0;
	int rc;
	mw_error_clear(&err);
	cwd[0] = '\0';
	if (dir[0] != '/' && !getcwd(cwd, n))
		cwd[0] = '\0';
	if ((rc = mw_result_dir_prepare(dir, &err))) {
		mw_error_print(&err);
		return rc == -EACCES || rc == -EROFS || rc == -ENOSPC ? MW_EXIT_ENV : MW_EXIT_USAGE;
	}
	if (!existed)
		fprintf(stderr, "memwall run: created the folder %s%s%s%s for the record (-o DIR "
			"puts records elsewhere)\n", mw_esc(dir), cwd[0] ? " (in " : "", mw_esc(cwd),
			cwd[0] ? ")" : "");
	return MW_EXIT_OK;
}

int mw_cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "tokens", required_argument, NULL, 't' },
		{ "threads", required_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "llama-bin", required_argument, NULL, 'L' },
		{ "phases", optional_argument, NULL, 'P' },
		{ "force", no_argument, NULL, 'F' },
		{ "calibration", required_argument, NULL, 'C' },
		{ "no-calibration", no_argument, NULL, 'N' },
		{ "list", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mw_run_options ro = { .argc = argc, .argv = argv, .log = stderr };
	const char *dir = "results/runs";
	enum mw_format fmt = MW_FORMAT_MD;
	struct mw_protocol *p = NULL;
	struct mw_error err;
	json_t *doc = NULL;
	long v;
	int c, rc;

	mw_error_clear(&err);
	struct mw_opt op;
	mw_opt_init(&op, "run", argc, argv, "o:h", opts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case 'r':
		case 't':
		case 'j':
			if (mw_parse_long(optarg, 1, c == 'j' ? MW_THREADS_MAX : 1000000, &v))
				return mw_fail(MW_EXIT_USAGE, "run", "--%s wants a whole number from 1 "
					       "to %d, got '%s'", c == 'r' ? "runs" : c == 't' ?
					       "tokens" : "threads", c == 'j' ? MW_THREADS_MAX : 1000000,
					       optarg);
			*(c == 'r' ? &ro.runs : c == 't' ? &ro.tokens : &ro.threads) = (int)v;
			break;
		case 'o':
			dir = optarg;
			break;
		case 'L':
			ro.llama_bin = optarg;
			break;
		case 'F':
			ro.force = true;
			break;
		case 'C':
			ro.calibration = optarg;
			break;
		case 'N':
			ro.no_calibration = true;
			break;
		case 'P':
			if (optarg && strcmp(optarg, "layers"))
				return mw_fail(MW_EXIT_USAGE, "run", "--phases takes no value or "
					       "=layers, got '%s'", optarg);
			ro.phases = optarg ? 2 : 1;
			break;
		case 'f':
			if (mw_format_parse(optarg, &fmt))
				return mw_fail(MW_EXIT_USAGE, "run", "--format wants md, json or csv, "
					       "got '%s'", optarg);
			break;
		case 'l':
			mw_protocol_list(stdout);
			return MW_EXIT_OK;
		case 'h':
			usage(stdout);
			return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	if (ro.calibration && ro.no_calibration)
		return mw_fail(MW_EXIT_USAGE, "run", "--calibration FILE and --no-calibration "
			       "contradict each other: give one");
	if (argc - optind > 1)
		return mw_fail(MW_EXIT_USAGE, "run", "one protocol at a time (got %d)", argc - optind);

	char found[4096];
	if (optind < argc) {
		rc = mw_protocol_find(argv[optind], found, sizeof(found), &err);
		if (!rc)
			rc = mw_protocol_load(&p, found, MW_PROTOCOL_CHECK_FILES, &err);
	} else
		rc = mw_protocol_load_embedded(&p, DEFAULT_PROTOCOL, &err);
	if (rc) {
		mw_error_print(&err);
		return MW_EXIT_USAGE;
	}
	char cwd[4096];
	if ((rc = results_folder(dir, cwd, sizeof(cwd)))) {
		mw_protocol_free(p);
		return rc;
	}

	enum mw_run_status st = mw_runner_run(p, &ro, &doc, &err);
	if (st == MW_RUN_BAD_INPUT || st == MW_RUN_ENVIRONMENT) {
		mw_error_print(&err);
		mw_protocol_free(p);
		return st == MW_RUN_BAD_INPUT ? MW_EXIT_USAGE : MW_EXIT_ENV;
	}

	/* The record first: a result is never lost to a printing problem. */
	char stem[256], stamp[32], path[4096];
	mw_utc_now(stamp, sizeof(stamp), true);
	snprintf(stem, sizeof(stem), "%s-%s%s", p->name, stamp,
		 st == MW_RUN_INTERRUPTED ? "-incomplete" : "");
	rc = mw_result_write(doc, dir, stem, path, sizeof(path), &err);
	if (rc) {
		mw_error_print(&err);
		json_decref(doc);
		mw_protocol_free(p);
		return MW_EXIT_ENV;
	}
	fprintf(stderr, "memwall run: result written to %s%s%s%s%s\n", path,
		st == MW_RUN_INTERRUPTED ? " (incomplete)" : "", cwd[0] ? " (in " : "",
		mw_esc(cwd), cwd[0] ? ")" : "");
	mw_report_print(stdout, doc, fmt);

	/* The verdict and what to do close the summary, on stdout, where a person reads the tail
	 * (scripts/run.sh | tail); json and csv keep stdout to the data, so there they go to
	 * stderr, after it. */
	FILE *says = fmt == MW_FORMAT_MD ? stdout : stderr;
	if (fmt == MW_FORMAT_MD)
		fprintf(says, "\nmemwall run: record %s%s%s%s\n", path, cwd[0] ? " (in " : "",
			mw_esc(cwd), cwd[0] ? ")" : "");
	fflush(stdout);
	bool failed = acceptance_says(says, doc);
	if (fmt == MW_FORMAT_MD && !failed)
		fprintf(says, "memwall run: acceptance: %s\n", st == MW_RUN_INTERRUPTED ?
			"not judged: the run was interrupted (exit 1)" : "pass");
	int code = st == MW_RUN_INTERRUPTED || failed ? MW_EXIT_CHECK : MW_EXIT_OK;
	json_decref(doc);
	mw_protocol_free(p);
	return code;
}
