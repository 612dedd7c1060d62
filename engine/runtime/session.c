/* engine/runtime/session.c: a decode session's set-up and teardown: the tables it runs
 * (kernels, quant types, KV element type, the architecture's block), its shape, every buffer
 * it owns, the bytes each step reads, and the sparsity options. The forward pass is forward.c,
 * each architecture's block arch_<name>.c, the KV cache kv_cache.c; internal.h holds the
 * struct they share. */

#include "internal.h"

/* Each architecture's block (arch_<name>.c), by enum eng_arch, from engine/meson.build's
 * list (arch.h). */
#define ARCH_OPS_ROW(NAME, name) [ENG_ARCH_##NAME] = &eng_arch_##name##_ops,
static const struct arch_ops *const arch_ops[] = { ENG_ARCHS(ARCH_OPS_ROW) };
#undef ARCH_OPS_ROW
_Static_assert(sizeof(arch_ops) / sizeof(arch_ops[0]) == ENG_ARCH_COUNT,
	       "session.c: a block for every enum eng_arch");

/* Uninitialised 64-byte aligned room for n elements of elem bytes; NULL on overflow. */
static void *alloc_aligned(size_t n, size_t elem)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, elem, &bytes) || bytes > SIZE_MAX - 64)
		return NULL;
	bytes = (bytes + 63) / 64 * 64;
	return aligned_alloc(64, bytes ? bytes : 64);
}

/* Asks for transparent huge pages on the whole pages inside [p, p + bytes): attention reads
 * the cache of every layer at every step, and 4 KiB pages would add a TLB miss per page. A
 * kernel that declines leaves ordinary pages. */
static void advise_huge(void *p, size_t bytes)
{
	uintptr_t page = 4096, a = ((uintptr_t)p + page - 1) & ~(page - 1);
	uintptr_t b = ((uintptr_t)p + bytes) & ~(page - 1);
	if (p && b > a)
		(void)madvise((void *)a, b - a, MADV_HUGEPAGE);
}

static const char *kernel_names(char *buf, size_t len)
{
	size_t n, used = 0;
	const struct krn_ops *const *all = krn_ops_all(&n);
	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		int k = snprintf(buf + used, len - used, "%s%s%s", i ? ", " : "", all[i]->name,
				 all[i]->supported() ? "" : " (not on this CPU)");
		if (k < 0)
			break;
		used += (size_t)k;
	}
	return buf;
}

/* Bytes of a matrix as a step reads it: all of it. */
/* A canonical + delta matrix reads both (the canonical's bytes once per layer that uses it:
 * touched bytes; eng_step_bytes.weights_unique takes the repeats out). */
static uint64_t mat_bytes(const struct eng_mat *m)
{
	return m->data ? (uint64_t)m->rows * m->row_bytes + (m->delta ? mat_bytes(m->delta) : 0)
		       : 0;
}

static uint64_t vec_bytes(const float *v, int n)
{
	return v ? (uint64_t)n * sizeof(float) : 0;
}

/* Bytes of the longest input vector quantized to any activation type. */
static size_t act_bytes_for(int n)
{
	size_t most = 0;
	for (int i = 0; i < ACT_COUNT; i++) {
		const struct krn_type_traits *tr = krn_type_traits(act_type(i));
		size_t blocks = ((size_t)n + tr->block_size - 1) / tr->block_size;
		if (blocks * tr->type_size > most)
			most = blocks * tr->type_size;
	}
	return (most + 63) / 64 * 64;
}

/* The tables a session runs with: the kernels (opt->kernels), the KV cache's element type,
 * and the architecture's block, norm and RoPE (its row's kinds). */
static int pick_tables(struct eng_session *s, const struct eng_session_options *opt,
		       struct eng_error *err)
{
	const struct eng_model *m = s->m;

