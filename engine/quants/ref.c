/* engine/quants/ref.c: the type table and the scalar reference for every type.
 *
 * Dequantizers reproduce ggml's dequantize_row_* bit for bit (same products in the same
 * order; this file is built with -ffp-contract=off so no FMA changes a rounding). The weight
 * quantizers follow ggml-quants.c's quantize_row_*_ref, the activation quantizers follow
 * ggml-cpu's x86 quantize_row_q8_0/q8_1 (scale 127/amax, round half to even) and
 * quantize_row_q8_K_ref. The dot products sum each block's integer products exactly and
 * scale them in double: the yardstick every ISA table is tested against.
 */
#include <float.h>
#include <math.h>

#include "quants_impl.h"

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

/* The 16 6-bit scales of q3_K: low 4 bits in scales[0..7] (two per byte), high 2 bits in
 * scales[8..11]; ggml's kmask shuffle in dequantize_row_q3_K, written out. */
static int q3_K_scale(const uint8_t *sc, int j)
{
	int lo = j < 8 ? (sc[j] & 0x0f) : (sc[j - 8] >> 4);
	int hi = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
	return (lo | (hi << 4)) - 32;
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
		u->ds[g] = d * (float)q3_K_scale(b->scales, g);
		u->ms[g] = 0.0f;
	}
	u->group = 16;
}

