/* engine/quants/arm/neon_x8k.c: NEON kernels for q4_K, q5_K, q6_K, q2_K and q3_K in the x8
 * layout (layouts: ../x8_kquants.c; driver and bits: x8_drive.h).
 *
 * As neon_x8l.c: rows 0-3 and 4-7 in the lanes of two int32x4, four elements of each row per
 * 16 bytes against a broadcast activation dword. Per super-block the integer sum of each row
 * is neon.c's (sum over sub-blocks of scale * sub-block dot, and for q4_K / q5_K / q2_K the
 * mins against the activation's bsums), built from the same integers; the weights of a pair
 * of sub-blocks are decoded once and dotted with each token's activation.
 */
#include "internal.h"
#include "x8_drive.h"
#include "x8_kernels.h"

/* Lane r: byte j of 32-bit lane r of v, zero-extended. */
static inline int32x4_t byte_of_lanes(uint8x16_t v, int j)
{
	uint32x4_t w = vshlq_u32(vreinterpretq_u32_u8(v), vdupq_n_s32(-8 * j));
	return vreinterpretq_s32_u32(vandq_u32(w, vdupq_n_u32(0xff)));
}

/* s[h], lane r for row 4h + r: the sum over k < n of the dot of q[k][h] (four elements of
 * each row) with the activation's bytes y + 4k .. y + 4k + 3. */
static inline void sub_dot(int32x4_t s[2], int8x16_t q[][2], const int8_t *y, int n)
{
	s[0] = s[1] = vdupq_n_s32(0);
	for (int k = 0; k < n; k++) {
		int8x16_t x = bcast4(y + 4 * k);
		s[0] = dot4x4(s[0], q[k][0], x);
		s[1] = dot4x4(s[1], q[k][1], x);
	}
}

/* acc[t] += per row (d * y.d) * isum[t] - (dmin * y.d) * msum[t], or without dmin (NULL)
 * (d * y.d) * isum[t]: the super-block term of neon.c's dot_k4 / dot_q2_K, and of its
 * dot_q3_K / dot_q6_K. d and dmin are the eight rows' fp16 at g and g + 16. */
static inline __attribute__((always_inline)) void
k_terms(float32x4_t (*acc)[2], const uint8_t *g, const block_q8_K *const *yb,
	int32x4_t (*isum)[2], int32x4_t (*msum)[2], int nt)
{
	float32x4_t d[2], dmin[2];
	scales8(g, d);
	if (msum)
		scales8(g + 16, dmin);
	for (int t = 0; t < nt; t++)
		for (int h = 0; h < 2; h++) {
			float32x4_t dy = vmulq_n_f32(d[h], yb[t]->d);
			float32x4_t a = vmulq_f32(dy, vcvtq_f32_s32(isum[t][h]));
			if (msum)
				a = vsubq_f32(a, vmulq_f32(vmulq_n_f32(dmin[h], yb[t]->d),
							   vcvtq_f32_s32(msum[t][h])));
			acc[t][h] = vaddq_f32(acc[t][h], a);
		}
}

/* ---- q4_K and q5_K ----------------------------------------------------------------------
 *
 * The header's scales (get_scale_min_k4, as neon.c's k4_scales, for four rows a vector):
 * sc[j] = S0 & 63, mn[j] = S1 & 63, sc[j + 4] = (S2 & 15) | (S0 >> 6) << 4 and
 * mn[j + 4] = (S2 >> 4) | (S1 >> 6) << 4, byte j of each row's words S0, S1, S2. */
