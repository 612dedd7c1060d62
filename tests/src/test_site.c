/* tests/src/test_site.c: the trend site (src/record/site.c) without a browser.
 *
 * A store of fixture records whose text is hostile (a CPU name, a protocol name, a model name
 * and an engine version holding <script>, quotes, an attribute, an ESC sequence and a bidi
 * override): every page is scanned tag by tag, and only the elements and attributes the site
 * writes may appear (no <script>, no <img>, no on* attribute, no link out of the folder);
 * each hostile string appears escaped. Each point's value is checked against the median of
 * the record's runs computed here, a series without DRAM counters shows no DRAM point and its
 * engine-accounted MB/token instead, a record without a roofline block gets no roof point and
 * says why. A store whose stored record was edited (its bytes no longer its id) makes no site
 * and leaves nothing behind. tests/e2e/test_site_chromium.c loads the pages in a browser. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fixture_result.h"
#include "record.h"
#include "run.h"
#include "sha256.h"
#include "site.h"
#include "store.h"
#include "store_series.h"
#include "test.h"

static char tmp[] = "/tmp/mw-test-site-XXXXXX";

#define EVIL_CPU "CPU \"<script>alert(1)</script>\" & 'x' onmouseover=\"alert(2)\" \x1b[31m\xe2\x80\xae"
#define EVIL_PROTO "p<img src=x onerror=alert(3)>\"'"
#define EVIL_MODEL "m</title><script>alert(4)</script>"
#define EVIL_VERSION "1.0 <b onclick=alert(5)>x</b>"

struct rec {
	char path[4200];
	char sha[65];
};

static void make(struct rec *r, const char *name, const char *when, double dram_bytes,
		 uint32_t seed)
{
	struct t_fx_spec sp = { .protocol = EVIL_PROTO, .cpu = EVIL_CPU, .runs = 3, .warmups = 1,
			      .tokens = 8, .latency_ns = 1e6, .jitter = 0.02,
			      .dram_bytes = dram_bytes, .instances = dram_bytes > 0, .seed = seed };
	struct mw_error err;
	json_t *d = t_fx_record(&sp);
	json_object_set_new(d, "created_utc", json_string(when));
	json_object_set_new(json_object_get(d, "model"), "name", json_string(EVIL_MODEL));
	json_object_set_new(json_object_get(d, "memwall"), "version", json_string(EVIL_VERSION));
	t_fx_write(d, tmp, name, r->path, sizeof(r->path));
	T_EQ_INT(mw_sha256_file(r->path, r->sha, NULL, &err), 0);
	json_decref(d);
}

static char *slurp(const char *path)
{
	char *s = t_slurp(path, NULL);
	T_ASSERT(s != NULL);
	return s;
}

static bool in_list(const char *name, size_t n, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strlen(list[i]) == n && !strncmp(list[i], name, n))
			return true;
	return false;
}

static const char *const tags[] = {
	"html", "head", "meta", "title", "style", "body", "p", "a", "h1", "h2", "span", "table",
	"tr", "th", "td", "details", "summary", "pre", "code", "section", "svg", "rect", "line",
	"text", "polyline", "circle", "g", "ul", "li", "b", "br", "footer", NULL };
static const char *const attrs[] = {
	"lang", "charset", "name", "content", "class", "id", "href", "viewBox", "width", "height",
	"role", "aria-label", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "points",
	"transform", "text-anchor", NULL };

/* One tag's attributes (after its name, up to '>'): each of the list or data-*, values in
 * double quotes, an href relative and naming a file of the site. Returns the end of the tag. */
static const char *check_attrs(const char *p, const char *page_dir, const char *site,
			       const char *page)
{
	while (*p && *p != '>') {
		if (*p == ' ' || *p == '/' || *p == '\n') {
			p++;
			continue;
		}
		size_t n = strcspn(p, "= >");
		if (!(in_list(p, n, attrs) || !strncmp(p, "data-", 5))) {
			fprintf(stderr, "%s: attribute '%.*s' the site never writes\n", page, (int)n, p);
			t_failures++;
		}
		bool href = n == 4 && !strncmp(p, "href", 4);
		p += n;
		if (*p != '=')
			continue;
		T_ASSERT(p[1] == '"');
		const char *v = p + 2, *end = strchr(v, '"');
		if (!end)
			return v + strlen(v);
		if (href) {
			char target[8800];
			struct stat st;
			snprintf(target, sizeof(target), "%s/%.*s", page_dir, (int)(end - v), v);
			if (memchr(v, ':', (size_t)(end - v)) || v[0] == '/' || stat(target, &st)) {
				fprintf(stderr, "%s: href '%.*s' is not a file of the site %s\n", page,
					(int)(end - v), v, site);
				t_failures++;
			}
		}
		p = end + 1;
	}
	return p;
}

