/* engine/kernels/arm/neon.c: AArch64 Advanced SIMD (NEON) kernels.
 *
 * AdvSIMD is part of the AArch64 base architecture, so this file needs no -m flag; supported()
 * still asks the kernel's hwcaps, the way Linux says a feature is usable (HWCAP_ASIMD,
 * Documentation/arch/arm64/elf_hwcaps.rst). Tails are scalar: NEON has no masked load.
 * Built and tested on x86 hosts with aarch64-linux-gnu-gcc under qemu-aarch64
 * (tests/engine/neon-qemu.sh).
 */
#include <arm_neon.h>
#include <sys/auxv.h>

#include "ops.h"

#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1) /* arch/arm64/include/uapi/asm/hwcap.h */
#endif

static bool neon_supported(void)
{
	return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
}

/* nr rows of w (ldw floats apart) by nt tokens of x (ldx apart), constants after inlining:
 * y[t * ldy + r] = dot(row r, token t). Each pair is summed the one way neon_dot_f32 (this
 * with one row and one token) sums it: four FMA chains over 16 elements a step, then chain 0
 * over 4, the chains folded (s0 + s1) + (s2 + s3) and across lanes, then the scalar tail. So
 * matmul_f32 gives each token matvec_f32's bits by construction (ops.h's contract), and each
 * row's and token's loads serve nt (nr) FMAs: 2 rows by 3 tokens is 20 loads for 24 FMAs per
 * 16 columns, 24 accumulators of the 32 vector registers, as x86/avx512.c's mm_tile. */
static inline __attribute__((always_inline)) void
mm_tile(float *y, size_t ldy, const float *w, size_t ldw, const float *x, size_t ldx, size_t n,
	int nr, int nt)
{
	float32x4_t s[2][3][4];
	const float *wr[2], *xt[3];
	for (int r = 0; r < nr; r++)
		wr[r] = w + (size_t)r * ldw;
	for (int t = 0; t < nt; t++)
		xt[t] = x + (size_t)t * ldx;
	for (int r = 0; r < nr; r++)
		for (int t = 0; t < nt; t++)
			for (int j = 0; j < 4; j++)
				s[r][t][j] = vdupq_n_f32(0.0f);
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		for (int j = 0; j < 4; j++) {
			float32x4_t wv[2], xv[3];
			for (int r = 0; r < nr; r++)
				wv[r] = vld1q_f32(wr[r] + i + 4 * j);
			for (int t = 0; t < nt; t++)
				xv[t] = vld1q_f32(xt[t] + i + 4 * j);
			for (int r = 0; r < nr; r++)
				for (int t = 0; t < nt; t++)
					s[r][t][j] = vfmaq_f32(s[r][t][j], wv[r], xv[t]);
		}
	for (; i + 4 <= n; i += 4)
		for (int r = 0; r < nr; r++)
			for (int t = 0; t < nt; t++)
				s[r][t][0] = vfmaq_f32(s[r][t][0], vld1q_f32(wr[r] + i),
						       vld1q_f32(xt[t] + i));
	for (int r = 0; r < nr; r++)
		for (int t = 0; t < nt; t++) {
			float sum = vaddvq_f32(vaddq_f32(vaddq_f32(s[r][t][0], s[r][t][1]),
							 vaddq_f32(s[r][t][2], s[r][t][3])));
			for (size_t k = i; k < n; k++)
				sum += wr[r][k] * xt[t][k];
			y[(size_t)t * ldy + (size_t)r] = sum;
		}
}

static float neon_dot_f32(const float *a, const float *b, size_t n)
{
	float sum;
	mm_tile(&sum, 0, a, 0, b, 0, n, 1, 1);
	return sum;
}

/* One row at a time, so the weights are one sequential read stream, the pattern of the
 * bandwidth probe's read kernel. On x86 (Zen 4) interleaving rows measured about half as fast
 * (see x86/avx512.c); not measured on ARM hardware, where one stream is also what the
 * prefetchers are built for. */
static void neon_matvec_f32(float *y, const float *w, const float *x, size_t n, size_t r0,
			    size_t r1)
{
	for (size_t r = r0; r < r1; r++)
		y[r] = neon_dot_f32(w + r * n, x, n);
}

/* Several tokens: rows in blocks of 32 (96 KB at stories110M's 768 columns, in L2 on any
 * AArch64 core), each block run over all the tokens three at a time, two rows at a time.
 * Speed not measured on ARM hardware (tests/engine/neon-qemu.sh checks the bits under qemu). */
static void neon_matmul_f32(float *y, size_t ldy, const float *w, const float *x, size_t ldx,
			    size_t n_tok, size_t n, size_t r0, size_t r1)
{
	for (size_t a = r0; a < r1; a += 32) {
		size_t b = r1 - a < 32 ? r1 : a + 32, t = 0, r;
		for (; t + 3 <= n_tok; t += 3) {
			const float *xt = x + t * ldx;
			for (r = a; r + 2 <= b; r += 2)
				mm_tile(y + t * ldy + r, ldy, w + r * n, n, xt, ldx, n, 2, 3);
			if (r < b)
				mm_tile(y + t * ldy + r, ldy, w + r * n, n, xt, ldx, n, 1, 3);
		}
		for (; t < n_tok; t++) {
			const float *xt = x + t * ldx;
			for (r = a; r + 2 <= b; r += 2)
				mm_tile(y + t * ldy + r, ldy, w + r * n, n, xt, ldx, n, 2, 1);
			if (r < b)
				mm_tile(y + t * ldy + r, ldy, w + r * n, n, xt, ldx, n, 1, 1);
		}
	}
}

static void neon_axpy_f32(float *y, float a, const float *x, size_t n)
{
	size_t i = 0;
	for (; i + 4 <= n; i += 4)
		vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a));
	for (; i < n; i++)
		y[i] += a * x[i];
}

/* ---- Streaming ---------------------------------------------------------------------------- */

static float neon_stream_read(const float *a, size_t n)
{
	float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		s0 = vaddq_f32(s0, vld1q_f32(a + i));
		s1 = vaddq_f32(s1, vld1q_f32(a + i + 4));
		s2 = vaddq_f32(s2, vld1q_f32(a + i + 8));
		s3 = vaddq_f32(s3, vld1q_f32(a + i + 12));
	}
	float sum = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
	for (; i < n; i++)
		sum += a[i];
	return sum;
}

static void neon_stream_copy(float *dst, const float *src, size_t n)
{
	size_t i = 0;
	for (; i + 4 <= n; i += 4)
		vst1q_f32(dst + i, vld1q_f32(src + i));
	for (; i < n; i++)
		dst[i] = src[i];
}

static void neon_stream_triad(float *a, const float *b, const float *c, float s, size_t n)
{
	size_t i = 0;
	for (; i + 4 <= n; i += 4)
		vst1q_f32(a + i, vfmaq_n_f32(vld1q_f32(b + i), vld1q_f32(c + i), s));
	for (; i < n; i++)
		a[i] = b[i] + s * c[i];
}

const struct krn_ops krn_ops_neon = {
	.name = "neon",
	.supported = neon_supported,
	.matvec_f32 = neon_matvec_f32,
	.matmul_f32 = neon_matmul_f32,
	.dot_f32 = neon_dot_f32,
	.axpy_f32 = neon_axpy_f32,
	.stream_read = neon_stream_read,
	.stream_copy = neon_stream_copy,
	/* STNP is only a hint and has no vector intrinsic; not worth inline assembly here. */
	.stream_copy_nt = NULL,
	.stream_triad = neon_stream_triad,
	.stream_triad_nt = NULL,
};
