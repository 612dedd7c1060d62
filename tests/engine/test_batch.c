/* tests/engine/test_batch.c: batched decode (issue 17, eng_session_step_seqs). N sequences decoded
 * together in one session, each with its own prompt (different lengths), must give, greedy,
 * every sequence the token ids and the logits (to the bit) that a session of its own gives
 * it, for N = 1, 2, 3, 4, 8: on stories260K (llama2.c, F32 KV) and on llama.cpp fixtures
 * (GGUF Q4_0 llama and Q8_0 falcon, F16 KV; plain and repacked). Each batched step's bytes
 * are checked against arithmetic from the model's tensor table and shapes: the weights once
 * per step (an embedding row per token), the KV cache per sequence. Without ../shared the
 * shared part is skipped, saying so; the synthetic varied models (issue 26) run anywhere.
 */
#include <errno.h>
#include <unistd.h>

#include "engine.h"
#include "test.h"
#include "values.h"
#include "identity.h"

#define STEPS 12
#define MAX_SEQ 8
#define MAX_PROMPT 16

/* Sequence i's prompt: BOS then 2 + 3i mod 7 tokens, so lengths differ (and repeat). */
static int prompt_of(int i, int vocab, int *p)
{
	int n = 1 + 2 + (3 * i) % 7;
	p[0] = 1;
	for (int k = 1; k < n; k++)
		p[k] = (37 * i + 11 * k + 5) % vocab;
	return n;
}

/* Greedy on a session of its own: out[STEPS] ids, logits[STEPS][vocab] of each step. */
static void single(struct eng_model *m, const struct eng_session_options *o, int i, int *out,
		   float *logits_out)
{
	struct eng_session *s = NULL;
	struct eng_error err;
	int vocab = eng_model_info(m)->vocab_size, p[MAX_PROMPT];
	int n = prompt_of(i, vocab, p);
	const float *lg;
	T_EQ_INT(eng_session_new(&s, m, o, &err), 0);
	if (!s)
		return;
	T_EQ_INT(eng_session_prefill(s, p, n, 0, &lg, NULL), 0);
	for (int k = 0; k < STEPS; k++) {
		memcpy(logits_out + (size_t)k * (size_t)vocab, lg, sizeof(float) * (size_t)vocab);
		out[k] = t_argmax(lg, vocab);
		T_EQ_INT(eng_session_step(s, out[k], n + k, &lg, NULL), 0);
	}
	eng_session_free(s);
}

/* Weights one batched step of n tokens reads, from the tensor table: every tensor's step
 * bytes once, and one more embedding row per token after the first. */
static uint64_t batch_weights(const struct eng_model *m, int n)
{
	struct eng_tensor_table *t = NULL;
	struct eng_error err;
	uint64_t sum = 0, row = 0;
	T_EQ_INT(eng_model_tensors(m, &t, &err), 0);
	if (!t)
		return 0;
	for (size_t k = 0; k < t->n; k++) {
		sum += t->t[k].step_bytes;
		if (t->t[k].cls == ENG_TENSOR_EMBEDDING)
			row = t->t[k].step_bytes;
	}
	eng_tensor_table_free(t);
	return sum + (uint64_t)(n - 1) * row;
}

/* want[i] and want_lg (i's STEPS x vocab floats at i * lsz) are sequence i's single runs,
 * made once per model and session options for every N (run_model): the same sessions give
 * the same bits, so each N compares with the same reference (issue 44: they were made again
 * for every N, 18 runs where 8 differ). */
