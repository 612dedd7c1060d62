/* tests/probes/test_dram.c: DRAM backend selection and encodings on recorded sysfs trees.
 *
 * For each machine: the right backend, every instance (all controllers, on every socket's CPU),
 * and the exact perf_event_attr values, derived by hand from the format files in the comments.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probes/internal.h" /* by its folder: engine/ has internal.h files too */
#include "test.h"
#include "sim_tree.h"

static struct dram_plan plan;

/* Checks instance i: its PMU, CPU, and events as (dir, type, config, config1, bytes). */
struct want_event {
	enum dram_dir dir;
	uint64_t config;
	double bytes;
};

static void check_instance(int i, const char *pmu, int cpu, uint32_t type,
			   const struct want_event *ev, int n_ev)
{
	const struct dram_instance *in = &plan.inst[i];
	T_EQ_STR(in->name, pmu);
	T_EQ_INT(in->cpu, cpu);
	T_EQ_INT(in->n_events, n_ev);
	for (int j = 0; j < n_ev && j < in->n_events; j++) {
		T_EQ_INT(in->events[j].dir, ev[j].dir);
		T_EQ_U64(in->events[j].attr.type, type);
		T_EQ_U64(in->events[j].attr.config, ev[j].config);
		T_EQ_U64(in->events[j].attr.config1, 0);
		T_ASSERT(in->events[j].attr.exclude_kernel == 0 && in->events[j].attr.exclude_user == 0);
		T_ASSERT(in->events[j].bytes_per_count == ev[j].bytes);
	}
}

/* Issue 28, class 12: an instance whose count went back by 1 is not a reading (its
 * difference was 2^64 - 1, a negative JSON integer), and neither is the sum over it. */
static void test_delta_backwards(void)
{
	struct prb_dram_sample a, b, d;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.n_instances = b.n_instances = 2;
	for (int i = 0; i < 2; i++) {
		b.inst[i].read = (struct prb_bytes){ 1000, PRB_MEASURED };
		b.inst[i].write = (struct prb_bytes){ 500, PRB_MEASURED };
		b.inst[i].total = (struct prb_bytes){ 1500, PRB_MEASURED };
	}
	a.inst[0].read = (struct prb_bytes){ 999, PRB_MEASURED }; /* back by 1 */
	a.inst[0].write = (struct prb_bytes){ 600, PRB_MEASURED };
	a.inst[0].total = (struct prb_bytes){ 1599, PRB_MEASURED };
	a.inst[1].read = (struct prb_bytes){ 3000, PRB_MEASURED };
	a.inst[1].write = (struct prb_bytes){ 500, PRB_MEASURED };
	a.inst[1].total = (struct prb_bytes){ 3500, PRB_MEASURED };
	b.read = (struct prb_bytes){ 2000, PRB_MEASURED };
	b.write = (struct prb_bytes){ 1000, PRB_MEASURED };
	b.total = (struct prb_bytes){ 3000, PRB_MEASURED };
	a.read = (struct prb_bytes){ 3999, PRB_MEASURED };
	a.write = (struct prb_bytes){ 1100, PRB_MEASURED };
	a.total = (struct prb_bytes){ 5099, PRB_MEASURED };
	prb_dram_sample_delta(&a, &b, &d);
	T_EQ_INT(d.inst[0].read.state, PRB_READ_FAILED);
	T_EQ_U64(d.inst[0].read.bytes, 0);
	T_EQ_INT(d.inst[0].write.state, PRB_MEASURED);
	T_EQ_U64(d.inst[0].write.bytes, 100);
	T_EQ_INT(d.inst[1].read.state, PRB_MEASURED);
	T_EQ_U64(d.inst[1].read.bytes, 2000);
	T_EQ_INT(d.read.state, PRB_READ_FAILED); /* the sum went forward, one instance back */
	T_EQ_INT(d.write.state, PRB_MEASURED);
	T_EQ_U64(d.write.bytes, 100);
}

