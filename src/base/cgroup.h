/* src/base/cgroup.h: the CPU bandwidth quota of this process's cgroup (a container's
 * `docker --cpus`, a systemd unit's CPUQuota, Kubernetes' CPU limit): how many CPUs' worth of
 * time it may use, which its affinity mask does not show. A run with more threads than that is
 * throttled, and its tokens per second are the quota's, not the machine's. */
#ifndef MEMWALL_CGROUP_H
#define MEMWALL_CGROUP_H

#include <stddef.h>

struct mw_cpu_quota {
	double cpus;     /* quota / period of the tightest limit; 0 when none applies */
	char file[512];  /* the file that sets it, as the machine names it */
	char value[64];  /* that file's text ("200000 100000"; v1: quota, then period) */
	char why[640];   /* with no limit or a bad one: where memwall looked, what it found */
};

/* Reads the quota from the process's cgroup and every ancestor up to the hierarchy's mount
 * (the tightest wins): cgroup v2's cpu.max, or v1's cpu.cfs_quota_us and cpu.cfs_period_us
 * where the cpu controller is mounted as v1 (Documentation/admin-guide/cgroup-v2.rst, "cpu";
 * cgroup-v1/cfs-bandwidth: scheduler/sched-bwc.rst). Where to look comes from
 * /proc/self/cgroup and /proc/self/mountinfo (proc(5)). root (NULL: $MEMWALL_CGROUP_ROOT, for
 * tests only, else "/") prefixes every path read. Returns 1 with a limit in q, 0 with none
 * (q->why says why: no cgroup file system, "max", -1), -EINVAL when a quota file holds
 * something else (q->why names the file and its text), or -EIO when one is there but cannot
 * be read: a FIFO, a device, a folder, no permission (q->why names the file and says why;
 * q->value stays ""). The strings are the machine's bytes: escape them to print them
 * (src/base/text.h), make them UTF-8 for JSON. */
int mw_cpu_quota(const char *root, struct mw_cpu_quota *q);

/* Threads a run takes when it is not told: the CPUs of this process's affinity mask, no more
 * than its CPU quota rounded up (Go's runtime and the JVM round the same way). why (may be
 * NULL) gets a sentence when the quota is the bound, else "". At least 1. */
int mw_cpus_default(char *why, size_t n);

#endif
