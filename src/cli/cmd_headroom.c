/* src/cli/cmd_headroom.c: `memwall headroom MODEL`: AIOS's projected MB/token reductions next to a
 * measured (or analytic) baseline, and its Model Contract checked on the real model.
 *
 * AIOS's own headroom script samples random vectors instead of reading the model; here every
 * figure comes from the model file (tensor table, weights) or from the engine running it. The
 * projections and the contract's limits are data (protocols/projections/aios.json). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analytic.h"
#include "file.h"
#include "headroom.h"
#include "provenance.h"
#include "record_view.h"
#include "machine.h"
#include "mechanisms.h"
#include "opt.h"
#include "result.h"
#include "roofline.h"
#include "verbs.h"

#define VERB "headroom"

struct options {
	const char *model, *calibration, *result, *tokenizer, *projections;
	double epsilon; /* NAN: the projections file's */
	int kv_bytes;   /* 0: the model's default cache type */
	bool json;
	struct mw_r2_measured r2[MW_MECH_R2_MAX]; /* --kv-read C=BYTES, R2's measured column */
	size_t n_r2;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall headroom MODEL [--calibration FILE.jsonl] [--json]\n"
		"                        [--result RESULT] [--tokenizer FILE] [--epsilon E]\n"
		"                        [--kv f32|f16] [--projections FILE] [--kv-read C=BYTES,...]\n\n"
		"Compares AIOS's projected MB/token reductions with a baseline (the measured one of\n"
		"--result, else the analytic one), and checks AIOS's Model Contract on the real\n"
		"model: R1 FFN activation sparsity over calibration prompts run by the engine, R2 KV\n"
		"bytes at 4096 context, R3 cosine similarity of adjacent layers' weights by depth\n"
		"and the core zone's aliasing ratio at AIOS's zone thresholds, R4 activation\n"
		"footprint per layer against 200 KB and the L2 size, R5 manifest presence. Then,\n"
		"per mechanism, AIOS's projection, memwall's prediction and the engine-accounted\n"
		"measurement, side by side (a markdown table; \"mechanisms\" in --json).\n\n"
		"  --calibration FILE  prompts, one per line or {\"prompt\": ...} per line for\n"
		"                      .jsonl (default: protocols/calibration/stories.txt)\n"
		"  --result RESULT     a result record whose measured MB/token is the baseline; it\n"
		"                      must validate and be a record of MODEL (sha256, shape)\n"
		"  --tokenizer FILE    for R1 (default: tokenizer.bin beside MODEL)\n"
		"  --epsilon E         R1's near-zero bound |a| <= E (default: the projections file's)\n"
		"  --kv f32|f16        KV cache type for R2 (default f32 for llama2.c, f16 for GGUF)\n"
		"  --projections FILE  default: protocols/projections/aios.json (built in)\n"
		"  --kv-read C=BYTES   R2's measurement: the engine-accounted KV bytes a decode\n"
		"                      token read at context C (kv_read_per_token of generate\n"
		"                      --context C -n 2 --report-line); a list, or repeated\n"
		"  --json              one JSON object on stdout\n\n"
		"Every figure is a projection (AIOS's) or computed from the model; a synthetic model's\n"
		"figures are labelled synthetic. Exit 0, or 2 for bad input.\n");
}

/* --kv-read "C=BYTES[,C=BYTES...]" appended to o->r2. */
static int kv_read_parse(const char *arg, struct options *o)
{
	const char *p = arg;
	while (*p) {
		char *end;
		errno = 0;
		long c = strtol(p, &end, 10);
		if (end == p || *end != '=' || c < 1 || c > (1L << 20))
			goto bad;
		p = end + 1;
		unsigned long long b = strtoull(p, &end, 10);
		if (end == p || errno || (*end && *end != ',') || *p == '-')
			goto bad;
		if (o->n_r2 == MW_MECH_R2_MAX)
			return mw_fail(MW_EXIT_USAGE, VERB, "--kv-read: at most %d measurements",
				       MW_MECH_R2_MAX);
		o->r2[o->n_r2++] = (struct mw_r2_measured){ (int)c, (uint64_t)b };
		p = *end ? end + 1 : end;
	}
	if (o->n_r2)
		return 0;
bad:
	return mw_fail(MW_EXIT_USAGE, VERB, "--kv-read '%s': want CONTEXT=BYTES[,...], e.g. "
		       "4096=2105344 (kv_read_per_token of generate --context 4096 -n 2 "
		       "--report-line)", arg);
}

