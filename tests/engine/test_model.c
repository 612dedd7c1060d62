/* tests/engine/test_model.c: the llama2.c loader: shapes, weight tying, the load modes and their names,
 * and every kind of bad file refused with an error naming the field or tensor at fault, never a
 * crash.
 *
 * The bad files are a synthetic stories260K (eng_synth_llama2c) cut short or patched; the
 * legacy variant is rebuilt from it with the legacy layout.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "engine.h"
#include "format/llama2c.h"
#include "model/model.h"
#include "test.h"
#include "values.h"

static char dir[] = "/tmp/mw-test-model-XXXXXX";
static char good[4096], legacy[4096], bad[4096];
static unsigned char *good_bytes, *legacy_bytes;
static size_t good_len, legacy_len;

static void spill(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

/* Opens path expecting failure; returns the error (text checked by the caller). */
static struct eng_error open_bad(const char *path, int *rc)
{
	struct eng_model *m = (struct eng_model *)1;
	struct eng_error err;
	eng_error_clear(&err);
	*rc = eng_model_open(&m, path, NULL, &err);
	T_ASSERT(m == NULL);
	return err;
}

/* Writes the first len bytes of src (patched at off with the int32 v unless off < 0). */
static struct eng_error try_variant(const unsigned char *src, size_t len, long off, int32_t v,
				    int *rc)
{
	unsigned char *copy = malloc(len ? len : 1);
	memcpy(copy, src, len);
	if (off >= 0)
		memcpy(copy + off, &v, sizeof(v));
	spill(bad, copy, len);
	free(copy);
	return open_bad(bad, rc);
}

/* A legacy file with the same tensors, rebuilt through the legacy layout. */
static void make_legacy(const struct eng_model *m)
{
	const struct eng_model_info *in = eng_model_info(m);
	struct l2c_config c = { .version = 0, .dim = in->dim, .hidden_dim = in->hidden_dim,
				.n_layers = in->n_layers, .n_heads = in->n_heads,
				.n_kv_heads = in->n_kv_heads, .vocab_size = in->vocab_size,
				.seq_len = in->seq_len, .shared_classifier = true };
	struct l2c_layout v1, lg;
	struct l2c_config c1 = c;
	c1.version = 1;
	T_EQ_INT(eng_l2c_layout_compute(&lg, &c, "legacy", NULL), 0);
	T_EQ_INT(eng_l2c_layout_compute(&v1, &c1, "v1", NULL), 0);
	legacy_len = lg.end;
	legacy_bytes = calloc(1, legacy_len);
	int32_t hdr[7] = { c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
			   c.vocab_size, c.seq_len };
	memcpy(legacy_bytes, hdr, sizeof(hdr));
	for (size_t i = 0; i < lg.n; i++)
		for (size_t j = 0; j < v1.n; j++)
			if (v1.span[j].tensor == lg.span[i].tensor)
				memcpy(legacy_bytes + lg.span[i].offset,
				       good_bytes + v1.span[j].offset, lg.span[i].bytes);
	spill(legacy, legacy_bytes, legacy_len);
}