static void test_arrow_lake(void)
{
	struct prb_system *sys = t_system_open("arrow-lake");
	struct prb_dram_status st;
	T_EQ_INT(prb_dram_probe_plan(sys, NULL, &st, &plan), 0);
	T_EQ_STR(st.backend, "intel_imc_free");
	/* both controllers, never just the first (the Arrow Lake lesson) */
	T_EQ_INT(st.n_instances, 2);
	T_EQ_STR(st.instances[0].pmu, "uncore_imc_free_running_0");
	T_EQ_STR(st.instances[1].pmu, "uncore_imc_free_running_1");
	T_EQ_INT(st.flags, 0);
	/* data_read event=0xff,umask=0x20 with event config:0-7, umask config:8-15 -> 0x20ff;
	 * data_write umask=0x30 -> 0x30ff; scale 6.103515625e-5 MiB -> 64 bytes */
	const struct want_event ev[] = { { DRAM_READ, 0x20ff, 64.0 }, { DRAM_WRITE, 0x30ff, 64.0 } };
	check_instance(0, "uncore_imc_free_running_0", 0, 24, ev, 2);
	check_instance(1, "uncore_imc_free_running_1", 0, 25, ev, 2);
	/* the programmable uncore_imc_0/1 carry no CAS aliases: intel_imc_cas says so */
	T_CONTAINS(st.missing, "intel_imc_cas: uncore_imc_0 has no cas_count_read alias");
	T_EQ_INT(st.provides, PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL);
	prb_system_close(sys);
}

static void test_skylake_client(void)
{
	/* one PCI IMC, no _N suffix: uncore_imc with data_reads = event=0x01 and data_writes =
	 * event=0x02 (format event config:0-7), scale 6.103515625e-5 MiB = 64 bytes */
	struct prb_system *sys = t_system_open("skylake-client");
	struct prb_dram_status st;
	T_EQ_INT(prb_dram_probe_plan(sys, NULL, &st, &plan), 0);
	T_EQ_STR(st.backend, "intel_imc_free");
	T_EQ_INT(st.n_instances, 1);
	const struct want_event ev[] = { { DRAM_READ, 0x1, 64.0 }, { DRAM_WRITE, 0x2, 64.0 } };
	check_instance(0, "uncore_imc", 0, 13, ev, 2);
	prb_system_close(sys);
}

static void test_sapphire_rapids(void)
{
	struct prb_system *sys = t_system_open("sapphire-rapids");
	struct prb_dram_status st;
	T_EQ_INT(prb_dram_probe_plan(sys, NULL, &st, &plan), 0);
	T_EQ_STR(st.backend, "intel_imc_cas");
	/* 16 IMC PMUs, each opened on both sockets (cpumask 0,56) */
	T_EQ_INT(st.n_instances, 32);
	/* cas_count_read event=0x05,umask=0xcf with event config:0-7, umask config:8-15,32-55:
	 * 0x05 | 0xcf << 8 = 0xcf05; cas_count_write umask=0xf0 -> 0xf005 */
	const struct want_event ev[] = { { DRAM_READ, 0xcf05, 64.0 }, { DRAM_WRITE, 0xf005, 64.0 } };
	for (int i = 0; i < 16; i++) {
		char name[32];
		snprintf(name, sizeof(name), "uncore_imc_%d", i);
		check_instance(2 * i, name, 0, (uint32_t)(40 + i), ev, 2);
		check_instance(2 * i + 1, name, 56, (uint32_t)(40 + i), ev, 2);
	}
	/* resctrl is present too, but less accurate: not chosen, and asking for it works */
	struct prb_dram_options opt = { .backend = "resctrl" };
	T_EQ_INT(prb_dram_probe_plan(sys, &opt, &st, &plan), 0);
	T_EQ_STR(st.backend, "resctrl");
	T_EQ_INT(st.n_instances, 2);
	T_ASSERT(st.flags & PRB_DRAM_TOTAL_ONLY);
	T_CONTAINS(st.caveat, "core-originated traffic only");
	prb_system_close(sys);
}

static void test_granite_rapids(void)
{
	struct prb_system *sys = t_system_open("granite-rapids");
	struct prb_dram_status st;
	T_EQ_INT(prb_dram_probe_plan(sys, NULL, &st, &plan), 0);
	T_EQ_STR(st.backend, "intel_imc_cas");
	T_EQ_INT(st.n_instances, 12);
	/* sch0: event=0x05, sch1: event=0x06; umask 0xcf read, 0xf0 write: both schedulers of
	 * each direction are counted and summed */
	const struct want_event ev[] = {
		{ DRAM_READ, 0xcf05, 64.0 }, { DRAM_WRITE, 0xf005, 64.0 },
		{ DRAM_READ, 0xcf06, 64.0 }, { DRAM_WRITE, 0xf006, 64.0 },
	};
	for (int i = 0; i < 12; i++) {
		char name[32];
		snprintf(name, sizeof(name), "uncore_imc_%d", i);
		check_instance(i, name, 0, (uint32_t)(30 + i), ev, 4);
	}
	prb_system_close(sys);
}

