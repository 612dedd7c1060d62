/* tests/test_cgroup.c: src/base/cgroup.c against trees written here into a scratch root, each
 * the /proc/self and /sys/fs/cgroup of one kind of host: a container of cgroup v2 with its own
 * namespace, a systemd host whose limit sits on a parent, a cgroup v1 container, a hybrid
 * host, no limit, a bad quota file, no cgroups at all. The expected CPUs are the quota files'
 * numbers divided here. Then the default thread count against the affinity mask, with the tree
 * named by $MEMWALL_CGROUP_ROOT. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "mw.h"
#include "test.h"

static char base[256];
static char root[512];
static int n_roots;

/* A fresh root for the next case. */
static void next_root(void)
{
	snprintf(root, sizeof(root), "%s/%d", base, ++n_roots);
	mkdir(root, 0755);
}

static void put(const char *rel, const char *text)
{
	char path[1024], dir[1024];
	snprintf(path, sizeof(path), "%s%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = dir + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(dir, 0755);
			*p = '/';
		}
	FILE *f = fopen(path, "w");
	T_ASSERT(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

#define V2_MOUNT "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
#define ROOT_MOUNT "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"

static void expect(int want_rc, double cpus, const char *file, const char *value,
		   const char *why)
{
	struct mw_cpu_quota q;
	int rc = mw_cpu_quota(root, &q);
	T_EQ_INT(rc, want_rc);
	T_NEAR(q.cpus, cpus, 1e-12);
	if (file)
		T_EQ_STR(q.file, file);
	if (value)
		T_EQ_STR(q.value, value);
	if (why)
		T_CONTAINS(q.why, why);
}

static void cases(void)
{
	/* Docker on cgroup v2 (--cpus=1.5): its own namespace, the mount's top is the cgroup */
	next_root();
	put("/proc/self/cgroup", "0::/\n");
	put("/proc/self/mountinfo", ROOT_MOUNT V2_MOUNT);
	put("/sys/fs/cgroup/cpu.max", "150000 100000\n");
	expect(1, 150000.0 / 100000.0, "/sys/fs/cgroup/cpu.max", "150000 100000", NULL);

	/* A systemd host: no limit on the scope, 3 CPUs on its slice, a looser one above that,
	 * none on the root cgroup (which has no cpu.max): the tightest, from the slice */
	next_root();
	put("/proc/self/cgroup", "0::/work.slice/inner.slice/run-1.scope\n");
	put("/proc/self/mountinfo", ROOT_MOUNT V2_MOUNT);
	put("/sys/fs/cgroup/work.slice/inner.slice/run-1.scope/cpu.max", "max 100000\n");
	put("/sys/fs/cgroup/work.slice/inner.slice/cpu.max", "300000 100000\n");
	put("/sys/fs/cgroup/work.slice/cpu.max", "800000 200000\n");
	expect(1, 300000.0 / 100000.0, "/sys/fs/cgroup/work.slice/inner.slice/cpu.max",
	       "300000 100000", NULL);

	/* the same with the slice looser than its parent: the parent's 4 CPUs bind */
	next_root();
	put("/proc/self/cgroup", "0::/work.slice/inner.slice/run-1.scope\n");
	put("/proc/self/mountinfo", ROOT_MOUNT V2_MOUNT);
	put("/sys/fs/cgroup/work.slice/inner.slice/cpu.max", "900000 100000\n");
	put("/sys/fs/cgroup/work.slice/cpu.max", "800000 200000\n");
	expect(1, 800000.0 / 200000.0, "/sys/fs/cgroup/work.slice/cpu.max", NULL, NULL);

	/* no limit anywhere: "max" on the cgroup, nothing above */
	next_root();
	put("/proc/self/cgroup", "0::/user.slice\n");
	put("/proc/self/mountinfo", ROOT_MOUNT V2_MOUNT);
	put("/sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
	expect(0, 0, NULL, NULL, "no CPU quota on cgroup /user.slice");

	/* cgroup v1 in a container: the cpu controller mounted with the container's cgroup as
	 * its top, so the files are at the mount point itself */
	next_root();
	put("/proc/self/cgroup", "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n");
	put("/proc/self/mountinfo",
	    ROOT_MOUNT "40 30 0:35 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup "
		       "cgroup rw,cpu,cpuacct\n"
		       "41 30 0:36 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup "
		       "rw,memory\n");
	put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "250000\n");
	put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
	expect(1, 250000.0 / 100000.0, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us",
	       "250000 100000", NULL);

	/* v1 with no limit (-1) */
	next_root();
	put("/proc/self/cgroup", "4:cpu,cpuacct:/\n");
	put("/proc/self/mountinfo", ROOT_MOUNT "40 30 0:35 / /sys/fs/cgroup/cpu,cpuacct rw - "
					      "cgroup cgroup rw,cpu,cpuacct\n");
	put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
	put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
	expect(0, 0, NULL, NULL, "cpu.cfs_quota_us under /sys/fs/cgroup/cpu,cpuacct");

	/* hybrid: v1's cpu hierarchy holds the limit; the unified tree's file is not read */
	next_root();
	put("/proc/self/cgroup", "4:cpu,cpuacct:/svc\n0::/svc\n");
	put("/proc/self/mountinfo",
	    ROOT_MOUNT "30 23 0:26 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
		       "40 30 0:35 / /sys/fs/cgroup/cpu\\040acct rw - cgroup cgroup rw,cpu\n");
	put("/sys/fs/cgroup/unified/svc/cpu.max", "100000 100000\n");
	put("/sys/fs/cgroup/cpu acct/svc/cpu.cfs_quota_us", "50000\n");
	put("/sys/fs/cgroup/cpu acct/svc/cpu.cfs_period_us", "100000\n");
	expect(1, 50000.0 / 100000.0, "/sys/fs/cgroup/cpu acct/svc/cpu.cfs_quota_us", NULL, NULL);

	/* a host view of a container's cgroup (no namespace): the mount's top is "/" */
	next_root();
	put("/proc/self/cgroup", "0::/system.slice/docker-1234.scope\n");
	put("/proc/self/mountinfo", ROOT_MOUNT V2_MOUNT);
	put("/sys/fs/cgroup/system.slice/docker-1234.scope/cpu.max", "200000 50000\n");
	expect(1, 200000.0 / 50000.0, NULL, NULL, NULL);

	/* a quota file that says something else: an error naming it and its text */
	next_root();
	put("/proc/self/cgroup", "0::/\n");
	put("/proc/self/mountinfo", V2_MOUNT);
	put("/sys/fs/cgroup/cpu.max", "lots\n");
	expect(-EINVAL, 0, NULL, NULL, "/sys/fs/cgroup/cpu.max: \"lots\" is not a CPU quota");

	/* v1 with a zero period */
	next_root();
	put("/proc/self/cgroup", "3:cpu:/\n");
	put("/proc/self/mountinfo", "40 30 0:35 / /cg rw - cgroup cgroup rw,cpu\n");
	put("/cg/cpu.cfs_quota_us", "100000\n");
	put("/cg/cpu.cfs_period_us", "0\n");
	expect(-EINVAL, 0, NULL, NULL, "\"100000 0\" is not a CPU quota");

	/* no cgroups: no /proc/self/cgroup, or no hierarchy with the cpu controller mounted */
	next_root();
	expect(0, 0, NULL, NULL, "/proc/self/cgroup");
	next_root();
	put("/proc/self/cgroup", "5:memory:/x\n");
	put("/proc/self/mountinfo", ROOT_MOUNT);
	expect(0, 0, NULL, NULL, "no cgroup hierarchy with the cpu controller");
}

/* mw_cpus_default through $MEMWALL_CGROUP_ROOT: the mask's CPUs, no more than the quota
 * rounded up, and the sentence only where the quota binds. */
static void defaults(void)
{
	cpu_set_t set;
	char why[512], text[64];
	T_EQ_INT(sched_getaffinity(0, sizeof(set), &set), 0);
	int mask = CPU_COUNT(&set);
	static const double quotas[] = { 0.3, 1.0, 1.5, 64.0 };
	for (size_t i = 0; i < sizeof(quotas) / sizeof(quotas[0]); i++) {
		next_root();
		put("/proc/self/cgroup", "0::/\n");
		put("/proc/self/mountinfo", V2_MOUNT);
		snprintf(text, sizeof(text), "%.0f 100000\n", quotas[i] * 100000);
		put("/sys/fs/cgroup/cpu.max", text);
		setenv("MEMWALL_CGROUP_ROOT", root, 1);
		int up = (int)ceil(quotas[i]) < 1 ? 1 : (int)ceil(quotas[i]);
		int want = up < mask ? up : mask;
		T_EQ_INT(mw_cpus_default(why, sizeof(why)), want);
		if (up < mask)
			T_CONTAINS(why, "its cgroup's CPU quota");
		else
			T_EQ_STR(why, "");
	}
	next_root();
	setenv("MEMWALL_CGROUP_ROOT", root, 1); /* an empty tree: no cgroups */
	T_EQ_INT(mw_cpus_default(why, sizeof(why)), mask);
	unsetenv("MEMWALL_CGROUP_ROOT");
}

int main(void)
{
	snprintf(base, sizeof(base), "/tmp/mw-test-cgroup-XXXXXX");
	if (!mkdtemp(base))
		return 1;
	cases();
	defaults();
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", base);
	return t_done();
}
