/* src/record/store.c: the results store: schema migrations, import, queries and the
 * cross-machine comparison, written once over the backends of store/ (store/backend.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file.h"
#include "provenance.h"
#include "result.h"
#include "series.h"
#include "sha256.h"
#include "store.h"
#include "store/internal.h"

/* One row per database: the first that accepts a --db value opens it. SQLite accepts anything
 * that is not a URL, so it stays last. */
static const struct mw_store_ops *const backends[] = { &mw_store_postgresql, &mw_store_sqlite };

/* The schema, one migration per version: a store at version v gets migrations v+1.. applied in
 * one transaction each. Never edit a released migration: add one. The SQL is the dialect SQLite
 * and PostgreSQL share (DOUBLE PRECISION is REAL to SQLite). */
static const struct {
	int version;
	const char *what;
	const char *sql;
	/* Where the SQL depends on the dialect: builds it (malloc'd) instead of sql. */
	char *(*build)(const struct mw_store_ops *ops);
} migrations[] = {
	{ 1, "records and their summary metrics",
	  "CREATE TABLE records ("
	  " sha256 TEXT PRIMARY KEY, kind TEXT NOT NULL, created_utc TEXT, imported_utc TEXT NOT NULL,"
	  " protocol TEXT NOT NULL, model TEXT, machine TEXT, backend TEXT, threads INTEGER,"
	  " memwall_version TEXT, complete INTEGER NOT NULL, acceptance TEXT, source TEXT,"
	  " document TEXT NOT NULL);"
	  "CREATE INDEX records_protocol_model ON records (protocol, model);"
	  "CREATE TABLE metrics ("
	  " sha256 TEXT NOT NULL REFERENCES records (sha256) ON DELETE CASCADE, metric TEXT NOT NULL,"
	  " unit TEXT, measured INTEGER NOT NULL, n INTEGER, mean DOUBLE PRECISION,"
	  " sd DOUBLE PRECISION, cv_pct DOUBLE PRECISION, median DOUBLE PRECISION,"
	  " min DOUBLE PRECISION, max DOUBLE PRECISION, ci95_low DOUBLE PRECISION,"
	  " ci95_high DOUBLE PRECISION, reason TEXT, PRIMARY KEY (sha256, metric));", NULL },
	{ 2, "the memory configuration beside each machine (machine.memory_config)",
	  "ALTER TABLE records ADD COLUMN memory TEXT;", NULL },
	{ 3, "who counted the DRAM figures (hardware, SIMULATED, engine-accounted) and synthetic "
	     "models",
	  "ALTER TABLE records ADD COLUMN dram_source TEXT;"
	  "ALTER TABLE records ADD COLUMN synthetic INTEGER;", NULL },
	{ 4, "series: records of one machine, protocol, model, engine and counter layer "
	     "(src/record/series.h), and the order records were imported in",
	  "CREATE TABLE series ("
	  " id TEXT PRIMARY KEY, key TEXT NOT NULL, fingerprint TEXT NOT NULL, machine TEXT,"
	  " protocol TEXT NOT NULL, model TEXT, engine TEXT NOT NULL, counters TEXT NOT NULL,"
	  " created_utc TEXT NOT NULL);"
	  "ALTER TABLE records ADD COLUMN series TEXT REFERENCES series (id);"
	  "ALTER TABLE records ADD COLUMN seq INTEGER;"
	  "ALTER TABLE records ADD COLUMN engine_version TEXT;"
	  "CREATE INDEX records_series ON records (series, created_utc, seq);", NULL },
	{ 5, "views for dashboards (series_points: one row per record and metric, with its "
	     "series, date, value and provenance; series_summary), each metric's provenance and "
	     "each record's percentage of its bandwidth roof",
	  NULL, mw_store_views_sql },
};
#define N_MIGRATIONS (sizeof(migrations) / sizeof(migrations[0]))

int mw_store_schema_latest(void)
{
	return migrations[N_MIGRATIONS - 1].version;
}

