/* engine/quants/x86/avx2_x8k.c: AVX2 kernels for q4_K, q5_K, q6_K, q2_K and q3_K in the x8
 * layout (q2_K and q3_K: one driver for one token and several, at the end).
 *
 * Eight rows at once, row r in 32-bit lane r of a ymm (layouts: x8_kquants.c), as in
 * avx512_x8k.c, but without vpdpbusd, ternary logic or GF(2) affine maps. Four elements of
 * all eight rows meet one broadcast activation dword in a vpmaddubsw, whose int16 pairs are
 * summed with vpaddw over as many steps as cannot overflow (|activation| <= 128): four for
 * q4_K and q5_K (of 16 * 15 * 128 and 8 * 31 * 128 possible), two for q6_K (4 * 63 * 128).
 * Then one vpmaddwd with the sub-block's scale in both halves of each lane both adds the pairs
 * and scales them, into one int32 sum for the whole super-block. The layouts' "times 16" and
 * "times 8" forms would overflow a vpmaddubsw pair (240 * 127 * 2), so every quant is
 * unpacked to its plain value first, with shifts and masks: per two vpmaddubsw, three
 * instructions for q4_K, five for q5_K and q6_K.
 *
 * The loops take a chunk's q four at a time (q4_K, q5_K) or a pair of sub-blocks (q6_K), so
 * that two int16 sums are live, not eight: at most 512 bytes read out of order. Loads that
 * feed two instructions are kept in a register (an empty asm), where GCC folds them into each:
 * q6_K went from 35 to 48 GB/s in cache.
 *
 * Measured on Zen 4 (tests/bench_quants, 4096 columns, one thread), against dot256.h's
 * one-row kernels on the same table: in cache 2.1-2.4x as fast (q4_K 45 GB/s, q6_K 47, q5_K
 * 42, the old 19-20; 0.43-0.50x a read), from DRAM 0.85-0.93x a plain read (0.52-0.54x
 * before); at 768 columns the same; at Falcon's 18176 columns 0.7-0.75x (0.3x before).
 *
 * From DRAM the order a group's lines are first touched in matters, as in avx512_x8k.c:
 * q6_K read its scales' lines one sub-block pair at a time, among the quants, q5_K each
 * half's ten lines out of order (see block_q5_Kx8), q3_K its hmask alongside the quants
 * (two streams). Touching those lines in address order first (head_first) took, at 4096
 * columns, q5_K from 0.63x the read to 0.85x and q3_K from 0.35x to 0.53x (11.6 to 17.5
 * GB/s, near its 18.4 in cache), q6_K from 0.87x to 0.89x (small, but never lower in 17
 * paired runs); at 18176 columns q5_K 0.70x to 0.835x, q3_K 0.35x to 0.535x, q6_K 0.88x to
 * 0.89x. q4_K already reads its header first;
 * touching each half's 512 bytes first gained nothing beyond the runs' spread (0.85x to
 * 0.86x) and lost in cache (45 to 43 GB/s), and so did q6_K's 192 bytes a pair: left out.
 */
#include "internal.h"
#include "chain.h"
#include "x8_kernels.h"
/* x8k_matvec's software prefetch, 2 KB ahead (almost two groups' super-blocks of q4_K), for
 * the reason avx2_x8l.c gives: decode of stories110M's q4_k_m shapes 1.11-1.12x at 1 thread
 * (1 KB ahead: 1.11x; 2 KB against 1 KB: 1.05x), 1.11x at 2 threads. */
#define X8K_MATVEC_AHEAD 2048
#include "x8_kquants.h"
#include "x8_kunpack.h"

/* ---- q4_K and q5_K ----------------------------------------------------------------------- */

