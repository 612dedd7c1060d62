/* src/record/store_series.c: the results store's series (store.h, "series"): the series table
 * written at import, its backfill by migration 4, and the queries `db series`, `db check` and
 * `db changes` read. Every grouping is by the key src/record/series.c computes; nothing here
 * decides what a series is. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "provenance.h"
#include "result.h"
#include "store/internal.h"
#include "store_series.h"
#include "text.h"

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

int mw_store_series_add(struct mw_store *s, const struct mw_series_key *k, struct mw_error *err)
{
	char now[32];
	char *key = json_dumps(k->key, JSON_COMPACT | JSON_SORT_KEYS);
	char *fp = json_dumps(k->fingerprint, JSON_COMPACT | JSON_SORT_KEYS);
	const char *p[9] = { k->id, key, fp, k->machine, k->protocol, k->model, k->engine,
			     k->counters, mw_utc_now(now, sizeof(now), false) };
	int rc = key && fp ? s->ops->query(s->h, "INSERT INTO series (id, key, fingerprint, "
					   "machine, protocol, model, engine, counters, created_utc) "
					   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT "
					   "(id) DO NOTHING", p, 9, NULL, NULL, err)
			   : mw_error_set(err, -ENOMEM, "series", "", "out of memory");
	free(key);
	free(fp);
	return rc;
}

static int collect_sha(void *ctx, int ncol, const char *const *v)
{
	if (ncol < 1 || !v[0])
		return 0;
	return json_array_append_new(ctx, json_string(v[0])) ? -ENOMEM : 0;
}

static int one_text(void *ctx, int ncol, const char *const *v)
{
	char **out = ctx;
	if (ncol < 1 || !v[0] || *out)
		return 0;
	*out = strdup(v[0]);
	return *out ? 0 : -ENOMEM;
}

/* One stored record: its series from its own document, its place in the import order. */
static int backfill_one(struct mw_store *s, const char *sha, long long seq, struct mw_error *err)
{
	char *text = NULL, seqs[32];
	const char *p[1] = { sha };
	struct mw_series_key k = { 0 };
	int rc = s->ops->query(s->h, "SELECT document FROM records WHERE sha256 = $1", p, 1,
			       one_text, &text, err);
	json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
	snprintf(seqs, sizeof(seqs), "%lld", seq);
	/* A row whose document is no record (never written by an import) keeps no series. */
	bool record = json_is_string(json_object_get(json_object_get(doc, "protocol"), "name"));
	if (!rc && record && !(rc = mw_series_of(doc, &k, err)) &&
	    !(rc = mw_store_series_add(s, &k, err))) {
		const char *u[4] = { k.id, k.engine_version, seqs, sha };
		rc = s->ops->query(s->h, "UPDATE records SET series = $1, engine_version = $2, seq = "
				   "$3 WHERE sha256 = $4", u, 4, NULL, NULL, err);
	} else if (!rc) {
		const char *u[2] = { seqs, sha };
		rc = s->ops->query(s->h, "UPDATE records SET seq = $1 WHERE sha256 = $2", u, 2, NULL,
				   NULL, err);
	}
	mw_series_key_free(&k);
	json_decref(doc);
	free(text);
	return rc;
}

int mw_store_backfill_series(struct mw_store *s, struct mw_error *err)
{
	json_t *shas = json_array(), *x;
	size_t i;
	/* The import order as well as the store knew it: imported_utc (whole seconds), then the
	 * record's own date, then its id. */
	int rc = s->ops->query(s->h, "SELECT sha256 FROM records ORDER BY imported_utc, "
			       "created_utc, sha256", NULL, 0, collect_sha, shas, err);
	json_array_foreach(shas, i, x) {
		if (rc)
			break;
		rc = backfill_one(s, json_string_value(x), (long long)i + 1, err);
	}
	json_decref(shas);
	return rc;
}

/* ---- db series */

static const char *const series_keys[] = { "id", "key", "machine", "protocol", "model",
					   "engine", "counters", "records", "first_utc",
					   "last_utc" };

