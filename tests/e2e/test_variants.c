/* tests/e2e/test_variants.c: issue 17's harness: the protocol fields batch, speculative,
 * engine.sparsity_map and variants (src/run/protocol.c), batched and speculative decode in
 * the runner with their per-step arrays (src/run/engine_builtin.c), the record of variants
 * (src/run/pipeline.c, src/record/result.c), the batch curve of the analytic model
 * (src/analysis/analytic.c, roofline.c) and the report's claim / prediction / measurement
 * table (src/record/report_variants.c).
 *
 * Every figure is checked against arithmetic done here: engine bytes from the model's tensor
 * table (each weight once per pass, the embedding row and the KV cache per token: engine.h,
 * eng_session_step_seqs and eng_session_verify), DRAM bytes from the simulated PMU's script
 * (tests/data/sim/README.md), the roofline's formulas from their definitions. The model is
 * the synthetic stories260K (1 MB), so a run takes well under a second. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include <jansson.h>

#include "analytic.h"
#include "engine.h"
#include "protocol.h"
#include "report_variants.h"
#include "result.h"
#include "roofline.h"
#include "record.h"
#include "run.h"
#include "test.h"

#define P 3   /* prompt tokens */
#define D 6   /* decode tokens per sequence */
#define RUNS 2

static char scratch[256];

/* ---- protocol fields ------------------------------------------------------------------------ */

static const char *const head = "{\"name\": \"t\", \"decode_tokens\": 4, \"runs\": 1";
static const char *const model =
	", \"model\": {\"format\": \"llama2c\", \"synth\": {\"shape\": \"stories260K\"}}";

/* head, tail, and the stories260K model unless tail gives one. */
static int parse(const char *tail, struct mw_protocol **p, struct mw_error *err)
{
	char text[2048];
	snprintf(text, sizeof(text), "%s%s%s}", head, strstr(tail, "\"model\"") ? "" : model,
		 tail);
	mw_error_clear(err);
	return mw_protocol_parse(p, text, strlen(text), "t.json", NULL, 0, err);
}

static void bad(const char *tail, const char *field)
{
	struct mw_protocol *p = NULL;
	struct mw_error err;
	T_ASSERT(parse(tail, &p, &err) != 0);
	T_ASSERT(p == NULL);
	T_EQ_STR(err.source, "t.json");
	T_CONTAINS(err.field, field);
	T_ASSERT(strlen(err.text) > 12); /* says what is wrong, not just "bad" */
}

