/* engine/quants/x86/avx512_x8k.c: AVX-512 kernels for q4_K, q5_K, q6_K, q2_K and q3_K in the x8
 * layout (q2_K and q3_K: one driver for one token and several, at the end).
 *
 * Eight rows at once, row r in 32-bit lane r of a ymm (layouts: x8_kquants.c). Each vpdpbusd
 * multiplies four elements of all eight rows with one activation dword, taken as a broadcast
 * memory operand, into one sub-block's chain; a sub-block's sum then takes the eight rows'
 * scales with one vpmulld (it can exceed int16: 32 * 31 * 127). The min and offset terms are
 * lane-wise too, and per super-block the eight rows' sums become floats together: one
 * vcvtph2ps for their d, a multiply by the activation's d, an FMA. No vector is ever summed
 * horizontally. 256 bits, not 512: Zen 4 runs 512-bit integer ops as two halves.
 *
 * Measured on Zen 4 (tests/bench_quants, 4096 columns, one thread), against dot256.h's
 * one-row kernels: in cache 2.3-3x as fast (q4_K about 64 GB/s, 21 before), from DRAM
 * 0.9-0.95x a plain read (0.6x before); at Falcon's 18176 columns 0.7-0.8x (0.33x before).
 * What is left in cache is vector instructions executed: the unpacking (for each two
 * vpdpbusd, two instructions for q4_K, three for q5_K and q6_K) and the per-sub-block scale
 * multiplies. Reading a super-block's quants out of order costs from DRAM: q6_K with four
 * sub-block pairs interleaved (192 bytes apart) fell from 0.9x to 0.7x the read, and so did
 * software prefetching (prefetcht0 or prefetchnta, 1-12 KB ahead: 0.5-0.8x; again for q6_K
 * 1-4 groups ahead, prefetcht0/t1/nta: 0.55-0.77x against 0.82-0.84x without). So does
 * reading a group's header (d, scales) after its quants, as the kernels did: each group then
 * starts with a jump back of a whole group for the hardware prefetcher. Touching the header's
 * lines first (head_first) took q6_K from 0.81-0.84x to 0.87-0.90x the read (at 18176
 * columns 0.78x to 0.88x); q4_K and q5_K gained less, 0.005-0.03x at 4096 columns (within
 * the runs' spread) and 0.03-0.05x at 18176 (0.85-0.87x to 0.89-0.90x).
 */
#include "internal.h"
#include "x8_kernels.h"
#include "vnni.h"
#define X8K_MATVEC_AHEAD 0 /* see avx2_x8k.c */
#include "x8_kquants.h"
#include "x8_kunpack.h"

/* 16 activation bytes in both halves */
static inline __m256i bcast16(const int8_t *p)
{
	return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)p));
}

/* dword k (a constant) of each 128-bit half of v in every lane of that half (of a bcast16:
 * in all eight); written out since vpshufd takes its selector as an immediate */
static inline __m256i dword_of(__m256i v, int k)
{
	return k == 0 ? _mm256_shuffle_epi32(v, 0x00)
	       : k == 1 ? _mm256_shuffle_epi32(v, 0x55)
	       : k == 2 ? _mm256_shuffle_epi32(v, 0xaa)
			: _mm256_shuffle_epi32(v, 0xff);
}

/* pshufb control: byte j of every dword, zero-extended to the dword */
static inline __m256i byte_of_dword(int j)
{
	const int f = (int)0x80808000;
	return _mm256_setr_epi32(j | f, (4 + j) | f, (8 + j) | f, (12 + j) | f, j | f, (4 + j) | f,
				 (8 + j) | f, (12 + j) | f);
}

/* GF(2) affine matrix, bytewise: output bit i is the parity of (input & matrix byte 7 - i).
 * Moves input bits from .. from + n - 1 to to .. to + n - 1 and clears all others. */
static inline __m256i bits_move(int from, int to, int n)
{
	unsigned long long m = 0;
	for (int k = 0; k < n; k++)
		m |= (1ull << (from + k)) << (8 * (7 - (to + k)));
	return _mm256_set1_epi64x((long long)m);
}

/* ---- q4_K and q5_K ----------------------------------------------------------------------- */

/* The tail of a q4_K or q5_K super-block of the eight rows: s[8] holds each sub-block's dot,
 * the odd ones times 2^shift (16 for q4_K, 8 for q5_K). The scales and mins unpack from the
 * header's three words per row (ggml's get_scale_min_k4 bit moves, lane-wise), each scale is
 * picked out of its byte by a pshufb; the mins go against k4_prepare's bytes. */
