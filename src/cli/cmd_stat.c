/* src/cli/cmd_stat.c: `memwall stat`, the DRAM traffic of any command, as `perf stat -a` meters
 * it, with memwall's backends, instance sums, states, calibration and provenance.
 *
 * The counters are the run's (src/run/counters.c: the same backend table, the same "every
 * instance or none" open, the same states: a figure that was not counted is not measured, with
 * why, never 0); the command is run as the external engine runs one (src/run/spawn.c: its own
 * process group, ended whole on SIGINT or SIGTERM), but keeps memwall's terminal, stdin and
 * output. What is read: one reading just before the command is released, one per -I interval,
 * one after it is reaped; figures are the differences. The memory controllers count every
 * core's and device's traffic, so the figures are system-wide, whatever the command.
 *
 * exit codes: 0 the command exited 0 and every figure was measured over its whole life; 1 the
 * command failed (a status other than 0, a signal), memwall stopped it (SIGINT, SIGTERM), or
 * a figure was not measured; 2 bad usage, or a command that cannot be run; 3 no DRAM counters
 * here (one line says why) or the output file cannot be written.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control.h"
#include "counters.h"
#include "dram_calibration.h"
#include "dram_verify.h"
#include "machine.h"
#include "metrics.h"
#include "opt.h"
#include "perf_line.h"
#include "provenance.h"
#include "spawn.h"
#include "text.h"
#include "verbs.h"

#define VERB "stat"
#define SCHEMA "memwall-stat/1"
#define MIN_INTERVAL_MS 10 /* below it an interval is mostly timing noise: usage() says why */
#define GRACE_MS 2000      /* a stopped command's group: the signal, then SIGKILL after this */

struct options {
	bool all, json, csv, no_calibration;
	int interval_ms;       /* 0: none */
	long tokens;           /* 0: not given */
	const char *out;       /* -o FILE */
	const char *backend;
	const char *calibration;
	char **cmd;            /* the command and its arguments, as given */
	int ncmd;
};

/* What one `memwall stat` holds while the command runs. */
struct stat_run {
	const struct options *o;
	struct mw_counters c;
	struct mw_snap start, prev, now, end;
	struct prb_dram_sample delta;
	FILE *out;             /* where the figures go: stderr, or -o's temporary file */
	const char *source;    /* "SIMULATED" or "hardware" */
	int n_intervals;
	bool basis_read;       /* MB/token counts reads (else the total) */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall stat [-a] [-I MS] [--tokens N] [--json | --csv] [-o FILE]\n"
		"                    [--backend NAME] [--calibration FILE | --no-calibration]\n"
		"                    [--] COMMAND [ARGS...]\n\n"
		"Runs COMMAND and prints the DRAM bytes read, written and in total, and GB/s, per\n"
		"memory-controller instance and summed, from the memory controllers' own counters\n"
		"(the backends, instance sums, states and calibration of `memwall run`). Every\n"
		"figure says whether it was measured (and why not), and who counted it: hardware, or\n"
		"the SIMULATED PMU (MEMWALL_COUNTERS=sim), calibrated or not. For a time instead of\n"
		"a program: memwall stat -a sleep 10.\n\n"
		"The figures are SYSTEM-WIDE: a memory controller counts every core's and device's\n"
		"traffic, not one process's. Keep the machine otherwise idle, or measure the idle\n"
		"rate first (memwall stat -a sleep 10) and subtract it.\n\n"
		"  -a               system-wide, as perf stat -a (memwall stat always is: accepted\n"
		"                   so perf's command lines work)\n"
		"  -I MS            also print the figures of every MS milliseconds as one line, as\n"
		"                   perf stat -I does; at least %d. Below about 100 ms the lines are\n"
		"                   noisy and below %d they are refused: each boundary is memwall\n"
		"                   waking up, which a busy scheduler delays by a millisecond or\n"
		"                   more, and the instances are read one after another; a\n"
		"                   multiplexed backend (amd_df) rotates its events once per\n"
		"                   kernel tick (perf_event_mux_interval_ms, 1000/HZ: 4 ms at\n"
		"                   HZ=250), so a short interval holds too few rotations to\n"
		"                   extrapolate from\n"
		"  --tokens N       the command generated N tokens: also print MB/token (DRAM read,\n"
		"                   or the total where the backend has no split; N is yours, memwall\n"
		"                   does not count tokens)\n"
		"  --json           JSON Lines: one object per -I interval, then the totals\n"
		"  --csv            CSV: a header, a row per -I interval, then a row per instance\n"
		"                   and the sum\n"
		"  -o FILE          write the figures to FILE (whole, when the command is done)\n"
		"                   instead of stderr\n"
		"  --backend NAME   DRAM backend (default: the most accurate present)\n"
		"  --calibration FILE, --no-calibration\n"
		"                   the calibration store to apply (default: this user's), or none\n\n"
		"The figures go to stderr, as perf stat's do, so COMMAND's own output stays on\n"
		"stdout. COMMAND keeps the terminal; SIGINT or SIGTERM to memwall is passed to its\n"
		"process group, which is killed %d s later if it has not ended, and the figures up\n"
		"to then are printed. The command's exit status is printed; processes it leaves in\n"
		"its group end with it.\n\n"
		"exit codes: 0 the command exited 0 and every figure was measured; 1 the command\n"
		"failed or was stopped, or a figure was not measured; 2 bad usage or a command that\n"
		"cannot be run; 3 no DRAM counters here (the reason is printed)\n",
		MIN_INTERVAL_MS, MIN_INTERVAL_MS, GRACE_MS / 1000);
}

