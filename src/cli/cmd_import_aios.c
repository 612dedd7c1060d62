/* src/cli/cmd_import_aios.c: `memwall import-aios FILE.json`: an AIOS baseline result as a memwall
 * reference record, marked with what the AIOS baseline script did and did not measure.
 *
 * The script's own output format could not be retrieved when this was written, so the input
 * accepted here is defined narrowly (results/README.md, "Importing an AIOS baseline result"):
 * the fields in the tables below and nothing else; an unknown field is an error that names it,
 * so a file of another shape is refused rather than half-read.
 *
 * What the script is known to do wrong (issue 8), and how the record says so:
 *   - it counts one event, often one memory-controller instance (uncore_imc_free_running_0/):
 *     named in counters.dram.caveat and reference.not_measured;
 *   - it divides whole-process bytes (load, prompt, exit) by the tokens: the figure is stored
 *     as dram_read_MB_per_token_whole_process, never under the differential name;
 *   - with mem-loads it multiplies sampled load instructions by 64 and calls that DRAM bytes:
 *     then the figure goes under aios_mem_loads_x64_MB_per_token and DRAM is "not measured";
 *   - with no timing lines it assumes the requested token count: runs whose count is not
 *     marked as read from llama.cpp's timings are flagged, and min_tokens is not-measured. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "mw.h"
#include "opt.h"
#include "result.h"
#include "stats.h"
#include "verbs.h"

#define VERB "import-aios"

/* The accepted input, field by field. */
struct field {
	const char *name;
	json_type type;    /* JSON_INTEGER, JSON_REAL (any number), JSON_STRING, JSON_ARRAY */
	bool required;
	const char *meaning;
};

static const struct field top_fields[] = {
	{ "model", JSON_STRING, true, "the model file's name" },
	{ "event", JSON_STRING, true, "the perf event the script counted" },
	{ "n_predict", JSON_INTEGER, true, "tokens requested per run" },
	{ "runs", JSON_ARRAY, true, "one object per measured run" },
	{ "warmup_runs", JSON_INTEGER, false, "runs before them" },
	{ "cpu", JSON_STRING, false, "the CPU's name" },
	{ "os", JSON_STRING, false, "the operating system" },
	{ "kernel", JSON_STRING, false, "the kernel release" },
	{ "engine", JSON_STRING, false, "the llama.cpp version or build" },
	{ "source", JSON_STRING, false, "where the result was published" },
};

static const struct field run_fields[] = {
	{ "tokens", JSON_INTEGER, true, "tokens the script divided by" },
	{ "tok_per_s", JSON_REAL, true, "decode speed as the script computed it" },
	{ "mb_per_token", JSON_REAL, true, "bytes per token as the script computed it, in MB" },
	{ "tokens_source", JSON_STRING, false, "\"timings\" (read from llama.cpp's output) or "
					       "\"assumed\" (the requested count)" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: memwall import-aios FILE.json [-o RECORD.json]\n\n"
		   "Converts an AIOS baseline result into a memwall reference record (kind\n"
		   "\"reference\"), marked with what the AIOS script measured and what it did not: one\n"
		   "memory-controller instance, whole-process bytes divided by tokens, mem-loads x 64\n"
		   "(not DRAM bytes), token counts possibly assumed. The record validates with\n"
		   "`memwall validate` and goes to stdout, or to RECORD.json (never overwritten).\n\n"
		   "Accepted input: one JSON object with these fields and no others:\n");
	for (size_t i = 0; i < sizeof(top_fields) / sizeof(top_fields[0]); i++)
		fprintf(f, "  %-14s %s%s\n", top_fields[i].name, top_fields[i].meaning,
			top_fields[i].required ? " (required)" : "");
	fprintf(f, "each of runs[] with:\n");
	for (size_t i = 0; i < sizeof(run_fields) / sizeof(run_fields[0]); i++)
		fprintf(f, "  %-14s %s%s\n", run_fields[i].name, run_fields[i].meaning,
			run_fields[i].required ? " (required)" : "");
	fprintf(f, "\nExit: 0 written, 2 bad input (the field is named), 3 cannot write.\n");
}

static bool type_ok(const json_t *v, json_type t)
{
	if (t == JSON_REAL)
		return json_is_number(v);
	return json_typeof(v) == t;
}

