/* tests/lib/simde_cpu.c: engine/kernels/x86/cpu.h for tests/engine/avx512-simde.sh's builds, in place of
 * kernels/x86/cpu.c. There the AVX-512 tables are SIMDe's portable C, which any CPU runs, so
 * they are supported; the script has checked /proc/cpuinfo for the AVX2 tables' avx2, fma and
 * f16c before building. */
#include "kernels/x86/cpu.h"

bool krn_x86_has_avx2(void)
{
	return true;
}

bool krn_x86_has_avx512(void)
{
	return true;
}

bool krn_x86_has_avx512_icl(void)
{
	return true;
}
