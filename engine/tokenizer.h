/* engine/tokenizer.h: what every tokenizer behind struct eng_tokenizer shares. Internal.
 *
 * One ops table per kind (llama2.c's tokenizer.bin in tokenizer.c; GGUF's SentencePiece and
 * GPT-2 byte-level BPE in tokenizer_gguf.c). Each kind embeds struct eng_tokenizer first, so
 * the public functions in tokenizer.c dispatch through t->ops and never switch on the kind.
 */
#ifndef MEMWALL_TOKENIZER_H
#define MEMWALL_TOKENIZER_H

#include "engine.h"
#include "gguf.h"

struct eng_tokenizer_ops {
	const char *kind; /* "llama2.c", "llama", "gpt2" (tokenizer.ggml.model's spelling) */
	int (*encode)(const struct eng_tokenizer *t, const char *text, bool bos, bool eos,
		      int *tokens, int max, int *n);
	const char *(*decode)(const struct eng_tokenizer *t, int prev, int token);
	void (*close)(struct eng_tokenizer *t);
};

struct eng_tokenizer {
	const struct eng_tokenizer_ops *ops;
	int vocab_size;
	int bos, eos;  /* token ids, -1 when the vocabulary has none */
	bool add_bos;  /* the model asks for BOS before a prompt (tokenizer.ggml.add_bos_token) */
};

/* Unicode general-category majors, as GPT-2 style pre-tokenizers test them (\p{L}, \p{N},
 * \p{P}); tokenizer_unicode.c, generated. */
enum eng_ucat { ENG_UCAT_OTHER, ENG_UCAT_LETTER, ENG_UCAT_NUMBER, ENG_UCAT_PUNCT };
enum eng_ucat eng_unicode_class(uint32_t cp);

/* The tokenizer in an open GGUF file's metadata (tokenizer.ggml.*). Everything is copied: g
 * may be closed afterwards. source names the file in errors. */
int eng_tokenizer_from_gguf(struct eng_tokenizer **out, const struct eng_gguf *g,
			    const char *source, struct eng_error *err);

/* For tests: GPT-2 pre-tokenization of text under tokenizer.ggml.pre name pre ("default",
 * "falcon", "gpt-2", ...): ends[i] is the byte offset where word i ends. -EINVAL for an
 * unknown name, -ENOSPC (with *n the count) when max is too small. */
int eng_bpe_pre_split(const char *pre, const char *text, size_t *ends, size_t max, size_t *n);

#endif
