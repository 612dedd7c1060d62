/* engine/tokenizer/tokenizer_ops.h: what every tokenizer behind struct eng_tokenizer shares. Internal.
 *
 * One ops table per kind (llama2.c's tokenizer.bin in tokenizer.c; GGUF's SentencePiece and
 * GPT-2 byte-level BPE in tokenizer_gguf.c). Each kind embeds struct eng_tokenizer first, so
 * the public functions in tokenizer.c dispatch through t->ops and never switch on the kind.
 *
 * No .c owns this header: tokenizer.c opens a GGUF tokenizer through tokenizer_gguf.h, and
 * tokenizer_gguf.c needs only this contract, so the dependency goes one way.
 */
#ifndef MEMWALL_TOKENIZER_OPS_H
#define MEMWALL_TOKENIZER_OPS_H

#include "engine.h"

struct eng_tokenizer_ops {
	const char *kind; /* "llama2.c", "llama", "gpt2" (tokenizer.ggml.model's spelling) */
	int (*encode)(const struct eng_tokenizer *t, const char *text,
		      const struct eng_encode_options *o, int *tokens, int max, int *n);
	const char *(*decode)(const struct eng_tokenizer *t, int prev, int token);
	void (*close)(struct eng_tokenizer *t);
};

struct eng_tokenizer {
	const struct eng_tokenizer_ops *ops;
	int vocab_size;
	int bos, eos;  /* token ids, -1 when the vocabulary has none */
	bool add_bos;  /* the model asks for BOS before a prompt (tokenizer.ggml.add_bos_token) */
};

#endif
