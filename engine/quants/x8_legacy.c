/* engine/quants/x8_legacy.c: the x8 layouts (types.h) of the legacy formats q8_0, q5_0,
 * q4_0, q5_1 and q4_1.
 *
 * All three are shaped for a kernel that keeps row r of the group in 32-bit lane r of a ymm and
 * multiplies with vpdpbusd (unsigned weight bytes, signed activation bytes): every 32 bytes of
 * quants hold four consecutive elements of each of the eight rows, row r in bytes 4r .. 4r + 3,
 * so one broadcast dword of the activation serves all eight rows. The eight scales come first,
 * side by side, for one vcvtph2ps (q4_1's and q5_1's mins after them, at the end of the
 * file). Kernels: x86/avx512_x8l.c, x86/avx2_x8l.c, arm/neon_x8l.c.
 */
#include "internal.h"

/* ---- q8_0: 272 bytes --------------------------------------------------------------------
 *
 *   d[8]           bytes 0 .. 15     row r's d
 *   q[8][32]       bytes 16 .. 271   chunk c (32 bytes): byte 4r + k = row r's qs[4c + k] ^ 0x80
 *
 * The quants are stored offset by 128 (the xor flips the sign bit), so vpdpbusd takes them as
 * they are; the kernel subtracts 128 * sum(activation block), the same for all rows. */

static void pack_q8_0(void *dst, const void *const src[KRN_X8])
{
	uint8_t *o = dst;
	for (int r = 0; r < KRN_X8; r++)
		memcpy(o + 2 * r, &((const block_q8_0 *)src[r])->d, 2);
	for (int h = 0; h < 2; h++)
		krn_x8_transpose4(o + 16 + 128 * h, 32, src, offsetof(block_q8_0, qs) + 16 * h,
				  0x80808080u);
}

static void unpack_q8_0(void *const dst[KRN_X8], const void *src)
{
	const uint8_t *s = src;
	for (int r = 0; r < KRN_X8; r++) {
		block_q8_0 *b = dst[r];
		memcpy(&b->d, s + 2 * r, 2);
		for (int j = 0; j < KRN_QK; j++)
			b->qs[j] = (int8_t)(s[16 + 32 * (j / 4) + 4 * r + j % 4] ^ 0x80);
	}
}

static void pack_q8_0_run(void *dst, const void *src, size_t row_bytes, size_t n)
{
	krn_x8_run(pack_q8_0, sizeof(block_q8_0), dst, src, row_bytes, n);
}

const struct krn_x8_layout krn_x8_layout_q8_0 = { pack_q8_0_run, unpack_q8_0 };

/* ---- q5_0: 176 bytes --------------------------------------------------------------------
 *
 * With the 5-bit quants q[j] = nibble | fifth bit << 4 (0 .. 31) of each row:
 *
 *   d[8]           bytes 0 .. 15     row r's d
 *   q[4][32]       bytes 16 .. 143   chunk c, byte 4r + k: q[4c + k] in bits 0-4 and the top
 *                                    three bits of q[16 + 4c + k] in bits 5-7
 *   low2[32]       bytes 144 .. 175  byte 4r + k: bits 2c, 2c + 1 = the low two bits of
 *                                    q[16 + 4c + k], for c = 0 .. 3
 *
 * The kernel gets elements 4c .. 4c + 3 of the eight rows with one AND (0x1f), and elements
 * 16 + 4c .. 16 + 4c + 3 times eight with two instructions: a GF(2) affine map that moves the
 * two low bits of chunk c out of low2 to bits 3-4, and a ternary-logic merge with bits 5-7 of
 * the chunk. Spreading ggml's qh bits to bytes instead (a shuffle, an AND and a compare per 32
 * quants, or a mask register) costs three to four. */

/* The eight rows' quants (ggml's qh at qh_off and qs at qs_off of each block) into the 160
 * bytes at o: the four chunks, then low2. Shared with q5_1, whose quants are laid out the same
 * after its eight mins. Packing runs at load over every q5_0 byte of a model (2.7 GB of
 * Falcon-7B), so it works on 32-bit words, the eight rows side by side in the lanes of each
 * word array as in the layout, in loops the compiler vectorizes. */
