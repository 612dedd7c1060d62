/* tests/lib/ref_model.c: the reference forward pass's model reader (ref_forward.h): GGUF and
 * llama2.c files parsed here, from the formats' definitions, every weight dequantized to
 * double (ref_quant.c).
 *
 * GGUF (ggml's docs/gguf.md): "GGUF", uint32 version (2 or 3), uint64 tensor count, uint64
 * key-value count; each key a string (uint64 length, bytes), a uint32 value type (0 u8, 1 i8,
 * 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool, 8 string, 9 array of (uint32 type, uint64 count,
 * values), 10 u64, 11 i64, 12 f64) and the value; each tensor info a name, uint32 n_dims,
 * n_dims uint64 extents (ne[0] the row length), uint32 type, uint64 offset; the data section
 * starts at the next multiple of general.alignment (32 when absent). Hyper-parameters are
 * llama.cpp's "<arch>.*" keys, tensors its names (llama.cpp's llama-arch.cpp).
 *
 * llama2.c (karpathy/llama2.c export.py): legacy, 7 int32 (dim, hidden_dim, n_layers,
 * n_heads, n_kv_heads, vocab_size, seq_len; vocab_size < 0: an unshared classifier) then
 * token_embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, two RoPE tables
 * of seq_len x head_size / 2, [wcls]; or "ak42" version 1, uint32 magic 0x616b3432, int32 1,
 * the 7 int32, uint8 shared_classifier, padding to 256 bytes (memwall puts the FFN activation
 * at byte 37: 0 SiLU, 1 ReLU, 2 ReLU^2) then rms_att, rms_ffn, rms_final, token_embedding,
 * wq, wk, wv, wo, w1, w2, w3, [wcls]. float32, each per-layer tensor for all layers in turn.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_impl.h"

struct rd {
	const uint8_t *p;
	size_t n, at;
	int bad;
};

static uint64_t rd_n(struct rd *r, int bytes)
{
	uint64_t v = 0;
	if (r->bad || r->n - r->at < (size_t)bytes) {
		r->bad = 1;
		return 0;
	}
	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)r->p[r->at + (size_t)i] << (8 * i);
	r->at += (size_t)bytes;
	return v;
}

static const char *rd_str(struct rd *r, size_t *len)
{
	uint64_t l = rd_n(r, 8);
	if (r->bad || l > r->n - r->at) {
		r->bad = 1;
		*len = 0;
		return "";
	}
	const char *s = (const char *)r->p + r->at;
	r->at += (size_t)l;
	*len = (size_t)l;
	return s;
}

#define MAX_KEYS 128
#define MAX_TENSORS 512
#define NAME 96

struct gguf {
	struct {
		char key[NAME];
		double num;
		char str[32];
	} kv[MAX_KEYS];
	int n_kv;
	struct {
		char name[NAME];
		uint32_t n_dims, type;
		uint64_t ne[4], offset;
	} t[MAX_TENSORS];
	int n_t;
	const uint8_t *data;
	size_t data_bytes;
};

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* A scalar value of type vt: its number (strings: 0, the text in str). Arrays are skipped. */
static double rd_value(struct rd *r, uint32_t vt, char *str, size_t cap)
{
	static const int size[13] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
	uint64_t v;
	size_t len;
	if (vt == 8) {
		const char *s = rd_str(r, &len);
		if (str)
			snprintf(str, cap, "%.*s", (int)(len < cap ? len : cap - 1), s);
		return 0;
	}
	if (vt == 9) {
		uint32_t et = (uint32_t)rd_n(r, 4);
		uint64_t n = rd_n(r, 8);
		for (uint64_t i = 0; i < n && !r->bad; i++)
			rd_value(r, et, NULL, 0);
		return 0;
	}
	if (vt > 12) {
		r->bad = 1;
		return 0;
	}
	v = rd_n(r, size[vt]);
	switch (vt) {
	case 1: return (int8_t)v;
	case 3: return (int16_t)v;
	case 5: return (int32_t)v;
	case 11: return (double)(int64_t)v;
	case 6: { uint32_t b = (uint32_t)v; float f; memcpy(&f, &b, 4); return f; }
	case 12: { double d; memcpy(&d, &v, 8); return d; }
	default: return (double)v;
	}
}

