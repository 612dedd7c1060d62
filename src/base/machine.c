/* src/base/machine.c: machine provenance for result records.
 *
 * Each field has one reader in the table below; a reader returns the value or NULL with the
 * reason it could not tell. Paths are the documented kernel interfaces: Documentation/
 * ABI/testing/sysfs-devices-system-cpu (topology, cache, smt, cpufreq, vulnerabilities),
 * Documentation/admin-guide/mm/transhuge.rst (THP), Documentation/admin-guide/sysctl/
 * kernel.rst (perf_event_paranoid), proc(5) (cpuinfo, meminfo, cmdline, stat). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "file.h"
#include "machine.h"
#include "redact.h"
#include "sha256.h"
#include "smbios.h"
#include "text.h"
#include "topology.h"

/* A meminfo file is about 1.5 KiB; a file 1 MiB long is not one. */
#define MEMINFO_MAX (1u << 20)

struct mctx {
	const char *root;
	char cpuinfo[16384]; /* the first processor's block of /proc/cpuinfo */
	bool have_cpuinfo;
};

/* Reads root+path into buf, trimmed of trailing whitespace. 0 or -errno. */
static int read_text(const struct mctx *c, const char *path, char *buf, size_t n)
{
	char full[4096];
	snprintf(full, sizeof(full), "%s%s", c->root, path);
	FILE *f = fopen(full, "r");
	if (!f)
		return -errno;
	size_t len = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[len] = '\0';
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		buf[--len] = '\0';
	return 0;
}

static json_t *text_or_why(const struct mctx *c, const char *path, char *why, size_t n,
			   const char *absent_means)
{
	char buf[1024];
	int rc = read_text(c, path, buf, sizeof(buf));
	if (rc == 0)
		return json_string(buf);
	snprintf(why, n, "%s: %s%s%s", path, strerror(-rc), absent_means ? " (" : "",
		 absent_means ? absent_means : "");
	if (absent_means)
		strncat(why, ")", n - strlen(why) - 1);
	return NULL;
}

