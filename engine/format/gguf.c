/* engine/format/gguf.c: the GGUF reader (see gguf.h for the format; gguf_write.c writes).
 *
 * The reader never trusts a count: before it allocates for n elements it checks that the
 * bytes left in the file could hold n of the smallest possible element, so every allocation
 * is bounded by a small multiple of the file's size, whatever the header claims.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf.h"
#include "hugecopy.h"
#include "quants/quants.h"

/* Bytes of one fixed-size value, 0 for STRING and ARRAY (gguf.md's type table). */
static const uint8_t type_sizes[ENG_GGUF_TYPE_COUNT] = {
	[ENG_GGUF_UINT8] = 1,	[ENG_GGUF_INT8] = 1,	[ENG_GGUF_UINT16] = 2,
	[ENG_GGUF_INT16] = 2,	[ENG_GGUF_UINT32] = 4,	[ENG_GGUF_INT32] = 4,
	[ENG_GGUF_FLOAT32] = 4, [ENG_GGUF_BOOL] = 1,	[ENG_GGUF_STRING] = 0,
	[ENG_GGUF_ARRAY] = 0,	[ENG_GGUF_UINT64] = 8,	[ENG_GGUF_INT64] = 8,
	[ENG_GGUF_FLOAT64] = 8,
};

static const char *const type_names[ENG_GGUF_TYPE_COUNT] = {
	[ENG_GGUF_UINT8] = "uint8",	[ENG_GGUF_INT8] = "int8",
	[ENG_GGUF_UINT16] = "uint16",	[ENG_GGUF_INT16] = "int16",
	[ENG_GGUF_UINT32] = "uint32",	[ENG_GGUF_INT32] = "int32",
	[ENG_GGUF_FLOAT32] = "float32", [ENG_GGUF_BOOL] = "bool",
	[ENG_GGUF_STRING] = "string",	[ENG_GGUF_ARRAY] = "array",
	[ENG_GGUF_UINT64] = "uint64",	[ENG_GGUF_INT64] = "int64",
	[ENG_GGUF_FLOAT64] = "float64",
};

unsigned eng_gguf_type_size(uint32_t t)
{
	return t < ENG_GGUF_TYPE_COUNT ? type_sizes[t] : 0;
}

const char *eng_gguf_type_name(uint32_t t)
{
	return t < ENG_GGUF_TYPE_COUNT ? type_names[t] : "unknown";
}

struct kv {
	char *key;
	struct eng_gguf_value value;
};

/* Open addressing from a name to its index: finds duplicates in linear time, whatever the
 * count a hostile file claims, and serves lookups. */
struct name_slot {
	const char *name; /* NULL: empty */
	uint64_t i;
};

struct name_index {
	struct name_slot *slots;
	uint64_t cap; /* a power of two, at least twice the entries */
};

struct eng_gguf {
	const uint8_t *base;
	uint64_t size;
	bool mapped;      /* base is ours to munmap, map_bytes long */
	bool writable;    /* a copy not yet sealed (eng_gguf_seal) */
	size_t map_bytes;
	/* opt->copy: the tensors' bytes live in an anonymous copy (data, data_bytes long, filled
	 * by the caller, eng_gguf_fill_target) while the metadata stays a view of the file's
	 * mapping at base; fd is the file until sealed. Otherwise data is base. */
	uint8_t *data;
	size_t data_bytes;
	int fd;
	uint32_t version, alignment;
	uint64_t data_offset;
	uint64_t n_kv, n_tensors;
	struct kv *kvs;
	struct eng_gguf_tensor *tensors;
	struct name_index keys, tensor_names;
	/* Every allocation made while parsing, freed at close. */
	void **allocs;
	size_t n_allocs, cap_allocs;
	char path[512];
};

/* ---- Reading ----------------------------------------------------------------------------- */

struct cursor {
	struct eng_gguf *g;
	uint64_t pos;
	struct eng_error *err;
};

