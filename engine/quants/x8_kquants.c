/* engine/quants/x8_kquants.c: the x8 layouts (types.h) of the K-quants q4_K, q5_K, q6_K,
 * q2_K and q3_K.
 *
 * Shaped, as x8_legacy.c's, for a kernel that keeps row r of the group in 32-bit lane r of a
 * ymm and multiplies with vpdpbusd: every 32 bytes of quants hold four consecutive elements of
 * each of the eight rows (row r in bytes 4r .. 4r + 3) in one or two sub-blocks, so one
 * broadcast activation dword serves all eight rows. Each element's bits are placed so that
 * the kernel gets four elements of every row in one or two instructions, some of them times
 * a power of two that it takes off the sub-block's sum (the scale multiply is per sub-block
 * anyway). Per-row headers (d, dmin, scales) come first, the eight rows' side by side. Kernels:
 * x86/avx512_x8k.c, x86/avx2_x8k.c, arm/neon_x8k.c.
 */
#include "internal.h"

/* ---- q4_K and q5_K: the header ---------------------------------------------------------
 *
 *   d[8]            bytes 0 .. 15     row r's d
 *   dmin[8]         bytes 16 .. 31    row r's dmin
 *   scales[3][8]    bytes 32 .. 127   32-bit word k of row r's scales[12] at 32 + 32k + 4r
 *
 * The scales stay packed as ggml packs them (get_scale_min_k4): transposed so, the kernel
 * unpacks all eight rows' scales and mins with the same nine word operations that one row
 * costs. */
#define K4_HEAD 128

static void pack_k4_head(uint8_t *o, int r, const uint8_t *b)
{
	memcpy(o + 2 * r, b, 2);
	memcpy(o + 16 + 2 * r, b + 2, 2);
	for (int k = 0; k < 3; k++)
		memcpy(o + 32 + 32 * k + 4 * r, b + 4 + 4 * k, 4);
}

static void unpack_k4_head(uint8_t *b, int r, const uint8_t *s)
{
	memcpy(b, s + 2 * r, 2);
	memcpy(b + 2, s + 16 + 2 * r, 2);
	for (int k = 0; k < 3; k++)
		memcpy(b + 4 + 4 * k, s + 32 + 32 * k + 4 * r, 4);
}

/* ---- q4_K: 1152 bytes -------------------------------------------------------------------
 *
 *   header          bytes 0 .. 127    above
 *   qs[8][4][32]    bytes 128 ..      for q = 0 .. 7, c = 0 .. 3, 32 bytes at 128 + 32 (4q + c):
 *                                     byte 4r + m = row r's qs[32c + 4q + m]
 *
 * ggml's nibbles unchanged: the low nibble is element 64c + 4q + m (sub-block 2c), the high one
 * element 64c + 32 + 4q + m (sub-block 2c + 1). The kernel takes the low with AND 0x0f and the
 * high times 16 with AND 0xf0, in the order stored: one sequential stream. */

static void pack_q4_K(void *dst, const void *const src[KRN_X8])
{
	uint8_t *o = dst;
	for (int r = 0; r < KRN_X8; r++)
		pack_k4_head(o, r, src[r]);
	/* words 8c + q of each row's qs, q = 4j .. 4j + 3, go to chunks 4q + c */
	for (int c = 0; c < 4; c++)
		for (int j = 0; j < 2; j++)
			krn_x8_transpose4(o + K4_HEAD + 32 * (16 * j + c), 128, src,
					  offsetof(block_q4_K, qs) + 4 * (size_t)(8 * c + 4 * j), 0);
}

static void unpack_q4_K(void *const dst[KRN_X8], const void *src)
{
	const uint8_t *s = src;
	for (int r = 0; r < KRN_X8; r++) {
		block_q4_K *b = dst[r];
		unpack_k4_head(dst[r], r, s);
		for (int q = 0; q < 8; q++)
			for (int c = 0; c < 4; c++)
				memcpy(b->qs + 32 * c + 4 * q,
				       s + K4_HEAD + 32 * (4 * q + c) + 4 * r, 4);
	}
}

static void pack_q4_K_run(void *dst, const void *src, size_t row_bytes, size_t n)
{
	krn_x8_run(pack_q4_K, sizeof(block_q4_K), dst, src, row_bytes, n);
}

