/* tests/engine/test_kernels.c: every ISA kernel table against ref.c, and the memory-streaming API.
 *
 * Each table compiled into this build runs when this CPU supports it and is reported as
 * skipped otherwise. The same source builds for aarch64 and runs under qemu-aarch64
 * (tests/engine/neon-qemu.sh), so nothing here is x86-specific.
 *
 * Two kinds of check per kernel:
 *  - Random values in [-1, 1]: a table may sum in any order, so it may differ from ref by
 *    rounding. For a dot product of length n computed in any order, with or without FMA,
 *    |computed - exact| <= gamma_n * sum |w_i x_i|, gamma_n = n u / (1 - n u), u = 2^-24
 *    (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., eq. 3.5 and sec. 3.1,
 *    which holds for every summation order). ref and the table each obey it, so they differ by
 *    at most 2 gamma_n sum |w_i x_i|: the tolerance below. It is a bound, never flaky.
 *  - Small integers in [-3, 3]: every partial sum is an integer below 2^24, exact in float in
 *    any order, so the table must equal ref bit for bit. This is the check that catches a
 *    dropped tail element or a wrong row offset, which the rounding bound could hide at large n.
 */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "engine.h"
#include "kernels/kernels.h"
#include "test.h"

#define U_F32 (1.0 / 16777216.0) /* unit roundoff of float: 2^-24 */
#define SENTINEL (-12345.5f)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* xorshift64* (Vigna, "An experimental exploration of Marsaglia's xorshift generators"). */
static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static float rng_unit(void) /* uniform in [-1, 1) */
{
	return (float)((double)(rng_next() >> 11) / 4503599627370496.0 - 1.0);
}

static float rng_small_int(void) /* one of -3..3 */
{
	return (float)((int)(rng_next() % 7) - 3);
}

static void fill(float *p, size_t n, bool integers)
{
	for (size_t i = 0; i < n; i++)
		p[i] = integers ? rng_small_int() : rng_unit();
}

static double gamma_n(size_t n)
{
	return (double)n * U_F32 / (1.0 - (double)n * U_F32);
}

/* Lengths: below, at and above every vector width (4, 8, 16) and its multiples, and the
 * stories models' dims (288, 768, 2048) with odd neighbours. */
static const size_t lengths[] = { 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65,
				  100, 257, 288, 767, 768, 769, 2048, 2049 };
#define N_LENGTHS (sizeof(lengths) / sizeof(lengths[0]))

/* Row ranges [r0, r1) of a 13-row matrix: empty, one row, fewer than a 4-row block, blocks with
 * a remainder, not starting at 0. */
static const size_t ranges[][2] = { { 0, 13 }, { 0, 1 }, { 1, 4 }, { 3, 12 }, { 5, 5 }, { 2, 13 },
				    { 7, 11 } };
#define ROWS 13

static void check_matvec(const struct krn_ops *k, bool integers)
{
	for (size_t li = 0; li < N_LENGTHS; li++) {
		size_t n = lengths[li];
		/* One float of offset: no 16- or 64-byte alignment for the kernel to rely on. */
		float *wbuf = malloc((ROWS * n + 1) * sizeof(float));
		float *xbuf = malloc((n + 1) * sizeof(float));
		float y[ROWS], yref[ROWS];
		float *w = wbuf + 1, *x = xbuf + 1;
		fill(w, ROWS * n, integers);
		fill(x, n, integers);
		for (size_t ri = 0; ri < sizeof(ranges) / sizeof(ranges[0]); ri++) {
			size_t r0 = ranges[ri][0], r1 = ranges[ri][1];
			for (size_t r = 0; r < ROWS; r++)
				y[r] = yref[r] = SENTINEL;
			krn_ops_ref.matvec_f32(yref, w, x, n, r0, r1);
			k->matvec_f32(y, w, x, n, r0, r1);
			for (size_t r = 0; r < ROWS; r++) {
				double abs_sum = 0.0;
				for (size_t i = 0; i < n; i++)
					abs_sum += fabs((double)w[r * n + i] * (double)x[i]);
				double tol = integers || r < r0 || r >= r1 ? 0.0
									   : 2.0 * gamma_n(n) * abs_sum;
				if (!(fabs((double)y[r] - (double)yref[r]) <= tol))
					fprintf(stderr, "%s matvec_f32 n=%zu rows [%zu,%zu) row %zu%s\n",
						k->name, n, r0, r1, r, integers ? " (integers)" : "");
				T_NEAR(y[r], yref[r], tol);
			}
		}
		free(wbuf);
		free(xbuf);
	}
}