/* The value of "key : value" in the first processor block of /proc/cpuinfo. */
static const char *cpuinfo_get(const struct mctx *c, const char *key, char *out, size_t n)
{
	size_t klen = strlen(key);
	for (const char *line = c->cpuinfo; line && *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		if (len > klen && !strncmp(line, key, klen) && (line[klen] == '\t' || line[klen] == ' ' ||
							       line[klen] == ':')) {
			const char *colon = memchr(line, ':', len);
			if (colon) {
				const char *v = colon + 1;
				while (*v == ' ')
					v++;
				size_t vlen = (size_t)(line + len - v);
				snprintf(out, n, "%.*s", (int)(vlen < n ? vlen : n - 1), v);
				return out;
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return NULL;
}

static json_t *cpuinfo_field(const struct mctx *c, const char *key, bool integer, char *why,
			     size_t n)
{
	char buf[512];
	if (!c->have_cpuinfo) {
		snprintf(why, n, "/proc/cpuinfo is unreadable");
		return NULL;
	}
	if (!cpuinfo_get(c, key, buf, sizeof(buf))) {
		snprintf(why, n, "/proc/cpuinfo has no '%s' line on this architecture", key);
		return NULL;
	}
	if (integer) {
		char *end;
		long long v = strtoll(buf, &end, 0);
		if (end != buf && !*end)
			return json_integer(v);
	}
	return json_string(buf);
}

static json_t *r_cpu_name(struct mctx *c, char *w, size_t n)
{
	return cpuinfo_field(c, "model name", false, w, n);
}
static json_t *r_vendor(struct mctx *c, char *w, size_t n)
{
	return cpuinfo_field(c, "vendor_id", false, w, n);
}
static json_t *r_family(struct mctx *c, char *w, size_t n)
{
	return cpuinfo_field(c, "cpu family", true, w, n);
}
static json_t *r_model(struct mctx *c, char *w, size_t n)
{
	return cpuinfo_field(c, "model", true, w, n);
}
static json_t *r_stepping(struct mctx *c, char *w, size_t n)
{
	return cpuinfo_field(c, "stepping", true, w, n);
}
static json_t *r_microcode(struct mctx *c, char *w, size_t n)
{
	return cpuinfo_field(c, "microcode", false, w, n);
}

static json_t *r_hypervisor(struct mctx *c, char *w, size_t n)
{
	char flags[8192];
	if (!c->have_cpuinfo || !cpuinfo_get(c, "flags", flags, sizeof(flags))) {
		snprintf(w, n, "/proc/cpuinfo has no 'flags' line on this architecture");
		return NULL;
	}
	/* The "hypervisor" flag is CPUID.1:ECX bit 31, set by every mainstream hypervisor. */
	char padded[8200];
	snprintf(padded, sizeof(padded), " %s ", flags);
	return json_boolean(strstr(padded, " hypervisor ") != NULL);
}

static json_t *r_logical(struct mctx *c, char *w, size_t n)
{
	(void)c;
	long v = sysconf(_SC_NPROCESSORS_ONLN);
	if (v > 0)
		return json_integer(v);
	snprintf(w, n, "sysconf(_SC_NPROCESSORS_ONLN) failed");
	return NULL;
}

/* Counts distinct packages and (package, core) pairs over the online CPUs' topology. */
static int topology(const struct mctx *c, int *sockets, int *cores)
{
	char path[256], buf[64];
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	long *pkg = calloc((size_t)(ncpu > 0 ? ncpu : 1), sizeof(long));
	long *pair = calloc((size_t)(ncpu > 0 ? ncpu : 1), sizeof(long));
	int np = 0, nc = 0, rc = -ENOENT;
	if (!pkg || !pair)
		goto out;
	for (long i = 0; i < ncpu; i++) {
		long p, core;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/topology/physical_package_id", i);
		if (read_text(c, path, buf, sizeof(buf)))
			continue;
		p = strtol(buf, NULL, 10);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/topology/core_id", i);
		if (read_text(c, path, buf, sizeof(buf)))
			continue;
		core = strtol(buf, NULL, 10);
		int j;
		for (j = 0; j < np && pkg[j] != p; j++)
			;
		if (j == np)
			pkg[np++] = p;
		long key = p * 1000003L + core;
		for (j = 0; j < nc && pair[j] != key; j++)
			;
		if (j == nc)
			pair[nc++] = key;
	}
	if (np > 0) {
		*sockets = np;
		*cores = nc;
		rc = 0;
	}
out:
	free(pkg);
	free(pair);
	return rc;
}

static json_t *r_cores(struct mctx *c, char *w, size_t n)
{
	int s, k;
	if (topology(c, &s, &k) == 0)
		return json_integer(k);
	snprintf(w, n, "/sys/devices/system/cpu/cpu*/topology is unreadable");
	return NULL;
}

static json_t *r_sockets(struct mctx *c, char *w, size_t n)
{
	int s, k;
	if (topology(c, &s, &k) == 0)
		return json_integer(s);
	snprintf(w, n, "/sys/devices/system/cpu/cpu*/topology is unreadable");
	return NULL;
}

static json_t *r_smt(struct mctx *c, char *w, size_t n)
{
	return text_or_why(c, "/sys/devices/system/cpu/smt/control", w, n,
			   "kernel without CONFIG_HOTPLUG_SMT");
}

/* "48K", "2048K", "32M" as /sys/.../cache/index* /size writes them. */
static long long size_bytes(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	else if (*end == 'G')
		v <<= 30;
	return v;
}

int mw_cache_size(const char *root, int level, uint64_t *bytes, char *source, size_t n)
{
	struct mctx c = { .root = root ? root : "" };
	char path[256], text[64];
	*bytes = 0;
	for (int i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		if (read_text(&c, path, text, sizeof(text)) || atoi(text) != level)
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		if (read_text(&c, path, text, sizeof(text)) || !strcmp(text, "Instruction"))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		if (read_text(&c, path, text, sizeof(text)) || size_bytes(text) <= 0)
			continue;
		*bytes = (uint64_t)size_bytes(text);
		if (source)
			snprintf(source, n, "%s%s", c.root, path);
		return 0;
	}
	return -ENOENT;
}

static json_t *r_caches(struct mctx *c, char *w, size_t n)
{
	json_t *arr = json_array();
	char path[256], level[32], type[64], size[64], shared[256];
	for (int i = 0; arr && i < 16; i++) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		if (read_text(c, path, level, sizeof(level)))
			break;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		if (read_text(c, path, type, sizeof(type)))
			snprintf(type, sizeof(type), "?");
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		json_t *sz = read_text(c, path, size, sizeof(size)) ? json_null()
								    : json_integer(size_bytes(size));
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
		if (read_text(c, path, shared, sizeof(shared)))
			snprintf(shared, sizeof(shared), "?");
		json_array_append_new(arr, json_pack("{s:i, s:s, s:o, s:s}", "level",
						     atoi(level), "type", type, "size_bytes", sz,
						     "shared_cpu_list", shared));
	}
	if (arr && json_array_size(arr) == 0) {
		json_decref(arr);
		snprintf(w, n, "/sys/devices/system/cpu/cpu0/cache is absent (common in VMs and "
			       "containers)");
		return NULL;
	}
	return arr;
}

static json_t *r_numa(struct mctx *c, char *w, size_t n)
{
	char full[4096];
	snprintf(full, sizeof(full), "%s/sys/devices/system/node", c->root);
	DIR *d = opendir(full);
	if (!d) {
		snprintf(w, n, "/sys/devices/system/node: %s (kernel without CONFIG_NUMA)",
			 strerror(errno));
		return NULL;
	}
	int nodes = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "node", 4) && de->d_name[4] >= '0' && de->d_name[4] <= '9')
			nodes++;
	closedir(d);
	return json_integer(nodes);
}

