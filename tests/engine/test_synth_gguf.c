/* tests/engine/test_synth_gguf.c: synthetic GGUF models.
 *
 * 1. The Falcon-7B Q4_K_M plan, without writing 5 GB: every tensor's type and the per-type
 *    byte totals of the file llama-quantize wrote at that shape (../shared/fixtures/gguf's
 *    README, "Not included: Falcon-7B-shaped Q4_K_M").
 * 2. The tiny plans against llama.cpp's own files (the shared fixtures, when present): same
 *    tensor names in the same order, same types, shapes and bytes.
 * 3. Small files written and read back with the GGUF reader: every tensor's type and size as
 *    planned, the synthetic marks, deterministic bytes, plausible values, a tokenizer that
 *    encodes and decodes; bad requests; the `memwall synth` verb.
 */
#include <errno.h>
#include <sched.h>
#include <unistd.h>

#include "format/gguf.h"
#include "run.h"
#include "test.h"

/* ggml's GGML_TYPE_* ids (ggml.h), as GGUF files store them. */
enum { T_F32 = 0, T_F16 = 1, T_Q5_0 = 6, T_Q8_0 = 8, T_Q4_K = 12, T_Q5_K = 13, T_Q6_K = 14 };

static char dir[] = "/tmp/mw-test-synthgguf-XXXXXX";

