/* src/cli/cmd_db.c: `memwall db`: the results store (src/record/store.h): import, list, show,
 * query and compare records across machines, in SQLite (a file) or PostgreSQL (a URL). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mw.h"
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
		   "       memwall db [--db FILE|URL] compare [FILTERS] [--format md|csv|json]\n\n"
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
		   "FILTERS: --protocol NAME, --backend KIND (engine.kind: builtin, llama.cpp, ...),\n"
		   "  --model TEXT and --machine TEXT (substrings, any case), --since DATE, --until DATE\n"
		   "  (ISO 8601, against the record's created_utc; --until includes its day).\n"
		   "Exit: 0 done, 1 a record did not validate, 2 bad usage or input, 3 the store cannot\n"
		   "be opened (none at that path for list, show, query or compare; a server that\n"
		   "refuses).\n");
}

struct db_args {
	const char *db;
	enum mw_format fmt;
	bool fmt_set;
	struct mw_store_filter f;
	int nops;
	char **ops; /* the operands after the sub-verb */
};

/* ---- printing rows ------------------------------------------------------------------------- */

static void cell(FILE *f, const json_t *v, bool csv)
{
	if (json_is_number(v)) {
		fprintf(f, csv ? "%.10g" : "%.4g", json_number_value(v));
	} else if (json_is_string(v)) {
		/* Escaped: control characters, '|' in a markdown cell, a formula in a CSV one. */
		if (csv)
			mw_csv_put(f, json_string_value(v));
		else
			fputs(mw_esc_md(json_string_value(v)), f);
	} else if (!csv) {
		fputs("-", f);
	}
}

/* A markdown table's short form of a long cell; `db show` and the csv/json formats keep the
 * whole text. A memory configuration that was not measured says only that ("not measured":
 * the reason, one sentence per record, would fill the column); a CPU name loses its trade
 * marks and its clock ("Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz" -> "Intel Xeon
 * Platinum 8480+"). */
static const char *compact(const char *key, const char *s, char *buf, size_t n)
{
	if (!strcmp(key, "memory") && (!strncmp(s, "not measured", 12) ||
				       !strncmp(s, "not recorded", 12)))
		return snprintf(buf, n, "%.12s", s), buf;
	if (strcmp(key, "machine"))
		return s;
	size_t used = 0;
	buf[0] = '\0';
	for (const char *p = s; *p && used + 1 < n;) {
		if (!strncmp(p, "(R)", 3) || !strncmp(p, "(TM)", 4)) {
			p += p[1] == 'R' ? 3 : 4;
		} else if (!strncmp(p, " CPU", 4) && (!p[4] || p[4] == ' ')) {
			p += 4;
		} else if (!strncmp(p, " @", 2)) {
			break;
		} else {
			buf[used++] = *p++;
			buf[used] = '\0';
		}
	}
	return buf;
}

static void print_rows(FILE *f, json_t *rows, const char *const *keys, size_t nkeys,
		       enum mw_format fmt)
{
	size_t i;
	json_t *r;
	if (fmt == MW_FORMAT_JSON) {
		json_dumpf(rows, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		fputc('\n', f);
		return;
	}
	bool csv = fmt == MW_FORMAT_CSV;
	for (size_t k = 0; k < nkeys; k++)
		fprintf(f, "%s%s%s", csv ? (k ? "," : "") : "| ", keys[k], csv ? "" : " ");
	fputs(csv ? "\n" : "|\n", f);
	for (size_t k = 0; !csv && k < nkeys; k++)
		fputs("|---", f);
	if (!csv)
		fputs("|\n", f);
	json_array_foreach(rows, i, r) {
		for (size_t k = 0; k < nkeys; k++) {
			fputs(csv ? (k ? "," : "") : "| ", f);
			json_t *v = json_object_get(r, keys[k]);
			/* The id is a sha256: twelve digits are enough to name it in a table. */
			char shortened[256];
			if (!strcmp(keys[k], "id") && !csv && json_is_string(v))
				fprintf(f, "%.12s", mw_esc_md(json_string_value(v)));
			else if (!csv && json_is_string(v)) {
				json_t *c = json_string(compact(keys[k], json_string_value(v),
								shortened, sizeof(shortened)));
				cell(f, c, csv);
				json_decref(c);
			} else
				cell(f, v, csv);
			if (!csv)
				fputc(' ', f);
		}
		fputs(csv ? "\n" : "|\n", f);
	}
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
		print_rows(stdout, rows, compare_keys, NKEYS(compare_keys), a->fmt);
	else if (list)
		print_rows(stdout, rows, list_keys, NKEYS(list_keys), a->fmt);
	else
		print_rows(stdout, rows, query_keys, NKEYS(query_keys), a->fmt);
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

static const struct {
	const char *name;
	int (*run)(struct mw_store *s, struct db_args *a);
} subverbs[] = {
	{ "import", db_import },
	{ "list", db_list },
	{ "show", db_show },
	{ "query", db_query },
	{ "compare", db_compare },
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	optind = 1;
	opterr = 0;
	/* '+' would stop at the sub-verb; options may come before or after it. */
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': a->db = optarg; break;
		case 'f':
			if (mw_format_parse(optarg, &a->fmt) || a->fmt > MW_FORMAT_JSON)
				return mw_fail(MW_EXIT_USAGE, "db", "--format wants md, csv or json, "
					       "got '%s'", optarg);
			a->fmt_set = true;
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
			return mw_opt_error("db", c, argv);
		}
	}
	return MW_EXIT_OK;
}

int mw_cmd_db(int argc, char **argv)
{
	struct db_args a = { .fmt = MW_FORMAT_MD };
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
		mw_error_clear(&err);
		/* Only import makes a store; looking at one that is not there says so. */
		if ((rc = (i ? mw_store_open_existing : mw_store_open)(a.db, &s, &err))) {
			mw_error_print(&err);
			/* No store at that path is one that cannot be opened (exit 3, as db --help
			 * says and as a server that refuses gives), not bad usage (issue 44). */
			return rc == -EPROTO || rc == -EINVAL || rc == -ENAMETOOLONG
				       ? MW_EXIT_USAGE : MW_EXIT_ENV;
		}
		rc = subverbs[i].run(s, &a);
		mw_store_close(s);
		return rc;
	}
	return mw_fail(MW_EXIT_USAGE, "db", "unknown sub-verb '%s': import, list, show, query or "
		       "compare (memwall db --help)", argv[optind]);
}
