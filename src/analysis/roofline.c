/* src/analysis/roofline.c: roofline arithmetic, the plausibility check, a result record's view, and the
 * roofline chart (roofline.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "embedded.h"
#include "file.h"
#include "jschema.h"
#include "roofline.h"
#include "sha256.h"

static const char *const verdict_names[] = {
	[MW_VERDICT_NOT_CHECKED] = "not checked",
	[MW_VERDICT_PLAUSIBLE] = "plausible",
	[MW_VERDICT_IMPLAUSIBLE] = "IMPLAUSIBLE",
	[MW_VERDICT_EXCESS] = "excess",
};

const char *mw_verdict_name(enum mw_verdict v)
{
	return (unsigned)v < sizeof(verdict_names) / sizeof(verdict_names[0]) ? verdict_names[v]
									       : "?";
}

static void list_instances(char *buf, size_t n, const char *const *inst, size_t k)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < k && used < n; i++) {
		int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", inst[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (!k)
		snprintf(buf, n, "(the record does not name them)");
}

void mw_plausibility_check(const struct mw_analytic *a, double measured_bytes,
			   const char *const *instances, size_t n_instances,
			   struct mw_plausibility *out)
{
	char inst[600];
	out->ratio = NAN;
	if (isnan(measured_bytes)) {
		out->verdict = MW_VERDICT_NOT_CHECKED;
		snprintf(out->text, sizeof(out->text), "no measured DRAM bytes to check");
		return;
	}
	if (!a->far_larger_than_llc || a->floor == 0) {
		out->verdict = MW_VERDICT_NOT_CHECKED;
		snprintf(out->text, sizeof(out->text),
			 "not checked: the weights read per token (%.1f MB) are not far larger than "
			 "the LLC (%s), so cache hits may legitimately keep DRAM traffic below them",
			 (double)a->weights / 1e6, a->llc_statement);
		return;
	}
	list_instances(inst, sizeof(inst), instances, n_instances);
	out->ratio = measured_bytes / (double)a->floor;
	if (out->ratio < MW_PLAUSIBLE_LOW) {
		out->verdict = MW_VERDICT_IMPLAUSIBLE;
		snprintf(out->text, sizeof(out->text),
			 "IMPLAUSIBLE: %.1f MB/token read from DRAM is %.2fx the analytic floor of "
			 "%.1f MB/token (%.1f MB of weights per decode step minus at most %.1f MB "
			 "that can stay cache-resident; %s). A decode step must stream those weights "
			 "from DRAM, so the counters probably missed memory controllers: counted "
			 "only %s",
			 measured_bytes / 1e6, out->ratio, (double)a->floor / 1e6,
			 (double)a->weights / 1e6, (double)a->llc / 1e6, a->llc_statement, inst);
	} else if (out->ratio > MW_PLAUSIBLE_HIGH) {
		out->verdict = MW_VERDICT_EXCESS;
		snprintf(out->text, sizeof(out->text),
			 "flagged: %.1f MB/token is %.2fx the analytic floor of %.1f MB/token: more "
			 "than %.1fx means traffic from elsewhere (other processes, the KV cache "
			 "(%.1f MB read at this position), write-allocate or prefetch overfetch); "
			 "counted %s",
			 measured_bytes / 1e6, out->ratio, (double)a->floor / 1e6, MW_PLAUSIBLE_HIGH,
			 (double)a->kv_read / 1e6, inst);
	} else {
		out->verdict = MW_VERDICT_PLAUSIBLE;
		snprintf(out->text, sizeof(out->text),
			 "plausible: %.1f MB/token is %.2fx the analytic floor of %.1f MB/token "
			 "(%s); counted %s",
			 measured_bytes / 1e6, out->ratio, (double)a->floor / 1e6, a->llc_statement,
			 inst);
	}
}

void mw_roofline_compute(const struct mw_analytic *a, const struct mw_roofline_inputs *in,
			 struct mw_roofline *out)
{
	out->max_tok_s_bw = isnan(in->bw_gbps) || a->total == 0
				    ? NAN : in->bw_gbps * 1e9 / (double)a->total;
	out->max_tok_s_compute = isnan(in->peak_flops) || a->flops <= 0
					 ? NAN : in->peak_flops / a->flops;
	if (isnan(out->max_tok_s_bw) && isnan(out->max_tok_s_compute)) {
		out->max_tok_s = NAN;
		out->bound = "none";
	} else if (isnan(out->max_tok_s_compute) ||
		   (!isnan(out->max_tok_s_bw) && out->max_tok_s_bw <= out->max_tok_s_compute)) {
		out->max_tok_s = out->max_tok_s_bw;
		out->bound = "memory";
	} else {
		out->max_tok_s = out->max_tok_s_compute;
		out->bound = "compute";
	}
	out->headroom = in->measured_tok_s > 0 ? out->max_tok_s / in->measured_tok_s : NAN;
	out->dram_efficiency = isnan(in->measured_bytes) || a->total == 0
				       ? NAN : in->measured_bytes / (double)a->total;
}

void mw_roofline_batch(const struct mw_analytic *a, const struct mw_roofline_inputs *in, int n,
		       struct mw_roofline_point *out)
{
	mw_analytic_batch(a, n, &out->b);
	out->tok_s_memory = isnan(in->bw_gbps) ? NAN : in->bw_gbps * 1e9 / out->b.bytes;
	out->tok_s_compute = isnan(in->peak_flops) || a->flops <= 0 ? NAN
								     : in->peak_flops / a->flops;
	bool mem = !isnan(out->tok_s_memory), cmp = !isnan(out->tok_s_compute);
	out->bound = !mem && !cmp ? "none"
		     : !cmp || (mem && out->tok_s_memory <= out->tok_s_compute) ? "memory"
										   : "compute";
	out->tok_s = !strcmp(out->bound, "memory") ? out->tok_s_memory
		     : !strcmp(out->bound, "compute") ? out->tok_s_compute : NAN;
}

static void cell(FILE *f, double v, int prec, const char *unit)
{
	if (isnan(v))
		fputs(" n/a |", f);
	else
		fprintf(f, " %.*f%s |", prec, v, unit);
}

void mw_roofline_batch_print(FILE *f, const struct mw_analytic *a,
			     const struct mw_roofline_inputs *in, const int *ns, size_t count)
{
	struct mw_roofline_point p0;
	fprintf(f, "\n### Batched decode: the predicted curve (analytic, MB = 10^6 bytes)\n\n"
		   "| N | weights MB/token | KV MB/token | MB/token | GFLOP/step | memory roof "
		   "tok/s | compute roof tok/s | predicted tok/s | bound | speedup vs N=%d |\n"
		   "|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n", ns[0]);
	mw_roofline_batch(a, in, ns[0], &p0);
	for (size_t i = 0; i < count; i++) {
		struct mw_roofline_point p;
		mw_roofline_batch(a, in, ns[i], &p);
		fprintf(f, "| %d |", ns[i]);
		cell(f, p.b.weight_bytes / 1e6, 3, "");
		cell(f, p.b.kv_bytes / 1e6, 4, "");
		cell(f, p.b.bytes / 1e6, 3, "");
		cell(f, p.b.step_flops / 1e9, 3, "");
		cell(f, p.tok_s_memory, 1, "");
		cell(f, p.tok_s_compute, 1, "");
		cell(f, p.tok_s, 1, "");
		fprintf(f, " %s |", p.bound);
		/* Without roofs the speedup is the memory-bound one: bytes per token fall. */
		cell(f, isnan(p.tok_s) ? p0.b.bytes / p.b.bytes : p.tok_s / p0.tok_s, 2, "x");
		fputc('\n', f);
	}
	fprintf(f, "\nWeights (less the embedding, read once per token) are shared by the N "
		   "sequences of a step; the KV cache is each sequence's own; FLOPs per token do not "
		   "change, so the compute roof is the same for every N.%s\n",
		isnan(in->bw_gbps) && isnan(in->peak_flops)
			? " No roof is known: the speedup column is the memory-bound one, MB/token "
			  "at N=1 over MB/token at N."
			: "");
}

