/* src/record/site.c: the trend site of a results store (site.h): the pages and the records
 * beside them; the charts are site_chart.c's. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "changepoint.h"
#include "metrics.h"
#include "outdir.h"
#include "provenance.h"
#include "result.h"
#include "sha256.h"
#include "site.h"
#include "site_chart.h"
#include "store.h"
#include "store_series.h"
#include "text.h"

#define MARKER ".memwall-site"
#define ROOF "roof_pct"
/* `db changes` searches the latest this many records of a series (src/cli/db_series.c). */
enum { MAX_SEARCH = 5000 };

/* Which charts a series page has. A DRAM figure a series never measured is still a chart
 * (saying so); the calibrated MB/token only where a record has it; the engine-accounted
 * MB/token where no record counted DRAM (it is then the series' only MB/token). */
enum show { ALWAYS, IF_MEASURED, IF_NO_DRAM };

static const struct chart_spec {
	const char *metric, *title, *axis, *unit;
	enum show show;
	bool steps; /* searched for steps as `db changes --metric METRIC` does */
	bool dram;  /* a DRAM figure: SIMULATED where the series' counters are */
} charts[] = {
	{ "dram_MB_per_token", "DRAM MB/token", "MB/token (DRAM, MB = 10^6 bytes)", "MB/token",
	  ALWAYS, true, true },
	{ "dram_MB_per_token_calibrated", "Calibrated DRAM MB/token",
	  "MB/token (calibrated estimate, 10^6 bytes)", "MB/token", IF_MEASURED, true, true },
	{ "engine_MB_per_token", "Engine-accounted MB/token",
	  "MB/token (engine-accounted, 10^6 bytes)", "MB/token", IF_NO_DRAM, true, false },
	{ "tok_per_s", "Decode tok/s", "token/s (decode)", "tok/s", ALWAYS, true, false },
	{ ROOF, "% of the bandwidth roof", "% of the roof's most tok/s", "% of roof", ALWAYS, false,
	  false },
};
#define N_CHARTS (sizeof(charts) / sizeof(charts[0]))

/* One series: its row, its records (oldest first) and what the index says of it. */
struct series {
	const json_t *row;          /* mw_store_series_list's */
	json_t *recs;               /* mw_store_series_history's, with text */
	size_t n;
	const json_t **docs;
	struct mw_provenance *prov;
	bool simulated, dram_any;
	bool shown[N_CHARTS];
	double latest[N_CHARTS];    /* the latest record's value, NaN where not measured */
	size_t steps;
};

/* One chart's values over a series, with their words. */
struct chart_data {
	struct mw_site_point *pts;
	char (*words)[256];
	char (*why)[512];
	struct mw_site_step *steps;
	size_t n_steps, measured;
};

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static bool is_sha256(const char *s)
{
	return s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

static const char CSS[] =
	"body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1000px;color:#222;"
	"padding:0 1em}body.wide{max-width:none}.date{white-space:nowrap}table.series{font-size:.82em}h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}"
	"table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:"
	".25em .5em;text-align:left;vertical-align:top}td.num{text-align:right}"
	"code,.id{font-family:monospace}.banner{padding:.6em 1em;margin:1em 0;border:2px solid}"
	".sim{color:#b00;font-weight:bold}.banner.sim{background:#fff0f0;border-color:#b00}"
	".banner.eng{background:#f4f4ff;border-color:#559}.none{color:#555;font-style:italic;"
	"border:1px dashed #aaa;padding:1em}.prov{color:#444}"
	"svg .plot{fill:#fff;stroke:#999}svg .grid{stroke:#e8e8e8}svg .xtick{stroke:#999}"
	"svg .tick{font-size:11px;fill:#444}svg .axis{font-size:12px;fill:#222}"
	"svg .line{fill:none;stroke:#2a6fdb;stroke-width:1.5}svg .pt{fill:#2a6fdb;stroke:#fff;"
	"stroke-width:1}svg a:hover .pt{fill:#f80}svg .change line{stroke:#c00;stroke-width:1.5;"
	"stroke-dasharray:6 4}svg .change text{fill:#c00;font-size:13px;font-weight:bold}"
	"svg text.sim{fill:#c00;font-size:22px;font-weight:bold;opacity:.75}"
	"pre{white-space:pre-wrap;word-break:break-all;font-size:.8em}";

static void page_head(FILE *f, const char *title, const char *title2, bool wide)
{
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		   "<meta name=\"viewport\" content=\"width=device-width\"><title>");
	mw_html_put(f, title);
	mw_html_put(f, title2);
	fprintf(f, "</title><style>%s</style></head>\n<body%s>\n", CSS,
		wide ? " class=\"wide\"" : "");
}

