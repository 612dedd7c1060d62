/* probes/pmu/intel_imc_cas.c: Intel programmable IMC CAS counts, 64 bytes each.
 *
 * Skylake-SP to Sapphire Rapids servers expose uncore_imc_N with cas_count_read and
 * cas_count_write aliases (arch/x86/events/intel/uncore_snbep.c; on SPR event=0x05 with
 * umask=0xcf and 0xf0), scale 6.103515625e-5 MiB = 64 bytes per CAS. Granite Rapids (and
 * Sierra Forest) have two schedulers per channel: the kernel replaced cas_count_{read,write}
 * by cas_count_{read,write}_sch0 and _sch1 (event 0x05 and 0x06), and the old event counted
 * only SCH0, half the traffic. Both halves are opened and summed here.
 *
 * Client parts (Alder Lake and later) also have uncore_imc_N, but without CAS aliases; those
 * are left to intel_imc_free.
 */
#include <stdio.h>

#include "../internal.h"

struct scheme {
	const char *read[2];
	const char *write[2];
};

/* Checked in order; the first whose first read alias the PMU has is used. */
static const struct scheme schemes[] = {
	{ { "cas_count_read_sch0", "cas_count_read_sch1" },
	  { "cas_count_write_sch0", "cas_count_write_sch1" } },
	{ { "cas_count_read", NULL }, { "cas_count_write", NULL } },
};

static const struct scheme *scheme_of(const struct prb_pmu *pmu)
{
	for (size_t i = 0; i < ARRAY_SIZE(schemes); i++)
		if (prb_pmu_event_find(pmu, schemes[i].read[0]))
			return &schemes[i];
	return NULL;
}

static int detect(const struct prb_system *sys, struct dram_plan *plan, char *why, size_t n)
{
	const struct prb_pmu *pmus[PRB_DRAM_MAX_INSTANCES];
	size_t k = prb_dram_pmus_matching(sys, "uncore_imc_", pmus, ARRAY_SIZE(pmus));
	size_t with_cas = 0;
	if (!k) {
		snprintf(why, n, "no uncore_imc_N PMU");
		return 0;
	}
	if (k > ARRAY_SIZE(pmus))
		return prb_dram_too_many("uncore_imc_N PMUs", k, why, n);
	for (size_t i = 0; i < k; i++)
		if (prb_dram_pmu_check(pmus[i], why, n) < 0)
			return -EINVAL;
	for (size_t i = 0; i < k; i++)
		with_cas += scheme_of(pmus[i]) != NULL;
	if (!with_cas) {
		snprintf(why, n, "%s has no cas_count_read alias (a client IMC: its byte counters "
			 "are uncore_imc_free_running_N)", pmus[0]->name);
		return 0;
	}
	for (size_t i = 0; i < k; i++) {
		const struct scheme *s = scheme_of(pmus[i]);
		if (!s) {
			/* some controllers with CAS aliases and some without: counting the ones that
			 * have them would report part of the traffic as all of it */
			snprintf(why, n, "%s has no cas_count_read alias while other uncore_imc_N do",
				 pmus[i]->name);
			return -EINVAL;
		}
		int first = prb_dram_plan_add_pmu(plan, pmus[i], why, n);
		if (first < 0)
			return first;
		for (int h = 0; h < 2; h++) {
			int rc = 0;
			if (s->read[h])
				rc = prb_dram_plan_add_event(plan, first, DRAM_READ, s->read[h], 0, why, n);
			if (rc == 0 && s->write[h])
				rc = prb_dram_plan_add_event(plan, first, DRAM_WRITE, s->write[h], 0, why, n);
			if (rc < 0)
				return rc;
		}
	}
	return plan->n;
}

const struct dram_backend prb_dram_intel_imc_cas = {
	.name = "intel_imc_cas",
	.description = "Intel IMC CAS counts (cas_count_read/write, Granite Rapids sch0+sch1)",
	.provides = PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL,
	.machine = "x86_64",
	.names = { { "uncore_imc_", DRAM_NAME_DIGITS } },
	.detect = detect,
};