/* krn_matmul_f32 (the table's matmul_f32, or the matvec loop where it has none) gives each
 * token exactly the bits matvec_f32 gives it alone, for token counts around the register
 * blocks (3 tokens by 4 rows on AVX-512, by 2 rows on AVX2), on every row range, and leaves other rows alone. */
static void check_matmul(const struct krn_ops *k)
{
	static const size_t tokens[] = { 1, 2, 3, 4, 7 };
	const size_t max_tok = 7;
	for (size_t li = 0; li < N_LENGTHS; li++) {
		size_t n = lengths[li], ldx = n + 3;
		float *wbuf = malloc((ROWS * n + 1) * sizeof(float));
		float *xbuf = malloc((max_tok * ldx + 1) * sizeof(float));
		float y[7 * ROWS], y1[ROWS];
		float *w = wbuf + 1, *x = xbuf + 1;
		fill(w, ROWS * n, false);
		fill(x, max_tok * ldx, false);
		for (size_t ri = 0; ri < sizeof(ranges) / sizeof(ranges[0]); ri++) {
			size_t r0 = ranges[ri][0], r1 = ranges[ri][1];
			for (size_t c = 0; c < sizeof(tokens) / sizeof(tokens[0]); c++) {
				size_t nt = tokens[c];
				for (size_t i = 0; i < 7 * ROWS; i++)
					y[i] = SENTINEL;
				krn_matmul_f32(k, y, ROWS, w, x, ldx, nt, n, r0, r1);
				for (size_t t = 0; t < nt; t++) {
					for (size_t r = 0; r < ROWS; r++)
						y1[r] = SENTINEL;
					k->matvec_f32(y1, w, x + t * ldx, n, r0, r1);
					if (memcmp(y1, y + t * ROWS, sizeof(y1)))
						fprintf(stderr, "%s matmul_f32 n=%zu rows [%zu,%zu) "
							"%zu tokens: token %zu differs\n",
							k->name, n, r0, r1, nt, t);
					T_ASSERT(!memcmp(y1, y + t * ROWS, sizeof(y1)));
				}
			}
		}
		free(wbuf);
		free(xbuf);
	}
}

static void check_dot(const struct krn_ops *k, bool integers)
{
	for (size_t li = 0; li < N_LENGTHS; li++) {
		size_t n = lengths[li];
		float *a = malloc((n + 1) * sizeof(float)), *b = malloc((n + 1) * sizeof(float));
		fill(a, n + 1, integers);
		fill(b, n + 1, integers);
		double abs_sum = 0.0;
		for (size_t i = 0; i < n; i++)
			abs_sum += fabs((double)a[i + 1] * (double)b[i]);
		double tol = integers ? 0.0 : 2.0 * gamma_n(n) * abs_sum;
		float got = k->dot_f32(a + 1, b, n), want = krn_ops_ref.dot_f32(a + 1, b, n);
		if (!(fabs((double)got - (double)want) <= tol))
			fprintf(stderr, "%s dot_f32 n=%zu\n", k->name, n);
		T_NEAR(got, want, tol);
		free(a);
		free(b);
	}
}

/* axpy is element-wise: ref rounds a*x and then the sum (two roundings), a table may fuse
 * them (one), so they differ by at most u |a x| + 2u |y + a x|, below 4u (|y| + |a x|). */
