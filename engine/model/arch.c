/* engine/model/arch.c: the architecture table (arch.h): one row per architecture, holding
 * every fact about it, from llama.cpp's src/llama-model.cpp (LLM_ARCH_LLAMA, LLM_ARCH_FALCON),
 * its tensor names (LLM_TENSOR_NAMES), its per-architecture quantization rules
 * (src/llama-quant.cpp) and its converters' keys; and the FFN activations' names (engine.h).
 *
 * A third architecture is a row here, its block in runtime/arch_<name>.c and its name in
 * engine/meson.build's engine_archs (engine/README.md, "Adding an architecture"). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"
#include "model.h"

#define MODEL(n, f, flags, r, c, cls, fill, rule)                                               \
	{ n, offsetof(struct eng_model, f), flags, ENG_X_##r, ENG_X_##c, ENG_TENSOR_##cls,        \
	  ENG_FILL_##fill, ENG_RULE_##rule }
#define LAYER(n, f, r, c, cls, rule)                                                           \
	{ "blk.%d." n, offsetof(struct eng_layer, f), ENG_T_LAYER, ENG_X_##r, ENG_X_##c,          \
	  ENG_TENSOR_##cls, ENG_FILL_MATRIX, ENG_RULE_##rule }
#define LAYER_VEC(n, f, fill)                                                                  \
	{ "blk.%d." n, offsetof(struct eng_layer, f), ENG_T_LAYER | ENG_T_VECTOR, ENG_X_ONE,      \
	  ENG_X_DIM, ENG_TENSOR_NORM, ENG_FILL_##fill, ENG_RULE_VECTOR }

/* llama.cpp's llama layout. output.weight is optional: without it the classifier is the
 * embedding table (weight tying, as llama.cpp does). */
static const struct eng_arch_tensor llama_tensors[] = {
	MODEL("output.weight", output, ENG_T_OPTIONAL, VOCAB, DIM, CLASSIFIER, MATRIX, OUTPUT),
	MODEL("output_norm.weight", out_norm, ENG_T_VECTOR, ONE, DIM, NORM, NORM, VECTOR),
	MODEL("token_embd.weight", token_embd, 0, VOCAB, DIM, EMBEDDING, MATRIX, EMBD),
	LAYER("attn_k.weight", wk, KV, DIM, ATTENTION, DEFAULT),
	LAYER_VEC("attn_norm.weight", attn_norm, NORM),
	LAYER("attn_output.weight", wo, DIM, Q, ATTENTION, DEFAULT),
	LAYER("attn_q.weight", wq, Q, DIM, ATTENTION, DEFAULT),
	LAYER("attn_v.weight", wv, KV, DIM, ATTENTION, ATTN_V),
	LAYER("ffn_down.weight", w_down, DIM, HIDDEN, FFN, FFN_DOWN),
	LAYER("ffn_gate.weight", w_gate, HIDDEN, DIM, FFN, DEFAULT),
	LAYER_VEC("ffn_norm.weight", ffn_norm, NORM),
	LAYER("ffn_up.weight", w_up, HIDDEN, DIM, FFN, DEFAULT),
};

/* llama.cpp's falcon layout, a 7B: one norm (with bias) per block feeding attention and the
 * MLP in parallel, fused QKV. */
static const struct eng_arch_tensor falcon_tensors[] = {
	MODEL("output.weight", output, ENG_T_OPTIONAL, VOCAB, DIM, CLASSIFIER, MATRIX, OUTPUT),
	MODEL("output_norm.bias", out_norm_b, ENG_T_VECTOR, ONE, DIM, NORM, BIAS, VECTOR),
	MODEL("output_norm.weight", out_norm, ENG_T_VECTOR, ONE, DIM, NORM, NORM, VECTOR),
	MODEL("token_embd.weight", token_embd, 0, VOCAB, DIM, EMBEDDING, MATRIX, EMBD),
	LAYER_VEC("attn_norm.bias", attn_norm_b, BIAS),
	LAYER_VEC("attn_norm.weight", attn_norm, NORM),
	LAYER("attn_output.weight", wo, DIM, Q, ATTENTION, DEFAULT),
	LAYER("attn_qkv.weight", wqkv, QKV, DIM, ATTENTION, ATTN_V),
	LAYER("ffn_down.weight", w_down, DIM, HIDDEN, FFN, FFN_DOWN),
	LAYER("ffn_up.weight", w_up, HIDDEN, DIM, FFN, DEFAULT),
};