static inline void k4_scales8(const uint8_t *g, int32x4_t sc[8][2], int32x4_t mn[8][2])
{
	for (int h = 0; h < 2; h++) {
		uint8x16_t s0 = vld1q_u8(g + 32 + 16 * h), s1 = vld1q_u8(g + 64 + 16 * h);
		uint8x16_t s2 = vld1q_u8(g + 96 + 16 * h), m63 = vdupq_n_u8(63);
		uint8x16_t scl = vandq_u8(s0, m63), mnl = vandq_u8(s1, m63);
		uint8x16_t sch = vorrq_u8(vandq_u8(s2, vdupq_n_u8(0x0f)),
					  vshlq_n_u8(vshrq_n_u8(s0, 6), 4));
		uint8x16_t mnh = vorrq_u8(vshrq_n_u8(s2, 4), vshlq_n_u8(vshrq_n_u8(s1, 6), 4));
		for (int j = 0; j < 4; j++) {
			sc[j][h] = byte_of_lanes(scl, j);
			sc[j + 4][h] = byte_of_lanes(sch, j);
			mn[j][h] = byte_of_lanes(mnl, j);
			mn[j + 4][h] = byte_of_lanes(mnh, j);
		}
	}
}

/* Sub-blocks 2c (lo) and 2c + 1 (hi) of the eight rows: element 4q + m of each in lo[q], hi[q]. */
typedef void (*k4_decode_fn)(const uint8_t *g, int c, int8x16_t lo[8][2], int8x16_t hi[8][2]);

/* q4_K: 32 bytes at 128 + 32 (4q + c), ggml's nibbles: low for sub-block 2c, high for 2c + 1. */
static inline void decode_q4_K(const uint8_t *g, int c, int8x16_t lo[8][2], int8x16_t hi[8][2])
{
	for (int q = 0; q < 8; q++)
		for (int h = 0; h < 2; h++) {
			uint8x16_t b = vld1q_u8(g + 128 + 32 * (4 * q + c) + 16 * h);
			lo[q][h] = vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0f)));
			hi[q][h] = vreinterpretq_s8_u8(vshrq_n_u8(b, 4));
		}
}

/* q5_K: at 128 + 160q, v[c] holds a (bits 0-4) and the top three bits of h (bits 5-7), low2
 * at + 128 h's low two bits in bits 2c, 2c + 1; as q5_0 in neon_x8l.c. */
static inline void decode_q5_K(const uint8_t *g, int c, int8x16_t lo[8][2], int8x16_t hi[8][2])
{
	for (int q = 0; q < 8; q++)
		for (int h = 0; h < 2; h++) {
			const uint8_t *p = g + 128 + 160 * q + 16 * h;
			uint8x16_t v = vld1q_u8(p + 32 * c), low2 = vld1q_u8(p + 128);
			uint8x16_t l2 = vandq_u8(vshlq_u8(low2, vdupq_n_s8((int8_t)(-2 * c))),
						 vdupq_n_u8(3));
			lo[q][h] = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x1f)));
			hi[q][h] = vreinterpretq_s8_u8(
				vorrq_u8(vandq_u8(vshrq_n_u8(v, 3), vdupq_n_u8(0x1c)), l2));
		}
}

/* acc[t] += per row d * y.d * isum - dmin * y.d * msum, as neon.c's dot_k4. */
static inline __attribute__((always_inline)) void
block_k4(float32x4_t (*acc)[2], const uint8_t *g, const uint8_t *const *ys, size_t i, int nt,
	 k4_decode_fn decode)
{
	int32x4_t sc[8][2], mn[8][2], isum[X8_TOK][2];
	const block_q8_K *yb[X8_TOK];
	k4_scales8(g, sc, mn);
	for (int t = 0; t < nt; t++) {
		yb[t] = (const block_q8_K *)(const void *)ys[t] + i;
		isum[t][0] = isum[t][1] = vdupq_n_s32(0);
	}
	for (int c = 0; c < 4; c++) {
		int8x16_t lo[8][2], hi[8][2];
		decode(g, c, lo, hi);
		for (int t = 0; t < nt; t++) {
			int32x4_t sl[2], sh[2];
			sub_dot(sl, lo, yb[t]->qs + 64 * c, 8);
			sub_dot(sh, hi, yb[t]->qs + 64 * c + 32, 8);
			for (int h = 0; h < 2; h++)
				isum[t][h] = vmlaq_s32(vmlaq_s32(isum[t][h], sc[2 * c][h], sl[h]),
						       sc[2 * c + 1][h], sh[h]);
		}
	}
	int32x4_t msum[X8_TOK][2];
	for (int t = 0; t < nt; t++) {
		msum[t][0] = msum[t][1] = vdupq_n_s32(0);
		for (int s = 0; s < 8; s++) {
			int b = yb[t]->bsums[2 * s] + yb[t]->bsums[2 * s + 1];
			for (int h = 0; h < 2; h++)
				msum[t][h] = vmlaq_n_s32(msum[t][h], mn[s][h], b);
		}
	}
	k_terms(acc, g, yb, isum, msum, nt);
}

