/* src/cli/cmd_generate.c: `memwall generate`: run a model (llama2.c or GGUF) from a prompt and
 * print what it writes, then one summary line (tokens, decode tok/s, time to first token) on
 * stderr. For checking an engine from the command line it also takes token ids directly
 * (--prompt-ids), writes the logits of every position (--logits), and prints the generic
 * adapter line of src/run/adapters.h (--report-line) so the external-engine runner can drive it. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "engine.h"
#include "machine.h"
#include "file.h"
#include "mw.h"
#include "generate.h"
#include "gen_overlap.h"
#include "opt.h"
#include "verbs.h"

#define VERB "generate"

static const char *const kv_names[] = {
	[ENG_KV_AUTO] = "auto",
	[ENG_KV_F32] = "f32",
	[ENG_KV_F16] = "f16",
};


/* CPU time of the whole process: on a machine shared with other work, decode's CPU time per
 * token (decode_cpu_ms_per_token=, scripts/bench-kv.sh) varies less than its wall time, which
 * counts the time other processes held the CPU. */
static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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

/* Parses "1,300,301" into ids[0..max); every id must be in the vocabulary. */
static int parse_ids(const char *list, int vocab_size, int *ids, int max, int *n)
{
	const char *p = list;
	*n = 0;
	while (*p) {
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (end == p || errno || v < 0 || v >= vocab_size || (*end && *end != ','))
			return mw_fail(MW_EXIT_USAGE, VERB, "--prompt-ids: '%.*s' is not a token id "
				       "in [0, %d) (give ids separated by commas)",
				       (int)strcspn(p, ","), p, vocab_size);
		if (*n >= max)
			return mw_fail(MW_EXIT_USAGE, VERB, "--prompt-ids: too many ids");
		ids[(*n)++] = (int)v;
		p = *end ? end + 1 : end;
	}
	if (!*n)
		return mw_fail(MW_EXIT_USAGE, VERB, "--prompt-ids: give at least one id");
	return 0;
}

static int eng_fail(int code, const struct eng_error *e)
{
	return mw_fail(code, VERB, "%s%s%s", e->source, e->source[0] ? ": " : "", e->text);
}

/* --load MODE: the engine owns its modes' names (eng_load_mode_name); overlap is this verb's,
 * two of them in turn. 0, or -EINVAL (said). */
static int parse_load(struct gen_args *a, const char *mode)
{
	a->load_set = true;
	a->overlap = !strcmp(mode, "overlap");
	if (a->overlap)
		a->load = ENG_LOAD_REPACK;
	else if (eng_load_mode_parse(mode, &a->load))
		return mw_fail(MW_EXIT_USAGE, VERB, "--load %s: give overlap, repack, huge-copy or "
			       "mmap", mode), -EINVAL;
	return 0;
}

/* A model larger than the memory available is refused before it is mapped, as memwall run
 * does (src/base/machine.h): paging would make it crawl, and can stall the machine. */
static int check_memory(const char *path)
{
	struct stat st;
	uint64_t avail, need;
	/* A file that cannot be read is reported by eng_model_open, which names the problem. */
	if (stat(path, &st) || mw_memory_fits((uint64_t)st.st_size, &avail, &need) == 0)
		return 0;
	return mw_fail(MW_EXIT_ENV, VERB, "%s: %.0f MiB available (/proc/meminfo MemAvailable), "
		       "the model needs about %.0f MiB: close programs, pick a smaller model, or "
		       "give --force to run it anyway", path, (double)avail / 1048576.0,
		       (double)need / 1048576.0);
}

/* The model with the KV cache its session will allocate (eng_kv_cache_bytes): refused as
 * check_memory refuses the model alone. */
static int check_memory_kv(const struct gen_args *a, const struct eng_model_info *info)
{
	uint64_t avail, need, kv;
	int ctx = a->context ? (int)(a->context + a->steps) : 0;
	kv = eng_kv_cache_bytes(info, a->kv, ctx, a->batch > 0 ? (int)a->batch : 1);
	if (mw_memory_fits(info->file_bytes + kv, &avail, &need) == 0)
		return 0;
	return mw_fail(MW_EXIT_ENV, VERB, "%s: %.0f MiB available (/proc/meminfo MemAvailable), "
		       "the model and its KV cache (%.0f MiB) need about %.0f MiB: a shorter "
		       "--context, a smaller model, or --force to run it anyway", a->model,
		       (double)avail / 1048576.0, (double)kv / 1048576.0, (double)need / 1048576.0);
}

static int check_args(struct gen_args *a);

