/* engine/quants/arm/neon.c: the quant dot products for AArch64 Advanced SIMD, and the table
 * that lists them with the x8 kernels (neon_x8l.c, neon_x8k.c, neon_x8f.c).
 *
 * Baseline ARMv8.0 only (no dotprod extension), so it runs on every AArch64 CPU: a byte dot
 * product is vmull_s8 (s8 x s8 -> s16, exact: |product| <= 2^14) and vpadalq_s16 (pairwise
 * add into s32). Formats are unpacked into signed bytes 16 at a time; per-group scales are
 * applied to the integer sums, as in dot256.h; Q8_1's s and Q8_K's bsums carry the min terms.
 * The x8 kernels use SDOT where the compiler targets dotprod (x8_drive.h) and give every row
 * the bits these functions give it: the order of their float operations is part of the
 * contract.
 */
#include <arm_neon.h>

#include "internal.h"
#include "x8_kernels.h"

static bool neon_supported(void)
{
	return true; /* Advanced SIMD is part of the AArch64 base ISA */
}

/* acc + sum of a[i] * b[i] over 16 signed bytes, in four s32 lanes. */
static inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b)
{
	acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
	return vpadalq_s16(acc, vmull_high_s8(a, b));
}

static inline int dot32(int8x16_t a0, int8x16_t a1, const int8_t *y)
{
	int32x4_t acc = dot16(vdupq_n_s32(0), a0, vld1q_s8(y));
	return vaddvq_s32(dot16(acc, a1, vld1q_s8(y + 16)));
}

static inline float half(uint16_t h)
{
	return krn_fp16_to_fp32(h);
}

/* 0x10 in byte i of the result where bit (first + i) of the 32 bits at p is set. */
static inline uint8x16_t bit4_from_bits(const uint8_t *p, int first)
{
	static const uint8_t idx_lo[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1 };
	static const uint8_t idx_hi[16] = { 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3 };
	static const uint8_t bit[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
	uint8x16_t bytes = vreinterpretq_u8_u32(vld1q_dup_u32((const uint32_t *)(const void *)p));
	uint8x16_t spread = vqtbl1q_u8(bytes, vld1q_u8(first ? idx_hi : idx_lo));
	return vandq_u8(vtstq_u8(spread, vld1q_u8(bit)), vdupq_n_u8(0x10));
}

/* ---- Legacy formats ------------------------------------------------------------------------ */

static void dot_q4_0(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q4_0 *x = vx;
	const block_q8_0 *y = vy;
	float sum = 0;
	for (size_t i = 0; i < n / KRN_QK; i++) {
		uint8x16_t b = vld1q_u8(x[i].qs);
		int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0f))), vdupq_n_s8(8));
		int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(b, 4)), vdupq_n_s8(8));
		sum += (float)dot32(lo, hi, y[i].qs) * (half(x[i].d) * half(y[i].d));
	}
	*s = sum;
}

static void dot_q4_1(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q4_1 *x = vx;
	const block_q8_1 *y = vy;
	float sum = 0;
	for (size_t i = 0; i < n / KRN_QK; i++) {
		uint8x16_t b = vld1q_u8(x[i].qs);
		int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0f)));
		int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(b, 4));
		sum += (float)dot32(lo, hi, y[i].qs) * (half(x[i].d) * half(y[i].d)) +
		       half(x[i].m) * half(y[i].s);
	}
	*s = sum;
}

static void dot_q5_0(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q5_0 *x = vx;
	const block_q8_0 *y = vy;
	float sum = 0;
	for (size_t i = 0; i < n / KRN_QK; i++) {
		uint8x16_t b = vld1q_u8(x[i].qs);
		uint8x16_t lo = vorrq_u8(vandq_u8(b, vdupq_n_u8(0x0f)), bit4_from_bits(x[i].qh, 0));
		uint8x16_t hi = vorrq_u8(vshrq_n_u8(b, 4), bit4_from_bits(x[i].qh, 1));
		int8x16_t l = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(16));
		int8x16_t h = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(16));
		sum += (float)dot32(l, h, y[i].qs) * (half(x[i].d) * half(y[i].d));
	}
	*s = sum;
}

