/* probes/set.c: sets of named events (software, core, "pmu/terms/"), read together. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SET_MAX_CPUS 64 /* per entry: uncore and RAPL PMUs list one CPU per socket */

/* Software events are the kernel's own (include/uapi/linux/perf_event.h, perf_sw_ids): they
 * exist on every Linux, virtual machines included. */
/* kernel_only: the kernel counts the event in its own context (perf_sw_event_sched with the
 * scheduler's registers, kernel/sched/core.c), so an event opened with exclude_kernel, all an
 * unprivileged process may open at perf_event_paranoid 2, stays at 0 whatever happens: it is
 * refused as not countable rather than read as a measured 0 (issue 44: 0 context switches on
 * a loaded machine). Page faults are counted with the faulting user registers and stay. */
static const struct {
	const char *name;
	uint64_t config;
	bool kernel_only;
} software[] = {
	{ "task-clock", PERF_COUNT_SW_TASK_CLOCK, false },
	{ "cpu-clock", PERF_COUNT_SW_CPU_CLOCK, false },
	{ "page-faults", PERF_COUNT_SW_PAGE_FAULTS, false },
	{ "minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN, false },
	{ "major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ, false },
	{ "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES, true },
	{ "cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS, true },
};

static bool kernel_only(const struct perf_event_attr *attr)
{
	for (size_t i = 0; i < ARRAY_SIZE(software); i++)
		if (attr->type == PERF_TYPE_SOFTWARE && attr->config == software[i].config)
			return software[i].kernel_only;
	return false;
}

struct entry {
	char name[128];
	char reason[1024];
	char unit[16];
	double scale;
	int n;                            /* counters opened (one per cpumask CPU) */
	struct counter *c[SET_MAX_CPUS];
	uint64_t base[SET_MAX_CPUS][3];   /* prb_set_reset's snapshot */
	unsigned flags;                   /* USER_ONLY, UNAVAILABLE */
};

struct prb_set {
	const struct prb_system *sys;
	struct prb_set_options opt;
	int n, cap;
	struct entry *e;
};

int prb_set_new(struct prb_set **out, const struct prb_system *sys,
		const struct prb_set_options *opt)
{
	struct prb_set *s = calloc(1, sizeof(*s));
	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->sys = sys;
	s->opt = opt ? *opt : (struct prb_set_options){ .pid = 0, .cpu = -1, .inherit = false };
	*out = s;
	return 0;
}

void prb_set_free(struct prb_set *s)
{
	if (!s)
		return;
	const struct counter_ops *ops = prb_counter_ops_get();
	for (int i = 0; i < s->n; i++)
		for (int j = 0; j < s->e[i].n; j++)
			ops->close(s->e[i].c[j]);
	free(s->e);
	free(s);
}

/* Resolves a name to attr; for a PMU event also its cpumask, scale and unit. */
static int resolve(const struct prb_set *s, const char *event, struct perf_event_attr *attr,
		   const struct prb_pmu **pmu_out, struct entry *e, struct prb_error *err)
{
	*pmu_out = NULL;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	for (size_t i = 0; i < ARRAY_SIZE(software); i++)
		if (!strcmp(event, software[i].name)) {
			attr->type = PERF_TYPE_SOFTWARE;
			attr->config = software[i].config;
			return 0;
		}
	const char *slash = strchr(event, '/');
	if (slash) {
		/* "pmu/terms/" as perf writes it; the trailing slash is optional */
		char pmu_name[64], terms[256];
		size_t plen = (size_t)(slash - event);
		const char *t = slash + 1;
		size_t tlen = strcspn(t, "/");
		if (plen == 0 || plen >= sizeof(pmu_name) || tlen == 0 || tlen >= sizeof(terms) ||
		    (t[tlen] == '/' && t[tlen + 1]))
			return prb_error_set(err, -EINVAL, event,
					     "expected \"pmu/terms/\", e.g. \"power/energy-pkg/\"");
		memcpy(pmu_name, event, plen);
		pmu_name[plen] = '\0';
		memcpy(terms, t, tlen);
		terms[tlen] = '\0';
		const struct prb_pmu *pmu = prb_system_pmu_find(s->sys, pmu_name);
		if (!pmu)
			return prb_error_set(err, -ENOENT, event, "%s",
					     prb_explain(ENOENT, pmu_name));
		int rc = prb_pmu_encode(pmu, terms, attr, err);
		if (rc < 0)
			return rc;
		const struct prb_event *alias = prb_pmu_event_find(pmu, terms);
		if (alias) {
			e->scale = alias->scale;
			snprintf(e->unit, sizeof(e->unit), "%s", alias->unit);
		}
		*pmu_out = pmu;
		return 0;
	}
	char why[256];
	uint32_t type;
	uint64_t c0, c1, c2;
	if (prb_pfm_encode(event, &type, &c0, &c1, &c2, why, sizeof(why)) < 0)
		return prb_error_set(err, -EINVAL, event,
				     "unknown event: not a software event (task-clock, page-faults, "
				     "context-switches, ...), not \"pmu/terms/\", and %s", why);
	attr->type = type;
	attr->config = c0;
	attr->config1 = c1;
	attr->config2 = c2;
	return 0;
}

int prb_set_add(struct prb_set *s, const char *event, int *index, struct prb_error *err)
{
	struct perf_event_attr attr;
	const struct prb_pmu *pmu = NULL;
	struct entry e;
	int rc;

	*index = -1;
	memset(&e, 0, sizeof(e));
	e.scale = 1.0;
	snprintf(e.name, sizeof(e.name), "%s", event);
	rc = resolve(s, event, &attr, &pmu, &e, err);
	if (rc == -EINVAL || rc == -ENOMEM)
		return rc;
	if (rc == 0) {
		attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
		attr.disabled = 1;
		if (pmu && pmu->n_cpus) {
			/* system-wide on each CPU of the cpumask, no exclude bits, like uncore DRAM */
			for (int i = 0; i < pmu->n_cpus && i < SET_MAX_CPUS && rc == 0; i++) {
				rc = prb_counter_open(&e.c[e.n], &attr, -1, pmu->cpus[i]);
				e.n += rc == 0;
			}
		} else {
			attr.inherit = s->opt.inherit;
			rc = prb_counter_open(&e.c[0], &attr, s->opt.pid, s->opt.cpu);
			bool kernel_context = false;
			if ((rc == -EACCES || rc == -EPERM) && !kernel_only(&attr)) {
				/* perf_event_paranoid 2 refuses kernel counting to unprivileged users;
				 * the engine's user-space work is still countable */
				attr.exclude_kernel = 1;
				attr.exclude_hv = 1;
				rc = prb_counter_open(&e.c[0], &attr, s->opt.pid, s->opt.cpu);
				if (rc == 0)
					e.flags |= PRB_READING_USER_ONLY;
			} else if (rc == -EACCES || rc == -EPERM) {
				kernel_context = true;
			}
			e.n = rc == 0;
			if (kernel_context) {
				snprintf(e.reason, sizeof(e.reason), "%s: perf_event_paranoid refuses "
					 "kernel-space counting to this process, and the kernel counts %s "
					 "in its own context, so a user-space-only counter would read 0 "
					 "whatever happens: sysctl -w kernel.perf_event_paranoid=1, or the "
					 "CAP_PERFMON capability, counts it (%s)", event, event,
					 rc == -EPERM ? "EPERM" : "EACCES");
				prb_error_set(err, rc, event, "%s", e.reason);
			}
		}
		if (rc < 0 && !e.reason[0]) {
			const struct counter_ops *ops = prb_counter_ops_get();
			for (int j = 0; j < e.n; j++)
				ops->close(e.c[j]);
			e.n = 0;
			snprintf(e.reason, sizeof(e.reason), "%s", prb_explain(rc, event));
			prb_error_set(err, rc, event, "%s", e.reason);
		}
	} else {
		snprintf(e.reason, sizeof(e.reason), "%s", err ? err->text : prb_explain(rc, event));
	}
	if (e.n == 0)
		e.flags |= PRB_READING_UNAVAILABLE;
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 8;
		struct entry *ne = realloc(s->e, (size_t)cap * sizeof(*ne));
		if (!ne) {
			const struct counter_ops *ops = prb_counter_ops_get();
			for (int j = 0; j < e.n; j++)
				ops->close(e.c[j]);
			return -ENOMEM;
		}
		s->e = ne;
		s->cap = cap;
	}
	s->e[s->n] = e;
	*index = s->n++;
	return rc;
}

int prb_set_count(const struct prb_set *s)
{
	return s->n;
}

const char *prb_set_name(const struct prb_set *s, int index)
{
	return index >= 0 && index < s->n ? s->e[index].name : "";
}

const char *prb_set_reason(const struct prb_set *s, int index)
{
	return index >= 0 && index < s->n ? s->e[index].reason : "";
}

static int for_each_counter(struct prb_set *s, int (*fn)(struct counter *))
{
	int rc = 0;
	for (int i = 0; i < s->n; i++)
		for (int j = 0; j < s->e[i].n; j++) {
			int r = fn(s->e[i].c[j]);
			if (r < 0 && rc == 0)
				rc = r;
		}
	return rc;
}

int prb_set_enable(struct prb_set *s)
{
	return for_each_counter(s, prb_counter_ops_get()->enable);
}

int prb_set_disable(struct prb_set *s)
{
	return for_each_counter(s, prb_counter_ops_get()->disable);
}

/* Reset by snapshot rather than PERF_EVENT_IOC_RESET: libperf has no reset, and a snapshot
 * keeps time_enabled and time_running consistent with the value. */
int prb_set_reset(struct prb_set *s)
{
	const struct counter_ops *ops = prb_counter_ops_get();
	int rc = 0;
	for (int i = 0; i < s->n; i++)
		for (int j = 0; j < s->e[i].n; j++) {
			int r = ops->read(s->e[i].c[j], s->e[i].base[j]);
			if (r < 0 && rc == 0)
				rc = r;
		}
	return rc;
}

int prb_set_read(struct prb_set *s, struct prb_reading *out)
{
	const struct counter_ops *ops = prb_counter_ops_get();
	int rc = 0;
	for (int i = 0; i < s->n; i++) {
		struct entry *e = &s->e[i];
		struct prb_reading *r = &out[i];
		memset(r, 0, sizeof(*r));
		r->unit = e->unit;
		r->flags = e->flags;
		if (!e->n) {
			r->flags |= PRB_READING_NOT_COUNTED;
			continue;
		}
		double count = 0;
		for (int j = 0; j < e->n; j++) {
			uint64_t v[3];
			int rr = ops->read(e->c[j], v);
			if (rr < 0) {
				r->flags |= PRB_READING_NOT_COUNTED;
				if (rc == 0)
					rc = rr;
				continue;
			}
			struct prb_reading one = {
				.value = v[0] - e->base[j][0],
				.time_enabled = v[1] - e->base[j][1],
				.time_running = v[2] - e->base[j][2],
			};
			prb_reading_scale(&one);
			r->value += one.value;
			r->time_enabled += one.time_enabled;
			r->time_running += one.time_running;
			r->flags |= one.flags;
			count += one.count;
		}
		r->count = count;
		r->physical = count * e->scale;
	}
	return rc;
}
