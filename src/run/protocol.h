/* src/run/protocol.h: protocol files (protocols/NAME.json): what `memwall run` executes.
 * The fields and their defaults are documented in protocols/README.md. */
#ifndef MEMWALL_PROTOCOL_H
#define MEMWALL_PROTOCOL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "adapters.h"
#include "engine.h"
#include "mw.h"

enum mw_need { MW_NEED_REQUIRED, MW_NEED_OPTIONAL, MW_NEED_OFF };

/* model.format; the names are "llama2c" and "gguf" (mw_model_format_name). */
enum mw_model_format { MW_MODEL_LLAMA2C, MW_MODEL_GGUF, MW_MODEL_FORMAT_COUNT };
/* engine.kind: a row of the run pipeline (src/run/pipeline.c); "builtin", "external". */
enum mw_engine_kind { MW_ENGINE_BUILTIN, MW_ENGINE_EXTERNAL, MW_ENGINE_COUNT };

/* The names of the values above, as protocols spell them. Static storage. */
const char *mw_model_format_name(enum mw_model_format f);
const char *mw_engine_kind_name(enum mw_engine_kind k);

struct mw_protocol {
	char *source;      /* the path it was loaded from, or "(embedded) NAME" */
	char sha256[65];   /* of the file's bytes */
	json_t *doc;       /* the parsed document, as written (for embedding in results) */

	const char *name;
	const char *description; /* "" when absent */

	struct {
		enum mw_model_format format;
		char *path;          /* resolved against the protocol's folder; NULL for synth */
		const char *url;     /* NULL when absent */
		int64_t size_bytes;  /* -1 when not pinned */
		const char *sha256;  /* NULL when not pinned */
		const char *synth_shape; /* NULL unless synthetic */
		uint64_t synth_seed;
		const char *synth_arch;  /* gguf synth only: "falcon", "llama" (eng_synth_gguf) */
		const char *synth_quant; /* gguf synth only: "q4_k_m", "q8_0", ... */
		const char *synth_activation; /* "silu" (default), "relu", "relu2" */
		/* model.synth.canonical_delta (gguf only, issue 18 R3): "split" (the canonical
		 * + delta form) or "dense" (its dense twin); NULL when absent */
		const char *synth_cd;
		enum eng_ffn_act synth_act;
		/* model.synth.construction; ENG_SYNTH_LEGACY when absent (issue 26) */
		enum eng_synth_construction synth_construction;
	} model;

	struct {
		char *path;          /* resolved; NULL when the protocol has no tokenizer */
		const char *url;
		const char *sha256;
	} tokenizer;

	struct {
		enum mw_engine_kind kind;
		int threads;         /* 0: one per CPU the process may run on */
		/* engine.threads_rule "cpu-count-halved": with threads 0, the AIOS baseline
		 * script's rule, online CPUs / 2 (at least 1), instead of every allowed CPU */
		bool threads_halved;
		int *cpus;           /* CPUs to pin to; NULL when not pinned */
		size_t n_cpus;
		const char *kernels; /* "auto" by default */
		enum eng_load_mode load; /* its names are the engine's (eng_load_mode_name) */
		enum eng_pin pin;        /* the session's threads (eng_pin_name) */
		/* External engines only (kind "external"); protocols/README.md documents them. */
		char **command;      /* argv template with {model} {prompt} {n} {threads} {seed};
				      * command[0] resolved against the protocol's folder when it
				      * holds a '/'; NULL for builtin engines */
		size_t n_command;
		const char *adapter; /* an adapter name from src/run/adapters/registry.c */
		enum mw_adapter_stream adapter_stream; /* the protocol's, else the adapter's */
		bool adapter_stream_given;
		const char *adapter_pattern; /* memwall-tokens only; NULL when absent */
		int timeout_s;       /* per process; default 600 */
		bool sparsity_map;   /* builtin only: eng_session_options.sparsity_map */
		enum eng_attention attention; /* builtin only: eng_session_options.attention */
		/* engine.context (builtin only, issue 18 R2): the prompt is BOS and context - 1
		 * seeded ids (mw_context_tokens), 0 when absent */
		int context;
	} engine;

