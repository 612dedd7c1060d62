/* src/cli/db_series.c: `memwall db series|check|changes`: a store's records as series
 * (src/record/series.h), a record judged against its series' history (src/record/history.h),
 * and the steps in each series' history (src/record/changepoint.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "changepoint.h"
#include "db.h"
#include "db_rows.h"
#include "history.h"
#include "mw.h"
#include "provenance.h"
#include "result.h"
#include "series.h"
#include "sha256.h"
#include "text.h"

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The metrics a sub-verb judges: --metric (each a name from the metric table), else the
 * default two. */
static int metrics_of(const struct db_args *a, const char *verb, const char **out, size_t *n)
{
	*n = 0;
	if (!a->n_metrics) {
		out[(*n)++] = mw_series_default_metrics[0];
		out[(*n)++] = mw_series_default_metrics[1];
		return 0;
	}
	for (int i = 0; i < a->n_metrics; i++) {
		if (!mw_metric_find(a->metrics[i]))
			return mw_fail(MW_EXIT_USAGE, verb, "--metric %s: no such metric (the names are "
				       "summary.metrics' keys, e.g. dram_MB_per_token, tok_per_s; "
				       "results/README.md lists them)", a->metrics[i]);
		out[(*n)++] = a->metrics[i];
	}
	return 0;
}

/* ---- db series */

static const char *const series_cols[] = { "id", "machine", "protocol", "model", "engine",
					   "counters", "records", "first_utc", "last_utc",
					   "dram_MB_per_token", "tok_per_s", "provenance" };

int mw_db_series(struct mw_store *s, struct db_args *a)
{
	struct mw_error err;
	json_t *rows = NULL, *r;
	size_t i;
	if (a->nops)
		return mw_fail(MW_EXIT_USAGE, "db series", "unexpected argument '%s'", a->ops[0]);
	if (a->fmt_set && a->fmt != MW_FORMAT_MD && a->fmt != MW_FORMAT_JSON &&
	    a->fmt != MW_FORMAT_CSV)
		return mw_fail(MW_EXIT_USAGE, "db series", "--format wants md, csv or json");
	mw_error_clear(&err);
	if (mw_store_series_list(s, &rows, &err)) {
		mw_error_print(&err);
		return MW_EXIT_ENV;
	}
	/* A synthetic model says so in the table, as `db list` does. */
	json_array_foreach(rows, i, r)
		if (json_is_true(json_object_get(r, "model_synthetic")) && jstr(r, "model") &&
		    !strstr(jstr(r, "model"), "synthetic")) {
			char m[200];
			snprintf(m, sizeof(m), "%s [synthetic]", jstr(r, "model"));
			json_object_set_new(r, "model", json_string(m));
		}
	mw_db_print_rows(stdout, rows, series_cols, sizeof(series_cols) / sizeof(series_cols[0]),
			 a->fmt);
	if (a->fmt == MW_FORMAT_MD && json_array_size(rows) == 0)
		fprintf(stderr, "memwall db: no series (import records: memwall db import "
				"RECORD...)\n");
	else if (a->fmt == MW_FORMAT_MD)
		printf("\nThe figures are the latest record's medians over its runs (MB/token: "
		       "dram_MB_per_token; tok/s: tok_per_s), with that record's provenance. "
		       "`memwall db check RECORD` judges a record against its series, `memwall db "
		       "changes` finds steps in each one.\n");
	json_decref(rows);
	return MW_EXIT_OK;
}

/* ---- db check */

/* The record to judge: a file (not necessarily imported), else an id in the store. *sha is
 * the record's id either way. */
