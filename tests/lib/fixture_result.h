/* tests/lib/fixture_result.h: synthetic result records for tests of validate, compare and report:
 * deterministic per-token data around chosen means, with mw_result_derive filling in every
 * figure exactly as the runner does. */
#ifndef MEMWALL_FIXTURE_RESULT_H
#define MEMWALL_FIXTURE_RESULT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "result.h"

struct t_fx_spec {
	const char *protocol;  /* protocol name */
	const char *cpu;       /* machine.cpu_name */
	int runs, warmups, tokens;
	double latency_ns;     /* mean per-token latency */
	double jitter;         /* relative spread of latencies across runs, e.g. 0.01 */
	double dram_bytes;     /* per token; 0: DRAM not measured */
	int instances;         /* memory-controller instances the DRAM bytes split over */
	uint32_t seed;
};

/* A small LCG: the fixture must not depend on libc's rand(). */
static inline double t_fx_uniform(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return (double)(*s >> 8) / 16777216.0;
}

static inline json_t *t_fx_record(const struct t_fx_spec *sp)
{
	uint32_t seed = sp->seed ? sp->seed : 1;
	json_t *runs = json_array();
	bool dram = sp->dram_bytes > 0;
	for (int r = 0; r < sp->runs + sp->warmups; r++) {
		double run_scale = 1.0 + sp->jitter * (2.0 * t_fx_uniform(&seed) - 1.0);
		json_t *ids = json_array(), *lat = json_array(), *eng = json_array();
		json_t *rd = dram ? json_array() : json_null(), *wr = dram ? json_array() : json_null();
		int64_t ns = 0, engsum = 0, rdsum = 0, wrsum = 0;
		for (int t = 0; t < sp->tokens; t++) {
			int64_t l = (int64_t)(sp->latency_ns * run_scale *
					      (1.0 + 0.05 * (t_fx_uniform(&seed) - 0.5)));
			int64_t e = 1000000 + 256 * t;
			json_array_append_new(ids, json_integer(5 + t % 7));
			json_array_append_new(lat, json_integer(l));
			json_array_append_new(eng, json_integer(e));
			ns += l;
			engsum += e;
			if (dram) {
				int64_t b = (int64_t)(sp->dram_bytes * run_scale);
				json_array_append_new(rd, json_integer(b));
				json_array_append_new(wr, json_integer(b / 10));
				rdsum += b;
				wrsum += b / 10;
			}
		}
		json_t *dec = json_pack("{s:i, s:I, s:I, s:o, s:o, s:n}", "tokens", sp->tokens, "ns",
					(json_int_t)ns, "engine_bytes", (json_int_t)engsum,
					"dram_read_bytes", dram ? json_integer(rdsum) : json_null(),
					"dram_write_bytes", dram ? json_integer(wrsum) : json_null(),
					"energy_j");
		if (dram && sp->instances > 0) {
			json_t *split = json_array();
			int64_t r0 = rdsum, w0 = wrsum;
			for (int k = 0; k < sp->instances; k++) {
				int64_t rk = k == sp->instances - 1 ? r0 : rdsum / sp->instances;
				int64_t wk = k == sp->instances - 1 ? w0 : wrsum / sp->instances;
				char pmu[64];
				snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", k);
				json_array_append_new(split, json_pack("{s:s, s:I, s:I}", "pmu", pmu,
								       "read_bytes", (json_int_t)rk,
								       "write_bytes", (json_int_t)wk));
				r0 -= rk;
				w0 -= wk;
			}
			json_object_set_new(dec, "dram_instances", split);
		}
		json_array_append_new(runs, json_pack(
			"{s:i, s:b, s:b, s:{s:i, s:o, s:o}, s:{s:i, s:i, s:i}, s:o,"
			" s:{s:o, s:o, s:o, s:o, s:o, s:n}, s:{}}",
			"index", r, "warmup", r < sp->warmups, "complete", 1,
			"idle", "window_ns", 100000000, "dram_read_bytes",
			dram ? json_integer(1000000) : json_null(), "dram_write_bytes",
			dram ? json_integer(100000) : json_null(),
			"prefill", "tokens", 1, "ns", 50000, "engine_bytes", 1000000,
			"decode", dec,
			"tokens", "ids", ids, "latency_ns", lat, "engine_bytes", eng, "dram_read_bytes", rd,
			"dram_write_bytes", wr, "energy_j",
			"figures"));
	}
	json_t *doc = json_pack(
		"{s:s, s:s, s:b, s:n, s:s, s:{s:s}, s:{s:s, s:s, s:s},"
		" s:{s:s, s:s, s:{s:{s:f, s:f, s:i}}},"
		" s:{s:s, s:s, s:b},"
		" s:{s:s, s:i, s:i, s:i, s:i, s:I},"
		" s:{s:o, s:{s:b, s:s}},"
		" s:{s:b, s:f, s:f, s:f},"
		" s:o, s:{}, s:{}}",
		"schema", MW_RESULT_SCHEMA_ID, "kind", "run", "complete", 1, "incomplete_reason",
		"created_utc", "2026-11-21T06:00:00Z", "memwall", "version", "test",
		"units", "MB", "10^6 bytes", "MiB", "2^20 bytes", "time",
		"ns unless the key names another unit",
		"protocol", "name", sp->protocol, "sha256",
		"0000000000000000000000000000000000000000000000000000000000000000", "document",
		"acceptance", "max_cv_mb_per_token_pct", 1.0, "max_cv_tok_s_pct", 5.0, "min_tokens",
		sp->tokens,
		"model", "format", "llama2c", "sha256",
		"1111111111111111111111111111111111111111111111111111111111111111", "synthetic", 1,
		"machine", "cpu_name", sp->cpu, "cpu_family", 25, "cpu_model", 17, "cpu_stepping", 1,
		"logical_cpus", 2, "mem_total_bytes", (json_int_t)25276514304LL,
		"counters", "dram",
		dram ? json_pack("{s:b, s:s, s:[s]}", "measured", 1, "backend", "intel_imc_free",
				 "instances", "uncore_imc_free_running_0")
		     : json_pack("{s:b, s:s}", "measured", 0, "reason",
				 "fixture: no memory-controller counters"),
		"energy", "measured", 0, "reason", "fixture: no RAPL",
		"drift", "measured", 1, "before_gbps", 50.0, "after_gbps", 51.0, "tolerance_pct", 10.0,
		"runs", runs, "summary", "acceptance");
	struct mw_error err;
	if (!doc || mw_result_derive(doc, "fixture", &err)) {
		fprintf(stderr, "fixture: cannot build a record: %s\n", doc ? err.text : "pack");
		exit(1);
	}
	return doc;
}

/* Writes doc to dir/name (replacing it: test scratch space only). */
static inline void t_fx_write(const json_t *doc, const char *dir, const char *name, char *path,
			    size_t n)
{
	snprintf(path, n, "%s/%s", dir, name);
	if (json_dump_file(doc, path, JSON_INDENT(1) | JSON_REAL_PRECISION(17))) {
		fprintf(stderr, "fixture: cannot write %s\n", path);
		exit(1);
	}
}

#endif
