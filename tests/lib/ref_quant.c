/* tests/lib/ref_quant.c: ggml's tensor types by their block layouts, for the reference forward
 * pass (ref_forward.h). Written from the layouts' definitions (ggml's ggml-common.h block
 * structs and the dequantization rules of ggml-quants.c, as documented), not from memwall's
 * engine/quants: a block is read field by field into doubles.
 *
 *   q4_0 (32 values, 18 bytes): f16 d; 16 bytes of nibbles, value j < 16 in byte j's low
 *        nibble, value j + 16 in its high nibble; x = (nibble - 8) d.
 *   q5_0 (32, 22): f16 d; uint32 qh (little-endian), bit j the fifth bit of value j; 16 bytes
 *        of nibbles as q4_0; x = (nibble | bit << 4) - 16) d.
 *   q8_0 (32, 34): f16 d; 32 int8 q; x = q d.
 *   q4_K (256, 144): f16 d, f16 dmin; 12 bytes holding eight 6-bit scales and eight 6-bit
 *        mins; 128 bytes of nibbles. Eight sub-blocks of 32: in each 64 values, sub-block 2c
 *        takes the low nibbles of bytes 32c .. 32c + 31, sub-block 2c + 1 their high nibbles;
 *        x = d sc q - dmin m. Scale/min j < 4: sc = s[j] & 63, m = s[j + 4] & 63; j >= 4:
 *        sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4, m = (s[j + 4] >> 4) | (s[j] >> 6) << 4.
 *   q5_K (256, 176): as q4_K, then 32 bytes qh before the nibbles: value l of sub-block 2c
 *        takes bit 2c of qh[l] as its fifth bit, of sub-block 2c + 1 bit 2c + 1.
 *   q6_K (256, 210): 128 bytes ql (low nibbles), 64 bytes qh (2-bit pairs), 16 int8 scales,
 *        f16 d. Two halves of 128 values, half n reading ql + 64n, qh + 32n, scales + 8n; for
 *        l < 32: values l, l + 32, l + 64, l + 96 take ql[l] & 15, ql[l + 32] & 15,
 *        ql[l] >> 4, ql[l + 32] >> 4 with qh[l]'s bits 0-1, 2-3, 4-5, 6-7 above them, minus 32,
 *        times d and scale l / 16, + 2, + 4, + 6.
 *   f16, bf16, f32: one value per element.
 *
 * And the activation rounding: ggml's CPU mul_mat converts a matrix's input to its weight
 * type's vec_dot_type before the dot products. q8_0 (blocks of 32): d = amax / 127 stored as
 * f16, q = round(x / d); q8_K (blocks of 256): d = amax / 127 as float, q = round(x / d),
 * at most 127 in magnitude; f16: each value rounded to nearest half.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ref_impl.h"

double ref_half(uint16_t h)
{
	int e = (h >> 10) & 31, f = h & 1023;
	double v = e == 0 ? ldexp(f, -24) : e == 31 ? (f ? NAN : INFINITY) : ldexp(1024 + f, e - 25);
	return h >> 15 ? -v : v;
}

static double half_at(const uint8_t *p)
{
	return ref_half((uint16_t)(p[0] | p[1] << 8));
}

static void put(double *w, float *mag, int i, double v, double m)
{
	w[i] = v;
	mag[i] = (float)m;
}

static void deq_q4_0(const uint8_t *b, double *w, float *mag)
{
	double d = half_at(b);
	for (int j = 0; j < 16; j++) {
		double lo = ((b[2 + j] & 15) - 8) * d, hi = ((b[2 + j] >> 4) - 8) * d;
		put(w, mag, j, lo, fabs(lo));
		put(w, mag, j + 16, hi, fabs(hi));
	}
}

static void deq_q5_0(const uint8_t *b, double *w, float *mag)
{
	double d = half_at(b);
	uint32_t qh = (uint32_t)b[2] | (uint32_t)b[3] << 8 | (uint32_t)b[4] << 16 |
		      (uint32_t)b[5] << 24;
	for (int j = 0; j < 16; j++) {
		int lo = (b[6 + j] & 15) | (int)((qh >> j) & 1) << 4;
		int hi = (b[6 + j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
		put(w, mag, j, (lo - 16) * d, fabs((lo - 16) * d));
		put(w, mag, j + 16, (hi - 16) * d, fabs((hi - 16) * d));
	}
}

static void deq_q8_0(const uint8_t *b, double *w, float *mag)
{
	double d = half_at(b);
	for (int j = 0; j < 32; j++) {
		double v = (int8_t)b[2 + j] * d;
		put(w, mag, j, v, fabs(v));
	}
}

/* q4_K's and q5_K's packed 6-bit scale and min of sub-block j. */
static void scale_min(const uint8_t *s, int j, int *sc, int *m)
{
	if (j < 4) {
		*sc = s[j] & 63;
		*m = s[j + 4] & 63;
	} else {
		*sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
		*m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
	}
}

/* q4_K (qh NULL) and q5_K. */
static void deq_k45(const uint8_t *b, const uint8_t *qh, const uint8_t *qs, double *w, float *mag)
{
	double d = half_at(b), dmin = half_at(b + 2);
	for (int c = 0; c < 4; c++)
		for (int half = 0; half < 2; half++) {
			int sub = 2 * c + half, sc, m;
			scale_min(b + 4, sub, &sc, &m);
			for (int l = 0; l < 32; l++) {
				int q = half ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15;
				if (qh)
					q |= ((qh[l] >> sub) & 1) << 4;
				double a = d * sc * q, b_ = dmin * m;
				put(w, mag, 32 * sub + l, a - b_, fabs(a) + fabs(b_));
			}
		}
}