static int check_record(struct mw_store *s, const char *arg, json_t **doc, char sha[65])
{
	struct mw_error err;
	struct stat st;
	mw_error_clear(&err);
	if (!stat(arg, &st)) {
		if (mw_result_load(doc, arg, &err) || mw_result_validate(*doc, arg, &err) ||
		    mw_sha256_file(arg, sha, NULL, &err)) {
			mw_error_print(&err);
			json_decref(*doc);
			*doc = NULL;
			return MW_EXIT_USAGE;
		}
		return 0;
	}
	int rc = mw_store_show(s, arg, doc, sha, &err);
	if (rc == -EINVAL)
		return mw_fail(MW_EXIT_USAGE, "db check", "%s: neither a record file (%s) nor a "
			       "record id in the store (its sha256, or 6 or more of its first hex "
			       "digits)", mw_esc(arg), strerror(ENOENT));
	if (rc) {
		mw_error_print(&err);
		return rc == -EIO ? MW_EXIT_ENV : MW_EXIT_USAGE;
	}
	return 0;
}

/* --against: last:N (default 10), since:DATE or record:ID into h; what it is, for the report,
 * into what. */
static int parse_against(const char *v, struct mw_store_history *h, char *what, size_t n)
{
	long last = 10;
	if (!v || !strncmp(v, "last:", 5)) {
		if (v && mw_parse_long(v + 5, 1, 1000000, &last))
			return mw_fail(MW_EXIT_USAGE, "db check", "--against %s: last:N wants a number "
				       "of records, 1 or more", v);
		h->last = (size_t)last;
		snprintf(what, n, "the last %ld records before it", last);
	} else if (!strncmp(v, "since:", 6)) {
		if (!mw_iso_date(v + 6))
			return mw_fail(MW_EXIT_USAGE, "db check", "--against %s: since:DATE wants an "
				       "ISO 8601 date, e.g. since:2026-11-21", v);
		h->since = v + 6;
		snprintf(what, n, "the records since %s before it", v + 6);
	} else if (!strncmp(v, "record:", 7) && strlen(v + 7) >= 6 &&
		   strspn(v + 7, "0123456789abcdef") == strlen(v + 7)) {
		h->only = v + 7;
		snprintf(what, n, "record %.12s", v + 7);
	} else {
		return mw_fail(MW_EXIT_USAGE, "db check", "--against '%s': give last:N (the N "
			       "records before it, default last:10), since:DATE or record:ID",
			       v);
	}
	return 0;
}

/* The history's documents, each validated again: a row edited in the database must not
 * move a verdict. */
static int load_history(struct mw_store *s, const struct mw_store_history *h, json_t **recs,
			const json_t ***docs, size_t *n)
{
	struct mw_error err;
	json_t *r;
	size_t i;
	mw_error_clear(&err);
	int rc = mw_store_series_history(s, h, recs, &err);
	if (rc) {
		mw_error_print(&err);
		return rc == -EINVAL ? MW_EXIT_USAGE : MW_EXIT_ENV;
	}
	*n = json_array_size(*recs);
	*docs = calloc(*n + 1, sizeof(**docs));
	if (!*docs)
		return mw_fail(MW_EXIT_ENV, "db check", "out of memory");
	json_array_foreach(*recs, i, r) {
		(*docs)[i] = json_object_get(r, "document");
		if (mw_result_validate((*docs)[i], jstr(r, "id"), &err)) {
			mw_error_print(&err);
			return MW_EXIT_ENV;
		}
	}
	return 0;
}

static int check_format(const char *fmt, const char *verb, bool junit)
{
	if (!fmt || !strcmp(fmt, "md"))
		return 0;
	if (!strcmp(fmt, "json"))
		return 1;
	if (junit && !strcmp(fmt, "junit"))
		return 2;
	return -mw_fail(MW_EXIT_USAGE, verb, "--format '%s': use md, json%s", fmt,
			junit ? " or junit" : "");
}

