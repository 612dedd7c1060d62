/* tests/engine/test_arch.c: engine/model/arch.c, the architecture table (model/arch.h).
 *
 * Every row is whole and its facts agree with its own tensor list (a gated FFN has ffn_gate,
 * a parallel block has no ffn_norm, a LayerNorm has a bias...), derived here from the tensor
 * names, not from the fields under test; the public face (engine.h's eng_arch_*) is read off the
 * rows; an architecture the engine does not run gets the one default (no gated FFN, no sparsity
 * map); and one tiny model per row is synthesised, loaded and run by its block
 * (runtime/arch_<name>.c): its logits are finite, the same bits at one thread and at two, and
 * its session keeps the sparsity map's counts exactly where eng_arch_sparsity_map says the map
 * applies. A new row is covered by this test without a line of it changing.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "model/arch.h"
#include "model/model.h"
#include "model/shapes.h"
#include "test.h"

#define PROMPT 9 /* above SHARED_PREP_TOKENS (runtime/internal.h): the shared preparation */
#define STEPS 3

/* Whether row ad lists a tensor named name ("blk.%d." for a layer's). */
static bool has(const struct eng_arch_desc *ad, const char *name)
{
	for (size_t i = 0; i < ad->n_tensors; i++)
		if (!strcmp(ad->tensors[i].name, name))
			return true;
	return false;
}

/* Whether word is one of the ", "-separated names of list. */
static bool listed(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ','))
			return true;
	return false;
}

/* The rows against the enum, the public face and their own tensors. */
static void test_rows(void)
{
	T_EQ_INT((int)eng_arch_count(), ENG_ARCH_COUNT);
	T_ASSERT(eng_arch_at(eng_arch_count()) == NULL);
	T_ASSERT(eng_arch_row(ENG_ARCH_COUNT) == NULL);
	int llama2c = 0;
	for (int i = 0; i < ENG_ARCH_COUNT; i++)
		llama2c += eng_arch_row((enum eng_arch)i)->info.llama2c;
	T_EQ_INT(llama2c, 1); /* a llama2.c checkpoint names no architecture: one row holds them */
	T_ASSERT(eng_arch_llama2c()->info.llama2c);
	for (int i = 0; i < ENG_ARCH_COUNT; i++) {
		const struct eng_arch_desc *ad = eng_arch_row((enum eng_arch)i);
		const struct eng_arch_info *a = eng_arch_at((size_t)i);
		T_ASSERT(ad != NULL && a == &ad->info);
		if (!ad || !a || !a->name)
			continue;
		fprintf(stderr, "row %d: %s\n", i, a->name);
		T_EQ_INT((int)ad->arch, i);
		T_ASSERT(eng_arch_lookup(a->name) == a);
		T_ASSERT(eng_arch_find(a->name, strlen(a->name)) == ad);
		T_ASSERT(listed(eng_arch_names(), a->name));
		/* The facts, against the tensors that carry them. */
		T_EQ_INT(a->gated_ffn, has(ad, "blk.%d.ffn_gate.weight"));
		T_EQ_INT(a->parallel_residual, !has(ad, "blk.%d.ffn_norm.weight"));
		T_EQ_INT(ad->norm == ENG_NORM_LAYER, has(ad, "blk.%d.attn_norm.bias"));
		T_ASSERT(has(ad, "blk.%d.attn_qkv.weight") != has(ad, "blk.%d.attn_q.weight"));
		T_ASSERT((unsigned)ad->norm < ENG_NORM_COUNT);
		T_ASSERT((unsigned)ad->rope < ENG_ROPE_COUNT);
		T_ASSERT((unsigned)a->act < ENG_ACT_COUNT && (a->acts & (1u << a->act)));
		T_ASSERT(a->acts < (1u << ENG_ACT_COUNT));
		T_EQ_INT(eng_arch_sparsity_map(a->name), a->gated_ffn);
		T_ASSERT(ad->eps_key && ad->eps_key[0] && ad->default_eps > 0.0f);
		T_ASSERT(ad->synth.vocab != ENG_VOCAB_GPT2 || ad->synth.pre);
		T_ASSERT(a->synth_quant && eng_mix_find(a->synth_quant));
		T_ASSERT(ad->n_shapes > 0);
		for (size_t k = 0; k < ad->n_shapes; k++) {
			const struct eng_shape *s = &ad->shapes[k];
			const struct eng_arch_desc *back = NULL;
			T_ASSERT(eng_shape_find(a->name, s->name, &back) == s && back == ad);
			T_ASSERT(s->dim % s->heads == 0 && s->heads % s->kv_heads == 0);
		}
	}
}