int mw_meminfo(const char *root, const char *key, uint64_t *bytes)
{
	char path[4096];
	size_t klen = strlen(key);
	const char *fake = getenv("MEMWALL_MEMINFO");
	/* Tests stand a file in for the live /proc/meminfo, to play a machine short of memory
	 * or paging to swap (tests/e2e/test_security.c); a recorded tree (root) takes precedence. */
	if (!root && fake && *fake)
		snprintf(path, sizeof(path), "%s", fake);
	else
		snprintf(path, sizeof(path), "%s/proc/meminfo", root ? root : "");
	/* A regular file only, of at most MEMINFO_MAX bytes: a FIFO or /dev/zero named by
	 * $MEMWALL_MEMINFO must not block or spin (src/base/file.h). */
	char *text = NULL;
	int rc = mw_file_read(path, "meminfo file", "", MEMINFO_MAX, &text, NULL, NULL);
	if (rc)
		return rc;
	rc = -ENOENT;
	for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (!strncmp(l, key, klen) && l[klen] == ':') {
			/* proc(5): values are in kB, meaning KiB. */
			*bytes = strtoull(l + klen + 1, NULL, 10) * 1024;
			rc = 0;
			break;
		}
	}
	free(text);
	return rc;
}

/* The variables that change what memwall measures or where it reads from, and nothing else:
 * the environment at large holds tokens, keys and paths that a shared record must not carry.
 * Kept short on purpose; results/README.md lists them. */
static const char *const env_allowed[] = {
	"MEMWALL_CACHE_DIR",     /* where synthetic models are made (src/run/protocol.c) */
	"MEMWALL_COUNTERS",      /* the counter backend (probes/counter.c) */
	"MEMWALL_SIM_SCRIPT",    /* the simulated PMU's script (probes/counter_sim.c) */
	"MEMWALL_SYSFS_ROOT",    /* a recorded sysfs tree in place of /sys (probes/sysfs.c) */
	"MEMWALL_MEMINFO",       /* a file in place of /proc/meminfo (tests) */
	"MEMWALL_CGROUP_ROOT",   /* a tree in place of /proc/self and /sys/fs/cgroup (tests) */
	"MEMWALL_INJECT_ERRNO",  /* counter errors injected (tests) */
	"OMP_NUM_THREADS",       /* read by the external engines that memwall runs */
};

json_t *mw_environment_allowed(bool *redacted)
{
	json_t *o = json_object();
	*redacted = false;
	for (size_t i = 0; o && i < sizeof(env_allowed) / sizeof(env_allowed[0]); i++) {
		const char *v = getenv(env_allowed[i]);
		bool r = false;
		/* An allowed variable can still hold a secret's value (a path with a token). */
		char *clean = v ? mw_redact(v, strlen(v), NULL, &r) : NULL;
		if (clean)
			json_object_set_new(o, env_allowed[i], json_string(clean));
		*redacted |= r;
		free(clean);
	}
	return o;
}

int mw_memory_fits(uint64_t model_bytes, uint64_t *avail, uint64_t *need)
{
	/* 10% over the file: the KV cache, activations, and the process around them. */
	*need = model_bytes + model_bytes / 10;
	*avail = 0;
	if (mw_meminfo(NULL, "MemAvailable", avail))
		return 0;
	return *avail < *need ? -ENOMEM : 0;
}