static void page_foot(FILE *f, struct mw_store *s)
{
	char now[32];
	fprintf(f, "<footer><p class=\"prov\">Written by memwall %s (<code>memwall db site</code>) "
		   "at %s from a %s results store. Static HTML and SVG: no script, nothing "
		   "fetched.</p></footer>\n</body></html>\n", mw_version(),
		mw_utc_now(now, sizeof(now), false), mw_store_backend(s));
}

/* ---- loading a series */

/* The series' records with their bytes, each checked: its id the sha256 of its bytes (the
 * id is a file name here), its document a valid record (a row edited in the database must not
 * become a point). */
static int load_series(struct mw_store *s, const json_t *row, struct series *se,
		       struct mw_error *err)
{
	struct mw_store_history h = { .series = jstr(row, "id"), .before_seq = -1,
				      .with_text = true };
	json_t *r;
	size_t i;
	int rc;
	if (!is_sha256(h.series))
		return mw_error_set(err, -EIO, "results store", "series.id", "'%.80s' is not a "
				    "sha256: the store was edited", mw_esc(h.series));
	if ((rc = mw_store_series_history(s, &h, &se->recs, err)))
		return rc;
	se->n = json_array_size(se->recs);
	se->docs = calloc(se->n + 1, sizeof(*se->docs));
	se->prov = calloc(se->n + 1, sizeof(*se->prov));
	if (!se->docs || !se->prov)
		return mw_error_set(err, -ENOMEM, "results store", "", "out of memory");
	json_array_foreach(se->recs, i, r) {
		const char *id = jstr(r, "id"), *text = jstr(r, "text");
		char sha[65] = "";
		if (text)
			mw_sha256_hex(text, strlen(text), sha);
		if (!is_sha256(id) || strcmp(sha, id))
			return mw_error_set(err, -EIO, "results store", "records.document", "the "
					    "record stored as %.64s is not the bytes whose sha256 "
					    "that is: the store was edited", mw_esc(id));
		se->docs[i] = json_object_get(r, "document");
		if (mw_result_validate(se->docs[i], id, err))
			return -EIO;
		mw_provenance_of(se->docs[i], &se->prov[i]);
		se->simulated |= se->prov[i].source == MW_DRAM_SIMULATED;
	}
	return 0;
}

static void series_free(struct series *se)
{
	json_decref(se->recs);
	free(se->docs);
	free(se->prov);
	se->recs = NULL;
	se->docs = NULL;
	se->prov = NULL;
}

static int write_records(struct mw_outdir *o, const struct series *se, struct mw_error *err)
{
	json_t *r;
	size_t i;
	json_array_foreach(se->recs, i, r) {
		char rel[96];
		const char *text = jstr(r, "text");
		snprintf(rel, sizeof(rel), "records/%s.json", jstr(r, "id"));
		FILE *f = mw_outdir_fopen(o, rel, err);
		if (!f)
			return -EIO;
		size_t len = strlen(text);
		bool ok = fwrite(text, 1, len, f) == len;
		if (fclose(f) || !ok)
			return mw_error_set(err, -EIO, o->dir, o->field, "cannot write %s: %s", rel,
					    strerror(errno));
	}
	return 0;
}

/* ---- one chart's data */

/* A record's value of the chart's figure (the median over its runs, as `db changes` reads
 * it), its provenance words, or why it has none. */
