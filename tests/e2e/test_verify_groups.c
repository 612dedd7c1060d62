/* tests/e2e/test_verify_groups.c: `memwall verify` on a backend whose events do not fit its
 * counters (tests/lib/verify_sim.h says how the scripts follow verify's windows).
 *
 * The zen3 tree: amd_df, one instance on CPU 0, eight DRAM channel events
 * dram_channel_data_controller_0..7 (perf's amdzen3 data-fabric.json names; event 0x07 +
 * 0x40 c, umask 0x38, 64 bytes a count), on a data fabric PMU with four counters (the
 * kernel's NUM_COUNTERS_NB). The script says so ("pmu type=T counters=4"), so the simulated
 * PMU does what the kernel would: with all eight enabled each runs half its time and is
 * extrapolated, with four, each runs all of it. verify must count, not extrapolate: it opens
 * channels 0-3 and 4-7 as two groups and runs every phase once per group. Each group's
 * counters read at the same points, so a channel's rule lists one step per reading, as
 * for any backend.
 *
 * The canary ws (t_vs_bytes) spreads evenly over the eight channels: ws / 8 per channel per
 * pass, ws / 2 per group of four, ws over both groups. Every figure checked below is computed
 * here from those.
 */
#include <sys/stat.h>

#include "run.h"
#include "test.h"
#include "sim_tree.h"
#include "verify_sim.h"

#define ZEN3 "zen3"
#define SIZE "0.001"
#define CHANNELS 8

static char scratch[256], script[512];
static uint64_t ws[5]; /* [0]: the canary; [1..4]: the matrix's sizes */

static uint64_t channel_config(unsigned c)
{
	uint64_t ev = 0x07 + 0x40 * c; /* config:0-7,32-35; umask 0x38 at config:8-15 */
	return (ev & 0xff) | 0x38 << 8 | (ev >> 8) << 32;
}

static const struct {
	const char *name;
	double total; /* reads + writes the pattern must move, in multiples of ws */
} pat[5] = { { "read", 1 }, { "write", 2 }, { "nt-write", 1 }, { "copy", 1.5 },
	     { "triad", 4.0 / 3 } };

/* silent: a channel whose count stays at the idle rate in both passes (-1: none); scaled: a
 * channel another agent's events crowd (its counter runs half the time, -1: none); matrix:
 * the matrix's windows too. */
static void write_script(int silent, int scaled, bool matrix)
{
	FILE *f = t_vs_open(script);
	uint32_t type = t_pmu_type(ZEN3, "amd_df");
	fprintf(f, "pmu type=%u counters=4\n", type);
	for (unsigned c = 0; c < CHANNELS; c++) {
		struct t_vs_steps s;
		uint64_t per = (int)c == silent ? 0 : ws[0] / CHANNELS / 64;
		t_vs_begin(&s);
		t_vs_target(&s, per, per); /* the read pass reads ws, the write pass writes ws */
		for (int k = 1; matrix && k <= 4; k++) {
			t_vs_add(&s, UINT64_MAX);
			for (int p = 0; p < 5; p++)
				t_vs_add(&s, (uint64_t)llround(pat[p].total * (double)ws[k]) /
					       CHANNELS / 64);
		}
		char match[32];
		snprintf(match, sizeof(match), "cpu=*%s", (int)c == scaled ? " scaled=0.5" : "");
		t_vs_rule(f, type, channel_config(c), match, &s);
	}
	fclose(f);
}

static const json_t *group_of(const json_t *pass, int g)
{
	return json_array_get(json_object_get(json_array_get(json_object_get(pass, "instances"),
							     0), "groups"), (size_t)g);
}

