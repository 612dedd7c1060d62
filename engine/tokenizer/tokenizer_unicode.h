/* engine/tokenizer/tokenizer_unicode.h: the Unicode classes GPT-2 style pre-tokenizers test, from the
 * generated table in tokenizer_unicode.c. Internal. */
#ifndef MEMWALL_TOKENIZER_UNICODE_H
#define MEMWALL_TOKENIZER_UNICODE_H

#include <stdint.h>

/* Unicode general-category majors, as GPT-2 style pre-tokenizers test them (\p{L}, \p{N},
 * \p{P}); tokenizer_unicode.c, generated. */
enum eng_ucat { ENG_UCAT_OTHER, ENG_UCAT_LETTER, ENG_UCAT_NUMBER, ENG_UCAT_PUNCT };
enum eng_ucat eng_unicode_class(uint32_t cp);

#endif
