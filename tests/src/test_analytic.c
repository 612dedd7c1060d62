/* tests/src/test_analytic.c: the tensor table (engine/tensors.c) and the analytic model of a decode
 * step (src/analysis/analytic.c), against hand arithmetic written out here, the engine's own
 * accounting, and the Falcon-7B Q4_K_M type mix documented with the shared GGUF fixtures. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "analytic.h"
#include "engine.h"
#include "test.h"

/* A llama2.c "ak42" version-1 header of the given shape followed by a sparse (unwritten)
 * body of the right length: the tensor table needs the shape and the file size, not the
 * weights, so stories110M costs no disk. Written here, independently of `memwall synth`. */
static void write_sparse_llama2c(const char *path, int dim, int hidden, int layers, int heads,
				 int kv_heads, int vocab, int seq)
{
	unsigned char h[256] = { 0 };
	uint32_t magic = 0x616b3432u;
	int32_t v[8] = { 1, dim, hidden, layers, heads, kv_heads, vocab, seq };
	memcpy(h, &magic, 4);
	memcpy(h + 4, v, sizeof(v));
	h[36] = 1; /* shared classifier */
	uint64_t d = (uint64_t)dim, kv = d / (uint64_t)heads * (uint64_t)kv_heads;
	/* rms_att, rms_ffn, rms_final, embedding, wq, wk, wv, wo, w1, w2, w3 (floats) */
	uint64_t floats = (uint64_t)layers * d * 2 + d + (uint64_t)vocab * d +
			  (uint64_t)layers * (d * d + 2 * kv * d + d * d + 3 * d * (uint64_t)hidden);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	T_ASSERT(fd >= 0);
	T_ASSERT(write(fd, h, sizeof(h)) == (ssize_t)sizeof(h));
	T_ASSERT(ftruncate(fd, (off_t)(256 + floats * 4)) == 0);
	close(fd);
}

static struct eng_tensor_table *open_table(const char *path)
{
	struct eng_tensor_table *t = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	int rc = eng_tensors_from_file(path, &t, &err);
	if (rc)
		fprintf(stderr, "%s: %s\n", err.source, err.text);
	T_EQ_INT(rc, 0);
	return t;
}

/* stories110M (dim 768, hidden 2048, 12 layers, 12 heads, vocab 32000, tied) at position 128
 * with an fp32 cache: the "about 448 MB per token", by hand:
 *   per layer: rms_att 768 + wq 768*768 + wk 768*768 + wv 768*768 + wo 768*768
 *              + rms_ffn 768 + w1, w2, w3 3 * 768*2048           = 7,079,424 floats
 *   12 layers                                                     = 84,953,088 floats
 *   embedding row 768 + rms_final 768 + classifier 32000*768     = 24,577,536 floats
 *   weights: 109,530,624 floats = 438,122,496 B
 *   KV read: 129 positions * 12 layers * (K + V) 2 * 768 * 4 B    =   9,510,912 B
 *   KV written: 12 * 2 * 768 * 4                                  =      73,728 B
 *   total                                                          = 447,707,136 B */
static void test_stories110m(void)
{
	char path[] = "/tmp/mw-analytic-XXXXXX";
	t_tmp_file(path);
	write_sparse_llama2c(path, 768, 2048, 12, 12, 12, 32000, 1024);
	struct eng_tensor_table *t = open_table(path);
	if (!t)
		goto out;
	struct mw_analytic a;
	struct mw_analytic_options o = { .pos = 128, .llc_bytes = 32u << 20, .llc_source = "test" };
	T_EQ_INT(mw_analytic_compute(t, &o, &a), 0);
	T_EQ_U64(a.weights, 438122496u);
	T_EQ_U64(a.embedding_row, 768u * 4);
	T_EQ_U64(a.by_class[ENG_TENSOR_CLASSIFIER], 32000u * 768 * 4);
	T_EQ_U64(a.kv_read, 9510912u);
	T_EQ_U64(a.kv_write, 73728u);
	T_EQ_U64(a.total, 447707136u);
	T_ASSERT(a.total > 447e6 && a.total < 449e6);
	T_EQ_U64(a.floor, 438122496u - (32u << 20));
	T_ASSERT(a.far_larger_than_llc);
	/* Activations of one layer: x, normed x, q, k, v, wo out, w1, w2 out, w3, attention out:
	 * 768 * 7 + 2048 * 2 + 768 = 10240 floats. */
	T_EQ_U64(a.activation_elems_layer, 10240u);
	T_EQ_U64(a.activation_layer, 40960u);
	/* FLOPs: 2 per weight of every matrix but the embedding, plus q.k and the V sum:
	 * 2 * (12 * 7,077,888 + 24,576,000) + 4 * 12 * 768 * 129. */
	T_NEAR(a.flops, 2.0 * (12.0 * 7077888 + 24576000) + 4.0 * 12 * 768 * 129, 0.5);
	/* The unknown-LLC bound is stated. */
	o.llc_bytes = 0;
	T_EQ_INT(mw_analytic_compute(t, &o, &a), 0);
	T_EQ_U64(a.llc, MW_LLC_UNKNOWN_BOUND);
	T_CONTAINS(a.llc_statement, "unknown");
	eng_tensor_table_free(t);
out:
	unlink(path);
}

