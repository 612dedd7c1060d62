/* tests/probes/test_counter_sim.c: the DRAM read path of every backend, on the simulated PMU.
 *
 * This VM has no uncore PMUs, so the paths that turn raw counts into bytes (deltas against
 * the open, wrapping, multiplexing, counters that never run or stop reading, resctrl's
 * "Unavailable") run here on MEMWALL_COUNTERS=sim with a script per case (tests/data/sim/
 * README.md describes the format). Each case scripts known per-instance steps on a recorded
 * sysfs tree, and every figure of every read is checked against arithmetic done here: bytes
 * per count from the tree's .scale and .unit text (or the documented 64 bytes per CAS or
 * channel request), never from the code under test; times from the script's ns_per_read.
 *
 * Backends with more than one event per instance are read as one group per instance (one
 * PERF_FORMAT_GROUP read), unless the script says "nogroups" or the backend multiplexes
 * (amd_df: no_group). A group runs all or nothing: its times are its leader's (the first
 * event), and one failing member fails the whole read; the wants below follow that rule.
 */
#include <errno.h>
#include <math.h>
#include <unistd.h>

#include "probes/internal.h" /* by its folder: engine/ has internal.h files too */
#include "probes.h"
#include "test.h"
#include "sim_tree.h"

#define READS 4
#define NS_PER_READ 2500000ull /* written into every perf rule: 2.5 ms per read */

enum dir { RD, WR, TOT };

struct sim_event {
	uint32_t type;
	uint64_t config;
	int cpu;
	enum dir dir;
	double bytes_per_count;
	uint64_t start, step;
	unsigned bits;        /* 0: not given (64) */
	bool notrun;
	int fail_after;       /* -1: never */
	double scaled;        /* 0: not given */
	int config1;          /* -1: not given (the rule matches any config1) */
	bool solo;            /* the driver refuses a group with another hardware event */
};

struct sim_instance {
	int n;
	struct sim_event ev[8];
	const char *file;     /* resctrl: the path suffix, NULL for perf */
	uint64_t start, step;
	int unavailable_after; /* -1: never */
};

struct sim_case {
	const char *name;
	const char *tree, *backend;
	unsigned provides;
	bool nogroups;  /* the script says "nogroups": every instance event by event */
	bool no_group;  /* the backend multiplexes (amd_df.c sets no_group): never grouped */
	int n;
	struct sim_instance in[128];
};

static char tmpdir[256];

/* ---- what the tree says, read here (not through the probes) */

/* ---- building cases */

static struct sim_case the_case;

static struct sim_case *case_new(const char *name, const char *tree, const char *backend,
				 unsigned provides)
{
	struct sim_case *c = &the_case;
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->tree = tree;
	c->backend = backend;
	c->provides = provides;
	return c;
}

static struct sim_instance *inst_new(struct sim_case *c)
{
	struct sim_instance *in = &c->in[c->n++];
	in->unavailable_after = -1;
	return in;
}

/* Steps differ per instance and per event, so that counts landing on the wrong instance or
 * the wrong direction show. */
static void add_event(struct sim_case *c, struct sim_instance *in, uint32_t type, uint64_t config,
		      int cpu, enum dir dir, double bytes_per_count)
{
	struct sim_event *e = &in->ev[in->n];
	*e = (struct sim_event){ .type = type, .config = config, .cpu = cpu, .dir = dir,
				 .bytes_per_count = bytes_per_count, .fail_after = -1,
				 .config1 = -1, .start = 1000u * (unsigned)c->n,
				 .step = 1000u * (unsigned)c->n + 10u * (unsigned)in->n + 1 };
	in->n++;
}

static struct sim_case *arrow_lake(void)
{
	struct sim_case *c = case_new("arrow-lake", "arrow-lake", "intel_imc_free",
				      PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL);
	for (int p = 0; p < 2; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", p);
		struct sim_instance *in = inst_new(c);
		/* data_read event=0xff,umask=0x20 -> 0x20ff; data_write umask=0x30 -> 0x30ff */
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x20ff, 0, RD,
			  t_alias_bytes(c->tree, pmu, "data_read"));
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x30ff, 0, WR,
			  t_alias_bytes(c->tree, pmu, "data_write"));
	}
	return c;
}

static struct sim_case *sapphire_rapids(void)
{
	struct sim_case *c = case_new("sapphire-rapids", "sapphire-rapids", "intel_imc_cas",
				      PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL);
	static const int cpus[] = { 0, 56 }; /* the cpumask: one CPU per socket */
	for (int p = 0; p < 16; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_%d", p);
		for (int s = 0; s < 2; s++) {
			struct sim_instance *in = inst_new(c);
			/* cas_count_read event=0x05,umask=0xcf -> 0xcf05; write umask=0xf0 */
			add_event(c, in, t_pmu_type(c->tree, pmu), 0xcf05, cpus[s], RD,
				  t_alias_bytes(c->tree, pmu, "cas_count_read"));
			add_event(c, in, t_pmu_type(c->tree, pmu), 0xf005, cpus[s], WR,
				  t_alias_bytes(c->tree, pmu, "cas_count_write"));
		}
	}
	return c;
}

