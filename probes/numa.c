/* probes/numa.c: the NUMA nodes under <sysfs>/devices/system/node and the package each
 * belongs to (probes.h, "topology").
 *
 * The files are the kernel's documented interfaces: Documentation/ABI/stable/
 * sysfs-devices-node (nodeN/cpulist, nodeN/meminfo) and Documentation/ABI/stable/
 * sysfs-devices-system-cpu (cpuN/topology/physical_package_id, package_cpus_list; before
 * Linux 5.4 the same list was named core_siblings_list). Every path starts at the sysfs root
 * the PMUs are read from, so a recorded tree (tests/data/sysfs/<machine>) gives the same
 * answers the machine would.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct prb_topology {
	char root[512];
	int n_nodes;
	struct prb_numa_node *nodes; /* sorted by id */
	int n_packages;
	char why[1400];
	char package_why[1400];
};

static int node_cmp(const void *a, const void *b)
{
	const struct prb_numa_node *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* "Node 0 MemTotal:       24683784 kB" (drivers/base/node.c, node_read_meminfo) */
static int64_t node_mem(const char *path)
{
	char buf[4096];
	if (prb_sysfs_read(path, buf, sizeof(buf), NULL) < 0)
		return -1;
	const char *p = strstr(buf, "MemTotal:");
	if (!p)
		return -1;
	p += strlen("MemTotal:");
	char *end = NULL;
	long long kb = strtoll(p, &end, 10);
	if (end == p || kb < 0)
		return -1;
	while (*end == ' ')
		end++;
	return strncmp(end, "kB", 2) ? -1 : (int64_t)kb * 1024;
}

/* The package of node n's first CPU, and whether every CPU of the node lies in it. */
static void node_package(struct prb_topology *t, struct prb_numa_node *n)
{
	char path[1024], buf[4096];
	n->package = -1;
	if (!n->n_cpus)
		return;
	int cpu = n->cpus[0];
	if (fmt_into(path, "%s/devices/system/cpu/cpu%d/topology/physical_package_id", t->root,
		     cpu) ||
	    prb_sysfs_read(path, buf, sizeof(buf), NULL) < 0) {
		snprintf(t->package_why, sizeof(t->package_why), "%s is unreadable (a kernel "
			 "without CPU topology, or a tree without it)", path);
		return;
	}
	char *end = NULL;
	long id = strtol(buf, &end, 10);
	if (end == buf || *end || id < 0) {
		snprintf(t->package_why, sizeof(t->package_why), "%s: \"%.64s\" is not a package id",
			 path, buf);
		return;
	}
	n->package = (int)id;
	int *pk = NULL, npk = 0;
	if ((fmt_into(path, "%s/devices/system/cpu/cpu%d/topology/package_cpus_list", t->root,
		      cpu) || prb_sysfs_read(path, buf, sizeof(buf), NULL) < 0) &&
	    (fmt_into(path, "%s/devices/system/cpu/cpu%d/topology/core_siblings_list", t->root,
		      cpu) || prb_sysfs_read(path, buf, sizeof(buf), NULL) < 0))
		return; /* the package's id is known; whether the node spans two is not */
	if (prb_cpulist_parse(buf, &pk, &npk, path, NULL) < 0)
		return;
	for (int i = 0; i < n->n_cpus && !n->spans_packages; i++) {
		bool in = false;
		for (int j = 0; j < npk && !in; j++)
			in = pk[j] == n->cpus[i];
		n->spans_packages = !in;
	}
	free(pk);
}

static int read_node(struct prb_topology *t, const char *dir, int id, struct prb_numa_node *n)
{
	char path[1024], buf[8192];
	memset(n, 0, sizeof(*n));
	n->id = id;
	n->mem_bytes = -1;
	if (fmt_into(path, "%s/node%d/cpulist", dir, id) < 0)
		return -ENAMETOOLONG;
	int len = prb_sysfs_read(path, buf, sizeof(buf), NULL);
	/* an empty cpulist is a memory-only node (CXL, HBM in flat mode) */
	if (len > 0 && prb_cpulist_parse(buf, &n->cpus, &n->n_cpus, path, NULL) < 0)
		return -EINVAL;
	if (fmt_into(path, "%s/node%d/meminfo", dir, id) == 0)
		n->mem_bytes = node_mem(path);
	node_package(t, n);
	return 0;
}

static void count_packages(struct prb_topology *t)
{
	int seen[256], n = 0;
	for (int i = 0; i < t->n_nodes; i++) {
		const struct prb_numa_node *nd = &t->nodes[i];
		if (!nd->n_cpus)
			continue;
		if (nd->package < 0) {
			t->n_packages = 0;
			return;
		}
		bool dup = false;
		for (int j = 0; j < n && !dup; j++)
			dup = seen[j] == nd->package;
		if (!dup && n < (int)ARRAY_SIZE(seen))
			seen[n++] = nd->package;
	}
	t->n_packages = n;
	if (!n && !t->package_why[0])
		snprintf(t->package_why, sizeof(t->package_why), "no node lists a CPU");
}

int prb_topology_new(struct prb_topology **out, const char *root, struct prb_error *err)
{
	struct prb_topology *t = calloc(1, sizeof(*t));
	char dir[1024];
	DIR *d = NULL;
	int rc = 0;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	if (!root || !*root)
		root = getenv("MEMWALL_SYSFS_ROOT");
	snprintf(t->root, sizeof(t->root), "%s", root && *root ? root : "/sys");
	if (fmt_into(dir, "%s/devices/system/node", t->root) < 0) {
		rc = prb_error_set(err, -ENAMETOOLONG, t->root, "the sysfs root is too long");
		goto out;
	}
	if (!(d = opendir(dir))) {
		snprintf(t->why, sizeof(t->why), "%s: %s (a kernel without CONFIG_NUMA, or a "
			 "recorded tree without it)", dir, strerror(errno));
		goto done;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end = NULL;
		if (strncmp(de->d_name, "node", 4) || !isdigit((unsigned char)de->d_name[4]))
			continue;
		long id = strtol(de->d_name + 4, &end, 10);
		if (*end || id < 0 || id > 65535)
			continue;
		struct prb_numa_node *nn = realloc(t->nodes, (size_t)(t->n_nodes + 1) * sizeof(*nn));
		if (!nn) {
			rc = -ENOMEM;
			goto out;
		}
		t->nodes = nn;
		if ((rc = read_node(t, dir, (int)id, &t->nodes[t->n_nodes])) < 0) {
			prb_error_set(err, rc, dir, "node%ld/cpulist is not a CPU list", id);
			goto out;
		}
		t->n_nodes++;
	}
	if (!t->n_nodes)
		snprintf(t->why, sizeof(t->why), "%s lists no nodeN folder", dir);
	qsort(t->nodes, (size_t)t->n_nodes, sizeof(*t->nodes), node_cmp);
	count_packages(t);
done:
	*out = t;
	t = NULL;
out:
	if (d)
		closedir(d);
	prb_topology_free(t);
	return rc;
}

void prb_topology_free(struct prb_topology *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n_nodes; i++)
		free(t->nodes[i].cpus);
	free(t->nodes);
	free(t);
}

const char *prb_topology_root(const struct prb_topology *t)
{
	return t->root;
}

int prb_topology_node_count(const struct prb_topology *t)
{
	return t->n_nodes;
}

const struct prb_numa_node *prb_topology_node(const struct prb_topology *t, int i)
{
	return i >= 0 && i < t->n_nodes ? &t->nodes[i] : NULL;
}

const char *prb_topology_why(const struct prb_topology *t)
{
	return t->why;
}

int prb_topology_packages(const struct prb_topology *t, const char **why)
{
	if (why)
		*why = t->n_packages ? "" : t->package_why[0] ? t->package_why : t->why;
	return t->n_packages;
}

int prb_topology_cpu_node(const struct prb_topology *t, int cpu)
{
	for (int i = 0; cpu >= 0 && i < t->n_nodes; i++)
		for (int j = 0; j < t->nodes[i].n_cpus; j++)
			if (t->nodes[i].cpus[j] == cpu)
				return t->nodes[i].id;
	return -1;
}
