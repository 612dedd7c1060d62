/* engine/quants/quants_impl.h: what the per-ISA files share with the registry. Internal to
 * engine/quants/.
 *
 * It includes types.h and not quants.h: the files behind the tables (ref.c, the ISA files,
 * fp16.c, x86/cpu.c) never see the registry that lists them. */
#ifndef MEMWALL_QUANTS_IMPL_H
#define MEMWALL_QUANTS_IMPL_H

#include "types.h"

/* One table per ISA file; the registry (quants.c) lists those compiled in. */
extern const struct krn_quant_ops krn_quant_ops_ref;
extern const struct krn_quant_ops krn_quant_ops_avx2;
extern const struct krn_quant_ops krn_quant_ops_avx512;
extern const struct krn_quant_ops krn_quant_ops_neon;

/* Run-time checks for the x86 tables (x86/cpu.c, built without ISA flags). The AVX-512 table
 * needs F, BW, VL, DQ, VNNI, VBMI, VBMI2, GFNI and BITALG (Ice Lake, Zen 4 and later); other
 * AVX-512 CPUs use AVX2. */
bool krn_quants_cpu_avx2(void);
bool krn_quants_cpu_avx512(void);

/* fp16 -> fp32 for every half (fp16.c), filled by the registry (quants.c) through
 * krn_fp16_table_fill before any table is handed out: the SIMD kernels convert their
 * per-block scales with one load. */
extern float krn_fp16_table[1 << 16];
void krn_fp16_table_fill(void);

/* ref.c's activation quantizers, for SIMD files that handle only the bulk of a row. */
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


/* The 16 bytes at byte off of each of the eight blocks, as four words per row, written
 * transposed: word c of row r at o + c * stride + 4r (chunk c: word c of the eight rows side
 * by side), each word xor flip (q8_0's sign flip; 0 for a plain move). This is most of what
 * the layouts whose packing only moves words do (q4_0, q4_1, q8_0, q2_K, q3_K, q4_K). Where
 * the compiler has __builtin_shufflevector (GCC 12, clang), a 4 x 4 transpose of 16-byte
 * vectors per four rows, as SSE's _MM_TRANSPOSE4_PS: q4_0 packed at 1.4x the word moves' rate
 * from L2 (Zen 4); otherwise the word moves. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define KRN_X8_SHUFFLE 1
#endif
#endif
#ifdef KRN_X8_SHUFFLE
typedef uint32_t krn_x8_quad __attribute__((vector_size(16)));

static inline void krn_x8_transpose4(uint8_t *o, size_t stride, const void *const src[KRN_X8],
				     size_t off, uint32_t flip)
{
	for (int h = 0; h < 2; h++) {
		krn_x8_quad y[4];
		for (int r = 0; r < 4; r++) {
			memcpy(&y[r], (const uint8_t *)src[4 * h + r] + off, sizeof(y[r]));
			y[r] ^= flip;
		}
		krn_x8_quad t0 = __builtin_shufflevector(y[0], y[1], 0, 4, 1, 5);
		krn_x8_quad t1 = __builtin_shufflevector(y[0], y[1], 2, 6, 3, 7);
		krn_x8_quad t2 = __builtin_shufflevector(y[2], y[3], 0, 4, 1, 5);
		krn_x8_quad t3 = __builtin_shufflevector(y[2], y[3], 2, 6, 3, 7);
		krn_x8_quad u[4] = { __builtin_shufflevector(t0, t2, 0, 1, 4, 5),
				     __builtin_shufflevector(t0, t2, 2, 3, 6, 7),
				     __builtin_shufflevector(t1, t3, 0, 1, 4, 5),
				     __builtin_shufflevector(t1, t3, 2, 3, 6, 7) };
		for (int c = 0; c < 4; c++)
			memcpy(o + (size_t)c * stride + 16 * h, &u[c], sizeof(u[c]));
	}
}
#else
static inline void krn_x8_transpose4(uint8_t *o, size_t stride, const void *const src[KRN_X8],
				     size_t off, uint32_t flip)
{
	for (int r = 0; r < KRN_X8; r++)
		for (int c = 0; c < 4; c++) {
			uint32_t w = krn_x8_word(src[r], off + 4 * (size_t)c) ^ flip;
			memcpy(o + (size_t)c * stride + 4 * r, &w, sizeof(w));
		}
}
#endif

#endif
