/* src/record/report_variants.c: the report of a record of variants (protocols/README.md,
 * Variants): each variant's measured figures beside memwall's analytic prediction, the
 * published claim about batched decode beside both, speculation's acceptance, and AIOS's
 * mechanisms (projection, prediction, measurement: src/analysis/mechanisms.c).
 *
 * Measured MB/token is DRAM's where the record measured it, else engine-accounted, and the
 * table says which. Predictions come from the model's tensor table (analytic.h): never from
 * a measurement, so the two can disagree, which is the point of printing them together. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analytic.h"
#include "embedded.h"
#include "jschema.h"
#include "mechanisms.h"
#include "provenance.h"
#include "record_view.h"
#include "report_variants.h"
#include "roofline.h"
#include "text.h"

/* The claim of issue 17's source, quoted: published notes on the theoretical limits of CPU
 * inference, which rank temporal weight reuse first. */
#define CLAIM "near-2x decode throughput at batch size 2"
#define CLAIM_SOURCE "published notes on the theoretical limits of CPU inference (quoted in " \
		     "memwall issue 17)"

/* Which variant override measures which of AIOS's mechanisms (Model Contract rules): the
 * override at path turns rule on when it is true (value NULL) or equals value. A new
 * mechanism is one row. Each such variant is measured against its "baseline" variant, else
 * the first variant that turns no mechanism on (protocols/README.md, aios-mechanisms). */
static const struct {
	const char *rule, *path, *value;
} mech_keys[] = {
	{ "R1", "engine.sparsity_map", NULL },
	{ "R2", "engine.attention", "blocked" },
	{ "R3", "model.synth.canonical_delta", "split" },
};

struct vrow {
	const char *name;
	const json_t *rec;
	int batch, spec_k;
	double tok_s, mb, eng_mb, acc, tpp;
	bool dram;             /* mb is DRAM's (else engine-accounted) */
	double pred_mb;        /* analytic MB per generated token; NAN: no tensor table */
	const char *mech;      /* the rule the variant's overrides turn on; NULL: none */
	const char *baseline;  /* the variant's "baseline", NULL when it names none */
	/* decode.engine_split over the measured runs, per generated token (NAN: absent) */
	double kv_read, w_unique, weights;
};

static double median(const json_t *rec, const char *metric)
{
	const json_t *m = json_object_get(json_object_get(json_object_get(rec, "summary"),
							  "metrics"), metric);
	const json_t *v = json_object_get(m, "median");
	return json_is_true(json_object_get(m, "measured")) && json_is_number(v)
		? json_number_value(v) : NAN;
}

/* The mean of a figure over the measured runs (the speculation figures are not metrics). */
static double runs_mean(const json_t *rec, const char *fig)
{
	double sum = 0;
	int n = 0;
	size_t i;
	json_t *run;
	json_array_foreach(json_object_get(rec, "runs"), i, run) {
		const json_t *x = json_object_get(json_object_get(run, "figures"), fig);
		if (!json_is_true(json_object_get(run, "warmup")) && json_is_number(x)) {
			sum += json_number_value(x);
			n++;
		}
	}
	return n ? sum / n : NAN;
}

/* The analytic MB per generated token of the variant's step at the decode window's middle
 * (the roofline block's position): batch N shares weights, speculation at the measured
 * acceptance (analytic.h). */
static double predict(const struct vrow *r)
{
	struct mw_record_view view = { 0 };
	struct eng_tensor_table *t = NULL;
	struct mw_analytic a;
	struct mw_error err;
	double mb = NAN;
	if (mw_record_view_load(r->rec, "(variant)", &view, &t, &err) == 0 && t) {
		struct mw_analytic_options o = { .pos = view.pos };
		if (!mw_analytic_compute(t, &o, &a)) {
			struct mw_analytic_batch b;
			mw_analytic_batch(&a, r->batch, &b);
			mb = r->spec_k && !isnan(r->acc)
				? mw_analytic_spec_bytes(&a, r->spec_k, r->acc, NULL) / 1e6
				: b.bytes / 1e6;
		}
	}
	eng_tensor_table_free(t);
	return mb;
}

