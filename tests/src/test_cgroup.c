/* tests/src/test_cgroup.c: src/base/cgroup.c against trees written here into a scratch root, each
 * the /proc/self and /sys/fs/cgroup of one kind of host: a container of cgroup v2 with its own
 * namespace, a systemd host whose limit sits on a parent, a cgroup v1 container, a hybrid
 * host, no limit, a bad quota file, no cgroups at all. The expected CPUs are the quota files'
 * numbers divided here. Then the default thread count against the affinity mask, with the tree
 * named by $MEMWALL_CGROUP_ROOT. Issue 43: a quota file that is there but cannot be read (a
 * FIFO, a folder, a device) is said to be unreadable, naming the file and what it is, with
 * nothing copied as its text (the reader's refusal was taken for bad text, and a buffer never
 * filled was printed). */
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

#define V2_MOUNT "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
#define ROOT_MOUNT "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
#define V1_CPU(top)                                                                            \
	"40 30 0:35 " top " /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
#define CG "/sys/fs/cgroup"

/* One host: /proc/self/cgroup, /proc/self/mountinfo (NULL: absent), up to four quota files,
 * and what mw_cpu_quota must say: its return, the CPUs (the files' numbers, divided here), and
 * where given, the file, its text and a piece of the reason. */
static const struct host {
	const char *what, *cgroup, *mounts;
	const char *files[4][2];
	int rc;
	double cpus;
	const char *file, *value, *why;
} hosts[] = {
	{ "Docker on cgroup v2 (--cpus=1.5), its own namespace: the mount's top is the cgroup",
	  "0::/\n", ROOT_MOUNT V2_MOUNT, { { CG "/cpu.max", "150000 100000\n" } },
	  1, 150000.0 / 100000.0, CG "/cpu.max", "150000 100000", NULL },
	{ "systemd: none on the scope, 3 CPUs on its slice, looser above, none on the root",
	  "0::/work.slice/inner.slice/run-1.scope\n", ROOT_MOUNT V2_MOUNT,
	  { { CG "/work.slice/inner.slice/run-1.scope/cpu.max", "max 100000\n" },
	    { CG "/work.slice/inner.slice/cpu.max", "300000 100000\n" },
	    { CG "/work.slice/cpu.max", "800000 200000\n" } },
	  1, 300000.0 / 100000.0, CG "/work.slice/inner.slice/cpu.max", "300000 100000", NULL },
	{ "the slice looser than its parent: the parent's 4 CPUs bind",
	  "0::/work.slice/inner.slice/run-1.scope\n", ROOT_MOUNT V2_MOUNT,
	  { { CG "/work.slice/inner.slice/cpu.max", "900000 100000\n" },
	    { CG "/work.slice/cpu.max", "800000 200000\n" } },
	  1, 800000.0 / 200000.0, CG "/work.slice/cpu.max", NULL, NULL },
	{ "no limit anywhere: max on the cgroup, nothing above", "0::/user.slice\n",
	  ROOT_MOUNT V2_MOUNT, { { CG "/user.slice/cpu.max", "max 100000\n" } },
	  0, 0, NULL, NULL, "no CPU quota on cgroup /user.slice" },
	{ "cgroup v1 in a container: the mount's top is its cgroup, the files at the mount point",
	  "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n",
	  ROOT_MOUNT V1_CPU("/docker/abc") "41 30 0:36 /docker/abc " CG "/memory ro - cgroup "
					   "cgroup rw,memory\n",
	  { { CG "/cpu,cpuacct/cpu.cfs_quota_us", "250000\n" },
	    { CG "/cpu,cpuacct/cpu.cfs_period_us", "100000\n" } },
	  1, 250000.0 / 100000.0, CG "/cpu,cpuacct/cpu.cfs_quota_us", "250000 100000", NULL },
	{ "v1 with no limit (-1)", "4:cpu,cpuacct:/\n", ROOT_MOUNT V1_CPU("/"),
	  { { CG "/cpu,cpuacct/cpu.cfs_quota_us", "-1\n" },
	    { CG "/cpu,cpuacct/cpu.cfs_period_us", "100000\n" } },
	  0, 0, NULL, NULL, "cpu.cfs_quota_us under " CG "/cpu,cpuacct" },
	{ "hybrid: v1's cpu hierarchy (a mount point with an escaped space) holds the limit",
	  "4:cpu,cpuacct:/svc\n0::/svc\n",
	  ROOT_MOUNT "30 23 0:26 / " CG "/unified rw - cgroup2 cgroup2 rw\n"
		     "40 30 0:35 / " CG "/cpu\\040acct rw - cgroup cgroup rw,cpu\n",
	  { { CG "/unified/svc/cpu.max", "100000 100000\n" },
	    { CG "/cpu acct/svc/cpu.cfs_quota_us", "50000\n" },
	    { CG "/cpu acct/svc/cpu.cfs_period_us", "100000\n" } },
	  1, 50000.0 / 100000.0, CG "/cpu acct/svc/cpu.cfs_quota_us", NULL, NULL },
	{ "a host's view of a container's cgroup (no namespace): the mount's top is /",
	  "0::/system.slice/docker-1234.scope\n", ROOT_MOUNT V2_MOUNT,
	  { { CG "/system.slice/docker-1234.scope/cpu.max", "200000 50000\n" } },
	  1, 200000.0 / 50000.0, NULL, NULL, NULL },
	{ "a quota file that says something else", "0::/\n", V2_MOUNT,
	  { { CG "/cpu.max", "lots\n" } },
	  -EINVAL, 0, NULL, NULL, CG "/cpu.max: \"lots\" is not a CPU quota" },
	{ "v1 with a zero period", "3:cpu:/\n", "40 30 0:35 / /cg rw - cgroup cgroup rw,cpu\n",
	  { { "/cg/cpu.cfs_quota_us", "100000\n" }, { "/cg/cpu.cfs_period_us", "0\n" } },
	  -EINVAL, 0, NULL, NULL, "\"100000 0\" is not a CPU quota" },
	{ "no cgroups: no /proc/self/cgroup", NULL, NULL, { { NULL } },
	  0, 0, NULL, NULL, "/proc/self/cgroup" },
	{ "no hierarchy with the cpu controller mounted", "5:memory:/x\n", ROOT_MOUNT, { { NULL } },
	  0, 0, NULL, NULL, "no cgroup hierarchy with the cpu controller" },
};

