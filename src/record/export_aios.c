/* src/record/export_aios.c: a memwall record as AIOS's baseline (export_aios.h).
 *
 * The shape is baseline.py v1.4's (acasavaraju/AIOS, validation/baseline.py at commit
 * bbf1ceef; ../shared/reference/aios/submission.md): one key "baseline" holding model_path,
 * model_size_gb (file bytes / 2^30, rounded to 3 decimals), hardware {cpu_model, cpu_cores
 * (physical), ram_gb (/ 2^30, 1 decimal), l3_cache_mb (cpu0's L3 / 2^20), architecture
 * ("x86_intel", "x86_amd", "arm" or "unknown"), os (the kernel's name), kernel (its release)},
 * runs [{run_index (from 0), mb_per_token (MiB), tokens_per_sec, total_tokens, dram_reads_gb
 * (GiB), llc_miss_rate, duration_sec, perf_available, tokens_generated_ok (at least 90 % of
 * the target)}], then the population mean and sd (ddof 0) of MB/token rounded to 3 decimals,
 * its CV (sd / mean, a fraction) to 4, the mean and sd of tok/s to 2, pass_criterion_met (that
 * CV < 0.05, or the tok/s CV where MB/token was not measured), perf_available (any run),
 * counter_used and notes. baseline.py rounds with Python's round(), which rounds the exact
 * binary value correctly, as printf does: round_to() below.
 *
 * Where memwall does not know a field (an L3 a VM does not show, a counter it does not
 * have), the field is null and a note says so: baseline.py writes 0.0 or "Unknown" there,
 * which reads as a value. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "aios_method.h"
#include "export_aios.h"
#include "jschema.h"
#include "metrics.h"
#include "provenance.h"
#include "text.h"

#define MIB 1048576.0                  /* AIOS's "MB" */
#define GIB 1073741824.0               /* AIOS's "GB" */
#define MB_TO_MIB (1e6 / MIB)          /* memwall's MB (10^6 bytes) to AIOS's MB */
#define TOKENS_OK_FRACTION 0.9         /* baseline.py: a run is short under 90 % of its target */

/* Where a record keeps its runs and each run's figures: one row per kind of record. */
static const struct run_source {
	const char *method;   /* external.method, or NULL: memwall's own engine (no "external") */
	const char *array;    /* the runs */
	const char *valid[2]; /* what must be true in a run for it to count (besides !warmup) */
	const char *mb;       /* the figure under the run's "figures" */
	double to_mib;        /* the figure's unit to AIOS's MB */
	const char *tok_s;    /* under "figures"; NULL: tokens / duration, baseline.py's fallback */
	const char *tokens;   /* the tokens generated */
	const char *target;   /* the tokens asked for; NULL: protocol.document.decode_tokens */
	const char *ns;       /* the time duration_sec gives */
	const char *what;     /* the method, for the notes */
} sources[] = {
	{ NULL, "runs", { "complete", NULL }, "dram_MB_per_token", MB_TO_MIB, "tok_per_s",
	  "decode.tokens", NULL, "decode.ns",
	  "memwall's own engine: mb_per_token is the decode window's DRAM bytes per token, the "
	  "idle machine's rate subtracted, summed over every memory-controller instance "
	  "(baseline.py divides one counter's whole-process bytes, model load included, by the "
	  "tokens); duration_sec is the decode window, tokens_per_sec = total_tokens / "
	  "duration_sec" },
	{ "differential", "external.repetitions", { "short.valid", "long.valid" },
	  "dram_MB_per_token", MB_TO_MIB, "tok_per_s", "long.adapter.decode_tokens",
	  "long.tokens_target", "long.wall_ns",
	  "an external engine by memwall's differential method: mb_per_token is (B2 - B1) / "
	  "(N2 - N1) over a short and a long run, which cancels model load, prompt and exit "
	  "(baseline.py divides the whole process's bytes by the tokens); total_tokens and "
	  "duration_sec are the long run's (the whole process), tokens_per_sec the engine's own "
	  "eval timing" },
	{ MW_AIOS_METHOD, "external.repetitions", { "long.valid", NULL },
	  "aios_method_MB_per_token", 1.0, NULL, "long.tokens_target", "long.tokens_target",
	  "long.wall_ns",
	  "AIOS's own method, reproduced by memwall (protocol measure.method \"" MW_AIOS_METHOD
	  "\"): one memory controller's data_read bytes over the whole process / the requested "
	  "token count, already in MiB; tokens_per_sec is total_tokens / duration_sec (the whole "
	  "process), baseline.py's fallback when llama.cpp prints no timing" },
};

