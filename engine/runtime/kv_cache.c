/* engine/runtime/kv_cache.c: a session's KV cache: how each element type (F32, F16) stores a
 * position's keys and values and attends over them (a table, eng_kv_traits), the cache's size
 * and first touch at set-up, and moving a sequence's cache between sessions (eng_session_adopt).
 * The forward pass (forward.c) reaches it only through s->kv. */

#include "internal.h"

/* The maximum in eight running maxima (exact in any order; x > m ? x : m is one vmaxps),
 * the exponentials and their sum by the kernel table (exp.h's, 16 at a time on AVX-512). */
static void softmax(const struct krn_ops *ops, float *x, int n)
{
	float m[8], max = x[0];
	int i = 0;
	for (int j = 0; j < 8; j++)
		m[j] = x[0];
	for (; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++)
			m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
	for (; i < n; i++)
		max = x[i] > max ? x[i] : max;
	for (int j = 0; j < 8; j++)
		max = m[j] > max ? m[j] : max;
	float sum = krn_exp_sub(ops, x, max, (size_t)n);
	for (i = 0; i < n; i++)
		x[i] /= sum;
}

static void store_k_f32(const struct eng_session *s, int q, int l, int pos, const float *k, int a,
			int b)
{
	memcpy((float *)s->key_cache + kv_row(s, q, l, pos) + a, k + a,
	       (size_t)(b - a) * sizeof(float));
}

static void store_v_f32(const struct eng_session *s, int q, int l, int pos, const float *v, int a,
			int b)
{
	memcpy((float *)s->value_cache + kv_row(s, q, l, pos) + a, v + a,
	       (size_t)(b - a) * sizeof(float));
}

/* Heads [h0, h1) over positions 0..pos in float: scores q.k / sqrt(head_size), softmax, sum
 * of weighted values (run.c's attention), position-major: for each position the loops read
 * this thread's heads of one cache row, which are contiguous, so each thread reads the cache
 * as one forward stream rather than 256-byte pieces a row apart (one per head and position);
 * on stories110M at position 128 this took attention from 5.3% to 2.4% of decode time
 * (perf record -e cpu-clock). Each head still sums its positions in order, so the result is
 * the same as head by head, whatever the split. */
static void attend_f32(struct eng_session *s, struct worker *w, int l, int k, int h0, int h1)
{
	const float *qk = s->qkv + (size_t)k * (size_t)s->qkv_dim;
	float *xb = s->xb + (size_t)k * (size_t)s->q_dim;
	int pos = s->tpos[k];
	(void)w;
	size_t hs = (size_t)s->head_size, kv = (size_t)s->kv_dim, ctx = (size_t)s->ctx_len;
	int kv_mul = s->n_heads / s->n_kv_heads;
	const float *keys = (const float *)s->key_cache + kv_row(s, s->tseq[k], l, 0);
	const float *values = (const float *)s->value_cache + kv_row(s, s->tseq[k], l, 0);
	float scale = 1.0f / sqrtf((float)s->head_size);
	for (int t = 0; t <= pos; t++) {
		const float *krow = keys + (size_t)t * kv;
		for (int h = h0; h < h1; h++)
			s->att[(size_t)h * ctx + (size_t)t] =
				s->ops->dot_f32(qk + (size_t)h * hs,
						krow + (size_t)(h / kv_mul) * hs, hs) * scale;
	}
	for (int h = h0; h < h1; h++) {
		softmax(s->ops, s->att + (size_t)h * ctx, pos + 1);
		memset(xb + (size_t)h * hs, 0, hs * sizeof(float));
	}
	for (int t = 0; t <= pos; t++) {
		const float *vrow = values + (size_t)t * kv;
		for (int h = h0; h < h1; h++)
			s->ops->axpy_f32(xb + (size_t)h * hs, s->att[(size_t)h * ctx + (size_t)t],
					 vrow + (size_t)(h / kv_mul) * hs, hs);
	}
}

/* An F16 cache as llama.cpp's CPU path keeps and reads it (without flash attention): keys
 * row-major; values transposed, (layer, kv_dim, ctx_len), so that each output element is one
 * dot product over the positions; the query and the softmax weights are rounded to F16 first,
 * since ggml's mul_mat converts its second operand to the F16 weight's vec_dot_type. */
