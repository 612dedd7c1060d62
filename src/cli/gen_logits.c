/* src/cli/gen_logits.c: `memwall generate --logits FILE` (generate.h): every position's
 * logits as JSON, the file checked before the run and written whole after it.
 *
 * The file goes through src/base/file.c's mw_file_write_atomic, as export -o does: the text
 * is built in memory and written at the end (a temporary file beside the target, renamed),
 * so a failed or stopped run leaves nothing. Before the run: mw_file_write_atomic's own rule
 * (nothing there, or with --force a regular file; never a FIFO, a device, a folder or a
 * link, which is not followed), and never a file the command reads: truncating the model
 * mapped under the engine killed the run (SIGBUS) and destroyed the model (issue 43). */
#include <errno.h>
#include <stdlib.h>

#include <jansson.h>

#include "file.h"
#include "generate.h"
#include "mw.h"
#include "text.h"

#define VERB "generate"

int mw_logits_open(struct gen_logits *l, const struct gen_args *a)
{
	const char *in[] = { a->model, a->tokenizer, a->sparsity_static };
	const char *names[] = { "the model (-m)", "the tokenizer (-z)",
				"the sparsity map (--sparsity-map)" };
	struct mw_error err;
	for (int i = 0; i < 3; i++)
		if (mw_file_same(a->logits_path, in[i]))
			return mw_fail(MW_EXIT_USAGE, VERB, "--logits %s is also %s: this command "
				       "reads it; name a new file", a->logits_path, names[i]);
	mw_error_clear(&err);
	int rc = mw_file_target_check(a->logits_path, "--logits", a->force, &err);
	if (rc)
		return mw_fail(rc == -EINVAL || rc == -EEXIST ? MW_EXIT_USAGE : MW_EXIT_ENV, VERB,
			       "--logits %s: %s", a->logits_path, err.text);
	if (!(l->f = open_memstream(&l->buf, &l->len)))
		return mw_fail(MW_EXIT_ENV, VERB, "--logits: out of memory");
	return 0;
}

void mw_logits_begin(struct gen_logits *l, const char *model, int vocab_size)
{
	/* The model's path as the record writer writes text: jansson's escapes, and a byte
	 * that is not UTF-8 as U+FFFD (src/base/text.h), so the file is JSON whatever the
	 * path's bytes (its bytes with quotes and controls dropped were not, issue 43). */
	char *fixed = mw_utf8_fix(model);
	json_t *j = fixed ? json_string(fixed) : NULL;
	char *path = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	fprintf(l->f, "{\n\"model\": %s,\n\"vocab_size\": %d,\n\"full_logits\": {",
		path ? path : "null", vocab_size);
	free(path);
	json_decref(j);
	free(fixed);
}

void mw_logits_position(struct gen_logits *l, int pos, const float *logits, int n)
{
	/* %.9g round-trips a float exactly */
	fprintf(l->f, "%s\n\"%d\": [", pos ? "," : "", pos);
	for (int i = 0; i < n; i++)
		fprintf(l->f, "%s%.9g", i ? "," : "", (double)logits[i]);
	fputc(']', l->f);
}

int mw_logits_close(struct gen_logits *l, const struct gen_args *a, const int *fed, int n_fed)
{
	FILE *f = l->f;
	struct mw_error err;
	fputs("},\n\"tokens\": [", f);
	for (int i = 0; i < n_fed; i++)
		fprintf(f, "%s%d", i ? ", " : "", fed[i]);
	fputs("]\n}\n", f);
	l->f = NULL;
	if (fclose(f))
		return mw_fail(MW_EXIT_ENV, VERB, "--logits %s: out of memory holding the logits "
			       "(%zu bytes)", a->logits_path, l->len);
	mw_error_clear(&err);
	int rc = mw_file_write_atomic(a->logits_path, "--logits", l->buf, l->len, a->force, &err);
	if (rc)
		return mw_fail(rc == -EINVAL || rc == -EEXIST ? MW_EXIT_USAGE : MW_EXIT_ENV, VERB,
			       "--logits %s: %s", a->logits_path, err.text);
	return 0;
}

void mw_logits_free(struct gen_logits *l)
{
	if (l->f)
		fclose(l->f);
	free(l->buf);
	*l = (struct gen_logits){ 0 };
}