int mw_db_check(struct mw_store *s, struct db_args *a)
{
	struct mw_compare_opts o;
	struct mw_store_history h = { .before_seq = -1 };
	struct mw_series_key k = { 0 };
	struct mw_store_place place;
	struct mw_comparison *c = NULL;
	struct mw_error err;
	const char *metrics[DB_MAX_METRICS];
	const json_t **docs = NULL;
	json_t *doc = NULL, *recs = NULL;
	char sha[65], what[160], base[1200];
	size_t nm = 0, nh = 0;
	int fmt = check_format(a->fmt_text, "db check", true), code;
	if (fmt < 0)
		return -fmt;
	if (a->nops != 1)
		return mw_fail(MW_EXIT_USAGE, "db check", "give one record: a record file, or the id "
			       "of one in the store (memwall db check --help)");
	if ((code = metrics_of(a, "db check", metrics, &nm)) ||
	    (code = parse_against(a->against, &h, what, sizeof(what))) ||
	    (code = check_record(s, a->ops[0], &doc, sha)))
		goto out;
	mw_compare_opts_default(&o);
	o.require = metrics;
	o.n_require = nm;
	if (!isnan(a->max_regress)) {
		o.max_regress_pct = a->max_regress;
		o.max_regress_set = true;
	}
	mw_error_clear(&err);
	if (mw_series_of(doc, &k, &err) || mw_store_record_place(s, sha, &place, &err)) {
		mw_error_print(&err);
		code = MW_EXIT_ENV;
		goto out;
	}
	/* Its own history never holds the record: before it, and never it. */
	h.series = k.id;
	h.exclude = sha;
	if (!h.only) {
		h.before_utc = place.stored ? place.created_utc : jstr(doc, "created_utc");
		h.before_seq = place.stored ? place.seq : -1;
	}
	if ((code = load_history(s, &h, &recs, &docs, &nh)))
		goto out;
	if (!(c = calloc(1, sizeof(*c)))) {
		code = mw_fail(MW_EXIT_ENV, "db check", "out of memory");
		goto out;
	}
	mw_history_check(doc, docs, nh, a->min_records > 0 ? (size_t)a->min_records
							: MW_HISTORY_MIN_RECORDS, &o, c);
	struct mw_provenance prov;
	mw_provenance_of(doc, &prov);
	mw_provenance_words(&prov, c->provenance, sizeof(c->provenance));
	if (h.only && !nh)
		snprintf(c->refused, sizeof(c->refused), "no record %.64s in this record's series "
			 "%.12s (`memwall db series`)", h.only, k.id);
	if (h.only && !nh)
		mw_compare_decide(c);
	snprintf(base, sizeof(base), "the pooled runs of %s (%zu found) in series %.12s (%s, %s, "
		 "%s, %s, %s)", what, nh, k.id, k.machine, k.protocol, k.model, k.engine,
		 k.counters);
	const char *paths[2] = { base, a->ops[0] };
	(fmt == 0 ? mw_compare_print_md : fmt == 1 ? mw_compare_print_json
						  : mw_compare_print_junit)(stdout, c, paths);
	code = c->exit_code;
out:
	free(c);
	free(docs);
	json_decref(recs);
	json_decref(doc);
	mw_series_key_free(&k);
	return code;
}

/* ---- db changes */

enum { MAX_POINTS = 5000 };

static json_t *end_json(const json_t *pt)
{
	return json_pack("{s:s?, s:s?, s:s?, s:o}", "id", jstr(pt, "id"), "created_utc",
			 jstr(pt, "created_utc"), "engine_version", jstr(pt, "engine_version"),
			 "median", json_real(json_number_value(json_object_get(pt, "median"))));
}

