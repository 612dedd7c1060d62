/* src/analysis/headroom.c: the Model Contract measurements of `memwall headroom` (headroom.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embedded.h"
#include "file.h"
#include "headroom.h"

/* A calibration file holds prompts: a few KiB to a few MiB of text. */
#define CALIBRATION_MAX (64u << 20)

static const char *const zone_names[MW_ZONE_COUNT] = {
	[MW_ZONE_EARLY] = "early",
	[MW_ZONE_MIDDLE] = "middle",
	[MW_ZONE_LATE] = "late",
};

const char *mw_zone_name(enum mw_zone z)
{
	return (unsigned)z < MW_ZONE_COUNT ? zone_names[z] : "?";
}

int mw_projections_load(json_t **out, const char *path, struct mw_error *err)
{
	json_error_t je;
	const struct mw_embedded *e = path ? NULL : mw_embedded_find("aios.json");
	char *text = NULL;
	size_t len = 0;
	int rc;
	if (path && (rc = mw_file_read(path, "projections file", "", 16u << 20, &text, &len, err)))
		return rc;
	*out = path ? json_loadb(text, len, 0, &je) : e ? json_loadb(e->data, e->len, 0, &je) : NULL;
	free(text);
	const char *src = path ? path : "protocols/projections/aios.json (built in)";
	if (!*out)
		return mw_error_set(err, -EINVAL, src, "", "not JSON: line %d: %s", je.line, je.text);
	if (!json_is_array(json_object_get(*out, "projections")) ||
	    !json_is_object(json_object_get(*out, "contract"))) {
		json_decref(*out);
		*out = NULL;
		return mw_error_set(err, -EINVAL, src, "projections",
				    "a projections file needs a 'projections' array and a "
				    "'contract' object (see protocols/projections/aios.json)");
	}
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(*out, "projections"), i, p) {
		json_t *r = json_object_get(p, "reduction_pct");
		if (!json_is_string(json_object_get(p, "name")) || !json_is_number(r) ||
		    json_number_value(r) < 0 || json_number_value(r) >= 100) {
			json_decref(*out);
			*out = NULL;
			return mw_error_set(err, -EINVAL, src, "projections[].reduction_pct",
					    "projection %zu needs a 'name' and a 'reduction_pct' in "
					    "[0, 100)", i);
		}
	}
	return 0;
}

/* ---- Calibration prompts --------------------------------------------------------------------- */

static int add_prompt(char ***v, size_t *n, size_t *cap, const char *s, size_t len)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 16;
		char **nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	char *copy = strndup(s, len);
	if (!copy)
		return -ENOMEM;
	(*v)[(*n)++] = copy;
	return 0;
}

int mw_calibration_load(char ***prompts, size_t *n, const char *path, struct mw_error *err)
{
	const struct mw_embedded *e = path ? NULL : mw_embedded_find("stories.txt");
	const char *src = path ? path : "protocols/calibration/stories.txt (built in)";
	char *text = NULL, **v = NULL;
	size_t len = 0, cap = 0, count = 0;
	int rc = 0, line_no = 0;
	bool jsonl = path && strlen(path) > 6 && !strcmp(path + strlen(path) - 6, ".jsonl");

	*prompts = NULL;
	*n = 0;
	if (path) {
		/* A regular file of at most CALIBRATION_MAX (src/base/file.h): /dev/zero or a
		 * FIFO is refused by name, not read until memory runs out. */
		if ((rc = mw_file_read(path, "calibration file", "", CALIBRATION_MAX, &text, &len,
				       err)))
			return rc;
	} else if (e) {
		text = strndup(e->data, e->len);
	}
	if (!text)
		return mw_error_set(err, -ENOMEM, src, "", "out of memory");
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line_no++;
		size_t l = strlen(line);
		while (l && (line[l - 1] == '\r' || line[l - 1] == ' '))
			line[--l] = '\0';
		if (!l || line[0] == '#')
			continue;
		if (!jsonl) {
			rc = add_prompt(&v, &count, &cap, line, l);
		} else {
			json_error_t je;
			json_t *o = json_loads(line, 0, &je);
			const char *p = json_string_value(json_object_get(o, "prompt"));
			if (!p) {
				json_decref(o);
				rc = -EINVAL;
				mw_error_set(err, rc, src, "prompt", "line %d: want an object "
					     "{\"prompt\": \"...\"} per line", line_no);
				break;
			}
			rc = add_prompt(&v, &count, &cap, p, strlen(p));
			json_decref(o);
		}
		if (rc) {
			mw_error_set(err, rc, src, "", "out of memory");
			break;
		}
	}
	free(text);
	if (!rc && !count) {
		rc = mw_error_set(err, -EINVAL, src, "", "no prompts in the file");
	}
	if (rc) {
		mw_calibration_free(v, count);
		return rc;
	}
	*prompts = v;
	*n = count;
	return 0;
}