static int parse_args(struct gen_args *a, int argc, char **argv)
{
	enum { O_TEMP = 256, O_TOPP, O_SEED, O_KERNELS, O_IDS, O_KV, O_POPULATE, O_HUGE, O_HOOKS,
	       O_PROMPT_IDS, O_LOGITS, O_REPORT, O_LOAD, O_PIN, O_FORCE, O_CHUNK, O_SPARSE, O_BATCH,
	       O_PROMPTS, O_SPEC, O_ATTN, O_CONTEXT, O_DRAFT, O_SNEURON, O_SVERIFY, O_SWITCH };
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
		{ "load", required_argument, NULL, O_LOAD },
		{ "pin", required_argument, NULL, O_PIN },
		{ "hooks-bench", no_argument, NULL, O_HOOKS },
		{ "prompt-ids", required_argument, NULL, O_PROMPT_IDS },
		{ "logits", required_argument, NULL, O_LOGITS },
		{ "report-line", no_argument, NULL, O_REPORT },
		{ "force", no_argument, NULL, O_FORCE },
		{ "prefill-chunk", required_argument, NULL, O_CHUNK },
		{ "switch-at", required_argument, NULL, O_SWITCH },
		{ "sparsity-map", optional_argument, NULL, O_SPARSE },
		{ "sparsity-neuron", no_argument, NULL, O_SNEURON },
		{ "sparsity-verify", no_argument, NULL, O_SVERIFY },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "prompts", required_argument, NULL, O_PROMPTS },
		{ "speculate", required_argument, NULL, O_SPEC },
		{ "attention", required_argument, NULL, O_ATTN },
		{ "context", required_argument, NULL, O_CONTEXT },
		{ "draft", required_argument, NULL, O_DRAFT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "m:z:p:n:t:h", longopts);
	while ((c = mw_opt_next(&op)) != -1) {
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
			if (mw_parse_long(optarg, 1, MW_THREADS_MAX, &a->threads))
				return mw_fail(MW_EXIT_USAGE, VERB, "--threads %s: give 1 to %d",
					       optarg, MW_THREADS_MAX);
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
		case O_PIN:
			if (eng_pin_parse(optarg, &a->pin))
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--pin %s: give cpus (each thread on its own CPU of the "
					       "affinity mask, the default) or none", optarg);
			break;
		case O_LOAD:
			if (parse_load(a, optarg))
				return MW_EXIT_USAGE;
			break;
		case O_HOOKS: a->hooks_bench = true; break;
		case O_PROMPT_IDS: a->prompt_ids = optarg; break;
		case O_LOGITS: a->logits_path = optarg; break;
		case O_REPORT: a->report_line = true; break;
		case O_FORCE: a->force = true; break;
		case O_SWITCH:
			if (mw_parse_long(optarg, 1, 1L << 30, &a->switch_at))
				return mw_fail(MW_EXIT_USAGE, VERB, "--switch-at %s: give 1 or more",
					       optarg);
			break;
		case O_CHUNK:
			if (mw_parse_long(optarg, 1, 1L << 16, &a->prefill_chunk))
				return mw_fail(MW_EXIT_USAGE, VERB,
					       "--prefill-chunk %s: give a positive count", optarg);
			break;
		case O_SPARSE:
			a->sparsity_map = true;
			a->sparsity_static = optarg;
			break;
		case O_SNEURON: a->sparsity_neuron = true; break;
		case O_SVERIFY: a->sparsity_verify = true; break;
		case O_BATCH:
			if (mw_parse_long(optarg, 1, 256, &a->batch))
				return mw_fail(MW_EXIT_USAGE, VERB, "--batch %s: give 1 to 256", optarg);
			break;
		case O_PROMPTS: a->prompts_path = optarg; break;
		case O_SPEC:
			if (!strncmp(optarg, "draft", 5) && (!optarg[5] || optarg[5] == ':')) {
				if (mw_draft_parse(optarg, &a->spec_k))
					return MW_EXIT_USAGE;
				a->spec_draft = true;
			} else if (mw_speculate_parse(optarg, &a->spec_k, &a->spec_ng)) {
				return MW_EXIT_USAGE;
			}
			a->speculate = true;
			break;
		case O_ATTN:
			/* The engine owns the names (eng_attention_name). */
			if (eng_attention_parse(optarg, &a->attention))
				return mw_fail(MW_EXIT_USAGE, VERB, "--attention %s: give auto, naive "
					       "or blocked", optarg);
			break;
		case O_CONTEXT:
			if (mw_parse_long(optarg, 1, 1L << 20, &a->context))
				return mw_fail(MW_EXIT_USAGE, VERB, "--context %s: give a token count "
					       "from 1 to %ld", optarg, 1L << 20);
			break;
		case O_DRAFT: a->draft = optarg; break;
		case 'h':
			mw_generate_usage(stdout);
			return -1;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	if (mw_opt_none_left(&op))
		return MW_EXIT_USAGE;
	return check_args(a);
}

