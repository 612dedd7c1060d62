/* src/cli/cmd_roofline.c: `memwall roofline MODEL|RESULT`: how far a decode step is from what the
 * hardware allows, and whether a measured MB/token is even plausible.
 *
 * The analytic model (analytic.h) comes from the model's own tensor table: the file given, the
 * file a result record names, or a built-in description of it (for the AIOS reference, whose
 * file is not here). The bandwidth roof is --bandwidth, else the record's own probe, else (for
 * a model) a probe run now; the compute roof is the decode kernel's peak, measured now. A
 * record from another machine gets no roof measured here: this machine is not that one.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analytic.h"
#include "cgroup.h"
#include "opt.h"
#include "record_view.h"
#include "result.h"
#include "roofline.h"
#include "stats.h"
#include "text.h"
#include "verbs.h"

#define VERB "roofline"

struct options {
	const char *input;
	double bandwidth; /* NAN: not given */
	const char *plot;
	const char *kernels;
	int pos;          /* -1: 128 for a model, the decode window's middle for a record */
	int threads;      /* <= 0: every allowed CPU */
	int kv_bytes;     /* 0: the model's default */
	bool threads_given;
	uint64_t llc;     /* 0: from sysfs or the record */
	bool json;
	int batch[16];    /* --batch 1,2,4,8: the batch curve's N; n_batch 0: none */
	size_t n_batch;
	int spec_k;       /* --speculate K:ACC; 0: none */
	double spec_acc;
};

/* "1,2,4,8": 1 to 16 values from 1 to 64 (the protocol's batch range). */
static int parse_batch(const char *arg, struct options *o)
{
	const char *s = arg;
	o->n_batch = 0;
	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || v < 1 || v > 64 || (*end && *end != ',') ||
		    o->n_batch == sizeof(o->batch) / sizeof(o->batch[0]))
			return mw_fail(MW_EXIT_USAGE, VERB, "--batch '%s': want up to 16 batch sizes "
				       "from 1 to 64 separated by commas, e.g. 1,2,4,8", arg);
		o->batch[o->n_batch++] = (int)v;
		s = *end ? end + 1 : end;
	}
	return o->n_batch ? 0 : mw_fail(MW_EXIT_USAGE, VERB, "--batch '': give e.g. 1,2,4,8");
}

static int parse_spec(const char *arg, struct options *o)
{
	char *end;
	long k = strtol(arg, &end, 10);
	if (end != arg && *end == ':' && k >= 1 && k <= 32 &&
	    !mw_parse_double(end + 1, 0.0, 1.0, &o->spec_acc)) {
		o->spec_k = (int)k;
		return 0;
	}
	return mw_fail(MW_EXIT_USAGE, VERB, "--speculate '%s': want K:ACC, K draft tokens 1 to 32 "
		       "and ACC the acceptance rate 0 to 1, e.g. 4:0.6", arg);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memwall roofline MODEL|RESULT [--bandwidth GBPS] [--json] [--plot DIR]\n"
		"                        [--batch N,N,...] [--speculate K:ACC]\n"
		"                        [--pos N] [--kv f32|f16] [--llc MiB] [-t N] [--kernels T]\n\n"
		"The analytic model of one decode step from the model's tensor table (weights read\n"
		"per token, KV cache read and written, activations, FLOPs, the DRAM floor), its\n"
		"roofline, and for a result record the measured point, the headroom, the DRAM\n"
		"efficiency and the plausibility of its measured MB/token.\n\n"
		"  MODEL              a llama2.c checkpoint or a GGUF file\n"
		"  RESULT             a result record (.json); its model file, or a built-in\n"
		"                     description of it when the file is not here\n"
		"  --bandwidth GBPS   the bandwidth roof in GB/s (10^9 B/s); default: the record's\n"
		"                     probe, or for a MODEL a read probe run now\n"
		"  --pos N            the step's position (default 128 for a MODEL, the middle of\n"
		"                     the decode window for a RESULT)\n"
		"  --kv f32|f16       KV cache type (default f32 for llama2.c, f16 for GGUF)\n"
		"  --llc MiB          LLC size for the floor (default: sysfs, or the record's)\n"
		"  -t, --threads N    threads for the probes run now (default: every allowed CPU, no\n"
		"                     more than the cgroup's CPU quota)\n"
		"  --kernels T        kernel table for the compute roof (default auto)\n"
		"  --batch 1,2,4,8    also the batched-decode curve: per N, weight, KV and total\n"
		"                     MB per generated token, the memory and compute roofs' tok/s,\n"
		"                     the predicted tok/s and the speedup against the first N\n"
		"  --speculate K:ACC  also prompt-lookup speculation's predicted MB per generated\n"
		"                     token with K draft tokens accepted at rate ACC (0 to 1)\n"
		"  --json             one JSON object on stdout (without the two above)\n"
		"  --plot DIR         write DIR/roofline.png and .svg with gnuplot\n\n"
		"A RESULT must validate (`memwall validate`) and, where its model file is here,\n"
		"still be that model (size and shape); otherwise it is refused (exit 2).\n\n"
		"Exit status: 0, 1 when a measured MB/token is IMPLAUSIBLE, 2 bad input.\n");
}

