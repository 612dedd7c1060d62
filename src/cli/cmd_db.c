/* src/cli/cmd_db.c: `memwall db`: the results store (src/record/store.h): import, list, show,
 * query and compare records across machines, in SQLite (a file) or PostgreSQL (a URL). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "db_rows.h"
#include "mw.h"
#include "opt.h"
#include "site.h"
#include "report.h"
#include "result.h"
#include "store.h"
#include "text.h"
#include "verbs.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: memwall db [--db FILE|URL] import RECORD...\n"
		   "       memwall db [--db FILE|URL] list [--format md|csv|json]\n"
		   "       memwall db [--db FILE|URL] show ID [--format md|json]\n"
		   "       memwall db [--db FILE|URL] query [FILTERS] [--format md|csv|json]\n"
		   "       memwall db [--db FILE|URL] compare [FILTERS] [--format md|csv|json]\n"
		   "       memwall db [--db FILE|URL] series [--format md|csv|json]\n"
		   "       memwall db [--db FILE|URL] check RECORD [--against last:N|since:DATE|"
		   "record:ID]\n"
		   "                  [--metric NAME]... [--min-records N] [--max-regress PCT]\n"
		   "                  [--format md|json|junit]\n"
		   "       memwall db [--db FILE|URL] changes [--series ID] [--metric NAME]... "
		   "[--penalty K]\n"
		   "                  [--format md|json]\n"
		   "       memwall db [--db FILE|URL] site -o DIR [--force]\n\n"
		   "A store of result records. --db is an SQLite file (default: $MEMWALL_DB, else\n"
		   "$XDG_DATA_HOME/memwall/results.db, else ~/.local/share/memwall/results.db) or a\n"
		   "postgresql://user@host/database URL for a store a fleet shares.\n"
		   "  import   validates each record and stores it under the sha256 of its bytes;\n"
		   "           importing a record again changes nothing\n"
		   "  list     every record: id, date, protocol, model, machine, tok/s, DRAM MB/token\n"
		   "  show     one record (its id or the first 6+ digits): the report, or --format json\n"
		   "           for the record itself\n"
		   "  query    the records that pass the filters\n"
		   "  compare  one row per protocol, model and machine, with its memory configuration:\n"
		   "           records, mean tok/s and range, DRAM MB/token, tok/s relative to the\n"
		   "           fastest machine\n"
		   "  series   one row per series (records of one machine fingerprint, protocol,\n"
		   "           model, engine build and DRAM counter layer; src/README.md, \"A series\"): id,\n"
		   "           records, first and last date, the latest MB/token and tok/s, provenance\n"
		   "  check    RECORD (a file, or an id in the store) against the pooled runs of the\n"
		   "           earlier records of its series (--against: the last N, default 10; those\n"
		   "           since DATE; one record): Mann-Whitney U (exact for small samples) beside\n"
		   "           Welch's t, the change of the medians against the protocol's tolerance\n"
		   "           (tolerance_pct, else 5 %%; --max-regress replaces it). Metrics: --metric,\n"
		   "           repeatable (default dram_MB_per_token and tok_per_s), each required.\n"
		   "           Verdicts and formats are compare's. Exit: 0 no regression, 1 a metric\n"
		   "           regressed, 2 not comparable (no store yet, no earlier record of its\n"
		   "           series, fewer than --min-records (2), bad usage), 3 a required metric\n"
		   "           not measured or not comparable (or the store cannot be opened), 4 a\n"
		   "           required metric inconclusive\n"
		   "  changes  steps in each series' history of per-record medians (--series ID: one;\n"
		   "           --metric: default dram_MB_per_token and tok_per_s): penalized L1 optimal\n"
		   "           partitioning, segments of at least 3 records, penalty K (default 3) x\n"
		   "           noise sd x ln(records); each step with the last record before it and the\n"
		   "           first after (id, date, engine version), its size and its evidence\n"
		   "  site     the trend site: DIR/index.html lists the series, DIR/series/ID.html\n"
		   "           shows one over its records (MB/token, tok/s, %% of the bandwidth roof;\n"
		   "           each point linked to its record, DIR/records/ID.json; steps marked;\n"
		   "           provenance named). Static HTML and SVG, no script: opens from file://.\n"
		   "           DIR is made whole or not at all; a folder of other files is refused\n"
		   "           (--force replaces it, its contents removed); a site memwall wrote is\n"
		   "           replaced\n"
		   "FILTERS: --protocol NAME, --backend KIND (engine.kind: builtin, llama.cpp, ...),\n"
		   "  --model TEXT and --machine TEXT (substrings, any case), --since DATE, --until DATE\n"
		   "  (ISO 8601, against the record's created_utc; --until includes its day).\n"
		   "Exit (but check's): 0 done, 1 a record did not validate, 2 bad usage or input,\n"
		   "3 the store cannot be opened (none at that path for list, show, query or\n"
		   "compare; a server that refuses).\n");
}

/* ---- sub-verbs ----------------------------------------------------------------------------- */

