/* engine/synth/synth.c: deterministic synthetic llama2.c checkpoints, for measuring the memory wall
 * without shipping trained weights: the real shapes, seeded random values.
 *
 * The file is "ak42" version 1 (llama2c.h), tensors in llama2c.c's order, with the marker
 * "memwall-synthetic seed=N shape=S" in the header's padding, which eng_model_open reports as
 * info.synthetic. Matrices are uniform with standard deviation 0.02 (the scale of llama2.c
 * model.py's normal init); RMSNorm weights are 1 +- 0.05. Each tensor has its own stream,
 * seeded from (seed, tensor), so the bytes depend only on the seed and the shape. The file is
 * written in 1 MiB pieces to a temporary file beside the target, synced, and renamed over it,
 * so a reader never sees half a model.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/llama2c.h"
#include "model/arch.h"
#include "rng.h"
#include "synth/synth_sparsity.h"
#include "synth/varied.h"

/* The TinyStories models of karpathy/llama2.c's README ("models" table; hidden_dim from
 * model.py's rule: 2/3 of 4 dim, rounded up to a multiple of 32). */
static const struct shape {
	const char *name;
	int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
} shapes[] = {
	{ "stories260K", 64, 172, 5, 8, 4, 512, 512 },
	{ "stories15M", 288, 768, 6, 6, 6, 32000, 256 },
	{ "stories42M", 512, 1376, 8, 8, 8, 32000, 1024 },
	{ "stories110M", 768, 2048, 12, 12, 12, 32000, 1024 },
};

