/* probes/pmu/amd_df.c: AMD Zen 2/3 data fabric DRAM channel events (approximate).
 *
 * Before Zen 4 there is no memory-controller PMU; the data fabric PMU amd_df (format
 * event = config:0-7,32-35,59-60, umask = config:8-15: arch/x86/events/amd/uncore.c, event14)
 * counts "DRAM Channel Controller Request Types: Requests with Data (64B)" per channel:
 * event 0x07 + 0x40 * channel, umask 0x38 (perf's amdzen2/amdzen3 data-fabric.json,
 * dram_channel_data_controller_0..7). Perf's own metric over them is labelled "Approximate";
 * reads and writes are not separated; unpopulated channels on parts with fewer than eight
 * report counts that are not DRAM traffic. Hence the caveat flag, and calibrate before
 * trusting them.
 *
 * Four counters for eight events: the kernel gives the DF PMU NUM_COUNTERS_NB (4) counters
 * (arch/x86/events/amd/uncore.c: "the Northbridge counters are repurposed as Data Fabric
 * counters" from family 17h; since 6.8 amd_uncore_df_ctx_init takes that count unless the CPU
 * has PerfMonV2, Zen 4 on, whose CPUID 0x80000022 EBX gives num_df_pmc instead).
 * amd_uncore_add answers -EBUSY when all four are taken, so the perf core rotates the eight
 * channel events over them: opened together, each counts about half the time and its count
 * is extrapolated. `.counters` states the four, so that `memwall verify` opens the channels
 * four at a time (prb_dram_groups) and counts each whole; runs and `memwall stat` open all
 * eight and show the running share.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

#define DF_CHANNELS 8

static int detect(const struct prb_system *sys, struct dram_plan *plan, char *why, size_t n)
{
	const struct prb_pmu *pmu = prb_system_pmu_find(sys, "amd_df");
	char terms[64];
	if (!pmu) {
		snprintf(why, n, "no amd_df PMU (AMD Zen 2/3 data fabric)");
		return 0;
	}
	if (prb_dram_pmu_check(pmu, why, n) < 0)
		return -EINVAL;
	/* Zen 4's PerfMonV2 fabric has a different event field (config:0-7,32-37) and different
	 * DRAM events; these encodings would count something else there. */
	bool zen23 = false;
	for (size_t i = 0; i < pmu->n_formats; i++)
		if (!strcmp(pmu->formats[i].name, "event") && pmu->formats[i].n_ranges == 3 &&
		    pmu->formats[i].ranges[2].lo == 59)
			zen23 = true;
	if (!zen23) {
		snprintf(why, n, "amd_df is not the Zen 2/3 data fabric (format/event is not "
			 "config:0-7,32-35,59-60); on Zen 4 and later use amd_umc (Linux 6.6+)");
		return 0;
	}
	int first = prb_dram_plan_add_pmu(plan, pmu, why, n);
	if (first < 0)
		return first;
	for (unsigned ch = 0; ch < DF_CHANNELS; ch++) {
		snprintf(terms, sizeof(terms), "event=0x%x,umask=0x38", 0x07 + 0x40 * ch);
		char name[48];
		int rc = prb_dram_plan_add_event(plan, first, DRAM_TOTAL, terms, 64.0, why, n);
		snprintf(name, sizeof(name), "dram_channel_data_controller_%u", ch);
		if (rc == 0)
			rc = prb_dram_plan_name_event(plan, first, name);
		if (rc < 0)
			return rc;
	}
	return plan->n;
}

const struct dram_backend prb_dram_amd_df = {
	.name = "amd_df",
	.description = "AMD Zen 2/3 data fabric DRAM channel requests (64B), read+write combined",
	.provides = PRB_DRAM_TOTAL,
	.flags = PRB_DRAM_CAVEAT,
	.no_group = true,
	.counters = 4,
	.caveat = "approximate: data-fabric channel requests, not memory-controller counts; no "
		  "read/write split; 8 channel events share 4 counters (verify opens 4 at a "
		  "time); unpopulated channels count non-DRAM requests. Run memwall "
		  "calibrate before trusting them",
	.machine = "x86_64",
	.names = { { "amd_df", NULL } },
	.detect = detect,
};