static const struct run_source *source_of(const json_t *doc)
{
	const json_t *ext = json_object_get(doc, "external");
	const char *method = json_string_value(json_object_get(ext, "method"));
	bool external = json_is_object(ext);
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (sources[i].method ? method && !strcmp(method, sources[i].method) : !external)
			return &sources[i];
	return NULL;
}

static double at_num(const json_t *o, const char *path)
{
	const json_t *v = path ? mw_json_at(o, path) : NULL;
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *at_str(const json_t *o, const char *path)
{
	return json_string_value(mw_json_at(o, path));
}

/* Python's round(x, d) (correctly rounded, ties to even on the exact binary value), which
 * glibc's printf also does. */
static double round_to(double x, int d)
{
	char b[400];
	snprintf(b, sizeof(b), "%.*f", d, x);
	return strtod(b, NULL);
}

static json_t *num_or_null(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static bool run_counts(const struct run_source *s, const json_t *run)
{
	if (json_is_true(json_object_get(run, "warmup")))
		return false;
	for (int k = 0; k < 2; k++)
		if (s->valid[k] && !json_is_true(mw_json_at(run, s->valid[k])))
			return false;
	return true;
}

/* numpy's mean and std (ddof 0) of v[0..n). NaN for both when n is 0. */
static void pop_stats(const double *v, size_t n, double *mean, double *sd)
{
	double sum = 0, ss = 0;
	*mean = *sd = NAN;
	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	*mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - *mean) * (v[i] - *mean);
	*sd = sqrt(ss / (double)n);
}

/* What the runs add up to, for the aggregates and the notes. */
struct tally {
	double *mb, *tps;   /* the runs' MB/token (MiB) and tok/s > 0 */
	size_t n_mb, n_tps, n_runs, short_runs;
};

/* One run as baseline.py's RunResult. dram: the record's DRAM counts are hardware's. */
static json_t *run_json(const struct run_source *s, const json_t *doc, const json_t *run,
			size_t index, bool dram, struct tally *t)
{
	const json_t *fig = json_object_get(run, "figures");
	double mb = dram ? at_num(fig, s->mb) * s->to_mib : NAN;
	double tokens = at_num(run, s->tokens), secs = at_num(run, s->ns) * 1e-9;
	double target = s->target ? at_num(run, s->target)
				  : at_num(doc, "protocol.document.decode_tokens");
	double tps = s->tok_s ? at_num(fig, s->tok_s) : tokens / secs;
	json_t *ok = json_null();
	if (isfinite(tokens) && isfinite(target)) {
		bool enough = tokens >= floor(target * TOKENS_OK_FRACTION);
		ok = json_boolean(enough);
		t->short_runs += !enough;
	}
	if (isfinite(mb))
		t->mb[t->n_mb++] = mb;
	if (isfinite(tps) && tps > 0)
		t->tps[t->n_tps++] = tps;
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:n, s:o, s:b, s:o}", "run_index",
			 (json_int_t)index, "mb_per_token", num_or_null(mb), "tokens_per_sec",
			 num_or_null(tps), "total_tokens",
			 isfinite(tokens) ? json_integer((json_int_t)tokens) : json_null(),
			 "dram_reads_gb", num_or_null(mb * tokens * MIB / GIB), "llc_miss_rate",
			 "duration_sec", num_or_null(secs), "perf_available", isfinite(mb),
			 "tokens_generated_ok", ok);
}

