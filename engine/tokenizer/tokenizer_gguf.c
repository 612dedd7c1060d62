/* engine/tokenizer/tokenizer_gguf.c: the tokenizers GGUF files carry in their metadata (engine.h, "GGUF
 * tokenizers"), behind tokenizer_ops.h's table.
 *
 * Written from the GGUF keys (ggml's docs/gguf.md, "Tokenizer") and from what llama.cpp's
 * src/llama-vocab.cpp and src/unicode.cpp do with them, so that a prompt gets the ids
 * llama.cpp gives it:
 *  - tokenizer.ggml.tokens (strings), .scores (floats), .token_type (ints: 1 normal,
 *    2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte), .merges ("left right", ranked
 *    by position), .bos_token_id, .eos_token_id, .add_bos_token, .add_space_prefix, .pre.
 *  - Special tokens (control, user-defined, unknown) written in the text are cut out first,
 *    longest text first; the pieces between them are tokenized on their own.
 *  - "llama" (SentencePiece): spaces become U+2581 (and a leading one is added at the start
 *    and after a special token: add_space_prefix), the text is split into UTF-8 characters,
 *    and the adjacent pair whose concatenation is the highest-scoring token is merged, leftmost
 *    first on ties, until none is a token. A symbol that is not a token falls back to its
 *    bytes, as <0xXX> tokens.
 *  - "gpt2" (byte-level BPE): the text is pre-tokenized into words by the passes of
 *    tokenizer.ggml.pre (below), every byte of a word is mapped to GPT-2's printable
 *    stand-in character, and the adjacent pair of lowest merge rank is merged, leftmost first
 *    on ties, until no pair is a merge.
 * Pre-tokenizer passes are llama.cpp's regexes (llm_tokenizer_bpe), implemented by hand in
 * pretokenize.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge.h"
#include "pretokenize.h"
#include "tokenizer_gguf.h"
#include "tokenizer_ops.h"


/* The fix every broken tokenizer key ends with. */
#define FIX " re-convert the model with llama.cpp's convert_hf_to_gguf.py, or give a tokenizer with -z"

/* llama.h's llama_token_type, the values of tokenizer.ggml.token_type. */
enum tok_type {
	TT_UNDEFINED = 0,
	TT_NORMAL = 1,
	TT_UNKNOWN = 2,
	TT_CONTROL = 3,
	TT_USER_DEFINED = 4,
	TT_UNUSED = 5,
	TT_BYTE = 6,
};

static bool is_special(uint8_t type)
{
	return type == TT_CONTROL || type == TT_USER_DEFINED || type == TT_UNKNOWN;
}

/* ---- A string to int map (open addressing, FNV-1a) ------------------------------------------ */

struct slot {
	const char *s; /* NULL: empty */
	uint32_t len;
	int val;
};

struct strmap {
	struct slot *slots;
	size_t mask;
};

static uint64_t hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

static int strmap_init(struct strmap *m, size_t n)
{
	size_t cap = 16;
	while (cap < 2 * n + 1)
		cap *= 2;
	m->slots = calloc(cap, sizeof(*m->slots));
	m->mask = cap - 1;
	return m->slots ? 0 : -ENOMEM;
}

static struct slot *strmap_slot(const struct strmap *m, const char *s, size_t len)
{
	size_t i = (size_t)hash(s, len) & m->mask;
	while (m->slots[i].s && (m->slots[i].len != len || memcmp(m->slots[i].s, s, len)))
		i = (i + 1) & m->mask;
	return &m->slots[i];
}

/* s must outlive the map. keep_first: a duplicate key keeps its first value. */
static void strmap_put(struct strmap *m, const char *s, size_t len, int val, bool keep_first)
{
	struct slot *sl = strmap_slot(m, s, len);
	if (sl->s && keep_first)
		return;
	*sl = (struct slot){ .s = s, .len = (uint32_t)len, .val = val };
}

static int strmap_get(const struct strmap *m, const char *s, size_t len)
{
	const struct slot *sl = strmap_slot(m, s, len);
	return sl->s ? sl->val : -1;
}

/* ---- UTF-8 and GPT-2's byte characters (decoding: pretokenize.h) ----------------------- */

static size_t utf8_put(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* GPT-2's byte-to-character map (openai/gpt-2 encoder.py bytes_to_unicode, and llama.cpp's
 * unicode_byte_to_utf8_map): printable Latin-1 bytes stand for themselves; the other 68
 * (0x00-0x20, 0x7f-0xa0, 0xad) take code points 256, 257, ... in byte order. */
