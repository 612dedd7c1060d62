/* engine/runtime/attention.c: block-streaming attention over the KV cache (attention.h).
 *
 * For each block of positions, every head of the call computes the block's scores, folds them
 * into its running maximum m and sum l, rescales its output by exp(m_old - m_new) and adds the
 * block's values weighted by exp(score - m_new); at the end the output is divided by l. This
 * is the softmax-weighted sum of the naive path (session.c, attend_f32) reordered: results
 * differ from it by float rounding only (tests/engine/test_attention.c bounds the difference). Within
 * a block the loops run position-major, heads inner (BLOCK_BODY), as the naive path does over
 * the whole context: a first version that ran head by head within a block read each row in
 * head-sized pieces and decoded stories15M q8_0 at 4K context at 82 tok/s against naive's 291
 * (one run each, shared machine); position-major it matched or beat naive. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "attention.h"
#include "engine.h"

int eng_attn_block_positions(int head_size, size_t elem, int ctx_len)
{
	size_t per_pos = 2 * (size_t)head_size * elem; /* one key and one value of one KV head */
	size_t b = per_pos ? ATTN_BLOCK_BYTES / per_pos : 256;
	if (b < 16)
		b = 16;
	if (b > 256)
		b = 256;
	if (ctx_len > 0 && b > (size_t)ctx_len)
		b = (size_t)ctx_len;
	return (int)b;
}

/* The running state of one head: its maximum score so far and the sum of exp(score - max). */
struct run {
	float m, l;
};

/* Folds n scores into r and rescales out (hs floats) to the new maximum; returns that
 * maximum, from which the block's weights exp(score - max) follow. */
static float fold(struct run *r, const float *sc, int n, float *out, size_t hs)
{
	float mx = r->m;
	for (int i = 0; i < n; i++)
		if (sc[i] > mx)
			mx = sc[i];
	if (mx > r->m) {
		/* exp(-inf) is 0: the first block starts from an empty sum and output. */
		float c = expf(r->m - mx);
		r->l *= c;
		for (size_t i = 0; i < hs; i++)
			out[i] *= c;
		r->m = mx;
	}
	return mx;
}

static void finish(const struct run *r, float *out, size_t hs)
{
	float inv = 1.0f / r->l;
	for (size_t i = 0; i < hs; i++)
		out[i] *= inv;
}

/* One group of heads [g0, g1) over one block [t0, t0 + n): scores position-major (each cache
 * row's slices for these heads are adjacent, so the block streams forward as one run, as the
 * naive path reads it, and heads that share a KV head read the same slice from L1), the
 * running states folded head by head, then the values position-major. DOT(h, t) computes head
 * h's score at position t into sc; AXPY(o, p, t, off) adds p times position t's value slice. */
#define BLOCK_BODY(DOT, AXPY)                                                                 \
	do {                                                                                   \
		for (int i = 0; i < n; i++)                                                     \
			for (int h = g0; h < g1; h++) {                                         \
				float *sc = j->scores + (size_t)(h - g0) * bs + (size_t)i;      \
				DOT(h, t0 + i, (size_t)(h / j->kv_mul) * hs);                   \
				*sc *= j->scale;                                                \
			}                                                                       \
		for (int h = g0; h < g1; h++)                                                   \
			mx[h - g0] = fold(&run[h - g0], j->scores + (size_t)(h - g0) * bs, n,   \
					  out + (size_t)h * hs, hs);                            \
		for (int i = 0; i < n; i++)                                                     \
			for (int h = g0; h < g1; h++) {                                         \
				float p = expf(j->scores[(size_t)(h - g0) * bs + (size_t)i] -   \
					       mx[h - g0]);                                     \
				run[h - g0].l += p;                                             \
				AXPY(out + (size_t)h * hs, p, t0 + i,                           \
				     (size_t)(h / j->kv_mul) * hs);                             \
			}                                                                       \
	} while (0)

