/* tests/e2e/test_cli.c: the memwall command's contract: verbs, --help, --version, exit codes. */
#include "run.h"
#include "test.h"

static void test_no_args(void)
{
	const char *argv[] = { "memwall", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "usage: memwall <verb>");
	t_output_free(&o);
}

static void test_unknown_verb(void)
{
	const char *argv[] = { "memwall", "frobnicate", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "unknown verb 'frobnicate'");
	t_output_free(&o);
}

static void test_version(void)
{
	const char *argv[] = { "memwall", "--version", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "memwall " MW_VERSION);
	T_CONTAINS(o.out, "(git ");
	t_output_free(&o);
}

/* Every verb listed by `memwall --help` answers --help with exit 0 and a usage line that
 * names it, and rejects an unknown option with exit 2. */
static void test_every_verb(void)
{
	const char *argv[] = { "memwall", "--help", NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	const char *p = o.out ? strstr(o.out, "verbs:\n") : NULL;
	T_ASSERT(p != NULL);
	int n = 0, column = -1;
	for (p = p ? strchr(p, '\n') : NULL; p && p[1] == ' ' && p[2] == ' '; p = strchr(p + 1, '\n')) {
		char verb[64];
		/* A summary's column is the same on every line, wrapped lines included, and no line
		 * is wider than 80 (issue 44: it broke at sparsity-calibrate). */
		const char *eol = strchr(p + 1, '\n');
		int at = (int)strspn(p + 3 + strcspn(p + 3, " \n"), " ") +
			 (int)(strcspn(p + 3, " \n") + 2);
		if (p[3] == ' ')
			at = (int)strspn(p + 1, " ");
		if (column < 0)
			column = at;
		if (at != column)
			fprintf(stderr, "--help: a summary at column %d, not %d: %.*s\n", at, column,
				eol ? (int)(eol - p - 1) : 80, p + 1);
		T_EQ_INT(at, column);
		T_ASSERT(!eol || eol - p - 1 <= 80);
		if (p[3] == ' ')
			continue; /* a summary's second line */
		if (sscanf(p + 1, " %63s", verb) != 1)
			break;
		n++;
		const char *hargv[] = { "memwall", verb, "--help", NULL };
		struct t_output h = t_run(hargv);
		T_EQ_INT(h.status, 0);
		char want[96];
		snprintf(want, sizeof(want), "usage: memwall %s", verb);
		T_CONTAINS(h.out, want);
		t_output_free(&h);

		const char *bargv[] = { "memwall", verb, "--no-such-option", NULL };
		struct t_output b = t_run(bargv);
		if (b.status != 2)
			fprintf(stderr, "verb %s: exit %d on an unknown option\n", verb, b.status);
		T_EQ_INT(b.status, 2);
		/* One line naming the option and --help, not the usage (issue 29: run printed 66
		 * lines and the error scrolled away). */
		int lines = 0;
		for (const char *e = b.err ? b.err : ""; *e; e++)
			lines += *e == '\n';
		if (lines != 1)
			fprintf(stderr, "verb %s: %d lines on an unknown option:\n%s", verb, lines,
				b.err ? b.err : "");
		T_EQ_INT(lines, 1);
		T_CONTAINS(b.err, "--no-such-option");
		/* every verb that parses options says it one way (src/base/opt.h, issue 41) */
		char bad[256];
		snprintf(bad, sizeof(bad), "memwall %s: unknown option '--no-such-option' "
			 "(memwall %s --help lists them)\n", verb, verb);
		if (strcmp(verb, "version"))
			T_EQ_STR(b.err, bad);
		t_output_free(&b);
	}
	T_ASSERT(n >= 1);
	t_output_free(&o);
}

/* An option given without its value: one line in the same style, exit 2, for verbs that
 * parsed with a ':' optstring, without one, and with their own ':' case before issue 41. */
static void test_missing_value(void)
{
	static const char *const cases[][2] = {
		{ "run", "--output" },   { "report", "--format" }, { "compare", "--format" },
		{ "import-aios", "-o" }, { "generate", "-m" },     { "synth", "--arch" },
		{ "db", "--db" },        { "stat", "-I" },         { "bandwidth", "--size" },
		{ "sparsity-calibrate", "-n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = { "memwall", cases[i][0], cases[i][1], NULL };
		struct t_output o = t_run(argv);
		char want[256];
		snprintf(want, sizeof(want), "memwall %s: option '%s' needs a value (memwall %s "
			 "--help lists them)\n", cases[i][0], cases[i][1], cases[i][0]);
		T_EQ_INT(o.status, 2);
		T_EQ_STR(o.err, want);
		t_output_free(&o);
	}
}

int main(void)
{
	test_no_args();
	test_unknown_verb();
	test_version();
	test_every_verb();
	test_missing_value();
	return t_done();
}
