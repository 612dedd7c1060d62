/* engine/model.h: what a loaded model holds, for the forward pass. Internal to engine/. */
#ifndef MEMWALL_MODEL_H
#define MEMWALL_MODEL_H

#include <stddef.h>

#include "engine.h"

/* Views into the model's mapping (never copies); rows are the outputs of each projection,
 * as llama2.c stores them: y = W x with W row-major (rows, cols). */
struct eng_llama_weights {
	const float *token_embedding; /* (vocab, dim) */
	const float *rms_att;         /* (layer, dim) */
	const float *wq;              /* (layer, n_heads * head_size, dim) */
	const float *wk;              /* (layer, n_kv_heads * head_size, dim) */
	const float *wv;              /* (layer, n_kv_heads * head_size, dim) */
	const float *wo;              /* (layer, dim, n_heads * head_size) */
	const float *rms_ffn;         /* (layer, dim) */
	const float *w1;              /* (layer, hidden_dim, dim) */
	const float *w2;              /* (layer, dim, hidden_dim) */
	const float *w3;              /* (layer, hidden_dim, dim) */
	const float *rms_final;       /* (dim) */
	const float *wcls;            /* (vocab, dim); aliases token_embedding when shared */
};

struct eng_model {
	struct eng_model_info info;
	struct eng_llama_weights w;
	void *map;      /* the whole file, PROT_READ, MAP_SHARED; MAP_FAILED when unmapped */
	size_t map_len;
	char path[];
};

#endif
