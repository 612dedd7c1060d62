/* tests/src/test_record_view.c: the record reader (src/record/record_view.c) on records this test
 * writes: every field it reads lands in its typed slot with the arithmetic done here, absent
 * fields say why, and a field of the wrong type (or one the record's structure needs, absent)
 * is an error naming the field. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record_view.h"
#include "test.h"

/* A model the engine describes without its file (eng_tensors_from_shape). */
#define MODEL "tiiuae-falcon-7b-Q4_K_M.gguf"

static json_t *parse(const char *text)
{
	json_error_t je;
	json_t *doc = json_loads(text, 0, &je);
	if (!doc)
		fprintf(stderr, "test record does not parse: %s (line %d)\n", je.text, je.line);
	T_ASSERT(doc != NULL);
	return doc;
}

/* The view's load of text: its return code, with the view and error kept. */
static int view_of(const char *text, struct mw_record_view *v, struct mw_error *err)
{
	struct eng_tensor_table *t = NULL;
	json_t *doc = parse(text);
	mw_error_clear(err);
	int rc = doc ? mw_record_view_load(doc, "rec.json", v, &t, err) : -1;
	if (!rc)
		T_ASSERT(t != NULL);
	eng_tensor_table_free(t);
	json_decref(doc); /* the view's strings are not read after this */
	return rc;
}

static void test_view_fields(void)
{
	/* Two sequences (engine.batch 2) of 10 prompt + 40 decode tokens each, decoded in 20
	 * passes; a warm-up run first, which the position ignores. */
	const char *rec =
		"{\"kind\": \"run\", \"model\": {\"name\": \"" MODEL "\", \"synthetic\": true},"
		" \"engine\": {\"batch\": 2, \"threads\": 6},"
		" \"machine\": {\"caches\": [{\"level\": 2, \"size_bytes\": 1048576},"
		"   {\"level\": 3, \"size_bytes\": 33554432},"
		"   {\"level\": 1, \"size_bytes\": 32768}]},"
		" \"counters\": {\"dram\": {\"measured\": true, \"reason\": null,"
		"   \"instances\": [\"amd_umc_0\", \"amd_umc_1\"]}},"
		" \"drift\": {\"method\": \"stream triad\", \"before_gbps\": 41.5},"
		" \"runs\": [{\"warmup\": true, \"prefill\": {\"tokens\": 2},"
		"    \"decode\": {\"tokens\": 4}},"
		"   {\"warmup\": false, \"prefill\": {\"tokens\": 20},"
		"    \"decode\": {\"tokens\": 80, \"steps\": 20}}],"
		" \"summary\": {\"metrics\": {"
		"   \"tok_per_s\": {\"measured\": true, \"mean\": 12.5},"
		"   \"dram_read_bytes_per_token\": {\"measured\": true, \"mean\": 4.25e9}}}}";
	struct mw_record_view v;
	struct mw_error err;
	T_EQ_INT(view_of(rec, &v, &err), 0);
	T_ASSERT(!v.reference);
	T_ASSERT(v.synthetic);
	T_EQ_INT(v.threads, 6);
	/* per sequence: 10 prompt + 40 decode tokens, middle at 10 + (40 - 1) / 2 = 29.5 -> 29 */
	T_EQ_INT(v.pos, 29);
	T_CONTAINS(v.pos_statement, "10 prompt + 40 decode");
	T_NEAR(v.tokens_per_pass, 80.0 / 20.0, 0);
	T_EQ_U64(v.llc_bytes, 33554432u);
	T_CONTAINS(v.llc_source, "L3");
	T_NEAR(v.measured_bytes, 4.25e9, 0);
	T_CONTAINS(v.measured_note, "dram_read_bytes_per_token.mean");
	T_ASSERT(v.dram_counted);
	T_NEAR(v.measured_tok_s, 12.5, 0);
	T_EQ_STR(v.tok_s_note, "");
	T_NEAR(v.bw_gbps, 41.5, 0);
	T_CONTAINS(v.bw_source, "stream triad");
	T_EQ_INT(v.n_instances, 2);

	/* The protocol's roofline inputs come before the record's caches and probe; a published
	 * MB/token whose unit is ambiguous is read as the larger (MiB). */
	const char *ref =
		"{\"kind\": \"reference\", \"model\": {\"name\": \"" MODEL "\", \"path\": null},"
		" \"protocol\": {\"document\": {\"roofline\": {\"bandwidth_gbps\": 90,"
		"   \"llc_bytes\": 7340032}}},"
		" \"machine\": {\"caches\": [{\"level\": 3, \"size_bytes\": 33554432}]},"
		" \"drift\": {\"before_gbps\": 41.5},"
		" \"summary\": {\"tokens_measured\": 1000, \"runs_measured\": 5, \"metrics\": {"
		"   \"dram_read_MB_per_token\": {\"measured\": true, \"mean\": 2000,"
		"     \"unit\": \"MB/token as published (10^6 or 2^20 bytes)\"}}}}";
	T_EQ_INT(view_of(ref, &v, &err), 0);
	T_ASSERT(v.reference);
	T_ASSERT(v.model_path == NULL); /* null is absent */
	T_EQ_INT(v.pos, (200 - 1) / 2); /* 1000 tokens over 5 runs, no prompt */
	T_EQ_U64(v.llc_bytes, 7340032u);
	T_CONTAINS(v.llc_source, "protocol");
	T_NEAR(v.bw_gbps, 90, 0);
	T_CONTAINS(v.bw_source, "protocol");
	T_NEAR(v.measured_bytes, 2000 * 1048576.0, 0);
	T_CONTAINS(v.measured_note, "checked as MiB");
}