/* acc + the super-block's d * isum - dmin * (mins against k4_prepare's sums) */
static inline __attribute__((always_inline)) __m256
k4_tail(__m256 acc, const uint8_t *g, const block_q8_K *y, const int8_t *prep, __m256i isum,
	const __m256i mn[2])
{
	/* hi pairs reach 4 * 63 * 32, lo pairs 4 * 63 * 127: both int16 */
	__m256i hi = _mm256_add_epi16(_mm256_maddubs_epi16(mn[0], bcast4(prep)),
				      _mm256_maddubs_epi16(mn[1], bcast4(prep + 4)));
	__m256i lo = _mm256_add_epi16(_mm256_maddubs_epi16(mn[0], bcast4(prep + 8)),
				      _mm256_maddubs_epi16(mn[1], bcast4(prep + 12)));
	__m256i mins = _mm256_add_epi32(_mm256_madd_epi16(hi, _mm256_set1_epi16(128)),
					_mm256_madd_epi16(lo, _mm256_set1_epi16(1)));
	__m256 d = _mm256_mul_ps(halves8(g), _mm256_set1_ps(y->d));
	__m256 dm = _mm256_mul_ps(halves8(g + 16), _mm256_set1_ps(y->d));
	acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc);
	return _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), dm, acc);
}

/* q4_K: low nibbles into sub-block 2c's int16 sums, high nibbles (shifted down) into 2c + 1's.
 * Four q at a time per chunk c (see the top of the file), though all eight would fit int16:
 * eight live sums spill (40 GB/s in cache against 46 on Zen 4), and a whole chunk at a time
 * (128-byte strides over 1 KB) fell to 0.6x the read from DRAM. */
static inline __attribute__((always_inline)) __m256
block_q4_Kx8(__m256 acc, const uint8_t *g, const block_q8_K *y, const void *prep)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	__m256i scale[8], mn[2];
	k4_scales(g, scale, mn);
	__m256i isum = _mm256_setzero_si256();
	for (int q0 = 0; q0 < 8; q0 += 4)
		for (int c = 0; c < 4; c++) {
			__m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
			for (int q = q0; q < q0 + 4; q++) {
				const int8_t *a = y->qs + 64 * c + 4 * q;
				__m256i v = loadu(g + 128 + 32 * (4 * q + c));
				__asm__("" : "+x"(v));
				__m256i lo = _mm256_and_si256(v, m4);
				__m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
				s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(lo, bcast4(a)));
				s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(hi, bcast4(a + 32)));
			}
			isum = _mm256_add_epi32(isum, _mm256_madd_epi16(s0, scale[2 * c]));
			isum = _mm256_add_epi32(isum, _mm256_madd_epi16(s1, scale[2 * c + 1]));
		}
	return k4_tail(acc, g, y, prep, isum, mn);
}

/* q5_K: as q4_K, with a = v & 0x1f and h = (v >> 5) << 2 | low2's two bits, four q at a time
 * (as many as int16 holds: 4 * 2 * 31 * 128). Those four q's 640 bytes are read four times
 * over, at 32 * c and 128 of each q's 160: ten lines in no order the hardware prefetcher
 * follows well from DRAM (0.63x the read), so they are touched in address order first
 * (0.85x; see the top of the file). */
static inline __attribute__((always_inline)) __m256
block_q5_Kx8(__m256 acc, const uint8_t *g, const block_q8_K *y, const void *prep)
{
	const __m256i m5 = _mm256_set1_epi8(0x1f), m3 = _mm256_set1_epi8(0x1c);
	const __m256i m2 = _mm256_set1_epi8(0x03);
	__m256i scale[8], mn[2];
	k4_scales(g, scale, mn);
	__m256i isum = _mm256_setzero_si256();
	for (int q0 = 0; q0 < 8; q0 += 4) {
		head_first(g + 128 + 160 * q0, 640);
		for (int c = 0; c < 4; c++) {
			__m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
			for (int q = q0; q < q0 + 4; q++) {
				const int8_t *a = y->qs + 64 * c + 4 * q;
				const uint8_t *p = g + 128 + 160 * q;
				__m256i v = loadu(p + 32 * c), low2 = loadu(p + 128);
				__asm__("" : "+x"(v));
				__m256i l = _mm256_and_si256(
					c ? _mm256_srli_epi16(low2, 2 * c) : low2, m2);
				__m256i h = _mm256_or_si256(
					_mm256_and_si256(_mm256_srli_epi16(v, 3), m3), l);
				s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(_mm256_and_si256(v, m5),
									       bcast4(a)));
				s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(h, bcast4(a + 32)));
			}
			isum = _mm256_add_epi32(isum, _mm256_madd_epi16(s0, scale[2 * c]));
			isum = _mm256_add_epi32(isum, _mm256_madd_epi16(s1, scale[2 * c + 1]));
		}
	}
	return k4_tail(acc, g, y, prep, isum, mn);
}

