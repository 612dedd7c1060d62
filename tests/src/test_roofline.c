/* tests/src/test_roofline.c: roofline arithmetic, the plausibility check on constructed results,
 * the AIOS reference record flagged IMPLAUSIBLE, and `memwall roofline` end to end. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analytic.h"
#include "record_view.h"
#include "result.h"
#include "roofline.h"
#include "run.h"
#include "test.h"
#include "record.h"

/* An analytic step of round numbers: 1 GB read (weights 0.9 GB), 2 GFLOPs. */
static struct mw_analytic round_step(void)
{
	struct mw_analytic a = { .weights = 900000000, .kv_read = 99000000, .kv_write = 1000000,
				 .total = 1000000000, .flops = 2e9, .llc = 100000000,
				 .floor = 800000000, .far_larger_than_llc = true };
	snprintf(a.llc_statement, sizeof(a.llc_statement), "LLC 100 MB (test)");
	return a;
}

static void test_arithmetic(void)
{
	struct mw_analytic a = round_step();
	struct mw_roofline_inputs in = { .bw_gbps = 50, .peak_flops = 200e9, .measured_tok_s = 25,
					 .measured_bytes = 1.2e9 };
	struct mw_roofline r;
	mw_roofline_compute(&a, &in, &r);
	T_NEAR(r.max_tok_s_bw, 50.0, 1e-9);       /* 50e9 B/s / 1e9 B */
	T_NEAR(r.max_tok_s_compute, 100.0, 1e-9); /* 200e9 / 2e9 */
	T_NEAR(r.max_tok_s, 50.0, 1e-9);
	T_EQ_STR(r.bound, "memory");
	T_NEAR(r.headroom, 2.0, 1e-12);           /* 50 / 25 */
	T_NEAR(r.dram_efficiency, 1.2, 1e-12);    /* 1.2e9 / 1e9 */

	in.peak_flops = 60e9; /* 30 tok/s: compute-bound now */
	mw_roofline_compute(&a, &in, &r);
	T_NEAR(r.max_tok_s, 30.0, 1e-9);
	T_EQ_STR(r.bound, "compute");

	/* Nothing measured: NaN, never 0. */
	in = (struct mw_roofline_inputs){ .bw_gbps = NAN, .peak_flops = NAN,
					  .measured_tok_s = NAN, .measured_bytes = NAN };
	mw_roofline_compute(&a, &in, &r);
	T_ASSERT(isnan(r.max_tok_s) && isnan(r.headroom) && isnan(r.dram_efficiency));
	T_EQ_STR(r.bound, "none");
}

static void test_plausibility(void)
{
	struct mw_analytic a = round_step();
	const char *inst[] = { "amd_umc_0", "amd_umc_1" };
	struct mw_plausibility p;

	mw_plausibility_check(&a, 0.5e9, inst, 1, &p); /* 0.625x the floor */
	T_EQ_INT(p.verdict, MW_VERDICT_IMPLAUSIBLE);
	T_NEAR(p.ratio, 0.625, 1e-12);
	T_CONTAINS(p.text, "IMPLAUSIBLE");
	T_CONTAINS(p.text, "memory controllers");
	T_CONTAINS(p.text, "amd_umc_0");
	T_CONTAINS(p.text, "LLC 100 MB (test)");

	mw_plausibility_check(&a, 0.73e9, inst, 2, &p); /* 0.9125x: just inside */
	T_EQ_INT(p.verdict, MW_VERDICT_PLAUSIBLE);
	mw_plausibility_check(&a, 1.19e9, inst, 2, &p); /* 1.4875x */
	T_EQ_INT(p.verdict, MW_VERDICT_PLAUSIBLE);
	mw_plausibility_check(&a, 1.3e9, inst, 2, &p); /* 1.625x */
	T_EQ_INT(p.verdict, MW_VERDICT_EXCESS);
	T_CONTAINS(p.text, "elsewhere");

	mw_plausibility_check(&a, NAN, inst, 2, &p);
	T_EQ_INT(p.verdict, MW_VERDICT_NOT_CHECKED);

	/* A model near the LLC's size: low DRAM traffic is legitimate. */
	a.far_larger_than_llc = false;
	mw_plausibility_check(&a, 0.1e9, inst, 2, &p);
	T_EQ_INT(p.verdict, MW_VERDICT_NOT_CHECKED);
	T_CONTAINS(p.text, "LLC");
}

