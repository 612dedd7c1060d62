/* engine/model/model.c: llama2.c checkpoints (legacy and "ak42" version 1) as a read-only mapping
 * whose tensors are views, after checking every number the header gives against the file; and
 * closing any model. The layout itself is in llama2c.c. model_open.c decides which loader
 * reads a file: this one, or gguf_model.c for GGUF's magic. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/gguf.h"
#include "format/hugecopy.h"
#include "format/llama2c.h"
#include "model.h"
#include "quants.h"

/* Header fields in file order, so a short file is reported by the first field it cuts. */
struct header_field {
	const char *name;
	uint32_t offset, size;
	size_t member; /* offsetof in struct l2c_config, or SIZE_MAX for magic/padding */
};

/* The header byte is the enum's value (llama2c.h). */
static_assert(ENG_ACT_SILU == 0 && ENG_ACT_RELU == 1 && ENG_ACT_RELU2 == 2 &&
		      L2C_ACT_MAX == ENG_ACT_RELU2,
	      "llama2.c header byte 37 codes follow enum eng_ffn_act");

#define FIELD(n, off) { #n, off, 4, offsetof(struct l2c_config, n) }
static const struct header_field legacy_fields[] = {
	FIELD(dim, 0), FIELD(hidden_dim, 4), FIELD(n_layers, 8), FIELD(n_heads, 12),
	FIELD(n_kv_heads, 16), FIELD(vocab_size, 20), FIELD(seq_len, 24),
};
static const struct header_field v1_fields[] = {
	{ "magic", 0, 4, SIZE_MAX }, { "version", 4, 4, SIZE_MAX },
	FIELD(dim, 8), FIELD(hidden_dim, 12), FIELD(n_layers, 16), FIELD(n_heads, 20),
	FIELD(n_kv_heads, 24), FIELD(vocab_size, 28), FIELD(seq_len, 32),
	{ "shared_classifier", 36, 1, SIZE_MAX },
	{ "ffn_activation", L2C_ACT_OFFSET, 1, SIZE_MAX },
	{ "header padding", 38, L2C_V1_HEADER_BYTES - 38, SIZE_MAX },
};
#undef FIELD

static int32_t read_i32(const unsigned char *p)
{
	int32_t v;
	memcpy(&v, p, sizeof(v)); /* the files are little-endian, as is every host we build for */
	return v;
}

/* Reads the header's fields into c; refuses a file too short for them, naming the field. */
static int parse_header(struct l2c_config *c, const unsigned char *p, uint64_t len,
			const char *path, struct eng_error *err)
{
	if (len < 4)
		return eng_error_set(err, -EINVAL, path, 0,
				     "header field 'magic' (or legacy 'dim') is cut off: the file "
				     "has only %" PRIu64 " bytes; it is not a llama2.c checkpoint",
				     len);
	uint32_t magic;
	memcpy(&magic, p, sizeof(magic));
	*c = (struct l2c_config){ .version = magic == L2C_MAGIC ? 1 : 0 };
	const struct header_field *f = c->version ? v1_fields : legacy_fields;
	size_t n = c->version ? sizeof(v1_fields) / sizeof(v1_fields[0])
			      : sizeof(legacy_fields) / sizeof(legacy_fields[0]);
	for (size_t i = 0; i < n; i++) {
		if (len < (uint64_t)f[i].offset + f[i].size)
			return eng_error_set(err, -EINVAL, path, f[i].offset,
					     "header field '%s' at offset %" PRIu32 " is cut off: the "
					     "file has only %" PRIu64 " bytes (truncated download?)",
					     f[i].name, f[i].offset, len);
		if (f[i].member != SIZE_MAX)
			memcpy((char *)c + f[i].member, p + f[i].offset, sizeof(int32_t));
	}
	if (c->version) {
		int32_t version = read_i32(p + 4);
		if (version != 1)
			return eng_error_set(err, -ENOTSUP, path, 4,
					     "header field 'version' is %" PRId32 ": only version 1 "
					     "(float32) of the ak42 format is supported",
					     version);
		if (p[36] > 1)
			return eng_error_set(err, -EINVAL, path, 36,
					     "header field 'shared_classifier' is %u: it must be 0 or 1",
					     p[36]);
		c->shared_classifier = p[36] == 1;
		if (p[L2C_ACT_OFFSET] > L2C_ACT_MAX)
			return eng_error_set(err, -EINVAL, path, L2C_ACT_OFFSET,
					     "header field 'ffn_activation' is %u: it must be 0 "
					     "(SiLU), 1 (ReLU) or 2 (ReLU^2)", p[L2C_ACT_OFFSET]);
		c->ffn_act = (enum eng_ffn_act)p[L2C_ACT_OFFSET];
	} else {
		c->shared_classifier = c->vocab_size > 0;
	}
	return 0;
}

