/* engine/kernels/ref.c: the scalar reference, and the fallback on any CPU.
 *
 * Plain C in the order a reader would write it: one accumulator, left to right. Every other
 * table is tested against this one (tests/engine/test_kernels.c), so it stays simple rather than fast.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "exp.h"
#include "ops.h"

static bool ref_supported(void)
{
	return true;
}

static float ref_dot_f32(const float *a, const float *b, size_t n)
{
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += a[i] * b[i];
	return sum;
}

static void ref_matvec_f32(float *y, const float *w, const float *x, size_t n, size_t r0,
			   size_t r1)
{
	for (size_t r = r0; r < r1; r++)
		y[r] = ref_dot_f32(w + r * n, x, n);
}

static void ref_axpy_f32(float *y, float a, const float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] += a * x[i];
}

/* exp.h's e^x. The clamp's comparisons are false for NaN, which then passes through. */
static float ref_exp(float x)
{
	static const double taylor[KRN_EXP_TERMS] = KRN_EXP_TAYLOR;
	double d = x;
	if (d != d)
		return x;
	if (d < -KRN_EXP_CLAMP)
		d = -KRN_EXP_CLAMP;
	if (d > KRN_EXP_CLAMP)
		d = KRN_EXP_CLAMP;
	double k = nearbyint(d * KRN_EXP_INVLN2);
	double r = (d - k * KRN_EXP_LN2_HI) - k * KRN_EXP_LN2_LO;
	double p = taylor[0];
	for (int j = 1; j < KRN_EXP_TERMS; j++)
		p = p * r + taylor[j];
	p = (p * r + 1.0) * r + 1.0;
	/* 2^k built from its exponent field, |k| <= 217 being far inside double's range: the
	 * product is exact, as ldexp's would be, without a call per element. */
	uint64_t bits = (uint64_t)((int64_t)k + 1023) << 52;
	double two_k;
	memcpy(&two_k, &bits, sizeof(two_k));
	return (float)(p * two_k);
}

static void ref_silu_glu(float *g, const float *u, size_t n)
{
	for (size_t i = 0; i < n; i++)
		g[i] = g[i] * (1.0f / (1.0f + ref_exp(-g[i]))) * u[i];
}

/* The sum left to right. */
static float ref_exp_sub(float *x, float sub, size_t n)
{
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++) {
		x[i] = ref_exp(x[i] - sub);
		sum += x[i];
	}
	return sum;
}

/* Eight partial sums: with one, each add waits for the last (3-4 cycles), which caps a scalar
 * read near 4 GB/s, far below memory; eight keep enough loads in flight for a build with only
 * this table (-Dkernels=ref-only) to measure memory rather than add latency. */
static float ref_stream_read(const float *a, size_t n)
{
	float s[8] = { 0.0f };
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		for (size_t j = 0; j < 8; j++)
			s[j] += a[i + j];
	for (; i < n; i++)
		s[0] += a[i];
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static void ref_stream_copy(float *dst, const float *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i];
}

static void ref_stream_triad(float *a, const float *b, const float *c, float s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a[i] = b[i] + s * c[i];
}

const struct krn_ops krn_ops_ref = {
	.name = "ref",
	.supported = ref_supported,
	.matvec_f32 = ref_matvec_f32,
	.dot_f32 = ref_dot_f32,
	.axpy_f32 = ref_axpy_f32,
	.silu_glu = ref_silu_glu,
	.exp_sub = ref_exp_sub,
	.stream_read = ref_stream_read,
	.stream_copy = ref_stream_copy,
	.stream_copy_nt = NULL, /* portable C has no non-temporal store */
	.stream_triad = ref_stream_triad,
	.stream_triad_nt = NULL,
};
