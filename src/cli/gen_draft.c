/* src/cli/gen_draft.c: `memwall generate --speculate draft:K --draft MODEL` (issue 17):
 * speculative greedy decoding with a draft model (Leviathan et al. 2023, Chen et al. 2023, at
 * temperature 0). A smaller model of the same vocabulary runs greedily K tokens ahead; the
 * model checks the last token and the K drafts in one pass (eng_session_verify) and keeps the
 * longest prefix its own argmax agrees with, plus its own next token. Both caches forget what
 * was rejected (eng_session_truncate): the model's from the first rejected position, the
 * draft's from the first position whose token it did not produce for the kept context. Every
 * token comes from the model's argmax over logits that carry a one-token step's bits
 * (engine.h), so the output is plain greedy decoding's; what changes is how many passes over
 * the model's weights it takes, against the draft's passes over its own, both counted in the
 * bytes per generated token. Kept apart from gen_spec.c's prompt-lookup drafts so that either
 * can move without the other.
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
#include "speculate.h"

#define VERB "generate"

struct draft_run {
	const struct gen_args *a;
	const struct gen_open *o;
	const int *prompt;
	int n_prompt;
	struct eng_model *dm;        /* the draft model */
	struct eng_session *ts, *ds; /* the model's session (verifying), the draft's */
	int d_next;                  /* the draft's cache holds positions 0 .. d_next - 1 */
	int *ctx, n_ctx;             /* (n_prompt + steps) the prompt, then the tokens generated */
	int *pass;                   /* (K + 1) a verification's tokens: the last one, the drafts */
	long generated, passes, proposed, accepted;
	long d_passes, d_tokens;     /* the draft's passes and the tokens they ran */
	uint64_t t_weights, d_weights, kv_read_sum, kv_write_sum; /* model and draft weights,
								    * model KV reads and writes */
	double t_loop, t_prompt_end, t_first, t_end;
};

int mw_draft_parse(const char *arg, int *k)
{
	*k = 4;
	if (!arg[5])
		return 0;
	char *end;
	errno = 0;
	long v = strtol(arg + 6, &end, 10);
	if (end == arg + 6 || errno || v < 1 || v > 32 || *end)
		return mw_fail(MW_EXIT_USAGE, VERB, "--speculate %s: give draft[:K], K draft tokens "
			       "per pass, 1 to 32 (default 4)", arg);
	*k = (int)v;
	return 0;
}

/* Appends token to the context and prints it, as the plain path does. */
static void emit(struct draft_run *r, int token)
{
	const struct eng_tokenizer *tok = r->o->tok;
	int prev = r->ctx[r->n_ctx - 1];
	r->ctx[r->n_ctx++] = token;
	r->generated++;
	if (tok && !r->a->ids) {
		const char *piece = eng_tokenizer_decode(tok, prev, token);
		mw_gen_print_piece(piece);
	} else {
		printf("%d\n", token);
	}
	fflush(stdout);
}

/* Opens --draft and its session: the same load options and kernels as the model's, a context
 * as long as the model's session's. A draft of another vocabulary size is refused (its ids
 * would mean other tokens). */
static int draft_open(struct draft_run *r)
{
	const struct gen_args *a = r->a;
	struct eng_error err;
	struct mw_error ferr;
	eng_error_clear(&err);
	if (mw_file_check(a->draft, "draft model", "--draft", MW_FILE_ANY_SIZE, &ferr)) {
		mw_error_print(&ferr);
		return MW_EXIT_USAGE;
	}
	struct eng_model_options mopt = { .populate = a->populate, .hugepages = a->hugepages,
					  .load = a->load };
	if (eng_model_open(&r->dm, a->draft, &mopt, &err))
		return mw_fail(MW_EXIT_USAGE, VERB, "--draft %s%s%s", err.source,
			       err.source[0] ? ": " : "", err.text);
	const struct eng_model_info *di = eng_model_info(r->dm), *ti = r->o->info;
	if (di->vocab_size != ti->vocab_size)
		return mw_fail(MW_EXIT_USAGE, VERB, "--draft %s: its vocabulary has %d tokens, the "
			       "model %s has %d: a draft must share the model's vocabulary (give a "
			       "draft of the same tokenizer, e.g. a smaller model of the family)",
			       a->draft, di->vocab_size, a->model, ti->vocab_size);
	struct eng_session_options sopt = { .threads = (int)a->threads, .kernels = a->kernels,
					    .kernel_choice = a->kchoice,
					    .kv_type = a->kv, .prefill_chunk = (int)a->prefill_chunk,
					    .attention = a->attention,
					    .ctx_len = a->ctx_len > 0 ? a->ctx_len : ti->seq_len };
	if (eng_session_new(&r->ds, r->dm, &sopt, &err))
		return mw_fail(MW_EXIT_USAGE, VERB, "--draft %s: %s", a->draft, err.text);
	return 0;
}