static json_t *r_mem(struct mctx *c, char *w, size_t n)
{
	uint64_t b;
	if (mw_meminfo(c->root, "MemTotal", &b) == 0)
		return json_integer((json_int_t)b);
	snprintf(w, n, "/proc/meminfo has no MemTotal");
	return NULL;
}

static json_t *r_os(struct mctx *c, char *w, size_t n)
{
	char buf[4096];
	if (read_text(c, "/etc/os-release", buf, sizeof(buf))) {
		snprintf(w, n, "/etc/os-release is unreadable");
		return NULL;
	}
	char *p = strstr(buf, "PRETTY_NAME=");
	if (!p) {
		snprintf(w, n, "/etc/os-release has no PRETTY_NAME");
		return NULL;
	}
	p += 12;
	if (*p == '"')
		p++;
	p[strcspn(p, "\"\n")] = '\0';
	return json_string(p);
}

static json_t *r_kernel(struct mctx *c, char *w, size_t n)
{
	struct utsname u;
	(void)c;
	if (uname(&u)) {
		snprintf(w, n, "uname failed: %s", strerror(errno));
		return NULL;
	}
	return json_pack("{s:s, s:s, s:s}", "release", u.release, "version", u.version, "machine",
			 u.machine);
}

/* Kernel parameters that change how fast memory-bound code runs. Only these are recorded, not
 * the whole command line, which can carry site details (root UUIDs, hostnames, tokens). */
static const char *const perf_params[] = {
	"mitigations", "isolcpus", "nohz_full", "rcu_nocbs", "transparent_hugepage",
	"default_hugepagesz", "hugepagesz", "hugepages", "intel_pstate", "amd_pstate",
	"processor.max_cstate", "intel_idle.max_cstate", "idle", "numa_balancing", "iommu",
	"intel_iommu", "amd_iommu", "nosmt", "maxcpus", "mem", "preempt", NULL,
};

static json_t *r_cmdline(struct mctx *c, char *w, size_t n)
{
	char cmd[4096];
	int rc = read_text(c, "/proc/cmdline", cmd, sizeof(cmd));
	if (rc) {
		snprintf(w, n, "/proc/cmdline: %s", strerror(-rc));
		return NULL;
	}
	json_t *o = json_object();
	for (char *save = NULL, *tok = strtok_r(cmd, " ", &save); o && tok;
	     tok = strtok_r(NULL, " ", &save)) {
		if (!strcmp(tok, "--"))
			break; /* the rest goes to init, not the kernel */
		char *eq = strchr(tok, '=');
		size_t klen = eq ? (size_t)(eq - tok) : strlen(tok);
		for (const char *const *p = perf_params; *p; p++)
			if (strlen(*p) == klen && !strncmp(*p, tok, klen))
				json_object_set_new(o, *p, eq ? json_string(eq + 1) : json_true());
	}
	return o;
}

/* The mitigations= parameter as given, and each vulnerability file's verdict. */
static json_t *r_mitigations(struct mctx *c, char *w, size_t n)
{
	char cmd[4096], full[4096], buf[512], path[512];
	json_t *o = json_object();
	const char *param = "(not on the command line: the kernel's default, auto)";
	char val[128];
	if (read_text(c, "/proc/cmdline", cmd, sizeof(cmd)) == 0) {
		char padded[4100];
		snprintf(padded, sizeof(padded), " %s", cmd);
		char *p = strstr(padded, " mitigations=");
		if (p) {
			snprintf(val, sizeof(val), "%.*s", (int)strcspn(p + 13, " "), p + 13);
			param = val;
		}
	}
	json_object_set_new(o, "cmdline_parameter", json_string(param));
	json_t *v = json_object();
	snprintf(full, sizeof(full), "%s/sys/devices/system/cpu/vulnerabilities", c->root);
	DIR *d = opendir(full);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/vulnerabilities/%s", de->d_name);
		if (read_text(c, path, buf, sizeof(buf)) == 0)
			json_object_set_new(v, de->d_name, json_string(buf));
	}
	(void)w;
	(void)n;
	if (d) {
		closedir(d);
		json_object_set_new(o, "vulnerabilities", v);
	} else {
		/* Kernels before 4.15 have no vulnerabilities directory: say so in place. */
		json_decref(v);
		json_object_set_new(o, "vulnerabilities", json_null());
	}
	return o;
}

