/* src/analysis/analytic.h: the analytic model of one decode step, from a model's tensor table.
 *
 * Every figure is computed from the tensor table (engine.h, eng_model_tensors and friends):
 * never measured, never sampled. Byte counts are exact; FLOPs count a multiply-add as 2 and
 * leave out norms, RoPE and softmax (O(dim) per layer, under 0.1 % for every shape here). */
#ifndef MEMWALL_ANALYTIC_H
#define MEMWALL_ANALYTIC_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

/* When the LLC size is not known (a VM without cache topology, a record without machine
 * caches), the floor assumes this much: more than any client CPU's last-level cache, so a
 * floor computed with it is a lower bound and an IMPLAUSIBLE verdict does not hang on it. */
#define MW_LLC_UNKNOWN_BOUND (256ull << 20)

struct mw_analytic_options {
	int pos;            /* the step's position: attention reads the cache at 0..pos */
	int kv_elem_bytes;  /* bytes per cached element; <= 0: the table's kv_type_id */
	int act_elem_bytes; /* bytes per activation element; <= 0: 4 (f32) */
	uint64_t llc_bytes; /* 0: unknown, MW_LLC_UNKNOWN_BOUND is used and said so */
	const char *llc_source; /* where llc_bytes came from, for the statement */
};

struct mw_analytic {
	/* Weights read per token: every matrix whole, one embedding row, a tied classifier's
	 * table once. */
	uint64_t weights;
	uint64_t by_class[ENG_TENSOR_CLASS_COUNT];
	uint64_t embedding_row; /* the embedding's share of weights */
	int kv_elem_bytes;
	uint64_t kv_read;  /* K and V of positions 0..pos, every layer */
	uint64_t kv_write; /* K and V of position pos, every layer */
	uint64_t total;    /* weights + kv_read + kv_write */
	/* Every vector one layer produces at batch 1 (residual, normed input, each projection's
	 * output, attention output), at act_elem_bytes each; the attention scores (heads x
	 * (pos + 1)) are given apart because they grow with the context. */
	int act_elem_bytes;
	uint64_t activation_elems_layer;
	uint64_t activation_layer;
	uint64_t attention_scores;
	double flops;       /* per token at pos */
	uint64_t llc;       /* the LLC size used for the floor */
	char llc_statement[256];
	uint64_t floor;     /* weights minus what can stay LLC-resident: max(weights - llc, 0) */
	bool far_larger_than_llc; /* weights >= 4 x llc. Streaming the weights in the same order
				   * every token, an LRU cache keeps none of them once they exceed
				   * it; the factor 4 leaves room for replacement policies that
				   * protect part of a cyclic stream, which the floor's "minus the
				   * LLC" already credits in full */
};

/* Fills *out for table t. -EINVAL when the table has no layers or a negative position. */
int mw_analytic_compute(const struct eng_tensor_table *t, const struct mw_analytic_options *o,
			struct mw_analytic *out);

/* Batched decode (issue 17): one step of n sequences reads every weight once for all n
 * tokens, except the embedding, one row per token (as the engine counts it: engine.h,
 * eng_session_step_seqs); each sequence reads and writes its own KV cache. Per generated
 * token: weights (weights - embedding_row) / n + embedding_row, KV kv_read + kv_write (not
 * shared), FLOPs the same per token, n times per step. */
struct mw_analytic_batch {
	double n;             /* tokens per pass: a batch's N, or speculation's mean yield */
	double weight_bytes;  /* per generated token */
	double kv_bytes;      /* per generated token */
	double bytes;         /* per generated token: the two above */
	double step_bytes;    /* one step: n tokens */
	double step_flops;    /* one step: n x flops */
};
void mw_analytic_batch(const struct mw_analytic *a, double n, struct mw_analytic_batch *out);
/* Rescales a to per generated token when each pass over the weights yields n tokens (a batch
 * of n, or speculation's mean yield): weights, total and floor as mw_analytic_batch shares
 * them; KV and FLOPs stay per token. */
void mw_analytic_per_pass(struct mw_analytic *a, double n);

/* Prompt-lookup speculation with k draft tokens, each accepted with probability acc
 * independently of the others (Leviathan, Kalman and Matias 2023, eq. 1): a verification pass
 * yields (1 - acc^(k+1)) / (1 - acc) tokens on average (k + 1 at acc = 1) and reads every
 * weight once, the embedding and the KV cache once per token it runs (k + 1). Returns the
 * predicted bytes per generated token; *tokens_per_pass (may be NULL) the expected yield. */
double mw_analytic_spec_bytes(const struct mw_analytic *a, int k, double acc,
			      double *tokens_per_pass);

/* Bytes of a KV cache holding `positions` positions: K and V, every layer, kv_heads x
 * head_dim elements of elem_bytes each. */
uint64_t mw_analytic_kv_bytes(int n_layers, int n_kv_heads, int head_dim, int elem_bytes,
			      uint64_t positions);

#endif
