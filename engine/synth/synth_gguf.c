/* engine/synth/synth_gguf.c: deterministic synthetic GGUF models (engine.h, "Synthetic GGUF
 * models"): a real model's shape and llama-quantize's per-tensor types (shapes.c), seeded
 * random weights.
 *
 * Every row of every tensor has its own generator, seeded from (seed, tensor, row), so the
 * bytes do not depend on how many threads quantize them. Rows are generated and quantized with
 * ggml's reference quantizers (krn_type_traits()->from_float_ref, what llama-quantize writes
 * without an imatrix) a chunk at a time, the chunk's rows split among threads, and streamed
 * through the GGUF writer, which commits atomically: the model is never held in memory and a
 * reader never sees half a file. The metadata follows llama.cpp's keys (src/llama-arch.cpp)
 * and carries a synthetic tokenizer of the real vocabulary size.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/alias.h"
#include "quants.h"
#include "rng.h"
#include "model/shapes.h"
#include "synth/synth_sparsity.h"
#include "model/tensors.h"
#include "synth/varied.h"

#define MATRIX_STD 0.02f   /* llama2.c model.py's init, as synth.c */
#define NORM_SPREAD 0.05f  /* norm weights 1 +- this */
#define BIAS_SPREAD 0.02f  /* norm biases +- this */
#define CHUNK_BYTES (8u << 20)
#define MAX_THREADS 8

/* ---- Weights ------------------------------------------------------------------------------- */

struct job {
	const struct eng_plan_tensor *t;
	const struct alias_out *o; /* what t stands for (a canonical + delta role, alias.h) */
	float rel_std;
	uint64_t seed;
	size_t tensor;     /* index in the plan, part of every row's seed */
	uint64_t r0, r1;   /* rows this worker fills */
	uint64_t first;    /* the chunk's first row */
	size_t row_bytes;
	unsigned char *out;
	float *row;        /* (ne[0]) scratch */
	bool relu_gate;    /* a ReLU model's ffn_gate: synth_sparsity.h's clustered rows */
	/* The bias channel (synth_sparsity.h), or NULL: which of its fixes this tensor takes */
	const struct eng_synth_sparsity *sp;
	enum { FIX_NONE, FIX_EMBD, FIX_ROW0, FIX_GATE } fix;
	double z;          /* the live neurons' bias, in standard deviations */
	int dim;
	const struct synth_varied *var; /* the varied construction, or NULL (legacy) */
	enum varied_role role;
	int layer;         /* the layer var sees: -1 for a canonical or delta (clears only) */
};

static void fill_row(const struct job *j, uint64_t r)
{
	uint64_t mix = j->seed ^ (0x9e3779b97f4a7c15ull * (j->tensor + 1));
	mix ^= eng_splitmix64(&mix) + r * 0xbf58476d1ce4e5b9ull;
	struct eng_rng rng;
	eng_rng_seed(&rng, eng_splitmix64(&mix));
	/* Uniform on [-a, a] has standard deviation a / sqrt(3). */
	float center = j->t->fill == ENG_FILL_NORM ? 1.0f : 0.0f;
	float a = j->t->fill == ENG_FILL_NORM	? NORM_SPREAD
		  : j->t->fill == ENG_FILL_BIAS ? BIAS_SPREAD
						: MATRIX_STD * sqrtf(3.0f);
	if (j->o->role != ALIAS_PLAIN)
		eng_alias_row(j->row, j->o, j->seed, j->rel_std, r);
	else if (j->relu_gate)
		eng_synth_gate_row(j->row, (size_t)j->t->ne[0], j->seed, j->t->layer, r);
	else
		for (uint64_t i = 0; i < j->t->ne[0]; i++)
			j->row[i] = center + a * (2.0f * eng_rng_float(&rng) - 1.0f);
	if (j->fix == FIX_EMBD)
		j->row[0] = SYNTH_BIAS_CHANNEL;
	else if (j->fix == FIX_ROW0 && r == 0)
		memset(j->row, 0, (size_t)j->t->ne[0] * sizeof(float));
	else if (j->fix == FIX_GATE)
		j->row[0] = eng_synth_gate_bias(j->dim, j->t->layer,
					    eng_synth_dead_neuron(j->sp, j->seed, j->t->layer, r)
						    ? SYNTH_DEAD_SIGMAS : j->z);
	if (j->var)
		eng_synth_varied_row(j->var, j->role, j->layer, r, j->row, 0, j->t->ne[0]);
	krn_type_traits(j->t->type)->from_float_ref(j->row, j->out + (r - j->first) * j->row_bytes,
						    (size_t)j->t->ne[0]);
}