/* ggml's get_scale_min_k4: 8 6-bit scales and mins packed in 12 bytes. */
static void scale_min_k4(int j, const uint8_t *q, int *sc, int *m)
{
	if (j < 4) {
		*sc = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
		*m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
	}
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
		scale_min_k4(g, b->scales, &sc, &m);
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
		scale_min_k4(g, b->scales, &sc, &m);
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

/* ---- Weight quantizers (ggml-quants.c's quantize_row_*_ref) ---------------------------- */

/* Round half to even for |x| < 2^22 by adding 1.5 * 2^23 (ggml's nearest_int). */
static inline int nearest_int(float x)
{
	float v = x + 12582912.f;
	int32_t i;
	memcpy(&i, &v, sizeof(i));
	return (i & 0x007fffff) - 0x00400000;
}

static inline int imin(int a, int b)
{
	return a < b ? a : b;
}

static inline int imax(int a, int b)
{
	return a > b ? a : b;
}

/* amax over n, and the signed value that has it (the first one, as ggml scans). */
static float signed_absmax(const float *x, int n, float *amax_out)
{
	float amax = 0.0f, max = 0.0f;
	for (int j = 0; j < n; j++) {
		if (amax < fabsf(x[j])) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	}
	*amax_out = amax;
	return max;
}

static void from_float_Q4_0(const float *x, void *vy, size_t n)
{
	block_q4_0 *y = vy;
	for (size_t i = 0; i < n / KRN_QK; i++, x += KRN_QK) {
		float amax, max = signed_absmax(x, KRN_QK, &amax);
		float d = max / -8, id = d != 0.0f ? 1.0f / d : 0.0f;
		y[i].d = krn_fp32_to_fp16(d);
		for (int j = 0; j < KRN_QK / 2; j++) {
			int q0 = imin(15, (int8_t)(x[j] * id + 8.5f));
			int q1 = imin(15, (int8_t)(x[j + 16] * id + 8.5f));
			y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
		}
	}
}

static void minmax(const float *x, int n, float *mn, float *mx)
{
	*mn = FLT_MAX;
	*mx = -FLT_MAX;
	for (int j = 0; j < n; j++) {
		if (x[j] < *mn)
			*mn = x[j];
		if (x[j] > *mx)
			*mx = x[j];
	}
}

static void from_float_Q4_1(const float *x, void *vy, size_t n)
{
	block_q4_1 *y = vy;
	for (size_t i = 0; i < n / KRN_QK; i++, x += KRN_QK) {
		float mn, mx;
		minmax(x, KRN_QK, &mn, &mx);
		float d = (mx - mn) / 15, id = d != 0.0f ? 1.0f / d : 0.0f;
		y[i].d = krn_fp32_to_fp16(d);
		y[i].m = krn_fp32_to_fp16(mn);
		for (int j = 0; j < KRN_QK / 2; j++) {
			int q0 = imin(15, (int8_t)((x[j] - mn) * id + 0.5f));
			int q1 = imin(15, (int8_t)((x[j + 16] - mn) * id + 0.5f));
			y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
		}
	}
}

static void pack_q5(const int *q, uint8_t *qs, uint8_t *qh4)
{
	uint32_t qh = 0;
	for (int j = 0; j < KRN_QK / 2; j++) {
		qs[j] = (uint8_t)((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
		qh |= (uint32_t)((q[j] >> 4) & 1) << j;
		qh |= (uint32_t)((q[j + 16] >> 4) & 1) << (j + 16);
	}
	memcpy(qh4, &qh, sizeof(qh));
}

static void from_float_Q5_0(const float *x, void *vy, size_t n)
{
	block_q5_0 *y = vy;
	for (size_t i = 0; i < n / KRN_QK; i++, x += KRN_QK) {
		float amax, max = signed_absmax(x, KRN_QK, &amax);
		float d = max / -16, id = d != 0.0f ? 1.0f / d : 0.0f;
		int q[KRN_QK];
		y[i].d = krn_fp32_to_fp16(d);
		for (int j = 0; j < KRN_QK; j++)
			q[j] = imin(31, (int8_t)(x[j] * id + 16.5f));
		pack_q5(q, y[i].qs, y[i].qh);
	}
}

static void from_float_Q5_1(const float *x, void *vy, size_t n)
{
	block_q5_1 *y = vy;
	for (size_t i = 0; i < n / KRN_QK; i++, x += KRN_QK) {
		float mn, mx;
		minmax(x, KRN_QK, &mn, &mx);
		float d = (mx - mn) / 31, id = d != 0.0f ? 1.0f / d : 0.0f;
		int q[KRN_QK];
		y[i].d = krn_fp32_to_fp16(d);
		y[i].m = krn_fp32_to_fp16(mn);
		for (int j = 0; j < KRN_QK; j++)
			q[j] = (uint8_t)((x[j] - mn) * id + 0.5f);
		pack_q5(q, y[i].qs, y[i].qh);
	}
}

static void from_float_Q8_0(const float *x, void *vy, size_t n)
{
	block_q8_0 *y = vy;
	for (size_t i = 0; i < n / KRN_QK; i++, x += KRN_QK) {
		float amax = 0.0f;
		for (int j = 0; j < KRN_QK; j++)
			amax = fmaxf(amax, fabsf(x[j]));
		float d = amax / 127, id = d != 0.0f ? 1.0f / d : 0.0f;
		y[i].d = krn_fp32_to_fp16(d);
		for (int j = 0; j < KRN_QK; j++)
			y[i].qs[j] = (int8_t)roundf(x[j] * id);
	}
}

/* Scale search for signed groups (ggml's make_qx_quants with rmse_type 1, no imatrix):
 * try 19 scales around nmax/max and keep the one with least weighted error. */
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L)
{
	float amax, max = signed_absmax(x, n, &amax);
	if (amax < 1e-15f) {
		memset(L, 0, (size_t)n);
		return 0.0f;
	}
	float iscale = -nmax / max, sumlx = 0, suml2 = 0;
	for (int i = 0; i < n; i++) {
		int l = imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i])));
		L[i] = (int8_t)(l + nmax);
		float w = x[i] * x[i];
		sumlx += w * x[i] * l;
		suml2 += w * l * l;
	}
	float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f, best = scale * sumlx;
	for (int is = -9; is <= 9; is++) {
		if (!is)
			continue;
		iscale = -(nmax + 0.1f * is) / max;
		sumlx = suml2 = 0;
		for (int i = 0; i < n; i++) {
			int l = imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i])));
			float w = x[i] * x[i];
			sumlx += w * x[i] * l;
			suml2 += w * l * l;
		}
		if (suml2 > 0 && sumlx * sumlx > best * suml2) {
			for (int i = 0; i < n; i++) {
				int l = nearest_int(iscale * x[i]);
				L[i] = (int8_t)(nmax + imax(-nmax, imin(nmax - 1, l)));
			}
			scale = sumlx / suml2;
			best = scale * sumlx;
		}
	}
	return scale;
}

