/* tests/src/test_attribution.c: weights / KV / remainder per decode token (src/analysis/attribution.c) on
 * constructed records whose split is known, read as the report reads them
 * (src/record/record_view.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribution.h"
#include "record_view.h"
#include "run.h"
#include "test.h"

/* A record of one measured run: prompt of `pre` tokens, `n` decode tokens of
 * w + k * (pos + 2) engine bytes each (KV read at pos + 1 positions, one written). */
static json_t *record(double w, double k, int pre, int n, double dram_rd, double dram_wr)
{
	json_t *eng = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(eng, json_integer((json_int_t)(w + k * (pre + i + 2))));
	json_t *m = json_object();
	if (dram_rd > 0) {
		json_object_set_new(m, "dram_read_bytes_per_token",
				    json_pack("{s:b, s:f}", "measured", 1, "mean", dram_rd));
		json_object_set_new(m, "dram_write_bytes_per_token",
				    json_pack("{s:b, s:f}", "measured", 1, "mean", dram_wr));
	} else {
		json_object_set_new(m, "dram_read_bytes_per_token",
				    json_pack("{s:b, s:s}", "measured", 0, "reason", "no counters here"));
	}
	return json_pack("{s:[{s:b, s:b, s:{s:i}, s:{s:o}}, {s:b, s:b, s:{s:i}, s:{s:[i]}}],"
			 " s:{s:o}}",
			 "runs", "warmup", 0, "complete", 1, "prefill", "tokens", pre, "tokens",
			 "engine_bytes", eng, "warmup", 1, "complete", 1, "prefill", "tokens", 0,
			 "tokens", "engine_bytes", 5, "summary", "metrics", m);
}

/* The record's runs and DRAM figures through the reader, then attribution's arithmetic. */
static void compute(const json_t *doc, struct mw_attribution *a)
{
	struct mw_attribution_input in;
	struct mw_error err;
	T_EQ_INT(mw_record_attribution_read(doc, "(test)", &in, &err), 0);
	mw_attribution_compute(&in, a);
	mw_record_attribution_free(&in);
}

static void print_md(FILE *f, const json_t *doc)
{
	struct mw_attribution_input in;
	struct mw_error err;
	T_EQ_INT(mw_record_attribution_read(doc, "(test)", &in, &err), 0);
	mw_attribution_print_md(f, &in, NULL);
	mw_record_attribution_free(&in);
}

static void test_split(void)
{
	/* weights 1e6, 1000 B per position, prompt 3, 4 tokens at positions 3..6: KV of
	 * 5000, 6000, 7000, 8000 B, mean 6500. DRAM 1.2e6 read + 0.1002e6 written. */
	json_t *doc = record(1e6, 1000, 3, 4, 1.2e6, 0.1002e6);
	struct mw_attribution a;
	compute(doc, &a);
	T_ASSERT(a.engine);
	T_NEAR(a.weights, 1e6, 0);
	T_NEAR(a.kv_per_position, 1000, 0);
	T_NEAR(a.kv, 6500, 1e-9);
	T_ASSERT(a.dram);
	T_NEAR(a.dram_bytes, 1.3002e6, 1e-6);
	T_NEAR(a.remainder, 1.3002e6 - 1e6 - 6500, 1e-6); /* 293,700 B */

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	print_md(f, doc);
	fclose(f);
	T_CONTAINS(text, "engine-accounted");
	T_CONTAINS(text, "| weights | 1.000 |");
	T_CONTAINS(text, "| activations and the rest (remainder) | 0.294 |");
	free(text);
	json_decref(doc);
}

static void test_not_measured(void)
{
	json_t *doc = record(2e6, 500, 0, 3, 0, 0);
	struct mw_attribution a;
	compute(doc, &a);
	T_ASSERT(a.engine);
	T_NEAR(a.weights, 2e6, 0);
	T_ASSERT(!a.dram);
	T_ASSERT(isnan(a.remainder)); /* never 0 */
	T_CONTAINS(a.dram_reason, "no counters here");
	json_decref(doc);

	/* Engine bytes that do not grow by a constant KV share: refused, with the reason. */
	doc = record(2e6, 500, 0, 3, 0, 0);
	json_t *eng = json_object_get(json_object_get(json_array_get(json_object_get(doc, "runs"), 0),
						      "tokens"), "engine_bytes");
	json_array_set_new(eng, 2, json_integer(123));
	compute(doc, &a);
	T_ASSERT(!a.engine);
	T_ASSERT(isnan(a.weights));
	T_CONTAINS(a.engine_reason, "constant KV share");
	json_decref(doc);

	/* A reference record has no runs. */
	doc = json_pack("{s:[], s:{s:{}}}", "runs", "summary", "metrics");
	compute(doc, &a);
	T_ASSERT(!a.engine);
	json_decref(doc);
}