static int parse_args(int argc, char **argv, struct options *o, bool *help)
{
	enum { OPT_TOKENS = 256, OPT_JSON, OPT_CSV, OPT_BACKEND, OPT_CAL, OPT_NO_CAL };
	static const struct option longopts[] = {
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "interval-print", required_argument, NULL, 'I' },
		{ "tokens", required_argument, NULL, OPT_TOKENS },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "calibration", required_argument, NULL, OPT_CAL },
		{ "no-calibration", no_argument, NULL, OPT_NO_CAL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long v;
	int c;
	struct mw_opt op;
	/* '+': the options end at the command, whose own options are its own */
	mw_opt_init(&op, VERB, argc, argv, "+haI:o:", longopts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case 'a':
			o->all = true;
			break;
		case 'I':
			if (mw_parse_long(optarg, MIN_INTERVAL_MS, 3600000, &v) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB, "-I '%s': want milliseconds from "
					       "%d to 3600000 (memwall stat --help says why not less)",
					       optarg, MIN_INTERVAL_MS);
			o->interval_ms = (int)v;
			break;
		case OPT_TOKENS:
			if (mw_parse_long(optarg, 1, 1000000000, &o->tokens) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB, "--tokens '%s': want a whole "
					       "number of tokens from 1", optarg);
			break;
		case OPT_JSON:
		case OPT_CSV:
			*(c == OPT_JSON ? &o->json : &o->csv) = true;
			break;
		case 'o':
			o->out = optarg;
			break;
		case OPT_BACKEND:
			o->backend = optarg;
			break;
		case OPT_CAL:
			o->calibration = optarg;
			break;
		case OPT_NO_CAL:
			o->no_calibration = true;
			break;
		case 'h':
			*help = true;
			return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	if (o->json && o->csv)
		return mw_fail(MW_EXIT_USAGE, VERB, "--json and --csv contradict each other: give "
			       "one");
	if (o->calibration && o->no_calibration)
		return mw_fail(MW_EXIT_USAGE, VERB, "--calibration FILE and --no-calibration "
			       "contradict each other: give one");
	if (optind >= argc)
		return mw_fail(MW_EXIT_USAGE, VERB, "no command: give one after the options (memwall "
			       "stat -- llama-bench -m model.gguf), or a time (memwall stat -a sleep "
			       "10)");
	o->cmd = argv + optind;
	o->ncmd = argc - optind;
	return MW_EXIT_OK;
}

/* ---- figures ----------------------------------------------------------------------------- */

static json_t *gbps_json(struct prb_bytes b, double seconds)
{
	return b.state == PRB_MEASURED && seconds > 0 ? mw_json_num((double)b.bytes / seconds / 1e9)
						      : json_null();
}

static json_t *states_json(const struct prb_bytes *rd, const struct prb_bytes *wr,
			   const struct prb_bytes *tot)
{
	return json_pack("{s:s, s:s, s:s}", "read", prb_state_name(rd->state), "write",
			 prb_state_name(wr->state), "total", prb_state_name(tot->state));
}

/* The figures of one interval (or the whole command) d over seconds, summed: bytes, GB/s,
 * states and the multiplexing share, into o. */
static void sum_into(json_t *o, const struct prb_dram_sample *d, double seconds)
{
	json_object_set_new(o, "seconds", mw_json_num(seconds));
	json_object_set_new(o, "read_bytes", mw_bytes_json(d->read));
	json_object_set_new(o, "write_bytes", mw_bytes_json(d->write));
	json_object_set_new(o, "total_bytes", mw_bytes_json(d->total));
	json_object_set_new(o, "read_gbps", gbps_json(d->read, seconds));
	json_object_set_new(o, "write_gbps", gbps_json(d->write, seconds));
	json_object_set_new(o, "total_gbps", gbps_json(d->total, seconds));
	json_object_set_new(o, "dram_state", states_json(&d->read, &d->write, &d->total));
	json_object_set_new(o, "running_share", mw_json_num(prb_dram_sample_share(d, NULL)));
}

/* Per instance: mw_dram_instances_json with each instance's GB/s. */
static json_t *instances_json(const struct stat_run *r, double seconds)
{
	const struct prb_dram_status *st = prb_dram_status(r->c.dram);
	json_t *a = mw_dram_instances_json(st, &r->delta), *in;
	size_t i;
	json_array_foreach(a, i, in) {
		const struct prb_dram_instance_sample *is = &r->delta.inst[i];
		json_object_set_new(in, "read_gbps", gbps_json(is->read, seconds));
		json_object_set_new(in, "write_gbps", gbps_json(is->write, seconds));
		json_object_set_new(in, "total_gbps", gbps_json(is->total, seconds));
		json_object_set_new(in, "dram_state", states_json(&is->read, &is->write,
								  &is->total));
	}
	return a;
}

/* "" when every figure the backend provides was measured; else why not, naming the figure, its
 * state and the first instance that was not measured. */
static void validity(const struct stat_run *r, char *why, size_t n)
{
	const struct prb_dram_status *st = prb_dram_status(r->c.dram);
	static const char *const names[] = { "read", "write", "total" };
	const struct prb_bytes *sums[] = { &r->delta.read, &r->delta.write, &r->delta.total };
	why[0] = '\0';
	for (int f = 0; f < 3 && !why[0]; f++) {
		if (sums[f]->state == PRB_MEASURED || sums[f]->state == PRB_NOT_PROVIDED)
			continue;
		const char *inst = "?";
		for (int i = 0; i < r->delta.n_instances; i++) {
			const struct prb_dram_instance_sample *is = &r->delta.inst[i];
			const struct prb_bytes *b = f == 0 ? &is->read : f == 1 ? &is->write
										: &is->total;
			if (b->state != PRB_MEASURED) {
				inst = st->instances[i].pmu;
				break;
			}
		}
		snprintf(why, n, "DRAM %s not measured on %s: %s (%s)", names[f], inst,
			 prb_state_name(sums[f]->state), prb_state_reason(sums[f]->state));
	}
}

/* ---- interval lines ---------------------------------------------------------------------- */

static void cell_mb(FILE *f, const json_t *o, const char *key, int width)
{
	const json_t *v = json_object_get(o, key);
	if (json_is_integer(v))
		fprintf(f, " %*.3f", width, (double)json_integer_value(v) / 1e6);
	else
		fprintf(f, " %*s", width, "-");
}

static void cell_num(FILE *f, const json_t *o, const char *key, int width, int prec,
		     double scale, const char *suffix)
{
	const json_t *v = json_object_get(o, key);
	if (json_is_number(v))
		fprintf(f, " %*.*f%s", width, prec, json_number_value(v) * scale, suffix);
	else
		fprintf(f, " %*s%s", width, "-", *suffix ? "  " : "");
}

/* The states of a row that are neither measured nor not-provided, as "read: not-run". */
static void row_states(FILE *f, const json_t *o)
{
	const json_t *st = json_object_get(o, "dram_state");
	static const char *const figs[] = { "read", "write", "total" };
	for (int k = 0; k < 3; k++) {
		const char *s = json_string_value(json_object_get(st, figs[k]));
		if (s && strcmp(s, "measured") && strcmp(s, "not-provided"))
			fprintf(f, "  %s: %s", figs[k], s);
	}
}

static void csv_row(FILE *f, const char *kind, const json_t *o, const char *label, double t,
		    const char *source)
{
	static const char *const nums[] = { "read_bytes", "write_bytes", "total_bytes",
					    "read_gbps", "write_gbps", "total_gbps",
					    "running_share" };
	fprintf(f, "%s,", kind);
	if (isnan(t))
		fputc(',', f);
	else
		fprintf(f, "%.6f,", t);
	mw_csv_put(f, label);
	for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
		const json_t *v = json_object_get(o, nums[k]);
		if (json_is_integer(v))
			fprintf(f, ",%lld", (long long)json_integer_value(v));
		else if (json_is_number(v))
			fprintf(f, ",%.9g", json_number_value(v));
		else
			fputc(',', f);
	}
	const json_t *st = json_object_get(o, "dram_state");
	fprintf(f, ",%s,%s,%s,%s\n", json_string_value(json_object_get(st, "read")),
		json_string_value(json_object_get(st, "write")),
		json_string_value(json_object_get(st, "total")), source);
}

