/* engine/kernels/x86/avx2.c: AVX2 + FMA kernels.
 *
 * Compiled with only -mavx2 -mfma (and -mno-avx512f, so a -march=native build cannot slip
 * AVX-512 instructions in); reached only after krn_x86_has_avx2() said yes. Tails use
 * VMASKMOVPS, whose masked-off lanes never fault (Intel SDM vol. 2, VMASKMOV), so no element is
 * read twice and no scalar loop is needed.
 */
#include "simd.h"

#include "exp.h"
#include "ops.h"

/* Lanes [0, n) of an 8-lane vector, n <= 8: a sliding window over eight -1s then eight 0s. */
static inline __m256i tail_mask(size_t n)
{
	static const int32_t window[16] = { -1, -1, -1, -1, -1, -1, -1, -1 };
	return _mm256_loadu_si256((const __m256i *)(const void *)(window + 8 - n));
}

static inline float hsum(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* Four accumulators of 8 lanes, 32 floats (two cache lines) per iteration: enough
 * independent FMAs to hide their latency at any speed memory can deliver. */
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
		__m256i m = tail_mask(n - i);
		s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), s1);
	}
	return hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

static float avx2_dot_f32(const float *a, const float *b, size_t n)
{
	return dot(a, b, n);
}

/* One row at a time: the weights are one sequential read stream, the pattern of the bandwidth
 * probe's read kernel. Interleaving rows to share the loads of x measured about half as fast
 * (see x86/avx512.c). */
static void avx2_matvec_f32(float *y, const float *w, const float *x, size_t n, size_t r0,
			    size_t r1)
{
	for (size_t r = r0; r < r1; r++)
		y[r] = dot(w + r * n, x, n);
}

/* v, which the compiler must now hold in a register: GCC otherwise folds a load into every
 * FMA that uses it (a memory operand each). */
static inline __m256 in_register(__m256 v)
{
	__asm__("" : "+x"(v));
	return v;
}

/* Chains c and c + 1 of dot()'s four (columns 8c to 8c + 16 of every 32) for nr rows by nt
 * tokens, summed as dot() sums them. Sixteen registers do not hold all four chains of a
 * 2 x 3 tile, so a tile runs two of these: each reads its own cache line of every 128 bytes,
 * so the two passes read no line twice from L2. 12 accumulators, 2 rows and 1 token in
 * registers: 5 loads for 6 FMAs, where the one-token kernel needs 2 loads per FMA. */
static inline __attribute__((always_inline)) void
mm_chains(__m256 s[2][3][2], const float *w, const float *x, size_t ldx, size_t n, int c,
	  int nr, int nt)
{
	for (size_t i = 0; i + 32 <= n; i += 32)
		for (int j = 0; j < 2; j++) {
			size_t o = i + 8 * (size_t)(c + j);
			__m256 wv[2];
			for (int r = 0; r < nr; r++)
				wv[r] = in_register(_mm256_loadu_ps(w + (size_t)r * n + o));
			for (int t = 0; t < nt; t++) {
				__m256 xv = in_register(_mm256_loadu_ps(x + (size_t)t * ldx + o));
				for (int r = 0; r < nr; r++)
					s[r][t][j] = _mm256_fmadd_ps(wv[r], xv, s[r][t][j]);
			}
		}
}

