/* engine/synth/varied.c: the varied construction's fixed rows (varied.h says what and why). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/arch.h"
#include "rng.h"
#include "synth/synth_sparsity.h"
#include "synth/varied.h"

#define CODE_HEIGHT 1.0f   /* S: the one-hot codes' height in the embedding */
#define POINTER_HEIGHT 8.0 /* P: what the pointer heads write, in the residual's units */
#define LANG_LO 300        /* the first language id: past SPM's 259 and gpt2's 268 specials */
#define SCORE_GAP 30.0     /* softmax logit gap to the nearest other position */
#define CONTEXT_MAX 4096   /* positions the gap is checked over */
#define ROPE_BASE 10000.0

/* A random cycle through all K values, from rng (Sattolo's algorithm). */
static void k_cycle(uint8_t *pi, int K, struct eng_rng *rng)
{
	uint8_t p[VARIED_MAX_K];
	for (int i = 0; i < K; i++)
		p[i] = (uint8_t)i;
	for (int i = K - 1; i > 0; i--) {
		int j = (int)(eng_rng_next(rng) % (uint64_t)i);
		uint8_t t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
	for (int i = 0; i < K; i++)
		pi[p[i]] = p[(i + 1) % K];
}

int eng_synth_varied_init(struct synth_varied *v, int dim, int n_heads, int n_kv, int vocab,
		      const struct eng_arch_desc *arch, float matrix_std, uint64_t seed, char *why,
		      size_t why_len)
{
	bool layer_norm = arch->norm == ENG_NORM_LAYER;
	memset(v, 0, sizeof(*v));
	if (n_heads < 2 || n_kv < 1 || n_heads % n_kv || dim % n_heads) {
		snprintf(why, why_len, "%d heads over %d KV heads: the varied construction needs "
			 "two query heads", n_heads, n_kv);
		return -EINVAL;
	}
	int hs = dim / n_heads, group = n_heads / n_kv;
	bool shared = n_kv == 1; /* both pointer heads read one KV head */
	*v = (struct synth_varied){ .dim = dim, .hs = hs, .n_heads = n_heads, .n_kv = n_kv,
				    .vocab = vocab, .neox = arch->rope == ENG_ROPE_NEOX,
				    .layer_norm = layer_norm,
				    .head_a = 0, .head_b = shared ? 1 : group, .seed = seed };
	v->kv_a = v->head_a / group;
	v->kv_b = v->head_b / group;
	int K = VARIED_MAX_K;
	if (K > (shared ? hs / 2 : hs))
		K = shared ? hs / 2 : hs;
	if (K > (dim - 1) / 4)
		K = (dim - 1) / 4;
	while (K > 1 && LANG_LO + K * K > vocab)
		K--;
	if (K < 2) {
		snprintf(why, why_len, "dim %d, head size %d, vocabulary %d: too small for the "
			 "varied construction's codes (give --construction legacy)", dim, hs, vocab);
		return -EINVAL;
	}
	v->K = K;
	v->voff_a = 0;
	v->voff_b = shared ? K : 0;
	v->u_in = 1;
	v->v_in = 1 + K;
	v->u_out = 1 + 2 * K;
	v->v_out = 1 + 3 * K;
	v->lo = LANG_LO;
	v->stride = (vocab - LANG_LO) / (K * K);
	v->pairs = hs / 2 < 8 ? hs / 2 : 8;
	/* The score's worst gap (per unit amplitude) between the target offset and any other
	 * within CONTEXT_MAX, for delta 0 and 1: sum_j 1 - cos((delta - D) theta_j). */
	double gap = 1e30;
	for (int j = 0; j < v->pairs; j++)
		v->theta[j] = (float)pow(ROPE_BASE, -2.0 * j / hs);
	for (int delta = 0; delta <= 1; delta++)
		for (int D = 0; D < CONTEXT_MAX; D++) {
			if (D == delta)
				continue;
			double g = 0;
			for (int j = 0; j < v->pairs; j++)
				g += 1.0 - cos((double)(delta - D) * v->theta[j]);
			gap = g < gap ? g : gap;
		}
	double amp = SCORE_GAP / gap; /* per pair, in softmax logits */
	/* The normalized height of a constant channel and of a code: RMSNorm divides by the
	 * row's rms, about sqrt((C0^2 + 3 S^2 + (dim - 1 - 4K) std^2) / dim) (two input codes,
	 * and two output codes on language tokens: 3 between the two); LayerNorm's bias gives
	 * channel 0 as exactly 1 (falcon's). */
	double rest = (double)(dim - 1 - 4 * K) * matrix_std * matrix_std;
	double rms = sqrt((SYNTH_BIAS_CHANNEL * SYNTH_BIAS_CHANNEL +
			   3.0 * CODE_HEIGHT * CODE_HEIGHT + rest) / dim);
	double x0 = layer_norm ? 1.0 : SYNTH_BIAS_CHANNEL / rms, xs = CODE_HEIGHT / rms;
	/* score = (wq x0)(wk x0) / sqrt(hs) per pair */
	v->wq = v->wk = (float)(sqrt(amp * sqrt((double)hs)) / x0);
	v->gamma = (float)(POINTER_HEIGHT / xs);
	struct eng_rng rng;
	uint64_t mix = seed ^ 0x7661726965640000ull; /* "varied" */
	eng_rng_seed(&rng, eng_splitmix64(&mix));
	k_cycle(v->pi1, K, &rng);
	k_cycle(v->pi2, K, &rng);
	return 0;
}

/* Token t's input code (u, v); true when t is a language token (its output code is the same). */
static bool in_code(const struct synth_varied *v, uint64_t t, int *u, int *w)
{
	int K = v->K;
	if (t >= (uint64_t)v->lo && (t - (uint64_t)v->lo) % (uint64_t)v->stride == 0 &&
	    (t - (uint64_t)v->lo) / (uint64_t)v->stride < (uint64_t)(K * K)) {
		int k = (int)((t - (uint64_t)v->lo) / (uint64_t)v->stride);
		*u = k / K;
		*w = k % K;
		return true;
	}
	uint64_t mix = v->seed ^ (t * 0xd1b54a32d192ed03ull);
	uint64_t h = eng_splitmix64(&mix);
	*u = (int)(h % (uint64_t)K);
	*w = (int)((h / (uint64_t)K) % (uint64_t)K);
	return false;
}

static void put(float *seg, uint64_t c0, uint64_t n, uint64_t col, float val)
{
	if (col >= c0 && col < c0 + n)
		seg[col - c0] = val;
}

/* seg's columns in [from, to) set to val */
static void fill(float *seg, uint64_t c0, uint64_t n, uint64_t from, uint64_t to, float val)
{
	uint64_t a = from > c0 ? from : c0, b = to < c0 + n ? to : c0 + n;
	for (uint64_t c = a; c < b; c++)
		seg[c - c0] = val;
}

/* Which RoPE pair (and which of its two) dimension d of a head is; false outside the pairs
 * the pointer heads use. */
static bool pair_of(const struct synth_varied *v, int d, int *j, int *comp)
{
	if (v->neox) {
		*comp = d >= v->hs / 2;
		*j = d - *comp * (v->hs / 2);
	} else {
		*comp = d & 1;
		*j = d / 2;
	}
	return *j < v->pairs;
}

static void row_q(const struct synth_varied *v, uint64_t r, float *seg, uint64_t c0, uint64_t n)
{
	int head = (int)(r / (uint64_t)v->hs), d = (int)(r % (uint64_t)v->hs), j, comp;
	if (head != v->head_a && head != v->head_b)
		return;
	fill(seg, c0, n, 0, (uint64_t)v->dim, 0.0f);
	if (!pair_of(v, d, &j, &comp))
		return;
	/* q0 = (cos(delta theta), -sin(delta theta)): q.k peaks at s = p - delta */
	double a = (head == v->head_a ? 1.0 : 0.0) * v->theta[j];
	put(seg, c0, n, 0, (float)(v->wq * (comp ? -sin(a) : cos(a))));
}

static void row_k(const struct synth_varied *v, uint64_t r, float *seg, uint64_t c0, uint64_t n)
{
	int kv = (int)(r / (uint64_t)v->hs), d = (int)(r % (uint64_t)v->hs), j, comp;
	if ((kv != v->kv_a && kv != v->kv_b) || !pair_of(v, d, &j, &comp))
		return;
	fill(seg, c0, n, 0, (uint64_t)v->dim, 0.0f);
	if (!comp)
		put(seg, c0, n, 0, v->wk);
}

static void row_v(const struct synth_varied *v, uint64_t r, float *seg, uint64_t c0, uint64_t n)
{
	int kv = (int)(r / (uint64_t)v->hs), d = (int)(r % (uint64_t)v->hs);
	if (kv == v->kv_a && d >= v->voff_a && d < v->voff_a + v->K) {
		fill(seg, c0, n, 0, (uint64_t)v->dim, 0.0f);
		put(seg, c0, n, (uint64_t)(v->u_in + d - v->voff_a), 1.0f);
	} else if (kv == v->kv_b && d >= v->voff_b && d < v->voff_b + v->K) {
		fill(seg, c0, n, 0, (uint64_t)v->dim, 0.0f);
		put(seg, c0, n, (uint64_t)(v->v_in + d - v->voff_b), 1.0f);
	}
}

static int inverse(const uint8_t *pi, int K, int x)
{
	for (int m = 0; m < K; m++)
		if (pi[m] == x)
			return m;
	return 0;
}

void eng_synth_varied_row(const struct synth_varied *v, enum varied_role role, int layer,
		      uint64_t r, float *seg, uint64_t c0, uint64_t n)
{
	uint64_t code_end = (uint64_t)(1 + 4 * v->K), K = (uint64_t)v->K;
	uint64_t uo = (uint64_t)v->u_out, vo = (uint64_t)v->v_out;
	int u, w;
	switch (role) {
	case VR_EMBD:
	case VR_CLS: {
		bool lang = in_code(v, r, &u, &w);
		fill(seg, c0, n, 0, code_end, 0.0f);
		put(seg, c0, n, 0, SYNTH_BIAS_CHANNEL);
		put(seg, c0, n, (uint64_t)(v->u_in + u), CODE_HEIGHT);
		put(seg, c0, n, (uint64_t)(v->v_in + w), CODE_HEIGHT);
		if (lang) {
			put(seg, c0, n, uo + (uint64_t)u, CODE_HEIGHT);
			put(seg, c0, n, vo + (uint64_t)w, CODE_HEIGHT);
		}
		break;
	}
	case VR_NORM:
		fill(seg, c0, n, 0, code_end, 1.0f);
		if (v->layer_norm)
			put(seg, c0, n, 0, 0.0f);
		break;
	case VR_NORM_BIAS:
		fill(seg, c0, n, 0, code_end, 0.0f);
		put(seg, c0, n, 0, 1.0f);
		break;
	case VR_OUT_NORM:
		fill(seg, c0, n, 0, (uint64_t)v->dim, 0.0f);
		fill(seg, c0, n, uo, vo + K, 1.0f);
		break;
	case VR_OUT_BIAS:
		fill(seg, c0, n, 0, (uint64_t)v->dim, 0.0f);
		break;
	case VR_WQ:
		if (layer == 0)
			row_q(v, r, seg, c0, n);
		break;
	case VR_WK:
		if (layer == 0)
			row_k(v, r, seg, c0, n);
		break;
	case VR_WV:
		if (layer == 0)
			row_v(v, r, seg, c0, n);
		break;
	case VR_WQKV: {
		uint64_t q = (uint64_t)v->n_heads * (uint64_t)v->hs;
		uint64_t kv = (uint64_t)v->n_kv * (uint64_t)v->hs;
		if (layer != 0)
			break;
		if (r < q)
			row_q(v, r, seg, c0, n);
		else if (r < q + kv)
			row_k(v, r - q, seg, c0, n);
		else
			row_v(v, r - q - kv, seg, c0, n);
		break;
	}
	case VR_WO:
	case VR_W2:
		if (r != 0 && (r < uo || r >= vo + K))
			break;
		fill(seg, c0, n, 0, c0 + n, 0.0f);
		if (role != VR_WO || layer != 0 || r == 0)
			break;
		if (r < vo) {
			int m = inverse(v->pi1, v->K, (int)(r - uo));
			put(seg, c0, n, (uint64_t)(v->head_a * v->hs + v->voff_a + m), v->gamma);
		} else {
			int m = inverse(v->pi2, v->K, (int)(r - vo));
			put(seg, c0, n, (uint64_t)(v->head_b * v->hs + v->voff_b + m), v->gamma);
		}
		break;
	case VR_NONE:
		break;
	}
}

enum varied_role eng_synth_varied_role(const char *name)
{
	static const struct {
		const char *part;
		enum varied_role role;
	} roles[] = {
		{ "token_embd.weight", VR_EMBD },     { "output.weight", VR_CLS },
		{ "output_norm.weight", VR_OUT_NORM }, { "output_norm.bias", VR_OUT_BIAS },
		{ ".attn_norm.weight", VR_NORM },     { ".attn_norm.bias", VR_NORM_BIAS },
		{ ".ffn_norm.weight", VR_NORM },      { ".attn_q.weight", VR_WQ },
		{ ".attn_k.weight", VR_WK },          { ".attn_v.weight", VR_WV },
		{ ".attn_qkv.weight", VR_WQKV },      { ".attn_output.weight", VR_WO },
		{ ".ffn_down.weight", VR_W2 },
	};
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
		const char *at = strstr(name, roles[i].part);
		if (at && (roles[i].part[0] == '.' || at == name) &&
		    !at[strlen(roles[i].part)])
			return roles[i].role;
	}
	return VR_NONE;
}