static void check_axpy(const struct krn_ops *k, bool integers)
{
	for (size_t li = 0; li < N_LENGTHS; li++) {
		size_t n = lengths[li];
		float *x = malloc((n + 1) * sizeof(float));
		float *y = malloc((n + 2) * sizeof(float)), *yref = malloc((n + 2) * sizeof(float));
		float a = integers ? rng_small_int() : rng_unit();
		fill(x, n + 1, integers);
		fill(y + 1, n, integers);
		memcpy(yref + 1, y + 1, n * sizeof(float));
		y[n + 1] = yref[n + 1] = SENTINEL;
		krn_ops_ref.axpy_f32(yref + 1, a, x + 1, n);
		k->axpy_f32(y + 1, a, x + 1, n);
		for (size_t i = 1; i <= n; i++) {
			double tol = integers ? 0.0
					      : 4.0 * U_F32 * (fabs((double)yref[i]) +
							       2.0 * fabs((double)a * x[i]));
			T_NEAR(y[i], yref[i], tol);
		}
		T_EQ_INT(y[n + 1] == SENTINEL, 1);
		free(x);
		free(y);
		free(yref);
	}
}

/* Distance in ulps between two floats of the same sign class; 0 for two NaNs. */
static int64_t ulps(float a, float b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b) ? 0 : INT64_MAX;
	int32_t ia, ib;
	memcpy(&ia, &a, sizeof(ia));
	memcpy(&ib, &b, sizeof(ib));
	int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia; /* order-preserving */
	int64_t ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
	return oa > ob ? oa - ob : ob - oa;
}

/* got against want (glibc's expf composed the same way): at most `bound` ulps apart, and
 * on at most 0.2% of the n inputs. */
static void near_libm(const char *isa, const char *what, const float *got, const float *want,
		      int n, int64_t bound)
{
	int64_t worst = 0;
	int differ = 0;
	for (int i = 0; i < n; i++) {
		int64_t d = ulps(got[i], want[i]);
		differ += d != 0;
		worst = d > worst ? d : worst;
	}
	if (worst > bound || differ > n / 500)
		fprintf(stderr, "%s %s: %d of %d differ from expf's, by up to %lld ulps\n", isa,
			what, differ, n, (long long)worst);
	T_ASSERT(worst <= bound);
	T_ASSERT(differ <= n / 500);
}

/* silu_glu (through krn_silu_glu, so a table without one is checked on ref's) against the
 * same float expression on glibc's expf. Both exponentials are within an ulp of e^x (exp.h,
 * and glibc's stated 0.502 ulp), so the two results may differ only where an exponential
 * was rounded the other way, on a small share of inputs: by at most 4 ulps, the ulp in e (a
 * relative 2^-23 at most) carried through 1 + e, the reciprocal and two products, each of
 * which rounds each side's value by up to half an ulp. A wrong series term or reduction
 * constant moves nearly every result by many ulps. Special values must match exactly, sign included. Then
 * the same inputs one at a time and in windows at every offset must give the whole array's
 * bits (ops.h: a result depends on its element only). */
static void check_silu_glu(const struct krn_ops *k)
{
	enum { SWEEP = 200001 };
	float *g = malloc(SWEEP * sizeof(float)), *u = malloc(SWEEP * sizeof(float));
	for (int i = 0; i < SWEEP; i++) {
		g[i] = i < SWEEP / 2 ? -110.0f + 220.0f * (float)i / (SWEEP / 2) : 8.0f * rng_unit();
		u[i] = i % 3 == 0 ? 1.0f : 1.5f + rng_unit();
	}
	float *out = malloc(SWEEP * sizeof(float)), *libm = malloc(SWEEP * sizeof(float));
	for (int i = 0; i < SWEEP; i++) {
		libm[i] = g[i] * (1.0f / (1.0f + expf(-g[i]))) * u[i];
		out[i] = g[i];
		krn_silu_glu(k, &out[i], &u[i], 1);
	}
	near_libm(k->name, "silu_glu", out, libm, SWEEP, 4);
	free(out);
	free(libm);

	const float specials[] = { 0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, -88.0f, 104.0f, -104.0f,
				   200.0f, -200.0f, 3e38f, -3e38f, INFINITY, -INFINITY, NAN };
	for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++) {
		float x = specials[i], one = 1.0f, got = x;
		float want = x * (1.0f / (1.0f + expf(-x)));
		krn_silu_glu(k, &got, &one, 1);
		if (isnan(want)) {
			T_ASSERT(isnan(got));
			continue;
		}
		T_ASSERT(got == want && signbit(got) == signbit(want));
	}

	enum { N = 41 };
	float whole[N], part[N];
	memcpy(whole, g + SWEEP / 2, sizeof(whole));
	krn_silu_glu(k, whole, u + SWEEP / 2, N);
	for (size_t len = 1; len <= N; len += 7)
		for (size_t at = 0; at + len <= N; at++) {
			memcpy(part, g + SWEEP / 2, sizeof(part));
			krn_silu_glu(k, part + at, u + SWEEP / 2 + at, len);
			T_ASSERT(!memcmp(part + at, whole + at, len * sizeof(float)));
		}
	free(g);
	free(u);
}

