/* tests/src/test_report_rows.c: `report --format jsonl` and `--format sql` (src/record/report_rows.c):
 * one line or row per summary metric, every figure as the record has it, and the sql loads into
 * SQLite (through the library here, and from the command's output). */
#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture_result.h"
#include "report_rows.h"
#include "run.h"
#include "sha256.h"
#include "test.h"

static int one_double(void *ctx, int n, char **v, char **names)
{
	(void)names;
	*(double *)ctx = n > 0 && v[0] ? strtod(v[0], NULL) : -1;
	return 0;
}

static int one_text(void *ctx, int n, char **v, char **names)
{
	(void)names;
	snprintf(ctx, 256, "%s", n > 0 && v[0] ? v[0] : "(null)");
	return 0;
}

/* Loads sql into a new in-memory database and checks it against doc's metrics. */
static void check_sql(const char *sql, const json_t *doc, const char *sha)
{
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	sqlite3 *db = NULL;
	char *msg = NULL, text[256];
	double x = -1;
	T_EQ_INT(sqlite3_open(":memory:", &db), SQLITE_OK);
	T_EQ_INT(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK);
	if (msg)
		fprintf(stderr, "sqlite: %s\n", msg);
	sqlite3_free(msg);
	sqlite3_exec(db, "SELECT COUNT(*) FROM " MW_REPORT_SQL_TABLE, one_double, &x, NULL);
	T_EQ_INT((long long)x, (long long)json_object_size(m));
	sqlite3_exec(db, "SELECT mean FROM " MW_REPORT_SQL_TABLE " WHERE metric = 'tok_per_s'",
		     one_double, &x, NULL);
	double want = json_number_value(json_object_get(json_object_get(m, "tok_per_s"), "mean"));
	T_NEAR(x, want, 1e-9 * want);
	sqlite3_exec(db, "SELECT model FROM " MW_REPORT_SQL_TABLE " LIMIT 1", one_text, text, NULL);
	T_EQ_STR(text, "it's a model");
	sqlite3_exec(db, "SELECT record_sha256 FROM " MW_REPORT_SQL_TABLE " LIMIT 1", one_text, text,
		     NULL);
	T_EQ_STR(text, sha ? sha : "(null)");
	/* Loading a second record's rows into the same table works: CREATE ... IF NOT EXISTS. */
	T_EQ_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_exec(db, "SELECT COUNT(*) FROM " MW_REPORT_SQL_TABLE, one_double, &x, NULL);
	T_EQ_INT((long long)x, 2 * (long long)json_object_size(m));
	sqlite3_close(db);
}

int main(void)
{
	char tmp[] = "/tmp/mw-test-formats-XXXXXX", path[4200], sha[65];
	struct mw_error err;
	t_mkdtemp(tmp);
	struct t_fx_spec sp = { .protocol = "formats", .cpu = "CPU Alpha", .runs = 3, .warmups = 1,
			      .tokens = 16, .latency_ns = 1e6, .jitter = 0.01, .dram_bytes = 4e6,
			      .instances = 2, .seed = 5 };
	json_t *doc = t_fx_record(&sp);
	json_object_set_new(json_object_get(doc, "model"), "name", json_string("it's a model"));
	t_fx_write(doc, tmp, "r.json", path, sizeof(path));
	T_EQ_INT(mw_sha256_file(path, sha, NULL, &err), 0);
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");

	/* jsonl: one object per metric, each figure as the record has it. */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	mw_report_rows(f, doc, sha, false);
	fclose(f);
	size_t lines = 0;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"), lines++) {
		json_error_t je;
		json_t *o = json_loads(line, 0, &je);
		T_ASSERT(o != NULL);
		const char *name = json_string_value(json_object_get(o, "metric"));
		const json_t *x = json_object_get(m, name ? name : "");
		T_ASSERT(x != NULL);
		T_EQ_STR(json_string_value(json_object_get(o, "record_sha256")), sha);
		T_EQ_STR(json_string_value(json_object_get(o, "protocol")), "formats");
		T_EQ_STR(json_string_value(json_object_get(o, "cpu_name")), "CPU Alpha");
		T_ASSERT(json_equal(json_object_get(o, "measured"), json_object_get(x, "measured")));
		if (json_is_number(json_object_get(x, "mean")))
			T_NEAR(json_number_value(json_object_get(o, "mean")),
			       json_number_value(json_object_get(x, "mean")), 0);
		json_decref(o);
	}
	T_EQ_INT(lines, json_object_size(m));
	free(buf);

	/* sql through the library. */
	f = open_memstream(&buf, &len);
	mw_report_rows(f, doc, sha, true);
	fclose(f);
	check_sql(buf, doc, sha);
	free(buf);

	/* The command's sql, with the file's sha256. */
	struct t_output o = t_run((const char *[]){ "memwall", "report", path, "--format", "sql",
						    NULL });
	T_EQ_INT(o.status, 0);
	check_sql(o.out ? o.out : "", doc, sha);
	t_output_free(&o);
	T_RUN_EXPECT(((const char *[]){"memwall", "report", path, "--format", "xml", NULL}), 2,
		     NULL, T_LIST("jsonl, sql"));

	json_decref(doc);
	T_EQ_INT(t_rm_tree(tmp), 0);
	return t_done();
}
