/* src/cli/cmd_bench_kernels.c: `memwall bench-kernels`, the kernel choice that follows
 * measurement (issue 42).
 *
 * Times every quant table this CPU runs on each weight type's x8 kernels at 1, 2, 4 and 8
 * tokens a call (engine.h's eng_kbench_run), prints the rates side by side, and caches the
 * fastest table per type and token count in the state folder, keyed by this machine's
 * fingerprint and memwall's version (run/kernel_cache.h), where generate and run find it. A
 * table other than the default is chosen only when it is faster by more than --margin: the
 * rounds' spread on a shared machine is a few percent, and without a clear gain the default
 * stays.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dram_calibration.h"
#include "engine.h"
#include "file.h"
#include "kernel_cache.h"
#include "metrics.h"
#include "mw.h"
#include "opt.h"
#include "verbs.h"

#define VERB "bench-kernels"
#define MAX_TYPES 16

/* Every weight type with an x8 layout, in the order printed */
static const char *const all_types[] = { "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K",
					 "q3_K", "q4_K", "q5_K", "q6_K", "f16",  "bf16" };
#define N_ALL (sizeof(all_types) / sizeof(all_types[0]))

struct options {
	const char *types[MAX_TYPES];
	int n_types;
	struct eng_kbench_options kb;
	double margin; /* fraction */
	const char *out;
	bool dry_run, json;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall bench-kernels [--types LIST] [--mb MB] [--columns N] [--rounds N]\n"
		"                             [--margin PCT] [--out FILE] [--dry-run] [--json]\n\n"
		"Times every quant table this CPU runs on each weight type's x8 kernels (the\n"
		"layout --load repack reads) at 1, 2, 4 and 8 tokens a call (a decode step, a\n"
		"batch of 2 or 4 sequences, a prompt's chunk from 8), prints the rates side by\n"
		"side, and caches the fastest table per type and token count in the state folder\n"
		"(kernels.json), keyed by this machine's fingerprint and memwall's version.\n"
		"generate and run with the default kernels then run each operation on its\n"
		"fastest table (their record says which: engine.op_kernels); with --kernels NAME,\n"
		"another fingerprint or another version the cache is not used, and they say why.\n"
		"Every table gives the same bits for a type's x8 weights, so a choice changes\n"
		"speed only. One thread; pin it (taskset -c N) on a quiet machine.\n\n"
		"  --types LIST   weight types, comma-separated (default: all with an x8 layout:\n"
		"                 q4_0,q4_1,q5_0,q5_1,q8_0,q2_K,q3_K,q4_K,q5_K,q6_K,f16,bf16)\n"
		"  --mb MB        MB of weights a pass reads (default 128: past the last-level\n"
		"                 cache, as a decode step streams them)\n"
		"  --columns N    row length (default 4096)\n"
		"  --rounds N     rounds, each timing every table once (default 7, at most %d)\n"
		"  --margin PCT   how much faster than the default table another must be, as the\n"
		"                 median of its per-round ratios, to be chosen (default 3)\n"
		"  --out FILE     the cache to write (default: the state folder's kernels.json)\n"
		"  --dry-run      measure and print; write nothing\n"
		"  --json         print the cache document on stdout instead of the table\n\n"
		"Rates are GB of weights times tokens per second (what that many one-token passes\n"
		"would stream), medians over the rounds.\n",
		ENG_KBENCH_ROUNDS_MAX);
}

static int add_types(struct options *o, const char *list)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", list);
	o->n_types = 0;
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		size_t i;
		for (i = 0; i < N_ALL && strcmp(all_types[i], tok); i++)
			;
		if (i == N_ALL)
			return mw_fail(MW_EXIT_USAGE, VERB,
				       "--types: '%s' is not a weight type with an x8 layout (one "
				       "of q4_0,q4_1,q5_0,q5_1,q8_0,q2_K,q3_K,q4_K,q5_K,q6_K,f16,bf16)",
				       tok);
		if (o->n_types == MAX_TYPES)
			return mw_fail(MW_EXIT_USAGE, VERB, "--types: at most %d", MAX_TYPES);
		o->types[o->n_types++] = all_types[i];
	}
	return o->n_types ? MW_EXIT_OK
			  : mw_fail(MW_EXIT_USAGE, VERB, "--types: name at least one type");
}

