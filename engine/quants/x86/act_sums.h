/* engine/quants/x86/act_sums.h: what the Q8_K activation quantizers of avx2.c and avx512.c
 * share once each has rounded a block's 256 values to bytes: storing them, the sixteen bsums
 * out of them by two hadd rounds per four chunks (not by scalar adds out of memory), and the
 * scale. AVX2 instructions, which both ISAs' files are built for. Not a header to include
 * anywhere else. */
#include "kernels/x86/simd.h"

/* the sums of each group of four of 32 quants, as eight int32 */
static inline __m256i quad_sums(__m256i q)
{
	return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q),
				 _mm256_set1_epi16(1));
}

/* the sums of 16 quants of chunks c .. c + 3 (32 quants each; quad sums s[4]), in bsums' order:
 * c's first 16, c's second 16, c + 1's first 16, ... */
static inline __m128i sums16(const __m256i s[4])
{
	/* lane 0 of h: each chunk's first 16 (quads 0-3), lane 1 its second 16 (quads 4-7) */
	__m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
	__m128i lo = _mm256_castsi256_si128(h), hi = _mm256_extracti128_si256(h, 1);
	return _mm_packs_epi32(_mm_unpacklo_epi32(lo, hi), _mm_unpackhi_epi32(lo, hi));
}

/* Block b's quants (eight chunks of 32 bytes, in order), their bsums and its d = 1 / iscale. */
static inline void q8_K_finish(block_q8_K *b, const __m256i q[8], float iscale)
{
	__m256i s[8];
	for (int c = 0; c < 8; c++) {
		_mm256_storeu_si256((__m256i *)(void *)(b->qs + 32 * c), q[c]);
		s[c] = quad_sums(q[c]);
	}
	_mm_storeu_si128((__m128i *)(void *)b->bsums, sums16(s));
	_mm_storeu_si128((__m128i *)(void *)(b->bsums + 8), sums16(s + 4));
	b->d = 1 / iscale;
}
