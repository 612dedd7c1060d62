/* src/cli/cmd_calibrate.c: `memwall calibrate`, DRAM counters checked against known traffic.
 *
 * Streams a known number of bytes with the engine's streaming kernels (engine.h, "Memory
 * streaming"): a read-only pass, then a copy pass with non-temporal stores where the kernel
 * table has them (a plain store would add a write-allocate read of every written line). The
 * bytes the memory controllers counted over each pass are compared with the bytes the kernel
 * moved: the error per direction, and how the traffic split across the controller instances.
 * The runner records this next to every result, so a reader knows how far to trust the counts.
 *
 * The counters are system-wide: anything else running adds to them, so run it on a quiet
 * machine, and prefer a working set far larger than the last-level cache (the default 4 GiB).
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dram_calibration.h"
#include "engine.h"
#include "machine.h"
#include "mw.h"
#include "opt.h"
#include "probes.h"
#include "result.h"
#include "verbs.h"

#define VERB "calibrate"
#define GIB (1024.0 * 1024.0 * 1024.0)

struct options {
	double gib;
	int threads;
	bool json;
	const char *backend;
	const char *sysfs;
	double max_error; /* percent; < 0: report only */
	const char *save;  /* --save FILE; NULL: the user's calibration store */
	bool no_save;      /* --no-save */
};

static const struct pass {
	const char *name;
	enum eng_stream_kind kind;
	bool nontemporal;
} passes[] = {
	{ "read", ENG_STREAM_READ, false },
	{ "write", ENG_STREAM_COPY, true },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall calibrate [--json] [--size GiB] [--threads N] [--backend NAME]\n"
		"                         [--sysfs ROOT] [--max-error PCT] [--save FILE | --no-save]\n\n"
		"Checks the DRAM counters against known traffic: streams a known number of bytes\n"
		"(a read-only pass, then a copy pass with non-temporal stores where possible) and\n"
		"compares the bytes the memory controllers counted with the bytes moved. Reports the\n"
		"error %% per direction and the split across controller instances. The counters are\n"
		"system-wide: run it on a quiet machine.\n\n"
		"  --json           print the report as one JSON object\n"
		"  --size GiB       working set of each pass (default 4; fractions allowed)\n"
		"  --threads N      pinned streaming threads (default 1)\n"
		"  --backend NAME   DRAM backend to check (default: the most accurate present)\n"
		"  --sysfs ROOT     read PMUs from ROOT/bus/event_source/devices\n"
		"  --max-error PCT  exit 1 when a direction's |error| exceeds PCT (default: report only)\n"
		"  --save FILE      store the result in FILE instead of the user's calibration store\n"
		"  --no-save        store nothing\n\n"
		"The result is stored per machine (keyed by a fingerprint of the CPU, microcode,\n"
		"DIMMs, kernel and DRAM backend) in $MEMWALL_STATE_DIR/calibration.json, else\n"
		"$XDG_STATE_HOME/memwall/calibration.json, else\n"
		"~/.local/state/memwall/calibration.json; `memwall run` records it beside its counts.\n\n"
		"exit codes: 0 reported; 1 --max-error exceeded; 2 bad usage; 3 no DRAM counters here\n");
}