static uint32_t byte_to_cp(unsigned b)
{
	if (b <= 0x20)
		return 256 + b;
	if (b >= 0x7f && b <= 0xa0)
		return 256 + 33 + (b - 0x7f);
	if (b == 0xad)
		return 256 + 33 + 34;
	return b;
}

/* The byte a stand-in character means, or -1. */
static int cp_to_byte(uint32_t cp)
{
	if (cp < 256)
		return byte_to_cp(cp) == cp ? (int)cp : -1;
	if (cp < 256 + 33)
		return (int)(cp - 256);
	if (cp < 256 + 33 + 34)
		return (int)(0x7f + cp - 256 - 33);
	return cp == 256 + 33 + 34 ? 0xad : -1;
}

/* ---- The tokenizer ------------------------------------------------------------------------- */

struct gguf_tokenizer {
	struct eng_tokenizer base;
	bool bpe;                 /* "gpt2"; else "llama" */
	bool add_space_prefix;    /* llama: encode as if the text began with a space */
	const struct tok_pre *pre; /* gpt2 */
	char *text;               /* every token's text, each NUL-terminated, then its decoding */
	const char **piece;       /* (vocab_size) token text, into text */
	uint32_t *piece_len;      /* (vocab_size) */
	const char **shown;       /* (vocab_size) what decode returns, into text */
	float *score;             /* (vocab_size) */
	uint8_t *type;            /* (vocab_size) enum tok_type */
	struct strmap ids;        /* token text -> id (a duplicate text: the last id, as
				   * llama.cpp's token_to_id) */
	char *merges;             /* the merges' text, "left right" each, NUL-terminated */
	struct strmap ranks;      /* "left right" -> rank (a duplicate: the first) */
	int *special;             /* (n_special) special ids, longest text first */
	int n_special;
	int byte_id[256];         /* llama: the id of <0xXX>, or of the one-byte piece; -1 */
	size_t max_piece;         /* longest token text, bytes */
};

/* ---- Merging: SentencePiece and BPE share the loop, not the priority ----------------------- */

struct sym {
	int prev, next;
	uint32_t off, n; /* bytes of the word */
};

struct merger {
	const struct gguf_tokenizer *t;
	const char *word;
	struct sym *syms;
	struct tok_heap heap;
	char *scratch; /* "left right" for a BPE rank lookup */
};

/* The priority of merging syms[l] and syms[r], or false when they do not merge: SentencePiece
 * takes the merged token's score (highest first), BPE the pair's rank (lowest first). */
static bool pair_prio(struct merger *m, int l, int r, double *prio)
{
	const struct sym *a = &m->syms[l], *b = &m->syms[r];
	if (!m->t->bpe) {
		int id = strmap_get(&m->t->ids, m->word + a->off, a->n + b->n);
		if (id < 0)
			return false;
		*prio = -(double)m->t->score[id];
		return true;
	}
	memcpy(m->scratch, m->word + a->off, a->n);
	m->scratch[a->n] = ' ';
	memcpy(m->scratch + a->n + 1, m->word + b->off, b->n);
	int rank = strmap_get(&m->t->ranks, m->scratch, a->n + 1 + b->n);
	*prio = rank;
	return rank >= 0;
}

static int try_pair(struct merger *m, int l, int r)
{
	double prio;
	if (l < 0 || r < 0 || !pair_prio(m, l, r, &prio))
		return 0;
	return eng_tok_heap_push(&m->heap, (struct tok_bigram){ .prio = prio, .left = l, .right = r,
							    .stamp = m->syms[l].n + m->syms[r].n });
}

/* Splits word[0..len) into characters and merges them (llama.cpp's llm_tokenizer_spm_session
 * and llm_tokenizer_bpe_session). On return syms[0] heads the chain of survivors. */
