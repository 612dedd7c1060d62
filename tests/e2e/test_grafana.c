/* tests/e2e/test_grafana.c: the Grafana dashboard (scripts/grafana/memwall-dashboard.json) against
 * a results store in a throwaway PostgreSQL server (suite postgresql: tests/lib/pg-server.sh).
 *
 * Records of three series (hardware DRAM counters; the SIMULATED PMU; no DRAM counter, one
 * record with a roofline block), one of them created before the dashboard's time range, are
 * imported with `memwall db --db URL import`. Every query of the dashboard (each panel's
 * targets[].rawSql, and the template variable's query) is read from the JSON, its macros
 * replaced as Grafana's PostgreSQL data source replaces them, and run with libpq:
 *
 *   $__timeFilter(expr)  ->  expr BETWEEN 'FROM' AND 'TO'   (FROM, TO: the time range in
 *                                                          RFC 3339, UTC)
 *   $__timeFrom()        ->  'FROM'        $__timeTo()  ->  'TO'
 *   $__time(expr)        ->  expr AS "time"
 *   $series, ${series}   ->  'v1','v2',... the variable's values (its query's __value column,
 *                           all of them: "All"), each in single quotes with ' doubled
 *
 * (Grafana's pkg/tsdb/grafana-postgresql-datasource/macros.go for the $__ macros; a multi-value
 * variable in an SQL data source's query is formatted as quoted, comma-separated values.) A $ left
 * after that is a macro this test does not know: a failure, since the test would not be running
 * what Grafana runs. Then, against the records, with every figure computed here from the
 * records' runs:
 *  - each time-series query (format time_series) returns the columns time, value and metric, one
 *    row per record in the range that measured the panel's metric (its p.metric = '...'), at the
 *    record's created_utc, with the median of its runs (for roof_pct, 100 x the mean of its
 *    runs' tok/s over the roof's tok/s written into its roofline block), named by the record's
 *    series and the figure's provenance (SIMULATED on the simulated series' DRAM figure);
 *    with $series one series, only that series' rows;
 *  - the table "Series": one row per series, its records (all of them) and its latest record's
 *    MB/token and tok/s; the table "Records": each record in the range once, with its figures.
 * And `memwall db site` writes the site of this PostgreSQL store. */
#include <jansson.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_result.h"
#include "pg_server.h"
#include "run.h"
#include "sha256.h"
#include "test.h"
#include "values.h"

#define FROM "2026-11-01T00:00:00Z"
#define TO "2026-12-01T00:00:00Z"
#define ROOF_TOK_S 2000.0 /* the roof written into one record's roofline block */

static char tmp[] = "/tmp/mw-test-grafana-XXXXXX";
static char pgdir[4200];

struct rec {
	char path[4400];
	char sha[65];
	const char *protocol, *when;
	bool dram, sim, roof;
};

static struct rec recs[] = {
	{ .protocol = "gf-hw", .when = "2026-10-01T00:00:00Z", .dram = true }, /* before FROM */
	{ .protocol = "gf-hw", .when = "2026-11-02T10:00:00Z", .dram = true },
	{ .protocol = "gf-hw", .when = "2026-11-10T10:00:00Z", .dram = true },
	{ .protocol = "gf-hw", .when = "2026-11-20T10:00:00Z", .dram = true },
	{ .protocol = "gf-sim", .when = "2026-11-05T10:00:00Z", .dram = true, .sim = true },
	{ .protocol = "gf-sim", .when = "2026-11-15T10:00:00Z", .dram = true, .sim = true },
	{ .protocol = "gf-eng", .when = "2026-11-06T10:00:00Z" },
	{ .protocol = "gf-eng", .when = "2026-11-16T10:00:00Z", .roof = true },
};
#define NRECS (sizeof(recs) / sizeof(recs[0]))

