/* src/cli/generate.h: `memwall generate`'s options, shared by the one-sequence path
 * (cmd_generate.c, which parses them) and batched decode (gen_batch.c). */
#ifndef MEMWALL_CLI_GENERATE_H
#define MEMWALL_CLI_GENERATE_H

#include <stdbool.h>
#include <stdio.h>

#include "engine.h"
#include "kernel_cache.h"

struct gen_args {
	const char *model, *tokenizer, *prompt, *kernels, *kv_name, *prompt_ids, *logits_path;
	const char *prompts_path; /* --prompts FILE: one prompt per line, or NULL */
	long steps, threads, seed, prefill_chunk;
	long batch;               /* --batch N; 0 when not given */
	double temperature, topp;
	bool speculate;           /* --speculate lookup[:K[:NG]] */
	int spec_k, spec_ng;      /* its draft length K, its n-gram size (0: 3, then 2) */
	bool ids, populate, hugepages, hooks_bench, report_line, force, sparsity_map;
	/* --sparsity-map=MAP's static map file, or NULL; --sparsity-neuron, --sparsity-verify */
	const char *sparsity_static;
	bool sparsity_neuron, sparsity_verify;
	enum eng_attention attention; /* --attention auto|naive|blocked */
	long context;             /* --context N: N seeded tokens for a prompt; 0 when not given */
	int ctx_len;              /* the session's positions: the model's, or context + steps */
	const char *draft;        /* --draft MODEL (with --speculate draft:K), or NULL */
	bool spec_draft;          /* --speculate draft:K (K in spec_k) */
	enum eng_kv_type kv;
	enum eng_load_mode load;
	/* --load overlap (gen_overlap.h); load_set: --load was given (else the default's rule) */
	bool overlap, load_set;
	long switch_at;           /* --switch-at N: move onto the image before token N + 1,
				   * waiting for it; 0 (default): as soon as it is ready */
	enum eng_pin pin;
	/* The kernel choice of this machine's cache (run/kernel_cache.h), loaded after the
	 * options: kchoice is &kc when it is used, else NULL; kuse says why not. */
	struct eng_kernel_choice kc;
	const struct eng_kernel_choice *kchoice;
	struct mw_kcache_use kuse;
};

/* What the one-sequence path opened and measured before decoding, lent to the batch. */
struct gen_open {
	struct eng_model *model;          /* borrowed */
	const struct eng_model_info *info; /* borrowed */
	struct eng_tokenizer *tok;        /* borrowed; NULL: token ids are printed */
	double t0, t_loaded;              /* CLOCK_MONOTONIC seconds: start, model loaded */
};

/* `memwall generate --batch N` / `--prompts FILE`: N sequences decoded together in one session
 * (eng_session_step_seqs), sequence i sampled with seed + i; prints each sequence's output
 * after the run, then the summary and, with --report-line, the adapter and bytes lines.
 * Returns an MW_EXIT_* code (messages printed). */
int mw_generate_batch(const struct gen_args *a, const struct gen_open *o);

/* Parses --speculate's "lookup[:K[:NG]]" into *k and *ng (0: NG 3, then 2). Returns 0, or
 * MW_EXIT_USAGE (message printed). */
int mw_speculate_parse(const char *arg, int *k, int *ng);
/* Parses --speculate's "draft:K" into *k (draft tokens per pass, 1 to 32; default 4).
 * Returns 0, or MW_EXIT_USAGE (message printed). */
int mw_draft_parse(const char *arg, int *k);
/* `memwall generate --speculate draft:K --draft MODEL`: greedy decoding of prompt[0..n_prompt)
 * with a draft model's greedy proposals verified one pass each (gen_draft.c); prints what the
 * plain path prints, then the summary and, with --report-line, the adapter and bytes lines
 * with acceptance and both models' weight bytes. Returns an MW_EXIT_* code. */
int mw_generate_draft(const struct gen_args *a, const struct gen_open *o, const int *prompt,
		      int n_prompt);
/* --logits FILE (gen_logits.c): its text, held in memory (buf, len) until written whole. */
struct gen_logits {
	FILE *f; /* NULL: --logits not given, or done */
	char *buf;
	size_t len;
};
/* Checks a->logits_path before the run (never an input of the command, a FIFO, a device, a
 * folder or a link; an existing file only with --force) and starts l. 0, or an MW_EXIT_*
 * code (message printed). */
int mw_logits_open(struct gen_logits *l, const struct gen_args *a);
/* The file's head: the model's path (escaped as a record's text), the vocabulary size. */
void mw_logits_begin(struct gen_logits *l, const char *model, int vocab_size);
/* Position pos's logits[0..n). */
void mw_logits_position(struct gen_logits *l, int pos, const float *logits, int n);
/* Ends the JSON with the tokens fed and writes the file whole (mw_file_write_atomic). 0, or
 * an MW_EXIT_* code (message printed). */
int mw_logits_close(struct gen_logits *l, const struct gen_args *a, const int *fed, int n_fed);
/* Frees what is left (after a failed run: nothing was written). */
void mw_logits_free(struct gen_logits *l);
/* `memwall generate --help` to f (gen_usage.c). */
void mw_generate_usage(FILE *f);
/* The engine-accounted part of every memwall-bytes line, one meaning wherever it appears
 * (records, reports, results/README.md): engine_bytes_per_token = weights + KV read + KV
 * written, each part a mean per decode token and printed beside it (weights_per_token,
 * kv_read_per_token, kv_write_per_token). */
void mw_gen_print_engine_bytes(FILE *f, double weights, double kv_read, double kv_write);
/* Prints a token's piece to stdout, skipping a lone control byte other than newline and tab
 * (as run.c's safe_printf does); NULL and "" print nothing (gen_print.c). */
void mw_gen_print_piece(const char *piece);
/* Both speculations' start (gen_spec.c): refuses a temperature other than 0, then opens the
 * target's session, with room for a verification pass of K + 1 tokens, into *out. Returns 0,
 * or an MW_EXIT_* code (message printed). */
int mw_spec_session(const struct gen_args *a, const struct gen_open *o, struct eng_session **out);
/* `memwall generate --speculate lookup`: greedy decoding of prompt[0..n_prompt) (BOS first)
 * with prompt-lookup drafts verified one pass each (gen_spec.c); prints what the plain path
 * prints, then the summary and, with --report-line, the adapter and bytes lines with the
 * speculation's figures. Returns an MW_EXIT_* code (messages printed). */
int mw_generate_spec(const struct gen_args *a, const struct gen_open *o, const int *prompt,
		     int n_prompt);

#endif
