/* tests/src/test_store.c: the results store (src/record/store.c) against SQLite, and with
 * --postgresql the same suite against a throwaway PostgreSQL server (tests/lib/pg-server.sh starts
 * it in a temporary folder and this program stops it). Records are fixtures whose figures
 * mw_result_derive computes; every expected value is read back from them here. */
#include <errno.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include "fixture_result.h"
#include "pg_server.h"
#include "result.h"
#include "run.h"
#include "sha256.h"
#include "store.h"
#include "store_series.h"
#include "store/backend.h"
#include "test.h"

static char tmp[] = "/tmp/mw-test-store-XXXXXX";
static char pgdir[4200];

struct rec {
	char path[4200];
	char sha[65];
	double tok_s;
};

static double tok_s(const char *path)
{
	json_t *d = NULL;
	struct mw_error err;
	T_EQ_INT(mw_result_load(&d, path, &err), 0);
	double v = json_number_value(json_object_get(json_object_get(json_object_get(
		json_object_get(d, "summary"), "metrics"), "tok_per_s"), "mean"));
	json_decref(d);
	return v;
}

/* A fixture record on cpu, created at when, with a memory configuration when channels > 0. */
static void make(struct rec *r, const char *name, const char *protocol, const char *cpu,
		 double latency_ns, const char *when, int channels)
{
	struct t_fx_spec sp = { .protocol = protocol, .cpu = cpu, .runs = 3, .warmups = 1,
			      .tokens = 20, .latency_ns = latency_ns, .jitter = 0.005, .seed = 7 };
	struct mw_error err;
	json_t *d = t_fx_record(&sp);
	json_object_set_new(d, "created_utc", json_string(when));
	json_object_set_new(json_object_get(d, "model"), "name", json_string("stories-test"));
	json_t *m = json_object_get(d, "machine");
	if (channels)
		json_object_set_new(m, "memory_config", json_pack(
			"{s:s, s:i, s:i, s:I, s:s, s:i, s:i, s:i}", "source", "SMBIOS type 17",
			"slots", 4, "dimms", 2, "total_bytes", (json_int_t)(48ll << 30), "type",
			"DDR5", "speed_mts", 6400, "configured_speed_mts", 5200, "channels", channels));
	t_fx_write(d, tmp, name, r->path, sizeof(r->path));
	T_EQ_INT(mw_sha256_file(r->path, r->sha, NULL, &err), 0);
	r->tok_s = tok_s(r->path);
	json_decref(d);
}

static size_t count(struct mw_store *s, const struct mw_store_filter *f)
{
	struct mw_error err;
	json_t *rows = NULL;
	T_EQ_INT(mw_store_query(s, f, &rows, &err), 0);
	size_t n = json_array_size(rows);
	json_decref(rows);
	return n;
}