/* What a record does not say is absent, with the reason beside the figure: never a 0. */
static void test_view_absent(void)
{
	struct mw_record_view v;
	struct mw_error err;
	T_EQ_INT(view_of("{\"model\": {\"name\": \"" MODEL "\"},"
			 " \"counters\": {\"dram\": {\"measured\": false,"
			 "   \"reason\": \"no PMU here\"}},"
			 " \"drift\": {\"before_gbps\": null}}", &v, &err), 0);
	T_ASSERT(isnan(v.measured_bytes));
	T_EQ_STR(v.measured_note, "no PMU here");
	T_ASSERT(!v.dram_counted);
	T_ASSERT(isnan(v.measured_tok_s));
	T_CONTAINS(v.tok_s_note, "no summary.metrics.tok_per_s");
	T_ASSERT(isnan(v.bw_gbps));
	T_EQ_STR(v.bw_source, "");
	T_EQ_U64(v.llc_bytes, 0);
	T_EQ_INT(v.n_instances, 0);
	T_EQ_INT(v.threads, 0);

	/* The metric's own reason comes first; a tok/s not measured says its reason. */
	T_EQ_INT(view_of("{\"model\": {\"name\": \"" MODEL "\"}, \"summary\": {\"metrics\": {"
			 " \"dram_read_MB_per_token\": {\"measured\": false, \"reason\": \"not "
			 "published\"}, \"tok_per_s\": {\"measured\": false, \"reason\": \"cut "
			 "short\"}}}}", &v, &err), 0);
	T_EQ_STR(v.measured_note, "not published");
	T_EQ_STR(v.tok_s_note, "cut short");

	/* No model at all: the model's field is named. */
	T_EQ_INT(view_of("{\"model\": {\"name\": \"no-such-model\"}}", &v, &err), -ENOENT);
	T_EQ_STR(err.field, "model.name");
	T_CONTAINS(err.text, "no-such-model");
}

/* One wrong field in an otherwise good record: -EINVAL naming it with jansson's words. */
static void expect_wrong(const char *fields, const char *field, const char *says)
{
	char text[2048];
	struct mw_record_view v;
	struct mw_error err;
	snprintf(text, sizeof(text), "{\"model\": {\"name\": \"" MODEL "\"}, %s}", fields);
	T_EQ_INT(view_of(text, &v, &err), -EINVAL);
	T_EQ_STR(err.source, "rec.json");
	T_EQ_STR(err.field, field);
	T_CONTAINS(err.text, says);
	T_CONTAINS(err.text, "memwall validate");
}

static void test_view_wrong_types(void)
{
	expect_wrong("\"kind\": 3", "kind", "Expected string, got integer");
	expect_wrong("\"engine\": {\"batch\": 2.5}", "engine.batch", "Expected integer, got real");
	expect_wrong("\"runs\": [{\"prefill\": {\"tokens\": 1}, \"decode\": {\"tokens\": \"40\"}}]",
		     "runs[0].decode.tokens", "Expected real or integer, got string");
	expect_wrong("\"runs\": [{}, 7]", "runs[1]", "Expected object, got integer");
	expect_wrong("\"runs\": {}", "runs", "Expected array, got object");
	expect_wrong("\"machine\": {\"caches\": [{\"level\": 3, \"size_bytes\": \"32M\"}]}",
		     "machine.caches[0].size_bytes", "Expected integer, got string");
	expect_wrong("\"summary\": \"fast\"", "summary", "Expected object, got string");
	expect_wrong("\"summary\": {\"metrics\": {\"tok_per_s\": {\"measured\": \"yes\"}}}",
		     "summary.metrics.tok_per_s.measured", "Expected true or false, got string");
	expect_wrong("\"counters\": {\"dram\": {\"instances\": [\"amd_umc_0\", 1]}}",
		     "counters.dram.instances[1]", "Expected string, got integer");
	expect_wrong("\"drift\": {\"before_gbps\": \"41\"}", "drift.before_gbps",
		     "Expected real or integer, got string");
	/* Absent where the record's own structure needs it: a measured figure's mean. */
	expect_wrong("\"summary\": {\"metrics\": {\"dram_read_bytes_per_token\": {\"measured\": "
		     "true}}}", "summary.metrics.dram_read_bytes_per_token.mean",
		     "needs its mean");
}