static void test_protocol(void)
{
	struct mw_protocol *p = NULL;
	struct mw_error err;
	T_EQ_INT(parse("", &p, &err), 0);
	T_EQ_INT(p->batch, 1);
	T_ASSERT(!p->speculative.on && !p->engine.sparsity_map && p->n_variants == 0);
	mw_protocol_free(p);

	T_EQ_INT(parse(", \"model\": {\"format\": \"llama2c\", \"synth\": {\"shape\": \"stories15M\","
		       " \"activation\": \"relu\"}}, \"batch\": 3, \"variants\": [{\"name\": \"a\"}, "
		       "{\"name\": \"b\", \"batch\": 1, \"speculative\": {\"mode\": \"lookup\", "
		       "\"draft_tokens\": 5, \"ngram\": 2}}, {\"name\": \"c\", \"engine\": "
		       "{\"sparsity_map\": true, \"load\": \"repack\", \"threads\": 1}}, "
		       "{\"name\": \"d\", \"model\": {\"synth\": {\"activation\": \"silu\"}}}]",
		       &p, &err), 0);
	if (p) {
		T_EQ_INT(p->batch, 3);
		T_EQ_INT(p->model.synth_act, ENG_ACT_RELU);
		T_EQ_INT(p->n_variants, 4);
		T_EQ_STR(p->variants[0].name, "a");
		T_EQ_INT(p->variants[0].p->batch, 3); /* the protocol's, not overridden */
		T_EQ_INT(p->variants[0].p->n_variants, 0);
		T_EQ_INT(p->variants[1].p->batch, 1);
		T_ASSERT(p->variants[1].p->speculative.on);
		T_EQ_INT(p->variants[1].p->speculative.draft_tokens, 5);
		T_EQ_INT(p->variants[1].p->speculative.ngram, 2);
		T_ASSERT(p->variants[2].p->engine.sparsity_map);
		T_EQ_INT(p->variants[2].p->engine.load, ENG_LOAD_REPACK);
		T_EQ_INT(p->variants[2].p->engine.threads, 1);
		T_ASSERT(!p->engine.sparsity_map);
		T_EQ_INT(p->variants[3].p->model.synth_act, ENG_ACT_SILU);
		T_EQ_STR(p->variants[3].p->model.synth_shape, "stories15M");
	}
	mw_protocol_free(p);

	/* Each bad field, named with the fix. */
	bad(", \"batch\": 0", "batch");
	bad(", \"batch\": 65", "batch");
	bad(", \"speculative\": {\"mode\": \"lookup\"}, \"sampling\": {\"temperature\": 0.8}",
	    "speculative");
	bad(", \"speculative\": {\"mode\": \"lookup\"}, \"batch\": 2", "speculative");
	bad(", \"speculative\": {\"mode\": \"draft\"}", "speculative.mode");
	bad(", \"speculative\": {\"mode\": \"lookup\", \"draft_tokens\": 0}",
	    "speculative.draft_tokens");
	bad(", \"engine\": {\"sparsity_map\": 1}", "engine.sparsity_map");
	bad(", \"model\": {\"format\": \"gguf\", \"synth\": {\"shape\": \"falcon-tiny\", \"arch\": "
	    "\"falcon\", \"quant\": \"q8_0\", \"activation\": \"relu\"}}", "model.synth.activation");
	bad(", \"variants\": []", "variants");
	bad(", \"variants\": [{\"batch\": 2}]", "variants[0]");
	bad(", \"variants\": [{\"name\": \"a\"}, {\"name\": \"a\", \"batch\": 2}]",
	    "variants[1].name");
	bad(", \"variants\": [{\"name\": \"../x\"}]", "variants[0].name");
	bad(", \"variants\": [{\"name\": \"a\", \"decode_tokens\": 8}]", "variants[0].decode_tokens");
	bad(", \"variants\": [{\"name\": \"a\", \"engine\": {\"kernels\": \"ref\"}}]",
	    "variants[0].engine.kernels");
	bad(", \"variants\": [{\"name\": \"a\", \"batch\": 0}]", "variants[0].batch");
	bad(", \"variants\": [{\"name\": \"a\", \"engine\": {\"load\": \"disk\"}}]",
	    "variants[0].engine.load");
	bad(", \"variants\": [{\"name\": \"a\", \"batch\": 2, \"speculative\": {\"mode\": "
	    "\"lookup\"}}]", "variants[0].speculative");
	bad(", \"engine\": {\"attention\": \"flash\"}", "engine.attention");
	bad(", \"engine\": {\"context\": 1}", "engine.context");
	bad(", \"engine\": {\"context\": 64}, \"prompt_tokens\": [1, 2]", "engine.context");
	bad(", \"model\": {\"format\": \"llama2c\", \"synth\": {\"shape\": \"stories15M\", "
	    "\"canonical_delta\": \"split\"}}", "model.synth.canonical_delta");
	bad(", \"variants\": [{\"name\": \"a\", \"baseline\": \"b\"}]", "variants[0].baseline");
	bad(", \"variants\": [{\"name\": \"a\", \"baseline\": \"a\"}]", "variants[0].baseline");
	/* The table of overrides is what the error lists. */
	const char *const *keys = mw_variant_keys();
	size_t n = 0;
	while (keys[n])
		n++;
	T_ASSERT(n >= 8);
}

/* ---- running --------------------------------------------------------------------------------- */

/* Runs `memwall run` on body; the record's path into path ("" if none). */
static struct t_output run_protocol(const char *name, const char *body, char *path, size_t n)
{
	char proto[512], dir[512];
	snprintf(proto, sizeof(proto), "%s/%s.json", scratch, name);
	snprintf(dir, sizeof(dir), "%s/out-%s", scratch, name);
	t_write_file(proto, body);
	const char *argv[] = { "memwall", "run", proto, "-o", dir, NULL };
	struct t_output o = t_run(argv);
	t_written_path(o.err, path, n);
	return o;
}

/* What the test knows of the model, from its own tensor table. */
struct model {
	uint64_t w, emb; /* every weight a pass reads; the embedding row's share */
	uint64_t kv_pos; /* K and V of one position, every layer, f32 */
};