static struct sim_case *granite_rapids(void)
{
	struct sim_case *c = case_new("granite-rapids", "granite-rapids", "intel_imc_cas",
				      PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL);
	for (int p = 0; p < 12; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_%d", p);
		struct sim_instance *in = inst_new(c);
		uint32_t type = t_pmu_type(c->tree, pmu);
		/* both schedulers: sch0 event 0x05, sch1 event 0x06, umask 0xcf read, 0xf0 write */
		static const struct {
			uint64_t config;
			enum dir dir;
			const char *alias;
		} evs[] = { { 0xcf05, RD, "cas_count_read_sch0" },
			    { 0xf005, WR, "cas_count_write_sch0" },
			    { 0xcf06, RD, "cas_count_read_sch1" },
			    { 0xf006, WR, "cas_count_write_sch1" } };
		for (int j = 0; j < 4; j++)
			add_event(c, in, type, evs[j].config, 0, evs[j].dir,
				  t_alias_bytes(c->tree, pmu, evs[j].alias));
	}
	return c;
}

static struct sim_case *zen4(void)
{
	struct sim_case *c = case_new("amd-epyc-zen4", "amd-epyc-zen4", "amd_umc",
				      PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL);
	for (int p = 0; p < 12; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "amd_umc_%d", p);
		struct sim_instance *in = inst_new(c);
		/* umc_cas_cmd.rd event=0x0a,rdwrmask=1 -> 0x10a; .wr -> 0x20a; a CAS moves one
		 * 64-byte line (amd_umc.c's comment; the PMU has no .scale) */
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x10a, 0, RD, 64.0);
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x20a, 0, WR, 64.0);
	}
	return c;
}

static struct sim_case *zen3(void)
{
	struct sim_case *c = case_new("zen3", "zen3", "amd_df", PRB_DRAM_TOTAL);
	c->no_group = true;
	struct sim_instance *in = inst_new(c);
	for (unsigned ch = 0; ch < 8; ch++) {
		/* event 0x07 + 0x40 ch in config:0-7,32-35; umask 0x38 in config:8-15; one
		 * 64-byte request per count */
		uint64_t ev = 0x07 + 0x40 * ch;
		uint64_t config = (ev & 0xff) | 0x38 << 8 | (ev >> 8) << 32;
		add_event(c, in, t_pmu_type(c->tree, "amd_df"), config, 0, TOT, 64.0);
	}
	return c;
}

static struct sim_case *resctrl(void)
{
	struct sim_case *c = case_new("resctrl", "sapphire-rapids", "resctrl", PRB_DRAM_TOTAL);
	static const char *const files[] = { "mon_L3_00/mbm_total_bytes",
					     "mon_L3_01/mbm_total_bytes" };
	for (int i = 0; i < 2; i++) {
		struct sim_instance *in = inst_new(c);
		in->file = files[i];
		in->start = 123456789u * (uint64_t)(i + 1);
		in->step = 4096u * (uint64_t)(i + 1) + 64;
	}
	return c;
}

/* The eight DMC-620 channels of tests/data/sysfs/ampere-altra, in the order the probes sort
 * them (the hex suffix is the channel's base address >> 12). */
static const char *const altra_channels[] = { "10008c000", "10008c400", "10008c800",
					      "10008cc00", "10008d000", "10008d400",
					      "10008d800", "10008dc00" };

static struct sim_case *ampere_altra(void)
{
	struct sim_case *c = case_new("ampere-altra", "ampere-altra", "arm_dmc620",
				      PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL);
	for (int p = 0; p < 8; p++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "arm_dmc620_%s", altra_channels[p]);
		struct sim_instance *in = inst_new(c);
		/* clkdiv2_rdwr with mask=1 (config:0-44) -> config 0x1; the direction is match
		 * (config1) 0 or 1; one count is one 64-byte burst (arm_dmc620.c) */
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x1, 0, RD, 64.0);
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x1, 0, WR, 64.0);
		/* each direction its own rule (config1 = match: 0 read, 1 write) and steps, so
		 * a direction read from the wrong event shows; "solo": the driver refuses a
		 * group with a second hardware event, so a grouped open would fail the case */
		in->ev[0].config1 = 0;
		in->ev[1].config1 = 1;
		in->ev[0].solo = in->ev[1].solo = true;
	}
	return c;
}

static struct sim_case *graviton3(void)
{
	struct sim_case *c = case_new("graviton3", "graviton3", "arm_cmn", PRB_DRAM_TOTAL);
	struct sim_instance *in = inst_new(c);
	/* hnf_mc_reqs = type=0x5 (config:0-15), eventid=0xd (config:16-26) -> 0xd0005; one
	 * request counted as one 64-byte line (arm_cmn.c) */
	add_event(c, in, t_pmu_type(c->tree, "arm_cmn_0"), 0x5 | 0xd << 16, 0, TOT, 64.0);
	return c;
}

static struct sim_case *nvidia_grace(void)
{
	struct sim_case *c = case_new("nvidia-grace", "nvidia-grace", "nvidia_scf",
				      PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL);
	static const int cpus[] = { 0, 72 }; /* each socket's cpumask */
	for (int s = 0; s < 2; s++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "nvidia_scf_pmu_%d", s);
		struct sim_instance *in = inst_new(c);
		/* cmem_rd_data event=0x1a5 counts 32-byte beats; cmem_wr_total_bytes event=0x1db
		 * counts bytes (nvidia_scf.c) */
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x1a5, cpus[s], RD, 32.0);
		add_event(c, in, t_pmu_type(c->tree, pmu), 0x1db, cpus[s], WR, 1.0);
	}
	return c;
}

/* ---- the script */

