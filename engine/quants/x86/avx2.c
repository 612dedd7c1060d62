/* engine/quants/x86/avx2.c: the quant dot products for AVX2 + FMA + F16C.
 *
 * The kernels live in dot256.h; this file supplies the integer primitives. Without VNNI a
 * signed-by-signed byte dot product goes through maddubs (unsigned by signed), so x's sign
 * is moved onto y first (ggml's mul_sum_i8_pairs); activations never hold -128, so the
 * sign flip cannot overflow.
 */
#include "internal.h"
#include "x8_kernels.h"
#include "act_sums.h"

#include "kernels/x86/simd.h"

static inline __m256i dot_u8s8(__m256i x, __m256i y)
{
	return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
}

static inline __m256i dot_u8s8_acc(__m256i acc, __m256i x, __m256i y)
{
	return _mm256_add_epi32(acc, dot_u8s8(x, y));
}

static inline __m256i dot_s8s8(__m256i x, __m256i y)
{
	return dot_u8s8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

static inline __m256i madd_s16(__m256i acc, __m256i a, __m256i b)
{
	return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
}

/* The matvecs' software prefetch on the file's mapping (dot256.h's row_prefetch), 2 KB ahead.
 * On this AVX2 machine (Zen 3, 2 vCPUs) `generate --load mmap`, 128 tokens of stories110M's
 * shapes at 1 thread, median of 5 interleaved pairs, decoded 1.23x faster with it for
 * q4_k_m, 1.17x for q4_0 (1 KB ahead; 2 KB against 1 KB 1.04x), 1.33x for q8_0; the Falcon-7B
 * shape (4.9 GB) at 2 threads 1.27x, 1 thread 1.35x. 4 KB against 2 KB: 1.03x, 1.03x, 0.97x. */
#define DOT256_AHEAD 2048
#include "dot256.h"

/* A q5_0 block as bytes 0..31: the nibbles, plus 16 where the fifth bit is set. */
static inline __m256i q5_0_unsigned(const uint8_t *blk)
{
	const block_q5_0 *b = (const block_q5_0 *)(const void *)blk;
	__m256i hi = _mm256_and_si256(bits32(b->qh), _mm256_set1_epi8(0x10));
	return _mm256_or_si256(nibbles32(b->qs), hi);
}

/* ---- Activation quantizers: ref.c's krn_ref_act_q8_0 and krn_ref_act_q8_K to the same bytes
 * (test_quants compares them). The scalar ones call libm's fmaxf and nearbyintf per element:
 * 3.2% of a stories110M q4_0 decode step of two sequences (generate --batch 2) and 4.7% of
 * four, at 1 thread (perf record -e cpu-clock), where each thread quantizes every token. */

/* the largest of eight floats */
static inline float hmax8(__m256 v)
{
	__m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	m = _mm_max_ps(m, _mm_movehl_ps(m, m));
	return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

/* 32 floats times s, rounded half to even (the default MXCSR mode, as nearbyintf and ggml's
 * magic-number round), as bytes in order; |x * s| <= 127 here, so the packs never saturate
 * but where ref clamps to 127 too. The two packs interleave the four vectors by 128-bit
 * lane; the permute puts their dwords back in order. */
static inline __m256i round32(const float *p, __m256 s)
{
	__m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p), s));
	__m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p + 8), s));
	__m256i c = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p + 16), s));
	__m256i d = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p + 24), s));
	__m256i q = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
	return _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static inline __m256 abs8(const float *p)
{
	return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_loadu_ps(p));
}

static void act_q8_0(const float *x, void *vy, size_t n)
{
	block_q8_0 *y = vy;
	for (size_t i = 0; i < n / KRN_QK; i++, x += KRN_QK) {
		float amax = hmax8(_mm256_max_ps(_mm256_max_ps(abs8(x), abs8(x + 8)),
						 _mm256_max_ps(abs8(x + 16), abs8(x + 24))));
		float id = amax != 0.0f ? 127.f / amax : 0.0f;
		y[i].d = krn_fp32_to_fp16(amax / 127.f);
		_mm256_storeu_si256((__m256i *)(void *)y[i].qs, round32(x, _mm256_set1_ps(id)));
	}
}

