/* src/record/compare_out.c: a comparison as Markdown, JSON (memwall-compare/1) or JUnit XML.
 * The JSON field names are documented in src/README.md ("compare: the CI gate") and are a contract: add
 * fields, never rename them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "stats.h"
#include "text.h"

/* ---- Markdown */

/* A signed figure to `digits` significant digits, or nothing when there is none. */
static void md_num(FILE *f, int digits, double x)
{
	if (isfinite(x))
		fprintf(f, "%+.*g", digits, x);
}

/* A check against a history (history.c): the medians and the rank test decide. */
static void md_history(FILE *f, const struct mw_comparison *c)
{
	fprintf(f, "| metric | required | history median (runs, records) | record median (runs) "
		"| change of the medians %% | tolerance %% | p (Mann-Whitney) | p (Welch) | verdict "
		"| why |\n|---|---|---:|---:|---:|---:|---:|---:|---|---|\n");
	for (size_t i = 0; i < c->n; i++) {
		const struct mw_metric_cmp *m = &c->m[i];
		fprintf(f, "| %s | %s |", m->metric->name, m->required ? "yes" : "");
		if (m->n[0])
			fprintf(f, " %.6g (%zu, %zu) |", m->median[0], m->n[0], m->records);
		else
			fprintf(f, " not measured |");
		if (m->n[1])
			fprintf(f, " %.6g (%zu) | ", m->median[1], m->n[1]);
		else
			fprintf(f, " not measured | ");
		md_num(f, 3, m->median_change_pct);
		fprintf(f, " | %g | ", m->tolerance_pct);
		if (isfinite(m->p_u))
			fprintf(f, "%.3g%s", m->p_u, m->p_u_exact ? " (exact)" : "");
		fprintf(f, " | ");
		if (isfinite(m->p))
			fprintf(f, "%.3g", m->p);
		fprintf(f, " | %s | %s |\n", m->verdict == MW_CMP_REGRESSION ? "**REGRESSION**"
			: mw_cmp_verdict_name(m->verdict), mw_esc_md(m->reason));
	}
	fprintf(f, "\nA verdict needs a change of the medians beyond the tolerance (the protocol's "
		"tolerance_pct, else %g %%) with p < %g by the Mann-Whitney U test of the record's "
		"runs against the history's pooled runs (exact up to %d against %d runs in all; "
		"Welch's t over the same runs beside it); units are the record's (memwall "
		"report).\n", c->opts.max_regress_pct, c->opts.alpha, MW_MWU_EXACT_SMALL,
		MW_MWU_EXACT_TOTAL);
}

/* Whether metric m's figures are DRAM counts (the ones a SIMULATED record scripted). */
static bool dram_metric(const struct mw_metric_cmp *m)
{
	return !strncmp(m->metric->name, "dram_", 5) || !strncmp(m->metric->name, "idle_dram_", 10);
}

/* Two records compared (not a history check, whose BASE is a series): either side simulated. */
static bool any_simulated(const struct mw_comparison *c)
{
	return !c->history &&
	       (c->source[0] == MW_DRAM_SIMULATED || c->source[1] == MW_DRAM_SIMULATED);
}

/* Who counted each side's DRAM figures, before the table. */
static void md_sources(FILE *f, const struct mw_comparison *c)
{
	if (c->source[0] == MW_DRAM_SIMULATED && c->source[1] == MW_DRAM_SIMULATED)
		fprintf(f, "**SIMULATED**: both records' DRAM counts come from memwall's simulated "
			"PMU (BASE %s, NEW %s): no DRAM figure compared here was counted by "
			"hardware.\n\n", mw_esc_md(c->source_tag[0]), mw_esc_md(c->source_tag[1]));
	else
		fprintf(f, "DRAM counted by: BASE %s%s, NEW %s%s.\n\n", mw_esc_md(c->source_tag[0]),
			c->source[0] == MW_DRAM_SIMULATED ? " (**SIMULATED**)" : "",
			mw_esc_md(c->source_tag[1]),
			c->source[1] == MW_DRAM_SIMULATED ? " (**SIMULATED**)" : "");
}

/* A reason several rows share (a DRAM counter absent on both sides gives every DRAM figure the
 * same one) is said once, under the table, and each row refers to it: note[i] is row i's
 * footnote number, 0 when its reason is its own. Returns how many footnotes there are. */
