/* tests/engine/test_tokenizer_gguf.c: GGUF tokenizers (SentencePiece "llama", byte-level BPE "gpt2").
 *
 * 1. Pre-tokenization: llama.cpp's regex splits, worked out by hand from the regexes.
 * 2. Tokenizers this test writes itself with the GGUF writer (run anywhere): encodings whose
 *    ids the test knows because it wrote the vocabulary, special tokens inside the text, byte
 *    fallback, round trips, bad metadata.
 *    Issue 43: 16 MiB of text (tokenize's limit) alternating two special tokens with words
 *    is cut in linear time, under a timer of 60 s of CPU time: the linear cut takes about a
 *    second, the quadratic one (shifting the fragment array at every cut) some minutes,
 *    2 MiB alone 2 s and each doubling four times that. A hang detector, never a speed
 *    limit.
 * 3. The shared fixtures' tiny-llama and tiny-falcon tokenizers (when present): the engine
 *    against naive reference encoders written here from the metadata (one merge at a time,
 *    found by scanning), on strings with multi-byte UTF-8, whitespace runs and digits, and
 *    round trips.
 */
#include <errno.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include "format/gguf.h"
#include "test.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer_gguf.h"

static char dir[] = "/tmp/mw-test-tokgguf-XXXXXX";

static void path_in(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

/* ---- 1. Pre-tokenization ---------------------------------------------------------------- */

static void expect_split(const char *pre, const char *text, const char *const *want)
{
	size_t ends[64], n = 0, start = 0, k = 0;
	T_EQ_INT(eng_bpe_pre_split(pre, text, ends, 64, &n), 0);
	for (; want[k]; k++) {
		if (k >= n)
			break;
		char got[128];
		snprintf(got, sizeof(got), "%.*s", (int)(ends[k] - start), text + start);
		if (strcmp(got, want[k]))
			fprintf(stderr, "%s split of \"%s\": word %zu\n", pre, text, k);
		T_EQ_STR(got, want[k]);
		start = ends[k];
	}
	T_EQ_U64(n, k);
}

static void test_pre_split(void)
{
	/* falcon: punctuation runs first (so "It's" loses its "'"), then GPT-2's regex (a run of
	 * spaces leaves its last one to the word after it), then runs of three ASCII digits. */
	const char *const falcon[] = { "Hello", ",", " world", "!", " ", " It", "'", "s", " ",
				       "123", "45", " apples", ".", "\n", "\n", "ok", NULL };
	expect_split("falcon", "Hello, world!  It's 12345 apples.\n\nok", falcon);
	/* gpt-2 alone keeps the contraction and the number. */
	const char *const gpt2[] = { "Hello", ",", " world", "!", " ", " It", "'s", " 12345",
				     " apples", ".", "\n", "\n", "ok", NULL };
	expect_split("gpt-2", "Hello, world!  It's 12345 apples.\n\nok", gpt2);
	/* Multi-byte letters, a non-Latin script, Arabic-Indic digits (\p{N}, not [0-9]), Unicode
	 * punctuation and a symbol. */
	const char *const multi[] = { "h\xc3\xa9llo", " w\xc3\xb6rld", " \xe6\x97\xa5\xe6\x9c\xac",
				      " \xd9\xa3\xd9\xa4\xd9\xa5\xd9\xa6", " ", "\xc2\xab", "q",
				      "\xc2\xbb", " \xe2\x82\xac", "5", NULL };
	expect_split("falcon",
		     "h\xc3\xa9llo w\xc3\xb6rld \xe6\x97\xa5\xe6\x9c\xac \xd9\xa3\xd9\xa4\xd9\xa5"
		     "\xd9\xa6 \xc2\xabq\xc2\xbb \xe2\x82\xac" "5",
		     multi);
	/* default: no backtick in the punctuation class, \p{N}+ splits numbers from their space. */
	const char *const def[] = { "a", "`", "b", " ", "123", "4", " ", "\xd9\xa3", NULL };
	expect_split("default", "a`b 1234 \xd9\xa3", def);
	/* Whitespace runs: tabs are not the optional leading ' '. */
	const char *const ws[] = { "a", "  ", " b", "\t", "\t", "c", "   ", NULL };
	expect_split("gpt-2", "a   b\t\tc   ", ws);
	size_t ends[2], n;
	T_EQ_INT(eng_bpe_pre_split("nope", "x", ends, 2, &n), -EINVAL);
	T_EQ_INT(eng_bpe_pre_split("gpt-2", "a b c", ends, 2, &n), -ENOSPC);
	T_EQ_U64(n, 3);
}

/* ---- 2. Tokenizers written here --------------------------------------------------------- */

struct vocab {
	const char *tok[600];
	int type[600];
	float score[600];
	int n;
	const char *merge[64];
	int n_merge;
	char bytes[256][4]; /* GPT-2 byte characters */
};

static int add(struct vocab *v, const char *s, int type, float score)
{
	v->tok[v->n] = s;
	v->type[v->n] = type;
	v->score[v->n] = score;
	return v->n++;
}

static int find(const struct vocab *v, const char *s)
{
	for (int i = 0; i < v->n; i++)
		if (!strcmp(v->tok[i], s))
			return i;
	return -1;
}

/* GPT-2's bytes_to_unicode, the list-building way of openai/gpt-2's encoder.py. */
static void gpt2_bytes(struct vocab *v)
{
	int cps[256], n = 0, next = 256;
	bool printable[256] = { false };
	for (int b = '!'; b <= '~'; b++)
		printable[b] = true;
	for (int b = 0xa1; b <= 0xac; b++)
		printable[b] = true;
	for (int b = 0xae; b <= 0xff; b++)
		printable[b] = true;
	for (int b = 0; b < 256; b++)
		cps[b] = printable[b] ? b : next++;
	for (int b = 0; b < 256; b++, n++) {
		int c = cps[b];
		memset(v->bytes[b], 0, 4);
		if (c < 0x80) {
			v->bytes[b][0] = (char)c;
		} else {
			v->bytes[b][0] = (char)(0xc0 | (c >> 6));
			v->bytes[b][1] = (char)(0x80 | (c & 0x3f));
		}
	}
	(void)n;
}

static int write_vocab(const char *path, const struct vocab *v, const char *model,
		       const char *pre, int bos, int eos, bool with_scores)
{
	struct eng_gguf_writer *w = NULL;
	struct eng_error err;
	static struct eng_gguf_value toks[600], merges[64];
	int32_t types[600];
	eng_error_clear(&err);
	int rc = eng_gguf_writer_new(&w, path, 0, &err);
	if (rc)
		return rc;
	for (int i = 0; i < v->n; i++) {
		toks[i] = (struct eng_gguf_value){ .type = ENG_GGUF_STRING,
						   .s = { v->tok[i], strlen(v->tok[i]) } };
		types[i] = v->type[i];
	}
	for (int i = 0; i < v->n_merge; i++)
		merges[i] = (struct eng_gguf_value){ .type = ENG_GGUF_STRING,
						     .s = { v->merge[i], strlen(v->merge[i]) } };
	struct eng_gguf_value a = { .type = ENG_GGUF_ARRAY };
	eng_gguf_writer_kv_str(w, "general.architecture", "llama");
	eng_gguf_writer_kv_str(w, "tokenizer.ggml.model", model);
	if (pre)
		eng_gguf_writer_kv_str(w, "tokenizer.ggml.pre", pre);
	a.arr.type = ENG_GGUF_STRING;
	a.arr.n = (uint64_t)v->n;
	a.arr.items = toks;
	eng_gguf_writer_kv(w, "tokenizer.ggml.tokens", &a);
	a.arr.type = ENG_GGUF_INT32;
	a.arr.items = NULL;
	a.arr.data = types;
	eng_gguf_writer_kv(w, "tokenizer.ggml.token_type", &a);
	if (with_scores) {
		a.arr.type = ENG_GGUF_FLOAT32;
		a.arr.data = v->score;
		eng_gguf_writer_kv(w, "tokenizer.ggml.scores", &a);
	}
	if (v->n_merge) {
		a.arr.type = ENG_GGUF_STRING;
		a.arr.n = (uint64_t)v->n_merge;
		a.arr.data = NULL;
		a.arr.items = merges;
		eng_gguf_writer_kv(w, "tokenizer.ggml.merges", &a);
	}
	if (bos >= 0)
		eng_gguf_writer_kv_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos);
	if (eos >= 0)
		eng_gguf_writer_kv_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos);
	return eng_gguf_writer_commit(w, &err);
}

