/* engine/minmax.h: imin and imax, the engine's one definition of each (runtime/ splits rows
 * with them, quants/ref_quantize.c clamps quantized values). */
#ifndef MEMWALL_ENGINE_MINMAX_H
#define MEMWALL_ENGINE_MINMAX_H

static inline int imin(int a, int b)
{
	return a < b ? a : b;
}

static inline int imax(int a, int b)
{
	return a > b ? a : b;
}

#endif
