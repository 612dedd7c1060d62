/* src/record/store_series.h: the results store's series (`memwall db series|check|changes`):
 * every record is filed at import under its series (src/record/series.h); stores from before
 * schema version 4 are filed when opened. The store itself is store.h's. */
#ifndef MEMWALL_STORE_SERIES_H
#define MEMWALL_STORE_SERIES_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include "mw.h"

struct mw_store;

/* One row per series, ordered by protocol, machine and first date: id, key (the object whose
 * sha256 the id is), machine, protocol, model, engine, counters (labels), records, first_utc,
 * last_utc, and of the latest record: last_id, last_engine_version, dram_MB_per_token and
 * tok_per_s (its medians over its runs; null when not measured), provenance (in the words
 * every surface uses, mw_provenance_words) and model_synthetic. *rows is a new reference. */
int mw_store_series_list(struct mw_store *s, json_t **rows, struct mw_error *err);

/* The series whose id starts with prefix (at least 6 hex digits) into id[65]. -EINVAL (not
 * an id), -ENOENT (none), -EEXIST (several). */
int mw_store_series_find(struct mw_store *s, const char *prefix, char id[65],
			 struct mw_error *err);

/* Where a record of the store sits: its series, date and import order. */
struct mw_store_place {
	bool stored;        /* false: no record with that id (the rest is empty) */
	char series[65];
	char created_utc[40];
	long long seq;
};
int mw_store_record_place(struct mw_store *s, const char *sha, struct mw_store_place *out,
			  struct mw_error *err);

/* Which records of a series make a history (NULL / 0 fields do not filter). */
struct mw_store_history {
	const char *series;     /* the series' id */
	const char *exclude;    /* a record id left out (the record judged) */
	const char *before_utc; /* only records created before this time: with before_seq >= 0
				 * also those of the same second imported before seq; with
				 * before_seq < 0 every record of that second */
	long long before_seq;
	const char *since;      /* only records created at or after this ISO 8601 date */
	const char *only;       /* only the record whose id starts with this */
	size_t last;            /* only the latest this many */
	bool with_text;         /* each record's stored bytes too ("text") */
};

/* The records of a history, oldest first (created_utc, then import order): objects {id,
 * created_utc, engine_version, document (the record, parsed), and with with_text text (the
 * record's bytes as imported, whose sha256 is its id)}. -EINVAL for a since that is
 * not a date. *recs is a new reference. */
int mw_store_series_history(struct mw_store *s, const struct mw_store_history *h,
			    json_t **recs, struct mw_error *err);

/* The series' history of one metric: per record where it was measured, oldest first,
 * {id, created_utc, engine_version, median} (the median over the record's runs). */
int mw_store_series_points(struct mw_store *s, const char *id, const char *metric,
			   json_t **rows, struct mw_error *err);
#endif