static void dot_q5_1(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q5_1 *x = vx;
	const block_q8_1 *y = vy;
	float sum = 0;
	for (size_t i = 0; i < n / KRN_QK; i++) {
		uint8x16_t b = vld1q_u8(x[i].qs);
		uint8x16_t lo = vorrq_u8(vandq_u8(b, vdupq_n_u8(0x0f)), bit4_from_bits(x[i].qh, 0));
		uint8x16_t hi = vorrq_u8(vshrq_n_u8(b, 4), bit4_from_bits(x[i].qh, 1));
		sum += (float)dot32(vreinterpretq_s8_u8(lo), vreinterpretq_s8_u8(hi), y[i].qs) *
			       (half(x[i].d) * half(y[i].d)) +
		       half(x[i].m) * half(y[i].s);
	}
	*s = sum;
}

static void dot_q8_0(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q8_0 *x = vx;
	const block_q8_0 *y = vy;
	float sum = 0;
	for (size_t i = 0; i < n / KRN_QK; i++)
		sum += (float)dot32(vld1q_s8(x[i].qs), vld1q_s8(x[i].qs + 16), y[i].qs) *
		       (half(x[i].d) * half(y[i].d));
	*s = sum;
}

/* ---- K-quants ------------------------------------------------------------------------------- */

/* sum over 16 groups of 16 of scale[g] * dot(q[g], y[g]), q given 16 bytes at a time. */
static inline int dot16_scaled(int8x16_t q, const int8_t *y, int scale)
{
	return scale * vaddvq_s32(dot16(vdupq_n_s32(0), q, vld1q_s8(y)));
}

static void dot_q2_K(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q2_K *x = vx;
	const block_q8_K *y = vy;
	float sum = 0;
	for (size_t i = 0; i < n / KRN_QK_K; i++) {
		int isum = 0, msum = 0;
		for (int g = 0; g < 16; g++)
			msum += (x[i].scales[g] >> 4) * y[i].bsums[g];
		for (int h = 0; h < 2; h++) {
			uint8x16_t b0 = vld1q_u8(x[i].qs + 32 * h), b1 = vld1q_u8(x[i].qs + 32 * h + 16);
			for (int k = 0; k < 4; k++) {
				int8x16_t sh = vdupq_n_s8((int8_t)(-2 * k));
				uint8x16_t q0 = vandq_u8(vshlq_u8(b0, sh), vdupq_n_u8(3));
				uint8x16_t q1 = vandq_u8(vshlq_u8(b1, sh), vdupq_n_u8(3));
				int g = 8 * h + 2 * k;
				const int8_t *q8 = y[i].qs + 128 * h + 32 * k;
				isum += dot16_scaled(vreinterpretq_s8_u8(q0), q8, x[i].scales[g] & 0x0f);
				isum += dot16_scaled(vreinterpretq_s8_u8(q1), q8 + 16,
						     x[i].scales[g + 1] & 0x0f);
			}
		}
		sum += half(x[i].d) * y[i].d * (float)isum - half(x[i].dmin) * y[i].d * (float)msum;
	}
	*s = sum;
}

