/* tests/e2e/test_badinput.c: the bad-input catalogue (issue 9).
 *
 * One table, one row per crafted input, across every format memwall reads from others:
 * llama2.c checkpoints, GGUF, tokenizer.bin, protocols, result records, sysfs PMU entries and
 * llama.cpp's output. Each row names the error class the parser must return (for result
 * records: the exit code of `memwall validate`) and the field its message must name. The rows
 * reuse the bad inputs other tests keep (tests/data/protocols/bad, tests/data/llamacpp/invalid,
 * tests/data/sysfs/bad) and add tests/data/bad/ (its README describes the .hex notation the
 * binary files are written in).
 *
 * None may crash (the process dies), hang (each case has 10 s, and the one that hangs is
 * named) or allocate without bound (the peak RSS of the whole run is checked at the end).
 *
 * Issue 28 adds the command line (CLI rows): a shell set-up and a command run in a fresh
 * folder against the memwall binary (stores, bundles, maps, calibrations, the environment),
 * with its exit status and output checked; the test binary doubles as the set-ups' tool
 * (`test_badinput mktar|listen|sql|jsonok|utf8ok`, see main). Issue 43 adds CLI rows for the
 * cgroup quota reader, generate --switch-at and --logits, the hash cache, a model.sha256 pin
 * and tokenize's JSON.
 */
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sqlite3.h>
#include <zlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "adapters.h"
#include "engine.h"
#include "fixture_result.h"
#include "format/gguf.h"
#include "probes.h"
#include "protocol.h"
#include "result.h"
#include "run.h"
#include "test.h"

/* GGUF_MODEL: a GGUF file through the model loader (eng_model_open), past the reader. */
enum format {
	LLAMA2C, GGUF, GGUF_MODEL, TOKENIZER, PROTOCOL, RESULT, SYSFS, ADAPTER, SPECIAL, CLI,
	FORMAT_COUNT
};

struct bad_case {
	enum format format;
	const char *file;  /* under tests/data/; a .hex file is compiled to bytes first. RESULT:
			    * NULL means a record generated as the runner writes it */
	long cut;          /* keep only the first cut bytes; -1 keeps all */
	const char *arg;   /* TOKENIZER: the model's vocab size; ADAPTER: the adapter, then
			    * optionally "|pattern"; RESULT: an edit "path=json"; SYSFS: the PMU,
			    * then optionally "|terms" to encode (default event=0x1);
			    * CLI: file is a shell set-up (or NULL) and arg the command, both run
			    * by /bin/sh in a fresh folder (see run_cli) */
	int rc;            /* the error class: the return code (RESULT: validate's exit code;
			    * CLI: the exit status, 128 + N for signal N) */
	const char *field; /* the field the error names: in err.field where the error has one
			    * (protocol, adapter), else in the message (engine, result's stderr), or
			    * the file at fault (sysfs) */
	const char *text;  /* another piece of the message, or NULL */
};

#define WHOLE (-1)

