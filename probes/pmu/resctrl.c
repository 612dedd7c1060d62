/* probes/pmu/resctrl.c: Linux resctrl memory bandwidth monitoring (MBM), the last resort.
 *
 * With resctrl mounted (mount -t resctrl resctrl /sys/fs/resctrl), each L3 domain has
 * mon_data/mon_L3_NN/mbm_total_bytes: a byte count the kernel keeps 64 bits wide across the
 * hardware counter's overflow (Documentation/arch/x86/resctrl.rst). It counts traffic that
 * cores originate, attributed by RMID; device DMA is not in it, and it has no read/write split.
 * When the hardware has no count for the RMID the file reads "Unavailable" (or "Error", or on
 * recent kernels "Unassigned" in mbm_event counter-assignment mode) instead of a number: that
 * reading is PRB_READ_FAILED for the domain (the file counter in probes/counter.c).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../internal.h"

static int by_name(const void *a, const void *b)
{
	const struct dram_instance *x = a, *y = b;
	return strcmp(x->name, y->name);
}

static int detect(const struct prb_system *sys, struct dram_plan *plan, char *why, size_t n)
{
	char dir[400];
	DIR *d = NULL;
	if (fmt_into(dir, "%s/fs/resctrl/mon_data", prb_system_root(sys)) == 0)
		d = opendir(dir);
	struct dirent *de;
	if (!d) {
		snprintf(why, n, "no %s (resctrl not mounted, or no MBM on this CPU)", dir);
		return 0;
	}
	size_t domains = 0;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "mon_L3_", 7))
			continue;
		/* every domain is counted; past the limit none is kept (prb_dram_too_many) */
		if (domains++ >= PRB_DRAM_MAX_INSTANCES)
			continue;
		struct dram_instance *in = &plan->inst[plan->n];
		memset(in, 0, sizeof(*in));
		if (fmt_into(in->path, "%s/%s/mbm_total_bytes", dir, de->d_name) < 0 ||
		    fmt_into(in->name, "resctrl/%s", de->d_name) < 0 || access(in->path, R_OK))
			continue;
		in->cpu = -1;
		in->counter_bits = 64;
		plan->n++;
	}
	closedir(d);
	if (domains > PRB_DRAM_MAX_INSTANCES) {
		char what[460];
		snprintf(what, sizeof(what), "L3 domains under %s", dir);
		return prb_dram_too_many(what, domains, why, n);
	}
	/* readdir's order is the filesystem's: sort, so that instance i is the same domain on
	 * every run (mon_L3_00 before mon_L3_01, as the PMU backends number theirs) */
	qsort(plan->inst, (size_t)plan->n, sizeof(plan->inst[0]), by_name);
	if (!plan->n)
		snprintf(why, n, "%s has no mon_L3_*/mbm_total_bytes", dir);
	return plan->n;
}

const struct dram_backend prb_dram_resctrl = {
	.name = "resctrl",
	.description = "Linux resctrl MBM mbm_total_bytes per L3 domain",
	.provides = PRB_DRAM_TOTAL,
	.flags = PRB_DRAM_CAVEAT,
	.caveat = "core-originated traffic only (resctrl MBM): device DMA is not counted, and "
		  "there is no read/write split",
	.machine = NULL,
	.names = { { "resctrl/mon_L3_", DRAM_NAME_DIGITS } },
	.detect = detect,
};
