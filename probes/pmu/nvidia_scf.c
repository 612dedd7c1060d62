/* probes/pmu/nvidia_scf.c: NVIDIA Grace, the Scalable Coherency Fabric's CPU-memory traffic.
 *
 * What the kernel says (drivers/perf/arm_cspmu/nvidia_cspmu.c, arm_cspmu.h, and
 * Documentation/admin-guide/perf/nvidia-pmu.rst):
 *   - Grace's uncore PMUs are CoreSight PMUs driven by arm_cspmu; nvidia_cspmu names them
 *     per socket (the NUMA node of their first CPU): nvidia_scf_pmu_<socket>,
 *     nvidia_pcie_pmu_<socket>, nvidia_nvlink_c2c0_pmu_<socket>, nvidia_nvlink_c2c1_pmu_,
 *     nvidia_cnvlink_pmu_; each has a cpumask of one CPU;
 *   - format: event = config:0-32 (bit 32 is the cycle counter); aliases read "event=0x..";
 *   - which PMU sees what (the documentation's traffic-coverage tables): CPU traffic to local
 *     and remote CPU memory (CMEM, the LPDDR5X) goes through the SCF PMU, and so do the
 *     other socket's CPU accesses to this socket's memory; PCIe reads and relaxed-order
 *     writes, and GPU traffic over NVLink-C2C, are seen by the pcie, nvlink_c2c and cnvlink
 *     PMUs instead. Their rd_bytes_loc/wr_bytes_loc events are bytes, but of device traffic,
 *     not of the CPU's;
 *   - the SCF events that land in CMEM are cmem_rd_data (0x1a5) and cmem_wr_total_bytes
 *     (0x1db); the remote_socket_* ones count traffic to the other socket, which that
 *     socket's SCF PMU already counts as its own cmem_*: summing cmem_* over every socket
 *     counts each byte once.
 * The unit is not in the driver: cmem_wr_total_bytes is in bytes, as its name says, and
 * cmem_rd_data counts 32-byte data beats (the Energy Aware Runtime's
 * metrics/bandwidth/archs/perf.c turns Grace's cmem_rd_data into bytes with 32, and scales
 * cmem_wr_total_bytes by 1/32 to put both in beats). So read = 32 x cmem_rd_data and
 * write = cmem_wr_total_bytes. These are fabric counts of CPU traffic to memory, not
 * memory-controller commands: device traffic is not in them, and whether the driver's count
 * excludes the fabric cache's hits is not stated. Hence the caveat.
 */
#include <stdio.h>

#include "../internal.h"

static int detect(const struct prb_system *sys, struct dram_plan *plan, char *why, size_t n)
{
	static const struct {
		enum dram_dir dir;
		const char *alias;
		double bytes;
	} events[] = { { DRAM_READ, "cmem_rd_data", 32.0 },
		       { DRAM_WRITE, "cmem_wr_total_bytes", 1.0 } };
	const struct prb_pmu *pmus[PRB_DRAM_MAX_INSTANCES];
	size_t k = prb_dram_pmus_matching(sys, "nvidia_scf_pmu_", pmus, ARRAY_SIZE(pmus));
	if (!k) {
		snprintf(why, n, "no nvidia_scf_pmu_N PMU (NVIDIA Grace)");
		return 0;
	}
	if (k > ARRAY_SIZE(pmus))
		return prb_dram_too_many("nvidia_scf_pmu_N PMUs", k, why, n);
	for (size_t i = 0; i < k; i++) {
		if (prb_dram_pmu_check(pmus[i], why, n) < 0)
			return -EINVAL;
		for (size_t e = 0; e < ARRAY_SIZE(events); e++)
			if (!prb_pmu_event_find(pmus[i], events[e].alias)) {
				snprintf(why, n, "%s has no events/%s", pmus[i]->name,
					 events[e].alias);
				return -EINVAL;
			}
	}
	for (size_t i = 0; i < k; i++) {
		int first = prb_dram_plan_add_pmu(plan, pmus[i], why, n);
		if (first < 0)
			return first;
		for (size_t e = 0; e < ARRAY_SIZE(events); e++) {
			int rc = prb_dram_plan_add_event(plan, first, events[e].dir, events[e].alias,
						     events[e].bytes, why, n);
			if (rc < 0)
				return rc;
		}
	}
	return plan->n;
}

const struct dram_backend prb_dram_nvidia_scf = {
	.name = "nvidia_scf",
	.description = "NVIDIA Grace SCF CPU traffic to CPU memory (cmem_rd_data x 32 bytes, "
		       "cmem_wr_total_bytes)",
	.provides = PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL,
	.flags = PRB_DRAM_CAVEAT,
	.caveat = "fabric counts of CPU traffic to CPU memory (LPDDR5X), not memory-controller "
		  "commands: PCIe and GPU (NVLink-C2C) traffic are in other PMUs and not counted; "
		  "32 bytes per read beat is not stated by the driver. Run memwall calibrate once",
	.machine = "aarch64",
	.names = { { "nvidia_scf_pmu_", DRAM_NAME_DIGITS } },
	.detect = detect,
};
