/* src/cli/cmd_verify.c: `memwall verify`, the DRAM counters checked against a known canary,
 * perf and resctrl before a first bare-metal run (src/run/dram_verify.h says what is checked
 * and how; probes/README.md's "verify" section says why each threshold is what
 * it is).
 *
 * exit codes: 0 every check passed; 1 a check failed (each failure named on stderr); 2 bad
 * usage; 3 cannot verify here (no DRAM counters, or they cannot be opened: the probe's reason
 * is printed) or the environment failed midway; no record is written then. SIGINT or
 * SIGTERM only asks to stop (control.h): the spawned perf's process group is killed, nothing
 * is stored, and the signal is raised again so that the shell sees how verify ended.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "control.h"
#include "dram_calibration.h"
#include "dram_verify.h"
#include "verify_matrix.h"
#include "file.h"
#include "mw.h"
#include "opt.h"
#include "text.h"
#include "verbs.h"

#define VERB "verify"
#define GIB (1024.0 * 1024.0 * 1024.0)

struct options {
	struct mw_dramverify_options v;
	bool json;
	const char *out; /* -o FILE */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall verify [--json] [-o FILE] [--size GiB] [--threads N] [--idle-ms MS]\n"
		"                      [--backend NAME] [--sysfs ROOT] [--perf PATH | --no-perf]\n"
		"                      [--perf-seconds S] [--numa auto|interleave|off] [--matrix]\n\n"
		"Proves the DRAM counters on this machine before a first run: measures the idle\n"
		"traffic, streams a canary (a read pass, then a write pass with non-temporal stores)\n"
		"several times the last-level cache, and checks the bytes every memory-controller\n"
		"instance counted, and their sum, against the bytes streamed (net of the idle rate),\n"
		"in both directions: the read pass's writes and the write pass's reads must stay at\n"
		"the idle rate. On a NUMA machine the canary is placed on each node in turn and each\n"
		"node's instances share it. A failure is matched against known causes (diagnoses).\n"
		"Where the kernel's perf tool exists it reads the same events with `perf stat -a -x,`\n"
		"over the canary and compares; where resctrl MBM exists beside the controllers'\n"
		"counters it compares the two. Thresholds: sum %g %%, each instance %g %% of its fair\n"
		"share (total / the instances serving the canary's node), perf %g %%, resctrl %g %%,\n"
		"a direction at the idle rate %g %% of the pass (probes/README.md, \"verify\").\n\n"
		"  --json             print the verification record\n"
		"  -o FILE            also write the record to FILE (a new or a regular file; never\n"
		"                     the store, a FIFO, a device or a link)\n"
		"  --size GiB         the canary's working set (default: %d x the last-level cache,\n"
		"                     at least 1 GiB)\n"
		"  --threads N        pinned streaming threads (default 1)\n"
		"  --idle-ms MS       the idle window that measures background traffic (default 1000)\n"
		"  --backend NAME     DRAM backend to verify (default: the most accurate present)\n"
		"  --sysfs ROOT       read PMUs from ROOT/bus/event_source/devices\n"
		"  --perf PATH        the perf tool to compare with (default: perf on $PATH)\n"
		"  --no-perf          compare with no perf tool\n"
		"  --perf-seconds S   perf's window, in which the canary streams (default 2)\n"
		"  --numa MODE        auto (default): the canary on each NUMA node in turn (set_mempolicy\n"
		"                     MPOL_BIND, threads on its CPUs); interleave: over every node;\n"
		"                     off: not placed, memory assumed interleaved over every instance\n"
		"  --matrix           also stream read, write (write-allocate), non-temporal write,\n"
		"                     copy and triad at 4, 8, 16 and 32x the last-level cache (--size S:\n"
		"                     S to 8S), counted / expected per pattern and direction\n\n"
		"The record is kept per machine (the calibration's fingerprint) and counter layer in\n"
		"verification.json beside the calibration store ($MEMWALL_STATE_DIR, else\n"
		"$XDG_STATE_HOME/memwall, else ~/.local/state/memwall); `memwall run` records the\n"
		"latest one in counters.dram.verification.\n\n"
		"exit codes: 0 every check passed; 1 a check failed; 2 bad usage; 3 cannot verify\n"
		"here (no DRAM counters: a VM; the reason is printed) - no record is written then.\n"
		"Ctrl-C or SIGTERM kills perf's process group, stores nothing and ends by the signal\n",
		MW_DRAMVERIFY_SUM_PCT, MW_DRAMVERIFY_INSTANCE_PCT, MW_DRAMVERIFY_PERF_PCT,
		MW_DRAMVERIFY_RESCTRL_PCT, MW_DRAMVERIFY_IDLE_PCT, 8);
}