static inline __attribute__((always_inline)) __m256
k4_tail(__m256 acc, const uint8_t *g, const block_q8_K *y, const int8_t *prep,
	const __m256i s[8], int shift)
{
	const __m256i m6 = _mm256_set1_epi8(0x3f), m4 = _mm256_set1_epi8(0x0f);
	__m256i w0 = loadu(g + 32), w1 = loadu(g + 64), w2 = loadu(g + 96);
	/* select: bits of the third operand set take the first, others the second (0xe4) */
	__m256i sc[2] = {
		_mm256_and_si256(w0, m6),
		_mm256_and_si256(_mm256_ternarylogic_epi32(w2, _mm256_srli_epi32(w0, 2), m4, 0xe4),
				 m6),
	};
	__m256i mn[2] = {
		_mm256_and_si256(w1, m6),
		_mm256_and_si256(_mm256_ternarylogic_epi32(_mm256_srli_epi32(w2, 4),
							   _mm256_srli_epi32(w1, 2), m4, 0xe4),
				 m6),
	};
	__m256i even = _mm256_setzero_si256(), odd = _mm256_setzero_si256();
	for (int j = 0; j < 8; j += 2) {
		__m256i se = _mm256_shuffle_epi8(sc[j / 4], byte_of_dword(j % 4));
		__m256i so = _mm256_shuffle_epi8(sc[j / 4], byte_of_dword(j % 4 + 1));
		even = _mm256_add_epi32(even, _mm256_mullo_epi32(s[j], se));
		odd = _mm256_add_epi32(odd, _mm256_mullo_epi32(s[j + 1], so));
	}
	__m256i mhi = dot_bcast(_mm256_setzero_si256(), mn[0], prep);
	__m256i mlo = dot_bcast(_mm256_setzero_si256(), mn[0], prep + 8);
	mhi = dot_bcast(mhi, mn[1], prep + 4);
	mlo = dot_bcast(mlo, mn[1], prep + 12);
	__m256i mins = _mm256_add_epi32(_mm256_slli_epi32(mhi, 7), mlo);
	__m256i isum = _mm256_add_epi32(_mm256_slli_epi32(even, shift), odd);
	__m256 d = _mm256_mul_ps(halves8(g), _mm256_set1_ps(y->d / (float)(1 << shift)));
	__m256 dm = _mm256_mul_ps(halves8(g + 16), _mm256_set1_ps(y->d));
	acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc);
	return _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), dm, acc);
}

/* q4_K: for each q, the four 32-byte vectors of chunks c = 0 .. 3: low nibbles into sub-block
 * 2c's chain, high nibbles times 16 into 2c + 1's. Eight chains of eight. */
static inline __attribute__((always_inline)) __m256
block_q4_Kx8(__m256 acc, const uint8_t *g, const block_q8_K *y, const void *prep)
{
	const __m256i lo = _mm256_set1_epi8(0x0f), hi = _mm256_set1_epi8((char)0xf0);
	head_first(g, 128); /* k4_tail reads it last */
	__m256i s[8];
	for (int j = 0; j < 8; j++)
		s[j] = _mm256_setzero_si256();
	const uint8_t *p = g + 128;
	for (int q = 0; q < 8; q++)
		for (int c = 0; c < 4; c++, p += 32) {
			const int8_t *a = y->qs + 64 * c + 4 * q;
			__m256i v = loadu(p);
			/* one load for both ANDs, where GCC would fold it into each */
			__asm__("" : "+v"(v));
			s[2 * c] = dot_bcast(s[2 * c], _mm256_and_si256(v, lo), a);
			s[2 * c + 1] = dot_bcast(s[2 * c + 1], _mm256_and_si256(v, hi), a + 32);
		}
	return k4_tail(acc, g, y, prep, s, 4);
}

/* q5_K: as q4_K, with the odd sub-blocks times 8 (v & 0xe0 and low2's two bits) */
static inline __attribute__((always_inline)) __m256
block_q5_Kx8(__m256 acc, const uint8_t *g, const block_q8_K *y, const void *prep)
{
	const __m256i low5 = _mm256_set1_epi8(0x1f), top3 = _mm256_set1_epi8((char)0xe0);
	head_first(g, 128); /* k4_tail reads it last */
	__m256i s[8];
	for (int j = 0; j < 8; j++)
		s[j] = _mm256_setzero_si256();
	const uint8_t *p = g + 128;
	for (int q = 0; q < 8; q++, p += 160) {
		__m256i low2 = loadu(p + 128);
		for (int c = 0; c < 4; c++) {
			const int8_t *a = y->qs + 64 * c + 4 * q;
			__m256i v = loadu(p + 32 * c);
			__asm__("" : "+v"(v)); /* as in q4_K: 0.62x to 0.66x the read in cache */
			__m256i l = _mm256_gf2p8affine_epi64_epi8(low2, bits_move(2 * c, 3, 2), 0);
			/* (v & top3) | l: ternary-logic table (A & C) | B */
			__m256i h8 = _mm256_ternarylogic_epi32(v, l, top3, 0xec);
			s[2 * c] = dot_bcast(s[2 * c], _mm256_and_si256(v, low5), a);
			s[2 * c + 1] = dot_bcast(s[2 * c + 1], h8, a + 32);
		}
	}
	return k4_tail(acc, g, y, prep, s, 3);
}

