/* engine/quants/arm/neon_x8f.c: NEON kernels for f16 and bf16 in the x8 layout (layout:
 * ../x8_float.c: element e of a group's eight rows side by side, 16 bytes).
 *
 * Bits: neon.c's dot_f16 / dot_bf16 run four FMA chains over the row (element e into lane
 * e % 4 of one float32x4, for e below n rounded down to four), add the lanes as vaddvq_f32
 * does, (l0 + l1) + (l2 + l3) (two FADDP), and add the last n % 4 products one at a time,
 * unfused (-ffp-contract=off). Here row r of a group is lane r % 4 of half h = r / 4, chain k
 * of the eight rows is c[k][h], and every step is the same float operation: the same fused
 * w * x into the same chain in the same order, the same fold, the same tail. So every row gets
 * its vec_dot's bits, whatever the rows and tokens (krn_matmul_x8_fn's promise), and the
 * x8_drive.h driver, which carries one sum per row from tile to tile through y, does not fit:
 * the chains run across the tiles, so a group walks its row tile by tile with its chains kept
 * (x86/x8_float.h folds at every unit instead, and so does not give x86's vec_dot bits).
 *
 * Order: group by group, XF_CHUNK tokens at a time, each of the group's tiles in units of
 * XF_SUB elements (8 KB of weights, in L1 for every pair of tokens after the first); a tile's
 * part of a group is one sequential run of 64 KB.
 */
#include <arm_neon.h>

#include "internal.h"
#include "x8_kernels.h"

#define XF_TOK 2     /* tokens whose chains are in registers: 16 of the 32 vector registers */
#define XF_CHUNK 16  /* tokens whose chains are kept (2 KB of stack) while a group streams */
#define XF_SUB 512   /* elements a unit */

/* Element e of the eight rows (16 bytes at p) as floats, rows 0-3 and 4-7; and four
 * activation elements at p as floats. Exact widenings both. */
typedef void (*xf_widen_fn)(const uint8_t *p, float32x4_t w[2]);
typedef float32x4_t (*xf_act_fn)(const uint8_t *p);

static inline void widen_f16(const uint8_t *p, float32x4_t w[2])
{
	float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(p));
	w[0] = vcvt_f32_f16(vget_low_f16(h));
	w[1] = vcvt_high_f32_f16(h);
}

static inline float32x4_t act_f16(const uint8_t *p)
{
	return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p)));
}

static inline void widen_bf16(const uint8_t *p, float32x4_t w[2])
{
	uint16x8_t h = vreinterpretq_u16_u8(vld1q_u8(p));
	w[0] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
	w[1] = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
}

static inline float32x4_t act_bf16(const uint8_t *p)
{
	return vreinterpretq_f32_u32(vshll_n_u16(vreinterpret_u16_u8(vld1_u8(p)), 16));
}

/* c[t] (token t's chains, c[t][k][h]) plus elements [0, len) (a multiple of four) of the unit
 * at g against token t's activation elements at x + t * ldx, t < nt (a constant after
 * inlining). */
static inline __attribute__((always_inline)) void
xf_unit(float32x4_t (*c)[4][2], const uint8_t *g, const uint8_t *x, size_t ldx, size_t len,
	xf_widen_fn widen, xf_act_fn act, int nt)
{
	float32x4_t s[XF_TOK][4][2];
	for (int t = 0; t < nt; t++)
		for (int k = 0; k < 4; k++)
			for (int h = 0; h < 2; h++)
				s[t][k][h] = c[t][k][h];
	for (size_t e = 0; e < len; e += 4) {
		float xf[XF_TOK][4];
		for (int t = 0; t < nt; t++)
			vst1q_f32(xf[t], act(x + (size_t)t * ldx + 2 * e));
		for (int k = 0; k < 4; k++) {
			float32x4_t w[2];
			widen(g + 16 * (e + (size_t)k), w);
			for (int t = 0; t < nt; t++)
				for (int h = 0; h < 2; h++)
					s[t][k][h] = vfmaq_n_f32(s[t][k][h], w[h], xf[t][k]);
		}
	}
	for (int t = 0; t < nt; t++)
		for (int k = 0; k < 4; k++)
			for (int h = 0; h < 2; h++)
				c[t][k][h] = s[t][k][h];
}

/* krn_matmul_x8_fn for f16 and bf16 (the one-token kernel is this with one token); scalar
 * widens one activation element, for the tail. */
