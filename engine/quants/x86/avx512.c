/* engine/quants/x86/avx512.c: the quant dot products for AVX-512 with VNNI (Ice Lake, Zen 4
 * and later), on 256-bit registers through AVX512VL.
 *
 * The kernels live in dot256.h; this file supplies the integer primitives, where VNNI fuses
 * what AVX2 needs two or three instructions for: vpdpbusd (u8 x s8, four products summed
 * into int32, accumulated) and vpdpwssd (s16 x s16 pairs into int32, accumulated). q5_0, the
 * bulk of Falcon-7B Q4_K_M, has a kernel of its own below.
 */
#include "internal.h"
#include "x8_kernels.h"
#include "act_sums.h"

#include "kernels/x86/simd.h"

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

#define DOT256_OWN_Q5_0 /* q5_0 is defined below */
#define DOT256_AHEAD 0 /* avx2.c's prefetch: not measured on an AVX-512 machine (none here), and
			  on Zen 4 the x8 kernels streamed slower with it (avx512_x8k.c) */
#include "dot256.h"

/* ---- q5_0 ------------------------------------------------------------------------------ */

/* q5_0 two blocks at a time. dot256.h's legacy kernel, one block a ymm, runs on Zen 4 at
 * about 1 ns a block whether in L2 or not: bound by the vector instructions executed, plus
 * the qh bits' trip through a mask register (a quarter of its time). Here one ymm holds the
 * low nibbles (elements 0-15) of two blocks and another their high nibbles (16-31), against
 * activation bytes prepared in that order, so the two dpbusd leave each block's sum in one
 * 128-bit half and the float tail (convert, multiply, FMA) runs once per two blocks. Measured
 * on Zen 4, a shared machine: the same speed in cache (within 4%), 1.08x from DRAM in
 * tests/bench_quants (4096 columns) and 1.15x at Falcon's 4544; 512-bit versions of either
 * layout were no faster. The summation order differs from the legacy kernel's, so vec_dot
 * goes through it too (slower than the legacy one: it prepares the activation per call). */
#define Q5_PAIRS (LEGACY_PREPARED / 2)

/* The activation of blocks i and i + 1, i even (y1 == y0 for a row's odd last block): the
 * quants split as the weights are, minus 16 * their sum per 128-bit half, the scale per half.
 * 32 KB of stack. */
struct q5_act {
	__m256i lo, hi, base;
	__m256 dy;
};

static inline __attribute__((always_inline)) void
q5_act_pair(const block_q8_0 *y0, const block_q8_0 *y1, struct q5_act *a)
{
	const __m256i sixteen = _mm256_set1_epi8(16);
	__m256i l = loadu(y0->qs), h = loadu(y1->qs);
	a->lo = _mm256_permute2x128_si256(l, h, 0x20);
	a->hi = _mm256_permute2x128_si256(l, h, 0x31);
	__m256i sum = dot_u8s8_acc(dot_u8s8(sixteen, a->lo), sixteen, a->hi);
	a->base = _mm256_sub_epi32(_mm256_setzero_si256(), sum);
	a->dy = _mm256_set_m128(_mm_set1_ps(half(y1->d)), _mm_set1_ps(half(y0->d)));
}

/* acc + d_x * (d_y * dot) for blocks i and i + 1 of a row (x points at block i), or for block
 * i alone (`two` false: the upper half then repeats it and is kept out of acc). A NULL `a`
 * prepares the activation here, to the same bits. */
static inline __attribute__((always_inline)) __m256
q5_pair(__m256 acc, const uint8_t *x, bool two, const block_q8_0 *y, const struct q5_act *a,
	size_t i)
{
	const __m256i low4 = _mm256_set1_epi8(0x0f), sixteen = _mm256_set1_epi8(16);
	const block_q5_0 *b0 = (const block_q5_0 *)(const void *)x;
	const block_q5_0 *b1 = two ? b0 + 1 : b0;
	struct q5_act own;
	if (!a) {
		q5_act_pair(&y[i], two ? &y[i + 1] : &y[i], &own);
		a = &own;
	} else {
		a += i / 2;
	}
	/* the fifth bits as bytes, in the order of the quants (elements 0-15 of each block, then
	 * 16-31): the bytes of both qh spread by a shuffle of one load that holds them (in its
	 * low half at 0-3, in its high half at 6-9), then each byte's own bit tested. On Zen 4
	 * this beat moving the bits to a mask register, which cost a quarter of the kernel. */
	const __m256i lo_ctl = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0606060606060606,
						  0x0707070707070707);
	const __m256i hi_ctl = _mm256_setr_epi64x(0x0202020202020202, 0x0303030303030303,
						  0x0808080808080808, 0x0909090909090909);
	const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
	uint32_t h0;
	memcpy(&h0, b0->qh, sizeof(h0));
	__m256i hb = two ? loadu(b0->qh) : _mm256_set1_epi32((int)h0);
	__m256i hl = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(hb, lo_ctl), bit), bit);
	__m256i hh = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(hb, hi_ctl), bit), bit);
	__m256i q = _mm256_loadu2_m128i((const __m128i *)(const void *)b1->qs,
					(const __m128i *)(const void *)b0->qs);
	/* nibble | (fifth bit & 16): ternary-logic table A | (B & C) */
	__m256i ql = _mm256_ternarylogic_epi32(_mm256_and_si256(q, low4), hl, sixteen, 0xf8);
	__m256i qh = _mm256_ternarylogic_epi32(_mm256_and_si256(_mm256_srli_epi16(q, 4), low4), hh,
					       sixteen, 0xf8);
	__m256i p = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(a->base, ql, a->lo), qh, a->hi);
	__m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(p), a->dy);
	__m256 dx = _mm256_set_m128(_mm_set1_ps(half(b1->d)), _mm_set1_ps(half(b0->d)));
	return two ? _mm256_fmadd_ps(dx, f, acc) : _mm256_mask3_fmadd_ps(dx, f, acc, 0x0f);
}

