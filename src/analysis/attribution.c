/* src/analysis/attribution.c: weights / KV / remainder per decode token (attribution.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "attribution.h"
#include "roofline.h"

static bool measured_run(const json_t *run)
{
	return !json_is_true(json_object_get(run, "warmup")) &&
	       json_is_true(json_object_get(run, "complete"));
}

/* One run's split: kv per position from consecutive tokens, weights from the first. */
static bool run_split(const json_t *run, double *weights, double *kv_pos, double *kv_sum,
		      size_t *n, char *why, size_t wn)
{
	const json_t *eng = json_object_get(json_object_get(run, "tokens"), "engine_bytes");
	json_int_t pre = json_integer_value(json_object_get(json_object_get(run, "prefill"), "tokens"));
	size_t len = json_array_size(eng);
	if (len < 2) {
		snprintf(why, wn, "needs at least two decode tokens per run");
		return false;
	}
	double e0 = (double)json_integer_value(json_array_get(eng, 0));
	double k = (double)json_integer_value(json_array_get(eng, 1)) - e0;
	for (size_t i = 1; i < len; i++)
		if ((double)json_integer_value(json_array_get(eng, i)) -
			    (double)json_integer_value(json_array_get(eng, i - 1)) != k ||
		    k < 0) {
			snprintf(why, wn, "the engine bytes do not grow by a constant KV share per "
				 "position (token %zu), so weights and KV cannot be told apart", i);
			return false;
		}
	/* Decode token i runs at position pre + i: it reads pre + i + 1 cached positions and
	 * writes one. */
	*kv_pos = k;
	*weights = e0 - k * (double)(pre + 2);
	if (*weights <= 0) {
		snprintf(why, wn, "the engine bytes leave no weights (prefill length not recorded?)");
		return false;
	}
	for (size_t i = 0; i < len; i++)
		*kv_sum += k * (double)(pre + (json_int_t)i + 2);
	*n += len;
	return true;
}

void mw_attribution_compute(const json_t *doc, struct mw_attribution *out)
{
	const json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	const json_t *run;
	size_t i, n = 0;
	double kv_sum = 0;
	memset(out, 0, sizeof(*out));
	out->weights = out->kv = out->dram_bytes = out->remainder = NAN;
	snprintf(out->engine_reason, sizeof(out->engine_reason), "no complete measured run with "
		 "engine-accounted bytes (a reference record has none)");
	json_array_foreach(json_object_get(doc, "runs"), i, run) {
		double w, k;
		if (!measured_run(run))
			continue;
		if (!run_split(run, &w, &k, &kv_sum, &n, out->engine_reason,
			       sizeof(out->engine_reason))) {
			out->engine = false;
			break;
		}
		out->engine = true;
		out->weights = w;
		out->kv_per_position = k;
	}
	if (out->engine)
		out->kv = kv_sum / (double)n;
	else
		out->weights = NAN;

	const json_t *rd = json_object_get(m, "dram_read_bytes_per_token");
	const json_t *wr = json_object_get(m, "dram_write_bytes_per_token");
	if (json_is_true(json_object_get(rd, "measured"))) {
		out->dram = true;
		out->dram_bytes = json_number_value(json_object_get(rd, "mean"));
		if (json_is_true(json_object_get(wr, "measured")))
			out->dram_bytes += json_number_value(json_object_get(wr, "mean"));
		out->remainder = out->engine ? out->dram_bytes - out->weights - out->kv : NAN;
	} else {
		const char *why = json_string_value(json_object_get(rd, "reason"));
		if (!why)
			why = json_string_value(json_object_get(json_object_get(
				json_object_get(doc, "counters"), "dram"), "reason"));
		snprintf(out->dram_reason, sizeof(out->dram_reason), "DRAM not measured: %s",
			 why ? why : "the record has no DRAM figure");
	}
}

/* The plausibility check (roofline.h) of a record with measured DRAM bytes, against the
 * analytic floor of its model (the file, or a built-in description of it). */