static void store_k_f16(const struct eng_session *s, int q, int l, int pos, const float *k, int a,
			int b)
{
	uint16_t *d = (uint16_t *)s->key_cache + kv_row(s, q, l, pos);
	/* the table's f16 conversion: ref's bytes (types.h), eight at a time on x86 */
	s->qops->quantize_act[KRN_TYPE_F16](k + a, d + a, (size_t)(b - a));
}

static void store_v_f16(const struct eng_session *s, int q, int l, int pos, const float *v, int a,
			int b)
{
	uint16_t *d = (uint16_t *)s->value_cache + kv_row(s, q, l, pos);
	s->qops->quantize_act[KRN_TYPE_F16](v + a, d + a, (size_t)(b - a));
}

/* As attend_f32, position by position, so that each position's keys and values of these
 * heads are read as one contiguous run: the weights' stream has evicted them since the last
 * step, and the hardware prefetchers follow runs, not a head's short rows a cache row apart
 * (head by head, at 128 positions, attention was 8% of a stories110M step). Numerics are
 * llama.cpp's for an F16 cache: q rounded to f16 for the scores, softmax in f32, and the
 * probabilities rounded to f16 before they weight the values. */
static void attend_f16(struct eng_session *s, struct worker *w, int l, int k, int h0, int h1)
{
	const float *qk = s->qkv + (size_t)k * (size_t)s->qkv_dim;
	float *xb = s->xb + (size_t)k * (size_t)s->q_dim;
	int pos = s->tpos[k];
	size_t hs = (size_t)s->head_size, kv = (size_t)s->kv_dim, ctx = (size_t)s->ctx_len;
	int kv_mul = s->n_heads / s->n_kv_heads;
	const uint16_t *keys = (const uint16_t *)s->key_cache + kv_row(s, s->tseq[k], l, 0);
	const uint16_t *values = (const uint16_t *)s->value_cache + kv_row(s, s->tseq[k], l, 0);
	krn_from_float_fn to_f16 = s->qops->quantize_act[KRN_TYPE_F16];
	float scale = 1.0f / sqrtf((float)s->head_size);
	uint16_t *p16 = w->h16 + s->q_dim;
	float *att0 = s->att + (size_t)h0 * ctx;
	to_f16(qk + (size_t)h0 * hs, w->h16, (size_t)(h1 - h0) * hs);
	krn_dot_f16_heads(s->qops, hs, att0, ctx, keys, kv, (size_t)pos + 1, w->h16, h0, h1,
			  kv_mul);
	for (int h = h0; h < h1; h++) {
		float *att = s->att + (size_t)h * ctx;
		for (int t = 0; t <= pos; t++)
			att[t] *= scale;
		softmax(s->ops, att, pos + 1);
		krn_round_f16(s->qops, att, p16, (size_t)pos + 1);
		memset(xb + (size_t)h * hs, 0, hs * sizeof(float));
	}
	krn_axpy_f16_heads(s->qops, xb + (size_t)h0 * hs, att0, ctx, values, kv, (size_t)pos + 1,
			   hs, h0, h1, kv_mul);
}

/* attend_f16 for head h of token k of a pass of several (prefill): the head's scores over
 * the positions by one krn_dot_f16_rows and its weighted values by one krn_axpy_f16_rows, the
 * same operations as attend_f16's calls per position and head, so the same bits. keys and
 * values point at the head's slice of position 0, ld halves apart. A pass's cache rows were
 * written just before and are read from the caches, so the position-major order that decode
 * needs buys nothing here, while a call per position and head had made attention 15% of a
 * stories110M prefill (perf record -e cpu-clock). */
static void attend_f16_head(struct eng_session *s, struct worker *w, int k, int h,
			    const uint16_t *keys, const uint16_t *values, size_t ld)
{
	size_t hs = (size_t)s->head_size, n_pos = (size_t)s->tpos[k] + 1;
	float *att = w->att; /* this thread's: another may run this head's other tokens */
	float *out = s->xb + (size_t)k * (size_t)s->q_dim + (size_t)h * hs;
	krn_from_float_fn to_f16 = s->qops->quantize_act[KRN_TYPE_F16];
	float scale = 1.0f / sqrtf((float)s->head_size);
	uint16_t *p16 = w->h16 + s->q_dim;
	to_f16(s->qkv + (size_t)k * (size_t)s->qkv_dim + (size_t)h * hs, w->h16, hs);
	krn_dot_f16_rows(s->qops, hs, att, keys, ld, n_pos, w->h16);
	for (size_t t = 0; t < n_pos; t++)
		att[t] *= scale;
	softmax(s->ops, att, (int)n_pos);
	krn_round_f16(s->qops, att, p16, n_pos);
	memset(out, 0, hs * sizeof(float));
	krn_axpy_f16_rows(s->qops, out, att, values, ld, n_pos, hs);
}