/* The store's location into buf: where, else $MEMWALL_DB, else the data folder's
 * results.db (its folders made only when create). 0, or -EINVAL with err saying what to set:
 * an empty --db, no HOME and no XDG_DATA_HOME (the working folder is nobody's data folder),
 * a path too long for buf (never cut into a path nobody named). */
static int store_path(const char *where, bool create, char *buf, size_t n, struct mw_error *err)
{
	const char *env = getenv("MEMWALL_DB"), *xdg = getenv("XDG_DATA_HOME");
	const char *home = getenv("HOME");
	char dir[4096];
	int w;
	if (where && !*where)
		return mw_error_set(err, -EINVAL, "--db", "", "is empty: give a file path (SQLite) "
				    "or a postgresql:// URL, or leave --db out for the default");
	if (where)
		w = snprintf(buf, n, "%s", where);
	else if (env && *env)
		w = snprintf(buf, n, "%s", env);
	else {
		if (xdg && *xdg)
			w = snprintf(dir, sizeof(dir), "%s/memwall", xdg);
		else if (home && *home)
			w = snprintf(dir, sizeof(dir), "%s/.local/share/memwall", home);
		else
			return mw_error_set(err, -EINVAL, "results store", "", "no data folder: HOME "
					    "and XDG_DATA_HOME are unset; give --db FILE or set "
					    "MEMWALL_DB");
		if (w < 0 || (size_t)w >= sizeof(dir) || (size_t)w + 12 > n)
			return mw_error_set(err, -ENAMETOOLONG, "results store", "", "the data "
					    "folder's path (XDG_DATA_HOME or HOME) is too long; give "
					    "--db FILE or set MEMWALL_DB");
		/* Parents first: ~/.local/share may not exist on a fresh account. */
		for (char *p = dir + 1; create && *p; p++)
			if (*p == '/') {
				*p = '\0';
				mkdir(dir, 0755);
				*p = '/';
			}
		if (create)
			mkdir(dir, 0755);
		w = snprintf(buf, n, "%s/results.db", dir);
	}
	if (w < 0 || (size_t)w >= n)
		return mw_error_set(err, -ENAMETOOLONG, "--db", "", "the store's path or URL is "
				    "longer than %zu bytes", n - 1);
	return 0;
}

const char *mw_store_default(const char *where, char *buf, size_t n)
{
	return store_path(where, true, buf, n, NULL) ? NULL : buf;
}

static int int_row(void *ctx, int ncol, const char *const *v)
{
	*(int *)ctx = ncol > 0 && v[0] ? atoi(v[0]) : 0;
	return 0;
}

int mw_store_schema_version(struct mw_store *s, int *version, struct mw_error *err)
{
	*version = 0;
	return s->ops->query(s->h, "SELECT MAX(version) FROM schema_version", NULL, 0, int_row,
			     version, err);
}

static const char *jstr(const json_t *o, const char *k);

/* The provenance columns of one record document: its DRAM source tag and synthetic flag. */
static void provenance_cols(const json_t *doc, char *tag, size_t n, char synth[2])
{
	struct mw_provenance prov;
	mw_provenance_of(doc, &prov);
	mw_provenance_tag(&prov, tag, n);
	synth[0] = prov.synthetic ? '1' : '0';
	synth[1] = '\0';
}

static int collect_pending(void *ctx, int ncol, const char *const *v)
{
	if (ncol < 2 || !v[0] || !v[1])
		return 0;
	return json_array_append_new(ctx, json_pack("[s, s]", v[0], v[1])) ? -ENOMEM : 0;
}

/* Rows stored before migration 3 get their provenance columns from their own documents. */
static int backfill_provenance(struct mw_store *s, struct mw_error *err)
{
	json_t *pending = json_array(), *row;
	size_t i;
	int rc = s->ops->query(s->h, "SELECT sha256, document FROM records WHERE dram_source IS "
			       "NULL", NULL, 0, collect_pending, pending, err);
	json_array_foreach(pending, i, row) {
		if (rc)
			break;
		json_t *doc = json_loads(json_string_value(json_array_get(row, 1)), 0, NULL);
		char tag[128], synth[2];
		provenance_cols(doc, tag, sizeof(tag), synth);
		const char *p[3] = { tag, synth, json_string_value(json_array_get(row, 0)) };
		rc = s->ops->query(s->h, "UPDATE records SET dram_source = $1, synthetic = $2 WHERE "
				   "sha256 = $3", p, 3, NULL, NULL, err);
		json_decref(doc);
	}
	json_decref(pending);
	return rc;
}