const struct krn_x8_layout krn_x8_layout_q4_K = { pack_q4_K_run, unpack_q4_K };

/* ---- q5_K: 1408 bytes -------------------------------------------------------------------
 *
 * With the 5-bit quants q[i] = nibble | fifth bit << 4 (0 .. 31) of each row, a = q[64c + 4q + m]
 * (sub-block 2c) and h = q[64c + 32 + 4q + m] (sub-block 2c + 1):
 *
 *   header          bytes 0 .. 127    above
 *   for q = 0 .. 7, 160 bytes at 128 + 160q:
 *     v[4][32]      32 bytes for c = 0 .. 3: byte 4r + m = a | (h >> 2) << 5
 *     low2[32]      byte 4r + m: bits 2c, 2c + 1 = h & 3, for c = 0 .. 3
 *
 * a is v & 0x1f; 8h is v & 0xe0 merged with low2's two bits moved to bits 3-4 (a GF(2) affine
 * map and a ternary-logic merge): three instructions per 32 bytes, where ggml's qh bits cost a
 * shift, an AND and an OR for each nibble. The same scheme as x8_legacy.c's q5_0. */

/* Packing runs at load over every q5_K byte of a model (0.8 GB of Falcon-7B), so it works on
 * 32-bit words with the eight rows side by side, lane r of each word array being row r (the
 * layout's own order: one array is one 32-byte chunk): loops the compiler turns into vector
 * code, where a row at a time and a byte at a time it ran at 4 GB/s from L2 (Zen 4). */
static void pack_q5_K(void *dst, const void *const src[KRN_X8])
{
	uint8_t *o = dst;
	krn_x8_lanes qh[8], qs[32];
	for (int r = 0; r < KRN_X8; r++)
		pack_k4_head(o, r, src[r]);
	for (int j = 0; j < 2; j++)
		krn_x8_words4(qh + 4 * j, src, offsetof(block_q5_K, qh) + 16 * (size_t)j, 0);
	for (int j = 0; j < 8; j++)
		krn_x8_words4(qs + 4 * j, src, offsetof(block_q5_K, qs) + 16 * (size_t)j, 0);
	/* q[i] = nibble | fifth bit << 4 for i = 64c + l (low nibbles of qs[32c + l], qh bit 2c)
	 * and 64c + 32 + l (high nibbles, qh bit 2c + 1), four l to a word; the layout's a and h
	 * are words qq of these */
	for (int qq = 0; qq < 8; qq++) {
		krn_x8_lanes low2 = { 0 };
		for (int c = 0; c < 4; c++) {
			krn_x8_lanes b = qs[8 * c + qq];
			krn_x8_lanes hb = qh[qq] >> (2 * c);
			krn_x8_lanes a = (b & 0x0f0f0f0fu) | (hb & 0x01010101u) << 4;
			krn_x8_lanes h = (b >> 4 & 0x0f0f0f0fu) | (hb >> 1 & 0x01010101u) << 4;
			krn_x8_lanes v = a | (h >> 2 & 0x07070707u) << 5;
			memcpy(o + K4_HEAD + 160 * qq + 32 * c, &v, sizeof(v));
			low2 |= (h & 0x03030303u) << (2 * c);
		}
		memcpy(o + K4_HEAD + 160 * qq + 128, &low2, sizeof(low2));
	}
}

static void unpack_q5_K(void *const dst[KRN_X8], const void *src)
{
	const uint8_t *s = src;
	for (int r = 0; r < KRN_X8; r++) {
		block_q5_K *b = dst[r];
		unpack_k4_head(dst[r], r, s);
		memset(b->qh, 0, sizeof(b->qh));
		for (int q = 0; q < 8; q++) {
			const uint8_t *p = s + K4_HEAD + 160 * q + 4 * r;
			for (int c = 0; c < 4; c++)
				for (int m = 0; m < 4; m++) {
					int l = 4 * q + m, v = p[32 * c + m], a = v & 0x1f;
					int h = (v >> 5) << 2 | ((p[128 + m] >> (2 * c)) & 3);
					b->qs[32 * c + l] = (uint8_t)((a & 0x0f) | (h & 0x0f) << 4);
					b->qh[l] |= (uint8_t)((a >> 4) << (2 * c) |
							      (h >> 4) << (2 * c + 1));
				}
		}
	}
}

