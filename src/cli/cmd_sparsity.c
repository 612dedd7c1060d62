/* src/cli/cmd_sparsity.c: `memwall sparsity-calibrate`: the calibration pass of a static
 * sparsity map (issue 18, AIOS's Model Contract R1). Runs each prompt of a file through the
 * model token by token, then greedy steps after it, and counts per layer how many tokens each
 * FFN neuron fired on (activation nonzero, through the engine's ffn_act hook). The map
 * (engine.h, struct eng_sparsity_map) marks the neurons that never fired as dead, and
 * `generate --sparsity-map=MAP` skips their gate and up rows and down columns. A neuron
 * that did not fire on these prompts may fire on others: `--sparsity-verify` counts that.
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine.h"
#include "file.h"
#include "mw.h"
#include "opt.h"
#include "verbs.h"

#define VERB "sparsity-calibrate"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall sparsity-calibrate -m MODEL --prompts FILE -o MAP [-n STEPS]\n"
		"                                  [-z TOKENIZER] [-t THREADS] [--reorder OUT]\n\n"
		"The calibration pass of a static sparsity map (ReLU models): runs each prompt of\n"
		"FILE from position 0, then STEPS greedy tokens after it, and writes MAP: per layer,\n"
		"on how many of the tokens each FFN neuron's activation was nonzero. Neurons that\n"
		"never fired are the map's dead neurons; `memwall generate --sparsity-map=MAP` skips\n"
		"their gate and up rows and down columns. That is not exact: a neuron dead on these\n"
		"prompts may fire on others (`generate --sparsity-verify` counts it).\n\n"
		"  -m, --model FILE      llama2.c checkpoint or GGUF file (llama)\n"
		"      --prompts FILE    one prompt per line; a line \"ids:1,300,301\" gives token ids\n"
		"                        as they are, other lines are text (needs a tokenizer)\n"
		"  -o, --output MAP      the map to write (atomically)\n"
		"  -n, --steps N         greedy tokens after each prompt (default 32)\n"
		"  -z, --tokenizer FILE  for text lines: llama2.c tokenizer.bin or a GGUF file\n"
		"  -t, --threads N       threads (default 1)\n"
		"      --force           replace MAP or OUT when it exists (only a regular file that\n"
		"                        is not an input of this command is ever replaced)\n"
		"      --reorder OUT     also write OUT, a copy of the model (llama2.c ak42 v1) with\n"
		"                        each layer's FFN neurons ordered by their firing counts, most\n"
		"                        first (w1/w3 rows, w2 columns: the function is unchanged):\n"
		"                        AIOS's R5 frequency-ordered layout, for measuring what it\n"
		"                        does to block-granularity skipping\n");
}

struct calib {
	struct eng_sparsity_map *map;
	struct eng_session *session;
	int vocab_size;
};

/* The ffn_act hook: one token's activations of one layer. */
static void count_fired(void *ctx, int layer, const float *act, int n)
{
	struct eng_sparsity_map *m = ctx;
	uint32_t *fired = m->fired + (size_t)layer * (size_t)m->hidden_dim;
	for (int r = 0; r < n; r++)
		fired[r] += act[r] != 0.0f;
}

/* One prompt's ids from a line: "ids:1,2,3", or text through the tokenizer (BOS first). */
static int line_ids(const char *line, const struct eng_tokenizer *tok, int vocab, int *ids,
		    int cap, int *n, const char *path, int lineno)
{
	*n = 0;
	if (!strncmp(line, "ids:", 4)) {
		const char *p = line + 4;
		while (*p && *p != '\n') {
			char *end;
			errno = 0;
			long v = strtol(p, &end, 10);
			if (end == p || errno || v < 0 || v >= vocab || *n >= cap)
				return mw_fail(MW_EXIT_USAGE, VERB, "%s: line %d: '%.*s' is not a "
					       "token id in [0, %d)", path, lineno,
					       (int)strcspn(p, ",\n"), p, vocab);
			ids[(*n)++] = (int)v;
			p = *end == ',' ? end + 1 : end;
		}
		return 0;
	}
	if (!tok)
		return mw_fail(MW_EXIT_USAGE, VERB, "%s: line %d is text: give the tokenizer with "
			       "-z FILE, or write the line as ids:1,300,...", path, lineno);
	if (eng_tokenizer_encode(tok, line, true, false, ids, cap, n))
		return mw_fail(MW_EXIT_USAGE, VERB, "%s: line %d: the tokenizer cannot encode it",
			       path, lineno);
	return 0;
}

