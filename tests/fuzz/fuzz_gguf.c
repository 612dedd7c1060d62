/* tests/fuzz/fuzz_gguf.c: the GGUF reader (engine/gguf.c) on arbitrary bytes.
 *
 * On success every view the reader hands out is walked: each key through the typed getters,
 * each numeric array element by element (its first and last 64), each tensor's first and last
 * byte. The input is an exact-size copy, so a view past the end is an ASan report. Tensors
 * it accepts follow the GGUF writer's layout and start 8-byte aligned in the file. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "format/gguf.h"
#include "quants/quants.h"

static volatile uint8_t sink;

static void walk_array(const struct eng_gguf_value *v, int depth)
{
	FUZZ_CHECK(depth <= ENG_GGUF_MAX_DEPTH);
	if (v->arr.type == ENG_GGUF_STRING || v->arr.type == ENG_GGUF_ARRAY) {
		for (uint64_t i = 0; i < v->arr.n; i++) {
			const struct eng_gguf_value *it = &v->arr.items[i];
			FUZZ_CHECK(it->type == v->arr.type);
			if (it->type == ENG_GGUF_ARRAY)
				walk_array(it, depth + 1);
			else if (it->s.len)
				sink ^= (uint8_t)(it->s.ptr[0] ^ it->s.ptr[it->s.len - 1]);
		}
		return;
	}
	for (uint64_t i = 0; i < v->arr.n; i++) {
		if (i == 64 && v->arr.n > 128)
			i = v->arr.n - 64;
		int64_t iv = 0;
		double fv = 0;
		int ri = eng_gguf_arr_int(v, i, &iv), rf = eng_gguf_arr_float(v, i, &fv);
		FUZZ_CHECK(ri == 0 || ri == -EINVAL);
		FUZZ_CHECK(rf == 0 || rf == -EINVAL);
		sink ^= (uint8_t)iv;
	}
	int64_t iv = 0;
	FUZZ_CHECK(eng_gguf_arr_int(v, v->arr.n, &iv) == -EINVAL); /* one past the end */
}

static void walk(const struct eng_gguf *g, size_t size)
{
	struct eng_error err;
	FUZZ_CHECK(eng_gguf_file_bytes(g) == size);
	FUZZ_CHECK(eng_gguf_data_offset(g) <= size || eng_gguf_n_tensors(g) == 0);
	uint32_t a = eng_gguf_alignment(g);
	FUZZ_CHECK(a && !(a & (a - 1)));
	for (uint64_t i = 0; i < eng_gguf_n_kv(g); i++) {
		const char *key = NULL;
		const struct eng_gguf_value *v = eng_gguf_kv(g, i, &key);
		FUZZ_CHECK(v && key);
		FUZZ_CHECK(eng_gguf_find(g, key) == v); /* keys are unique */
		int64_t iv = 0;
		double fv = 0;
		bool bv = false;
		struct eng_gguf_str sv;
		const struct eng_gguf_value *av;
		eng_error_clear(&err);
		int rc = eng_gguf_get_int(g, key, &iv, &err);
		FUZZ_CHECK(rc == 0 || (rc == -EINVAL && err.text[0]));
		rc = eng_gguf_get_float(g, key, &fv, &err);
		FUZZ_CHECK(rc == 0 || (rc == -EINVAL && err.text[0]));
		rc = eng_gguf_get_bool(g, key, &bv, &err);
		FUZZ_CHECK(rc == 0 || (rc == -EINVAL && err.text[0]));
		rc = eng_gguf_get_str(g, key, &sv, &err);
		FUZZ_CHECK(rc == 0 || (rc == -EINVAL && err.text[0]));
		if (rc == 0 && sv.len)
			sink ^= (uint8_t)(sv.ptr[0] ^ sv.ptr[sv.len - 1]);
		rc = eng_gguf_get_arr(g, key, ENG_GGUF_TYPE_COUNT, &av, &err);
		FUZZ_CHECK(rc == 0 || (rc == -EINVAL && err.text[0]));
		if (rc == 0)
			walk_array(av, 1);
	}
	uint64_t expect = eng_gguf_data_offset(g); /* the writer's layout, in file order */
	for (uint64_t i = 0; i < eng_gguf_n_tensors(g); i++) {
		const struct eng_gguf_tensor *t = eng_gguf_tensor(g, i);
		FUZZ_CHECK(t && eng_gguf_tensor_find(g, t->name) == t);
		/* Accepted tensors neither overlap nor leave gaps, and start aligned in the file
		 * whatever general.alignment says. */
		FUZZ_CHECK(t->offset == expect);
		FUZZ_CHECK(t->offset % ENG_GGUF_TENSOR_ALIGN == 0);
		expect = t->offset + (t->n_bytes + a - 1) / a * a;
		FUZZ_CHECK(t->n_dims >= 1 && t->n_dims <= ENG_GGUF_MAX_DIMS);
		const struct krn_type_traits *tr = krn_type_traits(t->type);
		FUZZ_CHECK(tr != NULL);
		/* Elements and bytes must agree exactly: a wrapped product would make a huge tensor
		 * look small enough to fit. */
		uint64_t elems = 1, bytes = 0;
		for (uint32_t d = 0; d < ENG_GGUF_MAX_DIMS; d++)
			FUZZ_CHECK(!__builtin_mul_overflow(elems, t->ne[d], &elems));
		FUZZ_CHECK(elems == t->n_elements && elems % tr->block_size == 0);
		FUZZ_CHECK(!__builtin_mul_overflow(elems / tr->block_size, (uint64_t)tr->type_size,
						   &bytes));
		FUZZ_CHECK(bytes == t->n_bytes);
		FUZZ_CHECK(t->offset % a == 0);
		FUZZ_CHECK(t->offset <= size && t->n_bytes <= size - t->offset);
		FUZZ_CHECK((const uint8_t *)t->data == (const uint8_t *)eng_gguf_base(g) + t->offset);
		if (t->n_bytes) {
			const uint8_t *d = t->data;
			sink ^= (uint8_t)(d[0] ^ d[t->n_bytes - 1]);
		}
	}
	FUZZ_CHECK(eng_gguf_kv(g, eng_gguf_n_kv(g), NULL) == NULL);
	FUZZ_CHECK(eng_gguf_tensor(g, eng_gguf_n_tensors(g)) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = fuzz_copy(data, size);
	struct eng_gguf *g = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	int rc = eng_gguf_open_mem(&g, "fuzz.gguf", buf, size, &err);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (rc) {
		FUZZ_CHECK(g == NULL);
		FUZZ_CHECK(err.text[0] && !strcmp(err.source, "fuzz.gguf"));
	} else {
		walk(g, size);
	}
	eng_gguf_close(g);
	free(buf);
	return 0;
}
