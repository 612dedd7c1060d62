/* tests/e2e/test_verify.c: `memwall verify` on the simulated PMU (tests/data/sim/README.md), and
 * `memwall run` recording the latest verification.
 *
 * The sim's counts do not follow the real canary, so each script is written here so that its
 * counts are what the canary should produce, from arithmetic done here:
 *
 *   the canary: --size 0.001 GiB is 0.001 * 2^30 bytes (truncated), rounded up to 6 whole
 *   pages for the one worker (engine.h, eng_stream_options.bytes): ws. The read pass reads ws
 *   (ENG_STREAM_READ: one array), the write pass writes ws with non-temporal stores
 *   (ENG_STREAM_WRITE: one array, nothing read), so its reads stay at the idle rate.
 *
 *   the reads (src/run/verify_run.c): verify reads every meter at the open (k = 0), then at
 *   the idle window's start and end (k = 1, 2), after setting up the canary (k = 3), after the
 *   read pass (k = 4), after the write pass (k = 5), and, with a perf tool, before and after
 *   perf's window (k = 6, 7). A rule's steps=A,B,... add A at read 1, B at read 2, and so on
 *   (the last repeated): steps[1] is the idle window, steps[3] the read pass, steps[4] the
 *   write pass, steps[6] perf's window. Every perf read advances ns_per_read, the same for
 *   every window, so the background verify subtracts from a pass is the idle window's count
 *   itself. One machine, one NUMA node: one placement (test_verify_numa.c has two).
 *
 * Bytes per count come from the trees' .scale and .unit files (sim_tree.h). Each case checks
 * the exit code, the failure message (naming the instance and the size of the disagreement,
 * formatted here from the figures computed here) and the record's verdicts.
 */
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "record.h"
#include "run.h"
#include "verify_sim.h"
#include "test.h"
#include "sim_tree.h"

#define SIZE_GIB "0.001"
#define IDLE 7  /* counts per event over the idle window (background) */
#define GAP 3   /* counts between windows nobody checks */

static char scratch[256], state[512], script[512], bindir[512];
static uint64_t ws;

/* One event's rule with its windows' counts: before idle, idle, the canary's set-up, read
 * pass, write pass, gap, perf window. */
static void rule(FILE *f, uint32_t type, uint64_t config, const char *cpu, uint64_t rd,
		 uint64_t wr, uint64_t perf)
{
	fprintf(f, "perf type=%u config=0x%" PRIx64 " cpu=%s start=1000 steps=%d,%d,%d,%" PRIu64
		",%" PRIu64 ",%d,%" PRIu64 " ns_per_read=2000000\n", type, config, cpu, GAP, IDLE,
		GAP, rd, wr, GAP, perf);
}

/* ---- arrow-lake: two free-running IMC instances, read and write */

#define AL "arrow-lake"
static double al_bpc;          /* bytes per count of data_read and data_write */
static uint64_t al_counts[2];  /* per instance: the canary's read pass, in counts */
static uint64_t perf_counts = 5000; /* each event over perf's window */

/* The script: instance inst's read pass counts rd_counts[inst] (net of the idle window),
 * the write pass the canary's ws spread evenly; the other direction of each pass stays at the
 * idle rate. */
static void write_al(const uint64_t rd_counts[2])
{
	FILE *f = fopen(script, "w");
	T_ASSERT(f != NULL);
	if (!f)
		exit(1);
	uint64_t wr = ws / 2 / 64; /* per instance, 64 bytes per count: checked below */
	for (int i = 0; i < 2; i++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", i);
		uint32_t type = t_pmu_type(AL, pmu);
		/* the read pass moves reads, the write pass writes; the idle window's count
		 * rides on every pass, in both directions */
		rule(f, type, 0x20ff, "*", rd_counts[i] + IDLE, IDLE, perf_counts);
		rule(f, type, 0x30ff, "*", IDLE, wr + IDLE, perf_counts + 1000u * (unsigned)i);
	}
	fclose(f);
}