static void expect_ids(const struct eng_tokenizer *t, const char *text, bool bos,
		       const int *want, int n_want)
{
	int got[256], n = -1;
	T_EQ_INT(eng_tokenizer_encode(t, text, bos, false, got, 256, &n), 0);
	T_EQ_INT(n, n_want);
	for (int i = 0; i < n && i < n_want; i++) {
		if (got[i] != want[i])
			fprintf(stderr, "encoding \"%s\": token %d\n", text, i);
		T_EQ_INT(got[i], want[i]);
	}
}

/* Encode with BOS, decode every token after it, compare with the text. */
static void round_trip(const struct eng_tokenizer *t, const char *text)
{
	int ids[1024], n = 0;
	char out[4096] = "";
	T_EQ_INT(eng_tokenizer_encode(t, text, true, false, ids, 1024, &n), 0);
	int first = eng_tokenizer_bos(t) >= 0 ? 1 : 0;
	for (int i = first; i < n; i++)
		strncat(out, eng_tokenizer_decode(t, i ? ids[i - 1] : -1, ids[i]),
			sizeof(out) - strlen(out) - 1);
	if (strcmp(out, text))
		fprintf(stderr, "%s round trip of \"%s\"\n", eng_tokenizer_kind(t), text);
	T_EQ_STR(out, text);
}

