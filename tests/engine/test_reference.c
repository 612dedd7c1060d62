/* tests/engine/test_reference.c: the engine's logits against an independent reference forward
 * pass (tests/lib/ref_forward.h: double precision, written from the models' definitions and
 * the ggml block layouts, no engine code), on synthetic models of every architecture and
 * weight type the synthetic writer makes, with no file from ../shared.
 *
 * The identity tests compare two paths of the engine, which agree with each other however
 * wrong the math they share is (the attention scale, the KV head of a query head, RoPE's
 * position); this test compares the engine with a reimplementation. Each model runs 8
 * tokens, the reference's own greedy continuation from token 1: the first 5 as one pass with
 * every position's logits (eng_session_verify: the multi-token kernels, causal attention
 * within the pass), then 3 one-token steps (eng_session_step: RoPE and the cache on decode).
 * Every logit of every position must lie within REF_SIGMAS standard deviations of the
 * reference's, the deviation the reference derives for that logit (ref_forward.c: the
 * activations' rounding to each weight type's vec_dot_type, the f16 cache, float arithmetic,
 * propagated through every layer). A tolerance that could not fail is a check that could not
 * either, so each model's largest must also stay below half its logits' standard deviation.
 *
 * Shown to catch, each a temporary edit of the engine shared by every path (issue 44's note
 * has the failing checks): the 1/sqrt(head_dim) scale removed (f32 and f16 models, falcon's
 * quantized ones, the random-weight ones), query heads reading KV head h / kv_mul + 1 (every
 * grouped-query model at every position), RoPE one position late on one-token passes (the
 * decode steps of most models).
 *
 * Models: falcon-tiny and llama-tiny in f32, f16, q8_0, q4_0, q5_0 and q4_k_m (q4_K, q5_K,
 * q6_K and q8_0 inside), the varied construction; llama-tiny with ReLU and ReLU^2 FFNs;
 * random weights (the legacy construction) in q4_k_m; a canonical + delta llama-tiny;
 * stories260K as GGUF (a tied classifier, heads of 8) and as a llama2.c checkpoint. The f32
 * models also run with an F32 cache, where the tolerance is float rounding's alone.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine.h"
#include "test.h"
#include "ref_check.h"

#define PROMPT 5
#define STEPS 3
#define POSITIONS (PROMPT + STEPS)

static char dir[] = "/tmp/mw-test-reference-XXXXXX";

/* What one model showed, over its positions. */
struct seen {
	double worst_diff, worst_ratio, worst_tol, spread;
};

/* Position pos: the engine's logits within the reference's tolerance (ref_check.h), and
 * what seen keeps of them. */
static void compare(const char *label, int pos, const float *eng, const struct ref_run *r,
		    struct seen *s)
{
	const double *ref = r->logits + (size_t)pos * (size_t)r->vocab;
	const double *sigma = r->sigma + (size_t)pos * (size_t)r->vocab;
	double sum = 0, sum2 = 0;
	ref_check_row(label, pos, eng, r, &s->worst_ratio);
	for (int i = 0; i < r->vocab; i++) {
		s->worst_diff = fmax(s->worst_diff, fabs((double)eng[i] - ref[i]));
		s->worst_tol = fmax(s->worst_tol, ref_tolerance(sigma[i]));
		sum += ref[i];
		sum2 += ref[i] * ref[i];
	}
	double sd = sqrt(fmax(0, sum2 / r->vocab - (sum / r->vocab) * (sum / r->vocab)));
	s->spread = pos ? fmin(s->spread, sd) : sd;
}

static int argmax(const double *v, int n)
{
	int best = 0;
	for (int i = 1; i < n; i++)
		best = v[i] > v[best] ? i : best;
	return best;
}

/* The model at path through the reference, greedily from token 1 (the varied construction's
 * own language, where its attention heads point firmly at one position each; an arbitrary
 * token may leave a pointer head split between two positions, where a rounding moves the
 * split and the logits' spread grows tenfold), then the same tokens through the engine
 * (cache kv): the first PROMPT as one verification pass, the rest one step each. */
