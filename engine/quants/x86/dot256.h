/* engine/quants/x86/dot256.h: the x86 dot products, on 256-bit vectors, shared by avx2.c and
 * avx512.c.
 *
 * Not a header to include anywhere else: the including file first defines the three integer
 * primitives below for its ISA, then includes this file, which defines the dot products and
 * the F32/F16/BF16 dots. That keeps one body per kernel and no #if inside any function.
 *
 *   static inline __m256i dot_s8s8(__m256i x, __m256i y);  int32x8 sums of 4 s8*s8 products
 *   static inline __m256i dot_u8s8(__m256i x, __m256i y);  the same with x unsigned
 *   static inline __m256i dot_u8s8_acc(__m256i acc, __m256i x, __m256i y); acc + dot_u8s8
 *   static inline __m256i madd_s16(__m256i acc, __m256i a, __m256i b); acc + pairs of a*b
 * and the distance in bytes its matvecs prefetch a row's stream ahead (0: not at all):
 *   #define DOT256_AHEAD bytes
 * and, after including it (it uses the helpers):
 *   static inline __m256i q5_0_unsigned(const uint8_t *blk);  a q5_0 block as 32 signed bytes
 * unless it defines DOT256_OWN_Q5_0 and its own dot_q5_0 and matvec_q5_0 (avx512.c).
 *
 * Why 256 bits on an AVX-512 machine: Zen 4 executes 512-bit integer ops as two 256-bit
 * halves, so the gain of AVX-512 here is VNNI (vpdpbusd, vpdpwssd fuse two or three
 * instructions), not width; one block of 32 quants also fills exactly one ymm register.
 *
 * Block layouts and the dot-product algebra are ggml's (ggml-cpu/arch/x86/quants.c):
 * unsigned quants are multiplied with the signed activation bytes (maddubs / dpbusd), and
 * a format's offset or min is subtracted afterwards through the activation sums that Q8_1
 * (s) and Q8_K (bsums) carry.
 */
#include "kernels/x86/simd.h"

#ifndef DOT256_AHEAD
#error "define DOT256_AHEAD before including dot256.h"
#endif

/* Defined by the including file, after this one (it uses the helpers below). */
#ifndef DOT256_OWN_Q5_0
static inline __m256i q5_0_unsigned(const uint8_t *blk);
#endif

static inline float hsum_ps(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* The `bytes` at x, DOT256_AHEAD bytes ahead. These kernels read the GGUF file's own
 * mapping, in 4 KB pages, where the hardware prefetchers stop at every page boundary; the
 * rows of a matvec are consecutive, so a row's last blocks prefetch the next row's first. */
static inline __attribute__((always_inline)) void row_prefetch(const uint8_t *x, size_t bytes)
{
	for (size_t o = 0; DOT256_AHEAD && o < bytes; o += 64)
		_mm_prefetch((const char *)(x + DOT256_AHEAD + o), _MM_HINT_T0);
}

static inline int hsum_epi32(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
	return _mm_cvtsi128_si32(s);
}

static inline float half(uint16_t h)
{
	return krn_fp16_table[h];
}

static inline uint16_t load_u16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* 16 bytes of nibbles as 32 bytes: low nibbles (elements 0..15) then high (16..31). One load
 * into both halves and one variable shift (high half by 4), where shifting a second copy and
 * inserting it costs a load and a shuffle more: q4_0 and q5_0 ran 15-20% faster in cache for
 * it on Zen 4 (tests/bench_quants), whose kernels are bound by uops issued, not by latency. */
static inline __m256i nibbles32(const uint8_t *p)
{
	__m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p));
	__m256i v = _mm256_srlv_epi64(b, _mm256_setr_epi64x(0, 0, 4, 4));
	return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

/* Byte i is 0xff where bit i of the 32 bits at p is set, else 0. */
static inline __m256i bits32(const uint8_t *p)
{
	uint32_t x;
	memcpy(&x, p, sizeof(x));
	const __m256i spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
						 0x0101010101010101, 0x0000000000000000);
	const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
	__m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x), spread);
	return _mm256_cmpeq_epi8(_mm256_and_si256(b, bit), bit);
}

static inline __m256i loadu(const void *p)
{
	return _mm256_loadu_si256((const __m256i *)p);
}

/* ---- Legacy formats against Q8_0 / Q8_1 ------------------------------------------------ */

/* Legacy blocks are a half d followed by the quants; unpack gives 32 bytes. Q8_0 is
 * signed; q4_0 and q5_0 are unpacked unsigned (0..15, 0..31) and their offset (8, 16) taken
 * off through the activation's block sum, which a matvec computes once for all its rows. */
static inline __m256i q4_0_unsigned(const uint8_t *blk)
{
	return nibbles32(blk + 2);
}

