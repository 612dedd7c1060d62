/* tests/engine/test_gguf.c: the GGUF reader and writer.
 *
 * 1. Round trip (runs anywhere): write a file with every metadata type, nested arrays and
 *    several tensor types, read it back, compare everything.
 * 2. Bad inputs, each made from that good file by changing a few bytes: every one must fail
 *    with an error naming the field, key or tensor, never crash, never allocate without
 *    bound (the ASan build of this test checks the last two).
 * 3. llama.cpp's files (../shared/fixtures/gguf, when present): every tensor's type, shape,
 *    size and offset as tensor_types.json lists them, and the metadata a loader needs.
 */
#include <errno.h>
#include <jansson.h>
#include <unistd.h>

#include "test.h"
#include "format/gguf.h"
#include "quants/quants.h"

static char tmpdir[] = "/tmp/mw-test-gguf-XXXXXX";

/* ---- 1. Round trip -------------------------------------------------------------------------- */

struct ttensor {
	const char *name;
	uint32_t type, n_dims;
	uint64_t ne[4];
	uint8_t *data;
	size_t n_bytes;
};

static struct ttensor tensors[] = {
	{ "token_embd.weight", KRN_TYPE_F32, 2, { 8, 3 }, NULL, 0 },
	{ "blk.0.a", KRN_TYPE_Q4_0, 2, { 64, 2 }, NULL, 0 },
	{ "blk.0.b", KRN_TYPE_Q6_K, 1, { 256 }, NULL, 0 },
	{ "blk.0.c", KRN_TYPE_F16, 3, { 4, 2, 2 }, NULL, 0 },
	{ "blk.0.d", KRN_TYPE_Q8_0, 2, { 32, 3 }, NULL, 0 },
	{ "blk.0.e", KRN_TYPE_BF16, 1, { 5 }, NULL, 0 },
	{ "blk.0.f", KRN_TYPE_Q4_K, 4, { 256, 1, 2, 1 }, NULL, 0 },
	{ "output.weight", KRN_TYPE_Q5_0, 2, { 32, 4 }, NULL, 0 },
};
#define N_TENSORS (sizeof(tensors) / sizeof(tensors[0]))

static const char *const words[] = { "<unk>", "h\xc3\xa9llo", "", "a b" };