/* The database's tables: whether memwall's schema_version is among them, how many others. */
struct tables {
	bool ours;
	int others;
	char first[64];
};

static int table_row(void *ctx, int ncol, const char *const *v)
{
	struct tables *t = ctx;
	static const char *const mine[] = { "schema_version", "records", "metrics", "series",
					    "series_points", "series_summary" };
	if (ncol < 1 || !v[0])
		return 0;
	for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
		if (!strcmp(v[0], mine[i])) {
			t->ours |= i == 0;
			return 0;
		}
	if (!t->others++)
		snprintf(t->first, sizeof(t->first), "%s", v[0]);
	return 0;
}

static int migrate(struct mw_store *s, struct mw_error *err)
{
	char ver[16], now[32];
	int v = 0, rc;
	struct tables t = { 0 };
	/* Everything in the one exclusive transaction: two first uses at once serialize (the
	 * table was created before the lock: 2 of 12 concurrent first `db list`s failed), and a
	 * refusal leaves the database as it was. */
	if ((rc = s->ops->exec(s->h, s->ops->begin_exclusive, err)))
		return rc;
	if ((rc = s->ops->query(s->h, s->ops->tables_sql, NULL, 0, table_row, &t, err)))
		goto out;
	if (!t.ours && t.others) {
		rc = mw_error_set(err, -EINVAL, s->where, "--db", "holds %d tables of another "
				  "program (%s) and no memwall schema: not a results store; give "
				  "--db a new file", t.others, t.first);
		goto out;
	}
	if ((rc = s->ops->exec(s->h, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER "
			       "PRIMARY KEY, applied_utc TEXT NOT NULL, description TEXT NOT NULL)",
			       err)))
		goto out;
	if ((rc = mw_store_schema_version(s, &v, err)))
		goto out;
	if (v > mw_store_schema_latest()) {
		rc = mw_error_set(err, -EPROTO, s->where, "schema_version", "this store is at schema "
				  "version %d, newer than this memwall knows (%d): use the memwall "
				  "that wrote it, or a newer one", v, mw_store_schema_latest());
		goto out;
	}
	for (size_t i = 0; i < N_MIGRATIONS && !rc; i++) {
		if (migrations[i].version <= v)
			continue;
		snprintf(ver, sizeof(ver), "%d", migrations[i].version);
		const char *p[3] = { ver, mw_utc_now(now, sizeof(now), false), migrations[i].what };
		char *built = migrations[i].build ? migrations[i].build(s->ops) : NULL;
		rc = migrations[i].build && !built
			     ? mw_error_set(err, -ENOMEM, s->where, "", "out of memory")
			     : s->ops->exec(s->h, built ? built : migrations[i].sql, err);
		free(built);
		if (!rc)
			rc = s->ops->query(s->h, "INSERT INTO schema_version (version, applied_utc, "
					   "description) VALUES ($1, $2, $3)", p, 3, NULL, NULL, err);
	}
	if (!rc && v < 3)
		rc = backfill_provenance(s, err);
	if (!rc && v < 4)
		rc = mw_store_backfill_series(s, err);
	if (!rc && v < 5)
		rc = mw_store_backfill_points(s, err);
out:
	if (rc) {
		struct mw_error ignored;
		s->ops->exec(s->h, "ROLLBACK", &ignored);
		return rc;
	}
	return s->ops->exec(s->h, "COMMIT", err);
}