static inline __m256i q8_0_signed(const uint8_t *blk)
{
	return loadu(blk + 2);
}

/* What a matvec needs of each Q8_0 activation block, for every row: the block's scale, and
 * for the unsigned formats minus offset * (sum of its bytes) as int32x8, the accumulator that
 * the weights' dot product starts from. Computed once per activation, so a row's work per
 * block is its own unpack, one dot product, a convert and an FMA. Both values are exact, so
 * whether they were precomputed or not cannot change a bit of any row's result. */
#define LEGACY_PREPARED 512 /* blocks (16384 columns): 18 KB of stack; longer rows go without */

struct legacy_act {
	__m256i base[LEGACY_PREPARED];
	float dy[LEGACY_PREPARED];
};

static inline __attribute__((always_inline)) __m256i legacy_base(const block_q8_0 *y, int offset)
{
	return offset ? _mm256_sub_epi32(_mm256_setzero_si256(),
					 dot_u8s8(_mm256_set1_epi8((char)offset), loadu(y->qs)))
		      : _mm256_setzero_si256();
}

/* One block of one row: acc + d_x * (d_y * dot(x, y)); a NULL `a` computes the activation's
 * part here (vec_dot, and rows too long to prepare). Halves convert by table lookup
 * (krn_fp16_table): vcvtph2ps on a scalar costs three instructions, the table one load that
 * the multiply takes as a broadcast operand. offset 0 means signed quants. */
static inline __attribute__((always_inline)) __m256
legacy_block(__m256 acc, const uint8_t *x, const block_q8_0 *y, const struct legacy_act *a,
	     size_t i, __m256i (*unpack)(const uint8_t *blk), int offset)
{
	__m256i yv = loadu(y[i].qs);
	__m256i base = a ? a->base[i] : legacy_base(&y[i], offset);
	__m256 dy = _mm256_set1_ps(a ? a->dy[i] : half(y[i].d));
	__m256i p = offset ? dot_u8s8_acc(base, unpack(x), yv) : dot_s8s8(unpack(x), yv);
	__m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(p), dy);
	return _mm256_fmadd_ps(_mm256_set1_ps(half(load_u16(x))), f, acc);
}

/* One row: even blocks into one accumulator, odd into another. Two FMA chains, because with
 * one (4 cycles a block on Zen 4) q4_0, q5_0 and q8_0 ran 10-25% slower in cache. */
static inline __attribute__((always_inline)) float
legacy_row(const uint8_t *x, size_t xs, const block_q8_0 *y, const struct legacy_act *a, size_t nb,
	   __m256i (*unpack)(const uint8_t *blk), int offset)
{
	__m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 2 <= nb; i += 2, x += 2 * xs) {
		row_prefetch(x, 2 * xs);
		acc0 = legacy_block(acc0, x, y, a, i, unpack, offset);
		acc1 = legacy_block(acc1, x + xs, y, a, i + 1, unpack, offset);
	}
	if (i < nb)
		acc0 = legacy_block(acc0, x, y, a, i, unpack, offset);
	return hsum_ps(_mm256_add_ps(acc0, acc1));
}

/* Rows of a legacy format against one Q8_0 activation, one row at a time on purpose: the
 * weights then arrive as one sequential stream. Four interleaved rows sharing the activation's
 * work were as fast in cache but streamed from DRAM at 0.2-0.4x a plain read on Zen 4, one row
 * at a time at 0.45-0.75x (tests/bench_quants). */
static inline __attribute__((always_inline)) void
legacy_matvec(float *out, const uint8_t *w, size_t row_bytes, size_t xs, const block_q8_0 *y,
	      size_t nb, size_t rows, __m256i (*unpack)(const uint8_t *blk), int offset)
{
	if (nb > LEGACY_PREPARED) {
		for (size_t r = 0; r < rows; r++, w += row_bytes)
			out[r] = legacy_row(w, xs, y, NULL, nb, unpack, offset);
		return;
	}
	struct legacy_act a;
	for (size_t i = 0; i < nb; i++) {
		a.base[i] = legacy_base(&y[i], offset);
		a.dy[i] = half(y[i].d);
	}
	for (size_t r = 0; r < rows; r++, w += row_bytes)
		out[r] = legacy_row(w, xs, y, &a, nb, unpack, offset);
}

