/* engine/runtime/internal.h: the runtime's private header: a session's struct and what the
 * files of engine/runtime/ share: session.c (set-up and teardown, the table of layer code),
 * forward.c (the forward pass and the layer toolkit each architecture's block is made of),
 * arch_<name>.c (one architecture's block: arch.h's enum eng_arch), kv_cache.c (the KV cache:
 * its element types, attention over it, moving it between sessions) and pass_bytes.c.
 * forward.c's opening comment tells how a pass runs. */
#ifndef MEMWALL_ENGINE_RUNTIME_INTERNAL_H
#define MEMWALL_ENGINE_RUNTIME_INTERNAL_H

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
#include "model/alias.h"
#include "attention.h"
#include "kernels.h"
#include "minmax.h"
#include "model/arch.h"
#include "model/model.h"
#include "pool.h"
#include "quants.h"
#include "sparsity.h"
#include "workplan.h"

/* ROW_ALIGN, MIN_CHUNK_ROWS, MIN_CHUNK_ROWS_TOKENS: how a phase is cut into chunks
 * (workplan.h). */

/* Activations quantized for non-F32 weights (quants.h): one slot per activation type a weight
 * type may ask for (its vec_dot_type), and per input vector, so that Q, K and V (or the fused
 * QKV) and the FFN's gate and up share one quantization of their input, as in ggml, where
 * a mul_mat converts src1 once for all rows. */
enum { ACT_F16, ACT_BF16, ACT_Q8_0, ACT_Q8_1, ACT_Q8_K, ACT_COUNT };
static inline uint32_t act_type(int slot)
{
	static const uint32_t t[ACT_COUNT] = {
		[ACT_F16] = KRN_TYPE_F16,   [ACT_BF16] = KRN_TYPE_BF16, [ACT_Q8_0] = KRN_TYPE_Q8_0,
		[ACT_Q8_1] = KRN_TYPE_Q8_1, [ACT_Q8_K] = KRN_TYPE_Q8_K,
	};
	return t[slot];
}

/* The vectors a matvec reads: the normed x (each thread's, or a pass's shared one), and the
 * shared attention output and FFN activation. */
enum act_vec { VEC_XN, VEC_XB, VEC_HB, VEC_COUNT };

/* A pass of at least this many tokens normalises x and quantizes each matrix phase's input
 * once, the tokens split among the threads, into the session's xn and bact, behind one more
 * barrier per input (forward.c's prep_rows); a shorter one (decode, a batched step) lets each
 * thread make its own copies, O(tokens * n) each, which the barrier would cost as much as. On
 * stories110M (4352 floats quantized and 1536 normed per token and layer) a 128-token pass's
 * own copies had been each thread's 0.75 M floats a layer, against 57 M multiply-adds of
 * weights at 16 threads: at about 10 multiply-adds' time per float (an estimate: a q4_0 pass
 * at 1 thread ran 57 G multiply-adds a second; act_q8_0 spends some 15 cycles per 32 floats),
 * 13% of the pass, the same at every thread count while the weights' share shrinks (act_q8_K
 * had been 2% of a q4_K_M prefill at 1 thread, 3.4% at 2: avx512.c). */
#define SHARED_PREP_TOKENS 8

