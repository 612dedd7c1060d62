/* engine/quants/x86/avx2.c: the quant dot products for AVX2 + FMA + F16C.
 *
 * The kernels live in dot256.h; this file supplies the integer primitives. Without VNNI a
 * signed-by-signed byte dot product goes through maddubs (unsigned by signed), so x's sign
 * is moved onto y first (ggml's mul_sum_i8_pairs); activations never hold -128, so the
 * sign flip cannot overflow.
 */
#include "quants_impl.h"
#include "x8_kernels.h"

#include <immintrin.h>

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

#include "dot256.h"

/* A q5_0 block as bytes 0..31: the nibbles, plus 16 where the fifth bit is set. */
static inline __m256i q5_0_unsigned(const uint8_t *blk)
{
	const block_q5_0 *b = (const block_q5_0 *)(const void *)blk;
	__m256i hi = _mm256_and_si256(bits32(b->qh), _mm256_set1_epi8(0x10));
	return _mm256_or_si256(nibbles32(b->qs), hi);
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
	.quantize_act = { [KRN_TYPE_F16] = act_f16 },
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
