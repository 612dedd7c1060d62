/* tests/engine/test_quants.c: ggml's quant formats and every ISA's kernels.
 *
 * 1. Hand-built blocks: a block assembled byte by byte with known scales and quants must
 *    dequantize to values worked out here by hand.
 * 2. Every ISA table against ref on random blocks (raw random bytes, so 6-bit scales and high
 *    bits that a quantizer rarely emits are covered), and every ISA's activation quantizer
 *    byte-identical to ref's. This part needs nothing outside the tree and runs on any host
 *    (the NEON table under qemu too).
 * 3. ggml's own vectors (../shared/fixtures/gguf/kernels, when present): dequantization
 *    bit-exact, weight and activation quantization byte-exact, every ISA's vec_dot against
 *    ggml's.
 */
/* tests/engine/neon-qemu.sh-style cross builds have no jansson for the target: -DT_NO_JANSSON
 * leaves part 3 out and keeps 1 and 2. */
#ifndef T_NO_JANSSON
#include <jansson.h>
#endif

#include "test.h"
#include "quants/quants.h"

/* ---- 1. Hand-built blocks ----------------------------------------------------------------- */

static void dequant(uint32_t t, const void *blk, float *y, size_t n)
{
	krn_type_traits(t)->to_float(blk, y, n);
}

static void check_hand_q4_0(void)
{
	block_q4_0 b;
	float y[32];
	b.d = 0x3800; /* 0.5 */
	for (int j = 0; j < 16; j++)
		b.qs[j] = (uint8_t)(j | ((15 - j) << 4));
	dequant(KRN_TYPE_Q4_0, &b, y, 32);
	for (int j = 0; j < 16; j++) {
		T_NEAR(y[j], (j - 8) * 0.5, 0);
		T_NEAR(y[j + 16], (7 - j) * 0.5, 0);
	}
}

static void check_hand_q4_1(void)
{
	block_q4_1 b;
	float y[32];
	b.d = 0x3400; /* 0.25 */
	b.m = 0xbc00; /* -1.0 */
	for (int j = 0; j < 16; j++)
		b.qs[j] = (uint8_t)(j | (3 << 4));
	dequant(KRN_TYPE_Q4_1, &b, y, 32);
	for (int j = 0; j < 16; j++) {
		T_NEAR(y[j], j * 0.25 - 1.0, 0);
		T_NEAR(y[j + 16], 3 * 0.25 - 1.0, 0);
	}
}

static void check_hand_q5(void)
{
	/* qh = 0x0000ffff: the fifth bit is set for elements 0..15 only. */
	block_q5_0 b0;
	block_q5_1 b1;
	float y[32];
	b0.d = 0x3c00; /* 1.0 */
	memcpy(b0.qh, "\xff\xff\x00\x00", 4);
	for (int j = 0; j < 16; j++)
		b0.qs[j] = (uint8_t)(j | (3 << 4));
	dequant(KRN_TYPE_Q5_0, &b0, y, 32);
	for (int j = 0; j < 16; j++) {
		T_NEAR(y[j], (16 + j) - 16, 0);
		T_NEAR(y[j + 16], 3 - 16, 0);
	}
	b1.d = 0x4000; /* 2.0 */
	b1.m = 0x3c00; /* 1.0 */
	memcpy(b1.qh, "\x00\x00\x01\x80", 4); /* elements 16 and 31 */
	for (int j = 0; j < 16; j++)
		b1.qs[j] = (uint8_t)(1 | (j << 4));
	dequant(KRN_TYPE_Q5_1, &b1, y, 32);
	for (int j = 0; j < 16; j++) {
		T_NEAR(y[j], 2.0 * 1 + 1, 0);
		int q = j + ((j == 0 || j == 15) ? 16 : 0);
		T_NEAR(y[j + 16], 2.0 * q + 1, 0);
	}
}

static void check_hand_q8_0(void)
{
	block_q8_0 b;
	float y[32];
	b.d = 0x3000; /* 0.125 */
	for (int j = 0; j < 32; j++)
		b.qs[j] = (int8_t)(j - 16);
	dequant(KRN_TYPE_Q8_0, &b, y, 32);
	for (int j = 0; j < 32; j++)
		T_NEAR(y[j], (j - 16) * 0.125, 0);
}

static void check_hand_q2_K(void)
{
	/* Every qs byte 0b11100100: the four 2-bit fields hold 0, 1, 2, 3, so element i has
	 * q = (i % 128) / 32. Group g (16 elements) has scale g and min 1. */
	block_q2_K b;
	float y[256];
	b.d = 0x3c00;    /* 1.0 */
	b.dmin = 0x3800; /* 0.5 */
	for (int g = 0; g < 16; g++)
		b.scales[g] = (uint8_t)(g | (1 << 4));
	memset(b.qs, 0xe4, sizeof(b.qs));
	dequant(KRN_TYPE_Q2_K, &b, y, 256);
	for (int i = 0; i < 256; i++)
		T_NEAR(y[i], (i / 16) * ((i % 128) / 32) - 0.5, 0);
}

static void check_hand_q3_K(void)
{
	/* All 16 scales 33 (stored 6-bit, minus 32 gives 1): low nibbles 1, high bits 2. */
	block_q3_K b;
	float y[256];
	b.d = 0x4000; /* 2.0 */
	memset(b.scales, 0x11, 8);
	memset(b.scales + 8, 0xaa, 4);
	memset(b.qs, 0xe4, sizeof(b.qs));
	memset(b.hmask, 0xff, sizeof(b.hmask)); /* high bit set: no -4 */
	dequant(KRN_TYPE_Q3_K, &b, y, 256);
	for (int i = 0; i < 256; i++)
		T_NEAR(y[i], 2.0 * ((i % 128) / 32), 0);
	/* Clear the high bit of element 37 only: hmask[37 % 32] bit 37 / 32. */
	b.hmask[5] = (uint8_t)~2u;
	dequant(KRN_TYPE_Q3_K, &b, y, 256);
	T_NEAR(y[37], 2.0 * (1 - 4), 0);
	T_NEAR(y[5], 2.0 * 0, 0);
}