/* The median (or mean) over a record's measured runs of one figure, computed here. */
static double runs_stat(const char *path, const char *metric, bool mean)
{
	json_t *d = json_load_file(path, 0, NULL), *r;
	double v[64], sum = 0;
	size_t n = 0, i;
	json_array_foreach(json_object_get(d, "runs"), i, r) {
		const json_t *x = json_object_get(json_object_get(r, "figures"), metric);
		if (!json_is_true(json_object_get(r, "warmup")) && json_is_number(x) && n < 64) {
			v[n++] = json_number_value(x);
			sum += json_number_value(x);
		}
	}
	json_decref(d);
	if (!n)
		return NAN;
	return mean ? sum / (double)n : t_median(v, n);
}

/* A record's value of a dashboard metric, NaN where it has none. */
static double want(const struct rec *r, const char *metric)
{
	if (!strcmp(metric, "roof_pct"))
		return r->roof ? 100.0 * runs_stat(r->path, "tok_per_s", true) / ROOF_TOK_S : NAN;
	if (!strncmp(metric, "dram_", 5) && !r->dram)
		return NAN;
	return runs_stat(r->path, metric, false);
}

static void make(struct rec *r, int k)
{
	struct t_fx_spec sp = { .protocol = r->protocol, .cpu = "CPU Grafana", .runs = 3,
			      .warmups = 1, .tokens = 8, .latency_ns = 1e6 * (1 + 0.1 * k),
			      .jitter = 0.02, .dram_bytes = r->dram ? 2e6 * (1 + 0.05 * k) : 0,
			      .instances = r->dram, .seed = 50 + (uint32_t)k };
	struct mw_error err;
	char name[32];
	json_t *d = t_fx_record(&sp);
	json_object_set_new(d, "created_utc", json_string(r->when));
	if (r->sim) {
		json_t *dram = json_object_get(json_object_get(d, "counters"), "dram");
		json_object_set_new(dram, "layer", json_string("sim"));
		json_object_set_new(dram, "sim_script_sha256", json_string("none"));
	}
	if (r->roof) {
		double mean = json_number_value(json_object_get(json_object_get(json_object_get(
			json_object_get(d, "summary"), "metrics"), "tok_per_s"), "mean"));
		json_object_set_new(d, "roofline", json_pack(
			"{s:b, s:f, s:s, s:f, s:f, s:f}", "computed", 1, "bandwidth_gbps", 50.0,
			"bandwidth_source", "the protocol's roofline.bandwidth_gbps", "max_tok_s",
			ROOF_TOK_S, "measured_tok_s", mean, "headroom", ROOF_TOK_S / mean));
	}
	snprintf(name, sizeof(name), "r%d.json", k);
	t_fx_write(d, tmp, name, r->path, sizeof(r->path));
	T_EQ_INT(mw_sha256_file(r->path, r->sha, NULL, &err), 0);
	json_decref(d);
}

/* ---- Grafana's interpolation */

/* s with the macros replaced (see the top of this file); vals: the variable's values, already
 * quoted and joined. NULL, with the macro named, when one is left that the test does not know. */
static char *interpolate(const char *s, const char *vals)
{
	size_t cap = strlen(s) * 2 + strlen(vals) * 8 + 1024, k = 0;
	char *out = malloc(cap);
	while (out && *s) {
		const char *arg_end = NULL;
		if (*s != '$') {
			out[k++] = *s++;
			continue;
		}
		if (!strncmp(s, "$__timeFilter(", 14) && (arg_end = strchr(s, ')'))) {
			k += (size_t)sprintf(out + k, "%.*s BETWEEN '" FROM "' AND '" TO "'",
					     (int)(arg_end - s - 14), s + 14);
			s = arg_end + 1;
		} else if (!strncmp(s, "$__time(", 8) && (arg_end = strchr(s, ')'))) {
			k += (size_t)sprintf(out + k, "%.*s AS \"time\"", (int)(arg_end - s - 8), s + 8);
			s = arg_end + 1;
		} else if (!strncmp(s, "$__timeFrom()", 13) || !strncmp(s, "$__timeTo()", 11)) {
			bool from = s[8] == 'F';
			k += (size_t)sprintf(out + k, "'%s'", from ? FROM : TO);
			s += from ? 13 : 11;
		} else if (!strncmp(s, "${series}", 9) || (!strncmp(s, "$series", 7) &&
				!strchr("abcdefghijklmnopqrstuvwxyz_0123456789", s[7]))) {
			k += (size_t)sprintf(out + k, "%s", vals);
			s += s[1] == '{' ? 9 : 7;
		} else {
			fprintf(stderr, "a macro this test does not replace: %.30s\n", s);
			free(out);
			return NULL;
		}
	}
	if (out)
		out[k] = '\0';
	return out;
}

