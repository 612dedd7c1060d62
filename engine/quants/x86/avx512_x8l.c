/* engine/quants/x86/avx512_x8l.c: AVX-512 kernels for q8_0, q5_0, q4_0, q5_1 and q4_1 in the x8
 * layout (q5_1 and q4_1: one driver for one token and several, at the end).
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
 * chains of vpdpbusd a block instead of two changed nothing. q4_0 (2048 and 4096 columns, 2.6
 * GHz): 50-55 GB/s in cache, 2.4-2.6x the one-row kernel, and from DRAM 0.92-1.0x a plain read
 * where that reaches 0.55x.
 */
#include "internal.h"
#include "x8_kernels.h"
#include "vnni.h"
#define X8_MATVEC_AHEAD 0 /* see avx2_x8l.c */
#include "x8_legacy.h"

/* 16 activation bytes in both halves */
static inline __m256i bcast16(const int8_t *p)
{
	return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)p));
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

/* q4_0: elements 4c .. 4c + 3 (a, & 0x0f) and 16 + 4c .. 16 + 4c + 3 (h, & 0xf0: times 16)
 * of the eight rows from chunk c, in four chains; the 16 is taken off h's sum by a shift,
 * exact as q5_0's eight. 2.6 ns a block of eight rows in cache (54 GB/s, 2048 columns), near
 * both the loads (13 a block, two a cycle) and the vector pipes (about 27 instructions):
 * taking the low halves' activation dwords out of one 16-byte load by vpshufd, as q8_0 does,
 * gave 52 GB/s. */
static inline __attribute__((always_inline)) __m256
block_q4_0x8(__m256 acc, const uint8_t *g, const block_q8_0 *y, int32_t base, float dy)
{
	const __m256i lo = _mm256_set1_epi8(0x0f), hi = _mm256_set1_epi8((char)0xf0);
	__m256i sa[2] = { _mm256_set1_epi32(base), _mm256_setzero_si256() };
	__m256i sh[2] = { _mm256_setzero_si256(), _mm256_setzero_si256() };
	for (int c = 0; c < 4; c++) {
		__m256i q = loadu(g + 16 + 32 * c);
		/* one load for both ANDs, as in q5_0 */
		__asm__("" : "+v"(q));
		sa[c % 2] = _mm256_dpbusd_epi32(sa[c % 2], _mm256_and_si256(q, lo),
						bcast4(y->qs + 4 * c));
		sh[c % 2] = _mm256_dpbusd_epi32(sh[c % 2], _mm256_and_si256(q, hi),
						bcast4(y->qs + 16 + 4 * c));
	}
	__m256i a = _mm256_add_epi32(sa[0], sa[1]), h = _mm256_add_epi32(sh[0], sh[1]);
	return block_tail(acc, g, _mm256_add_epi32(a, _mm256_srai_epi32(h, 4)), dy);
}

void krn_avx512_matvec_x8_q8_0(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1)
{
	x8_matvec(y, w, rows, xq, n / KRN_QK, r0, r1, sizeof(block_q8_0), 128, block_q8_0x8);
}

void krn_avx512_matvec_x8_q5_0(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1)
{
	x8_matvec(y, w, rows, xq, n / KRN_QK, r0, r1, sizeof(block_q5_0), 16, block_q5_0x8);
}

void krn_avx512_matvec_x8_q4_0(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1)
{
	x8_matvec(y, w, rows, xq, n / KRN_QK, r0, r1, sizeof(block_q4_0), 8, block_q4_0x8);
}