/* ---- A result record's view ------------------------------------------------------------------ */

bool mw_path_is_record(const char *path)
{
	size_t n = strlen(path);
	if (n > 5 && !strcmp(path + n - 5, ".json"))
		return true;
	int rc, c = ' ';
	FILE *f = mw_file_fopen(path, "file", "", MW_FILE_ANY_SIZE, &rc, NULL);
	while (f && (c = fgetc(f)) != EOF && (c == ' ' || c == '\n' || c == '\t' || c == '\r'))
		;
	if (f)
		fclose(f);
	return c == '{';
}


static double num_at(const json_t *o, const char *path)
{
	const json_t *v = mw_json_at(o, path);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str_at(const json_t *o, const char *path)
{
	return json_string_value(mw_json_at(o, path));
}

/* The largest cache in machine.caches (the records' sysfs copy). */
static uint64_t record_llc(const json_t *doc, int *level)
{
	const json_t *caches = mw_json_at(doc, "machine.caches"), *c;
	uint64_t best = 0;
	size_t i;
	*level = 0;
	json_array_foreach(caches, i, c) {
		const json_t *sz = json_object_get(c, "size_bytes");
		if (json_is_integer(sz) && (uint64_t)json_integer_value(sz) > best) {
			best = (uint64_t)json_integer_value(sz);
			*level = (int)json_integer_value(json_object_get(c, "level"));
		}
	}
	return best;
}

/* Mean decode position over the measured runs: prompt tokens + (decode tokens - 1) / 2. */
static void record_pos(const json_t *doc, struct mw_record_view *v)
{
	const json_t *runs = json_object_get(doc, "runs"), *r;
	size_t i;
	json_array_foreach(runs, i, r) {
		if (json_is_true(json_object_get(r, "warmup")))
			continue;
		double pre = num_at(r, "prefill.tokens"), dec = num_at(r, "decode.tokens");
		double steps = num_at(r, "decode.steps");
		if (isnan(pre) || isnan(dec) || dec < 1)
			continue;
		/* A batch's windows count every sequence's tokens; each sits at its own
		 * positions (engine.batch sequences of the same lengths). */
		const json_t *nb = json_object_get(json_object_get(doc, "engine"), "batch");
		double batch = json_is_integer(nb) ? (double)json_integer_value(nb) : 1;
		v->tokens_per_pass = steps > 0 ? dec / steps : 1;
		pre /= batch;
		dec /= batch;
		v->pos = (int)(pre + (dec - 1) / 2);
		snprintf(v->pos_statement, sizeof(v->pos_statement),
			 "position %d: the middle of the decode window (%.0f prompt + %.0f decode "
			 "tokens)", v->pos, pre, dec);
		return;
	}
	double tokens = num_at(doc, "summary.tokens_measured"), runs_n = num_at(doc, "summary.runs_measured");
	int dec = !isnan(tokens) && runs_n > 0 ? (int)(tokens / runs_n) : 0;
	v->pos = dec > 0 ? (dec - 1) / 2 : 0;
	snprintf(v->pos_statement, sizeof(v->pos_statement),
		 "position %d: the middle of %d decode tokens; the record gives no prompt length, "
		 "so the prompt is taken as empty (the KV share is then a lower bound)",
		 v->pos, dec);
}

int mw_record_view_load(const json_t *doc, const char *source, struct mw_record_view *v,
			struct eng_tensor_table **table, struct mw_error *err)
{
	struct eng_error eerr;
	const char *path = str_at(doc, "model.path"), *name = str_at(doc, "model.name");
	int rc, level;
	struct stat st;

	*table = NULL;
	memset(v, 0, sizeof(*v));
	v->reference = str_at(doc, "kind") && !strcmp(str_at(doc, "kind"), "reference");
	v->synthetic = json_is_true(mw_json_at(doc, "model.synthetic"));
	eng_error_clear(&eerr);
	if (path && stat(path, &st) == 0) {
		if ((rc = eng_tensors_from_file(path, table, &eerr)))
			return mw_error_set(err, rc, eerr.source, "model.path", "%s", eerr.text);
	} else if (name && (rc = eng_tensors_from_shape(name, table, &eerr)) == 0) {
		/* a description of the file, for a record whose model is not at hand */
	} else {
		return mw_error_set(err, -ENOENT, source, path ? "model.path" : "model.name",
				    "the model file %s is not here and no built-in shape matches "
				    "'%s': give the model file instead of the record",
				    path ? path : "(none recorded)", name ? name : "?");
	}
	record_pos(doc, v);
	v->llc_bytes = record_llc(doc, &level);
	if (v->llc_bytes)
		snprintf(v->llc_source, sizeof(v->llc_source), "the record's machine.caches, L%d",
			 level);

	v->measured_tok_s = num_at(doc, "summary.metrics.tok_per_s.mean");
	v->measured_bytes = NAN;
	/* The bytes MB/token counts: reads, or the total where the backend has no read/write
	 * split (counters.dram.mb_per_token_basis). Either is checked against the analytic read
	 * bytes; a total can only be larger, so a total below the floor is still IMPLAUSIBLE. */
	const char *basis = str_at(doc, "counters.dram.mb_per_token_basis");
	bool total = basis && !strcmp(basis, "total");
	const char *bytes_key = total ? "summary.metrics.dram_total_bytes_per_token"
				      : "summary.metrics.dram_read_bytes_per_token";
	const json_t *bytes = mw_json_at(doc, bytes_key);
	const json_t *mb = mw_json_at(doc, total ? "summary.metrics.dram_total_MB_per_token"
					 : "summary.metrics.dram_read_MB_per_token");
	if (json_is_true(json_object_get(bytes, "measured"))) {
		v->measured_bytes = num_at(bytes, "mean");
		snprintf(v->measured_note, sizeof(v->measured_note), "%s.mean", bytes_key);
	} else if (json_is_true(json_object_get(mb, "measured"))) {
		const char *unit = str_at(mb, "unit");
		double mean = num_at(mb, "mean");
		bool ambiguous = unit && strstr(unit, "2^20") && strstr(unit, "10^6");
		/* When the source does not say, the larger reading (MiB) is checked: an
		 * IMPLAUSIBLE verdict then holds under either. */
		v->measured_bytes = mean * (ambiguous ? 1048576.0 : 1e6);
		if (ambiguous)
			snprintf(v->measured_note, sizeof(v->measured_note),
				 "%.6g MB/token as published, unit not stated: checked as MiB "
				 "(%.1f MB), the larger reading; read as 10^6 bytes it is %.1f MB",
				 mean, mean * 1.048576, mean);
		else
			snprintf(v->measured_note, sizeof(v->measured_note),
				 "%.6g MB/token (10^6 bytes)", mean);
	} else {
		const json_t *why = json_object_get(mb ? mb : bytes, "reason");
		snprintf(v->measured_note, sizeof(v->measured_note), "%s",
			 json_is_string(why) ? json_string_value(why)
			 : str_at(doc, "counters.dram.reason") ? str_at(doc, "counters.dram.reason")
							       : "the record has no DRAM figure");
	}
	const char *layer = str_at(doc, "counters.dram.layer");
	v->simulated = layer && !strcmp(layer, "sim");
	/* The calibrated estimate, where a calibration applied: the record derived it (its
	 * summary's dram_MB_per_token_calibrated), with the calibration's error beside it. */
	const json_t *cal = mw_json_at(doc, "summary.metrics.dram_MB_per_token_calibrated");
	v->calibrated_bytes = v->cal_error_pct = NAN;
	if (json_is_true(json_object_get(cal, "measured")) && !isnan(v->measured_bytes)) {
		v->calibrated_bytes = num_at(cal, "mean") * 1e6;
		v->cal_error_pct = num_at(doc, "counters.dram.calibration_error_pct");
	}
	const json_t *inst = mw_json_at(doc, "counters.dram.instances"), *e;
	size_t i;
	json_array_foreach(inst, i, e) {
		if (json_is_string(e) && v->n_instances < sizeof(v->instances) / sizeof(v->instances[0]))
			v->instances[v->n_instances++] = json_string_value(e);
	}
	/* The protocol's roofline inputs, where it gives them, are what its author measured
	 * the machine at; they come before the run's own probe and the record's caches. */
	double proto_bw = num_at(doc, "protocol.document.roofline.bandwidth_gbps");
	double proto_llc = num_at(doc, "protocol.document.roofline.llc_bytes");
	if (!isnan(proto_llc) && proto_llc > 0) {
		v->llc_bytes = (uint64_t)proto_llc;
		snprintf(v->llc_source, sizeof(v->llc_source),
			 "the protocol's roofline.llc_bytes");
	}
	v->bw_gbps = num_at(doc, "drift.before_gbps");
	if (!isnan(proto_bw) && proto_bw > 0) {
		v->bw_gbps = proto_bw;
		snprintf(v->bw_source, sizeof(v->bw_source), "the protocol's roofline.bandwidth_gbps");
	} else if (!isnan(v->bw_gbps)) {
		snprintf(v->bw_source, sizeof(v->bw_source), "the record's bandwidth probe (%s)",
			 str_at(doc, "drift.method") ? str_at(doc, "drift.method") : "drift.before_gbps");
	}
	return 0;
}

/* ---- The chart ------------------------------------------------------------------------------- */

int mw_gnuplot_charts(const char *dir, const char *vars, const char *const *scripts, size_t n,
		      struct mw_error *err)
{
	static const char *const formats[] = { "png", "svg" };
	char path[4200];
	size_t len = strlen(vars) + 1;
	for (size_t i = 0; i < n; i++) {
		const struct mw_embedded *e = mw_embedded_find(scripts[i]);
		snprintf(path, sizeof(path), "%s/%s", dir, scripts[i]);
		FILE *f = fopen(path, "w");
		if (!e || !f || fwrite(e->data, 1, e->len, f) != e->len) {
			if (f)
				fclose(f);
			return mw_error_set(err, -EIO, path, "", "cannot write the gnuplot script");
		}
		if (fclose(f))
			return mw_error_set(err, -EIO, path, "", "cannot write the gnuplot script");
		len += 2 * (strlen(scripts[i]) + 40);
	}
	/* One process for every chart and format: a gnuplot start (its libraries and fonts) was
	 * most of a small chart's cost, and report --plot started ten (issue 44). `reset`
	 * between charts returns every setting to its default; variables (vars) stay. */
	char *cmd = malloc(len);
	if (!cmd)
		return mw_error_set(err, -ENOMEM, "gnuplot", "", "out of memory");
	size_t k = (size_t)snprintf(cmd, len, "%s", vars);
	for (size_t i = 0; i < n; i++)
		for (size_t f = 0; f < 2; f++)
			k += (size_t)snprintf(cmd + k, len - k, "; fmt='%s'; load '%s'; reset",
					      formats[f], scripts[i]);
	pid_t pid = fork();
	if (pid < 0) {
		free(cmd);
		return mw_error_set(err, -errno, "gnuplot", "", "cannot fork: %s", strerror(errno));
	}
	if (pid == 0) {
		if (chdir(dir))
			_exit(126);
		execlp("gnuplot", "gnuplot", "-e", cmd, (char *)NULL);
		_exit(127);
	}
	free(cmd);
	int st = 0;
	if (waitpid(pid, &st, 0) < 0)
		return mw_error_set(err, -errno, "gnuplot", "", "wait failed: %s", strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		return mw_error_set(err, -ENOENT, "gnuplot", "", "gnuplot is not installed: "
				    "scripts/bootstrap.sh installs it (gnuplot-nox)");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return mw_error_set(err, -EIO, dir, "", "gnuplot failed on %s%s (its messages "
				    "are above)", scripts[0], n > 1 ? " or the charts after it" : "");
	return 0;
}

void mw_gnuplot_quote(char *out, size_t n, const char *s)
{
	size_t j = 0;
	if (n < 3)
		return;
	out[j++] = '\'';
	for (; *s && j + 3 < n; s++) {
		if (*s == '\'')
			out[j++] = '\'';
		out[j++] = *s;
	}
	out[j++] = '\'';
	out[j] = '\0';
}

int mw_roofline_plot(const struct mw_analytic *a, const struct mw_roofline_inputs *in,
		     const char *label, const char *dir, FILE *log, struct mw_error *err)
{
	char path[4200], qlabel[1300], vars[4096];
	double ai = a->flops / (double)a->total; /* FLOPs per byte of the analytic step */
	int rc;

	if (mkdir(dir, 0777) && errno != EEXIST)
		return mw_error_set(err, -errno, dir, "", "cannot create: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/roofline.dat", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return mw_error_set(err, -errno, path, "", "cannot write: %s", strerror(errno));
	/* Points: label, FLOPs per byte, attained GFLOP/s. The analytic point sits on the roof;
	 * the measured one at measured tok/s, with the measured bytes when there are some. */
	fprintf(f, "# label flops_per_byte gflops\n");
	struct mw_roofline r;
	mw_roofline_compute(a, in, &r);
	if (!isnan(r.max_tok_s))
		fprintf(f, "\"roof (analytic step)\" %.9g %.9g\n", ai, r.max_tok_s * a->flops / 1e9);
	if (in->measured_tok_s > 0) {
		double mai = isnan(in->measured_bytes) ? ai : a->flops / in->measured_bytes;
		fprintf(f, "\"measured%s\" %.9g %.9g\n",
			isnan(in->measured_bytes) ? " (analytic bytes)" : " (DRAM bytes)", mai,
			in->measured_tok_s * a->flops / 1e9);
	}
	if (fclose(f))
		return mw_error_set(err, -EIO, path, "", "cannot write");
	mw_gnuplot_quote(qlabel, sizeof(qlabel), label);
	snprintf(vars, sizeof(vars), "label=%s; bw=%.9g; peak=%.9g; ai=%.9g", qlabel,
		 isnan(in->bw_gbps) ? 0 : in->bw_gbps,
		 isnan(in->peak_flops) ? 0 : in->peak_flops / 1e9, ai);
	const char *const script[] = { "roofline.gp" };
	if ((rc = mw_gnuplot_charts(dir, vars, script, 1, err)))
		return rc;
	if (log)
		fprintf(log, "memwall roofline: wrote %s/roofline.png\nmemwall roofline: wrote "
			"%s/roofline.svg\n", dir, dir);
	return 0;
}

int mw_record_model_check(const json_t *doc, const char *source, const char *model_path,
			  bool hash, const struct eng_tensor_table *t, struct mw_error *err)
{
	const json_t *m = json_object_get(doc, "model");
	const char *name = json_string_value(json_object_get(m, "name"));
	const json_t *fb = json_object_get(m, "file_bytes");
	struct stat st;
	if (model_path && json_is_integer(fb) && stat(model_path, &st) == 0 &&
	    (json_int_t)st.st_size != json_integer_value(fb))
		return mw_error_set(err, -EINVAL, source, "model.file_bytes",
				    "the record measured %s, a file of %lld bytes; %s has %lld: give "
				    "this model's record, or the record's model", name ? name : "?",
				    (long long)json_integer_value(fb), model_path,
				    (long long)st.st_size);
	const char *want = json_string_value(json_object_get(m, "sha256"));
	if (model_path && hash && want && strlen(want) == 64) {
		char got[65];
		int rc = mw_sha256_file_cached(model_path, got, NULL, NULL, err);
		if (rc)
			return rc;
		if (strcmp(got, want))
			return mw_error_set(err, -EINVAL, source, "model.sha256",
					    "the record measured %s (sha256 %.16s...), not %s "
					    "(sha256 %.16s...): give this model's record, or the "
					    "record's model", name ? name : "?", want, model_path, got);
	}
	const json_t *shape = json_object_get(m, "shape");
	if (!t || !json_is_object(shape))
		return 0;
	const struct {
		const char *key;
		int have;
	} f[] = { { "dim", t->info.dim }, { "hidden_dim", t->info.hidden_dim },
		  { "n_layers", t->info.n_layers }, { "n_heads", t->info.n_heads },
		  { "n_kv_heads", t->info.n_kv_heads }, { "vocab_size", t->info.vocab_size } };
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		const json_t *v = json_object_get(shape, f[i].key);
		if (json_is_integer(v) && json_integer_value(v) != f[i].have) {
			char field[64];
			snprintf(field, sizeof(field), "model.shape.%s", f[i].key);
			return mw_error_set(err, -EINVAL, source, field,
					    "the record measured %s with %s %lld; %s has %s %d: "
					    "give this model's record, or the record's model",
					    name ? name : "?", f[i].key,
					    (long long)json_integer_value(v), t->source, f[i].key,
					    f[i].have);
		}
	}
	return 0;
}

/* A JSON number, or null for NaN (JSON has none). */
static json_t *jnum(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

json_t *mw_roofline_block(const json_t *doc, const char *source)
{
	struct mw_record_view v;
	struct eng_tensor_table *t = NULL;
	struct mw_error err;
	struct mw_analytic a;
	mw_error_clear(&err);
	if (mw_record_view_load(doc, source, &v, &t, &err))
		return json_pack("{s:b, s:s}", "computed", 0, "reason", err.text);
	struct mw_analytic_options ao = { .pos = v.pos, .llc_bytes = v.llc_bytes,
					  .llc_source = v.llc_source };
	if (mw_analytic_compute(t, &ao, &a)) {
		eng_tensor_table_free(t);
		return json_pack("{s:b, s:s}", "computed", 0, "reason", "the model has no layers");
	}
	/* Figures per generated token: a pass of a batch or a verification shares its weights. */
	mw_analytic_per_pass(&a, v.tokens_per_pass);
	struct mw_roofline_inputs in = { .bw_gbps = v.bw_gbps, .peak_flops = NAN,
					 .measured_tok_s = v.measured_tok_s,
					 .measured_bytes = v.measured_bytes };
	snprintf(in.bw_source, sizeof(in.bw_source), "%s",
		 isnan(v.bw_gbps) ? "none: the protocol gives no roofline.bandwidth_gbps and "
				    "the run's drift probe did not run" : v.bw_source);
	struct mw_roofline r;
	struct mw_plausibility pl;
	mw_roofline_compute(&a, &in, &r);
	mw_plausibility_check(&a, v.measured_bytes, v.instances, v.n_instances, &pl);
	/* The compute roof is not measured during a run (it would take the cores the run
	 * measures): the roof here is the bandwidth roof, memory-bound by construction. */
	json_t *o = json_pack(
		"{s:b, s:s, s:i, s:s, s:I, s:I, s:I, s:I, s:s, s:o, s:s, s:o, s:o, s:o, s:o, s:o,"
		" s:s, s:{s:s, s:o, s:s}}",
		"computed", 1, "model", t->source, "position", v.pos, "position_statement",
		v.pos_statement, "analytic_bytes_per_token", (json_int_t)a.total,
		"weights_bytes_per_token", (json_int_t)a.weights, "floor_bytes_per_token",
		(json_int_t)a.floor, "llc_bytes", (json_int_t)a.llc, "llc_statement",
		a.llc_statement, "bandwidth_gbps", jnum(in.bw_gbps), "bandwidth_source",
		in.bw_source, "max_tok_s", jnum(r.max_tok_s_bw), "measured_tok_s",
		jnum(v.measured_tok_s), "headroom", jnum(r.headroom),
		"measured_bytes_per_token", jnum(v.measured_bytes), "dram_efficiency",
		jnum(r.dram_efficiency), "measured_note", v.measured_note, "plausibility",
		"verdict", mw_verdict_name(pl.verdict), "ratio", jnum(pl.ratio), "text",
		pl.text);
	/* A model whose weights stay in the last-level cache streams nothing from DRAM per token
	 * in the steady state (floor 0): the bandwidth roof does not bound it, and a headroom
	 * below 1 would read as "faster than possible". Say so instead of giving a number. */
	if (o && a.floor == 0 && !isnan(r.headroom)) {
		json_object_set_new(o, "headroom", json_null());
		json_object_set_new(o, "headroom_reason",
				    json_string("the weights fit in the last-level cache (floor 0 "
						"DRAM bytes per token): the DRAM bandwidth roof does "
						"not bound this model"));
	}
	eng_tensor_table_free(t);
	return o;
}