static const char *write_script(const struct sim_case *c)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/%s.script", tmpdir, c->name);
	FILE *f = fopen(path, "w");
	T_ASSERT(f != NULL);
	if (!f)
		return path;
	fprintf(f, "# %s: written by tests/probes/test_counter_sim.c\n", c->name);
	if (c->nogroups)
		fprintf(f, "nogroups\n");
	for (int i = 0; i < c->n; i++) {
		const struct sim_instance *in = &c->in[i];
		if (in->file) {
			fprintf(f, "file path=%s start=%" PRIu64 " step=%" PRIu64, in->file,
				in->start, in->step);
			if (in->unavailable_after >= 0)
				fprintf(f, " unavailable_after=%d", in->unavailable_after);
			fputc('\n', f);
			continue;
		}
		for (int j = 0; j < in->n; j++) {
			const struct sim_event *e = &in->ev[j];
			fprintf(f, "perf type=%u config=0x%" PRIx64 " cpu=%d start=%" PRIu64
				" step=%" PRIu64 " ns_per_read=%llu", e->type, e->config, e->cpu,
				e->start, e->step, NS_PER_READ);
			if (e->bits)
				fprintf(f, " bits=%u", e->bits);
			if (e->notrun)
				fprintf(f, " notrun");
			if (e->fail_after >= 0)
				fprintf(f, " fail_after=%d", e->fail_after);
			if (e->scaled > 0)
				fprintf(f, " scaled=%g", e->scaled);
			if (e->config1 >= 0)
				fprintf(f, " config1=%d", e->config1);
			if (e->solo)
				fprintf(f, " solo");
			fputc('\n', f);
		}
	}
	fclose(f);
	return path;
}

/* ---- what each read must give, computed here */

struct want {
	struct prb_bytes read, write, total;
	int rc;
};

static void fold(struct prb_bytes *fig, enum prb_state state, uint64_t bytes)
{
	if (fig->state != PRB_MEASURED)
		return;
	if (state != PRB_MEASURED)
		*fig = (struct prb_bytes){ 0, state };
	else
		fig->bytes += bytes;
}

/* Instance in after its k-th prb_dram_read (k >= 1). */
static struct want want_instance(const struct sim_case *c, const struct sim_instance *in, int k)
{
	struct want w = { { 0, PRB_MEASURED }, { 0, PRB_MEASURED }, { 0, PRB_MEASURED }, 0 };
	if (in->file) {
		if (in->unavailable_after >= 0 && k > in->unavailable_after) {
			fold(&w.total, PRB_READ_FAILED, 0);
			w.rc = -EIO;
		} else {
			fold(&w.total, PRB_MEASURED, (uint64_t)k * in->step);
		}
	}
	/* a group: the leader's times for every member, and one failing member fails all */
	bool grouped = !c->nogroups && !c->no_group && !in->file && in->n > 1;
	bool group_failed = false;
	for (int j = 0; grouped && j < in->n; j++)
		group_failed |= in->ev[j].fail_after >= 0 && k > in->ev[j].fail_after;
	for (int j = 0; !in->file && j < in->n; j++) {
		const struct sim_event *e = &in->ev[j];
		const struct sim_event *t = grouped ? &in->ev[0] : e; /* whose times */
		enum prb_state st = PRB_MEASURED;
		/* k steps since the open's read; a multiplexed counter running a fraction f of
		 * the time is extrapolated by 1/f (perf's enabled/running) */
		double count = (double)k * (double)e->step / (t->scaled > 0 ? t->scaled : 1.0);
		uint64_t bytes = (uint64_t)llround(count * e->bytes_per_count);
		if (grouped ? group_failed : e->fail_after >= 0 && k > e->fail_after) {
			st = PRB_READ_FAILED;
			w.rc = -EIO;
		} else if (t->notrun) {
			st = PRB_NOT_RUN;
		}
		if (e->dir == RD)
			fold(&w.read, st, bytes);
		if (e->dir == WR)
			fold(&w.write, st, bytes);
		fold(&w.total, st, bytes);
	}
	if (!(c->provides & PRB_DRAM_READ))
		w.read = (struct prb_bytes){ 0, PRB_NOT_PROVIDED };
	if (!(c->provides & PRB_DRAM_WRITE))
		w.write = (struct prb_bytes){ 0, PRB_NOT_PROVIDED };
	return w;
}

static void check_bytes(const char *what, int i, int k, const struct prb_bytes *got,
			const struct prb_bytes *want)
{
	t_checks++;
	if (got->state != want->state || got->bytes != want->bytes)
		T_FAIL_AT(__FILE__, __LINE__, "%s instance %d read %d: got %" PRIu64 " %s, want %"
			  PRIu64 " %s", what, i, k, got->bytes, prb_state_name(got->state),
			  want->bytes, prb_state_name(want->state));
}

/* The delta of two wanted figures: measured only when both are. */
static struct prb_bytes want_delta(const struct prb_bytes *a, const struct prb_bytes *b)
{
	if (a->state != PRB_MEASURED)
		return (struct prb_bytes){ 0, a->state };
	if (b->state != PRB_MEASURED)
		return (struct prb_bytes){ 0, b->state };
	return (struct prb_bytes){ a->bytes - b->bytes, PRB_MEASURED };
}

static struct prb_dram_sample samples[READS + 1], delta;
static struct want wants[READS + 1][128], want_sum[READS + 1];

/* Opens c's backend on its tree under its script, reads READS samples and checks every
 * figure, the sums, the return codes and the per-read deltas. */