/* 'v1','v2': values quoted as Grafana quotes a multi-value variable for SQL. */
static void quote_all(char *buf, size_t n, const char *const *v, size_t nv)
{
	size_t k = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < nv && k + 4 < n; i++) {
		buf[k++] = i ? ',' : '\'';
		if (i)
			buf[k++] = '\'';
		for (const char *c = v[i]; *c && k + 4 < n; c++) {
			if (*c == '\'')
				buf[k++] = '\'';
			buf[k++] = *c;
		}
		buf[k++] = '\'';
		buf[k] = '\0';
	}
}

static PGresult *run_sql(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		fprintf(stderr, "the query failed: %s\n%s\n", PQerrorMessage(c), sql);
		t_failures++;
	}
	return r;
}

static int col(PGresult *r, const char *name)
{
	char quoted[128];
	/* Quoted: PQfnumber folds an unquoted name to lower case. */
	snprintf(quoted, sizeof(quoted), "\"%s\"", name);
	int k = PQfnumber(r, quoted);
	if (k < 0) {
		fprintf(stderr, "no column '%s' in the result\n", name);
		t_failures++;
	}
	return k;
}

static const char *cell(PGresult *r, int row, int k)
{
	return k < 0 || PQgetisnull(r, row, k) ? NULL : PQgetvalue(r, row, k);
}

/* "2026-11-02 10:00:00+00" (TimeZone UTC) as the record's "2026-11-02T10:00:00Z". */
static const struct rec *rec_at(const char *t)
{
	char iso[32];
	snprintf(iso, sizeof(iso), "%.10sT%.8sZ", t ? t : "", t && strlen(t) > 11 ? t + 11 : "");
	for (size_t i = 0; i < NRECS; i++)
		if (!strcmp(recs[i].when, iso))
			return &recs[i];
	fprintf(stderr, "a row at %s, when no record was made\n", t ? t : "(null)");
	t_failures++;
	return NULL;
}

static bool in_range(const struct rec *r)
{
	return strcmp(r->when, FROM) >= 0 && strcmp(r->when, TO) <= 0;
}

/* The provenance a record's figure of metric is named with, as far as the test knows it. */
static const char *provenance(const struct rec *r, const char *metric)
{
	if (!strncmp(metric, "dram_", 5))
		return r->sim ? "[SIMULATED (intel_imc_free)" : "[hardware (intel_imc_free)";
	if (!strcmp(metric, "roof_pct"))
		return "[timed, against the bandwidth roof of the protocol's roofline.bandwidth_gbps";
	return !strncmp(metric, "engine_", 7) ? "[engine-accounted" : "[timed";
}

static void check_timeseries(PGconn *c, const char *title, const char *raw, const char *vals,
			     const char *only)
{
	char metric[64] = "", label[64];
	const char *m = strstr(raw, "p.metric = '");
	if (m)
		snprintf(metric, sizeof(metric), "%.*s", (int)strcspn(m + 12, "'"), m + 12);
	T_ASSERT(metric[0] != '\0');
	char *sql = interpolate(raw, vals);
	T_ASSERT(sql != NULL);
	if (!sql)
		return;
	PGresult *res = run_sql(c, sql);
	int kt = col(res, "time"), kv = col(res, "value"), km = col(res, "metric"), n = 0;
	for (int i = 0; i < PQntuples(res); i++) {
		const struct rec *r = rec_at(cell(res, i, kt));
		const char *name = cell(res, i, km);
		if (!r || !name)
			continue;
		T_ASSERT(in_range(r) && (!only || !strcmp(r->protocol, only)));
		double w = want(r, metric);
		T_NEAR(strtod(cell(res, i, kv) ? cell(res, i, kv) : "nan", NULL), w, 1e-9 * fabs(w));
		snprintf(label, sizeof(label), "%s / ", r->protocol);
		T_ASSERT(!strncmp(name, label, strlen(label)));
		T_CONTAINS(name, provenance(r, metric));
		T_ASSERT(name[strlen(name) - 1] == ']');
	}
	for (size_t i = 0; i < NRECS; i++)
		n += in_range(&recs[i]) && (!only || !strcmp(recs[i].protocol, only)) &&
		     !isnan(want(&recs[i], metric));
	printf("%s (%s): %d rows, %d records have it\n", title, metric, PQntuples(res), n);
	T_EQ_INT(PQntuples(res), n);
	PQclear(res);
	free(sql);
}

