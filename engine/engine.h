/* engine/engine.h: the inference engine's public face.
 *
 * The engine knows nothing of counters or result files; src/ drives it and reads counters
 * at the hooks it offers. Library functions return 0 or a negative errno-style code and
 * fill a struct eng_error when the cause is worth telling a user.
 */
#ifndef MEMWALL_ENGINE_H
#define MEMWALL_ENGINE_H

#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
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

/* Cancellation. The engine's long steps (writing a synthetic model, reading a model into
 * memory for the copying load modes, repacking) check a flag between chunks of at most a few
 * MB and stop with -ECANCELED, err saying so, leaving no partial file. The flag is the
 * caller's (a signal handler sets it, or another thread): the engine only reads it. One per
 * process, as signals are; NULL (the default) turns the checks off. An atomic_int, not a
 * volatile sig_atomic_t, because the engine's readers are other threads (the fill's workers,
 * an image built on its own thread) and only atomics make that defined; a handler may store
 * to it, the type being lock-free (C11 7.14.1.1). */
void eng_cancel_hook(atomic_int *flag);
/* True when the hooked flag is set. */
bool eng_cancelled(void);

/* ---- Models ------------------------------------------------------------------------------ */

struct eng_model;

enum eng_format {
	ENG_FORMAT_LLAMA2C, /* llama2.c checkpoint: legacy 7-int header or "ak42" version 1 */
	ENG_FORMAT_GGUF,
};

/* Where the tensors live.
 *  - ENG_LOAD_MMAP (the zero value of struct eng_model_options, so the library's default;
 *    `memwall generate` defaults to its own overlap mode: this, then ENG_LOAD_REPACK) keeps
 *    the zero-copy file mapping: its pages fault in as the first token touches them.
 *  - ENG_LOAD_HUGE_COPY reads the file into anonymous memory advised for 2 MiB transparent
 *    huge pages and makes that the model's mapping (read-only; tensors are views into it, a
 *    tied classifier still aliases the embedding): for kernels and file systems that give file
 *    pages no huge pages, where the weights then stream at 0.83-0.93x of the same read in
 *    2 MiB pages (measured on a Zen 4 VM, scripts/bench-engine.sh). It costs the read at load
 *    and the file's size in RAM besides the page cache; every page is in at open, so populate
 *    and hugepages do not apply. The copy is made in one pass on every CPU of the caller's
 *    affinity mask (hugecopy.c), 2 MiB pieces at a time; eng_model_load_report says with how
 *    many threads and how much of it the kernel gave 2 MiB pages.
 *  - ENG_LOAD_REPACK is the huge copy with every quantized matrix whose type has an x8 kernel
 *    in this CPU's best quant table, and whose rows are a multiple of 8, interleaved by eight
 *    rows (quants.h) on the way from the file, in the same pass: the layout those kernels read,
 *    as ggml's CPU repack buffers do. Sizes do
 *    not change, so neither do the bytes a step reads. A session whose --kernels table has no
 *    x8 kernel for a type still runs it, slowly (the rows unpacked per call). */
enum eng_load_mode {
	ENG_LOAD_MMAP,
	ENG_LOAD_HUGE_COPY,
	ENG_LOAD_REPACK,
};

/* The load modes' names ("mmap", "huge-copy", "repack"), indexed by enum eng_load_mode; static
 * storage. NULL for a value that is not a load mode. */
const char *eng_load_mode_name(enum eng_load_mode m);
/* name -> mode: 0, or -EINVAL for a name that is not one of them (names are matched exactly;
 * *out is then left alone). */
int eng_load_mode_parse(const char *name, enum eng_load_mode *out);
/* The number of load modes (for tests that compare the table with the schema's enum). */
int eng_load_mode_count(void);

struct eng_model_options {
	bool populate;  /* mmap with MAP_POPULATE: fault every page in at open */
	bool hugepages; /* madvise(MADV_HUGEPAGE) on the mapping where the kernel allows it */
	enum eng_load_mode load;
};

/* The FFN's activation. Llama models gate: hb = act(w1 x) * (w3 x), act SiLU (SwiGLU, the
 * default) or ReLU / ReLU^2 (ReGLU, as ReluLLaMA and ProSparse; ReLU^2 after So et al. 2021's
 * Primer); falcon's MLP is GELU(up x). ReLU and ReLU^2 give exact zeros, which a session with
 * sparsity_map skips in the down projection. In the file: llama2.c "ak42" v1 header byte 37
 * (0 SiLU, 1 ReLU, 2 ReLU^2; export.py leaves it zero); GGUF key
 * "llama.feed_forward_activation" ("silu", "relu", "relu2"; absent means SiLU). */
enum eng_ffn_act {
	ENG_ACT_SILU,
	ENG_ACT_RELU,
	ENG_ACT_RELU2,
	ENG_ACT_GELU,
	ENG_ACT_COUNT,
};
/* "silu", "relu", "relu2", "gelu"; static storage; NULL for a value out of range. */
const char *eng_ffn_act_name(enum eng_ffn_act a);
/* name -> activation: 0, or -EINVAL (exact match). */
int eng_ffn_act_parse(const char *name, enum eng_ffn_act *out);

/* ---- Architectures ---------------------------------------------------------------------------
 * (engine/model/arch.c) Each architecture the engine runs is one row of a table that holds
 * every fact about it; every list of architectures memwall shows (usage, errors, `memwall
 * synth`'s formats) is read off it, and tests/src/test_protocol.c holds the protocol schema's
 * enum to it. engine/README.md says how to add one. */
struct eng_arch_info {
	const char *name;       /* general.architecture: "llama", "falcon" */
	bool gated_ffn;         /* the FFN is act(gate x) * up x (llama), else act(up x) (falcon);
				 * the sparsity map (eng_session_options) skips a gated FFN's rows
				 * and blocks */
	bool parallel_residual; /* attention and the FFN read one norm of x and both add to it
				 * (falcon); else each has its own norm, one after the other */
	enum eng_ffn_act act;   /* the FFN activation when the file names none */
	unsigned acts;          /* the activations it runs, 1u << each: those a file's
				 * "<arch>.feed_forward_activation" and `memwall synth --activation`
				 * may name */
	bool llama2c;           /* llama2.c checkpoints are of this architecture */
	const char *synth_quant; /* `memwall synth`'s default GGUF quantization for it */
};
/* How many architectures, and row i (NULL for i >= eng_arch_count()), in the table's order.
 * Static storage. */
size_t eng_arch_count(void);
const struct eng_arch_info *eng_arch_at(size_t i);
/* The row of architecture name, or NULL: one the engine does not run, of which nothing is
 * known. Whoever must still answer for one answers no: no gated FFN, no sparsity map
 * (eng_arch_sparsity_map). */
const struct eng_arch_info *eng_arch_lookup(const char *name);
/* Whether the sparsity map applies to architecture name: its FFN is gated. false for NULL
 * and for an architecture the engine does not run. A session (sparsity_map) and memwall
 * headroom's R1 both ask this. */
bool eng_arch_sparsity_map(const char *name);
/* Every architecture's name, "llama, falcon", for messages. Static storage. */
const char *eng_arch_names(void);
/* The built-in shapes of architecture arch (NULL: of every one), space-separated, into buf
 * (eng_synth_gguf's shapes; truncated to len). */
