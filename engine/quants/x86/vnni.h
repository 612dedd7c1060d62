/* engine/quants/x86/vnni.h: vpdpbusd against one activation dword broadcast to all eight
 * lanes, for the AVX-512 x8 kernels (avx512_x8l.c, avx512_x8k.c).
 *
 * In asm so that the dword is the instruction's broadcast memory operand ({1to8}), without a
 * vpbroadcastd of its own and the register it takes. Under SIMDe (KRN_SIMDE, simd.h: the
 * tables tested on a CPU without AVX-512) the same operation is spelled with intrinsics, which
 * SIMDe computes in C; the asm would be a real AVX-512 instruction there.
 */
#ifndef MEMWALL_X86_VNNI_H
#define MEMWALL_X86_VNNI_H

#include <stdint.h>
#include <string.h>

#include "kernels/x86/simd.h"

#ifndef KRN_SIMDE
static inline __m256i dot_bcast(__m256i acc, __m256i u, const int8_t *p)
{
	__asm__("vpdpbusd %2%{1to8%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*(const int32_t *)p));
	return acc;
}
#else
static inline __m256i dot_bcast(__m256i acc, __m256i u, const int8_t *p)
{
	int32_t d;
	memcpy(&d, p, sizeof(d));
	return _mm256_dpbusd_epi32(acc, u, _mm256_set1_epi32(d));
}
#endif

#endif
