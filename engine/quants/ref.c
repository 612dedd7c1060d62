/* engine/quants/ref.c: the type table and the scalar reference for every type.
 *
 * Dequantizers reproduce ggml's dequantize_row_* bit for bit (same products in the same
 * order; this file is built with -ffp-contract=off so no FMA changes a rounding). The
 * quantizers are ref_quantize.c's. The dot products sum each block's integer products exactly
 * and scale them in double: the yardstick every ISA table is tested against.
 */
#include <float.h>
#include <math.h>

#include "internal.h"

/* ---- Unpacking: every weight block as integers q[] plus per-group scale and min ------------
 *
 * Each format dequantizes as y = ds[g] * q[i] - ms[g] for element i of group g, with ds and
 * ms the products ggml forms (d * sc, dmin * m). One unpacker per format serves both to_float
 * and the reference dot product. */

struct unpacked {
	int8_t q[KRN_QK_K];
	float ds[KRN_QK_K / 16];
	float ms[KRN_QK_K / 16];
	int group; /* elements per group */
};

static void unpack_q4_0(const void *v, struct unpacked *u)
{
	const block_q4_0 *b = v;
	for (int j = 0; j < KRN_QK / 2; j++) {
		u->q[j] = (int8_t)((b->qs[j] & 0x0f) - 8);
		u->q[j + 16] = (int8_t)((b->qs[j] >> 4) - 8);
	}
	u->ds[0] = krn_fp16_to_fp32(b->d);
	u->ms[0] = 0.0f;
	u->group = KRN_QK;
}

static void unpack_q4_1(const void *v, struct unpacked *u)
{
	const block_q4_1 *b = v;
	for (int j = 0; j < KRN_QK / 2; j++) {
		u->q[j] = (int8_t)(b->qs[j] & 0x0f);
		u->q[j + 16] = (int8_t)(b->qs[j] >> 4);
	}
	u->ds[0] = krn_fp16_to_fp32(b->d);
	u->ms[0] = -krn_fp16_to_fp32(b->m); /* y = d q + m */
	u->group = KRN_QK;
}

static void unpack_q5(const uint8_t *qs, const uint8_t *qh4, int offset, int8_t *q)
{
	uint32_t qh;
	memcpy(&qh, qh4, sizeof(qh));
	for (int j = 0; j < KRN_QK / 2; j++) {
		int h0 = (int)((qh >> j) & 1u) << 4, h1 = (int)((qh >> (j + 16)) & 1u) << 4;
		q[j] = (int8_t)(((qs[j] & 0x0f) | h0) - offset);
		q[j + 16] = (int8_t)(((qs[j] >> 4) | h1) - offset);
	}
}

static void unpack_q5_0(const void *v, struct unpacked *u)
{
	const block_q5_0 *b = v;
	unpack_q5(b->qs, b->qh, 16, u->q);
	u->ds[0] = krn_fp16_to_fp32(b->d);
	u->ms[0] = 0.0f;
	u->group = KRN_QK;
}

static void unpack_q5_1(const void *v, struct unpacked *u)
{
	const block_q5_1 *b = v;
	unpack_q5(b->qs, b->qh, 0, u->q);
	u->ds[0] = krn_fp16_to_fp32(b->d);
	u->ms[0] = -krn_fp16_to_fp32(b->m);
	u->group = KRN_QK;
}

static void unpack_q8_0(const void *v, struct unpacked *u)
{
	const block_q8_0 *b = v;
	memcpy(u->q, b->qs, KRN_QK);
	u->ds[0] = krn_fp16_to_fp32(b->d);
	u->ms[0] = 0.0f;
	u->group = KRN_QK;
}

/* Layout of q2_K/q3_K/q6_K low bits: within each half (128 elements), element 32*s + l sits
 * in byte l (or l + 16 .. for l >= 16) at bit shift 2*s (ggml's dequantize_row_q2_K). */