static int md_footnotes(const struct mw_comparison *c, int note[MW_N_METRICS])
{
	int n = 0;
	for (size_t i = 0; i < c->n; i++) {
		note[i] = 0;
		if (!c->m[i].reason[0])
			continue;
		for (size_t j = 0; j < i && !note[i]; j++)
			if (note[j] && !strcmp(c->m[j].reason, c->m[i].reason))
				note[i] = note[j];
		for (size_t j = i + 1; j < c->n && !note[i]; j++)
			if (!strcmp(c->m[j].reason, c->m[i].reason))
				note[i] = ++n;
	}
	return n;
}

void mw_compare_print_md(FILE *f, const struct mw_comparison *c, const char *const paths[2])
{
	int note[MW_N_METRICS], n_notes = 0;
	if (c->history)
		fprintf(f, "## memwall db check\n\nNEW `%s` against BASE: %s\n\n", mw_esc(paths[1]),
			mw_esc(paths[0]));
	else
		fprintf(f, "## memwall compare\n\nBASE `%s`, NEW `%s`\n\n", mw_esc(paths[0]),
			mw_esc(paths[1]));
	if (c->provenance[0])
		fprintf(f, "Provenance of NEW's DRAM figures: %s\n\n", mw_esc_md(c->provenance));
	if (!c->history)
		md_sources(f, c);
	if (c->history && c->compared)
		md_history(f, c);
	if (c->n_diffs) {
		fprintf(f, "%s: the records' settings differ:\n\n| setting | BASE | NEW | note |\n"
			"|---|---|---|---|\n", c->compared ? "**forced** (--force)" : "**refused**");
		for (size_t i = 0; i < c->n_diffs; i++)
			fprintf(f, "| %s | %s | %s | %s |\n", mw_esc_md(c->diffs[i].field),
				mw_esc_md(c->diffs[i].base), mw_esc_md(c->diffs[i].new),
				mw_esc_md(c->diffs[i].note));
		fprintf(f, "\n");
	}
	if (c->compared && !c->history) {
		n_notes = md_footnotes(c, note);
		fprintf(f, "| metric | required | base mean +/- sd (n) | new mean +/- sd (n) | delta "
			"| %% | p (Welch) | verdict | why |\n"
			"|---|---|---:|---:|---:|---:|---:|---|---|\n");
		for (size_t i = 0; i < c->n; i++) {
			const struct mw_metric_cmp *m = &c->m[i];
			fprintf(f, "| %s%s | %s |", m->metric->name,
				dram_metric(m) && any_simulated(c) ? " [SIMULATED]" : "",
				m->required ? "yes" : "");
			for (int s = 0; s < 2; s++) {
				if (m->n[s])
					fprintf(f, " %.6g +/- %.3g (%zu) |", m->mean[s], m->sd[s],
						m->n[s]);
				else
					fprintf(f, " not measured |");
			}
			fprintf(f, " ");
			md_num(f, 4, m->delta);
			fprintf(f, " | ");
			md_num(f, 3, m->change_pct);
			fprintf(f, " | ");
			if (isfinite(m->p))
				fprintf(f, "%.3g", m->p);
			fprintf(f, " | %s | ", m->verdict == MW_CMP_REGRESSION
						  ? "**REGRESSION**" : mw_cmp_verdict_name(m->verdict));
			if (note[i])
				fprintf(f, "[%d] |\n", note[i]);
			else
				fprintf(f, "%s |\n", mw_esc_md(m->reason));
		}
		for (int k = 1; k <= n_notes; k++)
			for (size_t i = 0; i < c->n; i++)
				if (note[i] == k) {
					fprintf(f, "%s[%d] %s\n", k == 1 ? "\n" : "", k,
						mw_esc_md(c->m[i].reason));
					break;
				}
		fprintf(f, "\nA verdict needs a change beyond %g %% (%s) with p < %g (Welch's t-test "
			"over the runs); units are the record's (memwall report).\n",
			c->opts.max_regress_pct, c->opts.max_regress_set ? "--max-regress"
			: "or the protocol's tolerance_pct for the metric", c->opts.alpha);
	}
	fprintf(f, "\n%zu regression%s, %zu improvement%s, %zu same, %zu inconclusive, %zu not "
		"comparable. Exit %d: %s.\n", c->count[MW_CMP_REGRESSION],
		c->count[MW_CMP_REGRESSION] == 1 ? "" : "s", c->count[MW_CMP_IMPROVEMENT],
		c->count[MW_CMP_IMPROVEMENT] == 1 ? "" : "s", c->count[MW_CMP_SAME],
		c->count[MW_CMP_INCONCLUSIVE], c->count[MW_CMP_NOT_COMPARABLE],
		c->exit_code, c->exit_reason);
}

