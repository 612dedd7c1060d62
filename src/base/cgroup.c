/* src/base/cgroup.c: the CPU quota of this process's cgroup (cgroup.h).
 *
 * Where the files are: /proc/self/cgroup names the process's cgroup in each hierarchy
 * ("0::/path" for v2, "4:cpu,cpuacct:/path" for v1's cpu controller), and
 * /proc/self/mountinfo says where each hierarchy is mounted and which of its cgroups the
 * mount shows as its top (a container's mount shows its own cgroup as "/"). The cgroup's
 * directory is the mount point plus the path below that top; the quota that binds is the
 * tightest of that directory and its parents up to the mount point, since a parent's limit
 * caps all of its children together. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cgroup.h"
#include "file.h"
#include "mw.h"

/* /proc/self/mountinfo holds a line per mount: some hosts have thousands. */
#define PROC_MAX (4u << 20)
#define QUOTA_FILE_MAX 4096u

struct hier {
	bool v1;            /* the cpu controller's v1 hierarchy, else the v2 one */
	char path[1024];    /* the process's cgroup in it (/proc/self/cgroup) */
	char mount[1024];   /* its mount point */
	char top[1024];     /* the cgroup the mount shows as its root */
	bool have_path, have_mount;
};

/* snprintf for messages and names that may be cut short: a path of a kilobyte is cut, not
 * refused (GCC's -Wformat-truncation does not follow a va_list). */
static void __attribute__((format(printf, 3, 4))) say(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, n, fmt, ap);
	va_end(ap);
}

static const char *root_or_env(const char *root)
{
	const char *fake = getenv("MEMWALL_CGROUP_ROOT");
	/* Tests stand a tree in for the live /proc and /sys/fs/cgroup, to play a container
	 * with a quota (tests/src/test_cgroup.c); a root given by the caller takes precedence. */
	if (root)
		return root;
	return fake && *fake ? fake : "";
}

/* Whether token is one of the comma-separated words of list[0..len). */
static bool has_word(const char *list, size_t len, const char *token)
{
	size_t t = strlen(token);
	for (size_t i = 0; i < len;) {
		size_t j = i;
		while (j < len && list[j] != ',')
			j++;
		if (j - i == t && !memcmp(list + i, token, t))
			return true;
		i = j + 1;
	}
	return false;
}

/* mountinfo's octal escapes (\040 for a space, proc(5)) undone, into out. */
static void unescape(const char *s, size_t len, char *out, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 1 < n; i++) {
		if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			out[o++] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
					  (s[i + 3] - '0'));
			i += 3;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
}

/* From /proc/self/cgroup: the v1 cpu controller's line, else the v2 one. */
static void scan_cgroup(char *text, struct hier *v1, struct hier *v2)
{
	for (char *l = text, *next; l && *l; l = next) {
		next = strchr(l, '\n');
		if (next)
			*next++ = '\0';
		char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		struct hier *h = NULL;
		if (!strncmp(l, "0:", 2) && c2 == c1 + 1)
			h = v2;
		else if (has_word(c1 + 1, (size_t)(c2 - c1 - 1), "cpu"))
			h = v1;
		if (h && !h->have_path) {
			snprintf(h->path, sizeof(h->path), "%s", c2 + 1);
			h->have_path = true;
		}
	}
}

/* From /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE
 * SOURCE SUPEROPTS"; v1's controllers are words of SUPEROPTS. */
static void scan_mounts(char *text, struct hier *v1, struct hier *v2)
{
	for (char *l = text, *next; l && *l; l = next) {
		next = strchr(l, '\n');
		if (next)
			*next++ = '\0';
		char *f[6];
		int nf = 0;
		for (char *p = l; nf < 6 && *p;) {
			while (*p == ' ')
				p++;
			f[nf++] = p;
			while (*p && *p != ' ')
				p++;
		}
		char *dash = strstr(l, " - ");
		if (nf < 6 || !dash)
			continue;
		char fstype[32], opts[512];
		if (sscanf(dash + 3, "%31s %*s %511s", fstype, opts) != 2)
			continue;
		struct hier *h = NULL;
		if (!strcmp(fstype, "cgroup2"))
			h = v2;
		else if (!strcmp(fstype, "cgroup") && has_word(opts, strlen(opts), "cpu"))
			h = v1;
		if (!h || h->have_mount)
			continue;
		unescape(f[3], strcspn(f[3], " "), h->top, sizeof(h->top));
		unescape(f[4], strcspn(f[4], " "), h->mount, sizeof(h->mount));
		h->have_mount = true;
	}
}