/* The latest record of a protocol's series. */
static const struct rec *latest(const char *protocol, int *count)
{
	const struct rec *l = NULL;
	*count = 0;
	for (size_t i = 0; i < NRECS; i++)
		if (!strcmp(recs[i].protocol, protocol)) {
			(*count)++;
			if (!l || strcmp(recs[i].when, l->when) > 0)
				l = &recs[i];
		}
	return l;
}

static void near_or_null(const char *got, double w)
{
	if (isnan(w))
		T_ASSERT(got == NULL);
	else
		T_NEAR(strtod(got ? got : "nan", NULL), w, 1e-9 * fabs(w));
}

static void check_series_table(PGresult *res, int want_rows)
{
	int ks = col(res, "series"), kr = col(res, "records");
	int kd = col(res, "DRAM MB/token (latest)"), kt = col(res, "tok/s (latest)");
	T_EQ_INT(PQntuples(res), want_rows);
	for (int i = 0; i < PQntuples(res); i++) {
		char protocol[64];
		int count = 0;
		snprintf(protocol, sizeof(protocol), "%.*s", (int)strcspn(cell(res, i, ks), " "),
			 cell(res, i, ks));
		const struct rec *l = latest(protocol, &count);
		T_ASSERT(l != NULL);
		if (!l)
			continue;
		T_EQ_INT(atoi(cell(res, i, kr)), count);
		near_or_null(cell(res, i, kd), want(l, "dram_MB_per_token"));
		near_or_null(cell(res, i, kt), want(l, "tok_per_s"));
	}
}

static void check_records_table(PGresult *res, const char *only)
{
	int kr = col(res, "record"), kd = col(res, "DRAM MB/token"), kt = col(res, "tok/s");
	int kf = col(res, "% of roof"), n = 0;
	for (int i = 0; i < PQntuples(res); i++) {
		const struct rec *r = NULL;
		for (size_t k = 0; k < NRECS; k++)
			if (cell(res, i, kr) && !strcmp(recs[k].sha, cell(res, i, kr)))
				r = &recs[k];
		T_ASSERT(r && in_range(r) && (!only || !strcmp(r->protocol, only)));
		if (!r)
			continue;
		near_or_null(cell(res, i, kd), want(r, "dram_MB_per_token"));
		near_or_null(cell(res, i, kt), want(r, "tok_per_s"));
		near_or_null(cell(res, i, kf), want(r, "roof_pct"));
	}
	for (size_t i = 0; i < NRECS; i++)
		n += in_range(&recs[i]) && (!only || !strcmp(recs[i].protocol, only));
	T_EQ_INT(PQntuples(res), n);
}

/* Every query of every panel, with the variable's values vals; only: the one series they
 * name (NULL: all). Returns the number of queries run. */
static int run_panels(PGconn *c, const json_t *panels, const char *vals, const char *only)
{
	const json_t *p, *t;
	size_t i, j;
	int ran = 0;
	json_array_foreach(panels, i, p) {
		const char *title = json_string_value(json_object_get(p, "title"));
		ran += run_panels(c, json_object_get(p, "panels"), vals, only); /* rows */
		json_array_foreach(json_object_get(p, "targets"), j, t) {
			const char *raw = json_string_value(json_object_get(t, "rawSql"));
			const char *fmt = json_string_value(json_object_get(t, "format"));
			if (!raw)
				continue;
			ran++;
			if (fmt && !strcmp(fmt, "time_series")) {
				check_timeseries(c, title, raw, vals, only);
				continue;
			}
			char *sql = interpolate(raw, vals);
			T_ASSERT(sql != NULL);
			PGresult *res = sql ? run_sql(c, sql) : NULL;
			if (res && title && !strcmp(title, "Series"))
				check_series_table(res, only ? 1 : 3);
			else if (res && title && !strcmp(title, "Records"))
				check_records_table(res, only);
			printf("%s (table): %d rows\n", title ? title : "?", res ? PQntuples(res) : -1);
			PQclear(res);
			free(sql);
		}
	}
	return ran;
}

