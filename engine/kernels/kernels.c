/* engine/kernels/kernels.c: the registry of ISA tables and the run-time choice among them.
 *
 * One line per table, best first. meson defines KRN_HAVE_<ISA> for each ISA file it compiled
 * (engine/kernels/meson.build), so a table the compiler could not build is simply absent.
 */
#include <string.h>

#include "kernels.h"

static const struct krn_ops *const tables[] = {
#ifdef KRN_HAVE_AVX512
	&krn_ops_avx512,
#endif
#ifdef KRN_HAVE_AVX2
	&krn_ops_avx2,
#endif
#ifdef KRN_HAVE_NEON
	&krn_ops_neon,
#endif
	&krn_ops_ref,
};

const struct krn_ops *const *krn_ops_all(size_t *n)
{
	*n = sizeof(tables) / sizeof(tables[0]);
	return tables;
}

const struct krn_ops *krn_ops_find(const char *name)
{
	bool best = !name || !strcmp(name, "auto");
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		if (!best && strcmp(tables[i]->name, name))
			continue;
		if (tables[i]->supported())
			return tables[i];
		if (!best)
			return NULL;
	}
	return NULL;
}

/* 32 rows of 4544 floats (Falcon-7B's width) are 580 KB, within Zen 4's 1 MB L2. */
#define MATMUL_BLOCK_ROWS 32

void krn_matmul_f32(const struct krn_ops *ops, float *y, size_t ldy, const float *w,
		    const float *x, size_t ldx, size_t n_tok, size_t n, size_t r0, size_t r1)
{
	if (ops->matmul_f32) {
		ops->matmul_f32(y, ldy, w, x, ldx, n_tok, n, r0, r1);
		return;
	}
	for (size_t a = r0; a < r1; a += MATMUL_BLOCK_ROWS) {
		size_t b = r1 - a < MATMUL_BLOCK_ROWS ? r1 : a + MATMUL_BLOCK_ROWS;
		for (size_t k = 0; k < n_tok; k++)
			ops->matvec_f32(y + k * ldy, w, x + k * ldx, n, a, b);
	}
}

void krn_silu_glu(const struct krn_ops *ops, float *g, const float *u, size_t n)
{
	(ops->silu_glu ? ops->silu_glu : krn_ops_ref.silu_glu)(g, u, n);
}

float krn_exp_sub(const struct krn_ops *ops, float *x, float sub, size_t n)
{
	return (ops->exp_sub ? ops->exp_sub : krn_ops_ref.exp_sub)(x, sub, n);
}