static void deq_q4_K(const uint8_t *b, double *w, float *mag)
{
	deq_k45(b, NULL, b + 16, w, mag);
}

static void deq_q5_K(const uint8_t *b, double *w, float *mag)
{
	deq_k45(b, b + 16, b + 48, w, mag);
}

static void deq_q6_K(const uint8_t *b, double *w, float *mag)
{
	double d = half_at(b + 208);
	for (int n = 0; n < 2; n++) {
		const uint8_t *ql = b + 64 * n, *qh = b + 128 + 32 * n;
		const int8_t *sc = (const int8_t *)(b + 192 + 8 * n);
		for (int l = 0; l < 32; l++) {
			int q[4] = { ql[l] & 15, ql[l + 32] & 15, ql[l] >> 4, ql[l + 32] >> 4 };
			for (int k = 0; k < 4; k++) {
				int v = (q[k] | ((qh[l] >> (2 * k)) & 3) << 4) - 32;
				double x = d * sc[l / 16 + 2 * k] * v;
				put(w, mag, 128 * n + 32 * k + l, x, fabs(x));
			}
		}
	}
}

static void deq_f16(const uint8_t *b, double *w, float *mag)
{
	double v = half_at(b);
	put(w, mag, 0, v, fabs(v));
}

static void deq_bf16(const uint8_t *b, double *w, float *mag)
{
	uint32_t bits = (uint32_t)(b[0] | b[1] << 8) << 16;
	float f;
	memcpy(&f, &bits, sizeof(f));
	put(w, mag, 0, f, fabs(f));
}

static void deq_f32(const uint8_t *b, double *w, float *mag)
{
	float f;
	memcpy(&f, b, sizeof(f));
	put(w, mag, 0, f, fabs(f));
}

struct layout {
	uint32_t type;
	const char *name;
	int elems, bytes;
	void (*deq)(const uint8_t *b, double *w, float *mag);
	uint32_t act; /* ggml's vec_dot_type */
};

static const struct layout layouts[] = {
	{ REF_F32, "f32", 1, 4, deq_f32, REF_F32 },
	{ REF_F16, "f16", 1, 2, deq_f16, REF_F16 },
	{ REF_BF16, "bf16", 1, 2, deq_bf16, REF_BF16 },
	{ REF_Q4_0, "q4_0", 32, 18, deq_q4_0, REF_Q8_0 },
	{ REF_Q5_0, "q5_0", 32, 22, deq_q5_0, REF_Q8_0 },
	{ REF_Q8_0, "q8_0", 32, 34, deq_q8_0, REF_Q8_0 },
	{ REF_Q4_K, "q4_K", 256, 144, deq_q4_K, REF_Q8_K },
	{ REF_Q5_K, "q5_K", 256, 176, deq_q5_K, REF_Q8_K },
	{ REF_Q6_K, "q6_K", 256, 210, deq_q6_K, REF_Q8_K },
};

static const struct layout *find(uint32_t t)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].type == t)
			return &layouts[i];
	return NULL;
}

int ref_type_block(uint32_t t, int *elems, int *bytes)
{
	const struct layout *l = find(t);
	*elems = l ? l->elems : 0;
	*bytes = l ? l->bytes : 0;
	return l ? 1 : 0;
}

const char *ref_type_name(uint32_t t)
{
	const struct layout *l = find(t);
	return l ? l->name : "unknown";
}

void ref_dequant(uint32_t t, const uint8_t *src, int n, double *w, float *mag)
{
	const struct layout *l = find(t);
	for (int i = 0; l && i < n; i += l->elems, src += l->bytes)
		l->deq(src, w + i, mag + i);
}

uint32_t ref_act_type(uint32_t t)
{
	const struct layout *l = find(t);
	return l ? l->act : REF_F32;
}

/* The activation rounding, as variances (ref_forward.c models each rounding as a uniform error
 * independent of the others: a rounding of step h has variance h^2 / 12). A block's absolute
 * maximum A gives its scale d = A / 127:
 *   q8_0: q = round(x / d), d then stored as f16: each value's own rounding, d^2 / 12, and the
 *         block's common relative error from d's f16 rounding (step 2^-10 relative at most:
 *         variance (2^-11)^2 / 3 of the block's share of a dot product);
 *   q8_K: the same with d kept as a float (relative steps of 2u);
 *   f16:  round to nearest half, a step of at most 2^-10 |x| (2^-24 among the subnormals);
 *   bf16: a step of at most 2^-7 |x|. */
void ref_act_var(uint32_t t, const double *x, int n, double *var, double *block_rel_var,
		 int *block)
{
	*block = t == REF_Q8_0 ? 32 : t == REF_Q8_K ? 256 : 1;
	*block_rel_var = t == REF_Q8_0 ? REF_U16 * REF_U16 / 3
			 : t == REF_Q8_K ? 4 * REF_U32 * REF_U32 / 3 : 0;
	for (int b = 0; b < n; b += *block) {
		double A = 0;
		for (int i = b; i < b + *block && i < n; i++)
			A = fmax(A, fabs(x[i]));
		double d = A / 127;
		for (int i = b; i < b + *block && i < n; i++) {
			double h = t == REF_Q8_0 || t == REF_Q8_K ? d
				   : t == REF_F16		  ? 2 * REF_U16 * fabs(x[i]) + 2 * REF_SUB16
				   : t == REF_BF16		  ? 0x1p-7 * fabs(x[i]) : 0;
			var[i] = h * h / 12;
		}
	}
}