void mw_calibration_free(char **prompts, size_t n)
{
	for (size_t i = 0; prompts && i < n; i++)
		free(prompts[i]);
	free(prompts);
}

/* ---- R1 ---------------------------------------------------------------------------------------- */

struct r1_ctx {
	struct mw_r1 *r;
	float epsilon;
};

static void on_ffn_act(void *ctx, int layer, const float *act, int n)
{
	struct r1_ctx *c = ctx;
	if (layer < 0 || layer >= c->r->n_layers)
		return;
	struct mw_r1_layer *L = &c->r->layer[layer];
	uint64_t zeros = 0, near = 0;
	for (int i = 0; i < n; i++) {
		zeros += act[i] == 0.0f;
		near += fabsf(act[i]) <= c->epsilon;
	}
	L->n += (uint64_t)n;
	L->zeros += zeros;
	L->near += near;
}

static void add_bytes(struct mw_r1 *r, const struct eng_step_bytes *b)
{
	r->dense_bytes += b->weights + b->weights_skipped + b->kv_read + b->kv_write;
	r->skipped_bytes += b->weights_skipped;
	r->down_blocks_zero += b->down_blocks_zero;
	r->down_blocks += b->down_blocks;
}

/* n sequences of MW_R1_SELF_TOKENS tokens sampled from the model itself, from its BOS. */
static int self_generated(struct eng_session *s, const struct eng_model_info *info, int bos,
			  size_t n, struct mw_r1 *out, const char *model_path, struct mw_error *err)
{
	int steps = info->seq_len < MW_R1_SELF_TOKENS ? info->seq_len : MW_R1_SELF_TOKENS, rc = 0;
	float *copy = malloc((size_t)info->vocab_size * sizeof(float));
	struct eng_sampler *samp = NULL;
	if (!copy)
		return mw_error_set(err, -ENOMEM, model_path, "", "out of memory");
	for (size_t p = 0; p < n && !rc; p++) {
		struct eng_sampler_options so = { .temperature = 1.0f, .seed = p + 1 };
		if ((rc = eng_sampler_new(&samp, info->vocab_size, &so))) {
			mw_error_set(err, rc, model_path, "", "cannot create a sampler");
			break;
		}
		int token = bos;
		for (int pos = 0; pos < steps; pos++) {
			const float *logits;
			struct eng_step_bytes b;
			if ((rc = eng_session_step(s, token, pos, &logits, &b))) {
				mw_error_set(err, rc, model_path, "", "the engine failed at sequence "
					     "%zu, position %d", p + 1, pos);
				break;
			}
			add_bytes(out, &b);
			memcpy(copy, logits, (size_t)info->vocab_size * sizeof(float));
			token = eng_sampler_sample(samp, copy);
		}
		eng_sampler_free(samp);
		samp = NULL;
		out->prompts++;
		out->tokens += (size_t)steps;
	}
	snprintf(out->input, sizeof(out->input), "%zu sequences of %d tokens the model generated "
		 "from BOS, id %d (temperature 1, seeds 1..%zu): no tokenizer for its vocabulary", n,
		 steps, bos, n);
	free(copy);
	return rc;
}

