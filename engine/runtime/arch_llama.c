/* engine/runtime/arch_llama.c: llama's block (arch.c's llama row): RMSNorm, RoPE on adjacent
 * pairs, grouped-query attention, and the gated FFN, act(gate h) * up h (SwiGLU, or ReLU and
 * ReLU^2 for ReLU-fied models), with the sparsity map (sparsity.h) that skips the rows and
 * blocks a ReLU-family activation's exact zeros leave unread. Built from forward.c's layer
 * toolkit (internal.h). */

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

/* The down projection's rows [a, b) over the nonzero blocks of this thread's map. */
static void down_sparse(const struct eng_session *s, struct worker *w, const struct eng_mat *m,
			int a, int b)
{
	const void *xq = m->type == KRN_TYPE_F32
			     ? NULL
			     : eng_layer_act_get(s, w, VEC_HB, s->hb, m->cols,
						 krn_type_traits(m->type)->vec_dot_type);
	sparse_rows(s->ops, s->qops, s->y2, m, s->hb, xq, w->nz, a, b);
	if (m->delta) { /* canonical + delta (alias.h): the delta's same blocks */
		xq = m->delta->type == KRN_TYPE_F32
		     ? NULL
		     : eng_layer_act_get(s, w, VEC_HB, s->hb, m->cols,
			       krn_type_traits(m->delta->type)->vec_dot_type);
		sparse_rows(s->ops, s->qops, w->dy, m->delta, s->hb, xq, w->nz, a, b);
		alias_add(s->y2, w->dy, (size_t)s->dim, 1, a, b);
	}
}

/* Rows [a, b) of m (one token, x vector `vec`), computed in runs of units holding a row that
 * live marks; a unit is a row, or an x8 group of eight. The rows of the other units are set
 * to zero and not read. Returns the rows skipped. */
static uint64_t rows_live(const struct eng_session *s, struct worker *w, enum act_vec vec,
			  float *y, const struct eng_mat *m, const float *x, const uint8_t *live,
			  int a, int b)
{
	int g = m->x8 || (m->delta && m->delta->x8) ? KRN_X8 : 1;
	uint64_t skipped = 0;
	for (int r = a; r < b;) {
		int r1 = r;
		for (;;) { /* extend the run over live units */
			int u1 = imin(r1 + g, b);
			bool any = false;
			for (int k = r1; k < u1; k++)
				any |= live[k] != 0;
			if (!any || r1 >= b)
				break;
			r1 = u1;
		}
		if (r1 > r) /* mat_rows: a canonical + delta matrix adds its delta's rows */
			eng_layer_mat_rows(s, w, vec, y, (size_t)s->hidden_dim, m, x,
					   (size_t)s->dim, r, r1);
		if (r1 >= b)
			break;
		int u1 = imin(r1 + g, b); /* a dead unit */
		for (int k = r1; k < u1; k++)
			y[k] = 0.0f;
		skipped += (uint64_t)(u1 - r1);
		r = u1;
	}
	return skipped;
}

/* One row of m as a step reads it: a canonical + delta matrix's row and its delta's. */
static uint64_t row_bytes(const struct eng_mat *m)
{
	return m->row_bytes + (m->delta ? m->delta->row_bytes : 0);
}

/* g[r] = act(g[r]) * u[r] for r in [a, b); SwiGLU's whole range in one kernel call. */
static void glu_rows(const struct eng_session *s, float *g, const float *u, int a, int b)
{
	enum eng_ffn_act act = s->m->info.ffn_act;
	if (act == ENG_ACT_SILU) {
		krn_silu_glu(s->ops, g + a, u + a, (size_t)(b - a));
		return;
	}
	for (int r = a; r < b; r++)
		g[r] = sparse_glu(s->ops, act, g[r], u[r]);
}

/* Gate and up rows [a, b) of one token with a sparsity map: the static map's dead neurons'
 * gate rows are not read (with sverify they are, into hb2, to count the map's misses), and
 * for ReLU-family activations an up row is read only where act(gate) is nonzero: exact,
 * since act(gate) * up is then 0 whatever up is. */
static void ffn_up_sparse(struct eng_session *s, struct worker *w, int l, int a, int b)
{
	const struct eng_layer *L = &s->m->layers[l];
	enum eng_ffn_act act = s->m->info.ffn_act;
	bool relu = act == ENG_ACT_RELU || act == ENG_ACT_RELU2;
	uint8_t *live = w->live;
	for (int r = a; r < b; r++)
		live[r] = !s->smap || !eng_sparsity_map_dead(s->smap, l, r);
	if (s->smap && s->sverify) {
		eng_layer_mat_rows(s, w, VEC_XN, s->hb2, (size_t)s->hidden_dim, &L->w_gate, w->xn,
			 (size_t)s->dim, a, b);
		for (int r = a; r < b; r++)
			w->misses += !live[r] && s->hb2[r] > 0.0f;
	}
	uint64_t gate = rows_live(s, w, VEC_XN, s->hb, &L->w_gate, w->xn, live, a, b);
	for (int r = a; r < b; r++) {
		if (!live[r])
			s->hb[r] = 0.0f; /* a dead neuron inside a computed x8 group */
		live[r] = live[r] && (!relu || s->hb[r] > 0.0f);
	}
	uint64_t up = rows_live(s, w, VEC_XN, s->hb2, &L->w_up, w->xn, live, a, b);
	for (int r = a; r < b; r++)
		s->hb[r] = live[r] ? sparse_glu(s->ops, act, s->hb[r], s->hb2[r]) : 0.0f;
	w->gate_skip += gate;
	w->up_skip += up;
	w->row_skip_bytes += gate * row_bytes(&L->w_gate) + up * row_bytes(&L->w_up);
}

