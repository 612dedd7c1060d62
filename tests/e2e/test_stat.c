/* tests/e2e/test_stat.c: `memwall stat`, the DRAM traffic of any command, on the simulated PMU
 * (tests/data/sim/README.md) over recorded sysfs trees, and on this VM's tree without it.
 *
 * What stat reads: the counters once at their open (read k = 0), once just before the command
 * is released (k = 1), once per -I interval (k = 2, 3, ...) and once after the command is
 * reaped; its figures are differences from the k = 1 reading. A rule "start=S steps=A,B" adds
 * A at read 1 and B at every read after it, so without -I the command's count of that event is
 * B, and each -I interval's is B too. Bytes per count come from the tree's .scale and .unit
 * (sim_tree.h), 64 bytes per DF request on zen3 (amd_df.c's documented 64B requests). Every
 * expected figure is computed here.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "run.h"
#include "test.h"
#include "sim_tree.h"

#define AL "arrow-lake"
#define FIRST 500 /* counts every event adds at read 1: before the command, never its */

static char scratch[256], script[512], state[512];
static double al_bpc;
/* per instance of arrow-lake: the command's counts of data_read and data_write */
static const uint64_t rd_counts[2] = { 1000, 3000 }, wr_counts[2] = { 200, 700 };

static void use_tree(const char *tree)
{
	t_sim_env(tree, script);
}

/* arrow-lake's script; extra is added to every read rule (the group's leader) */
static void write_al(const char *extra, bool nogroups, int notrun_inst)
{
	FILE *f = fopen(script, "w");
	T_ASSERT(f != NULL);
	if (!f)
		exit(1);
	if (nogroups)
		fprintf(f, "nogroups\n");
	for (int i = 0; i < 2; i++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", i);
		uint32_t type = t_pmu_type(AL, pmu);
		/* data_read event=0xff,umask=0x20 -> 0x20ff; data_write umask=0x30 -> 0x30ff
		 * (format/event config:0-7, format/umask config:8-15) */
		fprintf(f, "perf type=%u config=0x20ff cpu=* start=7 steps=%d,%" PRIu64 " %s%s\n",
			type, FIRST, rd_counts[i], extra, i == notrun_inst ? " notrun" : "");
		fprintf(f, "perf type=%u config=0x30ff cpu=* start=9 steps=%d,%" PRIu64 "\n", type,
			FIRST, wr_counts[i]);
	}
	fclose(f);
}

static json_t *last_json_line(const char *text)
{
	const char *p = text, *line = NULL;
	for (const char *nl; (nl = strchr(p, '\n')); p = nl + 1)
		if (p[0] == '{')
			line = p;
	json_t *j = line ? json_loadb(line, strcspn(line, "\n"), 0, NULL) : NULL;
	if (!j)
		fprintf(stderr, "no JSON line in:\n%s\n", text);
	T_ASSERT(j != NULL);
	return j;
}

static uint64_t u(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	T_ASSERT(json_is_integer(v));
	return (uint64_t)json_integer_value(v);
}