static inline __attribute__((always_inline)) void
xf_matmul(float *y, size_t ldy, const uint8_t *w, size_t rows, const uint8_t *xq, size_t ldx,
	  size_t n_tok, size_t n, size_t r0, size_t r1, xf_widen_fn widen, xf_act_fn act,
	  float (*scalar)(uint16_t))
{
	size_t tb, n_tiles = krn_x8_tiles(n, 1, &tb), n4 = n & ~(size_t)3;
	size_t il = (n_tiles - 1) * tb; /* the last tile's first element: the tail is in it */
	for (size_t r = r0; r < r1; r += KRN_X8)
		for (size_t t0 = 0; t0 < n_tok; t0 += XF_CHUNK) {
			size_t nt = n_tok - t0 < XF_CHUNK ? n_tok - t0 : XF_CHUNK;
			const uint8_t *x0 = xq + t0 * ldx;
			float32x4_t c[XF_CHUNK][4][2];
			for (size_t t = 0; t < nt; t++)
				for (int k = 0; k < 4; k++)
					c[t][k][0] = c[t][k][1] = vdupq_n_f32(0);
			for (size_t k = 0; k < n_tiles; k++) {
				size_t i0 = k * tb, len = k + 1 < n_tiles ? tb : n - i0;
				size_t len4 = k + 1 < n_tiles ? len : n4 - i0;
				const uint8_t *g = w + (i0 * rows + r * len) * 2;
				for (size_t s = 0; s < len4; s += XF_SUB) {
					size_t sl = len4 - s < XF_SUB ? len4 - s : XF_SUB, t = 0;
					const uint8_t *gs = g + 16 * s, *xs = x0 + 2 * (i0 + s);
					for (; t + XF_TOK <= nt; t += XF_TOK)
						xf_unit(c + t, gs, xs + t * ldx, ldx, sl, widen,
							act, XF_TOK);
					for (; t < nt; t++)
						xf_unit(c + t, gs, xs + t * ldx, ldx, sl, widen,
							act, 1);
				}
			}
			const uint8_t *gl = w + (il * rows + r * (n - il)) * 2;
			for (size_t t = 0; t < nt; t++) {
				const uint16_t *xt = (const uint16_t *)(const void *)(x0 + t * ldx);
				float32x4_t sum[2];
				for (int h = 0; h < 2; h++)
					sum[h] = vaddq_f32(vaddq_f32(c[t][0][h], c[t][1][h]),
							   vaddq_f32(c[t][2][h], c[t][3][h]));
				for (size_t e = n4; e < n; e++) {
					float32x4_t we[2];
					float xe = scalar(xt[e]);
					widen(gl + 16 * (e - il), we);
					for (int h = 0; h < 2; h++)
						sum[h] = vaddq_f32(sum[h], vmulq_n_f32(we[h], xe));
				}
				vst1q_f32(y + (t0 + t) * ldy + r, sum[0]);
				vst1q_f32(y + (t0 + t) * ldy + r + 4, sum[1]);
			}
		}
}

static inline float fp16_scalar(uint16_t h)
{
	return krn_fp16_table[h];
}

static inline float bf16_scalar(uint16_t h)
{
	return krn_bf16_to_fp32(h);
}

void krn_neon_matvec_x8_f16(float *y, const void *w, size_t rows, const void *xq, size_t n,
			    size_t r0, size_t r1)
{
	xf_matmul(y, 0, w, rows, xq, 0, 1, n, r0, r1, widen_f16, act_f16, fp16_scalar);
}

void krn_neon_matmul_x8_f16(float *y, size_t ldy, const void *w, size_t rows, const void *xq,
			    size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	xf_matmul(y, ldy, w, rows, xq, ldx, n_tok, n, r0, r1, widen_f16, act_f16, fp16_scalar);
}

void krn_neon_matvec_x8_bf16(float *y, const void *w, size_t rows, const void *xq, size_t n,
			     size_t r0, size_t r1)
{
	xf_matmul(y, 0, w, rows, xq, 0, 1, n, r0, r1, widen_bf16, act_bf16, bf16_scalar);
}

void krn_neon_matmul_x8_bf16(float *y, size_t ldy, const void *w, size_t rows,
			     const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
			     size_t r1)
{
	xf_matmul(y, ldy, w, rows, xq, ldx, n_tok, n, r0, r1, widen_bf16, act_bf16, bf16_scalar);
}
