/* engine/quants/x86/x8_kquants.h: what the x8 kernels of the K-quants share across x86 ISAs
 * (avx2_x8k.c, avx512_x8k.c; layouts: x8_kquants.c): the q4_K/q5_K activation preparation
 * and the driver over tiles, groups and super-blocks. The including file defines the
 * per-super-block kernels and passes them to x8k_matvec. Not a header to include anywhere
 * else (as x8_legacy.h).
 */
#include "kernels/x86/simd.h"

static inline __m256i loadu(const void *p)
{
	return _mm256_loadu_si256((const __m256i *)p);
}

/* One load in each of the 64-byte lines of g's first `bytes`, before a kernel reads the group
 * in another order: a group read from its middle, its start last, or in two streams, is a
 * backward jump per group that the hardware prefetcher follows worse (the figures are at the
 * top of avx2_x8k.c and avx512_x8k.c). The loads hit the lines that 16 bytes every 64 cover,
 * whatever g's alignment; the empty asm keeps them (their values are not used), and its "x"
 * constraint suits both ISAs' flags. */
static inline __attribute__((always_inline)) void head_first(const uint8_t *g, int bytes)
{
	for (int o = 0; o < bytes; o += 64) {
		__m128i t = _mm_loadu_si128((const __m128i *)(const void *)(g + o));
		__asm__ volatile("" : : "x"(t));
	}
}

/* the eight rows' halves at p (their d or dmin) as floats */
static inline __m256 halves8(const uint8_t *p)
{
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* What a q4_K/q5_K super-block needs of the activation besides its quants: the sums over its
 * eight sub-blocks, b[s] = bsums[2s] + bsums[2s + 1] (|b| <= 32 * 128), split as 128 hi + lo
 * with lo in 0 .. 127, so that both halves are signed bytes against the eight rows' 6-bit
 * mins (vpdpbusd on AVX-512, vpmaddubsw on AVX2): hi[0..3], hi[4..7], lo[0..3], lo[4..7]. */
static void k4_prepare(const block_q8_K *y, void *slot)
{
	int8_t *p = slot;
	for (int s = 0; s < 8; s++) {
		int b = y->bsums[2 * s] + y->bsums[2 * s + 1];
		p[4 * (s / 4) + s % 4] = (int8_t)(b >> 7);
		p[8 + 4 * (s / 4) + s % 4] = (int8_t)(b & 127);
	}
}

/* What a q2_K super-block needs of the activation besides its quants: its 16 bsums (|b| <=
 * 16 * 128) split as k4_prepare's, 128 hi + lo, against the eight rows' 4-bit mins: hi[16],
 * then lo[16]. */
static void q2_prepare(const block_q8_K *y, void *slot)
{
	int8_t *p = slot;
	for (int s = 0; s < 16; s++) {
		p[s] = (int8_t)(y->bsums[s] >> 7);
		p[16 + s] = (int8_t)(y->bsums[s] & 127);
	}
}

/* What a q3_K super-block needs of the activation: its quants are stored plus 4 (0 .. 7), so
 * each sub-block's sum starts at -4 * bsums[s] (|.| <= 4 * 16 * 128, an int16 too). */
static void q3_prepare(const block_q8_K *y, void *slot)
{
	int32_t *off = slot;
	for (int s = 0; s < 16; s++)
		off[s] = -4 * y->bsums[s];
}

/* q3_K's 16 6-bit scales of the eight rows, plus 32 (0 .. 63), from the header's three words
 * per row (ggml's dequantize_row_q3_K kmask moves, lane-wise): byte m of sc[k]'s lane r is
 * row r's scale 4k + m. AVX2 operations only, for both ISAs. */
static inline __attribute__((always_inline)) void q3_scales(const uint8_t *g, __m256i sc[4])
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), top = _mm256_set1_epi8(0x30);
	__m256i w0 = loadu(g + 16), w1 = loadu(g + 48), w2 = loadu(g + 80);
	sc[0] = _mm256_or_si256(_mm256_and_si256(w0, m4),
				_mm256_and_si256(_mm256_slli_epi32(w2, 4), top));
	sc[1] = _mm256_or_si256(_mm256_and_si256(w1, m4),
				_mm256_and_si256(_mm256_slli_epi32(w2, 2), top));
	sc[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w0, 4), m4),
				_mm256_and_si256(w2, top));
	sc[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w1, 4), m4),
				_mm256_and_si256(_mm256_srli_epi32(w2, 2), top));
}