static int fail(struct cursor *c, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct cursor *c, uint64_t offset, const char *fmt, ...)
{
	char text[sizeof(c->err->text)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return eng_error_set(c->err, -EINVAL, c->g->path, offset, "%s", text);
}

static void *track(struct eng_gguf *g, void *p)
{
	if (!p)
		return NULL;
	if (g->n_allocs == g->cap_allocs) {
		size_t cap = g->cap_allocs ? 2 * g->cap_allocs : 64;
		void **na = realloc(g->allocs, cap * sizeof(*na));
		if (!na) {
			free(p);
			return NULL;
		}
		g->allocs = na;
		g->cap_allocs = cap;
	}
	g->allocs[g->n_allocs++] = p;
	return p;
}

static void *alloc(struct cursor *c, uint64_t n, size_t size)
{
	if (n && n > SIZE_MAX / size)
		return NULL;
	void *p = track(c->g, calloc(n ? (size_t)n : 1, size));
	if (!p)
		eng_error_set(c->err, -ENOMEM, c->g->path, c->pos, "out of memory");
	return p;
}

static uint64_t left(const struct cursor *c)
{
	return c->g->size - c->pos;
}

/* When a count in the header is more than the file could hold, parsing stops at whatever
 * field runs out first; say what the header claimed too, so both causes show (a truncated
 * file, or a corrupt count). */
static int implausible(struct cursor *c, uint64_t count, const char *what, int rc)
{
	struct eng_error *e = c->err;
	if (!e || rc == -ENOMEM || strstr(e->text, "header claims"))
		return rc;
	size_t len = strlen(e->text);
	if (!len)
		return eng_error_set(e, rc, c->g->path, c->pos,
				     "header claims %" PRIu64 " %s, which cannot fit in a file of %" PRIu64
				     " bytes", count, what, c->g->size);
	snprintf(e->text + len, sizeof(e->text) - len,
		 " (the header claims %" PRIu64 " %s, which cannot fit in a file of %" PRIu64 " bytes)",
		 count, what, c->g->size);
	return rc;
}

/* Reads a little-endian unsigned field of size bytes, naming it when the file ends first. */
static int read_uint(struct cursor *c, unsigned size, uint64_t *out, const char *what)
{
	*out = 0;
	if (left(c) < size)
		return fail(c, c->pos,
			    "truncated: %s needs %u bytes at offset %" PRIu64 " but the file is %" PRIu64
			    " bytes",
			    what, size, c->pos, c->g->size);
	uint64_t v = 0;
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)c->g->base[c->pos + i] << (8 * i);
	c->pos += size;
	*out = v;
	return 0;
}

static int read_u32(struct cursor *c, uint32_t *out, const char *what)
{
	uint64_t v = 0;
	int rc = read_uint(c, 4, &v, what);
	*out = (uint32_t)v;
	return rc;
}

static int read_str(struct cursor *c, struct eng_gguf_str *s, const char *what)
{
	uint64_t at = c->pos;
	s->ptr = NULL;
	int rc = read_uint(c, 8, &s->len, what);
	if (rc)
		return rc;
	if (s->len > left(c))
		return fail(c, at,
			    "%s: string length %" PRIu64 " runs past the end of the file (%" PRIu64
			    " bytes left)",
			    what, s->len, left(c));
	s->ptr = (const char *)c->g->base + c->pos;
	c->pos += s->len;
	return 0;
}

static char *dup_str(struct cursor *c, struct eng_gguf_str s)
{
	char *p = alloc(c, s.len + 1, 1);
	if (p)
		memcpy(p, s.ptr, (size_t)s.len);
	return p;
}

static int read_value(struct cursor *c, enum eng_gguf_type type, struct eng_gguf_value *v,
		      const char *what, int depth);

static int read_array(struct cursor *c, struct eng_gguf_value *v, const char *what, int depth)
{
	uint64_t at = c->pos, n = 0;
	uint32_t et = 0;
	char sub[600];
	int rc;
	if (depth >= ENG_GGUF_MAX_DEPTH)
		return fail(c, at, "%s: arrays nested deeper than %d levels", what,
			    ENG_GGUF_MAX_DEPTH);
	snprintf(sub, sizeof(sub), "%s: array element type", what);
	if ((rc = read_u32(c, &et, sub)))
		return rc;
	if (et >= ENG_GGUF_TYPE_COUNT)
		return fail(c, at, "%s: unknown array element type %" PRIu32 " (valid: 0-12)", what,
			    et);
	snprintf(sub, sizeof(sub), "%s: array length", what);
	if ((rc = read_uint(c, 8, &n, sub)))
		return rc;
	v->arr.type = et;
	v->arr.n = n;
	if (type_sizes[et]) {
		if (n > left(c) / type_sizes[et])
			return fail(c, at,
				    "%s: array of %" PRIu64 " %s runs past the end of the file (%" PRIu64
				    " bytes left)",
				    what, n, type_names[et], left(c));
		v->arr.data = c->g->base + c->pos;
		c->pos += n * type_sizes[et];
		if (et == ENG_GGUF_BOOL)
			for (uint64_t i = 0; i < n; i++)
				if (c->g->base[c->pos - n + i] > 1)
					return fail(c, c->pos - n + i,
						    "%s: element %" PRIu64 " is not a bool (%u)", what,
						    i, c->g->base[c->pos - n + i]);
		return 0;
	}
	/* A string takes at least 8 bytes, an array at least 12: that bounds the index. */
	uint64_t min_size = et == ENG_GGUF_STRING ? 8 : 12;
	if (n > left(c) / min_size)
		return fail(c, at,
			    "%s: array of %" PRIu64 " %ss cannot fit in the %" PRIu64
			    " bytes left in the file",
			    what, n, type_names[et], left(c));
	struct eng_gguf_value *items = alloc(c, n, sizeof(*items));
	if (!items)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		snprintf(sub, sizeof(sub), "%s[%" PRIu64 "]", what, i);
		items[i].type = et;
		if ((rc = read_value(c, et, &items[i], sub, depth + 1)))
			return rc;
	}
	v->arr.items = items;
	return 0;
}

