/* tests/src/test_topology.c: src/base/topology.c, the topology object of records and doctor,
 * on the recorded trees (tests/data/sysfs/<machine>; each tree's README row says where it
 * came from) and on trees built here. Every expected figure is read here from the tree's own
 * files (cpulists, cpumasks, EDAC's dimm_location) or stated by the tree's README (the part's
 * NUMA split), never taken from the code under test. */
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "machine.h"
#include "probes.h"
#include "test.h"
#include "topology.h"
#include "sim_tree.h"

static char root[64];

static const char *tree(const char *name)
{
	static char path[4200];
	snprintf(path, sizeof(path), "%s%s", t_data("sysfs/"), name);
	return path;
}

static const char *str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "(null)";
}

/* The CPUs of a list "0-3,8" into set[] (1 = in the list). */
static void parse_list(const char *text, char *set, int max)
{
	for (const char *p = text; *p;) {
		int lo = atoi(p), hi = lo;
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p == '-') {
			hi = atoi(++p);
			while (*p >= '0' && *p <= '9')
				p++;
		}
		for (int c = lo; c <= hi && c < max; c++)
			set[c] = 1;
		if (*p == ',')
			p++;
		else
			break;
	}
}

/* Controller instances on node `node` of a tree: every CPU of every uncore_imc_<N> cpumask
 * that lies in the node's cpulist, read from the files. */
static int imc_instances_on(const char *name, int node, const char *prefix)
{
	char path[4400], text[4096] = "", in_node[4096] = { 0 };
	snprintf(path, sizeof(path), "%s/devices/system/node/node%d/cpulist", tree(name), node);
	T_ASSERT(t_read_text(path, text, sizeof(text)));
	parse_list(text, in_node, (int)sizeof(in_node));
	snprintf(path, sizeof(path), "%s/bus/event_source/devices", tree(name));
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		char mask[256] = "", set[4096] = { 0 };
		T_ASSERT(t_read_text(t_tree_file(name, de->d_name, "cpumask"), mask, sizeof(mask)));
		parse_list(mask, set, (int)sizeof(set));
		for (int c = 0; c < 4096; c++)
			n += set[c] && in_node[c];
	}
	if (d)
		closedir(d);
	return n;
}

/* EDAC's populated channels in a tree: distinct (mcN, "channel K") over dimm_location. */
static int edac_channels(const char *name)
{
	int n = 0;
	for (int mc = 0; mc < 64; mc++) {
		int seen[64] = { 0 };
		for (int k = 0; k < 64; k++) {
			char path[4400], loc[128] = "";
			snprintf(path, sizeof(path), "%s/devices/system/edac/mc/mc%d/dimm%d/dimm_location",
				 tree(name), mc, k);
			if (!t_read_text(path, loc, sizeof(loc)))
				continue;
			const char *c = strstr(loc, "channel ");
			int ch = c ? atoi(c + 8) : -1;
			if (ch >= 0 && ch < 64 && !seen[ch]++)
				n++;
		}
	}
	return n;
}

static void test_sapphire_rapids(void)
{
	const char *name = "sapphire-rapids";
	json_t *t = mw_topology_describe(tree(name), NULL, NULL);
	T_ASSERT(t != NULL);
	if (!t)
		return;
	const json_t *nodes = json_object_get(t, "nodes");
	T_EQ_INT(json_array_size(nodes), 2);
	for (int i = 0; i < 2; i++) {
		char path[4400], text[256] = "";
		snprintf(path, sizeof(path), "%s/devices/system/node/node%d/cpulist", tree(name), i);
		T_ASSERT(t_read_text(path, text, sizeof(text)));
		T_EQ_STR(str(json_array_get(nodes, (size_t)i), "cpus"), text);
		T_EQ_INT(json_integer_value(json_object_get(json_array_get(nodes, (size_t)i),
							    "package")), i);
	}
	T_EQ_INT(json_integer_value(json_object_get(t, "packages")), 2);
	/* one node per socket on an Intel part: SNC is off (the backend names the vendor) */
	const json_t *mode = json_object_get(t, "numa_mode");
	T_EQ_STR(str(mode, "name"), "SNC off");
	T_EQ_INT(json_integer_value(json_object_get(mode, "nodes_per_package")), 1);
	T_CONTAINS(str(mode, "basis"), "inferred");
	/* channels: EDAC lists populated ones; present stays unknown, with why */
	const json_t *ch = json_object_get(t, "channels");
	T_EQ_INT(json_integer_value(json_object_get(ch, "populated")), edac_channels(name));
	T_EQ_INT(edac_channels(name), 16);
	T_EQ_STR(str(ch, "source"), "EDAC dimm_location");
	T_ASSERT(json_is_null(json_object_get(ch, "present")));
	T_CONTAINS(str(ch, "why"), "unknown, because");
	T_CONTAINS(str(ch, "why"), "EDAC lists no empty slot");
	/* the controllers: each instance on the node of its cpumask CPU */
	const json_t *ctl = json_object_get(t, "controllers");
	T_EQ_STR(str(ctl, "backend"), "intel_imc_cas");
	T_EQ_STR(str(ctl, "attribution"), "node");
	const json_t *per = json_object_get(ctl, "per_node");
	T_EQ_INT(json_array_size(per), 2);
	for (int i = 0; i < 2; i++)
		T_EQ_INT(json_integer_value(json_object_get(json_array_get(per, (size_t)i),
							    "instances")),
			 imc_instances_on(name, i, "uncore_imc_"));
	T_EQ_INT(imc_instances_on(name, 1, "uncore_imc_"), 16);
	const json_t *in = json_array_get(json_object_get(ctl, "instances"), 1);
	T_EQ_STR(str(in, "name"), "uncore_imc_0@cpu56");
	T_EQ_INT(json_integer_value(json_object_get(in, "node")), 1);
	json_decref(t);
}