/* decode.engine_split summed over the measured runs, per generated token. */
static void split_fill(struct vrow *r)
{
	const json_t *run;
	size_t i;
	double kv = 0, wu = 0, w = 0, tok = 0;
	json_array_foreach(json_object_get(r->rec, "runs"), i, run) {
		const json_t *d = json_object_get(run, "decode");
		const json_t *sp = json_object_get(d, "engine_split");
		if (json_is_true(json_object_get(run, "warmup")) || !sp)
			continue;
		kv += (double)json_integer_value(json_object_get(sp, "kv_read"));
		wu += (double)json_integer_value(json_object_get(sp, "weights_unique"));
		w += (double)json_integer_value(json_object_get(sp, "weights"));
		tok += (double)json_integer_value(json_object_get(d, "tokens"));
	}
	r->kv_read = tok > 0 ? kv / tok : NAN;
	r->w_unique = tok > 0 ? wu / tok : NAN;
	r->weights = tok > 0 ? w / tok : NAN;
}

static void row_fill(struct vrow *r, const json_t *v)
{
	const json_t *rec = json_object_get(v, "record"), *ov = json_object_get(v, "overrides");
	const json_t *eng = json_object_get(rec, "engine");
	r->name = json_string_value(json_object_get(v, "name"));
	r->rec = rec;
	r->batch = json_is_integer(json_object_get(eng, "batch"))
		? (int)json_integer_value(json_object_get(eng, "batch")) : 1;
	r->spec_k = (int)json_integer_value(json_object_get(json_object_get(eng, "speculative"),
							    "draft_tokens"));
	r->tok_s = median(rec, "tok_per_s");
	r->eng_mb = median(rec, "engine_MB_per_token");
	r->mb = median(rec, "dram_MB_per_token");
	r->dram = !isnan(r->mb);
	if (!r->dram)
		r->mb = r->eng_mb;
	r->acc = runs_mean(rec, "spec_acceptance");
	r->tpp = runs_mean(rec, "spec_tokens_per_pass");
	r->pred_mb = predict(r);
	r->mech = NULL;
	for (size_t k = 0; k < sizeof(mech_keys) / sizeof(mech_keys[0]); k++) {
		const json_t *x = mw_json_at(ov, mech_keys[k].path);
		if (mech_keys[k].value ? !strcmp(json_string_value(x) ? json_string_value(x) : "",
						 mech_keys[k].value)
				       : json_is_true(x))
			r->mech = mech_keys[k].rule;
	}
	r->baseline = json_string_value(json_object_get(ov, "baseline"));
	split_fill(r);
}

static void fnum(FILE *f, double v, int prec, const char *unit)
{
	if (isnan(v))
		fputs(" n/a |", f);
	else
		fprintf(f, " %.*f%s |", prec, v, unit);
}

/* The first plain variant (no speculation, no mechanism) at batch n; NULL when none. */
static const struct vrow *plain_at(const struct vrow *rows, size_t n_rows, int n)
{
	for (size_t i = 0; i < n_rows; i++)
		if (rows[i].batch == n && !rows[i].spec_k && !rows[i].mech)
			return &rows[i];
	return NULL;
}

