/* src/cmd_headroom.c: `memwall headroom MODEL`: AIOS's projected MB/token reductions next to a
 * measured (or analytic) baseline, and its Model Contract checked on the real model.
 *
 * AIOS's own headroom script samples random vectors instead of reading the model; here every
 * figure comes from the model file (tensor table, weights) or from the engine running it. The
 * projections and the contract's limits are data (protocols/projections/aios.json). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analytic.h"
#include "headroom.h"
#include "result.h"
#include "roofline.h"
#include "verbs.h"

#define VERB "headroom"

struct options {
	const char *model, *calibration, *result, *tokenizer, *projections;
	double epsilon; /* NAN: the projections file's */
	int kv_bytes;   /* 0: the model's default cache type */
	bool json;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall headroom MODEL [--calibration FILE.jsonl] [--json]\n"
		"                        [--result RESULT] [--tokenizer FILE] [--epsilon E]\n"
		"                        [--kv f32|f16] [--projections FILE]\n\n"
		"Compares AIOS's projected MB/token reductions with a baseline (the measured one of\n"
		"--result, else the analytic one), and checks AIOS's Model Contract on the real\n"
		"model: R1 FFN activation sparsity over calibration prompts run by the engine, R2 KV\n"
		"bytes at 4096 context, R3 cosine similarity of adjacent layers' weights by depth,\n"
		"R4 activation footprint per layer, R5 manifest presence.\n\n"
		"  --calibration FILE  prompts, one per line or {\"prompt\": ...} per line for\n"
		"                      .jsonl (default: protocols/calibration/stories.txt)\n"
		"  --result RESULT     a result record whose measured MB/token is the baseline\n"
		"  --tokenizer FILE    for R1 (default: tokenizer.bin beside MODEL)\n"
		"  --epsilon E         R1's near-zero bound |a| <= E (default: the projections file's)\n"
		"  --kv f32|f16        KV cache type for R2 (default f32 for llama2.c, f16 for GGUF)\n"
		"  --projections FILE  default: protocols/projections/aios.json (built in)\n"
		"  --json              one JSON object on stdout\n\n"
		"Every figure is a projection (AIOS's) or computed from the model; a synthetic model's\n"
		"figures are labelled synthetic. Exit 0, or 2 for bad input.\n");
}

static int parse_args(int argc, char **argv, struct options *o, bool *help)
{
	enum { OPT_CAL = 256, OPT_RESULT, OPT_TOK, OPT_EPS, OPT_KV, OPT_PROJ, OPT_JSON };
	static const struct option longopts[] = {
		{ "calibration", required_argument, NULL, OPT_CAL },
		{ "result", required_argument, NULL, OPT_RESULT },
		{ "tokenizer", required_argument, NULL, OPT_TOK },
		{ "epsilon", required_argument, NULL, OPT_EPS },
		{ "kv", required_argument, NULL, OPT_KV },
		{ "projections", required_argument, NULL, OPT_PROJ },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CAL:
			o->calibration = optarg;
			break;
		case OPT_RESULT:
			o->result = optarg;
			break;
		case OPT_TOK:
			o->tokenizer = optarg;
			break;
		case OPT_EPS:
			if (mw_parse_double(optarg, 0, 1e6, &o->epsilon) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB, "--epsilon '%s': want a number "
					       ">= 0", optarg);
			break;
		case OPT_KV:
			if (strcmp(optarg, "f32") && strcmp(optarg, "f16"))
				return mw_fail(MW_EXIT_USAGE, VERB, "--kv '%s': want f32 or f16",
					       optarg);
			o->kv_bytes = strcmp(optarg, "f32") ? 2 : 4;
			break;
		case OPT_PROJ:
			o->projections = optarg;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case 'h':
			*help = true;
			return MW_EXIT_OK;
		default:
			return mw_opt_error(VERB, c, argv);
		}
	}
	if (optind + 1 != argc)
		return mw_fail(MW_EXIT_USAGE, VERB, optind < argc ? "one MODEL, not more"
								   : "give a MODEL file");
	o->model = argv[optind];
	return MW_EXIT_OK;
}