static int parse_args(int argc, char **argv, struct options *o, bool *help)
{
	enum { OPT_CAL = 256, OPT_RESULT, OPT_TOK, OPT_EPS, OPT_KV, OPT_PROJ, OPT_JSON, OPT_KVREAD };
	static const struct option longopts[] = {
		{ "calibration", required_argument, NULL, OPT_CAL },
		{ "result", required_argument, NULL, OPT_RESULT },
		{ "tokenizer", required_argument, NULL, OPT_TOK },
		{ "epsilon", required_argument, NULL, OPT_EPS },
		{ "kv", required_argument, NULL, OPT_KV },
		{ "projections", required_argument, NULL, OPT_PROJ },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "kv-read", required_argument, NULL, OPT_KVREAD },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "h", longopts);
	while ((c = mw_opt_next(&op)) != -1) {
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
		case OPT_KVREAD:
			if (kv_read_parse(optarg, o))
				return MW_EXIT_USAGE;
			break;
		case 'h':
			*help = true;
			return MW_EXIT_OK;
		default:
			return MW_EXIT_USAGE; /* '?': mw_opt_next said why */
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

/* One headroom report: what mw_cmd_headroom() loads (and frees), and what it works out, in
 * the order it does. */
struct headroom {
	struct options o;
	json_t *proj; /* the projections file */
	char **prompts;
	size_t n_prompts;
	struct eng_tensor_table *t;  /* the model's tensors */
	struct eng_tensor_table *rt; /* the record's description of them, until t takes it */
	json_t *rec;                 /* --result's record, or NULL */
	struct mw_record_view view;
	const char *model_path; /* the model file, NULL when only a record describes it */
	bool record_only, synthetic;
	const char *label; /* after the model's name: says when it is synthetic */
	int pos;           /* decode position of the baseline */
	double baseline;   /* bytes per token */
	char baseline_note[700];
	struct mw_analytic a, a16; /* activations in f32, in f16 */
	struct mw_plausibility pl;
	json_t *projs; /* stolen by out */
	double r2_ctx, r2_limit, r4_limit;
	uint64_t r2_bytes;
	bool r4_between;
	double eps;
	char tokpath[4200];
	struct mw_r1 r1;
	bool r1_ok;
	char r1_reason[1400];
	struct mw_r3 r3;
	bool r3_ok;
	char r3_reason[300];
	struct mw_r3_engine r3e; /* R3's engine-accounted run (canonical + delta models) */
	bool r3e_ok;
	struct mw_r4 r4;
	uint64_t l2, llc; /* 0: unknown */
	char l2_src[300];
	bool has_manifest;
	char manifest[4200];
	json_t *mech; /* the mechanisms table, stolen by out */
	json_t *out; /* the document */
};

/* The model's tensors from MODEL, or a record in MODEL's place: its model (the file, or a
 * built-in description of it) and its measured baseline. */
static int model_open(struct headroom *h)
{
	struct eng_error eerr;
	struct mw_error ferr;
	eng_error_clear(&eerr);
	/* A regular file, or a message naming what it is (a FIFO would block the loader). */
	if (mw_file_check(h->o.model, "model", "", MW_FILE_ANY_SIZE, &ferr)) {
		mw_error_print(&ferr);
		return MW_EXIT_USAGE;
	}
	h->record_only = mw_path_is_record(h->o.model);
	h->model_path = h->o.model;
	if (h->record_only && h->o.result)
		return mw_fail(MW_EXIT_USAGE, VERB, "give a RECORD as MODEL or with --result, "
			       "not both");
	if (h->record_only) {
		h->o.result = h->o.model;
	} else if (eng_tensors_from_file(h->o.model, &h->t, &eerr)) {
		fprintf(stderr, "memwall: %s: %s\n", eerr.source[0] ? eerr.source : h->o.model,
			eerr.text);
		return MW_EXIT_USAGE;
	}
	return MW_EXIT_OK;
}

/* The baseline: measured by a result record, else (baseline_analytic) the analytic step at
 * position 128. */
static int baseline_load(struct headroom *h)
{
	struct mw_error err;
	mw_error_clear(&err);
	h->pos = 128;
	h->baseline = NAN;
	if (!h->o.result)
		return MW_EXIT_OK;
	if (mw_result_load(&h->rec, h->o.result, &err)) {
		mw_error_print(&err);
		return MW_EXIT_USAGE;
	}
	/* A baseline from a record that does not validate, or of another model, would make
	 * every ratio below meaningless. */
	if (mw_result_validate(h->rec, h->o.result, &err)) {
		mw_error_print(&err);
		fprintf(stderr, "memwall " VERB ": %s does not validate (`memwall validate %s` "
			"says the same): its measured baseline cannot be used\n", h->o.result,
			h->o.result);
		return MW_EXIT_USAGE;
	}
	if (mw_record_view_load(h->rec, h->o.result, &h->view, &h->rt, &err)) {
		mw_error_print(&err);
		return MW_EXIT_USAGE;
	}
	if (!h->record_only &&
	    mw_record_model_check(h->rec, h->o.result, h->o.model, true, h->t, &err)) {
		mw_error_print(&err);
		fprintf(stderr, "memwall " VERB ": --result must be a record of %s itself\n",
			h->o.model);
		return MW_EXIT_USAGE;
	}
	h->pos = h->view.pos;
	h->baseline = h->view.measured_bytes;
	/* A calibrated record's best estimate of the bytes moved is the calibrated figure; the
	 * raw count and the calibration's error are named beside it. */
	bool cal = !isnan(h->view.calibrated_bytes);
	if (cal)
		h->baseline = h->view.calibrated_bytes;
	if (h->record_only) { /* the record's model is the model, its file if it is here */
		h->t = h->rt;
		h->rt = NULL;
		const char *mp = h->view.model_path;
		h->model_path = mp && file_exists(mp) ? mp : NULL;
	}
	/* Who counted the baseline's bytes: a simulated record's are never a measurement. */
	struct mw_provenance prov;
	char tag[128];
	mw_provenance_of(h->rec, &prov);
	char mb[32], calnote[200] = "";
	if (cal)
		snprintf(calnote, sizeof(calnote), ", calibrated: the counted %s MB/token times the "
			 "calibration's factor (calibration error %+.1f %%)",
			 mw_mb_text(h->view.measured_bytes, mb, sizeof(mb)), h->view.cal_error_pct);
	snprintf(h->baseline_note, sizeof(h->baseline_note), "%s%s: %s (%s; DRAM counted as %s)",
		 prov.source == MW_DRAM_SIMULATED ? "SIMULATED, not measured" : "measured",
		 calnote, h->view.measured_note, h->o.result,
		 mw_provenance_tag(&prov, tag, sizeof(tag)));
	return MW_EXIT_OK;
}

/* The analytic step (activations in f32 and f16), the measured baseline's plausibility
 * against it, and the analytic baseline when none was measured. */
static int baseline_analytic(struct headroom *h)
{
	const struct options *o = &h->o;
	h->synthetic = h->t->info.synthetic || h->view.synthetic;
	h->label = h->synthetic ? " [synthetic: random weights of the real shape]" : "";
	uint64_t llc = 0;
	char llc_src[300] = "";
	if (eng_llc_size(&llc, llc_src, sizeof(llc_src)))
		llc = 0;
	h->llc = llc;
	struct mw_analytic_options ao = { .pos = h->pos, .kv_elem_bytes = o->kv_bytes,
					  .llc_bytes = llc, .llc_source = llc_src };
	ao.act_elem_bytes = 4;
	if (mw_analytic_compute(h->t, &ao, &h->a))
		return mw_fail(MW_EXIT_USAGE, VERB, "%s: the model has no layers", o->model);
	ao.act_elem_bytes = 2;
	mw_analytic_compute(h->t, &ao, &h->a16);
	/* A measured baseline is checked first: projections from an implausible one inherit its
	 * error. The floor uses the record's LLC when it gives one. */
	h->pl = (struct mw_plausibility){ .verdict = MW_VERDICT_NOT_CHECKED, .ratio = NAN };
	if (!isnan(h->baseline)) {
		struct mw_analytic ar;
		struct mw_analytic_options ro = { .pos = h->pos, .kv_elem_bytes = o->kv_bytes,
						  .llc_bytes = h->view.llc_bytes,
						  .llc_source = h->view.llc_source };
		if (!mw_analytic_compute(h->t, &ro, &ar))
			mw_plausibility_check(&ar, h->baseline, h->view.instances,
					      h->view.n_instances, &h->pl);
	}
	if (isnan(h->baseline)) {
		h->baseline = (double)h->a.total;
		snprintf(h->baseline_note, sizeof(h->baseline_note), "analytic, not measured: the "
			 "bytes a dense decode step reads at position %d%s (give --result for a "
			 "measured baseline%s%s)", h->pos, h->label, o->result ? "; " : "",
			 o->result ? h->view.measured_note : "");
	}
	return MW_EXIT_OK;
}

/* Each projection applied to the baseline, with what would have to be true to reach it. */
static json_t *projections_list(const struct headroom *h)
{
	double bpw = 8.0 * (double)h->a.weights / elements_read(h->t);
	json_t *projs = json_array();
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(h->proj, "projections"), i, p) {
		double r = json_number_value(json_object_get(p, "reduction_pct"));
		double projected = h->baseline * (1 - r / 100);
		char must[900];
		what_must_hold(must, sizeof(must), projected, &h->a, bpw);
		json_array_append_new(projs, json_pack(
			"{s:O, s:f, s:o, s:f, s:f, s:s, s:O}", "name", json_object_get(p, "name"),
			"reduction_pct", r, "kind", json_string("projection"), "baseline_MB_per_token",
			h->baseline / 1e6, "projected_MB_per_token", projected / 1e6,
			"what_would_have_to_be_true", must, "assumptions",
			json_object_get(p, "assumptions") ? json_object_get(p, "assumptions")
							  : json_null()));
	}
	return projs;
}