/* The options' combinations, once all are read. */
static int check_args(struct gen_args *a)
{
	if (!a->model)
		return mw_fail(MW_EXIT_USAGE, VERB, "give the model with -m FILE (see --help)");
	if ((a->sparsity_neuron || a->sparsity_verify) && !a->sparsity_map)
		return mw_fail(MW_EXIT_USAGE, VERB, "--sparsity-neuron and --sparsity-verify need "
			       "--sparsity-map");
	if ((a->sparsity_static || a->sparsity_neuron) &&
	    (a->batch || a->prompts_path || a->speculate))
		return mw_fail(MW_EXIT_USAGE, VERB, "--sparsity-map=MAP and --sparsity-neuron run "
			       "one sequence: drop --batch, --prompts and --speculate");
	if (a->sparsity_verify && !a->sparsity_static)
		return mw_fail(MW_EXIT_USAGE, VERB, "--sparsity-verify checks a static map: give "
			       "--sparsity-map=MAP");
	if (a->prompt && a->prompt_ids)
		return mw_fail(MW_EXIT_USAGE, VERB, "give -p TEXT or --prompt-ids, not both");
	if (a->prompts_path && (a->prompt || a->prompt_ids))
		return mw_fail(MW_EXIT_USAGE, VERB, "give --prompts FILE or -p/--prompt-ids, not both");
	if ((a->batch || a->prompts_path) && a->logits_path)
		return mw_fail(MW_EXIT_USAGE, VERB, "--logits writes one sequence's logits: run "
			       "without --batch and --prompts");
	if (a->speculate && (a->batch || a->prompts_path || a->logits_path))
		return mw_fail(MW_EXIT_USAGE, VERB, "--speculate decodes one sequence and keeps no "
			       "per-position logits: run it without --batch, --prompts and --logits");
	if (a->context && (a->prompt || a->prompt_ids || a->prompts_path || a->batch ||
			   a->logits_path))
		return mw_fail(MW_EXIT_USAGE, VERB, "--context N makes the prompt (N seeded tokens): "
			       "give it without -p, --prompt-ids, --prompts, --batch and --logits");
	/* --switch-at moves decoding from the mapping onto overlap's image: no other load has
	 * one, and --batch, --prompts and --speculate open their own sessions (with repack). */
	if (a->switch_at && a->load_set && !a->overlap)
		return mw_fail(MW_EXIT_USAGE, VERB, "--switch-at %ld: --load %s has no image to "
			       "switch to: give it with --load overlap (the default), or drop it",
			       a->switch_at, eng_load_mode_name(a->load));
	if (a->switch_at && (a->batch || a->prompts_path || a->speculate))
		return mw_fail(MW_EXIT_USAGE, VERB, "--switch-at %ld is --load overlap's, and --batch, "
			       "--prompts and --speculate load with repack: drop one or the other",
			       a->switch_at);
	if (!!a->draft != a->spec_draft)
		return mw_fail(MW_EXIT_USAGE, VERB, a->draft
			       ? "--draft %s: give it with --speculate draft:K (K draft tokens)"
			       : "--speculate draft:K needs the draft model: give --draft MODEL (or "
			       "--speculate lookup[:K[:NG]], drafts from the context)%s", a->draft
			       ? a->draft : "");
	if (a->kv_name) {
		size_t i, n = sizeof(kv_names) / sizeof(kv_names[0]);
		for (i = 0; i < n && strcmp(kv_names[i], a->kv_name); i++)
			;
		if (i == n)
			return mw_fail(MW_EXIT_USAGE, VERB, "--kv %s: give auto, f32 or f16",
				       a->kv_name);
		a->kv = (enum eng_kv_type)i;
	}
	return 0;
}

/* Opens -z, or the model's own tokenizer (eng_tokenizer_open_model: its GGUF file's, or
 * tokenizer.bin beside it); *tok stays NULL (ids are printed) when there is none or it is not
 * this model's. */
static int open_tokenizer(const struct gen_args *a, const struct eng_model *m,
			  struct eng_tokenizer **tok)
{
	struct eng_error err;
	eng_error_clear(&err);
	if (a->tokenizer) {
		struct mw_error ferr;
		if (mw_file_check(a->tokenizer, "tokenizer", "", MW_FILE_ANY_SIZE, &ferr)) {
			mw_error_print(&ferr);
			return MW_EXIT_USAGE;
		}
	}
	int rc = eng_tokenizer_open_model(tok, m, a->tokenizer, &err);
	if (rc == 0)
		return 0;
	if (rc != -ENOENT || a->tokenizer)
		return eng_fail(MW_EXIT_USAGE, &err);
	if (!a->ids)
		fprintf(stderr, "memwall %s: note: %s; printing token ids (give -z TOKENIZER for "
			"text)\n", VERB, err.text);
	return 0;
}

/* One generation: what mw_cmd_generate() opened (and frees), and what the loop measured. */
struct gen {
	struct gen_args a;
	const struct eng_model_info *info; /* borrowed from model */
	struct eng_model *model;
	struct eng_tokenizer *tok; /* NULL: token ids are printed */
	struct eng_session *session;
	struct eng_sampler *sampler;
	int *prompt, n_prompt;
	int *fed, n_fed;   /* every token fed, for --logits */
	struct gen_logits logits; /* --logits (gen_logits.c) */
	float *scratch;    /* the sampler's copy of the logits */
	/* mw_now_s() at: start, model loaded, loop start, prompt done, first and last token */
	double t0, t_loaded, t_loop, t_prompt_end, t_first, t_end;
	double cpu_first, cpu_end; /* cpu_seconds() at the first and last token */
	/* Page faults by then: under mmap the weights come in during the first token. */
	struct rusage ru_loaded, ru_first;
	long generated;
	struct eng_step_bytes bytes; /* the last step's */
	uint64_t kv_read_sum, kv_write_sum; /* over the decode steps */
	/* Over the decode steps: weight bytes read and skipped, exact-zero FFN activations and
	 * all-zero down-projection blocks, and their totals. */
	uint64_t weights_sum, skipped_sum, zero_sum, act_sum, zblocks_sum, blocks_sum;
	/* ... and gate and up rows skipped, static-map misses (engine.h) */
	uint64_t gate_sum, up_sum, miss_sum;
	struct eng_sparsity_map *smap; /* --sparsity-map=MAP, or NULL */
	uint64_t unique_sum; /* weights_unique (canonical + delta models) */
	bool overlap;        /* --load overlap: the session moves onto the image (ov) */
	struct mw_overlap ov;
};

/* --context N: the prompt is BOS and N - 1 seeded ids (mw_context_tokens). The session gets
 * N + steps positions, beyond the model's own context if need be (RoPE extends; a synthetic
 * model's output means nothing anyway, the bytes and time do). */
