/* tests/lib/sim_series.c: the bodies of sim_series.h. */
#include "sim_series.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "run.h"
#include "sim_tree.h"
#include "test.h"

void t_series_script(const char *path, const char *tree, unsigned x, int runs, int decode)
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
			fprintf(f, "perf type=%u config=0x%x cpu=* start=0 steps=",
				t_pmu_type(tree, pmu), ev[e].config);
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

double t_series_mb_per_token(const char *tree, unsigned x)
{
	double bytes = 0;
	for (int inst = 0; inst < 2; inst++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", inst);
		bytes += (double)x * t_alias_bytes(tree, pmu, "data_read");
	}
	return bytes / 1e6;
}

const char *t_series_protocol(const char *dir, const char *name, int decode,
				int runs, const char *roofline)
{
	static char path[4400];
	char body[2048];
	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	snprintf(
	    body, sizeof(body),
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

void t_series_run(const char *dir, const char *proto, const char *script, char *out, size_t n)
{
	setenv("MEMWALL_SIM_SCRIPT", script, 1);
	struct t_output o = t_run((const char *[]){ "memwall", "run", proto, "-o", dir, NULL });
	bool written = t_written_path(o.err, out, n);
	if (o.status || !written)
		fprintf(stderr, "memwall run %s: exit %d\n%s", proto, o.status, o.err);
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
}

void t_series_ab(const char *dir, const char *tree, unsigned x_a, unsigned x_b, int runs,
		 int decode, char *a, char *b, size_t n)
{
	char root[4200];
	snprintf(root, sizeof(root), "%s%s", t_data("sysfs/"), tree);
	setenv("MEMWALL_COUNTERS", "sim", 1);
	setenv("MEMWALL_SYSFS_ROOT", root, 1);
	snprintf(a, n, "%s/a.script", dir);
	snprintf(b, n, "%s/b.script", dir);
	t_series_script(a, tree, x_a, runs, decode);
	t_series_script(b, tree, x_b, runs, decode);
}
