/* engine/kernels/x86/avx512.c: AVX-512 (F, BW, VL, DQ) kernels.
 *
 * Compiled with only those -m flags; reached only after krn_x86_has_avx512() said yes.
 * What AVX-512 brings here is mask registers: tails use masked loads (a masked-off lane never
 * faults: Intel SDM vol. 1, 15.4.1 "Memory fault suppression"), so no element is read twice and
 * no scalar loop is needed.
 */
#include "simd.h"

#include "exp.h"
#include "ops.h"

/* Lanes [0, n) of a 16-lane vector, for tails; n <= 16. */
static inline __mmask16 tail_mask(size_t n)
{
	return (__mmask16)((1u << n) - 1u);
}

/* Lanes [0, n) of an 8-lane vector, for tails; n <= 8. */
static inline __mmask8 tail_mask8(size_t n)
{
	return (__mmask8)((1u << n) - 1u);
}

static inline float hsum256(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* The reductions that stream weights use 256-bit loads (AVX-512VL gives them masked tails).
 * Measured on Zen 4 (this project's VM, 416 MB, 31 interleaved runs, median of the paired
 * ratios, four sessions): 512-bit loads read 0-5% slower than 256-bit ones and a matvec built
 * on them 0-6% slower, never faster; Zen 4 splits a 512-bit load into two 256-bit halves.
 * Four accumulators, 32 floats (two cache lines) per iteration: enough independent FMAs to
 * hide their latency at any speed memory can deliver. */
static inline float dot(const float *a, const float *b, size_t n)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	__m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
		s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
		s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
	if (i < n) {
		__mmask8 m = tail_mask8(n - i);
		s1 = _mm256_fmadd_ps(_mm256_maskz_loadu_ps(m, a + i), _mm256_maskz_loadu_ps(m, b + i),
				     s1);
	}
	return hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

static float avx512_dot_f32(const float *a, const float *b, size_t n)
{
	return dot(a, b, n);
}

/* One row at a time, so the weights are read as one sequential stream, exactly in address
 * order: the pattern of the bandwidth probe's read kernel. Measured on Zen 4 (this project's
 * VM, 448 MB of weights, n = 768): interleaving 2 or 4 rows to share the loads of x (2 or 4
 * streams 3 KB apart) ran at about half the bandwidth of one stream (15-18 vs 31-34 GB/s),
 * and software prefetching 0.5-8 KB ahead (T0, T1 or NTA) was 0-20% slower than none, on
 * anonymous memory and on the file mapping the engine reads alike. The
 * per-row horizontal sum is off the critical path: the next row's loads do not depend on it. */
static void avx512_matvec_f32(float *y, const float *w, const float *x, size_t n, size_t r0,
			      size_t r1)
{
	for (size_t r = r0; r < r1; r++)
		y[r] = dot(w + r * n, x, n);
}

/* The low 256 bits of a and b side by side, plus their high 256 bits side by side. */
static inline __m512 add_halves(__m512 a, __m512 b)
{
	return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xee));
}

/* Four rows' sums of one token into y[0..3], each exactly dot()'s: the same additions of the
 * same chains as the one-row reduction below, four rows to a register. Row r's lo is
 * (s0 | s1) and hi (s2 | s3), 256 bits each; dot() sums u = (s0 + s1) + (s2 + s3), then
 * u's 128-bit halves, then lanes (0 + 2) + (1 + 3). Shuffling 128-bit blocks lines the rows
 * up so that each step is one 512-bit add for two or four rows: 15 vector operations for
 * four sums, where one row at a time takes about 11 each. Measured (-O3 -march=native, this
 * VM, stories110M's shapes, 128 tokens): matmul_f32 from 92 to 97 GFLOP/s. */
static inline __attribute__((always_inline)) void
mm_sum4(float *y, __m512 lo0, __m512 hi0, __m512 lo1, __m512 hi1, __m512 lo2, __m512 hi2,
	__m512 lo3, __m512 hi3)
{
	/* u = (s0 + s1) + (s2 + s3) of rows 0 and 1 side by side, then of rows 2 and 3. */
	__m512 u01 = _mm512_add_ps(add_halves(lo0, lo1), add_halves(hi0, hi1));
	__m512 u23 = _mm512_add_ps(add_halves(lo2, lo3), add_halves(hi2, hi3));
	/* Each u's low 128 bits plus its high 128 bits: row r's four lanes in block r. */
	__m512 v = _mm512_add_ps(_mm512_shuffle_f32x4(u01, u23, 0x88),
				 _mm512_shuffle_f32x4(u01, u23, 0xdd));
	v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xee)); /* lanes 0 + 2 and 1 + 3 */
	v = _mm512_add_ps(v, _mm512_movehdup_ps(v));	    /* their sum, in lane 0 of each block */
	__m512i first = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
	_mm_storeu_ps(y, _mm512_castps512_ps128(_mm512_permutexvar_ps(first, v)));
}

