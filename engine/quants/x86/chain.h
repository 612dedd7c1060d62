/* engine/quants/x86/chain.h: one helper for the AVX2 multi-token kernels (avx2_x8l.c,
 * avx2_x8k.c), which keep a few int16/int32 sums a token in flight.
 *
 * GCC reassociates a run of integer adds freely, and with several tokens' sums live it
 * computes every product of a loop first and adds them up after: at four tokens the q4_0 and
 * q4_K kernels stored 16 to 32 vpmaddubsw results to the stack and loaded them back. An
 * empty asm on the sum after each add makes it a new value GCC cannot see through, so each
 * product is consumed as it is made and the sum stays one chain in program order (the sums
 * are exact integers: their order never changes a bit). */
#ifndef MEMWALL_X86_CHAIN_H
#define MEMWALL_X86_CHAIN_H

#include "kernels/x86/simd.h"

static inline __attribute__((always_inline)) void chain(__m256i *sum)
{
	__asm__("" : "+x"(*sum));
}

#endif
