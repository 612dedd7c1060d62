/* probes/pmu/intel_imc_free.c: Intel client IMC data counters, the controllers' byte counts.
 *
 * Tiger Lake through Arrow and Lunar Lake expose one uncore_imc_free_running_N PMU per memory
 * controller (arch/x86/events/intel/uncore_snb.c: tgl/adl_uncore_imc_free_running, num_boxes
 * 2), with data_read = event=0xff,umask=0x20 and data_write = event=0xff,umask=0x30, each with
 * scale 6.103515625e-5 MiB: 2^-14 MiB = 64 bytes per count. Sandy Bridge to Comet Lake have a
 * single PCI IMC PMU, uncore_imc (snb_uncore_imc: one box, so no _N suffix), with data_reads
 * = event=0x01 and data_writes = event=0x02 at the same scale. Both are free-running and never
 * multiplexed: the most direct DRAM figure there is.
 */
#include <stdio.h>

#include "../internal.h"

static const struct family {
	const char *name;   /* exact PMU name, or the prefix of prefix<N> */
	bool numbered;
	const char *read, *write;
} families[] = {
	{ "uncore_imc_free_running_", true, "data_read", "data_write" },
	{ "uncore_imc", false, "data_reads", "data_writes" },
};

static int add(struct dram_plan *plan, const struct prb_pmu *pmu, const struct family *f,
	       char *why, size_t n)
{
	if (prb_dram_pmu_check(pmu, why, n) < 0)
		return -EINVAL;
	if (!prb_pmu_event_find(pmu, f->read) || !prb_pmu_event_find(pmu, f->write)) {
		snprintf(why, n, "%s has no events/%s or events/%s", pmu->name, f->read, f->write);
		return -EINVAL;
	}
	int first = prb_dram_plan_add_pmu(plan, pmu, why, n);
	if (first < 0)
		return first;
	int rc = prb_dram_plan_add_event(plan, first, DRAM_READ, f->read, 0, why, n);
	if (rc == 0)
		rc = prb_dram_plan_add_event(plan, first, DRAM_WRITE, f->write, 0, why, n);
	return rc;
}

static int detect(const struct prb_system *sys, struct dram_plan *plan, char *why, size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(families); i++) {
		const struct family *f = &families[i];
		const struct prb_pmu *pmus[PRB_DRAM_MAX_INSTANCES];
		size_t k = 0;
		if (f->numbered) {
			k = prb_dram_pmus_matching(sys, f->name, pmus, ARRAY_SIZE(pmus));
			if (k > ARRAY_SIZE(pmus))
				return prb_dram_too_many("uncore_imc_free_running_N PMUs", k, why, n);
		} else if ((pmus[0] = prb_system_pmu_find(sys, f->name))) {
			k = 1;
		}
		for (size_t j = 0; j < k; j++) {
			int rc = add(plan, pmus[j], f, why, n);
			if (rc < 0)
				return rc;
		}
		if (k)
			return plan->n;
	}
	snprintf(why, n, "no uncore_imc_free_running_N (Tiger Lake and later) or uncore_imc "
		 "(Sandy Bridge to Comet Lake) PMU");
	return 0;
}

const struct dram_backend prb_dram_intel_imc_free = {
	.name = "intel_imc_free",
	.description = "Intel client IMC data counters (data_read/data_write), 64 bytes each",
	.provides = PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL,
	.machine = "x86_64",
	.names = { { "uncore_imc_free_running_", DRAM_NAME_DIGITS }, { "uncore_imc", NULL } },
	.detect = detect,
};
