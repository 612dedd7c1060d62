/* tests/lib/ref_forward.c: the reference forward pass (ref_forward.h), in double, with the
 * spread of what a float32 engine may show beside each value.
 *
 * The model, from its definitions (not from memwall's engine):
 *   llama (llama2.c's run.c `forward`; Touvron et al. 2023): per layer
 *     h = RMSNorm(x) g_att, RMSNorm(x) = x / sqrt(mean(x^2) + eps) (Zhang and Sennrich 2019);
 *     q = Wq h, k = Wk h, v = Wv h; RoPE (Su et al. 2021) at the token's position p: each pair
 *     (2j, 2j + 1) of a head's first n_rot dimensions rotated by p * base^(-2j / n_rot);
 *     head i attends with KV head i / (n_heads / n_kv_heads) (Ainslie et al. 2023's grouping,
 *     run.c's kv_mul): scores q.k_t / sqrt(head_dim) over positions t <= p, softmax, the
 *     values summed by those weights; x += Wo o; h = RMSNorm(x) g_ffn;
 *     x += Wdown (act(Wgate h) * Wup h), act SiLU (x sigma(x)), ReLU or ReLU^2.
 *     Then RMSNorm(x) g_out and the classifier.
 *   falcon (the 7B's parallel block, as llama.cpp's falcon graph runs it): h = LayerNorm(x)
 *     (Ba et al. 2016: (x - mean) / sqrt(var + eps) g + b); Wqkv h's rows are q | k | v; RoPE
 *     in NeoX's form (pairs (j, j + n_rot / 2)); attention as above (one KV head for the 7B);
 *     x = x + Wo o + Wdown GELU(Wup h), GELU in its tanh form (Hendrycks and Gimpel 2016,
 *     0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), the form ggml computes). Then
 *     LayerNorm(x) with the output norm's weight and bias, and the classifier.
 *
 * The spread. An engine that follows llama.cpp's CPU numerics in float32 computes from the
 * same stored weights a v~ for every value v here; the differences come from roundings, each
 * modelled as an error uniform over its rounding step, zero-mean and independent of the others
 * (a step h: variance h^2 / 12), and propagated to first order through every operation below,
 * variances adding. Each logit's standard deviation sigma is what a test's tolerance is built
 * from (ref_forward.h, REF_SIGMAS). The roundings (u = 2^-24, float32's unit roundoff):
 *  - activation rounding, the largest by far: before y = W x the engine quantizes its input to
 *    W's vec_dot_type (ref_quant.c, ref_act_var): q8_0 for q4_0 q5_0 q8_0 (steps of block
 *    absmax / 127, and the block's scale rounded to f16), q8_K for the K-quants (steps of
 *    absmax / 127 over blocks of 256), f16 for f16 weights (steps of 2^-10 |x|). The weights
 *    themselves are exact in both: the same stored blocks, dequantized exactly here;
 *  - the engine's f16 KV cache (struct ref_numerics): keys and values rounded to f16, and, as
 *    llama.cpp's CPU path does, the query and the softmax weights too;
 *  - falcon's GELU: ggml's table, input and output rounded to f16;
 *  - float arithmetic: a dot product of n terms summed in any order lies within (n + 4) u of
 *    the sum of its terms' magnitudes (Higham, Accuracy and Stability of Numerical
 *    Algorithms, 2nd ed., section 3.1: |x.y - fl(x.y)| <= gamma_n |x|.|y|, gamma_n about
 *    n u; the 4 for the block scales' products), taken as a uniform
 *    error over that whole range, which is wide (summation errors grow as sqrt(n) in
 *    practice); an elementwise operation within a few u of its result; RoPE's angle p theta_j,
 *    computed in float, within p theta_j (ln base + 5) u.
 * Through each operation, to first order:
 *  - y = W x: var(y_r) = sum_i w_ri^2 (var(x_i) + var of x_i's rounding) + the blocks' common
 *    scale errors (sum over blocks of (the block's share of y_r)^2 times their relative
 *    variance) + the common modes of a norm's output (below);
 *  - a norm's output error has an independent part, g_i d(x_i) / r, and parts every element
 *    shares: RMSNorm's d(r) / r (direction: the output itself, variance sum x^2 var(x) /
 *    (n r^2)^2); LayerNorm's d(mean) (direction g / s) and d(s) / s (direction the output less
 *    its bias). The next matrix maps each shared part along W times its direction, so they are
 *    added as (W dir)_r^2 var, not element by element;
 *  - attention: with v-bar = sum_t p_t v_t, the output o_j = sum_t p_t v_tj moves by
 *    sum_t p_t (v_tj - v-bar_j) d(s_t) + sum_t p_t d(v_tj) (the softmax's derivative), and
 *    d(s_t) = scale (q . d(k_t) + k_t . d(q)): the query's error enters every position's
 *    score, so its terms are summed over positions before squaring. The heads of a group
 *    read the same keys and values, so their errors from those are correlated, and Wo adds
 *    the heads: the keys' and values' terms are counted group-size times (Cauchy-Schwarz:
 *    var(sum of g terms) <= g x the sum of their variances);
 *  - SiLU, GELU, ReLU^2 by their derivatives at x; ReLU and ReLU^2 near their kink (|x| within
 *    4 sigma of 0) as the worse side; products a b as a^2 var(b) + b^2 var(a) + var(a) var(b).
 * A bound in the strict sense (every rounding at its worst, interval arithmetic) was tried
 * first: through two layers it grows past the values themselves (the worst case adds n errors
 * where their sum grows as sqrt(n)), so it could not tell a broken engine from a working one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_impl.h"

#define U REF_U32

/* A part of a norm's output error that every element shares: along dir, variance var. */
struct mode {
	const double *dir;
	double var;
};