/* EPYC 9654 in NPS4 (the tree's README): the UMCs' cpumask names CPU 0 for the whole socket,
 * so which node each serves is unknown, and says why. */
static void test_epyc_nps4(void)
{
	json_t *t = mw_topology_describe(tree("amd-epyc-zen4"), NULL, NULL);
	T_ASSERT(t != NULL);
	if (!t)
		return;
	T_EQ_INT(json_array_size(json_object_get(t, "nodes")), 4);
	T_EQ_STR(str(json_object_get(t, "numa_mode"), "name"), "NPS4");
	T_CONTAINS(str(json_object_get(t, "numa_mode"), "basis"), "L3 as NUMA");
	const json_t *ctl = json_object_get(t, "controllers");
	T_EQ_STR(str(ctl, "backend"), "amd_umc");
	T_EQ_STR(str(ctl, "attribution"), "package");
	T_CONTAINS(str(ctl, "why"), "unknown, because package 0 holds 4 nodes");
	T_EQ_INT(json_array_size(json_object_get(ctl, "per_node")), 0);
	T_EQ_STR(str(json_array_get(json_object_get(ctl, "instances"), 0), "attribution"),
		 "package");
	json_decref(t);
}

/* A tree without node folders (granite-rapids): every part unknown, because ... */
static void test_no_nodes(void)
{
	json_t *t = mw_topology_describe(tree("granite-rapids"), "GenuineIntel", NULL);
	T_ASSERT(t != NULL);
	if (!t)
		return;
	T_ASSERT(json_is_null(json_object_get(t, "nodes")));
	T_CONTAINS(str(t, "nodes_why"), "CONFIG_NUMA");
	T_ASSERT(json_is_null(json_object_get(t, "packages")));
	T_ASSERT(json_is_null(json_object_get(json_object_get(t, "numa_mode"), "name")));
	T_CONTAINS(str(json_object_get(t, "numa_mode"), "why"), "unknown, because");
	T_EQ_STR(str(json_object_get(t, "controllers"), "attribution"), "unknown");
	T_CONTAINS(str(json_object_get(t, "controllers"), "why"), "unknown, because");
	json_decref(t);
}

/* Built here: no DRAM backend, so the vendor names the split; an SMBIOS table gives channels
 * present and populated (tests/data/smbios/README.md: 2 channels, each with a module). */
static void test_built(void)
{
	t_put(root, "/devices/system/node/node0/cpulist", "0-3\n");
	t_put(root, "/devices/system/node/node1/cpulist", "4-7\n");
	t_put(root, "/devices/system/cpu/cpu0/topology/physical_package_id", "0\n");
	t_put(root, "/devices/system/cpu/cpu4/topology/physical_package_id", "0\n");
	static const struct {
		const char *vendor, *name;
	} cases[] = { { "GenuineIntel", "SNC2" }, { "AuthenticAMD", "NPS2" }, { NULL, NULL } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *t = mw_topology_describe(root, cases[i].vendor, NULL);
		const json_t *mode = json_object_get(t, "numa_mode");
		if (cases[i].name)
			T_EQ_STR(str(mode, "name"), cases[i].name);
		else
			T_CONTAINS(str(mode, "why"), "vendor is unknown");
		T_EQ_INT(json_integer_value(json_object_get(mode, "nodes_per_package")), 2);
		T_CONTAINS(str(json_object_get(t, "controllers"), "why"), "no DRAM backend");
		json_decref(t);
	}
	char src[4200], dst[200], cmd[8600];
	snprintf(src, sizeof(src), "%s", t_data("smbios/two-channel-ddr5.bin"));
	snprintf(dst, sizeof(dst), "%s/firmware/dmi/tables", root);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s' '%s/DMI'", dst, src, dst);
	T_EQ_INT(system(cmd), 0);
	json_t *t = mw_topology_describe(root, "GenuineIntel", NULL);
	const json_t *ch = json_object_get(t, "channels");
	T_EQ_INT(json_integer_value(json_object_get(ch, "populated")), 2);
	T_EQ_INT(json_integer_value(json_object_get(ch, "present")), 2);
	T_EQ_STR(str(ch, "source"), "SMBIOS type 17 locators");
	T_ASSERT(json_is_null(json_object_get(ch, "why")));
	json_decref(t);

	/* the machine's description carries it, from root's sys/ */
	char mroot[128];
	snprintf(mroot, sizeof(mroot), "%s/machine", root);
	t_put(mroot, "/sys/devices/system/node/node0/cpulist", "0-1\n");
	json_t *m = mw_machine_describe(mroot);
	T_EQ_INT(json_array_size(json_object_get(json_object_get(m, "topology"), "nodes")), 1);
	json_decref(m);
}

static void test_cpulist(void)
{
	char buf[64];
	static const int cpus[] = { 0, 1, 2, 5, 7, 8 };
	mw_cpulist_format(cpus, 6, buf, sizeof(buf));
	T_EQ_STR(buf, "0-2,5,7-8");
	mw_cpulist_format(cpus, 0, buf, sizeof(buf));
	T_EQ_STR(buf, "");
}

int main(void)
{
	t_scratch(root, sizeof(root), "topology");
	test_sapphire_rapids();
	test_epyc_nps4();
	test_no_nodes();
	test_built();
	test_cpulist();
	return t_done_rm(root, 0);
}