static void setup_al(void)
{
	al_bpc = t_alias_bytes(AL, "uncore_imc_free_running_0", "data_read");
	T_NEAR(al_bpc, 64.0, 1e-9);
	T_NEAR(t_alias_bytes(AL, "uncore_imc_free_running_1", "data_write"), 64.0, 1e-9);
	T_EQ_U64(ws / 2 / 64 * 64 * 2, ws); /* whole counts: both passes are exact */
	al_counts[0] = al_counts[1] = ws / 2 / 64;
	t_sim_env(AL, script);
}

static struct t_output verify(const char *extra1, const char *extra2, const char *out)
{
	const char *argv[] = { "memwall", "verify", "--json", "--size", SIZE_GIB, "--idle-ms",
			       "1", "--perf-seconds", "0.05", "-o", out, extra1, extra2, NULL };
	return t_run(argv);
}

static json_t *load(const char *path)
{
	json_t *doc = json_load_file(path, 0, NULL);
	T_ASSERT(doc != NULL);
	return doc;
}

/* The check named name in a record, or NULL. */
static const json_t *check_named(const json_t *rec, const char *name)
{
	return t_json_find(json_object_get(rec, "checks"), "name", name);
}

static const char *verdict_of(const json_t *rec, const char *name)
{
	const json_t *c = check_named(rec, name);
	T_ASSERT(c != NULL);
	return c ? json_string_value(json_object_get(c, "verdict")) : "(absent)";
}

/* Counts that agree: every check passes, the record says so, and the store keeps it. */
static void test_agree(void)
{
	char out[700];
	snprintf(out, sizeof(out), "%s/agree.json", scratch);
	write_al(al_counts);
	struct t_output o = verify("--no-perf", NULL, out);
	T_OK(o, "verify");
	T_CONTAINS(o.err, "memwall verify: stored in ");
	t_output_free(&o);
	json_t *r = load(out);
	if (!r)
		return;
	T_EQ_STR(json_string_value(json_object_get(r, "verdict")), "pass");
	T_EQ_STR(json_string_value(json_object_get(r, "layer")), "sim");
	T_EQ_STR(json_string_value(json_object_get(r, "backend")), "intel_imc_free");
	T_EQ_U64((uint64_t)json_integer_value(json_object_get(json_object_get(r, "canary"),
							      "bytes")), ws);
	T_EQ_INT(strlen(json_string_value(json_object_get(r, "fingerprint_sha256"))), 64);
	/* each pass: the expected bytes are the canary's, and memwall's count, net of the
	 * background (IDLE counts per event per window), is exactly that */
	const json_t *rp = json_object_get(json_object_get(r, "passes"), "read");
	const json_t *wp = json_object_get(json_object_get(r, "passes"), "write");
	T_EQ_U64((uint64_t)json_integer_value(json_object_get(rp, "expected_bytes")), ws);
	T_NEAR(json_number_value(json_object_get(rp, "counted_bytes")), (double)ws, 1e-6);
	T_EQ_U64((uint64_t)json_integer_value(json_object_get(wp, "expected_bytes")), ws);
	T_NEAR(json_number_value(json_object_get(wp, "counted_bytes")), (double)ws, 1e-6);
	/* the other direction of each pass: the idle rate, net 0 */
	T_NEAR(json_number_value(json_object_get(json_object_get(rp, "cross"), "counted_bytes")),
	       0, 1e-6);
	T_NEAR(json_number_value(json_object_get(json_object_get(wp, "cross"), "counted_bytes")),
	       0, 1e-6);
	const json_t *in = json_array_get(json_object_get(rp, "instances"), 1);
	T_NEAR(json_number_value(json_object_get(in, "background_bytes")), IDLE * al_bpc, 1e-9);
	T_EQ_U64((uint64_t)json_integer_value(json_object_get(in, "raw_bytes")),
		 (uint64_t)((double)(al_counts[1] + IDLE) * al_bpc));
	/* 2 passes x (2 instances + sum + the other direction + running share) */
	T_EQ_INT(json_array_size(json_object_get(r, "checks")), 10);
	T_EQ_STR(verdict_of(r, "read pass: running share"), "pass");
	T_EQ_STR(verdict_of(r, "read pass: uncore_imc_free_running_1"), "pass");
	T_EQ_STR(verdict_of(r, "write pass: sum"), "pass");
	T_EQ_STR(verdict_of(r, "read pass: writes"), "pass");
	T_EQ_STR(verdict_of(r, "write pass: reads"), "pass");
	T_EQ_INT(json_array_size(json_object_get(r, "diagnoses")), 0);
	T_ASSERT(json_is_false(json_object_get(json_object_get(r, "perf"), "available")));
	/* arrow-lake has no resctrl: verify looked for it as a second meter, and says so; it
	 * never says a backend "was asked for" when nobody asked (issue 44) */
	const char *rwhy = json_string_value(json_object_get(json_object_get(r, "resctrl"),
							      "reason"));
	T_CONTAINS(rwhy ? rwhy : "", "no second meter: verify reads resctrl beside the backend "
				     "where it exists, and here resctrl: no ");
	T_ASSERT(rwhy && !strstr(rwhy, "asked for"));
	json_decref(r);

	/* the store: this machine's record under its layer */
	char store[700];
	snprintf(store, sizeof(store), "%s/verification.json", state);
	json_t *s = load(store);
	if (!s)
		return;
	T_EQ_STR(json_string_value(json_object_get(s, "schema")), "memwall-verification-store/1");
	T_EQ_INT(json_object_size(json_object_get(s, "machines")), 1);
	const char *sha;
	json_t *e;
	json_object_foreach(json_object_get(s, "machines"), sha, e)
		T_EQ_STR(json_string_value(json_object_get(json_object_get(e, "sim"), "verdict")),
			 "pass");
	json_decref(s);
}

