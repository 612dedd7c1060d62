/* engine/quants/x86/cpu.c: may this CPU run the quants' AVX2 or AVX-512 table?
 *
 * Compiled without ISA flags (see meson.build): it runs before we know the answer. Its own
 * file, as kernels/x86/cpu.c is, so the ISA tables that point at these checks and the registry
 * (quants.c) that lists the tables depend on it and not on each other.
 * __builtin_cpu_supports also checks XCR0, so an OS that does not save the wide registers
 * answers "no" (libgcc's cpuinfo.c). F16C, and AVX512-VNNI, VBMI, VBMI2, GFNI and BITALG, are
 * read from CPUID directly (leaf 1 ECX bit 29; leaf 7 ECX bits 11, 1, 6, 8, 12; Intel SDM
 * vol. 2A, CPUID): clang 14's __builtin_cpu_supports does not know all these names, and the
 * register state they need is the one the avx2 and avx512f checks already confirmed.
 */
#include <cpuid.h>

#include "quants_impl.h"

static bool cpuid_bit(unsigned leaf, unsigned reg_ecx_bit)
{
	unsigned a, b, c, d;
	if (!__get_cpuid_count(leaf, 0, &a, &b, &c, &d))
		return false;
	return (c >> reg_ecx_bit) & 1u;
}

bool krn_quants_cpu_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpuid_bit(1, 29);
}

bool krn_quants_cpu_avx512(void)
{
	__builtin_cpu_init();
	return krn_quants_cpu_avx2() && __builtin_cpu_supports("avx512f") &&
	       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
	       __builtin_cpu_supports("avx512dq") && cpuid_bit(7, 11) && cpuid_bit(7, 1) &&
	       cpuid_bit(7, 6) && cpuid_bit(7, 8) && cpuid_bit(7, 12);
}
