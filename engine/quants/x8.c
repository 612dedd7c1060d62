/* engine/quants/x8.c: tensors whose rows are interleaved by eight (quants.h's x8 layout):
 * the registry of layouts, repacking, reading one row back, and the matvec dispatch with its
 * fallback for tables that have no kernel of their own for a type.
 *
 * Each layout is defined beside its kernels' format notes (x8_legacy.c, x8_kquants.c) and is
 * ISA-independent, so a repacked model runs under any table: one without an x8 kernel for a
 * type unpacks each group of eight rows and calls its own vec_dot, which gives the same bits as
 * that table on the plain rows.
 */
#include <stdio.h>
#include <stdlib.h>

#include "quants.h"
#include "internal.h"

static const struct krn_x8_layout *const layouts[KRN_TYPE_COUNT] = {
	[KRN_TYPE_F32] = NULL, /* nothing to interleave: float rows go through the f32 kernels */
	/* x8_float.c */
	[KRN_TYPE_F16] = &krn_x8_layout_f16,
	[KRN_TYPE_BF16] = &krn_x8_layout_bf16,
	/* x8_legacy.c */
	[KRN_TYPE_Q4_0] = &krn_x8_layout_q4_0,
	[KRN_TYPE_Q5_0] = &krn_x8_layout_q5_0,
	[KRN_TYPE_Q8_0] = &krn_x8_layout_q8_0,
	[KRN_TYPE_Q4_1] = &krn_x8_layout_q4_1,
	[KRN_TYPE_Q5_1] = &krn_x8_layout_q5_1,
	/* x8_kquants.c */
	[KRN_TYPE_Q2_K] = &krn_x8_layout_q2_K,
	[KRN_TYPE_Q3_K] = &krn_x8_layout_q3_K,
	[KRN_TYPE_Q4_K] = &krn_x8_layout_q4_K,
	[KRN_TYPE_Q5_K] = &krn_x8_layout_q5_K,
	[KRN_TYPE_Q6_K] = &krn_x8_layout_q6_K,
};

const struct krn_x8_layout *krn_x8_layout(uint32_t t)
{
	return t < KRN_TYPE_COUNT ? layouts[t] : NULL;
}

bool krn_quant_x8_native(const struct krn_quant_ops *ops, uint32_t t)
{
	return t < KRN_TYPE_COUNT && layouts[t] && ops->matvec_x8[t];
}

size_t krn_x8_repack_scratch(uint32_t t, size_t n, size_t rows)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	size_t tb, nb = n / tr->block_size;
	return (krn_x8_tiles(nb, tr->block_size, &tb) == 1 ? KRN_X8 : rows) * krn_row_size(t, n);
}

/* Blocks a call of a layout's pack takes: about 1 KB of output, so that the prefetch of the
 * next group's bytes (pack_group) runs ahead in small steps. */
#define PACK_RUN_BYTES 1024

/* Group g, whose eight rows start at rows8, packed where the x8 layout of the whole tensor
 * (rows rows of n elements of type t) at dst puts it, tile by tile: a tile's blocks of one
 * group are consecutive, so the offset is computed once per tile rather than with two
 * divisions per block. next: the bytes to prefetch meanwhile (as many as the group's), block
 * i's share of them being bytes [i, i + 1) * KRN_X8 * type_size. */
static void pack_group(uint32_t t, uint8_t *dst, const uint8_t *rows8, const char *next,
		       size_t n, size_t rows, size_t g)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	const struct krn_x8_layout *lay = krn_x8_layout(t);
	size_t row_bytes = krn_row_size(t, n), nb = n / tr->block_size, bs = tr->type_size, tb;
	size_t n_tiles = krn_x8_tiles(nb, tr->block_size, &tb), unit = KRN_X8 * bs;
	size_t run = PACK_RUN_BYTES / unit ? PACK_RUN_BYTES / unit : 1;
	for (size_t k = 0; k < n_tiles; k++) {
		size_t i0 = k * tb, i1 = k + 1 < n_tiles ? i0 + tb : nb;
		uint8_t *o = dst + krn_x8_offset(rows, nb, tr->block_size, bs, g, i0);
		for (size_t i = i0; i < i1; i += run) {
			size_t m = i1 - i < run ? i1 - i : run;
			for (size_t a = i * unit; next && a < (i + m) * unit; a += 64)
				__builtin_prefetch(next + a);
			lay->pack(o + (i - i0) * unit, rows8 + i * bs, row_bytes, m);
		}
	}
}

/* One tile: a group's blocks go where they were (in place, eight rows of scratch). More: the
 * tiles interleave every group, so the whole tensor is packed from a copy. */
void krn_x8_repack(uint32_t t, void *w, size_t n, size_t rows, void *tmp)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	size_t row_bytes = krn_row_size(t, n), nb = n / tr->block_size, tb;
	uint8_t *out = w;
	if (krn_x8_tiles(nb, tr->block_size, &tb) > 1) {
		memcpy(tmp, w, rows * row_bytes);
		krn_x8_pack(t, out, tmp, n, rows, 0, rows / KRN_X8);
		return;
	}
	for (size_t g = 0; g < rows / KRN_X8; g++) {
		memcpy(tmp, out + g * KRN_X8 * row_bytes, KRN_X8 * row_bytes);
		pack_group(t, out, tmp, NULL, n, rows, g);
	}
}

