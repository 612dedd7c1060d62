/* engine/quants/types.h: ggml's tensor types as data: ids, block layouts, half conversions,
 * the shape of the type table and of a per-ISA table, and the x8 layout.
 *
 * The contract every file of engine/quants/ shares and no file owns: ref.c (the type table)
 * and the ISA files include this (through internal.h), never quants.h, so the registry
 * (quants.c), which lists their tables, depends on them and not the other way round. The
 * engine sees all of it through quants.h. quants.h's opening comment says how the two tables
 * relate.
 *
 * Internal to engine/.
 */
#ifndef MEMWALL_QUANTS_TYPES_H
#define MEMWALL_QUANTS_TYPES_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ggml's GGML_TYPE_* ids (ggml.h). Gaps are types memwall does not implement. */
enum krn_type {
	KRN_TYPE_F32 = 0,
	KRN_TYPE_F16 = 1,
	KRN_TYPE_Q4_0 = 2,
	KRN_TYPE_Q4_1 = 3,
	KRN_TYPE_Q5_0 = 6,
	KRN_TYPE_Q5_1 = 7,
	KRN_TYPE_Q8_0 = 8,
	KRN_TYPE_Q8_1 = 9,
	KRN_TYPE_Q2_K = 10,
	KRN_TYPE_Q3_K = 11,
	KRN_TYPE_Q4_K = 12,
	KRN_TYPE_Q5_K = 13,
	KRN_TYPE_Q6_K = 14,
	KRN_TYPE_Q8_K = 15,
	KRN_TYPE_BF16 = 30,
	KRN_TYPE_COUNT = 31, /* one past the largest id, for table sizes */
};

#define KRN_QK 32    /* elements per block of the legacy formats (QK4_0 .. QK8_1) */
#define KRN_QK_K 256 /* elements per super-block of the K-quants */

/* ---- Block layouts (ggml-common.h); d, m, s, dmin are IEEE half floats -------------------- */

typedef struct {
	uint16_t d;
	uint8_t qs[KRN_QK / 2]; /* element j in the low nibble of qs[j], j + 16 in the high */
} block_q4_0;
static_assert(sizeof(block_q4_0) == 18, "block_q4_0 is 18 bytes on disk");

typedef struct {
	uint16_t d, m;
	uint8_t qs[KRN_QK / 2];
} block_q4_1;
static_assert(sizeof(block_q4_1) == 20, "block_q4_1 is 20 bytes on disk");

typedef struct {
	uint16_t d;
	uint8_t qh[4]; /* fifth bit of element j in bit j (little-endian uint32) */
	uint8_t qs[KRN_QK / 2];
} block_q5_0;
static_assert(sizeof(block_q5_0) == 22, "block_q5_0 is 22 bytes on disk");

typedef struct {
	uint16_t d, m;
	uint8_t qh[4];
	uint8_t qs[KRN_QK / 2];
} block_q5_1;
static_assert(sizeof(block_q5_1) == 24, "block_q5_1 is 24 bytes on disk");

typedef struct {
	uint16_t d;
	int8_t qs[KRN_QK];
} block_q8_0;
static_assert(sizeof(block_q8_0) == 34, "block_q8_0 is 34 bytes on disk");

typedef struct {
	uint16_t d;
	uint16_t s; /* fp16(d * sum(qs)), used by the q4_1/q5_1 dot products for the min term */
	int8_t qs[KRN_QK];
} block_q8_1;
static_assert(sizeof(block_q8_1) == 36, "block_q8_1 is 36 bytes");

typedef struct {
	uint8_t scales[KRN_QK_K / 16]; /* 4-bit scale (low) and 4-bit min (high) per 16 */
	uint8_t qs[KRN_QK_K / 4];
	uint16_t d, dmin;
} block_q2_K;
static_assert(sizeof(block_q2_K) == 84, "block_q2_K is 84 bytes on disk");

typedef struct {
	uint8_t hmask[KRN_QK_K / 8];
	uint8_t qs[KRN_QK_K / 4];
	uint8_t scales[12]; /* 16 6-bit scales, packed */
	uint16_t d;
} block_q3_K;
static_assert(sizeof(block_q3_K) == 110, "block_q3_K is 110 bytes on disk");

