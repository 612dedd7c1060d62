/* src/cli/cmd_export.c: `memwall export FORMAT RECORD`: a record in another project's own
 * submission format. One format so far, AIOS's (src/record/export_aios.h); another is one
 * row of the table below and its writer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_aios.h"
#include "file.h"
#include "mw.h"
#include "opt.h"
#include "result.h"
#include "verbs.h"

#define VERB "export"

struct export_opts {
	const char *out; /* -o FILE, or NULL: stdout */
	bool force;      /* replace FILE when it is a regular file */
	bool comment;    /* the issue comment instead of the JSON */
};

/* Writes doc in the format into f; 0, or -errno with err saying why it cannot be written. */
typedef int (*export_fn)(FILE *f, const json_t *doc, const char *source,
			 const struct export_opts *o, struct mw_error *err);

static int export_aios(FILE *f, const json_t *doc, const char *source,
		       const struct export_opts *o, struct mw_error *err)
{
	json_t *aios = NULL;
	int rc = mw_export_aios(doc, source, &aios, err);
	if (rc)
		return rc;
	if (o->comment)
		mw_export_aios_comment(f, doc, aios);
	else if (json_dumpf(aios, f, MW_EXPORT_AIOS_JSON_FLAGS) == 0)
		fputc('\n', f);
	json_decref(aios);
	return 0;
}

static const struct {
	const char *name;
	export_fn run;
} formats[] = {
	{ "aios", export_aios },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall export aios RECORD [-o FILE] [--force] [--comment]\n\n"
		"Writes a result record in AIOS's own submission shape (acasavaraju/AIOS, issue\n"
		"#2): the {\"baseline\": {...}} object its validation/baseline.py v1.4 writes, with\n"
		"its fields, its units and its rounding. AIOS's MB is MiB (2^20 bytes) and its GB\n"
		"GiB (2^30 bytes): memwall's MB (10^6 bytes) is converted (x 10^6 / 2^20) and the\n"
		"notes say so. What memwall measured differently from baseline.py (decode traffic\n"
		"of every memory controller, the idle machine's share subtracted, rather than one\n"
		"counter's whole process) is said in notes, with the DRAM counts' provenance\n"
		"(hardware, verified or not, calibrated with its error).\n\n"
		"A record whose DRAM counts are SIMULATED (MEMWALL_COUNTERS=sim) or were not\n"
		"measured is never exported as a measured baseline: it is written as baseline.py\n"
		"writes a run without a DRAM counter, mb_per_token null, perf_available false,\n"
		"counter_used null and the reason in notes; its tok/s is kept, and the pass\n"
		"criterion falls back to the tok/s CV, as baseline.py's does. A field memwall did\n"
		"not record (an L3 a VM hides) is null, named in notes: never 0 or \"Unknown\".\n"
		"An imported reference record, a record of several variants and a record with no\n"
		"complete measured run are refused (exit 2), with why.\n\n"
		"  -o, --output FILE  write FILE (a temporary file beside it, then a rename) instead\n"
		"                     of stdout; an existing FILE is refused without --force\n"
		"  --force            replace FILE when it is a regular file (never a symbolic\n"
		"                     link, a folder, a FIFO or a device)\n"
		"  --comment          the Markdown comment AIOS's issue #2 asks for instead: the\n"
		"                     header (Hardware, OS, Model, AIOS version), the command, the\n"
		"                     figures with their provenance, the notes, and the JSON in a\n"
		"                     <details> block\n\n"
		"Exit: 0 written; 2 bad usage, a record that cannot be exported (why is said), or\n"
		"FILE exists or is not a regular file; 3 cannot write FILE.\n");
}

/* The output into memory, then to stdout or atomically to FILE. */
static int emit(export_fn run, const json_t *doc, const char *source,
		const struct export_opts *o)
{
	struct mw_error err;
	char *buf = NULL;
	size_t len = 0;
	int rc;
	FILE *mem = open_memstream(&buf, &len);
	mw_error_clear(&err);
	if (!mem)
		return mw_fail(MW_EXIT_ENV, VERB, "out of memory");
	rc = run(mem, doc, source, o, &err);
	if (fclose(mem) && !rc)
		rc = mw_error_set(&err, -ENOMEM, source, "", "out of memory");
	if (rc) {
		mw_error_print(&err);
		free(buf);
		return rc == -ENOMEM ? MW_EXIT_ENV : MW_EXIT_USAGE;
	}
	if (o->out) {
		rc = mw_file_write_atomic(o->out, "-o", buf, len, o->force, &err);
		if (rc)
			mw_error_print(&err);
		else
			fprintf(stderr, "memwall " VERB ": wrote %s\n", o->out);
	} else if (fwrite(buf, 1, len, stdout) != len || fflush(stdout)) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "cannot write to stdout: %s", strerror(errno));
		free(buf);
		return rc;
	}
	free(buf);
	return !rc ? MW_EXIT_OK : rc == -EEXIST || rc == -EINVAL ? MW_EXIT_USAGE : MW_EXIT_ENV;
}

int mw_cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'F' },
		{ "comment", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct export_opts o = { 0 };
	struct mw_error err;
	json_t *doc = NULL;
	int c, rc;
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "o:h", opts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case 'o':
			o.out = optarg;
			break;
		case 'F':
			o.force = true;
			break;
		case 'c':
			o.comment = true;
			break;
		case 'h':
			usage(stdout);
			return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return MW_EXIT_USAGE;
	}
	export_fn run = NULL;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(argv[optind], formats[i].name))
			run = formats[i].run;
	if (!run)
		return mw_fail(MW_EXIT_USAGE, VERB, "unknown format '%s': the one there is is aios "
			       "(memwall export --help)", argv[optind]);
	const char *path = argv[optind + 1];
	mw_error_clear(&err);
	if ((rc = mw_result_load(&doc, path, &err))) {
		mw_error_print(&err);
		return MW_EXIT_USAGE;
	}
	rc = mw_result_validate(doc, path, &err);
	if (rc == MW_RESULT_MALFORMED || (rc && rc != MW_RESULT_INCONSISTENT)) {
		mw_error_print(&err);
		json_decref(doc);
		return MW_EXIT_USAGE;
	}
	/* A figure that disagrees with the raw data is not one to submit anywhere. */
	if (rc) {
		mw_error_print(&err);
		json_decref(doc);
		return mw_fail(MW_EXIT_USAGE, VERB, "%s does not validate (its figures disagree "
			       "with its raw data: `memwall validate %s` says where): not exported",
			       path, path);
	}
	rc = emit(run, doc, path, &o);
	json_decref(doc);
	return rc;
}
