/* tests/probes/test_dram_groups.c: counter groups of a DRAM backend (probes/dram.c:
 * prb_dram_groups, prb_dram_options.events, prb_dram_enable/disable, prb_dram_event_bytes,
 * prb_dram_sample_add), and the simulated PMU's counter limit ("pmu type=N counters=C",
 * probes/counter_sim.c), on the recorded zen3 and arrow-lake trees.
 *
 * amd_df opens 8 channel events on a PMU whose driver gives it 4 counters
 * (arch/x86/events/amd/uncore.c, NUM_COUNTERS_NB; probes/pmu/amd_df.c says so): opened
 * together the kernel rotates them, each runs 4/8 of its time and its count is extrapolated
 * x2; opened 4 at a time, each runs all of it. Every figure below is computed here from the
 * script this file writes: channel c steps 100 + 11c counts per read, 64 bytes each.
 */
#include <errno.h>
#include <math.h>
#include <unistd.h>

#include "probes.h"
#include "test.h"
#include "run.h"
#include "sim_tree.h"

#define ZEN3 "zen3"
#define AL "arrow-lake"

static char tmpdir[256], script[512];

/* Channel c's config: event 0x07 + 0x40 c in config:0-7,32-35, umask 0x38 in config:8-15
 * (the tree's format files; tests/probes/test_dram.c works the same out by hand). */
static uint64_t channel_config(unsigned c)
{
	uint64_t ev = 0x07 + 0x40 * c;
	return (ev & 0xff) | 0x38 << 8 | (ev >> 8) << 32;
}

static uint64_t channel_step(unsigned c)
{
	return 100 + 11 * (uint64_t)c;
}

/* The zen3 script: each channel's rule, and the data fabric's 4 counters when limit. */
static void write_zen3(bool limit)
{
	FILE *f = fopen(script, "w");
	T_ASSERT(f != NULL);
	if (!f)
		return;
	uint32_t type = t_pmu_type(ZEN3, "amd_df");
	if (limit)
		fprintf(f, "pmu type=%u counters=4\n", type);
	for (unsigned c = 0; c < 8; c++)
		fprintf(f, "perf type=%u config=0x%" PRIx64 " cpu=* start=0 step=%" PRIu64
			" ns_per_read=1000000\n", type, channel_config(c), channel_step(c));
	fclose(f);
	setenv("MEMWALL_SIM_SCRIPT", script, 1);
}

/* The status of amd_df, its counters, and the groups they make. */
static void test_groups(void)
{
	struct prb_system *sys = t_system_open(ZEN3);
	struct prb_dram_status st;
	unsigned masks[8];
	T_EQ_INT(prb_dram_probe(sys, NULL, &st), 0);
	T_EQ_STR(st.backend, "amd_df");
	/* the DF PMU's counters, as the kernel's NUM_COUNTERS_NB gives them before PerfMonV2 */
	T_EQ_INT(st.counters, 4);
	T_EQ_INT(st.instances[0].n_events, 8);
	/* 8 events on 4 counters: events 0-3, then 4-7 */
	T_EQ_INT(prb_dram_groups(&st, masks, 8), 2);
	T_EQ_U64(masks[0], 0x0f);
	T_EQ_U64(masks[1], 0xf0);
	T_EQ_INT(prb_dram_groups(&st, masks, 1), -ENOSPC);
	/* 3 counters: 3 + 3 + 2 */
	st.counters = 3;
	T_EQ_INT(prb_dram_groups(&st, masks, 8), 3);
	T_EQ_U64(masks[0], 0x07);
	T_EQ_U64(masks[1], 0x38);
	T_EQ_U64(masks[2], 0xc0);
	prb_system_close(sys);

	/* a backend that states no count, or whose events fit: one group of every event */
	sys = t_system_open(AL);
	T_EQ_INT(prb_dram_probe(sys, NULL, &st), 0);
	T_EQ_STR(st.backend, "intel_imc_free");
	T_EQ_INT(st.counters, 0);
	T_EQ_INT(prb_dram_groups(&st, masks, 8), 1);
	T_EQ_U64(masks[0], 0);
	st.counters = 2; /* two events each: they fit */
	T_EQ_INT(prb_dram_groups(&st, masks, 8), 1);
	T_EQ_U64(masks[0], 0);
	prb_system_close(sys);
}

