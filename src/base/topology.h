/* src/base/topology.h: the machine's memory topology for records, doctor and verify: NUMA
 * nodes with their CPUs and memory, the firmware's NUMA split (AMD NPS, Intel SNC) where it
 * can be derived, memory channels present and populated (SMBIOS type 17, EDAC), and which
 * memory-controller PMU instance serves which node. Every answer that cannot be read says
 * "unknown, because ...".
 *
 * Everything is read from one sysfs root (the one the PMUs are read from: --sysfs,
 * $MEMWALL_SYSFS_ROOT, else /sys), so a recorded tree under tests/data/sysfs describes its
 * machine whole. The JSON layout is documented in results/README.md ("Topology") and
 * results/result.schema.json ($defs.topology).
 */
#ifndef MEMWALL_TOPOLOGY_H
#define MEMWALL_TOPOLOGY_H

#include <jansson.h>
#include <stdio.h>

#include "probes.h"

/* How precisely a controller instance is tied to a node. */
enum mw_topo_level {
	MW_TOPO_NODE,    /* its package has one node: the instance serves that node */
	MW_TOPO_PACKAGE, /* its package has several nodes (SNC, NPS2/4): it serves one of them,
			  * and sysfs does not say which (the PMU's cpumask names one CPU per
			  * package) */
	MW_TOPO_UNKNOWN, /* no node lists its CPU, or it has none (a file counter: resctrl) */
};

struct mw_topo_instance {
	int node;    /* the node whose cpulist holds the instance's CPU; -1 unknown */
	int package; /* that node's package; -1 unknown */
	enum mw_topo_level level;
};

/* Ties each of st's instances to a node (out[0 .. st->n_instances)). Returns the coarsest
 * level over the instances, with why[0..n) saying why when it is not MW_TOPO_NODE. */
enum mw_topo_level mw_topology_attribute(const struct prb_topology *t,
					 const struct prb_dram_status *st,
					 struct mw_topo_instance *out, char *why, size_t n);

/* "node", "package", "unknown". Static storage. */
const char *mw_topo_level_name(enum mw_topo_level l);

/* The ids of the nodes with CPUs in package (at most max) into ids; returns how many. */
int mw_topology_package_nodes(const struct prb_topology *t, int package, int *ids, int max);

/* A CPU list as ranges ("0-55,112-167") into buf. */
void mw_cpulist_format(const int *cpus, int n, char *buf, size_t size);

/* The topology object: {"source", "nodes": [{"id", "cpus", "n_cpus", "mem_bytes",
 * "package"}] | null, "nodes_why", "packages", "packages_why", "memory_only_nodes",
 * "numa_mode": {"name", "nodes_per_package", "basis", "why"}, "channels": {"present",
 * "populated", "source", "why", "smbios", "edac"}, "controllers": {"backend", "attribution",
 * "why", "instances": [{"name", "pmu", "cpu", "node", "package", "attribution"}],
 * "per_node": [{"node", "instances"}]}}.
 * root: the sysfs root (NULL: $MEMWALL_SYSFS_ROOT, else /sys); vendor: the CPU's vendor_id
 * (may be NULL; the DRAM backend's family is used first); st: the DRAM backend's instances
 * (NULL: probed here, nothing opened). New reference; NULL only when memory runs out. */
json_t *mw_topology_describe(const char *root, const char *vendor,
			     const struct prb_dram_status *st);

/* The object above as a few indented lines (doctor's report). */
void mw_topology_print(FILE *f, const json_t *topo);

#endif