	s->ops = krn_ops_find(opt->kernels);
	/* The quant tables have their own names; one this CPU lacks (avx512 without VNNI)
	 * falls back to the best it runs. */
	s->qops = krn_quant_ops_find(opt->kernels);
	if (!s->qops)
		s->qops = krn_quant_ops_find(NULL);
	if (!s->ops || !s->qops) {
		char names[256];
		return eng_error_set(err, -ENOTSUP, "", ENG_NO_OFFSET,
				     "kernels '%s' are unknown or not supported by this CPU; this "
				     "build has: %s",
				     opt->kernels ? opt->kernels : "auto",
				     kernel_names(names, sizeof(names)));
	}
	enum eng_kv_type kv = opt->kv_type == ENG_KV_AUTO ? m->hp.default_kv : opt->kv_type;
	if ((unsigned)kv >= sizeof(eng_kv_traits) / sizeof(eng_kv_traits[0]) || !eng_kv_traits[kv].name)
		return eng_error_set(err, -ENOTSUP, "", ENG_NO_OFFSET,
				     "KV cache type %d is unknown", (int)opt->kv_type);
	s->kv = &eng_kv_traits[kv];
	if ((unsigned)opt->attention >= ENG_ATTN_COUNT)
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "attention kernel %d is unknown (give auto, naive or blocked)",
				     (int)opt->attention);
	s->attn = opt->attention;
	if (!m->arch || (unsigned)m->arch->arch >= ENG_ARCH_COUNT)
		return eng_error_set(err, -ENOTSUP, m->path, ENG_NO_OFFSET,
				     "unknown architecture");
	s->arch = arch_ops[m->arch->arch];
	s->norm = eng_layer_norms[m->arch->norm];
	s->rope = eng_layer_ropes[m->arch->rope];
	return eng_kchoice_resolve(s, opt->kernel_choice, err);
}

/* The model's shape, the threads and the context length, copied where the forward pass
 * reads them. */
static void set_shape(struct eng_session *s, const struct eng_session_options *opt)
{
	const struct eng_model *m = s->m;
	const struct eng_model_info *info = &m->info;

	s->n_threads = opt->threads > 0 ? opt->threads : 1;
	s->dim = info->dim;
	s->hidden_dim = info->hidden_dim;
	s->n_layers = info->n_layers;
	s->n_heads = info->n_heads;
	s->n_kv_heads = info->n_kv_heads;
	s->head_size = m->hp.head_dim;
	s->n_rot = m->hp.n_rot;
	s->q_dim = s->head_size * info->n_heads;
	s->kv_dim = s->head_size * info->n_kv_heads;
	s->vocab_size = info->vocab_size;
	s->ctx_len = opt->ctx_len > 0 ? opt->ctx_len : info->seq_len;
	s->chunk = imin(opt->prefill_chunk > 0 ? opt->prefill_chunk : ENG_PREFILL_CHUNK, s->ctx_len);
	s->n_seq = opt->n_seq > 0 ? opt->n_seq : 1;
	s->verify_tokens = imin(imax(opt->verify_tokens, 0), s->ctx_len);
	/* A batched step runs one token of each sequence in one pass, a verification its
	 * tokens. */
	s->chunk = imax(imax(s->chunk, s->n_seq), s->verify_tokens);
	s->logit_rows = imax(s->n_seq, s->verify_tokens);
	s->qkv_dim = s->q_dim + 2 * s->kv_dim;
	s->heads_share = (s->n_heads + s->n_threads - 1) / s->n_threads;
	s->attn_block = eng_attn_block_positions(s->head_size, s->kv->elem, s->ctx_len);
	s->pass_positions = imin(s->ctx_len, ENG_ATTN_AUTO_POSITIONS);
	/* Whole heads per QKV chunk for NeoX RoPE: the least multiple of both. */
	s->qkv_align = ROW_ALIGN;
	if (s->m->arch->rope == ENG_ROPE_NEOX)
		while (s->qkv_align % s->head_size)
			s->qkv_align += ROW_ALIGN;
}

/* Every buffer of the forward pass, the workers' own and the KV cache of kv_cells elements
 * per cache. What was allocated before a failure is freed by eng_session_free. */
