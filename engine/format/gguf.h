/* engine/format/gguf.h: reading and writing GGUF files (versions 2 and 3).
 *
 * Format, from ggml's docs/gguf.md: little-endian throughout.
 *   header:  "GGUF" magic, uint32 version, uint64 n_tensors, uint64 n_kv
 *   n_kv ×   string key, uint32 value type, value
 *   n_tensors × string name, uint32 n_dims, uint64 ne[n_dims], uint32 ggml type,
 *            uint64 offset (relative to the data section, a multiple of the alignment)
 *   padding to general.alignment (a uint32 key, default 32), then the data section.
 * A string is a uint64 byte length and that many bytes, not NUL-terminated. An array is a
 * uint32 element type, a uint64 count, then the elements (strings and arrays inline).
 *
 * The reader maps the file read-only and checks every count, length and offset against the
 * file's size before using it; a bad file gets an eng_error naming the key or tensor. Values
 * are views into the mapping; nothing is copied but key and tensor names (NUL-terminated)
 * and the index of string and array elements, all bounded by the file's size.
 *
 * Internal to engine/: src/ sees models only through engine.h.
 */
#ifndef MEMWALL_GGUF_H
#define MEMWALL_GGUF_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

/* GGUF metadata value types (gguf.md's gguf_metadata_value_type). */
enum eng_gguf_type {
	ENG_GGUF_UINT8 = 0,
	ENG_GGUF_INT8 = 1,
	ENG_GGUF_UINT16 = 2,
	ENG_GGUF_INT16 = 3,
	ENG_GGUF_UINT32 = 4,
	ENG_GGUF_INT32 = 5,
	ENG_GGUF_FLOAT32 = 6,
	ENG_GGUF_BOOL = 7,
	ENG_GGUF_STRING = 8,
	ENG_GGUF_ARRAY = 9,
	ENG_GGUF_UINT64 = 10,
	ENG_GGUF_INT64 = 11,
	ENG_GGUF_FLOAT64 = 12,
	ENG_GGUF_TYPE_COUNT,
};

#define ENG_GGUF_DEFAULT_ALIGNMENT 32
/* Every tensor must start at a file offset that is a multiple of this: the kernels read
 * f32 and the quant blocks' fields in place (general.alignment 1, 2 or 4 may break it). */
#define ENG_GGUF_TENSOR_ALIGN 8
#define ENG_GGUF_MAX_DIMS 4       /* GGML_MAX_DIMS */
#define ENG_GGUF_MAX_NAME 64      /* gguf.md: a tensor name is at most 64 bytes */
#define ENG_GGUF_MAX_DEPTH 8      /* arrays of arrays nest at most this deep */

struct eng_gguf_str {
	const char *ptr; /* not NUL-terminated */
	uint64_t len;
};

/* One metadata value. Scalars are widened: unsigned types in u, signed in i, floats in f. */
struct eng_gguf_value {
	enum eng_gguf_type type;
	union {
		uint64_t u;
		int64_t i;
		double f;
		bool b;
		struct eng_gguf_str s;
		struct {
			enum eng_gguf_type type; /* element type */
			uint64_t n;
			/* Fixed-size elements: packed little-endian, possibly unaligned (read them
			 * with eng_gguf_arr_int / eng_gguf_arr_float). */
			const void *data;
			/* STRING or ARRAY elements: n values. */
			const struct eng_gguf_value *items;
		} arr;
	};
};

struct eng_gguf_tensor {
	const char *name; /* NUL-terminated */
	uint32_t type;    /* ggml type id (enum krn_type) */
	uint32_t n_dims;
	uint64_t ne[ENG_GGUF_MAX_DIMS]; /* ggml order: ne[0] is the row length; unused dims 1 */
	uint64_t n_elements;
	uint64_t n_bytes;
	uint64_t offset;  /* absolute offset of the data in the file */
	const void *data; /* view into the mapping */
};

struct eng_gguf;

struct eng_gguf_open_options {
	bool populate;  /* MAP_POPULATE */
	bool hugepages; /* madvise(MADV_HUGEPAGE) */
	bool copy;      /* tensors in anonymous 2 MiB pages (hugecopy.h) the caller fills
			 * (eng_gguf_fill_target), writable until sealed */
};

/* Maps and parses path (opt may be NULL). On success *out is a new handle the caller closes
 * with eng_gguf_close; every pointer obtained from it is borrowed and valid until then. */
int eng_gguf_open(struct eng_gguf **out, const char *path, const struct eng_gguf_open_options *opt,
		  struct eng_error *err);
/* The same over fd, a file the caller has opened (read-only) as path: the file is opened once
 * (eng_model_open reads the magic and hands its fd here). fd is the handle's from the call on,
 * whatever the result: it is closed, or kept for an unsealed copy's fill until eng_gguf_seal. */
int eng_gguf_open_fd(struct eng_gguf **out, const char *path, int fd,
		     const struct eng_gguf_open_options *opt, struct eng_error *err);
/* Parses a GGUF image in memory (for fuzzing and tests). buf is borrowed: it must outlive the
 * handle. name is used in error messages. */
int eng_gguf_open_mem(struct eng_gguf **out, const char *name, const void *buf, uint64_t size,
		      struct eng_error *err);
void eng_gguf_close(struct eng_gguf *g);
/* p (a pointer into g's data) as writable, while g is an unsealed copy; else NULL. */
void *eng_gguf_writable(const struct eng_gguf *g, const void *p);
/* An unsealed copy's fill: dst (bytes long, the image of the whole file: a tensor's data is
 * dst + its offset) is to get the file's bytes, from the file fd or its mapping src, each as
 * it is or rearranged. Borrowed from g, valid until eng_gguf_seal. */