/* An architecture the engine does not run: nothing is known of it, and every question gets
 * the one answer, no. Engine vector bytes are then counted without a gated FFN's second vector
 * (x, y, y2, xb, qkv, hb: the arithmetic here). */
static void test_unknown(void)
{
	T_ASSERT(eng_arch_lookup("mamba") == NULL);
	T_ASSERT(eng_arch_lookup(NULL) == NULL);
	T_ASSERT(eng_arch_lookup("") == NULL);
	T_ASSERT(!eng_arch_sparsity_map("mamba"));
	T_ASSERT(!eng_arch_sparsity_map(NULL));
	struct eng_model_info info = { .arch = "mamba", .dim = 64, .hidden_dim = 172,
				       .n_heads = 8, .n_kv_heads = 4 };
	uint64_t plain = (3 * 64 + 8 * 8 + (8 * 8 + 2 * 4 * 8) + 172) * 4;
	T_EQ_U64(eng_session_layer_vector_bytes(&info, 8), plain);
	info.arch = NULL;
	T_EQ_U64(eng_session_layer_vector_bytes(&info, 8), plain);
	for (size_t i = 0; i < eng_arch_count(); i++) {
		info.arch = eng_arch_at(i)->name;
		T_EQ_U64(eng_session_layer_vector_bytes(&info, 8),
			 plain + (eng_arch_at(i)->gated_ffn ? 172 * 4 : 0));
	}
}

/* A session over m at `threads` threads: a PROMPT-token prefill and STEPS greedy steps, every
 * pass's logits into out ((1 + STEPS) x vocab); the steps' bytes' act_total summed. */
static int run(struct eng_model *m, int threads, float *out, uint64_t *act_total)
{
	const struct eng_model_info *in = eng_model_info(m);
	struct eng_session_options so = { .threads = threads, .pin = ENG_PIN_NONE,
					  .sparsity_map = true, .ctx_len = 64 };
	struct eng_session *s = NULL;
	struct eng_error err;
	int tokens[PROMPT], rc;
	const float *logits = NULL;
	struct eng_step_bytes b;
	eng_error_clear(&err);
	if ((rc = eng_session_new(&s, m, &so, &err))) {
		fprintf(stderr, "session: %s\n", err.text);
		return rc;
	}
	for (int i = 0; i < PROMPT; i++)
		tokens[i] = (i * 37 + 5) % in->vocab_size;
	rc = eng_session_prefill(s, tokens, PROMPT, 0, &logits, NULL);
	*act_total = 0;
	for (int k = 0; !rc && k <= STEPS; k++) {
		memcpy(out + (size_t)k * (size_t)in->vocab_size, logits,
		       (size_t)in->vocab_size * sizeof(float));
		if (k == STEPS)
			break;
		int best = 0;
		for (int v = 1; v < in->vocab_size; v++)
			best = logits[v] > logits[best] ? v : best;
		rc = eng_session_step(s, best, PROMPT + k, &logits, &b);
		*act_total += b.act_total;
	}
	eng_session_free(s);
	return rc;
}

