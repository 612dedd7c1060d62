/* tests/bench/bench_quants.c: how fast each ISA's quant matvec streams weights, in GB/s of weight
 * bytes, one thread, and how that compares with a plain read of the same bytes.
 *
 * For each type: a weight matrix of n = 4096 columns and enough rows for `mb` MB (default 256,
 * eight times a 32 MB L3, so every pass streams the weights from DRAM as decoding does), one
 * activation vector quantized to the type's vec_dot_type, then `reps` rounds per ISA. A round
 * times, back to back on the same buffer: a plain read (the kernels table's stream_read), the
 * ISA's matvec, and the same rows one vec_dot call each (what a matvec without its own kernel
 * costs, and the yardstick for one). The same is done at a cache-resident size (1 MB), the
 * kernels' compute ceiling. Weights live in 2 MiB-aligned memory advised MADV_HUGEPAGE, as the engine's are.
 *
 * Printed per ISA: median GB/s of matvec and of the vec_dot loop, and the median over rounds of
 * each one's ratio to the read in the same round. On a shared machine the ratio is the figure
 * to trust: noise from other processes hits both halves of a round alike.
 *
 * Types with an x8 layout (quants.h) are also timed repacked, through each table's own x8
 * kernel, on a line of their own, and, where the table has a multi-token kernel
 * (krn_quant_matmul), for 2, 4, 8 and MM_TOK tokens at once (a batched decode step, a prefill
 * chunk): its figure is weight bytes times tokens per second (what that many one-token passes
 * would have to stream to keep up), the same as GOP/s (two operations, a multiply and an add,
 * per weight and token: the integer multiply-adds the kernel does), and its ratio to the x8
 * matvec's rate, the gain a batch or a prompt chunk gets. BENCH_QUANTS_N sets the row length (default
 * 4096). BENCH_QUANTS_ISA=name times only that table (avx512, avx2, ...), and
 * BENCH_QUANTS_MM=0 leaves out the multi-token matmul (it takes most of a DRAM run's time):
 * both for A/B runs of one kernel, many rounds in a few seconds.
 *
 * After the tables' own lines, a type's x8 rates side by side: for 1, 2, 4, 8 and MM_TOK tokens
 * a call, the rate of every table this CPU runs with x8 kernels for the type, and each one's
 * ratio to the first (the engine's default); ref, which has none, is left out as above.
 *
 * Usage: bench_quants [mb] [reps] [type...]; pin it (taskset -c 1) for stable figures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "kernels/kernels.h"
#include "quants/quants.h"

#define HUGE (2u << 20)
#define MAX_REPS 64
#define MM_TOK 64 /* the engine's default prefill chunk (ENG_PREFILL_CHUNK) */
/* Token counts the multi-token kernel is timed at: a batched decode step of 2 and 4 sequences
 * (generate --batch), 8 (where the K-quants' chunks start unpacking each super-block once, and
 * the kernel choice's last class, engine.h), then a prefill chunk. */
static const int mm_toks[] = { 2, 4, 8, MM_TOK };
#define N_MM (sizeof(mm_toks) / sizeof(mm_toks[0]))
#define MAX_TABLES 8

/* One type's x8 rates per table, for the side-by-side lines: [table][0] the x8 matvec (one
 * token), [table][1 + j] mm_toks[j] tokens; 0 where not timed. */
struct side {
	const char *name[MAX_TABLES];
	double gb[MAX_TABLES][1 + N_MM];
	int n;
};

/* For each token count, every table's rate on one line, and each one's ratio to the first
 * (the registry's best, the engine's default): which table a token count should run on, the
 * question `memwall bench-kernels` answers for the engine (issue 42). */
