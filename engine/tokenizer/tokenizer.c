/* engine/tokenizer/tokenizer.c: llama2.c's tokenizer.bin and its byte-pair encoding.
 *
 * The file (karpathy/llama2.c tokenizer.py, export): int32 max_token_length, then for every
 * token of the vocabulary a float32 merge score, an int32 length and that many bytes of
 * UTF-8, no terminator. The count of tokens is not stored: it is whatever the file holds, and
 * must equal the model's vocab_size. Encoding gives run.c's `encode`'s tokens: one token per
 * UTF-8 code point (or one per byte, as "<0xXX>" pieces, when the code point is not a piece),
 * then repeatedly merge the adjacent pair whose concatenation is the piece of highest score,
 * the leftmost of equals. run.c finds that pair by rescanning every pair after each merge,
 * O(n^2) in the text (6 KB took 7 s, issue 43); here the pairs wait in a priority queue
 * (merge.h), as the GGUF encoders' do, so a text of megabytes takes a second.
 *
 * Every kind of tokenizer sits behind tokenizer_ops.h's table; the public functions at the end
 * of this file dispatch through it. A .gguf file given to eng_tokenizer_open is read by
 * tokenizer_gguf.c. eng_tokenizer_open_model, last, is the one place that picks a model's
 * tokenizer (given, its GGUF file's, or tokenizer.bin beside it).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "merge.h"
#include "model/model.h"
#include "tokenizer_gguf.h"
#include "tokenizer_ops.h"

struct piece_index {
	const char *str;
	int id;
};

/* llama2.c's tokenizer; base comes first, so a struct eng_tokenizer * is one of these. */
struct l2c_tokenizer {
	struct eng_tokenizer base;
	int vocab_size;
	uint32_t max_token_length;
	const char **vocab;          /* (vocab_size) NUL-terminated pieces, into text */
	float *scores;               /* (vocab_size) */
	struct piece_index *sorted;  /* (vocab_size) by str, for bsearch */
	char *text;                  /* every piece, each followed by a NUL */
	int byte_id[256];            /* id of the piece "<0xXX>", -1 when the vocabulary lacks it */
	char byte_text[256][2];      /* byte b as a one-byte string, for decode */
};

static int compare_pieces(const void *a, const void *b)
{
	return strcmp(((const struct piece_index *)a)->str, ((const struct piece_index *)b)->str);
}

static int lookup(const struct l2c_tokenizer *t, const char *str)
{
	struct piece_index key = { .str = str };
	const struct piece_index *hit = bsearch(&key, t->sorted, (size_t)t->vocab_size,
						sizeof(key), compare_pieces);
	return hit ? hit->id : -1;
}

/* The byte a piece "<0xXX>" stands for, or -1. */
static int byte_piece(const char *p)
{
	static const char hex[] = "0123456789ABCDEF";
	if (strlen(p) != 6 || strncmp(p, "<0x", 3) || p[5] != '>')
		return -1;
	const char *hi = memchr(hex, p[3], 16), *lo = memchr(hex, p[4], 16);
	if (!hi || !lo || !p[3] || !p[4])
		return -1;
	return (int)(hi - hex) * 16 + (int)(lo - hex);
}

/* Reads the whole file; *len receives its size. */
static int slurp(const char *path, unsigned char **out, size_t *len, struct eng_error *err)
{
	FILE *f = NULL;
	unsigned char *buf = NULL;
	int rc = 0;
	long size;

	*out = NULL;
	f = fopen(path, "rb");
	if (!f) {
		rc = -errno;
		eng_error_set(err, rc, path, ENG_NO_OFFSET, "cannot open the tokenizer: %s",
			      strerror(errno));
		goto out;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "cannot read the tokenizer: not a regular file");
		goto out;
	}
	buf = malloc((size_t)size + 1);
	if (!buf) {
		rc = eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
		goto out;
	}
	if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
		rc = eng_error_set(err, -EIO, path, ENG_NO_OFFSET, "cannot read the tokenizer");
		goto out;
	}
	*out = buf;
	*len = (size_t)size;
	buf = NULL;
out:
	free(buf);
	if (f)
		fclose(f);
	return rc;
}

