/* tests/e2e/test_site_chromium.c: `memwall db site` loaded by a real browser (opt-in suite
 * `chromium`: Debian's chromium in headless mode, scripts/bootstrap.sh --dev installs it).
 *
 * A store of 8 records made by `memwall run` on the simulated PMU (tests/lib/sim_series.h):
 * series "site-roof" has a bandwidth roof (the protocol's 50 GB/s, and an LLC of 64 KiB so the
 * model's weights do not fit in it) and 6 records, 3 of script A then 3 of script B (15 % more
 * bytes per token); series "site-noroof" has no bandwidth roof and 2 records. `memwall db site`
 * writes the site into the build folder (MEMWALL_BUILD_ROOT/test-site-chromium/site, with the
 * DOM of each page as the browser saw it and the screenshots index.png and series.png beside
 * it, to look at), and chromium loads every page (--dump-dom). In the DOM it built:
 *  - every point of every chart: one circle per record that has the figure, its data-value the
 *    figure computed here from the record: the median of the runs' MB/token and tok/s, and for
 *    % of roof 100 x the mean of the runs' tok/s over the roof's tok/s, 50e9 bytes/s over the
 *    roofline block's analytic bytes per token;
 *  - the step: between record 3 and record 4 of site-roof, its size the change of the medians of
 *    the two scripts' per-record medians, computed here;
 *  - site-noroof: no roof point, and the record's reason ("no bandwidth roof") where the chart
 *    would be; the word SIMULATED on both series' DRAM charts;
 *  - every link a file of the site.
 * The screenshots are PNGs of the window's size, large enough not to be a blank page.
 * Without chromium the test skips, unless MEMWALL_REQUIRE_CHROMIUM is set (.ci/run sets it
 * under CI): there a missing browser is a failure. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"
#include "run.h"
#include "sim_series.h"
#include "test.h"

#define TREE "arrow-lake"
#define D 2
#define RUNS 3
#define X_A 15625u
#define X_B 17969u /* round(1.15 X_A) */
#define BW_GBPS 50.0

static char scratch[256];
static char chromium[4096];
static char out[4096]; /* MEMWALL_BUILD_ROOT/test-site-chromium */

struct rec {
	char path[512];
	char sha[65];
};

static bool find_chromium(void)
{
	const char *env = getenv("MEMWALL_CHROMIUM");
	static const char *const tries[] = { "/usr/bin/chromium", "/usr/bin/chromium-browser",
					     NULL };
	if (env && *env && access(env, X_OK) == 0) {
		snprintf(chromium, sizeof(chromium), "%s", env);
		return true;
	}
	for (int i = 0; tries[i]; i++)
		if (access(tries[i], X_OK) == 0) {
			snprintf(chromium, sizeof(chromium), "%s", tries[i]);
			return true;
		}
	return false;
}

/* chromium headless on a page: --dump-dom (shot NULL; the DOM is returned, malloc'd) or
 * --screenshot=shot at w x h. Nothing outside the scratch profile, no network. */