/* Every tag of one page is one the site writes. */
static void check_page(const char *path, const char *site)
{
	char dir[4400];
	char *html = slurp(path);
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	for (const char *p = html ? strchr(html, '<') : NULL; p; p = strchr(p, '<')) {
		p++;
		if (*p == '/' || *p == '!') /* an end tag, the doctype */
			continue;
		size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789");
		if (!in_list(p, n, tags)) {
			fprintf(stderr, "%s: a <%.*s> element the site never writes\n", path,
				n ? (int)n : 8, p);
			t_failures++;
		}
		p = check_attrs(p + n, dir, site, path);
	}
	/* The hostile text, escaped where it shows. */
	T_ASSERT(!strstr(html, "<script") && !strstr(html, "<img") && !strstr(html, "\x1b"));
	T_ASSERT(!strstr(html, "\xe2\x80\xae"));
	free(html);
}

static char *page_of(const char *site, const char *series)
{
	char p[9000];
	snprintf(p, sizeof(p), "%s/series/%s.html", site, series);
	return slurp(p);
}

/* The data-value of the circle of metric for record id, NaN when there is none. */
static double point(const char *html, const char *metric, const char *id)
{
	char key[256];
	snprintf(key, sizeof(key), "data-metric=\"%s\" data-id=\"%s\" data-value=\"", metric, id);
	const char *v = html ? strstr(html, key) : NULL;
	return v ? strtod(v + strlen(key), NULL) : NAN;
}