static int parse_args(int argc, char **argv, struct options *o, bool *help)
{
	enum { OPT_JSON = 256, OPT_SIZE, OPT_THREADS, OPT_IDLE, OPT_BACKEND, OPT_SYSFS, OPT_PERF,
	       OPT_NO_PERF, OPT_PERF_S, OPT_NUMA, OPT_MATRIX };
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "idle-ms", required_argument, NULL, OPT_IDLE },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "sysfs", required_argument, NULL, OPT_SYSFS },
		{ "perf", required_argument, NULL, OPT_PERF },
		{ "no-perf", no_argument, NULL, OPT_NO_PERF },
		{ "perf-seconds", required_argument, NULL, OPT_PERF_S },
		{ "numa", required_argument, NULL, OPT_NUMA },
		{ "matrix", no_argument, NULL, OPT_MATRIX },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double gib;
	long v;
	int c;
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "ho:", longopts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case OPT_JSON:
			o->json = true;
			break;
		case 'o':
			o->out = optarg;
			break;
		case OPT_SIZE:
			if (mw_parse_double(optarg, 0.001, 4096, &gib) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--size '%s': want GiB from 0.001 to 4096", optarg);
			o->v.bytes = (uint64_t)(gib * GIB);
			break;
		case OPT_THREADS:
			if (mw_parse_long(optarg, 1, MW_THREADS_MAX, &v) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--threads '%s': want a whole number from 1 to %d",
					       optarg, MW_THREADS_MAX);
			o->v.threads = (int)v;
			break;
		case OPT_IDLE:
			if (mw_parse_long(optarg, 1, 600000, &v) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--idle-ms '%s': want milliseconds from 1 to 600000",
					       optarg);
			o->v.idle_ms = (int)v;
			break;
		case OPT_BACKEND:
			o->v.backend = optarg;
			break;
		case OPT_SYSFS:
			o->v.sysfs = optarg;
			break;
		case OPT_PERF:
			if (!*optarg)
				return mw_fail(MW_EXIT_USAGE, VERB, "--perf '': want the perf tool's "
					       "path (or --no-perf)");
			o->v.perf = optarg;
			break;
		case OPT_NO_PERF:
			o->v.perf = "";
			break;
		case OPT_PERF_S:
			if (mw_parse_double(optarg, 0.01, 600, &o->v.perf_seconds) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--perf-seconds '%s': want seconds from 0.01 to 600",
					       optarg);
			break;
		case OPT_NUMA:
			if (strcmp(optarg, "auto") && strcmp(optarg, "interleave") &&
			    strcmp(optarg, "off"))
				return mw_fail(MW_EXIT_USAGE, VERB, "--numa '%s': want auto (each node "
					       "in turn), interleave or off", optarg);
			o->v.numa = optarg;
			break;
		case OPT_MATRIX:
			o->v.matrix = true;
			break;
		case 'h':
			*help = true;
			return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	return mw_opt_none_left(&op);
}

/* A string of the record, escaped for the terminal (text.h): perf's messages and counts, a
 * path and PMU names from a sysfs tree reach the report, and none may act on the terminal. */
static const char *rtext(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? mw_esc(s) : "?";
}