static void print_table(FILE *f, const struct vrow *rows, size_t n)
{
	const struct vrow *base = plain_at(rows, n, 1);
	fprintf(f, "\n## Variants (MB = 10^6 bytes; per generated token across the batch)\n\n"
		   "| variant | N | speculation | tok/s (median) | speedup vs N=1 | MB/token "
		   "measured | measured as | engine MB/token | analytic MB/token (prediction) | "
		   "predicted speedup (memory-bound) |\n"
		   "|---|---:|---|---:|---:|---:|---|---:|---:|---:|\n");
	for (size_t i = 0; i < n; i++) {
		const struct vrow *r = &rows[i];
		char spec[32] = "off";
		if (r->spec_k)
			snprintf(spec, sizeof(spec), "lookup K=%d", r->spec_k);
		fprintf(f, "| %s%s%s%s | %d | %s |", mw_esc_md(r->name), r->mech ? " (" : "",
			r->mech ? r->mech : "", r->mech ? ")" : "", r->batch, spec);
		fnum(f, r->tok_s, 2, "");
		fnum(f, base ? r->tok_s / base->tok_s : NAN, 2, "x");
		fnum(f, r->mb, 4, "");
		fprintf(f, " %s |", r->dram ? "DRAM (measured)" : "engine-accounted (not DRAM)");
		fnum(f, r->eng_mb, 4, "");
		fnum(f, r->pred_mb, 4, "");
		fnum(f, base ? base->pred_mb / r->pred_mb : NAN, 2, "x");
		fputc('\n', f);
	}
	fprintf(f, "\nThe predicted speedup is memory-bound decoding's: MB/token at N=1 over "
		   "MB/token here (analytic). `memwall roofline MODEL --batch 1,2,4,8` adds the "
		   "compute roof, which caps it; tok/s on a shared machine is indicative.\n");
}

/* The claim, the prediction and the measurement side by side, for batch 2 against 1. */
static void print_claim(FILE *f, const struct vrow *rows, size_t n)
{
	const struct vrow *b1 = plain_at(rows, n, 1), *b2 = plain_at(rows, n, 2);
	if (!b1 || !b2)
		return;
	fprintf(f, "\n### Batch 2 against batch 1: the claim, the prediction, the measurement\n\n"
		   "| figure | claim | prediction (analytic, memory-bound) | measurement (this "
		   "record) |\n|---|---|---:|---:|\n| decode tok/s, batch 2 / batch 1 | \"%s\" "
		   "(%s) |", CLAIM, CLAIM_SOURCE);
	fnum(f, b1->pred_mb / b2->pred_mb, 2, "x");
	fnum(f, b2->tok_s / b1->tok_s, 2, "x");
	fprintf(f, "\n| MB per generated token, batch 2 / batch 1 | not claimed |");
	fnum(f, b2->pred_mb / b1->pred_mb, 3, "");
	fnum(f, b2->mb / b1->mb, 3, b2->dram && b1->dram ? " (DRAM)" : " (engine-accounted)");
	fputc('\n', f);
}

static void print_spec(FILE *f, const struct vrow *rows, size_t n)
{
	const struct vrow *plain = plain_at(rows, n, 1);
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		const struct vrow *r = &rows[i];
		if (!r->spec_k)
			continue;
		if (!any)
			fprintf(f, "\n### Speculation: acceptance and bytes per accepted token\n\n"
				   "| variant | draft K | acceptance | tokens per pass | MB per accepted "
				   "token | as | analytic at this acceptance | plain MB/token | tok/s vs "
				   "plain |\n|---|---:|---:|---:|---:|---|---:|---:|---:|\n");
		any = true;
		fprintf(f, "| %s | %d |", mw_esc_md(r->name), r->spec_k);
		fnum(f, 100 * r->acc, 1, " %");
		fnum(f, r->tpp, 2, "");
		fnum(f, r->mb, 4, "");
		fprintf(f, " %s |", r->dram ? "DRAM" : "engine-accounted");
		fnum(f, r->pred_mb, 4, "");
		fnum(f, plain ? plain->mb : NAN, 4, "");
		fnum(f, plain ? r->tok_s / plain->tok_s : NAN, 2, "x");
		fputc('\n', f);
	}
	if (any)
		fprintf(f, "\nEvery token a verification pass yields is accepted (its agreed draft "
			   "and the model's own next token), so MB per accepted token is the decode "
			   "window's MB per generated token. The analytic figure assumes K draft "
			   "tokens every pass, each accepted at the measured rate (Leviathan et al. "
			   "2023); prompt lookup drafts fewer when the context holds no match that "
			   "long, which is where it and the measurement part.\n");
}

