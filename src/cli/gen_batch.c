/* src/cli/gen_batch.c: `memwall generate --batch N` (issue 17): N independent sequences
 * decoded together in one session (engine.h, eng_session_step_seqs), so each weight byte a
 * step reads serves N tokens. Each sequence has its own prompt (the same one by default, or a
 * line of --prompts FILE), its own region of the KV cache, its own positions and its own
 * sampler (seed + i): at temperature 0 each prints what a run of its own prints, and with the
 * same seed it samples what that run samples. The prompts are prefilled one sequence at a
 * time (eng_session_prefill_seq); decode then runs one pass per step for all sequences.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "file.h"
#include "generate.h"
#include "mw.h"

#define VERB "generate"

struct batch {
	const struct gen_args *a;
	const struct gen_open *o;
	int n;                 /* sequences */
	int **prompt, *n_prompt; /* (n) each sequence's prompt, BOS first */
	struct eng_sampler **sampler; /* (n) */
	struct eng_session *session;
	long steps;            /* tokens each sequence generates */
	int *out;              /* (n, steps) the ids generated */
	float *scratch;        /* the sampler's copy of one sequence's logits */
	double t_loop, t_prompt_end, t_first, t_end;
	uint64_t weights_sum, kv_read_sum, kv_write_sum; /* over the decode steps */
	uint64_t unique_sum; /* weights_unique (canonical + delta models, engine/alias.h) */
	struct eng_step_bytes bytes; /* the last step's */
};

/* "1,300,301" after "ids:" in a --prompts line, or --prompt-ids: into p[0..cap). */
static int parse_ids(const char *list, int vocab, int *p, int cap, int *n)
{
	const char *s = list;
	*n = 0;
	while (*s) {
		char *end;
		errno = 0;
		long v = strtol(s, &end, 10);
		if (end == s || errno || v < 0 || v >= vocab || (*end && *end != ','))
			return mw_fail(MW_EXIT_USAGE, VERB, "'%.*s' is not a token id in [0, %d) "
				       "(give ids separated by commas)", (int)strcspn(s, ","), s,
				       vocab);
		if (*n >= cap)
			return mw_fail(MW_EXIT_USAGE, VERB, "too many ids");
		p[(*n)++] = (int)v;
		s = *end ? end + 1 : end;
	}
	if (!*n)
		return mw_fail(MW_EXIT_USAGE, VERB, "give at least one token id");
	return 0;
}

/* One prompt, as the one-sequence path encodes it (cmd_generate.c, prompt_encode): BOS, then
 * text through the tokenizer, or ids as given (BOS only if listed). */
static int encode(struct batch *b, int i, const char *text, const char *ids)
{
	const struct gen_open *o = b->o;
	int cap = text ? 3 * (int)strlen(text) + 3 : ids ? (int)strlen(ids) / 2 + 2 : 1;
	int *p = malloc((size_t)cap * sizeof(*p)), rc;
	if (!p)
		return mw_fail(MW_EXIT_ENV, VERB, "out of memory");
	b->prompt[i] = p;
	b->n_prompt[i] = 1;
	p[0] = o->tok && eng_tokenizer_bos(o->tok) >= 0 ? eng_tokenizer_bos(o->tok) : ENG_TOKEN_BOS;
	if (text && !o->tok)
		return mw_fail(MW_EXIT_USAGE, VERB, "a text prompt needs the model's tokenizer: give "
			       "-z FILE, or write the line as ids:1,300,...");
	if (text && eng_tokenizer_encode(o->tok, text, eng_tokenizer_add_bos(o->tok), false, p, cap,
					 &b->n_prompt[i]))
		return mw_fail(MW_EXIT_USAGE, VERB, "the tokenizer cannot encode prompt %d", i);
	if (ids && (rc = parse_ids(ids, o->info->vocab_size, p, cap, &b->n_prompt[i])))
		return rc;
	if (b->n_prompt[i] < 1)
		return mw_fail(MW_EXIT_USAGE, VERB, "prompt %d encodes to no token", i);
	return 0;
}