/* ---- q6_K -------------------------------------------------------------------------------- */

/* q6_K's quants are stored plus 32; the activation's part of taking that off, per sub-block s:
 * -32 * bsums[s], times 4 for the odd ones (their quants come times 4). */
static void q6_prepare(const block_q8_K *y, void *slot)
{
	int32_t *off = slot;
	for (int s = 0; s < 16; s++)
		off[s] = -y->bsums[s] * (s % 2 ? 128 : 32);
}

/* Sub-blocks 2p (a, from v & 0x3f) and 2p + 1 (4b, v & 0xc0 with a nibble of lo4 at bits
 * 2-5) in two chains of four, each started at its offset from q6_prepare; the pairs in the
 * order stored (see the top of the file). */
static inline __attribute__((always_inline)) __m256
block_q6_Kx8(__m256 acc, const uint8_t *g, const block_q8_K *y, const void *prep)
{
	const __m256i low6 = _mm256_set1_epi8(0x3f), top2 = _mm256_set1_epi8((char)0xc0);
	const int32_t *off = prep;
	__m256i even = _mm256_setzero_si256(), odd = _mm256_setzero_si256();
	head_first(g, 144);
	const uint8_t *p = g + 144;
	for (int pp = 0; pp < 8; pp++, p += 192) {
		/* two chains of two per sub-block, added when the pair is done: chains of four
		 * vpdpbusd left the loop waiting on their latency (exact integers: any order) */
		__m256i sa2[2] = { _mm256_set1_epi32(off[2 * pp]), _mm256_setzero_si256() };
		__m256i sb2[2] = { _mm256_set1_epi32(off[2 * pp + 1]), _mm256_setzero_si256() };
		/* b's activation dwords out of one load by vpshufd, a's by broadcast loads: all
		 * by loads, or all by shuffles, ran 1-2 GB/s slower */
		const __m256i yb = bcast16(y->qs + 32 * pp + 16);
		/* each vector loaded once, as in q4_K: GCC folded v into the AND and loaded it
		 * again for the merge, and lo4 once per k (in cache 54 -> 59 GB/s) */
		__m256i lo4[2] = { loadu(p + 128), loadu(p + 160) };
		__asm__("" : "+v"(lo4[0]), "+v"(lo4[1]));
		for (int k = 0; k < 4; k++) {
			__m256i v = loadu(p + 32 * k);
			__asm__("" : "+v"(v));
			__m256i l = _mm256_gf2p8affine_epi64_epi8(lo4[k / 2],
								  bits_move(4 * (k % 2), 2, 4), 0);
			/* (v & top2) | l: ternary-logic table (A & C) | B */
			__m256i b4 = _mm256_ternarylogic_epi32(v, l, top2, 0xec);
			sa2[k / 2] = dot_bcast(sa2[k / 2], _mm256_and_si256(v, low6),
					       y->qs + 32 * pp + 4 * k);
			sb2[k / 2] = _mm256_dpbusd_epi32(sb2[k / 2], b4, dword_of(yb, k));
		}
		__m256i sa = _mm256_add_epi32(sa2[0], sa2[1]), sb = _mm256_add_epi32(sb2[0], sb2[1]);
		/* the pair's scales, eight bytes each, sign-extended by vpmovsxbd from memory */
		const uint8_t *sc = g + 16 + 16 * pp;
		__m256i sca = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)sc));
		__m256i scb = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(sc + 8)));
		even = _mm256_add_epi32(even, _mm256_mullo_epi32(sa, sca));
		odd = _mm256_add_epi32(odd, _mm256_mullo_epi32(sb, scb));
	}
	__m256i isum = _mm256_add_epi32(_mm256_slli_epi32(even, 2), odd);
	__m256 d = _mm256_mul_ps(halves8(g), _mm256_set1_ps(y->d * 0.25f));
	return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc);
}

/* ---- The matvec -------------------------------------------------------------------------- */

void krn_avx512_matvec_x8_q4_K(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1)
{
	x8k_matvec(y, w, rows, xq, n / KRN_QK_K, r0, r1, sizeof(block_q4_K), k4_prepare,
		   block_q4_Kx8);
}

void krn_avx512_matvec_x8_q5_K(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1)
{
	x8k_matvec(y, w, rows, xq, n / KRN_QK_K, r0, r1, sizeof(block_q5_K), k4_prepare,
		   block_q5_Kx8);
}

void krn_avx512_matvec_x8_q6_K(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1)
{
	x8k_matvec(y, w, rows, xq, n / KRN_QK_K, r0, r1, sizeof(block_q6_K), q6_prepare,
		   block_q6_Kx8);
}

