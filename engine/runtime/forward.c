/* engine/runtime/forward.c: a decode session's forward pass, after karpathy/llama2.c run.c's
 * `forward`, parallelised for the memory wall, and the layer toolkit each architecture's block
 * is made of (internal.h): the matrix phases, the attention block, the norms and RoPE variants
 * its row names (model/arch.h), the shared preparation of a phase's input, the gated FFN with
 * its sparsity map. The blocks themselves are arch_<name>.c's (llama's sequential block,
 * falcon's parallel one), picked by session.c's table.
 *
 * Every thread runs the whole step (SPMD, forward_worker) and the threads meet at a barrier
 * between phases that need each other's output. Each matvec is split by rows into chunks
 * (multiples of 16 rows) claimed from an atomic counter (take) by workplan.h's plan: where each
 * thread has many chunks' worth of rows, the chunks shrink as the phase drains, so that a
 * thread that the OS delays (this project's machines are often shared) does not hold the
 * others at the barrier for long; where it has few (a 128-token pass's matrices at 8 to 16
 * threads), the rows split into near-equal chunks, at least one per thread. Every thread
 * streams contiguous slices of each weight matrix. One thread takes each phase whole:
 *   per layer: [norm, q|k|v rows, RoPE, cache write] | [attention: heads in even shares;
 *              a pass over an F16 cache, slices of heads' tokens, as many for each thread] |
 *              [wo rows (llama: residual)] | [llama: norm; gate and up rows, activation] |
 *              [down rows, residual]
 *   then:      [norm, classifier rows]
 * In a step of a few tokens (decode, a batched step: fewer than SHARED_PREP_TOKENS) each
 * thread normalises its own copy of x (O(dim) a token), which saves a serial step and a
 * barrier, and quantizes its own copy of each input vector for non-F32 weights (O(n) again,
 * against O(rows * n) of weights). A pass of more (a prompt's chunk) makes them once, the
 * tokens split among the threads, in a phase of its own before each matrix phase (prep_rows:
 * the norm and x's rows, xb's, the norm and x's rows, hb's): every thread's copies of 128
 * tokens had cost the same at any thread count, some 13% of a stories110M pass at 16
 * (internal.h). Weights of any ggml type run through the quant tables
 * (quants/quants.h) on activations quantized to the weight's vec_dot_type, exactly as ggml's
 * CPU mul_mat does, so results track llama.cpp's. No step allocates.
 *
 * A pass runs n_tok tokens at once (eng_session_step: one; eng_session_prefill: a chunk):
 * every vector above has a row per token, each matrix phase reads its weights once for all
 * of them through the multi-token kernels (krn_quant_matmul, krn_matmul_f32), which give each
 * token the one-token kernels' bits, and attention runs each token over the cache up to its
 * own position, its keys and values written in the same pass before the barrier. Only the
 * last token of a pass that wants logits goes through the classifier.
 *
 * A session may hold n_seq sequences (issue 17's batched decode): each token of a pass carries
 * its sequence and position (tseq, tpos), writes and reads only its sequence's region of the
 * cache, and a batched step (eng_session_step_seqs) runs one token of each sequence in one
 * pass, through the same multi-token kernels, with every token through the classifier.
 */

#include "internal.h"

/* Claims the next chunk [*a, *b) of phase `work`'s `rows` items; false when none is left.
 * The chunk is workplan.h's (guided shrinking where each thread has many chunks' worth, an even
 * split where it has few), a function of the first unclaimed item only, so that the claims'
 * compare-and-swap gives every item to one thread. Chunk starts are multiples of `align`. */
static bool take(struct eng_session *s, int work, int rows, int align, int min, int *a, int *b)
{
	_Atomic int *next = &s->work[work].next;
	int start = atomic_load_explicit(next, memory_order_relaxed);
	do {
		if (!workplan_chunk(rows, align, min, s->n_threads, start, a, b))
			return false;
	} while (!atomic_compare_exchange_weak_explicit(next, &start, *b, memory_order_relaxed,
						       memory_order_relaxed));
	return true;
}

/* The smallest chunk of rows of m for a product over `tokens` tokens (the classifier of a
 * prefill runs one). */
static int chunk_min(const struct eng_mat *m, int tokens)
{
	return tokens > 1 && m->type != KRN_TYPE_F32 ? MIN_CHUNK_ROWS_TOKENS : MIN_CHUNK_ROWS;
}

/* The next rows of m's matvec or matmul over the pass's tokens, in 16-row multiples. */
bool eng_layer_take_rows(struct eng_session *s, int work, int rows, const struct eng_mat *m, int *a,
			 int *b)
{
	return take(s, work, rows, ROW_ALIGN, chunk_min(m, s->n_tok), a, b);
}