#define LEGACY_KERNELS(T, unpack, offset)                                                     \
	static void dot_##T(size_t n, float *s, const void *vx, const void *vy)                  \
	{                                                                                        \
		*s = legacy_row(vx, sizeof(block_##T), vy, NULL, n / KRN_QK, unpack, offset);    \
	}                                                                                        \
	static void matvec_##T(float *y, const void *w, size_t row_bytes, const void *xq,        \
			       size_t n, size_t r0, size_t r1)                                   \
	{                                                                                        \
		legacy_matvec(y + r0, (const uint8_t *)w + r0 * row_bytes, row_bytes,            \
			      sizeof(block_##T), xq, n / KRN_QK, r1 - r0, unpack, offset);       \
	}

LEGACY_KERNELS(q4_0, q4_0_unsigned, 8)
/* avx512.c has its own q5_0 kernel, two blocks at a time, under the same names: it defines
 * DOT256_OWN_Q5_0 before including this file. */
#ifndef DOT256_OWN_Q5_0
LEGACY_KERNELS(q5_0, q5_0_unsigned, 16)
#endif
LEGACY_KERNELS(q8_0, q8_0_signed, 0)

static void dot_q4_1(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q4_1 *x = vx;
	const block_q8_1 *y = vy;
	__m256 acc = _mm256_setzero_ps();
	float mins = 0;
	for (size_t i = 0; i < n / KRN_QK; i++) {
		__m256 p = _mm256_cvtepi32_ps(dot_u8s8(nibbles32(x[i].qs), loadu(y[i].qs)));
		acc = _mm256_fmadd_ps(_mm256_set1_ps(half(x[i].d) * half(y[i].d)), p, acc);
		mins += half(x[i].m) * half(y[i].s);
	}
	*s = hsum_ps(acc) + mins;
}

static void dot_q5_1(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q5_1 *x = vx;
	const block_q8_1 *y = vy;
	__m256 acc = _mm256_setzero_ps();
	float mins = 0;
	for (size_t i = 0; i < n / KRN_QK; i++) {
		__m256i hi = _mm256_and_si256(bits32(x[i].qh), _mm256_set1_epi8(0x10));
		__m256i q = _mm256_or_si256(nibbles32(x[i].qs), hi);
		__m256 p = _mm256_cvtepi32_ps(dot_u8s8(q, loadu(y[i].qs)));
		acc = _mm256_fmadd_ps(_mm256_set1_ps(half(x[i].d) * half(y[i].d)), p, acc);
		mins += half(x[i].m) * half(y[i].s);
	}
	*s = hsum_ps(acc) + mins;
}

/* ---- K-quants against Q8_K ----------------------------------------------------------------- */

/* Two groups of 16 in one vector of 32 products: int16 lanes 0-7 take scale a, 8-15 scale b. */
static inline __m256i scale_pair(int a, int b)
{
	return _mm256_set_m128i(_mm_set1_epi16((short)b), _mm_set1_epi16((short)a));
}

/* sum over 16 groups of scale[g] * bsums[g], vectorised: the offset terms of q2/q3/q6_K. */
static inline int scaled_bsums16(const int8_t *scales, const int16_t *bsums)
{
	__m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)scales));
	return hsum_epi32(_mm256_madd_epi16(sc, loadu(bsums)));
}

static void dot_q2_K(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q2_K *x = vx;
	const block_q8_K *y = vy;
	__m256 acc = _mm256_setzero_ps();
	float mins = 0;
	for (size_t i = 0; i < n / KRN_QK_K; i++) {
		int8_t sc[16], mn[16];
		__m128i raw = _mm_loadu_si128((const __m128i *)x[i].scales);
		_mm_storeu_si128((__m128i *)sc, _mm_and_si128(raw, _mm_set1_epi8(0x0f)));
		_mm_storeu_si128((__m128i *)mn, _mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0f)));
		mins += half(x[i].dmin) * y[i].d * (float)scaled_bsums16(mn, y[i].bsums);
		__m256i isum = _mm256_setzero_si256();
		for (int h = 0; h < 2; h++) {
			__m256i bits = loadu(x[i].qs + 32 * h);
			for (int k = 0; k < 4; k++) {
				__m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * k),
							     _mm256_set1_epi8(3));
				__m256i p = _mm256_maddubs_epi16(q, loadu(y[i].qs + 128 * h + 32 * k));
				int g = 8 * h + 2 * k;
				isum = madd_s16(isum, p, scale_pair(sc[g], sc[g + 1]));
			}
		}
		acc = _mm256_fmadd_ps(_mm256_set1_ps(half(x[i].d) * y[i].d), _mm256_cvtepi32_ps(isum),
				      acc);
	}
	*s = hsum_ps(acc) - mins;
}

/* q3_K's 16 signed 6-bit scales: low nibbles in bytes 0-7, two high bits each in bytes 8-11;
 * unpacked four at a time with 32-bit operations (ggml's dequantize_row_q3_K kmask moves). */
