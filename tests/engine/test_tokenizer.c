/* tests/engine/test_tokenizer.c: llama2.c tokenizer.bin: round trips on the Llama 2 vocabulary, known
 * encodings whose ids the test finds by reading the file itself, and bad files.
 *
 * Issue 43, run anywhere (before the shared vocabulary): on a vocabulary this test writes, with
 * tied scores and a piece scored below run.c's -1e10 floor, the engine's encoding of random
 * texts equals the test's own port of run.c's encode (rescan every pair after each merge); and
 * texts of 24 KB and 1 MiB (that quadratic merge took 30 s for the first, and would take
 * days for the second) finish under a timer of 60 s of CPU time, where the queue takes well
 * under a second (a hang detector, not a speed limit).
 */
#include <errno.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include "engine.h"
#include "test.h"

/* The test's own reading of the format (int32 max_token_length; per token float score,
 * int32 length, bytes), independent of engine/tokenizer.c. */
static unsigned char *file;
static size_t file_len;
static char dir[] = "/tmp/mw-test-tok-XXXXXX";
static char bad[4096];

static int piece_id(const char *piece)
{
	size_t off = 4;
	int id = 0;
	while (off + 8 <= file_len) {
		int32_t len;
		memcpy(&len, file + off + 4, 4);
		if (strlen(piece) == (size_t)len && !memcmp(file + off + 8, piece, (size_t)len))
			return id;
		off += 8 + (size_t)len;
		id++;
	}
	return -1;
}

static void expect_encoding(const struct eng_tokenizer *t, const char *text, const int *want,
			    int n_want)
{
	int tokens[64], n = -1;
	T_EQ_INT(eng_tokenizer_encode(t, text, true, false, tokens, 64, &n), 0);
	T_EQ_INT(n, n_want);
	for (int i = 0; i < n && i < n_want; i++) {
		if (tokens[i] != want[i])
			fprintf(stderr, "encoding \"%s\": token %d\n", text, i);
		T_EQ_INT(tokens[i], want[i]);
	}
}

static void round_trip(const struct eng_tokenizer *t, const char *text)
{
	int tokens[256], n = 0;
	char out[1024] = "";
	T_EQ_INT(eng_tokenizer_encode(t, text, true, true, tokens, 256, &n), 0);
	T_ASSERT(n >= 2);
	T_EQ_INT(tokens[0], ENG_TOKEN_BOS);
	T_EQ_INT(tokens[n - 1], ENG_TOKEN_EOS);
	for (int i = 1; i + 1 < n; i++)
		strncat(out, eng_tokenizer_decode(t, tokens[i - 1], tokens[i]),
			sizeof(out) - strlen(out) - 1);
	T_EQ_STR(out, text);
}

