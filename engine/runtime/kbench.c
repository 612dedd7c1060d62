/* engine/runtime/kbench.c: how fast each quant table this CPU runs does one weight type's x8
 * kernels, for each class of token counts (engine.h's eng_kbench_run), so that `memwall
 * bench-kernels` can choose the fastest table per operation (struct eng_kernel_choice,
 * issue 42).
 *
 * The method is tests/bench/bench_quants.c's: rows of a quantized row repeated (the bytes are
 * what matter, not their values), repacked into the x8 layout, in 2 MiB pages as the
 * engine's copies are, enough of them that a pass streams from DRAM as a decode step does.
 * Each round times every table once, in an order that rotates from round to round, and
 * each table's rate is also taken against the first table's in the same round: on a shared
 * machine the ratio is the figure to trust, since noise from other processes hits a round's
 * calls alike. One thread, the caller's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "engine.h"
#include "quants.h"

#define KB_HUGE ((size_t)2 << 20)
#define KB_TOK_MAX 8 /* the largest class's tokens */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* uniform in [-1, 1), a fixed sequence */
static float next_unit(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((int64_t)(*s >> 11) % 2000) / 1000.0f;
}

/* The weights: rows copies of one quantized row of n elements, repacked into the x8 layout,
 * in 2 MiB pages where the kernel gives them. NULL when out of memory. */
static uint8_t *make_weights(uint32_t t, size_t n, size_t rows, size_t *len)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	size_t row = krn_row_size(t, n);
	*len = (rows * row + KB_HUGE - 1) / KB_HUGE * KB_HUGE;
	uint8_t *w = aligned_alloc(KB_HUGE, *len);
	float *f = malloc(n * sizeof(float));
	uint8_t *tmp = malloc(krn_x8_repack_scratch(t, n, rows));
	if (!w || !f || !tmp) {
		free(w);
		w = NULL;
		goto out;
	}
	(void)madvise(w, *len, MADV_HUGEPAGE); /* advice: failure is harmless */
	uint64_t s = 12345;
	for (size_t i = 0; i < n; i++)
		f[i] = 0.05f * next_unit(&s);
	tr->from_float_ref(f, w, n);
	for (size_t r = 1; r < rows; r++)
		memcpy(w + r * row, w, row);
	krn_x8_repack(t, w, n, rows, tmp);
out:
	free(f);
	free(tmp);
	return w;
}

/* One call of `tok` tokens of table ops over the whole tensor */
static void run_once(const struct krn_quant_ops *ops, uint32_t t, float *y, const uint8_t *w,
		     size_t rows, const uint8_t *xq, size_t ab, int tok, size_t n)
{
	if (tok == 1)
		krn_quant_matvec_x8(ops, t, y, w, rows, xq, n, 0, rows);
	else
		krn_quant_matmul(ops, t, true, y, rows, w, rows, xq, ab, (size_t)tok, n, 0, rows);
}

/* The rounds of one class: out->r[i] for each of the n tables */
static void time_class(const struct krn_quant_ops *const *tab, int n_tab, uint32_t t, int tok,
		       float *y, const uint8_t *w, size_t rows, const uint8_t *xq, size_t ab,
		       size_t n, int rounds, struct eng_kbench *out)
{
	double gbs[ENG_KBENCH_MAX][ENG_KBENCH_ROUNDS_MAX], ratio[ENG_KBENCH_MAX][ENG_KBENCH_ROUNDS_MAX];
	const double bytes = (double)rows * (double)krn_row_size(t, n) * tok;
	for (int i = 0; i < n_tab; i++) /* warm-up: the pages, the caches, the clocks */
		run_once(tab[i], t, y, w, rows, xq, ab, tok, n);
	for (int k = 0; k < rounds; k++) {
		for (int j = 0; j < n_tab; j++) {
			int i = (j + k) % n_tab;
			double t0 = now_s();
			run_once(tab[i], t, y, w, rows, xq, ab, tok, n);
			gbs[i][k] = bytes / (now_s() - t0) / 1e9;
		}
		for (int i = 0; i < n_tab; i++)
			ratio[i][k] = gbs[i][k] / gbs[0][k];
	}
	out->n = n_tab;
	out->tokens = tok;
	for (int i = 0; i < n_tab; i++) {
		out->r[i].table = tab[i]->name;
		out->r[i].gbs = median(gbs[i], rounds);
		out->r[i].ratio = median(ratio[i], rounds);
	}
}