/* A record's verdict, through the same path the verb takes. */
static enum mw_verdict record_verdict(const char *path, struct mw_plausibility *p)
{
	json_t *doc = NULL;
	struct mw_error err;
	struct mw_record_view v;
	struct eng_tensor_table *t = NULL;
	struct mw_analytic a;
	mw_error_clear(&err);
	T_EQ_INT(mw_result_load(&doc, path, &err), 0);
	int rc = mw_record_view_load(doc, path, &v, &t, &err);
	if (rc)
		fprintf(stderr, "%s: %s: %s\n", err.source, err.field, err.text);
	T_EQ_INT(rc, 0);
	p->verdict = MW_VERDICT_NOT_CHECKED;
	if (!rc) {
		struct mw_analytic_options o = { .pos = v.pos, .llc_bytes = v.llc_bytes,
						 .llc_source = v.llc_source };
		T_EQ_INT(mw_analytic_compute(t, &o, &a), 0);
		mw_plausibility_check(&a, v.measured_bytes, v.instances, v.n_instances, p);
	}
	eng_tensor_table_free(t);
	json_decref(doc);
	return p->verdict;
}

/* Constructed records (tests/data/results/): the Falcon-7B Q4_K_M shape with every
 * controller counted, with too much, and with one of two controllers. */
static void test_constructed_records(void)
{
	struct mw_plausibility p;
	T_EQ_INT(record_verdict(t_data("results/falcon7b-all-controllers.json"), &p),
		 MW_VERDICT_PLAUSIBLE);
	T_EQ_INT(record_verdict(t_data("results/falcon7b-busy-machine.json"), &p),
		 MW_VERDICT_EXCESS);
	T_EQ_INT(record_verdict(t_data("results/falcon7b-one-controller.json"), &p),
		 MW_VERDICT_IMPLAUSIBLE);
	T_CONTAINS(p.text, "uncore_imc_free_running_0");
	T_CONTAINS(p.text, "LLC 36.0 MiB");
}

/* A protocol's roofline inputs reach the roofline of its records: they come before the run's
 * bandwidth probe and the record's caches. And a total-only backend's record is checked on its
 * total (mb_per_token_basis "total"), not on a read figure it never had. */
static void test_record_inputs(void)
{
	json_t *doc = NULL;
	struct mw_error err;
	struct mw_record_view v;
	struct eng_tensor_table *t = NULL;
	const char *path = t_data("results/falcon7b-all-controllers.json");
	mw_error_clear(&err);
	T_EQ_INT(mw_result_load(&doc, path, &err), 0);
	if (!doc)
		return;
	T_EQ_INT(mw_record_view_load(doc, path, &v, &t, &err), 0);
	double measured = v.measured_bytes;
	T_ASSERT(!isnan(measured));
	T_ASSERT(v.bw_gbps != 12.5);
	eng_tensor_table_free(t);

	if (!json_object_get(doc, "protocol")) /* the constructed record has none */
		json_object_set_new(doc, "protocol", json_object());
	json_t *proto = json_object_get(doc, "protocol");
	if (!json_object_get(proto, "document"))
		json_object_set_new(proto, "document", json_object());
	json_t *pdoc = json_object_get(proto, "document");
	json_object_set_new(pdoc, "roofline", json_pack("{s:f, s:I}", "bandwidth_gbps", 12.5,
							"llc_bytes", (json_int_t)(7 << 20)));
	/* As a resctrl run would record it: a total, and no read figure. */
	json_t *m = json_object_get(json_object_get(doc, "summary"), "metrics");
	json_t *rd = json_object_get(m, "dram_read_bytes_per_token");
	json_object_set_new(m, "dram_total_bytes_per_token", json_deep_copy(rd));
	json_object_set_new(json_object_get(m, "dram_total_bytes_per_token"), "mean",
			    json_real(measured * 1.25));
	json_object_set_new(rd, "measured", json_false());
	json_object_set_new(json_object_get(json_object_get(doc, "counters"), "dram"),
			    "mb_per_token_basis", json_string("total"));
	T_EQ_INT(mw_record_view_load(doc, path, &v, &t, &err), 0);
	T_NEAR(v.bw_gbps, 12.5, 0);
	T_CONTAINS(v.bw_source, "protocol");
	T_EQ_U64(v.llc_bytes, 7u << 20);
	T_CONTAINS(v.llc_source, "protocol");
	T_NEAR(v.measured_bytes, measured * 1.25, 1e-6 * measured);
	T_CONTAINS(v.measured_note, "dram_total_bytes_per_token");
	eng_tensor_table_free(t);
	json_decref(doc);
}