/* Walks the token records; fills the tables when t->vocab is set, else only counts and checks
 * them. */
static int walk(struct l2c_tokenizer *t, const unsigned char *buf, size_t len, const char *path,
		int *count, struct eng_error *err)
{
	size_t off = 4, used = 0;
	int n = 0;
	while (off < len) {
		int32_t plen;
		float score;
		if (len - off < 8)
			return eng_error_set(err, -EINVAL, path, off,
					     "token %d: fields 'score' and 'length' are cut off at "
					     "offset %zu (file %zu bytes)", n, off, len);
		memcpy(&score, buf + off, 4);
		memcpy(&plen, buf + off + 4, 4);
		if (plen < 0 || (uint32_t)plen > t->max_token_length)
			return eng_error_set(err, -EINVAL, path, off + 4,
					     "token %d: field 'length' is %" PRId32 ", outside 0..%" PRIu32
					     " (max_token_length)", n, plen, t->max_token_length);
		off += 8;
		if (len - off < (size_t)plen)
			return eng_error_set(err, -EINVAL, path, off,
					     "token %d: its %" PRId32 " bytes extend past end of file "
					     "(offset %zu, file %zu bytes)", n, plen, off, len);
		if (t->vocab) {
			memcpy(t->text + used, buf + off, (size_t)plen);
			t->text[used + (size_t)plen] = '\0';
			t->vocab[n] = t->text + used;
			t->scores[n] = score;
		}
		used += (size_t)plen + 1;
		off += (size_t)plen;
		n++;
	}
	*count = n;
	return 0;
}

static const struct eng_tokenizer_ops l2c_ops;

/* The tokenizer in g's metadata, refused when its vocabulary is not the model's. */
static int gguf_tokenizer(struct eng_tokenizer **out, const struct eng_gguf *g, const char *path,
			  int vocab_size, struct eng_error *err)
{
	int rc = eng_tokenizer_from_gguf(out, g, path, err);
	if (!rc && (*out)->vocab_size != vocab_size) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "metadata key 'tokenizer.ggml.tokens' holds %d tokens but the "
				   "model's vocabulary (token_embd.weight's rows) has %d: the "
				   "tokenizer is not this model's; re-convert the model, or give the "
				   "tokenizer made for it (-z)", (*out)->vocab_size, vocab_size);
		eng_tokenizer_close(*out);
		*out = NULL;
	}
	return rc;
}

/* A GGUF file holds its tokenizer in its metadata: -z tokenizer.gguf. */
static int open_gguf(struct eng_tokenizer **out, const char *path, int vocab_size,
		     struct eng_error *err)
{
	struct eng_gguf *g = NULL;
	int rc = eng_gguf_open(&g, path, NULL, err);
	if (!rc)
		rc = gguf_tokenizer(out, g, path, vocab_size, err);
	if (g)
		eng_gguf_close(g);
	return rc;
}

/* A GGUF file starts with its magic; the model itself can be that file (gigabytes: peek). */
static bool is_gguf(const char *path)
{
	char magic[4] = { 0 };
	FILE *f = fopen(path, "rb");
	bool yes = f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "GGUF", 4);
	if (f)
		fclose(f);
	return yes;
}

int eng_tokenizer_open(struct eng_tokenizer **out, const char *path, int vocab_size,
		       struct eng_error *err)
{
	struct l2c_tokenizer *t = NULL;
	unsigned char *buf = NULL;
	size_t len = 0;
	int rc, n = 0;