static int read_value(struct cursor *c, enum eng_gguf_type type, struct eng_gguf_value *v,
		      const char *what, int depth)
{
	uint64_t raw = 0, at = c->pos;
	int rc;
	v->type = type;
	switch (type) {
	case ENG_GGUF_STRING:
		return read_str(c, &v->s, what);
	case ENG_GGUF_ARRAY:
		return read_array(c, v, what, depth);
	default:
		break;
	}
	if ((rc = read_uint(c, type_sizes[type], &raw, what)))
		return rc;
	switch (type) {
	case ENG_GGUF_INT8: v->i = (int8_t)raw; break;
	case ENG_GGUF_INT16: v->i = (int16_t)raw; break;
	case ENG_GGUF_INT32: v->i = (int32_t)raw; break;
	case ENG_GGUF_INT64: v->i = (int64_t)raw; break;
	case ENG_GGUF_FLOAT32: {
		uint32_t b = (uint32_t)raw;
		float f;
		memcpy(&f, &b, sizeof(f));
		v->f = f;
		break;
	}
	case ENG_GGUF_FLOAT64: memcpy(&v->f, &raw, sizeof(v->f)); break;
	case ENG_GGUF_BOOL:
		if (raw > 1)
			return fail(c, at, "%s: bool value %" PRIu64 " is neither 0 nor 1", what, raw);
		v->b = raw;
		break;
	default: v->u = raw; break;
	}
	return 0;
}

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static int index_init(struct cursor *c, struct name_index *x, uint64_t n)
{
	x->cap = 16;
	while (x->cap < 2 * n)
		x->cap *= 2;
	x->slots = alloc(c, x->cap, sizeof(*x->slots));
	return x->slots ? 0 : -ENOMEM;
}

/* Adds name as entry i; returns the index of an earlier entry of that name, or UINT64_MAX. */
static uint64_t index_insert(struct name_index *x, const char *name, uint64_t i)
{
	uint64_t mask = x->cap - 1;
	for (uint64_t h = hash_name(name) & mask;; h = (h + 1) & mask) {
		if (!x->slots[h].name) {
			x->slots[h] = (struct name_slot){ name, i };
			return UINT64_MAX;
		}
		if (!strcmp(x->slots[h].name, name))
			return x->slots[h].i;
	}
}

static uint64_t index_find(const struct name_index *x, const char *name)
{
	if (!x->cap)
		return UINT64_MAX;
	uint64_t mask = x->cap - 1;
	for (uint64_t h = hash_name(name) & mask; x->slots[h].name; h = (h + 1) & mask)
		if (!strcmp(x->slots[h].name, name))
			return x->slots[h].i;
	return UINT64_MAX;
}

static int read_kvs(struct cursor *c)
{
	struct eng_gguf *g = c->g;
	char what[128];
	int rc;
	/* A key/value takes at least 8 + 4 + 1 bytes: no more can be in the file. */
	uint64_t cap = g->n_kv < left(c) / 13 ? g->n_kv : left(c) / 13;
	if (!(g->kvs = alloc(c, cap, sizeof(*g->kvs))) || index_init(c, &g->keys, cap))
		return -ENOMEM;
	for (uint64_t i = 0; i < g->n_kv; i++) {
		/* Past cap the file cannot hold another key/value: parse one into scratch
		 * anyway, so the error names the field that ran out. */
		struct kv scratch = { 0 }, *kv = i < cap ? &g->kvs[i] : &scratch;
		struct eng_gguf_str key = { 0 };
		uint32_t type = 0;
		uint64_t at = c->pos;
		snprintf(what, sizeof(what), "key %" PRIu64 " name", i);
		if ((rc = read_str(c, &key, what)))
			return rc;
		if (!(kv->key = dup_str(c, key)))
			return -ENOMEM;
		if (strlen(kv->key) != key.len)
			return fail(c, at, "key %" PRIu64 " name contains a NUL byte", i);
		uint64_t dup = kv == &scratch ? UINT64_MAX : index_insert(&g->keys, kv->key, i);
		if (dup != UINT64_MAX)
			return fail(c, at, "key '%s' appears twice (keys %" PRIu64 " and %" PRIu64 ")",
				    kv->key, dup, i);
		char vwhat[600];
		snprintf(vwhat, sizeof(vwhat), "key '%s'", kv->key);
		char twhat[640];
		snprintf(twhat, sizeof(twhat), "key '%s' value type", kv->key);
		at = c->pos;
		if ((rc = read_u32(c, &type, twhat)))
			return rc;
		if (type >= ENG_GGUF_TYPE_COUNT)
			return fail(c, at, "key '%s' has unknown value type %" PRIu32 " (valid: 0-12)",
				    kv->key, type);
		if ((rc = read_value(c, type, &kv->value, vwhat, 0)))
			return rc;
		if (kv == &scratch)
			return implausible(c, g->n_kv, "key/values", -EINVAL);
	}
	return 0;
}