static inline void q3_K_scales(const uint8_t *p, int8_t *sc)
{
	uint32_t a[3], out[4];
	memcpy(a, p, 12);
	out[0] = (a[0] & 0x0f0f0f0fu) | ((a[2] & 0x03030303u) << 4);
	out[1] = (a[1] & 0x0f0f0f0fu) | (((a[2] >> 2) & 0x03030303u) << 4);
	out[2] = ((a[0] >> 4) & 0x0f0f0f0fu) | (((a[2] >> 4) & 0x03030303u) << 4);
	out[3] = ((a[1] >> 4) & 0x0f0f0f0fu) | (((a[2] >> 6) & 0x03030303u) << 4);
	__m128i v = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)out), _mm_set1_epi8(32));
	_mm_storeu_si128((__m128i *)sc, v);
}

static void dot_q3_K(size_t n, float *s, const void *vx, const void *vy)
{
	const block_q3_K *x = vx;
	const block_q8_K *y = vy;
	__m256 acc = _mm256_setzero_ps();
	for (size_t i = 0; i < n / KRN_QK_K; i++) {
		int8_t sc[16];
		q3_K_scales(x[i].scales, sc);
		/* value = (low 2 bits + 4 * high bit) - 4: the -4 goes through bsums */
		__m256i isum = _mm256_set1_epi32(0);
		__m256i hm = loadu(x[i].hmask);
		for (int h = 0; h < 2; h++) {
			__m256i bits = loadu(x[i].qs + 32 * h);
			for (int k = 0; k < 4; k++) {
				__m256i lo = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * k),
							      _mm256_set1_epi8(3));
				__m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + k),
							      _mm256_set1_epi8(1));
				__m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hb, 2));
				__m256i p = _mm256_maddubs_epi16(q, loadu(y[i].qs + 128 * h + 32 * k));
				int g = 8 * h + 2 * k;
				isum = madd_s16(isum, p, scale_pair(sc[g], sc[g + 1]));
			}
		}
		int off = 4 * scaled_bsums16(sc, y[i].bsums);
		isum = _mm256_sub_epi32(isum, _mm256_setr_epi32(off, 0, 0, 0, 0, 0, 0, 0));
		acc = _mm256_fmadd_ps(_mm256_set1_ps(half(x[i].d) * y[i].d), _mm256_cvtepi32_ps(isum),
				      acc);
	}
	*s = hsum_ps(acc);
}

/* The 8 6-bit scales and mins of q4_K/q5_K, unpacked with 32-bit operations on four bytes at
 * a time (the bit moves of ggml's get_scale_min_k4, done for all 8 groups together). */
static inline void k4_scales(const uint8_t *q, int16_t *sc, int16_t *mn)
{
	uint32_t w[3], out[4];
	memcpy(w, q, 12);
	out[0] = w[0] & 0x3f3f3f3fu;                                                  /* sc 0-3 */
	out[1] = (w[2] & 0x0f0f0f0fu) | (((w[0] >> 6) & 0x03030303u) << 4);          /* sc 4-7 */
	out[2] = w[1] & 0x3f3f3f3fu;                                                  /* mn 0-3 */
	out[3] = ((w[2] >> 4) & 0x0f0f0f0fu) | (((w[1] >> 6) & 0x03030303u) << 4);   /* mn 4-7 */
	__m256i v = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)out));
	_mm_storeu_si128((__m128i *)sc, _mm256_castsi256_si128(v));
	_mm_storeu_si128((__m128i *)mn, _mm256_extracti128_si256(v, 1));
}

/* sum over 8 groups of 32 of mn[g] * (bsums[2g] + bsums[2g + 1]) */
static inline __m256i k4_mins(const int16_t *mn, const int16_t *bsums)
{
	__m128i m = _mm_loadu_si128((const __m128i *)mn);
	__m256i m2 = _mm256_set_m128i(_mm_unpackhi_epi16(m, m), _mm_unpacklo_epi16(m, m));
	return _mm256_madd_epi16(m2, loadu(bsums));
}

/* Bit b of every byte, moved to bit 4 by one 16-bit shift: bits crossing into the other
 * byte of a pair land away from bit 4, which the caller keeps alone. */
static inline __m256i bit_to_4(__m256i v, int b)
{
	return b <= 4 ? _mm256_slli_epi16(v, 4 - b) : _mm256_srli_epi16(v, b - 4);
}

