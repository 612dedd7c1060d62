/* src/record/store/sqlite.c: the results store in one SQLite file (libsqlite3), the default. */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

static bool accepts(const char *where)
{
	return !strstr(where, "://");
}

static int db_open(const char *where, void **h, struct mw_error *err)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(where, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc != SQLITE_OK) {
		mw_error_set(err, -EIO, where, "--db", "cannot open the SQLite store: %s (give "
			     "--db a file in a writable folder, or set MEMWALL_DB)",
			     db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close(db);
		return -EIO;
	}
	/* Another memwall importing at the same time waits for it rather than failing at once. */
	sqlite3_busy_timeout(db, 10000);
	sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
	*h = db;
	return 0;
}

static void db_close(void *h)
{
	sqlite3_close(h);
}

static int db_exec(void *h, const char *sql, struct mw_error *err)
{
	char *msg = NULL;
	if (sqlite3_exec(h, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	mw_error_set(err, -EIO, sqlite3_db_filename(h, "main"), "", "SQLite: %s",
		     msg ? msg : sqlite3_errmsg(h));
	sqlite3_free(msg);
	return -EIO;
}

/* "$3" becomes "?3": SQLite's numbered parameter. store.c's SQL has no '$' elsewhere. */
static char *placeholders(const char *sql)
{
	char *s = strdup(sql);
	for (char *p = s; p && *p; p++)
		if (*p == '$' && p[1] >= '1' && p[1] <= '9')
			*p = '?';
	return s;
}

static int db_query(void *h, const char *sql, const char *const *params, int nparams,
		    mw_store_row_fn row, void *ctx, struct mw_error *err)
{
	sqlite3_stmt *st = NULL;
	const char *vals[64];
	char *q = placeholders(sql);
	int rc = 0, s;
	if (!q)
		return mw_error_set(err, -ENOMEM, "", "", "out of memory");
	if (sqlite3_prepare_v2(h, q, -1, &st, NULL) != SQLITE_OK) {
		rc = mw_error_set(err, -EIO, sqlite3_db_filename(h, "main"), "", "SQLite: %s",
				  sqlite3_errmsg(h));
		goto out;
	}
	for (int i = 0; i < nparams; i++)
		sqlite3_bind_text(st, i + 1, params[i], -1, SQLITE_TRANSIENT);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		int n = sqlite3_column_count(st);
		n = n > 64 ? 64 : n;
		for (int i = 0; i < n; i++)
			vals[i] = (const char *)sqlite3_column_text(st, i);
		if (row && (rc = row(ctx, n, vals)))
			goto out;
	}
	if (s != SQLITE_DONE)
		rc = mw_error_set(err, -EIO, sqlite3_db_filename(h, "main"), "", "SQLite: %s",
				  sqlite3_errmsg(h));
out:
	sqlite3_finalize(st);
	free(q);
	return rc;
}

const struct mw_store_ops mw_store_sqlite = {
	.name = "sqlite",
	.accepts = accepts,
	.open = db_open,
	.close = db_close,
	.exec = db_exec,
	.query = db_query,
	.begin_exclusive = "BEGIN IMMEDIATE",
	.tables_sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
		      "'sqlite\\_%' ESCAPE '\\'",
	.utc_time_pre = "",
	.utc_time_post = "",
};
