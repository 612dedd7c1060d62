/* src/cli/cmd_tokenize.c: `memwall tokenize`: the token ids (or pieces) a tokenizer gives a text.
 *
 * The tokenizer is any file eng_tokenizer_open_file takes: a GGUF model, a vocabulary-only
 * GGUF (no tensors; llama.cpp's models/ggml-vocab-*.gguf), or a llama2.c tokenizer.bin. The
 * text is --text, --file (read through src/base/file.c, which refuses a FIFO or a device), or
 * stdin; it is tokenized as it is, byte for byte (a trailing newline is part of it), with
 * special tokens written in it matched (llama.cpp's llama-tokenize default; not with
 * --no-parse-special, llama-tokenize's switch), and BOS only with --bos. The ids are
 * llama.cpp's for the same vocabulary and text (tests/e2e/test_tokenize.c checks llama.cpp's
 * own test cases, and the bytes a vocabulary has no token for).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "engine.h"
#include "file.h"
#include "mw.h"
#include "opt.h"
#include "text.h"
#include "verbs.h"

#define VERB "tokenize"

/* The most text one call reads. Every encoder merges in O(n log n) (llama2.c's too, since
 * issue 43: run.c's rescan of every pair after each merge took 7 s for 6 KB), but a text far
 * beyond a prompt is a mistake more often than a wish, and the merge queues hold some tens of
 * bytes per byte of text. */
#define TEXT_MAX (16u << 20)

enum out_format { OUT_IDS, OUT_PIECES, OUT_JSON };

static const char *const format_names[] = {
	[OUT_IDS] = "ids", [OUT_PIECES] = "pieces", [OUT_JSON] = "json",
};

struct tok_args {
	const char *model, *text, *file;
	bool bos, no_parse_special;
	enum out_format format;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall tokenize -m FILE [--bos] [--no-parse-special]\n"
		"                        [--format ids|pieces|json] [--text T | --file F]\n\n"
		"Prints the tokens FILE's tokenizer gives a text: --text T, the contents of --file F,\n"
		"or stdin when neither is given. The text is taken byte for byte (a trailing newline\n"
		"is a token too); special tokens written in it (<s>, <|endoftext|>) are matched.\n"
		"The ids are llama.cpp's (b4747) for the same vocabulary and text, and so is what\n"
		"happens to a byte the vocabulary has no token for: a GPT-2 byte-level vocabulary\n"
		"drops it (falcon's has none for 14 of the 32 control bytes, 0x0b among them);\n"
		"llama2.c's and a SentencePiece one without byte tokens refuse the text (exit 2).\n\n"
		"  -m, --model FILE  a GGUF model, a vocabulary-only GGUF (tensor_count 0, as\n"
		"                    llama.cpp's models/ggml-vocab-*.gguf), or a llama2.c\n"
		"                    tokenizer.bin\n"
		"  --bos             put the vocabulary's BOS token first (never by default)\n"
		"  --no-parse-special  control and unknown tokens written in the text are text,\n"
		"                    not tokens (user-defined ones still match): llama-tokenize's\n"
		"                    switch, and how llama.cpp's tests/test-tokenizer-0 encodes\n"
		"  --format ids      the ids on one line, separated by spaces (the default)\n"
		"  --format pieces   each token's text on a line of its own (as it decodes: U+2581\n"
		"                    and GPT-2's byte characters shown as the bytes they stand for),\n"
		"                    with \\n, \\t, \\\\ and bytes that are not printable UTF-8\n"
		"                    written as escapes (\\xNN), so lines and tokens correspond\n"
		"  --format json     {\"ids\": [...], \"pieces\": [...]}; a byte that is not valid\n"
		"                    UTF-8 on its own (byte-fallback tokens) shows as U+FFFD\n"
		"  -t, --text T      the text\n"
		"  -f, --file F      a file holding the text (a regular file, up to 16 MiB)\n\n"
		"Exit: 0 tokenized, 2 bad usage or input (the message names the file and the fix).\n");
}

