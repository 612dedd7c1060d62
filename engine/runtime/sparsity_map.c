/* engine/runtime/sparsity_map.c: the static sparsity map's file (engine.h, struct eng_sparsity_map):
 * how often each FFN neuron fired over a calibration pass, one text line per layer. Text,
 * because a user reads it (which neurons are dead) and it is small (hidden_dim numbers per
 * layer). Written atomically, read with every field checked against the model. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "format/llama2c.h"

#define MAP_MAGIC "memwall-sparsity-map"
#define MAP_VERSION 1

struct eng_sparsity_map *eng_sparsity_map_new(int n_layers, int hidden_dim, int dim)
{
	if (n_layers <= 0 || hidden_dim <= 0)
		return NULL;
	struct eng_sparsity_map *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->n_layers = n_layers;
	m->hidden_dim = hidden_dim;
	m->dim = dim;
	m->fired = calloc((size_t)n_layers * (size_t)hidden_dim, sizeof(uint32_t));
	if (!m->fired) {
		free(m);
		return NULL;
	}
	return m;
}

void eng_sparsity_map_free(struct eng_sparsity_map *m)
{
	if (!m)
		return;
	free(m->fired);
	free(m);
}

/* One header field "name value" against what the model has (want < 0: any value). */
static int check_field(const char *path, int line, const char *name, long got, long want,
		       struct eng_error *err)
{
	if (want >= 0 && got != want)
		return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				     "line %d: field '%s' is %ld, the model has %ld: the map was "
				     "calibrated on another model; run memwall sparsity-calibrate "
				     "on this one",
				     line, name, got, want);
	return 0;
}

/* Layer l's counts from line (after "layer l"). */
static int read_layer(struct eng_sparsity_map *m, const char *path, int line, int l, char *p,
		      struct eng_error *err)
{
	for (int r = 0; r < m->hidden_dim; r++) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(p, &end, 10);
		if (end == p || errno || v > UINT32_MAX || v > m->tokens)
			return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
					     "line %d: layer %d has %d counts, the model's "
					     "hidden_dim is %d (or count %d is not a number <= "
					     "tokens): the file is truncated or damaged; "
					     "recalibrate",
					     line, l, r, m->hidden_dim, r);
		m->fired[(size_t)l * (size_t)m->hidden_dim + (size_t)r] = (uint32_t)v;
		p = end;
	}
	while (*p == ' ' || *p == '\n')
		p++;
	if (*p)
		return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				     "line %d: layer %d has more than hidden_dim = %d counts: "
				     "the map was calibrated on another model; recalibrate",
				     line, l, m->hidden_dim);
	return 0;
}

static int read_map(struct eng_sparsity_map **out, FILE *f, const char *path,
		    const struct eng_model_info *info, struct eng_error *err)
{
	char *buf = NULL;
	size_t cap = 0;
	int version = 0, line = 0, rc = 0;
	long layers, hidden, dim;
	uint64_t tokens;

	if (getline(&buf, &cap, f) < 0 || sscanf(buf, MAP_MAGIC " %d", &version) != 1 ||
	    version != MAP_VERSION) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "line 1: not a sparsity map (want '" MAP_MAGIC " %d'): write one "
				   "with memwall sparsity-calibrate", MAP_VERSION);
		goto out;
	}
	line = 2;
	if (getline(&buf, &cap, f) < 0 ||
	    sscanf(buf, "layers %ld hidden %ld dim %ld tokens %" SCNu64, &layers, &hidden, &dim,
		   &tokens) != 4) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "line 2: want 'layers L hidden H dim D tokens T': the file is "
				   "truncated or damaged; recalibrate");
		goto out;
	}
	if ((rc = check_field(path, 2, "layers", layers, info->n_layers, err)) ||
	    (rc = check_field(path, 2, "hidden", hidden, info->hidden_dim, err)) ||
	    (rc = check_field(path, 2, "dim", dim, info->dim, err)))
		goto out;
	*out = eng_sparsity_map_new((int)layers, (int)hidden, (int)dim);
	if (!*out) {
		rc = eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
		goto out;
	}
	(*out)->tokens = tokens;
	for (int l = 0; l < (int)layers; l++) {
		line++;
		int at = -1, n = 0;
		if (getline(&buf, &cap, f) < 0 || sscanf(buf, "layer %d%n", &at, &n) != 1 ||
		    at != l) {
			rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
					   "line %d: want 'layer %d' (field 'layers' says %ld): the "
					   "file is truncated or damaged; recalibrate",
					   line, l, layers);
			goto out;
		}
		if ((rc = read_layer(*out, path, line, l, buf + n, err)))
			goto out;
	}
	if (getline(&buf, &cap, f) >= 0 && strspn(buf, " \n") != strlen(buf))
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "line %d: more layers than field 'layers' = %ld: recalibrate",
				   line + 1, layers);