static void *run_job(void *arg)
{
	const struct job *j = arg;
	for (uint64_t r = j->r0; r < j->r1; r++)
		fill_row(j, r);
	return NULL;
}

static int cpu_count(void)
{
	cpu_set_t set;
	int n = sched_getaffinity(0, sizeof(set), &set) ? 1 : CPU_COUNT(&set);
	return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

/* Writes tensor o (plan tensor o->index, or what alias.h makes of it) through w, with sp's
 * bias channel (synth_sparsity.h; NULL: none) in a model of width dim. */
static int write_tensor(struct eng_gguf_writer *w, const struct alias_out *o, float rel_std,
			uint64_t seed, enum eng_ffn_act act, const struct eng_synth_sparsity *sp,
			int dim, int threads, unsigned char *out, float *rows,
			const struct synth_varied *var, const struct eng_plan_tensor *plain)
{
	const struct eng_plan_tensor *t = &o->t;
	/* A canonical's or a delta's rows (and the dense twin's, to match) take only the
	 * construction's zero rows: W_c + D_l keeps them zero. */
	int var_layer = o->role == ALIAS_PLAIN ? plain->layer : -1;
	enum varied_role role = eng_synth_varied_role(plain->name);
	size_t i = o->index;
	bool relu_gate = (act == ENG_ACT_RELU || act == ENG_ACT_RELU2) &&
			 strstr(t->name, ".ffn_gate.");
	int fix = !sp ? FIX_NONE
		  : !strcmp(t->name, "token_embd.weight") ? FIX_EMBD
		  : strstr(t->name, ".attn_output.weight") || strstr(t->name, ".ffn_down.weight")
			  ? FIX_ROW0
		  : relu_gate ? FIX_GATE : FIX_NONE;
	size_t row_bytes = krn_row_size(t->type, t->ne[0]);
	uint64_t per_chunk = CHUNK_BYTES / row_bytes;
	if (per_chunk < 1)
		per_chunk = 1;
	for (uint64_t first = 0; first < t->ne[1]; first += per_chunk) {
		if (eng_cancelled())
			return -ECANCELED;
		uint64_t last = first + per_chunk < t->ne[1] ? first + per_chunk : t->ne[1];
		uint64_t n = last - first;
		int k = n < (uint64_t)threads ? (int)n : threads;
		struct job jobs[MAX_THREADS];
		pthread_t tid[MAX_THREADS];
		int started = 0, rc = 0;
		for (int j = 0; j < k; j++)
			jobs[j] = (struct job){ .t = t, .o = o, .rel_std = rel_std, .seed = seed,
						.tensor = i,
						.r0 = first + n * (uint64_t)j / (uint64_t)k,
						.r1 = first + n * (uint64_t)(j + 1) / (uint64_t)k,
						.first = first, .row_bytes = row_bytes, .out = out,
						.row = rows + (size_t)j * t->ne[0],
						.relu_gate = relu_gate, .sp = sp, .fix = fix,
						.z = eng_synth_bias_z(sp), .dim = dim,
						.var = var, .role = role, .layer = var_layer };
		for (int j = 1; j < k; j++) {
			if (pthread_create(&tid[j], NULL, run_job, &jobs[j]))
				break; /* the caller's thread does what no worker took */
			started = j;
		}
		run_job(&jobs[0]);
		for (int j = started + 1; j < k; j++)
			run_job(&jobs[j]);
		for (int j = 1; j <= started; j++)
			pthread_join(tid[j], NULL);
		if ((rc = eng_gguf_writer_data(w, out, n * row_bytes)))
			return rc;
	}
	return 0;
}

/* ---- Tokenizers ------------------------------------------------------------------------------
 * Synthetic vocabularies of the real size, built by rule so that every token can be encoded
 * and decoded: byte pieces first, then ever longer lowercase pieces, each one character longer
 * than a piece already there (so SentencePiece's merges reach it, and each gpt2 merge joins two
 * existing tokens). */

struct vocab {
	int n, cap;
	struct eng_gguf_value *tokens; /* (n) strings, into text */
	int32_t *types;
	float *scores;
	struct eng_gguf_value *merges; /* (n_merges) */
	int n_merges;
	char *text;
	size_t used, text_cap;
};

static int vocab_add(struct vocab *v, const char *s, int type, const char *merge)
{
	size_t len = strlen(s), mlen = merge ? strlen(merge) : 0;
	if (v->n >= v->cap || v->used + len + mlen + 2 > v->text_cap)
		return -ENOSPC;
	char *at = v->text + v->used;
	memcpy(at, s, len + 1);
	v->tokens[v->n] = (struct eng_gguf_value){ .type = ENG_GGUF_STRING, .s = { at, len } };
	v->types[v->n] = type;
	v->scores[v->n] = 0.0f;
	v->used += len + 1;
	if (merge) {
		at = v->text + v->used;
		memcpy(at, merge, mlen + 1);
		v->merges[v->n_merges++] = (struct eng_gguf_value){ .type = ENG_GGUF_STRING,
								    .s = { at, mlen } };
		v->used += mlen + 1;
	}
	v->n++;
	return 0;
}

static int vocab_new(struct vocab *v, int n)
{
	memset(v, 0, sizeof(*v));
	v->cap = n;
	v->text_cap = (size_t)n * 40 + 4096;
	v->tokens = calloc((size_t)n, sizeof(*v->tokens));
	v->merges = calloc((size_t)n, sizeof(*v->merges));
	v->types = calloc((size_t)n, sizeof(*v->types));
	v->scores = calloc((size_t)n, sizeof(*v->scores));
	v->text = malloc(v->text_cap);
	return v->tokens && v->merges && v->types && v->scores && v->text ? 0 : -ENOMEM;
}

static void vocab_free(struct vocab *v)
{
	free(v->tokens);
	free(v->merges);
	free(v->types);
	free(v->scores);
	free(v->text);
}

/* The lowercase word of length len numbered k (base 26, 'a' first). */
static void word(int k, int len, char *out)
{
	for (int i = len - 1; i >= 0; i--) {
		out[i] = (char)('a' + k % 26);
		k /= 26;
	}
	out[len] = '\0';
}

/* gpt2, laid out as Falcon's: ids 0-10 Falcon's >>TITLE<< ... >>MIDDLE<<, 11 <|endoftext|>
 * (all control), 12-267 the 256 byte characters, then merged words: "Ġa".."Ġz", then
 * "Ġ?[a-z]{2,}", each the merge of itself minus its last letter and that letter. */
static int vocab_gpt2(struct vocab *v, int n)
{
	static const char *const specials[] = {
		">>TITLE<<", ">>ABSTRACT<<", ">>INTRODUCTION<<", ">>SUMMARY<<", ">>COMMENT<<",
		">>ANSWER<<", ">>QUESTION<<", ">>DOMAIN<<", ">>PREFIX<<", ">>SUFFIX<<",
		">>MIDDLE<<", "<|endoftext|>",
	};
	static const char space[] = "\xc4\xa0"; /* U+0120, GPT-2's stand-in for ' ' */
	int rc = vocab_new(v, n);
	for (size_t i = 0; !rc && i < sizeof(specials) / sizeof(specials[0]); i++)
		rc = vocab_add(v, specials[i], 3, NULL);
	for (unsigned b = 0; !rc && b < 256; b++) {
		/* bytes_to_unicode, as tokenizer_gguf.c's byte_to_cp */
		unsigned cp = b <= 0x20 ? 256 + b : b >= 0x7f && b <= 0xa0 ? 289 + b - 0x7f
			      : b == 0xad ? 323 : b;
		char s[4] = { 0 };
		if (cp < 0x80) {
			s[0] = (char)cp;
		} else {
			s[0] = (char)(0xc0 | (cp >> 6));
			s[1] = (char)(0x80 | (cp & 0x3f));
		}
		rc = vocab_add(v, s, 1, NULL);
	}
	for (int len = 1; !rc && v->n < n; len++) {
		int count = 1;
		for (int k = 0; k < len; k++)
			count = count > 20000000 / 26 ? 20000000 : count * 26;
		for (int k = 0; !rc && k < count && v->n < n; k++) {
			char w[32], tok[40], merge[48], left[40];
			word(k, len, w);
			/* a single letter without a space is a byte character already */
			for (int sp = 1; sp >= (len > 1 ? 0 : 1) && !rc && v->n < n; sp--) {
				snprintf(tok, sizeof(tok), "%s%s", sp ? space : "", w);
				snprintf(left, sizeof(left), "%s%.*s", sp ? space : "", len - 1, w);
				snprintf(merge, sizeof(merge), "%s %c", left, w[len - 1]);
				rc = vocab_add(v, tok, 1, merge);
			}
		}
	}
	return rc;
}

/* SentencePiece, laid out as Llama's: <unk>, <s>, </s>, <0x00>..<0xFF>, then pieces scored
 * -(id - 259): "▁", the letters and digits with and without "▁", then lowercase words. */
static int vocab_spm(struct vocab *v, int n)
{
	static const char space[] = "\xe2\x96\x81";
	int rc = vocab_new(v, n);
	if (!rc)
		rc = vocab_add(v, "<unk>", 2, NULL);
	if (!rc)
		rc = vocab_add(v, "<s>", 3, NULL);
	if (!rc)
		rc = vocab_add(v, "</s>", 3, NULL);
	for (int b = 0; !rc && b < 256; b++) {
		char s[8];
		snprintf(s, sizeof(s), "<0x%02X>", b);
		rc = vocab_add(v, s, 6, NULL);
	}
	if (!rc)
		rc = vocab_add(v, space, 1, NULL);
	static const char *const sets[] = { "abcdefghijklmnopqrstuvwxyz",
					    "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789" };
	for (size_t s = 0; !rc && s < 3; s++)
		for (int sp = 0; sp <= (s < 2) && !rc; sp++)
			for (const char *c = sets[s]; *c && !rc && v->n < n; c++) {
				char tok[8];
				snprintf(tok, sizeof(tok), "%s%c", sp ? space : "", *c);
				rc = vocab_add(v, tok, 1, NULL);
			}
	for (int len = 2; !rc && v->n < n; len++) {
		int count = 1;
		for (int k = 0; k < len; k++)
			count = count > 20000000 / 26 ? 20000000 : count * 26;
		for (int k = 0; !rc && k < count && v->n < n; k++) {
			char w[32], tok[40];
			word(k, len, w);
			for (int sp = 1; sp >= 0 && !rc && v->n < n; sp--) {
				snprintf(tok, sizeof(tok), "%s%s", sp ? space : "", w);
				rc = vocab_add(v, tok, 1, NULL);
			}
		}
	}
	for (int i = 259; i < v->n; i++)
		v->scores[i] = (float)-(i - 259);
	return rc;
}

/* ---- Metadata ------------------------------------------------------------------------------ */

static int kv_arr(struct eng_gguf_writer *w, const char *key, enum eng_gguf_type type, int n,
		  const void *data, const struct eng_gguf_value *items)
{
	struct eng_gguf_value v = { .type = ENG_GGUF_ARRAY };
	v.arr.type = type;
	v.arr.n = (uint64_t)n;
	v.arr.data = data;
	v.arr.items = items;
	return eng_gguf_writer_kv(w, key, &v);
}

static int kv_arch_u32(struct eng_gguf_writer *w, const char *arch, const char *key, uint32_t v)
{
	char full[128];
	snprintf(full, sizeof(full), "%s.%s", arch, key);
	return eng_gguf_writer_kv_u32(w, full, v);
}

static int kv_arch_f32(struct eng_gguf_writer *w, const char *arch, const char *key, float v)
{
	char full[128];
	snprintf(full, sizeof(full), "%s.%s", arch, key);
	return eng_gguf_writer_kv_f32(w, full, v);
}

static int kv_arch_str(struct eng_gguf_writer *w, const char *arch, const char *key,
		       const char *v)
{
	char full[128];
	snprintf(full, sizeof(full), "%s.%s", arch, key);
	return eng_gguf_writer_kv_str(w, full, v);
}

/* The bias channel's statistics (synth_sparsity.h), as the llama2.c marker gives them. */
static int write_sparsity_kv(struct eng_gguf_writer *w, const struct eng_synth_sparsity *sp)
{
	struct eng_gguf_value ch = { .type = ENG_GGUF_UINT32, .u = 0 };
	struct eng_gguf_value rs = { .type = ENG_GGUF_FLOAT32,
				     .f = sp->relu_sparsity < 0.0 ? 0.5f : (float)sp->relu_sparsity };
	struct eng_gguf_value df = { .type = ENG_GGUF_FLOAT32, .f = (float)sp->dead_fraction };
	int rc;
	if ((rc = eng_gguf_writer_kv(w, "memwall.synthetic.bias_channel", &ch)) ||
	    (rc = eng_gguf_writer_kv(w, "memwall.synthetic.relu_sparsity", &rs)))
		return rc;
	return eng_gguf_writer_kv(w, "memwall.synthetic.dead_fraction", &df);
}

/* memwall.canonical_delta.* (alias.h) */
static int write_cd_metadata(struct eng_gguf_writer *w, const struct eng_plan *p,
			     const struct eng_canonical_delta *cd)
{
	int L = p->shape->layers, first = cd->first >= 0 ? cd->first : 4 * L / 10,
	    last = cd->first >= 0 ? cd->last : 6 * L / 10, rc;
	const char *dt = cd->delta_type ? cd->delta_type : "auto";
	if ((rc = eng_gguf_writer_kv_str(w, "memwall.canonical_delta.form",
					 cd->dense ? "dense" : "split")) ||
	    (rc = eng_gguf_writer_kv_u32(w, "memwall.canonical_delta.first", (uint32_t)first)) ||
	    (rc = eng_gguf_writer_kv_u32(w, "memwall.canonical_delta.last", (uint32_t)last)) ||
	    (rc = eng_gguf_writer_kv_f32(w, "memwall.canonical_delta.rel_std",
					 (float)cd->rel_std)))
		return rc;
	return eng_gguf_writer_kv_str(w, "memwall.canonical_delta.delta_type", dt);
}

/* The synthetic tokenizer the row asks for (arch.h's enum eng_synth_vocab), of the shape's
 * vocabulary size. */
static int write_vocab(struct eng_gguf_writer *w, const struct eng_arch_desc *ad, int n)
{
	struct vocab v;
	bool gpt2 = ad->synth.vocab == ENG_VOCAB_GPT2;
	int rc = gpt2 ? vocab_gpt2(&v, n) : vocab_spm(&v, n);
	if (!rc)
		rc = eng_gguf_writer_kv_str(w, "tokenizer.ggml.model", gpt2 ? "gpt2" : "llama");
	if (!rc)
		rc = kv_arr(w, "tokenizer.ggml.tokens", ENG_GGUF_STRING, v.n, NULL, v.tokens);
	if (!rc)
		rc = kv_arr(w, "tokenizer.ggml.token_type", ENG_GGUF_INT32, v.n, v.types, NULL);
	if (!rc && gpt2) {
		if (!(rc = eng_gguf_writer_kv_str(w, "tokenizer.ggml.pre", ad->synth.pre)) &&
		    !(rc = kv_arr(w, "tokenizer.ggml.merges", ENG_GGUF_STRING, v.n_merges, NULL,
				  v.merges)) &&
		    !(rc = eng_gguf_writer_kv_u32(w, "tokenizer.ggml.bos_token_id", 11)))
			rc = eng_gguf_writer_kv_u32(w, "tokenizer.ggml.eos_token_id", 11);
	} else if (!rc) {
		struct eng_gguf_value bos = { .type = ENG_GGUF_BOOL, .b = true };
		if (!(rc = kv_arr(w, "tokenizer.ggml.scores", ENG_GGUF_FLOAT32, v.n, v.scores,
				  NULL)) &&
		    !(rc = eng_gguf_writer_kv_u32(w, "tokenizer.ggml.bos_token_id", 1)) &&
		    !(rc = eng_gguf_writer_kv_u32(w, "tokenizer.ggml.eos_token_id", 2)) &&
		    !(rc = eng_gguf_writer_kv_u32(w, "tokenizer.ggml.unknown_token_id", 0)))
			rc = eng_gguf_writer_kv(w, "tokenizer.ggml.add_bos_token", &bos);
	}
	vocab_free(&v);
	return rc;
}

static int write_metadata(struct eng_gguf_writer *w, const struct eng_plan *p, uint64_t seed,
			  enum eng_ffn_act act, const struct eng_canonical_delta *cd, bool varied)
{
	const struct eng_shape *s = p->shape;
	const struct eng_arch_desc *ad = p->arch;
	const char *an = ad->info.name;
	char name[96];
	int rc;

	snprintf(name, sizeof(name), "synthetic %s%s", s->name,
		 !cd ? "" : cd->dense ? " canonical+delta (dense twin)" : " canonical+delta");
	struct eng_gguf_value yes = { .type = ENG_GGUF_BOOL, .b = true };
	struct eng_gguf_value seed_v = { .type = ENG_GGUF_UINT64, .u = seed };
	if ((rc = eng_gguf_writer_kv_str(w, "general.architecture", an)) ||
	    (rc = eng_gguf_writer_kv_str(w, "general.name", name)) ||
	    (rc = eng_gguf_writer_kv_u32(w, "general.file_type", p->mix->file_type)) ||
	    (rc = eng_gguf_writer_kv_u32(w, "general.quantization_version", 2)) ||
	    (rc = eng_gguf_writer_kv(w, "memwall.synthetic", &yes)) ||
	    (rc = eng_gguf_writer_kv(w, "memwall.synthetic.seed", &seed_v)) ||
	    (rc = eng_gguf_writer_kv_str(w, "memwall.synthetic.shape", s->name)) ||
	    /* legacy files keep the keys they always had */
	    (varied && (rc = eng_gguf_writer_kv_str(w, "memwall.synthetic.construction",
						    "varied"))) ||
	    (rc = kv_arch_u32(w, an, "context_length", (uint32_t)s->ctx)) ||
	    (rc = kv_arch_u32(w, an, "embedding_length", (uint32_t)s->dim)) ||
	    (rc = kv_arch_u32(w, an, "feed_forward_length", (uint32_t)s->hidden)) ||
	    (rc = kv_arch_u32(w, an, "block_count", (uint32_t)s->layers)) ||
	    (rc = kv_arch_u32(w, an, "attention.head_count", (uint32_t)s->heads)) ||
	    (rc = kv_arch_u32(w, an, "attention.head_count_kv", (uint32_t)s->kv_heads)))
		return rc;
	if (act != ad->info.act) { /* gguf_model.c's read_ffn_act reads it back */
		char key[96];
		snprintf(key, sizeof(key), "%s.feed_forward_activation", an);
		if ((rc = eng_gguf_writer_kv_str(w, key, eng_ffn_act_name(act))))
			return rc;
	}
	if (cd && (rc = write_cd_metadata(w, p, cd)))
		return rc;
	if ((rc = kv_arch_f32(w, an, ad->eps_key, ad->default_eps)) ||
	    (ad->synth.layout &&
	     (rc = kv_arch_str(w, an, "tensor_data_layout", ad->synth.layout))) ||
	    (ad->synth.rope_keys &&
	     ((rc = kv_arch_u32(w, an, "rope.dimension_count", (uint32_t)(s->dim / s->heads))) ||
	      (rc = kv_arch_f32(w, an, "rope.freq_base", 10000.0f)))))
		return rc;
	return write_vocab(w, ad, s->vocab);
}

/* ---- Entry points -------------------------------------------------------------------------- */

int eng_synth_gguf_plan(const char *arch, const char *shape, const char *quant,
			struct eng_tensor_table **out, struct eng_error *err)
{
	struct eng_plan *p = NULL;
	char source[256];
	*out = NULL;
	int rc = eng_plan_new(&p, arch, shape, quant, err);
	if (rc)
		return rc;
	snprintf(source, sizeof(source), "synthetic %s %s", p->shape->name, p->mix->name);
	rc = eng_tensors_from_plan(p, source, out, err);
	if (!rc)
		(*out)->info.synthetic = true;
	eng_plan_free(p);
	return rc;
}

static int synth_gguf(const char *path, const char *arch, const char *shape, const char *quant,
		      uint64_t seed, enum eng_ffn_act act, const struct eng_canonical_delta *cd,
		      const struct eng_synth_sparsity *sp, bool varied, struct eng_error *err);

int eng_synth_gguf_opts(const char *path, const char *arch, const char *shape,
			const char *quant, uint64_t seed, const struct eng_synth_opts *o,
			struct eng_error *err)
{
	static const struct eng_synth_opts zero;
	if (!o)
		o = &zero;
	if (o->construction != ENG_SYNTH_VARIED && o->construction != ENG_SYNTH_LEGACY)
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET, "construction %d: give "
				     "varied or legacy", (int)o->construction);
	if (o->sp && o->cd)
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET, "activation statistics do "
				     "not combine with canonical + delta");
	return synth_gguf(path, arch, shape, quant, seed, o->act, o->cd, o->sp,
			  o->construction == ENG_SYNTH_VARIED, err);
}