static void test_good(void)
{
	struct eng_model *m = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	T_EQ_INT(eng_model_open(&m, good, NULL, &err), 0);
	if (!m) {
		fprintf(stderr, "%s: %s\n", err.source, err.text);
		exit(1);
	}
	const struct eng_model_info *info = eng_model_info(m);
	T_EQ_INT(info->format, ENG_FORMAT_LLAMA2C);
	T_EQ_STR(info->arch, "llama");
	T_EQ_INT(info->dim, 64);
	T_EQ_INT(info->hidden_dim, 172);
	T_EQ_INT(info->n_layers, 5);
	T_EQ_INT(info->n_heads, 8);
	T_EQ_INT(info->n_kv_heads, 4);
	T_EQ_INT(info->vocab_size, 512);
	T_EQ_INT(info->seq_len, 512);
	T_ASSERT(info->shared_classifier);
	T_ASSERT(info->synthetic);
	T_EQ_U64(info->file_bytes, good_len);
	/* Every float but the 256-byte header is a weight the forward pass reads. */
	T_EQ_U64(info->weight_bytes, good_len - 256);
	/* Tied weights: the classifier is the embedding view, no copy. */
	T_ASSERT(m->w.wcls == m->w.token_embedding);
	T_ASSERT((const unsigned char *)m->w.rms_att == (const unsigned char *)m->map + 256);
	make_legacy(m);
	eng_model_close(m);

	/* The legacy twin: same shape, not synthetic (no marker in a legacy header), and its
	 * RoPE tables are not counted as weights. */
	T_EQ_INT(eng_model_open(&m, legacy, &(struct eng_model_options){ .populate = true,
									  .hugepages = true },
				&err),
		 0);
	if (m) {
		info = eng_model_info(m);
		T_EQ_INT(info->dim, 64);
		T_EQ_INT(info->vocab_size, 512);
		T_ASSERT(!info->synthetic);
		T_ASSERT(info->shared_classifier);
		T_EQ_U64(info->weight_bytes, good_len - 256);
		T_EQ_U64(info->file_bytes, good_len - 256 + 28 + 2 * 512 * 4 * 4);
		T_ASSERT(m->w.wcls == m->w.token_embedding);
		eng_model_close(m);
	}
	eng_model_close(NULL);
}

/* Logits of a few greedy steps from BOS into out (n_steps * vocab floats). */
static int run_steps(struct eng_model *m, int threads, float *out, int n_steps)
{
	struct eng_session *s = NULL;
	struct eng_error err;
	struct eng_session_options o = { .threads = threads };
	int rc = eng_session_new(&s, m, &o, &err), token = 1, vocab = eng_model_info(m)->vocab_size;
	for (int pos = 0; !rc && pos < n_steps; pos++) {
		const float *logits;
		if ((rc = eng_session_step(s, token, pos, &logits, NULL)))
			break;
		memcpy(out + (size_t)pos * (size_t)vocab, logits, (size_t)vocab * sizeof(float));
		token = t_argmax(logits, vocab);
	}
	eng_session_free(s);
	return rc;
}

/* ENG_LOAD_HUGE_COPY: the same model from an anonymous copy: same info, same tensor table,
 * the classifier still the embedding's view, and the same logits at 1 and 2 threads. */
static void test_huge_copy(void)
{
	struct eng_model *mm = NULL, *hc = NULL;
	struct eng_tensor_table *tm = NULL, *th = NULL;
	struct eng_error err;
	enum { STEPS = 4 };
	eng_error_clear(&err);
	T_EQ_INT(eng_model_open(&mm, good, NULL, &err), 0);
	T_EQ_INT(eng_model_open(&hc, good, &(struct eng_model_options){ .load = ENG_LOAD_HUGE_COPY },
				&err),
		 0);
	if (!mm || !hc)
		goto out;
	T_ASSERT(!memcmp(eng_model_info(mm), eng_model_info(hc), sizeof(struct eng_model_info)));
	T_ASSERT(hc->map != mm->map);
	T_EQ_U64((uintptr_t)hc->map % (2u << 20), 0);
	T_ASSERT(!memcmp(hc->map, good_bytes, good_len));
	T_ASSERT(hc->w.wcls == hc->w.token_embedding);
	T_ASSERT(hc->output.data == hc->token_embd.data);
	T_ASSERT((const unsigned char *)hc->w.rms_att == (const unsigned char *)hc->map + 256);
	T_EQ_INT(eng_model_tensors(mm, &tm, &err), 0);
	T_EQ_INT(eng_model_tensors(hc, &th, &err), 0);
	if (tm && th) {
		T_EQ_U64(tm->n, th->n);
		for (size_t i = 0; i < tm->n && i < th->n; i++) {
			T_EQ_STR(tm->t[i].name, th->t[i].name);
			T_EQ_U64(tm->t[i].file_bytes, th->t[i].file_bytes);
			T_EQ_U64(tm->t[i].step_bytes, th->t[i].step_bytes);
			T_EQ_U64((uint64_t)((const char *)th->t[i].data - (const char *)hc->map),
				 (uint64_t)((const char *)tm->t[i].data - (const char *)mm->map));
		}
	}
	size_t n = (size_t)STEPS * (size_t)eng_model_info(mm)->vocab_size;
	float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
	T_ASSERT(a && b);
	if (a && b) {
		T_EQ_INT(run_steps(mm, 1, a, STEPS), 0);
		T_EQ_INT(run_steps(hc, 2, b, STEPS), 0);
		T_ASSERT(!memcmp(a, b, n * sizeof(float)));
	}
	free(a);
	free(b);

	/* A GGUF file is copied too, and its reader still names what is wrong with it
	 * (test_gguf_engine runs whole GGUF models copied and repacked); an unknown mode is
	 * refused. */
	char gguf[4096];
	snprintf(gguf, sizeof(gguf), "%s/copy.gguf", dir);
	spill(gguf, "GGUF\3\0\0\0", 8);
	struct eng_model *x = NULL;
	T_EQ_INT(eng_model_open(&x, gguf, &(struct eng_model_options){ .load = ENG_LOAD_REPACK },
				&err),
		 -EINVAL);
	T_CONTAINS(err.text, "truncated");
	unlink(gguf);
	T_EQ_INT(eng_model_open(&x, good, &(struct eng_model_options){ .load = 7 }, &err), -EINVAL);
	T_CONTAINS(err.text, "load mode");
	T_ASSERT(x == NULL);
out:
	eng_tensor_table_free(tm);
	eng_tensor_table_free(th);
	eng_model_close(mm);
	eng_model_close(hc);
}

