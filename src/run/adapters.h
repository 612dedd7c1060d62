/* src/run/adapters.h: output adapters for external engines.
 *
 * An adapter reads what a foreign program (stock llama.cpp, a Node script, `memwall generate`)
 * printed and returns the prompt tokens, the generated tokens and the engine's own timings.
 * It never guesses: a figure the output does not confirm is left unknown, and when the number
 * of generated tokens is unknown the result says why and which flag to change, so the runner
 * can mark the run invalid with that message.
 *
 * Adapters (the table in adapters/registry.c, one row each, one file per adapter):
 *   llama-completion, llama-cli   the perf lines llama.cpp prints to stderr at exit, every
 *                                 version: `llama_print_timings:` (2023),
 *                                 `llama_perf_context_print:` (2024-), `common_perf_print:`
 *                                 (v0.5.0), with or without the `0.00.081.426 I ` timestamp
 *                                 and level prefix
 *   llama-bench                   any of the four formats below, recognised by their first bytes
 *   llama-bench-json, -jsonl, -csv, -md
 *                                 `llama-bench -o json|jsonl|csv|md` on stdout
 *   memwall-tokens                the generic line below, or a pattern the protocol gives
 *
 * The generic line, printed once by the program, anywhere in its output:
 *
 *   memwall-tokens: decode=N [prompt=M] [decode_ms=T] [decode_steps=S] [prompt_ms=P] [load_ms=L]
 *
 *   decode        tokens generated, counting the first one that comes out of the prompt's
 *                 forward pass (required)
 *   prompt        prompt tokens evaluated
 *   decode_ms     wall time of the single-token forward passes, in ms
 *   decode_steps  how many tokens decode_ms covers (one per forward pass, or N per pass when
 *                 `memwall generate --batch N` decodes N sequences together); when absent,
 *                 decode_ms covers all `decode` tokens. tok/s = decode_steps / decode_ms.
 *   prompt_ms     wall time of the prompt's forward pass(es), in ms
 *   load_ms       model load time, in ms
 * Keys may come in any order, separated by blanks; an unknown key or a key given twice is an
 * error (so a typo cannot silently drop a figure). Counts are integers in [0, 2^31); times are
 * finite and non-negative.
 *
 * Instead of that line, a protocol may give a pattern (mw_adapter_opts.pattern) such as
 *   "generated {decode} tokens in {decode_ms} ms"
 * A line matches when it starts with the pattern: literal characters match themselves, a run of
 * blanks matches one or more blanks, and {key} (a key from the list above) matches a number.
 * Text after the pattern's end is ignored. No regular expressions.
 *
 * llama-bench's figures are per repetition of one test. Its process also ran a warm-up (unless
 * --no-warmup) and every repetition, so a whole-process token total does not follow from its
 * output; the differential method wants llama-completion or the generic line instead.
 *
 * Parsers take (buf, len): buf need not be NUL-terminated and may hold any bytes, so they can be
 * fuzzed directly.
 */
#ifndef MEMWALL_ADAPTERS_H
#define MEMWALL_ADAPTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mw.h"

/* Which of the program's streams an adapter reads. llama.cpp prints its timings on stderr and
 * its generated text on stdout; reading only the right stream keeps generated text from ever
 * looking like a timing line. */
enum mw_adapter_stream {
	MW_ADAPTER_STDERR,
	MW_ADAPTER_STDOUT,
	MW_ADAPTER_BOTH, /* the caller passes stdout then stderr */
};

struct mw_adapter_count {
	int64_t value;
	bool known;
};

struct mw_adapter_ms {
	double value;
	bool known;
};

struct mw_adapter_result {
	const char *adapter;                  /* the row that parsed it; static storage */
	struct mw_adapter_count prompt_tokens;
	struct mw_adapter_count decode_tokens; /* generated, including the one out of prompt eval */
	struct mw_adapter_count eval_runs;     /* single-token forward passes that eval_ms covers */
	struct mw_adapter_count repetitions;   /* llama-bench: samples behind the means */
	struct mw_adapter_ms prompt_ms;        /* prompt evaluation (llama-bench: per repetition) */
	struct mw_adapter_ms eval_ms;          /* decode passes (llama-bench: per repetition) */
	struct mw_adapter_ms load_ms;
	struct mw_adapter_ms tok_per_s;        /* eval_runs / eval_ms, or llama-bench's avg_ts */
	struct mw_adapter_ms tok_per_s_sd;     /* llama-bench's stddev_ts */
	/* Set whenever decode_tokens is unknown: why, and which flag to change. */
	char why_unknown[512];
};

/* Options a protocol may set; NULL means all defaults. */
struct mw_adapter_opts {
	const char *pattern; /* memwall-tokens only: a pattern as described above, or NULL */
};

/* Parses buf[0..len) into *res (cleared first). source names the output in error messages
 * (e.g. "run 3 stderr").
 * Returns 0 when the output was understood: check res->decode_tokens.known (why_unknown says
 * why not); -EINVAL when it is malformed (err names the line and the field); -EIO when the
 * program printed an error and no timings (err quotes the program's first error line). */
typedef int (*mw_adapter_parse_fn)(const char *buf, size_t len, const struct mw_adapter_opts *opts,
				   const char *source, struct mw_adapter_result *res,
				   struct mw_error *err);

/* True when buf looks like this adapter's output: used to pick an adapter automatically and
 * for llama-bench's format sniffing. */
typedef bool (*mw_adapter_detect_fn)(const char *buf, size_t len);

struct mw_adapter {
	const char *name;
	enum mw_adapter_stream stream;
	mw_adapter_detect_fn detect;
	mw_adapter_parse_fn parse;
	const char *summary;
	/* What the output tells of each token's time. None of llama.cpp's outputs prints a time
	 * per token, so per-token latency percentiles are not measured around a foreign program;
	 * the record says why with this text. */
	const char *token_times;
};

/* The adapter called name, or NULL. Returns a pointer into a static table. */
const struct mw_adapter *mw_adapter_find(const char *name);
/* The first adapter whose detect() accepts buf, or NULL. Static table. */
const struct mw_adapter *mw_adapter_detect(const char *buf, size_t len);
/* The table itself, for listings and tests: *n receives the row count. Static storage. */
const struct mw_adapter *mw_adapter_list(size_t *n);

/* Shorthand for mw_adapter_find(name)->parse(...); -EINVAL naming the adapter when unknown. */
int mw_adapter_parse(const char *name, const char *buf, size_t len,
		     const struct mw_adapter_opts *opts, const char *source,
		     struct mw_adapter_result *res, struct mw_error *err);

/* Checks that res confirms a complete run of target generated tokens. Returns 0 when it does;
 * -ENODATA when the count is unknown (err carries why_unknown); -ERANGE when fewer tokens came
 * out (an end-of-sequence token stopped generation) and allow_short is false; -EPROTO when more
 * came out than were asked for (the command template passes the count to the wrong flag). */
int mw_adapter_check(const struct mw_adapter_result *res, int64_t target, bool allow_short,
		     const char *source, struct mw_error *err);

#endif