static int read_kvs_checked(struct cursor *c)
{
	uint64_t cap = c->g->n_kv < left(c) / 13 ? c->g->n_kv : left(c) / 13;
	int rc = read_kvs(c);
	return rc && c->g->n_kv > cap ? implausible(c, c->g->n_kv, "key/values", rc) : rc;
}

static int read_alignment(struct cursor *c)
{
	struct eng_gguf *g = c->g;
	const struct eng_gguf_value *v = eng_gguf_find(g, "general.alignment");
	g->alignment = ENG_GGUF_DEFAULT_ALIGNMENT;
	if (!v)
		return 0;
	if (v->type != ENG_GGUF_UINT32)
		return fail(c, ENG_NO_OFFSET, "key 'general.alignment' has type %s, expected uint32",
			    type_names[v->type]);
	if (!v->u || (v->u & (v->u - 1)))
		return fail(c, ENG_NO_OFFSET,
			    "key 'general.alignment' is %" PRIu64 ", which is not a power of two",
			    v->u);
	g->alignment = (uint32_t)v->u;
	return 0;
}

static int read_tensor_info(struct cursor *c, uint64_t i, struct eng_gguf_tensor *t)
{
	struct eng_gguf_str name = { 0 };
	char what[160];
	uint64_t at = c->pos;
	int rc;
	snprintf(what, sizeof(what), "tensor %" PRIu64 " name", i);
	if ((rc = read_str(c, &name, what)))
		return rc;
	if (name.len > ENG_GGUF_MAX_NAME)
		return fail(c, at, "tensor %" PRIu64 " name is %" PRIu64 " bytes (at most %d)", i,
			    name.len, ENG_GGUF_MAX_NAME);
	if (!(t->name = dup_str(c, name)))
		return -ENOMEM;
	if (strlen(t->name) != name.len)
		return fail(c, at, "tensor %" PRIu64 " name contains a NUL byte", i);
	snprintf(what, sizeof(what), "tensor '%s' n_dims", t->name);
	at = c->pos;
	if ((rc = read_u32(c, &t->n_dims, what)))
		return rc;
	if (t->n_dims < 1 || t->n_dims > ENG_GGUF_MAX_DIMS)
		return fail(c, at, "tensor '%s' has %" PRIu32 " dimensions (1 to %d allowed)",
			    t->name, t->n_dims, ENG_GGUF_MAX_DIMS);
	t->n_elements = 1;
	for (uint32_t d = 0; d < ENG_GGUF_MAX_DIMS; d++) {
		t->ne[d] = 1;
		if (d >= t->n_dims)
			continue;
		snprintf(what, sizeof(what), "tensor '%s' ne[%" PRIu32 "]", t->name, d);
		at = c->pos;
		if ((rc = read_uint(c, 8, &t->ne[d], what)))
			return rc;
		/* ggml keeps ne as int64; a product past INT64_MAX is no tensor. */
		if (t->ne[d] > INT64_MAX || (t->ne[d] && t->n_elements > INT64_MAX / t->ne[d]))
			return fail(c, at,
				    "tensor '%s': shape overflows (ne[%" PRIu32 "] = %" PRIu64 ")",
				    t->name, d, t->ne[d]);
		t->n_elements *= t->ne[d];
	}
	snprintf(what, sizeof(what), "tensor '%s' type", t->name);
	at = c->pos;
	if ((rc = read_u32(c, &t->type, what)))
		return rc;
	const struct krn_type_traits *tr = krn_type_traits(t->type);
	if (!tr || t->type == KRN_TYPE_Q8_1 || t->type == KRN_TYPE_Q8_K)
		return fail(c, at, "tensor '%s' has ggml type %" PRIu32 ", which memwall does not read",
			    t->name, t->type);
	if (t->ne[0] % tr->block_size)
		return fail(c, at,
			    "tensor '%s': row length ne[0] = %" PRIu64 " is not a multiple of %s's block of %" PRIu32,
			    t->name, t->ne[0], tr->name, tr->block_size);
	/* n_elements fits int64, but its bytes may not fit uint64 (2^62 float32 elements): a
	 * wrapped size would pass the end-of-file check below. */
	if (__builtin_mul_overflow(t->n_elements / tr->block_size, (uint64_t)tr->type_size,
				   &t->n_bytes))
		return fail(c, at,
			    "tensor '%s': %" PRIu64 " elements of %s overflow a 64-bit byte size",
			    t->name, t->n_elements, tr->name);
	snprintf(what, sizeof(what), "tensor '%s' offset", t->name);
	return read_uint(c, 8, &t->offset, what);
}

