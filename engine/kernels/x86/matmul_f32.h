/* engine/kernels/x86/matmul_f32.h: the loop around matmul_f32's register tile, the same for
 * every x86 table; included by x86/avx2.c and x86/avx512.c, each compiled with its own -m
 * flags, so it is a body to include, not a function to link.
 *
 * The including file first defines mm_tile(y, ldy, w, x, ldx, n, nr, nt), always_inline,
 * for up to MM_TILE_ROWS rows and 3 tokens (nr and nt become constants here), and
 * MM_TILE_ROWS, and MM_ROWS_OUTER, up to which size in bytes a tile's rows go outermost.
 * Two loop orders:
 *  - rows outermost, over all the tokens three at a time: the weights are read from memory
 *    once and from L1 thereafter, the tokens from L2. For AVX-512's 4-row tile with rows of
 *    up to 16 KB (half of a 32 KB L1d: stories110M's 768 columns), measured in isolation
 *    (-O3 -march=native, this VM, stories110M's shapes, 128 tokens, best of 5, 4
 *    interleaved rounds): 101-102 GFLOP/s against 100 for blocks, but 80 against 87 at
 *    2,048 columns. AVX2's 2-row tile, which loads more tokens than rows, lost 6-10% with
 *    it at every width: it sets MM_ROWS_OUTER to 0.
 *  - rows in blocks of 32 (256 KB at 2,048 columns, in L2), each block over all the tokens
 *    three at a time, MM_TILE_ROWS rows at a time: the tokens from L1, the weights from L2.
 * The last rows go one at a time.
 */
#ifndef MEMWALL_KERNELS_X86_MATMUL_F32_H
#define MEMWALL_KERNELS_X86_MATMUL_F32_H

#include <stddef.h>

static inline __attribute__((always_inline)) void
mm_rows(float *y, size_t ldy, const float *w, const float *x, size_t ldx, size_t n, size_t nt,
	int nr)
{
	if (nt == 3)
		mm_tile(y, ldy, w, x, ldx, n, nr, 3);
	else if (nt == 2)
		mm_tile(y, ldy, w, x, ldx, n, nr, 2);
	else
		mm_tile(y, ldy, w, x, ldx, n, nr, 1);
}

/* The tokens [0, n_tok) three at a time against nr rows from w. */
static inline __attribute__((always_inline)) void
mm_tokens(float *y, size_t ldy, const float *w, const float *x, size_t ldx, size_t n_tok,
	  size_t n, int nr)
{
	for (size_t t = 0; t < n_tok; t += 3)
		mm_rows(y + t * ldy, ldy, w, x + t * ldx, ldx, n,
			n_tok - t < 3 ? n_tok - t : 3, nr);
}

static void mm_f32(float *y, size_t ldy, const float *w, const float *x, size_t ldx,
		   size_t n_tok, size_t n, size_t r0, size_t r1)
{
	if (MM_TILE_ROWS * n * sizeof(float) <= MM_ROWS_OUTER) {
		size_t r = r0;
		for (; r + MM_TILE_ROWS <= r1; r += MM_TILE_ROWS)
			mm_tokens(y + r, ldy, w + r * n, x, ldx, n_tok, n, MM_TILE_ROWS);
		for (; r < r1; r++)
			mm_tokens(y + r, ldy, w + r * n, x, ldx, n_tok, n, 1);
		return;
	}
	for (size_t a = r0; a < r1; a += 32) {
		size_t b = r1 - a < 32 ? r1 : a + 32;
		for (size_t t = 0; t < n_tok; t += 3) {
			size_t nt = n_tok - t < 3 ? n_tok - t : 3, r = a;
			float *yt = y + t * ldy;
			const float *xt = x + t * ldx;
			for (; r + MM_TILE_ROWS <= b; r += MM_TILE_ROWS)
				mm_rows(yt + r, ldy, w + r * n, xt, ldx, n, nt, MM_TILE_ROWS);
			for (; r < b; r++)
				mm_rows(yt + r, ldy, w + r * n, xt, ldx, n, nt, 1);
		}
	}
}

#endif
