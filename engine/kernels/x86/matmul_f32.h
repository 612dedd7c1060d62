/* engine/kernels/x86/matmul_f32.h: the loop around matmul_f32's register tile, the same for
 * every x86 table; included by x86/avx2.c and x86/avx512.c, each compiled with its own -m
 * flags, so it is a body to include, not a function to link.
 *
 * The including file first defines mm_tile(y, ldy, w, x, ldx, n, nr, nt), always_inline,
 * for up to MM_TILE_ROWS rows and 3 tokens (nr and nt become constants here), and
 * MM_TILE_ROWS. Rows go in blocks of 32 (96 KB at stories110M's 768 columns, in L2), each
 * block over all the tokens three at a time, MM_TILE_ROWS rows at a time, the last rows one
 * at a time.
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

static void mm_f32(float *y, size_t ldy, const float *w, const float *x, size_t ldx,
		   size_t n_tok, size_t n, size_t r0, size_t r1)
{
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
