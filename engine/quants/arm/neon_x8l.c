/* engine/quants/arm/neon_x8l.c: NEON kernels for q8_0, q5_0 and q4_0 in the x8 layout
 * (layouts: ../x8_legacy.c; driver and bits: x8_drive.h).
 *
 * Eight rows at once, rows 0-3 in the lanes of one int32x4, rows 4-7 in another. The layouts
 * put four consecutive elements of each row side by side (row r in bytes 4r .. 4r + 3 of each
 * 32-byte chunk), so the four matching activation bytes, broadcast, serve all eight rows and
 * nothing is summed horizontally. A block is decoded once into 16 vectors of signed bytes,
 * q[2j] (rows 0-3) and q[2j + 1] (rows 4-7) holding elements 4j .. 4j + 3, and then dotted
 * with each token's activation.
 */
#include "quants_impl.h"
#include "x8_drive.h"
#include "x8_kernels.h"

/* acc[t] += the eight rows' terms of the decoded block q against token t's block i: per row
 * (float)isum * (d_x * d_y), as neon.c's dot_q8_0 / q5_0 / q4_0. */
static inline __attribute__((always_inline)) void
legacy_tail(float32x4_t (*acc)[2], const int8x16_t q[16], const uint8_t *g,
	    const uint8_t *const *ys, size_t i, int nt)
{
	float32x4_t dx[2];
	scales8(g, dx);
	for (int t = 0; t < nt; t++) {
		const block_q8_0 *yb = (const block_q8_0 *)(const void *)ys[t] + i;
		int32x4_t s0 = vdupq_n_s32(0), s1 = vdupq_n_s32(0);
		for (int j = 0; j < 8; j++) {
			int8x16_t x = bcast4(yb->qs + 4 * j);
			s0 = dot4x4(s0, q[2 * j], x);
			s1 = dot4x4(s1, q[2 * j + 1], x);
		}
		float dy = krn_fp16_table[yb->d];
		acc[t][0] = vaddq_f32(acc[t][0], vmulq_f32(vcvtq_f32_s32(s0), vmulq_n_f32(dx[0], dy)));
		acc[t][1] = vaddq_f32(acc[t][1], vmulq_f32(vcvtq_f32_s32(s1), vmulq_n_f32(dx[1], dy)));
	}
}

/* q8_0: the quants are stored xor 0x80 (for x86's unsigned-by-signed vpdpbusd); the xor
 * undoes it. */
static inline __attribute__((always_inline)) void
x8blk_q8_0(float32x4_t (*acc)[2], const uint8_t *g, const uint8_t *const *ys, size_t i, int nt)
{
	int8x16_t q[16];
	for (int j = 0; j < 16; j++)
		q[j] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(g + 16 + 16 * j), vdupq_n_u8(0x80)));
	legacy_tail(acc, q, g, ys, i, nt);
}

/* q4_0: chunk c holds elements 4c + k in its low nibbles and 16 + 4c + k in its high ones. */
static inline __attribute__((always_inline)) void
x8blk_q4_0(float32x4_t (*acc)[2], const uint8_t *g, const uint8_t *const *ys, size_t i, int nt)
{
	int8x16_t q[16];
	for (int j = 0; j < 8; j++) {
		uint8x16_t b = vld1q_u8(g + 16 + 16 * j);
		q[j] = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0f))), vdupq_n_s8(8));
		q[8 + j] = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(b, 4)), vdupq_n_s8(8));
	}
	legacy_tail(acc, q, g, ys, i, nt);
}

/* q5_0: chunk c's bits 0-4 are element 4c + k, bits 5-7 the top three bits of element
 * 16 + 4c + k, whose low two bits are bits 2c, 2c + 1 of low2. */
static inline __attribute__((always_inline)) void
x8blk_q5_0(float32x4_t (*acc)[2], const uint8_t *g, const uint8_t *const *ys, size_t i, int nt)
{
	int8x16_t q[16];
	for (int h = 0; h < 2; h++) {
		uint8x16_t low2 = vld1q_u8(g + 144 + 16 * h);
		for (int c = 0; c < 4; c++) {
			uint8x16_t b = vld1q_u8(g + 16 + 32 * c + 16 * h);
			uint8x16_t lo = vandq_u8(b, vdupq_n_u8(0x1f));
			uint8x16_t l2 = vandq_u8(vshlq_u8(low2, vdupq_n_s8((int8_t)(-2 * c))),
						 vdupq_n_u8(3));
			uint8x16_t hi = vorrq_u8(vandq_u8(vshrq_n_u8(b, 3), vdupq_n_u8(0x1c)), l2);
			q[2 * c + h] = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(16));
			q[8 + 2 * c + h] = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(16));
		}
	}
	legacy_tail(acc, q, g, ys, i, nt);
}

X8_KERNELS(q8_0, KRN_QK, x8blk_q8_0)
X8_KERNELS(q4_0, KRN_QK, x8blk_q4_0)
X8_KERNELS(q5_0, KRN_QK, x8blk_q5_0)