typedef struct {
	uint16_t d, dmin;
	uint8_t scales[12]; /* 8 6-bit scales and 8 6-bit mins, packed (get_scale_min_k4) */
	uint8_t qs[KRN_QK_K / 2];
} block_q4_K;
static_assert(sizeof(block_q4_K) == 144, "block_q4_K is 144 bytes on disk");

typedef struct {
	uint16_t d, dmin;
	uint8_t scales[12];
	uint8_t qh[KRN_QK_K / 8];
	uint8_t qs[KRN_QK_K / 2];
} block_q5_K;
static_assert(sizeof(block_q5_K) == 176, "block_q5_K is 176 bytes on disk");

typedef struct {
	uint8_t ql[KRN_QK_K / 2];
	uint8_t qh[KRN_QK_K / 4];
	int8_t scales[KRN_QK_K / 16];
	uint16_t d;
} block_q6_K;
static_assert(sizeof(block_q6_K) == 210, "block_q6_K is 210 bytes on disk");

typedef struct {
	float d;
	int8_t qs[KRN_QK_K];
	int16_t bsums[KRN_QK_K / 16]; /* sum of each 16 qs, for the K-quants' min terms */
} block_q8_K;
static_assert(sizeof(block_q8_K) == 292, "block_q8_K is 292 bytes");

/* ---- Half and bfloat16 conversions (exact, round to nearest even) ------------------------ */

static inline float krn_fp16_to_fp32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
	uint32_t bits;
	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (man << 13);
	} else if (exp) {
		bits = sign | ((exp + 112u) << 23) | (man << 13);
	} else if (!man) {
		bits = sign;
	} else { /* subnormal: normalise */
		int e = -1;
		do {
			man <<= 1;
			e++;
		} while (!(man & 0x400u));
		bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
	}
	float f;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

static inline uint16_t krn_fp32_to_fp16(float f)
{
	uint32_t x;
	memcpy(&x, &f, sizeof(x));
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
	uint32_t a = x & 0x7fffffffu;
	if (a >= 0x7f800000u) /* inf, NaN (kept quiet) */
		return sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u);
	if (a >= 0x477ff000u) /* >= 65520 rounds past the largest half */
		return sign | 0x7c00u;
	if (a >= 0x38800000u) { /* normal half: rebias, round 13 bits away */
		uint32_t m = a - 0x38000000u;
		m += 0xfffu + ((m >> 13) & 1u);
		return sign | (uint16_t)(m >> 13);
	}
	if (a < 0x33000000u) /* below half the smallest subnormal */
		return sign;
	uint32_t e = a >> 23, man = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;
	uint32_t q = man >> shift, rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1u);
	if (rem > half || (rem == half && (q & 1u)))
		q++;
	return sign | (uint16_t)q;
}

static inline float krn_bf16_to_fp32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* ggml_compute_fp32_to_bf16: round to nearest even, NaN forced quiet. */
static inline uint16_t krn_fp32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, sizeof(x));
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 64u);
	return (uint16_t)((x + (0x7fffu + ((x >> 16) & 1u))) >> 16);
}

/* ---- The type table ------------------------------------------------------------------------ */

typedef void (*krn_to_float_fn)(const void *x, float *y, size_t n);
typedef void (*krn_from_float_fn)(const float *x, void *y, size_t n);
/* *s = dot(x, y) over n elements: x a row of the weight type, y the activation already
 * quantized to that type's vec_dot_type. n is a multiple of the weight type's block size. */
typedef void (*krn_vec_dot_fn)(size_t n, float *s, const void *x, const void *y);
/* y[r] = dot(row r of w, xq) for r in [r0, r1), rows row_bytes apart: several rows at once,
 * sharing the work on the activation. Must give the same bits as vec_dot row by row. */
typedef void (*krn_matvec_fn)(float *y, const void *w, size_t row_bytes, const void *xq,
			      size_t n, size_t r0, size_t r1);

/* y[r] = dot(row r, xq) for r in [r0, r1), both multiples of KRN_X8, of a tensor of `rows`
 * rows of n elements in the x8 layout (below) starting at w. A row's result depends on n
 * only, never on r0 and r1. */
