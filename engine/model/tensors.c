/* engine/model/tensors.c: the tensor table (engine.h, "Tensor table"): every tensor of a model with
 * its type, shape, bytes in the file and bytes one decode step reads.
 *
 * Three sources fill it:
 *  - an open llama2.c model: the layout of llama2c.h, one entry per tensor and layer;
 *  - a GGUF file's metadata and tensor infos (eng_tensors_from_gguf, also the hook a GGUF
 *    model's loader calls);
 *  - a built-in description of a file's shape and per-tensor type mix, for result records
 *    whose model file is not at hand (the AIOS Falcon-7B reference).
 *
 * What a decode step reads (the rules): a matrix, all of it; the embedding, one row;
 * a tied classifier, the whole shared table, counted once under the classifier.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <fcntl.h>

#include "model.h"
#include "quants.h"
#include "shapes.h"
#include "tensors.h"

#define NAME_LEN 96

/* A table and what it owns; pub comes first, so the public pointer is the whole. */
struct table {
	struct eng_tensor_table pub;
	struct eng_model *model; /* owned when eng_tensors_from_file opened it */
	struct eng_gguf *gguf;   /* likewise */
	char arch[32];
	size_t cap;
	char (*names)[NAME_LEN];
};

static const char *const class_names[ENG_TENSOR_CLASS_COUNT] = {
	[ENG_TENSOR_EMBEDDING] = "embedding",
	[ENG_TENSOR_ATTENTION] = "attention",
	[ENG_TENSOR_FFN] = "ffn",
	[ENG_TENSOR_NORM] = "norm",
	[ENG_TENSOR_CLASSIFIER] = "classifier",
};

const char *eng_tensor_class_name(enum eng_tensor_class c)
{
	return (unsigned)c < ENG_TENSOR_CLASS_COUNT ? class_names[c] : "?";
}

static struct table *table_new(size_t cap)
{
	struct table *tb = calloc(1, sizeof(*tb));
	if (!tb)
		return NULL;
	tb->cap = cap;
	tb->pub.t = calloc(cap ? cap : 1, sizeof(*tb->pub.t));
	tb->names = calloc(cap ? cap : 1, sizeof(*tb->names));
	if (!tb->pub.t || !tb->names) {
		eng_tensor_table_free(&tb->pub);
		return NULL;
	}
	return tb;
}

void eng_tensor_table_free(struct eng_tensor_table *t)
{
	struct table *tb = (struct table *)t;
	if (!tb)
		return;
	free(tb->pub.t);
	free(tb->names);
	eng_model_close(tb->model);
	if (tb->gguf)
		eng_gguf_close(tb->gguf);
	free(tb);
}

/* Appends a copy of proto named by fmt; the type name comes from the type table. */
static void table_add(struct table *tb, const struct eng_tensor *proto, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void table_add(struct table *tb, const struct eng_tensor *proto, const char *fmt, ...)
{
	if (tb->pub.n >= tb->cap)
		return; /* callers size the table exactly; never reached */
	struct eng_tensor *t = &tb->pub.t[tb->pub.n];
	char *name = tb->names[tb->pub.n++];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, NAME_LEN, fmt, ap);
	va_end(ap);
	*t = *proto;
	t->name = name;
	const struct krn_type_traits *tr = krn_type_traits(t->type_id);
	t->type = tr ? tr->name : "unknown";
}

/* Sum of every tensor's bytes in the file. */
static void table_finish(struct table *tb)
{
	tb->pub.info.weight_bytes = 0;
	for (size_t i = 0; i < tb->pub.n; i++)
		tb->pub.info.weight_bytes += tb->pub.t[i].file_bytes;
}

/* ---- llama2.c ------------------------------------------------------------------------------ */

/* A tensor's extents, from the header's numbers. */
enum extent { X_ONE, X_DIM, X_HIDDEN, X_KV_DIM, X_VOCAB, X_COUNT };

/* The tensors the forward pass reads, in its order (the file stores each per-layer tensor for
 * all layers back to back; llama2c.h gives the file order). */