/* The smallest of row ad's shapes: the fewest bytes under f32. */
static const struct eng_shape *smallest(const struct eng_arch_desc *ad)
{
	const struct eng_shape *best = NULL;
	uint64_t least = UINT64_MAX;
	for (size_t k = 0; k < ad->n_shapes; k++) {
		struct eng_tensor_table *t = NULL;
		struct eng_error err;
		if (eng_synth_gguf_plan(ad->info.name, ad->shapes[k].name, "f32", &t, &err))
			continue;
		if (t->info.weight_bytes < least) {
			least = t->info.weight_bytes;
			best = &ad->shapes[k];
		}
		eng_tensor_table_free(t);
	}
	return best;
}

/* One tiny model per row and quantization, synthesised, loaded and run by its block. */
static void test_run(const char *dir)
{
	static const char *const quants[] = { "f32", "q4_k_m" };
	for (int i = 0; i < ENG_ARCH_COUNT; i++) {
		const struct eng_arch_desc *ad = eng_arch_row((enum eng_arch)i);
		const struct eng_shape *shape = smallest(ad);
		T_ASSERT(shape != NULL);
		for (size_t q = 0; shape && q < sizeof(quants) / sizeof(quants[0]); q++) {
			char path[4200];
			struct eng_error err;
			struct eng_model *m = NULL;
			eng_error_clear(&err);
			snprintf(path, sizeof(path), "%s/%s-%s.gguf", dir, shape->name, quants[q]);
			fprintf(stderr, "%s %s %s\n", ad->info.name, shape->name, quants[q]);
			int rc = eng_synth_gguf(path, ad->info.name, shape->name, quants[q], 1,
						&err);
			if (!rc)
				rc = eng_model_open(&m, path, NULL, &err);
			if (rc)
				fprintf(stderr, "%s: %s\n", path, err.text);
			T_EQ_INT(rc, 0);
			if (!m) {
				unlink(path);
				continue;
			}
			const struct eng_model_info *in = eng_model_info(m);
			T_EQ_STR(in->arch, ad->info.name);
			T_ASSERT(m->arch == ad);
			T_EQ_INT((int)in->ffn_act, (int)ad->info.act);
			T_EQ_INT(in->dim, shape->dim);
			size_t n = (size_t)(1 + STEPS) * (size_t)in->vocab_size;
			float *one = calloc(n, sizeof(float)), *two = calloc(n, sizeof(float));
			uint64_t act1 = 0, act2 = 0;
			T_ASSERT(one && two);
			if (one && two) {
				T_EQ_INT(run(m, 1, one, &act1), 0);
				T_EQ_INT(run(m, 2, two, &act2), 0);
				bool finite = true;
				for (size_t k = 0; k < n; k++)
					finite &= isfinite(one[k]) != 0;
				T_ASSERT(finite);
				/* rows go whole to one thread: the same bits at any count */
				T_ASSERT(!memcmp(one, two, n * sizeof(float)));
				/* the map's counts exactly where the one rule says it applies */
				T_EQ_INT(act1 > 0, eng_arch_sparsity_map(ad->info.name));
				T_EQ_U64(act1, act2);
			}
			free(one);
			free(two);
			eng_model_close(m);
			unlink(path);
		}
	}
}

/* A llama2.c checkpoint is of the row that says llama2c. */
static void test_llama2c(const char *dir)
{
	char path[4200];
	struct eng_error err;
	struct eng_model *m = NULL;
	eng_error_clear(&err);
	snprintf(path, sizeof(path), "%s/stories260K.bin", dir);
	T_EQ_INT(eng_synth_llama2c(path, "stories260K", 1, &err), 0);
	T_EQ_INT(eng_model_open(&m, path, NULL, &err), 0);
	if (m) {
		T_ASSERT(m->arch == eng_arch_llama2c());
		T_EQ_STR(eng_model_info(m)->arch, eng_arch_llama2c()->info.name);
	}
	eng_model_close(m);
	unlink(path);
}

int main(void)
{
	char dir[] = "/tmp/mw-test-arch-XXXXXX";
	test_rows();
	test_unknown();
	t_mkdtemp(dir);
	test_run(dir);
	test_llama2c(dir);
	rmdir(dir);
	return t_done();
}
