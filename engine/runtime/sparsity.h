/* engine/runtime/sparsity.h: ReLU-family FFN activations and the sparsity map (issue 18, AIOS's
 * Model Contract R1): skipping, in the down projection, the weight column blocks whose
 * activations are all exactly zero. Internal to engine/runtime/ (arch_llama.c, pass_bytes.c);
 * the synthetic weights that give such zeros are synth/synth_sparsity.h's.
 *
 * Granularity: a block is max(32, the weight type's block size) columns across all rows of
 * the down projection (a quant block: 32 columns for q4_0/q8_0, 256 for k-quants; F32 and
 * F16 could skip any column range, 32 keeps the map the same for every type). In the x8
 * layout (quants.h) a block is the same columns of each group of eight rows, interleaved.
 * A block is skipped only when all its activations are zero, so the bytes a map saves are
 * below the zero fraction's share unless the zeros come in whole blocks.
 */
#ifndef MEMWALL_SPARSITY_H
#define MEMWALL_SPARSITY_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "kernels.h"
#include "model/model.h"
#include "quants.h"

/* Activations that feed the down projection, gated: act(gate) * up. ReLU(0) is +0, and
 * 0 * up is an exact zero (for finite up). SwiGLU goes through the kernel table's silu_glu
 * (ops.h), so one element here has the bits a row range gets from krn_silu_glu. */
static inline float sparse_glu(const struct krn_ops *ops, enum eng_ffn_act a, float gate,
			       float up)
{
	switch (a) {
	case ENG_ACT_RELU:
		return gate > 0.0f ? gate * up : 0.0f;
	case ENG_ACT_RELU2:
		return gate > 0.0f ? gate * gate * up : 0.0f;
	default: /* SwiGLU (Shazeer 2020) */
		krn_silu_glu(ops, &gate, &up, 1);
		return gate;
	}
}

/* Columns per skippable block of matrix m. */
int eng_sparse_block_cols(const struct eng_mat *m);
/* Blocks of m's columns: ceil(cols / eng_sparse_block_cols). */
int eng_sparse_blocks(const struct eng_mat *m);

/* Fills nz[k] (eng_sparse_blocks(m) entries) with whether block k of act (m->cols values) has a
 * nonzero, and adds to *zero the exact zeros and to *zero_blocks the all-zero blocks. */
void eng_sparse_map(const struct eng_mat *m, const float *act, uint8_t *nz, uint64_t *zero,
		uint64_t *zero_blocks);
/* Bytes of m in the blocks nz marks zero: what a sparse matvec does not read. */
uint64_t eng_sparse_skipped_bytes(const struct eng_mat *m, const uint8_t *nz);
/* y[r] = row r of m . x for r in [a, b), reading only the blocks nz marks nonzero: x in
 * float for F32 weights, xq (x quantized to the type's vec_dot_type) for the others. For x8
 * weights a and b are multiples of 8. */
void eng_sparse_rows(const struct krn_ops *ops, const struct krn_quant_ops *qops, float *y,
		 const struct eng_mat *m, const float *x, const void *xq, const uint8_t *nz, int a,
		 int b);

#endif