/* Points each weight field at its tensor in the mapping. */
static void bind_weights(struct eng_llama_weights *w, const struct l2c_layout *lay,
			 const unsigned char *base)
{
	static const size_t field[L2C_TENSOR_COUNT] = {
		[L2C_TOKEN_EMBEDDING] = offsetof(struct eng_llama_weights, token_embedding),
		[L2C_RMS_ATT] = offsetof(struct eng_llama_weights, rms_att),
		[L2C_WQ] = offsetof(struct eng_llama_weights, wq),
		[L2C_WK] = offsetof(struct eng_llama_weights, wk),
		[L2C_WV] = offsetof(struct eng_llama_weights, wv),
		[L2C_WO] = offsetof(struct eng_llama_weights, wo),
		[L2C_RMS_FFN] = offsetof(struct eng_llama_weights, rms_ffn),
		[L2C_W1] = offsetof(struct eng_llama_weights, w1),
		[L2C_W2] = offsetof(struct eng_llama_weights, w2),
		[L2C_W3] = offsetof(struct eng_llama_weights, w3),
		[L2C_RMS_FINAL] = offsetof(struct eng_llama_weights, rms_final),
		[L2C_FREQ_CIS_REAL] = SIZE_MAX,
		[L2C_FREQ_CIS_IMAG] = SIZE_MAX,
		[L2C_WCLS] = offsetof(struct eng_llama_weights, wcls),
	};
	for (size_t i = 0; i < lay->n; i++) {
		const struct l2c_span *s = &lay->span[i];
		if (field[s->tensor] == SIZE_MAX)
			continue;
		const float *t = (const float *)(const void *)(base + s->offset);
		memcpy((char *)w + field[s->tensor], &t, sizeof(t));
	}
	/* Weight tying: the classifier is the embedding table, one view of one mapping. */
	if (!w->wcls)
		w->wcls = w->token_embedding;
}

/* A float32 matrix view of rows x cols. */
static struct eng_mat f32_mat(const float *data, int rows, int cols)
{
	return (struct eng_mat){ .data = data, .type = KRN_TYPE_F32, .rows = rows,
				 .cols = cols, .row_bytes = (size_t)cols * sizeof(float) };
}

/* The per-layer view session.c runs (model.h), over the llama2.c layout's float tensors,
 * which store each per-layer tensor for all layers back to back. */
static int bind_layers(struct eng_model *m)
{
	const struct eng_llama_weights *w = &m->w;
	const struct eng_model_info *in = &m->info;
	int d = in->dim, hd = in->hidden_dim, kv = in->dim / in->n_heads * in->n_kv_heads;
	m->layers = calloc((size_t)in->n_layers, sizeof(*m->layers));
	if (!m->layers)
		return -ENOMEM;
	for (int l = 0; l < in->n_layers; l++) {
		size_t L = (size_t)l;
		m->layers[l] = (struct eng_layer){
			.attn_norm = w->rms_att + L * (size_t)d,
			.wq = f32_mat(w->wq + L * (size_t)d * (size_t)d, d, d),
			.wk = f32_mat(w->wk + L * (size_t)kv * (size_t)d, kv, d),
			.wv = f32_mat(w->wv + L * (size_t)kv * (size_t)d, kv, d),
			.wo = f32_mat(w->wo + L * (size_t)d * (size_t)d, d, d),
			.ffn_norm = w->rms_ffn + L * (size_t)d,
			.w_gate = f32_mat(w->w1 + L * (size_t)hd * (size_t)d, hd, d),
			.w_up = f32_mat(w->w3 + L * (size_t)hd * (size_t)d, hd, d),
			.w_down = f32_mat(w->w2 + L * (size_t)d * (size_t)hd, d, hd),
		};
	}
	m->token_embd = f32_mat(w->token_embedding, in->vocab_size, d);
	m->output = f32_mat(w->wcls, in->vocab_size, d);
	m->out_norm = w->rms_final;
	/* run.c's constants: RMSNorm epsilon 1e-5, RoPE base 10000 over the whole head. */
	m->hp = (struct eng_hparams){ .head_dim = d / in->n_heads, .n_rot = d / in->n_heads,
				      .rope_base = 10000.0f, .norm_eps = 1e-5f,
				      .default_kv = ENG_KV_F32 };
	return 0;
}

/* Faults in every page of a read-only mapping, for kernels without MADV_POPULATE_READ. */
static void populate_by_touch(const void *map, size_t len)
{
	const volatile unsigned char *p = map;
	long page = sysconf(_SC_PAGESIZE);
	for (size_t off = 0; off < len; off += (size_t)(page > 0 ? page : 4096))
		(void)p[off];
}