/* ggml's make_q3_quants with do_rmse: coordinate descent on the levels, 5 rounds. */
static float make_q3_quants(int n, int nmax, const float *x, int8_t *L)
{
	float amax, max = signed_absmax(x, n, &amax);
	if (amax < 1e-15f) {
		memset(L, 0, (size_t)n);
		return 0.0f;
	}
	float iscale = -nmax / max, sumlx = 0, suml2 = 0;
	for (int i = 0; i < n; i++) {
		int l = imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i])));
		L[i] = (int8_t)l;
		float w = x[i] * x[i];
		sumlx += w * x[i] * l;
		suml2 += w * l * l;
	}
	for (int itry = 0; itry < 5; itry++) {
		int changed = 0;
		for (int i = 0; i < n; i++) {
			float w = x[i] * x[i], slx = sumlx - w * x[i] * L[i];
			if (slx > 0) {
				float sl2 = suml2 - w * L[i] * L[i];
				int nl = imax(-nmax, imin(nmax - 1, nearest_int(x[i] * sl2 / slx)));
				if (nl != L[i]) {
					slx += w * x[i] * nl;
					sl2 += w * nl * nl;
					if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
						L[i] = (int8_t)nl;
						sumlx = slx;
						suml2 = sl2;
						changed++;
					}
				}
			}
		}
		if (!changed)
			break;
	}
	for (int i = 0; i < n; i++)
		L[i] = (int8_t)(L[i] + nmax);
	return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Scale and min search for unsigned groups (ggml's make_qkx2_quants). */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
			      float *the_min, float rmin, float rdelta, int nstep, bool use_mad)
{
	uint8_t Laux[32];
	float mn = x[0], mx = x[0], sum_w = weights[0], sum_x = sum_w * x[0];
	for (int i = 1; i < n; i++) {
		if (x[i] < mn)
			mn = x[i];
		if (x[i] > mx)
			mx = x[i];
		float w = weights[i];
		sum_w += w;
		sum_x += w * x[i];
	}
	if (mn > 0)
		mn = 0;
	if (mx == mn) {
		memset(L, 0, (size_t)n);
		*the_min = -mn;
		return 0.0f;
	}
	float iscale = nmax / (mx - mn), scale = 1 / iscale, best_error = 0;
	for (int i = 0; i < n; i++) {
		int l = nearest_int(iscale * (x[i] - mn));
		L[i] = (uint8_t)imax(0, imin(nmax, l));
		float diff = scale * L[i] + mn - x[i];
		diff = use_mad ? fabsf(diff) : diff * diff;
		best_error += weights[i] * diff;
	}
	for (int is = 0; is <= nstep; is++) {
		iscale = (rmin + rdelta * is + nmax) / (mx - mn);
		float sum_l = 0, sum_l2 = 0, sum_xl = 0;
		for (int i = 0; i < n; i++) {
			int l = imax(0, imin(nmax, nearest_int(iscale * (x[i] - mn))));
			Laux[i] = (uint8_t)l;
			float w = weights[i];
			sum_l += w * l;
			sum_l2 += w * l * l;
			sum_xl += w * l * x[i];
		}
		float D = sum_w * sum_l2 - sum_l * sum_l;
		if (D > 0) {
			float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
			float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
			if (this_min > 0) {
				this_min = 0;
				this_scale = sum_xl / sum_l2;
			}
			float cur_error = 0;
			for (int i = 0; i < n; i++) {
				float diff = this_scale * Laux[i] + this_min - x[i];
				diff = use_mad ? fabsf(diff) : diff * diff;
				cur_error += weights[i] * diff;
			}
			if (cur_error < best_error) {
				memcpy(L, Laux, (size_t)n);
				best_error = cur_error;
				scale = this_scale;
				mn = this_min;
			}
		}
	}
	*the_min = -mn;
	return scale;
}