static void suite(const struct mw_store_ops *ops, const char *where)
{
	struct mw_store *s = NULL;
	struct mw_error err;
	struct rec a, b, c, bad;
	bool added = false;
	char sha[65];
	int v = 0;
	printf("suite: %s at %s\n", ops->name, where);

	T_EQ_INT(mw_store_open(where, &s, &err), 0);
	if (!s) {
		fprintf(stderr, "cannot open %s: %s\n", where, err.text);
		t_failures++;
		return;
	}
	T_EQ_STR(mw_store_backend(s), ops->name);
	T_EQ_INT(mw_store_schema_version(s, &v, &err), 0);
	T_EQ_INT(v, mw_store_schema_latest());
	T_ASSERT(mw_store_schema_latest() >= 2);

	make(&a, "a.json", "p1", "CPU Alpha", 1.0e6, "2026-11-01T10:00:00Z", 2);
	make(&b, "b.json", "p1", "CPU Beta", 2.0e6, "2026-11-10T23:59:59Z", 0);
	make(&c, "c.json", "p2", "CPU Alpha", 1.5e6, "2026-11-20T00:00:00Z", 2);
	T_EQ_INT(mw_store_import(s, a.path, sha, &added, &err), 0);
	T_ASSERT(added);
	T_EQ_STR(sha, a.sha);
	T_EQ_INT(mw_store_import(s, b.path, sha, &added, &err), 0);
	T_EQ_INT(mw_store_import(s, c.path, sha, &added, &err), 0);
	/* Idempotent: the same bytes again add nothing. */
	T_EQ_INT(mw_store_import(s, a.path, sha, &added, &err), 0);
	T_ASSERT(!added);
	T_EQ_STR(sha, a.sha);
	T_EQ_INT(count(s, NULL), 3);

	/* A record whose figure was edited is refused, and nothing of it is stored. */
	json_t *d = NULL;
	T_EQ_INT(mw_result_load(&d, a.path, &err), 0);
	json_object_set_new(json_object_get(json_object_get(json_object_get(d, "summary"),
				"metrics"), "tok_per_s"), "mean", json_real(a.tok_s * 2));
	t_fx_write(d, tmp, "bad.json", bad.path, sizeof(bad.path));
	json_decref(d);
	T_EQ_INT(mw_store_import(s, bad.path, sha, &added, &err), MW_RESULT_INCONSISTENT);
	T_CONTAINS(err.field, "tok_per_s");
	T_EQ_INT(count(s, NULL), 3);

	/* Filters. */
	T_EQ_INT(count(s, &(struct mw_store_filter){ .protocol = "p1" }), 2);
	T_EQ_INT(count(s, &(struct mw_store_filter){ .protocol = "p" }), 0);
	T_EQ_INT(count(s, &(struct mw_store_filter){ .machine = "alpha" }), 2);
	T_EQ_INT(count(s, &(struct mw_store_filter){ .model = "STORIES" }), 3);
	T_EQ_INT(count(s, &(struct mw_store_filter){ .since = "2026-11-05" }), 2);
	T_EQ_INT(count(s, &(struct mw_store_filter){ .until = "2026-11-10" }), 2);
	T_EQ_INT(count(s, &(struct mw_store_filter){ .until = "2026-11-09" }), 1);
	T_EQ_INT(count(s, &(struct mw_store_filter){ .backend = "builtin" }), 0);
	T_EQ_INT(count(s, &(struct mw_store_filter){ .machine = "alpha", .protocol = "p2" }), 1);

	/* Rows carry the record's own figures, oldest first. */
	json_t *rows = NULL;
	T_EQ_INT(mw_store_query(s, NULL, &rows, &err), 0);
	T_EQ_STR(json_string_value(json_object_get(json_array_get(rows, 0), "id")), a.sha);
	T_NEAR(json_number_value(json_object_get(json_array_get(rows, 0), "tok_per_s")), a.tok_s,
	       1e-6 * a.tok_s);
	T_CONTAINS(json_string_value(json_object_get(json_array_get(rows, 0), "memory")),
		   "2 channels");
	T_CONTAINS(json_string_value(json_object_get(json_array_get(rows, 1), "memory")),
		   "not recorded");
	json_decref(rows);

	/* Compare: p1's two machines, fastest first, with memory and the relative speed. */
	T_EQ_INT(mw_store_compare(s, &(struct mw_store_filter){ .protocol = "p1" }, &rows, &err), 0);
	T_EQ_INT(json_array_size(rows), 2);
	const json_t *r0 = json_array_get(rows, 0), *r1 = json_array_get(rows, 1);
	T_EQ_STR(json_string_value(json_object_get(r0, "machine")), "CPU Alpha");
	T_EQ_STR(json_string_value(json_object_get(r1, "machine")), "CPU Beta");
	T_CONTAINS(json_string_value(json_object_get(r0, "memory")), "DDR5, 6400 MT/s");
	T_NEAR(json_number_value(json_object_get(r0, "relative_tok_per_s")), 1.0, 1e-12);
	T_NEAR(json_number_value(json_object_get(r1, "relative_tok_per_s")), b.tok_s / a.tok_s,
	       1e-6);
	T_NEAR(json_number_value(json_object_get(r1, "records")), 1, 0);
	json_decref(rows);
	T_EQ_INT(mw_store_compare(s, NULL, &rows, &err), 0);
	T_EQ_INT(json_array_size(rows), 3);
	json_decref(rows);

	/* Show: by a prefix; the record comes back as it was. */
	char prefix[9];
	snprintf(prefix, sizeof(prefix), "%.8s", b.sha);
	T_EQ_INT(mw_store_show(s, prefix, &d, sha, &err), 0);
	T_EQ_STR(sha, b.sha);
	json_t *orig = NULL;
	T_EQ_INT(mw_result_load(&orig, b.path, &err), 0);
	T_ASSERT(d && orig && json_equal(d, orig));
	json_decref(d);
	json_decref(orig);
	T_EQ_INT(mw_store_show(s, "abc", &d, sha, &err), -EINVAL);
	T_EQ_INT(mw_store_show(s, "Z00000", &d, sha, &err), -EINVAL);
	/* A prefix no record has (flip the first digit of a's). */
	snprintf(prefix, sizeof(prefix), "%c%.7s", a.sha[0] == '0' ? '1' : '0', a.sha + 1);
	if (strncmp(prefix, b.sha, 8) && strncmp(prefix, c.sha, 8))
		T_EQ_INT(mw_store_show(s, prefix, &d, sha, &err), -ENOENT);

	/* A store from a newer memwall is refused by name, not misread. */
	void *h = NULL;
	T_EQ_INT(ops->open(where, &h, &err), 0);
	T_EQ_INT(ops->exec(h, "INSERT INTO schema_version (version, applied_utc, description) "
			   "VALUES (99, 'x', 'from the future')", &err), 0);
	ops->close(h);
	mw_store_close(s);
	s = NULL;
	T_EQ_INT(mw_store_open(where, &s, &err), -EPROTO);
	T_CONTAINS(err.text, "newer");
	T_ASSERT(s == NULL);
	T_EQ_INT(ops->open(where, &h, &err), 0);
	T_EQ_INT(ops->exec(h, "DELETE FROM schema_version WHERE version = 99", &err), 0);
	ops->close(h);
	T_EQ_INT(mw_store_open(where, &s, &err), 0);
	T_EQ_INT(count(s, NULL), 3);
	mw_store_close(s);
}

