/* engine/model/alias.h: canonical + delta weights (issue 18, AIOS's Model Contract R3). Internal to
 * engine/; gguf_model.c binds them, session.c runs them, synth_alias.c writes them.
 *
 * In a canonical + delta GGUF file the layers first..last (by default the contract's core
 * zone, floor(0.4 L)..floor(0.6 L)) share one canonical per matrix kind,
 * "canonical.<kind>.weight" (e.g. canonical.attn_q.weight), stored once in the model's type,
 * and each of those layers stores only its delta, "blk.N.<kind>.delta", in a more compact
 * type (eng_alias_delta_type); its "blk.N.<kind>.weight" is absent. The layer's weight is
 * W_l = W_c + D_l and its matmul is y = W_c x + D_l x: two passes of the same kernels over
 * one quantized activation when both types share a vec_dot_type (every default pairing
 * below does). Metadata (all memwall's keys):
 *   memwall.canonical_delta.form        "split" (this layout) or "dense" (W_l stored whole,
 *                                       the baseline twin, same floats before quantization)
 *   memwall.canonical_delta.first/last  u32: the layers that share the canonical
 *   memwall.canonical_delta.rel_std     f32: std(D_l) / std(W_c)
 *   memwall.canonical_delta.delta_type  string: the delta's type, or "auto" (per base type)
 */
#ifndef MEMWALL_ALIAS_H
#define MEMWALL_ALIAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "format/gguf.h"
#include "model.h"
#include "shapes.h"

/* The matrices of struct eng_layer a canonical may stand for (wq wk wv wqkv wo gate up down). */
#define ALIAS_KINDS 8

struct eng_alias {
	int first, last;                 /* layers that share the canonicals */
	struct eng_mat canon[ALIAS_KINDS]; /* data NULL for a kind the architecture lacks */
	uint64_t canon_bytes;            /* every canonical once */
	uint64_t delta_bytes;            /* every delta */
	uint64_t reuse_bytes;            /* canonical bytes read more than once per step:
					  * sum over canonicals of bytes x (users - 1) */
	/* (n_layers, ALIAS_KINDS); bound for first..last only. One allocation with the struct,
	 * so that eng_model_close frees it with free() and model.c needs no part of this file. */
	struct eng_mat delta[];
};

/* The kind index of the struct eng_layer field at offset `field`, or -1. */
int eng_alias_kind(size_t field);
/* The delta type for a canonical of type base: f32, f16 -> q8_0; q8_0, q5_0, q4_0 -> q4_0;
 * q5_1 -> q4_1; q4_K -> q2_K; q5_K -> q3_K; q6_K -> q4_K: each shares the base's
 * vec_dot_type, so the delta's pass reuses the quantized activation (f32 and f16 excepted). */
uint32_t eng_alias_delta_type(uint32_t base);
/* "blk.%d.attn_q.weight" -> "canonical.attn_q.weight" and "blk.%d.attn_q.delta". Either
 * output may be NULL; each holds ENG_GGUF_MAX_NAME + 16 bytes. */
void eng_alias_names(const char *layer_fmt, char *canon, char *delta);

/* Reads the canonical + delta metadata of g: with form "split", m->alias is new (owned by m,
 * one allocation that eng_model_close frees) with first/last checked against the layer count; else it stays NULL.
 * Bad metadata is -EINVAL naming the key. */
int eng_alias_open(struct eng_model *m, const struct eng_gguf *g, struct eng_error *err);
/* Layer l's matrices come from a canonical and a delta. */
bool eng_alias_covers(const struct eng_alias *a, int l);
/* The canonical slot and layer l's delta slot of kind k, for binding. */
struct eng_mat *eng_alias_canon_slot(struct eng_alias *a, int k);
struct eng_mat *eng_alias_delta_slot(struct eng_alias *a, int l, int k);
/* Every bound canonical and delta, for repacking: the i-th, NULL past the end. */
struct eng_mat *eng_alias_mat(struct eng_alias *a, int n_layers, size_t i);
/* After binding (and repacking): each covered layer's matrices become views of the canonical
 * with .delta pointing at the layer's delta; the byte sums are set. */
void eng_alias_finish(struct eng_model *m);

/* y[t * ld + r] += d[t * ld + r] for the pass's tokens t < n_tok and rows [a, b). */
void eng_alias_add(float *y, const float *d, size_t ld, int n_tok, int a, int b);

/* ---- Writing them (synth_alias.c, for synth_gguf.c) ----------------------------------------
 * What a synthetic canonical + delta model holds: for the shared layers' matrices, the
 * canonical W_c of kind k (uniform, std 0.02, seeded by (seed, k, row)) and layer l's delta
 * D_l (uniform, std rel_std x 0.02, seeded by (seed, k, l, row)). The split form writes W_c once
 * (in the type the plan gives the first shared layer) and each D_l in the delta type; the
 * dense twin writes W_c + D_l whole in each layer's own type. Both add the same floats, so
 * only quantization tells them apart. Every other tensor is the plain synthetic model's. */
enum alias_role { ALIAS_PLAIN, ALIAS_CANON, ALIAS_DELTA, ALIAS_SUM };

struct alias_out {
	struct eng_plan_tensor t; /* name, type, shape, bytes as written */
	size_t index;             /* the plan tensor it stands for (a plain tensor's seed) */
	enum alias_role role;
	uint64_t kind;            /* the matrix kind's seed: a hash of its name sans layer */
};

/* The tensors to write for plan p under cd (NULL: p's own, all plain). *out is new (free()).
 * -EINVAL naming the tensor for a delta type no row length of it divides. */
int eng_alias_plan(const struct eng_plan *p, const struct eng_canonical_delta *cd,
	       struct alias_out **out, size_t *n, struct eng_error *err);
/* Row r of o (a role other than ALIAS_PLAIN) in floats, before quantization. */
void eng_alias_row(float *row, const struct alias_out *o, uint64_t seed, float rel_std,
	       uint64_t r);

#endif