int eng_synth_gguf(const char *path, const char *arch, const char *shape, const char *quant,
		   uint64_t seed, struct eng_error *err)
{
	return eng_synth_gguf_act(path, arch, shape, quant, seed, ENG_ACT_SILU, err);
}

int eng_synth_gguf_act(const char *path, const char *arch, const char *shape, const char *quant,
		       uint64_t seed, enum eng_ffn_act act, struct eng_error *err)
{
	return synth_gguf(path, arch, shape, quant, seed, act, NULL, NULL, false, err);
}

int eng_synth_gguf_cd(const char *path, const char *arch, const char *shape, const char *quant,
		      uint64_t seed, enum eng_ffn_act act, const struct eng_canonical_delta *cd,
		      struct eng_error *err)
{
	return synth_gguf(path, arch, shape, quant, seed, act, cd, NULL, false, err);
}

int eng_synth_gguf_sparse(const char *path, const char *arch, const char *shape,
			  const char *quant, uint64_t seed, enum eng_ffn_act act,
			  const struct eng_synth_sparsity *sp, struct eng_error *err)
{
	return synth_gguf(path, arch, shape, quant, seed, act, NULL, sp, false, err);
}

/* eng_synth_gguf_cd and eng_synth_gguf_sparse: one of cd and sp, or neither; varied: the
 * varied construction (varied.h). */
