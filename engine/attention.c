/* engine/attention.c: block-streaming attention over the KV cache (attention.h).
 *
 * For each block of positions, every head of the call computes the block's scores, folds them
 * into its running maximum m and sum l, rescales its output by exp(m_old - m_new) and adds the
 * block's values weighted by exp(score - m_new); at the end the output is divided by l. This
 * is the softmax-weighted sum of the naive path (session.c, attend_f32) reordered: results
 * differ from it by float rounding only (tests/test_attention.c bounds the difference). The
 * heads of a call run block by block, heads inner: consecutive heads that share a KV head
 * (h / kv_mul) read the same block rows, which the first of them brought into L1. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "attention.h"
#include "engine.h"

int attn_block_positions(int head_size, size_t elem, int ctx_len)
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

void attn_blocked_f32(const struct krn_ops *ops, const struct attn_job *j, const float *q,
		      float *out, int h0, int h1)
{
	size_t hs = (size_t)j->head_size, kv = (size_t)j->kv_dim, bs = (size_t)j->block;
	const float *keys = j->keys, *values = j->values;
	for (int g0 = h0; g0 < h1; g0 += ATTN_HEAD_GROUP) {
		int g1 = g0 + ATTN_HEAD_GROUP < h1 ? g0 + ATTN_HEAD_GROUP : h1;
		struct run run[ATTN_HEAD_GROUP];
		for (int h = g0; h < g1; h++) {
			run[h - g0] = (struct run){ -INFINITY, 0.0f };
			memset(out + (size_t)h * hs, 0, hs * sizeof(float));
		}
		for (int t0 = 0; t0 < j->n_pos; t0 += j->block) {
			int n = j->n_pos - t0 < j->block ? j->n_pos - t0 : j->block;
			for (int h = g0; h < g1; h++) {
				size_t off = (size_t)(h / j->kv_mul) * hs;
				const float *qh = q + (size_t)h * hs;
				float *o = out + (size_t)h * hs, *sc = j->scores + (size_t)(h - g0) * bs;
				struct run *r = &run[h - g0];
				for (int i = 0; i < n; i++)
					sc[i] = ops->dot_f32(qh, keys + (size_t)(t0 + i) * kv + off,
							     hs) * j->scale;
				float mx = fold(r, sc, n, o, hs);
				for (int i = 0; i < n; i++) {
					float p = expf(sc[i] - mx);
					r->l += p;
					ops->axpy_f32(o, p, values + (size_t)(t0 + i) * kv + off, hs);
				}
			}
		}
		for (int h = g0; h < g1; h++)
			finish(&run[h - g0], out + (size_t)h * hs, hs);
	}
}

void attn_blocked_f16(const struct krn_quant_ops *qops, const struct attn_job *j,
		      const uint16_t *q16, float *out, int h0, int h1)
{
	size_t hs = (size_t)j->head_size, kv = (size_t)j->kv_dim, bs = (size_t)j->block;
	const uint16_t *keys = j->keys, *values = j->values;
	krn_vec_dot_fn dot = qops->vec_dot[KRN_TYPE_F16];
	for (int g0 = h0; g0 < h1; g0 += ATTN_HEAD_GROUP) {
		int g1 = g0 + ATTN_HEAD_GROUP < h1 ? g0 + ATTN_HEAD_GROUP : h1;
		struct run run[ATTN_HEAD_GROUP];
		for (int h = g0; h < g1; h++) {
			run[h - g0] = (struct run){ -INFINITY, 0.0f };
			memset(out + (size_t)h * hs, 0, hs * sizeof(float));
		}
		for (int t0 = 0; t0 < j->n_pos; t0 += j->block) {
			int n = j->n_pos - t0 < j->block ? j->n_pos - t0 : j->block;
			for (int h = g0; h < g1; h++) {
				size_t off = (size_t)(h / j->kv_mul) * hs;
				const uint16_t *qh = q16 + (size_t)(h - h0) * hs;
				float *o = out + (size_t)h * hs, *sc = j->scores + (size_t)(h - g0) * bs;
				struct run *r = &run[h - g0];
				for (int i = 0; i < n; i++) {
					dot(hs, &sc[i], keys + (size_t)(t0 + i) * kv + off, qh);
					sc[i] *= j->scale;
				}
				float mx = fold(r, sc, n, o, hs);
				for (int i = 0; i < n; i++) {
					float p = expf(sc[i] - mx);
					r->l += p;
					qops->axpy_f16(o, p, values + (size_t)(t0 + i) * kv + off, hs);
				}
			}
		}
		for (int h = g0; h < g1; h++)
			finish(&run[h - g0], out + (size_t)h * hs, hs);
	}
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