static inline __attribute__((always_inline)) void
x8blk_q4_K(float32x4_t (*acc)[2], const uint8_t *g, const uint8_t *const *ys, size_t i, int nt)
{
	block_k4(acc, g, ys, i, nt, decode_q4_K);
}

static inline __attribute__((always_inline)) void
x8blk_q5_K(float32x4_t (*acc)[2], const uint8_t *g, const uint8_t *const *ys, size_t i, int nt)
{
	block_k4(acc, g, ys, i, nt, decode_q5_K);
}

/* ---- q6_K -------------------------------------------------------------------------------
 *
 * At 144 + 192p, sub-blocks 2p (a) and 2p + 1 (b) of the eight rows: v[k] holds a (bits 0-5)
 * and b's top two bits (6-7), lo4[k / 2] b's low nibble (low for even k, high for odd); both
 * stored plus 32. acc[t] += per row d * y.d * isum, as neon.c's dot_q6_K. */
static inline __attribute__((always_inline)) void
x8blk_q6_K(float32x4_t (*acc)[2], const uint8_t *g, const uint8_t *const *ys, size_t i, int nt)
{
	int32x4_t isum[X8_TOK][2];
	const block_q8_K *yb[X8_TOK];
	for (int t = 0; t < nt; t++) {
		yb[t] = (const block_q8_K *)(const void *)ys[t] + i;
		isum[t][0] = isum[t][1] = vdupq_n_s32(0);
	}
	for (int p = 0; p < 8; p++) {
		/* scales: byte 16 + 8s + r, so sub-blocks 2p and 2p + 1 of the eight rows are the
		 * 16 bytes at 16 + 16p */
		int8x16_t s8 = vld1q_s8((const int8_t *)(const void *)(g + 16 + 16 * p));
		int16x8_t sa16 = vmovl_s8(vget_low_s8(s8)), sb16 = vmovl_high_s8(s8);
		int32x4_t sca[2] = { vmovl_s16(vget_low_s16(sa16)), vmovl_high_s16(sa16) };
		int32x4_t scb[2] = { vmovl_s16(vget_low_s16(sb16)), vmovl_high_s16(sb16) };
		int8x16_t a[4][2], b[4][2];
		const uint8_t *q = g + 144 + 192 * p;
		for (int k = 0; k < 4; k++)
			for (int h = 0; h < 2; h++) {
				uint8x16_t v = vld1q_u8(q + 32 * k + 16 * h);
				uint8x16_t l4 = vld1q_u8(q + 128 + 32 * (k / 2) + 16 * h);
				l4 = k % 2 ? vshrq_n_u8(l4, 4) : vandq_u8(l4, vdupq_n_u8(0x0f));
				uint8x16_t bv = vorrq_u8(vshlq_n_u8(vshrq_n_u8(v, 6), 4), l4);
				a[k][h] = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x3f))),
						   vdupq_n_s8(32));
				b[k][h] = vsubq_s8(vreinterpretq_s8_u8(bv), vdupq_n_s8(32));
			}
		for (int t = 0; t < nt; t++) {
			int32x4_t da[2], db[2];
			sub_dot(da, a, yb[t]->qs + 32 * p, 4);
			sub_dot(db, b, yb[t]->qs + 32 * p + 16, 4);
			for (int h = 0; h < 2; h++)
				isum[t][h] = vmlaq_s32(vmlaq_s32(isum[t][h], sca[h], da[h]), scb[h],
						       db[h]);
		}
	}
	k_terms(acc, g, yb, isum, NULL, nt);
}