/* One row: pairs into two accumulators by turns (two FMA chains, as legacy_row). */
static inline __attribute__((always_inline)) float
q5_row(const uint8_t *x, const block_q8_0 *y, const struct q5_act *a, size_t nb)
{
	const size_t xs = sizeof(block_q5_0);
	__m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 4 <= nb; i += 4, x += 4 * xs) {
		acc0 = q5_pair(acc0, x, true, y, a, i);
		acc1 = q5_pair(acc1, x + 2 * xs, true, y, a, i + 2);
	}
	if (i + 2 <= nb) {
		acc0 = q5_pair(acc0, x, true, y, a, i);
		i += 2;
		x += 2 * xs;
	}
	if (i < nb)
		acc1 = q5_pair(acc1, x, false, y, a, i);
	return hsum_ps(_mm256_add_ps(acc0, acc1));
}

static void dot_q5_0(size_t n, float *s, const void *vx, const void *vy)
{
	*s = q5_row(vx, vy, NULL, n / KRN_QK);
}

/* One row at a time, as legacy_matvec and for the same reason. */
static void matvec_q5_0(float *out, const void *w, size_t row_bytes, const void *xq, size_t n,
			size_t r0, size_t r1)
{
	const uint8_t *p = (const uint8_t *)w + r0 * row_bytes;
	const block_q8_0 *y = xq;
	const size_t nb = n / KRN_QK;
	if (nb > LEGACY_PREPARED) {
		for (size_t r = r0; r < r1; r++, p += row_bytes)
			out[r] = q5_row(p, y, NULL, nb);
		return;
	}
	struct q5_act a[Q5_PAIRS];
	for (size_t i = 0; i < nb; i += 2)
		q5_act_pair(&y[i], i + 1 < nb ? &y[i + 1] : &y[i], &a[i / 2]);
	for (size_t r = r0; r < r1; r++, p += row_bytes)
		out[r] = q5_row(p, y, a, nb);
}

/* ---- Activation quantizers ---------------------------------------------------------------- */

/* The largest |x| of 32 floats (at p), and the mask of the elements that reach it. */
static inline float absmax32(const float *p, __mmask32 *at)
{
	const __m512 sign = _mm512_set1_ps(-0.0f);
	__m512 a = _mm512_andnot_ps(sign, _mm512_loadu_ps(p));
	__m512 b = _mm512_andnot_ps(sign, _mm512_loadu_ps(p + 16));
	float amax = _mm512_reduce_max_ps(_mm512_max_ps(a, b));
	__m512 m = _mm512_set1_ps(amax);
	*at = (__mmask32)_mm512_cmpeq_ps_mask(a, m) | (__mmask32)_mm512_cmpeq_ps_mask(b, m) << 16;
	return amax;
}

/* 32 floats times s, rounded half to even (the default MXCSR mode, as nearbyintf and ggml's
 * magic-number round), as bytes; |x * s| <= 127 here, so the narrowing never saturates. */
static inline __m256i round32(const float *p, __m512 s)
{
	__m512i a = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(p), s));
	__m512i b = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(p + 16), s));
	return _mm256_set_m128i(_mm512_cvtsepi32_epi8(b), _mm512_cvtsepi32_epi8(a));
}

/* ref.c's krn_ref_act_q8_0, to the same bytes (test_quants compares them): the scalar one
 * calls libm's nearbyintf per element, a few percent of a stories110M decode step. */
