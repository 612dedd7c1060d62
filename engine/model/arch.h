/* engine/model/arch.h: every fact about each architecture the engine runs, one row each
 * (arch.c): its public facts (engine.h's struct eng_arch_info: gated FFN, parallel residual,
 * activations), the norm and RoPE its block uses, its tensors (llama.cpp's names, the extents
 * of each from the hyper-parameters, where the loader binds it, its class in the tensor table,
 * how a synthetic file fills it and which of llama-quantize's type rules it follows), its
 * hyper-parameter keys, its built-in shapes, what a synthetic file of it carries (keys,
 * tokenizer) and its Q4_K_M mix rules. Every reader reads these fields, never a name: the
 * GGUF loader (gguf_model.c), the shapes' plans (shapes.c), the synthetic writers (synth/),
 * the session (runtime/session.c picks the block, runtime/arch_<name>.c, by enum eng_arch).
 *
 * The list of architectures is engine/meson.build's engine_archs: it compiles each one's
 * block and makes engine_archs.h's ENG_ARCHS(X), X(NAME, name) per architecture, from which
 * enum eng_arch and the runtime's table of blocks are made. engine/README.md says how to add
 * one. */
#ifndef MEMWALL_ENGINE_ARCH_H
#define MEMWALL_ENGINE_ARCH_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h"
#include "engine_archs.h"

/* The architectures, in engine/meson.build's order: ENG_ARCH_LLAMA, ENG_ARCH_FALCON. */
enum eng_arch {
#define ENG_ARCH_ENUM(NAME, name) ENG_ARCH_##NAME,
	ENG_ARCHS(ENG_ARCH_ENUM)
#undef ENG_ARCH_ENUM
	ENG_ARCH_COUNT,
};

/* The norm before attention and the FFN (runtime/forward.c has one of each). */
enum eng_norm_kind {
	ENG_NORM_RMS,   /* RMSNorm (Zhang and Sennrich 2019): a weight, no bias */
	ENG_NORM_LAYER, /* LayerNorm (Ba et al. 2016): a weight and a bias */
	ENG_NORM_COUNT,
};

/* Which pairs of a head RoPE rotates (runtime/forward.c has one of each). */
enum eng_rope_kind {
	ENG_ROPE_NORM, /* (2j, 2j + 1): ggml's mode 0, llama2.c's run.c */
	ENG_ROPE_NEOX, /* (j, j + n_rot / 2): ggml's GGML_ROPE_TYPE_NEOX; a QKV chunk must then
			* hold whole heads */
	ENG_ROPE_COUNT,
};

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
	size_t field;     /* offsetof in struct eng_layer (ENG_T_LAYER) or struct eng_model
			   * (model.h) */
	unsigned flags;
	enum eng_extent rows, cols; /* cols: the row length (GGUF's ne[0]) */
	enum eng_tensor_class cls;
	enum eng_plan_fill fill;
	enum eng_quant_rule rule;
};

/* A built-in shape: a real model's hyper-parameters, for a file that is not at hand (the
 * tensor table of a named shape) or one to write (the synthetic writers). */
struct eng_shape {
	const char *name; /* "falcon-7b" */
	int dim, hidden, layers, heads, kv_heads, vocab, ctx;
	bool tied;        /* no output.weight: the classifier is the embedding */
	const char *cite;
};

/* The tokenizer a synthetic GGUF file carries (synth_gguf.c builds both, of the real
 * vocabulary size). */
enum eng_synth_vocab {
	ENG_VOCAB_SPM,  /* SentencePiece laid out as llama's: <unk>, <s>, </s>, the 256 bytes */
	ENG_VOCAB_GPT2, /* GPT-2 BPE with merges laid out as falcon's: its 12 specials first,
			 * <|endoftext|> (11) as BOS and EOS */
};

/* llama-quantize's rule for ffn_down under Q4_K_M (llama_tensor_get_type, llama.cpp's
 * src/llama-quant.cpp). */
enum eng_down_rule {
	ENG_DOWN_MORE_BITS, /* Q6_K in the use_more_bits layers, else the mix's Q4_K */
	ENG_DOWN_GRADED,    /* Q6_K in the first 1/16 of the layers, Q5_K in the use_more_bits
			     * ones, else Q4_K (the rule llama.cpp gives LLM_ARCH_FALCON) */
};

struct eng_arch_desc {
	struct eng_arch_info info; /* the public facts (engine.h); info.name is
				    * general.architecture and the prefix of its "<arch>.*" keys */
	enum eng_arch arch;
	enum eng_norm_kind norm;
	enum eng_rope_kind rope;
	const char *eps_key; /* "<arch>." + this: the norm's epsilon */
	float default_eps;
	const char *refuse;  /* a tensor whose presence means a variant we do not run */
	const char *refuse_why;
	const struct eng_arch_tensor *tensors; /* llama-quantize's order: by name, the model's
						* tensors, then a layer's */
	size_t n_tensors;
	const struct eng_shape *shapes; /* its built-in shapes, the smallest first (the one
					 * tests/engine/test_arch.c runs) */
	size_t n_shapes;
	/* What a synthetic GGUF file of it carries beyond the shape's keys (synth_gguf.c). */
	struct {
		enum eng_synth_vocab vocab;
		const char *pre;      /* tokenizer.ggml.pre (a GPT-2 vocabulary's), or NULL */
		bool rope_keys;       /* "<arch>.rope.dimension_count" and ".rope.freq_base" */
		const char *layout;   /* "<arch>.tensor_data_layout", or NULL */
	} synth;
	/* llama-quantize's per-architecture type rules (shapes.c's mix_type). */
	struct {
		bool output_q8_0;          /* output.weight (a tied embedding too) is Q8_0 */
		enum eng_down_rule down;   /* ffn_down under Q4_K_M */
	} mix;
};

/* Row arch of the table (0 <= arch < ENG_ARCH_COUNT). Static storage. */
const struct eng_arch_desc *eng_arch_row(enum eng_arch arch);
/* The row of the architecture llama2.c checkpoints hold (the one whose info.llama2c is set:
 * llama). Static storage. */
const struct eng_arch_desc *eng_arch_llama2c(void);
/* The row of the architecture named name[0..len) (general.architecture), or NULL. Static. */
const struct eng_arch_desc *eng_arch_find(const char *name, size_t len);

#endif