static void csv_header(FILE *f)
{
	fprintf(f, "kind,time_s,instance,read_bytes,write_bytes,total_bytes,read_gbps,write_gbps,"
		   "total_gbps,running_share,read_state,write_state,total_state,source\n");
}

/* The spawn's tick: one reading, the interval since the last one, one line. */
static void on_tick(void *ctx)
{
	struct stat_run *r = ctx;
	mw_counters_read(&r->c, &r->now);
	mw_snap_dram_delta(&r->now, &r->prev, &r->delta);
	double secs = (double)(r->now.ns - r->prev.ns) / 1e9;
	double t = (double)(r->now.ns - r->start.ns) / 1e9;
	json_t *o = json_pack("{s:s, s:f}", "kind", "interval", "time_s", t);
	sum_into(o, &r->delta, secs);
	json_object_set_new(o, "source", json_string(r->source));
	FILE *f = r->out;
	if (r->o->json) {
		json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER);
		fputc('\n', f);
	} else if (r->o->csv) {
		csv_row(f, "interval", o, "sum", t, r->source);
	} else {
		if (r->n_intervals == 0)
			fprintf(f, "#   time s     read MB  written MB    total MB       GB/s   "
				   "running  (MB = 10^6 bytes, GB/s = 10^9 bytes/s; %s, system-wide)\n",
				r->source);
		fprintf(f, "%10.3f", t);
		cell_mb(f, o, "read_bytes", 11);
		cell_mb(f, o, "write_bytes", 11);
		cell_mb(f, o, "total_bytes", 11);
		cell_num(f, o, "total_gbps", 10, 3, 1, "");
		cell_num(f, o, "running_share", 7, 1, 100, " %");
		row_states(f, o);
		fputc('\n', f);
	}
	fflush(f);
	json_decref(o);
	r->n_intervals++;
	r->prev = r->now;
}