static void run_case(const struct sim_case *c)
{
	struct prb_system *sys = NULL;
	struct prb_error err = { 0 };
	struct prb_dram_options opt = { .backend = c->backend };
	struct prb_dram_status st;
	struct prb_dram *d = NULL;
	char root[8192];

	setenv("MEMWALL_SIM_SCRIPT", write_script(c), 1);
	snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), c->tree);
	T_EQ_INT(prb_system_open(&sys, root, &err), 0);
	int rc = prb_dram_open(&d, sys, &opt, &st);
	T_EQ_INT(rc, 0);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", c->name, st.reason);
		prb_system_close(sys);
		return;
	}
	T_EQ_STR(st.backend, c->backend);
	T_EQ_INT(st.n_instances, c->n);
	T_EQ_INT(st.provides, c->provides);
	T_EQ_INT(!!(st.flags & PRB_DRAM_TOTAL_ONLY), !(c->provides & PRB_DRAM_READ));
	for (int k = 1; k <= READS; k++) {
		struct prb_dram_sample *s = &samples[k];
		struct want *sum = &want_sum[k];
		*sum = (struct want){ { 0, PRB_MEASURED }, { 0, PRB_MEASURED },
				      { 0, PRB_MEASURED }, 0 };
		for (int i = 0; i < c->n; i++) {
			struct want w = want_instance(c, &c->in[i], k);
			wants[k][i] = w;
			/* a sum takes the first instance's state that is not measured */
			fold(&sum->read, w.read.state, w.read.bytes);
			fold(&sum->write, w.write.state, w.write.bytes);
			fold(&sum->total, w.total.state, w.total.bytes);
			if (w.rc)
				sum->rc = w.rc;
		}
		T_EQ_INT(prb_dram_read(d, s), sum->rc);
		T_EQ_INT(s->n_instances, c->n);
		for (int i = 0; i < c->n && i < s->n_instances; i++) {
			check_bytes("read", i, k, &s->inst[i].read, &wants[k][i].read);
			check_bytes("write", i, k, &s->inst[i].write, &wants[k][i].write);
			check_bytes("total", i, k, &s->inst[i].total, &wants[k][i].total);
		}
		check_bytes("sum read", -1, k, &s->read, &sum->read);
		check_bytes("sum write", -1, k, &s->write, &sum->write);
		check_bytes("sum total", -1, k, &s->total, &sum->total);
		/* perf instances: k reads of the script's ns_per_read since open (files: the
		 * clock) */
		if (!c->in[0].file && wants[k][0].rc == 0)
			T_EQ_U64(s->inst[0].time_enabled, k * NS_PER_READ);
		if (k == 1)
			continue;
		/* per read: what a token's figure would be */
		prb_dram_sample_delta(s, &samples[k - 1], &delta);
		T_EQ_INT(delta.n_instances, c->n);
		for (int i = 0; i < c->n; i++) {
			struct prb_bytes w = want_delta(&wants[k][i].total, &wants[k - 1][i].total);
			check_bytes("delta total", i, k, &delta.inst[i].total, &w);
			w = want_delta(&wants[k][i].read, &wants[k - 1][i].read);
			check_bytes("delta read", i, k, &delta.inst[i].read, &w);
		}
		struct prb_bytes w = want_delta(&sum->total, &want_sum[k - 1].total);
		check_bytes("delta sum total", -1, k, &delta.total, &w);
		w = want_delta(&sum->write, &want_sum[k - 1].write);
		check_bytes("delta sum write", -1, k, &delta.write, &w);
		if (!c->in[0].file && wants[k][0].rc == 0 && wants[k - 1][0].rc == 0)
			T_EQ_U64(delta.inst[0].time_enabled, NS_PER_READ);
	}
	prb_dram_close(d);
	prb_system_close(sys);
}

/* ---- the cases */

static void test_every_backend(void)
{
	struct sim_case *(*const builders[])(void) = { arrow_lake, sapphire_rapids, granite_rapids,
						       zen4, zen3, resctrl, ampere_altra,
						       graviton3, nvidia_grace };
	for (size_t b = 0; b < sizeof(builders) / sizeof(builders[0]); b++) {
		const struct sim_case *c = builders[b]();
		run_case(c);
		/* every figure measured on every read; total-only backends have no split */
		bool split = c->provides & PRB_DRAM_READ;
		T_EQ_INT(samples[READS].total.state, PRB_MEASURED);
		T_EQ_INT(samples[READS].read.state, split ? PRB_MEASURED : PRB_NOT_PROVIDED);
		T_EQ_INT(samples[READS].write.state, split ? PRB_MEASURED : PRB_NOT_PROVIDED);
		T_ASSERT(samples[READS].total.bytes > 0);
	}
}

static void test_not_run(void)
{
	/* read event by event: controller 1's write counter is never scheduled: its write and
	 * total are not-run, and so are the sums over both controllers; reads are still
	 * measured */
	struct sim_case *c = arrow_lake();
	c->nogroups = true;
	c->in[1].ev[1].notrun = true;
	run_case(c);
	const struct prb_dram_sample *s = &samples[READS];
	T_EQ_INT(s->inst[1].write.state, PRB_NOT_RUN);
	T_EQ_INT(s->inst[1].total.state, PRB_NOT_RUN);
	T_EQ_U64(s->inst[1].total.bytes, 0);
	T_EQ_INT(s->inst[1].read.state, PRB_MEASURED);
	T_EQ_INT(s->write.state, PRB_NOT_RUN);
	T_EQ_INT(s->total.state, PRB_NOT_RUN);
	T_EQ_INT(s->read.state, PRB_MEASURED);
	T_ASSERT(s->inst[1].reading_flags & PRB_READING_NOT_COUNTED);

	/* with scaling forbidden, a counter that did not run is refused outright */
	struct prb_system *sys = NULL;
	struct prb_error err = { 0 };
	struct prb_dram_options opt = { .backend = "intel_imc_free", .forbid_scaling = true };
	struct prb_dram_status st;
	struct prb_dram *d = NULL;
	char root[8192];
	snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), c->tree);
	T_EQ_INT(prb_system_open(&sys, root, &err), 0);
	T_EQ_INT(prb_dram_open(&d, sys, &opt, &st), 0);
	if (d)
		T_EQ_INT(prb_dram_read(d, &samples[0]), -ERANGE);
	prb_dram_close(d);
	prb_system_close(sys);
}

