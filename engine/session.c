/* engine/session.c: a decode session: the KV cache, the activations, the thread pool, and the
 * forward pass, after karpathy/llama2.c run.c's `forward`, parallelised for the memory wall.
 * Two block structures, chosen by a table (arch_ops): Llama (RMSNorm, RoPE on adjacent pairs,
 * grouped-query attention, SwiGLU) and Falcon (one LayerNorm feeding attention and a GELU MLP
 * in parallel, fused QKV, NeoX RoPE), the latter after llama.cpp's src/models/falcon.cpp.
 *
 * Every thread runs the whole step (SPMD, forward_worker) and the threads meet at a barrier
 * between phases that need each other's output. Each matvec is split by rows into chunks
 * (multiples of 16 rows) that shrink as the phase drains, claimed from an atomic counter
 * (take): every thread streams contiguous slices of each weight matrix, and a thread that the
 * OS delays (this project's machines are often shared) does not hold the others at the
 * barrier for long. One thread takes each phase whole:
 *   per layer: [norm, q|k|v rows, RoPE, cache write] | [attention, heads in even shares] |
 *              [wo rows (llama: residual)] | [llama: norm; gate and up rows, activation] |
 *              [down rows, residual]
 *   then:      [norm, classifier rows]
 * Each thread normalises its own copy of x (O(dim)), which saves a serial step and a barrier,
 * and quantizes its own copy of each input vector for non-F32 weights (O(n) again, against
 * O(rows * n) of weights). Weights of any ggml type run through the quant tables
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
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "alias.h"
#include "attention.h"
#include "kernels.h"
#include "model.h"
#include "pool.h"
#include "quants.h"
#include "sparsity.h"

/* Rows per chunk of a split matvec are a multiple of 16: 16 rows of any width start on a
 * 64-byte boundary whenever the matrix does, and a kernel that works on groups of rows sees the
 * same groups whatever the thread count, so results do not depend on it. */
#define ROW_ALIGN 16
/* The smallest chunk, in rows: ~100 KB of a stories110M matrix, a few microseconds of
 * streaming, well above the cost of claiming it (one contended compare-and-swap). */
#define MIN_CHUNK_ROWS 32
/* The smallest chunk of a pass of several tokens over quantized weights: each call of a
 * multi-token kernel prepares every token's activation blocks again (x8_legacy.h's per-block
 * sums, x8_kquants.h's), work that a 32-row chunk spends as much time on as on its rows; at 2
 * threads that preparation had been 3.3% of a stories110M q8_0 prefill (perf record -e
 * cpu-clock). F32 weights prepare nothing and keep MIN_CHUNK_ROWS: 128-row chunks of a
 * 768-row matrix left one of 2 threads waiting for up to a sixth of each phase. */
#define MIN_CHUNK_ROWS_TOKENS 128

/* Activations quantized for non-F32 weights (quants.h): one slot per activation type a weight
 * type may ask for (its vec_dot_type), and per input vector, so that Q, K and V (or the fused
 * QKV) and the FFN's gate and up share one quantization of their input, as in ggml, where
 * a mul_mat converts src1 once for all rows. */
enum { ACT_F16, ACT_BF16, ACT_Q8_0, ACT_Q8_1, ACT_Q8_K, ACT_COUNT };
static const uint32_t act_types[ACT_COUNT] = {
	[ACT_F16] = KRN_TYPE_F16,   [ACT_BF16] = KRN_TYPE_BF16, [ACT_Q8_0] = KRN_TYPE_Q8_0,
	[ACT_Q8_1] = KRN_TYPE_Q8_1, [ACT_Q8_K] = KRN_TYPE_Q8_K,
};

/* The vectors a matvec reads: each thread's normed x, and the shared attention output and
 * FFN activation. */
enum act_vec { VEC_XN, VEC_XB, VEC_HB, VEC_COUNT };

/* One thread's private state, alone in its cache lines. */
struct worker {
	_Alignas(64) float *xn;       /* (chunk, dim) this thread's normalised copies of x */
	unsigned char *act;           /* (VEC_COUNT, ACT_COUNT, act_bytes) quantized vectors */
	bool valid[VEC_COUNT][ACT_COUNT];
	/* A pass of several tokens: each vector's rows quantized to one activation type at a
	 * time (that of bslot[vec], -1 for none yet), act_bytes apart. */
	unsigned char *bact;          /* (VEC_COUNT, chunk, act_bytes); NULL when chunk is 1 */
	int bslot[VEC_COUNT];
	uint16_t *h16;                /* (q_dim + ctx_len) an F16 cache's queries and attention
				       * weights, rounded to f16 */
	uint16_t *kv16;               /* (2, pass_positions, head_size) one KV head's keys, then
				       * its values, copied out of an F16 cache for a pass; NULL
				       * for a chunk of 1 or an F32 cache */
	uint8_t *nz;                  /* (hidden_dim) the down projection's nonzero blocks */
	uint8_t *live;                /* (hidden_dim) rows of gate or up this step computes */
	/* This pass's sparse FFN counts over the rows this thread claimed (engine.h's
	 * eng_step_bytes): gate and up rows skipped, their bytes, static-map misses. */
	uint64_t gate_skip, up_skip, row_skip_bytes, misses;
	float *dy;                    /* (chunk, widest output) a delta's product (alias.h);
				       * NULL for a model without canonical + delta layers */
	float *blk;                   /* (ATTN_HEAD_GROUP, attn_block) blocked attention's scores */
};

