/* src/base/opt.h: the verbs' option parser, getopt_long with one error style (issue 41).
 *
 * Every verb parses its options the same way:
 *
 *	struct mw_opt op;
 *	mw_opt_init(&op, VERB, argc, argv, "o:h", longopts);
 *	while ((c = mw_opt_next(&op)) != -1) {
 *		switch (c) {
 *		case 'o': out = optarg; break;
 *		case 'h': usage(stdout); return MW_EXIT_OK;
 *		default: return MW_EXIT_USAGE; // '?': mw_opt_next has said what was wrong
 *		}
 *	}
 *	// the operands are argv[optind] .. argv[argc - 1]
 *
 * A mistyped option gets one line on stderr, in one style, always with the hint:
 *	memwall VERB: unknown option '--x' (memwall VERB --help lists them)
 *	memwall VERB: option '--x' needs a value (memwall VERB --help lists them)
 *	memwall VERB: option '--x' takes no value (memwall VERB --help lists them)
 *	memwall VERB: option '--x' is ambiguous (memwall VERB --help lists them)
 * naming the option as typed (a short one as '-x', a long one without its "=value"). */
#ifndef MEMWALL_OPT_H
#define MEMWALL_OPT_H

#include <getopt.h>
#include <stdbool.h>

struct mw_opt {
	const char *verb;             /* as messages name it: "memwall VERB: ..." */
	int argc;
	char **argv;                  /* argv[0] is the verb; getopt_long may permute the rest */
	const struct option *longopts;
	char shortopts[64];           /* the caller's, with ':' after any leading '+' or '-' */
	bool too_long;                /* the caller's did not fit: a bug mw_opt_next reports */
};

/* Starts a parse of argv[1..argc-1]: a fresh getopt_long scan (optind reset, as glibc wants for
 * a second scan in one process: a verb parsed after another, in a test or a subcommand),
 * opterr = 0 (mw_opt_next says what was wrong), and ':' put into shortopts so a missing value
 * is told from an unknown option. shortopts is written as for getopt_long, without the ':'; a
 * leading '+' (stop at the first operand, as `memwall stat CMD...` needs) or '-' is kept.
 * verb, argv and longopts are borrowed for the parse. A shortopts of more than 62 characters is
 * a bug that mw_opt_next reports as a usage error (every verb's parse runs in test_cli). */
void mw_opt_init(struct mw_opt *op, const char *verb, int argc, char **argv,
		 const char *shortopts, const struct option *longopts);
/* The next option, as getopt_long returns it (optarg holds its value), or -1 after the last
 * (optind is then the first operand). On a mistyped option (unknown, ambiguous, missing its
 * value or given one it does not take) it prints the one line above to stderr and returns
 * '?': the caller returns MW_EXIT_USAGE without printing more. ':' is never returned. */
int mw_opt_next(struct mw_opt *op);
/* After the options, for a verb that takes no operands: MW_EXIT_OK when none is left at
 * argv[optind], else prints "memwall VERB: unexpected argument 'x'" and returns MW_EXIT_USAGE. */
int mw_opt_none_left(const struct mw_opt *op);

#endif
