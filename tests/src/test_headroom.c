/* tests/src/test_headroom.c: the Model Contract checks of `memwall headroom`: R2 and R4 against
 * worked examples, R1 and R3 on the real stories260K weights (skipped when absent) checked
 * against a forward pass and a cosine computed here, independently, and the verb itself. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analytic.h"
#include "headroom.h"
#include "machine.h"
#include "run.h"
#include "test.h"
#include "record.h"

/* The engine's built-in description of Falcon-7B Q4_K_M (no file): its tensor table. */
static struct eng_tensor_table *falcon_shape(void)
{
	struct eng_tensor_table *t = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	T_EQ_INT(eng_tensors_from_shape("falcon-7b q4_k_m", &t, &err), 0);
	return t;
}

/* R2: Falcon-7B's multi-query attention keeps one K and one V head of 64 per layer:
 * 2 x 32 layers x 64 x 2 B (f16) x 4096 positions = 32 MiB, under the 64 MiB limit.
 * R4: one Falcon-7B layer produces x, normed x, qkv (4544 + 2 x 64), the attention output
 * (71 x 64), attn_output's and ffn_down's outputs (4544 each) and ffn_up's (18176):
 * 45568 values, 182,272 B in f32 (under 200 KB), 91,136 B in f16. */
static void test_r2_r4_falcon(void)
{
	struct eng_tensor_table *t = falcon_shape();
	if (!t)
		return;
	T_EQ_U64(mw_analytic_kv_bytes(t->info.n_layers, t->info.n_kv_heads, t->head_dim, 2, 4096),
		 32u << 20);
	struct mw_analytic a;
	struct mw_analytic_options o = { .pos = 0 };
	T_EQ_INT(mw_analytic_compute(t, &o, &a), 0);
	T_EQ_INT(a.kv_elem_bytes, 2); /* GGUF: llama.cpp's f16 cache */
	T_EQ_U64(a.activation_elems_layer, 45568u);
	T_EQ_U64(a.activation_layer, 182272u);
	o.act_elem_bytes = 2;
	T_EQ_INT(mw_analytic_compute(t, &o, &a), 0);
	T_EQ_U64(a.activation_layer, 91136u);
	/* stories110M's full-attention f32 cache at 4096: 2 x 12 x 768 x 4 x 4096 = 288 MiB. */
	T_EQ_U64(mw_analytic_kv_bytes(12, 12, 64, 4, 4096), 288u << 20);
	eng_tensor_table_free(t);
}

static void test_inputs(void)
{
	json_t *proj = NULL;
	struct mw_error err;
	mw_error_clear(&err);
	T_EQ_INT(mw_projections_load(&proj, NULL, &err), 0);
	const json_t *p = json_object_get(proj, "projections");
	/* AIOS's four tiers and two models, each range as its low and high end
	 * (spec/model_contract.md, paper/aios_paper.md at commit 4d28f33d). */
	static const double want[][2] = { { 45, 55 }, { 70, 80 }, { 80, 88 }, { 85, 92 },
					  { 50, 58 }, { 80, 85 } };
	T_EQ_INT(json_array_size(p), 12);
	for (size_t k = 0; k < 12; k++) {
		const json_t *x = json_array_get(p, k);
		T_NEAR(json_number_value(json_object_get(x, "reduction_pct")), want[k / 2][k % 2], 0);
		T_EQ_STR(json_string_value(json_object_get(x, "kind")), "projection");
	}
	json_decref(proj);
	/* A file without the two parts, and a reduction out of range, are named. */
	char bad[] = "/tmp/mw-proj-XXXXXX";
	int bfd = mkstemp(bad);
	const char *text = "{\"projections\": [{\"name\": \"x\", \"reduction_pct\": 120}], "
			   "\"contract\": {}}";
	T_ASSERT(write(bfd, text, strlen(text)) == (ssize_t)strlen(text));
	close(bfd);
	T_EQ_INT(mw_projections_load(&proj, bad, &err), -EINVAL);
	T_EQ_STR(err.field, "projections[].reduction_pct");
	FILE *bf = fopen(bad, "w");
	fputs("{\"contract\": {}}", bf);
	fclose(bf);
	T_EQ_INT(mw_projections_load(&proj, bad, &err), -EINVAL);
	T_CONTAINS(err.text, "'projections' array");
	unlink(bad);

	char **prompts = NULL;
	size_t n = 0;
	T_EQ_INT(mw_calibration_load(&prompts, &n, NULL, &err), 0);
	T_EQ_INT(n, 10);
	mw_calibration_free(prompts, n);

	char path[] = "/tmp/mw-headroom-XXXXXX.jsonl";
	int fd = mkstemps(path, 6);
	const char good[] = "{\"prompt\": \"One day\"}\n\n{\"prompt\": \"A cat\"}\n";
	T_ASSERT(write(fd, good, sizeof(good) - 1) == (ssize_t)sizeof(good) - 1);
	close(fd);
	T_EQ_INT(mw_calibration_load(&prompts, &n, path, &err), 0);
	T_EQ_INT(n, 2);
	if (n == 2)
		T_EQ_STR(prompts[1], "A cat");
	mw_calibration_free(prompts, n);
	FILE *f = fopen(path, "w");
	fputs("{\"prompt\": \"ok\"}\n{\"text\": \"no\"}\n", f);
	fclose(f);
	T_EQ_INT(mw_calibration_load(&prompts, &n, path, &err), -EINVAL);
	T_CONTAINS(err.text, "line 2");
	unlink(path);
}