/* ---- series */

/* A record of series "ps" on CPU Sigma, made at when; sim: counted by the simulated PMU. */
static void make_series(struct rec *r, const char *name, uint32_t seed, const char *when,
			bool sim)
{
	struct t_fx_spec sp = { .protocol = "ps", .cpu = "CPU Sigma", .runs = 3, .warmups = 1,
			      .tokens = 8, .latency_ns = 1e6, .jitter = 0.01, .dram_bytes = 2e6,
			      .instances = 1, .seed = seed };
	struct mw_error err;
	json_t *d = t_fx_record(&sp);
	json_object_set_new(d, "created_utc", json_string(when));
	if (sim) {
		json_t *dram = json_object_get(json_object_get(d, "counters"), "dram");
		json_object_set_new(dram, "layer", json_string("sim"));
		json_object_set_new(dram, "sim_script_sha256", json_string("none"));
	}
	t_fx_write(d, tmp, name, r->path, sizeof(r->path));
	T_EQ_INT(mw_sha256_file(r->path, r->sha, NULL, &err), 0);
	json_decref(d);
}

static const json_t *series_row(const json_t *rows, const char *counters)
{
	size_t i;
	json_t *r;
	json_array_foreach((json_t *)(uintptr_t)rows, i, r)
		if (!strcmp(json_string_value(json_object_get(r, "protocol")), "ps") &&
		    !strcmp(json_string_value(json_object_get(r, "counters")), counters))
			return r;
	return NULL;
}

static double summary_median(const char *path, const char *metric)
{
	json_t *d = NULL;
	struct mw_error err;
	T_EQ_INT(mw_result_load(&d, path, &err), 0);
	double v = json_number_value(json_object_get(json_object_get(json_object_get(
		json_object_get(d, "summary"), "metrics"), metric), "median"));
	json_decref(d);
	return v;
}

/* Records are filed under their series at import: SIMULATED and hardware records of the same
 * machine, protocol and model are two series; a series' history comes back in order, records
 * of the same second in the order they were imported. */
