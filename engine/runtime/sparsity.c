/* engine/runtime/sparsity.c: the sparsity map (sparsity.h). The activations' names are
 * model/arch.c's. */
#include <errno.h>
#include <string.h>

#include "sparsity.h"

int sparse_block_cols(const struct eng_mat *m)
{
	int bs = (int)krn_type_traits(m->type)->block_size;
	return bs > 32 ? bs : 32;
}

int sparse_blocks(const struct eng_mat *m)
{
	int g = sparse_block_cols(m);
	return (m->cols + g - 1) / g;
}

void sparse_map(const struct eng_mat *m, const float *act, uint8_t *nz, uint64_t *zero,
		uint64_t *zero_blocks)
{
	int g = sparse_block_cols(m), nb = sparse_blocks(m);
	for (int k = 0; k < nb; k++) {
		int c1 = (k + 1) * g < m->cols ? (k + 1) * g : m->cols, zeros = 0;
		for (int c = k * g; c < c1; c++)
			zeros += act[c] == 0.0f;
		nz[k] = zeros < c1 - k * g;
		*zero += (uint64_t)zeros;
		*zero_blocks += !nz[k];
	}
}

/* Bytes of columns [c0, c1) of one row: c0 and c1 on block boundaries (or c1 the row's end). */
static size_t col_bytes(const struct krn_type_traits *tr, int c0, int c1)
{
	return (size_t)(c1 - c0) / tr->block_size * tr->type_size;
}

uint64_t sparse_skipped_bytes(const struct eng_mat *m, const uint8_t *nz)
{
	const struct krn_type_traits *tr = krn_type_traits(m->type);
	int g = sparse_block_cols(m), nb = sparse_blocks(m);
	uint64_t bytes = 0;
	for (int k = 0; k < nb; k++)
		if (!nz[k])
			bytes += col_bytes(tr, k * g, (k + 1) * g < m->cols ? (k + 1) * g : m->cols);
	return bytes * (uint64_t)m->rows;
}

/* The next run [*c0, *c1) of nonzero blocks at or after block *k; false when none is left. */
static bool next_run(const struct eng_mat *m, const uint8_t *nz, int *k, int *c0, int *c1)
{
	int g = sparse_block_cols(m), nb = sparse_blocks(m);
	while (*k < nb && !nz[*k])
		(*k)++;
	if (*k >= nb)
		return false;
	*c0 = *k * g;
	while (*k < nb && nz[*k])
		(*k)++;
	*c1 = *k * g < m->cols ? *k * g : m->cols;
	return true;
}

/* x8 weights: each nonzero block of each group of eight rows unpacked and dotted; the tiles
 * of zero blocks are never touched. */
static void rows_x8(const struct krn_quant_ops *qops, float *y, const struct eng_mat *m,
		    const void *xq, const uint8_t *nz, int a, int b)
{
	const struct krn_type_traits *tr = krn_type_traits(m->type);
	const struct krn_type_traits *at = krn_type_traits(tr->vec_dot_type);
	const struct krn_x8_layout *lay = krn_x8_layout(m->type);
	size_t nb = (size_t)m->cols / tr->block_size, bs = tr->type_size;
	uint8_t blocks[KRN_X8][512]; /* the largest block is 292 bytes (x8.c) */
	void *dst[KRN_X8];
	for (int r = 0; r < KRN_X8; r++)
		dst[r] = blocks[r];
	for (int g = a / KRN_X8; g < b / KRN_X8; g++) {
		float sum[KRN_X8] = { 0 };
		for (size_t i = 0; i < nb; i++) {
			if (!nz[i])
				continue;
			lay->unpack(dst, (const uint8_t *)m->data +
						 krn_x8_offset((size_t)m->rows, nb, tr->block_size,
							       bs, (size_t)g, i));
			const uint8_t *xb = (const uint8_t *)xq +
					    i * tr->block_size / at->block_size * at->type_size;
			for (int r = 0; r < KRN_X8; r++) {
				float s;
				qops->vec_dot[m->type](tr->block_size, &s, blocks[r], xb);
				sum[r] += s;
			}
		}
		for (int r = 0; r < KRN_X8; r++)
			y[g * KRN_X8 + r] = sum[r];
	}
}

void sparse_rows(const struct krn_ops *ops, const struct krn_quant_ops *qops, float *y,
		 const struct eng_mat *m, const float *x, const void *xq, const uint8_t *nz, int a,
		 int b)
{
	if (m->x8) {
		rows_x8(qops, y, m, xq, nz, a, b);
		return;
	}
	const struct krn_type_traits *tr = krn_type_traits(m->type);
	const struct krn_type_traits *at = krn_type_traits(tr->vec_dot_type);
	for (int r = a; r < b; r++) {
		const uint8_t *row = (const uint8_t *)m->data + (size_t)r * m->row_bytes;
		float sum = 0.0f;
		int k = 0, c0, c1;
		while (next_run(m, nz, &k, &c0, &c1)) {
			if (m->type == KRN_TYPE_F32) {
				sum += ops->dot_f32((const float *)row + c0, x + c0, (size_t)(c1 - c0));
				continue;
			}
			float s;
			qops->vec_dot[m->type]((size_t)(c1 - c0), &s, row + col_bytes(tr, 0, c0),
					       (const uint8_t *)xq +
						       (size_t)c0 / at->block_size * at->type_size);
			sum += s;
		}
		y[r] = sum;
	}
}

/* ---- The synthetic bias channel (sparsity.h) ----------------------------------------------- */

/* Phi^-1(p) by bisection on the normal CDF 0.5 erfc(-z / sqrt 2): enough for a bias. */
static double normal_quantile(double p)
{
	double lo = -10.0, hi = 10.0;
	for (int i = 0; i < 80; i++) {
		double mid = 0.5 * (lo + hi);
		if (0.5 * erfc(-mid / sqrt(2.0)) < p)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

double synth_bias_z(const struct eng_synth_sparsity *sp)
{
	return sp && sp->relu_sparsity >= 0.0 ? normal_quantile(sp->relu_sparsity) : 0.0;
}

bool synth_dead_neuron(const struct eng_synth_sparsity *sp, uint64_t seed, int l, uint64_t r)
{
	uint64_t m = seed ^ 0xd1b54a32d192ed03ull ^ ((uint64_t)l << 40) ^ r * 0x94d049bb133111ebull;
	return sp && (double)(eng_splitmix64(&m) >> 11) * 0x1.0p-53 < sp->dead_fraction;
}

/* -z sigma R_l / SYNTH_BIAS_CHANNEL makes P(pre-activation <= 0) = P for a pre-activation
 * w . x of standard deviation sigma R_l (sigma: a gate row's per-weight std, shared and
 * per-row parts; R_l: the norm of the residual's other channels before layer l's FFN). R_l is
 * modelled, not measured: the embedding's dim (0.02)^2 plus l + 1/2 attention outputs of
 * dim (0.02^2 dim)^2 each (wo times v, each std 0.02 over dim inputs of a normed vector); on
 * seed 1 stories15M ReLU it is within 5% of the measured 1.44, 2.33, 3.03, 3.62, 4.09, 4.53
 * (layers 0-5). */
float synth_gate_bias(int dim, int l, double z)
{
	double d = dim, sigma = hypot(SPARSE_SHARED_STD, SPARSE_NOISE_STD);
	double att = 0.02 * 0.02 * d, r2 = d * 0.02 * 0.02 + ((double)l + 0.5) * d * att * att;
	return (float)(-z * sigma * sqrt(r2) / SYNTH_BIAS_CHANNEL);
}