void eng_arch_shape_names(const char *arch, char *buf, size_t len);

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
	enum eng_ffn_act ffn_act;
	uint64_t file_bytes;
	uint64_t weight_bytes; /* bytes of every tensor the forward pass reads (the legacy
				* format's unused RoPE tables are not counted) */
};

/* How a model's tensors were placed (eng_model_load_report). */
struct eng_load_report {
	enum eng_load_mode mode;
	int threads;        /* threads that filled the copy (hugecopy.c); 0 under mmap */
	int64_t huge_bytes; /* bytes of the copy the kernel backs with 2 MiB pages (the copy's
			     * AnonHugePages in /proc/self/smaps, read right after the fill);
			     * 0 under mmap; negative (-errno) when smaps could not be read */
};

/* Maps the model at path read-only (or copies it, opt->load); tensors are views into the
 * mapping. On success *out is a new model the caller closes with eng_model_close. */
int eng_model_open(struct eng_model **out, const char *path, const struct eng_model_options *opt,
		   struct eng_error *err);
/* The same over fd, the model file at path that the caller has opened read-only (src/ opens a
 * user's file with its own checks, then hands it here: the file is opened once). fd is this
 * function's from the call on, whatever the result. */
int eng_model_open_fd(struct eng_model **out, const char *path, int fd,
		      const struct eng_model_options *opt, struct eng_error *err);
void eng_model_close(struct eng_model *m);
/* Borrowed; valid until eng_model_close. */
const struct eng_model_info *eng_model_info(const struct eng_model *m);
/* Canonical + delta storage (issue 18 R3, engine/model/alias.h): the layers first..last that share
 * canonical weights, the canonicals' bytes (each once), the deltas' bytes, and the bytes a
 * dense twin would read for those layers' matrices instead (the canonical's type, per layer).
 * false (and *out zeroed) for a model stored whole. */
struct eng_canonical_info {
	int first, last;
	uint64_t canonical_bytes, delta_bytes, dense_bytes;
};
bool eng_model_canonical(const struct eng_model *m, struct eng_canonical_info *out);
/* Borrowed; valid until eng_model_close. */
const struct eng_load_report *eng_model_load_report(const struct eng_model *m);

/* ---- Tensor table ----------------------------------------------------------------------------
 * (engine/model/tensors.c) Every tensor of a model with its type, shape, bytes in the file and bytes
 * one decode step reads: the input of the analytic model (src/analysis/analytic.c). Built from the
 * model's own tensor table (the llama2.c layout, a GGUF file's tensor infos), or from a
 * built-in description of a file that is not at hand (eng_tensors_from_shape). */

enum eng_tensor_class {
	ENG_TENSOR_EMBEDDING,  /* token embedding table */
	ENG_TENSOR_ATTENTION,  /* Q, K, V (or fused QKV) and output projections */
	ENG_TENSOR_FFN,        /* feed-forward matrices */
	ENG_TENSOR_NORM,       /* norm weights and biases */
	ENG_TENSOR_CLASSIFIER, /* the vocabulary projection */
	ENG_TENSOR_CLASS_COUNT,
};

struct eng_tensor {
	const char *name;    /* as the file names it: "blk.3.ffn_up.weight", "layers.3.w1" */
	const char *type;    /* ggml's type name: "f32", "q4_K", ... */
	uint32_t type_id;    /* ggml's GGML_TYPE_* id */
	int layer;           /* -1 outside the layers */
	enum eng_tensor_class cls;
	uint64_t rows, cols; /* cols is the row length (GGUF's ne[0]); a vector is (1, n) */
	uint64_t file_bytes; /* bytes it occupies in the file (0 for a tied classifier's entry) */
	uint64_t step_bytes; /* bytes one decode step reads of it: a whole matrix; one row of
			      * the embedding; a tied classifier's entry counts the whole shared
			      * table once, as the classifier's read */
	const void *data;    /* its bytes, borrowed from the model or file; NULL for a table
			      * built from a description */
	/* Canonical + delta files (engine/model/alias.h): a delta "blk.N.K.delta" points at its
	 * canonical "canonical.K.weight" in the same table (the layer's weight is their sum,
	 * eng_tensor_weight_row); a canonical counts the deltas that use it, and its step_bytes
	 * are file_bytes x that count (read once per layer). NULL / 0 otherwise. */
	const struct eng_tensor *canonical;
	int canonical_users;
};

struct eng_tensor_table {
	char source[512];           /* the file, or "built-in shape NAME" */
	struct eng_model_info info; /* arch and shape; weight_bytes sums file_bytes */
	int head_dim;
	uint32_t kv_type_id;        /* ggml type the KV cache is assumed to use: f16 for GGUF
				     * (llama.cpp's default), f32 for llama2.c (this engine's) */
	size_t n;
	struct eng_tensor *t;       /* n tensors: a GGUF file's in file order, a llama2.c
				     * model's in the forward pass's order (the file stores each
				     * per-layer tensor for all layers at once); a tied
				     * classifier's entry comes last */
};

/* The tensors of an open model. *out is new, freed with eng_tensor_table_free. Its data
 * pointers view m's mapping (a GGUF model's table reads m's parsed file, not the file
 * again): use them while both the table and m are open. */
int eng_model_tensors(const struct eng_model *m, struct eng_tensor_table **out,
		      struct eng_error *err);
/* The tensors of a model file (llama2.c or GGUF, told apart by the magic) without loading it
 * for inference: the table keeps the file mapped, so data stays valid until
 * eng_tensor_table_free. */
int eng_tensors_from_file(const char *path, struct eng_tensor_table **out,
			  struct eng_error *err);
/* A built-in description of a well-known file's shape and per-tensor type mix, for records
 * whose model file is not at hand. name is matched case-insensitively against each entry's
 * keywords (e.g. "tiiuae-falcon-7b-Q4_K_M.gguf" finds "falcon-7b" with mix "Q4_K_M"). data is
 * NULL in every tensor. -ENOENT when nothing matches (err lists what is built in). */
int eng_tensors_from_shape(const char *name, struct eng_tensor_table **out,
			   struct eng_error *err);
void eng_tensor_table_free(struct eng_tensor_table *t);
/* Dequantizes row `row` of tensor t (t->cols floats) into out. -EINVAL for a tensor without
 * data or a row past the end, -ENOTSUP for a type memwall cannot dequantize. */
int eng_tensor_dequantize(const struct eng_tensor *t, uint64_t row, float *out);
/* Row `row` of the layer weight t stands for: eng_tensor_dequantize's, plus its canonical's
 * row for a delta tensor (W_l = W_c + D_l). tmp holds t->cols floats. */
int eng_tensor_weight_row(const struct eng_tensor *t, uint64_t row, float *out, float *tmp);
/* "embedding", "attention", ... Static storage. */
const char *eng_tensor_class_name(enum eng_tensor_class c);

/* (engine/roof/peak.c) A compute roof: multiply-adds per second of the kernel a decode step uses
 * for weight type type_id, on threads threads (pinned like eng_stream's), measured for about
 * seconds on operands that stay in L1, so memory does not limit it. flops counts a
 * multiply-add as 2. */
struct eng_peak {
	double flops;        /* per second, all threads */
	char kernel[96];     /* e.g. "avx512 dot_f32", "avx512 vec_dot q4_K x q8_K" */
	int threads;
	double seconds;
};
int eng_peak_measure(const char *kernels, uint32_t type_id, int threads, double seconds,
		     struct eng_peak *out, struct eng_error *err);