static const struct {
	const char *name;
	size_t field; /* offsetof in struct eng_llama_weights */
	bool per_layer;
	enum eng_tensor_class cls;
	enum extent rows, cols;
} l2c_tensors[] = {
	{ "rms_att", offsetof(struct eng_llama_weights, rms_att), true, ENG_TENSOR_NORM, X_ONE, X_DIM },
	{ "wq", offsetof(struct eng_llama_weights, wq), true, ENG_TENSOR_ATTENTION, X_DIM, X_DIM },
	{ "wk", offsetof(struct eng_llama_weights, wk), true, ENG_TENSOR_ATTENTION, X_KV_DIM, X_DIM },
	{ "wv", offsetof(struct eng_llama_weights, wv), true, ENG_TENSOR_ATTENTION, X_KV_DIM, X_DIM },
	{ "wo", offsetof(struct eng_llama_weights, wo), true, ENG_TENSOR_ATTENTION, X_DIM, X_DIM },
	{ "rms_ffn", offsetof(struct eng_llama_weights, rms_ffn), true, ENG_TENSOR_NORM, X_ONE, X_DIM },
	{ "w1", offsetof(struct eng_llama_weights, w1), true, ENG_TENSOR_FFN, X_HIDDEN, X_DIM },
	{ "w2", offsetof(struct eng_llama_weights, w2), true, ENG_TENSOR_FFN, X_DIM, X_HIDDEN },
	{ "w3", offsetof(struct eng_llama_weights, w3), true, ENG_TENSOR_FFN, X_HIDDEN, X_DIM },
};

static const float *weight_field(const struct eng_llama_weights *w, size_t field)
{
	const float *p;
	memcpy(&p, (const char *)w + field, sizeof(p));
	return p;
}

static int tensors_llama2c(const struct eng_model *m, struct table **out, struct eng_error *err)
{
	const struct eng_model_info *in = &m->info;
	const struct eng_llama_weights *w = &m->w;
	size_t n_l2c = sizeof(l2c_tensors) / sizeof(l2c_tensors[0]);
	struct table *tb = table_new(3 + n_l2c * (size_t)in->n_layers);
	if (!tb)
		return eng_error_set(err, -ENOMEM, m->path, ENG_NO_OFFSET, "out of memory");
	int head_dim = in->dim / in->n_heads;
	uint64_t x[X_COUNT] = {
		[X_ONE] = 1,
		[X_DIM] = (uint64_t)in->dim,
		[X_HIDDEN] = (uint64_t)in->hidden_dim,
		[X_KV_DIM] = (uint64_t)head_dim * (uint64_t)in->n_kv_heads,
		[X_VOCAB] = (uint64_t)in->vocab_size,
	};
	const uint64_t f = sizeof(float);
	uint64_t table_bytes = x[X_VOCAB] * x[X_DIM] * f;

	snprintf(tb->pub.source, sizeof(tb->pub.source), "%s", m->path);
	tb->pub.info = *in;
	tb->pub.head_dim = head_dim;
	tb->pub.kv_type_id = KRN_TYPE_F32;

	table_add(tb, &(struct eng_tensor){ .type_id = KRN_TYPE_F32, .layer = -1,
					    .cls = ENG_TENSOR_EMBEDDING, .rows = x[X_VOCAB],
					    .cols = x[X_DIM], .file_bytes = table_bytes,
					    .step_bytes = x[X_DIM] * f, .data = w->token_embedding },
		  "token_embedding");
	for (int l = 0; l < in->n_layers; l++)
		for (size_t i = 0; i < n_l2c; i++) {
			uint64_t rows = x[l2c_tensors[i].rows], cols = x[l2c_tensors[i].cols];
			const float *base = weight_field(w, l2c_tensors[i].field);
			table_add(tb, &(struct eng_tensor){
					  .type_id = KRN_TYPE_F32, .layer = l,
					  .cls = l2c_tensors[i].cls, .rows = rows, .cols = cols,
					  .file_bytes = rows * cols * f, .step_bytes = rows * cols * f,
					  .data = base + (size_t)l * rows * cols },
				  "layers.%d.%s", l, l2c_tensors[i].name);
		}
	table_add(tb, &(struct eng_tensor){ .type_id = KRN_TYPE_F32, .layer = -1,
					    .cls = ENG_TENSOR_NORM, .rows = 1, .cols = x[X_DIM],
					    .file_bytes = x[X_DIM] * f, .step_bytes = x[X_DIM] * f,
					    .data = w->rms_final },
		  "rms_final");
	/* Tied: no bytes of its own in the file, but the step reads the whole table. */
	table_add(tb, &(struct eng_tensor){ .type_id = KRN_TYPE_F32, .layer = -1,
					    .cls = ENG_TENSOR_CLASSIFIER, .rows = x[X_VOCAB],
					    .cols = x[X_DIM],
					    .file_bytes = in->shared_classifier ? 0 : table_bytes,
					    .step_bytes = table_bytes, .data = w->wcls },
		  in->shared_classifier ? "wcls (tied: token_embedding)" : "wcls");
	table_finish(tb);
	*out = tb;
	return 0;
}