static int context_prompt(struct gen *g)
{
	const struct gen_args *a = &g->a;
	free(g->prompt);
	g->prompt = malloc((size_t)a->context * sizeof(*g->prompt));
	if (!g->prompt)
		return mw_fail(MW_EXIT_ENV, VERB, "out of memory for --context %ld", a->context);
	mw_context_tokens(g->prompt, (int)a->context,
			  g->tok && eng_tokenizer_bos(g->tok) >= 0 ? eng_tokenizer_bos(g->tok)
								   : ENG_TOKEN_BOS,
			  g->info->vocab_size, (uint64_t)a->seed);
	g->n_prompt = (int)a->context;
	g->a.ctx_len = (int)(a->context + a->steps);
	return 0;
}

/* Encodes -p or --prompt-ids after BOS into g->prompt, and shortens -n to what the model's
 * context leaves. */
static int prompt_encode(struct gen *g)
{
	const struct gen_args *a = &g->a;
	int rc;

	/* A GGUF tokenizer may need 3 tokens per byte (engine.h). */
	int cap = a->prompt ? 3 * (int)strlen(a->prompt) + 3
		  : a->prompt_ids ? (int)strlen(a->prompt_ids) / 2 + 1 : 1;
	g->n_prompt = 1;
	g->prompt = malloc((size_t)cap * sizeof(*g->prompt));
	if (!g->prompt)
		return mw_fail(MW_EXIT_ENV, VERB, "out of memory");
	g->prompt[0] = g->tok && eng_tokenizer_bos(g->tok) >= 0 ? eng_tokenizer_bos(g->tok)
								 : ENG_TOKEN_BOS;
	if (a->prompt && eng_tokenizer_encode(g->tok, a->prompt, eng_tokenizer_add_bos(g->tok),
					      false, g->prompt, cap, &g->n_prompt))
		return mw_fail(MW_EXIT_USAGE, VERB, "-p: the tokenizer cannot encode the prompt");
	if (a->prompt_ids && (rc = parse_ids(a->prompt_ids, g->info->vocab_size, g->prompt, cap,
					     &g->n_prompt)))
		return rc;
	if (a->context)
		return context_prompt(g);
	if (g->n_prompt < 1)
		return mw_fail(MW_EXIT_USAGE, VERB, "-p: the prompt encodes to no token");
	long positions = g->n_prompt - 1 + a->steps;
	if (positions > g->info->seq_len) {
		long steps = g->info->seq_len - (g->n_prompt - 1);
		if (steps < 1)
			return mw_fail(MW_EXIT_USAGE, VERB, "the prompt (%d tokens) fills the "
				       "model's context of %d", g->n_prompt, g->info->seq_len);
		fprintf(stderr, "memwall %s: note: -n %ld exceeds the context of %d; generating %ld\n",
			VERB, a->steps, g->info->seq_len, steps);
		g->a.steps = steps;
	}
	return 0;
}

/* The whole prompt in passes of --prefill-chunk tokens (eng_session_prefill), its text
 * printed as the token-by-token loop prints it; *logits receives the last token's. */
static int prefill(struct gen *g, const float **logits)
{
	int rc = eng_session_prefill(g->session, g->prompt, g->n_prompt, 0, logits, NULL);
	if (rc)
		return mw_fail(MW_EXIT_ENV, VERB, "prefill of %d tokens failed: %s", g->n_prompt,
			       strerror(-rc));
	for (int pos = 0; pos < g->n_prompt; pos++) {
		g->fed[g->n_fed++] = g->prompt[pos];
		if (pos + 1 < g->n_prompt && g->tok && !g->a.ids)
			mw_gen_print_piece(eng_tokenizer_decode(g->tok, g->prompt[pos], g->prompt[pos + 1]));
	}
	g->t_prompt_end = mw_now_s();
	return 0;
}

/* --load overlap: the session onto the repacked image (or left on the mapping, said). */
static void overlap_switch(struct gen *g, long after)
{
	mw_overlap_switch(&g->ov, &g->model, &g->session, after);
	g->info = eng_model_info(g->model);
}

/* Feeds the prompt, then samples -n tokens, printing each as it comes. Text shows the prompt
 * too, as run.c does; --ids shows only the generated tokens. The prompt goes through
 * eng_session_prefill, except with --logits, which needs every position's logits. */
