/* engine/quants/x86/x8_float.h: the x8 kernels of f16 and bf16 (layouts: x8_float.c), one
 * driver for one token and several, shared by avx2_x8f.c and avx512_x8f.c. The including file
 * defines XF_TOK (tokens per register block: its vector registers bound it) and passes two
 * functions: the eight rows' element e as floats, and the activation's halves as floats.
 * Not a header to include anywhere else.
 *
 * Row r of a group lives in lane r of a ymm; element e of the eight rows times the token's
 * element e, broadcast, is one FMA, so no vector is summed horizontally. The activation is
 * widened to floats once per call and token (exact for both formats) into a buffer, from
 * which each FMA takes its broadcast.
 *
 * The sums: a row's elements run in units of XF_SUB from the start of each tile (types.h),
 * each in four FMA chains (element e into chain e % 4, the row's running sum the first
 * chain's start), folded as (c0 + c1) + (c2 + c3) at the unit's end. The order depends on n
 * alone, never on the rows, the tokens or how the loops are turned, so the one-token kernel
 * and the multi-token one give the same bits; both are within float rounding of ref's
 * vec_dot, whose order (one sum of products) they do not reproduce.
 */
#include "kernels/x86/simd.h"

#define XF_SUB 512		     /* elements a unit: 8 KB of a group's weights, L1-resident */
#define XF_CHUNK 16		     /* tokens whose activation is widened together */
#define XF_BUF (XF_CHUNK * XF_SUB) /* floats, 32 KB of stack: a whole tile for one token */

typedef __m256 (*xf_load_fn)(const uint8_t *p);
typedef void (*xf_act_fn)(float *dst, const uint16_t *src, size_t n);

/* One unit of one group, nt tokens: y[t * ldy] holds (first: receives) the eight rows' running
 * sums of token t, whose activation elements are xa[t * xs + e]; g is the unit's first layout
 * block. */
static inline __attribute__((always_inline)) void
xf_unit(float *y, size_t ldy, const uint8_t *g, const float *xa, size_t xs, size_t len,
	bool first, const uint8_t *pf, xf_load_fn load, int nt)
{
	__m256 acc[XF_TOK][4];
	for (int t = 0; t < nt; t++) {
		acc[t][0] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + (size_t)t * ldy);
		acc[t][1] = acc[t][2] = acc[t][3] = _mm256_setzero_ps();
	}
	size_t e = 0;
	for (; e + 4 <= len; e += 4) {
		__m256 w[4];
		if (pf)
			_mm_prefetch((const char *)(pf + 16 * e), _MM_HINT_T0);
		for (int j = 0; j < 4; j++)
			w[j] = load(g + 16 * (e + (size_t)j));
		for (int t = 0; t < nt; t++)
			for (int j = 0; j < 4; j++)
				acc[t][j] = _mm256_fmadd_ps(
					w[j], _mm256_set1_ps(xa[(size_t)t * xs + e + (size_t)j]),
					acc[t][j]);
	}
	for (; e < len; e++) {
		__m256 w = load(g + 16 * e);
		for (int t = 0; t < nt; t++)
			acc[t][e % 4] = _mm256_fmadd_ps(w, _mm256_set1_ps(xa[(size_t)t * xs + e]),
							acc[t][e % 4]);
	}
	for (int t = 0; t < nt; t++)
		_mm256_storeu_ps(y + (size_t)t * ldy,
				 _mm256_add_ps(_mm256_add_ps(acc[t][0], acc[t][1]),
					       _mm256_add_ps(acc[t][2], acc[t][3])));
}

/* One unit of one group for nt tokens (y: the first one's row r): XF_TOK tokens a pass over
 * the unit, the rest as two (where XF_TOK is larger) and one: a batched decode step of two
 * sequences on AVX-512 (XF_TOK 4) had run two one-token passes. Only the first pass
 * prefetches (pf): the others read the unit from L1. */