/* (engine/runtime/kbench.c) Each quant table's rate on one weight type's x8 kernels, per class
 * of token counts (eng_kernel_class: 1, 2, 4 and 8 tokens a call), for `memwall
 * bench-kernels`, which chooses the fastest table per operation (struct eng_kernel_choice).
 * The tables timed are those this CPU runs with x8 kernels of their own for the type, best
 * first; one thread (the caller's), on rows of columns elements making mb MB of weights
 * (past the caches, as a decode step streams them), rounds rounds each timing every table
 * once in a rotating order. */
struct eng_kbench_options {
	size_t columns; /* 0: 4096 */
	double mb;      /* 0: 128 */
	int rounds;     /* 0: 7; at most ENG_KBENCH_ROUNDS_MAX */
};
#define ENG_KBENCH_MAX 8
#define ENG_KBENCH_ROUNDS_MAX 64
struct eng_kbench {
	int tokens;   /* a call's tokens (the class's, eng_kernel_class_tokens) */
	int n;        /* tables timed, in r */
	struct {
		const char *table; /* static storage */
		double gbs;        /* median over rounds: GB of weights x tokens per second */
		double ratio;      /* median over rounds of its rate over r[0]'s in the round */
	} r[ENG_KBENCH_MAX];
	size_t rows, columns;
	double mb; /* of weights a pass reads (once, whatever the tokens) */
	int rounds;
};
/* Fills out[0 .. ENG_KC_CLASSES) for weight type `type` ("q4_0", ...): 0, -EINVAL for a type
 * without an x8 layout or a row length its blocks do not divide, -ENOTSUP where no table has
 * x8 kernels for it, -ENOMEM. */
int eng_kbench_run(const char *type, const struct eng_kbench_options *o, struct eng_kbench *out,
		   struct eng_error *err);

/* ---- Sessions: one KV cache and one thread pool over a model ------------------------------ */

struct eng_session;

enum eng_kv_type {
	ENG_KV_AUTO, /* the model's default: F16 for GGUF (llama.cpp's), F32 for llama2.c */
	ENG_KV_F32,
	ENG_KV_F16,
};
/* Bytes of the KV cache a session of n_seq sequences of ctx_len positions (<= 0: the
 * model's seq_len) allocates with this cache type: keys and values, every layer, each
 * position's n_kv_heads * head_size elements. For memory preflights (issue 28). */
uint64_t eng_kv_cache_bytes(const struct eng_model_info *info, enum eng_kv_type kv, int ctx_len,
			    int n_seq);
/* Bytes of the per-token f32 vectors one layer of the forward pass writes for a model of
 * info's shape with heads of head_dim (runtime/session.c's x, y, y2, xb, qkv, hb, and a gated
 * FFN's hb2: eng_arch_info.gated_ffn, false for an architecture the engine does not run):
 * memwall headroom's R4. */
uint64_t eng_session_layer_vector_bytes(const struct eng_model_info *info, int head_dim);

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
	uint64_t weights;  /* every weight byte the step read, embedding row included (with a
			    * sparsity map, less the bytes it skipped) */
	uint64_t weights_skipped; /* weight bytes a sparsity map let the step skip (not read) */
	/* Canonical + delta models (engine/model/alias.h): weights counts a canonical once per layer
	 * that uses it with that layer's delta (the bytes the matmuls touch); weights_unique
	 * counts each canonical once per step, plus every delta and every other weight: what
	 * DRAM would serve if the canonicals stayed in the last-level cache between the layers
	 * that share them (true only when they fit it: compare eng_model_canonical_bytes with
	 * eng_llc_size). Equal to weights for any other model. With a sparsity map it takes
	 * each canonical's repeats out whole, so it undercounts by the canonical down-projection
	 * blocks one layer skipped and another read. */
	uint64_t weights_unique;
	/* The FFN activations that fed the down projections (llama: every layer's hb): how many
	 * were exactly zero, and the down projection's column blocks (the skip granularity:
	 * max(32, the weight's block size) columns across every row) that were all zero, which a
	 * sparsity map skips. Counted with or without the map. */
	uint64_t act_zero, act_total;
	uint64_t down_blocks_zero, down_blocks;
	/* With a sparsity map (one-token steps): the up rows (w3) not read because their gate
	 * was <= 0 or a static map marked the neuron dead, the gate rows (w1) a static map let
	 * the step skip, and, with sparsity_verify, the neurons the static map skipped that
	 * fired all the same (its misses). In rows of the matrices (a skipped x8 group counts
	 * its eight). */
	uint64_t up_rows_skipped, gate_rows_skipped, map_misses;
	uint64_t kv_read;  /* KV-cache bytes read by attention at this position */
	uint64_t kv_write; /* KV-cache bytes written for this position */
	uint64_t by_phase[ENG_PHASE_COUNT]; /* weights + kv bytes split by phase; the embedding
					     * row counts in attention (it is read inside layer
					     * 0's attention markers) */
};

/* Called on the thread that called eng_session_step. With no hooks set the engine pays one
 * predictable branch per phase edge. While a phase hook runs, the session's other threads wait
 * at that edge, so counters read in it see exactly one phase. */
struct eng_hooks {
	void *ctx;
	/* begin is true at the phase's start; layer is -1 for the classifier. */
	void (*phase)(void *ctx, enum eng_phase phase, int layer, bool begin);
	/* After every step, with that step's engine-accounted bytes; after each pass of
	 * eng_session_prefill, once, with the pass's last position and token and the pass's
	 * bytes (each weight counted once for all its tokens): summed over the calls, the bytes
	 * are the prompt's either way. */
	void (*token)(void *ctx, int pos, int token, const struct eng_step_bytes *bytes);
	/* Optional (memwall headroom's R1): each layer's FFN activation, the n values that feed
	 * the down projection (SiLU(w1 x) * w3 x), once all are computed. act is borrowed for
	 * the call; the other threads may already be reading it, so it must not be written. */
	void (*ffn_act)(void *ctx, int layer, const float *act, int n);
};

/* The attention kernel over the KV cache (issue 18 R2). NAIVE is run.c's: every score of a
 * head stored, softmaxed, then the values summed (session.c, attend_f32 / attend_f16).
 * BLOCKED is block-streaming attention (engine/runtime/attention.c): blocks of positions (16 KiB of
 * one KV head's keys and values), an online softmax, each block read once for all the query
 * heads of its KV head; results equal NAIVE's to float rounding (an F16 cache's probabilities
 * are not rounded to f16 before they weight the values, as NAIVE rounds them after llama.cpp).
 * AUTO runs a token BLOCKED when it attends over at least ENG_ATTN_AUTO_POSITIONS positions,
 * else NAIVE. */
enum eng_attention {
	ENG_ATTN_AUTO,
	ENG_ATTN_NAIVE,
	ENG_ATTN_BLOCKED,
	ENG_ATTN_COUNT,
};
/* Where AUTO switches to BLOCKED, in positions attended over. scripts/bench-kv.sh, 1 thread,
 * synthetic falcon-tiny and stories15M q8_0, F16 cache, least decode CPU ms per token of 5
 * runs on a shared 2-core Zen 4 VM (indicative): blocked took 2-10 % less than naive at every
 * context from 256 to 4096. The switch sits at 512, not lower, so that short contexts (the
 * golden fixtures, llama.cpp's comparisons) keep naive's llama.cpp numerics for an F16 cache,
 * where the gain is a few percent of a step. */
