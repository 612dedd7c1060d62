/* engine/quants/internal.h: the quants library's private header: what the per-ISA files share
 * with the registry. Internal to engine/quants/.
 *
 * It includes types.h and not quants.h: the files behind the tables (ref.c, the ISA files,
 * fp16.c, x86/cpu.c) never see the registry that lists them. */
#ifndef MEMWALL_ENGINE_QUANTS_INTERNAL_H
#define MEMWALL_ENGINE_QUANTS_INTERNAL_H

#include "types.h"

/* One table per ISA file; the registry (quants.c) lists those compiled in. */
extern const struct krn_quant_ops krn_quant_ops_ref;
extern const struct krn_quant_ops krn_quant_ops_avx2;
extern const struct krn_quant_ops krn_quant_ops_avx512;
extern const struct krn_quant_ops krn_quant_ops_neon;

/* Run-time checks for the x86 tables: kernels/x86/cpu.h, the one check for both libraries
 * (built without ISA flags). The AVX-512 table needs krn_x86_has_avx512_icl's set (Ice Lake,
 * Zen 4 and later); other AVX-512 CPUs use AVX2. */
#include "kernels/x86/cpu.h"

/* fp16 -> fp32 for every half (fp16.c), filled by the registry (quants.c) through
 * krn_fp16_table_fill before any table is handed out: the SIMD kernels convert their
 * per-block scales with one load. */
extern float krn_fp16_table[1 << 16];
void krn_fp16_table_fill(void);

/* Scale unpacking that ref.c's dequantizers and ref_quantize.c's quantizers share. */
/* The 16 6-bit scales of q3_K: low 4 bits in scales[0..7] (two per byte), high 2 bits in
 * scales[8..11]; ggml's kmask shuffle in dequantize_row_q3_K, written out. */
static inline int krn_q3_K_scale(const uint8_t *sc, int j)
{
	int lo = j < 8 ? (sc[j] & 0x0f) : (sc[j - 8] >> 4);
	int hi = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
	return (lo | (hi << 4)) - 32;
}

/* ggml's get_scale_min_k4: 8 6-bit scales and mins packed in 12 bytes. */
static inline void krn_scale_min_k4(int j, const uint8_t *q, int *sc, int *m)
{
	if (j < 4) {
		*sc = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
		*m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
	}
}

/* ref_quantize.c's weight quantizers (ggml's quantize_row_*_ref), for ref.c's type table. */
void krn_ref_from_float_Q4_0(const float *x, void *y, size_t n);
void krn_ref_from_float_Q4_1(const float *x, void *y, size_t n);
void krn_ref_from_float_Q5_0(const float *x, void *y, size_t n);
void krn_ref_from_float_Q5_1(const float *x, void *y, size_t n);
void krn_ref_from_float_Q8_0(const float *x, void *y, size_t n);
void krn_ref_from_float_Q2_K(const float *x, void *y, size_t n);
void krn_ref_from_float_Q3_K(const float *x, void *y, size_t n);
void krn_ref_from_float_Q4_K(const float *x, void *y, size_t n);
void krn_ref_from_float_Q5_K(const float *x, void *y, size_t n);
void krn_ref_from_float_Q6_K(const float *x, void *y, size_t n);
void krn_ref_from_float_F32(const float *x, void *y, size_t n);
void krn_ref_from_float_F16(const float *x, void *y, size_t n);
void krn_ref_from_float_BF16(const float *x, void *y, size_t n);

/* ref_quantize.c's activation quantizers, for SIMD files that handle only the bulk of a row. */
void krn_ref_act_q8_0(const float *x, void *y, size_t n);
void krn_ref_act_q8_1(const float *x, void *y, size_t n);
void krn_ref_act_q8_K(const float *x, void *y, size_t n);

/* The x8 layouts (types.h), one per type that has one: the legacy formats' in x8_legacy.c,
 * the K-quants' in x8_kquants.c, f16's and bf16's in x8_float.c; x8.c indexes them by type. */
extern const struct krn_x8_layout krn_x8_layout_q8_0;
extern const struct krn_x8_layout krn_x8_layout_q5_0;
extern const struct krn_x8_layout krn_x8_layout_q4_0;
extern const struct krn_x8_layout krn_x8_layout_q5_1;
extern const struct krn_x8_layout krn_x8_layout_q4_1;
extern const struct krn_x8_layout krn_x8_layout_f16;
extern const struct krn_x8_layout krn_x8_layout_bf16;
extern const struct krn_x8_layout krn_x8_layout_q2_K;
extern const struct krn_x8_layout krn_x8_layout_q3_K;
extern const struct krn_x8_layout krn_x8_layout_q4_K;
extern const struct krn_x8_layout krn_x8_layout_q5_K;
extern const struct krn_x8_layout krn_x8_layout_q6_K;

/* A layout's pack (types.h) from its packer of one block of each of eight rows: inlined into
 * each type's run function, where pack is a direct call the compiler may inline too. */