/* One thread's private state, alone in its cache lines. */
struct worker {
	_Alignas(64) float *xn;       /* (chunk, dim) this thread's normalised copies of x */
	unsigned char *act;           /* (VEC_COUNT, ACT_COUNT, act_bytes) quantized vectors */
	bool valid[VEC_COUNT][ACT_COUNT];
	/* A pass of several tokens: each vector's rows quantized to one activation type at a
	 * time (that of bslot[vec], -1 for none yet), act_bytes apart. */
	unsigned char *bact;          /* (VEC_COUNT, chunk, act_bytes); NULL when chunk is 1 */
	int bslot[VEC_COUNT];
	unsigned char *brows[VEC_COUNT]; /* where bslot's rows are: bact's, or the session's
					  * shared ones (SHARED_PREP_TOKENS) */
	uint16_t *h16;                /* (q_dim + ctx_len) an F16 cache's queries and attention
				       * weights, rounded to f16 */
	uint16_t *kv16;               /* (2, pass_positions, head_size) one KV head's keys, then
				       * its values, copied out of an F16 cache for a pass; NULL
				       * for a chunk of 1 or an F32 cache */
	float *att;                   /* (ctx_len) one head's attention weights for a token of a
				       * pass over an F16 cache (attend_f16_head: threads may share
				       * a head); NULL where kv16 is */
	uint8_t *nz;                  /* (hidden_dim) the down projection's nonzero blocks */
	uint8_t *live;                /* (hidden_dim) rows of gate or up this step computes */
	/* This pass's sparse FFN counts over the rows this thread claimed (engine.h's
	 * eng_step_bytes): gate and up rows skipped, their bytes, static-map misses. */
	uint64_t gate_skip, up_skip, row_skip_bytes, misses;
	float *dy;                    /* (chunk, widest output) a delta's product (alias.h);
				       * NULL for a model without canonical + delta layers */
	float *blk;                   /* (ATTN_HEAD_GROUP, attn_block) blocked attention's scores */
};

struct eng_session;

/* A norm of n values of x into out (weight w, bias b or NULL), and RoPE on elements [a, b)
 * of vec at the position of the pass's token k (forward.c has one of each kind). */
typedef void norm_fn(float *out, const float *x, const float *w, const float *b, int n,
		     float eps);
typedef void rope_fn(const struct eng_session *s, int k, float *vec, int a, int b);

/* The next unclaimed row (or head) of one phase, alone in its cache line. */
struct work_counter {
	_Alignas(64) _Atomic int next;
};

/* Phases with shared work, per layer, in order; the classifier's counter comes last. */
enum { WORK_QKV, WORK_HEADS, WORK_WO, WORK_UP, WORK_DOWN, WORK_PER_LAYER };
/* A pass's shared preparation of each phase's input, tokens claimed (SHARED_PREP_TOKENS),
 * per layer after the phases' counters; the classifier's comes before the classifier's. */
enum { PREP_ATT, PREP_XB, PREP_FFN, PREP_HB, PREP_PER_LAYER };

/* Test-only fault injection (issue 26): MEMWALL_TEST_FAULT=kv-pos stores each token's values
 * one cache position late (an off-by-one KV position); =head-k stores each KV head's keys in
 * the previous KV head's place (a wrong head offset on the keys; none with one KV head);
 * =head hands each head's attention output to the previous head's slot of wo. For tests that
 * must show a model catches a broken attention (tests/engine/test_attention.c); read once per
 * session (session.c), never set outside tests. */
enum { FAULT_NONE, FAULT_KV_POS, FAULT_HEAD_K, FAULT_HEAD };

struct eng_session {
	const struct eng_model *m;
	const struct krn_ops *ops;
	const struct krn_quant_ops *qops;
	/* (type, class of token counts) the table that runs x8 weights of that type
	 * (kernel_choice.c): the session's kernel choice, else qops */
	const struct krn_quant_ops *qpick[KRN_TYPE_COUNT][ENG_KC_CLASSES];
	const struct kv_traits *kv;
	const struct arch_ops *arch; /* the block of the model's architecture (m->arch) */
	norm_fn *norm;               /* its row's norm and RoPE */
	rope_fn *rope;
	struct eng_pool *pool;
	struct eng_hooks hooks;
	int n_threads;
	int dim, hidden_dim, q_dim, kv_dim, head_size, n_rot, n_heads, n_kv_heads, n_layers;
	int vocab_size, ctx_len;
	int qkv_align; /* row alignment of the QKV phase's chunks (whole heads for NeoX RoPE) */
	int heads_share; /* the attention phase's smallest claim: n_heads / threads, rounded up,
			  * so that the plan (workplan.h) gives each of min(threads, n_heads)
			  * threads one contiguous run of heads */
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
	float *xn;     /* (chunk, dim) a pass's normed x, shared (SHARED_PREP_TOKENS); NULL
			* when chunk is shorter */
	unsigned char *bact; /* (VEC_COUNT, chunk, act_bytes) a pass's quantized inputs, shared */
	float *att;    /* (n_heads, ctx_len) attention weights (a pass over an F16 cache uses
			* each worker's att: a head's tokens may be split among threads) */
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

