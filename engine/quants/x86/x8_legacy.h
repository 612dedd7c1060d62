/* engine/quants/x86/x8_legacy.h: what the x8 kernels of the legacy formats share across
 * x86 ISAs (avx2_x8l.c, avx512_x8l.c; layouts: x8_legacy.c): the activation's per-call
 * preparation, the float tail of a block of eight rows, and the driver over groups and
 * blocks. The including file defines the per-block kernels, on AVX2 or AVX-512 integer
 * instructions, and passes them to x8_matvec. Not a header to include anywhere else.
 */
#include "kernels/x86/simd.h"

static inline __m256i loadu(const void *p)
{
	return _mm256_loadu_si256((const __m256i *)p);
}

/* four activation bytes in every lane, by a broadcast load (a load, no shuffle) */
static inline __m256i bcast4(const int8_t *p)
{
	int32_t v;
	memcpy(&v, p, sizeof(v));
	return _mm256_set1_epi32(v);
}

/* What every group needs of each activation block of a tile, prepared once per tile and call:
 * -offset * (sum of its bytes), where the weights' quants are unsigned as value + offset, and
 * its scale. A tile is at most two tiles' width less a block (types.h). */
#define X8_PREPARED (2 * KRN_X8_TILE_COLS / KRN_QK)

struct x8_act {
	int32_t base[X8_PREPARED];
	float dy[X8_PREPARED];
};

/* Not inlined: once per block per call, it costs nothing called, while inlined its constants
 * stayed in registers across the whole driver and GCC's allocation of avx512_x8l.c's q8_0
 * loop suffered for it: 86 -> 50-70 GB/s in cache (tests/bench_quants, 2048 columns). */
static __attribute__((noinline)) int32_t act_base(const block_q8_0 *y, int offset)
{
	__m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8((char)offset),
							   loadu(y->qs)),
				      _mm256_set1_epi16(1));
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

/* How far ahead of its block pair x8_matvec prefetches the group's stream, in bytes (0:
 * not at all); the including file defines it (avx2_x8l.c says why). */
#ifndef X8_MATVEC_AHEAD
#error "define X8_MATVEC_AHEAD before including x8_legacy.h"
#endif

/* Groups r0 / 8 .. r1 / 8 of an x8 tensor of `rows` rows of a legacy type; bs is the type's
 * block size in bytes, offset its quants' (0: signed). Tile by tile (types.h): for each
 * group its blocks of the tile in order, even and odd blocks in two FMA chains, each group's
 * sums kept in out from one tile to the next, so the order of the sums depends on n only,
 * never on r0 and r1. */