static const char *type_word(json_type t)
{
	return t == JSON_INTEGER ? "a whole number" : t == JSON_REAL ? "a number"
	       : t == JSON_STRING ? "a string" : "an array";
}

/* Every key of obj is in fields, of its type; every required one is there. */
static int check_fields(const json_t *obj, const struct field *fields, size_t n,
			const char *prefix, const char *src, struct mw_error *err)
{
	char path[96];
	const char *k;
	json_t *v;
	if (!json_is_object(obj))
		return mw_error_set(err, -EINVAL, src, prefix[0] ? prefix : "(top level)",
				    "must be a JSON object");
	json_object_foreach((json_t *)(uintptr_t)obj, k, v) {
		size_t i = 0;
		while (i < n && strcmp(fields[i].name, k))
			i++;
		snprintf(path, sizeof(path), "%s%s", prefix, k);
		if (i == n)
			return mw_error_set(err, -EINVAL, src, path,
					    "unknown field: `memwall import-aios --help` lists the "
					    "accepted ones");
		if (!type_ok(v, fields[i].type))
			return mw_error_set(err, -EINVAL, src, path, "must be %s",
					    type_word(fields[i].type));
	}
	for (size_t i = 0; i < n; i++)
		if (fields[i].required && !json_object_get(obj, fields[i].name)) {
			snprintf(path, sizeof(path), "%s%s", prefix, fields[i].name);
			return mw_error_set(err, -EINVAL, src, path, "required field is missing (%s)",
					    fields[i].meaning);
		}
	return 0;
}

static int check_input(const json_t *in, const char *src, struct mw_error *err)
{
	char prefix[32];
	const json_t *run;
	size_t i;
	int rc = check_fields(in, top_fields, sizeof(top_fields) / sizeof(top_fields[0]), "", src,
			      err);
	if (rc)
		return rc;
	const json_t *runs = json_object_get(in, "runs");
	if (json_array_size(runs) == 0 || json_array_size(runs) > 1000)
		return mw_error_set(err, -EINVAL, src, "runs", "must hold 1 to 1000 runs");
	json_int_t n_predict = json_integer_value(json_object_get(in, "n_predict"));
	if (n_predict < 1)
		return mw_error_set(err, -EINVAL, src, "n_predict", "must be at least 1");
	/* The input's own fields are named, never a figure derived from them (issue 28). */
	static const char *const named[] = { "model", "event" };
	for (size_t k = 0; k < 2; k++)
		if (!json_string_length(json_object_get(in, named[k])))
			return mw_error_set(err, -EINVAL, src, named[k], "must not be empty (%s)",
					    k ? "the perf event the script counted"
					      : "the model file's name");
	const json_t *warm = json_object_get(in, "warmup_runs");
	if (warm && json_integer_value(warm) < 0)
		return mw_error_set(err, -EINVAL, src, "warmup_runs", "must be 0 or more, got %lld",
				    (long long)json_integer_value(warm));
	json_array_foreach(runs, i, run) {
		snprintf(prefix, sizeof(prefix), "runs[%zu].", i);
		if ((rc = check_fields(run, run_fields, sizeof(run_fields) / sizeof(run_fields[0]),
				       prefix, src, err)))
			return rc;
		const char *ts = json_string_value(json_object_get(run, "tokens_source"));
		char path[64];
		snprintf(path, sizeof(path), "%stokens_source", prefix);
		if (ts && strcmp(ts, "timings") && strcmp(ts, "assumed"))
			return mw_error_set(err, -EINVAL, src, path,
					    "must be \"timings\" or \"assumed\", got \"%s\"", ts);
		json_int_t tok = json_integer_value(json_object_get(run, "tokens"));
		snprintf(path, sizeof(path), "%stokens", prefix);
		if (tok > n_predict)
			return mw_error_set(err, -EINVAL, src, path, "is %lld, more than the %lld "
					    "tokens requested (n_predict): a run generates at most "
					    "n_predict", (long long)tok, (long long)n_predict);
		static const char *const positive[] = { "tokens", "tok_per_s", "mb_per_token" };
		for (size_t k = 0; k < 3; k++) {
			double x = json_number_value(json_object_get(run, positive[k]));
			snprintf(path, sizeof(path), "%s%s", prefix, positive[k]);
			if (!(x > 0) || !isfinite(x))
				return mw_error_set(err, -EINVAL, src, path, "must be above 0, got %g",
						    x);
		}
	}
	return 0;
}