/* ---- q6_K -------------------------------------------------------------------------------- */

/* Sub-blocks 2p (a = v & 0x3f) and 2p + 1 (b = (v >> 6) << 4 | a nibble of lo4), the int16
 * sums through the scales after every two vectors. The quants are stored plus 32: that part,
 * 32 * scale * bsums per sub-block, is one vpmaddwd per pair against the activation's bsums
 * as they are (two int16 per dword). */
static inline __attribute__((always_inline)) __m256
block_q6_Kx8(__m256 acc, const uint8_t *g, const block_q8_K *y, const void *prep)
{
	(void)prep;
	const __m256i m6 = _mm256_set1_epi8(0x3f), m4 = _mm256_set1_epi8(0x0f);
	const __m256i top = _mm256_set1_epi8(0x30);
	/* row r's scales of sub-blocks 2p and 2p + 1 side by side: bytes r and 8 + r */
	const __m128i pairs = _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
	const __m256i first = word_of_dword_x2(0), second = word_of_dword_x2(1);
	__m256i isum = _mm256_setzero_si256(), off = _mm256_setzero_si256();
	head_first(g, 144); /* the scales' lines, read one pair at a time below */
	const uint8_t *p = g + 144;
	for (int pp = 0; pp < 8; pp++, p += 192) {
		__m128i sc8 = _mm_loadu_si128((const __m128i *)(g + 16 + 16 * pp));
		__m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pairs));
		off = _mm256_add_epi32(off, _mm256_madd_epi16(sc, bcast4(y->bsums + 2 * pp)));
		__m256i sa = _mm256_shuffle_epi8(sc, first), sb = _mm256_shuffle_epi8(sc, second);
		for (int j = 0; j < 2; j++) {
			__m256i lo4 = loadu(p + 128 + 32 * j), ta = _mm256_setzero_si256();
			__m256i tb = _mm256_setzero_si256();
			__asm__("" : "+x"(lo4));
			for (int k = 2 * j; k < 2 * j + 2; k++) {
				const int8_t *a = y->qs + 32 * pp + 4 * k;
				__m256i v = loadu(p + 32 * k);
				__asm__("" : "+x"(v));
				__m256i n = _mm256_and_si256(k % 2 ? _mm256_srli_epi16(lo4, 4) : lo4, m4);
				__m256i b = _mm256_or_si256(
					_mm256_and_si256(_mm256_srli_epi16(v, 2), top), n);
				ta = _mm256_add_epi16(ta, _mm256_maddubs_epi16(_mm256_and_si256(v, m6),
									       bcast4(a)));
				tb = _mm256_add_epi16(tb, _mm256_maddubs_epi16(b, bcast4(a + 16)));
			}
			isum = _mm256_add_epi32(isum, _mm256_madd_epi16(ta, sa));
			isum = _mm256_add_epi32(isum, _mm256_madd_epi16(tb, sb));
		}
	}
	isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(off, 5));
	__m256 d = _mm256_mul_ps(halves8(g), _mm256_set1_ps(y->d));
	return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc);
}

/* ---- The matvec -------------------------------------------------------------------------- */

void krn_avx2_matvec_x8_q4_K(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1)
{
	x8k_matvec(y, w, rows, xq, n / KRN_QK_K, r0, r1, sizeof(block_q4_K), k4_prepare,
		   block_q4_Kx8);
}

void krn_avx2_matvec_x8_q5_K(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1)
{
	x8k_matvec(y, w, rows, xq, n / KRN_QK_K, r0, r1, sizeof(block_q5_K), k4_prepare,
		   block_q5_Kx8);
}