static void series_suite(const char *where)
{
	struct mw_store *s = NULL;
	struct mw_error err;
	struct rec h[4], sim[2];
	bool added;
	char sha[65], id[65];
	json_t *rows = NULL;
	static const char *const when[4] = { "2026-12-01T00:00:01Z", "2026-12-01T00:00:02Z",
					     "2026-12-01T00:00:02Z", "2026-12-01T00:00:05Z" };
	T_EQ_INT(mw_store_open(where, &s, &err), 0);
	if (!s)
		return;
	for (int i = 0; i < 4; i++) {
		char name[32];
		snprintf(name, sizeof(name), "h%d.json", i);
		make_series(&h[i], name, 100 + (uint32_t)i, when[i], false);
	}
	make_series(&sim[0], "sim0.json", 200, "2026-12-01T00:00:03Z", true);
	make_series(&sim[1], "sim1.json", 201, "2026-12-01T00:00:04Z", true);
	const struct rec *order[6] = { &h[0], &h[1], &h[2], &sim[0], &h[3], &sim[1] };
	for (int i = 0; i < 6; i++)
		T_EQ_INT(mw_store_import(s, order[i]->path, sha, &added, &err), 0);

	T_EQ_INT(mw_store_series_list(s, &rows, &err), 0);
	const json_t *hw = series_row(rows, "syscall/intel_imc_free");
	const json_t *sm = series_row(rows, "sim/intel_imc_free");
	T_ASSERT(hw && sm);
	if (!hw || !sm) {
		json_decref(rows);
		mw_store_close(s);
		return;
	}
	T_EQ_INT(json_integer_value(json_object_get(hw, "records")), 4);
	T_EQ_INT(json_integer_value(json_object_get(sm, "records")), 2);
	T_EQ_STR(json_string_value(json_object_get(hw, "first_utc")), when[0]);
	T_EQ_STR(json_string_value(json_object_get(hw, "last_utc")), when[3]);
	T_EQ_STR(json_string_value(json_object_get(hw, "last_id")), h[3].sha);
	T_NEAR(json_number_value(json_object_get(hw, "dram_MB_per_token")),
	       summary_median(h[3].path, "dram_MB_per_token"), 1e-9);
	T_CONTAINS(json_string_value(json_object_get(sm, "provenance")), "SIMULATED");
	T_CONTAINS(json_string_value(json_object_get(hw, "provenance")), "hardware");
	T_ASSERT(strcmp(json_string_value(json_object_get(hw, "id")),
			json_string_value(json_object_get(sm, "id"))));
	snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(hw, "id")));

	/* A series never holds SIMULATED and hardware records together. */
	const json_t *both[2] = { hw, sm };
	for (int k = 0; k < 2; k++) {
		struct mw_store_history q = { .series = json_string_value(json_object_get(both[k],
				"id")), .before_seq = -1 };
		json_t *recs = NULL, *r;
		size_t i;
		T_EQ_INT(mw_store_series_history(s, &q, &recs, &err), 0);
		T_EQ_INT(json_array_size(recs), k ? 2 : 4);
		json_array_foreach(recs, i, r) {
			const char *layer = json_string_value(json_object_get(json_object_get(
				json_object_get(json_object_get(r, "document"), "counters"), "dram"),
				"layer"));
			T_ASSERT(k ? layer && !strcmp(layer, "sim") : !layer);
		}
		json_decref(recs);
	}
	json_decref(rows);

	/* The history of one metric, oldest first; h[1] and h[2] share a second: import order. */
	T_EQ_INT(mw_store_series_points(s, id, "dram_MB_per_token", &rows, &err), 0);
	T_EQ_INT(json_array_size(rows), 4);
	for (int i = 0; i < 4 && i < (int)json_array_size(rows); i++) {
		const json_t *p = json_array_get(rows, (size_t)i);
		T_EQ_STR(json_string_value(json_object_get(p, "id")), h[i].sha);
		T_NEAR(json_number_value(json_object_get(p, "median")),
		       summary_median(h[i].path, "dram_MB_per_token"), 1e-9);
		T_EQ_STR(json_string_value(json_object_get(p, "engine_version")), "test");
	}
	json_decref(rows);

	/* What comes before h[2]: h[0] and h[1] (same second, imported first), never h[2]. */
	struct mw_store_place pl;
	T_EQ_INT(mw_store_record_place(s, h[2].sha, &pl, &err), 0);
	T_ASSERT(pl.stored);
	T_EQ_STR(pl.series, id);
	T_EQ_STR(pl.created_utc, when[2]);
	struct mw_store_history q = { .series = id, .exclude = h[2].sha,
				      .before_utc = pl.created_utc, .before_seq = pl.seq };
	T_EQ_INT(mw_store_series_history(s, &q, &rows, &err), 0);
	T_EQ_INT(json_array_size(rows), 2);
	T_EQ_STR(json_string_value(json_object_get(json_array_get(rows, 0), "id")), h[0].sha);
	T_EQ_STR(json_string_value(json_object_get(json_array_get(rows, 1), "id")), h[1].sha);
	json_decref(rows);
	/* The last 2 before h[3]; those since a time; one record by its id. */
	T_EQ_INT(mw_store_record_place(s, h[3].sha, &pl, &err), 0);
	q = (struct mw_store_history){ .series = id, .exclude = h[3].sha,
				       .before_utc = pl.created_utc, .before_seq = pl.seq,
				       .last = 2 };
	T_EQ_INT(mw_store_series_history(s, &q, &rows, &err), 0);
	T_EQ_INT(json_array_size(rows), 2);
	T_EQ_STR(json_string_value(json_object_get(json_array_get(rows, 0), "id")), h[1].sha);
	T_EQ_STR(json_string_value(json_object_get(json_array_get(rows, 1), "id")), h[2].sha);
	json_decref(rows);
	q = (struct mw_store_history){ .series = id, .since = "2026-12-01T00:00:02Z",
				       .before_seq = -1 };
	T_EQ_INT(mw_store_series_history(s, &q, &rows, &err), 0);
	T_EQ_INT(json_array_size(rows), 3);
	json_decref(rows);
	char prefix[13];
	snprintf(prefix, sizeof(prefix), "%.12s", h[0].sha);
	q = (struct mw_store_history){ .series = id, .only = prefix, .before_seq = -1 };
	T_EQ_INT(mw_store_series_history(s, &q, &rows, &err), 0);
	T_EQ_INT(json_array_size(rows), 1);
	json_decref(rows);
	q = (struct mw_store_history){ .series = id, .since = "yesterday", .before_seq = -1 };
	T_EQ_INT(mw_store_series_history(s, &q, &rows, &err), -EINVAL);
	/* A record file not in the store: no place. */
	T_EQ_INT(mw_store_record_place(s, "00ff00ff", &pl, &err), 0);
	T_ASSERT(!pl.stored);

	/* Series by a prefix of their id. */
	char found[65];
	snprintf(prefix, sizeof(prefix), "%.12s", id);
	T_EQ_INT(mw_store_series_find(s, prefix, found, &err), 0);
	T_EQ_STR(found, id);
	T_EQ_INT(mw_store_series_find(s, "xyz123", found, &err), -EINVAL);
	snprintf(prefix, sizeof(prefix), "%c%.11s", id[0] == '0' ? '1' : '0', id + 1);
	int rc = mw_store_series_find(s, prefix, found, &err);
	T_ASSERT(rc == -ENOENT || (rc == 0 && strcmp(found, id)));
	mw_store_close(s);
}

