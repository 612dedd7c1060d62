/* engine/sparsity_map.c: the static sparsity map's file (engine.h, struct eng_sparsity_map):
 * how often each FFN neuron fired over a calibration pass, one text line per layer. Text,
 * because a user reads it (which neurons are dead) and it is small (hidden_dim numbers per
 * layer). Written atomically, read with every field checked against the model. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"

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