static inline __attribute__((always_inline)) void
xf_tokens(float *y, size_t ldy, const uint8_t *g, const float *xa, size_t xs, size_t len,
	  bool first, const uint8_t *pf, xf_load_fn load, size_t nt)
{
	size_t tt = 0;
	for (; tt + XF_TOK <= nt; tt += XF_TOK, pf = NULL)
		xf_unit(y + tt * ldy, ldy, g, xa + tt * xs, xs, len, first, pf, load, XF_TOK);
	if (XF_TOK > 2 && tt + 2 <= nt) {
		xf_unit(y + tt * ldy, ldy, g, xa + tt * xs, xs, len, first, pf, load, 2);
		tt += 2;
		pf = NULL;
	}
	for (; tt < nt; tt++, pf = NULL)
		xf_unit(y + tt * ldy, ldy, g, xa + tt * xs, xs, len, first, pf, load, 1);
}

/* krn_matmul_x8_fn for f16 and bf16 (2-byte elements; the one-token kernel is this with one
 * token). One token widens a whole tile of activation and runs each group through the tile,
 * so the weights stream in order; several widen XF_SUB elements of XF_CHUNK tokens and run
 * every group's unit for them, XF_TOK tokens per pass over it (from L1 after the first). */
static inline __attribute__((always_inline)) void
xf_matmul(float *y, size_t ldy, const uint8_t *w, size_t rows, const uint8_t *xq, size_t ldx,
	  size_t n_tok, size_t n, size_t r0, size_t r1, xf_load_fn load, xf_act_fn act)
{
	float xa[XF_BUF];
	size_t tb, n_tiles = krn_x8_tiles(n, 1, &tb);
	for (size_t k = 0; k < n_tiles; k++) {
		const size_t i0 = k * tb, len = k + 1 < n_tiles ? tb : n - i0;
		for (size_t t0 = 0; t0 < n_tok; t0 += XF_CHUNK) {
			size_t nt = n_tok - t0 < XF_CHUNK ? n_tok - t0 : XF_CHUNK;
			/* a tile is under two tiles' width (types.h): 8191 elements fit XF_BUF */
			size_t span = nt == 1 ? len : XF_SUB;
			for (size_t p0 = 0; p0 < len; p0 += span) {
				size_t pl = len - p0 < span ? len - p0 : span;
				for (size_t tt = 0; tt < nt; tt++)
					act(xa + tt * span,
					    (const uint16_t *)(const void *)(xq + (t0 + tt) * ldx) +
						    i0 + p0,
					    pl);
				for (size_t r = r0; r < r1; r += KRN_X8) {
					const uint8_t *g = w + (i0 * rows + r * len + p0 * KRN_X8) * 2;
					float *yr = y + t0 * ldy + r;
					for (size_t s = 0; s < pl; s += XF_SUB) {
						size_t sl = pl - s < XF_SUB ? pl - s : XF_SUB;
						bool first = k == 0 && p0 + s == 0;
						/* the next group's unit, fetched during the first
						 * pass over this one: units are strided when
						 * several tokens run, and the hardware prefetcher
						 * does not follow */
						const uint8_t *pf = nt > 1 && r + KRN_X8 < r1
									    ? g + 16 * s + len * 16
									    : NULL;
						xf_tokens(yr, ldy, g + 16 * s, xa + s, span, sl,
							  first, pf, load, nt);
					}
				}
			}
		}
	}
}

/* The widenings, exact both: f16 by F16C's vcvtph2ps, bf16 by a zero extension and a 16-bit
 * shift; and the activation's row widened once per call (act_f16, act_bf16). */
static inline __m256 load_f16x8(const uint8_t *p)
{
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}

static inline __m256 load_bf16x8(const uint8_t *p)
{
	__m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
	return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

static void act_f16(float *dst, const uint16_t *src, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i, load_f16x8((const uint8_t *)(src + i)));
	for (; i < n; i++)
		dst[i] = krn_fp16_table[src[i]];
}

static void act_bf16(float *dst, const uint16_t *src, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i, load_bf16x8((const uint8_t *)(src + i)));
	for (; i < n; i++)
		dst[i] = krn_bf16_to_fp32(src[i]);
}