static struct model model_of(const char *path)
{
	struct eng_tensor_table *t = NULL;
	struct eng_error e;
	struct model m = { 0 };
	eng_error_clear(&e);
	T_EQ_INT(eng_tensors_from_file(path, &t, &e), 0);
	if (!t)
		return m;
	for (size_t i = 0; i < t->n; i++) {
		m.w += t->t[i].step_bytes;
		if (t->t[i].cls == ENG_TENSOR_EMBEDDING)
			m.emb += t->t[i].step_bytes;
	}
	const struct eng_model_info *in = &t->info;
	m.kv_pos = 2u * (uint64_t)in->n_layers * (uint64_t)in->n_kv_heads *
		   (uint64_t)(in->dim / in->n_heads) * 4u;
	eng_tensor_table_free(t);
	return m;
}

/* One pass of n tokens of each of `seqs` sequences... as the engine counts it: the weights
 * once, the embedding row per token, each token's attention over its positions 0..pos and
 * its own K and V written. tokens at positions pos0 .. pos0 + n - 1 (speculation), or one
 * token at pos0 for each of seqs sequences (a batch). */
static uint64_t pass_bytes(const struct model *m, int seqs, int n, int pos0)
{
	uint64_t b = m->w - m->emb;
	for (int s = 0; s < seqs; s++)
		for (int t = 0; t < n; t++)
			b += m->emb + m->kv_pos * (uint64_t)(pos0 + t + 1) + m->kv_pos;
	return b;
}

static const json_t *at(const json_t *o, const char *a, const char *b)
{
	return json_object_get(json_object_get(o, a), b);
}

static json_int_t ival(const json_t *o, const char *a, const char *b)
{
	return json_integer_value(at(o, a, b));
}

/* A measured run's decode tok/s from its raw window (the test's own division). */
static double run_tok_s(const json_t *run)
{
	return (double)ival(run, "decode", "tokens") / ((double)ival(run, "decode", "ns") * 1e-9);
}

/* The median of the measured runs' tok/s: RUNS is 2, so their mean. */
static double tok_s_median(const json_t *rec)
{
	double sum = 0;
	int n = 0;
	size_t i;
	json_t *run;
	json_array_foreach(json_object_get(rec, "runs"), i, run) {
		if (!json_is_true(json_object_get(run, "warmup"))) {
			sum += run_tok_s(run);
			n++;
		}
	}
	T_EQ_INT(n, RUNS);
	return sum / n;
}

static void check_batch(const json_t *rec, const struct model *m, int nb, const json_t *ids1)
{
	size_t i;
	json_t *run;
	T_EQ_INT(ival(rec, "engine", "batch"), nb);
	json_array_foreach(json_object_get(rec, "runs"), i, run) {
		const json_t *st = json_object_get(run, "steps");
		const json_t *ids = at(run, "tokens", "ids");
		T_EQ_INT(ival(run, "decode", "tokens"), nb * D);
		T_EQ_INT(ival(run, "decode", "steps"), D);
		T_EQ_INT(ival(run, "prefill", "tokens"), nb * P);
		T_EQ_INT(json_array_size(ids), nb * D);
		T_ASSERT(!at(run, "tokens", "latency_ns")); /* per pass: under steps */
		static const char *const arrays[] = { "tokens", "latency_ns", "engine_bytes" };
		for (size_t k = 0; k < 3; k++)
			T_EQ_INT(json_array_size(json_object_get(st, arrays[k])), D);
		uint64_t sum = 0;
		for (int s = 0; s < D; s++) {
			uint64_t want = pass_bytes(m, nb, 1, P + s);
			T_EQ_INT(json_integer_value(json_array_get(json_object_get(st, "tokens"), s)),
				 nb);
			T_EQ_U64(json_integer_value(json_array_get(json_object_get(st, "engine_bytes"),
								   s)), want);
			sum += want;
		}
		/* per generated token across the batch */
		T_NEAR(json_number_value(at(run, "figures", "engine_bytes_per_token")),
		       (double)sum / (nb * D), 1e-6);
		/* greedy: each sequence decodes what batch 1 does */
		for (int q = 0; q < nb; q++)
			for (int s = 0; s < D; s++)
				T_EQ_INT(json_integer_value(json_array_get(ids, (size_t)(s * nb + q))),
					 json_integer_value(json_array_get(ids1, (size_t)s)));
	}
}