/* The prompt through both models (the draft's without logits); the first token from the
 * model's. */
static int prompt_run(struct draft_run *r)
{
	const float *logits;
	struct eng_step_bytes b;
	int rc = eng_session_prefill(r->ts, r->prompt, r->n_prompt, 0, &logits, NULL);
	if (!rc && r->n_prompt > 1)
		rc = eng_session_prefill(r->ds, r->prompt, r->n_prompt - 1, 0, NULL, &b);
	if (rc)
		return mw_fail(MW_EXIT_ENV, VERB, "prefill of %d tokens failed: %s", r->n_prompt,
			       strerror(-rc));
	r->d_next = r->n_prompt - 1;
	const struct eng_tokenizer *tok = r->o->tok;
	for (int pos = 0; pos < r->n_prompt; pos++) {
		r->ctx[r->n_ctx++] = r->prompt[pos];
		if (pos + 1 < r->n_prompt && tok && !r->a->ids) {
			const char *piece = eng_tokenizer_decode(tok, r->prompt[pos],
								 r->prompt[pos + 1]);
			mw_gen_print_piece(piece);
		}
	}
	r->t_prompt_end = mw_now_s();
	emit(r, mw_spec_argmax(logits, r->o->info->vocab_size));
	r->t_first = r->t_end = mw_now_s();
	return 0;
}

/* k draft tokens into r->pass[1..k]: the draft first catches up on the context it has not
 * seen (positions d_next .. pos0, one pass; the tokens the model kept after its last
 * proposals), then steps greedily on its own proposals. */
static int propose(struct draft_run *r, int pos0, int k)
{
	int vocab = r->o->info->vocab_size, rc;
	const float *logits;
	struct eng_step_bytes b;
	int n = pos0 + 1 - r->d_next;
	if ((rc = eng_session_prefill(r->ds, r->ctx + r->d_next, n, r->d_next, &logits, &b)))
		return mw_fail(MW_EXIT_ENV, VERB, "draft pass of %d tokens at %d failed: %s", n,
			       r->d_next, strerror(-rc));
	r->d_passes++;
	r->d_tokens += n;
	r->d_weights += b.weights;
	r->d_next = pos0 + 1;
	for (int i = 1; i <= k; i++) {
		r->pass[i] = mw_spec_argmax(logits, vocab);
		if (i == k)
			break;
		if ((rc = eng_session_step(r->ds, r->pass[i], r->d_next, &logits, &b)))
			return mw_fail(MW_EXIT_ENV, VERB, "draft step at %d failed: %s", r->d_next,
				       strerror(-rc));
		r->d_passes++;
		r->d_tokens++;
		r->d_weights += b.weights;
		r->d_next++;
	}
	return 0;
}

/* Draft, verify, accept, until -n tokens. */
static int decode(struct draft_run *r)
{
	const struct gen_args *a = r->a;
	int vocab = r->o->info->vocab_size, rc;
	while (r->generated < a->steps) {
		int pos0 = r->n_ctx - 1, room = (int)(a->steps - r->generated - 1);
		int k = a->spec_k < room ? a->spec_k : room;
		if (k > 0 && (rc = propose(r, pos0, k)))
			return rc;
		const float *logits;
		struct eng_step_bytes bytes;
		r->pass[0] = r->ctx[pos0];
		if ((rc = eng_session_verify(r->ts, r->pass, k + 1, pos0, &logits, &bytes)))
			return mw_fail(MW_EXIT_ENV, VERB, "verification of %d tokens at %d failed: "
				       "%s", k + 1, pos0, strerror(-rc));
		int i = 0;
		while (i < k && mw_spec_argmax(logits + (size_t)i * (size_t)vocab, vocab) == r->pass[1 + i])
			i++;
		int next = mw_spec_argmax(logits + (size_t)i * (size_t)vocab, vocab);
		if ((rc = eng_session_truncate(r->ts, pos0 + i + 1)))
			return mw_fail(MW_EXIT_ENV, VERB, "truncate at %d failed: %s", pos0 + i + 1,
				       strerror(-rc));
		/* The draft's cache holds pos0 and its proposals 1 .. k-1 after it; those past
		 * the accepted ones were for a context the model did not keep. */
		if (r->d_next > pos0 + i + 1) {
			r->d_next = pos0 + i + 1;
			if ((rc = eng_session_truncate(r->ds, r->d_next)))
				return mw_fail(MW_EXIT_ENV, VERB, "draft truncate at %d failed: %s",
					       r->d_next, strerror(-rc));
		}
		for (int t = 0; t < i; t++)
			emit(r, r->pass[1 + t]);
		emit(r, next);
		r->passes++;
		r->proposed += k;
		r->accepted += i;
		r->t_weights += bytes.weights;
		r->kv_read_sum += bytes.kv_read;
		r->kv_write_sum += bytes.kv_write;
	}
	r->t_end = mw_now_s();
	return 0;
}

