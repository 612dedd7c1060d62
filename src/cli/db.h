/* src/cli/db.h: what `memwall db`'s sub-verbs share: cmd_db.c parses the command line,
 * db_series.c holds the series sub-verbs (series, check, changes). */
#ifndef MEMWALL_CLI_DB_H
#define MEMWALL_CLI_DB_H
#include <stdbool.h>
#include <stdio.h>

#include "report.h"
#include "store.h"
#include "store_series.h"

enum { DB_MAX_METRICS = 32 };

struct db_args {
	const char *db;
	enum mw_format fmt;
	const char *fmt_text;   /* --format as given: series/check/changes read it themselves */
	bool fmt_set;
	struct mw_store_filter f;
	int nops;
	char **ops; /* the operands after the sub-verb */
	/* series, check, changes */
	const char *against;    /* last:N, since:DATE or record:ID */
	const char *series;     /* --series ID */
	const char *metrics[DB_MAX_METRICS];
	int n_metrics;
	long min_records;       /* 0: MW_HISTORY_MIN_RECORDS */
	double max_regress;     /* --max-regress; NaN: not given */
	double penalty;         /* --penalty; NaN: the default */
	/* site */
	const char *out;        /* -o DIR */
	bool force;             /* --force */
};

int mw_db_series(struct mw_store *s, struct db_args *a);
int mw_db_check(struct mw_store *s, struct db_args *a);
int mw_db_changes(struct mw_store *s, struct db_args *a);
#endif