static int db_import(struct mw_store *s, struct db_args *a)
{
	int worst = MW_EXIT_OK, added = 0, known = 0;
	if (a->nops < 1)
		return mw_fail(MW_EXIT_USAGE, "db import", "name at least one record to import");
	for (int i = 0; i < a->nops; i++) {
		struct mw_error err;
		char sha[65];
		bool was_added = false;
		mw_error_clear(&err);
		int rc = mw_store_import(s, a->ops[i], sha, &was_added, &err);
		if (rc) {
			mw_error_print(&err);
			int code = rc == MW_RESULT_INCONSISTENT ? MW_EXIT_CHECK
				   : rc == -EIO ? MW_EXIT_ENV : MW_EXIT_USAGE;
			worst = code > worst ? code : worst;
			continue;
		}
		printf("%s: %s %.12s\n", mw_esc(a->ops[i]), was_added ? "imported as" : "already stored as",
		       sha);
		was_added ? added++ : known++;
	}
	printf("memwall db: %d imported, %d already there, %d refused\n", added, known,
	       a->nops - added - known);
	return worst;
}

/* dram_source beside every DRAM figure: "SIMULATED (...)", "hardware (...)" or
 * "engine-accounted only" (provenance.h). */
static const char *const list_keys[] = { "id", "created_utc", "protocol", "model", "machine",
					 "backend", "acceptance", "tok_per_s",
					 "dram_MB_per_token", "dram_source" };
static const char *const query_keys[] = { "id", "created_utc", "protocol", "model", "machine",
					  "memory", "backend", "kind", "acceptance", "tok_per_s",
					  "dram_MB_per_token", "dram_source" };
static const char *const compare_keys[] = { "protocol", "model", "machine", "memory",
					    "dram_source", "records", "tok_per_s",
					    "tok_per_s_min", "tok_per_s_max",
					    "dram_MB_per_token", "relative_tok_per_s" };
#define NKEYS(k) (sizeof(k) / sizeof((k)[0]))

static int db_rows(struct mw_store *s, struct db_args *a, bool compare, bool list)
{
	struct mw_error err;
	json_t *rows = NULL;
	if (a->nops)
		return mw_fail(MW_EXIT_USAGE, "db", "unexpected argument '%s'", a->ops[0]);
	mw_error_clear(&err);
	int rc = compare ? mw_store_compare(s, &a->f, &rows, &err)
			 : mw_store_query(s, list ? NULL : &a->f, &rows, &err);
	if (rc) {
		mw_error_print(&err);
		return rc == -EINVAL ? MW_EXIT_USAGE : MW_EXIT_ENV; /* -EINVAL: a filter */
	}
	if (compare)
		mw_db_print_rows(stdout, rows, compare_keys, NKEYS(compare_keys), a->fmt);
	else if (list)
		mw_db_print_rows(stdout, rows, list_keys, NKEYS(list_keys), a->fmt);
	else
		mw_db_print_rows(stdout, rows, query_keys, NKEYS(query_keys), a->fmt);
	if (a->fmt == MW_FORMAT_MD && json_array_size(rows) == 0)
		fprintf(stderr, "memwall db: no records%s (import some: memwall db import "
				"RECORD...)\n", list ? "" : " pass these filters");
	json_decref(rows);
	return MW_EXIT_OK;
}

