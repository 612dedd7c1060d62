/* src/record/store/internal.h: the results store's handle, shared by the files that write its
 * SQL: store.c (schema, import, queries across machines) and store_series.c (series). Nothing
 * outside src/record/ includes it: store.h is the store's face. */
#ifndef MEMWALL_STORE_INTERNAL_H
#define MEMWALL_STORE_INTERNAL_H
#include "backend.h"
#include "series.h"

struct mw_store {
	const struct mw_store_ops *ops;
	void *h;
	char where[1024];
};

/* Adds k's series to the series table unless it is there (inside the caller's transaction). */
int mw_store_series_add(struct mw_store *s, const struct mw_series_key *k, struct mw_error *err);

/* Migration 4's data: files every record stored before it under its series (from its own
 * document) and numbers them in the order they were imported. Inside the migration's
 * transaction. */
int mw_store_backfill_series(struct mw_store *s, struct mw_error *err);

/* Migration 5's SQL for the backend ops: the new columns (metrics.provenance, records.roof_pct,
 * roof_reason, roof_provenance) and the views series_points and series_summary. Malloc'd;
 * NULL when out of memory. */
char *mw_store_views_sql(const struct mw_store_ops *ops);
/* A record's roof columns (mw_roof_pct, metrics.h) from its document. */
int mw_store_roof_set(struct mw_store *s, const char *sha, const json_t *doc,
		      struct mw_error *err);
/* Migration 5's data: the new columns of every record stored before it, from its own
 * document. Inside the migration's transaction. */
int mw_store_backfill_points(struct mw_store *s, struct mw_error *err);
#endif