static double value_of(const json_t *doc, const struct mw_provenance *p,
		       const struct chart_spec *c, char *words, size_t wn, char *why, size_t n)
{
	if (!strcmp(c->metric, ROOF))
		return mw_roof_pct(doc, why, n, words, wn);
	const json_t *m = json_object_get(json_object_get(json_object_get(doc, "summary"),
							  "metrics"), c->metric);
	const json_t *med = json_object_get(m, "median");
	mw_provenance_metric(p, c->metric, words, wn);
	if (json_is_true(json_object_get(m, "measured")) && json_is_number(med))
		return json_number_value(med);
	snprintf(why, n, "%s", jstr(m, "reason") ? jstr(m, "reason")
			       : "the record has no such figure");
	return NAN;
}

/* The steps of the measured values, as `db changes` finds them (the same search, options and
 * cap), as pairs of record indices. */
static int find_steps(struct chart_data *d, size_t n)
{
	struct mw_cp_opts o;
	struct mw_cp_result r = { 0 };
	double *y = malloc((n + 1) * sizeof(*y));
	size_t *map = malloc((n + 1) * sizeof(*map)), m = 0;
	int rc = -ENOMEM;
	if (!y || !map)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (isnan(d->pts[i].value))
			continue;
		y[m] = d->pts[i].value;
		map[m++] = i;
	}
	size_t off = m > MAX_SEARCH ? m - MAX_SEARCH : 0;
	mw_cp_opts_default(&o);
	if ((rc = mw_changepoints(y + off, m - off, &o, &r)))
		goto out;
	if (r.n_changes && !(d->steps = calloc(r.n_changes, sizeof(*d->steps))))
		rc = -ENOMEM;
	for (size_t k = 0; !rc && k < r.n_changes; k++) {
		const struct mw_change *c = &r.changes[k];
		struct mw_site_step *st = &d->steps[d->n_steps++];
		st->before = map[off + c->at - 1];
		st->after = map[off + c->at];
		st->change_pct = c->change_pct;
		st->median_before = c->before;
		st->median_after = c->after;
		st->n_before = c->at - c->from;
		st->n_after = c->to - c->at;
	}
	mw_cp_result_free(&r);
out:
	free(y);
	free(map);
	return rc;
}

static int chart_data(const struct series *se, const struct chart_spec *c,
		      struct chart_data *d)
{
	*d = (struct chart_data){ 0 };
	d->pts = calloc(se->n + 1, sizeof(*d->pts));
	d->words = calloc(se->n + 1, sizeof(*d->words));
	d->why = calloc(se->n + 1, sizeof(*d->why));
	if (!d->pts || !d->words || !d->why)
		return -ENOMEM;
	for (size_t i = 0; i < se->n; i++) {
		const json_t *r = json_array_get(se->recs, i);
		d->pts[i] = (struct mw_site_point){
			.id = jstr(r, "id"), .created = jstr(r, "created_utc"),
			.version = jstr(r, "engine_version"), .prov = d->words[i] };
		d->pts[i].value = value_of(se->docs[i], &se->prov[i], c, d->words[i],
					   sizeof(d->words[i]), d->why[i], sizeof(d->why[i]));
		d->measured += !isnan(d->pts[i].value);
	}
	return c->steps ? find_steps(d, se->n) : 0;
}

static void chart_data_free(struct chart_data *d)
{
	free(d->pts);
	free(d->words);
	free(d->why);
	free(d->steps);
}

/* ---- a series page */