static void test_zen4(void)
{
	struct prb_system *sys = t_system_open("amd-epyc-zen4");
	struct prb_dram_status st;
	T_EQ_INT(prb_dram_probe_plan(sys, NULL, &st, &plan), 0);
	T_EQ_STR(st.backend, "amd_umc");
	T_EQ_INT(st.n_instances, 12);
	/* umc_cas_cmd.rd: event=0x0a, rdwrmask=1 with event config:0-7, rdwrmask config:8-9:
	 * 0x0a | 1 << 8 = 0x10a; .wr rdwrmask=2 -> 0x20a; 64 bytes per CAS */
	const struct want_event ev[] = { { DRAM_READ, 0x10a, 64.0 }, { DRAM_WRITE, 0x20a, 64.0 } };
	for (int i = 0; i < 12; i++) {
		char name[32];
		snprintf(name, sizeof(name), "amd_umc_%d", i);
		check_instance(i, name, 0, (uint32_t)(13 + i), ev, 2);
	}
	/* amd_df exists on Zen 4 but with the PerfMonV2 format: the Zen 2/3 encodings refuse it */
	struct prb_dram_options opt = { .backend = "amd_df" };
	T_EQ_INT(prb_dram_probe_plan(sys, &opt, &st, &plan), -ENOENT);
	T_CONTAINS(st.reason, "not the Zen 2/3 data fabric");
	prb_system_close(sys);
}

static void test_zen3(void)
{
	struct prb_system *sys = t_system_open("zen3");
	struct prb_dram_status st;
	T_EQ_INT(prb_dram_probe_plan(sys, NULL, &st, &plan), 0);
	T_EQ_STR(st.backend, "amd_df");
	T_ASSERT(st.flags & PRB_DRAM_CAVEAT);
	T_ASSERT(st.flags & PRB_DRAM_TOTAL_ONLY);
	T_CONTAINS(st.caveat, "approximate");
	T_EQ_INT(st.n_instances, 1);
	/* channel c: event 0x07 + 0x40 c, umask 0x38, format event config:0-7,32-35,59-60 and
	 * umask config:8-15. Channel 0: 0x07 | 0x38 << 8 = 0x3807. Channel 4: event 0x107: low
	 * byte 0x07 -> bits 0-7, next nibble 0x1 -> bit 32: 0x100003807. Channel 7: event 0x1c7:
	 * 0xc7 | 0x3800 | 1 << 32 = 0x1000038c7. */
	const struct want_event ev[] = {
		{ DRAM_TOTAL, 0x3807, 64.0 },	     { DRAM_TOTAL, 0x3847, 64.0 },
		{ DRAM_TOTAL, 0x3887, 64.0 },	     { DRAM_TOTAL, 0x38c7, 64.0 },
		{ DRAM_TOTAL, 0x100003807ull, 64.0 }, { DRAM_TOTAL, 0x100003847ull, 64.0 },
		{ DRAM_TOTAL, 0x100003887ull, 64.0 }, { DRAM_TOTAL, 0x1000038c7ull, 64.0 },
	};
	check_instance(0, "amd_df", 0, 11, ev, 8);
	prb_system_close(sys);
}

/* Instance i's events as (dir, config, config1, config2, bytes): the ARM encodings use config1
 * and config2, which check_instance holds at 0. */
struct want_arm {
	enum dram_dir dir;
	uint64_t config, config1, config2;
	double bytes;
};

static void check_arm(int i, const char *pmu, int cpu, uint32_t type, const struct want_arm *ev,
		      int n_ev)
{
	const struct dram_instance *in = &plan.inst[i];
	T_EQ_STR(in->name, pmu);
	T_EQ_INT(in->cpu, cpu);
	T_EQ_INT(in->n_events, n_ev);
	for (int j = 0; j < n_ev && j < in->n_events; j++) {
		T_EQ_INT(in->events[j].dir, ev[j].dir);
		T_EQ_U64(in->events[j].attr.type, type);
		T_EQ_U64(in->events[j].attr.config, ev[j].config);
		T_EQ_U64(in->events[j].attr.config1, ev[j].config1);
		T_EQ_U64(in->events[j].attr.config2, ev[j].config2);
		T_ASSERT(in->events[j].bytes_per_count == ev[j].bytes);
	}
}

