/* src/cli/cmd_bundle.c: `memwall bundle`: records, charts, provenance and sha256 sums in one
 * archive to attach to an issue (src/record/bundle.h). */
#include <stdio.h>

#include "bundle.h"
#include "mw.h"
#include "opt.h"
#include "result.h"
#include "verbs.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: memwall bundle RECORD... -o FILE.tar.gz\n\n"
		   "Writes one tar.gz to submit results: records/ (each record, validated first),\n"
		   "plots/ (its `memwall report --plot` charts; without gnuplot the manifest says\n"
		   "so), provenance.md (machine, memory configuration, kernel, counters, memwall\n"
		   "version of each record) and manifest.json (every file's sha256 and size).\n"
		   "`memwall validate FILE.tar.gz` checks a bundle. FILE is never replaced.\n"
		   "Exit: 0 written, 1 a record does not validate, 2 bad usage or input.\n");
}

int mw_cmd_bundle(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL;
	struct mw_error err;
	int c;
	struct mw_opt op;
	mw_opt_init(&op, "bundle", argc, argv, "ho:", opts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			usage(stdout);
			return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	if (!out || optind >= argc) {
		usage(stderr);
		return MW_EXIT_USAGE;
	}
	mw_error_clear(&err);
	int rc = mw_bundle_write((const char *const *)(argv + optind), argc - optind, out, stderr,
				 &err);
	if (rc) {
		mw_error_print(&err);
		return rc == MW_RESULT_INCONSISTENT ? MW_EXIT_CHECK : MW_EXIT_USAGE;
	}
	printf("%s: bundle of %d record%s written (check it with memwall validate %s)\n", out,
	       argc - optind, argc - optind == 1 ? "" : "s", out);
	return MW_EXIT_OK;
}