/* The summary as the plain path gives it, with the speculation's figures; with --report-line
 * the adapter line and the bytes line, whose engine_bytes_per_token counts both models'
 * weight bytes per token generated by the passes (all tokens after the first). */
static void summary_print(const struct draft_run *r)
{
	const struct gen_args *a = r->a;
	const struct eng_model_info *info = r->o->info, *di = eng_model_info(r->dm);
	long decoded = r->generated - 1;
	double secs = r->t_end - r->t_first, per = decoded > 0 ? 1.0 / (double)decoded : 0.0;
	char rate[32] = "n/a";
	if (decoded > 0 && secs > 0)
		snprintf(rate, sizeof(rate), "%.2f", (double)decoded / secs);
	double acc = r->proposed ? (double)r->accepted / (double)r->proposed : 0.0;
	double t_tok = (double)r->t_weights * per, d_tok = (double)r->d_weights * per;
	fprintf(stderr,
		"memwall %s: %ld tokens (%d prompt), %s tok/s decode, first token %.1f ms "
		"(load %.1f ms), kernels %s, threads %ld, speculate draft K=%d (%s): %ld of %ld "
		"draft tokens accepted (%.1f%%), %ld passes (%.3f per token), %.0f weight bytes "
		"per token (model %.0f + draft %.0f)%s%s\n",
		VERB, r->generated, r->n_prompt, rate, (r->t_first - r->o->t0) * 1e3,
		(r->o->t_loaded - r->o->t0) * 1e3, eng_session_kernels(r->ts), a->threads,
		a->spec_k, a->draft, r->accepted, r->proposed, 100.0 * acc, r->passes,
		(double)r->passes * per, t_tok + d_tok, t_tok, d_tok,
		info->synthetic ? ", synthetic model (random weights)" : "",
		di->synthetic ? ", synthetic draft (random weights)" : "");
	if (!a->report_line)
		return;
	fprintf(stderr, "memwall-tokens: decode=%ld prompt=%d prompt_ms=%.3f load_ms=%.3f",
		r->generated, r->n_prompt, (r->t_prompt_end - r->t_loop) * 1e3,
		(r->o->t_loaded - r->o->t0) * 1e3);
	if (decoded > 0)
		fprintf(stderr, " decode_ms=%.3f decode_steps=%ld", secs * 1e3, decoded);
	fputc('\n', stderr);
	/* weights: the model's and the draft's; KV: the model's */
	fputs("memwall-bytes:", stderr);
	mw_gen_print_engine_bytes(stderr, t_tok + d_tok, (double)r->kv_read_sum * per,
				  (double)r->kv_write_sum * per);
	fprintf(stderr, " target_bytes_per_token=%.0f draft_bytes_per_token=%.0f spec_mode=draft "
		"spec_k=%d spec_passes=%ld spec_proposed=%ld spec_accepted=%ld spec_acceptance=%.4f "
		"passes_per_token=%.4f draft_passes=%ld draft_tokens=%ld\n", t_tok, d_tok,
		a->spec_k, r->passes, r->proposed, r->accepted, acc, (double)r->passes * per,
		r->d_passes, r->d_tokens);
}

int mw_generate_draft(const struct gen_args *a, const struct gen_open *o, const int *prompt,
		      int n_prompt)
{
	struct draft_run r = { .a = a, .o = o, .prompt = prompt, .n_prompt = n_prompt };
	struct eng_error err;
	int rc;
	eng_error_clear(&err);
	if ((rc = mw_spec_session(a, o, &r.ts)) || (rc = draft_open(&r)))
		goto out;
	r.ctx = malloc((size_t)(n_prompt + a->steps + 1) * sizeof(*r.ctx));
	r.pass = malloc((size_t)(a->spec_k + 1) * sizeof(*r.pass));
	if (!r.ctx || !r.pass) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
		goto out;
	}
	r.t_loop = mw_now_s();
	if ((rc = prompt_run(&r)) || (rc = decode(&r)))
		goto out;
	if (o->tok && !a->ids)
		putchar('\n');
	fflush(stdout);
	summary_print(&r);
	rc = MW_EXIT_OK;
out:
	free(r.ctx);
	free(r.pass);
	eng_session_free(r.ts);
	eng_session_free(r.ds);
	eng_model_close(r.dm);
	return rc;
}