static void from_float_Q2_K(const float *x, void *vy, size_t n)
{
	block_q2_K *y = vy;
	const float q4scale = 15.f;
	for (size_t i = 0; i < n / KRN_QK_K; i++, x += KRN_QK_K) {
		uint8_t L[KRN_QK_K];
		float weights[16], mins[16], scales[16], max_scale = 0, max_min = 0;
		for (int j = 0; j < 16; j++) {
			for (int l = 0; l < 16; l++)
				weights[l] = fabsf(x[16 * j + l]);
			scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j],
						     -0.5f, 0.1f, 15, true);
			if (scales[j] > max_scale)
				max_scale = scales[j];
			if (mins[j] > max_min)
				max_min = mins[j];
		}
		if (max_scale > 0) {
			float iscale = q4scale / max_scale;
			for (int j = 0; j < 16; j++)
				y[i].scales[j] = (uint8_t)nearest_int(iscale * scales[j]);
			y[i].d = krn_fp32_to_fp16(max_scale / q4scale);
		} else {
			memset(y[i].scales, 0, sizeof(y[i].scales));
			y[i].d = krn_fp32_to_fp16(0.f);
		}
		if (max_min > 0) {
			float iscale = q4scale / max_min;
			for (int j = 0; j < 16; j++)
				y[i].scales[j] |= (uint8_t)(nearest_int(iscale * mins[j]) << 4);
			y[i].dmin = krn_fp32_to_fp16(max_min / q4scale);
		} else {
			y[i].dmin = krn_fp32_to_fp16(0.f);
		}
		for (int j = 0; j < 16; j++) {
			float d = krn_fp16_to_fp32(y[i].d) * (float)(y[i].scales[j] & 0x0f);
			if (d == 0.0f)
				continue;
			float dm = krn_fp16_to_fp32(y[i].dmin) * (float)(y[i].scales[j] >> 4);
			for (int ii = 0; ii < 16; ii++) {
				int l = nearest_int((x[16 * j + ii] + dm) / d);
				L[16 * j + ii] = (uint8_t)imax(0, imin(3, l));
			}
		}
		for (int j = 0; j < KRN_QK_K; j += 128)
			for (int l = 0; l < 32; l++)
				y[i].qs[j / 4 + l] =
					(uint8_t)(L[j + l] | (L[j + l + 32] << 2) |
						  (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
	}
}