static void pack_q5_K_run(void *dst, const void *src, size_t row_bytes, size_t n)
{
	krn_x8_run(pack_q5_K, sizeof(block_q5_K), dst, src, row_bytes, n);
}

const struct krn_x8_layout krn_x8_layout_q5_K = { pack_q5_K_run, unpack_q5_K };

/* ---- q6_K: 1680 bytes -------------------------------------------------------------------
 *
 * With the 6-bit quants q[i] (0 .. 63, the value plus 32) of each row, taken in pairs of
 * sub-blocks (2p, 2p + 1), a = q[32p + 4k + m] and b = q[32p + 16 + 4k + m]:
 *
 *   d[8]            bytes 0 .. 15     row r's d
 *   scales[16][8]   bytes 16 .. 143   byte 16 + 8s + r = row r's scales[s]
 *   for p = 0 .. 7, 192 bytes at 144 + 192p:
 *     v[4][32]      32 bytes for k = 0 .. 3: byte 4r + m = a | (b >> 4) << 6
 *     lo4[2][32]    32 bytes for j = 0, 1: byte 4r + m = (b & 15) of k = 2j in the low nibble,
 *                   of k = 2j + 1 in the high
 *
 * a is v & 0x3f; 4b is v & 0xc0 merged with a nibble of lo4 moved to bits 2-5 (a GF(2)
 * affine map and a ternary-logic merge): six instructions per 16 elements of the eight rows,
 * where ggml's ql/qh split costs thirteen. Scales side by side sign-extend with one
 * vpmovsxbd each. */

static void q6_K_set(block_q6_K *b, int i, int v)
{
	int h = i / 128, s = i % 128 / 32, l = i % 32;
	b->ql[64 * h + 32 * (s & 1) + l] |= (uint8_t)((v & 0x0f) << ((s & 2) ? 4 : 0));
	b->qh[32 * h + l] |= (uint8_t)((v >> 4) << (2 * s));
}

#define Q6_HEAD 144

/* Word-wise with the eight rows side by side, as pack_q5_K (a row and a byte at a time it was
 * 5 GB/s from L2, and a sixth of a q4_0 model's load for its q6_K classifier). */
/* The eight rows' 16 scales, byte s of row r to byte 8s + r of o: a byte transpose, four
 * scales of the eight rows (a chunk of krn_x8_words4) at a time. */
#ifdef KRN_X8_SHUFFLE
typedef uint8_t x8_bytes __attribute__((vector_size(4 * KRN_X8)));

static void q6_K_scales(uint8_t *o, const void *const src[KRN_X8])
{
	krn_x8_lanes w[4];
	krn_x8_words4(w, src, offsetof(block_q6_K, scales), 0);
	for (int c = 0; c < 4; c++) {
		/* lane r's byte j (byte 4r + j) to byte 8j + r */
		x8_bytes v = __builtin_shufflevector((x8_bytes)w[c], (x8_bytes)w[c], 0, 4, 8, 12,
						     16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29, 2,
						     6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23,
						     27, 31);
		memcpy(o + 32 * c, &v, sizeof(v));
	}
}
#else
static void q6_K_scales(uint8_t *o, const void *const src[KRN_X8])
{
	for (int r = 0; r < KRN_X8; r++)
		for (int s = 0; s < 16; s++)
			o[8 * s + r] = ((const uint8_t *)src[r])[offsetof(block_q6_K, scales) + s];
}
#endif