static void check_model(const char *path, const char *label, enum eng_kv_type kv)
{
	struct eng_model *m = NULL;
	struct eng_session *s = NULL;
	struct ref_model *rm = NULL;
	struct ref_state *rs = NULL;
	struct eng_error err;
	char rerr[512];
	struct ref_run r = { 0 };
	struct seen seen = { 0 };
	int tokens[POSITIONS + 1] = { 1 };
	eng_error_clear(&err);
	if (ref_model_open(&rm, path, rerr, sizeof(rerr))) {
		T_FAIL_AT(__FILE__, __LINE__, "%s: reference: %s", label, rerr);
		goto out;
	}
	const struct ref_info *ri = ref_model_info(rm);
	struct eng_session_options o = { .threads = 1, .kv_type = kv, .ctx_len = 64,
					 .verify_tokens = PROMPT };
	if (eng_model_open(&m, path, NULL, &err) || eng_session_new(&s, m, &o, &err)) {
		T_FAIL_AT(__FILE__, __LINE__, "%s: engine: %s", label, err.text);
		goto out;
	}
	const struct eng_model_info *ei = eng_model_info(m);
	T_EQ_INT(ei->vocab_size, ri->vocab);
	T_EQ_INT(ei->dim, ri->dim);
	T_EQ_INT(ei->n_kv_heads, ri->kv_heads);
	/* The engine's defaults: F16 for GGUF, F32 for llama2.c (engine.h, enum eng_kv_type). */
	struct ref_numerics num = { .kv_f16 = kv == ENG_KV_F16 ||
					     (kv == ENG_KV_AUTO && ei->format == ENG_FORMAT_GGUF) };
	int vocab = r.vocab = ri->vocab;
	size_t all = (size_t)POSITIONS * (size_t)vocab;
	rs = ref_state_new(rm, 64, &num);
	r.n = POSITIONS;
	r.logits = malloc(all * sizeof(double));
	r.sigma = malloc(all * sizeof(double));
	if (!rs || !r.logits || !r.sigma || ei->vocab_size != vocab) {
		T_ASSERT(0);
		goto out;
	}
	for (int t = 0; t < POSITIONS; t++) {
		double *row = r.logits + (size_t)t * (size_t)vocab;
		T_EQ_INT(ref_step(rs, tokens[t], t, row, r.sigma + (size_t)t * (size_t)vocab), 0);
		tokens[t + 1] = argmax(row, vocab);
	}
	const float *lg = NULL;
	T_EQ_INT(eng_session_verify(s, tokens, PROMPT, 0, &lg, NULL), 0);
	for (int t = 0; lg && t < POSITIONS; t++) {
		if (t >= PROMPT)
			T_EQ_INT(eng_session_step(s, tokens[t], t, &lg, NULL), 0);
		compare(label, t, t < PROMPT ? lg + (size_t)t * (size_t)vocab : lg, &r, &seen);
	}
	/* A tolerance as wide as the logits' own spread would let anything through: each break
	 * this test was shown to catch moved some model's logits by more than that spread. */
	T_ASSERT(seen.worst_tol < 0.5 * seen.spread);
	printf("%-32s %-19s kv %s %s: max |d| %.3g = %.3g sigma, tolerance <= %.3g, logits' "
	       "sd %.3g\n", label, ri->types, num.kv_f16 ? "f16" : "f32", eng_session_kernels(s),
	       seen.worst_diff, seen.worst_ratio, seen.worst_tol, seen.spread);
out:
	ref_run_free(&r);
	ref_state_free(rs);
	ref_model_close(rm);
	eng_session_free(s);
	eng_model_close(m);
}

/* A synthetic GGUF model: arch, shape, quantization, activation, construction, and a
 * canonical + delta split (cd, or NULL). */
struct gcase {
	const char *arch, *shape, *quant;
	enum eng_ffn_act act;
	enum eng_synth_construction construction;
	const struct eng_canonical_delta *cd;
};