#define ENG_ATTN_AUTO_POSITIONS 512
/* "auto", "naive", "blocked"; static storage; NULL for a value out of range. */
const char *eng_attention_name(enum eng_attention a);
/* name -> kernel: 0, or -EINVAL (exact match; *out left alone). */
int eng_attention_parse(const char *name, enum eng_attention *out);
/* Where a session's threads run (engine/runtime/pool.c). */
enum eng_pin {
	ENG_PIN_CPUS, /* the default: thread t on the t-th CPU of the caller's affinity mask */
	ENG_PIN_NONE, /* wherever the scheduler puts them */
};
/* "cpus", "none"; static storage; NULL out of range. */
const char *eng_pin_name(enum eng_pin p);
/* name -> pin: 0, or -EINVAL (exact match). */
int eng_pin_parse(const char *name, enum eng_pin *out);

struct eng_session_options {
	int threads;          /* <= 0 means 1 */
	enum eng_pin pin;     /* ENG_PIN_CPUS (zero) unless set */
	const char *kernels;  /* NULL or "auto": best for this CPU; "ref", "avx2", "avx512", "neon" */
	enum eng_kv_type kv_type;
	int ctx_len;          /* <= 0 means the model's seq_len */
	const struct eng_hooks *hooks; /* may be NULL; copied */
	/* Tokens per pass of eng_session_prefill; <= 0 means ENG_PREFILL_CHUNK, 1 runs a prompt
	 * token by token. Each token of a chunk costs the session (dim * 5 + q_dim + kv_dim * 2
	 * + hidden_dim * 2) floats, and each thread dim floats and three quantized vectors. */
	int prefill_chunk;
	/* Skip, in each down projection, the column blocks whose activations are all exactly
	 * zero (engine/runtime/sparsity.c); the bytes skipped are not counted in weights. Results
	 * differ from the dense run's by float rounding only (runs of blocks are summed apart). */
	bool sparsity_map;
	/* With sparsity_map and F32 plain down projections: a transposed copy of each down
	 * projection (hidden_dim rows of dim, one per neuron, as PowerInfer and Deja Vu store
	 * it), so every zero activation skips its own row: no block granularity. Other types
	 * keep the block map (a quant block cannot be transposed without requantizing). */
	bool sparsity_neuron;
	/* With sparsity_map: a static map from a calibration pass (eng_sparsity_map_load):
	 * on one-token steps (a prefill pass of several tokens runs dense, as the map does),
	 * the neurons it marks dead have their gate and up rows and down columns skipped
	 * without being computed. Not exact by construction. Borrowed; must outlive the
	 * session. sparsity_verify computes the skipped gate rows anyway and counts in
	 * map_misses the neurons that fired (their activation is still taken as zero, so the
	 * output and the bytes are the unverified run's). */
	const struct eng_sparsity_map *sparsity_static;
	bool sparsity_verify;
	/* Sequences decoded together (eng_session_step_seqs), each with its own region of the
	 * KV cache (a whole cache of ctx_len positions: memory grows n_seq times, pages are
	 * touched only as positions fill) and its own positions; <= 0 means 1. Each token of a
	 * batched step costs what a prefill token does; eng_session_step and
	 * eng_session_prefill run sequence 0. */
	int n_seq;
	/* The most tokens of an eng_session_verify pass (speculative decoding), each of which
	 * keeps its logits: the session holds that many rows of vocab_size floats; <= 0 means
	 * none (eng_session_verify refuses every call). */
	int verify_tokens;
	/* The attention kernel (ENG_ATTN_AUTO, the zero value, by default). */
	enum eng_attention attention;
	/* Per weight type and token count, the quant table that runs the weights in the x8
	 * layout in place of the session's (struct eng_kernel_choice, below); NULL: the
	 * session's table everywhere, as before issue 42. Copied. */
	const struct eng_kernel_choice *kernel_choice;
};

/* ---- A kernel choice that follows measurement (issue 42) ----------------------------------
 * On one CPU one table's kernel may be slower than another's for an operation and a token
 * count (on AVX-512 machines the avx2 table's two-token kernel had beaten avx512's). A choice
 * names, per ggml weight type and class of token counts, the quant table that runs the
 * type's weights in the x8 layout (ENG_LOAD_REPACK) for calls of that many tokens; `memwall
 * bench-kernels` measures it once per CPU and src/ passes it in. Every table with x8 kernels
 * of its own for a type gives the same bits for it (tests/engine/test_kernel_choice.c checks
 * each pair of tables), so a choice changes speed, never a result; entries that would break
 * that (a table without its own x8 kernel for the type) are refused. Weights in the plain
 * layout, and everything else, run the session's table. */
#define ENG_KC_TYPES 32  /* ggml type ids below this */
#define ENG_KC_CLASSES 4 /* token counts: 1, 2-3, 4-7, 8 and more */
struct eng_kernel_choice {
	char table[ENG_KC_TYPES][ENG_KC_CLASSES][16]; /* a table's name; "": the session's */
};
/* The class of a call of n_tok tokens: 0 for 1, 1 for 2-3, 2 for 4-7, 3 for 8 or more. */
int eng_kernel_class(int n_tok);
/* The token count class c is measured at (1, 2, 4, 8), or 0 out of range. */
int eng_kernel_class_tokens(int c);
/* Sets c's entry for weights of ggml type `type` ("q4_0", ...) and calls of `tokens` tokens
 * (1, 2, 4 or 8: a class's own count) to quant table `table`: 0, or -EINVAL naming what is
 * wrong (a type without an x8 layout, another token count, a table without x8 kernels of its
 * own for the type) and -ENOTSUP for a table this build or CPU does not run. */
int eng_kernel_choice_set(struct eng_kernel_choice *c, const char *type, int tokens,
			  const char *table, struct eng_error *err);
/* The name of the i-th quant table this build has and this CPU runs, best first (the
 * session's default first), and whether it has x8 kernels of its own for `type` (*x8, may be
 * NULL); NULL past the end. Static storage. */
const char *eng_quant_kernels_name(size_t i, const char *type, bool *x8);
/* ggml's name of type id t ("q4_K"), or NULL for one memwall does not implement. */
const char *eng_type_name(uint32_t t);

/* A static sparsity map (engine/runtime/sparsity_map.c): from a calibration pass, how many of its
 * tokens each FFN neuron of each layer fired on (activation nonzero). Neurons with a count
 * of zero are the map's dead neurons. On disk a text file:
 *   memwall-sparsity-map 2
 *   layers L hidden H dim D tokens T
 *   model act=A vocab=V bytes=B fnv=H
 *   layer 0 c_0 c_1 ... c_{H-1}
 *   ... one line per layer, in order */
struct eng_sparsity_map {
	int n_layers, hidden_dim, dim;
	uint64_t tokens;  /* activations counted per neuron (1 or more in a file) */
	char model[128];  /* the calibrated model's identity (eng_sparsity_model_id), line 3 */
	uint32_t *fired;  /* (n_layers, hidden_dim) tokens on which each neuron was nonzero */
};
/* A zeroed map for a model's shape; NULL when out of memory. Freed with
 * eng_sparsity_map_free. */