/* ---- the views dashboards read (migration 5) */

struct view_rows {
	json_t *rows; /* arrays of the columns as text (null for NULL) */
};

static int view_row(void *ctx, int ncol, const char *const *v)
{
	json_t *r = json_array();
	for (int i = 0; i < ncol; i++)
		json_array_append_new(r, v[i] ? json_string(v[i]) : json_null());
	return json_array_append_new(((struct view_rows *)ctx)->rows, r);
}

static json_t *view_query(const struct mw_store_ops *ops, void *h, const char *sql,
			  const char *p1)
{
	struct view_rows c = { json_array() };
	struct mw_error err;
	const char *p[1] = { p1 };
	int rc = ops->query(h, sql, p, p1 ? 1 : 0, view_row, &c, &err);
	if (rc)
		fprintf(stderr, "%s: %s\n", sql, err.text);
	T_EQ_INT(rc, 0);
	return c.rows;
}

static const char *cell(const json_t *rows, size_t i, size_t k)
{
	return json_string_value(json_array_get(json_array_get(rows, i), k));
}

/* series_points: one row per record and summary metric (and roof_pct), each record's median
 * and the figure's provenance; series_summary: one row per series. The records are
 * series_suite's (4 hardware, 2 SIMULATED, synthetic weights, no roofline block). */
static void views_suite(const struct mw_store_ops *ops, const char *where)
{
	struct mw_error err;
	void *h = NULL;
	struct rec r;
	bool added;
	char sha[65];
	struct mw_store *s = NULL;
	/* One more record of series_suite's hardware series, to read back here. */
	make_series(&r, "view.json", 400, "2026-12-01T00:00:09Z", false);
	T_EQ_INT(mw_store_open(where, &s, &err), 0);
	T_EQ_INT(s ? mw_store_import(s, r.path, sha, &added, &err) : -1, 0);
	mw_store_close(s);
	T_EQ_INT(ops->open(where, &h, &err), 0);
	if (!h)
		return;
	json_t *d = NULL;
	T_EQ_INT(mw_result_load(&d, r.path, &err), 0);
	size_t nmetrics = json_object_size(json_object_get(json_object_get(d, "summary"),
							   "metrics"));
	json_decref(d);
	json_t *rows = view_query(ops, h, "SELECT metric, value, measured, provenance, reason,"
				  " created_utc, series_label, engine_version FROM series_points"
				  " WHERE record_id = $1 ORDER BY metric", r.sha);
	T_EQ_INT(json_array_size(rows), nmetrics + 1);
	for (size_t i = 0; i < json_array_size(rows); i++) {
		const char *m = cell(rows, i, 0), *prov = cell(rows, i, 3);
		T_EQ_STR(cell(rows, i, 5), "2026-12-01T00:00:09Z");
		T_CONTAINS(cell(rows, i, 6), "ps / ");
		T_EQ_STR(cell(rows, i, 7), "test");
		T_CONTAINS(prov, ", SYNTHETIC weights");
		if (!strcmp(m, "dram_MB_per_token")) {
			T_NEAR(atof(cell(rows, i, 1)), summary_median(r.path, m), 1e-9);
			T_CONTAINS(prov, "hardware (intel_imc_free)");
			T_CONTAINS(prov, "not verified");
		} else if (!strcmp(m, "tok_per_s")) {
			T_NEAR(atof(cell(rows, i, 1)), summary_median(r.path, m), 1e-6);
			T_ASSERT(!strncmp(prov, "timed", 5));
		} else if (!strcmp(m, "engine_MB_per_token")) {
			T_ASSERT(!strncmp(prov, "engine-accounted", 16));
		} else if (!strcmp(m, "roof_pct")) {
			/* No roofline block: no value, never a 0, and why. */
			T_ASSERT(cell(rows, i, 1) == NULL);
			T_EQ_STR(cell(rows, i, 2), "0");
			T_CONTAINS(cell(rows, i, 4), "no roofline block");
		}
	}
	json_decref(rows);
	/* The SIMULATED series says so on every DRAM figure. */
	rows = view_query(ops, h, "SELECT provenance FROM series_points WHERE counters ="
			  " 'sim/intel_imc_free' AND metric = 'dram_MB_per_token'", NULL);
	T_EQ_INT(json_array_size(rows), 2);
	for (size_t i = 0; i < json_array_size(rows); i++)
		T_ASSERT(!strncmp(cell(rows, i, 0), "SIMULATED (intel_imc_free)", 26));
	json_decref(rows);
	rows = view_query(ops, h, "SELECT counters, records, first_utc, last_utc FROM"
			  " series_summary WHERE protocol = 'ps' ORDER BY counters", NULL);
	T_EQ_INT(json_array_size(rows), 2);
	T_EQ_STR(cell(rows, 0, 0), "sim/intel_imc_free");
	T_EQ_STR(cell(rows, 0, 1), "2");
	T_EQ_STR(cell(rows, 1, 1), "5");
	T_EQ_STR(cell(rows, 1, 3), "2026-12-01T00:00:09Z");
	json_decref(rows);
	/* time is the database's time type where it has one (Grafana's time series need it). */
	rows = view_query(ops, h, ops == &mw_store_postgresql
			  ? "SELECT CAST(pg_typeof(time) AS TEXT) FROM series_points LIMIT 1"
			  : "SELECT time FROM series_points WHERE record_id = $1 LIMIT 1",
			  ops == &mw_store_postgresql ? NULL : r.sha);
	T_EQ_STR(cell(rows, 0, 0), ops == &mw_store_postgresql ? "timestamp with time zone"
							       : "2026-12-01T00:00:09Z");
	json_decref(rows);
	ops->close(h);
}