	/* batch: sequences decoded together (builtin only; 1 by default). Every sequence gets
	 * the prompt; sequence i samples with sampling.seed + i. */
	int batch;
	/* speculative: prompt-lookup speculation (builtin, temperature 0, batch 1 only). */
	struct {
		bool on;
		int draft_tokens;    /* K: 4 by default */
		int ngram;           /* NG; 0: 3, then 2 (as generate --speculate lookup) */
	} speculative;
	/* variants: the protocol runs once per variant. Each is a whole protocol: this one's
	 * document with the variant's overrides and without "variants"; NULL and 0 without. */
	struct mw_variant {
		const char *name;    /* borrowed from doc */
		const json_t *overrides; /* the variant's object as written, borrowed from doc */
		struct mw_protocol *p; /* owned */
	} *variants;
	size_t n_variants;

	/* measure.method: how an external engine is measured. DIFFERENTIAL is memwall's
	 * (below); AIOS reproduces the AIOS baseline script's method, faults included
	 * (protocols/README.md, "AIOS's method"): one process of decode_tokens per repetition,
	 * the first uncore_imc_free_running instance's reads, the requested count assumed. */
	enum mw_measure_method { MW_MEASURE_DIFFERENTIAL, MW_MEASURE_AIOS } measure;

	/* The differential method (external engines): every repetition runs the program at
	 * short_tokens and at decode_tokens. Default short_tokens: decode_tokens / 4, at least 1. */
	int short_tokens;
	bool short_tokens_given; /* differential.short_tokens is in the protocol */
	bool allow_short;        /* a run that stops early (EOS) is valid; false by default */

	const char *prompt;      /* NULL when prompt_tokens is used */
	int *prompt_tokens;      /* the tokens fed before decoding; [1] (BOS) by default */
	size_t n_prompt_tokens;
	int decode_tokens;
	int runs;
	int warmup_runs;

	struct {
		double temperature;
		double topp;
		uint64_t seed;
	} sampling;

	struct {
		enum mw_need dram;
		const char *backend; /* a name from prb_dram_backends(); NULL for "auto" */
		enum mw_need energy;
	} counters;

	int idle_baseline_ms;

	struct {
		double max_bandwidth_change_pct;
		int probe_ms; /* 0 turns the drift probe off */
	} drift;

};

enum mw_protocol_flags {
	/* Check that model.path and tokenizer.path exist (the runner does; `validate` of a
	 * shipped protocol whose weights are not downloaded yet does not). */
	MW_PROTOCOL_CHECK_FILES = 1 << 0,
};

/* Loads and checks the protocol at path. On success *out is a new protocol the caller frees
 * with mw_protocol_free. On failure returns -errno (-EINVAL for bad content) and err names
 * the file, the field and the fix. */
int mw_protocol_load(struct mw_protocol **out, const char *path, unsigned flags,
		     struct mw_error *err);
/* The same from text in memory; relative paths resolve against dir (NULL: the current
 * directory), and source names it in errors. */
int mw_protocol_parse(struct mw_protocol **out, const char *text, size_t len, const char *source,
		      const char *dir, unsigned flags, struct mw_error *err);
/* Loads a protocol compiled into the binary by name, e.g. "stories110m-synthetic". */
int mw_protocol_load_embedded(struct mw_protocol **out, const char *name, struct mw_error *err);
void mw_protocol_free(struct mw_protocol *p);

/* The folder cached synthetic models go to: $MEMWALL_CACHE_DIR, else $XDG_CACHE_HOME/memwall,
 * else $HOME/.cache/memwall. Writes it to buf; -ENOENT when none of them is set. */
int mw_cache_dir(char *buf, size_t n);

/* What an external engine's command template's placeholders stand for. */
struct mw_command_values {
	const char *model;   /* {model}: the model file's path */
	const char *prompt;  /* {prompt}: the prompt text, passed as it is */
	long n;              /* {n}: tokens to generate */
	long threads;        /* {threads} */
	unsigned long long seed; /* {seed}: sampling.seed */
};

/* Expands the placeholders of one command-template argument into *out (malloc'd; the caller
 * frees it). The result is one argv element: nothing is split or interpreted by a shell, so a
 * prompt holding "; rm -rf /" or "$(...)" reaches the program verbatim. A '{' that starts
 * "{name}" with name in a-z and '_' must be a known placeholder: -EINVAL with err naming field
 * otherwise; other braces are kept as they are. v NULL only checks. */
int mw_command_expand(const char *arg, const struct mw_command_values *v, const char *source,
		      const char *field, char **out, struct mw_error *err);

/* The keys a variant may override, dotted ("engine.load"), NULL-terminated; static storage.
 * A new override is one entry in this table (src/run/protocol.c, variant_keys). */
const char *const *mw_variant_keys(void);

/* The protocol schema (protocols/protocol.schema.json as compiled in). New reference. */
json_t *mw_protocol_schema(void);

#endif