static void test_wrap(void)
{
	/* controller 0's read counter passes 2^64 and controller 1's, 48 bits wide, passes 2^48
	 * between reads: bytes since open keep growing by one step per read */
	struct sim_case *c = arrow_lake();
	c->in[0].ev[0].start = UINT64_MAX - 2500;
	c->in[0].ev[0].step = 1000;
	c->in[1].ev[0].start = (1ull << 48) - 2500;
	c->in[1].ev[0].step = 1000;
	c->in[1].ev[0].bits = 48;
	c->in[1].ev[1].start = (1ull << 48) - 1;
	c->in[1].ev[1].bits = 48;
	run_case(c);
	T_EQ_U64(samples[READS].inst[0].read.bytes, READS * 1000ull * 64);
	T_EQ_U64(samples[READS].inst[1].read.bytes, READS * 1000ull * 64);
	T_EQ_INT(samples[READS].read.state, PRB_MEASURED);
}

static void test_fail_mid_run(void)
{
	/* read event by event: controller 2 on socket 1 stops reading after its second read:
	 * from the third on its read and total are read-failed, prb_dram_read says -EIO, the
	 * sums are not measured, and every other instance (and its own write counter) is still
	 * measured */
	struct sim_case *c = sapphire_rapids();
	c->nogroups = true;
	c->in[5].ev[0].fail_after = 2;
	run_case(c);
	const struct prb_dram_sample *s = &samples[READS];
	T_EQ_INT(samples[2].inst[5].read.state, PRB_MEASURED);
	T_EQ_INT(samples[3].inst[5].read.state, PRB_READ_FAILED);
	T_EQ_INT(s->inst[5].read.state, PRB_READ_FAILED);
	T_EQ_INT(s->inst[5].total.state, PRB_READ_FAILED);
	T_EQ_INT(s->inst[5].write.state, PRB_MEASURED);
	T_EQ_INT(s->inst[4].read.state, PRB_MEASURED);
	T_EQ_INT(s->inst[6].total.state, PRB_MEASURED);
	T_EQ_INT(s->read.state, PRB_READ_FAILED);
	T_EQ_INT(s->total.state, PRB_READ_FAILED);
	T_EQ_INT(s->write.state, PRB_MEASURED);
}

/* The grouped path is the one taken: a group is scheduled all or nothing, so a leader that
 * never runs takes its members with it (their times are the group's), and one member that
 * fails fails the group's one read. Read event by event, the same scripts leave the other
 * counter measured. The figures of every read are checked by run_case as well, with steps
 * that differ per event: a group read that put the members' values out of the order they
 * were opened in would swap reads and writes there. */
static void test_grouped(void)
{
	for (int nogroups = 0; nogroups < 2; nogroups++) {
		struct sim_case *c = arrow_lake();
		c->nogroups = nogroups;
		c->in[1].ev[0].notrun = true; /* the leader: data_read */
		run_case(c);
		const struct prb_dram_sample *s = &samples[READS];
		T_EQ_INT(s->inst[1].read.state, PRB_NOT_RUN);
		T_EQ_INT(s->inst[1].write.state, nogroups ? PRB_MEASURED : PRB_NOT_RUN);
		T_EQ_INT(s->inst[0].write.state, PRB_MEASURED);

		c = sapphire_rapids();
		c->nogroups = nogroups;
		c->in[5].ev[1].fail_after = 2; /* a member: cas_count_write */
		run_case(c);
		s = &samples[READS];
		T_EQ_INT(s->inst[5].write.state, PRB_READ_FAILED);
		T_EQ_INT(s->inst[5].read.state, nogroups ? PRB_MEASURED : PRB_READ_FAILED);
		T_EQ_INT(s->inst[4].read.state, PRB_MEASURED);
	}
}

/* The sim's group read itself, laid out as perf_event_open(2)'s read_format says: { nr,
 * time_enabled, time_running, { value, id } x nr }, the leader first and the members in the
 * order they were opened; a buffer too small is refused; "nogroups" refuses members. */