/* ---- GGUF ------------------------------------------------------------------------------------ */

/* A tensor's role from its name after any "blk.N." prefix (llama.cpp's LLM_TENSOR_NAMES),
 * first match wins: the norms before the attention and FFN prefixes they share. */
static const struct {
	const char *prefix;
	enum eng_tensor_class cls;
} gguf_roles[] = {
	{ "token_embd.", ENG_TENSOR_EMBEDDING },
	{ "output_norm", ENG_TENSOR_NORM },
	{ "output.", ENG_TENSOR_CLASSIFIER },
	{ "attn_norm", ENG_TENSOR_NORM },
	{ "ffn_norm", ENG_TENSOR_NORM },
	{ "attn_", ENG_TENSOR_ATTENTION },
	{ "ffn_", ENG_TENSOR_FFN },
	{ "canonical.attn_", ENG_TENSOR_ATTENTION }, /* canonical + delta (alias.h) */
	{ "canonical.ffn_", ENG_TENSOR_FFN },
};

/* The layer of "blk.N.rest" (and *rest), or -1 with *rest = name. */
static int gguf_layer(const char *name, const char **rest)
{
	int layer, used = 0;
	*rest = name;
	if (sscanf(name, "blk.%d.%n", &layer, &used) == 1 && used > 0 && layer >= 0) {
		*rest = name + used;
		return layer;
	}
	return -1;
}

/* Canonical + delta files (engine/model/alias.h): each "blk.N.K.delta" gets its canonical
 * "canonical.K.weight", and a canonical's step bytes are its bytes once per layer that reads
 * it (the engine's touched bytes, engine/runtime/session.c). */
static void link_canonicals(struct table *tb)
{
	for (size_t i = 0; i < tb->pub.n; i++) {
		struct eng_tensor *d = &tb->pub.t[i];
		const char *rest;
		size_t len = strlen(d->name);
		if (gguf_layer(d->name, &rest) < 0 || len < 6 || strcmp(d->name + len - 6, ".delta"))
			continue;
		char want[NAME_LEN];
		snprintf(want, sizeof(want), "canonical.%.*s.weight",
			 (int)(strlen(rest) - 6), rest);
		for (size_t j = 0; j < tb->pub.n; j++) {
			struct eng_tensor *c = &tb->pub.t[j];
			if (strcmp(c->name, want) || c->rows != d->rows || c->cols != d->cols)
				continue;
			d->canonical = c;
			c->step_bytes = (c->canonical_users++ ? c->step_bytes : 0) + c->file_bytes;
			break;
		}
	}
}


/* An integer hyperparameter "ARCH.key". -ENOENT is an error only when required. */
static int arch_int(const struct eng_gguf *g, const char *arch, const char *key, bool required,
		    int64_t *v, const char *source, struct eng_error *err)
{
	char full[128];
	snprintf(full, sizeof(full), "%s.%s", arch, key);
	int rc = eng_gguf_get_int(g, full, v, err);
	if (rc == -ENOENT && required)
		return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
				     "metadata key '%s' is missing: the file does not say the model's "
				     "shape", full);
	if (!rc && (*v <= 0 || *v > INT32_MAX))
		return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
				     "metadata key '%s' is %" PRId64 ": it must be a positive int",
				     full, *v);
	return rc;
}

int eng_tensors_from_gguf(const struct eng_gguf *g, const char *source,
			  struct eng_tensor_table **out, struct eng_error *err)
{
	struct table *tb = NULL;
	struct eng_gguf_str arch;
	int64_t dim = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, ctx = 0, key_len = 0;
	int rc;