static inline __attribute__((always_inline)) void
x8_matvec(float *out, const uint8_t *w, size_t rows, const block_q8_0 *y, size_t nb, size_t r0,
	  size_t r1, size_t bs, int offset,
	  __m256 (*block)(__m256 acc, const uint8_t *g, const block_q8_0 *y, int32_t base,
			  float dy))
{
	struct x8_act a;
	size_t tb, n_tiles = krn_x8_tiles(nb, KRN_QK, &tb);
	for (size_t k = 0; k < n_tiles; k++) {
		const size_t i0 = k * tb, len = k + 1 < n_tiles ? tb : nb - i0;
		const block_q8_0 *ys = y + i0;
		for (size_t i = 0; i < len; i++) {
			a.base[i] = offset ? act_base(&ys[i], offset) : 0;
			a.dy[i] = krn_fp16_table[ys[i].d];
		}
		for (size_t r = r0; r < r1; r += KRN_X8) {
			const uint8_t *g = w + (i0 * rows + r * len) * bs;
			__m256 acc0 = k ? _mm256_loadu_ps(out + r) : _mm256_setzero_ps();
			__m256 acc1 = _mm256_setzero_ps();
			size_t i = 0;
			for (; i + 2 <= len; i += 2, g += 2 * KRN_X8 * bs) {
				for (size_t o = 0; X8_MATVEC_AHEAD && o < 2 * KRN_X8 * bs; o += 64)
					_mm_prefetch((const char *)(g + X8_MATVEC_AHEAD + o),
						     _MM_HINT_T0);
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

/* ---- Several tokens at once (krn_matmul_x8_fn) ----------------------------------------------
 *
 * The same sums as x8_matvec, token by token, in the same order (so the same bits), with the
 * loops turned so that each block of eight rows is loaded and unpacked once for X8_MM_TOK
 * tokens: a group's tile of weights (at most 34 KB) is read from L1 for every token after the
 * first X8_MM_TOK. The activation's per-block sums and scales are prepared once per tile for
 * X8_MM_CHUNK tokens (32 KB on the stack); the tile's weights are streamed once per chunk. */
#define X8_MM_TOK 4
#define X8_MM_CHUNK 16

struct x8_mm_act {
	int32_t base[X8_MM_CHUNK][X8_PREPARED];
	float dy[X8_MM_CHUNK][X8_PREPARED];
};

/* The prefetch of the multi-token drivers (x8_matmul, x8_matmul1), for a call on `groups`
 * groups from row r. With more tokens than one call of a group takes, the group's tile is read
 * again from cache between the streams of two groups, which the hardware prefetcher then
 * loses: the group's first call fetches the next group's tile a group ahead (pp of 8 tokens
 * +25 %, batch 8 +19 % on a Zen 4 VM). With X8_MM_TOK tokens or fewer, one call streams each
 * group once, as x8_matvec does, and prefetches as it does, X8_MATVEC_AHEAD bytes ahead (none
 * on AVX-512: 4 tokens, one call, streamed better without the group-ahead one on Zen 4).
 * x8_pf_distance is that distance, 0 for none. */
static inline size_t x8_pf_distance(size_t nt, size_t r, size_t r1, size_t len, size_t bs,
				    size_t groups)
{
	if (nt <= X8_MM_TOK)
		return X8_MATVEC_AHEAD;
	return r + groups * KRN_X8 < r1 ? groups * KRN_X8 * len * bs : 0;
}

static inline __attribute__((always_inline)) void
x8_prefetch(const uint8_t *g, size_t pf, size_t bytes)
{
	if (!pf)
		return;
	for (size_t o = 0; o < bytes; o += 64)
		_mm_prefetch((const char *)(g + pf + o), _MM_HINT_T0);
}

/* acc[t] for t < nt (a constant after inlining): as x8_matvec's block on token t's block ys[t],
 * whose prepared base and dy are base[t * X8_PREPARED] and dy[t * X8_PREPARED]. */
typedef void (*x8_mm_block_fn)(__m256 *acc, const uint8_t *g, const block_q8_0 *const *ys,
			       const int32_t *base, const float *dy, int nt);

/* The tokens a chunk has left after its calls of X8_MM_TOK (left: 0 .. X8_MM_TOK - 1), in one
 * call of `call(count)`, the count a constant in each case: a batched decode step of 2 or 3
 * sequences then unpacks each block of weights once, where a call per token had unpacked it
 * once a token (batch 2 had run the matvec's instructions twice). Each token's sums are the
 * same whatever the count, so the bits are too. */
#define X8_MM_REST(left, call)                                                               \
	do {                                                                                 \
		_Static_assert(X8_MM_TOK == 4, "X8_MM_REST names the counts below X8_MM_TOK");\
		switch (left) {                                                              \
		case 3: call(3); break;                                                      \
		case 2: call(2); break;                                                      \
		case 1: call(1); break;                                                      \
		default: break;                                                              \
		}                                                                            \
	} while (0)

/* One group, nt tokens from the chunk's tt-th: y points at the first one's row r. */
static inline __attribute__((always_inline)) void
x8_mm_group(float *y, size_t ldy, const uint8_t *g, size_t bs, const block_q8_0 *const *ys,
	    const struct x8_mm_act *a, size_t tt, size_t len, bool first, x8_mm_block_fn block,
	    int nt, size_t pf)
{
	__m256 acc0[X8_MM_TOK], acc1[X8_MM_TOK];
	for (int t = 0; t < nt; t++) {
		acc0[t] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + (size_t)t * ldy);
		acc1[t] = _mm256_setzero_ps();
	}
	size_t i = 0;
	for (; i + 2 <= len; i += 2, g += 2 * KRN_X8 * bs) {
		const block_q8_0 *y0[X8_MM_TOK], *y1[X8_MM_TOK];
		x8_prefetch(g, pf, 2 * KRN_X8 * bs);
		for (int t = 0; t < nt; t++) {
			y0[t] = ys[t] + i;
			y1[t] = ys[t] + i + 1;
		}
		block(acc0, g, y0, &a->base[tt][i], &a->dy[tt][i], nt);
		block(acc1, g + KRN_X8 * bs, y1, &a->base[tt][i + 1], &a->dy[tt][i + 1], nt);
	}
	if (i < len) {
		const block_q8_0 *y0[X8_MM_TOK];
		for (int t = 0; t < nt; t++)
			y0[t] = ys[t] + i;
		block(acc0, g, y0, &a->base[tt][i], &a->dy[tt][i], nt);
	}
	for (int t = 0; t < nt; t++)
		_mm256_storeu_ps(y + (size_t)t * ldy, _mm256_add_ps(acc0[t], acc1[t]));
}

/* Two groups at once (block2 of x8_matmul): each activation dword, broadcast once, goes into
 * both groups' chains, so a block of 16 rows and X8_MM_TOK tokens takes 2 + X8_MM_TOK loads
 * per four columns for 2 * X8_MM_TOK vpdpbusd, where one group took 1 + X8_MM_TOK for
 * X8_MM_TOK: the loads, not the multiplies, had been the bound. acc[h][t] is group h's
 * (the second at g + gs) for token t; the sums of each group and token are x8_mm_group's. */
typedef void (*x8_mm2_block_fn)(__m256 (*acc)[X8_MM_TOK], const uint8_t *g, size_t gs,
				const block_q8_0 *const *ys, const int32_t *base, const float *dy,
				int nt);

static inline __attribute__((always_inline)) void
x8_mm2_group(float *y, size_t ldy, const uint8_t *g, size_t gs, size_t bs,
	     const block_q8_0 *const *ys, const struct x8_mm_act *a, size_t tt, size_t len,
	     bool first, x8_mm2_block_fn block, int nt, size_t pf)
{
	__m256 acc0[2][X8_MM_TOK], acc1[2][X8_MM_TOK];
	for (int h = 0; h < 2; h++)
		for (int t = 0; t < nt; t++) {
			acc0[h][t] = first ? _mm256_setzero_ps()
					   : _mm256_loadu_ps(y + (size_t)t * ldy + h * KRN_X8);
			acc1[h][t] = _mm256_setzero_ps();
		}
	size_t i = 0;
	for (; i + 2 <= len; i += 2, g += 2 * KRN_X8 * bs) {
		const block_q8_0 *y0[X8_MM_TOK], *y1[X8_MM_TOK];
		x8_prefetch(g, pf, 2 * KRN_X8 * bs);
		x8_prefetch(g + gs, pf, 2 * KRN_X8 * bs);
		for (int t = 0; t < nt; t++) {
			y0[t] = ys[t] + i;
			y1[t] = ys[t] + i + 1;
		}
		block(acc0, g, gs, y0, &a->base[tt][i], &a->dy[tt][i], nt);
		block(acc1, g + KRN_X8 * bs, gs, y1, &a->base[tt][i + 1], &a->dy[tt][i + 1], nt);
	}
	if (i < len) {
		const block_q8_0 *y0[X8_MM_TOK];
		for (int t = 0; t < nt; t++)
			y0[t] = ys[t] + i;
		block(acc0, g, gs, y0, &a->base[tt][i], &a->dy[tt][i], nt);
	}
	for (int h = 0; h < 2; h++)
		for (int t = 0; t < nt; t++)
			_mm256_storeu_ps(y + (size_t)t * ldy + h * KRN_X8,
					 _mm256_add_ps(acc0[h][t], acc1[h][t]));
}

/* krn_matmul_x8_fn for a legacy type (bs, offset and the tiles as x8_matvec's); block2 (NULL:
 * none) takes the groups two at a time, block the odd one left. */
static inline __attribute__((always_inline)) void
x8_matmul(float *y, size_t ldy, const uint8_t *w, size_t rows, const uint8_t *xq, size_t ldx,
	  size_t n_tok, size_t nb, size_t r0, size_t r1, size_t bs, int offset,
	  x8_mm_block_fn block, x8_mm2_block_fn block2)
{
	struct x8_mm_act a;
	size_t tb, n_tiles = krn_x8_tiles(nb, KRN_QK, &tb);
	for (size_t k = 0; k < n_tiles; k++) {
		const size_t i0 = k * tb, len = k + 1 < n_tiles ? tb : nb - i0;
		for (size_t t0 = 0; t0 < n_tok; t0 += X8_MM_CHUNK) {
			size_t nt = n_tok - t0 < X8_MM_CHUNK ? n_tok - t0 : X8_MM_CHUNK;
			const block_q8_0 *ys[X8_MM_CHUNK];
			for (size_t tt = 0; tt < nt; tt++) {
				ys[tt] = (const block_q8_0 *)(const void *)(xq + (t0 + tt) * ldx) +
					 i0;
				for (size_t i = 0; i < len; i++) {
					a.base[tt][i] = offset ? act_base(&ys[tt][i], offset) : 0;
					a.dy[tt][i] = krn_fp16_table[ys[tt][i].d];
				}
			}
			size_t r = r0;
			for (; block2 && r + KRN_X8 < r1; r += 2 * KRN_X8) {
				const uint8_t *g = w + (i0 * rows + r * len) * bs;
				float *yr = y + t0 * ldy + r;
				size_t tt = 0, gs = KRN_X8 * len * bs;
				size_t pf = x8_pf_distance(nt, r, r1, len, bs, 2);
				for (; tt + X8_MM_TOK <= nt; tt += X8_MM_TOK)
					x8_mm2_group(yr + tt * ldy, ldy, g, gs, bs, ys + tt, &a, tt,
						     len, k == 0, block2, X8_MM_TOK, tt ? 0 : pf);
#define X8_MM2_REST(c)                                                                       \
	x8_mm2_group(yr + tt * ldy, ldy, g, gs, bs, ys + tt, &a, tt, len, k == 0, block2, c, \
		     tt ? 0 : pf)
				X8_MM_REST(nt - tt, X8_MM2_REST);
#undef X8_MM2_REST
			}
			for (; r < r1; r += KRN_X8) {
				const uint8_t *g = w + (i0 * rows + r * len) * bs;
				float *yr = y + t0 * ldy + r;
				size_t tt = 0;
				size_t pf = x8_pf_distance(nt, r, r1, len, bs, 1);
				for (; tt + X8_MM_TOK <= nt; tt += X8_MM_TOK)
					x8_mm_group(yr + tt * ldy, ldy, g, bs, ys + tt, &a, tt, len,
						    k == 0, block, X8_MM_TOK, tt ? 0 : pf);
#define X8_MM1_REST(c)                                                                       \
	x8_mm_group(yr + tt * ldy, ldy, g, bs, ys + tt, &a, tt, len, k == 0, block, c, tt ? 0 : pf)
				X8_MM_REST(nt - tt, X8_MM1_REST);
#undef X8_MM1_REST
			}
		}
	}
}

/* ---- q4_1 and q5_1, against a Q8_1 activation ---------------------------------------------
 *
 * Unsigned quants with no offset (x8_legacy.c): a block's integer dots need nothing prepared
 * but the activation's scale d and its s (fp16(d * sum(qs))), and the min term m * s of the
 * eight rows is one more FMA in the block's float tail. One driver serves one token and
 * several, in x8_matmul's order: the matvec is it with one token, so the two agree bit for
 * bit by construction. */
struct x8_mm_act1 {
	float dy[X8_MM_CHUNK][X8_PREPARED];
	float sy[X8_MM_CHUNK][X8_PREPARED];
};

/* block_tail, then + m_x * s_y for the eight rows (their mins at g + 16) */
static inline __m256 block_tail1(__m256 acc, const uint8_t *g, __m256i p, float dy, float sy)
{
	acc = block_tail(acc, g, p, dy);
	return _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(g + 16))),
			       _mm256_set1_ps(sy), acc);
}