static void check_spec(const json_t *rec, const struct model *m, const json_t *ids1)
{
	size_t i;
	json_t *run;
	json_array_foreach(json_object_get(rec, "runs"), i, run) {
		const json_t *st = json_object_get(run, "steps");
		const json_t *tok = json_object_get(st, "tokens"), *dr = json_object_get(st, "drafted");
		const json_t *ac = json_object_get(st, "accepted");
		size_t passes = json_array_size(tok);
		T_EQ_INT(ival(run, "decode", "steps"), passes);
		T_EQ_INT(json_array_size(json_object_get(st, "engine_bytes")), passes);
		T_EQ_INT(json_array_size(dr), passes);
		int pos = P;
		double drafted = 0, accepted = 0;
		for (size_t s = 0; s < passes; s++) {
			int d = (int)json_integer_value(json_array_get(dr, s));
			int a = (int)json_integer_value(json_array_get(ac, s));
			T_EQ_INT(json_integer_value(json_array_get(tok, s)), a + 1);
			T_EQ_U64(json_integer_value(json_array_get(json_object_get(st, "engine_bytes"),
								   s)), pass_bytes(m, 1, d + 1, pos));
			pos += a + 1;
			drafted += d;
			accepted += a;
		}
		T_EQ_INT(pos, P + D);
		T_ASSERT(passes < D); /* the stories260K synthetic repeats itself: drafts land */
		T_NEAR(json_number_value(at(run, "figures", "spec_acceptance")), accepted / drafted,
		       1e-12);
		T_NEAR(json_number_value(at(run, "figures", "spec_tokens_per_pass")),
		       (double)D / (double)passes, 1e-12);
		T_ASSERT(json_equal(at(run, "tokens", "ids"), ids1)); /* greedy verification */
	}
}

/* A ReLU model with the sparsity map: what the map skipped and what the engine counted make
 * the dense pass's bytes, and the map skipped something. */
static void check_map(const json_t *rec, const struct model *m)
{
	size_t i;
	json_t *run;
	T_ASSERT(json_is_true(at(rec, "engine", "sparsity_map")));
	T_EQ_STR(json_string_value(at(json_object_get(rec, "model"), "synth", "activation")),
		 "relu");
	json_array_foreach(json_object_get(rec, "runs"), i, run) {
		const json_t *sp = at(run, "decode", "sparsity");
		uint64_t dense = 0;
		for (int s = 0; s < D; s++)
			dense += pass_bytes(m, 1, 1, P + s);
		T_ASSERT(sp != NULL);
		T_EQ_U64((uint64_t)ival(run, "decode", "engine_bytes") +
			 (uint64_t)json_integer_value(json_object_get(sp, "weights_skipped_bytes")),
			 dense);
		T_ASSERT(json_integer_value(json_object_get(sp, "weights_skipped_bytes")) > 0);
		T_ASSERT(json_integer_value(json_object_get(sp, "act_zero")) > 0);
		T_ASSERT(json_integer_value(json_object_get(sp, "act_zero")) <
			 json_integer_value(json_object_get(sp, "act_total")));
	}
}

/* A macro, so that snprintf sees a literal format at every optimization level (the tests
 * compile at -O0, where a const pointer is not folded: -Wformat-nonliteral). */
#define TINY \
	"{\"name\": \"%s\", \"model\": {\"format\": \"llama2c\", \"synth\": {\"shape\": " \
	"\"stories260K\", \"seed\": 7}}, \"tokenizer\": null, \"engine\": {\"kind\": \"builtin\", " \
	"\"threads\": 1}, \"prompt_tokens\": [1, 5, 9], \"decode_tokens\": 6, \"runs\": 2, " \
	"\"warmup_runs\": 1, \"sampling\": {\"temperature\": 0, \"seed\": 42}, \"counters\": " \
	"{\"dram\": \"%s\"%s, \"energy\": \"off\"}, \"idle_baseline_ms\": %d, \"drift\": " \
	"{\"probe_ms\": 0}%s}"