static int series_row(void *ctx, int ncol, const char *const *v)
{
	json_t *o = json_object();
	for (int i = 0; i < ncol && i < (int)(sizeof(series_keys) / sizeof(series_keys[0])); i++) {
		json_t *x = !v[i] ? json_null()
			    : i == 1 ? json_loads(v[i], 0, NULL)
			    : i == 7 ? json_integer(strtoll(v[i], NULL, 10)) : json_string(v[i]);
		json_object_set_new(o, series_keys[i], x ? x : json_null());
	}
	return json_array_append_new(ctx, o) ? -ENOMEM : 0;
}

/* The latest record of a series (created_utc, then import order): its id, date, engine
 * version and document. */
struct latest {
	char *id, *created, *version, *doc;
	double mb, tok;
	bool has_mb, has_tok;
};

static int latest_row(void *ctx, int ncol, const char *const *v)
{
	struct latest *l = ctx;
	if (ncol < 6 || l->id)
		return 0;
	l->id = strdup(v[0] ? v[0] : "");
	l->created = v[1] ? strdup(v[1]) : NULL;
	l->version = v[2] ? strdup(v[2]) : NULL;
	l->doc = v[3] ? strdup(v[3]) : NULL;
	if ((l->has_mb = v[4] != NULL))
		l->mb = strtod(v[4], NULL);
	if ((l->has_tok = v[5] != NULL))
		l->tok = strtod(v[5], NULL);
	return l->id ? 0 : -ENOMEM;
}

/* The series row's figures: the latest record's medians and its provenance. */
static int add_latest(struct mw_store *s, json_t *row, struct mw_error *err)
{
	struct latest l = { 0 };
	const char *p[1] = { jstr(row, "id") };
	int rc = s->ops->query(s->h, "SELECT r.sha256, r.created_utc, r.engine_version, "
			       "r.document, d.median, t.median FROM records r"
			       " LEFT JOIN metrics d ON d.sha256 = r.sha256 AND d.metric = "
			       "'dram_MB_per_token' AND d.measured = 1"
			       " LEFT JOIN metrics t ON t.sha256 = r.sha256 AND t.metric = "
			       "'tok_per_s' AND t.measured = 1"
			       " WHERE r.series = $1 ORDER BY r.created_utc DESC, r.seq DESC LIMIT 1",
			       p, 1, latest_row, &l, err);
	json_t *doc = l.doc ? json_loads(l.doc, 0, NULL) : NULL;
	if (!rc) {
		struct mw_provenance prov;
		char words[256];
		mw_provenance_of(doc, &prov);
		json_object_set_new(row, "last_id", l.id ? json_string(l.id) : json_null());
		json_object_set_new(row, "last_engine_version",
				    l.version ? json_string(l.version) : json_null());
		json_object_set_new(row, "dram_MB_per_token", l.has_mb ? json_real(l.mb)
								       : json_null());
		json_object_set_new(row, "tok_per_s", l.has_tok ? json_real(l.tok) : json_null());
		json_object_set_new(row, "provenance",
				    json_string(mw_provenance_words(&prov, words, sizeof(words))));
		json_object_set_new(row, "model_synthetic", json_boolean(prov.synthetic));
	}
	json_decref(doc);
	free(l.id);
	free(l.created);
	free(l.version);
	free(l.doc);
	return rc;
}

int mw_store_series_list(struct mw_store *s, json_t **rows, struct mw_error *err)
{
	json_t *out = json_array(), *row;
	size_t i;
	int rc = s->ops->query(s->h, "SELECT s.id, s.key, s.machine, s.protocol, s.model, s.engine,"
			       " s.counters, COUNT(r.sha256), MIN(r.created_utc), MAX(r.created_utc)"
			       " FROM series s JOIN records r ON r.series = s.id GROUP BY s.id, s.key,"
			       " s.machine, s.protocol, s.model, s.engine, s.counters ORDER BY"
			       " s.protocol, s.machine, MIN(r.created_utc), s.id", NULL, 0,
			       series_row, out, err);
	json_array_foreach(out, i, row) {
		if (rc)
			break;
		rc = add_latest(s, row, err);
	}
	if (rc)
		json_decref(out);
	*rows = rc ? NULL : out;
	return rc;
}

/* ---- finding a series, a record's place in one */

struct found {
	int n;
	char first[65];
	char others[256];
};