/* x8_mm_block_fn for Q8_1 activations: dy and sy as x8_mm_block_fn's dy */
typedef void (*x8_mm1_block_fn)(__m256 *acc, const uint8_t *g, const block_q8_1 *const *ys,
				const float *dy, const float *sy, int nt);

static inline __attribute__((always_inline)) void
x8_mm1_group(float *y, size_t ldy, const uint8_t *g, size_t bs, const block_q8_1 *const *ys,
	     const struct x8_mm_act1 *a, size_t tt, size_t len, bool first, x8_mm1_block_fn block,
	     int nt, size_t pf)
{
	__m256 acc0[X8_MM_TOK], acc1[X8_MM_TOK];
	for (int t = 0; t < nt; t++) {
		acc0[t] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + (size_t)t * ldy);
		acc1[t] = _mm256_setzero_ps();
	}
	size_t i = 0;
	for (; i + 2 <= len; i += 2, g += 2 * KRN_X8 * bs) {
		const block_q8_1 *y0[X8_MM_TOK], *y1[X8_MM_TOK];
		x8_prefetch(g, pf, 2 * KRN_X8 * bs);
		for (int t = 0; t < nt; t++) {
			y0[t] = ys[t] + i;
			y1[t] = ys[t] + i + 1;
		}
		block(acc0, g, y0, &a->dy[tt][i], &a->sy[tt][i], nt);
		block(acc1, g + KRN_X8 * bs, y1, &a->dy[tt][i + 1], &a->sy[tt][i + 1], nt);
	}
	if (i < len) {
		const block_q8_1 *y0[X8_MM_TOK];
		for (int t = 0; t < nt; t++)
			y0[t] = ys[t] + i;
		block(acc0, g, y0, &a->dy[tt][i], &a->sy[tt][i], nt);
	}
	for (int t = 0; t < nt; t++)
		_mm256_storeu_ps(y + (size_t)t * ldy, _mm256_add_ps(acc0[t], acc1[t]));
}

