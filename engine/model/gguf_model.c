/* engine/model/gguf_model.c: a GGUF file as a model for the forward pass (model.h).
 *
 * The architecture comes from general.architecture, the shape from the "<arch>.*" keys
 * (llama.cpp's LLM_KV names, src/llama-arch.cpp), and each tensor is bound by its name
 * (llama.cpp's LLM_TENSOR_NAMES) after checking its shape and type against what the
 * architecture expects; a mismatch names the tensor. Tensors stay views into the reader's
 * mapping. Every ggml type quants.h implements may appear; activations are quantized to the
 * weight's vec_dot_type at run time, as ggml does (session.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alias.h"
#include "format/gguf.h"
#include "gguf_model.h"
#include "format/hugecopy.h"
#include "model.h"
#include "arch.h"
#include "quants.h"

/* An integer "<arch>.key"; def when absent (def < 0: required). Must lie in [1, INT32_MAX]. */
static int arch_int(const struct eng_gguf *g, const char *arch, const char *key, int64_t def,
		    int *v, const char *path, struct eng_error *err)
{
	char full[128];
	int64_t x;
	snprintf(full, sizeof(full), "%s.%s", arch, key);
	int rc = eng_gguf_get_int(g, full, &x, err);
	if (rc == -ENOENT) {
		if (def < 0)
			return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
					     "metadata key '%s' is missing: the file does not give "
					     "the model's shape", full);
		x = def;
	} else if (rc) {
		return rc;
	}
	if (x <= 0 || x > INT32_MAX)
		return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				     "metadata key '%s' is %" PRId64 ": it must be a positive int",
				     full, x);
	*v = (int)x;
	return 0;
}

/* A float "<arch>.key", def when absent; must be finite and positive. */
static int arch_float(const struct eng_gguf *g, const char *arch, const char *key, float def,
		      float *v, const char *path, struct eng_error *err)
{
	char full[128];
	double x;
	snprintf(full, sizeof(full), "%s.%s", arch, key);
	int rc = eng_gguf_get_float(g, full, &x, err);
	if (rc == -ENOENT)
		x = def;
	else if (rc)
		return rc;
	if (!(x > 0.0 && x < 1e30))
		return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				     "metadata key '%s' is %g: it must be a positive number", full, x);
	*v = (float)x;
	return 0;
}

/* `memwall synth` marks its files with memwall.synthetic = true (engine.h, eng_synth_gguf);
 * no converter of a trained model writes that key. */
static bool is_synthetic(const struct eng_gguf *g)
{
	bool b = false;
	return !eng_gguf_get_bool(g, "memwall.synthetic", &b, NULL) && b;
}

/* The FFN activation (engine.h): the row's act, unless the file names another of the row's
 * acts in "<arch>.feed_forward_activation" (memwall's key: llama.cpp has none), as a ReLU
 * llama's does. */
static int read_ffn_act(struct eng_model *m, const struct eng_arch_desc *ad,
			struct eng_error *err)
{
	char key[96], name[16], runs[64] = "";
	struct eng_gguf_str v;
	m->info.ffn_act = ad->info.act;
	snprintf(key, sizeof(key), "%s.feed_forward_activation", ad->info.name);
	if (eng_gguf_get_str(m->gguf, key, &v, NULL))
		return 0;
	snprintf(name, sizeof(name), "%.*s", (int)(v.len < 15 ? v.len : 15), v.ptr);
	enum eng_ffn_act a;
	if (v.len < 15 && !eng_ffn_act_parse(name, &a) && (ad->info.acts & (1u << a))) {
		m->info.ffn_act = a;
		return 0;
	}
	for (int i = 0, used = 0; i < ENG_ACT_COUNT; i++)
		if (ad->info.acts & (1u << i))
			used += snprintf(runs + used, sizeof(runs) - (size_t)used, "%s'%s'",
					 used ? ", " : "", eng_ffn_act_name((enum eng_ffn_act)i));
	return eng_error_set(err, -EINVAL, m->path, ENG_NO_OFFSET,
			     "key '%s' is '%s': memwall runs %s for %s", key, name, runs,
			     ad->info.name);
}

/* Finds, checks and binds one tensor into dst (a struct eng_mat, or a const float * for a
 * ENG_T_VECTOR), adding what a step reads of it to *bytes. */