static void from_float_Q3_K(const float *x, void *vy, size_t n)
{
	block_q3_K *y = vy;
	for (size_t i = 0; i < n / KRN_QK_K; i++, x += KRN_QK_K) {
		int8_t L[KRN_QK_K];
		float scales[16], max_scale = 0, amax = 0;
		for (int j = 0; j < 16; j++) {
			scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
			if (fabsf(scales[j]) > amax) {
				amax = fabsf(scales[j]);
				max_scale = scales[j];
			}
		}
		memset(y[i].scales, 0, sizeof(y[i].scales));
		if (max_scale != 0.0f) {
			float iscale = -32.f / max_scale;
			for (int j = 0; j < 16; j++) {
				int l = imax(-32, imin(31, (int8_t)nearest_int(iscale * scales[j]))) + 32;
				if (j < 8)
					y[i].scales[j] = (uint8_t)(l & 0x0f);
				else
					y[i].scales[j - 8] |= (uint8_t)((l & 0x0f) << 4);
				y[i].scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
			}
			y[i].d = krn_fp32_to_fp16(1 / iscale);
		} else {
			y[i].d = krn_fp32_to_fp16(0.f);
		}
		for (int j = 0; j < 16; j++) {
			float d = krn_fp16_to_fp32(y[i].d) * (float)q3_K_scale(y[i].scales, j);
			if (d == 0.0f)
				continue;
			for (int ii = 0; ii < 16; ii++) {
				int l = nearest_int(x[16 * j + ii] / d);
				L[16 * j + ii] = (int8_t)(imax(-4, imin(3, l)) + 4);
			}
		}
		/* High bit of element j goes to hmask[j % 32], bit j / 32. */
		memset(y[i].hmask, 0, sizeof(y[i].hmask));
		for (int j = 0; j < KRN_QK_K; j++) {
			if (L[j] > 3) {
				y[i].hmask[j % 32] |= (uint8_t)(1u << (j / 32));
				L[j] = (int8_t)(L[j] - 4);
			}
		}
		for (int j = 0; j < KRN_QK_K; j += 128)
			for (int l = 0; l < 32; l++)
				y[i].qs[j / 4 + l] =
					(uint8_t)(L[j + l] | (L[j + l + 32] << 2) |
						  (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
	}
}

/* Shared by q4_K and q5_K: 8 groups of 32 with 6-bit scales and mins. */
static void quantize_k4_groups(const float *x, int nmax, float rmin, int nstep, uint8_t *L,
			       uint16_t *d_out, uint16_t *dmin_out, uint8_t *scales_out)
{
	float weights[32], mins[8], scales[8], max_scale = 0, max_min = 0;
	for (int j = 0; j < 8; j++) {
		float sum_x2 = 0;
		for (int l = 0; l < 32; l++)
			sum_x2 += x[32 * j + l] * x[32 * j + l];
		float av_x = sqrtf(sum_x2 / 32);
		for (int l = 0; l < 32; l++)
			weights[l] = av_x + fabsf(x[32 * j + l]);
		scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j],
					     rmin, 0.1f, nstep, false);
		if (scales[j] > max_scale)
			max_scale = scales[j];
		if (mins[j] > max_min)
			max_min = mins[j];
	}
	float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
	float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
	for (int j = 0; j < 8; j++) {
		uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]);
		uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);
		ls = (uint8_t)imin(63, ls);
		lm = (uint8_t)imin(63, lm);
		if (j < 4) {
			scales_out[j] = ls;
			scales_out[j + 4] = lm;
		} else {
			scales_out[j + 4] = (uint8_t)((ls & 0x0f) | ((lm & 0x0f) << 4));
			scales_out[j - 4] |= (uint8_t)((ls >> 4) << 6);
			scales_out[j] |= (uint8_t)((lm >> 4) << 6);
		}
	}
	*d_out = krn_fp32_to_fp16(max_scale / 63.f);
	*dmin_out = krn_fp32_to_fp16(max_min / 63.f);
	for (int j = 0; j < 8; j++) {
		int sc, m;
		scale_min_k4(j, scales_out, &sc, &m);
		float d = krn_fp16_to_fp32(*d_out) * (float)sc;
		if (d == 0.0f)
			continue;
		float dm = krn_fp16_to_fp32(*dmin_out) * (float)m;
		for (int ii = 0; ii < 32; ii++) {
			int l = nearest_int((x[32 * j + ii] + dm) / d);
			L[32 * j + ii] = (uint8_t)imax(0, imin(nmax, l));
		}
	}
}

static void from_float_Q4_K(const float *x, void *vy, size_t n)
{
	block_q4_K *y = vy;
	for (size_t i = 0; i < n / KRN_QK_K; i++, x += KRN_QK_K) {
		uint8_t L[KRN_QK_K];
		quantize_k4_groups(x, 15, -1.f, 20, L, &y[i].d, &y[i].dmin, y[i].scales);
		for (int j = 0; j < KRN_QK_K; j += 64)
			for (int l = 0; l < 32; l++)
				y[i].qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
	}
}

