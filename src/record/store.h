/* src/record/store.h: the results store: many result records in one database, for listing,
 * querying and comparing across machines (`memwall db`).
 *
 * The store is SQLite (a file; the default) or PostgreSQL (a postgresql:// URL), one backend
 * file each under store/. Its schema is versioned: the table schema_version holds the
 * migrations applied, and opening a store applies the ones it lacks (the list is in store.c).
 * A record is stored whole (its bytes), keyed by the sha256 of those bytes, with the fields that
 * queries filter on and one row per summary metric beside it, filed under its series (the
 * series' queries are store_series.h's). */
#ifndef MEMWALL_STORE_H
#define MEMWALL_STORE_H
#include <jansson.h>
#include <stdbool.h>
#include "mw.h"

struct mw_store;

/* The store a --db value names: a postgresql:// URL, or a file path. NULL where picks the
 * default: $MEMWALL_DB, else $XDG_DATA_HOME/memwall/results.db, else
 * ~/.local/share/memwall/results.db (its folder is created). buf[0..n) receives the choice.
 * NULL (nothing chosen) for an empty where, no HOME nor XDG_DATA_HOME, or a path past n. */
const char *mw_store_default(const char *where, char *buf, size_t n);

/* Opens the store at where (see mw_store_default) and brings its schema up to date. -EPROTO
 * when the store was written by a newer memwall (a schema version this one does not know).
 * *out is freed with mw_store_close. 0 or -errno with err filled. */
int mw_store_open(const char *where, struct mw_store **out, struct mw_error *err);
/* mw_store_open for looking (list, show, query, compare): an SQLite path that does not exist
 * is -ENOENT, not a new store. A database holding other programs' tables and no memwall
 * schema is refused by both (-EINVAL), and left as it was. */
int mw_store_open_existing(const char *where, struct mw_store **out, struct mw_error *err);
void mw_store_close(struct mw_store *s);
/* "sqlite" or "postgresql"; static storage. */
const char *mw_store_backend(const struct mw_store *s);
/* The SQLite store's file (borrowed, valid until mw_store_close); NULL for a server's store. */
const char *mw_store_file(const struct mw_store *s);
/* The schema version the store is at, and the newest this memwall knows. */
int mw_store_schema_version(struct mw_store *s, int *version, struct mw_error *err);
int mw_store_schema_latest(void);

/* Imports the record file at path: read, hashed, validated (mw_result_validate: a record that
 * does not validate is refused, err says why), then stored unless a record with the same sha256
 * is there already (*added false: importing twice changes nothing). sha[65] gets the id. */
int mw_store_import(struct mw_store *s, const char *path, char sha[65], bool *added,
		    struct mw_error *err);

/* Filters of a query; NULL fields do not filter. model and machine match a substring, case
 * insensitively; protocol and backend match exactly; since/until are dates or times in ISO
 * 8601 ("2026-11-21", "2026-11-21T06:00:00Z") compared with the record's created_utc, until
 * including the whole day it names. */
struct mw_store_filter {
	const char *protocol, *model, *machine, *backend, *since, *until;
};

/* The records that pass f, oldest first, as an array of objects: id (the sha256), created_utc,
 * protocol, model, machine, memory, backend, kind, acceptance, tok_per_s, dram_MB_per_token
 * (means; null when not measured). *rows is a new reference. */
int mw_store_query(struct mw_store *s, const struct mw_store_filter *f, json_t **rows,
		   struct mw_error *err);

/* The record whose id starts with prefix (at least 6 hex digits): *doc is the record (new
 * reference), sha[65] its id. -ENOENT when none; -EEXIST when the prefix names several. */
int mw_store_show(struct mw_store *s, const char *prefix, json_t **doc, char sha[65],
		  struct mw_error *err);

/* Machines side by side: one row per protocol, model and machine (with its memory
 * configuration) among the records that pass f: records, mean tok/s and its range, mean DRAM
 * MB/token, and tok/s relative to the fastest machine of the same protocol and model. */
int mw_store_compare(struct mw_store *s, const struct mw_store_filter *f, json_t **rows,
		     struct mw_error *err);
#endif
