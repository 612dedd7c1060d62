/* tests/engine/test_tokenizer.c: llama2.c tokenizer.bin: round trips on the Llama 2 vocabulary, known
 * encodings whose ids the test finds by reading the file itself, and bad files.
 */
#include <errno.h>
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
	if (!mkdtemp(dir))
		return 1;
	snprintf(bad, sizeof(bad), "%s/bad.bin", dir);

	test_llama_vocab(path);
	test_bad_files();
	unlink(bad);
	rmdir(dir);
	free(file);
	return t_done();
}