static int parse_args(int argc, char **argv, struct options *o, bool *help)
{
	enum { OPT_JSON = 256, OPT_SIZE, OPT_THREADS, OPT_BACKEND, OPT_SYSFS, OPT_MAX, OPT_SAVE,
	       OPT_NO_SAVE };
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "sysfs", required_argument, NULL, OPT_SYSFS },
		{ "max-error", required_argument, NULL, OPT_MAX },
		{ "save", required_argument, NULL, OPT_SAVE },
		{ "no-save", no_argument, NULL, OPT_NO_SAVE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long v;
	int c;
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "h", longopts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_SIZE:
			if (mw_parse_double(optarg, 0.001, 4096, &o->gib) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--size '%s': want GiB from 0.001 to 4096", optarg);
			break;
		case OPT_THREADS:
			if (mw_parse_long(optarg, 1, MW_THREADS_MAX, &v) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--threads '%s': want a whole number from 1 to %d",
					       optarg, MW_THREADS_MAX);
			o->threads = (int)v;
			break;
		case OPT_BACKEND:
			o->backend = optarg;
			break;
		case OPT_SYSFS:
			o->sysfs = optarg;
			break;
		case OPT_MAX:
			if (mw_parse_double(optarg, 0, 1e6, &o->max_error) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--max-error '%s': want a percentage >= 0", optarg);
			break;
		case OPT_SAVE:
			o->save = optarg;
			break;
		case OPT_NO_SAVE:
			o->no_save = true;
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

/* (counted - expected) / expected in percent; NaN when nothing was expected. */
static double error_pct(uint64_t counted, uint64_t expected)
{
	if (!expected)
		return NAN;
	return ((double)counted - (double)expected) * 100.0 / (double)expected;
}

static bool measured(const struct prb_bytes *b)
{
	return b->state == PRB_MEASURED;
}

/* A figure as a record holds it: its bytes when measured, null otherwise (the state beside it
 * says why). */
static json_t *bytes_json(const struct prb_bytes *b)
{
	return measured(b) ? json_integer((json_int_t)b->bytes) : json_null();
}

/* One pass: counters before and after one streaming run. -ENODATA, with *why, when a figure
 * the pass checks was not counted. */
static int run_pass(struct eng_stream *es, struct prb_dram *d, const struct pass *p,
		    const struct prb_dram_status *st, json_t *out, double *worst, const char **why)
{
	struct prb_dram_sample *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	struct eng_stream_sample s;
	bool nt = p->nontemporal;
	int rc = -ENOMEM;
	if (!a || !b)
		goto out;
	rc = prb_dram_read(d, a);
	if (rc == 0) {
		rc = eng_stream_run(es, p->kind, nt, &s);
		if (rc == -ENOTSUP && nt) {
			nt = false;
			rc = eng_stream_run(es, p->kind, nt, &s);
		}
	}
	if (rc == 0)
		rc = prb_dram_read(d, b);
	if (rc < 0)
		goto out;

	/* a plain (temporal) store reads the line before overwriting it: the controller sees
	 * one extra read per written byte (the write-allocate the STREAM byte count leaves out) */
	uint64_t exp_read = s.bytes_read + (nt ? 0 : s.bytes_written);
	uint64_t exp_write = s.bytes_written;
	/* b becomes what was counted over the pass; a figure is a number only when measured */
	prb_dram_sample_delta(b, a, b);
	const struct prb_bytes *got[3] = { &b->read, &b->write, &b->total };
	bool split = (st->provides & (PRB_DRAM_READ | PRB_DRAM_WRITE)) ==
		     (PRB_DRAM_READ | PRB_DRAM_WRITE);
	double e_read = measured(&b->read) ? error_pct(b->read.bytes, exp_read) : NAN;
	double e_write = measured(&b->write) ? error_pct(b->write.bytes, exp_write) : NAN;
	double e_total =
		measured(&b->total) ? error_pct(b->total.bytes, exp_read + exp_write) : NAN;

	json_t *inst = json_array();
	for (int i = 0; i < b->n_instances; i++) {
		const struct prb_dram_instance_sample *is = &b->inst[i];
		double share = measured(&is->total) && measured(&b->total) && b->total.bytes ?
				       (double)is->total.bytes * 100.0 / (double)b->total.bytes :
				       NAN;
		json_array_append_new(inst, json_pack("{s:s, s:i, s:o, s:o, s:o, s:s, s:o}",
			"pmu", st->instances[i].pmu, "cpu", st->instances[i].cpu,
			"read_bytes", bytes_json(&is->read), "write_bytes", bytes_json(&is->write),
			"total_bytes", bytes_json(&is->total), "total_state",
			prb_state_name(is->total.state),
			"share_pct", mw_json_num(share)));
	}
	json_object_set_new(out, p->name, json_pack(
		"{s:s, s:b, s:f, s:{s:I, s:I}, s:{s:o, s:o, s:o}, s:{s:s, s:s, s:s}, "
		"s:{s:o, s:o, s:o}, s:b, s:o}",
		"kernel", p->kind == ENG_STREAM_READ ? "read" : "copy", "nontemporal", nt,
		"seconds", s.seconds,
		"expected", "read_bytes", (json_int_t)exp_read, "write_bytes", (json_int_t)exp_write,
		"counted", "read_bytes", bytes_json(&b->read), "write_bytes", bytes_json(&b->write),
		"total_bytes", bytes_json(&b->total),
		"counted_state", "read", prb_state_name(b->read.state), "write",
		prb_state_name(b->write.state), "total", prb_state_name(b->total.state),
		"error_pct", "read", mw_json_num(e_read), "write", mw_json_num(e_write), "total",
		mw_json_num(e_total),
		"multiplexed", (b->reading_flags & PRB_READING_SCALED) != 0,
		"instances", inst));
	/* the figures this pass checks must have been counted: an error taken over nothing
	 * would let --max-error pass on a counter that never ran */
	for (int k = split ? 0 : 2; k < (split ? 2 : 3); k++)
		if (!measured(got[k]) && (k != 1 || exp_write)) {
			*why = prb_state_reason(got[k]->state);
			rc = -ENODATA;
			goto out;
		}
	/* the worst error over the directions this pass was meant to exercise */
	double checks[] = { split ? e_read : e_total, split && exp_write ? e_write : NAN };
	for (size_t i = 0; i < 2; i++)
		if (!isnan(checks[i]) && fabs(checks[i]) > *worst)
			*worst = fabs(checks[i]);
out:
	free(a);
	free(b);
	return rc;
}

static void print_text(json_t *r)
{
	json_t *ps = json_object_get(r, "passes");
	const char *name;
	json_t *p;
	printf("DRAM backend: %s (%zu instances)\n",
	       json_string_value(json_object_get(r, "backend")),
	       json_array_size(json_object_get(r, "instances")));
	const char *caveat = json_string_value(json_object_get(r, "caveat"));
	if (caveat)
		printf("caveat: %s\n", caveat);
	json_object_foreach(ps, name, p) {
		json_t *e = json_object_get(p, "expected"), *c = json_object_get(p, "counted");
		json_t *err = json_object_get(p, "error_pct");
		printf("\n%s pass (%s%s, %.3f s)%s\n", name,
		       json_string_value(json_object_get(p, "kernel")),
		       json_is_true(json_object_get(p, "nontemporal")) ? ", non-temporal" : "",
		       json_real_value(json_object_get(p, "seconds")),
		       json_is_true(json_object_get(p, "multiplexed")) ? " [multiplexed: scaled]" : "");
		static const char *const dirs[][2] = { { "read", "read_bytes" },
						       { "write", "write_bytes" } };
		for (size_t i = 0; i < 2; i++) {
			json_t *ep = json_object_get(err, dirs[i][0]);
			json_t *cv = json_object_get(c, dirs[i][1]);
			printf("  %-6s expected %14.1f MB  counted ", dirs[i][0],
			       (double)json_integer_value(json_object_get(e, dirs[i][1])) / 1e6);
			if (json_is_integer(cv))
				printf("%14.1f MB", (double)json_integer_value(cv) / 1e6);
			else /* not measured: its state, never a 0 */
				printf("%17s", json_string_value(json_object_get(
					json_object_get(p, "counted_state"), dirs[i][0])));
			printf("  error %s", json_is_real(ep) ? "" : "n/a");
			if (json_is_real(ep))
				printf("%+.2f %%", json_real_value(ep));
			printf("\n");
		}
		json_t *et = json_object_get(err, "total");
		if (json_is_real(et))
			printf("  total  error %+.2f %%\n", json_real_value(et));
		size_t i;
		json_t *in;
		printf("  split:");
		json_array_foreach(json_object_get(p, "instances"), i, in) {
			json_t *sh = json_object_get(in, "share_pct");
			printf(" %s@%lld %s", json_string_value(json_object_get(in, "pmu")),
			       json_integer_value(json_object_get(in, "cpu")), json_is_real(sh) ? "" : "-");
			if (json_is_real(sh))
				printf("%.1f%%", json_real_value(sh));
		}
		printf("\n");
	}
}

/* Stores report in the calibration store under this machine's fingerprint (the store's path
 * goes into the report as "stored_in"). */
static int save(const struct options *o, json_t *report, const struct prb_dram_status *st)
{
	char path[4096], sha[65];
	struct mw_error err;
	json_t *fp = NULL, *machine = mw_machine_describe(NULL);
	int rc = MW_EXIT_ENV;
	mw_error_clear(&err);
	if (o->save)
		snprintf(path, sizeof(path), "%s", o->save);
	else if (mw_dramcal_store_path(path, sizeof(path), &err)) {
		mw_error_print(&err);
		goto out;
	}
	if (!machine || !(fp = mw_dramcal_fingerprint(machine, st, sha))) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
		goto out;
	}
	if (mw_dramcal_save(path, report, fp, sha, &err)) {
		mw_error_print(&err);
		goto out;
	}
	json_object_set_new(report, "stored_in", json_string(path));
	json_object_set_new(report, "fingerprint_sha256", json_string(sha));
	fprintf(stderr, "memwall calibrate: stored in %s (machine fingerprint %.12s)\n", path, sha);
	rc = MW_EXIT_OK;
out:
	json_decref(fp);
	json_decref(machine);
	return rc;
}

int mw_cmd_calibrate(int argc, char **argv)
{
	struct options o = { .gib = 4.0, .threads = 1, .max_error = -1 };
	struct prb_system *sys = NULL;
	struct prb_dram *d = NULL;
	struct prb_dram_status *st = NULL;
	struct eng_stream *es = NULL;
	struct prb_error perr = { 0 };
	struct eng_error eerr = { 0 };
	json_t *report = NULL;
	bool help = false;
	double worst = 0;
	int rc = parse_args(argc, argv, &o, &help);
	if (rc != MW_EXIT_OK || help) {
		if (help)
			usage(stdout);
		return rc;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
		goto out;
	}
	if (prb_system_open(&sys, o.sysfs, &perr) < 0) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "%s: %s", perr.source, perr.text);
		goto out;
	}
	struct prb_dram_options dopt = { .backend = o.backend };
	int orc = prb_dram_open(&d, sys, &dopt, st);
	if (orc == -EINVAL && !st->backend[0]) {
		rc = mw_fail(MW_EXIT_USAGE, VERB, "--backend: %s", st->reason);
		goto out;
	}
	if (orc < 0) {
		if (o.json) {
			json_t *j = json_pack("{s:b, s:o, s:s}", "available", 0, "backend",
					      st->backend[0] ? json_string(st->backend) : json_null(),
					      "reason", st->reason);
			json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
			fputc('\n', stdout);
			json_decref(j);
		}
		rc = mw_fail(MW_EXIT_ENV, VERB, "no DRAM counters to calibrate: %s", st->reason);
		goto out;
	}
	struct eng_stream_options sopt = { .threads = o.threads, .bytes = (uint64_t)(o.gib * GIB) };
	if (eng_stream_new(&es, &sopt, &eerr) < 0) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "cannot set up streaming: %s%s%s", eerr.source,
			     eerr.source[0] ? ": " : "", eerr.text);
		goto out;
	}
	report = json_object();
	json_object_set_new(report, "available", json_true());
	json_object_set_new(report, "backend", json_string(st->backend));
	json_t *inst = json_array();
	for (int i = 0; i < st->n_instances; i++)
		json_array_append_new(inst, json_pack("{s:s, s:i}", "pmu", st->instances[i].pmu, "cpu",
						      st->instances[i].cpu));
	json_object_set_new(report, "instances", inst);
	json_object_set_new(report, "caveat", st->caveat[0] ? json_string(st->caveat) : json_null());
	json_object_set_new(report, "stream_kernels", json_string(eng_stream_kernels(es)));
	json_object_set_new(report, "working_set_bytes", json_integer((json_int_t)eng_stream_bytes(es)));
	json_object_set_new(report, "threads", json_integer(o.threads));
	json_t *ps = json_object();
	json_object_set_new(report, "passes", ps);
	for (size_t i = 0; i < sizeof(passes) / sizeof(passes[0]); i++) {
		const char *why = NULL;
		int prc = run_pass(es, d, &passes[i], st, ps, &worst, &why);
		if (prc < 0) {
			rc = mw_fail(MW_EXIT_ENV, VERB, "%s pass failed: %s", passes[i].name,
				     why ? why : strerror(-prc));
			goto out;
		}
	}
	json_object_set_new(report, "worst_error_pct", json_real(worst));
	if (!o.no_save && (rc = save(&o, report, st)) != MW_EXIT_OK)
		goto out;
	if (o.json) {
		json_dumpf(report, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		fputc('\n', stdout);
	} else {
		print_text(report);
		printf("\nworst error: %.2f %%\n", worst);
	}
	rc = MW_EXIT_OK;
	if (o.max_error >= 0 && worst > o.max_error)
		rc = mw_fail(MW_EXIT_CHECK, VERB, "worst error %.2f %% exceeds --max-error %.2f %%",
			     worst, o.max_error);
out:
	json_decref(report);
	eng_stream_free(es);
	prb_dram_close(d);
	prb_system_close(sys);
	free(st);
	return rc;
}