/* The slot of activation type t. Binding (gguf_model.c) admits only weight types whose
 * vec_dot_type is listed. */
static int act_slot(uint32_t t)
{
	int slot = 0;
	while (slot < ACT_COUNT && act_type(slot) != t)
		slot++;
	return slot;
}

/* The vector x (n values) quantized to type t for this thread, converted on first use since
 * x last changed (act_reset). */
static const void *act_get(const struct eng_session *s, struct worker *w, enum act_vec vec,
			   const float *x, int n, uint32_t t)
{
	int slot = act_slot(t);
	unsigned char *buf = w->act + ((size_t)vec * ACT_COUNT + (size_t)slot) * s->act_bytes;
	if (!w->valid[vec][slot]) {
		s->qops->quantize_act[t](x, buf, (size_t)n);
		w->valid[vec][slot] = true;
	}
	return buf;
}

static void act_reset(struct worker *w, enum act_vec vec)
{
	memset(w->valid[vec], 0, sizeof(w->valid[vec]));
	w->bslot[vec] = -1;
}

/* The pass's n_tok rows of x (ldx floats apart) quantized to type t, act_bytes apart: the
 * shared ones prep_rows made, or this thread's, converted on first use since x last changed
 * (act_reset) or another type was asked for. */
static const void *act_get_rows(const struct eng_session *s, struct worker *w, enum act_vec vec,
				const float *x, size_t ldx, int n, uint32_t t)
{
	int slot = act_slot(t);
	if (w->bslot[vec] == slot)
		return w->brows[vec];
	unsigned char *buf = w->bact + (size_t)vec * (size_t)s->chunk * s->act_bytes;
	for (int k = 0; k < s->n_tok; k++)
		s->qops->quantize_act[t](x + (size_t)k * ldx, buf + (size_t)k * s->act_bytes,
					 (size_t)n);
	w->bslot[vec] = slot;
	w->brows[vec] = buf;
	return buf;
}

/* A pass of several tokens: y[k * ldy + r] = row r of m . (row k of x, ldx floats apart) for
 * each token k, through the multi-token kernels, which give each token the bits that the
 * one-token path below gives it. */
static void mat_rows_tokens(const struct eng_session *s, struct worker *w, enum act_vec vec,
			    float *y, size_t ldy, const struct eng_mat *m, const float *x,
			    size_t ldx, int a, int b)
{
	if (m->type == KRN_TYPE_F32) {
		krn_matmul_f32(s->ops, y, ldy, m->data, x, ldx, (size_t)s->n_tok, (size_t)m->cols,
			       (size_t)a, (size_t)b);
		return;
	}
	const void *xq = act_get_rows(s, w, vec, x, ldx, m->cols,
				      krn_type_traits(m->type)->vec_dot_type);
	krn_quant_matmul(qops_for(s, m, s->n_tok), m->type, m->x8, y, ldy, m->data,
			 (size_t)m->rows, xq, s->act_bytes, (size_t)s->n_tok, (size_t)m->cols,
			 (size_t)a, (size_t)b);
}

/* y[r] = row r of m . x for r in [a, b), x being vector `vec` of this thread: one token. F32
 * weights go through the f32 kernel table; others through the quant table on the quantized x,
 * as ggml's mul_mat does. */
static void mat_row1(const struct eng_session *s, struct worker *w, enum act_vec vec, float *y,
		     const struct eng_mat *m, const float *x, int a, int b)
{
	if (m->type == KRN_TYPE_F32) {
		s->ops->matvec_f32(y, m->data, x, (size_t)m->cols, (size_t)a, (size_t)b);
		return;
	}
	const void *xq =
	    act_get(s, w, vec, x, m->cols, krn_type_traits(m->type)->vec_dot_type);
	if (m->x8)
		krn_quant_matvec_x8(qops_for(s, m, 1), m->type, y, m->data, (size_t)m->rows, xq,
				    (size_t)m->cols, (size_t)a, (size_t)b);
	else
		krn_quant_matvec(s->qops, m->type, y, m->data, xq, (size_t)m->cols, (size_t)a,
				 (size_t)b);
}

/* mat_row1 for each token of the pass, rows ldy and ldx floats apart. A canonical + delta
 * matrix (alias.h) adds D x, a second pass of the same kernels over the same quantized x. */
void eng_layer_mat_rows(const struct eng_session *s, struct worker *w, enum act_vec vec, float *y,
			size_t ldy, const struct eng_mat *m, const float *x, size_t ldx, int a,
			int b)
{
	for (const struct eng_mat *p = m; p; p = p->delta) {
		float *out = p == m ? y : w->dy;
		if (s->n_tok > 1)
			mat_rows_tokens(s, w, vec, out, ldy, p, x, ldx, a, b);
		else
			mat_row1(s, w, vec, out, p, x, a, b);
		if (p != m)
			eng_alias_add(y, w->dy, ldy, s->n_tok, a, b);
	}
}