/* ---- Several tokens at once ------------------------------------------------------------------
 *
 * The shape of avx2_x8k.c's, through the same driver (x8_kunpack.h's x8k_matmul_unpacked):
 * below X8K_UNPACK_MIN tokens a chunk runs the block kernels below four tokens a call, then
 * two and one; from there each group's super-block is unpacked once for the chunk and its
 * tokens run over it four at a time (tokens_*).
 *
 * The block kernels load and unpack each vector of quants once for their tokens, one
 * sub-block pair at a time: its two chains a token take the pair's scales as soon as they
 * are complete, so a token keeps four integer vectors (two chains, even, odd) and not eight
 * chains. With two tokens or one a call, each chain is split in two (CHAINS): q4_K's and
 * q5_K's chains of eight vpdpbusd, four or two of them in flight, would wait on their
 * latency as q6_K's matvec's did (block_q6_Kx8); reasoned from that, not measured (no
 * AVX-512 machine since). The integer sums are exact, so their order is free; each token's
 * float steps are the matvec's, and it gets the matvec's bits. */

/* chains a sum is split into, for nt tokens a call (a constant after inlining) */
#define CHAINS(nt) ((nt) <= 2 ? 2 : 1)

/* k4_tail's unpacking of the eight rows' scales (sc: byte j of each lane is sub-block j's,
 * then 4 + j's in sc[1]) and mins (mn) */
static inline __attribute__((always_inline)) void k4_scales_raw(const uint8_t *g, __m256i sc[2],
								 __m256i mn[2])
{
	const __m256i m6 = _mm256_set1_epi8(0x3f), m4 = _mm256_set1_epi8(0x0f);
	__m256i w0 = loadu(g + 32), w1 = loadu(g + 64), w2 = loadu(g + 96);
	sc[0] = _mm256_and_si256(w0, m6);
	sc[1] = _mm256_and_si256(_mm256_ternarylogic_epi32(w2, _mm256_srli_epi32(w0, 2), m4, 0xe4),
				 m6);
	mn[0] = _mm256_and_si256(w1, m6);
	mn[1] = _mm256_and_si256(_mm256_ternarylogic_epi32(_mm256_srli_epi32(w2, 4),
							   _mm256_srli_epi32(w1, 2), m4, 0xe4),
				 m6);
}

/* k4_tail from the scaled sums even and odd on: the mins and the float steps, per token */
static inline __attribute__((always_inline)) void
mm_k4_finish(__m256 *acc, const uint8_t *g, const block_q8_K *const *ys,
	     const void *const *preps, const __m256i mn[2], const __m256i *even,
	     const __m256i *odd, int nt, int shift)
{
	const __m256 hd = halves8(g), hm = halves8(g + 16);
	for (int t = 0; t < nt; t++) {
		const int8_t *prep = preps[t];
		__m256i mhi = dot_bcast(_mm256_setzero_si256(), mn[0], prep);
		__m256i mlo = dot_bcast(_mm256_setzero_si256(), mn[0], prep + 8);
		mhi = dot_bcast(mhi, mn[1], prep + 4);
		mlo = dot_bcast(mlo, mn[1], prep + 12);
		__m256i mins = _mm256_add_epi32(_mm256_slli_epi32(mhi, 7), mlo);
		__m256i isum = _mm256_add_epi32(_mm256_slli_epi32(even[t], shift), odd[t]);
		__m256 d = _mm256_mul_ps(hd, _mm256_set1_ps(ys[t]->d / (float)(1 << shift)));
		__m256 dm = _mm256_mul_ps(hm, _mm256_set1_ps(ys[t]->d));
		acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc[t]);
		acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), dm, acc[t]);
	}
}

/* Pair c's sums (s0: sub-block 2c, s1: 2c + 1, CHAINS(nt) chains each) into even and odd
 * through the rows' scales (sc: k4_scales_raw's) */
static inline __attribute__((always_inline)) void
k4_pair_scale(__m256i *even, __m256i *odd, __m256i s0[][2], __m256i s1[][2], const __m256i sc[2],
	      int c, int nt)
{
	__m256i se = _mm256_shuffle_epi8(sc[c / 2], byte_of_dword(2 * c % 4));
	__m256i so = _mm256_shuffle_epi8(sc[c / 2], byte_of_dword(2 * c % 4 + 1));
	for (int t = 0; t < nt; t++) {
		__m256i a = s0[t][0], b = s1[t][0];
		if (CHAINS(nt) == 2) {
			a = _mm256_add_epi32(a, s0[t][1]);
			b = _mm256_add_epi32(b, s1[t][1]);
		}
		even[t] = _mm256_add_epi32(even[t], _mm256_mullo_epi32(a, se));
		odd[t] = _mm256_add_epi32(odd[t], _mm256_mullo_epi32(b, so));
	}
}