typedef void (*krn_matvec_x8_fn)(float *y, const void *w, size_t rows, const void *xq, size_t n,
				 size_t r0, size_t r1);

/* Several tokens against one pass over the weights (prefill, batched decode, speculative
 * verification): y[t * ldy + r] = dot(row r, xq_t) for r in [r0, r1), both multiples of
 * KRN_X8, and t in [0, n_tok), token t's activation (quantized to the vec_dot_type) at
 * (const char *)xq + t * ldx. Token by token it gives the same bits as the same table's
 * matvec_x8, so a prompt run in chunks and one run token by token agree exactly; what changes
 * is that each block of weights is loaded and decoded once for several tokens. */
typedef void (*krn_matmul_x8_fn)(float *y, size_t ldy, const void *w, size_t rows,
				 const void *xq, size_t ldx, size_t n_tok, size_t n, size_t r0,
				 size_t r1);

struct krn_type_traits {
	const char *name;       /* ggml's name: "q4_K", "f16", ... */
	uint32_t block_size;    /* elements per block */
	uint32_t type_size;     /* bytes per block */
	bool is_quantized;
	enum krn_type vec_dot_type; /* activations are converted to this before a dot */
	krn_to_float_fn to_float;   /* dequantize (ggml's dequantize_row_*) */
	/* ggml's quantize_row_*_ref: deterministic, what llama-quantize writes without an
	 * imatrix. NULL for activation-only types. */
	krn_from_float_fn from_float_ref;
};

/* The traits of type t, or NULL for an id memwall does not implement. Static storage. The
 * table is ref.c's; declared here, with its struct, so that ref.c needs nothing else. */
const struct krn_type_traits *krn_type_traits(uint32_t t);

/* ---- Per-ISA kernels -------------------------------------------------------------------- */

struct krn_quant_ops {
	const char *name; /* "ref", "avx2", "avx512", "neon" */
	/* True when the running CPU and OS can execute this table. */
	bool (*supported)(void);
	/* Entries left NULL here are taken from base (and from ref after it). */
	const struct krn_quant_ops *base;
	/* Indexed by the weight type. */
	krn_vec_dot_fn vec_dot[KRN_TYPE_COUNT];
	/* Optional multi-row kernels, indexed by the weight type; never filled from base (an
	 * ISA's matvec must match its own vec_dot). NULL: krn_quant_matvec loops vec_dot. */
	krn_matvec_fn matvec[KRN_TYPE_COUNT];
	/* Indexed by the activation type (a vec_dot_type): ggml-cpu's x86 from_float. Every ISA
	 * produces the same bytes as ref, so results do not depend on the table chosen. */
	krn_from_float_fn quantize_act[KRN_TYPE_COUNT];
	/* Optional kernels for weights in the x8 layout (below), indexed by the weight type.
	 * Taken from base when NULL; where no table has one, krn_quant_matvec_x8 unpacks the
	 * rows and calls vec_dot. */
	krn_matvec_x8_fn matvec_x8[KRN_TYPE_COUNT];
	/* Optional multi-token kernels for the x8 layout, indexed by the weight type; never
	 * filled from base (they must match this table's own matvec_x8 bit for bit). NULL:
	 * krn_quant_matmul loops matvec_x8 over the tokens, a block of rows at a time. */
	krn_matmul_x8_fn matmul_x8[KRN_TYPE_COUNT];
	/* y[i] += a * x[i] for f16 x: attention's weighted sum over an f16 value cache, one
	 * position's row at a time. Taken from base, then ref, when NULL. */
	void (*axpy_f16)(float *y, float a, const uint16_t *x, size_t n);
	/* Optional, never filled from base (each must give this table's own vec_dot[F16] and
	 * axpy_f16 bits); NULL: krn_dot_f16_rows and krn_axpy_f16_rows loop those. Attention
	 * over a run of cached positions: s[r] = x row r . y (rows ldx apart), and y[i] +=
	 * a[r] * x[r * ldx + i] row after row. */
	void (*dot_f16_rows)(size_t n, float *s, const uint16_t *x, size_t ldx, size_t rows,
			     const uint16_t *y);
	void (*axpy_f16_rows)(float *y, const float *a, const uint16_t *x, size_t ldx, size_t rows,
			      size_t n);
	/* Optional, never filled from base (each must give this table's own vec_dot[F16] and
	 * axpy_f16 bits); NULL: krn_dot_f16_heads and krn_axpy_f16_heads loop those. Decode's
	 * attention, heads [h0, h1) over `rows` cached positions (rows ldx halves apart),
	 * position by position; head h reads its row's slice h / kv_mul, n halves long:
	 * s[(h - h0) * lds + t] = slice of row t . y + (h - h0) * n, and y[(h - h0) * n + i] +=
	 * a[(h - h0) * lda + t] * slice of row t [i], t in order. */
	void (*dot_f16_heads)(size_t n, float *s, size_t lds, const uint16_t *x, size_t ldx,
			      size_t rows, const uint16_t *y, int h0, int h1, int kv_mul);
	void (*axpy_f16_heads)(float *y, const float *a, size_t lda, const uint16_t *x,
			       size_t ldx, size_t rows, size_t n, int h0, int h1, int kv_mul);
	/* Optional: x[i] rounded to f16 (nearest, ties to even) and back, exactly as
	 * quantize_act[F16] then krn_fp16_to_fp32 would; NULL: krn_round_f16 does that. */
	void (*round_f16)(float *x, size_t n);
};