/* matmul_f32: nr rows by nt tokens at once (constants after inlining), each pair summed
 * exactly as dot() sums it, so every result has dot()'s bits. dot()'s four 8-lane chains are
 * held as two 16-lane registers, lo = (s0 | s1) and hi = (s2 | s3): a 512-bit FMA over
 * columns [i, i + 16) is lane for lane the two 256-bit FMAs dot() does there, and the chains
 * are split back into 256-bit halves for dot()'s own tail and sum. Each 64-byte load of a row
 * (a token) serves nt (nr) FMAs: 4 rows by 3 tokens is 14 loads for 24 FMAs per 32 columns,
 * 24 accumulators and 4 operands of the 32 registers. */
/* v, which the compiler must now hold in a register: GCC otherwise folds a token's load into
 * every FMA that uses it (a memory operand each), three loads where one serves. */
#ifndef KRN_SIMDE
static inline __m512 in_register(__m512 v)
{
	__asm__("" : "+v"(v));
	return v;
}
#else /* SIMDe's __m512 (simd.h) is 64 bytes of C, which no AVX2 register holds */
static inline __m512 in_register(__m512 v)
{
	return v;
}
#endif

static inline __attribute__((always_inline)) void
mm_tile(float *y, size_t ldy, const float *w, const float *x, size_t ldx, size_t n, int nr,
	int nt)
{
	__m512 lo[4][3], hi[4][3];
	for (int r = 0; r < nr; r++)
		for (int t = 0; t < nt; t++)
			lo[r][t] = hi[r][t] = _mm512_setzero_ps();
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		/* One half at a time: 24 accumulators, 3 tokens and 1 row in registers. */
		__m512 xv[3];
		for (int t = 0; t < nt; t++)
			xv[t] = in_register(_mm512_loadu_ps(x + (size_t)t * ldx + i));
		for (int r = 0; r < nr; r++) {
			__m512 wv = in_register(_mm512_loadu_ps(w + (size_t)r * n + i));
			for (int t = 0; t < nt; t++)
				lo[r][t] = _mm512_fmadd_ps(wv, xv[t], lo[r][t]);
		}
		for (int t = 0; t < nt; t++)
			xv[t] = in_register(_mm512_loadu_ps(x + (size_t)t * ldx + i + 16));
		for (int r = 0; r < nr; r++) {
			__m512 wv = in_register(_mm512_loadu_ps(w + (size_t)r * n + i + 16));
			for (int t = 0; t < nt; t++)
				hi[r][t] = _mm512_fmadd_ps(wv, xv[t], hi[r][t]);
		}
	}
	/* dot()'s tail, still in the 16-lane registers so nothing leaves them (spilled, their
	 * 256-bit halves reloaded from the stack cost more than the loop): the 8-column steps
	 * into s0, lanes 0-7 of lo, and the last columns into s1, lanes 8-15, each by a masked
	 * FMA, lane for lane dot()'s. Masked-off lanes load nothing, so w + i - 8 never
	 * faults. */
	for (; i + 8 <= n; i += 8) {
		__m512 xv[3];
		for (int t = 0; t < nt; t++)
			xv[t] = in_register(_mm512_maskz_loadu_ps(0x00ff, x + (size_t)t * ldx + i));
		for (int r = 0; r < nr; r++) {
			__m512 wv = in_register(_mm512_maskz_loadu_ps(0x00ff, w + (size_t)r * n + i));
			for (int t = 0; t < nt; t++)
				lo[r][t] = _mm512_mask3_fmadd_ps(wv, xv[t], lo[r][t], 0x00ff);
		}
	}
	if (i < n) {
		__mmask16 m = (__mmask16)(tail_mask8(n - i) << 8);
		__m512 xv[3];
		for (int t = 0; t < nt; t++)
			xv[t] = in_register(_mm512_maskz_loadu_ps(m, x + (size_t)t * ldx + i - 8));
		for (int r = 0; r < nr; r++) {
			__m512 wv = in_register(_mm512_maskz_loadu_ps(m, w + (size_t)r * n + i - 8));
			for (int t = 0; t < nt; t++)
				lo[r][t] = _mm512_mask3_fmadd_ps(wv, xv[t], lo[r][t], m);
		}
	}
	if (nr == 4) {
		for (int t = 0; t < nt; t++)
			mm_sum4(y + (size_t)t * ldy, lo[0][t], hi[0][t], lo[1][t], hi[1][t],
				lo[2][t], hi[2][t], lo[3][t], hi[3][t]);
		return;
	}
	for (int r = 0; r < nr; r++)
		for (int t = 0; t < nt; t++) {
			__m256 s01 = _mm256_add_ps(_mm512_castps512_ps256(lo[r][t]),
						   _mm512_extractf32x8_ps(lo[r][t], 1));
			__m256 s23 = _mm256_add_ps(_mm512_castps512_ps256(hi[r][t]),
						   _mm512_extractf32x8_ps(hi[r][t], 1));
			y[(size_t)t * ldy + (size_t)r] = hsum256(_mm256_add_ps(s01, s23));
		}
}

