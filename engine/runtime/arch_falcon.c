/* engine/runtime/arch_falcon.c: falcon's parallel block (arch.c's falcon row), after
 * llama.cpp's src/models/falcon.cpp: one LayerNorm feeding attention and the MLP side by side,
 * fused QKV, NeoX RoPE, a GELU MLP. Built from forward.c's layer toolkit (internal.h). */

#include "internal.h"

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

/* Falcon: rows [a, b) of the fused QKV matrix, whose rows are already q | k | v. */
static void qkv_falcon(struct eng_session *s, struct worker *w, int l, int a, int b)
{
	eng_layer_mat_rows(s, w, VEC_XN, s->qkv, (size_t)s->qkv_dim, &s->m->layers[l].wqkv,
			   xn_of(s, w), (size_t)s->dim, a, b);
}

/* Falcon's parallel block (llama.cpp's src/models/falcon.cpp): h = LayerNorm(x);
 * x = (down GELU(up h) + wo attn(h)) + x, added in that order as ggml's graph does. */
static void layer_falcon(struct eng_session *s, struct worker *w, int tid, int l)
{
	const struct eng_layer *L = &s->m->layers[l];
	int work = l * WORK_PER_LAYER, a, b;
	size_t dim = (size_t)s->dim, hid = (size_t)s->hidden_dim;
	eng_layer_attention(s, w, tid, l);
	while (eng_layer_take_rows(s, work + WORK_WO, s->dim, &L->wo, &a, &b))
		eng_layer_mat_rows(s, w, VEC_XB, s->y, dim, &L->wo, s->xb, (size_t)s->q_dim, a, b);
	eng_layer_phase_edge(s, tid, ENG_PHASE_ATTENTION, l, ENG_PHASE_FFN, l);

	/* The FFN reads the same normed input as attention: this thread's xn is unchanged. */
	while (eng_layer_take_rows(s, work + WORK_UP, s->hidden_dim, &L->w_up, &a, &b)) {
		eng_layer_mat_rows(s, w, VEC_XN, s->hb, hid, &L->w_up, xn_of(s, w), dim, a, b);
		for (int t = 0; t < s->n_tok; t++)
			for (int r = a; r < b; r++)
				s->hb[(size_t)t * hid + (size_t)r] =
					gelu_f16(s->hb[(size_t)t * hid + (size_t)r]);
	}
	eng_pool_barrier(s->pool, tid);
	eng_layer_ffn_act_hook(s, tid, l);
	if (prep_shared(s)) /* down's input */
		eng_layer_prep_rows(s, w, tid, prep_work(s, l, PREP_HB), VEC_HB, s->hb, hid,
				    s->hidden_dim, NULL, NULL, &L->w_down);
	while (eng_layer_take_rows(s, work + WORK_DOWN, s->dim, &L->w_down, &a, &b)) {
		eng_layer_mat_rows(s, w, VEC_HB, s->y2, dim, &L->w_down, s->hb, hid, a, b);
		for (int t = 0; t < s->n_tok; t++) {
			float *x = s->x + (size_t)t * dim;
			const float *y = s->y + (size_t)t * dim, *y2 = s->y2 + (size_t)t * dim;
			for (int r = a; r < b; r++)
				x[r] = (y2[r] + y[r]) + x[r];
		}
	}
}

/* Fills the GELU table once per process. */
static void falcon_init(void)
{
	pthread_once(&gelu_once, gelu_table_fill);
}

const struct arch_ops eng_arch_falcon_ops = {
	.qkv = qkv_falcon,
	.layer = layer_falcon,
	.init = falcon_init,
};