/* The model check: what the record says of its model against the model at hand. */
static void test_model_check(void)
{
	struct eng_tensor_table *t = NULL;
	struct eng_error eerr;
	struct mw_error err;
	eng_error_clear(&eerr);
	T_EQ_INT(eng_tensors_from_shape(MODEL, &t, &eerr), 0);
	if (!t)
		return;
	char text[512];
	snprintf(text, sizeof(text), "{\"model\": {\"name\": \"m\", \"shape\": {\"dim\": %d,"
		 " \"n_layers\": %d}}}", t->info.dim, t->info.n_layers);
	json_t *doc = parse(text);
	mw_error_clear(&err);
	T_EQ_INT(mw_record_model_check(doc, "rec.json", NULL, false, t, &err), 0);
	json_decref(doc);

	snprintf(text, sizeof(text), "{\"model\": {\"name\": \"m\", \"shape\": {\"dim\": %d}}}",
		 t->info.dim + 1);
	doc = parse(text);
	T_EQ_INT(mw_record_model_check(doc, "rec.json", NULL, false, t, &err), -EINVAL);
	T_EQ_STR(err.field, "model.shape.dim");
	json_decref(doc);

	doc = parse("{\"model\": {\"name\": \"m\", \"shape\": {\"n_heads\": \"71\"}}}");
	T_EQ_INT(mw_record_model_check(doc, "rec.json", NULL, false, t, &err), -EINVAL);
	T_EQ_STR(err.field, "model.shape.n_heads");
	T_CONTAINS(err.text, "Expected integer, got string");
	json_decref(doc);

	doc = parse("{\"model\": {\"file_bytes\": 1.5}}");
	T_EQ_INT(mw_record_model_check(doc, "rec.json", NULL, false, t, &err), -EINVAL);
	T_EQ_STR(err.field, "model.file_bytes");
	json_decref(doc);
	eng_tensor_table_free(t);
}

/* The record rec refused by mw_record_attribution_read, naming field and saying says; the
 * runs it had read freed. */
static void attribution_refused(const char *rec, const char *field, const char *says)
{
	struct mw_attribution_input in;
	struct mw_error err;
	json_t *doc = parse(rec);
	T_EQ_INT(mw_record_attribution_read(doc, "rec.json", &in, &err), -EINVAL);
	T_EQ_STR(err.field, field);
	T_CONTAINS(err.text, says);
	T_ASSERT(in.runs == NULL); /* freed on failure */
	json_decref(doc);
}

