/* engine/session.c: a decode session: the KV cache, the activations, the thread pool, and the
 * forward pass of a Llama block (RMSNorm, RoPE, grouped-query attention, SwiGLU), after
 * karpathy/llama2.c run.c's `forward`, parallelised for the memory wall.
 *
 * Every thread runs the whole step (SPMD, forward_worker) and the threads meet at a barrier
 * between phases that need each other's output. Each matvec is split by rows into chunks
 * (multiples of 16 rows) that shrink as the phase drains, claimed from an atomic counter
 * (take): every thread streams contiguous slices of each weight matrix, and a thread that the
 * OS delays (this project's machines are often shared) does not hold the others at the
 * barrier for long. One thread takes each phase whole:
 *   per layer: [norm, q|k|v rows, RoPE, cache write] | [attention, by head] |
 *              [wo rows, residual] | [norm, w1 and w3 rows, SiLU x gate] | [w2 rows, residual]
 *   then:      [norm, classifier rows]
 * Each thread normalises its own copy of x (O(dim)), which saves a serial step and a barrier.
 * No step allocates.
 */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "f16.h"
#include "kernels.h"
#include "model.h"
#include "pool.h"

/* Rows per chunk of a split matvec are a multiple of 16: 16 rows of any width start on a
 * 64-byte boundary whenever the matrix does, and a kernel that works on groups of rows sees the
 * same groups whatever the thread count, so results do not depend on it. */
#define ROW_ALIGN 16
/* The smallest chunk, in rows: ~100 KB of a stories110M matrix, a few microseconds of
 * streaming, well above the cost of claiming it (one contended compare-and-swap). */
#define MIN_CHUNK_ROWS 32

/* How the cache stores one element (a table, so a new cache type is one row). */
struct kv_traits {
	const char *name;
	size_t elem; /* bytes per element */
	void (*store)(void *dst, const float *src, size_t n);
	float (*dot)(const struct krn_ops *ops, const float *q, const void *k, size_t n);
	void (*axpy)(const struct krn_ops *ops, float *y, float a, const void *v, size_t n);
};

static void store_f32(void *dst, const float *src, size_t n)
{
	memcpy(dst, src, n * sizeof(float));
}

static float dot_f32(const struct krn_ops *ops, const float *q, const void *k, size_t n)
{
	return ops->dot_f32(q, k, n);
}

static void axpy_f32(const struct krn_ops *ops, float *y, float a, const void *v, size_t n)
{
	ops->axpy_f32(y, a, v, n);
}

static void store_f16(void *dst, const float *src, size_t n)
{
	uint16_t *d = dst;
	for (size_t i = 0; i < n; i++)
		d[i] = eng_f32_to_f16(src[i]);
}

static float dot_f16(const struct krn_ops *ops, const float *q, const void *k, size_t n)
{
	(void)ops;
	const uint16_t *kh = k;
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += q[i] * eng_f16_to_f32(kh[i]);
	return sum;
}

static void axpy_f16(const struct krn_ops *ops, float *y, float a, const void *v, size_t n)
{
	(void)ops;
	const uint16_t *vh = v;
	for (size_t i = 0; i < n; i++)
		y[i] += a * eng_f16_to_f32(vh[i]);
}

static const struct kv_traits kv_traits[] = {
	[ENG_KV_F32] = { "f32", sizeof(float), store_f32, dot_f32, axpy_f32 },
	[ENG_KV_F16] = { "f16", sizeof(uint16_t), store_f16, dot_f16, axpy_f16 },
};

/* The next unclaimed row (or head) of one phase, alone in its cache line. */
struct work_counter {
	_Alignas(64) _Atomic int next;
};

/* Phases with shared work, per layer, in order; the classifier's counter comes last. */
enum { WORK_QKV, WORK_HEADS, WORK_WO, WORK_W13, WORK_W2, WORK_PER_LAYER };