/* Tensor i's data offset against the GGUF writer's layout (gguf.md; llama.cpp's gguf.cpp
 * refuses the same): the first at 0, each next at the previous one's end rounded up to the
 * alignment, in the order of the infos. Anything else overlaps a tensor or leaves a gap. */
static int check_layout(struct cursor *c, uint64_t i, uint64_t expect)
{
	const struct eng_gguf_tensor *t = &c->g->tensors[i], *p = i ? t - 1 : NULL;
	if (t->offset == expect)
		return 0;
	uint64_t p_at = p ? p->offset - c->g->data_offset : 0; /* p's is already absolute */
	if (!p)
		return fail(c, ENG_NO_OFFSET,
			    "tensor '%s' (the first) is at data offset %" PRIu64 ", but the "
			    "first tensor starts the data section (offset 0): the file was not "
			    "written by a GGUF writer; re-convert the model", t->name, t->offset);
	if (t->offset < expect)
		return fail(c, ENG_NO_OFFSET,
			    "tensor '%s' (data offset %" PRIu64 ") overlaps or precedes tensor "
			    "'%s' (%" PRIu64 " bytes at data offset %" PRIu64 "): it should be at "
			    "data offset %" PRIu64 " (the previous tensor's end rounded up to the "
			    "alignment %" PRIu32 "); re-convert the model",
			    t->name, t->offset, p->name, p->n_bytes, p_at, expect,
			    c->g->alignment);
	return fail(c, ENG_NO_OFFSET,
		    "tensor '%s' is at data offset %" PRIu64 ", leaving a gap after tensor '%s' "
		    "(%" PRIu64 " bytes at data offset %" PRIu64 "): it should be at data offset "
		    "%" PRIu64 " (the previous tensor's end rounded up to the alignment %" PRIu32
		    "); re-convert the model",
		    t->name, t->offset, p->name, p->n_bytes, p_at, expect, c->g->alignment);
}

static int read_tensors(struct cursor *c)
{
	struct eng_gguf *g = c->g;
	int rc;
	/* A tensor info takes at least 8 + 4 + 8 + 4 + 8 bytes: no more can be in the file. */
	uint64_t cap = g->n_tensors < left(c) / 32 ? g->n_tensors : left(c) / 32;
	if (!(g->tensors = alloc(c, cap, sizeof(*g->tensors))))
		return -ENOMEM;
	if ((rc = index_init(c, &g->tensor_names, cap)))
		return rc;
	for (uint64_t i = 0; i < g->n_tensors; i++) {
		uint64_t at = c->pos;
		struct eng_gguf_tensor scratch = { 0 }, *t = i < cap ? &g->tensors[i] : &scratch;
		if ((rc = read_tensor_info(c, i, t)))
			return g->n_tensors > cap ? implausible(c, g->n_tensors, "tensors", rc) : rc;
		if (t == &scratch) /* cannot happen: the bytes ran out first */
			return implausible(c, g->n_tensors, "tensors", -EINVAL);
		uint64_t dup = index_insert(&g->tensor_names, t->name, i);
		if (dup != UINT64_MAX)
			return fail(c, at, "tensor '%s' appears twice (tensors %" PRIu64 " and %" PRIu64 ")",
				    g->tensors[i].name, dup, i);
	}
	uint64_t a = g->alignment;
	g->data_offset = (c->pos + a - 1) / a * a;
	for (uint64_t i = 0, expect = 0; i < g->n_tensors; i++) {
		struct eng_gguf_tensor *t = &g->tensors[i];
		if (t->offset % a)
			return fail(c, ENG_NO_OFFSET,
				    "tensor '%s': data offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
				    t->name, t->offset, a);
		if (g->data_offset > g->size || t->offset > g->size - g->data_offset ||
		    t->n_bytes > g->size - g->data_offset - t->offset)
			return fail(c, ENG_NO_OFFSET,
				    "tensor '%s' (%" PRIu64 " bytes at offset %" PRIu64
				    ") extends past the end of the file (%" PRIu64 " bytes)",
				    t->name, t->n_bytes, g->data_offset + t->offset, g->size);
		if ((rc = check_layout(c, i, expect)))
			return rc;
		/* Within the file, so the rounding cannot wrap. */
		expect = t->offset + (t->n_bytes + a - 1) / a * a;
		t->offset += g->data_offset;
		if (t->offset % ENG_GGUF_TENSOR_ALIGN)
			return fail(c, t->offset,
				    "tensor '%s' starts at file offset %" PRIu64 ", not a multiple of %d "
				    "(general.alignment is %" PRIu64 "): memwall reads tensors in place "
				    "and never from a misaligned address; rewrite the file with "
				    "general.alignment %d (the default) or more",
				    t->name, t->offset, ENG_GGUF_TENSOR_ALIGN, a,
				    ENG_GGUF_DEFAULT_ALIGNMENT);
		t->data = (g->data ? g->data : g->base) + t->offset;
	}
	return 0;
}