/* RMSNorm (Zhang and Sennrich 2019): x / sqrt(mean(x^2) + eps) * w, the sum in double as
 * ggml's rms_norm does (ggml-cpu ops.cpp). b is unused (NULL). */
static void norm_rms(float *out, const float *x, const float *w, const float *b, int n,
			float eps)
{
	(void)b;
	double ss = 0.0;
	for (int i = 0; i < n; i++)
		ss += (double)(x[i] * x[i]);
	float scale = 1.0f / sqrtf((float)(ss / n) + eps);
	for (int i = 0; i < n; i++)
		out[i] = w[i] * (scale * x[i]);
}

/* norm_rms on n_tok rows of x (ld floats apart) into out (the same): four rows at a time,
 * so that four sums in double, each still in norm_rms's order, run side by side; one row's
 * sum is a chain of dependent additions, and prefill's norms had been 2% of its time. */
static void norm_rms_rows(float *out, const float *x, size_t ld, int n_tok, const float *w,
			  int n, float eps)
{
	int t = 0;
	for (; t + 4 <= n_tok; t += 4) {
		const float *x0 = x + (size_t)t * ld;
		double ss[4] = { 0.0, 0.0, 0.0, 0.0 };
		for (int i = 0; i < n; i++)
			for (int k = 0; k < 4; k++) {
				float v = x0[(size_t)k * ld + (size_t)i];
				ss[k] += (double)(v * v);
			}
		for (int k = 0; k < 4; k++) {
			float scale = 1.0f / sqrtf((float)(ss[k] / n) + eps);
			const float *xk = x0 + (size_t)k * ld;
			float *o = out + (size_t)(t + k) * ld;
			for (int i = 0; i < n; i++)
				o[i] = w[i] * (scale * xk[i]);
		}
	}
	for (; t < n_tok; t++)
		norm_rms(out + (size_t)t * ld, x + (size_t)t * ld, w, NULL, n, eps);
}

/* LayerNorm (Ba et al. 2016) with weight and bias, the sums in double as ggml's norm does. */
static void norm_layer(float *out, const float *x, const float *w, const float *b, int n,
			  float eps)
{
	double sum = 0.0, sum2 = 0.0;
	for (int i = 0; i < n; i++)
		sum += (double)x[i];
	float mean = (float)(sum / n);
	for (int i = 0; i < n; i++) {
		float v = x[i] - mean;
		sum2 += (double)(v * v);
	}
	float scale = 1.0f / sqrtf((float)(sum2 / n) + eps);
	for (int i = 0; i < n; i++)
		out[i] = (x[i] - mean) * scale * w[i] + b[i];
}

/* RoPE (Su et al. 2021), NORM mode (llama2.c's run.c, ggml's rope mode 0): rotates the
 * adjacent pairs (2j, 2j+1) of each head, for the first n_rot dimensions; on elements
 * [a, b) of vec, a and b even, at the position of the pass's token k. */
static void rope_norm(const struct eng_session *s, int k, float *vec, int a, int b)
{
	const float *cs = s->rope_cos + (size_t)k * (size_t)(s->n_rot / 2);
	const float *sn_ = s->rope_sin + (size_t)k * (size_t)(s->n_rot / 2);
	/* head by head, so that the inner loop has no division and the compiler vectorizes it
	 * (the same operations on each pair) */
	int hs = s->head_size, rot = imin(s->n_rot, hs);
	for (int i = a; i < b;) {
		int h = i - i % hs, end = imin(b, h + rot);
		float *v = vec + h;
		for (int j = (i - h) / 2; h + 2 * j < end; j++) {
			float c = cs[j], sn = sn_[j], v0 = v[2 * j], v1 = v[2 * j + 1];
			v[2 * j] = v0 * c - v1 * sn;
			v[2 * j + 1] = v0 * sn + v1 * c;
		}
		i = h + hs;
	}
}

/* RoPE, NeoX mode (ggml's GGML_ROPE_TYPE_NEOX, which falcon uses): pairs (j, j + n_rot / 2)
 * of each head. [a, b) covers whole heads (the QKV phase's chunks are head-aligned). */
static void rope_neox(const struct eng_session *s, int k, float *vec, int a, int b)
{
	int half = s->n_rot / 2;
	const float *cs = s->rope_cos + (size_t)k * (size_t)half;
	const float *sn_ = s->rope_sin + (size_t)k * (size_t)half;
	for (int h = a; h < b; h += s->head_size)
		for (int j = 0; j < half; j++) {
			float c = cs[j], sn = sn_[j], v0 = vec[h + j],
			      v1 = vec[h + j + half];
			vec[h + j] = v0 * c - v1 * sn;
			vec[h + j + half] = v0 * sn + v1 * c;
		}
}