/* The distinct provenance words of the measured points, with how many records say each. */
static void prov_line(FILE *f, const struct chart_data *d, size_t n)
{
	fprintf(f, "<p class=\"prov\">Provenance: ");
	bool first = true;
	for (size_t i = 0; i < n; i++) {
		size_t count = 0;
		bool seen = false;
		if (isnan(d->pts[i].value))
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !isnan(d->pts[j].value) && !strcmp(d->words[j], d->words[i]);
		for (size_t j = i; j < n && !seen; j++)
			count += !isnan(d->pts[j].value) && !strcmp(d->words[j], d->words[i]);
		if (seen)
			continue;
		fprintf(f, "%s<span class=\"%s\">", first ? "" : "; ",
			!strncmp(d->words[i], "SIMULATED", 9) ? "sim" : "words");
		mw_html_put(f, d->words[i]);
		fprintf(f, "</span> (%zu record%s)", count, count == 1 ? "" : "s");
		first = false;
	}
	if (d->measured < n)
		fprintf(f, "%s%zu of %zu records have no value (the table below says why)",
			first ? "" : ". ", n - d->measured, n);
	fprintf(f, ".</p>\n");
}

static void record_link(FILE *f, const struct mw_site_point *p, size_t i)
{
	fprintf(f, "#%zu <a class=\"id\" href=\"../records/", i + 1);
	mw_html_put(f, p->id);
	fprintf(f, ".json\">%.12s</a> (", p->id);
	mw_html_put(f, p->created);
	fprintf(f, ", engine ");
	mw_html_put(f, p->version ? p->version : "?");
	fprintf(f, ")");
}

static void steps_list(FILE *f, const struct series *se, const struct chart_spec *c,
		       const struct chart_data *d)
{
	if (!c->steps) {
		fprintf(f, "<p class=\"prov\">100 %% is the decode tok/s the roof's bandwidth "
			   "allows at the model's analytic bytes per token (the record's "
			   "roofline.max_tok_s); the point is 100 / roofline.headroom. No step search "
			   "here: %% of the roof is not a summary metric (with a fixed roof, its steps "
			   "are tok/s's: <code>memwall db changes --metric tok_per_s</code>).</p>\n");
		return;
	}
	if (!d->n_steps) {
		fprintf(f, "<p class=\"prov\">%s %zu per-record median%s (<code>memwall db "
			   "changes --series %.12s --metric %s</code>: penalized L1 optimal "
			   "partitioning, segments of at least 3 records).</p>\n",
			d->measured < 6 ? "Too few records to look for a step (at least 3 each side):"
					: "No step in", d->measured, d->measured == 1 ? "" : "s",
			jstr(se->row, "id"), c->metric);
		return;
	}
	fprintf(f, "<ul class=\"steps\">\n");
	for (size_t k = 0; k < d->n_steps; k++) {
		const struct mw_site_step *st = &d->steps[k];
		fprintf(f, "<li class=\"step\">A step of <b>%+.2f %%</b> between ", st->change_pct);
		record_link(f, &d->pts[st->before], st->before);
		fprintf(f, " and ");
		record_link(f, &d->pts[st->after], st->after);
		fprintf(f, ": median %.6g over %zu records, then %.6g over %zu.</li>\n",
			st->median_before, st->n_before, st->median_after, st->n_after);
	}
	fprintf(f, "</ul>\n<p class=\"prov\">Steps as <code>memwall db changes --series %.12s "
		   "--metric %s</code> finds them.</p>\n", jstr(se->row, "id"), c->metric);
}

static void points_table(FILE *f, const struct chart_spec *c, const struct chart_data *d,
			 size_t n)
{
	char v[48];
	fprintf(f, "<details><summary>The %zu record%s</summary><table class=\"points\">"
		   "<tr><th>record</th><th>created (UTC)</th><th>engine</th><th>%s</th>"
		   "<th>provenance, or why not measured</th></tr>\n", n, n == 1 ? "" : "s", c->unit);
	for (size_t i = 0; i < n; i++) {
		const struct mw_site_point *p = &d->pts[i];
		fprintf(f, "<tr><td>#%zu <a class=\"id\" href=\"../records/", i + 1);
		mw_html_put(f, p->id);
		fprintf(f, ".json\">%.12s</a></td><td>", p->id);
		mw_html_put(f, p->created);
		fprintf(f, "</td><td>");
		mw_html_put(f, p->version ? p->version : "?");
		fprintf(f, "</td><td class=\"num\">%s</td><td>", mw_site_value(p->value, v,
										  sizeof(v)));
		mw_html_put(f, isnan(p->value) ? d->why[i] : d->words[i]);
		fprintf(f, "</td></tr>\n");
	}
	fprintf(f, "</table></details>\n");
}