static int synth_gguf(const char *path, const char *arch, const char *shape, const char *quant,
		      uint64_t seed, enum eng_ffn_act act, const struct eng_canonical_delta *cd,
		      const struct eng_synth_sparsity *sp, bool varied, struct eng_error *err)
{
	struct synth_varied var;
	struct eng_plan *p = NULL;
	struct alias_out *o = NULL;
	size_t n_out = 0;
	struct eng_gguf_writer *w = NULL;
	unsigned char *out = NULL;
	float *rows = NULL;
	int rc, threads = cpu_count();

	if ((rc = eng_plan_new(&p, arch, shape, quant, err)))
		return rc;
	/* The zeroed options' SiLU stands for the row's own activation. */
	if (act == ENG_ACT_SILU)
		act = p->arch->info.act;
	if ((unsigned)act >= ENG_ACT_COUNT || !(p->arch->info.acts & (1u << act))) {
		rc = eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				   "activation '%s': %s models do not take it",
				   eng_ffn_act_name(act) ? eng_ffn_act_name(act) : "?",
				   p->arch->info.name);
		goto out;
	}
	bool relu = act == ENG_ACT_RELU || act == ENG_ACT_RELU2;
	if (sp && (!relu || !(sp->relu_sparsity < 1.0) ||
		   !(sp->dead_fraction >= 0.0 && sp->dead_fraction < 1.0))) {
		rc = eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				   "activation statistics need a ReLU or ReLU^2 model, a "
				   "relu_sparsity below 1 and a dead_fraction in [0, 1)");
		goto out;
	}
	if (cd && !(cd->rel_std > 0 && cd->rel_std <= 1)) {
		rc = eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET, "canonical + delta: rel_std "
				   "%g must be in (0, 1]", cd->rel_std);
		goto out;
	}
	if (varied) {
		const struct eng_shape *s = p->shape;
		char why[160];
		if ((rc = eng_synth_varied_init(&var, s->dim, s->heads, s->kv_heads, s->vocab,
					    p->arch, MATRIX_STD, seed, why, sizeof(why)))) {
			eng_error_set(err, rc, "", ENG_NO_OFFSET, "%s", why);
			goto out;
		}
	}
	if ((rc = eng_alias_plan(p, cd, &o, &n_out, err)))
		goto out;
	uint64_t widest = 0, biggest_chunk = 0;
	for (size_t i = 0; i < n_out; i++) {
		uint64_t rb = krn_row_size(o[i].t.type, o[i].t.ne[0]);
		uint64_t chunk = rb > CHUNK_BYTES ? rb : CHUNK_BYTES / rb * rb;
		widest = o[i].t.ne[0] > widest ? o[i].t.ne[0] : widest;
		biggest_chunk = chunk > biggest_chunk ? chunk : biggest_chunk;
	}
	out = malloc((size_t)biggest_chunk);
	rows = malloc((size_t)widest * (size_t)threads * sizeof(*rows));
	if (!out || !rows) {
		rc = eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
		goto out;
	}
	if ((rc = eng_gguf_writer_new(&w, path, 0, err)))
		goto out;
	rc = write_metadata(w, p, seed, act, cd, varied);
	if (!rc && sp)
		rc = write_sparsity_kv(w, sp);
	for (size_t i = 0; !rc && i < n_out; i++)
		rc = eng_gguf_writer_tensor(w, o[i].t.name, o[i].t.type, o[i].t.n_dims,
					    o[i].t.ne);
	for (size_t i = 0; !rc && i < n_out; i++)
		rc = write_tensor(w, &o[i], cd ? (float)cd->rel_std : 0.0f, seed, act, sp,
				  p->shape->dim, threads, out, rows, varied ? &var : NULL,
				  &p->t[o[i].index]);
	if (rc == -ECANCELED) { /* the temporary file goes with the writer, as below */
		eng_error_set(err, rc, path, ENG_NO_OFFSET, "stopped by a signal while writing "
			      "the model: the partial file was removed");
		goto out;
	}
	if (rc) { /* the temporary file goes with the writer: nothing is left behind */
		eng_error_set(err, rc, path, ENG_NO_OFFSET, "cannot write the model: %s",
			      strerror(-rc));
		goto out;
	}
	rc = eng_gguf_writer_commit(w, err); /* fsync, rename; frees w either way */
	w = NULL;
	if (!rc) {
		/* The pages just written are clean now: drop them, so that a reader maps the file
		 * afresh (see synth.c) and a 5 GB model does not crowd the page cache. */
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
			close(fd);
		}
	}
out:
	eng_gguf_writer_abort(w);
	eng_plan_free(p);
	free(o);
	free(out);
	free(rows);
	return rc;
}
