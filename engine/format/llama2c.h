/* engine/format/llama2c.h: the llama2.c checkpoint layout, shared by the loader (model.c) and the
 * synthetic writer (synth.c) so that both read one description of the file. Internal to
 * engine/.
 *
 * Two layouts, both float32 (karpathy/llama2.c export.py, legacy_export and version1_export):
 * - legacy: 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len), a
 *   negative vocab_size meaning an unshared classifier; then token_embedding, rms_att, wq, wk,
 *   wv, wo, rms_ffn, w1, w2, w3, rms_final, freq_cis_real, freq_cis_imag, [wcls].
 * - "ak42" version 1: uint32 magic 0x616b3432, int32 version 1, the same 7 int32 (vocab_size
 *   positive), uint8 shared_classifier, zero padding to 256 bytes; then rms_att, rms_ffn,
 *   rms_final, token_embedding, wq, wk, wv, wo, w1, w2, w3, [wcls]. No RoPE tables.
 * Each per-layer tensor is stored for all layers back to back: (layer, rows, cols).
 */
#ifndef MEMWALL_LLAMA2C_H
#define MEMWALL_LLAMA2C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

#define L2C_MAGIC 0x616b3432u
#define L2C_LEGACY_HEADER_BYTES 28u
#define L2C_V1_HEADER_BYTES 256u
/* `memwall synth` writes "memwall-synthetic seed=N shape=S" into the version-1 header's
 * padding at this offset; export.py leaves the padding zero, so a trained model never has it. */
#define L2C_SYNTH_MARKER "memwall-synthetic"
#define L2C_SYNTH_MARKER_OFFSET 64u
/* memwall's FFN activation (engine.h, enum eng_ffn_act): one byte of the version-1 header's
 * padding, 0 SiLU (export.py's zero: every trained file), 1 ReLU, 2 ReLU^2. A reader that
 * ignores it runs a ReLU model as SiLU; memwall refuses a value above 2. */
#define L2C_ACT_OFFSET 37u
#define L2C_ACT_MAX 2u

enum l2c_tensor {
	L2C_TOKEN_EMBEDDING,
	L2C_RMS_ATT,
	L2C_WQ,
	L2C_WK,
	L2C_WV,
	L2C_WO,
	L2C_RMS_FFN,
	L2C_W1,
	L2C_W2,
	L2C_W3,
	L2C_RMS_FINAL,
	L2C_FREQ_CIS_REAL,
	L2C_FREQ_CIS_IMAG,
	L2C_WCLS,
	L2C_TENSOR_COUNT,
};

/* The header's numbers, as read (before any check). */
struct l2c_config {
	int version; /* 0: legacy, 1: "ak42" version 1 */
	int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
	bool shared_classifier;
	enum eng_ffn_act ffn_act; /* version 1's byte 37; SiLU for legacy files */
};

/* Where one tensor sits in the file. */
struct l2c_span {
	enum l2c_tensor tensor;
	uint64_t offset; /* from the start of the file */
	uint64_t bytes;
};

struct l2c_layout {
	size_t n;                              /* spans in file order */
	struct l2c_span span[L2C_TENSOR_COUNT];
	uint64_t header_bytes;
	uint64_t end;                          /* offset just past the last tensor */
};

/* The tensor's name as error messages print it, e.g. "wq". Static storage. */
const char *eng_l2c_tensor_name(enum l2c_tensor t);
/* True for tensors the forward pass reads (every one but the legacy RoPE tables). */
bool eng_l2c_tensor_is_weight(enum l2c_tensor t);

/* Checks the header's numbers (positive, divisible, even head size) and computes every
 * tensor's place with overflow-checked 64-bit arithmetic. Fills err naming the field or the
 * tensor, with source as the file name. */
int eng_l2c_layout_compute(struct l2c_layout *out, const struct l2c_config *c, const char *source,
		       struct eng_error *err);

#endif