/* Packs 8 6-bit scales and mins as q4_K/q5_K store them. */
static void pack_k4(const int *sc, const int *m, uint8_t *out)
{
	for (int j = 0; j < 4; j++) {
		out[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
		out[j + 4] = (uint8_t)((m[j] & 63) | ((m[j + 4] >> 4) << 6));
		out[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
	}
}

static void check_hand_q4_K_q5_K(void)
{
	int sc[8] = { 1, 2, 3, 4, 17, 33, 63, 40 }, m[8] = { 0, 5, 10, 63, 16, 32, 1, 2 };
	block_q4_K b4;
	block_q5_K b5;
	float y[256];
	b4.d = 0x3800;    /* 0.5 */
	b4.dmin = 0x3400; /* 0.25 */
	pack_k4(sc, m, b4.scales);
	for (int l = 0; l < 128; l++)
		b4.qs[l] = (uint8_t)(3 | (12 << 4));
	dequant(KRN_TYPE_Q4_K, &b4, y, 256);
	for (int i = 0; i < 256; i++) {
		int g = i / 32, q = (g % 2) ? 12 : 3;
		T_NEAR(y[i], 0.5 * sc[g] * q - 0.25 * m[g], 0);
	}
	b5.d = b4.d;
	b5.dmin = b4.dmin;
	memcpy(b5.scales, b4.scales, 12);
	memcpy(b5.qs, b4.qs, 128);
	/* qh[l] bit 2c + h is the fifth bit of element 64c + 32h + l: set it for odd l. */
	for (int l = 0; l < 32; l++)
		b5.qh[l] = (l & 1) ? 0xff : 0x00;
	dequant(KRN_TYPE_Q5_K, &b5, y, 256);
	for (int i = 0; i < 256; i++) {
		int g = i / 32, q = ((g % 2) ? 12 : 3) + ((i % 32) & 1 ? 16 : 0);
		T_NEAR(y[i], 0.5 * sc[g] * q - 0.25 * m[g], 0);
	}
}

static void check_hand_q6_K(void)
{
	/* Element i = 128h + 32s + l: low nibble from ql[64h + 32(s&1) + l] (low for s < 2,
	 * high for s >= 2), two high bits from qh[32h + l] at shift 2s. Choose low nibble 5 and
	 * high bits s, so q = 5 + 16 s - 32. */
	block_q6_K b;
	float y[256];
	b.d = 0x3800; /* 0.5 */
	for (int g = 0; g < 16; g++)
		b.scales[g] = (int8_t)(g - 8);
	memset(b.ql, 0x55, sizeof(b.ql));
	memset(b.qh, 0xe4, sizeof(b.qh));
	dequant(KRN_TYPE_Q6_K, &b, y, 256);
	for (int i = 0; i < 256; i++) {
		int s = (i % 128) / 32;
		T_NEAR(y[i], 0.5 * (i / 16 - 8) * (5 + 16 * s - 32), 0);
	}
}

static void check_fp16(void)
{
	T_EQ_INT(krn_fp32_to_fp16(1.0f), 0x3c00);
	T_EQ_INT(krn_fp32_to_fp16(-2.0f), 0xc000);
	T_EQ_INT(krn_fp32_to_fp16(65504.0f), 0x7bff);
	T_EQ_INT(krn_fp32_to_fp16(65520.0f), 0x7c00);
	T_EQ_INT(krn_fp32_to_fp16(5.9604645e-8f), 0x0001); /* smallest subnormal */
	T_EQ_INT(krn_fp32_to_fp16(2.9802322e-8f), 0x0000); /* half of it: ties to even */
	T_EQ_INT(krn_fp32_to_fp16(1.0009765625f + 0.00048828125f), 0x3c02); /* tie, to even */
	/* Every half round-trips. */
	int bad = 0;
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
			continue; /* NaN payloads */
		if (krn_fp32_to_fp16(krn_fp16_to_fp32((uint16_t)h)) != h)
			bad++;
	}
	T_EQ_INT(bad, 0);
	T_EQ_INT(krn_fp32_to_bf16(1.0f), 0x3f80);
	T_NEAR(krn_bf16_to_fp32(0x3f80), 1.0, 0);
}

/* ---- 2. Every ISA against ref -------------------------------------------------------------- */

static uint64_t rng = 0x5eed5eedull;
static uint64_t next_u64(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull); /* splitmix64 */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static float next_unit(void) /* uniform in [-1, 1) */
{
	return (float)((double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Offsets of the fp16 fields in each block: random bytes there could be NaN or Inf. */
static const struct {
	uint32_t type;
	int n;
	int off[2];
} half_fields[] = {
	{ KRN_TYPE_Q4_0, 1, { 0 } },	  { KRN_TYPE_Q4_1, 2, { 0, 2 } }, { KRN_TYPE_Q5_0, 1, { 0 } },
	{ KRN_TYPE_Q5_1, 2, { 0, 2 } }, { KRN_TYPE_Q8_0, 1, { 0 } },	  { KRN_TYPE_Q2_K, 2, { 80, 82 } },
	{ KRN_TYPE_Q3_K, 1, { 108 } },  { KRN_TYPE_Q4_K, 2, { 0, 2 } }, { KRN_TYPE_Q5_K, 2, { 0, 2 } },
	{ KRN_TYPE_Q6_K, 1, { 208 } },
};

static const uint32_t weight_types[] = {
	KRN_TYPE_F32,  KRN_TYPE_F16,  KRN_TYPE_BF16, KRN_TYPE_Q4_0, KRN_TYPE_Q4_1,
	KRN_TYPE_Q5_0, KRN_TYPE_Q5_1, KRN_TYPE_Q8_0, KRN_TYPE_Q2_K, KRN_TYPE_Q3_K,
	KRN_TYPE_Q4_K, KRN_TYPE_Q5_K, KRN_TYPE_Q6_K,
};
#define N_WEIGHT_TYPES (sizeof(weight_types) / sizeof(weight_types[0]))

static void random_weights(uint32_t t, uint8_t *w, size_t n, bool raw)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	size_t bytes = krn_row_size(t, n);
	float *f = malloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		f[i] = 0.05f * next_unit();
	tr->from_float_ref(f, w, n);
	free(f);
	if (!raw || !tr->is_quantized)
		return;
	for (size_t i = 0; i < bytes; i++)
		w[i] = (uint8_t)next_u64();
	for (size_t k = 0; k < sizeof(half_fields) / sizeof(half_fields[0]); k++) {
		if (half_fields[k].type != t)
			continue;
		for (size_t b = 0; b < bytes / tr->type_size; b++)
			for (int h = 0; h < half_fields[k].n; h++) {
				uint16_t v = krn_fp32_to_fp16(0.01f * next_unit());
				memcpy(w + b * tr->type_size + half_fields[k].off[h], &v, 2);
			}
	}
}

/* Sum of |w_i a_i| over dequantized values: the scale for a dot product's rounding error. */
static double dot_magnitude(uint32_t t, const void *w, const void *aq, size_t n)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	float *wf = malloc(n * sizeof(float)), *af = malloc(n * sizeof(float));
	tr->to_float(w, wf, n);
	krn_type_traits(tr->vec_dot_type)->to_float(aq, af, n);
	double m = 0;
	for (size_t i = 0; i < n; i++)
		m += fabs((double)wf[i] * af[i]);
	free(wf);
	free(af);
	return m;
}

/* krn_quant_matvec (an ISA's multi-row kernel where it has one) gives, for every row, the
 * same bits as that ISA's vec_dot: results must not depend on how rows are grouped. */
static void check_matvec(const struct krn_quant_ops *ops)
{
	const size_t n = 512, rows = 7; /* 4 + 3: the grouped path and the tail */
	float act[512], y[7];
	uint8_t *w = malloc(rows * n * 4), aq[4 * 512];
	for (size_t k = 0; k < N_WEIGHT_TYPES; k++) {
		uint32_t t = weight_types[k], vt = krn_type_traits(t)->vec_dot_type;
		size_t rb = krn_row_size(t, n);
		for (size_t i = 0; i < n; i++)
			act[i] = 2.0f * next_unit();
		for (size_t r = 0; r < rows; r++)
			random_weights(t, w + r * rb, n, r % 2);
		ops->quantize_act[vt](act, aq, n);
		krn_quant_matvec(ops, t, y, w, aq, n, 0, rows);
		for (size_t r = 0; r < rows; r++) {
			float s = 0;
			ops->vec_dot[t](n, &s, w + r * rb, aq);
			if (memcmp(&s, &y[r], sizeof(s)))
				T_FAIL_AT(__FILE__, __LINE__, "%s %s: matvec row %zu %.9g, vec_dot %.9g",
					  ops->name, krn_type_traits(t)->name, r, y[r], s);
			t_checks++;
		}
		/* and a range that starts inside the matrix */
		krn_quant_matvec(ops, t, y, w, aq, n, 2, rows);
		float s = 0;
		ops->vec_dot[t](n, &s, w + 6 * rb, aq);
		T_ASSERT(!memcmp(&s, &y[6], sizeof(s)));
	}
	free(w);
}

/* Rows longer than the x86 legacy kernels prepare activation data for (512 blocks): Falcon-7B's
 * ffn_down length, 18176 = 71 super-blocks. Each row from matvec must equal vec_dot and stay
 * within float rounding of ref; the bound scales the 2048-column one by the row length. */
static void check_long_rows(const struct krn_quant_ops *ops, const struct krn_quant_ops *ref)
{
	const size_t n = 18176, rows = 3;
	float *act = malloc(n * sizeof(float)), y[3];
	uint8_t *w = malloc(rows * n * 4), *aq = malloc(n * 4);
	T_ASSERT(act && w && aq);
	for (size_t k = 0; k < N_WEIGHT_TYPES; k++) {
		uint32_t t = weight_types[k], vt = krn_type_traits(t)->vec_dot_type;
		size_t rb = krn_row_size(t, n);
		for (size_t i = 0; i < n; i++)
			act[i] = 2.0f * next_unit();
		for (size_t r = 0; r < rows; r++)
			random_weights(t, w + r * rb, n, r % 2);
		ref->quantize_act[vt](act, aq, n);
		krn_quant_matvec(ops, t, y, w, aq, n, 0, rows);
		for (size_t r = 0; r < rows; r++) {
			float s = 0, s_ref = 0;
			ops->vec_dot[t](n, &s, w + r * rb, aq);
			ref->vec_dot[t](n, &s_ref, w + r * rb, aq);
			double mag = dot_magnitude(t, w + r * rb, aq, n);
			if (memcmp(&s, &y[r], sizeof(s)))
				T_FAIL_AT(__FILE__, __LINE__, "%s %s n %zu: matvec row %zu %.9g, vec_dot %.9g",
					  ops->name, krn_type_traits(t)->name, n, r, y[r], s);
			if (!(fabs((double)s - s_ref) <= 2e-6 * (double)n / 2048 * mag))
				T_FAIL_AT(__FILE__, __LINE__, "%s %s n %zu row %zu: %.9g vs ref %.9g",
					  ops->name, krn_type_traits(t)->name, n, r, s, s_ref);
			t_checks += 2;
		}
	}
	free(act);
	free(w);
	free(aq);
}

/* Legacy rows of few blocks, odd and even: kernels that take blocks two or four at a time
 * (avx512 q5_0) have tails for 1, 2 and 3 left over. matvec equals vec_dot bit for bit, and
 * both stay within float rounding of ref. */
static void check_short_legacy_rows(const struct krn_quant_ops *ops,
				    const struct krn_quant_ops *ref)
{
	static const uint32_t types[] = { KRN_TYPE_Q4_0, KRN_TYPE_Q5_0, KRN_TYPE_Q8_0 };
	static const size_t blocks[] = { 1, 2, 3, 5, 6, 7, 17 };
	const size_t rows = 3;
	float act[17 * 32], y[3];
	uint8_t w[3 * 17 * 34], aq[17 * 34];
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
		for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
			uint32_t t = types[k];
			size_t n = blocks[b] * 32, rb = krn_row_size(t, n);
			for (size_t i = 0; i < n; i++)
				act[i] = 2.0f * next_unit();
			for (size_t r = 0; r < rows; r++)
				random_weights(t, w + r * rb, n, r % 2);
			ref->quantize_act[KRN_TYPE_Q8_0](act, aq, n);
			krn_quant_matvec(ops, t, y, w, aq, n, 0, rows);
			for (size_t r = 0; r < rows; r++) {
				float s = 0, s_ref = 0;
				ops->vec_dot[t](n, &s, w + r * rb, aq);
				ref->vec_dot[t](n, &s_ref, w + r * rb, aq);
				double mag = dot_magnitude(t, w + r * rb, aq, n);
				if (memcmp(&s, &y[r], sizeof(s)))
					T_FAIL_AT(__FILE__, __LINE__,
						  "%s %s n %zu: matvec row %zu %.9g, vec_dot %.9g",
						  ops->name, krn_type_traits(t)->name, n, r, y[r],
						  s);
				if (!(fabs((double)s - s_ref) <= 2e-6 * mag))
					T_FAIL_AT(__FILE__, __LINE__,
						  "%s %s n %zu row %zu: %.9g vs ref %.9g",
						  ops->name, krn_type_traits(t)->name, n, r, s,
						  s_ref);
				t_checks += 2;
			}
		}
}

/* The x8 layout (quants.h), for every type that has one: repacking is undone exactly by
 * krn_x8_row, and every table's krn_quant_matvec_x8 gives each row within float rounding of
 * ref's vec_dot on the plain row (bit for bit with the table's own vec_dot where the table has
 * no x8 kernel and falls back to it, and for NEON's kernels), whatever range of groups it is
 * given. Row lengths: one super-block,
 * stories110M's 768 and 2048, Falcon-7B's 4544 (legacy formats only) and 18176, and 40960, past
 * the 32768 columns (K-quants) and 1024 blocks (legacy) the kernels prepare at a time; 4099
 * (f16 and bf16 only: one element a block) ends inside the f16/bf16 kernels' four chains. */
static void check_x8(const struct krn_quant_ops *ops, const struct krn_quant_ops *ref)
{
	static const size_t lengths[] = { 256, 768, 2048, 4544, 18176, 40960, 4099 };
	const size_t rows = 3 * KRN_X8;
	for (size_t k = 0; k < N_WEIGHT_TYPES; k++) {
		uint32_t t = weight_types[k], vt = krn_type_traits(t)->vec_dot_type;
		if (!krn_x8_layout(t))
			continue;
		for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
			size_t n = lengths[l], rb = krn_row_size(t, n);
			if (!rb)
				continue;
			float *act = malloc(n * sizeof(float)), y[3 * KRN_X8], y2[3 * KRN_X8];
			uint8_t *w = malloc(rows * rb), *x8 = malloc(rows * rb),
				*tmp = malloc(krn_x8_repack_scratch(t, n, rows)), *row = malloc(rb),
				*aq = malloc(n * 4);
			T_ASSERT(act && w && x8 && tmp && row && aq);
			for (size_t i = 0; i < n; i++)
				act[i] = 2.0f * next_unit();
			for (size_t r = 0; r < rows; r++)
				random_weights(t, w + r * rb, n, r % 3 == 1);
			memcpy(x8, w, rows * rb);
			krn_x8_repack(t, x8, n, rows, tmp);
			for (size_t r = 0; r < rows; r++) {
				krn_x8_row(t, x8, rows, n, r, row);
				if (memcmp(row, w + r * rb, rb))
					T_FAIL_AT(__FILE__, __LINE__, "%s n %zu: x8 row %zu does not "
						  "unpack to the row packed", krn_type_traits(t)->name,
						  n, r);
				t_checks++;
			}
			ref->quantize_act[vt](act, aq, n);
			/* NEON has kernels of its own for every layout (arm/neon.c's table), so the
			 * exact checks below and check_matmul's are of them, not of the fallback */
			if (!strcmp(ops->name, "neon") &&
			    !(krn_quant_x8_native(ops, t) && ops->matmul_x8[t]))
				T_FAIL_AT(__FILE__, __LINE__, "neon has no x8 matvec and matmul "
					  "kernels of its own for %s", krn_type_traits(t)->name);
			krn_quant_matvec_x8(ops, t, y, x8, rows, aq, n, 0, rows);
			krn_quant_matvec_x8(ops, t, y2, x8, rows, aq, n, KRN_X8, 2 * KRN_X8);
			/* NEON's x8 kernels keep its vec_dot's order of float operations
			 * (arm/x8_drive.h), so they too must give its bits */
			bool own = krn_quant_x8_native(ops, t), exact = !own || !strcmp(ops->name, "neon");
			for (size_t r = 0; r < rows; r++) {
				float s = 0, s_ref = 0;
				ops->vec_dot[t](n, &s, w + r * rb, aq);
				ref->vec_dot[t](n, &s_ref, w + r * rb, aq);
				double mag = dot_magnitude(t, w + r * rb, aq, n);
				if (exact && memcmp(&s, &y[r], sizeof(s)))
					T_FAIL_AT(__FILE__, __LINE__, "%s %s n %zu: %s x8 row %zu "
						  "%.9g, vec_dot %.9g", ops->name,
						  krn_type_traits(t)->name, n, own ? "native" : "unpacked",
						  r, y[r], s);
				if (!(fabs((double)y[r] - s_ref) <= 2e-6 * (double)(n < 2048 ? 2048 : n) / 2048 * mag))
					T_FAIL_AT(__FILE__, __LINE__, "%s %s n %zu: x8 row %zu %.9g vs "
						  "ref %.9g (sum|w a| %.4g)", ops->name,
						  krn_type_traits(t)->name, n, r, y[r], s_ref, mag);
				if (r >= KRN_X8 && r < 2 * KRN_X8 && memcmp(&y[r], &y2[r], sizeof(float)))
					T_FAIL_AT(__FILE__, __LINE__, "%s %s n %zu: x8 row %zu differs "
						  "with the range it was computed in", ops->name,
						  krn_type_traits(t)->name, n, r);
				t_checks += 3;
			}
			free(act);
			free(w);
			free(x8);
			free(tmp);
			free(row);
			free(aq);
		}
	}
}

