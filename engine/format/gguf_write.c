/* engine/format/gguf_write.c: the GGUF writer (see gguf.h for the format; gguf.c reads).
 *
 * A file is written under a temporary name and renamed into place at commit, so a reader
 * never sees half of one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf.h"
#include "quants/quants.h"

struct buf {
	uint8_t *p;
	size_t len, cap;
};

struct wtensor {
	uint64_t n_bytes, offset; /* offset relative to the data section */
};

struct eng_gguf_writer {
	char path[512], tmp[600];
	int fd;
	uint32_t alignment;
	struct buf kv, info; /* serialized key/values and tensor infos */
	uint64_t n_kv, n_tensors;
	struct wtensor *tensors;
	uint64_t cap_tensors;
	uint64_t data_size;   /* padded size of the data section declared so far */
	bool header_written;
	uint64_t cur, cur_written; /* tensor being written and its bytes so far */
	int rc;               /* first error, sticky */
	struct eng_error err;
};

static int werr(struct eng_gguf_writer *w, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int werr(struct eng_gguf_writer *w, int code, const char *fmt, ...)
{
	if (w->rc)
		return w->rc;
	char text[sizeof(w->err.text)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	w->rc = eng_error_set(&w->err, code, w->path, ENG_NO_OFFSET, "%s", text);
	return w->rc;
}

static int buf_put(struct eng_gguf_writer *w, struct buf *b, const void *p, size_t n)
{
	if (!n) /* an empty array may come with data == NULL */
		return 0;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *np = realloc(b->p, cap);
		if (!np)
			return werr(w, -ENOMEM, "out of memory");
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static int put_le(struct eng_gguf_writer *w, struct buf *b, uint64_t v, unsigned size)
{
	uint8_t tmp[8];
	for (unsigned i = 0; i < size; i++)
		tmp[i] = (uint8_t)(v >> (8 * i));
	return buf_put(w, b, tmp, size);
}

static int put_str(struct eng_gguf_writer *w, struct buf *b, const char *s, uint64_t len)
{
	int rc = put_le(w, b, len, 8);
	return rc ? rc : buf_put(w, b, s, (size_t)len);
}

static int put_value(struct eng_gguf_writer *w, struct buf *b, const struct eng_gguf_value *v,
		     int depth)
{
	uint64_t raw = 0;
	int rc;
	switch (v->type) {
	case ENG_GGUF_STRING:
		return put_str(w, b, v->s.ptr, v->s.len);
	case ENG_GGUF_ARRAY:
		if (depth >= ENG_GGUF_MAX_DEPTH)
			return werr(w, -EINVAL, "arrays nested deeper than %d", ENG_GGUF_MAX_DEPTH);
		if (v->arr.type >= ENG_GGUF_TYPE_COUNT)
			return werr(w, -EINVAL, "unknown array element type %d", (int)v->arr.type);
		if ((rc = put_le(w, b, v->arr.type, 4)) || (rc = put_le(w, b, v->arr.n, 8)))
			return rc;
		if (eng_gguf_type_size(v->arr.type))
			return buf_put(w, b, v->arr.data, (size_t)(v->arr.n * eng_gguf_type_size(v->arr.type)));
		for (uint64_t i = 0; i < v->arr.n; i++) {
			if (v->arr.items[i].type != v->arr.type)
				return werr(w, -EINVAL, "array element %" PRIu64 " has type %s, not %s",
					    i, eng_gguf_type_name(v->arr.items[i].type),
					    eng_gguf_type_name(v->arr.type));
			if ((rc = put_value(w, b, &v->arr.items[i], depth + 1)))
				return rc;
		}
		return 0;
	case ENG_GGUF_FLOAT32: {
		float f = (float)v->f;
		uint32_t bits;
		memcpy(&bits, &f, sizeof(bits));
		raw = bits;
		break;
	}
	case ENG_GGUF_FLOAT64: memcpy(&raw, &v->f, sizeof(raw)); break;
	case ENG_GGUF_BOOL: raw = v->b; break;
	case ENG_GGUF_INT8:
	case ENG_GGUF_INT16:
	case ENG_GGUF_INT32:
	case ENG_GGUF_INT64: raw = (uint64_t)v->i; break;
	default:
		if (v->type >= ENG_GGUF_TYPE_COUNT)
			return werr(w, -EINVAL, "unknown value type %d", (int)v->type);
		raw = v->u;
		break;
	}
	return put_le(w, b, raw, eng_gguf_type_size(v->type));
}

int eng_gguf_writer_new(struct eng_gguf_writer **out, const char *path, uint32_t alignment,
			struct eng_error *err)
{
	struct eng_gguf_writer *w = NULL;
	int rc = 0;
	*out = NULL;
	if (alignment && (alignment & (alignment - 1)))
		return eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				     "alignment %" PRIu32 " is not a power of two", alignment);
	if (!(w = calloc(1, sizeof(*w))))
		return eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
	w->fd = -1;
	w->alignment = alignment ? alignment : ENG_GGUF_DEFAULT_ALIGNMENT;
	snprintf(w->path, sizeof(w->path), "%s", path);
	snprintf(w->tmp, sizeof(w->tmp), "%s.tmp-XXXXXX", path);
	w->fd = mkostemp(w->tmp, O_CLOEXEC);
	if (w->fd < 0) {
		rc = eng_error_set(err, -errno, path, ENG_NO_OFFSET, "cannot create %s: %s", w->tmp,
				   strerror(errno));
		free(w);
		return rc;
	}
	fchmod(w->fd, 0644);
	if (w->alignment != ENG_GGUF_DEFAULT_ALIGNMENT &&
	    (rc = eng_gguf_writer_kv_u32(w, "general.alignment", w->alignment))) {
		eng_error_set(err, rc, path, ENG_NO_OFFSET, "%s", w->err.text);
		eng_gguf_writer_abort(w);
		return rc;
	}
	*out = w;
	return 0;
}

int eng_gguf_writer_kv(struct eng_gguf_writer *w, const char *key, const struct eng_gguf_value *v)
{
	int rc;
	if (w->rc)
		return w->rc;
	if (w->header_written)
		return werr(w, -EINVAL, "key '%s' added after tensor data", key);
	size_t len = w->kv.len;
	if ((rc = put_str(w, &w->kv, key, strlen(key))) || (rc = put_le(w, &w->kv, v->type, 4)) ||
	    (rc = put_value(w, &w->kv, v, 0))) {
		w->kv.len = len;
		return rc;
	}
	w->n_kv++;
	return 0;
}

int eng_gguf_writer_kv_u32(struct eng_gguf_writer *w, const char *key, uint32_t v)
{
	struct eng_gguf_value val = { .type = ENG_GGUF_UINT32, .u = v };
	return eng_gguf_writer_kv(w, key, &val);
}

int eng_gguf_writer_kv_f32(struct eng_gguf_writer *w, const char *key, float v)
{
	struct eng_gguf_value val = { .type = ENG_GGUF_FLOAT32, .f = v };
	return eng_gguf_writer_kv(w, key, &val);
}

int eng_gguf_writer_kv_str(struct eng_gguf_writer *w, const char *key, const char *v)
{
	struct eng_gguf_value val = { .type = ENG_GGUF_STRING, .s = { v, strlen(v) } };
	return eng_gguf_writer_kv(w, key, &val);
}

int eng_gguf_writer_tensor(struct eng_gguf_writer *w, const char *name, uint32_t type,
			   uint32_t n_dims, const uint64_t *ne)
{
	int rc;
	if (w->rc)
		return w->rc;
	if (w->header_written)
		return werr(w, -EINVAL, "tensor '%s' declared after tensor data", name);
	const struct krn_type_traits *tr = krn_type_traits(type);
	if (!tr)
		return werr(w, -EINVAL, "tensor '%s': unknown ggml type %" PRIu32, name, type);
	if (n_dims < 1 || n_dims > ENG_GGUF_MAX_DIMS || strlen(name) > ENG_GGUF_MAX_NAME)
		return werr(w, -EINVAL, "tensor '%s': %" PRIu32 " dims or name too long", name,
			    n_dims);
	uint64_t n = 1;
	for (uint32_t d = 0; d < n_dims; d++) {
		if (ne[d] && n > INT64_MAX / ne[d])
			return werr(w, -EINVAL, "tensor '%s': shape overflows", name);
		n *= ne[d];
	}
	if (ne[0] % tr->block_size)
		return werr(w, -EINVAL, "tensor '%s': ne[0] = %" PRIu64 " is not a multiple of %" PRIu32,
			    name, ne[0], tr->block_size);
	if (w->n_tensors == w->cap_tensors) {
		uint64_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
		struct wtensor *nt = realloc(w->tensors, cap * sizeof(*nt));
		if (!nt)
			return werr(w, -ENOMEM, "out of memory");
		w->tensors = nt;
		w->cap_tensors = cap;
	}
	struct wtensor *t = &w->tensors[w->n_tensors];
	t->n_bytes = n / tr->block_size * tr->type_size;
	t->offset = w->data_size;
	w->data_size += (t->n_bytes + w->alignment - 1) / w->alignment * w->alignment;
	if ((rc = put_str(w, &w->info, name, strlen(name))) || (rc = put_le(w, &w->info, n_dims, 4)))
		return rc;
	for (uint32_t d = 0; d < n_dims; d++)
		if ((rc = put_le(w, &w->info, ne[d], 8)))
			return rc;
	if ((rc = put_le(w, &w->info, type, 4)) || (rc = put_le(w, &w->info, t->offset, 8)))
		return rc;
	w->n_tensors++;
	return 0;
}

static int write_all(struct eng_gguf_writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = write(w->fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return werr(w, k < 0 ? -errno : -EIO, "write to %s failed: %s", w->tmp,
				    k < 0 ? strerror(errno) : "short write");
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static int write_zeros(struct eng_gguf_writer *w, uint64_t n)
{
	static const uint8_t zeros[4096];
	int rc = 0;
	while (n && !rc) {
		size_t k = n < sizeof(zeros) ? (size_t)n : sizeof(zeros);
		rc = write_all(w, zeros, k);
		n -= k;
	}
	return rc;
}

static int write_header(struct eng_gguf_writer *w)
{
	struct buf h = { 0 };
	int rc;
	if ((rc = buf_put(w, &h, "GGUF", 4)) || (rc = put_le(w, &h, 3, 4)) ||
	    (rc = put_le(w, &h, w->n_tensors, 8)) || (rc = put_le(w, &h, w->n_kv, 8)) ||
	    (rc = write_all(w, h.p, h.len)) || (rc = write_all(w, w->kv.p, w->kv.len)) ||
	    (rc = write_all(w, w->info.p, w->info.len)))
		goto out;
	uint64_t end = h.len + w->kv.len + w->info.len, a = w->alignment;
	rc = write_zeros(w, (a - end % a) % a);
	w->header_written = true;
out:
	free(h.p);
	return rc;
}

/* Finishes tensors whose bytes are complete: pads them to the alignment. */
static int advance(struct eng_gguf_writer *w)
{
	int rc = 0;
	while (!rc && w->cur < w->n_tensors && w->cur_written == w->tensors[w->cur].n_bytes) {
		uint64_t a = w->alignment, n = w->tensors[w->cur].n_bytes;
		rc = write_zeros(w, (a - n % a) % a);
		w->cur++;
		w->cur_written = 0;
	}
	return rc;
}

int eng_gguf_writer_data(struct eng_gguf_writer *w, const void *buf, uint64_t n)
{
	const uint8_t *p = buf;
	int rc;
	if (w->rc)
		return w->rc;
	if (!w->header_written && ((rc = write_header(w)) || (rc = advance(w))))
		return rc;
	while (n) {
		if (w->cur >= w->n_tensors)
			return werr(w, -EINVAL, "%" PRIu64 " bytes of data past the last tensor", n);
		uint64_t room = w->tensors[w->cur].n_bytes - w->cur_written, k = n < room ? n : room;
		if ((rc = write_all(w, p, (size_t)k)))
			return rc;
		w->cur_written += k;
		p += k;
		n -= k;
		if ((rc = advance(w)))
			return rc;
	}
	return 0;
}

static void writer_free(struct eng_gguf_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	free(w->kv.p);
	free(w->info.p);
	free(w->tensors);
	free(w);
}

int eng_gguf_writer_commit(struct eng_gguf_writer *w, struct eng_error *err)
{
	int rc = w->rc;
	if (!rc && !w->header_written && !(rc = write_header(w)))
		rc = advance(w);
	if (!rc && w->cur < w->n_tensors)
		rc = werr(w, -EINVAL, "tensor %" PRIu64 " of %" PRIu64 " has %" PRIu64 " of its %" PRIu64
			  " bytes written", w->cur, w->n_tensors, w->cur_written,
			  w->tensors[w->cur].n_bytes);
	if (!rc && fsync(w->fd) < 0)
		rc = werr(w, -errno, "fsync of %s failed: %s", w->tmp, strerror(errno));
	if (!rc && close(w->fd) < 0)
		rc = werr(w, -errno, "close of %s failed: %s", w->tmp, strerror(errno));
	w->fd = rc ? w->fd : -1;
	if (!rc && rename(w->tmp, w->path) < 0)
		rc = werr(w, -errno, "rename %s to %s failed: %s", w->tmp, w->path, strerror(errno));
	if (rc) {
		if (err)
			*err = w->err;
		eng_gguf_writer_abort(w);
		return rc;
	}
	writer_free(w);
	return 0;
}

void eng_gguf_writer_abort(struct eng_gguf_writer *w)
{
	if (!w)
		return;
	unlink(w->tmp);
	writer_free(w);
}
