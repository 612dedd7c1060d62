/* engine/format/llama2c.c: the llama2.c checkpoint layout (see llama2c.h), as data. */
#include <errno.h>
#include <inttypes.h>

#include "llama2c.h"

/* A tensor's shape is (layers?, rows, cols), each extent one of the header's numbers. */
enum extent { X_ONE, X_DIM, X_HIDDEN, X_KV_DIM, X_VOCAB, X_SEQ, X_HALF_HEAD, X_COUNT };

static const struct {
	const char *name;
	bool per_layer;
	enum extent rows, cols;
	bool weight; /* read by the forward pass */
} tensors[L2C_TENSOR_COUNT] = {
	[L2C_TOKEN_EMBEDDING] = { "token_embedding", false, X_VOCAB, X_DIM, true },
	[L2C_RMS_ATT] = { "rms_att", true, X_ONE, X_DIM, true },
	[L2C_WQ] = { "wq", true, X_DIM, X_DIM, true },
	[L2C_WK] = { "wk", true, X_KV_DIM, X_DIM, true },
	[L2C_WV] = { "wv", true, X_KV_DIM, X_DIM, true },
	[L2C_WO] = { "wo", true, X_DIM, X_DIM, true },
	[L2C_RMS_FFN] = { "rms_ffn", true, X_ONE, X_DIM, true },
	[L2C_W1] = { "w1", true, X_HIDDEN, X_DIM, true },
	[L2C_W2] = { "w2", true, X_DIM, X_HIDDEN, true },
	[L2C_W3] = { "w3", true, X_HIDDEN, X_DIM, true },
	[L2C_RMS_FINAL] = { "rms_final", false, X_ONE, X_DIM, true },
	/* run.c computes RoPE on the fly and skips these; so does the engine. */
	[L2C_FREQ_CIS_REAL] = { "freq_cis_real", false, X_SEQ, X_HALF_HEAD, false },
	[L2C_FREQ_CIS_IMAG] = { "freq_cis_imag", false, X_SEQ, X_HALF_HEAD, false },
	[L2C_WCLS] = { "wcls", false, X_VOCAB, X_DIM, true },
};

/* File order of each version (export.py legacy_export, version1_export); wcls is appended when
 * the classifier is not shared. */
static const enum l2c_tensor legacy_order[] = {
	L2C_TOKEN_EMBEDDING, L2C_RMS_ATT, L2C_WQ, L2C_WK, L2C_WV, L2C_WO, L2C_RMS_FFN,
	L2C_W1, L2C_W2, L2C_W3, L2C_RMS_FINAL, L2C_FREQ_CIS_REAL, L2C_FREQ_CIS_IMAG,
};
static const enum l2c_tensor v1_order[] = {
	L2C_RMS_ATT, L2C_RMS_FFN, L2C_RMS_FINAL, L2C_TOKEN_EMBEDDING, L2C_WQ, L2C_WK, L2C_WV,
	L2C_WO, L2C_W1, L2C_W2, L2C_W3,
};

const char *eng_l2c_tensor_name(enum l2c_tensor t)
{
	return (unsigned)t < L2C_TENSOR_COUNT ? tensors[t].name : "?";
}

bool eng_l2c_tensor_is_weight(enum l2c_tensor t)
{
	return (unsigned)t < L2C_TENSOR_COUNT && tensors[t].weight;
}

static int check_positive(const char *source, const char *field, int64_t v, struct eng_error *err)
{
	if (v > 0)
		return 0;
	return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
			     "header field '%s' is %" PRId64 ": it must be positive", field, v);
}

int eng_l2c_layout_compute(struct l2c_layout *out, const struct l2c_config *c, const char *source,
		       struct eng_error *err)
{
	int rc;
	/* A legacy file flags an unshared classifier with a negative vocab_size (int64: INT32_MIN). */
	int64_t vocab = c->vocab_size < 0 && c->version == 0 ? -(int64_t)c->vocab_size
							      : c->vocab_size;

	if ((rc = check_positive(source, "dim", c->dim, err)) ||
	    (rc = check_positive(source, "hidden_dim", c->hidden_dim, err)) ||
	    (rc = check_positive(source, "n_layers", c->n_layers, err)) ||
	    (rc = check_positive(source, "n_heads", c->n_heads, err)) ||
	    (rc = check_positive(source, "n_kv_heads", c->n_kv_heads, err)) ||
	    (rc = check_positive(source, "vocab_size", vocab, err)) ||
	    (rc = check_positive(source, "seq_len", c->seq_len, err)))
		return rc;
	if (c->dim % c->n_heads)
		return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
				     "header field 'n_heads' (%" PRId32 ") does not divide dim (%" PRId32
				     ")", c->n_heads, c->dim);
	if (c->n_heads % c->n_kv_heads)
		return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
				     "header field 'n_kv_heads' (%" PRId32
				     ") does not divide n_heads (%" PRId32 ")",
				     c->n_kv_heads, c->n_heads);
	int32_t head_size = c->dim / c->n_heads;
	if (head_size % 2)
		return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
				     "header fields 'dim'/'n_heads' give an odd head size (%" PRId32
				     "): RoPE rotates pairs", head_size);

	uint64_t x[X_COUNT] = {
		[X_ONE] = 1,
		[X_DIM] = (uint64_t)c->dim,
		[X_HIDDEN] = (uint64_t)c->hidden_dim,
		[X_KV_DIM] = (uint64_t)head_size * (uint64_t)c->n_kv_heads,
		[X_VOCAB] = (uint64_t)vocab,
		[X_SEQ] = (uint64_t)c->seq_len,
		[X_HALF_HEAD] = (uint64_t)head_size / 2,
	};
	const enum l2c_tensor *order = c->version == 0 ? legacy_order : v1_order;
	size_t n_order = c->version == 0 ? sizeof(legacy_order) / sizeof(legacy_order[0])
					 : sizeof(v1_order) / sizeof(v1_order[0]);

	*out = (struct l2c_layout){ .header_bytes = c->version == 0 ? L2C_LEGACY_HEADER_BYTES
								    : L2C_V1_HEADER_BYTES };
	uint64_t off = out->header_bytes;
	for (size_t i = 0; i <= n_order; i++) {
		enum l2c_tensor t;
		if (i < n_order)
			t = order[i];
		else if (!c->shared_classifier)
			t = L2C_WCLS;
		else
			break;
		uint64_t layers = tensors[t].per_layer ? (uint64_t)c->n_layers : 1, bytes;
		if (__builtin_mul_overflow(layers, x[tensors[t].rows], &bytes) ||
		    __builtin_mul_overflow(bytes, x[tensors[t].cols], &bytes) ||
		    __builtin_mul_overflow(bytes, (uint64_t)sizeof(float), &bytes) ||
		    __builtin_add_overflow(off, bytes, &out->end))
			return eng_error_set(err, -EOVERFLOW, source, ENG_NO_OFFSET,
					     "tensor '%s' (%" PRIu64 " x %" PRIu64 " x %" PRIu64
					     " floats) overflows 64-bit offsets: the header's shape "
					     "is corrupt",
					     tensors[t].name, layers, x[tensors[t].rows],
					     x[tensors[t].cols]);
		out->span[out->n++] = (struct l2c_span){ .tensor = t, .offset = off, .bytes = bytes };
		off = out->end;
	}
	return 0;
}
