/* engine/quants/arm/x8_drive.h: what the NEON x8 kernels (neon_x8l.c, neon_x8k.c) share:
 * the byte dot product of four elements of four rows, and the driver over tiles, groups and
 * tokens. The including file defines a per-block kernel and passes it to x8_drive. Not a
 * header to include anywhere else.
 *
 * Bits: neon.c's vec_dot sums, per row, one float term per block (or super-block) in block
 * order, each term an exact integer sum converted and scaled by products of the same floats,
 * without fused multiply-adds (-ffp-contract=off:
 * ../meson.build, tests/engine/neon-qemu.sh). The x8 kernels keep that: row r
 * of a group lives in lane r % 4 of acc[t][r / 4], its integer sums are the same integers
 * (summed in another order, which integers do not mind), its block terms are the same
 * multiplies, added with one vaddq_f32 per block in block order, and a tile's sums are
 * carried to the next tile through y. So a row's result is vec_dot's, whatever r0, r1 and the
 * number of tokens (krn_matmul_x8_fn's promise, made here by construction).
 */
#include <arm_neon.h>

/* Lane r of acc plus the sum of the four products in lane r (bytes 4r .. 4r + 3) of w and x.
 * With the dotprod extension (ARMv8.2 and later, compiled in by -march) one SDOT; without,
 * two widening multiplies and two pairwise adds, exact too: two products of |value| <= 128
 * sum to at most 32768 - 256 in s16. The choice is the compiler's target, not the running
 * CPU's: a binary for ARMv8.0 runs everywhere. */
#ifdef __ARM_FEATURE_DOTPROD
static inline int32x4_t dot4x4(int32x4_t acc, int8x16_t w, int8x16_t x)
{
	return vdotq_s32(acc, w, x);
}
#else
static inline int32x4_t dot4x4(int32x4_t acc, int8x16_t w, int8x16_t x)
{
	int16x8_t p = vpaddq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(x)), vmull_high_s8(w, x));
	return vpadalq_s16(acc, p);
}
#endif

/* Four activation bytes in every lane. */
static inline int8x16_t bcast4(const int8_t *p)
{
	int32_t v;
	memcpy(&v, p, sizeof(v));
	return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

/* Eight fp16 scales side by side at p, as two float vectors (exact: they are finite). */
static inline void scales8(const uint8_t *p, float32x4_t d[2])
{
	uint16x8_t h = vld1q_u16((const uint16_t *)(const void *)p);
	d[0] = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h)));
	d[1] = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h)));
}

/* Tokens whose sums are kept in registers while a group's block is decoded once. */
#define X8_TOK 4

/* acc[t] for t < nt (a constant after inlining) plus the eight rows' terms of block i (of the
 * tile's first, i0) of token t's activation row ys[t]; g is the group's packed block. */
typedef void (*x8_block_fn)(float32x4_t (*acc)[2], const uint8_t *g, const uint8_t *const *ys,
			    size_t i, int nt);

static inline __attribute__((always_inline)) void
x8_group(float *y, size_t ldy, const uint8_t *g, size_t bs, const uint8_t *xq, size_t ldx,
	 size_t i0, size_t len, bool first, x8_block_fn block, int nt)
{
	float32x4_t acc[X8_TOK][2];
	const uint8_t *ys[X8_TOK];
	for (int t = 0; t < nt; t++) {
		ys[t] = xq + (size_t)t * ldx;
		for (int h = 0; h < 2; h++)
			acc[t][h] = first ? vdupq_n_f32(0) : vld1q_f32(y + (size_t)t * ldy + 4 * h);
	}
	for (size_t i = 0; i < len; i++, g += KRN_X8 * bs)
		block(acc, g, ys, i0 + i, nt);
	for (int t = 0; t < nt; t++)
		for (int h = 0; h < 2; h++)
			vst1q_f32(y + (size_t)t * ldy + 4 * h, acc[t][h]);
}

/* krn_matmul_x8_fn over nb blocks of block_size elements, bs bytes each. Tile by tile
 * (types.h), group by group, X8_TOK tokens at a time (then one by one): a group's tile of
 * weights (34 KB of q8_0, 36 KB of q4_K) is decoded once per X8_TOK tokens and read again from
 * the caches for the next ones. */
static inline __attribute__((always_inline)) void
x8_drive(float *y, size_t ldy, const void *w, size_t rows, const void *xq, size_t ldx,
	 size_t n_tok, size_t nb, uint32_t block_size, size_t bs, size_t r0, size_t r1,
	 x8_block_fn block)
{
	size_t tb, n_tiles = krn_x8_tiles(nb, block_size, &tb);
	for (size_t k = 0; k < n_tiles; k++) {
		const size_t i0 = k * tb, len = k + 1 < n_tiles ? tb : nb - i0;
		for (size_t r = r0; r < r1; r += KRN_X8) {
			const uint8_t *g = (const uint8_t *)w + (i0 * rows + r * len) * bs;
			size_t t = 0;
			for (; t + X8_TOK <= n_tok; t += X8_TOK)
				x8_group(y + t * ldy + r, ldy, g, bs, (const uint8_t *)xq + t * ldx,
					 ldx, i0, len, k == 0, block, X8_TOK);
			for (; t < n_tok; t++)
				x8_group(y + t * ldy + r, ldy, g, bs, (const uint8_t *)xq + t * ldx,
					 ldx, i0, len, k == 0, block, 1);
		}
	}
}

/* The two functions of a type's table entries around its block kernel. */
#define X8_KERNELS(type, block_size, block)                                                      \
	void krn_neon_matmul_x8_##type(float *y, size_t ldy, const void *w, size_t rows,         \
				       const void *xq, size_t ldx, size_t n_tok, size_t n,       \
				       size_t r0, size_t r1)                                     \
	{                                                                                        \
		x8_drive(y, ldy, w, rows, xq, ldx, n_tok, n / (block_size), (block_size),        \
			 sizeof(block_##type), r0, r1, block);                                   \
	}                                                                                        \
	void krn_neon_matvec_x8_##type(float *y, const void *w, size_t rows, const void *xq,     \
				       size_t n, size_t r0, size_t r1)                           \
	{                                                                                        \
		x8_drive(y, 0, w, rows, xq, 0, 1, n / (block_size), (block_size),                \
			 sizeof(block_##type), r0, r1, block);                                   \
	}
