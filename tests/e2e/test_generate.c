/* tests/e2e/test_generate.c: `memwall generate` end to end on a synthetic stories260K: ids, the
 * summary line, no-op hooks changing nothing, and bad input; --batch N and --prompts FILE
 * against one-sequence runs (and on a llama.cpp fixture when ../shared is at hand). */
#include <math.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "run.h"
#include "test.h"
#include "values.h"

static char dir[] = "/tmp/mw-test-generate-XXXXXX";
static char model[4200];

static int count_lines(const char *s)
{
	int n = 0;
	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/* Sequence i's block of a --batch run's stdout: what follows "# sequence i (seed S)\n" up to
 * the next such line. Malloc'd; "" when absent. */
static char *seq_block(const char *out, int i)
{
	char head[64];
	snprintf(head, sizeof(head), "# sequence %d (", i);
	const char *p = out ? strstr(out, head) : NULL;
	if (!p)
		return strdup("");
	p = strchr(p, '\n');
	p = p ? p + 1 : "";
	const char *end = strstr(p, "# sequence ");
	return strndup(p, end ? (size_t)(end - p) : strlen(p));
}

/* generate's stdout for one sequence: -m model, the prompt ids, seed, temperature; loaded
 * with repack, as --batch loads (the default, overlap, runs the first token on the mapping,
 * whose kernels agree with the x8 ones to float rounding only). */
static char *single_ids(const char *m, const char *ids, long seed, const char *temp)
{
	char sd[32];
	snprintf(sd, sizeof(sd), "%ld", seed);
	const char *argv[] = { "memwall", "generate", "-m", m, "-n", "10", "--ids", "--prompt-ids",
			       ids, "--seed", sd, "--temperature", temp, "--load", "repack",
			       NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	char *r = strdup(o.out ? o.out : "");
	t_output_free(&o);
	return r;
}

/* --batch n (same prompt, seeds 3 + i) against n one-sequence runs. */
static void batch_same_prompt(const char *m, int n, const char *temp)
{
	char nb[16];
	snprintf(nb, sizeof(nb), "%d", n);
	const char *argv[] = { "memwall", "generate", "-m", m, "-n", "10", "--ids", "--prompt-ids",
			       "1,300,301", "--seed", "3", "--temperature", temp, "--batch", nb,
			       "--report-line", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	for (int i = 0; i < n; i++) {
		char *want = single_ids(m, "1,300,301", 3 + i, temp), *got = seq_block(o.out, i);
		T_EQ_STR(got, want);
		free(want);
		free(got);
	}
	char *extra = seq_block(o.out, n);
	T_EQ_STR(extra, "");
	free(extra);
	char want_batch[64];
	snprintf(want_batch, sizeof(want_batch), "batch %d, ", n);
	T_CONTAINS(o.err, want_batch);
	T_CONTAINS(o.err, "tok/s decode");
	T_CONTAINS(o.err, "tok/s per sequence");
	T_CONTAINS(o.err, "memwall-tokens: decode=");
	T_CONTAINS(o.err, "memwall-bytes: engine_bytes_per_token=");
	t_output_free(&o);
}

/* weights_per_token of --batch n: the tensor table's step bytes once per step, plus an
 * embedding row per token, shared by the n tokens; engine_bytes_per_token is the weights and
 * the KV bytes read and written (one meaning, as in records). */
static void batch_bytes(const char *m, int n)
{
	char nb[16];
	snprintf(nb, sizeof(nb), "%d", n);
	const char *argv[] = { "memwall", "generate", "-m", m, "-n", "6", "--ids", "--temperature",
			       "0", "--batch", nb, "--report-line", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	double sum, row;
	t_step_bytes(m, &sum, &row);
	const char *p = o.err ? strstr(o.err, "weights_per_token=") : NULL;
	const char *e = o.err ? strstr(o.err, "engine_bytes_per_token=") : NULL;
	const char *kr = o.err ? strstr(o.err, "kv_read_per_token=") : NULL;
	const char *kw = o.err ? strstr(o.err, "kv_write_per_token=") : NULL;
	T_ASSERT(p && e && kr && kw);
	if (p && e && kr && kw) {
		double w = strtod(p + strlen("weights_per_token="), NULL);
		double r = strtod(kr + strlen("kv_read_per_token="), NULL);
		double wr = strtod(kw + strlen("kv_write_per_token="), NULL);
		T_NEAR(w, (sum + (n - 1) * row) / n, 0.51);
		T_ASSERT(r > 0 && wr > 0);
		T_NEAR(strtod(e + strlen("engine_bytes_per_token="), NULL), w + r + wr, 1.51);
	}
	t_output_free(&o);
}

/* --prompts: lines of different lengths, cycled over an odd batch, each sequence as a run of
 * its own with that line's ids and seed 5 + i. */
static void batch_prompts(const char *m)
{
	static const char *const lines[] = { "1", "1,5,9,13,17,21", "1,7,8" };
	char path[4300];
	snprintf(path, sizeof(path), "%s/prompts.txt", dir);
	FILE *f = fopen(path, "w");
	T_ASSERT(f);
	if (!f)
		return;
	fprintf(f, "ids:%s\n\nids:%s\nids:%s\n", lines[0], lines[1], lines[2]);
	fclose(f);
	const char *argv[] = { "memwall", "generate", "-m", m, "-n", "10", "--ids", "--prompts",
			       path, "--seed", "5", "--temperature", "0.7", "--batch", "5", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	for (int i = 0; i < 5; i++) {
		char *want = single_ids(m, lines[i % 3], 5 + i, "0.7"), *got = seq_block(o.out, i);
		T_EQ_STR(got, want);
		free(want);
		free(got);
	}
	t_output_free(&o);
	/* Without --batch: one sequence per line. */
	const char *per_line[] = { "memwall", "generate", "-m", m, "-n", "4", "--ids", "--prompts",
				   path, NULL };
	o = t_run(per_line);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "# sequence 2 (");
	T_ASSERT(!strstr(o.out ? o.out : "", "# sequence 3 ("));
	t_output_free(&o);
	const char *both[] = { "memwall", "generate", "-m", m, "--prompts", path, "-p", "x", NULL };
	T_RUN_EXPECT(both, 2, NULL, NULL);
	unlink(path);
}

static void check_batch(void)
{
	static const int sizes[] = { 1, 2, 3, 4, 8 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		batch_same_prompt(model, sizes[i], "0");
	batch_same_prompt(model, 3, "0.8");
	batch_bytes(model, 1);
	batch_bytes(model, 4);
	batch_prompts(model);
	/* A llama.cpp fixture (GGUF Q4_0, F16 KV), when ../shared is beside the checkout. */
	const char *shared = getenv("MEMWALL_SHARED");
	char gguf[4200];
	snprintf(gguf, sizeof(gguf), "%s/fixtures/gguf/models/tiny-llama-Q4_0.gguf",
		 shared ? shared : "");
	if (shared && access(gguf, R_OK) == 0) {
		batch_same_prompt(gguf, 4, "0");
		batch_same_prompt(gguf, 3, "0.8");
	} else {
		printf("generate: %s absent, the fixture's --batch check skipped\n", gguf);
	}
}

/* A number after KEY= in s; NaN when absent. */
static double num_after(const char *s, const char *key)
{
	const char *p = s ? strstr(s, key) : NULL;
	return p ? strtod(p + strlen(key), NULL) : NAN;
}

/* Load modes and pinning: the same tokens whatever the mode; the memwall-load line says which
 * mode ran (the default: overlap, whose image is repack's, built on the CPUs after the
 * session's two threads: none on a 2-CPU machine), and time to first token contains
 * the load; under mmap the summary counts the first token's page faults instead of calling
 * the load done. */
static void check_load(void)
{
	static const char *const modes[] = { NULL, "mmap", "huge-copy", "repack" };
	static const char *const pins[] = { "cpus", "none", "none", "cpus" };
	char *want = NULL;
	cpu_set_t mask;
	T_EQ_INT(sched_getaffinity(0, sizeof(mask), &mask), 0);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		const char *argv[] = { "memwall", "generate", "-m", model, "-n", "12", "--ids",
				       "--temperature", "0", "-t", "2", "--report-line", "--pin",
				       pins[i], modes[i] ? "--load" : NULL, modes[i], NULL };
		struct t_output o = t_run(argv);
		T_EQ_INT(o.status, 0);
		if (!want)
			want = strdup(o.out ? o.out : "");
		else
			T_EQ_STR(o.out, want);
		char line[64];
		snprintf(line, sizeof(line), "memwall-load: mode=%s ", modes[i] ? modes[i] : "overlap");
		T_CONTAINS(o.err, line);
		snprintf(line, sizeof(line), "(pin %s)", pins[i]);
		T_CONTAINS(o.err, line);
		double ttft = num_after(o.err, "ttft_ms="), load = num_after(o.err, " load_ms=");
		T_ASSERT(ttft >= load && load > 0);
		double threads = num_after(o.err, "load_threads=");
		if (modes[i] && !strcmp(modes[i], "mmap")) {
			T_CONTAINS(o.err, "page faults");
			T_CONTAINS(o.err, "counted in its time");
			T_NEAR(threads, 0, 0);
		} else if (!modes[i] && CPU_COUNT(&mask) <= 2) {
			/* The default at -t 2 with no CPU left for the image: none is built. */
			T_CONTAINS(o.err, " image=skipped image_ms=0.000 image_cpus=none "
					  "tokens_on_mapping=12 tokens_on_image=0");
			T_CONTAINS(o.err, "no image: the session's threads take every CPU");
			T_NEAR(threads, 0, 0);
		} else if (!modes[i] && strstr(o.err ? o.err : "", " image=unused ")) {
			/* The default never waits for the image: a slow machine (ASan, a busy one)
			 * may end these 12 tokens before it is ready, and then every token ran on
			 * the mapping, which no thread loaded. */
			T_CONTAINS(o.err, "tokens_on_mapping=12 tokens_on_image=0");
			T_CONTAINS(o.err, "the run ended before the image was ready");
			T_NEAR(threads, 0, 0);
		} else {
			/* One thread per 2 MiB piece of the file at most, and per CPU of the mask;
			 * the default's image only on the CPUs after the session's two. */
			struct stat st;
			T_EQ_INT(stat(model, &st), 0);
			long pieces = (long)((st.st_size + (2 << 20) - 1) / (2 << 20));
			long cpus = CPU_COUNT(&mask) - (modes[i] ? 0 : 2);
			long want_t = pieces < cpus ? pieces : cpus;
			T_NEAR(threads, (double)want_t, 0);
			snprintf(line, sizeof(line), "on %ld thread%s", want_t, want_t == 1 ? "," : "s,");
			T_CONTAINS(o.err, line);
		}
		t_output_free(&o);
	}
	free(want);
	const char *bad[] = { "memwall", "generate", "-m", model, "--pin", "all", NULL };
	T_RUN_EXPECT(bad, 2, NULL, T_LIST("--pin all"));
}

int main(void)
{
	t_mkdtemp(dir);
	snprintf(model, sizeof(model), "%s/s260k.bin", dir);
	struct eng_error err;
	eng_error_clear(&err);
	if (eng_synth_llama2c(model, "stories260K", 1, &err))
		return 1;

	const char *plain[] = { "memwall", "generate", "-m", model, "-n", "12", "--ids",
				"--temperature", "0.8", "--seed", "3", NULL };
	struct t_output a = t_run(plain);
	T_EQ_INT(a.status, 0);
	T_EQ_INT(count_lines(a.out), 12);
	T_CONTAINS(a.err, "12 tokens");
	T_CONTAINS(a.err, "tok/s decode");
	T_CONTAINS(a.err, "first token");
	T_CONTAINS(a.err, "threads 1");
	T_CONTAINS(a.err, "synthetic model");

	const char *hooked[] = { "memwall", "generate", "-m", model, "-n", "12", "--ids",
				 "--temperature", "0.8", "--seed", "3", "--hooks-bench", "-t", "2",
				 NULL };
	struct t_output b = t_run(hooked);
	T_EQ_INT(b.status, 0);
	T_EQ_STR(b.out, a.out);
	T_CONTAINS(b.err, "no-op hooks");
	T_CONTAINS(b.err, "threads 2");
	t_output_free(&b);

	/* No tokenizer beside the model: ids, with a note. */
	const char *noids[] = { "memwall", "generate", "-m", model, "-n", "12", "--temperature",
				"0.8", "--seed", "3", NULL };
	b = t_run(noids);
	T_EQ_INT(b.status, 0);
	T_EQ_STR(b.out, a.out);
	T_CONTAINS(b.err, "printing token ids");
	t_output_free(&b);
	t_output_free(&a);

	const char *prompt[] = { "memwall", "generate", "-m", model, "-p", "hello", NULL };
	T_RUN_EXPECT(prompt, 2, NULL, T_LIST("-z"));

	const char *missing[] = { "memwall", "generate", "-m", "/nonexistent/model.bin", NULL };
	T_RUN_EXPECT(missing, 2, NULL, T_LIST("/nonexistent/model.bin"));

	const char *kv[] = { "memwall", "generate", "-m", model, "--kv", "q8", NULL };
	T_RUN_EXPECT(kv, 2, NULL, NULL);

	check_batch();
	check_load();

	unlink(model);
	rmdir(dir);
	return t_done();
}