/* krn_quant_matmul (several tokens against one pass over the weights) gives every token the
 * bits krn_quant_matvec(_x8) gives it alone: plain rows (13 rows, not a multiple of eight: the
 * fallback over row blocks) for every type, and x8 rows for every type with a layout (the
 * table's own matmul_x8 where it has one), over token counts around the kernels' register
 * blocks (4 legacy, 2 or 4 K-quants, with 1, 2 and 3 left over), chunks (16: 27 is a full one
 * and 11) and the AVX2 K-quants' unpacked chunks (8 tokens and more, four at a time: 9, 14 and
 * 27's 11 leave one, two and three over), on a range of three groups that starts inside the
 * tensor (kernels that take groups two at a time do a pair and an odd one), and row lengths of
 * one tile and of several (12544 columns: three tiles, the last one longer, so the sums carry
 * from tile to tile and a last tile runs long, as Falcon's 18176 columns in four did at 1.45x
 * the cost under qemu), and for the types of one element a block an odd one (4099: f16/bf16
 * x8 rows end inside their four chains). */
static void check_matmul(const struct krn_quant_ops *ops)
{
	static const size_t lengths[] = { 256, 768, 4544, 12544, 4099 };
	static const size_t tokens[] = { 1, 2, 3, 5, 9, 14, 27 };
	const size_t rows_x8 = 4 * KRN_X8, rows_plain = 13, n_tok_max = 27;
	for (size_t k = 0; k < N_WEIGHT_TYPES; k++) {
		uint32_t t = weight_types[k], vt = krn_type_traits(t)->vec_dot_type;
		for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
			size_t n = lengths[l], rb = krn_row_size(t, n), ab = krn_row_size(vt, n);
			if (!rb || (l == 3 && !krn_x8_layout(t)))
				continue;
			float *act = malloc(n * sizeof(float));
			float *y = calloc(n_tok_max * rows_x8, sizeof(float)), y1[4 * KRN_X8];
			uint8_t *w = malloc(rows_x8 * rb), *x8 = malloc(rows_x8 * rb),
				*tmp = malloc(krn_x8_repack_scratch(t, n, rows_x8)),
				*aq = malloc(n_tok_max * ab);
			T_ASSERT(act && y && w && x8 && tmp && aq);
			for (size_t j = 0; j < n_tok_max; j++) {
				for (size_t i = 0; i < n; i++)
					act[i] = 2.0f * next_unit();
				ops->quantize_act[vt](act, aq + j * ab, n);
			}
			for (size_t r = 0; r < rows_x8; r++)
				random_weights(t, w + r * rb, n, r % 3 == 1);
			memcpy(x8, w, rows_x8 * rb);
			if (krn_x8_layout(t))
				krn_x8_repack(t, x8, n, rows_x8, tmp);
			for (int layout = 0; layout < 2; layout++) {
				bool is_x8 = layout == 1;
				if (is_x8 && !krn_x8_layout(t))
					break;
				size_t rows = is_x8 ? rows_x8 : rows_plain, r0 = is_x8 ? KRN_X8 : 2;
				const uint8_t *wl = is_x8 ? x8 : w;
				for (size_t c = 0; c < sizeof(tokens) / sizeof(tokens[0]); c++) {
					size_t nt = tokens[c];
					krn_quant_matmul(ops, t, is_x8, y, rows_x8, wl, rows, aq, ab, nt,
							 n, r0, rows);
					for (size_t j = 0; j < nt; j++) {
						const void *xj = aq + j * ab;
						if (is_x8)
							krn_quant_matvec_x8(ops, t, y1, wl, rows, xj, n,
									    r0, rows);
						else
							krn_quant_matvec(ops, t, y1, wl, xj, n, r0,
									 rows);
						for (size_t r = r0; r < rows; r++)
							if (memcmp(&y1[r], &y[j * rows_x8 + r],
								   sizeof(float)))
								T_FAIL_AT(__FILE__, __LINE__,
									  "%s %s%s n %zu: matmul of %zu "
									  "tokens, token %zu row %zu: "
									  "%.9g, matvec %.9g",
									  ops->name,
									  krn_type_traits(t)->name,
									  is_x8 ? " x8" : "", n, nt, j, r,
									  y[j * rows_x8 + r], y1[r]);
						t_checks++;
					}
				}
			}
			free(act);
			free(y);
			free(w);
			free(x8);
			free(tmp);
			free(aq);
		}
	}
}

