/* tests/fuzz/fuzz_llama2c.c: the llama2.c checkpoint loader (engine/model.c, llama2c.c) on
 * arbitrary bytes. eng_model_open takes a path, so the input goes to a memfd and the loader
 * opens /proc/self/fd/N: no disk churn.
 *
 * On success the info must agree with the mapping (every tensor view inside the file, the
 * classifier tied exactly when the header says so), and the first and last float of every
 * weight are read, so a view past the mapping faults under the fuzzer. */
#include <errno.h>
#include <string.h>

#include "engine.h"
#include "fuzz.h"
#include "model/model.h"

static volatile float sink;

static void touch(const struct eng_model *m, const float *t, uint64_t n)
{
	const uint8_t *base = m->map, *p = (const uint8_t *)t;
	FUZZ_CHECK(t != NULL);
	FUZZ_CHECK(p >= base && n * sizeof(float) <= m->map_len &&
		   (size_t)(p - base) <= m->map_len - n * sizeof(float));
	if (n)
		sink += t[0] + t[n - 1];
}

static void check(const struct eng_model *m, size_t size)
{
	const struct eng_model_info *in = eng_model_info(m);
	const struct eng_llama_weights *w = &m->w;
	FUZZ_CHECK(in->file_bytes == size && m->map_len == size);
	FUZZ_CHECK(in->dim > 0 && in->hidden_dim > 0 && in->n_layers > 0 && in->n_heads > 0 &&
		   in->n_kv_heads > 0 && in->vocab_size > 0 && in->seq_len > 0);
	FUZZ_CHECK(in->dim % in->n_heads == 0 && in->n_heads % in->n_kv_heads == 0);
	FUZZ_CHECK(in->weight_bytes <= in->file_bytes);
	FUZZ_CHECK(in->shared_classifier == (w->wcls == w->token_embedding));
	uint64_t dim = (uint64_t)in->dim, hid = (uint64_t)in->hidden_dim, L = (uint64_t)in->n_layers;
	uint64_t kv = dim / (uint64_t)in->n_heads * (uint64_t)in->n_kv_heads;
	uint64_t vocab = (uint64_t)in->vocab_size;
	touch(m, w->token_embedding, vocab * dim);
	touch(m, w->rms_att, L * dim);
	touch(m, w->wq, L * dim * dim);
	touch(m, w->wk, L * kv * dim);
	touch(m, w->wv, L * kv * dim);
	touch(m, w->wo, L * dim * dim);
	touch(m, w->rms_ffn, L * dim);
	touch(m, w->w1, L * hid * dim);
	touch(m, w->w2, L * dim * hid);
	touch(m, w->w3, L * hid * dim);
	touch(m, w->rms_final, dim);
	touch(m, w->wcls, vocab * dim);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_memfd_path(data, size);
	struct eng_model *m = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	int rc = eng_model_open(&m, path, NULL, &err);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOTSUP || rc == -EOVERFLOW ||
		   rc == -ENOMEM);
	if (rc) {
		FUZZ_CHECK(m == NULL);
		FUZZ_CHECK(err.text[0] && !strcmp(err.source, path));
		return 0;
	}
	if (eng_model_info(m)->format == ENG_FORMAT_LLAMA2C)
		check(m, size);
	eng_model_close(m);
	return 0;
}