out:
	free(buf);
	if (rc) {
		eng_sparsity_map_free(*out);
		*out = NULL;
	}
	return rc;
}

int eng_sparsity_map_load(struct eng_sparsity_map **out, const char *path,
			  const struct eng_model_info *info, struct eng_error *err)
{
	*out = NULL;
	FILE *f = fopen(path, "r");
	if (!f)
		return eng_error_set(err, -errno, path, ENG_NO_OFFSET, "cannot open the map: %s",
				     strerror(errno));
	int rc = read_map(out, f, path, info, err);
	fclose(f);
	return rc;
}

int eng_sparsity_map_save(const struct eng_sparsity_map *m, const char *path,
			  struct eng_error *err)
{
	size_t len = strlen(path);
	char *tmp = malloc(len + 8);
	FILE *f = NULL;
	int fd = -1, rc = 0;
	if (!tmp)
		return eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
	snprintf(tmp, len + 8, "%s.XXXXXX", path);
	if ((fd = mkstemp(tmp)) < 0 || !(f = fdopen(fd, "w"))) {
		rc = eng_error_set(err, -errno, path, ENG_NO_OFFSET,
				   "cannot create a file beside it: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		else
			tmp[0] = '\0';
		goto out;
	}
	fprintf(f, MAP_MAGIC " %d\nlayers %d hidden %d dim %d tokens %" PRIu64 "\n", MAP_VERSION,
		m->n_layers, m->hidden_dim, m->dim, m->tokens);
	for (int l = 0; l < m->n_layers; l++) {
		fprintf(f, "layer %d", l);
		for (int r = 0; r < m->hidden_dim; r++)
			fprintf(f, " %" PRIu32, m->fired[(size_t)l * (size_t)m->hidden_dim + (size_t)r]);
		fputc('\n', f);
	}
	if (fflush(f) || ferror(f) || fsync(fileno(f)))
		rc = -errno ? -errno : -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	f = NULL;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc) {
		eng_error_set(err, rc, path, ENG_NO_OFFSET, "cannot write the map: %s",
			      strerror(-rc));
		goto out;
	}
	tmp[0] = '\0'; /* renamed: nothing to remove */
out:
	if (tmp[0])
		unlink(tmp);
	free(tmp);
	return rc;
}

/* Writes len bytes to path atomically (a temporary file beside it, synced, renamed). */
static int write_file(const char *path, const void *data, size_t len, struct eng_error *err)
{
	size_t n = strlen(path);
	char *tmp = malloc(n + 8);
	int fd = -1, rc = 0;
	if (!tmp)
		return eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
	snprintf(tmp, n + 8, "%s.XXXXXX", path);
	if ((fd = mkstemp(tmp)) < 0) {
		rc = eng_error_set(err, -errno, path, ENG_NO_OFFSET,
				   "cannot create a file beside it: %s", strerror(errno));
		free(tmp);
		return rc;
	}
	const unsigned char *p = data;
	while (len && !rc) {
		ssize_t k = write(fd, p, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			rc = k < 0 ? -errno : -EIO;
		else {
			p += k;
			len -= (size_t)k;
		}
	}
	if (!rc && (fchmod(fd, 0644) || fsync(fd)))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc) {
		unlink(tmp);
		eng_error_set(err, rc, path, ENG_NO_OFFSET, "cannot write: %s", strerror(-rc));
	}
	free(tmp);
	return rc;
}

/* ---- R5: a frequency-ordered copy of a llama2.c model ------------------------------------ */

/* perm[l][k] for layer l: the neuron placed at k, by calibration firing count, most first
 * (ties by index, so the order is deterministic). */
static int by_count_desc(const void *a, const void *b, void *ctx)
{
	const uint32_t *fired = ctx;
	int x = *(const int *)a, y = *(const int *)b;
	if (fired[x] != fired[y])
		return fired[x] > fired[y] ? -1 : 1;
	return (x > y) - (x < y);
}