static void test_ampere_altra(void)
{
	static const char *const channels[] = { "10008c000", "10008c400", "10008c800",
						"10008cc00", "10008d000", "10008d400",
						"10008d800", "10008dc00" };
	struct prb_system *sys = t_system_open("ampere-altra");
	struct prb_dram_status st;
	T_EQ_INT(prb_dram_probe_plan(sys, NULL, &st, &plan), 0);
	/* the controllers, not the mesh beside them */
	T_EQ_STR(st.backend, "arm_dmc620");
	T_EQ_INT(st.n_instances, 8);
	T_EQ_INT(st.provides, PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL);
	T_ASSERT(st.flags & PRB_DRAM_CAVEAT);
	T_ASSERT(!(st.flags & PRB_DRAM_TOTAL_ONLY));
	T_CONTAINS(st.caveat, "calibrate");
	/* the driver refuses a second hardware event in a group: every counter alone */
	T_ASSERT(plan.no_group);
	/* clkdiv2_rdwr = event=0x12,clkdiv2=0x1: event config2:3-8 -> 0x12 << 3 = 0x90,
	 * clkdiv2 config2:9 -> 0x200, so config2 0x290; mask=1 in config:0-44 -> config 0x1;
	 * match (config1:0-44) 0 for reads, 1 for writes; 64 bytes a count */
	const struct want_arm ev[] = { { DRAM_READ, 0x1, 0x0, 0x290, 64.0 },
				       { DRAM_WRITE, 0x1, 0x1, 0x290, 64.0 } };
	for (int i = 0; i < 8; i++) {
		char name[64];
		snprintf(name, sizeof(name), "arm_dmc620_%s", channels[i]);
		T_EQ_STR(st.instances[i].pmu, name);
		check_arm(i, name, 0, (uint32_t)(92 + i), ev, 2);
	}
	/* the mesh is there too, and can be asked for: one event per mesh, total only */
	struct prb_dram_options opt = { .backend = "arm_cmn" };
	T_EQ_INT(prb_dram_probe_plan(sys, &opt, &st, &plan), 0);
	T_EQ_STR(st.backend, "arm_cmn");
	T_EQ_INT(st.n_instances, 1);
	T_ASSERT(st.flags & PRB_DRAM_TOTAL_ONLY);
	T_ASSERT(!plan.no_group);
	/* hnf_mc_reqs = type=0x5 (config:0-15), eventid=0xd (config:16-26) -> 0xd0005 */
	const struct want_arm mc[] = { { DRAM_TOTAL, 0xd0005, 0, 0, 64.0 } };
	check_arm(0, "arm_cmn_0", 0, 91, mc, 1);
	prb_system_close(sys);
}

static void test_graviton3(void)
{
	struct prb_system *sys = t_system_open("graviton3");
	struct prb_dram_status st;
	T_EQ_INT(prb_dram_probe_plan(sys, NULL, &st, &plan), 0);
	T_EQ_STR(st.backend, "arm_cmn");
	T_EQ_INT(st.provides, PRB_DRAM_TOTAL);
	T_ASSERT(st.flags & PRB_DRAM_TOTAL_ONLY);
	T_ASSERT(st.flags & PRB_DRAM_CAVEAT);
	T_CONTAINS(st.caveat, "no read/write split");
	T_CONTAINS(st.missing, "arm_dmc620: no arm_dmc620_<hex> PMU");
	const struct want_arm mc[] = { { DRAM_TOTAL, 0xd0005, 0, 0, 64.0 } };
	check_arm(0, "arm_cmn_0", 0, 10, mc, 1);
	prb_system_close(sys);
}

static void test_nvidia_grace(void)
{
	struct prb_system *sys = t_system_open("nvidia-grace");
	struct prb_dram_status st;
	T_EQ_INT(prb_dram_probe_plan(sys, NULL, &st, &plan), 0);
	T_EQ_STR(st.backend, "nvidia_scf");
	/* one SCF PMU per socket, opened on its cpumask CPU (0 and 72); the PCIe and
	 * NVLink-C2C PMUs beside them see device traffic and are not counted */
	T_EQ_INT(st.n_instances, 2);
	T_EQ_INT(st.provides, PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL);
	T_ASSERT(st.flags & PRB_DRAM_CAVEAT);
	T_ASSERT(!plan.no_group);
	/* event config:0-32: cmem_rd_data = 0x1a5 in 32-byte beats, cmem_wr_total_bytes =
	 * 0x1db in bytes */
	const struct want_arm ev[] = { { DRAM_READ, 0x1a5, 0, 0, 32.0 },
				       { DRAM_WRITE, 0x1db, 0, 0, 1.0 } };
	check_arm(0, "nvidia_scf_pmu_0", 0, 11, ev, 2);
	check_arm(1, "nvidia_scf_pmu_1", 72, 14, ev, 2);
	prb_system_close(sys);
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[1024];
	T_ASSERT(snprintf(path, sizeof(path), "%s/%s", dir, name) < (int)sizeof(path));
	t_write_text(path, text);
}

/* A DMC-620 without its clkdiv2_rdwr alias is refused with the file named, and a PMU whose
 * suffix is not hexadecimal (arm_dmc620_pmu) is not a controller at all. */