/* One instance counts 10 % more than its share: the instance check fails, naming it and the
 * size of the disagreement. */
static void test_one_high(void)
{
	char out[700], want[300];
	snprintf(out, sizeof(out), "%s/high.json", scratch);
	uint64_t counts[2] = { al_counts[0], al_counts[1] * 11 / 10 };
	write_al(counts);
	struct t_output o = verify("--no-perf", NULL, out);
	T_EQ_INT(o.status, 1);
	double share = (double)ws / 2, got = (double)counts[1] * al_bpc;
	double e = (got - share) * 100.0 / share; /* about +10 % */
	T_NEAR(e, 10.0, 0.1);
	snprintf(want, sizeof(want), "memwall verify: uncore_imc_free_running_1 (read pass, read): "
		 "counted %.2fx its fair share of the expected bytes (%+.1f %%, threshold 5 %%)",
		 got / share, e);
	T_CONTAINS(o.err, want);
	T_ASSERT(!strstr(o.err, "memwall verify: uncore_imc_free_running_0"));
	t_output_free(&o);
	json_t *r = load(out);
	if (!r)
		return;
	T_EQ_STR(json_string_value(json_object_get(r, "verdict")), "fail");
	T_EQ_STR(verdict_of(r, "read pass: uncore_imc_free_running_1"), "fail");
	T_EQ_STR(verdict_of(r, "read pass: uncore_imc_free_running_0"), "pass");
	/* the sum is off by half of it: against the sum's 3 % (README) */
	double sum_e = ((double)(counts[0] + counts[1]) * al_bpc - (double)ws) * 100.0 /
		       (double)ws;
	T_EQ_STR(verdict_of(r, "read pass: sum"), fabs(sum_e) <= 3.0 ? "pass" : "fail");
	json_decref(r);

	/* within the thresholds: one instance 4 % high (the sum then +2 %) passes */
	uint64_t near[2] = { al_counts[0], al_counts[1] * 104 / 100 };
	T_ASSERT(fabs(((double)near[1] * al_bpc - share) * 100.0 / share) <= 5.0);
	T_ASSERT(fabs(((double)(near[0] + near[1]) * al_bpc - (double)ws) * 100.0 / (double)ws) <=
		 3.0);
	write_al(near);
	o = verify("--no-perf", NULL, out);
	T_EQ_INT(o.status, 0);
	t_output_free(&o);

	/* an instance that saw nothing of the canary fails, whatever the threshold */
	uint64_t none[2] = { al_counts[0] * 2, 0 };
	write_al(none);
	o = verify("--no-perf", NULL, out);
	T_EQ_INT(o.status, 1);
	T_CONTAINS(o.err, "memwall verify: uncore_imc_free_running_1 (read pass, read): counted "
			  "nothing");
	t_output_free(&o);
}