/* The activation is prepared tile by tile (quants.h: a tile is at most 31 super-blocks), 64
 * bytes a super-block; each group's accumulator carries over from one tile to the next
 * through out[], so a row's sum is the same sequence of operations whatever the range of
 * groups. */
/* An unroll hint for GCC, which leaves the q2_K/q3_K loops rolled without it (9 against
 * 31 GB/s on AVX-512 q2_K); empty for clang, which unrolls them itself, and which with the hint
 * and -fsanitize=undefined took five minutes to compile avx512_x8k.c (the fuzz build). */
#if defined(__clang__)
#define X8K_UNROLL(n)
#else
#define X8K_PRAGMA(x) _Pragma(#x)
#define X8K_UNROLL(n) X8K_PRAGMA(GCC unroll n)
#endif

#define X8K_PREPARED (2 * KRN_X8_TILE_COLS / KRN_QK_K)
#define X8K_SLOT 64

/* How far ahead of its super-block x8k_matvec prefetches the group's stream, in bytes (0: not
 * at all); the including file defines it (avx2_x8k.c says why). */
#ifndef X8K_MATVEC_AHEAD
#error "define X8K_MATVEC_AHEAD before including x8_kquants.h"
#endif

/* x8k_prefetch: the group's stream X8K_MATVEC_AHEAD bytes ahead of the super-block at g, when
 * `ahead` (a group's first call, which streams it; the calls after it read it from cache). */
static inline __attribute__((always_inline)) void x8k_prefetch(const uint8_t *g, size_t bs,
							       bool ahead)
{
	for (size_t o = 0; X8K_MATVEC_AHEAD && ahead && o < KRN_X8 * bs; o += 64)
		_mm_prefetch((const char *)(g + X8K_MATVEC_AHEAD + o), _MM_HINT_T0);
}

/* Groups r0 / 8 .. r1 / 8 of a tensor of `rows` rows; bs is the type's block size in bytes,
 * prepare (NULL: none) what a super-block needs of the activation besides its quants. Tile by
 * tile, each group's super-blocks of the tile in order: one sequential stream. */
static inline __attribute__((always_inline)) void
x8k_matvec(float *out, const uint8_t *w, size_t rows, const block_q8_K *y, size_t nb, size_t r0,
	   size_t r1, size_t bs, void (*prepare)(const block_q8_K *y, void *slot),
	   __m256 (*block)(__m256 acc, const uint8_t *g, const block_q8_K *y, const void *prep))
{
	_Alignas(64) uint8_t prep[X8K_PREPARED][X8K_SLOT];
	size_t tb, n_tiles = krn_x8_tiles(nb, KRN_QK_K, &tb);
	for (size_t k = 0; k < n_tiles; k++) {
		const size_t i0 = k * tb, i1 = k + 1 < n_tiles ? i0 + tb : nb;
		for (size_t i = i0; prepare && i < i1; i++)
			prepare(&y[i], prep[i - i0]);
		for (size_t r = r0; r < r1; r += KRN_X8) {
			const uint8_t *g = w + (i0 * rows + r * (i1 - i0)) * bs;
			__m256 acc = k ? _mm256_loadu_ps(out + r) : _mm256_setzero_ps();
			for (size_t i = i0; i < i1; i++, g += KRN_X8 * bs) {
				x8k_prefetch(g, bs, true);
				acc = block(acc, g, &y[i], prep[i - i0]);
			}
			_mm256_storeu_ps(out + r, acc);
		}
	}
}

/* ---- Several tokens at once (krn_matmul_x8_fn) ----------------------------------------------
 *
 * x8k_matvec's sums, token by token in the same order (so the same bits), with each
 * super-block of eight rows loaded and unpacked once for X8K_MM_TOK tokens (the per-token
 * chains of eight sub-block sums fill the registers at two), or X8K_MM_TOK_MAX for kernels
 * that keep two chains a token (x8k_matmul_tok). The activation is prepared per tile for
 * X8K_MM_CHUNK tokens (32 KB on the stack). */
#define X8K_MM_TOK 2
#define X8K_MM_TOK_MAX 4
#define X8K_MM_CHUNK 16

/* acc[t] for t < nt (a constant after inlining): x8k_matvec's block on token t's
 * super-block ys[t] with its prepared slot preps[t]. */
typedef void (*x8k_mm_block_fn)(__m256 *acc, const uint8_t *g, const block_q8_K *const *ys,
				const void *const *preps, int nt);