/* Activation quantizers where the largest magnitude is reached twice, with both signs: Q8_K
 * takes its scale's sign from the first, so a vectorised search must find the first. */
static void check_act_ties(const struct krn_quant_ops *ops, const struct krn_quant_ops *ref)
{
	static const uint32_t acts[] = { KRN_TYPE_Q8_0, KRN_TYPE_Q8_1, KRN_TYPE_Q8_K };
	float x[512];
	uint8_t a[1024], b[1024];
	for (int order = 0; order < 2; order++) {
		for (size_t i = 0; i < 512; i++)
			x[i] = 0.25f * next_unit();
		x[37] = order ? 0.5f : -0.5f;
		x[300] = -x[37];
		x[301] = x[37];
		for (size_t k = 0; k < sizeof(acts) / sizeof(acts[0]); k++) {
			size_t bytes = krn_row_size(acts[k], 512);
			ref->quantize_act[acts[k]](x, a, 512);
			ops->quantize_act[acts[k]](x, b, 512);
			if (memcmp(a, b, bytes))
				T_FAIL_AT(__FILE__, __LINE__, "%s: quantize_act to %s differs from ref "
					  "where the largest magnitude repeats", ops->name,
					  krn_type_traits(acts[k])->name);
			t_checks++;
		}
	}
}