/* Counters that ran half the time they were enabled (the group's leader scaled=0.5: the sim
 * reports time_running = time_enabled / 2, so every count is extrapolated x2). The script's
 * raw steps are half of write_al's counts, so the extrapolated counts are write_al's exactly:
 * every byte check passes, and only the running share fails each pass, naming the share. */
static void test_multiplexed(void)
{
	char out[700], want[400];
	snprintf(out, sizeof(out), "%s/mux.json", scratch);
	uint64_t wr = ws / 2 / 64; /* the write pass, per instance (write_al's) */
	T_EQ_U64(al_counts[0] % 2 + al_counts[1] % 2 + wr % 2, 0); /* halves are whole counts */
	FILE *f = fopen(script, "w");
	T_ASSERT(f != NULL);
	if (!f)
		return;
	for (int i = 0; i < 2; i++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", i);
		uint32_t type = t_pmu_type(AL, pmu);
		/* rule()'s windows (gap, idle, the canary's set-up, read pass, write pass, gap,
		 * perf), every raw step halved: raw IDLE in the idle window reads 2 IDLE, the
		 * background each pass subtracts */
		fprintf(f, "perf type=%u config=0x20ff cpu=* start=1000 steps=%d,%d,%d,%" PRIu64
			",%d,%d,1 ns_per_read=2000000 scaled=0.5\n", type, GAP, IDLE, GAP,
			al_counts[i] / 2 + IDLE, IDLE, GAP);
		fprintf(f, "perf type=%u config=0x30ff cpu=* start=1000 steps=%d,%d,%d,%d,%" PRIu64
			",%d,1 ns_per_read=2000000\n", type, GAP, IDLE, GAP, IDLE, wr / 2 + IDLE, GAP);
	}
	fclose(f);
	struct t_output o = verify("--no-perf", NULL, out);
	T_EQ_INT(o.status, 1);
	snprintf(want, sizeof(want), "memwall verify: uncore_imc_free_running_0 (read pass, time "
		 "running / time enabled): multiplexed: counted %.1f %% of the pass", 50.0);
	T_CONTAINS(o.err, want);
	T_CONTAINS(o.err, "(write pass, time running / time enabled): multiplexed");
	t_output_free(&o);
	json_t *r = load(out);
	if (!r)
		return;
	T_EQ_STR(json_string_value(json_object_get(r, "verdict")), "fail");
	T_EQ_STR(verdict_of(r, "read pass: running share"), "fail");
	T_EQ_STR(verdict_of(r, "write pass: running share"), "fail");
	/* the extrapolated counts agree: the share alone fails the passes */
	T_EQ_STR(verdict_of(r, "read pass: uncore_imc_free_running_1"), "pass");
	T_EQ_STR(verdict_of(r, "read pass: sum"), "pass");
	T_EQ_STR(verdict_of(r, "write pass: sum"), "pass");
	const json_t *c = check_named(r, "read pass: running share");
	T_NEAR(json_number_value(json_object_get(c, "running_share")), 0.5, 1e-12);
	json_decref(r);
}

/* A fake perf first on $PATH: it checks the command verify gives it and prints perf stat's -x,
 * CSV (perf-stat(1): value, unit, event, run time, percentage, ...) with counts chosen here:
 * read_factor scales instance 0's read count. */
static void fake_perf(double read_factor)
{
	char path[700], body[4096], list[1024] = "", lines[2048] = "";
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			char ev[128];
			snprintf(ev, sizeof(ev), "uncore_imc_free_running_%d/config=0x%s/", i,
				 j ? "30ff" : "20ff");
			uint64_t c = perf_counts + (j ? 1000u * (unsigned)i : 0);
			double printed = i == 0 && j == 0 ? (double)c * read_factor : (double)c;
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 list[0] ? "," : "", ev);
			snprintf(lines + strlen(lines), sizeof(lines) - strlen(lines),
				 "%.0f,,%s,50000000,100.00,,\n", printed, ev);
		}
	snprintf(body, sizeof(body),
		 "#!/bin/sh\n"
		 "# fake perf (tests/e2e/test_verify.c)\n"
		 "if [ \"$1 $2 $3 $4 $5 $6\" != 'stat -a -x , -e %s' ] || [ \"$7 $8\" != '-- sleep' ]; "
		 "then echo \"fake perf: unexpected arguments: $*\" >&2; exit 9; fi\n"
		 "cat >&2 <<'EOF'\n# started on a fake\n\n%sEOF\n", list, lines);
	snprintf(path, sizeof(path), "%s/perf", bindir);
	t_write_file(path, body);
	chmod(path, 0755);
}