static void print_side(const char *type, double mb, const struct side *sd)
{
	if (sd->n < 1)
		return;
	for (size_t j = 0; j < 1 + N_MM; j++) {
		int tok = j ? mm_toks[j - 1] : 1;
		printf("%-5s %7.1f MB x8, %2d token%s a call, GB/s of weights x tokens:", type, mb,
		       tok, tok > 1 ? "s" : "");
		for (int i = 0; i < sd->n; i++) {
			if (!sd->gb[i][j]) {
				printf("  %s -", sd->name[i]);
				continue;
			}
			printf("  %s %6.2f", sd->name[i], sd->gb[i][j]);
			if (i && sd->gb[0][j])
				printf(" (%.2fx)", sd->gb[i][j] / sd->gb[0][j]);
		}
		putchar('\n');
	}
	fflush(stdout);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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

/* `bytes` rounded up to whole 2 MiB pages, advised huge. Caller munmaps (len in *len). */
static uint8_t *map_huge(size_t bytes, size_t *len)
{
	*len = (bytes + HUGE - 1) / HUGE * HUGE;
	void *p = mmap(NULL, *len + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((void *)(a + *len), (uintptr_t)p + HUGE - a);
	(void)madvise((void *)a, *len, MADV_HUGEPAGE); /* advice: failure is harmless */
	return (uint8_t *)a;
}

static void rows_by_vec_dot(const struct krn_quant_ops *ops, uint32_t t, float *y, const uint8_t *w,
			    const void *aq, size_t n, size_t rows)
{
	size_t row = krn_row_size(t, n);
	for (size_t r = 0; r < rows; r++)
		ops->vec_dot[t](n, &y[r], w + r * row, aq);
}

static volatile float sink;

static void bench(uint32_t t, double mb, int reps, const struct krn_ops *kops)
{
	const struct krn_type_traits *tr = krn_type_traits(t);
	const char *env_n = getenv("BENCH_QUANTS_N");
	const size_t n = env_n ? (size_t)atol(env_n) : 4096;
	size_t row = krn_row_size(t, n), len, len8;
	if (!row) {
		fprintf(stderr, "bench_quants: %zu columns is not whole blocks of %s\n", n, tr->name);
		exit(2);
	}
	size_t rows = (size_t)(mb * 1e6 / (double)row) / KRN_X8 * KRN_X8;
	if (rows < KRN_X8)
		rows = KRN_X8;
	size_t bytes = rows * row; /* stream_read takes bytes / 4 floats: the tail bytes go unread */
	uint8_t *w = map_huge(bytes, &len);
	float *f = malloc(n * sizeof(float)), *y = malloc(rows * sizeof(float));
	uint8_t *aq = malloc(n * 4);
	float *ymm = malloc(rows * MM_TOK * sizeof(float));
	uint8_t *aqs = malloc(MM_TOK * n * 4);
	if (!w || !f || !y || !aq || !ymm || !aqs) {
		fprintf(stderr, "bench_quants: out of memory for %.0f MB\n", mb);
		exit(1);
	}
	uint64_t s = 12345;
	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		f[i] = (float)((int64_t)(s >> 11) % 2000) / 1000.0f;
	}
	/* Quantize one row and repeat it: the quantizers are slow, the bytes are what matter. */
	tr->from_float_ref(f, w, n);
	for (size_t r = 1; r < rows; r++)
		memcpy(w + r * row, w, row);
	/* the same rows in the x8 layout, for tables with a kernel for it */
	uint8_t *w8 = NULL;
	if (krn_x8_layout(t)) {
		uint8_t *tmp = malloc(krn_x8_repack_scratch(t, n, rows));
		w8 = map_huge(bytes, &len8);
		if (!tmp || !w8) {
			fprintf(stderr, "bench_quants: out of memory for %.0f MB\n", mb);
			exit(1);
		}
		memcpy(w8, w, bytes);
		krn_x8_repack(t, w8, n, rows, tmp);
		free(tmp);
	}
	size_t n_ops;
	const struct krn_quant_ops *const *all = krn_quant_ops_all(&n_ops);
	const char *isa = getenv("BENCH_QUANTS_ISA"), *env_mm = getenv("BENCH_QUANTS_MM");
	const bool want_mm = !env_mm || strcmp(env_mm, "0") != 0;
	struct side sd = { .n = 0 };
	for (size_t o = 0; o < n_ops; o++) {
		const struct krn_quant_ops *ops = all[o];
		if (!ops->supported() || ops == all[n_ops - 1])
			continue; /* ref: a correctness yardstick, not a speed one */
		if (isa && *isa && strcmp(isa, ops->name) != 0)
			continue;
		double gb_mv[MAX_REPS], gb_row[MAX_REPS], r_mv[MAX_REPS], r_row[MAX_REPS], gb_rd[MAX_REPS];
		double gb_x8[MAX_REPS], r_x8[MAX_REPS], gb_mm[N_MM][MAX_REPS], r_mm[N_MM][MAX_REPS];
		bool x8 = w8 && krn_quant_x8_native(ops, t), mm = want_mm && x8 && ops->matmul_x8[t];
		ops->quantize_act[tr->vec_dot_type](f, aq, n);
		size_t ab = krn_row_size(tr->vec_dot_type, n);
		for (size_t k = 0; k < MM_TOK; k++)
			memcpy(aqs + k * ab, aq, ab);
		krn_quant_matvec(ops, t, y, w, aq, n, 0, rows); /* warm up */
		for (int k = 0; k < reps; k++) {
			double t0 = now();
			sink = kops->stream_read((const float *)(const void *)w, bytes / sizeof(float));
			double t1 = now();
			krn_quant_matvec(ops, t, y, w, aq, n, 0, rows);
			double t2 = now();
			rows_by_vec_dot(ops, t, y, w, aq, n, rows);
			double t3 = now();
			if (x8)
				krn_quant_matvec_x8(ops, t, y, w8, rows, aq, n, 0, rows);
			double t4 = now();
			gb_x8[k] = (double)bytes / (t4 - t3) / 1e9;
			for (size_t j = 0; mm && j < N_MM; j++) {
				double t5 = now();
				krn_quant_matmul(ops, t, true, ymm, rows, w8, rows, aqs, ab,
						 (size_t)mm_toks[j], n, 0, rows);
				gb_mm[j][k] = (double)bytes * mm_toks[j] / (now() - t5) / 1e9;
				r_mm[j][k] = gb_mm[j][k] / gb_x8[k];
			}
			gb_rd[k] = (double)bytes / (t1 - t0) / 1e9;
			gb_mv[k] = (double)bytes / (t2 - t1) / 1e9;
			gb_row[k] = (double)bytes / (t3 - t2) / 1e9;
			r_mv[k] = gb_mv[k] / gb_rd[k];
			r_row[k] = gb_row[k] / gb_rd[k];
			r_x8[k] = gb_x8[k] / gb_rd[k];
		}
		printf("%-5s %7.1f MB %-6s read %6.2f  matvec %6.2f (%.2fx read)  "
		       "vec_dot %6.2f (%.2fx read)  GB/s\n",
		       tr->name, (double)bytes / 1e6, ops->name, median(gb_rd, reps),
		       median(gb_mv, reps), median(r_mv, reps), median(gb_row, reps),
		       median(r_row, reps));
		if (x8) {
			/* median() sorts: the ratio's spread is then its ends */
			double m_x8 = median(r_x8, reps);
			printf("%-5s %7.1f MB %-6s x8 matvec %6.2f GB/s (%.2fx read, rounds "
			       "%.2f-%.2f)\n", tr->name, (double)bytes / 1e6, ops->name,
			       median(gb_x8, reps), m_x8, r_x8[0], r_x8[reps - 1]);
		}
		/* a weight byte holds block_size / type_size weights, each one multiply-add per
		 * token: two operations */
		const double ops_per_byte = 2.0 * tr->block_size / (double)tr->type_size;
		for (size_t j = 0; mm && j < N_MM; j++)
			printf("%-5s %7.1f MB %-6s x8 matmul of %d tokens %6.1f GB/s of weights x "
			       "tokens, %.0f GOP/s (%.2fx the x8 matvec)\n", tr->name,
			       (double)bytes / 1e6, ops->name, mm_toks[j], median(gb_mm[j], reps),
			       median(gb_mm[j], reps) * ops_per_byte, median(r_mm[j], reps));
		fflush(stdout);
		if (x8 && sd.n < MAX_TABLES) {
			sd.name[sd.n] = ops->name;
			sd.gb[sd.n][0] = median(gb_x8, reps);
			for (size_t j = 0; j < N_MM; j++)
				sd.gb[sd.n][1 + j] = mm ? median(gb_mm[j], reps) : 0;
			sd.n++;
		}
	}
	print_side(tr->name, (double)bytes / 1e6, &sd);
	munmap(w, len);
	if (w8)
		munmap(w8, len8);
	free(f);
	free(y);
	free(aq);
	free(ymm);
	free(aqs);
}

int main(int argc, char **argv)
{
	double mb = argc > 1 ? atof(argv[1]) : 256;
	int reps = argc > 2 ? atoi(argv[2]) : 7;
	static const char *const dflt[] = { "q5_0", "q8_0", "q4_K", "q5_K", "q6_K", "q4_0",
					    "q4_1", "q5_1", "q2_K", "q3_K", "f16",  "bf16", "f32" };
	const char *const *names = argc > 3 ? (const char *const *)(argv + 3) : dflt;
	size_t n_names = argc > 3 ? (size_t)(argc - 3) : sizeof(dflt) / sizeof(dflt[0]);
	if (reps < 1 || reps > MAX_REPS || mb <= 0) {
		fprintf(stderr, "usage: bench_quants [mb > 0] [reps 1-%d] [type...]\n", MAX_REPS);
		return 2;
	}
	const struct krn_ops *kops = krn_ops_find(NULL);
	if (!kops) {
		fprintf(stderr, "bench_quants: no kernels table for this CPU\n");
		return 1;
	}
	for (size_t i = 0; i < n_names; i++) {
		int t = krn_type_from_name(names[i]);
		if (t < 0 || !krn_type_traits((uint32_t)t)->from_float_ref) {
			fprintf(stderr, "bench_quants: unknown weight type '%s'\n", names[i]);
			return 2;
		}
	}
	const char *isa = getenv("BENCH_QUANTS_ISA");
	if (isa && *isa) {
		size_t n_ops, o;
		const struct krn_quant_ops *const *all = krn_quant_ops_all(&n_ops);
		for (o = 0; o + 1 < n_ops && (strcmp(all[o]->name, isa) || !all[o]->supported()); o++)
			;
		if (o + 1 >= n_ops) {
			fprintf(stderr, "bench_quants: BENCH_QUANTS_ISA=%s names no table this CPU runs; "
				"one of:", isa);
			for (o = 0; o + 1 < n_ops; o++)
				if (all[o]->supported())
					fprintf(stderr, " %s", all[o]->name);
			fprintf(stderr, " (or unset it for all)\n");
			return 2;
		}
	}
	/* in cache first (the compute ceiling), then at the DRAM size */
	const double sizes[2] = { 1, mb };
	for (int z = 0; z < 2; z++) {
		printf("-- %s: %.0f MB of weights per pass\n", z ? "DRAM" : "in cache", sizes[z]);
		for (size_t i = 0; i < n_names; i++)
			bench((uint32_t)krn_type_from_name(names[i]), sizes[z], reps, kops);
	}
	return 0;
}