/* The AIOS reference: 2340 MB/token is about half of what a Falcon-7B Q4_K_M step streams. */
static void test_aios_reference(void)
{
	char path[4096];
	t_source(path, sizeof(path), "results/reference/aios-falcon7b-q4km.json");
	struct mw_plausibility p;
	T_EQ_INT(record_verdict(path, &p), MW_VERDICT_IMPLAUSIBLE);
	T_CONTAINS(p.text, "probably missed memory controllers");
	T_CONTAINS(p.text, "uncore_imc_free_running_0");
	/* Implausible under either reading of its MB: the larger (MiB) is what was checked. */
	T_ASSERT(p.ratio < 0.6);

	const char *argv[] = { "memwall", "roofline", path, NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 1);
	T_CONTAINS(o.out, "IMPLAUSIBLE");
	T_CONTAINS(o.out, "the embedding contributes one row, 3124 B");
	T_CONTAINS(o.out, "4854612788 B");
	t_output_free(&o);

	/* With a bandwidth given: roof and headroom; --json parses. */
	const char *jargv[] = { "memwall", "roofline", path, "--bandwidth", "90", "--json", NULL };
	o = t_run(jargv);
	T_EQ_INT(o.status, 1);
	json_error_t je;
	json_t *doc = o.out ? json_loads(o.out, 0, &je) : NULL;
	T_ASSERT(doc != NULL);
	const json_t *r = json_object_get(doc, "roofline");
	double max = json_number_value(json_object_get(r, "max_tok_per_s"));
	T_NEAR(max, 90e9 / json_number_value(json_object_get(json_object_get(doc, "analytic"),
							      "total_bytes_per_token")), 1e-9);
	T_NEAR(json_number_value(json_object_get(r, "headroom")), max / 11.43, 1e-9);
	T_EQ_STR(json_string_value(json_object_get(json_object_get(doc, "plausibility"), "verdict")),
		 "IMPLAUSIBLE");
	json_decref(doc);
	t_output_free(&o);
}

/* --plot draws the chart (skips when gnuplot is absent). */
static void test_plot(void)
{
	char dir[] = "/tmp/mw-roofline-XXXXXX", png[256];
	T_ASSERT(mkdtemp(dir) != NULL);
	char path[4096];
	t_source(path, sizeof(path), "results/reference/aios-falcon7b-q4km.json");
	/* The folder as a shell's completion gives it, with a slash: the path printed has one
	 * (issue 29: "wrote plots//roofline.png"). */
	char slashed[64];
	snprintf(slashed, sizeof(slashed), "%s/", dir);
	const char *argv[] = { "memwall", "roofline", path, "--bandwidth", "90", "--plot", slashed,
			       NULL };
	struct t_output o = t_run(argv);
	snprintf(png, sizeof(png), "%s/roofline.png", dir);
	struct stat st;
	if (o.err && strstr(o.err, "gnuplot is not installed")) {
		printf("gnuplot absent: the chart was not checked\n");
	} else {
		T_EQ_INT(o.status, 1); /* IMPLAUSIBLE, and the chart drawn */
		T_ASSERT(stat(png, &st) == 0 && st.st_size > 1000);
		char wrote[300];
		snprintf(wrote, sizeof(wrote), "wrote %s/roofline.png", dir);
		T_CONTAINS(o.err, wrote);
	}
	t_output_free(&o);
	T_EQ_INT(t_rm_tree(dir), 0);
}