static void test_llama_vocab(const char *path)
{
	struct eng_tokenizer *t = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	T_EQ_INT(eng_tokenizer_open(&t, path, 32000, &err), 0);
	if (!t) {
		fprintf(stderr, "%s\n", err.text);
		return;
	}
	/* Whole words are pieces with their leading space (SentencePiece's U+2581, stored by
	 * llama2.c's export as a plain space); BPE merges a word up to them. */
	int once[] = { ENG_TOKEN_BOS, piece_id(" Once"), piece_id(" upon"), piece_id(" a"),
		       piece_id(" time") };
	for (int i = 1; i < 5; i++)
		T_ASSERT(once[i] > 258); /* real pieces, not byte fallbacks */
	expect_encoding(t, "Once upon a time", once, 5);

	/* A code point that is not a piece falls back to its UTF-8 bytes, "<0xXX>". The dummy
	 * prefix " " stays alone: " " + "<0xF0>" is not a piece. */
	T_EQ_INT(piece_id("\xF0\x9F\xA6\x99"), -1);
	int llama[] = { ENG_TOKEN_BOS, piece_id(" "), piece_id("<0xF0>"), piece_id("<0x9F>"),
			piece_id("<0xA6>"), piece_id("<0x99>") };
	T_ASSERT(llama[1] >= 0 && llama[2] >= 0);
	expect_encoding(t, "\xF0\x9F\xA6\x99", llama, 6);

	/* Decoding: the space after BOS goes, <0xXX> becomes its byte. */
	T_EQ_STR(eng_tokenizer_decode(t, ENG_TOKEN_BOS, once[1]), "Once");
	T_EQ_STR(eng_tokenizer_decode(t, once[1], once[2]), " upon");
	T_EQ_STR(eng_tokenizer_decode(t, 5, piece_id("<0x0A>")), "\n");
	T_EQ_STR(eng_tokenizer_decode(t, 5, -1), "");
	T_EQ_STR(eng_tokenizer_decode(t, 5, 32000), "");

	round_trip(t, "Once upon a time, there was a little girl named Lily.");
	round_trip(t, "Tom said: \"Let's go!\"\nThey ran to the park.");
	round_trip(t, "caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\xA6\x99 \x01");
	round_trip(t, "  two leading spaces, and  two inside");

	/* Too little room is -ENOSPC, never an overrun. */
	int small[3], n = 0;
	T_EQ_INT(eng_tokenizer_encode(t, "Once upon a time", true, false, small, 3, &n), -ENOSPC);
	int empty[2];
	T_EQ_INT(eng_tokenizer_encode(t, "", true, true, empty, 2, &n), 0);
	T_EQ_INT(n, 2);
	eng_tokenizer_close(t);

	/* The wrong vocabulary for the model. */
	T_EQ_INT(eng_tokenizer_open(&t, path, 512, &err), -EINVAL);
	T_ASSERT(t == NULL);
	T_CONTAINS(err.text, "holds 32000 tokens");
	T_CONTAINS(err.text, "has 512");
	T_EQ_STR(err.source, path);
}

/* ---- Issue 43: a vocabulary of the test's own, against run.c's encode ------------------ */

#define OWN_MAX 300
static const char *own_piece[OWN_MAX];
static float own_score[OWN_MAX];
static int own_n;
static char own_hex[256][8];

static int own_add(const char *piece, float score)
{
	own_piece[own_n] = piece;
	own_score[own_n] = score;
	return own_n++;
}

/* <unk>, BOS, EOS and the 256 byte pieces (ids 0..258, as llama2.c's export lays them out),
 * then characters and merges: ties (several pieces at 1.0, the leftmost pair must win), a
 * merge scored below run.c's starting best (-1e10: never merged), and chains ("ab" then
 * "abc", " a" then " ab"). "\xc3\xa9" is not a piece: it falls back to its two bytes. */
static void own_vocab(void)
{
	own_n = 0;
	own_add("<unk>", 0);
	own_add("\n<s>\n", 0);
	own_add("\n</s>\n", 0);
	for (int b = 0; b < 256; b++) {
		snprintf(own_hex[b], sizeof(own_hex[b]), "<0x%02X>", b);
		own_add(own_hex[b], 0);
	}
	static const struct {
		const char *p;
		float score;
	} extra[] = { { " ", -5 },   { "a", -5 },    { "b", -5 },    { "c", -5 },
		      { "ab", 1 },   { "ba", 1 },    { "bc", 1 },    { "ca", 2 },
		      { "abc", 3 },  { " a", 1 },    { " ab", 4 },   { "aa", 0.5f },
		      { "aaa", 1 },  { "cc", -2e10f }, { "  ", 1 },  { "cab", 1 } };
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
		own_add(extra[i].p, extra[i].score);
}

/* The vocabulary as a tokenizer.bin (int32 max_token_length; per piece float score, int32
 * length, bytes). */
static void own_write(const char *path)
{
	FILE *f = fopen(path, "wb");
	int32_t max = 6;
	T_ASSERT(f != NULL);
	fwrite(&max, 4, 1, f);
	for (int i = 0; i < own_n; i++) {
		int32_t len = (int32_t)strlen(own_piece[i]);
		fwrite(&own_score[i], 4, 1, f);
		fwrite(&len, 4, 1, f);
		fwrite(own_piece[i], 1, (size_t)len, f);
	}
	T_EQ_INT(fclose(f), 0);
}

static int own_lookup(const char *s)
{
	for (int i = 0; i < own_n; i++)
		if (!strcmp(own_piece[i], s))
			return i;
	return -1;
}

