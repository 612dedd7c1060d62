/* src/record/report_bench.c: Bencher Metric Format and github-action-benchmark's custom JSON
 * (report_bench.h).
 *
 * The shapes, from each tool's documentation:
 *   - Bencher Metric Format (bencher.dev/docs/reference/bencher-metric-format): a JSON object
 *     whose keys are benchmark names (at most 1024 characters), each an object whose keys are
 *     measures (a slug of at most 64 characters), each an object with a number "value" and
 *     optional numbers "lower_value" and "upper_value".
 *   - github-action-benchmark's tools customSmallerIsBetter and customBiggerIsBetter (its
 *     README, "Examples", and src/extract.ts's BenchmarkResult): a JSON array of objects with a
 *     string "name", a string "unit", a number "value", and optional strings "range" (the
 *     spread, e.g. "± 3") and "extra" (shown in the chart's tooltip). One file feeds one tool,
 *     so one direction: MB/token (smaller is better) and tok/s (bigger) go to two files.
 *
 * Neither format has a field for what counted a figure, so its provenance goes into its name:
 * figures of different provenance (SIMULATED and hardware, verified or not) never share a
 * history in the tool. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jschema.h"
#include "metrics.h"
#include "provenance.h"
#include "report_bench.h"
#include "text.h"

#define BMF_NAME_MAX 1024 /* Bencher: a benchmark name's length */
#define BMF_SLUG_MAX 64   /* Bencher: a measure slug's length */

static double num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The unit without its explanation: "MB/token" of "MB/token (MB = 10^6 bytes; ...)". */
static void unit_head(const char *unit, char *buf, size_t n)
{
	size_t k = strcspn(unit, "(");
	while (k > 0 && unit[k - 1] == ' ')
		k--;
	snprintf(buf, n, "%.*s", (int)k, unit);
}

/* The unit a chart's axis shows: its head, and what MB or MiB means where the unit says. */
static void unit_short(const char *unit, char *buf, size_t n)
{
	char head[128];
	unit_head(unit, head, sizeof(head));
	snprintf(buf, n, "%s%s", head,
		 strstr(unit, "MB = 10^6 bytes") ? " (MB = 10^6 bytes)"
		 : strstr(unit, "MiB = 2^20 bytes") ? " (MiB = 2^20 bytes)" : "");
}

/* A measure slug from the unit's head: lower case, '/' read as "per", every other run of
 * characters that are not letters or digits one '-': "MB/token" -> "mb-per-token". */
static void unit_slug(const char *unit, char *buf, size_t n)
{
	char head[128];
	size_t k = 0;
	unit_head(unit, head, sizeof(head));
	if (n > BMF_SLUG_MAX + 1)
		n = BMF_SLUG_MAX + 1;
	for (const char *c = head; *c && k + 1 < n; c++) {
		unsigned char ch = (unsigned char)*c;
		const char *add = NULL;
		char one[2] = { 0 };
		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))
			one[0] = (char)ch;
		else if (ch >= 'A' && ch <= 'Z')
			one[0] = (char)(ch - 'A' + 'a');
		add = one[0] ? one : ch == '/' ? "-per-" : "-";
		for (; *add && k + 1 < n; add++) {
			if (*add == '-' && (k == 0 || buf[k - 1] == '-'))
				continue;
			buf[k++] = *add;
		}
	}
	while (k > 0 && buf[k - 1] == '-')
		k--;
	buf[k] = '\0';
	if (!k)
		snprintf(buf, n, "value");
}

/* +1 bigger is better, -1 smaller; 0 when the metric is not in memwall's table. */
static int direction(const char *metric)
{
	size_t n;
	const struct mw_metric *m = mw_metrics(&n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(m[i].name, metric))
			return m[i].better;
	return 0;
}

static const char *format_name(enum mw_bench_format fmt)
{
	return fmt == MW_BENCH_BMF ? "bmf" : fmt == MW_BENCH_GAB_BIGGER ? "gab-bigger"
									 : "gab-smaller";
}

/* left_out()'s answer for a figure of the other direction: said once for them all. */
static const char OTHER_DIRECTION[] = "the other direction";

/* Why metric x is not an entry of fmt, or NULL when it is one. */
static const char *left_out(enum mw_bench_format fmt, const char *metric, const json_t *x)
{
	if (!json_is_true(json_object_get(x, "measured")))
		return "not measured";
	if (!isfinite(num(x, "mean")))
		return "no mean on record";
	if (fmt == MW_BENCH_BMF)
		return NULL;
	int d = direction(metric);
	if (!d)
		return "no direction known (not in memwall's metric table): bmf carries it";
	if ((fmt == MW_BENCH_GAB_SMALLER && d > 0) || (fmt == MW_BENCH_GAB_BIGGER && d < 0))
		return OTHER_DIRECTION;
	return NULL;
}

static void say_left_out(FILE *log, enum mw_bench_format fmt, const char *metric, const json_t *x,
			 const char *why)
{
	const char *reason = json_string_value(json_object_get(x, "reason"));
	if (!log)
		return;
	fprintf(log, "memwall report: --format %s leaves out %s: %s%s%s\n", format_name(fmt),
		mw_esc(metric), why, !strcmp(why, "not measured") && reason ? ": " : "",
		!strcmp(why, "not measured") && reason ? mw_esc(reason) : "");
}

