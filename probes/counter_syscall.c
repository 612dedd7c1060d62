/* probes/counter_syscall.c: the plain counter layer: one event on one (pid, cpu), through
 * perf_event_open(2) and read(2); and file counters (resctrl) read as text.
 *
 * Every event is opened with PERF_FORMAT_TOTAL_TIME_ENABLED | _RUNNING so each read carries
 * the value and both times together (the layout of perf_event_open(2), "read_format"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

struct syscall_counter {
	int fd;
};

static int open_fd(struct counter **out, const struct perf_event_attr *attr, int pid, int cpu,
		   int group_fd)
{
	struct syscall_counter *c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	struct perf_event_attr a = *attr;
	int fd = (int)syscall(SYS_perf_event_open, &a, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(c);
		return -e;
	}
	c->fd = fd;
	*out = (struct counter *)c;
	return 0;
}

static int sys_open(struct counter **out, const struct perf_event_attr *attr, int pid, int cpu)
{
	return open_fd(out, attr, pid, cpu, -1);
}

static int sys_open_member(struct counter **out, const struct perf_event_attr *attr, int pid,
			   int cpu, struct counter *leader)
{
	return open_fd(out, attr, pid, cpu, ((struct syscall_counter *)leader)->fd);
}

static int sys_read_group(struct counter *cc, uint64_t *buf, size_t n)
{
	struct syscall_counter *c = (struct syscall_counter *)cc;
	ssize_t got = read(c->fd, buf, n * sizeof(uint64_t));
	if (got < 0)
		return -errno;
	return got >= (ssize_t)(3 * sizeof(uint64_t)) && buf[0] + 3 <= n &&
			       (size_t)got == (buf[0] + 3) * sizeof(uint64_t) ? 0 : -EIO;
}

static int sys_read(struct counter *cc, uint64_t v[3])
{
	struct syscall_counter *c = (struct syscall_counter *)cc;
	ssize_t n = read(c->fd, v, 3 * sizeof(uint64_t));
	if (n < 0)
		return -errno;
	return n == 3 * sizeof(uint64_t) ? 0 : -EIO;
}

static int sys_ioctl(struct counter *cc, unsigned long req)
{
	struct syscall_counter *c = (struct syscall_counter *)cc;
	return ioctl(c->fd, req, 0) < 0 ? -errno : 0;
}

static int sys_enable(struct counter *c)
{
	return sys_ioctl(c, PERF_EVENT_IOC_ENABLE);
}

static int sys_disable(struct counter *c)
{
	return sys_ioctl(c, PERF_EVENT_IOC_DISABLE);
}

static void sys_close(struct counter *cc)
{
	struct syscall_counter *c = (struct syscall_counter *)cc;
	if (!c)
		return;
	close(c->fd);
	free(c);
}

const struct counter_ops prb_counter_syscall_ops = {
	.name = "syscall",
	.open = sys_open,
	.read = sys_read,
	.enable = sys_enable,
	.disable = sys_disable,
	.close = sys_close,
	.open_member = sys_open_member,
	.read_group = sys_read_group,
};

/* ---- file counters */

struct plain_file {
	struct file_counter f;
	char path[512];
};

static int plain_read(struct file_counter *ff, uint64_t *v)
{
	/* resctrl prints these instead of a number when the hardware gave none (the RMID's
	 * counter is not assigned or was reset: rdtgroup_mondata_show in the kernel's
	 * ctrlmondata.c, and Documentation/filesystems/resctrl.rst) */
	static const char *const no_value[] = { "Unavailable", "Error", "Unassigned" };
	struct plain_file *f = (struct plain_file *)ff;
	char buf[64];
	int rc = prb_sysfs_read(f->path, buf, sizeof(buf), NULL);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < ARRAY_SIZE(no_value); i++)
		if (!strcmp(buf, no_value[i]))
			return -ENODATA;
	char *end = NULL;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return errno || !buf[0] || *end || buf[0] == '-' ? -EIO : 0;
}

static void plain_close(struct file_counter *f)
{
	free(f);
}

int prb_file_counter_open_plain(struct file_counter **out, const char *path)
{
	struct plain_file *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	if (fmt_into(f->path, "%s", path) < 0) {
		free(f);
		return -ENAMETOOLONG;
	}
	f->f.read = plain_read;
	f->f.close = plain_close;
	f->f.bits = 64;
	*out = &f->f;
	return 0;
}