static int write_good(const char *path, uint32_t alignment)
{
	struct eng_gguf_writer *w = NULL;
	struct eng_error err;
	int rc = eng_gguf_writer_new(&w, path, alignment, &err);
	if (rc) {
		fprintf(stderr, "writer_new: %s\n", err.text);
		return rc;
	}
	static const uint8_t u8s[] = { 1, 2, 255 };
	static const int32_t i32s[] = { -1, 0, 2147483647 };
	static const float f32s[] = { 0.5f, -2.0f };
	static const double f64s[] = { 1e300 };
	static const uint8_t bools[] = { 1, 0, 1 };
	static const int64_t i64s[] = { INT64_MIN, 7 };
	struct eng_gguf_value strs[4], inner[3], inner_strs[2], nested2[1];
	for (int i = 0; i < 4; i++)
		strs[i] = (struct eng_gguf_value){ .type = ENG_GGUF_STRING,
						   .s = { words[i], strlen(words[i]) } };
	for (int i = 0; i < 2; i++)
		inner_strs[i] = strs[i];
	/* [[1, 2, 255], ["<unk>", "héllo"], [[0.5, -2]]] */
	inner[0] = (struct eng_gguf_value){ .type = ENG_GGUF_ARRAY,
					    .arr = { ENG_GGUF_UINT8, 3, u8s, NULL } };
	inner[1] = (struct eng_gguf_value){ .type = ENG_GGUF_ARRAY,
					    .arr = { ENG_GGUF_STRING, 2, NULL, inner_strs } };
	nested2[0] = (struct eng_gguf_value){ .type = ENG_GGUF_ARRAY,
					      .arr = { ENG_GGUF_FLOAT32, 2, f32s, NULL } };
	inner[2] = (struct eng_gguf_value){ .type = ENG_GGUF_ARRAY,
					    .arr = { ENG_GGUF_ARRAY, 1, NULL, nested2 } };
	struct {
		const char *key;
		struct eng_gguf_value v;
	} kvs[] = {
		{ "general.architecture", { .type = ENG_GGUF_STRING, .s = { "llama", 5 } } },
		{ "t.u8", { .type = ENG_GGUF_UINT8, .u = 200 } },
		{ "t.i8", { .type = ENG_GGUF_INT8, .i = -100 } },
		{ "t.u16", { .type = ENG_GGUF_UINT16, .u = 65535 } },
		{ "t.i16", { .type = ENG_GGUF_INT16, .i = -32768 } },
		{ "t.u32", { .type = ENG_GGUF_UINT32, .u = 4000000000u } },
		{ "t.i32", { .type = ENG_GGUF_INT32, .i = -2000000000 } },
		{ "t.f32", { .type = ENG_GGUF_FLOAT32, .f = 0.1f } },
		{ "t.bool", { .type = ENG_GGUF_BOOL, .b = true } },
		{ "t.u64", { .type = ENG_GGUF_UINT64, .u = UINT64_MAX } },
		{ "t.i64", { .type = ENG_GGUF_INT64, .i = INT64_MIN } },
		{ "t.f64", { .type = ENG_GGUF_FLOAT64, .f = -1.0 / 3.0 } },
		{ "t.arr.u8", { .type = ENG_GGUF_ARRAY, .arr = { ENG_GGUF_UINT8, 3, u8s, NULL } } },
		{ "t.arr.i32", { .type = ENG_GGUF_ARRAY, .arr = { ENG_GGUF_INT32, 3, i32s, NULL } } },
		{ "t.arr.f32", { .type = ENG_GGUF_ARRAY, .arr = { ENG_GGUF_FLOAT32, 2, f32s, NULL } } },
		{ "t.arr.f64", { .type = ENG_GGUF_ARRAY, .arr = { ENG_GGUF_FLOAT64, 1, f64s, NULL } } },
		{ "t.arr.bool", { .type = ENG_GGUF_ARRAY, .arr = { ENG_GGUF_BOOL, 3, bools, NULL } } },
		{ "t.arr.i64", { .type = ENG_GGUF_ARRAY, .arr = { ENG_GGUF_INT64, 2, i64s, NULL } } },
		{ "t.arr.empty", { .type = ENG_GGUF_ARRAY, .arr = { ENG_GGUF_UINT32, 0, NULL, NULL } } },
		{ "tokenizer.ggml.tokens",
		  { .type = ENG_GGUF_ARRAY, .arr = { ENG_GGUF_STRING, 4, NULL, strs } } },
		{ "t.nested", { .type = ENG_GGUF_ARRAY, .arr = { ENG_GGUF_ARRAY, 3, NULL, inner } } },
	};
	for (size_t i = 0; i < sizeof(kvs) / sizeof(kvs[0]) && !rc; i++)
		rc = eng_gguf_writer_kv(w, kvs[i].key, &kvs[i].v);
	for (size_t i = 0; i < N_TENSORS && !rc; i++)
		rc = eng_gguf_writer_tensor(w, tensors[i].name, tensors[i].type, tensors[i].n_dims,
					    tensors[i].ne);
	/* Data in uneven pieces, to exercise the streaming. */
	for (size_t i = 0; i < N_TENSORS && !rc; i++) {
		size_t half = tensors[i].n_bytes / 3;
		rc = eng_gguf_writer_data(w, tensors[i].data, half);
		if (!rc)
			rc = eng_gguf_writer_data(w, tensors[i].data + half, tensors[i].n_bytes - half);
	}
	if (rc) {
		eng_gguf_writer_commit(w, &err);
		fprintf(stderr, "writer: %s\n", err.text);
		return rc;
	}
	rc = eng_gguf_writer_commit(w, &err);
	if (rc)
		fprintf(stderr, "commit: %s\n", err.text);
	return rc;
}

static void make_tensor_data(void)
{
	for (size_t i = 0; i < N_TENSORS; i++) {
		struct ttensor *t = &tensors[i];
		uint64_t n = 1;
		for (uint32_t d = 0; d < t->n_dims; d++)
			n *= t->ne[d];
		float *f = malloc(n * sizeof(float));
		for (uint64_t k = 0; k < n; k++)
			f[k] = (float)sin((double)(k + 7 * i)) * 0.1f;
		t->n_bytes = krn_row_size(t->type, n);
		t->data = malloc(t->n_bytes);
		krn_type_traits(t->type)->from_float_ref(f, t->data, n);
		free(f);
	}
}

static bool str_is(struct eng_gguf_str s, const char *want)
{
	return s.len == strlen(want) && !memcmp(s.ptr, want, s.len);
}

