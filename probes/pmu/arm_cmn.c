/* probes/pmu/arm_cmn.c: Arm CMN mesh, requests its home nodes send to the memory controllers.
 *
 * What the kernel says (drivers/perf/arm-cmn.c):
 *   - one PMU per mesh, arm_cmn_<N> numbered in probe order (one per socket on Ampere Altra
 *     and AWS Graviton), with a cpumask of one CPU near the mesh: events are bound to it;
 *   - formats: type = config:0-15, eventid = config:16-26, occupid = config:27-30,
 *     bynodeid = config:31, nodeid = config:32-47 (plus watchpoint fields); aliases read
 *     "type=0x..,eventid=0x..";
 *   - hnf_mc_reqs is HN-F (node type 0x5) event 0x0d, "requests sent to the memory
 *     controller"; the alias only appears when the mesh has HN-F nodes. Without bynodeid the
 *     driver programs the event on every HN-F of the mesh and returns the sum: one event per
 *     mesh covers all of its system-cache slices;
 *   - local counters are 16 bits and global ones 32, folded by the driver into a 64-bit
 *     count; a DTC has 8 global counters and each crosspoint's DTM 4 local ones, and the one
 *     event here takes a global counter and one local counter beside each HN-F, so it is
 *     never multiplexed; groups are allowed while counters last.
 * perf's own CMN metrics (tools/perf/pmu-events/arch/arm64/arm/cmn/sys/metric.json) use
 * hnf_mc_reqs only as the denominator of a retry rate; none turns it into bytes. Tools that
 * do (Meta's hbt, for CMN S3's HN-S) take 64 bytes per request, one cache line.
 *
 * What it counts, against a memory controller's own counters: requests at the system-cache
 * level (HN-F to SN-F), that is system-cache misses going to DRAM and the cache's write-backs,
 * all in one count: there is no read/write split. It misses what happens below the request:
 * a partial-line write the controller turns into a read-modify-write, ECC scrubbing, and
 * whether a request moved a full line; it may count a request the controller retried
 * (hnf_mc_retries) more than once, and it counts requests without data (cache maintenance)
 * as lines. Hence total only, approximate, with a caveat. CMN S3 meshes name their home nodes
 * HN-S (hns_* events); those encodings are not used here.
 */
#include <stdio.h>

#include "../internal.h"

#define MC_REQS "hnf_mc_reqs"

static int detect(const struct prb_system *sys, struct dram_plan *plan, char *why, size_t n)
{
	const struct prb_pmu *pmus[PRB_DRAM_MAX_INSTANCES];
	size_t k = prb_dram_pmus_matching(sys, "arm_cmn_", pmus, ARRAY_SIZE(pmus));
	if (!k) {
		snprintf(why, n, "no arm_cmn_N PMU (Arm CMN mesh)");
		return 0;
	}
	if (k > ARRAY_SIZE(pmus))
		return prb_dram_too_many("arm_cmn_N PMUs", k, why, n);
	for (size_t i = 0; i < k; i++)
		if (prb_dram_pmu_check(pmus[i], why, n) < 0)
			return -EINVAL;
	for (size_t i = 0; i < k; i++) {
		if (!prb_pmu_event_find(pmus[i], MC_REQS)) {
			/* a mesh without HN-F nodes (or a CMN S3 with HN-S): counting the others
			 * would report part of the traffic as all of it */
			snprintf(why, n, "%s has no events/" MC_REQS " (no HN-F home nodes the "
				 "driver knows)", pmus[i]->name);
			return i ? -EINVAL : 0;
		}
		int first = prb_dram_plan_add_pmu(plan, pmus[i], why, n);
		if (first < 0)
			return first;
		int rc = prb_dram_plan_add_event(plan, first, DRAM_TOTAL, MC_REQS, 64.0, why, n);
		if (rc < 0)
			return rc;
	}
	return plan->n;
}

const struct dram_backend prb_dram_arm_cmn = {
	.name = "arm_cmn",
	.description = "Arm CMN home-node requests to the memory controllers (hnf_mc_reqs), 64 "
		       "bytes each, read+write combined",
	.provides = PRB_DRAM_TOTAL,
	.flags = PRB_DRAM_CAVEAT,
	.caveat = "approximate: system-cache requests to the memory controllers (HN-F to SN-F), "
		  "not DRAM commands; no read/write split; retried and data-less requests count "
		  "as 64-byte lines. Run memwall calibrate before trusting them",
	.machine = "aarch64",
	.names = { { "arm_cmn_", DRAM_NAME_DIGITS } },
	.detect = detect,
};
