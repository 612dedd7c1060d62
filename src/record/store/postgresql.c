/* src/record/store/postgresql.c: the results store on a PostgreSQL server (libpq), for a fleet:
 * selected by a postgresql:// (or postgres://) connection URL, which libpq parses itself
 * (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS). */
#include <errno.h>
#include <libpq-fe.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"

static bool accepts(const char *where)
{
	return !strncmp(where, "postgresql://", 13) || !strncmp(where, "postgres://", 11);
}

/* libpq's messages end in a newline and may span lines: the error text keeps the first. */
static void set_pq_error(struct mw_error *err, const char *what, const char *msg)
{
	size_t n = strcspn(msg, "\n");
	mw_error_set(err, -EIO, "PostgreSQL", "--db", "%s: %.*s", what, (int)n, msg);
}

/* Seconds a connection may take, server start-up and authentication included, unless the
 * URL (connect_timeout=) or $PGCONNECT_TIMEOUT says otherwise: a server that accepts and
 * never answers must not stall `memwall db` forever (libpq waits forever by default). */
#define CONNECT_TIMEOUT_S "5"

static int db_open(const char *where, void **h, struct mw_error *err)
{
	/* The URL comes after the default, so that its own connect_timeout wins (libpq:
	 * "subsequent parameters override" the expanded dbname's). */
	const char *env = getenv("PGCONNECT_TIMEOUT");
	const char *keys[] = { "connect_timeout", "dbname", NULL };
	const char *vals[] = { env && *env ? env : CONNECT_TIMEOUT_S, where, NULL };
	PGconn *c = PQconnectdbParams(keys, vals, 1);
	if (!c || PQstatus(c) != CONNECTION_OK) {
		set_pq_error(err, "cannot connect (check the URL's host, port, user and database, "
			     "and that the server runs)", c ? PQerrorMessage(c) : "out of memory");
		/* The URL the user gave names the store; mw_error_print redacts its password. */
		if (err)
			snprintf(err->source, sizeof(err->source), "%s", where);
		PQfinish(c);
		return -EIO;
	}
	/* Notices ("relation already exists, skipping") are not the user's business. */
	PQclear(PQexec(c, "SET client_min_messages = warning"));
	*h = c;
	return 0;
}

static void db_close(void *h)
{
	PQfinish(h);
}

static int check(PGresult *r, PGconn *c, struct mw_error *err)
{
	ExecStatusType s = PQresultStatus(r);
	if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)
		return 0;
	set_pq_error(err, "query failed", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
	return -EIO;
}

static int db_exec(void *h, const char *sql, struct mw_error *err)
{
	PGresult *r = PQexec(h, sql);
	int rc = check(r, h, err);
	PQclear(r);
	return rc;
}

static int db_query(void *h, const char *sql, const char *const *params, int nparams,
		    mw_store_row_fn row, void *ctx, struct mw_error *err)
{
	const char *vals[64];
	PGresult *r = PQexecParams(h, sql, nparams, NULL, params, NULL, NULL, 0);
	int rc = check(r, h, err);
	int nrows = rc ? 0 : PQntuples(r), ncol = rc ? 0 : PQnfields(r);
	ncol = ncol > 64 ? 64 : ncol;
	for (int i = 0; i < nrows && !rc; i++) {
		for (int k = 0; k < ncol; k++)
			vals[k] = PQgetisnull(r, i, k) ? NULL : PQgetvalue(r, i, k);
		if (row)
			rc = row(ctx, ncol, vals);
	}
	PQclear(r);
	return rc;
}

const struct mw_store_ops mw_store_postgresql = {
	.name = "postgresql",
	.accepts = accepts,
	.open = db_open,
	.close = db_close,
	.exec = db_exec,
	.query = db_query,
	/* Migrations and imports serialize on a transaction-level advisory lock, taken before
	 * schema_version exists (a LOCK TABLE on it needed the table first, created outside the
	 * lock: concurrent first uses raced). The key is "memwall" in ASCII. */
	.begin_exclusive = "BEGIN; SELECT pg_advisory_xact_lock(119183136992620)",
	.tables_sql = "SELECT table_name FROM information_schema.tables WHERE table_schema = "
		      "current_schema()",
};