void krn_avx2_matvec_x8_q6_K(float *y, const void *w, size_t rows, const void *xq,
			     size_t n, size_t r0, size_t r1)
{
	x8k_matvec(y, w, rows, xq, n / KRN_QK_K, r0, r1, sizeof(block_q6_K), NULL,
		   block_q6_Kx8);
}

/* ---- Several tokens at once ------------------------------------------------------------------
 *
 * The blocks above with what depends on the weights alone (the loads, the unpacking of the
 * quants, the rows' scales and mins) done once for up to X8K_MM_TOK_MAX tokens (the drivers
 * below pass four, x8k_matmul's q2_K and q3_K X8K_MM_TOK); each token's int16 and
 * int32 sums are the block's integers (exact, so their order is free) and its float steps are
 * the block's (k4_tail, or q6_K's one FMA), so it gets the matvec's bits. */

static inline __attribute__((always_inline)) void
mm_q4_K(__m256 *acc, const uint8_t *g, const block_q8_K *const *ys, const void *const *preps,
	int nt)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	__m256i scale[8], mn[2], isum[X8K_MM_TOK_MAX];
	k4_scales(g, scale, mn);
	for (int t = 0; t < nt; t++)
		isum[t] = _mm256_setzero_si256();
	for (int q0 = 0; q0 < 8; q0 += 4)
		for (int c = 0; c < 4; c++) {
			__m256i s0[X8K_MM_TOK_MAX], s1[X8K_MM_TOK_MAX];
			for (int t = 0; t < nt; t++)
				s0[t] = s1[t] = _mm256_setzero_si256();
			for (int q = q0; q < q0 + 4; q++) {
				__m256i v = loadu(g + 128 + 32 * (4 * q + c));
				__m256i lo = _mm256_and_si256(v, m4);
				__m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
				for (int t = 0; t < nt; t++) {
					const int8_t *a = ys[t]->qs + 64 * c + 4 * q;
					s0[t] = _mm256_add_epi16(s0[t],
								 _mm256_maddubs_epi16(lo, bcast4(a)));
					chain(&s0[t]);
					s1[t] = _mm256_add_epi16(s1[t],
								 _mm256_maddubs_epi16(hi, bcast4(a + 32)));
					chain(&s1[t]);
				}
			}
			for (int t = 0; t < nt; t++) {
				isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s0[t], scale[2 * c]));
				isum[t] = _mm256_add_epi32(isum[t],
							   _mm256_madd_epi16(s1[t], scale[2 * c + 1]));
			}
		}
	for (int t = 0; t < nt; t++)
		acc[t] = k4_tail(acc[t], g, ys[t], preps[t], isum[t], mn);
}

static inline __attribute__((always_inline)) void
mm_q5_K(__m256 *acc, const uint8_t *g, const block_q8_K *const *ys, const void *const *preps,
	int nt)
{
	const __m256i m5 = _mm256_set1_epi8(0x1f), m3 = _mm256_set1_epi8(0x1c);
	const __m256i m2 = _mm256_set1_epi8(0x03);
	__m256i scale[8], mn[2], isum[X8K_MM_TOK_MAX];
	k4_scales(g, scale, mn);
	for (int t = 0; t < nt; t++)
		isum[t] = _mm256_setzero_si256();
	for (int q0 = 0; q0 < 8; q0 += 4)
		for (int c = 0; c < 4; c++) {
			__m256i s0[X8K_MM_TOK_MAX], s1[X8K_MM_TOK_MAX];
			for (int t = 0; t < nt; t++)
				s0[t] = s1[t] = _mm256_setzero_si256();
			for (int q = q0; q < q0 + 4; q++) {
				const uint8_t *p = g + 128 + 160 * q;
				__m256i v = loadu(p + 32 * c), low2 = loadu(p + 128);
				__m256i l = _mm256_and_si256(
					c ? _mm256_srli_epi16(low2, 2 * c) : low2, m2);
				__m256i h = _mm256_or_si256(
					_mm256_and_si256(_mm256_srli_epi16(v, 3), m3), l);
				__m256i a5 = _mm256_and_si256(v, m5);
				for (int t = 0; t < nt; t++) {
					const int8_t *a = ys[t]->qs + 64 * c + 4 * q;
					s0[t] = _mm256_add_epi16(s0[t],
								 _mm256_maddubs_epi16(a5, bcast4(a)));
					chain(&s0[t]);
					s1[t] = _mm256_add_epi16(s1[t],
								 _mm256_maddubs_epi16(h, bcast4(a + 32)));
					chain(&s1[t]);
				}
			}
			for (int t = 0; t < nt; t++) {
				isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s0[t], scale[2 * c]));
				isum[t] = _mm256_add_epi32(isum[t],
							   _mm256_madd_epi16(s1[t], scale[2 * c + 1]));
			}
		}
	for (int t = 0; t < nt; t++)
		acc[t] = k4_tail(acc[t], g, ys[t], preps[t], isum[t], mn);
}

