/* src/cli/db_rows.h: rows of the results store as a table (db_rows.c). */
#ifndef MEMWALL_CLI_DB_ROWS_H
#define MEMWALL_CLI_DB_ROWS_H
#include <jansson.h>
#include <stdio.h>

#include "report.h"

/* rows (objects) as a table of the columns keys[0..nkeys): md (escaped; an id cut to 12
 * digits, a CPU name and an unmeasured memory configuration shortened), csv (quoted) or
 * json (the rows whole). */
void mw_db_print_rows(FILE *f, json_t *rows, const char *const *keys, size_t nkeys,
		      enum mw_format fmt);
#endif
