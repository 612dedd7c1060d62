/* tests/lib/sim_tree.c: recorded sysfs trees and the simulated PMU's environment (sim_tree.h). */
#include "sim_tree.h"

#include <stdio.h>
#include <stdlib.h>

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