struct eng_gguf_fill {
	uint8_t *dst;
	const uint8_t *src;
	size_t bytes;
	int fd;
};
/* 0 with *f set while g is an unsealed copy; -EINVAL otherwise. */
int eng_gguf_fill_target(const struct eng_gguf *g, struct eng_gguf_fill *f);
/* Makes an unsealed copy read-only (a no-op otherwise), and closes the file. */
int eng_gguf_seal(struct eng_gguf *g, struct eng_error *err);

uint32_t eng_gguf_version(const struct eng_gguf *g);
uint32_t eng_gguf_alignment(const struct eng_gguf *g);
uint64_t eng_gguf_data_offset(const struct eng_gguf *g); /* start of the data section */
uint64_t eng_gguf_file_bytes(const struct eng_gguf *g);
const void *eng_gguf_base(const struct eng_gguf *g);     /* what tensors' offsets count from */

uint64_t eng_gguf_n_kv(const struct eng_gguf *g);
/* The i-th key/value in file order; *key receives its NUL-terminated name. Borrowed. */
const struct eng_gguf_value *eng_gguf_kv(const struct eng_gguf *g, uint64_t i, const char **key);
/* The value of key, or NULL when absent. Borrowed. */
const struct eng_gguf_value *eng_gguf_find(const struct eng_gguf *g, const char *key);

/* Typed getters: 0 on success, -ENOENT when the key is absent (err untouched), -EINVAL with
 * err filled when it has another type. get_int accepts every integer type whose value fits
 * in int64; get_float accepts FLOAT32 and FLOAT64; get_str gives a view (not NUL-terminated). */
int eng_gguf_get_int(const struct eng_gguf *g, const char *key, int64_t *out,
		     struct eng_error *err);
int eng_gguf_get_float(const struct eng_gguf *g, const char *key, double *out,
		       struct eng_error *err);
int eng_gguf_get_bool(const struct eng_gguf *g, const char *key, bool *out,
		      struct eng_error *err);
int eng_gguf_get_str(const struct eng_gguf *g, const char *key, struct eng_gguf_str *out,
		     struct eng_error *err);
/* An ARRAY whose elements have type elem (or any type when elem is ENG_GGUF_TYPE_COUNT). */
int eng_gguf_get_arr(const struct eng_gguf *g, const char *key, enum eng_gguf_type elem,
		     const struct eng_gguf_value **out, struct eng_error *err);
/* Element i of an array of integers or floats (any width), converted. 0 or -EINVAL. */
int eng_gguf_arr_int(const struct eng_gguf_value *arr, uint64_t i, int64_t *out);
int eng_gguf_arr_float(const struct eng_gguf_value *arr, uint64_t i, double *out);

uint64_t eng_gguf_n_tensors(const struct eng_gguf *g);
/* Borrowed. Tensors are in file order. */
const struct eng_gguf_tensor *eng_gguf_tensor(const struct eng_gguf *g, uint64_t i);
const struct eng_gguf_tensor *eng_gguf_tensor_find(const struct eng_gguf *g, const char *name);

/* Name of a value type ("uint32", "array", ...), "unknown" past the table. Static storage. */
const char *eng_gguf_type_name(uint32_t t);
/* Bytes of one value of type t; 0 for STRING, ARRAY and an unknown type. */
unsigned eng_gguf_type_size(uint32_t t);

/* ---- Writer ------------------------------------------------------------------------------
 *
 * Streaming: add every key/value and declare every tensor, then write the tensors' bytes in
 * declaration order (in as many pieces as convenient; padding is inserted between tensors),
 * then commit. The file is written as path + ".tmp-XXXXXX" and renamed over path after an
 * fsync, so a reader never sees a half-written model. */

struct eng_gguf_writer;

/* alignment 0 means 32; anything else must be a power of two (a general.alignment key is
 * added when it differs from 32). */
int eng_gguf_writer_new(struct eng_gguf_writer **out, const char *path, uint32_t alignment,
			struct eng_error *err);
/* Adds key with value v (any type, arrays nested up to ENG_GGUF_MAX_DEPTH). v is copied. */
int eng_gguf_writer_kv(struct eng_gguf_writer *w, const char *key, const struct eng_gguf_value *v);
int eng_gguf_writer_kv_u32(struct eng_gguf_writer *w, const char *key, uint32_t v);
int eng_gguf_writer_kv_f32(struct eng_gguf_writer *w, const char *key, float v);
int eng_gguf_writer_kv_str(struct eng_gguf_writer *w, const char *key, const char *v);
/* Declares a tensor of n_dims dims (ne in ggml order) and ggml type. */
int eng_gguf_writer_tensor(struct eng_gguf_writer *w, const char *name, uint32_t type,
			   uint32_t n_dims, const uint64_t *ne);
/* Appends n bytes of tensor data; the first call writes the header. */
int eng_gguf_writer_data(struct eng_gguf_writer *w, const void *buf, uint64_t n);
/* Checks every declared byte was written, fsyncs and renames. Frees w either way. */
int eng_gguf_writer_commit(struct eng_gguf_writer *w, struct eng_error *err);
/* Removes the temporary file and frees w. NULL is fine. */
void eng_gguf_writer_abort(struct eng_gguf_writer *w);

#endif
