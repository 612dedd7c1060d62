/* probes/dram_plan.c: what the DRAM backends (probes/pmu/) use to describe what to count:
 * their PMUs' instances and each instance's events, encoded from the PMU's format files.
 * Kept apart from dram.c, which holds the backends' table, so that the backends depend on
 * these helpers and dram.c on the backends, never the other way round. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

size_t prb_dram_pmus_matching(const struct prb_system *sys, const char *prefix,
			  const struct prb_pmu **out, size_t max)
{
	size_t n = 0;
	/* prb_system keeps PMUs in numeric name order, so instances come out 0, 1, 2, ... 10 */
	for (size_t i = 0; i < prb_system_pmu_count(sys); i++) {
		const struct prb_pmu *pmu = prb_system_pmu(sys, i);
		if (!prb_name_is_instance(pmu->name, prefix))
			continue;
		if (n < max)
			out[n] = pmu;
		n++; /* every one is counted, so that the caller can refuse more than it holds */
	}
	return n;
}

int prb_dram_too_many(const char *what, size_t found, char *why, size_t n)
{
	snprintf(why, n, "%zu %s, more than the %d instances memwall can count "
		 "(PRB_DRAM_MAX_INSTANCES): counting the first %d would report part of the "
		 "traffic as all of it", found, what, PRB_DRAM_MAX_INSTANCES,
		 PRB_DRAM_MAX_INSTANCES);
	return -E2BIG;
}

int prb_dram_pmu_check(const struct prb_pmu *pmu, char *why, size_t n)
{
	if (!pmu->problem.text[0])
		return 0;
	snprintf(why, n, "%s: %s", pmu->problem.source, pmu->problem.text);
	return -EINVAL;
}

int prb_dram_plan_add_pmu(struct dram_plan *plan, const struct prb_pmu *pmu, char *why, size_t n)
{
	int first = plan->n;
	int n_cpus = pmu->n_cpus ? pmu->n_cpus : 1;
	if (plan->n + n_cpus > PRB_DRAM_MAX_INSTANCES) {
		char what[160];
		snprintf(what, sizeof(what), "instances (%d before %s, whose cpumask names %d "
			 "CPU%s)", plan->n, pmu->name, n_cpus, n_cpus == 1 ? "" : "s");
		return prb_dram_too_many(what, (size_t)plan->n + (size_t)n_cpus, why, n);
	}
	for (int i = 0; i < n_cpus; i++) {
		struct dram_instance *in = &plan->inst[plan->n++];
		memset(in, 0, sizeof(*in));
		in->pmu = pmu;
		in->cpu = pmu->n_cpus ? pmu->cpus[i] : 0;
		in->counter_bits = 64;
		snprintf(in->name, sizeof(in->name), "%s", pmu->name);
	}
	return first;
}

int prb_dram_plan_add_event(struct dram_plan *plan, int first, enum dram_dir dir, const char *terms,
			double bytes_per_count, char *why, size_t n)
{
	for (int i = first; i < plan->n; i++) {
		struct dram_instance *in = &plan->inst[i];
		struct prb_error err = { 0 };
		if (in->n_events == PRB_DRAM_MAX_EVENTS)
			return -ENOSPC;
		struct dram_event *ev = &in->events[in->n_events];
		int rc = prb_pmu_encode(in->pmu, terms, &ev->attr, &err);
		if (rc < 0) {
			snprintf(why, n, "%s: %s", err.source, err.text);
			return rc;
		}
		ev->dir = dir;
		ev->bytes_per_count = bytes_per_count;
		/* a label: a long list of terms is cut, never used to open anything */
		snprintf(ev->name, sizeof(ev->name), "%s", terms);
		if (bytes_per_count <= 0) {
			/* scale times the unit's size: 6.103515625e-5 MiB = 2^-14 * 2^20 = 64 bytes */
			const struct prb_event *alias = prb_pmu_event_find(in->pmu, terms);
			double unit = 0;
			if (!alias || prb_unit_bytes(alias->unit, &unit) < 0) {
				snprintf(why, n, "%s/events/%s: no byte unit (.unit is \"%s\")",
					 in->pmu->name, terms, alias ? alias->unit : "");
				return -EINVAL;
			}
			ev->bytes_per_count = alias->scale * unit;
			/* .scale is finite and positive (sysfs.c), but 1e300 times a GiB is not, and
			 * no event counts more than 4 GiB at a time: a count below 2^64 then stays a
			 * finite number of bytes wherever it is multiplied (verify's perf check) */
			if (!(ev->bytes_per_count <= 0x1p32)) {
				snprintf(why, n, "%s/events/%s: .scale times .unit is %g bytes a count, "
					 "more than 2^32", in->pmu->name, terms, ev->bytes_per_count);
				return -EINVAL;
			}
		}
		in->n_events++;
	}
	return 0;
}


int prb_dram_plan_name_event(struct dram_plan *plan, int first, const char *name)
{
	for (int i = first; i < plan->n; i++) {
		struct dram_instance *in = &plan->inst[i];
		if (in->n_events > 0 && fmt_into(in->events[in->n_events - 1].name, "%s", name) < 0)
			return -ENAMETOOLONG;
	}
	return 0;
}