static inline __attribute__((always_inline)) void
mm_q6_K(__m256 *acc, const uint8_t *g, const block_q8_K *const *ys, const void *const *preps,
	int nt)
{
	(void)preps;
	const __m256i m6 = _mm256_set1_epi8(0x3f), m4 = _mm256_set1_epi8(0x0f);
	const __m256i top = _mm256_set1_epi8(0x30);
	const __m128i pairs = _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
	const __m256i first = word_of_dword_x2(0), second = word_of_dword_x2(1);
	__m256i isum[X8K_MM_TOK_MAX], off[X8K_MM_TOK_MAX];
	for (int t = 0; t < nt; t++)
		isum[t] = off[t] = _mm256_setzero_si256();
	const uint8_t *p = g + 144;
	for (int pp = 0; pp < 8; pp++, p += 192) {
		__m128i sc8 = _mm_loadu_si128((const __m128i *)(g + 16 + 16 * pp));
		__m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pairs));
		for (int t = 0; t < nt; t++)
			off[t] = _mm256_add_epi32(off[t], _mm256_madd_epi16(
								  sc, bcast4(ys[t]->bsums + 2 * pp)));
		__m256i sa = _mm256_shuffle_epi8(sc, first), sb = _mm256_shuffle_epi8(sc, second);
		for (int j = 0; j < 2; j++) {
			__m256i lo4 = loadu(p + 128 + 32 * j);
			__m256i ta[X8K_MM_TOK_MAX], tb[X8K_MM_TOK_MAX];
			for (int t = 0; t < nt; t++)
				ta[t] = tb[t] = _mm256_setzero_si256();
			for (int k = 2 * j; k < 2 * j + 2; k++) {
				__m256i v = loadu(p + 32 * k);
				__m256i n = _mm256_and_si256(k % 2 ? _mm256_srli_epi16(lo4, 4) : lo4, m4);
				__m256i b = _mm256_or_si256(
					_mm256_and_si256(_mm256_srli_epi16(v, 2), top), n);
				__m256i a6 = _mm256_and_si256(v, m6);
				for (int t = 0; t < nt; t++) {
					const int8_t *a = ys[t]->qs + 32 * pp + 4 * k;
					ta[t] = _mm256_add_epi16(ta[t],
								 _mm256_maddubs_epi16(a6, bcast4(a)));
					chain(&ta[t]);
					tb[t] = _mm256_add_epi16(tb[t],
								 _mm256_maddubs_epi16(b, bcast4(a + 16)));
					chain(&tb[t]);
				}
			}
			for (int t = 0; t < nt; t++) {
				isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(ta[t], sa));
				isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(tb[t], sb));
			}
		}
	}
	const __m256 hd = halves8(g);
	for (int t = 0; t < nt; t++) {
		__m256i is = _mm256_sub_epi32(isum[t], _mm256_slli_epi32(off[t], 5));
		__m256 d = _mm256_mul_ps(hd, _mm256_set1_ps(ys[t]->d));
		acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), d, acc[t]);
	}
}

/* ---- A prompt's chunk: the tokens over an unpacked super-block (x8_kunpack.h) ----------------
 *
 * Per four activation bytes of a token one broadcast, one vpmaddubsw against a register shared
 * by the four tokens, one vpaddw, and 12 vector registers live. */

