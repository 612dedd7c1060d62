/* engine/kernels/x86/cpu.h: the one x86 CPU-feature check (x86/cpu.c), for every ISA table of
 * kernels/ and quants/. Each level names the instruction sets a table is compiled for, so a
 * table's supported() says yes exactly when the CPU (and the OS's saved register state) can
 * run every instruction the compiler may have put in it. */
#ifndef MEMWALL_KRN_X86_CPU_H
#define MEMWALL_KRN_X86_CPU_H

#include <stdbool.h>

/* AVX2 with FMA and F16C (Haswell, Zen 1 and later): the AVX2 tables' -mavx2 -mfma -mf16c. */
bool krn_x86_has_avx2(void);
/* AVX-512 F, BW, VL and DQ (x86-64-v4: Skylake-SP, Zen 4 and later), with the AVX2 level:
 * kernels/x86/avx512.c's flags. */
bool krn_x86_has_avx512(void);
/* That, plus AVX512-VNNI, VBMI, VBMI2, BITALG and GFNI (Ice Lake, Zen 4 and later):
 * quants/x86/avx512*.c's flags. Other AVX-512 CPUs run the quants' AVX2 table. */
bool krn_x86_has_avx512_icl(void);

#endif