	*out = NULL;
	if ((rc = eng_gguf_get_str(g, "general.architecture", &arch, err)))
		return rc == -ENOENT ? eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
						     "metadata key 'general.architecture' is "
						     "missing: not a model file")
				     : rc;
	tb = table_new((size_t)eng_gguf_n_tensors(g) + 1);
	if (!tb)
		return eng_error_set(err, -ENOMEM, source, ENG_NO_OFFSET, "out of memory");
	snprintf(tb->arch, sizeof(tb->arch), "%.*s", (int)(arch.len < 31 ? arch.len : 31), arch.ptr);
	if ((rc = arch_int(g, tb->arch, "embedding_length", true, &dim, source, err)) ||
	    (rc = arch_int(g, tb->arch, "feed_forward_length", true, &hidden, source, err)) ||
	    (rc = arch_int(g, tb->arch, "block_count", true, &layers, source, err)) ||
	    (rc = arch_int(g, tb->arch, "attention.head_count", true, &heads, source, err)) ||
	    (rc = arch_int(g, tb->arch, "context_length", true, &ctx, source, err)))
		goto out;
	/* Optional keys: without them K/V have as many heads as Q, of dim / heads each. */
	if ((rc = arch_int(g, tb->arch, "attention.head_count_kv", false, &kv_heads, source, err)) &&
	    rc != -ENOENT)
		goto out;
	if ((rc = arch_int(g, tb->arch, "attention.key_length", false, &key_len, source, err)) &&
	    rc != -ENOENT)
		goto out;
	rc = 0;

	struct eng_model_info *in = &tb->pub.info;
	snprintf(tb->pub.source, sizeof(tb->pub.source), "%s", source);
	in->format = ENG_FORMAT_GGUF;
	in->arch = tb->arch;
	in->dim = (int)dim;
	in->hidden_dim = (int)hidden;
	in->n_layers = (int)layers;
	in->n_heads = (int)heads;
	in->n_kv_heads = kv_heads ? (int)kv_heads : (int)heads;
	in->seq_len = (int)ctx;
	in->file_bytes = eng_gguf_file_bytes(g);
	/* `memwall synth`'s mark, as the model's own info reads it (gguf_model.c): a table of a
	 * synthetic file says so too (roofline's and tokenize's labels). */
	bool synth = false;
	in->synthetic = !eng_gguf_get_bool(g, "memwall.synthetic", &synth, NULL) && synth;
	tb->pub.head_dim = key_len ? (int)key_len : (int)(dim / heads);
	tb->pub.kv_type_id = KRN_TYPE_F16; /* llama.cpp's default cache type */

	const struct eng_tensor *embd = NULL;
	bool have_output = false;
	for (uint64_t i = 0; i < eng_gguf_n_tensors(g); i++) {
		const struct eng_gguf_tensor *gt = eng_gguf_tensor(g, i);
		const char *rest;
		int layer = gguf_layer(gt->name, &rest);
		uint64_t cols = gt->ne[0], rows = cols ? gt->n_elements / cols : 0;
		int cls = -1;
		for (size_t k = 0; k < sizeof(gguf_roles) / sizeof(gguf_roles[0]) && cls < 0; k++)
			if (!strncmp(rest, gguf_roles[k].prefix, strlen(gguf_roles[k].prefix)))
				cls = (int)gguf_roles[k].cls;
		if (cls < 0 && rows == 1)
			cls = ENG_TENSOR_NORM; /* a vector of some other role (rope_freqs): tiny */
		if (rows == 0) {
			rc = eng_error_set(err, -EINVAL, source, gt->offset,
					   "tensor '%s' has no elements", gt->name);
			goto out;
		}
		if (cls < 0) {
			rc = eng_error_set(err, -EINVAL, source, gt->offset,
					   "tensor '%s' has a role memwall does not know (expected "
					   "token_embd, output, blk.N.attn_*, blk.N.ffn_*, *_norm)",
					   gt->name);
			goto out;
		}
		/* A lookup reads one row; rows of any ggml type are equal-sized. */
		uint64_t step = cls == ENG_TENSOR_EMBEDDING ? gt->n_bytes / rows : gt->n_bytes;
		table_add(tb, &(struct eng_tensor){ .type_id = gt->type, .layer = layer,
						    .cls = (enum eng_tensor_class)cls, .rows = rows,
						    .cols = cols, .file_bytes = gt->n_bytes,
						    .step_bytes = step, .data = gt->data },
			  "%s", gt->name);
		if (cls == ENG_TENSOR_EMBEDDING) {
			embd = &tb->pub.t[tb->pub.n - 1];
			in->vocab_size = (int)rows;
		}
		have_output |= cls == ENG_TENSOR_CLASSIFIER;
	}
	if (!embd) {
		rc = eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
				   "tensor 'token_embd.weight' is missing: not a model file");
		goto out;
	}
	link_canonicals(tb);
	if (!have_output) { /* tied, as llama.cpp does when output.weight is absent */
		in->shared_classifier = true;
		table_add(tb, &(struct eng_tensor){ .type_id = embd->type_id, .layer = -1,
						    .cls = ENG_TENSOR_CLASSIFIER, .rows = embd->rows,
						    .cols = embd->cols, .file_bytes = 0,
						    .step_bytes = embd->file_bytes, .data = embd->data },
			  "output.weight (tied: %s)", embd->name);
	}
	table_finish(tb);
	*out = &tb->pub;
	tb = NULL;