struct ref_state {
	const struct ref_model *m;
	struct ref_numerics num;
	int ctx, q_dim, kv_dim, rows;
	/* (layers, ctx, kv_dim): the keys and values as the cache holds them, their variances */
	double *kc, *vc, *vkc, *vvc;
	double *x, *vx, *xn, *vxn, *y, *vy, *y2, *vy2;   /* (dim) */
	double *dir0, *dir1;                           /* (dim) a norm's shared directions */
	struct mode mode[2];                           /* the last norm's shared parts */
	double *qkv, *vqkv;                            /* (q_dim + 2 kv_dim) */
	double *o, *vo;                                /* (q_dim) */
	double *g, *vg, *u, *vu;                       /* (hidden) */
	double *p, *s, *vs, *ak;                       /* (ctx) */
	double *c;                                     /* (head_dim) */
	double *var;                                   /* (max(dim, hidden, q_dim)) */
	double *md;                                    /* (2, rows) */
};

static double sq(double v)
{
	return v * v;
}

/* y = W x and var(y), x's error being var(x) elementwise plus the modes (NULL: none). */
static void matvec(struct ref_state *st, const struct ref_mat *W, const double *x,
		   const double *vx, const struct mode *modes, double *y, double *vy)
{
	int n = W->cols, nm = modes ? 2 : 0;
	for (int r = 0; r < W->rows; r++)
		y[r] = vy[r] = st->md[r] = st->md[st->rows + r] = 0;
	for (int k = 0; k < W->n_parts; k++) {
		const struct ref_part *pt = &W->part[k];
		double brv;
		int block;
		ref_act_var(ref_act_type(pt->type), x, n, st->var, &brv, &block);
		for (int r = 0; r < W->rows; r++) {
			const double *w = pt->w + (size_t)r * (size_t)n;
			const float *mg = pt->mag + (size_t)r * (size_t)n;
			double s = 0, v = 0, f = 0, blocks = 0;
			for (int b = 0; b < n; b += block) {
				double part = 0;
				for (int i = b; i < b + block; i++) {
					double in = vx[i] + st->var[i];
					part += w[i] * x[i];
					v += w[i] * w[i] * in;
					f += (double)mg[i] * (fabs(x[i]) + sqrt(in));
				}
				s += part;
				blocks += part * part;
			}
			for (int m = 0; m < nm; m++) {
				double d = 0;
				for (int i = 0; i < n; i++)
					d += w[i] * modes[m].dir[i];
				st->md[m * st->rows + r] += d;
			}
			y[r] += s;
			vy[r] += v + brv * blocks + sq((n + 4) * U * f) / 3;
		}
	}
	for (int r = 0; r < W->rows; r++) {
		for (int m = 0; m < nm; m++)
			vy[r] += sq(st->md[m * st->rows + r]) * modes[m].var;
		if (W->n_parts > 1)
			vy[r] += sq(U * y[r]) / 3; /* the two passes added */
	}
}

