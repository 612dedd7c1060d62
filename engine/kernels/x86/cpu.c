/* engine/kernels/x86/cpu.c: may this CPU run the AVX2 or the AVX-512 table?
 *
 * Compiled without ISA flags (see meson.build): it runs before we know the answer.
 * __builtin_cpu_supports reads CPUID and, for AVX and AVX-512, also checks XCR0 through
 * XGETBV, so a kernel that disabled the wide registers' state is answered "no" (GCC's
 * libgcc/config/i386/cpuinfo.c, get_available_features).
 */
#include "ops.h"

bool krn_x86_has_avx2_fma(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool krn_x86_has_avx512(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
	       __builtin_cpu_supports("fma");
}
