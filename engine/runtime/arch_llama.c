/* engine/runtime/arch_llama.c: llama's block (arch.c's llama row: RMSNorm, RoPE on adjacent
 * pairs): grouped-query attention from three matrices, its residual, then the gated FFN
 * (SwiGLU, or ReLU and ReLU^2 for ReLU-fied models) with its sparsity map, each after its own
 * norm. Built from forward.c's layer toolkit (internal.h). */

#include "internal.h"

/* Llama: rows [a, b) of q | k | v from the three matrices (one phase, one barrier). */
static void qkv_llama(struct eng_session *s, struct worker *w, int l, int a, int b)
{
	const struct eng_layer *L = &s->m->layers[l];
	const float *xn = xn_of(s, w);
	float *q = s->qkv, *k = q + s->q_dim, *v = k + s->kv_dim;
	size_t ld = (size_t)s->qkv_dim, dim = (size_t)s->dim;
	int qa = a, qb = imin(b, s->q_dim);
	if (qa < qb)
		eng_layer_mat_rows(s, w, VEC_XN, q, ld, &L->wq, xn, dim, qa, qb);
	int ka = imax(a, s->q_dim) - s->q_dim, kb = imin(b, s->q_dim + s->kv_dim) - s->q_dim;
	if (ka < kb)
		eng_layer_mat_rows(s, w, VEC_XN, k, ld, &L->wk, xn, dim, ka, kb);
	int va = imax(a, s->q_dim + s->kv_dim) - s->q_dim - s->kv_dim,
	    vb = imin(b, s->q_dim + 2 * s->kv_dim) - s->q_dim - s->kv_dim;
	if (va < vb)
		eng_layer_mat_rows(s, w, VEC_XN, v, ld, &L->wv, xn, dim, va, vb);
}

/* Llama's block: x += wo attn; then the toolkit's gated FFN, x += down (act(gate h) * up h),
 * h = RMSNorm(x). */
static void layer_llama(struct eng_session *s, struct worker *w, int tid, int l)
{
	const struct eng_layer *L = &s->m->layers[l];
	int work = l * WORK_PER_LAYER, a, b;
	size_t dim = (size_t)s->dim;
	eng_layer_attention(s, w, tid, l);
	while (eng_layer_take_rows(s, work + WORK_WO, s->dim, &L->wo, &a, &b)) {
		eng_layer_mat_rows(s, w, VEC_XB, s->y, dim, &L->wo, s->xb, (size_t)s->q_dim, a, b);
		eng_layer_add_rows(s, s->x, s->y, s->dim, a, b);
	}
	eng_layer_phase_edge(s, tid, ENG_PHASE_ATTENTION, l, ENG_PHASE_FFN, l);
	eng_layer_ffn_gated(s, w, tid, l);
}

const struct arch_ops eng_arch_llama_ops = {
	.qkv = qkv_llama,
	.layer = layer_llama,
};
