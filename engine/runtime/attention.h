/* engine/runtime/attention.h: block-streaming attention (issue 18 R2), engine-internal. One token's
 * heads attend over one sequence's layer of the KV cache in blocks of positions with an online
 * softmax (a running maximum and sum per head, Milakov & Gimelshein 2018, "Online normalizer
 * calculation for softmax"; the per-block form is FlashAttention's, Dao et al. 2022, Alg. 1):
 * the scores of all positions are never stored (the naive path writes and rereads n_heads x
 * context floats), and the heads that share a KV head (GQA, MQA: falcon has one) read each
 * block's keys and values once for all of them. */
#ifndef MEMWALL_ENGINE_ATTENTION_H
#define MEMWALL_ENGINE_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "quants.h"

/* What a blocked attention call reads. The cache rows are (n_pos, kv_dim), position 0 of the
 * sequence's layer first; head h reads KV head h / kv_mul. */
struct attn_job {
	const void *keys, *values; /* borrowed: the session's cache */
	int n_pos;                 /* positions 0 .. n_pos - 1 */
	int head_size, kv_dim, kv_mul;
	int block;                 /* positions per block (eng_attn_block_positions) */
	float scale;               /* 1 / sqrt(head_size) */
	float *scores;             /* (ATTN_HEAD_GROUP, block) the caller's scratch */
};

/* Positions per block for a cache of elem-byte elements: one KV head's keys and values of a
 * block take ATTN_BLOCK_BYTES (16 KiB, half a 32 KiB L1d), clamped to [16, 256] and to
 * ctx_len. The block is read row by row (each position's slices of all the call's heads
 * side by side, one forward stream); its rows are read twice, for the scores and for the
 * values, the second time from L1 (one KV head, MQA) or L2 (several: stories15M's 6 heads of
 * 48 in f16 take 196 KiB a block), and the block's scores, at most ATTN_HEAD_GROUP x 256
 * floats, stay in L1. */
#define ATTN_BLOCK_BYTES 16384
/* Heads run together at most (their running maxima and sums live on the stack). */
#define ATTN_HEAD_GROUP 32
int eng_attn_block_positions(int head_size, size_t elem, int ctx_len);

/* Heads [h0, h1) of an f32 cache: q and out are the token's whole rows (n_heads * head_size
 * floats; out's heads [h0, h1) are overwritten). */
void eng_attn_blocked_f32(const struct krn_ops *ops, const struct attn_job *j, const float *q,
		      float *out, int h0, int h1);
/* Heads [h0, h1) of an f16 cache: q16 holds heads h0 .. h1 - 1 already rounded to f16 (the
 * scores are f16 dot products, as llama.cpp's); the probabilities weight the values unrounded,
 * in f32 (llama.cpp's non-flash path rounds them to f16 first: the naive path does). */
void eng_attn_blocked_f16(const struct krn_quant_ops *qops, const struct attn_job *j,
		      const uint16_t *q16, float *out, int h0, int h1);

#endif