static void test_variants_run(void)
{
	char body[4096], path[1024];
	snprintf(body, sizeof(body), TINY, "tiny-variants", "off", "", 0,
		 ", \"variants\": [{\"name\": \"b1\"}, {\"name\": \"b2\", \"batch\": 2}, "
		 "{\"name\": \"b3\", \"batch\": 3}, {\"name\": \"lookup\", \"speculative\": "
		 "{\"mode\": \"lookup\", \"draft_tokens\": 3}}, {\"name\": \"relu-map\", "
		 "\"model\": {\"synth\": {\"activation\": \"relu\"}}, \"engine\": "
		 "{\"sparsity_map\": true}}]");
	struct t_output o = run_protocol("tiny-variants", body, path, sizeof(path));
	T_EQ_INT(o.status, 0);
	if (o.status || !path[0]) {
		fprintf(stderr, "%s\n", o.err);
		return;
	}
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	T_ASSERT(doc != NULL);
	const json_t *vs = json_object_get(doc, "variants");
	T_EQ_INT(json_array_size(vs), 5);
	const json_t *r1 = json_object_get(json_array_get(vs, 0), "record");
	struct model m = model_of(json_string_value(at(r1, "model", "path")));
	const json_t *ids1 = at(json_array_get(json_object_get(r1, "runs"), 1), "tokens", "ids");
	T_EQ_INT(json_array_size(ids1), D);
	/* batch 1: the plain per-token arrays, as every record before variants */
	const json_t *run1 = json_array_get(json_object_get(r1, "runs"), 1);
	T_ASSERT(!json_object_get(run1, "steps"));
	T_ASSERT(!at(run1, "decode", "steps"));
	T_ASSERT(!at(r1, "engine", "batch"));
	for (int s = 0; s < D; s++)
		T_EQ_U64(json_integer_value(json_array_get(at(run1, "tokens", "engine_bytes"), s)),
			 pass_bytes(&m, 1, 1, P + s));
	check_batch(json_object_get(json_array_get(vs, 1), "record"), &m, 2, ids1);
	check_batch(json_object_get(json_array_get(vs, 2), "record"), &m, 3, ids1);
	check_spec(json_object_get(json_array_get(vs, 3), "record"), &m, ids1);
	check_map(json_object_get(json_array_get(vs, 4), "record"), &m);
	T_ASSERT(!at(run1, "decode", "sparsity")); /* a SiLU model's record is as before */
	/* the top is the first variant; the protocol is the file with its variants */
	T_ASSERT(json_equal(json_object_get(doc, "runs"), json_object_get(r1, "runs")));
	T_EQ_INT(json_array_size(json_object_get(at(doc, "protocol", "document"), "variants")), 5);

	/* memwall validate accepts the record and refuses an edited variant */
	const char *argv[] = { "memwall", "validate", path, NULL };
	struct t_output v = t_run(argv);
	T_EQ_INT(v.status, 0);
	json_t *steps = json_object_get(json_array_get(json_object_get(json_object_get(
		json_array_get(json_object_get(doc, "variants"), 1), "record"), "runs"), 1), "steps");
	json_array_set_new(json_object_get(steps, "engine_bytes"), 0, json_integer(1));
	struct mw_error err;
	mw_error_clear(&err);
	T_ASSERT(mw_result_validate(doc, "edited", &err) != 0);
	T_CONTAINS(err.source, "variants[1] (b2)");
	T_CONTAINS(err.field, "runs[1]");
	json_decref(doc);
	doc = json_load_file(path, 0, &je);
	vs = json_object_get(doc, "variants");
	r1 = json_object_get(json_array_get(vs, 0), "record");

	/* the report: claim, prediction and measurement side by side, from the test's own
	 * arithmetic (the prediction at the decode window's middle position) */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	mw_report_variants(f, doc);
	fclose(f);
	T_CONTAINS(text, "| decode tok/s, batch 2 / batch 1 | \"near-2x decode throughput at batch "
			 "size 2\"");
	int pos = P + (D - 1) / 2;
	double b1 = (double)(m.w + m.kv_pos * (uint64_t)(pos + 2));
	double b2 = (double)(m.w - m.emb) / 2 + (double)(m.emb + m.kv_pos * (uint64_t)(pos + 2));
	double meas = tok_s_median(json_object_get(json_array_get(vs, 1), "record")) /
		      tok_s_median(r1);
	char want[160];
	snprintf(want, sizeof(want), "size 2\" (published notes on the theoretical limits of CPU "
		 "inference (quoted in memwall issue 17)) | %.2fx | %.2fx |", b1 / b2, meas);
	T_CONTAINS(text, want);
	snprintf(want, sizeof(want), "| b2 | 2 | off |");
	T_CONTAINS(text, want);
	T_CONTAINS(text, "engine-accounted (not DRAM)");
	T_CONTAINS(text, "| lookup | 3 |");
	free(text);
	json_decref(doc);
	free(o.out);
	free(o.err);
	free(v.out);
	free(v.err);
}

