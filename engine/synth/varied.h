/* engine/synth/varied.h: the "varied" construction of synthetic weights (engine.h,
 * ENG_SYNTH_VARIED). Internal: synth.c and synth_gguf.c write random rows as before, then
 * eng_synth_varied_row overwrites a few of them.
 *
 * Why: the legacy construction's greedy output repeats one token, so an engine that got
 * attention wrong gives the same ids (issue 26). Here the next token is a function of the
 * current token and the previous one, read through layer 0's attention, with a margin that
 * quantization cannot flip.
 *
 * The residual stream's first 1 + 4K channels (K <= 32) carry a code:
 *   channel 0           a constant (the bias channel of synth/synth_sparsity.h, SYNTH_BIAS_CHANNEL)
 *   U_in, V_in (K each) the token's input code: one-hot u(t), v(t) of height S (= 1)
 *   U_out, V_out        the token's output code, only for the K^2 "language" tokens
 *                       id(k) = lo + k * stride, k = u K + v: one-hot u, v of height S
 * Layer 0 has two pointer heads: A (head 0) attends to the previous position, B to the
 * current one. Their queries and keys are constants read from channel 0, set on the eight
 * highest-frequency RoPE pairs so that score(p, s) = A_amp sum_j cos((s - p + delta) theta_j),
 * which peaks at s = p - delta (delta 1 for A, 0 for B); A_amp times the worst gap to any
 * other position within 4096 is 30 (at the norm's estimated scale; a token's own scale moves
 * it by tens of percent), so attention off the target weighs about e^-30 times the context
 * length. A's value is U_in (one-hot), B's is V_in; wo writes
 * them, permuted by two seeded K-cycles pi1, pi2, into U_out and V_out with height P (about
 * 8, in the residual's units). So u_next = pi1(u_prev), v_next = pi2(v_cur): 2K distinct
 * tokens before the pair repeats (64 at K = 32).
 * Every layer's wo and w2 (ffn_down) rows 0, U_out and V_out are zero, so nothing else writes
 * there; the final norm's weight is zero outside U_out and V_out (falcon: its bias zero), and
 * the classifier (tied or not) holds the output codes. Language token j's logit is then
 * c (h[U_out + u_j] + h[V_out + v_j]) with c > 0 the same for all j, the next token gets
 * c (2P + at most S), any other at most c (P + S + leak), and the rest of the network only
 * changes c. Margin: c (P - S - 2 leak), over 40% of the top logit.
 * Quantization: every row set here holds one nonzero value (or a one-hot code of equal
 * heights), which q4_0 (d = max / -8, q = 0 for the max) and q8_0 reproduce to the fp16
 * rounding of d (2^-11), and zero rows stay exactly zero in every ggml type; the random
 * rows change only c. Even q4_0's worst-case error d/2 = max/16 (6.25%) on every factor of
 * the path (embedding, value, wo, classifier: (1.0625)^4 < 1.28) leaves 2P / 1.28 > P 1.28
 * + S for P = 8.
 */
#ifndef MEMWALL_SYNTH_VARIED_H
#define MEMWALL_SYNTH_VARIED_H

#include <stdbool.h>
#include <stdint.h>

struct eng_arch_desc;

#define VARIED_MAX_K 32

enum varied_role {
	VR_NONE,
	VR_EMBD,      /* token embedding row t */
	VR_CLS,       /* classifier row t (untied) */
	VR_NORM,      /* attention or FFN norm weight (one row of dim) */
	VR_NORM_BIAS, /* falcon's attn_norm bias */
	VR_OUT_NORM,  /* the final norm's weight */
	VR_OUT_BIAS,  /* falcon's final norm bias */
	VR_WQ,        /* (n_heads hs, dim) */
	VR_WK,        /* (n_kv hs, dim) */
	VR_WV,        /* (n_kv hs, dim) */
	VR_WQKV,      /* falcon: rows q | k | v */
	VR_WO,        /* (dim, n_heads hs) */
	VR_W2,        /* (dim, hidden) */
};

struct synth_varied {
	int dim, hs, n_heads, n_kv, vocab;
	bool neox;                /* falcon's RoPE pairs (j, j + hs/2) */
	bool layer_norm;          /* falcon: channel 0 from the norm's bias, weight 0 */
	int K;
	int head_a, head_b, kv_a, kv_b, voff_a, voff_b;
	int u_in, v_in, u_out, v_out;
	int pairs;                /* RoPE pairs the pointer heads use */
	float wq, wk;             /* query and key weights on channel 0, per pair */
	float theta[8];           /* the pairs' frequencies */
	float gamma;              /* wo's pointer weight: P / (normalized code height) */
	int lo, stride;           /* language ids */
	uint8_t pi1[VARIED_MAX_K], pi2[VARIED_MAX_K];
	uint64_t seed;
};

/* Sets v up for a model of this shape of architecture arch (its norm and RoPE kinds, arch.h);
 * -EINVAL (with why) when the shape cannot carry it.
 * matrix_std: the random matrices' standard deviation (the residual's scale). */
int eng_synth_varied_init(struct synth_varied *v, int dim, int n_heads, int n_kv, int vocab,
		      const struct eng_arch_desc *arch, float matrix_std, uint64_t seed, char *why,
		      size_t why_len);
/* Overwrites what the construction fixes in columns [c0, c0 + n) of row r of a tensor of
 * this role in layer `layer` (-1 outside the layers); seg holds those columns. */
void eng_synth_varied_row(const struct synth_varied *v, enum varied_role role, int layer,
		      uint64_t r, float *seg, uint64_t c0, uint64_t n);
/* The role of a GGUF tensor name. */
enum varied_role eng_synth_varied_role(const char *gguf_name);

#endif
