/* tests/fuzz/fuzz_tokenizer.c: the tokenizer loaders and encoders (engine/tokenizer*.c) on
 * arbitrary bytes: llama2.c's tokenizer.bin, and a GGUF file's tokenizer.ggml.* metadata.
 *
 * Input: one flags byte, the text to encode up to the first NUL, then the tokenizer file. The
 * file goes to a memfd (the loaders take a path). A file with GGUF's magic goes to
 * eng_tokenizer_open_gguf; any other to eng_tokenizer_open, told the file's own token count
 * (counted here independently), off by one when flag bit 2 is set to exercise the mismatch.
 *
 * The encoder must return 0, -ENOSPC or -EINVAL with at most max tokens, every id inside the
 * vocabulary; decoding any id, in or out of range, must return a string. */
#include <errno.h>
#include <string.h>

#include "engine.h"
#include "fuzz.h"

/* Counts token records the way tokenizer.py writes them: int32 max_token_length, then per
 * token float32 score, int32 length, bytes. -1 when the file does not parse. */
static int count_tokens(const uint8_t *p, size_t len)
{
	uint32_t max_len;
	size_t off = 4;
	int n = 0;
	if (len < 4)
		return -1;
	memcpy(&max_len, p, 4);
	while (off < len) {
		int32_t plen;
		if (len - off < 8)
			return -1;
		memcpy(&plen, p + off + 4, 4);
		off += 8;
		if (plen < 0 || (uint32_t)plen > max_len || len - off < (size_t)plen)
			return -1;
		off += (size_t)plen;
		n++;
	}
	return n;
}

static volatile char sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	const uint8_t *nul = memchr(data + 1, 0, size - 1);
	if (!nul)
		return 0;
	size_t text_len = (size_t)(nul - (data + 1));
	char *text = fuzz_str(data + 1, text_len);
	const uint8_t *file = nul + 1;
	size_t file_len = size - (size_t)(file - data);

	bool gguf = file_len >= 4 && !memcmp(file, "GGUF", 4);
	int vocab = count_tokens(file, file_len);
	if (vocab < 0)
		vocab = flags >> 3;
	if (flags & 4)
		vocab++;
	struct eng_tokenizer *t = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	const char *path = fuzz_memfd_path(file, file_len);
	int rc = gguf ? eng_tokenizer_open_gguf(&t, path, &err)
		      : eng_tokenizer_open(&t, path, vocab, &err);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM || rc == -ENOTSUP ||
		   (gguf && rc == -ENOENT));
	if (rc) {
		FUZZ_CHECK(t == NULL && err.text[0] && !strcmp(err.source, path));
		/* -ENOENT only for a GGUF without a tokenizer: every broken one names its key. */
		FUZZ_CHECK(rc != -ENOENT || strstr(err.text, "'tokenizer.ggml.model' is missing"));
		goto out;
	}
	FUZZ_CHECK(gguf || !(flags & 4)); /* a count that does not match must be refused */
	vocab = eng_tokenizer_vocab_size(t);
	FUZZ_CHECK(vocab > 0);

	/* a GGUF tokenizer may need 3 tokens per byte (a space falling back to U+2581's bytes) */
	int cap = 3 * (int)text_len + 3, n = -1;
	int *tokens = calloc((size_t)cap, sizeof(*tokens));
	if (!tokens)
		abort();
	/* flag bit 3 asks for a buffer one too small for the text's bytes: -ENOSPC paths */
	int max = (flags & 8) && text_len ? (int)text_len / 2 : cap;
	rc = eng_tokenizer_encode(t, text, flags & 1, flags & 2, tokens, max, &n);
	FUZZ_CHECK(rc == 0 || rc == -ENOSPC || rc == -EINVAL || rc == -ENOMEM);
	if (rc == 0) {
		FUZZ_CHECK(n >= 0 && n <= max);
		int prev = eng_tokenizer_bos(t);
		for (int i = 0; i < n; i++) {
			FUZZ_CHECK(tokens[i] >= 0 && tokens[i] < vocab);
			const char *s = eng_tokenizer_decode(t, prev, tokens[i]);
			FUZZ_CHECK(s != NULL);
			sink ^= s[0];
			prev = tokens[i];
		}
	}
	static const int odd[] = { -1, 0, 1, 2, 3, 255, 256, 259, 1 << 30 };
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		const char *s = eng_tokenizer_decode(t, eng_tokenizer_bos(t), odd[i]);
		FUZZ_CHECK(s != NULL);
		sink ^= s[0];
		s = eng_tokenizer_decode(t, odd[i], vocab - 1);
		FUZZ_CHECK(s != NULL);
	}
	free(tokens);
out:
	eng_tokenizer_close(t);
	free(text);
	return 0;
}
