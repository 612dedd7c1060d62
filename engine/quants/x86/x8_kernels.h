/* engine/quants/x86/x8_kernels.h: the x86 kernels for weights in the x8 layout (types.h),
 * for the tables of avx512.c (avx512_x8l.c: the legacy formats, avx512_x8k.c: the K-quants,
 * avx512_x8f.c: f16 and bf16) and avx2.c (avx2_x8l.c, avx2_x8k.c, avx2_x8f.c; AVX2 CPUs
 * without AVX-512). Each has krn_matvec_fn's
 * signature and contract. Internal to engine/quants/x86/. */
#ifndef MEMWALL_X8_KERNELS_H
#define MEMWALL_X8_KERNELS_H

#include <stddef.h>

void krn_avx512_matvec_x8_q8_0(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1);
void krn_avx512_matvec_x8_q5_0(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1);
void krn_avx512_matvec_x8_q4_0(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1);
void krn_avx512_matvec_x8_q4_1(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1);
void krn_avx512_matvec_x8_q5_1(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1);
void krn_avx512_matvec_x8_q4_K(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1);
void krn_avx512_matvec_x8_q5_K(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1);
void krn_avx512_matvec_x8_q6_K(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1);

/* krn_matmul_x8_fn's (types.h): several tokens at once, the matvec's bits token by token */
void krn_avx512_matmul_x8_q8_0(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1);
void krn_avx512_matmul_x8_q5_0(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1);
void krn_avx512_matmul_x8_q4_0(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1);
void krn_avx512_matmul_x8_q4_1(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1);
void krn_avx512_matmul_x8_q5_1(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1);
void krn_avx512_matmul_x8_q4_K(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1);
void krn_avx512_matmul_x8_q5_K(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1);
void krn_avx512_matmul_x8_q6_K(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1);

void krn_avx2_matvec_x8_q8_0(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1);
void krn_avx2_matvec_x8_q5_0(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1);
void krn_avx2_matvec_x8_q4_0(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1);
void krn_avx2_matvec_x8_q4_1(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1);
void krn_avx2_matvec_x8_q5_1(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1);
void krn_avx2_matvec_x8_q4_K(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1);
void krn_avx2_matvec_x8_q5_K(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1);
void krn_avx2_matvec_x8_q6_K(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1);
void krn_avx2_matmul_x8_q8_0(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);
void krn_avx2_matmul_x8_q4_0(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);
void krn_avx2_matmul_x8_q4_1(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);
void krn_avx2_matmul_x8_q5_1(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);

/* avx512_x8f.c: f16 and bf16 */
void krn_avx512_matvec_x8_f16(float *y, const void *w, size_t rows, const void *xq, size_t n,
			size_t r0, size_t r1);
void krn_avx512_matvec_x8_bf16(float *y, const void *w, size_t rows, const void *xq, size_t n,
			 size_t r0, size_t r1);
void krn_avx512_matmul_x8_f16(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);
void krn_avx512_matmul_x8_bf16(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			 size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);

/* avx2_x8f.c: f16 and bf16 */
void krn_avx2_matvec_x8_f16(float *y, const void *w, size_t rows, const void *xq, size_t n,
			size_t r0, size_t r1);
void krn_avx2_matvec_x8_bf16(float *y, const void *w, size_t rows, const void *xq, size_t n,
			 size_t r0, size_t r1);
void krn_avx2_matmul_x8_f16(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);
void krn_avx2_matmul_x8_bf16(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			 size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);

/* avx512_x8k.c: q2_K */
void krn_avx512_matvec_x8_q2_K(float *y, const void *w, size_t rows, const void *xq, size_t n,
			size_t r0, size_t r1);
void krn_avx512_matmul_x8_q2_K(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);

/* avx2_x8k.c: q2_K */
void krn_avx2_matvec_x8_q2_K(float *y, const void *w, size_t rows, const void *xq, size_t n,
			size_t r0, size_t r1);
void krn_avx2_matmul_x8_q2_K(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);

/* avx512_x8k.c: q3_K */
void krn_avx512_matvec_x8_q3_K(float *y, const void *w, size_t rows, const void *xq, size_t n,
			size_t r0, size_t r1);
void krn_avx512_matmul_x8_q3_K(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);

/* avx2_x8k.c: q3_K */
void krn_avx2_matvec_x8_q3_K(float *y, const void *w, size_t rows, const void *xq, size_t n,
			size_t r0, size_t r1);
void krn_avx2_matmul_x8_q3_K(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);

/* avx2: the multi-token kernels of q5_0 (avx2_x8l.c) and q4_K, q5_K, q6_K (avx2_x8k.c) */
void krn_avx2_matmul_x8_q5_0(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);
void krn_avx2_matmul_x8_q4_K(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);
void krn_avx2_matmul_x8_q5_K(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);
void krn_avx2_matmul_x8_q6_K(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);

#endif