static int alloc_buffers(struct eng_session *s, size_t kv_cells, struct eng_error *err)
{
	const struct eng_model *m = s->m;
	int rc = 0;

	int longest = imax(imax(s->dim, s->q_dim), s->hidden_dim);
	s->act_bytes = act_bytes_for(longest);
	size_t c = (size_t)s->chunk;
	s->x = alloc_aligned(c * (size_t)s->dim, sizeof(float));
	s->xb = alloc_aligned(c * (size_t)s->q_dim, sizeof(float));
	s->y = alloc_aligned(c * (size_t)s->dim, sizeof(float));
	s->y2 = alloc_aligned(c * (size_t)s->dim, sizeof(float));
	s->qkv = alloc_aligned(c * (size_t)s->qkv_dim, sizeof(float));
	s->hb = alloc_aligned(c * (size_t)s->hidden_dim, sizeof(float));
	s->hb2 = alloc_aligned(c * (size_t)s->hidden_dim, sizeof(float));
	if (s->chunk >= SHARED_PREP_TOKENS &&
	    (!(s->xn = alloc_aligned(c * (size_t)s->dim, sizeof(float))) ||
	     !(s->bact = alloc_aligned((size_t)VEC_COUNT * c, s->act_bytes))))
		rc = -ENOMEM;
	s->att = alloc_aligned((size_t)s->n_heads * (size_t)s->ctx_len, sizeof(float));
	s->logits = alloc_aligned((size_t)s->logit_rows * (size_t)s->vocab_size, sizeof(float));
	s->next_pos = calloc((size_t)s->n_seq, sizeof(int));
	s->tseq = calloc(c, sizeof(int));
	s->tpos = calloc(c, sizeof(int));
	s->workers = alloc_aligned((size_t)s->n_threads, sizeof(*s->workers));
	if (s->workers) {
		memset(s->workers, 0, (size_t)s->n_threads * sizeof(*s->workers));
		for (int t = 0; t < s->n_threads; t++) {
			struct worker *w = &s->workers[t];
			w->xn = alloc_aligned(c * (size_t)s->dim, sizeof(float));
			w->act = alloc_aligned((size_t)VEC_COUNT * ACT_COUNT, s->act_bytes);
			for (int v = 0; v < VEC_COUNT; v++)
				w->bslot[v] = -1;
			if (c > 1 && !(w->bact = alloc_aligned((size_t)VEC_COUNT * c,
								s->act_bytes))) {
				rc = -ENOMEM;
				break;
			}
			w->h16 = alloc_aligned((size_t)(s->q_dim + s->ctx_len), sizeof(uint16_t));
			if (c > 1 && s->kv == &eng_kv_traits[ENG_KV_F16] &&
			    (!(w->kv16 = alloc_aligned(2 * (size_t)s->pass_positions *
							       (size_t)s->head_size,
						       sizeof(uint16_t))) ||
			     !(w->att = alloc_aligned((size_t)s->ctx_len, sizeof(float))))) {
				rc = -ENOMEM;
				break;
			}
			w->nz = alloc_aligned((size_t)s->hidden_dim, 1);
			if (m->alias && !(w->dy = alloc_aligned(c * (size_t)imax(longest,
									     s->qkv_dim),
								 sizeof(float)))) {
				rc = -ENOMEM;
				break;
			}
			w->blk = alloc_aligned((size_t)ATTN_HEAD_GROUP * (size_t)s->attn_block,
					       sizeof(float));
			w->live = alloc_aligned((size_t)s->hidden_dim, 1);
			if (!w->xn || !w->act || !w->h16 || !w->nz || !w->blk || !w->live) {
				rc = -ENOMEM;
				break;
			}
		}
	}
	/* The cache is never read beyond next_pos, so it needs no zeroing, and its pages beyond
	 * the first pass's rows (kv_touch_first) are touched only as positions fill: a long
	 * context costs nothing until it is used. */
	s->key_cache = alloc_aligned(kv_cells, s->kv->elem);
	s->value_cache = alloc_aligned(kv_cells, s->kv->elem);
	advise_huge(s->key_cache, kv_cells * s->kv->elem);
	advise_huge(s->value_cache, kv_cells * s->kv->elem);
	s->rope_freq = alloc_aligned((size_t)s->n_rot / 2 + 1, sizeof(float));
	s->rope_cos = alloc_aligned(c * ((size_t)s->n_rot / 2 + 1), sizeof(float));
	s->rope_sin = alloc_aligned(c * ((size_t)s->n_rot / 2 + 1), sizeof(float));
	s->n_work = (WORK_PER_LAYER + PREP_PER_LAYER) * s->n_layers + 2;
	s->work = alloc_aligned((size_t)s->n_work, sizeof(*s->work));
	if (m->token_embd.x8 && !(s->emb_row = alloc_aligned(m->token_embd.row_bytes, 1)))
		rc = -ENOMEM;
	if (rc || !s->x || !s->xb || !s->y || !s->y2 || !s->qkv || !s->hb || !s->hb2 || !s->att ||
	    !s->logits || !s->next_pos || !s->tseq || !s->tpos || !s->workers || !s->key_cache ||
	    !s->value_cache || !s->rope_freq ||
	    !s->rope_cos || !s->rope_sin || !s->work)
		return eng_error_set(err, -ENOMEM, "", ENG_NO_OFFSET,
				     "out of memory for a session of %d positions", s->ctx_len);
	eng_kv_touch_first(s);
	return 0;
}

