/* engine/model/arch.c: the architecture table (arch.h): one row per architecture, from
 * llama.cpp's src/llama-model.cpp (LLM_ARCH_LLAMA, LLM_ARCH_FALCON) and its tensor names
 * (LLM_TENSOR_NAMES); and the FFN activations' names (engine.h).
 *
 * A third architecture is a row here (its tensors, keys and activation), its layer function in
 * runtime/forward.c's eng_arch_ops, its enum eng_arch value, and its shapes in shapes.c. */
#include <errno.h>
#include <string.h>

#include "arch.h"

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

static const struct eng_arch_desc archs[] = {
	{ "llama", ENG_ARCH_LLAMA, "attention.layer_norm_rms_epsilon", 1e-5f, ENG_ACT_SILU,
	  "blk.0.ffn_gate_inp.weight", "a mixture-of-experts llama (Mixtral) is not supported",
	  llama_tensors, COUNT(llama_tensors) },
	{ "falcon", ENG_ARCH_FALCON, "attention.layer_norm_epsilon", 1e-5f, ENG_ACT_GELU,
	  "blk.0.attn_norm_2.weight",
	  "Falcon-40B's two norms per block are not supported (only the 7B layout)",
	  falcon_tensors, COUNT(falcon_tensors) },
};

const struct eng_arch_desc *eng_arch_find(const char *name, size_t len)
{
	for (size_t i = 0; name && i < COUNT(archs); i++)
		if (len == strlen(archs[i].name) && !memcmp(name, archs[i].name, len))
			return &archs[i];
	return NULL;
}

const char *eng_arch_names(void)
{
	return "'llama' and 'falcon'";
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