/* Issue 18's mechanisms as variants: engine.context and engine.attention (R2), a canonical +
 * delta model and its dense twin (R3), each measured against the baseline it names. The
 * record's decode.engine_split is checked against the tensor tables: KV read per decode token
 * at position C + s is (C + s + 1) positions' K and V, the weights once per step, and the
 * unique weights count each canonical once (its step_bytes count it once per user). */
#define CTX 40
static const char *const mech =
	"{\"name\": \"mech\", \"model\": {\"format\": \"llama2c\", \"synth\": {\"shape\": "
	"\"stories260K\", \"seed\": 7}}, \"tokenizer\": null, \"engine\": {\"kind\": \"builtin\", "
	"\"threads\": 1}, \"decode_tokens\": 6, \"runs\": 2, \"warmup_runs\": 0, \"sampling\": "
	"{\"temperature\": 0, \"seed\": 42}, \"counters\": {\"dram\": \"off\", \"energy\": "
	"\"off\"}, \"idle_baseline_ms\": 0, \"drift\": {\"probe_ms\": 0}, \"variants\": ["
	"{\"name\": \"naive\", \"engine\": {\"context\": 40, \"attention\": \"naive\"}}, "
	"{\"name\": \"blocked\", \"baseline\": \"naive\", \"engine\": {\"context\": 40, "
	"\"attention\": \"blocked\"}}, "
	"{\"name\": \"twin\", \"model\": {\"format\": \"gguf\", \"synth\": {\"shape\": "
	"\"stories15M\", \"arch\": \"llama\", \"quant\": \"q8_0\", \"canonical_delta\": "
	"\"dense\"}}}, "
	"{\"name\": \"split\", \"baseline\": \"twin\", \"model\": {\"format\": \"gguf\", "
	"\"synth\": {\"shape\": \"stories15M\", \"arch\": \"llama\", \"quant\": \"q8_0\", "
	"\"canonical_delta\": \"split\"}}}]}";

static uint64_t split_of(const json_t *run, const char *key)
{
	return (uint64_t)json_integer_value(json_object_get(at(run, "decode", "engine_split"), key));
}

/* Unique weight bytes of a step: every canonical once, whatever its users. */
static uint64_t unique_of(const char *path)
{
	struct eng_tensor_table *t = NULL;
	struct eng_error e;
	uint64_t u = 0;
	eng_error_clear(&e);
	T_EQ_INT(eng_tensors_from_file(path, &t, &e), 0);
	for (size_t i = 0; t && i < t->n; i++)
		u += t->t[i].canonical_users > 1
			? t->t[i].step_bytes / (uint64_t)t->t[i].canonical_users : t->t[i].step_bytes;
	eng_tensor_table_free(t);
	return u;
}