/* isum[t] for t < nt (a constant after inlining): token t's super-block ys[t] against u, the
 * int16 sums through the scales after every `run` dwords (as many as cannot overflow), a
 * scale every `span` dwords. */
static inline __attribute__((always_inline)) void
unpacked_isums(__m256i *isum, const struct k_unpacked *u, const block_q8_K *const *ys, int nt,
	       int run, int span)
{
	for (int t = 0; t < nt; t++)
		isum[t] = _mm256_setzero_si256();
	for (int k0 = 0; k0 < 64; k0 += run) {
		__m256i s[4];
		for (int t = 0; t < nt; t++)
			s[t] = _mm256_setzero_si256();
		for (int k = k0; k < k0 + run; k++) {
			__m256i w = _mm256_load_si256(&u->q[k]);
			for (int t = 0; t < nt; t++) {
				s[t] = _mm256_add_epi16(s[t], _mm256_maddubs_epi16(
								      w, bcast4(ys[t]->qs + 4 * k)));
				chain(&s[t]);
			}
		}
		for (int t = 0; t < nt; t++)
			isum[t] = _mm256_add_epi32(isum[t],
						   _mm256_madd_epi16(s[t], u->scale[k0 / span]));
	}
}

/* q4_K (run 8: int16 sums over a whole sub-block, 8 * 2 * 15 * 128) and q5_K (run 4: four
 * dwords an int16 sum, 4 * 2 * 31 * 128), a scale every eight dwords, k4_tail's mins */
static inline __attribute__((always_inline)) void
tokens_k4(__m256 *acc, const struct k_unpacked *u, const uint8_t *g, const block_q8_K *const *ys,
	  const void *const *preps, int nt, int run)
{
	__m256i isum[4];
	unpacked_isums(isum, u, ys, nt, run, 8);
	for (int t = 0; t < nt; t++)
		acc[t] = k4_tail(acc[t], g, ys[t], preps[t], isum[t], u->mn);
}

static inline __attribute__((always_inline)) void
tokens_q4_K(__m256 *acc, const struct k_unpacked *u, const uint8_t *g,
	    const block_q8_K *const *ys, const void *const *preps, int nt)
{
	tokens_k4(acc, u, g, ys, preps, nt, 8);
}

static inline __attribute__((always_inline)) void
tokens_q5_K(__m256 *acc, const struct k_unpacked *u, const uint8_t *g,
	    const block_q8_K *const *ys, const void *const *preps, int nt)
{
	tokens_k4(acc, u, g, ys, preps, nt, 4);
}

/* q6_K: two dwords an int16 sum (2 * 2 * 63 * 128), a scale every four; the plus 32 comes
 * off as in block_q6_Kx8 */
static inline __attribute__((always_inline)) void
tokens_q6_K(__m256 *acc, const struct k_unpacked *u, const uint8_t *g,
	    const block_q8_K *const *ys, const void *const *preps, int nt)
{
	(void)preps;
	__m256i isum[4];
	unpacked_isums(isum, u, ys, nt, 2, 4);
	const __m256 hd = halves8(g);
	for (int t = 0; t < nt; t++) {
		__m256i off = _mm256_setzero_si256();
		for (int pp = 0; pp < 8; pp++)
			off = _mm256_add_epi32(off, _mm256_madd_epi16(u->pairs[pp],
								      bcast4(ys[t]->bsums + 2 * pp)));
		__m256i is = _mm256_sub_epi32(isum[t], _mm256_slli_epi32(off, 5));
		__m256 d = _mm256_mul_ps(hd, _mm256_set1_ps(ys[t]->d));
		acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), d, acc[t]);
	}
}

void krn_avx2_matmul_x8_q4_K(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	x8k_matmul_unpacked(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK_K, r0, r1,
			    sizeof(block_q4_K), k4_prepare, mm_q4_K, unpack_q4_K, tokens_q4_K);
}