/* exp_sub against glibc's expf of the same float difference: both within an ulp of e^x, so
 * they differ by at most one, on a small share of inputs (exp.h); its sum within the bound
 * of any summation order; special values exactly; windows at every offset give the whole
 * array's bits. */
static void check_exp_sub(const struct krn_ops *k)
{
	enum { SWEEP = 200001, N = 41 };
	float *x = malloc(SWEEP * sizeof(float)), *y = malloc(SWEEP * sizeof(float));
	for (int i = 0; i < SWEEP; i++)
		x[i] = i < SWEEP / 2 ? -110.0f + 220.0f * (float)i / (SWEEP / 2)
				     : 10.0f * rng_unit() - 10.0f;
	float sub = 0.75f * rng_unit();
	float *libm = malloc(SWEEP * sizeof(float));
	for (int i = 0; i < SWEEP; i++)
		libm[i] = expf(x[i] - sub);
	memcpy(y, x, SWEEP * sizeof(float));
	krn_exp_sub(k, y, sub, SWEEP);
	near_libm(k->name, "exp_sub", y, libm, SWEEP, 1);
	free(libm);
	/* The returned sum, in any order, within gamma_n of the exact sum of the results
	 * (positive, so sum |y| is the sum), for lengths around the vector widths. */
	for (size_t li = 0; li < N_LENGTHS; li++) {
		size_t n = lengths[li];
		memcpy(y, x + SWEEP / 2, n * sizeof(float));
		float sum = krn_exp_sub(k, y, sub, n);
		double exact = 0.0;
		for (size_t i = 0; i < n; i++)
			exact += y[i];
		T_NEAR(sum, exact, gamma_n(n) * exact);
	}

	const float specials[] = { 0.0f, -0.0f, 88.7f, 89.0f, -103.0f, -104.0f, 3e38f, -3e38f,
				   INFINITY, -INFINITY, NAN };
	for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++) {
		float got = specials[i], want = expf(specials[i]);
		krn_exp_sub(k, &got, 0.0f, 1);
		T_ASSERT(isnan(want) ? isnan(got) : got == want);
	}

	float whole[N], part[N];
	memcpy(whole, x + SWEEP / 2, sizeof(whole));
	krn_exp_sub(k, whole, sub, N);
	for (size_t len = 1; len <= N; len += 5)
		for (size_t at = 0; at + len <= N; at++) {
			memcpy(part, x + SWEEP / 2, sizeof(part));
			krn_exp_sub(k, part + at, sub, len);
			T_ASSERT(!memcmp(part + at, whole + at, len * sizeof(float)));
		}
	free(x);
	free(y);
}

/* Stream kernels on integers only: sums of small integers are exact in any order, and copy and
 * triad are element-wise. Destinations at every float offset within 64 bytes exercise the
 * non-temporal variants' aligned body, head and tail. */
