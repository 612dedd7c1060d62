/* engine/quants/x86/avx512_x8k.c: AVX-512 kernels for q4_K, q5_K and q6_K in the x8 layout. */
#include "avx512_x8.h"
#include "quants_impl.h"