static void note(json_t *notes, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(json_t *notes, const char *fmt, ...)
{
	char text[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	mw_utf8_trim(text);
	json_array_append_new(notes, json_string(text));
}

/* baseline.py's architecture class from the kernel's machine name and the CPU's vendor. */
static json_t *arch_class(const json_t *mach)
{
	const char *m = at_str(mach, "kernel.machine");
	const char *vendor = json_string_value(json_object_get(mach, "cpu_vendor"));
	if (!m)
		return json_null();
	if (strstr(m, "x86") || strstr(m, "amd64") || strstr(m, "i686"))
		return json_string(vendor && strcasestr(vendor, "amd") ? "x86_amd" : "x86_intel");
	if (strstr(m, "arm") || strstr(m, "aarch64"))
		return json_string("arm");
	return json_string("unknown");
}

/* cpu0's L3 in MiB, as baseline.py reads it; NaN when the record has none. */
static double l3_mib(const json_t *mach)
{
	const json_t *c;
	size_t i;
	json_array_foreach(json_object_get(mach, "caches"), i, c)
		if (json_integer_value(json_object_get(c, "level")) == 3 &&
		    json_is_integer(json_object_get(c, "size_bytes")))
			return (double)json_integer_value(json_object_get(c, "size_bytes")) / MIB;
	return NAN;
}

/* baseline.py's HardwareProfile; each field memwall did not record is null, named in notes. */
static json_t *hardware_json(const json_t *doc, json_t *notes)
{
	const json_t *mach = json_object_get(doc, "machine");
	const json_t *cores = json_object_get(mach, "physical_cores");
	double mem = at_num(mach, "mem_total_bytes");
	json_t *hw = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
		"cpu_model", json_string_value(json_object_get(mach, "cpu_name"))
			? json_string(json_string_value(json_object_get(mach, "cpu_name")))
			: json_null(),
		"cpu_cores", json_is_integer(cores) ? json_integer(json_integer_value(cores))
						    : json_null(),
		"ram_gb", num_or_null(round_to(mem / GIB, 1)), "l3_cache_mb",
		num_or_null(l3_mib(mach)), "architecture", arch_class(mach),
		/* memwall runs on Linux only (perf_event_open): the kernel it recorded is Linux */
		"os", at_str(mach, "kernel.release") ? json_string("Linux") : json_null(),
		"kernel", at_str(mach, "kernel.release") ? json_string(at_str(mach, "kernel.release"))
							 : json_null());
	char missing[256] = "";
	const char *k;
	json_t *v;
	json_object_foreach(hw, k, v)
		if (json_is_null(v))
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
				 missing[0] ? ", " : "", k);
	if (missing[0])
		note(notes, "hardware fields the record does not hold, left null (baseline.py would "
		     "write 0.0 or \"Unknown\"): %s", missing);
	return hw;
}

/* counter_used: the counters that gave mb_per_token, or null where none did. */
static json_t *counter_used(const struct run_source *s, const json_t *doc,
			    const struct mw_provenance *p, bool any)
{
	const json_t *dram = mw_json_at(doc, "counters.dram"), *x;
	char text[1024];
	size_t i, len;
	if (!any)
		return json_null();
	if (s->to_mib == 1.0 && at_str(doc, "summary.aios_method.counter"))
		return json_string(at_str(doc, "summary.aios_method.counter"));
	len = (size_t)snprintf(text, sizeof(text), "memwall %s backend, summed over", p->backend
			       ? p->backend : "DRAM");
	json_array_foreach(json_object_get(dram, "instances"), i, x) {
		const char *name = json_is_string(x) ? json_string_value(x)
						     : json_string_value(json_object_get(x, "pmu"));
		if (len < sizeof(text))
			len += (size_t)snprintf(text + len, sizeof(text) - len, "%s %s",
						i ? "," : "", name ? name : "?");
	}
	mw_utf8_trim(text);
	return json_string(text);
}

/* What counted the DRAM figures, in notes: the source, its backend's basis, verification and
 * calibration; or why mb_per_token is null. */