/* One row of q4_K (five false) or q5_K (five true) against one Q8_K activation. */
static inline __attribute__((always_inline)) float
k4_row(bool five, const uint8_t *x, size_t bs, const block_q8_K *y, size_t nb)
{
	const __m256i low4 = _mm256_set1_epi8(0x0f), b4 = _mm256_set1_epi8(0x10);
	/* the min terms stay in a vector too: no horizontal sum per super-block */
	__m256 acc = _mm256_setzero_ps(), mins = _mm256_setzero_ps();
	for (size_t i = 0; i < nb; i++, x += bs) {
		row_prefetch(x, bs);
		/* q4_K: d, dmin, scales[12], qs[128]; q5_K: the same with qh[32] before qs */
		const uint8_t *qs = x + (five ? 48 : 16);
		int16_t sc[8], mn[8];
		k4_scales(x + 4, sc, mn);
		mins = _mm256_fmadd_ps(_mm256_set1_ps(half(load_u16(x + 2)) * y[i].d),
				       _mm256_cvtepi32_ps(k4_mins(mn, y[i].bsums)), mins);
		__m256i qh = five ? loadu(x + 16) : _mm256_setzero_si256();
		__m256i isum0 = _mm256_setzero_si256(), isum1 = _mm256_setzero_si256();
		for (int c = 0; c < 4; c++) {
			__m256i bits = loadu(qs + 32 * c);
			__m256i lo = _mm256_and_si256(bits, low4);
			__m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
			if (five) { /* bits 2c and 2c + 1 of qh moved to bit 4 */
				lo = _mm256_or_si256(lo, _mm256_and_si256(bit_to_4(qh, 2 * c), b4));
				hi = _mm256_or_si256(hi, _mm256_and_si256(bit_to_4(qh, 2 * c + 1), b4));
			}
			__m256i p0 = _mm256_maddubs_epi16(lo, loadu(y[i].qs + 64 * c));
			__m256i p1 = _mm256_maddubs_epi16(hi, loadu(y[i].qs + 64 * c + 32));
			isum0 = madd_s16(isum0, p0, _mm256_set1_epi16(sc[2 * c]));
			isum1 = madd_s16(isum1, p1, _mm256_set1_epi16(sc[2 * c + 1]));
		}
		__m256 p = _mm256_cvtepi32_ps(_mm256_add_epi32(isum0, isum1));
		acc = _mm256_fmadd_ps(_mm256_set1_ps(half(load_u16(x)) * y[i].d), p, acc);
	}
	return hsum_ps(_mm256_sub_ps(acc, mins));
}

/* One row of q6_K: the 6-bit q is multiplied unsigned and 32 taken off through bsums. */
static inline __attribute__((always_inline)) float
q6_row(const uint8_t *w, const block_q8_K *y, size_t nb)
{
	const __m256i low4 = _mm256_set1_epi8(0x0f), three = _mm256_set1_epi8(3);
	__m256 acc = _mm256_setzero_ps();
	for (size_t i = 0; i < nb; i++) {
		const block_q6_K *x = (const block_q6_K *)(const void *)w + i;
		row_prefetch((const uint8_t *)x, sizeof(*x));
		const int8_t *sc = x->scales;
		const int8_t *yq = y[i].qs;
		__m256i isum0 = _mm256_setzero_si256(), isum1 = _mm256_setzero_si256();
		for (int h = 0; h < 2; h++) {
			__m256i l0 = loadu(x->ql + 64 * h), l1 = loadu(x->ql + 64 * h + 32);
			__m256i qh = loadu(x->qh + 32 * h);
			const int8_t *s8 = sc + 8 * h;
			__m256i q0 = _mm256_or_si256(_mm256_and_si256(l0, low4),
				_mm256_slli_epi16(_mm256_and_si256(qh, three), 4));
			__m256i q1 = _mm256_or_si256(_mm256_and_si256(l1, low4),
				_mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), three), 4));
			__m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
				_mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), three), 4));
			__m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
				_mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), three), 4));
			isum0 = madd_s16(isum0, _mm256_maddubs_epi16(q0, loadu(yq + 128 * h)),
					 scale_pair(s8[0], s8[1]));
			isum1 = madd_s16(isum1, _mm256_maddubs_epi16(q1, loadu(yq + 128 * h + 32)),
					 scale_pair(s8[2], s8[3]));
			isum0 = madd_s16(isum0, _mm256_maddubs_epi16(q2, loadu(yq + 128 * h + 64)),
					 scale_pair(s8[4], s8[5]));
			isum1 = madd_s16(isum1, _mm256_maddubs_epi16(q3, loadu(yq + 128 * h + 96)),
					 scale_pair(s8[6], s8[7]));
		}
		__m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc));
		__m256i off = _mm256_slli_epi32(_mm256_madd_epi16(sc16, loadu(y[i].bsums)), 5);
		__m256i isum = _mm256_sub_epi32(_mm256_add_epi32(isum0, isum1), off);
		acc = _mm256_fmadd_ps(_mm256_set1_ps(half(x->d) * y[i].d), _mm256_cvtepi32_ps(isum),
				      acc);
	}
	return hsum_ps(acc);
}