/* attend_pass for an F16 cache: heads [h0, h1) of token k, straight from the cache. */
static void attend_f16_pass(struct eng_session *s, struct worker *w, int l, int k, int h0, int h1)
{
	size_t hs = (size_t)s->head_size, kv = (size_t)s->kv_dim;
	int kv_mul = s->n_heads / s->n_kv_heads;
	const uint16_t *keys = (const uint16_t *)s->key_cache + kv_row(s, s->tseq[k], l, 0);
	const uint16_t *values = (const uint16_t *)s->value_cache + kv_row(s, s->tseq[k], l, 0);
	for (int h = h0; h < h1; h++) {
		size_t kvh = (size_t)(h / kv_mul) * hs;
		attend_f16_head(s, w, k, h, keys + kvh, values + kvh, kv);
	}
}

/* Heads [h0, h1) of a pass over an F16 cache, every token of each but the first head's from
 * k_first on and the last head's before k_last (attention's units, workplan.h), head by head:
 * each KV head's keys and values up to the last token's position are first copied out of the
 * cache rows (each a head_size slice, kv_dim apart) into w->kv16, contiguous, where every
 * token then reads them from L1 (64 KB at 128 positions of 64 dimensions). The same kernels on
 * the same halves as attend_f16_pass, so the same bits. Token by token from the cache, the
 * slices were spread over the cache's rows and read again per token. */
void eng_kv_attend_f16_heads(struct eng_session *s, struct worker *w, int l, int h0, int h1,
			     int k_first, int k_last)
{
	size_t hs = (size_t)s->head_size, kv = (size_t)s->kv_dim, held = 0;
	int kv_mul = s->n_heads / s->n_kv_heads, copied = -1;
	const uint16_t *keys = (const uint16_t *)s->key_cache + kv_row(s, s->tseq[0], l, 0);
	const uint16_t *values = (const uint16_t *)s->value_cache + kv_row(s, s->tseq[0], l, 0);
	uint16_t *kc = w->kv16, *vc = w->kv16 + (size_t)s->pass_positions * hs;
	for (int h = h0; h < h1; h++) {
		int k0 = h == h0 ? k_first : 0, k1 = h == h1 - 1 ? k_last : s->n_tok;
		if (k0 >= k1)
			continue;
		size_t n_pos = (size_t)s->tpos[k1 - 1] + 1;
		if (h / kv_mul != copied || n_pos > held) {
			copied = h / kv_mul;
			held = n_pos;
			for (size_t t = 0; t < n_pos; t++) {
				size_t from = t * kv + (size_t)copied * hs;
				memcpy(kc + t * hs, keys + from, hs * sizeof(uint16_t));
				memcpy(vc + t * hs, values + from, hs * sizeof(uint16_t));
			}
		}
		for (int k = k0; k < k1; k++)
			attend_f16_head(s, w, k, h, kc, vc, hs);
	}
}

/* Block-streaming attention (engine/runtime/attention.c) over the same cache rows as attend_f32. */
static void attend_blocked_f32(struct eng_session *s, struct worker *w, int l, int k, int h0,
			       int h1)
{
	struct attn_job j = {
		.keys = (const float *)s->key_cache + kv_row(s, s->tseq[k], l, 0),
		.values = (const float *)s->value_cache + kv_row(s, s->tseq[k], l, 0),
		.n_pos = s->tpos[k] + 1, .head_size = s->head_size, .kv_dim = s->kv_dim,
		.kv_mul = s->n_heads / s->n_kv_heads, .block = s->attn_block,
		.scale = 1.0f / sqrtf((float)s->head_size), .scores = w->blk,
	};
	eng_attn_blocked_f32(s->ops, &j, s->qkv + (size_t)k * (size_t)s->qkv_dim,
			 s->xb + (size_t)k * (size_t)s->q_dim, h0, h1);
}