static void print_plausibility(FILE *f, const json_t *doc)
{
	struct mw_record_view v;
	struct eng_tensor_table *t = NULL;
	struct mw_error err;
	struct mw_analytic a;
	struct mw_plausibility p;
	mw_error_clear(&err);
	if (mw_record_view_load(doc, "", &v, &t, &err)) {
		if (json_is_true(json_object_get(json_object_get(json_object_get(doc, "counters"),
								 "dram"), "measured")))
			fprintf(f, "\nPlausibility: not checked: %s\n", err.text);
		return;
	}
	struct mw_analytic_options o = { .pos = v.pos, .llc_bytes = v.llc_bytes,
					 .llc_source = v.llc_source };
	if (!isnan(v.measured_bytes) && !mw_analytic_compute(t, &o, &a)) {
		mw_plausibility_check(&a, v.measured_bytes, v.instances, v.n_instances, &p);
		fprintf(f, "\nPlausibility of the measured DRAM bytes (%s): %s\n", v.measured_note,
			p.text);
	}
	eng_tensor_table_free(t);
}

/* `memwall run --phases=layers`: DRAM bytes per decode token of each layer's attention and
 * FFN, over the measured runs. */
static void print_layers(FILE *f, const json_t *doc, double tokens, bool dram)
{
	static const char *const keys[4] = { "attention_dram_read_bytes",
					      "attention_dram_write_bytes", "ffn_dram_read_bytes",
					      "ffn_dram_write_bytes" };
	double sum[4][256] = { { 0 } };
	size_t n_layers = 0, i, l;
	const json_t *run, *e;
	json_array_foreach(json_object_get(doc, "runs"), i, run) {
		const json_t *layers = json_object_get(json_object_get(json_object_get(run, "decode"),
									 "phases"), "layers");
		if (!measured_run(run))
			continue;
		json_array_foreach(layers, l, e) {
			if (l >= 256)
				break;
			n_layers = l + 1 > n_layers ? l + 1 : n_layers;
			for (int k = 0; k < 4; k++)
				sum[k][l] += (double)json_integer_value(json_object_get(e, keys[k]));
		}
	}
	if (!n_layers)
		return;
	if (!dram) {
		fprintf(f, "\nPer layer: not measured (no DRAM readings at the phase markers).\n");
		return;
	}
	fprintf(f, "\n| layer | attention read | attention written | FFN read | FFN written |\n"
		   "|---:|---:|---:|---:|---:|\n");
	for (l = 0; l < n_layers; l++)
		fprintf(f, "| %zu | %.3f | %.3f | %.3f | %.3f |\n", l, sum[0][l] / tokens / 1e6,
			sum[1][l] / tokens / 1e6, sum[2][l] / tokens / 1e6, sum[3][l] / tokens / 1e6);
}

/* `memwall run --phases`: bytes per decode token by engine phase, over the measured runs. */
static void print_phases(FILE *f, const json_t *doc)
{
	static const char *const names[] = { "attention", "ffn", "classifier" };
	double eng[3] = { 0 }, rd[3] = { 0 }, wr[3] = { 0 }, tokens = 0;
	bool any = false, dram = true;
	const json_t *run;
	size_t i;
	json_array_foreach(json_object_get(doc, "runs"), i, run) {
		const json_t *dec = json_object_get(run, "decode");
		const json_t *ph = json_object_get(dec, "phases");
		if (!measured_run(run) || !ph)
			continue;
		any = true;
		tokens += (double)json_integer_value(json_object_get(dec, "tokens"));
		for (int k = 0; k < 3; k++) {
			const json_t *one = json_object_get(ph, names[k]);
			eng[k] += (double)json_integer_value(json_object_get(one, "engine_bytes"));
			const json_t *r = json_object_get(one, "dram_read_bytes");
			const json_t *w = json_object_get(one, "dram_write_bytes");
			dram &= json_is_integer(r) && json_is_integer(w);
			rd[k] += (double)json_integer_value(r);
			wr[k] += (double)json_integer_value(w);
		}
	}
	if (!any || tokens <= 0)
		return;
	fprintf(f, "\nBy engine phase (read at its markers; engine-accounted bytes are weights and "
		   "KV; DRAM is gross, before the idle baseline):\n\n| phase | engine MB/token | "
		   "DRAM read MB/token | DRAM written MB/token |\n|---|---:|---:|---:|\n");
	for (int k = 0; k < 3; k++) {
		if (dram)
			fprintf(f, "| %s | %.3f | %.3f | %.3f |\n", names[k], eng[k] / tokens / 1e6,
				rd[k] / tokens / 1e6, wr[k] / tokens / 1e6);
		else
			fprintf(f, "| %s | %.3f | not measured | not measured |\n", names[k],
				eng[k] / tokens / 1e6);
	}
	print_layers(f, doc, tokens, dram);
}