static void test_group_layout(void)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/layout.script", tmpdir);
	FILE *f = fopen(path, "w");
	T_ASSERT(f != NULL);
	if (!f)
		return;
	/* three events of one made-up PMU type; the times are the leader's: 3 ms per read */
	fprintf(f, "perf type=99 config=1 cpu=* start=10 step=5 ns_per_read=3000000 scaled=0.5\n"
		   "perf type=99 config=2 cpu=* start=200 steps=7,9 ns_per_read=3000000\n"
		   "perf type=99 config=3 cpu=* start=3000 step=11 ns_per_read=3000000\n");
	fclose(f);
	setenv("MEMWALL_SIM_SCRIPT", path, 1);
	struct counter *c[3] = { NULL };
	struct perf_event_attr a;
	uint64_t buf[16];
	for (int j = 0; j < 3; j++) {
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = 99;
		a.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
				PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
		/* opened in the order 1, 3, 2: the read gives that order, not the configs' */
		a.config = j == 0 ? 1 : j == 1 ? 3 : 2;
		int rc = j ? prb_counter_open_member(&c[j], &a, -1, 0, c[0]) :
			     prb_counter_open(&c[0], &a, -1, 0);
		T_EQ_INT(rc, 0);
		if (rc)
			goto out;
	}
	const struct counter_ops *ops = prb_counter_ops_get();
	T_ASSERT(ops->read_group != NULL);
	for (uint64_t k = 0; k < 3; k++) {
		T_EQ_INT(ops->read_group(c[0], buf, 16), 0);
		T_EQ_U64(buf[0], 3);                        /* nr */
		T_EQ_U64(buf[1], (k + 1) * 3000000);        /* time_enabled */
		T_EQ_U64(buf[2], (k + 1) * 3000000 / 2);    /* time_running: scaled=0.5 */
		T_EQ_U64(buf[3], 10 + 5 * k);               /* config 1, the leader */
		T_EQ_U64(buf[5], 3000 + 11 * k);            /* config 3, opened second */
		T_EQ_U64(buf[7], 200 + (k > 0 ? 7 : 0) + (k > 1 ? 9 : 0)); /* steps=7,9 */
		T_ASSERT(buf[4] != buf[6] && buf[6] != buf[8] && buf[4] != buf[8]); /* ids */
	}
	T_EQ_INT(ops->read_group(c[0], buf, 3 + 2 * 3 - 1), -ENOSPC);
	/* a member's rule cannot have times of its own: the group's are the leader's */
	f = fopen(path, "a");
	if (f) {
		fprintf(f, "perf type=99 config=4 cpu=* start=0 step=1 notrun\n");
		fclose(f);
	}
	struct counter *m = NULL;
	a.config = 4;
	T_EQ_INT(prb_counter_open_member(&m, &a, -1, 0, c[0]), -EINVAL);
	f = fopen(path, "a");
	if (f) {
		fprintf(f, "nogroups\n");
		fclose(f);
	}
	a.config = 3;
	T_EQ_INT(prb_counter_open_member(&m, &a, -1, 0, c[0]), -EOPNOTSUPP);
out:
	for (int j = 2; j >= 0; j--)
		if (c[j])
			prb_counter_ops_get()->close(c[j]);
	unlink(path);
}

/* A backend with no_group (amd_df: 8 channel events on 4 counters) reads event by event even
 * where the layer has groups: only the channel whose counter was multiplexed is extrapolated.
 * Read as a group, the leader's times would scale all eight and the total would differ. */
static void test_no_group(void)
{
	struct sim_case *c = zen3();
	c->in[0].ev[0].scaled = 0.5;
	run_case(c);
	T_ASSERT(samples[READS].reading_flags & PRB_READING_SCALED);
	T_EQ_INT(samples[READS].total.state, PRB_MEASURED);
}

static void test_scaled(void)
{
	/* the data fabric's 8 channel events share 4 counters: each runs half the time, and the
	 * count is extrapolated by enabled/running = 2, flagged as scaled */
	struct sim_case *c = zen3();
	for (int j = 0; j < 8; j++)
		c->in[0].ev[j].scaled = 0.5;
	run_case(c);
	T_ASSERT(samples[READS].reading_flags & PRB_READING_SCALED);
	T_EQ_INT(samples[READS].total.state, PRB_MEASURED);
	T_EQ_INT(samples[READS].read.state, PRB_NOT_PROVIDED);
}

static void test_resctrl_unavailable(void)
{
	/* domain 1 reads "Unavailable" after its second read */
	struct sim_case *c = resctrl();
	c->in[1].unavailable_after = 2;
	run_case(c);
	const struct prb_dram_sample *s = &samples[READS];
	T_EQ_INT(s->inst[1].total.state, PRB_READ_FAILED);
	T_EQ_INT(s->inst[0].total.state, PRB_MEASURED);
	T_EQ_INT(s->total.state, PRB_READ_FAILED);
	T_EQ_INT(s->read.state, PRB_NOT_PROVIDED);
}

/* The real file path, not the sim's: a resctrl tree made here whose counter file is
 * rewritten between reads, including the kernel's "Unavailable" and "Error". */