static void dot_q3_K(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q3_K *x = vx;
	const block_q8_K *y = vy;
	float sum = 0;
	for (size_t i = 0; i < n / KRN_QK_K; i++) {
		int sc[16], isum = 0;
		for (int j = 0; j < 16; j++) {
			int lo = j < 8 ? (x[i].scales[j] & 0x0f) : (x[i].scales[j - 8] >> 4);
			int hi = (x[i].scales[8 + j % 4] >> (2 * (j / 4))) & 3;
			sc[j] = (lo | (hi << 4)) - 32;
		}
		uint8x16_t m0 = vld1q_u8(x[i].hmask), m1 = vld1q_u8(x[i].hmask + 16);
		for (int h = 0; h < 2; h++) {
			uint8x16_t b0 = vld1q_u8(x[i].qs + 32 * h), b1 = vld1q_u8(x[i].qs + 32 * h + 16);
			for (int k = 0; k < 4; k++) {
				int8x16_t sh = vdupq_n_s8((int8_t)(-2 * k));
				uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << (4 * h + k)));
				/* low 2 bits, minus 4 where the high bit is clear */
				uint8x16_t four0 = vandq_u8(vmvnq_u8(vtstq_u8(m0, bit)), vdupq_n_u8(4));
				uint8x16_t four1 = vandq_u8(vmvnq_u8(vtstq_u8(m1, bit)), vdupq_n_u8(4));
				int8x16_t q0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(vshlq_u8(b0, sh), vdupq_n_u8(3))),
							vreinterpretq_s8_u8(four0));
				int8x16_t q1 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(vshlq_u8(b1, sh), vdupq_n_u8(3))),
							vreinterpretq_s8_u8(four1));
				int g = 8 * h + 2 * k;
				const int8_t *q8 = y[i].qs + 128 * h + 32 * k;
				isum += dot16_scaled(q0, q8, sc[g]) + dot16_scaled(q1, q8 + 16, sc[g + 1]);
			}
		}
		sum += half(x[i].d) * y[i].d * (float)isum;
	}
	*s = sum;
}

static inline void k4_scales(const uint8_t *q, int *sc, int *mn)
{
	for (int j = 0; j < 4; j++) {
		sc[j] = q[j] & 63;
		mn[j] = q[j + 4] & 63;
		sc[j + 4] = (q[j + 8] & 0x0f) | ((q[j] >> 6) << 4);
		mn[j + 4] = (q[j + 8] >> 4) | ((q[j + 4] >> 6) << 4);
	}
}

/* Shared by q4_K and q5_K: qh may be NULL (q4_K). */
static float dot_k4(const uint16_t *dd, const uint8_t *scales, const uint8_t *qh,
		    const uint8_t *qs, const block_q8_K *y)
{
	int sc[8], mn[8], isum = 0, msum = 0;
	k4_scales(scales, sc, mn);
	for (int g = 0; g < 8; g++)
		msum += mn[g] * (y->bsums[2 * g] + y->bsums[2 * g + 1]);
	uint8x16_t h0 = vdupq_n_u8(0), h1 = vdupq_n_u8(0);
	if (qh) {
		h0 = vld1q_u8(qh);
		h1 = vld1q_u8(qh + 16);
	}
	for (int c = 0; c < 4; c++) {
		uint8x16_t b0 = vld1q_u8(qs + 32 * c), b1 = vld1q_u8(qs + 32 * c + 16);
		uint8x16_t lo0 = vandq_u8(b0, vdupq_n_u8(0x0f)), lo1 = vandq_u8(b1, vdupq_n_u8(0x0f));
		uint8x16_t hi0 = vshrq_n_u8(b0, 4), hi1 = vshrq_n_u8(b1, 4);
		uint8x16_t bl = vdupq_n_u8((uint8_t)(1u << (2 * c))), bh = vdupq_n_u8((uint8_t)(2u << (2 * c)));
		lo0 = vorrq_u8(lo0, vandq_u8(vtstq_u8(h0, bl), vdupq_n_u8(0x10)));
		lo1 = vorrq_u8(lo1, vandq_u8(vtstq_u8(h1, bl), vdupq_n_u8(0x10)));
		hi0 = vorrq_u8(hi0, vandq_u8(vtstq_u8(h0, bh), vdupq_n_u8(0x10)));
		hi1 = vorrq_u8(hi1, vandq_u8(vtstq_u8(h1, bh), vdupq_n_u8(0x10)));
		const int8_t *q8 = y->qs + 64 * c;
		isum += sc[2 * c] * dot32(vreinterpretq_s8_u8(lo0), vreinterpretq_s8_u8(lo1), q8);
		isum += sc[2 * c + 1] * dot32(vreinterpretq_s8_u8(hi0), vreinterpretq_s8_u8(hi1), q8 + 32);
	}
	return half(dd[0]) * y->d * (float)isum - half(dd[1]) * y->d * (float)msum;
}