	struct work_counter *work; /* ((WORK_PER_LAYER + PREP_PER_LAYER) * n_layers + 2) next
				    * chunk of each phase: the layers', their preparations', the
				    * classifier's preparation and the classifier's */
	int n_work;

	/* Engine-accounted bytes that do not depend on the position: every tensor's bytes as
	 * the step reads them (engine.h's tensor-table rules), summed per phase. */
	uint64_t emb_row_bytes, att_bytes, ffn_bytes, cls_bytes, kv_pos_bytes;
	/* The sparsity map (sparsity.h): whether it applies to the architecture (engine.h's
	 * eng_arch_sparsity_map), whether it is on, and this step's counts, kept by thread 0. */
	bool map_applies;
	bool sparse;
	int fault;         /* the test-only fault (MEMWALL_TEST_FAULT, above); 0: none */
	uint64_t act_zero, down_blocks_zero, skipped_bytes;
	const struct eng_sparsity_map *smap; /* static map of dead neurons, or NULL */
	bool sverify;   /* compute the static map's skipped gate rows anyway, count misses */
	float **down_t; /* (n_layers) each (hidden_dim, dim): transposed F32 down projections for
			 * per-neuron skipping (sparsity_neuron), else NULL */
};

/* ---- The KV cache (kv_cache.c) ------------------------------------------------------------ */

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

/* Element (q, l, pos, i) of a row-major cache: (n_seq, layer, ctx_len, kv_dim). Each
 * sequence's region is a whole single-sequence cache, so a sequence reads what a session of
 * its own would read. */
static inline size_t kv_row(const struct eng_session *s, int q, int l, int pos)
{
	return (((size_t)q * (size_t)s->n_layers + (size_t)l) * (size_t)s->ctx_len + (size_t)pos) *
	       (size_t)s->kv_dim;
}

/* Indexed by enum eng_kv_type; ENG_KV_AUTO's row is empty (resolved before the lookup). */
extern const struct kv_traits eng_kv_traits[ENG_KV_F16 + 1];

/* Zero-fills every sequence's first pass's cache rows (see kv_cache.c for why). */
void eng_kv_touch_first(const struct eng_session *s);
/* The cache's cells per K or V for s's shape; -EOVERFLOW, or -ENOMEM for a cache larger
 * than the machine's memory, with err filled. */
int eng_kv_cache_cells(const struct eng_session *s, size_t *kv_cells, struct eng_error *err);

/* Heads [h0, h1) of a pass of several tokens over an F16 cache, the first head's tokens from
 * k_first on, the last head's before k_last, every token of the others; each KV head's rows
 * copied out once for the tokens it serves (forward.c's attention). */
void eng_kv_attend_f16_heads(struct eng_session *s, struct worker *w, int l, int h0, int h1,
			     int k_first, int k_last);

/* ---- The forward pass and its layer toolkit (forward.c) ----------------------------------- */
/* What each architecture's block (arch_<name>.c) gives the forward pass; the norm and RoPE
 * it reads are its row's kinds (arch.h), which session.c looks up in forward.c's tables. */
struct arch_ops {
	/* Rows [a, b) of q | k | v of every token of the pass, from the normed x (xn_of). */
	void (*qkv)(struct eng_session *s, struct worker *w, int l, int a, int b);
	/* Layer l, the residual stream x in and out, on thread tid with the others (SPMD). */
	void (*layer)(struct eng_session *s, struct worker *w, int tid, int l);
	void (*init)(void); /* once per process before the first session runs it; or NULL */
};
/* Each architecture's block, eng_arch_<name>_ops of arch_<name>.c, declared from
 * engine/meson.build's list (arch.h); session.c's table holds them by enum eng_arch. */
#define ARCH_OPS_DECLARE(NAME, name) extern const struct arch_ops eng_arch_##name##_ops;
ENG_ARCHS(ARCH_OPS_DECLARE)
#undef ARCH_OPS_DECLARE