static void test_resctrl_files(void)
{
	static const char *const dirs[] = { "",
					    "/bus",
					    "/bus/event_source",
					    "/bus/event_source/devices",
					    "/fs",
					    "/fs/resctrl",
					    "/fs/resctrl/mon_data",
					    "/fs/resctrl/mon_data/mon_L3_00" };
	char root[512], path[1024];
	snprintf(root, sizeof(root), "%s/tree", tmpdir);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
		mkdir(path, 0700);
	}
	char file[1024];
	snprintf(file, sizeof(file), "%s/fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", root);
	t_write_text(file, "1000\n");
	/* a script that names no file: files pass through to the real reader */
	setenv("MEMWALL_SIM_SCRIPT", "/dev/null", 1);

	struct prb_system *sys = NULL;
	struct prb_error err = { 0 };
	struct prb_dram_options opt = { .backend = "resctrl" };
	struct prb_dram_status st;
	struct prb_dram *d = NULL;
	struct prb_dram_sample *s = &samples[0];
	T_EQ_INT(prb_system_open(&sys, root, &err), 0);
	T_EQ_INT(prb_dram_open(&d, sys, &opt, &st), 0);
	if (d) {
		t_write_text(file, "5096\n");
		T_EQ_INT(prb_dram_read(d, s), 0);
		T_EQ_INT(s->total.state, PRB_MEASURED);
		T_EQ_U64(s->total.bytes, 4096);
		t_write_text(file, "Unavailable\n");
		T_EQ_INT(prb_dram_read(d, s), -EIO);
		T_EQ_INT(s->inst[0].total.state, PRB_READ_FAILED);
		T_EQ_INT(s->total.state, PRB_READ_FAILED);
		T_EQ_U64(s->total.bytes, 0);
		t_write_text(file, "Error\n");
		T_EQ_INT(prb_dram_read(d, s), -EIO);
		T_EQ_INT(s->total.state, PRB_READ_FAILED);
		t_write_text(file, "9192\n");
		T_EQ_INT(prb_dram_read(d, &samples[1]), 0);
		T_EQ_U64(samples[1].total.bytes, 8192);
		/* a token between the failed read and this one has no figure, though both ends
		 * of the counter are numbers again */
		prb_dram_sample_delta(&samples[1], s, &delta);
		T_EQ_INT(delta.total.state, PRB_READ_FAILED);
		T_EQ_INT(delta.inst[0].total.state, PRB_READ_FAILED);
		T_EQ_U64(delta.total.bytes, 0);
		t_write_text(file, "10192\n");
		T_EQ_INT(prb_dram_read(d, &samples[2]), 0);
		prb_dram_sample_delta(&samples[2], &samples[1], &delta);
		T_EQ_INT(delta.total.state, PRB_MEASURED);
		T_EQ_U64(delta.total.bytes, 1000);
		T_EQ_INT(delta.read.state, PRB_NOT_PROVIDED);
		prb_dram_close(d);
	}
	/* no value at open: nothing to count from, so the open fails and says why */
	t_write_text(file, "Unavailable\n");
	d = NULL;
	T_ASSERT(prb_dram_open(&d, sys, &opt, &st) < 0);
	T_ASSERT(d == NULL);
	T_CONTAINS(st.reason, "Unavailable");
	prb_system_close(sys);

	unlink(file);
	for (size_t i = sizeof(dirs) / sizeof(dirs[0]); i-- > 0;) {
		snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
		rmdir(path);
	}
}

/* A broken script fails the open: a test that meant to script counters never silently runs
 * on whatever the syscall layer finds. */
static void test_bad_script(void)
{
	char path[512], root[8192];
	struct prb_system *sys = NULL;
	struct prb_error err = { 0 };
	struct prb_dram_status st;
	struct prb_dram *d = NULL;
	snprintf(path, sizeof(path), "%s/bad.script", tmpdir);
	t_write_text(path, "# a typo in a key\nperf type=24 config=0x20ff cpu=* strat=0 step=1\n");
	setenv("MEMWALL_SIM_SCRIPT", path, 1);
	snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), "arrow-lake");
	T_EQ_INT(prb_system_open(&sys, root, &err), 0);
	T_EQ_INT(prb_dram_open(&d, sys, NULL, &st), -EINVAL);
	T_ASSERT(d == NULL);
	T_ASSERT(!st.available);
	prb_system_close(sys);
	unlink(path);
	setenv("MEMWALL_SIM_SCRIPT", "/dev/null", 1);
}

static void test_names(void)
{
	T_EQ_STR(prb_state_name(PRB_MEASURED), "measured");
	T_EQ_STR(prb_state_name(PRB_NOT_RUN), "not-run");
	T_EQ_STR(prb_state_name(PRB_READ_FAILED), "read-failed");
	T_EQ_STR(prb_state_name(PRB_NOT_PROVIDED), "not-provided");
	T_CONTAINS(prb_state_reason(PRB_NOT_PROVIDED), "read/write split");
	T_EQ_STR(prb_counter_backend(), "sim");
}

/* Opens task-clock in a set, runs a little and reads it: 0, or the open's errno. */
static int task_clock(struct prb_reading *r)
{
	struct prb_set *s = NULL;
	struct prb_error err = { 0 };
	int idx = -1;
	int rc = prb_set_new(&s, NULL, NULL);
	if (rc == 0)
		rc = prb_set_add(s, "task-clock", &idx, &err);
	if (rc == 0)
		rc = prb_set_enable(s);
	if (rc == 0) {
		volatile double x = 0;
		for (int i = 0; i < 2000000; i++)
			x += i;
		rc = prb_set_read(s, r);
	}
	prb_set_free(s);
	return rc;
}

/* Events the script does not name pass through: where task-clock opens on the syscall layer,
 * it opens and counts under sim too. */
static void test_pass_through(void)
{
	struct prb_reading r[1];
	setenv("MEMWALL_COUNTERS", "syscall", 1);
	int rc = task_clock(r);
	setenv("MEMWALL_COUNTERS", "sim", 1);
	if (rc < 0) {
		printf("task-clock does not open here (%s): pass-through not checked\n",
		       strerror(-rc));
		return;
	}
	setenv("MEMWALL_SIM_SCRIPT", write_script(arrow_lake()), 1);
	T_EQ_INT(task_clock(r), 0);
	T_ASSERT(!(r[0].flags & (PRB_READING_UNAVAILABLE | PRB_READING_NOT_COUNTED)));
	T_ASSERT(r[0].value > 0);
}

/* Issue 43, class 10: counts past what a counter can plausibly make. On arrow-lake (64 bytes a
 * count, checked here from the tree), with its own script:
 *   - instance 0's read counter goes back: read 1 adds 5, read 2 adds 2^64 - 1000, so the
 *     value (5) is below the one at open (1000): a reset, whose difference modulo 2^64 is
 *     2^64 - 995 counts (llround of that times 64 put 9.2e18 bytes in the window);
 *   - instance 1's read counter advances 2^62 counts at once: 2^68 bytes, past what a signed
 *     64-bit byte count holds (it flattened to 2^63, and read as "counted nothing");
 *   - in a second script each instance counts 3 * 2^55 (3 * 2^61 bytes, below 2^63 - 1) but
 *     the two together pass it: the sum is no reading, the instances are. */