static int merge_word(struct merger *m, const char *word, size_t len, int *n_syms)
{
	int n = 0, rc = 0;
	m->word = word;
	m->heap.n = 0;
	for (size_t off = 0; off < len; n++) {
		size_t k = eng_tok_utf8_len((unsigned char)word[off]);
		if (k > len - off)
			k = len - off;
		m->syms[n] = (struct sym){ .prev = n - 1, .next = off + k < len ? n + 1 : -1,
					   .off = (uint32_t)off, .n = (uint32_t)k };
		off += k;
	}
	for (int i = 1; i < n && !rc; i++)
		rc = try_pair(m, i - 1, i);
	while (!rc && m->heap.n) {
		struct tok_bigram b = eng_tok_heap_pop(&m->heap);
		struct sym *l = &m->syms[b.left], *r = &m->syms[b.right];
		/* Stale: a side was merged away or grew since. Symbols only grow by absorbing their
		 * right neighbour, so equal total size (the stamp) means both are as they were. */
		if (!l->n || !r->n || l->n + r->n != b.stamp)
			continue;
		l->n += r->n;
		r->n = 0;
		l->next = r->next;
		if (r->next >= 0)
			m->syms[r->next].prev = b.left;
		if (!(rc = try_pair(m, l->prev, b.left)))
			rc = try_pair(m, b.left, l->next);
	}
	*n_syms = n;
	return rc;
}

/* ---- Encoding one piece of text (no special tokens in it) ---------------------------------- */

/* SentencePiece: one token per surviving symbol that is a token, else its bytes. (llama.cpp
 * also keeps a table to undo merges, but a merged symbol is always a token, so only
 * unmerged characters ever fall back.) */
static int encode_spm(const struct gguf_tokenizer *t, const char *raw, size_t len, bool prefix,
		      struct tok_ivec *out)
{
	static const char space[] = "\xe2\x96\x81"; /* U+2581 */
	struct merger m = { .t = t };
	size_t cap = 3 * (len + 1), n = 0;
	char *word = malloc(cap);
	int rc = 0, n_syms = 0;

	m.syms = malloc(cap * sizeof(*m.syms));
	if (!word || !m.syms) {
		rc = -ENOMEM;
		goto out;
	}
	if (prefix) {
		memcpy(word, space, 3);
		n = 3;
	}
	for (size_t i = 0; i < len; i++) {
		if (raw[i] == ' ') {
			memcpy(word + n, space, 3);
			n += 3;
		} else {
			word[n++] = raw[i];
		}
	}
	if (!n || (rc = merge_word(&m, word, n, &n_syms)))
		goto out;
	for (int i = 0; i != -1 && !rc; i = m.syms[i].next) {
		const struct sym *s = &m.syms[i];
		int id = strmap_get(&t->ids, word + s->off, s->n);
		if (id >= 0) {
			rc = eng_tok_ivec_push(out, id);
			continue;
		}
		for (uint32_t k = 0; k < s->n && !rc; k++) {
			int b = t->byte_id[(unsigned char)word[s->off + k]];
			rc = b < 0 ? -EINVAL : eng_tok_ivec_push(out, b);
		}
	}
out:
	free(word);
	free(m.syms);
	free(m.heap.v);
	return rc;
}

/* Byte-level BPE over the pre-tokenizer's words. */
static int encode_bpe(const struct gguf_tokenizer *t, const char *raw, size_t len,
		      struct tok_ivec *out)
{
	const unsigned char *u = (const unsigned char *)raw;
	uint32_t *cps = malloc((len + 1) * sizeof(*cps));
	struct tok_ivec a = { 0 };
	struct merger m = { .t = t };
	/* An input byte becomes at most 3 bytes (U+FFFD for an invalid one), each a stand-in
	 * character of at most 2 bytes. */
	char *word = malloc(6 * (len + 1));
	size_t n = 0;
	int rc = 0;

	m.syms = malloc(8 * (len + 1) * sizeof(*m.syms));
	m.scratch = malloc(8 * (len + 1) + 2);
	if (!cps || !word || !m.syms || !m.scratch) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t off = 0; off < len;)
		cps[n++] = eng_tok_utf8_next(u, len, &off);
	if (!n || (rc = eng_tok_pre_split(t->pre, cps, n, &a)))
		goto out;
	size_t at = 0;
	for (size_t w = 0; w < a.n && !rc; w++) {
		/* The word's UTF-8 bytes, each as its stand-in character. */
		size_t wl = 0;
		for (int k = 0; k < a.v[w]; k++) {
			char bytes[4];
			size_t nb = utf8_put(cps[at + (size_t)k], bytes);
			for (size_t j = 0; j < nb; j++)
				wl += utf8_put(byte_to_cp((unsigned char)bytes[j]), word + wl);
		}
		at += (size_t)a.v[w];
		int n_syms;
		if ((rc = merge_word(&m, word, wl, &n_syms)))
			break;
		for (int i = 0; i != -1 && !rc; i = m.syms[i].next) {
			const struct sym *s = &m.syms[i];
			int id = strmap_get(&t->ids, word + s->off, s->n);
			if (id >= 0) {
				rc = eng_tok_ivec_push(out, id);
				continue;
			}
			/* Not a token: each byte of its text as a one-byte token, and a byte
			 * that is none dropped, as llama.cpp b4747 does
			 * (llm_tokenizer_bpe_session::tokenize in src/llama-vocab.cpp). Such a
			 * symbol is an unmerged stand-in character the vocabulary lacks (falcon
			 * has none for 14 control bytes, 0x0b among them); its UTF-8 bytes are
			 * not tokens of a byte-level vocabulary, so the input byte is dropped. */
			for (uint32_t k = 0; k < s->n && !rc; k++) {
				id = strmap_get(&t->ids, word + s->off + k, 1);
				if (id >= 0)
					rc = eng_tok_ivec_push(out, id);
			}
		}
	}