out:
	eng_tensor_table_free(tb ? &tb->pub : NULL);
	return rc;
}

/* ---- Built-in shapes -------------------------------------------------------------------------
 *
 * Files whose shape and type mix shapes.c describes (the one description eng_synth_gguf
 * writes too), and the words a model name must hold to mean one of them. */

static const struct {
	const char *shape, *mix;   /* shapes.c's names */
	const char *keys[2][3];    /* a model name matches when it holds one of each row */
} described[] = {
	{ "falcon-7b", "q4_k_m",
	  { { "falcon-7b", "falcon7b", "falcon_7b" }, { "q4_k_m", "q4km", NULL } } },
};

static bool name_matches(const char *const keys[2][3], const char *name)
{
	for (size_t row = 0; row < 2; row++) {
		bool any = false;
		for (size_t k = 0; k < 3 && keys[row][k] && !any; k++)
			any = strcasestr(name, keys[row][k]) != NULL;
		if (!any)
			return false;
	}
	return true;
}

int eng_tensors_from_plan(const struct eng_plan *p, const char *source,
			  struct eng_tensor_table **out, struct eng_error *err)
{
	const struct eng_shape *s = p->shape;
	struct table *tb = table_new(p->n + 1);
	*out = NULL;
	if (!tb)
		return eng_error_set(err, -ENOMEM, source, ENG_NO_OFFSET, "out of memory");
	snprintf(tb->pub.source, sizeof(tb->pub.source), "%s", source);
	snprintf(tb->arch, sizeof(tb->arch), "%s", p->arch->info.name);
	tb->pub.info = (struct eng_model_info){
		.format = ENG_FORMAT_GGUF, .arch = tb->arch, .dim = s->dim,
		.hidden_dim = s->hidden, .n_layers = s->layers, .n_heads = s->heads,
		.n_kv_heads = s->kv_heads, .vocab_size = s->vocab, .seq_len = s->ctx,
		.shared_classifier = s->tied,
	};
	tb->pub.head_dim = s->dim / s->heads;
	tb->pub.kv_type_id = KRN_TYPE_F16;
	const struct eng_tensor *embd = NULL;
	for (size_t i = 0; i < p->n; i++) {
		const struct eng_plan_tensor *pt = &p->t[i];
		uint64_t row_bytes = pt->bytes / pt->ne[1];
		struct eng_tensor t = {
			.type_id = pt->type, .layer = pt->layer, .cls = pt->cls, .rows = pt->ne[1],
			.cols = pt->ne[0], .file_bytes = pt->bytes,
			.step_bytes = pt->cls == ENG_TENSOR_EMBEDDING ? row_bytes : pt->bytes,
		};
		table_add(tb, &t, "%s", pt->name);
		if (pt->cls == ENG_TENSOR_EMBEDDING)
			embd = &tb->pub.t[tb->pub.n - 1];
	}
	if (s->tied && embd) /* as a GGUF file's table: the classifier reads the embedding */
		table_add(tb, &(struct eng_tensor){ .type_id = embd->type_id, .layer = -1,
						    .cls = ENG_TENSOR_CLASSIFIER, .rows = embd->rows,
						    .cols = embd->cols, .file_bytes = 0,
						    .step_bytes = embd->file_bytes },
			  "output.weight (tied: %s)", embd->name);
	table_finish(tb);
	/* A GGUF file adds its header, metadata and alignment padding to the tensors' bytes; the
	 * description knows only the tensors. */
	tb->pub.info.file_bytes = tb->pub.info.weight_bytes;
	*out = &tb->pub;
	return 0;
}