/* ---- Several tokens at once ------------------------------------------------------------------
 *
 * Each 32-byte vector of quants is loaded (and for q4_0 split into its two nibbles) once and
 * multiplied into X8_MM_TOK tokens' chains, the activation dword a broadcast memory operand of
 * vpdpbusd. The integer sums are exact, so their order is free; the float tail is
 * block_tail's, token by token, as the matvec's. q8_0, q4_0 and q5_0 take two groups at once
 * (mm2_*, x8_legacy.h's x8_mm2_group), each activation dword broadcast into a register once
 * for both: 64 tokens of 768 columns in cache (tests/bench_quants, 2.6 GHz Zen 4, shared,
 * indicative) q8_0 135 -> 176, q4_0 74 -> 94, q5_0 81 -> 91 GB/s of weights x tokens, near
 * two vpdpbusd a cycle for q8_0 and q4_0. */

static inline __attribute__((always_inline)) void
mm_q8_0(__m256 *acc, const uint8_t *g, const block_q8_0 *const *ys, const int32_t *base,
	const float *dy, int nt)
{
	__m256i s[X8_MM_TOK][2];
	for (int t = 0; t < nt; t++) {
		s[t][0] = _mm256_set1_epi32(base[(size_t)t * X8_PREPARED]);
		s[t][1] = _mm256_setzero_si256();
	}
	for (int c = 0; c < 8; c++) {
		__m256i v = loadu(g + 16 + 32 * c);
		for (int t = 0; t < nt; t++)
			s[t][c % 2] = dot_bcast(s[t][c % 2], v, ys[t]->qs + 4 * c);
	}
	for (int t = 0; t < nt; t++)
		acc[t] = block_tail(acc[t], g, _mm256_add_epi32(s[t][0], s[t][1]),
				    dy[(size_t)t * X8_PREPARED]);
}

/* q4_0: the high nibbles shifted down once for all the tokens (the matvec's & 0xf0 and a
 * shift of the sum give the same integer). */
static inline __attribute__((always_inline)) void
mm_q4_0(__m256 *acc, const uint8_t *g, const block_q8_0 *const *ys, const int32_t *base,
	const float *dy, int nt)
{
	const __m256i lo = _mm256_set1_epi8(0x0f);
	__m256i s[X8_MM_TOK][2];
	for (int t = 0; t < nt; t++) {
		s[t][0] = _mm256_set1_epi32(base[(size_t)t * X8_PREPARED]);
		s[t][1] = _mm256_setzero_si256();
	}
	for (int c = 0; c < 4; c++) {
		__m256i q = loadu(g + 16 + 32 * c);
		__m256i a = _mm256_and_si256(q, lo);
		__m256i h = _mm256_and_si256(_mm256_srli_epi16(q, 4), lo);
		for (int t = 0; t < nt; t++) {
			s[t][0] = dot_bcast(s[t][0], a, ys[t]->qs + 4 * c);
			s[t][1] = dot_bcast(s[t][1], h, ys[t]->qs + 16 + 4 * c);
		}
	}
	for (int t = 0; t < nt; t++)
		acc[t] = block_tail(acc[t], g, _mm256_add_epi32(s[t][0], s[t][1]),
				    dy[(size_t)t * X8_PREPARED]);
}

/* Two groups (x8_mm2_block_fn): each token's activation dword broadcast into a register
 * once, for both groups' chains; one chain per group and token (the eight are independent),
 * split in two (CHAINS) for two tokens or one. Why: a batch of two decodes through the
 * two-token call, which had four chains of eight dependent vpdpbusd a block (a 1.09x batch 2
 * on the issue 42 Zen 5, where the four-token call's eight chains gave 2.11x at batch 4);
 * that their latency is the bound is reasoned, not measured: no AVX-512 machine since. */
#define CHAINS(nt) ((nt) <= 2 ? 2 : 1)

/* the sum of chain set s's CHAINS(nt) chains */
static inline __attribute__((always_inline)) __m256i chains_sum(const __m256i s[2], int nt)
{
	return CHAINS(nt) == 2 ? _mm256_add_epi32(s[0], s[1]) : s[0];
}