static void dram_notes(json_t *notes, const json_t *doc, const struct mw_provenance *p)
{
	const json_t *m = mw_json_at(doc, "summary.metrics");
	double cal = at_num(json_object_get(m, "dram_MB_per_token_calibrated"), "mean");
	double eng = at_num(json_object_get(m, "engine_MB_per_token"), "mean");
	switch (p->source) {
	case MW_DRAM_SIMULATED:
		note(notes, "mb_per_token not exported: this record's DRAM counts are SIMULATED "
		     "(MEMWALL_COUNTERS=sim: memwall's simulated PMU replays counts a test scripted, "
		     "through the %s backend); no byte was counted by hardware, so mb_per_token and "
		     "dram_reads_gb are null and perf_available is false. This is not a measured "
		     "baseline.", p->backend ? p->backend : "?");
		break;
	case MW_DRAM_NONE:
		note(notes, "MB/token not measured: %s", p->why_none ? p->why_none : "no DRAM counter");
		break;
	default:
		note(notes, "DRAM counts: hardware counters (memwall's %s backend, %d memory-"
		     "controller instance%s summed, read through the kernel's %s layer); %s.",
		     p->backend ? p->backend : "?", p->n_instances, p->n_instances == 1 ? "" : "s",
		     p->layer ? p->layer : "?",
		     !p->verdict ? "not verified (memwall verify was not run on this machine)"
		     : strcmp(p->verdict, "pass") ? "verification FAILED: the counts may be wrong"
		     : "verified by memwall verify against a known stream");
		if (!strcmp(mw_dram_basis(doc), "total"))
			note(notes, "the %s backend has no read/write split: mb_per_token counts "
			     "read + written bytes, where baseline.py counts reads",
			     p->backend ? p->backend : "DRAM");
		if (p->calibrated && isfinite(cal))
			note(notes, "a calibration applies (error %+.1f %%): the calibrated estimate "
			     "is %.6g MiB/token; mb_per_token is the raw count", p->cal_error_pct,
			     cal * MB_TO_MIB);
		break;
	}
	if (p->source != MW_DRAM_HARDWARE && isfinite(eng))
		note(notes, "engine-accounted (computed from tensor shapes, not measured): %.6g "
		     "MiB/token", eng * MB_TO_MIB);
	if (p->synthetic)
		note(notes, "the model's weights are SYNTHETIC (memwall synth: real shapes, so bytes "
		     "per token are real; the tokens are not)");
}

/* The aggregates and pass criterion, set on b in baseline.py's order, with their notes. */
static void aggregates(json_t *b, json_t *notes, const struct tally *t)
{
	double mb_mean, mb_sd, tps_mean, tps_sd;
	pop_stats(t->mb, t->n_mb, &mb_mean, &mb_sd);
	pop_stats(t->tps, t->n_tps, &tps_mean, &tps_sd);
	double mb_cv = mb_mean > 0 ? mb_sd / mb_mean : NAN;
	double tps_cv = tps_mean > 0 ? tps_sd / tps_mean : NAN;
	bool on_mb = isfinite(mb_cv);
	double cv = on_mb ? mb_cv : tps_cv;
	json_object_set_new(b, "mb_per_token_mean", num_or_null(round_to(mb_mean, 3)));
	json_object_set_new(b, "mb_per_token_stddev", num_or_null(round_to(mb_sd, 3)));
	json_object_set_new(b, "mb_per_token_cv", num_or_null(round_to(mb_cv, 4)));
	json_object_set_new(b, "tokens_per_sec_mean", num_or_null(round_to(tps_mean, 2)));
	json_object_set_new(b, "tokens_per_sec_stddev", num_or_null(round_to(tps_sd, 2)));
	json_object_set_new(b, "pass_criterion_met", json_boolean(isfinite(cv) &&
								  cv * 100 < MW_AIOS_PASS_CV_PCT));
	json_object_set_new(b, "perf_available", json_boolean(t->n_mb > 0));
	if (t->short_runs)
		note(notes, "%zu run(s) produced fewer tokens than 90 %% of the target",
		     t->short_runs);
	if (!isfinite(cv))
		note(notes, "pass criterion not evaluated: no CV (fewer than one run with a figure)");
	else if (cv * 100 < MW_AIOS_PASS_CV_PCT)
		note(notes, "pass criterion met: CV %.2f %% of %s < 5 %%", cv * 100,
		     on_mb ? "MB/token" : "tok/s (MB/token not measured)");
	else
		note(notes, "pass criterion NOT met: CV %.2f %% of %s >= 5 %%", cv * 100,
		     on_mb ? "MB/token" : "tok/s (MB/token not measured)");
}

