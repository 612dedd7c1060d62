/* engine/kernels/x86/avx2.c: AVX2 + FMA kernels.
 *
 * Compiled with only -mavx2 -mfma (and -mno-avx512f, so a -march=native build cannot slip
 * AVX-512 instructions in); reached only after krn_x86_has_avx2_fma() said yes. Tails use
 * VMASKMOVPS, whose masked-off lanes never fault (Intel SDM vol. 2, VMASKMOV), so no element is
 * read twice and no scalar loop is needed.
 */
#include <immintrin.h>

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
	.supported = krn_x86_has_avx2_fma,
	.matvec_f32 = avx2_matvec_f32,
	.dot_f32 = avx2_dot_f32,
	.axpy_f32 = avx2_axpy_f32,
	.stream_read = avx2_stream_read,
	.stream_copy = avx2_stream_copy,
	.stream_copy_nt = avx2_stream_copy_nt,
	.stream_triad = avx2_stream_triad,
	.stream_triad_nt = avx2_stream_triad_nt,
};