int mw_r1_measure(const char *model_path, const char *tokenizer_path, char *const *prompts,
		  size_t n_prompts, double epsilon, struct mw_r1 *out, struct mw_error *err)
{
	struct eng_model *m = NULL;
	struct eng_tokenizer *tok = NULL;
	struct eng_session *s = NULL;
	struct eng_error eerr;
	int *ids = NULL, rc = 0;

	memset(out, 0, sizeof(*out));
	out->epsilon = epsilon;
	eng_error_clear(&eerr);
	if ((rc = eng_model_open(&m, model_path, NULL, &eerr))) {
		mw_error_set(err, rc, eerr.source[0] ? eerr.source : model_path, "",
			     "the engine cannot run this model: %s", eerr.text);
		goto out;
	}
	const struct eng_model_info *info = eng_model_info(m);
	out->synthetic = info->synthetic;
	/* session.c's ffn_act hook: the input of the down projection */
	/* The model's own activation (engine.h's enum eng_ffn_act), never assumed from the
	 * architecture: a ReLU llama is not SiLU. */
	static const char *const act_label[ENG_ACT_COUNT] = {
		[ENG_ACT_SILU] = "SiLU(w1 x) * w3 x", [ENG_ACT_RELU] = "ReLU(w1 x) * w3 x",
		[ENG_ACT_RELU2] = "ReLU(w1 x)^2 * w3 x", [ENG_ACT_GELU] = "GELU(w_up x)" };
	out->activation = info->ffn_act < ENG_ACT_COUNT && act_label[info->ffn_act]
				  ? act_label[info->ffn_act] : eng_ffn_act_name(info->ffn_act);
	if (tokenizer_path && (rc = eng_tokenizer_open_model(&tok, m, tokenizer_path, &eerr))) {
		mw_error_set(err, rc, eerr.source[0] ? eerr.source : tokenizer_path, "",
			     "%s", eerr.text);
		goto out;
	}
	out->n_layers = info->n_layers;
	out->layer = calloc((size_t)info->n_layers, sizeof(*out->layer));
	struct r1_ctx ctx = { .r = out, .epsilon = (float)epsilon };
	struct eng_hooks hooks = { .ctx = &ctx, .ffn_act = on_ffn_act };
	/* The sparsity map on: its skips are counted (engine-accounted) on the same steps. */
	struct eng_session_options so = { .threads = 1, .hooks = &hooks, .sparsity_map = true };
	out->map_applies = eng_arch_sparsity_map(info->arch); /* the session's own rule */
	if (!out->layer) {
		rc = mw_error_set(err, -ENOMEM, model_path, "", "out of memory");
		goto out;
	}
	if ((rc = eng_session_new(&s, m, &so, &eerr))) {
		mw_error_set(err, rc, model_path, "", "%s", eerr.text);
		goto out;
	}
	if (!tok) {
		/* A GGUF file names its BOS (falcon's is 11, llama's 1), in the tokenizer it carries
		 * (read from the open model, not the file again); a model without one uses llama's. */
		struct eng_tokenizer *own = NULL;
		int bos = ENG_TOKEN_BOS;
		if (!eng_tokenizer_open_model(&own, m, NULL, &eerr) && eng_tokenizer_bos(own) >= 0)
			bos = eng_tokenizer_bos(own);
		eng_tokenizer_close(own);
		rc = self_generated(s, info, bos, n_prompts, out, model_path, err);
		goto out;
	}
	snprintf(out->input, sizeof(out->input), "%zu calibration prompts (%s)", n_prompts,
		 tokenizer_path);
	for (size_t p = 0; p < n_prompts; p++) {
		int cap = (int)strlen(prompts[p]) + 3, n = 0;
		int *grown = realloc(ids, (size_t)cap * sizeof(*ids));
		if (!grown) {
			rc = mw_error_set(err, -ENOMEM, model_path, "", "out of memory");
			goto out;
		}
		ids = grown;
		if ((rc = eng_tokenizer_encode(tok, prompts[p], true, false, ids, cap, &n))) {
			mw_error_set(err, rc, tokenizer_path, "", "calibration prompt %zu cannot be "
				     "encoded with this tokenizer", p + 1);
			goto out;
		}
		if (n > info->seq_len)
			n = info->seq_len; /* the model's context bounds a prompt */
		for (int i = 0; i < n; i++) {
			const float *logits;
			struct eng_step_bytes b;
			if ((rc = eng_session_step(s, ids[i], i, &logits, &b))) {
				mw_error_set(err, rc, model_path, "", "the engine failed at prompt "
					     "%zu, position %d", p + 1, i);
				goto out;
			}
			add_bytes(out, &b);
		}
		out->prompts++;
		out->tokens += (size_t)n;
	}
out:
	free(ids);
	eng_session_free(s);
	eng_tokenizer_close(tok);
	eng_model_close(m);
	if (rc)
		mw_r1_free(out);
	return rc;
}

void mw_r1_free(struct mw_r1 *r)
{
	free(r->layer);
	r->layer = NULL;
	r->n_layers = 0;
}

/* ---- R3 ---------------------------------------------------------------------------------------- */