/* RMSNorm of x into xn, its shared part d(r) / r along the output (mode 0). */
static void rmsnorm(struct ref_state *st, const double *g)
{
	int n = st->m->info.dim;
	double ss = 0, sv = 0;
	for (int i = 0; i < n; i++)
		ss += st->x[i] * st->x[i];
	double r = sqrt(ss / n + st->m->info.eps);
	for (int i = 0; i < n; i++) {
		st->xn[i] = g[i] * st->x[i] / r;
		st->vxn[i] = sq(g[i] / r) * st->vx[i] + sq(8 * U * st->xn[i]) / 3;
		sv += st->x[i] * st->x[i] * st->vx[i];
		st->dir0[i] = st->xn[i];
	}
	st->mode[0] = (struct mode){ st->dir0, sv / sq(n * r * r) };
	st->mode[1] = (struct mode){ st->dir1, 0 };
	memset(st->dir1, 0, (size_t)n * sizeof(double));
}

/* LayerNorm of x into xn: shared parts d(mean) along g / s and d(s) / s along g c / s. */
static void layernorm(struct ref_state *st, const double *g, const double *b)
{
	int n = st->m->info.dim;
	double mu = 0, var = 0, smean = 0, sdev = 0;
	for (int i = 0; i < n; i++)
		mu += st->x[i];
	mu /= n;
	for (int i = 0; i < n; i++) {
		double c = st->x[i] - mu;
		var += c * c;
		smean += st->vx[i];
		sdev += c * c * st->vx[i];
	}
	double s = sqrt(var / n + st->m->info.eps);
	for (int i = 0; i < n; i++) {
		double c = st->x[i] - mu, y = g[i] * c / s;
		st->xn[i] = y + b[i];
		st->vxn[i] = sq(g[i] / s) * st->vx[i] + sq(10 * U * (fabs(y) + fabs(b[i]))) / 3 +
			     sq(g[i] * U * (fabs(st->x[i]) + fabs(mu)) / s) / 3;
		st->dir0[i] = g[i] / s;
		st->dir1[i] = y;
	}
	st->mode[0] = (struct mode){ st->dir0, smean / sq((double)n) };
	st->mode[1] = (struct mode){ st->dir1, sdev / sq(n * s * s) };
}

static void norm(struct ref_state *st, const double *g, const double *b)
{
	if (st->m->info.neox) /* falcon */
		layernorm(st, g, b);
	else
		rmsnorm(st, g);
}

/* RoPE on n_heads heads of v (and their variances) at position pos. */
static void rope(const struct ref_info *in, double *v, double *vv, int n_heads, int pos)
{
	int half = in->n_rot / 2;
	for (int h = 0; h < n_heads; h++) {
		double *hv = v + (size_t)h * (size_t)in->head_dim;
		double *hw = vv + (size_t)h * (size_t)in->head_dim;
		for (int j = 0; j < half; j++) {
			double th = pos * pow(in->rope_base, -2.0 * j / in->n_rot);
			double vth = sq(th * (log(in->rope_base) + 5) * U + 2 * U) / 3;
			int i0 = in->neox ? j : 2 * j, i1 = in->neox ? j + half : 2 * j + 1;
			double a = hv[i0], b = hv[i1], va = hw[i0], vb = hw[i1];
			double c = cos(th), s = sin(th);
			hv[i0] = a * c - b * s;
			hv[i1] = a * s + b * c;
			hw[i0] = c * c * va + s * s * vb + (a * a + b * b) * vth +
				 sq(3 * U * (fabs(a * c) + fabs(b * s))) / 3;
			hw[i1] = s * s * va + c * c * vb + (a * a + b * b) * vth +
				 sq(3 * U * (fabs(a * s) + fabs(b * c))) / 3;
		}
	}
}

/* The variance of what an f16 cache (or f16 query) holds of v: f16's step 2^-10 |v|. */
static double f16_var(const struct ref_state *st, double v)
{
	return st->num.kv_f16 ? sq(REF_U16 * fabs(v) + REF_SUB16) / 3 : 0;
}