/* The scale comes from the first element of the largest magnitude, with its sign. */
static void act_q8_K(const float *x, void *vy, size_t n)
{
	block_q8_K *y = vy;
	for (size_t i = 0; i < n / KRN_QK_K; i++, x += KRN_QK_K) {
		__m256 mx = _mm256_setzero_ps();
		for (int c = 0; c < KRN_QK_K; c += 8)
			mx = _mm256_max_ps(mx, abs8(x + c));
		float amax = hmax8(mx), max = 0.0f;
		memset(&y[i], 0, sizeof(y[i]));
		if (amax == 0.0f)
			continue;
		const __m256 m = _mm256_set1_ps(amax);
		for (int c = 0; c < KRN_QK_K; c += 8) {
			int at = _mm256_movemask_ps(_mm256_cmp_ps(abs8(x + c), m, _CMP_EQ_OQ));
			if (at) {
				max = x[c + __builtin_ctz((unsigned)at)];
				break;
			}
		}
		float iscale = -127.f / max;
		__m256i q[8];
		for (int c = 0; c < KRN_QK_K; c += 32)
			q[c / 32] = round32(x + c, _mm256_set1_ps(iscale));
		q8_K_finish(&y[i], q, iscale);
	}
}

const struct krn_quant_ops krn_quant_ops_avx2 = {
	.name = "avx2",
	.supported = krn_x86_has_avx2,
	.base = &krn_quant_ops_ref,
	.vec_dot = { DOT256_VEC_DOTS },
	.matvec = { DOT256_MATVECS },
	.axpy_f16 = axpy_f16,
	.dot_f16_rows = dot_f16_rows,
	.axpy_f16_rows = axpy_f16_rows,
	.round_f16 = round_f16,
	.dot_f16_heads = dot_f16_heads,
	.axpy_f16_heads = axpy_f16_heads,
	.quantize_act = { [KRN_TYPE_F16] = act_f16, [KRN_TYPE_Q8_0] = act_q8_0,
			  [KRN_TYPE_Q8_K] = act_q8_K },
	.matvec_x8 = {
		[KRN_TYPE_F32] = NULL, /* f32 rows go through the f32 kernels */
		/* avx2_x8f.c */
		[KRN_TYPE_F16] = krn_avx2_matvec_x8_f16,
		[KRN_TYPE_BF16] = krn_avx2_matvec_x8_bf16,
		/* avx2_x8l.c */
		[KRN_TYPE_Q4_0] = krn_avx2_matvec_x8_q4_0,
		[KRN_TYPE_Q8_0] = krn_avx2_matvec_x8_q8_0,
		[KRN_TYPE_Q5_0] = krn_avx2_matvec_x8_q5_0,
		[KRN_TYPE_Q4_1] = krn_avx2_matvec_x8_q4_1,
		[KRN_TYPE_Q5_1] = krn_avx2_matvec_x8_q5_1,
		/* avx2_x8k.c */
		[KRN_TYPE_Q2_K] = krn_avx2_matvec_x8_q2_K,
		[KRN_TYPE_Q3_K] = krn_avx2_matvec_x8_q3_K,
		[KRN_TYPE_Q4_K] = krn_avx2_matvec_x8_q4_K,
		[KRN_TYPE_Q5_K] = krn_avx2_matvec_x8_q5_K,
		[KRN_TYPE_Q6_K] = krn_avx2_matvec_x8_q6_K,
	},
	.matmul_x8 = {
		[KRN_TYPE_F16] = krn_avx2_matmul_x8_f16,
		[KRN_TYPE_BF16] = krn_avx2_matmul_x8_bf16,
		[KRN_TYPE_Q2_K] = krn_avx2_matmul_x8_q2_K,
		[KRN_TYPE_Q3_K] = krn_avx2_matmul_x8_q3_K,
		[KRN_TYPE_Q4_0] = krn_avx2_matmul_x8_q4_0,
		[KRN_TYPE_Q8_0] = krn_avx2_matmul_x8_q8_0,
		[KRN_TYPE_Q5_0] = krn_avx2_matmul_x8_q5_0,
		[KRN_TYPE_Q4_K] = krn_avx2_matmul_x8_q4_K,
		[KRN_TYPE_Q5_K] = krn_avx2_matmul_x8_q5_K,
		[KRN_TYPE_Q6_K] = krn_avx2_matmul_x8_q6_K,
		[KRN_TYPE_Q4_1] = krn_avx2_matmul_x8_q4_1,
		[KRN_TYPE_Q5_1] = krn_avx2_matmul_x8_q5_1,
	},
};