/* The same over an F16 cache, the query rounded to f16 as attend_f16 rounds it. */
static void attend_blocked_f16(struct eng_session *s, struct worker *w, int l, int k, int h0,
			       int h1)
{
	size_t hs = (size_t)s->head_size;
	const float *qk = s->qkv + (size_t)k * (size_t)s->qkv_dim;
	struct attn_job j = {
		.keys = (const uint16_t *)s->key_cache + kv_row(s, s->tseq[k], l, 0),
		.values = (const uint16_t *)s->value_cache + kv_row(s, s->tseq[k], l, 0),
		.n_pos = s->tpos[k] + 1, .head_size = s->head_size, .kv_dim = s->kv_dim,
		.kv_mul = s->n_heads / s->n_kv_heads, .block = s->attn_block,
		.scale = 1.0f / sqrtf((float)s->head_size), .scores = w->blk,
	};
	s->qops->quantize_act[KRN_TYPE_F16](qk + (size_t)h0 * hs, w->h16, (size_t)(h1 - h0) * hs);
	eng_attn_blocked_f16(s->qops, &j, w->h16, s->xb + (size_t)k * (size_t)s->q_dim, h0, h1);
}

const struct kv_traits eng_kv_traits[ENG_KV_F16 + 1] = {
	[ENG_KV_F32] = { "f32", sizeof(float), store_k_f32, store_v_f32, attend_f32,
			 attend_blocked_f32, attend_f32 },
	[ENG_KV_F16] = { "f16", sizeof(uint16_t), store_k_f16, store_v_f16, attend_f16,
			 attend_blocked_f16, attend_f16_pass },
};

/* Writes the cache rows of every sequence's first pass (positions [0, chunk) of each layer)
 * now, at set-up, rather than in that pass: the pass would touch those pages first anyway,
 * and in 2 MiB pages each first touch zero-fills a whole page. Measured here: 38 MB of
 * stories110M's F16 cache at ctx 1024 (every page holds some layer's first rows) took up to
 * 75 ms inside a 128-token prompt when the host had taken the memory back (the VM's
 * page_reporting), a quarter of an F32 prompt's time; llama.cpp clears its whole cache when
 * it creates a context. The rest of a long context is still touched only as it fills. */
void eng_kv_touch_first(const struct eng_session *s)
{
	size_t first = (size_t)imin(s->chunk, s->ctx_len) * (size_t)s->kv_dim * s->kv->elem;
	for (int q = 0; q < s->n_seq; q++)
		for (int l = 0; l < s->n_layers; l++) {
			size_t at = kv_row(s, q, l, 0) * s->kv->elem;
			memset((char *)s->key_cache + at, 0, first);
			memset((char *)s->value_cache + at, 0, first);
		}
}

/* The KV cache's elements per cache (keys or values), into *kv_cells, if the machine can
 * hold both caches. */
int eng_kv_cache_cells(const struct eng_session *s, size_t *kv_cells, struct eng_error *err)
{
	if (__builtin_mul_overflow((size_t)s->n_seq * (size_t)s->n_layers * (size_t)s->ctx_len,
				   (size_t)s->kv_dim, kv_cells))
		return eng_error_set(err, -EOVERFLOW, "", ENG_NO_OFFSET,
				     "a KV cache of %d positions (x %d sequences) overflows memory "
				     "sizes", s->ctx_len, s->n_seq);
	/* A context the machine cannot hold is refused here, not left to overcommit: a header
	 * can claim any seq_len, and a cache that outgrows RAM would thrash long before it
	 * fails (the fuzzers made a 424-byte model ask for 32 GiB). */
	double kv_bytes = 2.0 * (double)*kv_cells * (double)s->kv->elem;
	double ram = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
	if (ram > 0 && kv_bytes > ram)
		return eng_error_set(err, -ENOMEM, "", ENG_NO_OFFSET,
				     "a KV cache of %d positions (x %d sequences) needs %.1f GiB, "
				     "more than this machine's %.1f GiB of memory: ask for a shorter "
				     "context or fewer sequences", s->ctx_len, s->n_seq, kv_bytes / 1073741824.0, ram / 1073741824.0);
	return 0;
}

/* ---- Moving a session's state (eng_session_adopt) ----------------------------------------
 * What a session carries from one step to the next is its KV cache and each sequence's next
 * position; every other buffer is a pass's scratch, refilled from the embedding row on. So
 * this is all `memwall generate --load overlap` needs to go on, on a repacked image, from the
 * first token run on the file mapping. */