static void unpack_q2_K(const void *v, struct unpacked *u)
{
	const block_q2_K *b = v;
	float d = krn_fp16_to_fp32(b->d), dmin = krn_fp16_to_fp32(b->dmin);
	for (int i = 0; i < KRN_QK_K; i++) {
		int half = i / 128, s = (i % 128) / 32, l = i % 32;
		u->q[i] = (int8_t)((b->qs[32 * half + l] >> (2 * s)) & 3);
	}
	for (int g = 0; g < 16; g++) {
		u->ds[g] = d * (float)(b->scales[g] & 0x0f);
		u->ms[g] = dmin * (float)(b->scales[g] >> 4);
	}
	u->group = 16;
}

static void unpack_q3_K(const void *v, struct unpacked *u)
{
	const block_q3_K *b = v;
	float d = krn_fp16_to_fp32(b->d);
	for (int i = 0; i < KRN_QK_K; i++) {
		int half = i / 128, s = (i % 128) / 32, l = i % 32;
		int lo = (b->qs[32 * half + l] >> (2 * s)) & 3;
		int hbit = (b->hmask[l] >> (4 * half + s)) & 1;
		u->q[i] = (int8_t)(lo - (hbit ? 0 : 4));
	}
	for (int g = 0; g < 16; g++) {
		u->ds[g] = d * (float)krn_q3_K_scale(b->scales, g);
		u->ms[g] = 0.0f;
	}
	u->group = 16;
}

static void unpack_q4_K(const void *v, struct unpacked *u)
{
	const block_q4_K *b = v;
	float d = krn_fp16_to_fp32(b->d), dmin = krn_fp16_to_fp32(b->dmin);
	for (int i = 0; i < KRN_QK_K; i++) {
		int chunk = i / 64, hi = (i % 64) / 32, l = i % 32;
		uint8_t byte = b->qs[32 * chunk + l];
		u->q[i] = (int8_t)(hi ? byte >> 4 : byte & 0x0f);
	}
	for (int g = 0; g < 8; g++) {
		int sc, m;
		krn_scale_min_k4(g, b->scales, &sc, &m);
		u->ds[g] = d * (float)sc;
		u->ms[g] = dmin * (float)m;
	}
	u->group = 32;
}

static void unpack_q5_K(const void *v, struct unpacked *u)
{
	const block_q5_K *b = v;
	float d = krn_fp16_to_fp32(b->d), dmin = krn_fp16_to_fp32(b->dmin);
	for (int i = 0; i < KRN_QK_K; i++) {
		int chunk = i / 64, hi = (i % 64) / 32, l = i % 32;
		uint8_t byte = b->qs[32 * chunk + l];
		int lo = hi ? byte >> 4 : byte & 0x0f;
		int h = (b->qh[l] >> (2 * chunk + hi)) & 1;
		u->q[i] = (int8_t)(lo + 16 * h);
	}
	for (int g = 0; g < 8; g++) {
		int sc, m;
		krn_scale_min_k4(g, b->scales, &sc, &m);
		u->ds[g] = d * (float)sc;
		u->ms[g] = dmin * (float)m;
	}
	u->group = 32;
}

static void unpack_q6_K(const void *v, struct unpacked *u)
{
	const block_q6_K *b = v;
	float d = krn_fp16_to_fp32(b->d);
	for (int i = 0; i < KRN_QK_K; i++) {
		int half = i / 128, s = (i % 128) / 32, l = i % 32;
		uint8_t lbyte = b->ql[64 * half + 32 * (s & 1) + l];
		int lo = (s & 2) ? lbyte >> 4 : lbyte & 0x0f;
		int hi = (b->qh[32 * half + l] >> (2 * s)) & 3;
		u->q[i] = (int8_t)((lo | (hi << 4)) - 32);
	}
	for (int g = 0; g < 16; g++) {
		u->ds[g] = d * (float)b->scales[g];
		u->ms[g] = 0.0f;
	}
	u->group = 16;
}