/* ---- q2_K and q3_K ----------------------------------------------------------------------
 *
 * 2-bit quants, ggml's bytes four at a time per row: bits 2j of chunk (part, c) are elements
 * 128 part + 32j + 4c + m of the eight rows, sub-block 8 part + 2j + c / 4, so the chunks
 * c < 4 and c >= 4 shifted by 2j are one pair of sub-blocks (neon.c's dot_q2_K / dot_q3_K take
 * the same pairs). q3_K subtracts 4 where the element's hmask bit (4 part + j of hmask chunk
 * c) is clear. */

/* Sub-blocks 8 part + 2j and + 1 of the eight rows: elements 4c + m of the pair in q[c]. */
typedef void (*k2_decode_fn)(const uint8_t *g, int part, int j, int8x16_t q[8][2]);

static inline uint8x16_t bits2(const uint8_t *p, int j)
{
	return vandq_u8(vshlq_u8(vld1q_u8(p), vdupq_n_s8((int8_t)(-2 * j))), vdupq_n_u8(3));
}

/* q2_K: chunk (part, c) at 160 + 32 (8 part + c). */
static inline void decode_q2_K(const uint8_t *g, int part, int j, int8x16_t q[8][2])
{
	for (int c = 0; c < 8; c++)
		for (int h = 0; h < 2; h++)
			q[c][h] = vreinterpretq_s8_u8(
				bits2(g + 160 + 32 * (8 * part + c) + 16 * h, j));
}

/* q3_K: chunk (part, c) at 112 + 32 (8 part + c), hmask chunk c at 624 + 32c. */
static inline void decode_q3_K(const uint8_t *g, int part, int j, int8x16_t q[8][2])
{
	int8x16_t sh = vdupq_n_s8((int8_t)-(4 * part + j));
	for (int c = 0; c < 8; c++)
		for (int h = 0; h < 2; h++) {
			uint8x16_t lo = bits2(g + 112 + 32 * (8 * part + c) + 16 * h, j);
			uint8x16_t hb = vandq_u8(vshlq_u8(vld1q_u8(g + 624 + 32 * c + 16 * h), sh),
						 vdupq_n_u8(1));
			q[c][h] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, vshlq_n_u8(hb, 2))),
					   vdupq_n_s8(4));
		}
}

/* isum[t] = per row the sum over the 16 sub-blocks s of sc[s] times the sub-block's dot with
 * token t's activation. */
static inline __attribute__((always_inline)) void
k2_isum(int32x4_t (*isum)[2], const uint8_t *g, const block_q8_K *const *yb, int nt,
	int32x4_t sc[16][2], k2_decode_fn decode)
{
	for (int t = 0; t < nt; t++)
		isum[t][0] = isum[t][1] = vdupq_n_s32(0);
	for (int part = 0; part < 2; part++)
		for (int j = 0; j < 4; j++) {
			int8x16_t q[8][2];
			int s = 8 * part + 2 * j;
			decode(g, part, j, q);
			for (int t = 0; t < nt; t++) {
				const int8_t *y = yb[t]->qs + 128 * part + 32 * j;
				int32x4_t sl[2], sh[2];
				sub_dot(sl, q, y, 4);
				sub_dot(sh, q + 4, y + 16, 4);
				for (int h = 0; h < 2; h++) {
					int32x4_t a = vmlaq_s32(isum[t][h], sc[s][h], sl[h]);
					isum[t][h] = vmlaq_s32(a, sc[s + 1][h], sh[h]);
				}
			}
		}
}

/* q2_K: scales byte 4r + m of the 32 at 32 + 32k is row r's scales[4k + m], scale low, min
 * high. acc[t] += per row (d * y.d) * isum - (dmin * y.d) * msum, as neon.c's dot_q2_K. */
