/* engine/quants/x86/avx512_x8l.c: AVX-512 kernels for q8_0 and q5_0 in the x8 layout.
 *
 * Eight rows at once, row r in 32-bit lane r of a ymm (layouts: x8_legacy.c). Each vpdpbusd
 * multiplies four elements of all eight rows with one activation dword broadcast to every
 * lane, so the activation's work is shared by eight rows and no vector is ever summed
 * horizontally. Per block the eight rows' integer dots become floats together: one vcvtph2ps
 * for their scales, one multiply by the activation's scale, one FMA into the group's
 * accumulator. 256 bits, not 512: Zen 4 runs 512-bit integer ops as two halves.
 *
 * Measured on Zen 4 (tests/bench_quants, Falcon's 4544 columns): 2.2x the one-row kernels in
 * cache, and from DRAM about 0.93x a plain read where those reach 0.57x (q5_0) and 0.7x
 * (q8_0). In cache both run at about 3.2-3.5 ns a block of eight rows, bound by the vector
 * loads (two a cycle reach the vector unit) and the multiply pipes, not by latency: four
 * chains of vpdpbusd a block instead of two changed nothing.
 */
#include "avx512_x8.h"
#include "quants_impl.h"

#include <immintrin.h>

static inline __m256i loadu(const void *p)
{
	return _mm256_loadu_si256((const __m256i *)p);
}

/* four activation bytes in every lane, by a broadcast load */
static inline __m256i bcast4(const int8_t *p)
{
	int32_t v;
	memcpy(&v, p, sizeof(v));
	return _mm256_set1_epi32(v);
}

/* 16 activation bytes in both halves */
static inline __m256i bcast16(const int8_t *p)
{
	return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)p));
}

/* What every group needs of each activation block, prepared once per call: -offset * (sum of
 * its bytes), where the weights' quants are stored unsigned as value + offset, and its scale. */
#define X8_PREPARED 1024 /* blocks (32768 columns): 8 KB of stack */

struct x8_act {
	int32_t base[X8_PREPARED];
	float dy[X8_PREPARED];
};

static inline int32_t act_base(const block_q8_0 *y, int offset)
{
	__m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)offset),
					loadu(y->qs));
	__m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
	h = _mm_add_epi32(h, _mm_unpackhi_epi64(h, h));
	h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 1));
	return -_mm_cvtsi128_si32(h);
}

/* acc + d_x * d_y * dot for the eight rows' block at g, given its integer dots p */
static inline __m256 block_tail(__m256 acc, const uint8_t *g, __m256i p, float dy)
{
	__m256 d = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)g)),
				 _mm256_set1_ps(dy));
	return _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, acc);
}

/* q8_0: eight vpdpbusd in four chains of two. The activation dwords come out of two 16-byte
 * loads by vpshufd, not from eight broadcast loads: with 19 loads a block the kernel was bound
 * by them, and 13 loads and 8 shuffles took 3.1 ns a block instead of 3.5. */
static inline __attribute__((always_inline)) __m256
block_q8_0x8(__m256 acc, const uint8_t *g, const block_q8_0 *y, int32_t base, float dy)
{
	__m256i s[4] = { _mm256_set1_epi32(base), _mm256_setzero_si256(), _mm256_setzero_si256(),
			 _mm256_setzero_si256() };
	const __m256i y0 = bcast16(y->qs), y1 = bcast16(y->qs + 16);
	/* written out: vpshufd takes its selector as an immediate, at -O0 too */
	s[0] = _mm256_dpbusd_epi32(s[0], loadu(g + 16), _mm256_shuffle_epi32(y0, 0x00));
	s[1] = _mm256_dpbusd_epi32(s[1], loadu(g + 48), _mm256_shuffle_epi32(y0, 0x55));
	s[2] = _mm256_dpbusd_epi32(s[2], loadu(g + 80), _mm256_shuffle_epi32(y0, 0xaa));
	s[3] = _mm256_dpbusd_epi32(s[3], loadu(g + 112), _mm256_shuffle_epi32(y0, 0xff));
	s[0] = _mm256_dpbusd_epi32(s[0], loadu(g + 144), _mm256_shuffle_epi32(y1, 0x00));
	s[1] = _mm256_dpbusd_epi32(s[1], loadu(g + 176), _mm256_shuffle_epi32(y1, 0x55));
	s[2] = _mm256_dpbusd_epi32(s[2], loadu(g + 208), _mm256_shuffle_epi32(y1, 0xaa));
	s[3] = _mm256_dpbusd_epi32(s[3], loadu(g + 240), _mm256_shuffle_epi32(y1, 0xff));
	__m256i p = _mm256_add_epi32(_mm256_add_epi32(s[0], s[1]), _mm256_add_epi32(s[2], s[3]));
	return block_tail(acc, g, p, dy);
}