struct eng_sparsity_map *eng_sparsity_map_new(int n_layers, int hidden_dim, int dim);
void eng_sparsity_map_free(struct eng_sparsity_map *m);
/* Reads path into a new map (*out, the caller frees it) and checks it against the model
 * info: wrong shape, a missing or short layer, a bad header name the file, the line and
 * the field. */
int eng_sparsity_map_load(struct eng_sparsity_map **out, const char *path,
			  const struct eng_model_info *info, struct eng_error *err);
/* The identity a map records of its model (issue 28): "act=A vocab=V bytes=B fnv=H", H a
 * FNV-1a hash of the file's first and last MiB. Maps of one shape but other weights, or of
 * a ReLU model applied to a SiLU one, are refused by eng_sparsity_map_check_model. */
int eng_sparsity_model_id(const char *model_path, const struct eng_model_info *info, char *out,
			  size_t n, struct eng_error *err);
/* 0 when m was calibrated on the model at model_path, else -EINVAL naming the map (path),
 * what differs and the fix. */
int eng_sparsity_map_check_model(const struct eng_sparsity_map *m, const char *path,
				 const char *model_path, const struct eng_model_info *info,
				 struct eng_error *err);
/* Writes m to path atomically (a temporary file beside it, renamed over it). */
int eng_sparsity_map_save(const struct eng_sparsity_map *m, const char *path,
			  struct eng_error *err);
/* AIOS's R5, a frequency-ordered layout: writes to out (atomically) a copy of the llama2.c
 * "ak42" v1 model in with each layer's FFN neurons (w1 and w3 rows, w2 columns: a
 * function-preserving permutation) ordered by m's firing counts, most first, so neurons
 * that fire together share the down projection's blocks. A synthetic marker gets
 * " ffn_order=frequency". */
int eng_sparsity_reorder_llama2c(const char *in, const char *out,
				 const struct eng_sparsity_map *m, struct eng_error *err);
/* Whether neuron r of layer l is dead in m (never fired in calibration). */
static inline bool eng_sparsity_map_dead(const struct eng_sparsity_map *m, int l, int r)
{
	return m->fired[(size_t)l * (size_t)m->hidden_dim + (size_t)r] == 0;
}

/* The default prefill chunk: 128 tokens share each pass over the weights. pp128 on synthetic
 * stories110M, repacked, tok/s, three interleaved runs each on a quiet Zen 4 VM, 64 -> 128
 * tokens: f32 420-441 -> 461-470 at 1 thread and 637-827 -> 866-885 at 2; q4_0, q8_0 and
 * q4_k_m within noise at both (q4_0 1 thread 987-1257 -> 1221-1247). F32 gains most: the
 * fewer passes, the fewer times its 440 MB come from DRAM. */
#define ENG_PREFILL_CHUNK 128

/* On success *out is a new session over m (m must outlive it), freed with eng_session_free.
 * -ENOTSUP for kernels this build or CPU lacks, or an unknown KV type. */
int eng_session_new(struct eng_session **out, struct eng_model *m,
		    const struct eng_session_options *opt, struct eng_error *err);
void eng_session_free(struct eng_session *s);
/* The kernel table in use, e.g. "avx512". Static storage. */
const char *eng_session_kernels(const struct eng_session *s);
/* The quant table in use (the dot products of non-F32 weights and the KV cache's F16 path),
 * e.g. "avx2" on an AVX-512 CPU without VNNI/VBMI: it may differ from the kernel table.
 * Static storage. */
const char *eng_session_quant_kernels(const struct eng_session *s);
/* The quant table that runs a call of n_tok tokens on the session's weights of ggml type
 * type_id in the x8 layout: the kernel choice's entry, else the session's table. Static
 * storage. */
const char *eng_session_op_kernels(const struct eng_session *s, uint32_t type_id, int n_tok);
/* The ggml types of the session's matrices in the x8 layout, each once, in id order: up to
 * max of them into types; returns how many there are. */
int eng_session_x8_types(const struct eng_session *s, uint32_t *types, int max);
/* Runs token at position pos (positions must be fed in order from 0; pos may go back to
 * recompute from an earlier position). *logits is borrowed, valid until the next step or
 * eng_session_free. bytes may be NULL. -EINVAL for a token outside the vocabulary, or a pos
 * beyond the next one or the context. */
int eng_session_step(struct eng_session *s, int token, int pos, const float **logits,
		     struct eng_step_bytes *bytes);
/* Runs tokens[0..n) at positions pos0 .. pos0 + n - 1 (pos0 as eng_session_step's pos), in
 * passes of the session's prefill_chunk tokens: each pass reads every weight once for all its
 * tokens (the multi-token kernels), writes each token's keys and values, and lets each token
 * attend causally, to the cache before the pass and the pass's earlier tokens. Each token
 * gets the same result as eng_session_step would give it, to the bit where the kernel table
 * has multi-token kernels with that guarantee (all of memwall's do). With logits non-NULL,
 * *logits receives the last token's, as from eng_session_step (borrowed, valid until the next
 * call); with NULL no classifier runs at all. bytes (may be NULL) receives the sum over the
 * passes, each pass counting every weight once and the classifier only where it ran.
 * Hooks: phase hooks bracket each pass as they bracket a step; the token hook is called once
 * per pass, after it, with the pass's last position and token and the pass's bytes (so the
 * hook's byte figures still add up to the prompt's); ffn_act once per token of the pass, in
 * order. -EINVAL for n < 1, a token outside the vocabulary, or positions beyond the next one
 * or the context. */
int eng_session_prefill(struct eng_session *s, const int *tokens, int n, int pos0,
			const float **logits, struct eng_step_bytes *bytes);
/* eng_session_prefill into sequence seq's region of the cache (0 <= seq < n_seq); positions
 * are that sequence's. -EINVAL also for a seq out of range. */
int eng_session_prefill_seq(struct eng_session *s, int seq, const int *tokens, int n, int pos0,
			    const float **logits, struct eng_step_bytes *bytes);
/* Batched decode (issue 17): one token of each of n distinct sequences in one pass, token t
 * of sequence seqs[t] (seqs NULL: sequence t) at position pos[t] of that sequence (each as
 * eng_session_step's pos). Each weight is read once for all n tokens (the multi-token
 * kernels, which give each token the one-token kernels' bits: each sequence gets what a
 * session of its own would give it), and each token attends only to its own sequence's
 * cache. *logits receives n rows of vocab_size floats, row t for token t; borrowed, valid
 * until the next call. bytes (may be NULL): each weight counted once for the step (the
 * embedding row once per token), the classifier once, KV reads and writes summed over the
 * sequences. Hooks as for a prefill pass. -EINVAL for n outside [1, n_seq], a sequence out of
 * range or given twice, a token outside the vocabulary, or a position beyond its sequence's
 * next one or the context. */
int eng_session_step_seqs(struct eng_session *s, int n, const int *seqs, const int *tokens,
			  const int *pos, const float **logits, struct eng_step_bytes *bytes);
/* The session's sequence count (n_seq, at least 1). */
int eng_session_n_seq(const struct eng_session *s);
/* Speculative decoding's verification (issue 17): tokens[0..n) at positions pos0 ..
 * pos0 + n - 1 of sequence 0 in one pass, as eng_session_prefill runs a chunk (each weight
 * read once, causal attention), but with every token through the classifier: *logits receives
 * n rows of vocab_size floats, row t the logits after token t, the bits eng_session_step would
 * give it (borrowed, valid until the next call). n is at most the session's verify_tokens.
 * bytes (may be NULL): the pass's, each weight and the classifier once, an embedding row per
 * token. The cache keeps all n positions; to drop the rejected ones, eng_session_truncate.
 * -EINVAL as for eng_session_prefill, or for n beyond verify_tokens. */