static void on_start(void *ctx, pid_t pid)
{
	struct stat_run *r = ctx;
	(void)pid;
	mw_counters_read(&r->c, &r->start);
	r->prev = r->start;
}

/* ---- the totals -------------------------------------------------------------------------- */

/* counters.dram as a run records it (backend, layer, opened, calibration, verification), so
 * the provenance every surface prints (provenance.h) reads it the same way. */
static json_t *dram_block(struct stat_run *r)
{
	const struct options *o = r->o;
	json_t *dram = mw_counters_dram_json(&r->c), *machine = mw_machine_describe(NULL);
	char sha[65];
	json_t *fp = machine ? mw_dramcal_fingerprint(machine, prb_dram_status(r->c.dram), sha)
			     : NULL;
	if (dram && fp) {
		struct mw_dramcal_source src = { .file = o->calibration, .off = o->no_calibration };
		json_t *cal = mw_dramcal_for_run(&src, fp, sha, mw_counters_dram_basis(&r->c), NULL);
		json_t *ver = mw_dramverify_for_run(NULL, sha, prb_counter_backend(), NULL);
		if (cal)
			json_object_update(dram, cal);
		if (ver)
			json_object_update(dram, ver);
		json_decref(cal);
		json_decref(ver);
	}
	json_decref(fp);
	json_decref(machine);
	return dram;
}