static json_t *r_governor(struct mctx *c, char *w, size_t n)
{
	return text_or_why(c, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", w, n,
			   "no cpufreq driver: the frequency is the firmware's or the hypervisor's");
}

static json_t *r_boost(struct mctx *c, char *w, size_t n)
{
	char buf[64];
	/* acpi-cpufreq and amd-pstate: cpufreq/boost is 1 when boost is allowed. */
	if (read_text(c, "/sys/devices/system/cpu/cpufreq/boost", buf, sizeof(buf)) == 0)
		return json_boolean(atoi(buf) == 1);
	/* intel_pstate: no_turbo is 1 when turbo is off. */
	if (read_text(c, "/sys/devices/system/cpu/intel_pstate/no_turbo", buf, sizeof(buf)) == 0)
		return json_boolean(atoi(buf) == 0);
	snprintf(w, n, "neither cpufreq/boost nor intel_pstate/no_turbo exists (no cpufreq "
		       "driver exposes boost here)");
	return NULL;
}

/* "always [madvise] never" -> "madvise". */
static json_t *bracketed(const struct mctx *c, const char *path, char *w, size_t n)
{
	char buf[256];
	int rc = read_text(c, path, buf, sizeof(buf));
	if (rc) {
		snprintf(w, n, "%s: %s", path, strerror(-rc));
		return NULL;
	}
	char *a = strchr(buf, '['), *b = a ? strchr(a, ']') : NULL;
	if (!a || !b) {
		snprintf(w, n, "%s: no [selected] value in '%s'", path, buf);
		return NULL;
	}
	*b = '\0';
	return json_string(a + 1);
}

static json_t *r_thp(struct mctx *c, char *w, size_t n)
{
	return bracketed(c, "/sys/kernel/mm/transparent_hugepage/enabled", w, n);
}

static json_t *r_thp_defrag(struct mctx *c, char *w, size_t n)
{
	return bracketed(c, "/sys/kernel/mm/transparent_hugepage/defrag", w, n);
}