static void test_perf(void)
{
	char out[700], want[300], path[1200];
	const char *old = getenv("PATH");
	snprintf(path, sizeof(path), "%s:%s", bindir, old ? old : "/usr/bin:/bin");
	setenv("PATH", path, 1);
	snprintf(out, sizeof(out), "%s/perf.json", scratch);
	write_al(al_counts);

	/* perf agrees: every check passes, two per instance (read, write) against perf */
	fake_perf(1.0);
	struct t_output o = verify(NULL, NULL, out);
	T_OK(o, "verify");
	t_output_free(&o);
	json_t *r = load(out);
	if (r) {
		const json_t *perf = json_object_get(r, "perf");
		T_ASSERT(json_is_true(json_object_get(perf, "available")));
		T_EQ_STR(verdict_of(r, "perf: uncore_imc_free_running_0 read"), "pass");
		T_EQ_STR(verdict_of(r, "perf: uncore_imc_free_running_1 write"), "pass");
		T_EQ_INT(json_array_size(json_object_get(r, "checks")), 14);
		json_decref(r);
	}

	/* perf reads 20 % more on instance 0's reads than memwall over the same window */
	fake_perf(1.2);
	o = verify(NULL, NULL, out);
	T_EQ_INT(o.status, 1);
	double perf_b = (double)perf_counts * 1.2 * al_bpc, mw = (double)perf_counts * al_bpc;
	double e = (mw - perf_b) * 100.0 / perf_b;
	snprintf(want, sizeof(want), "memwall verify: uncore_imc_free_running_0 (read, perf stat "
		 "against memwall): memwall counted %.2fx perf's bytes (%+.1f %%, threshold 2 %%)",
		 mw / perf_b, e);
	T_CONTAINS(o.err, want);
	T_ASSERT(!strstr(o.err, "memwall verify: uncore_imc_free_running_1"));
	t_output_free(&o);

	/* a perf that fails (e.g. no permission for uncore events) is no meter: not compared,
	 * with its message */
	snprintf(path, sizeof(path), "%s/perf", bindir);
	t_write_file(path, "#!/bin/sh\necho 'Error: No permission to enable uncore event.' >&2\n"
			 "exit 1\n");
	o = verify(NULL, NULL, out);
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
	r = load(out);
	if (r) {
		const json_t *perf = json_object_get(r, "perf");
		T_ASSERT(json_is_false(json_object_get(perf, "available")));
		T_CONTAINS(json_string_value(json_object_get(perf, "reason")), "No permission");
		json_decref(r);
	}
	setenv("PATH", old ? old : "/usr/bin:/bin", 1);
}

/* ---- sapphire-rapids: 16 IMCs on two sockets (intel_imc_cas) and resctrl's two domains */

#define SPR "sapphire-rapids"