/* The calibration's factor for the MB/token basis when one applies (found, not stale), as
 * the run's derivation takes it (src/record/result.c); NaN otherwise. */
static double cal_factor(const json_t *dram, const char *basis)
{
	const json_t *cal = json_object_get(dram, "calibration");
	const json_t *f = json_object_get(json_object_get(cal, "factor"), basis);
	if (!json_is_object(cal) || !json_is_false(json_object_get(cal, "stale")) ||
	    !json_is_number(f))
		return NAN;
	return json_number_value(f);
}

/* The totals over the command's life: what every format prints. */
static json_t *totals_json(struct stat_run *r, const struct mw_spawn *sp, json_t *command)
{
	const struct options *o = r->o;
	double secs = (double)(r->end.ns - r->start.ns) / 1e9;
	char why[800];
	mw_snap_dram_delta(&r->end, &r->start, &r->delta);
	validity(r, why, sizeof(why));
	json_t *dram = dram_block(r);
	json_t *t = json_pack("{s:s, s:s, s:O, s:o, s:o, s:o, s:s}", "schema", SCHEMA, "kind",
			      "total", "command", command, "exit_code", sp->exit_code >= 0 ?
			      json_integer(sp->exit_code) : json_null(), "signal", sp->term_signal ?
			      json_integer(sp->term_signal) : json_null(), "stopped_by",
			      sp->stopped ? json_string(mw_run_stopped() == SIGTERM ? "SIGTERM" :
							"SIGINT") : json_null(), "scope",
			      "system-wide");
	if (!t || !dram) {
		json_decref(t);
		json_decref(dram);
		return NULL;
	}
	sum_into(t, &r->delta, secs);
	json_object_set_new(t, "source", json_string(r->source));
	json_object_set_new(t, "instances", instances_json(r, secs));
	/* MB/token on the run's basis: reads where the backend splits them, else the total */
	const char *basis = mw_counters_dram_basis(&r->c);
	const struct prb_bytes *b = r->basis_read ? &r->delta.read : &r->delta.total;
	double mbt = o->tokens && b->state == PRB_MEASURED ? (double)b->bytes / 1e6 /
							     (double)o->tokens : NAN;
	json_object_set_new(t, "tokens", o->tokens ? json_integer(o->tokens) : json_null());
	json_object_set_new(t, "mb_per_token_basis", json_string(basis));
	json_object_set_new(t, "mb_per_token", mw_json_num(mbt));
	json_object_set_new(t, "mb_per_token_calibrated",
			    mw_json_num(mbt * cal_factor(dram, basis)));
	json_object_set_new(t, "basis_bytes_calibrated",
			    mw_json_num(b->state == PRB_MEASURED ?
					(double)b->bytes * cal_factor(dram, basis) : NAN));
	json_object_set_new(t, "valid", json_boolean(!why[0]));
	json_object_set_new(t, "invalid_reason", why[0] ? json_string(why) : json_null());
	json_object_set_new(t, "complete", json_boolean(!sp->stopped));
	struct mw_perf_line pl;
	int prc = mw_perf_line(json_object_get(dram, "opened"), command, &pl);
	json_object_set_new(t, "perf", json_pack("{s:o, s:s}", "command", prc == 0 ?
						 json_string(pl.command) : json_null(), "note",
						 pl.note));
	json_object_set_new(t, "counters", json_pack("{s:o}", "dram", dram));
	struct mw_provenance prov;
	mw_provenance_of(t, &prov);
	json_object_set_new(t, "provenance", mw_provenance_json(&prov));
	return t;
}