#define MM_TILE_ROWS 4
#define MM_ROWS_OUTER 16384
#include "matmul_f32.h"

/* exp.h's e^x for eight doubles: the same operations as ref.c's, with vscalefpd for the
 * 2^k. max and min return their second operand when either is NaN, so NaN passes. */
static inline __m512d exp8(__m512d d)
{
	static const double taylor[KRN_EXP_TERMS] = KRN_EXP_TAYLOR;
	d = _mm512_min_pd(_mm512_set1_pd(KRN_EXP_CLAMP),
			  _mm512_max_pd(_mm512_set1_pd(-KRN_EXP_CLAMP), d));
	__m512d k = _mm512_roundscale_pd(_mm512_mul_pd(d, _mm512_set1_pd(KRN_EXP_INVLN2)),
					 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(KRN_EXP_LN2_HI), d);
	r = _mm512_fnmadd_pd(k, _mm512_set1_pd(KRN_EXP_LN2_LO), r);
	__m512d p = _mm512_set1_pd(taylor[0]);
	for (int j = 1; j < KRN_EXP_TERMS; j++)
		p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(taylor[j]));
	p = _mm512_fmadd_pd(_mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0)), r, _mm512_set1_pd(1.0));
	return _mm512_scalef_pd(p, k);
}

/* exp.h's e^x for 16 floats, in two halves of eight doubles. */
static inline __m512 exp16(__m512 x)
{
	__m256 lo = _mm512_cvtpd_ps(exp8(_mm512_cvtps_pd(_mm512_castps512_ps256(x))));
	__m256 hi = _mm512_cvtpd_ps(exp8(_mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1))));
	return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

/* ops.h's silu_glu on 16 lanes: e^-g by exp16, the rest in float. */
static inline __m512 silu_glu16(__m512 g, __m512 u)
{
	__m512 m = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(g),
							_mm512_set1_epi32((int)0x80000000u)));
	__m512 e = exp16(m);
	__m512 one = _mm512_set1_ps(1.0f);
	return _mm512_mul_ps(_mm512_mul_ps(g, _mm512_div_ps(one, _mm512_add_ps(one, e))), u);
}

/* The tail by masks, so each lane goes through the same instructions wherever it sits. */
static void avx512_silu_glu(float *g, const float *u, size_t n)
{
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(g + i, silu_glu16(_mm512_loadu_ps(g + i), _mm512_loadu_ps(u + i)));
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		_mm512_mask_storeu_ps(g + i, m, silu_glu16(_mm512_maskz_loadu_ps(m, g + i),
							   _mm512_maskz_loadu_ps(m, u + i)));
	}
}

/* The sum in 16 lanes (the tail's into its own lanes only), then dot()'s way across them. */
static float avx512_exp_sub(float *x, float sub, size_t n)
{
	__m512 s = _mm512_set1_ps(sub), sum = _mm512_setzero_ps();
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), s));
		_mm512_storeu_ps(x + i, e);
		sum = _mm512_add_ps(sum, e);
	}
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		__m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), s));
		_mm512_mask_storeu_ps(x + i, m, e);
		sum = _mm512_mask_add_ps(sum, m, sum, e);
	}
	return hsum256(_mm256_add_ps(_mm512_castps512_ps256(sum), _mm512_extractf32x8_ps(sum, 1)));
}