static char *browse(const char *page, const char *shot, int w, int h)
{
	char url[4400], profile[400], arg[4400], size[64];
	snprintf(url, sizeof(url), "file://%s", page);
	snprintf(profile, sizeof(profile), "--user-data-dir=%s/profile", scratch);
	snprintf(arg, sizeof(arg), shot ? "--screenshot=%s" : "--dump-dom", shot);
	snprintf(size, sizeof(size), "--window-size=%d,%d", w, h);
	struct t_output o = t_run((const char *[]){
		chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", profile, arg, size, url, NULL });
	T_OK(o, "chromium");
	char *dom = o.out;
	o.out = NULL;
	t_output_free(&o);
	return dom;
}

/* The value of attribute name in the tag starting at tag (up to its '>'), or "". */
static const char *attr(const char *tag, const char *name)
{
	static char v[4][512];
	static int next;
	char key[64];
	char *buf = v[next++ % 4];
	const char *end = strchr(tag, '>');
	snprintf(key, sizeof(key), " %s=\"", name);
	const char *a = strstr(tag, key);
	buf[0] = '\0';
	if (a && (!end || a < end)) {
		a += strlen(key);
		snprintf(buf, 512, "%.*s", (int)strcspn(a, "\""), a);
	}
	return buf;
}

/* The figures a record has, computed here from its runs and its roofline block. */
struct want {
	double mb, tok, roof;
};

static struct want want_of(const char *path)
{
	struct want w = { t_runs_median(path, "dram_MB_per_token"),
			  t_runs_median(path, "tok_per_s"), NAN };
	json_t *d = json_load_file(path, 0, NULL), *r;
	size_t i, n = 0;
	double sum = 0;
	json_array_foreach(json_object_get(d, "runs"), i, r) {
		const json_t *x = json_object_get(json_object_get(r, "figures"), "tok_per_s");
		if (json_is_number(x) && !json_is_true(json_object_get(r, "warmup"))) {
			sum += json_number_value(x);
			n++;
		}
	}
	const json_t *bytes = json_object_get(json_object_get(d, "roofline"),
					      "analytic_bytes_per_token");
	/* The roof: the bandwidth over the analytic bytes a token reads (Williams et al.). */
	if (json_is_number(json_object_get(json_object_get(d, "roofline"), "max_tok_s")) && n)
		w.roof = 100.0 * (sum / (double)n) / (BW_GBPS * 1e9 / json_number_value(bytes));
	json_decref(d);
	return w;
}

/* Every circle of a page's DOM is a record of recs[0..n) with the value computed here, and
 * every record that has a figure has its circle. */
static void check_points(const char *dom, const struct rec *recs, int n)
{
	static const char *const metrics[3] = { "dram_MB_per_token", "tok_per_s", "roof_pct" };
	int want_count[3] = { 0 }, seen[3] = { 0 };
	for (int k = 0; k < n; k++) {
		struct want w = want_of(recs[k].path);
		want_count[0] += !isnan(w.mb);
		want_count[1] += !isnan(w.tok);
		want_count[2] += !isnan(w.roof);
	}
	for (const char *c = strstr(dom, "<circle"); c; c = strstr(c + 1, "<circle")) {
		const char *m = attr(c, "data-metric"), *id = attr(c, "data-id");
		double v = strtod(attr(c, "data-value"), NULL);
		int mi = !strcmp(m, metrics[0]) ? 0 : !strcmp(m, metrics[1]) ? 1
			 : !strcmp(m, metrics[2]) ? 2 : -1;
		int k = 0;
		while (k < n && strcmp(recs[k].sha, id))
			k++;
		if (mi < 0 || k == n) {
			fprintf(stderr, "a point of %s for record %s, which is not one here\n", m, id);
			t_failures++;
			continue;
		}
		struct want w = want_of(recs[k].path);
		double x = mi == 0 ? w.mb : mi == 1 ? w.tok : w.roof;
		T_NEAR(v, x, 1e-9 * fabs(x));
		seen[mi]++;
	}
	for (int i = 0; i < 3; i++) {
		if (seen[i] != want_count[i])
			fprintf(stderr, "%s: %d points, %d records have it\n", metrics[i], seen[i],
				want_count[i]);
		T_EQ_INT(seen[i], want_count[i]);
	}
}

/* Every href of a DOM names a file of the site (relative to the page's folder). */
static void check_links(const char *dom, const char *page_dir)
{
	for (const char *h = strstr(dom, " href=\""); h; h = strstr(h + 1, " href=\"")) {
		char path[8800];
		struct stat st;
		const char *v = h + 7;
		int len = (int)strcspn(v, "\"");
		snprintf(path, sizeof(path), "%s/%.*s", page_dir, len, v);
		if (memchr(v, ':', (size_t)len) || v[0] == '/' || stat(path, &st)) {
			fprintf(stderr, "link %.*s is not a file of the site\n", len, v);
			t_failures++;
		}
	}
}

/* A PNG of w x h (its IHDR), and not a blank page's few kilobytes. */
static void check_png(const char *path, int w, int h)
{
	unsigned char b[24] = { 0 };
	struct stat st;
	FILE *f = fopen(path, "rb");
	T_ASSERT(f != NULL);
	if (!f)
		return;
	T_EQ_INT((int)fread(b, 1, sizeof(b), f), 24);
	fclose(f);
	T_ASSERT(!memcmp(b, "\x89PNG\r\n\x1a\n", 8) && !memcmp(b + 12, "IHDR", 4));
	T_EQ_INT((int)((uint32_t)b[16] << 24 | b[17] << 16 | b[18] << 8 | b[19]), w);
	T_EQ_INT((int)((uint32_t)b[20] << 24 | b[21] << 16 | b[22] << 8 | b[23]), h);
	T_EQ_INT(stat(path, &st), 0);
	printf("%s: %lld bytes\n", path, (long long)st.st_size);
	T_ASSERT(st.st_size > 40000);
}

static void sha_of(struct rec *r)
{
	struct t_output o = t_run((const char *[]){ "/usr/bin/sha256sum", r->path, NULL });
	snprintf(r->sha, sizeof(r->sha), "%.64s", o.out ? o.out : "");
	t_output_free(&o);
}

/* The page of the series whose protocol is name: its path (from the index's DOM). */
static void series_page(const char *site, const char *index, const char *name, char *path,
			size_t n)
{
	char label[128];
	snprintf(label, sizeof(label), "<td>%s</td>", name);
	const char *cell = strstr(index, label);
	path[0] = '\0';
	T_ASSERT(cell != NULL);
	if (!cell)
		return;
	const char *row = cell;
	while (row > index && strncmp(row, "<tr", 3))
		row--;
	snprintf(path, n, "%s/%s", site, attr(strstr(row, "<a"), "href"));
}

static char *save_dom(const char *page, const char *name)
{
	char *dom = browse(page, NULL, 1200, 900);
	char path[4400];
	snprintf(path, sizeof(path), "%s/%s.dom.html", out, name);
	t_write_file(path, dom ? dom : "");
	return dom ? dom : strdup("");
}

static void check_roof_page(const char *site, const char *page, struct rec *recs)
{
	char *dom = save_dom(page, "series-roof");
	char dir[4400];
	snprintf(dir, sizeof(dir), "%s/series", site);
	check_points(dom, recs, 6);
	check_links(dom, dir);
	/* The step: record 3 to 4, the change of the two scripts' medians (computed here). */
	double a[3], b[3];
	for (int k = 0; k < 3; k++) {
		a[k] = want_of(recs[k].path).mb;
		b[k] = want_of(recs[3 + k].path).mb;
	}
	for (int k = 0; k < 3; k++)
		for (int j = k + 1; j < 3; j++) {
			if (a[j] < a[k]) { double t = a[k]; a[k] = a[j]; a[j] = t; }
			if (b[j] < b[k]) { double t = b[k]; b[k] = b[j]; b[j] = t; }
		}
	/* One step in MB/token (tok/s is the busy machine's: whatever it shows is not checked). */
	const char *g = strstr(dom, "<g class=\"change\" data-metric=\"dram_MB_per_token\"");
	T_ASSERT(g != NULL);
	if (g) {
		T_EQ_STR(attr(g, "data-before"), recs[2].sha);
		T_EQ_STR(attr(g, "data-after"), recs[3].sha);
		T_NEAR(strtod(attr(g, "data-change-pct"), NULL), 100.0 * (b[1] - a[1]) / a[1], 1e-6);
		printf("the step: %+.3f %% (scripts: %+.3f %%)\n", 100.0 * (b[1] - a[1]) / a[1],
		       100.0 * ((double)X_B - X_A) / X_A);
		T_ASSERT(!strstr(g + 1, "<g class=\"change\" data-metric=\"dram_MB_per_token\""));
	}
	T_CONTAINS(dom, "<text class=\"sim\"");
	T_CONTAINS(dom, "SIMULATED (intel_imc_free)");
	free(dom);
	char shot[4400];
	snprintf(shot, sizeof(shot), "%s/series.png", out);
	free(browse(page, shot, 1200, 2600));
	check_png(shot, 1200, 2600);
}

static void check_site(const char *site, struct rec *roof, struct rec *noroof)
{
	char page[4400], dir[4400], shot[4400];
	snprintf(page, sizeof(page), "%s/index.html", site);
	char *index = save_dom(page, "index");
	check_links(index, site);
	int rows = 0;
	for (const char *r = strstr(index, "<tr data-series=\""); r; r = strstr(r + 1, "<tr data-series=\""))
		rows++;
	T_EQ_INT(rows, 2);
	snprintf(shot, sizeof(shot), "%s/index.png", out);
	free(browse(page, shot, 1200, 900));
	check_png(shot, 1200, 900);

	series_page(site, index, "site-roof", page, sizeof(page));
	check_roof_page(site, page, roof);

	series_page(site, index, "site-noroof", page, sizeof(page));
	char *dom = save_dom(page, "series-noroof");
	snprintf(dir, sizeof(dir), "%s/series", site);
	check_points(dom, noroof, 2);
	check_links(dom, dir);
	const char *none = strstr(dom, "class=\"none\" data-metric=\"roof_pct\"");
	T_ASSERT(none != NULL);
	if (none)
		T_ASSERT(strstr(none, "no bandwidth roof") < strstr(none, "</p>"));
	T_CONTAINS(dom, "<text class=\"sim\"");
	free(dom);
	free(index);
}

int main(void)
{
	const char *build = getenv("MEMWALL_BUILD_ROOT");
	if (!getenv("MEMWALL_BIN") || !build)
		t_skip("MEMWALL_BIN or MEMWALL_BUILD_ROOT is not set (run under meson test)");
	if (!find_chromium()) {
		if (getenv("MEMWALL_REQUIRE_CHROMIUM")) {
			fprintf(stderr, "MEMWALL_REQUIRE_CHROMIUM is set and there is no chromium "
				"(/usr/bin/chromium; scripts/bootstrap.sh --dev installs it)\n");
			return 1;
		}
		t_skip("no chromium (/usr/bin/chromium, or MEMWALL_CHROMIUM): scripts/bootstrap.sh "
		       "--dev installs Debian's");
	}
	t_scratch(scratch, sizeof(scratch), "chromium");
	snprintf(out, sizeof(out), "%s/test-site-chromium", build);
	mkdir(out, 0755);
	/* The browser writes its profile and caches under the scratch folder, nowhere else. */
	setenv("HOME", scratch, 1);
	setenv("XDG_CONFIG_HOME", scratch, 1);
	setenv("XDG_CACHE_HOME", scratch, 1);

	char a[400], b[400], recdir[400], store[400], site[4200];
	t_series_ab(scratch, TREE, X_A, X_B, RUNS, D, a, b, sizeof(a));
	snprintf(recdir, sizeof(recdir), "%s/records", scratch);
	static struct rec roof[6], noroof[2];
	const char *p = t_series_protocol(scratch, "site-roof", D, RUNS,
					    "{\"bandwidth_gbps\": 50, \"llc_bytes\": 65536}");
	for (int k = 0; k < 6; k++)
		t_series_run(recdir, p, k < 3 ? a : b, roof[k].path, sizeof(roof[k].path));
	p = t_series_protocol(scratch, "site-noroof", D, RUNS,
				"{\"bandwidth_gbps\": null, \"llc_bytes\": null}");
	for (int k = 0; k < 2; k++)
		t_series_run(recdir, p, a, noroof[k].path, sizeof(noroof[k].path));
	snprintf(store, sizeof(store), "%s/store.db", scratch);
	const char *argv[16] = { "memwall", "db", "--db", store, "import" };
	for (int k = 0; k < 8; k++) {
		struct rec *r = k < 6 ? &roof[k] : &noroof[k - 6];
		sha_of(r);
		argv[5 + k] = r->path;
	}
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	t_output_free(&o);

	snprintf(site, sizeof(site), "%s/site", out);
	T_RUN_EXPECT(((const char *[]){"memwall", "db", "--db", store, "site", "-o", site, NULL}),
		     0, T_LIST("2 series, 8 records"), NULL);
	check_site(site, roof, noroof);
	printf("the site, its DOMs and screenshots: %s\n", out);

	return t_done_rm(scratch, 0);
}