static int gguf_parse(struct gguf *g, const uint8_t *p, size_t n, const char *path, char *err,
		      size_t errlen)
{
	struct rd r = { p, n, 0, 0 };
	if (n < 4 || memcmp(p, "GGUF", 4))
		return fail(err, errlen, "%s: not a GGUF file", path);
	r.at = 4;
	uint32_t version = (uint32_t)rd_n(&r, 4);
	uint64_t n_t = rd_n(&r, 8), n_kv = rd_n(&r, 8);
	if (version < 2 || version > 3 || n_t > MAX_TENSORS)
		return fail(err, errlen, "%s: GGUF version %u with %llu tensors: the reference reads "
			    "versions 2 and 3, up to %d tensors", path, version,
			    (unsigned long long)n_t, MAX_TENSORS);
	uint64_t alignment = 32;
	for (uint64_t i = 0; i < n_kv && !r.bad; i++) {
		size_t len;
		const char *k = rd_str(&r, &len);
		uint32_t vt = (uint32_t)rd_n(&r, 4);
		char key[NAME];
		snprintf(key, sizeof(key), "%.*s", (int)(len < NAME ? len : NAME - 1), k);
		int slot = vt != 9 && g->n_kv < MAX_KEYS ? g->n_kv++ : -1;
		double v = rd_value(&r, vt, slot >= 0 ? g->kv[slot].str : NULL, sizeof(g->kv[0].str));
		if (slot >= 0) {
			snprintf(g->kv[slot].key, NAME, "%s", key);
			g->kv[slot].num = v;
		}
		if (!strcmp(key, "general.alignment"))
			alignment = (uint64_t)v;
	}
	for (uint64_t i = 0; i < n_t && !r.bad; i++) {
		size_t len;
		const char *name = rd_str(&r, &len);
		snprintf(g->t[i].name, NAME, "%.*s", (int)(len < NAME ? len : NAME - 1), name);
		g->t[i].n_dims = (uint32_t)rd_n(&r, 4);
		if (g->t[i].n_dims > 4)
			r.bad = 1;
		for (uint32_t d = 0; d < 4; d++)
			g->t[i].ne[d] = d < g->t[i].n_dims ? rd_n(&r, 8) : 1;
		g->t[i].type = (uint32_t)rd_n(&r, 4);
		g->t[i].offset = rd_n(&r, 8);
	}
	g->n_t = (int)n_t;
	if (r.bad || !alignment)
		return fail(err, errlen, "%s: the GGUF header is truncated or malformed", path);
	size_t start = (r.at + alignment - 1) / alignment * alignment;
	if (start > n)
		return fail(err, errlen, "%s: no data section", path);
	g->data = p + start;
	g->data_bytes = n - start;
	return 0;
}

static int kv_find(const struct gguf *g, const char *key)
{
	for (int i = 0; i < g->n_kv; i++)
		if (!strcmp(g->kv[i].key, key))
			return i;
	return -1;
}

/* "<arch>.key" as a number, def when absent. */
static double arch_num(const struct gguf *g, const char *arch, const char *key, double def)
{
	char full[NAME];
	snprintf(full, sizeof(full), "%s.%s", arch, key);
	int i = kv_find(g, full);
	return i < 0 ? def : g->kv[i].num;
}

static int tensor_find(const struct gguf *g, const char *name)
{
	for (int i = 0; i < g->n_t; i++)
		if (!strcmp(g->t[i].name, name))
			return i;
	return -1;
}