struct eng_session {
	const struct eng_model *m;
	const struct krn_ops *ops;
	const struct kv_traits *kv;
	struct eng_pool *pool;
	struct eng_hooks hooks;
	int n_threads;
	int dim, hidden_dim, kv_dim, head_size, n_heads, n_kv_heads, n_layers, vocab_size;
	int ctx_len;
	int next_pos; /* positions 0..next_pos-1 are in the cache */

	float *x;      /* (dim) the residual stream */
	float *xb;     /* (dim) attention output, heads side by side */
	float *y;      /* (dim) output of wo or w2, before the residual add */
	float *q;      /* (dim) */
	float *k;      /* (kv_dim) this position's key, before it is stored */
	float *v;      /* (kv_dim) */
	float *hb;     /* (hidden_dim) w1 x, then SiLU(w1 x) * w3 x */
	float *hb2;    /* (hidden_dim) w3 x */
	float *att;    /* (n_heads, ctx_len) attention weights */
	float *logits; /* (vocab_size) */
	float *xn;     /* (threads, xn_stride) each thread's normalised copy of x */
	size_t xn_stride;
	void *key_cache;   /* (layer, ctx_len, kv_dim) of kv->elem bytes */
	void *value_cache; /* (layer, ctx_len, kv_dim) */
	float *rope_freq;  /* (head_size / 2) */
	float *rope_cos;   /* (head_size / 2) at the current position */
	float *rope_sin;   /* (head_size / 2) */

	int pos; /* the step being run */
	struct work_counter *work; /* (WORK_PER_LAYER * n_layers + 1) next chunk of each phase */
	int n_work;

	/* Engine-accounted bytes that do not depend on the position. */
	uint64_t emb_row_bytes, att_layer_bytes, ffn_layer_bytes, cls_bytes, kv_pos_bytes;
};

static int imin(int a, int b)
{
	return a < b ? a : b;
}

static int imax(int a, int b)
{
	return a > b ? a : b;
}

/* Claims the next chunk [*a, *b) of phase `work`'s `rows` items; false when none is left.
 * Chunks shrink as the phase drains (OpenMP's "guided" schedule): each is half an even share
 * of what is left, so threads start on long runs and finish together on short ones. Chunk
 * starts are multiples of `align` rows. */
static bool take(struct eng_session *s, int work, int rows, int align, int min, int *a, int *b)
{
	_Atomic int *next = &s->work[work].next;
	int start = atomic_load_explicit(next, memory_order_relaxed), size;
	do {
		if (start >= rows)
			return false;
		if (s->n_threads == 1) {
			size = rows - start;
		} else {
			size = (rows - start) / (2 * s->n_threads);
			size = (size + align - 1) / align * align;
			if (size < min)
				size = min;
		}
	} while (!atomic_compare_exchange_weak_explicit(next, &start, start + size,
						       memory_order_relaxed, memory_order_relaxed));
	*a = start;
	*b = imin(rows, start + size);
	return true;
}

/* A matvec's next rows, in 16-row multiples. */
static bool take_rows(struct eng_session *s, int work, int rows, int *a, int *b)
{
	return take(s, work, rows, ROW_ALIGN, MIN_CHUNK_ROWS, a, b);
}

/* RMSNorm (Zhang and Sennrich 2019), with run.c's epsilon 1e-5. */
static void rmsnorm(const struct krn_ops *ops, float *out, const float *x, const float *w, int n)
{
	float ss = ops->dot_f32(x, x, (size_t)n) / (float)n + 1e-5f;
	ss = 1.0f / sqrtf(ss);
	for (int i = 0; i < n; i++)
		out[i] = w[i] * (ss * x[i]);
}

/* RoPE (Su et al. 2021) on elements [a, b) of vec, rotating the pairs (2j, 2j+1) of each
 * head as run.c does; a and b are even. */
static void rope(const struct eng_session *s, float *vec, int a, int b)
{
	for (int i = a; i < b; i += 2) {
		int j = (i % s->head_size) / 2;
		float c = s->rope_cos[j], sn = s->rope_sin[j], v0 = vec[i], v1 = vec[i + 1];
		vec[i] = v0 * c - v1 * sn;
		vec[i + 1] = v0 * sn + v1 * c;
	}
}