static void check_batch(const char *name, struct eng_model *m, struct eng_session_options o,
			int n_seq, size_t kv_elem, int want[MAX_SEQ][STEPS], const float *want_lg)
{
	const struct eng_model_info *info = eng_model_info(m);
	int vocab = info->vocab_size;
	size_t lsz = (size_t)STEPS * (size_t)vocab;
	int got[MAX_SEQ][STEPS], len[MAX_SEQ], tok[MAX_SEQ], pos[MAX_SEQ];
	struct eng_session *s = NULL;
	struct eng_error err;
	const float *lg;
	int bad_logits = 0;

	o.n_seq = n_seq;
	T_EQ_INT(eng_session_new(&s, m, &o, &err), 0);
	if (!s)
		goto out;
	T_EQ_INT(eng_session_n_seq(s), n_seq);
	/* Prefill in reverse order, so a sequence's region is not simply where the last
	 * prefill left the cache. */
	for (int i = n_seq - 1; i >= 0; i--) {
		int p[MAX_PROMPT];
		len[i] = prompt_of(i, vocab, p);
		T_EQ_INT(eng_session_prefill_seq(s, i, p, len[i], 0, &lg, NULL), 0);
		tok[i] = t_argmax(lg, vocab);
		pos[i] = len[i];
	}
	uint64_t kv_pos = 2 * (uint64_t)info->n_layers * (uint64_t)info->dim /
			  (uint64_t)info->n_heads * (uint64_t)info->n_kv_heads * kv_elem;
	uint64_t weights = batch_weights(m, n_seq);
	for (int k = 0; k < STEPS; k++) {
		struct eng_step_bytes b;
		for (int i = 0; i < n_seq; i++)
			got[i][k] = tok[i];
		T_EQ_INT(eng_session_step_seqs(s, n_seq, NULL, tok, pos, &lg, &b), 0);
		uint64_t cells = 0;
		for (int i = 0; i < n_seq; i++)
			cells += (uint64_t)pos[i] + 1;
		T_EQ_U64(b.weights, weights);
		T_EQ_U64(b.kv_read, cells * kv_pos);
		T_EQ_U64(b.kv_write, (uint64_t)n_seq * kv_pos);
		for (int i = 0; i < n_seq; i++) {
			const float *row = lg + (size_t)i * (size_t)vocab;
			if (k + 1 < STEPS &&
			    memcmp(row, want_lg + (size_t)i * lsz + (size_t)(k + 1) * (size_t)vocab,
				   sizeof(float) * (size_t)vocab))
				bad_logits++;
			tok[i] = t_argmax(row, vocab);
			pos[i]++;
		}
	}
	T_EQ_INT(bad_logits, 0);
	for (int i = 0; i < n_seq; i++)
		for (int k = 0; k < STEPS; k++)
			if (got[i][k] != want[i][k]) {
				T_FAIL_AT(__FILE__, __LINE__, "%s N=%d seq %d step %d: %d != %d", name,
					  n_seq, i, k, got[i][k], want[i][k]);
				break;
			}
	printf("%s: N=%d, %d steps: ids and logits as single-sequence runs\n", name, n_seq,
	       STEPS);
out:
	eng_session_free(s);
}

/* A subset of sequences in one step, and the refusals. */
static void check_api(struct eng_model *m)
{
	struct eng_session *s = NULL;
	struct eng_error err;
	struct eng_session_options o = { .threads = 1, .n_seq = 3 };
	const float *lg;
	int bos[1] = { 1 };
	T_EQ_INT(eng_session_new(&s, m, &o, &err), 0);
	if (!s)
		return;
	for (int i = 0; i < 3; i++)
		T_EQ_INT(eng_session_prefill_seq(s, i, bos, 1, 0, NULL, NULL), 0);
	T_EQ_INT(eng_session_prefill_seq(s, 3, bos, 1, 0, NULL, NULL), -EINVAL);
	int seqs[2] = { 2, 0 }, tok[4] = { 5, 6, 7, 8 }, pos[4] = { 1, 1, 1, 1 };
	T_EQ_INT(eng_session_step_seqs(s, 2, seqs, tok, pos, &lg, NULL), 0);
	int dup[2] = { 1, 1 };
	T_EQ_INT(eng_session_step_seqs(s, 2, dup, tok, pos, &lg, NULL), -EINVAL);
	T_EQ_INT(eng_session_step_seqs(s, 4, NULL, tok, pos, &lg, NULL), -EINVAL);
	int far[3] = { 1, 3, 1 }; /* sequence 1 holds one position: 3 is beyond its next */
	T_EQ_INT(eng_session_step_seqs(s, 3, NULL, tok, far, &lg, NULL), -EINVAL);
	int bad_seq[1] = { -1 };
	T_EQ_INT(eng_session_step_seqs(s, 1, bad_seq, tok, pos, &lg, NULL), -EINVAL);
	eng_session_free(s);
}