static inline __attribute__((always_inline)) void
x8k_mm_group(float *y, size_t ldy, const uint8_t *g, size_t bs, const block_q8_K *const *ys,
	     uint8_t (*prep)[X8K_PREPARED][X8K_SLOT], size_t len, bool first,
	     x8k_mm_block_fn block, int nt, bool ahead)
{
	__m256 acc[X8K_MM_TOK_MAX];
	for (int t = 0; t < nt; t++)
		acc[t] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + (size_t)t * ldy);
	for (size_t i = 0; i < len; i++, g += KRN_X8 * bs) {
		const block_q8_K *yi[X8K_MM_TOK_MAX];
		const void *pi[X8K_MM_TOK_MAX];
		x8k_prefetch(g, bs, ahead);
		for (int t = 0; t < nt; t++) {
			yi[t] = ys[t] + i;
			pi[t] = prep[t][i];
		}
		block(acc, g, yi, pi, nt);
	}
	for (int t = 0; t < nt; t++)
		_mm256_storeu_ps(y + (size_t)t * ldy, acc[t]);
}

/* Chunk t0 of n_tok tokens (at most X8K_MM_CHUNK of them: the count is returned) on the tile
 * of super-blocks i0 .. i0 + len - 1: each token's first super-block of the tile in ys[tt],
 * what prepare makes of its super-blocks in prep[tt] (nothing when prepare is NULL). */
static inline __attribute__((always_inline)) size_t
x8k_chunk(const uint8_t *xq, size_t ldx, size_t n_tok, size_t t0, size_t i0, size_t len,
	  void (*prepare)(const block_q8_K *y, void *slot), const block_q8_K **ys,
	  uint8_t (*prep)[X8K_PREPARED][X8K_SLOT])
{
	size_t nt = n_tok - t0 < X8K_MM_CHUNK ? n_tok - t0 : X8K_MM_CHUNK;
	for (size_t tt = 0; tt < nt; tt++) {
		ys[tt] = (const block_q8_K *)(const void *)(xq + (t0 + tt) * ldx) + i0;
		for (size_t i = 0; prepare && i < len; i++)
			prepare(&ys[tt][i], prep[tt][i]);
	}
	return nt;
}

/* x8k_matmul with tok tokens a call of block (at most X8K_MM_TOK_MAX; a constant) */
static inline __attribute__((always_inline)) void
x8k_matmul_tok(float *y, size_t ldy, const uint8_t *w, size_t rows, const uint8_t *xq,
	       size_t ldx, size_t n_tok, size_t nb, size_t r0, size_t r1, size_t bs,
	       void (*prepare)(const block_q8_K *y, void *slot), x8k_mm_block_fn block, int tok)
{
	_Alignas(64) uint8_t prep[X8K_MM_CHUNK][X8K_PREPARED][X8K_SLOT];
	size_t tb, n_tiles = krn_x8_tiles(nb, KRN_QK_K, &tb);
	for (size_t k = 0; k < n_tiles; k++) {
		const size_t i0 = k * tb, len = k + 1 < n_tiles ? tb : nb - i0;
		for (size_t t0 = 0; t0 < n_tok; t0 += X8K_MM_CHUNK) {
			const block_q8_K *ys[X8K_MM_CHUNK];
			size_t nt = x8k_chunk(xq, ldx, n_tok, t0, i0, len, prepare, ys, prep);
			for (size_t r = r0; r < r1; r += KRN_X8) {
				const uint8_t *g = w + (i0 * rows + r * len) * bs;
				float *yr = y + t0 * ldy + r;
				size_t tt = 0;
				for (; tt + (size_t)tok <= nt; tt += (size_t)tok)
					x8k_mm_group(yr + tt * ldy, ldy, g, bs, ys + tt, prep + tt,
						     len, k == 0, block, tok, tt == 0);
				for (; tt < nt; tt++)
					x8k_mm_group(yr + tt * ldy, ldy, g, bs, ys + tt, prep + tt,
						     len, k == 0, block, 1, tt == 0);
			}
		}
	}
}

static inline __attribute__((always_inline)) void
x8k_matmul(float *y, size_t ldy, const uint8_t *w, size_t rows, const uint8_t *xq, size_t ldx,
	   size_t n_tok, size_t nb, size_t r0, size_t r1, size_t bs,
	   void (*prepare)(const block_q8_K *y, void *slot), x8k_mm_block_fn block)
{
	x8k_matmul_tok(y, ldy, w, rows, xq, ldx, n_tok, nb, r0, r1, bs, prepare, block,
		       X8K_MM_TOK);
}
