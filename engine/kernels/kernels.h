/* engine/kernels/kernels.h: the registry of ISA tables (kernels.c), for the engine.
 *
 * The table's shape, its conventions and the tables themselves are in ops.h, which this
 * includes. The engine calls only through a `const struct krn_ops *` got from here.
 *
 * Internal to engine/: src/ reaches kernels only through engine.h.
 */
#ifndef MEMWALL_KERNELS_H
#define MEMWALL_KERNELS_H

#include <stddef.h>

#include "ops.h"

/* Every table compiled into this build, best first; *n receives the count. Static storage. */
const struct krn_ops *const *krn_ops_all(size_t *n);
/* The table named `name`, or the best supported one for NULL or "auto". NULL when the name is
 * unknown or that ISA is not supported on this CPU. Static storage. */
const struct krn_ops *krn_ops_find(const char *name);

/* ops->matmul_f32 (ops.h) where the table has one; otherwise its matvec_f32 over the tokens, a
 * block of rows at a time, so each block is read from the caches for all but the first. */
void krn_matmul_f32(const struct krn_ops *ops, float *y, size_t ldy, const float *w,
		    const float *x, size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1);

/* ops->silu_glu (ops.h) where the table has one, ref's otherwise. */
void krn_silu_glu(const struct krn_ops *ops, float *g, const float *u, size_t n);
/* ops->exp_sub (ops.h) where the table has one, ref's otherwise; returns its sum. */
float krn_exp_sub(const struct krn_ops *ops, float *x, float sub, size_t n);

#endif
