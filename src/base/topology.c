/* src/base/topology.c: the memory topology (topology.h): NUMA nodes (probes/numa.c reads
 * them), the firmware's NUMA split, channels present and populated, and which controller
 * instance serves which node.
 *
 * Sources:
 * - nodes and packages: Documentation/ABI/stable/sysfs-devices-node and
 *   sysfs-devices-system-cpu (probes/numa.c);
 * - the NUMA split: neither AMD's NPS nor Intel's SNC is in sysfs; both show as CPU-bearing
 *   nodes per package, the inference node-feature-discovery weighed for SNC
 *   (kubernetes-sigs/node-feature-discovery issue 143: "it is likely"), so the name is given
 *   with its basis. NPS0 is one node spanning two sockets. AMD's "L3 as NUMA" BIOS option also
 *   splits nodes and cannot be told from NPS here: the basis says so;
 * - controller to node: an uncore PMU's cpumask names one CPU per package (the CPU its
 *   events are opened on), so an instance is tied to that CPU's node exactly only where the
 *   package has one node; under SNC or NPS2/4 it is one of the package's nodes and sysfs does
 *   not say which (likwid's issue 146, "Memory traffic on Skylake in SNC mode not correctly
 *   attributed to ccNUMA domains", found the same limit);
 * - channels: SMBIOS type 17 (src/base/smbios.c; present: every slot's channel, populated:
 *   those with a module) and EDAC (drivers/edac/edac_mc_sysfs.c: mcN/dimmM/{size,
 *   dimm_location}, the location printed as "<layer> <n> " per layer, e.g. "channel 1 slot
 *   0 "; a dimmM folder exists only for a DIMM with pages, so EDAC counts populated channels
 *   and never present ones).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "smbios.h"
#include "text.h"
#include "topology.h"

const char *mw_topo_level_name(enum mw_topo_level l)
{
	return l == MW_TOPO_NODE ? "node" : l == MW_TOPO_PACKAGE ? "package" : "unknown";
}

static const struct prb_numa_node *node_by_id(const struct prb_topology *t, int id)
{
	for (int i = 0; i < prb_topology_node_count(t); i++)
		if (prb_topology_node(t, i)->id == id)
			return prb_topology_node(t, i);
	return NULL;
}

int mw_topology_package_nodes(const struct prb_topology *t, int package, int *ids, int max)
{
	int k = 0;
	for (int i = 0; i < prb_topology_node_count(t); i++) {
		const struct prb_numa_node *nd = prb_topology_node(t, i);
		if (nd->n_cpus && nd->package == package && package >= 0) {
			if (k < max)
				ids[k] = nd->id;
			k++;
		}
	}
	return k < max ? k : max;
}

enum mw_topo_level mw_topology_attribute(const struct prb_topology *t,
					 const struct prb_dram_status *st,
					 struct mw_topo_instance *out, char *why, size_t n)
{
	enum mw_topo_level worst = MW_TOPO_NODE;
	why[0] = '\0';
	for (int i = 0; i < st->n_instances; i++) {
		int cpu = st->instances[i].cpu, ids[64];
		struct mw_topo_instance *o = &out[i];
		o->node = prb_topology_cpu_node(t, cpu);
		const struct prb_numa_node *nd = o->node >= 0 ? node_by_id(t, o->node) : NULL;
		o->package = nd ? nd->package : -1;
		int k = nd && nd->package >= 0 ? mw_topology_package_nodes(t, nd->package, ids, 64) : 0;
		o->level = !nd ? MW_TOPO_UNKNOWN
			 : nd->spans_packages || k <= 1 ? MW_TOPO_NODE : MW_TOPO_PACKAGE;
		if (o->level <= worst)
			continue;
		worst = o->level;
		if (worst == MW_TOPO_PACKAGE)
			snprintf(why, n, "unknown, because package %d holds %d nodes and %s's cpumask "
				 "names one CPU per package (CPU %d): which node the controller serves "
				 "is not in sysfs", nd->package, k, st->instances[i].pmu, cpu);
		else if (cpu < 0)
			snprintf(why, n, "unknown, because %s is a file counter (%s) with no CPU",
				 st->instances[i].pmu, st->backend);
		else if (!prb_topology_node_count(t))
			snprintf(why, n, "unknown, because %s", prb_topology_why(t));
		else
			snprintf(why, n, "unknown, because no node's cpulist holds CPU %d (%s)", cpu,
				 st->instances[i].pmu);
	}
	return worst;
}

void mw_cpulist_format(const int *cpus, int n, char *buf, size_t size)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && at < size;) {
		int j = i;
		while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
			j++;
		int w = j > i ? snprintf(buf + at, size - at, "%s%d-%d", at ? "," : "", cpus[i], cpus[j])
			      : snprintf(buf + at, size - at, "%s%d", at ? "," : "", cpus[i]);
		at += w > 0 ? (size_t)w : 0;
		i = j + 1;
	}
}

static json_t *nodes_json(const struct prb_topology *t, json_t *memonly)
{
	json_t *a = json_array();
	for (int i = 0; a && i < prb_topology_node_count(t); i++) {
		const struct prb_numa_node *nd = prb_topology_node(t, i);
		char cpus[4096];
		mw_cpulist_format(nd->cpus, nd->n_cpus, cpus, sizeof(cpus));
		if (!nd->n_cpus)
			json_array_append_new(memonly, json_integer(nd->id));
		json_array_append_new(a, json_pack("{s:i, s:s, s:i, s:o, s:o}", "id", nd->id, "cpus",
			cpus, "n_cpus", nd->n_cpus, "mem_bytes",
			nd->mem_bytes >= 0 ? json_integer(nd->mem_bytes) : json_null(), "package",
			nd->package >= 0 ? json_integer(nd->package) : json_null()));
	}
	return a;
}

/* AMD or Intel, from the DRAM backend's family first, then the CPU's vendor_id; 0 unknown. */
static char vendor_of(const char *vendor, const struct prb_dram_status *st)
{
	if (st && !strncmp(st->backend, "amd_", 4))
		return 'a';
	if (st && !strncmp(st->backend, "intel_", 6))
		return 'i';
	if (vendor && (strstr(vendor, "AMD") || strstr(vendor, "Hygon")))
		return 'a';
	if (vendor && strstr(vendor, "Intel"))
		return 'i';
	return 0;
}