/* run.c's encode, ported as it is written: BOS, the dummy prefix " ", a piece per code point
 * (else its bytes), then the rescan: the best-scoring adjacent pair (strictly better than the
 * best so far, which starts at -1e10: the leftmost of equals) merged until none is a piece. */
static int runc_encode(const char *text, int *tokens)
{
	char buf[64];
	int n = 0;
	tokens[n++] = 1;
	if (text[0] && own_lookup(" ") >= 0)
		tokens[n++] = own_lookup(" ");
	for (const char *c = text; *c;) {
		size_t len = 1;
		while (len < 4 && ((unsigned char)c[len] & 0xC0) == 0x80)
			len++;
		snprintf(buf, sizeof(buf), "%.*s", (int)len, c);
		int id = own_lookup(buf);
		if (id >= 0)
			tokens[n++] = id;
		else
			for (size_t k = 0; k < len; k++)
				tokens[n++] = (unsigned char)c[k] + 3;
		c += len;
	}
	for (;;) {
		float best = -1e10f;
		int best_id = -1, at = -1;
		for (int i = 0; i + 1 < n; i++) {
			snprintf(buf, sizeof(buf), "%s%s", own_piece[tokens[i]], own_piece[tokens[i + 1]]);
			int id = own_lookup(buf);
			if (id >= 0 && own_score[id] > best) {
				best = own_score[id];
				best_id = id;
				at = i;
			}
		}
		if (at < 0)
			break;
		tokens[at] = best_id;
		memmove(tokens + at + 1, tokens + at + 2, (size_t)(n - at - 2) * sizeof(*tokens));
		n--;
	}
	return n;
}

static const char *hang_what = "";
static char own_path[4200];

static void on_timer(int sig)
{
	(void)sig;
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "test_tokenizer: %s did not finish in 60 s of CPU "
			 "time: the merge is quadratic again?\n", hang_what);
	ssize_t w = write(2, msg, n > 0 && (size_t)n < sizeof(msg) ? (size_t)n : 0);
	(void)w;
	unlink(own_path); /* nothing left in /tmp */
	rmdir(dir);
	_exit(1);
}

/* A random text over "abc é" of len bytes (é is two). */
static void random_text(char *out, size_t len, uint64_t *seed)
{
	static const char *const parts[] = { "a", "b", "c", " ", "\xc3\xa9" };
	size_t at = 0;
	while (at + 2 < len) {
		*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
		const char *p = parts[(*seed >> 33) % 5];
		memcpy(out + at, p, strlen(p));
		at += strlen(p);
	}
	out[at] = '\0';
}

static void test_own_vocab(void)
{
	const char *path = own_path;
	struct eng_tokenizer *t = NULL;
	struct eng_error err;
	own_vocab();
	snprintf(own_path, sizeof(own_path), "%s/own.bin", dir);
	own_write(path);
	eng_error_clear(&err);
	T_EQ_INT(eng_tokenizer_open(&t, path, own_n, &err), 0);
	if (!t) {
		fprintf(stderr, "%s\n", err.text);
		return;
	}
	/* The rules one by one: the leftmost of tied pairs, chains, the -1e10 floor. */
	static const char *const fixed[] = { "abc", "bab", "aaaa", " ab", "cc", "ccc", "cabc",
					     "  a", "\xc3\xa9" "ab", "" };
	uint64_t seed = 43;
	char text[128];
	int want[256], got[256], n_got = 0;
	for (int i = 0; i < 400; i++) {
		if (i < (int)(sizeof(fixed) / sizeof(fixed[0])))
			snprintf(text, sizeof(text), "%s", fixed[i]);
		else
			random_text(text, 8 + (size_t)i % 56, &seed);
		int n_want = runc_encode(text, want);
		T_EQ_INT(eng_tokenizer_encode(t, text, true, false, got, 256, &n_got), 0);
		bool same = n_got == n_want && !memcmp(got, want, (size_t)n_want * sizeof(int));
		if (!same)
			fprintf(stderr, "own vocabulary: \"%s\" encodes unlike run.c\n", text);
		T_ASSERT(same);
	}
	/* 24 KB and 1 MiB: run.c's rescan merges each in O(n^2) pair lookups (6 KB took 7 s on
	 * the Llama 2 vocabulary, 1 MiB would take days); a queue takes O(n log n). */
	static const size_t big[] = { 24 << 10, 1 << 20 };
	struct itimerval on = { .it_value = { .tv_sec = 60 } }, off = { 0 };
	signal(SIGPROF, on_timer); /* CPU time: a loaded machine does not run it down */
	for (int k = 0; k < 2; k++) {
		char *long_text = malloc(big[k] + 1);
		int *ids = malloc((big[k] + 3) * sizeof(*ids));
		T_ASSERT(long_text && ids);
		random_text(long_text, big[k], &seed);
		hang_what = k ? "tokenizing 1 MiB" : "tokenizing 24 KB";
		setitimer(ITIMER_PROF, &on, NULL);
		T_EQ_INT(eng_tokenizer_encode(t, long_text, true, false, ids, (int)big[k] + 3,
					      &n_got), 0);
		setitimer(ITIMER_PROF, &off, NULL);
		T_ASSERT(n_got > 1 && (size_t)n_got < big[k]); /* merged: fewer ids than bytes */
		free(long_text);
		free(ids);
	}
	eng_tokenizer_close(t);
	unlink(path);
}

