/* src/record/report.c: summary tables (markdown, CSV, JSON) and gnuplot charts of a result record. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attribution.h"
#include "provenance.h"
#include "record_view.h"
#include "report.h"
#include "report_counters.h"
#include "report_bench.h"
#include "report_rows.h"
#include "report_variants.h"
#include "result.h"
#include "roofline.h"
#include "roofline_block.h"
#include "stats.h"
#include "text.h"

int mw_format_parse(const char *text, enum mw_format *out)
{
	static const struct {
		const char *name;
		enum mw_format fmt;
	} names[] = { { "md", MW_FORMAT_MD }, { "csv", MW_FORMAT_CSV }, { "json", MW_FORMAT_JSON },
		      { "jsonl", MW_FORMAT_JSONL }, { "sql", MW_FORMAT_SQL },
		      { "bmf", MW_FORMAT_BMF }, { "gab", MW_FORMAT_GAB_SMALLER },
		      { "gab-smaller", MW_FORMAT_GAB_SMALLER },
		      { "gab-bigger", MW_FORMAT_GAB_BIGGER } };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(text, names[i].name)) {
			*out = names[i].fmt;
			return 0;
		}
	return -EINVAL;
}

static double num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str(const json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));
	/* Record text reaches a terminal, a markdown table or a chart: escaped (text.h). */
	return s ? mw_esc(s) : dflt;
}

/* The markdown table's rows: a label, the metric, and a scale for display. */
static const struct {
	const char *label;
	const char *metric;
	const char *unit; /* NULL: the metric's own */
	double scale;
} md_rows[] = {
	{ "DRAM (MB/token)", "dram_MB_per_token", "MB/token (MB = 10^6 bytes)", 1 },
	{ "DRAM calibrated (estimate)", "dram_MB_per_token_calibrated", "MB/token (MB = 10^6 bytes)",
	  1 },
	{ "DRAM read", "dram_read_MB_per_token", NULL, 1 },
	{ "DRAM read", "dram_read_MiB_per_token", NULL, 1 },
	{ "DRAM written", "dram_write_MB_per_token", NULL, 1 },
	{ "DRAM read + written", "dram_total_MB_per_token", NULL, 1 },
	{ "Engine-accounted", "engine_MB_per_token", NULL, 1 },
	{ "Decode speed", "tok_per_s", NULL, 1 },
	{ "Prefill speed", "prefill_tok_per_s", NULL, 1 },
	{ "Energy", "energy_J_per_token", NULL, 1 },
	{ "Latency p50", "latency_p50_ns", "ms/token", 1e-6 },
	{ "Latency p99", "latency_p99_ns", "ms/token", 1e-6 },
};

static bool run_counts(const json_t *run);

/* A DRAM figure's mark: " [SIMULATED]" on every DRAM row of a simulated record. */
static const char *mark(const struct mw_provenance *p, const char *metric)
{
	return strncmp(metric, "dram_", 5) ? "" : mw_provenance_mark(p);
}

static void fmt_num(char *buf, size_t n, double x, int digits)
{
	if (isnan(x))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.*g", digits, x);
}

/* The run's roofline block (written by `memwall run`): floor, roof, headroom, verdict. */
static void print_roofline(FILE *f, const json_t *r)
{
	if (!json_is_object(r))
		return;
	if (!json_is_true(json_object_get(r, "computed"))) {
		fprintf(f, "roofline: not computed (%s)\n", str(r, "reason", "?"));
		return;
	}
	const json_t *pl = json_object_get(r, "plausibility");
	fprintf(f, "roofline: analytic floor %.3f MB/token (%s); ", num(r, "floor_bytes_per_token") / 1e6,
		str(r, "position_statement", "?"));
	if (isnan(num(r, "max_tok_s")))
		fprintf(f, "no bandwidth roof (%s)", str(r, "bandwidth_source", "?"));
	else if (isnan(num(r, "headroom")))
		fprintf(f, "roof %.1f GB/s -> %.1f tok/s, headroom not measured (%s)",
			num(r, "bandwidth_gbps"), num(r, "max_tok_s"),
			str(r, "headroom_reason", "no measured tok/s"));
	else
		fprintf(f, "roof %.1f GB/s -> %.1f tok/s, headroom %.2fx the measured %.1f tok/s",
			num(r, "bandwidth_gbps"), num(r, "max_tok_s"), num(r, "headroom"),
			num(r, "measured_tok_s"));
	fprintf(f, "; measured MB/token: %s\n", str(pl, "verdict", "?"));
}

