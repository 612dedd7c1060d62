/* engine/quants/x86/x8_kunpack.h: what the x86 K-quant kernels of both ISAs (avx2_x8k.c,
 * avx512_x8k.c) share beyond x8_kquants.h: the eight rows' scales and mins in vpmaddwd form,
 * the unpacked form of a super-block, and the driver of a chunk of tokens over it, so that an
 * improvement of the chunk loop reaches both ISAs. AVX2 instructions only; each ISA's file
 * passes its own per-token kernels (k_tokens_fn: vpmaddubsw sums on AVX2, vpdpbusd chains on
 * AVX-512). Not a header to include anywhere else (as x8_kquants.h, which comes first).
 *
 * A prompt's chunk: with many tokens the one-token kernels' shapes are bound by their
 * per-token work and by registers, not by unpacking: on AVX2 at two tokens a super-block, the
 * eight scales, two int16 sums and one int32 sum a token spill, and in L2 the two-token kernel
 * ran at 1.0-1.03x the one-token one. So each group's super-block is unpacked once for the
 * whole chunk (up to X8K_MM_CHUNK tokens) into plain bytes (0 .. 63) and vpmaddwd scales
 * (k_unpacked, 2.4 KB, in L1), then the chunk's tokens run over it four at a time. The
 * integer sums are exact, so their grouping is free, and each ISA's float steps are its
 * one-token block's: the same bits as its matvec. */
#ifndef X8K_MM_TOK_MAX
#error "include x8_kquants.h before x8_kunpack.h"
#endif

/* the four activation bytes at p in every lane */
static inline __m256i bcast4(const void *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

/* pshufb control: byte j of every dword, zero-extended into both 16-bit halves of the dword
 * (a sub-block's scale for vpmaddwd) */
static inline __m256i byte_of_dword_x2(int j)
{
	int f = (int)0x80008000;
	return _mm256_setr_epi32(j * 0x10001 | f, (4 + j) * 0x10001 | f, (8 + j) * 0x10001 | f,
				 (12 + j) * 0x10001 | f, j * 0x10001 | f, (4 + j) * 0x10001 | f,
				 (8 + j) * 0x10001 | f, (12 + j) * 0x10001 | f);
}

/* pshufb control: 16-bit word j of every dword, into both halves of the dword */
static inline __m256i word_of_dword_x2(int j)
{
	int b = 2 * j * 0x01010101 + 0x01000100;
	return _mm256_setr_epi32(b, b + 0x04040404, b + 0x08080808, b + 0x0c0c0c0c, b,
				 b + 0x04040404, b + 0x08080808, b + 0x0c0c0c0c);
}

/* The eight rows' 6-bit mins (mn, byte j of each lane for sub-blocks j and 4 + j) and scales
 * (scale[j], sub-block j's in both 16-bit halves of each lane, for vpmaddwd) from the header's
 * three words per row: ggml's get_scale_min_k4 bit moves, lane-wise. */
static inline __attribute__((always_inline)) void
k4_scales(const uint8_t *g, __m256i scale[8], __m256i mn[2])
{
	const __m256i m6 = _mm256_set1_epi8(0x3f), m4 = _mm256_set1_epi8(0x0f);
	const __m256i top = _mm256_set1_epi8(0x30);
	__m256i w0 = loadu(g + 32), w1 = loadu(g + 64), w2 = loadu(g + 96);
	__m256i sc[2] = {
		_mm256_and_si256(w0, m6),
		_mm256_or_si256(_mm256_and_si256(w2, m4),
				_mm256_and_si256(_mm256_srli_epi32(w0, 2), top)),
	};
	mn[0] = _mm256_and_si256(w1, m6);
	mn[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, 4), m4),
				_mm256_and_si256(_mm256_srli_epi32(w1, 2), top));
	for (int j = 0; j < 8; j++)
		scale[j] = _mm256_shuffle_epi8(sc[j / 4], byte_of_dword_x2(j % 4));
}

/* One group's super-block, unpacked: q[k] holds the eight rows' four quants of columns
 * 4k .. 4k + 3 (against the activation's dword k), scale[] the sub-blocks' scales in vpmaddwd
 * form (eight of 32 columns; q6_K: sixteen of 16), mn[] k4_scales' mins. */
struct k_unpacked {
	__m256i q[64];
	__m256i scale[16];
	__m256i mn[2];
	__m256i pairs[8]; /* q6_K: the scales of sub-blocks 2p and 2p + 1, int16 side by side */
};

