/* tests/engine/test_engine.c: decode sessions on a synthetic stories260K: hooks and their order,
 * engine-accounted bytes against the shapes, the same logits on 1 and 2 threads, the F16 KV
 * cache, and refused steps. */
#include <errno.h>
#include <unistd.h>

#include "engine.h"
#include "test.h"
#include "values.h"

#define STEPS 6
#define MAX_EVENTS 4096

static char dir[] = "/tmp/mw-test-engine-XXXXXX";
static char path[4200];

struct record {
	int n;
	int phase[MAX_EVENTS], layer[MAX_EVENTS], begin[MAX_EVENTS];
	int tokens, last_pos, last_token;
	struct eng_step_bytes bytes[STEPS];
};

static void on_phase(void *ctx, enum eng_phase phase, int layer, bool begin)
{
	struct record *r = ctx;
	if (r->n < MAX_EVENTS) {
		r->phase[r->n] = phase;
		r->layer[r->n] = layer;
		r->begin[r->n] = begin;
	}
	r->n++;
}

static void on_token(void *ctx, int pos, int token, const struct eng_step_bytes *b)
{
	struct record *r = ctx;
	if (pos < STEPS)
		r->bytes[pos] = *b;
	r->tokens++;
	r->last_pos = pos;
	r->last_token = token;
}

/* Runs STEPS greedy steps from BOS; copies every step's logits into out (STEPS x vocab). */
static int run(struct eng_model *m, const struct eng_session_options *o, float *out)
{
	struct eng_session *s = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	int rc = eng_session_new(&s, m, o, &err);
	if (rc) {
		fprintf(stderr, "session: %s\n", err.text);
		return rc;
	}
	int vocab = eng_model_info(m)->vocab_size, token = ENG_TOKEN_BOS;
	for (int pos = 0; pos < STEPS; pos++) {
		const float *logits = NULL;
		struct eng_step_bytes b;
		T_EQ_INT(eng_session_step(s, token, pos, &logits, &b), 0);
		memcpy(out + (size_t)pos * (size_t)vocab, logits, (size_t)vocab * sizeof(float));
		token = t_argmax(logits, vocab);
	}
	eng_session_free(s);
	return 0;
}

static void test_hooks_and_bytes(struct eng_model *m, int threads)
{
	const struct eng_model_info *info = eng_model_info(m);
	int vocab = info->vocab_size, L = info->n_layers;
	float *a = malloc(sizeof(float) * STEPS * (size_t)vocab);
	struct record *r = calloc(1, sizeof(*r));
	struct eng_hooks hooks = { .ctx = r, .phase = on_phase, .token = on_token };
	struct eng_session_options o = { .threads = threads, .hooks = &hooks };
	T_EQ_INT(run(m, &o, a), 0);

	/* Per step: attention and FFN of each layer, then the classifier; begin, end, in order. */
	T_EQ_INT(r->n, STEPS * (4 * L + 2));
	int e = 0;
	for (int step = 0; step < STEPS && e + 4 * L + 2 <= r->n; step++) {
		for (int l = 0; l < L; l++) {
			int want[4][3] = { { ENG_PHASE_ATTENTION, l, 1 }, { ENG_PHASE_ATTENTION, l, 0 },
					   { ENG_PHASE_FFN, l, 1 }, { ENG_PHASE_FFN, l, 0 } };
			for (int k = 0; k < 4; k++, e++) {
				T_EQ_INT(r->phase[e], want[k][0]);
				T_EQ_INT(r->layer[e], want[k][1]);
				T_EQ_INT(r->begin[e], want[k][2]);
			}
		}
		T_EQ_INT(r->phase[e], ENG_PHASE_CLASSIFIER);
		T_EQ_INT(r->layer[e], -1);
		T_EQ_INT(r->begin[e++], 1);
		T_EQ_INT(r->phase[e], ENG_PHASE_CLASSIFIER);
		T_EQ_INT(r->begin[e++], 0);
	}
	T_EQ_INT(r->tokens, STEPS);
	T_EQ_INT(r->last_pos, STEPS - 1);

	/* Bytes from the shapes: every weight once, the embedding as one row; the tied
	 * classifier is the whole embedding table, so a step reads the file's weights plus
	 * one embedding row. KV: a key and a value of kv_dim floats per layer and position. */
	uint64_t dim = (uint64_t)info->dim, kv_dim = dim / (uint64_t)info->n_heads *
						     (uint64_t)info->n_kv_heads;
	uint64_t hidden = (uint64_t)info->hidden_dim;
	uint64_t per_layer_att = 4 * (dim + 2 * dim * dim + 2 * kv_dim * dim);
	uint64_t per_layer_ffn = 4 * (dim + 3 * hidden * dim);
	uint64_t cls = 4 * (dim + (uint64_t)vocab * dim);
	for (int pos = 0; pos < STEPS; pos++) {
		const struct eng_step_bytes *b = &r->bytes[pos];
		T_EQ_U64(b->weights, info->weight_bytes + 4 * dim);
		T_EQ_U64(b->weights, 4 * dim + (uint64_t)L * (per_layer_att + per_layer_ffn) + cls);
		T_EQ_U64(b->kv_write, (uint64_t)L * kv_dim * 2 * 4);
		T_EQ_U64(b->kv_read, (uint64_t)(pos + 1) * (uint64_t)L * kv_dim * 2 * 4);
		T_EQ_U64(b->by_phase[ENG_PHASE_FFN], (uint64_t)L * per_layer_ffn);
		T_EQ_U64(b->by_phase[ENG_PHASE_CLASSIFIER], cls);
		T_EQ_U64(b->by_phase[ENG_PHASE_ATTENTION] + b->by_phase[ENG_PHASE_FFN] +
				 b->by_phase[ENG_PHASE_CLASSIFIER],
			 b->weights + b->kv_read + b->kv_write);
	}

	/* Hooks change nothing in the numbers, and neither do threads: each row's dot product
	 * is computed the same way whichever thread owns it. */
	float *b = malloc(sizeof(float) * STEPS * (size_t)vocab);
	struct eng_session_options plain = { .threads = 1 };
	T_EQ_INT(run(m, &plain, b), 0);
	T_ASSERT(!memcmp(a, b, sizeof(float) * STEPS * (size_t)vocab));
	free(a);
	free(b);
	free(r);
}