static int db_list(struct mw_store *s, struct db_args *a)
{
	return db_rows(s, a, false, true);
}

static int db_query(struct mw_store *s, struct db_args *a)
{
	return db_rows(s, a, false, false);
}

static int db_compare(struct mw_store *s, struct db_args *a)
{
	return db_rows(s, a, true, false);
}

static int db_show(struct mw_store *s, struct db_args *a)
{
	struct mw_error err;
	json_t *doc = NULL;
	char sha[65];
	if (a->nops != 1)
		return mw_fail(MW_EXIT_USAGE, "db show", "give one record id (memwall db list shows "
			       "them)");
	mw_error_clear(&err);
	int rc = mw_store_show(s, a->ops[0], &doc, sha, &err);
	if (rc) {
		mw_error_print(&err);
		return rc == -EIO ? MW_EXIT_ENV : MW_EXIT_USAGE;
	}
	if (a->fmt == MW_FORMAT_JSON) {
		json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
		fputc('\n', stdout);
	} else {
		printf("record %s\n\n", mw_esc(sha));
		mw_report_print(stdout, doc, MW_FORMAT_MD);
	}
	json_decref(doc);
	return MW_EXIT_OK;
}

static int db_site(struct mw_store *s, struct db_args *a)
{
	struct mw_error err;
	struct mw_site_result res;
	const char *inputs[1] = { mw_store_file(s) };
	if (a->nops)
		return mw_fail(MW_EXIT_USAGE, "db site", "unexpected argument '%s' (the folder is "
			       "-o DIR)", a->ops[0]);
	if (!a->out)
		return mw_fail(MW_EXIT_USAGE, "db site", "name the folder to write: -o DIR (e.g. "
			       "memwall db site -o site)");
	if (a->fmt_set)
		return mw_fail(MW_EXIT_USAGE, "db site", "--format does not apply: the site is "
			       "HTML");
	mw_error_clear(&err);
	struct mw_site_opts o = { .force = a->force, .inputs = inputs, .n_inputs = 1 };
	int rc = mw_site_write(s, a->out, &o, &res, &err);
	if (rc) {
		mw_error_print(&err);
		return rc == -EEXIST || rc == -EINVAL || rc == -ENOENT || rc == -ENAMETOOLONG
			       ? MW_EXIT_USAGE : MW_EXIT_ENV;
	}
	printf("memwall db site: %s/index.html: %zu series, %zu records, %zu step%s marked\n",
	       mw_esc(a->out), res.series, res.records, res.changes, res.changes == 1 ? "" : "s");
	return MW_EXIT_OK;
}

static const struct {
	const char *name;
	int (*run)(struct mw_store *s, struct db_args *a);
} subverbs[] = {
	{ "import", db_import },
	{ "list", db_list },
	{ "show", db_show },
	{ "query", db_query },
	{ "compare", db_compare },
	{ "series", mw_db_series },
	{ "check", mw_db_check },
	{ "changes", mw_db_changes },
	{ "site", db_site },
};