static int generate_tokens(struct gen *g)
{
	const struct gen_args *a = &g->a;
	int vocab_size = g->info->vocab_size, token = g->prompt[0], rc, pos = 0;
	const float *logits = NULL;
	bool prefilled = !g->logits.f;

	/* A long prompt waits for the image first: the wait is in the first token's time, not
	 * in the prompt's. */
	if (g->overlap && g->n_prompt > MW_OVERLAP_PROMPT_MAX)
		overlap_switch(g, 0);
	g->t_loop = g->t_prompt_end = mw_now_s();
	if (prefilled) {
		if ((rc = prefill(g, &logits)))
			return rc;
		pos = g->n_prompt - 1;
		token = g->prompt[pos];
	}
	for (; g->generated < a->steps; pos++) {
		/* Decoding never waits for the image: the session moves onto it before the
		 * first token after it is ready (or, with --switch-at N, before token N + 1,
		 * waiting if need be: a fixed point, for a command that must give the same bits
		 * every time). The mapping's and the image's kernels agree to float rounding,
		 * so the ids are the same wherever the switch falls unless two logits tie that
		 * closely (tests/src/test_gen_overlap.c). */
		if (g->overlap && g->generated >= 1 && !g->ov.switched &&
		    (a->switch_at ? g->generated >= a->switch_at : mw_overlap_ready(&g->ov)))
			overlap_switch(g, g->generated);
		if (prefilled && pos + 1 == g->n_prompt) {
			/* the prompt's last token, already run by prefill */
		} else if ((rc = eng_session_step(g->session, token, pos, &logits, &g->bytes))) {
			return mw_fail(MW_EXIT_ENV, VERB, "step %d failed: %s", pos, strerror(-rc));
		} else {
			g->fed[g->n_fed++] = token;
		}
		if (pos >= g->n_prompt) {
			g->kv_read_sum += g->bytes.kv_read;
			g->kv_write_sum += g->bytes.kv_write;
			g->weights_sum += g->bytes.weights;
			g->skipped_sum += g->bytes.weights_skipped;
			g->unique_sum += g->bytes.weights_unique;
			g->zero_sum += g->bytes.act_zero;
			g->act_sum += g->bytes.act_total;
			g->zblocks_sum += g->bytes.down_blocks_zero;
			g->blocks_sum += g->bytes.down_blocks;
			g->gate_sum += g->bytes.gate_rows_skipped;
			g->up_sum += g->bytes.up_rows_skipped;
			g->miss_sum += g->bytes.map_misses;
		}
		if (g->logits.f)
			mw_logits_position(&g->logits, pos, logits, vocab_size);
		if (pos + 1 == g->n_prompt && g->logits.f)
			g->t_prompt_end = mw_now_s();
		int next;
		if (pos + 1 < g->n_prompt) {
			next = g->prompt[pos + 1];
		} else {
			/* The sampler scales logits in place; the session's are borrowed. */
			memcpy(g->scratch, logits, (size_t)vocab_size * sizeof(*g->scratch));
			next = eng_sampler_sample(g->sampler, g->scratch);
			if (++g->generated == 1) {
				g->t_first = mw_now_s();
				g->cpu_first = cpu_seconds();
				getrusage(RUSAGE_SELF, &g->ru_first);
				if (g->overlap) {
					mw_overlap_mark(&g->ov, true);
					if (a->steps > 1)
						mw_overlap_launch(&g->ov, (int)a->threads,
								  a->switch_at > 0);
				}
			}
		}
		if (g->tok && !a->ids)
			mw_gen_print_piece(eng_tokenizer_decode(g->tok, token, next));
		else if (pos + 1 >= g->n_prompt)
			printf("%d\n", next);
		fflush(stdout);
		token = next;
	}
	g->t_end = mw_now_s();
	g->cpu_end = cpu_seconds();
	return 0;
}

/* Canonical + delta models (engine/alias.h, issue 18 R3): the canonicals' bytes against the
 * last-level cache, and both per-token figures against the dense twin's, which reads each
 * shared layer's matrices whole in the canonical's type instead of canonical + delta. */
static void report_canonical(const struct gen *g, double touched, double unique)
{
	struct eng_canonical_info ci;
	uint64_t llc = 0;
	if (!eng_model_canonical(g->model, &ci))
		return;
	bool llc_known = eng_llc_size(&llc, NULL, 0) == 0 && llc > 0;
	double dense = touched - (double)ci.delta_bytes;
	fprintf(stderr, " canonical_layers=%d-%d canonical_bytes=%" PRIu64 " delta_bytes=%" PRIu64
		" dense_twin_bytes_per_token=%.0f touched_saving=%.4f unique_saving=%.4f"
		" llc_bytes=%" PRIu64 " canonical_fits_llc=%s",
		ci.first, ci.last, ci.canonical_bytes, ci.delta_bytes, dense,
		(dense - touched) / dense, (dense - unique) / dense, llc,
		!llc_known ? "unknown" : ci.canonical_bytes <= llc ? "yes" : "no");
}

/* The --report-line's engine-accounted line ("memwall-bytes: engine_bytes_per_token=N ..."), per decode step (the last step's when the
 * prompt's were the only ones): weight bytes read and skipped, the exact-zero fraction of
 * the FFN activations, and the fraction of down-projection blocks that were all zero (what a
 * sparsity map skips: sparsity.h's granularity). */
static void report_bytes(const struct gen *g)
{
	uint64_t steps = g->generated > 1 ? (uint64_t)(g->generated - 1) : 0;
	double weights = steps ? (double)g->weights_sum / (double)steps : (double)g->bytes.weights;
	double skipped = steps ? (double)g->skipped_sum / (double)steps
			       : (double)g->bytes.weights_skipped;
	uint64_t zero = steps ? g->zero_sum : g->bytes.act_zero;
	uint64_t acts = steps ? g->act_sum : g->bytes.act_total;
	uint64_t zb = steps ? g->zblocks_sum : g->bytes.down_blocks_zero;
	uint64_t blocks = steps ? g->blocks_sum : g->bytes.down_blocks;
	/* KV bytes per decode step grow with the position: the mean over the steps, at the
	 * context the steps ran at (--context N: N to N + n). */
	mw_gen_print_engine_bytes(stderr, weights,
				  steps ? (double)g->kv_read_sum / (double)steps
					: (double)g->bytes.kv_read,
				  steps ? (double)g->kv_write_sum / (double)steps
					: (double)g->bytes.kv_write);
	fprintf(stderr, " weights_skipped_per_token=%.0f sparsity_map=%d context=%d attention=%s",
		skipped, g->a.sparsity_map ? 1 : 0, g->n_prompt, eng_attention_name(g->a.attention));
	if (steps)
		fprintf(stderr, " decode_cpu_ms_per_token=%.4f",
			(g->cpu_end - g->cpu_first) * 1e3 / (double)steps);
	if (acts)
		fprintf(stderr, " ffn_zero_fraction=%.4f down_blocks_zero_fraction=%.4f",
			(double)zero / (double)acts, blocks ? (double)zb / (double)blocks : 0.0);
	double unique = steps ? (double)g->unique_sum / (double)steps
			      : (double)g->bytes.weights_unique;
	fprintf(stderr, " weights_unique_per_token=%.0f", unique);
	report_canonical(g, weights, unique);
	if (!g->a.sparsity_map)
		return;
	double n = steps ? (double)steps : 1.0;
	fprintf(stderr, " sparsity_granularity=%s up_rows_skipped_per_token=%.1f "
		"gate_rows_skipped_per_token=%.1f",
		g->a.sparsity_neuron ? "neuron" : "block",
		(double)(steps ? g->up_sum : g->bytes.up_rows_skipped) / n,
		(double)(steps ? g->gate_sum : g->bytes.gate_rows_skipped) / n);
	if (g->smap)
		fprintf(stderr, " static_map=1");
	if (g->a.sparsity_verify)
		fprintf(stderr, " map_misses=%" PRIu64, steps ? g->miss_sum : g->bytes.map_misses);
}