static int store_open(const char *where, bool create, struct mw_store **out,
		      struct mw_error *err)
{
	struct mw_store *s = calloc(1, sizeof(*s));
	struct stat st;
	int rc;
	*out = NULL;
	if (!s)
		return mw_error_set(err, -ENOMEM, where, "--db", "out of memory");
	if ((rc = store_path(where, create, s->where, sizeof(s->where), err))) {
		free(s);
		return rc;
	}
	/* Looking never creates: `db list` on a path that is not there says so. */
	if (!create && !strstr(s->where, "://") && stat(s->where, &st) && errno == ENOENT) {
		rc = mw_error_set(err, -ENOENT, s->where, "--db", "no results store here: `memwall "
				  "db import RECORD...` makes one");
		free(s);
		return rc;
	}
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]) && !s->ops; i++)
		if (backends[i]->accepts(s->where))
			s->ops = backends[i];
	if (!s->ops) {
		free(s);
		return mw_error_set(err, -EINVAL, where, "--db", "not a store: give a file path "
				    "(SQLite) or a postgresql://user@host/database URL");
	}
	if ((rc = s->ops->open(s->where, &s->h, err)) || (rc = migrate(s, err))) {
		mw_store_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

int mw_store_open(const char *where, struct mw_store **out, struct mw_error *err)
{
	return store_open(where, true, out, err);
}

int mw_store_open_existing(const char *where, struct mw_store **out, struct mw_error *err)
{
	return store_open(where, false, out, err);
}

void mw_store_close(struct mw_store *s)
{
	if (!s)
		return;
	if (s->h)
		s->ops->close(s->h);
	free(s);
}

const char *mw_store_backend(const struct mw_store *s)
{
	return s->ops->name;
}

const char *mw_store_file(const struct mw_store *s)
{
	return s->ops == &mw_store_sqlite ? s->where : NULL;
}

/* ---- import -------------------------------------------------------------------------------- */

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* A value of the record as SQL text: strings as they are, numbers printed, null as NULL. */
static const char *jtext(const json_t *v, char *buf, size_t n)
{
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v))
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, n, "%.17g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, n, "%d", json_is_true(v));
	else
		return NULL;
	return buf;
}

/* The memory configuration in one line, for tables: "2 DIMMs DDR5, 6400 MT/s (configured
 * 5200), 2 channels, 48 GiB", or why it is not there. */
static void memory_line(const json_t *mach, char *buf, size_t n)
{
	const json_t *m = json_object_get(mach, "memory_config");
	const char *why = jstr(json_object_get(mach, "unavailable"), "memory_config");
	char ch[48] = "channels unknown";
	if (!json_is_object(m)) {
		snprintf(buf, n, "%s", why ? why : "not recorded (the record predates memory_config)");
		return;
	}
	if (json_is_integer(json_object_get(m, "channels")))
		snprintf(ch, sizeof(ch), "%lld channels",
			 (long long)json_integer_value(json_object_get(m, "channels")));
	snprintf(buf, n, "%lld DIMMs %s, %lld MT/s (configured %lld), %s, %.0f GiB",
		 (long long)json_integer_value(json_object_get(m, "dimms")),
		 jstr(m, "type") ? jstr(m, "type") : "type unknown",
		 (long long)json_integer_value(json_object_get(m, "speed_mts")),
		 (long long)json_integer_value(json_object_get(m, "configured_speed_mts")), ch,
		 (double)json_integer_value(json_object_get(m, "total_bytes")) / (1 << 30));
}

static int insert_metrics(struct mw_store *s, const json_t *doc, const char *sha,
			  struct mw_error *err)
{
	struct mw_provenance prov;
	char words[256];
	mw_provenance_of(doc, &prov);
	static const char *const cols[] = { "unit", "measured", "n", "mean", "sd", "cv_pct",
					    "median", "min", "max", "ci95_low", "ci95_high",
					    "reason" };
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	const char *k;
	json_t *x;
	int rc = 0;
	json_object_foreach((json_t *)(uintptr_t)m, k, x) {
		char bufs[12][32];
		const char *p[15] = { sha, k };
		for (size_t i = 0; i < 12; i++)
			p[2 + i] = jtext(json_object_get(x, cols[i]), bufs[i], sizeof(bufs[i]));
		if (!p[3])
			p[3] = "0";
		p[14] = mw_provenance_metric(&prov, k, words, sizeof(words));
		rc = s->ops->query(s->h, "INSERT INTO metrics (sha256, metric, unit, measured, n, "
				   "mean, sd, cv_pct, median, min, max, ci95_low, ci95_high, reason, "
				   "provenance) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, "
				   "$12, $13, $14, $15) ON CONFLICT (sha256, metric) DO NOTHING", p, 15,
				   NULL, NULL, err);
		if (rc)
			break;
	}
	return rc;
}