/* One read after the open's: instance 0's share and total. */
static double read_share(struct prb_dram *d, struct prb_dram_sample *s)
{
	T_EQ_INT(prb_dram_read(d, s), 0);
	return prb_dram_instance_share(&s->inst[0]);
}

/* One read of d: the share of the interval since *prev (then *prev is this read). */
static double window_share(struct prb_dram *d, struct prb_dram_sample *prev)
{
	static struct prb_dram_sample cur, w;
	T_EQ_INT(prb_dram_read(d, &cur), 0);
	prb_dram_sample_delta(&cur, prev, &w);
	*prev = cur;
	return prb_dram_instance_share(&w.inst[0]);
}

/* The sim's counter limit: 8 enabled on 4 counters run half the time and are extrapolated
 * x2; 4 run all the time; a disabled group takes no counter. */
static void test_sim_limit(void)
{
	struct prb_system *sys = t_system_open(ZEN3);
	struct prb_dram_options opt = { .backend = "amd_df" };
	struct prb_dram_status st;
	struct prb_dram *all = NULL, *g0 = NULL, *g1 = NULL;
	struct prb_dram_sample *s = calloc(2, sizeof(*s));
	T_ASSERT(s != NULL);
	if (!s)
		return;

	/* every event: 8 enabled, share 4/8; each count is its step, extrapolated x2 */
	write_zen3(true);
	T_EQ_INT(prb_dram_open(&all, sys, &opt, &st), 0);
	T_EQ_INT(st.instances[0].n_events, 8);
	uint64_t want = 0;
	for (unsigned c = 0; c < 8; c++)
		want += channel_step(c) * 2 * 64;
	if (all) {
		T_NEAR(read_share(all, s), 0.5, 1e-12);
		T_ASSERT(s->reading_flags & PRB_READING_SCALED);
		T_EQ_U64(s->inst[0].total.bytes, want);
		T_EQ_INT(s->inst[0].total.state, PRB_MEASURED);
	}
	prb_dram_close(all);
	all = NULL;

	/* without the limit the same 8 run all the time: the limit is the script's */
	write_zen3(false);
	T_EQ_INT(prb_dram_open(&all, sys, &opt, &st), 0);
	if (all)
		T_NEAR(read_share(all, s), 1.0, 1e-12);
	prb_dram_close(all);
	all = NULL;

	/* events 4-7 alone: 4 enabled on 4 counters, counted whole */
	write_zen3(true);
	opt.events = 0xf0;
	T_EQ_INT(prb_dram_open(&g1, sys, &opt, &st), 0);
	T_EQ_INT(st.instances[0].n_events, 4);
	if (g1) {
		struct prb_dram_event_desc d[8];
		struct prb_bytes ev[8];
		T_EQ_INT(prb_dram_events(g1, 0, d, 8), 4);
		T_EQ_INT(prb_dram_event_bytes(g1, 0, ev, 8), 4);
		T_EQ_INT(ev[0].state, PRB_NOT_RUN); /* no read yet */
		char name[64];
		for (unsigned j = 0; j < 4; j++) {
			snprintf(name, sizeof(name), "dram_channel_data_controller_%u", 4 + j);
			T_EQ_STR(d[j].name, name);
			T_ASSERT(strstr(d[j].perf, "amd_df/config=0x") != NULL);
			T_EQ_U64(strtoull(d[j].perf + strlen("amd_df/config="), NULL, 16),
				 channel_config(4 + j));
		}
		T_NEAR(read_share(g1, s), 1.0, 1e-12);
		T_ASSERT(!(s->reading_flags & PRB_READING_SCALED));
		want = 0;
		T_EQ_INT(prb_dram_event_bytes(g1, 0, ev, 8), 4);
		for (unsigned j = 0; j < 4; j++) {
			T_EQ_INT(ev[j].state, PRB_MEASURED);
			T_EQ_U64(ev[j].bytes, channel_step(4 + j) * 64);
			want += channel_step(4 + j) * 64;
		}
		T_EQ_U64(s->inst[0].total.bytes, want);
		T_EQ_INT(prb_dram_event_bytes(g1, 0, ev, 3), -ENOSPC);
		T_EQ_INT(prb_dram_event_bytes(g1, 1, ev, 8), -EINVAL);
	}

	/* both groups open: while both are enabled, 8 share the 4 counters; with group 1
	 * disabled, group 0 runs alone and counts whole (each read is one interval of the sim's
	 * time, with the share of its moment: window_share takes that interval alone) */
	opt.events = 0x0f;
	T_EQ_INT(prb_dram_open(&g0, sys, &opt, &st), 0);
	if (g0 && g1) {
		struct prb_dram_sample *p0 = &s[0], *p1 = &s[1];
		T_EQ_INT(prb_dram_read(g0, p0), 0);
		T_EQ_INT(prb_dram_read(g1, p1), 0);
		T_NEAR(window_share(g0, p0), 0.5, 1e-12);
		T_EQ_INT(prb_dram_disable(g1), 0);
		T_NEAR(window_share(g0, p0), 1.0, 1e-12);
		T_EQ_INT(prb_dram_disable(g0), 0);
		T_EQ_INT(prb_dram_enable(g1), 0);
		T_NEAR(window_share(g1, p1), 1.0, 1e-12);
		T_EQ_INT(prb_dram_enable(g0), 0);
		T_NEAR(window_share(g1, p1), 0.5, 1e-12);
	}
	prb_dram_close(g0);
	prb_dram_close(g1);
	g0 = NULL;

	/* masks that are not a subset of the events, or select none */
	opt.events = 0x100;
	T_EQ_INT(prb_dram_open(&g0, sys, &opt, &st), -EINVAL);
	T_ASSERT(g0 == NULL);
	T_CONTAINS(st.reason, "names events past its last");
	T_ASSERT(!st.available);
	prb_system_close(sys);
	free(s);
}

