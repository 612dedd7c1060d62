/* engine/quants/x8_float.c: the x8 layouts (types.h) of the 16-bit float formats f16 and bf16.
 *
 * Both are one array of halves per row (a "block" is one element), so a layout block is
 * element i of the eight rows side by side, 16 bytes: row r's half in bytes 2r, 2r + 1. A
 * kernel that keeps row r in 32-bit lane r of a ymm widens the eight to floats with one
 * vcvtph2ps (f16) or a zero extension and a shift (bf16, exact), and multiplies them by one
 * activation element broadcast to all lanes. Kernels: x86/avx512_x8f.c, x86/avx2_x8f.c,
 * arm/neon_x8f.c.
 *
 * Both formats have the same layout; two names keep the registry (x8.c) one entry a type.
 */
#include "internal.h"

static void pack_16(void *dst, const void *const src[KRN_X8])
{
	uint8_t *o = dst;
	for (int r = 0; r < KRN_X8; r++)
		memcpy(o + 2 * r, src[r], 2);
}

static void pack_16_run(void *dst, const void *src, size_t row_bytes, size_t n)
{
	krn_x8_run(pack_16, 2, dst, src, row_bytes, n);
}

static void unpack_16(void *const dst[KRN_X8], const void *src)
{
	const uint8_t *s = src;
	for (int r = 0; r < KRN_X8; r++)
		memcpy(dst[r], s + 2 * r, 2);
}

const struct krn_x8_layout krn_x8_layout_f16 = { pack_16_run, unpack_16 };
const struct krn_x8_layout krn_x8_layout_bf16 = { pack_16_run, unpack_16 };