static int insert_record(struct mw_store *s, const json_t *doc, const char *text,
			 const char *path, const char *sha, const struct mw_series_key *k,
			 struct mw_error *err)
{
	const json_t *mach = json_object_get(doc, "machine"), *eng = json_object_get(doc, "engine");
	const json_t *model = json_object_get(doc, "model");
	char now[32], thr[32], complete[8], memory[512], tag[128], synth[2];
	const char *base = strrchr(path, '/');
	const char *mname = jstr(model, "name");
	if (!mname && jstr(model, "path"))
		mname = strrchr(jstr(model, "path"), '/') ? strrchr(jstr(model, "path"), '/') + 1
							  : jstr(model, "path");
	memory_line(mach, memory, sizeof(memory));
	provenance_cols(doc, tag, sizeof(tag), synth);
	snprintf(complete, sizeof(complete), "%d", json_is_true(json_object_get(doc, "complete")));
	const char *p[19] = {
		sha, jstr(doc, "kind"), jstr(doc, "created_utc"), mw_utc_now(now, sizeof(now), false),
		jstr(json_object_get(doc, "protocol"), "name"), mname, jstr(mach, "cpu_name"),
		jstr(eng, "kind"), jtext(json_object_get(eng, "threads"), thr, sizeof(thr)),
		jstr(json_object_get(doc, "memwall"), "version"), complete,
		jstr(json_object_get(doc, "acceptance"), "status"), base ? base + 1 : path, text,
		memory, tag, synth, k->id, k->engine_version,
	};
	/* seq: the import order, which breaks ties between records created in the same second
	 * (created_utc has whole seconds); the writers' lock is held, so no two get one number. */
	int rc = mw_store_series_add(s, k, err);
	rc = rc ? rc : s->ops->query(s->h, "INSERT INTO records (sha256, kind, created_utc, "
			     "imported_utc, protocol, model, machine, backend, threads, "
			     "memwall_version, complete, acceptance, source, document, memory, "
			     "dram_source, synthetic, series, engine_version, seq) VALUES ($1, $2, $3, "
			     "$4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, "
			     "(SELECT COALESCE(MAX(seq), 0) + 1 FROM records)) "
			     "ON CONFLICT (sha256) DO NOTHING", p, 19, NULL, NULL, err);
	return rc ? rc : mw_store_roof_set(s, sha, doc, err);
}

static int count_row(void *ctx, int ncol, const char *const *v)
{
	(void)ncol;
	(void)v;
	(*(int *)ctx)++;
	return 0;
}

int mw_store_import(struct mw_store *s, const char *path, char sha[65], bool *added,
		    struct mw_error *err)
{
	json_t *doc = NULL;
	char *text = NULL;
	size_t len = 0;
	int rc, have = 0;
	struct mw_series_key k = { 0 };
	*added = false;
	if ((rc = mw_result_load(&doc, path, err)) || (rc = mw_result_validate(doc, path, err)) ||
	    (rc = mw_series_of(doc, &k, err)))
		goto out;
	/* The id is the hash of the bytes as they are on disk, the file a user can hash again;
	 * the text stored is the same bytes. */
	if ((rc = mw_file_read(path, "result record", "", MW_RESULT_MAX_BYTES, &text, &len, err)))
		goto out;
	if (strlen(text) != len) {
		rc = mw_error_set(err, -EINVAL, path, "", "holds a NUL byte: not a record memwall wrote");
		goto out;
	}
	mw_sha256_hex(text, len, sha);
	const char *p[1] = { sha };
	/* Looked up inside the writers' exclusive transaction: two imports of one record at once
	 * cannot both find it missing and both say "imported". */
	if ((rc = s->ops->exec(s->h, s->ops->begin_exclusive, err)))
		goto out;
	rc = s->ops->query(s->h, "SELECT 1 FROM records WHERE sha256 = $1", p, 1, count_row,
			   &have, err);
	if (!rc && have) {
		rc = s->ops->exec(s->h, "COMMIT", err);
		goto out;
	}
	if (!rc)
		rc = insert_record(s, doc, text, path, sha, &k, err);
	if (!rc)
		rc = insert_metrics(s, doc, sha, err);
	if (rc) {
		struct mw_error ignored;
		s->ops->exec(s->h, "ROLLBACK", &ignored);
		goto out;
	}
	if (!(rc = s->ops->exec(s->h, "COMMIT", err)))
		*added = true;
out:
	mw_series_key_free(&k);
	free(text);
	json_decref(doc);
	return rc;
}