static const char *const texts[] = {
	"hello world",
	"Hello World, it's 2026!",
	"  leading and trailing spaces   ",
	"whitespace\t\truns  \n\n  and newlines\r\n",
	"digits 1234567890 and 3.14159 and 007",
	"na\xc3\xafve caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xce\x95\xce\xbb\xce\xbb"
	"\xce\xb7\xce\xbd\xce\xb9\xce\xba\xce\xac \xd9\xa3\xd9\xa4\xd9\xa5 \xf0\x9f\xa6\x99",
	"punct!? (x) [y] {z} \xc2\xabq\xc2\xbb \xe2\x80\x94 dash`tick~$+<=>^|",
	"we're they'll I'd you've",
	"",
};

static const char *hang_what = "";
static char hang_file[4200];

static void on_timer(int sig)
{
	(void)sig;
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "test_tokenizer_gguf: %s did not finish in 60 s of "
			 "CPU time: quadratic again?\n", hang_what);
	ssize_t w = write(2, msg, n > 0 && (size_t)n < sizeof(msg) ? (size_t)n : 0);
	(void)w;
	unlink(hang_file); /* nothing left in /tmp */
	rmdir(dir);
	_exit(1);
}

/* A timer of seconds of this process's CPU time (0: off): a loaded machine does not slow
 * it down, a loop spends it. */
static void cpu_timer(int seconds)
{
	struct itimerval it = { .it_value = { .tv_sec = seconds } };
	signal(SIGPROF, on_timer);
	setitimer(ITIMER_PROF, &it, NULL);
}