static void test_mechanisms_run(void)
{
	char path[1024];
	struct t_output o = run_protocol("mech", mech, path, sizeof(path));
	T_EQ_INT(o.status, 0);
	if (o.status || !path[0]) {
		fprintf(stderr, "%s\n", o.err);
		return;
	}
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	const json_t *vs = json_object_get(doc, "variants");
	T_EQ_INT(json_array_size(vs), 4);
	for (size_t k = 0; k < 4; k++) {
		const json_t *rec = json_object_get(json_array_get(vs, k), "record");
		const char *mp = json_string_value(at(rec, "model", "path"));
		struct model m = model_of(mp);
		uint64_t uniq = unique_of(mp);
		const json_t *run = json_array_get(json_object_get(rec, "runs"), 1);
		int c = k < 2 ? CTX : 1; /* the twins' prompt is the default, BOS */
		uint64_t kvp = k < 2 ? m.kv_pos : m.kv_pos / 2, kv = 0; /* GGUF: an f16 cache */
		for (int s = 0; s < D; s++)
			kv += kvp * (uint64_t)(c + s + 1);
		T_EQ_U64(split_of(run, "kv_read"), kv);
		T_EQ_U64(split_of(run, "kv_write"), kvp * D);
		T_EQ_U64(split_of(run, "weights"), m.w * D);
		T_EQ_U64(split_of(run, "weights_unique"), uniq * D);
		if (k == 3)
			T_ASSERT(uniq < m.w); /* the split form shares its canonicals */
		if (k < 2) {
			T_EQ_INT(json_integer_value(at(rec, "engine", "context")), CTX);
			T_EQ_STR(json_string_value(at(rec, "engine", "attention")),
				 k ? "blocked" : "naive");
		}
	}
	/* the two attention kernels decode the same ids */
	T_ASSERT(json_equal(at(json_array_get(json_object_get(json_object_get(json_array_get(vs, 0),
		"record"), "runs"), 1), "tokens", "ids"), at(json_array_get(json_object_get(
		json_object_get(json_array_get(vs, 1), "record"), "runs"), 1), "tokens", "ids")));
	const char *argv[] = { "memwall", "validate", path, NULL };
	struct t_output v = t_run(argv);
	T_EQ_INT(v.status, 0);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	mw_report_variants(f, doc);
	fclose(f);
	T_CONTAINS(text, "variant blocked: ");
	T_CONTAINS(text, "against naive's");
	T_CONTAINS(text, "variant split: ");
	T_CONTAINS(text, "against twin's");
	T_CONTAINS(text, "unique weight bytes");
	free(text);
	json_decref(doc);
	free(o.out);
	free(o.err);
	free(v.out);
	free(v.err);
}

/* DRAM MB/token of a batch divides by every generated token: the simulated resctrl counters
 * step by S bytes at every read, so the decode window (one read per pass, D passes) counts
 * D x S and the idle window (two reads) S; the figure is (D S - S / idle_ns x decode_ns) /
 * (N D), recomputed here from the record's raw nanoseconds. */
static void test_sim_dram(void)
{
	static const uint64_t step[2] = { 4096u * 3 + 64, 4096u * 5 };
	char root[4200], script[600], body[4096], path[1024];
	snprintf(root, sizeof(root), "%ssapphire-rapids", t_data("sysfs/"));
	snprintf(script, sizeof(script), "%s/resctrl.script", scratch);
	snprintf(body, sizeof(body), "file path=mon_L3_00/mbm_total_bytes start=1000 step=%llu\n"
		 "file path=mon_L3_01/mbm_total_bytes start=7 step=%llu\n",
		 (unsigned long long)step[0], (unsigned long long)step[1]);
	t_write_file(script, body);
	setenv("MEMWALL_COUNTERS", "sim", 1);
	setenv("MEMWALL_SYSFS_ROOT", root, 1);
	setenv("MEMWALL_SIM_SCRIPT", script, 1);
	snprintf(body, sizeof(body), TINY, "tiny-sim", "required", ", \"backend\": \"resctrl\"", 20,
		 ", \"batch\": 4");
	struct t_output o = run_protocol("tiny-sim", body, path, sizeof(path));
	unsetenv("MEMWALL_COUNTERS");
	unsetenv("MEMWALL_SYSFS_ROOT");
	unsetenv("MEMWALL_SIM_SCRIPT");
	T_EQ_INT(o.status, 0);
	if (o.status || !path[0]) {
		fprintf(stderr, "%s\n", o.err);
		return;
	}
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	double s = (double)(step[0] + step[1]);
	size_t i;
	json_t *run;
	json_array_foreach(json_object_get(doc, "runs"), i, run) {
		const json_t *st = json_object_get(run, "steps");
		T_EQ_INT(ival(run, "decode", "tokens"), 4 * D);
		T_EQ_INT(json_array_size(json_object_get(st, "dram_total_bytes")), D);
		for (int k = 0; k < D; k++)
			T_EQ_U64(json_integer_value(json_array_get(json_object_get(st,
				 "dram_total_bytes"), (size_t)k)), step[0] + step[1]);
		T_EQ_U64(ival(run, "decode", "dram_total_bytes"), D * (step[0] + step[1]));
		T_EQ_U64(ival(run, "idle", "dram_total_bytes"), step[0] + step[1]);
		double idle_rate = s / (double)ival(run, "idle", "window_ns");
		double net = (D * s - idle_rate * (double)ival(run, "decode", "ns")) / (4.0 * D);
		T_NEAR(json_number_value(at(run, "figures", "dram_total_bytes_per_token")), net,
		       1e-9 * fabs(net) + 1e-9);
		T_NEAR(json_number_value(at(run, "figures", "dram_MB_per_token")), net / 1e6,
		       1e-15 * fabs(net) + 1e-12);
	}
	const char *argv[] = { "memwall", "validate", path, NULL };
	struct t_output v = t_run(argv);
	T_EQ_INT(v.status, 0);
	json_decref(doc);
	free(o.out);
	free(o.err);
	free(v.out);
	free(v.err);
}