/* R2 and R4: formulas on the real shape. */
static void contract_formulas(struct headroom *h)
{
	const struct eng_tensor_table *t = h->t;
	h->r2_ctx = contract_num(h->proj, "R2", "context");
	h->r2_limit = contract_num(h->proj, "R2", "limit_bytes");
	if (isnan(h->r2_ctx))
		h->r2_ctx = 4096;
	h->r2_bytes = mw_analytic_kv_bytes(t->info.n_layers, t->info.n_kv_heads, t->head_dim,
					   h->a.kv_elem_bytes, (uint64_t)h->r2_ctx);
	h->r4_limit = contract_num(h->proj, "R4", "limit_bytes");
	h->r4_between = !isnan(h->r4_limit) && (double)h->a.activation_layer > h->r4_limit &&
			(double)h->a.activation_layer <= h->r4_limit * 1.024;
	mw_r4_compute(t, h->pos + 1, &h->r4);
	if (mw_cache_size(NULL, 2, &h->l2, h->l2_src, sizeof(h->l2_src)))
		h->l2 = 0;
}

/* R1: the engine over the calibration prompts, with the tokenizer beside the model (or
 * --tokenizer); without one, over token ids. r1_reason says why it was not measured, or why
 * the prompts were not used. */
static void contract_r1(struct headroom *h)
{
	const struct options *o = &h->o;
	struct mw_error r1err;
	char *tokpath = h->tokpath, *r1_reason = h->r1_reason;
	size_t n = sizeof(h->tokpath), rn = sizeof(h->r1_reason);

	mw_error_clear(&r1err);
	h->eps = !isnan(o->epsilon) ? o->epsilon : contract_num(h->proj, "R1", "epsilon");
	if (isnan(h->eps))
		h->eps = 1e-3;
	if (o->tokenizer) {
		snprintf(tokpath, n, "%s", o->tokenizer);
	} else {
		snprintf(tokpath, n, "%s", h->model_path ? h->model_path : "");
		char *slash = strrchr(tokpath, '/');
		snprintf(slash ? slash + 1 : tokpath, n - (size_t)(slash ? slash + 1 - tokpath : 0),
			 "tokenizer.bin");
	}
	h->r1_ok = false;
	if (!h->model_path)
		snprintf(r1_reason, rn, "not measured: the record's model file is not here, and R1 "
			 "needs forward passes of the real weights");
	else if (file_exists(tokpath) && !mw_r1_measure(h->model_path, tokpath, h->prompts,
							 h->n_prompts, h->eps, &h->r1, &r1err))
		h->r1_ok = true;
	else if (mw_r1_measure(h->model_path, NULL, h->prompts, h->n_prompts, h->eps, &h->r1,
			       &r1err))
		snprintf(r1_reason, rn, "not measured%s: %.500s: %.700s",
			 h->t->info.format == ENG_FORMAT_GGUF ? " (R1 needs forward passes, and this "
			 "build's engine does not run GGUF models yet)" : "", r1err.source, r1err.text);
	else
		h->r1_ok = true;
	/* Why the prompts were not used, when they were not. */
	if (h->r1_ok && !r1err.text[0] && !file_exists(tokpath) && !o->tokenizer)
		snprintf(r1_reason, rn, "no tokenizer at %.1000s (give --tokenizer)", tokpath);
	else if (h->r1_ok && r1err.text[0])
		snprintf(r1_reason, rn, "%.500s: %.700s", r1err.source, r1err.text);
}