/* The hook's layer-0 activations at position 0 against a forward pass written here: at
 * position 0 RoPE is the identity and attention returns V. */
struct capture {
	float act[172];
	int calls;
};

static void on_act(void *ctx, int layer, const float *act, int n)
{
	struct capture *c = ctx;
	if (layer == 0 && c->calls++ == 0 && n == 172)
		memcpy(c->act, act, sizeof(c->act));
}

static const float *tensor(const struct eng_tensor_table *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->t[i].name, name))
			return t->t[i].data;
	T_FAIL_AT(__FILE__, __LINE__, "no tensor %s", name);
	return NULL;
}

static void rmsnorm(float *out, const float *x, const float *w, int n)
{
	double ss = 0;
	for (int i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	double s = 1.0 / sqrt(ss / n + 1e-5);
	for (int i = 0; i < n; i++)
		out[i] = (float)(w[i] * s * x[i]);
}

static void matvec(float *y, const float *w, const float *x, int rows, int cols)
{
	for (int r = 0; r < rows; r++) {
		double s = 0;
		for (int c = 0; c < cols; c++)
			s += (double)w[(size_t)r * cols + c] * x[c];
		y[r] = (float)s;
	}
}

static void test_r1_stories260k(void)
{
	char model[4096];
	if (!t_have_shared("models/stories260K.bin", model, sizeof(model)))
		return;
	struct eng_tensor_table *t = NULL;
	struct eng_model *m = NULL;
	struct eng_session *s = NULL;
	struct eng_error eerr;
	struct capture cap = { .calls = 0 };
	eng_error_clear(&eerr);
	T_EQ_INT(eng_tensors_from_file(model, &t, &eerr), 0);
	T_EQ_INT(eng_model_open(&m, model, NULL, &eerr), 0);
	struct eng_hooks hooks = { .ctx = &cap, .ffn_act = on_act };
	struct eng_session_options so = { .threads = 2, .hooks = &hooks };
	T_EQ_INT(eng_session_new(&s, m, &so, &eerr), 0);
	if (!t || !s)
		goto out;
	const float *logits;
	T_EQ_INT(eng_session_step(s, ENG_TOKEN_BOS, 0, &logits, NULL), 0);
	T_EQ_INT(cap.calls, 1);

	/* dim 64, 8 heads of 8, 4 KV heads (kv_dim 32), hidden 172 */
	float x[64], xn[64], v[32], att[64], y[64], h1[172], h3[172];
	memcpy(x, tensor(t, "token_embedding") + 64 * ENG_TOKEN_BOS, sizeof(x));
	rmsnorm(xn, x, tensor(t, "layers.0.rms_att"), 64);
	matvec(v, tensor(t, "layers.0.wv"), xn, 32, 64);
	for (int h = 0; h < 8; h++) /* head h reads KV head h / 2 */
		memcpy(att + 8 * h, v + 8 * (h / 2), 8 * sizeof(float));
	matvec(y, tensor(t, "layers.0.wo"), att, 64, 64);
	for (int i = 0; i < 64; i++)
		x[i] += y[i];
	rmsnorm(xn, x, tensor(t, "layers.0.rms_ffn"), 64);
	matvec(h1, tensor(t, "layers.0.w1"), xn, 172, 64);
	matvec(h3, tensor(t, "layers.0.w3"), xn, 172, 64);
	double maxdiff = 0;
	for (int i = 0; i < 172; i++) {
		double want = h1[i] / (1.0 + exp(-h1[i])) * h3[i];
		maxdiff = fmax(maxdiff, fabs(want - cap.act[i]));
	}
	T_NEAR(maxdiff, 0, 1e-4);

	/* The measurement itself: no tokenizer for the 512-token vocabulary is shared, so the
	 * model's own sequences are run. Every activation is counted once per layer. */
	struct mw_r1 r1;
	struct mw_error err;
	mw_error_clear(&err);
	char unused[] = "unused", *none[] = { unused, unused };
	T_EQ_INT(mw_r1_measure(model, NULL, none, 2, 1e-3, &r1, &err), 0);
	T_EQ_INT(r1.n_layers, 5);
	T_EQ_INT(r1.tokens, 2 * MW_R1_SELF_TOKENS);
	T_CONTAINS(r1.input, "generated");
	for (int l = 0; l < r1.n_layers; l++) {
		T_EQ_U64(r1.layer[l].n, (uint64_t)r1.tokens * 172);
		T_ASSERT(r1.layer[l].zeros <= r1.layer[l].near);
		T_ASSERT(r1.layer[l].near < r1.layer[l].n); /* trained weights are not all ~0 */
	}
	/* A larger epsilon can only count more. */
	struct mw_r1 wide;
	T_EQ_INT(mw_r1_measure(model, NULL, none, 2, 1e-1, &wide, &err), 0);
	T_ASSERT(wide.layer[0].near > r1.layer[0].near);
	mw_r1_free(&wide);
	mw_r1_free(&r1);
out:
	eng_session_free(s);
	eng_model_close(m);
	eng_tensor_table_free(t);
}

/* mw_r1_measure of the model at path with no tokenizer: one sequence the model generates
 * itself (the one prompt, "unused", is not read), epsilon 1e-3, into r1. */
static void r1_unused(const char *path, struct mw_r1 *r1)
{
	struct mw_error err;
	mw_error_clear(&err);
	char unused[] = "unused", *none[] = { unused };
	T_EQ_INT(mw_r1_measure(path, NULL, none, 1, 1e-3, r1, &err), 0);
}

/* R1 on a GGUF falcon with no tokenizer given: the model's own sequences start from the BOS
 * its file names (11), not llama's 1, and the activation is named as falcon's. */
static void test_r1_falcon_bos(void)
{
	char dir[] = "/tmp/mw-test-r1-XXXXXX", path[64];
	t_mkdtemp(dir);
	snprintf(path, sizeof(path), "%s/falcon.gguf", dir);
	struct eng_error eerr;
	T_EQ_INT(eng_synth_gguf(path, "falcon", "falcon-tiny", "q8_0", 1, &eerr), 0);
	struct mw_r1 r1;
	r1_unused(path, &r1);
	T_CONTAINS(r1.input, "from BOS, id 11 ");
	T_EQ_STR(r1.activation, "GELU(w_up x)");
	T_EQ_INT(r1.n_layers, 2);
	/* falcon's FFN is not gated: no map, the session's rule (eng_arch_sparsity_map) */
	T_ASSERT(!r1.map_applies);
	T_EQ_U64(r1.skipped_bytes, 0);
	mw_r1_free(&r1);
	unlink(path);
	rmdir(dir);
}

static void test_r3_stories260k(void)
{
	char model[4096];
	if (!t_have_shared("models/stories260K.bin", model, sizeof(model)))
		return;
	struct eng_tensor_table *t = NULL;
	struct eng_error eerr;
	eng_error_clear(&eerr);
	T_EQ_INT(eng_tensors_from_file(model, &t, &eerr), 0);
	if (!t)
		return;
	struct mw_r3 r3;
	T_EQ_INT(mw_r3_measure(t, &r3), 0);
	/* 7 matrices x 4 adjacent pairs; pairs (0,1), (1,2) early, (2,3) middle, (3,4) late */
	T_EQ_INT(r3.n, 28);
	T_EQ_INT(r3.zone_n[MW_ZONE_EARLY], 14);
	T_EQ_INT(r3.zone_n[MW_ZONE_MIDDLE], 7);
	T_EQ_INT(r3.zone_n[MW_ZONE_LATE], 7);
	/* wq of layers 2 and 3, by hand */
	const float *a = tensor(t, "layers.2.wq"), *b = tensor(t, "layers.3.wq");
	double ab = 0, aa = 0, bb = 0;
	for (int i = 0; i < 64 * 64; i++) {
		ab += (double)a[i] * b[i];
		aa += (double)a[i] * a[i];
		bb += (double)b[i] * b[i];
	}
	bool found = false;
	for (size_t k = 0; k < r3.n; k++)
		if (!strcmp(r3.pairs[k].kind, "wq") && r3.pairs[k].layer == 2) {
			T_NEAR(r3.pairs[k].cosine, ab / sqrt(aa * bb), 1e-9);
			T_EQ_INT(r3.pairs[k].zone, MW_ZONE_MIDDLE);
			found = true;
		}
	T_ASSERT(found);
	mw_r3_free(&r3);
	eng_tensor_table_free(t);

	/* Independent random layers of a synthetic model are nearly orthogonal: R3 reads the
	 * weights, it does not sample them. */
	char path[] = "/tmp/mw-headroom-XXXXXX";
	t_tmp_file(path);
	T_EQ_INT(eng_synth_llama2c(path, "stories260K", 3, &eerr), 0);
	T_EQ_INT(eng_tensors_from_file(path, &t, &eerr), 0);
	if (t) {
		T_EQ_INT(mw_r3_measure(t, &r3), 0);
		for (size_t k = 0; k < r3.n; k++)
			T_ASSERT(fabs(r3.pairs[k].cosine) < 0.1);
		mw_r3_free(&r3);
		eng_tensor_table_free(t);
	}
	/* A built-in description has no weights: R3 refuses, it does not invent. */
	T_EQ_INT(eng_tensors_from_shape("falcon-7b-q4_k_m", &t, &eerr), 0);
	T_EQ_INT(mw_r3_measure(t, &r3), -EINVAL);
	eng_tensor_table_free(t);
	unlink(path);
}

/* ---- R3 aliasing on a model built with known similarity ---- */

/* A legacy llama2.c file of L_KNOWN layers whose matrix j of layer k is c_j + (k - 5) s_j d_j:
 * a canonical (layer 5, in the core zone) plus k - 5 deltas, with c and d uniform in [-1, 1) from two seeds and the delta's
 * scale s_j set per matrix, so that some adjacent pairs pass their zone threshold and some
 * fail. */
#define L_KNOWN 10
#define K_DIM 16
#define K_HIDDEN 32
#define K_VOCAB 32
#define K_SEQ 16
#define K_MID 5
static const double k_scale[7] = { 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8 };

static float unit(uint64_t *st)
{
	*st = *st * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(*st >> 11) / 9007199254740992.0 * 2 - 1);
}