/* Why dst cannot take src's state, in err: the first shape field that differs. */
static int adopt_check(const struct eng_session *dst, const struct eng_session *src,
		       struct eng_error *err)
{
	static const char fix[] = "open both sessions over the same model file with the same "
				  "--kv and sequence count";
	const struct { const char *what; long d, s; } f[] = {
		{ "architecture (enum eng_arch)", (long)dst->m->arch->arch,
		  (long)src->m->arch->arch },
		{ "dim", dst->dim, src->dim },
		{ "hidden_dim", dst->hidden_dim, src->hidden_dim },
		{ "layers", dst->n_layers, src->n_layers },
		{ "heads", dst->n_heads, src->n_heads },
		{ "KV heads", dst->n_kv_heads, src->n_kv_heads },
		{ "head size", dst->head_size, src->head_size },
		{ "RoPE dimensions", dst->n_rot, src->n_rot },
		{ "vocabulary", dst->vocab_size, src->vocab_size },
		{ "sequence count", dst->n_seq, src->n_seq },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].d != f[i].s)
			return eng_error_set(err, -EINVAL, dst->m->path, ENG_NO_OFFSET,
					     "cannot adopt the state of a session over %s: its %s is "
					     "%ld, this session's %ld (%s)", src->m->path, f[i].what,
					     f[i].s, f[i].d, fix);
	if (dst->kv != src->kv)
		return eng_error_set(err, -EINVAL, dst->m->path, ENG_NO_OFFSET,
				     "cannot adopt the state of a session over %s: its KV cache is "
				     "%s, this session's %s (%s)", src->m->path, src->kv->name,
				     dst->kv->name, fix);
	for (int q = 0; q < src->n_seq; q++)
		if (src->next_pos[q] > dst->ctx_len)
			return eng_error_set(err, -EINVAL, dst->m->path, ENG_NO_OFFSET,
					     "cannot adopt the state of a session over %s: its "
					     "sequence %d holds %d positions, this session's context "
					     "%d (give it a context of at least %d)", src->m->path, q,
					     src->next_pos[q], dst->ctx_len, src->next_pos[q]);
	return 0;
}

int eng_session_adopt(struct eng_session *dst, const struct eng_session *src,
		      struct eng_error *err)
{
	int rc;
	if (dst == src)
		return 0;
	if ((rc = adopt_check(dst, src, err)))
		return rc;
	size_t row = (size_t)src->kv_dim * src->kv->elem;
	/* Layer by layer: with different contexts the layers' regions start at different
	 * offsets in the two caches. */
	for (int q = 0; q < src->n_seq; q++) {
		size_t bytes = (size_t)src->next_pos[q] * row;
		for (int l = 0; l < src->n_layers && bytes; l++) {
			size_t from = kv_row(src, q, l, 0) * src->kv->elem;
			size_t to = kv_row(dst, q, l, 0) * dst->kv->elem;
			memcpy((char *)dst->key_cache + to, (const char *)src->key_cache + from, bytes);
			memcpy((char *)dst->value_cache + to, (const char *)src->value_cache + from,
			       bytes);
		}
		dst->next_pos[q] = src->next_pos[q];
	}
	return 0;
}

int eng_session_pos(const struct eng_session *s, int seq)
{
	if (seq < 0 || seq >= s->n_seq)
		return -EINVAL;
	return s->next_pos[seq];
}

int eng_session_kv_view(const struct eng_session *s, int seq, int layer, const void **keys,
			const void **values, size_t *row_bytes)
{
	if (seq < 0 || seq >= s->n_seq || layer < 0 || layer >= s->n_layers)
		return -EINVAL;
	size_t off = kv_row(s, seq, layer, 0) * s->kv->elem;
	*keys = (const char *)s->key_cache + off;
	*values = (const char *)s->value_cache + off;
	*row_bytes = (size_t)s->kv_dim * s->kv->elem;
	return 0;
}

uint64_t eng_kv_cache_bytes(const struct eng_model_info *info, enum eng_kv_type kv, int ctx_len,
			    int n_seq)
{
	uint64_t elem = kv == ENG_KV_F16 ? 2 : kv == ENG_KV_F32 ? 4
			: info->format == ENG_FORMAT_GGUF ? 2 : 4;
	uint64_t ctx = (uint64_t)(ctx_len > 0 ? ctx_len : info->seq_len);
	uint64_t kv_dim = info->n_heads > 0 ? (uint64_t)info->dim / (uint64_t)info->n_heads *
						      (uint64_t)info->n_kv_heads : 0;
	return 2 * (uint64_t)(n_seq > 0 ? n_seq : 1) * (uint64_t)info->n_layers * ctx * kv_dim *
	       elem;
}
