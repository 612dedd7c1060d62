/* engine/quants/arm/neon_x8l.c: NEON kernels for q8_0, q5_0, q4_0, q5_1 and q4_1 in the x8
 * layout (layouts: ../x8_legacy.c; driver and bits: x8_drive.h).
 *
 * Eight rows at once, rows 0-3 in the lanes of one int32x4, rows 4-7 in another. The layouts
 * put four consecutive elements of each row side by side (row r in bytes 4r .. 4r + 3 of each
 * 32-byte chunk), so the four matching activation bytes, broadcast, serve all eight rows and
 * nothing is summed horizontally. A block is decoded once into 16 vectors of signed bytes,
 * q[2j] (rows 0-3) and q[2j + 1] (rows 4-7) holding elements 4j .. 4j + 3, and then dotted
 * with each token's activation. q4_1 and q5_1 are q4_0 and q5_0 without the offset, their
 * quants 32 bytes later (after the eight mins), against a Q8_1 activation whose s carries
 * the min term.
 */
#include "internal.h"
#include "x8_drive.h"
#include "x8_kernels.h"

/* acc[t] += the eight rows' terms of the decoded block q against token t's block i: per row
 * (float)isum * (d_x * d_y), as neon.c's dot_q8_0 / q5_0 / q4_0 (Q8_0 activation), or with
 * min (Q8_1 activation, the eight mins at g + 16) (float)isum * (d_x * d_y) + m_x * s_y, as
 * its dot_q4_1 / q5_1. */
static inline __attribute__((always_inline)) void
legacy_tail(float32x4_t (*acc)[2], const int8x16_t q[16], const uint8_t *g,
	    const uint8_t *const *ys, size_t i, int nt, bool min)
{
	float32x4_t dx[2], mx[2];
	scales8(g, dx);
	if (min)
		scales8(g + 16, mx);
	for (int t = 0; t < nt; t++) {
		const block_q8_0 *y0 = (const block_q8_0 *)(const void *)ys[t] + i;
		const block_q8_1 *y1 = (const block_q8_1 *)(const void *)ys[t] + i;
		const int8_t *qs = min ? y1->qs : y0->qs;
		int32x4_t s[2] = { vdupq_n_s32(0), vdupq_n_s32(0) };
		for (int j = 0; j < 8; j++) {
			int8x16_t x = bcast4(qs + 4 * j);
			s[0] = dot4x4(s[0], q[2 * j], x);
			s[1] = dot4x4(s[1], q[2 * j + 1], x);
		}
		float dy = krn_fp16_table[min ? y1->d : y0->d];
		for (int h = 0; h < 2; h++) {
			float32x4_t term = vmulq_f32(vcvtq_f32_s32(s[h]), vmulq_n_f32(dx[h], dy));
			if (min)
				term = vaddq_f32(term, vmulq_n_f32(mx[h], krn_fp16_table[y1->s]));
			acc[t][h] = vaddq_f32(acc[t][h], term);
		}
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
	legacy_tail(acc, q, g, ys, i, nt, false);
}

/* q4_0 and q4_1, quants at p: chunk c holds elements 4c + k in its low nibbles and
 * 16 + 4c + k in its high ones, less the offset (q4_0's 8, q4_1's 0). */
static inline __attribute__((always_inline)) void decode_q4(int8x16_t q[16], const uint8_t *p,
							     int8_t offset)
{
	for (int j = 0; j < 8; j++) {
		uint8x16_t b = vld1q_u8(p + 16 * j);
		int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0f)));
		q[j] = vsubq_s8(lo, vdupq_n_s8(offset));
		q[8 + j] = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(b, 4)), vdupq_n_s8(offset));
	}
}

/* q5_0 and q5_1, quants at p: chunk c's bits 0-4 are element 4c + k, bits 5-7 the top three
 * bits of element 16 + 4c + k, whose low two bits are bits 2c, 2c + 1 of low2; less the
 * offset (q5_0's 16, q5_1's 0). */
static inline __attribute__((always_inline)) void decode_q5(int8x16_t q[16], const uint8_t *p,
							     int8_t offset)
{
	for (int h = 0; h < 2; h++) {
		uint8x16_t low2 = vld1q_u8(p + 128 + 16 * h);
		for (int c = 0; c < 4; c++) {
			uint8x16_t b = vld1q_u8(p + 32 * c + 16 * h);
			uint8x16_t lo = vandq_u8(b, vdupq_n_u8(0x1f));
			uint8x16_t l2 = vandq_u8(vshlq_u8(low2, vdupq_n_s8((int8_t)(-2 * c))),
						 vdupq_n_u8(3));
			uint8x16_t hi = vorrq_u8(vandq_u8(vshrq_n_u8(b, 3), vdupq_n_u8(0x1c)), l2);
			q[2 * c + h] = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(offset));
			q[8 + 2 * c + h] = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(offset));
		}
	}
}

/* A 4- or 5-bit type's block kernel (quants at g + qoff decoded by decode, less offset; min:
 * the Q8_1 form, with the mins) and its table entries. */
#define X8_NIBBLE_KERNELS(type, decode, qoff, offset, min)                                       \
	static inline __attribute__((always_inline)) void x8blk_##type(                          \
		float32x4_t(*acc)[2], const uint8_t *g, const uint8_t *const *ys, size_t i,      \
		int nt)                                                                          \
	{                                                                                        \
		int8x16_t q[16];                                                                 \
		decode(q, g + (qoff), (offset));                                                 \
		legacy_tail(acc, q, g, ys, i, nt, (min));                                        \
	}                                                                                        \
	X8_KERNELS(type, KRN_QK, x8blk_##type)

X8_KERNELS(q8_0, KRN_QK, x8blk_q8_0)
X8_NIBBLE_KERNELS(q4_0, decode_q4, 16, 8, false)
X8_NIBBLE_KERNELS(q5_0, decode_q5, 16, 16, false)
X8_NIBBLE_KERNELS(q4_1, decode_q4, 32, 0, true)
X8_NIBBLE_KERNELS(q5_1, decode_q5, 32, 0, true)