/* ---- queries ------------------------------------------------------------------------------- */

/* Rows into an array of objects, one key per column; numbers where the column holds them. */
struct collect {
	json_t *rows;
	const char *const *keys;
	const bool *numeric;
	int nkeys;
};

static int collect_row(void *ctx, int ncol, const char *const *v)
{
	struct collect *c = ctx;
	json_t *o = json_object();
	for (int i = 0; i < ncol && i < c->nkeys; i++) {
		json_t *x = !v[i] ? json_null() : c->numeric[i] ? json_real(strtod(v[i], NULL))
						     : json_string(v[i]);
		json_object_set_new(o, c->keys[i], x);
	}
	return json_array_append_new(c->rows, o) ? -ENOMEM : 0;
}

/* v for LIKE ... ESCAPE '\\': % and _ are the user's characters, not wildcards. */
static char *like_pattern(const char *v)
{
	char *out = malloc(2 * strlen(v) + 3), *o = out;
	if (!out)
		return NULL;
	*o++ = '%';
	for (; *v; v++) {
		if (*v == '%' || *v == '_' || *v == '\\')
			*o++ = '\\';
		*o++ = *v;
	}
	*o++ = '%';
	*o = '\0';
	return out;
}

/* WHERE clause for f into sql (appended), its parameters into p (from p[*np], each malloc'd:
 * the caller frees them). -EINVAL with err naming the option for a date that is not one. */
static int where(const struct mw_store_filter *f, char *sql, size_t n, char **p, int *np,
		 struct mw_error *err)
{
	const struct {
		const char *val, *opt;
		const char *pre, *post; /* around the parameter */
		int like;         /* 1: substring, 2: until (the whole day) */
	} conds[] = {
		{ f->protocol, "--protocol", "r.protocol = ", "", 0 },
		{ f->model, "--model", "LOWER(r.model) LIKE LOWER(", ") ESCAPE '\\'", 1 },
		{ f->machine, "--machine", "LOWER(r.machine) LIKE LOWER(", ") ESCAPE '\\'", 1 },
		{ f->backend, "--backend", "r.backend = ", "", 0 },
		{ f->since, "--since", "r.created_utc >= ", "", 0 },
		{ f->until, "--until", "r.created_utc <= ", "", 2 },
	};
	const char *sep = " WHERE ";
	for (size_t i = 0; i < sizeof(conds) / sizeof(conds[0]); i++) {
		if (!conds[i].val)
			continue;
		if ((f->since == conds[i].val || f->until == conds[i].val) &&
		    !mw_iso_date(conds[i].val))
			return mw_error_set(err, -EINVAL, conds[i].opt, "", "'%s' is not an ISO 8601 "
					    "date: give 2026-11-21 or 2026-11-21T06:00:00Z",
					    conds[i].val);
		char c[96];
		snprintf(c, sizeof(c), "%s$%d%s", conds[i].pre, *np + 1, conds[i].post);
		strncat(sql, sep, n - strlen(sql) - 1);
		strncat(sql, c, n - strlen(sql) - 1);
		sep = " AND ";
		/* '~' sorts after every character of an ISO 8601 time: "2026-11-21~" is the day's end. */
		char *v = NULL;
		if (conds[i].like == 1)
			v = like_pattern(conds[i].val);
		else if (asprintf(&v, conds[i].like == 2 ? "%s~" : "%s", conds[i].val) < 0)
			v = NULL;
		if (!v)
			return mw_error_set(err, -ENOMEM, conds[i].opt, "", "out of memory");
		p[(*np)++] = v;
	}
	return 0;
}