static inline void krn_x8_run(void (*pack)(void *dst, const void *const blk[KRN_X8]), size_t bs,
			      void *dst, const void *src, size_t row_bytes, size_t n)
{
	const uint8_t *s = src;
	uint8_t *o = dst;
	for (size_t i = 0; i < n; i++, s += bs, o += KRN_X8 * bs) {
		const void *blk[KRN_X8];
		for (int r = 0; r < KRN_X8; r++)
			blk[r] = s + (size_t)r * row_bytes;
		pack(o, blk);
	}
}

/* The packers' word arithmetic (x8_legacy.c, x8_kquants.c): a 32-bit word of each of the
 * eight rows, row r in lane r as in the layouts, so one value is one 32-byte chunk of a
 * layout and the arithmetic on it is vector code (GCC's and clang's vector extension: the
 * same C on every ISA). Words are gathered by building the vector from eight loads: written
 * into an array first, they were read back before the stores had retired (a store-forwarding
 * stall per chunk, which made q5_0's packing slower than row by row). */
typedef uint32_t krn_x8_lanes __attribute__((vector_size(4 * KRN_X8)));

static inline uint32_t krn_x8_word(const void *p, size_t off)
{
	uint32_t w;
	memcpy(&w, (const uint8_t *)p + off, sizeof(w));
	return w;
}

/* *v = the 32-bit word at byte off of each of the eight blocks. Through a pointer: a vector
 * passed or returned by value has another ABI with AVX than without (GCC's -Wpsabi). */
static inline void krn_x8_lanes_at(krn_x8_lanes *v, const void *const src[KRN_X8], size_t off)
{
	*v = (krn_x8_lanes){ krn_x8_word(src[0], off), krn_x8_word(src[1], off),
			     krn_x8_word(src[2], off), krn_x8_word(src[3], off),
			     krn_x8_word(src[4], off), krn_x8_word(src[5], off),
			     krn_x8_word(src[6], off), krn_x8_word(src[7], off) };
}


/* The 16 bytes at byte off of each of the eight blocks, as four words per row, transposed:
 * w[c] = word c of the eight rows (a chunk), each word xor flip (q8_0's sign flip; 0 for a
 * plain move). Where the compiler has __builtin_shufflevector (GCC 12, clang): rows r and
 * r + 4 in one vector and a 4 x 4 transpose within its halves (SSE's _MM_TRANSPOSE4_PS
 * pattern; eight shuffles), where building each chunk from eight word loads
 * (krn_x8_lanes_at) costs four times the instructions: q4_0 packed at 1.4x the word moves'
 * rate from L2 (Zen 4). */
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define KRN_X8_SHUFFLE 1
#endif
#endif
#ifdef KRN_X8_SHUFFLE
typedef uint32_t krn_x8_quad __attribute__((vector_size(16)));

static inline void krn_x8_words4(krn_x8_lanes w[4], const void *const src[KRN_X8], size_t off,
				 uint32_t flip)
{
	krn_x8_lanes y[4];
	for (int r = 0; r < 4; r++) {
		krn_x8_quad lo, hi;
		memcpy(&lo, (const uint8_t *)src[r] + off, sizeof(lo));
		memcpy(&hi, (const uint8_t *)src[r + 4] + off, sizeof(hi));
		y[r] = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7) ^ flip;
	}
	krn_x8_lanes t0 = __builtin_shufflevector(y[0], y[1], 0, 8, 1, 9, 4, 12, 5, 13);
	krn_x8_lanes t1 = __builtin_shufflevector(y[0], y[1], 2, 10, 3, 11, 6, 14, 7, 15);
	krn_x8_lanes t2 = __builtin_shufflevector(y[2], y[3], 0, 8, 1, 9, 4, 12, 5, 13);
	krn_x8_lanes t3 = __builtin_shufflevector(y[2], y[3], 2, 10, 3, 11, 6, 14, 7, 15);
	w[0] = __builtin_shufflevector(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);
	w[1] = __builtin_shufflevector(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);
	w[2] = __builtin_shufflevector(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);
	w[3] = __builtin_shufflevector(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);
}
#else
static inline void krn_x8_words4(krn_x8_lanes w[4], const void *const src[KRN_X8], size_t off,
				 uint32_t flip)
{
	for (int c = 0; c < 4; c++) {
		krn_x8_lanes_at(&w[c], src, off + 4 * (size_t)c);
		w[c] ^= flip;
	}
}
#endif

/* krn_x8_words4's four chunks written at o, o + stride, o + 2 stride, o + 3 stride: most of
 * what the layouts whose packing only moves words do (q4_0, q4_1, q8_0, q2_K, q3_K, q4_K). */
static inline void krn_x8_transpose4(uint8_t *o, size_t stride, const void *const src[KRN_X8],
				     size_t off, uint32_t flip)
{
	krn_x8_lanes w[4];
	krn_x8_words4(w, src, off, flip);
	for (int c = 0; c < 4; c++)
		memcpy(o + (size_t)c * stride, &w[c], sizeof(w[c]));
}

#endif
