/* engine/tokenizer/tokenizer_gguf.h: the tokenizers a GGUF file carries (SentencePiece and GPT-2
 * byte-level BPE), behind tokenizer_ops.h's table. Internal. */
#ifndef MEMWALL_TOKENIZER_GGUF_H
#define MEMWALL_TOKENIZER_GGUF_H

#include <stddef.h>

#include "engine.h"
#include "format/gguf.h"

/* The tokenizer in an open GGUF file's metadata (tokenizer.ggml.*). Everything is copied: g
 * may be closed afterwards. source names the file in errors. */
int eng_tokenizer_from_gguf(struct eng_tokenizer **out, const struct eng_gguf *g,
			    const char *source, struct eng_error *err);

#endif