/* R3: adjacent layers' weights. */
static void contract_r3(struct headroom *h)
{
	int rc = mw_r3_measure(h->t, &h->r3);
	struct mw_error e3;
	h->r3e_ok = h->model_path && !mw_r3_engine_measure(h->model_path, &h->r3e, &e3);
	h->r3_ok = !rc;
	if (rc)
		snprintf(h->r3_reason, sizeof(h->r3_reason), "not measured: %s",
			 rc == -ENOTSUP ? "a tensor type memwall cannot dequantize"
			 : rc == -EINVAL ? "the model file is not here (a built-in description of its "
					   "shape has no weights)" : strerror(-rc));
}

static json_t *r1_object(const struct headroom *h)
{
	const struct mw_r1 *r1 = &h->r1;
	json_t *r1j = json_object();
	json_object_set_new(r1j, "measured", json_boolean(h->r1_ok));
	if (!h->r1_ok) {
		json_object_set_new(r1j, "reason", json_string(h->r1_reason));
		return r1j;
	}
	json_t *layers = json_array();
	for (int l = 0; l < r1->n_layers; l++) {
		const struct mw_r1_layer *L = &r1->layer[l];
		json_array_append_new(layers, json_pack(
			"{s:i, s:I, s:f, s:f}", "layer", l, "activations", (json_int_t)L->n,
			"exact_zero_fraction", L->n ? (double)L->zeros / (double)L->n : 0.0,
			"near_zero_fraction", L->n ? (double)L->near / (double)L->n : 0.0));
	}
	json_object_set_new(r1j, "epsilon", json_real(h->eps));
	char act[96];
	snprintf(act, sizeof(act), "%s, the input of the FFN down projection", r1->activation);
	json_object_set_new(r1j, "activation", json_string(act));
	json_object_set_new(r1j, "input", json_string(r1->input));
	if (h->r1_reason[0])
		json_object_set_new(r1j, "prompts_not_used", json_string(h->r1_reason));
	json_object_set_new(r1j, "sequences", json_integer((json_int_t)r1->prompts));
	json_object_set_new(r1j, "tokens", json_integer((json_int_t)r1->tokens));
	json_object_set_new(r1j, "layers", layers);
	json_object_set_new(r1j, "sparsity_map", json_pack(
		"{s:b, s:I, s:I, s:I, s:I, s:s}", "applies", r1->map_applies, "dense_bytes",
		(json_int_t)r1->dense_bytes, "skipped_bytes", (json_int_t)r1->skipped_bytes,
		"down_blocks_zero", (json_int_t)r1->down_blocks_zero, "down_blocks",
		(json_int_t)r1->down_blocks, "kind", "engine-accounted, over the same steps"));
	return r1j;
}