void krn_avx2_matmul_x8_q5_K(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	x8k_matmul_unpacked(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK_K, r0, r1,
			    sizeof(block_q5_K), k4_prepare, mm_q5_K, unpack_q5_K, tokens_q5_K);
}

void krn_avx2_matmul_x8_q6_K(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	x8k_matmul_unpacked(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK_K, r0, r1,
			    sizeof(block_q6_K), NULL, mm_q6_K, unpack_q6_K, tokens_q6_K);
}

/* ---- q2_K ---------------------------------------------------------------------------------
 *
 * One driver for one token and several (x8k_matmul; the matvec is it with one token, so the
 * two agree bit for bit by construction). For each sub-block (half h, bit pair j, e) its four
 * chunks' bits 2j are shifted down and masked to 0 .. 3, multiplied by vpmaddubsw and summed
 * in int16 (at most 4 * 2 * 3 * 128), then one vpmaddwd with the rows' scale in both halves
 * of each lane widens and scales them: the chunks of a half are read four times, from L1. The
 * mins go against q2_prepare's bytes (int16 pairs at most 15 * 127 * 2, four of them), the
 * float tail is k4_tail's. */
static inline __attribute__((always_inline)) void
mm_q2_K(__m256 *acc, const uint8_t *g, const block_q8_K *const *ys, const void *const *preps,
	int nt)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);
	__m256i sc[4], isum[X8K_MM_TOK];
	for (int k = 0; k < 4; k++)
		sc[k] = _mm256_and_si256(loadu(g + 32 + 32 * k), m4);
	for (int t = 0; t < nt; t++)
		isum[t] = _mm256_setzero_si256();
	/* unrolled, so that the shift counts and pshufb controls are constants */
	X8K_UNROLL(2)
	for (int h = 0; h < 2; h++)
		X8K_UNROLL(4)
		for (int j = 0; j < 4; j++)
			X8K_UNROLL(2)
			for (int e = 0; e < 2; e++) {
				__m256i p[X8K_MM_TOK];
				for (int t = 0; t < nt; t++)
					p[t] = _mm256_setzero_si256();
				for (int q = 4 * e; q < 4 * e + 4; q++) {
					__m256i v = loadu(g + 160 + 32 * (8 * h + q));
					__m256i u = _mm256_and_si256(_mm256_srli_epi16(v, 2 * j), m2);
					for (int t = 0; t < nt; t++)
						p[t] = _mm256_add_epi16(
							p[t],
							_mm256_maddubs_epi16(
								u, bcast4(ys[t]->qs + 128 * h +
									  32 * j + 4 * q)));
				}
				int sb = 8 * h + 2 * j + e;
				__m256i scv = _mm256_shuffle_epi8(sc[sb / 4], byte_of_dword_x2(sb % 4));
				for (int t = 0; t < nt; t++)
					isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p[t], scv));
			}
	__m256i mn[4];
	for (int k = 0; k < 4; k++)
		mn[k] = _mm256_and_si256(_mm256_srli_epi16(loadu(g + 32 + 32 * k), 4), m4);
	const __m256 hd = halves8(g), hm = halves8(g + 16);
	for (int t = 0; t < nt; t++) {
		const int8_t *prep = preps[t];
		__m256i hi = _mm256_setzero_si256(), lo = _mm256_setzero_si256();
		for (int k = 0; k < 4; k++) {
			hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(mn[k], bcast4(prep + 4 * k)));
			lo = _mm256_add_epi16(lo,
					      _mm256_maddubs_epi16(mn[k], bcast4(prep + 16 + 4 * k)));
		}
		__m256i mins = _mm256_add_epi32(_mm256_madd_epi16(hi, _mm256_set1_epi16(128)),
						_mm256_madd_epi16(lo, _mm256_set1_epi16(1)));
		__m256 d = _mm256_mul_ps(hd, _mm256_set1_ps(ys[t]->d));
		__m256 dm = _mm256_mul_ps(hm, _mm256_set1_ps(ys[t]->d));
		acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), d, acc[t]);
		acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), dm, acc[t]);
	}
}