/* The 95 % interval where it is known and stays at or above 0 (every figure here is a rate,
 * a count or a time; metrics.h's mw_stats_mark_ci). */
static bool interval(const json_t *x, double *lo, double *hi)
{
	*lo = num(x, "ci95_low");
	*hi = num(x, "ci95_high");
	return isfinite(*lo) && isfinite(*hi) && !json_is_true(json_object_get(x, "ci95_clamped"));
}

static json_t *bmf_entry(const json_t *x)
{
	double lo, hi;
	json_t *o = json_pack("{s:f}", "value", num(x, "mean"));
	if (o && interval(x, &lo, &hi)) {
		json_object_set_new(o, "lower_value", json_real(lo));
		json_object_set_new(o, "upper_value", json_real(hi));
	}
	return o;
}

/* The record's text at a dotted path, escaped; dflt when absent. */
static const char *text_at(const json_t *doc, const char *path, const char *dflt)
{
	const char *s = json_string_value(mw_json_at(doc, path));
	return s ? mw_esc(s) : dflt;
}

static json_t *gab_entry(const json_t *doc, const char *name, const char *words, const json_t *x)
{
	const char *unit = json_string_value(json_object_get(x, "unit"));
	char shrt[192], range[64] = "", ci[96], extra[2048];
	double lo, hi, sd = num(x, "sd");
	unit_short(unit ? unit : "", shrt, sizeof(shrt));
	if (interval(x, &lo, &hi))
		snprintf(ci, sizeof(ci), "95 %% CI [%.6g, %.6g]", lo, hi);
	else
		snprintf(ci, sizeof(ci), "95 %% CI not shown (too few runs)");
	snprintf(extra, sizeof(extra),
		 "mean of %lld runs; sd %.6g; CV %.3g %%; %s\nunit: %s\nprovenance: %s\n"
		 "record: %s, memwall %s, %s, model %s",
		 (long long)json_integer_value(json_object_get(x, "n")), sd, num(x, "cv_pct"), ci,
		 unit ? mw_esc(unit) : "?", words,
		 text_at(doc, "created_utc", "?"), text_at(doc, "memwall.version", "?"),
		 text_at(doc, "machine.cpu_name", "unknown CPU"), text_at(doc, "model.name", "?"));
	mw_utf8_trim(extra);
	json_t *o = json_pack("{s:s, s:s, s:f}", "name", name, "unit", shrt, "value",
			      num(x, "mean"));
	if (o && isfinite(sd)) {
		snprintf(range, sizeof(range), "± %.6g", sd);
		json_object_set_new(o, "range", json_string(range));
	}
	if (o)
		json_object_set_new(o, "extra", json_string(extra));
	return o;
}

int mw_report_bench(FILE *f, FILE *log, const json_t *doc, enum mw_bench_format fmt)
{
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	const char *protocol = text_at(doc, "protocol.name", "?");
	bool bmf = fmt == MW_BENCH_BMF;
	json_t *out = bmf ? json_object() : json_array(), *x;
	const char *metric;
	struct mw_provenance p;
	int written = 0;

	char other[1024] = "";
	size_t n_other = 0, len = 0;
	mw_provenance_of(doc, &p);
	json_object_foreach((json_t *)(uintptr_t)m, metric, x) {
		char words[320], name[BMF_NAME_MAX + 1], slug[BMF_SLUG_MAX + 1];
		const char *why = left_out(fmt, metric, x);
		if (why == OTHER_DIRECTION) {
			if (len < sizeof(other))
				len += (size_t)snprintf(other + len, sizeof(other) - len, "%s%s",
							n_other ? ", " : "", mw_esc(metric));
			n_other++;
			continue;
		}
		if (why) {
			say_left_out(log, fmt, metric, x, why);
			continue;
		}
		mw_provenance_metric(&p, metric, words, sizeof(words));
		snprintf(name, sizeof(name), "%s: %s [%s]", protocol, mw_esc(metric), words);
		mw_utf8_trim(name);
		if (bmf) {
			const char *unit = json_string_value(json_object_get(x, "unit"));
			unit_slug(unit ? unit : "", slug, sizeof(slug));
			json_object_set_new(out, name, json_pack("{s:o}", slug, bmf_entry(x)));
		} else {
			json_array_append_new(out, gab_entry(doc, name, words, x));
		}
		written++;
	}
	json_dumpf(out, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	fputc('\n', f);
	json_decref(out);
	if (n_other && log)
		fprintf(log, "memwall report: --format %s leaves out %zu %s-is-better figure%s (%s): "
			"--format %s writes %s (github-action-benchmark's tool %s)\n",
			format_name(fmt), n_other, fmt == MW_BENCH_GAB_SMALLER ? "bigger" : "smaller",
			n_other == 1 ? "" : "s", other,
			fmt == MW_BENCH_GAB_SMALLER ? "gab-bigger" : "gab-smaller",
			n_other == 1 ? "it" : "them", fmt == MW_BENCH_GAB_SMALLER
			? "customBiggerIsBetter" : "customSmallerIsBetter");
	if (!written && log)
		fprintf(log, "memwall report: --format %s: no figure of this record fits the "
			"format (the lines above say why)\n", format_name(fmt));
	return written;
}