/* q4_K: pair c (sub-blocks 2c, 2c + 1) is the nibbles of chunk c of each q, 128 bytes apart */
static inline __attribute__((always_inline)) void
mm_q4_K(__m256 *acc, const uint8_t *g, const block_q8_K *const *ys, const void *const *preps,
	int nt)
{
	const __m256i lo = _mm256_set1_epi8(0x0f), hi = _mm256_set1_epi8((char)0xf0);
	__m256i sc[2], mn[2];
	k4_scales_raw(g, sc, mn);
	__m256i even[X8K_MM_TOK_MAX], odd[X8K_MM_TOK_MAX];
	for (int t = 0; t < nt; t++)
		even[t] = odd[t] = _mm256_setzero_si256();
	for (int c = 0; c < 4; c++) {
		__m256i s0[X8K_MM_TOK_MAX][2], s1[X8K_MM_TOK_MAX][2];
		for (int t = 0; t < nt; t++)
			s0[t][0] = s0[t][1] = s1[t][0] = s1[t][1] = _mm256_setzero_si256();
		for (int q = 0; q < 8; q++) {
			__m256i v = loadu(g + 128 + 32 * (4 * q + c));
			__m256i vl = _mm256_and_si256(v, lo), vh = _mm256_and_si256(v, hi);
			const int h = q % CHAINS(nt);
			for (int t = 0; t < nt; t++) {
				const int8_t *a = ys[t]->qs + 64 * c + 4 * q;
				s0[t][h] = dot_bcast(s0[t][h], vl, a);
				s1[t][h] = dot_bcast(s1[t][h], vh, a + 32);
			}
		}
		k4_pair_scale(even, odd, s0, s1, sc, c, nt);
	}
	mm_k4_finish(acc, g, ys, preps, mn, even, odd, nt, 4);
}

/* q5_K: q4_K's shape, one sub-block pair at a time for up to four tokens, with
 * block_q5_Kx8's unpacking (the odd sub-blocks times 8; each q's low2 read once per pair,
 * from L1) */
static inline __attribute__((always_inline)) void
mm_q5_K(__m256 *acc, const uint8_t *g, const block_q8_K *const *ys, const void *const *preps,
	int nt)
{
	const __m256i low5 = _mm256_set1_epi8(0x1f), top3 = _mm256_set1_epi8((char)0xe0);
	__m256i sc[2], mn[2];
	k4_scales_raw(g, sc, mn);
	__m256i even[X8K_MM_TOK_MAX], odd[X8K_MM_TOK_MAX];
	for (int t = 0; t < nt; t++)
		even[t] = odd[t] = _mm256_setzero_si256();
	for (int c = 0; c < 4; c++) {
		__m256i s0[X8K_MM_TOK_MAX][2], s1[X8K_MM_TOK_MAX][2];
		for (int t = 0; t < nt; t++)
			s0[t][0] = s0[t][1] = s1[t][0] = s1[t][1] = _mm256_setzero_si256();
		for (int q = 0; q < 8; q++) {
			const uint8_t *p = g + 128 + 160 * q;
			__m256i v = loadu(p + 32 * c);
			__m256i l = _mm256_gf2p8affine_epi64_epi8(loadu(p + 128),
								  bits_move(2 * c, 3, 2), 0);
			__m256i h8 = _mm256_ternarylogic_epi32(v, l, top3, 0xec);
			__m256i a5 = _mm256_and_si256(v, low5);
			const int h = q % CHAINS(nt);
			for (int t = 0; t < nt; t++) {
				const int8_t *a = ys[t]->qs + 64 * c + 4 * q;
				s0[t][h] = dot_bcast(s0[t][h], a5, a);
				s1[t][h] = dot_bcast(s1[t][h], h8, a + 32);
			}
		}
		k4_pair_scale(even, odd, s0, s1, sc, c, nt);
	}
	mm_k4_finish(acc, g, ys, preps, mn, even, odd, nt, 3);
}

/* q6_K: block_q6_Kx8's unpacking (the AND, the GF(2) affine map, the merge) and its pairs'
 * scales once for the tokens; each token's chains (four vpdpbusd) start at its own offsets
 * (q6_prepare) and take the matvec's integer steps. */
static inline __attribute__((always_inline)) void
mm_q6_K(__m256 *acc, const uint8_t *g, const block_q8_K *const *ys, const void *const *preps,
	int nt)
{
	const __m256i low6 = _mm256_set1_epi8(0x3f), top2 = _mm256_set1_epi8((char)0xc0);
	__m256i even[X8K_MM_TOK_MAX], odd[X8K_MM_TOK_MAX];
	for (int t = 0; t < nt; t++)
		even[t] = odd[t] = _mm256_setzero_si256();
	const uint8_t *p = g + 144;
	for (int pp = 0; pp < 8; pp++, p += 192) {
		__m256i sa[X8K_MM_TOK_MAX], sb[X8K_MM_TOK_MAX];
		for (int t = 0; t < nt; t++) {
			const int32_t *off = preps[t];
			sa[t] = _mm256_set1_epi32(off[2 * pp]);
			sb[t] = _mm256_set1_epi32(off[2 * pp + 1]);
		}
		for (int k = 0; k < 4; k++) {
			__m256i v = loadu(p + 32 * k);
			__m256i l = _mm256_gf2p8affine_epi64_epi8(loadu(p + 128 + 32 * (k / 2)),
								  bits_move(4 * (k % 2), 2, 4), 0);
			__m256i b4 = _mm256_ternarylogic_epi32(v, l, top2, 0xec);
			__m256i a6 = _mm256_and_si256(v, low6);
			for (int t = 0; t < nt; t++) {
				const int8_t *a = ys[t]->qs + 32 * pp + 4 * k;
				sa[t] = dot_bcast(sa[t], a6, a);
				sb[t] = dot_bcast(sb[t], b4, a + 16);
			}
		}
		const uint8_t *sc = g + 16 + 16 * pp;
		__m256i sca = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)sc));
		__m256i scb = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(sc + 8)));
		for (int t = 0; t < nt; t++) {
			even[t] = _mm256_add_epi32(even[t], _mm256_mullo_epi32(sa[t], sca));
			odd[t] = _mm256_add_epi32(odd[t], _mm256_mullo_epi32(sb[t], scb));
		}
	}
	const __m256 hd = halves8(g);
	for (int t = 0; t < nt; t++) {
		__m256i isum = _mm256_add_epi32(_mm256_slli_epi32(even[t], 2), odd[t]);
		__m256 d = _mm256_mul_ps(hd, _mm256_set1_ps(ys[t]->d * 0.25f));
		acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc[t]);
	}
}

