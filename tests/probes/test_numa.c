/* tests/probes/test_numa.c: probes/numa.c (prb_topology_*) on the recorded trees
 * (tests/data/sysfs/<machine>/devices/system/node, their README says where each came from)
 * and on trees built here: a memory-only node, a node spanning two packages (AMD's NPS0), a
 * tree without node folders, a malformed cpulist. Every expected figure comes from the tree's
 * files, read here, or from the tree's README (CPU counts of the part). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "probes.h"
#include "test.h"

static char root[64];

static const char *tree(const char *name)
{
	static char path[4200];
	snprintf(path, sizeof(path), "%s%s", t_data("sysfs/"), name);
	return path;
}

static struct prb_topology *open_tree(const char *path)
{
	struct prb_topology *t = NULL;
	struct prb_error err = { 0 };
	int rc = prb_topology_new(&t, path, &err);
	if (rc)
		fprintf(stderr, "%s: %s: %s\n", path, err.source, err.text);
	T_EQ_INT(rc, 0);
	return t;
}

/* Sapphire Rapids, two sockets of 56 cores, two threads each (README): node 0 holds socket 0's
 * 112 CPUs, node 1 socket 1's. */
static void test_sapphire_rapids(void)
{
	struct prb_topology *t = open_tree(tree("sapphire-rapids"));
	if (!t)
		return;
	T_EQ_INT(prb_topology_node_count(t), 2);
	const char *why = NULL;
	T_EQ_INT(prb_topology_packages(t, &why), 2);
	T_EQ_STR(why, "");
	for (int i = 0; i < 2; i++) {
		const struct prb_numa_node *n = prb_topology_node(t, i);
		T_EQ_INT(n->id, i);
		T_EQ_INT(n->n_cpus, 112);
		T_EQ_INT(n->package, i);
		T_ASSERT(!n->spans_packages);
		/* socket s: cores s*56 .. s*56+55 and their siblings 112 later */
		T_EQ_INT(n->cpus[0], i * 56);
		T_EQ_INT(n->cpus[56], 112 + i * 56);
	}
	/* meminfo: "Node 0 MemTotal: 527939620 kB" */
	T_EQ_INT(prb_topology_node(t, 0)->mem_bytes, 527939620ll * 1024);
	/* the uncore PMUs' cpumask "0,56": one CPU on each node */
	T_EQ_INT(prb_topology_cpu_node(t, 0), 0);
	T_EQ_INT(prb_topology_cpu_node(t, 56), 1);
	T_EQ_INT(prb_topology_cpu_node(t, 223), 1);
	T_EQ_INT(prb_topology_cpu_node(t, 224), -1);
	T_EQ_INT(prb_topology_cpu_node(t, -1), -1);
	T_ASSERT(prb_topology_node(t, 2) == NULL);
	prb_topology_free(t);
}

/* EPYC 9654 in NPS4: four nodes of 24 cores (48 CPUs), one package. */
static void test_epyc_nps4(void)
{
	struct prb_topology *t = open_tree(tree("amd-epyc-zen4"));
	if (!t)
		return;
	T_EQ_INT(prb_topology_node_count(t), 4);
	T_EQ_INT(prb_topology_packages(t, NULL), 1);
	for (int i = 0; i < 4; i++) {
		T_EQ_INT(prb_topology_node(t, i)->n_cpus, 48);
		T_EQ_INT(prb_topology_node(t, i)->package, 0);
	}
	T_EQ_INT(prb_topology_cpu_node(t, 0), 0); /* amd_umc_*'s cpumask */
	prb_topology_free(t);
}

/* This VM's own /sys, copied: the same answers as the live /sys/devices/system/node. */
static void test_this_vm(void)
{
	struct prb_topology *t = open_tree(tree("this-vm"));
	if (!t)
		return;
	T_EQ_INT(prb_topology_node_count(t), 1);
	T_EQ_INT(prb_topology_packages(t, NULL), 1);
	char text[256] = "";
	FILE *f = fopen(t_data("sysfs/this-vm/devices/system/node/node0/cpulist"), "r");
	T_ASSERT(f && fgets(text, sizeof(text), f));
	if (f)
		fclose(f);
	int lo = 0, hi = 0; /* this VM: "0-1" */
	T_EQ_INT(sscanf(text, "%d-%d", &lo, &hi), 2);
	T_EQ_INT(prb_topology_node(t, 0)->n_cpus, hi - lo + 1);
	prb_topology_free(t);
}

/* A tree without node folders: no nodes, with the reason; never an error. */
static void test_no_nodes(void)
{
	struct prb_topology *t = open_tree(tree("granite-rapids"));
	if (!t)
		return;
	T_EQ_INT(prb_topology_node_count(t), 0);
	T_CONTAINS(prb_topology_why(t), "devices/system/node");
	T_CONTAINS(prb_topology_why(t), "CONFIG_NUMA");
	const char *why = NULL;
	T_EQ_INT(prb_topology_packages(t, &why), 0);
	T_CONTAINS(why, "CONFIG_NUMA");
	T_EQ_INT(prb_topology_cpu_node(t, 0), -1);
	prb_topology_free(t);
}

/* Built here: AMD's NPS0 (one node over both sockets), a CXL memory-only node, then a
 * malformed cpulist. */
static void test_built(void)
{
	t_put(root, "/devices/system/node/node0/cpulist", "0-7\n");
	t_put(root, "/devices/system/node/node0/meminfo", "Node 0 MemTotal:       1024 kB\n");
	t_put(root, "/devices/system/node/node2/cpulist", "\n");
	t_put(root, "/devices/system/node/node2/meminfo", "Node 2 MemTotal:       2048 kB\n");
	t_put(root, "/devices/system/cpu/cpu0/topology/physical_package_id", "0\n");
	t_put(root, "/devices/system/cpu/cpu0/topology/package_cpus_list", "0-3\n");
	struct prb_topology *t = open_tree(root);
	if (t) {
		T_EQ_INT(prb_topology_node_count(t), 2);
		const struct prb_numa_node *n0 = prb_topology_node(t, 0), *n2 = prb_topology_node(t, 1);
		T_ASSERT(n0->spans_packages); /* CPUs 4-7 are not in package 0's 0-3 */
		T_EQ_INT(n2->id, 2);
		T_EQ_INT(n2->n_cpus, 0);
		T_EQ_INT(n2->mem_bytes, 2048 * 1024);
		T_EQ_INT(n2->package, -1);
		T_EQ_INT(prb_topology_packages(t, NULL), 1);
		prb_topology_free(t);
	}
	/* unset: $MEMWALL_SYSFS_ROOT names the root, as for prb_system_open */
	setenv("MEMWALL_SYSFS_ROOT", root, 1);
	t = open_tree(NULL);
	if (t) {
		T_EQ_STR(prb_topology_root(t), root);
		prb_topology_free(t);
	}
	unsetenv("MEMWALL_SYSFS_ROOT");
	t_put(root, "/devices/system/node/node2/cpulist", "0-x\n");
	struct prb_error err = { 0 };
	t = NULL;
	T_EQ_INT(prb_topology_new(&t, root, &err), -EINVAL);
	T_ASSERT(t == NULL);
	T_CONTAINS(err.source, "devices/system/node");
	T_CONTAINS(err.text, "node2/cpulist");
}

int main(void)
{
	t_scratch(root, sizeof(root), "numa");
	test_sapphire_rapids();
	test_epyc_nps4();
	test_this_vm();
	test_no_nodes();
	test_built();
	return t_done_rm(root, 0);
}