/* The lines of --prompts FILE (empty lines skipped) into *lines; *n receives the count. */
static int read_lines(const char *path, char ***lines, int *n)
{
	struct mw_error err;
	int rc = 0;
	mw_error_clear(&err);
	/* A FIFO or a device is refused by what it is, a file past the limit by its size. */
	FILE *f = mw_file_fopen(path, "prompts", "--prompts", MW_PROMPTS_MAX_BYTES, &rc, &err);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	*lines = NULL;
	*n = 0;
	if (!f) {
		mw_error_print(&err);
		return MW_EXIT_USAGE;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (!len)
			continue;
		char **grown = realloc(*lines, (size_t)(*n + 1) * sizeof(**lines));
		if (!grown || !(grown[*n] = strdup(line))) {
			if (grown)
				*lines = grown;
			rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
			break;
		}
		*lines = grown;
		(*n)++;
	}
	free(line);
	fclose(f);
	if (!rc && !*n)
		rc = mw_fail(MW_EXIT_USAGE, VERB, "--prompts %s: no prompt in the file (one per "
			     "line)", path);
	return rc;
}

/* Every sequence's prompt, and -n shortened to what the longest prompt leaves of the
 * context (each sequence generates as many tokens). */
static int prompts_encode(struct batch *b)
{
	const struct gen_args *a = b->a;
	char **lines = NULL;
	int n_lines = 0, rc = 0;
	if (a->prompts_path && (rc = read_lines(a->prompts_path, &lines, &n_lines)))
		goto out;
	b->n = a->batch ? (int)a->batch : n_lines;
	b->prompt = calloc((size_t)b->n, sizeof(*b->prompt));
	b->n_prompt = calloc((size_t)b->n, sizeof(*b->n_prompt));
	if (!b->prompt || !b->n_prompt) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
		goto out;
	}
	int longest = 0;
	for (int i = 0; i < b->n && !rc; i++) {
		const char *line = lines ? lines[i % n_lines] : NULL;
		if (line && !strncmp(line, "ids:", 4))
			rc = encode(b, i, NULL, line + 4);
		else
			rc = encode(b, i, line ? line : a->prompt, line ? NULL : a->prompt_ids);
		if (!rc && b->n_prompt[i] > longest)
			longest = b->n_prompt[i];
	}
	if (rc)
		goto out;
	int seq_len = b->o->info->seq_len;
	b->steps = a->steps;
	if (longest - 1 + b->steps > seq_len) {
		b->steps = seq_len - (longest - 1);
		if (b->steps < 1) {
			rc = mw_fail(MW_EXIT_USAGE, VERB, "a prompt (%d tokens) fills the model's "
				     "context of %d", longest, seq_len);
			goto out;
		}
		fprintf(stderr, "memwall %s: note: -n %ld exceeds the context of %d after the "
			"longest prompt; generating %ld\n", VERB, a->steps, seq_len, b->steps);
	}
out:
	for (int i = 0; i < n_lines; i++)
		free(lines[i]);
	free(lines);
	return rc;
}

/* The session of n sequences and one sampler per sequence, seeded seed + i. */
static int open_engine(struct batch *b)
{
	const struct gen_args *a = b->a;
	struct eng_error err;
	eng_error_clear(&err);
	struct eng_session_options sopt = { .threads = (int)a->threads, .kernels = a->kernels,
					    .kernel_choice = a->kchoice,
					    .attention = a->attention,
					    .kv_type = a->kv,
					    .prefill_chunk = (int)a->prefill_chunk,
					    .sparsity_map = a->sparsity_map, .n_seq = b->n };
	if (eng_session_new(&b->session, b->o->model, &sopt, &err))
		return mw_fail(MW_EXIT_USAGE, VERB, "%s%s%s", err.source, err.source[0] ? ": " : "",
			       err.text);
	int vocab = b->o->info->vocab_size;
	b->sampler = calloc((size_t)b->n, sizeof(*b->sampler));
	b->out = malloc((size_t)b->n * (size_t)b->steps * sizeof(*b->out));
	b->scratch = malloc((size_t)vocab * sizeof(*b->scratch));
	if (!b->sampler || !b->out || !b->scratch)
		return mw_fail(MW_EXIT_ENV, VERB, "out of memory");
	for (int i = 0; i < b->n; i++) {
		struct eng_sampler_options smp = { .temperature = (float)a->temperature,
						   .topp = (float)a->topp,
						   .seed = (uint64_t)a->seed + (uint64_t)i };
		if (eng_sampler_new(&b->sampler[i], vocab, &smp))
			return mw_fail(MW_EXIT_USAGE, VERB, "bad sampler settings");
	}
	return 0;
}