typedef void (*unpack_fn)(const void *blk, struct unpacked *u);

static const unpack_fn unpackers[KRN_TYPE_COUNT] = {
	[KRN_TYPE_Q4_0] = unpack_q4_0, [KRN_TYPE_Q4_1] = unpack_q4_1,
	[KRN_TYPE_Q5_0] = unpack_q5_0, [KRN_TYPE_Q5_1] = unpack_q5_1,
	[KRN_TYPE_Q8_0] = unpack_q8_0, [KRN_TYPE_Q2_K] = unpack_q2_K,
	[KRN_TYPE_Q3_K] = unpack_q3_K, [KRN_TYPE_Q4_K] = unpack_q4_K,
	[KRN_TYPE_Q5_K] = unpack_q5_K, [KRN_TYPE_Q6_K] = unpack_q6_K,
};

static void dequant_blocks(enum krn_type t, const void *x, float *y, size_t n)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	const uint8_t *p = x;
	struct unpacked u;
	for (size_t i = 0; i < n; i += tr->block_size, p += tr->type_size) {
		unpackers[t](p, &u);
		for (uint32_t j = 0; j < tr->block_size; j++) {
			int g = (int)j / u.group;
			y[i + j] = u.ds[g] * (float)u.q[j] - u.ms[g];
		}
	}
}

#define DEQUANT(type)                                                                          \
	static void to_float_##type(const void *x, float *y, size_t n)                         \
	{                                                                                      \
		dequant_blocks(KRN_TYPE_##type, x, y, n);                                      \
	}
DEQUANT(Q4_0)
DEQUANT(Q4_1)
DEQUANT(Q5_0)
DEQUANT(Q5_1)
DEQUANT(Q8_0)
DEQUANT(Q2_K)
DEQUANT(Q3_K)
DEQUANT(Q4_K)
DEQUANT(Q5_K)
DEQUANT(Q6_K)

static void to_float_F32(const void *x, float *y, size_t n)
{
	memcpy(y, x, n * sizeof(float));
}

static void to_float_F16(const void *x, float *y, size_t n)
{
	const uint16_t *h = x;
	for (size_t i = 0; i < n; i++)
		y[i] = krn_fp16_to_fp32(h[i]);
}

static void to_float_BF16(const void *x, float *y, size_t n)
{
	const uint16_t *h = x;
	for (size_t i = 0; i < n; i++)
		y[i] = krn_bf16_to_fp32(h[i]);
}

static void to_float_Q8_1(const void *x, float *y, size_t n)
{
	const block_q8_1 *b = x;
	for (size_t i = 0; i < n / KRN_QK; i++) {
		float d = krn_fp16_to_fp32(b[i].d);
		for (int j = 0; j < KRN_QK; j++)
			y[i * KRN_QK + (size_t)j] = (float)b[i].qs[j] * d;
	}
}

static void to_float_Q8_K(const void *x, float *y, size_t n)
{
	const block_q8_K *b = x;
	for (size_t i = 0; i < n / KRN_QK_K; i++)
		for (int j = 0; j < KRN_QK_K; j++)
			y[i * KRN_QK_K + (size_t)j] = b[i].d * (float)b[i].qs[j];
}

/* ---- Reference dot products ------------------------------------------------------------- */

/* The activation side of a block: integers, their scale, and per-group sums already scaled
 * (for the min terms). */
struct act_block {
	const int8_t *q;
	double d;
	double gsum[16]; /* scaled sum of the activation over each weight group */
};

static void act_view(enum krn_type at, const void *y, size_t blk, int group, int block_size,
		     struct act_block *a)
{
	if (at == KRN_TYPE_Q8_K) {
		const block_q8_K *b = (const block_q8_K *)y + blk;
		a->q = b->qs;
		a->d = b->d;
		for (int g = 0; g < KRN_QK_K / group; g++) {
			int s = 0;
			for (int k = 0; k < group / 16; k++)
				s += b->bsums[g * (group / 16) + k];
			a->gsum[g] = a->d * s;
		}
	} else if (at == KRN_TYPE_Q8_1) {
		/* ggml uses the stored fp16 s, not d * sum(q): llama.cpp's numerics. */
		const block_q8_1 *b = (const block_q8_1 *)y + blk;
		a->q = b->qs;
		a->d = krn_fp16_to_fp32(b->d);
		a->gsum[0] = krn_fp16_to_fp32(b->s);
	} else {
		const block_q8_0 *b = (const block_q8_0 *)y + blk;
		a->q = b->qs;
		a->d = krn_fp16_to_fp32(b->d);
		a->gsum[0] = 0.0;
	}
	(void)block_size;
}

static double dot_quant(enum krn_type t, size_t n, const void *x, const void *y)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	const uint8_t *p = x;
	double sum = 0.0;
	struct unpacked u;
	struct act_block a;
	for (size_t b = 0; b < n / tr->block_size; b++, p += tr->type_size) {
		unpackers[t](p, &u);
		act_view(tr->vec_dot_type, y, b, u.group, (int)tr->block_size, &a);
		for (int g = 0; g < (int)tr->block_size / u.group; g++) {
			int32_t isum = 0;
			for (int j = g * u.group; j < (g + 1) * u.group; j++)
				isum += u.q[j] * a.q[j];
			sum += (double)u.ds[g] * a.d * isum - (double)u.ms[g] * a.gsum[g];
		}
	}
	return sum;
}

