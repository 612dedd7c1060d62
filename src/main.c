/* src/main.c: memwall's entry point; dispatches to the verb table in verbs.h. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "mw.h"
#include "verbs.h"

struct verb {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

static const struct verb verbs[] = {
#define MW_VERB_ENTRY(vname, vsummary) { .name = #vname, .summary = vsummary, .run = mw_cmd_##vname },
	MW_VERBS(MW_VERB_ENTRY)
#undef MW_VERB_ENTRY
};

/* A verb's table name with '_' typed as '-': C names cannot hold a hyphen, commands do. */
static bool verb_is(const char *table_name, const char *typed)
{
	for (; *table_name && *typed; table_name++, typed++)
		if (*table_name != *typed && !(*table_name == '_' && *typed == '-'))
			return false;
	return *table_name == *typed;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: memwall <verb> [options]    (memwall <verb> --help for each verb)\n\n"
		   "Measures DRAM bytes per generated token of LLM inference, from the memory\n"
		   "controllers' own counters, with tok/s, run-to-run variation and roofline headroom.\n\n"
		   "verbs:\n");
	/* One column for the summaries, as wide as the longest verb (sparsity-calibrate), each
	 * summary wrapped at 80 columns under it (issue 44: the column broke there). */
	int width = 0;
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if ((int)strlen(verbs[i].name) > width)
			width = (int)strlen(verbs[i].name);
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		char shown[32];
		snprintf(shown, sizeof(shown), "%s", verbs[i].name);
		for (char *c = shown; *c; c++)
			*c = *c == '_' ? '-' : *c;
		fprintf(f, "  %-*s", width, shown);
		int col = 2 + width;
		for (const char *w = verbs[i].summary; *w;) {
			int len = (int)strcspn(w, " ");
			if (col + 1 + len > 80 && col > 3 + width) {
				fprintf(f, "\n%*s", 2 + width, "");
				col = 2 + width;
			}
			fprintf(f, " %.*s", len, w);
			col += 1 + len;
			w += len;
			w += strspn(w, " ");
		}
		fputc('\n', f);
	}
	fprintf(f, "\nexit codes: 0 ok, 1 a check failed, 2 bad usage or input, "
		   "3 the environment cannot do what was asked\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return MW_EXIT_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
		usage(stdout);
		return MW_EXIT_OK;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "-V"))
		name = "version";

	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (verb_is(verbs[i].name, name))
			return verbs[i].run(argc - 1, argv + 1);

	fprintf(stderr, "memwall: unknown verb '%s'\n\n", name);
	usage(stderr);
	return MW_EXIT_USAGE;
}