static const struct bad_case cases[] = {
	/* ---- llama2.c checkpoints: truncated inside every header field of both layouts */
	{ LLAMA2C, "bad/llama2c/v1-base.hex", 2, NULL, -EINVAL, "'magic'", "cut off" },
	{ LLAMA2C, "bad/llama2c/v1-base.hex", 6, NULL, -EINVAL, "'version'", "cut off" },
	{ LLAMA2C, "bad/llama2c/v1-base.hex", 10, NULL, -EINVAL, "'dim'", "cut off" },
	{ LLAMA2C, "bad/llama2c/v1-base.hex", 14, NULL, -EINVAL, "'hidden_dim'", "cut off" },
	{ LLAMA2C, "bad/llama2c/v1-base.hex", 18, NULL, -EINVAL, "'n_layers'", "cut off" },
	{ LLAMA2C, "bad/llama2c/v1-base.hex", 22, NULL, -EINVAL, "'n_heads'", "cut off" },
	{ LLAMA2C, "bad/llama2c/v1-base.hex", 26, NULL, -EINVAL, "'n_kv_heads'", "cut off" },
	{ LLAMA2C, "bad/llama2c/v1-base.hex", 30, NULL, -EINVAL, "'vocab_size'", "cut off" },
	{ LLAMA2C, "bad/llama2c/v1-base.hex", 34, NULL, -EINVAL, "'seq_len'", "cut off" },
	{ LLAMA2C, "bad/llama2c/v1-base.hex", 36, NULL, -EINVAL, "'shared_classifier'", "cut off" },
	{ LLAMA2C, "bad/llama2c/v1-base.hex", 100, NULL, -EINVAL, "'header padding'", "cut off" },
	{ LLAMA2C, "bad/llama2c/v1-base.hex", 300, NULL, -EINVAL, "'token_embedding'",
	  "extends past end of file" },
	{ LLAMA2C, "bad/llama2c/legacy-base.hex", 2, NULL, -EINVAL, "'dim'", "cut off" },
	{ LLAMA2C, "bad/llama2c/legacy-base.hex", 6, NULL, -EINVAL, "'hidden_dim'", "cut off" },
	{ LLAMA2C, "bad/llama2c/legacy-base.hex", 10, NULL, -EINVAL, "'n_layers'", "cut off" },
	{ LLAMA2C, "bad/llama2c/legacy-base.hex", 14, NULL, -EINVAL, "'n_heads'", "cut off" },
	{ LLAMA2C, "bad/llama2c/legacy-base.hex", 18, NULL, -EINVAL, "'n_kv_heads'", "cut off" },
	{ LLAMA2C, "bad/llama2c/legacy-base.hex", 22, NULL, -EINVAL, "'vocab_size'", "cut off" },
	{ LLAMA2C, "bad/llama2c/legacy-base.hex", 26, NULL, -EINVAL, "'seq_len'", "cut off" },
	{ LLAMA2C, "bad/llama2c/legacy-base.hex", 100, NULL, -EINVAL, "'wv'",
	  "extends past end of file" },
	/* ---- llama2.c: numbers the header gives */
	{ LLAMA2C, "bad/llama2c/empty.hex", WHOLE, NULL, -EINVAL, "empty", NULL },
	{ LLAMA2C, "bad/llama2c/negative-dim.hex", WHOLE, NULL, -EINVAL, "'dim'", "is -2" },
	{ LLAMA2C, "bad/llama2c/zero-layers.hex", WHOLE, NULL, -EINVAL, "'n_layers'", "is 0" },
	{ LLAMA2C, "bad/llama2c/negative-vocab-v1.hex", WHOLE, NULL, -EINVAL, "'vocab_size'",
	  "is -4" },
	{ LLAMA2C, "bad/llama2c/legacy-negative-seq.hex", WHOLE, NULL, -EINVAL, "'seq_len'",
	  "is -1" },
	{ LLAMA2C, "bad/llama2c/heads-not-divide.hex", WHOLE, NULL, -EINVAL, "'n_heads'",
	  "does not divide dim" },
	{ LLAMA2C, "bad/llama2c/kv-heads-not-divide.hex", WHOLE, NULL, -EINVAL, "'n_kv_heads'",
	  "does not divide n_heads" },
	{ LLAMA2C, "bad/llama2c/odd-head-size.hex", WHOLE, NULL, -EINVAL, "'dim'/'n_heads'",
	  "odd head size" },
	{ LLAMA2C, "bad/llama2c/version-2.hex", WHOLE, NULL, -ENOTSUP, "'version'", "is 2" },
	{ LLAMA2C, "bad/llama2c/shared-flag-7.hex", WHOLE, NULL, -EINVAL, "'shared_classifier'",
	  "is 7" },
	{ LLAMA2C, "bad/llama2c/tensor-past-end.hex", WHOLE, NULL, -EINVAL, "'wo'",
	  "extends past end of file" },
	{ LLAMA2C, "bad/llama2c/unshared-no-wcls.hex", WHOLE, NULL, -EINVAL, "'wcls'",
	  "extends past end of file" },
	{ LLAMA2C, "bad/llama2c/trailing-bytes.hex", WHOLE, NULL, -EINVAL, "'w3'",
	  "8 bytes follow the last tensor" },
	{ LLAMA2C, "bad/llama2c/huge-shape.hex", WHOLE, NULL, -EOVERFLOW, "'token_embedding'",
	  "overflows 64-bit offsets" },

	/* ---- GGUF: truncated inside every header field, key/value and tensor info */
	{ GGUF, "bad/gguf/base.hex", 2, NULL, -EINVAL, "magic", "truncated" },
	{ GGUF, "bad/gguf/base.hex", 6, NULL, -EINVAL, "version", "truncated" },
	{ GGUF, "bad/gguf/base.hex", 12, NULL, -EINVAL, "n_tensors", "truncated" },
	{ GGUF, "bad/gguf/base.hex", 20, NULL, -EINVAL, "n_kv", "truncated" },
	{ GGUF, "bad/gguf/base.hex", 28, NULL, -EINVAL, "key 0 name", "truncated" },
	{ GGUF, "bad/gguf/base.hex", 40, NULL, -EINVAL, "key 0 name", "runs past the end" },
	{ GGUF, "bad/gguf/base.hex", 54, NULL, -EINVAL, "key 'general.architecture' value type",
	  "truncated" },
	{ GGUF, "bad/gguf/base.hex", 60, NULL, -EINVAL, "key 'general.architecture'",
	  "truncated" },
	{ GGUF, "bad/gguf/base.hex", 88, NULL, -EINVAL, "key 't.arr': array element type",
	  "truncated" },
	{ GGUF, "bad/gguf/base.hex", 92, NULL, -EINVAL, "key 't.arr': array length", "truncated" },
	{ GGUF, "bad/gguf/base.hex", 100, NULL, -EINVAL, "key 't.arr'", "runs past the end" },
	{ GGUF, "bad/gguf/base.hex", 112, NULL, -EINVAL, "tensor 0 name", "truncated" },
	{ GGUF, "bad/gguf/base.hex", 121, NULL, -EINVAL, "tensor 'w' n_dims", "truncated" },
	{ GGUF, "bad/gguf/base.hex", 125, NULL, -EINVAL, "tensor 'w' ne[0]", "truncated" },
	{ GGUF, "bad/gguf/base.hex", 133, NULL, -EINVAL, "tensor 'w' type", "truncated" },
	{ GGUF, "bad/gguf/base.hex", 139, NULL, -EINVAL, "tensor 'w' offset", "truncated" },
	{ GGUF, "bad/gguf/base.hex", 170, NULL, -EINVAL, "tensor 'w'", "extends past the end" },
	/* ---- GGUF: counts and shapes no file can hold */
	{ GGUF, "bad/gguf/n-tensors-2e63.hex", WHOLE, NULL, -EINVAL, "9223372036854775808 tensors",
	  "cannot fit" },
	{ GGUF, "bad/gguf/n-kv-2e63.hex", WHOLE, NULL, -EINVAL, "9223372036854775808 key/values",
	  "cannot fit" },
	{ GGUF, "bad/gguf/array-2e63.hex", WHOLE, NULL, -EINVAL, "key 't.arr'",
	  "array of 9223372036854775808 int32" },
	{ GGUF, "bad/gguf/string-2e63.hex", WHOLE, NULL, -EINVAL, "key 'general.architecture'",
	  "string length 9223372036854775808" },
	{ GGUF, "bad/gguf/tensor-past-end.hex", WHOLE, NULL, -EINVAL, "tensor 'w'",
	  "extends past the end" },
	{ GGUF, "bad/gguf/negative-dim.hex", WHOLE, NULL, -EINVAL, "tensor 'w'", "shape overflows" },
	{ GGUF, "bad/gguf/bytes-overflow.hex", WHOLE, NULL, -EINVAL, "tensor 'w'",
	  "overflow a 64-bit byte size" },
	{ GGUF, "bad/gguf/five-dims.hex", WHOLE, NULL, -EINVAL, "tensor 'w'", "5 dimensions" },
	{ GGUF, "bad/gguf/unknown-ggml-type.hex", WHOLE, NULL, -EINVAL, "tensor 'w'",
	  "ggml type 99" },
	{ GGUF, "bad/gguf/misaligned-offset.hex", WHOLE, NULL, -EINVAL, "tensor 'w'",
	  "not a multiple of the alignment" },
	{ GGUF, "bad/gguf/unknown-value-type.hex", WHOLE, NULL, -EINVAL, "key 't.arr'",
	  "unknown value type 13" },
	{ GGUF, "bad/gguf/duplicate-key.hex", WHOLE, NULL, -EINVAL, "key 'general.architecture'",
	  "appears twice" },
	{ GGUF, "bad/gguf/version-1.hex", WHOLE, NULL, -EINVAL, "version 1", NULL },
	{ GGUF, "bad/gguf/big-endian.hex", WHOLE, NULL, -EINVAL, "version", "big-endian" },
	{ GGUF, "bad/gguf/alignment-48.hex", WHOLE, NULL, -EINVAL, "'general.alignment'",
	  "power of two" },
	{ GGUF, "bad/gguf/bad-magic.hex", WHOLE, NULL, -EINVAL, "magic", "not a GGUF file" },
	/* ---- GGUF: tensors off the writer's layout (each at the previous one's end, rounded up
	 * to the alignment, in order): both tensors named, with the offset expected */
	{ GGUF, "bad/gguf/overlap.hex", WHOLE, NULL, -EINVAL, "tensor 'v'",
	  "overlaps or precedes tensor 'w' (16 bytes at data offset 0): it should be at data offset 32" },
	{ GGUF, "bad/gguf/overlap-partial.hex", WHOLE, NULL, -EINVAL, "tensor 'v'",
	  "tensor 'w' (16 bytes at data offset 0): it should be at data offset 16" },
	{ GGUF, "bad/gguf/gap.hex", WHOLE, NULL, -EINVAL, "tensor 'v'",
	  "gap after tensor 'w' (16 bytes at data offset 0): it should be at data offset 32" },
	{ GGUF, "bad/gguf/out-of-order.hex", WHOLE, NULL, -EINVAL, "tensor 'w' (the first)",
	  "first tensor starts the data section (offset 0)" },
	{ GGUF, "bad/gguf/first-not-zero.hex", WHOLE, NULL, -EINVAL, "tensor 'w' (the first)",
	  "is at data offset 32" },
	{ GGUF, "bad/gguf/same-offset.hex", WHOLE, NULL, -EINVAL, "tensor 'w'",
	  "tensor 'v' (16 bytes at data offset 32): it should be at data offset 64" },
	/* ---- GGUF: a legal general.alignment below 8 that leaves a tensor misaligned in the file */
	{ GGUF, "bad/gguf/alignment-1-odd.hex", WHOLE, NULL, -EINVAL, "tensor 'w'",
	  "not a multiple of 8 (general.alignment is 1)" },
	{ GGUF, "bad/gguf/alignment-1-second.hex", WHOLE, NULL, -EINVAL, "tensor 'v'",
	  "file offset 212, not a multiple of 8" },
	{ GGUF, "bad/gguf/alignment-2.hex", WHOLE, NULL, -EINVAL, "tensor 'w'",
	  "not a multiple of 8 (general.alignment is 2)" },
	{ GGUF, "bad/gguf/alignment-4.hex", WHOLE, NULL, -EINVAL, "tensor 'w'",
	  "not a multiple of 8 (general.alignment is 4)" },
	{ GGUF, "bad/gguf/alignment-0.hex", WHOLE, NULL, -EINVAL, "'general.alignment'",
	  "is 0, which is not a power of two" },
	{ GGUF, "bad/gguf/alignment-u64.hex", WHOLE, NULL, -EINVAL, "'general.alignment'",
	  "has type uint64, expected uint32" },
	{ GGUF_MODEL, "bad/gguf/model-block-count.hex", WHOLE, NULL, -EINVAL,
	  "'llama.block_count'", "holds only 1 tensors" },

	/* ---- tokenizer.bin */
	{ TOKENIZER, "bad/tokenizer/base.hex", 2, "5", -EINVAL, "'max_token_length'", "cut off" },
	{ TOKENIZER, "bad/tokenizer/base.hex", 6, "5", -EINVAL, "'score' and 'length'", "cut off" },
	{ TOKENIZER, "bad/tokenizer/base.hex", 14, "5", -EINVAL, "token 0", "past end of file" },
	{ TOKENIZER, "bad/tokenizer/base.hex", WHOLE, "6", -EINVAL, "vocabulary",
	  "holds 5 tokens but the model's vocabulary has 6" },
	{ TOKENIZER, "bad/tokenizer/max-len-zero.hex", WHOLE, "1", -EINVAL, "'max_token_length'",
	  "is 0" },
	{ TOKENIZER, "bad/tokenizer/length-negative.hex", WHOLE, "2", -EINVAL, "'length'",
	  "is -1" },
	{ TOKENIZER, "bad/tokenizer/length-over-max.hex", WHOLE, "3", -EINVAL, "'length'",
	  "is 9, outside 0..5" },
	{ TOKENIZER, "bad/tokenizer/bytes-past-end.hex", WHOLE, "3", -EINVAL, "token 2",
	  "extend past end of file" },
	{ TOKENIZER, "bad/tokenizer/record-cut.hex", WHOLE, "3", -EINVAL, "token 2",
	  "cut off" },
	{ TOKENIZER, "bad/tokenizer/two-tokens.hex", WHOLE, "2", -EINVAL, "EOS", "too few" },
	/* ---- a GGUF's own tokenizer (tokenizer.ggml.*): each names the key, what is wrong and
	 * the fix; only a file without a tokenizer is -ENOENT (callers may fall back on that) */
	{ TOKENIZER, "bad/tokenizer/gguf-base.hex", WHOLE, "5", -EINVAL,
	  "'tokenizer.ggml.tokens'", "holds 3 tokens but the model's vocabulary" },
	{ TOKENIZER, "bad/tokenizer/gguf-no-model.hex", WHOLE, "3", -ENOENT,
	  "'tokenizer.ggml.model'", "carries no tokenizer" },
	{ TOKENIZER, "bad/tokenizer/gguf-unknown-model.hex", WHOLE, "3", -EINVAL,
	  "'tokenizer.ggml.model'", "is 'wordpiece'" },
	{ TOKENIZER, "bad/tokenizer/gguf-model-int.hex", WHOLE, "3", -EINVAL,
	  "'tokenizer.ggml.model'", "uint32" },
	{ TOKENIZER, "bad/tokenizer/gguf-no-tokens.hex", WHOLE, "3", -EINVAL,
	  "'tokenizer.ggml.tokens'", "is missing" },
	{ TOKENIZER, "bad/tokenizer/gguf-tokens-int.hex", WHOLE, "3", -EINVAL,
	  "'tokenizer.ggml.tokens'", "int32" },
	{ TOKENIZER, "bad/tokenizer/gguf-scores-strings.hex", WHOLE, "3", -EINVAL,
	  "'tokenizer.ggml.scores'", "element 0 is string, not a number" },
	{ TOKENIZER, "bad/tokenizer/gguf-scores-short.hex", WHOLE, "3", -EINVAL,
	  "'tokenizer.ggml.scores'", "holds 2 values for 3 tokens" },
	{ TOKENIZER, "bad/tokenizer/gguf-type-9.hex", WHOLE, "3", -EINVAL,
	  "'tokenizer.ggml.token_type'", "token 2 has type 9" },
	{ TOKENIZER, "bad/tokenizer/gguf-type-negative.hex", WHOLE, "3", -EINVAL,
	  "'tokenizer.ggml.token_type'", "token 0 has type -1" },
	{ TOKENIZER, "bad/tokenizer/gguf-no-merges.hex", WHOLE, "3", -EINVAL,
	  "'tokenizer.ggml.merges'", "re-convert the model" },
	{ TOKENIZER, "bad/tokenizer/gguf-unknown-pre.hex", WHOLE, "3", -EINVAL,
	  "'tokenizer.ggml.pre'", "is 'qwen9'" },

	/* ---- protocols: tests/data/protocols/bad (test_protocol.c reads them all) and ours */
	{ PROTOCOL, "protocols/bad/wrong-type.json", WHOLE, NULL, -EINVAL, "runs",
	  "expected integer, got string" },
	{ PROTOCOL, "protocols/bad/token-type.json", WHOLE, NULL, -EINVAL, "prompt_tokens[1]",
	  "expected integer" },
	{ PROTOCOL, "protocols/bad/not-json.json", WHOLE, NULL, -EINVAL, "", NULL },
	{ PROTOCOL, "protocols/bad/duplicate-key.json", WHOLE, NULL, -EINVAL, "", "duplicate" },
	{ PROTOCOL, "protocols/bad/zero-decode.json", WHOLE, NULL, -EINVAL, "decode_tokens", NULL },
	{ PROTOCOL, "protocols/bad/missing-model-file.json", WHOLE, NULL, -ENOENT, "model.path",
	  "does not exist" },
	{ PROTOCOL, "bad/protocol/string-decode.json", WHOLE, NULL, -EINVAL, "decode_tokens",
	  "expected integer, got string" },
	{ PROTOCOL, "bad/protocol/bool-threads.json", WHOLE, NULL, -EINVAL, "engine.threads",
	  "expected integer, got boolean" },
	{ PROTOCOL, "bad/protocol/object-name.json", WHOLE, NULL, -EINVAL, "name",
	  "expected string, got object" },
	{ PROTOCOL, "bad/protocol/real-runs.json", WHOLE, NULL, -EINVAL, "runs",
	  "expected integer, got number" },
	{ PROTOCOL, "bad/protocol/negative-cpu.json", WHOLE, NULL, -EINVAL, "engine.cpus[0]", NULL },
	{ PROTOCOL, "bad/protocol/topp-range.json", WHOLE, NULL, -EINVAL, "sampling.topp", NULL },
	{ PROTOCOL, "bad/protocol/truncated.json", WHOLE, NULL, -EINVAL, "", "not valid JSON" },
	{ PROTOCOL, "bad/protocol/unknown-placeholder.json", WHOLE, NULL, -EINVAL,
	  "engine.command[2]", "unknown placeholder '{modle}'" },
	/* ---- protocol: names that become file names (src/base/file.h, MW_NAME_RULE), thread
	 * counts past MW_THREADS_MAX */
	{ PROTOCOL, "bad/protocol/name-traversal.json", WHOLE, NULL, -EINVAL, "name", "character 1 is '/'" },
	{ PROTOCOL, "bad/protocol/name-dotdot.json", WHOLE, NULL, -EINVAL, "name", "starts with '.'" },
	{ PROTOCOL, "bad/protocol/name-dot.json", WHOLE, NULL, -EINVAL, "name", "starts with '.'" },
	{ PROTOCOL, "bad/protocol/name-hidden.json", WHOLE, NULL, -EINVAL, "name", "starts with '.'" },
	{ PROTOCOL, "bad/protocol/name-newline.json", WHOLE, NULL, -EINVAL, "name", "a newline" },
	{ PROTOCOL, "bad/protocol/name-slash.json", WHOLE, NULL, -EINVAL, "name", "character 2 is '/'" },
	{ PROTOCOL, "bad/protocol/name-backslash.json", WHOLE, NULL, -EINVAL, "name", "character 2 is '\\'" },
	{ PROTOCOL, "bad/protocol/name-space.json", WHOLE, NULL, -EINVAL, "name", "character 3 is a control character or space" },
	{ PROTOCOL, "bad/protocol/name-tab.json", WHOLE, NULL, -EINVAL, "name", "character 3 is a control character or space" },
	{ PROTOCOL, "bad/protocol/name-ctrl.json", WHOLE, NULL, -EINVAL, "name", "character 4 is a control character or space" },
	{ PROTOCOL, "bad/protocol/name-del.json", WHOLE, NULL, -EINVAL, "name", "character 4 is a control character or space" },
	{ PROTOCOL, "bad/protocol/name-65.json", WHOLE, NULL, -EINVAL, "name", "at most 64 characters" },
	{ PROTOCOL, "bad/protocol/name-nonascii.json", WHOLE, NULL, -EINVAL, "name", "character 4 is not ASCII" },
	{ PROTOCOL, "bad/protocol/name-rtl.json", WHOLE, NULL, -EINVAL, "name", "character 4 is not ASCII" },
	{ PROTOCOL, "bad/protocol/name-star.json", WHOLE, NULL, -EINVAL, "name", "character 4 is '*'" },
	{ PROTOCOL, "bad/protocol/name-dollar.json", WHOLE, NULL, -EINVAL, "name", "character 1 is '$'" },
	{ PROTOCOL, "bad/protocol/name-tilde.json", WHOLE, NULL, -EINVAL, "name", "character 1 is '~'" },
	{ PROTOCOL, "bad/protocol/name-quote.json", WHOLE, NULL, -EINVAL, "name", "character 3 is '''" },
	{ PROTOCOL, "bad/protocol/name-colon.json", WHOLE, NULL, -EINVAL, "name", "character 2 is ':'" },
	{ PROTOCOL, "bad/protocol/synth-shape-traversal.json", WHOLE, NULL, -EINVAL, "model.synth.shape", "is not allowed" },
	{ PROTOCOL, "bad/protocol/synth-shape-hidden.json", WHOLE, NULL, -EINVAL, "model.synth.shape", "is not allowed" },
	{ PROTOCOL, "bad/protocol/synth-arch-slash.json", WHOLE, NULL, -EINVAL, "model.synth.arch", "is not allowed" },
	{ PROTOCOL, "bad/protocol/synth-quant-newline.json", WHOLE, NULL, -EINVAL, "model.synth.quant", "is not allowed" },
	{ PROTOCOL, "bad/protocol/threads-1025.json", WHOLE, NULL, -EINVAL, "engine.threads", NULL },
	{ PROTOCOL, "bad/protocol/threads-100000.json", WHOLE, NULL, -EINVAL, "engine.threads", NULL },

	/* ---- files that are not regular files, given where a protocol or a record is read:
	 * refused by what they are, never blocking (arg: "protocol" or "record") */
	{ SPECIAL, "fifo", WHOLE, "protocol", -EINVAL, "", "is a FIFO" },
	{ SPECIAL, "dir", WHOLE, "protocol", -EINVAL, "", "is a directory" },
	{ SPECIAL, "/dev/zero", WHOLE, "protocol", -EINVAL, "", "is a character device" },
	{ SPECIAL, "fifo", WHOLE, "record", -EINVAL, "", "is a FIFO" },
	{ SPECIAL, "dir", WHOLE, "record", -EINVAL, "", "is a directory" },
	{ SPECIAL, "/dev/zero", WHOLE, "record", -EINVAL, "", "is a character device" },
	{ SPECIAL, "big", WHOLE, "record", -EFBIG, "", "limit" },
	{ SPECIAL, "big", WHOLE, "protocol", -EFBIG, "", "limit" },

	/* ---- result records: `memwall validate` exits 1 naming an edited figure, 2 when the
	 * record is not of the schema */
	{ RESULT, NULL, WHOLE, "runs[2].figures.tok_per_s=123.5", 1, "runs[2].figures.tok_per_s",
	  "recorded 123.5" },
	{ RESULT, NULL, WHOLE, "summary.metrics.tok_per_s.mean=1e9", 1,
	  "summary.metrics.tok_per_s.mean", "recorded" },
	{ RESULT, NULL, WHOLE, "summary.metrics.dram_read_MB_per_token.cv_pct=0.001", 1,
	  "summary.metrics.dram_read_MB_per_token.cv_pct", "recorded" },
	{ RESULT, NULL, WHOLE, "runs[1].decode.ns=1", 1, "runs[1].decode.ns", "not the sum" },
	{ RESULT, NULL, WHOLE, "runs[3].tokens.latency_ns=[1,2,3]", 1, "runs[3].tokens.latency_ns",
	  "has 3 entries" },
	{ RESULT, NULL, WHOLE, "drift.change_pct=-50", 1, "drift.change_pct", "recorded" },
	{ RESULT, NULL, WHOLE, "kind=42", 2, "kind", NULL },
	/* token ids outside model.shape.vocab_size (the fixture's ids are 5..11) */
	{ RESULT, NULL, WHOLE, "model.shape={\"vocab_size\":8}", 1, "runs[0].tokens.ids[3]",
	  "is 8, outside the model's vocabulary of 8 tokens" },
	{ RESULT, NULL, WHOLE, "model.shape={\"vocab_size\":6}", 1, "runs[0].tokens.ids[1]",
	  "outside the model's vocabulary of 6 tokens" },
	/* protocol.document edited: its figures against what the runs did (4 runs after 1
	 * warm-up, 1 prompt token, 8 decoded) */
	{ RESULT, NULL, WHOLE, "protocol.document={\"decode_tokens\":7}", 1,
	  "runs[0].decode.tokens", "the protocol's decode_tokens is 7" },
	{ RESULT, NULL, WHOLE, "protocol.overrides={\"decode_tokens\":16}", 1,
	  "runs[0].decode.tokens", "the protocol's decode_tokens is 16" },
	{ RESULT, NULL, WHOLE, "protocol.document={\"runs\":3}", 1, "protocol.document.runs",
	  "is 3, but the record holds 4 measured runs" },
	{ RESULT, NULL, WHOLE, "protocol.document={\"warmup_runs\":0}", 1,
	  "protocol.document.warmup_runs", "holds 1 warm-up runs" },
	{ RESULT, NULL, WHOLE, "protocol.document={\"prompt_tokens\":[1,2,3]}", 1,
	  "runs[0].prefill.tokens", "prompt_tokens holds 3" },
	/* sha256: 64 lowercase hex digits */
	{ RESULT, NULL, WHOLE, "protocol.sha256=\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"", 2, "protocol.sha256",
	  "does not match ^[0-9a-f]{64}$" },
	{ RESULT, NULL, WHOLE, "protocol.sha256=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"", 2, "protocol.sha256", "does not match" },
	{ RESULT, NULL, WHOLE, "model.sha256=\"1234\"", 2, "model.sha256", "does not match" },
	{ RESULT, NULL, WHOLE, "model.sha256=\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbg\"", 2, "model.sha256", "does not match" },
	/* a missing required field: named with its object and the value to add */
	{ RESULT, NULL, WHOLE, "protocol={\"name\":\"x\",\"document\":null}", 2,
	  "protocol.sha256", "required field 'sha256' is missing from 'protocol': add \"sha256\"" },
	{ RESULT, NULL, WHOLE, "runs[1]={\"index\":1}", 2, "runs[1].warmup",
	  "required field 'warmup' is missing from 'runs[1]': add \"warmup\": a value of type boolean" },
	{ RESULT, NULL, WHOLE, "runs=\"none\"", 2, "runs", NULL },
	{ RESULT, NULL, 200, NULL, 2, "", "not valid JSON" },
	/* issue 28, class 20: what the schema cannot say */
	{ RESULT, NULL, WHOLE, "created_utc=\"9999-99-99T99:99:99Z\"", 2, "created_utc",
	  "not a UTC time" },
	{ RESULT, NULL, WHOLE, "created_utc=\"2026-02-30T10:00:00Z\"", 2, "created_utc",
	  "not a UTC time" },
	{ RESULT, NULL, WHOLE, "created_utc=\"2026-11-21 07:36:00 and more\"", 2, "created_utc",
	  "not a UTC time" },
	{ RESULT, NULL, WHOLE, "protocol.document={\"name\":\"other\"}", 1, "protocol.name",
	  "protocol.document.name is 'other'" },
	/* issue 43, class 15: counters.dram.verification against itself and the record (made on
	 * 2026-11-21T06:00:00Z), and machine.cpu_quota */
	{ RESULT, NULL, WHOLE, "counters.dram={\"measured\":true,\"backend\":\"intel_imc_free\",\"instances\":[\"uncore_imc_free_running_0\"],\"layer\":\"sim\",\"verification\":{\"verdict\":\"pass\",\"created_utc\":\"2026-11-01T06:00:00Z\",\"age_days\":20,\"stale\":false,\"backend\":\"intel_imc_free\",\"layer\":\"sim\",\"source\":\"/s/verification.json\",\"fingerprint_sha256\":\"ab\",\"failed_checks\":[\"read pass: sum: memwall counted nothing\"]}}", 1,
	  "counters.dram.verification.verdict", "failed_checks lists 1 failed check" },
	{ RESULT, NULL, WHOLE, "counters.dram={\"measured\":true,\"backend\":\"intel_imc_free\",\"instances\":[\"uncore_imc_free_running_0\"],\"layer\":\"sim\",\"verification\":{\"verdict\":\"fail\",\"created_utc\":\"2026-11-01T06:00:00Z\",\"age_days\":20,\"stale\":false,\"backend\":\"intel_imc_free\",\"layer\":\"sim\",\"source\":\"/s/verification.json\",\"fingerprint_sha256\":\"ab\",\"failed_checks\":[]}}", 1,
	  "counters.dram.verification.verdict", "is \"fail\", but failed_checks lists 0" },
	{ RESULT, NULL, WHOLE, "counters.dram={\"measured\":true,\"backend\":\"intel_imc_free\",\"instances\":[\"uncore_imc_free_running_0\"],\"layer\":\"syscall\",\"verification\":{\"verdict\":\"pass\",\"created_utc\":\"2026-11-01T06:00:00Z\",\"age_days\":20,\"stale\":false,\"backend\":\"intel_imc_free\",\"layer\":\"sim\",\"source\":\"/s/verification.json\",\"fingerprint_sha256\":\"ab\",\"failed_checks\":[]}}", 1,
	  "counters.dram.verification.layer", "the run counted on the \"syscall\" layer" },
	{ RESULT, NULL, WHOLE, "counters.dram={\"measured\":true,\"backend\":\"intel_imc_free\",\"instances\":[\"uncore_imc_free_running_0\"],\"layer\":\"sim\",\"verification\":{\"verdict\":\"pass\",\"created_utc\":\"2025-10-17T06:00:00Z\",\"age_days\":400,\"stale\":false,\"backend\":\"intel_imc_free\",\"layer\":\"sim\",\"source\":\"/s/verification.json\",\"fingerprint_sha256\":\"ab\",\"failed_checks\":[]}}", 1,
	  "counters.dram.verification.stale", "is false, but age_days is 400" },
	{ RESULT, NULL, WHOLE, "counters.dram={\"measured\":true,\"backend\":\"intel_imc_free\",\"instances\":[\"uncore_imc_free_running_0\"],\"layer\":\"sim\",\"verification\":{\"verdict\":\"pass\",\"created_utc\":\"2026-11-21T06:00:00Z\",\"age_days\":-3,\"stale\":false,\"backend\":\"intel_imc_free\",\"layer\":\"sim\",\"source\":\"/s/verification.json\",\"fingerprint_sha256\":\"ab\",\"failed_checks\":[]}}", 1,
	  "counters.dram.verification.age_days", "cannot be younger than the run" },
	{ RESULT, NULL, WHOLE, "counters.dram={\"measured\":true,\"backend\":\"intel_imc_free\",\"instances\":[\"uncore_imc_free_running_0\"],\"layer\":\"sim\",\"verification\":{\"verdict\":\"pass\",\"created_utc\":\"2026-12-01T06:00:00Z\",\"age_days\":0,\"stale\":false,\"backend\":\"intel_imc_free\",\"layer\":\"sim\",\"source\":\"/s/verification.json\",\"fingerprint_sha256\":\"ab\",\"failed_checks\":[]}}", 1,
	  "counters.dram.verification.created_utc", "after the record's created_utc" },
	{ RESULT, NULL, WHOLE, "counters.dram={\"measured\":true,\"backend\":\"intel_imc_free\",\"instances\":[\"uncore_imc_free_running_0\"],\"layer\":\"sim\",\"verification\":{\"verdict\":\"pass\",\"created_utc\":\"2026-11-01T06:00:00Z\",\"age_days\":3,\"stale\":false,\"backend\":\"intel_imc_free\",\"layer\":\"sim\",\"source\":\"/s/verification.json\",\"fingerprint_sha256\":\"ab\",\"failed_checks\":[]}}", 1,
	  "counters.dram.verification.age_days", "is 3, but the verification (2026-11-01T06:00:00Z) is 20.00 days older" },
	{ RESULT, NULL, WHOLE, "machine.cpu_quota={\"cpus\":-1,\"file\":\"/sys/fs/cgroup/cpu.max\",\"value\":\"-100000 100000\"}",
	  1, "machine.cpu_quota.cpus", "is not a positive number of CPUs" },
	{ RESULT, NULL, WHOLE, "machine.cpu_quota={\"cpus\":0}", 1, "machine.cpu_quota.cpus",
	  "is not a positive number of CPUs" },

	/* ---- sysfs PMU entries: tests/data/sysfs/bad and ours. The PMU is kept with its problem
	 * naming the file, and encoding an event on it is refused. */
	{ SYSFS, "sysfs/bad", WHOLE, "uncore_imc_free_running_0", -EINVAL, "format/umask",
	  "bit range 70-80 is outside a 64-bit config word" },
	{ SYSFS, "sysfs/bad", WHOLE, "uncore_imc_0", -EINVAL, "format/event", "empty format" },
	{ SYSFS, "sysfs/bad", WHOLE, "amd_umc_0", -EINVAL, "type", "not a decimal perf type" },
	{ SYSFS, "sysfs/bad", WHOLE, "uncore_imc_1", -EINVAL, "cpumask", "not a CPU list" },
	{ SYSFS, "bad/sysfs", WHOLE, "fmt_past_63", -EINVAL, "format/umask",
	  "bit range 56-64 is outside a 64-bit config word" },
	{ SYSFS, "bad/sysfs", WHOLE, "fmt_reversed", -EINVAL, "format/umask", "bit range 15-8" },
	{ SYSFS, "bad/sysfs", WHOLE, "fmt_too_many", -EINVAL, "format/umask", "more than 8 ranges" },
	{ SYSFS, "bad/sysfs", WHOLE, "fmt_word", -EINVAL, "format/umask",
	  "does not start with config:" },
	{ SYSFS, "bad/sysfs", WHOLE, "fmt_huge_bit", -EINVAL, "format/umask",
	  "expected a bit number" },
	{ SYSFS, "bad/sysfs", WHOLE, "scale_negative", -EINVAL, "events/x.scale",
	  "not a positive number" },
	{ SYSFS, "bad/sysfs", WHOLE, "scale_nan", -EINVAL, "events/x.scale", "not a positive number" },
	{ SYSFS, "bad/sysfs", WHOLE, "unit_long", -EINVAL, "events/x.unit", "too long" },
	{ SYSFS, "bad/sysfs", WHOLE, "alias_empty", -EINVAL, "events/x", "empty event alias" },
	{ SYSFS, "bad/sysfs", WHOLE, "cpumask_range", -EINVAL, "cpumask", "not a CPU list" },
	{ SYSFS, "bad/sysfs", WHOLE, "type_overflow", -EINVAL, "type", "not a decimal perf type" },
	{ SYSFS, "bad/sysfs", WHOLE, "fmt_config3|event=0x1,umask=0x2", -EINVAL,
	  "event=0x1,umask=0x2", "config3" },

	/* ---- llama.cpp output: tests/data/llamacpp/invalid (test_adapters.c checks all of them)
	 * and ours */
	{ ADAPTER, "llamacpp/invalid/completion-truncated.stderr", WHOLE, "llama-completion",
	  -EINVAL, "eval time", "cut short" },
	{ ADAPTER, "llamacpp/invalid/completion-negative.stderr", WHOLE, "llama-completion",
	  -EINVAL, "eval time", "negative" },
	{ ADAPTER, "llamacpp/invalid/completion-total-mismatch.stderr", WHOLE, "llama-completion",
	  -EINVAL, "total time", "make 206" },
	{ ADAPTER, "llamacpp/invalid/bench-huge.json", WHOLE, "llama-bench-json", -EINVAL,
	  "[1].n_gen", "out of range" },
	{ ADAPTER, "llamacpp/invalid/bench-negative.csv", WHOLE, "llama-bench-csv", -EINVAL, "n_gen",
	  "negative" },
	{ ADAPTER, "llamacpp/invalid/generic-unknown-key.stdout", WHOLE, "memwall-tokens", -EINVAL,
	  "memwall-tokens", "unknown key" },
	{ ADAPTER, "bad/adapters/load-error.stderr", WHOLE, "llama-completion", -EIO, "",
	  "failed to load model" },
	{ ADAPTER, "bad/adapters/generic-huge.stdout", WHOLE, "memwall-tokens", -EINVAL, "decode",
	  "out of range" },
	{ ADAPTER, "bad/adapters/generic-nan.stdout", WHOLE, "memwall-tokens", -EINVAL, "decode_ms",
	  NULL },
	{ ADAPTER, "bad/adapters/pattern.stdout", WHOLE, "memwall-tokens|made {decod} tokens",
	  -EINVAL, "pattern", "{decod}" },
	{ ADAPTER, "bad/adapters/pattern.stdout", WHOLE, "memwall-tokens|made {decode tokens",
	  -EINVAL, "pattern", "without '}'" },

	/* ---- the command line (issue 28): hostile stores, bundles, maps, calibrations and
	 * environments, each through the verb a user runs. $T mktar writes crafted archives. */
/* the set-up and the command, then rc, field, text as above */
#define CLI_CASE(setup, ...) { CLI, setup, WHOLE, __VA_ARGS__ }
/* The simulated PMU on the arrow-lake tree, counting, and a state folder st: for verify */
#define SIMV "export MEMWALL_COUNTERS=sim MEMWALL_SYSFS_ROOT=$D/sysfs/arrow-lake MEMWALL_STATE_DIR=$PWD/st " \
	"MEMWALL_SIM_SCRIPT=$PWD/s && mkdir st && for i in 0 1; do " \
	"t=$(cat $MEMWALL_SYSFS_ROOT/bus/event_source/devices/uncore_imc_free_running_$i/type); " \
	"printf 'perf type=%s config=0x20ff cpu=* start=0 step=1000\\nperf type=%s config=0x30ff cpu=* " \
	"start=0 step=1000\\n' $t $t >> s; done"
#define ESCREC "sed 's/\"Test CPU\"/\"Test\\\\u001b]0;pwn\\\\u0007CPU\"/' $F/rec.json > r.json"
	/* 1: run --list with a data folder beside the build tree's protocols (a use after free) */
	CLI_CASE("mkdir -p d/protocols && cp $D/../../protocols/*.json d/protocols/",
	  "MEMWALL_DATA_DIR=d $MW run --list", 0, "d/protocols:", NULL),
	CLI_CASE("mkdir -p d/protocols && printf '{\"name\":\"x\",\"description\":\"a\\\\u001b[2Jb\"}' > d/protocols/x.json",
	  "MEMWALL_DATA_DIR=d $MW run --list", 0, "a\\e[2Jb", NULL),
	/* 2, 3, 11, 20: bundles whose extraction differs from what validate checked */
	CLI_CASE("$T mktar b.tar.gz manifest.json={} manifest.json={}", "$MW validate b.tar.gz", 2,
	  "manifest.json", "appears twice"),
	CLI_CASE("$T mktar b.tar.gz p=../../..,evil.txt=x", "$MW validate b.tar.gz", 2,
	  "../../../evil.txt", "a '..' component"),
	CLI_CASE("$T mktar b.tar.gz t=5,../up/", "$MW validate b.tar.gz", 2, "../up/",
	  "a '..' component"),
	CLI_CASE("$T mktar b.tar.gz t=5,p=/etc,cron.d/", "$MW validate b.tar.gz", 2, "/etc/cron.d/",
	  "an absolute name"),
	CLI_CASE("$T mktar b.tar.gz 'records/..\\evil.json=x'", "$MW validate b.tar.gz", 2,
	  "records/..", "a backslash"),
	CLI_CASE("$T mktar b.tar.gz \"$(printf 'records/\\033[2Ja.json=x')\"", "$MW validate b.tar.gz", 2,
	  "records/\\e[2Ja.json", "control character"),
	CLI_CASE("$T mktar b.tar.gz t=2,records/a.json", "$MW validate b.tar.gz", 2, "records/a.json",
	  "a link, a device"),
	CLI_CASE("$T mktar b.tar.gz records/=x", "$MW validate b.tar.gz", 2, "records/",
	  "ends in '/'"),
	CLI_CASE("$T mktar b.tar.gz records/evil.JSON=x", "$MW validate b.tar.gz", 2,
	  "records/evil.JSON", "not where a bundle puts a file"),
	CLI_CASE("$T mktar b.tar.gz evil.sh=x", "$MW validate b.tar.gz", 2, "evil.sh",
	  "not where a bundle puts a file"),
	CLI_CASE("$T mktar b.tar.gz plots/a/b/c.png=x", "$MW validate b.tar.gz", 2, "plots/a/b/c.png",
	  "not where a bundle puts a file"),
	CLI_CASE("$T mktar b.tar.gz +20000", "$MW validate b.tar.gz", 2, "more than 10000 members",
	  NULL),
	CLI_CASE("mkfifo b.tar.gz", "timeout 5 $MW validate b.tar.gz", 2, "b.tar.gz", "FIFO"),
	CLI_CASE("$MW bundle $F/rec.json -o b.tar.gz >/dev/null && mkdir x && cd x && tar xzf ../b.tar.gz && "
	  "cd .. && $T mktar c.tar.gz manifest.json=@x/manifest.json provenance.md=@x/provenance.md "
	  "records/rec.json=@x/records/rec.json records/rec.json=@x/records/rec.json",
	  "$MW validate c.tar.gz", 2, "records/rec.json", "appears twice"),
	/* 5: record text on a terminal, in markdown and in CSV */
	CLI_CASE(ESCREC, "$MW report r.json", 0, "Test\\e]0;pwn\\x07CPU", NULL),
	CLI_CASE(ESCREC " && $MW db --db s.db import r.json", "$MW db --db s.db list", 0,
	  "Test\\e]0;pwn\\x07CPU", NULL),
	CLI_CASE("sed 's/\"Test CPU\"/\"=HYPERLINK(\\\\\"http:\\/\\/x\\\\\")\"/' $F/rec.json > r.json && "
	  "$MW db --db s.db import r.json", "$MW db --db s.db list --format csv", 0,
	  "\"'=HYPERLINK(\"\"http://x\"\")\"", NULL),
	CLI_CASE("sed 's/\"Test CPU\"/\"a\\\\nb | c\"/' $F/rec.json > r.json && $MW db --db s.db import r.json",
	  "$MW db --db s.db list", 0, "a\\nb \\| c", NULL),
	CLI_CASE(ESCREC " && $MW db --db s.db import r.json", "$MW db --db s.db show $(sha256sum r.json | cut -c1-12)", 0,
	  "Test\\e]0;pwn\\x07CPU", NULL),
	CLI_CASE(NULL, "$MW report \"$(printf 'no\\033[31mfile')\"", 2, "no\\e[31mfile", NULL),
	/* 7, 19: an interrupted or refused bundle leaves nothing behind */
	CLI_CASE("mkdir bin && printf '#!/bin/sh\\nsleep 3\\n' > bin/gnuplot && chmod +x bin/gnuplot",
	  "PATH=$PWD/bin:$PATH $MW bundle $F/rec.json -o b.tar.gz & sleep 1; kill -TERM $!; wait $!; "
	  "echo rc=$?; ls -A | grep -v '^bin$' || echo nothing-left", 0, "rc=143", "nothing-left"),
	CLI_CASE("cp $F/rec.json ..json", "$MW bundle ..json -o b.tar.gz; r=$?; ls -A | grep -v '^..json$' "
	  "|| echo nothing-left; exit $r", 2, "cannot name a record in a bundle", "nothing-left"),
	CLI_CASE("cp $F/rec.json 'a b.json'", "$MW bundle 'a b.json' -o b.tar.gz", 2,
	  "cannot name a record in a bundle", NULL),
	CLI_CASE("touch b.tar.gz", "$MW bundle $F/rec.json -o b.tar.gz", 2, "never replaces", NULL),
	/* 4: credentials in URLs never printed */
	CLI_CASE(NULL, "$MW db --db 'mysql://alice:hunter2secret@db.example/x' list", 2,
		 "mysql://alice:[redacted]@db.example/x", "not a store"),
	CLI_CASE(NULL, "$MW db --db 'postgresql://alice:hunter2secret@127.0.0.1:1/x' list; "
		 "echo \"$?\"", 0, "postgresql://alice:[redacted]@127.0.0.1:1/x", "cannot connect"),
	CLI_CASE(NULL, "$MW db --db 'postgresql://127.0.0.1:1/x?user=a&password=hunter2secret' list", 3,
		 "password=[redacted]", NULL),
	/* 10: a server that accepts and never answers: refused within the connect timeout */
	/* (the wait for the listener's port is bounded: a listener that never starts fails the
	 * row at once instead of looping after the test was killed) */
	CLI_CASE("$T listen 9 > port & i=0; while [ ! -s port ] && [ $i -lt 300 ]; do sleep 0.1; "
		 "i=$((i + 1)); done",
		 "timeout 8 $MW db --db \"postgresql://u@127.0.0.1:$(cat port)/x\" list", 3,
		 "cannot connect", "timeout"),
	/* 6: sparsity-calibrate never replaces its inputs, a non-regular file, or without --force */
#define CALIB "$MW sparsity-calibrate -m m.bin --prompts p.txt -n 2 "
#define CALIB_SETUP "cp $F/m.bin $F/p.txt ."
	CLI_CASE(CALIB_SETUP, CALIB "-o m.bin; r=$?; cmp m.bin $F/m.bin && echo model-intact; exit $r",
		 2, "-o m.bin is also the model (-m)", "model-intact"),
	CLI_CASE(CALIB_SETUP, CALIB "-o p.txt", 2, "-o p.txt is also the prompts (--prompts)", NULL),
	CLI_CASE(CALIB_SETUP " && ln -s m.bin link.bin", CALIB "-o link.bin --force", 2,
		 "-o link.bin is also the model (-m)", NULL),
	CLI_CASE(CALIB_SETUP, CALIB "-o x.map --reorder m.bin --force", 2,
		 "--reorder m.bin is also the model (-m)", NULL),
	CLI_CASE(CALIB_SETUP, CALIB "-o x.map --reorder x.map", 2, "also --reorder's output", NULL),
	CLI_CASE(CALIB_SETUP " && echo keep > x.map", CALIB "-o x.map; r=$?; cat x.map; exit $r", 2,
		 "exists: give --force", "keep"),
	CLI_CASE(CALIB_SETUP " && echo keep > r.bin", CALIB "-o x.map --reorder r.bin", 2,
		 "--reorder r.bin exists: give --force", NULL),
	CLI_CASE(CALIB_SETUP " && mkfifo f", "timeout 5 " CALIB "-o f --force", 2, "-o f is a FIFO",
		 NULL),
	CLI_CASE(CALIB_SETUP " && mkdir d", CALIB "-o d --force", 2, "-o d is a directory", NULL),
	CLI_CASE(CALIB_SETUP " && echo old > x.map", CALIB "-o x.map --force", 0,
		 "dead neurons per layer", NULL),
	/* 8, 15: prompts and maps that are FIFOs, devices, other models' or damaged */
	CLI_CASE("mkfifo f", "timeout 5 $MW sparsity-calibrate -m $F/m.bin --prompts f -o x.map", 2,
		 "f: --prompts", "is a FIFO"),
	CLI_CASE(NULL, "timeout 5 $MW sparsity-calibrate -m $F/m.bin --prompts /dev/zero -o x.map", 2,
		 "/dev/zero: --prompts", "is a character device"),
	CLI_CASE("mkfifo f", "timeout 5 $MW generate -m $F/m.bin -n 2 --prompts f --batch 2", 2,
		 "f: --prompts", "is a FIFO"),
	CLI_CASE(NULL, "timeout 5 $MW generate -m $F/m.bin -n 2 --prompts /dev/zero --batch 2", 2,
		 "/dev/zero: --prompts", "is a character device"),
	CLI_CASE("mkfifo f", "timeout 5 $MW generate -m $F/m.bin -n 2 --ids --sparsity-map=f", 2,
		 "f: is not a regular file", NULL),
	CLI_CASE(NULL, "timeout 5 $MW generate -m $F/m.bin -n 2 --ids --sparsity-map=/dev/zero", 2,
		 "/dev/zero: is not a regular file", NULL),
	CLI_CASE(NULL, "$MW generate -m $F/m2.bin -n 2 --ids --sparsity-map=$F/map.txt", 2,
		 "map.txt: line 3: the map was calibrated on the model 'act=relu", "this model is"),
	CLI_CASE(NULL, "$MW generate -m $F/silu.bin -n 2 --ids --sparsity-map=$F/map.txt", 2,
		 "map.txt: line 3", "another FFN activation"),
	CLI_CASE(NULL, "$MW generate -m $F/m.bin -n 2 --ids --sparsity-map=$F/map.txt", 0,
		 "", NULL),
	CLI_CASE("sed '2s/tokens [0-9]*/tokens -5/' $F/map.txt > x.map",
		 "$MW generate -m $F/m.bin -n 2 --ids --sparsity-map=x.map", 2, "'tokens' is '-5'", NULL),
	CLI_CASE("sed '2s/tokens [0-9]*/tokens 0/' $F/map.txt > x.map",
		 "$MW generate -m $F/m.bin -n 2 --ids --sparsity-map=x.map", 2, "'tokens' is '0'", NULL),
	CLI_CASE("sed '2s/tokens [0-9]*/tokens 99999999999999999999999/' $F/map.txt > x.map",
		 "$MW generate -m $F/m.bin -n 2 --ids --sparsity-map=x.map", 2,
		 "'tokens' is '99999999999999999999999'", NULL),
	CLI_CASE("sed '1s/ 2$/ 1/; 3d' $F/map.txt > x.map",
		 "$MW generate -m $F/m.bin -n 2 --ids --sparsity-map=x.map", 2, "version 1 map", NULL),
	CLI_CASE("sed '3s/fnv=/fnv=0/' $F/map.txt > x.map",
		 "$MW generate -m $F/m.bin -n 2 --ids --sparsity-map=x.map", 2, "line 3", "calibrated on"),
	/* 8, 21: the simulated PMU's script: a FIFO, a device, a folder */
	CLI_CASE("mkfifo s", "MEMWALL_COUNTERS=sim MEMWALL_SIM_SCRIPT=s timeout 5 $MW doctor >/dev/null", 0,
		 "s: sim script: not a regular file", NULL),
	CLI_CASE(NULL, "MEMWALL_COUNTERS=sim MEMWALL_SIM_SCRIPT=/dev/zero timeout 5 $MW doctor >/dev/null",
		 0, "/dev/zero: sim script: not a regular file", NULL),
	CLI_CASE("mkdir s", "MEMWALL_COUNTERS=sim MEMWALL_SIM_SCRIPT=s timeout 5 $MW doctor >/dev/null", 0,
		 "s: sim script: not a regular file", NULL),
	/* 9: SIGTERM during a long prefill (a 65536-token context): an incomplete record, soon.
	 * "-incomplete" proves the stop cut the run short; the bound on the seconds it took after
	 * SIGTERM is a hang detector (30 s: a loaded 2-core machine delayed it past 3 s), not a
	 * speed limit. timeout(1) passes the SIGTERM on, and ends the run after 120 s should this
	 * test be killed before it sends one (an orphaned run went on for minutes) */
	CLI_CASE("printf '{\"name\": \"longctx\", \"model\": {\"format\": \"llama2c\", \"synth\": "
		 "{\"shape\": \"stories260K\", \"seed\": 42}}, \"tokenizer\": null, \"engine\": "
		 "{\"kind\": \"builtin\", \"threads\": 1, \"context\": 65536}, \"decode_tokens\": 4, "
		 "\"runs\": 1, \"warmup_runs\": 0, \"counters\": {\"dram\": \"off\", \"energy\": "
		 "\"off\"}, \"idle_baseline_ms\": 2}' > p.json",
		 "MEMWALL_CACHE_DIR=$F/cache timeout -k 5 120 $MW run p.json -o out >/dev/null 2>&1 & "
		 "pid=$!; sleep 3; "
		 "kill -TERM $pid; s=$(date +%s); wait $pid; e=$(date +%s); "
		 "[ $((e - s)) -le 30 ] && echo stopped-soon; ls out", 0, "stopped-soon",
		 "-incomplete.json"),
	/* 21: numbers with a leading zero are decimal */
	CLI_CASE(NULL, "$MW generate -m $F/m.bin -n 010 --ids", 0, "10 tokens", NULL),
	CLI_CASE(NULL, "$MW generate -m $F/m.bin -n 09 --ids", 0, "9 tokens", NULL),
	CLI_CASE(NULL, "$MW generate -m $F/m.bin -n ' 9' --ids", 2, "-n", NULL),
	/* 17: the SQLite store: another program's file, missing paths, empty and unset
	 * locations, edited rows, wildcards, long filters, dates that are not */
	CLI_CASE("$T sql other.db 'CREATE TABLE notes (x)'",
		 "$MW db --db other.db list; r=$?; $T sql other.db 'SELECT COUNT(*) FROM sqlite_master'; "
		 "exit $r", 2, "holds 1 tables of another program (notes)", "row: 1\n"),
	CLI_CASE("$T sql other.db 'CREATE TABLE notes (x)'",
		 "$MW db --db other.db import $F/rec.json", 2, "not a results store", NULL),
	/* exit 3, "the store cannot be opened", as db --help says (issue 44: was 2) */
	CLI_CASE(NULL, "$MW db --db none.db list; r=$?; [ -e none.db ] || echo not-created; exit $r",
		 3, "no results store here", "not-created"),
	CLI_CASE(NULL, "$MW db --db '' list", 2, "--db: is empty", NULL),
	CLI_CASE(NULL, "env -u HOME -u XDG_DATA_HOME -u MEMWALL_DB $MW db import $F/rec.json; r=$?; "
		 "ls -A; exit $r", 2, "HOME and XDG_DATA_HOME are unset", NULL),
	CLI_CASE(NULL, "env -u MEMWALL_DB XDG_DATA_HOME=$PWD/$(printf 'a%.0s' $(seq 1 5000)) "
		 "$MW db import $F/rec.json", 2, "is too long", NULL),
	CLI_CASE("$MW db --db s.db import $F/rec.json >/dev/null && "
		 "$T sql s.db \"UPDATE records SET document = '{}'\"",
		 "$MW db --db s.db show $(sha256sum $F/rec.json | cut -c1-12)", 3, "is missing", NULL),
	CLI_CASE("$MW db --db s.db import $F/rec.json >/dev/null",
		 "$MW db --db s.db query --machine % --format json", 0, "[]", NULL),
	CLI_CASE("$MW db --db s.db import $F/rec.json >/dev/null",
		 "$MW db --db s.db query --machine Test_CPU --format json", 0, "[]", NULL),
	CLI_CASE("$MW db --db s.db import $F/rec.json >/dev/null",
		 "$MW db --db s.db query --machine 'test cpu' --format json", 0, "\"Test CPU\"", NULL),
	CLI_CASE("sed \"s/\\\"Test CPU\\\"/\\\"$(printf 'a%.0s' $(seq 1 300))\\\"/\" $F/rec.json > r.json && "
		 "$MW db --db s.db import r.json >/dev/null",
		 "$MW db --db s.db query --machine \"$(printf 'a%.0s' $(seq 1 300))Z\" --format json",
		 0, "[]", NULL),
	CLI_CASE("$MW db --db s.db import $F/rec.json >/dev/null",
		 "$MW db --db s.db query --since yesterday", 2, "--since", "not an ISO 8601 date"),
	CLI_CASE("$MW db --db s.db import $F/rec.json >/dev/null",
		 "$MW db --db s.db compare --until 2026-13-45", 2, "--until", "not an ISO 8601 date"),
	CLI_CASE("$MW db --db s.db import $F/rec.json >/dev/null",
		 "$MW db --db s.db query --since 2000-01-01T00:00:00Z --format json", 0, "Test CPU", NULL),
	/* 14: compare's JSON and JUnit with multibyte text cut in buffers, non-UTF-8 paths */
#define LONGCPU "sed \"s/\\\"Test CPU\\\"/\\\"x$(printf '\\303\\251%.0s' $(seq 1 150))\\\"/\" $F/rec.json > b.json"
	CLI_CASE(LONGCPU, "$MW compare b.json $F/rec.json --force --format json > o.json; "
		 "$T jsonok o.json", 0, "json-ok differences=1", NULL),
	CLI_CASE(LONGCPU, "$MW compare b.json $F/rec.json --force --format junit > o.xml; "
		 "$T utf8ok o.xml", 0, "utf8-ok", NULL),
	CLI_CASE(LONGCPU, "$MW compare b.json $F/rec.json --format junit > o.xml; $T utf8ok o.xml",
		 0, "utf8-ok", NULL),
	CLI_CASE("cp $F/rec.json \"$(printf 'a\\377.json')\"",
		 "$MW compare \"$(printf 'a\\377.json')\" $F/rec.json --format json > o.json; "
		 "$T jsonok o.json", 0, "json-ok differences=0 metrics=", NULL),
	CLI_CASE("cp $F/rec.json \"$(printf 'a\\377.json')\"",
		 "$MW compare \"$(printf 'a\\377.json')\" $F/rec.json --format junit > o.xml; "
		 "$T utf8ok o.xml", 0, "utf8-ok", NULL),
	/* 16: the memory preflight counts the KV cache (49 MiB available) */
#define SMALLMEM "printf 'MemTotal: 1000000 kB\\nMemAvailable: 50176 kB\\n' > mi"
	CLI_CASE(SMALLMEM, "MEMWALL_MEMINFO=mi $MW generate -m $F/m.bin -n 2 --ids --context 1048576",
		 3, "its KV cache", "MiB available"),
	CLI_CASE(SMALLMEM, "MEMWALL_MEMINFO=mi $MW generate -m $F/m.bin -n 2 --ids --context 1048576 "
		 "--kv f16", 3, "its KV cache", NULL),
	CLI_CASE(SMALLMEM, "MEMWALL_MEMINFO=mi $MW generate -m $F/m.bin -n 2 --ids --context 100", 0,
		 "2 tokens", NULL),
	/* 20: import-aios names the input's field, and refuses what no run can be */
#define AIOS(expr) "sed '" expr "' $D/aios/imc0-timings.json > a.json"
	CLI_CASE(AIOS("s/\"model\": \"[^\"]*\"/\"model\": \"\"/"), "$MW import-aios a.json -o r.json", 2,
		 "model", "must not be empty"),
	CLI_CASE(AIOS("s/\"event\": \"[^\"]*\"/\"event\": \"\"/"), "$MW import-aios a.json -o r.json", 2,
		 "event", "must not be empty"),
	CLI_CASE(AIOS("0,/\"tokens\": 200/s//\"tokens\": 1000000000/"), "$MW import-aios a.json -o r.json",
		 2, "runs[0].tokens", "more than the 200 tokens requested"),
	CLI_CASE(AIOS("s/\"warmup_runs\": 1/\"warmup_runs\": -3/"), "$MW import-aios a.json -o r.json",
		 2, "warmup_runs: must be 0 or more", NULL),
	CLI_CASE(NULL, "$MW import-aios $D/aios/imc0-timings.json -o r.json && $MW validate r.json", 0,
		 "valid", NULL),
	/* ---- issue 43 (b): the cgroup quota reader, generate --switch-at and --logits, the hash
	 * cache, tokenize's JSON. Numbers are the issue's classes. */
#define CGV2(dir) "mkdir -p c/proc/self \"c/sys/fs/cgroup/" dir "\" && printf '0::/%s\\n' \"" \
		  dir "\" > c/proc/self/cgroup && printf '30 23 0:26 / /sys/fs/cgroup rw - cgroup2 " \
		  "cgroup2 rw\\n' > c/proc/self/mountinfo"
#define RAWESC "; grep -q \"$(printf '\\033')\" o && echo raw-escape || echo no-raw-escape"
	/* 1: a quota file that cannot be read is said to be, nothing of it copied */
	CLI_CASE(CGV2("") " && mkfifo c/sys/fs/cgroup/cpu.max",
		 "MEMWALL_CGROUP_ROOT=$PWD/c timeout 5 $MW doctor | grep cpus:", 0,
		 "/sys/fs/cgroup/cpu.max: cannot read this CPU quota file", "it is a FIFO"),
	CLI_CASE(CGV2("") " && ln -s /dev/zero c/sys/fs/cgroup/cpu.max",
		 "MEMWALL_CGROUP_ROOT=$PWD/c timeout 5 $MW doctor | grep cpus:", 0,
		 "cannot read this CPU quota file", "it is a character device"),
	/* 21: the cgroup's path and its quota file's text on doctor's cpus line, escaped; 18's
	 * rule for the JSON (bytes that are not UTF-8) */
	CLI_CASE(CGV2("a$(printf '\\033')[2Jb") " && printf '50000 100000\\n' > "
		 "\"c/sys/fs/cgroup/a$(printf '\\033')[2Jb/cpu.max\"",
		 "MEMWALL_CGROUP_ROOT=$PWD/c $MW doctor > o; grep cpus: o" RAWESC, 0,
		 "quota of 0.50 (/sys/fs/cgroup/a\\e[2Jb/cpu.max)", "no-raw-escape"),
	CLI_CASE(CGV2("") " && printf '\\033]0;pwn\\007 100000\\n' > c/sys/fs/cgroup/cpu.max",
		 "MEMWALL_CGROUP_ROOT=$PWD/c $MW doctor > o; grep cpus: o" RAWESC, 0,
		 "\"\\e]0;pwn\\x07 100000\" is not a CPU quota", "no-raw-escape"),
	CLI_CASE(CGV2("a$(printf '\\377')b") " && printf '50000 100000\\n' > "
		 "\"c/sys/fs/cgroup/a$(printf '\\377')b/cpu.max\"",
		 "MEMWALL_CGROUP_ROOT=$PWD/c $MW doctor --json > o.json; $T jsonok o.json; "
		 "grep -c '\"quota_source\": \"/sys/fs/cgroup/a' o.json", 0, "json-ok", "\n1\n"),
	/* 17: --switch-at is --load overlap's alone */
#define GEN "$MW generate -m m.bin -n 2 --ids --prompt-ids 1,5 "
#define GEN_SETUP "cp $F/m.bin ."
	CLI_CASE(GEN_SETUP, GEN "--switch-at 1 --load mmap", 2, "--switch-at 1: --load mmap has no "
		 "image to switch to", NULL),
	CLI_CASE(GEN_SETUP, GEN "--switch-at 1 --load repack", 2, "--load repack has no image", NULL),
	CLI_CASE(GEN_SETUP, GEN "--switch-at 1 --load huge-copy", 2, "--load huge-copy has no image",
		 NULL),
	CLI_CASE(GEN_SETUP, GEN "--switch-at 1 --batch 2", 2, "--switch-at 1 is --load overlap's",
		 NULL),
	CLI_CASE(GEN_SETUP, GEN "--switch-at 1 --speculate lookup", 2,
		 "--switch-at 1 is --load overlap's", NULL),
	CLI_CASE(GEN_SETUP " && printf 'ids:1,5\\n' > p.txt", "$MW generate -m m.bin -n 2 --ids "
		 "--prompts p.txt --switch-at 1", 2, "--switch-at 1 is --load overlap's", NULL),
	CLI_CASE(GEN_SETUP, GEN "--switch-at 1 --load overlap", 0, "2 tokens", NULL),
	CLI_CASE(GEN_SETUP, GEN "--switch-at 1", 0, "2 tokens", NULL),
	/* 2: --logits naming an input of the same command (the model, by name or link) */
#define INTACT "; r=$?; cmp m.bin $F/m.bin && echo model-intact; exit $r"
	CLI_CASE(GEN_SETUP, GEN "--logits m.bin" INTACT, 2, "--logits m.bin is also the model (-m)",
		 "model-intact"),
	CLI_CASE(GEN_SETUP " && ln m.bin hard.bin", GEN "--logits hard.bin --force" INTACT, 2,
		 "--logits hard.bin is also the model (-m)", "model-intact"),
	CLI_CASE(GEN_SETUP " && ln -s m.bin link.bin", GEN "--logits link.bin --force" INTACT, 2,
		 "--logits link.bin is also the model (-m)", "model-intact"),
	/* 8: a FIFO, a device, a folder */
	CLI_CASE(GEN_SETUP " && mkfifo f", "timeout 5 " GEN "--logits f --force", 2,
		 "--logits f: is a FIFO", NULL),
	CLI_CASE(GEN_SETUP, GEN "--logits /dev/null --force", 2,
		 "--logits /dev/null: is a character device", NULL),
	CLI_CASE(GEN_SETUP " && mkdir d", GEN "--logits d --force", 2, "--logits d: is a directory",
		 NULL),
	/* 20: an existing file only with --force; 18: the model's path escaped as a record's */
	CLI_CASE(GEN_SETUP " && echo keep > l.json", GEN "--logits l.json; r=$?; cat l.json; exit $r",
		 2, "--logits l.json: exists: give --force", "keep"),
	CLI_CASE(GEN_SETUP " && echo keep > l.json", GEN "--logits l.json --force && $T jsonok l.json",
		 0, "json-ok", NULL),
	CLI_CASE("cp $F/m.bin \"$(printf 'm\\377\\001.bin')\"", "$MW generate -m \"$(printf "
		 "'m\\377\\001.bin')\" -n 2 --ids --prompt-ids 1,5 --logits l.json && $T jsonok l.json "
		 "&& grep -c '\"model\": \"m\xef\xbf\xbd\\\\u0001.bin\"' l.json", 0, "json-ok", "\n1\n"),
	/* 24: a dangling link is not followed (its target never created) */
	CLI_CASE(GEN_SETUP " && ln -s nowhere l.json", GEN "--logits l.json --force; r=$?; "
		 "[ -e nowhere ] || echo target-not-created; exit $r", 2,
		 "--logits l.json: is a symbolic link", "target-not-created"),
	/* 5: what sits at the hash cache's path never blocks a run, and is left as it is; 22: a
	 * model.sha256 pin against a model changed in place with its size and mtime put back */
#define PINPROTO GEN_SETUP " && touch -d @1700000000 m.bin && printf '{\"name\": \"pin\", " \
	"\"model\": {\"format\": \"llama2c\", \"path\": \"m.bin\", \"sha256\": \"%s\"}, " \
	"\"tokenizer\": null, \"engine\": {\"kind\": \"builtin\", \"threads\": 1}, \"decode_tokens\": " \
	"2, \"runs\": 1, \"warmup_runs\": 0, \"counters\": {\"dram\": \"off\", \"energy\": \"off\"}, " \
	"\"idle_baseline_ms\": 2}' $(sha256sum m.bin | cut -c1-64) > p.json && mkdir st"
	CLI_CASE(PINPROTO " && mkfifo st/sha256-cache.tsv", "MEMWALL_STATE_DIR=$PWD/st timeout -k 1 8 $MW "
		 "run p.json -o out >/dev/null; [ -p st/sha256-cache.tsv ] && echo fifo-left", 0,
		 "sha256 of m.bin computed", "fifo-left"),
	CLI_CASE(PINPROTO " && ln -s /dev/zero st/sha256-cache.tsv", "MEMWALL_STATE_DIR=$PWD/st "
		 "timeout -k 1 8 $MW run p.json -o out >/dev/null; [ -L st/sha256-cache.tsv ] && "
		 "echo link-left", 0, "sha256 of m.bin computed", "link-left"),
	CLI_CASE(PINPROTO " && MEMWALL_STATE_DIR=$PWD/st $MW run p.json -o out >/dev/null 2>&1",
		 "printf memwall-tampered | dd of=m.bin bs=1 seek=$(($(stat -c %s m.bin) - 100)) "
		 "conv=notrunc 2>/dev/null; touch -d @1700000000 m.bin; "
		 "MEMWALL_STATE_DIR=$PWD/st $MW run p.json -o out2", 2, "model.sha256",
		 "the protocol pins"),
	/* 21: a vocabulary's C1 control, bidi override and DEL in tokenize's JSON, as \u escapes
	 * (a llama2.c tokenizer.bin: max length 8, then score, length, bytes per piece) */
#define PIECE(len, bytes) "\\000\\000\\000\\000\\00" #len "\\000\\000\\000" bytes
	CLI_CASE("printf '\\010\\000\\000\\000" PIECE(5, "<unk>") PIECE(3, "<s>") PIECE(4, "</s>")
		 PIECE(1, "a") PIECE(2, "\\302\\233") PIECE(3, "\\342\\200\\256") PIECE(1, "\\177")
		 "' > t.bin",
		 "$MW tokenize -m t.bin --format json --text \"$(printf 'a\\302\\233\\342\\200\\256"
		 "\\177')\" > o; cat o; grep -q \"$(printf '\\302\\233')\" o && echo raw-c1 || "
		 "echo no-raw-c1", 0, "\"pieces\":[\"a\",\"\\u009b\",\"\\u202e\",\"\\u007f\"]",
		 "no-raw-c1"),
	/* issue 43, class 3: a FIFO in a recorded sysfs tree is refused, never blocked on */
	CLI_CASE("mkdir -p t/bus/event_source/devices/p/format && mkfifo t/bus/event_source/devices/p/type",
		 "timeout 10 $MW doctor --sysfs t", 0, "p/type: is a FIFO", "not a regular file"),
	CLI_CASE("mkdir -p t/bus/event_source/devices/p/format && echo 30 > t/bus/event_source/devices/p/type "
		 "&& mkfifo t/bus/event_source/devices/p/format/event",
		 "timeout 10 $MW doctor --sysfs t", 0, "p/format/event: is a FIFO", NULL),
	CLI_CASE("mkdir -p t/bus/event_source/devices t/devices/system/edac/mc/mc0/dimm0 && "
		 "mkfifo t/devices/system/edac/mc/mc0/mc_name t/devices/system/edac/mc/mc0/dimm0/dimm_location",
		 "timeout 10 $MW doctor --sysfs t | grep 'memory channels'", 0,
		 "memory channels: 0 populated (EDAC dimm_location)", NULL),
	CLI_CASE(SIMV " && mkdir -p t/bus/event_source && cp -r $MEMWALL_SYSFS_ROOT/bus/event_source/devices "
		 "t/bus/event_source/ && rm t/bus/event_source/devices/uncore_imc_free_running_1/cpumask "
		 "&& mkfifo t/bus/event_source/devices/uncore_imc_free_running_1/cpumask",
		 "timeout 20 $MW verify --no-perf --size 0.001 --idle-ms 1 --sysfs t", 3,
		 "uncore_imc_free_running_1/cpumask: is a FIFO", NULL),
	/* class 9: more DRAM instances than the 128 memwall counts: refused, naming both, and
	 * not passed over for the CMN mesh beside them */
	/* (one mkdir, then shell builtins only: 200 PMUs in well under the case's 10 s; the
	 * suffixes 1000..1199 are hex digits) */
	CLI_CASE("d=t/bus/event_source/devices; n=$(seq 1000 1199); "
		 "mkdir -p $(for i in $n; do echo $d/arm_dmc620_$i/format $d/arm_dmc620_$i/events; done); "
		 "for i in $n; do p=$d/arm_dmc620_$i; "
		 "echo 42 > $p/type; echo 0 > $p/cpumask; echo config:0-44 > $p/format/mask; "
		 "echo config1:0-44 > $p/format/match; echo config2:3-8 > $p/format/event; "
		 "echo config2:9 > $p/format/clkdiv2; echo event=0x12,clkdiv2=0x1 > $p/events/clkdiv2_rdwr; "
		 "done; mkdir -p $d/arm_cmn_0/format $d/arm_cmn_0/events && echo 43 > $d/arm_cmn_0/type && "
		 "echo config:0-15 > $d/arm_cmn_0/format/type && echo config:16-26 > $d/arm_cmn_0/format/eventid "
		 "&& echo type=0x5,eventid=0xd > $d/arm_cmn_0/events/hnf_mc_reqs",
		 "$MW doctor --sysfs t | grep '^DRAM:'", 0,
		 "DRAM:        NOT AVAILABLE: arm_dmc620: 200 arm_dmc620_<hex> PMUs, more than the 128 "
		 "instances", NULL),
	/* class 4: a FIFO where the verification store is */
	CLI_CASE(SIMV " && mkfifo st/verification.json",
		 "timeout 20 $MW verify --no-perf --size 0.001 --idle-ms 1", 3, "st/verification.json",
		 "is a FIFO"),
	/* class 19: verify -o replaces only a regular file that is not the store */
	CLI_CASE(SIMV, "$MW verify --no-perf --size 0.001 --idle-ms 1 -o st/verification.json", 2,
		 "is the verification store", NULL),
	CLI_CASE(SIMV " && mkfifo f", "timeout 20 $MW verify --no-perf --size 0.001 --idle-ms 1 -o f; "
		 "echo rc=$?; test -p f && echo still-a-fifo", 0, "is a FIFO", "still-a-fifo"),
	CLI_CASE(SIMV " && ln -s nowhere l", "$MW verify --no-perf --size 0.001 --idle-ms 1 -o l; "
		 "echo rc=$?; ls nowhere 2>/dev/null || echo not-created", 0, "is a symbolic link",
		 "not-created"),
	/* class 21: record text in report's and db show's "counts ... bytes (the BACKEND backend"
	 * line and report's footnote, escaped (and no raw control byte anywhere: utf8ok) */
	CLI_CASE("$T jset $F/rec.json r.json 'counters.dram.backend=\"intel\\u001b]0;pwn\\u0007imc\"'",
		 "$MW report r.json >o 2>&1; $T utf8ok o && grep -o 'the intel.e]0;pwn.x07imc backend' o", 0,
		 "the intel\\e]0;pwn\\x07imc backend", "utf8-ok"),
	CLI_CASE("$T jset $F/rec.json r.json 'counters.dram.backend=\"intel\\u001b]0;pwn\\u0007imc\"' "
		 "derive && $MW db --db s.db import r.json >/dev/null",
		 "$MW db --db s.db show $(sha256sum r.json | cut -c1-12) >o 2>&1; $T utf8ok o && "
		 "grep -o 'the intel.e]0;pwn.x07imc backend' o", 0, "the intel\\e]0;pwn\\x07imc backend",
		 "utf8-ok"),
	CLI_CASE("$T jset $F/rec.json r.json 'counters.dram={\"measured\":false,\"reason\":\"no\\u001b[2Jcounters\"}'",
		 "$MW report r.json >o 2>&1; $T utf8ok o && grep -o '^.1. no.e.2Jcounters' o", 0,
		 "[1] no\\e[2Jcounters", "utf8-ok"),
	/* class 21: PMU directory names in doctor's list (a shared tree) */
	CLI_CASE("mkdir -p \"t/bus/event_source/devices/$(printf 'x\\033]0;pwn\\007y')\"",
		 "$MW doctor --sysfs t >o 2>&1; $T utf8ok o && grep -o ' x.e]0;pwn.x07y' o", 0,
		 "x\\e]0;pwn\\x07y", "utf8-ok"),
	/* class 15: db import checks what validate checks */
	CLI_CASE("$T jset $F/rec.json r.json 'machine.cpu_quota={\"cpus\":-1}'",
		 "$MW db --db s.db import r.json", 1, "machine.cpu_quota.cpus", "positive number"),
};

/* ---- .hex files: binary inputs written as text (tests/data/bad/README.md) ---------------- */

struct bytes {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct bytes *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void put_le(struct bytes *b, uint64_t v, unsigned size)
{
	for (unsigned i = 0; i < size; i++) {
		uint8_t byte = (uint8_t)(v >> (8 * i));
		put(b, &byte, 1);
	}
}

/* One token of a .hex file: "text", TYPE:VALUE, zeros:N or align:N. 0 or -EINVAL. */
static int hex_token(struct bytes *b, const char *tok)
{
	static const struct {
		const char *name;
		unsigned size;
		bool is_signed;
	} ints[] = { { "u8", 1, false },  { "u16", 2, false }, { "u32", 4, false },
		     { "i32", 4, true },  { "u64", 8, false }, { "i64", 8, true } };
	const char *colon = strchr(tok, ':');
	char *end = NULL;
	if (!colon)
		return -EINVAL;
	size_t n = (size_t)(colon - tok);
	const char *v = colon + 1;
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		if (strlen(ints[i].name) != n || strncmp(tok, ints[i].name, n))
			continue;
		errno = 0;
		uint64_t x = ints[i].is_signed ? (uint64_t)strtoll(v, &end, 0) : strtoull(v, &end, 0);
		if (errno || *end || end == v)
			return -EINVAL;
		put_le(b, x, ints[i].size);
		return 0;
	}
	if (n == 3 && !strncmp(tok, "f32", 3)) {
		float f = strtof(v, &end);
		uint32_t bits;
		memcpy(&bits, &f, 4);
		put_le(b, bits, 4);
		return *end || end == v ? -EINVAL : 0;
	}
	unsigned long count = strtoul(v, &end, 0);
	if (*end || end == v)
		return -EINVAL;
	if (n == 5 && !strncmp(tok, "zeros", 5)) {
		while (count--)
			put_le(b, 0, 1);
		return 0;
	}
	if (n == 5 && !strncmp(tok, "align", 5) && count) {
		while (b->len % count)
			put_le(b, 0, 1);
		return 0;
	}
	return -EINVAL;
}

/* Compiles a .hex file; exits the test on a malformed one (a broken fixture is our bug). */
static uint8_t *hex_load(const char *path, size_t *len)
{
	struct bytes b = { 0 };
	char line[1024];
	int lineno = 0;
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		lineno++;
		for (;;) {
			p += strspn(p, " \t\r\n");
			if (!*p || *p == '#')
				break;
			if (*p == '"') {
				char *q = strchr(p + 1, '"');
				if (!q)
					goto bad;
				put(&b, p + 1, (size_t)(q - p - 1));
				p = q + 1;
				continue;
			}
			size_t n = strcspn(p, " \t\r\n#");
			char tok[128];
			if (n >= sizeof(tok))
				goto bad;
			memcpy(tok, p, n);
			tok[n] = '\0';
			if (hex_token(&b, tok))
				goto bad;
			p += n;
		}
	}
	fclose(f);
	*len = b.len;
	return b.p ? b.p : calloc(1, 1);
bad:
	fprintf(stderr, "%s:%d: not in the .hex notation: %s", path, lineno, line);
	exit(1);
}

