/* src/base/opt.c: the verbs' option parser (opt.h). */
#include <stdio.h>
#include <string.h>

#include "mw.h"
#include "opt.h"

void mw_opt_init(struct mw_opt *op, const char *verb, int argc, char **argv,
		 const char *shortopts, const struct option *longopts)
{
	size_t mode = shortopts[0] == '+' || shortopts[0] == '-';
	op->too_long = strlen(shortopts) + 2 > sizeof(op->shortopts);
	/* glibc reads the ':' only in first place or after the '+' or '-'. */
	memcpy(op->shortopts, shortopts, mode);
	op->shortopts[mode] = ':';
	snprintf(op->shortopts + mode + 1, sizeof(op->shortopts) - mode - 1, "%s",
		 op->too_long ? "" : shortopts + mode);
	op->verb = verb;
	op->argc = argc;
	op->argv = argv;
	op->longopts = longopts;
	/* 0, not the traditional 1: glibc then starts afresh, forgetting a short-option cluster
	 * the last scan left half read (`-hq` stopped at -h) and the last optstring's '+', which
	 * it otherwise keeps; it sets optind to 1 itself. */
	optind = 0;
	opterr = 0;
}

/* The long option a name typed after "--" (len bytes, up to any "=value") means: the one it
 * spells out in full (*n = 1), else the last of those it abbreviates, with their number in *n
 * (0: none, 2 or more: ambiguous). */
static const struct option *long_match(const struct option *lo, const char *name, size_t len,
				       int *n)
{
	const struct option *last = NULL;
	*n = 0;
	for (; lo && lo->name; lo++) {
		if (strncmp(lo->name, name, len))
			continue;
		if (!lo->name[len]) {
			*n = 1;
			return lo;
		}
		last = lo;
		++*n;
	}
	return last;
}

/* Says what was wrong with the option getopt_long refused (c is ':' or '?'). */
static void opt_complain(const struct mw_opt *op, int c)
{
	/* A long option's error always ends its argument, so it is argv[optind - 1]. A short
	 * one's may stop inside a cluster (-zq), where argv[optind - 1] is the argument before,
	 * so a short option is named by optopt. getopt_long refuses a long option with optopt 0
	 * when it is unknown or ambiguous, with its val (which may be a short option's letter)
	 * when its value is missing (then it is the last argument) or given to an option that
	 * takes none ("--json=x"). */
	const char *arg = optind > 0 && optind <= op->argc ? op->argv[optind - 1] : "";
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
	int n = 0;
	const struct option *lo = NULL;
	if (!strncmp(arg, "--", 2))
		lo = long_match(op->longopts, arg + 2, len - 2, &n);
	bool no_value = eq && n == 1 && lo->has_arg == no_argument;
	bool is_long = !strncmp(arg, "--", 2) &&
		       (c == ':' || optopt == 0 || (no_value && lo->val == optopt));
	char letter[3] = { '-', (char)optopt, '\0' };
	const char *name = is_long ? arg : letter;
	if (!is_long)
		len = 2;
	const char *what = c == ':' ? "needs a value" :
			   is_long && no_value ? "takes no value" :
			   is_long && n > 1 ? "is ambiguous" : NULL;
	if (what)
		mw_fail(MW_EXIT_USAGE, op->verb, "option '%.*s' %s (memwall %s --help lists them)",
			(int)len, name, what, op->verb);
	else
		mw_fail(MW_EXIT_USAGE, op->verb, "unknown option '%.*s' (memwall %s --help lists "
			"them)", (int)len, name, op->verb);
}

int mw_opt_next(struct mw_opt *op)
{
	if (op->too_long) {
		mw_fail(MW_EXIT_USAGE, op->verb, "more short options than struct mw_opt holds "
			"(src/base/opt.h): a bug; please report it");
		return '?';
	}
	int c = getopt_long(op->argc, op->argv, op->shortopts, op->longopts, NULL);
	if (c != ':' && c != '?')
		return c;
	opt_complain(op, c);
	return '?';
}

int mw_opt_none_left(const struct mw_opt *op)
{
	if (optind < op->argc)
		return mw_fail(MW_EXIT_USAGE, op->verb, "unexpected argument '%s'",
			       op->argv[optind]);
	return MW_EXIT_OK;
}
