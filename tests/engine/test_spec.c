/* tests/engine/test_spec.c: speculative decoding (issue 17). The engine: eng_session_verify gives
 * every token of its pass the logits a one-token step gives it, bit for bit, and
 * eng_session_truncate lets the next pass overwrite the rejected positions. The command:
 * `memwall generate --speculate lookup[:K[:NG]]` prints what plain greedy decoding prints, for
 * repetitive and non-repetitive prompts and several K, and its counts add up: accepted <=
 * proposed, generated = 1 + passes + accepted, and engine bytes per generated token =
 * (passes x the one-token step's bytes + an embedding row per draft token) / (generated - 1).
 * On a synthetic stories260K, the real one when ../shared/models has it, and llama.cpp
 * fixtures when ../shared/fixtures has them. */
#include <errno.h>
#include <unistd.h>

#include "engine.h"
#include "run.h"
#include "test.h"
#include "values.h"
#include "identity.h"

static char dir[] = "/tmp/mw-test-spec-XXXXXX";

static const char *const repetitive = "1,5,6,7,8,9,5,6,7,8,9,5,6,7,8,9,5,6,7,8";
static const char *const plain_prompt = "1,300,301,17,42,99";

/* Two sessions over one model, one verifying, one stepping: each verified row equals the
 * stepped logits; after a truncate, a pass from the kept position again matches. */
static void engine_check(const char *path)
{
	struct eng_model *m = NULL;
	struct eng_session *v = NULL, *st = NULL, *none = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	T_EQ_INT(eng_model_open(&m, path, NULL, &err), 0);
	if (!m)
		return;
	struct eng_session_options vo = { .verify_tokens = 6 }, so = { 0 };
	T_EQ_INT(eng_session_new(&v, m, &vo, &err), 0);
	T_EQ_INT(eng_session_new(&st, m, &so, &err), 0);
	T_EQ_INT(eng_session_new(&none, m, &so, &err), 0);
	int vocab = eng_model_info(m)->vocab_size;
	int prompt[] = { 1, 5 % vocab, 6 % vocab, 7 % vocab };
	int toks[] = { 8 % vocab, 9 % vocab, 5 % vocab, 6 % vocab, 7 % vocab, 3 % vocab };
	const float *lv, *ls;
	size_t row = (size_t)vocab * sizeof(float);
	float *want = malloc(6 * row);
	T_ASSERT(want && v && st && none);
	if (!want || !v || !st || !none)
		goto out;
	T_EQ_INT(eng_session_prefill(v, prompt, 4, 0, &lv, NULL), 0);
	T_EQ_INT(eng_session_prefill(st, prompt, 4, 0, &ls, NULL), 0);
	for (int t = 0; t < 6; t++) {
		T_EQ_INT(eng_session_step(st, toks[t], 4 + t, &ls, NULL), 0);
		memcpy(want + (size_t)t * (size_t)vocab, ls, row);
	}
	struct eng_step_bytes b;
	T_EQ_INT(eng_session_verify(v, toks, 6, 4, &lv, &b), 0);
	for (int t = 0; t < 6; t++)
		T_ASSERT(!memcmp(lv + (size_t)t * (size_t)vocab, want + (size_t)t * (size_t)vocab,
				 row));
	T_ASSERT(b.kv_write > 0 && b.weights > 0);
	/* Keep 4 + 2 positions; a different continuation from position 6. */
	int other[] = { 11 % vocab, 12 % vocab, 13 % vocab };
	T_EQ_INT(eng_session_truncate(v, 6), 0);
	T_EQ_INT(eng_session_verify(v, other, 3, 6, &lv, NULL), 0);
	for (int t = 0; t < 3; t++) {
		T_EQ_INT(eng_session_step(st, other[t], 6 + t, &ls, NULL), 0);
		T_ASSERT(!memcmp(lv + (size_t)t * (size_t)vocab, ls, row));
	}
	/* Refusals: past verify_tokens, a session without them, positions beyond the next. */
	T_EQ_INT(eng_session_verify(v, toks, 7, 6, &lv, NULL), -EINVAL);
	T_EQ_INT(eng_session_verify(none, toks, 1, 0, &lv, NULL), -EINVAL);
	T_EQ_INT(eng_session_truncate(v, 10), -EINVAL);
	T_EQ_INT(eng_session_truncate(v, -1), -EINVAL);
	T_EQ_INT(eng_session_verify(v, toks, 2, 10, &lv, NULL), -EINVAL);
out:
	free(want);
	eng_session_free(v);
	eng_session_free(st);
	eng_session_free(none);
	eng_model_close(m);
}