static inline __attribute__((always_inline)) void
mm2_q8_0(__m256 (*acc)[X8_MM_TOK], const uint8_t *g, size_t gs, const block_q8_0 *const *ys,
	 const int32_t *base, const float *dy, int nt)
{
	__m256i s[2][X8_MM_TOK][2];
	for (int t = 0; t < nt; t++) {
		s[0][t][0] = s[1][t][0] = _mm256_set1_epi32(base[(size_t)t * X8_PREPARED]);
		s[0][t][1] = s[1][t][1] = _mm256_setzero_si256();
	}
	for (int c = 0; c < 8; c++) {
		__m256i v0 = loadu(g + 16 + 32 * c), v1 = loadu(g + gs + 16 + 32 * c);
		const int k = c % CHAINS(nt);
		for (int t = 0; t < nt; t++) {
			__m256i b = bcast4(ys[t]->qs + 4 * c);
			s[0][t][k] = _mm256_dpbusd_epi32(s[0][t][k], v0, b);
			s[1][t][k] = _mm256_dpbusd_epi32(s[1][t][k], v1, b);
		}
	}
	for (int h = 0; h < 2; h++)
		for (int t = 0; t < nt; t++)
			acc[h][t] = block_tail(acc[h][t], g + h * gs, chains_sum(s[h][t], nt),
					       dy[(size_t)t * X8_PREPARED]);
}

static inline __attribute__((always_inline)) void
mm2_q4_0(__m256 (*acc)[X8_MM_TOK], const uint8_t *g, size_t gs, const block_q8_0 *const *ys,
	 const int32_t *base, const float *dy, int nt)
{
	const __m256i lo = _mm256_set1_epi8(0x0f);
	__m256i s[2][X8_MM_TOK][2];
	for (int t = 0; t < nt; t++) {
		s[0][t][0] = s[1][t][0] = _mm256_set1_epi32(base[(size_t)t * X8_PREPARED]);
		s[0][t][1] = s[1][t][1] = _mm256_setzero_si256();
	}
	for (int c = 0; c < 4; c++) {
		__m256i q0 = loadu(g + 16 + 32 * c), q1 = loadu(g + gs + 16 + 32 * c);
		__m256i a0 = _mm256_and_si256(q0, lo), a1 = _mm256_and_si256(q1, lo);
		__m256i h0 = _mm256_and_si256(_mm256_srli_epi16(q0, 4), lo);
		__m256i h1 = _mm256_and_si256(_mm256_srli_epi16(q1, 4), lo);
		const int k = CHAINS(nt) - 1; /* the high nibbles' chain */
		for (int t = 0; t < nt; t++) {
			__m256i ba = bcast4(ys[t]->qs + 4 * c), bh = bcast4(ys[t]->qs + 16 + 4 * c);
			s[0][t][0] = _mm256_dpbusd_epi32(s[0][t][0], a0, ba);
			s[1][t][0] = _mm256_dpbusd_epi32(s[1][t][0], a1, ba);
			s[0][t][k] = _mm256_dpbusd_epi32(s[0][t][k], h0, bh);
			s[1][t][k] = _mm256_dpbusd_epi32(s[1][t][k], h1, bh);
		}
	}
	for (int h = 0; h < 2; h++)
		for (int t = 0; t < nt; t++)
			acc[h][t] = block_tail(acc[h][t], g + h * gs, chains_sum(s[h][t], nt),
					       dy[(size_t)t * X8_PREPARED]);
}

/* One q5_0 or q5_1 block's integer sums against nt tokens' activation quants qs[t], added to
 * sa[t] (the low five bits as unsigned bytes) and sh[t] (their top three, eight times over, for
 * the caller's shift): the 32 x 8 quants at q, their fifth bits at hb. */