/* The norms and RoPE variants by kind (arch.h), for session.c to pick by the model's row. */
norm_fn *const eng_layer_norms[] = {
	[ENG_NORM_RMS] = norm_rms,
	[ENG_NORM_LAYER] = norm_layer,
};
rope_fn *const eng_layer_ropes[] = {
	[ENG_ROPE_NORM] = rope_norm,
	[ENG_ROPE_NEOX] = rope_neox,
};
_Static_assert(sizeof(eng_layer_norms) / sizeof(eng_layer_norms[0]) == ENG_NORM_COUNT,
	       "forward.c: a norm for every enum eng_norm_kind");
_Static_assert(sizeof(eng_layer_ropes) / sizeof(eng_layer_ropes[0]) == ENG_ROPE_COUNT,
	       "forward.c: a RoPE for every enum eng_rope_kind");

/* A barrier at a phase edge. With a phase hook, thread 0 calls it while the others wait, so
 * counters read there see no thread in the next phase; without one, a plain barrier. */
void eng_layer_phase_edge(struct eng_session *s, int tid, enum eng_phase end, int end_layer,
			  enum eng_phase begin, int begin_layer)
{
	if (!s->hooks.phase || tid) {
		eng_pool_barrier(s->pool, tid);
		return;
	}
	if (s->n_threads > 1)
		eng_pool_gather(s->pool);
	s->hooks.phase(s->hooks.ctx, end, end_layer, false);
	s->hooks.phase(s->hooks.ctx, begin, begin_layer, true);
	if (s->n_threads > 1)
		eng_pool_release(s->pool);
}

/* After rows [a, b) of q | k | v are computed for every token of the pass: RoPE on q and k,
 * and the cache write of k and v, for those rows. */
static void qkv_finish(struct eng_session *s, int l, int a, int b)
{
	int qa = a, qb = imin(b, s->q_dim);
	int ka = imax(a, s->q_dim) - s->q_dim, kb = imin(b, s->q_dim + s->kv_dim) - s->q_dim;
	int va = imax(a, s->q_dim + s->kv_dim) - s->q_dim - s->kv_dim,
	    vb = imin(b, s->q_dim + 2 * s->kv_dim) - s->q_dim - s->kv_dim;
	for (int t = 0; t < s->n_tok; t++) {
		float *q = s->qkv + (size_t)t * (size_t)s->qkv_dim, *k = q + s->q_dim,
		      *v = k + s->kv_dim;
		if (qa < qb)
			s->rope(s, t, q, qa, qb);
		if (ka < kb) {
			s->rope(s, t, k, ka, kb);
			s->kv->store_k(s, s->tseq[t], l, s->tpos[t], k, ka, kb);
		}
		/* FAULT_KV_POS: each value lands one cache position late (position 0's in
		 * both 0 and 1), so position p reads token p - 1's and never its own */
		int vp = s->tpos[t] + (s->fault == FAULT_KV_POS && s->tpos[t] + 1 < s->ctx_len);
		if (va < vb && vp != s->tpos[t] && s->tpos[t] == 0)
			s->kv->store_v(s, s->tseq[t], l, 0, v, va, vb);
		if (va < vb)
			s->kv->store_v(s, s->tseq[t], l, vp, v, va, vb);
	}
}

/* norm over rows [t0, t1) of x into the same rows of out (dim floats apart) */
static void norm_tokens(const struct eng_session *s, float *out, const float *nw,
			const float *nb, int t0, int t1)
{
	size_t dim = (size_t)s->dim, at = (size_t)t0 * dim;
	if (s->norm == norm_rms) {
		norm_rms_rows(out + at, s->x + at, dim, t1 - t0, nw, s->dim, s->m->hp.norm_eps);
		return;
	}
	for (int t = t0; t < t1; t++)
		s->norm(out + (size_t)t * dim, s->x + (size_t)t * dim, nw, nb, s->dim,
			      s->m->hp.norm_eps);
}

/* A pass's input to one phase's matrices, made once for every thread (prep_shared): each
 * token's row of x normed (nw, nb) into s->xn when nw is not NULL, then its row of in (n
 * floats, ld apart; s->xn when normed) quantized to m's activation type into s->bact's rows
 * of vec, tokens claimed from counter `work`; a barrier, after which every thread reads them
 * (act_get_rows). Each row is the same function of its token's values as a thread's own copy,
 * so the same bits. */