static int bind_one(const struct eng_gguf *g, const struct eng_arch_tensor *b, int layer,
		    const uint64_t x[ENG_X_COUNT], void *dst, const char *path, struct eng_error *err,
		    uint64_t *bytes)
{
	char name[ENG_GGUF_MAX_NAME + 16];
	/* The format string comes from the tables above, never from input. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(name, sizeof(name), b->name, layer);
#pragma GCC diagnostic pop
	const struct eng_gguf_tensor *t = eng_gguf_tensor_find(g, name);
	if (!t) {
		if (b->flags & ENG_T_OPTIONAL)
			return 0;
		return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				     "tensor '%s' is missing: the file is not a complete model of "
				     "this architecture", name);
	}
	uint64_t rows = x[b->rows], cols = x[b->cols];
	bool shape_ok = t->ne[0] == cols && t->ne[2] == 1 && t->ne[3] == 1 &&
			(t->ne[1] == rows || (rows == 1 && t->n_dims == 1));
	if (!shape_ok)
		return eng_error_set(err, -EINVAL, path, t->offset,
				     "tensor '%s' has shape [%" PRIu64 ", %" PRIu64 ", %" PRIu64
				     ", %" PRIu64 "]; the metadata's hyper-parameters say [%" PRIu64
				     ", %" PRIu64 "] (ne[0] is the row length)",
				     name, t->ne[0], t->ne[1], t->ne[2], t->ne[3], cols, rows);
	const struct krn_type_traits *tr = krn_type_traits(t->type);
	if (b->flags & ENG_T_VECTOR) {
		if (t->type != KRN_TYPE_F32)
			return eng_error_set(err, -ENOTSUP, path, t->offset,
					     "tensor '%s' is %s: memwall reads norm vectors as f32 "
					     "only (llama-quantize keeps them f32)",
					     name, tr ? tr->name : "an unknown type");
		const float *v = t->data;
		memcpy(dst, &v, sizeof(v));
		*bytes += t->n_bytes;
		return 0;
	}
	if (!tr || (t->type != KRN_TYPE_F32 && (!tr->to_float || !krn_type_traits(tr->vec_dot_type))))
		return eng_error_set(err, -ENOTSUP, path, t->offset,
				     "tensor '%s' has ggml type %" PRIu32 " (%s), which memwall cannot "
				     "compute with; supported: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 "
				     "q2_K q3_K q4_K q5_K q6_K", name, t->type,
				     tr ? tr->name : "unknown");
	size_t row_bytes = krn_row_size(t->type, cols);
	if (!row_bytes || (uint64_t)row_bytes * rows != t->n_bytes)
		return eng_error_set(err, -EINVAL, path, t->offset,
				     "tensor '%s' (%s): a row of %" PRIu64 " elements is not a "
				     "whole number of %" PRIu32 "-element blocks",
				     name, tr->name, cols, tr->block_size);
	struct eng_mat m = { .data = t->data, .type = t->type, .rows = (int)rows,
			     .cols = (int)cols, .row_bytes = row_bytes };
	memcpy(dst, &m, sizeof(m));
	/* What a step reads (engine.h's tensor table rules): the embedding one row. */
	*bytes += b->rows == ENG_X_VOCAB && b->field == offsetof(struct eng_model, token_embd)
			  ? row_bytes : t->n_bytes;
	return 0;
}

/* A layer whose matrices share a canonical (alias.h): binds b's canonical once, at the first
 * such layer, and layer l's delta, each checked as bind_one checks the whole matrix. */
static int bind_split(const struct eng_gguf *g, const struct eng_arch_tensor *b, int l,
		      const uint64_t x[ENG_X_COUNT], struct eng_model *m, struct eng_error *err,
		      uint64_t *bytes)
{
	char canon[ENG_GGUF_MAX_NAME + 16], delta[ENG_GGUF_MAX_NAME + 16];
	int k = eng_alias_kind(b->field), rc;
	if (k < 0)
		return 0;
	eng_alias_names(b->name, canon, delta);
	struct eng_arch_tensor cb = *b, db = *b;
	cb.name = canon;
	db.name = delta;
	if (l == m->alias->first &&
	    (rc = bind_one(g, &cb, l, x, eng_alias_canon_slot(m->alias, k), m->path, err, bytes)))
		return rc;
	return bind_one(g, &db, l, x, eng_alias_delta_slot(m->alias, l, k), m->path, err, bytes);
}

/* The copying load modes (ENG_LOAD_HUGE_COPY, ENG_LOAD_REPACK): the reader has allocated the
 * copy and pointed the tensors into it; this fills it in one pass on every CPU the process may
 * use (hugecopy.c). Under repack, the matrices whose type this CPU's best quant table has an
 * x8 kernel for, with whole groups of eight rows, are packed from the file's mapping straight
 * into the x8 layout; every other byte is read as it is. */

/* The matrices a layer may have (struct eng_layer). */
#define LAYER_MATS 8

