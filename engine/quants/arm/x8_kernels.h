/* engine/quants/arm/x8_kernels.h: the NEON kernels for weights in the x8 layout (types.h), for
 * neon.c's table: neon_x8l.c (q8_0, q5_0, q4_0, q5_1, q4_1), neon_x8k.c (q4_K, q5_K, q6_K,
 * q2_K, q3_K) and neon_x8f.c (f16, bf16); layouts in ../x8_legacy.c, ../x8_kquants.c and
 * ../x8_float.c. Each has krn_matvec_x8_fn's or krn_matmul_x8_fn's signature and contract,
 * and gives every row the bits neon.c's vec_dot gives it on the plain row. Internal to
 * engine/quants/arm/. */
#ifndef MEMWALL_ARM_X8_KERNELS_H
#define MEMWALL_ARM_X8_KERNELS_H

#include <stddef.h>

#define NEON_X8_KERNEL(type)                                                                     \
	void krn_neon_matvec_x8_##type(float *y, const void *w, size_t rows, const void *xq,     \
				       size_t n, size_t r0, size_t r1);                          \
	void krn_neon_matmul_x8_##type(float *y, size_t ldy, const void *w, size_t rows,         \
				       const void *xq, size_t ldx, size_t n_tok, size_t n,       \
				       size_t r0, size_t r1);

/* neon_x8l.c */
NEON_X8_KERNEL(q8_0)
NEON_X8_KERNEL(q5_0)
NEON_X8_KERNEL(q4_0)
NEON_X8_KERNEL(q5_1)
NEON_X8_KERNEL(q4_1)
/* neon_x8k.c */
NEON_X8_KERNEL(q4_K)
NEON_X8_KERNEL(q5_K)
NEON_X8_KERNEL(q6_K)
NEON_X8_KERNEL(q2_K)
NEON_X8_KERNEL(q3_K)
/* neon_x8f.c */
NEON_X8_KERNEL(f16)
NEON_X8_KERNEL(bf16)

#undef NEON_X8_KERNEL

#endif