static void types_note(struct ref_info *in, uint32_t t)
{
	const char *name = ref_type_name(t);
	char word[16];
	snprintf(word, sizeof(word), " %s ", name);
	char padded[sizeof(in->types) + 2];
	snprintf(padded, sizeof(padded), " %s ", in->types);
	if (strstr(padded, word))
		return;
	size_t l = strlen(in->types);
	snprintf(in->types + l, sizeof(in->types) - l, "%s%s", l ? " " : "", name);
}

/* A part of rows x cols of type t from src (bytes available there), dequantized. */
static int part_load(struct ref_part *pt, uint32_t t, const uint8_t *src, size_t avail, int rows,
		     int cols, const char *what, char *err, size_t errlen)
{
	int be, bb;
	if (!ref_type_block(t, &be, &bb) || cols % be)
		return fail(err, errlen, "tensor '%s' has type %u (%s) with rows of %d: the "
			    "reference reads f32 f16 bf16 q4_0 q5_0 q8_0 q4_K q5_K q6_K", what, t,
			    ref_type_name(t), cols);
	size_t row_bytes = (size_t)(cols / be) * (size_t)bb;
	if (row_bytes * (size_t)rows > avail)
		return fail(err, errlen, "tensor '%s' extends past the end of the file", what);
	size_t n = (size_t)rows * (size_t)cols;
	pt->type = t;
	pt->w = malloc(n * sizeof(double));
	pt->mag = malloc(n * sizeof(float));
	if (!pt->w || !pt->mag)
		return fail(err, errlen, "out of memory for '%s'", what);
	for (int r = 0; r < rows; r++)
		ref_dequant(t, src + (size_t)r * row_bytes, cols, pt->w + (size_t)r * (size_t)cols,
			    pt->mag + (size_t)r * (size_t)cols);
	return 0;
}

/* GGUF tensor `name` as a part of rows x cols. */
static int gguf_part(const struct gguf *g, struct ref_info *in, const char *name,
		     struct ref_part *pt, int rows, int cols, char *err, size_t errlen)
{
	int i = tensor_find(g, name);
	if (i < 0)
		return fail(err, errlen, "tensor '%s' is missing", name);
	if (g->t[i].ne[0] != (uint64_t)cols || g->t[i].ne[1] != (uint64_t)rows ||
	    g->t[i].ne[2] != 1 || g->t[i].ne[3] != 1)
		return fail(err, errlen, "tensor '%s' is [%llu, %llu], the hyper-parameters say "
			    "[%d, %d]", name, (unsigned long long)g->t[i].ne[0],
			    (unsigned long long)g->t[i].ne[1], cols, rows);
	if (g->t[i].offset > g->data_bytes)
		return fail(err, errlen, "tensor '%s' starts past the end of the file", name);
	types_note(in, g->t[i].type);
	return part_load(pt, g->t[i].type, g->data + g->t[i].offset,
			 g->data_bytes - (size_t)g->t[i].offset, rows, cols, name, err, errlen);
}

/* Matrix fmt (with "%d" the layer l, or none) of rows x cols: the tensor itself, or a
 * canonical + delta pair standing for it (memwall's "canonical.K.weight" + "blk.l.K.delta"). */
static int gguf_mat(const struct gguf *g, struct ref_info *in, const char *kind, int l,
		    struct ref_mat *m, int rows, int cols, char *err, size_t errlen)
{
	char name[NAME], canon[NAME], delta[NAME];
	if (l >= 0)
		snprintf(name, sizeof(name), "blk.%d.%s.weight", l, kind);
	else
		snprintf(name, sizeof(name), "%s.weight", kind);
	m->rows = rows;
	m->cols = cols;
	snprintf(delta, sizeof(delta), "blk.%d.%s.delta", l, kind);
	if (l >= 0 && tensor_find(g, name) < 0 && tensor_find(g, delta) >= 0) {
		snprintf(canon, sizeof(canon), "canonical.%s.weight", kind);
		m->n_parts = 2;
		in->delta_layers += !strcmp(kind, "attn_output");
		return gguf_part(g, in, canon, &m->part[0], rows, cols, err, errlen) ||
		       gguf_part(g, in, delta, &m->part[1], rows, cols, err, errlen) ? -1 : 0;
	}
	m->n_parts = 1;
	return gguf_part(g, in, name, &m->part[0], rows, cols, err, errlen);
}