static bool repackable(const struct krn_quant_ops *ops, const struct eng_mat *m)
{
	return m->data && krn_quant_x8_native(ops, m->type) && m->rows % KRN_X8 == 0;
}

static int by_data(const void *a, const void *b)
{
	const struct eng_mat *x = *(struct eng_mat *const *)a, *y = *(struct eng_mat *const *)b;
	return (const char *)x->data < (const char *)y->data ? -1 : x->data != y->data;
}

/* A piece of one matrix: groups [from, to) packed (krn_x8_pack). */
static void pack_piece(const struct eng_fill_piece *p, uint8_t *dst, const uint8_t *src)
{
	const struct eng_mat *m = p->arg;
	size_t off = (size_t)((const uint8_t *)m->data - dst);
	krn_x8_pack(m->type, dst + off, src + off, (size_t)m->cols, (size_t)m->rows, p->from,
		    p->to);
}

/* The pieces in file order: plain bytes up to each packed matrix, the matrix in ranges of
 * groups of about ENG_FILL_PIECE bytes, plain bytes to the end. */
static int plan_fill(struct eng_model *m, const struct eng_gguf_fill *f, bool x8,
		     struct eng_fill_list *l)
{
	/* the layers' matrices, and canonicals (once) and deltas (alias.h) */
	size_t cap = (size_t)m->info.n_layers * LAYER_MATS * 2 + 2 + ALIAS_KINDS, n = 0, pos = 0;
	struct eng_mat **mats = calloc(cap, sizeof(*mats));
	int rc = 0;
	if (!mats)
		return -ENOMEM;
	if (x8) {
		/* Found once: finding the table asks cpuid, which traps to the hypervisor in a VM
		 * (5% of a stories110M load when it was asked per matrix). */
		const struct krn_quant_ops *ops = krn_quant_ops_find(NULL);
		/* A tied classifier is the embedding's bytes: packed once, both views say so. */
		struct eng_mat *top[2] = { &m->token_embd,
					   m->info.shared_classifier ? NULL : &m->output };
		for (int i = 0; i < 2; i++)
			if (top[i] && repackable(ops, top[i]))
				mats[n++] = top[i];
		for (int l_ = 0; l_ < m->info.n_layers; l_++) {
			struct eng_layer *L = &m->layers[l_];
			struct eng_mat *lm[LAYER_MATS] = { &L->wq, &L->wk, &L->wv, &L->wqkv, &L->wo,
							   &L->w_gate, &L->w_up, &L->w_down };
			for (size_t i = 0; i < LAYER_MATS; i++)
				if (repackable(ops, lm[i]) && n < cap)
					mats[n++] = lm[i];
		}
		/* Canonicals and deltas; the covered layers' views get the flag in eng_alias_finish */
		struct eng_mat *am;
		for (size_t i = 0; (am = eng_alias_mat(m->alias, m->info.n_layers, i)); i++)
			if (repackable(ops, am) && n < cap)
				mats[n++] = am;
		qsort(mats, n, sizeof(*mats), by_data);
	}
	for (size_t i = 0; i < n && !rc; i++) {
		struct eng_mat *w = mats[i];
		size_t off = (size_t)((const uint8_t *)w->data - f->dst);
		size_t group = KRN_X8 * w->row_bytes, groups = (size_t)w->rows / KRN_X8;
		size_t step = ENG_FILL_PIECE / group ? ENG_FILL_PIECE / group : 1;
		if ((rc = eng_fill_add_plain(l, pos, off)))
			break;
		for (size_t g0 = 0; g0 < groups && !rc; g0 += step) {
			size_t g1 = groups - g0 < step ? groups : g0 + step;
			rc = eng_fill_add(l, (struct eng_fill_piece){ .off = off + g0 * group,
								      .len = (g1 - g0) * group,
								      .fn = pack_piece, .arg = w,
								      .from = g0, .to = g1 });
		}
		w->x8 = true;
		pos = off + groups * group;
	}
	if (!rc)
		rc = eng_fill_add_plain(l, pos, f->bytes);
	if (m->info.shared_classifier)
		m->output.x8 = m->token_embd.x8;
	free(mats);
	return rc;
}

static int fill_copy(struct eng_model *m, bool x8, struct eng_error *err)
{
	struct eng_gguf_fill f;
	struct eng_fill_list l = { 0 };
	int rc;
	if ((rc = eng_gguf_fill_target(m->gguf, &f)))
		return eng_error_set(err, rc, m->path, ENG_NO_OFFSET, "the model is not a copy");
	if ((rc = plan_fill(m, &f, x8, &l)))
		rc = eng_error_set(err, rc, m->path, ENG_NO_OFFSET, "out of memory");
	else
		rc = eng_huge_fill(f.dst, f.fd, f.src, &l, m->path, &m->load.threads, err);
	free(l.v);
	if (!rc)
		m->load.huge_bytes = eng_huge_pages_bytes(f.dst);
	return rc;
}