static void print_text(const json_t *r)
{
	const json_t *canary = json_object_get(r, "canary");
	bool sim = !strcmp(rtext(r, "layer"), "sim");
	printf("DRAM backend: %s (%zu instances), counter layer %s%s\n", rtext(r, "backend"),
	       json_array_size(json_object_get(r, "instances")), rtext(r, "layer"),
	       sim ? " (SIMULATED: not a hardware verification)" : "");
	printf("canary: %.1f MiB (last-level cache: %s)\n",
	       (double)json_integer_value(json_object_get(canary, "bytes")) / 1048576.0,
	       rtext(canary, "llc_source"));
	printf("placement: %s\n", rtext(r, "assumption"));
	const json_t *cg = json_object_get(r, "counter_groups");
	if (json_is_object(cg)) {
		size_t g;
		const json_t *grp;
		printf("counter groups: %zu, each of at most %lld events (the PMU's counters); "
		       "every pass ran once per group, counting it whole:",
		       json_array_size(json_object_get(cg, "groups")),
		       json_integer_value(json_object_get(cg, "counters")));
		json_array_foreach(json_object_get(cg, "groups"), g, grp) {
			const json_t *ev = json_object_get(grp, "events");
			size_t ne = json_array_size(ev);
			const char *first = json_string_value(json_array_get(ev, 0));
			const char *last = json_string_value(json_array_get(ev, ne - 1));
			printf("%s %lld: %s%s%s", g ? ";" : "",
			       json_integer_value(json_object_get(grp, "group")),
			       first ? mw_esc(first) : "", ne > 1 ? " .. " : "",
			       ne > 1 && last ? mw_esc(last) : "");
		}
		printf("\n");
	}
	const json_t *perf = json_object_get(r, "perf"), *res = json_object_get(r, "resctrl");
	if (!json_is_true(json_object_get(perf, "available")))
		printf("perf: not compared: %s\n", rtext(perf, "reason"));
	if (!json_is_true(json_object_get(res, "available")))
		printf("resctrl: not compared: %s\n", rtext(res, "reason"));
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(r, "checks"), i, c) {
		bool ok = !strcmp(rtext(c, "verdict"), "pass");
		/* the matrix's cells are its table's rows: only their failures are listed here */
		if (ok && !strncmp(rtext(c, "name"), "matrix: ", 8))
			continue;
		printf("  %-4s %s\n", ok ? "ok" : "FAIL", rtext(c, "message"));
	}
	if (json_is_object(json_object_get(r, "matrix"))) {
		if (sim)
			printf("SIMULATED ");
		mw_dramverify_matrix_print(stdout, json_object_get(r, "matrix"));
	}
	printf("verdict: %s\n", rtext(r, "verdict"));
	json_array_foreach(json_object_get(r, "diagnoses"), i, c)
		printf("diagnosis %s%s%s: %s\n  fix: %s\n", rtext(c, "id"),
		       json_is_string(json_object_get(c, "where")) ? " on " : "",
		       json_is_string(json_object_get(c, "where")) ? rtext(c, "where") : "",
		       rtext(c, "evidence"), rtext(c, "fix"));
}

/* What -o may replace: nothing, or a regular file that is not the verification store (the
 * store holds every machine's verification; a FIFO would block, and a device or a link is
 * not verify's to replace). Checked before measuring, and again before the rename. The store
 * may not exist yet: then the same folder and name is the store. */
static int out_check(const char *out, const char *store)
{
	struct stat o, s;
	if (lstat(out, &o)) {
		if (errno != ENOENT)
			return mw_fail(MW_EXIT_ENV, VERB, "-o %s: %s", out, strerror(errno));
		char od[4096], sd[4096];
		snprintf(od, sizeof(od), "%s", out);
		snprintf(sd, sizeof(sd), "%s", store);
		const char *ob = strrchr(od, '/') ? strrchr(od, '/') + 1 : od;
		const char *sb = strrchr(sd, '/') ? strrchr(sd, '/') + 1 : sd;
		bool same_name = !strcmp(ob, sb);
		if (strrchr(od, '/'))
			*strrchr(od, '/') = '\0';
		else
			snprintf(od, sizeof(od), ".");
		if (strrchr(sd, '/'))
			*strrchr(sd, '/') = '\0';
		else
			snprintf(sd, sizeof(sd), ".");
		if (same_name && !stat(od[0] ? od : "/", &o) && !stat(sd[0] ? sd : "/", &s) &&
		    o.st_dev == s.st_dev && o.st_ino == s.st_ino)
			goto store;
		return 0;
	}
	if (!S_ISREG(o.st_mode))
		return mw_fail(MW_EXIT_USAGE, VERB, "-o %s is %s: verify writes its record only to "
			       "a new or a regular file and never replaces anything else; name a "
			       "file", out, mw_file_kind(o.st_mode));
	if (stat(store, &s) || o.st_dev != s.st_dev || o.st_ino != s.st_ino)
		return 0;
store:
	return mw_fail(MW_EXIT_USAGE, VERB, "-o %s is the verification store (%s), which keeps "
		       "every machine's verification: name another file for the record", out,
		       store);
}

