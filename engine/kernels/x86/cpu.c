/* engine/kernels/x86/cpu.c: may this CPU run an AVX2 or AVX-512 table (x86/cpu.h)? The one
 * check for both kernels/ and quants/: before issue 27 each had its own, and they disagreed on
 * what "AVX-512" meant.
 *
 * Compiled without ISA flags (see meson.build): it runs before we know the answer.
 * __builtin_cpu_supports reads CPUID and, for AVX and AVX-512, also checks XCR0 through
 * XGETBV, so a kernel that disabled the wide registers' state is answered "no" (GCC's
 * libgcc/config/i386/cpuinfo.c, get_available_features). F16C, and AVX512-VNNI, VBMI, VBMI2,
 * GFNI and BITALG, are read from CPUID directly (leaf 1 ECX bit 29; leaf 7 ECX bits 11, 1, 6,
 * 8, 12; Intel SDM vol. 2A, CPUID): clang 14's __builtin_cpu_supports does not know all these
 * names, and the register state they need is the one the avx2 and avx512f checks confirmed.
 */
#include <cpuid.h>

#include "cpu.h"

static bool cpuid_ecx_bit(unsigned leaf, unsigned bit)
{
	unsigned a, b, c, d;
	if (!__get_cpuid_count(leaf, 0, &a, &b, &c, &d))
		return false;
	return (c >> bit) & 1u;
}

bool krn_x86_has_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
	       cpuid_ecx_bit(1, 29);
}

bool krn_x86_has_avx512(void)
{
	return krn_x86_has_avx2() && __builtin_cpu_supports("avx512f") &&
	       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
	       __builtin_cpu_supports("avx512dq");
}

bool krn_x86_has_avx512_icl(void)
{
	return krn_x86_has_avx512() && cpuid_ecx_bit(7, 11) && cpuid_ecx_bit(7, 1) &&
	       cpuid_ecx_bit(7, 6) && cpuid_ecx_bit(7, 8) && cpuid_ecx_bit(7, 12);
}