/* general.architecture's row of the architecture table (arch.c), after refusing the variants
 * we do not run; NULL with *rc set when the file names no architecture we run. */
static const struct eng_arch_desc *find_arch(const struct eng_gguf *g, const char *path, int *rc,
					 struct eng_error *err)
{
	struct eng_gguf_str arch_s;
	const struct eng_arch_desc *ad = NULL;

	if ((*rc = eng_gguf_get_str(g, "general.architecture", &arch_s, err))) {
		if (*rc == -ENOENT)
			*rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
					    "metadata key 'general.architecture' is missing: not a "
					    "model file");
		return NULL;
	}
	if (!(ad = eng_arch_find(arch_s.ptr, arch_s.len))) {
		*rc = eng_error_set(err, -ENOTSUP, path, ENG_NO_OFFSET,
				    "general.architecture is '%.*s': memwall's engine runs %s "
				    "(engine/README.md says how to add one)",
				    (int)(arch_s.len > 64 ? 64 : arch_s.len), arch_s.ptr,
				    eng_arch_names());
		return NULL;
	}
	if (eng_gguf_tensor_find(g, ad->refuse)) {
		*rc = eng_error_set(err, -ENOTSUP, path, ENG_NO_OFFSET,
				    "tensor '%s' is present: %s", ad->refuse, ad->refuse_why);
		return NULL;
	}
	return ad;
}

/* The shape (m->info but the vocabulary) and m->hp from the "<arch>.*" keys, checked against
 * each other and against what the forward pass runs. */
static int read_hparams(struct eng_model *m, const struct eng_gguf *g,
			const struct eng_arch_desc *ad, struct eng_error *err)
{
	struct eng_model_info *in = &m->info;
	const char *path = m->path, *an = ad->info.name;
	int heads_kv = 0, key_len = 0, n_rot = 0;
	int rc;

	if ((rc = arch_int(g, an, "embedding_length", -1, &in->dim, path, err)) ||
	    (rc = arch_int(g, an, "feed_forward_length", -1, &in->hidden_dim, path, err)) ||
	    (rc = arch_int(g, an, "block_count", -1, &in->n_layers, path, err)) ||
	    (rc = arch_int(g, an, "attention.head_count", -1, &in->n_heads, path, err)) ||
	    (rc = arch_int(g, an, "context_length", -1, &in->seq_len, path, err)) ||
	    (rc = arch_int(g, an, "attention.head_count_kv", in->n_heads, &heads_kv, path,
			   err)))
		return rc;
	in->n_kv_heads = heads_kv;
	/* Every layer has tensors of its own: a block_count above the tensor count is corrupt,
	 * and would size the per-layer table (bind_tensors) from a number the file cannot back. */
	if ((uint64_t)in->n_layers > eng_gguf_n_tensors(g))
		return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				     "metadata key '%s.block_count' is %d, but the file holds only "
				     "%" PRIu64 " tensors", an, in->n_layers,
				     eng_gguf_n_tensors(g));
	if (in->dim % in->n_heads || in->n_heads % in->n_kv_heads)
		return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				     "%s.embedding_length %d is not a multiple of "
				     "attention.head_count %d, or that of head_count_kv %d",
				     an, in->dim, in->n_heads, in->n_kv_heads);
	int head_dim = in->dim / in->n_heads;
	if ((rc = arch_int(g, an, "attention.key_length", head_dim, &key_len, path, err)) ||
	    (rc = arch_int(g, an, "rope.dimension_count", head_dim, &n_rot, path, err)))
		return rc;
	if (key_len != head_dim || n_rot > head_dim || n_rot % 2)
		return eng_error_set(err, -ENOTSUP, path, ENG_NO_OFFSET,
				     "%s.attention.key_length %d / rope.dimension_count %d: memwall "
				     "runs heads of embedding_length / head_count (%d) with an even "
				     "rotary width no larger", an, key_len, n_rot, head_dim);
	m->hp = (struct eng_hparams){ .head_dim = head_dim, .n_rot = n_rot,
				      .default_kv = ENG_KV_F16 };
	/* llama.cpp's defaults when the keys are absent: base 10000, its per-arch epsilon. */
	if ((rc = arch_float(g, an, "rope.freq_base", 10000.0f, &m->hp.rope_base, path,
			     err)) ||
	    (rc = arch_float(g, an, ad->eps_key, ad->default_eps, &m->hp.norm_eps, path,
			     err)))
		return rc;
	return 0;
}

