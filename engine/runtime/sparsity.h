/* engine/runtime/sparsity.h: ReLU-family FFN activations and the sparsity map (issue 18, AIOS's
 * Model Contract R1): skipping, in the down projection, the weight column blocks whose
 * activations are all exactly zero. Internal to engine/; session.c and the synthetic writers
 * use it.
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
#include "rng.h"

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

/* Synthetic gate rows for ReLU models: rows in clusters of SPARSE_CLUSTER share a direction
 * (uniform, std 0.02, seeded by (seed, layer, cluster)) plus a per-row part of std 0.002
 * (seeded by (seed, layer, row)). A cluster's pre-activations are then one Gaussian plus
 * small noise: all 32 are <= 0 together on ~42% of tokens (P(Z < -0.2), 0.2 being the
 * expected max of 32 noise terms against the shared part), and about half of all
 * activations are zero. Independent rows would make a 32-wide block all zero with
 * probability 2^-32: never. Co-activated neuron clusters are what trained ReLU models show
 * (Deja Vu, PowerInfer); the cluster width is the quant block's, so this is the best case for
 * block skipping at a realistic zero fraction. */
#define SPARSE_CLUSTER 32
#define SPARSE_SHARED_STD 0.02f
#define SPARSE_NOISE_STD 0.002f

static inline void synth_gate_row(float *row, size_t n, uint64_t seed, int layer, uint64_t r)
{
	struct eng_rng shared, noise;
	uint64_t ms = seed ^ 0x5851f42d4c957f2dull ^ ((uint64_t)layer << 40) ^
		      (r / SPARSE_CLUSTER) * 0x9e3779b97f4a7c15ull;
	uint64_t mn = seed ^ 0x14057b7ef767814full ^ ((uint64_t)layer << 40) ^
		      r * 0xbf58476d1ce4e5b9ull;
	eng_rng_seed(&shared, eng_splitmix64(&ms));
	eng_rng_seed(&noise, eng_splitmix64(&mn));
	/* Uniform on [-a, a] has standard deviation a / sqrt(3). */
	float as = SPARSE_SHARED_STD * sqrtf(3.0f), an = SPARSE_NOISE_STD * sqrtf(3.0f);
	for (size_t i = 0; i < n; i++)
		row[i] = as * (2.0f * eng_rng_float(&shared) - 1.0f) +
			 an * (2.0f * eng_rng_float(&noise) - 1.0f);
}

/* The synthetic bias channel (engine.h, struct eng_synth_sparsity): residual channel 0 is
 * SYNTH_BIAS_CHANNEL in every layer (embedding column 0; wo's and w2's row 0 zero), and a
 * gate row's weight on it is its bias: synth_gate_bias(dim, layer, z) for a live neuron aimed
 * at a zero fraction P (z = synth_bias_z: Phi^-1(P), 0 when unset), and z = SYNTH_DEAD_SIGMAS
 * for the dead neurons synth_dead_neuron picks (dead_fraction of them, per row from the
 * seed). Shared by the llama2.c and GGUF writers. */
#define SYNTH_BIAS_CHANNEL 1.0f
#define SYNTH_DEAD_SIGMAS 10.0
double synth_bias_z(const struct eng_synth_sparsity *sp);
bool synth_dead_neuron(const struct eng_synth_sparsity *sp, uint64_t seed, int l, uint64_t r);
float synth_gate_bias(int dim, int l, double z);

/* Columns per skippable block of matrix m. */
int sparse_block_cols(const struct eng_mat *m);
/* Blocks of m's columns: ceil(cols / sparse_block_cols). */
int sparse_blocks(const struct eng_mat *m);

/* Fills nz[k] (sparse_blocks(m) entries) with whether block k of act (m->cols values) has a
 * nonzero, and adds to *zero the exact zeros and to *zero_blocks the all-zero blocks. */
void sparse_map(const struct eng_mat *m, const float *act, uint8_t *nz, uint64_t *zero,
		uint64_t *zero_blocks);
/* Bytes of m in the blocks nz marks zero: what a sparse matvec does not read. */
uint64_t sparse_skipped_bytes(const struct eng_mat *m, const uint8_t *nz);
/* y[r] = row r of m . x for r in [a, b), reading only the blocks nz marks nonzero: x in
 * float for F32 weights, xq (x quantized to the type's vec_dot_type) for the others. For x8
 * weights a and b are multiples of 8. */
void sparse_rows(const struct krn_ops *ops, const struct krn_quant_ops *qops, float *y,
		 const struct eng_mat *m, const float *x, const void *xq, const uint8_t *nz, int a,
		 int b);

#endif