static void path_in(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static void test_falcon7b_plan(void)
{
	struct eng_tensor_table *t = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	T_EQ_INT(eng_synth_gguf_plan("falcon", "falcon-7b", "q4_k_m", &t, &err), 0);
	if (!t)
		return;
	/* 4 global tensors and 6 per layer. */
	T_EQ_U64(t->n, 4 + 6 * 32);
	T_EQ_U64(t->info.weight_bytes, 5057744640u);
	T_ASSERT(t->info.synthetic);
	uint64_t by_type[31] = { 0 };
	for (size_t i = 0; i < t->n; i++)
		by_type[t->t[i].type_id] += t->t[i].file_bytes;
	T_EQ_U64(by_type[T_Q5_0], 2707933184u);
	T_EQ_U64(by_type[T_Q5_K], 794945536u);
	T_EQ_U64(by_type[T_Q4_K], 743325696u);
	T_EQ_U64(by_type[T_Q8_0], 674838528u);
	T_EQ_U64(by_type[T_Q6_K], 135502080u);
	T_EQ_U64(by_type[T_F32], 1199616u);
	/* The README's table, tensor by tensor: attn_qkv Q8_0 in layers 0-3, 6, 9, ..., 27-31,
	 * else Q5_0; ffn_down Q6_K in layers 0-1, then Q5_K where attn_qkv is Q8_0, else Q4_K. */
	for (size_t i = 0; i < t->n; i++) {
		const struct eng_tensor *x = &t->t[i];
		int l = x->layer;
		bool more = l >= 0 && (l < 4 || l >= 28 || (l - 4) % 3 == 2);
		if (strstr(x->name, "attn_qkv"))
			T_EQ_INT(x->type_id, more ? T_Q8_0 : T_Q5_0);
		else if (strstr(x->name, "ffn_down"))
			T_EQ_INT(x->type_id, l < 2 ? T_Q6_K : more ? T_Q5_K : T_Q4_K);
		else if (strstr(x->name, "attn_output") || strstr(x->name, "ffn_up") ||
			 !strcmp(x->name, "token_embd.weight"))
			T_EQ_INT(x->type_id, T_Q5_0);
		else if (!strcmp(x->name, "output.weight"))
			T_EQ_INT(x->type_id, T_Q8_0);
		else
			T_EQ_INT(x->type_id, T_F32);
	}
	/* The same description answers eng_tensors_from_shape. */
	struct eng_tensor_table *d = NULL;
	T_EQ_INT(eng_tensors_from_shape("tiiuae-falcon-7b-Q4_K_M.gguf", &d, &err), 0);
	if (d) {
		T_EQ_U64(d->n, t->n);
		for (size_t i = 0; i < d->n && i < t->n; i++) {
			T_EQ_STR(d->t[i].name, t->t[i].name);
			T_EQ_INT(d->t[i].type_id, t->t[i].type_id);
		}
		eng_tensor_table_free(d);
	}
	eng_tensor_table_free(t);
}

/* A plan against a GGUF file's tensor infos: names, order, types, shapes, bytes. */
static void same_tensors(const struct eng_tensor_table *plan, const struct eng_gguf *g,
			 const char *what)
{
	size_t n = plan->n - (plan->info.shared_classifier ? 1 : 0);
	T_EQ_U64(eng_gguf_n_tensors(g), n);
	for (size_t i = 0; i < n && i < eng_gguf_n_tensors(g); i++) {
		const struct eng_gguf_tensor *gt = eng_gguf_tensor(g, i);
		const struct eng_tensor *pt = &plan->t[i];
		if (strcmp(gt->name, pt->name) || gt->type != pt->type_id)
			fprintf(stderr, "%s: tensor %zu: %s %u vs planned %s %u\n", what, i,
				gt->name, gt->type, pt->name, pt->type_id);
		T_EQ_STR(gt->name, pt->name);
		T_EQ_INT(gt->type, pt->type_id);
		T_EQ_U64(gt->ne[0], pt->cols);
		T_EQ_U64(gt->n_elements / gt->ne[0], pt->rows);
		T_EQ_U64(gt->n_bytes, pt->file_bytes);
	}
}

static void test_fixture_plans(void)
{
	static const struct {
		const char *file, *arch, *shape, *quant;
	} cases[] = {
		{ "tiny-falcon-Q4_K_M.gguf", "falcon", "falcon-tiny", "q4_k_m" },
		{ "tiny-falcon-Q8_0.gguf", "falcon", "falcon-tiny", "q8_0" },
		{ "tiny-llama-Q4_K_M.gguf", "llama", "llama-tiny", "q4_k_m" },
		{ "tiny-llama-Q8_0.gguf", "llama", "llama-tiny", "q8_0" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char rel[256], path[4096];
		snprintf(rel, sizeof(rel), "fixtures/gguf/models/%s", cases[i].file);
		if (!t_have_shared(rel, path, sizeof(path)))
			continue;
		struct eng_gguf *g = NULL;
		struct eng_tensor_table *t = NULL;
		struct eng_error err;
		T_EQ_INT(eng_gguf_open(&g, path, NULL, &err), 0);
		T_EQ_INT(eng_synth_gguf_plan(cases[i].arch, cases[i].shape, cases[i].quant, &t, &err),
			 0);
		if (g && t)
			same_tensors(t, g, cases[i].file);
		eng_tensor_table_free(t);
		if (g)
			eng_gguf_close(g);
	}
}

/* Writes arch/shape/quant, reads it back, checks it against its plan and its marks. */
static void check_written(const char *arch, const char *shape, const char *quant)
{
	char path[4200], again[4200], other[4200];
	struct eng_error err;
	struct eng_tensor_table *plan = NULL;
	struct eng_gguf *g = NULL;
	eng_error_clear(&err);
	path_in(path, sizeof(path), "a.gguf");
	path_in(again, sizeof(again), "b.gguf");
	path_in(other, sizeof(other), "c.gguf");
	T_EQ_INT(eng_synth_gguf(path, arch, shape, quant, 42, &err), 0);
	T_EQ_INT(eng_synth_gguf_plan(arch, shape, quant, &plan, &err), 0);
	T_EQ_INT(eng_gguf_open(&g, path, NULL, &err), 0);
	if (!g || !plan) {
		fprintf(stderr, "%s %s: %s\n", shape, quant, err.text);
		goto out;
	}
	same_tensors(plan, g, shape);
	struct eng_gguf_str s = { 0 };
	bool synthetic = false;
	int64_t v = 0;
	T_EQ_INT(eng_gguf_get_str(g, "general.architecture", &s, &err), 0);
	T_ASSERT(s.len == strlen(arch) && !memcmp(s.ptr, arch, s.len));
	T_EQ_INT(eng_gguf_get_str(g, "general.name", &s, &err), 0);
	T_ASSERT(s.len > 10 && !memcmp(s.ptr, "synthetic ", 10));
	T_EQ_INT(eng_gguf_get_bool(g, "memwall.synthetic", &synthetic, &err), 0);
	T_ASSERT(synthetic);
	T_EQ_INT(eng_gguf_get_int(g, "memwall.synthetic.seed", &v, &err), 0);
	T_EQ_INT(v, 42);
	char key[96];
	snprintf(key, sizeof(key), "%s.embedding_length", arch);
	T_EQ_INT(eng_gguf_get_int(g, key, &v, &err), 0);
	T_EQ_INT(v, plan->info.dim);
	snprintf(key, sizeof(key), "%s.attention.head_count_kv", arch);
	T_EQ_INT(eng_gguf_get_int(g, key, &v, &err), 0);
	T_EQ_INT(v, plan->info.n_kv_heads);
	/* Values of a realistic scale: norm weights near 1, matrices with std near 0.02 (the
	 * first row of every tensor, dequantized). */
	struct eng_tensor_table *ft = NULL;
	T_EQ_INT(eng_tensors_from_file(path, &ft, &err), 0);
	for (size_t i = 0; ft && i < ft->n; i++) {
		const struct eng_tensor *x = &ft->t[i];
		float *row = malloc(x->cols * sizeof(*row));
		if (!row || !x->file_bytes) {
			free(row);
			continue;
		}
		T_EQ_INT(eng_tensor_dequantize(x, 0, row), 0);
		double sum = 0, sq = 0, lo = 1e9, hi = -1e9;
		for (uint64_t k = 0; k < x->cols; k++) {
			sum += row[k];
			sq += (double)row[k] * row[k];
			lo = row[k] < lo ? row[k] : lo;
			hi = row[k] > hi ? row[k] : hi;
		}
		double mean = sum / (double)x->cols;
		double sd = sqrt(sq / (double)x->cols - mean * mean);
		if (strstr(x->name, "norm.weight")) {
			T_ASSERT(lo > 0.94 && hi < 1.06);
		} else if (strstr(x->name, "norm.bias")) {
			T_ASSERT(lo > -0.021 && hi < 0.021);
		} else {
			T_NEAR(sd, 0.02, 0.004);
			T_NEAR(mean, 0.0, 0.01);
		}
		free(row);
	}
	eng_tensor_table_free(ft);
	/* The tokenizer in the metadata: the real vocabulary size, and it encodes and decodes. */
	struct eng_tokenizer *tok = NULL;
	T_EQ_INT(eng_tokenizer_open_gguf(&tok, path, &err), 0);
	if (tok) {
		int ids[256], n = 0;
		char out[512] = "";
		const char *text = "once upon a time, 42 llamas \xc3\xa9t\xc3\xa9";
		T_EQ_INT(eng_tokenizer_vocab_size(tok), plan->info.vocab_size);
		T_EQ_INT(eng_tokenizer_encode(tok, text, true, false, ids, 256, &n), 0);
		T_ASSERT(n > 1 && n < (int)strlen(text));
		for (int i = 1; i < n; i++)
			strncat(out, eng_tokenizer_decode(tok, ids[i - 1], ids[i]),
				sizeof(out) - strlen(out) - 1);
		T_EQ_STR(out, text);
		eng_tokenizer_close(tok);
	}
	/* The same seed gives the same bytes, on one CPU as on all of them (every row has its own
	 * generator); another seed other weights. */
	cpu_set_t all, one;
	bool pinned = sched_getaffinity(0, sizeof(all), &all) == 0 && CPU_COUNT(&all) > 1;
	if (pinned) {
		CPU_ZERO(&one);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &all)) {
				CPU_SET(c, &one);
				break;
			}
		pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
	}
	T_EQ_INT(eng_synth_gguf(again, arch, shape, quant, 42, &err), 0);
	if (pinned)
		sched_setaffinity(0, sizeof(all), &all);
	else
		printf("skipped a part: one CPU only, so threads cannot change\n");
	T_EQ_INT(eng_synth_gguf(other, arch, shape, quant, 43, &err), 0);
	size_t la, lb, lc;
	unsigned char *a = t_slurp(path, &la), *b = t_slurp(again, &lb), *c = t_slurp(other, &lc);
	T_ASSERT(a && b && c);
	T_EQ_U64(la, lb);
	T_ASSERT(a && b && la == lb && !memcmp(a, b, la));
	T_ASSERT(a && c && (la != lc || memcmp(a, c, la)));
	free(a);
	free(b);
	free(c);
out:
	if (g)
		eng_gguf_close(g);
	eng_tensor_table_free(plan);
	unlink(path);
	unlink(again);
	unlink(other);
}

