/* tests/lib/sim_series.h: series of records made by `memwall run` on the simulated PMU, whose
 * DRAM bytes per token are known (tests/e2e/test_db_series.c, test_site_chromium.c).
 *
 * A short protocol (3 prompt tokens, D decode tokens, R runs, no warm-up, a 1 ms idle window,
 * no drift probe) runs the synthetic stories260K model with its DRAM counts scripted on a
 * recorded sysfs tree with intel_imc_free's two instances (read and write). A script gives
 * every decode token X counts of each instance's data_read (and X / 100 of data_write): the
 * MB/token it makes is sim_series_mb_per_token(X), computed from the counts and the tree's
 * bytes per count. The builtin runner reads the counters once per window: per run, the idle
 * window's two reads, the prefill's start, its one chunk, then one read per decode token
 * (tests/e2e/test_run_sim.c has the plan), so each run is D + 4 reads, and a script's steps
 * give the idle window 1 count (its rate, subtracted over the decode time, is a few bytes a
 * token) and every other window X. Needs MEMWALL_COUNTERS=sim and MEMWALL_SYSFS_ROOT set to the
 * tree by the caller. */
#ifndef MEMWALL_TEST_SIM_SERIES_H
#define MEMWALL_TEST_SIM_SERIES_H

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "sim_tree.h"
#include "test.h"

/* The script of X counts per decode token for `runs` runs of `decode` tokens, into path. */
static inline void sim_series_script(const char *path, const char *tree, unsigned x, int runs,
				     int decode)
{
	FILE *f = fopen(path, "w");
	T_ASSERT(f != NULL);
	if (!f)
		exit(1);
	fprintf(f, "# written by tests/lib/sim_series.h\n");
	for (int inst = 0; inst < 2; inst++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", inst);
		static const struct { unsigned config; unsigned div; } ev[2] = {
			{ 0x20ff, 1 },   /* data_read event=0xff,umask=0x20 */
			{ 0x30ff, 100 }, /* data_write umask=0x30: a hundredth of it */
		};
		for (int e = 0; e < 2; e++) {
			unsigned s = x / ev[e].div;
			fprintf(f, "perf type=%u config=0x%x cpu=* start=0 steps=", pmu_type(tree, pmu),
				ev[e].config);
			for (int r = 0; r < runs; r++) {
				fprintf(f, "%s%u,1,%u,%u", r ? "," : "", s, s, s);
				for (int t = 0; t < decode; t++)
					fprintf(f, ",%u", s);
			}
			fputc('\n', f);
		}
	}
	fclose(f);
}

/* MB/token of a script of X counts per decode token, from the tree's bytes per count. */
static inline double sim_series_mb_per_token(const char *tree, unsigned x)
{
	double bytes = 0;
	for (int inst = 0; inst < 2; inst++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", inst);
		bytes += (double)x * alias_bytes(tree, pmu, "data_read");
	}
	return bytes / 1e6;
}

/* The protocol NAME (a file dir/NAME.json; another name is another protocol file, so another
 * series) of `decode` tokens and `runs` runs; roofline is its "roofline" object's JSON. The
 * tok/s CV limit is off: runs of a millisecond on a busy machine differ tenfold. Returns
 * static storage. */
static inline const char *sim_series_protocol(const char *dir, const char *name, int decode,
					      int runs, const char *roofline)
{
	static char path[4400];
	char body[2048];
	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	snprintf(body, sizeof(body),
		 "{\"name\": \"%s\", \"description\": \"tests/lib/sim_series.h\","
		 " \"model\": {\"format\": \"llama2c\", \"synth\": {\"shape\": \"stories260K\","
		 " \"seed\": 42}}, \"tokenizer\": null,"
		 " \"engine\": {\"kind\": \"builtin\", \"threads\": 1, \"kernels\": \"auto\","
		 " \"load\": \"mmap\"}, \"prompt_tokens\": [1, 5, 9], \"decode_tokens\": %d,"
		 " \"runs\": %d, \"warmup_runs\": 0, \"sampling\": {\"temperature\": 0, \"seed\": 42},"
		 " \"counters\": {\"dram\": \"required\", \"backend\": \"auto\", \"energy\": \"off\"},"
		 " \"idle_baseline_ms\": 1, \"acceptance\": {\"max_cv_mb_per_token_pct\": 5.0,"
		 " \"min_tokens\": %d},"
		 " \"drift\": {\"max_bandwidth_change_pct\": 50, \"probe_ms\": 0},"
		 " \"roofline\": %s}",
		 name, decode, runs, decode, roofline);
	t_write_file(path, body);
	return path;
}

/* One `memwall run PROTO -o DIR` with the script at script; the record's path into out. */
static inline void sim_series_run(const char *dir, const char *proto, const char *script,
				  char *out, size_t n)
{
	setenv("MEMWALL_SIM_SCRIPT", script, 1);
	struct t_output o = t_run((const char *[]){ "memwall", "run", proto, "-o", dir, NULL });
	const char *w = o.err ? strstr(o.err, "result written to ") : NULL;
	out[0] = '\0';
	if (w)
		snprintf(out, n, "%.*s", (int)strcspn(w + 18, " \n"), w + 18);
	if (o.status || !w)
		fprintf(stderr, "memwall run %s: exit %d\n%s", proto, o.status, o.err);
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
}

/* The median over a record's measured (not warm-up) runs of runs[].figures.METRIC; NaN when
 * no run has it. */
static inline double sim_series_median(const char *path, const char *metric)
{
	json_t *d = json_load_file(path, 0, NULL), *r;
	double v[64];
	size_t n = 0, i;
	json_array_foreach(json_object_get(d, "runs"), i, r) {
		const json_t *x = json_object_get(json_object_get(r, "figures"), metric);
		if (!json_is_true(json_object_get(r, "warmup")) && json_is_number(x) && n < 64)
			v[n++] = json_number_value(x);
	}
	json_decref(d);
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n; b++)
			if (v[b] < v[a]) {
				double t = v[a];
				v[a] = v[b];
				v[b] = t;
			}
	return n == 0 ? NAN : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