/* q5_0: elements 4c .. 4c + 3 (a) and 16 + 4c .. 16 + 4c + 3 (h, times eight: bits 3-7) of
 * the eight rows from chunk c, in four chains; the eight is taken off h's sum by a shift,
 * exact since every term of it is a multiple of eight. Here the activation comes by broadcast
 * loads: 16 loads a block against 28 vector instructions, and trading loads for shuffles as
 * q8_0 does gained nothing. */
static inline __attribute__((always_inline)) __m256
block_q5_0x8(__m256 acc, const uint8_t *g, const block_q8_0 *y, int32_t base, float dy)
{
	const __m256i low5 = _mm256_set1_epi8(0x1f), top3 = _mm256_set1_epi8((char)0xe0);
	__m256i sa[2] = { _mm256_set1_epi32(base), _mm256_setzero_si256() };
	__m256i sh[2] = { _mm256_setzero_si256(), _mm256_setzero_si256() };
	__m256i low2 = loadu(g + 144);
	for (int c = 0; c < 4; c++) {
		/* GF(2) affine map, bytewise: output bit i is the parity of (input & matrix byte
		 * 7 - i); bits 2c and 2c + 1 of low2 go to bits 3 and 4, all others are cleared */
		const long long m = (long long)(1ull << (2 * c) << 32 | 1ull << (2 * c + 1) << 24);
		__m256i q = loadu(g + 16 + 32 * c);
		/* q stays in a register: GCC otherwise loads it a second time as the AND's
		 * operand, and loads are what this kernel waits for (+4% in cache) */
		__asm__("" : "+v"(q));
		__m256i l = _mm256_gf2p8affine_epi64_epi8(low2, _mm256_set1_epi64x(m), 0);
		/* (q & top3) | l: ternary-logic table (A & C) | B */
		__m256i h8 = _mm256_ternarylogic_epi32(q, l, top3, 0xec);
		sa[c % 2] = _mm256_dpbusd_epi32(sa[c % 2], _mm256_and_si256(q, low5),
						bcast4(y->qs + 4 * c));
		sh[c % 2] = _mm256_dpbusd_epi32(sh[c % 2], h8, bcast4(y->qs + 16 + 4 * c));
	}
	__m256i a = _mm256_add_epi32(sa[0], sa[1]), h = _mm256_add_epi32(sh[0], sh[1]);
	return block_tail(acc, g, _mm256_add_epi32(a, _mm256_srai_epi32(h, 3)), dy);
}

/* Groups r0 / 8 .. r1 / 8 of an x8 tensor of a legacy type; bs is the type's block size in
 * bytes. A group's blocks go in order (one sequential stream), even blocks into one
 * accumulator and odd into another: two FMA chains. Rows longer than X8_PREPARED blocks go in
 * stretches of that many, each group's sums kept in out between them: the order of the sums
 * then depends on n only, never on r0 and r1. */
static inline __attribute__((always_inline)) void
x8_matvec(float *out, const uint8_t *w, size_t row_bytes, const block_q8_0 *y, size_t nb,
	  size_t r0, size_t r1, size_t bs, int offset,
	  __m256 (*block)(__m256 acc, const uint8_t *g, const block_q8_0 *y, int32_t base,
			  float dy))
{
	struct x8_act a;
	for (size_t i0 = 0; i0 < nb; i0 += X8_PREPARED) {
		const size_t len = nb - i0 < X8_PREPARED ? nb - i0 : X8_PREPARED;
		const block_q8_0 *ys = y + i0;
		for (size_t i = 0; i < len; i++) {
			a.base[i] = act_base(&ys[i], offset);
			a.dy[i] = krn_fp16_table[ys[i].d];
		}
		for (size_t r = r0; r < r1; r += KRN_X8) {
			const uint8_t *g = w + r * row_bytes + i0 * KRN_X8 * bs;
			__m256 acc0 = i0 ? _mm256_loadu_ps(out + r) : _mm256_setzero_ps();
			__m256 acc1 = _mm256_setzero_ps();
			size_t i = 0;
			for (; i + 2 <= len; i += 2, g += 2 * KRN_X8 * bs) {
				acc0 = block(acc0, g, &ys[i], a.base[i], a.dy[i]);
				acc1 = block(acc1, g + KRN_X8 * bs, &ys[i + 1], a.base[i + 1],
					     a.dy[i + 1]);
			}
			if (i < len)
				acc0 = block(acc0, g, &ys[i], a.base[i], a.dy[i]);
			_mm256_storeu_ps(out + r, _mm256_add_ps(acc0, acc1));
		}
	}
}

void krn_avx512_matvec_x8_q8_0(float *y, const void *w, size_t row_bytes, const void *xq,
			       size_t n, size_t r0, size_t r1)
{
	x8_matvec(y, w, row_bytes, xq, n / KRN_QK, r0, r1, sizeof(block_q8_0), 128, block_q8_0x8);
}

void krn_avx512_matvec_x8_q5_0(float *y, const void *w, size_t row_bytes, const void *xq,
			       size_t n, size_t r0, size_t r1)
{
	x8_matvec(y, w, row_bytes, xq, n / KRN_QK, r0, r1, sizeof(block_q5_0), 16, block_q5_0x8);
}