/* vec_dot and matvec from a one-row kernel `call(row pointer)`. The matvec goes one row at a
 * time: the weights then arrive as one sequential stream. Four interleaved rows sharing the
 * activation's loads were as fast in cache but streamed from DRAM at 0.2-0.3x a plain read
 * on Zen 4, one row at a time at 0.55-0.75x (tests/bench_quants). */
#define ROW_KERNELS(T, call)                                                                   \
	static void dot_##T(size_t n, float *s, const void *vx, const void *vy)                  \
	{                                                                                        \
		const size_t nb = n / KRN_QK_K;                                                  \
		const block_q8_K *y = vy;                                                        \
		*s = call((const uint8_t *)vx);                                                  \
	}                                                                                        \
	static void matvec_##T(float *out, const void *w, size_t row_bytes, const void *xq,      \
			       size_t n, size_t r0, size_t r1)                                   \
	{                                                                                        \
		const uint8_t *p = (const uint8_t *)w + r0 * row_bytes;                          \
		const size_t nb = n / KRN_QK_K;                                                  \
		const block_q8_K *y = xq;                                                        \
		for (size_t r = r0; r < r1; r++, p += row_bytes)                                 \
			out[r] = call(p);                                                        \
	}

#define CALL_Q4_K(p) k4_row(false, p, sizeof(block_q4_K), y, nb)
#define CALL_Q5_K(p) k4_row(true, p, sizeof(block_q5_K), y, nb)
#define CALL_Q6_K(p) q6_row(p, y, nb)
ROW_KERNELS(q4_K, CALL_Q4_K)
ROW_KERNELS(q5_K, CALL_Q5_K)
ROW_KERNELS(q6_K, CALL_Q6_K)

/* ---- Float formats ----------------------------------------------------------------------- */

static void dot_f32(size_t n, float *s, const void *vx, const void *vy)
{
	const float *x = vx, *y = vy;
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
		a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
	}
	float sum = hsum_ps(_mm256_add_ps(a0, a1));
	for (; i < n; i++)
		sum += x[i] * y[i];
	*s = sum;
}

static inline __m256 load_f16(const uint16_t *p)
{
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static void dot_f16(size_t n, float *s, const void *vx, const void *vy)
{
	const uint16_t *x = vx, *y = vy;
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		a0 = _mm256_fmadd_ps(load_f16(x + i), load_f16(y + i), a0);
		a1 = _mm256_fmadd_ps(load_f16(x + i + 8), load_f16(y + i + 8), a1);
	}
	float sum = hsum_ps(_mm256_add_ps(a0, a1));
	for (; i < n; i++)
		sum += half(x[i]) * half(y[i]);
	*s = sum;
}

/* ref's f32 -> f16 (round to nearest even) with vcvtps2ph: attention rounds its queries and
 * weights to f16 on every step, as llama.cpp's F16 cache does. */
static void act_f16(const float *x, void *vy, size_t n)
{
	uint16_t *y = vy;
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(void *)(y + i),
				 _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
	for (; i < n; i++)
		y[i] = krn_fp32_to_fp16(x[i]);
}

static void axpy_f16(float *y, float a, const uint16_t *x, size_t n)
{
	__m256 av = _mm256_set1_ps(a);
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, load_f16(x + i), _mm256_loadu_ps(y + i)));
	for (; i < n; i++)
		y[i] += a * half(x[i]);
}

/* x rounded to f16 and back, eight at a time by vcvtps2ph and vcvtph2ps; the tail by ref's
 * conversions, which give the same values (both are exact, nearest even). */
static void round_f16(float *x, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i),
									  _MM_FROUND_TO_NEAREST_INT)));
	for (; i < n; i++)
		x[i] = krn_fp16_to_fp32(krn_fp32_to_fp16(x[i]));
}

/* hsum_ps of four vectors at once, in lanes 0-3: the same additions of the same lanes,
 * lined up by shuffles so that each step is one add for two or four of them. */
static inline __m128 hsum4_ps(__m256 v0, __m256 v1, __m256 v2, __m256 v3)
{
	/* low 128 bits plus high: v0's and v1's side by side, then v2's and v3's */
	__m256 s01 = _mm256_add_ps(_mm256_permute2f128_ps(v0, v1, 0x20),
				   _mm256_permute2f128_ps(v0, v1, 0x31));
	__m256 s23 = _mm256_add_ps(_mm256_permute2f128_ps(v2, v3, 0x20),
				   _mm256_permute2f128_ps(v2, v3, 0x31));
	/* lanes 0 + 2 and 1 + 3: (v0, v2) in the low block, (v1, v3) in the high */
	__m256 t = _mm256_add_ps(_mm256_shuffle_ps(s01, s23, 0x44), _mm256_shuffle_ps(s01, s23, 0xee));
	/* and their sum: v0, v2 in lanes 0, 1 of the low block, v1, v3 of the high */
	__m256 u = _mm256_add_ps(_mm256_shuffle_ps(t, t, 0x88), _mm256_shuffle_ps(t, t, 0xdd));
	return _mm_unpacklo_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
}