/* "exited with status 0", "was ended by signal 9 (Killed)", "was stopped by SIGTERM". */
static void ended_how(const json_t *t, char *buf, size_t n)
{
	const json_t *code = json_object_get(t, "exit_code"), *sig = json_object_get(t, "signal");
	const char *stop = json_string_value(json_object_get(t, "stopped_by"));
	if (stop)
		snprintf(buf, n, "was stopped by %s (memwall passed it to the command's process "
			 "group)", stop);
	else if (json_is_integer(code))
		snprintf(buf, n, "exited with status %lld", (long long)json_integer_value(code));
	else if (json_is_integer(sig))
		snprintf(buf, n, "was ended by signal %lld (%s)", (long long)json_integer_value(sig),
			 strsignal((int)json_integer_value(sig)));
	else
		snprintf(buf, n, "ended, how is unknown");
}

static void text_row(FILE *f, const char *label, const json_t *o)
{
	fprintf(f, "  %-28s", label);
	cell_mb(f, o, "read_bytes", 11);
	cell_mb(f, o, "write_bytes", 11);
	cell_mb(f, o, "total_bytes", 11);
	cell_num(f, o, "total_gbps", 10, 3, 1, "");
	cell_num(f, o, "running_share", 7, 1, 100, " %");
	row_states(f, o);
	fputc('\n', f);
}

static void print_text(FILE *f, const json_t *t)
{
	char cmd[2048], how[300];
	mw_shell_join(json_object_get(t, "command"), cmd, sizeof(cmd));
	ended_how(t, how, sizeof(how));
	const json_t *dram = json_object_get(json_object_get(t, "counters"), "dram");
	const json_t *inst = json_object_get(t, "instances"), *in;
	struct mw_provenance prov;
	mw_provenance_of(t, &prov);
	fprintf(f, "\nmemwall stat: %s ran %.3f s and %s\n\n", mw_esc(cmd),
		json_number_value(json_object_get(t, "seconds")), how);
	fprintf(f, "DRAM traffic, SYSTEM-WIDE (a memory controller counts every core's and "
		   "device's traffic, not only the command's):\n");
	mw_provenance_print_md(f, &prov);
	fprintf(f, "\n  %-28s %11s %11s %11s %10s %9s\n", "instance", "read MB", "written MB",
		"total MB", "GB/s", "running");
	size_t i;
	json_array_foreach(inst, i, in) {
		char label[96];
		int same = 0;
		const char *pmu = json_string_value(json_object_get(in, "pmu"));
		size_t k;
		const json_t *x;
		json_array_foreach(inst, k, x)
			same += !strcmp(json_string_value(json_object_get(x, "pmu")), pmu);
		if (same > 1)
			snprintf(label, sizeof(label), "%s@cpu%lld", pmu,
				 (long long)json_integer_value(json_object_get(in, "cpu")));
		else
			snprintf(label, sizeof(label), "%s", pmu);
		text_row(f, mw_esc(label), in);
	}
	text_row(f, "sum", t);
	fprintf(f, "  (MB = 10^6 bytes, GB/s = 10^9 bytes/s over %.3f s; \"-\": not measured%s)\n",
		json_number_value(json_object_get(t, "seconds")),
		json_array_size(json_object_get(dram, "provides")) == 1 ?
			", this backend counts no read/write split" : "");
	double share = json_number_value(json_object_get(t, "running_share"));
	if (json_is_number(json_object_get(t, "running_share")) && share < 1.0)
		fprintf(f, "  MULTIPLEXED: the least counted instance ran %.1f %% of the time it was "
			   "enabled; its counts were extrapolated by time enabled / time running, "
			   "as perf does: estimates, not counts\n", share * 100.0);
	const char *why = json_string_value(json_object_get(t, "invalid_reason"));
	fprintf(f, "  %s%s\n", why ? "NOT VALID: " : "valid: every figure measured on every "
		"instance over the whole command", why ? mw_esc(why) : "");
	if (json_is_number(json_object_get(t, "mb_per_token"))) {
		fprintf(f, "  per token: %.4f MB/token (DRAM %s, over %lld tokens given by --tokens: "
			   "memwall did not count them)", json_number_value(json_object_get(t,
			   "mb_per_token")), json_string_value(json_object_get(t,
			   "mb_per_token_basis")), (long long)json_integer_value(json_object_get(t,
			   "tokens")));
		if (json_is_number(json_object_get(t, "mb_per_token_calibrated")))
			fprintf(f, "; calibrated estimate %.4f MB/token",
				json_number_value(json_object_get(t, "mb_per_token_calibrated")));
		fputc('\n', f);
	} else if (json_is_integer(json_object_get(t, "tokens"))) {
		fprintf(f, "  per token: not measured (DRAM %s was not measured)\n",
			json_string_value(json_object_get(t, "mb_per_token_basis")));
	}
	const json_t *perf = json_object_get(t, "perf");
	const char *pc = json_string_value(json_object_get(perf, "command"));
	if (pc)
		fprintf(f, "\ncheck with the kernel's perf (the same events):\n  %s\n  %s\n",
			mw_esc(pc), mw_esc(json_string_value(json_object_get(perf, "note"))));
	else
		fprintf(f, "\nno perf command to check with: %s\n",
			mw_esc(json_string_value(json_object_get(perf, "note"))));
}