/* ---- Rows interleaved by eight (the x8 layout) ---------------------------------------------
 *
 * A kernel that computes eight rows at once, one row per vector lane, loads each activation
 * byte once for eight rows, applies the per-block scales lane-wise and never sums a vector
 * horizontally; with the eight rows' blocks side by side the weights still arrive as one
 * sequential stream (ggml's CPU "repack" buffers do the same for some types). A tensor whose
 * row count is a multiple of 8 may be repacked so at load (ENG_LOAD_REPACK). Rows are taken
 * in groups of eight (group g: rows 8g .. 8g + 7), and their blocks in column tiles of
 * KRN_X8_TILE_COLS columns, the last tile taking what is left (a row shorter than two tiles is
 * one tile). Tile k holds, group after group, for each block index i of the tile in order,
 * block i of the group's eight rows packed by the type's layout into 8 * type_size bytes. So
 * a pass over one tile for every group is one sequential stream whose activation (4 KB of
 * Q8_K, 4.25 KB of Q8_0) stays in L1: over whole rows of Falcon-7B's ffn_down (18176 columns)
 * it did not, and the kernels streamed at 0.8x a plain read instead of 0.93x. The tensor's
 * size does not change, so neither do the bytes a step reads. */
#define KRN_X8 8
#define KRN_X8_TILE_COLS 4096

struct krn_x8_layout {
	/* Blocks 0 .. n - 1 of eight rows (row r's block i at src + r * row_bytes + i * type_size)
	 * packed into dst, KRN_X8 * type_size bytes a block, in order: a run, so that the call
	 * and the eight row pointers are not paid per block (packing runs at load over every
	 * byte of a model). */
	void (*pack)(void *dst, const void *src, size_t row_bytes, size_t n);
	/* One packed block at src back to one block of each of eight rows. */
	void (*unpack)(void *const dst[KRN_X8], const void *src);
};

/* The tiles of a row of nb blocks of block_size elements: tb blocks each (*tb set here), the
 * last one nb - (count - 1) * tb blocks. Returns the count. */
static inline size_t krn_x8_tiles(size_t nb, uint32_t block_size, size_t *tb)
{
	*tb = KRN_X8_TILE_COLS / block_size;
	return nb / *tb > 1 ? nb / *tb : 1;
}

/* Where group g's block i lies in an x8 tensor of `rows` rows of nb blocks of bs bytes (of
 * block_size elements): the byte offset of its eight rows' packed blocks. */
static inline size_t krn_x8_offset(size_t rows, size_t nb, uint32_t block_size, size_t bs,
				   size_t g, size_t i)
{
	size_t tb, n_tiles = krn_x8_tiles(nb, block_size, &tb);
	size_t k = i / tb < n_tiles ? i / tb : n_tiles - 1;
	size_t len = k + 1 < n_tiles ? tb : nb - k * tb;
	return (k * tb * rows + g * KRN_X8 * len + KRN_X8 * (i - k * tb)) * bs;
}

#endif