static void test_errors(void)
{
	char path[4200];
	struct eng_error err;
	struct eng_tensor_table *t = NULL;
	path_in(path, sizeof(path), "bad.gguf");
	T_EQ_INT(eng_synth_gguf(path, "falcon", "falcon-40b", "q4_k_m", 1, &err), -EINVAL);
	T_CONTAINS(err.text, "falcon-7b");
	T_EQ_INT(eng_synth_gguf(path, "falcon", "falcon-7b", "iq2_xs", 1, &err), -EINVAL);
	T_CONTAINS(err.text, "q4_k_m");
	T_EQ_INT(eng_synth_gguf(path, "mamba", "falcon-7b", "q4_k_m", 1, &err), -EINVAL);
	T_CONTAINS(err.text, "architecture");
	T_EQ_INT(eng_synth_gguf(path, "llama", "falcon-7b", "q4_k_m", 1, &err), -EINVAL);
	/* stories260K's FFN rows of 172 fit no 32-value block: llama-quantize refuses Q8_0 ... */
	T_EQ_INT(eng_synth_gguf_plan("llama", "stories260K", "q8_0", &t, &err), -EINVAL);
	T_CONTAINS(err.text, "ffn_down");
	/* ... and gives Q4_K_M's ffn_down F16 after the K-quant fallback fails too. */
	T_EQ_INT(eng_synth_gguf_plan("llama", "stories260K", "q4_k_m", &t, &err), 0);
	for (size_t i = 0; t && i < t->n; i++)
		if (strstr(t->t[i].name, "ffn_down"))
			T_EQ_INT(t->t[i].type_id, T_F16);
	eng_tensor_table_free(t);
	T_ASSERT(access(path, F_OK) != 0);
	/* A directory that does not exist: an error naming it, nothing left behind. */
	T_ASSERT(eng_synth_gguf("/nonexistent-dir/x.gguf", "falcon", "falcon-tiny", "f32", 1,
				&err) < 0);
	T_CONTAINS(err.source, "/nonexistent-dir/x.gguf");
}