/* Issue 43, class 7: special tokens cut out of megabytes of text. */
static void special_cuts(const struct eng_tokenizer *t, const struct vocab *v, const char *path)
{
	static const char block[] = "<|endoftext|>hello<|user|> world";
	const size_t blocks = (16u << 20) / (sizeof(block) - 1);
	int want[4] = { find(v, "<|endoftext|>"), find(v, "hello"), find(v, "<|user|>"),
			find(v, "\xc4\xa0world") };
	char *text = malloc(blocks * (sizeof(block) - 1) + 1);
	int *ids = malloc(4 * blocks * sizeof(*ids)), n = 0;
	T_ASSERT(text && ids);
	for (size_t b = 0; b < blocks; b++)
		memcpy(text + b * (sizeof(block) - 1), block, sizeof(block));
	snprintf(hang_file, sizeof(hang_file), "%s", path);
	hang_what = "cutting 16 MiB of alternating special tokens";
	cpu_timer(60);
	T_EQ_INT(eng_tokenizer_encode(t, text, false, false, ids, (int)(4 * blocks), &n), 0);
	cpu_timer(0);
	T_EQ_U64((uint64_t)n, 4 * blocks);
	size_t wrong = 0;
	for (int i = 0; i < n; i++)
		wrong += ids[i] != want[i % 4];
	T_EQ_U64(wrong, 0);
	free(text);
	free(ids);
	hang_file[0] = '\0';
}

/* Opens the vocabulary written at path and checks its kind; NULL, with the engine's reason
 * printed, where it does not open. */
static struct eng_tokenizer *open_own(const char *path, const char *kind, struct eng_error *err)
{
	struct eng_tokenizer *t = NULL;
	eng_error_clear(err);
	T_EQ_INT(eng_tokenizer_open_gguf(&t, path, err), 0);
	if (!t) {
		fprintf(stderr, "%s\n", err->text);
		return NULL;
	}
	T_EQ_STR(eng_tokenizer_kind(t), kind);
	return t;
}