uint64_t eng_session_layer_vector_bytes(const struct eng_model_info *info, int head_dim)
{
	const struct eng_arch_info *a = eng_arch_lookup(info->arch);
	uint64_t dim = (uint64_t)info->dim, hidden = (uint64_t)info->hidden_dim;
	uint64_t q_dim = (uint64_t)info->n_heads * (uint64_t)head_dim;
	uint64_t kv_dim = (uint64_t)info->n_kv_heads * (uint64_t)head_dim;
	/* x, y, y2 (dim each), xb (q_dim), qkv (q_dim + 2 kv_dim), hb (hidden) and a gated
	 * FFN's up projection hb2 (hidden): alloc_buffers' per-token rows that a layer writes */
	uint64_t elems = 3 * dim + q_dim + (q_dim + 2 * kv_dim) + hidden +
			 (a && a->gated_ffn ? hidden : 0);
	return elems * sizeof(float);
}

/* Engine-accounted bytes, from the bound tensors: the same sizes and the same rules as the
 * tensor table (engine/model/tensors.c), so the two agree exactly. */
static void count_step_bytes(struct eng_session *s)
{
	const struct eng_model *m = s->m;

	s->emb_row_bytes = m->token_embd.row_bytes;
	for (int l = 0; l < s->n_layers; l++) {
		const struct eng_layer *L = &m->layers[l];
		s->att_bytes += vec_bytes(L->attn_norm, s->dim) + vec_bytes(L->attn_norm_b, s->dim) +
				mat_bytes(&L->wq) + mat_bytes(&L->wk) + mat_bytes(&L->wv) +
				mat_bytes(&L->wqkv) + mat_bytes(&L->wo);
		s->ffn_bytes += vec_bytes(L->ffn_norm, s->dim) + mat_bytes(&L->w_gate) +
				mat_bytes(&L->w_up) + mat_bytes(&L->w_down);
	}
	s->cls_bytes = vec_bytes(m->out_norm, s->dim) + vec_bytes(m->out_norm_b, s->dim) +
		       mat_bytes(&m->output);
	s->kv_pos_bytes = 2 * (uint64_t)s->kv_dim * s->kv->elem; /* one key, one value */
}

/* The sparsity map's options (engine.h): the static map checked against the model, and
 * the transposed down projections of per-neuron skipping. */
static int sparse_setup(struct eng_session *s, const struct eng_session_options *opt,
			struct eng_error *err)
{
	const struct eng_model *m = s->m;
	const struct eng_sparsity_map *sm = opt->sparsity_static;
	if (sm && (sm->n_layers != s->n_layers || sm->hidden_dim != s->hidden_dim))
		return eng_error_set(err, -EINVAL, m->path, ENG_NO_OFFSET,
				     "the static sparsity map has %d layers of %d neurons, the "
				     "model %d of %d: calibrate on this model",
				     sm->n_layers, sm->hidden_dim, s->n_layers, s->hidden_dim);
	s->smap = sm;
	s->sverify = sm && opt->sparsity_verify;
	if (!opt->sparsity_neuron)
		return 0;
	for (int l = 0; l < s->n_layers; l++) {
		const struct eng_mat *d = &m->layers[l].w_down;
		if (d->type != KRN_TYPE_F32 || d->x8 || d->delta)
			return eng_error_set(err, -ENOTSUP, m->path, ENG_NO_OFFSET,
					     "per-neuron sparsity needs F32 down projections "
					     "without a canonical + delta split (layer %d's is "
					     "%s%s): use the block map (--sparsity-map without "
					     "--sparsity-neuron)", l, krn_type_traits(d->type)->name,
					     d->delta ? " + delta" : "");
	}
	s->down_t = calloc((size_t)(unsigned)s->n_layers, sizeof(float *));
	if (!s->down_t)
		return eng_error_set(err, -ENOMEM, m->path, ENG_NO_OFFSET, "out of memory");
	for (int l = 0; l < s->n_layers; l++) {
		const float *d = m->layers[l].w_down.data; /* (dim, hidden_dim) */
		float *t = s->down_t[l] = alloc_aligned((size_t)s->hidden_dim * (size_t)s->dim,
						       sizeof(float));
		if (!t)
			return eng_error_set(err, -ENOMEM, m->path, ENG_NO_OFFSET,
					     "out of memory for the transposed down projections");
		for (int r = 0; r < s->dim; r++)
			for (int j = 0; j < s->hidden_dim; j++)
				t[(size_t)j * (size_t)s->dim + (size_t)r] =
					d[(size_t)r * (size_t)s->hidden_dim + (size_t)j];
	}
	return 0;
}