/* What differs between architectures (model.h's enum eng_arch); the table is below the
 * functions it names. */
struct eng_session;

struct arch_ops {
	void (*norm)(float *out, const float *x, const float *w, const float *b, int n, float eps);
	void (*rope)(const struct eng_session *s, int k, float *vec, int a, int b);
	void (*qkv)(struct eng_session *s, struct worker *w, int l, int a, int b);
	void (*layer)(struct eng_session *s, struct worker *w, int tid, int l);
	bool neox; /* RoPE pairs span the head: QKV chunks must hold whole heads */
};

/* The next unclaimed row (or head) of one phase, alone in its cache line. */
struct work_counter {
	_Alignas(64) _Atomic int next;
};

/* Phases with shared work, per layer, in order; the classifier's counter comes last. */
enum { WORK_QKV, WORK_HEADS, WORK_WO, WORK_UP, WORK_DOWN, WORK_PER_LAYER };

struct eng_session {
	const struct eng_model *m;
	const struct krn_ops *ops;
	const struct krn_quant_ops *qops;
	const struct kv_traits *kv;
	const struct arch_ops *arch;
	struct eng_pool *pool;
	struct eng_hooks hooks;
	int n_threads;
	int dim, hidden_dim, q_dim, kv_dim, head_size, n_rot, n_heads, n_kv_heads, n_layers;
	int vocab_size, ctx_len;
	int qkv_align; /* row alignment of the QKV phase's chunks (whole heads for NeoX RoPE) */
	int heads_share; /* heads per claim of the attention phase: n_heads / threads, rounded up */
	enum eng_attention attn; /* the attention kernel (engine.h) */
	int attn_block;  /* positions per block of blocked attention (attention.h) */
	int pass_positions; /* positions a worker's kv16 holds: a pass's last token's at most */
	int n_seq;     /* sequences, each with its own region of the cache and positions */
	int *next_pos; /* (n_seq) positions 0..next_pos[q]-1 of sequence q are in the cache */
	int chunk;     /* the most tokens one pass runs (eng_session_prefill's chunk, >= n_seq) */
	int n_tok;     /* tokens in the pass being run */
	int *tseq;     /* (chunk) the sequence of each token of the pass */
	int *tpos;     /* (chunk) the position of each token of the pass in its sequence */
	bool want_logits; /* the pass ends with the classifier, on its last token */
	bool all_logits;  /* ... on every token of the pass (a batched step, a verification) */

	/* A pass's vectors, one row per token of it (decode: one row). */
	float *x;      /* (chunk, dim) the residual stream */
	void *emb_row; /* (a plain embedding row) the lookup's row out of an x8 table, else NULL */
	float *xb;     /* (chunk, q_dim) attention output, heads side by side */
	float *y;      /* (chunk, dim) output of wo (falcon: kept until the FFN's residual add) */
	float *y2;     /* (chunk, dim) output of the down projection */
	float *qkv;    /* (chunk, qkv_dim) each position's q | k | v */
	float *hb;     /* (chunk, hidden_dim) the FFN activation: SiLU(gate) * up, or GELU(up) */
	float *hb2;    /* (chunk, hidden_dim) llama's up projection */
	float *att;    /* (n_heads, ctx_len) attention weights */
	float *logits; /* (logit_rows, vocab_size) */
	int logit_rows; /* the most tokens of a pass with all_logits: n_seq, or verify_tokens */
	int verify_tokens; /* the most tokens of an eng_session_verify pass */
	int qkv_dim;   /* q_dim + 2 kv_dim */
	struct worker *workers; /* (threads) */
	size_t act_bytes;       /* one quantized vector of the longest input, any type */
	void *key_cache;   /* (n_seq, layer, ctx_len, kv_dim) of kv->elem bytes */
	void *value_cache; /* (n_seq, layer, ctx_len, kv_dim) */
	float *rope_freq;  /* (n_rot / 2) */
	float *rope_cos;   /* (chunk, n_rot / 2) at each position of the pass */
	float *rope_sin;   /* (chunk, n_rot / 2) */

	struct work_counter *work; /* (WORK_PER_LAYER * n_layers + 1) next chunk of each phase */
	int n_work;