static json_t *stats_metric(const json_t *runs, const char *key, const char *unit)
{
	size_t n = json_array_size(runs), i;
	double *v = calloc(n ? n : 1, sizeof(double));
	const json_t *run;
	struct mw_stats s;
	if (!v)
		return NULL;
	json_array_foreach(runs, i, run)
		v[i] = json_number_value(json_object_get(run, key));
	mw_stats_compute(v, n, &s);
	free(v);
	return json_pack("{s:s, s:b, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "unit", unit,
			 "measured", 1, "n", (json_int_t)s.n, "mean", mw_json_num(s.mean), "sd",
			 mw_json_num(s.sd), "cv_pct", mw_json_num(s.cv_pct), "median",
			 mw_json_num(s.median), "min", mw_json_num(s.min), "max", mw_json_num(s.max),
			 "ci95_low", mw_json_num(s.ci95_low), "ci95_high", mw_json_num(s.ci95_high));
}

static json_t *not_measured(const char *unit, const char *why)
{
	return json_pack("{s:s, s:b, s:s}", "unit", unit, "measured", 0, "reason", why);
}

static json_t *opt_str(const json_t *in, const char *key)
{
	const char *s = json_string_value(json_object_get(in, key));
	return s ? json_string(s) : json_null();
}

/* A limit on a CV, evaluated on the imported figures. */
static json_t *cv_criterion(const char *name, double limit, const json_t *metric)
{
	const json_t *cv = json_object_get(metric, "cv_pct");
	if (!json_is_true(json_object_get(metric, "measured")) || !json_is_number(cv))
		return json_pack("{s:s, s:f, s:n, s:s, s:s}", "criterion", name, "limit", limit,
				 "value", "status", "not-measured", "reason",
				 json_is_true(json_object_get(metric, "measured"))
					 ? "a CV needs at least 2 runs"
					 : json_string_value(json_object_get(metric, "reason")));
	double v = json_number_value(cv);
	return json_pack("{s:s, s:f, s:f, s:s}", "criterion", name, "limit", limit, "value", v,
			 "status", v <= limit ? "pass" : "fail");
}

static const char aios_mb_unit[] = "MB/token as computed by the AIOS script (whole process / "
				   "tokens; 10^6 or 2^20 bytes: the script's unit is not recorded)";

/* What the event name and the runs say, worked out once for every part of the record. */
struct aios_facts {
	const char *event;
	char pmu[128];
	bool mem_loads;    /* the script counted load instructions, not DRAM traffic */
	bool one_instance; /* one memory-controller instance of several */
	json_int_t n_predict, tokens, least;
	size_t n_runs, assumed, fewer;
};

static void facts_read(const json_t *in, struct aios_facts *f)
{
	const json_t *runs = json_object_get(in, "runs"), *run;
	size_t i;

	memset(f, 0, sizeof(*f));
	f->event = json_string_value(json_object_get(in, "event")); /* checked: set */
	if (!f->event)
		f->event = "";
	f->n_predict = json_integer_value(json_object_get(in, "n_predict"));
	f->least = -1;
	f->n_runs = json_array_size(runs);

	/* "pmu/terms/" names one PMU; a numbered one is one instance of several. */
	snprintf(f->pmu, sizeof(f->pmu), "%.*s", (int)strcspn(f->event, "/"), f->event);
	bool uncore = strchr(f->event, '/') && !strncmp(f->pmu, "uncore_imc", 10);
	f->mem_loads = strstr(f->event, "mem-loads") != NULL ||
		       strstr(f->event, "mem_loads") != NULL;
	size_t plen = strlen(f->pmu);
	f->one_instance = uncore && plen > 2 && f->pmu[plen - 1] >= '0' &&
			  f->pmu[plen - 1] <= '9' && f->pmu[plen - 2] == '_';

	json_array_foreach(runs, i, run) {
		json_int_t t = json_integer_value(json_object_get(run, "tokens"));
		const char *ts = json_string_value(json_object_get(run, "tokens_source"));
		f->tokens += t;
		f->least = f->least < 0 || t < f->least ? t : f->least;
		f->assumed += !ts || strcmp(ts, "timings");
		f->fewer += t < f->n_predict;
	}
}

/* The record's not_measured list: what the script did not measure, or measured as something
 * other than its name says. New array. */
