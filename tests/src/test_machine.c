/* tests/src/test_machine.c: src/base/machine.c against a tiny recorded tree (written here into a scratch
 * root): fields it can read are filled, the rest are null with a reason; and the live machine
 * yields a description with every field present. */
#include <sys/stat.h>
#include <unistd.h>

#include "machine.h"
#include "test.h"

static char root[256];

static void put(const char *rel, const char *text)
{
	t_put(root, rel, text);
}

static void test_recorded(void)
{
	put("/proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n"
			     "model\t\t: 198\nmodel name\t: Intel(R) Core(TM) Ultra 7 265K\n"
			     "stepping\t: 2\nmicrocode\t: 0x114\nflags\t\t: fpu sse2 avx2\n\n"
			     "processor\t: 1\nmodel name\t: ignored second block\n");
	put("/proc/meminfo", "MemTotal:       65536000 kB\nMemAvailable:   60000000 kB\n");
	put("/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=UUID=secret mitigations=off isolcpus=2-3 quiet");
	put("/sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
	put("/sys/devices/system/cpu/intel_pstate/no_turbo", "1\n");
	put("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
	put("/sys/devices/system/cpu/cpu0/cache/index0/level", "1\n");
	put("/sys/devices/system/cpu/cpu0/cache/index0/type", "Data\n");
	put("/sys/devices/system/cpu/cpu0/cache/index0/size", "48K\n");
	put("/sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_list", "0\n");
	put("/sys/devices/system/cpu/cpu0/cache/index1/level", "3\n");
	put("/sys/devices/system/cpu/cpu0/cache/index1/type", "Unified\n");
	put("/sys/devices/system/cpu/cpu0/cache/index1/size", "30M\n");
	put("/sys/devices/system/cpu/cpu0/cache/index1/shared_cpu_list", "0-19\n");
	/* a container of cgroup v2 limited to 2.5 CPUs (src/base/cgroup.c; tests/src/test_cgroup.c) */
	t_cgroup_tree(root, "250000 100000\n");

	json_t *m = mw_machine_describe(root);
	T_ASSERT(m != NULL);
	if (!m)
		return;
	T_EQ_STR(json_string_value(json_object_get(m, "cpu_name")), "Intel(R) Core(TM) Ultra 7 265K");
	T_EQ_INT(json_integer_value(json_object_get(m, "cpu_family")), 6);
	T_EQ_INT(json_integer_value(json_object_get(m, "cpu_model")), 198);
	T_EQ_INT(json_integer_value(json_object_get(m, "cpu_stepping")), 2);
	T_EQ_STR(json_string_value(json_object_get(m, "microcode")), "0x114");
	T_ASSERT(json_is_false(json_object_get(m, "hypervisor")));
	T_EQ_INT(json_integer_value(json_object_get(m, "mem_total_bytes")), 65536000LL * 1024);
	T_EQ_STR(json_string_value(json_object_get(m, "thp")), "madvise");
	T_EQ_STR(json_string_value(json_object_get(m, "governor")), "performance");
	T_ASSERT(json_is_false(json_object_get(m, "boost"))); /* no_turbo = 1 */
	const json_t *caches = json_object_get(m, "caches");
	T_EQ_INT(json_array_size(caches), 2);
	T_EQ_INT(json_integer_value(json_object_get(json_array_get(caches, 1), "size_bytes")),
		 30 << 20);
	/* Only performance-relevant parameters are kept: not root=UUID=... */
	const json_t *cmd = json_object_get(m, "kernel_cmdline_perf");
	T_EQ_STR(json_string_value(json_object_get(cmd, "mitigations")), "off");
	T_EQ_STR(json_string_value(json_object_get(cmd, "isolcpus")), "2-3");
	T_ASSERT(json_object_get(cmd, "root") == NULL);
	T_EQ_STR(json_string_value(json_object_get(json_object_get(m, "mitigations"),
						   "cmdline_parameter")), "off");
	/* Absent files: null, with the reason in "unavailable". */
	const json_t *why = json_object_get(m, "unavailable");
	T_ASSERT(json_is_null(json_object_get(m, "perf_event_paranoid")));
	T_CONTAINS(json_string_value(json_object_get(why, "perf_event_paranoid")),
		   "/proc/sys/kernel/perf_event_paranoid");
	T_ASSERT(json_is_null(json_object_get(m, "clocksource")));
	T_ASSERT(json_is_string(json_object_get(why, "clocksource")));
	/* the quota, and the warning a run prints about it */
	const json_t *quota = json_object_get(m, "cpu_quota");
	T_NEAR(json_number_value(json_object_get(quota, "cpus")), 250000.0 / 100000.0, 1e-12);
	T_EQ_STR(json_string_value(json_object_get(quota, "file")), "/sys/fs/cgroup/cpu.max");
	T_EQ_STR(json_string_value(json_object_get(quota, "value")), "250000 100000");
	json_t *w = json_array();
	mw_machine_warnings(w, m);
	bool said = false;
	const char *want = "CPU quota of 2.50 CPUs (/sys/fs/cgroup/cpu.max: 250000 100000)";
	for (size_t i = 0; i < json_array_size(w); i++)
		said |= strstr(json_string_value(json_array_get(w, i)), want) != NULL;
	T_ASSERT(said);
	json_decref(w);
	/* no quota: cpus null and why */
	put("/sys/fs/cgroup/cpu.max", "max 100000\n");
	json_decref(m);
	m = mw_machine_describe(root);
	quota = json_object_get(m, "cpu_quota");
	T_ASSERT(json_is_null(json_object_get(quota, "cpus")));
	T_CONTAINS(json_string_value(json_object_get(quota, "why")), "no CPU quota");
	json_decref(m);
}

/* The live machine: every field is a value or null with a reason, never missing. */
static void test_live(void)
{
	static const char *const fields[] = { "cpu_name", "cpu_vendor", "cpu_family", "microcode",
					      "logical_cpus", "physical_cores", "sockets", "smt",
					      "caches", "numa_nodes", "topology", "mem_total_bytes", "kernel",
					      "governor", "boost", "thp", "perf_event_paranoid",
					      "clocksource", "threads_per_core" };
	json_t *m = mw_machine_describe(NULL);
	T_ASSERT(m != NULL);
	const json_t *why = json_object_get(m, "unavailable");
	for (size_t i = 0; m && i < sizeof(fields) / sizeof(fields[0]); i++) {
		const json_t *v = json_object_get(m, fields[i]);
		T_ASSERT(v != NULL);
		if (json_is_null(v) && !json_is_string(json_object_get(why, fields[i])))
			T_FAIL_AT(__FILE__, __LINE__, "%s is null without a reason", fields[i]);
	}
	T_ASSERT(json_integer_value(json_object_get(m, "logical_cpus")) >= 1);
	json_decref(m);
	double busy = -1;
	T_EQ_INT(mw_machine_busy_pct(50, &busy), 0);
	T_ASSERT(busy >= 0 && busy <= 100);
}

int main(void)
{
	t_scratch(root, sizeof(root), "machine");
	test_recorded();
	test_live();
	return t_done_rm(root, 0);
}
