/* src/record/report_counters.c: the counters' own story in a report: multiplexing and the
 * perf command that checks them (see report_counters.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "perf_line.h"
#include "report_counters.h"
#include "text.h"

/* One window's share into the running minimum. */
static void fold(const json_t *win, const char *path, double *min, char *where, size_t n,
		 int *below, int *windows)
{
	const json_t *s = json_object_get(win, "dram_running_share");
	if (!json_is_number(s))
		return;
	double v = json_number_value(s);
	(*windows)++;
	*below += v < 1.0;
	if (isnan(*min) || v < *min) {
		*min = v;
		snprintf(where, n, "%s", path);
	}
}

bool mw_record_min_share(const json_t *doc, double *share, char *where, size_t n, int *below,
			 int *windows)
{
	/* decode first: of windows with the same share, the one that names its instances */
	static const char *const win[] = { "decode", "prefill", "idle" };
	static const char *const proc[] = { "short", "long" };
	const json_t *run;
	size_t i;
	char path[96];
	*share = NAN;
	*below = *windows = 0;
	where[0] = '\0';
	json_array_foreach(json_object_get(doc, "runs"), i, run)
		for (size_t w = 0; w < sizeof(win) / sizeof(win[0]); w++) {
			snprintf(path, sizeof(path), "runs[%zu].%s", i, win[w]);
			fold(json_object_get(run, win[w]), path, share, where, n, below, windows);
		}
	json_array_foreach(json_object_get(json_object_get(doc, "external"), "repetitions"), i,
			   run)
		for (size_t w = 0; w < sizeof(proc) / sizeof(proc[0]); w++) {
			snprintf(path, sizeof(path), "external.repetitions[%zu].%s", i, proc[w]);
			fold(json_object_get(run, proc[w]), path, share, where, n, below, windows);
		}
	return *windows > 0;
}

/* The window at path ("runs[2].decode"), or NULL. */
static const json_t *window_at(const json_t *doc, const char *path)
{
	size_t i;
	char name[16];
	if (sscanf(path, "runs[%zu].%15s", &i, name) == 2)
		return json_object_get(json_array_get(json_object_get(doc, "runs"), i), name);
	return NULL;
}

void mw_report_multiplex_md(FILE *f, const json_t *doc)
{
	double share;
	char where[128];
	int below, windows;
	if (!mw_record_min_share(doc, &share, where, sizeof(where), &below, &windows) ||
	    !(share < 1.0))
		return;
	/* the least counted instance of that window, where the window splits them */
	const json_t *in, *worst = NULL;
	size_t i;
	json_array_foreach(json_object_get(window_at(doc, where), "dram_instances"), i, in) {
		const json_t *s = json_object_get(in, "running_share");
		if (json_is_number(s) &&
		    (!worst || json_number_value(s) <
				       json_number_value(json_object_get(worst, "running_share"))))
			worst = in;
	}
	const char *pmu = json_string_value(json_object_get(worst, "pmu"));
	if (share <= 0) {
		/* no running time at all: nothing was extrapolated, the figure is not measured */
		fprintf(f, "- **Not counted:** a DRAM counter was enabled but never ran in %s%s%s "
			   "(%d of %d windows below 100 %%): the kernel never scheduled it, so its "
			   "figures there are not measured.\n", where, pmu ? ", on " : "",
			pmu ? mw_esc(pmu) : "", below, windows);
		return;
	}
	fprintf(f, "- **Multiplexed:** the DRAM counters ran %.1f %% of the time they were enabled "
		   "in %s%s%s (%d of %d windows below 100 %%): the kernel time-shared them with "
		   "other events and memwall extrapolated their counts by time enabled / time "
		   "running, as perf does. Those figures are estimates, not counts "
		   "(results/README.md, Multiplexing).\n",
		share * 100.0, where, pmu ? ", least on " : "", pmu ? mw_esc(pmu) : "", below,
		windows);
}

void mw_report_perf_md(FILE *f, const json_t *doc)
{
	const json_t *dram = json_object_get(json_object_get(doc, "counters"), "dram");
	const json_t *opened = json_object_get(dram, "opened");
	if (!json_is_true(json_object_get(dram, "measured")) || !opened)
		return;
	/* perf around the same memwall command: its window holds every window of the run */
	json_t *cmd = json_array();
	const json_t *mc = json_object_get(json_object_get(doc, "memwall"), "command");
	json_array_append_new(cmd, json_string("memwall"));
	json_array_extend(cmd, json_is_array(mc) ? (json_t *)(uintptr_t)mc : NULL);
	struct mw_perf_line pl;
	int rc = mw_perf_line(opened, cmd, &pl);
	json_decref(cmd);
	const char *layer = json_string_value(json_object_get(dram, "layer"));
	if (rc < 0) {
		fprintf(f, "\nCheck with perf: no command (%s)\n", mw_esc(pl.note));
		return;
	}
	fprintf(f, "\nCheck with perf (the kernel's own tool, the same %d event%s; its count covers "
		   "the whole memwall command, idle windows and warm-up included, so it is at least "
		   "the sum of the windows):\n\n    %s\n\n%s%s\n",
		pl.n_events, pl.n_events == 1 ? "" : "s", mw_esc(pl.command), mw_esc(pl.note),
		layer && !strcmp(layer, "sim") ? " These are the events of the tree the SIMULATED "
						 "PMU replayed: perf counts them only on a machine "
						 "that has them." : "");
}
