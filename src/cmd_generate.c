/* src/cmd_generate.c: `memwall generate`: run a model from a prompt and print what it writes,
 * then one summary line (tokens, decode tok/s, time to first token) on stderr. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "mw.h"
#include "verbs.h"

#define VERB "generate"

static const char *const kv_names[] = {
	[ENG_KV_F32] = "f32",
	[ENG_KV_F16] = "f16",
};

struct gen_args {
	const char *model, *tokenizer, *prompt, *kernels, *kv_name;
	long steps, threads, seed;
	double temperature, topp;
	bool ids, populate, hugepages, hooks_bench;
	enum eng_kv_type kv;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall generate -m MODEL [-z TOKENIZER] [-p PROMPT] [-n STEPS]\n"
		"                        [--temperature T] [--topp P] [--seed S] [-t|--threads N]\n"
		"                        [--kernels ref|auto|avx2|avx512|neon] [--ids] [--kv f32|f16]\n"
		"                        [--populate] [--hugepages] [--hooks-bench]\n\n"
		"Runs a llama2.c checkpoint from BOS (and the prompt) and prints the text it\n"
		"generates as it goes, then one line on stderr: tokens, decode tok/s, time to first\n"
		"token (model load included), kernels, threads, and whether the model is synthetic.\n\n"
		"  -m, --model FILE      llama2.c checkpoint (legacy or ak42 version 1)\n"
		"  -z, --tokenizer FILE  llama2.c tokenizer.bin; default: tokenizer.bin beside the\n"
		"                        model, else token ids are printed (as with --ids)\n"
		"  -p, --prompt TEXT     text to continue (needs a tokenizer)\n"
		"  -n, --steps N         tokens to generate after the prompt (default 256)\n"
		"      --temperature T   0 is greedy (default 1.0)\n"
		"      --topp P          nucleus sampling in (0, 1); 0 or 1 turns it off (default 0.9)\n"
		"      --seed S          sampler seed; the same seed gives the same text (default 1)\n"
		"  -t, --threads N       threads (default 1)\n"
		"      --kernels NAME    kernel table (default auto: the best this CPU runs)\n"
		"      --ids             print token ids, one per line, instead of text\n"
		"      --kv TYPE         KV cache element type: f32 (default) or f16\n"
		"      --populate        map the model with MAP_POPULATE (fault it all in at load)\n"
		"      --hugepages       ask for huge pages on the model's mapping (madvise)\n"
		"      --hooks-bench     install no-op per-token and per-phase hooks, to measure what\n"
		"                        the instrumentation costs against a run without them\n");
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The hooks --hooks-bench installs: called like the harness's, doing nothing. */
static void noop_phase(void *ctx, enum eng_phase phase, int layer, bool begin)
{
	(void)ctx;
	(void)phase;
	(void)layer;
	(void)begin;
}

static void noop_token(void *ctx, int pos, int token, const struct eng_step_bytes *bytes)
{
	(void)ctx;
	(void)pos;
	(void)token;
	(void)bytes;
}

/* Prints a piece, skipping lone control bytes (as run.c's safe_printf does). */
static void print_piece(const char *piece)
{
	if (!piece || !piece[0])
		return;
	if (!piece[1]) {
		unsigned char b = (unsigned char)piece[0];
		if (b < 0x20 && b != '\n' && b != '\t')
			return;
	}
	fputs(piece, stdout);
}

static int eng_fail(int code, const struct eng_error *e)
{
	return mw_fail(code, VERB, "%s%s%s", e->source, e->source[0] ? ": " : "", e->text);
}