	/* Engine-accounted bytes that do not depend on the position: every tensor's bytes as
	 * the step reads them (engine.h's tensor-table rules), summed per phase. */
	uint64_t emb_row_bytes, att_bytes, ffn_bytes, cls_bytes, kv_pos_bytes;
	/* The sparsity map (sparsity.h): on or off, and this step's counts, kept by thread 0. */
	bool sparse;
	uint64_t act_zero, down_blocks_zero, skipped_bytes;
	const struct eng_sparsity_map *smap; /* static map of dead neurons, or NULL */
	bool sverify;   /* compute the static map's skipped gate rows anyway, count misses */
	float **down_t; /* (n_layers) each (hidden_dim, dim): transposed F32 down projections for
			 * per-neuron skipping (sparsity_neuron), else NULL */
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

/* The smallest chunk of rows of m for this pass. */
static int chunk_min(const struct eng_session *s, const struct eng_mat *m)
{
	return s->n_tok > 1 && m->type != KRN_TYPE_F32 ? MIN_CHUNK_ROWS_TOKENS : MIN_CHUNK_ROWS;
}

/* The next rows of m's matvec or matmul, in 16-row multiples. */
static bool take_rows(struct eng_session *s, int work, int rows, const struct eng_mat *m,
		      int *a, int *b)
{
	return take(s, work, rows, ROW_ALIGN, chunk_min(s, m), a, b);
}

/* The vector x (n values) quantized to type t for this thread, converted on first use since
 * x last changed (act_reset). */
static const void *act_get(const struct eng_session *s, struct worker *w, enum act_vec vec,
			   const float *x, int n, uint32_t t)
{
	int slot = 0;
	while (slot < ACT_COUNT && act_types[slot] != t)
		slot++;
	/* Binding (gguf_model.c) admits only weight types whose vec_dot_type is listed. */
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

/* The pass's n_tok rows of x (ldx floats apart) quantized to type t for this thread, act_bytes
 * apart, converted on first use since x last changed (act_reset) or another type was asked
 * for. */
static const void *act_get_rows(const struct eng_session *s, struct worker *w, enum act_vec vec,
				const float *x, size_t ldx, int n, uint32_t t)
{
	int slot = 0;
	while (slot < ACT_COUNT && act_types[slot] != t)
		slot++;
	unsigned char *buf = w->bact + (size_t)vec * (size_t)s->chunk * s->act_bytes;
	if (w->bslot[vec] != slot) {
		for (int k = 0; k < s->n_tok; k++)
			s->qops->quantize_act[t](x + (size_t)k * ldx, buf + (size_t)k * s->act_bytes,
						 (size_t)n);
		w->bslot[vec] = slot;
	}
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
	krn_quant_matmul(s->qops, m->type, m->x8, y, ldy, m->data, (size_t)m->rows, xq,
			 s->act_bytes, (size_t)s->n_tok, (size_t)m->cols, (size_t)a, (size_t)b);
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
	const void *xq = act_get(s, w, vec, x, m->cols, krn_type_traits(m->type)->vec_dot_type);
	if (m->x8)
		krn_quant_matvec_x8(s->qops, m->type, y, m->data, (size_t)m->rows, xq,
				    (size_t)m->cols, (size_t)a, (size_t)b);
	else
		krn_quant_matvec(s->qops, m->type, y, m->data, xq, (size_t)m->cols, (size_t)a,
				 (size_t)b);
}

/* mat_row1 for each token of the pass, rows ldy and ldx floats apart. A canonical + delta
 * matrix (alias.h) adds D x, a second pass of the same kernels over the same quantized x. */
static void mat_rows(const struct eng_session *s, struct worker *w, enum act_vec vec, float *y,
		     size_t ldy, const struct eng_mat *m, const float *x, size_t ldx, int a, int b)
{
	for (const struct eng_mat *p = m; p; p = p->delta) {
		float *out = p == m ? y : w->dy;
		if (s->n_tok > 1)
			mat_rows_tokens(s, w, vec, out, ldy, p, x, ldx, a, b);
		else
			mat_row1(s, w, vec, out, p, x, a, b);
		if (p != m)
			alias_add(y, w->dy, ldy, s->n_tok, a, b);
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

/* ggml's CPU GELU (vec.h, ggml_vec_gelu_f32 with GGML_GELU_FP16): the tanh approximation
 * looked up in a table of 2^16 halves, indexed by the input rounded to half, the result a
 * half; 0 below -10 and the identity above 10. Emulated because it moves falcon's logits by
 * 1e-3 against exact GELU (fixtures/gguf/README.md). */
static uint16_t gelu_table[1 << 16];
static pthread_once_t gelu_once = PTHREAD_ONCE_INIT;

static void gelu_table_fill(void)
{
	/* ggml's GELU_COEF_A and SQRT_2_OVER_PI, in float as ggml_gelu_f32 computes. */
	const float coef_a = 0.044715f, sqrt_2_over_pi = 0.79788456080286535587989211986876f;
	for (uint32_t h = 0; h < (1u << 16); h++) {
		float x = krn_fp16_to_fp32((uint16_t)h);
		float g = 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * (1.0f + coef_a * x * x)));
		gelu_table[h] = krn_fp32_to_fp16(g);
	}
}

static float gelu_f16(float x)
{
	if (x <= -10.0f)
		return 0.0f;
	if (x >= 10.0f)
		return x;
	return krn_fp16_to_fp32(gelu_table[krn_fp32_to_fp16(x)]);
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

/* ---- The KV cache: how each element type stores and reads (a table, kv_traits) ---------- */

/* Element (q, l, pos, i) of a row-major cache: (n_seq, layer, ctx_len, kv_dim). Each
 * sequence's region is a whole single-sequence cache, so a sequence reads what a session of
 * its own would read. */
static size_t kv_row(const struct eng_session *s, int q, int l, int pos)
{
	return (((size_t)q * (size_t)s->n_layers + (size_t)l) * (size_t)s->ctx_len + (size_t)pos) *
	       (size_t)s->kv_dim;
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
	float *att = s->att + (size_t)h * (size_t)s->ctx_len;
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

/* Heads [h0, h1) of every token of a pass over an F16 cache, head by head: each KV head's
 * keys and values over the pass's positions are first copied out of the cache rows (each a
 * head_size slice, kv_dim apart) into w->kv16, contiguous, where every token of the pass
 * then reads them from L1 (64 KB at 128 positions of 64 dimensions). The same kernels on the
 * same halves as attend_f16_pass, so the same bits. Token by token from the cache, the
 * slices were spread over the cache's rows and read again per token. */
static void attend_f16_heads(struct eng_session *s, struct worker *w, int l, int h0, int h1)
{
	size_t hs = (size_t)s->head_size, kv = (size_t)s->kv_dim;
	size_t n_pos = (size_t)s->tpos[s->n_tok - 1] + 1;
	int kv_mul = s->n_heads / s->n_kv_heads, copied = -1;
	const uint16_t *keys = (const uint16_t *)s->key_cache + kv_row(s, s->tseq[0], l, 0);
	const uint16_t *values = (const uint16_t *)s->value_cache + kv_row(s, s->tseq[0], l, 0);
	uint16_t *kc = w->kv16, *vc = w->kv16 + n_pos * hs;
	for (int h = h0; h < h1; h++) {
		if (h / kv_mul != copied) {
			copied = h / kv_mul;
			for (size_t t = 0; t < n_pos; t++) {
				size_t from = t * kv + (size_t)copied * hs;
				memcpy(kc + t * hs, keys + from, hs * sizeof(uint16_t));
				memcpy(vc + t * hs, values + from, hs * sizeof(uint16_t));
			}
		}
		for (int k = 0; k < s->n_tok; k++)
			attend_f16_head(s, w, k, h, kc, vc, hs);
	}
}

/* Block-streaming attention (engine/attention.c) over the same cache rows as attend_f32. */
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
	attn_blocked_f32(s->ops, &j, s->qkv + (size_t)k * (size_t)s->qkv_dim,
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
	attn_blocked_f16(s->qops, &j, w->h16, s->xb + (size_t)k * (size_t)s->q_dim, h0, h1);
}

struct kv_traits {
	const char *name;
	size_t elem; /* bytes per element */
	/* Rows [a, b) of sequence q's key or value at position pos into layer l's cache. */
	void (*store_k)(const struct eng_session *s, int q, int l, int pos, const float *k, int a,
			int b);
	void (*store_v)(const struct eng_session *s, int q, int l, int pos, const float *v, int a,
			int b);
	/* Heads [h0, h1) of the pass's token k (sequence tseq[k], position tpos[k]) in layer l
	 * attend over positions 0..tpos[k] of its sequence: those heads of its row of s->xb. */
	void (*attend)(struct eng_session *s, struct worker *w, int l, int k, int h0, int h1);
	/* The same, block-streaming (ENG_ATTN_BLOCKED). */
	void (*attend_blocked)(struct eng_session *s, struct worker *w, int l, int k, int h0,
			       int h1);
	/* attend's bits for a token of a pass of several, whose cache rows are in the caches */
	void (*attend_pass)(struct eng_session *s, struct worker *w, int l, int k, int h0, int h1);
};

static const struct kv_traits kv_traits[] = {
	[ENG_KV_F32] = { "f32", sizeof(float), store_k_f32, store_v_f32, attend_f32,
			 attend_blocked_f32, attend_f32 },
	[ENG_KV_F16] = { "f16", sizeof(uint16_t), store_k_f16, store_v_f16, attend_f16,
			 attend_blocked_f16, attend_f16_pass },
};

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
			s->arch->rope(s, t, q, qa, qb);
		if (ka < kb) {
			s->arch->rope(s, t, k, ka, kb);
			s->kv->store_k(s, s->tseq[t], l, s->tpos[t], k, ka, kb);
		}
		if (va < vb)
			s->kv->store_v(s, s->tseq[t], l, s->tpos[t], v, va, vb);
	}
}

/* Llama: rows [a, b) of q | k | v from the three matrices (one phase, one barrier). */
static void qkv_llama(struct eng_session *s, struct worker *w, int l, int a, int b)
{
	const struct eng_layer *L = &s->m->layers[l];
	float *q = s->qkv, *k = q + s->q_dim, *v = k + s->kv_dim;
	size_t ld = (size_t)s->qkv_dim, dim = (size_t)s->dim;
	int qa = a, qb = imin(b, s->q_dim);
	if (qa < qb)
		mat_rows(s, w, VEC_XN, q, ld, &L->wq, w->xn, dim, qa, qb);
	int ka = imax(a, s->q_dim) - s->q_dim, kb = imin(b, s->q_dim + s->kv_dim) - s->q_dim;
	if (ka < kb)
		mat_rows(s, w, VEC_XN, k, ld, &L->wk, w->xn, dim, ka, kb);
	int va = imax(a, s->q_dim + s->kv_dim) - s->q_dim - s->kv_dim,
	    vb = imin(b, s->q_dim + 2 * s->kv_dim) - s->q_dim - s->kv_dim;
	if (va < vb)
		mat_rows(s, w, VEC_XN, v, ld, &L->wv, w->xn, dim, va, vb);
}

/* Falcon: rows [a, b) of the fused QKV matrix, whose rows are already q | k | v. */
static void qkv_falcon(struct eng_session *s, struct worker *w, int l, int a, int b)
{
	mat_rows(s, w, VEC_XN, s->qkv, (size_t)s->qkv_dim, &s->m->layers[l].wqkv, w->xn,
		 (size_t)s->dim, a, b);
}

/* norm over each token's row of x into this thread's xn */
static void norm_rows(const struct eng_session *s, struct worker *w, const float *nw,
		      const float *nb)
{
	if (s->arch->norm == norm_rms) {
		norm_rms_rows(w->xn, s->x, (size_t)s->dim, s->n_tok, nw, s->dim, s->m->hp.norm_eps);
		return;
	}
	for (int t = 0; t < s->n_tok; t++)
		s->arch->norm(w->xn + (size_t)t * (size_t)s->dim, s->x + (size_t)t * (size_t)s->dim,
			      nw, nb, s->dim, s->m->hp.norm_eps);
}

/* The attention block up to wo's input in s->xb: norm, q|k|v, RoPE, cache, heads. Each token
 * of a pass attends to the cache up to its own position: the cache so far and the tokens of
 * the pass before it, whose keys and values the QKV phase wrote before the barrier. */
static void attention(struct eng_session *s, struct worker *w, int tid, int l)
{
	const struct eng_layer *L = &s->m->layers[l];
	int work = l * WORK_PER_LAYER, a, b;
	norm_rows(s, w, L->attn_norm, L->attn_norm_b);
	act_reset(w, VEC_XN);
	act_reset(w, VEC_XB);
	act_reset(w, VEC_HB);
	int min = imax(chunk_min(s, L->wqkv.data ? &L->wqkv : &L->wq), s->qkv_align);
	while (take(s, work + WORK_QKV, s->qkv_dim, s->qkv_align, min, &a, &b)) {
		s->arch->qkv(s, w, l, a, b);
		qkv_finish(s, l, a, b);
	}
	eng_pool_barrier(s->pool, tid);
	/* An even share of heads per claim, so that each thread's heads are one contiguous
	 * piece of every cache row; a late thread's share still goes to whoever is free. The
	 * thread that holds a head runs it for every token of the pass (s->att is per head). */
	/* A pass of one sequence's tokens (a prompt's chunk, a verification) reads cache rows it
	 * has just written or read: attend_pass. A batch of sequences' steps reads each one's
	 * cache as decode does. */
	bool pass = s->n_tok > 1 && s->tseq[0] == s->tseq[s->n_tok - 1];
	/* A pass over an F16 cache, none of whose tokens goes blocked: head by head, each KV
	 * head's rows copied out once for all the pass's tokens (attend_f16_heads). */
	int last = s->tpos[s->n_tok - 1] + 1;
	bool heads = pass && w->kv16 && last <= s->pass_positions &&
		     (s->attn == ENG_ATTN_NAIVE ||
		      (s->attn == ENG_ATTN_AUTO && last < ENG_ATTN_AUTO_POSITIONS));
	while (take(s, work + WORK_HEADS, s->n_heads, 1, s->heads_share, &a, &b)) {
		if (heads) {
			attend_f16_heads(s, w, l, a, b);
			continue;
		}
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
}

/* dst[t][r] += src[t][r] for rows [a, b) of every token of the pass, rows n apart */
static void add_rows(const struct eng_session *s, float *dst, const float *src, int n, int a,
		     int b)
{
	for (int t = 0; t < s->n_tok; t++)
		for (int r = a; r < b; r++)
			dst[(size_t)t * (size_t)n + (size_t)r] += src[(size_t)t * (size_t)n + (size_t)r];
}

/* The FFN-activation hook (engine.h), once per token of the pass: hb is complete here and is
 * written again only in the next layer's FFN, behind barriers this thread has yet to reach. */
static void ffn_act_hook(const struct eng_session *s, int tid, int l)
{
	if (!s->hooks.ffn_act || tid)
		return;
	for (int t = 0; t < s->n_tok; t++)
		s->hooks.ffn_act(s->hooks.ctx, l, s->hb + (size_t)t * (size_t)s->hidden_dim,
				 s->hidden_dim);
}

/* The down projection's rows [a, b) over the nonzero blocks of this thread's map. */
static void down_sparse(const struct eng_session *s, struct worker *w, const struct eng_mat *m,
			int a, int b)
{
	const void *xq = m->type == KRN_TYPE_F32
			 ? NULL
			 : act_get(s, w, VEC_HB, s->hb, m->cols, krn_type_traits(m->type)->vec_dot_type);
	sparse_rows(s->ops, s->qops, s->y2, m, s->hb, xq, w->nz, a, b);
	if (m->delta) { /* canonical + delta (alias.h): the delta's same blocks */
		xq = m->delta->type == KRN_TYPE_F32
		     ? NULL
		     : act_get(s, w, VEC_HB, s->hb, m->cols,
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
			mat_rows(s, w, vec, y, (size_t)s->hidden_dim, m, x, (size_t)s->dim, r, r1);
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
		mat_rows(s, w, VEC_XN, s->hb2, (size_t)s->hidden_dim, &L->w_gate, w->xn,
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
	attention(s, w, tid, l);
	while (take_rows(s, work + WORK_WO, s->dim, &L->wo, &a, &b)) {
		mat_rows(s, w, VEC_XB, s->y, dim, &L->wo, s->xb, (size_t)s->q_dim, a, b);
		add_rows(s, s->x, s->y, s->dim, a, b);
	}
	phase_edge(s, tid, ENG_PHASE_ATTENTION, l, ENG_PHASE_FFN, l);

	/* SwiGLU (Shazeer 2020); gate and up share one phase and one quantized input. */
	norm_rows(s, w, L->ffn_norm, NULL);
	act_reset(w, VEC_XN);
	bool sparse = s->sparse && s->n_tok == 1;
	while (take_rows(s, work + WORK_UP, s->hidden_dim, &L->w_up, &a, &b)) {
		if (sparse) {
			ffn_up_sparse(s, w, l, a, b);
			continue;
		}
		mat_rows(s, w, VEC_XN, s->hb, hid, &L->w_gate, w->xn, dim, a, b);
		mat_rows(s, w, VEC_XN, s->hb2, hid, &L->w_up, w->xn, dim, a, b);
		for (int t = 0; t < s->n_tok; t++)
			glu_rows(s, s->hb + (size_t)t * hid, s->hb2 + (size_t)t * hid, a, b);
	}
	eng_pool_barrier(s->pool, tid);
	ffn_act_hook(s, tid, l);
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
				s->skipped_bytes += sparse_skipped_bytes(&L->w_down, w->nz) +
						    (L->w_down.delta /* canonical + delta */
						     ? sparse_skipped_bytes(L->w_down.delta, w->nz) : 0);
		}
	}
	while (take_rows(s, work + WORK_DOWN, s->dim, &L->w_down, &a, &b)) {
		if (sparse && wt)
			down_neuron(s, wt, a, b);
		else if (sparse)
			down_sparse(s, w, &L->w_down, a, b);
		else
			mat_rows(s, w, VEC_HB, s->y2, dim, &L->w_down, s->hb, hid, a, b);
		add_rows(s, s->x, s->y2, s->dim, a, b);
	}
}

/* Falcon's parallel block (llama.cpp's src/models/falcon.cpp): h = LayerNorm(x);
 * x = (down GELU(up h) + wo attn(h)) + x, added in that order as ggml's graph does. */
static void layer_falcon(struct eng_session *s, struct worker *w, int tid, int l)
{
	const struct eng_layer *L = &s->m->layers[l];
	int work = l * WORK_PER_LAYER, a, b;
	size_t dim = (size_t)s->dim, hid = (size_t)s->hidden_dim;
	attention(s, w, tid, l);
	while (take_rows(s, work + WORK_WO, s->dim, &L->wo, &a, &b))
		mat_rows(s, w, VEC_XB, s->y, dim, &L->wo, s->xb, (size_t)s->q_dim, a, b);
	phase_edge(s, tid, ENG_PHASE_ATTENTION, l, ENG_PHASE_FFN, l);

	/* The FFN reads the same normed input as attention: this thread's xn is unchanged. */
	while (take_rows(s, work + WORK_UP, s->hidden_dim, &L->w_up, &a, &b)) {
		mat_rows(s, w, VEC_XN, s->hb, hid, &L->w_up, w->xn, dim, a, b);
		for (int t = 0; t < s->n_tok; t++)
			for (int r = a; r < b; r++)
				s->hb[(size_t)t * hid + (size_t)r] =
					gelu_f16(s->hb[(size_t)t * hid + (size_t)r]);
	}
	eng_pool_barrier(s->pool, tid);
	ffn_act_hook(s, tid, l);
	while (take_rows(s, work + WORK_DOWN, s->dim, &L->w_down, &a, &b)) {
		mat_rows(s, w, VEC_HB, s->y2, dim, &L->w_down, s->hb, hid, a, b);
		for (int t = 0; t < s->n_tok; t++) {
			float *x = s->x + (size_t)t * dim;
			const float *y = s->y + (size_t)t * dim, *y2 = s->y2 + (size_t)t * dim;
			for (int r = a; r < b; r++)
				x[r] = (y2[r] + y[r]) + x[r];
		}
	}
}

/* The table of what differs between architectures. */
static const struct arch_ops arch_ops[ENG_ARCH_COUNT] = {
	[ENG_ARCH_LLAMA] = { norm_rms, rope_norm, qkv_llama, layer_llama, false },
	[ENG_ARCH_FALCON] = { norm_layer, rope_neox, qkv_falcon, layer_falcon, true },
};

static void forward_worker(void *arg, int tid)
{
	struct eng_session *s = arg;
	const struct eng_model *m = s->m;
	struct worker *w = &s->workers[tid];
	int a, b;

	for (int l = 0; l < s->n_layers; l++) {
		s->arch->layer(s, w, tid, l);
		if (l + 1 < s->n_layers)
			phase_edge(s, tid, ENG_PHASE_FFN, l, ENG_PHASE_ATTENTION, l + 1);
		else
			phase_edge(s, tid, ENG_PHASE_FFN, l, ENG_PHASE_CLASSIFIER, -1);
	}
	if (!s->want_logits)
		return;
	act_reset(w, VEC_XN);
	if (s->all_logits) {
		/* A batched step or a verification: every token's logits, the classifier read
		 * once for all. */
		norm_rows(s, w, m->out_norm, m->out_norm_b);
		while (take_rows(s, s->n_work - 1, s->vocab_size, &m->output, &a, &b))
			mat_rows(s, w, VEC_XN, s->logits, (size_t)s->vocab_size, &m->output, w->xn,
				 (size_t)s->dim, a, b);
		return;
	}
	/* The classifier, on the pass's last token only: the logits nobody reads are not
	 * computed. */
	const float *x = s->x + (size_t)(s->n_tok - 1) * (size_t)s->dim;
	s->arch->norm(w->xn, x, m->out_norm, m->out_norm_b, s->dim, m->hp.norm_eps);
	while (take_rows(s, s->n_work - 1, s->vocab_size, &m->output, &a, &b))
		mat_row1(s, w, VEC_XN, s->logits, &m->output, w->xn, a, b);
}

/* Engine-accounted bytes of the pass just run (engine.h, struct eng_step_bytes): each weight
 * once, however many tokens shared it, an embedding row per token, the classifier only when it
 * ran, and each token's cache reads and writes. */
static void pass_bytes(const struct eng_session *s, struct eng_step_bytes *b)
{
	uint64_t layers = (uint64_t)s->n_layers, n = (uint64_t)s->n_tok, cells = 0;
	memset(b, 0, sizeof(*b));
	/* Each token reads its own sequence's cache up to its position. */
	for (int t = 0; t < s->n_tok; t++)
		cells += (uint64_t)s->tpos[t] + 1;
	b->kv_read = cells * layers * s->kv_pos_bytes;
	b->kv_write = n * layers * s->kv_pos_bytes;
	b->by_phase[ENG_PHASE_ATTENTION] = n * s->emb_row_bytes + s->att_bytes;
	b->by_phase[ENG_PHASE_FFN] = s->ffn_bytes;
	b->by_phase[ENG_PHASE_CLASSIFIER] = s->want_logits ? s->cls_bytes : 0;
	/* The down-projection blocks (or rows) and the gate and up rows the sparsity map
	 * skipped were not read (engine/sparsity.c, ffn_up_sparse). */
	b->by_phase[ENG_PHASE_FFN] -= s->skipped_bytes;
	for (int t = 0; t < s->n_threads; t++) {
		const struct worker *w = &s->workers[t];
		b->by_phase[ENG_PHASE_FFN] -= w->row_skip_bytes;
		b->weights_skipped += w->row_skip_bytes;
		b->gate_rows_skipped += w->gate_skip;
		b->up_rows_skipped += w->up_skip;
		b->map_misses += w->misses;
	}
	b->weights = b->by_phase[ENG_PHASE_ATTENTION] + b->by_phase[ENG_PHASE_FFN] +
		     b->by_phase[ENG_PHASE_CLASSIFIER];
	b->weights_skipped += s->skipped_bytes;
	b->weights_unique = b->weights - (s->m->alias ? s->m->alias->reuse_bytes : 0);
	if (s->m->arch == ENG_ARCH_LLAMA && n == 1) {
		const struct eng_mat *down = &s->m->layers[0].w_down;
		b->act_zero = s->act_zero;
		b->act_total = layers * (uint64_t)s->hidden_dim;
		b->down_blocks_zero = s->down_blocks_zero;
		b->down_blocks = layers * (uint64_t)sparse_blocks(down);
	}
	b->by_phase[ENG_PHASE_ATTENTION] += b->kv_read + b->kv_write;
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
		pass_bytes(s, &b);
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

/* Writes the cache rows of every sequence's first pass (positions [0, chunk) of each layer)
 * now, at set-up, rather than in that pass: the pass would touch those pages first anyway,
 * and in 2 MiB pages each first touch zero-fills a whole page. Measured here: 38 MB of
 * stories110M's F16 cache at ctx 1024 (every page holds some layer's first rows) took up to
 * 75 ms inside a 128-token prompt when the host had taken the memory back (the VM's
 * page_reporting), a quarter of an F32 prompt's time; llama.cpp clears its whole cache when
 * it creates a context. The rest of a long context is still touched only as it fills. */
static void kv_touch_first(const struct eng_session *s)
{
	size_t first = (size_t)imin(s->chunk, s->ctx_len) * (size_t)s->kv_dim * s->kv->elem;
	for (int q = 0; q < s->n_seq; q++)
		for (int l = 0; l < s->n_layers; l++) {
			size_t at = kv_row(s, q, l, 0) * s->kv->elem;
			memset((char *)s->key_cache + at, 0, first);
			memset((char *)s->value_cache + at, 0, first);
		}
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
		const struct krn_type_traits *tr = krn_type_traits(act_types[i]);
		size_t blocks = ((size_t)n + tr->block_size - 1) / tr->block_size;
		if (blocks * tr->type_size > most)
			most = blocks * tr->type_size;
	}
	return (most + 63) / 64 * 64;
}

/* The tables a session runs with: the kernels (opt->kernels), the KV cache's element type
 * and the architecture's forward pass. */
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
	if ((unsigned)kv >= sizeof(kv_traits) / sizeof(kv_traits[0]) || !kv_traits[kv].name)
		return eng_error_set(err, -ENOTSUP, "", ENG_NO_OFFSET,
				     "KV cache type %d is unknown", (int)opt->kv_type);
	s->kv = &kv_traits[kv];
	if ((unsigned)opt->attention >= ENG_ATTN_COUNT)
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "attention kernel %d is unknown (give auto, naive or blocked)",
				     (int)opt->attention);
	s->attn = opt->attention;
	if ((unsigned)m->arch >= ENG_ARCH_COUNT)
		return eng_error_set(err, -ENOTSUP, m->path, ENG_NO_OFFSET,
				     "unknown architecture");
	s->arch = &arch_ops[m->arch];
	return 0;
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
	s->attn_block = attn_block_positions(s->head_size, s->kv->elem, s->ctx_len);
	s->pass_positions = imin(s->ctx_len, ENG_ATTN_AUTO_POSITIONS);
	/* Whole heads per QKV chunk for NeoX RoPE: the least multiple of both. */
	s->qkv_align = ROW_ALIGN;
	if (s->arch->neox)
		while (s->qkv_align % s->head_size)
			s->qkv_align += ROW_ALIGN;
}

/* The KV cache's elements per cache (keys or values), into *kv_cells, if the machine can
 * hold both caches. */
static int size_kv_cache(const struct eng_session *s, size_t *kv_cells, struct eng_error *err)
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
			if (c > 1 && s->kv == &kv_traits[ENG_KV_F16] &&
			    !(w->kv16 = alloc_aligned(2 * (size_t)s->pass_positions *
							      (size_t)s->head_size,
						      sizeof(uint16_t)))) {
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
	s->n_work = WORK_PER_LAYER * s->n_layers + 1;
	s->work = alloc_aligned((size_t)s->n_work, sizeof(*s->work));
	if (m->token_embd.x8 && !(s->emb_row = alloc_aligned(m->token_embd.row_bytes, 1)))
		rc = -ENOMEM;
	if (rc || !s->x || !s->xb || !s->y || !s->y2 || !s->qkv || !s->hb || !s->hb2 || !s->att ||
	    !s->logits || !s->next_pos || !s->tseq || !s->tpos || !s->workers || !s->key_cache ||
	    !s->value_cache || !s->rope_freq ||
	    !s->rope_cos || !s->rope_sin || !s->work)
		return eng_error_set(err, -ENOMEM, "", ENG_NO_OFFSET,
				     "out of memory for a session of %d positions", s->ctx_len);
	kv_touch_first(s);
	return 0;
}

/* Engine-accounted bytes, from the bound tensors: the same sizes and the same rules as the
 * tensor table (engine/tensors.c), so the two agree exactly. */
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
	/* Only llama's gated FFN has a map (falcon's GELU is never exactly zero in practice). */
	s->sparse = opt->sparsity_map && m->arch == ENG_ARCH_LLAMA;
	if (s->sparse && (rc = sparse_setup(s, opt, err)))
		goto out;
	if ((rc = size_kv_cache(s, &kv_cells, err)) || (rc = alloc_buffers(s, kv_cells, err)))
		goto out;
	/* theta_j = base^(-2j / n_rot) (run.c's float formula; ggml's rope gives the same
	 * angles to float rounding). */
	for (int j = 0; j < s->n_rot / 2; j++)
		s->rope_freq[j] = 1.0f / powf(m->hp.rope_base, (float)(2 * j) / (float)s->n_rot);
	if (m->arch == ENG_ARCH_FALCON)
		pthread_once(&gelu_once, gelu_table_fill);
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
		{ "architecture", (long)dst->m->arch, (long)src->m->arch },
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