out:
	free(cps);
	free(word);
	free(a.v);
	free(m.syms);
	free(m.scratch);
	free(m.heap.v);
	return rc;
}

/* ---- The ops ------------------------------------------------------------------------------ */

struct fragment {
	size_t off, len;
	int token; /* -1: raw text */
};

/* Appends x to the list (*f, *n of *cap); 0 or -ENOMEM. */
static int frag_push(struct fragment **f, size_t *n, size_t *cap, struct fragment x)
{
	if (*n == *cap) {
		struct fragment *g = realloc(*f, 2 * *cap * sizeof(**f));
		if (!g)
			return -ENOMEM;
		*f = g;
		*cap *= 2;
	}
	(*f)[(*n)++] = x;
	return 0;
}

/* Cuts the special tokens out of text, longest first (llama.cpp's tokenizer_st_partition):
 * one pass per special token, which copies the fragment list into a new one, each raw
 * fragment as the text around every occurrence and the occurrences as tokens; the raw text
 * left is searched by the next token's pass. A pass is linear in the text and the list.
 * (Cutting in place, shifting the rest of the array at every cut, was quadratic: 2 MB of
 * text alternating two special tokens with words took over a minute, issue 43.) No special
 * token has an empty text (load_vocab names one "[EMPTY_i]", as llama.cpp does); were one
 * empty, it is skipped rather than found everywhere, forever. Without parse_special, control
 * and unknown tokens are text (user-defined ones are still cut out). */
static int partition(const struct gguf_tokenizer *t, const char *text, bool parse_special,
		     struct fragment **out, size_t *n_out)
{
	size_t len = strlen(text), n = len ? 1 : 0, cap = 16, m, mcap = 16;
	struct fragment *f = malloc(cap * sizeof(*f)), *g = malloc(mcap * sizeof(*g)), *swap;
	int rc = f && g ? 0 : -ENOMEM;
	if (!rc)
		f[0] = (struct fragment){ 0, len, -1 };
	for (int s = 0; s < t->n_special && !rc; s++) {
		int id = t->special[s];
		/* Without parse_special, control and unknown tokens are text; user-defined
		 * ones are still cut out first (llama.cpp's tokenizer_st_partition). */
		if (!parse_special && (t->type[id] == TT_CONTROL || t->type[id] == TT_UNKNOWN))
			continue;
		const char *sp = t->piece[id];
		size_t sl = t->piece_len[id];
		if (!sl)
			continue;
		m = 0;
		for (size_t i = 0; i < n && !rc; i++) {
			size_t off = f[i].off, end = f[i].off + f[i].len;
			const char *hit;
			if (f[i].token >= 0) {
				rc = frag_push(&g, &m, &mcap, f[i]);
				continue;
			}
			while (!rc && (hit = memmem(text + off, end - off, sp, sl))) {
				size_t at = (size_t)(hit - text);
				if (at > off)
					rc = frag_push(&g, &m, &mcap,
						       (struct fragment){ off, at - off, -1 });
				if (!rc)
					rc = frag_push(&g, &m, &mcap, (struct fragment){ at, sl, id });
				off = at + sl;
			}
			if (!rc && off < end)
				rc = frag_push(&g, &m, &mcap, (struct fragment){ off, end - off, -1 });
		}
		/* the new list is the one the next pass reads; the old one its scratch */
		swap = f;
		f = g;
		g = swap;
		size_t c = cap;
		cap = mcap;
		mcap = c;
		n = m;
	}
	free(g);
	if (rc) {
		free(f);
		return rc;
	}
	*out = f;
	*n_out = n;
	return 0;
}