static int parse_args(struct gen_args *a, int argc, char **argv)
{
	enum { O_TEMP = 256, O_TOPP, O_SEED, O_KERNELS, O_IDS, O_KV, O_POPULATE, O_HUGE, O_HOOKS };
	static const struct option longopts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "tokenizer", required_argument, NULL, 'z' },
		{ "prompt", required_argument, NULL, 'p' },
		{ "steps", required_argument, NULL, 'n' },
		{ "threads", required_argument, NULL, 't' },
		{ "temperature", required_argument, NULL, O_TEMP },
		{ "topp", required_argument, NULL, O_TOPP },
		{ "seed", required_argument, NULL, O_SEED },
		{ "kernels", required_argument, NULL, O_KERNELS },
		{ "ids", no_argument, NULL, O_IDS },
		{ "kv", required_argument, NULL, O_KV },
		{ "populate", no_argument, NULL, O_POPULATE },
		{ "hugepages", no_argument, NULL, O_HUGE },
		{ "hooks-bench", no_argument, NULL, O_HOOKS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":m:z:p:n:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm': a->model = optarg; break;
		case 'z': a->tokenizer = optarg; break;
		case 'p': a->prompt = optarg; break;
		case 'n':
			if (mw_parse_long(optarg, 1, 1L << 24, &a->steps))
				return mw_fail(MW_EXIT_USAGE, VERB, "-n %s: give a positive count",
					       optarg);
			break;
		case 't':
			if (mw_parse_long(optarg, 1, 1024, &a->threads))
				return mw_fail(MW_EXIT_USAGE, VERB, "--threads %s: give 1 to 1024",
					       optarg);
			break;
		case O_TEMP:
			if (mw_parse_double(optarg, 0.0, 1e6, &a->temperature))
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--temperature %s: give a number >= 0", optarg);
			break;
		case O_TOPP:
			if (mw_parse_double(optarg, 0.0, 1.0, &a->topp))
				return mw_fail(MW_EXIT_USAGE, VERB, "--topp %s: give 0 to 1", optarg);
			break;
		case O_SEED:
			if (mw_parse_long(optarg, 0, INT64_MAX, &a->seed))
				return mw_fail(MW_EXIT_USAGE, VERB, "--seed %s: give a number >= 0",
					       optarg);
			break;
		case O_KERNELS: a->kernels = optarg; break;
		case O_IDS: a->ids = true; break;
		case O_KV: a->kv_name = optarg; break;
		case O_POPULATE: a->populate = true; break;
		case O_HUGE: a->hugepages = true; break;
		case O_HOOKS: a->hooks_bench = true; break;
		case 'h':
			usage(stdout);
			return -1;
		case ':':
			return mw_fail(MW_EXIT_USAGE, VERB, "%s needs a value", argv[optind - 1]);
		default:
			return mw_fail(MW_EXIT_USAGE, VERB, "unknown option '%s' (see --help)",
				       argv[optind - 1]);
		}
	}
	if (optind < argc)
		return mw_fail(MW_EXIT_USAGE, VERB, "unexpected argument '%s'", argv[optind]);
	if (!a->model)
		return mw_fail(MW_EXIT_USAGE, VERB, "give the model with -m FILE (see --help)");
	if (a->kv_name) {
		size_t i, n = sizeof(kv_names) / sizeof(kv_names[0]);
		for (i = 0; i < n && strcmp(kv_names[i], a->kv_name); i++)
			;
		if (i == n)
			return mw_fail(MW_EXIT_USAGE, VERB, "--kv %s: give f32 or f16", a->kv_name);
		a->kv = (enum eng_kv_type)i;
	}
	return 0;
}

/* Opens -z, or tokenizer.bin beside the model; *tok stays NULL (ids are printed) when there is
 * none beside the model or it is not this model's. */
static int open_tokenizer(const struct gen_args *a, int vocab_size, struct eng_tokenizer **tok)
{
	struct eng_error err;
	eng_error_clear(&err);
	if (a->tokenizer) {
		if (eng_tokenizer_open(tok, a->tokenizer, vocab_size, &err))
			return eng_fail(MW_EXIT_USAGE, &err);
		return 0;
	}
	char *copy = strdup(a->model), path[4096];
	if (!copy)
		return mw_fail(MW_EXIT_ENV, VERB, "out of memory");
	snprintf(path, sizeof(path), "%s/tokenizer.bin", dirname(copy));
	free(copy);
	if (access(path, R_OK) == 0 && eng_tokenizer_open(tok, path, vocab_size, &err) == 0)
		return 0;
	if (!a->ids)
		fprintf(stderr, "memwall %s: note: %s; printing token ids (give -z TOKENIZER for "
			"text)\n", VERB, err.text[0] ? err.text : "no tokenizer.bin beside the model");
	return 0;
}