static int parse(int argc, char **argv, struct db_args *a)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "format", required_argument, NULL, 'f' },
		{ "protocol", required_argument, NULL, 'p' },
		{ "model", required_argument, NULL, 'm' },
		{ "machine", required_argument, NULL, 'M' },
		{ "backend", required_argument, NULL, 'b' },
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "against", required_argument, NULL, 'A' },
		{ "series", required_argument, NULL, 'S' },
		{ "metric", required_argument, NULL, 'T' },
		{ "min-records", required_argument, NULL, 'n' },
		{ "max-regress", required_argument, NULL, 'x' },
		{ "penalty", required_argument, NULL, 'P' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	struct mw_opt op;
	/* '+' would stop at the sub-verb; options may come before or after it. */
	mw_opt_init(&op, "db", argc, argv, "ho:", opts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case 'o': a->out = mw_path_trim(optarg); break;
		case 'F': a->force = true; break;
		case 'd': a->db = optarg; break;
		case 'f':
			/* check takes junit too: it reads fmt_text itself */
			a->fmt_text = optarg;
			if ((mw_format_parse(optarg, &a->fmt) || a->fmt > MW_FORMAT_JSON) &&
			    strcmp(optarg, "junit"))
				return mw_fail(MW_EXIT_USAGE, "db", "--format wants md, csv or json "
					       "(check: md, json or junit), got '%s'", optarg);
			a->fmt_set = true;
			break;
		case 'A': a->against = optarg; break;
		case 'S': a->series = optarg; break;
		case 'T':
			if (a->n_metrics == DB_MAX_METRICS)
				return mw_fail(MW_EXIT_USAGE, "db", "more than %d --metric",
					       DB_MAX_METRICS);
			a->metrics[a->n_metrics++] = optarg;
			break;
		case 'n':
			if (mw_parse_long(optarg, 1, 1000000, &a->min_records))
				return mw_fail(MW_EXIT_USAGE, "db", "--min-records wants a number of "
					       "records, 1 or more, got '%s'", optarg);
			break;
		case 'x':
			if (mw_parse_double(optarg, 0, 1e6, &a->max_regress))
				return mw_fail(MW_EXIT_USAGE, "db", "--max-regress wants a "
					       "percentage >= 0, got '%s'", optarg);
			break;
		case 'P':
			if (mw_parse_double(optarg, 0, 1e6, &a->penalty))
				return mw_fail(MW_EXIT_USAGE, "db", "--penalty wants a multiple >= 0 "
					       "of noise sd x ln(records), got '%s'", optarg);
			break;
		case 'p': a->f.protocol = optarg; break;
		case 'm': a->f.model = optarg; break;
		case 'M': a->f.machine = optarg; break;
		case 'b': a->f.backend = optarg; break;
		case 's': a->f.since = optarg; break;
		case 'u': a->f.until = optarg; break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	return MW_EXIT_OK;
}

int mw_cmd_db(int argc, char **argv)
{
	struct db_args a = { .fmt = MW_FORMAT_MD, .max_regress = NAN, .penalty = NAN };
	struct mw_store *s = NULL;
	struct mw_error err;
	int rc = parse(argc, argv, &a);
	if (rc)
		return rc < 0 ? MW_EXIT_OK : rc;
	if (optind >= argc) {
		usage(stderr);
		return MW_EXIT_USAGE;
	}
	a.ops = argv + optind + 1;
	a.nops = argc - optind - 1;
	for (size_t i = 0; i < sizeof(subverbs) / sizeof(subverbs[0]); i++) {
		if (strcmp(argv[optind], subverbs[i].name))
			continue;
		if (a.fmt_text && !strcmp(a.fmt_text, "junit") && subverbs[i].run != mw_db_check)
			return mw_fail(MW_EXIT_USAGE, "db", "--format junit is check's alone; %s "
				       "takes md, csv or json", subverbs[i].name);
		if ((a.out || a.force) && subverbs[i].run != db_site)
			return mw_fail(MW_EXIT_USAGE, "db", "-o and --force are site's alone; %s "
				       "prints to the terminal", subverbs[i].name);
		mw_error_clear(&err);
		/* Only import makes a store; looking at one that is not there says so. */
		if ((rc = (i ? mw_store_open_existing : mw_store_open)(a.db, &s, &err))) {
			mw_error_print(&err);
			/* check: no store yet is no earlier record of the series, so not
			 * comparable (2, its help), which a CI job's first run meets
			 * (scripts/ci-example/). Else no store at that path is one that cannot be
			 * opened (3, as db --help says and a server that refuses gives), not bad
			 * usage (issue 44: it was 2). */
			if (rc == -ENOENT && subverbs[i].run == mw_db_check) {
				fprintf(stderr, "memwall db check: no store yet, so no earlier record "
					"of this series: not comparable (exit 2)\n");
				return MW_EXIT_USAGE;
			}
			return rc == -EPROTO || rc == -EINVAL || rc == -ENAMETOOLONG
				       ? MW_EXIT_USAGE : MW_EXIT_ENV;
		}
		rc = subverbs[i].run(s, &a);
		mw_store_close(s);
		return rc;
	}
	return mw_fail(MW_EXIT_USAGE, "db", "unknown sub-verb '%s': import, list, show, query, "
		       "compare, series, check, changes or site (memwall db --help)", argv[optind]);
}