static void pack_q6_K(void *dst, const void *const src[KRN_X8])
{
	uint8_t *o = dst;
	krn_x8_lanes q[64], ql[32], qh[16];
	for (int j = 0; j < 8; j++)
		krn_x8_words4(ql + 4 * j, src, offsetof(block_q6_K, ql) + 16 * (size_t)j, 0);
	for (int j = 0; j < 4; j++)
		krn_x8_words4(qh + 4 * j, src, offsetof(block_q6_K, qh) + 16 * (size_t)j, 0);
	for (int r = 0; r < KRN_X8; r++)
		memcpy(o + 2 * r, &((const block_q6_K *)src[r])->d, 2);
	q6_K_scales(o + 16, src);
	/* ggml's dequantize_row_q6_K: for half h and l = 0 .. 31, quants 128h + 32s + l (s = 0 .. 3)
	 * are the low (s = 0, 1) or high (s = 2, 3) nibbles of ql[64h + l] (s even) or
	 * ql[64h + 32 + l] (s odd), with bits 2s, 2s + 1 of qh[32h + l] on top; four l a word */
	for (int h = 0; h < 2; h++)
		for (int w = 0; w < 8; w++) {
			krn_x8_lanes l0 = ql[16 * h + w], l1 = ql[16 * h + 8 + w], hb = qh[8 * h + w];
			q[32 * h + w] = (l0 & 0x0f0f0f0fu) | (hb & 0x03030303u) << 4;
			q[32 * h + 8 + w] = (l1 & 0x0f0f0f0fu) | (hb >> 2 & 0x03030303u) << 4;
			q[32 * h + 16 + w] = (l0 >> 4 & 0x0f0f0f0fu) | (hb >> 4 & 0x03030303u) << 4;
			q[32 * h + 24 + w] = (l1 >> 4 & 0x0f0f0f0fu) | (hb >> 6 & 0x03030303u) << 4;
		}
	/* pair p: a = q[32p + 4k + m] (word 8p + k), b = q[32p + 16 + 4k + m] (word 8p + 4 + k) */
	for (int p = 0; p < 8; p++) {
		krn_x8_lanes v[6];
		for (int k = 0; k < 4; k++)
			v[k] = q[8 * p + k] | (q[8 * p + 4 + k] >> 4 & 0x03030303u) << 6;
		for (int j = 0; j < 2; j++)
			v[4 + j] = (q[8 * p + 4 + 2 * j] & 0x0f0f0f0fu) |
				   (q[8 * p + 5 + 2 * j] & 0x0f0f0f0fu) << 4;
		memcpy(o + Q6_HEAD + 192 * p, v, sizeof(v));
	}
}

static void unpack_q6_K(void *const dst[KRN_X8], const void *src)
{
	const uint8_t *s = src;
	for (int r = 0; r < KRN_X8; r++) {
		block_q6_K *b = dst[r];
		memcpy(&b->d, s + 2 * r, 2);
		for (int j = 0; j < 16; j++)
			b->scales[j] = (int8_t)s[16 + 8 * j + r];
		memset(b->ql, 0, sizeof(b->ql));
		memset(b->qh, 0, sizeof(b->qh));
		for (int p = 0; p < 8; p++) {
			const uint8_t *d = s + Q6_HEAD + 192 * p + 4 * r;
			for (int k = 0; k < 4; k++)
				for (int m = 0; m < 4; m++) {
					int lo4 = d[128 + 32 * (k / 2) + m] >> (4 * (k % 2)) & 0x0f;
					int a = d[32 * k + m] & 0x3f;
					int v = (d[32 * k + m] >> 6) << 4 | lo4;
					q6_K_set(b, 32 * p + 4 * k + m, a);
					q6_K_set(b, 32 * p + 16 + 4 * k + m, v);
				}
		}
	}
}

static void pack_q6_K_run(void *dst, const void *src, size_t row_bytes, size_t n)
{
	krn_x8_run(pack_q6_K, sizeof(block_q6_K), dst, src, row_bytes, n);
}

const struct krn_x8_layout krn_x8_layout_q6_K = { pack_q6_K_run, unpack_q6_K };

/* ---- q2_K: 672 bytes --------------------------------------------------------------------
 *
 *   d[8]            bytes 0 .. 15     row r's d
 *   dmin[8]         bytes 16 .. 31    row r's dmin
 *   scales[4][32]   bytes 32 .. 159   32 bytes for k = 0 .. 3: byte 4r + m = row r's
 *                                     scales[4k + m] (scale in the low nibble, min high)
 *   qs[2][8][32]    bytes 160 ..      for h = 0, 1 and q = 0 .. 7, 32 bytes at 160 +
 *                                     32 (8h + q): byte 4r + m = row r's qs[32h + 4q + m]
 *
 * ggml's bytes unchanged, four at a time per row, as q4_K's: bits 2j of byte 4r + m are
 * element 128h + 32j + 4q + m (sub-block 8h + 2j + q / 4), so one broadcast activation dword
 * serves the eight rows for each j. */