static json_t *numa_mode_json(const struct prb_topology *t, char vendor)
{
	const char *pwhy = NULL;
	int packages = prb_topology_packages(t, &pwhy), with_cpus = 0;
	bool spans = false;
	char name[32] = "", why[600] = "", basis[400];
	for (int i = 0; i < prb_topology_node_count(t); i++) {
		with_cpus += prb_topology_node(t, i)->n_cpus > 0;
		spans |= prb_topology_node(t, i)->spans_packages;
	}
	int per = packages > 0 && with_cpus % packages == 0 ? with_cpus / packages : 0;
	snprintf(basis, sizeof(basis), "%d node%s with CPUs over %d package%s; neither NPS nor SNC "
		 "is in sysfs, so the name is inferred from nodes per package", with_cpus,
		 with_cpus == 1 ? "" : "s", packages, packages == 1 ? "" : "s");
	if (!prb_topology_node_count(t))
		snprintf(why, sizeof(why), "unknown, because %s", prb_topology_why(t));
	else if (!packages)
		snprintf(why, sizeof(why), "unknown, because the packages are unknown: %s", pwhy);
	else if (spans && vendor == 'a')
		snprintf(name, sizeof(name), "NPS0");
	else if (spans)
		snprintf(why, sizeof(why), "unknown, because a node spans packages");
	else if (!per)
		snprintf(why, sizeof(why), "unknown, because %d nodes with CPUs do not split evenly "
			 "over %d packages", with_cpus, packages);
	else if (vendor == 'a')
		snprintf(name, sizeof(name), "NPS%d", per); /* or "L3 as NUMA": the basis says */
	else if (vendor == 'i')
		snprintf(name, sizeof(name), per == 1 ? "SNC off" : "SNC%d", per);
	else
		snprintf(why, sizeof(why), "unknown, because the CPU's vendor is unknown (%d nodes "
			 "per package: NPS%d on AMD, SNC%d on Intel)", per, per, per);
	if (vendor == 'a' && name[0])
		snprintf(basis + strlen(basis), sizeof(basis) - strlen(basis), " (AMD's \"L3 as "
			 "NUMA\" option splits nodes the same way)");
	return json_pack("{s:o, s:o, s:s, s:o}", "name", name[0] ? json_string(name) : json_null(),
			 "nodes_per_package", per && !spans ? json_integer(per) : json_null(),
			 "basis", basis, "why", why[0] ? json_string(why) : json_null());
}