/* matmul_f32: nr rows by nt tokens, every result with dot()'s bits. */
static inline __attribute__((always_inline)) void
mm_tile(float *y, size_t ldy, const float *w, const float *x, size_t ldx, size_t n, int nr,
	int nt)
{
	__m256 lo[2][3][2], hi[2][3][2];
	for (int r = 0; r < nr; r++)
		for (int t = 0; t < nt; t++)
			for (int j = 0; j < 2; j++)
				lo[r][t][j] = hi[r][t][j] = _mm256_setzero_ps();
	mm_chains(lo, w, x, ldx, n, 0, nr, nt);
	mm_chains(hi, w, x, ldx, n, 2, nr, nt);
	size_t i0 = n / 32 * 32;
	for (int r = 0; r < nr; r++)
		for (int t = 0; t < nt; t++) {
			const float *wr = w + (size_t)r * n, *xt = x + (size_t)t * ldx;
			__m256 s0 = lo[r][t][0], s1 = lo[r][t][1], s2 = hi[r][t][0], s3 = hi[r][t][1];
			size_t i = i0;
			for (; i + 8 <= n; i += 8)
				s0 = _mm256_fmadd_ps(_mm256_loadu_ps(wr + i), _mm256_loadu_ps(xt + i), s0);
			if (i < n) {
				__m256i m = tail_mask(n - i);
				s1 = _mm256_fmadd_ps(_mm256_maskload_ps(wr + i, m),
						     _mm256_maskload_ps(xt + i, m), s1);
			}
			y[(size_t)t * ldy + (size_t)r] =
				hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
		}
}

#define MM_TILE_ROWS 2
#define MM_ROWS_OUTER 0
#include "matmul_f32.h"

static void avx2_axpy_f32(float *y, float a, const float *x, size_t n)
{
	__m256 av = _mm256_set1_ps(a);
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i),
							_mm256_loadu_ps(y + i)));
	if (i < n) {
		__m256i m = tail_mask(n - i);
		__m256 v = _mm256_fmadd_ps(av, _mm256_maskload_ps(x + i, m),
					   _mm256_maskload_ps(y + i, m));
		_mm256_maskstore_ps(y + i, m, v);
	}
}

/* ---- Streaming ---------------------------------------------------------------------------- */

/* exp.h's e^x for four doubles, ref.c's operations: NaN passes the clamp (max and min return
 * their second operand when either is NaN) and 2^k is built from its exponent field. */
static inline __m256d exp4(__m256d d)
{
	static const double taylor[KRN_EXP_TERMS] = KRN_EXP_TAYLOR;
	d = _mm256_min_pd(_mm256_set1_pd(KRN_EXP_CLAMP),
			  _mm256_max_pd(_mm256_set1_pd(-KRN_EXP_CLAMP), d));
	__m256d k = _mm256_round_pd(_mm256_mul_pd(d, _mm256_set1_pd(KRN_EXP_INVLN2)),
				    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256d r = _mm256_fnmadd_pd(k, _mm256_set1_pd(KRN_EXP_LN2_HI), d);
	r = _mm256_fnmadd_pd(k, _mm256_set1_pd(KRN_EXP_LN2_LO), r);
	__m256d p = _mm256_set1_pd(taylor[0]);
	for (int j = 1; j < KRN_EXP_TERMS; j++)
		p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(taylor[j]));
	p = _mm256_fmadd_pd(_mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0)), r, _mm256_set1_pd(1.0));
	__m256i e = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k));
	e = _mm256_slli_epi64(_mm256_add_epi64(e, _mm256_set1_epi64x(1023)), 52);
	return _mm256_mul_pd(p, _mm256_castsi256_pd(e));
}

/* exp.h's e^x for eight floats, in two halves of four doubles. */
static inline __m256 exp8f(__m256 x)
{
	__m128 lo = _mm256_cvtpd_ps(exp4(_mm256_cvtps_pd(_mm256_castps256_ps128(x))));
	__m128 hi = _mm256_cvtpd_ps(exp4(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))));
	return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
}

/* ops.h's silu_glu on 8 lanes: e^-g by exp8f, the rest in float. */
static inline __m256 silu_glu8(__m256 g, __m256 u)
{
	__m256 m = _mm256_xor_ps(g, _mm256_set1_ps(-0.0f));
	__m256 e = exp8f(m);
	__m256 one = _mm256_set1_ps(1.0f);
	return _mm256_mul_ps(_mm256_mul_ps(g, _mm256_div_ps(one, _mm256_add_ps(one, e))), u);
}