/* dot_f16 and axpy_f16 for heads [h0, h1) over `rows` cached positions, position by
 * position (types.h dot_f16_heads, axpy_f16_heads): one call per step instead of one per
 * position and head (18,432 per stories110M step at 64 positions), and the queries converted
 * once for all positions into qf, where dot_f16 converts them on every call. Where n is whole
 * 16-element steps, four heads go at a time, their eight chains in flight together and their
 * sums reduced by hsum4_ps. The same FMAs and additions per head and position as dot_f16's
 * and axpy_f16's, on the same floats, so the same bits. */
static void dot_f16_heads(size_t n, float *s, size_t lds, const uint16_t *x, size_t ldx,
			  size_t rows, const uint16_t *y, int h0, int h1, int kv_mul)
{
	float qf[1024];
	size_t nq = (size_t)(h1 - h0) * n;
	int four = n % 16 == 0 && nq <= sizeof(qf) / sizeof(qf[0]) ? (h1 - h0) / 4 * 4 : 0;
	for (size_t i = 0; i < (four ? nq : 0); i += 8)
		_mm256_storeu_ps(qf + i, load_f16(y + i));
	for (size_t t = 0; t < rows; t++) {
		const uint16_t *row = x + t * ldx;
		int h = h0;
		for (; h < h0 + four; h += 4) {
			__m256 a0[4], a1[4];
			for (int j = 0; j < 4; j++)
				a0[j] = a1[j] = _mm256_setzero_ps();
			for (size_t i = 0; i < n; i += 16)
				for (int j = 0; j < 4; j++) {
					const uint16_t *k = row + (size_t)((h + j) / kv_mul) * n + i;
					const float *q = qf + (size_t)(h + j - h0) * n + i;
					a0[j] = _mm256_fmadd_ps(load_f16(k), _mm256_loadu_ps(q), a0[j]);
					a1[j] = _mm256_fmadd_ps(load_f16(k + 8), _mm256_loadu_ps(q + 8),
								a1[j]);
				}
			float r[4];
			_mm_storeu_ps(r, hsum4_ps(_mm256_add_ps(a0[0], a1[0]),
						  _mm256_add_ps(a0[1], a1[1]),
						  _mm256_add_ps(a0[2], a1[2]),
						  _mm256_add_ps(a0[3], a1[3])));
			for (int j = 0; j < 4; j++)
				s[(size_t)(h + j - h0) * lds + t] = r[j];
		}
		for (; h < h1; h++)
			dot_f16(n, s + (size_t)(h - h0) * lds + t, row + (size_t)(h / kv_mul) * n,
				y + (size_t)(h - h0) * n);
	}
}

static void axpy_f16_heads(float *y, const float *a, size_t lda, const uint16_t *x, size_t ldx,
			   size_t rows, size_t n, int h0, int h1, int kv_mul)
{
	for (size_t t = 0; t < rows; t++)
		for (int h = h0; h < h1; h++)
			axpy_f16(y + (size_t)(h - h0) * n, a[(size_t)(h - h0) * lda + t],
				 x + t * ldx + (size_t)(h / kv_mul) * n, n);
}

/* dot_f16 of y against each row of x (types.h dot_f16_rows): the same FMA chains and the
 * same horizontal sum, so the same bits, with y converted once, no call per row (a prefill's
 * attention scores had been a call per position and head) and four rows at a time, their
 * eight chains in flight together and their sums reduced together (hsum4_ps). */
