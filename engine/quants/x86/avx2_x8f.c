/* engine/quants/x86/avx2_x8f.c: AVX2 + F16C kernels for f16 and bf16 in the x8 layout (layouts:
 * x8_float.c; the driver and its order of sums: x8_float.h).
 *
 * f16 widens with vcvtph2ps (F16C), bf16 by a zero extension and a 16-bit shift: both exact,
 * so the products and sums are the same floats whichever way the halves were widened.
 * AVX512-BF16's vdpbf16ps is not used: it sums pairs of products inside the instruction,
 * which changes the bits (and ggml's x86 BF16 dot rounds the same way only on that ISA).
 */
#include "internal.h"
#include "x8_kernels.h"

/* 16 ymm registers: two tokens' eight chains, four weight vectors and a broadcast */
#define XF_TOK 2
#include "x8_float.h"

void krn_avx2_matvec_x8_f16(float *y, const void *w, size_t rows, const void *xq, size_t n,
			      size_t r0, size_t r1)
{
	xf_matmul(y, 0, w, rows, xq, 0, 1, n, r0, r1, load_f16x8, act_f16);
}

void krn_avx2_matvec_x8_bf16(float *y, const void *w, size_t rows, const void *xq, size_t n,
			       size_t r0, size_t r1)
{
	xf_matmul(y, 0, w, rows, xq, 0, 1, n, r0, r1, load_bf16x8, act_bf16);
}

void krn_avx2_matmul_x8_f16(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			      size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	xf_matmul(y, ldy, w, rows, xq, ldx, n_tok, n, r0, r1, load_f16x8, act_f16);
}

void krn_avx2_matmul_x8_bf16(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1)
{
	xf_matmul(y, ldy, w, rows, xq, ldx, n_tok, n, r0, r1, load_bf16x8, act_bf16);
}