void krn_x8_pack(uint32_t t, void *dst, const void *src, size_t n, size_t rows, size_t g0,
		 size_t g1)
{
	size_t group = KRN_X8 * krn_row_size(t, n);
	for (size_t g = g0; g < g1; g++) {
		const uint8_t *rows8 = (const uint8_t *)src + g * group;
		/* The next group's bytes (of these, so that only groups g0 .. g1 - 1 are read),
		 * fetched while this one is packed: eight rows read side by side are eight short
		 * streams that the hardware prefetchers do not follow (without this, packing from
		 * memory ran at 0.15-0.3x of packing from L2; Zen 4 VM). */
		pack_group(t, dst, rows8, g + 1 < g1 ? (const char *)rows8 + group : NULL, n, rows,
			   g);
	}
}

void krn_x8_row(uint32_t t, const void *w, size_t rows, size_t n, size_t r, void *dst)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	const struct krn_x8_layout *lay = krn_x8_layout(t);
	size_t nb = n / tr->block_size, bs = tr->type_size;
	uint8_t scratch[KRN_X8][512]; /* a block of any type fits: the largest is 292 bytes */
	void *out[KRN_X8];
	for (int k = 0; k < KRN_X8; k++)
		out[k] = scratch[k];
	for (size_t i = 0; i < nb; i++) {
		lay->unpack(out, (const uint8_t *)w +
				 krn_x8_offset(rows, nb, tr->block_size, bs, r / KRN_X8, i));
		memcpy((uint8_t *)dst + i * bs, scratch[r % KRN_X8], bs);
	}
}

/* No x8 kernel in ops: each group unpacked into plain rows, then ops's own vec_dot. Slow (a
 * copy of every weight byte per call) but exact; a loader repacks only for tables that have
 * the kernel (krn_quant_x8_native). */
static void matvec_x8_unpacked(const struct krn_quant_ops *ops, uint32_t t, float *y,
			       const uint8_t *w, size_t n_rows, const void *xq, size_t n, size_t r0,
			       size_t r1)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	const struct krn_x8_layout *lay = krn_x8_layout(t);
	size_t row_bytes = krn_row_size(t, n), nb = n / tr->block_size, bs = tr->type_size;
	/* one buffer per thread, kept: a few hundred KB at most */
	static _Thread_local uint8_t *rows;
	static _Thread_local size_t cap;
	if (cap < KRN_X8 * row_bytes) {
		uint8_t *p = realloc(rows, KRN_X8 * row_bytes);
		if (!p) {
			fputs("memwall: out of memory unpacking interleaved rows\n", stderr);
			abort();
		}
		rows = p;
		cap = KRN_X8 * row_bytes;
	}
	for (size_t r = r0; r < r1; r += KRN_X8) {
		for (size_t i = 0; i < nb; i++) {
			void *dst[KRN_X8];
			for (int k = 0; k < KRN_X8; k++)
				dst[k] = rows + (size_t)k * row_bytes + i * bs;
			lay->unpack(dst, w + krn_x8_offset(n_rows, nb, tr->block_size, bs,
							   r / KRN_X8, i));
		}
		for (int k = 0; k < KRN_X8; k++)
			ops->vec_dot[t](n, &y[r + (size_t)k], rows + (size_t)k * row_bytes, xq);
	}
}

void krn_quant_matvec_x8(const struct krn_quant_ops *ops, uint32_t t, float *y, const void *w,
			 size_t rows, const void *xq, size_t n, size_t r0, size_t r1)
{
	if (ops->matvec_x8[t])
		ops->matvec_x8[t](y, w, rows, xq, n, r0, r1);
	else
		matvec_x8_unpacked(ops, t, y, w, rows, xq, n, r0, r1);
}

/* Rows per block of the fallback: 64 rows of stories110M's widest q8_0 matrix are 140 KB, of
 * Falcon-7B's ffn_down (18176 columns of q4_K) 650 KB, within Zen 4's 1 MB L2 either way. */
#define MATMUL_BLOCK_ROWS 64

void krn_quant_matmul(const struct krn_quant_ops *ops, uint32_t t, bool x8, float *y,
		      size_t ldy, const void *w, size_t rows, const void *xq, size_t ldx,
		      size_t n_tok, size_t n, size_t r0, size_t r1)
{
	if (x8 && ops->matmul_x8[t]) {
		ops->matmul_x8[t](y, ldy, w, rows, xq, ldx, n_tok, n, r0, r1);
		return;
	}
	for (size_t a = r0; a < r1; a += MATMUL_BLOCK_ROWS) {
		size_t b = r1 - a < MATMUL_BLOCK_ROWS ? r1 : a + MATMUL_BLOCK_ROWS;
		for (size_t k = 0; k < n_tok; k++) {
			const void *xk = (const char *)xq + k * ldx;
			if (x8)
				krn_quant_matvec_x8(ops, t, y + k * ldy, w, rows, xk, n, a, b);
			else
				krn_quant_matvec(ops, t, y + k * ldy, w, xk, n, a, b);
		}
	}
}