static void gguf_case(const struct gcase *c)
{
	char path[256], label[96];
	struct eng_error err;
	struct eng_synth_opts so = { .construction = c->construction, .act = c->act, .cd = c->cd };
	snprintf(path, sizeof(path), "%s/m.gguf", dir);
	snprintf(label, sizeof(label), "%s %s%s%s%s%s", c->shape, c->quant,
		 c->act != ENG_ACT_SILU ? " " : "",
		 c->act != ENG_ACT_SILU ? eng_ffn_act_name(c->act) : "",
		 c->cd ? " canonical+delta" : "",
		 c->construction == ENG_SYNTH_LEGACY ? " legacy" : "");
	eng_error_clear(&err);
	if (eng_synth_gguf_opts(path, c->arch, c->shape, c->quant, 3, &so, &err)) {
		T_FAIL_AT(__FILE__, __LINE__, "%s: synth: %s", label, err.text);
		return;
	}
	check_model(path, label, ENG_KV_AUTO);
	if (!strcmp(c->quant, "f32")) {
		char l32[128];
		snprintf(l32, sizeof(l32), "%s (f32 cache)", label);
		check_model(path, l32, ENG_KV_F32);
	}
	unlink(path);
}

int main(void)
{
	static const char *const quants[] = { "f32", "f16", "q8_0", "q4_0", "q5_0", "q4_k_m" };
	static const char *const archs[][2] = { { "falcon", "falcon-tiny" },
						{ "llama", "llama-tiny" } };
	const enum eng_synth_construction V = ENG_SYNTH_VARIED, L = ENG_SYNTH_LEGACY;
	const struct eng_canonical_delta cd = { .rel_std = 0.05, .delta_type = "q4_0",
						.first = 0, .last = 1 };
	/* Besides every architecture x quantization in the varied construction: the other FFN
	 * activations; random weights throughout (the legacy construction: no pointer heads,
	 * so every head's attention depends on the scale and the positions); a canonical +
	 * delta split (legacy too: the varied construction leaves such a model's logits all
	 * zero); a tied classifier with heads of 8 (stories260K). */
	const struct gcase more[] = {
		{ "llama", "llama-tiny", "q8_0", ENG_ACT_RELU, V, NULL },
		{ "llama", "llama-tiny", "q4_0", ENG_ACT_RELU2, V, NULL },
		{ "falcon", "falcon-tiny", "q4_k_m", ENG_ACT_SILU, L, NULL },
		{ "llama", "llama-tiny", "q4_k_m", ENG_ACT_SILU, L, NULL },
		{ "llama", "llama-tiny", "q8_0", ENG_ACT_SILU, L, &cd },
		{ "llama", "stories260K", "f16", ENG_ACT_SILU, V, NULL },
	};
	t_mkdtemp(dir);
	for (size_t a = 0; a < 2; a++)
		for (size_t q = 0; q < sizeof(quants) / sizeof(quants[0]); q++)
			gguf_case(&(struct gcase){ archs[a][0], archs[a][1], quants[q], ENG_ACT_SILU,
						   V, NULL });
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		gguf_case(&more[i]);

	/* A llama2.c checkpoint ("ak42" version 1), the engine's F32 cache. */
	char path[256];
	struct eng_error err;
	struct eng_synth_opts so = { .construction = V };
	snprintf(path, sizeof(path), "%s/m.bin", dir);
	eng_error_clear(&err);
	if (eng_synth_llama2c_opts(path, "stories260K", 3, &so, &err))
		T_FAIL_AT(__FILE__, __LINE__, "stories260K llama2.c: synth: %s", err.text);
	else
		check_model(path, "stories260K llama2.c", ENG_KV_AUTO);
	unlink(path);
	if (rmdir(dir))
		T_FAIL_AT(__FILE__, __LINE__, "%s is left behind: %s", dir, strerror(errno));
	return t_done();
}
