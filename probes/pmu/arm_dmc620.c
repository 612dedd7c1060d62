/* probes/pmu/arm_dmc620.c: Arm DMC-620 memory controllers (Ampere Altra), one PMU per channel.
 *
 * What the kernel says (drivers/perf/arm_dmc620_pmu.c):
 *   - one PMU per DMC-620, that is per DDR channel, registered as arm_dmc620_<hex>, the hex
 *     being the controller's physical base address shifted right by 12 bits (a two-socket
 *     Altra shows arm_dmc620_10008c000 ... _10008dc00 and _50008c000 ... _50008dc00: eight
 *     channels per socket). The suffix is hexadecimal, never a small decimal index;
 *   - formats: mask = config:0-44, match = config1:0-44, invert = config2:0, incr =
 *     config2:1-2, event = config2:3-8, clkdiv2 = config2:9; every alias reads
 *     "event=0x..,clkdiv2=0x..", and clkdiv2_rdwr (event 0x12 on the clkdiv2 counters) is
 *     the one that counts DRAM reads and writes;
 *   - 8 clkdiv2 counters and 2 clk counters per controller, 32 bits wide; the driver reloads
 *     them on overflow and hands perf a 64-bit count. Reads and writes take two of the eight
 *     clkdiv2 counters of each controller: nothing is multiplexed;
 *   - event_init refuses (-EINVAL) any event whose group leader or siblings are hardware
 *     events: the counters cannot be stopped together, so the driver allows one hardware
 *     event per group. Hence no_group: each counter is opened alone (dram.c then never tries
 *     a group, and one refused group would have cost an open per instance);
 *   - events are bound to one CPU, the interrupt's (recent kernels show it in cpumask;
 *     older ones have no cpumask file, and the driver moves the event there whatever CPU it
 *     was opened on).
 * What the kernel does not say: the meaning of the mask/match bits (a filter over the
 * transaction's attributes) and the bytes behind one count. Published DMC-620 measurements
 * on Altra count reads with mask=1,match=0 and writes with mask=1,match=1 on clkdiv2_rdwr
 * (bit 0 of the attributes is the direction), and one count is one DDR4 burst on a 64-bit
 * channel: BL8 x 8 bytes = 64 bytes. Those two facts come from outside the driver, so the
 * backend carries a caveat until memwall calibrate has confirmed them on the machine.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"

#define PREFIX "arm_dmc620_"
#define RDWR "clkdiv2_rdwr"

/* arm_dmc620_ followed by one or more hex digits and nothing else */
static bool is_dmc620(const char *name)
{
	size_t n = strlen(PREFIX);
	if (strncmp(name, PREFIX, n) || !name[n])
		return false;
	for (const char *p = name + n; *p; p++)
		if (!isxdigit((unsigned char)*p))
			return false;
	return true;
}

static int add(struct dram_plan *plan, const struct prb_pmu *pmu, char *why, size_t n)
{
	const struct prb_event *rdwr = prb_pmu_event_find(pmu, RDWR);
	char terms[300];
	if (prb_dram_pmu_check(pmu, why, n) < 0)
		return -EINVAL;
	if (!rdwr) {
		snprintf(why, n, "%s has no events/" RDWR " (the alias that counts DRAM reads "
			 "and writes): is this a DMC-620?", pmu->name);
		return -EINVAL;
	}
	int first = prb_dram_plan_add_pmu(plan, pmu, why, n);
	if (first < 0)
		return first;
	/* the alias's own event and clkdiv2 terms, with the direction filter added */
	int rc = fmt_into(terms, "%s,mask=0x1,match=0x0", rdwr->terms);
	if (rc == 0)
		rc = prb_dram_plan_add_event(plan, first, DRAM_READ, terms, 64.0, why, n);
	if (rc == 0)
		rc = fmt_into(terms, "%s,mask=0x1,match=0x1", rdwr->terms);
	if (rc == 0)
		rc = prb_dram_plan_add_event(plan, first, DRAM_WRITE, terms, 64.0, why, n);
	return rc;
}

static int detect(const struct prb_system *sys, struct dram_plan *plan, char *why, size_t n)
{
	int found = 0;
	size_t all = 0;
	for (size_t i = 0; i < prb_system_pmu_count(sys); i++)
		all += is_dmc620(prb_system_pmu(sys, i)->name);
	if (all > PRB_DRAM_MAX_INSTANCES)
		return prb_dram_too_many("arm_dmc620_<hex> PMUs", all, why, n);
	for (size_t i = 0; i < prb_system_pmu_count(sys); i++) {
		const struct prb_pmu *pmu = prb_system_pmu(sys, i);
		if (!is_dmc620(pmu->name))
			continue;
		int rc = add(plan, pmu, why, n);
		if (rc < 0)
			return rc;
		found++;
	}
	if (!found)
		snprintf(why, n, "no arm_dmc620_<hex> PMU (DMC-620: Ampere Altra)");
	return found ? plan->n : 0;
}

const struct dram_backend prb_dram_arm_dmc620 = {
	.name = "arm_dmc620",
	.description = "Arm DMC-620 memory controllers (clkdiv2_rdwr split by direction), 64 "
		       "bytes per count",
	.provides = PRB_DRAM_READ | PRB_DRAM_WRITE | PRB_DRAM_TOTAL,
	.flags = PRB_DRAM_CAVEAT,
	.no_group = true,
	.caveat = "the read/write filter (mask/match bit 0) and 64 bytes per count come from "
		  "DMC-620 measurements, not from the kernel driver: run memwall calibrate once "
		  "on this machine before trusting the split",
	.machine = "aarch64",
	.names = { { "arm_dmc620_", DRAM_NAME_HEX } },
	.detect = detect,
};