static void check_stream(const struct krn_ops *k)
{
	for (size_t li = 0; li < N_LENGTHS; li++) {
		size_t n = lengths[li];
		float *a = malloc((n + 32) * sizeof(float)), *b = malloc((n + 32) * sizeof(float));
		float *c = malloc((n + 32) * sizeof(float)), *want = malloc((n + 32) * sizeof(float));
		fill(b, n + 32, true);
		fill(c, n + 32, true);
		T_EQ_INT(k->stream_read(b + 1, n), krn_ops_ref.stream_read(b + 1, n));

		void (*copies[])(float *, const float *, size_t) = { k->stream_copy,
								     k->stream_copy_nt };
		void (*triads[])(float *, const float *, const float *, float, size_t) = {
			k->stream_triad, k->stream_triad_nt
		};
		for (size_t v = 0; v < 2; v++) {
			for (size_t off = 0; off < 16; off += (n > 64 ? 5 : 1)) {
				if (copies[v]) {
					for (size_t i = 0; i < n + 32; i++)
						a[i] = SENTINEL;
					copies[v](a + off, b, n);
					T_EQ_INT(memcmp(a + off, b, n * sizeof(float)), 0);
					T_EQ_INT(a[off + n] == SENTINEL, 1);
					T_EQ_INT(off == 0 || a[off - 1] == SENTINEL, 1);
				}
				if (triads[v]) {
					for (size_t i = 0; i < n + 32; i++)
						a[i] = want[i] = SENTINEL;
					krn_ops_ref.stream_triad(want + off, b, c + 3, 3.0f, n);
					triads[v](a + off, b, c + 3, 3.0f, n);
					T_EQ_INT(memcmp(a, want, (n + 32) * sizeof(float)), 0);
				}
			}
		}
		free(a);
		free(b);
		free(c);
		free(want);
	}
}

static void check_registry(void)
{
	const struct krn_ops *best = krn_ops_find("auto");
	T_ASSERT(best != NULL && best->supported());
	T_ASSERT(krn_ops_find(NULL) == best);
	T_ASSERT(krn_ops_find("ref") == &krn_ops_ref);
	T_ASSERT(krn_ops_find("no-such-isa") == NULL);
	size_t n = 0;
	const struct krn_ops *const *all = krn_ops_all(&n);
	T_ASSERT(n >= 1 && all[n - 1] == &krn_ops_ref);
	for (size_t i = 0; i < n; i++) {
		/* Every table fills every entry that has no documented NULL. */
		T_ASSERT(all[i]->name && all[i]->supported && all[i]->matvec_f32 &&
			 all[i]->dot_f32 && all[i]->axpy_f32 && all[i]->stream_read &&
			 all[i]->stream_copy && all[i]->stream_triad);
		T_ASSERT(!all[i]->supported() || krn_ops_find(all[i]->name) == all[i]);
	}
	printf("auto picks: %s\n", best ? best->name : "(none)");
}

static void check_stream_api(const char *kernels, int threads)
{
	struct eng_stream *s = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	struct eng_stream_options opt = { .threads = threads, .bytes = 1u << 20, .kernels = kernels };
	int rc = eng_stream_new(&s, &opt, &err);
	T_EQ_INT(rc, 0);
	if (rc < 0) {
		fprintf(stderr, "eng_stream_new: %s: %s\n", err.source, err.text);
		return;
	}
	T_EQ_STR(eng_stream_kernels(s), kernels);
	uint64_t bytes = eng_stream_bytes(s);
	/* At least what was asked, plus at most one 6-page rounding unit per worker. */
	T_ASSERT(bytes >= (1u << 20) && bytes <= (1u << 20) + (uint64_t)threads * 6 * 4096 &&
		 bytes % 4096 == 0);

	struct eng_stream_sample r;
	T_EQ_INT(eng_stream_run(s, ENG_STREAM_READ, false, &r), 0);
	T_EQ_U64(r.bytes_read, bytes);
	T_EQ_U64(r.bytes_written, 0);
	T_ASSERT(r.seconds > 0.0);
	T_EQ_INT(eng_stream_run(s, ENG_STREAM_COPY, false, &r), 0);
	T_EQ_U64(r.bytes_read, bytes / 2);
	T_EQ_U64(r.bytes_written, bytes / 2);
	T_EQ_INT(eng_stream_run(s, ENG_STREAM_TRIAD, false, &r), 0);
	T_EQ_U64(r.bytes_read, bytes / 3 * 2);
	T_EQ_U64(r.bytes_written, bytes / 3);
	/* WRITE: the whole working set stored, nothing loaded from memory (its 16 KiB source
	 * block stays in L1: engine.h) */
	T_EQ_INT(eng_stream_run(s, ENG_STREAM_WRITE, false, &r), 0);
	T_EQ_U64(r.bytes_read, 0);
	T_EQ_U64(r.bytes_written, bytes);
	T_EQ_INT(eng_stream_run(s, ENG_STREAM_READ, true, &r), -ENOTSUP);
	const struct krn_ops *k = krn_ops_find(kernels);
	T_EQ_INT(eng_stream_run(s, ENG_STREAM_COPY, true, &r), k->stream_copy_nt ? 0 : -ENOTSUP);
	T_EQ_INT(eng_stream_run(s, ENG_STREAM_TRIAD, true, &r), k->stream_triad_nt ? 0 : -ENOTSUP);
	T_EQ_INT(eng_stream_run(s, ENG_STREAM_WRITE, true, &r), k->stream_copy_nt ? 0 : -ENOTSUP);
	if (k->stream_copy_nt)
		T_EQ_U64(r.bytes_written, bytes);
	/* Switching tables keeps the buffers; a bad name leaves the table as it was. */
	T_EQ_INT(eng_stream_set_kernels(s, "ref", &err), 0);
	T_EQ_STR(eng_stream_kernels(s), "ref");
	T_EQ_INT(eng_stream_run(s, ENG_STREAM_READ, false, &r), 0);
	T_EQ_U64(r.bytes_read, bytes);
	T_EQ_INT(eng_stream_set_kernels(s, "no-such-isa", &err), -EINVAL);
	T_CONTAINS(err.text, "no-such-isa");
	T_EQ_STR(eng_stream_kernels(s), "ref");
	eng_stream_free(s);
}