static int found_row(void *ctx, int ncol, const char *const *v)
{
	struct found *f = ctx;
	if (ncol < 1 || !v[0])
		return 0;
	if (f->n++ == 0) {
		snprintf(f->first, sizeof(f->first), "%s", v[0]);
		return 0;
	}
	size_t l = strlen(f->others);
	snprintf(f->others + l, sizeof(f->others) - l, "%s%.12s", l ? ", " : "", v[0]);
	return 0;
}

int mw_store_series_find(struct mw_store *s, const char *prefix, char id[65],
			 struct mw_error *err)
{
	struct found f = { 0 };
	char like[80];
	size_t n = strlen(prefix);
	if (n < 6 || n > 64 || strspn(prefix, "0123456789abcdef") != n)
		return mw_error_set(err, -EINVAL, prefix, "--series", "a series is named by its id "
				    "or its first 6 or more hex digits (`memwall db series` shows "
				    "them)");
	snprintf(like, sizeof(like), "%s%%", prefix);
	const char *p[1] = { like };
	int rc = s->ops->query(s->h, "SELECT id FROM series WHERE id LIKE $1 ORDER BY id", p, 1,
			       found_row, &f, err);
	if (rc)
		return rc;
	if (f.n == 0)
		return mw_error_set(err, -ENOENT, prefix, "--series", "no series with this id in "
				    "the store (`memwall db series` lists them)");
	if (f.n > 1)
		return mw_error_set(err, -EEXIST, prefix, "--series", "names %d series (%.12s, %s): "
				    "give more digits", f.n, f.first, f.others);
	memcpy(id, f.first, 65);
	return 0;
}

struct place {
	bool found;
	struct mw_store_place *out;
};

static int place_row(void *ctx, int ncol, const char *const *v)
{
	struct place *p = ctx;
	if (ncol < 3 || p->found)
		return 0;
	p->found = true;
	snprintf(p->out->series, sizeof(p->out->series), "%s", v[0] ? v[0] : "");
	snprintf(p->out->created_utc, sizeof(p->out->created_utc), "%s", v[1] ? v[1] : "");
	p->out->seq = v[2] ? strtoll(v[2], NULL, 10) : -1;
	return 0;
}

int mw_store_record_place(struct mw_store *s, const char *sha, struct mw_store_place *out,
			  struct mw_error *err)
{
	struct place p = { false, out };
	const char *q[1] = { sha };
	memset(out, 0, sizeof(*out));
	out->seq = -1;
	int rc = s->ops->query(s->h, "SELECT series, created_utc, seq FROM records WHERE sha256 = "
			       "$1", q, 1, place_row, &p, err);
	out->stored = p.found;
	return rc;
}

/* ---- a series' history */

struct hist_ctx {
	json_t *rows;
	int rc;
	bool with_text;
};

static int hist_row(void *ctx, int ncol, const char *const *v)
{
	struct hist_ctx *h = ctx;
	if (ncol < 4 || !v[0] || !v[3])
		return 0;
	json_t *doc = json_loads(v[3], 0, NULL);
	if (!doc)
		return h->rc = -EIO;
	return json_array_append_new(h->rows, json_pack("{s:s, s:s?, s:s?, s:o, s:s?}", "id", v[0],
							"created_utc", v[1], "engine_version", v[2],
							"document", doc, "text",
							h->with_text ? v[3] : NULL)) ? -ENOMEM : 0;
}

