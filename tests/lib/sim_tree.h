/* tests/lib/sim_tree.h: what a recorded sysfs tree (tests/data/sysfs/<tree>) says, read by the
 * tests themselves, never through the probes or memwall, so that the simulated-PMU tests
 * (test_counter_sim.c, test_run_sim.c) check the code against arithmetic of their own.
 * Include after test.h. */
#ifndef MEMWALL_TEST_SIM_TREE_H
#define MEMWALL_TEST_SIM_TREE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* <tree>/bus/event_source/devices/<pmu>/<file>; static storage, overwritten by the next call */
static inline const char *tree_file(const char *tree, const char *pmu, const char *file)
{
	static char path[8192];
	snprintf(path, sizeof(path), "%s%s/bus/event_source/devices/%s/%s", t_data("sysfs/"), tree,
		 pmu, file);
	return path;
}

static inline bool read_text(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t got = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[got] = '\0';
	while (got && (buf[got - 1] == '\n' || buf[got - 1] == ' '))
		buf[--got] = '\0';
	return true;
}

static inline uint32_t pmu_type(const char *tree, const char *pmu)
{
	char buf[32] = "";
	T_ASSERT(read_text(tree_file(tree, pmu, "type"), buf, sizeof(buf)));
	return (uint32_t)strtoul(buf, NULL, 10);
}

/* .scale times the bytes in .unit: the kernel's 6.103515625e-5 MiB is 2^-14 * 2^20 = 64 */
static inline double alias_bytes(const char *tree, const char *pmu, const char *alias)
{
	char name[128], scale[64] = "", unit[16] = "";
	snprintf(name, sizeof(name), "events/%s.scale", alias);
	T_ASSERT(read_text(tree_file(tree, pmu, name), scale, sizeof(scale)));
	snprintf(name, sizeof(name), "events/%s.unit", alias);
	T_ASSERT(read_text(tree_file(tree, pmu, name), unit, sizeof(unit)));
	T_EQ_STR(unit, "MiB");
	return strtod(scale, NULL) * 1048576.0;
}

#endif