/* R1's activations as the R1 variant's runs recorded them (decode.sparsity, summed over the
 * measured runs), for mechanisms.c's prediction: false when the record has none. */
static bool r1_from(const struct vrow *rows, size_t n, struct mw_r1 *r1, struct mw_r1_layer *l)
{
	const json_t *run;
	size_t i;
	*r1 = (struct mw_r1){ .n_layers = 1, .layer = l, .map_applies = true };
	*l = (struct mw_r1_layer){ 0 };
	for (size_t k = 0; k < n; k++) {
		if (!rows[k].mech || strcmp(rows[k].mech, "R1"))
			continue;
		json_array_foreach(json_object_get(rows[k].rec, "runs"), i, run) {
			const json_t *d = json_object_get(run, "decode");
			const json_t *sp = json_object_get(d, "sparsity");
			if (json_is_true(json_object_get(run, "warmup")) || !sp)
				continue;
			uint64_t skipped = (uint64_t)json_integer_value(
				json_object_get(sp, "weights_skipped_bytes"));
			l->zeros += (uint64_t)json_integer_value(json_object_get(sp, "act_zero"));
			l->n += (uint64_t)json_integer_value(json_object_get(sp, "act_total"));
			r1->down_blocks_zero += (uint64_t)json_integer_value(
				json_object_get(sp, "down_blocks_zero"));
			r1->down_blocks += (uint64_t)json_integer_value(
				json_object_get(sp, "down_blocks"));
			r1->skipped_bytes += skipped;
			r1->dense_bytes += (uint64_t)json_integer_value(
				json_object_get(d, "engine_bytes")) + skipped;
			r1->tokens += (size_t)json_integer_value(json_object_get(d, "tokens"));
		}
		break;
	}
	return l->n > 0;
}

/* The variant that rule's row measures against: the one it names, else the first variant
 * that turns no mechanism on. */
static const struct vrow *baseline_of(const struct vrow *v, const struct vrow *rows, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (v->baseline ? !strcmp(rows[k].name, v->baseline) : !rows[k].mech)
			return &rows[k];
	return NULL;
}

/* mechanisms.c's rows for the model and position of variant b's record; NULL when the record
 * has no tensor table (a model file no longer at hand). New reference. */
static json_t *mechanisms_for(const struct vrow *b, const struct vrow *rows, size_t n,
			      const json_t *proj)
{
	struct mw_record_view view = { 0 };
	struct eng_tensor_table *t = NULL;
	struct mw_analytic a;
	struct mw_error err;
	struct mw_r4 r4;
	json_t *mech = NULL;
	if (mw_record_view_load(b->rec, "(variant)", &view, &t, &err) || !t ||
	    mw_analytic_compute(t, &(struct mw_analytic_options){ .pos = view.pos }, &a))
		goto out;
	mw_r4_compute(t, view.pos + 1, &r4);
	const char *why = "the record holds no activations for it (an R1 variant records them "
			  "in decode.sparsity); `memwall headroom MODEL` measures them";
	struct mw_r1 r1;
	struct mw_r1_layer r1_layer;
	struct mw_mech_inputs mi = { .proj = proj, .t = t, .a = &a, .r1_reason = why,
				     .r3_reason = "see the measured column", .r4 = &r4,
				     .llc = view.llc_bytes };
	if (r1_from(rows, n, &r1, &r1_layer))
		mi.r1 = &r1;
	/* R3's prediction reads the weights themselves (their layer-to-layer cosines) */
	struct mw_r3 r3 = { 0 };
	if (t->n && t->t[0].data && !mw_r3_measure(t, &r3))
		mi.r3 = &r3;
	mech = mw_mechanisms_build(&mi);
	mw_r3_free(&r3);
out:
	eng_tensor_table_free(t);
	return mech;
}

/* The measured column of rule's row: variant v against its baseline b, engine-accounted
 * unless both measured DRAM; R2 adds the KV bytes per token, R3 the unique bytes. */