/* The load modes' name table: every mode has its name, each name parses back to its mode,
 * and anything else is refused without touching the output. */
static void test_load_mode_names(void)
{
	static const char *const want[] = { "mmap", "huge-copy", "repack" };
	T_EQ_INT(eng_load_mode_count(), 3);
	for (int m = 0; m < eng_load_mode_count(); m++) {
		enum eng_load_mode back = (enum eng_load_mode)-1;
		T_EQ_STR(eng_load_mode_name((enum eng_load_mode)m), want[m]);
		T_EQ_INT(eng_load_mode_parse(want[m], &back), 0);
		T_EQ_INT((int)back, m);
	}
	T_ASSERT(eng_load_mode_name((enum eng_load_mode)eng_load_mode_count()) == NULL);
	T_ASSERT(eng_load_mode_name((enum eng_load_mode)-1) == NULL);
	static const char *const bad_names[] = { "", "MMAP", "huge_copy", "hugecopy", "repack ",
						 "mmap-populate", "auto" };
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		enum eng_load_mode keep = ENG_LOAD_HUGE_COPY;
		T_EQ_INT(eng_load_mode_parse(bad_names[i], &keep), -EINVAL);
		T_EQ_INT((int)keep, ENG_LOAD_HUGE_COPY);
	}
	enum eng_load_mode keep = ENG_LOAD_REPACK;
	T_EQ_INT(eng_load_mode_parse(NULL, &keep), -EINVAL);
	T_EQ_INT((int)keep, ENG_LOAD_REPACK);
}

/* A file cut inside the header names the field it cuts. */
static void test_truncated_header(void)
{
	static const struct {
		unsigned from, to;
		const char *field;
	} v1[] = {
		{ 0, 4, "magic" }, { 4, 8, "version" }, { 8, 12, "'dim'" },
		{ 12, 16, "'hidden_dim'" }, { 16, 20, "'n_layers'" }, { 20, 24, "'n_heads'" },
		{ 24, 28, "'n_kv_heads'" }, { 28, 32, "'vocab_size'" }, { 32, 36, "'seq_len'" },
		{ 36, 37, "'shared_classifier'" }, { 37, 38, "'ffn_activation'" },
		{ 38, 256, "'header padding'" },
	}, lg[] = {
		{ 4, 8, "'hidden_dim'" }, { 8, 12, "'n_layers'" }, { 12, 16, "'n_heads'" },
		{ 16, 20, "'n_kv_heads'" }, { 20, 24, "'vocab_size'" }, { 24, 28, "'seq_len'" },
	};
	int rc;
	for (size_t i = 0; i < sizeof(v1) / sizeof(v1[0]); i++)
		for (unsigned cut = v1[i].from; cut < v1[i].to; cut += cut < 40 ? 1 : 50) {
			struct eng_error e = try_variant(good_bytes, cut, -1, 0, &rc);
			T_ASSERT(rc < 0);
			if (cut == 0) {
				T_CONTAINS(e.text, "empty");
				continue;
			}
			T_CONTAINS(e.text, v1[i].field);
			T_CONTAINS(e.source, bad);
		}
	for (size_t i = 0; i < sizeof(lg) / sizeof(lg[0]); i++)
		for (unsigned cut = lg[i].from; cut < lg[i].to; cut++) {
			struct eng_error e = try_variant(legacy_bytes, cut, -1, 0, &rc);
			T_ASSERT(rc < 0);
			T_CONTAINS(e.text, lg[i].field);
		}
}