/* ---- A prompt's chunk: the tokens over an unpacked super-block (x8_kunpack.h) ----------------
 *
 * Per four activation bytes of a token one vpdpbusd (its dword a broadcast memory operand)
 * against a register shared by the four tokens, each sub-block's sum in two chains a token,
 * then one vpmulld by the sub-block's scale (the int16 of x8_kunpack.h's vpmaddwd form, taken
 * as a dword by a shift). What comes out is each token's plain integer total, sum over
 * sub-blocks of scale times (quants . activation); the matvec's integer is that times 16
 * (q4_K), 8 (q5_K) or 4 (q6_K), the factor its unpacking leaves in the odd sub-blocks and its
 * float scale takes back: the same integer by a shift, and the float steps are the matvec's,
 * so the same bits. */

/* tot[t] for t < nt: token t's total against u, a scale every `span` dwords (8: sub-blocks of
 * 32 columns; 4: q6_K's of 16) */
static inline __attribute__((always_inline)) void
unpacked_totals(__m256i *tot, const struct k_unpacked *u, const block_q8_K *const *ys, int nt,
		int span)
{
	for (int t = 0; t < nt; t++)
		tot[t] = _mm256_setzero_si256();
	for (int k0 = 0; k0 < 64; k0 += span) {
		__m256i s[X8K_MM_TOK_MAX][2];
		for (int t = 0; t < nt; t++)
			s[t][0] = s[t][1] = _mm256_setzero_si256();
		for (int k = k0; k < k0 + span; k++) {
			__m256i w = _mm256_load_si256(&u->q[k]);
			for (int t = 0; t < nt; t++)
				s[t][k % 2] = dot_bcast(s[t][k % 2], w, ys[t]->qs + 4 * k);
		}
		__m256i sc = _mm256_srai_epi32(u->scale[k0 / span], 16);
		for (int t = 0; t < nt; t++)
			tot[t] = _mm256_add_epi32(
				tot[t], _mm256_mullo_epi32(_mm256_add_epi32(s[t][0], s[t][1]), sc));
	}
}

/* q4_K (shift 4) and q5_K (shift 3): the matvec's tail (mm_k4_finish) on total << shift */
static inline __attribute__((always_inline)) void
tokens_k4(__m256 *acc, const struct k_unpacked *u, const uint8_t *g, const block_q8_K *const *ys,
	  const void *const *preps, int nt, int shift)
{
	__m256i tot[X8K_MM_TOK_MAX], zero[X8K_MM_TOK_MAX];
	unpacked_totals(tot, u, ys, nt, 8);
	for (int t = 0; t < nt; t++)
		zero[t] = _mm256_setzero_si256();
	mm_k4_finish(acc, g, ys, preps, u->mn, tot, zero, nt, shift);
}

static inline __attribute__((always_inline)) void
tokens_q4_K(__m256 *acc, const struct k_unpacked *u, const uint8_t *g,
	    const block_q8_K *const *ys, const void *const *preps, int nt)
{
	tokens_k4(acc, u, g, ys, preps, nt, 4);
}

static inline __attribute__((always_inline)) void
tokens_q5_K(__m256 *acc, const struct k_unpacked *u, const uint8_t *g,
	    const block_q8_K *const *ys, const void *const *preps, int nt)
{
	tokens_k4(acc, u, g, ys, preps, nt, 3);
}

/* q6_K: the quants unpacked plus 32, which comes off as 32 * (scales . bsums), one vpmaddwd a
 * pair (avx2_x8k.c's tokens_q6_K); then the matvec's 4 * total and its d / 4 */