static void test_own_bpe(void)
{
	static struct vocab v;
	char path[4200];
	struct eng_error err;
	memset(&v, 0, sizeof(v));
	gpt2_bytes(&v);
	int eot = add(&v, "<|endoftext|>", 3, 0);
	int byte0 = v.n;
	for (int b = 0; b < 256; b++)
		add(&v, v.bytes[b], 1, 0);
	static const char *const merges[] = { "h e", "l l", "he ll", "hell o", "\xc4\xa0 w",
					      "\xc4\xa0w o", "r l", "\xc4\xa0wo rl", "\xc4\xa0worl d",
					      "1 2", "12 3" };
	static const char *const merged[] = { "he", "ll", "hell", "hello", "\xc4\xa0w",
					      "\xc4\xa0wo", "rl", "\xc4\xa0worl", "\xc4\xa0world",
					      "12", "123" };
	for (size_t i = 0; i < sizeof(merges) / sizeof(merges[0]); i++) {
		v.merge[v.n_merge++] = merges[i];
		add(&v, merged[i], 1, 0);
	}
	add(&v, "<|user|>", 4, 0); /* user-defined: cut out of the text too */
	path_in(path, sizeof(path), "bpe.gguf");
	T_EQ_INT(write_vocab(path, &v, "gpt2", "falcon", eot, eot, false), 0);

	struct eng_tokenizer *t = open_own(path, "gpt2", &err);
	if (!t)
		return;
	T_EQ_INT(eng_tokenizer_vocab_size(t), v.n);
	T_EQ_INT(eng_tokenizer_bos(t), eot);
	T_EQ_INT(eng_tokenizer_eos(t), eot);
	T_ASSERT(!eng_tokenizer_add_bos(t)); /* gpt2's default without the key */
	int hw[] = { find(&v, "hello"), find(&v, "\xc4\xa0world") };
	expect_ids(t, "hello world", false, hw, 2);
	/* BOS, then a special token inside the text, between two words. */
	int sp[] = { eot, find(&v, "hello"), eot, find(&v, "\xc4\xa0world"),
		     find(&v, "<|user|>"), byte0 + 'x' };
	expect_ids(t, "hello<|endoftext|> world<|user|>x", true, sp, 6);
	/* Digits: falcon splits runs of three ASCII digits, which merge. */
	int dg[] = { find(&v, "123"), find(&v, "123"), byte0 + '4' };
	expect_ids(t, "1231234", false, dg, 3);
	/* Multi-byte: one token per byte (no merges for them). */
	int mb[] = { byte0 + 0xc3, byte0 + 0xa9 };
	expect_ids(t, "\xc3\xa9", false, mb, 2);
	/* Invalid UTF-8 reads as U+FFFD, as llama.cpp does. */
	int bad[] = { byte0 + 0xef, byte0 + 0xbf, byte0 + 0xbd };
	expect_ids(t, "\xff", false, bad, 3);
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		round_trip(t, texts[i]);
	round_trip(t, "hello<|endoftext|><|user|> world");
	/* Decoding: bytes of a multi-byte character come back one piece at a time. */
	T_EQ_STR(eng_tokenizer_decode(t, -1, byte0 + 0xc3), "\xc3");
	T_EQ_STR(eng_tokenizer_decode(t, -1, find(&v, "\xc4\xa0world")), " world");
	T_EQ_STR(eng_tokenizer_decode(t, -1, eot), "<|endoftext|>");
	T_EQ_STR(eng_tokenizer_decode(t, -1, v.n), "");
	/* -ENOSPC says how many it needed. */
	int few[1], n = 0;
	T_EQ_INT(eng_tokenizer_encode(t, "hello world", false, false, few, 1, &n), -ENOSPC);
	T_EQ_INT(n, 2);
	special_cuts(t, &v, path);
	eng_tokenizer_close(t);

	/* eng_tokenizer_open takes a GGUF file too, and checks the vocabulary size. */
	T_EQ_INT(eng_tokenizer_open(&t, path, v.n, &err), 0);
	T_ASSERT(t && !strcmp(eng_tokenizer_kind(t), "gpt2"));
	eng_tokenizer_close(t);
	T_EQ_INT(eng_tokenizer_open(&t, path, v.n + 1, &err), -EINVAL);
	T_CONTAINS(err.text, "vocabulary");

	/* Bad metadata: an unknown pre-tokenizer, merges missing. */
	T_EQ_INT(write_vocab(path, &v, "gpt2", "llama-bpe", eot, eot, false), 0);
	T_EQ_INT(eng_tokenizer_open_gguf(&t, path, &err), -EINVAL);
	T_CONTAINS(err.text, "tokenizer.ggml.pre");
	v.n_merge = 0;
	T_EQ_INT(write_vocab(path, &v, "gpt2", "falcon", eot, eot, false), 0);
	T_EQ_INT(eng_tokenizer_open_gguf(&t, path, &err), -EINVAL);
	T_CONTAINS(err.text, "tokenizer.ggml.merges");
	T_EQ_INT(write_vocab(path, &v, "wordpiece", NULL, eot, eot, false), 0);
	T_EQ_INT(eng_tokenizer_open_gguf(&t, path, &err), -EINVAL);
	T_CONTAINS(err.text, "tokenizer.ggml.model");
	unlink(path);
}