#define CHUNK_FLOATS (256 * 1024)
#define MATRIX_STD 0.02f
#define NORM_SPREAD 0.05f

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t k = write(fd, p, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

/* A ReLU model's w1 (layer, hidden_dim, dim), row by row (synth_sparsity.h's clustered rows), with
 * sp the bias channel's weights in column 0. */
static int write_gate(int fd, float *buf, const struct l2c_config *c, uint64_t seed,
		      const struct eng_synth_sparsity *sp)
{
	double z = eng_synth_bias_z(sp);
	for (int l = 0; l < c->n_layers; l++)
		for (int r = 0; r < c->hidden_dim; r++) {
			if (eng_cancelled())
				return -ECANCELED;
			eng_synth_gate_row(buf, (size_t)c->dim, seed, l, (uint64_t)r);
			if (sp)
				buf[0] = eng_synth_gate_bias(c->dim, l, eng_synth_dead_neuron(sp, seed, l,
										      (uint64_t)r)
								   ? SYNTH_DEAD_SIGMAS : z);
			int rc = write_all(fd, buf, (size_t)c->dim * sizeof(float));
			if (rc)
				return rc;
		}
	return 0;
}

/* The bias channel's fixes (synth_sparsity.h) to values [i0, i0 + n) of tensor t: the
 * embedding's column 0 is SYNTH_BIAS_CHANNEL, wo's and w2's row 0 of each layer zero. */
static void bias_channel(float *buf, size_t n, uint64_t i0, enum l2c_tensor t,
			 const struct l2c_config *c)
{
	uint64_t d = (uint64_t)c->dim, cols = t == L2C_W2 ? (uint64_t)c->hidden_dim : d;
	for (size_t i = 0; i < n; i++) {
		uint64_t k = i0 + i;
		if (t == L2C_TOKEN_EMBEDDING && k % d == 0)
			buf[i] = SYNTH_BIAS_CHANNEL;
		else if ((t == L2C_WO || t == L2C_W2) && k % (d * cols) < cols)
			buf[i] = 0.0f;
	}
}

/* The varied construction's fixes (varied.h) to values [i0, i0 + n) of tensor t, row by row:
 * each tensor is (layers, rows, row length) in llama2.c's order. */
static void varied_fix(const struct synth_varied *v, float *buf, size_t n, uint64_t i0,
		       enum l2c_tensor t, const struct l2c_config *c)
{
	uint64_t d = (uint64_t)c->dim, kv = (uint64_t)c->n_kv_heads * (d / (uint64_t)c->n_heads);
	uint64_t len = t == L2C_W2 ? (uint64_t)c->hidden_dim : d, rows;
	enum varied_role role;
	switch (t) {
	case L2C_TOKEN_EMBEDDING: role = VR_EMBD; rows = (uint64_t)c->vocab_size; break;
	case L2C_RMS_ATT: case L2C_RMS_FFN: role = VR_NORM; rows = 1; break;
	case L2C_RMS_FINAL: role = VR_OUT_NORM; rows = 1; break;
	case L2C_WQ: role = VR_WQ; rows = d; break;
	case L2C_WK: role = VR_WK; rows = kv; break;
	case L2C_WV: role = VR_WV; rows = kv; break;
	case L2C_WO: role = VR_WO; rows = d; break;
	case L2C_W2: role = VR_W2; rows = d; break;
	default: return;
	}
	for (uint64_t k = i0; k < i0 + n;) {
		uint64_t row = k / len, col = k % len, m = len - col;
		if (m > i0 + n - k)
			m = i0 + n - k;
		bool global = t == L2C_TOKEN_EMBEDDING || t == L2C_RMS_FINAL;
		eng_synth_varied_row(v, role, global ? -1 : (int)(row / rows), row % rows,
				 buf + (k - i0), col, m);
		k += m;
	}
}

/* Streams one tensor of `bytes` bytes of seeded values to fd (with sp, the bias channel's
 * fixes; with v, the varied construction's). */
static int write_tensor(int fd, float *buf, enum l2c_tensor t, uint64_t bytes, uint64_t seed,
			const struct l2c_config *c, const struct eng_synth_sparsity *sp,
			const struct synth_varied *v)
{
	bool norm = t == L2C_RMS_ATT || t == L2C_RMS_FFN || t == L2C_RMS_FINAL;
	/* Uniform on [-a, a] has standard deviation a / sqrt(3). */
	float center = norm ? 1.0f : 0.0f, a = norm ? NORM_SPREAD : MATRIX_STD * sqrtf(3.0f);
	struct eng_rng rng;
	uint64_t mix = seed ^ (0x9e3779b97f4a7c15ull * ((uint64_t)t + 1));
	eng_rng_seed(&rng, eng_splitmix64(&mix));
	uint64_t left = bytes / sizeof(float);
	while (left) {
		if (eng_cancelled())
			return -ECANCELED;
		size_t n = left < CHUNK_FLOATS ? (size_t)left : CHUNK_FLOATS;
		for (size_t i = 0; i < n; i++)
			buf[i] = center + a * (2.0f * eng_rng_float(&rng) - 1.0f);
		if (sp)
			bias_channel(buf, n, bytes / sizeof(float) - left, t, c);
		if (v)
			varied_fix(v, buf, n, bytes / sizeof(float) - left, t, c);
		int rc = write_all(fd, buf, n * sizeof(float));
		if (rc)
			return rc;
		left -= n;
	}
	return 0;
}

static void shape_names(char *buf, size_t len, const char *sep)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]) && used < len; i++) {
		int k = snprintf(buf + used, len - used, "%s%s", i ? sep : "", shapes[i].name);
		if (k < 0)
			break;
		used += (size_t)k;
	}
}

void eng_synth_llama2c_shape_names(char *buf, size_t len)
{
	shape_names(buf, len, " ");
}

/* fsync the directory holding path, so the rename itself is durable. */
static void sync_dir(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		return;
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	free(copy);
}

int eng_synth_llama2c(const char *path, const char *shape, uint64_t seed, struct eng_error *err)
{
	return eng_synth_llama2c_act(path, shape, seed, ENG_ACT_SILU, err);
}