static struct eng_error open_bad(const unsigned char *buf, size_t len, int vocab, int *rc)
{
	FILE *f = fopen(bad, "wb");
	if (!f || fwrite(buf, 1, len, f) != len)
		exit(1);
	fclose(f);
	struct eng_tokenizer *t = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	*rc = eng_tokenizer_open(&t, bad, vocab, &err);
	T_ASSERT(t == NULL);
	return err;
}

static void test_bad_files(void)
{
	int rc;
	/* Cut inside max_token_length, then inside the first record, then in its bytes. */
	struct eng_error e = open_bad(file, 2, 32000, &rc);
	T_CONTAINS(e.text, "'max_token_length' is cut off");
	e = open_bad(file, 4 + 5, 32000, &rc);
	T_CONTAINS(e.text, "token 0: fields 'score' and 'length' are cut off");
	int32_t len0;
	memcpy(&len0, file + 8, 4);
	e = open_bad(file, 4 + 8 + (size_t)len0 - 1, 32000, &rc);
	T_CONTAINS(e.text, "token 0");
	T_CONTAINS(e.text, "extend past end of file");
	/* Cut at a record boundary: a well-formed file with too few tokens. */
	e = open_bad(file, 4 + 8 + (size_t)len0, 32000, &rc);
	T_CONTAINS(e.text, "holds 1 tokens");

	unsigned char *copy = malloc(file_len);
	memcpy(copy, file, file_len);
	int32_t v = -1;
	memcpy(copy + 8, &v, 4);
	e = open_bad(copy, file_len, 32000, &rc);
	T_EQ_INT(rc, -EINVAL);
	T_CONTAINS(e.text, "field 'length' is -1");
	v = 1000;
	memcpy(copy + 8, &v, 4);
	e = open_bad(copy, file_len, 32000, &rc);
	T_CONTAINS(e.text, "field 'length' is 1000");
	v = 0;
	memcpy(copy, &v, 4);
	e = open_bad(copy, file_len, 32000, &rc);
	T_CONTAINS(e.text, "'max_token_length' is 0");
	free(copy);
}

int main(void)
{
	t_mkdtemp(dir);
	test_own_vocab();
	rmdir(dir);
	if (t_failures) /* said before t_shared, which skips without the shared folder */
		return t_done();
	const char *path = t_shared("models/tokenizer.bin");
	FILE *f = fopen(path, "rb");
	if (!f)
		t_skip("cannot read %s", path);
	fseek(f, 0, SEEK_END);
	file_len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	file = malloc(file_len);
	if (fread(file, 1, file_len, f) != file_len)
		return 1;
	fclose(f);
	snprintf(dir, sizeof(dir), "/tmp/mw-test-tok-XXXXXX");
	t_mkdtemp(dir);
	snprintf(bad, sizeof(bad), "%s/bad.bin", dir);

	test_llama_vocab(path);
	test_bad_files();
	unlink(bad);
	rmdir(dir);
	free(file);
	return t_done();
}
