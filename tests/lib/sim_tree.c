/* tests/lib/sim_tree.c: recorded sysfs trees and the simulated PMU's environment (sim_tree.h). */
#include "sim_tree.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "probes.h"
#include "test.h"

const char *t_tree_file(const char *tree, const char *pmu, const char *file)
{
	static char path[8192];
	snprintf(path, sizeof(path), "%s%s/bus/event_source/devices/%s/%s", t_data("sysfs/"), tree,
		 pmu, file);
	return path;
}

bool t_read_text(const char *path, char *buf, size_t n)
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

uint32_t t_pmu_type(const char *tree, const char *pmu)
{
	char buf[32] = "";
	T_ASSERT(t_read_text(t_tree_file(tree, pmu, "type"), buf, sizeof(buf)));
	return (uint32_t)strtoul(buf, NULL, 10);
}

double t_alias_bytes(const char *tree, const char *pmu, const char *alias)
{
	char name[128], scale[64] = "", unit[16] = "";
	snprintf(name, sizeof(name), "events/%s.scale", alias);
	T_ASSERT(t_read_text(t_tree_file(tree, pmu, name), scale, sizeof(scale)));
	snprintf(name, sizeof(name), "events/%s.unit", alias);
	T_ASSERT(t_read_text(t_tree_file(tree, pmu, name), unit, sizeof(unit)));
	T_EQ_STR(unit, "MiB");
	return strtod(scale, NULL) * 1048576.0;
}

void t_sim_env(const char *tree, const char *script)
{
	if (tree) {
		char root[4200];
		snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), tree);
		setenv("MEMWALL_SYSFS_ROOT", root, 1);
	}
	setenv("MEMWALL_COUNTERS", "sim", 1);
	setenv("MEMWALL_SIM_SCRIPT", script, 1);
}

void t_no_counters_env(void)
{
	setenv("MEMWALL_SYSFS_ROOT", t_data("sysfs/this-vm"), 1);
	setenv("MEMWALL_COUNTERS", "syscall", 1);
}

struct prb_system *t_system_open(const char *tree)
{
	struct prb_system *sys = NULL;
	struct prb_error err = { 0 };
	char root[4096];
	snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), tree);
	int rc = prb_system_open(&sys, root, &err);
	if (rc)
		fprintf(stderr, "%s: %s\n", err.source, err.text);
	T_EQ_INT(rc, 0);
	return sys;
}

uint64_t t_al_calib_script(const char *path, uint64_t rd[2], uint64_t wr[2])
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t unit6 = 6 * (uint64_t)page, asked = (uint64_t)(0.001 * 1073741824.0);
	uint64_t ws = (asked + unit6 - 1) / unit6 * unit6;
	uint64_t rd_counts = ws * 5 / 4 / 64, wr_counts = ws / 2 / 64;
	T_EQ_U64(rd_counts * 64 * 4, ws * 5); /* whole counts: the arithmetic is exact */
	T_EQ_U64(wr_counts * 64 * 2, ws);
	rd[0] = rd_counts * 3 / 4;
	rd[1] = rd_counts - rd[0];
	wr[0] = wr_counts / 2;
	wr[1] = wr_counts - wr[0];
	FILE *f = fopen(path, "w");
	T_ASSERT(f != NULL);
	if (!f)
		exit(1);
	for (int i = 0; i < 2; i++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", i);
		uint32_t type = t_pmu_type("arrow-lake", pmu);
		fprintf(f, "perf type=%u config=0x20ff cpu=* start=0 step=%" PRIu64 "\n", type,
			rd[i]);
		fprintf(f, "perf type=%u config=0x30ff cpu=* start=0 step=%" PRIu64 "\n", type,
			wr[i]);
	}
	fclose(f);
	return ws;
}
