/* engine/quants/x86/avx512_x8l.c: AVX-512 kernels for q8_0 and q5_0 in the x8 layout. */
#include "avx512_x8.h"
#include "quants_impl.h"