static inline __attribute__((always_inline)) void
tokens_q6_K(__m256 *acc, const struct k_unpacked *u, const uint8_t *g,
	    const block_q8_K *const *ys, const void *const *preps, int nt)
{
	(void)preps;
	__m256i tot[X8K_MM_TOK_MAX];
	unpacked_totals(tot, u, ys, nt, 4);
	const __m256 hd = halves8(g);
	for (int t = 0; t < nt; t++) {
		__m256i off = _mm256_setzero_si256();
		for (int pp = 0; pp < 8; pp++)
			off = _mm256_add_epi32(off, _mm256_madd_epi16(u->pairs[pp],
								      bcast4(ys[t]->bsums + 2 * pp)));
		__m256i total = _mm256_sub_epi32(tot[t], _mm256_slli_epi32(off, 5));
		__m256i isum = _mm256_slli_epi32(total, 2);
		__m256 d = _mm256_mul_ps(hd, _mm256_set1_ps(ys[t]->d * 0.25f));
		acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc[t]);
	}
}

void krn_avx512_matmul_x8_q4_K(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1)
{
	x8k_matmul_unpacked(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK_K, r0, r1,
			    sizeof(block_q4_K), k4_prepare, mm_q4_K, unpack_q4_K, tokens_q4_K);
}

void krn_avx512_matmul_x8_q5_K(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1)
{
	x8k_matmul_unpacked(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK_K, r0, r1,
			    sizeof(block_q5_K), k4_prepare, mm_q5_K, unpack_q5_K, tokens_q5_K);
}

void krn_avx512_matmul_x8_q6_K(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1)
{
	x8k_matmul_unpacked(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK_K, r0, r1,
			    sizeof(block_q6_K), q6_prepare, mm_q6_K, unpack_q6_K, tokens_q6_K);
}

/* ---- q2_K ---------------------------------------------------------------------------------
 *
 * One driver for one token and several (x8k_matmul; the matvec is it with one token, so the
 * two agree bit for bit by construction). Per half h of the super-block and chunk q, the
 * eight rows' bits 2j come down to bits 0-1 by one GF(2) affine map (an AND for j = 0) and go
 * with one vpdpbusd into sub-block 8h + 2j + q / 4's chain; a half's eight sub-block sums take
 * the rows' scales by vpmulld (pshufb picks each out of its byte), the mins go against
 * q2_prepare's bytes, and the float tail is k4_tail's. Reading each chunk four times instead
 * (one sub-block at a time, fewer live chains) left loops GCC did not unroll, with the GF(2)
 * matrices built at run time: 9 GB/s in cache against 31. */
static inline __attribute__((always_inline)) void
mm_q2_K(__m256 *acc, const uint8_t *g, const block_q8_K *const *ys, const void *const *preps,
	int nt)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);
	__m256i isum[X8K_MM_TOK];
	for (int t = 0; t < nt; t++)
		isum[t] = _mm256_setzero_si256();
	for (int h = 0; h < 2; h++) {
		__m256i s[X8K_MM_TOK][8];
		for (int t = 0; t < nt; t++)
			for (int i = 0; i < 8; i++)
				s[t][i] = _mm256_setzero_si256();
		/* unrolled by hand or not at all: GCC left the q loop rolled, s[][] in memory */
		X8K_UNROLL(8)
		for (int q = 0; q < 8; q++) {
			__m256i v = loadu(g + 160 + 32 * (8 * h + q));
			X8K_UNROLL(4)
			for (int j = 0; j < 4; j++) {
				__m256i u = j ? _mm256_gf2p8affine_epi64_epi8(v, bits_move(2 * j, 0, 2), 0)
					      : _mm256_and_si256(v, m2);
				for (int t = 0; t < nt; t++)
					s[t][2 * j + q / 4] =
						dot_bcast(s[t][2 * j + q / 4], u,
							  ys[t]->qs + 128 * h + 32 * j + 4 * q);
			}
		}
		/* the scales loaded here, not kept from the start: with them live across the
		 * loop the two-token kernel spilled */
		for (int i = 0; i < 8; i++) {
			int sb = 8 * h + i;
			__m256i sc = _mm256_and_si256(loadu(g + 32 + 32 * (sb / 4)), m4);
			__m256i scv = _mm256_shuffle_epi8(sc, byte_of_dword(sb % 4));
			for (int t = 0; t < nt; t++)
				isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(s[t][i], scv));
		}
	}
	__m256i mn[4];
	for (int k = 0; k < 4; k++)
		mn[k] = _mm256_and_si256(_mm256_srli_epi16(loadu(g + 32 + 32 * k), 4), m4);
	const __m256 hd = halves8(g), hm = halves8(g + 16);
	for (int t = 0; t < nt; t++) {
		const int8_t *prep = preps[t];
		__m256i mhi = _mm256_setzero_si256(), mlo = _mm256_setzero_si256();
		for (int k = 0; k < 4; k++) {
			mhi = dot_bcast(mhi, mn[k], prep + 4 * k);
			mlo = dot_bcast(mlo, mn[k], prep + 16 + 4 * k);
		}
		__m256i mins = _mm256_add_epi32(_mm256_slli_epi32(mhi, 7), mlo);
		__m256 d = _mm256_mul_ps(hd, _mm256_set1_ps(ys[t]->d));
		__m256 dm = _mm256_mul_ps(hm, _mm256_set1_ps(ys[t]->d));
		acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), d, acc[t]);
		acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), dm, acc[t]);
	}
}