static json_t *change_json(const json_t *series, const struct mw_metric *met, const json_t *pts,
			   const struct mw_change *ch, const struct mw_cp_result *r)
{
	double worse = met->better > 0 ? -ch->change_pct : ch->change_pct;
	json_t *o = json_pack("{s:s?, s:s, s:s, s:s?, s:o, s:o, s:o, s:s}", "series",
			      jstr(series, "id"), "metric", met->name, "unit", met->unit,
			      "provenance", jstr(series, "provenance"), "before",
			      end_json(json_array_get(pts, ch->at - 1)), "after",
			      end_json(json_array_get(pts, ch->at)), "change_pct",
			      isfinite(ch->change_pct) ? json_real(ch->change_pct) : json_null(),
			      "direction", isnan(worse) ? "unknown" : worse > 0 ? "regression"
									: "improvement");
	json_object_set_new(o, "evidence", json_pack(
		"{s:s, s:{s:i, s:f, s:s?}, s:{s:i, s:f, s:s?}, s:f, s:f, s:f, s:o}",
		"method", "penalized L1 optimal partitioning of the per-record medians",
		"segment_before", "records", (json_int_t)(ch->at - ch->from), "median", ch->before,
		"first_id", jstr(json_array_get(pts, ch->from), "id"),
		"segment_after", "records", (json_int_t)(ch->to - ch->at), "median", ch->after,
		"last_id", jstr(json_array_get(pts, ch->to - 1), "id"),
		"gain", ch->gain, "penalty", r->penalty, "noise_sd", r->sigma,
		"p_mann_whitney", isfinite(ch->p) ? json_real(ch->p) : json_null()));
	return o;
}

/* The steps of one metric in one series, appended to changes. */
static int series_changes(struct mw_store *s, const json_t *series, const struct mw_metric *met,
			  const struct mw_cp_opts *opts, json_t *changes, size_t *points)
{
	struct mw_error err;
	struct mw_cp_result r;
	json_t *pts = NULL, *p;
	size_t i;
	mw_error_clear(&err);
	if (mw_store_series_points(s, jstr(series, "id"), met->name, &pts, &err)) {
		mw_error_print(&err);
		return MW_EXIT_ENV;
	}
	/* The search is O(n^2 log n): the latest MAX_POINTS records of a long series. */
	size_t n = json_array_size(pts);
	if (n > MAX_POINTS) {
		fprintf(stderr, "memwall db changes: series %.12s, %s: the latest %d of its %zu "
			"records searched\n", jstr(series, "id"), met->name, MAX_POINTS, n);
		while (json_array_size(pts) > MAX_POINTS)
			json_array_remove(pts, 0);
		n = MAX_POINTS;
	}
	double *y = malloc((n + 1) * sizeof(*y));
	int rc = y ? 0 : -ENOMEM;
	json_array_foreach(pts, i, p)
		if (y)
			y[i] = json_number_value(json_object_get(p, "median"));
	*points += n;
	if (!rc)
		rc = mw_changepoints(y, n, opts, &r);
	for (size_t c = 0; !rc && c < r.n_changes; c++)
		json_array_append_new(changes, change_json(series, met, pts, &r.changes[c], &r));
	if (!rc)
		mw_cp_result_free(&r);
	free(y);
	json_decref(pts);
	return rc ? mw_fail(MW_EXIT_ENV, "db changes", "out of memory") : 0;
}

