/* src/record/store/postgresql.c: the results store on a PostgreSQL server (libpq), for a fleet:
 * selected by a postgresql:// (or postgres://) connection URL, which libpq parses itself
 * (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS). */
#include <dlfcn.h>
#include <errno.h>
#include <libpq-fe.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"

/* libpq is loaded when a postgresql:// store is first opened, not linked: it brings some 20
 * libraries (GnuTLS, Kerberos, LDAP, SASL) whose relocations and initializers took 3 of the
 * 7.5 ms of every memwall start, for the few commands that use PostgreSQL (issue 44: the
 * test suite starts memwall about a thousand times). The header gives each function's type;
 * the soname is the one libpq has kept since PostgreSQL 8.3. */
#define LIBPQ_SONAME "libpq.so.5"

static struct {
	bool tried;
	void *dl;
	char why[256];
	__typeof__(PQconnectdbParams) *connectdbParams;
	__typeof__(PQstatus) *status;
	__typeof__(PQerrorMessage) *errorMessage;
	__typeof__(PQfinish) *finish;
	__typeof__(PQexec) *exec;
	__typeof__(PQexecParams) *execParams;
	__typeof__(PQclear) *clear;
	__typeof__(PQresultStatus) *resultStatus;
	__typeof__(PQresultErrorMessage) *resultErrorMessage;
	__typeof__(PQntuples) *ntuples;
	__typeof__(PQnfields) *nfields;
	__typeof__(PQgetisnull) *getisnull;
	__typeof__(PQgetvalue) *getvalue;
} pq;

/* Loads libpq once: 0, or -ENOTSUP with pq.why saying what is missing. */
static int pq_load(void)
{
	static const char *const names[] = { "PQconnectdbParams", "PQstatus", "PQerrorMessage",
		"PQfinish", "PQexec", "PQexecParams", "PQclear", "PQresultStatus",
		"PQresultErrorMessage", "PQntuples", "PQnfields", "PQgetisnull", "PQgetvalue" };
	void **slot[] = { (void **)&pq.connectdbParams, (void **)&pq.status,
		(void **)&pq.errorMessage, (void **)&pq.finish, (void **)&pq.exec,
		(void **)&pq.execParams, (void **)&pq.clear, (void **)&pq.resultStatus,
		(void **)&pq.resultErrorMessage, (void **)&pq.ntuples, (void **)&pq.nfields,
		(void **)&pq.getisnull, (void **)&pq.getvalue };
	_Static_assert(sizeof(names) / sizeof(names[0]) == sizeof(slot) / sizeof(slot[0]),
		       "one slot per libpq function");
	if (pq.tried)
		return pq.dl ? 0 : -ENOTSUP;
	pq.tried = true;
	if (!(pq.dl = dlopen(LIBPQ_SONAME, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(pq.why, sizeof(pq.why), "%s", dlerror());
		return -ENOTSUP;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!(*slot[i] = dlsym(pq.dl, names[i]))) {
			snprintf(pq.why, sizeof(pq.why), "%s has no %s", LIBPQ_SONAME, names[i]);
			dlclose(pq.dl);
			pq.dl = NULL;
			return -ENOTSUP;
		}
	return 0;
}

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
	if (pq_load())
		return mw_error_set(err, -ENOTSUP, "PostgreSQL", "--db", "cannot load libpq, "
				    "PostgreSQL's client library (%s): install it (Debian: sudo "
				    "apt-get install libpq5) or use an SQLite store (--db FILE)",
				    pq.why);
	PGconn *c = pq.connectdbParams(keys, vals, 1);
	if (!c || pq.status(c) != CONNECTION_OK) {
		const char *msg = c ? pq.errorMessage(c) : "out of memory";
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
		pq.finish(c);
		return -EIO;
	}
	/* Notices ("relation already exists, skipping") are not the user's business. */
	pq.clear(pq.exec(c, "SET client_min_messages = warning"));
	*h = c;
	return 0;
}

static void db_close(void *h)
{
	pq.finish(h);
}

static int check(PGresult *r, PGconn *c, struct mw_error *err)
{
	ExecStatusType s = pq.resultStatus(r);
	if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)
		return 0;
	set_pq_error(err, "query failed", r ? pq.resultErrorMessage(r) : pq.errorMessage(c));
	return -EIO;
}

static int db_exec(void *h, const char *sql, struct mw_error *err)
{
	PGresult *r = pq.exec(h, sql);
	int rc = check(r, h, err);
	pq.clear(r);
	return rc;
}

static int db_query(void *h, const char *sql, const char *const *params, int nparams,
		    mw_store_row_fn row, void *ctx, struct mw_error *err)
{
	const char *vals[64];
	PGresult *r = pq.execParams(h, sql, nparams, NULL, params, NULL, NULL, 0);
	int rc = check(r, h, err);
	int nrows = rc ? 0 : pq.ntuples(r), ncol = rc ? 0 : pq.nfields(r);
	ncol = ncol > 64 ? 64 : ncol;
	for (int i = 0; i < nrows && !rc; i++) {
		for (int k = 0; k < ncol; k++)
			vals[k] = pq.getisnull(r, i, k) ? NULL : pq.getvalue(r, i, k);
		if (row)
			rc = row(ctx, ncol, vals);
	}
	pq.clear(r);
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