static int parse_args(int argc, char **argv, struct options *o, bool *help)
{
	enum { OPT_BW = 256, OPT_JSON, OPT_PLOT, OPT_POS, OPT_KV, OPT_LLC, OPT_KERNELS, OPT_BATCH,
	       OPT_SPEC };
	static const struct option longopts[] = {
		{ "bandwidth", required_argument, NULL, OPT_BW },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "plot", required_argument, NULL, OPT_PLOT },
		{ "pos", required_argument, NULL, OPT_POS },
		{ "kv", required_argument, NULL, OPT_KV },
		{ "llc", required_argument, NULL, OPT_LLC },
		{ "threads", required_argument, NULL, 't' },
		{ "kernels", required_argument, NULL, OPT_KERNELS },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "speculate", required_argument, NULL, OPT_SPEC },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long v;
	int c;
	struct mw_opt op;
	mw_opt_init(&op, VERB, argc, argv, "t:h", longopts);
	while ((c = mw_opt_next(&op)) != -1) {
		switch (c) {
		case OPT_BW:
			if (mw_parse_double(optarg, 1e-3, 1e6, &o->bandwidth) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB, "--bandwidth '%s': want GB/s, "
					       "a number above 0", optarg);
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_PLOT:
			o->plot = mw_path_trim(optarg);
			break;
		case OPT_POS:
			if (mw_parse_long(optarg, 0, 1L << 24, &v) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB, "--pos '%s': want a position "
					       "from 0", optarg);
			o->pos = (int)v;
			break;
		case OPT_KV:
			if (strcmp(optarg, "f32") && strcmp(optarg, "f16"))
				return mw_fail(MW_EXIT_USAGE, VERB, "--kv '%s': want f32 or f16",
					       optarg);
			o->kv_bytes = strcmp(optarg, "f32") ? 2 : 4;
			break;
		case OPT_LLC:
			if (mw_parse_long(optarg, 1, 1L << 20, &v) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB, "--llc '%s': want MiB from 1",
					       optarg);
			o->llc = (uint64_t)v << 20;
			break;
		case 't':
			if (mw_parse_long(optarg, 1, MW_THREADS_MAX, &v) < 0)
				return mw_fail(MW_EXIT_USAGE, VERB, "--threads '%s': want 1 to %d",
					       optarg, MW_THREADS_MAX);
			o->threads = (int)v;
			o->threads_given = true;
			break;
		case OPT_KERNELS:
			o->kernels = optarg;
			break;
		case OPT_BATCH:
			if (parse_batch(optarg, o))
				return MW_EXIT_USAGE;
			break;
		case OPT_SPEC:
			if (parse_spec(optarg, o))
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
		return mw_fail(MW_EXIT_USAGE, VERB, optind < argc ? "one MODEL or RESULT, not more"
								   : "give a MODEL or RESULT file");
	o->input = argv[optind];
	return MW_EXIT_OK;
}

/* The read-bandwidth roof now: the median of read passes over 8x the LLC (at least 64 MiB)
 * for about half a second, as `memwall bandwidth --kernel read` measures it. */
static int probe_bandwidth(const struct options *o, uint64_t llc, struct mw_roofline_inputs *in)
{
	struct eng_stream *s = NULL;
	struct eng_error eerr;
	double rates[64];
	int n = 0, rc;
	eng_error_clear(&eerr);
	uint64_t bytes = llc * 8 > (64u << 20) ? llc * 8 : (64u << 20);
	struct eng_stream_options so = { .threads = o->threads, .bytes = bytes,
					 .kernels = o->kernels };
	if ((rc = eng_stream_new(&s, &so, &eerr))) {
		snprintf(in->bw_source, sizeof(in->bw_source),
			 "not measured: the bandwidth probe could not start: %.400s", eerr.text);
		return rc;
	}
	struct eng_stream_sample smp;
	double t0 = mw_now_s();
	while (n < 64 && (n < 5 || mw_now_s() - t0 < 0.5)) {
		if ((rc = eng_stream_run(s, ENG_STREAM_READ, false, &smp)))
			break;
		rates[n++] = (double)smp.bytes_read / smp.seconds / 1e9;
	}
	if (n) {
		in->bw_gbps = mw_percentile(rates, (size_t)n, 50);
		snprintf(in->bw_source, sizeof(in->bw_source),
			 "measured now: median of %d read passes (eng_stream, %s kernels, %d "
			 "threads) over %.0f MiB", n, eng_stream_kernels(s), o->threads,
			 (double)eng_stream_bytes(s) / 1048576.0);
	} else {
		snprintf(in->bw_source, sizeof(in->bw_source), "not measured: the probe failed: %s",
			 strerror(-rc));
	}
	eng_stream_free(s);
	return n ? 0 : rc;
}

/* The weight type the step reads most bytes of: its kernel sets the compute roof. */
static uint32_t dominant_type(const struct eng_tensor_table *t)
{
	uint64_t bytes[64] = { 0 }, best = 0;
	uint32_t type = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->t[i].type_id < 64 && t->t[i].rows > 1)
			bytes[t->t[i].type_id] += t->t[i].step_bytes;
	for (uint32_t k = 0; k < 64; k++)
		if (bytes[k] > best) {
			best = bytes[k];
			type = k;
		}
	return type;
}