static void test_dmc620_refused(void)
{
	char root[512], dir[768], good[900], odd[900];
	const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	T_ASSERT(snprintf(root, sizeof(root), "%s/mw-dmc620-XXXXXX", tmp) < (int)sizeof(root));
	T_ASSERT(mkdtemp(root) != NULL);
	static const char *const sub[] = { "/bus", "/bus/event_source", "/bus/event_source/devices" };
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		snprintf(dir, sizeof(dir), "%s%s", root, sub[i]);
		mkdir(dir, 0700);
	}
	snprintf(good, sizeof(good), "%s/arm_dmc620_10008c000", dir);
	snprintf(odd, sizeof(odd), "%s/arm_dmc620_pmu", dir);
	mkdir(good, 0700);
	mkdir(odd, 0700);
	static const char *const files[] = { "type", "format/mask", "format/match", "format/event",
					     "format/clkdiv2", "events/clkdiv2_rdwr" };
	static const char *const texts[] = { "92\n", "config:0-44\n", "config1:0-44\n",
					     "config2:3-8\n", "config2:9\n",
					     "event=0x12,clkdiv2=0x1\n" };
	char file[1024];
	snprintf(file, sizeof(file), "%s/format", good);
	mkdir(file, 0700);
	snprintf(file, sizeof(file), "%s/events", good);
	mkdir(file, 0700);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		put_file(good, files[i], texts[i]);
	put_file(odd, "type", "93\n");
	struct prb_system *sys = NULL;
	struct prb_error err = { 0 };
	struct prb_dram_status st;
	/* the controller counts; the PMU with a non-hex suffix is none of its instances */
	T_EQ_INT(prb_system_open(&sys, root, &err), 0);
	if (sys) {
		T_EQ_INT(prb_dram_probe_plan(sys, NULL, &st, &plan), 0);
		T_EQ_STR(st.backend, "arm_dmc620");
		T_EQ_INT(st.n_instances, 1);
		T_EQ_STR(st.instances[0].pmu, "arm_dmc620_10008c000");
		prb_system_close(sys);
		sys = NULL;
	}
	/* without its alias, refused with the file named */
	if (snprintf(file, sizeof(file), "%s/events/clkdiv2_rdwr", good) < (int)sizeof(file))
		unlink(file);
	T_EQ_INT(prb_system_open(&sys, root, &err), 0);
	if (sys) {
		T_EQ_INT(prb_dram_probe_plan(sys, NULL, &st, &plan), -ENOENT);
		T_CONTAINS(st.reason, "arm_dmc620: arm_dmc620_10008c000 has no events/clkdiv2_rdwr");
		prb_system_close(sys);
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (snprintf(file, sizeof(file), "%s/%s", good, files[i]) < (int)sizeof(file))
			unlink(file);
	snprintf(file, sizeof(file), "%s/format", good);
	rmdir(file);
	snprintf(file, sizeof(file), "%s/events", good);
	rmdir(file);
	if (snprintf(file, sizeof(file), "%s/type", odd) < (int)sizeof(file))
		unlink(file);
	rmdir(good);
	rmdir(odd);
	for (size_t i = sizeof(sub) / sizeof(sub[0]); i-- > 0;) {
		snprintf(dir, sizeof(dir), "%s%s", root, sub[i]);
		rmdir(dir);
	}
	rmdir(root);
}

static void test_this_vm(void)
{
	struct prb_system *sys = t_system_open("this-vm");
	struct prb_dram_status st;
	T_EQ_INT(prb_dram_probe(sys, NULL, &st), -ENOENT);
	T_ASSERT(!st.available);
	T_EQ_STR(st.backend, "");
	T_EQ_INT(st.n_instances, 0);
	T_CONTAINS(st.reason, "no memory-controller counters");
	T_CONTAINS(st.reason, "Virtual machines expose no uncore PMUs");
	T_CONTAINS(st.missing, "intel_imc_free: no uncore_imc_free_running_N (Tiger Lake and later)");
	/* an unknown backend name is bad input, not absence */
	struct prb_dram_options opt = { .backend = "nvidia_hbm" };
	T_EQ_INT(prb_dram_probe(sys, &opt, &st), -EINVAL);
	T_CONTAINS(st.reason, "unknown DRAM backend \"nvidia_hbm\"");
	prb_system_close(sys);
}