/* Correct counters: every check passes, every share is 100 %, and the groups add up. */
static void test_pass(void)
{
	char out[700], name[64];
	snprintf(out, sizeof(out), "%s/pass.json", scratch);
	write_script(-1, -1, false);
	json_t *r = T_VS_EXPECT(0, SIZE, out, NULL, NULL, NULL);
	if (!r)
		return;
	T_EQ_STR(json_string_value(json_object_get(r, "backend")), "amd_df");
	T_EQ_STR(json_string_value(json_object_get(r, "verdict")), "pass");
	/* the groups: four counters, channels 0-3 and 4-7 */
	const json_t *cg = json_object_get(r, "counter_groups");
	T_EQ_INT(json_integer_value(json_object_get(cg, "counters")), 4);
	T_EQ_INT(json_array_size(json_object_get(cg, "groups")), 2);
	for (unsigned c = 0; c < CHANNELS; c++) {
		const json_t *ev = json_array_get(json_object_get(json_array_get(
			json_object_get(r, "instances"), 0), "events"), c);
		snprintf(name, sizeof(name), "dram_channel_data_controller_%u", c);
		T_EQ_STR(json_string_value(json_object_get(ev, "name")), name);
		T_EQ_INT(json_integer_value(json_object_get(ev, "group")), (int)c / 4 + 1);
		T_EQ_STR(json_string_value(json_array_get(json_object_get(json_array_get(
			json_object_get(cg, "groups"), c / 4), "events"), c % 4)), name);
	}
	static const char *const passes[] = { "read", "write" };
	for (int p = 0; p < 2; p++) {
		const json_t *pj = json_object_get(json_object_get(r, "passes"), passes[p]);
		char check[80];
		T_EQ_U64((uint64_t)json_integer_value(json_object_get(pj, "expected_bytes")), ws[0]);
		T_NEAR(json_number_value(json_object_get(pj, "counted_bytes")), (double)ws[0], 1e-6);
		double sum = 0;
		for (int g = 0; g < 2; g++) {
			const json_t *gj = group_of(pj, g);
			T_EQ_INT(json_integer_value(json_object_get(gj, "group")), g + 1);
			T_NEAR(json_number_value(json_object_get(gj, "expected_bytes")),
			       (double)ws[0] / 2, 1e-6);
			T_NEAR(json_number_value(json_object_get(gj, "counted_bytes")),
			       (double)ws[0] / 2, 1e-6);
			T_NEAR(json_number_value(json_object_get(gj, "running_share")), 1.0, 1e-12);
			sum += json_number_value(json_object_get(gj, "counted_bytes"));
			const json_t *be = json_object_get(gj, "by_event");
			T_EQ_INT(json_array_size(be), 4);
			for (size_t j = 0; j < json_array_size(be); j++)
				T_NEAR(json_number_value(json_object_get(json_array_get(be, j),
									 "counted_bytes")),
				       (double)ws[0] / CHANNELS, 1e-6);
			snprintf(check, sizeof(check), "%s pass: amd_df counter group %d", passes[p],
				 g + 1);
			T_EQ_STR(t_vs_verdict(r, check), "pass");
		}
		T_NEAR(sum, (double)ws[0], 1e-6); /* the groups add up to the canary */
		snprintf(check, sizeof(check), "%s pass: running share", passes[p]);
		T_EQ_STR(t_vs_verdict(r, check), "pass");
		T_NEAR(json_number_value(json_object_get(t_vs_check(r, check), "running_share")),
		       1.0, 1e-12);
		snprintf(check, sizeof(check), "%s pass: amd_df/dram_channel_data_controller_6",
			 passes[p]);
		T_EQ_STR(t_vs_verdict(r, check), "pass");
	}
	/* per pass: instance, sum, share, 2 groups, 8 channels */
	T_EQ_INT(json_array_size(json_object_get(r, "checks")), 2 * (3 + 2 + 8));
	json_decref(r);

	/* the text: the groups said, SIMULATED */
	const char *argv[] = { "memwall", "verify", "--size", SIZE, "--idle-ms", "1", "--no-perf",
			       NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "(SIMULATED: not a hardware verification)");
	T_CONTAINS(o.out, "counter groups: 2, each of at most 4 events (the PMU's counters); "
			  "every pass ran once per group, counting it whole: 1: "
			  "dram_channel_data_controller_0 .. dram_channel_data_controller_3; 2: "
			  "dram_channel_data_controller_4 .. dram_channel_data_controller_7");
	T_CONTAINS(o.out, "ok   amd_df counter group 1 of 2 (read pass, time running / time "
			  "enabled): every instance counted the whole pass, in 2 counter groups");
	t_output_free(&o);
}

/* Opened all at once (as `memwall stat` and runs open them), the same eight channels on four
 * counters run half the time: the share verify would have failed without its groups. */