static int parse(struct eng_gguf *g, struct eng_error *err)
{
	struct cursor c = { .g = g, .pos = 0, .err = err };
	uint64_t v = 0;
	int rc;
	eng_error_clear(err);
	if (g->size < 4 || memcmp(g->base, "GGUF", 4))
		return g->size < 4 ? fail(&c, 0, "truncated: magic needs 4 bytes, file is %" PRIu64
					  " bytes", g->size)
				   : fail(&c, 0, "not a GGUF file (magic is not \"GGUF\")");
	c.pos = 4;
	if ((rc = read_u32(&c, &g->version, "version")))
		return rc;
	if (g->version == 1)
		return fail(&c, 4, "GGUF version 1 is not supported (versions 2 and 3 are): "
				   "re-convert the model with a current llama.cpp");
	if (g->version != 2 && g->version != 3)
		return fail(&c, 4,
			    "unsupported GGUF version %" PRIu32 "%s", g->version,
			    (g->version & 0xffff) == 0 ? " (a big-endian file?)" : "");
	if ((rc = read_uint(&c, 8, &g->n_tensors, "n_tensors")))
		return rc;
	if ((rc = read_uint(&c, 8, &v, "n_kv")))
		return rc;
	g->n_kv = v;
	if ((rc = read_kvs_checked(&c)))
		return rc;
	if ((rc = read_alignment(&c)))
		return rc;
	return read_tensors(&c);
}

static int gguf_new(struct eng_gguf **out, const char *name)
{
	struct eng_gguf *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	snprintf(g->path, sizeof(g->path), "%s", name ? name : "");
	g->fd = -1;
	*out = g;
	return 0;
}

int eng_gguf_open_mem(struct eng_gguf **out, const char *name, const void *buf, uint64_t size,
		      struct eng_error *err)
{
	struct eng_gguf *g = NULL;
	int rc;
	*out = NULL;
	if ((rc = gguf_new(&g, name)))
		return eng_error_set(err, rc, name, ENG_NO_OFFSET, "out of memory");
	g->base = buf;
	g->size = size;
	if ((rc = parse(g, err))) {
		eng_gguf_close(g);
		return rc;
	}
	*out = g;
	return 0;
}

int eng_gguf_open(struct eng_gguf **out, const char *path, const struct eng_gguf_open_options *opt,
		  struct eng_error *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return eng_error_set(err, -errno, path, ENG_NO_OFFSET, "cannot open: %s",
				     strerror(errno));
	return eng_gguf_open_fd(out, path, fd, opt, err);
}