int mw_cmd_generate(int argc, char **argv)
{
	struct gen_args a = { .steps = 256, .threads = 1, .seed = 1, .temperature = 1.0,
			      .topp = 0.9, .kv = ENG_KV_F32 };
	struct eng_model *model = NULL;
	struct eng_tokenizer *tok = NULL;
	struct eng_session *session = NULL;
	struct eng_sampler *sampler = NULL;
	int *prompt = NULL;
	float *scratch = NULL; /* the sampler's copy of the logits */
	struct eng_error err;
	int rc = parse_args(&a, argc, argv);
	if (rc)
		return rc < 0 ? MW_EXIT_OK : rc;

	double t0 = now_seconds();
	eng_error_clear(&err);
	struct eng_model_options mopt = { .populate = a.populate, .hugepages = a.hugepages };
	if (eng_model_open(&model, a.model, &mopt, &err)) {
		rc = eng_fail(MW_EXIT_USAGE, &err);
		goto out;
	}
	double t_loaded = now_seconds();
	const struct eng_model_info *info = eng_model_info(model);
	if ((rc = open_tokenizer(&a, info->vocab_size, &tok)))
		goto out;
	if (!tok && a.prompt) {
		rc = mw_fail(MW_EXIT_USAGE, VERB, "a prompt needs the model's tokenizer: give -z FILE");
		goto out;
	}

	int n_prompt = 1, cap = a.prompt ? (int)strlen(a.prompt) + 3 : 1;
	prompt = malloc((size_t)cap * sizeof(*prompt));
	if (!prompt) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
		goto out;
	}
	prompt[0] = ENG_TOKEN_BOS;
	if (a.prompt && eng_tokenizer_encode(tok, a.prompt, true, false, prompt, cap, &n_prompt)) {
		rc = mw_fail(MW_EXIT_USAGE, VERB, "-p: the tokenizer cannot encode the prompt");
		goto out;
	}
	long positions = n_prompt - 1 + a.steps;
	if (positions > info->seq_len) {
		long steps = info->seq_len - (n_prompt - 1);
		if (steps < 1) {
			rc = mw_fail(MW_EXIT_USAGE, VERB, "the prompt (%d tokens) fills the model's "
				     "context of %d", n_prompt, info->seq_len);
			goto out;
		}
		fprintf(stderr, "memwall %s: note: -n %ld exceeds the context of %d; generating %ld\n",
			VERB, a.steps, info->seq_len, steps);
		a.steps = steps;
	}

	static const struct eng_hooks noop_hooks = { .phase = noop_phase, .token = noop_token };
	struct eng_session_options sopt = { .threads = (int)a.threads, .kernels = a.kernels,
					    .kv_type = a.kv,
					    .hooks = a.hooks_bench ? &noop_hooks : NULL };
	if (eng_session_new(&session, model, &sopt, &err)) {
		rc = eng_fail(MW_EXIT_USAGE, &err);
		goto out;
	}
	struct eng_sampler_options smp = { .temperature = (float)a.temperature,
					   .topp = (float)a.topp, .seed = (uint64_t)a.seed };
	scratch = malloc((size_t)info->vocab_size * sizeof(*scratch));
	if (!scratch || eng_sampler_new(&sampler, info->vocab_size, &smp)) {
		rc = mw_fail(MW_EXIT_USAGE, VERB, "bad sampler settings");
		goto out;
	}

	/* Feed the prompt, then sample. Text shows the prompt too, as run.c does; --ids shows
	 * only the generated tokens. */
	int token = prompt[0];
	long generated = 0;
	double t_first = 0.0;
	for (int pos = 0; generated < a.steps; pos++) {
		const float *logits;
		if ((rc = eng_session_step(session, token, pos, &logits, NULL))) {
			rc = mw_fail(MW_EXIT_ENV, VERB, "step %d failed: %s", pos, strerror(-rc));
			goto out;
		}
		int next;
		if (pos + 1 < n_prompt) {
			next = prompt[pos + 1];
		} else {
			/* The sampler scales logits in place; the session's are borrowed. */
			memcpy(scratch, logits, (size_t)info->vocab_size * sizeof(*scratch));
			next = eng_sampler_sample(sampler, scratch);
			if (++generated == 1)
				t_first = now_seconds();
		}
		if (tok && !a.ids)
			print_piece(eng_tokenizer_decode(tok, token, next));
		else if (pos + 1 >= n_prompt)
			printf("%d\n", next);
		fflush(stdout);
		token = next;
	}
	double t_end = now_seconds();
	if (tok && !a.ids)
		putchar('\n');
	fflush(stdout);

	/* Decode rate over the tokens after the first, whose time (load, prompt, page faults) is
	 * reported on its own; with one token there is no rate to give. */
	char rate[32] = "n/a";
	if (generated > 1)
		snprintf(rate, sizeof(rate), "%.2f", (double)(generated - 1) / (t_end - t_first));
	fprintf(stderr,
		"memwall %s: %ld tokens (%d prompt), %s tok/s decode, first token %.1f ms "
		"(load %.1f ms), kernels %s, threads %ld, kv %s%s%s\n",
		VERB, generated, n_prompt, rate, (t_first - t0) * 1e3, (t_loaded - t0) * 1e3,
		eng_session_kernels(session), a.threads, kv_names[a.kv],
		a.hooks_bench ? ", no-op hooks" : "",
		info->synthetic ? ", synthetic model (random weights)" : "");
	rc = MW_EXIT_OK;
out:
	free(prompt);
	free(scratch);
	eng_sampler_free(sampler);
	eng_session_free(session);
	eng_tokenizer_close(tok);
	eng_model_close(model);
	return rc;
}