#define VEC_DOT(type)                                                                          \
	static void vec_dot_##type(size_t n, float *s, const void *x, const void *y)           \
	{                                                                                      \
		*s = (float)dot_quant(KRN_TYPE_##type, n, x, y);                               \
	}
VEC_DOT(Q4_0)
VEC_DOT(Q4_1)
VEC_DOT(Q5_0)
VEC_DOT(Q5_1)
VEC_DOT(Q8_0)
VEC_DOT(Q2_K)
VEC_DOT(Q3_K)
VEC_DOT(Q4_K)
VEC_DOT(Q5_K)
VEC_DOT(Q6_K)

static void vec_dot_F32(size_t n, float *s, const void *x, const void *y)
{
	const float *a = x, *b = y;
	double sum = 0.0;
	for (size_t i = 0; i < n; i++)
		sum += (double)a[i] * b[i];
	*s = (float)sum;
}

static void vec_dot_F16(size_t n, float *s, const void *x, const void *y)
{
	const uint16_t *a = x, *b = y;
	double sum = 0.0;
	for (size_t i = 0; i < n; i++)
		sum += (double)krn_fp16_to_fp32(a[i]) * krn_fp16_to_fp32(b[i]);
	*s = (float)sum;
}

static void axpy_f16(float *y, float a, const uint16_t *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] += a * krn_fp16_to_fp32(x[i]);
}

static void vec_dot_BF16(size_t n, float *s, const void *x, const void *y)
{
	const uint16_t *a = x, *b = y;
	double sum = 0.0;
	for (size_t i = 0; i < n; i++)
		sum += (double)krn_bf16_to_fp32(a[i]) * krn_bf16_to_fp32(b[i]);
	*s = (float)sum;
}

/* ---- Tables ------------------------------------------------------------------------------ */