/* The other stories shapes by the per-layer formula (export.py's shapes). */
static void test_stories_shapes(void)
{
	static const struct {
		int dim, hidden, layers, heads, kv_heads, vocab;
	} shapes[] = {
		{ 64, 172, 5, 8, 4, 512 },     /* stories260K */
		{ 288, 768, 6, 6, 6, 32000 },  /* stories15M */
		{ 512, 1376, 8, 8, 8, 32000 }, /* stories42M */
	};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		uint64_t d = (uint64_t)shapes[i].dim, h = (uint64_t)shapes[i].hidden;
		uint64_t kv = d / (uint64_t)shapes[i].heads * (uint64_t)shapes[i].kv_heads;
		uint64_t L = (uint64_t)shapes[i].layers, V = (uint64_t)shapes[i].vocab;
		uint64_t per_layer = 2 * d + 2 * d * d + 2 * kv * d + 3 * d * h;
		uint64_t want = 4 * (L * per_layer + d + d + V * d);
		char path[] = "/tmp/mw-analytic-XXXXXX";
		t_tmp_file(path);
		write_sparse_llama2c(path, shapes[i].dim, shapes[i].hidden, shapes[i].layers,
				     shapes[i].heads, shapes[i].kv_heads, shapes[i].vocab, 256);
		struct eng_tensor_table *t = open_table(path);
		if (t) {
			struct mw_analytic a;
			struct mw_analytic_options o = { .pos = 10 };
			T_EQ_INT(mw_analytic_compute(t, &o, &a), 0);
			T_EQ_U64(a.weights, want);
			T_EQ_U64(a.kv_read, 11 * L * 2 * kv * 4);
			T_EQ_U64(a.kv_write, L * 2 * kv * 4);
			/* file_bytes adds the header and the embedding's other rows */
			T_EQ_U64(t->info.weight_bytes + 256, t->info.file_bytes);
			eng_tensor_table_free(t);
		}
		unlink(path);
	}
}

/* The analytic weights equal the engine's own accounting (eng_step_bytes) of a real step. */
static void test_engine_equality(void)
{
	char path[] = "/tmp/mw-analytic-XXXXXX";
	t_tmp_file(path);
	struct eng_error err;
	struct eng_model *m = NULL;
	struct eng_session *s = NULL;
	struct eng_tensor_table *t = NULL;
	eng_error_clear(&err);
	T_EQ_INT(eng_synth_llama2c(path, "stories260K", 7, &err), 0);
	T_EQ_INT(eng_model_open(&m, path, NULL, &err), 0);
	if (!m)
		goto out;
	T_EQ_INT(eng_model_tensors(m, &t, &err), 0);
	struct eng_session_options so = { .threads = 1, .kv_type = ENG_KV_F32 };
	T_EQ_INT(eng_session_new(&s, m, &so, &err), 0);
	if (!t || !s)
		goto out;
	T_ASSERT(t->info.synthetic);
	for (int pos = 0; pos < 4; pos++) {
		const float *logits;
		struct eng_step_bytes b;
		T_EQ_INT(eng_session_step(s, 5 + pos, pos, &logits, &b), 0);
		struct mw_analytic a;
		struct mw_analytic_options o = { .pos = pos };
		T_EQ_INT(mw_analytic_compute(t, &o, &a), 0);
		T_EQ_U64(a.weights, b.weights);
		T_EQ_U64(a.kv_read, b.kv_read);
		T_EQ_U64(a.kv_write, b.kv_write);
		/* The classifier phase reads the final norm and the classifier. */
		T_EQ_U64(b.by_phase[ENG_PHASE_CLASSIFIER],
			 a.by_class[ENG_TENSOR_CLASSIFIER] + 64 * 4);
	}
	/* The tensor table's data views the weights: the tied classifier is the embedding. */
	const struct eng_tensor *emb = &t->t[0], *cls = &t->t[t->n - 1];
	T_EQ_INT(emb->cls, ENG_TENSOR_EMBEDDING);
	T_EQ_INT(cls->cls, ENG_TENSOR_CLASSIFIER);
	T_ASSERT(emb->data == cls->data);
	T_EQ_U64(cls->file_bytes, 0);
	float row[64];
	T_EQ_INT(eng_tensor_dequantize(emb, 3, row), 0);
	T_NEAR(row[5], ((const float *)emb->data)[3 * 64 + 5], 0);
	T_EQ_INT(eng_tensor_dequantize(emb, emb->rows, row), -EINVAL);
out:
	eng_session_free(s);
	eng_tensor_table_free(t);
	eng_model_close(m);
	unlink(path);
}

