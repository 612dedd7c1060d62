/* tests/lib/ref_forward.h: an independent reference forward pass for the engine's tests
 * (issue 44), in double precision, written from the models' definitions and not from the
 * engine's code: it includes no engine header and calls no engine function.
 *
 * What it reads, by its own parsers (ref_model.c): a GGUF file (the format's header, key-value
 * and tensor-info sections, general.alignment), with tensors dequantized by the ggml block
 * layouts' definitions (ref_quant.c); and a llama2.c checkpoint (legacy or "ak42" version 1,
 * after karpathy/llama2.c's export.py). What it runs (ref_forward.c):
 *  - llama (Touvron et al. 2023; llama2.c's run.c): RMSNorm, RoPE on adjacent pairs
 *    (llama.cpp's rope type NORM for GGUF llama), grouped-query attention with query head h
 *    reading KV head h / (n_heads / n_kv_heads), a gated FFN act(gate x) * (up x) with SiLU,
 *    ReLU or ReLU^2 (memwall's llama.feed_forward_activation key, llama2.c header byte 37);
 *  - falcon (Almazrouei et al. 2023, the 7B layout llama.cpp converts): one LayerNorm with
 *    bias feeding attention and the MLP in parallel, fused QKV rows q | k | v, RoPE on the
 *    halves of each head (rope type NEOX), multi-query attention, GELU MLP;
 *  - a canonical + delta layer (memwall's format: "canonical.K.weight" plus "blk.N.K.delta"
 *    standing for blk.N.K.weight) as the sum of the two matrices.
 *
 * Beside every value it carries the spread of what a float32 engine that follows llama.cpp's
 * CPU numerics computes for it (ref_forward.c's opening comment derives it): each logit comes
 * with the standard deviation sigma of engine - reference that the engine's roundings give.
 * A test allows REF_SIGMAS of them and fails where a logit lies further out. */
#ifndef MEMWALL_TEST_REF_FORWARD_H
#define MEMWALL_TEST_REF_FORWARD_H

#include <stdbool.h>
#include <stddef.h>

struct ref_model;
struct ref_state;

enum ref_act { REF_ACT_SILU, REF_ACT_RELU, REF_ACT_RELU2, REF_ACT_GELU };

struct ref_info {
	char arch[16];      /* "llama" or "falcon" */
	int dim, hidden, layers, heads, kv_heads, head_dim, n_rot, vocab, seq_len;
	double eps, rope_base;
	enum ref_act act;
	bool neox;          /* RoPE on (j, j + n_rot / 2) rather than (2j, 2j + 1) */
	bool tied;          /* the classifier is the embedding table */
	bool gguf;          /* else llama2.c */
	int delta_layers;   /* layers whose matrices are canonical + delta */
	char types[128];    /* the weight types met, e.g. "f32 q4_K q6_K" */
};

/* The numerics the spread allows for: what the engine's session rounds besides float32
 * arithmetic and its matrices' activation quantization (which follows each weight type). */
struct ref_numerics {
	bool kv_f16; /* keys and values stored as f16, and (llama.cpp's path for an f16 cache)
		      * the query and the softmax weights rounded to f16 before they meet them */
};

/* The tolerance on a logit, in its sigmas. Eight: sigma comes from a first-order model that
 * treats the roundings as independent, so the real spread may be somewhat wider (twice as
 * wide still leaves 4 sigma, which a Gaussian exceeds once in 16,000 draws); measured on
 * test_reference.c's models, the largest |d| is 3.2 sigma, on random weights, where the
 * largest of that many Gaussians would be about 4; and each deliberate break of issue 44
 * moved some model's logits by hundreds of sigmas or more. */
#define REF_SIGMAS 8.0
/* And an absolute floor: float flushes to zero what double keeps below its range (an
 * attention weight of e^-300 times a value), 1e-30 is far above any such residue and far
 * below any difference a test looks for. */
#define REF_FLOOR 1e-30

/* The most a logit of standard deviation sigma may differ from the reference's. */
static inline double ref_tolerance(double sigma)
{
	return REF_SIGMAS * sigma + REF_FLOOR;
}

/* Reads the model at path. 0, or -1 with err (errlen bytes) saying what was wrong where. On
 * success *out is new, freed with ref_model_close. */
int ref_model_open(struct ref_model **out, const char *path, char *err, size_t errlen);
void ref_model_close(struct ref_model *m);
/* Borrowed; valid until ref_model_close. */
const struct ref_info *ref_model_info(const struct ref_model *m);

/* A sequence over m (which must outlive it) of up to ctx positions. NULL when out of memory. */
struct ref_state *ref_state_new(const struct ref_model *m, int ctx, const struct ref_numerics *num);
void ref_state_free(struct ref_state *s);
/* Runs token at position pos (positions 0 .. pos - 1 must have run; pos may go back to
 * recompute from there). Fills logits and sigma (vocab doubles each): sigma[i] is the
 * standard deviation of an engine's logit i about logits[i]. 0, or -1 for a token or
 * position out of range. */
int ref_step(struct ref_state *s, int token, int pos, double *logits, double *sigma);

#endif