static long faults(const struct rusage *r)
{
	return r->ru_minflt + r->ru_majflt;
}

/* What the load figure covers. A copy is in memory when the load ends: its threads and how
 * much of it the kernel gave 2 MiB pages. A mapping is not: the pages the first token touches
 * are faulted in during it, so they are counted there (in the first token's time), and said. */
static void load_explain(const struct gen *g, char *buf, size_t n)
{
	const struct eng_load_report *lr = eng_model_load_report(g->model);
	if (g->overlap) {
		mw_overlap_explain(&g->ov, g->generated, g->t_first, g->t_end, buf, n);
		return;
	}
	if (lr->mode == ENG_LOAD_MMAP) {
		snprintf(buf, n, ", mmap: %ld page faults (%ld major) in the first token, counted "
			 "in its time", faults(&g->ru_first) - faults(&g->ru_loaded),
			 g->ru_first.ru_majflt - g->ru_loaded.ru_majflt);
		return;
	}
	if (lr->huge_bytes < 0)
		snprintf(buf, n, ", %s on %d thread%s, huge pages unknown",
			 eng_load_mode_name(lr->mode), lr->threads, lr->threads == 1 ? "" : "s");
	else
		snprintf(buf, n, ", %s on %d thread%s, %.0f MB in 2 MiB pages",
			 eng_load_mode_name(lr->mode), lr->threads, lr->threads == 1 ? "" : "s",
			 (double)lr->huge_bytes / 1e6);
}

/* The summary line on stderr, and with --report-line the generic adapter line and the
 * engine-accounted bytes. */
static void summary_print(const struct gen *g)
{
	const struct gen_args *a = &g->a;
	long generated = g->generated;

	/* Decode rate over the tokens after the first, whose time (load, prompt, page faults) is
	 * reported on its own; with one token there is no rate to give. */
	char rate[32] = "n/a";
	if (generated > 1)
		snprintf(rate, sizeof(rate), "%.2f",
			 (double)(generated - 1) / (g->t_end - g->t_first));
	/* The prompt's rate, after the fields that scripts and adapters match on. */
	char pp[48] = "";
	double prompt_s = g->t_prompt_end - g->t_loop;
	if (prompt_s > 0)
		snprintf(pp, sizeof(pp), ", prompt %.1f tok/s", (double)g->n_prompt / prompt_s);
	char how[512];
	load_explain(g, how, sizeof(how));
	/* A static map (--sparsity-map=MAP) skips what it predicts, not what is zero: its
	 * figures are never the exact mode's, and the summary says so wherever they appear. */
	char map_label[160] = "";
	if (g->smap && a->sparsity_verify)
		snprintf(map_label, sizeof(map_label), ", static map (inexact: %" PRIu64 " misses)",
			 generated > 1 ? g->miss_sum : g->bytes.map_misses);
	else if (g->smap)
		snprintf(map_label, sizeof(map_label), ", static map (inexact: misses not counted; "
			 "--sparsity-verify counts them)");
	fprintf(stderr,
		"memwall %s: %ld tokens (%d prompt), %s tok/s decode, first token %.1f ms "
		"(load %.1f ms%s), kernels %s, threads %ld (pin %s), kv %s%s%s%s%s\n",
		VERB, generated, g->n_prompt, rate, (g->t_first - g->t0) * 1e3,
		(g->t_loaded - g->t0) * 1e3, how, eng_session_kernels(g->session), a->threads,
		eng_pin_name(a->pin),
		a->kv != ENG_KV_AUTO ? kv_names[a->kv]
		: g->info->format == ENG_FORMAT_GGUF ? "f16" : "f32", pp,
		a->hooks_bench ? ", no-op hooks" : "",
		g->info->synthetic ? ", synthetic model (random weights)" : "", map_label);
	/* adapters.h's generic line: the decode rate covers the steps after the first
	 * generated token, as the summary's does; the prompt's passes end at the first. */
	if (!a->report_line)
		return;
	fprintf(stderr, "memwall-tokens: decode=%ld prompt=%d prompt_ms=%.3f load_ms=%.3f",
		generated, g->n_prompt, (g->t_prompt_end - g->t_loop) * 1e3,
		(g->t_loaded - g->t0) * 1e3);
	if (generated > 1)
		fprintf(stderr, " decode_ms=%.3f decode_steps=%ld", (g->t_end - g->t_first) * 1e3,
			generated - 1);
	fputc('\n', stderr);
	/* A line of its own, as memwall-bytes: time to first token and how the model came in. */
	/* Under overlap: the model decoded last (the image, if used) and the faults of every
	 * thread but the image's (gen_overlap.h). */
	const struct eng_load_report *lr = eng_model_load_report(g->model);
	const struct mw_overlap *ov = &g->ov;
	char ovf[256] = "";
	if (g->overlap)
		mw_overlap_fields(ov, generated, g->t_first, g->t_end, ovf, sizeof(ovf));
	fprintf(stderr, "memwall-load: mode=%s ttft_ms=%.3f load_ms=%.3f load_threads=%d "
		"huge_page_bytes=%lld first_token_faults=%ld first_token_major_faults=%ld pin=%s"
		"%s\n", g->overlap ? "overlap" : eng_load_mode_name(lr->mode),
		(g->t_first - g->t0) * 1e3, (g->t_loaded - g->t0) * 1e3, lr->threads,
		(long long)lr->huge_bytes,
		g->overlap ? ov->faults_first - ov->faults_loaded
			   : faults(&g->ru_first) - faults(&g->ru_loaded),
		g->overlap ? ov->major_first - ov->major_loaded
			   : g->ru_first.ru_majflt - g->ru_loaded.ru_majflt,
		eng_pin_name(a->pin), ovf);
	/* A line of its own: the memwall-tokens adapter (src/run/adapters.h) refuses keys it
	 * does not know. */
	fputs("memwall-bytes:", stderr);
	report_bytes(g);
	fputc('\n', stderr);
	/* Engine-accounted, per decode step (engine.h), the same means as the memwall-bytes
	 * line's keys (the KV read grows with the position). */
	double n_dec = generated > 1 ? (double)(generated - 1) : 1.0;
	double w_mean = generated > 1 ? (double)g->weights_sum / n_dec : (double)g->bytes.weights;
	double r_mean = generated > 1 ? (double)g->kv_read_sum / n_dec : (double)g->bytes.kv_read;
	double k_mean = generated > 1 ? (double)g->kv_write_sum / n_dec : (double)g->bytes.kv_write;
	fprintf(stderr, "memwall generate: engine-accounted bytes per token (means of the decode "
		"steps): %.0f = weights %.0f + kv read %.0f + kv write %.0f\n",
		w_mean + r_mean + k_mean, w_mean, r_mean, k_mean);
	if (g->bytes.act_total)
		fprintf(stderr, "memwall generate: FFN activations (%s): %.1f%% exactly zero; "
			"down-projection blocks all zero: %.1f%%%s\n",
			eng_ffn_act_name(g->info->ffn_act),
			100.0 * (double)(generated > 1 ? g->zero_sum : g->bytes.act_zero) /
				(double)(generated > 1 ? g->act_sum : g->bytes.act_total),
			100.0 * (double)(generated > 1 ? g->zblocks_sum : g->bytes.down_blocks_zero) /
				(double)(generated > 1 ? g->blocks_sum : g->bytes.down_blocks),
			!a->sparsity_map ? "" : g->smap ? " (skipped by a static map: inexact)"
						       : " (skipped by --sparsity-map)");
}