static void cases(void)
{
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		const struct host *h = &hosts[i];
		struct mw_cpu_quota q;
		next_root();
		if (h->cgroup)
			t_put(root, "/proc/self/cgroup", h->cgroup);
		if (h->mounts)
			t_put(root, "/proc/self/mountinfo", h->mounts);
		for (int f = 0; f < 4 && h->files[f][0]; f++)
			t_put(root, h->files[f][0], h->files[f][1]);
		int rc = mw_cpu_quota(root, &q);
		if (rc != h->rc || fabs(q.cpus - h->cpus) > 1e-12)
			printf("host: %s\n", h->what);
		T_EQ_INT(rc, h->rc);
		T_NEAR(q.cpus, h->cpus, 1e-12);
		if (h->file)
			T_EQ_STR(q.file, h->file);
		if (h->value)
			T_EQ_STR(q.value, h->value);
		if (h->why)
			T_CONTAINS(q.why, h->why);
	}
}

/* Quota files that cannot be read: v2's cpu.max a FIFO, a folder, a link to /dev/null; v1's
 * period a FIFO. Each under an alarm (a blocking open of a FIFO would hang). */
static void unreadable(void)
{
	static const struct {
		const char *cgroup, *mounts, *quota, *file, *kind;
		char make; /* 'f' FIFO, 'd' folder, 'n' link to /dev/null */
	} c[] = {
		{ "0::/\n", V2_MOUNT, NULL, CG "/cpu.max", "a FIFO", 'f' },
		{ "0::/\n", V2_MOUNT, NULL, CG "/cpu.max", "a directory", 'd' },
		{ "0::/\n", V2_MOUNT, NULL, CG "/cpu.max", "a character device", 'n' },
		{ "3:cpu:/\n", "40 30 0:35 / /cg rw - cgroup cgroup rw,cpu\n", "/cg/cpu.cfs_quota_us",
		  "/cg/cpu.cfs_period_us", "a FIFO", 'f' },
	};
	char path[1024];
	alarm(10);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct mw_cpu_quota q;
		next_root();
		t_put(root, "/proc/self/cgroup", c[i].cgroup);
		t_put(root, "/proc/self/mountinfo", c[i].mounts);
		if (c[i].quota)
			t_put(root, c[i].quota, "100000\n");
		t_put(root, c[i].file, "");
		snprintf(path, sizeof(path), "%s%s", root, c[i].file);
		T_EQ_INT(unlink(path), 0);
		if (c[i].make == 'f')
			T_EQ_INT(mkfifo(path, 0600), 0);
		else if (c[i].make == 'd')
			T_EQ_INT(mkdir(path, 0700), 0);
		else
			T_EQ_INT(symlink("/dev/null", path), 0);
		memset(&q, 0x55, sizeof(q)); /* what an unfilled buffer would show */
		T_EQ_INT(mw_cpu_quota(root, &q), -EIO);
		T_NEAR(q.cpus, 0, 0);
		T_EQ_STR(q.value, "");
		char want[600];
		snprintf(want, sizeof(want), "%s: cannot read this CPU quota file: it is %s, not a "
			 "regular file", c[i].file, c[i].kind);
		T_EQ_STR(q.why, want);
		/* the default thread count ignores it: the affinity mask */
		setenv("MEMWALL_CGROUP_ROOT", root, 1);
		T_EQ_INT(mw_cpus_default(NULL, 0), mw_cpus_allowed());
		unsetenv("MEMWALL_CGROUP_ROOT");
	}
	alarm(0);
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
		snprintf(text, sizeof(text), "%.0f 100000\n", quotas[i] * 100000);
		t_cgroup_tree(root, text);
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
	t_mkdtemp(base);
	cases();
	unreadable();
	defaults();
	return t_done_rm(base, 0);
}