int mw_store_series_history(struct mw_store *s, const struct mw_store_history *h, json_t **recs,
			    struct mw_error *err)
{
	char sql[1024], seq[32], like[80], lim[48] = "";
	const char *p[6];
	int np = 0;
	struct hist_ctx c = { NULL, 0, h->with_text };
	*recs = NULL;
	if (h->since && !mw_iso_date(h->since))
		return mw_error_set(err, -EINVAL, "--against", "", "since:%s is not an ISO 8601 date: "
				    "give since:2026-11-21 or since:2026-11-21T06:00:00Z", h->since);
	if (!(c.rows = json_array()))
		return mw_error_set(err, -ENOMEM, "results store", "", "out of memory");
	snprintf(sql, sizeof(sql), "SELECT sha256, created_utc, engine_version, document FROM "
		 "records WHERE series = $1");
	p[np++] = h->series;
	if (h->exclude) {
		p[np++] = h->exclude;
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), " AND sha256 <> $%d", np);
	}
	/* Before the record: created earlier, or in the same second and imported before it
	 * (seq); a record not in the store counts everything of its second as earlier. */
	if (h->before_utc) {
		p[np++] = h->before_utc;
		snprintf(seq, sizeof(seq), "%lld", h->before_seq);
		if (h->before_seq >= 0) {
			p[np++] = seq;
			snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), " AND (created_utc < $%d"
				 " OR (created_utc = $%d AND seq < $%d))", np - 1, np - 1, np);
		} else {
			snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), " AND created_utc <= $%d",
				 np);
		}
	}
	if (h->since) {
		p[np++] = h->since;
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), " AND created_utc >= $%d", np);
	}
	if (h->only) {
		snprintf(like, sizeof(like), "%.64s%%", h->only);
		p[np++] = like;
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), " AND sha256 LIKE $%d", np);
	}
	if (h->last)
		snprintf(lim, sizeof(lim), " LIMIT %zu", h->last);
	snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), " ORDER BY created_utc DESC, seq "
		 "DESC%s", lim);
	int rc = s->ops->query(s->h, sql, p, np, hist_row, &c, err);
	if (rc == -EIO && c.rc == -EIO)
		mw_error_set(err, -EIO, "results store", "records.document", "a stored record of "
			     "series %.12s is not JSON: not written by `memwall db import`", h->series);
	/* Newest first from the query (for LIMIT); oldest first for the caller. */
	size_t n = json_array_size(c.rows);
	for (size_t i = 0; !rc && i < n / 2; i++) {
		json_t *a = json_incref(json_array_get(c.rows, i));
		json_array_set(c.rows, i, json_array_get(c.rows, n - 1 - i));
		json_array_set_new(c.rows, n - 1 - i, a);
	}
	if (rc)
		json_decref(c.rows);
	else
		*recs = c.rows;
	return rc;
}

/* ---- a series' per-record medians */

static int point_row(void *ctx, int ncol, const char *const *v)
{
	if (ncol < 4 || !v[0] || !v[3])
		return 0;
	return json_array_append_new(ctx, json_pack("{s:s, s:s?, s:s?, s:f}", "id", v[0],
						    "created_utc", v[1], "engine_version", v[2],
						    "median", strtod(v[3], NULL))) ? -ENOMEM : 0;
}

int mw_store_series_points(struct mw_store *s, const char *id, const char *metric,
			   json_t **rows, struct mw_error *err)
{
	json_t *out = json_array();
	const char *p[2] = { id, metric };
	int rc = s->ops->query(s->h, "SELECT r.sha256, r.created_utc, r.engine_version, m.median"
			       " FROM records r JOIN metrics m ON m.sha256 = r.sha256 AND m.metric ="
			       " $2 AND m.measured = 1 WHERE r.series = $1 AND m.median IS NOT NULL"
			       " ORDER BY r.created_utc, r.seq", p, 2, point_row, out, err);
	if (rc)
		json_decref(out);
	*rows = rc ? NULL : out;
	return rc;
}

/* ---- views for dashboards (migration 5) */

/* The columns both halves of series_points share: the series and the record. */
#define POINT_SERIES                                                                            \
	"s.id AS series, s.protocol || ' / ' || COALESCE(s.model, '?') || ' / ' ||"           \
	" COALESCE(s.machine, '?') || ' / ' || s.counters || ' (' || SUBSTR(s.id, 1, 12) ||"   \
	" ')' AS series_label, s.protocol, s.model, s.machine, s.engine, s.counters,"          \
	" r.sha256 AS record_id, r.seq, r.created_utc, %s"