/* Head h at position pos of layer l (its q in qkv): its part of o and vo. */
static void attend_head(struct ref_state *st, int l, int h, int pos)
{
	const struct ref_info *in = &st->m->info;
	int hd = in->head_dim, group = in->heads / in->kv_heads, g = h / group;
	size_t row0 = (size_t)l * (size_t)st->ctx * (size_t)st->kv_dim + (size_t)g * (size_t)hd;
	size_t ld = (size_t)st->kv_dim;
	const double *q = st->qkv + (size_t)h * (size_t)hd, *vq = st->vqkv + (size_t)h * (size_t)hd;
	double scale = 1.0 / sqrt((double)hd), smax = -INFINITY, z = 0;
	for (int t = 0; t <= pos; t++) {
		const double *k = st->kc + row0 + (size_t)t * ld, *vk = st->vkc + row0 + (size_t)t * ld;
		double s = 0, a = 0, mag = 0;
		for (int j = 0; j < hd; j++) {
			s += q[j] * k[j];
			a += q[j] * q[j] * vk[j];
			mag += fabs(q[j]) * fabs(k[j]);
		}
		st->s[t] = s * scale;
		st->ak[t] = scale * scale * a;
		st->vs[t] = sq((hd + 4) * U * mag * scale) / 3 + sq(U * st->s[t]) / 3;
		smax = fmax(smax, st->s[t]);
	}
	for (int t = 0; t <= pos; t++)
		z += st->p[t] = exp(st->s[t] - smax);
	for (int t = 0; t <= pos; t++)
		st->p[t] /= z;
	/* the weights' own rounding: f16 (an f16 cache), and the float softmax's few u */
	double rho = (st->num.kv_f16 ? REF_U16 * REF_U16 / 3 : 0) + sq((pos + 8) * U) / 3;
	double *o = st->o + (size_t)h * (size_t)hd, *vo = st->vo + (size_t)h * (size_t)hd;
	for (int j = 0; j < hd; j++) {
		double vbar = 0, var = 0, mag = 0;
		for (int t = 0; t <= pos; t++)
			vbar += st->p[t] * st->vc[row0 + (size_t)t * ld + (size_t)j];
		for (int i = 0; i < hd; i++)
			st->c[i] = 0;
		for (int t = 0; t <= pos; t++) {
			size_t at = row0 + (size_t)t * ld;
			double v = st->vc[at + (size_t)j], dv = st->p[t] * (v - vbar);
			var += dv * dv * (group * st->ak[t] + st->vs[t]) +
			       group * sq(st->p[t]) * st->vvc[at + (size_t)j] + sq(st->p[t] * v) * rho;
			for (int i = 0; i < hd; i++)
				st->c[i] += dv * st->kc[at + (size_t)i];
			mag += st->p[t] * fabs(v);
		}
		for (int i = 0; i < hd; i++)
			var += scale * scale * sq(st->c[i]) * (vq[i] + f16_var(st, q[i]));
		o[j] = vbar;
		vo[j] = var + sq((pos + 4) * U * mag) / 3;
	}
}

/* q | k | v in qkv: RoPE on q and k, k and v into the cache at pos, every head into o. */
static void attention(struct ref_state *st, int l, int pos)
{
	const struct ref_info *in = &st->m->info;
	double *k = st->qkv + st->q_dim, *vk = st->vqkv + st->q_dim;
	rope(in, st->qkv, st->vqkv, in->heads, pos);
	rope(in, k, vk, in->kv_heads, pos);
	size_t row = ((size_t)l * (size_t)st->ctx + (size_t)pos) * (size_t)st->kv_dim;
	for (int i = 0; i < st->kv_dim; i++) {
		double v = k[st->kv_dim + i];
		st->kc[row + (size_t)i] = k[i];
		st->vkc[row + (size_t)i] = vk[i] + f16_var(st, k[i]);
		st->vc[row + (size_t)i] = v;
		st->vvc[row + (size_t)i] = vk[st->kv_dim + i] + f16_var(st, v);
	}
	for (int h = 0; h < in->heads; h++)
		attend_head(st, l, h, pos);
}