/* A file cut inside a tensor names that tensor, with its offset and the file's size. */
static void test_truncated_tensor(void)
{
	struct l2c_config c = { .version = 1, .dim = 64, .hidden_dim = 172, .n_layers = 5,
				.n_heads = 8, .n_kv_heads = 4, .vocab_size = 512, .seq_len = 512,
				.shared_classifier = true };
	struct l2c_layout lay;
	T_EQ_INT(eng_l2c_layout_compute(&lay, &c, "x", NULL), 0);
	T_EQ_U64(lay.end, good_len);
	int rc;
	for (size_t i = 0; i < lay.n; i++) {
		size_t cut = (size_t)(lay.span[i].offset + lay.span[i].bytes / 2);
		struct eng_error e = try_variant(good_bytes, cut, -1, 0, &rc);
		char want[96], size[64];
		snprintf(want, sizeof(want), "tensor '%s' extends past end of file",
			 eng_l2c_tensor_name(lay.span[i].tensor));
		snprintf(size, sizeof(size), "file %zu bytes", cut);
		T_EQ_INT(rc, -EINVAL);
		T_CONTAINS(e.text, want);
		T_CONTAINS(e.text, size);
		T_EQ_U64(e.offset, lay.span[i].offset);
	}
	/* One byte short of the end: the last tensor. */
	struct eng_error e = try_variant(good_bytes, good_len - 1, -1, 0, &rc);
	T_CONTAINS(e.text, "tensor 'w3' extends past end of file");
}

static void test_bad_numbers(void)
{
	static const struct {
		const char *name;
		long v1_off, legacy_off;
	} fields[] = {
		{ "'dim'", 8, 0 }, { "'hidden_dim'", 12, 4 }, { "'n_layers'", 16, 8 },
		{ "'n_heads'", 20, 12 }, { "'n_kv_heads'", 24, 16 }, { "'vocab_size'", 28, -1 },
		{ "'seq_len'", 32, 24 },
	};
	int rc;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		for (int32_t v = -5; v <= 0; v += 5) {
			struct eng_error e = try_variant(good_bytes, good_len, fields[i].v1_off, v, &rc);
			T_EQ_INT(rc, -EINVAL);
			T_CONTAINS(e.text, fields[i].name);
			T_CONTAINS(e.text, "must be positive");
			if (fields[i].legacy_off < 0)
				continue;
			e = try_variant(legacy_bytes, legacy_len, fields[i].legacy_off, v, &rc);
			T_EQ_INT(rc, -EINVAL);
			T_CONTAINS(e.text, fields[i].name);
		}
	}
	/* Legacy: a negative vocab_size means an unshared classifier, which this file lacks. */
	struct eng_error e = try_variant(legacy_bytes, legacy_len, 20, -512, &rc);
	T_CONTAINS(e.text, "tensor 'wcls' extends past end of file");
	e = try_variant(legacy_bytes, legacy_len, 20, 0, &rc);
	T_CONTAINS(e.text, "'vocab_size'");

	e = try_variant(good_bytes, good_len, 20, 7, &rc); /* 7 does not divide 64 */
	T_CONTAINS(e.text, "'n_heads' (7) does not divide dim (64)");
	e = try_variant(good_bytes, good_len, 24, 3, &rc); /* 3 does not divide 8 */
	T_CONTAINS(e.text, "'n_kv_heads' (3) does not divide n_heads (8)");
	e = try_variant(good_bytes, good_len, 20, 64, &rc); /* head size 1 */
	T_EQ_INT(rc, -EINVAL);
	T_CONTAINS(e.text, "head size");
	e = try_variant(good_bytes, good_len, 4, 2, &rc);
	T_EQ_INT(rc, -ENOTSUP);
	T_CONTAINS(e.text, "'version' is 2");
	/* A vocabulary that does not match the file: one token fewer leaves bytes over. */
	e = try_variant(good_bytes, good_len, 28, 511, &rc);
	T_CONTAINS(e.text, "follow the last tensor");
	e = try_variant(good_bytes, good_len, 28, 513, &rc);
	T_CONTAINS(e.text, "extends past end of file");

	unsigned char flag = 7;
	unsigned char *copy = malloc(good_len);
	memcpy(copy, good_bytes, good_len);
	copy[36] = flag;
	spill(bad, copy, good_len);
	e = open_bad(bad, &rc);
	T_CONTAINS(e.text, "'shared_classifier' is 7");
	copy[36] = 0; /* says unshared: wcls would follow */
	spill(bad, copy, good_len);
	e = open_bad(bad, &rc);
	T_CONTAINS(e.text, "tensor 'wcls' extends past end of file");
	free(copy);

	/* Trailing bytes. */
	copy = calloc(1, good_len + 4);
	memcpy(copy, good_bytes, good_len);
	spill(bad, copy, good_len + 4);
	e = open_bad(bad, &rc);
	T_CONTAINS(e.text, "4 bytes follow the last tensor 'w3'");
	free(copy);
}

