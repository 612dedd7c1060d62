/* engine/kernels/arm/neon.c: AArch64 Advanced SIMD (NEON) kernels.
 *
 * AdvSIMD is part of the AArch64 base architecture, so this file needs no -m flag; supported()
 * still asks the kernel's hwcaps, the way Linux says a feature is usable (HWCAP_ASIMD,
 * Documentation/arch/arm64/elf_hwcaps.rst). Tails are scalar: NEON has no masked load.
 * Built and tested on x86 hosts with aarch64-linux-gnu-gcc under qemu-aarch64
 * (tests/neon-qemu.sh).
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

static float neon_dot_f32(const float *a, const float *b, size_t n)
{
	float32x4_t s0 = vdupq_n_f32(0.0f), s1 = vdupq_n_f32(0.0f);
	float32x4_t s2 = vdupq_n_f32(0.0f), s3 = vdupq_n_f32(0.0f);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
		s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
		s2 = vfmaq_f32(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
		s3 = vfmaq_f32(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
	}
	for (; i + 4 <= n; i += 4)
		s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
	float sum = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
	for (; i < n; i++)
		sum += a[i] * b[i];
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
	.dot_f32 = neon_dot_f32,
	.axpy_f32 = neon_axpy_f32,
	.stream_read = neon_stream_read,
	.stream_copy = neon_stream_copy,
	/* STNP is only a hint and has no vector intrinsic; not worth inline assembly here. */
	.stream_copy_nt = NULL,
	.stream_triad = neon_stream_triad,
	.stream_triad_nt = NULL,
};