static void dot_q4_K(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q4_K *x = vx;
	const block_q8_K *y = vy;
	float sum = 0;
	for (size_t i = 0; i < n / KRN_QK_K; i++) {
		uint16_t dd[2] = { x[i].d, x[i].dmin };
		sum += dot_k4(dd, x[i].scales, NULL, x[i].qs, &y[i]);
	}
	*s = sum;
}

static void dot_q5_K(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q5_K *x = vx;
	const block_q8_K *y = vy;
	float sum = 0;
	for (size_t i = 0; i < n / KRN_QK_K; i++) {
		uint16_t dd[2] = { x[i].d, x[i].dmin };
		sum += dot_k4(dd, x[i].scales, x[i].qh, x[i].qs, &y[i]);
	}
	*s = sum;
}

static void dot_q6_K(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q6_K *x = vx;
	const block_q8_K *y = vy;
	float sum = 0;
	for (size_t i = 0; i < n / KRN_QK_K; i++) {
		int isum = 0;
		for (int h = 0; h < 2; h++) {
			for (int part = 0; part < 2; part++) { /* l in [16 part, 16 part + 16) */
				uint8x16_t l0 = vld1q_u8(x[i].ql + 64 * h + 16 * part);
				uint8x16_t l1 = vld1q_u8(x[i].ql + 64 * h + 32 + 16 * part);
				uint8x16_t qh = vld1q_u8(x[i].qh + 32 * h + 16 * part);
				uint8x16_t q[4] = {
					vorrq_u8(vandq_u8(l0, vdupq_n_u8(0x0f)),
						 vshlq_n_u8(vandq_u8(qh, vdupq_n_u8(3)), 4)),
					vorrq_u8(vandq_u8(l1, vdupq_n_u8(0x0f)),
						 vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 2), vdupq_n_u8(3)), 4)),
					vorrq_u8(vshrq_n_u8(l0, 4),
						 vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 4), vdupq_n_u8(3)), 4)),
					vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(qh, 6), 4)),
				};
				for (int k = 0; k < 4; k++) {
					int8x16_t v = vsubq_s8(vreinterpretq_s8_u8(q[k]), vdupq_n_s8(32));
					int g = 8 * h + 2 * k + part;
					isum += dot16_scaled(v, y[i].qs + 128 * h + 32 * k + 16 * part,
							     x[i].scales[g]);
				}
			}
		}
		sum += half(x[i].d) * y[i].d * (float)isum;
	}
	*s = sum;
}

/* ---- Float formats ----------------------------------------------------------------------- */

static void dot_f32(size_t n, float *s, const void *vx, const void *vy)
{
	const float *x = vx, *y = vy;
	float32x4_t a0 = vdupq_n_f32(0), a1 = vdupq_n_f32(0);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		a0 = vfmaq_f32(a0, vld1q_f32(x + i), vld1q_f32(y + i));
		a1 = vfmaq_f32(a1, vld1q_f32(x + i + 4), vld1q_f32(y + i + 4));
	}
	float sum = vaddvq_f32(vaddq_f32(a0, a1));
	for (; i < n; i++)
		sum += x[i] * y[i];
	*s = sum;
}

static inline float32x4_t load_f16(const uint16_t *p)
{
	return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

static void axpy_f16(float *y, float a, const uint16_t *x, size_t n)
{
	size_t i = 0;
	for (; i + 4 <= n; i += 4)
		vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), load_f16(x + i), a));
	for (; i < n; i++)
		y[i] += a * half(x[i]);
}

static void dot_f16(size_t n, float *s, const void *vx, const void *vy)
{
	const uint16_t *x = vx, *y = vy;
	float32x4_t a = vdupq_n_f32(0);
	size_t i = 0;
	for (; i + 4 <= n; i += 4)
		a = vfmaq_f32(a, load_f16(x + i), load_f16(y + i));
	float sum = vaddvq_f32(a);
	for (; i < n; i++)
		sum += half(x[i]) * half(y[i]);
	*s = sum;
}