/* Sequence i's next token from its logits (the session's are borrowed; the sampler scales
 * its copy in place). */
static int sample(struct batch *b, int i, const float *logits)
{
	size_t vocab = (size_t)b->o->info->vocab_size;
	memcpy(b->scratch, logits, vocab * sizeof(*b->scratch));
	return eng_sampler_sample(b->sampler[i], b->scratch);
}

/* Prefill every prompt into its sequence, sample each first token, then decode: one pass per
 * step over the n sequences' last tokens. */
static int decode(struct batch *b)
{
	int n = b->n, rc = 0, vocab = b->o->info->vocab_size;
	int *tok = malloc((size_t)n * sizeof(*tok)), *pos = malloc((size_t)n * sizeof(*pos));
	const float *logits;
	if (!tok || !pos) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
		goto out;
	}
	b->t_loop = mw_now_s();
	for (int i = 0; i < n; i++) {
		if ((rc = eng_session_prefill_seq(b->session, i, b->prompt[i], b->n_prompt[i], 0,
						  &logits, NULL))) {
			rc = mw_fail(MW_EXIT_ENV, VERB, "prefill of sequence %d (%d tokens) failed: "
				     "%s", i, b->n_prompt[i], strerror(-rc));
			goto out;
		}
		tok[i] = b->out[(size_t)i * (size_t)b->steps] = sample(b, i, logits);
		pos[i] = b->n_prompt[i];
	}
	b->t_prompt_end = b->t_first = mw_now_s();
	for (long k = 1; k < b->steps; k++) {
		if ((rc = eng_session_step_seqs(b->session, n, NULL, tok, pos, &logits, &b->bytes))) {
			rc = mw_fail(MW_EXIT_ENV, VERB, "batched step %ld failed: %s", k,
				     strerror(-rc));
			goto out;
		}
		b->weights_sum += b->bytes.weights;
		b->unique_sum += b->bytes.weights_unique;
		b->kv_read_sum += b->bytes.kv_read;
		b->kv_write_sum += b->bytes.kv_write;
		for (int i = 0; i < n; i++) {
			tok[i] = sample(b, i, logits + (size_t)i * (size_t)vocab);
			b->out[(size_t)i * (size_t)b->steps + (size_t)k] = tok[i];
			pos[i]++;
		}
	}
	b->t_end = mw_now_s();
out:
	free(tok);
	free(pos);
	return rc;
}

/* Each sequence's output under "# sequence I (seed S)": ids one per line (--ids, or no
 * tokenizer), else the prompt's text and what followed, as the one-sequence path prints. */
static void print_outputs(const struct batch *b)
{
	const struct eng_tokenizer *tok = b->o->tok;
	for (int i = 0; i < b->n; i++) {
		const int *p = b->prompt[i], *g = b->out + (size_t)i * (size_t)b->steps;
		printf("# sequence %d (seed %ld)\n", i, b->a->seed + i);
		if (!tok || b->a->ids) {
			for (long k = 0; k < b->steps; k++)
				printf("%d\n", g[k]);
			continue;
		}
		for (int k = 0; k + 1 < b->n_prompt[i]; k++)
			mw_gen_print_piece(eng_tokenizer_decode(tok, p[k], p[k + 1]));
		int prev = p[b->n_prompt[i] - 1];
		for (long k = 0; k < b->steps; k++) {
			mw_gen_print_piece(eng_tokenizer_decode(tok, prev, g[k]));
			prev = g[k];
		}
		putchar('\n');
	}
	fflush(stdout);
}

/* The summary line, and with --report-line the adapter line (src/run/adapters.h: its
 * decode_steps counts the tokens decode_ms covers, n per pass, so that the adapter's
 * decode_steps / decode_ms is the aggregate rate) and the engine-accounted bytes per
 * generated token across the batch (weights shared by the n tokens of a step; KV per
 * sequence). */