static int chart_section(FILE *f, struct series *se, size_t ci)
{
	const struct chart_spec *c = &charts[ci];
	struct chart_data d;
	int rc = chart_data(se, c, &d);
	bool sim = c->dram && se->simulated;
	se->latest[ci] = rc || !se->n ? NAN : d.pts[se->n - 1].value;
	if (!strcmp(c->metric, "dram_MB_per_token"))
		se->dram_any = d.measured > 0;
	se->shown[ci] = !rc && (c->show == ALWAYS || (c->show == IF_MEASURED && d.measured) ||
				(c->show == IF_NO_DRAM && !se->dram_any));
	if (rc || !se->shown[ci]) {
		chart_data_free(&d);
		return rc;
	}
	se->steps += d.n_steps;
	fprintf(f, "<section class=\"metric\" id=\"%s\" data-metric=\"%s\" data-records=\"%zu\" "
		   "data-measured=\"%zu\">\n<h2>%s%s</h2>\n", c->metric, c->metric, se->n,
		d.measured, c->title, sim ? " <span class=\"sim\">[SIMULATED]</span>" : "");
	if (!d.measured) {
		fprintf(f, "<p class=\"none\" data-metric=\"%s\">Not measured in any of the %zu "
			   "records of this series: ", c->metric, se->n);
		mw_html_put(f, se->n ? d.why[se->n - 1] : "no records");
		fprintf(f, " (the latest record's reason). Nothing is plotted: a figure not "
			   "measured is never a 0.</p>\n");
	} else {
		prov_line(f, &d, se->n);
		mw_site_chart_svg(f, &(struct mw_site_chart){
			.metric = c->metric, .title = c->title, .axis = c->axis, .unit = c->unit,
			.simulated = sim, .n = se->n, .pts = d.pts, .n_steps = d.n_steps,
			.steps = d.steps, .href = "../records/" });
		steps_list(f, se, c, &d);
	}
	points_table(f, c, &d, se->n);
	fprintf(f, "</section>\n");
	chart_data_free(&d);
	return 0;
}

static void key_row(FILE *f, const char *name, const char *value)
{
	fprintf(f, "<tr><th>%s</th><td>", name);
	mw_html_put(f, value ? value : "?");
	fprintf(f, "</td></tr>\n");
}

static void series_header(FILE *f, const struct series *se)
{
	const json_t *row = se->row;
	char n[32];
	fprintf(f, "<p><a href=\"../index.html\">All series</a></p>\n<h1>Series <span "
		   "class=\"id\">%.12s</span>: ", jstr(row, "id"));
	mw_html_put(f, jstr(row, "protocol"));
	fprintf(f, "</h1>\n");
	if (se->simulated)
		fprintf(f, "<p class=\"banner sim\">SIMULATED: the DRAM figures of this series were "
			   "counted by memwall's simulated PMU (MEMWALL_COUNTERS=sim, counts scripted "
			   "by a test), not by hardware. Its tok/s are timed.</p>\n");
	else if (se->n && se->prov[se->n - 1].source == MW_DRAM_NONE)
		fprintf(f, "<p class=\"banner eng\">No DRAM counter: every MB/token of this series "
			   "is engine-accounted (computed from tensor shapes), not measured.</p>\n");
	if (se->n && se->prov[se->n - 1].synthetic)
		fprintf(f, "<p class=\"banner eng\">SYNTHETIC weights: real shapes, so bytes per "
			   "token are real; the tokens are not.</p>\n");
	fprintf(f, "<table class=\"key\">\n");
	key_row(f, "series", jstr(row, "id"));
	key_row(f, "machine", jstr(row, "machine"));
	key_row(f, "protocol", jstr(row, "protocol"));
	key_row(f, "model", jstr(row, "model"));
	key_row(f, "engine", jstr(row, "engine"));
	key_row(f, "counters", jstr(row, "counters"));
	snprintf(n, sizeof(n), "%zu", se->n);
	key_row(f, "records", n);
	key_row(f, "first", jstr(row, "first_utc"));
	key_row(f, "last", jstr(row, "last_utc"));
	fprintf(f, "</table>\n<details><summary>The series' key (src/README.md, \"A series\")</summary>"
		   "<pre>");
	char *key = json_dumps(json_object_get(row, "key"), JSON_COMPACT | JSON_SORT_KEYS);
	mw_html_put(f, key ? key : "?");
	free(key);
	fprintf(f, "</pre></details>\n");
}

