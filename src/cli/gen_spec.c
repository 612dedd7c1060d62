/* src/cli/gen_spec.c: `memwall generate --speculate lookup[:K[:NG]]` (issue 17): speculative
 * greedy decoding without a draft model, after prompt-lookup decoding (Saxena 2023; llama.cpp's
 * lookup example); the drafting and verification live in src/run/speculate.c, shared with the
 * runner. After each token, the last NG tokens of the context (prompt and generated)
 * are looked up earlier in it, most recent match first, and the K tokens that followed become
 * the draft. One pass (eng_session_verify) runs the last token and the draft with every
 * token's logits: the longest prefix of the draft that the greedy argmax agrees with is
 * accepted, plus the model's own next token, and the cache forgets the rest
 * (eng_session_truncate). Each token comes from the argmax of logits that carry the bits a
 * one-token step gives (engine.h), so the output is plain greedy decoding's; what changes is
 * how many passes over the weights it takes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "generate.h"
#include "mw.h"
#include "speculate.h"

#define VERB "generate"

struct spec {
	const struct gen_args *a;
	const struct gen_open *o;
	const int *prompt;
	int n_prompt;
	struct eng_session *session;
	int *ctx, n_ctx;  /* (n_prompt + steps) the prompt, then the tokens generated */
	int *pass;        /* (K + 1) a verification's tokens: the last one, then the draft */
	long generated;
	long passes, proposed, accepted; /* verification passes, draft tokens, draft accepted */
	uint64_t weights_sum, skipped_sum, kv_read_sum, kv_write_sum; /* over the verification
								       * passes */
	double t_loop, t_prompt_end, t_first, t_end;
};

int mw_speculate_parse(const char *arg, int *k, int *ng)
{
	static const char name[] = "lookup";
	size_t len = strlen(name);
	*k = 4;
	*ng = 0;
	if (strncmp(arg, name, len) || (arg[len] && arg[len] != ':'))
		goto bad;
	const char *p = arg + len;
	if (*p) {
		char *end;
		errno = 0;
		long v = strtol(p + 1, &end, 10);
		if (end == p + 1 || errno || v < 1 || v > 32 || (*end && *end != ':'))
			goto bad;
		*k = (int)v;
		if (*end) {
			p = end + 1;
			v = strtol(p, &end, 10);
			if (end == p || errno || v < 1 || v > 8 || *end)
				goto bad;
			*ng = (int)v;
		}
	}
	return 0;
bad:
	return mw_fail(MW_EXIT_USAGE, VERB, "--speculate %s: give lookup[:K[:NG]], K draft "
		       "tokens 1 to 32 (default 4), NG the n-gram size 1 to 8 (default 3, then 2)",
		       arg);
}

/* Prints the context's token at idx (already appended): its text after the previous token,
 * or its id. */
static void emit_at(struct spec *sp, int idx)
{
	const struct eng_tokenizer *tok = sp->o->tok;
	int prev = sp->ctx[idx - 1], token = sp->ctx[idx];
	sp->generated++;
	if (tok && !sp->a->ids) {
		const char *piece = eng_tokenizer_decode(tok, prev, token);
		mw_gen_print_piece(piece);
	} else {
		printf("%d\n", token);
	}
	fflush(stdout);
}

/* The prompt in one prefill (its text printed as the plain path prints it), and the first
 * token from its last logits. */
static int prompt_run(struct spec *sp)
{
	const float *logits;
	int rc = eng_session_prefill(sp->session, sp->prompt, sp->n_prompt, 0, &logits, NULL);
	if (rc)
		return mw_fail(MW_EXIT_ENV, VERB, "prefill of %d tokens failed: %s", sp->n_prompt,
			       strerror(-rc));
	const struct eng_tokenizer *tok = sp->o->tok;
	for (int pos = 0; pos < sp->n_prompt; pos++) {
		sp->ctx[sp->n_ctx++] = sp->prompt[pos];
		if (pos + 1 < sp->n_prompt && tok && !sp->a->ids) {
			const char *piece = eng_tokenizer_decode(tok, sp->prompt[pos],
								 sp->prompt[pos + 1]);
			mw_gen_print_piece(piece);
		}
	}
	sp->t_prompt_end = mw_now_s();
	sp->ctx[sp->n_ctx++] = mw_spec_argmax(logits, sp->o->info->vocab_size);
	emit_at(sp, sp->n_ctx - 1);
	sp->t_first = sp->t_end = mw_now_s();
	return 0;
}

/* Draft, verify, accept, until -n tokens: each pass yields its accepted draft tokens and one
 * of the model's own. The draft never runs past -n (nor, since -n fits the context, past
 * it). */
static int decode(struct spec *sp)
{
	const struct gen_args *a = sp->a;
	int vocab = sp->o->info->vocab_size, rc;
	int ng_max = a->spec_ng ? a->spec_ng : 3, ng_min = a->spec_ng ? a->spec_ng : 2;
	while (sp->generated < a->steps) {
		int room = (int)(a->steps - sp->generated - 1), n0 = sp->n_ctx;
		struct mw_spec_pass ps;
		if ((rc = mw_spec_step(sp->session, vocab, sp->ctx, &sp->n_ctx,
				       a->spec_k < room ? a->spec_k : room, ng_min, ng_max, sp->pass,
				       &ps)))
			return mw_fail(MW_EXIT_ENV, VERB, "verification at %d failed: %s", n0 - 1,
				       strerror(-rc));
		for (int t = n0; t < sp->n_ctx; t++)
			emit_at(sp, t);
		sp->passes++;
		sp->proposed += ps.drafted;
		sp->accepted += ps.accepted;
		sp->weights_sum += ps.bytes.weights;
		sp->skipped_sum += ps.bytes.weights_skipped;
		sp->kv_read_sum += ps.bytes.kv_read;
		sp->kv_write_sum += ps.bytes.kv_write;
	}
	sp->t_end = mw_now_s();
	return 0;
}