static void pack_q5_quants(uint8_t *o, const void *const src[KRN_X8], size_t qh_off,
			   size_t qs_off)
{
	krn_x8_lanes qh, low2 = { 0 }, qs4[4];
	krn_x8_lanes_at(&qh, src, qh_off);
	krn_x8_words4(qs4, src, qs_off, 0);
	for (int c = 0; c < 4; c++) {
		/* q[4c + k] (low nibbles, qh bit 4c + k) and h = q[16 + 4c + k] (high nibbles, qh
		 * bit 16 + 4c + k), k = 0 .. 3 in the word's bytes; bit k of a nibble x goes to
		 * byte k by the multiply (x | x << 7 | x << 14 | x << 21) */
		krn_x8_lanes qs = qs4[c];
		krn_x8_lanes lo = qh >> (4 * c) & 15u, hi = qh >> (16 + 4 * c) & 15u;
		krn_x8_lanes a = (qs & 0x0f0f0f0fu) | (lo * 0x204081u & 0x01010101u) << 4;
		krn_x8_lanes h = (qs >> 4 & 0x0f0f0f0fu) | (hi * 0x204081u & 0x01010101u) << 4;
		krn_x8_lanes v = a | (h >> 2 & 0x07070707u) << 5;
		memcpy(o + 32 * c, &v, sizeof(v));
		low2 |= (h & 0x03030303u) << (2 * c);
	}
	memcpy(o + 128, &low2, sizeof(low2));
}

static void unpack_q5_quants(const uint8_t *s, int r, uint8_t qh_out[4],
			     uint8_t qs[KRN_QK / 2])
{
	uint32_t qh = 0;
	for (int c = 0; c < 4; c++) {
		for (int k = 0; k < 4; k++) {
			int j = 4 * c + k, byte = s[32 * c + 4 * r + k];
			int a = byte & 0x1f;
			int h = (byte >> 5) << 2 | (s[128 + 4 * r + k] >> (2 * c) & 3);
			qs[j] = (uint8_t)((a & 0x0f) | (h & 0x0f) << 4);
			qh |= (uint32_t)(a >> 4) << j | (uint32_t)(h >> 4) << (j + 16);
		}
	}
	memcpy(qh_out, &qh, sizeof(qh));
}

static void pack_q5_0(void *dst, const void *const src[KRN_X8])
{
	uint8_t *o = dst;
	for (int r = 0; r < KRN_X8; r++)
		memcpy(o + 2 * r, &((const block_q5_0 *)src[r])->d, 2);
	pack_q5_quants(o + 16, src, offsetof(block_q5_0, qh), offsetof(block_q5_0, qs));
}

static void unpack_q5_0(void *const dst[KRN_X8], const void *src)
{
	const uint8_t *s = src;
	for (int r = 0; r < KRN_X8; r++) {
		block_q5_0 *b = dst[r];
		memcpy(&b->d, s + 2 * r, 2);
		unpack_q5_quants(s + 16, r, b->qh, b->qs);
	}
}

static void pack_q5_0_run(void *dst, const void *src, size_t row_bytes, size_t n)
{
	krn_x8_run(pack_q5_0, sizeof(block_q5_0), dst, src, row_bytes, n);
}

const struct krn_x8_layout krn_x8_layout_q5_0 = { pack_q5_0_run, unpack_q5_0 };

/* ---- q4_0: 144 bytes --------------------------------------------------------------------
 *
 *   d[8]           bytes 0 .. 15     row r's d
 *   qs[4][32]      bytes 16 .. 143   chunk c, byte 4r + k = row r's qs[4c + k]: element 4c + k
 *                                    in the low nibble, 16 + 4c + k in the high one
 *
 * The quants stay as ggml stores them, interleaved four bytes per row, so packing moves words
 * and nothing else. The kernel gets elements 4c .. 4c + 3 of the eight rows with one AND
 * (0x0f) and elements 16 + 4c .. 16 + 4c + 3 with another, times 16 (0xf0) or shifted down;
 * the offset of 8 is taken off through the activation's sum, as q5_0's 16. */

