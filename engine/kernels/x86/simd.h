/* engine/kernels/x86/simd.h: the x86 vector intrinsics, for every x86 file of kernels/ and
 * quants/.
 *
 * Normally this is <immintrin.h>. tests/engine/avx512-simde.sh builds the AVX-512 tables with
 * KRN_SIMDE defined instead, against SIMDe (Debian's libsimde-dev): the same _mm*_ names and
 * types, computed in portable C, so that a CPU without AVX-512 (such as the 2-core AVX2
 * machines the project is built on) runs those tables and tests them against ref bit for bit.
 * SIMDE_NO_NATIVE keeps SIMDe away from <immintrin.h>, whose own __m512 would clash with
 * SIMDe's. SIMDe 0.7.4 lacks a few intrinsics the tables use; they are spelled out below,
 * lane by lane, from Intel's definitions (Intel Intrinsics Guide). Nothing here is built into
 * memwall itself.
 */
#ifndef MEMWALL_KRN_X86_SIMD_H
#define MEMWALL_KRN_X86_SIMD_H

#ifndef KRN_SIMDE

#include <immintrin.h>

#else

#define SIMDE_NO_NATIVE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <math.h>
#include <stdint.h>
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>
#include <simde/x86/fma.h>
#include <simde/x86/gfni.h>

/* SIMDe names its mask types simde__mmaskN only */
typedef simde__mmask8 __mmask8;
typedef simde__mmask16 __mmask16;
typedef simde__mmask32 __mmask32;
typedef simde__mmask64 __mmask64;

/* SIMDe has these, without the native names */
#define _mm512_shuffle_f32x4 simde_mm512_shuffle_f32x4
#ifndef _MM_FROUND_NO_EXC
#define _MM_FROUND_NO_EXC SIMDE_MM_FROUND_NO_EXC
#endif

/* Each below works on arrays: the lanes are stored, computed one by one, loaded back. */

/* SIMDe's portable FMAs multiply, round, then add and round again; the instructions round
 * once, and the tables' bits depend on it. These replace them with C's fma, lane by lane.
 * KRN_SIMDE_FMA(NAME, VEC, LANE, LANES, FMA, SIGN, STOREU, LOADU) defines krn_simde_NAME:
 * SIGN a * b + c, rounded once. */
#define KRN_SIMDE_FMA(name, vec, lane, lanes, fma, sign, storeu, loadu)                     \
	static inline vec krn_simde_##name(vec a, vec b, vec c)                              \
	{                                                                                    \
		lane fa[lanes], fb[lanes], fc[lanes];                                        \
		storeu(fa, a);                                                               \
		storeu(fb, b);                                                               \
		storeu(fc, c);                                                               \
		for (int i = 0; i < (lanes); i++)                                            \
			fc[i] = fma(sign fa[i], fb[i], fc[i]);                               \
		return loadu(fc);                                                            \
	}
KRN_SIMDE_FMA(mm_fmadd_ps, __m128, float, 4, fmaf, +, _mm_storeu_ps, _mm_loadu_ps)
KRN_SIMDE_FMA(mm256_fmadd_ps, __m256, float, 8, fmaf, +, _mm256_storeu_ps, _mm256_loadu_ps)
KRN_SIMDE_FMA(mm256_fnmadd_ps, __m256, float, 8, fmaf, -, _mm256_storeu_ps, _mm256_loadu_ps)
KRN_SIMDE_FMA(mm256_fmadd_pd, __m256d, double, 4, fma, +, _mm256_storeu_pd, _mm256_loadu_pd)
KRN_SIMDE_FMA(mm256_fnmadd_pd, __m256d, double, 4, fma, -, _mm256_storeu_pd, _mm256_loadu_pd)
KRN_SIMDE_FMA(mm512_fmadd_ps, __m512, float, 16, fmaf, +, _mm512_storeu_ps, _mm512_loadu_ps)
KRN_SIMDE_FMA(mm512_fnmadd_ps, __m512, float, 16, fmaf, -, _mm512_storeu_ps, _mm512_loadu_ps)
KRN_SIMDE_FMA(mm512_fmadd_pd, __m512d, double, 8, fma, +, _mm512_storeu_pd, _mm512_loadu_pd)
KRN_SIMDE_FMA(mm512_fnmadd_pd, __m512d, double, 8, fma, -, _mm512_storeu_pd, _mm512_loadu_pd)
#undef _mm_fmadd_ps
#define _mm_fmadd_ps krn_simde_mm_fmadd_ps
#undef _mm256_fmadd_ps
#define _mm256_fmadd_ps krn_simde_mm256_fmadd_ps
#undef _mm256_fnmadd_ps
#define _mm256_fnmadd_ps krn_simde_mm256_fnmadd_ps
#undef _mm256_fmadd_pd
#define _mm256_fmadd_pd krn_simde_mm256_fmadd_pd
#undef _mm256_fnmadd_pd
#define _mm256_fnmadd_pd krn_simde_mm256_fnmadd_pd
#undef _mm512_fmadd_ps
#define _mm512_fmadd_ps krn_simde_mm512_fmadd_ps
#undef _mm512_fnmadd_ps
#define _mm512_fnmadd_ps krn_simde_mm512_fnmadd_ps
#undef _mm512_fmadd_pd
#define _mm512_fmadd_pd krn_simde_mm512_fmadd_pd
#undef _mm512_fnmadd_pd
#define _mm512_fnmadd_pd krn_simde_mm512_fnmadd_pd