static void probe_peak(const struct options *o, const struct eng_tensor_table *t,
		       struct mw_roofline_inputs *in)
{
	struct eng_peak pk;
	struct eng_error eerr;
	eng_error_clear(&eerr);
	if (eng_peak_measure(o->kernels, dominant_type(t), o->threads, 0.2, &pk, &eerr)) {
		snprintf(in->peak_source, sizeof(in->peak_source), "not measured: %.200s", eerr.text);
		return;
	}
	in->peak_flops = pk.flops;
	snprintf(in->peak_source, sizeof(in->peak_source),
		 "measured now: %s on %d thread%s for %.2f s, operands in L1", pk.kernel,
		 pk.threads, pk.threads == 1 ? "" : "s", pk.seconds);
}

/* The calibrated estimate over the analytic bytes, where the record has one; NAN else. */
static double calibrated_efficiency(const struct mw_analytic *a, const struct mw_record_view *v)
{
	return v && !isnan(v->calibrated_bytes) && a->total ? v->calibrated_bytes /
							      (double)a->total : NAN;
}

static void print_text(const struct eng_tensor_table *t, const struct mw_analytic *a,
		       const struct mw_roofline_inputs *in, const struct mw_roofline *r,
		       const struct mw_plausibility *pl, const char *pos_statement,
		       const struct mw_record_view *view)
{
	const char *measured_note = view ? view->measured_note : "";
	bool sim = view && view->simulated;
	const struct eng_model_info *m = &t->info;
	printf("model: %s (%s, %s%s)\n", t->source, m->arch ? m->arch : "?",
	       m->format == ENG_FORMAT_GGUF ? "GGUF" : "llama2.c", m->synthetic ? ", synthetic" : "");
	printf("  shape: dim %d, ffn %d, %d layers, %d heads (%d KV, head dim %d), vocab %d\n",
	       m->dim, m->hidden_dim, m->n_layers, m->n_heads, m->n_kv_heads, t->head_dim,
	       m->vocab_size);
	printf("analytic decode step at %s (MB = 10^6 bytes)%s:\n", pos_statement,
	       m->synthetic ? ", synthetic weights" : "");
	printf("  weights read          %12.3f MB  (%" PRIu64 " B; the embedding contributes one "
	       "row, %" PRIu64 " B)\n", (double)a->weights / 1e6, a->weights, a->embedding_row);
	for (int c = 0; c < ENG_TENSOR_CLASS_COUNT; c++)
		printf("    %-19s %12.3f MB\n", eng_tensor_class_name((enum eng_tensor_class)c),
		       (double)a->by_class[c] / 1e6);
	printf("  KV cache read         %12.3f MB  (%d B per element)\n", (double)a->kv_read / 1e6,
	       a->kv_elem_bytes);
	printf("  KV cache written      %12.3f MB\n", (double)a->kv_write / 1e6);
	printf("  total                 %12.3f MB/token\n", (double)a->total / 1e6);
	printf("  activations per layer %12.1f KB  (%" PRIu64 " elements x %d B; attention "
	       "scores apart: %.1f KB)\n", (double)a->activation_layer / 1e3,
	       a->activation_elems_layer, a->act_elem_bytes, (double)a->attention_scores / 1e3);
	printf("  FLOPs per token       %12.4g\n", a->flops);
	printf("  DRAM floor            %12.3f MB/token  (%s)\n", (double)a->floor / 1e6,
	       a->llc_statement);
	if (isnan(in->bw_gbps))
		printf("bandwidth roof: %s\n", in->bw_source);
	else
		printf("bandwidth roof: %.2f GB/s (%s)\n", in->bw_gbps, in->bw_source);
	if (isnan(in->peak_flops))
		printf("compute roof: %s\n", in->peak_source);
	else
		printf("compute roof: %.2f GFLOP/s (%s)\n", in->peak_flops / 1e9, in->peak_source);
	if (!a->far_larger_than_llc)
		printf("note: the weights read per token are not far larger than the LLC, so they "
		       "may stay cache-resident and the DRAM roof need not bind\n");
	if (isnan(r->max_tok_s))
		printf("max tok/s: not available: no roof (give --bandwidth)\n");
	else
		printf("max tok/s = min(BW / bytes, peak / FLOPs) = %.4g (%s-bound; memory roof "
		       "%.4g, compute roof %.4g)\n", r->max_tok_s, r->bound, r->max_tok_s_bw,
		       r->max_tok_s_compute);
	if (isnan(in->measured_tok_s))
		printf("measured tok/s: not measured (%s)\n",
		       in->tok_s_why[0] ? in->tok_s_why : "a model file; give a result record");
	else if (isnan(r->headroom))
		printf("measured tok/s: %.4g; headroom: not available without a roof\n",
		       in->measured_tok_s);
	else
		printf("measured tok/s: %.4g; headroom = roof / measured = %.3gx\n",
		       in->measured_tok_s, r->headroom);
	if (isnan(r->dram_efficiency))
		printf("DRAM efficiency: not measured: %s\n",
		       in->not_measured_why[0] ? in->not_measured_why : "no DRAM counter figure");
	else if (sim)
		/* A simulated PMU's counts are never called measured (provenance.c's words). */
		printf("DRAM efficiency = SIMULATED / analytic = %.3f (%s; SIMULATED: the simulated "
		       "PMU's scripted counts, not hardware's)\n", r->dram_efficiency, measured_note);
	else
		printf("DRAM efficiency = measured / analytic = %.3f (%s)\n", r->dram_efficiency,
		       measured_note);
	double cal = calibrated_efficiency(a, view);
	if (!isnan(cal))
		printf("DRAM efficiency, calibrated = calibrated estimate / analytic = %.3f (the "
		       "counted bytes times the calibration's factor; calibration error %+.1f %%)\n",
		       cal, view->cal_error_pct);
	printf("plausibility%s: %s\n", sim && pl->verdict != MW_VERDICT_NOT_CHECKED
	       ? " (of SIMULATED counts)" : "", pl->text);
}

