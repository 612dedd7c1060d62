/* tests/bench_quants.c: how fast each ISA's quant matvec streams weights, in GB/s of weight
 * bytes, one thread.
 *
 * For each type: a weight matrix of n = 4096 columns and enough rows for `mb` MB (default 96,
 * three times a 32 MB L3, so the weights come from DRAM as in decoding), one activation
 * vector quantized to the type's vec_dot_type, then `reps` full matvecs per ISA. Prints the
 * median and best pass. A second, cache-resident size (1 MB) shows the kernels' compute
 * ceiling. Usage: bench_quants [mb] [reps] [type...]
 *
 * Run it on an idle machine; on a shared one, compare ratios measured side by side.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quants/quants.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void bench(uint32_t t, double mb, int reps)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	const size_t n = 4096;
	size_t row = krn_row_size(t, n), rows = (size_t)(mb * 1e6 / (double)row);
	if (rows < 1)
		rows = 1;
	uint8_t *w = malloc(rows * row);
	float *f = malloc(n * sizeof(float)), *y = malloc(rows * sizeof(float));
	uint8_t *aq = malloc(n * 4);
	uint64_t s = 12345;
	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		f[i] = (float)((int64_t)(s >> 11) % 2000) / 1000.0f;
	}
	/* Quantize one row and repeat it: the quantizers are slow, the bytes are what matter. */
	tr->from_float_ref(f, w, n);
	for (size_t r = 1; r < rows; r++)
		memcpy(w + r * row, w, row);
	size_t n_ops;
	const struct krn_quant_ops *const *all = krn_quant_ops_all(&n_ops);
	printf("%-5s %6.1f MB ", tr->name, rows * row / 1e6);
	for (size_t o = 0; o < n_ops; o++) {
		const struct krn_quant_ops *ops = all[o];
		if (!ops->supported())
			continue;
		double times[64];
		ops->quantize_act[tr->vec_dot_type](f, aq, n);
		krn_quant_matvec(ops, t, y, w, aq, n, 0, rows); /* warm up */
		for (int k = 0; k < reps; k++) {
			double t0 = now();
			krn_quant_matvec(ops, t, y, w, aq, n, 0, rows);
			times[k] = now() - t0;
		}
		qsort(times, (size_t)reps, sizeof(double), cmp_double);
		double bytes = (double)rows * (double)row;
		printf(" %s %6.2f (best %6.2f)", ops->name, bytes / times[reps / 2] / 1e9,
		       bytes / times[0] / 1e9);
	}
	printf("  GB/s\n");
	fflush(stdout);
	free(w);
	free(f);
	free(y);
	free(aq);
}

int main(int argc, char **argv)
{
	double mb = argc > 1 ? atof(argv[1]) : 96;
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	static const char *const dflt[] = { "q5_0", "q8_0", "q4_K", "q5_K", "q6_K", "q4_0",
					    "q4_1", "q5_1", "q2_K", "q3_K", "f16",  "bf16", "f32" };
	const char *const *names = argc > 3 ? (const char *const *)(argv + 3) : dflt;
	size_t n_names = argc > 3 ? (size_t)(argc - 3) : sizeof(dflt) / sizeof(dflt[0]);
	if (reps < 1 || reps > 64 || mb <= 0) {
		fprintf(stderr, "usage: bench_quants [mb > 0] [reps 1-64] [type...]\n");
		return 2;
	}
	for (size_t i = 0; i < n_names; i++) {
		int t = krn_type_from_name(names[i]);
		if (t < 0 || !krn_type_traits((uint32_t)t)->from_float_ref) {
			fprintf(stderr, "bench_quants: unknown weight type '%s'\n", names[i]);
			return 2;
		}
		bench((uint32_t)t, mb, reps);
	}
	return 0;
}