char *mw_store_views_sql(const struct mw_store_ops *ops)
{
	char *sql = NULL, time[160], head[800];
	snprintf(time, sizeof(time), "%sr.created_utc%s AS time, r.engine_version,"
		 " r.memwall_version, ", ops->utc_time_pre, ops->utc_time_post);
	snprintf(head, sizeof(head), POINT_SERIES, time);
	/* Every value a record measured, with its provenance in the words every surface uses;
	 * a figure not measured is a row with a NULL value and its reason, never a 0. The
	 * percentage of the bandwidth roof is not a summary metric: it comes from the record's
	 * roofline block (mw_roof_pct), as the row 'roof_pct'. */
	if (asprintf(&sql,
		     "ALTER TABLE metrics ADD COLUMN provenance TEXT;"
		     "ALTER TABLE records ADD COLUMN roof_pct DOUBLE PRECISION;"
		     "ALTER TABLE records ADD COLUMN roof_reason TEXT;"
		     "ALTER TABLE records ADD COLUMN roof_provenance TEXT;"
		     "CREATE VIEW series_points AS"
		     " SELECT %s m.metric, m.unit, m.median AS value, m.mean, m.n AS runs,"
		     " m.measured, m.reason, m.provenance, r.synthetic"
		     " FROM records r JOIN series s ON s.id = r.series"
		     " JOIN metrics m ON m.sha256 = r.sha256"
		     " UNION ALL"
		     " SELECT %s 'roof_pct', '%% of the bandwidth roof (the measured tok/s over the "
		     "roof''s most tok/s, roofline.headroom)', r.roof_pct, r.roof_pct, NULL,"
		     " CASE WHEN r.roof_pct IS NULL THEN 0 ELSE 1 END, r.roof_reason,"
		     " r.roof_provenance, r.synthetic"
		     " FROM records r JOIN series s ON s.id = r.series;"
		     "CREATE VIEW series_summary AS"
		     " SELECT s.id AS series, s.protocol || ' / ' || COALESCE(s.model, '?') || ' / ' ||"
		     " COALESCE(s.machine, '?') || ' / ' || s.counters || ' (' || SUBSTR(s.id, 1, 12)"
		     " || ')' AS series_label, s.protocol, s.model, s.machine, s.engine, s.counters,"
		     " COUNT(r.sha256) AS records, MIN(r.created_utc) AS first_utc,"
		     " MAX(r.created_utc) AS last_utc"
		     " FROM series s JOIN records r ON r.series = s.id"
		     " GROUP BY s.id, s.protocol, s.model, s.machine, s.engine, s.counters;",
		     head, head) < 0)
		return NULL;
	return sql;
}

int mw_store_roof_set(struct mw_store *s, const char *sha, const json_t *doc,
		      struct mw_error *err)
{
	char why[512], pct[40], prov[700];
	double x = mw_roof_pct(doc, why, sizeof(why), prov, sizeof(prov));
	snprintf(pct, sizeof(pct), "%.17g", x);
	const char *v[4] = { isnan(x) ? NULL : pct, isnan(x) ? mw_esc(why) : NULL, prov, sha };
	return s->ops->query(s->h, "UPDATE records SET roof_pct = $1, roof_reason = $2,"
			     " roof_provenance = $3 WHERE sha256 = $4", v, 4, NULL, NULL, err);
}

/* One stored record's metric provenance and roof columns from its own document. */
static int backfill_point(struct mw_store *s, const char *sha, struct mw_error *err)
{
	char *text = NULL, words[256];
	const char *p[1] = { sha };
	struct mw_provenance prov;
	int rc = s->ops->query(s->h, "SELECT document FROM records WHERE sha256 = $1", p, 1,
			       one_text, &text, err);
	json_t *doc = text ? json_loads(text, 0, NULL) : NULL, *x;
	const char *k;
	mw_provenance_of(doc, &prov);
	json_object_foreach(json_object_get(json_object_get(doc, "summary"), "metrics"), k, x) {
		const char *u[3] = { mw_provenance_metric(&prov, k, words, sizeof(words)), sha, k };
		if (!rc)
			rc = s->ops->query(s->h, "UPDATE metrics SET provenance = $1 WHERE sha256 = $2"
					   " AND metric = $3", u, 3, NULL, NULL, err);
	}
	if (!rc && doc)
		rc = mw_store_roof_set(s, sha, doc, err);
	json_decref(doc);
	free(text);
	return rc;
}

int mw_store_backfill_points(struct mw_store *s, struct mw_error *err)
{
	json_t *shas = json_array(), *x;
	size_t i;
	int rc = s->ops->query(s->h, "SELECT sha256 FROM records", NULL, 0, collect_sha, shas, err);
	json_array_foreach(shas, i, x)
		if (!rc)
			rc = backfill_point(s, json_string_value(x), err);
	json_decref(shas);
	return rc;
}