/* Runs ids, then steps greedy tokens, from position 0; returns the tokens run. */
static int run_prompt(struct calib *c, const int *ids, int n, long steps, int seq_len,
		      long *tokens)
{
	const float *logits = NULL;
	int token = ids[0];
	for (int pos = 0; pos < seq_len && pos < n + steps; pos++) {
		int rc = eng_session_step(c->session, token, pos, &logits, NULL);
		if (rc)
			return mw_fail(MW_EXIT_ENV, VERB, "step %d failed: %s", pos, strerror(-rc));
		(*tokens)++;
		if (pos + 1 < n) {
			token = ids[pos + 1];
			continue;
		}
		token = 0;
		for (int v = 1; v < c->vocab_size; v++)
			if (logits[v] > logits[token])
				token = v;
	}
	return 0;
}

static int calibrate(struct calib *c, const char *prompts, const struct eng_tokenizer *tok,
		     long steps, int seq_len)
{
	struct mw_error err;
	int *ids = NULL, lineno = 0, rc = 0, runs = 0;
	mw_error_clear(&err);
	/* A FIFO or a device is refused by what it is, a file past the limit by its size. */
	FILE *f = mw_file_fopen(prompts, "prompts", "--prompts", MW_PROMPTS_MAX_BYTES, &rc, &err);
	char *line = NULL;
	size_t cap = 0;
	long tokens = 0;
	if (!f) {
		mw_error_print(&err);
		return MW_EXIT_USAGE;
	}
	ids = malloc((size_t)seq_len * sizeof(*ids));
	if (!ids) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
		goto out;
	}
	ssize_t len;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (!len)
			continue;
		int n;
		if ((rc = line_ids(line, tok, c->vocab_size, ids, seq_len, &n, prompts, lineno)))
			goto out;
		if (!n)
			continue;
		if ((rc = run_prompt(c, ids, n, steps, seq_len, &tokens)))
			goto out;
		runs++;
	}
	if (!runs)
		rc = mw_fail(MW_EXIT_USAGE, VERB, "--prompts %s: no prompt in the file", prompts);
	c->map->tokens = (uint64_t)tokens;
out:
	free(line);
	free(ids);
	fclose(f);
	return rc;
}

/* Whether a and b name one file: the same inode, or (b not there yet) the same path. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	if (!a || !b)
		return false;
	if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	return !strcmp(a, b);
}

/* What may be written at out (synth's rule): nothing there, or with --force a regular file;
 * never a folder, a FIFO or a device, and never a file this command reads or writes
 * otherwise (-o m.bin would turn the model into a map). */