#undef MODEL
#undef LAYER
#undef LAYER_VEC

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define ACTS(a) (1u << ENG_ACT_##a)

/* karpathy/llama2.c's TinyStories models, tied as llama2.c trains them (synth.c), and the
 * shared fixtures' tiny-llama (fixtures/gguf/README.md). */
static const struct eng_shape llama_shapes[] = {
	{ "stories260K", 64, 172, 5, 8, 4, 512, 512, true, "karpathy/llama2.c README" },
	{ "stories15M", 288, 768, 6, 6, 6, 32000, 256, true, "karpathy/llama2.c README" },
	{ "stories42M", 512, 1376, 8, 8, 8, 32000, 1024, true, "karpathy/llama2.c README" },
	{ "stories110M", 768, 2048, 12, 12, 12, 32000, 1024, true, "karpathy/llama2.c README" },
	{ "llama-tiny", 256, 768, 2, 8, 4, 512, 256, false,
	  "the shape of fixtures/gguf tiny-llama" },
};

/* tiiuae/falcon-7b config.json: hidden_size 4544, n_head 71, multi_query (one KV head of 64),
 * n_layer 32, vocab_size 65024; MLP 4 x hidden; 2048 context; untied output. And the shared
 * fixtures' tiny-falcon. */
static const struct eng_shape falcon_shapes[] = {
	{ "falcon-7b", 4544, 18176, 32, 71, 1, 65024, 2048, false, "tiiuae/falcon-7b config.json" },
	{ "falcon-tiny", 256, 1024, 2, 4, 1, 512, 256, false,
	  "the shape of fixtures/gguf tiny-falcon" },
};

static const struct eng_arch_desc archs[] = {
	/* llama: RMSNorm, RoPE on adjacent pairs, grouped-query attention, a gated FFN: SwiGLU,
	 * or ReLU / ReLU^2 where the file says so (memwall's key: llama.cpp has none). Its
	 * converters write the rope keys; llama-quantize's default rules. */
	[ENG_ARCH_LLAMA] = {
		.info = { .name = "llama", .gated_ffn = true, .parallel_residual = false,
			  .act = ENG_ACT_SILU, .acts = ACTS(SILU) | ACTS(RELU) | ACTS(RELU2),
			  .llama2c = true, .synth_quant = "f32" },
		.arch = ENG_ARCH_LLAMA,
		.norm = ENG_NORM_RMS,
		.rope = ENG_ROPE_NORM,
		.eps_key = "attention.layer_norm_rms_epsilon",
		.default_eps = 1e-5f,
		.refuse = "blk.0.ffn_gate_inp.weight",
		.refuse_why = "a mixture-of-experts llama (Mixtral) is not supported",
		.tensors = llama_tensors, .n_tensors = COUNT(llama_tensors),
		.shapes = llama_shapes, .n_shapes = COUNT(llama_shapes),
		.synth = { .vocab = ENG_VOCAB_SPM, .pre = NULL, .rope_keys = true, .layout = NULL },
		.mix = { .output_q8_0 = false, .down = ENG_DOWN_MORE_BITS },
	},
	/* falcon (the 7B layout): one LayerNorm feeding attention and a GELU MLP in parallel,
	 * fused QKV, NeoX RoPE. convert_hf_to_gguf.py writes "falcon.tensor_data_layout"
	 * "jploski" and no rope keys; llama-quantize gives falcon's output Q8_0 and its ffn_down
	 * a graded rule. */
	[ENG_ARCH_FALCON] = {
		.info = { .name = "falcon", .gated_ffn = false, .parallel_residual = true,
			  .act = ENG_ACT_GELU, .acts = ACTS(GELU), .llama2c = false,
			  .synth_quant = "q4_k_m" },
		.arch = ENG_ARCH_FALCON,
		.norm = ENG_NORM_LAYER,
		.rope = ENG_ROPE_NEOX,
		.eps_key = "attention.layer_norm_epsilon",
		.default_eps = 1e-5f,
		.refuse = "blk.0.attn_norm_2.weight",
		.refuse_why = "Falcon-40B's two norms per block are not supported (only the 7B "
			      "layout)",
		.tensors = falcon_tensors, .n_tensors = COUNT(falcon_tensors),
		.shapes = falcon_shapes, .n_shapes = COUNT(falcon_shapes),
		.synth = { .vocab = ENG_VOCAB_GPT2, .pre = "falcon", .rope_keys = false,
			   .layout = "jploski" },
		.mix = { .output_q8_0 = true, .down = ENG_DOWN_GRADED },
	},
};
/* A row for every value of the enum (a new name in engine_archs needs its row here). */
_Static_assert(COUNT(archs) == ENG_ARCH_COUNT,
	       "arch.c: every architecture of engine/meson.build's engine_archs needs its row");

const struct eng_arch_desc *eng_arch_row(enum eng_arch arch)
{
	return (unsigned)arch < ENG_ARCH_COUNT ? &archs[arch] : NULL;
}

const struct eng_arch_desc *eng_arch_llama2c(void)
{
	size_t i = 0;
	while (i + 1 < COUNT(archs) && !archs[i].info.llama2c)
		i++;
	return &archs[i];
}

const struct eng_arch_desc *eng_arch_find(const char *name, size_t len)
{
	for (size_t i = 0; name && i < COUNT(archs); i++)
		if (len == strlen(archs[i].info.name) && !memcmp(name, archs[i].info.name, len))
			return &archs[i];
	return NULL;
}

/* ---- The public face (engine.h) ------------------------------------------------------------- */

size_t eng_arch_count(void)
{
	return COUNT(archs);
}

const struct eng_arch_info *eng_arch_at(size_t i)
{
	return i < COUNT(archs) ? &archs[i].info : NULL;
}

const struct eng_arch_info *eng_arch_lookup(const char *name)
{
	const struct eng_arch_desc *ad = name ? eng_arch_find(name, strlen(name)) : NULL;
	return ad ? &ad->info : NULL;
}

bool eng_arch_sparsity_map(const char *name)
{
	const struct eng_arch_info *a = eng_arch_lookup(name);
	return a && a->gated_ffn;
}

static char arch_names[256];
static pthread_once_t arch_names_once = PTHREAD_ONCE_INIT;

static void arch_names_fill(void)
{
	size_t used = 0;
	for (size_t i = 0; i < COUNT(archs); i++) {
		int k = snprintf(arch_names + used, sizeof(arch_names) - used, "%s%s",
				 i ? ", " : "", archs[i].info.name);
		if (k < 0 || (size_t)k >= sizeof(arch_names) - used)
			break;
		used += (size_t)k;
	}
}

const char *eng_arch_names(void)
{
	pthread_once(&arch_names_once, arch_names_fill);
	return arch_names;
}

/* ---- The FFN activations' names (engine.h) -------------------------------------------------- */

static const char *const act_names[ENG_ACT_COUNT] = {
	[ENG_ACT_SILU] = "silu",
	[ENG_ACT_RELU] = "relu",
	[ENG_ACT_RELU2] = "relu2",
	[ENG_ACT_GELU] = "gelu",
};

const char *eng_ffn_act_name(enum eng_ffn_act a)
{
	return (unsigned)a < ENG_ACT_COUNT ? act_names[a] : NULL;
}

int eng_ffn_act_parse(const char *name, enum eng_ffn_act *out)
{
	for (int i = 0; name && i < ENG_ACT_COUNT; i++)
		if (!strcmp(name, act_names[i])) {
			*out = (enum eng_ffn_act)i;
			return 0;
		}
	return -EINVAL;
}