/* The first line of a small file of the tree into buf ("" when it cannot be read): through the
 * bounded reader (file.h), since the tree may be another machine's recording (--sysfs), where a
 * FIFO would block a plain fopen forever and a link to /dev/zero read forever. 0 or -errno. */
static int read_line(const char *path, char *buf, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	buf[0] = '\0';
	int rc = mw_file_read(path, "sysfs file", "", 4096, &text, &len, NULL);
	if (rc == 0)
		snprintf(buf, n, "%.*s", (int)strcspn(text, "\n"), text);
	free(text);
	return rc;
}

/* EDAC's populated channels per memory controller (the header says why only populated). */
static json_t *edac_json(const char *root, char *why, size_t n)
{
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/devices/system/edac/mc", root);
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(why, n, "%.500s: %s (no EDAC driver: most desktops and every VM)", dir,
			 strerror(errno));
		return NULL;
	}
	json_t *mcs = json_array();
	int total = 0;
	struct dirent *de;
	while (mcs && (de = readdir(d))) {
		if (strncmp(de->d_name, "mc", 2) || !isdigit((unsigned char)de->d_name[2]))
			continue;
		char path[1400], buf[256] = "";
		int chans[64], nch = 0, dimms = 0;
		for (int k = 0; k < 64; k++) {
			char loc[256];
			snprintf(path, sizeof(path), "%s/%s/dimm%d/dimm_location", dir, de->d_name, k);
			if (read_line(path, loc, sizeof(loc)))
				continue;
			dimms++;
			const char *c = strstr(loc, "channel ");
			int ch = c ? atoi(c + 8) : -1, j;
			for (j = 0; j < nch && chans[j] != ch; j++)
				;
			if (ch >= 0 && j == nch && nch < 64)
				chans[nch++] = ch;
		}
		snprintf(path, sizeof(path), "%s/%s/mc_name", dir, de->d_name);
		(void)read_line(path, buf, sizeof(buf));
		total += nch;
		json_array_append_new(mcs, json_pack("{s:s, s:s?, s:i, s:i}", "mc", de->d_name,
						     "name", buf[0] ? buf : NULL, "dimms", dimms,
						     "channels", nch));
	}
	closedir(d);
	if (mcs && !json_array_size(mcs)) {
		snprintf(why, n, "%.500s lists no mcN folder", dir);
		json_decref(mcs);
		return NULL;
	}
	return json_pack("{s:o, s:i}", "controllers", mcs, "channels_populated", total);
}

