/* engine/quants/x86/avx2_x8l.c: AVX2 kernels for q8_0, q5_0, q4_0, q5_1 and q4_1 in the x8
 * layout (q5_1 and q4_1: one driver for one token and several, at the end).
 *
 * The scheme of avx512_x8l.c (layouts: x8_legacy.c): eight rows at once, row r in 32-bit lane
 * r of a ymm, every 32 bytes of quants multiplied with one activation dword broadcast to all
 * lanes, the eight rows' scales applied together per block, no horizontal sums. Without
 * vpdpbusd the byte products go through vpmaddubsw (unsigned x signed, adjacent pairs summed
 * into int16 with saturation) and vpmaddwd by ones into int32, so each kernel keeps its pair
 * sums below 32768 by the route described at it.
 *
 * Measured on Zen 4 through this table (tests/bench_quants, Falcon's 4544 columns, one
 * thread), against dot256.h's one-row kernels: in cache q8_0 55 GB/s (33 before, 1.7x) and
 * q5_0 42 GB/s (16 before, 2.7x); from DRAM 0.9-0.95x a plain read, where those reach 0.7x
 * and 0.45x. In cache both are bound by vector instructions issued (about four a cycle), not
 * by loads or latency, so every instruction saved per 32 bytes of quants shows. q4_0 (2048
 * and 4096 columns, 2.6 GHz): 43-44 GB/s in cache (19 before, 2.3x), from DRAM 0.94-0.95x a
 * plain read where the one-row kernel reaches 0.5x.
 */
#include "internal.h"
#include "chain.h"
#include "x8_kernels.h"

/* The one-token driver's software prefetch, 2 KB ahead (7 block pairs of q4_0, 4 of q8_0).
 * On this AVX2 machine (Zen 3, 2 vCPUs) the hardware prefetcher alone kept a decoding thread
 * at 0.65-0.8x a plain read: `generate` on stories110M's shapes, 128 tokens, median of 7-9
 * interleaved pairs, decode 1.09-1.14x with 1 KB at 1 thread, 1.13x at 2 threads, q8_0 1.11x.
 * 2 KB against 1 KB, `--load repack`, 7 pairs, a later session: q4_0 1.05x (and 1 KB against
 * 2 KB 0.95x) at 1 thread, 1.00x at 2; q8_0 1.06x and 1.14x at 1 thread; 4 KB against 2 KB
 * 1.01x (q4_0), where the first session had 4 KB losing to 1 KB (0.88x): identical settings
 * moved 8 % between two 5-pair runs that day. Not measured on AVX-512 machines (Zen 4
 * streamed at 0.94x the read without it): avx512_x8l.c keeps 0. */
#define X8_MATVEC_AHEAD 2048
#include "x8_legacy.h"

/* q8_0: the stored quant u = q ^ 0x80 (0 .. 255) times an activation byte would saturate
 * vpmaddubsw (255 * 127 * 2 > 32767), so the xor is undone and the signed product taken as
 * |q| * (y with q's sign), ggml's mul_sum_i8_pairs: pairs reach 128 * 127 * 2 = 32512. The
 * magnitude goes on the weight's side because raw q8_0 rows may hold -128 (its |q| is 128
 * unsigned, exact) while activations never do. |y| * (q with y's sign), |y| prepared per
 * call, would save the vpabsb but turns q = -128 into -128 where y < 0, and its extra
 * broadcast load made it slower anyway (43 GB/s in cache instead of 55); so did taking the
 * activation dwords out of two 16-byte loads by vpshufd (53). Signed quants leave no offset:
 * base is unused. Six instructions per 32 quants: 4.9 ns a block of eight rows. */
static inline __attribute__((always_inline)) __m256
block_q8_0x8(__m256 acc, const uint8_t *g, const block_q8_0 *y, int32_t base, float dy)
{
	const __m256i flip = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi16(1);
	__m256i s = _mm256_setzero_si256();
	(void)base;
	for (int c = 0; c < 8; c++) {
		__m256i q = _mm256_xor_si256(loadu(g + 16 + 32 * c), flip);
		__m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(q),
						 _mm256_sign_epi8(bcast4(y->qs + 4 * c), q));
		s = _mm256_add_epi32(s, _mm256_madd_epi16(p, ones));
	}
	return block_tail(acc, g, s, dy);
}

/* q5_0: elements 4c .. 4c + 3 of the eight rows are chunk c & 0x1f, elements 16 + 4c ..
 * 16 + 4c + 3 are rebuilt exactly (0 .. 31) from chunk c's bits 5-7 and low2's bits 2c,
 * 2c + 1 by 16-bit shifts and masks: five instructions where AVX-512 takes two (GF2P8AFFINE,
 * ternary logic). Exact values keep a pair under 31 * 128 * 2 = 7936, so each half's four
 * chunks are summed in int16 (at most 31744) and widened by one vpmaddwd each. Scaling the
 * rebuilt elements by four for chunks 1 and 3 (their low two bits then need no shift, and
 * chunks 2 and 3 share one) saves four instructions but needs two more vpmaddwd, since such
 * pairs no longer add up in int16: 39.5 GB/s in cache instead of 42. */