static void check_stream_errors(void)
{
	struct eng_stream *s = (struct eng_stream *)&rng_state; /* must be overwritten with NULL */
	struct eng_error err;
	eng_error_clear(&err);
	struct eng_stream_options opt = { .threads = 100000, .bytes = 1u << 20 };
	T_EQ_INT(eng_stream_new(&s, &opt, &err), -EINVAL);
	T_ASSERT(s == NULL);
	T_CONTAINS(err.text, "100000 threads");
	opt = (struct eng_stream_options){ .threads = 1, .kernels = "no-such-isa" };
	T_EQ_INT(eng_stream_new(&s, &opt, &err), -EINVAL);
	T_CONTAINS(err.text, "no-such-isa");

	/* eng_kernels_name lists exactly the supported tables, best first, ref last. */
	size_t n = 0, named = 0;
	const struct krn_ops *const *all = krn_ops_all(&n);
	for (size_t i = 0; i < n; i++)
		if (all[i]->supported())
			T_EQ_STR(eng_kernels_name(named++), all[i]->name);
	T_ASSERT(eng_kernels_name(named) == NULL);
	T_EQ_STR(eng_kernels_name(0), krn_ops_find("auto")->name);
	T_EQ_STR(eng_kernels_name(named - 1), "ref");

	uint64_t llc = 0;
	char source[256] = "";
	int rc = eng_llc_size(&llc, source, sizeof(source));
	T_ASSERT(rc == 0 || rc == -ENOENT);
	T_ASSERT(rc != 0 || (llc > 0 && strstr(source, "/cache/index")));
	printf("LLC: %s\n", rc == 0 ? source : "not described by sysfs here");
}

int main(void)
{
	check_registry();
	check_stream_errors();
	size_t n = 0;
	const struct krn_ops *const *all = krn_ops_all(&n);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	for (size_t i = 0; i < n; i++) {
		const struct krn_ops *k = all[i];
		if (!k->supported()) {
			printf("skipped: %s (compiled in, not supported by this CPU)\n", k->name);
			continue;
		}
		check_matvec(k, false);
		check_matvec(k, true);
		check_matmul(k);
		check_dot(k, false);
		check_dot(k, true);
		check_axpy(k, false);
		check_axpy(k, true);
		check_silu_glu(k);
		check_exp_sub(k);
		check_stream(k);
		check_stream_api(k->name, 1);
		if (cpus >= 2)
			check_stream_api(k->name, 2);
		printf("ran: %s%s\n", k->name, cpus >= 2 ? "" : " (stream API with 1 thread only)");
	}
	return t_done();
}
