/* engine/model/gguf_model.h: GGUF files (llama and falcon architectures) as models. Internal. */
#ifndef MEMWALL_GGUF_MODEL_H
#define MEMWALL_GGUF_MODEL_H

#include "engine.h"

struct eng_model;

/* Loads the GGUF model at m->path, open as fd (the caller has seen the "GGUF" magic; fd is
 * this function's from the call on), into m, which model_open.c has just allocated (zeroed
 * but for path and map). m owns what this puts in it, the reader included, also on failure:
 * the caller then closes m. */
int eng_gguf_model_load(struct eng_model *m, int fd, const struct eng_model_options *opt,
			struct eng_error *err);

#endif