/* ---- the analytic batch curve ---------------------------------------------------------------- */

static void test_roofline_curve(void)
{
	struct mw_analytic a = { .weights = 1000000, .embedding_row = 4000, .kv_read = 30000,
				 .kv_write = 500, .flops = 2e6 };
	a.total = a.weights + a.kv_read + a.kv_write;
	struct mw_roofline_inputs in = { .bw_gbps = 0.05, .peak_flops = 2e9 };
	static const int ns[] = { 1, 2, 4, 8 };
	for (size_t i = 0; i < 4; i++) {
		int n = ns[i];
		struct mw_roofline_point pt;
		mw_roofline_batch(&a, &in, n, &pt);
		double wt = 996000.0 / n + 4000.0, kv = 30500.0;
		T_NEAR(pt.b.weight_bytes, wt, 1e-9);
		T_NEAR(pt.b.kv_bytes, kv, 0);
		T_NEAR(pt.b.bytes, wt + kv, 1e-9);
		T_NEAR(pt.b.step_flops, 2e6 * n, 0);
		T_NEAR(pt.tok_s_memory, 0.05e9 / (wt + kv), 1e-9);
		T_NEAR(pt.tok_s_compute, 1000.0, 1e-9); /* 2e9 / 2e6, the same for every N */
		double best = fmin(0.05e9 / (wt + kv), 1000.0);
		T_NEAR(pt.tok_s, best, 1e-9);
		T_EQ_STR(pt.bound, 0.05e9 / (wt + kv) <= 1000.0 ? "memory" : "compute");
	}
	/* 1 GB/s at N = 1: 48.6 tok/s, memory-bound; at 8: 378, still under 1000 */
	struct mw_roofline_point p8;
	mw_roofline_batch(&a, &in, 8, &p8);
	T_EQ_STR(p8.bound, "memory");
	in.bw_gbps = 0.5; /* now N = 8's memory roof (3786 tok/s) passes the compute roof */
	mw_roofline_batch(&a, &in, 8, &p8);
	T_EQ_STR(p8.bound, "compute");
	T_NEAR(p8.tok_s, 1000.0, 1e-9);

	/* speculation: K = 3 at acceptance 0.5 yields 1 + .5 + .25 + .125 tokens a pass */
	double yield;
	double b = mw_analytic_spec_bytes(&a, 3, 0.5, &yield);
	T_NEAR(yield, 1.875, 1e-12);
	T_NEAR(b, (996000.0 + 4 * (4000.0 + 30500.0)) / 1.875, 1e-6);
	b = mw_analytic_spec_bytes(&a, 4, 1.0, &yield);
	T_NEAR(yield, 5.0, 0);
	T_NEAR(b, (996000.0 + 5 * 34500.0) / 5, 1e-6);

	/* the record's roofline block per generated token: weights shared by 4 */
	struct mw_analytic c = a;
	c.floor = 800000;
	mw_analytic_per_pass(&c, 4);
	T_EQ_U64(c.weights, 996000 / 4 + 4000);
	T_EQ_U64(c.total, 996000 / 4 + 4000 + 30500);
	T_EQ_U64(c.floor, 200000);
}

int main(void)
{
	t_need_memwall();
	t_scratch(scratch, sizeof(scratch), "variants");
	t_setenv_in("MEMWALL_CACHE_DIR", scratch, "cache");

	test_protocol();
	test_roofline_curve();
	test_variants_run();
	test_mechanisms_run();
	test_sim_dram();

	return t_done_rm(scratch, 1);
}