static void dot_f16_rows(size_t n, float *s, const uint16_t *x, size_t ldx, size_t rows,
			 const uint16_t *y)
{
	float yf[256];
	size_t n16 = n / 16 * 16, r = 0;
	if (n > sizeof(yf) / sizeof(yf[0])) {
		for (; r < rows; r++)
			dot_f16(n, s + r, x + r * ldx, y);
		return;
	}
	for (size_t i = 0; i < n16; i += 8)
		_mm256_storeu_ps(yf + i, load_f16(y + i));
	for (; r + 4 <= rows; r += 4) {
		__m256 a0[4], a1[4];
		for (int j = 0; j < 4; j++)
			a0[j] = a1[j] = _mm256_setzero_ps();
		for (size_t i = 0; i < n16; i += 16) {
			__m256 y0 = _mm256_loadu_ps(yf + i), y1 = _mm256_loadu_ps(yf + i + 8);
			for (int j = 0; j < 4; j++) {
				const uint16_t *k = x + (r + (size_t)j) * ldx + i;
				a0[j] = _mm256_fmadd_ps(load_f16(k), y0, a0[j]);
				a1[j] = _mm256_fmadd_ps(load_f16(k + 8), y1, a1[j]);
			}
		}
		_mm_storeu_ps(s + r, hsum4_ps(_mm256_add_ps(a0[0], a1[0]), _mm256_add_ps(a0[1], a1[1]),
					      _mm256_add_ps(a0[2], a1[2]), _mm256_add_ps(a0[3], a1[3])));
		for (size_t j = 0; j < 4 && n16 < n; j++)
			for (size_t i = n16; i < n; i++)
				s[r + j] += half(x[(r + j) * ldx + i]) * half(y[i]);
	}
	for (; r < rows; r++) {
		const uint16_t *k = x + r * ldx;
		__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
		for (size_t i = 0; i < n16; i += 16) {
			a0 = _mm256_fmadd_ps(load_f16(k + i), _mm256_loadu_ps(yf + i), a0);
			a1 = _mm256_fmadd_ps(load_f16(k + i + 8), _mm256_loadu_ps(yf + i + 8), a1);
		}
		float sum = hsum_ps(_mm256_add_ps(a0, a1));
		for (size_t i = n16; i < n; i++)
			sum += half(k[i]) * half(y[i]);
		s[r] = sum;
	}
}

/* axpy_f16 for each row r of x with a[r], in row order (types.h axpy_f16_rows), 64 elements
 * of y held in registers across the rows instead of loaded and stored for each: each
 * element takes the same FMAs in the same order, so the same bits. */
static void axpy_f16_rows(float *y, const float *a, const uint16_t *x, size_t ldx, size_t rows,
			  size_t n)
{
	size_t c = 0;
	for (; c + 64 <= n; c += 64) {
		__m256 acc[8];
		for (int j = 0; j < 8; j++)
			acc[j] = _mm256_loadu_ps(y + c + 8 * j);
		for (size_t r = 0; r < rows; r++) {
			const __m256 av = _mm256_set1_ps(a[r]);
			const uint16_t *xr = x + r * ldx + c;
			for (int j = 0; j < 8; j++)
				acc[j] = _mm256_fmadd_ps(av, load_f16(xr + 8 * j), acc[j]);
		}
		for (int j = 0; j < 8; j++)
			_mm256_storeu_ps(y + c + 8 * j, acc[j]);
	}
	if (c < n)
		for (size_t r = 0; r < rows; r++)
			axpy_f16(y + c, a[r], x + r * ldx + c, n - c);
}

static inline __m256 load_bf16(const uint16_t *p)
{
	__m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
	return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

static void dot_bf16(size_t n, float *s, const void *vx, const void *vy)
{
	const uint16_t *x = vx, *y = vy;
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		a0 = _mm256_fmadd_ps(load_bf16(x + i), load_bf16(y + i), a0);
		a1 = _mm256_fmadd_ps(load_bf16(x + i + 8), load_bf16(y + i + 8), a1);
	}
	float sum = hsum_ps(_mm256_add_ps(a0, a1));
	for (; i < n; i++)
		sum += krn_bf16_to_fp32(x[i]) * krn_bf16_to_fp32(y[i]);
	*s = sum;
}

#define DOT256_VEC_DOTS                                                                        \
	[KRN_TYPE_F32] = dot_f32, [KRN_TYPE_F16] = dot_f16, [KRN_TYPE_BF16] = dot_bf16,        \
	[KRN_TYPE_Q4_0] = dot_q4_0, [KRN_TYPE_Q4_1] = dot_q4_1, [KRN_TYPE_Q5_0] = dot_q5_0,   \
	[KRN_TYPE_Q5_1] = dot_q5_1, [KRN_TYPE_Q8_0] = dot_q8_0, [KRN_TYPE_Q2_K] = dot_q2_K,   \
	[KRN_TYPE_Q3_K] = dot_q3_K, [KRN_TYPE_Q4_K] = dot_q4_K, [KRN_TYPE_Q5_K] = dot_q5_K,   \
	[KRN_TYPE_Q6_K] = dot_q6_K

#define DOT256_MATVECS                                                                         \
	[KRN_TYPE_Q4_0] = matvec_q4_0, [KRN_TYPE_Q5_0] = matvec_q5_0, [KRN_TYPE_Q8_0] = matvec_q8_0, \
	[KRN_TYPE_Q4_K] = matvec_q4_K, [KRN_TYPE_Q5_K] = matvec_q5_K, [KRN_TYPE_Q6_K] = matvec_q6_K