	*out = NULL;
	if (is_gguf(path))
		return open_gguf(out, path, vocab_size, err);
	if ((rc = slurp(path, &buf, &len, err)))
		goto out;
	t = calloc(1, sizeof(*t));
	if (!t) {
		rc = eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
		goto out;
	}
	if (len < 4) {
		rc = eng_error_set(err, -EINVAL, path, 0,
				   "field 'max_token_length' is cut off: the file has only %zu bytes",
				   len);
		goto out;
	}
	memcpy(&t->max_token_length, buf, 4);
	if (t->max_token_length == 0 || t->max_token_length > 65536) {
		rc = eng_error_set(err, -EINVAL, path, 0,
				   "field 'max_token_length' is %" PRIu32 ": not a llama2.c "
				   "tokenizer.bin", t->max_token_length);
		goto out;
	}
	if ((rc = walk(t, buf, len, path, &n, err)))
		goto out;
	if (vocab_size > 0 && n != vocab_size) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "the tokenizer holds %d tokens but the model's vocabulary has %d: "
				   "give the tokenizer made for this model (-z)", n, vocab_size);
		goto out;
	}
	/* encode emits BOS and EOS by id and merges them like any piece: they must exist. */
	if (n <= ENG_TOKEN_EOS) {
		rc = eng_error_set(err, -EINVAL, path, ENG_NO_OFFSET,
				   "the tokenizer holds %d tokens: too few for <unk>, <s> (BOS) and "
				   "</s> (EOS), ids 0 to %d", n, ENG_TOKEN_EOS);
		goto out;
	}
	t->base = (struct eng_tokenizer){ .ops = &l2c_ops, .vocab_size = n, .bos = ENG_TOKEN_BOS,
					  .eos = ENG_TOKEN_EOS, .add_bos = true };
	t->vocab_size = n;
	t->vocab = calloc((size_t)n, sizeof(*t->vocab));
	t->scores = calloc((size_t)n, sizeof(*t->scores));
	t->sorted = calloc((size_t)n, sizeof(*t->sorted));
	t->text = malloc(len); /* pieces plus a NUL each fit in the records they came from */
	if (!t->vocab || !t->scores || !t->sorted || !t->text) {
		rc = eng_error_set(err, -ENOMEM, path, ENG_NO_OFFSET, "out of memory");
		goto out;
	}
	if ((rc = walk(t, buf, len, path, &n, err)))
		goto out;
	for (int i = 0; i < n; i++)
		t->sorted[i] = (struct piece_index){ .str = t->vocab[i], .id = i };
	qsort(t->sorted, (size_t)n, sizeof(*t->sorted), compare_pieces);
	for (int b = 0; b < 256; b++) {
		t->byte_id[b] = -1;
		t->byte_text[b][0] = (char)b;
		t->byte_text[b][1] = '\0';
	}
	for (int i = 0; i < n; i++) {
		int b = byte_piece(t->vocab[i]);
		if (b >= 0 && t->byte_id[b] < 0)
			t->byte_id[b] = i;
	}
	*out = &t->base;
	t = NULL;
out:
	free(buf);
	if (t) {
		t->base.ops = &l2c_ops;
		eng_tokenizer_close(&t->base);
	}
	return rc;
}

int eng_tokenizer_open_file(struct eng_tokenizer **out, const char *path, struct eng_error *err)
{
	if (is_gguf(path))
		return eng_tokenizer_open_gguf(out, path, err);
	return eng_tokenizer_open(out, path, 0, err);
}

static void l2c_close(struct eng_tokenizer *base)
{
	struct l2c_tokenizer *t = (struct l2c_tokenizer *)base;
	free(t->vocab);
	free(t->scores);
	free(t->sorted);
	free(t->text);
	free(t);
}

/* Appends the token for code point str (its bytes), or one token per byte. */
static int push_code_point(const struct l2c_tokenizer *t, const char *str, int *tokens, int max,
			   int *n)
{
	int id = lookup(t, str);
	if (id >= 0) {
		if (*n >= max)
			return -ENOSPC;
		tokens[(*n)++] = id;
		return 0;
	}
	for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
		if (t->byte_id[*p] < 0)
			return -EINVAL; /* neither the code point nor its bytes are pieces */
		if (*n >= max)
			return -ENOSPC;
		tokens[(*n)++] = t->byte_id[*p];
	}
	return 0;
}

/* One token of the merge, linked to its neighbours (-1 at the ends; id -1 once absorbed). */
struct l2c_sym {
	int id, prev, next;
};

/* The piece of s[l] and s[r] side by side into buf: its id when it is a piece of a score run.c
 * would merge, else -1. run.c's best score starts at -1e10, so a piece scored at or below it
 * never merges; no piece is longer than max_token_length, so a longer pair is not looked up. */