/* axpy_f16 against ref: element-wise, so within the rounding of one fused or unfused
 * multiply-add, 4u (|y| + 2|a x|), on lengths around the vector widths. */
static void check_axpy_f16(const struct krn_quant_ops *ops, const struct krn_quant_ops *ref)
{
	static const size_t lengths[] = { 1, 7, 8, 9, 16, 63, 64, 65, 128 };
	for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++) {
		size_t n = lengths[k];
		float y[129], y_ref[129], a = 2.0f * next_unit();
		uint16_t x[128];
		for (size_t i = 0; i < n; i++) {
			x[i] = krn_fp32_to_fp16(3.0f * next_unit());
			y[i] = y_ref[i] = next_unit();
		}
		y[n] = y_ref[n] = 12345.0f;
		ref->axpy_f16(y_ref, a, x, n);
		ops->axpy_f16(y, a, x, n);
		for (size_t i = 0; i < n; i++) {
			double tol = 4.0 * 0x1p-24 * (fabs((double)y_ref[i]) +
						      2.0 * fabs((double)a * krn_fp16_to_fp32(x[i])));
			if (!(fabs((double)y[i] - y_ref[i]) <= tol))
				T_FAIL_AT(__FILE__, __LINE__, "%s axpy_f16 n %zu [%zu]: %.9g vs ref "
					  "%.9g", ops->name, n, i, y[i], y_ref[i]);
			t_checks++;
		}
		T_ASSERT(y[n] == 12345.0f);
	}
}