static void summary_print(const struct batch *b)
{
	const struct gen_args *a = b->a;
	long generated = (long)b->n * b->steps, passes = b->steps - 1;
	long decoded = passes * b->n;
	int prompt_tokens = 0;
	for (int i = 0; i < b->n; i++)
		prompt_tokens += b->n_prompt[i];
	double secs = b->t_end - b->t_first;
	char rate[32] = "n/a", per_seq[32] = "n/a";
	if (passes > 0 && secs > 0) {
		snprintf(rate, sizeof(rate), "%.2f", (double)decoded / secs);
		snprintf(per_seq, sizeof(per_seq), "%.2f", (double)passes / secs);
	}
	fprintf(stderr,
		"memwall %s: %ld tokens (%d prompt), %s tok/s decode, first token %.1f ms "
		"(load %.1f ms), kernels %s, threads %ld, batch %d, %s tok/s per sequence%s\n",
		VERB, generated, prompt_tokens, rate, (b->t_first - b->o->t0) * 1e3,
		(b->o->t_loaded - b->o->t0) * 1e3, eng_session_kernels(b->session), a->threads,
		b->n, per_seq, b->o->info->synthetic ? ", synthetic model (random weights)" : "");
	/* which quant table ran each x8 weight type at a step's token count (issue 42: the
	 * kernel choice measured per CPU, or the default's) */
	char kdesc[512];
	mw_kcache_describe(b->session, b->n, kdesc, sizeof(kdesc));
	fprintf(stderr, "memwall %s: quant kernels at %d tokens a call: %s (%s)\n", VERB, b->n,
		kdesc, a->kuse.used ? "measured choice, `memwall bench-kernels`" : "default");
	if (!a->report_line)
		return;
	fprintf(stderr, "memwall-tokens: decode=%ld prompt=%d prompt_ms=%.3f load_ms=%.3f",
		generated, prompt_tokens, (b->t_prompt_end - b->t_loop) * 1e3,
		(b->o->t_loaded - b->o->t0) * 1e3);
	if (passes > 0)
		fprintf(stderr, " decode_ms=%.3f decode_steps=%ld", secs * 1e3, decoded);
	fputc('\n', stderr);
	double per_tok = decoded ? (double)b->weights_sum / (double)decoded : 0.0;
	fputs("memwall-bytes:", stderr);
	mw_gen_print_engine_bytes(stderr, per_tok,
				  decoded ? (double)b->kv_read_sum / (double)decoded : 0.0,
				  decoded ? (double)b->kv_write_sum / (double)decoded : 0.0);
	fprintf(stderr, " weights_skipped_per_token=0 sparsity_map=%d batch=%d "
		"decode_tok_s_per_sequence=%s weights_unique_per_token=%.0f\n",
		a->sparsity_map ? 1 : 0, b->n, per_seq,
		decoded ? (double)b->unique_sum / (double)decoded : 0.0);
	fprintf(stderr, "memwall generate: engine-accounted bytes per step of %d tokens: weights "
		"%" PRIu64 " (%.0f per token), kv read %.0f (mean), kv write %" PRIu64 "\n", b->n,
		b->bytes.weights, per_tok, passes ? (double)b->kv_read_sum / (double)passes : 0.0,
		b->bytes.kv_write);
}

int mw_generate_batch(const struct gen_args *a, const struct gen_open *o)
{
	struct batch b = { .a = a, .o = o };
	int rc;
	if ((rc = prompts_encode(&b)) || (rc = open_engine(&b)) || (rc = decode(&b)))
		goto out;
	print_outputs(&b);
	summary_print(&b);
	rc = MW_EXIT_OK;
out:
	for (int i = 0; b.prompt && i < b.n; i++)
		free(b.prompt[i]);
	for (int i = 0; b.sampler && i < b.n; i++)
		eng_sampler_free(b.sampler[i]);
	free(b.prompt);
	free(b.n_prompt);
	free(b.sampler);
	free(b.out);
	free(b.scratch);
	eng_session_free(b.session);
	return rc;
}