static inline __attribute__((always_inline)) __m256
block_q5_0x8(__m256 acc, const uint8_t *g, const block_q8_0 *y, int32_t base, float dy)
{
	const __m256i low5 = _mm256_set1_epi8(0x1f), top3 = _mm256_set1_epi8(0x1c),
		      two = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
	__m256i pa = _mm256_setzero_si256(), ph = _mm256_setzero_si256();
	__m256i low2 = loadu(g + 144);
	/* the quants stay in registers: GCC otherwise loads them again as the operands of
	 * the AND and the shifts (low2 once per chunk), and 42 GB/s in cache fell to 39 */
	__asm__("" : "+x"(low2));
	for (int c = 0; c < 4; c++) {
		__m256i q = loadu(g + 16 + 32 * c);
		__asm__("" : "+x"(q));
		__m256i a = _mm256_and_si256(q, low5);
		__m256i t = _mm256_and_si256(_mm256_srli_epi16(q, 3), top3);
		__m256i l = _mm256_and_si256(_mm256_srli_epi16(low2, 2 * c), two);
		__m256i h = _mm256_or_si256(t, l);
		pa = _mm256_add_epi16(pa, _mm256_maddubs_epi16(a, bcast4(y->qs + 4 * c)));
		ph = _mm256_add_epi16(ph, _mm256_maddubs_epi16(h, bcast4(y->qs + 16 + 4 * c)));
	}
	__m256i p = _mm256_add_epi32(_mm256_madd_epi16(pa, ones), _mm256_madd_epi16(ph, ones));
	return block_tail(acc, g, _mm256_add_epi32(p, _mm256_set1_epi32(base)), dy);
}

/* q4_0: elements 4c .. 4c + 3 of the eight rows are chunk c & 0x0f, elements 16 + 4c ..
 * 16 + 4c + 3 its high nibbles shifted down. Nibbles keep a pair under 15 * 128 * 2 = 3840, so
 * all eight products of a block are summed in int16 (at most 30720) and widened by one
 * vpmaddwd. Seven instructions per 32 bytes of quants: 3.3 ns a block of eight rows. */
static inline __attribute__((always_inline)) __m256
block_q4_0x8(__m256 acc, const uint8_t *g, const block_q8_0 *y, int32_t base, float dy)
{
	const __m256i lo = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
	__m256i pa = _mm256_setzero_si256(), ph = _mm256_setzero_si256();
	for (int c = 0; c < 4; c++) {
		__m256i q = loadu(g + 16 + 32 * c);
		/* one load for both ANDs, as in q5_0 */
		__asm__("" : "+x"(q));
		__m256i a = _mm256_and_si256(q, lo);
		__m256i h = _mm256_and_si256(_mm256_srli_epi16(q, 4), lo);
		pa = _mm256_add_epi16(pa, _mm256_maddubs_epi16(a, bcast4(y->qs + 4 * c)));
		ph = _mm256_add_epi16(ph, _mm256_maddubs_epi16(h, bcast4(y->qs + 16 + 4 * c)));
	}
	__m256i p = _mm256_madd_epi16(_mm256_add_epi16(pa, ph), ones);
	return block_tail(acc, g, _mm256_add_epi32(p, _mm256_set1_epi32(base)), dy);
}

void krn_avx2_matvec_x8_q8_0(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1)
{
	x8_matvec(y, w, rows, xq, n / KRN_QK, r0, r1, sizeof(block_q8_0), 0, block_q8_0x8);
}

void krn_avx2_matvec_x8_q5_0(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1)
{
	x8_matvec(y, w, rows, xq, n / KRN_QK, r0, r1, sizeof(block_q5_0), 16, block_q5_0x8);
}

void krn_avx2_matvec_x8_q4_0(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1)
{
	x8_matvec(y, w, rows, xq, n / KRN_QK, r0, r1, sizeof(block_q4_0), 8, block_q4_0x8);
}

/* ---- Several tokens at once ------------------------------------------------------------------
 *
 * The blocks above, with what depends on the weights alone (the loads, q8_0's |q|, q4_0's
 * nibbles) done once for X8_MM_TOK tokens; each token's products and sums are the matvec's,
 * in int16 where it sums in int16, so each token gets the matvec's bits. */

