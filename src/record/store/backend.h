/* src/record/store/backend.h: one database behind the results store (src/record/store.c).
 *
 * A backend is one file and one row of the table in store.c, as probes/pmu/ does for PMU
 * families: sqlite.c (the embedded default, one file) and postgresql.c (a fleet's shared server).
 * store.c writes its SQL once, in the dialect both accept, with $1, $2, ... placeholders; a
 * backend that spells placeholders differently rewrites them. Every value crosses as text (NULL
 * for SQL NULL): the schema's column types convert it. */
#ifndef MEMWALL_STORE_BACKEND_H
#define MEMWALL_STORE_BACKEND_H
#include <stdbool.h>
#include "mw.h"

/* Called once per result row with ncol values (NULL for SQL NULL), valid during the call only.
 * A non-zero return stops the query and becomes its return value. */
typedef int (*mw_store_row_fn)(void *ctx, int ncol, const char *const *vals);

struct mw_store_ops {
	const char *name;  /* "sqlite", "postgresql": shown by `memwall db` and stored nowhere */
	/* Whether where (a --db value) names this backend's kind of store. */
	bool (*accepts)(const char *where);
	/* Opens (creating where the database allows) the store; *h for the calls below. */
	int (*open)(const char *where, void **h, struct mw_error *err);
	void (*close)(void *h);
	/* Runs sql, which may hold several statements and takes no parameters. */
	int (*exec)(void *h, const char *sql, struct mw_error *err);
	/* Runs one statement with nparams text parameters ($1..$n), calling row for each row. */
	int (*query)(void *h, const char *sql, const char *const *params, int nparams,
		     mw_store_row_fn row, void *ctx, struct mw_error *err);
	/* The statement that opens a transaction which no other writer can enter until it ends. */
	const char *begin_exclusive;
	/* A query listing the database's tables (one name per row), to refuse a database that
	 * holds another program's tables. */
	const char *tables_sql;
	/* A record's created_utc (ISO 8601 text) as the database's time type, for the views
	 * dashboards read (Grafana's time series want a timestamp): the text between pre and
	 * post. SQLite has no time type (its date functions read the ISO 8601 text as it is). */
	const char *utc_time_pre, *utc_time_post;
};

extern const struct mw_store_ops mw_store_sqlite;
extern const struct mw_store_ops mw_store_postgresql;
#endif