static void print_json(const struct eng_tensor_table *t, const struct mw_analytic *a,
		       const struct mw_roofline_inputs *in, const struct mw_roofline *r,
		       const struct mw_plausibility *pl, int pos, const char *pos_statement,
		       const struct mw_record_view *view)
{
	const char *measured_note = view ? view->measured_note : "";
	json_t *cls = json_object();
	for (int c = 0; c < ENG_TENSOR_CLASS_COUNT; c++)
		json_object_set_new(cls, eng_tensor_class_name((enum eng_tensor_class)c),
				    json_integer((json_int_t)a->by_class[c]));
	json_t *doc = json_pack(
		"{s:{s:s, s:s, s:b, s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:i},"
		" s:{s:i, s:s, s:I, s:o, s:I, s:i, s:I, s:I, s:I, s:I, s:i, s:I, s:f, s:I, s:s, s:I, s:b},"
		" s:{s:o, s:s, s:o, s:s},"
		" s:{s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:s},"
		" s:{s:s, s:o, s:s}}",
		"model", "source", t->source, "arch", t->info.arch ? t->info.arch : "?",
		"synthetic", t->info.synthetic, "file_bytes", (json_int_t)t->info.file_bytes,
		"dim", t->info.dim, "hidden_dim", t->info.hidden_dim, "n_layers", t->info.n_layers,
		"n_heads", t->info.n_heads, "n_kv_heads", t->info.n_kv_heads, "head_dim",
		t->head_dim, "vocab_size", t->info.vocab_size,
		"analytic", "pos", pos, "pos_statement", pos_statement, "weights_bytes",
		(json_int_t)a->weights, "weights_by_class_bytes", cls, "embedding_row_bytes",
		(json_int_t)a->embedding_row, "kv_elem_bytes", a->kv_elem_bytes, "kv_read_bytes",
		(json_int_t)a->kv_read, "kv_write_bytes", (json_int_t)a->kv_write,
		"total_bytes_per_token", (json_int_t)a->total, "activation_bytes_per_layer",
		(json_int_t)a->activation_layer, "act_elem_bytes", a->act_elem_bytes,
		"attention_scores_bytes", (json_int_t)a->attention_scores, "flops_per_token",
		a->flops, "llc_bytes", (json_int_t)a->llc, "llc_statement", a->llc_statement,
		"floor_bytes_per_token", (json_int_t)a->floor, "far_larger_than_llc",
		a->far_larger_than_llc,
		"roofs", "bandwidth_gbps", mw_json_num(in->bw_gbps), "bandwidth_source",
		in->bw_source, "peak_flops", mw_json_num(in->peak_flops), "peak_source",
		in->peak_source,
		"roofline", "max_tok_per_s", mw_json_num(r->max_tok_s), "max_tok_per_s_memory",
		mw_json_num(r->max_tok_s_bw), "max_tok_per_s_compute",
		mw_json_num(r->max_tok_s_compute), "bound", r->bound, "measured_tok_per_s",
		mw_json_num(in->measured_tok_s), "headroom", mw_json_num(r->headroom),
		"dram_efficiency", mw_json_num(r->dram_efficiency), "dram_efficiency_note",
		isnan(r->dram_efficiency)
			? (in->not_measured_why[0] ? in->not_measured_why : "not measured")
			: measured_note,
		"plausibility", "verdict", mw_verdict_name(pl->verdict), "ratio_to_floor",
		mw_json_num(pl->ratio), "text", pl->text);
	json_t *roof = json_object_get(doc, "roofline");
	if (roof && view) {
		/* who counted the bytes, and the calibrated estimate's efficiency (fields added) */
		json_object_set_new(roof, "dram_source", json_string(
			isnan(view->measured_bytes) ? "none" : view->simulated ? "simulated"
									     : "hardware"));
		json_object_set_new(roof, "dram_efficiency_calibrated",
				    mw_json_num(calibrated_efficiency(a, view)));
		json_object_set_new(roof, "calibration_error_pct", mw_json_num(view->cal_error_pct));
	}
	if (doc) {
		json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
		fputc('\n', stdout);
	}
	json_decref(doc);
}