static void test_bad_tree(void)
{
	/* malformed PMUs are refused with the file named, never counted in part */
	struct prb_system *sys = t_system_open("bad");
	struct prb_dram_status st;
	int rc = prb_dram_probe_plan(sys, NULL, &st, &plan);
	T_EQ_INT(rc, -ENOENT);
	T_CONTAINS(st.reason, "format/umask");
	T_CONTAINS(st.missing, "intel_imc_free");
	prb_system_close(sys);
}

/* The open path on a recorded tree: this VM has no PMU of type 24, so the kernel answers
 * ENOENT, and the status says so in words. With an injected EACCES the paranoid fix shows. */
static void test_open_classified(void)
{
	struct prb_system *sys = t_system_open("arrow-lake");
	struct prb_dram_status st;
	struct prb_dram *d = NULL;
	int rc = prb_dram_open(&d, sys, NULL, &st);
	if (rc == 0) {
		/* bare metal with a type-24 PMU that accepted the encoding: nothing to classify */
		prb_dram_close(d);
	} else {
		T_ASSERT(d == NULL);
		T_ASSERT(!st.available);
		T_EQ_INT(st.n_instances, 2); /* what it tried: all of them */
		T_CONTAINS(st.reason, "uncore_imc_free_running_0 (cpu 0");
	}
	prb_counter_inject_errno = EACCES;
	T_EQ_INT(prb_dram_open(&d, sys, NULL, &st), -EACCES);
	T_CONTAINS(st.reason, "perf_event_paranoid");
	T_CONTAINS(st.reason, "CAP_PERFMON");
	prb_counter_inject_errno = ENODEV;
	T_EQ_INT(prb_dram_open(&d, sys, NULL, &st), -ENODEV);
	T_CONTAINS(st.reason, "Virtual machines usually expose no uncore PMUs");
	prb_counter_inject_errno = 0;
	prb_system_close(sys);
}

/* resctrl is a file backend: open and read work here on the recorded tree. */
static void test_resctrl_read(void)
{
	struct prb_system *sys = t_system_open("sapphire-rapids");
	struct prb_dram_options opt = { .backend = "resctrl" };
	struct prb_dram_status st;
	struct prb_dram *d = NULL;
	static struct prb_dram_sample s;
	T_EQ_INT(prb_dram_open(&d, sys, &opt, &st), 0);
	T_ASSERT(st.available);
	if (d) {
		T_EQ_INT(prb_dram_read(d, &s), 0);
		T_EQ_INT(s.n_instances, 2);
		T_EQ_U64(s.total.bytes, 0); /* unchanged since open, and measured so */
		T_EQ_INT(s.total.state, PRB_MEASURED);
		/* no split: read and write are not a measured 0 but absent */
		T_EQ_INT(s.read.state, PRB_NOT_PROVIDED);
		T_EQ_INT(s.write.state, PRB_NOT_PROVIDED);
		T_EQ_INT(s.inst[1].read.state, PRB_NOT_PROVIDED);
		T_EQ_INT(st.provides, PRB_DRAM_TOTAL);
		prb_dram_close(d);
	}
	prb_system_close(sys);
}

/* The table prb_dram_backend_check reads against what each backend's detection finds: every
 * instance found on every recorded tree is a name its backend claims, on the tree's machine,
 * and the same backend is foreign to the other machine (resctrl exists on both). A record's
 * self-contradictions (validate, issue 44) are judged by this table. */