/* Permutes, in the whole file image buf, layer l's w1 and w3 rows and w2 columns by perm. */
static int permute_layer(unsigned char *buf, const struct l2c_layout *lay,
			 const struct l2c_config *c, int l, const int *perm)
{
	size_t d = (size_t)c->dim, h = (size_t)c->hidden_dim;
	float *tmp = malloc((d > h ? d : h) * h * sizeof(float));
	if (!tmp)
		return -ENOMEM;
	for (size_t i = 0; i < lay->n; i++) {
		enum l2c_tensor t = lay->span[i].tensor;
		float *m = (float *)(buf + lay->span[i].offset) + (size_t)l * d * h;
		if (t == L2C_W1 || t == L2C_W3) { /* (hidden, dim): rows */
			for (size_t k = 0; k < h; k++)
				memcpy(tmp + k * d, m + (size_t)perm[k] * d, d * sizeof(float));
			memcpy(m, tmp, d * h * sizeof(float));
		} else if (t == L2C_W2) { /* (dim, hidden): columns */
			for (size_t r = 0; r < d; r++)
				for (size_t k = 0; k < h; k++)
					tmp[r * h + k] = m[r * h + (size_t)perm[k]];
			memcpy(m, tmp, d * h * sizeof(float));
		}
	}
	free(tmp);
	return 0;
}

/* Reads path whole; checks it is an "ak42" version 1 file the layout describes. */
static int read_l2c(const char *path, unsigned char **buf, size_t *len, struct l2c_config *c,
		    struct l2c_layout *lay, struct eng_error *err)
{
	FILE *f = fopen(path, "rb");
	int rc = 0;
	*buf = NULL;
	if (!f)
		return eng_error_set(err, -errno, path, ENG_NO_OFFSET, "cannot open: %s",
				     strerror(errno));
	if (fseek(f, 0, SEEK_END) || (long)(*len = (size_t)ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(*buf = malloc(*len ? *len : 1)) || fread(*buf, 1, *len, f) != *len) {
		rc = eng_error_set(err, -EIO, path, ENG_NO_OFFSET, "cannot read the model");
		goto out;
	}
	uint32_t magic;
	int32_t version, p[7];
	if (*len < L2C_V1_HEADER_BYTES || (memcpy(&magic, *buf, 4), magic != L2C_MAGIC) ||
	    (memcpy(&version, *buf + 4, 4), version != 1)) {
		rc = eng_error_set(err, -EINVAL, path, 0, "a frequency-ordered copy needs a "
				   "llama2.c \"ak42\" version 1 file (memwall synth writes them)");
		goto out;
	}
	memcpy(p, *buf + 8, sizeof(p));
	*c = (struct l2c_config){ .version = 1, .dim = p[0], .hidden_dim = p[1], .n_layers = p[2],
				  .n_heads = p[3], .n_kv_heads = p[4], .vocab_size = p[5],
				  .seq_len = p[6], .shared_classifier = (*buf)[36] != 0 };
	if ((rc = l2c_layout_compute(lay, c, path, err)))
		goto out;
	if (lay->end > *len)
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET, "the file ends before its "
				   "last tensor");
out:
	fclose(f);
	if (rc) {
		free(*buf);
		*buf = NULL;
	}
	return rc;
}

int eng_sparsity_reorder_llama2c(const char *in, const char *out,
				 const struct eng_sparsity_map *m, struct eng_error *err)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	struct l2c_config c;
	struct l2c_layout lay;
	int *perm = NULL, rc;
	if ((rc = read_l2c(in, &buf, &len, &c, &lay, err)))
		return rc;
	if (c.n_layers != m->n_layers || c.hidden_dim != m->hidden_dim) {
		rc = eng_error_set(err, -EINVAL, in, ENG_NO_OFFSET, "the map has %d layers of %d "
				   "neurons, the model %d of %d", m->n_layers, m->hidden_dim,
				   c.n_layers, c.hidden_dim);
		goto out;
	}
	perm = malloc((size_t)c.hidden_dim * sizeof(int));
	if (!perm) {
		rc = eng_error_set(err, -ENOMEM, in, ENG_NO_OFFSET, "out of memory");
		goto out;
	}
	for (int l = 0; l < c.n_layers; l++) {
		for (int k = 0; k < c.hidden_dim; k++)
			perm[k] = k;
		qsort_r(perm, (size_t)c.hidden_dim, sizeof(int), by_count_desc,
			m->fired + (size_t)l * (size_t)c.hidden_dim);
		if ((rc = permute_layer(buf, &lay, &c, l, perm))) {
			eng_error_set(err, rc, in, ENG_NO_OFFSET, "out of memory");
			goto out;
		}
	}
	/* Say so in the synthetic marker, where there is room. */
	char *mark = (char *)buf + L2C_SYNTH_MARKER_OFFSET;
	size_t room = L2C_V1_HEADER_BYTES - L2C_SYNTH_MARKER_OFFSET, used = strnlen(mark, room);
	if (!strncmp(mark, L2C_SYNTH_MARKER, strlen(L2C_SYNTH_MARKER)) && used + 21 < room)
		memcpy(mark + used, " ffn_order=frequency", 21);
	rc = write_file(out, buf, len, err);
out:
	free(perm);
	free(buf);
	return rc;
}