void krn_avx512_matvec_x8_q2_K(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1)
{
	x8k_matmul(y, 0, w, rows, xq, 0, 1, n / KRN_QK_K, r0, r1, sizeof(block_q2_K), q2_prepare,
		   mm_q2_K);
}

void krn_avx512_matmul_x8_q2_K(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1)
{
	x8k_matmul(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK_K, r0, r1, sizeof(block_q2_K),
		   q2_prepare, mm_q2_K);
}

/* ---- q3_K ---------------------------------------------------------------------------------
 *
 * As q2_K (x8k_matmul for one token and several): per half h and chunk q, each element's
 * three bits 0 .. 7 (its value plus 4) come together in one byte from two GF(2) affine maps
 * (the low pair from qs bits 2j, the high bit from hmask bit 4h + j) and an OR (a ternary
 * logic AND-OR for j = 0); each sub-block's chain starts at its -4 * bsums (q3_prepare) and
 * takes the row's signed scale by vpmulld. One FMA of d a super-block. The group's 880 bytes
 * are touched in address order first (head_first): the kernel reads its header last and the
 * hmask (from byte 624) alongside the first half's quants, two streams the hardware
 * prefetcher follows worse; from DRAM 0.55x the read before, 0.69x after (bench_quants). One
 * token only: several reuse the group from cache, and the loads cost them. */
static inline __attribute__((always_inline)) void
mm_q3_K(__m256 *acc, const uint8_t *g, const block_q8_K *const *ys, const void *const *preps,
	int nt)
{
	const __m256i m2 = _mm256_set1_epi8(3), k32 = _mm256_set1_epi32(32);
	if (nt == 1) /* a constant: the matvec, which streams the group (see above) */
		head_first(g, 880);
	__m256i isum[X8K_MM_TOK];
	for (int t = 0; t < nt; t++)
		isum[t] = _mm256_setzero_si256();
	for (int h = 0; h < 2; h++) {
		__m256i s[X8K_MM_TOK][8];
		for (int t = 0; t < nt; t++) {
			const int32_t *off = preps[t];
			for (int i = 0; i < 8; i++)
				s[t][i] = _mm256_set1_epi32(off[8 * h + i]);
		}
		/* unrolled as q2_K's */
		X8K_UNROLL(8)
		for (int q = 0; q < 8; q++) {
			__m256i v = loadu(g + 112 + 32 * (8 * h + q));
			__m256i hv = loadu(g + 624 + 32 * q);
			X8K_UNROLL(4)
			for (int j = 0; j < 4; j++) {
				__m256i l = _mm256_gf2p8affine_epi64_epi8(hv, bits_move(4 * h + j, 2, 1), 0);
				/* j = 0: (v & m2) | l, ternary-logic table (A & C) | B */
				__m256i u = j ? _mm256_or_si256(_mm256_gf2p8affine_epi64_epi8(
									v, bits_move(2 * j, 0, 2), 0),
								l)
					      : _mm256_ternarylogic_epi32(v, l, m2, 0xec);
				for (int t = 0; t < nt; t++)
					s[t][2 * j + q / 4] =
						dot_bcast(s[t][2 * j + q / 4], u,
							  ys[t]->qs + 128 * h + 32 * j + 4 * q);
			}
		}
		__m256i sc[4];
		q3_scales(g, sc);
		for (int i = 0; i < 8; i++) {
			int sb = 8 * h + i;
			__m256i scv = _mm256_sub_epi32(_mm256_shuffle_epi8(sc[sb / 4],
									   byte_of_dword(sb % 4)),
						       k32);
			for (int t = 0; t < nt; t++)
				isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(s[t][i], scv));
		}
	}
	const __m256 hd = halves8(g);
	for (int t = 0; t < nt; t++) {
		__m256 d = _mm256_mul_ps(hd, _mm256_set1_ps(ys[t]->d));
		acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), d, acc[t]);
	}
}

void krn_avx512_matvec_x8_q3_K(float *y, const void *w, size_t rows, const void *xq,
			       size_t n, size_t r0, size_t r1)
{
	x8k_matmul(y, 0, w, rows, xq, 0, 1, n / KRN_QK_K, r0, r1, sizeof(block_q3_K), q3_prepare,
		   mm_q3_K);
}

void krn_avx512_matmul_x8_q3_K(float *y, size_t ldy, const void *w, size_t rows,
			       const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			       size_t r1)
{
	x8k_matmul(y, ldy, w, rows, xq, ldx, n_tok, n / KRN_QK_K, r0, r1, sizeof(block_q3_K),
		   q3_prepare, mm_q3_K);
}