/* A store written at schema version 1 (before the memory column) is brought up to date, and
 * its records stay. */
static void sqlite_upgrade(void)
{
	char path[4200];
	struct mw_store *s = NULL;
	struct mw_error err;
	struct rec a;
	bool added;
	char sha[65];
	int v = 0;
	sqlite3 *db = NULL;
	snprintf(path, sizeof(path), "%s/v1.db", tmp);
	T_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	T_EQ_INT(sqlite3_exec(db,
		"CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_utc TEXT NOT NULL,"
		" description TEXT NOT NULL);"
		"INSERT INTO schema_version VALUES (1, '2026-11-01T00:00:00Z', 'v1');"
		"CREATE TABLE records (sha256 TEXT PRIMARY KEY, kind TEXT NOT NULL, created_utc TEXT,"
		" imported_utc TEXT NOT NULL, protocol TEXT NOT NULL, model TEXT, machine TEXT,"
		" backend TEXT, threads INTEGER, memwall_version TEXT, complete INTEGER NOT NULL,"
		" acceptance TEXT, source TEXT, document TEXT NOT NULL);"
		"CREATE TABLE metrics (sha256 TEXT NOT NULL, metric TEXT NOT NULL, unit TEXT,"
		" measured INTEGER NOT NULL, n INTEGER, mean DOUBLE PRECISION, sd DOUBLE PRECISION,"
		" cv_pct DOUBLE PRECISION, median DOUBLE PRECISION, min DOUBLE PRECISION,"
		" max DOUBLE PRECISION, ci95_low DOUBLE PRECISION, ci95_high DOUBLE PRECISION,"
		" reason TEXT, PRIMARY KEY (sha256, metric));"
		"INSERT INTO records (sha256, kind, imported_utc, protocol, complete, document)"
		" VALUES ('00ff00ff00ff', 'run', 'x', 'old', 1, '{}');", NULL, NULL, NULL), SQLITE_OK);
	/* A real record stored before series: migration 4 files it from its document. */
	struct rec old;
	char *text = NULL;
	make_series(&old, "old-series.json", 300, "2026-11-30T00:00:00Z", false);
	FILE *f = fopen(old.path, "r");
	text = f ? t_slurp_fd(fileno(f)) : NULL;
	if (f)
		fclose(f);
	sqlite3_stmt *st = NULL;
	T_EQ_INT(sqlite3_prepare_v2(db, "INSERT INTO records (sha256, kind, created_utc, "
				    "imported_utc, protocol, complete, document) VALUES (?1, 'run', "
				    "'2026-11-30T00:00:00Z', 'y', 'ps', 1, ?2)", -1, &st, NULL),
		 SQLITE_OK);
	sqlite3_bind_text(st, 1, old.sha, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, text ? text : "", -1, SQLITE_STATIC);
	T_EQ_INT(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	/* A metric stored before migration 5: its provenance is filled from the document. */
	char ins[400];
	snprintf(ins, sizeof(ins), "INSERT INTO metrics (sha256, metric, measured, median) VALUES"
		 " ('%s', 'tok_per_s', 1, 5.0)", old.sha);
	T_EQ_INT(sqlite3_exec(db, ins, NULL, NULL, NULL), SQLITE_OK);
	free(text);
	sqlite3_close(db);
	T_EQ_INT(mw_store_open(path, &s, &err), 0);
	if (!s)
		return;
	T_EQ_INT(mw_store_schema_version(s, &v, &err), 0);
	T_EQ_INT(v, mw_store_schema_latest());
	make(&a, "up.json", "p9", "CPU Gamma", 1.0e6, "2026-11-02T00:00:00Z", 4);
	T_EQ_INT(mw_store_import(s, a.path, sha, &added, &err), 0);
	T_EQ_INT(count(s, NULL), 3);
	T_EQ_INT(count(s, &(struct mw_store_filter){ .protocol = "old" }), 1);
	/* The old record has its series and its place; one imported now joins it after it. */
	struct mw_store_place pl, pl2;
	T_EQ_INT(mw_store_record_place(s, old.sha, &pl, &err), 0);
	T_ASSERT(pl.stored && pl.series[0] && pl.seq > 0);
	struct rec later;
	make_series(&later, "later-series.json", 301, "2026-12-02T00:00:00Z", false);
	T_EQ_INT(mw_store_import(s, later.path, sha, &added, &err), 0);
	T_EQ_INT(mw_store_record_place(s, later.sha, &pl2, &err), 0);
	T_EQ_STR(pl2.series, pl.series);
	T_ASSERT(pl2.seq > pl.seq);
	json_t *rows = NULL;
	struct mw_store_history q = { .series = pl.series, .before_seq = -1 };
	T_EQ_INT(mw_store_series_history(s, &q, &rows, &err), 0);
	T_EQ_INT(json_array_size(rows), 2);
	T_EQ_STR(json_string_value(json_object_get(json_array_get(rows, 0), "id")), old.sha);
	json_decref(rows);
	/* The '{}' row is no record: filed under no series. */
	T_EQ_INT(mw_store_record_place(s, "00ff00ff00ff", &pl, &err), 0);
	T_ASSERT(pl.stored && !pl.series[0]);
	mw_store_close(s);
	/* Migration 5 filled the old record's provenance and roof columns from its document. */
	void *h = NULL;
	T_EQ_INT(mw_store_sqlite.open(path, &h, &err), 0);
	if (!h)
		return;
	rows = view_query(&mw_store_sqlite, h, "SELECT metric, provenance, reason FROM"
			  " series_points WHERE record_id = $1 ORDER BY metric", old.sha);
	T_EQ_INT(json_array_size(rows), 2);
	T_EQ_STR(cell(rows, 0, 0), "roof_pct");
	T_CONTAINS(cell(rows, 0, 2), "no roofline block");
	T_EQ_STR(cell(rows, 1, 0), "tok_per_s");
	T_EQ_STR(cell(rows, 1, 1), "timed, SYNTHETIC weights");
	json_decref(rows);
	mw_store_sqlite.close(h);
}

/* The command line: import, list, query --format json, show, a bad --db. */
static void cli(const char *where, const char *rec)
{
	struct t_output o = t_run((const char *[]){ "memwall", "db", "--db", where, "import", rec,
						    rec, NULL });
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "1 imported, 1 already there");
	t_output_free(&o);
	T_RUN_EXPECT(
	    ((const char *[]){"memwall", "db", "list", "--db", where, "--format", "csv", NULL}), 0,
	    T_LIST("id,created_utc,protocol"), NULL);
	o = t_run((const char *[]){ "memwall", "db", "--db", where, "query", "--protocol", "cli",
				    "--format", "json", NULL });
	json_error_t je;
	json_t *rows = json_loads(o.out ? o.out : "", 0, &je);
	T_EQ_INT(json_array_size(rows), 1);
	json_decref(rows);
	t_output_free(&o);
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", where, "frobnicate", NULL}), 2,
		     NULL, T_LIST("unknown sub-verb"));
	/* Looking at a store that is not there says so and makes none (issue 28); importing
	 * into a folder that is not there is the environment's problem. */
	o = t_run((const char *[]){ "memwall", "db", "--db", "/nonexistent/dir/x.db", "list", NULL });
	T_EQ_INT(o.status, 3); /* db --help: "3 the store cannot be opened" (issue 44: was 2) */
	T_CONTAINS(o.err, "no results store here");
	t_output_free(&o);
	o = t_run((const char *[]){ "memwall", "db", "--help", NULL });
	T_CONTAINS(o.out, "3 the store cannot be opened (none at that path for list, show, query or\ncompare");
	t_output_free(&o);
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", "/nonexistent/dir/x.db", "import",
				       "/nonexistent/r.json", NULL}),
		     3, NULL, T_LIST("--db"));
}

