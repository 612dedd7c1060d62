/* engine/quants/quants.c: the registry of per-ISA quant tables, and the helpers around the
 * type table.
 *
 * Each ISA file may leave entries NULL (a type it has no fast path for); the registry hands
 * out copies with those entries taken from the table's base, then from ref, so callers never
 * test for NULL. Which ISA files exist is decided by meson (KRN_QUANTS_HAVE_* below), whether
 * one runs here by its supported() at run time.
 */
#include <pthread.h>
#include <strings.h>

#include "quants.h"
#include "internal.h"

static const struct krn_quant_ops *const compiled[] = {
#ifdef KRN_QUANTS_HAVE_AVX512
	&krn_quant_ops_avx512,
#endif
#ifdef KRN_QUANTS_HAVE_AVX2
	&krn_quant_ops_avx2,
#endif
#ifdef KRN_QUANTS_HAVE_NEON
	&krn_quant_ops_neon,
#endif
	&krn_quant_ops_ref,
};
#define N_COMPILED (sizeof(compiled) / sizeof(compiled[0]))

static struct krn_quant_ops filled[N_COMPILED];
static const struct krn_quant_ops *filled_ptrs[N_COMPILED];
static pthread_once_t fill_once = PTHREAD_ONCE_INIT;

static void fill_tables(void)
{
	krn_fp16_table_fill();
	for (size_t i = 0; i < N_COMPILED; i++) {
		struct krn_quant_ops *o = &filled[i];
		*o = *compiled[i];
		for (const struct krn_quant_ops *b = compiled[i]->base; b; b = b->base) {
			for (int t = 0; t < KRN_TYPE_COUNT; t++) {
				if (!o->vec_dot[t])
					o->vec_dot[t] = b->vec_dot[t];
				if (!o->quantize_act[t])
					o->quantize_act[t] = b->quantize_act[t];
				if (!o->matvec_x8[t])
					o->matvec_x8[t] = b->matvec_x8[t];
			}
		}
		for (const struct krn_quant_ops *b = compiled[i]->base; b && !o->axpy_f16; b = b->base)
			o->axpy_f16 = b->axpy_f16;
		if (!o->axpy_f16)
			o->axpy_f16 = krn_quant_ops_ref.axpy_f16;
		for (int t = 0; t < KRN_TYPE_COUNT; t++) {
			if (!o->vec_dot[t])
				o->vec_dot[t] = krn_quant_ops_ref.vec_dot[t];
			if (!o->quantize_act[t])
				o->quantize_act[t] = krn_quant_ops_ref.quantize_act[t];
		}
		filled_ptrs[i] = o;
	}
}

const struct krn_quant_ops *const *krn_quant_ops_all(size_t *n)
{
	pthread_once(&fill_once, fill_tables);
	*n = N_COMPILED;
	return filled_ptrs;
}

const struct krn_quant_ops *krn_quant_ops_find(const char *name)
{
	size_t n;
	const struct krn_quant_ops *const *all = krn_quant_ops_all(&n);
	bool any = !name || !strcmp(name, "auto");
	for (size_t i = 0; i < n; i++) {
		if (any && all[i]->supported())
			return all[i];
		if (!any && !strcmp(all[i]->name, name))
			return all[i]->supported() ? all[i] : NULL;
	}
	return NULL;
}

int krn_type_from_name(const char *name)
{
	for (uint32_t t = 0; t < KRN_TYPE_COUNT; t++) {
		const struct krn_type_traits *tr = krn_type_traits(t);
		if (tr && !strcasecmp(tr->name, name))
			return (int)t;
	}
	return -1;
}

size_t krn_row_size(uint32_t t, uint64_t n)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	if (!tr || n % tr->block_size)
		return 0;
	return (size_t)(n / tr->block_size * tr->type_size);
}

void krn_quant_matvec(const struct krn_quant_ops *ops, uint32_t t, float *y, const void *w,
		      const void *xq, size_t n, size_t r0, size_t r1)
{
	krn_vec_dot_fn dot = ops->vec_dot[t];
	size_t row = krn_row_size(t, n);
	if (ops->matvec[t]) {
		ops->matvec[t](y, w, row, xq, n, r0, r1);
		return;
	}
	const uint8_t *p = (const uint8_t *)w + r0 * row;
	for (size_t r = r0; r < r1; r++, p += row)
		dot(n, &y[r], p, xq);
}

void krn_dot_f16_rows(const struct krn_quant_ops *ops, size_t n, float *s, const uint16_t *x,
		      size_t ldx, size_t rows, const uint16_t *y)
{
	if (ops->dot_f16_rows) {
		ops->dot_f16_rows(n, s, x, ldx, rows, y);
		return;
	}
	for (size_t r = 0; r < rows; r++)
		ops->vec_dot[KRN_TYPE_F16](n, s + r, x + r * ldx, y);
}

void krn_axpy_f16_rows(const struct krn_quant_ops *ops, float *y, const float *a,
		       const uint16_t *x, size_t ldx, size_t rows, size_t n)
{
	if (ops->axpy_f16_rows) {
		ops->axpy_f16_rows(y, a, x, ldx, rows, n);
		return;
	}
	for (size_t r = 0; r < rows; r++)
		ops->axpy_f16(y, a[r], x + r * ldx, n);
}

void krn_dot_f16_heads(const struct krn_quant_ops *ops, size_t n, float *s, size_t lds,
		       const uint16_t *x, size_t ldx, size_t rows, const uint16_t *y, int h0,
		       int h1, int kv_mul)
{
	if (ops->dot_f16_heads) {
		ops->dot_f16_heads(n, s, lds, x, ldx, rows, y, h0, h1, kv_mul);
		return;
	}
	for (size_t t = 0; t < rows; t++)
		for (int h = h0; h < h1; h++)
			ops->vec_dot[KRN_TYPE_F16](n, s + (size_t)(h - h0) * lds + t,
						   x + t * ldx + (size_t)(h / kv_mul) * n,
						   y + (size_t)(h - h0) * n);
}

void krn_axpy_f16_heads(const struct krn_quant_ops *ops, float *y, const float *a, size_t lda,
			const uint16_t *x, size_t ldx, size_t rows, size_t n, int h0, int h1,
			int kv_mul)
{
	if (ops->axpy_f16_heads) {
		ops->axpy_f16_heads(y, a, lda, x, ldx, rows, n, h0, h1, kv_mul);
		return;
	}
	for (size_t t = 0; t < rows; t++)
		for (int h = h0; h < h1; h++)
			ops->axpy_f16(y + (size_t)(h - h0) * n, a[(size_t)(h - h0) * lda + t],
				      x + t * ldx + (size_t)(h / kv_mul) * n, n);
}

void krn_round_f16(const struct krn_quant_ops *ops, float *x, uint16_t *tmp, size_t n)
{
	if (ops->round_f16) {
		ops->round_f16(x, n);
		return;
	}
	ops->quantize_act[KRN_TYPE_F16](x, tmp, n);
	for (size_t i = 0; i < n; i++)
		x[i] = krn_fp16_to_fp32(tmp[i]);
}