static json_t *r3_object(const struct headroom *h)
{
	const struct mw_r3 *r3 = &h->r3;
	json_t *r3j = json_object();
	json_object_set_new(r3j, "measured", json_boolean(h->r3_ok));
	if (!h->r3_ok) {
		json_object_set_new(r3j, "reason", json_string(h->r3_reason));
		return r3j;
	}
	json_t *zones = json_array(), *pairs = json_array();
	for (int z = 0; z < MW_ZONE_COUNT; z++)
		json_array_append_new(zones, json_pack(
			"{s:s, s:i, s:o, s:o, s:o}", "zone", mw_zone_name((enum mw_zone)z),
			"pairs", r3->zone_n[z], "mean_cosine", mw_json_num(r3->zone_mean[z]),
			"min_cosine", mw_json_num(r3->zone_min[z]), "max_cosine",
			mw_json_num(r3->zone_max[z])));
	for (size_t k = 0; k < r3->n; k++)
		json_array_append_new(pairs, json_pack(
			"{s:s, s:i, s:s, s:o}", "tensor", r3->pairs[k].kind, "layer",
			r3->pairs[k].layer, "zone", mw_zone_name(r3->pairs[k].zone), "cosine",
			mw_json_num(r3->pairs[k].cosine)));
	json_object_set_new(r3j, "zones", zones);
	json_object_set_new(r3j, "pairs", pairs);
	json_object_set_new(r3j, "aliasing", json_pack(
		"{s:s, s:i, s:i, s:i, s:i, s:o, s:f, s:b, s:i, s:i, s:s}", "method",
		"whole-tensor cosine of each matrix of layer l with the same matrix of layer l - 1 "
		"(dequantized); aliasable when >= the zone threshold of layer l (0.99 below "
		"floor(0.1 L), 0.97 below floor(0.4 L), 0.95 up to floor(0.6 L), 0.97 below "
		"floor(0.9 L), 0.99 from there)", "core_first_layer", r3->core_first,
		"core_last_layer", r3->core_last, "core_blocks", r3->core_blocks,
		"core_aliasable", r3->core_aliasable, "aliasing_ratio",
		mw_json_num(r3->aliasing_ratio), "limit", MW_R3_ALIASING_MIN, "pass",
		r3->core_blocks && r3->aliasing_ratio >= MW_R3_ALIASING_MIN, "blocks", r3->blocks,
		"aliasable", r3->aliasable, "note", "AIOS's validation/headroom.py (commit "
		"4d28f33d) samples synthetic random weights instead of reading the model's tensors; "
		"these cosines are of the model's own weights"));
	for (size_t k = 0; k < r3->n; k++) {
		json_t *pj = json_array_get(pairs, k);
		json_object_set_new(pj, "threshold", json_real(r3->pairs[k].threshold));
		json_object_set_new(pj, "aliasable", json_boolean(r3->pairs[k].aliasable));
		json_object_set_new(pj, "core", json_boolean(r3->pairs[k].core));
		json_object_set_new(pj, "delta_ratio", mw_json_num(r3->pairs[k].delta_ratio));
	}
	return r3j;
}