/* The template variable's values (its query's __value column), quoted for SQL; the value of
 * the series of protocol only into one[65] (when only). */
static int variable(PGconn *c, const json_t *dash, char *vals, size_t n, const char *only,
		    char *one)
{
	const json_t *v = json_array_get(json_object_get(json_object_get(dash, "templating"),
							 "list"), 0);
	const char *q = json_string_value(json_object_get(v, "query"));
	T_EQ_STR(json_string_value(json_object_get(v, "name")), "series");
	T_ASSERT(q != NULL);
	PGresult *res = run_sql(c, q ? q : "");
	int kv = col(res, "__value"), kt = col(res, "__text"), rows = PQntuples(res);
	const char *ids[16];
	for (int i = 0; i < rows && i < 16; i++) {
		ids[i] = cell(res, i, kv);
		if (only && cell(res, i, kt) && !strncmp(cell(res, i, kt), only, strlen(only)))
			snprintf(one, 65, "%s", ids[i]);
	}
	quote_all(vals, n, ids, rows < 16 ? (size_t)rows : 16);
	PQclear(res);
	return rows;
}

int main(void)
{
	char url[4300], path[4400], vals[2048], one[65] = "", onev[80];
	const char *root = getenv("MEMWALL_SOURCE_ROOT");
	if (!root || !getenv("MEMWALL_BIN"))
		t_skip("MEMWALL_SOURCE_ROOT or MEMWALL_BIN is not set (run under meson test)");
	t_mkdtemp(tmp);
	for (size_t i = 0; i < NRECS; i++)
		make(&recs[i], (int)i);
	t_pg_start(pgdir, sizeof(pgdir), url, sizeof(url));
	const char *argv[NRECS + 8] = { "memwall", "db", "--db", url, "import" };
	for (size_t i = 0; i < NRECS; i++)
		argv[5 + i] = recs[i].path;
	struct t_output o = t_run(argv);
	T_OK(o, "db import");
	t_output_free(&o);

	/* The trend site reads a PostgreSQL store as it reads SQLite's: every stored record's
	 * bytes come back as imported (their sha256 is the id, or no site is written). */
	char site[4400];
	snprintf(site, sizeof(site), "%s/site", tmp);
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", url, "site", "-o", site, NULL}), 0,
		     T_LIST("3 series, 8 records"), NULL);

	snprintf(path, sizeof(path), "%s/scripts/grafana/memwall-dashboard.json", root);
	json_error_t je;
	json_t *dash = json_load_file(path, 0, &je);
	if (!dash)
		fprintf(stderr, "%s:%d: %s\n", path, je.line, je.text);
	T_ASSERT(dash != NULL);
	PGconn *c = PQconnectdb(url);
	T_ASSERT(PQstatus(c) == CONNECTION_OK);
	PQclear(PQexec(c, "SET TIME ZONE 'UTC'"));
	if (dash && PQstatus(c) == CONNECTION_OK) {
		T_EQ_INT(variable(c, dash, vals, sizeof(vals), "gf-sim", one), 3);
		int ran = run_panels(c, json_object_get(dash, "panels"), vals, NULL);
		printf("%d queries of the dashboard run against %d records\n", ran, (int)NRECS);
		T_ASSERT(ran >= 7);
		/* One series chosen: only its rows. */
		const char *ids[1] = { one };
		T_ASSERT(one[0] != '\0');
		quote_all(onev, sizeof(onev), ids, 1);
		T_EQ_INT(run_panels(c, json_object_get(dash, "panels"), onev, "gf-sim"), ran);
	}
	PQfinish(c);
	json_decref(dash);
	t_pg_stop(pgdir);
	return t_done_rm(tmp, 0);
}