static void test_f16_cache(struct eng_model *m)
{
	int vocab = eng_model_info(m)->vocab_size;
	float *a = malloc(sizeof(float) * STEPS * (size_t)vocab);
	float *b = malloc(sizeof(float) * STEPS * (size_t)vocab);
	struct eng_session_options f32 = { .threads = 1 }, f16 = { .kv_type = ENG_KV_F16 };
	T_EQ_INT(run(m, &f32, a), 0);
	T_EQ_INT(run(m, &f16, b), 0);
	/* binary16 keeps 11 significant bits: logits agree to a few parts in a thousand. */
	double worst = 0, scale = 0;
	for (size_t i = 0; i < STEPS * (size_t)vocab; i++) {
		worst = fmax(worst, fabs((double)a[i] - b[i]));
		scale = fmax(scale, fabs((double)a[i]));
	}
	T_ASSERT(worst > 0.0); /* it really is a different cache */
	T_ASSERT(worst <= 5e-3 * scale);
	free(a);
	free(b);

	struct eng_session *s = NULL;
	T_EQ_INT(eng_session_new(&s, m, &f16, NULL), 0);
	struct eng_step_bytes bytes;
	const float *logits;
	T_EQ_INT(eng_session_step(s, 1, 0, &logits, &bytes), 0);
	const struct eng_model_info *info = eng_model_info(m);
	uint64_t kv_dim = (uint64_t)(info->dim / info->n_heads * info->n_kv_heads);
	T_EQ_U64(bytes.kv_write, (uint64_t)info->n_layers * kv_dim * 2 * 2);
	eng_session_free(s);
}

static void test_refused(struct eng_model *m)
{
	struct eng_session *s = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	struct eng_session_options bad = { .kernels = "bogus" };
	T_EQ_INT(eng_session_new(&s, m, &bad, &err), -ENOTSUP);
	T_ASSERT(s == NULL);
	T_CONTAINS(err.text, "kernels 'bogus'");
	T_CONTAINS(err.text, "ref");
	bad = (struct eng_session_options){ .kv_type = (enum eng_kv_type)9 };
	T_EQ_INT(eng_session_new(&s, m, &bad, &err), -ENOTSUP);

	struct eng_session_options o = { .ctx_len = 4, .kernels = "ref" };
	T_EQ_INT(eng_session_new(&s, m, &o, &err), 0);
	if (!s)
		return;
	T_EQ_STR(eng_session_kernels(s), "ref");
	const float *logits = NULL;
	int vocab = eng_model_info(m)->vocab_size;
	T_EQ_INT(eng_session_step(s, -1, 0, &logits, NULL), -EINVAL);
	T_EQ_INT(eng_session_step(s, vocab, 0, &logits, NULL), -EINVAL);
	T_EQ_INT(eng_session_step(s, 1, 1, &logits, NULL), -EINVAL); /* skips position 0 */
	T_EQ_INT(eng_session_step(s, 1, 0, &logits, NULL), 0);
	float first[512];
	memcpy(first, logits, sizeof(float) * (size_t)vocab);
	for (int pos = 1; pos < 4; pos++)
		T_EQ_INT(eng_session_step(s, 5, pos, &logits, NULL), 0);
	T_EQ_INT(eng_session_step(s, 5, 4, &logits, NULL), -EINVAL); /* past ctx_len */
	/* Going back recomputes: position 0 again gives the first logits. */
	T_EQ_INT(eng_session_step(s, 1, 0, &logits, NULL), 0);
	T_ASSERT(!memcmp(first, logits, sizeof(float) * (size_t)vocab));
	eng_session_free(s);
	eng_session_free(NULL);

	/* A context no machine holds: stories260K's f32 cache is 1280 B per position, so 2^31-1
	 * positions need 2.5 TiB. Refused with the reason, before any allocation. */
	s = NULL;
	o = (struct eng_session_options){ .ctx_len = 0x7fffffff, .kernels = "ref" };
	T_EQ_INT(eng_session_new(&s, m, &o, &err), -ENOMEM);
	T_ASSERT(s == NULL);
	T_CONTAINS(err.text, "KV cache of 2147483647 positions");
	T_CONTAINS(err.text, "shorter context");
}

int main(void)
{
	t_mkdtemp(dir);
	snprintf(path, sizeof(path), "%s/s260k.bin", dir);
	struct eng_error err;
	eng_error_clear(&err);
	struct eng_model *m = NULL;
	if (eng_synth_llama2c(path, "stories260K", 11, &err) ||
	    eng_model_open(&m, path, NULL, &err)) {
		fprintf(stderr, "%s: %s\n", err.source, err.text);
		return 1;
	}
	test_hooks_and_bytes(m, 1);
	test_hooks_and_bytes(m, 2);
	test_f16_cache(m);
	test_refused(m);
	eng_model_close(m);
	unlink(path);
	rmdir(dir);
	return t_done();
}