void mw_attribution_print_md(FILE *f, const json_t *doc, const char *dram_note)
{
	/* A simulated PMU's counts are never called measured (counters.dram.layer "sim"). */
	const char *layer = json_string_value(json_object_get(
		json_object_get(json_object_get(doc, "counters"), "dram"), "layer"));
	bool sim = layer && !strcmp(layer, "sim");
	struct mw_attribution a;
	mw_attribution_compute(doc, &a);
	print_plausibility(f, doc);
	fprintf(f, "\n### Attribution: where each decode token's bytes go (MB = 10^6 bytes)\n\n");
	if (!a.engine) {
		fprintf(f, "Not available: %s.\n", a.engine_reason);
		return;
	}
	fprintf(f, "| part | MB/token | source |\n|---|---:|---|\n");
	fprintf(f, "| weights | %.3f | engine-accounted (tensor shapes), not measured |\n",
		a.weights / 1e6);
	fprintf(f, "| KV cache (read + written) | %.3f | engine-accounted, mean over the decode "
		   "positions (+%.3f MB per position) |\n", a.kv / 1e6, a.kv_per_position / 1e6);
	if (a.dram)
		fprintf(f, "| activations and the rest (remainder) | %.3f | %s DRAM read + "
			   "write (%.3f) minus the two above%s |\n", a.remainder / 1e6,
			sim ? "SIMULATED" : "measured", a.dram_bytes / 1e6, a.remainder < 0
			? "; negative: part of the weights were served from cache" : "");
	else if (dram_note)
		fprintf(f, "| activations and the rest (remainder) | not measured | DRAM not "
			   "measured %s |\n", dram_note);
	else
		fprintf(f, "| activations and the rest (remainder) | not measured | %s |\n",
			a.dram_reason);
	print_phases(f, doc);
}

int mw_attribution_plot(const json_t *doc, const char *dir, FILE *log, struct mw_error *err)
{
	struct mw_attribution a;
	char path[4200], vars[1024];
	mw_attribution_compute(doc, &a);
	if (!a.engine)
		return 0; /* nothing to draw; the table says why */
	if (mkdir(dir, 0777) && errno != EEXIST)
		return mw_error_set(err, -errno, dir, "", "cannot create: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/attribution.dat", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return mw_error_set(err, -errno, path, "", "cannot write: %s", strerror(errno));
	/* Columns: bar label, weights, KV, remainder (MB/token); a remainder below zero is drawn
	 * as zero and said in the title. */
	fprintf(f, "# bar weights_MB kv_MB remainder_MB\n");
	fprintf(f, "\"engine-accounted\" %.6f %.6f 0\n", a.weights / 1e6, a.kv / 1e6);
	/* A simulated PMU's counts are never called measured (counters.dram.layer "sim"). */
	const char *layer = json_string_value(json_object_get(
		json_object_get(json_object_get(doc, "counters"), "dram"), "layer"));
	bool sim = layer && !strcmp(layer, "sim");
	if (a.dram)
		fprintf(f, "\"%s DRAM\" %.6f %.6f %.6f\n", sim ? "SIMULATED" : "measured",
			a.weights / 1e6, a.kv / 1e6, a.remainder > 0 ? a.remainder / 1e6 : 0);
	if (fclose(f))
		return mw_error_set(err, -EIO, path, "", "cannot write");
	snprintf(vars, sizeof(vars), "note='%s%s'",
		 !a.dram ? "remainder not measured: no DRAM counters"
		 : a.remainder < 0 ? "DRAM below weights + KV: part served from cache"
				   : "remainder = DRAM - weights - KV",
		 a.dram && sim ? "; DRAM SIMULATED, not hardware" : "");
	const char *const script[] = { "attribution.gp" };
	int rc = mw_gnuplot_charts(dir, vars, script, 1, err);
	if (rc)
		return rc;
	if (log)
		fprintf(log, "memwall report: wrote %s/attribution.png\nmemwall report: wrote "
			"%s/attribution.svg\n", dir, dir);
	return 0;
}