static void check_round_trip_file(const char *path, uint32_t alignment)
{
	struct eng_gguf *g = NULL;
	struct eng_error err;
	int rc = eng_gguf_open(&g, path, NULL, &err);
	T_EQ_INT(rc, 0);
	if (rc) {
		fprintf(stderr, "%s: %s\n", path, err.text);
		return;
	}
	T_EQ_INT(eng_gguf_version(g), 3);
	T_EQ_INT(eng_gguf_alignment(g), alignment);
	T_EQ_U64(eng_gguf_data_offset(g) % alignment, 0);
	int64_t iv = 0;
	double fv = 0;
	bool bv = false;
	struct eng_gguf_str sv;
	T_EQ_INT(eng_gguf_get_str(g, "general.architecture", &sv, &err), 0);
	T_ASSERT(str_is(sv, "llama"));
	T_EQ_INT(eng_gguf_get_int(g, "t.u8", &iv, &err), 0);
	T_EQ_INT(iv, 200);
	T_EQ_INT(eng_gguf_get_int(g, "t.i8", &iv, &err), 0);
	T_EQ_INT(iv, -100);
	T_EQ_INT(eng_gguf_get_int(g, "t.u16", &iv, &err), 0);
	T_EQ_INT(iv, 65535);
	T_EQ_INT(eng_gguf_get_int(g, "t.i16", &iv, &err), 0);
	T_EQ_INT(iv, -32768);
	T_EQ_INT(eng_gguf_get_int(g, "t.u32", &iv, &err), 0);
	T_EQ_INT(iv, 4000000000ll);
	T_EQ_INT(eng_gguf_get_int(g, "t.i32", &iv, &err), 0);
	T_EQ_INT(iv, -2000000000);
	T_EQ_INT(eng_gguf_get_float(g, "t.f32", &fv, &err), 0);
	T_NEAR(fv, 0.1f, 0);
	T_EQ_INT(eng_gguf_get_bool(g, "t.bool", &bv, &err), 0);
	T_ASSERT(bv);
	T_EQ_U64(eng_gguf_find(g, "t.u64")->u, UINT64_MAX);
	T_EQ_INT(eng_gguf_get_int(g, "t.u64", &iv, &err), -EINVAL); /* does not fit int64 */
	T_CONTAINS(err.text, "t.u64");
	T_EQ_INT(eng_gguf_get_int(g, "t.i64", &iv, &err), 0);
	T_ASSERT(iv == INT64_MIN);
	T_EQ_INT(eng_gguf_get_float(g, "t.f64", &fv, &err), 0);
	T_NEAR(fv, -1.0 / 3.0, 0);
	T_EQ_INT(eng_gguf_get_int(g, "no.such.key", &iv, &err), -ENOENT);
	T_EQ_INT(eng_gguf_get_str(g, "t.u8", &sv, &err), -EINVAL);
	T_CONTAINS(err.text, "'t.u8' has type uint8, expected string");

	const struct eng_gguf_value *a = NULL;
	T_EQ_INT(eng_gguf_get_arr(g, "t.arr.u8", ENG_GGUF_UINT8, &a, &err), 0);
	T_EQ_INT(eng_gguf_arr_int(a, 2, &iv), 0);
	T_EQ_INT(iv, 255);
	T_EQ_INT(eng_gguf_get_arr(g, "t.arr.i32", ENG_GGUF_INT32, &a, &err), 0);
	T_EQ_INT(eng_gguf_arr_int(a, 0, &iv), 0);
	T_EQ_INT(iv, -1);
	T_EQ_INT(eng_gguf_arr_int(a, 2, &iv), 0);
	T_EQ_INT(iv, 2147483647);
	T_EQ_INT(eng_gguf_arr_int(a, 3, &iv), -EINVAL); /* past the end */
	T_EQ_INT(eng_gguf_get_arr(g, "t.arr.f32", ENG_GGUF_FLOAT32, &a, &err), 0);
	T_EQ_INT(eng_gguf_arr_float(a, 1, &fv), 0);
	T_NEAR(fv, -2.0, 0);
	T_EQ_INT(eng_gguf_get_arr(g, "t.arr.f64", ENG_GGUF_FLOAT64, &a, &err), 0);
	T_EQ_INT(eng_gguf_arr_float(a, 0, &fv), 0);
	T_NEAR(fv, 1e300, 0);
	T_EQ_INT(eng_gguf_get_arr(g, "t.arr.bool", ENG_GGUF_BOOL, &a, &err), 0);
	T_EQ_U64(a->arr.n, 3);
	T_EQ_INT(eng_gguf_get_arr(g, "t.arr.i64", ENG_GGUF_INT64, &a, &err), 0);
	T_EQ_INT(eng_gguf_arr_int(a, 0, &iv), 0);
	T_ASSERT(iv == INT64_MIN);
	T_EQ_INT(eng_gguf_get_arr(g, "t.arr.empty", ENG_GGUF_UINT32, &a, &err), 0);
	T_EQ_U64(a->arr.n, 0);
	T_EQ_INT(eng_gguf_get_arr(g, "tokenizer.ggml.tokens", ENG_GGUF_STRING, &a, &err), 0);
	T_EQ_U64(a->arr.n, 4);
	for (int i = 0; i < 4; i++)
		T_ASSERT(str_is(a->arr.items[i].s, words[i]));
	T_EQ_INT(eng_gguf_get_arr(g, "tokenizer.ggml.tokens", ENG_GGUF_INT32, &a, &err), -EINVAL);
	T_CONTAINS(err.text, "array of string, expected an array of int32");
	T_EQ_INT(eng_gguf_get_arr(g, "t.nested", ENG_GGUF_ARRAY, &a, &err), 0);
	T_EQ_U64(a->arr.n, 3);
	T_EQ_INT(eng_gguf_arr_int(&a->arr.items[0], 1, &iv), 0);
	T_EQ_INT(iv, 2);
	T_ASSERT(str_is(a->arr.items[1].arr.items[1].s, words[1]));
	const struct eng_gguf_value *deep = &a->arr.items[2].arr.items[0];
	T_EQ_INT(deep->arr.type, ENG_GGUF_FLOAT32);
	T_EQ_INT(eng_gguf_arr_float(deep, 0, &fv), 0);
	T_NEAR(fv, 0.5, 0);

	T_EQ_U64(eng_gguf_n_tensors(g), N_TENSORS);
	for (size_t i = 0; i < N_TENSORS; i++) {
		const struct eng_gguf_tensor *t = eng_gguf_tensor(g, i);
		T_EQ_STR(t->name, tensors[i].name);
		T_ASSERT(eng_gguf_tensor_find(g, tensors[i].name) == t);
		T_EQ_INT(t->type, tensors[i].type);
		T_EQ_INT(t->n_dims, tensors[i].n_dims);
		for (uint32_t d = 0; d < 4; d++)
			T_EQ_U64(t->ne[d], d < tensors[i].n_dims ? tensors[i].ne[d] : 1);
		T_EQ_U64(t->n_bytes, tensors[i].n_bytes);
		T_EQ_U64(t->offset % alignment, 0);
		T_ASSERT(t->data == (const uint8_t *)eng_gguf_base(g) + t->offset);
		T_ASSERT(!memcmp(t->data, tensors[i].data, tensors[i].n_bytes));
	}
	T_ASSERT(eng_gguf_tensor_find(g, "missing") == NULL);
	eng_gguf_close(g);
}