static void test_all_at_once(void)
{
	write_script(-1, -1, false);
	const char *argv[] = { "memwall", "stat", "--json", "--", "true", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	const char *line = NULL; /* the last JSON line: the totals */
	for (const char *p = o.err, *nl; (nl = strchr(p, '\n')); p = nl + 1)
		if (p[0] == '{')
			line = p;
	json_t *t = line ? json_loadb(line, strcspn(line, "\n"), 0, NULL) : NULL;
	T_ASSERT(t != NULL);
	if (t) {
		T_NEAR(json_number_value(json_object_get(t, "running_share")), 4.0 / 8.0, 1e-12);
		json_decref(t);
	}
	t_output_free(&o);
}

/* One silent channel in the second group: its check names it, its group counts 3/4 of its
 * part, the instance and the sum 7/8 of the canary; the first group passes. */
static void test_silent_channel(void)
{
	char out[700], want[400];
	snprintf(out, sizeof(out), "%s/silent.json", scratch);
	write_script(5, -1, false);
	struct t_output o = t_vs_verify(SIZE, out, NULL, NULL, NULL);
	T_EQ_INT(o.status, 1);
	snprintf(want, sizeof(want), "memwall verify: amd_df/dram_channel_data_controller_5 "
		 "(counter group 2 of 2, read pass, total): counted nothing (0 bytes, against %.0f)",
		 (double)ws[0] / CHANNELS);
	T_CONTAINS(o.err, want);
	double got = 3.0 * (double)ws[0] / CHANNELS, part = (double)ws[0] / 2;
	snprintf(want, sizeof(want), "memwall verify: amd_df counter group 2 of 2 (write pass, "
		 "total): counted %.2fx its part of the fair share (4 of the instance's 8 total "
		 "events) (%+.1f %%, threshold 5 %%)", got / part, (got - part) * 100 / part);
	T_CONTAINS(o.err, want);
	T_ASSERT(!strstr(o.err, "dram_channel_data_controller_4 (counter"));
	T_ASSERT(!strstr(o.err, "counter group 1 of 2 (read pass"));
	t_output_free(&o);
	json_t *r = t_vs_load(out);
	if (!r)
		return;
	T_EQ_STR(json_string_value(json_object_get(r, "verdict")), "fail");
	T_EQ_STR(t_vs_verdict(r, "read pass: amd_df/dram_channel_data_controller_5"), "fail");
	T_EQ_STR(t_vs_verdict(r, "read pass: amd_df/dram_channel_data_controller_4"), "pass");
	T_EQ_STR(t_vs_verdict(r, "read pass: amd_df counter group 2"), "fail");
	T_EQ_STR(t_vs_verdict(r, "read pass: amd_df counter group 1"), "pass");
	T_EQ_STR(t_vs_verdict(r, "read pass: running share"), "pass");
	/* 7 of 8 channels: -12.5 %, over the sum's 3 % */
	T_EQ_STR(t_vs_verdict(r, "read pass: sum"), "fail");
	const json_t *pj = json_object_get(json_object_get(r, "passes"), "read");
	T_NEAR(json_number_value(json_object_get(pj, "counted_bytes")), 7.0 * (double)ws[0] / 8,
	       1e-6);
	json_decref(r);
}

/* A channel whose counter another agent crowds runs half the time even in its group: the
 * share check fails, naming the group and the share. */
static void test_crowded_group(void)
{
	char out[700], want[300];
	snprintf(out, sizeof(out), "%s/crowded.json", scratch);
	write_script(-1, 6, false);
	snprintf(want, sizeof(want), "memwall verify: amd_df counter group 2 of 2 (read pass, "
		 "time running / time enabled): multiplexed: counted %.1f %% of the pass", 50.0);
	json_t *r = T_VS_EXPECT(1, SIZE, out, NULL, NULL, T_LIST(want));
	if (!r)
		return;
	T_EQ_STR(t_vs_verdict(r, "read pass: running share"), "fail");
	T_NEAR(json_number_value(json_object_get(group_of(json_object_get(json_object_get(r,
		"passes"), "read"), 1), "running_share")), 0.5, 1e-12);
	T_NEAR(json_number_value(json_object_get(group_of(json_object_get(json_object_get(r,
		"passes"), "read"), 0), "running_share")), 1.0, 1e-12);
	json_decref(r);
}

/* The matrix's patterns, once per group: every cell counted whole and equal to what the
 * pattern moves. */
static void test_matrix(void)
{
	char out[700];
	snprintf(out, sizeof(out), "%s/matrix.json", scratch);
	write_script(-1, -1, true);
	json_t *r = T_VS_EXPECT(0, SIZE, out, "--matrix", NULL, NULL);
	if (!r)
		return;
	const json_t *pats = json_object_get(json_object_get(r, "matrix"), "patterns");
	T_EQ_INT(json_array_size(pats), 5);
	for (int p = 0; p < 5; p++) {
		const json_t *cells = json_object_get(json_array_get(pats, (size_t)p), "cells");
		T_EQ_INT(json_array_size(cells), 4);
		for (int k = 1; k <= 4; k++) {
			const json_t *t = json_object_get(json_array_get(cells, (size_t)k - 1),
							  "total");
			double e = (double)llround(pat[p].total * (double)ws[k]);
			T_NEAR(json_number_value(json_object_get(t, "expected_bytes")), e, 1e-6);
			T_NEAR(json_number_value(json_object_get(t, "counted_bytes")), e, 1e-6);
			T_EQ_STR(json_string_value(json_object_get(t, "verdict")), "pass");
		}
	}
	json_decref(r);
}

/* A two-channel part read through amd_df's eight channel events (a desktop Zen 3): the
 * topology (an EDAC tree written here: two populated channels) says only 2 of the 8 events
 * have memory, so the canary lands on two of them (ws / 2 each) and the others stay idle.
 * The instance and its sum are checked and pass; the per-group and per-channel shares, which
 * would assume memory on all eight, are recorded with why and not checked. */
static void test_two_channels(void)
{
	char out[700], root[600], cmd[1500];
	snprintf(out, sizeof(out), "%s/two.json", scratch);
	snprintf(root, sizeof(root), "%s/zen3-2ch", scratch);
	snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s'", t_data("sysfs/" ZEN3), root);
	T_EQ_INT(system(cmd), 0);
	t_put(root, "/devices/system/edac/mc/mc0/mc_name", "F19h\n");
	t_put(root, "/devices/system/edac/mc/mc0/dimm0/dimm_location", "channel 0 slot 0\n");
	t_put(root, "/devices/system/edac/mc/mc0/dimm1/dimm_location", "channel 1 slot 0\n");
	FILE *f = fopen(script, "w");
	T_ASSERT(f != NULL);
	if (!f)
		return;
	uint32_t type = t_pmu_type(ZEN3, "amd_df");
	fprintf(f, "pmu type=%u counters=4\n", type);
	for (unsigned c = 0; c < CHANNELS; c++) {
		struct t_vs_steps st;
		uint64_t per = c < 2 ? ws[0] / 2 / 64 : 0;
		t_vs_begin(&st);
		t_vs_target(&st, per, per);
		t_vs_rule(f, type, channel_config(c), "cpu=*", &st);
	}
	fclose(f);
	setenv("MEMWALL_SYSFS_ROOT", root, 1);
	struct t_output o = t_vs_verify(SIZE, out, NULL, NULL, NULL);
	T_OK(o, "verify");
	t_output_free(&o);
	char zen3[4200];
	snprintf(zen3, sizeof(zen3), "%s%s", t_data("sysfs/"), ZEN3);
	setenv("MEMWALL_SYSFS_ROOT", zen3, 1);
	json_t *r = t_vs_load(out);
	if (!r)
		return;
	T_EQ_STR(json_string_value(json_object_get(r, "verdict")), "pass");
	T_EQ_INT(json_integer_value(json_object_get(json_object_get(json_object_get(r,
		"topology"), "channels"), "populated")), 2);
	T_EQ_STR(t_vs_verdict(r, "read pass: amd_df"), "pass");
	T_EQ_STR(t_vs_verdict(r, "read pass: sum"), "pass");
	T_ASSERT(t_vs_check(r, "read pass: amd_df/dram_channel_data_controller_2") == NULL);
	T_ASSERT(t_vs_check(r, "read pass: amd_df counter group 2") == NULL);
	const json_t *pj = json_object_get(json_object_get(r, "passes"), "read");
	T_CONTAINS(json_string_value(json_object_get(group_of(pj, 1), "checked")),
		   "not checked: 2 channels populated");
	json_decref(r);
}

int main(void)
{
	t_vs_setup(scratch, sizeof(scratch), "verify-groups", script, sizeof(script));
	t_setenv_in("MEMWALL_CACHE_DIR", scratch, "cache");
	t_sim_env(ZEN3, script);
	ws[0] = t_vs_bytes(0.001);
	uint64_t unit = 6 * (uint64_t)sysconf(_SC_PAGESIZE), asked = (uint64_t)(0.001 * 1073741824.0);
	T_EQ_U64(ws[0] / CHANNELS / 64 * 64 * CHANNELS, ws[0]); /* whole counts per channel */
	for (int k = 1; k <= 4; k++) {
		ws[k] = ((asked << (k - 1)) + unit - 1) / unit * unit;
		for (int p = 0; p < 5; p++) {
			uint64_t b = (uint64_t)llround(pat[p].total * (double)ws[k]);
			T_EQ_U64(b / CHANNELS / 64 * 64 * CHANNELS, b);
		}
	}
	test_pass();
	test_all_at_once();
	test_silent_channel();
	test_crowded_group();
	test_matrix();
	test_two_channels();
	return t_done_rm(scratch, 1);
}