/* krn_dot_f16_rows and krn_axpy_f16_rows (the table's row kernels where it has them) give the
 * bits of the table's vec_dot[F16] and axpy_f16 called row by row: attention's prefill path
 * against decode's. Row lengths around the kernels' 16- and 64-element steps and past their
 * 256-element buffer; rows apart by more than their length, as in a KV cache. */
static void check_f16_rows(const struct krn_quant_ops *ops)
{
	static const size_t lengths[] = { 1, 8, 15, 16, 64, 72, 128, 136, 300 };
	enum { ROWS = 13, LD = 320 };
	static uint16_t x[ROWS * LD], y16[LD];
	for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++) {
		size_t n = lengths[k];
		float s[ROWS], s1, a[ROWS], y[LD + 1], y1[LD + 1];
		for (size_t i = 0; i < ROWS * LD; i++)
			x[i] = krn_fp32_to_fp16(2.0f * next_unit());
		for (size_t i = 0; i < n; i++) {
			y16[i] = krn_fp32_to_fp16(2.0f * next_unit());
			y[i] = y1[i] = next_unit();
		}
		y[n] = y1[n] = 12345.0f;
		for (size_t r = 0; r < ROWS; r++)
			a[r] = next_unit();
		krn_dot_f16_rows(ops, n, s, x, LD, ROWS, y16);
		krn_axpy_f16_rows(ops, y, a, x, LD, ROWS, n);
		for (size_t r = 0; r < ROWS; r++) {
			ops->vec_dot[KRN_TYPE_F16](n, &s1, x + r * LD, y16);
			ops->axpy_f16(y1, a[r], x + r * LD, n);
			if (memcmp(&s1, &s[r], sizeof(s1)))
				T_FAIL_AT(__FILE__, __LINE__, "%s dot_f16_rows n %zu row %zu: %.9g, "
					  "vec_dot %.9g", ops->name, n, r, s[r], s1);
			t_checks++;
		}
		if (memcmp(y, y1, (n + 1) * sizeof(float)))
			T_FAIL_AT(__FILE__, __LINE__, "%s axpy_f16_rows n %zu: not axpy_f16's bits",
				  ops->name, n);
		t_checks++;
	}
}

/* krn_dot_f16_heads and krn_axpy_f16_heads (the table's where it has them) give each head
 * and position the bits of the table's vec_dot[F16] and axpy_f16 on its slice of the row,
 * the positions' terms added in order: three positions rows apart by more than their
 * heads, head counts with and without grouped queries (kv_mul 1 and 3), a range not
 * starting at head 0, slice lengths around the 8- and 16-element steps. */
static void check_f16_heads(const struct krn_quant_ops *ops)
{
	static const size_t lengths[] = { 1, 8, 15, 16, 64, 72 };
	enum { HEADS = 6, LDS = 5, POS = 3, LDX = HEADS * 72 + 8 };
	static const int ranges[][3] = { { 0, 6, 1 }, { 2, 5, 1 }, { 0, 6, 3 }, { 1, 4, 3 } };
	for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++)
		for (size_t g = 0; g < sizeof(ranges) / sizeof(ranges[0]); g++) {
			size_t n = lengths[k];
			int h0 = ranges[g][0], h1 = ranges[g][1], kv_mul = ranges[g][2];
			uint16_t x[POS * LDX], q[HEADS * 72];
			float s[HEADS * LDS], s1, a[HEADS * LDS], y[HEADS * 72], y1[HEADS * 72];
			for (size_t i = 0; i < POS * LDX; i++)
				x[i] = krn_fp32_to_fp16(2.0f * next_unit());
			for (size_t i = 0; i < HEADS * 72; i++) {
				q[i] = krn_fp32_to_fp16(2.0f * next_unit());
				y[i] = y1[i] = next_unit();
			}
			for (size_t i = 0; i < HEADS * LDS; i++)
				a[i] = next_unit();
			krn_dot_f16_heads(ops, n, s, LDS, x, LDX, POS, q, h0, h1, kv_mul);
			krn_axpy_f16_heads(ops, y, a, LDS, x, LDX, POS, n, h0, h1, kv_mul);
			for (size_t t = 0; t < POS; t++)
				for (int h = h0; h < h1; h++) {
					size_t j = (size_t)(h - h0);
					const uint16_t *slice = x + t * LDX + (size_t)(h / kv_mul) * n;
					ops->vec_dot[KRN_TYPE_F16](n, &s1, slice, q + j * n);
					ops->axpy_f16(y1 + j * n, a[j * LDS + t], slice, n);
					if (memcmp(&s1, &s[j * LDS + t], sizeof(s1)))
						T_FAIL_AT(__FILE__, __LINE__,
							  "%s dot_f16_heads n %zu head %d position %zu: "
							  "%.9g, vec_dot %.9g",
							  ops->name, n, h, t, s[j * LDS + t], s1);
					t_checks++;
				}
			if (memcmp(y, y1, sizeof(y)))
				T_FAIL_AT(__FILE__, __LINE__, "%s axpy_f16_heads n %zu: not axpy_f16's",
					  ops->name, n);
			t_checks++;
		}
}