static int gguf_encode(const struct eng_tokenizer *base, const char *text,
		       const struct eng_encode_options *o, int *tokens, int max, int *n)
{
	const struct gguf_tokenizer *t = (const struct gguf_tokenizer *)base;
	struct fragment *f = NULL;
	struct tok_ivec out = { 0 };
	size_t n_frag = 0;
	bool prev_special = true; /* SentencePiece's prefix space at the start */
	int rc;

	*n = 0;
	if (o->bos && t->base.bos >= 0 && (rc = eng_tok_ivec_push(&out, t->base.bos)))
		goto out;
	if ((rc = partition(t, text, !o->no_parse_special, &f, &n_frag)))
		goto out;
	for (size_t i = 0; i < n_frag && !rc; i++) {
		if (f[i].token >= 0) {
			rc = eng_tok_ivec_push(&out, f[i].token);
			prev_special = true;
		} else if (t->bpe) {
			rc = encode_bpe(t, text + f[i].off, f[i].len, &out);
		} else {
			rc = encode_spm(t, text + f[i].off, f[i].len,
					t->add_space_prefix && prev_special, &out);
			prev_special = false;
		}
	}
	if (!rc && o->eos && t->base.eos >= 0)
		rc = eng_tok_ivec_push(&out, t->base.eos);
	if (rc)
		goto out;
	*n = (int)out.n;
	if (out.n > (size_t)(max < 0 ? 0 : max))
		rc = -ENOSPC;
	else if (out.n)
		memcpy(tokens, out.v, out.n * sizeof(*tokens));
out:
	free(f);
	free(out.v);
	return rc;
}

static const char *gguf_decode(const struct eng_tokenizer *base, int prev, int token)
{
	const struct gguf_tokenizer *t = (const struct gguf_tokenizer *)base;
	if (token < 0 || token >= t->base.vocab_size)
		return "";
	const char *s = t->shown[token];
	/* SentencePiece's added prefix space is not part of the text after BOS. */
	if (!t->bpe && t->add_space_prefix && prev >= 0 && prev == t->base.bos && s[0] == ' ')
		s++;
	return s;
}

static void gguf_close(struct eng_tokenizer *base)
{
	struct gguf_tokenizer *t = (struct gguf_tokenizer *)base;
	free(t->text);
	free(t->piece);
	free(t->piece_len);
	free(t->shown);
	free(t->score);
	free(t->type);
	free(t->ids.slots);
	free(t->merges);
	free(t->ranks.slots);
	free(t->special);
	free(t);
}

static const struct eng_tokenizer_ops spm_ops = {
	.kind = "llama", .encode = gguf_encode, .decode = gguf_decode, .close = gguf_close,
};

static const struct eng_tokenizer_ops bpe_ops = {
	.kind = "gpt2", .encode = gguf_encode, .decode = gguf_decode, .close = gguf_close,
};

/* ---- Loading ------------------------------------------------------------------------------ */

/* The byte a "<0xXX>" piece stands for, or -1. */
static int hex_byte(const char *p, size_t len)
{
	unsigned v = 0;
	if (len != 6 || memcmp(p, "<0x", 3) || p[5] != '>')
		return -1;
	for (int i = 3; i < 5; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
						    : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return -1;
		v = v * 16 + (unsigned)d;
	}
	return (int)v;
}

/* What decode shows for token i (llama.cpp's token_to_piece with special = true). */
static char *render(const struct gguf_tokenizer *t, int i, char *dst)
{
	const char *p = t->piece[i];
	size_t len = t->piece_len[i], n = 0;
	uint8_t type = t->type[i];
	if (is_special(type)) {
		memcpy(dst, p, len);
		n = len;
	} else if (type == TT_BYTE && !t->bpe && hex_byte(p, len) >= 0) {
		dst[n++] = (char)hex_byte(p, len);
	} else if (type == TT_NORMAL && !t->bpe) {
		for (size_t k = 0; k < len; k++) {
			if (k + 3 <= len && !memcmp(p + k, "\xe2\x96\x81", 3)) {
				dst[n++] = ' ';
				k += 2;
			} else {
				dst[n++] = p[k];
			}
		}
	} else if (type == TT_NORMAL) {
		for (size_t off = 0; off < len;) {
			size_t from = off;
			int b = cp_to_byte(eng_tok_utf8_next((const unsigned char *)p, len, &off));
			if (b >= 0) {
				dst[n++] = (char)b;
			} else { /* not a stand-in character: keep it as it is */
				memcpy(dst + n, p + from, off - from);
				n += off - from;
			}
		}
	}
	dst[n] = '\0';
	return dst + n + 1;
}