static void print_measured(FILE *f, const char *rule, const struct vrow *v, const struct vrow *b)
{
	bool dram = v->dram && b->dram;
	double cut = 100 * (1 - v->mb / b->mb);
	fprintf(f, " %.1f %% %s MB/token (%s, variant %s: %.4f against %s's %.4f MB)",
		fabs(cut), cut >= 0 ? "less" : "more", dram ? "DRAM" : "engine-accounted",
		mw_esc_md(v->name), v->mb, mw_esc_md(b->name), b->mb);
	if (!strcmp(rule, "R2") && !isnan(v->kv_read))
		fprintf(f, "; KV read per token %.4f MB (%s %.4f MB), engine-accounted: both kernels "
			   "read every cached byte, so only DRAM counters can show the cache "
			   "staying in L3", v->kv_read / 1e6, mw_esc_md(b->name), b->kv_read / 1e6);
	if (!strcmp(rule, "R3") && !isnan(v->w_unique) && v->w_unique < v->weights)
		fprintf(f, "; unique weight bytes %.4f MB per token, %.1f %% %s than %s's "
			   "weights (what DRAM serves only if the canonicals stay in the LLC "
			   "between the layers that share them)", v->w_unique / 1e6,
			fabs(100 * (1 - v->w_unique / b->weights)),
			v->w_unique <= b->weights ? "less" : "more", mw_esc_md(b->name));
}

/* AIOS's mechanisms: projection and prediction from mechanisms.c for the model of each
 * mechanism's baseline, the measurement from the variant that turns it on against that
 * baseline. */
static void print_mechanisms(FILE *f, const struct vrow *rows, size_t n)
{
	const struct vrow *base = NULL;
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		any |= rows[i].mech != NULL;
		if (!base && !rows[i].mech)
			base = &rows[i];
	}
	const struct mw_embedded *pe = mw_embedded_find("aios.json");
	json_t *proj = pe ? json_loadb((const char *)pe->data, pe->len, 0, NULL) : NULL;
	json_t *mech = any && base && proj ? mechanisms_for(base, rows, n, proj) : NULL, *m;
	size_t i;
	if (!mech)
		goto out;
	fprintf(f, "\n### AIOS's mechanisms: projection, prediction, measurement\n\n| rule | "
		   "AIOS's projection | memwall's prediction (the baseline's model) | measured "
		   "(this record) |\n|---|---|---|---|\n");
	json_array_foreach(mech, i, m) {
		const char *rule = json_string_value(json_object_get(m, "rule"));
		const struct vrow *v = NULL, *b = base;
		for (size_t k = 0; k < n && !v; k++)
			if (rows[k].mech && !strcmp(rows[k].mech, rule))
				v = &rows[k];
		json_t *own = NULL;
		if (v && (b = baseline_of(v, rows, n)) && b != base &&
		    (own = mechanisms_for(b, rows, n, proj)))
			m = json_array_get(own, i);
		const json_t *pred = json_object_get(m, "prediction");
		const json_t *pp = json_object_get(pred, "reduction_pct");
		fprintf(f, "| %s %s | %s | ", mw_esc_md(rule), mw_esc_md(json_string_value(json_object_get(m, "mechanism"))),
			mw_esc_md(json_string_value(json_object_get(json_object_get(m, "projection"), "text"))));
		if (json_is_number(pp))
			fprintf(f, "%.1f %%: ", json_number_value(pp));
		fprintf(f, "%s |", mw_esc_md(json_string_value(json_object_get(pred, "text"))));
		if (v && b) {
			/* every variant that turns the rule on, each against its own baseline */
			for (size_t k = (size_t)(v - rows); k < n; k++) {
				const struct vrow *w = &rows[k], *wb = baseline_of(w, rows, n);
				if (!w->mech || strcmp(w->mech, rule) || !wb)
					continue;
				if (w != v)
					fputs(" ;", f);
				print_measured(f, rule, w, wb);
			}
			fputs(" |\n", f);
		} else
			fprintf(f, " no variant of this record: %s |\n", mw_esc_md(json_string_value(
				json_object_get(json_object_get(m, "measurement"), "text"))));
		json_decref(own);
	}
	json_decref(mech);