static int pair_id(const struct l2c_tokenizer *t, const struct l2c_sym *s, int l, int r,
		   char *buf)
{
	const char *a = t->vocab[s[l].id], *b = t->vocab[s[r].id];
	size_t la = strlen(a), lb = strlen(b);
	if (la + lb > t->max_token_length)
		return -1;
	memcpy(buf, a, la);
	memcpy(buf + la, b, lb + 1);
	int id = lookup(t, buf);
	return id >= 0 && t->scores[id] > -1e10f ? id : -1;
}

/* Queues the pair (l, r) when it merges: the highest score pops first, the leftmost of equal
 * ones (merge.h), as run.c's scan picks. Its stamp is r's token: the pair holds while l is
 * alive and linked to r and r is still that token (l changes only by absorbing r). */
static int push_pair(const struct l2c_tokenizer *t, const struct l2c_sym *s, struct tok_heap *h,
		     int l, int r, char *buf)
{
	int id = l < 0 || r < 0 ? -1 : pair_id(t, s, l, r, buf);
	if (id < 0)
		return 0;
	return eng_tok_heap_push(h, (struct tok_bigram){ .prio = -(double)t->scores[id], .left = l,
						     .right = r, .stamp = (uint32_t)s[r].id });
}

/* Merges tokens[0..*count) in place until no adjacent pair is a piece (*count shrinks). buf
 * holds two pieces side by side. 0 or -ENOMEM. */
