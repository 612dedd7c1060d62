/* probes/pmu/amd_umc.c: AMD Zen 4/5 unified memory controller CAS commands.
 *
 * Linux 6.6+ registers one amd_umc_N PMU per UMC (arch/x86/events/amd/uncore.c,
 * amd_uncore_umc_ctx_init), with format event = config:0-7 and rdwrmask = config:8-9 and no
 * event aliases. The events come from perf's amdzen4 memory-controller.json:
 * umc_cas_cmd.rd = event 0x0a, rdwrmask 1; umc_cas_cmd.wr = event 0x0a, rdwrmask 2.
 * Each CAS moves one 64-byte line (a DDR5 BL16 burst on a 32-bit sub-channel).
 */
#include <stdio.h>

#include "../internal.h"

static int detect(const struct prb_system *sys, struct dram_plan *plan, char *why, size_t n)
{
	const struct prb_pmu *pmus[PRB_DRAM_MAX_INSTANCES];
	size_t k = prb_dram_pmus_matching(sys, "amd_umc_", pmus, ARRAY_SIZE(pmus));
	if (!k) {
		snprintf(why, n, "no amd_umc_N PMU (AMD Zen 4 or later with Linux 6.6+)");
		return 0;
	}
	if (k > ARRAY_SIZE(pmus))
		return prb_dram_too_many("amd_umc_N PMUs", k, why, n);
	for (size_t i = 0; i < k; i++)
		if (prb_dram_pmu_check(pmus[i], why, n) < 0)
			return -EINVAL;
	for (size_t i = 0; i < k; i++) {
		int first = prb_dram_plan_add_pmu(plan, pmus[i], why, n);
		if (first < 0)
			return first;
		int rc = prb_dram_plan_add_event(plan, first, DRAM_READ, "event=0x0a,rdwrmask=0x1", 64.0,
					     why, n);
		if (rc == 0)
			rc = prb_dram_plan_add_event(plan, first, DRAM_WRITE, "event=0x0a,rdwrmask=0x2",
						 64.0, why, n);
		if (rc < 0)
			return rc;
	}
	return plan->n;
}

const struct dram_backend prb_dram_amd_umc = {
	.name = "amd_umc",
	.description = "AMD UMC CAS commands (umc_cas_cmd.rd/wr), 64 bytes each",
	.provides = PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL,
	.machine = "x86_64",
	.names = { { "amd_umc_", DRAM_NAME_DIGITS } },
	.detect = detect,
};