static void print_csv(FILE *f, const json_t *t)
{
	const char *source = json_string_value(json_object_get(t, "source"));
	const json_t *in;
	size_t i;
	json_array_foreach(json_object_get(t, "instances"), i, in)
		csv_row(f, "instance", in, json_string_value(json_object_get(in, "pmu")), NAN,
			source);
	csv_row(f, "total", t, "sum", NAN, source);
}

/* ---- the verb ------------------------------------------------------------------------------ */

/* The figures' destination: stderr, or a temporary file beside -o FILE (renamed over it when
 * everything is written, so FILE is whole or untouched). */
static FILE *sink_open(const char *out, char *tmp, size_t n)
{
	if (!out)
		return stderr;
	snprintf(tmp, n, "%s.XXXXXX", out);
	int fd = mkostemp(tmp, O_CLOEXEC); /* not the command's to write */
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f && fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	return f;
}

static int sink_close(FILE *f, const char *out, const char *tmp)
{
	if (f == stderr)
		return 0;
	bool ok = fflush(f) == 0 && !ferror(f) && fsync(fileno(f)) == 0;
	ok &= fclose(f) == 0;
	if (ok && rename(tmp, out) == 0)
		return 0;
	int e = errno;
	unlink(tmp);
	return mw_fail(MW_EXIT_ENV, VERB, "%s: cannot write the figures: %s", out, strerror(e));
}

/* The one line that says why the exit code is 1, or MW_EXIT_OK. */
static int verdict(const json_t *t)
{
	const char *why = json_string_value(json_object_get(t, "invalid_reason"));
	const json_t *code = json_object_get(t, "exit_code");
	char how[300];
	ended_how(t, how, sizeof(how));
	/* stopped: the figures cover part of the command, whatever its status then */
	if (!json_is_integer(code) || json_integer_value(code) != 0 ||
	    !json_is_true(json_object_get(t, "complete")))
		return mw_fail(MW_EXIT_CHECK, VERB, "the command %s%s%s", how,
			       why ? "; and " : "", why ? mw_esc(why) : "");
	if (why)
		return mw_fail(MW_EXIT_CHECK, VERB, "%s", mw_esc(why));
	return MW_EXIT_OK;
}

/* Opens the DRAM counters; MW_EXIT_OK, or the exit code with its one line said. */
static int counters_open(struct stat_run *r)
{
	int rc = mw_counters_open_dram(&r->c, r->o->backend);
	if (rc == -EINVAL)
		return mw_fail(MW_EXIT_USAGE, VERB, "--backend %s: no such DRAM backend (memwall "
			       "doctor lists them)", mw_esc(r->o->backend));
	if (rc < 0) {
		/* one line, whatever the probe's reason holds */
		for (char *c = r->c.dram_reason; *c; c++)
			*c = *c == '\n' ? ' ' : *c;
		return mw_fail(MW_EXIT_ENV, VERB, "DRAM traffic cannot be measured here: %s",
			       mw_esc(r->c.dram_reason));
	}
	r->source = !strcmp(prb_counter_backend(), "sim") ? "SIMULATED" : "hardware";
	r->basis_read = !strcmp(mw_counters_dram_basis(&r->c), "read");
	return MW_EXIT_OK;
}

