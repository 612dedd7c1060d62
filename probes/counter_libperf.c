/* probes/counter_libperf.c: the counter layer through the kernel's libperf (tools/lib/perf).
 *
 * Built only when meson finds libperf (Fedora's libperf-devel, or one built from the kernel
 * source: scripts/libperf-ci.sh). Same contract as the syscall layer in counter.c: one event on
 * one (pid, cpu), reads carrying value, time_enabled and time_running (perf_counts_values).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <perf/core.h>
#include <perf/cpumap.h>
#include <perf/evsel.h>
#include <perf/threadmap.h>

#include "internal.h"

struct lp_counter {
	struct perf_evsel *evsel;
	struct perf_cpu_map *cpus;
	struct perf_thread_map *threads;
};

static void lp_close(struct counter *cc)
{
	struct lp_counter *c = (struct lp_counter *)cc;
	if (!c)
		return;
	if (c->evsel) {
		perf_evsel__close(c->evsel);
		perf_evsel__delete(c->evsel);
	}
	perf_cpu_map__put(c->cpus);
	perf_thread_map__put(c->threads);
	free(c);
}

static int lp_open(struct counter **out, const struct perf_event_attr *attr, int pid, int cpu)
{
	struct lp_counter *c = calloc(1, sizeof(*c));
	struct perf_event_attr a = *attr;
	char cpu_list[16];
	int rc = 0;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	snprintf(cpu_list, sizeof(cpu_list), "%d", cpu);
	c->cpus = cpu >= 0 ? perf_cpu_map__new(cpu_list) : perf_cpu_map__dummy_new();
	c->threads = perf_thread_map__new_dummy();
	c->evsel = perf_evsel__new(&a);
	if (!c->cpus || !c->threads || !c->evsel) {
		rc = -ENOMEM;
		goto out;
	}
	perf_thread_map__set_pid(c->threads, 0, pid);
	rc = perf_evsel__open(c->evsel, c->cpus, c->threads);
	if (rc > 0)
		rc = -rc;
	if (rc < 0) {
		perf_evsel__delete(c->evsel);
		c->evsel = NULL;
		goto out;
	}
	*out = (struct counter *)c;
	c = NULL;
out:
	lp_close((struct counter *)c);
	return rc;
}

static int lp_read(struct counter *cc, uint64_t v[3])
{
	struct lp_counter *c = (struct lp_counter *)cc;
	struct perf_counts_values counts = { 0 };
	int rc = perf_evsel__read(c->evsel, 0, 0, &counts);
	if (rc < 0)
		return rc;
	v[0] = counts.val;
	v[1] = counts.ena;
	v[2] = counts.run;
	return 0;
}

static int lp_enable(struct counter *cc)
{
	return perf_evsel__enable(((struct lp_counter *)cc)->evsel);
}

static int lp_disable(struct counter *cc)
{
	return perf_evsel__disable(((struct lp_counter *)cc)->evsel);
}

const struct counter_ops counter_libperf_ops = {
	.name = "libperf",
	.open = lp_open,
	.read = lp_read,
	.enable = lp_enable,
	.disable = lp_disable,
	.close = lp_close,
};