/* matrix j's rows x cols elements: their canonical and delta (seeded by j). */
static void known_parts(int j, size_t n, float *c, float *d)
{
	uint64_t sc = 1000 + (uint64_t)j, sd = 2000 + (uint64_t)j;
	for (size_t i = 0; i < n; i++) {
		c[i] = unit(&sc);
		d[i] = (float)(k_scale[j] * unit(&sd));
	}
}

static const size_t k_rows[7] = { K_DIM, K_DIM, K_DIM, K_DIM, K_HIDDEN, K_DIM, K_HIDDEN };
static const size_t k_cols[7] = { K_DIM, K_DIM, K_DIM, K_DIM, K_DIM, K_HIDDEN, K_DIM };
static const char *const k_kind[7] = { "wq", "wk", "wv", "wo", "w1", "w2", "w3" };

static void write_floats(FILE *f, float v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fwrite(&v, sizeof(v), 1, f);
}

static bool write_known(const char *path)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return false;
	int32_t hdr[7] = { K_DIM, K_HIDDEN, L_KNOWN, 2, 2, K_VOCAB, K_SEQ };
	fwrite(hdr, sizeof(hdr), 1, f);
	write_floats(f, 0.01f, (size_t)K_VOCAB * K_DIM); /* token_embedding */
	write_floats(f, 1.0f, (size_t)L_KNOWN * K_DIM);  /* rms_att */
	float c[K_HIDDEN * K_DIM], d[K_HIDDEN * K_DIM], w[K_HIDDEN * K_DIM];
	for (int j = 0; j < 7; j++) {
		if (j == 4) /* rms_ffn sits between wo and w1 */
			write_floats(f, 1.0f, (size_t)L_KNOWN * K_DIM);
		size_t n = k_rows[j] * k_cols[j];
		known_parts(j, n, c, d);
		for (int k = 0; k < L_KNOWN; k++) {
			for (size_t i = 0; i < n; i++)
				w[i] = c[i] + (float)(k - K_MID) * d[i];
			fwrite(w, sizeof(float), n, f);
		}
	}
	write_floats(f, 1.0f, K_DIM);                       /* rms_final */
	write_floats(f, 0.0f, (size_t)K_SEQ * (K_DIM / 4)); /* freq_cis_real, imag */
	write_floats(f, 0.0f, (size_t)K_SEQ * (K_DIM / 4));
	return fclose(f) == 0;
}