static int merge_all(const struct l2c_tokenizer *t, int *tokens, int *count, char *buf)
{
	struct tok_heap h = { 0 };
	int n = *count, rc = 0;
	if (n < 2)
		return 0;
	struct l2c_sym *s = malloc((size_t)n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		s[i] = (struct l2c_sym){ .id = tokens[i], .prev = i - 1, .next = i + 1 < n ? i + 1 : -1 };
	for (int i = 0; i + 1 < n && !rc; i++)
		rc = push_pair(t, s, &h, i, i + 1, buf);
	while (!rc && h.n) {
		struct tok_bigram b = eng_tok_heap_pop(&h);
		struct l2c_sym *l = &s[b.left], *r = &s[b.right];
		if (l->id < 0 || l->next != b.right || r->id != (int)b.stamp)
			continue; /* stale: a side was absorbed or changed since */
		l->id = pair_id(t, s, b.left, b.right, buf);
		l->next = r->next;
		if (r->next >= 0)
			s[r->next].prev = b.left;
		r->id = -1;
		if (!(rc = push_pair(t, s, &h, l->prev, b.left, buf)))
			rc = push_pair(t, s, &h, b.left, l->next, buf);
	}
	/* s[0] is never absorbed (only right sides are): the survivors run from it */
	int k = 0;
	for (int i = 0; !rc && i >= 0; i = s[i].next)
		tokens[k++] = s[i].id;
	if (!rc)
		*count = k;
	free(h.v);
	free(s);
	return rc;
}

static int l2c_encode(const struct eng_tokenizer *base, const char *text,
		      const struct eng_encode_options *o, int *tokens, int max, int *n)
{
	/* llama2.c's encode has no special tokens in the text: only BOS and EOS apply. */
	bool bos = o->bos, eos = o->eos;
	const struct l2c_tokenizer *t = (const struct l2c_tokenizer *)base;
	/* Room for two pieces side by side (a merge candidate) or one code point. */
	size_t cap = (size_t)t->max_token_length * 2 + 1 + 4;
	char *buf = malloc(cap);
	int rc = 0, count = 0;

	*n = 0;
	if (!buf)
		return -ENOMEM;
	if (bos) {
		if (count >= max) {
			rc = -ENOSPC;
			goto out;
		}
		tokens[count++] = ENG_TOKEN_BOS;
	}
	/* SentencePiece's add_dummy_prefix: the text is encoded as if it began with a space. */
	if (text[0]) {
		int space = lookup(t, " ");
		if (space >= 0) {
			if (count >= max) {
				rc = -ENOSPC;
				goto out;
			}
			tokens[count++] = space;
		}
	}
	size_t len = 0;
	for (const char *c = text; *c; c++) {
		/* A continuation byte (10xxxxxx) extends the code point, up to 4 bytes. */
		if (((unsigned char)*c & 0xC0) != 0x80)
			len = 0;
		buf[len++] = *c;
		buf[len] = '\0';
		if (((unsigned char)c[1] & 0xC0) == 0x80 && len < 4)
			continue;
		if ((rc = push_code_point(t, buf, tokens, max, &count)))
			goto out;
		len = 0;
	}
	if ((rc = merge_all(t, tokens, &count, buf)))
		goto out;
	if (eos) {
		if (count >= max) {
			rc = -ENOSPC;
			goto out;
		}
		tokens[count++] = ENG_TOKEN_EOS;
	}
	*n = count;
out:
	free(buf);
	return rc;
}

static const char *l2c_decode(const struct eng_tokenizer *base, int prev, int token)
{
	const struct l2c_tokenizer *t = (const struct l2c_tokenizer *)base;
	if (token < 0 || token >= t->vocab_size)
		return "";
	const char *piece = t->vocab[token];
	/* After BOS, SentencePiece drops the leading space of the dummy prefix. */
	if (prev == ENG_TOKEN_BOS && piece[0] == ' ')
		piece++;
	int b = byte_piece(piece);
	return b >= 0 ? t->byte_text[b] : piece;
}

static const struct eng_tokenizer_ops l2c_ops = {
	.kind = "llama2.c",
	.encode = l2c_encode,
	.decode = l2c_decode,
	.close = l2c_close,
};

/* ---- The public face: every kind through its ops table -------------------------------------- */

void eng_tokenizer_close(struct eng_tokenizer *t)
{
	if (t)
		t->ops->close(t);
}

int eng_tokenizer_encode(const struct eng_tokenizer *t, const char *text, bool bos, bool eos,
			 int *tokens, int max, int *n)
{
	struct eng_encode_options o = { .bos = bos, .eos = eos };
	return t->ops->encode(t, text, &o, tokens, max, n);
}

int eng_tokenizer_encode_opt(const struct eng_tokenizer *t, const char *text,
			     const struct eng_encode_options *o, int *tokens, int max, int *n)
{
	static const struct eng_encode_options none;
	return t->ops->encode(t, text, o ? o : &none, tokens, max, n);
}

const char *eng_tokenizer_decode(const struct eng_tokenizer *t, int prev, int token)
{
	return t->ops->decode(t, prev, token);
}

int eng_tokenizer_bos(const struct eng_tokenizer *t)
{
	return t->bos;
}

int eng_tokenizer_eos(const struct eng_tokenizer *t)
{
	return t->eos;
}

bool eng_tokenizer_add_bos(const struct eng_tokenizer *t)
{
	return t->add_bos;
}

int eng_tokenizer_vocab_size(const struct eng_tokenizer *t)
{
	return t->vocab_size;
}

const char *eng_tokenizer_kind(const struct eng_tokenizer *t)
{
	return t->ops->kind;
}

int eng_tokenizer_open_model(struct eng_tokenizer **out, const struct eng_model *m,
			     const char *path, struct eng_error *err)
{
	int vocab_size = m->info.vocab_size, rc;
	char beside[4096];
	*out = NULL;
	if (path)
		return eng_tokenizer_open(out, path, vocab_size, err);
	/* A GGUF model carries its tokenizer, read from the model's parsed file: a file without
	 * one (-ENOENT) falls through to tokenizer.bin; a broken one is the error to report, not
	 * a missing file. */
	if (m->info.format == ENG_FORMAT_GGUF && m->gguf) {
		rc = gguf_tokenizer(out, m->gguf, m->path, vocab_size, err);
		if (rc != -ENOENT)
			return rc;
	}
	const char *slash = strrchr(m->path, '/');
	snprintf(beside, sizeof(beside), "%.*s/tokenizer.bin", slash ? (int)(slash - m->path) : 1,
		 slash ? m->path : ".");
	if (access(beside, R_OK) != 0)
		return eng_error_set(err, -ENOENT, beside, ENG_NO_OFFSET,
				     "no tokenizer.bin beside the model%s", m->gguf ?
				     ", and none in its GGUF metadata" : "");
	/* One beside the model that is not this model's is no tokenizer for it either. */
	if ((rc = eng_tokenizer_open(out, beside, vocab_size, err)))
		return rc == -ENOMEM ? rc : -ENOENT;
	return 0;
}