static void test_backend_names(void)
{
	static const struct {
		const char *tree, *machine, *other;
	} trees[] = {
		{ "arrow-lake", "x86_64", "aarch64" }, { "skylake-client", "x86_64", "aarch64" },
		{ "sapphire-rapids", "x86_64", "aarch64" }, { "granite-rapids", "x86_64", "aarch64" },
		{ "amd-epyc-zen4", "x86_64", "aarch64" }, { "zen3", "x86_64", "aarch64" },
		{ "ampere-altra", "aarch64", "x86_64" }, { "graviton3", "aarch64", "x86_64" },
		{ "nvidia-grace", "aarch64", "x86_64" },
	};
	char why[256];
	int checked = 0;
	for (size_t t = 0; t < sizeof(trees) / sizeof(trees[0]); t++) {
		struct prb_system *sys = t_system_open(trees[t].tree);
		for (const char *const *b = prb_dram_backends(); sys && *b; b++) {
			struct prb_dram_options opt = { .backend = *b };
			struct prb_dram_status st;
			if (prb_dram_probe(sys, &opt, &st) != 0)
				continue;
			for (int i = 0; i < st.n_instances; i++, checked++) {
				int rc = prb_dram_backend_check(*b, trees[t].machine,
								st.instances[i].pmu, why, sizeof(why));
				if (rc)
					fprintf(stderr, "%s: %s: %s\n", trees[t].tree, *b, why);
				T_EQ_INT(rc, 0);
			}
			T_EQ_INT(prb_dram_backend_check(*b, trees[t].other, NULL, why, sizeof(why)),
				 strcmp(*b, "resctrl") ? -EINVAL : 0);
		}
		prb_system_close(sys);
	}
	T_ASSERT(checked >= 40); /* every tree's controllers, not a loop that never ran */
	T_EQ_INT(prb_dram_backend_check("nvidia_scf", "x86_64", NULL, why, sizeof(why)), -EINVAL);
	T_CONTAINS(why, "the nvidia_scf backend's PMUs exist only on aarch64 kernels, and this one "
			"is x86_64");
	T_EQ_INT(prb_dram_backend_check("amd_umc", "x86_64", "uncore_imc_0", why, sizeof(why)),
		 -EINVAL);
	T_CONTAINS(why, "'uncore_imc_0' is not a name the amd_umc backend's driver gives its "
			"instances (amd_umc_N)");
	T_EQ_INT(prb_dram_backend_check("amd_umc", NULL, "amd_umc_", why, sizeof(why)), -EINVAL);
	T_EQ_INT(prb_dram_backend_check("amd_umc", NULL, "amd_umc_1x", why, sizeof(why)), -EINVAL);
	T_EQ_INT(prb_dram_backend_check("intel_imc_free", "x86_64", "uncore_imc", why, sizeof(why)),
		 0);
	T_EQ_INT(prb_dram_backend_check("intel_imc_free", NULL, "uncore_imcx", why, sizeof(why)),
		 -EINVAL);
	T_EQ_INT(prb_dram_backend_check("constructed", "x86_64", "x", why, sizeof(why)), -ENOENT);
}

/* ---- issue 43, class 9: more instances than PRB_DRAM_MAX_INSTANCES (128). Trees are written
 * here, PMU by PMU, into a scratch folder; the formats and aliases are the recorded trees'. */

static char big_root[64];

/* One PMU: its type, cpumask, and files given as "rel=text" (NULL-terminated). */
static void big_pmu(const char *pmu, const char *cpumask, const char *const *files)
{
	char rel[300];
	snprintf(rel, sizeof(rel), "/bus/event_source/devices/%s/type", pmu);
	t_put(big_root, rel, "42\n");
	snprintf(rel, sizeof(rel), "/bus/event_source/devices/%s/cpumask", pmu);
	t_put(big_root, rel, cpumask);
	for (; *files; files++) {
		const char *eq = strchr(*files, '=');
		snprintf(rel, sizeof(rel), "/bus/event_source/devices/%s/%.*s", pmu,
			 (int)(eq - *files), *files);
		t_put(big_root, rel, eq + 1);
	}
}

static void big_tree_new(void)
{
	t_scratch(big_root, sizeof(big_root), "dram");
}

static void big_tree_free(void)
{
	T_EQ_INT(t_rm_tree(big_root), 0);
}

/* The probe on the scratch tree: its return code, st filled. */
static int big_probe(const char *backend, struct prb_dram_status *st)
{
	struct prb_system *sys = NULL;
	struct prb_error err = { 0 };
	struct prb_dram_options opt = { .backend = backend };
	T_EQ_INT(prb_system_open(&sys, big_root, &err), 0);
	int rc = sys ? prb_dram_probe_plan(sys, &opt, st, &plan) : -999;
	prb_system_close(sys);
	return rc;
}