static inline __attribute__((always_inline)) void unpack_q4_K(struct k_unpacked *u,
							      const uint8_t *g)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	k4_scales(g, u->scale, u->mn);
	/* in address order: chunk c of q-step s at 128 + 32 * (4s + c), low nibbles columns
	 * 64c + 4s, high ones 64c + 32 + 4s */
	X8K_UNROLL(32)
	for (int k = 0; k < 32; k++) {
		__m256i v = loadu(g + 128 + 32 * k);
		int s = k / 4, c = k % 4;
		u->q[16 * c + s] = _mm256_and_si256(v, m4);
		u->q[16 * c + 8 + s] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
	}
}

/* q5_K: block_q5_Kx8's values, in q4_K's order */
static inline __attribute__((always_inline)) void unpack_q5_K(struct k_unpacked *u,
							      const uint8_t *g)
{
	const __m256i m5 = _mm256_set1_epi8(0x1f), m3 = _mm256_set1_epi8(0x1c);
	const __m256i m2 = _mm256_set1_epi8(0x03);
	k4_scales(g, u->scale, u->mn);
	for (int s = 0; s < 8; s++) {
		const uint8_t *p = g + 128 + 160 * s;
		__m256i low2 = loadu(p + 128);
		for (int c = 0; c < 4; c++) {
			__m256i v = loadu(p + 32 * c);
			__m256i l = _mm256_and_si256(c ? _mm256_srli_epi16(low2, 2 * c) : low2, m2);
			u->q[16 * c + s] = _mm256_and_si256(v, m5);
			u->q[16 * c + 8 + s] = _mm256_or_si256(
				_mm256_and_si256(_mm256_srli_epi16(v, 3), m3), l);
		}
	}
}

/* q6_K: block_q6_Kx8's values (plus 32, 0 .. 63); sub-block 2p's four dwords 8p .. 8p + 3,
 * 2p + 1's the next four */
static inline __attribute__((always_inline)) void unpack_q6_K(struct k_unpacked *u,
							      const uint8_t *g)
{
	const __m256i m6 = _mm256_set1_epi8(0x3f), m4 = _mm256_set1_epi8(0x0f);
	const __m256i top = _mm256_set1_epi8(0x30);
	const __m128i pairs = _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
	const __m256i first = word_of_dword_x2(0), second = word_of_dword_x2(1);
	const uint8_t *p = g + 144;
	for (int pp = 0; pp < 8; pp++, p += 192) {
		__m128i sc8 = _mm_loadu_si128((const __m128i *)(g + 16 + 16 * pp));
		__m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pairs));
		u->pairs[pp] = sc;
		u->scale[2 * pp] = _mm256_shuffle_epi8(sc, first);
		u->scale[2 * pp + 1] = _mm256_shuffle_epi8(sc, second);
		for (int k = 0; k < 4; k++) {
			__m256i lo4 = loadu(p + 128 + 32 * (k / 2)), v = loadu(p + 32 * k);
			__m256i n = _mm256_and_si256(k % 2 ? _mm256_srli_epi16(lo4, 4) : lo4, m4);
			u->q[8 * pp + k] = _mm256_and_si256(v, m6);
			u->q[8 * pp + 4 + k] = _mm256_or_si256(
				_mm256_and_si256(_mm256_srli_epi16(v, 2), top), n);
		}
	}
}

/* u <- the super-block of eight rows at g */
typedef void (*k_unpack_fn)(struct k_unpacked *u, const uint8_t *g);
/* acc[t] for t < nt (a constant after inlining, at most X8K_MM_TOK_MAX): the matvec's block
 * on token t's super-block ys[t] (prepared slot preps[t]), from u, the unpacked g */
typedef void (*k_tokens_fn)(__m256 *acc, const struct k_unpacked *u, const uint8_t *g,
			    const block_q8_K *const *ys, const void *const *preps, int nt);

/* From this many tokens in a chunk an unpacked super-block pays. On AVX2 in L2 (768 columns,
 * best of 300 calls, as GB/s of weights times tokens over the one-token kernel's in the same
 * run), the four-token kernels reach q4_K 1.52x at 8 tokens and 1.54x at 16, q6_K 1.50x and
 * 1.53x, q5_K 1.71-1.79x; unpacked, q4_K 1.57x and 1.68-1.73x, q6_K 1.59-1.66x and
 * 1.76-1.81x, q5_K 1.87-1.90x and 2.02-2.04x. Below 8 the unpacking costs more than it saves
 * (at 2 tokens 0.65x the four-token kernels, at 4 about even before they took four tokens a
 * call), so a batched decode step takes the block kernels, four tokens a call, then two and
 * one: with chain() their four tokens' sums fit the registers (q4_K at 4 tokens 1.5x the
 * one-token kernel; two tokens a call had given 1.18x). The AVX-512 kernels take the same
 * threshold, not measured there (no AVX-512 machine since they were written); which table
 * runs each token count on a given CPU is what `memwall bench-kernels` measures (engine.h's
 * struct eng_kernel_choice). */
#define X8K_UNPACK_MIN 8