static void softmax(float *x, int n)
{
	float max = x[0], sum = 0.0f;
	for (int i = 1; i < n; i++)
		if (x[i] > max)
			max = x[i];
	for (int i = 0; i < n; i++) {
		x[i] = expf(x[i] - max);
		sum += x[i];
	}
	for (int i = 0; i < n; i++)
		x[i] /= sum;
}

/* A barrier at a phase edge. With a phase hook, thread 0 calls it while the others wait, so
 * counters read there see no thread in the next phase; without one, a plain barrier. */
static void phase_edge(struct eng_session *s, int tid, enum eng_phase end, int end_layer,
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

/* Stores rows [a, b) of this position's key or value in layer l's cache. */
static void kv_store(const struct eng_session *s, void *cache, const float *src, int l, int a,
		     int b)
{
	size_t row = ((size_t)l * (size_t)s->ctx_len + (size_t)s->pos) * (size_t)s->kv_dim;
	s->kv->store((char *)cache + (row + (size_t)a) * s->kv->elem, src + a, (size_t)(b - a));
}

/* Rows [a, b) of q, k and v side by side (one phase, one barrier), with RoPE and the cache
 * write for those rows. */
static void attention_qkv(struct eng_session *s, int l, const float *xn, int a, int b)
{
	const struct eng_llama_weights *w = &s->m->w;
	size_t dim = (size_t)s->dim, kv = (size_t)s->kv_dim;
	int qa = a, qb = imin(b, s->dim);
	if (qa < qb) {
		s->ops->matvec_f32(s->q, w->wq + (size_t)l * dim * dim, xn, dim, (size_t)qa,
				   (size_t)qb);
		rope(s, s->q, qa, qb);
	}
	int ka = imax(a, s->dim) - s->dim, kb = imin(b, s->dim + s->kv_dim) - s->dim;
	if (ka < kb) {
		s->ops->matvec_f32(s->k, w->wk + (size_t)l * kv * dim, xn, dim, (size_t)ka,
				   (size_t)kb);
		rope(s, s->k, ka, kb);
		kv_store(s, s->key_cache, s->k, l, ka, kb);
	}
	int va = imax(a, s->dim + s->kv_dim) - s->dim - s->kv_dim,
	    vb = imin(b, s->dim + 2 * s->kv_dim) - s->dim - s->kv_dim;
	if (va < vb) {
		s->ops->matvec_f32(s->v, w->wv + (size_t)l * kv * dim, xn, dim, (size_t)va,
				   (size_t)vb);
		kv_store(s, s->value_cache, s->v, l, va, vb);
	}
}

/* Heads [h0, h1) attend over positions 0..pos of layer l's cache. */
static void attention_heads(struct eng_session *s, int l, int h0, int h1)
{
	size_t hs = (size_t)s->head_size, kv = (size_t)s->kv_dim, elem = s->kv->elem;
	size_t layer_off = (size_t)l * (size_t)s->ctx_len * kv;
	int kv_mul = s->n_heads / s->n_kv_heads;
	float scale = 1.0f / sqrtf((float)s->head_size);
	for (int h = h0; h < h1; h++) {
		const float *q = s->q + (size_t)h * hs;
		float *att = s->att + (size_t)h * (size_t)s->ctx_len;
		size_t head_off = (size_t)(h / kv_mul) * hs;
		const char *k = (const char *)s->key_cache + (layer_off + head_off) * elem;
		const char *v = (const char *)s->value_cache + (layer_off + head_off) * elem;
		for (int t = 0; t <= s->pos; t++)
			att[t] = s->kv->dot(s->ops, q, k + (size_t)t * kv * elem, hs) * scale;
		softmax(att, s->pos + 1);
		float *xb = s->xb + (size_t)h * hs;
		memset(xb, 0, hs * sizeof(float));
		for (int t = 0; t <= s->pos; t++)
			s->kv->axpy(s->ops, xb, att[t], v + (size_t)t * kv * elem, hs);
	}
}

/* y = W in for rows [a, b) of a (rows, n) matrix, then x += y on those rows. */
static void project_residual(struct eng_session *s, const float *wmat, const float *in, size_t n,
			     int a, int b)
{
	s->ops->matvec_f32(s->y, wmat, in, n, (size_t)a, (size_t)b);
	for (int r = a; r < b; r++)
		s->x[r] += s->y[r];
}

static void forward_worker(void *arg, int tid)
{
	struct eng_session *s = arg;
	const struct eng_llama_weights *w = &s->m->w;
	float *xn = s->xn + (size_t)tid * s->xn_stride;
	size_t dim = (size_t)s->dim, hidden = (size_t)s->hidden_dim;
	int qkv_rows = s->dim + 2 * s->kv_dim, a, b;

	for (int l = 0; l < s->n_layers; l++) {
		int work = l * WORK_PER_LAYER;
		rmsnorm(s->ops, xn, s->x, w->rms_att + (size_t)l * dim, s->dim);
		while (take_rows(s, work + WORK_QKV, qkv_rows, &a, &b))
			attention_qkv(s, l, xn, a, b);
		eng_pool_barrier(s->pool, tid);
		while (take(s, work + WORK_HEADS, s->n_heads, 1, 1, &a, &b))
			attention_heads(s, l, a, b);
		eng_pool_barrier(s->pool, tid);
		while (take_rows(s, work + WORK_WO, s->dim, &a, &b))
			project_residual(s, w->wo + (size_t)l * dim * dim, s->xb, dim, a, b);
		phase_edge(s, tid, ENG_PHASE_ATTENTION, l, ENG_PHASE_FFN, l);

		/* SwiGLU (Shazeer 2020): w2 (SiLU(w1 x) * w3 x); w1 and w3 share one phase. */
		rmsnorm(s->ops, xn, s->x, w->rms_ffn + (size_t)l * dim, s->dim);
		while (take_rows(s, work + WORK_W13, s->hidden_dim, &a, &b)) {
			s->ops->matvec_f32(s->hb, w->w1 + (size_t)l * hidden * dim, xn, dim,
					   (size_t)a, (size_t)b);
			s->ops->matvec_f32(s->hb2, w->w3 + (size_t)l * hidden * dim, xn, dim,
					   (size_t)a, (size_t)b);
			for (int r = a; r < b; r++) {
				float gate = s->hb[r];
				s->hb[r] = gate * (1.0f / (1.0f + expf(-gate))) * s->hb2[r];
			}
		}
		eng_pool_barrier(s->pool, tid);
		/* The FFN-activation hook (engine.h): hb is complete here and is written again only
		 * in the next layer's w1/w3 phase, behind barriers this thread has yet to reach. */
		if (s->hooks.ffn_act && tid == 0)
			s->hooks.ffn_act(s->hooks.ctx, l, s->hb, s->hidden_dim);
		while (take_rows(s, work + WORK_W2, s->dim, &a, &b))
			project_residual(s, w->w2 + (size_t)l * dim * hidden, s->hb, hidden, a, b);
		if (l + 1 < s->n_layers)
			phase_edge(s, tid, ENG_PHASE_FFN, l, ENG_PHASE_ATTENTION, l + 1);
		else
			phase_edge(s, tid, ENG_PHASE_FFN, l, ENG_PHASE_CLASSIFIER, -1);
	}
	rmsnorm(s->ops, xn, s->x, w->rms_final, s->dim);
	while (take_rows(s, s->n_work - 1, s->vocab_size, &a, &b))
		s->ops->matvec_f32(s->logits, w->wcls, xn, dim, (size_t)a, (size_t)b);
}

int eng_session_step(struct eng_session *s, int token, int pos, const float **logits,
		     struct eng_step_bytes *bytes)
{
	if (token < 0 || token >= s->vocab_size || pos < 0 || pos >= s->ctx_len ||
	    pos > s->next_pos)
		return -EINVAL;
	s->pos = pos;
	for (int j = 0; j < s->head_size / 2; j++) {
		float val = (float)pos * s->rope_freq[j];
		s->rope_cos[j] = cosf(val);
		s->rope_sin[j] = sinf(val);
	}
	if (s->hooks.phase)
		s->hooks.phase(s->hooks.ctx, ENG_PHASE_ATTENTION, 0, true);
	memcpy(s->x, s->m->w.token_embedding + (size_t)token * (size_t)s->dim,
	       (size_t)s->dim * sizeof(float));
	/* Published to the workers by the pool's release. */
	for (int i = 0; i < s->n_work; i++)
		atomic_store_explicit(&s->work[i].next, 0, memory_order_relaxed);
	eng_pool_run(s->pool, forward_worker, s);
	if (s->hooks.phase)
		s->hooks.phase(s->hooks.ctx, ENG_PHASE_CLASSIFIER, -1, false);
	s->next_pos = pos + 1;

	if (bytes || s->hooks.token) {
		struct eng_step_bytes b = { 0 };
		uint64_t layers = (uint64_t)s->n_layers;
		b.kv_read = (uint64_t)(pos + 1) * layers * s->kv_pos_bytes;
		b.kv_write = layers * s->kv_pos_bytes;
		b.by_phase[ENG_PHASE_ATTENTION] = s->emb_row_bytes + layers * s->att_layer_bytes;
		b.by_phase[ENG_PHASE_FFN] = layers * s->ffn_layer_bytes;
		b.by_phase[ENG_PHASE_CLASSIFIER] = s->cls_bytes;
		b.weights = b.by_phase[ENG_PHASE_ATTENTION] + b.by_phase[ENG_PHASE_FFN] +
			    b.by_phase[ENG_PHASE_CLASSIFIER];
		b.by_phase[ENG_PHASE_ATTENTION] += b.kv_read + b.kv_write;
		if (bytes)
			*bytes = b;
		if (s->hooks.token)
			s->hooks.token(s->hooks.ctx, pos, token, &b);
	}
	*logits = s->logits;
	return 0;
}

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

int eng_session_new(struct eng_session **out, struct eng_model *m,
		    const struct eng_session_options *opt, struct eng_error *err)
{
	static const struct eng_session_options defaults = { 0 };
	const struct eng_model_info *info = &m->info;
	struct eng_session *s = NULL;
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
	s->ops = krn_ops_find(opt->kernels);
	if (!s->ops) {
		char names[256];
		rc = eng_error_set(err, -ENOTSUP, "", ENG_NO_OFFSET,
				   "kernels '%s' are unknown or not supported by this CPU; this "
				   "build has: %s",
				   opt->kernels ? opt->kernels : "auto",
				   kernel_names(names, sizeof(names)));
		goto out;
	}
	if ((unsigned)opt->kv_type >= sizeof(kv_traits) / sizeof(kv_traits[0]) ||
	    !kv_traits[opt->kv_type].name) {
		rc = eng_error_set(err, -ENOTSUP, "", ENG_NO_OFFSET, "KV cache type %d is unknown",
				   (int)opt->kv_type);
		goto out;
	}
	s->kv = &kv_traits[opt->kv_type];
	if (opt->hooks)
		s->hooks = *opt->hooks;
	s->n_threads = opt->threads > 0 ? opt->threads : 1;
	s->dim = info->dim;
	s->hidden_dim = info->hidden_dim;
	s->n_layers = info->n_layers;
	s->n_heads = info->n_heads;
	s->n_kv_heads = info->n_kv_heads;
	s->head_size = info->dim / info->n_heads;
	s->kv_dim = s->head_size * info->n_kv_heads;
	s->vocab_size = info->vocab_size;
	s->ctx_len = opt->ctx_len > 0 ? opt->ctx_len : info->seq_len;

	size_t dim = (size_t)s->dim, kv_cells;
	s->xn_stride = (dim + 15) / 16 * 16;
	if (__builtin_mul_overflow((size_t)s->n_layers * (size_t)s->ctx_len, (size_t)s->kv_dim,
				   &kv_cells)) {
		rc = eng_error_set(err, -EOVERFLOW, "", ENG_NO_OFFSET,
				   "a KV cache of %d positions overflows memory sizes", s->ctx_len);
		goto out;
	}
	s->x = alloc_aligned(dim, sizeof(float));
	s->xb = alloc_aligned(dim, sizeof(float));
	s->y = alloc_aligned(dim, sizeof(float));
	s->q = alloc_aligned(dim, sizeof(float));
	s->k = alloc_aligned((size_t)s->kv_dim, sizeof(float));
	s->v = alloc_aligned((size_t)s->kv_dim, sizeof(float));
	s->hb = alloc_aligned((size_t)s->hidden_dim, sizeof(float));
	s->hb2 = alloc_aligned((size_t)s->hidden_dim, sizeof(float));
	s->att = alloc_aligned((size_t)s->n_heads * (size_t)s->ctx_len, sizeof(float));
	s->logits = alloc_aligned((size_t)s->vocab_size, sizeof(float));
	s->xn = alloc_aligned((size_t)s->n_threads * s->xn_stride, sizeof(float));
	/* The cache is never read beyond next_pos, so it needs no zeroing, and its pages are
	 * touched only as positions fill: a long context costs nothing until it is used. */
	s->key_cache = alloc_aligned(kv_cells, s->kv->elem);
	s->value_cache = alloc_aligned(kv_cells, s->kv->elem);
	advise_huge(s->key_cache, kv_cells * s->kv->elem);
	advise_huge(s->value_cache, kv_cells * s->kv->elem);
	s->rope_freq = alloc_aligned((size_t)s->head_size / 2, sizeof(float));
	s->rope_cos = alloc_aligned((size_t)s->head_size / 2, sizeof(float));
	s->rope_sin = alloc_aligned((size_t)s->head_size / 2, sizeof(float));
	s->n_work = WORK_PER_LAYER * s->n_layers + 1;
	s->work = alloc_aligned((size_t)s->n_work, sizeof(*s->work));
	if (!s->x || !s->xb || !s->y || !s->q || !s->k || !s->v || !s->hb || !s->hb2 || !s->att ||
	    !s->logits || !s->xn || !s->key_cache || !s->value_cache || !s->rope_freq ||
	    !s->rope_cos || !s->rope_sin || !s->work) {
		rc = eng_error_set(err, -ENOMEM, "", ENG_NO_OFFSET,
				   "out of memory for a session of %d positions", s->ctx_len);
		goto out;
	}
	/* run.c's frequencies: theta_j = 10000^(-2j / head_size), in float. */
	for (int j = 0; j < s->head_size / 2; j++)
		s->rope_freq[j] = 1.0f / powf(10000.0f, (float)(2 * j) / (float)s->head_size);

	/* Engine-accounted bytes, from the shapes (llama2c.c's table gives the same sizes). */
	uint64_t f = sizeof(float), d = (uint64_t)s->dim, hd = (uint64_t)s->hidden_dim,
		 kvd = (uint64_t)s->kv_dim;
	s->emb_row_bytes = d * f;
	s->att_layer_bytes = (d + d * d + 2 * kvd * d + d * d) * f; /* rms_att, wq, wk, wv, wo */
	s->ffn_layer_bytes = (d + 3 * hd * d) * f;                  /* rms_ffn, w1, w2, w3 */
	s->cls_bytes = (d + (uint64_t)s->vocab_size * d) * f;       /* rms_final, wcls */
	s->kv_pos_bytes = 2 * kvd * s->kv->elem;                    /* one key, one value */

	if ((rc = eng_pool_new(&s->pool, s->n_threads))) {
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
	free(s->x);
	free(s->xb);
	free(s->y);
	free(s->q);
	free(s->k);
	free(s->v);
	free(s->hb);
	free(s->hb2);
	free(s->att);
	free(s->logits);
	free(s->xn);
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
