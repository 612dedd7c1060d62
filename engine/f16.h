/* engine/f16.h: IEEE 754 binary16 <-> binary32 in portable C, for the F16 KV cache. Internal.
 *
 * Bit manipulation rather than _Float16 or F16C, so the cache behaves the same on every ISA
 * and compiler; conversion is O(kv_dim) per step, not the bandwidth-bound part.
 */
#ifndef MEMWALL_F16_H
#define MEMWALL_F16_H

#include <stdint.h>
#include <string.h>

static inline float eng_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (man << 13); /* inf, nan */
	} else if (exp) {
		bits = sign | ((exp + 112) << 23) | (man << 13);
	} else if (man) { /* subnormal: renormalize */
		int e = -1;
		do {
			man <<= 1;
			e++;
		} while (!(man & 0x400));
		bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
	} else {
		bits = sign;
	}
	float f;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Round to nearest even, overflow to infinity, as a hardware conversion does. */
static inline uint16_t eng_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, sizeof(x));
	uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
	int32_t e = (int32_t)exp - 127 + 15;
	if (e >= 0x1f)
		return (uint16_t)(sign | 0x7c00);
	if (e <= 0) {
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000;
		uint32_t shift = (uint32_t)(14 - e);
		uint32_t half = 1u << (shift - 1), rest = man & ((1u << shift) - 1);
		uint32_t m = man >> shift;
		if (rest > half || (rest == half && (m & 1)))
			m++;
		return (uint16_t)(sign | m);
	}
	uint32_t m = man >> 13, rest = man & 0x1fff;
	uint32_t h = sign | ((uint32_t)e << 10) | m;
	if (rest > 0x1000 || (rest == 0x1000 && (m & 1)))
		h++; /* may carry into the exponent, which is right */
	return (uint16_t)h;
}

#endif
