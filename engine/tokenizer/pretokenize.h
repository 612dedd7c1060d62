/* engine/tokenizer/pretokenize.h: what pretokenize.c shares with tokenizer_gguf.c: growable
 * int arrays, UTF-8 decoding as llama.cpp does it, and the pre-tokenizers tokenizer.ggml.pre
 * names. Internal to engine/tokenizer/. */
#ifndef MEMWALL_TOKENIZER_PRETOKENIZE_H
#define MEMWALL_TOKENIZER_PRETOKENIZE_H

#include <stddef.h>
#include <stdint.h>

struct tok_ivec {
	int *v;
	size_t n, cap;
};

/* Appends x; 0 or -ENOMEM. */
int eng_tok_ivec_push(struct tok_ivec *a, int x);

/* Bytes of the UTF-8 sequence a lead byte starts (llama.cpp's unicode_len_utf8). */
size_t eng_tok_utf8_len(unsigned char c);
/* The code point at s[*off] (len bytes in s), *off moved past it; an invalid sequence consumes
 * one byte and reads as U+FFFD, as llama.cpp's unicode_cpts_from_utf8 does. */
uint32_t eng_tok_utf8_next(const unsigned char *s, size_t len, size_t *off);

/* A pre-tokenizer: llama.cpp's passes for one tokenizer.ggml.pre name. */
struct tok_pre;
/* The pre-tokenizer named name[0..len), or NULL when this engine has none of that name. */
const struct tok_pre *eng_tok_pre_find(const char *name, size_t len);
/* Runs pre's passes over cps[0..n); *words receives the word lengths in code points (the
 * caller frees words->v). 0 or -ENOMEM. */
int eng_tok_pre_split(const struct tok_pre *pre, const uint32_t *cps, size_t n,
		  struct tok_ivec *words);

/* For tests: GPT-2 pre-tokenization of text under tokenizer.ggml.pre name pre ("default",
 * "falcon", "gpt-2", ...): ends[i] is the byte offset where word i ends. -EINVAL for an
 * unknown name, -ENOSPC (with *n the count) when max is too small. */
int eng_bpe_pre_split(const char *pre, const char *text, size_t *ends, size_t max, size_t *n);

#endif