int eng_session_verify(struct eng_session *s, const int *tokens, int n, int pos0,
		       const float **logits, struct eng_step_bytes *bytes);
/* Forgets sequence 0's positions from pos on: the next step or pass may start at pos at
 * most (the cache's later cells are overwritten as positions refill). -EINVAL for pos < 0 or
 * beyond the next position. */
int eng_session_truncate(struct eng_session *s, int pos);
/* Moves the state a session carries between steps, every sequence's KV cache and next
 * position, from src into dst (a copy: src is left as it was), so that dst's next step gives
 * what src's would have given on dst's model: how `memwall generate --load overlap` goes on,
 * on the repacked image, from a first token run on the file mapping. dst's cache past the
 * copied positions is forgotten. The sessions may differ in threads, pinning, kernels,
 * prefill chunk and context (dst's must hold src's positions). -EINVAL, err naming the
 * field and both values, when the models' shapes (architecture, dim, hidden_dim, layers,
 * heads, KV heads, head size, RoPE dimensions, vocabulary), the KV cache types or the
 * sequence counts differ. Whether the two models hold the same weights is the caller's to
 * know (a different model's cache would give garbage, not an error). */
int eng_session_adopt(struct eng_session *dst, const struct eng_session *src,
		      struct eng_error *err);
/* Sequence seq's next position (positions below it are in the cache), or -EINVAL for a seq
 * out of range. */
int eng_session_pos(const struct eng_session *s, int seq);
/* Read-only view of layer layer's keys and values of sequence seq, for checks: rows of
 * *row_bytes, position p at p * *row_bytes, valid below eng_session_pos(s, seq); borrowed,
 * valid until eng_session_free (the next step may write past them). -EINVAL for seq or layer
 * out of range. */
int eng_session_kv_view(const struct eng_session *s, int seq, int layer, const void **keys,
			const void **values, size_t *row_bytes);

/* ---- Tokenizer and sampler ---------------------------------------------------------------- */

struct eng_tokenizer;

/* llama2.c's special tokens (SentencePiece's ids in the Llama 2 vocabulary). */
#define ENG_TOKEN_BOS 1
#define ENG_TOKEN_EOS 2

/* Loads a llama2.c tokenizer.bin for a model of vocab_size tokens (a mismatch is an error;
 * vocab_size 0 takes a tokenizer.bin of any size). On success *out is new, closed with
 * eng_tokenizer_close. */
int eng_tokenizer_open(struct eng_tokenizer **out, const char *path, int vocab_size,
		       struct eng_error *err);
/* A tokenizer file on its own, with no model to match (memwall tokenize): a GGUF file's
 * tokenizer (eng_tokenizer_open_gguf: a model, or a vocabulary-only file with no tensors),
 * else a llama2.c tokenizer.bin of whatever size it holds. Errors as those two give them. */
int eng_tokenizer_open_file(struct eng_tokenizer **out, const char *path, struct eng_error *err);
void eng_tokenizer_close(struct eng_tokenizer *t);
/* Encodes text into tokens[0..max); *n receives the count. -ENOSPC when max is too small
 * (strlen(text) + 3 always suffices), -EINVAL when a byte of text has no piece (llama2.c's
 * and SentencePiece vocabularies without byte tokens; a GPT-2 byte-level vocabulary drops a
 * byte it has no token for, as llama.cpp does). Special tokens written in the text are
 * matched (llama.cpp's parse_special, llama-tokenize's default). */
int eng_tokenizer_encode(const struct eng_tokenizer *t, const char *text, bool bos, bool eos,
			 int *tokens, int max, int *n);

/* What eng_tokenizer_encode_opt does beyond the text: llama.cpp's tokenize arguments. */
struct eng_encode_options {
	bool bos, eos;         /* BOS first, EOS last (where the vocabulary has them) */
	bool no_parse_special; /* llama-tokenize --no-parse-special, and llama.cpp's
				* test-tokenizer-0: control and unknown tokens written in the text
				* are text, not tokens (user-defined ones still match) */
};
/* eng_tokenizer_encode with options (NULL: none). */
int eng_tokenizer_encode_opt(const struct eng_tokenizer *t, const char *text,
			     const struct eng_encode_options *o, int *tokens, int max, int *n);
/* The text of token after prev (leading space stripped after BOS, <0xXX> bytes decoded; ""
 * for a token outside the vocabulary). Borrowed; valid until eng_tokenizer_close. */
const char *eng_tokenizer_decode(const struct eng_tokenizer *t, int prev, int token);

struct eng_sampler;

struct eng_sampler_options {
	float temperature; /* 0: greedy */
	float topp;        /* in [0, 1]; 0 or 1 disables nucleus sampling */
	uint64_t seed;
};

/* On success *out is new, freed with eng_sampler_free. -EINVAL for a negative or non-finite
 * temperature, a topp outside [0, 1], or vocab_size < 1. */
int eng_sampler_new(struct eng_sampler **out, int vocab_size, const struct eng_sampler_options *opt);
void eng_sampler_free(struct eng_sampler *s);
/* Picks the next token; may modify logits in place. */
int eng_sampler_sample(struct eng_sampler *s, float *logits);

/* ---- GGUF tokenizers -------------------------------------------------------------------------
 * (engine/tokenizer/tokenizer_gguf.c) The tokenizer a GGUF model carries in its metadata
 * (tokenizer.ggml.*), behind the same struct eng_tokenizer: encode, decode and close work as
 * for tokenizer.bin. Kinds: "llama" (SentencePiece: scores, byte fallback <0xXX>, U+2581 for
 * spaces) and "gpt2" (byte-level BPE with ranked merges, pre-tokenized per tokenizer.ggml.pre:
 * "default", "falcon", "gpt-2"), as llama.cpp's llama-vocab.cpp does it. Special tokens
 * (CONTROL, USER_DEFINED, UNKNOWN) written in the text are matched before BPE. Encoding a
 * GGUF tokenizer may need up to 3 tokens per byte (a space that falls back to the bytes of
 * U+2581): on -ENOSPC *n receives the count needed. Decoding renders special tokens as their
 * text; a piece holding byte 0 decodes to "". eng_tokenizer_open also takes a .gguf file. */

/* On success *out is new, closed with eng_tokenizer_close. -ENOENT (err says so) for a file
 * without a tokenizer (no tokenizer.ggml.model): only then may a caller look elsewhere.
 * -EINVAL (err names the file, the key, what is wrong and the fix) for a broken one: an
 * unknown tokenizer.ggml.model or .pre, missing tokens or merges, mistyped or inconsistent
 * arrays. eng_tokenizer_open of a .gguf file says the same, and -EINVAL when the tokenizer's
 * size is not the model's vocabulary. */
int eng_tokenizer_open_gguf(struct eng_tokenizer **out, const char *path, struct eng_error *err);
/* The tokenizer for the open model m, the one place that chooses it: path when given (a
 * tokenizer.bin, or a .gguf that carries one); else the tokenizer m's GGUF file carries, from
 * m's parsed file (not opened again); else tokenizer.bin beside m's file. On success *out is
 * new, closed with eng_tokenizer_close. -ENOENT, err saying what was looked for and why it did
 * not serve, when none of these is there or is this model's (a caller may then go on with
 * token ids); any other error (a given path that does not load, a GGUF tokenizer that is
 * broken) is for the caller to report. */