/* Why doc cannot be an AIOS baseline at all; NULL when it can. */
static const char *refusal(const json_t *doc, const struct run_source *s)
{
	if (!strcmp(at_str(doc, "kind") ? at_str(doc, "kind") : "", "reference"))
		return "an imported reference record: memwall did not measure it (its source "
		       "already published it)";
	if (json_array_size(json_object_get(doc, "variants")) > 0)
		return "a record of variants holds several configurations; an AIOS baseline is "
		       "one: run the protocol without variants";
	if (!s)
		return "its external.method is not one memwall knows (differential or "
		       MW_AIOS_METHOD ")";
	return NULL;
}

int mw_export_aios(const json_t *doc, const char *source, json_t **out, struct mw_error *err)
{
	const struct run_source *s = source_of(doc);
	const char *why = refusal(doc, s);
	struct mw_provenance p;
	struct tally t = { 0 };
	json_t *b = NULL, *notes = NULL, *runs = NULL, *run;
	size_t i;
	int rc = 0;

	*out = NULL;
	if (why)
		return mw_error_set(err, -EINVAL, source, "", "cannot be an AIOS baseline: %s", why);
	mw_provenance_of(doc, &p);
	size_t n = json_array_size(mw_json_at(doc, s->array));
	t.mb = calloc(n + 1, sizeof(double));
	t.tps = calloc(n + 1, sizeof(double));
	notes = json_array();
	runs = json_array();
	if (!t.mb || !t.tps || !notes || !runs) {
		rc = mw_error_set(err, -ENOMEM, source, "", "out of memory");
		goto out;
	}
	note(notes, "measured by memwall %s, not by AIOS's validation/baseline.py: protocol %s "
	     "(sha256 %.12s), record of %s", at_str(doc, "memwall.version") ? at_str(doc,
	     "memwall.version") : "?", at_str(doc, "protocol.name") ? at_str(doc, "protocol.name")
	     : "?", at_str(doc, "protocol.sha256") ? at_str(doc, "protocol.sha256") : "?",
	     at_str(doc, "created_utc") ? at_str(doc, "created_utc") : "?");
	note(notes, "method: %s", s->what);
	if (s->to_mib != 1.0)
		note(notes, "MB here is MiB (2^20 bytes) and GB is GiB (2^30 bytes), as in "
		     "baseline.py: memwall's MB (10^6 bytes) was converted x 10^6 / 2^20 = x %.6f",
		     MB_TO_MIB);
	bool dram = p.source == MW_DRAM_HARDWARE;
	json_array_foreach(mw_json_at(doc, s->array), i, run)
		if (run_counts(s, run))
			json_array_append_new(runs, run_json(s, doc, run, t.n_runs++, dram, &t));
	if (!t.n_runs) {
		rc = mw_error_set(err, -EINVAL, source, s->array, "cannot be an AIOS baseline: no "
				  "complete measured run");
		goto out;
	}
	b = json_object();
	json_object_set_new(b, "model_path", at_str(doc, "model.path")
			    ? json_string(at_str(doc, "model.path")) : at_str(doc, "model.name")
			    ? json_string(at_str(doc, "model.name")) : json_null());
	json_object_set_new(b, "model_size_gb",
			    num_or_null(round_to(at_num(doc, "model.file_bytes") / GIB, 3)));
	json_object_set_new(b, "hardware", hardware_json(doc, notes));
	json_object_set_new(b, "runs", runs);
	runs = NULL;
	dram_notes(notes, doc, &p);
	note(notes, "llc_miss_rate not measured: memwall does not count LLC misses");
	aggregates(b, notes, &t);
	json_object_set_new(b, "counter_used", counter_used(s, doc, &p, t.n_mb > 0));
	if (!json_is_true(json_object_get(doc, "complete")))
		note(notes, "the record is INCOMPLETE (%s): only its complete runs are here",
		     at_str(doc, "incomplete_reason") ? at_str(doc, "incomplete_reason") : "?");
	note(notes, "memwall's acceptance of the protocol's own criteria: %s",
	     at_str(doc, "acceptance.status") ? at_str(doc, "acceptance.status") : "?");
	json_object_set_new(b, "notes", notes);
	notes = NULL;
	*out = json_pack("{s:o}", "baseline", b);
	b = NULL;
	if (!*out)
		rc = mw_error_set(err, -ENOMEM, source, "", "out of memory");
out:
	free(t.mb);
	free(t.tps);
	json_decref(notes);
	json_decref(runs);
	json_decref(b);
	return rc;
}