static int parse(int argc, char **argv, struct options *o, bool *help)
{
	enum { OPT_TYPES = 256, OPT_MB, OPT_COLUMNS, OPT_ROUNDS, OPT_MARGIN, OPT_OUT, OPT_DRY,
	       OPT_JSON };
	static const struct option longopts[] = {
		{ "types", required_argument, NULL, OPT_TYPES },
		{ "mb", required_argument, NULL, OPT_MB },
		{ "columns", required_argument, NULL, OPT_COLUMNS },
		{ "rounds", required_argument, NULL, OPT_ROUNDS },
		{ "margin", required_argument, NULL, OPT_MARGIN },
		{ "out", required_argument, NULL, OPT_OUT },
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long v;
	double d;
	int c, rc;
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "h", longopts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case OPT_TYPES:
			if ((rc = add_types(o, optarg)))
				return rc;
			break;
		case OPT_MB:
			if (mw_parse_double(optarg, 0.01, 65536, &d) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB, "--mb '%s': want MB from 0.01 "
					       "to 65536", optarg);
			o->kb.mb = d;
			break;
		case OPT_COLUMNS:
			if (mw_parse_long(optarg, 256, 1L << 20, &v) < 0 || v % 256)
				return mw_fail(MW_EXIT_USAGE, VERB, "--columns '%s': want a multiple "
					       "of 256 (every type's block) from 256 to 1048576",
					       optarg);
			o->kb.columns = (size_t)v;
			break;
		case OPT_ROUNDS:
			if (mw_parse_long(optarg, 1, ENG_KBENCH_ROUNDS_MAX, &v) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB, "--rounds '%s': want 1 to %d",
					       optarg, ENG_KBENCH_ROUNDS_MAX);
			o->kb.rounds = (int)v;
			break;
		case OPT_MARGIN:
			if (mw_parse_double(optarg, 0, 100, &d) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB, "--margin '%s': want a percentage "
					       "from 0 to 100", optarg);
			o->margin = d / 100;
			break;
		case OPT_OUT:
			o->out = optarg;
			break;
		case OPT_DRY:
			o->dry_run = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case 'h':
			*help = true;
			return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	return mw_opt_none_left(&op);
}

/* The index in kb->r of the table to run: the fastest by its median ratio to the default
 * (r[0]), when that beats 1 + margin; the default otherwise. */
static int winner(const struct eng_kbench *kb, double margin)
{
	int best = 0;
	for (int i = 1; i < kb->n; i++)
		if (kb->r[i].ratio > 1 + margin && kb->r[i].ratio > kb->r[best].ratio)
			best = i;
	return best;
}

/* The table's header: every quant table this CPU runs, best first */
static void print_header(void)
{
	printf("%-5s %6s", "type", "tokens");
	const char *name;
	for (size_t i = 0; (name = eng_quant_kernels_name(i, NULL, NULL)); i++)
		printf("  %9s GB/s", name);
	printf("  %s\n", "chosen");
}

/* One type's rows; a table without x8 kernels for the type shows "-" */
static void print_type(const char *type, const struct eng_kbench *kb, double margin)
{
	for (int c = 0; c < ENG_KC_CLASSES; c++) {
		printf("%-5s %6d", type, kb[c].tokens);
		const char *name;
		for (size_t i = 0; (name = eng_quant_kernels_name(i, NULL, NULL)); i++) {
			int k;
			for (k = 0; k < kb[c].n && strcmp(kb[c].r[k].table, name); k++)
				;
			if (k == kb[c].n)
				printf("  %14s", "-");
			else if (k == 0)
				printf("  %14.2f", kb[c].r[k].gbs);
			else
				printf("  %7.2f %5.2fx", kb[c].r[k].gbs, kb[c].r[k].ratio);
		}
		printf("  %s\n", kb[c].r[winner(&kb[c], margin)].table);
	}
	fflush(stdout);
}

/* choice and rates entries of one type */
static int add_type(json_t *choice, json_t *rates, const char *type, const struct eng_kbench *kb,
		    double margin)
{
	json_t *ch = json_object(), *rt = json_object();
	for (int c = 0; ch && rt && c < ENG_KC_CLASSES; c++) {
		char k[8];
		snprintf(k, sizeof(k), "%d", kb[c].tokens);
		json_t *per = json_object();
		for (int i = 0; per && i < kb[c].n; i++)
			json_object_set_new(per, kb[c].r[i].table, mw_json_num(kb[c].r[i].gbs));
		json_object_set_new(rt, k, per ? per : json_null());
		json_object_set_new(ch, k, json_string(kb[c].r[winner(&kb[c], margin)].table));
	}
	if (!ch || !rt || json_object_set_new(choice, type, ch) ||
	    json_object_set_new(rates, type, rt))
		return -ENOMEM;
	return 0;
}

/* The cache's path: --out, or the state folder's; an existing file must be a kernel cache */
static int out_path(const struct options *o, char *path, size_t n)
{
	struct mw_error err;
	mw_error_clear(&err);
	if (o->out)
		snprintf(path, n, "%s", o->out);
	else if (mw_kcache_path(path, n, &err)) {
		mw_error_print(&err);
		return MW_EXIT_ENV;
	}
	FILE *f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? MW_EXIT_OK
				       : mw_fail(MW_EXIT_ENV, VERB, "%s: %s", path, strerror(errno));
	json_error_t jerr;
	json_t *doc = json_loadf(f, 0, &jerr);
	fclose(f);
	const char *schema = json_string_value(json_object_get(doc, "schema"));
	bool ours = schema && !strcmp(schema, MW_KCACHE_SCHEMA);
	json_decref(doc);
	return ours ? MW_EXIT_OK
		    : mw_fail(MW_EXIT_USAGE, VERB, "%s exists and is not a kernel cache (schema "
			      "\"%s\"): it is left alone; give another --out, or remove it", path,
			      MW_KCACHE_SCHEMA);
}

static int save(const struct options *o, json_t *doc, const char *path)
{
	struct mw_error err;
	mw_error_clear(&err);
	if (mw_json_write_atomic(path, doc, "the kernel cache", &err)) {
		mw_error_print(&err);
		return MW_EXIT_ENV;
	}
	if (!o->json)
		fprintf(stderr, "memwall %s: stored in %s (machine fingerprint %.12s)\n", VERB,
			path, json_string_value(json_object_get(doc, "fingerprint_sha256")));
	return MW_EXIT_OK;
}

/* The cache document around choice and rates */
static json_t *cache_doc(const struct options *o, const struct eng_kbench *kb, json_t *choice,
			 json_t *rates)
{
	char sha[65], now[32], method[512];
	json_t *fp = mw_kcache_fingerprint(sha);
	if (!fp)
		return NULL;
	snprintf(method, sizeof(method),
		 "each table's x8 kernel over %zu rows of %zu columns (%.1f MB of weights a "
		 "pass), 1, 2, 4 and 8 tokens a call, one thread; %d rounds each timing every "
		 "table once in a rotating order; medians; a table other than the default chosen "
		 "when the median of its per-round ratios to the default exceeds %.3g",
		 kb->rows, kb->columns, kb->mb, kb->rounds, 1 + o->margin);
	mw_utc_now(now, sizeof(now), false);
	return json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:s, s:O, s:O}", "schema",
			 MW_KCACHE_SCHEMA, "created_utc", now, "memwall_version", mw_version(),
			 "fingerprint", fp, "fingerprint_sha256", sha, "method", method, "default",
			 eng_quant_kernels_name(0, NULL, NULL), "choice", choice, "rates", rates);
}

