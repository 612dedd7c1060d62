/* engine/tokenizer/pretokenize.c: GPT-2-style pre-tokenization (tokenizer.ggml.pre) and the
 * UTF-8 decoding it shares with tokenizer_gguf.c (pretokenize.h).
 *
 * Pre-tokenizer passes are llama.cpp's regexes (llm_tokenizer_bpe in src/llama-vocab.cpp),
 * implemented by hand over code points, with Unicode 15.1's categories (tokenizer_unicode.c):
 * each pass splits every piece of the previous one, keeping matches and the gaps between them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pretokenize.h"
#include "tokenizer_unicode.h"

/* ---- Growable arrays ----------------------------------------------------------------------- */

int eng_tok_ivec_push(struct tok_ivec *a, int x)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 64;
		int *v = realloc(a->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = x;
	return 0;
}

/* ---- UTF-8 --------------------------------------------------------------------------------- */

/* Bytes of the UTF-8 sequence a lead byte starts, by its high nibble (llama.cpp's
 * unicode_len_utf8: continuation bytes count as 1). */
size_t eng_tok_utf8_len(unsigned char c)
{
	static const uint8_t len[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
	return len[c >> 4];
}

/* Decodes the code point at s[*off] (len bytes in s); an invalid sequence consumes one byte
 * and reads as U+FFFD, as llama.cpp's unicode_cpts_from_utf8 does: a lead byte 0xf8-0xff is
 * invalid there too, while overlong forms and surrogates are decoded as they come. */
uint32_t eng_tok_utf8_next(const unsigned char *s, size_t len, size_t *off)
{
	size_t i = *off, n = eng_tok_utf8_len(s[i]);
	uint32_t cp;
	if (n == 1 && s[i] < 0x80) {
		*off = i + 1;
		return s[i];
	}
	if (n == 1 || i + n > len || s[i] >= 0xf8)
		goto bad;
	cp = s[i] & (0xffu >> (n + 1));
	for (size_t k = 1; k < n; k++) {
		if ((s[i + k] & 0xc0) != 0x80)
			goto bad;
		cp = (cp << 6) | (s[i + k] & 0x3fu);
	}
	*off = i + n;
	return cp;
bad:
	*off = i + 1;
	return 0xfffd;
}

/* Unicode's White_Space property (PropList.txt), what \s matches in llama.cpp's tables. */
static bool is_space(uint32_t cp)
{
	return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0x85 || cp == 0xa0 ||
	       cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
	       cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* ---- Pre-tokenizer passes -----------------------------------------------------------------
 * A pass reads code points cps[0..n) split into pieces of lens[] code points and writes the
 * finer split to *out. */

struct split {
	const uint32_t *cps;
	const struct tok_ivec *in;
	struct tok_ivec *out;
};

typedef int (*pass_fn)(const struct split *s);

/* Pushes a piece of len code points when len > 0. */
static int emit(const struct split *s, size_t len)
{
	return len ? eng_tok_ivec_push(s->out, (int)len) : 0;
}

/* A pass that keeps maximal runs of code points a predicate accepts (the regex "[class]+")
 * and the gaps between them as pieces. */
static int pass_runs(const struct split *s, bool (*in_class)(uint32_t cp))
{
	size_t start = 0;
	for (size_t p = 0; p < s->in->n; p++) {
		size_t end = start + (size_t)s->in->v[p], run = start;
		for (size_t i = start; i < end; i++) {
			if (i > run && in_class(s->cps[i]) != in_class(s->cps[i - 1])) {
				int rc = emit(s, i - run);
				if (rc)
					return rc;
				run = i;
			}
		}
		int rc = emit(s, end - run);
		if (rc)
			return rc;
		start = end;
	}
	return 0;
}

/* "[\p{P}\$\+<=>\^~\|`]+" (falcon) and the same without the backtick (default): in ASCII
 * every punctuation or symbol character but, for default, '`'; beyond it \p{P}. */
static bool punct_falcon(uint32_t cp)
{
	if (cp < 0x80)
		return cp > 0x20 && cp < 0x7f && !((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') &&
		       !(cp >= '0' && cp <= '9');
	return eng_unicode_class(cp) == ENG_UCAT_PUNCT;
}

static bool punct_default(uint32_t cp)
{
	return cp != '`' && punct_falcon(cp);
}

/* "\p{N}+" */
static bool number(uint32_t cp)
{
	return eng_unicode_class(cp) == ENG_UCAT_NUMBER;
}

static int pass_punct_falcon(const struct split *s)
{
	return pass_runs(s, punct_falcon);
}

static int pass_punct_default(const struct split *s)
{
	return pass_runs(s, punct_default);
}

static int pass_numbers(const struct split *s)
{
	return pass_runs(s, number);
}

/* "[0-9][0-9][0-9]": leftmost runs of three ASCII digits. */
static int pass_digits3(const struct split *s)
{
	size_t start = 0;
	for (size_t p = 0; p < s->in->n; p++) {
		size_t end = start + (size_t)s->in->v[p], gap = start, i = start;
		int rc = 0;
		while (i < end) {
			bool three = i + 3 <= end;
			for (size_t k = 0; three && k < 3; k++)
				three = s->cps[i + k] >= '0' && s->cps[i + k] <= '9';
			if (!three) {
				i++;
				continue;
			}
			if ((rc = emit(s, i - gap)) || (rc = emit(s, 3)))
				return rc;
			i += 3;
			gap = i;
		}
		if ((rc = emit(s, end - gap)))
			return rc;
		start = end;
	}
	return 0;
}

/* GPT-2's "'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+", as
 * llama.cpp's unicode_regex_split_custom_gpt2 walks it: a run of whitespace before a word
 * leaves its last character to that word (the lookahead), and nothing looks past the piece. */
static int pass_gpt2(const struct split *s)
{
	size_t start = 0;
	for (size_t p = 0; p < s->in->n; p++) {
		const size_t end = start + (size_t)s->in->v[p];
		const uint32_t *c = s->cps;
#define IN(i) ((i) < end)
#define LETTER(i) (IN(i) && eng_unicode_class(c[i]) == ENG_UCAT_LETTER)
#define NUMBER(i) (IN(i) && eng_unicode_class(c[i]) == ENG_UCAT_NUMBER)
#define SPACE(i) (IN(i) && is_space(c[i]))
#define OTHER(i) (IN(i) && !is_space(c[i]) && !LETTER(i) && !NUMBER(i))
		size_t pos = start;
		while (pos < end) {
			size_t from = pos, q = pos + (c[pos] == ' ');
			uint32_t a = IN(pos + 1) ? c[pos + 1] : 0, b = IN(pos + 2) ? c[pos + 2] : 0;
			if (c[pos] == '\'' && (a == 's' || a == 't' || a == 'm' || a == 'd')) {
				pos += 2;
			} else if (c[pos] == '\'' &&
				   ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
				    (a == 'l' && b == 'l'))) {
				pos += 3;
			} else if (LETTER(q)) {
				for (pos = q; LETTER(pos); pos++)
					;
			} else if (NUMBER(q)) {
				for (pos = q; NUMBER(pos); pos++)
					;
			} else if (OTHER(q)) {
				for (pos = q; OTHER(pos); pos++)
					;
			} else {
				size_t ws = 0;
				while (SPACE(pos + ws))
					ws++;
				if (ws > 1 && IN(pos + ws))
					pos += ws - 1; /* \s+(?!\S) */
				else if (ws > 0)
					pos += ws;
				else
					pos++;
			}
			int rc = emit(s, pos - from);
			if (rc)
				return rc;
		}
#undef IN
#undef LETTER
#undef NUMBER
#undef SPACE
#undef OTHER
		start = end;
	}
	return 0;
}

/* llama.cpp's llm_tokenizer_bpe: the passes each tokenizer.ggml.pre names. */
#define MAX_PASSES 4
static const struct tok_pre {
	const char *names[6];
	pass_fn passes[MAX_PASSES];
} pre_tokenizers[] = {
	{ { "default" }, { pass_punct_default, pass_gpt2, pass_numbers, pass_digits3 } },
	{ { "falcon" }, { pass_punct_falcon, pass_gpt2, pass_digits3 } },
	{ { "gpt-2", "phi-2", "mpt", "olmo", "jais" }, { pass_gpt2 } },
};

const struct tok_pre *eng_tok_pre_find(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(pre_tokenizers) / sizeof(pre_tokenizers[0]); i++)
		for (size_t k = 0; k < 6 && pre_tokenizers[i].names[k]; k++)
			if (strlen(pre_tokenizers[i].names[k]) == len &&
			    !memcmp(pre_tokenizers[i].names[k], name, len))
				return &pre_tokenizers[i];
	return NULL;
}

/* Runs pre's passes over cps[0..n); *words receives the word lengths in code points. */
int eng_tok_pre_split(const struct tok_pre *pre, const uint32_t *cps, size_t n,
		     struct tok_ivec *words)
{
	struct tok_ivec a = { 0 }, b = { 0 };
	int rc = n ? eng_tok_ivec_push(&a, (int)n) : 0;
	for (size_t k = 0; !rc && k < MAX_PASSES && pre->passes[k]; k++) {
		b.n = 0;
		rc = pre->passes[k](&(struct split){ .cps = cps, .in = &a, .out = &b });
		struct tok_ivec tmp = a;
		a = b;
		b = tmp;
	}
	free(b.v);
	*words = a;
	return rc;
}

int eng_bpe_pre_split(const char *pre, const char *text, size_t *ends, size_t max, size_t *n)
{
	const struct tok_pre *p = eng_tok_pre_find(pre, strlen(pre));
	size_t len = strlen(text), count = 0, off = 0;
	uint32_t *cps = malloc((len + 1) * sizeof(*cps));
	size_t *at = malloc((len + 1) * sizeof(*at)); /* byte offset of each code point */
	struct tok_ivec words = { 0 };
	int rc = 0;
	*n = 0;
	if (!p || !cps || !at) {
		rc = p ? -ENOMEM : -EINVAL;
		goto out;
	}
	while (off < len) {
		at[count] = off;
		cps[count++] = eng_tok_utf8_next((const unsigned char *)text, len, &off);
	}
	at[count] = len;
	if ((rc = eng_tok_pre_split(p, cps, count, &words)))
		goto out;
	size_t cp = 0;
	for (size_t w = 0; w < words.n; w++) {
		cp += (size_t)words.v[w];
		if (w < max)
			ends[w] = at[cp];
	}
	*n = words.n;
	rc = words.n > max ? -ENOSPC : 0;
out:
	free(cps);
	free(at);
	free(words.v);
	return rc;
}