/* The first line of root + path into buf. 0; -ENOENT when there is no such file; -EIO when
 * it cannot be read (a FIFO, a device, a folder, past QUOTA_FILE_MAX, no permission), with
 * why[0..wn) saying what it is or what failed, and nothing copied into buf. */
static int read_small(const char *root, const char *path, char *buf, size_t n, char *why,
		      size_t wn)
{
	char full[2048];
	char *text = NULL;
	struct stat st;
	buf[0] = '\0';
	snprintf(full, sizeof(full), "%s%s", root, path);
	int rc = mw_file_read(full, "cgroup file", "", QUOTA_FILE_MAX, &text, NULL, NULL);
	if (rc == -ENOENT)
		return rc;
	if (rc == -EINVAL && stat(full, &st) == 0)
		say(why, wn, "it is %s, not a regular file", mw_file_kind(st.st_mode));
	else if (rc == -EFBIG)
		say(why, wn, "it is over %u bytes, which no quota file is", QUOTA_FILE_MAX);
	else if (rc)
		say(why, wn, "%s", strerror(-rc));
	if (rc)
		return -EIO;
	size_t len = strcspn(text, "\n");
	snprintf(buf, n, "%.*s", (int)len, text);
	free(text);
	return 0;
}

/* The limit set in dir, in CPUs (0: none); -ENOENT when dir has no quota file (v2's root
 * cgroup, a hierarchy without the cpu controller enabled), -EIO when one cannot be read (why
 * says how; file names it), -EINVAL for other text (value holds it). */
static int dir_quota(const char *root, const struct hier *h, const char *dir, double *cpus,
		     char *file, size_t fn, char *value, size_t vn, char *why, size_t wn)
{
	char path[1200], text[64], period[64];
	long long q, p;
	int rc;
	*cpus = 0;
	value[0] = '\0';
	if (!h->v1) {
		snprintf(path, sizeof(path), "%s/cpu.max", dir);
		snprintf(file, fn, "%s", path);
		if ((rc = read_small(root, path, text, sizeof(text), why, wn)))
			return rc;
		snprintf(value, vn, "%s", text);
		char max[16];
		if (sscanf(text, "%15s %lld", max, &p) == 2 && !strcmp(max, "max") && p > 0)
			return 0;
		if (sscanf(text, "%lld %lld", &q, &p) != 2 || q <= 0 || p <= 0)
			return -EINVAL;
	} else {
		snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir);
		snprintf(file, fn, "%s", path);
		if ((rc = read_small(root, path, text, sizeof(text), why, wn)))
			return rc;
		snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
		if ((rc = read_small(root, path, period, sizeof(period), why, wn))) {
			snprintf(file, fn, "%s", path);
			return rc;
		}
		say(value, vn, "%s %s", text, period);
		if (sscanf(text, "%lld", &q) != 1 || sscanf(period, "%lld", &p) != 1 || p <= 0 ||
		    (q <= 0 && q != -1))
			return -EINVAL;
		if (q == -1)
			return 0;
	}
	*cpus = (double)q / (double)p;
	return 0;
}