/* A model file: the compute roof is measured now, the bandwidth given, and the outputs obey
 * max tok/s = min(BW / bytes, peak / FLOPs). */
static void test_model_file(void)
{
	char path[] = "/tmp/mw-roofline-model-XXXXXX";
	t_tmp_file(path);
	struct eng_error eerr;
	eng_error_clear(&eerr);
	T_EQ_INT(eng_synth_llama2c(path, "stories260K", 1, &eerr), 0);
	const char *argv[] = { "memwall", "roofline", path, "--bandwidth", "20", "--json", "-t", "1",
			       NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 0);
	json_error_t je;
	json_t *doc = o.out ? json_loads(o.out, 0, &je) : NULL;
	T_ASSERT(doc != NULL);
	const json_t *an = json_object_get(doc, "analytic"), *roofs = json_object_get(doc, "roofs");
	const json_t *r = json_object_get(doc, "roofline");
	double bytes = (double)json_integer_value(json_object_get(an, "total_bytes_per_token"));
	double flops = json_number_value(json_object_get(an, "flops_per_token"));
	double peak = json_number_value(json_object_get(roofs, "peak_flops"));
	T_ASSERT(peak > 1e8); /* any CPU this runs on does 0.1 GFLOP/s */
	T_NEAR(json_number_value(json_object_get(r, "max_tok_per_s")), fmin(20e9 / bytes, peak / flops),
	       1e-6);
	T_ASSERT(json_is_true(json_object_get(json_object_get(doc, "model"), "synthetic")));
	T_ASSERT(json_is_null(json_object_get(r, "dram_efficiency")));
	T_ASSERT(json_is_null(json_object_get(r, "headroom")));
	json_decref(doc);
	t_output_free(&o);
	unlink(path);
}

/* The compute roof of a quantized type runs its dot product; an unknown type is refused. */
static void test_peak(void)
{
	struct eng_peak pk;
	struct eng_error err;
	eng_error_clear(&err);
	T_EQ_INT(eng_peak_measure(NULL, 12 /* q4_K */, 1, 0.05, &pk, &err), 0);
	T_ASSERT(pk.flops > 1e8);
	T_CONTAINS(pk.kernel, "vec_dot q4_K x q8_K");
	T_EQ_INT(eng_peak_measure(NULL, 4 /* no such ggml type here */, 1, 0.05, &pk, &err),
		 -ENOTSUP);
	T_EQ_INT(eng_peak_measure(NULL, 0, 100000, 0.05, &pk, &err), -EINVAL);
}

/* ---- a record of `memwall run` (stories260K, synthetic, in a scratch cache) ---- */

/* Every run record carries its roofline: the analytic floor from the model's tensor table
 * (recomputed here), the protocol's bandwidth roof, the headroom against the measured tok/s
 * and the plausibility verdict; report prints it. And `memwall roofline` refuses a record
 * that does not validate instead of printing its tok/s. */
