/* engine/model/model.h: what a loaded model holds, for the forward pass. Internal to engine/.
 *
 * Two loaders fill it, called by model_open.c: model.c (llama2.c checkpoints, all float32;
 * declared here) and gguf_model.c (GGUF files of the architectures of arch.h's table, in any
 * ggml type quants.h knows; declared in gguf_model.h). Both bind the same per-layer view
 * (struct eng_layer) so that one forward pass (session.c) runs either; the llama2.c loader
 * also keeps its float pointers (struct eng_llama_weights), which the tensor table of
 * engine/model/tensors.c reads.
 */
#ifndef MEMWALL_MODEL_H
#define MEMWALL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

struct eng_gguf;
struct eng_alias;
struct eng_arch_desc;

/* Views into the model's mapping (never copies); rows are the outputs of each projection,
 * as llama2.c stores them: y = W x with W row-major (rows, cols). */
struct eng_llama_weights {
	const float *token_embedding; /* (vocab, dim) */
	const float *rms_att;         /* (layer, dim) */
	const float *wq;              /* (layer, n_heads * head_size, dim) */
	const float *wk;              /* (layer, n_kv_heads * head_size, dim) */
	const float *wv;              /* (layer, n_kv_heads * head_size, dim) */
	const float *wo;              /* (layer, dim, n_heads * head_size) */
	const float *rms_ffn;         /* (layer, dim) */
	const float *w1;              /* (layer, hidden_dim, dim) */
	const float *w2;              /* (layer, dim, hidden_dim) */
	const float *w3;              /* (layer, hidden_dim, dim) */
	const float *rms_final;       /* (dim) */
	const float *wcls;            /* (vocab, dim); aliases token_embedding when shared */
};

/* A matrix of any ggml type, a view into the mapping: `rows` rows of `cols` elements (GGUF's
 * ne[1] and ne[0]), row_bytes apart. data NULL means absent. */
struct eng_mat {
	const void *data;
	uint32_t type;    /* enum krn_type */
	int rows, cols;
	size_t row_bytes; /* of a row in the plain layout */
	bool x8;          /* rows interleaved by eight (quants.h), by ENG_LOAD_REPACK */
	/* Canonical + delta (alias.h): this is the shared canonical W_c and the layer's weight
	 * is W_c + *delta (same shape, its own type); NULL for a matrix stored whole. */
	const struct eng_mat *delta;
};

/* One block's tensors; what an architecture does not have stays NULL. */
struct eng_layer {
	const float *attn_norm;   /* (dim) RMSNorm (llama) or LayerNorm (falcon) weight */
	const float *attn_norm_b; /* (dim) LayerNorm bias; NULL for RMSNorm */
	struct eng_mat wq;        /* (n_heads * head_dim, dim)    llama */
	struct eng_mat wk;        /* (n_kv_heads * head_dim, dim) llama */
	struct eng_mat wv;        /* (n_kv_heads * head_dim, dim) llama */
	struct eng_mat wqkv;      /* (q_dim + 2 kv_dim, dim) falcon: rows Q | K | V */
	struct eng_mat wo;        /* (dim, n_heads * head_dim) */
	const float *ffn_norm;    /* (dim) llama; falcon's FFN reads attn_norm's output */
	struct eng_mat w_gate;    /* (hidden_dim, dim) llama's w1 */
	struct eng_mat w_up;      /* (hidden_dim, dim) llama's w3, falcon's up */
	struct eng_mat w_down;    /* (dim, hidden_dim) llama's w2 */
};

/* Hyper-parameters beyond eng_model_info's shape. */
struct eng_hparams {
	int head_dim;
	int n_rot;          /* RoPE dimensions per head (<= head_dim, even) */
	float rope_base;    /* theta_j = pos * rope_base^(-2j / n_rot) */
	float norm_eps;
	enum eng_kv_type default_kv; /* F16 for GGUF (llama.cpp's default), F32 for llama2.c */
};

struct eng_model {
	struct eng_model_info info;
	const struct eng_arch_desc *arch; /* its row of the architecture table (arch.h): every
					   * fact the loader, the session and its block read */
	struct eng_hparams hp;
	struct eng_llama_weights w; /* llama2.c only */
	struct eng_mat token_embd;  /* (vocab, dim); a lookup reads one row */
	const float *out_norm;      /* (dim) */
	const float *out_norm_b;    /* (dim) falcon's output LayerNorm bias, else NULL */
	struct eng_mat output;      /* (vocab, dim); the same view as token_embd when tied */
	struct eng_layer *layers;   /* (n_layers), owned */
	struct eng_alias *alias;    /* canonical + delta layers (alias.h), owned; NULL if none */
	struct eng_gguf *gguf;      /* GGUF models: owns the mapping (map stays MAP_FAILED) */
	struct eng_load_report load; /* how the loader placed the tensors */
	/* llama2.c: the whole file, PROT_READ; MAP_SHARED of the file, or with the copying load
	 * modes an anonymous copy in 2 MiB pages; MAP_FAILED when unmapped */
	void *map;
	size_t map_len;   /* the file's bytes at map */
	size_t map_bytes; /* bytes mapped at map, for munmap: map_len rounded up to the page */
	char path[];
};

/* Loads the llama2.c checkpoint open at fd (file_size bytes long) into m, which
 * model_open.c has just allocated (zeroed but for path and map): mapped or copied by
 * opt->load, every tensor checked against the file's length, then bound. m owns what this
 * puts in it, also on failure: the caller then closes m. */
int eng_llama2c_model_load(struct eng_model *m, int fd, uint64_t file_size,
			   const struct eng_model_options *opt, struct eng_error *err);

#endif