/* AIOS's thresholds by layer, written out for 10 layers (floor(0.1 L) = 1, floor(0.4 L) = 4,
 * floor(0.6 L) = 6, floor(0.9 L) = 9) and 5 (0, 2, 3, 4). */
static const double want_thr10[10] = { 0.99, 0.97, 0.97, 0.97, 0.95, 0.95, 0.95, 0.97, 0.97,
				       0.99 };
static const double want_thr5[5] = { 0.97, 0.97, 0.95, 0.95, 0.99 };

static void test_r3_known(void)
{
	for (int l = 0; l < 10; l++)
		T_NEAR(mw_r3_threshold(l, 10), want_thr10[l], 0);
	for (int l = 0; l < 5; l++)
		T_NEAR(mw_r3_threshold(l, 5), want_thr5[l], 0);
	/* 32 layers: 0-2 0.99, 3-11 0.97, 12-19 0.95, 20-27 0.97, 28-31 0.99 */
	T_NEAR(mw_r3_threshold(2, 32), 0.99, 0);
	T_NEAR(mw_r3_threshold(3, 32), 0.97, 0);
	T_NEAR(mw_r3_threshold(12, 32), 0.95, 0);
	T_NEAR(mw_r3_threshold(19, 32), 0.95, 0);
	T_NEAR(mw_r3_threshold(20, 32), 0.97, 0);
	T_NEAR(mw_r3_threshold(28, 32), 0.99, 0);

	char path[] = "/tmp/mw-known-XXXXXX";
	t_tmp_file(path);
	T_ASSERT(write_known(path));
	struct eng_tensor_table *t = NULL;
	struct eng_error eerr;
	eng_error_clear(&eerr);
	T_EQ_INT(eng_tensors_from_file(path, &t, &eerr), 0);
	if (!t) {
		fprintf(stderr, "%s\n", eerr.text);
		unlink(path);
		return;
	}
	struct mw_r3 r3;
	T_EQ_INT(mw_r3_measure(t, &r3), 0);
	T_EQ_INT(r3.n, 7 * (L_KNOWN - 1));
	T_EQ_INT(r3.core_first, 4);
	T_EQ_INT(r3.core_last, 6);
	/* The cosine of c + m d and c + (m + 1) d, m = k - K_MID, from the dot products cc, cd
	 * and dd. */
	int core = 0, core_alias = 0, checked = 0, mixed[2] = { 0, 0 };
	float c[K_HIDDEN * K_DIM], d[K_HIDDEN * K_DIM];
	for (int j = 0; j < 7; j++) {
		size_t n = k_rows[j] * k_cols[j];
		known_parts(j, n, c, d);
		double cc = 0, cd = 0, dd = 0;
		for (size_t i = 0; i < n; i++) {
			cc += (double)c[i] * c[i];
			cd += (double)c[i] * d[i];
			dd += (double)d[i] * d[i];
		}
		for (int k = 0; k + 1 < L_KNOWN; k++) {
			double m = k - K_MID;
			double a2 = cc + 2 * m * cd + m * m * dd;
			double b2 = cc + 2 * (m + 1) * cd + (m + 1) * (m + 1) * dd;
			double ab = cc + (2 * m + 1) * cd + m * (m + 1) * dd;
			double want = ab / sqrt(a2 * b2), delta = sqrt(dd / a2);
			bool alias = want >= want_thr10[k + 1];
			mixed[alias]++;
			if (k + 1 >= 4 && k + 1 <= 6) {
				core++;
				core_alias += alias;
			}
			for (size_t q = 0; q < r3.n; q++) {
				const struct mw_r3_pair *p = &r3.pairs[q];
				if (strcmp(p->kind, k_kind[j]) || p->layer != k)
					continue;
				T_NEAR(p->cosine, want, 1e-6);
				T_NEAR(p->delta_ratio, delta, 1e-6);
				T_NEAR(p->threshold, want_thr10[k + 1], 0);
				T_ASSERT(p->aliasable == alias);
				T_ASSERT(p->core == (k + 1 >= 4 && k + 1 <= 6));
				checked++;
			}
		}
	}
	T_EQ_INT(checked, 7 * (L_KNOWN - 1));
	T_ASSERT(mixed[0] > 0 && mixed[1] > 0); /* the construction exercises both sides */
	T_EQ_INT(r3.core_blocks, core);
	T_EQ_INT(r3.core_aliasable, core_alias);
	T_NEAR(r3.aliasing_ratio, (double)core_alias / core, 1e-12);
	T_ASSERT(core_alias > 0 && core_alias < core);
	mw_r3_free(&r3);
	eng_tensor_table_free(t);

	/* The verb reports the same ratio and its verdict against 70 %. */
	const char *argv[] = { "memwall", "headroom", path, "--json", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	json_t *doc = o.out ? json_loads(o.out, 0, NULL) : NULL;
	const json_t *al = json_object_get(json_object_get(json_object_get(doc, "contract"),
							   "R3"), "aliasing");
	T_NEAR(json_number_value(json_object_get(al, "aliasing_ratio")), (double)core_alias / core,
	       1e-9);
	T_ASSERT(json_is_boolean(json_object_get(al, "pass")) &&
		 json_is_true(json_object_get(al, "pass")) == ((double)core_alias / core >= 0.70));
	T_CONTAINS(json_string_value(json_object_get(al, "note")), "synthetic random weights");
	json_decref(doc);
	t_output_free(&o);
	unlink(path);
}

/* R4: the contract's formula and the engine's buffers, written out. */
static void test_r4_figures(void)
{
	struct eng_tensor_table *t = falcon_shape();
	struct eng_error err;
	struct mw_r4 r;
	eng_error_clear(&err);
	if (t) {
		mw_r4_compute(t, 129, &r);
		/* (2 x 4544 + 4 x 18176) x 2 */
		T_EQ_U64(r.contract_bytes, 163584u);
		/* x, y, y2 (3 x 4544), xb (71 x 64), qkv (4544 + 2 x 64), hb (18176): no hb2 */
		T_EQ_U64(r.engine_bytes, (3u * 4544 + 4544 + 4544 + 128 + 18176) * 4);
		T_EQ_U64(r.attention_bytes, 71u * 129 * 4);
		/* The same shape under an architecture the engine does not run: the one default,
		 * no gated FFN (engine.h's eng_arch_lookup), so no hb2 either; under llama's name,
		 * a gated FFN's hb2 (18176) more. */
		t->info.arch = "mamba";
		mw_r4_compute(t, 129, &r);
		T_EQ_U64(r.engine_bytes, (3u * 4544 + 4544 + 4544 + 128 + 18176) * 4);
		t->info.arch = "llama";
		mw_r4_compute(t, 129, &r);
		T_EQ_U64(r.engine_bytes, (3u * 4544 + 4544 + 4544 + 128 + 2 * 18176) * 4);
		eng_tensor_table_free(t);
	}
	char synth[] = "/tmp/mw-r4-XXXXXX";
	t_tmp_file(synth);
	T_EQ_INT(eng_synth_llama2c(synth, "stories260K", 1, &err), 0);
	T_EQ_INT(eng_tensors_from_file(synth, &t, &err), 0);
	unlink(synth);
	if (t) {
		mw_r4_compute(t, 10, &r);
		T_EQ_U64(r.contract_bytes, (2u * 64 + 4 * 172) * 2);
		/* 3 x 64, xb 64, qkv 64 + 2 x 32, hb and hb2 2 x 172 */
		T_EQ_U64(r.engine_bytes, (3u * 64 + 64 + 128 + 2 * 172) * 4);
		T_EQ_U64(r.attention_bytes, 8u * 10 * 4);
		eng_tensor_table_free(t);
	}
	/* L2 from a recorded sysfs tree: the data or unified cache of the level, never the
	 * instruction cache. */
	char root[] = "/tmp/mw-sysfs-XXXXXX", dir[300], file[400], src[400];
	if (!mkdtemp(root))
		return;
	static const char *const caches[][3] = { { "1", "Instruction", "32K" },
						 { "1", "Data", "48K" },
						 { "2", "Unified", "2048K" } };
	for (int i = 0; i < 3; i++) {
		const char *names[] = { "level", "type", "size" };
		snprintf(dir, sizeof(dir), "mkdir -p %s/sys/devices/system/cpu/cpu0/cache/index%d",
			 root, i);
		T_EQ_INT(system(dir), 0);
		for (int k = 0; k < 3; k++) {
			snprintf(file, sizeof(file), "%s/sys/devices/system/cpu/cpu0/cache/index%d/%s",
				 root, i, names[k]);
			FILE *f = fopen(file, "w");
			if (f) {
				fprintf(f, "%s\n", caches[i][k]);
				fclose(f);
			}
		}
	}
	uint64_t bytes = 0;
	T_EQ_INT(mw_cache_size(root, 2, &bytes, src, sizeof(src)), 0);
	T_EQ_U64(bytes, 2048u << 10);
	T_CONTAINS(src, "index2/size");
	T_EQ_INT(mw_cache_size(root, 1, &bytes, NULL, 0), 0);
	T_EQ_U64(bytes, 48u << 10);
	T_EQ_INT(mw_cache_size(root, 3, &bytes, NULL, 0), -ENOENT);
	snprintf(dir, sizeof(dir), "rm -rf %s", root);
	T_EQ_INT(system(dir), 0);
}

/* The verb on the real stories260K: JSON with every rule. */
static void test_verb(void)
{
	char model[4096];
	if (!t_have_shared("models/stories260K.bin", model, sizeof(model)))
		return;
	const char *argv[] = { "memwall", "headroom", model, "--json", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	json_error_t je;
	json_t *doc = o.out ? json_loads(o.out, 0, &je) : NULL;
	T_ASSERT(doc != NULL);
	const json_t *c = json_object_get(doc, "contract");
	T_ASSERT(json_is_true(json_object_get(json_object_get(c, "R1"), "measured")));
	/* 2 x 5 layers x 32 (4 KV heads of 8) x 4 B x 4096 = 5 MiB */
	T_EQ_INT(json_integer_value(json_object_get(json_object_get(c, "R2"), "kv_bytes")),
		 5 << 20);
	T_ASSERT(json_is_true(json_object_get(json_object_get(c, "R2"), "pass")));
	T_ASSERT(json_is_true(json_object_get(json_object_get(c, "R4"), "pass")));
	T_ASSERT(json_is_false(json_object_get(json_object_get(c, "R5"), "manifest_present")));
	T_ASSERT(json_is_false(json_object_get(doc, "synthetic")));
	T_EQ_INT(json_array_size(json_object_get(doc, "projections")), 12);
	/* R1 to R5, each projection AIOS's, each missing measurement null with its reason */
	const json_t *mech = json_object_get(doc, "mechanisms");
	T_EQ_INT(json_array_size(mech), 5);
	for (size_t i = 0; i < json_array_size(mech); i++) {
		const json_t *m = json_array_get(mech, i);
		char rule[24];
		snprintf(rule, sizeof(rule), "R%zu", i + 1);
		T_EQ_STR(json_string_value(json_object_get(m, "rule")), rule);
		T_CONTAINS(json_string_value(json_object_get(json_object_get(m, "projection"),
							     "kind")), "projection");
		T_CONTAINS(json_string_value(json_object_get(json_object_get(m, "prediction"),
							     "kind")), "prediction");
		const json_t *meas = json_object_get(m, "measurement");
		if (i > 0) {
			T_ASSERT(json_is_null(json_object_get(meas, "reduction_pct")));
			T_CONTAINS(json_string_value(json_object_get(meas, "text")), "not measured");
		}
	}
	/* SiLU: the map runs and skips nothing, a measured 0 */
	T_NEAR(json_number_value(json_object_get(json_object_get(json_array_get(mech, 0),
								 "measurement"), "reduction_pct")),
	       0, 0);
	json_decref(doc);
	t_output_free(&o);
}

/* R1 on a synthetic ReLU model: the engine's sparsity map skips bytes, and the measured
 * reduction is its skipped bytes over the dense bytes of the same steps, recomputed here. */
static void test_verb_relu(void)
{
	char path[] = "/tmp/mw-relu-XXXXXX";
	t_tmp_file(path);
	struct eng_error eerr;
	eng_error_clear(&eerr);
	T_EQ_INT(eng_synth_llama2c_act(path, "stories260K", 5, ENG_ACT_RELU, &eerr), 0);
	const char *argv[] = { "memwall", "headroom", path, "--json", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	json_t *doc = o.out ? json_loads(o.out, 0, NULL) : NULL;
	const json_t *map = json_object_get(json_object_get(json_object_get(doc, "contract"), "R1"),
					    "sparsity_map");
	double skipped = (double)json_integer_value(json_object_get(map, "skipped_bytes"));
	double dense = (double)json_integer_value(json_object_get(map, "dense_bytes"));
	T_ASSERT(skipped > 0 && dense > skipped);
	const json_t *r1 = json_array_get(json_object_get(doc, "mechanisms"), 0);
	const json_t *meas = json_object_get(r1, "measurement");
	T_CONTAINS(json_string_value(json_object_get(meas, "kind")), "measurement");
	T_NEAR(json_number_value(json_object_get(meas, "reduction_pct")), 100 * skipped / dense,
	       1e-9);
	T_ASSERT(json_number_value(json_object_get(json_object_get(r1, "prediction"),
						   "reduction_pct")) > 0);
	json_decref(doc);
	t_output_free(&o);
	/* The activation is the model's own, never SiLU by default. */
	struct mw_r1 r1m;
	r1_unused(path, &r1m);
	T_EQ_STR(r1m.activation, "ReLU(w1 x) * w3 x");
	/* llama's FFN is gated: the map applies, as the session's rule says */
	T_ASSERT(r1m.map_applies && eng_arch_sparsity_map("llama"));
	mw_r1_free(&r1m);
	unlink(path);
}

/* The AIOS reference in MODEL's place: the built-in Falcon-7B Q4_K_M description, the
 * published baseline flagged IMPLAUSIBLE before any projection is made from it. */
static void test_verb_reference(void)
{
	char path[4096];
	t_source(path, sizeof(path), "results/reference/aios-falcon7b-q4km.json");
	const char *argv[] = { "memwall", "headroom", path, NULL };
	T_RUN_EXPECT(argv, 0,
		     T_LIST("WARNING: the baseline is IMPLAUSIBLE",
			    "32.00 MiB against 64 MiB: pass", "182.3 KB in f32",
			    "R1 FFN activation sparsity: not measured"),
		     NULL);
	const char *both[] = { "memwall", "headroom", path, "--result", path, NULL };
	T_RUN_EXPECT(both, 2, NULL, NULL);
}

/* ---- a record of `memwall run` (stories260K, synthetic, in a scratch cache) ---- */

/* Falcon-7B's width on the stories260K record: its shape is not the file's any more. */
static void edit_shape(json_t *doc)
{
	json_object_set_new(json_object_get(json_object_get(doc, "model"), "shape"), "dim",
			    json_integer(4544));
}

/* --result must validate and be a record of MODEL: another file of the same shape (its
 * sha256), the record's own file against an edited shape, and an edited record are refused
 * with the field that differs. */
static void test_result_of_model(void)
{
	char scratch[256], path[1024], other[600], shape[600], bad[600];
	t_run_record(scratch, sizeof(scratch), path, sizeof(path));
	T_ASSERT(path[0]);
	if (!path[0])
		return;
	json_t *doc = json_load_file(path, 0, NULL);
	char model[4096] = "";
	if (doc)
		snprintf(model, sizeof(model), "%s", json_string_value(json_object_get(
			json_object_get(doc, "model"), "path")));
	json_decref(doc);

	const char *ok[] = { "memwall", "headroom", model, "--result", path, NULL };
	T_RUN_EXPECT(ok, 0, NULL, NULL);

	snprintf(other, sizeof(other), "%s/other.bin", scratch);
	struct eng_error eerr;
	eng_error_clear(&eerr);
	T_EQ_INT(eng_synth_llama2c(other, "stories260K", 7, &eerr), 0);
	const char *argv[] = { "memwall", "headroom", other, "--result", path, NULL };
	T_RUN_EXPECT(argv, 2, NULL,
		     T_LIST("model.sha256: the record measured ", "--result must be a record of "));

	snprintf(shape, sizeof(shape), "%s/shape.json", scratch);
	t_record_edit(path, shape, edit_shape);
	const char *sargv[] = { "memwall", "headroom", model, "--result", shape, NULL };
	T_RUN_EXPECT(sargv, 2, NULL,
		     T_LIST("model.shape.dim: the record measured ", "with dim 4544"));

	snprintf(bad, sizeof(bad), "%s/negative.json", scratch);
	t_record_edit(path, bad, t_edit_negative_tok_s);
	const char *bargv[] = { "memwall", "headroom", model, "--result", bad, NULL };
	T_RUN_EXPECT(bargv, 2, NULL, T_LIST("does not validate"));
	if (!t_failures)
		t_rm_tree(scratch);
}

int main(void)
{
	test_verb_reference();
	test_r2_r4_falcon();
	test_inputs();
	test_r1_stories260k();
	test_r1_falcon_bos();
	test_r3_stories260k();
	test_r3_known();
	test_r4_figures();
	test_verb();
	test_verb_relu();
	test_result_of_model();
	return t_done();
}