void eng_layer_prep_rows(struct eng_session *s, struct worker *w, int tid, int work,
			 enum act_vec vec, const float *in, size_t ld, int n, const float *nw,
			 const float *nb, const struct eng_mat *m)
{
	bool quant = m->type != KRN_TYPE_F32;
	uint32_t t = krn_type_traits(m->type)->vec_dot_type;
	unsigned char *buf = s->bact + (size_t)vec * (size_t)s->chunk * s->act_bytes;
	int a, b;
	if (!nw && !quant)
		return;
	/* four tokens a claim at least: norm_rms_rows's group */
	while (take(s, work, s->n_tok, 4, 4, &a, &b)) {
		if (nw)
			norm_tokens(s, s->xn, nw, nb, a, b);
		for (int k = a; quant && k < b; k++)
			s->qops->quantize_act[t](in + (size_t)k * ld,
						 buf + (size_t)k * s->act_bytes, (size_t)n);
	}
	eng_pool_barrier(s->pool, tid);
	if (quant) {
		w->bslot[vec] = act_slot(t);
		w->brows[vec] = buf;
	}
}

/* The input x of m's phase normed (nw, nb) and ready to read (xn_of): shared, or this
 * thread's own copy of every token's row, its quantized rows made on first use. */
static void norm_input(struct eng_session *s, struct worker *w, int tid, int work, const float *nw,
		       const float *nb, const struct eng_mat *m)
{
	act_reset(w, VEC_XN);
	if (prep_shared(s))
		eng_layer_prep_rows(s, w, tid, work, VEC_XN, s->xn, (size_t)s->dim, s->dim, nw, nb,
				    m);
	else
		norm_tokens(s, w->xn, nw, nb, 0, s->n_tok);
}


/* The attention block up to wo's input in s->xb: norm, q|k|v, RoPE, cache, heads. Each token
 * of a pass attends to the cache up to its own position: the cache so far and the tokens of
 * the pass before it, whose keys and values the QKV phase wrote before the barrier. */
void eng_layer_attention(struct eng_session *s, struct worker *w, int tid, int l)
{
	const struct eng_layer *L = &s->m->layers[l];
	int work = l * WORK_PER_LAYER, a, b;
	act_reset(w, VEC_XB);
	act_reset(w, VEC_HB);
	norm_input(s, w, tid, prep_work(s, l, PREP_ATT), L->attn_norm, L->attn_norm_b,
		   L->wqkv.data ? &L->wqkv : &L->wq);
	int min = imax(chunk_min(L->wqkv.data ? &L->wqkv : &L->wq, s->n_tok), s->qkv_align);
	while (take(s, work + WORK_QKV, s->qkv_dim, s->qkv_align, min, &a, &b)) {
		s->arch->qkv(s, w, l, a, b);
		qkv_finish(s, l, a, b);
	}
	eng_pool_barrier(s->pool, tid);
	if (s->fault == FAULT_HEAD_K) { /* KV head j's keys stored in head j - 1's place */
		if (tid == 0)
			for (int t = 0; t < s->n_tok; t++) {
				size_t e = s->kv->elem, hs = (size_t)s->head_size * e;
				char *row = (char *)s->key_cache +
					    kv_row(s, s->tseq[t], l, s->tpos[t]) * e, first[4096];
				size_t all = (size_t)s->kv_dim * e;
				if (hs > sizeof(first) || hs >= all)
					continue;
				memcpy(first, row, hs);
				memmove(row, row + hs, all - hs);
				memcpy(row + all - hs, first, hs);
			}
		eng_pool_barrier(s->pool, tid);
	}
	/* A pass of one sequence's tokens (a prompt's chunk, a verification) reads cache rows it
	 * has just written or read: attend_pass. A batch of sequences' steps reads each one's
	 * cache as decode does. */
	bool pass = s->n_tok > 1 && s->tseq[0] == s->tseq[s->n_tok - 1];
	/* A pass over an F16 cache, none of whose tokens goes blocked: head by head, each KV
	 * head's rows copied out once for the pass's tokens (attend_f16_heads), in units of a
	 * head's slice of tokens, as many for every thread (workplan.h). */
	int last = s->tpos[s->n_tok - 1] + 1;
	bool heads = pass && w->kv16 && last <= s->pass_positions &&
		     (s->attn == ENG_ATTN_NAIVE ||
		      (s->attn == ENG_ATTN_AUTO && last < ENG_ATTN_AUTO_POSITIONS));
	int slices = workplan_head_slices(s->n_heads, s->n_threads, s->n_tok),
	    units = s->n_heads * slices;
	while (heads && take(s, work + WORK_HEADS, units, 1, (units + s->n_threads - 1) /
			     s->n_threads, &a, &b)) {
		int h1 = (b - 1) / slices + 1;
		eng_kv_attend_f16_heads(s, w, l, a / slices, h1,
					workplan_slice_start(a % slices, slices, s->tpos, s->n_tok),
					workplan_slice_start(b - (h1 - 1) * slices, slices, s->tpos,
							     s->n_tok));
	}
	/* Otherwise an even share of heads per claim, so that each thread's heads are one
	 * contiguous piece of every cache row; a late thread's share still goes to whoever is
	 * free. The thread that holds a head runs it for every token of the pass (s->att is per
	 * head). */
	while (!heads && take(s, work + WORK_HEADS, s->n_heads, 1, s->heads_share, &a, &b)) {
		for (int t = 0; t < s->n_tok; t++) {
			bool blocked = s->attn == ENG_ATTN_BLOCKED ||
				       (s->attn == ENG_ATTN_AUTO &&
					s->tpos[t] + 1 >= ENG_ATTN_AUTO_POSITIONS);
			(blocked ? s->kv->attend_blocked
			 : pass	 ? s->kv->attend_pass
				 : s->kv->attend)(s, w, l, t, a, b);
		}
	}
	eng_pool_barrier(s->pool, tid);
	if (s->fault == FAULT_HEAD) { /* head h's output read as head h + 1's */
		if (tid == 0)
			for (int t = 0; t < s->n_tok; t++) {
				float *xb = s->xb + (size_t)t * (size_t)s->q_dim, first[1024];
				size_t hs = (size_t)imin(s->head_size, 1024);
				memcpy(first, xb, hs * sizeof(float));
				memmove(xb, xb + hs, ((size_t)s->q_dim - hs) * sizeof(float));
				memcpy(xb + (size_t)s->q_dim - hs, first, hs * sizeof(float));
			}
		eng_pool_barrier(s->pool, tid);
	}
	if (prep_shared(s)) /* wo's input */
		eng_layer_prep_rows(s, w, tid, prep_work(s, l, PREP_XB), VEC_XB, s->xb,
				    (size_t)s->q_dim, s->q_dim, NULL, NULL, &L->wo);
}