static int compare_special(const void *a, const void *b, void *ctx)
{
	const struct gguf_tokenizer *t = ctx;
	int x = *(const int *)a, y = *(const int *)b;
	if (t->piece_len[x] != t->piece_len[y])
		return t->piece_len[x] > t->piece_len[y] ? -1 : 1;
	return (x > y) - (x < y);
}

/* An optional token id key; out of range keeps the default, as llama.cpp does. */
static int id_key(const struct eng_gguf *g, const char *key, int n_tokens, int *id,
		  struct eng_error *err)
{
	int64_t v;
	int rc = eng_gguf_get_int(g, key, &v, err);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	if (v >= 0 && v < n_tokens)
		*id = (int)v;
	return 0;
}

static int bool_key(const struct eng_gguf *g, const char *key, bool *v, struct eng_error *err)
{
	int rc = eng_gguf_get_bool(g, key, v, err);
	return rc == -ENOENT ? 0 : rc;
}

static int load_merges(struct gguf_tokenizer *t, const struct eng_gguf *g, const char *source,
		       struct eng_error *err)
{
	const struct eng_gguf_value *m = NULL;
	int rc = eng_gguf_get_arr(g, "tokenizer.ggml.merges", ENG_GGUF_STRING, &m, err);
	if (rc == -ENOENT)
		return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
				     "metadata key 'tokenizer.ggml.merges' is missing: a gpt2 "
				     "tokenizer needs its merges;%s", FIX);
	if (rc)
		return rc;
	if (m->arr.n > INT32_MAX)
		return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
				     "metadata key 'tokenizer.ggml.merges' holds %" PRIu64
				     " merges: more than a rank can number", m->arr.n);
	size_t bytes = 0;
	for (uint64_t i = 0; i < m->arr.n; i++)
		bytes += m->arr.items[i].s.len + 1;
	t->merges = malloc(bytes ? bytes : 1);
	if (!t->merges || strmap_init(&t->ranks, m->arr.n))
		return eng_error_set(err, -ENOMEM, source, ENG_NO_OFFSET, "out of memory");
	char *at = t->merges;
	for (uint64_t i = 0; i < m->arr.n; i++) {
		const struct eng_gguf_str *s = &m->arr.items[i].s;
		memcpy(at, s->ptr, s->len);
		at[s->len] = '\0';
		/* llama.cpp splits at the first space after the first byte; a merge without
		 * one can never apply. */
		if (s->len > 1 && memchr(at + 1, ' ', s->len - 1))
			strmap_put(&t->ranks, at, s->len, (int)i, true);
		at += s->len + 1;
	}
	return 0;
}

/* The tokenizer's kind from tokenizer.ggml.model (SentencePiece or byte-level BPE) with
 * llama.cpp's defaults for it, and a BPE tokenizer's pre-tokenizer. */
static int read_kind(struct gguf_tokenizer *t, const struct eng_gguf *g, const char *source,
		     struct eng_error *err)
{
	struct eng_gguf_str model, pre;
	int rc;

	if ((rc = eng_gguf_get_str(g, "tokenizer.ggml.model", &model, err))) {
		if (rc == -ENOENT)
			rc = eng_error_set(err, -ENOENT, source, ENG_NO_OFFSET,
					   "metadata key 'tokenizer.ggml.model' is missing: the file "
					   "carries no tokenizer (give one with -z)");
		return rc;
	}
	if (model.len == 5 && !memcmp(model.ptr, "llama", 5)) {
		t->base.bos = 1; /* llama.cpp's defaults for the kind, before the keys */
		t->base.eos = 2;
		t->base.add_bos = true;
		t->add_space_prefix = true;
	} else if (model.len == 4 && !memcmp(model.ptr, "gpt2", 4)) {
		t->bpe = true;
		t->base.ops = &bpe_ops;
		t->base.bos = t->base.eos = 11;
		t->pre = eng_tok_pre_find("default", 7); /* absent .pre: "default" */
	} else {
		return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
				     "metadata key 'tokenizer.ggml.model' is '%.*s': memwall reads "
				     "'llama' (SentencePiece) and 'gpt2' (byte-level BPE) "
				     "tokenizers", (int)(model.len > 64 ? 64 : model.len),
				     model.ptr);
	}
	if (!t->bpe)
		return 0;
	if ((rc = eng_gguf_get_str(g, "tokenizer.ggml.pre", &pre, err)))
		return rc == -ENOENT ? 0 : rc; /* absent: the default pre-tokenizer */
	if (!(t->pre = eng_tok_pre_find(pre.ptr, (size_t)pre.len)))
		return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
				     "metadata key 'tokenizer.ggml.pre' is '%.*s': memwall "
				     "implements the pre-tokenizers default, falcon, gpt-2 "
				     "(phi-2, mpt, olmo, jais): give a tokenizer with -z, or "
				     "set the key to the one the model was trained with",
				     (int)(pre.len > 64 ? 64 : pre.len), pre.ptr);
	return 0;
}

