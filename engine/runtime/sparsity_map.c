/* engine/runtime/sparsity_map.c: the static sparsity map's file (engine.h, struct eng_sparsity_map):
 * how often each FFN neuron fired over a calibration pass, one text line per layer. Text,
 * because a user reads it (which neurons are dead) and it is small (hidden_dim numbers per
 * layer). Written atomically, read with every field checked against the model. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "format/llama2c.h"

#define MAP_MAGIC "memwall-sparsity-map"
/* Tokens a calibration can count: far past any real pass, far below overflow. */
#define MAP_MAX_TOKENS (1ull << 40)
#define MAP_VERSION 2 /* 2: line 3 names the model (issue 28) */

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

	if (getline(&buf, &cap, f) >= 0 && sscanf(buf, MAP_MAGIC " %d", &version) == 1 &&
	    version == 1) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "line 1: a version 1 map, which does not say which model it was "
				   "calibrated on: run memwall sparsity-calibrate again");
		goto out;
	}
	if (version != MAP_VERSION) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "line 1: not a sparsity map (want '" MAP_MAGIC " %d'): write one "
				   "with memwall sparsity-calibrate", MAP_VERSION);
		goto out;
	}
	line = 2;
	char tok[32] = "";
	int used = 0;
	if (getline(&buf, &cap, f) < 0 ||
	    sscanf(buf, "layers %ld hidden %ld dim %ld tokens %31s%n", &layers, &hidden, &dim, tok,
		   &used) != 4 || buf[used + strspn(buf + used, " \n")]) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "line 2: want 'layers L hidden H dim D tokens T': the file is "
				   "truncated or damaged; recalibrate");
		goto out;
	}
	/* T: a whole number of tokens, 1 or more (0 would make every neuron dead), no sign, no
	 * overflow. */
	char *tend = NULL;
	errno = 0;
	tokens = strtoull(tok, &tend, 10);
	if (tok[0] < '0' || tok[0] > '9' || *tend || errno || tokens == 0 ||
	    tokens > MAP_MAX_TOKENS) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "line 2: field 'tokens' is '%s', not a count from 1 to %llu: the "
				   "file is damaged; recalibrate", tok, (unsigned long long)MAP_MAX_TOKENS);
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
	line = 3;
	if (getline(&buf, &cap, f) < 0 || strncmp(buf, "model ", 6) ||
	    strlen(buf + 6) >= sizeof((*out)->model) || strspn(buf + 6, " \n") == strlen(buf + 6)) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "line 3: want 'model act=A vocab=V bytes=B fnv=H' (which model "
				   "the map was calibrated on): the file is damaged; recalibrate");
		goto out;
	}
	snprintf((*out)->model, sizeof((*out)->model), "%.*s", (int)strcspn(buf + 6, "\n"),
		 buf + 6);
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
	/* Never blocking on a FIFO or reading /dev/zero forever: a regular file, of at most
	 * the size a map of this model can have (11 bytes per count, the lines' labels). */
	struct stat st;
	uint64_t most = 4096 + (uint64_t)(info->n_layers > 0 ? info->n_layers : 0) *
			       (32 + 11 * (uint64_t)(info->hidden_dim > 0 ? info->hidden_dim : 0));
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return eng_error_set(err, -errno, path, ENG_NO_OFFSET, "cannot open the map: %s",
				     strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > most) {
		int e = fstat(fd, &st) ? errno : 0;
		close(fd);
		if (e)
			return eng_error_set(err, -e, path, ENG_NO_OFFSET, "cannot read the map: %s",
					     strerror(e));
		if (!S_ISREG(st.st_mode))
			return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET, "is not a regular "
					     "file (a FIFO, a device or a folder): give the map "
					     "memwall sparsity-calibrate wrote");
		return eng_error_set(err, -EFBIG, path, ENG_NO_OFFSET, "is %lld bytes, more than "
				     "a map of this model can be (%llu): not a sparsity map",
				     (long long)st.st_size, (unsigned long long)most);
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
	}
	int rc = read_map(out, f, path, info, err);
	fclose(f);
	return rc;
}

/* FNV-1a, 64 bits (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/). */
static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

int eng_sparsity_model_id(const char *model_path, const struct eng_model_info *info, char *out,
			  size_t n, struct eng_error *err)
{
	enum { SPAN = 1 << 20 };
	unsigned char *buf = malloc(SPAN);
	uint64_t h = 0xcbf29ce484222325ull;
	struct stat st;
	int fd = open(model_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), rc = 0;
	if (!buf || fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		rc = eng_error_set(err, !buf ? -ENOMEM : fd < 0 ? -errno : -EINVAL, model_path,
				   ENG_NO_OFFSET, "cannot read the model to name it in the map");
		goto out;
	}
	/* The first and the last MiB: the header, the embedding's start, the last layer's
	 * end. Two models of one shape differ there unless they are the same weights. */
	for (int k = 0; k < 2; k++) {
		off_t at = k == 0 ? 0 : st.st_size > SPAN ? st.st_size - SPAN : 0;
		ssize_t got = pread(fd, buf, SPAN, at);
		if (got < 0) {
			rc = eng_error_set(err, -errno, model_path, ENG_NO_OFFSET, "cannot read: %s",
					   strerror(errno));
			goto out;
		}
		h = fnv1a(h, buf, (size_t)got);
	}
	snprintf(out, n, "act=%s vocab=%d bytes=%lld fnv=%016llx", eng_ffn_act_name(info->ffn_act),
		 info->vocab_size, (long long)st.st_size, (unsigned long long)h);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

int eng_sparsity_map_check_model(const struct eng_sparsity_map *m, const char *path,
				 const char *model_path, const struct eng_model_info *info,
				 struct eng_error *err)
{
	char id[sizeof(m->model)];
	int rc = eng_sparsity_model_id(model_path, info, id, sizeof(id), err);
	if (rc)
		return rc;
	if (strcmp(id, m->model))
		return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				     "line 3: the map was calibrated on the model '%s', this model "
				     "is '%s'%s: run memwall sparsity-calibrate on this one", m->model,
				     id, strncmp(id, m->model, strcspn(id, " ")) ?
				     " (another FFN activation)" : "");
	return 0;
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
	fprintf(f, MAP_MAGIC " %d\nlayers %d hidden %d dim %d tokens %" PRIu64 "\nmodel %s\n",
		MAP_VERSION, m->n_layers, m->hidden_dim, m->dim, m->tokens,
		m->model[0] ? m->model : "unknown");
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
	if ((rc = eng_l2c_layout_compute(lay, c, path, err)))
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