static void avx512_axpy_f32(float *y, float a, const float *x, size_t n)
{
	__m512 av = _mm512_set1_ps(a);
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, _mm512_loadu_ps(x + i),
							_mm512_loadu_ps(y + i)));
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		__m512 v = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i),
					   _mm512_maskz_loadu_ps(m, y + i));
		_mm512_mask_storeu_ps(y + i, m, v);
	}
}

/* ---- Streaming ---------------------------------------------------------------------------- */

/* 256-bit loads, as in dot() above and for the same measured reason. */
static float avx512_stream_read(const float *a, size_t n)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	__m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		s0 = _mm256_add_ps(s0, _mm256_loadu_ps(a + i));
		s1 = _mm256_add_ps(s1, _mm256_loadu_ps(a + i + 8));
		s2 = _mm256_add_ps(s2, _mm256_loadu_ps(a + i + 16));
		s3 = _mm256_add_ps(s3, _mm256_loadu_ps(a + i + 24));
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_add_ps(s0, _mm256_loadu_ps(a + i));
	if (i < n)
		s1 = _mm256_add_ps(s1, _mm256_maskz_loadu_ps(tail_mask8(n - i), a + i));
	return hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

static void avx512_stream_copy(float *dst, const float *src, size_t n)
{
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(dst + i, _mm512_loadu_ps(src + i));
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		_mm512_mask_storeu_ps(dst + i, m, _mm512_maskz_loadu_ps(m, src + i));
	}
}

static void avx512_stream_triad(float *a, const float *b, const float *c, float s, size_t n)
{
	__m512 sv = _mm512_set1_ps(s);
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(a + i, _mm512_fmadd_ps(sv, _mm512_loadu_ps(c + i),
							_mm512_loadu_ps(b + i)));
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		__m512 v = _mm512_fmadd_ps(sv, _mm512_maskz_loadu_ps(m, c + i),
					   _mm512_maskz_loadu_ps(m, b + i));
		_mm512_mask_storeu_ps(a + i, m, v);
	}
}

/* Floats before p reaches the next 64-byte boundary: a 512-bit non-temporal store must be
 * aligned, so the head before it (and the tail after) go through plain stores. p is at least
 * float-aligned, as every float pointer is. */
static inline size_t head_to_align64(const float *p, size_t n)
{
	size_t h = ((64 - ((uintptr_t)p & 63)) & 63) / sizeof(float);
	return h < n ? h : n;
}

static void avx512_stream_copy_nt(float *dst, const float *src, size_t n)
{
	size_t i = head_to_align64(dst, n);
	avx512_stream_copy(dst, src, i);
	for (; i + 16 <= n; i += 16)
		_mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
	avx512_stream_copy(dst + i, src + i, n - i);
	_mm_sfence();
}

static void avx512_stream_triad_nt(float *a, const float *b, const float *c, float s, size_t n)
{
	__m512 sv = _mm512_set1_ps(s);
	size_t i = head_to_align64(a, n);
	avx512_stream_triad(a, b, c, s, i);
	for (; i + 16 <= n; i += 16)
		_mm512_stream_ps(a + i, _mm512_fmadd_ps(sv, _mm512_loadu_ps(c + i),
							_mm512_loadu_ps(b + i)));
	avx512_stream_triad(a + i, b + i, c + i, s, n - i);
	_mm_sfence();
}

const struct krn_ops krn_ops_avx512 = {
	.name = "avx512",
	.supported = krn_x86_has_avx512,
	.matvec_f32 = avx512_matvec_f32,
	.matmul_f32 = mm_f32,
	.dot_f32 = avx512_dot_f32,
	.axpy_f32 = avx512_axpy_f32,
	.silu_glu = avx512_silu_glu,
	.exp_sub = avx512_exp_sub,
	.stream_read = avx512_stream_read,
	.stream_copy = avx512_stream_copy,
	.stream_copy_nt = avx512_stream_copy_nt,
	.stream_triad = avx512_stream_triad,
	.stream_triad_nt = avx512_stream_triad_nt,
};