/* The document --json prints, and the text is printed from. New reference, or NULL. */
static json_t *document_build(struct headroom *h)
{
	const struct mw_analytic *a = &h->a;
	json_t *r1j = r1_object(h), *r3j = r3_object(h);
	json_t *doc = json_pack(
		"{s:s, s:b, s:s, s:O, s:{s:f, s:s, s:s, s:s}, s:o,"
		" s:{s:o, s:{s:f, s:I, s:i, s:o, s:o},"
		"    s:{s:I, s:o, s:s, s:I, s:o, s:b}, s:o, s:{s:b, s:s}}}",
		"model", h->o.model, "synthetic", h->synthetic, "tensors_from", h->t->source,
		"projections_source",
		json_object_get(h->proj, "source") ? json_object_get(h->proj, "source") : json_null(),
		"baseline", "MB_per_token", h->baseline / 1e6, "note", h->baseline_note,
		"plausibility", mw_verdict_name(h->pl.verdict), "plausibility_text", h->pl.text,
		"projections", h->projs,
		"contract", "R1", r1j,
		"R2", "context", h->r2_ctx, "kv_bytes", (json_int_t)h->r2_bytes, "kv_elem_bytes",
		a->kv_elem_bytes, "limit_bytes", mw_json_num(h->r2_limit), "pass",
		isnan(h->r2_limit) ? json_null() : json_boolean((double)h->r2_bytes <= h->r2_limit),
		"R4", "bytes_per_layer_f32", (json_int_t)a->activation_layer, "limit_bytes",
		mw_json_num(h->r4_limit), "precision_assumed", "f32", "bytes_per_layer_f16",
		(json_int_t)h->a16.activation_layer, "pass",
		isnan(h->r4_limit) ? json_null()
				   : json_boolean((double)a->activation_layer <= h->r4_limit),
		"between_KB_and_KiB", h->r4_between,
		"R3", r3j,
		"R5", "manifest_present", h->has_manifest, "looked_for", h->has_manifest ? h->manifest
			: "MODEL.manifest.json and manifest.json in the model's folder");
	json_t *r4 = json_object_get(json_object_get(doc, "contract"), "R4");
	if (r4) {
		const struct mw_r4 *f = &h->r4;
		json_object_set_new(r4, "contract_formula_bytes", json_integer((json_int_t)
				    f->contract_bytes));
		json_object_set_new(r4, "contract_formula", json_string("(2 d_model + 4 d_ffn) x 2 B"));
		json_object_set_new(r4, "contract_pass", json_boolean(f->contract_bytes <=
								       MW_R4_LIMIT_BYTES));
		json_object_set_new(r4, "engine_buffers_bytes", json_integer((json_int_t)
				    f->engine_bytes));
		json_object_set_new(r4, "engine_attention_bytes", json_integer((json_int_t)
				    f->attention_bytes));
		json_object_set_new(r4, "positions", json_integer(f->positions));
		json_object_set_new(r4, "l2_bytes", h->l2 ? json_integer((json_int_t)h->l2)
							  : json_null());
		json_object_set_new(r4, "l2_source", json_string(h->l2 ? h->l2_src : "unavailable: "
					"sysfs gives no L2 size here"));
		json_object_set_new(r4, "fits_l2", h->l2 ? json_boolean(
			f->contract_bytes <= h->l2 && f->engine_bytes + f->attention_bytes <= h->l2)
			: json_null());
	}
	if (doc && h->mech)
		json_object_set(doc, "mechanisms", h->mech);
	return doc;
}

