/* engine/quants/x86/avx512_x8.h: the AVX-512 kernels for weights in the x8 layout (quants.h),
 * for avx512.c's table: the legacy formats' in avx512_x8l.c, the K-quants' in avx512_x8k.c.
 * Each has krn_matvec_fn's signature and contract. Internal to engine/quants/x86/. */
#ifndef MEMWALL_AVX512_X8_H
#define MEMWALL_AVX512_X8_H

#include <stddef.h>

void krn_avx512_matvec_x8_q8_0(float *y, const void *w, size_t row_bytes, const void *xq,
			       size_t n, size_t r0, size_t r1);
void krn_avx512_matvec_x8_q5_0(float *y, const void *w, size_t row_bytes, const void *xq,
			       size_t n, size_t r0, size_t r1);
void krn_avx512_matvec_x8_q4_K(float *y, const void *w, size_t row_bytes, const void *xq,
			       size_t n, size_t r0, size_t r1);
void krn_avx512_matvec_x8_q5_K(float *y, const void *w, size_t row_bytes, const void *xq,
			       size_t n, size_t r0, size_t r1);
void krn_avx512_matvec_x8_q6_K(float *y, const void *w, size_t row_bytes, const void *xq,
			       size_t n, size_t r0, size_t r1);

#endif