static void pack_q2_K(void *dst, const void *const src[KRN_X8])
{
	uint8_t *o = dst;
	for (int r = 0; r < KRN_X8; r++) {
		const block_q2_K *b = src[r];
		memcpy(o + 2 * r, &b->d, 2);
		memcpy(o + 16 + 2 * r, &b->dmin, 2);
	}
	krn_x8_transpose4(o + 32, 32, src, offsetof(block_q2_K, scales), 0);
	for (int j = 0; j < 4; j++)
		krn_x8_transpose4(o + 160 + 128 * j, 32, src,
				  offsetof(block_q2_K, qs) + 16 * (size_t)j, 0);
}

static void unpack_q2_K(void *const dst[KRN_X8], const void *src)
{
	const uint8_t *s = src;
	for (int r = 0; r < KRN_X8; r++) {
		block_q2_K *b = dst[r];
		memcpy(&b->d, s + 2 * r, 2);
		memcpy(&b->dmin, s + 16 + 2 * r, 2);
		for (int k = 0; k < 4; k++)
			memcpy(b->scales + 4 * k, s + 32 + 32 * k + 4 * r, 4);
		for (int c = 0; c < 16; c++)
			memcpy(b->qs + 4 * c, s + 160 + 32 * c + 4 * r, 4);
	}
}

static void pack_q2_K_run(void *dst, const void *src, size_t row_bytes, size_t n)
{
	krn_x8_run(pack_q2_K, sizeof(block_q2_K), dst, src, row_bytes, n);
}

const struct krn_x8_layout krn_x8_layout_q2_K = { pack_q2_K_run, unpack_q2_K };

/* ---- q3_K: 880 bytes --------------------------------------------------------------------
 *
 *   d[8]            bytes 0 .. 15     row r's d
 *   scales[3][32]   bytes 16 .. 111   32-bit word k of row r's scales[12] at 16 + 32k + 4r
 *   qs[2][8][32]    bytes 112 .. 623  for h = 0, 1 and q = 0 .. 7, 32 bytes at 112 +
 *                                     32 (8h + q): byte 4r + m = row r's qs[32h + 4q + m]
 *   hmask[8][32]    bytes 624 .. 879  32 bytes for q = 0 .. 7: byte 4r + m = row r's
 *                                     hmask[4q + m]
 *
 * ggml's bytes unchanged, four at a time per row: element 128h + 32j + 4q + m (sub-block
 * 8h + 2j + q / 4) has its low two bits at bits 2j of qs chunk (h, q) and its high bit at
 * bit 4h + j of hmask chunk q, so one broadcast activation dword serves the eight rows. The
 * scales stay packed (ggml's 12 bytes, transposed as q4_K's): the kernel unpacks the eight
 * rows' with the word operations of one. */

static void pack_q3_K(void *dst, const void *const src[KRN_X8])
{
	uint8_t *o = dst;
	for (int r = 0; r < KRN_X8; r++) {
		const block_q3_K *b = src[r];
		memcpy(o + 2 * r, &b->d, 2);
		for (int k = 0; k < 3; k++)
			memcpy(o + 16 + 32 * k + 4 * r, b->scales + 4 * k, 4);
	}
	for (int j = 0; j < 4; j++)
		krn_x8_transpose4(o + 112 + 128 * j, 32, src,
				  offsetof(block_q3_K, qs) + 16 * (size_t)j, 0);
	for (int j = 0; j < 2; j++)
		krn_x8_transpose4(o + 624 + 128 * j, 32, src,
				  offsetof(block_q3_K, hmask) + 16 * (size_t)j, 0);
}

static void unpack_q3_K(void *const dst[KRN_X8], const void *src)
{
	const uint8_t *s = src;
	for (int r = 0; r < KRN_X8; r++) {
		block_q3_K *b = dst[r];
		memcpy(&b->d, s + 2 * r, 2);
		for (int k = 0; k < 3; k++)
			memcpy(b->scales + 4 * k, s + 16 + 32 * k + 4 * r, 4);
		for (int c = 0; c < 16; c++)
			memcpy(b->qs + 4 * c, s + 112 + 32 * c + 4 * r, 4);
		for (int q = 0; q < 8; q++)
			memcpy(b->hmask + 4 * q, s + 624 + 32 * q + 4 * r, 4);
	}
}

static void pack_q3_K_run(void *dst, const void *src, size_t row_bytes, size_t n)
{
	krn_x8_run(pack_q3_K, sizeof(block_q3_K), dst, src, row_bytes, n);
}

const struct krn_x8_layout krn_x8_layout_q3_K = { pack_q3_K_run, unpack_q3_K };
