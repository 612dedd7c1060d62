/* tests/lib/ref_impl.h: what ref_model.c, ref_quant.c and ref_forward.c share (ref_forward.h is
 * the face the tests see). */
#ifndef MEMWALL_TEST_REF_IMPL_H
#define MEMWALL_TEST_REF_IMPL_H

#include <stdint.h>

#include "ref_forward.h"

/* float32's unit roundoff 2^-24 and f16's 2^-11; f16's smallest subnormal step 2^-24 (half of
 * it, 2^-25, is the most a rounding to a subnormal half can move a value). */
#define REF_U32 0x1p-24
#define REF_U16 0x1p-11
#define REF_SUB16 0x1p-25

/* ggml's GGML_TYPE_* ids (ggml.h), as GGUF files store them. */
enum {
	REF_F32 = 0, REF_F16 = 1, REF_Q4_0 = 2, REF_Q5_0 = 6, REF_Q8_0 = 8, REF_Q8_K = 15,
	REF_Q4_K = 12, REF_Q5_K = 13, REF_Q6_K = 14, REF_BF16 = 30,
};

/* One stored matrix, dequantized. mag[i] bounds the magnitude of every term the stored
 * element is made of (|w| for most types; |d sc q| + |dmin m| for a K-quant with mins, whose
 * two parts a dot product sums apart): float rounding is bounded relative to it. */
struct ref_part {
	uint32_t type;  /* ggml type id of the stored tensor */
	double *w;      /* (rows, cols) */
	float *mag;     /* (rows, cols) */
};

/* A weight matrix: one stored tensor, or a canonical and a layer's delta (W = W_c + D). */
struct ref_mat {
	int rows, cols;
	int n_parts;
	struct ref_part part[2];
};

struct ref_layer {
	double *attn_norm, *attn_norm_b; /* (dim) */
	double *ffn_norm;                /* (dim), llama */
	struct ref_mat wq, wk, wv;       /* llama: (q_dim | kv_dim, dim) */
	struct ref_mat wqkv;             /* falcon: (q_dim + 2 kv_dim, dim) */
	struct ref_mat wo;               /* (dim, q_dim) */
	struct ref_mat gate, up;         /* (hidden, dim); falcon has no gate */
	struct ref_mat down;             /* (dim, hidden) */
};

struct ref_model {
	struct ref_info info;
	struct ref_mat embd;             /* (vocab, dim) */
	struct ref_mat output;           /* (vocab, dim); a copy of embd's pointers when tied */
	double *out_norm, *out_norm_b;   /* (dim) */
	struct ref_layer *layer;         /* (layers) */
};

/* ---- ref_quant.c: the ggml block layouts ---- */

/* The layout of type t: elements per block and bytes per block; 0 for a type the reference
 * does not read. */
int ref_type_block(uint32_t t, int *elems, int *bytes);
const char *ref_type_name(uint32_t t);
/* Dequantizes n elements (a multiple of the block) of type t at src into w, and each
 * element's term magnitude (struct ref_part) into mag. */
void ref_dequant(uint32_t t, const uint8_t *src, int n, double *w, float *mag);
/* The type ggml's CPU backend quantizes a matrix's input vector to before a dot product with
 * weights of type t (its type_traits_cpu vec_dot_type): f32 for f32, f16 for f16, bf16 for
 * bf16, q8_0 for q4_0 q5_0 q8_0, q8_K for the K-quants. */
uint32_t ref_act_type(uint32_t t);
/* var[i] = the variance of the error that quantizing input x to act type t adds to element i,
 * and *block_rel_var that of the relative error each block of *block elements shares (its
 * scale's rounding) (ref_quant.c). n is a multiple of the act type's block. */
void ref_act_var(uint32_t t, const double *x, int n, double *var, double *block_rel_var,
		 int *block);
/* IEEE 754 binary16 to double. */
double ref_half(uint16_t h);

#endif