/* MEMWALL_TEST_FAULT's fault (internal.h), tests only. */
static int test_fault(void)
{
	const char *f = getenv("MEMWALL_TEST_FAULT");
	return !f ? FAULT_NONE : !strcmp(f, "kv-pos") ? FAULT_KV_POS
			     : !strcmp(f, "head-k") ? FAULT_HEAD_K
			     : !strcmp(f, "head") ? FAULT_HEAD : FAULT_NONE;
}

int eng_session_new(struct eng_session **out, struct eng_model *m,
		    const struct eng_session_options *opt, struct eng_error *err)
{
	static const struct eng_session_options defaults = { .kv_type = ENG_KV_AUTO };
	struct eng_session *s = NULL;
	size_t kv_cells;
	int rc = 0;

	*out = NULL;
	if (!opt)
		opt = &defaults;
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = eng_error_set(err, -ENOMEM, m->path, ENG_NO_OFFSET, "out of memory");
		goto out;
	}
	s->m = m;
	if ((rc = pick_tables(s, opt, err)))
		goto out;
	if (opt->hooks)
		s->hooks = *opt->hooks;
	set_shape(s, opt);
	/* Only a gated FFN has a map (falcon's GELU is never exactly zero in practice): the
	 * engine's one rule, which memwall headroom asks too. */
	s->map_applies = eng_arch_sparsity_map(m->info.arch);
	s->sparse = opt->sparsity_map && s->map_applies;
	s->fault = test_fault();
	if (s->sparse && (rc = sparse_setup(s, opt, err)))
		goto out;
	if ((rc = eng_kv_cache_cells(s, &kv_cells, err)) || (rc = alloc_buffers(s, kv_cells, err)))
		goto out;
	/* theta_j = base^(-2j / n_rot) (run.c's float formula; ggml's rope gives the same
	 * angles to float rounding). */
	for (int j = 0; j < s->n_rot / 2; j++)
		s->rope_freq[j] = 1.0f / powf(m->hp.rope_base, (float)(2 * j) / (float)s->n_rot);
	if (s->arch->init)
		s->arch->init();
	count_step_bytes(s);

	if ((rc = eng_pool_new(&s->pool, s->n_threads, opt->pin))) {
		eng_error_set(err, rc, "", ENG_NO_OFFSET, "cannot start %d threads: %s",
			      s->n_threads, strerror(-rc));
		goto out;
	}
	*out = s;
	s = NULL;
out:
	eng_session_free(s);
	return rc;
}

void eng_session_free(struct eng_session *s)
{
	if (!s)
		return;
	eng_pool_free(s->pool);
	if (s->workers)
		for (int t = 0; t < s->n_threads; t++) {
			free(s->workers[t].xn);
			free(s->workers[t].act);
			free(s->workers[t].bact);
			free(s->workers[t].h16);
			free(s->workers[t].kv16);
			free(s->workers[t].att);
			free(s->workers[t].nz);
			free(s->workers[t].live);
			free(s->workers[t].dy);
			free(s->workers[t].blk);
		}
	if (s->down_t)
		for (int l = 0; l < s->n_layers; l++)
			free(s->down_t[l]);
	free(s->down_t);
	free(s->workers);
	free(s->x);
	free(s->emb_row);
	free(s->xb);
	free(s->y);
	free(s->y2);
	free(s->qkv);
	free(s->hb);
	free(s->hb2);
	free(s->xn);
	free(s->bact);
	free(s->att);
	free(s->logits);
	free(s->next_pos);
	free(s->tseq);
	free(s->tpos);
	free(s->key_cache);
	free(s->value_cache);
	free(s->rope_freq);
	free(s->rope_cos);
	free(s->rope_sin);
	free(s->work);
	free(s);
}

const char *eng_session_kernels(const struct eng_session *s)
{
	return s->ops->name;
}

const char *eng_session_quant_kernels(const struct eng_session *s)
{
	return s->qops->name;
}