static void report_print(const struct headroom *h)
{
	const struct eng_tensor_table *t = h->t;
	const struct mw_analytic *a = &h->a;
	const struct mw_r1 *r1 = &h->r1;
	const struct mw_r3 *r3 = &h->r3;
	double baseline = h->baseline, r4_limit = h->r4_limit;
	size_t i;
	json_t *p;

	printf("model: %s (%s)%s\n  tensors from: %s\n", h->o.model,
	       t->info.arch ? t->info.arch : "?", h->label, t->source);
	char mb[2][32];
	printf("baseline: %s MB/token, %s\n", mw_mb_text(baseline, mb[0], sizeof(mb[0])),
	       h->baseline_note);
	if (h->pl.verdict == MW_VERDICT_IMPLAUSIBLE || h->pl.verdict == MW_VERDICT_EXCESS)
		printf("  WARNING: the baseline is %s, and every projection below inherits it: "
		       "%s\n", mw_verdict_name(h->pl.verdict), h->pl.text);
	printf("projections (%s; AIOS's figures: projections, not measurements):\n",
	       json_is_string(json_object_get(h->proj, "source"))
		       ? json_string_value(json_object_get(h->proj, "source")) : "?");
	json_array_foreach(h->projs, i, p)
		printf("  %s: -%.0f %% -> %s MB/token against %s MB/token\n    what would have "
		       "to be true: %s\n", json_string_value(json_object_get(p, "name")),
		       json_number_value(json_object_get(p, "reduction_pct")),
		       mw_mb_text(json_number_value(json_object_get(p, "projected_MB_per_token")) * 1e6,
				  mb[0], sizeof(mb[0])), mw_mb_text(baseline, mb[1], sizeof(mb[1])),
		       json_string_value(json_object_get(p, "what_would_have_to_be_true")));
	printf("Model Contract, computed from the model%s:\n", h->label);
	if (h->r1_ok) {
		printf("  R1 FFN activation sparsity (%s over %zu tokens, near zero: |a| <= %g)\n"
		       "     input: %s\n", r1->activation, r1->tokens, h->eps, r1->input);
		if (h->r1_reason[0])
			printf("     calibration prompts not used: %s\n", h->r1_reason);
		for (int l = 0; l < r1->n_layers; l++) {
			const struct mw_r1_layer *L = &r1->layer[l];
			printf("     layer %2d: exact zero %.4f %%, near zero %.4f %%\n", l,
			       L->n ? 100.0 * (double)L->zeros / (double)L->n : 0,
			       L->n ? 100.0 * (double)L->near / (double)L->n : 0);
		}
	} else {
		printf("  R1 FFN activation sparsity: %s\n", h->r1_reason);
	}
	printf("  R2 KV cache at %.0f context (%d B per element): %.2f MiB against %.0f MiB: %s\n",
	       h->r2_ctx, a->kv_elem_bytes, (double)h->r2_bytes / 1048576.0, h->r2_limit / 1048576.0,
	       isnan(h->r2_limit) ? "no limit" : (double)h->r2_bytes <= h->r2_limit ? "pass" : "FAIL");
	if (h->r3_ok) {
		printf("  R3 cosine similarity of adjacent layers' weights (%zu pairs):\n", r3->n);
		for (int z = 0; z < MW_ZONE_COUNT; z++)
			if (r3->zone_n[z])
				printf("     %-6s %2d pairs: mean %.4f, min %.4f, max %.4f\n",
				       mw_zone_name((enum mw_zone)z), r3->zone_n[z], r3->zone_mean[z],
				       r3->zone_min[z], r3->zone_max[z]);
			else
				printf("     %-6s no pairs (too few layers)\n",
				       mw_zone_name((enum mw_zone)z));
		printf("     aliasing (whole-tensor cosine of each matrix with the layer before's, "
		       "aliasable at >= its layer's zone threshold 0.99/0.97/0.95/0.97/0.99):\n"
		       "     core zone layers %d..%d: %d of %d blocks aliasable, ratio %.1f %% "
		       "against >= %.0f %%: %s; all layers: %d of %d\n", r3->core_first,
		       r3->core_last, r3->core_aliasable, r3->core_blocks, 100 * r3->aliasing_ratio,
		       100 * MW_R3_ALIASING_MIN, !r3->core_blocks ? "no blocks"
		       : r3->aliasing_ratio >= MW_R3_ALIASING_MIN ? "pass" : "FAIL", r3->aliasable,
		       r3->blocks);
		printf("     (AIOS's validation/headroom.py samples synthetic random weights, not "
		       "the model's; these are the model's own tensors)\n");
	} else {
		printf("  R3 cross-layer similarity: %s\n", h->r3_reason);
	}
	printf("  R4 activations per layer at batch 1: %.1f KB in f32 (assumed; AIOS's spec is "
	       "inconsistent about the precision), %.1f KB in f16, against %.0f KB: %s%s\n",
	       (double)a->activation_layer / 1e3, (double)h->a16.activation_layer / 1e3,
	       r4_limit / 1e3,
	       isnan(r4_limit) ? "no limit" : (double)a->activation_layer <= r4_limit ? "pass" : "FAIL",
	       h->r4_between ? " (but within 200 KiB: the verdict hangs on KB vs KiB)" : "");
	const struct mw_r4 *f = &h->r4;
	printf("     contract formula (2 d_model + 4 d_ffn) x 2 B: %llu B against 200 KB: %s; "
	       "engine's f32 buffers %llu B + attention weights %llu B at %d positions; L2 %s: "
	       "%s\n", (unsigned long long)f->contract_bytes,
	       f->contract_bytes <= MW_R4_LIMIT_BYTES ? "pass" : "FAIL",
	       (unsigned long long)f->engine_bytes, (unsigned long long)f->attention_bytes,
	       f->positions, h->l2 ? h->l2_src : "unknown (sysfs gives no L2 size)",
	       !h->l2 ? "not compared" : f->contract_bytes <= h->l2 &&
	       f->engine_bytes + f->attention_bytes <= h->l2 ? "both fit" : "DO NOT both fit");
	if (h->l2)
		printf("     L2 = %llu B\n", (unsigned long long)h->l2);
	printf("  R5 manifest: %s\n", h->has_manifest ? h->manifest : h->model_path ? "absent "
	       "(looked for MODEL.manifest.json and manifest.json beside the model)"
	       : "not checked: the model file is not here");
}