#define LEGACY(T, nm, sz, vdt)                                                                 \
	[KRN_TYPE_##T] = { .name = nm, .block_size = KRN_QK, .type_size = sz,                  \
			   .is_quantized = true, .vec_dot_type = KRN_TYPE_##vdt,               \
			   .to_float = to_float_##T, .from_float_ref = krn_ref_from_float_##T }
#define KQUANT(T, nm, sz)                                                                      \
	[KRN_TYPE_##T] = { .name = nm, .block_size = KRN_QK_K, .type_size = sz,                \
			   .is_quantized = true, .vec_dot_type = KRN_TYPE_Q8_K,                \
			   .to_float = to_float_##T, .from_float_ref = krn_ref_from_float_##T }

static const struct krn_type_traits traits[KRN_TYPE_COUNT] = {
	[KRN_TYPE_F32] = { .name = "f32", .block_size = 1, .type_size = 4,
			   .vec_dot_type = KRN_TYPE_F32, .to_float = to_float_F32,
			   .from_float_ref = krn_ref_from_float_F32 },
	[KRN_TYPE_F16] = { .name = "f16", .block_size = 1, .type_size = 2,
			   .vec_dot_type = KRN_TYPE_F16, .to_float = to_float_F16,
			   .from_float_ref = krn_ref_from_float_F16 },
	[KRN_TYPE_BF16] = { .name = "bf16", .block_size = 1, .type_size = 2,
			    .vec_dot_type = KRN_TYPE_BF16, .to_float = to_float_BF16,
			    .from_float_ref = krn_ref_from_float_BF16 },
	LEGACY(Q4_0, "q4_0", 18, Q8_0),
	LEGACY(Q4_1, "q4_1", 20, Q8_1),
	LEGACY(Q5_0, "q5_0", 22, Q8_0),
	LEGACY(Q5_1, "q5_1", 24, Q8_1),
	LEGACY(Q8_0, "q8_0", 34, Q8_0),
	[KRN_TYPE_Q8_1] = { .name = "q8_1", .block_size = KRN_QK, .type_size = 36,
			    .is_quantized = true, .vec_dot_type = KRN_TYPE_Q8_1,
			    .to_float = to_float_Q8_1 },
	KQUANT(Q2_K, "q2_K", 84),
	KQUANT(Q3_K, "q3_K", 110),
	KQUANT(Q4_K, "q4_K", 144),
	KQUANT(Q5_K, "q5_K", 176),
	KQUANT(Q6_K, "q6_K", 210),
	[KRN_TYPE_Q8_K] = { .name = "q8_K", .block_size = KRN_QK_K, .type_size = 292,
			    .is_quantized = true, .vec_dot_type = KRN_TYPE_Q8_K,
			    .to_float = to_float_Q8_K },
};

const struct krn_type_traits *krn_type_traits(uint32_t t)
{
	return t < KRN_TYPE_COUNT && traits[t].name ? &traits[t] : NULL;
}

static bool ref_supported(void)
{
	return true;
}

const struct krn_quant_ops krn_quant_ops_ref = {
	.name = "ref",
	.supported = ref_supported,
	.axpy_f16 = axpy_f16,
	.vec_dot = {
		[KRN_TYPE_F32] = vec_dot_F32, [KRN_TYPE_F16] = vec_dot_F16,
		[KRN_TYPE_BF16] = vec_dot_BF16, [KRN_TYPE_Q4_0] = vec_dot_Q4_0,
		[KRN_TYPE_Q4_1] = vec_dot_Q4_1, [KRN_TYPE_Q5_0] = vec_dot_Q5_0,
		[KRN_TYPE_Q5_1] = vec_dot_Q5_1, [KRN_TYPE_Q8_0] = vec_dot_Q8_0,
		[KRN_TYPE_Q2_K] = vec_dot_Q2_K, [KRN_TYPE_Q3_K] = vec_dot_Q3_K,
		[KRN_TYPE_Q4_K] = vec_dot_Q4_K, [KRN_TYPE_Q5_K] = vec_dot_Q5_K,
		[KRN_TYPE_Q6_K] = vec_dot_Q6_K,
	},
	.quantize_act = {
		[KRN_TYPE_F32] = krn_ref_from_float_F32, [KRN_TYPE_F16] = krn_ref_from_float_F16,
		[KRN_TYPE_BF16] = krn_ref_from_float_BF16, [KRN_TYPE_Q8_0] = krn_ref_act_q8_0,
		[KRN_TYPE_Q8_1] = krn_ref_act_q8_1, [KRN_TYPE_Q8_K] = krn_ref_act_q8_K,
	},
};