static json_t *not_measured_list(const struct aios_facts *f)
{
	json_t *not = json_array();
	char text[1024];

	if (f->one_instance) {
		snprintf(text, sizeof(text), "every memory-controller instance but %s: the script "
			 "counted %s only, so the figure may cover part of the DRAM traffic; memwall "
			 "counts every instance", f->pmu, f->event);
		json_array_append_new(not, json_string(text));
	}
	if (f->mem_loads)
		json_array_append_new(not, json_string(
			"DRAM bytes: the script multiplied mem-loads by 64, but mem-loads counts "
			"(sampled) load instructions served from any level of the memory hierarchy, "
			"not cache lines read from DRAM; the product is not DRAM traffic"));
	json_array_append_new(not, json_string(
		"decode traffic on its own: the script divided whole-process bytes (model load, "
		"prompt evaluation, start-up, exit, background) by the generated tokens; memwall's "
		"differential method gives (B2 - B1) / (N2 - N1)"));
	json_array_append_new(not, json_string("an idle baseline: nothing says background "
					       "traffic was subtracted"));
	json_array_append_new(not, json_string("DRAM writes, energy, per-token latencies, "
					       "bandwidth drift"));
	if (f->assumed) {
		snprintf(text, sizeof(text), "confirmed token counts in %zu of %zu runs: their count "
			 "is not marked as read from llama.cpp's timing lines (tokens_source "
			 "\"timings\"), and the script assumes the requested %lld when llama.cpp "
			 "prints none (as with --log-disable)", f->assumed, f->n_runs,
			 (long long)f->n_predict);
		json_array_append_new(not, json_string(text));
	}
	return not;
}

/* The record's notes: where it came from, short runs, and a plausibility figure from the
 * means of fig (MB/token) and tok (tok/s). New array. */
static json_t *notes_list(const struct aios_facts *f, const char *path, const json_t *fig,
			  const json_t *tok)
{
	json_t *notes = json_array();
	char text[1024];

	snprintf(text, sizeof(text), "imported from %s by memwall import-aios; %zu runs as given, "
		 "statistics recomputed from them (sample sd)", path, f->n_runs);
	json_array_append_new(notes, json_string(text));
	if (f->fewer) {
		snprintf(text, sizeof(text), "%zu runs divided by fewer tokens than the %lld "
			 "requested (generation stopped early?)", f->fewer, (long long)f->n_predict);
		json_array_append_new(notes, json_string(text));
	}
	double implied = json_number_value(json_object_get(fig, "mean")) *
			 json_number_value(json_object_get(tok, "mean")) / 1e3;
	snprintf(text, sizeof(text), "plausibility: mean tok/s x mean MB/token = %.3g GB/s of "
		 "%s traffic, to hold against the machine's bandwidth", implied,
		 f->mem_loads ? "mem-loads x 64" : "counted");
	json_array_append_new(notes, json_string(text));
	return notes;
}

/* The record's metrics: fig and tok (stolen) under the names that say what they are, every
 * other metric as not measured, with why. New object. */
static json_t *metrics_object(const struct aios_facts *f, json_t *fig, json_t *tok)
{
	json_t *m = json_object();
	const char *whole_why = "the AIOS script divides whole-process traffic by the tokens: its "
				"figure is dram_read_MB_per_token_whole_process";
	if (f->mem_loads) {
		json_object_set_new(m, "aios_mem_loads_x64_MB_per_token", fig);
		json_object_set_new(m, "dram_read_MB_per_token_whole_process",
				    not_measured(aios_mb_unit, "mem-loads x 64 is not DRAM traffic: "
						 "see aios_mem_loads_x64_MB_per_token"));
		whole_why = "mem-loads x 64 is not DRAM traffic";
	} else {
		json_object_set_new(m, "dram_read_MB_per_token_whole_process", fig);
	}
	json_object_set_new(m, "dram_read_MB_per_token",
			    not_measured("MB/token (MB = 10^6 bytes), differential", whole_why));
	json_object_set_new(m, "tok_per_s", tok);
	json_object_set_new(m, "dram_write_MB_per_token",
			    not_measured("MB/token (MB = 10^6 bytes)", "the script counts no writes"));
	json_object_set_new(m, "engine_MB_per_token",
			    not_measured("MB/token (MB = 10^6 bytes; engine-accounted)",
					 "stock llama.cpp does not account bytes per token"));
	json_object_set_new(m, "energy_J_per_token",
			    not_measured("J/token (package energy, decode)", "not recorded"));
	json_object_set_new(m, "latency_p99_ns", not_measured("ns/token", "not recorded"));
	return m;
}