/* An f32 vector of n. */
static double *gguf_vec(const struct gguf *g, const char *name, int n, char *err, size_t errlen)
{
	int i = tensor_find(g, name);
	if (i < 0 || g->t[i].type != REF_F32 || g->t[i].ne[0] != (uint64_t)n ||
	    g->t[i].ne[1] != 1 || g->t[i].offset + (uint64_t)n * 4 > g->data_bytes) {
		fail(err, errlen, "tensor '%s' is missing or not an f32 vector of %d", name, n);
		return NULL;
	}
	double *v = malloc((size_t)n * sizeof(double));
	float *mag = malloc((size_t)n * sizeof(float));
	if (v && mag)
		ref_dequant(REF_F32, g->data + g->t[i].offset, n, v, mag);
	free(mag);
	return v;
}

static int gguf_hparams(const struct gguf *g, struct ref_info *in, char *err, size_t errlen)
{
	int a = kv_find(g, "general.architecture");
	if (a < 0)
		return fail(err, errlen, "no general.architecture");
	snprintf(in->arch, sizeof(in->arch), "%s", g->kv[a].str);
	bool falcon = !strcmp(in->arch, "falcon");
	if (!falcon && strcmp(in->arch, "llama"))
		return fail(err, errlen, "architecture '%s': the reference runs llama and falcon",
			    in->arch);
	const char *ar = in->arch;
	in->dim = (int)arch_num(g, ar, "embedding_length", 0);
	in->hidden = (int)arch_num(g, ar, "feed_forward_length", 0);
	in->layers = (int)arch_num(g, ar, "block_count", 0);
	in->heads = (int)arch_num(g, ar, "attention.head_count", 0);
	in->kv_heads = (int)arch_num(g, ar, "attention.head_count_kv", in->heads);
	in->seq_len = (int)arch_num(g, ar, "context_length", 0);
	if (in->dim <= 0 || in->hidden <= 0 || in->layers <= 0 || in->heads <= 0 ||
	    in->kv_heads <= 0 || in->dim % in->heads || in->heads % in->kv_heads)
		return fail(err, errlen, "hyper-parameters dim %d hidden %d layers %d heads %d/%d "
			    "do not make a model", in->dim, in->hidden, in->layers, in->heads,
			    in->kv_heads);
	in->head_dim = in->dim / in->heads;
	in->n_rot = (int)arch_num(g, ar, "rope.dimension_count", in->head_dim);
	in->rope_base = arch_num(g, ar, "rope.freq_base", 10000.0);
	/* llama.cpp's defaults: the epsilon each architecture's config gives when absent */
	in->eps = falcon ? arch_num(g, ar, "attention.layer_norm_epsilon", 1e-5)
			 : arch_num(g, ar, "attention.layer_norm_rms_epsilon", 1e-5);
	in->neox = falcon; /* llama.cpp's llama_model_rope_type: FALCON is NEOX, LLAMA NORM */
	in->act = falcon ? REF_ACT_GELU : REF_ACT_SILU;
	int k = kv_find(g, "llama.feed_forward_activation");
	if (!falcon && k >= 0)
		in->act = !strcmp(g->kv[k].str, "relu")    ? REF_ACT_RELU
			  : !strcmp(g->kv[k].str, "relu2") ? REF_ACT_RELU2 : REF_ACT_SILU;
	int e = tensor_find(g, "token_embd.weight");
	if (e < 0)
		return fail(err, errlen, "tensor 'token_embd.weight' is missing");
	in->vocab = (int)g->t[e].ne[1];
	in->tied = tensor_find(g, "output.weight") < 0;
	return 0;
}