/* The acceptance table; a reason already among the metric notes is referred to by number. */
static void print_acceptance(FILE *f, const json_t *doc, const char (*notes)[1024], int nnotes)
{
	const json_t *acc = json_object_get(doc, "acceptance");
	const json_t *c;
	size_t i;
	fprintf(f, "\n| acceptance | limit | value | status |\n|---|---:|---:|---|\n");
	json_array_foreach(json_object_get(acc, "criteria"), i, c) {
		char *lim = json_dumps(json_object_get(c, "limit"), JSON_ENCODE_ANY | JSON_REAL_PRECISION(4));
		char *val = json_dumps(json_object_get(c, "value"), JSON_ENCODE_ANY | JSON_REAL_PRECISION(4));
		const char *why = str(c, "reason", NULL);
		char note_ref[16] = "";
		for (int k = 0; why && k < nnotes; k++)
			if (!strcmp(notes[k], why)) {
				snprintf(note_ref, sizeof(note_ref), " [%d]", k + 1);
				why = NULL;
			}
		/* A not-measured criterion the overall status excuses says so. */
		bool excused = json_is_false(json_object_get(c, "required")) &&
			       !strcmp(str(c, "status", "?"), "not-measured");
		fprintf(f, "| %s | %s | %s | %s%s%s%s%s |\n", str(c, "criterion", "?"),
			lim ? lim : "?", val ? val : "?", str(c, "status", "?"),
			excused ? " (optional)" : "", note_ref, why ? ": " : "", why ? why : "");
		free(lim);
		free(val);
	}
}

/* The plausibility of the measured DRAM bytes, then where each decode token's bytes go
 * (analysis/attribution.c on the record's runs, read by record_view.c). */
static void print_attribution(FILE *f, const json_t *doc, const char *dram_note)
{
	struct mw_attribution_input in;
	struct mw_error err;
	mw_error_clear(&err);
	mw_plausibility_print_md(f, doc);
	if (mw_record_attribution_read(doc, "", &in, &err)) {
		fprintf(f, "\n### Attribution: where each decode token's bytes go\n\nNot read: "
			   "%s: %s.\n", err.field, err.text);
		return;
	}
	mw_attribution_print_md(f, &in, dram_note);
	mw_record_attribution_free(&in);
}