/* A record for the roofline: one that validates (its figures agree with its raw data: an
 * edited or broken record would put any tok/s on the chart) and whose model file, where it is
 * here, is still the model it measured (size and shape; hashing a 4 GB model is left to
 * `memwall validate`'s caller). MW_EXIT_OK, or MW_EXIT_USAGE with the reason printed. */
static int record_open(const char *path, json_t **doc, struct mw_record_view *view,
		       struct eng_tensor_table **t)
{
	struct mw_error err;
	mw_error_clear(&err);
	if (mw_result_load(doc, path, &err)) {
		mw_error_print(&err);
		return MW_EXIT_USAGE;
	}
	if (mw_result_validate(*doc, path, &err)) {
		mw_error_print(&err);
		fprintf(stderr, "memwall " VERB ": %s does not validate (`memwall validate %s` "
			"says the same): the roofline reads only records whose figures agree with "
			"their raw data\n", path, path);
		return MW_EXIT_USAGE;
	}
	if (mw_record_view_load(*doc, path, view, t, &err)) {
		mw_error_print(&err);
		return MW_EXIT_USAGE;
	}
	const char *mp = view->model_path;
	struct stat st;
	if (mp && stat(mp, &st) == 0 && mw_record_model_check(*doc, path, mp, false, *t, &err)) {
		mw_error_print(&err);
		return MW_EXIT_USAGE;
	}
	return MW_EXIT_OK;
}