static void test_run_record(void)
{
	char scratch[256], path[1024], bad[600];
	t_run_record(scratch, sizeof(scratch), path, sizeof(path));
	T_ASSERT(path[0]);
	if (!path[0])
		return;
	json_t *doc = json_load_file(path, 0, NULL);
	T_ASSERT(doc != NULL);
	if (!doc)
		return;
	const json_t *r = json_object_get(doc, "roofline");
	T_ASSERT(json_is_true(json_object_get(r, "computed")));
	struct eng_tensor_table *t = NULL;
	struct eng_error eerr;
	eng_error_clear(&eerr);
	const char *mp = json_string_value(json_object_get(json_object_get(doc, "model"), "path"));
	T_EQ_INT(eng_tensors_from_file(mp, &t, &eerr), 0);
	int pos = (int)json_integer_value(json_object_get(r, "position"));
	T_ASSERT(pos >= 1 && pos <= 9); /* within the decode window: prompt 1, 8 tokens */
	uint64_t llc = (uint64_t)json_integer_value(json_object_get(r, "llc_bytes"));
	struct mw_analytic a;
	struct mw_analytic_options ao = { .pos = pos, .llc_bytes = llc };
	if (t) {
		T_EQ_INT(mw_analytic_compute(t, &ao, &a), 0);
		double total = (double)a.total;
		T_EQ_U64((uint64_t)json_integer_value(json_object_get(r, "analytic_bytes_per_token")),
			 a.total);
		T_EQ_U64((uint64_t)json_integer_value(json_object_get(r, "floor_bytes_per_token")),
			 a.weights > llc ? a.weights - llc : 0);
		T_NEAR(json_number_value(json_object_get(r, "bandwidth_gbps")), 10.0, 0);
		T_CONTAINS(json_string_value(json_object_get(r, "bandwidth_source")), "protocol");
		double max = 10e9 / total;
		T_NEAR(json_number_value(json_object_get(r, "max_tok_s")), max, 1e-9 * max);
		double tps = json_number_value(json_object_get(json_object_get(json_object_get(
			json_object_get(doc, "summary"), "metrics"), "tok_per_s"), "mean"));
		if (a.weights > llc) {
			T_NEAR(json_number_value(json_object_get(r, "headroom")), max / tps,
			       1e-9 * max / tps);
		} else {
			/* stories260K's weights fit in any LLC: the DRAM roof does not bound it */
			T_ASSERT(json_is_null(json_object_get(r, "headroom")));
			T_CONTAINS(json_string_value(json_object_get(r, "headroom_reason")),
				   "last-level cache");
		}
	}
	eng_tensor_table_free(t);
	const json_t *pl = json_object_get(r, "plausibility");
	const char *verdict = json_string_value(json_object_get(pl, "verdict"));
	T_ASSERT(verdict != NULL);
	if (json_is_null(json_object_get(r, "measured_bytes_per_token")))
		T_EQ_STR(verdict, "not checked");
	json_decref(doc);

	const char *rargv[] = { "memwall", "report", path, NULL };
	struct t_output o = t_run(rargv);
	T_EQ_INT(o.status, 0);
	T_CONTAINS(o.out, "roofline: analytic floor ");
	T_CONTAINS(o.out, "roof 10.0 GB/s -> ");
	t_output_free(&o);

	const char *argv[] = { "memwall", "roofline", path, NULL };
	o = t_run(argv);
	T_ASSERT(o.status == 0 || o.status == 1);
	T_CONTAINS(o.out, "stories260K");
	t_output_free(&o);

	snprintf(bad, sizeof(bad), "%s/negative.json", scratch);
	t_record_edit(path, bad, t_edit_negative_tok_s);
	const char *bargv[] = { "memwall", "roofline", bad, NULL };
	o = t_run(bargv);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "does not validate");
	T_CONTAINS(o.err, "summary.metrics.tok_per_s.mean");
	T_ASSERT(!strstr(o.out, "-5"));
	t_output_free(&o);
	if (!t_failures)
		t_rm_tree(scratch);
}

int main(void)
{
	test_record_inputs();
	test_peak();
	test_model_file();
	test_arithmetic();
	test_plausibility();
	test_constructed_records();
	test_aios_reference();
	test_plot();
	test_run_record();
	return t_done();
}
