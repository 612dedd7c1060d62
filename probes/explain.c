/* probes/explain.c: why perf_event_open failed, and what to do about it.
 *
 * The causes come from perf_event_open(2) ERRORS and kernel/events/core.c: the paranoid check
 * (perf_allow_kernel/perf_allow_cpu), the PMU lookup (-ENOENT when no PMU claims attr.type),
 * and the uncore drivers' event_init (-EINVAL for cpu < 0 or exclude bits on a PMU with
 * PERF_PMU_CAP_NO_EXCLUDE).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

struct cause {
	int err;
	const char *name;
	const char *text;
};

static const struct cause causes[] = {
	{ EACCES, "EACCES", "permission denied by kernel.perf_event_paranoid: system-wide and uncore "
		  "events need paranoid <= 0 (sysctl -w kernel.perf_event_paranoid=0) or the "
		  "CAP_PERFMON capability (setcap cap_perfmon+ep on the memwall binary, or run as "
		  "root); core events of your own threads need paranoid <= 2" },
	{ EPERM, "EPERM", "operation not permitted: the kernel's perf_event_paranoid setting or a "
		 "security module (SELinux, a container's seccomp profile) refused it; grant "
		 "CAP_PERFMON (setcap cap_perfmon+ep), lower kernel.perf_event_paranoid, or allow "
		 "perf_event_open in the container" },
	{ ENOENT, "ENOENT", "this PMU or event does not exist on this machine: the kernel has no driver for "
		  "it, or it is not this CPU's event. Virtual machines usually expose no uncore PMUs "
		  "(memory controllers), no RAPL energy counters, and often no hardware core "
		  "counters at all: measure on bare metal" },
	{ ENODEV, "ENODEV", "the PMU exists but cannot count here (no device behind it, or this CPU is "
		  "not one it covers). Virtual machines usually expose no uncore PMUs: measure on "
		  "bare metal" },
	{ EINVAL, "EINVAL", "the kernel rejected the event's attributes: uncore events must be opened "
		  "system-wide on a CPU from the PMU's cpumask (pid -1), with no exclude_user/"
		  "exclude_kernel bits; or the config value is not one this PMU accepts" },
	{ EOPNOTSUPP, "EOPNOTSUPP", "this PMU does not support what was asked (sampling, per-task counting or "
		      "exclude bits on an uncore PMU); count system-wide without sampling" },
	{ EBUSY, "EBUSY", "the counter is in use by someone else (another perf session, the NMI "
		 "watchdog, or a tool holding the uncore counters): stop it and retry "
		 "(sysctl -w kernel.nmi_watchdog=0 frees a core counter)" },
	{ EMFILE, "EMFILE", "too many open files: raise the limit (ulimit -n)" },
	{ ENOSPC, "ENOSPC", "no free hardware counter for this event" },
	{ E2BIG, "E2BIG", "the kernel does not understand this perf_event_attr size: the kernel is older "
		 "than the headers memwall was built with" },
	{ ENOSYS, "ENOSYS", "perf_event_open is not available: the kernel was built without "
		  "CONFIG_PERF_EVENTS, or a sandbox blocks the syscall" },
};

const char *prb_explain(int err, const char *event)
{
	static __thread char buf[1024];
	int e = abs(err);
	const struct cause *c = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(causes); i++)
		if (causes[i].err == e)
			c = &causes[i];
	if (c)
		snprintf(buf, sizeof(buf), "%s: %s (%s)", event ? event : "event", c->text, c->name);
	else
		snprintf(buf, sizeof(buf), "%s: perf_event_open failed with errno %d, which memwall "
			 "does not know how to explain", event ? event : "event", e);
	return buf;
}
