/* tests/e2e/test_doctor.c: `memwall doctor` and `memwall calibrate` from the outside: exit codes,
 * the JSON contract, and the plain "no DRAM counters" answer on a machine without them. */
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"
#include "test.h"

static json_t *parse(const struct t_output *o)
{
	json_error_t e;
	json_t *j = o->out ? json_loads(o->out, 0, &e) : NULL;
	if (!j)
		fprintf(stderr, "not JSON (%s): %s\n", e.text, o->out ? o->out : "(null)");
	T_ASSERT(j != NULL);
	return j;
}

static const char *tree(const char *machine)
{
	static char root[4096];
	if (snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), machine) >= (int)sizeof(root))
		root[0] = '\0'; /* too long: no tree, and the test fails on it */
	return root;
}

static void test_doctor_without_counters(void)
{
	/* the recorded tree of this VM: software PMUs only */
	const char *argv[] = { "memwall", "doctor", "--json", "--sysfs", tree("this-vm"), NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	json_t *j = parse(&o), *dram = json_object_get(j, "dram");
	T_ASSERT(json_is_false(json_object_get(dram, "available")));
	T_ASSERT(json_is_null(json_object_get(dram, "backend")));
	T_EQ_INT(json_array_size(json_object_get(dram, "instances")), 0);
	T_CONTAINS(json_string_value(json_object_get(dram, "reason")), "no memory-controller counters");
	T_CONTAINS(json_string_value(json_object_get(dram, "reason")), "Virtual machines expose no uncore PMUs");
	T_ASSERT(json_is_object(json_object_get(j, "cpu")));
	T_ASSERT(json_object_get(j, "perf_event_paranoid") != NULL);
	/* the CPUs: the mask's count, and a default no larger */
	json_t *cpus = json_object_get(j, "cpus");
	T_ASSERT(json_integer_value(json_object_get(cpus, "affinity")) >= 1);
	T_ASSERT(json_integer_value(json_object_get(cpus, "default_threads")) <=
		 json_integer_value(json_object_get(cpus, "affinity")));
	T_ASSERT(json_is_object(json_object_get(j, "rapl")));
	/* software events exist everywhere perf does: doctor found them by opening them */
	json_t *tc = json_object_get(json_object_get(j, "software_events"), "task-clock");
	T_ASSERT(json_is_boolean(json_object_get(tc, "available")));
	/* the topology of this VM's tree (copied from its /sys): one node; no controller to tie
	 * to it, and why */
	json_t *topo = json_object_get(j, "topology");
	T_EQ_INT(json_array_size(json_object_get(topo, "nodes")), 1);
	T_CONTAINS(json_string_value(json_object_get(json_object_get(topo, "controllers"), "why")),
		   "unknown, because no DRAM backend");
	json_decref(j);
	t_output_free(&o);

	const char *rargv[] = { "memwall", "doctor", "--require-dram", "--sysfs", tree("this-vm"), NULL };
	T_RUN_EXPECT(rargv, 3, T_LIST("DRAM:        NOT AVAILABLE"), NULL);
}

/* In a container of half a CPU (tests/data/cgroup/): the quota, and one thread by default. */
static void test_doctor_quota(void)
{
	setenv("MEMWALL_CGROUP_ROOT", t_data("cgroup/docker-v2-half-cpu"), 1);
	const char *argv[] = { "memwall", "doctor", "--json", "--sysfs", tree("this-vm"), NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	json_t *j = parse(&o), *cpus = json_object_get(j, "cpus");
	T_NEAR(json_number_value(json_object_get(cpus, "quota")), 50000.0 / 100000.0, 1e-12);
	T_EQ_STR(json_string_value(json_object_get(cpus, "quota_source")), "/sys/fs/cgroup/cpu.max");
	T_EQ_INT(json_integer_value(json_object_get(cpus, "default_threads")), 1);
	json_decref(j);
	t_output_free(&o);
	const char *targv[] = { "memwall", "doctor", "--sysfs", tree("this-vm"), NULL };
	o = t_run(targv);
	T_CONTAINS(o.out, "a cgroup CPU quota of 0.50 (/sys/fs/cgroup/cpu.max): runs default to 1 "
			  "thread\n");
	t_output_free(&o);
	unsetenv("MEMWALL_CGROUP_ROOT");
}

static void test_doctor_server_tree(void)
{
	const char *argv[] = { "memwall", "doctor", "--json", "--sysfs", tree("sapphire-rapids"), NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	json_t *j = parse(&o), *dram = json_object_get(j, "dram");
	T_EQ_STR(json_string_value(json_object_get(dram, "backend")), "intel_imc_cas");
	/* every controller named once, and opened on both sockets */
	T_EQ_INT(json_array_size(json_object_get(dram, "instances")), 16);
	T_EQ_INT(json_array_size(json_object_get(dram, "opened_on")), 32);
	/* CAS counters give reads and writes, and their sum */
	json_t *prov = json_object_get(dram, "provides");
	T_EQ_INT(json_array_size(prov), 3);
	T_EQ_STR(json_string_value(json_array_get(prov, 0)), "read");
	T_EQ_STR(json_string_value(json_array_get(prov, 2)), "total");
	T_ASSERT(json_is_true(json_object_get(dram, "read_write_split")));
	/* the kernel's perf on the same events: cas_count_read is event=0x05,umask=0xcf
	 * (format event config:0-7, umask config:8-15,32-55), each PMU once for both sockets */
	const char *perf = json_string_value(json_object_get(dram, "perf_command"));
	T_CONTAINS(perf, "perf stat -a -e uncore_imc_0/config=0xcf05/,uncore_imc_0/config=0xf005/,");
	T_CONTAINS(perf, "uncore_imc_15/config=0xf005/ -- sleep 10");
	T_CONTAINS(json_string_value(json_object_get(dram, "perf_note")), "count x 64");
	/* the topology: two nodes, one per socket (the tree's node0/node1), the 32 instances
	 * (16 PMUs x cpumask "0,56") split 16 and 16, CPU 56 on node 1 */
	json_t *topo = json_object_get(j, "topology");
	T_EQ_INT(json_array_size(json_object_get(topo, "nodes")), 2);
	T_EQ_INT(json_integer_value(json_object_get(topo, "packages")), 2);
	json_t *per = json_object_get(json_object_get(topo, "controllers"), "per_node");
	T_EQ_INT(json_array_size(per), 2);
	T_EQ_INT(json_integer_value(json_object_get(json_array_get(per, 0), "instances")), 16);
	T_EQ_INT(json_integer_value(json_object_get(json_array_get(per, 1), "instances")), 16);
	json_decref(j);
	t_output_free(&o);
	const char *targv[] = { "memwall", "doctor", "--sysfs", tree("sapphire-rapids"), NULL };
	o = t_run(targv);
	T_CONTAINS(o.out, "  node 1: CPUs 56-111,168-223");
	T_CONTAINS(o.out, "  controller instances per node: node 0: 16, node 1: 16");
	t_output_free(&o);

	/* resctrl counts a total only */
	const char *rargv[] = { "memwall", "doctor", "--json", "--backend", "resctrl", "--sysfs",
				tree("sapphire-rapids"), NULL };
	o = t_run(rargv);
	j = parse(&o);
	dram = json_object_get(j, "dram");
	prov = json_object_get(dram, "provides");
	T_EQ_INT(json_array_size(prov), 1);
	T_EQ_STR(json_string_value(json_array_get(prov, 0)), "total");
	T_ASSERT(json_is_false(json_object_get(dram, "read_write_split")));
	json_decref(j);
	t_output_free(&o);
}

/* The tree's own arm_dmc620_<hex> directories, by address: what doctor must name. */
static int altra_channels(char names[][64], int max)
{
	char dir[4200];
	T_ASSERT(snprintf(dir, sizeof(dir), "%s/bus/event_source/devices", tree("ampere-altra")) <
		 (int)sizeof(dir));
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned long long addr[16];
	int n = 0;
	T_ASSERT(d != NULL);
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, "arm_dmc620_", 11) && n < max) {
			addr[n] = strtoull(de->d_name + 11, NULL, 16);
			T_ASSERT(snprintf(names[n++], 64, "%s", de->d_name) < 64);
		}
	if (d)
		closedir(d);
	for (int i = 1; i < n; i++) /* insertion sort by address */
		for (int j = i; j > 0 && addr[j - 1] > addr[j]; j--) {
			unsigned long long a = addr[j];
			char t[64];
			addr[j] = addr[j - 1];
			addr[j - 1] = a;
			memcpy(t, names[j], 64);
			memcpy(names[j], names[j - 1], 64);
			memcpy(names[j - 1], t, 64);
		}
	return n;
}

/* An Ampere Altra-shaped tree on the simulated PMU: doctor names arm_dmc620 and every one of
 * the eight channels, opened, with what it counts and its caveat. */
static void test_doctor_ampere_altra(void)
{
	char names[16][64], script[512], path[8400], buf[32];
	int n = altra_channels(names, 16);
	T_EQ_INT(n, 8);
	snprintf(script, sizeof(script), "%s/mw-doctor-altra-%d.script",
		 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	FILE *f = fopen(script, "w");
	T_ASSERT(f != NULL);
	for (int i = 0; f && i < n; i++) {
		/* mask=1 -> config 0x1 for both directions (the sim matches type and config) */
		T_ASSERT(snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s/type",
				  tree("ampere-altra"), names[i]) < (int)sizeof(path));
		FILE *t = fopen(path, "r");
		T_ASSERT(t && fgets(buf, sizeof(buf), t));
		if (t)
			fclose(t);
		fprintf(f, "perf type=%d config=0x1 cpu=* start=0 step=%d\n", atoi(buf), 100 + i);
	}
	if (f)
		fclose(f);
	setenv("MEMWALL_COUNTERS", "sim", 1);
	setenv("MEMWALL_SIM_SCRIPT", script, 1);
	const char *argv[] = { "memwall", "doctor", "--json", "--sysfs", tree("ampere-altra"), NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	json_t *j = parse(&o), *dram = json_object_get(j, "dram");
	T_ASSERT(json_is_true(json_object_get(dram, "available")));
	T_EQ_STR(json_string_value(json_object_get(dram, "backend")), "arm_dmc620");
	json_t *inst = json_object_get(dram, "instances");
	T_EQ_INT(json_array_size(inst), 8);
	for (int i = 0; i < n && i < (int)json_array_size(inst); i++)
		T_EQ_STR(json_string_value(json_array_get(inst, (size_t)i)), names[i]);
	T_ASSERT(json_is_true(json_object_get(dram, "read_write_split")));
	T_CONTAINS(json_string_value(json_object_get(dram, "caveat")), "calibrate");
	json_decref(j);
	t_output_free(&o);

	const char *targv[] = { "memwall", "doctor", "--sysfs", tree("ampere-altra"), NULL };
	o = t_run(targv);
	T_EQ_INT(o.status, 0);
	/* the simulated PMU in the words every surface uses (issue 44): never "sim layer" */
	T_CONTAINS(o.out, "\ncounters:    SIMULATED: memwall's simulated PMU (MEMWALL_COUNTERS=sim) "
			  "replays counts a script gives; nothing below is counted by hardware\n");
	T_ASSERT(!strstr(o.out, "sim layer"));
	T_CONTAINS(o.out, "DRAM:        SIMULATED arm_dmc620: ");
	T_CONTAINS(o.out, ", 8 instances, all opened:");
	for (int i = 0; i < n; i++) {
		char line[128];
		T_ASSERT(snprintf(line, sizeof(line), "\n  %s on cpu 0\n", names[i]) <
			 (int)sizeof(line));
		T_CONTAINS(o.out, line);
	}
	T_CONTAINS(o.out, "\n  counts: read, write, total\n");
	t_output_free(&o);
	unsetenv("MEMWALL_COUNTERS");
	unsetenv("MEMWALL_SIM_SCRIPT");
	unlink(script);

	/* a mesh-only server: the total only, and doctor says what that leaves out */
	const char *gargv[] = { "memwall", "doctor", "--sysfs", tree("graviton3"), NULL };
	T_RUN_EXPECT(gargv, 0,
		     T_LIST("arm_cmn", "counts: total (no read/write split", "caveat: approximate"),
		     NULL);

	/* Grace: both sockets' SCF PMUs, named even where they cannot be opened */
	const char *nargv[] = { "memwall", "doctor", "--json", "--sysfs", tree("nvidia-grace"), NULL };
	o = t_run(nargv);
	j = parse(&o);
	dram = json_object_get(j, "dram");
	T_EQ_STR(json_string_value(json_object_get(dram, "backend")), "nvidia_scf");
	T_EQ_INT(json_array_size(json_object_get(dram, "instances")), 2);
	json_t *on = json_object_get(dram, "opened_on");
	T_EQ_INT(json_integer_value(json_object_get(json_array_get(on, 1), "cpu")), 72);
	json_decref(j);
	t_output_free(&o);
}

static void test_calibrate(void)
{
	/* no DRAM counters: says so and exits 3, before allocating anything */
	const char *argv[] = { "memwall", "calibrate", "--sysfs", tree("this-vm"), NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 3);
	T_CONTAINS(o.err, "no DRAM counters to calibrate");
	T_CONTAINS(o.err, "Virtual machines expose no uncore PMUs");
	t_output_free(&o);

	const char *bargv[] = { "memwall", "calibrate", "--backend", "nope", "--sysfs",
				tree("this-vm"), NULL };
	T_RUN_EXPECT(bargv, 2, NULL, NULL);

	/* the whole path on a file backend that never moves (recorded resctrl counters): the
	 * streams run, nothing is counted, and the error is -100 %, never a made-up match */
	const char *cargv[] = { "memwall", "calibrate", "--json", "--size", "0.01", "--backend",
				"resctrl", "--sysfs", tree("sapphire-rapids"), NULL };
	o = t_run(cargv);
	T_EQ_INT(o.status, 0);
	json_t *j = parse(&o);
	json_t *read = json_object_get(json_object_get(j, "passes"), "read");
	T_EQ_STR(json_string_value(json_object_get(j, "backend")), "resctrl");
	T_ASSERT(json_integer_value(json_object_get(json_object_get(read, "expected"),
						    "read_bytes")) > 5000000);
	T_NEAR(json_real_value(json_object_get(json_object_get(read, "error_pct"), "total")), -100.0,
	       1e-9);
	T_ASSERT(json_is_null(json_object_get(json_object_get(read, "error_pct"), "read")));
	/* no split: the read figure is absent with its state, never a counted 0 */
	T_ASSERT(json_is_null(json_object_get(json_object_get(read, "counted"), "read_bytes")));
	T_EQ_STR(json_string_value(json_object_get(json_object_get(read, "counted_state"), "read")),
		 "not-provided");
	T_EQ_INT(json_integer_value(json_object_get(json_object_get(read, "counted"), "total_bytes")),
		 0);
	T_EQ_STR(json_string_value(json_object_get(json_object_get(read, "counted_state"), "total")),
		 "measured");
	T_EQ_INT(json_array_size(json_object_get(read, "instances")), 2);
	json_decref(j);
	t_output_free(&o);

	const char *margv[] = { "memwall", "calibrate", "--size", "0.01", "--backend", "resctrl",
				"--max-error", "5", "--sysfs", tree("sapphire-rapids"), NULL };
	T_RUN_EXPECT(margv, 1, NULL, T_LIST("exceeds --max-error"));
}

static bool on_vm(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	bool vm = false;
	while (f && fgets(line, sizeof(line), f))
		vm = vm || (!strncmp(line, "flags", 5) && strstr(line, " hypervisor"));
	if (f)
		fclose(f);
	return vm;
}

/* --fix: commands for what was refused, naming this binary; nothing for what is fine. */
static void test_doctor_fix(void)
{
	char bin[PATH_MAX];
	T_ASSERT(realpath(getenv("MEMWALL_BIN"), bin) != NULL);

	/* Every open refused for permission (EACCES), as under perf_event_paranoid 2. */
	setenv("MEMWALL_INJECT_ERRNO", "13", 1);
	const char *argv[] = { "memwall", "doctor", "--fix", "--sysfs", tree("sapphire-rapids"), NULL };
	struct t_output o = t_run(argv);
	unsetenv("MEMWALL_INJECT_ERRNO");
	T_EQ_INT(o.status, 0);
	char want[PATH_MAX + 64];
	snprintf(want, sizeof(want), "=ep %s\n", bin);
	T_CONTAINS(o.out, "sudo setcap cap_");
	T_CONTAINS(o.out, want);
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int paranoid = 2;
	if (f && fscanf(f, "%d", &paranoid) != 1)
		paranoid = 2;
	if (f)
		fclose(f);
	if (paranoid > 0)
		T_CONTAINS(o.out, "\nsudo sysctl -w kernel.perf_event_paranoid=0\n");
	T_ASSERT(strstr(o.out, "modprobe") == NULL); /* refused, not absent: no driver to load */
	t_output_free(&o);

	/* Nothing refused: on a VM (this project's) no command at all, and the reason. */
	const char *vargv[] = { "memwall", "doctor", "--fix", "--sysfs", tree("this-vm"), NULL };
	o = t_run(vargv);
	T_EQ_INT(o.status, 0);
	if (on_vm()) {
		T_ASSERT(strstr(o.out, "sudo ") == NULL);
		T_CONTAINS(o.out, "virtual machine");
	}
	t_output_free(&o);

	const char *jargv[] = { "memwall", "doctor", "--fix", "--json", NULL };
	T_RUN_EXPECT(jargv, 2, NULL, NULL);
}

int main(void)
{
	test_doctor_without_counters();
	test_doctor_fix();
	test_doctor_server_tree();
	test_doctor_quota();
	test_doctor_ampere_altra();
	test_calibrate();
	return t_done();
}