/* Issue 28, class 18: n copies of `memwall db --db where VERB [rec]` started at once; how
 * many exited 0 and how many printed "imported as". */
static void at_once(const char *where, const char *verb, const char *rec, int n, int *ok,
		    int *imported)
{
	pid_t pids[16];
	char outs[16][64];
	*ok = *imported = 0;
	for (int i = 0; i < n; i++) {
		snprintf(outs[i], sizeof(outs[i]), "%s/at-once-%d.out", tmp, i);
		fflush(NULL);
		if ((pids[i] = fork()) == 0) {
			int fd = open(outs[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
			dup2(fd, 1);
			dup2(fd, 2);
			execl(getenv("MEMWALL_BIN"), "memwall", "db", "--db", where, verb, rec,
			      (char *)NULL);
			_exit(127);
		}
	}
	for (int i = 0; i < n; i++) {
		int st = 0;
		waitpid(pids[i], &st, 0);
		*ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
		int fd = open(outs[i], O_RDONLY);
		char *text = fd >= 0 ? t_slurp_fd(fd) : NULL;
		if (fd >= 0)
			close(fd);
		*imported += text && strstr(text, "imported as") != NULL;
		if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
			fprintf(stderr, "  %s %s: %s\n", verb, where, text ? text : "");
		free(text);
		unlink(outs[i]);
	}
}

static void concurrent(const char *where, const char *rec, bool lists)
{
	int ok, imported;
	if (lists) {
		at_once(where, "list", NULL, 12, &ok, &imported);
		T_EQ_INT(ok, 12);
	}
	at_once(where, "import", rec, 12, &ok, &imported);
	T_EQ_INT(ok, 12);
	T_EQ_INT(imported, 1); /* one import stores it, the other eleven find it there */
}

/* A failed PostgreSQL connection says what to fix (issue 29: a new user met "fe_sendauth: no
 * password supplied" and "Peer authentication failed" with no way forward). With no server: a
 * unix socket folder where none listens. With the throwaway server (server_dir): a role that
 * does not exist. */
static void pg_connect_hints(const char *server_dir)
{
	char url[4400];
	snprintf(url, sizeof(url), "postgresql:///memwall?host=%s/no-server-here", tmp);
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", url, "list", NULL}), 3, NULL,
		     T_LIST("cannot connect", "no server listens on that unix socket"));
	if (!server_dir)
		return;
	snprintf(url, sizeof(url), "postgresql:///postgres?host=%s&user=no_such_role", server_dir);
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", url, "list", NULL}), 3, NULL,
		     T_LIST("no_such_role", "createuser"));
}