/* Shapes whose sizes overflow 64 bits are refused before any arithmetic wraps. */
static void test_overflow(void)
{
	unsigned char *copy = malloc(good_len);
	memcpy(copy, good_bytes, good_len);
	int32_t big = 1 << 30, heads = 1 << 28;
	memcpy(copy + 8, &big, 4);   /* dim */
	memcpy(copy + 12, &big, 4);  /* hidden_dim */
	memcpy(copy + 16, &big, 4);  /* n_layers */
	memcpy(copy + 20, &heads, 4);
	memcpy(copy + 24, &heads, 4);
	spill(bad, copy, good_len);
	int rc;
	struct eng_error e = open_bad(bad, &rc);
	T_EQ_INT(rc, -EOVERFLOW);
	T_CONTAINS(e.text, "tensor 'wq'");
	T_CONTAINS(e.text, "overflows");
	/* Large but representable: past the end, named, with no wrap. */
	int32_t dim = 1 << 20, one = 1;
	memcpy(copy, good_bytes, good_len);
	memcpy(copy + 8, &dim, 4);
	memcpy(copy + 16, &one, 4);
	memcpy(copy + 20, &one, 4);
	memcpy(copy + 24, &one, 4);
	spill(bad, copy, good_len);
	e = open_bad(bad, &rc);
	T_EQ_INT(rc, -EINVAL);
	T_CONTAINS(e.text, "extends past end of file");
	free(copy);
}

static void test_not_a_file(void)
{
	int rc;
	char path[4200];
	snprintf(path, sizeof(path), "%s/absent.bin", dir);
	struct eng_error e = open_bad(path, &rc);
	T_EQ_INT(rc, -ENOENT);
	T_EQ_STR(e.source, path);
	T_CONTAINS(e.text, "cannot open");
	e = open_bad(dir, &rc);
	T_CONTAINS(e.text, "not a regular file");
}

int main(void)
{
	t_mkdtemp(dir);
	snprintf(good, sizeof(good), "%s/good.bin", dir);
	snprintf(legacy, sizeof(legacy), "%s/legacy.bin", dir);
	snprintf(bad, sizeof(bad), "%s/bad.bin", dir);
	struct eng_error err;
	eng_error_clear(&err);
	if (eng_synth_llama2c(good, "stories260K", 3, &err)) {
		fprintf(stderr, "synth: %s\n", err.text);
		return 1;
	}
	good_bytes = t_slurp(good, &good_len);
	T_ASSERT(good_bytes != NULL);
	test_good();
	test_huge_copy();
	test_load_mode_names();
	test_truncated_header();
	test_truncated_tensor();
	test_bad_numbers();
	test_overflow();
	test_not_a_file();
	free(good_bytes);
	free(legacy_bytes);
	unlink(good);
	unlink(legacy);
	unlink(bad);
	rmdir(dir);
	return t_done();
}