int mw_cmd_roofline(int argc, char **argv)
{
	struct options o = { .bandwidth = NAN, .pos = -1 };
	struct eng_tensor_table *t = NULL;
	struct mw_record_view view = { 0 };
	struct mw_roofline_inputs in = { .bw_gbps = NAN, .peak_flops = NAN,
					 .measured_tok_s = NAN, .measured_bytes = NAN };
	struct mw_analytic a;
	struct mw_roofline r;
	struct mw_plausibility pl;
	struct mw_error err;
	struct eng_error eerr;
	json_t *doc = NULL;
	char pos_statement[300], llc_source[300] = "";
	bool help = false, record;
	int rc, status = MW_EXIT_OK;

	mw_error_clear(&err);
	eng_error_clear(&eerr);
	if ((rc = parse_args(argc, argv, &o, &help)) || help) {
		if (help)
			usage(stdout);
		return rc;
	}
	if (o.threads <= 0) {
		char capped[1024];
		o.threads = mw_cpus_default(capped, sizeof(capped));
		if (capped[0])
			fprintf(stderr, "memwall roofline: threads: %s\n", mw_esc(capped));
	}
	record = mw_path_is_record(o.input);
	uint64_t llc = o.llc;
	if (o.llc)
		snprintf(llc_source, sizeof(llc_source), "--llc");

	if (record) {
		if ((rc = record_open(o.input, &doc, &view, &t))) {
			status = rc;
			goto out;
		}
		if (!llc && view.llc_bytes) {
			llc = view.llc_bytes;
			snprintf(llc_source, sizeof(llc_source), "%s", view.llc_source);
		}
		in.measured_tok_s = view.measured_tok_s;
		snprintf(in.tok_s_why, sizeof(in.tok_s_why), "%s", view.tok_s_note);
		in.measured_bytes = view.measured_bytes;
		if (isnan(view.measured_bytes))
			snprintf(in.not_measured_why, sizeof(in.not_measured_why), "%s",
				 view.measured_note);
		if (!isnan(view.bw_gbps)) {
			in.bw_gbps = view.bw_gbps;
			snprintf(in.bw_source, sizeof(in.bw_source), "%s", view.bw_source);
		} else {
			snprintf(in.bw_source, sizeof(in.bw_source),
				 "not available: the record has no bandwidth probe, and one run here "
				 "would measure this machine, not the record's; give --bandwidth");
		}
		/* A run record's model file is here: its kernel's peak is measured now, on this
		 * machine, with the record's threads (a reference's machine is another one). */
		if (!view.reference && t->t[0].data) {
			if (!o.threads_given && view.threads > 0 &&
			    view.threads <= mw_cpus_allowed())
				o.threads = view.threads;
			probe_peak(&o, t, &in);
		} else {
			snprintf(in.peak_source, sizeof(in.peak_source), "not available: %s",
				 view.reference ? "a reference record's machine is not this one"
						: "the model file is not here");
		}
		if (o.pos >= 0)
			snprintf(pos_statement, sizeof(pos_statement), "position %d (--pos)", o.pos);
		else
			snprintf(pos_statement, sizeof(pos_statement), "%s", view.pos_statement);
	} else {
		if ((rc = eng_tensors_from_file(o.input, &t, &eerr))) {
			fprintf(stderr, "memwall: %s: %s\n", eerr.source[0] ? eerr.source : o.input,
				eerr.text);
			status = MW_EXIT_USAGE;
			goto out;
		}
		if (!llc && eng_llc_size(&llc, llc_source, sizeof(llc_source)) != 0)
			llc = 0;
		snprintf(in.not_measured_why, sizeof(in.not_measured_why),
			 "a model file has no measured DRAM bytes; give a result record of `memwall "
			 "run`");
		snprintf(pos_statement, sizeof(pos_statement), "position %d",
			 o.pos >= 0 ? o.pos : 128);
	}
	int pos = o.pos >= 0 ? o.pos : record ? view.pos : 128;
	struct mw_analytic_options ao = { .pos = pos, .kv_elem_bytes = o.kv_bytes,
					  .llc_bytes = llc, .llc_source = llc_source };
	if (mw_analytic_compute(t, &ao, &a)) {
		fprintf(stderr, "memwall roofline: %s: the model has no layers\n", o.input);
		status = MW_EXIT_USAGE;
		goto out;
	}
	if (!isnan(o.bandwidth)) {
		in.bw_gbps = o.bandwidth;
		snprintf(in.bw_source, sizeof(in.bw_source), "given by --bandwidth");
	} else if (!record) {
		probe_bandwidth(&o, a.llc == MW_LLC_UNKNOWN_BOUND ? 32u << 20 : a.llc, &in);
	}
	if (!record)
		probe_peak(&o, t, &in);
	mw_roofline_compute(&a, &in, &r);
	mw_plausibility_check(&a, in.measured_bytes, view.instances, view.n_instances, &pl);
	if (pl.verdict == MW_VERDICT_IMPLAUSIBLE)
		status = MW_EXIT_CHECK;

	if (o.json)
		print_json(t, &a, &in, &r, &pl, pos, pos_statement, record ? &view : NULL);
	else
		print_text(t, &a, &in, &r, &pl, pos_statement, record ? &view : NULL);
	if (!o.json && o.n_batch)
		mw_roofline_batch_print(stdout, &a, &in, o.batch, o.n_batch);
	if (!o.json && o.spec_k) {
		double yield, bytes = mw_analytic_spec_bytes(&a, o.spec_k, o.spec_acc, &yield);
		printf("\nspeculation K=%d, acceptance %.2f: %.2f tokens per verification pass, "
		       "predicted %.3f MB per generated token (plain decoding %.3f), analytic\n",
		       o.spec_k, o.spec_acc, yield, bytes / 1e6, (double)a.total / 1e6);
	}
	fflush(stdout);
	if (o.plot) {
		char label[700];
		const char *name = record ? json_string_value(json_object_get(
						    json_object_get(doc, "model"), "name")) : NULL;
		snprintf(label, sizeof(label), "%s%s%s", name ? name : t->source,
			 view.reference ? " (published reference record)" : "",
			 (t->info.synthetic || view.synthetic) &&
					 !strstr(name ? name : t->source, "synthetic")
				 ? " (synthetic)" : "");
		if ((rc = mw_roofline_plot(&a, &in, label, o.plot, stderr, &err))) {
			mw_error_print(&err);
			status = rc == -ENOENT ? MW_EXIT_ENV : MW_EXIT_USAGE;
		}
	}
out:
	eng_tensor_table_free(t);
	json_decref(doc);
	return status;
}