static uint8_t *load_input(const struct bad_case *c, size_t *len)
{
	const char *path = t_data(c->file);
	size_t n = strlen(path);
	uint8_t *b;
	if (n > 4 && !strcmp(path + n - 4, ".hex")) {
		b = hex_load(path, len);
	} else {
		int fd = open(path, O_RDONLY);
		if (fd < 0) {
			perror(path);
			exit(1);
		}
		b = (uint8_t *)t_slurp_fd(fd);
		close(fd);
		*len = strlen((char *)b);
	}
	if (c->cut >= 0) {
		T_ASSERT((size_t)c->cut < *len); /* a cut that keeps everything tests nothing */
		*len = (size_t)c->cut;
	}
	return b;
}

/* The bytes as a file, for loaders that take a path: a memfd, named /proc/self/fd/N. The
 * caller closes *fd. */
static const char *as_file(const uint8_t *b, size_t len, int *fd)
{
	static char path[64];
	*fd = memfd_create("memwall-badinput", MFD_CLOEXEC);
	if (*fd < 0 || write(*fd, b, len) != (ssize_t)len) {
		perror("memfd");
		exit(1);
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", *fd);
	return path;
}

/* ---- one runner per format --------------------------------------------------------------- */

struct outcome {
	int rc;
	char source[512];
	char field[128];   /* "" where the error has no field */
	char text[4096];
};

static void from_eng(struct outcome *o, int rc, const struct eng_error *e)
{
	o->rc = rc;
	snprintf(o->source, sizeof(o->source), "%s", e->source);
	snprintf(o->text, sizeof(o->text), "%s", e->text);
}

static void from_mw(struct outcome *o, int rc, const struct mw_error *e)
{
	o->rc = rc;
	snprintf(o->source, sizeof(o->source), "%s", e->source);
	snprintf(o->field, sizeof(o->field), "%s", e->field);
	snprintf(o->text, sizeof(o->text), "%s", e->text);
}

static void run_llama2c(const struct bad_case *c, struct outcome *o)
{
	size_t len;
	int fd;
	uint8_t *b = load_input(c, &len);
	const char *path = as_file(b, len, &fd);
	struct eng_model *m = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	from_eng(o, eng_model_open(&m, path, NULL, &err), &err);
	T_ASSERT(m == NULL);
	T_EQ_STR(err.source, path);
	eng_model_close(m);
	close(fd);
	free(b);
}

static void run_gguf(const struct bad_case *c, struct outcome *o)
{
	size_t len;
	uint8_t *b = load_input(c, &len);
	struct eng_gguf *g = NULL;
	struct eng_error err;
	/* through the path, as a user's model is opened */
	int fd;
	const char *path = as_file(b, len, &fd);
	eng_error_clear(&err);
	from_eng(o, eng_gguf_open(&g, path, NULL, &err), &err);
	T_ASSERT(g == NULL);
	T_EQ_STR(err.source, path);
	eng_gguf_close(g);
	close(fd);
	free(b);
}

static void run_tokenizer(const struct bad_case *c, struct outcome *o)
{
	size_t len;
	int fd;
	uint8_t *b = load_input(c, &len);
	const char *path = as_file(b, len, &fd);
	struct eng_tokenizer *t = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	from_eng(o, eng_tokenizer_open(&t, path, atoi(c->arg), &err), &err);
	T_ASSERT(t == NULL);
	T_EQ_STR(err.source, path);
	eng_tokenizer_close(t);
	close(fd);
	free(b);
}

static void run_protocol(const struct bad_case *c, struct outcome *o)
{
	const char *path = t_data(c->file);
	struct mw_protocol *p = NULL;
	struct mw_error err;
	mw_error_clear(&err);
	from_mw(o, mw_protocol_load(&p, path, MW_PROTOCOL_CHECK_FILES, &err), &err);
	T_ASSERT(p == NULL);
	T_EQ_STR(err.source, path);
	mw_protocol_free(p);
}

/* Sets the value at a path such as "runs[2].figures.tok_per_s" ("a.b", "a[i]") to v (stolen). */
static int json_set_path(json_t *doc, const char *path, json_t *v)
{
	json_t *at = doc;
	char key[128];
	const char *p = path;
	for (;;) {
		size_t n = strcspn(p, ".[");
		if (n >= sizeof(key))
			break;
		memcpy(key, p, n);
		key[n] = '\0';
		p += n;
		long idx = -1;
		if (*p == '[') {
			char *end;
			idx = strtol(p + 1, &end, 10);
			p = end + 1; /* past ']' */
		}
		bool last = !*p;
		if (idx < 0 && last)
			return json_object_set_new(at, key, v);
		at = json_object_get(at, key);
		if (idx >= 0) {
			if (last)
				return json_array_set_new(at, (size_t)idx, v);
			at = json_array_get(at, (size_t)idx);
		}
		if (!at || *p != '.')
			break;
		p++;
	}
	json_decref(v);
	return -1;
}

static void run_result(const struct bad_case *c, struct outcome *o)
{
	static const struct t_fx_spec spec = {
		.protocol = "badinput", .cpu = "Test CPU", .runs = 4, .warmups = 1, .tokens = 8,
		.latency_ns = 20e6, .jitter = 0.02, .dram_bytes = 4e8, .instances = 2, .seed = 9,
	};
	char dir[64], path[256];
	json_t *doc = t_fx_record(&spec);
	t_scratch(dir, sizeof(dir), "badinput");
	if (c->arg) {
		const char *eq = strchr(c->arg, '=');
		char where[256];
		snprintf(where, sizeof(where), "%.*s", (int)(eq - c->arg), c->arg);
		json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
		T_ASSERT(v != NULL);
		if (json_set_path(doc, where, v))
			T_FAIL_AT(__FILE__, __LINE__, "no field %s in the fixture record", where);
	}
	char *text = json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
	size_t len = strlen(text);
	if (c->cut >= 0 && (size_t)c->cut < len)
		len = (size_t)c->cut;
	snprintf(path, sizeof(path), "%s/record.json", dir);
	FILE *f = fopen(path, "w");
	if (!f || fwrite(text, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
	const char *argv[] = { "memwall", "validate", path, NULL };
	struct t_output out = t_run(argv);
	o->rc = out.status;
	snprintf(o->source, sizeof(o->source), "%s", path);
	snprintf(o->text, sizeof(o->text), "%s", out.err ? out.err : "");
	T_CONTAINS(out.err, path);
	t_output_free(&out);
	unlink(path);
	rmdir(dir);
	free(text);
	json_decref(doc);
}

static void run_sysfs(const struct bad_case *c, struct outcome *o)
{
	struct prb_system *sys = NULL;
	struct prb_error err = { 0 };
	char root[4096], pmu_name[64];
	const char *bar = strchr(c->arg, '|');
	snprintf(root, sizeof(root), "%s", t_data(c->file));
	snprintf(pmu_name, sizeof(pmu_name), "%.*s", bar ? (int)(bar - c->arg) : 63, c->arg);
	T_EQ_INT(prb_system_open(&sys, root, &err), 0);
	const struct prb_pmu *pmu = sys ? prb_system_pmu_find(sys, pmu_name) : NULL;
	T_ASSERT(pmu != NULL);
	if (pmu) {
		struct perf_event_attr attr;
		o->rc = prb_pmu_encode(pmu, bar ? bar + 1 : "event=0x1", &attr, &err);
		/* a malformed file is the PMU's problem; a bad encoding is the call's error */
		const struct prb_error *e = pmu->problem.text[0] ? &pmu->problem : &err;
		snprintf(o->source, sizeof(o->source), "%s", e->source);
		snprintf(o->text, sizeof(o->text), "%s", e->text);
	}
	prb_system_close(sys);
}

static void run_adapter(const struct bad_case *c, struct outcome *o)
{
	size_t len;
	char name[64], pattern[256] = "";
	uint8_t *b = load_input(c, &len);
	const char *bar = strchr(c->arg, '|');
	snprintf(name, sizeof(name), "%.*s", bar ? (int)(bar - c->arg) : (int)strlen(c->arg),
		 c->arg);
	if (bar)
		snprintf(pattern, sizeof(pattern), "%s", bar + 1);
	struct mw_adapter_opts opts = { .pattern = pattern };
	struct mw_adapter_result res;
	struct mw_error err;
	mw_error_clear(&err);
	from_mw(o, mw_adapter_parse(name, (const char *)b, len, bar ? &opts : NULL, c->file, &res,
				    &err), &err);
	free(b);
}

/* A FIFO, a folder, a device or a sparse file past the size limit, in a protocol's or a
 * record's place: refused by what it is, without blocking (a FIFO with no writer would
 * block open() forever: the alarm names the case). */
static void run_special(const struct bad_case *c, struct outcome *o)
{
	char dir[64], path[256];
	struct mw_error err;
	bool record = !strcmp(c->arg, "record");
	t_scratch(dir, sizeof(dir), "badinput");
	snprintf(path, sizeof(path), "%s/%s", dir, c->file);
	if (c->file[0] == '/') {
		snprintf(path, sizeof(path), "%s", c->file);
	} else if (!strcmp(c->file, "fifo")) {
		T_EQ_INT(mkfifo(path, 0600), 0);
	} else if (!strcmp(c->file, "dir")) {
		T_EQ_INT(mkdir(path, 0700), 0);
	} else { /* "big": one byte past the limit, sparse */
		int fd = open(path, O_CREAT | O_WRONLY, 0600);
		T_EQ_INT(ftruncate(fd, (off_t)(record ? MW_RESULT_MAX_BYTES : 16u << 20) + 1), 0);
		close(fd);
	}
	mw_error_clear(&err);
	if (record) {
		json_t *doc = NULL;
		from_mw(o, mw_result_load(&doc, path, &err), &err);
		T_ASSERT(doc == NULL);
	} else {
		struct mw_protocol *p = NULL;
		from_mw(o, mw_protocol_load(&p, path, MW_PROTOCOL_CHECK_FILES, &err), &err);
		T_ASSERT(p == NULL);
	}
	T_EQ_STR(err.source, path);
	if (c->file[0] != '/') {
		if (unlink(path))
			rmdir(path);
	}
	rmdir(dir);
}

/* The command line (issue 28): file (a shell set-up, or NULL) then arg (the command) run by
 * /bin/sh -c in a fresh folder, with $MW the memwall binary, $D tests/data and $F the
 * fixtures main() made (cli_fixtures). The outcome's text is stderr, then stdout. */
static char fixtures[64];

static void run_cli(const struct bad_case *c, struct outcome *o)
{
	char dir[64], *script = NULL, cmd[300];
	t_scratch(dir, sizeof(dir), "badinput");
	if (asprintf(&script, "cd '%s' || exit 99\nexport TMPDIR='%s'\n%s\n%s", dir, dir,
		     c->file ? c->file : ":", c->arg) < 0)
		abort();
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct t_output out = t_run(argv);
	o->rc = out.status;
	snprintf(o->source, sizeof(o->source), "%s", dir);
	snprintf(o->text, sizeof(o->text), "%s%s", out.err ? out.err : "", out.out ? out.out : "");
	t_output_free(&out);
	free(script);
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
}

/* $F: a valid record (rec.json), ReLU models of one shape and two seeds (m.bin, m2.bin), a
 * SiLU one (silu.bin), a prompt file (p.txt) and a map calibrated on m.bin (map.txt). */
static void cli_fixtures(void)
{
	static const struct t_fx_spec spec = {
		.protocol = "badinput", .cpu = "Test CPU", .runs = 4, .warmups = 1, .tokens = 8,
		.latency_ns = 20e6, .jitter = 0.02, .dram_bytes = 4e8, .instances = 2, .seed = 9,
	};
	char path[256], cmd[2048];
	t_scratch(fixtures, sizeof(fixtures), "badinput-fx");
	json_t *doc = t_fx_record(&spec);
	snprintf(path, sizeof(path), "%s/rec.json", fixtures);
	T_EQ_INT(json_dump_file(doc, path, JSON_INDENT(1) | JSON_REAL_PRECISION(17)), 0);
	json_decref(doc);
	const char *bin = getenv("MEMWALL_BIN");
	if (!bin)
		t_skip("MEMWALL_BIN is not set (run under meson test)");
	setenv("MW", bin, 1);
	setenv("D", t_data(""), 1);
	setenv("F", fixtures, 1);
	snprintf(cmd, sizeof(cmd), "cd '%s' && \"$MW\" synth --shape stories260K --activation relu "
		 "--seed 3 -o m.bin && \"$MW\" synth --shape stories260K --activation relu --seed 4 "
		 "-o m2.bin && \"$MW\" synth --shape stories260K --seed 3 -o silu.bin && "
		 "printf 'ids:1,5,9\\nids:1,7\\n' > p.txt && \"$MW\" sparsity-calibrate -m m.bin "
		 "--prompts p.txt -o map.txt -n 4 ) >/dev/null 2>&1", fixtures);
	/* "cd X && a && b ) >..." needs its opening parenthesis */
	memmove(cmd + 1, cmd, strlen(cmd) + 1);
	cmd[0] = '(';
	if (system(cmd)) {
		fprintf(stderr, "cannot make the fixtures in %s\n", fixtures);
		exit(1);
	}
}

static void (*const runners[FORMAT_COUNT])(const struct bad_case *, struct outcome *) = {
	[LLAMA2C] = run_llama2c,   [GGUF] = run_gguf,     [GGUF_MODEL] = run_llama2c,
	[TOKENIZER] = run_tokenizer, [PROTOCOL] = run_protocol, [RESULT] = run_result,
	[SYSFS] = run_sysfs,       [ADAPTER] = run_adapter,  [SPECIAL] = run_special,
	[CLI] = run_cli,
};

static const char *const format_names[FORMAT_COUNT] = {
	[LLAMA2C] = "llama2c",     [GGUF] = "gguf",         [GGUF_MODEL] = "gguf-model",
	[TOKENIZER] = "tokenizer", [PROTOCOL] = "protocol", [RESULT] = "result",
	[SYSFS] = "sysfs",         [ADAPTER] = "adapter",  [SPECIAL] = "special file",
	[CLI] = "command line",
};

/* Where each format's errors name the field: in err.field where the error has one, as the
 * file at fault for sysfs (prb_error has only a source), in `memwall validate`'s stderr
 * ("memwall: SOURCE: FIELD: text") for results, in the message for the engine's errors. */
enum field_at { IN_TEXT, IN_FIELD, IN_SOURCE, IN_STDERR };
static const enum field_at field_at[FORMAT_COUNT] = {
	[LLAMA2C] = IN_TEXT,   [GGUF] = IN_TEXT,      [GGUF_MODEL] = IN_TEXT, [TOKENIZER] = IN_TEXT,
	[PROTOCOL] = IN_FIELD, [RESULT] = IN_STDERR, [SYSFS] = IN_SOURCE,    [ADAPTER] = IN_FIELD,
	[SPECIAL] = IN_FIELD,      [CLI] = IN_TEXT,
};

static bool names_field(const struct bad_case *c, const struct outcome *o)
{
	char piece[160];
	size_t n;
	switch (field_at[c->format]) {
	case IN_FIELD:
		return !strcmp(o->field, c->field);
	case IN_SOURCE:
		n = (size_t)snprintf(piece, sizeof(piece), "/%s", c->field);
		return strlen(o->source) >= n && !strcmp(o->source + strlen(o->source) - n, piece);
	case IN_STDERR:
		snprintf(piece, sizeof(piece), ": %s: ", c->field);
		return !c->field[0] || strstr(o->text, piece);
	case IN_TEXT:
		break;
	}
	return strstr(o->text, c->field) != NULL;
}

static const struct bad_case *current;

/* `test_badinput mktar OUT.tar.gz MEMBER...`, for the CLI cases' set-ups ("$T mktar ..."):
 * writes a gzip'd ustar archive no honest writer makes. MEMBER: [t=X,][p=PREFIX,]NAME[=TEXT]
 * (typeflag X, default '0'; ustar prefix PREFIX; contents TEXT, or the bytes of file FILE
 * for =@FILE), or +N for N empty members plots/e/0 ... plots/e/N-1. */
static int mktar(int argc, char **argv)
{
	gzFile gz = gzopen(argv[2], "wb");
	static const char zeros[1024];
	if (!gz)
		return 1;
	for (int i = 3; i < argc; i++) {
		long many = argv[i][0] == '+' ? atol(argv[i] + 1) : 1;
		for (long k = 0; k < many; k++) {
			unsigned char h[512] = { 0 };
			char type = '0', prefix[156] = "", name[101] = "", *text = NULL;
			const char *m = argv[i];
			size_t len = 0;
			if (argv[i][0] == '+') {
				snprintf(name, sizeof(name), "plots/e/%ld", k);
			} else {
				if (!strncmp(m, "t=", 2)) {
					type = m[2];
					m += 4;
				}
				if (!strncmp(m, "p=", 2)) {
					size_t pl = strcspn(m + 2, ",");
					snprintf(prefix, sizeof(prefix), "%.*s", (int)pl, m + 2);
					m += 3 + pl;
				}
				const char *eq = strchr(m, '=');
				snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - m) : (int)strlen(m), m);
				if (eq && eq[1] == '@') {
					int fd = open(eq + 2, O_RDONLY);
					text = fd >= 0 ? t_slurp_fd(fd) : NULL;
					if (fd >= 0)
						close(fd);
				} else if (eq) {
					text = strdup(eq + 1);
				}
				len = text ? strlen(text) : 0;
			}
			memcpy(h, name, strlen(name));
			snprintf((char *)h + 100, 8, "%07o", 0644);
			snprintf((char *)h + 108, 8, "%07o", 0);
			snprintf((char *)h + 116, 8, "%07o", 0);
			snprintf((char *)h + 124, 12, "%011o", (unsigned)len & 07777777777u);
			snprintf((char *)h + 136, 12, "%011o", 0);
			h[156] = (unsigned char)type;
			memcpy(h + 257, "ustar", 6);
			memcpy(h + 263, "00", 2);
			memcpy(h + 345, prefix, strlen(prefix));
			unsigned sum = 0;
			memset(h + 148, ' ', 8);
			for (int b = 0; b < 512; b++)
				sum += h[b];
			snprintf((char *)h + 148, 8, "%06o", sum);
			gzwrite(gz, h, 512);
			if (len)
				gzwrite(gz, text, (unsigned)len);
			if (len % 512)
				gzwrite(gz, zeros, (unsigned)(512 - len % 512));
			free(text);
		}
	}
	gzwrite(gz, zeros, sizeof(zeros));
	return gzclose(gz) == Z_OK ? 0 : 1;
}

static void on_alarm(int sig)
{
	(void)sig;
	char msg[600];
	int n = snprintf(msg, sizeof(msg), "test_badinput: a case hung for 10 s: %s %s %s\n",
			 format_names[current->format],
			 current->file ? current->file : "(generated record)",
			 current->format == CLI ? current->arg : "");
	ssize_t w = write(2, msg, n > 0 && (size_t)n < sizeof(msg) ? (size_t)n : 0);
	(void)w;
	_exit(1);
}

/* `test_badinput listen SECONDS`: a TCP server on 127.0.0.1 that accepts and never answers,
 * for SECONDS; prints its port first (the PostgreSQL connect timeout's case). */
static int listen_silent(int seconds)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 8) ||
	    getsockname(s, (struct sockaddr *)&a, &al))
		return 1;
	printf("%d\n", ntohs(a.sin_port));
	fflush(stdout);
	alarm((unsigned)seconds);
	signal(SIGALRM, SIG_DFL);
	for (;;) {
		int c = accept(s, NULL, NULL);
		(void)c; /* kept open, never answered */
	}
}