int eng_kbench_run(const char *type, const struct eng_kbench_options *o, struct eng_kbench *out,
		   struct eng_error *err)
{
	int t = krn_type_from_name(type);
	if (t < 0 || !krn_x8_layout((uint32_t)t) || !krn_type_traits((uint32_t)t)->from_float_ref)
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "'%s' is not a weight type with an x8 layout", type);
	const struct krn_type_traits *tr = krn_type_traits((uint32_t)t);
	size_t n = o && o->columns ? o->columns : 4096, row = krn_row_size((uint32_t)t, n);
	double mb = o && o->mb > 0 ? o->mb : 128;
	int rounds = o && o->rounds > 0 ? o->rounds : 7;
	if (!row)
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "%zu columns are not whole blocks of %s (%u elements)", n,
				     tr->name, tr->block_size);
	if (rounds > ENG_KBENCH_ROUNDS_MAX)
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "%d rounds: at most %d", rounds, ENG_KBENCH_ROUNDS_MAX);
	size_t n_all;
	const struct krn_quant_ops *const *all = krn_quant_ops_all(&n_all);
	const struct krn_quant_ops *tab[ENG_KBENCH_MAX];
	int n_tab = 0;
	for (size_t i = 0; i < n_all && n_tab < ENG_KBENCH_MAX; i++)
		if (all[i]->supported() && krn_quant_x8_native(all[i], (uint32_t)t))
			tab[n_tab++] = all[i];
	if (!n_tab)
		return eng_error_set(err, -ENOTSUP, "", ENG_NO_OFFSET,
				     "no quant table this CPU runs has x8 kernels for %s", tr->name);
	size_t rows = (size_t)(mb * 1e6 / (double)row) / KRN_X8 * KRN_X8, len = 0;
	if (rows < KRN_X8)
		rows = KRN_X8;
	const uint32_t vt = tr->vec_dot_type;
	size_t ab = krn_row_size(vt, n);
	uint8_t *w = make_weights((uint32_t)t, n, rows, &len);
	float *y = malloc(rows * KB_TOK_MAX * sizeof(float)), *f = malloc(n * sizeof(float));
	uint8_t *xq = malloc(KB_TOK_MAX * ab);
	int rc = 0;
	if (!w || !y || !f || !xq) {
		rc = eng_error_set(err, -ENOMEM, "", ENG_NO_OFFSET,
				   "out of memory for %.0f MB of %s weights", mb, tr->name);
		goto out;
	}
	/* every table quantizes activations to the same bytes (quants.h) */
	uint64_t s = 777;
	for (int k = 0; k < KB_TOK_MAX; k++) {
		for (size_t i = 0; i < n; i++)
			f[i] = 2.0f * next_unit(&s);
		tab[0]->quantize_act[vt](f, xq + (size_t)k * ab, n);
	}
	for (int c = 0; c < ENG_KC_CLASSES; c++) {
		time_class(tab, n_tab, (uint32_t)t, eng_kernel_class_tokens(c), y, w, rows, xq, ab,
			   n, rounds, &out[c]);
		out[c].rows = rows;
		out[c].columns = n;
		out[c].mb = (double)(rows * row) / 1e6;
		out[c].rounds = rounds;
	}
out:
	free(w);
	free(y);
	free(f);
	free(xq);
	return rc;
}