static int gguf_layer(const struct gguf *g, struct ref_model *m, int l, char *err, size_t errlen)
{
	struct ref_info *in = &m->info;
	struct ref_layer *L = &m->layer[l];
	int q = in->heads * in->head_dim, kv = in->kv_heads * in->head_dim;
	char name[NAME];
	bool falcon = in->neox;
	snprintf(name, sizeof(name), "blk.%d.attn_norm.weight", l);
	if (!(L->attn_norm = gguf_vec(g, name, in->dim, err, errlen)))
		return -1;
	if (falcon) {
		snprintf(name, sizeof(name), "blk.%d.attn_norm.bias", l);
		if (!(L->attn_norm_b = gguf_vec(g, name, in->dim, err, errlen)))
			return -1;
		return gguf_mat(g, in, "attn_qkv", l, &L->wqkv, q + 2 * kv, in->dim, err, errlen) ||
		       gguf_mat(g, in, "attn_output", l, &L->wo, in->dim, q, err, errlen) ||
		       gguf_mat(g, in, "ffn_up", l, &L->up, in->hidden, in->dim, err, errlen) ||
		       gguf_mat(g, in, "ffn_down", l, &L->down, in->dim, in->hidden, err, errlen)
		       ? -1 : 0;
	}
	snprintf(name, sizeof(name), "blk.%d.ffn_norm.weight", l);
	if (!(L->ffn_norm = gguf_vec(g, name, in->dim, err, errlen)))
		return -1;
	return gguf_mat(g, in, "attn_q", l, &L->wq, q, in->dim, err, errlen) ||
	       gguf_mat(g, in, "attn_k", l, &L->wk, kv, in->dim, err, errlen) ||
	       gguf_mat(g, in, "attn_v", l, &L->wv, kv, in->dim, err, errlen) ||
	       gguf_mat(g, in, "attn_output", l, &L->wo, in->dim, q, err, errlen) ||
	       gguf_mat(g, in, "ffn_gate", l, &L->gate, in->hidden, in->dim, err, errlen) ||
	       gguf_mat(g, in, "ffn_up", l, &L->up, in->hidden, in->dim, err, errlen) ||
	       gguf_mat(g, in, "ffn_down", l, &L->down, in->dim, in->hidden, err, errlen)
	       ? -1 : 0;
}

static int gguf_load(struct ref_model *m, const uint8_t *p, size_t n, const char *path,
		     char *err, size_t errlen)
{
	struct gguf *g = calloc(1, sizeof(*g));
	struct ref_info *in = &m->info;
	int rc = -1;
	if (!g)
		return fail(err, errlen, "out of memory");
	if (gguf_parse(g, p, n, path, err, errlen) || gguf_hparams(g, in, err, errlen))
		goto out;
	in->gguf = true;
	m->layer = calloc((size_t)in->layers, sizeof(*m->layer));
	if (!m->layer)
		goto out;
	if (gguf_mat(g, in, "token_embd", -1, &m->embd, in->vocab, in->dim, err, errlen))
		goto out;
	if (in->tied)
		m->output = m->embd;
	else if (gguf_mat(g, in, "output", -1, &m->output, in->vocab, in->dim, err, errlen))
		goto out;
	if (!(m->out_norm = gguf_vec(g, "output_norm.weight", in->dim, err, errlen)))
		goto out;
	if (in->neox && !(m->out_norm_b = gguf_vec(g, "output_norm.bias", in->dim, err, errlen)))
		goto out;
	for (int l = 0; l < in->layers; l++)
		if (gguf_layer(g, m, l, err, errlen))
			goto out;
	rc = 0;
out:
	free(g);
	return rc;
}

/* ---- llama2.c ---- */