static inline __attribute__((always_inline)) void
x8blk_q2_K(float32x4_t (*acc)[2], const uint8_t *g, const uint8_t *const *ys, size_t i, int nt)
{
	int32x4_t sc[16][2], mn[16][2], isum[X8_TOK][2], msum[X8_TOK][2];
	const block_q8_K *yb[X8_TOK];
	for (int k = 0; k < 4; k++)
		for (int h = 0; h < 2; h++) {
			uint8x16_t v = vld1q_u8(g + 32 + 32 * k + 16 * h);
			uint8x16_t lo = vandq_u8(v, vdupq_n_u8(0x0f)), hi = vshrq_n_u8(v, 4);
			for (int m = 0; m < 4; m++) {
				sc[4 * k + m][h] = byte_of_lanes(lo, m);
				mn[4 * k + m][h] = byte_of_lanes(hi, m);
			}
		}
	for (int t = 0; t < nt; t++) {
		yb[t] = (const block_q8_K *)(const void *)ys[t] + i;
		msum[t][0] = msum[t][1] = vdupq_n_s32(0);
		for (int s = 0; s < 16; s++)
			for (int h = 0; h < 2; h++)
				msum[t][h] = vmlaq_n_s32(msum[t][h], mn[s][h], yb[t]->bsums[s]);
	}
	k2_isum(isum, g, yb, nt, sc, decode_q2_K);
	k_terms(acc, g, yb, isum, msum, nt);
}

/* q3_K: the scales as neon.c's dot_q3_K unpacks them, sc[s] = (lo | hi << 4) - 32 with lo
 * the low nibble of byte s of S0 S1 (s < 8) or the high nibble of byte s - 8, and hi bits
 * 2 (s / 4) of byte s % 4 of S2, for row r's words S0, S1, S2 at 16 + 32k + 4r. So quarter
 * u = s / 4 is byte s % 4 of (S0 & 15, S1 & 15, S0 >> 4, S1 >> 4)[u] | ((S2 >> 2u) & 3) << 4.
 * acc[t] += per row (d * y.d) * isum. */
static inline __attribute__((always_inline)) void
x8blk_q3_K(float32x4_t (*acc)[2], const uint8_t *g, const uint8_t *const *ys, size_t i, int nt)
{
	int32x4_t sc[16][2], isum[X8_TOK][2];
	const block_q8_K *yb[X8_TOK];
	for (int h = 0; h < 2; h++) {
		uint8x16_t s0 = vld1q_u8(g + 16 + 16 * h), s1 = vld1q_u8(g + 48 + 16 * h);
		uint8x16_t s2 = vld1q_u8(g + 80 + 16 * h), m15 = vdupq_n_u8(0x0f);
		uint8x16_t lo[4] = { vandq_u8(s0, m15), vandq_u8(s1, m15), vshrq_n_u8(s0, 4),
				     vshrq_n_u8(s1, 4) };
		for (int u = 0; u < 4; u++) {
			uint8x16_t hi = vandq_u8(vshlq_u8(s2, vdupq_n_s8((int8_t)(-2 * u))),
						 vdupq_n_u8(3));
			uint8x16_t v = vorrq_u8(lo[u], vshlq_n_u8(hi, 4));
			for (int m = 0; m < 4; m++)
				sc[4 * u + m][h] = vsubq_s32(byte_of_lanes(v, m), vdupq_n_s32(32));
		}
	}
	for (int t = 0; t < nt; t++)
		yb[t] = (const block_q8_K *)(const void *)ys[t] + i;
	k2_isum(isum, g, yb, nt, sc, decode_q3_K);
	k_terms(acc, g, yb, isum, NULL, nt);
}

X8_KERNELS(q4_K, KRN_QK_K, x8blk_q4_K)
X8_KERNELS(q5_K, KRN_QK_K, x8blk_q5_K)
X8_KERNELS(q6_K, KRN_QK_K, x8blk_q6_K)
X8_KERNELS(q2_K, KRN_QK_K, x8blk_q2_K)
X8_KERNELS(q3_K, KRN_QK_K, x8blk_q3_K)
