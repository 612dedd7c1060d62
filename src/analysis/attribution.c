/* src/analysis/attribution.c: weights / KV / remainder per decode token (attribution.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "attribution.h"
#include "roofline.h"

static const char *const phase_names[MW_PHASE_COUNT] = {
	[MW_PHASE_ATTENTION] = "attention", [MW_PHASE_FFN] = "ffn",
	[MW_PHASE_CLASSIFIER] = "classifier",
};

const char *mw_phase_name(enum mw_phase p)
{
	return (unsigned)p < MW_PHASE_COUNT ? phase_names[p] : "?";
}

/* One run's split: kv per position from consecutive tokens, weights from the first. */
static bool run_split(const struct mw_attribution_run *run, double *weights, double *kv_pos,
		      double *kv_sum, size_t *n, char *why, size_t wn)
{
	const int64_t *eng = run->engine_bytes;
	int64_t pre = run->prefill_tokens;
	size_t len = run->n_tokens;
	if (len < 2) {
		snprintf(why, wn, "needs at least two decode tokens per run");
		return false;
	}
	double e0 = (double)eng[0];
	double k = (double)eng[1] - e0;
	for (size_t i = 1; i < len; i++)
		if ((double)eng[i] - (double)eng[i - 1] != k || k < 0) {
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
		*kv_sum += k * (double)(pre + (int64_t)i + 2);
	*n += len;
	return true;
}

void mw_attribution_compute(const struct mw_attribution_input *in, struct mw_attribution *out)
{
	size_t n = 0;
	double kv_sum = 0;
	memset(out, 0, sizeof(*out));
	out->weights = out->kv = out->dram_bytes = out->remainder = NAN;
	snprintf(out->engine_reason, sizeof(out->engine_reason), "no complete measured run with "
		 "engine-accounted bytes (a reference record has none)");
	for (size_t i = 0; i < in->n_runs; i++) {
		double w, k;
		if (!run_split(&in->runs[i], &w, &k, &kv_sum, &n, out->engine_reason,
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

	if (in->dram_read) {
		out->dram = true;
		out->dram_bytes = in->dram_read_mean;
		if (in->dram_write)
			out->dram_bytes += in->dram_write_mean;
		out->remainder = out->engine ? out->dram_bytes - out->weights - out->kv : NAN;
	} else {
		snprintf(out->dram_reason, sizeof(out->dram_reason), "DRAM not measured: %s",
			 in->dram_reason ? in->dram_reason : "the record has no DRAM figure");
	}
}

/* `memwall run --phases=layers`: DRAM bytes per decode token of each layer's attention and
 * FFN, over the measured runs. */
static void print_layers(FILE *f, const struct mw_attribution_input *in, double tokens,
			 bool dram)
{
	double sum[MW_LAYER_FIGURES][256] = { { 0 } };
	size_t n_layers = 0, l;
	for (size_t i = 0; i < in->n_runs; i++) {
		const struct mw_attribution_run *run = &in->runs[i];
		for (l = 0; l < run->n_layers && l < 256; l++) {
			n_layers = l + 1 > n_layers ? l + 1 : n_layers;
			dram &= run->layers[l].dram;
			for (int k = 0; k < MW_LAYER_FIGURES; k++)
				sum[k][l] += (double)run->layers[l].bytes[k];
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
		fprintf(f, "| %zu | %.3f | %.3f | %.3f | %.3f |\n", l,
			sum[MW_LAYER_ATTN_READ][l] / tokens / 1e6,
			sum[MW_LAYER_ATTN_WRITE][l] / tokens / 1e6,
			sum[MW_LAYER_FFN_READ][l] / tokens / 1e6,
			sum[MW_LAYER_FFN_WRITE][l] / tokens / 1e6);
}

/* `memwall run --phases`: bytes per decode token by engine phase, over the measured runs. */
static void print_phases(FILE *f, const struct mw_attribution_input *in)
{
	double eng[MW_PHASE_COUNT] = { 0 }, rd[MW_PHASE_COUNT] = { 0 };
	double wr[MW_PHASE_COUNT] = { 0 }, tokens = 0;
	bool any = false, dram = true;
	for (size_t i = 0; i < in->n_runs; i++) {
		const struct mw_attribution_run *run = &in->runs[i];
		if (!run->phases)
			continue;
		any = true;
		tokens += (double)run->decode_tokens;
		for (int k = 0; k < MW_PHASE_COUNT; k++) {
			eng[k] += (double)run->phase[k].engine_bytes;
			dram &= run->phase[k].dram;
			rd[k] += (double)run->phase[k].dram_read;
			wr[k] += (double)run->phase[k].dram_write;
		}
	}
	if (!any || tokens <= 0)
		return;
	fprintf(f, "\nBy engine phase (read at its markers; engine-accounted bytes are weights and "
		   "KV; DRAM is gross, before the idle baseline):\n\n| phase | engine MB/token | "
		   "DRAM read MB/token | DRAM written MB/token |\n|---|---:|---:|---:|\n");
	for (int k = 0; k < MW_PHASE_COUNT; k++) {
		if (dram)
			fprintf(f, "| %s | %.3f | %.3f | %.3f |\n", phase_names[k],
				eng[k] / tokens / 1e6, rd[k] / tokens / 1e6, wr[k] / tokens / 1e6);
		else
			fprintf(f, "| %s | %.3f | not measured | not measured |\n", phase_names[k],
				eng[k] / tokens / 1e6);
	}
	print_layers(f, in, tokens, dram);
}

void mw_attribution_print_md(FILE *f, const struct mw_attribution_input *in,
			     const char *dram_note)
{
	/* A simulated PMU's counts are never called measured (counters.dram.layer "sim"). */
	bool sim = in->simulated;
	struct mw_attribution a;
	mw_attribution_compute(in, &a);
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
	print_phases(f, in);
}

int mw_attribution_plot(const struct mw_attribution_input *in, const char *dir, FILE *log,
			struct mw_error *err)
{
	struct mw_attribution a;
	char path[4200], vars[1024];
	mw_attribution_compute(in, &a);
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
	bool sim = in->simulated;
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