static int measure(struct stat_run *r, char *path, json_t *command, json_t **totals)
{
	const struct options *o = r->o;
	struct mw_error err;
	struct mw_run_signals sigs;
	char **argv = calloc((size_t)o->ncmd + 1, sizeof(char *));
	if (!argv)
		return mw_fail(MW_EXIT_ENV, VERB, "out of memory");
	argv[0] = path;
	for (int i = 1; i < o->ncmd; i++)
		argv[i] = o->cmd[i];
	struct mw_spawn sp = { .argv = argv, .hook = on_start, .ctx = r, .inherit_stdio = true,
			       .grace_ms = GRACE_MS, .tick = o->interval_ms ? on_tick : NULL,
			       .tick_ns = (uint64_t)o->interval_ms * 1000000u };
	mw_error_clear(&err);
	if (o->csv)
		csv_header(r->out);
	mw_run_signals_catch(&sigs);
	int rc = mw_spawn_run(&sp, &err);
	if (rc == 0 && o->interval_ms) {
		on_tick(r); /* the last, shorter interval, up to the command's end */
		r->end = r->now;
	} else if (rc == 0) {
		mw_counters_read(&r->c, &r->end);
	}
	mw_run_signals_restore(&sigs);
	free(argv);
	mw_spawn_free(&sp);
	if (rc) {
		mw_error_print(&err);
		return MW_EXIT_USAGE; /* it could not be run: the command is at fault */
	}
	if (!(*totals = totals_json(r, &sp, command)))
		return mw_fail(MW_EXIT_ENV, VERB, "out of memory");
	return MW_EXIT_OK;
}

int mw_cmd_stat(int argc, char **argv)
{
	struct options o = { 0 };
	bool help = false;
	int rc = parse_args(argc, argv, &o, &help);
	if (rc != MW_EXIT_OK || help) {
		if (help)
			usage(stdout);
		return rc;
	}
	char path[4096], tmp[4200];
	const char *tried = NULL;
	int frc = mw_spawn_find(o.cmd[0], path, sizeof(path), &tried);
	if (frc < 0)
		return mw_fail(MW_EXIT_USAGE, VERB, "%s: %s", mw_esc(tried ? tried : o.cmd[0]),
			       frc == -ENOENT && !tried ? "not found in $PATH" : strerror(-frc));
	struct stat_run *r = calloc(1, sizeof(*r));
	json_t *command = json_array(), *totals = NULL;
	if (!r || !command) {
		free(r);
		json_decref(command);
		return mw_fail(MW_EXIT_ENV, VERB, "out of memory");
	}
	for (int i = 0; i < o.ncmd; i++) {
		char *word = mw_utf8_fix(o.cmd[i]); /* JSON holds UTF-8 only */
		json_array_append_new(command, json_string(word ? word : "?"));
		free(word);
	}
	r->o = &o;
	if ((rc = counters_open(r)) != MW_EXIT_OK)
		goto out;
	if (!(r->out = sink_open(o.out, tmp, sizeof(tmp)))) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "%s: cannot write here: %s", mw_esc(o.out),
			     strerror(errno));
		goto out;
	}
	rc = measure(r, path, command, &totals);
	if (rc == MW_EXIT_OK) {
		if (o.json) {
			json_dumpf(totals, r->out, JSON_COMPACT | JSON_PRESERVE_ORDER);
			fputc('\n', r->out);
		} else if (o.csv) {
			print_csv(r->out, totals);
		} else {
			print_text(r->out, totals);
		}
	}
	if (r->out != stderr && rc != MW_EXIT_OK) {
		fclose(r->out);
		unlink(tmp);
	} else {
		int src = sink_close(r->out, o.out, tmp);
		if (rc == MW_EXIT_OK)
			rc = src;
	}
	if (rc == MW_EXIT_OK)
		rc = verdict(totals);
out:
	json_decref(totals);
	json_decref(command);
	mw_counters_close(&r->c);
	free(r);
	return rc;
}