static void params_free(char **p, int n)
{
	for (int i = 0; i < n; i++)
		free(p[i]);
}

static const char *const query_keys[] = { "id", "created_utc", "protocol", "model", "machine",
					  "memory", "backend", "kind", "acceptance", "tok_per_s",
					  "dram_MB_per_token", "dram_source" };
/* Sized by the keys: collect_row reads one flag per key. */
static const bool query_numeric[sizeof(query_keys) / sizeof(query_keys[0])] = { [9] = true,
										  [10] = true };

/* A synthetic model's name says so in every table: "stories110M [synthetic]". */
#define MODEL_COL                                                                              \
	"CASE WHEN r.synthetic = 1 AND LOWER(r.model) NOT LIKE '%%synthetic%%' THEN r.model || "  \
	"' [synthetic]' ELSE r.model END"

int mw_store_query(struct mw_store *s, const struct mw_store_filter *f, json_t **rows,
		   struct mw_error *err)
{
	static const struct mw_store_filter none;
	char sql[2048], *p[8];
	int np = 0;
	struct collect c = { json_array(), query_keys, query_numeric, 12 };
	snprintf(sql, sizeof(sql),
		 "SELECT r.sha256, r.created_utc, r.protocol, " MODEL_COL ", r.machine, r.memory,"
		 " r.backend, r.kind, r.acceptance, t.mean, d.mean, r.dram_source FROM records r"
		 " LEFT JOIN metrics t ON t.sha256 = r.sha256 AND t.metric = 'tok_per_s' AND t.measured = 1"
		 " LEFT JOIN metrics d ON d.sha256 = r.sha256 AND d.metric = 'dram_MB_per_token'"
		 " AND d.measured = 1");
	int rc = where(f ? f : &none, sql, sizeof(sql), p, &np, err);
	strncat(sql, " ORDER BY r.created_utc, r.sha256", sizeof(sql) - strlen(sql) - 1);
	if (!rc)
		rc = s->ops->query(s->h, sql, (const char *const *)p, np, collect_row, &c, err);
	params_free(p, np);
	if (rc)
		json_decref(c.rows);
	*rows = rc ? NULL : c.rows;
	return rc;
}

static const char *const compare_keys[] = { "protocol", "model", "machine", "memory",
					    "dram_source", "records", "tok_per_s", "tok_per_s_min",
					    "tok_per_s_max", "dram_MB_per_token",
					    "relative_tok_per_s" };
static const bool compare_numeric[sizeof(compare_keys) / sizeof(compare_keys[0])] = {
	[5] = true, [6] = true, [7] = true, [8] = true, [9] = true
};