/* A chunk of nt < X8K_UNPACK_MIN tokens on one group (y at the first token's row r): the block
 * kernel four tokens a call, the rest as two and one: on AVX2 a three-token call ran slower
 * than those two (q4_K 0.93x the one-token rate, q6_K 1.08x). The first call streams the
 * group, the others read it from cache. */
static inline __attribute__((always_inline)) void
x8k_mm_small(float *y, size_t ldy, const uint8_t *g, size_t bs, const block_q8_K *const *ys,
	     uint8_t (*prep)[X8K_PREPARED][X8K_SLOT], size_t nt, size_t len, bool first,
	     x8k_mm_block_fn block)
{
	size_t tt = 0;
	for (; tt + X8K_MM_TOK_MAX <= nt; tt += X8K_MM_TOK_MAX)
		x8k_mm_group(y + tt * ldy, ldy, g, bs, ys + tt, prep + tt, len, first, block,
			     X8K_MM_TOK_MAX, tt == 0);
	if (tt + 2 <= nt) {
		x8k_mm_group(y + tt * ldy, ldy, g, bs, ys + tt, prep + tt, len, first, block, 2,
			     tt == 0);
		tt += 2;
	}
	if (tt < nt)
		x8k_mm_group(y + tt * ldy, ldy, g, bs, ys + tt, prep + tt, len, first, block, 1,
			     tt == 0);
}

/* x8k_matmul_tok's loops, with each group's super-block unpacked once for a chunk of at least
 * X8K_UNPACK_MIN tokens (up to X8K_MM_CHUNK), each token's accumulator in acc[] over the
 * tile's super-blocks in order; a smaller chunk goes through block (x8k_mm_small). Each ISA's
 * block (x8k_mm_block_fn) takes up to X8K_MM_TOK_MAX tokens a call, its tokens (k_tokens_fn)
 * up to four. */
static inline __attribute__((always_inline)) void
x8k_matmul_unpacked(float *y, size_t ldy, const uint8_t *w, size_t rows, const uint8_t *xq,
		    size_t ldx, size_t n_tok, size_t nb, size_t r0, size_t r1, size_t bs,
		    void (*prepare)(const block_q8_K *y, void *slot), x8k_mm_block_fn block,
		    k_unpack_fn unpack, k_tokens_fn tokens)
{
	_Alignas(64) uint8_t prep[X8K_MM_CHUNK][X8K_PREPARED][X8K_SLOT];
	_Alignas(64) struct k_unpacked u;
	__m256 acc[X8K_MM_CHUNK];
	size_t tb, n_tiles = krn_x8_tiles(nb, KRN_QK_K, &tb);
	for (size_t k = 0; k < n_tiles; k++) {
		const size_t i0 = k * tb, len = k + 1 < n_tiles ? tb : nb - i0;
		for (size_t t0 = 0; t0 < n_tok; t0 += X8K_MM_CHUNK) {
			const block_q8_K *ys[X8K_MM_CHUNK];
			size_t nt = x8k_chunk(xq, ldx, n_tok, t0, i0, len, prepare, ys, prep);
			for (size_t r = r0; r < r1; r += KRN_X8) {
				const uint8_t *g = w + (i0 * rows + r * len) * bs;
				float *yr = y + t0 * ldy + r;
				if (nt < X8K_UNPACK_MIN) {
					x8k_mm_small(yr, ldy, g, bs, ys, prep, nt, len, k == 0, block);
					continue;
				}
				for (size_t tt = 0; tt < nt; tt++)
					acc[tt] = k ? _mm256_loadu_ps(yr + tt * ldy)
						    : _mm256_setzero_ps();
				for (size_t i = 0; i < len; i++, g += KRN_X8 * bs) {
					const block_q8_K *yi[X8K_MM_CHUNK];
					const void *pi[X8K_MM_CHUNK];
					for (size_t tt = 0; tt < nt; tt++) {
						yi[tt] = ys[tt] + i;
						pi[tt] = prep[tt][i];
					}
					x8k_prefetch(g, bs, true);
					unpack(&u, g);
					size_t tt = 0;
					for (; tt + 4 <= nt; tt += 4)
						tokens(acc + tt, &u, g, yi + tt, pi + tt, 4);
					switch (nt - tt) {
					case 3:
						tokens(acc + tt, &u, g, yi + tt, pi + tt, 3);
						break;
					case 2:
						tokens(acc + tt, &u, g, yi + tt, pi + tt, 2);
						break;
					case 1:
						tokens(acc + tt, &u, g, yi + tt, pi + tt, 1);
						break;
					}
				}
				for (size_t tt = 0; tt < nt; tt++)
					_mm256_storeu_ps(yr + tt * ldy, acc[tt]);
			}
		}
	}
}