/* ---- the comment on AIOS's issue #2 ------------------------------------------------------ */

static const char *md(const char *s, const char *dflt)
{
	return s ? mw_esc_md(s) : dflt;
}

/* "12.3 ± 0.4 (CV 3.25 %), n = 5" from the baseline's mean, sd and runs. */
static void figure_text(char *buf, size_t n, const json_t *b, const char *mean, const char *sd,
			size_t runs)
{
	double m = at_num(b, mean), s = at_num(b, sd);
	if (!isfinite(m))
		snprintf(buf, n, "not measured");
	else
		snprintf(buf, n, "%.6g ± %.6g (CV %.3g %%), n = %zu", m, s, m > 0 ? 100 * s / m : NAN,
			 runs);
}

/* s as Markdown inline code: fenced by one more backtick than its longest run of them, so no
 * text from the record ends the span (CommonMark, "Code spans"). */
static void inline_code(FILE *f, const char *s)
{
	size_t run = 0, longest = 0;
	for (const char *c = s; *c; c++) {
		run = *c == '`' ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	for (size_t i = 0; i <= longest; i++)
		fputc('`', f);
	fprintf(f, longest ? " %s " : "%s", mw_esc(s));
	for (size_t i = 0; i <= longest; i++)
		fputc('`', f);
}

static void comment_header(FILE *f, const json_t *doc, const json_t *b)
{
	const json_t *hw = json_object_get(b, "hardware"), *c;
	const json_t *cmd = mw_json_at(doc, "engine.command");
	size_t i;
	double l3 = at_num(hw, "l3_cache_mb"), ram = at_num(hw, "ram_gb");
	double gb = at_num(b, "model_size_gb");
	fprintf(f, "Hardware: %s, ", md(at_str(hw, "cpu_model"), "CPU not recorded"));
	if (json_is_integer(json_object_get(hw, "cpu_cores")))
		fprintf(f, "%lld cores", (long long)json_integer_value(json_object_get(hw,
											"cpu_cores")));
	else
		fprintf(f, "cores not recorded");
	if (json_is_integer(mw_json_at(doc, "machine.logical_cpus")))
		fprintf(f, " (%lld logical CPUs)",
			(long long)json_integer_value(mw_json_at(doc, "machine.logical_cpus")));
	fprintf(f, isfinite(ram) ? ", RAM %.1f GB" : ", RAM not recorded", ram);
	fprintf(f, isfinite(l3) ? ", L3 %.6g MB" : ", L3 not recorded", l3);
	fprintf(f, " (GB = 2^30, MB = 2^20 bytes, as in AIOS)\n");
	fprintf(f, "OS: Linux (%s), kernel %s\n", md(at_str(doc, "machine.os"), "distribution "
		"not recorded"), md(at_str(doc, "machine.kernel.release"), "not recorded"));
	fprintf(f, "Model: %s (%s%s%s%s)", md(at_str(doc, "model.name"), "unnamed"),
		md(at_str(doc, "model.format"), "?"), at_str(doc, "model.arch") ? ", " : "",
		md(at_str(doc, "model.arch"), ""),
		json_is_true(mw_json_at(doc, "model.synthetic")) ? ", SYNTHETIC weights" : "");
	if (isfinite(gb))
		fprintf(f, ", %.3f GB file", gb);
	if (at_str(doc, "model.sha256"))
		fprintf(f, ", sha256 %s", md(at_str(doc, "model.sha256"), ""));
	fprintf(f, "\nAIOS version: none: measured by memwall %s, not with AIOS's scripts; the "
		"JSON below has the shape of AIOS's validation/baseline.py v1.4\n",
		md(at_str(doc, "memwall.version"), "?"));
	char line[4096];
	size_t len = (size_t)snprintf(line, sizeof(line), "memwall run %s",
				      at_str(doc, "protocol.source") ? at_str(doc, "protocol.source")
				      : at_str(doc, "protocol.name") ? at_str(doc, "protocol.name") : "?");
	fprintf(f, "Command: ");
	inline_code(f, line);
	if (json_array_size(cmd)) {
		len = 0;
		json_array_foreach(cmd, i, c)
			if (len < sizeof(line))
				len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s",
							i ? " " : "", json_is_string(c)
							? json_string_value(c) : "?");
		mw_utf8_trim(line);
		fprintf(f, "; the engine ran ");
		inline_code(f, line);
	}
	fprintf(f, "\n");
}