/* The AIOS Issue #2 protocol's limits (protocols/falcon7b-q4km.json), on these figures. New
 * array; *overall receives the verdict over them (static storage). */
static json_t *criteria_list(const struct aios_facts *f, const json_t *fig, const json_t *tok,
			     const char **overall)
{
	json_t *crit = json_array(), *c;
	size_t i;

	json_array_append_new(crit, cv_criterion("max_cv_mb_per_token_pct", 1.0, fig));
	json_array_append_new(crit, cv_criterion("max_cv_tok_s_pct", 2.0, tok));
	if (f->assumed)
		json_array_append_new(crit, json_pack("{s:s, s:i, s:n, s:s, s:s}", "criterion",
						      "min_tokens", "limit", 200, "value", "status",
						      "not-measured", "reason",
						      "token counts may be assumed, not confirmed"));
	else
		json_array_append_new(crit, json_pack("{s:s, s:i, s:I, s:s}", "criterion",
						      "min_tokens", "limit", 200, "value", f->least,
						      "status", f->least >= 200 ? "pass" : "fail"));
	*overall = "pass";
	json_array_foreach(crit, i, c) {
		const char *s = json_string_value(json_object_get(c, "status"));
		if (!strcmp(s, "fail"))
			*overall = "fail";
		else if (!strcmp(s, "not-measured") && strcmp(*overall, "fail"))
			*overall = "not-measured";
	}
	return crit;
}

/* The record's counters.dram: the one perf event, or why it is not DRAM traffic. New. */
static json_t *dram_object(const struct aios_facts *f)
{
	char caveat[1024];
	snprintf(caveat, sizeof(caveat), "perf event %s only%s", f->event,
		 f->one_instance ? ": one memory-controller instance" : f->mem_loads
		 ? ": load instructions, not DRAM traffic" : "");
	return f->mem_loads
		? json_pack("{s:b, s:s, s:[s]}", "measured", 0, "reason",
			    "the script counted mem-loads (load instructions), not DRAM traffic",
			    "events", f->event)
		: json_pack("{s:b, s:n, s:s, s:[s], s:s, s:n, s:s}", "measured", 1, "reason",
			    "backend", "perf stat, one event", "events", f->event, "caveat", caveat,
			    "calibration_error_pct", "calibration_reason", "not recorded");
}