static inline float32x4_t load_bf16(const uint16_t *p)
{
	return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

static void dot_bf16(size_t n, float *s, const void *vx, const void *vy)
{
	const uint16_t *x = vx, *y = vy;
	float32x4_t a = vdupq_n_f32(0);
	size_t i = 0;
	for (; i + 4 <= n; i += 4)
		a = vfmaq_f32(a, load_bf16(x + i), load_bf16(y + i));
	float sum = vaddvq_f32(a);
	for (; i < n; i++)
		sum += krn_bf16_to_fp32(x[i]) * krn_bf16_to_fp32(y[i]);
	*s = sum;
}

const struct krn_quant_ops krn_quant_ops_neon = {
	.name = "neon",
	.supported = neon_supported,
	.base = &krn_quant_ops_ref,
	.axpy_f16 = axpy_f16,
	.vec_dot = {
		[KRN_TYPE_F32] = dot_f32, [KRN_TYPE_F16] = dot_f16, [KRN_TYPE_BF16] = dot_bf16,
		[KRN_TYPE_Q4_0] = dot_q4_0, [KRN_TYPE_Q4_1] = dot_q4_1, [KRN_TYPE_Q5_0] = dot_q5_0,
		[KRN_TYPE_Q5_1] = dot_q5_1, [KRN_TYPE_Q8_0] = dot_q8_0, [KRN_TYPE_Q2_K] = dot_q2_K,
		[KRN_TYPE_Q3_K] = dot_q3_K, [KRN_TYPE_Q4_K] = dot_q4_K, [KRN_TYPE_Q5_K] = dot_q5_K,
		[KRN_TYPE_Q6_K] = dot_q6_K,
	},
	.matvec_x8 = {
		/* neon_x8l.c */
		[KRN_TYPE_Q4_0] = krn_neon_matvec_x8_q4_0,
		[KRN_TYPE_Q5_0] = krn_neon_matvec_x8_q5_0,
		[KRN_TYPE_Q8_0] = krn_neon_matvec_x8_q8_0,
		[KRN_TYPE_Q4_1] = krn_neon_matvec_x8_q4_1,
		[KRN_TYPE_Q5_1] = krn_neon_matvec_x8_q5_1,
		/* neon_x8k.c */
		[KRN_TYPE_Q4_K] = krn_neon_matvec_x8_q4_K,
		[KRN_TYPE_Q5_K] = krn_neon_matvec_x8_q5_K,
		[KRN_TYPE_Q6_K] = krn_neon_matvec_x8_q6_K,
		[KRN_TYPE_Q2_K] = krn_neon_matvec_x8_q2_K,
		[KRN_TYPE_Q3_K] = krn_neon_matvec_x8_q3_K,
		/* neon_x8f.c */
		[KRN_TYPE_F16] = krn_neon_matvec_x8_f16,
		[KRN_TYPE_BF16] = krn_neon_matvec_x8_bf16,
	},
	.matmul_x8 = {
		[KRN_TYPE_Q4_0] = krn_neon_matmul_x8_q4_0,
		[KRN_TYPE_Q5_0] = krn_neon_matmul_x8_q5_0,
		[KRN_TYPE_Q8_0] = krn_neon_matmul_x8_q8_0,
		[KRN_TYPE_Q4_1] = krn_neon_matmul_x8_q4_1,
		[KRN_TYPE_Q5_1] = krn_neon_matmul_x8_q5_1,
		[KRN_TYPE_Q4_K] = krn_neon_matmul_x8_q4_K,
		[KRN_TYPE_Q5_K] = krn_neon_matmul_x8_q5_K,
		[KRN_TYPE_Q6_K] = krn_neon_matmul_x8_q6_K,
		[KRN_TYPE_Q2_K] = krn_neon_matmul_x8_q2_K,
		[KRN_TYPE_Q3_K] = krn_neon_matmul_x8_q3_K,
		[KRN_TYPE_F16] = krn_neon_matmul_x8_f16,
		[KRN_TYPE_BF16] = krn_neon_matmul_x8_bf16,
	},
};