int eng_synth_llama2c_act(const char *path, const char *shape, uint64_t seed,
			  enum eng_ffn_act act, struct eng_error *err)
{
	return eng_synth_llama2c_sparse(path, shape, seed, act, NULL, err);
}

int eng_synth_llama2c_sparse(const char *path, const char *shape, uint64_t seed,
			     enum eng_ffn_act act, const struct eng_synth_sparsity *sp,
			     struct eng_error *err)
{
	struct eng_synth_opts o = { .construction = ENG_SYNTH_LEGACY, .act = act, .sp = sp };
	return eng_synth_llama2c_opts(path, shape, seed, &o, err);
}

const char *eng_synth_construction_name(enum eng_synth_construction c)
{
	return c == ENG_SYNTH_VARIED ? "varied" : c == ENG_SYNTH_LEGACY ? "legacy" : NULL;
}

int eng_synth_construction_parse(const char *name, enum eng_synth_construction *out)
{
	if (name && !strcmp(name, "varied"))
		*out = ENG_SYNTH_VARIED;
	else if (name && !strcmp(name, "legacy"))
		*out = ENG_SYNTH_LEGACY;
	else
		return -EINVAL;
	return 0;
}

int eng_synth_llama2c_opts(const char *path, const char *shape, uint64_t seed,
			   const struct eng_synth_opts *o, struct eng_error *err)
{
	static const struct eng_synth_opts zero;
	if (!o)
		o = &zero;
	enum eng_ffn_act act = o->act;
	const struct eng_synth_sparsity *sp = o->sp;
	struct synth_varied var, *v = NULL;
	const struct shape *sh = NULL;
	struct l2c_layout lay;
	unsigned char header[L2C_V1_HEADER_BYTES] = { 0 };
	char *tmp = NULL;
	float *buf = NULL;
	int fd = -1, rc = 0;

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		if (shape && !strcmp(shapes[i].name, shape))
			sh = &shapes[i];
	if (!sh) {
		char names[128];
		shape_names(names, sizeof(names), ", ");
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "unknown shape '%s': choose one of %s", shape ? shape : "",
				     names);
	}
	struct l2c_config c = {
		.version = 1, .dim = sh->dim, .hidden_dim = sh->hidden_dim, .n_layers = sh->n_layers,
		.n_heads = sh->n_heads, .n_kv_heads = sh->n_kv_heads, .vocab_size = sh->vocab_size,
		.seq_len = sh->seq_len, .shared_classifier = true,
	};
	if (act != ENG_ACT_SILU && act != ENG_ACT_RELU && act != ENG_ACT_RELU2)
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "activation '%s': a llama2.c model takes silu, relu or relu2",
				     eng_ffn_act_name(act) ? eng_ffn_act_name(act) : "?");
	if (sp && (act == ENG_ACT_SILU || !(sp->relu_sparsity < 1.0) ||
		   !(sp->dead_fraction >= 0.0 && sp->dead_fraction < 1.0)))
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET,
				     "activation statistics need a ReLU or ReLU^2 model, a "
				     "relu_sparsity below 1 and a dead_fraction in [0, 1)");
	if ((rc = eng_l2c_layout_compute(&lay, &c, path, err)))
		return rc;
	if (o->construction == ENG_SYNTH_VARIED) {
		char why[160];
		if ((rc = eng_synth_varied_init(&var, c.dim, c.n_heads, c.n_kv_heads, c.vocab_size,
					    eng_arch_llama2c(), MATRIX_STD, seed, why,
					    sizeof(why))))
			return eng_error_set(err, rc, "", ENG_NO_OFFSET, "%s", why);
		v = &var;
	} else if (o->construction != ENG_SYNTH_LEGACY) {
		return eng_error_set(err, -EINVAL, "", ENG_NO_OFFSET, "construction %d: give "
				     "varied or legacy", (int)o->construction);
	}

	uint32_t magic = L2C_MAGIC;
	int32_t version = 1, params[7] = { c.dim, c.hidden_dim, c.n_layers, c.n_heads,
					   c.n_kv_heads, c.vocab_size, c.seq_len };
	memcpy(header, &magic, 4);
	memcpy(header + 4, &version, 4);
	memcpy(header + 8, params, sizeof(params));
	header[36] = 1; /* shared_classifier */
	header[L2C_ACT_OFFSET] = (unsigned char)act;
	snprintf((char *)header + L2C_SYNTH_MARKER_OFFSET,
		 L2C_V1_HEADER_BYTES - L2C_SYNTH_MARKER_OFFSET, "%s seed=%" PRIu64 " shape=%s%s%s",
		 L2C_SYNTH_MARKER, seed, sh->name, act ? " activation=" : "",
		 act ? eng_ffn_act_name(act) : "");
	if (sp) {
		size_t used = strlen((char *)header + L2C_SYNTH_MARKER_OFFSET);
		snprintf((char *)header + L2C_SYNTH_MARKER_OFFSET + used,
			 L2C_V1_HEADER_BYTES - L2C_SYNTH_MARKER_OFFSET - used,
			 " bias_channel=0 relu_sparsity=%.3f dead_fraction=%.3f",
			 sp->relu_sparsity < 0.0 ? 0.5 : sp->relu_sparsity, sp->dead_fraction);
	}
	if (v) { /* legacy files keep the marker they always had */
		size_t used = strlen((char *)header + L2C_SYNTH_MARKER_OFFSET);
		snprintf((char *)header + L2C_SYNTH_MARKER_OFFSET + used,
			 L2C_V1_HEADER_BYTES - L2C_SYNTH_MARKER_OFFSET - used,
			 " construction=varied");
	}

	size_t len = strlen(path);
	tmp = malloc(len + 8);
	buf = malloc(CHUNK_FLOATS * sizeof(float));
	if (!tmp || !buf) {
		rc = eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
		goto out;
	}
	snprintf(tmp, len + 8, "%s.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = -errno;
		eng_error_set(err, rc, path, ENG_NO_OFFSET, "cannot create a file beside it: %s",
			      strerror(errno));
		free(tmp);
		tmp = NULL; /* nothing to remove */
		goto out;
	}
	if (fchmod(fd, 0644))
		rc = -errno;
	else
		rc = write_all(fd, header, sizeof(header));
	for (size_t i = 0; !rc && i < lay.n; i++)
		rc = act != ENG_ACT_SILU && lay.span[i].tensor == L2C_W1
			     ? write_gate(fd, buf, &c, seed, sp)
			     : write_tensor(fd, buf, lay.span[i].tensor, lay.span[i].bytes, seed,
					    &c, sp, v);
	if (!rc && fsync(fd))
		rc = -errno;
	/* Drop the pages just written from the page cache: write() cached them as small folios,
	 * which a mapping can never map with huge pages. A reader then faults the file in afresh,
	 * into the large folios recent kernels read ahead into (Linux 6.18 and ext4 here), and
	 * its mapping gets 2 MiB entries (FilePmdMapped in smaps): fewer TLB misses, about 7%
	 * more tok/s at one thread on stories110M on this project's VM. */
	if (!rc)
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (!rc) {
		int closed = close(fd);
		fd = -1;
		if (closed || rename(tmp, path))
			rc = -errno;
	}
	if (rc) {
		eng_error_set(err, rc, path, ENG_NO_OFFSET, "%s%s",
			      rc == -ECANCELED ? "stopped by a signal while writing the model: "
						 "the partial file was removed"
					       : "cannot write the model: ",
			      rc == -ECANCELED ? "" : strerror(-rc));
		goto out;
	}
	free(tmp);
	tmp = NULL; /* renamed: nothing to remove */
	sync_dir(path);
out:
	if (fd >= 0)
		close(fd);
	if (tmp)
		unlink(tmp);
	free(tmp);
	free(buf);
	return rc;
}