static void test_own_spm(void)
{
	static struct vocab v;
	static char hex[256][8];
	char path[4200];
	struct eng_error err;
	memset(&v, 0, sizeof(v));
	add(&v, "<unk>", 2, 0);
	add(&v, "<s>", 3, 0);
	add(&v, "</s>", 3, 0);
	for (int b = 0; b < 256; b++) {
		snprintf(hex[b], sizeof(hex[b]), "<0x%02X>", b);
		add(&v, hex[b], 6, 0);
	}
	/* Higher scores merge first: "▁h"+"e" would give "▁he", but "ll" scores higher. */
#define SP "\xe2\x96\x81" /* U+2581 */
	static const char *const pieces[] = { SP, "h", "e", "l", "o", "w", "r", "d", SP "h", "ll",
					      SP "he", SP "hell", SP "hello", SP "w", "or", SP "wor",
					      SP "worl", SP "world", SP SP };
#undef SP
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++)
		add(&v, pieces[i], 1, -(float)i);
	v.score[find(&v, "ll")] = 5.0f;
	path_in(path, sizeof(path), "spm.gguf");
	T_EQ_INT(write_vocab(path, &v, "llama", NULL, -1, -1, true), 0);
	struct eng_tokenizer *t = open_own(path, "llama", &err);
	if (!t)
		return;
	T_EQ_INT(eng_tokenizer_bos(t), 1); /* llama's defaults without the keys */
	T_EQ_INT(eng_tokenizer_eos(t), 2);
	T_ASSERT(eng_tokenizer_add_bos(t));
	int hw[] = { 1, find(&v, "\xe2\x96\x81hello"), find(&v, "\xe2\x96\x81world") };
	expect_ids(t, "hello world", true, hw, 3);
	/* A run of spaces: "▁▁" is a piece; byte fallback for what is not: é is <0xC3><0xA9>. */
	int ws[] = { find(&v, "\xe2\x96\x81hello"), find(&v, "\xe2\x96\x81\xe2\x96\x81"),
		     find(&v, "\xe2\x96\x81world"), 3 + 0xc3, 3 + 0xa9 };
	expect_ids(t, "hello   world\xc3\xa9", false, ws, 5);
	/* A special token in the text; the text after it gets the prefix space again. */
	int sp[] = { 1, find(&v, "\xe2\x96\x81hello"), 2, find(&v, "\xe2\x96\x81hello") };
	expect_ids(t, "hello</s>hello", true, sp, 4);
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		round_trip(t, texts[i]);
	/* After BOS the added prefix space is not part of the text. */
	T_EQ_STR(eng_tokenizer_decode(t, 1, find(&v, "\xe2\x96\x81hello")), "hello");
	T_EQ_STR(eng_tokenizer_decode(t, 5, find(&v, "\xe2\x96\x81hello")), " hello");
	T_EQ_STR(eng_tokenizer_decode(t, 5, 3 + 'A'), "A");
	eng_tokenizer_close(t);

	/* A token type outside 0..6 is refused, naming the key. */
	v.type[5] = 9;
	T_EQ_INT(write_vocab(path, &v, "llama", NULL, -1, -1, true), 0);
	T_EQ_INT(eng_tokenizer_open_gguf(&t, path, &err), -EINVAL);
	T_CONTAINS(err.text, "tokenizer.ggml.token_type");
	unlink(path);
}

/* ---- 3. The shared fixtures ------------------------------------------------------------- */

/* The fixture's vocabulary as the test reads it (its own walk of the metadata). */
struct meta {
	struct eng_gguf *g;
	const struct eng_gguf_value *tok, *merges;
	double *score;
	int n;
};

static int meta_find(const struct meta *m, const char *s, size_t len)
{
	for (int i = 0; i < m->n; i++)
		if (m->tok->arr.items[i].s.len == len && !memcmp(m->tok->arr.items[i].s.ptr, s, len))
			return i;
	return -1;
}

static int merge_rank(const struct meta *m, const char *a, size_t al, const char *b, size_t bl)
{
	for (uint64_t i = 0; i < m->merges->arr.n; i++) {
		const struct eng_gguf_str *s = &m->merges->arr.items[i].s;
		if (s->len == al + 1 + bl && !memcmp(s->ptr, a, al) && s->ptr[al] == ' ' &&
		    !memcmp(s->ptr + al + 1, b, bl))
			return (int)i;
	}
	return -1;
}