static void print_md(FILE *f, const json_t *doc)
{
	const json_t *p = json_object_get(doc, "protocol");
	const json_t *model = json_object_get(doc, "model");
	const json_t *sum = json_object_get(doc, "summary");
	const json_t *m = json_object_get(sum, "metrics");
	const json_t *eng = json_object_get(doc, "engine");
	const json_t *mach = json_object_get(doc, "machine");
	const json_t *ref = json_object_get(doc, "reference");
	char notes[16][1024], swbuf[4][32];
	int nnotes = 0;

	struct mw_provenance prov;
	mw_provenance_of(doc, &prov);
	fprintf(f, "## %s: %s%s%s\n\n", str(p, "name", "?"), str(model, "name", "?"),
		prov.synthetic ? " (SYNTHETIC weights: bytes per token are real, tokens are not)"
			       : "",
		prov.source == MW_DRAM_SIMULATED ? " [SIMULATED PMU: no DRAM byte counted by hardware]"
						 : "");
	if (ref)
		fprintf(f, "Imported reference record, not measured by memwall. Source: %s\n\n",
			str(ref, "source", "?"));
	else
		fprintf(f, "%lld measured run%s (+%lld warm-up), %lld decode tokens measured; %s, "
			   "%lld thread%s, %s kernels; memwall %s\n\n",
			(long long)json_integer_value(json_object_get(sum, "runs_measured")),
			json_integer_value(json_object_get(sum, "runs_measured")) == 1 ? "" : "s",
			(long long)json_integer_value(json_object_get(sum, "runs_warmup")),
			(long long)json_integer_value(json_object_get(sum, "tokens_measured")),
			str(mach, "cpu_name", "unknown CPU"),
			(long long)json_integer_value(json_object_get(eng, "threads")),
			json_integer_value(json_object_get(eng, "threads")) == 1 ? "" : "s",
			str(eng, "kernels", "?"), str(json_object_get(doc, "memwall"), "version", "?"));
	/* The reason DRAM was not measured is said once, as footnote [1] under the table;
	 * the provenance line, the DRAM rows and the attribution refer to it. */
	if (prov.source == MW_DRAM_NONE && !ref) {
		/* record text (counters.dram.reason), escaped as str() escapes the metrics'
		 * reasons it is matched against */
		snprintf(notes[nnotes++], sizeof(notes[0]), "%s", mw_esc(prov.why_none));
		snprintf(prov.why_mark, sizeof(prov.why_mark), "[1]");
	}
	mw_provenance_print_md(f, &prov);
	if (prov.source != MW_DRAM_NONE)
		fprintf(f, "- DRAM MB/token counts %s (the %s backend%s).\n",
			!strcmp(mw_dram_basis(doc), "total") ? "read + written bytes" : "read bytes",
			prov.backend ? mw_esc(prov.backend) : "?",
			!strcmp(mw_dram_basis(doc), "total") ? " has no read/write split"
							      : " splits reads from writes");
	mw_report_multiplex_md(f, doc);
	fputc('\n', f);
	if (!json_is_true(json_object_get(doc, "complete")))
		fprintf(f, "**INCOMPLETE:** %s. Figures cover the complete runs only.\n\n",
			str(doc, "incomplete_reason", "not all runs finished"));

	fprintf(f, "| figure | unit | n | mean | sd | CV %% | median | min | max | 95%% CI |\n"
		   "|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
	for (size_t i = 0; i < sizeof(md_rows) / sizeof(md_rows[0]); i++) {
		const json_t *x = json_object_get(m, md_rows[i].metric);
		if (!x)
			continue;
		const char *unit = md_rows[i].unit ? md_rows[i].unit : str(x, "unit", "");
		if (!json_is_true(json_object_get(x, "measured"))) {
			const char *why = str(x, "reason", "no reading");
			int k;
			for (k = 0; k < nnotes && strcmp(notes[k], why); k++)
				;
			if (k == nnotes && nnotes < 16)
				snprintf(notes[nnotes++], sizeof(notes[0]), "%s", why);
			fprintf(f, "| %s%s | %s | 0 | not measured [%d] | | | | | | |\n",
				md_rows[i].label, mark(&prov, md_rows[i].metric), unit, k + 1);
			continue;
		}
		double s = md_rows[i].scale;
		char mean[32], sd[32], cv[32], med[32], mn[32], mx[32], lo[32], hi[32];
		fmt_num(mean, sizeof(mean), num(x, "mean") * s, 6);
		fmt_num(sd, sizeof(sd), num(x, "sd") * s, 3);
		fmt_num(cv, sizeof(cv), num(x, "cv_pct"), 3);
		fmt_num(med, sizeof(med), num(x, "median") * s, 6);
		fmt_num(mn, sizeof(mn), num(x, "min") * s, 6);
		fmt_num(mx, sizeof(mx), num(x, "max") * s, 6);
		fmt_num(lo, sizeof(lo), num(x, "ci95_low") * s, 6);
		fmt_num(hi, sizeof(hi), num(x, "ci95_high") * s, 6);
		char ci[80] = "-";
		/* An interval reaching below 0 says nothing a figure that cannot be negative
		 * could be: the record keeps it as computed, the table says why it is not shown. */
		if (json_is_true(json_object_get(x, "ci95_clamped")))
			snprintf(ci, sizeof(ci), "n too small (n=%lld)",
				 (long long)json_integer_value(json_object_get(x, "n")));
		else if (!isnan(num(x, "ci95_low")))
			snprintf(ci, sizeof(ci), "[%s, %s]", lo, hi);
		fprintf(f, "| %s%s | %s | %lld | %s | %s | %s | %s | %s | %s | %s |\n",
			md_rows[i].label, mark(&prov, md_rows[i].metric), unit, (long long)json_integer_value(json_object_get(x, "n")), mean, sd, cv, med,
			mn, mx, ci);
	}
	for (int k = 0; k < nnotes; k++)
		fprintf(f, "\n[%d] %s", k + 1, notes[k]);
	if (nnotes)
		fputc('\n', f);

	const json_t *lp = json_object_get(sum, "latency_pooled_ns");
	if (json_integer_value(json_object_get(lp, "n")) > 0)
		fprintf(f, "\nPer-token decode latency over %lld tokens: p50 %.3f ms, p90 %.3f ms, "
			   "p99 %.3f ms, p99.9 %.3f ms\n",
			(long long)json_integer_value(json_object_get(lp, "n")), num(lp, "p50") * 1e-6,
			num(lp, "p90") * 1e-6, num(lp, "p99") * 1e-6, num(lp, "p99_9") * 1e-6);

	/* Software counters, summed over the measured runs: they explain jitter. */
	static const char *const sw[] = { "task_clock_ns", "context_switches", "cpu_migrations",
					  "page_faults" };
	double tot[4] = { 0 };
	bool have[4] = { false };
	const json_t *run;
	size_t i;
	json_array_foreach(json_object_get(doc, "runs"), i, run) {
		if (!run_counts(run))
			continue;
		for (int k = 0; k < 4; k++) {
			const json_t *v = json_object_get(json_object_get(run, "software"), sw[k]);
			if (json_is_integer(v)) {
				tot[k] += (double)json_integer_value(v);
				have[k] = true;
			}
		}
	}
	for (int k = 0; k < 4; k++) {
		if (!have[k])
			snprintf(swbuf[k], sizeof(swbuf[k]), "-");
		else
			snprintf(swbuf[k], sizeof(swbuf[k]), k ? "%.0f" : "%.1f",
				 k ? tot[k] : tot[k] * 1e-6);
	}
	if (have[0] || have[1])
		fprintf(f, "Software counters over the measured runs: CPU time %s ms, %s context "
			   "switches, %s CPU migrations, %s page faults\n",
			swbuf[0], swbuf[1], swbuf[2], swbuf[3]);

	print_acceptance(f, doc, (const char(*)[1024])notes, nnotes);
	const json_t *acc = json_object_get(doc, "acceptance");
	fprintf(f, "\nacceptance: %s\n", str(acc, "status", "?"));
	const json_t *d = json_object_get(doc, "drift");
	if (json_is_true(json_object_get(d, "measured")))
		fprintf(f, "bandwidth: %.1f GB/s before, %.1f GB/s after (%+.1f%%, tolerance %g%%)%s\n",
			num(d, "before_gbps"), num(d, "after_gbps"), num(d, "change_pct"),
			num(d, "tolerance_pct"),
			json_is_true(json_object_get(d, "drifted")) ? ": DRIFTED, runs not comparable" : "");
	print_roofline(f, json_object_get(doc, "roofline"));
	print_attribution(f, doc, prov.why_mark[0] ? prov.why_mark : NULL);
	mw_report_perf_md(f, doc);
}

static void csv_field(FILE *f, const char *s)
{
	mw_csv_put(f, s); /* quoted, and never a formula (text.h) */
}

/* The provenance columns every CSV row carries after the figure, each a key of
 * mw_provenance_json: the same names and values as jsonl and sql (report_rows.c), so a row
 * pasted anywhere says who counted it. dram_only: empty on rows that are not DRAM figures. */
static const struct {
	const char *column, *key;
	bool dram_only;
} csv_prov[] = {
	{ "dram_source", "dram_source", true },
	{ "dram_layer", "dram_layer", true },
	{ "dram_caveat", "dram_caveat", true },
	{ "dram_calibrated", "calibrated", true },
	{ "calibration_error_pct", "calibration_error_pct", true },
	{ "dram_verification", "verification", true },
	{ "model_synthetic", "model_synthetic", false },
};

static void csv_json_value(FILE *f, const json_t *v)
{
	if (json_is_boolean(v))
		fputs(json_is_true(v) ? "true" : "false", f);
	else if (json_is_number(v))
		fprintf(f, "%.15g", json_number_value(v));
	else if (json_is_string(v))
		csv_field(f, json_string_value(v));
	/* null or absent: an empty field */
}

static void print_csv(FILE *f, const json_t *doc)
{
	static const char *const cols[] = { "mean", "sd", "cv_pct", "median", "min", "max",
					    "ci95_low", "ci95_high" };
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	const char *k;
	json_t *x;
	struct mw_provenance prov;
	mw_provenance_of(doc, &prov);
	json_t *pj = mw_provenance_json(&prov);
	fprintf(f, "protocol,metric,unit,measured,n,mean,sd,cv_pct,median,min,max,ci95_low,ci95_high,"
		   "reason");
	for (size_t i = 0; i < sizeof(csv_prov) / sizeof(csv_prov[0]); i++)
		fprintf(f, ",%s", csv_prov[i].column);
	fputc('\n', f);
	json_object_foreach((json_t *)(uintptr_t)m, k, x) {
		csv_field(f, str(json_object_get(doc, "protocol"), "name", ""));
		fprintf(f, ",%s,", mw_esc(k)); /* a metric's name (the schema lists them) */
		csv_field(f, str(x, "unit", ""));
		fprintf(f, ",%s,%lld", json_is_true(json_object_get(x, "measured")) ? "true" : "false",
			(long long)json_integer_value(json_object_get(x, "n")));
		/* A clamped interval: both ends left empty, the reason column says why. */
		bool clamped = json_is_true(json_object_get(x, "ci95_clamped"));
		for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
			double v = num(x, cols[i]);
			if (isnan(v) || (clamped && !strncmp(cols[i], "ci95", 4)))
				fputs(",", f);
			else
				fprintf(f, ",%.15g", v);
		}
		fputc(',', f);
		csv_field(f, str(x, clamped ? "ci95_note" : "reason", ""));
		/* Every row says who counted it: a DRAM row of a simulated record is never read
		 * as hardware's, wherever the row is pasted. */
		bool dram_row = !strncmp(k, "dram_", 5);
		for (size_t i = 0; i < sizeof(csv_prov) / sizeof(csv_prov[0]); i++) {
			fputc(',', f);
			if (dram_row || !csv_prov[i].dram_only)
				csv_json_value(f, json_object_get(pj, csv_prov[i].key));
		}
		fputc('\n', f);
	}
	json_decref(pj);
}