static int target_check(const char *opt, const char *out, bool force, const char *const *others,
			const char *const *names, int n)
{
	struct stat st;
	for (int i = 0; i < n; i++)
		if (same_file(out, others[i]))
			return mw_fail(MW_EXIT_USAGE, VERB, "%s %s is also %s: name a new file", opt,
				       out, names[i]);
	if (lstat(out, &st)) {
		if (errno == ENOENT)
			return 0;
		return mw_fail(MW_EXIT_ENV, VERB, "%s %s: %s", opt, out, strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		return mw_fail(MW_EXIT_USAGE, VERB, "%s %s is %s: only a regular file is ever "
			       "replaced; name a new file", opt, out, mw_file_kind(st.st_mode));
	if (!force)
		return mw_fail(MW_EXIT_USAGE, VERB, "%s %s exists: give --force to replace it, or "
			       "name a new file", opt, out);
	return 0;
}

/* What the map says: dead neurons per layer and in all. */
static void summary_print(const struct eng_sparsity_map *m, const char *out)
{
	uint64_t dead = 0, fired = 0, all = (uint64_t)m->n_layers * (uint64_t)m->hidden_dim;
	fprintf(stderr, "memwall %s: %s: %" PRIu64 " tokens; dead neurons per layer:", VERB, out,
		m->tokens);
	for (int l = 0; l < m->n_layers; l++) {
		int d = 0;
		for (int r = 0; r < m->hidden_dim; r++) {
			d += eng_sparsity_map_dead(m, l, r);
			fired += m->fired[(size_t)l * (size_t)m->hidden_dim + (size_t)r];
		}
		dead += (uint64_t)d;
		fprintf(stderr, " %d", d);
	}
	fprintf(stderr, " (of %d); in all %.4f dead, mean zero fraction %.4f\n", m->hidden_dim,
		(double)dead / (double)all,
		m->tokens ? 1.0 - (double)fired / ((double)all * (double)m->tokens) : 0.0);
}

int mw_cmd_sparsity_calibrate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "prompts", required_argument, NULL, 'P' },
		{ "output", required_argument, NULL, 'o' },
		{ "steps", required_argument, NULL, 'n' },
		{ "tokenizer", required_argument, NULL, 'z' },
		{ "threads", required_argument, NULL, 't' },
		{ "reorder", required_argument, NULL, 'R' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *model = NULL, *prompts = NULL, *out = NULL, *tokpath = NULL, *reorder = NULL;
	long steps = 32, threads = 1;
	struct eng_model *m = NULL;
	struct eng_tokenizer *tok = NULL;
	struct calib c = { 0 };
	struct eng_error err;
	int ch, rc = 0;
	bool force = false;
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "m:o:n:z:t:h", longopts);
	while ((ch = mw_opt_next(&op)) != -1) {
		switch (ch) {
		case 'm': model = optarg; break;
		case 'P': prompts = optarg; break;
		case 'o': out = optarg; break;
		case 'z': tokpath = optarg; break;
		case 'R': reorder = optarg; break;
		case 'F': force = true; break;
		case 'n':
			if (mw_parse_long(optarg, 0, 1L << 20, &steps))
				return mw_fail(MW_EXIT_USAGE, VERB, "-n %s: give a count >= 0", optarg);
			break;
		case 't':
			if (mw_parse_long(optarg, 1, 1024, &threads))
				return mw_fail(MW_EXIT_USAGE, VERB, "-t %s: give 1 to 1024", optarg);
			break;
		case 'h': usage(stdout); return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	if (mw_opt_none_left(&op))
		return MW_EXIT_USAGE;
	if (!model || !prompts || !out)
		return mw_fail(MW_EXIT_USAGE, VERB, "give -m MODEL, --prompts FILE and -o MAP "
			       "(see --help)");
	const char *others[] = { model, prompts, tokpath, reorder, out };
	const char *names[] = { "the model (-m)", "the prompts (--prompts)", "the tokenizer (-z)",
				"--reorder's output", "the map (-o)" };
	if ((rc = target_check("-o", out, force, others, names, 4)) ||
	    (reorder && (rc = target_check("--reorder", reorder, force, others, names, 3))) ||
	    (reorder && same_file(reorder, out) &&
	     (rc = mw_fail(MW_EXIT_USAGE, VERB, "--reorder and -o name one file: name two"))))
		return rc;
	eng_error_clear(&err);
	if (eng_model_open(&m, model, NULL, &err) ||
	    (tokpath && eng_tokenizer_open(&tok, tokpath, eng_model_info(m)->vocab_size, &err))) {
		rc = mw_fail(MW_EXIT_USAGE, VERB, "%s%s%s", err.source, err.source[0] ? ": " : "",
			     err.text);
		goto out;
	}
	const struct eng_model_info *info = eng_model_info(m);
	c.vocab_size = info->vocab_size;
	c.map = eng_sparsity_map_new(info->n_layers, info->hidden_dim, info->dim);
	struct eng_hooks hooks = { .ctx = c.map, .ffn_act = count_fired };
	struct eng_session_options sopt = { .threads = (int)threads, .hooks = &hooks };
	if (!c.map) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
		goto out;
	}
	if (eng_session_new(&c.session, m, &sopt, &err)) {
		rc = mw_fail(MW_EXIT_USAGE, VERB, "%s%s%s", err.source, err.source[0] ? ": " : "",
			     err.text);
		goto out;
	}
	if ((rc = calibrate(&c, prompts, tok, steps, info->seq_len)))
		goto out;
	/* The map names its model: generate refuses it on any other (issue 28). */
	if (eng_sparsity_model_id(model, info, c.map->model, sizeof(c.map->model), &err)) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "%s: %s", err.source, err.text);
		goto out;
	}
	if (eng_sparsity_map_save(c.map, out, &err)) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "%s: %s", err.source, err.text);
		goto out;
	}
	summary_print(c.map, out);
	if (reorder) {
		if (eng_sparsity_reorder_llama2c(model, reorder, c.map, &err)) {
			rc = mw_fail(MW_EXIT_USAGE, VERB, "--reorder: %s: %s", err.source, err.text);
			goto out;
		}
		fprintf(stderr, "memwall %s: wrote %s: FFN neurons ordered by firing frequency\n",
			VERB, reorder);
	}
out:
	eng_session_free(c.session);
	eng_sparsity_map_free(c.map);
	eng_tokenizer_close(tok);
	eng_model_close(m);
	return rc;
}