/* krn_round_f16 (the table's round_f16 where it has one) against ref's conversions to f16
 * and back: the same floats, over ordinary values, f16's subnormals and underflow, ties,
 * overflow to infinity, infinities and NaN, at every length up to 40 (vector bodies and
 * tails). */
static void check_round_f16(const struct krn_quant_ops *ops)
{
	static const float special[] = { 0.0f,	   -0.0f,    1.0f,	 -2.5f,	  65504.0f,
					 65520.0f, -65520.0f, 1e-8f,	 -3e-5f,  6.1e-5f,
					 0x1.002p0f, 0x1.006p0f, INFINITY, -INFINITY, NAN };
	enum { N = 40 };
	float x[N], want[N];
	for (size_t n = 0; n <= N; n++) {
		for (size_t i = 0; i < n; i++) {
			x[i] = i % 3 == 0 ? special[(i / 3 + n) % (sizeof(special) / sizeof(special[0]))]
					  : 300.0f * next_unit();
			want[i] = krn_fp16_to_fp32(krn_fp32_to_fp16(x[i]));
		}
		uint16_t tmp[N];
		krn_round_f16(ops, x, tmp, n);
		for (size_t i = 0; i < n; i++) {
			bool same = isnan(want[i]) ? isnan(x[i]) : !memcmp(&x[i], &want[i], sizeof(float));
			if (!same)
				T_FAIL_AT(__FILE__, __LINE__, "%s round_f16 n %zu [%zu]: %.9g, ref %.9g",
					  ops->name, n, i, x[i], want[i]);
			t_checks++;
		}
	}
}

static void check_isas_vs_ref(void)
{
	size_t n_ops;
	const struct krn_quant_ops *const *all = krn_quant_ops_all(&n_ops);
	const struct krn_quant_ops *ref = krn_quant_ops_find("ref");
	const size_t n = 2048; /* 8 super-blocks, 64 blocks */
	float *act = malloc(n * sizeof(float));
	uint8_t *w = malloc(n * 4), *aq_ref = malloc(n * 4), *aq = malloc(n * 4);
	T_ASSERT(ref != NULL);
	for (size_t o = 0; o < n_ops; o++) {
		const struct krn_quant_ops *ops = all[o];
		if (!ops->supported()) {
			printf("  %s: not supported on this CPU, not tested\n", ops->name);
			continue;
		}
		double worst = 0;
		for (size_t k = 0; k < N_WEIGHT_TYPES; k++) {
			uint32_t t = weight_types[k], vt = krn_type_traits(t)->vec_dot_type;
			for (int trial = 0; trial < 6; trial++) {
				for (size_t i = 0; i < n; i++)
					act[i] = (trial == 5 && i % 7) ? 0.0f : 3.0f * next_unit();
				random_weights(t, w, n, trial % 2);
				ref->quantize_act[vt](act, aq_ref, n);
				ops->quantize_act[vt](act, aq, n);
				size_t abytes = krn_row_size(vt, n);
				if (memcmp(aq, aq_ref, abytes))
					T_FAIL_AT(__FILE__, __LINE__,
						  "%s: quantize_act to %s differs from ref", ops->name,
						  krn_type_traits(vt)->name);
				float s_ref = 0, s = 0;
				ref->vec_dot[t](n, &s_ref, w, aq_ref);
				ops->vec_dot[t](n, &s, w, aq_ref);
				double mag = dot_magnitude(t, w, aq_ref, n);
				double rel = mag > 0 ? fabs((double)s - s_ref) / mag : fabs(s - s_ref);
				if (rel > worst)
					worst = rel;
				/* float accumulation over 2048 terms against exact integer sums */
				if (!(rel <= 2e-6))
					T_FAIL_AT(__FILE__, __LINE__,
						  "%s vec_dot %s trial %d: %.9g vs ref %.9g (err %.3g of "
						  "sum|w a| %.4g)",
						  ops->name, krn_type_traits(t)->name, trial, s, s_ref, rel,
						  mag);
				t_checks++;
			}
		}
		printf("  %s: every type against ref, worst error %.3g of sum|w a|\n", ops->name, worst);
		check_matvec(ops);
		check_long_rows(ops, ref);
		check_short_legacy_rows(ops, ref);
		check_x8(ops, ref);
		check_matmul(ops);
		check_act_ties(ops, ref);
		check_axpy_f16(ops, ref);
		check_f16_rows(ops);
		check_round_f16(ops);
		check_f16_heads(ops);
	}
	free(act);
	free(w);
	free(aq_ref);
	free(aq);
}

/* ---- 3. ggml's vectors ---------------------------------------------------------------------- */
#ifndef T_NO_JANSSON

static size_t hex_decode(const char *hex, uint8_t **out)
{
	size_t n = strlen(hex) / 2;
	uint8_t *b = malloc(n ? n : 1);
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		b[i] = (uint8_t)v;
	}
	*out = b;
	return n;
}

static float *floats(json_t *arr, size_t *n)
{
	*n = json_array_size(arr);
	float *f = malloc((*n ? *n : 1) * sizeof(float));
	for (size_t i = 0; i < *n; i++)
		f[i] = (float)json_number_value(json_array_get(arr, i));
	return f;
}

/* Bit equality, except that the fixtures write negative zero as the JSON integer "-0",
 * which jansson reads as +0: a zero matches a zero of either sign. */
static bool same_float(float a, float b)
{
	uint32_t x, y;
	if (a == 0.0f && b == 0.0f)
		return true;
	memcpy(&x, &a, 4);
	memcpy(&y, &b, 4);
	return x == y;
}

