/* engine/quants/fp16.c: fp16 -> fp32 for every half, as one table.
 *
 * Its own file so the SIMD kernels that read the table and the registry (quants.c) that fills
 * it before handing out any table both depend on it, and not on each other.
 */
#include "internal.h"

float krn_fp16_table[1 << 16];

void krn_fp16_table_fill(void)
{
	for (uint32_t h = 0; h < (1u << 16); h++)
		krn_fp16_table[h] = krn_fp16_to_fp32((uint16_t)h);
}