int eng_gguf_open_fd(struct eng_gguf **out, const char *path, int fd,
		     const struct eng_gguf_open_options *opt, struct eng_error *err)
{
	struct eng_gguf *g = NULL;
	struct stat st;
	int rc;
	*out = NULL;
	if ((rc = gguf_new(&g, path))) {
		rc = eng_error_set(err, rc, path, ENG_NO_OFFSET, "out of memory");
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		rc = eng_error_set(err, -errno, path, ENG_NO_OFFSET, "cannot open: %s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET, "not a regular file");
		goto out;
	}
	g->size = (uint64_t)st.st_size;
	if (g->size > SIZE_MAX) {
		rc = eng_error_set(err, -EFBIG, path, ENG_NO_OFFSET, "too large to map here");
		goto out;
	}
	if (g->size) {
		bool populate = opt && opt->populate && !opt->copy;
		void *p = mmap(NULL, (size_t)g->size, PROT_READ,
			       MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
		if (p == MAP_FAILED) {
			rc = eng_error_set(err, -errno, path, ENG_NO_OFFSET, "mmap of %" PRIu64
					   " bytes failed: %s", g->size, strerror(errno));
			goto out;
		}
		g->base = p;
		g->mapped = true;
		g->map_bytes = (size_t)g->size;
		if (opt && opt->hugepages && !opt->copy)
			madvise(p, (size_t)g->size, MADV_HUGEPAGE); /* advice: failure is harmless */
	} else {
		g->base = (const uint8_t *)"";
	}
	/* The copy is allocated before parsing so that the tensors point into it at once; the
	 * caller fills it (eng_gguf_fill_target), which is where the time goes. */
	if (g->size && opt && opt->copy) {
		void *p;
		if ((rc = eng_huge_alloc((size_t)g->size, path, &p, &g->data_bytes, err)))
			goto out;
		g->data = p;
		g->writable = true;
		g->fd = fd;
		fd = -1;
	}
	if ((rc = parse(g, err)))
		goto out;
	*out = g;
	g = NULL;
out:
	if (fd >= 0)
		close(fd);
	eng_gguf_close(g);
	return rc;
}

void eng_gguf_close(struct eng_gguf *g)
{
	if (!g)
		return;
	if (g->mapped)
		munmap((void *)(uintptr_t)g->base, g->map_bytes);
	if (g->data)
		munmap(g->data, g->data_bytes);
	if (g->fd >= 0)
		close(g->fd);
	for (size_t i = 0; i < g->n_allocs; i++)
		free(g->allocs[i]);
	free(g->allocs);
	free(g);
}

void *eng_gguf_writable(const struct eng_gguf *g, const void *p)
{
	return g->writable ? (void *)(uintptr_t)p : NULL;
}

int eng_gguf_fill_target(const struct eng_gguf *g, struct eng_gguf_fill *f)
{
	if (!g->writable)
		return -EINVAL;
	*f = (struct eng_gguf_fill){ .dst = g->data, .src = g->base, .bytes = (size_t)g->size,
				     .fd = g->fd };
	return 0;
}

int eng_gguf_seal(struct eng_gguf *g, struct eng_error *err)
{
	if (!g->writable)
		return 0;
	g->writable = false;
	close(g->fd);
	g->fd = -1;
	/* The file's pages past the metadata were read once, for the fill: their page table
	 * entries go (the page cache keeps the pages), so the process maps the weights once. */
	long pg = sysconf(_SC_PAGESIZE);
	size_t keep = pg > 0 ? (size_t)((g->data_offset + (uint64_t)pg - 1) / (uint64_t)pg *
					(uint64_t)pg) : g->map_bytes;
	if (keep < g->map_bytes)
		(void)madvise((void *)(uintptr_t)(g->base + keep), g->map_bytes - keep,
			      MADV_DONTNEED);
	return eng_huge_seal(g->data, g->data_bytes, g->path, err);
}

uint32_t eng_gguf_version(const struct eng_gguf *g) { return g->version; }
uint32_t eng_gguf_alignment(const struct eng_gguf *g) { return g->alignment; }
uint64_t eng_gguf_data_offset(const struct eng_gguf *g) { return g->data_offset; }
uint64_t eng_gguf_file_bytes(const struct eng_gguf *g) { return g->size; }
const void *eng_gguf_base(const struct eng_gguf *g) { return g->data ? g->data : g->base; }
uint64_t eng_gguf_n_kv(const struct eng_gguf *g) { return g->n_kv; }
uint64_t eng_gguf_n_tensors(const struct eng_gguf *g) { return g->n_tensors; }

const struct eng_gguf_value *eng_gguf_kv(const struct eng_gguf *g, uint64_t i, const char **key)
{
	if (i >= g->n_kv)
		return NULL;
	if (key)
		*key = g->kvs[i].key;
	return &g->kvs[i].value;
}

const struct eng_gguf_value *eng_gguf_find(const struct eng_gguf *g, const char *key)
{
	uint64_t i = index_find(&g->keys, key);
	return i < g->n_kv ? &g->kvs[i].value : NULL;
}

const struct eng_gguf_tensor *eng_gguf_tensor(const struct eng_gguf *g, uint64_t i)
{
	return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const struct eng_gguf_tensor *eng_gguf_tensor_find(const struct eng_gguf *g, const char *name)
{
	uint64_t i = index_find(&g->tensor_names, name);
	return i < g->n_tensors ? &g->tensors[i] : NULL;
}

static int wrong_type(const struct eng_gguf *g, const char *key, const struct eng_gguf_value *v,
		      const char *want, struct eng_error *err)
{
	return eng_error_set(err, -EINVAL, g->path, ENG_NO_OFFSET, "key '%s' has type %s, expected %s",
			     key, eng_gguf_type_name(v->type), want);
}

static bool is_unsigned(enum eng_gguf_type t)
{
	return t == ENG_GGUF_UINT8 || t == ENG_GGUF_UINT16 || t == ENG_GGUF_UINT32 ||
	       t == ENG_GGUF_UINT64;
}

static bool is_signed(enum eng_gguf_type t)
{
	return t == ENG_GGUF_INT8 || t == ENG_GGUF_INT16 || t == ENG_GGUF_INT32 ||
	       t == ENG_GGUF_INT64;
}

int eng_gguf_get_int(const struct eng_gguf *g, const char *key, int64_t *out, struct eng_error *err)
{
	const struct eng_gguf_value *v = eng_gguf_find(g, key);
	if (!v)
		return -ENOENT;
	if (is_signed(v->type)) {
		*out = v->i;
		return 0;
	}
	if (is_unsigned(v->type) && v->u <= INT64_MAX) {
		*out = (int64_t)v->u;
		return 0;
	}
	return wrong_type(g, key, v, "an integer", err);
}

int eng_gguf_get_float(const struct eng_gguf *g, const char *key, double *out,
		       struct eng_error *err)
{
	const struct eng_gguf_value *v = eng_gguf_find(g, key);
	if (!v)
		return -ENOENT;
	if (v->type != ENG_GGUF_FLOAT32 && v->type != ENG_GGUF_FLOAT64)
		return wrong_type(g, key, v, "float32 or float64", err);
	*out = v->f;
	return 0;
}

int eng_gguf_get_bool(const struct eng_gguf *g, const char *key, bool *out, struct eng_error *err)
{
	const struct eng_gguf_value *v = eng_gguf_find(g, key);
	if (!v)
		return -ENOENT;
	if (v->type != ENG_GGUF_BOOL)
		return wrong_type(g, key, v, "bool", err);
	*out = v->b;
	return 0;
}

int eng_gguf_get_str(const struct eng_gguf *g, const char *key, struct eng_gguf_str *out,
		     struct eng_error *err)
{
	const struct eng_gguf_value *v = eng_gguf_find(g, key);
	if (!v)
		return -ENOENT;
	if (v->type != ENG_GGUF_STRING)
		return wrong_type(g, key, v, "string", err);
	*out = v->s;
	return 0;
}

int eng_gguf_get_arr(const struct eng_gguf *g, const char *key, enum eng_gguf_type elem,
		     const struct eng_gguf_value **out, struct eng_error *err)
{
	const struct eng_gguf_value *v = eng_gguf_find(g, key);
	if (!v)
		return -ENOENT;
	if (v->type != ENG_GGUF_ARRAY)
		return wrong_type(g, key, v, "array", err);
	if (elem != ENG_GGUF_TYPE_COUNT && v->arr.type != elem)
		return eng_error_set(err, -EINVAL, g->path, ENG_NO_OFFSET,
				     "key '%s' is an array of %s, expected an array of %s", key,
				     eng_gguf_type_name(v->arr.type), eng_gguf_type_name(elem));
	*out = v;
	return 0;
}

static uint64_t load_le(const uint8_t *p, unsigned size)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int eng_gguf_arr_int(const struct eng_gguf_value *arr, uint64_t i, int64_t *out)
{
	enum eng_gguf_type t = arr->arr.type;
	if (arr->type != ENG_GGUF_ARRAY || i >= arr->arr.n || !(is_signed(t) || is_unsigned(t)))
		return -EINVAL;
	unsigned size = type_sizes[t];
	uint64_t raw = load_le((const uint8_t *)arr->arr.data + i * size, size);
	if (is_unsigned(t)) {
		if (raw > INT64_MAX)
			return -EINVAL;
		*out = (int64_t)raw;
		return 0;
	}
	unsigned shift = 64 - 8 * size; /* sign-extend */
	*out = (int64_t)(raw << shift) >> shift;
	return 0;
}

int eng_gguf_arr_float(const struct eng_gguf_value *arr, uint64_t i, double *out)
{
	enum eng_gguf_type t = arr->arr.type;
	if (arr->type != ENG_GGUF_ARRAY || i >= arr->arr.n ||
	    (t != ENG_GGUF_FLOAT32 && t != ENG_GGUF_FLOAT64))
		return -EINVAL;
	uint64_t raw = load_le((const uint8_t *)arr->arr.data + i * type_sizes[t], type_sizes[t]);
	if (t == ENG_GGUF_FLOAT32) {
		uint32_t b = (uint32_t)raw;
		float f;
		memcpy(&f, &b, sizeof(f));
		*out = f;
	} else {
		memcpy(out, &raw, sizeof(*out));
	}
	return 0;
}