static void pg_stop(void)
{
	t_pg_stop(pgdir);
}

static void cleanup(void)
{
	pg_stop();
	t_rm_tree(tmp);
}

int main(int argc, char **argv)
{
	bool pg = argc > 1 && !strcmp(argv[1], "--postgresql");
	char path[4200];
	const char *root = getenv("MEMWALL_SOURCE_ROOT");
	if (!root)
		t_skip("MEMWALL_SOURCE_ROOT is not set (run under meson test)");
	t_mkdtemp(tmp);
	atexit(cleanup);
	if (!pg) {
		snprintf(path, sizeof(path), "%s/store.db", tmp);
		suite(&mw_store_sqlite, path);
		series_suite(path);
		views_suite(&mw_store_sqlite, path);
		sqlite_upgrade();
		struct rec r;
		make(&r, "cli.json", "cli", "CPU Delta", 1.0e6, "2026-11-03T00:00:00Z", 0);
		snprintf(path, sizeof(path), "%s/cli.db", tmp);
		cli(path, r.path);
		snprintf(path, sizeof(path), "%s/fresh.db", tmp);
		concurrent(path, r.path, false); /* list makes no SQLite store: imports only */
		pg_connect_hints(NULL);
		return t_done();
	}
	char url[4300];
	t_pg_start(pgdir, sizeof(pgdir), url, sizeof(url));
	suite(&mw_store_postgresql, url);
	series_suite(url);
	views_suite(&mw_store_postgresql, url);
	struct rec r;
	make(&r, "cli.json", "cli", "CPU Delta", 1.0e6, "2026-11-03T00:00:00Z", 0);
	cli(url, r.path);
	/* A fresh store: a schema of its own, named through libpq's options (search_path). */
	void *h = NULL;
	struct mw_error err;
	T_EQ_INT(mw_store_postgresql.open(url, &h, &err), 0);
	if (h) {
		T_EQ_INT(mw_store_postgresql.exec(h, "CREATE SCHEMA fresh", &err), 0);
		mw_store_postgresql.close(h);
	}
	char fresh[4400];
	snprintf(fresh, sizeof(fresh), "%s%soptions=-csearch_path%%3Dfresh", url,
		 strchr(url, '?') ? "&" : "?");
	concurrent(fresh, r.path, true);
	pg_connect_hints(pgdir);
	return t_done();
}