static void figure_print(const json_t *f)
{
	const json_t *pct = json_object_get(f, "reduction_pct");
	if (json_is_number(pct))
		printf(" %.2f %%: ", json_number_value(pct));
	else
		printf(" ");
	printf("%s (%s) |", json_string_value(json_object_get(f, "text")),
	       json_string_value(json_object_get(f, "kind")));
}

/* The mechanisms as a markdown table: projection, prediction, measurement, each with its
 * kind and source. */
static void mechanisms_print(const struct headroom *h)
{
	size_t i;
	json_t *m;
	printf("\n## Mechanisms: AIOS's projection, memwall's prediction, the measurement\n\n"
	       "| rule | AIOS's projection | memwall's prediction for this model | measured |\n"
	       "|---|---|---|---|\n");
	json_array_foreach(h->mech, i, m) {
		const json_t *pr = json_object_get(m, "projection");
		printf("| %s %s | %s |", json_string_value(json_object_get(m, "rule")),
		       json_string_value(json_object_get(m, "mechanism")),
		       json_string_value(json_object_get(pr, "text")));
		figure_print(json_object_get(m, "prediction"));
		figure_print(json_object_get(m, "measurement"));
		printf("\n");
	}
}

int mw_cmd_headroom(int argc, char **argv)
{
	struct headroom h = { .o = { .epsilon = NAN } };
	struct mw_error err;
	bool help = false;
	int rc, status = MW_EXIT_OK;

	mw_error_clear(&err);
	if ((rc = parse_args(argc, argv, &h.o, &help)) || help) {
		if (help)
			usage(stdout);
		return rc;
	}
	if (mw_projections_load(&h.proj, h.o.projections, &err) ||
	    mw_calibration_load(&h.prompts, &h.n_prompts, h.o.calibration, &err)) {
		mw_error_print(&err);
		status = MW_EXIT_USAGE;
		goto out;
	}
	if ((status = model_open(&h)) || (status = baseline_load(&h)) ||
	    (status = baseline_analytic(&h)))
		goto out;
	h.projs = projections_list(&h);
	contract_formulas(&h);
	contract_r1(&h);
	contract_r3(&h);
	h.has_manifest = h.model_path && find_manifest(h.model_path, h.manifest,
						       sizeof(h.manifest));
	struct mw_mech_inputs mi = { .proj = h.proj, .t = h.t, .a = &h.a,
				     .r1 = h.r1_ok ? &h.r1 : NULL, .r1_reason = h.r1_reason,
				     .r3 = h.r3_ok ? &h.r3 : NULL, .r3_reason = h.r3_reason,
				     .r3_engine = h.r3e_ok ? &h.r3e : NULL,
				     .r4 = &h.r4, .l2 = h.l2, .llc = h.llc,
				     .r2 = h.o.r2, .n_r2 = h.o.n_r2,
				     .manifest = h.has_manifest };
	h.mech = mw_mechanisms_build(&mi);

	/* The document, then text or JSON from it. */
	h.out = document_build(&h);
	if (!h.out) {
		status = mw_fail(MW_EXIT_USAGE, VERB, "out of memory");
		goto out;
	}
	if (h.o.json) {
		json_dumpf(h.out, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
		fputc('\n', stdout);
		goto out;
	}
	report_print(&h);
	mechanisms_print(&h);
out:
	json_decref(h.out);
	json_decref(h.mech);
	json_decref(h.proj);
	json_decref(h.rec);
	mw_calibration_free(h.prompts, h.n_prompts);
	mw_r1_free(&h.r1);
	mw_r3_free(&h.r3);
	eng_tensor_table_free(h.t);
	eng_tensor_table_free(h.rt);
	return status;
}