/* The tail by masks, so each lane goes through the same instructions wherever it sits. */
static void avx2_silu_glu(float *g, const float *u, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(g + i, silu_glu8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
	if (i < n) {
		__m256i m = tail_mask(n - i);
		_mm256_maskstore_ps(g + i, m, silu_glu8(_mm256_maskload_ps(g + i, m),
							_mm256_maskload_ps(u + i, m)));
	}
}

/* The sum in 8 lanes (the tail's into its own lanes only), then across them. */
static float avx2_exp_sub(float *x, float sub, size_t n)
{
	__m256 s = _mm256_set1_ps(sub), sum = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 e = exp8f(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
		_mm256_storeu_ps(x + i, e);
		sum = _mm256_add_ps(sum, e);
	}
	if (i < n) {
		__m256i m = tail_mask(n - i);
		__m256 e = exp8f(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), s));
		_mm256_maskstore_ps(x + i, m, e);
		sum = _mm256_add_ps(sum, _mm256_and_ps(e, _mm256_castsi256_ps(m)));
	}
	return hsum(sum);
}

static float avx2_stream_read(const float *a, size_t n)
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
		s1 = _mm256_add_ps(s1, _mm256_maskload_ps(a + i, tail_mask(n - i)));
	return hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

static void avx2_stream_copy(float *dst, const float *src, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i, _mm256_loadu_ps(src + i));
	if (i < n) {
		__m256i m = tail_mask(n - i);
		_mm256_maskstore_ps(dst + i, m, _mm256_maskload_ps(src + i, m));
	}
}

static void avx2_stream_triad(float *a, const float *b, const float *c, float s, size_t n)
{
	__m256 sv = _mm256_set1_ps(s);
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(a + i, _mm256_fmadd_ps(sv, _mm256_loadu_ps(c + i),
							_mm256_loadu_ps(b + i)));
	if (i < n) {
		__m256i m = tail_mask(n - i);
		__m256 v = _mm256_fmadd_ps(sv, _mm256_maskload_ps(c + i, m),
					   _mm256_maskload_ps(b + i, m));
		_mm256_maskstore_ps(a + i, m, v);
	}
}

/* Floats before p reaches the next 32-byte boundary: a 256-bit non-temporal store must be
 * aligned, so the head before it (and the tail after) go through plain stores. */
static inline size_t head_to_align32(const float *p, size_t n)
{
	size_t h = ((32 - ((uintptr_t)p & 31)) & 31) / sizeof(float);
	return h < n ? h : n;
}

static void avx2_stream_copy_nt(float *dst, const float *src, size_t n)
{
	size_t i = head_to_align32(dst, n);
	avx2_stream_copy(dst, src, i);
	for (; i + 8 <= n; i += 8)
		_mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
	avx2_stream_copy(dst + i, src + i, n - i);
	_mm_sfence();
}

static void avx2_stream_triad_nt(float *a, const float *b, const float *c, float s, size_t n)
{
	__m256 sv = _mm256_set1_ps(s);
	size_t i = head_to_align32(a, n);
	avx2_stream_triad(a, b, c, s, i);
	for (; i + 8 <= n; i += 8)
		_mm256_stream_ps(a + i, _mm256_fmadd_ps(sv, _mm256_loadu_ps(c + i),
							_mm256_loadu_ps(b + i)));
	avx2_stream_triad(a + i, b + i, c + i, s, n - i);
	_mm_sfence();
}

const struct krn_ops krn_ops_avx2 = {
	.name = "avx2",
	.supported = krn_x86_has_avx2,
	.matvec_f32 = avx2_matvec_f32,
	.matmul_f32 = mm_f32,
	.dot_f32 = avx2_dot_f32,
	.axpy_f32 = avx2_axpy_f32,
	.silu_glu = avx2_silu_glu,
	.exp_sub = avx2_exp_sub,
	.stream_read = avx2_stream_read,
	.stream_copy = avx2_stream_copy,
	.stream_copy_nt = avx2_stream_copy_nt,
	.stream_triad = avx2_stream_triad,
	.stream_triad_nt = avx2_stream_triad_nt,
};