/* The name without its layer: after "layers.N." or "blk.N.". */
static const char *kind_of(const char *name)
{
	const char *dot = strchr(name, '.');
	dot = dot ? strchr(dot + 1, '.') : NULL;
	return dot ? dot + 1 : name;
}

double mw_r3_threshold(int layer, int n_layers)
{
	int L = n_layers;
	if (layer < L / 10)
		return 0.99;
	if (layer < 4 * L / 10)
		return 0.97;
	if (layer <= 6 * L / 10)
		return 0.95;
	if (layer < 9 * L / 10)
		return 0.97;
	return 0.99;
}

/* The kind's length without a ".weight" or ".delta" suffix: a canonical + delta layer's
 * "attn_q.delta" (engine/alias.h) pairs with its neighbour's "attn_q.weight". */
static size_t kind_stem(const char *kind)
{
	size_t n = strlen(kind);
	if (n > 7 && !strcmp(kind + n - 7, ".weight"))
		return n - 7;
	if (n > 6 && !strcmp(kind + n - 6, ".delta"))
		return n - 6;
	return n;
}

static bool same_kind(const char *a, const char *b)
{
	size_t n = kind_stem(a);
	return n == kind_stem(b) && !memcmp(a, b, n);
}

/* Over the layers' weights as the engine runs them: a delta tensor's rows are canonical +
 * delta (eng_tensor_weight_row), so a canonical + delta model's layers are compared as
 * reconstructed. tmp holds a row. */
static int cosine(const struct eng_tensor *a, const struct eng_tensor *b, float *ra, float *rb,
		  float *tmp, double *out, double *delta_ratio)
{
	double ab = 0, aa = 0, bb = 0, dd = 0;
	int rc;
	for (uint64_t r = 0; r < a->rows; r++) {
		if ((rc = eng_tensor_weight_row(a, r, ra, tmp)) ||
		    (rc = eng_tensor_weight_row(b, r, rb, tmp)))
			return rc;
		for (uint64_t i = 0; i < a->cols; i++) {
			ab += (double)ra[i] * rb[i];
			aa += (double)ra[i] * ra[i];
			bb += (double)rb[i] * rb[i];
			dd += ((double)rb[i] - ra[i]) * ((double)rb[i] - ra[i]);
		}
	}
	*out = aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : NAN;
	*delta_ratio = aa > 0 ? sqrt(dd / aa) : NAN;
	return 0;
}

int mw_r3_measure(const struct eng_tensor_table *t, struct mw_r3 *out)
{
	float *ra = NULL, *rb = NULL, *tmp = NULL;
	uint64_t max_cols = 0;
	int rc = 0, L = t->info.n_layers;

	memset(out, 0, sizeof(*out));
	out->core_first = 4 * L / 10;
	out->core_last = 6 * L / 10;
	for (size_t i = 0; i < t->n; i++)
		if (t->t[i].layer >= 0 && t->t[i].rows > 1) {
			if (!t->t[i].data)
				return -EINVAL;
			max_cols = t->t[i].cols > max_cols ? t->t[i].cols : max_cols;
		}
	out->pairs = calloc(t->n ? t->n : 1, sizeof(*out->pairs));
	ra = malloc((max_cols ? max_cols : 1) * sizeof(float));
	rb = malloc((max_cols ? max_cols : 1) * sizeof(float));
	tmp = malloc((max_cols ? max_cols : 1) * sizeof(float));
	if (!out->pairs || !ra || !rb || !tmp) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < t->n; i++) {
		const struct eng_tensor *a = &t->t[i];
		if (a->layer < 0 || a->rows <= 1 || a->layer + 1 >= L)
			continue;
		for (size_t j = 0; j < t->n; j++) {
			const struct eng_tensor *b = &t->t[j];
			if (b->layer != a->layer + 1 || !same_kind(kind_of(a->name), kind_of(b->name)) ||
			    b->rows != a->rows || b->cols != a->cols)
				continue;
			struct mw_r3_pair *p = &out->pairs[out->n];
			if ((rc = cosine(a, b, ra, rb, tmp, &p->cosine, &p->delta_ratio)))
				goto out;
			p->threshold = mw_r3_threshold(b->layer, L);
			p->aliasable = p->cosine >= p->threshold; /* false for NAN */
			p->core = b->layer >= out->core_first && b->layer <= out->core_last;
			p->step_bytes = b->step_bytes;
			snprintf(p->kind, sizeof(p->kind), "%.*s", (int)kind_stem(kind_of(a->name)),
				 kind_of(a->name));
			p->layer = a->layer;
			p->zone = L > 2 ? (enum mw_zone)(3 * a->layer / (L - 1)) : MW_ZONE_EARLY;
			if (p->zone >= MW_ZONE_COUNT)
				p->zone = MW_ZONE_LATE;
			out->n++;
			break;
		}
	}
	for (int z = 0; z < MW_ZONE_COUNT; z++) {
		out->zone_min[z] = INFINITY;
		out->zone_max[z] = -INFINITY;
	}
	for (size_t k = 0; k < out->n; k++) {
		const struct mw_r3_pair *p = &out->pairs[k];
		out->blocks++;
		out->aliasable += p->aliasable;
		if (p->core) {
			out->core_blocks++;
			out->core_aliasable += p->aliasable;
			out->core_bytes += p->step_bytes;
			out->core_aliasable_bytes += p->aliasable ? p->step_bytes : 0;
		}
		if (isnan(p->cosine))
			continue;
		out->zone_n[p->zone]++;
		out->zone_mean[p->zone] += p->cosine;
		out->zone_min[p->zone] = fmin(out->zone_min[p->zone], p->cosine);
		out->zone_max[p->zone] = fmax(out->zone_max[p->zone], p->cosine);
	}
	for (int z = 0; z < MW_ZONE_COUNT; z++) {
		if (out->zone_n[z])
			out->zone_mean[z] /= out->zone_n[z];
		else
			out->zone_mean[z] = out->zone_min[z] = out->zone_max[z] = NAN;
	}
	out->aliasing_ratio = out->core_blocks ? (double)out->core_aliasable / out->core_blocks
					       : NAN;