static void from_float_Q5_K(const float *x, void *vy, size_t n)
{
	block_q5_K *y = vy;
	for (size_t i = 0; i < n / KRN_QK_K; i++, x += KRN_QK_K) {
		uint8_t L[KRN_QK_K];
		quantize_k4_groups(x, 31, -0.5f, 15, L, &y[i].d, &y[i].dmin, y[i].scales);
		memset(y[i].qh, 0, sizeof(y[i].qh));
		for (int c = 0; c < 4; c++) {
			for (int l = 0; l < 32; l++) {
				int l1 = L[64 * c + l], l2 = L[64 * c + l + 32];
				if (l1 > 15) {
					l1 -= 16;
					y[i].qh[l] |= (uint8_t)(1u << (2 * c));
				}
				if (l2 > 15) {
					l2 -= 16;
					y[i].qh[l] |= (uint8_t)(2u << (2 * c));
				}
				y[i].qs[32 * c + l] = (uint8_t)(l1 | (l2 << 4));
			}
		}
	}
}

static void from_float_Q6_K(const float *x, void *vy, size_t n)
{
	block_q6_K *y = vy;
	for (size_t i = 0; i < n / KRN_QK_K; i++, x += KRN_QK_K) {
		int8_t L[KRN_QK_K];
		float scales[16], max_scale = 0, max_abs_scale = 0;
		for (int ib = 0; ib < 16; ib++) {
			scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
			if (fabsf(scales[ib]) > max_abs_scale) {
				max_abs_scale = fabsf(scales[ib]);
				max_scale = scales[ib];
			}
		}
		if (max_abs_scale < 1e-15f) {
			memset(&y[i], 0, sizeof(y[i]));
			continue;
		}
		float iscale = -128.f / max_scale;
		y[i].d = krn_fp32_to_fp16(1 / iscale);
		for (int ib = 0; ib < 16; ib++)
			y[i].scales[ib] = (int8_t)imin(127, nearest_int(iscale * scales[ib]));
		for (int j = 0; j < 16; j++) {
			float d = krn_fp16_to_fp32(y[i].d) * (float)y[i].scales[j];
			if (d == 0.0f)
				continue;
			for (int ii = 0; ii < 16; ii++) {
				int l = nearest_int(x[16 * j + ii] / d);
				L[16 * j + ii] = (int8_t)(imax(-32, imin(31, l)) + 32);
			}
		}
		for (int h = 0; h < 2; h++) {
			const int8_t *Lh = L + 128 * h;
			uint8_t *ql = y[i].ql + 64 * h, *qh = y[i].qh + 32 * h;
			for (int l = 0; l < 32; l++) {
				ql[l] = (uint8_t)((Lh[l] & 0x0f) | ((Lh[l + 64] & 0x0f) << 4));
				ql[l + 32] = (uint8_t)((Lh[l + 32] & 0x0f) | ((Lh[l + 96] & 0x0f) << 4));
				qh[l] = (uint8_t)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
						  ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
			}
		}
	}
}

static void from_float_F32(const float *x, void *y, size_t n)
{
	memcpy(y, x, n * sizeof(float));
}

static void from_float_F16(const float *x, void *vy, size_t n)
{
	uint16_t *y = vy;
	for (size_t i = 0; i < n; i++)
		y[i] = krn_fp32_to_fp16(x[i]);
}

static void from_float_BF16(const float *x, void *vy, size_t n)
{
	uint16_t *y = vy;
	for (size_t i = 0; i < n; i++)
		y[i] = krn_fp32_to_bf16(x[i]);
}

/* ---- Activation quantizers: ggml-cpu's x86 quantize_row_q8_0 / q8_1, q8_K_ref ---------- */

static float block_absmax(const float *x, int n)
{
	float amax = 0.0f;
	for (int j = 0; j < n; j++)
		amax = fmaxf(amax, fabsf(x[j]));
	return amax;
}