static void test_too_many(void)
{
	static const char *const scf[] = { "format/event=config:0-32",
					   "events/cmem_rd_data=event=0x1a5",
					   "events/cmem_wr_total_bytes=event=0x1db", NULL };
	static const char *const dmc[] = { "format/mask=config:0-44", "format/match=config1:0-44",
					   "format/event=config2:3-8", "format/clkdiv2=config2:9",
					   "events/clkdiv2_rdwr=event=0x12,clkdiv2=0x1", NULL };
	static const char *const cmn[] = { "format/type=config:0-15",
					   "format/eventid=config:16-26",
					   "events/hnf_mc_reqs=type=0x5,eventid=0xd", NULL };
	static const char *const umc[] = { "format/event=config:0-7",
					   "format/rdwrmask=config:8-9", NULL };
	struct prb_dram_status st;
	char name[64];

	/* 128 Grace sockets are counted, all of them; 200 are refused, naming both numbers
	 * (they were: the first 128, verified and measured as if complete) */
	big_tree_new();
	for (int i = 0; i < 128; i++) {
		snprintf(name, sizeof(name), "nvidia_scf_pmu_%d", i);
		big_pmu(name, "0\n", scf);
	}
	T_EQ_INT(big_probe(NULL, &st), 0);
	T_EQ_STR(st.backend, "nvidia_scf");
	T_EQ_INT(st.n_instances, 128);
	for (int i = 128; i < 200; i++) {
		snprintf(name, sizeof(name), "nvidia_scf_pmu_%d", i);
		big_pmu(name, "0\n", scf);
	}
	T_EQ_INT(big_probe(NULL, &st), -E2BIG);
	T_EQ_STR(st.backend, "");
	T_CONTAINS(st.reason, "nvidia_scf: 200 nvidia_scf_pmu_N PMUs, more than the 128 "
			      "instances memwall can count");
	big_tree_free();

	/* 200 DMC-620 channels beside a CMN mesh: refused, not passed over for arm_cmn (which
	 * counted in their place, and doctor named it) */
	big_tree_new();
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "arm_dmc620_%llx", 0x10008c000ull + 0x400ull * (unsigned)i);
		big_pmu(name, "0\n", dmc);
	}
	big_pmu("arm_cmn_0", "0\n", cmn);
	T_EQ_INT(big_probe(NULL, &st), -E2BIG);
	T_EQ_STR(st.backend, "");
	T_EQ_INT(st.n_instances, 0);
	T_CONTAINS(st.reason, "arm_dmc620: 200 arm_dmc620_<hex> PMUs, more than the 128");
	T_ASSERT(!strstr(st.reason, "arm_cmn"));
	big_tree_free();

	/* 200 meshes */
	big_tree_new();
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "arm_cmn_%d", i);
		big_pmu(name, "0\n", cmn);
	}
	T_EQ_INT(big_probe(NULL, &st), -E2BIG);
	T_CONTAINS(st.reason, "arm_cmn: 200 arm_cmn_N PMUs, more than the 128");
	big_tree_free();

	/* one controller whose cpumask names 200 CPUs: 200 instances */
	big_tree_new();
	big_pmu("amd_umc_0", "0-199\n", umc);
	T_EQ_INT(big_probe(NULL, &st), -E2BIG);
	T_CONTAINS(st.reason, "amd_umc: 200 instances (0 before amd_umc_0, whose cpumask names "
			      "200 CPUs), more than the 128");
	/* asked for by name, the same */
	T_EQ_INT(big_probe("amd_umc", &st), -E2BIG);
	T_CONTAINS(st.reason, "more than the 128");
	big_tree_free();

	/* resctrl with 200 L3 domains */
	big_tree_new();
	for (int i = 0; i < 200; i++) {
		char rel[128];
		snprintf(rel, sizeof(rel), "/fs/resctrl/mon_data/mon_L3_%03d/mbm_total_bytes", i);
		t_put(big_root, rel, "0\n");
	}
	t_put(big_root, "/bus/event_source/devices/software/type", "1\n");
	T_EQ_INT(big_probe("resctrl", &st), -E2BIG);
	T_CONTAINS(st.reason, "resctrl: 200 L3 domains under ");
	T_CONTAINS(st.reason, "more than the 128");
	big_tree_free();
}

/* Issue 43, class 12: an alias whose .scale times .unit is no byte count a counter makes
 * (1e300 GiB: infinite as a double) is refused when the plan is made; a count times it was
 * an infinite reference for verify's perf check ("-nan %"). */
static void test_scale_unbounded(void)
{
	static const char *const imc[] = { "format/event=config:0-7", "format/umask=config:8-15",
					   "events/data_read=event=0xff,umask=0x20",
					   "events/data_read.scale=1e300", "events/data_read.unit=GiB",
					   "events/data_write=event=0xff,umask=0x30",
					   "events/data_write.scale=6.103515625e-5",
					   "events/data_write.unit=MiB", NULL };
	struct prb_dram_status st;
	big_tree_new();
	big_pmu("uncore_imc_free_running_0", "0\n", imc);
	T_EQ_INT(big_probe("intel_imc_free", &st), -ENOENT);
	T_CONTAINS(st.reason, "uncore_imc_free_running_0/events/data_read: .scale times .unit is "
			      "inf bytes a count, more than 2^32");
	big_tree_free();
}

int main(void)
{
	test_delta_backwards();
	test_arrow_lake();
	test_skylake_client();
	test_sapphire_rapids();
	test_granite_rapids();
	test_zen4();
	test_zen3();
	test_ampere_altra();
	test_graviton3();
	test_nvidia_grace();
	test_dmc620_refused();
	test_this_vm();
	test_bad_tree();
	test_open_classified();
	test_resctrl_read();
	test_backend_names();
	test_too_many();
	test_scale_unbounded();
	return t_done();
}