static json_t *r_paranoid(struct mctx *c, char *w, size_t n)
{
	char buf[32];
	int rc = read_text(c, "/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf));
	if (rc == 0)
		return json_integer(atoi(buf));
	snprintf(w, n, "/proc/sys/kernel/perf_event_paranoid: %s", strerror(-rc));
	return NULL;
}

static json_t *r_clocksource(struct mctx *c, char *w, size_t n)
{
	return text_or_why(c, "/sys/devices/system/clocksource/clocksource0/current_clocksource",
			   w, n, NULL);
}

/* DIMM count, speed and channels: the figure that explains most bandwidth differences between
 * machines of the same CPU (src/base/smbios.c). */
static json_t *r_memory_config(struct mctx *c, char *w, size_t n)
{
	json_t *o = NULL;
	mw_smbios_memory_read(c->root, &o, w, n);
	return o;
}

/* NUMA nodes, the firmware's NUMA split, channels and which controller serves which node
 * (src/base/topology.c), from the sysfs tree the PMUs are read from: root's sys/, else
 * $MEMWALL_SYSFS_ROOT, else /sys. */
static json_t *r_topology(struct mctx *c, char *w, size_t n)
{
	char sys[4200], vendor[128];
	if (c->root[0])
		snprintf(sys, sizeof(sys), "%s/sys", c->root);
	json_t *t = mw_topology_describe(c->root[0] ? sys : NULL,
					 cpuinfo_get(c, "vendor_id", vendor, sizeof(vendor)), NULL);
	if (!t)
		snprintf(w, n, "out of memory");
	return t;
}

/* The cgroup's CPU quota (src/base/cgroup.c): {"cpus": 2.0, "file", "value"} where one
 * applies, {"cpus": null, "why"} where none does; null (unavailable) when a quota file holds
 * something else. A run whose threads exceed it is throttled: its tok/s is the quota's. */
static json_t *r_cpu_quota(struct mctx *c, char *w, size_t n)
{
	struct mw_cpu_quota q;
	json_t *o = NULL;
	int rc = mw_cpu_quota(c->root[0] ? c->root : NULL, &q);
	/* The machine's bytes (a cgroup's path, a quota file's text) as UTF-8, which JSON
	 * needs: json_pack refuses anything else. */
	char *why = mw_utf8_fix(q.why), *file = mw_utf8_fix(q.file), *value = mw_utf8_fix(q.value);
	if (!why || !file || !value)
		snprintf(w, n, "out of memory");
	else if (rc < 0)
		snprintf(w, n, "%s", why);
	else if (rc == 0)
		o = json_pack("{s:n, s:s}", "cpus", "why", why);
	else
		o = json_pack("{s:f, s:s, s:s}", "cpus", q.cpus, "file", file, "value", value);
	free(why);
	free(file);
	free(value);
	return o;
}

static const struct {
	const char *name;
	json_t *(*read)(struct mctx *c, char *why, size_t n);
} fields[] = {
	{ "cpu_name", r_cpu_name },
	{ "cpu_vendor", r_vendor },
	{ "cpu_family", r_family },
	{ "cpu_model", r_model },
	{ "cpu_stepping", r_stepping },
	{ "microcode", r_microcode },
	{ "hypervisor", r_hypervisor },
	{ "logical_cpus", r_logical },
	{ "cpu_quota", r_cpu_quota },
	{ "physical_cores", r_cores },
	{ "sockets", r_sockets },
	{ "smt", r_smt },
	{ "caches", r_caches },
	{ "numa_nodes", r_numa },
	{ "topology", r_topology },
	{ "mem_total_bytes", r_mem },
	{ "memory_config", r_memory_config },
	{ "os", r_os },
	{ "kernel", r_kernel },
	{ "kernel_cmdline_perf", r_cmdline },
	{ "mitigations", r_mitigations },
	{ "governor", r_governor },
	{ "boost", r_boost },
	{ "thp", r_thp },
	{ "thp_defrag", r_thp_defrag },
	{ "perf_event_paranoid", r_paranoid },
	{ "clocksource", r_clocksource },
};

json_t *mw_machine_describe(const char *root)
{
	struct mctx *c = calloc(1, sizeof(*c));
	json_t *o = json_object(), *why = json_object();
	if (!c || !o || !why)
		goto fail;
	c->root = root ? root : "";
	if (read_text(c, "/proc/cpuinfo", c->cpuinfo, sizeof(c->cpuinfo)) == 0) {
		/* Keep the first processor's block only. */
		char *end = strstr(c->cpuinfo, "\n\n");
		if (end)
			*end = '\0';
		c->have_cpuinfo = true;
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		char reason[512] = "";
		json_t *v = fields[i].read(c, reason, sizeof(reason));
		json_object_set_new(o, fields[i].name, v ? v : json_null());
		if (!v)
			json_object_set_new(why, fields[i].name,
					    json_string(reason[0] ? reason : "unreadable"));
	}
	/* Derived: hardware threads per core, when both counts are known. */
	json_int_t logical = json_integer_value(json_object_get(o, "logical_cpus"));
	json_int_t cores = json_integer_value(json_object_get(o, "physical_cores"));
	json_object_set_new(o, "threads_per_core",
			    cores > 0 && logical > 0 ? json_integer(logical / cores) : json_null());
	if (!(cores > 0 && logical > 0))
		json_object_set_new(why, "threads_per_core",
				    json_string("needs logical_cpus and physical_cores"));
	json_object_set_new(o, "unavailable", why);
	free(c);
	return o;
fail:
	free(c);
	json_decref(o);
	json_decref(why);
	return NULL;
}

int mw_machine_busy_pct(int ms, double *pct)
{
	unsigned long long a[2][10], busy[2], total[2];
	for (int k = 0; k < 2; k++) {
		FILE *f = fopen("/proc/stat", "r");
		if (!f)
			return -errno;
		memset(a[k], 0, sizeof(a[k]));
		/* proc(5): cpu user nice system idle iowait irq softirq steal guest guest_nice */
		int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &a[k][0], &a[k][1],
				 &a[k][2], &a[k][3], &a[k][4], &a[k][5], &a[k][6], &a[k][7]);
		fclose(f);
		if (got < 5)
			return -EINVAL;
		total[k] = busy[k] = 0;
		for (int i = 0; i < 8; i++)
			total[k] += a[k][i];
		busy[k] = total[k] - a[k][3] - a[k][4];
		if (k == 0) {
			struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	if (total[1] <= total[0])
		return -EAGAIN;
	*pct = 100.0 * (double)(busy[1] - busy[0]) / (double)(total[1] - total[0]);
	return 0;
}

int mw_machine_same(const json_t *a, const json_t *b, char *why, size_t n)
{
	static const char *const keys[] = { "cpu_name", "cpu_family", "cpu_model", "cpu_stepping",
					    "logical_cpus", "sockets" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *x = json_object_get(a, keys[i]), *y = json_object_get(b, keys[i]);
		if (!json_equal(x ? x : json_null(), y ? y : json_null())) {
			char *sx = x ? json_dumps(x, JSON_ENCODE_ANY) : NULL;
			char *sy = y ? json_dumps(y, JSON_ENCODE_ANY) : NULL;
			snprintf(why, n, "machine.%s differs: %s vs %s", keys[i], sx ? sx : "absent",
				 sy ? sy : "absent");
			free(sx);
			free(sy);
			return 0;
		}
	}
	double ma = (double)json_integer_value(json_object_get(a, "mem_total_bytes"));
	double mb = (double)json_integer_value(json_object_get(b, "mem_total_bytes"));
	if (ma - mb > 1073741824.0 || mb - ma > 1073741824.0) {
		snprintf(why, n, "machine.mem_total_bytes differs by more than 1 GiB: %.0f vs %.0f",
			 ma, mb);
		return 0;
	}
	return 1;
}

/* ---- what in the machine's state would distort a run's figures ---------------------------- */

void mw_warn(json_t *list, const char *fmt, ...)
{
	char w[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w, sizeof(w), fmt, ap);
	va_end(ap);
	json_array_append_new(list, json_string(w));
}

double mw_machine_warnings(json_t *w, const json_t *machine)
{
	double busy = NAN;
	const char *gov = json_string_value(json_object_get(machine, "governor"));
	if (gov && strcmp(gov, "performance"))
		mw_warn(w, "the CPU frequency governor is '%s', not 'performance': tok/s will vary "
		     "with the governor's decisions", gov);
	if (json_is_true(json_object_get(machine, "boost")))
		mw_warn(w, "turbo/boost is on: clock speed varies with temperature and load, and so "
		     "does tok/s");
	const char *thp = json_string_value(json_object_get(machine, "thp"));
	if (thp && strcmp(thp, "madvise"))
		mw_warn(w, "transparent huge pages are '%s' (memwall expects 'madvise'): TLB "
		     "behaviour differs from a default system", thp);
	json_t *quota = json_object_get(json_object_get(machine, "cpu_quota"), "cpus");
	if (json_is_number(quota))
		mw_warn(w, "this process's cgroup has a CPU quota of %.2f CPUs (%s: %s): threads "
		     "beyond it are throttled, and tok/s is the quota's, not the machine's",
		     json_number_value(quota),
		     json_string_value(json_object_get(json_object_get(machine, "cpu_quota"),
						       "file")),
		     json_string_value(json_object_get(json_object_get(machine, "cpu_quota"),
						       "value")));
	if (mw_machine_busy_pct(200, &busy) == 0 && busy > 10.0)
		mw_warn(w, "other processes kept %.0f%% of the CPUs busy during preflight: they "
		     "compete for cores and memory bandwidth", busy);
	return busy;
}

json_t *mw_machine_fingerprint(const json_t *machine, json_t *memory, const char *dram_backend,
			       json_t *dram_instances, char sha[65])
{
	static const char *const keys[] = { "cpu_name", "cpu_family", "cpu_model", "cpu_stepping",
					    "microcode", "kernel" };
	json_t *fp = json_object();
	if (!fp || !memory || !dram_instances) {
		json_decref(fp);
		json_decref(memory);
		json_decref(dram_instances);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *v = json_object_get(machine, keys[i]);
		json_object_set_new(fp, keys[i], v ? json_deep_copy(v) : json_null());
	}
	json_object_set_new(fp, "dimms", memory);
	json_object_set_new(fp, "dram_backend", dram_backend ? json_string(dram_backend)
							     : json_null());
	json_object_set_new(fp, "dram_instances", dram_instances);
	/* Compact with sorted keys: the same facts always hash alike. */
	char *text = json_dumps(fp, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text) {
		json_decref(fp);
		return NULL;
	}
	mw_sha256_hex(text, strlen(text), sha);
	free(text);
	return fp;
}
