/* tests/test_generate.c: `memwall generate` end to end on a synthetic stories260K: ids, the
 * summary line, no-op hooks changing nothing, and bad input. */
#include <unistd.h>

#include "engine.h"
#include "run.h"
#include "test.h"

static char dir[] = "/tmp/mw-test-generate-XXXXXX";
static char model[4200];

static int count_lines(const char *s)
{
	int n = 0;
	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	snprintf(model, sizeof(model), "%s/s260k.bin", dir);
	struct eng_error err;
	eng_error_clear(&err);
	if (eng_synth_llama2c(model, "stories260K", 1, &err))
		return 1;

	const char *plain[] = { "memwall", "generate", "-m", model, "-n", "12", "--ids",
				"--temperature", "0.8", "--seed", "3", NULL };
	struct t_output a = t_run(plain);
	T_EQ_INT(a.status, 0);
	T_EQ_INT(count_lines(a.out), 12);
	T_CONTAINS(a.err, "12 tokens");
	T_CONTAINS(a.err, "tok/s decode");
	T_CONTAINS(a.err, "first token");
	T_CONTAINS(a.err, "threads 1");
	T_CONTAINS(a.err, "synthetic model");

	const char *hooked[] = { "memwall", "generate", "-m", model, "-n", "12", "--ids",
				 "--temperature", "0.8", "--seed", "3", "--hooks-bench", "-t", "2",
				 NULL };
	struct t_output b = t_run(hooked);
	T_EQ_INT(b.status, 0);
	T_EQ_STR(b.out, a.out);
	T_CONTAINS(b.err, "no-op hooks");
	T_CONTAINS(b.err, "threads 2");
	t_output_free(&b);

	/* No tokenizer beside the model: ids, with a note. */
	const char *noids[] = { "memwall", "generate", "-m", model, "-n", "12", "--temperature",
				"0.8", "--seed", "3", NULL };
	b = t_run(noids);
	T_EQ_INT(b.status, 0);
	T_EQ_STR(b.out, a.out);
	T_CONTAINS(b.err, "printing token ids");
	t_output_free(&b);
	t_output_free(&a);

	const char *prompt[] = { "memwall", "generate", "-m", model, "-p", "hello", NULL };
	a = t_run(prompt);
	T_EQ_INT(a.status, 2);
	T_CONTAINS(a.err, "-z");
	t_output_free(&a);

	const char *missing[] = { "memwall", "generate", "-m", "/nonexistent/model.bin", NULL };
	a = t_run(missing);
	T_EQ_INT(a.status, 2);
	T_CONTAINS(a.err, "/nonexistent/model.bin");
	t_output_free(&a);

	const char *kv[] = { "memwall", "generate", "-m", model, "--kv", "q8", NULL };
	a = t_run(kv);
	T_EQ_INT(a.status, 2);
	t_output_free(&a);

	unlink(model);
	rmdir(dir);
	return t_done();
}