static inline __attribute__((always_inline)) void
mm_q8_0(__m256 *acc, const uint8_t *g, const block_q8_0 *const *ys, const int32_t *base,
	const float *dy, int nt)
{
	const __m256i flip = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi16(1);
	__m256i s[X8_MM_TOK];
	(void)base;
	for (int t = 0; t < nt; t++)
		s[t] = _mm256_setzero_si256();
	for (int c = 0; c < 8; c++) {
		__m256i q = _mm256_xor_si256(loadu(g + 16 + 32 * c), flip), aq = _mm256_abs_epi8(q);
		for (int t = 0; t < nt; t++) {
			__m256i p = _mm256_maddubs_epi16(aq, _mm256_sign_epi8(bcast4(ys[t]->qs + 4 * c),
									     q));
			s[t] = _mm256_add_epi32(s[t], _mm256_madd_epi16(p, ones));
			chain(&s[t]);
		}
	}
	for (int t = 0; t < nt; t++)
		acc[t] = block_tail(acc[t], g, s[t], dy[(size_t)t * X8_PREPARED]);
}

static inline __attribute__((always_inline)) void
mm_q4_0(__m256 *acc, const uint8_t *g, const block_q8_0 *const *ys, const int32_t *base,
	const float *dy, int nt)
{
	const __m256i lo = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
	__m256i pa[X8_MM_TOK], ph[X8_MM_TOK];
	for (int t = 0; t < nt; t++)
		pa[t] = ph[t] = _mm256_setzero_si256();
	for (int c = 0; c < 4; c++) {
		__m256i q = loadu(g + 16 + 32 * c);
		__m256i a = _mm256_and_si256(q, lo);
		__m256i h = _mm256_and_si256(_mm256_srli_epi16(q, 4), lo);
		for (int t = 0; t < nt; t++) {
			pa[t] = _mm256_add_epi16(pa[t], _mm256_maddubs_epi16(a, bcast4(ys[t]->qs +
										      4 * c)));
			chain(&pa[t]);
			ph[t] = _mm256_add_epi16(ph[t], _mm256_maddubs_epi16(h, bcast4(ys[t]->qs + 16 +
										      4 * c)));
			chain(&ph[t]);
		}
	}
	for (int t = 0; t < nt; t++) {
		__m256i p = _mm256_madd_epi16(_mm256_add_epi16(pa[t], ph[t]), ones);
		acc[t] = block_tail(acc[t], g,
				    _mm256_add_epi32(p, _mm256_set1_epi32(base[(size_t)t *
									       X8_PREPARED])),
				    dy[(size_t)t * X8_PREPARED]);
	}
}

/* q5_0: block_q5_0x8's rebuilt elements once for the tokens; each token's int16 sums are the
 * matvec's */
static inline __attribute__((always_inline)) void
mm_q5_0(__m256 *acc, const uint8_t *g, const block_q8_0 *const *ys, const int32_t *base,
	const float *dy, int nt)
{
	const __m256i low5 = _mm256_set1_epi8(0x1f), top3 = _mm256_set1_epi8(0x1c),
		      two = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
	__m256i pa[X8_MM_TOK], ph[X8_MM_TOK];
	for (int t = 0; t < nt; t++)
		pa[t] = ph[t] = _mm256_setzero_si256();
	__m256i low2 = loadu(g + 144);
	for (int c = 0; c < 4; c++) {
		__m256i q = loadu(g + 16 + 32 * c);
		__m256i a = _mm256_and_si256(q, low5);
		__m256i h = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 3), top3),
					    _mm256_and_si256(_mm256_srli_epi16(low2, 2 * c), two));
		for (int t = 0; t < nt; t++) {
			pa[t] = _mm256_add_epi16(pa[t],
						 _mm256_maddubs_epi16(a, bcast4(ys[t]->qs + 4 * c)));
			chain(&pa[t]);
			ph[t] = _mm256_add_epi16(ph[t], _mm256_maddubs_epi16(
								h, bcast4(ys[t]->qs + 16 + 4 * c)));
			chain(&ph[t]);
		}
	}
	for (int t = 0; t < nt; t++) {
		__m256i p = _mm256_add_epi32(_mm256_madd_epi16(pa[t], ones),
					     _mm256_madd_epi16(ph[t], ones));
		acc[t] = block_tail(acc[t], g,
				    _mm256_add_epi32(p, _mm256_set1_epi32(base[(size_t)t *
									       X8_PREPARED])),
				    dy[(size_t)t * X8_PREPARED]);
	}
}

void krn_avx2_matmul_x8_q5_0(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	x8_matmul(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK, r0, r1, sizeof(block_q5_0), 16,
		  mm_q5_0, NULL);
}

void krn_avx2_matmul_x8_q8_0(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	x8_matmul(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK, r0, r1, sizeof(block_q8_0), 0,
		  mm_q8_0, NULL);
}

