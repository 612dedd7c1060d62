/* engine/quants/quants.h: ggml's tensor types, their block layouts and their kernels.
 *
 * Two tables, as in ggml (ggml.c's type_traits and ggml-cpu.c's type_traits_cpu):
 *  - krn_type_traits(t): what a type *is*: name, block size, bytes per block, the type its
 *    activations are quantized to before a dot product (vec_dot_type), a dequantizer and the
 *    reference quantizer that writes model files. One table, ISA-independent.
 *  - struct krn_quant_ops: what a CPU *does* with it: one table per ISA (ref.c, x86/avx2.c,
 *    x86/avx512.c, arm/neon.c), each with vec_dot[type] and quantize_act[type]. An entry an ISA
 *    leaves NULL falls back to ref when the table is looked up (quants.c).
 *
 * Type ids are ggml's GGML_TYPE_* values, so a GGUF tensor's type field indexes these tables
 * directly. Block layouts follow ggml-common.h and are pinned with static_assert below: they
 * are on-disk formats.
 *
 * Numerics follow ggml-cpu on x86: activations are quantized with quantize_act (x86 ggml's
 * from_float: scale 127/amax, round half to even) and dotted with the weight block by block,
 * integer sums first, then scaled, so results track llama.cpp to float rounding.
 *
 * The types and the tables' shapes are in types.h, which this includes; what is declared here
 * are the functions around them, for the engine: the registry (quants.c) and the x8 layout
 * (x8.c).
 *
 * Internal to engine/.
 */
#ifndef MEMWALL_QUANTS_H
#define MEMWALL_QUANTS_H

#include "types.h"

/* ---- Around the type table and the per-ISA tables (quants.c) ------------------------------ */

/* The type named name (ggml's spelling, case-insensitive), or -1. */
int krn_type_from_name(const char *name);
/* Bytes of a row of n elements of type t; 0 if n is not a multiple of the block size or t is
 * unknown. */
size_t krn_row_size(uint32_t t, uint64_t n);

/* Every table compiled in, best first, with NULL entries already filled from ref; *n receives
 * the count. Static storage. */
const struct krn_quant_ops *const *krn_quant_ops_all(size_t *n);
/* The table named name, or the best supported one for NULL or "auto"; NULL when the name is
 * unknown or not supported on this CPU. Static storage. */
const struct krn_quant_ops *krn_quant_ops_find(const char *name);

/* y[r] = dot(row r of w, xq) for r in [r0, r1): w holds rows of n elements of type t, xq the
 * activation already quantized to t's vec_dot_type (krn_ops' matvec_f32 convention). */
void krn_quant_matvec(const struct krn_quant_ops *ops, uint32_t t, float *y, const void *w,
		      const void *xq, size_t n, size_t r0, size_t r1);

/* ---- The x8 layout (x8.c) ------------------------------------------------------------------ */

/* The x8 layout of type t, or NULL where t has none. Static storage. */
const struct krn_x8_layout *krn_x8_layout(uint32_t t);
/* True when ops has a kernel of its own for type t in the x8 layout: repacking for it pays. */
bool krn_quant_x8_native(const struct krn_quant_ops *ops, uint32_t t);
/* The scratch krn_x8_repack needs for `rows` rows of n elements of type t: eight rows where a
 * row is one tile, else the whole tensor. */
size_t krn_x8_repack_scratch(uint32_t t, size_t n, size_t rows);
/* Repacks `rows` rows (a multiple of KRN_X8) of n elements of type t at w, in place, into the
 * x8 layout; tmp holds krn_x8_repack_scratch bytes. */
void krn_x8_repack(uint32_t t, void *w, size_t n, size_t rows, void *tmp);
/* Out of place: groups [g0, g1) of eight rows of the plain tensor src (rows rows of n
 * elements of type t) written where the x8 layout of the whole tensor puts them in dst; the
 * rest of dst is left alone, so threads may pack disjoint group ranges of one tensor at once.
 * Only those groups' bytes of src are read (src may be a copy of just them, at their offsets).
 * All groups give the bytes krn_x8_repack gives in place. */
void krn_x8_pack(uint32_t t, void *dst, const void *src, size_t n, size_t rows, size_t g0,
		 size_t g1);
/* Copies row r of an x8 tensor of `rows` rows of n elements of type t into dst, in the plain
 * layout. */
void krn_x8_row(uint32_t t, const void *w, size_t rows, size_t n, size_t r, void *dst);
/* krn_quant_matvec for weights in the x8 layout; r0 and r1 multiples of KRN_X8. */
void krn_quant_matvec_x8(const struct krn_quant_ops *ops, uint32_t t, float *y, const void *w,
			 size_t rows, const void *xq, size_t n, size_t r0, size_t r1);

/* Several tokens at once (types.h's krn_matmul_x8_fn convention): y[t * ldy + r] = dot(row r
 * of w, token t's activation at (const char *)xq + t * ldx) for r in [r0, r1), t in
 * [0, n_tok). w has `rows` rows of n elements of type t, plain or (x8) in the x8 layout, in
 * which case r0 and r1 are multiples of KRN_X8. Where ops has a matmul_x8 kernel for the type
 * it runs; everywhere else (plain rows, every type, every ISA: the reference path) the rows are
 * taken a block at a time and the one-token kernels run over the tokens, so the block is read
 * from the caches for all but the first. Either way each token's result has the bits that
 * krn_quant_matvec / krn_quant_matvec_x8 give it alone. */
void krn_quant_matmul(const struct krn_quant_ops *ops, uint32_t t, bool x8, float *y,
		      size_t ldy, const void *w, size_t rows, const void *xq, size_t ldx,
		      size_t n_tok, size_t n, size_t r0, size_t r1);

/* Attention over `rows` cached F16 positions (rows ldx elements apart): s[r] = row r of x . y
 * (n elements each), and y[i] += a[r] * x[r * ldx + i] for r in order, i < n. The table's
 * dot_f16_rows / axpy_f16_rows where it has them, else its vec_dot[F16] / axpy_f16 row by
 * row: the same bits either way. */
void krn_dot_f16_rows(const struct krn_quant_ops *ops, size_t n, float *s, const uint16_t *x,
		      size_t ldx, size_t rows, const uint16_t *y);
void krn_axpy_f16_rows(const struct krn_quant_ops *ops, float *y, const float *a,
		       const uint16_t *x, size_t ldx, size_t rows, size_t n);
/* ops->dot_f16_heads and ops->axpy_f16_heads (types.h) where the table has them, else its
 * vec_dot[F16] and axpy_f16 head by head. */
void krn_dot_f16_heads(const struct krn_quant_ops *ops, size_t n, float *s, size_t lds,
		       const uint16_t *x, size_t ldx, size_t rows, const uint16_t *y, int h0,
		       int h1, int kv_mul);
void krn_axpy_f16_heads(const struct krn_quant_ops *ops, float *y, const float *a, size_t lda,
			const uint16_t *x, size_t ldx, size_t rows, size_t n, int h0, int h1,
			int kv_mul);

/* ops->round_f16 (types.h) where the table has one, else quantize_act[F16] into tmp (n
 * halves) and back. */
void krn_round_f16(const struct krn_quant_ops *ops, float *x, uint16_t *tmp, size_t n);

#endif