/* ---- JSON */

static json_t *num(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* Text as a JSON string, whatever its bytes: invalid UTF-8 (a path, a record's text) would
 * make json_pack fail and the whole document vanish (issue 28). */
static json_t *text(const char *s)
{
	char *fixed = mw_utf8_fix(s ? s : "");
	json_t *v = fixed ? json_string(fixed) : NULL;
	free(fixed);
	return v ? v : json_string("(text not shown: out of memory)");
}

static json_t *metric_json(const struct mw_metric_cmp *m)
{
	json_t *o = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", m->metric->name, "unit",
			      m->metric->unit, "required", m->required, "verdict",
			      mw_cmp_verdict_name(m->verdict), "reason",
			      m->reason[0] ? text(m->reason) : json_null());
	static const char *const side[2] = { "base", "new" };
	for (int s = 0; s < 2; s++)
		json_object_set_new(o, side[s], m->n[s] ? json_pack("{s:I, s:o, s:o}", "n",
			(json_int_t)m->n[s], "mean", num(m->mean[s]), "sd", num(m->sd[s]))
							: json_null());
	json_object_set_new(o, "delta", num(m->delta));
	json_object_set_new(o, "change_pct", num(m->change_pct));
	json_object_set_new(o, "t", num(m->t));
	json_object_set_new(o, "df", num(m->df));
	json_object_set_new(o, "p", num(m->p));
	json_object_set_new(o, "runs_needed_per_side",
			    m->verdict != MW_CMP_INCONCLUSIVE || m->rank ? json_null()
			    : m->runs_needed > 0 ? json_integer(m->runs_needed)
						  : json_string("more than 1000"));
	json_object_set_new(o, "tolerance_pct", num(m->tolerance_pct));
	if (!m->rank)
		return o;
	/* A check against a history: the rank test over the medians decides. */
	for (int s = 0; s < 2; s++)
		if (m->n[s])
			json_object_set_new(json_object_get(o, side[s]), "median", num(m->median[s]));
	if (m->n[0])
		json_object_set_new(json_object_get(o, "base"), "records",
				    json_integer((json_int_t)m->records));
	json_object_set_new(o, "median_change_pct", num(m->median_change_pct));
	json_object_set_new(o, "u", num(m->u));
	json_object_set_new(o, "p_mann_whitney", num(m->p_u));
	json_object_set_new(o, "p_mann_whitney_exact", json_boolean(m->p_u_exact));
	return o;
}

void mw_compare_print_json(FILE *f, const struct mw_comparison *c, const char *const paths[2])
{
	json_t *diffs = json_array(), *metrics = json_array(), *counts = json_object();
	for (size_t i = 0; i < c->n_diffs; i++) {
		/* A value too long for its buffer is cut: then its text, not a null */
		json_t *b = json_loads(c->diffs[i].base, JSON_DECODE_ANY, NULL);
		json_t *n = json_loads(c->diffs[i].new, JSON_DECODE_ANY, NULL);
		json_array_append_new(diffs, json_pack("{s:o, s:o, s:o, s:o}", "field",
			text(c->diffs[i].field), "base", b ? b : text(c->diffs[i].base), "new",
			n ? n : text(c->diffs[i].new), "note", text(c->diffs[i].note)));
	}
	for (size_t i = 0; i < c->n; i++)
		json_array_append_new(metrics, metric_json(&c->m[i]));
	for (int v = 0; v < MW_N_CMP_VERDICTS; v++)
		json_object_set_new(counts, mw_cmp_verdict_name((enum mw_cmp_verdict)v),
				    json_integer((json_int_t)c->count[v]));
	json_t *req = json_array();
	for (size_t i = 0; i < c->opts.n_require; i++)
		json_array_append_new(req, text(c->opts.require[i]));
	json_t *doc = json_pack("{s:s, s:o, s:o, s:b, s:b, s:o, s:f, s:f, s:f, s:o, s:o, s:o,"
				" s:i, s:o}",
		"schema", c->history ? "memwall-check/1" : "memwall-compare/1",
		"base", text(paths[0]), "new", text(paths[1]),
		"comparable", c->n_diffs == 0, "forced", c->compared && c->n_diffs,
		"differences", diffs, "max_regress_pct", c->opts.max_regress_pct,
		"alpha", c->opts.alpha, "power", c->opts.power, "required", req,
		"metrics", metrics, "counts", counts, "exit_code", c->exit_code,
		"exit_reason", text(c->exit_reason));
	if (doc && !c->history)
		json_object_set_new(doc, "dram_source", json_pack("{s:s, s:s, s:o, s:o}", "base",
				    mw_dram_source_name(c->source[0]), "new",
				    mw_dram_source_name(c->source[1]), "base_tag",
				    text(c->source_tag[0]), "new_tag", text(c->source_tag[1])));
	if (doc && c->history) {
		json_object_set_new(doc, "not_comparable_because",
				    c->refused[0] ? text(c->refused) : json_null());
		json_object_set_new(doc, "provenance", text(c->provenance));
	}
	if (doc)
		json_dumpf(doc, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
	fputc('\n', f);
	json_decref(doc);
}

/* ---- JUnit XML: the dialect of Jenkins' and GitLab's JUnit readers and GitHub's test
 * reporters (testsuites > testsuite > testcase, with failure and skipped children). */

static void xml_text(FILE *f, const char *s)
{
	static const struct { char c; const char *ent; } ents[] = {
		{ '&', "&amp;" }, { '<', "&lt;" }, { '>', "&gt;" }, { '"', "&quot;" },
		{ '\'', "&apos;" },
	};
	/* Valid UTF-8 only (an XML parser refuses the document otherwise): invalid bytes
	 * become U+FFFD; control characters XML 1.0 forbids are left out. */
	char *fixed = mw_utf8_fix(s);
	for (const char *p = fixed ? fixed : ""; *p; p++) {
		size_t i;
		for (i = 0; i < sizeof(ents) / sizeof(ents[0]) && ents[i].c != *p; i++)
			;
		if (i < sizeof(ents) / sizeof(ents[0]))
			fputs(ents[i].ent, f);
		else if ((unsigned char)*p >= 0x20 || *p == '\n' || *p == '\t')
			fputc(*p, f);
	}
	free(fixed);
}

/* A metric fails the job when it regressed, or when it is required and was not compared or
 * not resolved; an unrequired metric that was not is reported as skipped. */
static const char *junit_outcome(const struct mw_metric_cmp *m)
{
	if (m->verdict == MW_CMP_REGRESSION)
		return "failure";
	if (m->verdict == MW_CMP_NOT_COMPARABLE || m->verdict == MW_CMP_INCONCLUSIVE)
		return m->required ? "failure" : "skipped";
	return NULL;
}

static void junit_case(FILE *f, const struct mw_comparison *c, const struct mw_metric_cmp *m,
		       const char *classname)
{
	char *msg = NULL;
	const char *what = junit_outcome(m);
	/* A SIMULATED record's DRAM figures say so in their own message: a CI page shows it. */
	const char *sim = dram_metric(m) && any_simulated(c) ? "SIMULATED DRAM counts: " : "";
	/* Built whole, never cut in a fixed buffer (a cut could split a character). */
	int k = m->verdict == MW_CMP_NOT_COMPARABLE
		? asprintf(&msg, "%s%s%s: %s", sim, mw_cmp_verdict_name(m->verdict),
			   m->required ? " (required)" : "", m->reason)
		: m->rank
		? asprintf(&msg, "%s: median %.6g -> %.6g (%+.2f %%, tolerance %g %%, Mann-Whitney "
			   "p = %.3g)%s%s", mw_cmp_verdict_name(m->verdict), m->median[0],
			   m->median[1], m->median_change_pct, m->tolerance_pct, m->p_u,
			   m->reason[0] ? ": " : "", m->reason)
		: asprintf(&msg, "%s%s: %.6g -> %.6g (%+.2f %%, p = %.3g)%s%s", sim,
			   mw_cmp_verdict_name(m->verdict), m->mean[0], m->mean[1], m->change_pct,
			   m->p, m->reason[0] ? ": " : "", m->reason);
	if (k < 0)
		msg = NULL;
	fprintf(f, "    <testcase classname=\"%s\" name=\"%s\" time=\"0\">", classname,
		m->metric->name);
	if (what) {
		fprintf(f, "\n      <%s message=\"", what);
		xml_text(f, msg ? msg : "");
		if (!strcmp(what, "failure"))
			fprintf(f, "\" type=\"%s\">", mw_cmp_verdict_name(m->verdict));
		else
			fprintf(f, "\">");
		xml_text(f, m->metric->unit);
		fprintf(f, "</%s>\n    ", what);
	} else {
		fprintf(f, "<system-out>");
		xml_text(f, msg ? msg : "");
		fprintf(f, "</system-out>");
	}
	fprintf(f, "</testcase>\n");
	free(msg);
}

void mw_compare_print_junit(FILE *f, const struct mw_comparison *c, const char *const paths[2])
{
	size_t failures = 0, skipped = 0, tests = c->compared ? c->n : 1;
	for (size_t i = 0; c->compared && i < c->n; i++) {
		const char *w = junit_outcome(&c->m[i]);
		failures += w && !strcmp(w, "failure");
		skipped += w && !strcmp(w, "skipped");
	}
	if (!c->compared)
		failures = 1;
	const char *suite = c->history ? "memwall db check" : "memwall compare";
	const char *cls = c->history ? "memwall.check" : "memwall.compare";
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"%s\" "
		"tests=\"%zu\" failures=\"%zu\">\n  <testsuite name=\"%s\" tests=\"%zu\" "
		"failures=\"%zu\" errors=\"0\" skipped=\"%zu\">\n", suite, tests, failures, suite,
		tests, failures, skipped);
	fprintf(f, "    <properties>\n");
	const char *const keys[2] = { "base", "new" };
	for (int s = 0; s < 2; s++) {
		fprintf(f, "      <property name=\"%s\" value=\"", keys[s]);
		xml_text(f, paths[s]);
		fprintf(f, "\"/>\n");
	}
	fprintf(f, "      <property name=\"exit_code\" value=\"%d\"/>\n      <property "
		"name=\"exit_reason\" value=\"", c->exit_code);
	xml_text(f, c->exit_reason);
	fprintf(f, "\"/>\n      <property name=\"forced\" value=\"%s\"/>\n",
		c->compared && c->n_diffs ? "true" : "false");
	for (int s = 0; !c->history && s < 2; s++) {
		fprintf(f, "      <property name=\"dram_source_%s\" value=\"", keys[s]);
		xml_text(f, c->source_tag[s]);
		fprintf(f, "\"/>\n");
	}
	fprintf(f, "    </properties>\n");
	if (!c->compared && c->history) {
		/* No history: one testcase says why, so the CI page shows it. */
		fprintf(f, "    <testcase classname=\"%s\" name=\"history\" time=\"0\">\n      "
			"<failure message=\"not comparable\" type=\"not-comparable\">", cls);
		xml_text(f, c->refused);
		fprintf(f, "</failure>\n    </testcase>\n");
	} else if (!c->compared) {
		/* Refused: one testcase says why, so the CI page shows it and not an empty suite. */
		fprintf(f, "    <testcase classname=\"memwall.compare\" name=\"comparability\" "
			"time=\"0\">\n      <failure message=\"settings differ\" type=\"refused\">");
		for (size_t i = 0; i < c->n_diffs; i++) {
			char *line = NULL;
			if (asprintf(&line, "%s: BASE %s, NEW %s (%s)\n", c->diffs[i].field,
				     c->diffs[i].base, c->diffs[i].new, c->diffs[i].note) >= 0) {
				xml_text(f, line);
				free(line);
			}
		}
		fprintf(f, "</failure>\n    </testcase>\n");
	}
	for (size_t i = 0; c->compared && i < c->n; i++)
		junit_case(f, c, &c->m[i], cls);
	fprintf(f, "  </testsuite>\n</testsuites>\n");
}