static void act_q8_0(const float *x, void *vy, size_t n)
{
	block_q8_0 *y = vy;
	for (size_t i = 0; i < n / KRN_QK; i++, x += KRN_QK) {
		__mmask32 at;
		float amax = absmax32(x, &at);
		float id = amax != 0.0f ? 127.f / amax : 0.0f;
		y[i].d = krn_fp32_to_fp16(amax / 127.f);
		_mm256_storeu_si256((__m256i *)(void *)y[i].qs, round32(x, _mm512_set1_ps(id)));
	}
}

/* ref.c's krn_ref_act_q8_K, to the same bytes: the scale comes from the first element of the
 * largest magnitude, with its sign. The block's largest magnitude is found with one
 * horizontal reduction, not one per 32 elements, and the sixteen sums of 16 quants come out
 * of two hadd rounds per four chunks, not out of memory by scalar adds (act_q8_K had been 2%
 * of a stories110M q4_K_M prefill at 1 thread, 3.4% at 2, where each thread quantizes every
 * token; perf record -e cpu-clock). */
static void act_q8_K(const float *x, void *vy, size_t n)
{
	block_q8_K *y = vy;
	const __m512 sign = _mm512_set1_ps(-0.0f);
	for (size_t i = 0; i < n / KRN_QK_K; i++, x += KRN_QK_K) {
		__m512 mx = _mm512_setzero_ps();
		for (int c = 0; c < KRN_QK_K; c += 16)
			mx = _mm512_max_ps(mx, _mm512_andnot_ps(sign, _mm512_loadu_ps(x + c)));
		float amax = _mm512_reduce_max_ps(mx), max = 0.0f;
		memset(&y[i], 0, sizeof(y[i]));
		if (amax == 0.0f)
			continue;
		const __m512 m = _mm512_set1_ps(amax);
		for (int c = 0; c < KRN_QK_K; c += 16) {
			__mmask16 at = _mm512_cmpeq_ps_mask(
				_mm512_andnot_ps(sign, _mm512_loadu_ps(x + c)), m);
			if (at) {
				max = x[c + __builtin_ctz(at)];
				break;
			}
		}
		float iscale = -127.f / max;
		__m256i q[8];
		for (int c = 0; c < KRN_QK_K; c += 32)
			q[c / 32] = round32(x + c, _mm512_set1_ps(iscale));
		q8_K_finish(&y[i], q, iscale);
	}
}

const struct krn_quant_ops krn_quant_ops_avx512 = {
	.name = "avx512",
	.supported = krn_x86_has_avx512_icl,
	.base = &krn_quant_ops_avx2,
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
		/* avx512_x8f.c */
		[KRN_TYPE_F16] = krn_avx512_matvec_x8_f16,
		[KRN_TYPE_BF16] = krn_avx512_matvec_x8_bf16,
		/* avx512_x8l.c */
		[KRN_TYPE_Q4_0] = krn_avx512_matvec_x8_q4_0,
		[KRN_TYPE_Q5_0] = krn_avx512_matvec_x8_q5_0,
		[KRN_TYPE_Q8_0] = krn_avx512_matvec_x8_q8_0,
		[KRN_TYPE_Q4_1] = krn_avx512_matvec_x8_q4_1,
		[KRN_TYPE_Q5_1] = krn_avx512_matvec_x8_q5_1,
		/* avx512_x8k.c */
		[KRN_TYPE_Q2_K] = krn_avx512_matvec_x8_q2_K,
		[KRN_TYPE_Q3_K] = krn_avx512_matvec_x8_q3_K,
		[KRN_TYPE_Q4_K] = krn_avx512_matvec_x8_q4_K,
		[KRN_TYPE_Q5_K] = krn_avx512_matvec_x8_q5_K,
		[KRN_TYPE_Q6_K] = krn_avx512_matvec_x8_q6_K,
	},
	.matmul_x8 = {
		[KRN_TYPE_F16] = krn_avx512_matmul_x8_f16,
		[KRN_TYPE_BF16] = krn_avx512_matmul_x8_bf16,
		[KRN_TYPE_Q2_K] = krn_avx512_matmul_x8_q2_K,
		[KRN_TYPE_Q3_K] = krn_avx512_matmul_x8_q3_K,
		[KRN_TYPE_Q4_0] = krn_avx512_matmul_x8_q4_0,
		[KRN_TYPE_Q5_0] = krn_avx512_matmul_x8_q5_0,
		[KRN_TYPE_Q8_0] = krn_avx512_matmul_x8_q8_0,
		[KRN_TYPE_Q4_1] = krn_avx512_matmul_x8_q4_1,
		[KRN_TYPE_Q5_1] = krn_avx512_matmul_x8_q5_1,
		[KRN_TYPE_Q4_K] = krn_avx512_matmul_x8_q4_K,
		[KRN_TYPE_Q5_K] = krn_avx512_matmul_x8_q5_K,
		[KRN_TYPE_Q6_K] = krn_avx512_matmul_x8_q6_K,
	},
};
