/* src/base/machine.h: what machine a result came from (provenance), read from /proc and /sys. */
#ifndef MEMWALL_MACHINE_H
#define MEMWALL_MACHINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Describes this machine as a JSON object: CPU name, vendor, family/model/stepping,
 * microcode, logical CPUs, the cgroup's CPU quota (src/base/cgroup.h), cores, sockets, SMT,
 * caches, NUMA nodes, the memory topology ("topology": src/base/topology.h), memory, OS, kernel,
 * the kernel parameters that affect performance (not the whole command line), mitigations,
 * governor, boost, THP, perf_event_paranoid, clocksource and
 * whether a hypervisor is present. A field that cannot be read is null, and
 * "unavailable"[field] says why. New reference; NULL only when memory runs out.
 * root (NULL for "/") prefixes every path, so tests can point it at a recorded tree. */
json_t *mw_machine_describe(const char *root);

/* Bytes of a /proc/meminfo field ("MemAvailable", "SwapTotal", ...); -ENOENT if absent.
 * With root NULL, $MEMWALL_MEMINFO (for tests only) names a file read in its place. */
int mw_meminfo(const char *root, const char *key, uint64_t *bytes);

/* Size in bytes of CPU 0's data or unified cache of the given level (2 for L2), from
 * root/sys/devices/system/cpu/cpu0/cache/index*; source (may be NULL) receives the size
 * file. -ENOENT when sysfs does not say (a container, a VM without cache topology). */
int mw_cache_size(const char *root, int level, uint64_t *bytes, char *source, size_t n);

/* The allow-listed environment variables that are set (MEMWALL_CACHE_DIR, MEMWALL_COUNTERS,
 * MEMWALL_SYSFS_ROOT, MEMWALL_MEMINFO, MEMWALL_CGROUP_ROOT, MEMWALL_INJECT_ERRNO,
 * OMP_NUM_THREADS), as
 * {"NAME": "value"}, for a result record: never the whole environment. Values are redacted
 * (src/base/redact.h); *redacted says whether any was. New reference. */
json_t *mw_environment_allowed(bool *redacted);

/* Whether a model file of model_bytes fits in the memory available now: -ENOMEM when
 * MemAvailable is below *need (model_bytes plus 10%), else 0, also when MemAvailable cannot
 * be read (nothing to go on). *avail gets MemAvailable, 0 when unreadable. Callers refuse
 * before mapping the model unless the user forces it: paging would distort every figure. */
int mw_memory_fits(uint64_t model_bytes, uint64_t *avail, uint64_t *need);

/* Percentage of all CPUs' time spent busy (not idle or iowait) during a window of ms
 * milliseconds, from /proc/stat; includes the caller. -errno when /proc/stat is unreadable. */
int mw_machine_busy_pct(int ms, double *pct);
/* Appends to w (a JSON array) a sentence for each thing in machine (mw_machine_describe's
 * object) that would distort a run's figures: a governor other than performance, boost on,
 * a cgroup CPU quota, transparent huge pages other than madvise, other processes keeping
 * the CPUs busy (sampled for 200 ms). Returns that busy percentage (NaN when it could not be
 * read). */
double mw_machine_warnings(json_t *w, const json_t *machine);
/* Appends the formatted sentence (at most 511 bytes) to list, a JSON array of warnings. */
void mw_warn(json_t *list, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether two machine descriptions are the same machine for comparing results: the same CPU
 * name, family/model/stepping, logical CPU count, sockets and memory size (within 1 GiB).
 * Returns 1 when they are; 0 otherwise, with why[0..n) naming the first difference. */
int mw_machine_same(const json_t *a, const json_t *b, char *why, size_t n);

/* What DRAM figures measured on a machine depend on, as one object: {"cpu_name",
 * "cpu_family", "cpu_model", "cpu_stepping", "microcode", "kernel"} from machine (a
 * mw_machine_describe object, this machine's or a record's), "dimms" (memory: a description of
 * the DIMMs, or null), "dram_backend" (or null) and "dram_instances" (an array of "pmu@cpu"
 * strings). sha[65] receives the sha256 of its compact JSON with sorted keys. The calibration
 * and verification stores key on it (src/run/dram_calibration.c, with this machine's EDAC DIMM
 * list) and so do the results store's series (src/record/series.c, from a record). Steals
 * memory and dram_instances (NULL for either: NULL back). New reference; NULL on ENOMEM. */
json_t *mw_machine_fingerprint(const json_t *machine, json_t *memory, const char *dram_backend,
			       json_t *dram_instances, char sha[65]);

#endif