int mw_cmd_bench_kernels(int argc, char **argv)
{
	struct options o = { .margin = 0.03 };
	bool help = false;
	int rc = parse(argc, argv, &o, &help);
	char path[4096] = "";
	json_t *choice = json_object(), *rates = json_object(), *doc = NULL;
	struct eng_kbench kb[ENG_KC_CLASSES];
	int measured = 0;
	if (rc != MW_EXIT_OK || help) {
		if (help)
			usage(stdout);
		goto out;
	}
	if (!o.n_types)
		for (size_t i = 0; i < N_ALL; i++)
			o.types[o.n_types++] = all_types[i];
	if (!o.dry_run && (rc = out_path(&o, path, sizeof(path))))
		goto out;
	if (!o.json)
		print_header();
	for (int i = 0; i < o.n_types; i++) {
		struct eng_error eerr;
		eng_error_clear(&eerr);
		int e = eng_kbench_run(o.types[i], &o.kb, kb, &eerr);
		if (e == -ENOTSUP) { /* no table has x8 kernels for it here: nothing to choose */
			if (!o.json)
				printf("%-5s   (no x8 kernels on this CPU: %s)\n", o.types[i], eerr.text);
			continue;
		}
		if (e) {
			rc = mw_fail(e == -ENOMEM ? MW_EXIT_ENV : MW_EXIT_USAGE, VERB, "%s: %s",
				     o.types[i], eerr.text);
			goto out;
		}
		measured++;
		if (!o.json)
			print_type(o.types[i], kb, o.margin);
		if (!choice || !rates || add_type(choice, rates, o.types[i], kb, o.margin)) {
			rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
			goto out;
		}
	}
	if (!o.json)
		printf("(a rate against the first table's: the median of the rounds' ratios; -: no "
		       "x8 kernels of its own for the type, never chosen)\n");
	if (!measured) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "no quant table this CPU runs has x8 kernels for "
			     "the types asked: there is nothing to choose between");
		goto out;
	}
	if (!(doc = cache_doc(&o, kb, choice, rates))) {
		rc = mw_fail(MW_EXIT_ENV, VERB, "out of memory");
		goto out;
	}
	if (o.json) {
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
	}
	rc = o.dry_run ? MW_EXIT_OK : save(&o, doc, path);
out:
	json_decref(doc);
	json_decref(choice);
	json_decref(rates);
	return rc;
}