/* x += y (and y2 when not NULL, added to y first, as falcon's graph adds them). */
static void residual(struct ref_state *st, const double *y, const double *vy, const double *y2,
		    const double *vy2)
{
	for (int i = 0; i < st->m->info.dim; i++) {
		double add = y[i] + (y2 ? y2[i] : 0);
		st->x[i] += add;
		st->vx[i] += vy[i] + (y2 ? vy2[i] + sq(U * add) / 3 : 0) + sq(U * st->x[i]) / 3;
	}
}

#define GELU_K 0.79788456080286535588 /* sqrt(2 / pi) */
#define GELU_A 0.044715

static double gelu(double x)
{
	return 0.5 * x * (1 + tanh(GELU_K * (x + GELU_A * x * x * x)));
}

static double gelu_slope(double x)
{
	double t = tanh(GELU_K * (x + GELU_A * x * x * x));
	return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_K * (1 + 3 * GELU_A * x * x);
}

/* act(x) and its variance from var(x) = vx. */
static double act(enum ref_act a, double x, double vx, double *va)
{
	double y, sd = sqrt(vx);
	bool kink = fabs(x) < 4 * sd; /* the engine's side of 0 may be the other one */
	switch (a) {
	case REF_ACT_RELU:
		y = x > 0 ? x : 0;
		*va = x > 0 || kink ? vx : 0;
		return y;
	case REF_ACT_RELU2:
		y = x > 0 ? x * x : 0;
		*va = (x > 0 ? 4 * x * x * vx : 0) + (kink ? 3 * vx * vx : 0) + sq(U * y) / 3;
		return y;
	case REF_ACT_GELU: {
		/* ggml's table: the input rounded to f16, the result stored as f16 */
		double d = gelu_slope(x);
		y = gelu(x);
		*va = d * d * (vx + sq(REF_U16 * x) / 3) + sq(REF_U16 * y) / 3 + sq(4 * U * y) / 3;
		return y;
	}
	default: {
		double sg = 1 / (1 + exp(-x)), d = sg * (1 + x * (1 - sg));
		y = x * sg;
		*va = d * d * vx + sq(5 * U * y) / 3;
		return y;
	}
	}
}

/* g <- act(g) * u (u NULL: act(g) alone, falcon's MLP), variances included. */
static void activate(struct ref_state *st, const double *u, const double *vu)
{
	const struct ref_info *in = &st->m->info;
	for (int i = 0; i < in->hidden; i++) {
		double va, a = act(in->act, st->g[i], st->vg[i], &va);
		if (u) {
			double h = a * u[i];
			st->vg[i] = a * a * vu[i] + u[i] * u[i] * va + va * vu[i] + sq(U * h) / 3;
			st->g[i] = h;
		} else {
			st->g[i] = a;
			st->vg[i] = va;
		}
	}
}

static void layer_llama(struct ref_state *st, int l, int pos)
{
	const struct ref_layer *L = &st->m->layer[l];
	double *q = st->qkv, *vq = st->vqkv;
	norm(st, L->attn_norm, NULL);
	matvec(st, &L->wq, st->xn, st->vxn, st->mode, q, vq);
	matvec(st, &L->wk, st->xn, st->vxn, st->mode, q + st->q_dim, vq + st->q_dim);
	matvec(st, &L->wv, st->xn, st->vxn, st->mode, q + st->q_dim + st->kv_dim,
	       vq + st->q_dim + st->kv_dim);
	attention(st, l, pos);
	matvec(st, &L->wo, st->o, st->vo, NULL, st->y, st->vy);
	residual(st, st->y, st->vy, NULL, NULL);
	norm(st, L->ffn_norm, NULL);
	matvec(st, &L->gate, st->xn, st->vxn, st->mode, st->g, st->vg);
	matvec(st, &L->up, st->xn, st->vxn, st->mode, st->u, st->vu);
	activate(st, st->u, st->vu);
	matvec(st, &L->down, st->g, st->vg, NULL, st->y, st->vy);
	residual(st, st->y, st->vy, NULL, NULL);
}