static int write_series_page(struct mw_store *s, struct mw_outdir *o, struct series *se,
			     struct mw_error *err)
{
	char rel[96];
	int rc = 0;
	snprintf(rel, sizeof(rel), "series/%s.html", jstr(se->row, "id"));
	FILE *f = mw_outdir_fopen(o, rel, err);
	if (!f)
		return -EIO;
	page_head(f, "memwall series: ", jstr(se->row, "protocol"), false);
	series_header(f, se);
	fprintf(f, "<p class=\"prov\">Each point is one record's median over its runs, linked to "
		   "the record (its JSON, whose sha256 is its id); hover for its id, date, engine "
		   "version and provenance. A record without the figure is a gap, never a 0.</p>\n");
	for (size_t ci = 0; ci < N_CHARTS && !rc; ci++)
		rc = chart_section(f, se, ci);
	page_foot(f, s);
	if (rc)
		mw_error_set(err, rc, o->dir, o->field, "out of memory writing %s", rel);
	bool bad = ferror(f);
	if ((fclose(f) || bad) && !rc)
		rc = mw_error_set(err, -EIO, o->dir, o->field, "cannot write %s: %s", rel,
				  strerror(errno));
	return rc;
}

/* ---- the index */

static size_t chart_index(const char *metric)
{
	for (size_t i = 0; i < N_CHARTS; i++)
		if (!strcmp(charts[i].metric, metric))
			return i;
	return 0;
}

static void index_cell_value(FILE *f, const struct series *se, const char *metric)
{
	char v[48];
	size_t ci = chart_index(metric);
	fprintf(f, "<td class=\"num\">%s%s</td>", mw_site_value(se->latest[ci], v, sizeof(v)),
		charts[ci].dram && se->simulated && !isnan(se->latest[ci])
			? " <span class=\"sim\">SIMULATED</span>" : "");
}

/* "2026-12-07 01:02:03" of "2026-12-07T01:02:03Z", kept on one line. */
static void date_cell(FILE *f, const char *utc)
{
	char d[40];
	snprintf(d, sizeof(d), "%s", utc ? utc : "?");
	if (strlen(d) == 20 && d[10] == 'T' && d[19] == 'Z') {
		d[10] = ' ';
		d[19] = '\0';
	}
	fprintf(f, "<span class=\"date\">");
	mw_html_put(f, d);
	fprintf(f, "</span>");
}

static void index_row(FILE *f, const struct series *se)
{
	static const char *const labels[] = { "protocol", "model", "machine", "engine",
					      "counters" };
	const json_t *row = se->row;
	fprintf(f, "<tr data-series=\"%s\"><td><a class=\"id\" href=\"series/%s.html\">%.12s</a>"
		   "</td>", jstr(row, "id"), jstr(row, "id"), jstr(row, "id"));
	/* protocol, model, then machine, engine and counters in one cell, a line each */
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		fprintf(f, "%s", i < 3 ? "<td>" : "<br>");
		mw_html_put(f, jstr(row, labels[i]));
		fprintf(f, "%s", i < 2 || i == 4 ? "</td>" : "");
	}
	fprintf(f, "<td class=\"num\">%zu</td><td>", se->n);
	date_cell(f, jstr(row, "first_utc"));
	fprintf(f, " to<br>");
	date_cell(f, jstr(row, "last_utc"));
	fprintf(f, "</td>");
	index_cell_value(f, se, se->dram_any ? "dram_MB_per_token" : "engine_MB_per_token");
	index_cell_value(f, se, "tok_per_s");
	index_cell_value(f, se, ROOF);
	fprintf(f, "<td class=\"num\">%zu</td><td class=\"%s\">", se->steps,
		se->simulated ? "sim" : "words");
	mw_html_put(f, jstr(row, "provenance"));
	fprintf(f, "</td></tr>\n");
}