static void check_writer_errors(void)
{
	char path[600];
	struct eng_gguf_writer *w = NULL;
	struct eng_error err;
	uint64_t ne[2] = { 33, 1 };
	snprintf(path, sizeof(path), "%s/bad.gguf", tmpdir);
	T_EQ_INT(eng_gguf_writer_new(&w, path, 48, &err), -EINVAL);
	T_CONTAINS(err.text, "power of two");
	T_EQ_INT(eng_gguf_writer_new(&w, path, 0, &err), 0);
	T_EQ_INT(eng_gguf_writer_tensor(w, "x", KRN_TYPE_Q4_0, 2, ne), -EINVAL);
	T_EQ_INT(eng_gguf_writer_commit(w, &err), -EINVAL);
	T_CONTAINS(err.text, "'x'");
	T_ASSERT(access(path, F_OK) != 0); /* nothing left behind */
	/* Too few bytes: commit refuses and leaves no file. */
	ne[0] = 32;
	T_EQ_INT(eng_gguf_writer_new(&w, path, 0, &err), 0);
	T_EQ_INT(eng_gguf_writer_tensor(w, "x", KRN_TYPE_F32, 2, ne), 0);
	T_EQ_INT(eng_gguf_writer_data(w, "abcd", 4), 0);
	T_EQ_INT(eng_gguf_writer_commit(w, &err), -EINVAL);
	T_CONTAINS(err.text, "4 of its 128 bytes");
	T_ASSERT(access(path, F_OK) != 0);
}

/* ---- 2. Bad inputs ----------------------------------------------------------------------------- */