/* `memwall run --phases` end to end: the phases of the decode window add up to its engine
 * bytes, the record validates, and the report shows the table. */
static void test_run_phases(void)
{
	char dir[] = "/tmp/mw-attribution-XXXXXX", out[300], cache[300], proto[4096], cmd[700];
	T_ASSERT(mkdtemp(dir) != NULL);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	setenv("MEMWALL_CACHE_DIR", cache, 1);
	snprintf(proto, sizeof(proto), "%s/stories260k-smoke.json", dir);
	t_smoke_protocol(proto); /* without the drift probe: phases are tested, not drift */
	const char *argv[] = { "memwall", "run", proto, "--runs", "1", "--tokens", "32", "--phases=layers",
			       "-o", out, NULL };
	struct t_output o = t_run(argv);
	/* 1 is an acceptance criterion missed on a busy shared machine: not this test's
	 * concern; the record is written either way. */
	T_ASSERT(o.status == 0 || o.status == 1);
	T_CONTAINS(o.out, "By engine phase");
	t_output_free(&o);

	snprintf(cmd, sizeof(cmd), "ls %s/*.json", out);
	FILE *ls = popen(cmd, "r");
	char path[600] = "";
	if (ls && fgets(path, sizeof(path), ls))
		path[strcspn(path, "\n")] = '\0';
	if (ls)
		pclose(ls);
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	T_ASSERT(doc != NULL);
	const json_t *run;
	size_t i;
	int seen = 0;
	json_array_foreach(json_object_get(doc, "runs"), i, run) {
		const json_t *dec = json_object_get(run, "decode");
		json_t *ph = json_object_get(dec, "phases");
		T_ASSERT(ph != NULL);
		json_int_t sum = 0;
		const char *k;
		json_t *v;
		json_object_foreach(ph, k, v)
			sum += json_integer_value(json_object_get(v, "engine_bytes"));
		T_EQ_INT(sum, json_integer_value(json_object_get(dec, "engine_bytes")));
		T_EQ_INT(json_array_size(json_object_get(ph, "layers")), 5); /* stories260K */
		seen++;
	}
	T_EQ_INT(seen, 2); /* one warm-up, one measured */
	json_decref(doc);
	const char *vargv[] = { "memwall", "validate", path, NULL };
	T_RUN_EXPECT(vargv, 0, NULL, NULL);
	T_EQ_INT(t_rm_tree(dir), 0);
}

/* Measured DRAM at the phase markers (a constructed record: this machine has no memory
 * controller counters) prints per token. */
static void test_phase_table(void)
{
	json_t *doc = record(1e6, 1000, 3, 4, 1.2e6, 0.1002e6);
	json_t *run = json_array_get(json_object_get(doc, "runs"), 0);
	json_object_set_new(run, "decode", json_pack(
		"{s:i, s:{s:{s:i, s:i, s:i}, s:{s:i, s:i, s:i}, s:{s:i, s:i, s:i},"
		" s:[{s:i, s:i, s:i, s:i, s:i}]}}",
		"tokens", 4, "phases",
		"attention", "engine_bytes", 1200000, "dram_read_bytes", 2000000, "dram_write_bytes", 400000,
		"ffn", "engine_bytes", 2400000, "dram_read_bytes", 2400000, "dram_write_bytes", 0,
		"classifier", "engine_bytes", 400000, "dram_read_bytes", 400000, "dram_write_bytes", 0,
		"layers", "layer", 0, "attention_dram_read_bytes", 2000000, "attention_dram_write_bytes",
		400000, "ffn_dram_read_bytes", 2400000, "ffn_dram_write_bytes", 0));
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	print_md(f, doc);
	fclose(f);
	T_CONTAINS(text, "| attention | 0.300 | 0.500 | 0.100 |");
	T_CONTAINS(text, "| ffn | 0.600 | 0.600 | 0.000 |");
	T_CONTAINS(text, "| 0 | 0.500 | 0.100 | 0.600 | 0.000 |");
	free(text);
	json_decref(doc);
}

int main(void)
{
	test_phase_table();
	test_split();
	test_not_measured();
	test_run_phases();
	return t_done();
}
