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

/* What to fix for each way a first connection fails, matched in libpq's message (its wording
 * since PostgreSQL 10: fe-connect.c, fe-auth.c, and the server's auth.c for the FATALs). A new
 * user meets the first three on a stock Debian server: the socket's peer authentication, and a
 * TCP connection without a password. */
static const struct {
	const char *says;
	const char *fix;
} connect_fixes[] = {
	{ "Peer authentication failed",
	  "over the unix socket the server lets in only the role named after your login: create it "
	  "(sudo -u postgres createuser --createdb \"$USER\" && createdb memwall) and use "
	  "postgresql:///memwall, or connect over TCP with a password "
	  "(postgresql://USER@localhost/DB, the password in PGPASSFILE or PGPASSWORD)" },
	{ "no password supplied",
	  "the server asks for a password: put it in ~/.pgpass (or the file PGPASSFILE names; one "
	  "line host:port:database:user:password, chmod 600) or in PGPASSWORD, not in the URL" },
	{ "password authentication failed",
	  "the server refused the password: check the line for this host and user in ~/.pgpass "
	  "(PGPASSFILE), or PGPASSWORD" },
	{ "does not exist",
	  "create the role or database the URL names (sudo -u postgres createuser --createdb USER; "
	  "createdb -O USER DB), or name one that exists" },
	{ "No such file or directory",
	  "no server listens on that unix socket: start one (sudo systemctl start postgresql) or "
	  "give the server's host in the URL" },
	{ "Connection refused",
	  "no server listens on that host and port: start it, or check the URL's host and port" },
	{ "could not translate host name",
	  "the URL's host name does not resolve: check it" },
};

static int db_open(const char *where, void **h, struct mw_error *err)
{
	/* The URL comes after the default, so that its own connect_timeout wins (libpq:
	 * "subsequent parameters override" the expanded dbname's). */
	const char *env = getenv("PGCONNECT_TIMEOUT");
	const char *keys[] = { "connect_timeout", "dbname", NULL };
	const char *vals[] = { env && *env ? env : CONNECT_TIMEOUT_S, where, NULL };
	PGconn *c = PQconnectdbParams(keys, vals, 1);
	if (!c || PQstatus(c) != CONNECTION_OK) {
		const char *msg = c ? PQerrorMessage(c) : "out of memory";
		const char *fix = "check the URL's host, port, user and database, and that the "
				  "server runs";
		for (size_t i = 0; i < sizeof(connect_fixes) / sizeof(connect_fixes[0]); i++)
			if (strstr(msg, connect_fixes[i].says)) {
				fix = connect_fixes[i].fix;
				break;
			}
		/* libpq's first line holds the reason; the next ones are its own hints. */
		mw_error_set(err, -EIO, "PostgreSQL", "--db", "cannot connect: %.*s; %s",
			     (int)strcspn(msg, "\n"), msg, fix);
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
	.utc_time_pre = "CAST(",
	.utc_time_post = " AS TIMESTAMP WITH TIME ZONE)",
};