static inline __attribute__((always_inline)) void
q5_isums(__m256i *sa, __m256i *sh, const uint8_t *q, const uint8_t *hb, const int8_t *const *qs,
	 int nt)
{
	const __m256i low5 = _mm256_set1_epi8(0x1f), top3 = _mm256_set1_epi8((char)0xe0);
	__m256i low2 = loadu(hb);
	for (int c = 0; c < 4; c++) {
		const long long m = (long long)(1ull << (2 * c) << 32 | 1ull << (2 * c + 1) << 24);
		__m256i v = loadu(q + 32 * c);
		__m256i l = _mm256_gf2p8affine_epi64_epi8(low2, _mm256_set1_epi64x(m), 0);
		__m256i h8 = _mm256_ternarylogic_epi32(v, l, top3, 0xec), a = _mm256_and_si256(v, low5);
		for (int t = 0; t < nt; t++) {
			sa[t] = dot_bcast(sa[t], a, qs[t] + 4 * c);
			sh[t] = dot_bcast(sh[t], h8, qs[t] + 16 + 4 * c);
		}
	}
}

/* q5_0: the unpacking of block_q5_0x8 (the AND, the GF(2) affine map and the merge) once
 * for the tokens; each token's a and 8h sums are the matvec's integers. */
static inline __attribute__((always_inline)) void
mm_q5_0(__m256 *acc, const uint8_t *g, const block_q8_0 *const *ys, const int32_t *base,
	const float *dy, int nt)
{
	__m256i sa[X8_MM_TOK], sh[X8_MM_TOK];
	const int8_t *qs[X8_MM_TOK];
	for (int t = 0; t < nt; t++) {
		sa[t] = _mm256_set1_epi32(base[(size_t)t * X8_PREPARED]);
		sh[t] = _mm256_setzero_si256();
		qs[t] = ys[t]->qs;
	}
	q5_isums(sa, sh, g + 16, g + 144, qs, nt);
	for (int t = 0; t < nt; t++)
		acc[t] = block_tail(acc[t], g, _mm256_add_epi32(sa[t], _mm256_srai_epi32(sh[t], 3)),
				    dy[(size_t)t * X8_PREPARED]);
}

/* q5_0, two groups: mm_q5_0's unpacking for each, the activation dwords shared; a group's
 * and token's a and 8h sums are two chains already (four vpdpbusd each a block) */
static inline __attribute__((always_inline)) void
mm2_q5_0(__m256 (*acc)[X8_MM_TOK], const uint8_t *g, size_t gs, const block_q8_0 *const *ys,
	 const int32_t *base, const float *dy, int nt)
{
	const __m256i low5 = _mm256_set1_epi8(0x1f), top3 = _mm256_set1_epi8((char)0xe0);
	__m256i sa[2][X8_MM_TOK], sh[2][X8_MM_TOK];
	for (int t = 0; t < nt; t++) {
		sa[0][t] = sa[1][t] = _mm256_set1_epi32(base[(size_t)t * X8_PREPARED]);
		sh[0][t] = sh[1][t] = _mm256_setzero_si256();
	}
	for (int c = 0; c < 4; c++) {
		const long long m = (long long)(1ull << (2 * c) << 32 | 1ull << (2 * c + 1) << 24);
		__m256i a[2], h8[2];
		for (int h = 0; h < 2; h++) {
			__m256i q = loadu(g + h * gs + 16 + 32 * c);
			__m256i l = _mm256_gf2p8affine_epi64_epi8(loadu(g + h * gs + 144),
								  _mm256_set1_epi64x(m), 0);
			h8[h] = _mm256_ternarylogic_epi32(q, l, top3, 0xec);
			a[h] = _mm256_and_si256(q, low5);
		}
		for (int t = 0; t < nt; t++) {
			__m256i ba = bcast4(ys[t]->qs + 4 * c), bh = bcast4(ys[t]->qs + 16 + 4 * c);
			for (int h = 0; h < 2; h++) {
				sa[h][t] = _mm256_dpbusd_epi32(sa[h][t], a[h], ba);
				sh[h][t] = _mm256_dpbusd_epi32(sh[h][t], h8[h], bh);
			}
		}
	}
	for (int h = 0; h < 2; h++)
		for (int t = 0; t < nt; t++)
			acc[h][t] = block_tail(acc[h][t], g + h * gs,
					       _mm256_add_epi32(sa[h][t],
								_mm256_srai_epi32(sh[h][t], 3)),
					       dy[(size_t)t * X8_PREPARED]);
}