static json_t *channels_json(const char *root)
{
	char path[1200], swhy[700] = "", ewhy[700] = "", why[1600] = "";
	json_t *sm = NULL;
	snprintf(path, sizeof(path), "%s/firmware/dmi/tables/DMI", root);
	mw_smbios_memory_read_path(path, &sm, swhy, sizeof(swhy));
	json_t *ed = edac_json(root, ewhy, sizeof(ewhy));
	json_t *present = json_null(), *populated = json_null();
	const char *source = NULL;
	if (sm && json_is_integer(json_object_get(sm, "channels"))) {
		populated = json_deep_copy(json_object_get(sm, "channels"));
		source = "SMBIOS type 17 locators";
	} else if (ed) {
		populated = json_deep_copy(json_object_get(ed, "channels_populated"));
		source = "EDAC dimm_location";
	}
	if (sm && json_is_integer(json_object_get(sm, "channels_present")))
		present = json_deep_copy(json_object_get(sm, "channels_present"));
	if (json_is_null(present) || json_is_null(populated))
		snprintf(why, sizeof(why), "unknown, because SMBIOS: %s; EDAC: %s",
			 sm ? json_string_value(json_object_get(sm, "channels_source")) : swhy,
			 ed ? "populated channels only (EDAC lists no empty slot)" : ewhy);
	json_t *o = json_pack("{s:o, s:o, s:s?, s:o, s:o, s:o}", "present", present, "populated",
			      populated, "source", source, "why",
			      why[0] ? json_string(why) : json_null(), "smbios",
			      sm ? json_pack("{s:O, s:O, s:O, s:O}", "slots",
					     json_object_get(sm, "slots"), "dimms",
					     json_object_get(sm, "dimms"), "channels",
					     json_object_get(sm, "channels"), "channels_present",
					     json_object_get(sm, "channels_present"))
				 : json_string(swhy),
			      "edac", ed ? ed : json_string(ewhy));
	json_decref(sm);
	return o;
}

static json_t *controllers_json(const struct prb_topology *t, const struct prb_dram_status *st)
{
	if (!st->backend[0] || !st->n_instances)
		return json_pack("{s:n, s:s, s:s}", "backend", "attribution", "unknown", "why",
				 "unknown, because no DRAM backend was found here");
	struct mw_topo_instance *ti = calloc((size_t)st->n_instances, sizeof(*ti));
	char why[700];
	if (!ti)
		return NULL;
	enum mw_topo_level lv = mw_topology_attribute(t, st, ti, why, sizeof(why));
	json_t *inst = json_array(), *per = json_array();
	for (int i = 0; i < st->n_instances; i++) {
		char name[96];
		snprintf(name, sizeof(name), "%s@cpu%d", st->instances[i].pmu, st->instances[i].cpu);
		json_array_append_new(inst, json_pack("{s:s, s:s, s:i, s:o, s:o, s:s}", "name", name,
			"pmu", st->instances[i].pmu, "cpu", st->instances[i].cpu, "node",
			ti[i].node >= 0 ? json_integer(ti[i].node) : json_null(), "package",
			ti[i].package >= 0 ? json_integer(ti[i].package) : json_null(),
			"attribution", mw_topo_level_name(ti[i].level)));
	}
	for (int k = 0; lv == MW_TOPO_NODE && k < prb_topology_node_count(t); k++) {
		int id = prb_topology_node(t, k)->id, c = 0;
		for (int i = 0; i < st->n_instances; i++)
			c += ti[i].node == id;
		json_array_append_new(per, json_pack("{s:i, s:i}", "node", id, "instances", c));
	}
	free(ti);
	return json_pack("{s:s, s:s, s:o, s:o, s:o}", "backend", st->backend, "attribution",
			 mw_topo_level_name(lv), "why", why[0] ? json_string(why) : json_null(),
			 "instances", inst, "per_node", per);
}

