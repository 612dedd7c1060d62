/* engine/kernels/kernels.h: the ops table that hides each instruction set.
 *
 * One table per ISA (ref.c, x86/avx2.c, x86/avx512.c, arm/neon.c), one line per table in
 * kernels.c's registry. The engine calls only through a `const struct krn_ops *`, so adding an
 * ISA is one file plus one line, and no function body carries `#if __AVX2__` chains.
 *
 * Internal to engine/: src/ reaches kernels only through engine.h.
 */
#ifndef MEMWALL_KERNELS_H
#define MEMWALL_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct krn_ops {
	const char *name; /* "ref", "avx2", "avx512", "neon" */
	/* True when the running CPU and OS can execute this table (cpuid + xgetbv, hwcaps). */
	bool (*supported)(void);

	/* y[r] = dot(w[r * n .. r * n + n), x) for r in [r0, r1). w is row-major (rows, n). */
	void (*matvec_f32)(float *y, const float *w, const float *x, size_t n, size_t r0,
			   size_t r1);
	float (*dot_f32)(const float *a, const float *b, size_t n);
	/* y[i] += a * x[i] */
	void (*axpy_f32)(float *y, float a, const float *x, size_t n);
};

/* Every table compiled into this build, best first; *n receives the count. Static storage. */
const struct krn_ops *const *krn_ops_all(size_t *n);
/* The table named `name`, or the best supported one for NULL or "auto". NULL when the name is
 * unknown or that ISA is not supported on this CPU. Static storage. */
const struct krn_ops *krn_ops_find(const char *name);

#endif