static int l2c_mat(struct ref_mat *m, const uint8_t **p, const uint8_t *end, int rows, int cols,
		   const char *what, char *err, size_t errlen)
{
	m->rows = rows;
	m->cols = cols;
	m->n_parts = 1;
	int rc = part_load(&m->part[0], REF_F32, *p, (size_t)(end - *p), rows, cols, what, err,
			   errlen);
	*p += (size_t)rows * (size_t)cols * 4;
	return rc;
}

static double *l2c_vec(const uint8_t **p, const uint8_t *end, int n)
{
	double *v = malloc((size_t)n * sizeof(double));
	float *mag = malloc((size_t)n * sizeof(float));
	if (v && mag && (size_t)(end - *p) >= (size_t)n * 4)
		ref_dequant(REF_F32, *p, n, v, mag);
	else {
		free(v);
		v = NULL;
	}
	free(mag);
	*p += (size_t)n * 4;
	return v;
}

/* The per-layer matrices of llama2.c tensor k: each stored for all layers in turn. */
enum { WQ, WK, WV, WO, W1, W2, W3 };

static int l2c_layers(struct ref_model *m, int k, const uint8_t **p, const uint8_t *end,
		      char *err, size_t errlen)
{
	const struct ref_info *in = &m->info;
	int q = in->heads * in->head_dim, kv = in->kv_heads * in->head_dim;
	static const char *const names[] = { "wq", "wk", "wv", "wo", "w1", "w2", "w3" };
	for (int l = 0; l < in->layers; l++) {
		struct ref_layer *L = &m->layer[l];
		struct ref_mat *mat[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->gate, &L->down, &L->up };
		int rows[] = { q, kv, kv, in->dim, in->hidden, in->dim, in->hidden };
		int cols[] = { in->dim, in->dim, in->dim, q, in->dim, in->hidden, in->dim };
		if (*p > end || l2c_mat(mat[k], p, end, rows[k], cols[k], names[k], err, errlen))
			return -1;
	}
	return 0;
}

static int l2c_norms(struct ref_model *m, bool att, const uint8_t **p, const uint8_t *end)
{
	for (int l = 0; l < m->info.layers; l++) {
		double **v = att ? &m->layer[l].attn_norm : &m->layer[l].ffn_norm;
		if (*p > end || !(*v = l2c_vec(p, end, m->info.dim)))
			return -1;
	}
	return 0;
}