int mw_cmd_verify(int argc, char **argv)
{
	struct options o = { .v = { .threads = 1, .idle_ms = 1000, .perf_seconds = 2.0 } };
	struct mw_error err;
	struct mw_run_signals sigs;
	json_t *rec = NULL;
	char why[1024], store[4096];
	bool help = false;
	int rc = parse_args(argc, argv, &o, &help);
	if (rc != MW_EXIT_OK || help) {
		if (help)
			usage(stdout);
		return rc;
	}
	mw_error_clear(&err);
	if (mw_dramverify_store_path(store, sizeof(store), &err)) {
		mw_error_print(&err);
		return MW_EXIT_ENV;
	}
	if (o.out && (rc = out_check(o.out, store)) != MW_EXIT_OK)
		return rc;
	o.v.log = stderr;
	/* SIGINT and SIGTERM only ask to stop, as in a run (control.h): the spawned perf's
	 * process group is then killed and reaped (spawn.c), and nothing is stored */
	mw_run_signals_catch(&sigs);
	int vrc = mw_dramverify_run(&o.v, &rec, why, sizeof(why));
	int stop = mw_run_stopped();
	if (stop) {
		json_decref(rec);
		mw_fail(MW_EXIT_ENV, VERB, "stopped by %s: nothing was stored",
			mw_run_stop_name());
		mw_run_signals_restore(&sigs);
		/* the default action now: the shell sees how memwall ended (128 + the signal) */
		raise(stop);
		return MW_EXIT_ENV;
	}
	mw_run_signals_restore(&sigs);
	if (vrc == -EINVAL)
		return mw_fail(MW_EXIT_USAGE, VERB, "--backend: %s", why);
	if (vrc == -ENOENT)
		return mw_fail(MW_EXIT_ENV, VERB, "cannot verify here: %s", why);
	if (vrc < 0)
		return mw_fail(MW_EXIT_ENV, VERB, "cannot verify here: %s", why);

	if (mw_dramverify_save(store, rec, &err)) {
		mw_error_print(&err);
		rc = MW_EXIT_ENV;
		goto out;
	}
	fprintf(stderr, "memwall verify: stored in %s\n", mw_esc(store));
	if (o.out) {
		if ((rc = out_check(o.out, store)) != MW_EXIT_OK)
			goto out;
		if (mw_json_write_atomic(o.out, rec, "the verification record", &err)) {
			mw_error_print(&err);
			rc = MW_EXIT_ENV;
			goto out;
		}
		fprintf(stderr, "memwall verify: record written to %s\n", mw_esc(o.out));
	}
	if (o.json) {
		json_dumpf(rec, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		fputc('\n', stdout);
	} else {
		print_text(rec);
	}
	rc = MW_EXIT_OK;
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(rec, "checks"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "verdict")), "pass")) {
			fprintf(stderr, "memwall verify: %s\n", rtext(c, "message"));
			rc = MW_EXIT_CHECK;
		}
	json_array_foreach(json_object_get(rec, "diagnoses"), i, c)
		fprintf(stderr, "memwall verify: diagnosis %s%s%s: %s; fix: %s\n", rtext(c, "id"),
			json_is_string(json_object_get(c, "where")) ? " on " : "",
			json_is_string(json_object_get(c, "where")) ? rtext(c, "where") : "",
			rtext(c, "evidence"), rtext(c, "fix"));
out:
	json_decref(rec);
	return rc;
}