static double d(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *s(const json_t *o, const char *a, const char *b)
{
	o = json_object_get(o, a);
	if (b)
		o = json_object_get(o, b);
	return json_is_string(o) ? json_string_value(o) : "(absent)";
}

/* `memwall stat --json -- sleep 0.3`: the script's bytes, per instance and summed, and the
 * figures beside them. */
static void test_json_sleep(void)
{
	write_al("", false, -1);
	const char *argv[] = { "memwall", "stat", "--json", "--", "sleep", "0.3", NULL };
	struct t_output o = t_run(argv);
	T_OK(o, "stat");
	T_EQ_STR(o.out, ""); /* stdout is the command's: sleep prints nothing */
	json_t *t = last_json_line(o.err);
	t_output_free(&o);
	if (!t)
		return;
	uint64_t rd = 0, wr = 0;
	const json_t *inst = json_object_get(t, "instances");
	T_EQ_INT(json_array_size(inst), 2);
	for (int i = 0; i < 2; i++) {
		const json_t *in = json_array_get(inst, (size_t)i);
		uint64_t r = (uint64_t)llround((double)rd_counts[i] * al_bpc);
		uint64_t w = (uint64_t)llround((double)wr_counts[i] * al_bpc);
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", i);
		T_EQ_STR(s(in, "pmu", NULL), pmu);
		T_EQ_U64(u(in, "read_bytes"), r);
		T_EQ_U64(u(in, "write_bytes"), w);
		T_EQ_U64(u(in, "total_bytes"), r + w);
		T_NEAR(d(in, "running_share"), 1.0, 0);
		rd += r;
		wr += w;
	}
	T_EQ_U64(u(t, "read_bytes"), rd);
	T_EQ_U64(u(t, "write_bytes"), wr);
	T_EQ_U64(u(t, "total_bytes"), rd + wr);
	T_EQ_STR(s(t, "dram_state", "read"), "measured");
	/* the command's life: at least the 0.3 s it slept; GB/s over it */
	double secs = d(t, "seconds");
	T_ASSERT(secs >= 0.3 && secs < 60);
	T_NEAR(d(t, "total_gbps"), (double)(rd + wr) / secs / 1e9, 1e-9 * d(t, "total_gbps") + 1e-15);
	T_NEAR(d(t, "read_gbps"), (double)rd / secs / 1e9, 1e-9 * d(t, "read_gbps") + 1e-15);
	T_NEAR(d(t, "running_share"), 1.0, 0);
	T_EQ_INT(json_integer_value(json_object_get(t, "exit_code")), 0);
	T_ASSERT(json_is_true(json_object_get(t, "valid")));
	T_ASSERT(json_is_true(json_object_get(t, "complete")));
	T_EQ_STR(s(t, "schema", NULL), "memwall-stat/1");
	T_EQ_STR(s(t, "scope", NULL), "system-wide");
	T_EQ_STR(s(t, "source", NULL), "SIMULATED");
	T_EQ_STR(s(t, "provenance", "dram_source"), "simulated");
	T_EQ_STR(s(json_object_get(t, "counters"), "dram", "layer"), "sim");
	T_EQ_STR(s(json_object_get(t, "counters"), "dram", "backend"), "intel_imc_free");
	T_CONTAINS(s(json_object_get(t, "counters"), "dram", "calibration_reason"), "missing");
	T_ASSERT(json_is_null(json_object_get(t, "mb_per_token")));
	T_EQ_STR(json_string_value(json_array_get(json_object_get(t, "command"), 1)), "0.3");
	const char *perf = s(t, "perf", "command");
	T_CONTAINS(perf, "perf stat -a -e uncore_imc_free_running_0/config=0x20ff/,");
	T_CONTAINS(perf, "uncore_imc_free_running_1/config=0x30ff/ -- sleep 0.3");
	json_decref(t);
}

/* The command's own output and stdin pass through; the figures stay on stderr. */
static void test_passthrough(void)
{
	char in[600];
	snprintf(in, sizeof(in), "%s/stdin.txt", scratch);
	t_write_file(in, "from stdin\n");
	write_al("", false, -1);
	const char *argv[] = { "memwall", "stat", "sh", "-c", "cat; echo to-stderr >&2", NULL };
	struct t_output o = t_run_in(argv, in);
	T_EQ_INT(o.status, 0);
	T_EQ_STR(o.out, "from stdin\n");
	T_CONTAINS_ALL(o.err,
		       T_LIST("to-stderr\n", "memwall stat: sh -c 'cat; echo to-stderr >&2' ran ",
			      "and exited with status 0", "SYSTEM-WIDE", "**SIMULATED**"));
	/* the sum row: read, written and total MB of the script */
	uint64_t rd = 0, wr = 0;
	for (int i = 0; i < 2; i++) {
		rd += (uint64_t)llround((double)rd_counts[i] * al_bpc);
		wr += (uint64_t)llround((double)wr_counts[i] * al_bpc);
	}
	const char *sum = strstr(o.err, "\n  sum ");
	double mr = NAN, mw = NAN, mt = NAN;
	T_ASSERT(sum && sscanf(sum + 7, "%lf %lf %lf", &mr, &mw, &mt) == 3);
	T_NEAR(mr, (double)rd / 1e6, 0.0005);
	T_NEAR(mw, (double)wr / 1e6, 0.0005);
	T_NEAR(mt, (double)(rd + wr) / 1e6, 0.0005);
	T_CONTAINS(o.err, "valid: every figure measured");
	T_CONTAINS(o.err, "check with the kernel's perf");
	t_output_free(&o);
}

/* -I 100 over half a second: a line per interval, each the script's step of every event. */
static void test_interval(void)
{
	write_al("", false, -1);
	const char *argv[] = { "memwall", "stat", "-I", "100", "--", "sleep", "0.5", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	double per = 0;
	for (int i = 0; i < 2; i++)
		per += (double)llround((double)(rd_counts[i] + wr_counts[i]) * al_bpc);
	int lines = 0;
	double last_t = 0;
	for (const char *p = o.err; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		double t, r, w, tot;
		if (p[0] != ' ' || sscanf(p, "%lf %lf %lf %lf", &t, &r, &w, &tot) != 4)
			continue;
		lines++;
		T_ASSERT(t > last_t);
		last_t = t;
		T_NEAR(tot, per / 1e6, 0.0005);
	}
	if (lines < 3)
		fprintf(stderr, "-I 100 over 0.5 s printed %d interval lines:\n%s\n", lines, o.err);
	T_ASSERT(lines >= 3);
	T_CONTAINS(o.err, "#   time s");
	t_output_free(&o);

	/* as JSON Lines: intervals, then the totals, which are their sum */
	const char *jargv[] = { "memwall", "stat", "--json", "-I", "100", "sleep", "0.35", NULL };
	o = t_run(jargv);
	T_EQ_INT(o.status, 0);
	int n = 0;
	uint64_t sum = 0;
	json_t *total = NULL;
	for (const char *p = o.err; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (*p != '{')
			continue;
		json_t *j = json_loadb(p, strcspn(p, "\n"), 0, NULL);
		T_ASSERT(j != NULL);
		if (j && !strcmp(s(j, "kind", NULL), "interval")) {
			n++;
			sum += u(j, "total_bytes");
			T_EQ_U64(u(j, "total_bytes"), (uint64_t)per);
			T_EQ_STR(s(j, "source", NULL), "SIMULATED");
			json_decref(j);
		} else if (j) {
			T_ASSERT(total == NULL);
			total = j;
		}
	}
	T_ASSERT(n >= 3);
	T_ASSERT(total != NULL);
	if (total)
		T_EQ_U64(u(total, "total_bytes"), sum);
	json_decref(total);
	t_output_free(&o);
}

/* A multiplexed backend: amd_df's eight channel events each ran half the time they were
 * enabled; counts are extrapolated (x2), the share is said, read and write are not provided. */
static void test_multiplexed(void)
{
	use_tree("zen3");
	FILE *f = fopen(script, "w");
	T_ASSERT(f != NULL);
	if (!f)
		return;
	uint32_t type = t_pmu_type("zen3", "amd_df");
	uint64_t want = 0;
	for (unsigned ch = 0; ch < 8; ch++) {
		/* event 0x07 + 0x40 ch in config:0-7,32-35; umask 0x38 in config:8-15 */
		uint64_t ev = 0x07 + 0x40 * ch;
		uint64_t config = (ev & 0xff) | 0x38 << 8 | (ev >> 8) << 32;
		uint64_t step = 100 + 11 * ch;
		fprintf(f, "perf type=%u config=0x%" PRIx64 " cpu=* start=0 steps=%d,%" PRIu64
			" scaled=0.5\n", type, config, FIRST, step);
		/* time_running is half of time_enabled at every read, so over the command too:
		 * the count is the step times 2, 64 bytes each */
		want += step * 2 * 64;
	}
	fclose(f);
	const char *argv[] = { "memwall", "stat", "--json", "--", "true", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	json_t *t = last_json_line(o.err);
	t_output_free(&o);
	if (t) {
		T_EQ_U64(u(t, "total_bytes"), want);
		T_NEAR(d(t, "running_share"), 0.5, 1e-12);
		T_ASSERT(json_is_null(json_object_get(t, "read_bytes")));
		T_EQ_STR(s(t, "dram_state", "read"), "not-provided");
		T_EQ_STR(s(t, "mb_per_token_basis", NULL), "total");
		T_ASSERT(json_is_true(json_object_get(t, "valid"))); /* not provided is not missing */
		T_NEAR(d(json_array_get(json_object_get(t, "instances"), 0), "running_share"), 0.5,
		       1e-12);
		json_decref(t);
	}
	const char *targv[] = { "memwall", "stat", "--tokens", "8", "--", "true", NULL };
	o = t_run(targv);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.err, "MULTIPLEXED: the least counted instance ran 50.0 % of the time");
	char want_mbt[64];
	snprintf(want_mbt, sizeof(want_mbt), "per token: %.4f MB/token (DRAM total",
		 (double)want / 1e6 / 8);
	T_CONTAINS(o.err, want_mbt);
	t_output_free(&o);
	use_tree(AL);
}

/* A counter that never ran: its figure is not measured, never 0, and stat exits 1 saying so. */
static void test_not_measured(void)
{
	write_al("", true, 1);
	const char *argv[] = { "memwall", "stat", "--json", "--", "true", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 1);
	T_CONTAINS(o.err, "memwall stat: DRAM read not measured on uncore_imc_free_running_1: "
			  "not-run");
	json_t *t = last_json_line(o.err);
	t_output_free(&o);
	if (!t)
		return;
	T_ASSERT(json_is_null(json_object_get(t, "read_bytes")));
	T_EQ_STR(s(t, "dram_state", "read"), "not-run");
	T_EQ_U64(u(t, "write_bytes"), (uint64_t)llround((double)(wr_counts[0] + wr_counts[1]) *
							 al_bpc));
	T_ASSERT(json_is_false(json_object_get(t, "valid")));
	const json_t *i1 = json_array_get(json_object_get(t, "instances"), 1);
	T_ASSERT(json_is_null(json_object_get(i1, "read_bytes")));
	T_EQ_U64(u(json_array_get(json_object_get(t, "instances"), 0), "read_bytes"),
		 (uint64_t)llround((double)rd_counts[0] * al_bpc));
	json_decref(t);
}

/* The command's exit status is reported, and a failed command is exit 1. */
static void test_exit_status(void)
{
	write_al("", false, -1);
	const char *argv[] = { "memwall", "stat", "--json", "--", "sh", "-c", "exit 3", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 1);
	T_CONTAINS(o.err, "memwall stat: the command exited with status 3\n");
	json_t *t = last_json_line(o.err);
	if (t)
		T_EQ_INT(json_integer_value(json_object_get(t, "exit_code")), 3);
	json_decref(t);
	t_output_free(&o);
	const char *kargv[] = { "memwall", "stat", "sh", "-c", "kill -9 $$", NULL };
	T_RUN_EXPECT(kargv, 1, NULL, T_LIST("the command was ended by signal 9"));
}

/* memwall in the background, its stderr into a file; its pid. */
static pid_t start_bg(const char *const argv[], const char *err_path)
{
	int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int nul = open("/dev/null", O_RDWR);
	pid_t pid = t_spawn(argv, nul, nul, fd);
	close(nul);
	close(fd);
	return pid;
}

/* SIGTERM to memwall: the command's group gets it, a member that ignores it is killed after
 * the grace, nothing of the group survives, and the figures up to then are printed. */
static void test_sigterm(bool stubborn)
{
	char pidfile[600], errf[600], cmd[1400];
	snprintf(pidfile, sizeof(pidfile), "%s/child.pid", scratch);
	snprintf(errf, sizeof(errf), "%s/stat.err", scratch);
	unlink(pidfile);
	write_al("", false, -1);
	/* a grandchild in the group writes its pid, then both wait */
	snprintf(cmd, sizeof(cmd), "%s sleep 30 & echo $! > '%s'; wait",
		 stubborn ? "trap '' TERM;" : "", pidfile);
	const char *argv[] = { "memwall", "stat", "--json", "--", "sh", "-c", cmd, NULL };
	pid_t pid = start_bg(argv, errf);
	T_ASSERT(pid > 0);
	struct stat sb;
	for (int i = 0; i < 3000 && stat(pidfile, &sb) != 0; i++)
		usleep(10000);
	usleep(100000); /* the pid written whole */
	char text[64] = "";
	T_ASSERT(t_read_text(pidfile, text, sizeof(text)));
	pid_t grandchild = (pid_t)atoi(text);
	T_ASSERT(grandchild > 0);
	double t0 = t_now();
	kill(pid, SIGTERM);
	int st = 0;
	waitpid(pid, &st, 0);
	double took = t_now() - t0;
	T_ASSERT(WIFEXITED(st));
	T_EQ_INT(WEXITSTATUS(st), 1);
	/* the stubborn group is killed when the 2 s grace is over; the other ends at once */
	if (stubborn)
		T_ASSERT(took >= 1.9);
	T_ASSERT(kill(grandchild, 0) != 0 && errno == ESRCH);
	FILE *f = fopen(errf, "r");
	char *buf = calloc(1, 65536);
	if (f && buf) {
		size_t got = fread(buf, 1, 65535, f);
		buf[got] = '\0';
	}
	if (f)
		fclose(f);
	T_CONTAINS(buf, "the command was stopped by SIGTERM");
	json_t *t = buf ? last_json_line(buf) : NULL;
	if (t) {
		T_EQ_STR(s(t, "stopped_by", NULL), "SIGTERM");
		T_ASSERT(json_is_false(json_object_get(t, "complete")));
		T_EQ_U64(u(t, "read_bytes"), (uint64_t)llround((double)(rd_counts[0] + rd_counts[1]) *
								al_bpc));
	}
	json_decref(t);
	free(buf);
}

/* -o FILE: the figures there whole, nothing on stderr; --tokens: MB/token on reads; with a
 * calibration `memwall calibrate` stored for this machine, the calibrated estimate. The sim
 * counts one step per read and calibrate reads each counter before and after each pass, so
 * each pass counts one step of each event: steps chosen so that reads come out 25 % high
 * (factor 0.8), as tests/src/test_dram_calibration.c does. */
static void test_tokens_calibrated(void)
{
	uint64_t rs[2], wsp[2];
	uint64_t ws = t_al_calib_script(script, rs, wsp);
	const char *cargv[] = { "memwall", "calibrate", "--json", "--size", "0.001", NULL };
	struct t_output o = t_run(cargv);
	T_OK(o, "calibrate");
	t_output_free(&o);

	char out[600];
	snprintf(out, sizeof(out), "%s/stat.json", scratch);
	const char *argv[] = { "memwall", "stat", "--json", "--tokens", "4", "-o", out, "--",
			       "true", NULL };
	o = t_run(argv);
	T_EQ_INT(o.status, 0);
	T_ASSERT(strchr(o.err, '{') == NULL); /* the figures went to the file */
	t_output_free(&o);
	json_t *t = json_load_file(out, 0, NULL);
	T_ASSERT(t != NULL);
	if (!t)
		return;
	double rd = (double)(rs[0] + rs[1]) * al_bpc; /* one step: 1.25 ws */
	T_NEAR(rd, 1.25 * (double)ws, 1e-6);
	T_EQ_U64(u(t, "read_bytes"), (uint64_t)rd);
	T_NEAR(d(t, "mb_per_token"), rd / 1e6 / 4, 1e-12);
	T_EQ_STR(s(t, "mb_per_token_basis", NULL), "read");
	/* the calibration's read factor is ws / 1.25 ws = 0.8: the estimate is the canary's */
	T_NEAR(d(t, "mb_per_token_calibrated"), rd * 0.8 / 1e6 / 4, 1e-12);
	T_NEAR(d(t, "basis_bytes_calibrated"), (double)ws, 1e-6);
	T_ASSERT(json_is_true(json_object_get(json_object_get(t, "provenance"), "calibrated")));
	T_ASSERT(json_is_null(json_object_get(json_object_get(json_object_get(t, "counters"),
							      "dram"), "calibration_reason")));
	json_decref(t);
	/* --no-calibration: the raw figure alone */
	const char *nargv[] = { "memwall", "stat", "--json", "--tokens", "4", "--no-calibration",
				"true", NULL };
	o = t_run(nargv);
	t = last_json_line(o.err);
	if (t)
		T_ASSERT(json_is_null(json_object_get(t, "mb_per_token_calibrated")));
	json_decref(t);
	t_output_free(&o);
}

/* This VM without the simulated PMU: no DRAM counters, one line, exit 3, the command not run. */
static void test_no_counters(void)
{
	char marker[600], cmd[700];
	snprintf(marker, sizeof(marker), "%s/ran", scratch);
	snprintf(cmd, sizeof(cmd), "touch '%s'", marker);
	t_no_counters_env();
	const char *argv[] = { "memwall", "stat", "--", "sh", "-c", cmd, NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 3);
	int lines = 0;
	for (const char *e = o.err; *e; e++)
		lines += *e == '\n';
	T_EQ_INT(lines, 1);
	const char *want = "memwall stat: DRAM traffic cannot be measured here: no "
			   "memory-controller counters";
	T_ASSERT(!strncmp(o.err, want, strlen(want)));
	T_CONTAINS(o.err, "bare metal");
	struct stat sb;
	T_ASSERT(stat(marker, &sb) != 0);
	t_output_free(&o);
	use_tree(AL);
}

static void test_usage(void)
{
	static const struct {
		const char *argv[8];
		const char *says;
	} cases[] = {
		{ { "memwall", "stat", NULL }, "no command" },
		{ { "memwall", "stat", "--json", NULL }, "no command" },
		{ { "memwall", "stat", "-I", "5", "true", NULL }, "-I '5': want milliseconds from 10" },
		{ { "memwall", "stat", "--json", "--csv", "true", NULL }, "contradict" },
		{ { "memwall", "stat", "--tokens", "0", "true", NULL }, "--tokens '0'" },
		{ { "memwall", "stat", "--", "no-such-program-xyz", NULL },
		  "no-such-program-xyz: not found in $PATH" },
		{ { "memwall", "stat", "--backend", "nosuch", "true", NULL },
		  "--backend nosuch: no such DRAM backend" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		T_RUN_EXPECT(cases[i].argv, 2, NULL, T_LIST(cases[i].says));
	}
	/* options after the command are the command's */
	write_al("", false, -1);
	const char *argv[] = { "memwall", "stat", "--csv", "sh", "-c", "exit 0", "--json", NULL };
	T_RUN_EXPECT(
	    argv, 0, NULL,
	    T_LIST("kind,time_s,instance,read_bytes,", "\ntotal,,\"sum\",", ",SIMULATED\n"));
}

int main(void)
{
	t_need_memwall();
	t_scratch(scratch, sizeof(scratch), "stat");
	snprintf(state, sizeof(state), "%s/state", scratch);
	snprintf(script, sizeof(script), "%s/sim.script", scratch);
	setenv("MEMWALL_STATE_DIR", state, 1);
	al_bpc = t_alias_bytes(AL, "uncore_imc_free_running_0", "data_read");
	T_NEAR(al_bpc, 64.0, 1e-9);
	T_NEAR(t_alias_bytes(AL, "uncore_imc_free_running_1", "data_write"), 64.0, 1e-9);
	use_tree(AL);

	test_usage();
	test_json_sleep();
	test_passthrough();
	test_interval();
	test_multiplexed();
	test_not_measured();
	test_exit_status();
	test_sigterm(false);
	test_sigterm(true);
	test_no_counters();
	test_tokens_calibrated();

	return t_done_rm(scratch, 1);
}