/* The reference record for in (already checked). New reference. */
static json_t *record_build(const json_t *in, const char *path)
{
	const json_t *runs = json_object_get(in, "runs");
	struct aios_facts f;
	const char *overall;
	char created[32];

	facts_read(in, &f);
	json_t *not = not_measured_list(&f);
	json_t *fig = stats_metric(runs, "mb_per_token", aios_mb_unit);
	json_t *tok = stats_metric(runs, "tok_per_s", "token/s as computed by the AIOS script");
	json_t *notes = notes_list(&f, path, fig, tok);
	json_t *m = metrics_object(&f, fig, tok);
	json_t *crit = criteria_list(&f, fig, tok, &overall);

	mw_utc_now(created, sizeof(created), false);
	json_t *machine = json_pack("{s:o, s:o, s:o, s:{s:s, s:s}}", "cpu_name",
				    opt_str(in, "cpu"), "os", opt_str(in, "os"), "kernel",
				    opt_str(in, "kernel"), "unavailable", "details",
				    "an AIOS baseline result records the CPU's name, OS and kernel at "
				    "most", "note", "imported, not described by memwall");
	json_t *dram = dram_object(&f);
	return json_pack(
		"{s:s, s:s, s:b, s:n, s:s,"
		" s:{s:s, s:n, s:n},"
		" s:{s:s, s:s, s:s},"
		" s:{s:o, s:o, s:s, s:s, s:O, s:o, s:o},"
		" s:{s:s, s:n, s:n},"
		" s:{s:s, s:s, s:n, s:n, s:n, s:b, s:n, s:n},"
		" s:{s:s, s:n, s:n, s:n},"
		" s:o,"
		" s:{s:o, s:{s:b, s:s}},"
		" s:{s:b, s:s},"
		" s:[],"
		" s:{s:I, s:I, s:i, s:I, s:o},"
		" s:{s:s, s:o}}",
		"schema", MW_RESULT_SCHEMA_ID, "kind", "reference", "complete", 1,
		"incomplete_reason", "created_utc", created,
		"memwall", "version", "none: imported by memwall import-aios, not measured by memwall",
		"git_commit", "git_dirty",
		"units", "MB", "10^6 bytes", "MiB", "2^20 bytes", "time",
		"ns unless the key names another unit",
		"reference", "source", json_string_value(json_object_get(in, "source"))
			? json_string(json_string_value(json_object_get(in, "source")))
			: json_string("an AIOS baseline result file"),
		"source_url", json_null(), "imported_by", "memwall import-aios", "engine",
		json_string_value(json_object_get(in, "engine"))
			? json_string_value(json_object_get(in, "engine")) : "stock llama.cpp",
		"published_runs", runs, "not_measured", not, "notes", notes,
		"protocol", "name", "aios-baseline", "sha256", "document",
		"model", "format", "gguf", "name", json_string_value(json_object_get(in, "model")),
		"path", "file_bytes", "sha256", "synthetic", 0, "synth", "arch",
		"engine", "kind", "llama.cpp", "kernels", "threads", "cpus",
		"machine", machine,
		"counters", "dram", dram, "energy", "measured", 0, "reason", "not recorded",
		"drift", "measured", 0, "reason", "not recorded",
		"runs",
		"summary", "runs_measured", (json_int_t)json_array_size(runs), "runs_warmup",
		json_integer_value(json_object_get(in, "warmup_runs")), "runs_incomplete", 0,
		"tokens_measured", f.tokens, "metrics", m,
		"acceptance", "status", overall, "criteria", crit);
}

int mw_cmd_import_aios(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *outpath = NULL;
	json_t *in = NULL, *rec = NULL;
	json_error_t jerr;
	struct mw_error err;
	FILE *f = NULL;
	int c, code = MW_EXIT_OK;

	mw_error_clear(&err);
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "o:h", opts);
	while ((c = mw_opt_next(&op)) != -1) {
		if (c == 'o') {
			outpath = optarg;
		} else if (c == 'h') {
			usage(stdout);
			return MW_EXIT_OK;
		} else {
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
		}
	}
	if (argc - optind != 1) {
		usage(stderr);
		return MW_EXIT_USAGE;
	}
	const char *path = argv[optind];
	char *text = NULL;
	size_t len = 0;
	/* A regular file of at most a record's size (src/base/file.h). */
	if (mw_file_read(path, "AIOS record", "", MW_RESULT_MAX_BYTES, &text, &len, &err)) {
		mw_error_print(&err);
		code = MW_EXIT_USAGE;
		goto out;
	}
	in = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!in) {
		code = mw_fail(MW_EXIT_USAGE, VERB, "%s:%d: %s", path, jerr.line, jerr.text);
		goto out;
	}
	if (check_input(in, path, &err)) {
		mw_error_print(&err);
		code = MW_EXIT_USAGE;
		goto out;
	}
	rec = record_build(in, path);
	if (!rec || mw_result_validate(rec, "(imported record)", &err)) {
		/* A bug here, not bad input: the record must validate. */
		if (rec)
			mw_error_print(&err);
		code = mw_fail(MW_EXIT_ENV, VERB, "the imported record does not validate");
		goto out;
	}
	if (outpath) {
		/* "x": never replace an existing record. */
		f = fopen(outpath, "wx");
		if (!f) {
			code = mw_fail(errno == EEXIST ? MW_EXIT_USAGE : MW_EXIT_ENV, VERB,
				       "cannot create %s: %s", outpath, strerror(errno));
			goto out;
		}
	}
	if (json_dumpf(rec, f ? f : stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) ||
	    fputc('\n', f ? f : stdout) == EOF || (f && fclose(f))) {
		f = NULL;
		code = mw_fail(MW_EXIT_ENV, VERB, "cannot write the record: %s", strerror(errno));
		goto out;
	}
	f = NULL;
	if (outpath)
		fprintf(stderr, "memwall " VERB ": reference record written to %s\n", outpath);
out:
	if (f)
		fclose(f);
	json_decref(in);
	json_decref(rec);
	return code;
}
