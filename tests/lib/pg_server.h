/* tests/lib/pg_server.h: a throwaway PostgreSQL server for a test (tests/lib/pg-server.sh), in a
 * temporary folder, listening on a unix socket there only. */
#ifndef MEMWALL_TEST_PG_SERVER_H
#define MEMWALL_TEST_PG_SERVER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "test.h"

/* Stops the server of dir (started by t_pg_start) and removes dir; dir[0] = '\0' after. */
static inline void t_pg_stop(char *dir)
{
	char cmd[9000];
	if (!dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "sh '%s/tests/lib/pg-server.sh' stop '%s'; rm -rf '%s'",
		 getenv("MEMWALL_SOURCE_ROOT"), dir, dir);
	if (system(cmd))
		fprintf(stderr, "could not stop the test server in %s\n", dir);
	dir[0] = '\0';
}

/* Starts a server in a new folder /tmp/mw-test-pg-XXXXXX (into dir[dn]) and its connection URL
 * into url[un]. Where none can be started: skips (exit 77, with pg-server.sh's reason), or
 * fails (exit 1) when MEMWALL_REQUIRE_POSTGRESQL is set (.ci/run sets it under CI: there a
 * skip is a failure). */
static inline void t_pg_start(char *dir, size_t dn, char *url, size_t un)
{
	char script[4200];
	const char *root = getenv("MEMWALL_SOURCE_ROOT");
	if (!root)
		t_skip("MEMWALL_SOURCE_ROOT is not set (run under meson test)");
	snprintf(dir, dn, "/tmp/mw-test-pg-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(script, sizeof(script), "%s/tests/lib/pg-server.sh", root);
	struct t_output o = t_run((const char *[]){ "/bin/sh", script, "start", dir, NULL });
	if (o.status != 0) {
		char why[2048];
		snprintf(why, sizeof(why), "%s", o.out ? o.out : "");
		t_output_free(&o);
		t_pg_stop(dir);
		if (getenv("MEMWALL_REQUIRE_POSTGRESQL")) {
			fprintf(stderr, "MEMWALL_REQUIRE_POSTGRESQL is set and no server started: %s\n",
				why);
			exit(1);
		}
		t_skip("PostgreSQL: %s", why);
	}
	snprintf(url, un, "%.*s", (int)strcspn(o.out, "\n"), o.out);
	t_output_free(&o);
}

#endif
