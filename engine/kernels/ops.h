/* engine/kernels/ops.h: the ops table that hides each instruction set.
 *
 * One table per ISA (ref.c, x86/avx2.c, x86/avx512.c, arm/neon.c), one line per table in
 * kernels.c's registry. The engine calls only through a `const struct krn_ops *`, so adding an
 * ISA is one file plus one line, and no function body carries `#if __AVX2__` chains.
 *
 * Each ISA file is compiled with only its own -m flags (engine/kernels/meson.build), so nothing
 * in it may run before its table's supported() said yes; supported() itself lives in a file
 * compiled without ISA flags (x86/cpu.c) for that reason.
 *
 * Conventions for every kernel: no alignment is assumed (pointers only need float alignment),
 * any n >= 0 is valid (tails are handled inside), and arrays passed as distinct arguments do not
 * overlap unless a comment says so. Results may differ from ref.c by reassociation only: each
 * table may split a reduction into as many partial sums as it likes (tests/engine/test_kernels.c
 * states the tolerance that allows).
 *
 * The ISA files include this and not kernels.h, whose registry (kernels.c) lists their
 * tables: the tables depend on this contract, the registry on the tables, never round.
 *
 * Internal to engine/: src/ reaches kernels only through engine.h.
 */
#ifndef MEMWALL_KERNELS_OPS_H
#define MEMWALL_KERNELS_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct krn_ops {
	const char *name; /* "ref", "avx2", "avx512", "neon" */
	/* True when the running CPU and OS can execute this table (cpuid + xgetbv, hwcaps). */
	bool (*supported)(void);

	/* y[r] = dot(w[r * n .. r * n + n), x) for r in [r0, r1). w is row-major (rows, n);
	 * y is indexed by absolute row and y outside [r0, r1) is left alone. The decode step's hot
	 * loop: it streams (r1 - r0) * n * 4 bytes of weights that are not in any cache. */
	void (*matvec_f32)(float *y, const float *w, const float *x, size_t n, size_t r0,
			   size_t r1);
	/* Several tokens against one pass over w: y[t * ldy + r] = dot(w row r, x + t * ldx) for
	 * r in [r0, r1) and t in [0, n_tok). Token by token the same bits as this table's
	 * matvec_f32 (a prompt run in chunks agrees exactly with one run token by token); what
	 * changes is that each row is loaded once for several tokens. Optional: NULL where a
	 * table has none, and krn_matmul_f32 (kernels.h) loops matvec_f32 instead. */
	void (*matmul_f32)(float *y, size_t ldy, const float *w, const float *x, size_t ldx,
			   size_t n_tok, size_t n, size_t r0, size_t r1);
	float (*dot_f32)(const float *a, const float *b, size_t n);
	/* y[i] += a * x[i] */
	void (*axpy_f32)(float *y, float a, const float *x, size_t n);
	/* SwiGLU's gate times up: g[i] = g[i] * (1 / (1 + exp(-g[i]))) * u[i], in that order
	 * in float, exp being exp.h's (within an ulp of expf; see there). Each result depends
	 * only on g[i] and u[i], never on i or n, so a row gets the same bits in decode's row
	 * range and in prefill's. Optional: NULL where a table has none, and krn_silu_glu
	 * (kernels.h) runs ref's instead. */
	void (*silu_glu)(float *g, const float *u, size_t n);
	/* x[i] = exp(x[i] - sub), the difference rounded to float first, exp exp.h's: softmax's
	 * exponentials. Like silu_glu, a result depends only on x[i] and sub. Returns the sum of
	 * the results, added in the table's own order, which depends on n only. Optional: NULL
	 * where a table has none, and krn_exp_sub (kernels.h) runs ref's. */
	float (*exp_sub)(float *x, float sub, size_t n);

	/* Memory streaming, for the bandwidth probe (engine/roof/stream.c). The kernels of McCalpin's
	 * STREAM benchmark (https://www.cs.virginia.edu/stream/ref.html) plus a read-only one.
	 * n counts floats. The *_nt variants write with non-temporal stores (no write-allocate
	 * read of the destination, no cache pollution) and end with a store fence; a table
	 * without such stores leaves them NULL. */
	/* Loads a[0..n) and returns their sum, so the loads cannot be optimised away. */
	float (*stream_read)(const float *a, size_t n);
	/* dst[i] = src[i] */
	void (*stream_copy)(float *dst, const float *src, size_t n);
	void (*stream_copy_nt)(float *dst, const float *src, size_t n);
	/* a[i] = b[i] + s * c[i] */
	void (*stream_triad)(float *a, const float *b, const float *c, float s, size_t n);
	void (*stream_triad_nt)(float *a, const float *b, const float *c, float s, size_t n);
};

/* The tables, one per ISA file. Only those that meson compiled exist (KRN_HAVE_<ISA> tells
 * kernels.c which); everyone else goes through krn_ops_all() or krn_ops_find(). */
extern const struct krn_ops krn_ops_ref;
extern const struct krn_ops krn_ops_avx2;
extern const struct krn_ops krn_ops_avx512;
extern const struct krn_ops krn_ops_neon;

/* x86 feature checks for the tables' supported(): x86/cpu.h, shared with quants/. */
#include "x86/cpu.h"

#endif
