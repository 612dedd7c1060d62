/* engine/quants/x86/avx512.c: the quant dot products for AVX-512 with VNNI (Ice Lake, Zen 4
 * and later), on 256-bit registers through AVX512VL.
 *
 * The kernels live in dot256.h; this file supplies the integer primitives, where VNNI fuses
 * what AVX2 needs two or three instructions for: vpdpbusd (u8 x s8, four products summed
 * into int32, accumulated) and vpdpwssd (s16 x s16 pairs into int32, accumulated).
 */
#include "quants_impl.h"

#include <immintrin.h>

static inline __m256i dot_u8s8(__m256i x, __m256i y)
{
	return _mm256_dpbusd_epi32(_mm256_setzero_si256(), x, y);
}

static inline __m256i dot_u8s8_acc(__m256i acc, __m256i x, __m256i y)
{
	return _mm256_dpbusd_epi32(acc, x, y);
}

static inline __m256i dot_s8s8(__m256i x, __m256i y)
{
	return dot_u8s8(_mm256_abs_epi8(x), _mm256_sign_epi8(y, x));
}

static inline __m256i madd_s16(__m256i acc, __m256i a, __m256i b)
{
	return _mm256_dpwssd_epi32(acc, a, b);
}

#include "dot256.h"

/* A q5_0 block as bytes 0..31: the nibbles, plus 16 under a mask register loaded straight
 * from qh (AVX512BW), where AVX2 needs five instructions to spread the bits. */
static inline __m256i q5_0_unsigned(const uint8_t *blk)
{
	const block_q5_0 *b = (const block_q5_0 *)(const void *)blk;
	uint32_t qh;
	memcpy(&qh, b->qh, sizeof(qh));
	__m256i v = nibbles32(b->qs);
	return _mm256_mask_add_epi8(v, (__mmask32)qh, v, _mm256_set1_epi8(16));
}

const struct krn_quant_ops krn_quant_ops_avx512 = {
	.name = "avx512",
	.supported = krn_quants_cpu_avx512,
	.base = &krn_quant_ops_avx2,
	.vec_dot = { DOT256_VEC_DOTS },
	.matvec = { DOT256_MATVECS },
};