static void pack_q4_0(void *dst, const void *const src[KRN_X8])
{
	uint8_t *o = dst;
	for (int r = 0; r < KRN_X8; r++)
		memcpy(o + 2 * r, &((const block_q4_0 *)src[r])->d, 2);
	krn_x8_transpose4(o + 16, 32, src, offsetof(block_q4_0, qs), 0);
}

static void unpack_q4_0(void *const dst[KRN_X8], const void *src)
{
	const uint8_t *s = src;
	for (int r = 0; r < KRN_X8; r++) {
		block_q4_0 *b = dst[r];
		memcpy(&b->d, s + 2 * r, 2);
		for (int c = 0; c < 4; c++)
			memcpy(b->qs + 4 * c, s + 16 + 32 * c + 4 * r, 4);
	}
}

static void pack_q4_0_run(void *dst, const void *src, size_t row_bytes, size_t n)
{
	krn_x8_run(pack_q4_0, sizeof(block_q4_0), dst, src, row_bytes, n);
}

const struct krn_x8_layout krn_x8_layout_q4_0 = { pack_q4_0_run, unpack_q4_0 };

/* ---- q4_1 and q5_1: q4_0's and q5_0's layouts with the eight mins after the scales --------
 *
 *   d[8]           bytes 0 .. 15     row r's d
 *   m[8]           bytes 16 .. 31    row r's m
 *   then q4_0's qs[4][32] (q4_1: 160 bytes) or q5_0's q[4][32] and low2[32] (q5_1: 192 bytes),
 *   32 bytes later than in q4_0 / q5_0 and without an offset: the quants are 0 .. 15 / 0 .. 31
 *   and the min term m * s comes from the Q8_1 activation's s.
 *
 * The kernel converts the eight mins with one vcvtph2ps, as the scales. */

static void pack_q4_1(void *dst, const void *const src[KRN_X8])
{
	uint8_t *o = dst;
	for (int r = 0; r < KRN_X8; r++) {
		const block_q4_1 *b = src[r];
		memcpy(o + 2 * r, &b->d, 2);
		memcpy(o + 16 + 2 * r, &b->m, 2);
	}
	krn_x8_transpose4(o + 32, 32, src, offsetof(block_q4_1, qs), 0);
}

static void unpack_q4_1(void *const dst[KRN_X8], const void *src)
{
	const uint8_t *s = src;
	for (int r = 0; r < KRN_X8; r++) {
		block_q4_1 *b = dst[r];
		memcpy(&b->d, s + 2 * r, 2);
		memcpy(&b->m, s + 16 + 2 * r, 2);
		for (int c = 0; c < 4; c++)
			memcpy(b->qs + 4 * c, s + 32 + 32 * c + 4 * r, 4);
	}
}

static void pack_q4_1_run(void *dst, const void *src, size_t row_bytes, size_t n)
{
	krn_x8_run(pack_q4_1, sizeof(block_q4_1), dst, src, row_bytes, n);
}

const struct krn_x8_layout krn_x8_layout_q4_1 = { pack_q4_1_run, unpack_q4_1 };

static void pack_q5_1(void *dst, const void *const src[KRN_X8])
{
	uint8_t *o = dst;
	for (int r = 0; r < KRN_X8; r++) {
		const block_q5_1 *b = src[r];
		memcpy(o + 2 * r, &b->d, 2);
		memcpy(o + 16 + 2 * r, &b->m, 2);
	}
	pack_q5_quants(o + 32, src, offsetof(block_q5_1, qh), offsetof(block_q5_1, qs));
}

static void unpack_q5_1(void *const dst[KRN_X8], const void *src)
{
	const uint8_t *s = src;
	for (int r = 0; r < KRN_X8; r++) {
		block_q5_1 *b = dst[r];
		memcpy(&b->d, s + 2 * r, 2);
		memcpy(&b->m, s + 16 + 2 * r, 2);
		unpack_q5_quants(s + 32, r, b->qh, b->qs);
	}
}

static void pack_q5_1_run(void *dst, const void *src, size_t row_bytes, size_t n)
{
	krn_x8_run(pack_q5_1, sizeof(block_q5_1), dst, src, row_bytes, n);
}

const struct krn_x8_layout krn_x8_layout_q5_1 = { pack_q5_1_run, unpack_q5_1 };