/* krn_matmul_x8_fn for q4_1 and q5_1 (bs: the type's block size in bytes) */
static inline __attribute__((always_inline)) void
x8_matmul1(float *y, size_t ldy, const uint8_t *w, size_t rows, const uint8_t *xq, size_t ldx,
	   size_t n_tok, size_t nb, size_t r0, size_t r1, size_t bs, x8_mm1_block_fn block)
{
	struct x8_mm_act1 a;
	size_t tb, n_tiles = krn_x8_tiles(nb, KRN_QK, &tb);
	for (size_t k = 0; k < n_tiles; k++) {
		const size_t i0 = k * tb, len = k + 1 < n_tiles ? tb : nb - i0;
		for (size_t t0 = 0; t0 < n_tok; t0 += X8_MM_CHUNK) {
			size_t nt = n_tok - t0 < X8_MM_CHUNK ? n_tok - t0 : X8_MM_CHUNK;
			const block_q8_1 *ys[X8_MM_CHUNK];
			for (size_t tt = 0; tt < nt; tt++) {
				ys[tt] = (const block_q8_1 *)(const void *)(xq + (t0 + tt) * ldx) +
					 i0;
				for (size_t i = 0; i < len; i++) {
					a.dy[tt][i] = krn_fp16_table[ys[tt][i].d];
					a.sy[tt][i] = krn_fp16_table[ys[tt][i].s];
				}
			}
			for (size_t r = r0; r < r1; r += KRN_X8) {
				const uint8_t *g = w + (i0 * rows + r * len) * bs;
				float *yr = y + t0 * ldy + r;
				size_t tt = 0, pf = x8_pf_distance(nt, r, r1, len, bs, 1);
				for (; tt + X8_MM_TOK <= nt; tt += X8_MM_TOK)
					x8_mm1_group(yr + tt * ldy, ldy, g, bs, ys + tt, &a, tt, len,
						     k == 0, block, X8_MM_TOK, tt ? 0 : pf);
#define X8_MMQ81_REST(c)                                                                     \
	x8_mm1_group(yr + tt * ldy, ldy, g, bs, ys + tt, &a, tt, len, k == 0, block, c,      \
		     tt ? 0 : pf)
				X8_MM_REST(nt - tt, X8_MMQ81_REST);
#undef X8_MMQ81_REST
			}
		}
	}
}