/* The norms and RoPE variants (forward.c), by the row's kinds (arch.h's enum eng_norm_kind
 * and enum eng_rope_kind). */
extern norm_fn *const eng_layer_norms[ENG_NORM_COUNT];
extern rope_fn *const eng_layer_ropes[ENG_ROPE_COUNT];

/* Whether this pass prepares its matrices' inputs once for all threads (SHARED_PREP_TOKENS). */
static inline bool prep_shared(const struct eng_session *s)
{
	return s->n_tok >= SHARED_PREP_TOKENS;
}

/* The normed x that this thread's matrices read: the pass's shared one, or its own. */
static inline const float *xn_of(const struct eng_session *s, const struct worker *w)
{
	return prep_shared(s) ? s->xn : w->xn;
}

/* The counter of layer l's preparation p (PREP_ATT ...). */
static inline int prep_work(const struct eng_session *s, int l, int p)
{
	return WORK_PER_LAYER * s->n_layers + l * PREP_PER_LAYER + p;
}

/* The toolkit a block is made of (forward.c says how a pass runs). Claims the next chunk
 * [*a, *b) of phase `work`'s rows of m, in 16-row multiples; false when none is left. */
bool eng_layer_take_rows(struct eng_session *s, int work, int rows, const struct eng_mat *m,
			 int *a, int *b);
/* y[k * ldy + r] = row r of m . (row k of x, ldx floats apart) for rows [a, b) and each
 * token k of the pass, x being this thread's vector `vec`; a canonical + delta matrix
 * (alias.h) adds its delta's product. */
void eng_layer_mat_rows(const struct eng_session *s, struct worker *w, enum act_vec vec,
			float *y, size_t ldy, const struct eng_mat *m, const float *x, size_t ldx,
			int a, int b);
/* The attention block up to wo's input in s->xb: norm, q|k|v (ops->qkv), RoPE, cache,
 * heads. */
void eng_layer_attention(struct eng_session *s, struct worker *w, int tid, int l);
/* A barrier at a phase edge, where the phase hook (engine.h) sees no thread in either. */
void eng_layer_phase_edge(struct eng_session *s, int tid, enum eng_phase end, int end_layer,
			  enum eng_phase begin, int begin_layer);
/* A pass's input to one phase's matrices, made once for every thread (prep_shared). */
void eng_layer_prep_rows(struct eng_session *s, struct worker *w, int tid, int work,
			 enum act_vec vec, const float *in, size_t ld, int n, const float *nw,
			 const float *nb, const struct eng_mat *m);
/* dst[t][r] += src[t][r] for rows [a, b) of every token of the pass, rows n apart. */
void eng_layer_add_rows(const struct eng_session *s, float *dst, const float *src, int n, int a,
			int b);
/* The FFN-activation hook (engine.h) on s->hb, thread 0 only. */
void eng_layer_ffn_act_hook(const struct eng_session *s, int tid, int l);
/* The gated FFN after attention's residual: x += down (act(gate h) * up h), h = the
 * ffn_norm of x, with the sparsity map where the session has it on. */
void eng_layer_ffn_gated(struct eng_session *s, struct worker *w, int tid, int l);

/* Engine-accounted bytes of the pass just run (pass_bytes.c). */
void eng_pass_bytes(const struct eng_session *s, struct eng_step_bytes *b);

/* kernel_choice.c: s->qpick from the session's kernel choice c (NULL: qops everywhere);
 * -EINVAL or -ENOTSUP, err saying which entry, for one the session cannot run exactly. */
int eng_kchoice_resolve(struct eng_session *s, const struct eng_kernel_choice *c,
		    struct eng_error *err);

/* The quant table for a call of n_tok tokens on matrix m: its kernel choice for x8 weights,
 * the session's table for the rest. */
static inline const struct krn_quant_ops *qops_for(const struct eng_session *s,
						   const struct eng_mat *m, int n_tok)
{
	return m->x8 && m->type < KRN_TYPE_COUNT ? s->qpick[m->type][eng_kernel_class(n_tok)]
						 : s->qops;
}

#endif