static void check_fixture(const char *dir, const char *tname)
{
	char path[4200];
	json_error_t jerr;
	snprintf(path, sizeof(path), "%s/kernel-%s.json", dir, tname);
	json_t *j = json_load_file(path, 0, &jerr);
	if (!j) {
		T_FAIL_AT(__FILE__, __LINE__, "%s: %s", path, jerr.text);
		return;
	}
	int t = krn_type_from_name(tname);
	T_ASSERT(t >= 0);
	if (t < 0)
		return;
	const struct krn_type_traits *tr = krn_type_traits((uint32_t)t);
	uint32_t vt = tr->vec_dot_type;
	T_EQ_STR(krn_type_traits(vt)->name,
		 json_string_value(json_object_get(j, "vec_dot_type")));
	T_EQ_INT(tr->type_size, json_integer_value(json_object_get(j, "type_size")));
	T_EQ_INT(tr->block_size, json_integer_value(json_object_get(j, "block_size")));
	size_t n_per_row = (size_t)json_integer_value(json_object_get(j, "n_per_row"));
	size_t n_rows = (size_t)json_integer_value(json_object_get(j, "n_rows"));
	size_t row_bytes = krn_row_size((uint32_t)t, n_per_row);
	size_t n, nq, nd, na, naq, nad, nv;
	uint8_t *wq, *aq, *mine = malloc(n_rows * row_bytes + 4096);
	nq = hex_decode(json_string_value(json_object_get(j, "weight_quant_hex")), &wq);
	float *wf = floats(json_object_get(j, "weight_f32"), &n);
	float *wd = floats(json_object_get(j, "weight_dequant"), &nd);
	float *act = floats(json_object_get(j, "act_f32"), &na);
	naq = hex_decode(json_string_value(json_object_get(j, "act_quant_hex")), &aq);
	float *ad = floats(json_object_get(j, "act_dequant"), &nad);
	float *vd = floats(json_object_get(j, "vec_dot"), &nv);
	T_EQ_U64(nq, n_rows * row_bytes);
	T_EQ_U64(nd, n_rows * n_per_row);
	T_EQ_U64(naq, krn_row_size(vt, n_per_row));

	/* Dequantization, bit for bit. */
	float *y = malloc(nd * sizeof(float));
	tr->to_float(wq, y, nd);
	size_t bad = 0;
	for (size_t i = 0; i < nd; i++)
		bad += !same_float(y[i], wd[i]);
	if (bad)
		T_FAIL_AT(__FILE__, __LINE__, "%s: %zu of %zu dequantized values differ", tname, bad,
			  nd);
	t_checks++;

	/* Weight quantization (ggml's _ref quantizer, as llama-quantize uses without imatrix). */
	tr->from_float_ref(wf, mine, n);
	size_t bad_blocks = 0, n_blocks = nq / tr->type_size;
	for (size_t b = 0; b < n_blocks; b++)
		bad_blocks += memcmp(mine + b * tr->type_size, wq + b * tr->type_size, tr->type_size) != 0;
	if (bad_blocks)
		T_FAIL_AT(__FILE__, __LINE__, "%s: weight quantizer differs from ggml in %zu of %zu blocks",
			  tname, bad_blocks, n_blocks);
	t_checks++;

	/* Activation quantization and the dot product, every ISA. */
	size_t n_ops;
	const struct krn_quant_ops *const *all = krn_quant_ops_all(&n_ops);
	double worst = 0;
	for (size_t o = 0; o < n_ops; o++) {
		const struct krn_quant_ops *ops = all[o];
		if (!ops->supported())
			continue;
		ops->quantize_act[vt](act, mine, na);
		if (memcmp(mine, aq, naq))
			T_FAIL_AT(__FILE__, __LINE__, "%s: %s quantize_act to %s differs from ggml",
				  tname, ops->name, krn_type_traits(vt)->name);
		t_checks++;
		krn_type_traits(vt)->to_float(mine, y, na);
		bad = 0;
		for (size_t i = 0; i < nad; i++)
			bad += !same_float(y[i], ad[i]);
		T_EQ_U64(bad, 0);
		for (size_t r = 0; r < n_rows && r < nv; r++) {
			float s = 0;
			ops->vec_dot[t](n_per_row, &s, wq + r * row_bytes, aq);
			/* README: ggml's vec_dot is within 1.2e-6 relative of the exact dot of the
			 * dequantized vectors; two float orders may each be that far. Where the
			 * scale and min terms cancel (q2_K row 1 ends at 0.058 from terms of
			 * size ~10) the bound is on the size of the terms instead. */
			double mag = dot_magnitude((uint32_t)t, wq + r * row_bytes, aq, n_per_row);
			double diff = fabs((double)s - vd[r]);
			double rel = diff / fmax(fabs(vd[r]), 1e-30);
			if (rel > worst)
				worst = rel;
			if (!(diff <= fmax(2.4e-6 * fabs(vd[r]), 4e-8 * mag)))
				T_FAIL_AT(__FILE__, __LINE__, "%s row %zu, %s: vec_dot %.9g, ggml %.9g (rel %.3g, "
					  "%.3g of sum|w a|)", tname, r, ops->name, s, vd[r], rel, diff / mag);
			t_checks++;
		}
	}
	printf("  %-5s dequant exact, weight quant %zu/%zu blocks differ, vec_dot worst rel %.3g\n",
	       tname, bad_blocks, n_blocks, worst);
	free(y);
	free(wq);
	free(aq);
	free(mine);
	free(wf);
	free(wd);
	free(act);
	free(ad);
	free(vd);
	json_decref(j);
}

static void check_fixtures(void)
{
	static const char *const names[] = { "f16",  "bf16", "q8_0", "q4_0", "q4_1", "q5_0",
					     "q5_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K" };
	const char *root = getenv("MEMWALL_SHARED");
	char dir[4096];
	struct stat st;
	snprintf(dir, sizeof(dir), "%s/fixtures/gguf/kernels", root ? root : "");
	if (!root || stat(dir, &st)) {
		printf("NOTE: %s is absent: ggml's vectors not checked (the rest ran)\n", dir);
		return;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		check_fixture(dir, names[i]);
}
#else
static void check_fixtures(void)
{
	printf("NOTE: built without jansson: ggml's vectors not checked (the rest ran)\n");
}
#endif

int main(void)
{
	check_fp16();
	check_hand_q4_0();
	check_hand_q4_1();
	check_hand_q5();
	check_hand_q8_0();
	check_hand_q2_K();
	check_hand_q3_K();
	check_hand_q4_K_q5_K();
	check_hand_q6_K();
	check_isas_vs_ref();
	check_fixtures();
	return t_done();
}