int eng_tokenizer_open_model(struct eng_tokenizer **out, const struct eng_model *m,
			     const char *path, struct eng_error *err);
/* Any tokenizer: BOS and EOS ids (-1 if none), whether the model wants BOS before a prompt
 * (pass it as encode's bos), the vocabulary size, and the kind ("llama2.c", "llama", "gpt2";
 * static storage). */
int eng_tokenizer_bos(const struct eng_tokenizer *t);
int eng_tokenizer_eos(const struct eng_tokenizer *t);
bool eng_tokenizer_add_bos(const struct eng_tokenizer *t);
int eng_tokenizer_vocab_size(const struct eng_tokenizer *t);
const char *eng_tokenizer_kind(const struct eng_tokenizer *t);

/* ---- Synthetic models ----------------------------------------------------------------------- */

/* Writes a deterministic synthetic llama2.c checkpoint ("ak42" version 1, float32) of a named
 * shape ("stories260K", "stories15M", "stories42M", "stories110M") to path, marked as
 * synthetic in its header (eng_model_info then says so). The same shape and seed give the same
 * bytes. Written to a temporary file beside path, synced, then renamed over it, so a reader
 * never sees a partial model; -EINVAL with the valid names for an unknown shape. */
int eng_synth_llama2c(const char *path, const char *shape, uint64_t seed, struct eng_error *err);
/* Those shapes' names, space-separated, into buf (truncated to len). */
void eng_synth_llama2c_shape_names(char *buf, size_t len);
/* The same with the FFN activation act (SiLU, ReLU or ReLU^2; -EINVAL for GELU). For ReLU and
 * ReLU^2 the gate rows (w1) come in clusters of 32 that share a direction (std 0.02) plus a
 * small per-row part (std 0.002), so a cluster's 32 activations are zero together on about
 * 45% of tokens (engine/synth/synth_sparsity.h, eng_synth_gate_row): exact zeros in whole blocks, as ReLU
 * models' co-activated neurons give them. SiLU gives the bytes eng_synth_llama2c writes. */
int eng_synth_llama2c_act(const char *path, const char *shape, uint64_t seed,
			  enum eng_ffn_act act, struct eng_error *err);
/* Activation statistics set explicitly (ReLU and ReLU^2 only; engine/synth/synth.c, "bias
 * channel"): channel 0 of the residual stream is a constant 1 (every embedding row's first
 * value; wo's and w2's row 0 are zero, so no layer writes it), and each gate row's weight on
 * it is a bias. relu_sparsity in [0, 1) (< 0: unset, no bias) is the zero fraction the
 * live neurons' bias aims at, for a Gaussian pre-activation at the residual norm these
 * weights give (a model of it, not a fit: the measured fraction differs and is what to
 * report); dead_fraction in [0, 1) of the neurons (chosen per row from the seed) get a bias
 * of -10 standard deviations: they never fire in practice, but their rows are not zero.
 * Written in the header's synthetic marker. */
struct eng_synth_sparsity {
	double relu_sparsity;
	double dead_fraction;
};
int eng_synth_llama2c_sparse(const char *path, const char *shape, uint64_t seed,
			     enum eng_ffn_act act, const struct eng_synth_sparsity *sp,
			     struct eng_error *err);

/* ---- Synthetic GGUF models -------------------------------------------------------------------
 * (engine/synth/synth_gguf.c, shapes in engine/model/arch.c) A GGUF file with a real model's shape and
 * the per-tensor types llama-quantize would give it, filled with seeded random weights
 * (matrices uniform, std 0.02; norm weights 1 +- 0.05; biases +- 0.02), quantized with ggml's
 * reference quantizers, streamed to disk and committed atomically. Its metadata says
 * general.name "synthetic SHAPE", memwall.synthetic = true, memwall.synthetic.seed, and holds
 * a synthetic tokenizer of the real vocabulary size (the architecture's row says which: falcon
 * gpt2 with merges, llama SPM). arch: a row of the architecture table (eng_arch_at); shape:
 * one of its shapes (eng_arch_shape_names); quant: "f32", "f16", "q8_0", "q4_0", "q5_0",
 * "q4_k_m". The same arguments give the same bytes. Uses every CPU of the caller's affinity
 * mask (at most 8) to quantize. -EINVAL with the valid names for an unknown name, or a shape
 * llama-quantize would refuse for that type (a row length no block size divides). */
struct eng_tensor_table;
int eng_synth_gguf(const char *path, const char *arch, const char *shape, const char *quant,
		   uint64_t seed, struct eng_error *err);
/* The same with the FFN activation act (eng_synth_llama2c_act's gate rows; written as
 * "<arch>.feed_forward_activation" when it is not the architecture's own): one of the row's
 * acts (eng_arch_info), -EINVAL otherwise; ENG_ACT_SILU, the zero value, stands for the
 * architecture's own (falcon's GELU). */
int eng_synth_gguf_act(const char *path, const char *arch, const char *shape, const char *quant,
		       uint64_t seed, enum eng_ffn_act act, struct eng_error *err);
/* The same with eng_synth_llama2c_sparse's activation statistics (sp may be NULL: the bytes
 * of eng_synth_gguf_act), written as memwall.synthetic.bias_channel, .relu_sparsity and
 * .dead_fraction. The embedding's column 0 holds the channel's 1 in the embedding's type. */
int eng_synth_gguf_sparse(const char *path, const char *arch, const char *shape,
			  const char *quant, uint64_t seed, enum eng_ffn_act act,
			  const struct eng_synth_sparsity *sp, struct eng_error *err);
/* Canonical + delta weights (issue 18 R3, engine/model/alias.h): the layers first..last share one
 * canonical W_c per matrix kind and each stores a delta D_l, W_l = W_c + D_l. */
struct eng_canonical_delta {
	double rel_std;         /* std(D_l) / std(W_c); 0 means ENG_CD_REL_STD */
	const char *delta_type; /* ggml type name of the deltas; NULL or "auto": per base type
				 * (f32/f16 -> q8_0, q8_0/q5_0/q4_0 -> q4_0, q4_K -> q2_K,
				 * q5_K -> q3_K, q6_K -> q4_K) */
	bool dense;             /* write the dense twin: each W_l whole, in the model's types */
	int first, last;        /* the shared layers; first < 0: the contract's core zone,
				 * floor(0.4 L) .. floor(0.6 L) */
};
/* 0.05: the adjacent shared layers' cosine is 1 / (1 + 0.05^2) = 0.9975, above the core
 * zone's 0.95 threshold, and ||D_l|| / ||W_c|| = 5 %, below the contract's 10 %. */
#define ENG_CD_REL_STD 0.05
/* SPEC: comma-separated "rel=R" (0 < R <= 1), "delta=TYPE", "layers=A-B", "dense" or "split"
 * (the default); NULL or "" gives the defaults. -EINVAL with err naming the item. */
int eng_canonical_delta_parse(const char *spec, struct eng_canonical_delta *out,
			      struct eng_error *err);
/* eng_synth_gguf_act writing a canonical + delta model (cd: the split form, or with
 * cd->dense its dense twin), metadata memwall.canonical_delta.* (engine/model/alias.h). -EINVAL
 * for layers outside the model, a delta type no row length divides, a bad rel_std. */