void eng_attn_blocked_f32(const struct krn_ops *ops, const struct attn_job *j, const float *q,
		      float *out, int h0, int h1)
{
	size_t hs = (size_t)j->head_size, kv = (size_t)j->kv_dim, bs = (size_t)j->block;
	const float *keys = j->keys, *values = j->values;
#define DOT32(h, t, off) (*sc = ops->dot_f32(q + (size_t)(h) * hs, keys + (size_t)(t) * kv + (off), hs))
#define AXPY32(o, p, t, off) ops->axpy_f32(o, p, values + (size_t)(t) * kv + (off), hs)
	for (int g0 = h0; g0 < h1; g0 += ATTN_HEAD_GROUP) {
		int g1 = g0 + ATTN_HEAD_GROUP < h1 ? g0 + ATTN_HEAD_GROUP : h1;
		struct run run[ATTN_HEAD_GROUP];
		float mx[ATTN_HEAD_GROUP];
		for (int h = g0; h < g1; h++) {
			run[h - g0] = (struct run){ -INFINITY, 0.0f };
			memset(out + (size_t)h * hs, 0, hs * sizeof(float));
		}
		for (int t0 = 0; t0 < j->n_pos; t0 += j->block) {
			int n = j->n_pos - t0 < j->block ? j->n_pos - t0 : j->block;
			BLOCK_BODY(DOT32, AXPY32);
		}
		for (int h = g0; h < g1; h++)
			finish(&run[h - g0], out + (size_t)h * hs, hs);
	}
#undef DOT32
#undef AXPY32
}

void eng_attn_blocked_f16(const struct krn_quant_ops *qops, const struct attn_job *j,
		      const uint16_t *q16, float *out, int h0, int h1)
{
	size_t hs = (size_t)j->head_size, kv = (size_t)j->kv_dim, bs = (size_t)j->block;
	const uint16_t *keys = j->keys, *values = j->values;
	krn_vec_dot_fn dot = qops->vec_dot[KRN_TYPE_F16];
#define DOT16(h, t, off) dot(hs, sc, keys + (size_t)(t) * kv + (off), q16 + (size_t)((h) - h0) * hs)
#define AXPY16(o, p, t, off) qops->axpy_f16(o, p, values + (size_t)(t) * kv + (off), hs)
	for (int g0 = h0; g0 < h1; g0 += ATTN_HEAD_GROUP) {
		int g1 = g0 + ATTN_HEAD_GROUP < h1 ? g0 + ATTN_HEAD_GROUP : h1;
		struct run run[ATTN_HEAD_GROUP];
		float mx[ATTN_HEAD_GROUP];
		for (int h = g0; h < g1; h++) {
			run[h - g0] = (struct run){ -INFINITY, 0.0f };
			memset(out + (size_t)h * hs, 0, hs * sizeof(float));
		}
		for (int t0 = 0; t0 < j->n_pos; t0 += j->block) {
			int n = j->n_pos - t0 < j->block ? j->n_pos - t0 : j->block;
			BLOCK_BODY(DOT16, AXPY16);
		}
		for (int h = g0; h < g1; h++)
			finish(&run[h - g0], out + (size_t)h * hs, hs);
	}
#undef DOT16
#undef AXPY16
}

static const char *const attn_names[ENG_ATTN_COUNT] = {
	[ENG_ATTN_AUTO] = "auto",
	[ENG_ATTN_NAIVE] = "naive",
	[ENG_ATTN_BLOCKED] = "blocked",
};

const char *eng_attention_name(enum eng_attention a)
{
	return (unsigned)a < ENG_ATTN_COUNT ? attn_names[a] : NULL;
}

int eng_attention_parse(const char *name, enum eng_attention *out)
{
	for (int i = 0; i < ENG_ATTN_COUNT; i++)
		if (!strcmp(name, attn_names[i])) {
			*out = (enum eng_attention)i;
			return 0;
		}
	return -EINVAL;
}