static size_t count(const char *html, const char *needle)
{
	size_t n = 0;
	for (const char *p = html; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static json_t *series_ids(const char *db)
{
	struct mw_store *s = NULL;
	struct mw_error err;
	json_t *rows = NULL;
	T_EQ_INT(mw_store_open(db, &s, &err), 0);
	if (s)
		T_EQ_INT(mw_store_series_list(s, &rows, &err), 0);
	mw_store_close(s);
	return rows;
}

int main(void)
{
	char db[4400], site[4400], p[9000];
	struct rec hw[3], eng[2];
	struct mw_store *s = NULL;
	struct mw_error err;
	struct mw_site_result res;
	bool added;
	char sha[65];
	t_mkdtemp(tmp);
	static const char *const when[3] = { "2026-12-01T00:00:01Z", "2026-12-02T00:00:01Z",
					     "2026-12-03T00:00:01Z" };
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "hw%d.json", i);
		make(&hw[i], p, when[i], 2e6 * (1 + 0.01 * i), 10 + (uint32_t)i);
	}
	make(&eng[0], "eng0.json", when[0], 0, 20);
	make(&eng[1], "eng1.json", when[1], 0, 21);
	snprintf(db, sizeof(db), "%s/store.db", tmp);
	T_EQ_INT(mw_store_open(db, &s, &err), 0);
	const struct rec *all[5] = { &hw[0], &hw[1], &hw[2], &eng[0], &eng[1] };
	for (int i = 0; s && i < 5; i++)
		T_EQ_INT(mw_store_import(s, all[i]->path, sha, &added, &err), 0);

	snprintf(site, sizeof(site), "%s/site", tmp);
	const char *inputs[1] = { db };
	struct mw_site_opts o = { .inputs = inputs, .n_inputs = 1 };
	T_EQ_INT(s ? mw_site_write(s, site, &o, &res, &err) : -1, 0);
	T_EQ_INT((int)res.series, 2);
	T_EQ_INT((int)res.records, 5);

	/* Every page, tag by tag; the records beside them are the stored bytes. */
	json_t *rows = series_ids(db), *row;
	size_t i;
	snprintf(p, sizeof(p), "%s/index.html", site);
	check_page(p, site);
	char *index = slurp(p);
	T_CONTAINS(index, "CPU &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot; &amp; &#39;x&#39;"
			  " onmouseover=&quot;alert(2)&quot; \\e[31m\\u202e");
	T_CONTAINS(index, "p&lt;img src=x onerror=alert(3)&gt;&quot;&#39;");
	T_CONTAINS(index, "m&lt;/title&gt;&lt;script&gt;alert(4)&lt;/script&gt;");
	json_array_foreach(rows, i, row) {
		const char *id = json_string_value(json_object_get(row, "id"));
		snprintf(p, sizeof(p), "%s/series/%s.html", site, id);
		check_page(p, site);
		snprintf(p, sizeof(p), "href=\"series/%s.html\"", id);
		T_CONTAINS(index, p);
	}
	free(index);
	for (int k = 0; k < 5; k++) {
		char got[65];
		snprintf(p, sizeof(p), "%s/records/%s.json", site, all[k]->sha);
		T_EQ_INT(mw_sha256_file(p, got, NULL, &err), 0);
		T_EQ_STR(got, all[k]->sha);
	}

	/* The values: each record's median over its runs, computed here. */
	json_array_foreach(rows, i, row) {
		const char *id = json_string_value(json_object_get(row, "id"));
		char *html = page_of(site, id);
		bool dram = json_is_number(json_object_get(row, "dram_MB_per_token"));
		const struct rec *r = dram ? hw : eng;
		int n = dram ? 3 : 2;
		T_CONTAINS(html, "1.0 &lt;b onclick=alert(5)&gt;x&lt;/b&gt;");
		for (int k = 0; k < n; k++) {
			double want = t_runs_median(r[k].path, "tok_per_s");
			T_NEAR(point(html, "tok_per_s", r[k].sha), want, 1e-9 * want);
			want = t_runs_median(r[k].path, dram ? "dram_MB_per_token"
							       : "engine_MB_per_token");
			T_NEAR(point(html, dram ? "dram_MB_per_token" : "engine_MB_per_token",
				     r[k].sha), want, 1e-9 * want);
			/* Never a point at 0 for a figure not measured. */
			T_ASSERT(isnan(point(html, "roof_pct", r[k].sha)));
			if (!dram)
				T_ASSERT(isnan(point(html, "dram_MB_per_token", r[k].sha)));
		}
		T_EQ_INT((int)count(html, "<circle"), 2 * n);
		T_EQ_INT((int)count(html, "class=\"none\" data-metric=\"roof_pct\""), 1);
		T_CONTAINS(html, "no roofline block");
		if (!dram) {
			T_EQ_INT((int)count(html, "class=\"none\" data-metric=\"dram_MB_per_token\""),
				 1);
			T_CONTAINS(html, "fixture: no memory-controller counters");
			T_CONTAINS(html, "engine-accounted");
		} else {
			T_CONTAINS(html, "hardware (intel_imc_free), not verified");
			T_ASSERT(!strstr(html, "engine_MB_per_token"));
		}
		free(html);
	}
	json_decref(rows);

	/* Again: the site memwall wrote is replaced without --force. */
	T_EQ_INT(s ? mw_site_write(s, site, &o, &res, &err) : -1, 0);
	/* Not into the folder that holds the store. */
	snprintf(p, sizeof(p), "%s", tmp);
	T_EQ_INT(s ? mw_site_write(s, p, &(struct mw_site_opts){ .force = true, .inputs = inputs,
				   .n_inputs = 1 }, &res, &err) : -1, -EINVAL);
	mw_store_close(s);

	/* A stored record edited in the database: no site, nothing left behind. */
	sqlite3 *h = NULL;
	T_EQ_INT(sqlite3_open(db, &h), SQLITE_OK);
	snprintf(p, sizeof(p), "UPDATE records SET document = document || ' ' WHERE sha256 = '%s'",
		 hw[1].sha);
	T_EQ_INT(sqlite3_exec(h, p, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	T_EQ_INT(mw_store_open(db, &s, &err), 0);
	snprintf(site, sizeof(site), "%s/site2", tmp);
	mw_error_clear(&err);
	T_EQ_INT(s ? mw_site_write(s, site, &o, &res, &err) : -1, -EIO);
	T_CONTAINS(err.text, "the store was edited");
	struct stat st;
	T_ASSERT(stat(site, &st) != 0);
	DIR *d = opendir(tmp);
	struct dirent *e;
	while (d && (e = readdir(d)))
		T_ASSERT(!strstr(e->d_name, ".tmp-"));
	if (d)
		closedir(d);
	mw_store_close(s);

	return t_done_rm(tmp, 0);
}