/* `test_badinput sql FILE SQL`: runs SQL on an SQLite file, printing "row: v1 v2 ..." per row
 * (another program's database, or a store edited behind memwall's back). */
static int sql_row(void *ctx, int n, char **v, char **names)
{
	(void)ctx;
	(void)names;
	fputs("row:", stdout);
	for (int i = 0; i < n; i++)
		printf(" %s", v[i] ? v[i] : "NULL");
	fputc('\n', stdout);
	return 0;
}

static int run_sql(const char *file, const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;
	if (sqlite3_open(file, &db) != SQLITE_OK || sqlite3_exec(db, sql, sql_row, NULL, &msg)) {
		fprintf(stderr, "sql: %s\n", msg ? msg : sqlite3_errmsg(db));
		sqlite3_close(db);
		return 1;
	}
	sqlite3_close(db);
	return 0;
}

/* `test_badinput jsonok FILE`: whether FILE is JSON (jansson refuses invalid UTF-8), with
 * the counts of a compare document's differences and metrics. `test_badinput utf8ok FILE`:
 * whether FILE is valid UTF-8 without a control character XML forbids. */
static int check_output(const char *what, const char *path)
{
	if (!strcmp(what, "jsonok")) {
		json_error_t je;
		json_t *d = json_load_file(path, 0, &je);
		if (!d) {
			printf("not JSON: %s\n", je.text);
			return 1;
		}
		printf("json-ok differences=%zu metrics=%zu\n",
		       json_array_size(json_object_get(d, "differences")),
		       json_array_size(json_object_get(d, "metrics")));
		json_decref(d);
		return 0;
	}
	int fd = open(path, O_RDONLY);
	char *t = fd >= 0 ? t_slurp_fd(fd) : NULL;
	if (fd >= 0)
		close(fd);
	const unsigned char *p = (const unsigned char *)(t ? t : "");
	while (*p) {
		int n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3
			: (*p & 0xf8) == 0xf0 ? 4 : 0;
		for (int k = 1; k < n; k++)
			if ((p[k] & 0xc0) != 0x80)
				n = 0;
		if (!n || (*p < 0x20 && *p != '\n' && *p != '\t' && *p != '\r')) {
			printf("bad byte 0x%02x at %td\n", *p, (const char *)p - t);
			free(t);
			return 1;
		}
		p += n;
	}
	printf("utf8-ok\n");
	free(t);
	return 0;
}