static void changes_md(const json_t *changes, size_t nseries, size_t npoints,
		       const struct mw_cp_opts *o)
{
	json_t *c;
	size_t i;
	printf("## memwall db changes\n\n");
	if (json_array_size(changes))
		printf("| series | metric | last before (id, date, engine) | first after (id, date, "
		       "engine) | change | direction | evidence |\n|---|---|---|---|---:|---|---|\n");
	json_array_foreach(changes, i, c) {
		const json_t *b = json_object_get(c, "before"), *a = json_object_get(c, "after");
		const json_t *e = json_object_get(c, "evidence");
		const char *prov = jstr(c, "provenance");
		bool sim = prov && !strncmp(prov, "SIMULATED", 9) &&
			   !strncmp(jstr(c, "metric"), "dram_", 5);
		printf("| %.12s | %s%s | %.12s, %s, %s |", jstr(c, "series"), jstr(c, "metric"),
		       sim ? " [SIMULATED]" : "", jstr(b, "id"), mw_esc_md(jstr(b, "created_utc")),
		       mw_esc_md(jstr(b, "engine_version")));
		printf(" %.12s, %s, %s | %+.2f %% | %s |", jstr(a, "id"),
		       mw_esc_md(jstr(a, "created_utc")), mw_esc_md(jstr(a, "engine_version")),
		       json_number_value(json_object_get(c, "change_pct")), jstr(c, "direction"));
		const json_t *sb = json_object_get(e, "segment_before");
		const json_t *sa = json_object_get(e, "segment_after");
		printf(" median %.6g over %lld records -> %.6g over %lld; the step saves %.4g "
		       "(penalty %.4g, noise sd %.3g); Mann-Whitney p = %.3g |\n",
		       json_number_value(json_object_get(sb, "median")),
		       (long long)json_integer_value(json_object_get(sb, "records")),
		       json_number_value(json_object_get(sa, "median")),
		       (long long)json_integer_value(json_object_get(sa, "records")),
		       json_number_value(json_object_get(e, "gain")),
		       json_number_value(json_object_get(e, "penalty")),
		       json_number_value(json_object_get(e, "noise_sd")),
		       json_number_value(json_object_get(e, "p_mann_whitney")));
	}
	printf("%s%zu change%s in %zu series (%zu per-record medians). Method: penalized L1 "
	       "optimal partitioning of each series' per-record medians, segments of at least %zu "
	       "records, penalty %g x noise sd x ln(records) (src/README.md, \"A series\").\n",
	       json_array_size(changes) ? "\n" : "", json_array_size(changes),
	       json_array_size(changes) == 1 ? "" : "s", nseries, npoints, o->min_segment, o->k);
}

int mw_db_changes(struct mw_store *s, struct db_args *a)
{
	struct mw_cp_opts o;
	struct mw_error err;
	const char *metrics[DB_MAX_METRICS];
	json_t *series = NULL, *changes = json_array(), *row;
	char id[65] = "";
	size_t nm = 0, i, nseries = 0, npoints = 0;
	int fmt = check_format(a->fmt_text, "db changes", false), code;
	if (fmt < 0)
		return -fmt;
	if (a->nops)
		return mw_fail(MW_EXIT_USAGE, "db changes", "unexpected argument '%s'", a->ops[0]);
	mw_cp_opts_default(&o);
	if (!isnan(a->penalty))
		o.k = a->penalty;
	mw_error_clear(&err);
	if ((code = metrics_of(a, "db changes", metrics, &nm)))
		goto out;
	if (a->series && mw_store_series_find(s, a->series, id, &err)) {
		mw_error_print(&err);
		code = MW_EXIT_USAGE;
		goto out;
	}
	if (mw_store_series_list(s, &series, &err)) {
		mw_error_print(&err);
		code = MW_EXIT_ENV;
		goto out;
	}
	json_array_foreach(series, i, row) {
		if (id[0] && strcmp(id, jstr(row, "id")))
			continue;
		nseries++;
		for (size_t m = 0; m < nm && !code; m++) {
			const struct mw_metric *met = mw_metric_find(metrics[m]);
			if (met) /* metrics_of checked every name */
				code = series_changes(s, row, met, &o, changes, &npoints);
		}
		if (code)
			goto out;
	}
	if (fmt == 1) {
		json_t *doc = json_pack("{s:s, s:{s:s, s:i, s:f, s:f}, s:I, s:I, s:O}", "schema",
					"memwall-changes/1", "method", "name", "penalized L1 optimal "
					"partitioning of per-record medians", "min_segment",
					(json_int_t)o.min_segment, "penalty_k", o.k, "floor_rel",
					o.floor_rel, "series_checked", (json_int_t)nseries,
					"medians", (json_int_t)npoints, "changes", changes);
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
		fputc('\n', stdout);
		json_decref(doc);
	} else {
		changes_md(changes, nseries, npoints, &o);
	}
out:
	json_decref(series);
	json_decref(changes);
	return code;
}