/* dst[t][r] += src[t][r] for rows [a, b) of every token of the pass, rows n apart */
void eng_layer_add_rows(const struct eng_session *s, float *dst, const float *src, int n, int a,
			int b)
{
	for (int t = 0; t < s->n_tok; t++)
		for (int r = a; r < b; r++)
			dst[(size_t)t * (size_t)n + (size_t)r] +=
			    src[(size_t)t * (size_t)n + (size_t)r];
}

/* The FFN-activation hook (engine.h), once per token of the pass: hb is complete here and is
 * written again only in the next layer's FFN, behind barriers this thread has yet to reach. */
void eng_layer_ffn_act_hook(const struct eng_session *s, int tid, int l)
{
	if (!s->hooks.ffn_act || tid)
		return;
	for (int t = 0; t < s->n_tok; t++)
		s->hooks.ffn_act(s->hooks.ctx, l, s->hb + (size_t)t * (size_t)s->hidden_dim,
				 s->hidden_dim);
}

/* ---- The gated FFN and its sparsity map -------------------------------------------------- */

/* The down projection's rows [a, b) over the nonzero blocks of this thread's map. */
static void down_sparse(const struct eng_session *s, struct worker *w, const struct eng_mat *m,
			int a, int b)
{
	const void *xq = m->type == KRN_TYPE_F32
			 ? NULL
			 : act_get(s, w, VEC_HB, s->hb, m->cols, krn_type_traits(m->type)->vec_dot_type);
	eng_sparse_rows(s->ops, s->qops, s->y2, m, s->hb, xq, w->nz, a, b);
	if (m->delta) { /* canonical + delta (alias.h): the delta's same blocks */
		xq = m->delta->type == KRN_TYPE_F32
		     ? NULL
		     : act_get(s, w, VEC_HB, s->hb, m->cols,
			       krn_type_traits(m->delta->type)->vec_dot_type);
		eng_sparse_rows(s->ops, s->qops, w->dy, m->delta, s->hb, xq, w->nz, a, b);
		eng_alias_add(s->y2, w->dy, (size_t)s->dim, 1, a, b);
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

/* The gated FFN of a block whose FFN follows attention (after attention's residual add):
 * h = norm(x) with ffn_norm; x += down (act(gate h) * up h), act the model's (SwiGLU
 * (Shazeer 2020), ReLU, ReLU^2). With the sparsity map on (s->sparse: the row's gated_ffn and
 * the session's option), a one-token pass skips the rows and blocks its exact zeros leave
 * unread. */
void eng_layer_ffn_gated(struct eng_session *s, struct worker *w, int tid, int l)
{
	const struct eng_layer *L = &s->m->layers[l];
	int work = l * WORK_PER_LAYER, a, b;
	size_t dim = (size_t)s->dim, hid = (size_t)s->hidden_dim;
	/* Gate and up share one phase and one quantized input. */
	norm_input(s, w, tid, prep_work(s, l, PREP_FFN), L->ffn_norm, NULL, &L->w_gate);
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
		eng_sparse_map(&L->w_down, s->hb, w->nz, &zero, &zero_blocks);
		if (tid == 0) {
			s->act_zero += zero;
			s->down_blocks_zero += zero_blocks;
			if (sparse && wt)
				s->skipped_bytes += zero * (uint64_t)s->dim * sizeof(float);
			else if (sparse)
				s->skipped_bytes +=
				    eng_sparse_skipped_bytes(&L->w_down, w->nz) +
				    (L->w_down.delta /* canonical + delta */
					 ? eng_sparse_skipped_bytes(L->w_down.delta, w->nz)
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

static void forward_worker(void *arg, int tid)
{
	struct eng_session *s = arg;
	const struct eng_model *m = s->m;
	struct worker *w = &s->workers[tid];
	int a, b;

	for (int l = 0; l < s->n_layers; l++) {
		s->arch->layer(s, w, tid, l);
		if (l + 1 < s->n_layers)
			eng_layer_phase_edge(s, tid, ENG_PHASE_FFN, l, ENG_PHASE_ATTENTION, l + 1);
		else
			eng_layer_phase_edge(s, tid, ENG_PHASE_FFN, l, ENG_PHASE_CLASSIFIER, -1);
	}
	if (!s->want_logits)
		return;
	if (s->all_logits) {
		/* A batched step or a verification: every token's logits, the classifier read
		 * once for all. */
		norm_input(s, w, tid, s->n_work - 2, m->out_norm, m->out_norm_b,
				     &m->output);
		while (eng_layer_take_rows(s, s->n_work - 1, s->vocab_size, &m->output, &a, &b))
			eng_layer_mat_rows(s, w, VEC_XN, s->logits, (size_t)s->vocab_size,
					   &m->output, xn_of(s, w), (size_t)s->dim, a, b);
		return;
	}
	/* The classifier, on the pass's last token only: the logits nobody reads are not
	 * computed. */
	const float *x = s->x + (size_t)(s->n_tok - 1) * (size_t)s->dim;
	act_reset(w, VEC_XN);
	s->norm(w->xn, x, m->out_norm, m->out_norm_b, s->dim, m->hp.norm_eps);
	while (take(s, s->n_work - 1, s->vocab_size, ROW_ALIGN, chunk_min(&m->output, 1), &a, &b))
		mat_row1(s, w, VEC_XN, s->logits, &m->output, w->xn, a, b);
}

/* One pass of the forward over n tokens (n <= chunk), token t of sequence tseq[t] at position
 * tpos[t] (the callers have filled both and checked them); with want_logits, the last token's
 * logits, or with all_logits every token's, row t of s->logits. */
static void run_pass(struct eng_session *s, const int *tokens, int n, bool want_logits,
		     bool all_logits, struct eng_step_bytes *bytes)
{
	int half = s->n_rot / 2;
	s->n_tok = n;
	s->want_logits = want_logits || all_logits;
	s->all_logits = all_logits;
	for (int t = 0; t < n; t++)
		for (int j = 0; j < half; j++) {
			float val = (float)s->tpos[t] * s->rope_freq[j];
			s->rope_cos[(size_t)t * (size_t)half + (size_t)j] = cosf(val);
			s->rope_sin[(size_t)t * (size_t)half + (size_t)j] = sinf(val);
		}
	if (s->hooks.phase)
		s->hooks.phase(s->hooks.ctx, ENG_PHASE_ATTENTION, 0, true);
	/* The embedding lookup is exact: the row dequantized, as ggml's get_rows does. */
	const struct eng_mat *e = &s->m->token_embd;
	for (int t = 0; t < n; t++) {
		const char *row = (const char *)e->data + (size_t)tokens[t] * e->row_bytes;
		float *x = s->x + (size_t)t * (size_t)s->dim;
		if (e->x8) {
			krn_x8_row(e->type, e->data, (size_t)e->rows, (size_t)e->cols,
				   (size_t)tokens[t], s->emb_row);
			row = s->emb_row;
		}
		if (e->type == KRN_TYPE_F32)
			memcpy(x, row, (size_t)s->dim * sizeof(float));
		else
			krn_type_traits(e->type)->to_float(row, x, (size_t)s->dim);
	}
	/* Published to the workers by the pool's release. */
	for (int i = 0; i < s->n_work; i++)
		atomic_store_explicit(&s->work[i].next, 0, memory_order_relaxed);
	s->act_zero = s->down_blocks_zero = s->skipped_bytes = 0;
	for (int t = 0; t < s->n_threads; t++) {
		struct worker *w = &s->workers[t];
		w->gate_skip = w->up_skip = w->row_skip_bytes = w->misses = 0;
	}
	eng_pool_run(s->pool, forward_worker, s);
	if (s->hooks.phase)
		s->hooks.phase(s->hooks.ctx, ENG_PHASE_CLASSIFIER, -1, false);
	for (int t = 0; t < n; t++)
		s->next_pos[s->tseq[t]] = s->tpos[t] + 1;

	if (bytes || s->hooks.token) {
		struct eng_step_bytes b;
		eng_pass_bytes(s, &b);
		if (bytes)
			*bytes = b;
		if (s->hooks.token)
			s->hooks.token(s->hooks.ctx, s->tpos[n - 1], tokens[n - 1], &b);
	}
}

int eng_session_step(struct eng_session *s, int token, int pos, const float **logits,
		     struct eng_step_bytes *bytes)
{
	if (token < 0 || token >= s->vocab_size || pos < 0 || pos >= s->ctx_len ||
	    pos > s->next_pos[0])
		return -EINVAL;
	s->tseq[0] = 0;
	s->tpos[0] = pos;
	run_pass(s, &token, 1, true, false, bytes);
	*logits = s->logits;
	return 0;
}

int eng_session_prefill(struct eng_session *s, const int *tokens, int n, int pos0,
			const float **logits, struct eng_step_bytes *bytes)
{
	return eng_session_prefill_seq(s, 0, tokens, n, pos0, logits, bytes);
}

static void bytes_add(struct eng_step_bytes *sum, const struct eng_step_bytes *b)
{
	sum->weights += b->weights;
	sum->weights_unique += b->weights_unique;
	sum->kv_read += b->kv_read;
	sum->kv_write += b->kv_write;
	for (int k = 0; k < ENG_PHASE_COUNT; k++)
		sum->by_phase[k] += b->by_phase[k];
}

int eng_session_prefill_seq(struct eng_session *s, int seq, const int *tokens, int n, int pos0,
			    const float **logits, struct eng_step_bytes *bytes)
{
	if (seq < 0 || seq >= s->n_seq || n < 1 || pos0 < 0 || pos0 > s->next_pos[seq] ||
	    n > s->ctx_len - pos0)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (tokens[i] < 0 || tokens[i] >= s->vocab_size)
			return -EINVAL;
	if (bytes)
		memset(bytes, 0, sizeof(*bytes));
	for (int i = 0; i < n; i += s->chunk) {
		int nt = imin(s->chunk, n - i);
		struct eng_step_bytes b;
		for (int t = 0; t < nt; t++) {
			s->tseq[t] = seq;
			s->tpos[t] = pos0 + i + t;
		}
		run_pass(s, tokens + i, nt, logits && i + nt == n, false, bytes ? &b : NULL);
		if (bytes)
			bytes_add(bytes, &b);
	}
	if (logits)
		*logits = s->logits;
	return 0;
}

int eng_session_step_seqs(struct eng_session *s, int n, const int *seqs, const int *tokens,
			  const int *pos, const float **logits, struct eng_step_bytes *bytes)
{
	if (n < 1 || n > s->n_seq)
		return -EINVAL;
	for (int t = 0; t < n; t++) {
		int q = seqs ? seqs[t] : t;
		if (q < 0 || q >= s->n_seq || tokens[t] < 0 || tokens[t] >= s->vocab_size ||
		    pos[t] < 0 || pos[t] >= s->ctx_len || pos[t] > s->next_pos[q])
			return -EINVAL;
		/* One token per sequence: two of one sequence would need causal order. */
		for (int u = 0; u < t; u++)
			if (s->tseq[u] == q)
				return -EINVAL;
		s->tseq[t] = q;
		s->tpos[t] = pos[t];
	}
	run_pass(s, tokens, n, true, true, bytes);
	*logits = s->logits;
	return 0;
}

int eng_session_n_seq(const struct eng_session *s)
{
	return s->n_seq;
}

int eng_session_verify(struct eng_session *s, const int *tokens, int n, int pos0,
		       const float **logits, struct eng_step_bytes *bytes)
{
	if (n < 1 || n > s->verify_tokens || pos0 < 0 || pos0 > s->next_pos[0] ||
	    n > s->ctx_len - pos0)
		return -EINVAL;
	for (int t = 0; t < n; t++) {
		if (tokens[t] < 0 || tokens[t] >= s->vocab_size)
			return -EINVAL;
		s->tseq[t] = 0;
		s->tpos[t] = pos0 + t;
	}
	/* all_logits: the classifier over every token of the pass, row t for token t. */
	run_pass(s, tokens, n, true, true, bytes);
	*logits = s->logits;
	return 0;
}

int eng_session_truncate(struct eng_session *s, int pos)
{
	if (pos < 0 || pos > s->next_pos[0])
		return -EINVAL;
	s->next_pos[0] = pos;
	return 0;
}