/* Differs from the weight quantizer on purpose: x86 ggml multiplies by 127/amax (not by
 * 1/(amax/127)) and rounds half to even (not away from zero). */
void krn_ref_act_q8_0(const float *x, void *vy, size_t n)
{
	block_q8_0 *y = vy;
	for (size_t i = 0; i < n / KRN_QK; i++, x += KRN_QK) {
		float amax = block_absmax(x, KRN_QK);
		float id = amax != 0.0f ? 127.f / amax : 0.0f;
		y[i].d = krn_fp32_to_fp16(amax / 127.f);
		for (int j = 0; j < KRN_QK; j++)
			y[i].qs[j] = (int8_t)nearbyintf(x[j] * id);
	}
}

void krn_ref_act_q8_1(const float *x, void *vy, size_t n)
{
	block_q8_1 *y = vy;
	for (size_t i = 0; i < n / KRN_QK; i++, x += KRN_QK) {
		float amax = block_absmax(x, KRN_QK), d = amax / 127.f;
		float id = amax != 0.0f ? 127.f / amax : 0.0f;
		int sum = 0;
		y[i].d = krn_fp32_to_fp16(d);
		for (int j = 0; j < KRN_QK; j++) {
			y[i].qs[j] = (int8_t)nearbyintf(x[j] * id);
			sum += y[i].qs[j];
		}
		y[i].s = krn_fp32_to_fp16(d * (float)sum);
	}
}

void krn_ref_act_q8_K(const float *x, void *vy, size_t n)
{
	block_q8_K *y = vy;
	for (size_t i = 0; i < n / KRN_QK_K; i++, x += KRN_QK_K) {
		float amax, max = signed_absmax(x, KRN_QK_K, &amax);
		memset(&y[i], 0, sizeof(y[i]));
		if (amax == 0.0f)
			continue;
		float iscale = -127.f / max;
		for (int j = 0; j < KRN_QK_K; j++)
			y[i].qs[j] = (int8_t)imin(127, nearest_int(iscale * x[j]));
		for (int j = 0; j < 16; j++) {
			int sum = 0;
			for (int l = 0; l < 16; l++)
				sum += y[i].qs[16 * j + l];
			y[i].bsums[j] = (int16_t)sum;
		}
		y[i].d = 1 / iscale;
	}
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
			   .to_float = to_float_##T, .from_float_ref = from_float_##T }
#define KQUANT(T, nm, sz)                                                                      \
	[KRN_TYPE_##T] = { .name = nm, .block_size = KRN_QK_K, .type_size = sz,                \
			   .is_quantized = true, .vec_dot_type = KRN_TYPE_Q8_K,                \
			   .to_float = to_float_##T, .from_float_ref = from_float_##T }

static const struct krn_type_traits traits[KRN_TYPE_COUNT] = {
	[KRN_TYPE_F32] = { .name = "f32", .block_size = 1, .type_size = 4,
			   .vec_dot_type = KRN_TYPE_F32, .to_float = to_float_F32,
			   .from_float_ref = from_float_F32 },
	[KRN_TYPE_F16] = { .name = "f16", .block_size = 1, .type_size = 2,
			   .vec_dot_type = KRN_TYPE_F16, .to_float = to_float_F16,
			   .from_float_ref = from_float_F16 },
	[KRN_TYPE_BF16] = { .name = "bf16", .block_size = 1, .type_size = 2,
			    .vec_dot_type = KRN_TYPE_BF16, .to_float = to_float_BF16,
			    .from_float_ref = from_float_BF16 },
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
		[KRN_TYPE_F32] = from_float_F32, [KRN_TYPE_F16] = from_float_F16,
		[KRN_TYPE_BF16] = from_float_BF16, [KRN_TYPE_Q8_0] = krn_ref_act_q8_0,
		[KRN_TYPE_Q8_1] = krn_ref_act_q8_1, [KRN_TYPE_Q8_K] = krn_ref_act_q8_K,
	},
};
