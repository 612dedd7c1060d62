/* engine/model/tensors.h: the tensor table's internal hooks (the public part is in engine.h).
 * Internal to engine/. */
#ifndef MEMWALL_TENSORS_H
#define MEMWALL_TENSORS_H

#include "engine.h"
#include "format/gguf.h"

/* Fills a tensor table from an open GGUF file's metadata and tensor infos: what a GGUF model's
 * eng_model_tensors calls once GGUF models load for inference. g is borrowed: the table's data
 * pointers view g's mapping, so g must outlive the table. source names the file in errors. */
int eng_tensors_from_gguf(const struct eng_gguf *g, const char *source,
			  struct eng_tensor_table **out, struct eng_error *err);

/* The table of a shapes.c plan (data NULL in every tensor; a tied classifier's entry last).
 * source becomes the table's source. *out is new, freed with eng_tensor_table_free. */
struct eng_plan;
int eng_tensors_from_plan(const struct eng_plan *p, const char *source,
			  struct eng_tensor_table **out, struct eng_error *err);

#endif