out:
	free(ra);
	free(rb);
	free(tmp);
	if (rc)
		mw_r3_free(out);
	return rc;
}

int mw_r3_engine_measure(const char *model_path, struct mw_r3_engine *out,
			 struct mw_error *err)
{
	struct eng_model *m = NULL;
	struct eng_session *s = NULL;
	struct eng_error e;
	struct eng_step_bytes b;
	const float *logits;
	int rc;

	memset(out, 0, sizeof(*out));
	eng_error_clear(&e);
	struct eng_session_options so = { .threads = 1, .ctx_len = 8 };
	if ((rc = eng_model_open(&m, model_path, NULL, &e)) ||
	    (rc = eng_session_new(&s, m, &so, &e))) {
		mw_error_set(err, rc, model_path, "", "%s", e.text);
		goto out;
	}
	if ((rc = eng_session_step(s, ENG_TOKEN_BOS, 0, &logits, &b))) {
		mw_error_set(err, rc, model_path, "", "the engine failed at position 0");
		goto out;
	}
	out->canonical = eng_model_canonical(m, &out->info);
	out->n_layers = eng_model_info(m)->n_layers;
	out->touched = b.weights;
	out->unique = b.weights_unique;
	out->dense = b.weights - out->info.delta_bytes;
out:
	eng_session_free(s);
	eng_model_close(m);
	return rc;
}

void mw_r3_free(struct mw_r3 *r)
{
	free(r->pairs);
	r->pairs = NULL;
	r->n = 0;
}

/* ---- R4 ---------------------------------------------------------------------------------------- */

void mw_r4_compute(const struct eng_tensor_table *t, int positions, struct mw_r4 *out)
{
	const struct eng_model_info *in = &t->info;
	uint64_t dim = (uint64_t)in->dim, hidden = (uint64_t)in->hidden_dim;

	memset(out, 0, sizeof(*out));
	out->positions = positions;
	out->contract_bytes = (2 * dim + 4 * hidden) * 2;
	out->engine_bytes = eng_session_layer_vector_bytes(in, t->head_dim);
	out->attention_bytes = (uint64_t)in->n_heads * (uint64_t)positions * 4;
}

uint64_t mw_down_bytes(const struct eng_tensor_table *t)
{
	uint64_t n = 0;
	for (size_t i = 0; i < t->n; i++) {
		const char *k = kind_of(t->t[i].name);
		if (t->t[i].layer >= 0 && (!strcmp(k, "w2") || !strcmp(k, "ffn_down.weight")))
			n += t->t[i].step_bytes;
	}
	return n;
}
