/* engine/model/shapes.h: llama-quantize's per-tensor type mixes over the architectures' built-in
 * shapes (arch.c's rows), the one description behind eng_tensors_from_shape (a file that is
 * not at hand) and eng_synth_gguf (a file to write). Internal to engine/.
 */
#ifndef MEMWALL_SHAPES_H
#define MEMWALL_SHAPES_H

#include "engine.h"
#include "format/gguf.h"
#include "arch.h"

struct eng_mix {
	const char *name;   /* "q4_k_m" */
	uint32_t base;      /* ggml type of the matrices the rules leave alone */
	uint32_t file_type; /* llama_ftype, written as general.file_type */
};

/* What a tensor holds, so that a writer can fill it plausibly: arch.h's enum eng_plan_fill. */

struct eng_plan_tensor {
	char name[ENG_GGUF_MAX_NAME];
	uint32_t type;     /* ggml type */
	uint32_t n_dims;   /* 1 or 2 */
	uint64_t ne[2];    /* ggml order: ne[0] is the row length; ne[1] is 1 for a vector */
	int layer;         /* -1 outside the layers */
	enum eng_tensor_class cls;
	enum eng_plan_fill fill;
	uint64_t bytes;
};

/* A shape's tensors under a mix, in the order llama-quantize writes them (tensors outside the
 * layers by name, then each layer's by name, layers in order). */
struct eng_plan {
	const struct eng_arch_desc *arch; /* the shape's architecture */
	const struct eng_shape *shape;
	const struct eng_mix *mix;
	size_t n;
	struct eng_plan_tensor *t; /* (n) */
	uint64_t bytes;            /* sum of t[].bytes */
};

/* The shape named name (case-insensitive) of the architecture named arch (NULL: of any), and
 * in *row (when not NULL) its architecture's row; NULL when there is none. Static storage. */
const struct eng_shape *eng_shape_find(const char *arch, const char *name,
				       const struct eng_arch_desc **row);
/* The mix named name (case-insensitive: "Q4_K_M" too), or NULL. Static storage. */
const struct eng_mix *eng_mix_find(const char *name);
/* "f32 f16 ...": for error messages (the shapes' names are engine.h's eng_arch_shape_names). */
void eng_mix_names(char *buf, size_t len);

/* The plan of shape under mix. *out is new, freed with eng_plan_free. -EINVAL (err names the
 * valid choices, or the tensor) for an unknown arch, shape or mix, or a tensor whose row length
 * no block of its type divides, which llama-quantize refuses too. */
int eng_plan_new(struct eng_plan **out, const char *arch, const char *shape, const char *mix,
		 struct eng_error *err);
void eng_plan_free(struct eng_plan *p);

#endif