/* Binds every tensor of ad's table (the vocabulary size from token_embd.weight), ties the
 * classifier when output.weight is absent, and sets the bytes a step reads. */
static int bind_tensors(struct eng_model *m, const struct eng_gguf *g,
			const struct eng_arch_desc *ad, struct eng_error *err)
{
	struct eng_model_info *in = &m->info;
	const char *path = m->path;
	int rc;

	const struct eng_gguf_tensor *embd = eng_gguf_tensor_find(g, "token_embd.weight");
	if (!embd || embd->ne[1] == 0 || embd->ne[1] > INT32_MAX)
		return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				     "tensor 'token_embd.weight' is %s: it gives the vocabulary "
				     "size", embd ? "empty or too large" : "missing");
	in->vocab_size = (int)embd->ne[1];
	int head_dim = m->hp.head_dim;
	uint64_t x[ENG_X_COUNT] = {
		[ENG_X_ONE] = 1,
		[ENG_X_DIM] = (uint64_t)in->dim,
		[ENG_X_Q] = (uint64_t)in->n_heads * (uint64_t)head_dim,
		[ENG_X_KV] = (uint64_t)in->n_kv_heads * (uint64_t)head_dim,
		[ENG_X_QKV] = (uint64_t)(in->n_heads + 2 * in->n_kv_heads) * (uint64_t)head_dim,
		[ENG_X_HIDDEN] = (uint64_t)in->hidden_dim,
		[ENG_X_VOCAB] = (uint64_t)in->vocab_size,
	};
	m->layers = calloc((size_t)in->n_layers, sizeof(*m->layers));
	if (!m->layers)
		return eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
	uint64_t read_bytes = 0;
	for (size_t i = 0; i < ad->n_tensors; i++) {
		const struct eng_arch_tensor *b = &ad->tensors[i];
		for (int l = 0; l < ((b->flags & ENG_T_LAYER) ? in->n_layers : 1); l++) {
			void *dst = (b->flags & ENG_T_LAYER) ? (char *)&m->layers[l] + b->field
							 : (char *)m + b->field;
			if ((b->flags & ENG_T_LAYER) && !(b->flags & ENG_T_VECTOR) &&
			    eng_alias_covers(m->alias, l))
				rc = bind_split(g, b, l, x, m, err, &read_bytes);
			else
				rc = bind_one(g, b, l, x, dst, path, err, &read_bytes);
			if (rc)
				return rc;
		}
	}
	/* Weight tying, as llama.cpp does when output.weight is absent: the classifier is the
	 * embedding table, read whole. */
	if (!m->output.data) {
		m->output = m->token_embd;
		in->shared_classifier = true;
		read_bytes += embd->n_bytes;
	}
	/* Every tensor the forward pass reads, each once (the embedding whole). */
	in->weight_bytes = read_bytes - (uint64_t)m->token_embd.row_bytes + embd->n_bytes -
			   (in->shared_classifier ? embd->n_bytes : 0);
	return 0;
}

int eng_gguf_model_load(struct eng_model *m, int fd, const struct eng_model_options *opt,
			struct eng_error *err)
{
	struct eng_gguf_open_options gopt = { .populate = opt->populate,
					      .hugepages = opt->hugepages,
					      .copy = opt->load != ENG_LOAD_MMAP };
	const struct eng_arch_desc *ad;
	int rc;

	/* The model owns the reader (and its mapping) from here: whatever fails below, the
	 * caller's eng_model_close releases it. */
	if ((rc = eng_gguf_open_fd(&m->gguf, m->path, fd, &gopt, err)))
		return rc;
	if (!(ad = find_arch(m->gguf, m->path, &rc, err)))
		return rc;
	m->arch = ad;
	if ((rc = read_hparams(m, m->gguf, ad, err)) || (rc = eng_alias_open(m, m->gguf, err)) ||
	    (rc = bind_tensors(m, m->gguf, ad, err)))
		return rc;
	if (opt->load != ENG_LOAD_MMAP &&
	    (rc = fill_copy(m, opt->load == ENG_LOAD_REPACK, err)))
		return rc;
	eng_alias_finish(m);
	if ((rc = eng_gguf_seal(m->gguf, err)))
		return rc;
	m->info.format = ENG_FORMAT_GGUF;
	m->info.arch = ad->info.name;
	m->info.file_bytes = eng_gguf_file_bytes(m->gguf);
	m->info.synthetic = is_synthetic(m->gguf);
	return read_ffn_act(m, ad, err);
}