json_t *mw_topology_describe(const char *root, const char *vendor,
			     const struct prb_dram_status *st)
{
	struct prb_topology *t = NULL;
	struct prb_system *sys = NULL;
	struct prb_dram_status *own = NULL;
	struct prb_error err = { 0 };
	json_t *o = NULL;
	char src[1200];

	if (prb_topology_new(&t, root, &err) < 0)
		return json_pack("{s:n, s:s}", "nodes", "nodes_why", err.text);
	if (!st) {
		own = calloc(1, sizeof(*own));
		if (!own)
			goto out;
		if (prb_system_open(&sys, prb_topology_root(t), &err) == 0)
			(void)prb_dram_probe(sys, NULL, own); /* absent: its reason is in own */
		st = own;
	}
	json_t *memonly = json_array();
	json_t *nodes = prb_topology_node_count(t) ? nodes_json(t, memonly) : json_null();
	const char *pwhy = NULL;
	int packages = prb_topology_packages(t, &pwhy);
	snprintf(src, sizeof(src), "%s/devices/system/node", prb_topology_root(t));
	o = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "source", src, "nodes",
		      nodes, "nodes_why",
		      json_is_null(nodes) ? json_string(prb_topology_why(t)) : json_null(),
		      "packages", packages ? json_integer(packages) : json_null(), "packages_why",
		      packages ? json_null() : json_string(pwhy), "memory_only_nodes", memonly,
		      "numa_mode", numa_mode_json(t, vendor_of(vendor, st)), "channels",
		      channels_json(prb_topology_root(t)), "controllers", controllers_json(t, st));
out:
	prb_system_close(sys);
	free(own);
	prb_topology_free(t);
	return o;
}

void mw_topology_print(FILE *f, const json_t *topo)
{
	const json_t *nodes = json_object_get(topo, "nodes"), *nd;
	size_t i;
	if (!json_is_array(nodes)) {
		fprintf(f, "  NUMA nodes: unknown, because %s\n",
			mw_esc(json_string_value(json_object_get(topo, "nodes_why"))));
	} else {
		json_array_foreach(nodes, i, nd) {
			const json_t *mem = json_object_get(nd, "mem_bytes");
			const json_t *pk = json_object_get(nd, "package");
			const char *cpus = json_string_value(json_object_get(nd, "cpus"));
			char memtxt[48] = "memory unknown", pktxt[32] = "unknown";
			if (json_is_integer(mem))
				snprintf(memtxt, sizeof(memtxt), "%.1f GiB",
					 (double)json_integer_value(mem) / 1073741824.0);
			if (json_is_integer(pk))
				snprintf(pktxt, sizeof(pktxt), "%lld", (long long)json_integer_value(pk));
			fprintf(f, "  node %lld: CPUs %s, %s, package %s\n",
				(long long)json_integer_value(json_object_get(nd, "id")),
				cpus && *cpus ? mw_esc(cpus) : "none", memtxt, pktxt);
		}
	}
	const json_t *mode = json_object_get(topo, "numa_mode");
	fprintf(f, "  NUMA split: %s\n", mw_esc(json_is_string(json_object_get(mode, "name")) ?
		json_string_value(json_object_get(mode, "name")) :
		json_string_value(json_object_get(mode, "why"))));
	const json_t *ch = json_object_get(topo, "channels");
	const json_t *pop = json_object_get(ch, "populated"), *pre = json_object_get(ch, "present");
	if (json_is_integer(pop))
		fprintf(f, "  memory channels: %lld populated (%s)", (long long)json_integer_value(pop),
			mw_esc(json_string_value(json_object_get(ch, "source"))));
	else
		fprintf(f, "  memory channels: populated unknown");
	if (json_is_integer(pre))
		fprintf(f, " of %lld present\n", (long long)json_integer_value(pre));
	else
		fprintf(f, ", present unknown (SMBIOS needs root; --json: topology.channels.why)\n");
	const json_t *ctl = json_object_get(topo, "controllers");
	const json_t *per = json_object_get(ctl, "per_node"), *p;
	if (json_array_size(per)) {
		fprintf(f, "  controller instances per node:");
		json_array_foreach(per, i, p)
			fprintf(f, "%s node %lld: %lld", i ? "," : "",
				(long long)json_integer_value(json_object_get(p, "node")),
				(long long)json_integer_value(json_object_get(p, "instances")));
		fputc('\n', f);
	} else if (json_is_string(json_object_get(ctl, "why"))) {
		fprintf(f, "  controller instances per node: %s\n",
			mw_esc(json_string_value(json_object_get(ctl, "why"))));
	}
}