/* The per-token arrays: the pieces (required) and their scores and types (optional, NULL
 * when absent), checked to be as long as each other. */
static int find_vocab(const struct eng_gguf *g, const char *source,
		      const struct eng_gguf_value **tokens, const struct eng_gguf_value **scores,
		      const struct eng_gguf_value **types, struct eng_error *err)
{
	int rc;

	if ((rc = eng_gguf_get_arr(g, "tokenizer.ggml.tokens", ENG_GGUF_STRING, tokens, err))) {
		if (rc == -ENOENT)
			rc = eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
					   "metadata key 'tokenizer.ggml.tokens' is missing: the "
					   "tokenizer has no vocabulary;%s", FIX);
		return rc;
	}
	uint64_t n = (*tokens)->arr.n;
	if (n < 1 || n > INT32_MAX)
		return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
				     "metadata key 'tokenizer.ggml.tokens' holds %" PRIu64
				     " tokens", n);
	rc = eng_gguf_get_arr(g, "tokenizer.ggml.scores", ENG_GGUF_TYPE_COUNT, scores, err);
	if (rc && rc != -ENOENT)
		return rc;
	rc = eng_gguf_get_arr(g, "tokenizer.ggml.token_type", ENG_GGUF_TYPE_COUNT, types, err);
	if (rc && rc != -ENOENT)
		return rc;
	static const char *const keys[2] = { "tokenizer.ggml.scores", "tokenizer.ggml.token_type" };
	const struct eng_gguf_value *per_token[2] = { *scores, *types };
	for (int k = 0; k < 2; k++)
		if (per_token[k] && per_token[k]->arr.n != n)
			return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
					     "metadata key '%s' holds %" PRIu64 " values for %" PRIu64
					     " tokens (one per token):%s", keys[k], per_token[k]->arr.n,
					     n, FIX);
	return 0;
}

/* Every token's piece, score, type and shown text into t's tables, then what encoding looks
 * up: the specials longest first and the id of every byte. */