/* A subset with none of a figure's events does not count that figure (not provided, never a
 * measured 0), and the sum of disjoint groups is the whole: arrow-lake, read and write apart. */
static void test_sample_add(void)
{
	struct prb_system *sys = t_system_open(AL);
	struct prb_dram_options opt = { .backend = "intel_imc_free" };
	struct prb_dram_status st;
	struct prb_dram *rd = NULL, *wr = NULL;
	struct prb_dram_sample *s = calloc(2, sizeof(*s));
	T_ASSERT(s != NULL);
	if (!s)
		return;
	FILE *f = fopen(script, "w");
	T_ASSERT(f != NULL);
	if (!f)
		return;
	/* data_read 0x20ff, data_write 0x30ff (test_dram.c), per instance its own steps */
	uint64_t steps[2][2] = { { 1000, 300 }, { 2000, 500 } };
	for (int i = 0; i < 2; i++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", i);
		uint32_t type = t_pmu_type(AL, pmu);
		fprintf(f, "perf type=%u config=0x20ff cpu=* start=0 step=%" PRIu64 "\n", type,
			steps[i][0]);
		fprintf(f, "perf type=%u config=0x30ff cpu=* start=0 step=%" PRIu64 "\n", type,
			steps[i][1]);
	}
	fclose(f);
	setenv("MEMWALL_SIM_SCRIPT", script, 1);
	double bpc = t_alias_bytes(AL, "uncore_imc_free_running_0", "data_read");
	T_NEAR(bpc, 64.0, 1e-9);
	opt.events = 0x1;
	T_EQ_INT(prb_dram_open(&rd, sys, &opt, &st), 0);
	opt.events = 0x2;
	T_EQ_INT(prb_dram_open(&wr, sys, &opt, &st), 0);
	if (rd && wr) {
		T_EQ_INT(prb_dram_read(rd, &s[0]), 0);
		T_EQ_INT(prb_dram_read(wr, &s[1]), 0);
		T_EQ_INT(s[0].inst[0].write.state, PRB_NOT_PROVIDED);
		T_EQ_INT(s[0].write.state, PRB_NOT_PROVIDED);
		T_EQ_INT(s[1].inst[1].read.state, PRB_NOT_PROVIDED);
		T_EQ_U64(s[0].inst[1].read.bytes, steps[1][0] * 64);
		T_EQ_U64(s[0].inst[1].total.bytes, steps[1][0] * 64);
		uint64_t ena = s[0].inst[0].time_enabled + s[1].inst[0].time_enabled;
		prb_dram_sample_add(&s[0], &s[1]);
		T_EQ_INT(s[0].read.state, PRB_MEASURED);
		T_EQ_INT(s[0].write.state, PRB_MEASURED);
		T_EQ_U64(s[0].read.bytes, (steps[0][0] + steps[1][0]) * 64);
		T_EQ_U64(s[0].write.bytes, (steps[0][1] + steps[1][1]) * 64);
		T_EQ_U64(s[0].total.bytes,
			 (steps[0][0] + steps[1][0] + steps[0][1] + steps[1][1]) * 64);
		T_EQ_U64(s[0].inst[1].total.bytes, (steps[1][0] + steps[1][1]) * 64);
		T_EQ_U64(s[0].inst[0].time_enabled, ena);
		T_NEAR(prb_dram_instance_share(&s[0].inst[0]), 1.0, 1e-12);
		/* a figure not counted on one side is not counted in the sum */
		s[1].inst[0].write = (struct prb_bytes){ 0, PRB_NOT_RUN };
		s[1].write = (struct prb_bytes){ 0, PRB_NOT_RUN };
		T_EQ_INT(prb_dram_read(rd, &s[0]), 0);
		prb_dram_sample_add(&s[0], &s[1]);
		T_EQ_INT(s[0].inst[0].write.state, PRB_NOT_RUN);
		T_EQ_U64(s[0].inst[0].write.bytes, 0);
		T_EQ_INT(s[0].write.state, PRB_NOT_RUN);
		T_EQ_INT(s[0].inst[1].write.state, PRB_MEASURED);
	}
	prb_dram_close(rd);
	prb_dram_close(wr);
	prb_system_close(sys);
	free(s);
}

/* A malformed "pmu" line fails the open, naming it. */
static void test_bad_pmu_line(void)
{
	static const char *const bad[] = { "pmu type=11\n", "pmu counters=4\n",
					   "pmu type=11 counters=0\n", "pmu type=11 counters=4 x=1\n" };
	struct prb_system *sys = t_system_open(ZEN3);
	struct prb_dram_options opt = { .backend = "amd_df" };
	struct prb_dram_status st;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct prb_dram *d = NULL;
		t_write_file(script, bad[i]);
		setenv("MEMWALL_SIM_SCRIPT", script, 1);
		T_ASSERT(prb_dram_open(&d, sys, &opt, &st) < 0);
		T_ASSERT(d == NULL);
		prb_dram_close(d);
	}
	prb_system_close(sys);
}

int main(void)
{
	t_tmpdir_scratch(tmpdir, sizeof(tmpdir), "groups");
	snprintf(script, sizeof(script), "%s/sim.script", tmpdir);
	setenv("MEMWALL_COUNTERS", "sim", 1);
	test_groups();
	test_sim_limit();
	test_sample_add();
	test_bad_pmu_line();
	unlink(script);
	rmdir(tmpdir);
	return t_done();
}
