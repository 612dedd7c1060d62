/* engine/model/arch.h: one description of each architecture the engine runs (arch.c, one row
 * each: llama, falcon): its tensors (llama.cpp's names, the extents of each from the
 * hyper-parameters, where the loader binds it, its class in the tensor table, how a synthetic
 * file fills it and which of llama-quantize's type rules it follows), its hyper-parameter keys
 * and default activation. The GGUF loader (gguf_model.c) and the built-in shapes' plans
 * (shapes.c, which the synthetic writers and the tensor table of a named shape use) read it;
 * the forward pass picks each architecture's layer function by the same enum eng_arch
 * (runtime/forward.c, eng_arch_ops). */
#ifndef MEMWALL_ENGINE_ARCH_H
#define MEMWALL_ENGINE_ARCH_H

#include <stddef.h>

#include "engine.h"
#include "model.h"

/* A tensor's extents, from the hyper-parameters (q: heads x head_dim; kv: kv_heads x
 * head_dim; qkv: q + 2 kv). */
enum eng_extent { ENG_X_ONE, ENG_X_DIM, ENG_X_Q, ENG_X_KV, ENG_X_QKV, ENG_X_HIDDEN, ENG_X_VOCAB,
		  ENG_X_COUNT };

/* Which of llama-quantize's llama_tensor_get_type rules a tensor follows (shapes.c). */
enum eng_quant_rule { ENG_RULE_VECTOR, ENG_RULE_DEFAULT, ENG_RULE_EMBD, ENG_RULE_OUTPUT,
		      ENG_RULE_ATTN_V, ENG_RULE_FFN_DOWN };

/* How a synthetic file fills a tensor (shapes.h's plans). */
enum eng_plan_fill { ENG_FILL_MATRIX, ENG_FILL_NORM, ENG_FILL_BIAS };

enum eng_arch_tensor_flags {
	ENG_T_LAYER = 1,    /* "blk.%d." per layer; the field is in struct eng_layer */
	ENG_T_VECTOR = 2,   /* a float32 vector (norms): the field is a const float * */
	ENG_T_OPTIONAL = 4, /* absent is fine for the loader (the field stays NULL) */
};

struct eng_arch_tensor {
	const char *name; /* llama.cpp's name; "%d" takes the layer */
	size_t field;     /* offsetof in struct eng_layer (ENG_T_LAYER) or struct eng_model */
	unsigned flags;
	enum eng_extent rows, cols; /* cols: the row length (GGUF's ne[0]) */
	enum eng_tensor_class cls;
	enum eng_plan_fill fill;
	enum eng_quant_rule rule;
};

struct eng_arch_desc {
	const char *name; /* general.architecture, and the prefix of its "<arch>.*" keys */
	enum eng_arch arch;
	const char *eps_key; /* "<arch>." + this: the norm's epsilon */
	float default_eps;
	enum eng_ffn_act act; /* the FFN activation when the file names none */
	const char *refuse;   /* a tensor whose presence means a variant we do not run */
	const char *refuse_why;
	const struct eng_arch_tensor *tensors; /* llama-quantize's order: by name, the model's
						* tensors, then a layer's */
	size_t n_tensors;
};

/* The row of the architecture named name[0..len) (general.architecture), or NULL. Static. */
const struct eng_arch_desc *eng_arch_find(const char *name, size_t len);
/* Every architecture's names, space-separated, quoted ("'llama' and 'falcon'"), for errors. */
const char *eng_arch_names(void);

#endif