static int load_vocab(struct gguf_tokenizer *t, const struct eng_gguf_value *tokens,
		      const struct eng_gguf_value *scores, const struct eng_gguf_value *types,
		      const char *source, struct eng_error *err)
{
	uint64_t n = tokens->arr.n;

	t->base.vocab_size = (int)n;
	size_t bytes = 0;
	for (uint64_t i = 0; i < n; i++)
		bytes += 2 * (tokens->arr.items[i].s.len ? tokens->arr.items[i].s.len : 24) + 2;
	t->text = malloc(bytes);
	t->piece = calloc(n, sizeof(*t->piece));
	t->piece_len = calloc(n, sizeof(*t->piece_len));
	t->shown = calloc(n, sizeof(*t->shown));
	t->score = calloc(n, sizeof(*t->score));
	t->type = calloc(n, sizeof(*t->type));
	t->special = calloc(n, sizeof(*t->special));
	if (!t->text || !t->piece || !t->piece_len || !t->shown || !t->score || !t->type ||
	    !t->special || strmap_init(&t->ids, n))
		return eng_error_set(err, -ENOMEM, source, ENG_NO_OFFSET, "out of memory");
	char *at = t->text;
	for (uint64_t i = 0; i < n; i++) {
		const struct eng_gguf_str *s = &tokens->arr.items[i].s;
		t->piece[i] = at;
		if (s->len) {
			memcpy(at, s->ptr, s->len);
			t->piece_len[i] = (uint32_t)s->len;
		} else { /* llama.cpp names an empty token so that it stays unique */
			t->piece_len[i] = (uint32_t)sprintf(at, "[EMPTY_%" PRIu64 "]", i);
		}
		at[t->piece_len[i]] = '\0';
		at += t->piece_len[i] + 1;
		if (t->piece_len[i] > t->max_piece)
			t->max_piece = t->piece_len[i];
		double sc = 0;
		int64_t ty = TT_NORMAL;
		if (scores && eng_gguf_arr_float(scores, i, &sc))
			return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
					     "metadata key 'tokenizer.ggml.scores': element %" PRIu64
					     " is %s, not a number (scores are float32):%s", i,
					     eng_gguf_type_name(scores->arr.type), FIX);
		if (types && (eng_gguf_arr_int(types, i, &ty) || ty < 0 || ty > TT_BYTE))
			return eng_error_set(err, -EINVAL, source, ENG_NO_OFFSET,
					     "metadata key 'tokenizer.ggml.token_type': token %" PRIu64
					     " has type %" PRId64 ", outside 0..6 (llama.cpp's "
					     "llama_token_type):%s", i, ty, FIX);
		t->score[i] = (float)sc;
		t->type[i] = (uint8_t)ty;
		strmap_put(&t->ids, t->piece[i], t->piece_len[i], (int)i, false);
		if (is_special(t->type[i]))
			t->special[t->n_special++] = (int)i;
	}
	for (uint64_t i = 0; i < n; i++) {
		t->shown[i] = at;
		at = render(t, (int)i, at);
	}
	qsort_r(t->special, (size_t)t->n_special, sizeof(*t->special), compare_special, t);
	for (int b = 0; b < 256; b++) {
		char hex[8], one[2] = { (char)b, 0 };
		snprintf(hex, sizeof(hex), "<0x%02X>", b);
		t->byte_id[b] = strmap_get(&t->ids, hex, 6);
		if (t->byte_id[b] < 0)
			t->byte_id[b] = strmap_get(&t->ids, one, 1);
	}
	return 0;
}

/* BOS and EOS ids and the two flags from their keys, over the kind's defaults; a default id
 * the vocabulary does not have becomes none. */
static int read_special_ids(struct gguf_tokenizer *t, const struct eng_gguf *g,
			    struct eng_error *err)
{
	int n = t->base.vocab_size, rc;

	if (t->base.bos >= n)
		t->base.bos = -1;
	if (t->base.eos >= n)
		t->base.eos = -1;
	if ((rc = id_key(g, "tokenizer.ggml.bos_token_id", n, &t->base.bos, err)) ||
	    (rc = id_key(g, "tokenizer.ggml.eos_token_id", n, &t->base.eos, err)) ||
	    (rc = bool_key(g, "tokenizer.ggml.add_bos_token", &t->base.add_bos, err)) ||
	    (rc = bool_key(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix, err)))
		return rc;
	if (t->base.bos < 0)
		t->base.add_bos = false;
	return 0;
}

int eng_tokenizer_from_gguf(struct eng_tokenizer **out, const struct eng_gguf *g,
			    const char *source, struct eng_error *err)
{
	struct gguf_tokenizer *t = calloc(1, sizeof(*t));
	const struct eng_gguf_value *tokens = NULL, *scores = NULL, *types = NULL;
	int rc;

	*out = NULL;
	if (!t)
		return eng_error_set(err, -ENOMEM, source, ENG_NO_OFFSET, "out of memory");
	t->base.ops = &spm_ops;
	if ((rc = read_kind(t, g, source, err)) ||
	    (rc = find_vocab(g, source, &tokens, &scores, &types, err)) ||
	    (rc = load_vocab(t, tokens, scores, types, source, err)))
		goto out;
	if (t->bpe && (rc = load_merges(t, g, source, err)))
		goto out;
	if ((rc = read_special_ids(t, g, err)))
		goto out;
	*out = &t->base;
	t = NULL;
out:
	if (t)
		gguf_close(&t->base);
	return rc;
}

int eng_tokenizer_open_gguf(struct eng_tokenizer **out, const char *path, struct eng_error *err)
{
	struct eng_gguf *g = NULL;
	*out = NULL;
	int rc = eng_gguf_open(&g, path, NULL, err);
	if (!rc)
		rc = eng_tokenizer_from_gguf(out, g, path, err);
	if (g)
		eng_gguf_close(g);
	return rc;
}
