/* tests/fuzz/fuzz_sparsity_map.c: the static sparsity map's reader (engine/sparsity_map.c:
 * what `generate --sparsity-map=MAP` loads) on arbitrary bytes (issue 28).
 *
 * The model is a fixed small shape (2 layers, hidden_dim 8). Contract: 0 with a map of that
 * shape whose tokens are 1 or more, every count at most tokens and a model line; or -EINVAL /
 * -EFBIG with no map and a message naming the file. */
#include <errno.h>
#include <string.h>

#include "engine.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct eng_model_info info = {
		.format = ENG_FORMAT_LLAMA2C, .arch = "llama", .dim = 4, .hidden_dim = 8,
		.n_layers = 2, .n_heads = 2, .n_kv_heads = 2, .vocab_size = 32, .seq_len = 16,
		.ffn_act = ENG_ACT_RELU,
	};
	const char *path = fuzz_memfd_path(data, size);
	struct eng_sparsity_map *m = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	int rc = eng_sparsity_map_load(&m, path, &info, &err);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -EFBIG);
	if (rc) {
		FUZZ_CHECK(m == NULL && err.text[0] && !strcmp(err.source, path));
		return 0;
	}
	FUZZ_CHECK(m && m->n_layers == 2 && m->hidden_dim == 8 && m->dim == 4);
	FUZZ_CHECK(m->tokens >= 1 && m->model[0]);
	for (int i = 0; i < 2 * 8; i++)
		FUZZ_CHECK(m->fired[i] <= m->tokens);
	eng_sparsity_map_free(m);
	return 0;
}