/* --speculate spec against plain greedy on prompt ids, n tokens; returns the acceptance. */
static double cli_check(const char *m, const char *ids, const char *spec, const char *n,
			const char *load)
{
	const char *plain[] = { "memwall", "generate", "-m", m, "-n", n, "--ids", "--prompt-ids",
				ids, "--temperature", "0", "--load", load, NULL };
	const char *sp[] = { "memwall", "generate", "-m", m, "-n", n, "--ids", "--prompt-ids", ids,
			     "--temperature", "0", "--load", load, "--report-line", "--speculate",
			     spec, NULL };
	struct t_output a = t_run(plain), b = t_run(sp);
	T_EQ_INT(a.status, 0);
	T_EQ_INT(b.status, 0);
	T_EQ_STR(b.out, a.out);
	T_CONTAINS(b.err, "draft tokens accepted");
	T_CONTAINS(b.err, "memwall-tokens: decode=");
	double gen = t_key_num(b.err, "decode"), passes = t_key_num(b.err, "spec_passes");
	double proposed = t_key_num(b.err, "spec_proposed"),
	       accepted = t_key_num(b.err, "spec_accepted");
	T_NEAR(gen, strtod(n, NULL), 0);
	T_ASSERT(accepted >= 0 && accepted <= proposed);
	T_NEAR(gen, 1 + passes + accepted, 0);
	T_NEAR(t_key_num(b.err, "passes_per_token"), passes / (gen - 1), 1e-4);
	double step, row;
	t_step_bytes(m, &step, &row);
	T_NEAR(t_key_num(b.err, "weights_per_token"), (passes * step + proposed * row) / (gen - 1),
	       0.51);
	T_NEAR(t_key_num(b.err, "engine_bytes_per_token"),
	       t_key_num(b.err, "weights_per_token") + t_key_num(b.err, "kv_read_per_token") +
		   t_key_num(b.err, "kv_write_per_token"),
	       1.51);
	t_output_free(&a);
	t_output_free(&b);
	return proposed ? accepted / proposed : 0;
}

static void cli_model(const char *m, const char *load)
{
	static const char *const specs[] = { "lookup", "lookup:1", "lookup:2", "lookup:8",
					      "lookup:3:1", "lookup:5:3" };
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		double acc = cli_check(m, repetitive, specs[i], "40", load);
		cli_check(m, plain_prompt, specs[i], "24", load);
		/* The repeated sentence gives drafts the model takes. */
		if (i == 0)
			T_ASSERT(acc > 0);
	}
	/* One token: no verification pass at all; two: one. */
	cli_check(m, repetitive, "lookup", "2", load);
}

/* A text prompt through a model's own tokenizer: the same text as plain greedy decoding. */
static void text_check(const char *m)
{
	const char *p = "Lily had a red ball. Lily had a red ball. Lily had a red ball.";
	const char *plain[] = { "memwall", "generate", "-m", m, "-n", "32", "-p", p,
				"--temperature", "0", NULL };
	const char *sp[] = { "memwall", "generate", "-m", m, "-n", "32", "-p", p, "--temperature",
			     "0", "--speculate", "lookup:6", NULL };
	struct t_output a = t_run(plain), b = t_run(sp);
	T_EQ_INT(a.status, 0);
	T_EQ_INT(b.status, 0);
	T_EQ_STR(b.out, a.out);
	t_output_free(&a);
	t_output_free(&b);
}

static void refusals(const char *m)
{
	const char *warm[] = { "memwall", "generate", "-m", m, "-n", "4", "--ids",
			       "--temperature", "0.8", "--speculate", "lookup", NULL };
	struct t_output o = t_run(warm);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "--temperature 0");
	t_output_free(&o);
	static const char *const bad[] = { "draft", "lookup:0", "lookup:4:0", "lookup:x",
					   "lookup:4:2:1", "lookupx" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *argv[] = { "memwall", "generate", "-m", m, "-n", "4", "--temperature",
				       "0", "--speculate", bad[i], NULL };
		T_RUN_EXPECT(argv, 2, NULL, T_LIST("lookup[:K[:NG]]"));
	}
	const char *batch[] = { "memwall", "generate", "-m", m, "-n", "4", "--temperature", "0",
				"--speculate", "lookup", "--batch", "2", NULL };
	T_RUN_EXPECT(batch, 2, NULL, NULL);
}

int main(void)
{
	t_mkdtemp(dir);
	char model[4200];
	snprintf(model, sizeof(model), "%s/s260k.bin", dir);
	struct eng_error err;
	eng_error_clear(&err);
	if (eng_synth_llama2c(model, "stories260K", 1, &err))
		return 1;
	engine_check(model);
	cli_model(model, "mmap");
	refusals(model);
	/* The varied construction (issue 26): verification's rows against steps whose ids
	 * change, bit for bit; the command's ids against plain greedy */
	unlink(model);
	T_EQ_INT(t_id_synth_l2c(model, "stories260K", 1, ENG_SYNTH_VARIED, ENG_ACT_SILU), 0);
	engine_check(model);
	cli_model(model, "mmap");
	unlink(model); /* the name is reused below: the folder must be empty at the end */
	snprintf(model, sizeof(model), "%s/s15m.bin", dir);
	T_EQ_INT(t_id_synth_l2c(model, "stories15M", 1, ENG_SYNTH_VARIED, ENG_ACT_SILU), 0);
	engine_check(model);

	for (int i = 0; i < T_SHARED_MODELS; i++) {
		char path[4200];
		if (!t_have_shared(t_shared_models[i], path, sizeof(path)))
			continue;
		engine_check(path);
		cli_model(path, "mmap");
		/* Repacked (x8) weights: the classifier over every token through the x8 path. */
		cli_check(path, repetitive, "lookup", "40", "repack");
		if (strstr(path, ".gguf"))
			text_check(path);
	}
	unlink(model);
	rmdir(dir);
	return t_done();
}