static void test_attribution_read(void)
{
	/* Run 0 is a warm-up and run 2 was cut short: neither is read (their bad fields are not
	 * looked at). Run 1 has phases, with DRAM read at the markers, and two layers, the
	 * second without DRAM (null). */
	const char *rec =
		"{\"counters\": {\"dram\": {\"layer\": \"sim\", \"reason\": \"counters say\"}},"
		" \"runs\": [{\"warmup\": true, \"complete\": true,"
		"   \"tokens\": {\"engine_bytes\": [\"x\"]}},"
		"  {\"warmup\": false, \"complete\": true, \"prefill\": {\"tokens\": 3},"
		"   \"tokens\": {\"engine_bytes\": [100, 110, 120]},"
		"   \"decode\": {\"tokens\": 3, \"phases\": {"
		"     \"attention\": {\"engine_bytes\": 90, \"dram_read_bytes\": 80,"
		"       \"dram_write_bytes\": 8},"
		"     \"ffn\": {\"engine_bytes\": 200, \"dram_read_bytes\": 210,"
		"       \"dram_write_bytes\": 0},"
		"     \"classifier\": {\"engine_bytes\": 40, \"dram_read_bytes\": 41,"
		"       \"dram_write_bytes\": 1},"
		"     \"layers\": [{\"attention_dram_read_bytes\": 1,"
		"       \"attention_dram_write_bytes\": 2,"
		"       \"ffn_dram_read_bytes\": 3, \"ffn_dram_write_bytes\": 4},"
		"      {\"attention_dram_read_bytes\": null}]}}},"
		"  {\"warmup\": false, \"complete\": false, \"prefill\": {\"tokens\": \"x\"}}],"
		" \"summary\": {\"metrics\": {"
		"   \"dram_read_bytes_per_token\": {\"measured\": true, \"mean\": 500},"
		"   \"dram_write_bytes_per_token\": {\"measured\": false}}}}";
	struct mw_attribution_input in;
	struct mw_error err;
	json_t *doc = parse(rec);
	mw_error_clear(&err);
	T_EQ_INT(mw_record_attribution_read(doc, "rec.json", &in, &err), 0);
	T_EQ_INT(in.n_runs, 1);
	if (in.n_runs == 1) {
		const struct mw_attribution_run *r = &in.runs[0];
		T_EQ_INT(r->prefill_tokens, 3);
		T_EQ_INT(r->n_tokens, 3);
		T_EQ_INT(r->engine_bytes[0] + r->engine_bytes[1] + r->engine_bytes[2], 330);
		T_ASSERT(r->phases);
		T_EQ_INT(r->decode_tokens, 3);
		T_EQ_INT(r->phase[MW_PHASE_FFN].engine_bytes, 200);
		T_ASSERT(r->phase[MW_PHASE_CLASSIFIER].dram);
		T_EQ_INT(r->phase[MW_PHASE_ATTENTION].dram_write, 8);
		T_EQ_INT(r->n_layers, 2);
		T_ASSERT(r->layers[0].dram);
		T_EQ_INT(r->layers[0].bytes[MW_LAYER_FFN_WRITE], 4);
		T_ASSERT(!r->layers[1].dram);
	}
	T_ASSERT(in.dram_read);
	T_NEAR(in.dram_read_mean, 500, 0);
	T_ASSERT(!in.dram_write);
	T_ASSERT(isnan(in.dram_write_mean));
	T_ASSERT(in.simulated);
	mw_record_attribution_free(&in);
	json_decref(doc);

	/* A measured run's token of the wrong type, a phase without its engine bytes. */
	attribution_refused("{\"runs\": [{\"complete\": true,"
			    " \"tokens\": {\"engine_bytes\": [100, 110.5]}}]}",
			    "runs[0].tokens.engine_bytes[1]", "Expected integer, got real");
	attribution_refused("{\"runs\": [{\"complete\": true, \"decode\": {\"tokens\": 2, "
			    "\"phases\": { \"attention\": {\"engine_bytes\": 1}, \"ffn\": {},"
			    " \"classifier\": {}}}}]}",
			    "runs[0].decode.phases.ffn.engine_bytes", "missing");

	/* DRAM not measured: the metric's reason, else the counters'. */
	doc = parse("{\"counters\": {\"dram\": {\"reason\": \"no PMU\"}}}");
	T_EQ_INT(mw_record_attribution_read(doc, "rec.json", &in, &err), 0);
	T_ASSERT(!in.dram_read);
	T_EQ_STR(in.dram_reason, "no PMU");
	T_EQ_INT(in.n_runs, 0);
	mw_record_attribution_free(&in);
	json_decref(doc);
}

static void test_path_is_record(void)
{
	char dir[] = "/tmp/mw-record-view-XXXXXX", a[300], b[300];
	T_ASSERT(mkdtemp(dir) != NULL);
	snprintf(a, sizeof(a), "%s/record", dir);
	snprintf(b, sizeof(b), "%s/model.bin", dir);
	t_put(dir, "/record", " \n\t{\"kind\": \"run\"}");
	t_put(dir, "/model.bin", "\x01\x02not json");
	T_ASSERT(mw_path_is_record(a));
	T_ASSERT(!mw_path_is_record(b));
	T_ASSERT(mw_path_is_record("/nonexistent/x.json")); /* by its name */
	T_ASSERT(!mw_path_is_record("/nonexistent/x.bin"));
	T_EQ_INT(unlink(a), 0);
	T_EQ_INT(unlink(b), 0);
	T_EQ_INT(rmdir(dir), 0);
}

int main(void)
{
	test_view_fields();
	test_view_absent();
	test_view_wrong_types();
	test_model_check();
	test_attribution_read();
	test_path_is_record();
	return t_done();
}