/* Whether to run --load overlap: asked for, or by default (--load not given); never for the
 * paths that open their own sessions. */
/* The machine's kernel choice (run/kernel_cache.h) for the default kernels: a cache that
 * exists but is not this machine's, or this version's, is said, and the defaults run; a
 * malformed one stops the verb. */
static int kernel_cache(struct gen_args *a)
{
	struct mw_error err;
	mw_error_clear(&err);
	if (mw_kcache_for_session(a->kernels, &a->kc, &a->kuse, &err)) {
		mw_error_print(&err);
		return MW_EXIT_USAGE;
	}
	a->kchoice = a->kuse.used ? &a->kc : NULL;
	if (a->kuse.ignored)
		fprintf(stderr, "memwall %s: %s\n", VERB, a->kuse.reason);
	return 0;
}

static bool overlap_wanted(const struct gen_args *a)
{
	bool own = a->batch || a->prompts_path || a->speculate;
	if (a->overlap && own)
		fprintf(stderr, "memwall %s: note: --batch, --prompts and --speculate open their own "
			"sessions; loading with repack instead of overlap\n", VERB);
	return !own && (a->overlap || !a->load_set);
}

int mw_cmd_generate(int argc, char **argv)
{
	/* The fastest correct load is the default: overlap (overlap_wanted; its image, and the
	 * paths without overlap, repack: a llama2.c checkpoint, which has nothing to interleave,
	 * is then copied into 2 MiB pages). */
	struct gen g = { .a = { .steps = 256, .threads = 1, .seed = 1, .temperature = 1.0,
				.topp = 0.9, .kv = ENG_KV_AUTO, .load = ENG_LOAD_REPACK } };
	/* Time to first token counts from here: the verb's start, after exec and the dynamic
	 * loader (a few ms); the model check, the load and the prompt are all inside it. */
	g.t0 = mw_now_s();
	const struct gen_args *a = &g.a;
	struct eng_error err;
	int rc = parse_args(&g.a, argc, argv);
	if (rc || (rc = kernel_cache(&g.a)))
		return rc < 0 ? MW_EXIT_OK : rc;

	if (a->logits_path && (rc = mw_logits_open(&g.logits, a)))
		goto out;
	/* A regular file, or a message naming what it is (a FIFO would block the loader). The
	 * engine loads this open file: the model is opened once (the overlap's image reads a
	 * duplicate of the descriptor). */
	struct mw_error ferr;
	int mfd = mw_file_open(a->model, "model", "", MW_FILE_ANY_SIZE, &ferr);
	if (mfd < 0) {
		mw_error_print(&ferr);
		rc = MW_EXIT_USAGE;
		goto out;
	}
	if (!a->force && (rc = check_memory(a->model))) {
		close(mfd);
		goto out;
	}
	eng_error_clear(&err);
	g.overlap = overlap_wanted(a);
	int ifd = g.overlap ? fcntl(mfd, F_DUPFD_CLOEXEC, 0) : -1;
	if (g.overlap && ifd < 0) {
		close(mfd);
		rc = mw_fail(MW_EXIT_ENV, VERB, "cannot duplicate the model's descriptor: %s",
			     strerror(errno));
		goto out;
	}
	struct eng_model_options mopt = { .populate = a->populate, .hugepages = a->hugepages,
					  .load = g.overlap ? ENG_LOAD_MMAP : a->load };
	if (eng_model_open_fd(&g.model, a->model, mfd, &mopt, &err)) {
		if (ifd >= 0)
			close(ifd);
		rc = eng_fail(MW_EXIT_USAGE, &err);
		goto out;
	}
	if (g.overlap && (rc = mw_overlap_start(&g.ov, a->model, ifd)))
		goto out;
	g.t_loaded = mw_now_s();
	getrusage(RUSAGE_SELF, &g.ru_loaded);
	if (g.overlap)
		mw_overlap_mark(&g.ov, false);
	g.info = eng_model_info(g.model);
	/* The model and its KV cache (issue 28: --context 1048576 asked 1.3 GB of cache with
	 * 49 MiB available, and started). */
	if (!a->force && (rc = check_memory_kv(a, g.info)))
		goto out;
	if ((rc = open_tokenizer(a, g.model, &g.tok)))
		goto out;
	if (!g.tok && a->prompt) {
		rc = mw_fail(MW_EXIT_USAGE, VERB, "a prompt needs the model's tokenizer: give -z FILE");
		goto out;
	}
	if (a->batch || a->prompts_path) {
		struct gen_open go = { .model = g.model, .info = g.info, .tok = g.tok, .t0 = g.t0,
				       .t_loaded = g.t_loaded };
		rc = mw_generate_batch(a, &go);
		goto out;
	}
	if ((rc = prompt_encode(&g)))
		goto out;
	if (g.overlap && g.n_prompt > MW_OVERLAP_PROMPT_MAX)
		mw_overlap_launch(&g.ov, 0, true); /* the prompt waits for it: start it now */
	if (a->speculate) {
		struct gen_open go = { .model = g.model, .info = g.info, .tok = g.tok, .t0 = g.t0,
				       .t_loaded = g.t_loaded };
		rc = a->spec_draft ? mw_generate_draft(a, &go, g.prompt, g.n_prompt)
				   : mw_generate_spec(a, &go, g.prompt, g.n_prompt);
		goto out;
	}

	static const struct eng_hooks noop_hooks = { .phase = noop_phase, .token = noop_token };
	struct eng_session_options sopt = { .threads = (int)a->threads, .pin = a->pin,
					    .kernels = a->kernels, .kernel_choice = a->kchoice,
					    .kv_type = a->kv,
					    .hooks = a->hooks_bench ? &noop_hooks : NULL,
					    .prefill_chunk = (int)a->prefill_chunk,
					    .sparsity_map = a->sparsity_map,
					    .attention = a->attention, .ctx_len = a->ctx_len,
					    .sparsity_neuron = a->sparsity_neuron,
					    .sparsity_verify = a->sparsity_verify };
	if (a->sparsity_static) {
		if (eng_sparsity_map_load(&g.smap, a->sparsity_static, g.info, &err) ||
		    eng_sparsity_map_check_model(g.smap, a->sparsity_static, a->model, g.info,
						 &err)) {
			rc = eng_fail(MW_EXIT_USAGE, &err);
			goto out;
		}
		sopt.sparsity_static = g.smap;
	}
	g.ov.sopt = sopt;
	if (eng_session_new(&g.session, g.model, &sopt, &err)) {
		rc = eng_fail(MW_EXIT_USAGE, &err);
		goto out;
	}
	struct eng_sampler_options smp = { .temperature = (float)a->temperature,
					   .topp = (float)a->topp, .seed = (uint64_t)a->seed };
	g.scratch = malloc((size_t)g.info->vocab_size * sizeof(*g.scratch));
	if (!g.scratch || eng_sampler_new(&g.sampler, g.info->vocab_size, &smp)) {
		rc = mw_fail(MW_EXIT_USAGE, VERB, "bad sampler settings");
		goto out;
	}

	if (g.logits.f)
		mw_logits_begin(&g.logits, a->model, g.info->vocab_size);
	g.fed = malloc((size_t)(g.n_prompt + a->steps) * sizeof(*g.fed));
	if (!g.fed) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
		goto out;
	}
	if ((rc = generate_tokens(&g)))
		goto out;
	mw_overlap_end(&g.ov); /* an image no step needed is cancelled */
	if (g.tok && !a->ids)
		putchar('\n');
	fflush(stdout);
	if (g.logits.f && (rc = mw_logits_close(&g.logits, a, g.fed, g.n_fed)))
		goto out;
	summary_print(&g);
	rc = MW_EXIT_OK;
out:
	mw_logits_free(&g.logits); /* a run that did not finish writes nothing */
	free(g.fed);
	free(g.prompt);
	free(g.scratch);
	eng_sampler_free(g.sampler);
	eng_session_free(g.session);
	mw_overlap_end(&g.ov);
	eng_sparsity_map_free(g.smap);
	eng_tokenizer_close(g.tok);
	eng_model_close(g.model);
	return rc;
}