static uint8_t *good;
static size_t good_size;

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(*n ? *n : 1);
	if (fread(b, 1, *n, f) != *n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

/* Offset of the first occurrence of a GGUF string (length + bytes) in the good file. */
static size_t find_str(const char *s)
{
	size_t len = strlen(s);
	for (size_t i = 8; i + len <= good_size; i++) {
		uint64_t n;
		memcpy(&n, good + i - 8, 8);
		if (n == len && !memcmp(good + i, s, len))
			return i - 8;
	}
	fprintf(stderr, "string '%s' not in the good file\n", s);
	exit(1);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* Parses buf[0..n) and checks it fails with an error containing every needle. */
static void expect_bad_at(int line, const uint8_t *buf, size_t n, const char *needle1,
			  const char *needle2)
{
	struct eng_gguf *g = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	int rc = eng_gguf_open_mem(&g, "bad.gguf", buf, n, &err);
	t_checks++;
	if (rc == 0) {
		T_FAIL_AT(__FILE__, line, "a bad file parsed (expected \"%s\")", needle1);
		eng_gguf_close(g);
		return;
	}
	if (!strstr(err.text, needle1) || (needle2 && !strstr(err.text, needle2)))
		T_FAIL_AT(__FILE__, line, "error \"%s\" lacks \"%s\"%s%s", err.text, needle1,
			  needle2 ? " or " : "", needle2 ? needle2 : "");
	if (strcmp(err.source, "bad.gguf"))
		T_FAIL_AT(__FILE__, line, "error source is \"%s\"", err.source);
}
#define EXPECT_BAD(buf, n, a, b) expect_bad_at(__LINE__, buf, n, a, b)

static void check_bad_inputs(void)
{
	uint8_t *b = malloc(good_size + 4096);
	struct eng_gguf *g = NULL;
	struct eng_error err;
	T_EQ_INT(eng_gguf_open_mem(&g, "good.gguf", good, good_size, &err), 0);
	uint64_t data_off = g ? eng_gguf_data_offset(g) : 0, last_end = 0;
	if (g) {
		const struct eng_gguf_tensor *last = eng_gguf_tensor(g, eng_gguf_n_tensors(g) - 1);
		last_end = last->offset + last->n_bytes;
	}
	eng_gguf_close(g);

	/* Truncated at every byte of the header (and tensor infos): always an error that says
	 * so and names what it was reading. */
	size_t bad_trunc = 0;
	for (size_t n = 0; n < data_off; n++) {
		g = NULL;
		if (eng_gguf_open_mem(&g, "t.gguf", good, n, &err) == 0 ||
		    (!strstr(err.text, "truncated") && !strstr(err.text, "past the end") &&
		     !strstr(err.text, "cannot fit"))) {
			if (bad_trunc++ < 5)
				fprintf(stderr, "truncated to %zu: \"%s\"\n", n, g ? "parsed" : err.text);
			eng_gguf_close(g);
		}
	}
	T_EQ_U64(bad_trunc, 0);
	EXPECT_BAD(good, 2, "magic", NULL);
	EXPECT_BAD(good, 6, "truncated: version", NULL);
	EXPECT_BAD(good, 12, "truncated: n_tensors", NULL);
	EXPECT_BAD(good, 20, "truncated: n_kv", NULL);
	EXPECT_BAD(good, 28, "key 0 name", NULL);
	size_t arch = find_str("general.architecture");
	EXPECT_BAD(good, arch + 8 + 20 + 2, "key 'general.architecture' value type", NULL);
	size_t tens = find_str("blk.0.b");
	EXPECT_BAD(good, tens + 8 + 7 + 2, "tensor 'blk.0.b' n_dims", NULL);
	EXPECT_BAD(good, tens + 8 + 7 + 4 + 3, "tensor 'blk.0.b' ne[0]", NULL);
	EXPECT_BAD(good, tens + 8 + 7 + 4 + 8 + 1, "tensor 'blk.0.b' type", NULL);
	EXPECT_BAD(good, tens + 8 + 7 + 4 + 8 + 4 + 5, "tensor 'blk.0.b' offset", NULL);

	/* Tensor data past the end of the file: the last tensor, then a file cut in the middle. */
	EXPECT_BAD(good, last_end - 1, "'output.weight'", "extends past the end");
	EXPECT_BAD(good, data_off + 40, "extends past the end", NULL);

	/* Bad magic, version 1, a big-endian file. */
	memcpy(b, good, good_size);
	b[0] = 'X';
	EXPECT_BAD(b, good_size, "not a GGUF file", NULL);
	memcpy(b, good, good_size);
	put32(b + 4, 1);
	EXPECT_BAD(b, good_size, "version 1", NULL);
	put32(b + 4, 0x03000000);
	EXPECT_BAD(b, good_size, "big-endian", NULL);

	/* Counts the file cannot hold. */
	memcpy(b, good, good_size);
	put64(b + 8, 1ull << 63);
	EXPECT_BAD(b, good_size, "9223372036854775808 tensors", "cannot fit");
	memcpy(b, good, good_size);
	put64(b + 16, UINT64_MAX / 2);
	EXPECT_BAD(b, good_size, "key/values", "cannot fit");

	/* A string length past the end of the file, in a key and in a value. */
	memcpy(b, good, good_size);
	put64(b + arch, 1ull << 40);
	EXPECT_BAD(b, good_size, "key 1 name", "string length 1099511627776");
	memcpy(b, good, good_size);
	put64(b + arch + 8 + 20 + 4, UINT64_MAX);
	EXPECT_BAD(b, good_size, "key 'general.architecture'", "string length");

	/* An array of 2^62 elements, of fixed size and of strings. */
	size_t arr = find_str("t.arr.i32") + 8 + 9; /* value type, element type, count */
	memcpy(b, good, good_size);
	put64(b + arr + 8, 1ull << 62);
	EXPECT_BAD(b, good_size, "key 't.arr.i32'", "array of 4611686018427387904 int32");
	size_t toks = find_str("tokenizer.ggml.tokens") + 8 + 21;
	memcpy(b, good, good_size);
	put64(b + toks + 8, 1ull << 62);
	EXPECT_BAD(b, good_size, "key 'tokenizer.ggml.tokens'", "cannot fit");

	/* Unknown value types: a key's, and an array element's. */
	memcpy(b, good, good_size);
	put32(b + arr, 13);
	EXPECT_BAD(b, good_size, "key 't.arr.i32' has unknown value type 13", NULL);
	memcpy(b, good, good_size);
	put32(b + arr + 4, 13);
	EXPECT_BAD(b, good_size, "key 't.arr.i32'", "unknown array element type 13");

	/* A bool that is neither 0 nor 1. */
	size_t bl = find_str("t.bool") + 8 + 6 + 4;
	memcpy(b, good, good_size);
	b[bl] = 7;
	EXPECT_BAD(b, good_size, "key 't.bool'", "bool");

	/* A duplicate key: rename t.u16 to t.i16 (the i16 key comes later). */
	memcpy(b, good, good_size);
	b[find_str("t.u16") + 8 + 2] = 'i';
	EXPECT_BAD(b, good_size, "key 't.i16' appears twice", NULL);

	/* Tensor infos: unknown ggml type, too many dims, shape overflow, misaligned offset,
	 * duplicate name. blk.0.b is 1-D: name, n_dims, ne[0], type, offset. */
	size_t ti = tens + 8 + 7;
	memcpy(b, good, good_size);
	put32(b + ti + 4 + 8, 99);
	EXPECT_BAD(b, good_size, "tensor 'blk.0.b' has ggml type 99", NULL);
	memcpy(b, good, good_size);
	put32(b + ti, 5);
	EXPECT_BAD(b, good_size, "tensor 'blk.0.b' has 5 dimensions", NULL);
	size_t ta = find_str("blk.0.a") + 8 + 7; /* 2-D q4_0 [64, 2] */
	memcpy(b, good, good_size);
	put64(b + ta + 4, 1ull << 40);
	put64(b + ta + 4 + 8, 1ull << 40);
	EXPECT_BAD(b, good_size, "tensor 'blk.0.a'", "shape overflows");
	memcpy(b, good, good_size);
	put64(b + ta + 4, 48); /* not a multiple of q4_0's 32 */
	EXPECT_BAD(b, good_size, "tensor 'blk.0.a'", "not a multiple of q4_0's block of 32");
	memcpy(b, good, good_size);
	uint64_t off;
	memcpy(&off, b + ti + 4 + 8 + 4, 8);
	put64(b + ti + 4 + 8 + 4, off + 4);
	EXPECT_BAD(b, good_size, "tensor 'blk.0.b'", "not a multiple of the alignment");
	memcpy(b, good, good_size);
	put64(b + ti + 4 + 8 + 4, 1ull << 60);
	EXPECT_BAD(b, good_size, "tensor 'blk.0.b'", "extends past the end");
	memcpy(b, good, good_size);
	b[tens + 8 + 6] = 'a'; /* blk.0.b -> blk.0.a */
	EXPECT_BAD(b, good_size, "tensor 'blk.0.a' appears twice", NULL);

	/* general.alignment of the wrong type, and not a power of two. */
	size_t al = find_str("general.alignment") + 8 + 17;
	memcpy(b, good, good_size);
	put32(b + al, ENG_GGUF_INT32);
	EXPECT_BAD(b, good_size, "'general.alignment' has type int32, expected uint32", NULL);
	memcpy(b, good, good_size);
	put32(b + al + 4, 48);
	EXPECT_BAD(b, good_size, "'general.alignment' is 48", "power of two");

	/* A nested-array depth bomb: one key whose value is an array of an array of ... 100000
	 * deep. It must stop at the depth limit, not recurse until the stack ends. */
	size_t depth = 100000, n = 0;
	uint8_t *bomb = malloc(24 + 8 + 4 + 4 + depth * 12 + 64);
	memcpy(bomb, "GGUF", 4);
	put32(bomb + 4, 3);
	put64(bomb + 8, 0);
	put64(bomb + 16, 1);
	n = 24;
	put64(bomb + n, 4);
	memcpy(bomb + n + 8, "bomb", 4);
	put32(bomb + n + 12, ENG_GGUF_ARRAY);
	n += 16;
	for (size_t i = 0; i < depth; i++, n += 12) {
		put32(bomb + n, ENG_GGUF_ARRAY);
		put64(bomb + n + 4, 1);
	}
	EXPECT_BAD(bomb, n, "key 'bomb'", "nested deeper than 8");
	free(bomb);
	free(b);

	/* And through the file path: a missing file, a truncated file on disk. */
	char path[600];
	g = NULL;
	snprintf(path, sizeof(path), "%s/missing.gguf", tmpdir);
	T_EQ_INT(eng_gguf_open(&g, path, NULL, &err), -ENOENT);
	T_EQ_STR(err.source, path);
	snprintf(path, sizeof(path), "%s/cut.gguf", tmpdir);
	FILE *f = fopen(path, "wb");
	fwrite(good, 1, good_size / 2, f);
	fclose(f);
	T_EQ_INT(eng_gguf_open(&g, path, NULL, &err), -EINVAL);
	T_EQ_STR(err.source, path);
	T_ASSERT(g == NULL);
	unlink(path);
	f = fopen(path, "wb");
	fclose(f);
	T_EQ_INT(eng_gguf_open(&g, path, NULL, &err), -EINVAL);
	T_CONTAINS(err.text, "magic");
	unlink(path);
}

/* Random damage: a few bytes of the header changed, many times over. Nothing to compare,
 * only that every outcome is a clean parse or a clean error (ASan builds watch the rest). */
static void check_random_damage(void)
{
	uint8_t *b = malloc(good_size);
	uint64_t r = 0x9e3779b97f4a7c15ull, parsed = 0, failed = 0;
	for (int round = 0; round < 3000; round++) {
		memcpy(b, good, good_size);
		int flips = 1 + round % 4;
		for (int k = 0; k < flips; k++) {
			r = r * 6364136223846793005ull + 1442695040888963407ull;
			size_t at = (size_t)(r >> 33) % 1400; /* the header and tensor infos */
			b[at % good_size] = (uint8_t)(r >> 24);
		}
		struct eng_gguf *g = NULL;
		struct eng_error err;
		int rc = eng_gguf_open_mem(&g, "damaged.gguf", b, good_size, &err);
		if (rc == 0) {
			parsed++;
			for (uint64_t i = 0; i < eng_gguf_n_tensors(g); i++) {
				const struct eng_gguf_tensor *t = eng_gguf_tensor(g, i);
				T_ASSERT(t->offset + t->n_bytes <= good_size);
			}
			eng_gguf_close(g);
		} else {
			failed++;
			T_ASSERT(rc == -EINVAL && err.text[0]);
		}
	}
	printf("  3000 damaged headers: %" PRIu64 " parsed, %" PRIu64 " rejected with an error\n",
	       parsed, failed);
	free(b);
}

/* ---- 3. llama.cpp's files ---------------------------------------------------------------------- */

static void check_fixture_model(const char *dir, const char *file, json_t *want)
{
	char path[4400];
	struct eng_gguf *g = NULL;
	struct eng_error err;
	snprintf(path, sizeof(path), "%s/models/%s", dir, file);
	int rc = eng_gguf_open(&g, path, NULL, &err);
	T_EQ_INT(rc, 0);
	if (rc) {
		fprintf(stderr, "%s: %s\n", path, err.text);
		return;
	}
	json_t *wt = json_object_get(want, "tensors");
	T_EQ_U64(eng_gguf_n_tensors(g), json_object_size(wt));
	T_EQ_INT(eng_gguf_alignment(g), 32);
	const char *name;
	json_t *jt;
	json_object_foreach(wt, name, jt) {
		const struct eng_gguf_tensor *t = eng_gguf_tensor_find(g, name);
		T_ASSERT(t != NULL);
		if (!t)
			continue;
		int type = krn_type_from_name(json_string_value(json_object_get(jt, "type")));
		T_EQ_INT(t->type, type);
		json_t *ne = json_object_get(jt, "ne");
		T_EQ_U64(t->n_dims, json_array_size(ne));
		for (size_t d = 0; d < json_array_size(ne); d++)
			T_EQ_U64(t->ne[d], json_integer_value(json_array_get(ne, d)));
		T_EQ_U64(t->n_bytes, json_integer_value(json_object_get(jt, "n_bytes")));
		T_EQ_U64(t->offset, json_integer_value(json_object_get(jt, "offset")));
	}
	bool falcon = strstr(file, "falcon") != NULL;
	struct eng_gguf_str arch = { 0 };
	T_EQ_INT(eng_gguf_get_str(g, "general.architecture", &arch, &err), 0);
	T_ASSERT(str_is(arch, falcon ? "falcon" : "llama"));
	int64_t ft = -1;
	T_EQ_INT(eng_gguf_get_int(g, "general.file_type", &ft, &err), 0);
	T_EQ_INT(ft, json_integer_value(json_object_get(want, "file_type")));
	const struct eng_gguf_value *a = NULL;
	T_EQ_INT(eng_gguf_get_arr(g, "tokenizer.ggml.tokens", ENG_GGUF_STRING, &a, &err), 0);
	if (a) {
		T_EQ_U64(a->arr.n, 512);
		T_ASSERT(str_is(a->arr.items[falcon ? 11 : 1].s, falcon ? "<|endoftext|>" : "<s>"));
	}
	T_EQ_INT(eng_gguf_get_arr(g, "tokenizer.ggml.token_type", ENG_GGUF_INT32, &a, &err), 0);
	int64_t tt = -1;
	T_EQ_INT(eng_gguf_arr_int(a, falcon ? 11 : 3, &tt), 0);
	T_EQ_INT(tt, falcon ? 3 : 6); /* CONTROL / BYTE, per the fixtures' README */
	if (falcon) {
		T_EQ_INT(eng_gguf_get_arr(g, "tokenizer.ggml.merges", ENG_GGUF_STRING, &a, &err), 0);
		T_EQ_U64(a->arr.n, 244);
	} else {
		double sc = 0;
		T_EQ_INT(eng_gguf_get_arr(g, "tokenizer.ggml.scores", ENG_GGUF_FLOAT32, &a, &err), 0);
		T_EQ_INT(eng_gguf_arr_float(a, 300, &sc), 0);
		T_NEAR(sc, -(300 - 259), 0);
		int64_t bos = -1;
		T_EQ_INT(eng_gguf_get_int(g, "tokenizer.ggml.bos_token_id", &bos, &err), 0);
		T_EQ_INT(bos, 1);
	}
	eng_gguf_close(g);
}

static void check_fixtures(void)
{
	const char *root = getenv("MEMWALL_SHARED");
	char dir[4096], path[4200];
	struct stat st;
	snprintf(dir, sizeof(dir), "%s/fixtures/gguf", root ? root : "");
	snprintf(path, sizeof(path), "%s/tensor_types.json", dir);
	if (!root || stat(path, &st)) {
		printf("NOTE: %s is absent: llama.cpp's files not checked (the rest ran)\n", path);
		return;
	}
	json_error_t jerr;
	json_t *all = json_load_file(path, 0, &jerr);
	T_ASSERT(all != NULL);
	if (!all)
		return;
	T_EQ_U64(json_object_size(all), 17);
	const char *file;
	json_t *want;
	json_object_foreach(all, file, want) check_fixture_model(dir, file, want);
	printf("  %zu llama.cpp files: every tensor's type, shape, size and offset as listed\n",
	       json_object_size(all));
	json_decref(all);
}

int main(void)
{
	char path[600];
	t_mkdtemp(tmpdir);
	make_tensor_data();
	snprintf(path, sizeof(path), "%s/good.gguf", tmpdir);
	T_EQ_INT(write_good(path, 32), 0);
	check_round_trip_file(path, 32);
	good = slurp(path, &good_size);
	T_ASSERT(good != NULL);
	snprintf(path, sizeof(path), "%s/align64.gguf", tmpdir);
	T_EQ_INT(write_good(path, 64), 0);
	check_round_trip_file(path, 64);
	unlink(path);
	check_writer_errors();
	/* The bad-input cases edit a file that has a general.alignment key: use the 64 one. */
	if (good) {
		free(good);
		snprintf(path, sizeof(path), "%s/align64.gguf", tmpdir);
		T_EQ_INT(write_good(path, 64), 0);
		good = slurp(path, &good_size);
		unlink(path);
		check_bad_inputs();
		check_random_damage();
	}
	check_fixtures();
	snprintf(path, sizeof(path), "%s/good.gguf", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	for (size_t i = 0; i < N_TENSORS; i++)
		free(tensors[i].data);
	free(good);
	return t_done();
}