int mw_store_compare(struct mw_store *s, const struct mw_store_filter *f, json_t **rows,
		     struct mw_error *err)
{
	static const struct mw_store_filter none;
	char sql[2048], *p[8];
	int np = 0;
	struct collect c = { json_array(), compare_keys, compare_numeric, 10 };
	/* The DRAM source is a setting: simulated and hardware figures never share a group. */
	snprintf(sql, sizeof(sql),
		 "SELECT r.protocol, " MODEL_COL ", r.machine, r.memory, r.dram_source, COUNT(*),"
		 " AVG(t.mean), MIN(t.mean),"
		 " MAX(t.mean), AVG(d.mean) FROM records r"
		 " LEFT JOIN metrics t ON t.sha256 = r.sha256 AND t.metric = 'tok_per_s' AND t.measured = 1"
		 " LEFT JOIN metrics d ON d.sha256 = r.sha256 AND d.metric = 'dram_MB_per_token'"
		 " AND d.measured = 1");
	int rc = where(f ? f : &none, sql, sizeof(sql), p, &np, err);
	/* Fastest first within each protocol and model; machines without a tok/s last. */
	strncat(sql, " GROUP BY r.protocol, r.model, r.synthetic, r.machine, r.memory,"
		" r.dram_source ORDER BY r.protocol,"
		" r.model, CASE WHEN AVG(t.mean) IS NULL THEN 1 ELSE 0 END, AVG(t.mean) DESC,"
		" r.machine", sizeof(sql) - strlen(sql) - 1);
	if (!rc)
		rc = s->ops->query(s->h, sql, (const char *const *)p, np, collect_row, &c, err);
	params_free(p, np);
	if (rc) {
		json_decref(c.rows);
		*rows = NULL;
		return rc;
	}
	/* Relative to the group's first (fastest) machine. */
	double best = 0;
	const char *gp = NULL, *gm = NULL;
	size_t i;
	json_t *r;
	json_array_foreach(c.rows, i, r) {
		const char *rp = jstr(r, "protocol"), *rm = jstr(r, "model");
		double t = json_number_value(json_object_get(r, "tok_per_s"));
		if (!gp || strcmp(gp, rp ? rp : "") || strcmp(gm ? gm : "", rm ? rm : "")) {
			gp = rp ? rp : "";
			gm = rm;
			best = json_is_number(json_object_get(r, "tok_per_s")) ? t : 0;
		}
		json_object_set_new(r, "relative_tok_per_s",
				    best > 0 && json_is_number(json_object_get(r, "tok_per_s"))
					    ? json_real(t / best) : json_null());
	}
	*rows = c.rows;
	return 0;
}

struct show_ctx {
	int n;
	char sha[65];
	char *text;
	char others[512];
};

static int show_row(void *ctx, int ncol, const char *const *v)
{
	struct show_ctx *c = ctx;
	if (ncol < 2 || !v[0] || !v[1])
		return 0;
	if (c->n++ == 0) {
		snprintf(c->sha, sizeof(c->sha), "%s", v[0]);
		c->text = strdup(v[1]);
		return c->text ? 0 : -ENOMEM;
	}
	size_t l = strlen(c->others);
	snprintf(c->others + l, sizeof(c->others) - l, "%s%.12s", l ? ", " : "", v[0]);
	return 0;
}

int mw_store_show(struct mw_store *s, const char *prefix, json_t **doc, char sha[65],
		  struct mw_error *err)
{
	struct show_ctx c = { 0 };
	char like[80];
	json_error_t jerr;
	size_t n = strlen(prefix);
	*doc = NULL;
	if (n < 6 || n > 64 || strspn(prefix, "0123456789abcdef") != n)
		return mw_error_set(err, -EINVAL, prefix, "ID", "an id is the record's sha256, or its "
				    "first 6 or more hex digits (`memwall db list` shows them)");
	snprintf(like, sizeof(like), "%s%%", prefix);
	const char *p[1] = { like };
	int rc = s->ops->query(s->h, "SELECT sha256, document FROM records WHERE sha256 LIKE $1 "
			       "ORDER BY sha256", p, 1, show_row, &c, err);
	if (rc)
		goto out;
	if (c.n == 0) {
		rc = mw_error_set(err, -ENOENT, prefix, "ID", "no record with this id in the store");
	} else if (c.n > 1) {
		rc = mw_error_set(err, -EEXIST, prefix, "ID", "names %d records (%.12s, %s): give more "
				  "digits", c.n, c.sha, c.others);
	} else if (!(*doc = json_loads(c.text, 0, &jerr))) {
		rc = mw_error_set(err, -EIO, c.sha, "document", "the stored record is not JSON: %s",
				  jerr.text);
	} else if (mw_result_validate(*doc, c.sha, err)) {
		/* Imports validate; a row that does not was written by something else. */
		snprintf(err->source, sizeof(err->source), "%s", c.sha);
		json_decref(*doc);
		*doc = NULL;
		rc = -EIO;
	} else {
		memcpy(sha, c.sha, 65);
	}
out:
	free(c.text);
	return rc;
}
