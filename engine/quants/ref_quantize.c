/* engine/quants/ref_quantize.c: the scalar quantizers: weights (ggml-quants.c's
 * quantize_row_*_ref, for the synthetic writers and the tests) and activations (ggml-cpu's x86
 * quantize_row_q8_0/q8_1, scale 127/amax, round half to even, and quantize_row_q8_K_ref).
 * Built with ref.c's -ffp-contract=off, so that every rounding is ggml's. ref.c's type table
 * names them.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "minmax.h"
#include "internal.h"

/* ---- Weight quantizers (ggml-quants.c's quantize_row_*_ref) ---------------------------- */

/* Round half to even for |x| < 2^22 by adding 1.5 * 2^23 (ggml's nearest_int). */
static inline int nearest_int(float x)
{
	float v = x + 12582912.f;
	int32_t i;
	memcpy(&i, &v, sizeof(i));
	return (i & 0x007fffff) - 0x00400000;
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

void krn_ref_from_float_Q4_0(const float *x, void *vy, size_t n)
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

void krn_ref_from_float_Q4_1(const float *x, void *vy, size_t n)
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

void krn_ref_from_float_Q5_0(const float *x, void *vy, size_t n)
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

void krn_ref_from_float_Q5_1(const float *x, void *vy, size_t n)
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

void krn_ref_from_float_Q8_0(const float *x, void *vy, size_t n)
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

void krn_ref_from_float_Q2_K(const float *x, void *vy, size_t n)
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

void krn_ref_from_float_Q3_K(const float *x, void *vy, size_t n)
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
			float d = krn_fp16_to_fp32(y[i].d) * (float)krn_q3_K_scale(y[i].scales, j);
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
		krn_scale_min_k4(j, scales_out, &sc, &m);
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

void krn_ref_from_float_Q4_K(const float *x, void *vy, size_t n)
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

void krn_ref_from_float_Q5_K(const float *x, void *vy, size_t n)
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

void krn_ref_from_float_Q6_K(const float *x, void *vy, size_t n)
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

void krn_ref_from_float_F32(const float *x, void *y, size_t n)
{
	memcpy(y, x, n * sizeof(float));
}

void krn_ref_from_float_F16(const float *x, void *vy, size_t n)
{
	uint16_t *y = vy;
	for (size_t i = 0; i < n; i++)
		y[i] = krn_fp32_to_fp16(x[i]);
}

void krn_ref_from_float_BF16(const float *x, void *vy, size_t n)
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