void krn_avx512_matmul_x8_q5_0(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1)
{
	x8_matmul(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK, r0, r1, sizeof(block_q5_0), 16,
		  mm_q5_0, mm2_q5_0);
}

void krn_avx512_matmul_x8_q8_0(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1)
{
	x8_matmul(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK, r0, r1, sizeof(block_q8_0), 128,
		  mm_q8_0, mm2_q8_0);
}

void krn_avx512_matmul_x8_q4_0(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1)
{
	x8_matmul(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK, r0, r1, sizeof(block_q4_0), 8,
		  mm_q4_0, mm2_q4_0);
}

/* ---- q4_1 and q5_1 (x8_legacy.h's Q8_1 driver) ------------------------------------------------
 *
 * q4_0's and q5_0's integer work on the quants 32 bytes later, with no offset to start the
 * sums from; the float tail adds the eight rows' m * s. One token is the driver with one. */

static inline __attribute__((always_inline)) void
mm_q4_1(__m256 *acc, const uint8_t *g, const block_q8_1 *const *ys, const float *dy,
	const float *sy, int nt)
{
	const __m256i lo = _mm256_set1_epi8(0x0f);
	__m256i s[X8_MM_TOK][2];
	for (int t = 0; t < nt; t++)
		s[t][0] = s[t][1] = _mm256_setzero_si256();
	for (int c = 0; c < 4; c++) {
		__m256i q = loadu(g + 32 + 32 * c);
		__m256i a = _mm256_and_si256(q, lo);
		__m256i h = _mm256_and_si256(_mm256_srli_epi16(q, 4), lo);
		for (int t = 0; t < nt; t++) {
			s[t][0] = dot_bcast(s[t][0], a, ys[t]->qs + 4 * c);
			s[t][1] = dot_bcast(s[t][1], h, ys[t]->qs + 16 + 4 * c);
		}
	}
	for (int t = 0; t < nt; t++)
		acc[t] = block_tail1(acc[t], g, _mm256_add_epi32(s[t][0], s[t][1]),
				     dy[(size_t)t * X8_PREPARED], sy[(size_t)t * X8_PREPARED]);
}

static inline __attribute__((always_inline)) void
mm_q5_1(__m256 *acc, const uint8_t *g, const block_q8_1 *const *ys, const float *dy,
	const float *sy, int nt)
{
	__m256i sa[X8_MM_TOK], sh[X8_MM_TOK];
	const int8_t *qs[X8_MM_TOK];
	for (int t = 0; t < nt; t++) {
		sa[t] = sh[t] = _mm256_setzero_si256();
		qs[t] = ys[t]->qs;
	}
	q5_isums(sa, sh, g + 32, g + 160, qs, nt);
	for (int t = 0; t < nt; t++)
		acc[t] = block_tail1(acc[t], g, _mm256_add_epi32(sa[t], _mm256_srai_epi32(sh[t], 3)),
				     dy[(size_t)t * X8_PREPARED], sy[(size_t)t * X8_PREPARED]);
}

void krn_avx512_matvec_x8_q4_1(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1)
{
	x8_matmul1(y, 0, w, rows, xq, 0, 1, n / KRN_QK, r0, r1, sizeof(block_q4_1), mm_q4_1);
}

void krn_avx512_matvec_x8_q5_1(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1)
{
	x8_matmul1(y, 0, w, rows, xq, 0, 1, n / KRN_QK, r0, r1, sizeof(block_q5_1), mm_q5_1);
}

void krn_avx512_matmul_x8_q4_1(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1)
{
	x8_matmul1(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK, r0, r1, sizeof(block_q4_1),
		   mm_q4_1);
}

void krn_avx512_matmul_x8_q5_1(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1)
{
	x8_matmul1(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK, r0, r1, sizeof(block_q5_1),
		   mm_q5_1);
}
