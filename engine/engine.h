/* engine/engine.h: the inference engine's public face.
 *
 * The engine knows nothing of counters or result files; src/ drives it and reads counters
 * at the hooks it offers. Library functions return 0 or a negative errno-style code and
 * fill a struct eng_error when the cause is worth telling a user.
 */
#ifndef MEMWALL_ENGINE_H
#define MEMWALL_ENGINE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where outside input was wrong and how (jansson's json_error_t is the model). */
struct eng_error {
	char source[512]; /* the file at fault, "" if none */
	uint64_t offset;  /* byte offset in source, ENG_NO_OFFSET if not applicable */
	char text[768];   /* what was wrong, naming the field or tensor */
};
#define ENG_NO_OFFSET UINT64_MAX

void eng_error_clear(struct eng_error *err);
/* Fills err (which may be NULL) and returns code, so a loader can `return eng_error_set(...)`. */
int eng_error_set(struct eng_error *err, int code, const char *source, uint64_t offset,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* ---- Models ------------------------------------------------------------------------------ */

struct eng_model;

enum eng_format {
	ENG_FORMAT_LLAMA2C, /* llama2.c checkpoint: legacy 7-int header or "ak42" version 1 */
	ENG_FORMAT_GGUF,
};

struct eng_model_options {
	bool populate;  /* mmap with MAP_POPULATE: fault every page in at open */
	bool hugepages; /* madvise(MADV_HUGEPAGE) on the mapping where the kernel allows it */
};

struct eng_model_info {
	enum eng_format format;
	const char *arch;     /* "llama", "falcon" */
	int dim;              /* embedding width */
	int hidden_dim;       /* FFN width */
	int n_layers;
	int n_heads;
	int n_kv_heads;
	int vocab_size;
	int seq_len;          /* context the model was trained for */
	bool shared_classifier; /* classifier aliases the embedding table */
	bool synthetic;       /* written by `memwall synth`: random weights, real shape */
	uint64_t file_bytes;
	uint64_t weight_bytes; /* bytes of every weight tensor in the file */
};

/* Maps the model at path read-only; tensors are views into the mapping. On success *out is a
 * new model the caller closes with eng_model_close. */
int eng_model_open(struct eng_model **out, const char *path, const struct eng_model_options *opt,
		   struct eng_error *err);
void eng_model_close(struct eng_model *m);
/* Borrowed; valid until eng_model_close. */
const struct eng_model_info *eng_model_info(const struct eng_model *m);

/* ---- Sessions: one KV cache and one thread pool over a model ------------------------------ */

struct eng_session;

enum eng_kv_type { ENG_KV_F32, ENG_KV_F16 };

/* Phases a decode step passes through, for the harness to read counters at their edges. */
enum eng_phase {
	ENG_PHASE_ATTENTION,  /* norm, QKV, RoPE, attention over the cache, output projection */
	ENG_PHASE_FFN,        /* norm and the feed-forward block */
	ENG_PHASE_CLASSIFIER, /* final norm and the vocabulary projection */
	ENG_PHASE_COUNT,
};

/* Bytes one step read and wrote, computed from tensor shapes (engine-accounted), never
 * measured. */
struct eng_step_bytes {
	uint64_t weights;  /* every weight byte the step read, embedding row included */
	uint64_t kv_read;  /* KV-cache bytes read by attention at this position */
	uint64_t kv_write; /* KV-cache bytes written for this position */
	uint64_t by_phase[ENG_PHASE_COUNT]; /* weights + kv bytes split by phase */
};

/* Called on the thread that called eng_session_step. With no hooks set the engine pays one
 * predictable branch per phase edge. */
struct eng_hooks {
	void *ctx;
	/* begin is true at the phase's start; layer is -1 for the classifier. */
	void (*phase)(void *ctx, enum eng_phase phase, int layer, bool begin);
	/* After every step, with that step's engine-accounted bytes. */
	void (*token)(void *ctx, int pos, int token, const struct eng_step_bytes *bytes);
};

struct eng_session_options {
	int threads;          /* <= 0 means 1 */
	const char *kernels;  /* NULL or "auto": best for this CPU; "ref", "avx2", "avx512", "neon" */
	enum eng_kv_type kv_type;
	int ctx_len;          /* <= 0 means the model's seq_len */
	const struct eng_hooks *hooks; /* may be NULL; copied */
};

int eng_session_new(struct eng_session **out, struct eng_model *m,
		    const struct eng_session_options *opt, struct eng_error *err);
void eng_session_free(struct eng_session *s);
/* The kernel table in use, e.g. "avx512". Static storage. */
const char *eng_session_kernels(const struct eng_session *s);
/* Runs token at position pos (positions must be fed in order from 0). *logits is borrowed,
 * valid until the next step or eng_session_free. bytes may be NULL. */
int eng_session_step(struct eng_session *s, int token, int pos, const float **logits,
		     struct eng_step_bytes *bytes);

/* ---- Tokenizer and sampler ---------------------------------------------------------------- */

struct eng_tokenizer;

/* Loads a llama2.c tokenizer.bin for a model of vocab_size tokens (a mismatch is an error). */
int eng_tokenizer_open(struct eng_tokenizer **out, const char *path, int vocab_size,
		       struct eng_error *err);
void eng_tokenizer_close(struct eng_tokenizer *t);
/* Encodes text into tokens[0..max); *n receives the count. */
int eng_tokenizer_encode(const struct eng_tokenizer *t, const char *text, bool bos, bool eos,
			 int *tokens, int max, int *n);
/* The text of token after prev (leading space stripped after BOS, <0xXX> bytes decoded).
 * Borrowed; valid until eng_tokenizer_close. */
const char *eng_tokenizer_decode(const struct eng_tokenizer *t, int prev, int token);

struct eng_sampler;

struct eng_sampler_options {
	float temperature; /* 0: greedy */
	float topp;        /* in (0, 1]; 1 disables nucleus sampling */
	uint64_t seed;
};

int eng_sampler_new(struct eng_sampler **out, int vocab_size, const struct eng_sampler_options *opt);
void eng_sampler_free(struct eng_sampler *s);
/* Picks the next token; may modify logits in place. */
int eng_sampler_sample(struct eng_sampler *s, float *logits);

/* ---- Synthetic models ----------------------------------------------------------------------- */

/* Writes a deterministic synthetic llama2.c checkpoint of a named shape ("stories260K",
 * "stories15M", "stories42M", "stories110M") to path, marked as synthetic in its header. */
int eng_synth_llama2c(const char *path, const char *shape, uint64_t seed, struct eng_error *err);

#endif