/* resctrl reads ratio times what the controllers count over both passes */
static void test_resctrl(double ratio, bool pass)
{
	char root[4200], out[700], want[400];
	snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), SPR);
	setenv("MEMWALL_SYSFS_ROOT", root, 1);
	FILE *f = fopen(script, "w");
	T_ASSERT(f != NULL);
	if (!f)
		return;
	/* 32 instances (uncore_imc_0..15 on CPUs 0 and 56), each a 1/32 share */
	uint64_t rd = ws / 32 / 64, wr = ws / 32 / 64;
	T_EQ_U64(rd * 64 * 32, ws);
	double bpc = t_alias_bytes(SPR, "uncore_imc_0", "cas_count_read");
	T_NEAR(bpc, 64.0, 1e-9);
	T_NEAR(t_alias_bytes(SPR, "uncore_imc_0", "cas_count_write"), 64.0, 1e-9);
	double imc = 0; /* bytes over both passes, read and write events, every instance */
	for (int p = 0; p < 16; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_%d", p);
		uint32_t type = t_pmu_type(SPR, pmu);
		static const char *const cpus[] = { "0", "56" };
		for (int s = 0; s < 2; s++) {
			/* cas_count_read event=0x05,umask=0xcf; write umask=0xf0 */
			rule(f, type, 0xcf05, cpus[s], rd + IDLE, IDLE, 1);
			rule(f, type, 0xf005, cpus[s], IDLE, wr + IDLE, 1);
			imc += (double)((rd + IDLE) + IDLE + IDLE + (wr + IDLE)) * bpc;
		}
	}
	/* resctrl's two domains, read at the same boundaries: the two passes are steps 4 and
	 * 5; each domain counts half of ratio * imc */
	uint64_t dom = (uint64_t)llround(ratio * imc / 4); /* per domain, per pass */
	for (int d = 0; d < 2; d++)
		fprintf(f, "file path=mon_L3_0%d/mbm_total_bytes start=77 steps=%d,%d,%d,%" PRIu64
			",%" PRIu64 ",%d\n", d, GAP, IDLE, GAP, dom, dom, GAP);
	fclose(f);
	snprintf(out, sizeof(out), "%s/resctrl.json", scratch);
	/* not placed: every instance shares the canary (test_verify_numa.c places it) */
	struct t_output o = verify("--no-perf", "--numa=off", out);
	if (pass && o.status)
		fprintf(stderr, "verify exited %d:\n%s\n", o.status, o.err);
	T_EQ_INT(o.status, pass ? 0 : 1);
	double res = (double)dom * 4, e = (res - imc) * 100.0 / imc;
	snprintf(want, sizeof(want), "resctrl MBM against the memory controllers (intel_imc_cas), "
		 "both canary passes: resctrl counted %.2fx the memory controllers' bytes (%+.1f "
		 "%%, threshold 15 %%)", res / imc, e);
	if (!pass) {
		char line[500];
		snprintf(line, sizeof(line), "memwall verify: %s", want);
		T_CONTAINS(o.err, line);
	}
	t_output_free(&o);
	json_t *r = load(out);
	if (r) {
		const json_t *c = check_named(r, "resctrl: total");
		T_ASSERT(c != NULL);
		T_EQ_STR(json_string_value(json_object_get(c, "verdict")), pass ? "pass" : "fail");
		T_EQ_STR(json_string_value(json_object_get(c, "message")), want);
		T_NEAR(json_number_value(json_object_get(c, "expected_bytes")), imc, 1e-6);
		T_EQ_STR(json_string_value(json_object_get(r, "backend")), "intel_imc_cas");
		/* the canary checks pass: the instances are the @cpu-named halves */
		T_EQ_STR(verdict_of(r, "read pass: uncore_imc_7@cpu56"), "pass");
		json_decref(r);
	}
	setenv("MEMWALL_SYSFS_ROOT", root, 1);
}

/* This VM on the plain syscall layer: no DRAM counters, said plainly, exit 3, no record. */
static void test_cannot_verify(void)
{
	char empty[700], out[700];
	snprintf(empty, sizeof(empty), "%s/state-none", scratch);
	snprintf(out, sizeof(out), "%s/none.json", scratch);
	t_no_counters_env();
	setenv("MEMWALL_STATE_DIR", empty, 1);
	struct t_output o = verify("--no-perf", NULL, out);
	T_EQ_INT(o.status, 3);
	T_CONTAINS(o.err, "memwall verify: cannot verify here: no memory-controller counters");
	T_CONTAINS(o.err, "bare metal");
	t_output_free(&o);
	struct stat sb;
	T_ASSERT(stat(out, &sb) != 0);
	T_ASSERT(stat(empty, &sb) != 0); /* nothing written, not even the folder */
	setenv("MEMWALL_STATE_DIR", state, 1);
	setenv("MEMWALL_COUNTERS", "sim", 1);

	const char *argv[] = { "memwall", "verify", "--size", "x", NULL };
	T_RUN_EXPECT(argv, 2, NULL, NULL);
}