/* The built-in Falcon-7B Q4_K_M description against the per-type totals that the shared
 * fixtures' README gives for a file llama-quantize wrote at that shape. */
static void test_falcon_q4km(void)
{
	struct eng_tensor_table *t = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	T_EQ_INT(eng_tensors_from_shape("tiiuae-falcon-7b-Q4_K_M.gguf", &t, &err), 0);
	if (!t)
		return;
	T_EQ_U64(t->n, 196);
	T_EQ_U64(t->info.weight_bytes, 5057744640u);
	uint64_t by_type[31] = { 0 };
	for (size_t i = 0; i < t->n; i++)
		by_type[t->t[i].type_id] += t->t[i].file_bytes;
	T_EQ_U64(by_type[6], 2707933184u);  /* q5_0 */
	T_EQ_U64(by_type[13], 794945536u);  /* q5_K */
	T_EQ_U64(by_type[12], 743325696u);  /* q4_K */
	T_EQ_U64(by_type[8], 674838528u);   /* q8_0 */
	T_EQ_U64(by_type[14], 135502080u);  /* q6_K */
	T_EQ_U64(by_type[0], 1199616u);     /* f32 */
	/* A step reads everything but the embedding's other rows: one q5_0 row of 4544 is
	 * 142 blocks of 22 bytes. */
	struct mw_analytic a;
	struct mw_analytic_options o = { .pos = 0, .llc_bytes = 36u << 20 };
	T_EQ_INT(mw_analytic_compute(t, &o, &a), 0);
	T_EQ_U64(a.embedding_row, 142u * 22);
	T_EQ_U64(a.weights, 5057744640u - 203134976u + 142u * 22);
	T_ASSERT(a.weights > 4.5 * 1073741824.0 * 0.99); /* "roughly 4.5 GiB" */
	T_EQ_INT(t->info.n_kv_heads, 1);
	T_EQ_INT(t->head_dim, 64);
	T_EQ_U64(a.kv_write, 32u * 2 * 64 * 2); /* f16 cache: one K and one V head per layer */
	/* Unknown names are refused with the list of what is built in. */
	struct eng_tensor_table *none = NULL;
	T_EQ_INT(eng_tensors_from_shape("llama-70b.gguf", &none, &err), -ENOENT);
	T_CONTAINS(err.text, "falcon-7b");
	eng_tensor_table_free(t);
}

/* A GGUF file's table, from the shared fixtures (tied and untied, quantized). */
static void test_gguf_fixture(void)
{
	char path[4096];
	struct stat st;
	const char *root = getenv("MEMWALL_SHARED");
	snprintf(path, sizeof(path), "%s/fixtures/gguf/models/tiny-llama-Q4_K_M.gguf",
		 root ? root : "../shared");
	if (stat(path, &st)) {
		printf("skipped the GGUF part: %s is absent\n", path);
		return;
	}
	struct eng_tensor_table *t = open_table(path);
	if (!t)
		return;
	T_EQ_INT(t->info.dim, 256);
	T_EQ_INT(t->info.n_layers, 2);
	T_EQ_INT(t->info.n_kv_heads, 4);
	T_EQ_INT(t->info.vocab_size, 512);
	uint64_t sum = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct eng_tensor *e = &t->t[i];
		if (!strcmp(e->name, "output.weight"))
			T_EQ_STR(e->type, "q6_K");
		if (!strcmp(e->name, "token_embd.weight")) {
			T_EQ_STR(e->type, "q4_K");
			T_EQ_U64(e->step_bytes, 144); /* one row of 256: one q4_K block */
		}
		if (!strcmp(e->name, "blk.1.ffn_down.weight"))
			T_EQ_INT(e->layer, 1);
		sum += e->file_bytes;
	}
	T_EQ_U64(sum, t->info.weight_bytes);
	T_ASSERT(t->info.file_bytes > sum); /* header and metadata */
	/* Dequantized rows are finite and not all zero. */
	float row[256];
	T_EQ_INT(eng_tensor_dequantize(&t->t[0], 0, row), 0);
	eng_tensor_table_free(t);
}

int main(void)
{
	test_stories110m();
	test_stories_shapes();
	test_engine_equality();
	test_falcon_q4km();
	test_gguf_fixture();
	return t_done();
}