/* Symbols as (offset, length) into one string; merges by scanning for the best pair. */
struct syms {
	size_t off[1024], len[1024];
	int n;
};

static void split_chars(struct syms *s, const char *w, size_t len)
{
	static const int nib[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
	s->n = 0;
	for (size_t o = 0; o < len;) {
		size_t k = (size_t)nib[(unsigned char)w[o] >> 4];
		k = k > len - o ? len - o : k;
		s->off[s->n] = o;
		s->len[s->n++] = k;
		o += k;
	}
}

static void merge_at(struct syms *s, int i)
{
	s->len[i] += s->len[i + 1];
	memmove(s->off + i + 1, s->off + i + 2, (size_t)(s->n - i - 2) * sizeof(size_t));
	memmove(s->len + i + 1, s->len + i + 2, (size_t)(s->n - i - 2) * sizeof(size_t));
	s->n--;
}

/* SentencePiece by the book: spaces to U+2581 with a prefix one, merge the best-scoring pair
 * (leftmost on ties) until none is a piece, bytes for what is not a piece. */
static int naive_spm(const struct meta *m, const char *text, int *out)
{
	static char w[4096];
	static struct syms s;
	size_t n = 0;
	int count = 0;
	memcpy(w, "\xe2\x96\x81", 3);
	n = 3;
	for (const char *c = text; *c; c++) {
		if (*c == ' ') {
			memcpy(w + n, "\xe2\x96\x81", 3);
			n += 3;
		} else {
			w[n++] = *c;
		}
	}
	split_chars(&s, w, n);
	for (;;) {
		int best = -1;
		double score = 0;
		for (int i = 0; i + 1 < s.n; i++) {
			int id = meta_find(m, w + s.off[i], s.len[i] + s.len[i + 1]);
			if (id >= 0 && (best < 0 || m->score[id] > score)) {
				best = i;
				score = m->score[id];
			}
		}
		if (best < 0)
			break;
		merge_at(&s, best);
	}
	for (int i = 0; i < s.n; i++) {
		int id = meta_find(m, w + s.off[i], s.len[i]);
		if (id >= 0) {
			out[count++] = id;
			continue;
		}
		for (size_t k = 0; k < s.len[i]; k++) {
			char hex[8];
			snprintf(hex, sizeof(hex), "<0x%02X>", (unsigned char)w[s.off[i] + k]);
			out[count++] = meta_find(m, hex, 6);
		}
	}
	return count;
}

/* Byte-level BPE by the book over the engine's pre-tokenizer words: the lowest-ranked pair
 * (leftmost on ties) until none is a merge. */
static int naive_bpe(const struct meta *m, const struct vocab *bytes, const char *pre,
		     const char *text, int *out)
{
	static char w[8192];
	static struct syms s;
	size_t ends[512], n_words = 0, start = 0;
	int count = 0;
	if (eng_bpe_pre_split(pre, text, ends, 512, &n_words))
		return -1;
	for (size_t k = 0; k < n_words; k++) {
		size_t n = 0;
		for (size_t i = start; i < ends[k]; i++) {
			const char *c = bytes->bytes[(unsigned char)text[i]];
			memcpy(w + n, c, strlen(c));
			n += strlen(c);
		}
		start = ends[k];
		split_chars(&s, w, n);
		for (;;) {
			int best = -1, rank = 0;
			for (int i = 0; i + 1 < s.n; i++) {
				int r = merge_rank(m, w + s.off[i], s.len[i], w + s.off[i + 1],
						   s.len[i + 1]);
				if (r >= 0 && (best < 0 || r < rank)) {
					best = i;
					rank = r;
				}
			}
			if (best < 0)
				break;
			merge_at(&s, best);
		}
		for (int i = 0; i < s.n; i++)
			out[count++] = meta_find(m, w + s.off[i], s.len[i]);
	}
	return count;
}

static bool meta_open(struct meta *m, const char *path)
{
	struct eng_error err;
	memset(m, 0, sizeof(*m));
	if (eng_gguf_open(&m->g, path, NULL, &err))
		return false;
	const struct eng_gguf_value *sc = NULL;
	T_EQ_INT(eng_gguf_get_arr(m->g, "tokenizer.ggml.tokens", ENG_GGUF_STRING, &m->tok, &err),
		 0);
	if (!m->tok)
		return false;
	m->n = (int)m->tok->arr.n;
	eng_gguf_get_arr(m->g, "tokenizer.ggml.merges", ENG_GGUF_STRING, &m->merges, &err);
	m->score = calloc((size_t)m->n, sizeof(*m->score));
	if (!eng_gguf_get_arr(m->g, "tokenizer.ggml.scores", ENG_GGUF_TYPE_COUNT, &sc, &err))
		for (int i = 0; i < m->n; i++)
			eng_gguf_arr_float(sc, (uint64_t)i, &m->score[i]);
	return true;
}

static void meta_close(struct meta *m)
{
	free(m->score);
	if (m->g)
		eng_gguf_close(m->g);
}

static void test_fixture(const char *rel, bool bpe)
{
	char path[4096];
	struct meta m;
	static struct vocab bytes;
	if (!t_have_shared(rel, path, sizeof(path)) || !meta_open(&m, path))
		return;
	gpt2_bytes(&bytes);
	struct eng_tokenizer *t = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	T_EQ_INT(eng_tokenizer_open_gguf(&t, path, &err), 0);
	if (!t) {
		fprintf(stderr, "%s: %s\n", path, err.text);
		meta_close(&m);
		return;
	}
	T_EQ_INT(eng_tokenizer_vocab_size(t), 512);
	/* The README: llama bos 1, eos 2; falcon bos = eos = 11, <|endoftext|>. */
	T_EQ_INT(eng_tokenizer_bos(t), bpe ? 11 : 1);
	T_EQ_INT(eng_tokenizer_eos(t), bpe ? 11 : 2);
	T_EQ_STR(eng_tokenizer_kind(t), bpe ? "gpt2" : "llama");
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		static int want[2048], got[2048];
		int n_want = bpe ? naive_bpe(&m, &bytes, "falcon", texts[i], want)
				 : texts[i][0] ? naive_spm(&m, texts[i], want) : 0;
		int n = -1;
		T_EQ_INT(eng_tokenizer_encode(t, texts[i], false, false, got, 2048, &n), 0);
		T_EQ_INT(n, n_want);
		for (int k = 0; k < n && k < n_want; k++) {
			if (got[k] != want[k])
				fprintf(stderr, "%s: \"%s\" token %d\n", rel, texts[i], k);
			T_EQ_INT(got[k], want[k]);
		}
		round_trip(t, texts[i]);
	}
	/* Merges happen: ordinary words take fewer tokens than bytes. */
	int ids[64], n = 0;
	T_EQ_INT(eng_tokenizer_encode(t, "hello world", false, false, ids, 64, &n), 0);
	T_ASSERT(n > 0 && n < 11);
	/* Control tokens written in the text are matched. */
	const char *ctl = bpe ? "a<|endoftext|>" : "a</s>";
	T_EQ_INT(eng_tokenizer_encode(t, ctl, false, false, ids, 64, &n), 0);
	T_ASSERT(n >= 2 && ids[n - 1] == (bpe ? 11 : 2));
	eng_tokenizer_close(t);
	meta_close(&m);
}

int main(void)
{
	t_mkdtemp(dir);
	test_pre_split();
	test_own_bpe();
	test_own_spm();
	test_fixture("fixtures/gguf/models/tiny-llama-F32.gguf", false);
	test_fixture("fixtures/gguf/models/tiny-falcon-F32.gguf", true);
	rmdir(dir);
	return t_done();
}
