/* src/cli/cmd_version.c: `memwall version` (also `memwall --version`). */
#include <stdio.h>
#include <string.h>

#include "mw.h"
#include "verbs.h"

int mw_cmd_version(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: memwall version\n\n"
		       "Prints the version, the git commit it was built from (+dirty when the tree had\n"
		       "uncommitted changes) and the build configuration.\n");
		return MW_EXIT_OK;
	}
	if (argc > 1)
		return mw_fail(MW_EXIT_USAGE, "version", "unexpected argument '%s'", argv[1]);
	printf("memwall %s\n", mw_version());
	printf("build: %s, kernels=%s, libperf=%s, cc=%s\n", MW_BUILDTYPE, MW_KERNELS_OPTION,
	       MW_HAVE_LIBPERF ? "yes" : "no", MW_CC);
	return MW_EXIT_OK;
}