static void test_verb(void)
{
	char p[4200];
	path_in(p, sizeof(p), "verb.gguf");
	const char *argv[] = { "memwall", "synth", "--arch", "falcon", "--shape", "falcon-tiny",
			       "--quant", "q4_k_m", "-o", p, "--seed", "5", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "SYNTHETIC");
	T_CONTAINS(o.out, "q4_k_m");
	t_output_free(&o);
	T_ASSERT(access(p, R_OK) == 0);
	unlink(p);
	/* Nothing left beside it: the temporary file was renamed. */
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "test $(ls %s | wc -l) -eq 0", dir);
	T_EQ_INT(system(cmd), 0);
	const char *l2c[] = { "memwall", "synth", "--shape", "stories260K", "--format", "llama2c",
			      "--quant", "q8_0", "-o", p, NULL };
	T_RUN_EXPECT(l2c, 2, NULL, T_LIST("--quant"));
	const char *refused[] = { "memwall", "synth", "--shape", "stories260K", "--quant", "q8_0",
				  "-o", p, NULL };
	T_RUN_EXPECT(refused, 2, NULL, T_LIST("ffn_down"));
}

int main(void)
{
	t_mkdtemp(dir);
	test_falcon7b_plan();
	test_errors();
	check_written("falcon", "falcon-tiny", "q4_k_m");
	check_written("llama", "llama-tiny", "q8_0");
	check_written("llama", "stories260K", "f32");
	test_verb();
	test_fixture_plans();
	rmdir(dir);
	return t_done();
}