/* `memwall run` after a verify: counters.dram.verification carries its verdict and layer. */
static void test_run_records(void)
{
	char proto[700], dir[700], path[1024] = "";
	setup_al();
	write_al(al_counts);
	char rec[700];
	snprintf(rec, sizeof(rec), "%s/for-run.json", scratch);
	struct t_output o = verify("--no-perf", NULL, rec);
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
	snprintf(proto, sizeof(proto), "%s/run.json", scratch);
	snprintf(dir, sizeof(dir), "%s/out", scratch);
	t_vs_run_protocol(proto, "verified");
	for (int pass = 0; pass < 2; pass++) {
		const char *argv[] = { "memwall", "run", proto, "-o", dir, NULL };
		o = t_run(argv);
		T_OK(o, "run");
		t_written_path(o.err, path, sizeof(path));
		t_output_free(&o);
		json_t *doc = path[0] ? load(path) : NULL;
		if (!doc)
			return;
		const json_t *dram = json_object_get(json_object_get(doc, "counters"), "dram");
		const json_t *v = json_object_get(dram, "verification");
		if (pass == 0) {
			T_EQ_STR(json_string_value(json_object_get(v, "verdict")), "pass");
			T_EQ_STR(json_string_value(json_object_get(v, "layer")), "sim");
			T_EQ_STR(json_string_value(json_object_get(v, "backend")), "intel_imc_free");
			T_ASSERT(json_is_false(json_object_get(v, "stale")));
			double age = json_number_value(json_object_get(v, "age_days"));
			T_ASSERT(age >= 0 && age < 1);
			T_CONTAINS(json_string_value(json_object_get(v, "source")), state);
			T_ASSERT(json_is_null(json_object_get(dram, "verification_reason")));
			/* The summary says it, and a bundle carries the verification record
			 * itself: the store's entry, byte for byte as verify stored it. */
			const char *rargv[] = { "memwall", "report", path, NULL };
			struct t_output r = t_run(rargv);
			T_CONTAINS(r.out, "- Verification: passed on the SIMULATED PMU (");
			t_output_free(&r);
			char bundle[760];
			snprintf(bundle, sizeof(bundle), "%s/v.tar.gz", scratch);
			const char *bargv[] = { "memwall", "bundle", path, "-o", bundle, NULL };
			T_RUN_EXPECT(bargv, 0, NULL, NULL);
			const char *lst[] = { "/bin/tar", "tzf", bundle, NULL };
			r = t_run(lst);
			T_CONTAINS(r.out, "verification/");
			t_output_free(&r);
			const char *pv[] = { "/bin/tar", "xzf", bundle, "-O", "provenance.md", NULL };
			r = t_run(pv);
			T_CONTAINS(r.out, "- Verification record: verification/");
			t_output_free(&r);
			const char *vb[] = { "memwall", "validate", bundle, NULL };
			T_RUN_EXPECT(vb, 0, NULL, NULL);
		} else {
			/* none in this state folder: null, and why */
			T_ASSERT(json_is_null(v));
			T_CONTAINS(json_string_value(json_object_get(dram, "verification_reason")),
				   "missing: ");
		}
		json_decref(doc);
		t_validates(path, "test_verify");
		char other[700];
		snprintf(other, sizeof(other), "%s/state-other", scratch);
		setenv("MEMWALL_STATE_DIR", other, 1);
	}
	setenv("MEMWALL_STATE_DIR", state, 1);
}

int main(void)
{
	t_need_memwall();
	t_scratch(scratch, sizeof(scratch), "verify");
	char cache[600];
	snprintf(cache, sizeof(cache), "%s/cache", scratch);
	snprintf(state, sizeof(state), "%s/state", scratch);
	snprintf(script, sizeof(script), "%s/sim.script", scratch);
	snprintf(bindir, sizeof(bindir), "%s/bin", scratch);
	mkdir(bindir, 0755);
	setenv("MEMWALL_CACHE_DIR", cache, 1);
	setenv("MEMWALL_STATE_DIR", state, 1);

	long page = sysconf(_SC_PAGESIZE);
	uint64_t unit6 = 6 * (uint64_t)page, asked = (uint64_t)(0.001 * 1073741824.0);
	ws = (asked + unit6 - 1) / unit6 * unit6;

	setup_al();
	test_agree();
	test_one_high();
	test_multiplexed();
	test_perf();
	test_resctrl(0.80, false);
	test_resctrl(0.95, true);
	test_cannot_verify();
	test_run_records();

	return t_done_rm(scratch, 1);
}
