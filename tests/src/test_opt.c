/* tests/src/test_opt.c: src/base/opt.c, the verbs' option parser (issue 41).
 *
 * Parses argv arrays built here and checks what mw_opt_next returns, where optind ends and the
 * one line it prints for each kind of mistyped option, against messages spelled out here; and
 * that one process can parse several verbs in a row (glibc keeps a half-read cluster and the
 * last optstring's '+' unless the scan is reset to 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mw.h"
#include "opt.h"
#include "run.h"
#include "test.h"

enum { OPT_JSON = 256, OPT_SIZE, OPT_SYSFS };

static const struct option longopts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "sysfs", required_argument, NULL, OPT_SYSFS },
	{ "output", required_argument, NULL, 'o' },
	/* a long option whose val is a letter shortopts does not have (as db's --format) */
	{ "format", required_argument, NULL, 'f' },
	{ "all", no_argument, NULL, 'a' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

#define MAX_ARGS 12
#define MAX_RETS 8

/* One parse, as a verb runs it: argv from a NULL-terminated list (copied: getopt_long
 * permutes it), every mw_opt_next value up to -1 or '?' (then the caller stops), optind at
 * the end and what stderr got. */
struct parse {
	char *argv[MAX_ARGS + 1];
	int argc;
	int ret[MAX_RETS];
	char *optargs[MAX_RETS]; /* optarg after each return, copied */
	int n;                   /* values in ret, the last -1 or '?' */
	int optind_end;
	char *err;               /* stderr, malloc'd */
	int none_left;           /* mw_opt_none_left after the loop */
};

static void parse_free(struct parse *p)
{
	for (int i = 0; i < p->argc; i++)
		free(p->argv[i]);
	for (int i = 0; i < p->n; i++)
		free(p->optargs[i]);
	free(p->err);
}

static void parse_run(struct parse *p, const char *shortopts, const char *const *args,
		      int stop_at)
{
	memset(p, 0, sizeof(*p));
	while (args[p->argc] && p->argc < MAX_ARGS) {
		p->argv[p->argc] = strdup(args[p->argc]);
		p->argc++;
	}
	T_ASSERT(args[p->argc] == NULL); /* MAX_ARGS holds them all */
	FILE *tmp = tmpfile();
	int saved = dup(2);
	T_ASSERT(tmp != NULL && saved >= 0);
	if (!tmp || saved < 0)
		exit(t_done());
	fflush(stderr);
	dup2(fileno(tmp), 2);

	struct mw_opt op;
	mw_opt_init(&op, p->argv[0], p->argc, p->argv, shortopts, longopts);
	int c;
	do {
		c = mw_opt_next(&op);
		p->optargs[p->n] = optarg && c != -1 && c != '?' ? strdup(optarg) : NULL;
		p->ret[p->n++] = c;
	} while (c != -1 && c != '?' && c != stop_at && p->n < MAX_RETS);
	p->optind_end = optind;
	if (c == -1)
		p->none_left = mw_opt_none_left(&op);

	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	p->err = t_slurp_fd(fileno(tmp));
	fclose(tmp);
}

/* The message, spelled out here: "memwall VERB: WHAT (memwall VERB --help lists them)\n". */
static void expect_err(const struct parse *p, const char *what)
{
	char want[512];
	snprintf(want, sizeof(want), "memwall %s: %s (memwall %s --help lists them)\n",
		 p->argv[0], what, p->argv[0]);
	T_EQ_STR(p->err, want);
}

/* What is right: values and optarg in order, operands after optind, nothing on stderr. */
static void test_accepts(void)
{
	struct parse p;
	const char *a1[] = { "bandwidth", "in.gguf", "--json", "-o", "out", "--size=5",
			     "--sysfs", "/s", "-ao2", NULL };
	parse_run(&p, "ao:h", a1, 0);
	T_EQ_INT(p.n, 7);
	T_EQ_INT(p.ret[0], OPT_JSON);
	T_EQ_INT(p.ret[1], 'o');
	T_EQ_STR(p.optargs[1], "out");
	T_EQ_INT(p.ret[2], OPT_SIZE);
	T_EQ_STR(p.optargs[2], "5");
	T_EQ_INT(p.ret[3], OPT_SYSFS);
	T_EQ_STR(p.optargs[3], "/s");
	T_EQ_INT(p.ret[4], 'a');
	T_EQ_INT(p.ret[5], 'o');
	T_EQ_STR(p.optargs[5], "2");
	T_EQ_INT(p.ret[6], -1);
	/* the operand, moved after the options (glibc's default order) */
	T_EQ_INT(p.optind_end, 8);
	T_EQ_STR(p.argv[8], "in.gguf");
	T_EQ_INT(p.none_left, MW_EXIT_USAGE);
	T_EQ_STR(p.err, "memwall bandwidth: unexpected argument 'in.gguf'\n");
	parse_free(&p);

	/* a unique abbreviation is the option; none left is MW_EXIT_OK and silent */
	const char *a2[] = { "calibrate", "--si", "7", "--js", NULL };
	parse_run(&p, "h", a2, 0);
	T_EQ_INT(p.n, 3);
	T_EQ_INT(p.ret[0], OPT_SIZE);
	T_EQ_STR(p.optargs[0], "7");
	T_EQ_INT(p.ret[1], OPT_JSON);
	T_EQ_INT(p.ret[2], -1);
	T_EQ_INT(p.none_left, MW_EXIT_OK);
	T_EQ_STR(p.err, "");
	parse_free(&p);

	/* '+': the options end at the first operand, whose own options are its own (stat) */
	const char *a3[] = { "stat", "-a", "sleep", "-o", "x", NULL };
	parse_run(&p, "+ao:h", a3, 0);
	T_EQ_INT(p.n, 2);
	T_EQ_INT(p.ret[0], 'a');
	T_EQ_INT(p.ret[1], -1);
	T_EQ_INT(p.optind_end, 2);
	T_EQ_STR(p.argv[2], "sleep");
	parse_free(&p);
}

/* Each kind of mistake: '?' (never ':'), one line in one style, the option named as typed. */
static void test_refuses(void)
{
	struct parse p;
	const char *unknown_long[] = { "db", "--no-such", NULL };
	parse_run(&p, "ho:", unknown_long, 0);
	T_EQ_INT(p.n, 1);
	T_EQ_INT(p.ret[0], '?');
	expect_err(&p, "unknown option '--no-such'");
	parse_free(&p);

	/* the value is not part of the name */
	const char *unknown_value[] = { "db", "--no-such=/very/long/path", NULL };
	parse_run(&p, "ho:", unknown_value, 0);
	T_EQ_INT(p.ret[0], '?');
	expect_err(&p, "unknown option '--no-such'");
	parse_free(&p);

	const char *unknown_short[] = { "run", "-z", NULL };
	parse_run(&p, "o:h", unknown_short, 0);
	T_EQ_INT(p.ret[0], '?');
	expect_err(&p, "unknown option '-z'");
	parse_free(&p);

	/* inside a cluster, after a long option: the old helpers named argv[optind - 1],
	 * "--json" here */
	const char *cluster[] = { "verify", "--json", "-zq", NULL };
	parse_run(&p, "qh", cluster, 0);
	T_EQ_INT(p.n, 2);
	T_EQ_INT(p.ret[0], OPT_JSON);
	T_EQ_INT(p.ret[1], '?');
	expect_err(&p, "unknown option '-z'");
	parse_free(&p);

	/* -f is no short option, though --format's val is 'f' and --format=md came before */
	const char *letter[] = { "db", "--format=md", "-fz", NULL };
	parse_run(&p, "ho:", letter, 0);
	T_EQ_INT(p.n, 2);
	T_EQ_INT(p.ret[0], 'f');
	T_EQ_STR(p.optargs[0], "md");
	T_EQ_INT(p.ret[1], '?');
	expect_err(&p, "unknown option '-f'");
	parse_free(&p);

	const char *missing_long[] = { "calibrate", "--json", "--size", NULL };
	parse_run(&p, "h", missing_long, 0);
	T_EQ_INT(p.n, 2);
	T_EQ_INT(p.ret[1], '?');
	expect_err(&p, "option '--size' needs a value");
	parse_free(&p);

	/* --output's val is 'o', a short option too: still named as typed */
	const char *missing_alias[] = { "export", "--output", NULL };
	parse_run(&p, "o:h", missing_alias, 0);
	T_EQ_INT(p.ret[0], '?');
	expect_err(&p, "option '--output' needs a value");
	parse_free(&p);

	const char *missing_short[] = { "synth", "-ao", NULL };
	parse_run(&p, "ao:h", missing_short, 0);
	T_EQ_INT(p.n, 2);
	T_EQ_INT(p.ret[0], 'a');
	T_EQ_INT(p.ret[1], '?');
	expect_err(&p, "option '-o' needs a value");
	parse_free(&p);

	const char *no_value[] = { "doctor", "--json=yes", NULL };
	parse_run(&p, "h", no_value, 0);
	T_EQ_INT(p.ret[0], '?');
	expect_err(&p, "option '--json' takes no value");
	parse_free(&p);

	/* --all's val is 'a', which shortopts has */
	const char *no_value_letter[] = { "stat", "--all=1", NULL };
	parse_run(&p, "+ah", no_value_letter, 0);
	T_EQ_INT(p.ret[0], '?');
	expect_err(&p, "option '--all' takes no value");
	parse_free(&p);

	const char *ambiguous[] = { "verify", "--s", "1", NULL };
	parse_run(&p, "h", ambiguous, 0);
	T_EQ_INT(p.ret[0], '?');
	expect_err(&p, "option '--s' is ambiguous");
	parse_free(&p);

	/* what the user typed is escaped (mw_fail): no terminal control reaches stderr */
	const char *hostile[] = { "report", "--\x1b]0;x\x07", NULL };
	parse_run(&p, "h", hostile, 0);
	T_EQ_INT(p.ret[0], '?');
	T_ASSERT(p.err && !strchr(p.err, '\x1b') && !strchr(p.err, '\x07'));
	T_CONTAINS(p.err, "memwall report: unknown option '--");
	T_CONTAINS(p.err, "(memwall report --help lists them)\n");
	parse_free(&p);
}

/* A shortopts too long for struct mw_opt: a usage error naming the bug, no crash. */
static void test_too_long(void)
{
	char many[80];
	memset(many, 'a', sizeof(many) - 1);
	many[sizeof(many) - 1] = '\0';
	struct parse p;
	const char *args[] = { "verb", "-a", NULL };
	parse_run(&p, many, args, 0);
	T_EQ_INT(p.n, 1);
	T_EQ_INT(p.ret[0], '?');
	T_CONTAINS(p.err, "memwall verb: more short options than struct mw_opt holds");
	parse_free(&p);
	/* 62 characters fit, with the ':' and the NUL */
	many[62] = '\0';
	parse_run(&p, many, args, 0);
	T_EQ_INT(p.ret[0], 'a');
	T_EQ_INT(p.ret[1], -1);
	parse_free(&p);
}

/* Verbs parsed one after another in one process, each after a parse that stopped early. */
static void test_in_a_row(void)
{
	struct parse p;
	/* -h returns at once (usage), leaving "q" of the cluster unread... */
	const char *first[] = { "bundle", "-hq", NULL };
	parse_run(&p, "hq", first, 'h');
	T_EQ_INT(p.n, 1);
	T_EQ_INT(p.ret[0], 'h');
	parse_free(&p);
	/* ...which the next verb must not see (reset to the traditional 1, glibc returned '?'
	 * for it) */
	const char *second[] = { "calibrate", "--json", NULL };
	parse_run(&p, "h", second, 0);
	T_EQ_INT(p.n, 2);
	T_EQ_INT(p.ret[0], OPT_JSON);
	T_EQ_INT(p.ret[1], -1);
	T_EQ_STR(p.err, "");
	parse_free(&p);

	/* a '+' verb after one that permutes: reset to 1, glibc kept the first order and
	 * took -o of the command for stat's own */
	const char *permuting[] = { "db", "import", "--json", NULL };
	parse_run(&p, "ho:", permuting, 0);
	T_EQ_INT(p.ret[0], OPT_JSON);
	T_EQ_INT(p.ret[1], -1);
	T_EQ_STR(p.argv[p.optind_end], "import");
	parse_free(&p);
	const char *plus[] = { "stat", "-a", "cmd", "-o", "x", NULL };
	parse_run(&p, "+ao:h", plus, 0);
	T_EQ_INT(p.n, 2);
	T_EQ_INT(p.ret[0], 'a');
	T_EQ_INT(p.ret[1], -1);
	T_EQ_INT(p.optind_end, 2);
	parse_free(&p);
	/* and a permuting verb after the '+' one permutes again */
	const char *again[] = { "report", "r.json", "--json", NULL };
	parse_run(&p, "h", again, 0);
	T_EQ_INT(p.n, 2);
	T_EQ_INT(p.ret[0], OPT_JSON);
	T_EQ_INT(p.optind_end, 2);
	T_EQ_STR(p.argv[2], "r.json");
	parse_free(&p);
}

int main(void)
{
	test_accepts();
	test_refuses();
	test_too_long();
	test_in_a_row();
	return t_done();
}