/* ENG_LOAD_MMAP: maps the file at fd read-only and shared, the zero-copy default. */
static int map_file(struct eng_model *m, int fd, const struct eng_model_options *opt,
		    struct eng_error *err)
{
	/* With huge pages asked for, the advice must come before the pages are faulted in, so
	 * populating is then a separate MADV_POPULATE_READ (Linux 5.14) after it. */
	bool populate_now = opt->populate && !opt->hugepages;
	m->map = mmap(NULL, m->map_len, PROT_READ, MAP_SHARED | (populate_now ? MAP_POPULATE : 0),
		      fd, 0);
	if (m->map == MAP_FAILED) {
		int rc = -errno;
		return eng_error_set(err, rc, m->path, ENG_NO_OFFSET, "cannot map the file: %s",
				     strerror(-rc));
	}
	/* Only some kernels and file systems give file pages huge pages (ext4 and tmpfs on recent
	 * kernels, for pages not already cached as small ones); where they do not, the advice is
	 * refused or ignored and the mapping works as before. */
	if (opt->hugepages) {
		(void)madvise(m->map, m->map_len, MADV_HUGEPAGE);
		if (opt->populate && madvise(m->map, m->map_len, MADV_POPULATE_READ))
			populate_by_touch(m->map, m->map_len);
	}
	return 0;
}

/* ENG_LOAD_HUGE_COPY and ENG_LOAD_REPACK (which has nothing to interleave in a llama2.c
 * checkpoint's float tensors): the file copied into 2 MiB pages, read-only. Sets m->map,
 * m->map_bytes; m->map_len is the file's length. */
static int copy_to_huge(struct eng_model *m, int fd, struct eng_error *err)
{
	void *map;
	int rc = eng_huge_copy(fd, m->map_len, m->path, &map, &m->map_bytes, &m->load.threads, err);
	if (rc)
		return rc;
	m->map = map;
	m->load.huge_bytes = eng_huge_pages_bytes(map);
	return eng_huge_seal(m->map, m->map_bytes, m->path, err);
}

int eng_llama2c_model_load(struct eng_model *m, int fd, uint64_t file_size,
			   const struct eng_model_options *opt, struct eng_error *err)
{
	const char *path = m->path;
	struct l2c_config c;
	struct l2c_layout lay;
	int rc;

	if (file_size > SIZE_MAX)
		return eng_error_set(err, -EFBIG, path, ENG_NO_OFFSET, "too large to map here");
	m->map_len = (size_t)file_size;
	m->map_bytes = m->map_len;
	rc = opt->load == ENG_LOAD_MMAP ? map_file(m, fd, opt, err) : copy_to_huge(m, fd, err);
	if (rc)
		return rc;
	const unsigned char *base = m->map;
	uint64_t file_bytes = m->map_len;
	if ((rc = parse_header(&c, base, file_bytes, path, err)))
		return rc;
	if ((rc = eng_l2c_layout_compute(&lay, &c, path, err)))
		return rc;
	for (size_t i = 0; i < lay.n; i++) {
		const struct l2c_span *s = &lay.span[i];
		if (s->offset + s->bytes > file_bytes)
			return eng_error_set(err, -EINVAL, path, s->offset,
					     "tensor '%s' extends past end of file (offset %" PRIu64
					     ", %" PRIu64 " bytes, file %" PRIu64
					     " bytes): truncated file, or a header that does not "
					     "match it",
					     eng_l2c_tensor_name(s->tensor), s->offset, s->bytes, file_bytes);
	}
	if (lay.end != file_bytes)
		return eng_error_set(err, -EINVAL, path, lay.end,
				     "%" PRIu64 " bytes follow the last tensor '%s' (offset %" PRIu64
				     "): the header's shape or classifier flag does not match the "
				     "file", file_bytes - lay.end,
				     eng_l2c_tensor_name(lay.span[lay.n - 1].tensor), lay.end);

	bind_weights(&m->w, &lay, base);
	struct eng_model_info *info = &m->info;
	info->format = ENG_FORMAT_LLAMA2C;
	info->dim = c.dim;
	info->hidden_dim = c.hidden_dim;
	info->n_layers = c.n_layers;
	info->n_heads = c.n_heads;
	info->n_kv_heads = c.n_kv_heads;
	info->vocab_size = c.vocab_size < 0 ? -c.vocab_size : c.vocab_size;
	info->seq_len = c.seq_len;
	info->shared_classifier = c.shared_classifier;
	info->ffn_act = c.ffn_act;
	info->synthetic = c.version == 1 &&
			  !memcmp(base + L2C_SYNTH_MARKER_OFFSET, L2C_SYNTH_MARKER,
				  strlen(L2C_SYNTH_MARKER));
	info->file_bytes = file_bytes;
	for (size_t i = 0; i < lay.n; i++)
		if (eng_l2c_tensor_is_weight(lay.span[i].tensor))
			info->weight_bytes += lay.span[i].bytes;
	if ((rc = bind_layers(m)))
		return eng_error_set(err, rc, path, ENG_NO_OFFSET, "out of memory");
	return 0;
}

void eng_model_close(struct eng_model *m)
{
	if (!m)
		return;
	if (m->map && m->map != MAP_FAILED)
		munmap(m->map, m->map_bytes);
	if (m->gguf)
		eng_gguf_close(m->gguf);
	free(m->layers);
	free(m->alias); /* one allocation (alias.h) */
	free(m);
}

const struct eng_model_info *eng_model_info(const struct eng_model *m)
{
	return &m->info;
}