/* The summary line as the plain path gives it, with the speculation's figures; with
 * --report-line the adapter line and the bytes line, whose engine_bytes_per_token is per
 * token generated by the verification passes (all tokens after the first). */
static void summary_print(const struct spec *sp)
{
	const struct gen_args *a = sp->a;
	const struct eng_model_info *info = sp->o->info;
	long decoded = sp->generated - 1;
	double secs = sp->t_end - sp->t_first;
	char rate[32] = "n/a", ng[16];
	if (decoded > 0 && secs > 0)
		snprintf(rate, sizeof(rate), "%.2f", (double)decoded / secs);
	if (a->spec_ng)
		snprintf(ng, sizeof(ng), "%d", a->spec_ng);
	else
		snprintf(ng, sizeof(ng), "3..2");
	double acc = sp->proposed ? (double)sp->accepted / (double)sp->proposed : 0.0;
	double per_tok = decoded > 0 ? (double)sp->weights_sum / (double)decoded : 0.0;
	double passes_per_tok = decoded > 0 ? (double)sp->passes / (double)decoded : 0.0;
	fprintf(stderr,
		"memwall %s: %ld tokens (%d prompt), %s tok/s decode, first token %.1f ms "
		"(load %.1f ms), kernels %s, threads %ld, kv %s, speculate lookup K=%d NG=%s: "
		"%ld of %ld draft tokens accepted (%.1f%%), %ld passes (%.3f per token), "
		"%.0f weight bytes per token%s\n",
		VERB, sp->generated, sp->n_prompt, rate, (sp->t_first - sp->o->t0) * 1e3,
		(sp->o->t_loaded - sp->o->t0) * 1e3, eng_session_kernels(sp->session), a->threads,
		a->kv == ENG_KV_F32 ? "f32" : a->kv == ENG_KV_F16 ? "f16"
		: info->format == ENG_FORMAT_GGUF ? "f16" : "f32", a->spec_k, ng, sp->accepted,
		sp->proposed, 100.0 * acc, sp->passes, passes_per_tok, per_tok,
		info->synthetic ? ", synthetic model (random weights)" : "");
	if (!a->report_line)
		return;
	fprintf(stderr, "memwall-tokens: decode=%ld prompt=%d prompt_ms=%.3f load_ms=%.3f",
		sp->generated, sp->n_prompt, (sp->t_prompt_end - sp->t_loop) * 1e3,
		(sp->o->t_loaded - sp->o->t0) * 1e3);
	if (decoded > 0)
		fprintf(stderr, " decode_ms=%.3f decode_steps=%ld", secs * 1e3, decoded);
	fputc('\n', stderr);
	fputs("memwall-bytes:", stderr);
	mw_gen_print_engine_bytes(stderr, per_tok,
				  decoded > 0 ? (double)sp->kv_read_sum / (double)decoded : 0.0,
				  decoded > 0 ? (double)sp->kv_write_sum / (double)decoded : 0.0);
	fprintf(stderr, " weights_skipped_per_token=%.0f sparsity_map=%d spec_k=%d spec_passes=%ld "
		"spec_proposed=%ld spec_accepted=%ld spec_acceptance=%.4f passes_per_token=%.4f\n",
		decoded > 0 ? (double)sp->skipped_sum / (double)decoded : 0.0,
		a->sparsity_map ? 1 : 0, a->spec_k, sp->passes, sp->proposed, sp->accepted, acc,
		passes_per_tok);
}

int mw_spec_session(const struct gen_args *a, const struct gen_open *o, struct eng_session **out)
{
	struct eng_error err;
	eng_error_clear(&err);
	if (a->temperature != 0.0)
		return mw_fail(MW_EXIT_USAGE, VERB, "--speculate verifies drafts against greedy "
			       "decoding: give --temperature 0 (sampling at temperature %g would "
			       "need rejection sampling, which memwall does not do)", a->temperature);
	struct eng_session_options sopt = { .threads = (int)a->threads, .kernels = a->kernels,
					    .kernel_choice = a->kchoice,
					    .kv_type = a->kv,
					    .prefill_chunk = (int)a->prefill_chunk,
					    .sparsity_map = a->sparsity_map,
					    .verify_tokens = a->spec_k + 1,
					    .attention = a->attention, .ctx_len = a->ctx_len };
	if (eng_session_new(out, o->model, &sopt, &err))
		return mw_fail(MW_EXIT_USAGE, VERB, "%s%s%s", err.source, err.source[0] ? ": " : "",
			       err.text);
	return 0;
}

int mw_generate_spec(const struct gen_args *a, const struct gen_open *o, const int *prompt,
		     int n_prompt)
{
	struct spec sp = { .a = a, .o = o, .prompt = prompt, .n_prompt = n_prompt };
	struct eng_error err;
	int rc;
	eng_error_clear(&err);
	if ((rc = mw_spec_session(a, o, &sp.session)))
		goto out;
	sp.ctx = malloc((size_t)(n_prompt + a->steps + 1) * sizeof(*sp.ctx));
	sp.pass = malloc((size_t)(a->spec_k + 1) * sizeof(*sp.pass));
	if (!sp.ctx || !sp.pass) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
		goto out;
	}
	sp.t_loop = mw_now_s();
	if ((rc = prompt_run(&sp)) || (rc = decode(&sp)))
		goto out;
	if (o->tok && !a->ids)
		putchar('\n');
	fflush(stdout);
	summary_print(&sp);
	rc = MW_EXIT_OK;
out:
	free(sp.ctx);
	free(sp.pass);
	eng_session_free(sp.session);
	return rc;
}