static void comment_figures(FILE *f, const json_t *doc, const json_t *b)
{
	const json_t *runs = json_object_get(b, "runs"), *notes = json_object_get(b, "notes"), *x;
	struct mw_provenance p;
	char words[320], text[160];
	size_t i, n_mb = 0;
	mw_provenance_of(doc, &p);
	json_array_foreach(runs, i, x)
		n_mb += json_is_true(json_object_get(x, "perf_available"));
	fprintf(f, "\nResults (baseline.json attached below):\n\n| figure | mean ± sd (population "
		   "sd, as baseline.py's) | provenance |\n|---|---|---|\n");
	figure_text(text, sizeof(text), b, "mb_per_token_mean", "mb_per_token_stddev", n_mb);
	fprintf(f, "| MB/token (DRAM; MB = MiB = 2^20 bytes) | %s | %s |\n",
		p.source == MW_DRAM_SIMULATED ? "not exported: SIMULATED counts" : text,
		mw_esc_md(mw_provenance_metric(&p, "dram_MB_per_token", words, sizeof(words))));
	figure_text(text, sizeof(text), b, "tokens_per_sec_mean", "tokens_per_sec_stddev",
		    json_array_size(runs));
	fprintf(f, "| tok/s (decode) | %s | %s |\n", text,
		mw_esc_md(mw_provenance_metric(&p, "tok_per_s", words, sizeof(words))));
	fprintf(f, "| pass criterion (CV < 5 %%) | %s | AIOS's rule, on MB/token where measured, "
		   "else tok/s |\n",
		json_is_true(json_object_get(b, "pass_criterion_met")) ? "met" : "NOT met");
	fprintf(f, "\nNotes:\n");
	json_array_foreach(notes, i, x)
		fprintf(f, "- %s\n", md(json_string_value(x), "?"));
}

void mw_export_aios_comment(FILE *f, const json_t *doc, const json_t *aios)
{
	const json_t *b = json_object_get(aios, "baseline");
	char *json = json_dumps(aios, MW_EXPORT_AIOS_JSON_FLAGS);
	comment_header(f, doc, b);
	comment_figures(f, doc, b);
	fprintf(f, "\n<details><summary>baseline.json</summary>\n\n```json\n");
	/* A backtick can only be inside a JSON string, where \u0060 is the same character: so
	 * no text from the record can close the fence. */
	for (const char *c = json ? json : "{}"; *c; c++)
		if (*c == '`')
			fputs("\\u0060", f);
		else
			fputc(*c, f);
	fprintf(f, "\n```\n\n</details>\n");
	free(json);
}