static inline __m256 krn_simde_mm256_mask3_fmadd_ps(__m256 a, __m256 b, __m256 c, __mmask8 k)
{
	float fa[8], fb[8], fc[8];
	_mm256_storeu_ps(fa, a);
	_mm256_storeu_ps(fb, b);
	_mm256_storeu_ps(fc, c);
	for (int i = 0; i < 8; i++)
		if (k >> i & 1)
			fc[i] = fmaf(fa[i], fb[i], fc[i]);
	return _mm256_loadu_ps(fc);
}
#define _mm256_mask3_fmadd_ps krn_simde_mm256_mask3_fmadd_ps

static inline __m512 krn_simde_mm512_mask3_fmadd_ps(__m512 a, __m512 b, __m512 c, __mmask16 k)
{
	float fa[16], fb[16], fc[16];
	_mm512_storeu_ps(fa, a);
	_mm512_storeu_ps(fb, b);
	_mm512_storeu_ps(fc, c);
	for (int i = 0; i < 16; i++)
		if (k >> i & 1)
			fc[i] = fmaf(fa[i], fb[i], fc[i]);
	return _mm512_loadu_ps(fc);
}
#define _mm512_mask3_fmadd_ps krn_simde_mm512_mask3_fmadd_ps

/* vcvtps2dq: round to nearest even (MXCSR's default); NaN and out of range give INT32_MIN */
static inline __m512i krn_simde_mm512_cvtps_epi32(__m512 a)
{
	float f[16];
	int32_t r[16];
	_mm512_storeu_ps(f, a);
	for (int i = 0; i < 16; i++) {
		float v = nearbyintf(f[i]);
		r[i] = v >= -2147483648.0f && v < 2147483648.0f ? (int32_t)v : INT32_MIN;
	}
	return _mm512_loadu_si512(r);
}
#define _mm512_cvtps_epi32 krn_simde_mm512_cvtps_epi32

static inline float krn_simde_mm512_reduce_max_ps(__m512 a)
{
	float f[16];
	_mm512_storeu_ps(f, a);
	float m = f[0];
	for (int i = 1; i < 16; i++)
		m = f[i] > m ? f[i] : m;
	return m;
}
#define _mm512_reduce_max_ps krn_simde_mm512_reduce_max_ps

/* Masked loads and stores touch only the lanes the mask selects, as the instructions do (a
 * tail's lanes past the end of an array are never read or written). */
static inline __m256 krn_simde_mm256_maskz_loadu_ps(__mmask8 k, const void *p)
{
	float r[8] = { 0 };
	for (int i = 0; i < 8; i++)
		if (k >> i & 1)
			r[i] = ((const float *)p)[i];
	return _mm256_loadu_ps(r);
}
#define _mm256_maskz_loadu_ps krn_simde_mm256_maskz_loadu_ps

static inline __m512 krn_simde_mm512_maskz_loadu_ps(__mmask16 k, const void *p)
{
	float r[16] = { 0 };
	for (int i = 0; i < 16; i++)
		if (k >> i & 1)
			r[i] = ((const float *)p)[i];
	return _mm512_loadu_ps(r);
}
#define _mm512_maskz_loadu_ps krn_simde_mm512_maskz_loadu_ps

static inline void krn_simde_mm512_mask_storeu_ps(void *p, __mmask16 k, __m512 a)
{
	float f[16];
	_mm512_storeu_ps(f, a);
	for (int i = 0; i < 16; i++)
		if (k >> i & 1)
			((float *)p)[i] = f[i];
}
#define _mm512_mask_storeu_ps krn_simde_mm512_mask_storeu_ps

/* vmovntps faults on an address that is not 64-byte aligned; so does this */
static inline void krn_simde_mm512_stream_ps(void *p, __m512 a)
{
	if ((uintptr_t)p % 64 != 0)
		__builtin_trap();
	_mm512_storeu_ps(p, a);
}
#define _mm512_stream_ps krn_simde_mm512_stream_ps

static inline __m256 krn_simde_mm512_cvtpd_ps(__m512d a)
{
	double d[8];
	float r[8];
	_mm512_storeu_pd(d, a);
	for (int i = 0; i < 8; i++)
		r[i] = (float)d[i]; /* the current rounding mode, nearest even by default */
	return _mm256_loadu_ps(r);
}
#define _mm512_cvtpd_ps krn_simde_mm512_cvtpd_ps

static inline __m512d krn_simde_mm512_cvtps_pd(__m256 a)
{
	float f[8];
	double r[8];
	_mm256_storeu_ps(f, a);
	for (int i = 0; i < 8; i++)
		r[i] = f[i];
	return _mm512_loadu_pd(r);
}
#define _mm512_cvtps_pd krn_simde_mm512_cvtps_pd

static inline __m256 krn_simde_mm512_extractf32x8_ps(__m512 a, int imm)
{
	float f[16];
	_mm512_storeu_ps(f, a);
	return _mm256_loadu_ps(f + 8 * (imm & 1));
}
#define _mm512_extractf32x8_ps krn_simde_mm512_extractf32x8_ps

/* lanes 2i and 2i + 1 both take lane 2i + 1 */
static inline __m512 krn_simde_mm512_movehdup_ps(__m512 a)
{
	float f[16], r[16];
	_mm512_storeu_ps(f, a);
	for (int i = 0; i < 16; i++)
		r[i] = f[i | 1];
	return _mm512_loadu_ps(r);
}
#define _mm512_movehdup_ps krn_simde_mm512_movehdup_ps

/* vpermilps: lane j of each 128-bit block takes that block's lane (imm >> 2j) & 3 */
static inline __m512 krn_simde_mm512_permute_ps(__m512 a, int imm)
{
	float f[16], r[16];
	_mm512_storeu_ps(f, a);
	for (int i = 0; i < 16; i++)
		r[i] = f[(i & ~3) + (imm >> 2 * (i & 3) & 3)];
	return _mm512_loadu_ps(r);
}
#define _mm512_permute_ps krn_simde_mm512_permute_ps

#endif /* KRN_SIMDE */

#endif