static int l2c_load(struct ref_model *m, const uint8_t *p, size_t n, const char *path,
		    char *err, size_t errlen)
{
	struct ref_info *in = &m->info;
	struct rd r = { p, n, 0, 0 };
	bool v1 = rd_n(&r, 4) == 0x616b3432u;
	int32_t h[7];
	if (v1 && rd_n(&r, 4) != 1)
		return fail(err, errlen, "%s: an \"ak42\" checkpoint of a version other than 1", path);
	if (!v1)
		r.at = 0;
	for (int i = 0; i < 7; i++)
		h[i] = (int32_t)rd_n(&r, 4);
	if (r.bad || (v1 && n < 256) || h[0] <= 0 || h[1] <= 0 || h[2] <= 0 || h[3] <= 0 ||
	    h[4] <= 0 || h[0] % h[3] || h[3] % h[4] || h[5] == 0 || h[6] <= 0)
		return fail(err, errlen, "%s: not a llama2.c checkpoint the reference reads", path);
	snprintf(in->arch, sizeof(in->arch), "llama");
	in->dim = h[0];
	in->hidden = h[1];
	in->layers = h[2];
	in->heads = h[3];
	in->kv_heads = h[4];
	in->vocab = h[5] < 0 ? -h[5] : h[5];
	in->seq_len = h[6];
	in->tied = v1 ? p[36] != 0 : h[5] > 0;
	in->act = !v1 || p[37] == 0 ? REF_ACT_SILU : p[37] == 1 ? REF_ACT_RELU : REF_ACT_RELU2;
	in->head_dim = in->dim / in->heads;
	in->n_rot = in->head_dim; /* run.c rotates every pair of each head, base 10000 */
	in->rope_base = 10000.0;
	in->eps = 1e-5;
	snprintf(in->types, sizeof(in->types), "f32");
	const uint8_t *q = p + (v1 ? 256 : 28), *end = p + n;
	m->layer = calloc((size_t)in->layers, sizeof(*m->layer));
	if (!m->layer)
		return fail(err, errlen, "out of memory");
	int d = in->dim, rc = 0;
	if (v1) {
		rc = l2c_norms(m, true, &q, end) || l2c_norms(m, false, &q, end) ||
		     !(m->out_norm = l2c_vec(&q, end, d)) ||
		     l2c_mat(&m->embd, &q, end, in->vocab, d, "token_embedding", err, errlen);
		for (int k = WQ; !rc && k <= W3; k++)
			rc = l2c_layers(m, k, &q, end, err, errlen);
	} else {
		rc = l2c_mat(&m->embd, &q, end, in->vocab, d, "token_embedding", err, errlen) ||
		     l2c_norms(m, true, &q, end);
		for (int k = WQ; !rc && k <= WO; k++)
			rc = l2c_layers(m, k, &q, end, err, errlen);
		rc = rc || l2c_norms(m, false, &q, end);
		for (int k = W1; !rc && k <= W3; k++)
			rc = l2c_layers(m, k, &q, end, err, errlen);
		rc = rc || !(m->out_norm = l2c_vec(&q, end, d));
		q += (size_t)in->seq_len * (size_t)in->head_dim * 4; /* the two RoPE tables */
	}
	if (rc)
		return err[0] ? -1 : fail(err, errlen, "%s: the checkpoint is truncated", path);
	if (in->tied)
		m->output = m->embd;
	else if (l2c_mat(&m->output, &q, end, in->vocab, d, "wcls", err, errlen))
		return -1;
	return 0;
}

int ref_model_open(struct ref_model **out, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct ref_model *m = calloc(1, sizeof(*m));
	uint8_t *p = NULL;
	long n = -1;
	int rc = -1;
	*out = NULL;
	err[0] = '\0';
	if (f && !fseek(f, 0, SEEK_END))
		n = ftell(f);
	if (!f || !m || n < 0 || fseek(f, 0, SEEK_SET) || !(p = malloc((size_t)n + 1)) ||
	    fread(p, 1, (size_t)n, f) != (size_t)n) {
		fail(err, errlen, "%s: cannot read the file", path);
		goto out;
	}
	if (n >= 4 && !memcmp(p, "GGUF", 4))
		rc = gguf_load(m, p, (size_t)n, path, err, errlen);
	else
		rc = l2c_load(m, p, (size_t)n, path, err, errlen);
out:
	if (f)
		fclose(f);
	free(p);
	if (rc) {
		ref_model_close(m);
		return -1;
	}
	*out = m;
	return 0;
}

static void mat_free(struct ref_mat *m)
{
	for (int i = 0; i < m->n_parts; i++) {
		free(m->part[i].w);
		free(m->part[i].mag);
	}
}

void ref_model_close(struct ref_model *m)
{
	if (!m)
		return;
	for (int l = 0; m->layer && l < m->info.layers; l++) {
		struct ref_layer *L = &m->layer[l];
		struct ref_mat *mats[] = { &L->wq, &L->wk, &L->wv, &L->wqkv, &L->wo, &L->gate,
					   &L->up, &L->down };
		for (size_t i = 0; i < sizeof(mats) / sizeof(mats[0]); i++)
			mat_free(mats[i]);
		free(L->attn_norm);
		free(L->attn_norm_b);
		free(L->ffn_norm);
	}
	free(m->layer);
	if (!m->info.tied)
		mat_free(&m->output);
	mat_free(&m->embd);
	free(m->out_norm);
	free(m->out_norm_b);
	free(m);
}

const struct ref_info *ref_model_info(const struct ref_model *m)
{
	return &m->info;
}