static double contract_num(const json_t *proj, const char *rule, const char *key)
{
	const json_t *v = json_object_get(json_object_get(json_object_get(proj, "contract"), rule),
					  key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Weight elements a step reads (the embedding's one row included): for bits per weight. */
static double elements_read(const struct eng_tensor_table *t)
{
	double n = 0;
	for (size_t i = 0; i < t->n; i++)
		n += t->t[i].cls == ENG_TENSOR_EMBEDDING ? (double)t->t[i].cols
							  : (double)t->t[i].rows * (double)t->t[i].cols;
	return n;
}

/* What a projected MB/token would take, from the analytic decomposition. */
static void what_must_hold(char *buf, size_t n, double projected, const struct mw_analytic *a,
			   double bits_per_weight)
{
	double kv = (double)(a->kv_read + a->kv_write), w = (double)a->weights;
	double weights_left = projected - kv;
	if (weights_left <= 0) {
		snprintf(buf, n, "impossible by weights alone: the KV cache's %.1f MB at this position "
			 "already exceeds %.1f MB, so KV traffic would have to shrink too",
			 kv / 1e6, projected / 1e6);
		return;
	}
	double keep = weights_left / w;
	if (keep >= 1) {
		snprintf(buf, n, "already met by a dense step's analytic bytes (%.1f MB of weights, "
			 "%.1f MB of KV): the baseline's excess over them would have to go",
			 w / 1e6, kv / 1e6);
		return;
	}
	snprintf(buf, n, "weight bytes read per token would have to fall from %.1f MB to %.1f MB "
		 "(%.1f %% of them, with the KV cache's %.1f MB and no activation spill): skip "
		 "%.1f %% of weight bytes every token (sparsity, layer skipping), or store them at "
		 "%.2f bits per weight instead of %.2f", w / 1e6, weights_left / 1e6, 100 * keep,
		 kv / 1e6, 100 * (1 - keep), bits_per_weight * keep, bits_per_weight);
}

static bool file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* R5: MODEL.manifest.json, or manifest.json in the model's folder. */
static bool find_manifest(const char *model, char *found, size_t n)
{
	char dir[4096];
	snprintf(found, n, "%s.manifest.json", model);
	if (file_exists(found))
		return true;
	snprintf(dir, sizeof(dir), "%s", model);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	snprintf(found, n, "%s/manifest.json", slash ? dir : ".");
	return file_exists(found);
}

int mw_cmd_headroom(int argc, char **argv)
{
	struct options o = { .epsilon = NAN };
	struct eng_tensor_table *t = NULL, *rt = NULL;
	struct mw_record_view view = { 0 };
	struct mw_analytic a, a16;
	struct mw_r1 r1 = { 0 };
	struct mw_r3 r3 = { 0 };
	struct mw_error err, r1err;
	struct eng_error eerr;
	json_t *proj = NULL, *rec = NULL, *out = NULL;
	char **prompts = NULL, tokpath[4200], manifest[4200], r1_reason[1400] = "",
	     r3_reason[300] = "", baseline_note[700];
	size_t n_prompts = 0;
	bool help = false;
	int rc, status = MW_EXIT_OK;

	mw_error_clear(&err);
	mw_error_clear(&r1err);
	eng_error_clear(&eerr);
	if ((rc = parse_args(argc, argv, &o, &help)) || help) {
		if (help)
			usage(stdout);
		return rc;
	}
	if (mw_projections_load(&proj, o.projections, &err) ||
	    mw_calibration_load(&prompts, &n_prompts, o.calibration, &err)) {
		mw_error_print(&err);
		status = MW_EXIT_USAGE;
		goto out;
	}
	/* A record in MODEL's place: its model (the file, or a built-in description of it) and its
	 * measured baseline. */
	bool record_only = mw_path_is_record(o.model);
	const char *model_path = o.model;
	if (record_only && o.result) {
		status = mw_fail(MW_EXIT_USAGE, VERB, "give a RECORD as MODEL or with --result, "
				 "not both");
		goto out;
	}
	if (record_only)
		o.result = o.model;
	else if ((rc = eng_tensors_from_file(o.model, &t, &eerr))) {
		fprintf(stderr, "memwall: %s: %s\n", eerr.source[0] ? eerr.source : o.model, eerr.text);
		status = MW_EXIT_USAGE;
		goto out;
	}

	/* The baseline: measured by a result record, else the analytic step at position 128. */
	int pos = 128;
	double baseline = NAN;
	if (o.result) {
		if (mw_result_load(&rec, o.result, &err) ||
		    mw_record_view_load(rec, o.result, &view, &rt, &err)) {
			mw_error_print(&err);
			status = MW_EXIT_USAGE;
			goto out;
		}
		pos = view.pos;
		baseline = view.measured_bytes;
		if (record_only) { /* the record's model is the model, its file if it is here */
			t = rt;
			rt = NULL;
			const char *mp = json_string_value(json_object_get(
				json_object_get(rec, "model"), "path"));
			model_path = mp && file_exists(mp) ? mp : NULL;
		}
		snprintf(baseline_note, sizeof(baseline_note), "measured: %s (%s)",
			 view.measured_note, o.result);
	}
	bool synthetic = t->info.synthetic || view.synthetic;
	const char *label = synthetic ? " [synthetic: random weights of the real shape]" : "";
	uint64_t llc = 0;
	char llc_src[300] = "";
	if (eng_llc_size(&llc, llc_src, sizeof(llc_src)))
		llc = 0;
	struct mw_analytic_options ao = { .pos = pos, .kv_elem_bytes = o.kv_bytes,
					  .llc_bytes = llc, .llc_source = llc_src };
	ao.act_elem_bytes = 4;
	if (mw_analytic_compute(t, &ao, &a)) {
		status = mw_fail(MW_EXIT_USAGE, VERB, "%s: the model has no layers", o.model);
		goto out;
	}
	ao.act_elem_bytes = 2;
	mw_analytic_compute(t, &ao, &a16);
	/* A measured baseline is checked first: projections from an implausible one inherit its
	 * error. The floor uses the record's LLC when it gives one. */
	struct mw_plausibility pl = { .verdict = MW_VERDICT_NOT_CHECKED, .ratio = NAN };
	if (!isnan(baseline)) {
		struct mw_analytic ar;
		struct mw_analytic_options ro = { .pos = pos, .kv_elem_bytes = o.kv_bytes,
						  .llc_bytes = view.llc_bytes,
						  .llc_source = view.llc_source };
		if (!mw_analytic_compute(t, &ro, &ar))
			mw_plausibility_check(&ar, baseline, view.instances, view.n_instances, &pl);
	}
	if (isnan(baseline)) {
		baseline = (double)a.total;
		snprintf(baseline_note, sizeof(baseline_note), "analytic, not measured: the bytes a "
			 "dense decode step reads at position %d%s (give --result for a measured "
			 "baseline%s%s)", pos, label, o.result ? "; " : "",
			 o.result ? view.measured_note : "");
	}

	/* Projections. */
	double bpw = 8.0 * (double)a.weights / elements_read(t);
	json_t *projs = json_array();
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(proj, "projections"), i, p) {
		double r = json_number_value(json_object_get(p, "reduction_pct"));
		double projected = baseline * (1 - r / 100);
		char must[900];
		what_must_hold(must, sizeof(must), projected, &a, bpw);
		json_array_append_new(projs, json_pack(
			"{s:O, s:f, s:o, s:f, s:f, s:s, s:O}", "name", json_object_get(p, "name"),
			"reduction_pct", r, "kind", json_string("projection"), "baseline_MB_per_token",
			baseline / 1e6, "projected_MB_per_token", projected / 1e6,
			"what_would_have_to_be_true", must, "assumptions",
			json_object_get(p, "assumptions") ? json_object_get(p, "assumptions")
							  : json_null()));
	}

	/* R2 and R4: formulas on the real shape. */
	double r2_ctx = contract_num(proj, "R2", "context"), r2_limit = contract_num(proj, "R2", "limit_bytes");
	if (isnan(r2_ctx))
		r2_ctx = 4096;
	uint64_t r2_bytes = mw_analytic_kv_bytes(t->info.n_layers, t->info.n_kv_heads, t->head_dim,
						 a.kv_elem_bytes, (uint64_t)r2_ctx);
	double r4_limit = contract_num(proj, "R4", "limit_bytes");
	bool r4_between = !isnan(r4_limit) && (double)a.activation_layer > r4_limit &&
			  (double)a.activation_layer <= r4_limit * 1.024;

	/* R1: the engine over the calibration prompts. */
	double eps = !isnan(o.epsilon) ? o.epsilon : contract_num(proj, "R1", "epsilon");
	if (isnan(eps))
		eps = 1e-3;
	if (o.tokenizer) {
		snprintf(tokpath, sizeof(tokpath), "%s", o.tokenizer);
	} else {
		snprintf(tokpath, sizeof(tokpath), "%s", model_path ? model_path : "");
		char *slash = strrchr(tokpath, '/');
		snprintf(slash ? slash + 1 : tokpath, sizeof(tokpath) - (size_t)(slash ? slash + 1 - tokpath : 0),
			 "tokenizer.bin");
	}
	bool r1_ok = false;
	if (!model_path)
		snprintf(r1_reason, sizeof(r1_reason), "not measured: the record's model file is "
			 "not here, and R1 needs forward passes of the real weights");
	else if (file_exists(tokpath) &&
		 !mw_r1_measure(model_path, tokpath, prompts, n_prompts, eps, &r1, &r1err))
		r1_ok = true;
	else if (mw_r1_measure(model_path, NULL, prompts, n_prompts, eps, &r1, &r1err))
		snprintf(r1_reason, sizeof(r1_reason), "not measured%s: %.500s: %.700s",
			 t->info.format == ENG_FORMAT_GGUF ? " (R1 needs forward passes, and this "
			 "build's engine does not run GGUF models yet)" : "", r1err.source, r1err.text);
	else
		r1_ok = true;
	/* Why the prompts were not used, when they were not. */
	if (r1_ok && !r1err.text[0] && !file_exists(tokpath) && !o.tokenizer)
		snprintf(r1_reason, sizeof(r1_reason), "no tokenizer at %.1000s (give --tokenizer)",
			 tokpath);
	else if (r1_ok && r1err.text[0])
		snprintf(r1_reason, sizeof(r1_reason), "%.500s: %.700s", r1err.source, r1err.text);

	/* R3: adjacent layers' weights. */
	bool r3_ok = false;
	if ((rc = mw_r3_measure(t, &r3)))
		snprintf(r3_reason, sizeof(r3_reason), "not measured: %s",
			 rc == -ENOTSUP ? "a tensor type memwall cannot dequantize"
			 : rc == -EINVAL ? "the model file is not here (a built-in description of its "
					   "shape has no weights)" : strerror(-rc));
	else
		r3_ok = true;

	bool has_manifest = model_path && find_manifest(model_path, manifest, sizeof(manifest));

	/* The document, then text or JSON from it. */
	json_t *r1j = json_object(), *r3j = json_object();
	json_object_set_new(r1j, "measured", json_boolean(r1_ok));
	if (r1_ok) {
		json_t *layers = json_array();
		for (int l = 0; l < r1.n_layers; l++) {
			const struct mw_r1_layer *L = &r1.layer[l];
			json_array_append_new(layers, json_pack(
				"{s:i, s:I, s:f, s:f}", "layer", l, "activations", (json_int_t)L->n,
				"exact_zero_fraction", L->n ? (double)L->zeros / (double)L->n : 0.0,
				"near_zero_fraction", L->n ? (double)L->near / (double)L->n : 0.0));
		}
		json_object_set_new(r1j, "epsilon", json_real(eps));
		char act[96];
		snprintf(act, sizeof(act), "%s, the input of the FFN down projection",
			 r1.activation);
		json_object_set_new(r1j, "activation", json_string(act));
		json_object_set_new(r1j, "input", json_string(r1.input));
		if (r1_reason[0])
			json_object_set_new(r1j, "prompts_not_used", json_string(r1_reason));
		json_object_set_new(r1j, "sequences", json_integer((json_int_t)r1.prompts));
		json_object_set_new(r1j, "tokens", json_integer((json_int_t)r1.tokens));
		json_object_set_new(r1j, "layers", layers);
	} else {
		json_object_set_new(r1j, "reason", json_string(r1_reason));
	}
	json_object_set_new(r3j, "measured", json_boolean(r3_ok));
	if (r3_ok) {
		json_t *zones = json_array(), *pairs = json_array();
		for (int z = 0; z < MW_ZONE_COUNT; z++)
			json_array_append_new(zones, json_pack(
				"{s:s, s:i, s:o, s:o, s:o}", "zone", mw_zone_name((enum mw_zone)z),
				"pairs", r3.zone_n[z], "mean_cosine", mw_json_num(r3.zone_mean[z]),
				"min_cosine", mw_json_num(r3.zone_min[z]), "max_cosine", mw_json_num(r3.zone_max[z])));
		for (size_t k = 0; k < r3.n; k++)
			json_array_append_new(pairs, json_pack(
				"{s:s, s:i, s:s, s:o}", "tensor", r3.pairs[k].kind, "layer",
				r3.pairs[k].layer, "zone", mw_zone_name(r3.pairs[k].zone), "cosine",
				mw_json_num(r3.pairs[k].cosine)));
		json_object_set_new(r3j, "zones", zones);
		json_object_set_new(r3j, "pairs", pairs);
	} else {
		json_object_set_new(r3j, "reason", json_string(r3_reason));
	}
	out = json_pack(
		"{s:s, s:b, s:s, s:O, s:{s:f, s:s, s:s, s:s}, s:o,"
		" s:{s:o, s:{s:f, s:I, s:i, s:o, s:o},"
		"    s:{s:I, s:o, s:s, s:I, s:o, s:b}, s:o, s:{s:b, s:s}}}",
		"model", o.model, "synthetic", synthetic, "tensors_from", t->source, "projections_source",
		json_object_get(proj, "source") ? json_object_get(proj, "source") : json_null(),
		"baseline", "MB_per_token", baseline / 1e6, "note", baseline_note, "plausibility",
		mw_verdict_name(pl.verdict), "plausibility_text", pl.text,
		"projections", projs,
		"contract", "R1", r1j,
		"R2", "context", r2_ctx, "kv_bytes", (json_int_t)r2_bytes, "kv_elem_bytes",
		a.kv_elem_bytes, "limit_bytes", mw_json_num(r2_limit), "pass",
		isnan(r2_limit) ? json_null() : json_boolean((double)r2_bytes <= r2_limit),
		"R4", "bytes_per_layer_f32", (json_int_t)a.activation_layer, "limit_bytes",
		mw_json_num(r4_limit), "precision_assumed", "f32", "bytes_per_layer_f16",
		(json_int_t)a16.activation_layer, "pass",
		isnan(r4_limit) ? json_null()
				: json_boolean((double)a.activation_layer <= r4_limit),
		"between_KB_and_KiB", r4_between,
		"R3", r3j,
		"R5", "manifest_present", has_manifest, "looked_for", has_manifest ? manifest
			: "MODEL.manifest.json and manifest.json in the model's folder");
	if (!out) {
		status = mw_fail(MW_EXIT_USAGE, VERB, "out of memory");
		goto out;
	}
	if (o.json) {
		json_dumpf(out, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
		fputc('\n', stdout);
		goto out;
	}

	printf("model: %s (%s)%s\n  tensors from: %s\n", o.model, t->info.arch ? t->info.arch : "?",
	       label, t->source);
	printf("baseline: %.1f MB/token, %s\n", baseline / 1e6, baseline_note);
	if (pl.verdict == MW_VERDICT_IMPLAUSIBLE || pl.verdict == MW_VERDICT_EXCESS)
		printf("  WARNING: the baseline is %s, and every projection below inherits it: "
		       "%s\n", mw_verdict_name(pl.verdict), pl.text);
	printf("projections (%s; AIOS's figures: projections, not measurements):\n",
	       json_is_string(json_object_get(proj, "source"))
		       ? json_string_value(json_object_get(proj, "source")) : "?");
	json_array_foreach(projs, i, p)
		printf("  %s: -%.0f %% -> %.1f MB/token against %.1f MB/token\n    what would have "
		       "to be true: %s\n", json_string_value(json_object_get(p, "name")),
		       json_number_value(json_object_get(p, "reduction_pct")),
		       json_number_value(json_object_get(p, "projected_MB_per_token")), baseline / 1e6,
		       json_string_value(json_object_get(p, "what_would_have_to_be_true")));
	printf("Model Contract, computed from the model%s:\n", label);
	if (r1_ok) {
		printf("  R1 FFN activation sparsity (%s over %zu tokens, near zero: |a| <= %g)\n"
		       "     input: %s\n", r1.activation, r1.tokens, eps, r1.input);
		if (r1_reason[0])
			printf("     calibration prompts not used: %s\n", r1_reason);
		for (int l = 0; l < r1.n_layers; l++)
			printf("     layer %2d: exact zero %.4f %%, near zero %.4f %%\n", l,
			       r1.layer[l].n ? 100.0 * (double)r1.layer[l].zeros / (double)r1.layer[l].n : 0,
			       r1.layer[l].n ? 100.0 * (double)r1.layer[l].near / (double)r1.layer[l].n : 0);
	} else {
		printf("  R1 FFN activation sparsity: %s\n", r1_reason);
	}
	printf("  R2 KV cache at %.0f context (%d B per element): %.2f MiB against %.0f MiB: %s\n",
	       r2_ctx, a.kv_elem_bytes, (double)r2_bytes / 1048576.0, r2_limit / 1048576.0,
	       isnan(r2_limit) ? "no limit" : (double)r2_bytes <= r2_limit ? "pass" : "FAIL");
	if (r3_ok) {
		printf("  R3 cosine similarity of adjacent layers' weights (%zu pairs):\n", r3.n);
		for (int z = 0; z < MW_ZONE_COUNT; z++)
			if (r3.zone_n[z])
				printf("     %-6s %2d pairs: mean %.4f, min %.4f, max %.4f\n",
				       mw_zone_name((enum mw_zone)z), r3.zone_n[z], r3.zone_mean[z],
				       r3.zone_min[z], r3.zone_max[z]);
			else
				printf("     %-6s no pairs (too few layers)\n",
				       mw_zone_name((enum mw_zone)z));
	} else {
		printf("  R3 cross-layer similarity: %s\n", r3_reason);
	}
	printf("  R4 activations per layer at batch 1: %.1f KB in f32 (assumed; AIOS's spec is "
	       "inconsistent about the precision), %.1f KB in f16, against %.0f KB: %s%s\n",
	       (double)a.activation_layer / 1e3, (double)a16.activation_layer / 1e3, r4_limit / 1e3,
	       isnan(r4_limit) ? "no limit" : (double)a.activation_layer <= r4_limit ? "pass" : "FAIL",
	       r4_between ? " (but within 200 KiB: the verdict hangs on KB vs KiB)" : "");
	printf("  R5 manifest: %s\n", has_manifest ? manifest : model_path ? "absent (looked "
	       "for MODEL.manifest.json and manifest.json beside the model)"
	       : "not checked: the model file is not here");
out:
	json_decref(out);
	json_decref(proj);
	json_decref(rec);
	mw_calibration_free(prompts, n_prompts);
	mw_r1_free(&r1);
	mw_r3_free(&r3);
	eng_tensor_table_free(t);
	eng_tensor_table_free(rt);
	return status;
}