int eng_tensors_from_shape(const char *name, struct eng_tensor_table **out,
			   struct eng_error *err)
{
	struct eng_plan *p = NULL;
	char source[512];
	int rc;

	*out = NULL;
	for (size_t i = 0; i < sizeof(described) / sizeof(described[0]); i++) {
		if (!name_matches(described[i].keys, name))
			continue;
		if ((rc = eng_plan_new(&p, NULL, described[i].shape, described[i].mix, err)))
			return rc;
		snprintf(source, sizeof(source), "built-in shape %s %s (%s; types by llama.cpp's "
			 "%s rules)", p->shape->name, described[i].mix, p->shape->cite,
			 described[i].mix);
		rc = eng_tensors_from_plan(p, source, out, err);
		eng_plan_free(p);
		return rc;
	}
	return eng_error_set(err, -ENOENT, name, ENG_NO_OFFSET,
			     "no built-in shape matches this model name; built in: "
			     "falcon-7b Q4_K_M (a name holding 'falcon-7b' and 'q4_k_m')");
}

/* ---- Public entry points --------------------------------------------------------------------- */

int eng_model_tensors(const struct eng_model *m, struct eng_tensor_table **out,
		      struct eng_error *err)
{
	struct table *tb = NULL;
	*out = NULL;
	/* A GGUF model's parsed file serves: the file is not opened again. The table borrows
	 * it (tb->gguf stays NULL), as it borrows a llama2.c model. */
	if (m->info.format == ENG_FORMAT_GGUF)
		return eng_tensors_from_gguf(m->gguf, m->path, out, err);
	int rc = tensors_llama2c(m, &tb, err);
	if (!rc)
		*out = &tb->pub;
	return rc;
}

int eng_tensors_from_file(const char *path, struct eng_tensor_table **out,
			  struct eng_error *err)
{
	struct eng_model *m = NULL;
	struct eng_gguf *g = NULL;
	struct table *tb = NULL;
	char magic[4] = { 0 };
	int rc = 0, fd;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return eng_error_set(err, -errno, path, ENG_NO_OFFSET, "cannot open the model: %s",
				     strerror(errno));
	ssize_t got = pread(fd, magic, sizeof(magic), 0);
	if (got == 4 && !memcmp(magic, "GGUF", 4)) {
		/* The file read for its magic is the one parsed: opened once. */
		if ((rc = eng_gguf_open_fd(&g, path, fd, NULL, err)))
			goto out;
		struct eng_tensor_table *pub = NULL;
		if ((rc = eng_tensors_from_gguf(g, path, &pub, err)))
			goto out;
		tb = (struct table *)pub;
		tb->gguf = g;
		g = NULL;
	} else {
		close(fd);
		if ((rc = eng_model_open(&m, path, NULL, err)))
			goto out;
		if ((rc = tensors_llama2c(m, &tb, err)))
			goto out;
		tb->model = m;
		m = NULL;
	}
	*out = &tb->pub;
out:
	eng_model_close(m);
	if (g)
		eng_gguf_close(g);
	return rc;
}

int eng_tensor_weight_row(const struct eng_tensor *t, uint64_t row, float *out, float *tmp)
{
	int rc = eng_tensor_dequantize(t, row, out);
	if (rc || !t->canonical)
		return rc;
	if ((rc = eng_tensor_dequantize(t->canonical, row, tmp)))
		return rc;
	for (uint64_t i = 0; i < t->cols; i++)
		out[i] += tmp[i];
	return 0;
}

int eng_tensor_dequantize(const struct eng_tensor *t, uint64_t row, float *out)
{
	const struct krn_type_traits *tr = krn_type_traits(t->type_id);
	if (!t->data || row >= t->rows)
		return -EINVAL;
	if (!tr || !tr->to_float)
		return -ENOTSUP;
	size_t row_bytes = krn_row_size(t->type_id, t->cols);
	if (!row_bytes)
		return -EINVAL;
	tr->to_float((const char *)t->data + row * row_bytes, out, (size_t)t->cols);
	return 0;
}