static void layer_falcon(struct ref_state *st, int l, int pos)
{
	const struct ref_layer *L = &st->m->layer[l];
	norm(st, L->attn_norm, L->attn_norm_b);
	matvec(st, &L->wqkv, st->xn, st->vxn, st->mode, st->qkv, st->vqkv);
	attention(st, l, pos);
	matvec(st, &L->wo, st->o, st->vo, NULL, st->y, st->vy);
	matvec(st, &L->up, st->xn, st->vxn, st->mode, st->g, st->vg);
	activate(st, NULL, NULL);
	matvec(st, &L->down, st->g, st->vg, NULL, st->y2, st->vy2);
	residual(st, st->y2, st->vy2, st->y, st->vy);
}

int ref_step(struct ref_state *st, int token, int pos, double *logits, double *sigma)
{
	const struct ref_model *m = st->m;
	const struct ref_info *in = &m->info;
	if (token < 0 || token >= in->vocab || pos < 0 || pos >= st->ctx)
		return -1;
	/* The embedding row, exact here; the engine's float dequantization within u of each
	 * term of it. */
	const struct ref_part *e = &m->embd.part[0];
	for (int i = 0; i < in->dim; i++) {
		size_t at = (size_t)token * (size_t)in->dim + (size_t)i;
		st->x[i] = e->w[at];
		st->vx[i] = sq(2 * U * (double)e->mag[at]) / 3;
	}
	for (int l = 0; l < in->layers; l++) {
		if (in->neox)
			layer_falcon(st, l, pos);
		else
			layer_llama(st, l, pos);
	}
	norm(st, m->out_norm, m->out_norm_b);
	matvec(st, &m->output, st->xn, st->vxn, st->mode, logits, sigma);
	for (int i = 0; i < in->vocab; i++)
		sigma[i] = sqrt(sigma[i]);
	return 0;
}

struct ref_state *ref_state_new(const struct ref_model *m, int ctx, const struct ref_numerics *num)
{
	const struct ref_info *in = &m->info;
	struct ref_state *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->m = m;
	st->num = num ? *num : (struct ref_numerics){ 0 };
	st->ctx = ctx;
	st->q_dim = in->heads * in->head_dim;
	st->kv_dim = in->kv_heads * in->head_dim;
	size_t qkv = (size_t)(st->q_dim + 2 * st->kv_dim), dim = (size_t)in->dim;
	size_t hid = (size_t)in->hidden, c = (size_t)ctx, q = (size_t)st->q_dim;
	size_t cache = (size_t)in->layers * c * (size_t)st->kv_dim;
	size_t widest = hid > dim ? hid : dim;
	widest = widest > qkv ? widest : qkv;
	st->rows = (int)(widest > (size_t)in->vocab ? widest : (size_t)in->vocab);
	struct {
		double **p;
		size_t n;
	} bufs[] = {
		{ &st->kc, cache }, { &st->vc, cache }, { &st->vkc, cache }, { &st->vvc, cache },
		{ &st->x, dim }, { &st->vx, dim }, { &st->xn, dim }, { &st->vxn, dim },
		{ &st->y, dim }, { &st->vy, dim }, { &st->y2, dim }, { &st->vy2, dim },
		{ &st->dir0, dim }, { &st->dir1, dim }, { &st->qkv, qkv }, { &st->vqkv, qkv },
		{ &st->o, q }, { &st->vo, q }, { &st->g, hid }, { &st->vg, hid }, { &st->u, hid },
		{ &st->vu, hid }, { &st->p, c }, { &st->s, c }, { &st->vs, c }, { &st->ak, c },
		{ &st->c, (size_t)in->head_dim }, { &st->var, widest },
		{ &st->md, 2 * (size_t)st->rows },
	};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		if (!(*bufs[i].p = calloc(bufs[i].n ? bufs[i].n : 1, sizeof(double)))) {
			ref_state_free(st);
			return NULL;
		}
	return st;
}

void ref_state_free(struct ref_state *st)
{
	if (!st)
		return;
	double *bufs[] = { st->kc, st->vc, st->vkc, st->vvc, st->x, st->vx, st->xn, st->vxn,
			   st->y, st->vy, st->y2, st->vy2, st->dir0, st->dir1, st->qkv, st->vqkv,
			   st->o, st->vo, st->g, st->vg, st->u, st->vu, st->p, st->s, st->vs,
			   st->ak, st->c, st->var, st->md };
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		free(bufs[i]);
	free(st);
}