static void test_implausible(void)
{
	const char *tree = "arrow-lake";
	uint32_t t0 = t_pmu_type(tree, "uncore_imc_free_running_0");
	uint32_t t1 = t_pmu_type(tree, "uncore_imc_free_running_1");
	T_NEAR(t_alias_bytes(tree, "uncore_imc_free_running_0", "data_read"), 64.0, 0);
	T_NEAR(t_alias_bytes(tree, "uncore_imc_free_running_1", "data_read"), 64.0, 0);
	char path[600], root[8192];
	snprintf(path, sizeof(path), "%s/implausible.script", tmpdir);
	snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), tree);
	for (int script = 0; script < 2; script++) {
		FILE *f = fopen(path, "w");
		T_ASSERT(f != NULL);
		if (!f)
			return;
		if (script == 0) {
			fprintf(f, "perf type=%u config=0x20ff cpu=* start=1000 steps=5,%" PRIu64 "\n",
				t0, UINT64_MAX - 999); /* + 2^64 - 1000 */
			fprintf(f, "perf type=%u config=0x20ff cpu=* start=0 steps=%" PRIu64 ",0\n",
				t1, (uint64_t)1 << 62);
		} else {
			fprintf(f, "perf type=%u config=0x20ff cpu=* start=0 steps=%" PRIu64 ",0\n",
				t0, (uint64_t)3 << 55);
			fprintf(f, "perf type=%u config=0x20ff cpu=* start=0 steps=%" PRIu64 ",0\n",
				t1, (uint64_t)3 << 55);
		}
		fprintf(f, "perf type=%u config=0x30ff cpu=* start=0 step=1\n", t0);
		fprintf(f, "perf type=%u config=0x30ff cpu=* start=0 step=1\n", t1);
		fclose(f);
		setenv("MEMWALL_SIM_SCRIPT", path, 1);
		struct prb_system *sys = NULL;
		struct prb_error err = { 0 };
		struct prb_dram_options opt = { .backend = "intel_imc_free" };
		struct prb_dram_status st;
		struct prb_dram *d = NULL;
		T_EQ_INT(prb_system_open(&sys, root, &err), 0);
		T_EQ_INT(prb_dram_open(&d, sys, &opt, &st), 0);
		if (!d) {
			prb_system_close(sys);
			return;
		}
		struct prb_dram_sample *s = &samples[1], *s2 = &samples[2];
		int rc = prb_dram_read(d, s);
		if (script == 0) {
			T_EQ_INT(rc, -EIO);
			T_EQ_INT(s->inst[0].read.state, PRB_MEASURED);
			T_EQ_U64(s->inst[0].read.bytes, 5 * 64);
			T_EQ_INT(s->inst[1].read.state, PRB_READ_FAILED);
			T_EQ_INT(s->inst[1].total.state, PRB_READ_FAILED);
			T_EQ_INT(s->read.state, PRB_READ_FAILED);
			T_EQ_INT(s->inst[1].write.state, PRB_MEASURED); /* its other counter is fine */
			T_EQ_U64(s->inst[1].write.bytes, 64);
			T_EQ_INT(prb_dram_read(d, s2), -EIO);
			T_EQ_INT(s2->inst[0].read.state, PRB_READ_FAILED);
			T_EQ_INT(s2->inst[0].total.state, PRB_READ_FAILED);
			T_EQ_INT(s2->inst[0].write.state, PRB_MEASURED);
			T_EQ_U64(s2->inst[0].write.bytes, 2 * 64);
			/* the window between the two reads is no reading either */
			prb_dram_sample_delta(s2, s, &delta);
			T_EQ_INT(delta.inst[0].read.state, PRB_READ_FAILED);
			T_EQ_INT(delta.read.state, PRB_READ_FAILED);
		} else {
			uint64_t each = (3ull << 55) * 64; /* 3 * 2^61 */
			T_ASSERT(each < (uint64_t)INT64_MAX && each > (uint64_t)INT64_MAX - each);
			T_EQ_INT(rc, 0);
			for (int i = 0; i < 2; i++) {
				T_EQ_INT(s->inst[i].read.state, PRB_MEASURED);
				T_EQ_U64(s->inst[i].read.bytes, each);
			}
			T_EQ_INT(s->read.state, PRB_READ_FAILED);
			T_EQ_INT(s->total.state, PRB_READ_FAILED);
			T_EQ_INT(s->write.state, PRB_MEASURED);
			T_EQ_U64(s->write.bytes, 2 * 64);
		}
		prb_dram_close(d);
		prb_system_close(sys);
	}
	unlink(path);
}

int main(void)
{
	t_tmpdir_scratch(tmpdir, sizeof(tmpdir), "sim");
	setenv("MEMWALL_COUNTERS", "sim", 1);
	test_names();
	test_every_backend();
	test_not_run();
	test_wrap();
	test_fail_mid_run();
	test_grouped();
	test_group_layout();
	test_no_group();
	test_scaled();
	test_resctrl_unavailable();
	test_resctrl_files();
	test_bad_script();
	test_pass_through();
	test_implausible();

	static const char *const scripts[] = { "arrow-lake", "sapphire-rapids", "granite-rapids",
					       "amd-epyc-zen4", "zen3", "resctrl", "ampere-altra",
					       "graviton3", "nvidia-grace" };
	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s.script", tmpdir, scripts[i]);
		unlink(path);
	}
	rmdir(tmpdir);
	return t_done();
}
