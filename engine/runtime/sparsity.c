/* engine/runtime/sparsity.c: the sparsity map (sparsity.h). The activations' names are
 * model/arch.c's. */
#include <errno.h>
#include <string.h>

#include "sparsity.h"

int eng_sparse_block_cols(const struct eng_mat *m)
{
	int bs = (int)krn_type_traits(m->type)->block_size;
	return bs > 32 ? bs : 32;
}

int eng_sparse_blocks(const struct eng_mat *m)
{
	int g = eng_sparse_block_cols(m);
	return (m->cols + g - 1) / g;
}

void eng_sparse_map(const struct eng_mat *m, const float *act, uint8_t *nz, uint64_t *zero,
		uint64_t *zero_blocks)
{
	int g = eng_sparse_block_cols(m), nb = eng_sparse_blocks(m);
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

uint64_t eng_sparse_skipped_bytes(const struct eng_mat *m, const uint8_t *nz)
{
	const struct krn_type_traits *tr = krn_type_traits(m->type);
	int g = eng_sparse_block_cols(m), nb = eng_sparse_blocks(m);
	uint64_t bytes = 0;
	for (int k = 0; k < nb; k++)
		if (!nz[k])
			bytes += col_bytes(tr, k * g, (k + 1) * g < m->cols ? (k + 1) * g : m->cols);
	return bytes * (uint64_t)m->rows;
}

/* The next run [*c0, *c1) of nonzero blocks at or after block *k; false when none is left. */
static bool next_run(const struct eng_mat *m, const uint8_t *nz, int *k, int *c0, int *c1)
{
	int g = eng_sparse_block_cols(m), nb = eng_sparse_blocks(m);
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

void eng_sparse_rows(const struct krn_ops *ops, const struct krn_quant_ops *qops, float *y,
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
