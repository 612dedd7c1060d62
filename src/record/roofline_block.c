/* src/record/roofline_block.c: a result record's roofline block and plausibility paragraph
 * (roofline_block.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "record_view.h"
#include "roofline.h"
#include "roofline_block.h"

/* Why a record's view could not be read: the reader's wrong-typed field is named (its text
 * alone does not say which), the model's absence says itself. */
static const char *reason(char *out, size_t n, int rc, const struct mw_error *err)
{
	if (rc == -EINVAL && err->field[0])
		snprintf(out, n, "%s: %s", err->field, err->text);
	else
		snprintf(out, n, "%s", err->text);
	return out;
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
	char why[1024];
	int rc;
	mw_error_clear(&err);
	if ((rc = mw_record_view_load(doc, source, &v, &t, &err)))
		return json_pack("{s:b, s:s}", "computed", 0, "reason",
				 reason(why, sizeof(why), rc, &err));
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

void mw_plausibility_print_md(FILE *f, const json_t *doc)
{
	struct mw_record_view v;
	struct eng_tensor_table *t = NULL;
	struct mw_error err;
	struct mw_analytic a;
	struct mw_plausibility p;
	char why[1024];
	int rc;
	mw_error_clear(&err);
	if ((rc = mw_record_view_load(doc, "", &v, &t, &err))) {
		/* v.dram_counted is read before the model is looked for */
		if (v.dram_counted)
			fprintf(f, "\nPlausibility: not checked: %s\n",
				reason(why, sizeof(why), rc, &err));
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
