/* engine/model/alias.c: canonical + delta weights (alias.h): the metadata, the binding slots, the
 * byte sums, and the synthetic rows. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alias.h"
#include "quants.h"

static const size_t kind_fields[ALIAS_KINDS] = {
	offsetof(struct eng_layer, wq),     offsetof(struct eng_layer, wk),
	offsetof(struct eng_layer, wv),     offsetof(struct eng_layer, wqkv),
	offsetof(struct eng_layer, wo),     offsetof(struct eng_layer, w_gate),
	offsetof(struct eng_layer, w_up),   offsetof(struct eng_layer, w_down),
};

int eng_alias_kind(size_t field)
{
	for (int k = 0; k < ALIAS_KINDS; k++)
		if (kind_fields[k] == field)
			return k;
	return -1;
}

uint32_t eng_alias_delta_type(uint32_t base)
{
	static const uint32_t table[KRN_TYPE_COUNT] = {
		[KRN_TYPE_F32] = KRN_TYPE_Q8_0,  [KRN_TYPE_F16] = KRN_TYPE_Q8_0,
		[KRN_TYPE_BF16] = KRN_TYPE_Q8_0, [KRN_TYPE_Q8_0] = KRN_TYPE_Q4_0,
		[KRN_TYPE_Q5_0] = KRN_TYPE_Q4_0, [KRN_TYPE_Q4_0] = KRN_TYPE_Q4_0,
		[KRN_TYPE_Q5_1] = KRN_TYPE_Q4_1, [KRN_TYPE_Q4_1] = KRN_TYPE_Q4_1,
		[KRN_TYPE_Q4_K] = KRN_TYPE_Q2_K, [KRN_TYPE_Q5_K] = KRN_TYPE_Q3_K,
		[KRN_TYPE_Q6_K] = KRN_TYPE_Q4_K, [KRN_TYPE_Q3_K] = KRN_TYPE_Q2_K,
		[KRN_TYPE_Q2_K] = KRN_TYPE_Q2_K,
	};
	/* An unlisted type (0 in the table: no entry maps to F32) gets q8_0. */
	uint32_t t = base < KRN_TYPE_COUNT ? table[base] : 0;
	return t ? t : KRN_TYPE_Q8_0;
}

void eng_alias_names(const char *layer_fmt, char *canon, char *delta)
{
	const size_t cap = ENG_GGUF_MAX_NAME + 16;
	const char *kind = strstr(layer_fmt, "%d.");
	kind = kind ? kind + 3 : layer_fmt;
	size_t stem = strlen(kind);
	if (stem > 7 && !strcmp(kind + stem - 7, ".weight"))
		stem -= 7;
	if (canon)
		snprintf(canon, cap, "canonical.%.*s.weight", (int)stem, kind);
	if (delta)
		snprintf(delta, cap, "%.*s%.*s.delta", (int)(kind - layer_fmt), layer_fmt,
			 (int)stem, kind);
}

static int meta_u32(const struct eng_gguf *g, const char *key, int64_t *v, const char *path,
		    struct eng_error *err)
{
	int rc = eng_gguf_get_int(g, key, v, err);
	if (rc == -ENOENT)
		return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				     "metadata key '%s' is missing: a canonical + delta file names "
				     "the layers that share the canonical", key);
	return rc;
}

int eng_alias_open(struct eng_model *m, const struct eng_gguf *g, struct eng_error *err)
{
	struct eng_gguf_str form;
	int64_t first, last;
	int rc;

	if (eng_gguf_get_str(g, "memwall.canonical_delta.form", &form, NULL) ||
	    form.len != 5 || memcmp(form.ptr, "split", 5))
		return 0; /* a plain model, or the dense twin: stored whole */
	if ((rc = meta_u32(g, "memwall.canonical_delta.first", &first, m->path, err)) ||
	    (rc = meta_u32(g, "memwall.canonical_delta.last", &last, m->path, err)))
		return rc;
	if (first < 0 || last < first || last >= m->info.n_layers)
		return eng_error_set(err, -EINVAL, m->path, ENG_NO_OFFSET,
				     "metadata keys 'memwall.canonical_delta.first' %" PRId64
				     " and '.last' %" PRId64 " must name layers 0 <= first <= last "
				     "< block_count (%d)", first, last, m->info.n_layers);
	struct eng_alias *a = calloc(1, sizeof(*a) + (size_t)m->info.n_layers * ALIAS_KINDS *
						     sizeof(a->delta[0]));
	if (!a)
		return eng_error_set(err, -ENOMEM, m->path, ENG_NO_OFFSET, "out of memory");
	a->first = (int)first;
	a->last = (int)last;
	m->alias = a;
	return 0;
}

bool eng_alias_covers(const struct eng_alias *a, int l)
{
	return a && l >= a->first && l <= a->last;
}

struct eng_mat *eng_alias_canon_slot(struct eng_alias *a, int k)
{
	return &a->canon[k];
}

struct eng_mat *eng_alias_delta_slot(struct eng_alias *a, int l, int k)
{
	return &a->delta[(size_t)l * ALIAS_KINDS + (size_t)k];
}

struct eng_mat *eng_alias_mat(struct eng_alias *a, int n_layers, size_t i)
{
	(void)n_layers;
	if (!a)
		return NULL;
	if (i < ALIAS_KINDS)
		return &a->canon[i];
	i -= ALIAS_KINDS;
	size_t n = (size_t)(a->last - a->first + 1) * ALIAS_KINDS;
	return i < n ? &a->delta[(size_t)a->first * ALIAS_KINDS + i] : NULL;
}

static uint64_t bytes_of(const struct eng_mat *m)
{
	return m->data ? (uint64_t)m->rows * m->row_bytes : 0;
}

void eng_alias_finish(struct eng_model *m)
{
	struct eng_alias *a = m->alias;
	if (!a)
		return;
	uint64_t users = (uint64_t)(a->last - a->first + 1);
	for (int k = 0; k < ALIAS_KINDS; k++) {
		if (!a->canon[k].data)
			continue;
		a->canon_bytes += bytes_of(&a->canon[k]);
		a->reuse_bytes += bytes_of(&a->canon[k]) * (users - 1);
		for (int l = a->first; l <= a->last; l++) {
			struct eng_mat v = a->canon[k];
			v.delta = eng_alias_delta_slot(a, l, k);
			a->delta_bytes += bytes_of(v.delta);
			memcpy((char *)&m->layers[l] + kind_fields[k], &v, sizeof(v));
		}
	}
}

void eng_alias_add(float *y, const float *d, size_t ld, int n_tok, int a, int b)
{
	for (int t = 0; t < n_tok; t++)
		for (int r = a; r < b; r++)
			y[(size_t)t * ld + (size_t)r] += d[(size_t)t * ld + (size_t)r];
}

bool eng_model_canonical(const struct eng_model *m, struct eng_canonical_info *out)
{
	const struct eng_alias *a = m->alias;
	memset(out, 0, sizeof(*out));
	if (!a)
		return false;
	out->first = a->first;
	out->last = a->last;
	out->canonical_bytes = a->canon_bytes;
	out->delta_bytes = a->delta_bytes;
	out->dense_bytes = a->canon_bytes * (uint64_t)(a->last - a->first + 1);
	return true;
}