void krn_avx2_matvec_x8_q2_K(float *y, const void *w, size_t rows, const void *xq, size_t n,
			     size_t r0, size_t r1)
{
	x8k_matmul(y, 0, w, rows, xq, 0, 1, n / KRN_QK_K, r0, r1, sizeof(block_q2_K), q2_prepare,
		   mm_q2_K);
}

void krn_avx2_matmul_x8_q2_K(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	x8k_matmul(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK_K, r0, r1, sizeof(block_q2_K),
		   q2_prepare, mm_q2_K);
}

/* ---- q3_K ---------------------------------------------------------------------------------
 *
 * As q2_K: for each sub-block its four chunks' elements are rebuilt as value plus 4 (0 .. 7)
 * from qs bits 2j and hmask bit 4h + j by shifts and masks, multiplied by vpmaddubsw and
 * summed in int16 from the sub-block's -4 * bsums (q3_prepare, in the low half of each lane:
 * at most 8128 + 4 * 2 * 7 * 128 in all), then one vpmaddwd with the row's signed scale in
 * both halves widens and scales them. One FMA of d a super-block. */
static inline __attribute__((always_inline)) void
mm_q3_K(__m256 *acc, const uint8_t *g, const block_q8_K *const *ys, const void *const *preps,
	int nt)
{
	const __m256i m2 = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4),
		      k32 = _mm256_set1_epi16(32);
	if (nt == 1) /* a constant: the matvec, which streams the group (see above) */
		head_first(g, 880);
	__m256i sc[4], isum[X8K_MM_TOK];
	q3_scales(g, sc);
	for (int t = 0; t < nt; t++)
		isum[t] = _mm256_setzero_si256();
	/* unrolled, so that the shift counts and pshufb controls are constants */
	X8K_UNROLL(2)
	for (int h = 0; h < 2; h++)
		X8K_UNROLL(4)
		for (int j = 0; j < 4; j++)
			X8K_UNROLL(2)
			for (int e = 0; e < 2; e++) {
				int sb = 8 * h + 2 * j + e, hb = 4 * h + j;
				__m256i p[X8K_MM_TOK];
				for (int t = 0; t < nt; t++)
					p[t] = _mm256_set1_epi32(((const int32_t *)preps[t])[sb] &
								 0xffff);
				for (int q = 4 * e; q < 4 * e + 4; q++) {
					__m256i v = loadu(g + 112 + 32 * (8 * h + q));
					__m256i hv = loadu(g + 624 + 32 * q);
					__m256i hi = hb >= 2 ? _mm256_srli_epi16(hv, hb - 2)
							     : _mm256_slli_epi16(hv, 2 - hb);
					__m256i x = _mm256_or_si256(
						_mm256_and_si256(_mm256_srli_epi16(v, 2 * j), m2),
						_mm256_and_si256(hi, four));
					for (int t = 0; t < nt; t++)
						p[t] = _mm256_add_epi16(
							p[t],
							_mm256_maddubs_epi16(
								x, bcast4(ys[t]->qs + 128 * h +
									  32 * j + 4 * q)));
				}
				__m256i scv = _mm256_sub_epi16(
					_mm256_shuffle_epi8(sc[sb / 4], byte_of_dword_x2(sb % 4)), k32);
				for (int t = 0; t < nt; t++)
					isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p[t], scv));
			}
	const __m256 hd = halves8(g);
	for (int t = 0; t < nt; t++) {
		__m256 d = _mm256_mul_ps(hd, _mm256_set1_ps(ys[t]->d));
		acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), d, acc[t]);
	}
}

void krn_avx2_matvec_x8_q3_K(float *y, const void *w, size_t rows, const void *xq, size_t n,
			     size_t r0, size_t r1)
{
	x8k_matmul(y, 0, w, rows, xq, 0, 1, n / KRN_QK_K, r0, r1, sizeof(block_q3_K), q3_prepare,
		   mm_q3_K);
}

void krn_avx2_matmul_x8_q3_K(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			     size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	x8k_matmul(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK_K, r0, r1, sizeof(block_q3_K),
		   q3_prepare, mm_q3_K);
}