int eng_synth_gguf_cd(const char *path, const char *arch, const char *shape, const char *quant,
		      uint64_t seed, enum eng_ffn_act act, const struct eng_canonical_delta *cd,
		      struct eng_error *err);
/* The construction of a synthetic model's weights (issue 26; engine/synth/varied.h).
 * LEGACY: every matrix random, as all the functions above write: the greedy continuation
 * repeats one token. VARIED: the same random rows, then layer 0's attention, the embedding,
 * the classifier and the norms given a fixed "language" in the first 1 + 4K residual
 * channels: the next token is a function of the current and the previous token read through
 * two attention heads, about 2K distinct ids (64 for K = 32) before the sequence repeats, with
 * a top-1 margin that no ggml quantization flips. Recorded in the file: the llama2.c marker's
 * " construction=varied", GGUF's memwall.synthetic.construction. */
enum eng_synth_construction { ENG_SYNTH_VARIED, ENG_SYNTH_LEGACY };
/* "varied", "legacy"; NULL for anything else. Static storage. */
const char *eng_synth_construction_name(enum eng_synth_construction c);
/* -EINVAL for a name other than those. */
int eng_synth_construction_parse(const char *name, enum eng_synth_construction *out);
/* What to write beyond shape, quantization and seed. A zeroed struct: SiLU, varied. */
struct eng_synth_opts {
	enum eng_synth_construction construction;
	enum eng_ffn_act act;
	const struct eng_synth_sparsity *sp;  /* NULL: none (eng_synth_llama2c_sparse's) */
	const struct eng_canonical_delta *cd; /* GGUF only; NULL: none. Not with sp */
};
/* eng_synth_llama2c_sparse and eng_synth_gguf_cd / _sparse with o's construction (o NULL:
 * the zeroed struct). With ENG_SYNTH_LEGACY they write the bytes those functions write.
 * -EINVAL (naming why) for a shape too small for the varied codes (dim, head size or
 * vocabulary), or one attention head. */
int eng_synth_llama2c_opts(const char *path, const char *shape, uint64_t seed,
			   const struct eng_synth_opts *o, struct eng_error *err);
int eng_synth_gguf_opts(const char *path, const char *arch, const char *shape,
			const char *quant, uint64_t seed, const struct eng_synth_opts *o,
			struct eng_error *err);
/* What eng_synth_gguf would write, without writing it: every tensor in file order with its
 * type, shape and bytes (data NULL); info.weight_bytes sums them. *out is new, freed with
 * eng_tensor_table_free. */
int eng_synth_gguf_plan(const char *arch, const char *shape, const char *quant,
			struct eng_tensor_table **out, struct eng_error *err);


/* ---- Memory streaming ------------------------------------------------------------------------
 * (engine/roof/stream.c) Streams a known number of bytes through memory with pinned threads: the
 * yardstick of `memwall bandwidth` and of counter calibration. The kernels are those of
 * McCalpin's STREAM (https://www.cs.virginia.edu/stream/ref.html) plus a read-only one, run
 * through the same ops table as the engine's matvec. */

enum eng_stream_kind {
	ENG_STREAM_READ,  /* sum += a[i]             one array read */
	ENG_STREAM_COPY,  /* b[i] = a[i]             one read, one written */
	ENG_STREAM_TRIAD, /* a[i] = b[i] + s * c[i]  two read, one written */
	ENG_STREAM_WRITE, /* a[i] = f[i % 4096]      one written (f, 16 KiB, stays in L1:
			   * bytes_read is 0; with plain stores the cache still reads each
			   * written line first, which bytes_read does not count either) */
	ENG_STREAM_KIND_COUNT,
};

struct eng_stream_options {
	int threads;         /* workers, <= 0 means 1; worker i is pinned to the i-th CPU of the
			      * caller's affinity mask, and more workers than CPUs is -EINVAL */
	uint64_t bytes;      /* working set of one run, all its arrays together (READ: one array,
			      * COPY: two halves, TRIAD: three thirds); split evenly among the workers
			      * and rounded up to 6 whole pages per worker (eng_stream_bytes says
			      * what was used) */
	const char *kernels; /* NULL or "auto": best for this CPU; else a table name ("ref", ...) */
	bool hugepages;      /* madvise(MADV_HUGEPAGE) the buffers; else the system's THP default */
};

/* One run. Bytes follow STREAM's convention: what the kernel itself loads and stores. The
 * write-allocate read a cache makes before a plain store overwrites a line is NOT counted (a
 * non-temporal store avoids it). */
struct eng_stream_sample {
	double seconds;         /* first worker's start to last worker's end, CLOCK_MONOTONIC */
	uint64_t bytes_read;    /* bytes loaded by the kernel */
	uint64_t bytes_written; /* bytes stored by the kernel */
};

struct eng_stream;

/* Starts the pinned workers; each maps its own buffers and writes every page before returning
 * (first touch: the pages are resident, and local to the worker's node). On success *out is
 * new, and the caller frees it with eng_stream_free. */
int eng_stream_new(struct eng_stream **out, const struct eng_stream_options *opt,
		   struct eng_error *err);
void eng_stream_free(struct eng_stream *s);
/* The kernel table in use, e.g. "avx512". Static storage. */
const char *eng_stream_kernels(const struct eng_stream *s);
/* Name of the i-th kernel table this build has and this CPU can run, best first ("avx512",
 * "avx2", ..., "ref" last); NULL past the end. Static storage. */
const char *eng_kernels_name(size_t i);
/* Switches the kernel table for the next runs (names as in the options); the buffers stay.
 * -EINVAL (err says why) when the name is unknown or this CPU cannot run that table. */
int eng_stream_set_kernels(struct eng_stream *s, const char *kernels, struct eng_error *err);
/* Bytes of the working set actually used by every run (after rounding). */
uint64_t eng_stream_bytes(const struct eng_stream *s);
/* Runs kind once over the whole working set on every worker at once and fills *out.
 * nontemporal selects the non-temporal-store variant: -ENOTSUP when kind has none (READ) or
 * the kernel table has none (ref, neon). Not thread-safe: one caller at a time. */
int eng_stream_run(struct eng_stream *s, enum eng_stream_kind kind, bool nontemporal,
		   struct eng_stream_sample *out);

/* Size in bytes of CPU 0's last-level cache, from /sys/devices/system/cpu/cpu0/cache/index*.
 * source (may be NULL) receives the sysfs file it came from. 0, or -ENOENT when sysfs does not
 * say (a container, a VM without cache topology): the caller then picks and states a default. */
int eng_llc_size(uint64_t *bytes, char *source, size_t source_len);

/* The read roof's working set, one rule for every figure memwall calls the roof (`memwall
 * bandwidth`, the runner's drift probe, hence a record's roof): ENG_ROOF_LLC_MULTIPLE times
 * the last-level cache (eng_llc_size), or that many times ENG_ROOF_LLC_FALLBACK when sysfs
 * does not say. *llc_known (may be NULL) says which. Measured with ENG_STREAM_READ on buffers
 * advised MADV_HUGEPAGE (eng_stream_options.hugepages), by pinned threads. */
#define ENG_ROOF_LLC_MULTIPLE 8
#define ENG_ROOF_LLC_FALLBACK (32ull << 20)
uint64_t eng_roof_bytes(uint64_t *llc, bool *llc_known);

#endif