void krn_avx2_matmul_x8_q4_0(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	x8_matmul(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK, r0, r1, sizeof(block_q4_0), 8,
		  mm_q4_0, NULL);
}

/* ---- q4_1 and q5_1 (x8_legacy.h's Q8_1 driver) ------------------------------------------------
 *
 * block_q4_0x8's and block_q5_0x8's integer work (int16 pair sums within the same bounds: the
 * quants are the same 0 .. 15 and 0 .. 31) on the quants 32 bytes later, with no offset; the
 * float tail adds the eight rows' m * s. One token is the driver with one. */

static inline __attribute__((always_inline)) void
mm_q4_1(__m256 *acc, const uint8_t *g, const block_q8_1 *const *ys, const float *dy,
	const float *sy, int nt)
{
	const __m256i lo = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
	__m256i pa[X8_MM_TOK], ph[X8_MM_TOK];
	for (int t = 0; t < nt; t++)
		pa[t] = ph[t] = _mm256_setzero_si256();
	for (int c = 0; c < 4; c++) {
		__m256i q = loadu(g + 32 + 32 * c);
		__m256i a = _mm256_and_si256(q, lo);
		__m256i h = _mm256_and_si256(_mm256_srli_epi16(q, 4), lo);
		for (int t = 0; t < nt; t++) {
			pa[t] = _mm256_add_epi16(pa[t],
						 _mm256_maddubs_epi16(a, bcast4(ys[t]->qs + 4 * c)));
			chain(&pa[t]);
			ph[t] = _mm256_add_epi16(ph[t], _mm256_maddubs_epi16(
								h, bcast4(ys[t]->qs + 16 + 4 * c)));
			chain(&ph[t]);
		}
	}
	for (int t = 0; t < nt; t++)
		acc[t] = block_tail1(acc[t], g, _mm256_madd_epi16(_mm256_add_epi16(pa[t], ph[t]), ones),
				     dy[(size_t)t * X8_PREPARED], sy[(size_t)t * X8_PREPARED]);
}

static inline __attribute__((always_inline)) void
mm_q5_1(__m256 *acc, const uint8_t *g, const block_q8_1 *const *ys, const float *dy,
	const float *sy, int nt)
{
	const __m256i low5 = _mm256_set1_epi8(0x1f), top3 = _mm256_set1_epi8(0x1c),
		      two = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
	__m256i pa[X8_MM_TOK], ph[X8_MM_TOK];
	for (int t = 0; t < nt; t++)
		pa[t] = ph[t] = _mm256_setzero_si256();
	__m256i low2 = loadu(g + 160);
	for (int c = 0; c < 4; c++) {
		__m256i q = loadu(g + 32 + 32 * c);
		__m256i a = _mm256_and_si256(q, low5);
		__m256i h = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 3), top3),
					    _mm256_and_si256(_mm256_srli_epi16(low2, 2 * c), two));
		for (int t = 0; t < nt; t++) {
			pa[t] = _mm256_add_epi16(pa[t],
						 _mm256_maddubs_epi16(a, bcast4(ys[t]->qs + 4 * c)));
			chain(&pa[t]);
			ph[t] = _mm256_add_epi16(ph[t], _mm256_maddubs_epi16(
								h, bcast4(ys[t]->qs + 16 + 4 * c)));
			chain(&ph[t]);
		}
	}
	for (int t = 0; t < nt; t++) {
		__m256i p = _mm256_add_epi32(_mm256_madd_epi16(pa[t], ones),
					     _mm256_madd_epi16(ph[t], ones));
		acc[t] = block_tail1(acc[t], g, p, dy[(size_t)t * X8_PREPARED],
				     sy[(size_t)t * X8_PREPARED]);
	}
}

void krn_avx2_matvec_x8_q4_1(float *y, const void *w, size_t rows, const void *xq, size_t n,
			     size_t r0, size_t r1)
{
	x8_matmul1(y, 0, w, rows, xq, 0, 1, n / KRN_QK, r0, r1, sizeof(block_q4_1), mm_q4_1);
}

void krn_avx2_matvec_x8_q5_1(float *y, const void *w, size_t rows, const void *xq, size_t n,
			     size_t r0, size_t r1)
{
	x8_matmul1(y, 0, w, rows, xq, 0, 1, n / KRN_QK, r0, r1, sizeof(block_q5_1), mm_q5_1);
}

void krn_avx2_matmul_x8_q4_1(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	x8_matmul1(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK, r0, r1, sizeof(block_q4_1),
		   mm_q4_1);
}

void krn_avx2_matmul_x8_q5_1(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	x8_matmul1(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK, r0, r1, sizeof(block_q5_1),
		   mm_q5_1);
}