static const int sizes[] = { 1, 2, 3, 4, 8 };

static void run_model(const char *name, const char *path, enum eng_load_mode load,
		      enum eng_kv_type kv, size_t kv_elem, int threads)
{
	struct eng_model *m = NULL;
	struct eng_error err;
	struct eng_model_options mo = { .load = load };
	if (eng_model_open(&m, path, &mo, &err)) {
		T_FAIL_AT(__FILE__, __LINE__, "%s: %s", path, err.text);
		return;
	}
	struct eng_session_options o = { .threads = threads, .kv_type = kv };
	size_t lsz = (size_t)STEPS * (size_t)eng_model_info(m)->vocab_size;
	float *want_lg = malloc(sizeof(float) * lsz * MAX_SEQ);
	static int want[MAX_SEQ][STEPS];
	for (int i = 0; want_lg && i < MAX_SEQ; i++)
		single(m, &o, i, want[i], want_lg + (size_t)i * lsz);
	for (size_t i = 0; want_lg && i < sizeof(sizes) / sizeof(sizes[0]); i++)
		check_batch(name, m, o, sizes[i], kv_elem, want, want_lg);
	T_ASSERT(want_lg != NULL);
	free(want_lg);
	if (load == ENG_LOAD_MMAP && kv == ENG_KV_AUTO && threads == 1)
		check_api(m);
	eng_model_close(m);
}

/* Synthetic models of the varied construction (issue 26), whose ids change at every step, so
 * a sequence that read another's cache would show in its ids as well as its logits: these
 * need nothing from ../shared. */
static void run_varied(void)
{
	static char dir[] = "/tmp/mw-test-batch-XXXXXX";
	char path[4200];
	if (!mkdtemp(dir)) {
		T_ASSERT(0);
		return;
	}
	snprintf(path, sizeof(path), "%s/s15m.bin", dir);
	if (!t_id_synth_l2c(path, "stories15M", 1, ENG_SYNTH_VARIED, ENG_ACT_SILU)) {
		run_model("stories15M varied", path, ENG_LOAD_MMAP, ENG_KV_AUTO, sizeof(float), 1);
		run_model("stories15M varied 2 threads", path, ENG_LOAD_MMAP, ENG_KV_AUTO,
			  sizeof(float), 2);
	} else {
		T_ASSERT(0);
	}
	unlink(path);
	snprintf(path, sizeof(path), "%s/s15m-q4_0.gguf", dir);
	if (!t_id_synth_gguf(path, "llama", "stories15M", "q4_0", 1, ENG_SYNTH_VARIED)) {
		run_model("stories15M q4_0 varied", path, ENG_LOAD_MMAP, ENG_KV_AUTO, 2, 1);
		run_model("stories15M q4_0 varied repacked", path, ENG_LOAD_REPACK, ENG_KV_AUTO, 2,
			  1);
	} else {
		T_ASSERT(0);
	}
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	run_varied();
	const char *shared = getenv("MEMWALL_SHARED");
	char golden[4200];
	snprintf(golden, sizeof(golden), "%s/models/stories260K.bin", shared ? shared : "");
	if (!shared || access(golden, R_OK)) {
		printf("%s not found (the golden model lives in ../shared/models): its checks "
		       "skipped\n", golden);
		return t_done();
	}
	run_model("stories260K", golden, ENG_LOAD_MMAP, ENG_KV_AUTO, sizeof(float), 1);
	run_model("stories260K 2 threads", golden, ENG_LOAD_MMAP, ENG_KV_AUTO, sizeof(float), 2);
	static const char *const fixtures[] = { "tiny-llama-Q4_0", "tiny-falcon-Q8_0" };
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		char rel[256];
		snprintf(rel, sizeof(rel), "fixtures/gguf/models/%s.gguf", fixtures[i]);
		char path[4200];
		snprintf(path, sizeof(path), "%s/%s", shared, rel);
		if (access(path, R_OK)) {
			printf("%s not found: skipped\n", path);
			continue;
		}
		run_model(fixtures[i], path, ENG_LOAD_MMAP, ENG_KV_AUTO, 2, 1);
		run_model(fixtures[i], path, ENG_LOAD_REPACK, ENG_KV_AUTO, 2, 1);
	}
	return t_done();
}