static int parse_args(int argc, char **argv, struct tok_args *a)
{
	static const struct option opts[] = {
		{ "model", required_argument, NULL, 'm' }, { "bos", no_argument, NULL, 'b' },
		{ "no-parse-special", no_argument, NULL, 'S' },
		{ "format", required_argument, NULL, 'F' }, { "text", required_argument, NULL, 't' },
		{ "file", required_argument, NULL, 'f' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "m:t:f:h", opts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case 'm': a->model = optarg; break;
		case 'b': a->bos = true; break;
		case 'S': a->no_parse_special = true; break;
		case 't': a->text = optarg; break;
		case 'f': a->file = optarg; break;
		case 'h': usage(stdout); return -1;
		case 'F': {
			size_t k = 0;
			while (k < 3 && strcmp(optarg, format_names[k]))
				k++;
			if (k == 3)
				return mw_fail(MW_EXIT_USAGE, VERB, "--format '%s': give ids, pieces or "
					       "json", optarg);
			a->format = (enum out_format)k;
			break;
		}
		default: return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	if (mw_opt_none_left(&op))
		return MW_EXIT_USAGE;
	if (!a->model)
		return mw_fail(MW_EXIT_USAGE, VERB, "-m FILE is required: a GGUF model or "
			       "vocabulary, or a llama2.c tokenizer.bin (memwall tokenize --help)");
	if (a->text && a->file)
		return mw_fail(MW_EXIT_USAGE, VERB, "--text and --file both given: give one (or "
			       "neither, to read stdin)");
	return 0;
}

/* All of stdin, up to TEXT_MAX bytes. */
static int read_stdin(char **text, size_t *len)
{
	size_t cap = 65536, got = 0, r;
	char *buf = malloc(cap + 1);
	while (buf && (r = fread(buf + got, 1, cap - got, stdin)) > 0) {
		got += r;
		if (got > TEXT_MAX)
			break;
		if (got == cap) {
			char *nb = realloc(buf, 2 * cap + 1);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	*text = NULL;
	if (!buf)
		return mw_fail(MW_EXIT_ENV, VERB, "stdin: out of memory reading the text");
	if (got > TEXT_MAX || ferror(stdin)) {
		free(buf);
		if (got > TEXT_MAX)
			return mw_fail(MW_EXIT_USAGE, VERB, "stdin: the text is over the 16 MiB "
				       "limit: tokenize it in parts");
		return mw_fail(MW_EXIT_USAGE, VERB, "stdin: cannot read the text: give it with "
			       "--text or --file");
	}
	buf[got] = '\0';
	*text = buf;
	*len = got;
	return 0;
}

/* The text to tokenize, malloc'd into *text; names where it came from in *source. */
static int read_text(const struct tok_args *a, char **text, const char **source)
{
	size_t len = 0;
	int rc;
	if (a->text) {
		*source = "--text";
		*text = strdup(a->text);
		return *text ? 0 : mw_fail(MW_EXIT_ENV, VERB, "out of memory");
	}
	if (a->file) {
		struct mw_error err;
		mw_error_clear(&err);
		*source = a->file;
		if (mw_file_read(a->file, "text", "--file", TEXT_MAX, text, &len, &err)) {
			mw_error_print(&err);
			fprintf(stderr, "(--file names a regular file holding the text; or give "
				"--text T, or the text on stdin)\n");
			return MW_EXIT_USAGE;
		}
	} else {
		*source = "stdin";
		if ((rc = read_stdin(text, &len)))
			return rc;
	}
	/* The engine takes NUL-terminated text: a NUL would silently end it early. */
	const char *nul = memchr(*text, '\0', len);
	if (nul) {
		rc = mw_fail(MW_EXIT_USAGE, VERB, "%s: byte %zu is NUL, and the text would end "
			     "there: a text file holds none (is it binary? remove the NUL bytes)",
			     *source, (size_t)(nul - *text));
		free(*text);
		*text = NULL;
		return rc;
	}
	return 0;
}

#define M_HINT "(-m takes a GGUF model or vocabulary that carries tokenizer.ggml.* metadata, or " \
	       "a llama2.c tokenizer.bin)"

/* A model that memwall synth wrote carries a synthetic vocabulary (its own, not the real
 * model's): its ids are said to be that, on stderr, so no one reads them as a real model's. */
static void model_note(const char *path)
{
	struct eng_tensor_table *t = NULL;
	struct eng_error err;
	eng_error_clear(&err);
	if (eng_tensors_from_file(path, &t, &err) == 0 && t->info.synthetic)
		fprintf(stderr, "memwall " VERB ": %s is a synthetic model (memwall synth): its "
			"vocabulary is synthetic too, so these ids are no real model's\n", path);
	eng_tensor_table_free(t);
}

static int open_tokenizer(const char *path, struct eng_tokenizer **tok)
{
	struct mw_error ferr;
	struct eng_error err;
	mw_error_clear(&ferr);
	eng_error_clear(&err);
	/* Refuses a FIFO, a device, a directory before the engine opens it (file.h). */
	if (mw_file_check(path, "tokenizer", "-m", MW_FILE_ANY_SIZE, &ferr)) {
		mw_error_print(&ferr);
		fprintf(stderr, "%s\n", M_HINT);
		return MW_EXIT_USAGE;
	}
	if (eng_tokenizer_open_file(tok, path, &err) == 0) {
		model_note(path);
		return 0;
	}
	/* A llama2.c checkpoint read as a tokenizer.bin gives a nonsense field ("max_token_length
	 * is 1634415666"): say what the file is, and where its tokenizer is. */
	struct eng_tensor_table *t = NULL;
	struct eng_error terr;
	eng_error_clear(&terr);
	if (eng_tensors_from_file(path, &t, &terr) == 0 && t->info.format == ENG_FORMAT_LLAMA2C) {
		int rc = mw_fail(MW_EXIT_USAGE, VERB, "%s is a llama2.c model checkpoint%s (dim %d, "
				 "%d layers, vocabulary of %d), and llama2.c keeps its tokenizer in a "
				 "file of its own: give that tokenizer.bin with -m (llama2.c's "
				 "repository ships tokenizer.bin, the 32000-token Llama 2 vocabulary "
				 "of stories15M/42M/110M; stories260K's 512-token one is tok512.bin)",
				 path, t->info.synthetic ? " with synthetic weights (memwall synth)" : "",
				 t->info.dim, t->info.n_layers, t->info.vocab_size);
		eng_tensor_table_free(t);
		return rc;
	}
	eng_tensor_table_free(t);
	return mw_fail(MW_EXIT_USAGE, VERB, "%s: %s\n%s", err.source[0] ? err.source : path,
		       err.text, M_HINT);
}

/* Length of the valid UTF-8 sequence at s (shortest form, no surrogate), or 0; *cp receives
 * its code point. */
static size_t utf8_valid(const unsigned char *s, size_t left, uint32_t *cp)
{
	static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
		 : s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : 0;
	if (!n || n > left)
		return 0;
	*cp = n == 1 ? s[0] : s[0] & (0x7fu >> n);
	for (size_t k = 1; k < n; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		*cp = (*cp << 6) | (s[k] & 0x3fu);
	}
	if (*cp < min_cp[n] || *cp > 0x10ffff || (*cp >= 0xd800 && *cp < 0xe000))
		return 0; /* overlong, out of range, or a surrogate */
	return n;
}

/* The same for a printable character only (no C0 control, DEL or C1 control). */
static size_t printable_utf8(const unsigned char *s, size_t left)
{
	uint32_t cp = 0;
	size_t n = utf8_valid(s, left, &cp);
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) ? 0 : n;
}

/* piece with escapes, on a line of its own. */
static void print_piece_line(const char *piece)
{
	const unsigned char *s = (const unsigned char *)piece;
	size_t left = strlen(piece);
	while (left) {
		size_t n = printable_utf8(s, left);
		if (s[0] == '\\')
			fputs("\\\\", stdout);
		else if (s[0] == '\n')
			fputs("\\n", stdout);
		else if (s[0] == '\t')
			fputs("\\t", stdout);
		else if (n)
			fwrite(s, 1, n, stdout);
		else
			printf("\\x%02X", s[0]);
		n = n ? n : 1;
		s += n;
		left -= n;
	}
	putchar('\n');
}

/* piece as a JSON string: bytes that are not valid UTF-8 become U+FFFD (jansson takes only
 * valid UTF-8). */
static json_t *piece_json(const char *piece)
{
	size_t len = strlen(piece), at = 0;
	char *buf = malloc(3 * len + 1);
	if (!buf)
		return NULL;
	for (const unsigned char *s = (const unsigned char *)piece; len;) {
		uint32_t cp;
		size_t n = utf8_valid(s, len, &cp); /* jansson escapes the control characters */
		if (n) {
			memcpy(buf + at, s, n);
			at += n;
		} else {
			memcpy(buf + at, "\xef\xbf\xbd", 3);
			at += 3;
			n = 1;
		}
		s += n;
		len -= n;
	}
	json_t *j = json_stringn(buf, at);
	free(buf);
	return j;
}

static int print_json(const struct eng_tokenizer *tok, const int *ids, int n)
{
	json_t *doc = json_object(), *jids = json_array(), *jpieces = json_array();
	int rc = MW_EXIT_OK;
	if (!doc || !jids || !jpieces || json_object_set(doc, "ids", jids) ||
	    json_object_set(doc, "pieces", jpieces))
		rc = MW_EXIT_ENV;
	for (int i = 0; i < n && !rc; i++)
		if (json_array_append_new(jids, json_integer(ids[i])) ||
		    json_array_append_new(jpieces, piece_json(eng_tokenizer_decode(tok, -1, ids[i]))))
			rc = MW_EXIT_ENV;
	/* Pieces are the vocabulary's text: a C1 control (U+009B is CSI) or a bidi override in
	 * one, which jansson writes raw, is written as a \u escape (src/base/text.h), as
	 * --format pieces escapes it: the same JSON, nothing a terminal obeys. */
	char *dump = rc ? NULL : json_dumps(doc, JSON_COMPACT);
	char *safe = dump ? mw_json_esc(dump) : NULL;
	if (!rc && (!safe || fputs(safe, stdout) == EOF || putchar('\n') == EOF))
		rc = MW_EXIT_ENV;
	free(safe);
	free(dump);
	json_decref(jids);
	json_decref(jpieces);
	json_decref(doc);
	return rc ? mw_fail(rc, VERB, "out of memory writing the JSON") : MW_EXIT_OK;
}

/* Encodes text; *ids (malloc'd) receives *n tokens. */
static int encode(const struct eng_tokenizer *tok, const char *text,
		  const struct eng_encode_options *opt, int **ids, int *n)
{
	/* A GGUF tokenizer may need up to 3 tokens per byte and says how many on -ENOSPC;
	 * llama2.c's needs at most strlen + 3 (engine.h). */
	size_t len = strlen(text);
	int max = (int)len + 8, rc;
	for (int tries = 0; tries < 3; tries++) {
		int *buf = malloc((size_t)max * sizeof(*buf));
		if (!buf)
			return mw_fail(MW_EXIT_ENV, VERB, "out of memory for %d tokens", max);
		rc = eng_tokenizer_encode_opt(tok, text, opt, buf, max, n);
		if (rc == 0) {
			*ids = buf;
			return 0;
		}
		free(buf);
		if (rc != -ENOSPC)
			break;
		max = *n > max ? *n : 3 * (int)len + 8;
	}
	return mw_fail(MW_EXIT_USAGE, VERB, "the tokenizer cannot encode the text (%s): a byte of "
		       "it has no token, and the vocabulary has no byte tokens to fall back on",
		       strerror(-rc));
}

int mw_cmd_tokenize(int argc, char **argv)
{
	struct tok_args a = { .format = OUT_IDS };
	struct eng_tokenizer *tok = NULL;
	char *text = NULL;
	const char *source = NULL;
	int *ids = NULL, n = 0, rc;

	if ((rc = parse_args(argc, argv, &a)))
		return rc < 0 ? MW_EXIT_OK : rc;
	if ((rc = open_tokenizer(a.model, &tok)))
		goto out;
	if (a.bos && eng_tokenizer_bos(tok) < 0) {
		rc = mw_fail(MW_EXIT_USAGE, VERB, "--bos: %s's vocabulary has no BOS token "
			     "(tokenizer.ggml.bos_token_id): leave --bos out", a.model);
		goto out;
	}
	struct eng_encode_options eo = { .bos = a.bos, .no_parse_special = a.no_parse_special };
	if ((rc = read_text(&a, &text, &source)) || (rc = encode(tok, text, &eo, &ids, &n)))
		goto out;
	if (a.format == OUT_JSON) {
		rc = print_json(tok, ids, n);
	} else if (a.format == OUT_PIECES) {
		for (int i = 0; i < n; i++)
			print_piece_line(eng_tokenizer_decode(tok, -1, ids[i]));
	} else {
		for (int i = 0; i < n; i++)
			printf("%s%d", i ? " " : "", ids[i]);
		putchar('\n');
	}
	if (!rc && (fflush(stdout) || ferror(stdout)))
		rc = mw_fail(MW_EXIT_ENV, VERB, "cannot write the output to stdout");
out:
	free(ids);
	free(text);
	eng_tokenizer_close(tok);
	return rc;
}