out:
	json_decref(proj);
}

void mw_report_variants(FILE *f, const json_t *doc)
{
	const json_t *list = json_object_get(doc, "variants"), *v;
	size_t n = json_array_size(list), i;
	struct vrow rows[32]; /* the protocol schema allows 32 variants */
	if (!n)
		return;
	n = n < 32 ? n : 32;
	json_array_foreach(list, i, v) {
		if (i < n)
			row_fill(&rows[i], v);
	}
	print_table(f, rows, n);
	print_claim(f, rows, n);
	print_spec(f, rows, n);
	print_mechanisms(f, rows, n);
}

int mw_report_variants_plot(const json_t *doc, const char *dir, FILE *log, struct mw_error *err)
{
	const json_t *list = json_object_get(doc, "variants"), *v;
	struct vrow rows[32];
	size_t n = json_array_size(list), i, points = 0;
	char path[4200], vars[1200], qlabel[600], qdir[8];
	if (!n)
		return 0;
	n = n < 32 ? n : 32;
	json_array_foreach(list, i, v) {
		if (i < n)
			row_fill(&rows[i], v);
	}
	const struct vrow *base = plain_at(rows, n, 1);
	snprintf(path, sizeof(path), "%s/batch.dat", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return mw_error_set(err, -EIO, path, "", "cannot write the plot data");
	/* N, measured MB/token, tok/s, predicted MB/token, predicted tok/s (N=1's measured
	 * tok/s times the memory-bound speedup): plain variants only, by N. */
	fprintf(f, "# N measured_MB_per_token tok_s predicted_MB_per_token predicted_tok_s\n");
	for (int nb = 1; nb <= 64; nb++) {
		const struct vrow *r = plain_at(rows, n, nb);
		if (!r)
			continue;
		double pt = base ? base->tok_s * base->pred_mb / r->pred_mb : NAN;
		fprintf(f, "%d %.9g %.9g %.9g %.9g\n", nb, r->mb, r->tok_s, r->pred_mb, pt);
		points++;
	}
	if (fclose(f))
		return mw_error_set(err, -EIO, path, "", "cannot write the plot data");
	if (points < 2)
		return 0;
	const json_t *model = json_object_get(doc, "model");
	/* A simulated PMU's counts are never called measured (provenance.c). */
	struct mw_provenance prov;
	mw_provenance_of(doc, &prov);
	bool sim = prov.source == MW_DRAM_SIMULATED;
	char label[500];
	snprintf(label, sizeof(label), "%s: %s%s, MB/token %s",
		 json_string_value(json_object_get(json_object_get(doc, "protocol"), "name")),
		 json_string_value(json_object_get(model, "name")),
		 json_is_true(json_object_get(model, "synthetic")) &&
				 !strstr(json_string_value(json_object_get(model, "name")) ?
					 json_string_value(json_object_get(model, "name")) : "",
					 "synthetic") ? " (synthetic)" : "",
		 !(base && base->dram) ? "engine-accounted (not DRAM)" : sim ? "DRAM (SIMULATED PMU, "
		 "not hardware)" : "DRAM (measured)");
	mw_gnuplot_quote(qlabel, sizeof(qlabel), label);
	mw_gnuplot_quote(qdir, sizeof(qdir), ".");
	snprintf(vars, sizeof(vars), "datadir=%s; label=%s; src='%s'", qdir, qlabel,
		 sim ? "SIMULATED" : "measured");
	const char *const script[] = { "batch.gp" };
	int rc = mw_gnuplot_charts(dir, vars, script, 1, err);
	if (rc)
		return rc;
	if (log)
		fprintf(log, "memwall report: wrote %s/batch.png\nmemwall report: wrote "
			"%s/batch.svg\n", dir, dir);
	return 0;
}