int mw_cpu_quota(const char *root, struct mw_cpu_quota *q)
{
	struct hier v1 = { .v1 = true }, v2 = { .v1 = false }, *h;
	char *text = NULL, dir[1200], file[1200], value[64] = "", why[512] = "";
	int rc;
	memset(q, 0, sizeof(*q));
	root = root_or_env(root);
	snprintf(dir, sizeof(dir), "%s/proc/self/cgroup", root);
	if ((rc = mw_file_read(dir, "cgroup list", "", PROC_MAX, &text, NULL, NULL))) {
		snprintf(q->why, sizeof(q->why), "/proc/self/cgroup: %s (no cgroups)",
			 strerror(-rc));
		return 0;
	}
	scan_cgroup(text, &v1, &v2);
	free(text);
	snprintf(dir, sizeof(dir), "%s/proc/self/mountinfo", root);
	if ((rc = mw_file_read(dir, "mount table", "", PROC_MAX, &text, NULL, NULL))) {
		snprintf(q->why, sizeof(q->why), "/proc/self/mountinfo: %s", strerror(-rc));
		return 0;
	}
	scan_mounts(text, &v1, &v2);
	free(text);
	/* Where the cpu controller is mounted as v1 (hybrid systems), the v2 tree has none. */
	h = v1.have_path && v1.have_mount ? &v1 : v2.have_path && v2.have_mount ? &v2 : NULL;
	if (!h) {
		snprintf(q->why, sizeof(q->why), "no cgroup hierarchy with the cpu controller is "
			 "mounted (/proc/self/mountinfo)");
		return 0;
	}
	/* The cgroup's directory: below the mount's top, or (a path outside it, as a container
	 * without its own cgroup namespace sees the host's) the mount point itself. */
	size_t tl = strlen(h->top);
	const char *below = h->path;
	if (!strcmp(h->top, "/"))
		tl = 0;
	if (tl && !strncmp(h->path, h->top, tl) && (h->path[tl] == '/' || !h->path[tl]))
		below = h->path + tl;
	else if (tl)
		below = "";
	size_t ml = strlen(h->mount);
	while (ml > 1 && h->mount[ml - 1] == '/')
		h->mount[--ml] = '\0';
	snprintf(dir, sizeof(dir), "%s%s", ml > 1 ? h->mount : "", below);
	while (strlen(dir) > ml && dir[strlen(dir) - 1] == '/')
		dir[strlen(dir) - 1] = '\0';
	if (!dir[0])
		snprintf(dir, sizeof(dir), "/");
	/* the cgroup, then each parent, the mount point last */
	for (;;) {
		double cpus;
		rc = dir_quota(root, h, dir, &cpus, file, sizeof(file), value, sizeof(value), why,
			       sizeof(why));
		/* A quota file that is there but cannot be read leaves the limit unknown: said,
		 * never read as "no quota" nor as text it never gave. */
		if (rc == -EIO) {
			say(q->why, sizeof(q->why), "%s: cannot read this CPU quota file: %s", file,
			    why);
			q->cpus = 0;
			return -EIO;
		}
		if (rc == -EINVAL) {
			say(q->why, sizeof(q->why), "%s: \"%s\" is not a CPU quota (%s)", file,
				 value, h->v1 ? "a quota in us or -1, then a period in us"
					      : "\"max\" or a quota in us, then a period in us");
			q->cpus = 0;
			return -EINVAL;
		}
		if (!rc && cpus > 0 && (q->cpus == 0 || cpus < q->cpus)) {
			q->cpus = cpus;
			say(q->file, sizeof(q->file), "%s", file);
			snprintf(q->value, sizeof(q->value), "%s", value);
		}
		char *slash = strlen(dir) > ml ? strrchr(dir + (ml > 1 ? ml : 0), '/') : NULL;
		if (!slash)
			break;
		*slash = '\0';
		if (!dir[0])
			snprintf(dir, sizeof(dir), "/");
	}
	if (q->cpus > 0)
		return 1;
	say(q->why, sizeof(q->why), "no CPU quota on cgroup %s or its parents (%s under %s)",
		 h->path, h->v1 ? "cpu.cfs_quota_us" : "cpu.max", h->mount);
	return 0;
}

int mw_cpus_default(char *why, size_t n)
{
	struct mw_cpu_quota q;
	int cpus = mw_cpus_allowed();
	if (why && n)
		why[0] = '\0';
	if (mw_cpu_quota(NULL, &q) != 1)
		return cpus;
	double up = ceil(q.cpus - 1e-9);
	if (up >= cpus)
		return cpus;
	int use = up < 1 ? 1 : (int)up;
	if (why && n)
		snprintf(why, n, "%d of the %d CPUs this process may run on: its cgroup's CPU "
			 "quota is %.2f CPUs (%s: %s)", use, cpus, q.cpus, q.file, q.value);
	return use;
}