/* The down projection's rows [a, b) from its transposed copy wt (hidden_dim rows of dim):
 * only the rows of nonzero activations are read. */
static void down_neuron(const struct eng_session *s, const float *wt, int a, int b)
{
	float *y = s->y2;
	for (int r = a; r < b; r++)
		y[r] = 0.0f;
	for (int j = 0; j < s->hidden_dim; j++) {
		float h = s->hb[j];
		if (h == 0.0f)
			continue;
		const float *row = wt + (size_t)j * (size_t)s->dim;
		for (int r = a; r < b; r++)
			y[r] += h * row[r];
	}
}

/* Llama's block: x += wo attn; x += down (SiLU(gate h) * up h), h = RMSNorm(x). */
static void layer_llama(struct eng_session *s, struct worker *w, int tid, int l)
{
	const struct eng_layer *L = &s->m->layers[l];
	int work = l * WORK_PER_LAYER, a, b;
	size_t dim = (size_t)s->dim, hid = (size_t)s->hidden_dim;
	eng_layer_attention(s, w, tid, l);
	while (eng_layer_take_rows(s, work + WORK_WO, s->dim, &L->wo, &a, &b)) {
		eng_layer_mat_rows(s, w, VEC_XB, s->y, dim, &L->wo, s->xb, (size_t)s->q_dim, a, b);
		eng_layer_add_rows(s, s->x, s->y, s->dim, a, b);
	}
	eng_layer_phase_edge(s, tid, ENG_PHASE_ATTENTION, l, ENG_PHASE_FFN, l);

	/* SwiGLU (Shazeer 2020); gate and up share one phase and one quantized input. */
	eng_layer_norm_input(s, w, tid, prep_work(s, l, PREP_FFN), L->ffn_norm, NULL, &L->w_gate);
	bool sparse = s->sparse && s->n_tok == 1;
	while (eng_layer_take_rows(s, work + WORK_UP, s->hidden_dim, &L->w_up, &a, &b)) {
		if (sparse) {
			ffn_up_sparse(s, w, l, a, b);
			continue;
		}
		eng_layer_mat_rows(s, w, VEC_XN, s->hb, hid, &L->w_gate, xn_of(s, w), dim, a, b);
		eng_layer_mat_rows(s, w, VEC_XN, s->hb2, hid, &L->w_up, xn_of(s, w), dim, a, b);
		for (int t = 0; t < s->n_tok; t++)
			glu_rows(s, s->hb + (size_t)t * hid, s->hb2 + (size_t)t * hid, a, b);
	}
	eng_pool_barrier(s->pool, tid);
	eng_layer_ffn_act_hook(s, tid, l);
	if (prep_shared(s)) /* down's input */
		eng_layer_prep_rows(s, w, tid, prep_work(s, l, PREP_HB), VEC_HB, s->hb, hid,
				    s->hidden_dim, NULL, NULL, &L->w_down);
	/* The sparsity map is one token's (decode): a pass of several tokens (prefill) reads the
	 * down projection whole, and its zero counts are not kept. Every thread maps the zero
	 * blocks itself (O(hidden_dim)); thread 0 counts them. A transposed copy (down_t)
	 * skips one row of dim floats per zero activation instead. */
	const float *wt = s->down_t ? s->down_t[l] : NULL;
	if (s->n_tok == 1) {
		uint64_t zero = 0, zero_blocks = 0;
		sparse_map(&L->w_down, s->hb, w->nz, &zero, &zero_blocks);
		if (tid == 0) {
			s->act_zero += zero;
			s->down_blocks_zero += zero_blocks;
			if (sparse && wt)
				s->skipped_bytes += zero * (uint64_t)s->dim * sizeof(float);
			else if (sparse)
				s->skipped_bytes +=
				    sparse_skipped_bytes(&L->w_down, w->nz) +
				    (L->w_down.delta /* canonical + delta */
					 ? sparse_skipped_bytes(L->w_down.delta, w->nz)
					 : 0);
		}
	}
	while (eng_layer_take_rows(s, work + WORK_DOWN, s->dim, &L->w_down, &a, &b)) {
		if (sparse && wt)
			down_neuron(s, wt, a, b);
		else if (sparse)
			down_sparse(s, w, &L->w_down, a, b);
		else
			eng_layer_mat_rows(s, w, VEC_HB, s->y2, dim, &L->w_down, s->hb, hid, a, b);
		eng_layer_add_rows(s, s->x, s->y2, s->dim, a, b);
	}
}

const struct arch_ops eng_arch_llama_ops = {
	.qkv = qkv_llama,
	.layer = layer_llama,
};