static int write_index(struct mw_store *s, struct mw_outdir *o, const struct series *all,
		       size_t ns, const struct mw_site_result *res, struct mw_error *err)
{
	FILE *f = mw_outdir_fopen(o, "index.html", err);
	if (!f)
		return -EIO;
	page_head(f, "memwall: the store's series", "", true);
	fprintf(f, "<h1>memwall: %zu series, %zu records</h1>\n<p class=\"prov\">A series is the "
		   "records of one machine, protocol, model, engine build and DRAM counter layer "
		   "(src/README.md, \"A series\"). The figures are each series' latest record's medians "
		   "over its runs (MB/token: DRAM where it was counted, else engine-accounted), "
		   "with that record's provenance; steps are those <code>memwall db changes</code> "
		   "finds in MB/token and tok/s.</p>\n", res->series, res->records);
	if (!ns)
		fprintf(f, "<p class=\"none\">No series: the store holds no records (<code>memwall "
			   "db import RECORD...</code>).</p>\n");
	else
		fprintf(f, "<table class=\"series\">\n<tr><th>series</th><th>protocol</th>"
			   "<th>model</th><th>machine, engine, counters</th><th>records</th>"
			   "<th>created (UTC)</th><th>MB/token</th><th>tok/s</th><th>%% of roof</th>"
			   "<th>steps</th><th>provenance (latest)</th></tr>\n");
	for (size_t i = 0; i < ns; i++)
		index_row(f, &all[i]);
	if (ns)
		fprintf(f, "</table>\n");
	page_foot(f, s);
	bool bad = ferror(f);
	if (fclose(f) || bad)
		return mw_error_set(err, -EIO, o->dir, o->field, "cannot write index.html: %s",
				    strerror(errno));
	return 0;
}

int mw_site_write(struct mw_store *s, const char *dir, const struct mw_site_opts *opts,
		  struct mw_site_result *res, struct mw_error *err)
{
	struct mw_outdir o;
	struct series *all = NULL;
	json_t *rows = NULL, *row;
	size_t i;
	char marker[200];
	*res = (struct mw_site_result){ 0 };
	snprintf(marker, sizeof(marker), "written by `memwall db site` (memwall %s): a later "
		 "`memwall db site -o` may replace this folder\n", mw_version());
	int rc = mw_outdir_begin(&o, dir, "-o", opts->force, MARKER, marker, opts->inputs,
				 opts->n_inputs, err);
	if (rc)
		return rc;
	if ((rc = mw_outdir_mkdir(&o, "series", err)) || (rc = mw_outdir_mkdir(&o, "records", err)) ||
	    (rc = mw_store_series_list(s, &rows, err)))
		goto out;
	if (!(all = calloc(json_array_size(rows) + 1, sizeof(*all)))) {
		rc = mw_error_set(err, -ENOMEM, dir, "-o", "out of memory");
		goto out;
	}
	json_array_foreach(rows, i, row) {
		all[i].row = row;
		if ((rc = load_series(s, row, &all[i], err)) || (rc = write_records(&o, &all[i], err)) ||
		    (rc = write_series_page(s, &o, &all[i], err)))
			goto out;
		res->series++;
		res->records += all[i].n;
		res->changes += all[i].steps;
		series_free(&all[i]);
	}
	if (!(rc = write_index(s, &o, all, json_array_size(rows), res, err)))
		rc = mw_outdir_commit(&o, err);
out:
	for (size_t k = 0; all && k < json_array_size(rows); k++)
		series_free(&all[k]);
	if (rc)
		mw_outdir_abort(&o);
	free(all);
	json_decref(rows);
	return rc;
}