/* `test_badinput jset IN OUT PATH=JSON [derive]`: IN with the value at PATH set
 * (json_set_path), to OUT: a record edited as a person (or an attacker) would, for the CLI
 * cases' set-ups; with "derive", its derived figures made again from the edit
 * (mw_result_derive), so that it validates as a record memwall wrote. */
static int jset(const char *in, const char *out, const char *edit, bool derive)
{
	struct mw_error err;
	const char *eq = strchr(edit, '=');
	char where[256];
	json_t *doc = json_load_file(in, 0, NULL), *v = eq ? json_loads(eq + 1, JSON_DECODE_ANY,
									 NULL) : NULL;
	if (!doc || !v) {
		fprintf(stderr, "jset: cannot read %s or the value in %s\n", in, edit);
		json_decref(doc);
		json_decref(v);
		return 1;
	}
	snprintf(where, sizeof(where), "%.*s", (int)(eq - edit), edit);
	mw_error_clear(&err);
	int rc = json_set_path(doc, where, v) || (derive && mw_result_derive(doc, in, &err)) ||
		 json_dump_file(doc, out, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
	json_decref(doc);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 4 && !strcmp(argv[1], "jset"))
		return jset(argv[2], argv[3], argv[4], argc > 5 && !strcmp(argv[5], "derive"));
	if (argc > 2 && (!strcmp(argv[1], "jsonok") || !strcmp(argv[1], "utf8ok")))
		return check_output(argv[1], argv[2]);
	if (argc > 3 && !strcmp(argv[1], "sql"))
		return run_sql(argv[2], argv[3]);
	if (argc > 2 && !strcmp(argv[1], "mktar"))
		return mktar(argc, argv);
	if (argc > 2 && !strcmp(argv[1], "listen"))
		return listen_silent(atoi(argv[2]));
	char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl > 0) {
		self[sl] = '\0';
		setenv("T", self, 1);
	}
	int per_format[FORMAT_COUNT] = { 0 };
	size_t n = sizeof(cases) / sizeof(cases[0]);
	signal(SIGALRM, on_alarm);
	cli_fixtures();
	/* BADINPUT_FIRST=N and BADINPUT_LAST=M run cases N..M alone (debugging). */
	const char *first = getenv("BADINPUT_FIRST"), *last = getenv("BADINPUT_LAST");
	size_t end = last && (size_t)atol(last) < n ? (size_t)atol(last) + 1 : n;
	for (size_t i = first ? (size_t)atol(first) : 0; i < end; i++) {
		const struct bad_case *c = &cases[i];
		struct outcome o = { .rc = 0 };
		int before = t_failures;
		current = c;
		alarm(10);
		runners[c->format](c, &o);
		alarm(0);
		T_EQ_INT(o.rc, c->rc);
		if (!names_field(c, &o))
			T_FAIL_AT(__FILE__, __LINE__, "the error does not name \"%s\"", c->field);
		if (c->text)
			T_CONTAINS(o.text, c->text);
		T_ASSERT(o.text[0]);
		if (t_failures != before)
			fprintf(stderr, "  case %zu: %s %s (cut %ld, %s): rc %d, source \"%s\", "
					"field \"%s\", text \"%s\"\n",
				i, format_names[c->format], c->file ? c->file : "(generated)", c->cut,
				c->arg ? c->arg : "-", o.rc, o.source, o.field, o.text);
		per_format[c->format]++;
	}
	printf("%zu bad inputs:", n);
	for (int f = 0; f < FORMAT_COUNT; f++)
		printf(" %s %d%s", format_names[f], per_format[f], f + 1 < FORMAT_COUNT ? "," : "\n");
	T_ASSERT(n >= 40);

	/* Bounded allocation: every count above claims up to 2^63 of something; the whole run
	 * must stay small (ASan's shadow memory included). */
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("peak RSS %ld MiB\n", ru.ru_maxrss / 1024);
	T_ASSERT(ru.ru_maxrss < 1024 * 1024); /* KiB: 1 GiB */
	return t_done_rm(fixtures, 0);
}