void mw_report_print(FILE *f, const json_t *doc, enum mw_format fmt)
{
	if (fmt == MW_FORMAT_MD) {
		print_md(f, doc);
		mw_report_variants(f, doc);
	} else if (fmt == MW_FORMAT_CSV) {
		print_csv(f, doc);
	} else if (fmt == MW_FORMAT_JSONL || fmt == MW_FORMAT_SQL) {
		mw_report_rows(f, doc, NULL, fmt == MW_FORMAT_SQL);
	} else if (fmt >= MW_FORMAT_BMF) {
		mw_report_bench(f, stderr, doc, fmt == MW_FORMAT_BMF ? MW_BENCH_BMF
					      : fmt == MW_FORMAT_GAB_BIGGER ? MW_BENCH_GAB_BIGGER
					      : MW_BENCH_GAB_SMALLER);
	} else {
		struct mw_provenance prov;
		mw_provenance_of(doc, &prov);
		json_t *o = json_pack("{s:O?, s:o, s:O?, s:O?, s:O?, s:O?}", "protocol",
				      json_object_get(json_object_get(doc, "protocol"), "name"),
				      "provenance", mw_provenance_json(&prov),
				      "complete", json_object_get(doc, "complete"), "summary",
				      json_object_get(doc, "summary"), "acceptance",
				      json_object_get(doc, "acceptance"), "drift",
				      json_object_get(doc, "drift"));
		json_dumpf(o, f, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
		fputc('\n', f);
		json_decref(o);
	}
}

/* ---- plots --------------------------------------------------------------------------------- */

static bool run_counts(const json_t *run)
{
	return json_is_true(json_object_get(run, "complete")) &&
	       !json_is_true(json_object_get(run, "warmup"));
}

/* Mean and sd of arr[i] * scale over i. */
static void arr_stats(const json_t *arr, double scale, double *mean, double *sd)
{
	size_t n = json_array_size(arr), i;
	json_t *v;
	*mean = *sd = NAN;
	if (!n)
		return;
	double *x = malloc(n * sizeof(double));
	if (!x)
		return;
	json_array_foreach(arr, i, v)
		x[i] = json_number_value(v) * scale;
	struct mw_stats s;
	mw_stats_compute(x, n, &s);
	*mean = s.mean;
	*sd = s.sd;
	free(x);
}

static int write_data(const json_t *doc, const char *dir, unsigned *split_cols, int window,
		      struct mw_error *err)
{
	char path[4200];
	const json_t *runs = json_object_get(doc, "runs"), *run;
	size_t i, k;
	json_t *v;
	FILE *f = NULL, *g = NULL;
	int rc = 0;

	/* runs.dat */
	snprintf(path, sizeof(path), "%s/runs.dat", dir);
	if (!(f = fopen(path, "w")))
		goto fail;
	/* DRAM as MB/token counts it: read bytes, or the total where there is no split. */
	const char *key = !strcmp(mw_dram_basis(doc), "total") ? "dram_total_bytes"
							       : "dram_read_bytes";
	/* dram_cal_MB: dram_MB times the calibration's factor (NaN without one applying). */
	double cal = mw_dram_calibration_factor(doc);
	fprintf(f, "# run warmup dram_MB dram_MB_sd engine_MB engine_MB_sd tok_s dram_cal_MB "
		   "dram_cal_MB_sd (dram: %s)\n", key);
	json_array_foreach(runs, i, run) {
		const json_t *tok = json_object_get(run, "tokens");
		const json_t *idle = json_object_get(run, "idle");
		double dm, ds, em, es;
		arr_stats(json_object_get(tok, key), 1e-6, &dm, &ds);
		/* Subtract the idle baseline from the per-token mean, as the figures do. */
		double rate = num(idle, key) / (num(idle, "window_ns") * 1e-9);
		double lat_s;
		arr_stats(json_object_get(tok, "latency_ns"), 1e-9, &lat_s, &es);
		dm -= rate * lat_s * 1e-6;
		arr_stats(json_object_get(tok, "engine_bytes"), 1e-6, &em, &es);
		fprintf(f, "%zu %d %.9g %.9g %.9g %.9g %.9g %.9g %.9g\n", i + 1,
			json_is_true(json_object_get(run, "warmup")), dm, ds, em, es,
			num(json_object_get(run, "figures"), "tok_per_s"), dm * cal, ds * cal);
	}
	fclose(f);

	/* latency_ecdf.dat and rolling.dat over the measured runs' tokens, in ms. */
	size_t n = 0, cap = 0;
	double *lat = NULL;
	json_array_foreach(runs, i, run) {
		if (!run_counts(run))
			continue;
		const json_t *l = json_object_get(json_object_get(run, "tokens"), "latency_ns");
		json_array_foreach(l, k, v) {
			if (n == cap) {
				cap = cap ? 2 * cap : 1024;
				double *nl = realloc(lat, cap * sizeof(double));
				if (!nl) {
					free(lat);
					return -ENOMEM;
				}
				lat = nl;
			}
			lat[n++] = json_number_value(v) * 1e-6;
		}
	}
	snprintf(path, sizeof(path), "%s/rolling.dat", dir);
	if (!(g = fopen(path, "w"))) {
		free(lat);
		goto fail;
	}
	fprintf(g, "# token ms rolling_mean_ms rolling_sd_ms (trailing window of %d)\n", window);
	for (i = 0; i < n; i++) {
		size_t lo = i + 1 >= (size_t)window ? i + 1 - (size_t)window : 0;
		struct mw_stats s;
		mw_stats_compute(lat + lo, i - lo + 1, &s);
		fprintf(g, "%zu %.9g %.9g %.9g\n", i + 1, lat[i], s.mean, isnan(s.sd) ? 0.0 : s.sd);
	}
	fclose(g);
	snprintf(path, sizeof(path), "%s/latency_ecdf.dat", dir);
	if (!(g = fopen(path, "w"))) {
		free(lat);
		goto fail;
	}
	/* Sort, then the ECDF: the i-th smallest of n has F = i / n. */
	for (i = 1; i < n; i++)
		for (k = i; k > 0 && lat[k] < lat[k - 1]; k--) {
			double t = lat[k];
			lat[k] = lat[k - 1];
			lat[k - 1] = t;
		}
	fprintf(g, "# ms fraction\n");
	for (i = 0; i < n; i++)
		fprintf(g, "%.9g %.9g\n", lat[i], (double)(i + 1) / (double)n);
	fclose(g);
	free(lat);

	/* instances.dat: the per-instance split, summed over measured runs. *split_cols says
	 * which of its columns (bit 0 read, 1 written, 2 total) hold a figure for some instance:
	 * only those are drawn (a histogram of a column that is NaN throughout is an error). */
	*split_cols = 0;
	const json_t *first = NULL;
	json_array_foreach(runs, i, run)
		if (run_counts(run) && json_array_size(json_object_get(json_object_get(run, "decode"),
								       "dram_instances"))) {
			first = run;
			break;
		}
	if (first) {
		const json_t *insts = json_object_get(json_object_get(first, "decode"), "dram_instances");
		snprintf(path, sizeof(path), "%s/instances.dat", dir);
		if (!(g = fopen(path, "w")))
			goto fail;
		/* A figure the backend does not provide is NaN: gnuplot leaves its bar out. */
		fprintf(g, "# pmu read_MB_per_token write_MB_per_token total_MB_per_token (gross)\n");
		json_array_foreach(insts, k, v) {
			double rd = 0, wr = 0, tot = 0, toks = 0;
			json_array_foreach(runs, i, run) {
				if (!run_counts(run))
					continue;
				const json_t *d = json_object_get(run, "decode");
				const json_t *e = json_array_get(json_object_get(d, "dram_instances"), k);
				rd += num(e, "read_bytes");
				wr += num(e, "write_bytes");
				tot += num(e, "total_bytes");
				toks += num(d, "tokens");
			}
			fprintf(g, "%s %.9g %.9g %.9g\n", str(v, "pmu", "?"), rd / toks * 1e-6,
				wr / toks * 1e-6, tot / toks * 1e-6);
			*split_cols |= (isfinite(rd / toks) ? 1u : 0) | (isfinite(wr / toks) ? 2u : 0) |
				       (isfinite(tot / toks) ? 4u : 0);
		}
		fclose(g);
	}
	return rc;
fail:
	return mw_error_set(err, -errno, path, "", "cannot write: %s", strerror(errno));
}

int mw_report_plot(const json_t *doc, const char *dir, FILE *log, struct mw_error *err)
{
	static const char *const scripts[] = { "mb_per_token.gp", "tok_s.gp", "latency.gp",
					       "dram_split.gp" };
	const int window = 16;
	unsigned split = 0;
	char label[600], note[1200], qlabel[1300], qnote[2500], qdir[4300];
	char vars[16384];
	int rc;

	if (mkdir(dir, 0777) && errno != EEXIST)
		return mw_error_set(err, -errno, dir, "", "cannot create: %s", strerror(errno));
	if ((rc = write_data(doc, dir, &split, window, err)))
		return rc;
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	/* MB/token as the record defines it (read, or the total without a split); records
	 * before schema /2 have only the read figure. */
	const json_t *dram = json_object_get(m, "dram_MB_per_token");
	if (!dram)
		dram = json_object_get(m, "dram_read_MB_per_token");
	const json_t *tps = json_object_get(m, "tok_per_s");
	const json_t *lp = json_object_get(json_object_get(doc, "summary"), "latency_pooled_ns");
	const json_t *model = json_object_get(doc, "model");
	const json_t *calm = json_object_get(m, "dram_MB_per_token_calibrated");
	struct mw_provenance prov;
	mw_provenance_of(doc, &prov);
	bool sim = prov.source == MW_DRAM_SIMULATED;
	bool cal = json_is_true(json_object_get(calm, "measured")) && prov.calibrated;
	/* Every chart's title says when the counts are the simulated PMU's (provenance.c's words:
	 * never "measured"), and the calibrated estimate beside the raw figure. */
	snprintf(label, sizeof(label), "%s: %s%s%s", str(json_object_get(doc, "protocol"), "name", "?"),
		 str(model, "name", "?"),
		 json_is_true(json_object_get(model, "synthetic")) ? " (synthetic)" : "",
		 sim ? " [SIMULATED PMU: no DRAM byte counted by hardware]" : "");
	if (json_is_true(json_object_get(dram, "measured"))) {
		int k = snprintf(note, sizeof(note), "DRAM %s%s %.6g MB/token, CV %.3g%% over %lld runs",
				 strcmp(mw_dram_basis(doc), "total") ? "read" : "read + written",
				 sim ? " SIMULATED" : "", num(dram, "mean"), num(dram, "cv_pct"),
				 (long long)json_integer_value(json_object_get(dram, "n")));
		if (cal && k > 0 && (size_t)k < sizeof(note))
			snprintf(note + k, sizeof(note) - (size_t)k, "; calibrated estimate %.6g "
				 "MB/token (calibration error %+.1f %%)", num(calm, "mean"),
				 prov.cal_error_pct);
	} else {
		snprintf(note, sizeof(note), "DRAM: not measured here (the reason is in the "
			 "record's counters.dram.reason)");
	}
	char calnote[200];
	snprintf(calnote, sizeof(calnote), "DRAM, calibrated estimate (calibration error %+.1f %%)",
		 prov.cal_error_pct);
	char qcal[420];
	mw_gnuplot_quote(qlabel, sizeof(qlabel), label);
	mw_gnuplot_quote(qnote, sizeof(qnote), note);
	mw_gnuplot_quote(qdir, sizeof(qdir), ".");
	mw_gnuplot_quote(qcal, sizeof(qcal), calnote);

	const char *todo[sizeof(scripts) / sizeof(scripts[0])];
	size_t n = 0;
	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
		if (!strcmp(scripts[i], "dram_split.gp") && !split)
			continue;
		if (!strcmp(scripts[i], "latency.gp") && json_integer_value(json_object_get(lp, "n")) == 0)
			continue;
		todo[n++] = scripts[i];
	}
	double mm = num(tps, "mean"), lo = num(tps, "ci95_low"), hi = num(tps, "ci95_high");
	snprintf(vars, sizeof(vars),
		 "datadir=%s; label=%s; note=%s; m=%.9g; lo=%.9g; hi=%.9g; "
		 "p50=%.9g; p99=%.9g; w=%d; dram=%d; cols=%u; src='%s'; cal=%d; calnote=%s",
		 qdir, qlabel, qnote, isnan(mm) ? 0 : mm, isnan(lo) ? mm : lo < 0 ? 0 : lo,
		 isnan(hi) ? mm : hi, num(lp, "p50") * 1e-6, num(lp, "p99") * 1e-6,
		 window, json_is_true(json_object_get(dram, "measured")), split,
		 sim ? "SIMULATED (simulated PMU, not hardware)" : "measured", cal, qcal);
	if (isnan(mm))
		strncat(vars, "; m=NaN", sizeof(vars) - strlen(vars) - 1);
	/* writes the built-in scripts into dir and runs them there (roofline.c) */
	if ((rc = mw_gnuplot_charts(dir, vars, todo, n, err)))
		return rc;
	for (size_t i = 0; log && i < 2 * n; i++)
		fprintf(log, "memwall report: wrote %s/%.*s.%s\n", dir,
			(int)(strlen(todo[i % n]) - 3), todo[i % n], i < n ? "png" : "svg");
	if ((rc = mw_report_variants_plot(doc, dir, log, err)))
		return rc;
	struct mw_attribution_input in;
	if ((rc = mw_record_attribution_read(doc, "", &in, err)))
		return rc;
	rc = mw_attribution_plot(&in, dir, log, err);
	mw_record_attribution_free(&in);
	return rc;
}
